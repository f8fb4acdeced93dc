"""The Lance Namespace models without the generated client's API classes.

The server validates request and response bodies with the pydantic models of
``lance-namespace-urllib3-client`` (``lance_namespace_urllib3_client.models``) and uses none of
its API classes. The package's ``__init__`` imports all of them first (nine modules whose
pydantic-validated methods take about 1.2 s to build, against 0.3 s for the models), which every
``deltalog catalog serve`` process paid at start.

:func:`defer_package_init` puts the package in ``sys.modules`` with its ``__init__`` not yet run:
its submodules (``models``, ``exceptions``) import as usual, and the first other name
anything asks of it (``ApiClient``, ``TableApi``: the REST client in the same process) runs the
real ``__init__`` then, in the same module object, so every name is the package's own and no
class exists twice.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from typing import Any

PACKAGE = "lance_namespace_urllib3_client"


def defer_package_init() -> None:
    """Registers the package with its ``__init__`` deferred (a no-op once it is imported, or if
    it is not installed: the import then fails where the server imports the models)."""
    if PACKAGE in sys.modules:
        return
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return
    module = importlib.util.module_from_spec(spec)
    lock = threading.RLock()  # the real __init__ may ask for its own names while it runs
    state = {"loaded": False}

    def __getattr__(name: str) -> Any:
        # PEP 562: only names the module does not have yet come here.
        if name.startswith("__"):
            raise AttributeError(name)
        if not state["loaded"] and importlib.util.find_spec(f"{PACKAGE}.{name}") is not None:
            # ``from package import models`` asks for the submodule as a name first.
            return importlib.import_module(f"{PACKAGE}.{name}")
        with lock:
            if not state["loaded"]:
                state["loaded"] = True
                assert spec.loader is not None
                spec.loader.exec_module(module)
        try:
            return module.__dict__[name]
        except KeyError:
            raise AttributeError(f"module {PACKAGE!r} has no attribute {name!r}") from None

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    sys.modules[PACKAGE] = module
