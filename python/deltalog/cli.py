"""The ``deltalog`` command line: inspect tables from a shell.

deltalog info PATH [--version N | --timestamp TS]
deltalog files PATH [--version N]
deltalog history PATH [--limit N]
"""

from __future__ import annotations

import argparse
import json
import sys

from deltalog.exceptions import DeltaError
from deltalog.table import DeltaTable


def _open(args: argparse.Namespace) -> DeltaTable:
    return DeltaTable(args.path, version=args.version, timestamp=args.timestamp)


def _info(args: argparse.Namespace) -> None:
    t = _open(args)
    p = t.protocol()
    info = {
        "uri": t.table_uri,
        "version": t.version(),
        "timestamp": t.timestamp(),
        "protocol": {
            "minReaderVersion": p.min_reader_version,
            "minWriterVersion": p.min_writer_version,
            "readerFeatures": p.reader_features,
            "writerFeatures": p.writer_features,
        },
        "files": len(t.files()),
        "transactions": t.transactions(),
        "domainMetadata": t.domain_metadata(),
    }
    try:
        m = t.metadata()
        info["metadata"] = {
            "id": m.id,
            "name": m.name,
            "partitionColumns": m.partition_columns,
            "configuration": m.configuration,
        }
        info["schema"] = str(t.schema())
    except DeltaError as e:
        info["metadata"] = f"unavailable: {e}"
    print(json.dumps(info, indent=2, default=str))


def _files(args: argparse.Namespace) -> None:
    for path in _open(args).files():
        print(path)


def _history(args: argparse.Namespace) -> None:
    for entry in DeltaTable(args.path).history(args.limit):
        print(json.dumps(entry, default=str))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="deltalog", description="Inspect Delta tables.")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, fn in (("info", _info), ("files", _files)):
        p = sub.add_parser(name)
        p.add_argument("path")
        p.add_argument("--version", type=int)
        p.add_argument("--timestamp")
        p.set_defaults(fn=fn)
    p = sub.add_parser("history")
    p.add_argument("path")
    p.add_argument("--limit", type=int)
    p.set_defaults(fn=_history)
    args = parser.parse_args(argv)
    try:
        args.fn(args)
    except DeltaError as e:
        print(f"deltalog: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
