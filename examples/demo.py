"""deltalog end to end: a catalog of tables it makes itself, written, changed, time-travelled
and maintained; then, when the test corpus is beside the repository, Delta tables written by
Delta Spark.

Run with ``bash scripts/demo.sh`` (or ``python examples/demo.py [CORPUS_DIR]``). The first part
needs nothing but deltalog; the default corpus is ``../shared/corpus/golden``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pyarrow.compute as pc

import deltalog as dl

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = ROOT.parent / "shared" / "corpus" / "golden"

TABLES = [
    ("checkpoint/delta", "classic checkpoint + _last_checkpoint with checksum"),
    ("multi-part-checkpoint/delta", "multi-part checkpoint"),
    ("v2-checkpoint-json/delta", "UUID-named V2 checkpoint (JSON) with sidecars"),
    ("v2-checkpoint-parquet/delta", "UUID-named V2 checkpoint (parquet) with sidecars"),
    ("dv-with-columnmapping/delta", "deletion vectors + column mapping (name mode)"),
    ("corrupted-last-checkpoint-kernel/delta", "corrupt _last_checkpoint: falls back to listing"),
    ("basic-decimal-table/delta", "decimals, statistics parsed into typed columns"),
]


def show(corpus: Path, name: str, what: str) -> None:
    start = time.perf_counter()
    t = dl.DeltaTable(corpus / name)
    adds = t.get_add_actions()
    elapsed = (time.perf_counter() - start) * 1000
    p = t.protocol()
    print(f"\n== {name}  ({what})")
    print(
        f"   version {t.version()}, protocol ({p.min_reader_version}, {p.min_writer_version})"
        f" reader={p.reader_features} writer={p.writer_features}"
    )
    print(f"   column mapping: {t.column_mapping_mode()}; schema: {', '.join(t.schema().names)}")
    rows = pc.sum(adds.column("num_records")).as_py()
    dvs = adds.column("deletion_vector").drop_null()
    print(
        f"   {adds.num_rows} active files, {rows} records by statistics, {len(dvs)} with a "
        f"deletion vector; opened in {elapsed:.1f} ms"
    )


def main() -> int:
    corpus = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_CORPUS
    print(f"deltalog {dl.__version__}")
    own_tables()
    if not corpus.is_dir():
        print(f"\n(corpus not found at {corpus}: the Delta Spark tables are skipped)")
        return 0
    return golden_tables(corpus)


def own_tables() -> None:
    # Writing: a table with deletion vectors and the change feed, DML, MERGE, a constraint.
    import tempfile

    import pyarrow as pa

    with tempfile.TemporaryDirectory() as tmp:
        # A directory catalog (Lance catalog specification): its sub-directories are tables.
        catalog = dl.connect_catalog({"type": "dir", "path": f"{tmp}/warehouse"})
        print(f"\n== a directory catalog at {catalog.path}")
        path = catalog.table_uri("orders")
        print("\n== writing: create, DELETE, UPDATE, MERGE, CHECK constraint, RESTORE")
        orders = pa.table(
            {
                "id": pa.array(range(1, 11), pa.int64()),
                "region": ["eu", "us"] * 5,
                "amount": [float(i * 10) for i in range(1, 11)],
            }
        )
        config = {"delta.enableDeletionVectors": "true", "delta.enableChangeDataFeed": "true"}
        catalog.write_table("orders", orders, partition_by=["region"], configuration=config)
        catalog.write_table("customers", pa.table({"id": [1, 2], "name": ["Ada", "Bo"]}))
        print(f"   tables: {catalog.list_tables()}")
        t = catalog.load_table("orders")
        p = t.protocol()
        print(
            f"   created: protocol ({p.min_reader_version}, {p.min_writer_version}) "
            f"{p.writer_features}"
        )
        m = t.delete("amount < 30")
        print(
            f"   DELETE amount < 30: {m['num_deleted_rows']} rows, "
            f"{m['num_deletion_vectors_added']} deletion vector(s), 0 files rewritten"
        )
        m = t.update({"amount": "amount * 1.1"}, "region = 'eu'")
        print(f"   UPDATE eu amounts: {m['num_updated_rows']} rows")
        updates = pa.table(
            {"id": pa.array([5, 42], pa.int64()), "region": ["eu", "us"], "amount": [1.0, 420.0]}
        )
        m = (
            t.merge(updates, "target.id = source.id")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute()
        )
        print(
            f"   MERGE: {m['num_target_rows_updated']} updated, "
            f"{m['num_target_rows_inserted']} inserted"
        )
        t.alter.add_constraint({"positive": "amount > 0"})
        try:
            dl.write_table(
                path, pa.table({"id": [0], "region": ["eu"], "amount": [-1.0]}), mode="append"
            )
        except dl.ConstraintViolationError as e:
            print(f"   refused: {e}")
        changes = t.load_cdf(starting_version=1).read_all()
        kinds = sorted(set(changes.column("_change_type").to_pylist()))
        print(f"   change feed since v1: {changes.num_rows} rows ({', '.join(kinds)})")
        t.restore(0)
        print(f"   RESTORE 0: {t.to_pyarrow_table().num_rows} rows again at version {t.version()}")

        # Maintenance: checkpoints, log compaction, version checksums, VACUUM.
        print("\n== maintenance: checkpoint, compaction, checksum, VACUUM")
        t.alter.add_feature("v2Checkpoint")
        t = dl.DeltaTable(path)
        w = t.create_checkpoint("v2-json", sidecars=2)
        print(
            f"   V2 checkpoint of v{w['version']}: {w['num_actions']} actions, "
            f"{w['num_add_files']} files, written {', '.join(Path(f).name for f in w['files'])}"
        )
        print(f"   log compaction: {Path(t.compact_logs(1, 4)).name}")
        print(f"   v{t.version()}.crc agrees with the log: {t.validate_checksum()}")
        gone = t.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=True)
        print(f"   VACUUM (dry run, no retention) would delete {gone.num_files} file(s)")

        layout(tmp)
        catalog_managed(tmp)
        rest_catalog(tmp)


def layout(tmp: str) -> None:
    """OPTIMIZE Z-order: fewer files, and a point filter on either column reads few of them.

    Twenty appends of 10,000 random rows make twenty files of about 155 KiB, each spanning
    every value of both columns. Z-order rewrites them into files of about ``target_size``
    (512 KiB here: a few files, each covering a narrow range of both columns). The target
    decides the number of files: a target smaller than the files it rewrites (64 KiB, say)
    makes more files than before, as deltalake's ``z_order`` does.
    """
    import random

    import pyarrow as pa

    print("\n== layout: OPTIMIZE ZORDER BY, then a shallow CLONE")
    path = f"{tmp}/events"
    rng = random.Random(19)
    for _ in range(20):
        n = 10_000
        batch = pa.table(
            {
                "user_id": pa.array([rng.randrange(100_000) for _ in range(n)], pa.int64()),
                "amount": pa.array([rng.random() * 100 for _ in range(n)], pa.float64()),
            }
        )
        dl.write_table(path, batch, mode="append")
    t = dl.DeltaTable(path)

    def read(t: dl.DeltaTable) -> str:
        files = len(t.files())
        by_user = len(t.scan(filter=dl.col("user_id") == 4242).tasks())
        by_amount = len(t.scan(filter=dl.col("amount") == 42.0).tasks())
        return f"{files} files; user_id = 4242 reads {by_user}, amount = 42.0 reads {by_amount}"

    print(f"   before: {read(t)}")
    m = t.optimize.z_order(["user_id", "amount"], target_size=512 * 1024)
    print(
        f"   Z-order: {m['numFilesRemoved']} files -> {m['numFilesAdded']} in version "
        f"{m['version']} ({m['numRows']:,} rows moved, nothing changed)"
    )
    print(f"   after:  {read(t)}")
    clone = t.clone(f"{tmp}/events_copy")
    print(
        f"   shallow clone at version {clone.version()}: {clone.to_pyarrow_table().num_rows:,} "
        "rows, its files the original's"
    )


def catalog_managed(tmp: str) -> None:
    """Catalog-managed tables (catalogManaged): the embedded SQLite catalog ratifies every
    commit; small commits are held inline until published; two tables change in one
    transaction."""
    import pyarrow as pa

    print("\n== catalog-managed tables in an embedded SQLite catalog")
    cat = dl.connect_catalog(
        {"type": "sqlite", "path": f"{tmp}/catalog.db", "warehouse": f"{tmp}/managed"}
    )
    cat.create_namespace("shop")
    stock = pa.table({"sku": ["A-17", "B-2"], "units": pa.array([5, 9], pa.int64())})
    cat.write_table("shop.stock", stock)
    cat.write_table("shop.sales", pa.table({"sku": ["B-2"], "units": pa.array([1], pa.int64())}))
    described = cat.describe_table("shop.stock")
    print(
        f"   shop.stock: version {described.latest_version}, features "
        f"{described.protocol and described.protocol['readerFeatures']} (from the catalog alone)"
    )
    with cat.transaction() as tx:
        tx.write_table(
            "shop.sales", pa.table({"sku": ["A-17"], "units": pa.array([5], pa.int64())})
        )
        tx.load_table("shop.stock").delete("sku = 'A-17'")
    print(f"   one transaction over two tables: {tx.versions} (ratified together)")
    t = cat.load_table("shop.stock")
    print(
        f"   shop.stock now: {t.to_pyarrow_table().to_pylist()}; history: "
        f"{[h.get('operation') for h in t.history()]}"
    )
    w = t.create_checkpoint()
    print(f"   checkpoint of v{w['version']}, cleared with the catalog")


def rest_catalog(tmp: str) -> None:
    """The same catalog shared through a REST server (``deltalog catalog serve``, a Lance
    Namespace server) with tokens: a writer appends; its schema change needs an admin."""
    import subprocess
    import sys
    import time

    import pyarrow as pa

    from deltalog.server.auth import add_token

    print("\n== the same catalog served over HTTP: deltalog catalog serve")
    tokens = f"{tmp}/tokens.json"
    writer, admin = add_token(tokens, "etl", "writer"), add_token(tokens, "ops", "admin")
    command = [sys.executable, "-m", "deltalog", "catalog", "serve", "--port", "0"]
    command += ["--db", f"sqlite://{tmp}/catalog.db", "--warehouse", f"{tmp}/managed"]
    command += ["--tokens", tokens, "--log-level", "warning"]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        line = server.stdout.readline().strip()
        print(f"   {line}")
        url = line.split("listening on ", 1)[1].split()[0]
        as_writer = dl.connect_catalog({"type": "rest", "uri": url, "token": writer})
        sales = pa.table({"sku": ["C-3"], "units": pa.array([2], pa.int64())})
        for _ in range(50):  # the server may still be starting
            try:
                t = as_writer.load_table("shop.sales")
                break
            except dl.CatalogError:
                time.sleep(0.1)
        dl.write_table(t, sales, mode="append")
        print(
            f"   writer appended: shop.sales v{t.version()}, {t.to_pyarrow_table().num_rows} rows"
        )
        try:
            t.alter.add_columns(pa.schema({"note": pa.string()}))
        except dl.CatalogError as e:
            print(f"   writer's schema change refused: {str(e).split(': ')[-1]}")
        as_admin = dl.connect_catalog({"type": "rest", "uri": url, "token": admin})
        as_admin.load_table("shop.sales").alter.add_columns(pa.schema({"note": pa.string()}))
        print(f"   admin's schema change: {as_admin.load_table('shop.sales').schema().names}")
        web_pages(url, admin)
    finally:
        server.terminate()
        server.wait(30)


def web_pages(url: str, token: str) -> None:
    """What the server's web pages (``/ui/``) show, read through their JSON API: a table's
    health and the admin view's audit log of refusals (the writer's refused change)."""
    import json
    import time
    import urllib.request

    def view(name: str, query: str = "") -> dict:
        request = urllib.request.Request(f"{url}/ui/api/{name}?{query}")
        request.add_header("Authorization", f"Bearer {token}")  # a header, never the URL
        with urllib.request.urlopen(request, timeout=30) as answer:
            return dict(json.loads(answer.read()))

    print(f"   web pages: {url}/ui/ (sign in with a token; they only read)")
    health = view("health", "ns=shop&t=sales")
    print(
        f"   shop.sales health: {health['files']} files, {health['bytes']} bytes, "
        f"{health['checkpoint']['since']} versions since a checkpoint, "
        f"{len(health['versions'])} versions charted"
    )
    for advice in health["advice"]:
        print(f"     {advice['problem']}: {advice['command']}")
    for _ in range(50):  # refusals are written in the background
        refusals = view("server")["refusals"]
        if refusals:
            break
        time.sleep(0.1)
    for r in refusals[:3]:
        print(f"   refused: {r['principal']} {r['method']} {r['path']} -> {r['status']}")


def golden_tables(corpus: Path) -> int:
    print(f"\n== reading golden tables in {corpus}")
    for name, what in TABLES:
        show(corpus, name, what)

    # Table data: deletion vectors and column mapping applied, filters pushed down.
    t = dl.DeltaTable(corpus / "dv-with-columnmapping/delta")
    print("\n== reading rows: dv-with-columnmapping")
    table = t.to_pyarrow_table()
    print(f"   {table.num_rows} live rows (deletion vectors applied), columns {table.column_names}")
    scan = t.scan(filter=dl.col("part") == 0)
    part = scan.to_pyarrow_table()
    print(
        f"   part = 0: {part.num_rows} rows from {scan.num_files} of {scan.files_considered} "
        f"files (partition pruning); first ids {sorted(part.column('col1').to_pylist())[:5]}"
    )
    tasks = scan.tasks()
    print(
        f"   {len(tasks)} picklable task(s), e.g. {tasks[0]!r} -> "
        f"{dl.read_task(tasks[0]).num_rows} rows via read_task"
    )

    # Time travel and history.
    t = dl.DeltaTable(corpus / "time-travel-start-start20-start40/delta")
    print("\n== time travel: time-travel-start-start20-start40")
    for entry in t.history():
        print(f"   v{entry['version']}: {entry.get('operation')} at {entry['timestamp']}")
    for v in range(t.version() + 1):
        t.load_as_version(v)
        print(f"   version {v}: {len(t.files())} files")

    # Bad input is a typed error naming the file, version and rule.
    print("\n== tables a correct reader must refuse")
    for name in (
        "versions-not-contiguous/delta",
        "deltalog-state-reconstruction-from-checkpoint-missing-protocol/delta",
        "deltalog-invalid-protocol-version/delta",
        "no-delta-log-folder/delta",
    ):
        try:
            dl.DeltaTable(corpus / name)
        except dl.DeltaError as e:
            print(f"   {name}: {type(e).__name__}: {e}")
        else:
            print(f"   {name}: UNEXPECTEDLY OPENED")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
