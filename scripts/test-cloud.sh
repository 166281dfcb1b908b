#!/usr/bin/env bash
# The cloud tests: object URLs (s3://, az://) read and written against real servers started on
# 127.0.0.1 by the tests themselves (crates/mdfkit-cli/tests/cloud.rs, python/tests/test_cloud.py),
# and stopped by them.
# Installs the S3-compatible server versitygw and the TCP proxy toxiproxy (the WAN in a box of
# crates/mdfkit-cli/tests/transfer.rs: latency, bandwidth caps, cut connections) with `go install`
# into ~/.cache/mdfkit/tools/bin when they are missing (the first install downloads and compiles
# them: ~6 minutes on 2 cores, which is why this is not part of scripts/test.sh). Azurite comes
# from npm into ~/.cache/mdfkit/tools/node_modules. Under CI=true a server that cannot be installed
# fails the run; elsewhere its tests are SKIPPED, loudly.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mdfkit/target}"
export MDFKIT_CORPUS="${MDFKIT_CORPUS:-$(pwd)/../shared/corpus}"
tools="$HOME/.cache/mdfkit/tools"
export PATH="$tools/bin:$HOME/go/bin:$PATH"
mkdir -p "$tools/bin"

VERSITYGW=v1.8.0
if ! command -v versitygw >/dev/null; then
    if command -v go >/dev/null; then
        echo "installing versitygw $VERSITYGW (go install)..." >&2
        GOBIN="$tools/bin" go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW" \
            || echo "*** versitygw could not be installed: the S3 tests will be SKIPPED ***" >&2
    else
        echo "*** go is not installed, so neither is versitygw: the S3 tests will be SKIPPED ***" >&2
    fi
fi

# toxiproxy's server command is cmd/server in this version: installed as toxiproxy-server.
TOXIPROXY=v2.5.0
if ! command -v toxiproxy-server >/dev/null; then
    if command -v go >/dev/null; then
        echo "installing toxiproxy $TOXIPROXY (go install)..." >&2
        build="$(mktemp -d)"
        if GOBIN="$build" go install "github.com/Shopify/toxiproxy/v2/cmd/server@$TOXIPROXY"; then
            mv "$build/server" "$tools/bin/toxiproxy-server"
        else
            echo "*** toxiproxy could not be installed: the WAN tests will be SKIPPED ***" >&2
        fi
        rm -rf "$build"
    else
        echo "*** go is not installed, so neither is toxiproxy: the WAN tests will be SKIPPED ***" >&2
    fi
fi

AZURITE=3.37.0
if ! [ -x "$tools/node_modules/.bin/azurite-blob" ] && ! command -v azurite-blob >/dev/null; then
    if command -v npm >/dev/null; then
        echo "installing azurite $AZURITE (npm)..." >&2
        npm install --prefix "$tools" --no-audit --no-fund "azurite@$AZURITE" >&2 \
            || echo "*** azurite could not be installed: the Azure tests will be SKIPPED ***" >&2
    else
        echo "*** npm is not installed, so neither is azurite: the Azure tests will be SKIPPED ***" >&2
    fi
fi
export PATH="$tools/node_modules/.bin:$PATH"

export MDFKIT_CLOUD_TESTS=1
cargo test --workspace --locked --test cloud --test transfer 2>&1 | grep -v "^\s*Compiling" || exit "${PIPESTATUS[0]}"

# Python with object-store support (python/tests/test_cloud.py): the wheel built with the `cloud`
# feature, installed into a folder of its own (scripts/test.sh's default wheel stays installed).
wheels="$CARGO_TARGET_DIR/wheels-cloud"
site="$CARGO_TARGET_DIR/python-cloud"
scripts/wheel.sh "$wheels" --features cloud
rm -rf "$site"
python3 -m pip install -q --disable-pip-version-check --no-deps --target "$site" "$wheels"/mdfkit-*.whl
PYTHONPATH="$site" python3 -m pytest -q python/tests/test_cloud.py
