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

/* disown(handle): SWIG's own __gc will no longer destroy it. The layer's
 * __gc hands collected handles to its graveyard (destroyed later, outside
 * the collector); it runs before SWIG's __gc of the same handle because Lua
 * finalizes in reverse order of creation and the handle is made first. */
%{
static int zkelect_lua_disown(lua_State *L)
{
    swig_lua_userdata *u = (swig_lua_userdata *)lua_touserdata(L, 1);
    luaL_argcheck(L, u != NULL, 1, "a zkelect handle expected");
    u->own = 0;
    return 0;
}
%}
%native(disown) int zkelect_lua_disown(lua_State *L);

%define ZKELECT_RAISE(code, msg)
    zkelect_lua_push_error(L, code, msg);
    SWIG_fail;
%enddef

%typemap(out) int64_t, uint64_t, long long, unsigned long long, size_t, unsigned
%{ lua_pushinteger(L, (lua_Integer)$1); SWIG_arg++; %}
%typemap(in, checkfn="lua_isinteger") int64_t, size_t
%{ $1 = ($1_ltype)lua_tointeger(L, $input); %}

/* Any number is accepted for an int (timeouts come as 1e3 or 2^32 just as
 * often as 1000): an integer saturates to C's int range instead of
 * wrapping, a fraction is rounded away from zero (0.5 ms must still wait),
 * NaN is an EINVAL error. */
%{
#include <limits.h>

static int zkelect_lua_toint(lua_State *L, int idx, int *out)
{
    if (lua_isinteger(L, idx)) {
        lua_Integer v = lua_tointeger(L, idx);
        *out = v > INT_MAX ? INT_MAX : v < INT_MIN ? INT_MIN : (int)v;
        return 1;
    }
    lua_Number d = lua_tonumber(L, idx);
    if (d != d)
        return 0;
    if (d >= (lua_Number)INT_MAX) {
        *out = INT_MAX;
    } else if (d <= (lua_Number)INT_MIN) {
        *out = INT_MIN;
    } else {
        int i = (int)d; /* truncates toward zero */
        if ((lua_Number)i < d)
            i++;
        else if ((lua_Number)i > d)
            i--;
        *out = i;
    }
    return 1;
}
%}
%typemap(in, checkfn="lua_isnumber") int %{
    if (!zkelect_lua_toint(L, $input, &$1)) {
        zkelect_lua_push_error(L, ZKELECT_EINVAL, "argument $argnum of $symname is NaN");
        SWIG_fail;
    }
%}
%typemap(out) int
%{ lua_pushinteger(L, (lua_Integer)$1); SWIG_arg++; %}

/* A Lua string may hold NUL bytes; C would see it cut at the first one (an
 * id "a\0b" silently becoming "a"), so that is an EINVAL error. Lua owns
 * the bytes for the call: nothing to copy or free. */
%typemap(in, checkfn="SWIG_lua_isnilstring") char *, const char * %{
    {
        size_t zkelect_len = 0;
        $1 = ($1_ltype)lua_tolstring(L, $input, &zkelect_len);
        if ($1 != NULL && strlen($1) != zkelect_len) {
            zkelect_lua_push_error(L, ZKELECT_EINVAL, "argument $argnum of $symname holds a NUL byte");
            SWIG_fail;
        }
    }
%}

/* The idiomatic layer (bindings/luajit/zkelect/layer.lua, shared with the
 * LuaJIT module) and its Lua 5.4 back end (bindings/lua/zkelect_swig.lua),
 * embedded by the build as the C strings ZKELECT_LUA_LAYER and
 * ZKELECT_LUA_BACKEND. Once SWIG has registered the raw functions, the back
 * end runs with the module table and the function the layer's chunk
 * returns. */
%{
#include "zkelect_lua_layer.h"
%}
%init %{
    if (luaL_loadbufferx(L, ZKELECT_LUA_BACKEND, sizeof ZKELECT_LUA_BACKEND - 1, "=zkelect_swig.lua", "t") != LUA_OK)
        lua_error(L);
    lua_pushvalue(L, -2);
    if (luaL_loadbufferx(L, ZKELECT_LUA_LAYER, sizeof ZKELECT_LUA_LAYER - 1, "=zkelect/layer.lua", "t") != LUA_OK)
        lua_error(L);
    lua_call(L, 0, 1);
    lua_call(L, 2, 0);
%}

%define ZKELECT_TYPE(name) name %enddef
