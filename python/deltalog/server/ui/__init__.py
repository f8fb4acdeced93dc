"""The catalog server's web pages (``/ui/``, issue #47): browse catalogs, namespaces and tables,
a table's columns, history and health, and (admins) the server's principals and refusals.

* :mod:`.routes`: the HTTP side: the page shell and its static files, the read-only JSON API
  (``/ui/api/…``) behind the server's own bearer tokens and roles, the security headers.
* :mod:`.browse`: namespaces and tables, with each table's size, files and last commit.
* :mod:`.table_view`: a table's columns, properties, protocol, history and version diffs.
* :mod:`.health`: a table's health figures from its snapshot's add actions.
* :mod:`.snapshots`: the loaded tables and computed figures the pages reuse.
* ``static/``: ``index.html``, ``app.js`` and ``app.css``, written by hand (no build step).
"""
