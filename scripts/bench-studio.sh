#!/usr/bin/env bash
# The studio's speed on a database (issue 17): how long `mdfkit studio` takes to print its URL,
# each view's answer time (median of 5 requests, curl's total time on 127.0.0.1: the server's
# time plus a loopback round trip) and the server's resident memory, idle after start and after
# the views.
#
#   scripts/bench-studio.sh DB.mdf TABLE      # e.g. the forged 1 GB database and dbo.Fact
#
# Uses the release binary ($CARGO_TARGET_DIR/release/mdfkit: `cargo build --release -p
# mdfkit-cli`). The forged databases: `cargo run --release -p mdfkit-forge --example bench --
# --forge-only` prints where they are.
set -euo pipefail
db="$1"
table="$2"
bin="${CARGO_TARGET_DIR:-target}/release/mdfkit"
[ -x "$bin" ] || { echo "no release binary at $bin: cargo build --release -p mdfkit-cli" >&2; exit 2; }
out="$(mktemp)"
trap 'kill "$pid" 2>/dev/null || true; rm -f "$out"' EXIT

start=$(date +%s%N)
"$bin" studio "$db" >"$out" 2>/dev/null &
pid=$!
until grep -q "mdfkit studio: " "$out"; do
    kill -0 "$pid" 2>/dev/null || { echo "the studio stopped before printing its URL" >&2; exit 1; }
    sleep 0.005
done
echo "URL printed after $(( ($(date +%s%N) - start) / 1000000 )) ms"
printed="$(sed -n 's/^mdfkit studio: //p' "$out")"
base="${printed%%/?token=*}"
cookie="mdfkit_studio=${printed##*token=}"
rss() { awk '/VmRSS/ { printf "%.0f MB", $2 / 1024 }' "/proc/$pid/status"; }
echo "resident memory idle after start: $(rss)"

# One request's total time in ms; fails on any status but 200.
once() {
    local r
    r="$(curl -s -o /dev/null -w '%{http_code} %{time_total}' -H "Cookie: $cookie" "$base$1")"
    [ "${r%% *}" = 200 ] || { echo "GET $1 answered ${r%% *}" >&2; exit 1; }
    awk -v t="${r#* }" 'BEGIN { printf "%.1f\n", t * 1000 }'
}
# The median of 5 requests (after a first one, shown apart where it differs: caches).
view() {
    local label="$1" path="$2" first times
    first="$(once "$path")"
    times="$(for _ in 1 2 3 4 5; do once "$path"; done | sort -n | sed -n 3p)"
    printf '%-34s first %8s ms   then median %8s ms\n' "$label" "$first" "$times"
}

rows="/rows/$table"
view "first 100 rows" "$rows"
next="$(curl -s -H "Cookie: $cookie" "$base$rows.json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["next_after"])')"
view "next 100 rows (after=$next)" "$rows?after=$next"
view "last 100 rows (before=end)" "$rows?before=end"
page="${next%:*}"
view "page view ($page)" "/page/$page"
view "record view ($next)" "/record/$next"
view "allocation map" "/map"
view "allocation map PNG (file 1)" "/map/1.png?mode=owner"
echo "resident memory after the views: $(rss)"
