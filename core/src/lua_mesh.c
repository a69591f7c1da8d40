/* Meshes in scenes: sim:boundary_mesh{...}, sim:fluid_mesh{...} and
 * floe.mesh_info{...} (docs/lua-api.md, docs/meshes.md). Like the rest of
 * the floe module, every argument is checked and the mesh read before the
 * sim changes; errors name the file. The placement keys, shared by all three:
 *   file        path (relative to the working directory)
 *   object      only this node of the file (and its children)
 *   scale       number or {sx, sy, sz}, each > 0 (default 1)
 *   rotation    {rx, ry, rz}: Euler degrees about the fixed x, then y, then
 *               z axis; or { axis = {x, y, z}, angle = degrees }
 *   translation {x, y, z}
 * applied in that order: x' = R (S x) + t. */
#include "ctx.h"

#include <floe/lua_args.h> /* the table checks, shared with modules */
#include <floe/mesh.h>

#include <lauxlib.h>
#include <lua.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

/* called from lua_sim.c's method table (the sim's context passed in) */
int floe_lua_boundary_mesh(lua_State *L, floe_ctx *ctx);
int floe_lua_fluid_mesh(lua_State *L, floe_ctx *ctx);
int floe_lua_mesh_info(lua_State *L);
/* api->lua_mesh (ABI 1.7): a module's mesh from the placement keys */
floe_mesh *floe_lua_mesh_load(floe_ctx *ctx, void *L, int t, const char *fn);

#define PLACEMENT_KEYS "file", "object", "scale", "rotation", "translation"

/* The value at idx as {x, y, z} of finite numbers. */
static void vec_at(lua_State *L, int idx, const char *fn, const char *what, float out[3])
{
    idx = lua_absindex(L, idx);
    if (lua_type(L, idx) != LUA_TTABLE || lua_rawlen(L, idx) != 3)
        luaL_error(L, "%s: %s must be a vector {x, y, z}", fn, what);
    for (int k = 0; k < 3; k++) {
        if (lua_rawgeti(L, idx, k + 1) != LUA_TNUMBER || !isfinite(lua_tonumber(L, -1)))
            luaL_error(L, "%s: %s must be a vector of 3 finite numbers", fn, what);
        out[k] = (float)lua_tonumber(L, -1);
        lua_pop(L, 1);
    }
}

/* t[key] as a vector; 0 when absent */
static int vec_field(lua_State *L, int t, const char *fn, const char *key, float out[3])
{
    if (lua_getfield(L, t, key) == LUA_TNIL) {
        lua_pop(L, 1);
        return 0;
    }
    char what[64];
    snprintf(what, sizeof what, "'%s'", key);
    vec_at(L, -1, fn, what, out);
    lua_pop(L, 1);
    return 1;
}

/* t[key] as a non-empty string (absent: def) */
static const char *str_field(lua_State *L, int t, const char *fn, const char *key, const char *def)
{
    int type = lua_getfield(L, t, key);
    const char *s = def;
    if (type != LUA_TNIL) {
        if (type != LUA_TSTRING || lua_rawlen(L, -1) == 0)
            luaL_error(L, "%s: '%s' must be a non-empty string (got %s)", fn, key, luaL_typename(L, -1));
        s = lua_tostring(L, -1); /* kept alive by the table */
    }
    lua_pop(L, 1);
    return s;
}

static int bool_field(lua_State *L, int t, const char *fn, const char *key)
{
    int type = lua_getfield(L, t, key), v = 0;
    if (type != LUA_TNIL && type != LUA_TBOOLEAN)
        luaL_error(L, "%s: '%s' must be true or false (got %s)", fn, key, luaL_typename(L, -1));
    v = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return v;
}

static void read_rotation(lua_State *L, int t, const char *fn, floe_mesh_def *def)
{
    static const char *const AXIS_KEYS[] = {"axis", "angle", NULL};
    if (lua_getfield(L, t, "rotation") == LUA_TNIL) {
        lua_pop(L, 1);
        return;
    }
    int r = lua_gettop(L);
    if (lua_type(L, r) == LUA_TTABLE && lua_rawlen(L, r) == 0) {
        float axis[3];
        floe_lua_only_keys(L, r, fn, AXIS_KEYS);
        if (!vec_field(L, r, fn, "axis", axis) || !(fabsf(axis[0]) + fabsf(axis[1]) + fabsf(axis[2]) > 0))
            luaL_error(L, "%s: 'rotation' = { axis = {x, y, z}, angle = degrees } needs a non-zero axis", fn);
        double angle = floe_lua_num(L, r, fn, "angle", NAN);
        if (isnan(angle))
            luaL_error(L, "%s: 'rotation' = { axis = ..., angle = degrees } needs the angle", fn);
        floe_rotation_axis_angle(def->rotation, axis, (float)angle);
    } else {
        float deg[3];
        vec_at(L, r, fn, "'rotation' (Euler degrees {rx, ry, rz}, or { axis = ..., angle = ... })", deg);
        floe_rotation_euler(def->rotation, deg);
    }
    lua_pop(L, 1);
}

/* The placement keys of the table at t into def (strings stay owned by it). */
static void read_placement(lua_State *L, int t, const char *fn, floe_mesh_def *def)
{
    *def = floe_mesh_default_def();
    def->file = str_field(L, t, fn, "file", NULL);
    if (!def->file)
        luaL_error(L, "%s: 'file' is required", fn);
    def->object = str_field(L, t, fn, "object", NULL);
    if (lua_getfield(L, t, "scale") == LUA_TNUMBER)
        def->scale[0] = def->scale[1] = def->scale[2] = (float)lua_tonumber(L, -1);
    else if (!lua_isnil(L, -1))
        vec_at(L, -1, fn, "'scale' (a number or {sx, sy, sz})", def->scale);
    lua_pop(L, 1);
    for (int k = 0; k < 3; k++)
        if (!(def->scale[k] > 0) || !isfinite(def->scale[k]))
            luaL_error(L, "%s: %s: 'scale' must be positive on every axis (got %f)", fn, def->file,
                       (lua_Number)def->scale[k]);
    read_rotation(L, t, fn, def);
    vec_field(L, t, fn, "translation", def->translation);
}

/* Loads the mesh or raises the loader's message (which names the file). */
static floe_mesh *load(lua_State *L, const char *fn, const floe_mesh_def *def)
{
    char err[1536];
    floe_mesh *m = floe_mesh_load(def, err, sizeof err);
    if (!m)
        luaL_error(L, "%s: %s", fn, err);
    return m;
}

/* The set `name` of the kind (and for fluid the rest density): created when
 * missing; NULL message when fine, else why not (checked before loading). */
static const char *set_problem(lua_State *L, floe_ctx *ctx, const char *name, floe_set_kind kind, double rho)
{
    floe_set set = floe_set_find(ctx, name);
    const pset *in = set.id ? ctx_set(ctx, set) : NULL;
    if (!in)
        return NULL;
    if (in->kind != kind)
        return lua_pushfstring(L, "set '%s' is a %s set", name, in->kind == FLOE_SET_FLUID ? "fluid" : "boundary");
    if (kind == FLOE_SET_FLUID && fabs(in->rest_density - rho) > 1e-6 * rho)
        return lua_pushfstring(L, "set '%s' has density %f, not %f", name, (lua_Number)in->rest_density, (lua_Number)rho);
    return NULL;
}

/* Adds through fn's result: the count, or the mesh freed and an error. */
static int finish(lua_State *L, floe_ctx *ctx, const char *fn, floe_mesh *m, long n)
{
    floe_mesh_destroy(m);
    if (n < 0)
        return luaL_error(L, "%s: %s", fn, floe_ctx_error(ctx));
    lua_pushinteger(L, (lua_Integer)n);
    return 1;
}

static floe_set make_set(lua_State *L, floe_ctx *ctx, const char *fn, floe_mesh *m, const char *name,
                         floe_set_kind kind, double rho)
{
    floe_set set = floe_set_find(ctx, name);
    if (!set.id && !(set = floe_set_create(ctx, name, kind, (float)rho)).id) {
        floe_mesh_destroy(m);
        luaL_error(L, "%s: %s", fn, floe_ctx_error(ctx));
    }
    return set;
}

static void need_3d(lua_State *L, floe_ctx *ctx, const char *fn)
{
    if (floe_ctx_info(ctx)->dim != 3)
        luaL_error(L, "%s: meshes need a 3D sim (dim = 3)", fn);
}

int floe_lua_boundary_mesh(lua_State *L, floe_ctx *ctx)
{
    static const char *const KEYS[] = {PLACEMENT_KEYS, "layers", "container", "set", NULL};
    const char *fn = "sim:boundary_mesh";
    luaL_checktype(L, 2, LUA_TTABLE);
    floe_lua_only_keys(L, 2, fn, KEYS);
    need_3d(L, ctx, fn);
    floe_mesh_def def;
    read_placement(L, 2, fn, &def);
    floe_mesh_use use = {0};
    double layers = floe_lua_num(L, 2, fn, "layers", 1);
    if (layers != floor(layers) || layers < 1 || layers > 8)
        luaL_error(L, "%s: 'layers' must be an integer in [1, 8] (got %f)", fn, (lua_Number)layers);
    use.layers = (int)layers;
    use.container = bool_field(L, 2, fn, "container");
    const char *name = str_field(L, 2, fn, "set", "boundary"), *why = set_problem(L, ctx, name, FLOE_SET_BOUNDARY, 0);
    if (why)
        luaL_error(L, "%s: %s", fn, why);
    floe_mesh *m = load(L, fn, &def);
    floe_set set = make_set(L, ctx, fn, m, name, FLOE_SET_BOUNDARY, 0);
    return finish(L, ctx, fn, m, floe_boundary_mesh(ctx, set, m, &use));
}

int floe_lua_fluid_mesh(lua_State *L, floe_ctx *ctx)
{
    static const char *const KEYS[] = {PLACEMENT_KEYS, "density", "velocity", "allow_open", "set", NULL};
    const char *fn = "sim:fluid_mesh";
    luaL_checktype(L, 2, LUA_TTABLE);
    floe_lua_only_keys(L, 2, fn, KEYS);
    need_3d(L, ctx, fn);
    floe_mesh_def def;
    read_placement(L, 2, fn, &def);
    double rho = floe_lua_num(L, 2, fn, "density", 1000);
    if (!(rho > 0))
        luaL_error(L, "%s: 'density' must be positive (got %f)", fn, (lua_Number)rho);
    float v[3] = {0, 0, 0};
    vec_field(L, 2, fn, "velocity", v);
    floe_mesh_use use = {.allow_open = bool_field(L, 2, fn, "allow_open")};
    const char *name = str_field(L, 2, fn, "set", "fluid"), *why = set_problem(L, ctx, name, FLOE_SET_FLUID, rho);
    if (why)
        luaL_error(L, "%s: %s", fn, why);
    floe_mesh *m = load(L, fn, &def);
    if (!floe_mesh_is_closed(m) && !use.allow_open) { /* before the set is made */
        char what[256];
        floe_mesh_describe(m, what, sizeof what);
        floe_mesh_destroy(m);
        return luaL_error(L, "%s: %s: the mesh is %s; it must be closed (or allow_open = true)", fn, def.file, what);
    }
    floe_set set = make_set(L, ctx, fn, m, name, FLOE_SET_FLUID, rho);
    return finish(L, ctx, fn, m, floe_fill_mesh(ctx, set, m, &use, v));
}

floe_mesh *floe_lua_mesh_load(floe_ctx *ctx, void *Lv, int t, const char *fn)
{
    lua_State *L = Lv;
    (void)ctx;
    t = lua_absindex(L, t);
    luaL_checktype(L, t, LUA_TTABLE);
    floe_mesh_def def;
    read_placement(L, t, fn, &def);
    return load(L, fn, &def);
}

static void set_vec(lua_State *L, const char *key, const float v[3])
{
    lua_createtable(L, 3, 0);
    for (int k = 0; k < 3; k++) {
        lua_pushnumber(L, v[k]);
        lua_rawseti(L, -2, k + 1);
    }
    lua_setfield(L, -2, key);
}

int floe_lua_mesh_info(lua_State *L)
{
    static const char *const KEYS[] = {PLACEMENT_KEYS, NULL};
    const char *fn = "floe.mesh_info";
    luaL_checktype(L, 1, LUA_TTABLE);
    floe_lua_only_keys(L, 1, fn, KEYS);
    floe_mesh_def def;
    read_placement(L, 1, fn, &def);
    floe_mesh *m = load(L, fn, &def);
    char what[256];
    floe_mesh_describe(m, what, sizeof what);
    lua_createtable(L, 0, 12);
    const struct { const char *key; uint32_t v; } counts[] = {
        {"vertices", m->nverts}, {"triangles", m->ntris}, {"open_edges", m->open_edges},
        {"nonmanifold_edges", m->nonmanifold_edges}, {"misoriented_edges", m->misoriented_edges}};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        lua_pushinteger(L, (lua_Integer)counts[i].v);
        lua_setfield(L, -2, counts[i].key);
    }
    lua_pushnumber(L, m->area);
    lua_setfield(L, -2, "area");
    lua_pushnumber(L, m->volume);
    lua_setfield(L, -2, "volume");
    lua_pushboolean(L, floe_mesh_is_closed(m));
    lua_setfield(L, -2, "closed");
    lua_pushstring(L, what);
    lua_setfield(L, -2, "topology");
    set_vec(L, "min", m->min);
    set_vec(L, "max", m->max);
    floe_mesh_destroy(m);
    return 1;
}
