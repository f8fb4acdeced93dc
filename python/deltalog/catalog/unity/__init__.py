"""Unity Catalog: its schema forms (:mod:`~deltalog.catalog.unity.columns`) and errors
(:mod:`~deltalog.catalog.unity.errors`), shared by the UC routes of ``deltalog catalog serve``
(:mod:`deltalog.catalog.rest.unity`) and deltalog's UC client."""
