"""``deltalog catalog list|describe|tables``: browsing the named catalogs of
:mod:`deltalog.catalog.named` from a shell (issue #34, item 2).

Output is an aligned table by default and JSON with ``--json`` (one document, for scripts).
Errors are one line on stderr and exit status 1, through :func:`deltalog.cli.main.main`.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from typing import Any

from deltalog.exceptions import (
    DeltaError,
    InvalidArgumentError,
    NamespaceNotFoundError,
    UnsupportedFeatureError,
)

#: Most tables ``tables --recursive`` lists before it stops and says so.
MAX_LISTED = 100_000


def add_browse_commands(commands: Any) -> None:
    """Adds ``list``, ``describe`` and ``tables`` to the ``catalog`` subcommands."""
    text = "list the configured catalogs (.deltalog.yaml and DELTALOG_CATALOG__* variables)"
    p = commands.add_parser("list", help=text, description=text)
    p.add_argument("--config", help="the configuration file (default: .deltalog.yaml, found)")
    _output(p)
    p.set_defaults(fn=_list)
    text = "describe a configured catalog: its type, location and top-level namespaces"
    p = commands.add_parser("describe", help=text, description=text)
    _which(p)
    _output(p)
    p.set_defaults(fn=_describe)
    text = "list the tables of a catalog's namespace (the top level by default)"
    p = commands.add_parser("tables", help=text, description=text)
    _which(p)
    p.add_argument("namespace", nargs="?", help="e.g. sales or sales.eu (default: top level)")
    p.add_argument(
        "--recursive", "-r", action="store_true", help="also the tables of nested namespaces"
    )
    _output(p)
    p.set_defaults(fn=_tables)
    text = (
        "create a configured catalog that does not exist yet (its directory, SQLite database "
        "file or PostgreSQL schema); other commands never create one"
    )
    p = commands.add_parser("create", help=text, description=text)
    _which(p)
    _output(p)
    p.set_defaults(fn=_create)


def _which(p: argparse.ArgumentParser) -> None:
    p.add_argument("--catalog", "-c", help="the catalog's name (default: the default catalog)")
    p.add_argument("--config", help="the configuration file (default: .deltalog.yaml, found)")


def _output(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


def _list(args: argparse.Namespace) -> None:
    from deltalog.catalog.named import read_config

    config = read_config(args.config)
    rows = [
        {
            "name": c.name,
            "type": c.type,
            "location": c.shown_location,
            "default": c.name == config.default,
            "from": ", ".join(c.sources),
        }
        for c in sorted(config.catalogs.values(), key=lambda c: c.name)
    ]
    if args.json:
        print(json.dumps({"file": _path(config.file), "catalogs": rows}, indent=2))
        return
    if not rows:
        where = _path(config.file) or "no .deltalog.yaml found"
        print(f"no catalogs configured ({where}; or DELTALOG_CATALOG__<NAME>__TYPE=...)")
        return
    table(
        ["NAME", "TYPE", "LOCATION", "DEFAULT", "FROM"],
        [
            [r["name"], r["type"], r["location"], "*" if r["default"] else "", r["from"]]
            for r in rows
        ],
    )


def _describe(args: argparse.Namespace) -> None:
    from deltalog.catalog.named import load_catalog, read_config

    named = read_config(args.config).get(args.catalog)
    catalog = load_catalog(named.name, path=args.config)
    namespaces = catalog.list_namespaces()
    tables = catalog.list_tables()
    info = {
        "name": named.name,
        "type": named.type,
        "location": named.shown_location,
        "warehouse": named.properties.get("warehouse"),
        "namespaces": namespaces,
        "tables": tables,
    }
    if args.json:
        print(json.dumps(info, indent=2))
        return
    table(
        ["PROPERTY", "VALUE"],
        [
            ["name", named.name],
            ["type", named.type],
            ["location", named.shown_location],
            ["warehouse", info["warehouse"] or ""],
            ["namespaces", ", ".join(namespaces) or "(none)"],
            ["tables at the top level", ", ".join(tables) or "(none)"],
        ],
    )


def _tables(args: argparse.Namespace) -> None:
    from deltalog.catalog.named import load_catalog, read_config

    named = read_config(args.config).get(args.catalog)
    catalog = load_catalog(named.name, path=args.config)
    found: list[tuple[str, str]] = []
    try:
        truncated = _walk(catalog, args.namespace, args.recursive, found)
    except (NamespaceNotFoundError, UnsupportedFeatureError, InvalidArgumentError):
        if args.namespace and _is_table(catalog, args.namespace):
            raise InvalidArgumentError(
                f"{args.namespace} is a table of {named.name}, not a namespace: "
                f"deltalog info --catalog {named.name} {args.namespace} describes it"
            ) from None
        raise
    if args.json:
        print(
            json.dumps(
                {
                    "catalog": named.name,
                    "tables": [
                        {"namespace": ns, "table": t, "name": _join(ns, t)} for ns, t in found
                    ],
                    "truncated": truncated,
                },
                indent=2,
            )
        )
        return
    if not found:
        print(f"no tables in {args.namespace or 'the top level'} of {named.name}")
        return
    table(["NAMESPACE", "TABLE"], [[ns or "(top level)", t] for ns, t in found])
    if truncated:
        print(f"(stopped after {MAX_LISTED} tables)")


def _create(args: argparse.Namespace) -> None:
    from deltalog.catalog.named import load_catalog, read_config
    from deltalog.catalog.stores.existence import CatalogNotFoundError, local_directory
    from deltalog.exceptions import InvalidArgumentError

    named = read_config(args.config).get(args.catalog)
    if named.type not in ("dir", "sqlite", "postgresql"):
        raise InvalidArgumentError(
            f"catalog {named.name!r} is a {named.type or 'untyped'} catalog: its server holds "
            "it, there is nothing to create here"
        )
    try:
        load_catalog(named.name, path=args.config)
        created = False
    except CatalogNotFoundError:
        catalog = load_catalog(named.name, path=args.config, create=True)
        directory = local_directory(getattr(catalog, "path", "")) if named.type == "dir" else None
        if directory is not None:
            os.makedirs(directory, exist_ok=True)
        created = True
    if args.json:
        print(json.dumps({"name": named.name, "type": named.type, "created": created}))
        return
    where = f"{named.type} at {named.location}"
    print(
        f"created catalog {named.name} ({where})"
        if created
        else (f"catalog {named.name} exists already ({where})")
    )


def _is_table(catalog: Any, name: str) -> bool:
    try:
        return bool(catalog.table_exists(name))
    except DeltaError:
        return False


def _walk(catalog: Any, namespace: str | None, recursive: bool, out: list[tuple[str, str]]) -> bool:
    """Appends ``(namespace, table)`` of ``namespace`` (with ``recursive``, of every nested
    namespace too: ``list_tables(recursive=True)``); True when :data:`MAX_LISTED` stopped
    it."""
    if recursive:
        delimiter = getattr(catalog, "delimiter", ".")
        for full in catalog.list_tables(namespace, recursive=True):
            if len(out) >= MAX_LISTED:
                return True
            ns, _, name = full.rpartition(delimiter)
            out.append((ns, name))
        return False
    for name in sorted(catalog.list_tables(namespace)):
        if len(out) >= MAX_LISTED:
            return True
        out.append((namespace or "", name))
    return False


def _join(namespace: str, name: str) -> str:
    if not namespace or name.startswith(namespace + "."):
        return name
    return f"{namespace}.{name}"


def _path(file: Any) -> str | None:
    return None if file is None else str(file)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Prints ``rows`` under ``headers``, columns aligned."""
    texts = [[str(v) for v in r] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in texts]) for i, h in enumerate(headers)]
    for line in [list(headers), *texts]:
        print("  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip())


__all__ = ["add_browse_commands", "table"]
