#!/usr/bin/env bash
# Builds the JVM Spark data source (jvm/: `spark.read.format("mdfkit")` reading splits through
# `mdfkit read-split` as Arrow, no row conversion) into a jar, with javac and jar from the JDK
# against the jars PySpark ships (no build tool, nothing downloaded). Prints the jar's path.
#   scripts/spark-jar.sh [OUT.jar]      default: $CARGO_TARGET_DIR/jvm/mdfkit-spark.jar
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
out="${1:-$target/jvm/mdfkit-spark.jar}"
jars="$(python3 -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')"
classes="$(mktemp -d)"
trap 'rm -rf "$classes"' EXIT
javac --release 17 -Xlint:all -Werror -nowarn -cp "$jars/*" -d "$classes" jvm/src/io/mdfkit/spark/*.java
cp -r jvm/resources/. "$classes/"
mkdir -p "$(dirname "$out")"
jar --create --file "$out" -C "$classes" .
echo "$out"
