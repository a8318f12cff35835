#!/bin/sh
# Regenerate internal/capi from bindings/swig/zkelect.i (run by
# `go generate ./...` from bindings/go, or directly). Needs swig and
# `pkg-config libzkelect` (PKG_CONFIG_PATH may name the build's
# meson-uninstalled directory).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=$here/internal/capi
# shellcheck disable=SC2046  # the -I flags are meant to split
swig -go -cgo -intgosize 64 -module capi -Werror \
    $(pkg-config --cflags-only-I libzkelect) \
    -o "$out/capi_wrap.c.tmp" -outdir "$out" "$here/../swig/zkelect.i"
mv "$out/capi_wrap.c.tmp" "$out/capi_wrap.c"
# Go's build cache does not key on what pkg-config answers: record the
# answer in a generated source file, so a library found elsewhere (another
# build directory) rebuilds the package instead of linking stale flags.
printf '\n// pkg-config libzkelect: %s %s\n' \
    "$(pkg-config --cflags libzkelect)" "$(pkg-config --libs libzkelect)" >> "$out/capi.go"
