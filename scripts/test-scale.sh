#!/usr/bin/env bash
# The scale tests (issue 18): python/tests/test_scale.py reads corpus files, a compressed backup and
# objects on a local S3 server (versitygw, started by the tests) with Spark (a local[2] session
# through the JVM data source of jvm/, built here by scripts/spark-jar.sh, and the Python data
# source), Dask (distributed.LocalCluster, 2 worker processes)
# and pickled splits in other processes, and writes Delta Lake tables (Python's export through
# `deltalake`, the CLI's `export --format delta` through mdfkit's own writer) read back with `deltalake`.
# Installs with pip what is missing: PySpark 4, dask[distributed,dataframe], deltalake (about
# 2.5 minutes and 450 MB on first run); Spark needs Java 17 or later and the jar javac, installed
# from Debian (openjdk-17-jdk-headless) when `javac` is missing; versitygw as scripts/test-cloud.sh installs it.
# Run after scripts/test.sh (the Rust split tests, crates/mdfkit/tests/splits.rs, are in its
# `cargo test`). Under CI=true anything missing fails the run; elsewhere its tests skip loudly.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mdfkit/target}"
export MDFKIT_CORPUS="${MDFKIT_CORPUS:-$(pwd)/../shared/corpus}"
tools="$HOME/.cache/mdfkit/tools"
export PATH="$tools/bin:$HOME/go/bin:$PATH"
mkdir -p "$tools/bin"
started=$SECONDS

if ! javac -version >/dev/null 2>&1; then
    echo "installing Java 17 (apt-get: openjdk-17-jdk-headless)..." >&2
    if command -v apt-get >/dev/null; then
        sudo_=""
        [ "$(id -u)" = 0 ] || sudo_="sudo"
        $sudo_ apt-get update -q && $sudo_ apt-get install -y -q openjdk-17-jdk-headless >&2 \
            || echo "*** Java could not be installed: the Spark tests will FAIL ***" >&2
    fi
fi

pip_install() { python3 -m pip install -q --disable-pip-version-check "$@"; }
python3 -c "import pyspark; assert pyspark.__version__ >= '4'" 2>/dev/null || pip_install "pyspark>=4,<5"
python3 -c "import dask.dataframe, distributed" 2>/dev/null || pip_install "dask[distributed,dataframe]"
python3 -c "import deltalake" 2>/dev/null || pip_install deltalake
echo "scale tests: tools ready after $((SECONDS - started)) s" >&2

VERSITYGW=v1.8.0  # as scripts/test-cloud.sh
if ! command -v versitygw >/dev/null && command -v go >/dev/null; then
    echo "installing versitygw $VERSITYGW (go install)..." >&2
    GOBIN="$tools/bin" go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW" \
        || echo "*** versitygw could not be installed: the S3 tests will be SKIPPED ***" >&2
fi

# The wheel with object-store support, installed into a folder of its own (as scripts/test-cloud.sh).
wheels="$CARGO_TARGET_DIR/wheels-cloud"
site="$CARGO_TARGET_DIR/python-cloud"
scripts/wheel.sh "$wheels" --features cloud
rm -rf "$site"
python3 -m pip install -q --disable-pip-version-check --no-deps --target "$site" "$wheels"/mdfkit-*.whl
echo "scale tests: wheel ready after $((SECONDS - started)) s" >&2

# The CLI, for its `export --format delta` read back with deltalake and for the JVM data source.
cargo build -q -p mdfkit-cli --locked
jar=""
if javac -version >/dev/null 2>&1; then
    jar="$(scripts/spark-jar.sh)"
else
    echo "*** javac is missing: the JVM Spark data source's tests will be SKIPPED (FAIL under CI) ***" >&2
fi
MDFKIT_SPARK_JAR="$jar" MDFKIT_BIN="$CARGO_TARGET_DIR/debug/mdfkit" MDFKIT_SCALE_TESTS=1 PYTHONPATH="$site" python3 -m pytest -q -p no:cacheprovider python/tests/test_scale.py
echo "scale tests: done in $((SECONDS - started)) s" >&2
