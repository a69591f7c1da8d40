/* Floe: checks of a Lua table's keys and values, header only, for a
 * module's face in scenes (floe_module_desc.lua_open; the module links Lua
 * itself) and the core's own scene functions (sim:boundary_mesh's placement
 * keys). Errors are raised with luaL_error and name the function `fn`, so
 * the scene reports them with its file and line:
 *
 *   static const char *const KEYS[] = {"name", "size", NULL};
 *   floe_lua_only_keys(L, 1, "rigid.body", KEYS);      -- "unknown key 'sise' (accepted: name, size)"
 *   double r = floe_lua_num(L, 1, "rigid.body", "radius", 0.1);  -- a finite number, or the default */
#ifndef FLOE_LUA_ARGS_H
#define FLOE_LUA_ARGS_H

#include <lauxlib.h>
#include <lua.h>

#include <math.h>
#include <string.h>

/* Every key of the table at t is one of keys[] (NULL-terminated); else an
 * error naming the key and listing the accepted ones. */
static inline void floe_lua_only_keys(lua_State *L, int t, const char *fn, const char *const *keys)
{
    lua_pushnil(L);
    while (lua_next(L, t)) {
        lua_pop(L, 1);
        int ok = 0;
        for (const char *const *k = keys; *k && !ok; k++)
            ok = lua_type(L, -1) == LUA_TSTRING && strcmp(lua_tostring(L, -1), *k) == 0;
        if (ok)
            continue;
        const char *bad = luaL_tolstring(L, -1, NULL);
        luaL_Buffer b;
        luaL_buffinit(L, &b);
        for (const char *const *k = keys; *k; k++) {
            luaL_addstring(&b, k == keys ? "" : ", ");
            luaL_addstring(&b, *k);
        }
        luaL_pushresult(&b);
        luaL_error(L, "%s: unknown key '%s' (accepted: %s)", fn, bad, lua_tostring(L, -1));
    }
}

/* t[key] as a finite number (absent: def) */
static inline double floe_lua_num(lua_State *L, int t, const char *fn, const char *key, double def)
{
    int type = lua_getfield(L, t, key);
    double v = def;
    if (type != LUA_TNIL) {
        if (type != LUA_TNUMBER || !isfinite(lua_tonumber(L, -1)))
            luaL_error(L, "%s: '%s' must be a finite number (got %s)", fn, key, luaL_typename(L, -1));
        v = lua_tonumber(L, -1);
    }
    lua_pop(L, 1);
    return v;
}

#endif
