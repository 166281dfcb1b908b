#!/usr/bin/env bash
# Builds mdfkit and shows what it reads from a real SQL Server file of the corpus.
# (Until the built-in sample database exists, this uses AdventureWorksLT 2012 from ../shared/corpus.)
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mdfkit/target}"
corpus="${MDFKIT_CORPUS:-$(pwd)/../shared/corpus}"
db="$corpus/big/jdhj-edx__adventureworkslt2012_data.mdf"
cargo build --release --locked -q -p mdfkit-cli
mdfkit="$CARGO_TARGET_DIR/release/mdfkit"
echo "== mdfkit info (corpus sample: AdventureWorksLT 2012)"; "$mdfkit" info "$db"
echo; echo "== mdfkit tables"; "$mdfkit" tables "$db"
echo; echo "== mdfkit schema SalesLT.Product"; "$mdfkit" schema "$db" SalesLT.Product
