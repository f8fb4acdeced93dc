"""A deliberately simple reference log replayer, used as a test oracle.

Pure Python + pyarrow; it does not use deltalog or deltalake. It follows the Delta protocol
(spec 002) sections "Checkpoints", "Action Reconciliation", "Add File and Remove File" and
"Deletion Vectors" (uniqueId) and nothing more: no log compaction, no `_last_checkpoint`, no
validation beyond "is there a usable checkpoint and a contiguous run of commits".
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow.parquet as pq

COMMIT = re.compile(r"^(\d{20})\.json$")
CLASSIC = re.compile(r"^(\d{20})\.checkpoint\.parquet$")
MULTI = re.compile(r"^(\d{20})\.checkpoint\.(\d{10})\.(\d{10})\.parquet$")
UUID_CP = re.compile(r"^(\d{20})\.checkpoint\.[0-9a-fA-F-]{36}\.(json|parquet)$")


class OracleError(Exception):
    """kind is 'not_found' (no table), 'version' (cannot reconstruct) or 'corrupt'."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass
class Snapshot:
    version: int
    checkpoint_version: int | None
    adds: dict[tuple[str, str | None], dict[str, Any]] = field(default_factory=dict)
    protocol: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    txns: dict[str, int] = field(default_factory=dict)
    domains: dict[str, str] = field(default_factory=dict)

    @property
    def paths(self) -> list[str]:
        """Decoded add paths, one per active logical file, sorted."""
        return sorted(unquote(a["path"]) for a in self.adds.values())


def canonical_path(path: str) -> str:
    """URI-decode; `file:/x`, `file:///x` and `/x` are the same file."""
    p = unquote(path)
    if p.startswith("file://"):
        p = p[len("file://") :]  # file:///x -> /x  (empty authority)
    elif p.startswith("file:"):
        p = p[len("file:") :]  # file:/x -> /x
    return p


def file_key(action: dict[str, Any]) -> tuple[str, str | None]:
    dv = action.get("deletionVector")
    dv_id = None
    if dv:
        dv_id = f"{dv['storageType']}{dv['pathOrInlineDv']}"
        if dv.get("offset") is not None:
            dv_id += f"@{dv['offset']}"
    return canonical_path(action["path"]), dv_id


def _normalize(value: Any) -> Any:
    """Make a parquet row look like its JSON form: maps (lists of (key, value) tuples in
    pyarrow) become dicts, and null struct fields are dropped (absent in JSON)."""
    if isinstance(value, dict):
        return {k: _normalize(v) for k, v in value.items() if v is not None}
    if (
        isinstance(value, list)
        and value
        and all(isinstance(x, tuple) and len(x) == 2 for x in value)
    ):
        return {k: _normalize(v) for k, v in value}
    return value


def read_parquet_actions(path: Path) -> list[dict[str, Any]]:
    rows = pq.read_table(path).to_pylist()
    return [{k: _normalize(v)} for row in rows for k, v in row.items() if v is not None]


def read_json_actions(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def read_checkpoint(log: Path, files: list[str]) -> list[dict[str, Any]]:
    actions: list[dict[str, Any]] = []
    for name in files:
        part = (
            read_json_actions(log / name)
            if name.endswith(".json")
            else read_parquet_actions(log / name)
        )
        actions.extend(part)
    for a in list(actions):  # V2 checkpoints: pull file actions in from the sidecars
        if "sidecar" in a:
            actions.extend(read_parquet_actions(log / "_sidecars" / unquote(a["sidecar"]["path"])))
    return actions


def list_log(root: Path) -> tuple[set[int], dict[int, list[list[str]]]]:
    """Commit versions, and per version the list of *complete* checkpoints (each a file list)."""
    log = root / "_delta_log"
    if not log.is_dir():
        raise OracleError("not_found", f"no _delta_log in {root}")
    commits: set[int] = set()
    checkpoints: dict[int, list[list[str]]] = {}
    parts: dict[tuple[int, int], dict[int, str]] = {}
    for name in sorted(p.name for p in log.iterdir()):
        if m := COMMIT.match(name):
            commits.add(int(m[1]))
        elif (m := CLASSIC.match(name)) or (m := UUID_CP.match(name)):
            checkpoints.setdefault(int(m[1]), []).append([name])
        elif m := MULTI.match(name):
            parts.setdefault((int(m[1]), int(m[3])), {})[int(m[2])] = name
    # Readers must ignore multi-part checkpoints with missing parts.
    for (v, total), got in parts.items():
        if set(got) == set(range(1, total + 1)):
            checkpoints.setdefault(v, []).append([got[i] for i in range(1, total + 1)])
    return commits, checkpoints


def replay(root: str | Path, version: int | None = None) -> Snapshot:
    root = Path(root)
    log = root / "_delta_log"
    commits, checkpoints = list_log(root)
    if not commits and not checkpoints:
        raise OracleError("not_found", f"empty _delta_log in {root}")
    latest = max(commits | set(checkpoints))
    target = latest if version is None else version
    if target < 0 or target > latest:
        raise OracleError("version", f"version {target} not in log (latest {latest})")
    usable = [v for v in checkpoints if v <= target]
    cp = max(usable) if usable else None
    needed = range(0 if cp is None else cp + 1, target + 1)
    missing = [v for v in needed if v not in commits]
    if missing:
        raise OracleError("version", f"cannot reconstruct {target}: commits {missing} missing")

    # Newest first: commits target..cp+1, then the checkpoint (oldest state).
    batches = [read_json_actions(log / f"{v:020}.json") for v in reversed(needed)]
    if cp is not None:
        batches.append(read_checkpoint(log, checkpoints[cp][0]))

    snap = Snapshot(version=target, checkpoint_version=cp)
    seen_files: set[tuple[str, str | None]] = set()
    seen_domains: dict[str, dict[str, Any]] = {}
    for actions in batches:
        for a in actions:
            if "add" in a or "remove" in a:
                kind = "add" if "add" in a else "remove"
                key = file_key(a[kind])
                if key not in seen_files:
                    seen_files.add(key)
                    if kind == "add":
                        snap.adds[key] = a["add"]
            elif "protocol" in a and snap.protocol is None:
                snap.protocol = a["protocol"]
            elif "metaData" in a and snap.metadata is None:
                snap.metadata = a["metaData"]
            elif "txn" in a and a["txn"]["appId"] not in snap.txns:
                snap.txns[a["txn"]["appId"]] = a["txn"]["version"]
            elif "domainMetadata" in a:
                seen_domains.setdefault(a["domainMetadata"]["domain"], a["domainMetadata"])
    snap.domains = {d: m["configuration"] for d, m in seen_domains.items() if not m.get("removed")}
    return snap


def reconstructable_versions(root: str | Path) -> tuple[list[int], int]:
    """(versions the log can reconstruct, latest version), judged by what the log contains."""
    commits, checkpoints = list_log(Path(root))
    latest = max(commits | set(checkpoints))
    ok = []
    for v in range(latest + 1):
        try:
            replay(root, v)
            ok.append(v)
        except OracleError:
            pass
    return ok, latest
