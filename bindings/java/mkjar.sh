#!/bin/sh
# Build the versioned jar for meson (bindings/java/meson.build):
#   mkjar.sh OUT.jar VERSION SWIG JAVAC JAR SWIG_I JAVA_SRC_DIR SCRATCH [SWIG -I flags...]
# SWIG's Java classes (one file per type, so no fixed list for meson) are
# generated into SCRATCH, compiled with the idiomatic classes, and packed
# with a manifest that names the version.
set -eu
out=$1 version=$2 swig=$3 javac=$4 jar=$5 iface=$6 src=$7 scratch=$8
shift 8
rm -rf "$scratch"
mkdir -p "$scratch/gen/org/zkelect" "$scratch/classes"
"$swig" -java -package org.zkelect -module ZkelectNative "$@" \
    -outdir "$scratch/gen/org/zkelect" -o "$scratch/unused_wrap.c" "$iface"
"$javac" --release 17 -Xlint:all -Xlint:-serial -d "$scratch/classes" \
    "$scratch"/gen/org/zkelect/*.java "$src"/*.java
cat > "$scratch/MANIFEST.MF" <<MF
Implementation-Title: org.zkelect
Implementation-Version: $version
Implementation-Vendor: libzkelect
Specification-Version: $version
Automatic-Module-Name: org.zkelect
MF
"$jar" cfm "$out.tmp" "$scratch/MANIFEST.MF" -C "$scratch/classes" .
mv "$out.tmp" "$out"
