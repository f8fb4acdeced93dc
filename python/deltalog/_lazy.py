"""Modules imported on first use.

pyarrow is deltalog's data interface, but much of deltalog never touches it: opening a table,
its history and properties, OPTIMIZE, VACUUM, the catalogs and the CLI run in the Rust core.
Importing pyarrow costs about 40 MB of resident memory and a quarter of a second, so deltalog's
modules bind it through :func:`lazy_module` and the import happens at the first attribute
used (a maintenance job that never reads rows into Python never loads it).
"""

from __future__ import annotations

import importlib
import types
from typing import Any


class _LazyModule(types.ModuleType):
    """A stand-in for a module, replaced by its contents at the first attribute looked up."""

    def __getattr__(self, attr: str) -> Any:
        # Only called for attributes not yet in this object's namespace.
        module = importlib.import_module(self.__name__)
        self.__dict__.update(module.__dict__)
        return getattr(module, attr)

    def __repr__(self) -> str:
        return f"<lazily imported module {self.__name__!r}>"


def lazy_module(name: str) -> Any:
    """``name``, imported when one of its attributes is first used (at once when some other
    code has imported it already)."""
    import sys

    loaded = sys.modules.get(name)
    if loaded is not None:
        return loaded
    return _LazyModule(name)
