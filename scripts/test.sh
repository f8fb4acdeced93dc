#!/usr/bin/env bash
# Builds deltalog and runs every test: Rust formatting, lints and unit tests, the Python lint,
# and the pytest suite against the corpus in ../shared. Installs what it needs from PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/deltalog-target}"
export CARGO_TERM_COLOR=never

if [ ! -d ../shared/corpus ] && [ -z "${DELTALOG_SHARED:-}" ]; then
  echo "error: ../shared/corpus not found beside the repository (or set DELTALOG_SHARED)" >&2
  exit 2
fi

echo "== installing build and test dependencies"
python -m pip install -q --disable-pip-version-check "maturin>=1.5,<2"
python -m pip install -q --disable-pip-version-check -e ".[test]" --no-build-isolation

echo "== cargo fmt / clippy / test"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
cargo test -p deltalog-core

echo "== ruff"
python -m ruff check python tests benches examples

echo "== pytest"
set +e
python -m pytest -q -p no:cacheprovider "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "error: pytest collected no tests" >&2
  exit 1
fi
exit "$status"
