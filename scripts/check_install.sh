#!/usr/bin/env bash
# Checks that `deltalog[rest]` installs and serves the whole Unity Catalog API from a wheel, in
# two fresh venvs: (a) the newest version of every dependency, (b) every dependency pinned at
# the lowest version pyproject.toml declares for deltalog[rest] (constraints generated from its
# lower bounds). In each: pip install, pip check, then scripts/check_install_uc.py (a real
# `deltalog catalog serve`, driven with plain HTTP: catalog, schema, managed table, a
# catalog-managed commit through the Delta API, read back).
#
#   scripts/check_install.sh [WHEEL]
#
# Without WHEEL, builds one from the work tree with `maturin build --release` into a temporary
# directory (CARGO_TARGET_DIR defaults to $HOME/.cache/deltalog-target, so the Rust build is
# reused). Needs network access to PyPI. Prints a summary; exits non-zero if either venv fails.
set -uo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-python3}
WORK=$(mktemp -d /tmp/deltalog-check-install.XXXXXX)
echo "work directory: $WORK"

WHEEL=${1:-}
if [[ -z "$WHEEL" ]]; then
    export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/deltalog-target}
    (cd "$REPO" && maturin build --release --out "$WORK/dist") >"$WORK/build.log" 2>&1 || {
        echo "maturin build failed: see $WORK/build.log"; exit 1; }
    WHEEL=$(ls "$WORK"/dist/deltalog-*.whl | head -n 1)
fi
WHEEL=$(cd "$(dirname "$WHEEL")" && pwd)/$(basename "$WHEEL")
echo "wheel: $WHEEL"

# The lowest versions: every `name>=X` of the base dependencies and the rest extra, as name==X
# (markers kept).
"$PYTHON" - "$REPO/pyproject.toml" >"$WORK/lowest.txt" <<'PY'
import re, sys, tomllib
project = tomllib.load(open(sys.argv[1], "rb"))["project"]
for req in project["dependencies"] + project["optional-dependencies"]["rest"]:
    spec, _, marker = req.partition(";")
    m = re.fullmatch(r"\s*([A-Za-z0-9_.\-\[\]]+)\s*>=\s*([^,\s]+)\s*(,.*)?", spec)
    if m is None:
        raise SystemExit(f"no lower bound in {req!r}")
    name = re.sub(r"\[.*\]", "", m.group(1))
    print(f"{name}=={m.group(2)}" + (f"; {marker.strip()}" if marker else ""))
PY
echo "lowest versions:"; sed 's/^/  /' "$WORK/lowest.txt"

declare -A RESULT
for mode in newest lowest; do
    venv="$WORK/venv-$mode"
    log="$WORK/$mode.log"
    echo "== $mode ($log)"
    {
        "$PYTHON" -m venv "$venv" &&
        "$venv/bin/pip" install -q --upgrade pip &&
        if [[ $mode == lowest ]]; then
            "$venv/bin/pip" install -c "$WORK/lowest.txt" "deltalog[rest] @ file://$WHEEL"
        else
            "$venv/bin/pip" install --upgrade "deltalog[rest] @ file://$WHEEL"
        fi &&
        "$venv/bin/pip" check &&
        "$venv/bin/pip" list --format=freeze &&
        (cd "$WORK" && "$venv/bin/python" "$REPO/scripts/check_install_uc.py")
    } >"$log" 2>&1
    if [[ $? -eq 0 ]]; then RESULT[$mode]=passed; else RESULT[$mode]=FAILED; fi
    tail -n 3 "$log" | sed 's/^/  /'
done

echo "== summary"
status=0
for mode in newest lowest; do
    echo "$mode: ${RESULT[$mode]}"
    [[ ${RESULT[$mode]} == passed ]] || status=1
done
exit $status
