#!/usr/bin/env bash
# The whole test suite: Rust unit and corpus tests, then the Python tests (python/tests): the
# Python package, built as a wheel from this tree and installed, and the round trip of
# `mdfkit export` through pyarrow. Installs the Python packages it needs if they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mdfkit/target}"
export MDFKIT_CORPUS="${MDFKIT_CORPUS:-$(pwd)/../shared/corpus}"
cargo test --workspace --locked 2>&1 | grep -v "^\s*Compiling" || exit "${PIPESTATUS[0]}"
cargo build --locked -q -p mdfkit-cli

# Python: the build tool and test runner, then the optional extras (pandas, polars, DuckDB).
# An extra PyPI has no build of for this machine is reported and its tests skip loudly.
pip_install() { python3 -m pip install -q --disable-pip-version-check "$@"; }
python3 -c "import pyarrow, pytest" 2>/dev/null || pip_install pyarrow pytest
command -v maturin >/dev/null || python3 -c "import maturin" 2>/dev/null || pip_install "maturin>=1.5,<2"
unavailable=""
probe="$(mktemp -d)"
for extra in pandas polars duckdb; do
    python3 -c "import $extra" 2>/dev/null && continue
    if python3 -m pip download -q --disable-pip-version-check --no-deps -d "$probe" "$extra" >/dev/null 2>&1; then
        pip_install "$extra"
    else
        echo "*** $extra cannot be installed from PyPI here: its tests will be SKIPPED ***" >&2
        unavailable="$unavailable $extra"
    fi
done
rm -rf "$probe"
export MDFKIT_UNAVAILABLE="$unavailable"

# The wheel, in debug mode: a release build of arrow + parquet takes ~11 minutes on 2 cores.
maturin=(maturin)
command -v maturin >/dev/null || maturin=(python3 -m maturin)
wheels="$CARGO_TARGET_DIR/wheels"
rm -rf "$wheels"
"${maturin[@]}" build --locked --strip -q -m python/Cargo.toml -o "$wheels" 2>&1 | grep -v "^\s*Compiling" || exit "${PIPESTATUS[0]}"
pip_install --force-reinstall --no-deps "$wheels"/mdfkit-*.whl

MDFKIT_BIN="$CARGO_TARGET_DIR/debug/mdfkit" python3 -m pytest -q python/tests
