"""A Delta table and its verbs (protocol "Delta Table Specification" through "Action
Reconciliation"; the log itself is read and replayed by the native core, ``rust/core/src/log``).

- :mod:`~deltalog.table.delta_table`: :class:`DeltaTable`, one version of a table, and its
  read API (Arrow, pandas, polars, datasets, history, time travel).
- :mod:`~deltalog.table.scan`, :mod:`~deltalog.table.dataset`: scans planned by the core and
  a ``pyarrow.dataset`` over them ("Deletion Vectors", "Column Mapping").
- :mod:`~deltalog.table.dml`: DELETE and UPDATE; :mod:`~deltalog.table.merge`: the MERGE
  builder; :mod:`~deltalog.table.transaction`: a transaction of several writes.
- :mod:`~deltalog.table.maintenance`, :mod:`~deltalog.table.optimize`,
  :mod:`~deltalog.table.optimize_args`: checkpoints, VACUUM, restore, OPTIMIZE and Z-order.
- :mod:`~deltalog.table.timestamps`: timestamps given for time travel.
- :mod:`~deltalog.table.alter`: schema, property and protocol changes.

Dependencies point down: ``table`` imports ``write``, ``protocol`` and the native module, never
``catalog`` or ``server`` (a catalog hands its tables a client; see
:mod:`deltalog.table.locations` for names only a catalog can resolve).
"""

from deltalog.protocol.actions import Metadata, Protocol
from deltalog.table.delta_table import DeltaTable, VacuumResult

__all__ = ["DeltaTable", "Metadata", "Protocol", "VacuumResult"]
