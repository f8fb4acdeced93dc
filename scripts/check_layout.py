#!/usr/bin/env python3
"""Checks the Python package's layout (issue #43): no import circle between folders, import
circles within a folder listed, no module over the line limit and no folder over the module
limit.

Every ``import`` counts, wherever it is written (at module level, inside a function, under
``if TYPE_CHECKING:``): a function-local import hides a dependency from Python's import
machinery, not from a reader. The native module's stub (``_native.pyi``) stands for the
native module.

A folder is a concept: ``deltalog/<folder>/`` with its subfolders (``catalog/stores/`` is part
of ``catalog``). Two more groups stand beside them: the modules at the top of the package that
every folder may use (``exceptions``, ``expressions``, ...), and the package's entry points
(``deltalog/__init__``, ``__main__``), which import every folder: a module that imports the
package itself (``import deltalog``) therefore closes a circle. Circles between folders are
errors; circles within one are listed. The module limit is per package directory.

Usage: ``python scripts/check_layout.py [--graph]``; exits 1 when a rule is broken.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "python"
PACKAGE = "deltalog"
MAX_LINES = 800
MAX_MODULES = 15


def modules() -> dict[str, Path]:
    out = {}
    paths = sorted((ROOT / PACKAGE).rglob("*.py"))
    # The native module's stub stands for the module (``deltalog._native``).
    stubs = sorted((ROOT / PACKAGE).rglob("*.pyi"))
    paths += [p for p in stubs if not p.with_suffix(".py").exists()]
    for path in paths:
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def is_package(name: str, mods: dict[str, Path]) -> bool:
    return mods[name].name == "__init__.py"


def folder(name: str, mods: dict[str, Path]) -> str:
    """The concept folder of a module (see the module's docstring)."""
    parts = name.split(".")
    if name in (PACKAGE, f"{PACKAGE}.__main__"):
        return f"{PACKAGE} (entry points)"
    if len(parts) == 2 and not is_package(name, mods):
        return f"{PACKAGE} (top-level modules)"
    return ".".join(parts[:2])


def directory(name: str, mods: dict[str, Path]) -> str:
    return name if is_package(name, mods) else name.rpartition(".")[0]


def imports(name: str, path: Path, mods: dict[str, Path]) -> set[str]:
    """The package's modules ``name`` imports."""
    tree = ast.parse(path.read_text(), filename=str(path))
    base = name if is_package(name, mods) else name.rpartition(".")[0]
    found: set[str] = set()

    def resolve(target: str) -> str | None:
        while target and target not in mods:
            target = target.rpartition(".")[0]
        return target or None

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE:
                    if (t := resolve(alias.name)) is not None:
                        found.add(t)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                module = ".".join(anchor + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.split(".")[0] != PACKAGE:
                continue
            for alias in node.names:
                # ``from pkg import sub`` imports the submodule when there is one.
                sub = f"{module}.{alias.name}"
                t = sub if sub in mods else resolve(module)
                if t is not None:
                    found.add(t)
    found.discard(name)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graph", action="store_true", help="print the folder graph")
    args = parser.parse_args()
    mods = modules()
    module_graph = {m: imports(m, p, mods) for m, p in mods.items()}
    broken = False

    folder_graph: dict[str, set[str]] = defaultdict(set)
    witnesses: dict[tuple[str, str], list[str]] = defaultdict(list)
    for m, targets in module_graph.items():
        fm = folder(m, mods)
        for t in targets:
            ft = folder(t, mods)
            if ft == fm:
                continue
            folder_graph[fm].add(ft)
            witnesses[(fm, ft)].append(f"{m} -> {t}")
    for fm in {folder(m, mods) for m in mods}:
        folder_graph.setdefault(fm, set())

    if args.graph:
        for f in sorted(folder_graph):
            print(f"{f} -> {', '.join(sorted(folder_graph[f])) or '(nothing)'}")
        print()

    across = cycles(folder_graph)
    for comp in across:
        broken = True
        print(f"error: import circle between folders: {' , '.join(comp)}")
        members = set(comp)
        for (a, b), w in sorted(witnesses.items()):
            if a in members and b in members:
                print(f"    {a} -> {b}: {'; '.join(sorted(w)[:3])}")

    within = [c for c in cycles(module_graph) if len({folder(m, mods) for m in c}) == 1]
    for comp in within:
        print(f"note: import circle within {folder(comp[0], mods)}: {', '.join(comp)}")

    per_folder: dict[str, int] = defaultdict(int)
    for m in mods:
        if not is_package(m, mods):
            per_folder[directory(m, mods)] += 1
    for f, n in sorted(per_folder.items()):
        if n > MAX_MODULES:
            broken = True
            print(f"error: {f} holds {n} modules (at most {MAX_MODULES})")
    for p in mods.values():
        lines = len(p.read_text().splitlines())
        # A generated module (its first line says so; e.g. the UC models, regenerated by a
        # script and checked by a test) is the generator's layout, not a hand-written one.
        generated = p.read_text().startswith("# Generated by ")
        if lines > MAX_LINES and not generated:
            broken = True
            print(f"error: {p.relative_to(ROOT.parent)} has {lines} lines (at most {MAX_LINES})")

    print(
        f"{len(mods)} modules in {len(per_folder)} folders; "
        f"{len(across)} circle(s) between folders, {len(within)} within one"
    )
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
