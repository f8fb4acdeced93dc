"""``DeltaTable.alter``: changes to a table's schema, properties and protocol.

- :mod:`~deltalog.table.alter.alterer`: :class:`TableAlterer`, the entry point.
- :mod:`~deltalog.table.alter.columns`: add, rename, drop and widen columns (protocol "Column
  Mapping", "Type Widening").
- :mod:`~deltalog.table.alter.properties`: set and unset properties, CHECK constraints
  ("CHECK Constraints").
- :mod:`~deltalog.table.alter.drop_feature`: remove a table feature ("Removing a Table
  Feature" in the table-features article).
- :mod:`~deltalog.table.alter.commit`: the metadata/protocol commit they all make.
"""

from deltalog.table.alter.alterer import TableAlterer

__all__ = ["TableAlterer"]
