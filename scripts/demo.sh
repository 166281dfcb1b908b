#!/usr/bin/env bash
# Builds mdfkit, writes the built-in sample database (no SQL Server, no corpus needed) and shows
# what mdfkit reads from it: info, tables, schema, and a Parquet export.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mdfkit/target}"
cargo build --release --locked -q -p mdfkit-cli
"$CARGO_TARGET_DIR/release/mdfkit" demo "$@"
