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
