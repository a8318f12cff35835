#!/bin/sh
# Build the Lua 5.4 module zkelect.so from bindings/swig/zkelect.i.
#
#   bindings/lua/build.sh [OUTDIR]      (default: $ZKELECT_BUILD_DIR/script-bindings/lua)
#
# Finds libzkelect with pkg-config (PKG_CONFIG_PATH may point at the build's
# meson-uninstalled directory) and Lua's headers with pkg-config lua5.4. The
# module links libzkelect but not liblua: the interpreter that loads it
# provides Lua's symbols. Then: LUA_CPATH="OUTDIR/?.so;;" lua5.4 ...
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-${ZKELECT_BUILD_DIR:?set ZKELECT_BUILD_DIR or pass OUTDIR}/script-bindings/lua}
mkdir -p "$out"
CC=${CC:-cc}

zk_cflags=$(pkg-config --cflags libzkelect)
zk_libs=$(pkg-config --libs libzkelect)
# LUA_INCDIR: the headers of the Lua that will load the module (LuaRocks
# passes its own, see zkelect-1.0.0-1.rockspec).
if [ -n "${LUA_INCDIR:-}" ]; then
    lua_cflags=-I$LUA_INCDIR
else
    lua_cflags=$(pkg-config --cflags lua5.4 2>/dev/null || echo -I/usr/include/lua5.4)
fi

# The Lua layer (shared with the LuaJIT module) and its back end travel
# inside the .so as C arrays (NUL-terminated).
embed() {
    printf 'static const char %s[] = {\n' "$1"
    od -An -v -tx1 "$2" | sed 's/\([0-9a-f][0-9a-f]\)/0x\1,/g'
    printf '0x00};\n'
}
{
    embed ZKELECT_LUA_LAYER "$here/../luajit/zkelect/layer.lua"
    embed ZKELECT_LUA_BACKEND "$here/zkelect_swig.lua"
} > "$out/zkelect_lua_layer.h.tmp"
mv "$out/zkelect_lua_layer.h.tmp" "$out/zkelect_lua_layer.h"

# shellcheck disable=SC2086  # flag lists are meant to split
swig -lua -Werror $(pkg-config --cflags-only-I libzkelect) \
    -o "$out/zkelect_wrap.c" "$here/../swig/zkelect.i"
# shellcheck disable=SC2086
$CC -shared -fPIC -O2 -g -Wall -Wno-unused-function -Wno-unused-label \
    -I"$out" $lua_cflags $zk_cflags \
    "$out/zkelect_wrap.c" -o "$out/zkelect.so.tmp" $zk_libs
mv "$out/zkelect.so.tmp" "$out/zkelect.so"
echo "$out/zkelect.so"
