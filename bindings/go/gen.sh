#!/bin/sh
# Regenerate the committed SWIG layer internal/capi from bindings/swig/*.i
# and the public header. Run it (or `go generate ./...` in bindings/go) after
# changing either, and commit the result: Go users build the module with
# cgo alone, no swig. tests/packaging/test_go_layer.py fails when the
# committed files differ from what this script writes.
#
#   gen.sh [OUTDIR]      (default: internal/capi beside this script)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/internal/capi}
mkdir -p "$out"
# Only the source tree's header, named relative to this folder: SWIG
# writes its input paths into the output, which must not depend on a build
# dir or on where the checkout is.
cd "$here"
swig -go -cgo -intgosize 64 -module capi -Werror \
    -I../../capi \
    -o "$out/capi_wrap.c.tmp" -outdir "$out" ../swig/zkelect.i
mv "$out/capi_wrap.c.tmp" "$out/capi_wrap.c"
