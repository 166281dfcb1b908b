#!/usr/bin/env bash
# The whole test suite: unit tests, corpus conformance, CLI tests. Run from anywhere.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mdfkit/target}"
export MDFKIT_CORPUS="${MDFKIT_CORPUS:-$(pwd)/../shared/corpus}"
cargo test --workspace --locked -- --nocapture 2>&1 | grep -v "^\s*Compiling" || exit "${PIPESTATUS[0]}"
