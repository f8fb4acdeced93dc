"""The ``deltalog`` command line: inspect and maintain tables from a shell. Every table
command takes a location, or ``--catalog NAME TABLE`` for a table of a named catalog
(:mod:`deltalog.catalog.named`).

deltalog info PATH [--version N | --timestamp TS]
deltalog files PATH [--version N]
deltalog history PATH [--limit N]
deltalog checkpoint PATH [--kind classic|v2-parquet|v2-json] [--sidecars N]
deltalog optimize PATH [--z-order COLS] [--partition-filter SQL] [--target-size BYTES]
                       [--[no-]progress]
deltalog compact-log PATH [--start N] [--end N]
deltalog cleanup PATH
deltalog vacuum PATH [--retention-hours H] [--force] [--apply] [--[no-]progress]
deltalog catalog serve [--db sqlite:///FILE | postgresql://…] [--warehouse URI] [--host H]
                       [--port P] [--workers N] [--tokens FILE] [--storage-option KEY=VALUE]
                       [--s3-role-arn ARN [--s3-external-id ID] [--sts-endpoint URL]
                        [--s3-region R] [--credential-duration SECONDS]]
deltalog catalog token [create] --tokens FILE --name NAME --role reader|writer|admin [--expires 7d]
deltalog catalog token list|revoke|rotate --tokens FILE [--name NAME] [--json]
deltalog catalog list [--json]
deltalog catalog describe [--catalog NAME] [--json]
deltalog catalog tables [--catalog NAME] [NAMESPACE] [--recursive] [--json]
deltalog catalog namespace create|drop|properties|set|unset NS ... [--catalog NAME] [--json]
deltalog catalog table create|drop|rename|set|unset TABLE ... [--catalog NAME] [--json]
    (deltalog.cli.manage has the verbs' arguments)
deltalog --version
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from deltalog.exceptions import DeltaError, InvalidArgumentError
from deltalog.table.delta_table import DeltaTable
from deltalog.table.timestamps import _timestamp_ms


def _non_negative(text: str) -> int:
    """argparse type: an integer >= 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {value}")
    return value


def _timestamp(text: str) -> str:
    """argparse type: an ISO-8601 timestamp (checked here, passed on as text)."""
    try:
        _timestamp_ms(text)
    except (ValueError, TypeError):
        raise argparse.ArgumentTypeError(
            f"not an ISO-8601 timestamp: {text!r} (e.g. 2026-11-21T12:00:00Z)"
        ) from None
    return text


def _hours(text: str) -> float:
    """argparse type: a non-negative, finite number of hours."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of hours: {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite, non-negative number: {text}")
    return value


def _open(args: argparse.Namespace) -> DeltaTable:
    return _table(args, getattr(args, "version", None), getattr(args, "timestamp", None))


def _table(
    args: argparse.Namespace, version: int | None = None, timestamp: str | None = None
) -> DeltaTable:
    """The table ``args.path`` names: a location, or with ``--catalog`` a table of that
    named catalog (through the catalog when it manages the table)."""
    if getattr(args, "catalog", None) is None:
        return DeltaTable(args.path, version=version, timestamp=timestamp)
    from deltalog.catalog.named import load_catalog

    table = load_catalog(args.catalog, path=args.config).load_table(args.path, version)
    if timestamp is not None:
        table.load_as_version(timestamp)
    return table


def _info(args: argparse.Namespace) -> None:
    t = _open(args)
    p = t.protocol()
    info: dict[str, Any] = {
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
    if args.json:
        print(json.dumps(info, indent=2, default=str))
        return
    from deltalog.cli.browse import table

    meta = info["metadata"] if isinstance(info["metadata"], dict) else {}
    proto = info["protocol"]
    rows = [
        ["table", info["uri"]],
        ["version", info["version"]],
        ["timestamp", _when(info["timestamp"])],
        ["files", info["files"]],
        ["protocol", f"reader {proto['minReaderVersion']}, writer {proto['minWriterVersion']}"],
        ["reader features", ", ".join(proto["readerFeatures"] or []) or "-"],
        ["writer features", ", ".join(proto["writerFeatures"] or []) or "-"],
        ["partition columns", ", ".join(meta.get("partitionColumns") or []) or "-"],
        *[[f"property {k}", v] for k, v in sorted((meta.get("configuration") or {}).items())],
        *[[f"column {f.name}", str(f.type)] for f in (t.schema() if meta else [])],
    ]
    if not meta:
        rows.append(["metadata", info["metadata"]])
    table(["PROPERTY", "VALUE"], rows)


def _when(ms: int | None) -> str:
    import datetime as dt

    if ms is None:
        return "-"
    moment = dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _files(args: argparse.Namespace) -> None:
    for path in _open(args).files():
        print(path)


def _history(args: argparse.Namespace) -> None:
    entries = _table(args).history(args.limit)
    if args.json:
        for entry in entries:
            print(json.dumps(entry, default=str))
        return
    from deltalog.cli.browse import table

    table(
        ["VERSION", "TIMESTAMP", "OPERATION", "PARAMETERS"],
        [
            [
                e.get("version"),
                _when(e.get("timestamp")),
                e.get("operation") or "-",
                _short(json.dumps(e.get("operationParameters") or {}, default=str)),
            ]
            for e in entries
        ],
    )


def _short(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _checkpoint(args: argparse.Namespace) -> None:
    print(json.dumps(_table(args).create_checkpoint(args.kind, args.sidecars)))


def _compact(args: argparse.Namespace) -> None:
    print(_table(args).compact_logs(args.start, args.end))


def _cleanup(args: argparse.Namespace) -> None:
    for name in _table(args).cleanup_metadata():
        print(f"_delta_log/{name}")


def _vacuum(args: argparse.Namespace) -> None:
    try:
        result = _table(args).vacuum(
            args.retention_hours,
            dry_run=not args.apply,
            enforce_retention_duration=not args.force,
            # By default a bar when stderr is a terminal and more than 1,000 files go.
            progress=args.progress,
        )
    except InvalidArgumentError as e:
        # The refusal of a short retention names the Python argument; say the flag instead.
        message = str(e).replace("pass enforce_retention_duration=False", "pass --force")
        raise InvalidArgumentError(message) from None
    for path in result:
        print(path)
    verb = "deleted" if args.apply else "would delete (dry run; --apply deletes)"
    print(f"{verb} {result.num_files} file(s), {result.bytes} bytes", file=sys.stderr)


def _shows_progress(args: argparse.Namespace) -> bool:
    """``--progress`` / ``--no-progress``; by default, when stderr is a terminal."""
    return args.progress if args.progress is not None else sys.stderr.isatty()


def _optimize(args: argparse.Namespace) -> None:
    t = _table(args)
    progress = _shows_progress(args)
    if args.z_order:
        columns = [c.strip() for c in args.z_order.split(",") if c.strip()]
        metrics = t.optimize.z_order(
            columns, args.partition_filter, args.target_size, progress=progress
        )
    else:
        metrics = t.optimize.compact(args.partition_filter, args.target_size, progress=progress)
    if args.json:
        print(json.dumps(metrics, indent=2, default=str))
        return
    from deltalog.cli.browse import table

    table(["METRIC", "VALUE"], [[k, json.dumps(v, default=str)] for k, v in metrics.items()])


def _progress_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="a progress bar on stderr (default: when stderr is a terminal)",
    )


def _table_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "path",
        metavar="TABLE",
        help="a location (a path or an s3://, gs://, az:// URI), or with --catalog a table name",
    )
    p.add_argument("--catalog", "-c", help="a named catalog (.deltalog.yaml) TABLE belongs to")
    p.add_argument("--config", help="the catalogs' configuration file (default: found)")


def _storage_options(args: argparse.Namespace) -> dict[str, str] | None:
    """The server's storage options: for an ``s3://`` warehouse the environment's ``AWS_*``
    variables (what the object store reads them as; others are ignored), then each
    ``--storage-option KEY=VALUE`` (which wins)."""
    import os

    options: dict[str, str] = {}
    if args.warehouse.lower().startswith(("s3://", "s3a://")):
        options.update({k: v for k, v in os.environ.items() if k.startswith("AWS_") and v})
    for item in args.storage_option or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InvalidArgumentError(f"--storage-option takes KEY=VALUE, not {item!r}")
        options[key.strip()] = value
    return options or None


def _credentials(args: argparse.Namespace) -> dict[str, Any] | None:
    """The temporary credentials' vendor (``server/unity/credentials.py``)."""
    if not args.s3_role_arn:
        for flag in ("s3_external_id", "sts_endpoint", "s3_region", "credential_duration"):
            if getattr(args, flag) is not None:
                raise InvalidArgumentError(
                    f"--{flag.replace('_', '-')} configures --s3-role-arn's credentials: "
                    "give --s3-role-arn too"
                )
        return None
    return {
        "s3_role_arn": args.s3_role_arn,
        "s3_external_id": args.s3_external_id,
        "sts_endpoint": args.sts_endpoint,
        "s3_region": args.s3_region,
        "duration_seconds": args.credential_duration,
    }


def _serve(args: argparse.Namespace) -> None:
    from deltalog.server.app import serve
    from deltalog.server.limits import ConnectionLimits

    serve(
        args.db,
        args.warehouse,
        host=args.host,
        port=args.port,
        workers=args.workers,
        tokens=args.tokens,
        max_body_bytes=args.max_body_bytes,
        max_unpublished=args.max_unpublished,
        max_clock_skew_ms=int(args.max_clock_skew * 1000),
        ui=not args.no_ui,
        log_level=args.log_level,
        max_create_bytes=args.max_create_bytes,
        max_decoded_bytes=args.max_decoded_bytes,
        limits=ConnectionLimits(
            max_connections=args.max_connections,
            header_timeout=args.header_timeout,
            body_timeout=args.body_timeout,
            idle_timeout=args.idle_timeout,
            max_in_flight=args.max_in_flight,
            max_header_bytes=args.max_header_bytes,
        ),
        storage_options=_storage_options(args),
        credentials=_credentials(args),
    )


def _token(args: argparse.Namespace) -> None:
    from deltalog.server import auth

    action = args.action
    if action == "list":
        rows = auth.list_tokens(args.tokens)
        if args.json:
            print(json.dumps(rows, indent=2))
            return
        from deltalog.cli.browse import table

        table(
            ["NAME", "ROLE", "STATE", "CREATED", "EXPIRES"],
            [
                [r["name"], r["role"], r["state"], r["created"] or "", r["expires"] or ""]
                for r in rows
            ],
        )
        return
    if not args.name:
        raise InvalidArgumentError(f"token {action} needs --name")
    expires = auth.parse_expiry(args.expires) if args.expires else None
    if action == "revoke":
        auth.revoke_token(args.tokens, args.name)
        print(f"revoked the token of {args.name!r} in {args.tokens}", file=sys.stderr)
        return
    if action == "rotate":
        print(auth.rotate_token(args.tokens, args.name, expires))
        print(
            f"rotated the token of {args.name!r} in {args.tokens}: the old one is refused now; "
            "the token above is not stored and cannot be shown again",
            file=sys.stderr,
        )
        return
    if not args.role:
        raise InvalidArgumentError("token create needs --role reader|writer|admin")
    print(auth.add_token(args.tokens, args.name, args.role, expires))
    print(
        f"added {args.name!r} ({args.role}) to {args.tokens}; the token above is not stored "
        "and cannot be shown again",
        file=sys.stderr,
    )


def _positive(text: str) -> int:
    value = _non_negative(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _seconds(text: str) -> float:
    """argparse type: a number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError("must be a positive number of seconds")
    return value


def _duration(text: str) -> int:
    """argparse type: a credential lifetime in whole seconds, 900 (15 min) to 43200 (12 h)."""
    value = _non_negative(text)
    if not 900 <= value <= 43200:
        raise argparse.ArgumentTypeError("must be 900 (15 min) to 43200 (12 h) seconds")
    return value


def _add_credential_options(p: Any) -> None:
    """The object store the server reads its tables from, and the temporary credentials it
    vends to engines (server/unity/credentials.py)."""
    p.add_argument(
        "--storage-option",
        action="append",
        metavar="KEY=VALUE",
        help="an object-store option of the server's own access to its tables (repeatable; "
        "e.g. AWS_ENDPOINT_URL=…); for an s3:// warehouse the environment's AWS_* variables "
        "are used too (prefer them for secrets: a command line is visible to other users)",
    )
    p.add_argument(
        "--s3-role-arn",
        metavar="ARN",
        help="vend s3:// tables' temporary credentials: STS AssumeRole of this role with a "
        "session policy scoped to the table's prefix (needs boto3; without this flag an "
        "s3:// table's credentials are answered 501)",
    )
    p.add_argument("--s3-external-id", metavar="ID", help="the role's sts:ExternalId")
    p.add_argument("--sts-endpoint", metavar="URL", help="STS's URL (default: AWS's)")
    p.add_argument("--s3-region", metavar="REGION", help="STS's region (default: AWS_REGION)")
    p.add_argument(
        "--credential-duration",
        type=_duration,
        metavar="SECONDS",
        help="how long a vended credential lives, 900 to 43200 (default 3600)",
    )


def _add_limit_options(p: Any) -> None:
    """The server's limits (docs/catalogs.md, "Limits"; defaults in server/limits.py)."""
    from deltalog.server.limits import MAX_CREATE_BYTES, MAX_DECODED_BYTES, ConnectionLimits as L

    for flag, kind, default, text in [
        ("--max-create-bytes", _positive, MAX_CREATE_BYTES, "largest Arrow body of create"),
        ("--max-decoded-bytes", _positive, MAX_DECODED_BYTES, "most an Arrow body decodes to"),
        ("--max-connections", _positive, L.max_connections, "open connections per worker"),
        ("--header-timeout", _seconds, L.header_timeout, "seconds to send request headers"),
        ("--body-timeout", _seconds, L.body_timeout, "seconds to send a request body"),
        ("--idle-timeout", _seconds, L.idle_timeout, "seconds a keep-alive connection idles"),
        ("--max-in-flight", _positive, L.max_in_flight, "requests answered at once (503)"),
        ("--max-header-bytes", _positive, L.max_header_bytes, "request line + headers (431)"),
    ]:
        p.add_argument(flag, type=kind, default=default, help=f"{text} (default {default})")


def _add_catalog_commands(sub: Any) -> None:
    text = (
        "browse the configured catalogs (.deltalog.yaml), or run and administer a REST "
        "catalog server"
    )
    catalog = sub.add_parser("catalog", help=text, description=text)
    commands = catalog.add_subparsers(dest="catalog_command", required=True, metavar="COMMAND")
    from deltalog.cli.browse import add_browse_commands
    from deltalog.cli.manage import add_manage_commands

    add_browse_commands(commands)
    add_manage_commands(commands)
    text = "serve a catalog of Delta tables over HTTP until SIGTERM / Ctrl-C"
    p = commands.add_parser("serve", help=text, description=text)
    p.add_argument(
        "--db",
        default="sqlite://deltalog-catalog.db",
        help="the catalog database: sqlite:///ABSOLUTE.db, sqlite://RELATIVE.db or "
        "postgresql://user:password@host/db (default: sqlite://deltalog-catalog.db)",
    )
    p.add_argument(
        "--warehouse", default="warehouse", help="where new tables go (default: ./warehouse)"
    )
    p.add_argument("--host", default="127.0.0.1", help="default: 127.0.0.1")
    p.add_argument("--port", type=_non_negative, default=2333, help="default: 2333; 0: any")
    p.add_argument("--workers", type=_positive, default=1, help="server processes (default 1)")
    p.add_argument("--tokens", help="the tokens file (deltalog catalog token); none: no auth")
    p.add_argument("--max-body-bytes", type=_positive, default=4 * 1024 * 1024)
    p.add_argument(
        "--max-unpublished",
        type=_positive,
        help="most ratified commits a table may hold unpublished (default 1000); more: 429",
    )
    p.add_argument(
        "--max-clock-skew",
        type=float,
        default=300.0,
        help="seconds a commit's in-commit timestamp may be ahead of the server's clock "
        "(default 300); later ones are refused (a far-future timestamp freezes a table)",
    )
    p.add_argument(
        "--no-ui",
        action="store_true",
        help="do not serve the web pages (/ui/, docs/ui.md); every other route is unchanged",
    )
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    _add_limit_options(p)
    _add_credential_options(p)
    p.set_defaults(fn=_serve)
    text = (
        "manage a server's tokens file: create (the default; prints the new token once), "
        "list, revoke or rotate a principal's token; a running server applies changes "
        "within a second"
    )
    p = commands.add_parser("token", help=text, description=text)
    p.add_argument(
        "action", nargs="?", default="create", choices=["create", "list", "revoke", "rotate"]
    )
    p.add_argument("--tokens", required=True, help="the tokens file (created if missing)")
    p.add_argument("--name", help="who the token is for")
    p.add_argument("--role", choices=["reader", "writer", "admin"], help="for create")
    p.add_argument(
        "--expires", help="create/rotate: a duration (90s, 30m, 12h, 7d, 4w) or an ISO-8601 time"
    )
    p.add_argument("--json", action="store_true", help="list: print JSON")
    p.set_defaults(fn=_token)


def main(argv: list[str] | None = None) -> int:
    from deltalog._native import __version__

    parser = argparse.ArgumentParser(
        prog="deltalog", description="Inspect and maintain Delta tables."
    )
    parser.add_argument("--version", action="version", version=f"deltalog {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, fn, text in (
        ("info", _info, "print a version's protocol, metadata, schema and counts"),
        ("files", _files, "list the active data files of a version, one per line"),
    ):
        p = sub.add_parser(name, help=text, description=text)
        _table_argument(p)
        when = p.add_mutually_exclusive_group()
        when.add_argument("--version", type=_non_negative, help="the version (default: latest)")
        when.add_argument(
            "--timestamp",
            type=_timestamp,
            help="the latest version committed at or before this ISO-8601 time",
        )
        if name == "info":
            p.add_argument("--json", action="store_true", help="print JSON (for scripts)")
        p.set_defaults(fn=fn)
    text = "print the commits' commitInfo, newest first (--json: one JSON object per line)"
    p = sub.add_parser("history", help=text, description=text)
    _table_argument(p)
    p.add_argument("--limit", type=_non_negative, help="at most this many commits")
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.set_defaults(fn=_history)
    text = "write a checkpoint of the latest version"
    p = sub.add_parser("checkpoint", help=text, description=text)
    _table_argument(p)
    p.add_argument(
        "--kind",
        choices=["classic", "v2", "v2-parquet", "v2-json"],
        help="default: the table's delta.checkpointPolicy",
    )
    p.add_argument(
        "--sidecars", type=_non_negative, help="sidecar files of a V2 checkpoint (0: none)"
    )
    p.set_defaults(fn=_checkpoint)
    text = "compact small data files (OPTIMIZE), or cluster them with --z-order"
    p = sub.add_parser("optimize", help=text, description=text)
    _table_argument(p)
    p.add_argument("--z-order", metavar="COLUMNS", help="Z-order by these columns (a,b,...)")
    p.add_argument("--partition-filter", help="only these partitions (SQL predicate)")
    p.add_argument("--target-size", type=_positive, help="target file size in bytes")
    p.add_argument("--json", action="store_true", help="print the metrics as JSON")
    _progress_argument(p)
    p.set_defaults(fn=_optimize)
    text = "write a log compaction file of a range of commits (not data files: see optimize)"
    p = sub.add_parser("compact-log", help=text, description=text)
    _table_argument(p)
    p.add_argument(
        "--start", type=_non_negative, help="first commit (default: after the checkpoint)"
    )
    p.add_argument("--end", type=_non_negative, help="last commit (default: the latest)")
    p.set_defaults(fn=_compact)
    text = "delete expired log files (delta.logRetentionDuration)"
    p = sub.add_parser("cleanup", help=text, description=text)
    _table_argument(p)
    p.set_defaults(fn=_cleanup)
    text = "list (or, with --apply, delete) data files no version in the retention references"
    p = sub.add_parser("vacuum", help=text, description=text)
    _table_argument(p)
    p.add_argument(
        "--retention-hours",
        type=_hours,
        help="default: the table's delta.deletedFileRetentionDuration (7 days)",
    )
    p.add_argument("--force", action="store_true", help="allow a shorter retention")
    p.add_argument("--apply", action="store_true", help="delete instead of listing")
    _progress_argument(p)
    p.set_defaults(fn=_vacuum)
    _add_catalog_commands(sub)
    args = parser.parse_args(argv)
    try:
        args.fn(args)
    except DeltaError as e:
        print(f"deltalog: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    except (ValueError, TypeError, OSError) as e:
        print(f"deltalog: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
