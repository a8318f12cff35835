-- LuaRocks: `luarocks install zkelect` (once published), or from a checkout
-- `luarocks make bindings/lua/zkelect-1.2.0-1.rockspec` at the top of the
-- tree. Needs swig, a C compiler and `pkg-config libzkelect`
-- (libzkelect-dev); Debian users have lua-zkelect instead.
rockspec_format = "3.0"
package = "zkelect"
version = "1.2.0-1"
source = {
   url = "git+https://github.com/libzkelect/libzkelect.git",
   tag = "v1.2.0",
}
description = {
   summary = "Leader election on Apache ZooKeeper (libzkelect)",
   detailed = [[
Several processes volunteer on one ZooKeeper path; exactly one leads at a
time, a leader that loses contact stops calling itself leader before anyone
else is elected, and each term carries a fencing token.]],
   homepage = "https://github.com/libzkelect/libzkelect",
   license = "Apache-2.0",
   labels = { "zookeeper", "leader-election", "distributed" },
}
dependencies = {
   "lua >= 5.4, < 5.5",
}
build = {
   type = "command",
   build_command = [[LUA_INCDIR="$(LUA_INCDIR)" CC="$(CC)" sh bindings/lua/build.sh build-luarocks]],
   install = {
      lib = { zkelect = "build-luarocks/zkelect.so" },
   },
}
