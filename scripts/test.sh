#!/usr/bin/env bash
# The whole test suite: Rust unit and corpus tests, then the Python round-trip tests (pyarrow reads
# what `mdfkit export` wrote). Installs the Python test packages if they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mdfkit/target}"
export MDFKIT_CORPUS="${MDFKIT_CORPUS:-$(pwd)/../shared/corpus}"
cargo test --workspace --locked 2>&1 | grep -v "^\s*Compiling" || exit "${PIPESTATUS[0]}"
cargo build --locked -q -p mdfkit-cli
python3 -c "import pyarrow, pytest" 2>/dev/null || python3 -m pip install -q pyarrow pytest
MDFKIT_BIN="$CARGO_TARGET_DIR/debug/mdfkit" python3 -m pytest -q tests/python
