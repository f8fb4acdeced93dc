"""``deltalog catalog namespace …`` and ``deltalog catalog table …``: changing what a named
catalog (:mod:`deltalog.catalog.named`) holds from a shell, with pyiceberg's verbs.

deltalog catalog namespace create NS [--property K=V]... [--if-not-exists]
deltalog catalog namespace drop NS [--cascade]
deltalog catalog namespace properties NS
deltalog catalog namespace set NS K=V...
deltalog catalog namespace unset NS K...
deltalog catalog table create NAME --schema "id BIGINT NOT NULL, name STRING"
                                   [--partition-by COL]... [--property K=V]... [--if-not-exists]
deltalog catalog table drop NAME [--purge]
deltalog catalog table rename NAME NEW_NAME
deltalog catalog table set NAME K=V... [--any-key]
deltalog catalog table unset NAME K...

Each takes ``--catalog/-c NAME`` (default: the default catalog), ``--config FILE`` and
``--json`` (one JSON document on stdout). Errors are one line on stderr and exit status 1.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from deltalog.exceptions import InvalidArgumentError


def _pair(text: str) -> tuple[str, str]:
    """argparse type: ``KEY=VALUE`` (the value may be empty, the key may not)."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"not KEY=VALUE: {text!r}")
    return key, value


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--catalog", "-c", help="the catalog's name (default: the default catalog)")
    p.add_argument("--config", help="the configuration file (default: .deltalog.yaml, found)")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")


def add_manage_commands(commands: Any) -> None:
    """Adds ``namespace`` and ``table`` (each with its verbs) to the ``catalog`` commands."""
    text = "create, drop and label a catalog's namespaces"
    ns = commands.add_parser("namespace", help=text, description=text)
    verbs = ns.add_subparsers(dest="namespace_command", required=True, metavar="VERB")

    p = verbs.add_parser("create", help="create a namespace (its parent must exist)")
    p.add_argument("namespace", help="e.g. sales or sales.eu")
    p.add_argument("--property", "-p", action="append", type=_pair, default=[], metavar="K=V")
    p.add_argument("--if-not-exists", action="store_true", help="an existing one is fine")
    _common(p)
    p.set_defaults(fn=_namespace_create)

    p = verbs.add_parser("drop", help="drop an empty namespace")
    p.add_argument("namespace")
    p.add_argument(
        "--cascade",
        action="store_true",
        help="also everything in it (REST catalogs only; the server's admins)",
    )
    _common(p)
    p.set_defaults(fn=_namespace_drop)

    p = verbs.add_parser("properties", help="show a namespace's properties")
    p.add_argument("namespace")
    _common(p)
    p.set_defaults(fn=_namespace_properties)

    p = verbs.add_parser("set", help="set properties of a namespace")
    p.add_argument("namespace")
    p.add_argument("pairs", nargs="+", type=_pair, metavar="K=V")
    _common(p)
    p.set_defaults(fn=_namespace_set)

    p = verbs.add_parser("unset", help="remove properties of a namespace")
    p.add_argument("namespace")
    p.add_argument("keys", nargs="+", metavar="K")
    _common(p)
    p.set_defaults(fn=_namespace_unset)

    text = "create, drop, rename and set properties of a catalog's tables"
    tb = commands.add_parser("table", help=text, description=text)
    verbs = tb.add_subparsers(dest="table_command", required=True, metavar="VERB")

    p = verbs.add_parser("create", help="create an empty table")
    p.add_argument("name", help="e.g. sales.orders")
    p.add_argument(
        "--schema",
        required=True,
        help='its columns, e.g. "id BIGINT NOT NULL, name STRING, price DECIMAL(10,2)"',
    )
    p.add_argument("--partition-by", action="append", default=[], metavar="COLUMN")
    p.add_argument(
        "--property",
        "-p",
        action="append",
        type=_pair,
        default=[],
        metavar="K=V",
        help="a Delta table property, e.g. delta.enableDeletionVectors=true",
    )
    p.add_argument("--if-not-exists", action="store_true", help="an existing table is fine")
    _common(p)
    p.set_defaults(fn=_table_create)

    p = verbs.add_parser(
        "drop", help="remove a table from the catalog (its files stay unless --purge)"
    )
    p.add_argument("name")
    p.add_argument("--purge", action="store_true", help="also delete the table's files")
    _common(p)
    p.set_defaults(fn=_table_drop)

    p = verbs.add_parser("rename", help="rename (or move to another namespace) a table")
    p.add_argument("name")
    p.add_argument("new_name", help="the full new name, e.g. archive.orders_2025")
    _common(p)
    p.set_defaults(fn=_table_rename)

    p = verbs.add_parser("set", help="set Delta table properties (one commit)")
    p.add_argument("name")
    p.add_argument("pairs", nargs="+", type=_pair, metavar="K=V")
    p.add_argument(
        "--any-key",
        action="store_true",
        help="also keys that are not Delta table properties (delta.* keys are always checked)",
    )
    _common(p)
    p.set_defaults(fn=_table_set)

    p = verbs.add_parser("unset", help="remove table properties (one commit)")
    p.add_argument("name")
    p.add_argument("keys", nargs="+", metavar="K")
    _common(p)
    p.set_defaults(fn=_table_unset)


def _catalog(args: argparse.Namespace) -> tuple[str, Any]:
    from deltalog.catalog.named import load_catalog, read_config

    named = read_config(args.config).get(args.catalog)
    return named.name, load_catalog(named.name, path=args.config)


def _say(args: argparse.Namespace, document: dict[str, Any], text: str) -> None:
    print(json.dumps(document, indent=2, sort_keys=True) if args.json else text)


def _properties(pairs: list[tuple[str, str]]) -> dict[str, str]:
    found: dict[str, str] = {}
    for key, value in pairs:
        if key in found and found[key] != value:
            raise InvalidArgumentError(f"property {key!r} is given twice")
        found[key] = value
    return found


def _namespace_create(args: argparse.Namespace) -> None:
    name, catalog = _catalog(args)
    properties = _properties(args.property)
    existed = args.if_not_exists and catalog.namespace_exists(args.namespace)
    if args.if_not_exists:
        catalog.create_namespace_if_not_exists(args.namespace, properties or None)
    else:
        catalog.create_namespace(args.namespace, properties or None)
    _say(
        args,
        {"catalog": name, "namespace": args.namespace, "created": not existed},
        f"namespace {args.namespace} exists already in {name}"
        if existed
        else f"created namespace {args.namespace} in {name}",
    )


def _namespace_drop(args: argparse.Namespace) -> None:
    name, catalog = _catalog(args)
    if args.cascade:
        if "cascade" not in _parameters(catalog.drop_namespace):
            raise InvalidArgumentError(
                f"catalog {name!r} drops empty namespaces only (no --cascade): drop its tables "
                "first"
            )
        catalog.drop_namespace(args.namespace, cascade=True)
    else:
        catalog.drop_namespace(args.namespace)
    _say(
        args,
        {"catalog": name, "namespace": args.namespace, "dropped": True},
        f"dropped namespace {args.namespace} of {name}",
    )


def _parameters(fn: Any) -> set[str]:
    import inspect

    return set(inspect.signature(fn).parameters)


def _namespace_properties(args: argparse.Namespace) -> None:
    name, catalog = _catalog(args)
    properties = catalog.load_namespace_properties(args.namespace)
    if args.json:
        print(json.dumps({"catalog": name, "namespace": args.namespace, "properties": properties}))
        return
    if not properties:
        print(f"namespace {args.namespace} of {name} has no properties")
        return
    from deltalog.cli.browse import table

    table(["KEY", "VALUE"], sorted(properties.items()))


def _summary(args: argparse.Namespace, name: str, summary: Any) -> None:
    document = {
        "catalog": name,
        "namespace": args.namespace,
        "removed": summary.removed,
        "updated": summary.updated,
        "missing": summary.missing,
    }
    parts = [
        f"{label}: {', '.join(keys)}"
        for label, keys in (
            ("set", summary.updated),
            ("removed", summary.removed),
            ("not there", summary.missing),
        )
        if keys
    ]
    _say(args, document, f"namespace {args.namespace} of {name}: " + "; ".join(parts))


def _namespace_set(args: argparse.Namespace) -> None:
    name, catalog = _catalog(args)
    summary = catalog.update_namespace_properties(args.namespace, updates=_properties(args.pairs))
    _summary(args, name, summary)


def _namespace_unset(args: argparse.Namespace) -> None:
    name, catalog = _catalog(args)
    summary = catalog.update_namespace_properties(args.namespace, removals=args.keys)
    _summary(args, name, summary)


def _table_create(args: argparse.Namespace) -> None:
    from deltalog.cli.schema_text import parse_schema

    name, catalog = _catalog(args)
    schema = parse_schema(args.schema)
    existed = args.if_not_exists and catalog.table_exists(args.name)
    create = catalog.create_table_if_not_exists if args.if_not_exists else catalog.create_table
    table = create(
        args.name,
        schema,
        partition_by=args.partition_by or None,
        configuration=_properties(args.property) or None,
    )
    _say(
        args,
        {
            "catalog": name,
            "table": args.name,
            "created": not existed,
            "location": table.table_uri,
            "version": table.version(),
        },
        f"table {args.name} exists already in {name} ({table.table_uri})"
        if existed
        else f"created table {args.name} in {name} at {table.table_uri}",
    )


def _table_drop(args: argparse.Namespace) -> None:
    name, catalog = _catalog(args)
    location = catalog.load_table(args.name).table_uri if catalog.table_exists(args.name) else None
    catalog.drop_table(args.name, purge=args.purge)
    _say(
        args,
        {"catalog": name, "table": args.name, "purged": args.purge, "location": location},
        f"dropped table {args.name} of {name}"
        + (" and deleted its files" if args.purge else f" (its files stay at {location})"),
    )


def _table_rename(args: argparse.Namespace) -> None:
    name, catalog = _catalog(args)
    table = catalog.rename_table(args.name, args.new_name)
    _say(
        args,
        {"catalog": name, "from": args.name, "to": args.new_name, "location": table.table_uri},
        f"renamed table {args.name} of {name} to {args.new_name}",
    )


def _table_set(args: argparse.Namespace) -> None:
    name, catalog = _catalog(args)
    table = catalog.load_table(args.name)
    properties = _properties(args.pairs)
    version = table.alter.set_table_properties(properties, raise_if_not_exists=not args.any_key)
    _say(
        args,
        {"catalog": name, "table": args.name, "version": version, "set": sorted(properties)},
        f"table {args.name} of {name}: set {', '.join(sorted(properties))} (version {version})",
    )


def _table_unset(args: argparse.Namespace) -> None:
    name, catalog = _catalog(args)
    table = catalog.load_table(args.name)
    present = set(table.metadata().configuration)
    # Nothing to remove: no commit (UNSET TBLPROPERTIES IF EXISTS of absent keys changes nothing).
    gone = [k for k in args.keys if k in present]
    version = table.alter.unset_properties(gone) if gone else table.version()
    removed = sorted(k for k in args.keys if k in present)
    missing = sorted(k for k in args.keys if k not in present)
    _say(
        args,
        {
            "catalog": name,
            "table": args.name,
            "version": version,
            "removed": removed,
            "missing": missing,
        },
        f"table {args.name} of {name}: removed {', '.join(removed) or 'nothing'}"
        + (f"; not there: {', '.join(missing)}" if missing else "")
        + f" (version {version})",
    )


__all__ = ["add_manage_commands"]
