#!/usr/bin/env bash
# Builds and installs deltalog, then runs the end-to-end demo (examples/demo.py): a directory
# catalog of tables it makes itself, the same catalog served over HTTP, then the golden tables
# in ../shared/corpus when present.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/deltalog-target}"
python -m pip install -q --disable-pip-version-check "maturin>=1.5,<2"
# deltalog's JVM companion for Spark (jvm/), into the package before it is built.
if command -v mvn >/dev/null 2>&1; then
  bash scripts/build_jvm.sh
else
  echo "note: no mvn on PATH: deltalog.spark will read DV tables through its Python data source"
fi
python -m pip install -q --disable-pip-version-check -e ".[rest]" --no-build-isolation
python examples/demo.py "$@"
