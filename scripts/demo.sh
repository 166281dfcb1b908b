#!/usr/bin/env bash
# Builds mdfkit, writes the built-in sample database (no SQL Server, no corpus needed) and shows
# what mdfkit reads from it: info, tables, schema, and a Parquet export.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mdfkit/target}"
# A debug build: it compiles in a third of the time of a release build (the sample is small) and
# is the build the test suite uses, so the two share one cache. Use `cargo build --release` for
# real work.
cargo build --locked -q -p mdfkit-cli
"$CARGO_TARGET_DIR/debug/mdfkit" demo "$@"
