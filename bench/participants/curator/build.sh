#!/bin/sh
# Compile the Curator participant and the idle-cost holder into DIR (default:
# ./build beside this script) against Debian's jars. curator-recipes.jar's manifest names the rest
# of its class path (curator-framework, curator-client, guava, zookeeper).
set -e
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-$HERE/build}
mkdir -p "$OUT"
javac -Xlint:-options --release 17 -d "$OUT" \
  -cp /usr/share/java/curator-recipes.jar "$HERE/CuratorParticipant.java" \
  "$HERE/CuratorIdle.java"
