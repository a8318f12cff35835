#!/bin/sh
# The Curator participant's command: run.sh --connect HOSTS --path P ...
# CURATOR_CLASSES: where build.sh put the classes (default ./build beside
# this script; built there on first use).
# CURATOR_CLASSPATH: the Curator to run (default Debian's, whose jars'
# manifests name the rest); another release's, complete, from
# `python3 tests/bed/curatordist.py classpath 5.9.0`. Build the classes
# with the same CURATOR_CLASSPATH.
HERE=$(cd "$(dirname "$0")" && pwd)
CLASSES=${CURATOR_CLASSES:-$HERE/build}
CP=${CURATOR_CLASSPATH:-/usr/share/java/curator-recipes.jar:/usr/share/java/slf4j-simple.jar}
[ -f "$CLASSES/CuratorParticipant.class" ] || "$HERE/build.sh" "$CLASSES" >&2 || exit 1
# exec: the driver signals this process group, and the JVM must be the
# process that gets SIGKILL/SIGSTOP.
exec java -XX:+UseSerialGC -Xms32m -Xmx256m \
  -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
  -cp "$CLASSES:$CP" \
  CuratorParticipant "$@"
