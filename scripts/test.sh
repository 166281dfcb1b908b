#!/usr/bin/env bash
# The whole test suite: Rust unit and corpus tests, then the Python tests (python/tests): the
# Python package, built as a wheel from this tree and installed, and the round trip of
# `mdfkit export` through pyarrow, then the studio in Chromium. Installs the Python packages it
# needs if they are missing.
#
#   scripts/test.sh         # all of the above
#   scripts/test.sh --all   # and then the object-store tests (scripts/test-cloud.sh: local S3,
#                           # Azure and a fault proxy) and the scale tests (scripts/test-scale.sh:
#                           # Spark, Dask, Delta Lake), as CI runs them
set -euo pipefail
all=""
case "${1:-}" in
    --all) all=1 ;;
    "") ;;
    *) echo "usage: scripts/test.sh [--all]" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mdfkit/target}"
export MDFKIT_CORPUS="${MDFKIT_CORPUS:-$(pwd)/../shared/corpus}"
cargo test --workspace --locked 2>&1 | grep -v "^\s*Compiling" || exit "${PIPESTATUS[0]}"
cargo build --locked -q -p mdfkit-cli
# Every crate's documentation without a broken link; the library's with every public item
# documented (deny(missing_docs)).
RUSTDOCFLAGS="-D warnings" cargo doc --locked -q --workspace --no-deps

# Python: the wheel (scripts/wheel.sh installs the build tool and test runner), then the optional
# extras (pandas, polars, DuckDB, deltalake to read Delta exports back). An extra that PyPI has
# no build of for this machine is reported, and its tests skip loudly.
wheels="$CARGO_TARGET_DIR/wheels"
scripts/wheel.sh "$wheels"
pip_install() { python3 -m pip install -q --disable-pip-version-check "$@"; }
unavailable=""
probe="$(mktemp -d)"
for extra in pandas polars duckdb deltalake; do
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
pip_install --force-reinstall --no-deps "$wheels"/mdfkit-*.whl

MDFKIT_BIN="$CARGO_TARGET_DIR/debug/mdfkit" python3 -m pytest -q python/tests

# The studio in a real browser: Debian's Chromium driven by Playwright (installs both if missing).
scripts/test-studio.sh

if [ -n "$all" ]; then
    scripts/test-cloud.sh
    scripts/test-scale.sh
fi
