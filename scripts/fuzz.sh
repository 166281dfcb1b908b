#!/usr/bin/env bash
# Fuzzing: builds the cargo-fuzz targets of fuzz/ (nightly, AddressSanitizer), seeds them with
# pages, records, values and backup heads cut out of the corpus at run time (never committed), and
# runs each for a bounded time. Fails when a target crashes, hangs or runs out of memory; the
# input that did it is kept in fuzz/artifacts/<target>-crash-... (replay it with
# `fuzz/target/.../<target> <file>` or `cargo +nightly fuzz run <target> <file>` in fuzz/).
#
#   scripts/fuzz.sh [seconds-per-target] [target ...]     # default: 60 s, every target
#
# Installs cargo-fuzz (from crates.io) and a nightly toolchain when they are missing.
# FUZZ_KEEP=1 keeps the work folder (seeds and the inputs found) and prints where it is.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mdfkit/target}"
export MDFKIT_CORPUS="${MDFKIT_CORPUS:-$(pwd)/../shared/corpus}"
seconds="${1:-60}"
shift || true
all_targets=(page record cd_record xml clr xpress lob catalog backup scan)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")

if ! rustup toolchain list | grep -q '^nightly' && ! rustup toolchain install nightly --profile minimal; then
    echo "*** SKIPPED fuzzing: no nightly toolchain here and none could be installed ***" >&2
    exit 0
fi
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
[ -f "$MDFKIT_CORPUS/MANIFEST.tsv" ] || { echo "corpus not found at $MDFKIT_CORPUS (set MDFKIT_CORPUS)" >&2; exit 1; }

start=$(date +%s)
# cargo fuzz build takes one target or all of them.
build() { (cd fuzz && cargo +nightly fuzz build -O --debug-assertions "$@" 2>&1 | grep -v "^\s*Compiling" || exit "${PIPESTATUS[0]}"); }
if [ $# -eq 0 ]; then build; else for t in "${targets[@]}"; do build "$t"; done; fi
echo "fuzz build: $(( $(date +%s) - start )) s"

work="$(mktemp -d)"
if [ -n "${FUZZ_KEEP:-}" ]; then echo "work folder: $work"; else trap 'rm -rf "$work"' EXIT; fi
cargo run -q --locked -p mdfkit --example fuzz_seeds -- "$MDFKIT_CORPUS" "$work/seeds"

bin_dir="$CARGO_TARGET_DIR/x86_64-unknown-linux-gnu/release"
mkdir -p fuzz/artifacts
failed=()
for t in "${targets[@]}"; do
    mkdir -p "$work/found/$t" "$work/seeds/$t"
    echo "=== $t: ${seconds} s"
    # -timeout: one input taking longer is a hang; -rss_limit_mb: a memory blow-up is a failure.
    if ! "$bin_dir/$t" "$work/found/$t" "$work/seeds/$t" \
        -max_total_time="$seconds" -timeout=30 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
        -print_final_stats=1 -artifact_prefix="fuzz/artifacts/$t-" 2>"$work/$t.log"; then
        failed+=("$t")
        grep -E "ERROR|panicked|SUMMARY|Test unit written" "$work/$t.log" | head -20 >&2 || true
    fi
    grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb|INITED|DONE" "$work/$t.log" | tr '\n' ' ' || true
    echo
done
echo "fuzzing took $(( $(date +%s) - start )) s"
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz targets failed: ${failed[*]} (inputs in fuzz/artifacts/)" >&2
    exit 1
fi
