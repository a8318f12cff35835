#!/bin/sh
# Build the Java binding from bindings/swig/zkelect.i:
#   OUTDIR/zkelect.jar          org.zkelect (generated layer + Elector, Client, ...)
#   OUTDIR/libzkelect_jni.so    the JNI library (links libzkelect)
#   OUTDIR/test-classes         the JUnit 4 tests (when junit4 is installed)
#
#   bindings/java/build.sh [OUTDIR]     (default: $ZKELECT_BUILD_DIR/script-bindings/java)
#
# Run with: java -Djava.library.path=OUTDIR -cp OUTDIR/zkelect.jar ...
# (or -Dorg.zkelect.jni=OUTDIR/libzkelect_jni.so). Needs swig, a JDK,
# pkg-config libzkelect.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-${ZKELECT_BUILD_DIR:?set ZKELECT_BUILD_DIR or pass OUTDIR}/script-bindings/java}
CC=${CC:-cc}
JAVA_HOME=${JAVA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")}
JUNIT=${JUNIT:-/usr/share/java/junit4.jar:/usr/share/java/hamcrest-core.jar}

rm -rf "$out/gen" "$out/classes" "$out/test-classes"
mkdir -p "$out/gen/org/zkelect" "$out/classes"

# shellcheck disable=SC2046  # flag lists are meant to split
swig -java -package org.zkelect -module ZkelectNative -Werror \
    $(pkg-config --cflags-only-I libzkelect) \
    -outdir "$out/gen/org/zkelect" -o "$out/zkelect_wrap.c" "$here/../swig/zkelect.i"
# shellcheck disable=SC2046
# SWIG's JNI code casts jlong to pointers through type punning.
$CC -shared -fPIC -O2 -g -Wall -Wno-unused-function -fno-strict-aliasing \
    -I"$JAVA_HOME/include" -I"$JAVA_HOME/include/linux" $(pkg-config --cflags libzkelect) \
    "$out/zkelect_wrap.c" -o "$out/libzkelect_jni.so.tmp" $(pkg-config --libs libzkelect)
mv "$out/libzkelect_jni.so.tmp" "$out/libzkelect_jni.so"

"$JAVA_HOME/bin/javac" --release 17 -Xlint:all -Xlint:-serial -d "$out/classes" \
    "$out"/gen/org/zkelect/*.java "$here"/src/main/java/org/zkelect/*.java
"$JAVA_HOME/bin/jar" cf "$out/zkelect.jar" -C "$out/classes" .

if [ -f "${JUNIT%%:*}" ]; then
    mkdir -p "$out/test-classes"
    "$JAVA_HOME/bin/javac" --release 17 -d "$out/test-classes" -cp "$out/zkelect.jar:$JUNIT" \
        "$here"/src/test/java/org/zkelect/*.java
fi
echo "$out/zkelect.jar"
