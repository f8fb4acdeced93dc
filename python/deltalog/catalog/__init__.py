"""Catalogs and catalog-managed tables.

The ``catalogManaged`` table feature (RFC ``000_…`` in ``../shared/spec``) makes a table's
managing catalog the source of truth for its commits: a commit is *ratified* by the catalog,
staged in ``_delta_log/_staged_commits/`` or held *inline* by the catalog, and *published* to
``_delta_log/<v>.json`` later. Readers ask the catalog for the ratified commits it still holds.

This package holds the client-side API catalogs target (:class:`CatalogClient`,
:class:`RatifiedCommit`, :class:`RatifiedCommits`; the RFC's "Sample Catalog Client API", made
Pythonic). Any object implementing :class:`CatalogClient` can be passed to
``DeltaTable(uri, catalog_client=...)``, so an adapter for another catalog works too.
"""

from __future__ import annotations

from deltalog.catalog.client import CatalogClient, RatifiedCommit, RatifiedCommits

__all__ = ["CatalogClient", "RatifiedCommit", "RatifiedCommits"]
