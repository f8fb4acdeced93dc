#!/usr/bin/env bash
# Builds deltalog's JVM companion (jvm/, issue #45) and puts the jar where the wheel and an
# editable install take it: python/deltalog/spark/jars/deltalog-spark.jar (not committed).
# Maven's repository (~/.m2) keeps the few Spark jars it compiles against between runs.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v mvn >/dev/null 2>&1; then
  echo "error: mvn is not on PATH (Maven builds deltalog's JVM companion)" >&2
  exit 2
fi
mvn -q -B -f jvm/pom.xml package
mkdir -p python/deltalog/spark/jars
cp jvm/target/deltalog-spark.jar python/deltalog/spark/jars/deltalog-spark.jar
