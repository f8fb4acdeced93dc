"""The ``deltalog`` command line.

- :mod:`~deltalog.cli.main`: the commands on tables and catalogs, and ``deltalog serve``.
- :mod:`~deltalog.cli.browse`: listing and describing what a named catalog holds.
"""

from deltalog.cli.main import main

__all__ = ["main"]
