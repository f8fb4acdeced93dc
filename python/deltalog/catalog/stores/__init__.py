"""Where a catalog keeps its records: a directory of tables (:mod:`.directory`, ``type: dir``),
and the database of catalog-managed tables (:mod:`.sql`, shared by the embedded SQLite store
:mod:`.sqlite` and :mod:`.postgresql`), with its schema migrations (:mod:`.migrations`), its
audit log of refused requests (:mod:`.audit_log`), its connection pool (:mod:`.pool`) and the
check that a named catalog exists before it is opened (:mod:`.existence`). The catalog logic
every store shares (names, ratification, transactions) is one level up, in
:mod:`deltalog.catalog`."""
