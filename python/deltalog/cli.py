"""The ``deltalog`` command line: inspect and maintain tables from a shell.

deltalog info PATH [--version N | --timestamp TS]
deltalog files PATH [--version N]
deltalog history PATH [--limit N]
deltalog checkpoint PATH [--kind classic|v2-parquet|v2-json] [--sidecars N]
deltalog compact PATH [--start N] [--end N]
deltalog cleanup PATH
deltalog vacuum PATH [--retention-hours H] [--force] [--apply]
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


def _checkpoint(args: argparse.Namespace) -> None:
    print(json.dumps(DeltaTable(args.path).create_checkpoint(args.kind, args.sidecars)))


def _compact(args: argparse.Namespace) -> None:
    print(DeltaTable(args.path).compact_logs(args.start, args.end))


def _cleanup(args: argparse.Namespace) -> None:
    for name in DeltaTable(args.path).cleanup_metadata():
        print(f"_delta_log/{name}")


def _vacuum(args: argparse.Namespace) -> None:
    result = DeltaTable(args.path).vacuum(
        args.retention_hours,
        dry_run=not args.apply,
        enforce_retention_duration=not args.force,
    )
    for path in result:
        print(path)
    verb = "deleted" if args.apply else "would delete (dry run; --apply deletes)"
    print(f"{verb} {result.num_files} file(s), {result.bytes} bytes", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="deltalog", description="Inspect and maintain Delta tables."
    )
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
    p = sub.add_parser("checkpoint", help="write a checkpoint of the latest version")
    p.add_argument("path")
    p.add_argument("--kind", choices=["classic", "v2", "v2-parquet", "v2-json"])
    p.add_argument("--sidecars", type=int)
    p.set_defaults(fn=_checkpoint)
    p = sub.add_parser("compact", help="write a log compaction file")
    p.add_argument("path")
    p.add_argument("--start", type=int)
    p.add_argument("--end", type=int)
    p.set_defaults(fn=_compact)
    p = sub.add_parser("cleanup", help="delete expired log files (delta.logRetentionDuration)")
    p.add_argument("path")
    p.set_defaults(fn=_cleanup)
    p = sub.add_parser("vacuum", help="list (or, with --apply, delete) unreferenced files")
    p.add_argument("path")
    p.add_argument("--retention-hours", type=float)
    p.add_argument("--force", action="store_true", help="allow a shorter retention")
    p.add_argument("--apply", action="store_true", help="delete instead of listing")
    p.set_defaults(fn=_vacuum)
    args = parser.parse_args(argv)
    try:
        args.fn(args)
    except DeltaError as e:
        print(f"deltalog: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
