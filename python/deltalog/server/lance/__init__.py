"""The Lance Namespace routes of the catalog server (``../shared/spec/003_…``; the operations of
``lance-namespace-rest-2026-08.yaml``): namespaces and tables (:mod:`.service`), table versions,
which carry Delta's catalog-managed commits (:mod:`.versions`), and request bodies: JSON
(:mod:`.bodies`) and Arrow IPC (:mod:`.arrow_body`)."""
