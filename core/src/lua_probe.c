/* sim:probe{...}: a measurement written as a CSV table beside the frames
 * (probes.c, docs/lua-api.md "Probes"). Every key is checked before the
 * probe is added; errors read "scene.lua:LINE: sim:probe: ...".
 *
 *   sim:probe{ name = "pressure", kind = "points", points = {{0.2, 0.05}, {0.2, 0.25}},
 *              attributes = {"p", "v"}, rate = 1000 }
 *   sim:probe{ name = "gauges", kind = "height", points = {{0.1, 0}, {0.3, 0}} }
 *   sim:probe{ name = "front", kind = "front", axis = "x" }
 *   sim:probe{ name = "gate", kind = "force", set = "gate" } */
#include <floe/floe.h>

#include <lauxlib.h>
#include <lua.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

int floe_lua_probe(lua_State *L, floe_ctx *ctx);

#define FN "sim:probe"
#define MAX_ATTRS 8

static const char *const KEYS[] = {"name", "kind", "points", "attributes", "axis", "direction", "set", "wall",
                                   "rate", "threshold", "time_origin", "time_scale", "scale", "reference", "min_neighbours",
                                   NULL};
static const char *const KINDS[] = {"points", "height", "front", "force", NULL};

static void only_keys(lua_State *L, int t)
{
    lua_pushnil(L);
    while (lua_next(L, t)) {
        lua_pop(L, 1);
        int ok = 0;
        for (const char *const *k = KEYS; *k && !ok; k++)
            ok = lua_type(L, -1) == LUA_TSTRING && !strcmp(lua_tostring(L, -1), *k);
        if (!ok)
            luaL_error(L, FN ": unknown key '%s' (accepted: name, kind, points, attributes, axis, direction, set, "
                       "wall, rate, threshold, time_origin, time_scale, scale, reference, min_neighbours)", luaL_tolstring(L, -1, NULL));
    }
}

static const char *str_key(lua_State *L, int t, const char *key, const char *def)
{
    int type = lua_getfield(L, t, key);
    const char *s = def;
    if (type != LUA_TNIL) {
        if (type != LUA_TSTRING || lua_rawlen(L, -1) == 0)
            luaL_error(L, FN ": '%s' must be a non-empty string (got %s)", key, luaL_typename(L, -1));
        s = lua_tostring(L, -1); /* kept alive by the table */
    }
    lua_pop(L, 1);
    return s;
}

static double num_key(lua_State *L, int t, const char *key, double def, double lo, double hi)
{
    int type = lua_getfield(L, t, key);
    double v = def;
    if (type != LUA_TNIL) {
        if (type != LUA_TNUMBER || !isfinite(lua_tonumber(L, -1)))
            luaL_error(L, FN ": '%s' must be a finite number (got %s)", key, luaL_typename(L, -1));
        v = lua_tonumber(L, -1);
        if (v < lo || v > hi)
            luaL_error(L, FN ": '%s' = %g is outside [%g, %g]", key, v, lo, hi);
    }
    lua_pop(L, 1);
    return v;
}

/* points = { {x, y[, z]}, ... } with dim coordinates each; a new array */
static float (*points_key(lua_State *L, int t, int dim, int *n))[3]
{
    *n = 0;
    if (lua_getfield(L, t, "points") == LUA_TNIL) {
        lua_pop(L, 1);
        return NULL;
    }
    int p = lua_gettop(L);
    if (!lua_istable(L, p) || lua_rawlen(L, p) == 0)
        luaL_error(L, FN ": 'points' must be a non-empty list of points {x, y%s}", dim == 3 ? ", z" : "");
    const int np = (int)lua_rawlen(L, p);
    if (np > 100000)
        luaL_error(L, FN ": at most 100000 points");
    float(*pts)[3] = lua_newuserdatauv(L, (size_t)np * sizeof *pts, 0); /* freed by the GC */
    for (int i = 0; i < np; i++) {
        lua_rawgeti(L, p, i + 1);
        if (!lua_istable(L, -1) || (int)lua_rawlen(L, -1) != dim)
            luaL_error(L, FN ": point %d must have %d coordinates", i + 1, dim);
        for (int k = 0; k < 3; k++) {
            pts[i][k] = 0.0f;
            if (k >= dim)
                continue;
            if (lua_rawgeti(L, -1, k + 1) != LUA_TNUMBER || !isfinite(lua_tonumber(L, -1)))
                luaL_error(L, FN ": point %d: coordinate %d must be a finite number", i + 1, k + 1);
            pts[i][k] = (float)lua_tonumber(L, -1);
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
    }
    lua_replace(L, p); /* the userdata stays on the stack until the call returns */
    *n = np;
    return pts;
}

static int attrs_key(lua_State *L, int t, const char **out)
{
    if (lua_getfield(L, t, "attributes") == LUA_TNIL) {
        lua_pop(L, 1);
        return 0;
    }
    if (!lua_istable(L, -1) || lua_rawlen(L, -1) == 0 || lua_rawlen(L, -1) > MAX_ATTRS)
        luaL_error(L, FN ": 'attributes' must be a list of 1 to %d attribute names", MAX_ATTRS);
    const int n = (int)lua_rawlen(L, -1);
    for (int i = 0; i < n; i++) {
        if (lua_rawgeti(L, -1, i + 1) != LUA_TSTRING)
            luaL_error(L, FN ": 'attributes' entry %d must be a string", i + 1);
        out[i] = lua_tostring(L, -1); /* kept alive by the table */
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return n;
}

/* an index into names[] of t[key] (absent: def), else an error listing them */
static int choice_key(lua_State *L, int t, const char *key, const char *def, const char *const *names,
                      const char *accepted)
{
    const char *v = str_key(L, t, key, def);
    for (int k = 0; names[k]; k++)
        if (!strcmp(v, names[k]))
            return k;
    return luaL_error(L, FN ": unknown %s '%s' (accepted: %s)", key, v, accepted);
}

/* the geometry: kind, points, attributes, axis and direction, set, wall */
static void read_geometry(lua_State *L, int t, int dim, floe_probe_def *d, const char **attrs)
{
    static const char *const WALLS[] = {"mirror", "akinci", "extrapolate", NULL};
    d->kind = FLOE_PROBE_POINTS + choice_key(L, t, "kind", "points", KINDS, "points, height, front, force");
    d->points = (const float(*)[3])points_key(L, t, dim, &d->npoints);
    if ((d->kind == FLOE_PROBE_POINTS || d->kind == FLOE_PROBE_HEIGHT) && !d->points)
        luaL_error(L, FN ": kind '%s' needs 'points'", KINDS[d->kind - FLOE_PROBE_POINTS]);
    d->nattrs = attrs_key(L, t, attrs);
    d->attrs = attrs;
    const char *axis = str_key(L, t, "axis", "x");
    if (strlen(axis) != 1 || !strchr("xyz", axis[0]) || axis[0] - 'x' >= dim)
        luaL_error(L, FN ": 'axis' must be \"x\", \"y\"%s (got '%s')", dim == 3 ? " or \"z\"" : "", axis);
    d->axis = axis[0] - 'x';
    d->direction = (int)num_key(L, t, "direction", 1, -1, 1);
    if (d->direction == 0)
        luaL_error(L, FN ": 'direction' must be 1 or -1");
    d->set = str_key(L, t, "set", NULL);
    if (d->kind == FLOE_PROBE_FORCE && !d->set)
        luaL_error(L, FN ": kind 'force' needs 'set' (a boundary set)");
    d->wall = choice_key(L, t, "wall", "mirror", WALLS, "mirror, akinci, extrapolate");
}

int floe_lua_probe(lua_State *L, floe_ctx *ctx)
{
    luaL_checktype(L, 2, LUA_TTABLE);
    const int t = 2;
    only_keys(L, t);
    floe_probe_def d;
    memset(&d, 0, sizeof d);
    d.name = str_key(L, t, "name", NULL);
    if (!d.name)
        luaL_error(L, FN ": 'name' is required (the table is written to NAME.probe.csv)");
    const char *attrs[MAX_ATTRS];
    read_geometry(L, t, floe_ctx_info(ctx)->dim, &d, attrs);
    d.rate = num_key(L, t, "rate", 0, 0, 1e7);
    d.threshold = num_key(L, t, "threshold", 0.5, 0.01, 0.99);
    d.time_origin = num_key(L, t, "time_origin", 0, -1e30, 1e30);
    d.time_scale = num_key(L, t, "time_scale", 1, -1e30, 1e30);
    d.scale = num_key(L, t, "scale", 1, -1e30, 1e30);
    d.reference = str_key(L, t, "reference", NULL);
    d.min_neighbours = (int)num_key(L, t, "min_neighbours", 0, 0, 1000);
    if (floe_probe_add(ctx, &d) != FLOE_OK)
        luaL_error(L, FN ": %s", floe_ctx_error(ctx));
    return 0;
}
