#!/usr/bin/env bash
# Fast inner loop: a dev-profile build of the native module (dependencies optimised, our crates
# at opt-level 1) copied next to the Python sources of an editable install. Release builds come
# from `pip install .` / scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/deltalog-target}"
cargo build -p deltalog-python
# Copied then renamed: a running Python that has the old module mapped keeps its inode.
cp "$CARGO_TARGET_DIR/debug/lib_native.so" python/deltalog/_native.abi3.so.new
mv -f python/deltalog/_native.abi3.so.new python/deltalog/_native.abi3.so
