#!/bin/sh
# The Curator participant's command: run.sh --connect HOSTS --path P ...
# CURATOR_CLASSES: where build.sh put the classes (default ./build beside
# this script; built there on first use).
HERE=$(cd "$(dirname "$0")" && pwd)
CLASSES=${CURATOR_CLASSES:-$HERE/build}
[ -f "$CLASSES/CuratorParticipant.class" ] || "$HERE/build.sh" "$CLASSES" >&2 || exit 1
# exec: the driver signals this process group, and the JVM must be the
# process that gets SIGKILL/SIGSTOP.
exec java -XX:+UseSerialGC -Xms32m -Xmx256m \
  -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
  -cp "$CLASSES:/usr/share/java/curator-recipes.jar:/usr/share/java/slf4j-simple.jar" \
  CuratorParticipant "$@"
