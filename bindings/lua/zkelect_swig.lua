-- zkelect_swig.lua - the Lua 5.4 back end of the Lua layer
-- (bindings/luajit/zkelect/layer.lua).
--
-- Built into zkelect.so with the layer (not a module of its own, hence
-- names that "require" cannot mistake for the module): lua.i's loader runs
-- this chunk with the module table, where SWIG has put the raw functions
-- (one per C function, prefix removed; they raise the errors of lua.i's
-- push_error), and the layer's function, so `require "zkelect"` gives both.

local M, layer = ...

-- A copy taken before the layer adds its own names to M.
local raw = {}
for k, v in pairs(M) do raw[k] = v end

-- Every error this module raises, from C or from the layer, is made by
-- lua.i's push_error and shares its metatable.
raw.error_mt = getmetatable(raw.make_error(M.EINVAL, ""))

-- Lua 5.4 finalizes tables: the keeper is one, made before any handle, so
-- finalized after them all.
function raw.keeper(f) return setmetatable({}, { __gc = f }) end

layer(M, raw)
M.VERSION = raw.version_string()
