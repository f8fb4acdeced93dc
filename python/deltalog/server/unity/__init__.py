"""The Unity Catalog routes of ``deltalog catalog serve`` (``/api/2.1/unity-catalog/``): the UC
API's catalogs, schemas, tables and temporary credentials (:mod:`.catalogs`), the Delta API v1
(:mod:`.delta`), how a table looks through them (:mod:`.views`), credential vending
(:mod:`.credentials`) and the routing (:mod:`.routes`)."""
