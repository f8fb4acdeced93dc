#!/usr/bin/env bash
# Builds deltalog and runs every test: Rust formatting, lints and unit tests, the Python lint,
# and the pytest suite against the corpus in ../shared. Installs what it needs from PyPI, and
# PostgreSQL (Debian's package) for the PostgreSQL catalog tests.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/deltalog-target}"
export CARGO_TERM_COLOR=never
# Each stage says when it starts (seconds since the script began), so that a run's time can
# be read per stage.
stage() { echo "== [$(date -u +%H:%M:%S) +${SECONDS}s] $*"; }

if [ ! -d ../shared/corpus ] && [ -z "${DELTALOG_SHARED:-}" ]; then
  echo "error: ../shared/corpus not found beside the repository (or set DELTALOG_SHARED)" >&2
  exit 2
fi

stage "installing build and test dependencies"
# PostgreSQL's server binaries, for the PostgreSQL catalog tests (tests/postgres_server.py
# looks on PATH, then in Debian's /usr/lib/postgresql/<major>/bin).
if ! command -v initdb >/dev/null 2>&1 || ! command -v pg_ctl >/dev/null 2>&1; then
  if ! ls /usr/lib/postgresql/*/bin/initdb /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
    echo "== installing PostgreSQL"
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    $sudo apt-get update -q
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql
  fi
fi
# Debian's Chromium, the real browser the web pages' tests drive (tests/test_ui_browser.py,
# through Playwright from PyPI).
if [ ! -x /usr/bin/chromium ]; then
  echo "== installing Chromium"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -q
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium
fi
# wheel: pyspark ships as an sdist, built here without build isolation (a fresh Python has
# setuptools but not wheel, and the build then fails with "invalid command 'bdist_wheel'").
python -m pip install -q --disable-pip-version-check "maturin>=1.5,<2" wheel
# deltalog's JVM companion (jvm/: Spark's file index and DV-aware parquet format fed by the
# Rust core's plan), built before the module so that the package holds its jar.
bash scripts/build_jvm.sh
# The native module in Cargo.toml's `ci` profile (release code, no LTO, incremental), as is the
# core's test binary below: with CARGO_TARGET_DIR kept between runs a change recompiles in about
# a minute instead of four for each of the two. Benchmarks want the `release` build of
# scripts/demo.sh or `pip install -e .`.
MATURIN_PEP517_ARGS="--profile ci" \
  python -m pip install -q --disable-pip-version-check -e ".[test]" --no-build-isolation
# Delta Spark 4.4, the protocol's reference implementation, for the interop tests (issue #44):
# pyspark 4.2.0 in a Python environment of its own and Delta's jars from Maven Central (mvn),
# both cached under ~/.cache/deltalog-reference (DELTALOG_REFERENCE_HOME) and reused.
python tests/reference_engine/env.py
# Hadoop's S3A (hadoop-aws and the AWS SDK modules it loads, ~13 MB) for the companion's S3
# tests, by mvn into ~/.cache/deltalog-object-store-jars (DELTALOG_OBJECT_STORE_JARS).
python tests/hadoop_aws.py >/dev/null

# The modules whose Spark runs in JVMs and processes of their own start now, in a second
# pytest beside the checks and the rest of the suite, so that both cores work throughout:
# Delta Spark's (tests/test_delta_spark_*.py), the standalone cluster's, the S3 one's and the
# Spark 4.2 one's (issue #45). Their output is printed at the end.
own_jvms=(tests/test_delta_spark_*.py tests/test_spark_cluster.py tests/test_spark_object_store.py
  tests/test_spark_releases.py)
reference_pid=""
tmp="$(mktemp -d)"
# A failing check ends the script: the background run goes with it.
trap 'if [ -n "$reference_pid" ]; then kill "$reference_pid" 2>/dev/null || true; fi; rm -rf "$tmp"' EXIT
if [ "$#" -eq 0 ]; then
  stage "pytest of the modules with JVMs of their own, in the background"
  python -m pytest -q -p no:cacheprovider --durations=10 --basetemp="$tmp/reference" \
    "${own_jvms[@]}" >"$tmp/reference.log" 2>&1 &
  reference_pid=$!
fi

stage "cargo fmt / clippy / test"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
# The core's unit tests in the `ci` profile: its dependencies are the artefacts the Python
# module was just built from, so a cold run compiles them once (not again for a test profile).
cargo test --profile ci -p deltalog-core

stage "ruff"
python -m ruff check python tests benches examples scripts

stage "layout, types"
# No import circle between the package's folders, no module over 800 lines (issue #43).
python scripts/check_layout.py
# mypy --strict over python/deltalog (pyproject.toml's [tool.mypy]), and the native module's
# stub checked against the built module.
MYPY_CACHE_DIR="${MYPY_CACHE_DIR:-$HOME/.cache/deltalog-mypy}" python -m mypy
python -m mypy.stubtest deltalog._native --mypy-config-file pyproject.toml

stage "pytest"
set +e
if [ -n "$reference_pid" ]; then
  python -m pytest -q -p no:cacheprovider --durations=10 --basetemp="$tmp/main" \
    --ignore-glob='*/test_delta_spark_*' --ignore=tests/test_spark_cluster.py \
    --ignore=tests/test_spark_object_store.py --ignore=tests/test_spark_releases.py
  status=$?
  wait "$reference_pid"
  reference_status=$?
  reference_pid=""
  stage "pytest of the modules with JVMs of their own (exit status $reference_status)"
  cat "$tmp/reference.log"
else
  python -m pytest -q -p no:cacheprovider --durations=10 "$@"
  status=$?
  reference_status=0
fi
set -e
stage "done (pytest exit status $status, $reference_status)"
for s in "$status" "$reference_status"; do
  if [ "$s" -eq 5 ]; then
    echo "error: pytest collected no tests" >&2
    exit 1
  fi
done
if [ "$status" -ne 0 ]; then exit "$status"; fi
exit "$reference_status"
