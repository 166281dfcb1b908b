#!/usr/bin/env bash
# Builds the Python package (python/) as a wheel into DIR, in debug mode (a release build of arrow
# + parquet takes ~11 minutes on 2 cores). Installs maturin, pyarrow and pytest with pip when
# they are missing. Further arguments go to maturin: `--features cloud` for object URLs.
# Usage: scripts/wheel.sh DIR [MATURIN ARGUMENTS...]
set -euo pipefail
cd "$(dirname "$0")/.."
out="$1"
shift
pip_install() { python3 -m pip install -q --disable-pip-version-check "$@"; }
python3 -c "import pyarrow, pytest" 2>/dev/null || pip_install pyarrow pytest
command -v maturin >/dev/null || python3 -c "import maturin" 2>/dev/null || pip_install "maturin>=1.5,<2"
maturin=(maturin)
command -v maturin >/dev/null || maturin=(python3 -m maturin)
rm -rf "$out"
"${maturin[@]}" build --locked --strip -q -m python/Cargo.toml -o "$out" "$@" 2>&1 | grep -v "^\s*Compiling" || exit "${PIPESTATUS[0]}"
