#!/usr/bin/env bash
# The studio in a real browser (issue 17): Debian's Chromium driven by the Python `playwright`
# package through executable_path (never `playwright install`: no browser download here), on the
# demo database and a corpus backup. Installs what is missing (apt-get: chromium; pip: playwright).
# Screenshots of each view land in artifacts/studio/ (gitignored).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mdfkit/target}"
export MDFKIT_CORPUS="${MDFKIT_CORPUS:-$(pwd)/../shared/corpus}"
start=$(date +%s)
if [ ! -x /usr/bin/chromium ]; then
    sudo_="$( [ "$(id -u)" = 0 ] || echo sudo )"
    $sudo_ apt-get update -q && $sudo_ apt-get install -y -q chromium >/dev/null
fi
python3 -c "import playwright" 2>/dev/null || python3 -m pip install -q --disable-pip-version-check playwright
echo "studio browser test: installs took $(( $(date +%s) - start )) s"
cargo build --locked -q -p mdfkit-cli
bin="$CARGO_TARGET_DIR/debug/mdfkit"
artifacts="artifacts/studio"
mkdir -p "$artifacts"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$bin" demo --dir "$work/demo" >/dev/null 2>&1
python3 scripts/studio_browser.py "$bin" "$artifacts" demo "$work/demo/shop.mdf" dbo.Customers
# A damaged copy: one byte of page 1:49 (a dbo.Customers page, checksum-protected) changed.
cp "$work/demo/shop.mdf" "$work/damaged.mdf"
python3 -c "import sys; f = open(sys.argv[1], 'r+b'); f.seek(49 * 8192 + 4000); b = f.read(1); f.seek(-1, 1); f.write(bytes([b[0] ^ 0xff]))" "$work/damaged.mdf"
DAMAGED_PAGE=1:49 python3 scripts/studio_browser.py "$bin" "$artifacts" damaged "$work/damaged.mdf" dbo.Customers
backup="$MDFKIT_CORPUS/bak/ros1991-amigos.api__database.bak"
if [ -f "$backup" ]; then
    python3 scripts/studio_browser.py "$bin" "$artifacts" backup "$backup"
elif [ -n "${CI:-}" ]; then
    echo "corpus backup $backup not found: CI must run the studio on it" >&2; exit 1
else
    echo "*** SKIPPED the studio on a corpus backup: $backup not found (set MDFKIT_CORPUS) ***" >&2
fi
echo "studio browser test: $(( $(date +%s) - start )) s in all; screenshots in $artifacts/"
