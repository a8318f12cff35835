/*
 * lua.i - Lua 5.4 specifics of the zkelect SWIG interface (included by
 * zkelect.i). Errors are raised as a table {code=, name=, message=} whose
 * __tostring reads "ZKELECT_ESTATE: message", so pcall callers can branch on
 * the code and uncaught errors still print well. 64-bit values (fencing
 * tokens are zxids) are Lua integers, not doubles that would round them.
 */

%{
#include <lauxlib.h>

static int zkelect_lua_error_tostring(lua_State *L)
{
    lua_getfield(L, 1, "name");
    lua_getfield(L, 1, "message");
    lua_pushfstring(L, "%s: %s", lua_tostring(L, -2), lua_tostring(L, -1));
    return 1;
}

static void zkelect_lua_push_error(lua_State *L, int code, const char *msg)
{
    lua_createtable(L, 0, 3);
    lua_pushinteger(L, code);
    lua_setfield(L, -2, "code");
    lua_pushstring(L, zkelect_err_name(code));
    lua_setfield(L, -2, "name");
    lua_pushstring(L, msg);
    lua_setfield(L, -2, "message");
    if (luaL_newmetatable(L, "zkelect.error")) {
        lua_pushcfunction(L, zkelect_lua_error_tostring);
        lua_setfield(L, -2, "__tostring");
    }
    lua_setmetatable(L, -2);
}

/* make_error(code, message): the same error object, for the Lua layer. */
static int zkelect_lua_make_error(lua_State *L)
{
    zkelect_lua_push_error(L, (int)luaL_checkinteger(L, 1), luaL_checkstring(L, 2));
    return 1;
}
%}
%native(make_error) int zkelect_lua_make_error(lua_State *L);

%define ZKELECT_RAISE(code, msg)
    zkelect_lua_push_error(L, code, msg);
    SWIG_fail;
%enddef

%typemap(out) int64_t, uint64_t, long long, unsigned long long, size_t, unsigned
%{ lua_pushinteger(L, (lua_Integer)$1); SWIG_arg++; %}
%typemap(in, checkfn="lua_isinteger") int64_t, size_t
%{ $1 = ($1_ltype)lua_tointeger(L, $input); %}

/* Integers stay integers: timeouts and counter numbers are ints. */
%typemap(in, checkfn="lua_isinteger") int
%{ $1 = (int)lua_tointeger(L, $input); %}
%typemap(out) int
%{ lua_pushinteger(L, (lua_Integer)$1); SWIG_arg++; %}

/* The idiomatic layer (bindings/lua/zkelect_layer.lua), embedded by the build as
 * the C string ZKELECT_LUA_LAYER and run with the module table as its
 * argument once SWIG has registered the raw functions. */
%{
#include "zkelect_lua_layer.h"
%}
%init %{
    if (luaL_loadbufferx(L, ZKELECT_LUA_LAYER, sizeof ZKELECT_LUA_LAYER - 1, "=zkelect_layer.lua", "t") != LUA_OK)
        lua_error(L);
    lua_pushvalue(L, -2);
    lua_call(L, 1, 0);
%}

%define ZKELECT_TYPE(name) name %enddef
