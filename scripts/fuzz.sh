#!/usr/bin/env bash
# Fuzzing: builds every cargo-fuzz target of fuzz/ (nightly, optimised, debug assertions on: an
# arithmetic overflow is a crash; a target that does not compile fails the script, whichever
# targets are run), seeds them with pages, records, values
# and backup heads cut out of the corpus at run time (never committed), runs each for a bounded
# time and ends with a table of how much each tried:
#
#   target  inputs  inputs/s  cpu-s  inputs/cpu-s  cov  ft  corpus  crashes
#
# inputs and inputs/s are libFuzzer's final stats (`stat::number_of_executed_units`,
# `stat::average_exec_per_sec`, wall clock); cpu-s is the CPU time the fuzzer used (user + system),
# and inputs/cpu-s the rate it gives, which a busy machine does not lower; cov (edges) and ft
# (features) come from libFuzzer's last status line;
# corpus is the number of files in the target's corpus folder at the end (seeds + inputs found);
# crashes counts the crash, leak, timeout and out-of-memory inputs written by this run. Fails when
# a target crashes, hangs (30 s an input) or runs out of memory; the input that did it is kept in
# fuzz/artifacts/<target>-<kind>-... (replay it with
# `$CARGO_TARGET_DIR/x86_64-unknown-linux-gnu/release/<target> <file>`).
#
#   scripts/fuzz.sh [seconds-per-target] [target ...]     # default: 60 s, every target
#
# FUZZ_SANITIZER=address builds with AddressSanitizer (and its leak checker) instead of none, the
# default: mdfkit's crates are `#![forbid(unsafe_code)]`, and a sanitizer checks what only unsafe
# code can break (cargo-fuzz's own help says so) at 3 to 5 times the cost an input (the page target
# 4,400 inputs a CPU-second under ASan, 20,000 without; catalog 45 against 190: 2026-11-26, README).
# Both builds share one folder, so switching rebuilds every target.
# FUZZ_PARALLEL=N runs N targets at a time (default 1: one core, so inputs/s is a one-core rate).
# FUZZ_MARKDOWN=1 prints the table as Markdown (for docs/), after a line naming the date, the
# cores, the CPU and the load average.
# FUZZ_KEEP=1 keeps the work folder (seeds and the inputs found) and prints where it is.
# Installs cargo-fuzz (from crates.io) and a nightly toolchain when they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mdfkit/target}"
export MDFKIT_CORPUS="${MDFKIT_CORPUS:-$(pwd)/../shared/corpus}"
seconds="${1:-60}"
shift || true
parallel="${FUZZ_PARALLEL:-1}"
sanitizer="${FUZZ_SANITIZER:-none}"
case "$sanitizer" in none|address) ;; *) echo "FUZZ_SANITIZER must be none or address, not $sanitizer" >&2; exit 1 ;; esac
# Every [[bin]] of fuzz/Cargo.toml.
all_targets=(page record cd_record compression_info xml clr xpress lob catalog backup scan backup_extents log ldf anatomy redo studio_input delta_log)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
    [[ " ${all_targets[*]} " == *" $t "* ]] || { echo "unknown fuzz target: $t (targets: ${all_targets[*]})" >&2; exit 1; }
done

if ! rustup toolchain list | grep -q '^nightly' && ! rustup toolchain install nightly --profile minimal; then
    echo "*** SKIPPED fuzzing: no nightly toolchain here and none could be installed ***" >&2
    exit 0
fi
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
[ -f "$MDFKIT_CORPUS/MANIFEST.tsv" ] || { echo "corpus not found at $MDFKIT_CORPUS (set MDFKIT_CORPUS)" >&2; exit 1; }

start=$(date +%s)
# Every target, always: one that no longer compiles fails here even when it is not run.
(cd fuzz && cargo +nightly fuzz build -O --debug-assertions --sanitizer "$sanitizer" 2>&1 | grep -v "^\s*Compiling" || exit "${PIPESTATUS[0]}")
bin_dir="$CARGO_TARGET_DIR/x86_64-unknown-linux-gnu/release"
for t in "${all_targets[@]}"; do
    [ -x "$bin_dir/$t" ] || { echo "fuzz target $t was not built" >&2; exit 1; }
done
echo "fuzz build (${#all_targets[@]} targets, sanitizer $sanitizer): $(( $(date +%s) - start )) s"

work="$(mktemp -d)"
if [ -n "${FUZZ_KEEP:-}" ]; then echo "work folder: $work"; else trap 'rm -rf "$work"' EXIT; fi
cargo run -q --locked -p mdfkit --example fuzz_seeds -- "$MDFKIT_CORPUS" "$work/seeds"

mkdir -p fuzz/artifacts
# Runs one target; its log goes to $work/$t.log, its exit status to $work/$t.rc.
run_target() {
    local t="$1" corpus="$work/corpus/$1"
    mkdir -p "$corpus" "$work/artifacts/$t"
    cp -r "$work/seeds/$t/." "$corpus/" 2>/dev/null || true
    # -timeout: one input taking longer is a hang; -rss_limit_mb: a memory blow-up is a failure.
    # -malloc_limit_mb needs a sanitizer's allocator hooks: without one, an address-space cap makes
    # an allocation past 3 GB fail, which aborts the input as a crash.
    # GLIBC_TUNABLES: glibc's allocator tuned as the CLI tunes it for itself (mmap threshold
    # 2 MiB, trim threshold 32 MiB: `keep_large_buffers_out_of_the_heap` in mdfkit-cli's main.rs),
    # so the parsers run as `mdfkit` runs them; with glibc's defaults every list of a page's
    # parts over 128 KiB was mapped afresh and faulted in for each input (anatomy: a fifth of its
    # CPU in page faults).
    set +e
    [ "$sanitizer" = address ] || ulimit -v $((3 << 20))
    GLIBC_TUNABLES=glibc.malloc.mmap_threshold=2097152:glibc.malloc.trim_threshold=33554432 \
    "$bin_dir/$t" "$corpus" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
        -print_final_stats=1 -artifact_prefix="$work/artifacts/$t/" >"$work/$t.log" 2>&1
    echo $? >"$work/$t.rc"
    set -e
    # The CPU time of this subshell's children (the fuzzer): `times` (not in a pipeline, which
    # would run it in a subshell of its own) prints "XmY.YYYs XmY.YYYs" (user, system) on its
    # second line.
    times >"$work/$t.times"
    sed -n 2p "$work/$t.times" | tr 'ms' '  ' | awk '{ printf "%.1f\n", $1 * 60 + $2 + $3 * 60 + $4 }' >"$work/$t.cpu"
}

running=()
for t in "${targets[@]}"; do
    echo "=== $t: ${seconds} s"
    run_target "$t" &
    running+=($!)
    if [ ${#running[@]} -ge "$parallel" ]; then
        wait "${running[0]}"
        running=("${running[@]:1}")
    fi
done
for pid in "${running[@]}"; do wait "$pid"; done

# The value of libFuzzer's final stat $2 in log $1.
final_stat() { sed -n "s/^stat::$2: *\([0-9]*\).*/\1/p" "$1" | tail -1; }
# The number after "$2: " in the last status line of log $1 (lines "#N <event> cov: ... ft: ...").
status_field() { grep -E '^#[0-9]+' "$1" | grep -o "$2: [0-9]*" | tail -1 | cut -d' ' -f2; }

failed=()
# One row of the table: aligned columns, or a Markdown table row with FUZZ_MARKDOWN=1.
row() {
    if [ -n "${FUZZ_MARKDOWN:-}" ]; then
        printf '| %s ' "$@"
        printf '|\n'
    else
        printf '%-16s %12s %9s %7s %12s %7s %7s %7s %7s\n' "$@"
    fi
}
table="$(row target inputs inputs/s cpu-s inputs/cpu-s cov ft corpus crashes)"
[ -z "${FUZZ_MARKDOWN:-}" ] || table+=$'\n'"$(row --- ---: ---: ---: ---: ---: ---: ---: ---:)"
for t in "${targets[@]}"; do
    log="$work/$t.log"
    crashes=$(find "$work/artifacts/$t" -type f | wc -l)
    if [ "$(cat "$work/$t.rc")" != 0 ] || [ "$crashes" -gt 0 ]; then
        failed+=("$t")
        for f in "$work/artifacts/$t"/*; do
            if [ -f "$f" ]; then cp "$f" "fuzz/artifacts/$t-$(basename "$f")"; fi
        done
        echo "--- $t failed (exit $(cat "$work/$t.rc")):" >&2
        grep -E "ERROR|panicked|SUMMARY|Test unit written|DEATH|out-of-memory|timeout" "$log" | head -20 >&2 || true
    fi
    inputs="$(final_stat "$log" number_of_executed_units)"
    cpu="$(cat "$work/$t.cpu")"
    per_cpu="$(awk -v n="${inputs:-0}" -v s="$cpu" 'BEGIN { if (s > 0) printf "%d", n / s; else print "-" }')"
    table+=$'\n'"$(row "$t" "$inputs" "$(final_stat "$log" average_exec_per_sec)" \
        "$cpu" "$per_cpu" "$(status_field "$log" cov)" "$(status_field "$log" ft)" \
        "$(find "$work/corpus/$t" -type f | wc -l)" "$crashes")"
done
cpu_model="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -1)"
echo "fuzzing took $(( $(date +%s) - start )) s, ${seconds} s a target, $parallel at a time, sanitizer $sanitizer" \
    "($(date -u '+%Y-%m-%d'), $(nproc) cores${cpu_model:+ $cpu_model}, load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null))"
echo "$table"
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz targets failed: ${failed[*]} (inputs in fuzz/artifacts/)" >&2
    exit 1
fi
