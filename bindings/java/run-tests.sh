#!/bin/sh
# The JUnit tests against the jar and JNI library of a meson build:
#   run-tests.sh JAR JNI_SO CLASSPATH JAVAC JAVA TEST_SRC_DIR SCRATCH
set -eu
jar=$1 jni=$2 cp=$3 javac=$4 java=$5 src=$6 scratch=$7
rm -rf "$scratch"
mkdir -p "$scratch"
"$javac" --release 17 -d "$scratch" -cp "$jar:$cp" "$src"/*.java
exec "$java" -Dorg.zkelect.jni="$jni" -cp "$scratch:$jar:$cp" org.junit.runner.JUnitCore \
    $(cd "$src" && ls *Test.java | sed 's/\.java$//; s/^/org.zkelect./')
