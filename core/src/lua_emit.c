/* Sources and sinks in scenes (emit.c; docs/terrain.md, docs/lua-api.md):
 *
 *   local id = sim:source{ shape = "disc", centre = {x, y, z}, direction = {0, -1, 0},
 *                          radius = 0.05, rate = 0.002 (m^3/s) | speed = 1 (m/s),
 *                          start = 0, stop = 5, set = "fluid", density = 1000 }
 *   sim:source{ shape = "line", from = {..}, to = {..}, direction = {..}, ... }
 *   sim:source{ shape = "point", centre = {..}, direction = {..}, ... }
 *   sim:source_on(id, false)              -- switch it off (on_frame, between runs)
 *   sim:sink{ min = {..}, max = {..} }    -- a region
 *   sim:sink{ edge = true, width = 0.1 }  -- the domain's faces
 *   sim:flow()  -> { mass_in, mass_emitted, mass_out, emitted, removed }
 *
 * The pipeline's "emit" stage runs them (after integrate). Keys are checked
 * and the source placed before the sim changes; errors name the scene line. */
#include "emit.h"

#include <lauxlib.h>
#include <lua.h>

#include <math.h>
#include <string.h>

int floe_lua_source(lua_State *L, floe_ctx *ctx);
int floe_lua_source_on(lua_State *L, floe_ctx *ctx);
int floe_lua_sink(lua_State *L, floe_ctx *ctx);
int floe_lua_flow(lua_State *L, floe_ctx *ctx);

static void keys_only(lua_State *L, int t, const char *fn, const char *const *keys, const char *list)
{
    lua_pushnil(L);
    while (lua_next(L, t)) {
        lua_pop(L, 1);
        int ok = 0;
        for (const char *const *k = keys; *k && !ok; k++)
            ok = lua_type(L, -1) == LUA_TSTRING && strcmp(lua_tostring(L, -1), *k) == 0;
        if (!ok)
            luaL_error(L, "%s: unknown key '%s' (accepted: %s)", fn, luaL_tolstring(L, -1, NULL), list);
    }
}

static double num(lua_State *L, int t, const char *fn, const char *key, double def)
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

/* t[key] as a vector of dim (2D: 2 or 3) numbers; 0 when absent */
static int vec(lua_State *L, int t, const char *fn, const char *key, int dim, float out[3])
{
    if (lua_getfield(L, t, key) == LUA_TNIL) {
        lua_pop(L, 1);
        return 0;
    }
    int n = lua_istable(L, -1) ? (int)lua_rawlen(L, -1) : -1;
    if (!(n == 3 || (dim == 2 && n == 2)))
        luaL_error(L, "%s: '%s' must be a vector {x, y%s}", fn, key, dim == 2 ? "" : ", z");
    out[2] = 0;
    for (int k = 0; k < n; k++) {
        if (lua_rawgeti(L, -1, k + 1) != LUA_TNUMBER || !isfinite(lua_tonumber(L, -1)))
            luaL_error(L, "%s: '%s' must hold finite numbers", fn, key);
        out[k] = (float)lua_tonumber(L, -1);
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return 1;
}

static void need(lua_State *L, int t, const char *fn, const char *key, int dim, float out[3], const char *why)
{
    if (!vec(L, t, fn, key, dim, out))
        luaL_error(L, "%s: '%s' is required %s", fn, key, why);
}

static const char *const SOURCE_KEYS[] = {"shape", "centre", "center", "direction", "radius", "from", "to", "rate",
                                          "speed", "start", "stop", "set", "density", NULL};

int floe_lua_source(lua_State *L, floe_ctx *ctx)
{
    const char *fn = "sim:source";
    luaL_checktype(L, 2, LUA_TTABLE);
    keys_only(L, 2, fn, SOURCE_KEYS,
              "shape, centre, direction, radius, from, to, rate, speed, start, stop, set, density");
    const int dim = floe_ctx_info(ctx)->dim;
    emit_source_def d;
    memset(&d, 0, sizeof d);
    lua_getfield(L, 2, "shape");
    const char *shape = luaL_optstring(L, -1, "disc");
    d.shape = !strcmp(shape, "point") ? EMIT_POINT : !strcmp(shape, "disc") ? EMIT_DISC
              : !strcmp(shape, "line") ? EMIT_LINE : 0;
    if (!d.shape)
        luaL_error(L, "%s: shape must be \"point\", \"disc\" or \"line\" (got \"%s\")", fn, shape);
    lua_pop(L, 1);
    need(L, 2, fn, "direction", dim, d.dir, "(the flow direction)");
    if (d.shape == EMIT_LINE) {
        need(L, 2, fn, "from", dim, d.a, "for a line");
        need(L, 2, fn, "to", dim, d.b, "for a line");
    } else if (!vec(L, 2, fn, "centre", dim, d.centre)) {
        need(L, 2, fn, "center", dim, d.centre, "(centre)");
    }
    d.radius = (float)num(L, 2, fn, "radius", 0);
    if (d.shape == EMIT_DISC && !(d.radius > 0))
        luaL_error(L, "%s: a disc needs radius > 0", fn);
    d.rate = num(L, 2, fn, "rate", 0);
    d.speed = num(L, 2, fn, "speed", 0);
    if (d.rate < 0 || d.speed < 0 || (d.rate > 0) == (d.speed > 0))
        luaL_error(L, "%s: give either rate (m^3/s; m^2/s in 2D) or speed (m/s), one of them positive", fn);
    d.start = num(L, 2, fn, "start", 0);
    d.stop = num(L, 2, fn, "stop", 0);
    const double rho = num(L, 2, fn, "density", 1000);
    if (!(rho > 0))
        luaL_error(L, "%s: density must be positive", fn);
    lua_getfield(L, 2, "set");
    const char *set = luaL_optstring(L, -1, "fluid");
    d.set = floe_set_find(ctx, set);
    if (!d.set.id && !(d.set = floe_set_create(ctx, set, FLOE_SET_FLUID, (float)rho)).id)
        luaL_error(L, "%s: %s", fn, floe_ctx_error(ctx));
    lua_pop(L, 1);
    int i = emit_source_add(ctx, &d);
    if (i < 0)
        luaL_error(L, "%s", floe_ctx_error(ctx));
    lua_pushinteger(L, i + 1);
    return 1;
}

int floe_lua_source_on(lua_State *L, floe_ctx *ctx)
{
    lua_Integer i = luaL_checkinteger(L, 2);
    luaL_checktype(L, 3, LUA_TBOOLEAN);
    if (emit_source_switch(ctx, (int)i - 1, lua_toboolean(L, 3)))
        luaL_error(L, "sim:source_on: %s (sim:source returns the number)", floe_ctx_error(ctx));
    return 0;
}

static const char *const SINK_KEYS[] = {"min", "max", "edge", "width", NULL};

int floe_lua_sink(lua_State *L, floe_ctx *ctx)
{
    const char *fn = "sim:sink";
    luaL_checktype(L, 2, LUA_TTABLE);
    keys_only(L, 2, fn, SINK_KEYS, "min, max, edge, width");
    const int dim = floe_ctx_info(ctx)->dim;
    emit_sink_def d;
    memset(&d, 0, sizeof d);
    lua_getfield(L, 2, "edge");
    d.edge = lua_toboolean(L, -1);
    lua_pop(L, 1);
    d.width = (float)num(L, 2, fn, "width", 0);
    if (d.width < 0)
        luaL_error(L, "%s: width must not be negative", fn);
    if (!d.edge) {
        need(L, 2, fn, "min", dim, d.min, "(or edge = true)");
        need(L, 2, fn, "max", dim, d.max, "(or edge = true)");
    }
    if (emit_sink_add(ctx, &d))
        luaL_error(L, "%s", floe_ctx_error(ctx));
    return 0;
}

int floe_lua_flow(lua_State *L, floe_ctx *ctx)
{
    emit_flow f;
    emit_flow_get(ctx, &f);
    lua_createtable(L, 0, 5);
    lua_pushnumber(L, f.mass_in);
    lua_setfield(L, -2, "mass_in");
    lua_pushnumber(L, f.mass_emitted);
    lua_setfield(L, -2, "mass_emitted");
    lua_pushnumber(L, f.mass_out);
    lua_setfield(L, -2, "mass_out");
    lua_pushinteger(L, (lua_Integer)f.emitted);
    lua_setfield(L, -2, "emitted");
    lua_pushinteger(L, (lua_Integer)f.removed);
    lua_setfield(L, -2, "removed");
    return 1;
}
