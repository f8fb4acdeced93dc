#!/usr/bin/env bash
# Builds and installs deltalog, then runs the end-to-end demo (examples/demo.py): a directory
# catalog of tables it makes itself, the same catalog served over HTTP, then the golden tables
# in ../shared/corpus when present.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/deltalog-target}"
python -m pip install -q --disable-pip-version-check "maturin>=1.5,<2"
python -m pip install -q --disable-pip-version-check -e ".[rest]" --no-build-isolation
python examples/demo.py "$@"
