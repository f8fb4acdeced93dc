"""deltalog's Unity Catalog client (``uc://`` URIs, ``connect_catalog({"type": "unity", …})``;
``../shared/spec`` Unity Catalog APIs): the catalog (:mod:`.client`), a table's catalog client
over UC's Delta commit API (:mod:`.table_client`), the HTTP transport (:mod:`.transport`), and
what the UC routes of ``deltalog catalog serve`` (:mod:`deltalog.server.unity`) share with
it: schema forms (:mod:`.columns`) and errors (:mod:`.errors`). The wire models of both UC
APIs are :mod:`deltalog.protocol.unity`'s."""
