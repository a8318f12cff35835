#!/bin/sh
# Compile the Curator participant and the idle-cost holder into DIR (default:
# ./build beside this script) against $CURATOR_CLASSPATH, by default Debian's
# jars (curator-recipes.jar's manifest names the rest of its class path:
# curator-framework, curator-client, guava, zookeeper). The sources compile
# against Debian's 5.4 and Maven Central's 5.9 alike.
set -e
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-$HERE/build}
mkdir -p "$OUT"
javac -Xlint:-options --release 17 -d "$OUT" \
  -cp "${CURATOR_CLASSPATH:-/usr/share/java/curator-recipes.jar}" "$HERE/CuratorParticipant.java" \
  "$HERE/CuratorIdle.java"
