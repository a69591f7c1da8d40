/* The `floe` Lua module: what a scene script calls to build a world and run
 * it. See docs/lua-api.md. This file: floe.* (sim, param, preset, log),
 * the sim userdata, sim:load, the particles, and the method table; the
 * other methods in lua_pipeline.c, lua_run.c and lua_access.c, the
 * argument checks in lua_check.c (lua_sim.h).
 *
 * Every function checks all of its arguments before it changes anything,
 * rejects unknown table keys (naming the accepted ones) and raises its
 * errors with luaL_error from the C function the scene called, so messages
 * read "scene.lua:LINE: ...". A sim is a userdata with one metatable
 * ("floe.sim"); __gc and __close destroy its context. */
#include "lua_sim.h"

int ctx_module_lua_open(floe_ctx *ctx, const char *name, void *L); /* module_loader.c */

#include <lauxlib.h>
#include <lua.h>

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef FLOE_SOURCE_PRESET_DIR
#define FLOE_SOURCE_PRESET_DIR "scenes/presets"
#endif


/* ---- scene state (one per floe_scene_run, in the registry) -------------- */

void floe_lua_scene_init(lua_State *L, const floe_scene_opts *opt, const char *dir, const char *hash)
{
    int n = opt->sets ? opt->nsets : 0;
    for (int i = 0; i < n; i++)
        if (!opt->sets[i] || ls_set_key_len(opt->sets[i]) == 0)
            luaL_error(L, "--set '%s': expected key=value", opt->sets[i] ? opt->sets[i] : "(null)");
    scene_state *sc = lua_newuserdatauv(L, sizeof *sc + (size_t)n + 1, 0);
    memset(sc, 0, sizeof *sc + (size_t)n + 1);
    sc->opt = opt;
    sc->nsets = n;
    snprintf(sc->path, sizeof sc->path, "%s", opt->path);
    snprintf(sc->dir, sizeof sc->dir, "%s", dir);
    snprintf(sc->hash, sizeof sc->hash, "%s", hash);
    lua_setfield(L, LUA_REGISTRYINDEX, SCENE_KEY);
}

int floe_lua_scene_status(lua_State *L)
{
    scene_state *sc = ls_scene_get(L);
    return sc ? sc->status : FLOE_OK;
}

int floe_lua_scene_unused(lua_State *L, char *err, size_t errlen)
{
    scene_state *sc = ls_scene_get(L);
    for (int i = 0; sc && i < sc->nsets; i++)
        if (sc->used[i] == SET_UNUSED) {
            snprintf(err, errlen, "%s: --set %.*s: not used by the scene (no floe.param reads it and no "
                     "stage parameter of a sim:run has that name)", sc->path,
                     (int)ls_set_key_len(sc->opt->sets[i]), sc->opt->sets[i]);
            return FLOE_ERR_ARG;
        }
    return FLOE_OK;
}

/* ---- the sim userdata --------------------------------------------------- */

static void sim_free(lua_State *L, lsim *s)
{
    if (s->ctx)
        floe_ctx_destroy(s->ctx);
    s->ctx = NULL;
    ls_stages_release(L, s);
    ls_unref(L, &s->frame_ref);
    ls_unref(L, &s->spec_ref);
}

static int m_gc(lua_State *L)
{
    sim_free(L, luaL_checkudata(L, 1, SIM_MT));
    return 0;
}

static int m_close(lua_State *L)
{
    lsim *s = luaL_checkudata(L, 1, SIM_MT);
    if (s->running)
        return luaL_error(L, "sim:close: not allowed while the sim runs");
    sim_free(L, s);
    return 0;
}

static int m_tostring(lua_State *L)
{
    lsim *s = luaL_checkudata(L, 1, SIM_MT);
    if (!s->ctx) {
        lua_pushliteral(L, "floe.sim (closed)");
        return 1;
    }
    const floe_sim_info *in = floe_ctx_info(s->ctx);
    lua_pushfstring(L, "floe.sim (%dD, spacing %f, t = %f)", in->dim, (lua_Number)in->spacing, in->time);
    return 1;
}

/* sim.time, then the methods (upvalue 1). */
static int m_index(lua_State *L)
{
    lsim *s = luaL_checkudata(L, 1, SIM_MT);
    if (lua_type(L, 2) == LUA_TSTRING && strcmp(lua_tostring(L, 2), "time") == 0 && s->ctx) {
        lua_pushnumber(L, floe_ctx_info(s->ctx)->time);
        return 1;
    }
    lua_settop(L, 2);
    lua_rawget(L, lua_upvalueindex(1));
    return 1;
}

static int m_newindex(lua_State *L)
{
    return luaL_error(L, "a sim has no assignable fields ('%s')", luaL_tolstring(L, 2, NULL));
}

/* ---- floe.* ------------------------------------------------------------- */

static int l_log(lua_State *L)
{
    int n = lua_gettop(L);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addstring(&b, "[scene]");
    for (int i = 1; i <= n; i++) {
        luaL_addchar(&b, ' ');
        luaL_tolstring(L, i, NULL);
        luaL_addvalue(&b);
    }
    luaL_pushresult(&b);
    const scene_state *sc = ls_scene_get(L);
    if (sc && sc->opt->log)
        sc->opt->log(FLOE_LOG_INFO, lua_tostring(L, -1), sc->opt->log_user);
    else
        fprintf(stderr, "%s\n", lua_tostring(L, -1));
    return 0;
}

static int push_override(lua_State *L, const char *key, const char *v, int type)
{
    static const char *const yes[] = {"true", "yes", "on", "1", NULL};
    static const char *const no[] = {"false", "no", "off", "0", NULL};
    if (type == LUA_TSTRING)
        lua_pushstring(L, v);
    else if (type == LUA_TNUMBER) {
        if (!lua_stringtonumber(L, v))
            return luaL_error(L, "--set %s=%s: expected a number", key, v);
    } else if (ls_in_list(v, yes) || ls_in_list(v, no))
        lua_pushboolean(L, ls_in_list(v, yes));
    else
        return luaL_error(L, "--set %s=%s: expected true or false", key, v);
    return 1;
}

/* floe.param(name, default): the --set override converted to default's type. */
static int l_param(lua_State *L)
{
    const char *key = luaL_checkstring(L, 1);
    int type = lua_type(L, 2);
    if (type != LUA_TNUMBER && type != LUA_TBOOLEAN && type != LUA_TSTRING)
        return luaL_argerror(L, 2, "the default must be a number, a boolean or a string");
    scene_state *sc = ls_scene_get(L);
    const char *v = NULL;
    for (int i = 0; sc && i < sc->nsets; i++)
        if (ls_set_is(sc->opt->sets[i], key)) {
            v = strchr(sc->opt->sets[i], '=') + 1;
            sc->used[i] = SET_PARAM;
        }
    if (!v) {
        lua_settop(L, 2);
        return 1;
    }
    return push_override(L, key, v, type);
}

static int file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* name relative to the scene's folder (".yaml" optional), then a preset of
 * the source tree. */
static int preset_find(const scene_state *sc, const char *name, char *out, size_t len)
{
    const char *dirs[2] = {name[0] == '/' ? "" : sc ? sc->dir : ".", FLOE_SOURCE_PRESET_DIR};
    for (int d = 0; d < 2; d++)
        for (int e = 0; e < 2; e++) {
            snprintf(out, len, "%s%s%s%s", dirs[d], dirs[d][0] ? "/" : "", name, e ? ".yaml" : "");
            if (file_exists(out))
                return 1;
        }
    return 0;
}

static int l_preset(lua_State *L)
{
    const char *name = luaL_checkstring(L, 1);
    char path[8192], err[1024];
    if (!name[0] || !preset_find(ls_scene_get(L), name, path, sizeof path))
        return luaL_error(L, "floe.preset: no preset '%s' (looked for it, with and without .yaml, in the "
                          "scene's folder and in %s)", name, FLOE_SOURCE_PRESET_DIR);
    if (yaml_push_file(L, path, err, sizeof err) != 0)
        return luaL_error(L, "floe.preset: %s", err);
    return 1;
}

static const char *const SIM_KEYS[] = {"dim", "spacing", "radius", "support", "gravity", "domain", "threads",
                                       "backend", "periodic", NULL};

/* periodic = { "x", "z" }: axes periodic over the domain */
static void sim_periodic(lua_State *L, floe_sim_def *d)
{
    if (!ls_field(L, 1, "periodic"))
        return;
    int t = lua_gettop(L);
    if (!lua_istable(L, t))
        luaL_error(L, "floe.sim: 'periodic' must be a list of axis names, e.g. { \"x\" }");
    lua_Integer n = luaL_len(L, t);
    for (lua_Integer i = 1; i <= n; i++) {
        lua_geti(L, t, i);
        const char *a = lua_tostring(L, -1);
        int k = a && !a[1] ? a[0] - 'x' : -1;
        if (k < 0 || k >= d->dim)
            luaL_error(L, "floe.sim: periodic axis %d must be one of \"x\", \"y\"%s", (int)i,
                       d->dim == 3 ? ", \"z\"" : "");
        d->periodic[k] = 1;
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
}
static const char *const DOMAIN_KEYS[] = {"min", "max", "outside", NULL};

static void sim_spacing(lua_State *L, floe_sim_def *d)
{
    double sp = ls_field_pos(L, 1, "floe.sim", "spacing", 0, HUGE_VAL);
    double r = ls_field_pos(L, 1, "floe.sim", "radius", 0, HUGE_VAL);
    if ((sp > 0) == (r > 0))
        luaL_error(L, "floe.sim: give exactly one of 'spacing' and 'radius' (spacing = 2 radius)");
    d->spacing = (float)(sp > 0 ? sp : 2 * r);
}

static void sim_domain(lua_State *L, floe_sim_def *d)
{
    if (!ls_field(L, 1, "domain"))
        return;
    int t = lua_gettop(L);
    if (!lua_istable(L, t))
        luaL_error(L, "floe.sim: 'domain' must be a table {min = {...}, max = {...}}");
    ls_check_keys(L, t, "floe.sim domain", DOMAIN_KEYS);
    ls_need_vec(L, t, "floe.sim domain", "min", d->dim, d->domain_min);
    ls_need_vec(L, t, "floe.sim domain", "max", d->dim, d->domain_max);
    ls_check_box(L, "floe.sim domain", d->dim, d->domain_min, d->domain_max);
    static const char *const rules[] = {"delete", "error", "clamp", NULL};
    const char *rule = ls_field_str(L, t, "floe.sim domain", "outside", "delete");
    for (d->outside = 0; rules[d->outside] && strcmp(rules[d->outside], rule); d->outside++)
        ;
    if (!rules[d->outside])
        luaL_error(L, "floe.sim domain: 'outside' = \"%s\" is not one of delete, error, clamp", rule);
    lua_pop(L, 1);
}

static lsim *sim_new(lua_State *L, int dim)
{
    lsim *s = lua_newuserdatauv(L, sizeof *s, 0);
    memset(s, 0, sizeof *s);
    s->dim = dim;
    s->self_ref = s->frame_ref = s->spec_ref = s->cb_err_ref = LUA_NOREF;
    for (int i = 0; i < MAX_STAGES; i++)
        s->stages[i].ref = LUA_NOREF;
    luaL_setmetatable(L, SIM_MT);
    return s;
}

static int l_sim(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    ls_check_keys(L, 1, "floe.sim", SIM_KEYS);
    floe_sim_def d = floe_sim_default_def();
    d.dim = ls_field_int(L, 1, "floe.sim", "dim", 3, 2, 3);
    sim_spacing(L, &d);
    d.support_factor = (float)ls_field_num(L, 1, "floe.sim", "support", 2, 1, 4);
    ls_field_vec(L, 1, "floe.sim", "gravity", d.dim, d.gravity);
    sim_domain(L, &d);
    sim_periodic(L, &d);
    d.threads = ls_field_int(L, 1, "floe.sim", "threads", 0, 0, 4096);
    scene_state *sc = ls_scene_get(L);
    if (sc && sc->opt->threads > 0)
        d.threads = sc->opt->threads;
    /* "cpu", "opencl" or "auto"; --backend / --device override */
    d.backend = ls_field_str(L, 1, "floe.sim", "backend", NULL);
    if (sc && sc->opt->backend)
        d.backend = sc->opt->backend;
    if (sc) {
        d.device = sc->opt->device;
        d.log = sc->opt->log;
        d.log_user = sc->opt->log_user;
    }
    lsim *s = sim_new(L, d.dim);
    char err[1024];
    if (!(s->ctx = floe_ctx_create(&d, err, sizeof err)))
        return luaL_error(L, "%s", err);
    lua_getfield(L, LUA_REGISTRYINDEX, OUTPUT_KEY); /* the scene's output root (lua_scene.c) */
    floe_ctx_set_output(s->ctx, lua_touserdata(L, -1));
    lua_pop(L, 1);
    return 1;
}

/* ---- sim:load ----------------------------------------------------------- */

static int m_load(lua_State *L)
{
    lsim *s = ls_check_idle(L, "sim:load");
    const char *names[MAX_LOAD];
    int n = 0;
    if (lua_type(L, 2) == LUA_TSTRING)
        names[n++] = lua_tostring(L, 2);
    else if (lua_type(L, 2) == LUA_TTABLE) {
        n = ls_check_array(L, 2, "sim:load", "the module list");
        luaL_argcheck(L, n <= MAX_LOAD, 2, "too many modules");
        for (int i = 0; i < n; i++) {
            if (lua_rawgeti(L, 2, i + 1) != LUA_TSTRING)
                luaL_error(L, "sim:load: entry %d must be a module name (got %s)", i + 1, luaL_typename(L, -1));
            names[i] = lua_tostring(L, -1);
            lua_pop(L, 1);
        }
    } else
        return luaL_argerror(L, 2, "module name or list of names expected");
    for (int i = 0; i < n; i++)
        if (floe_module_load(s->ctx, names[i]) != FLOE_OK)
            return luaL_error(L, "sim:load: %s", floe_ctx_error(s->ctx));
    /* modules with a face in scenes (ABI 1.7 lua_open): their values, in order */
    int top = lua_gettop(L), nret = 0;
    for (int i = 0; i < n; i++)
        nret += ctx_module_lua_open(s->ctx, names[i], L);
    return nret ? lua_gettop(L) - top : 0;
}

/* ---- particles ---------------------------------------------------------- */

/* Checks that set `name`, if it exists, has the kind (and rest density). */
static void check_set(lua_State *L, lsim *s, const char *fn, const char *name, floe_set_kind kind, double rho)
{
    floe_set set = floe_set_find(s->ctx, name);
    floe_set_info in;
    if (!set.id || floe_core_api()->set_info(s->ctx, set, &in) != FLOE_OK)
        return;
    if (in.kind != kind)
        luaL_error(L, "%s: set '%s' is a %s set", fn, name, in.kind == FLOE_SET_FLUID ? "fluid" : "boundary");
    if (kind == FLOE_SET_FLUID && fabs(in.rest_density - rho) > 1e-6 * rho)
        luaL_error(L, "%s: set '%s' has density %f, not %f", fn, name, (lua_Number)in.rest_density, (lua_Number)rho);
}

static floe_set ensure_set(lua_State *L, lsim *s, const char *fn, const char *name, floe_set_kind kind, double rho)
{
    floe_set set = floe_set_find(s->ctx, name);
    if (!set.id)
        set = floe_set_create(s->ctx, name, kind, (float)rho);
    if (!set.id)
        luaL_error(L, "%s: %s", fn, floe_ctx_error(s->ctx));
    return set;
}

static int push_count(lua_State *L, lsim *s, const char *fn, long n)
{
    if (n < 0)
        return luaL_error(L, "%s: %s", fn, floe_ctx_error(s->ctx));
    if (n == 0) { /* e.g. a box thinner than the spacing: no lattice point inside */
        luaL_where(L, 1);
        fprintf(stderr, "floe: warning: %s%s: no particle made (a shape thinner than the spacing %g on some axis?)\n",
                lua_tostring(L, -1), fn, (double)floe_ctx_info(s->ctx)->spacing);
        lua_pop(L, 1);
    }
    lua_pushinteger(L, (lua_Integer)n);
    return 1;
}

typedef struct fluid_args {
    double density;
    float v[3];
    const char *set;
} fluid_args;

static void fluid_common(lua_State *L, lsim *s, const char *fn, fluid_args *a)
{
    a->density = ls_field_pos(L, 2, fn, "density", 1000, HUGE_VAL);
    memset(a->v, 0, sizeof a->v);
    ls_field_vec(L, 2, fn, "velocity", s->dim, a->v);
    a->set = ls_field_str(L, 2, fn, "set", "fluid");
    check_set(L, s, fn, a->set, FLOE_SET_FLUID, a->density);
}

static const char *const FLUID_BOX_KEYS[] = {"min", "max", "density", "velocity", "set", NULL};

static int m_fluid_box(lua_State *L)
{
    const char *fn = "sim:fluid_box";
    lsim *s = ls_check_idle(L, fn);
    luaL_checktype(L, 2, LUA_TTABLE);
    ls_check_keys(L, 2, fn, FLUID_BOX_KEYS);
    float lo[3], hi[3];
    ls_need_vec(L, 2, fn, "min", s->dim, lo);
    ls_need_vec(L, 2, fn, "max", s->dim, hi);
    ls_check_box(L, fn, s->dim, lo, hi);
    fluid_args a;
    fluid_common(L, s, fn, &a);
    floe_set set = ensure_set(L, s, fn, a.set, FLOE_SET_FLUID, a.density);
    return push_count(L, s, fn, floe_fill_box(s->ctx, set, lo, hi, a.v));
}

static const char *const FLUID_SPHERE_KEYS[] = {"centre", "center", "radius", "density", "velocity", "set", NULL};

static int m_fluid_sphere(lua_State *L)
{
    const char *fn = "sim:fluid_sphere";
    lsim *s = ls_check_idle(L, fn);
    luaL_checktype(L, 2, LUA_TTABLE);
    ls_check_keys(L, 2, fn, FLUID_SPHERE_KEYS);
    float c[3], c2[3];
    int has_centre = ls_field_vec(L, 2, fn, "centre", s->dim, c), has_center = ls_field_vec(L, 2, fn, "center", s->dim, c2);
    if (has_centre == has_center)
        luaL_error(L, "%s: %s", fn, has_centre ? "give 'centre' or 'center', not both" : "'centre' is required");
    if (has_center)
        memcpy(c, c2, sizeof c);
    double r = ls_field_pos(L, 2, fn, "radius", 0, HUGE_VAL);
    if (r == 0)
        luaL_error(L, "%s: 'radius' is required", fn);
    fluid_args a;
    fluid_common(L, s, fn, &a);
    floe_set set = ensure_set(L, s, fn, a.set, FLOE_SET_FLUID, a.density);
    return push_count(L, s, fn, floe_fill_sphere(s->ctx, set, c, (float)r, a.v));
}

static const char *const BOUNDARY_SET_KEYS[] = {"name", NULL};

/* sim:boundary_set{ name = "ice" }: an empty boundary set that a module
 * fills during the run (the freezing module's ice); it is written with
 * every frame, with the run's attributes it carries. */
static int m_boundary_set(lua_State *L)
{
    const char *fn = "sim:boundary_set";
    lsim *s = ls_check_idle(L, fn);
    luaL_checktype(L, 2, LUA_TTABLE);
    ls_check_keys(L, 2, fn, BOUNDARY_SET_KEYS);
    const char *name = ls_field_str(L, 2, fn, "name", "ice");
    check_set(L, s, fn, name, FLOE_SET_BOUNDARY, 0);
    floe_set set = ensure_set(L, s, fn, name, FLOE_SET_BOUNDARY, 0);
    if (floe_set_every_frame(s->ctx, set, 1) != FLOE_OK)
        return luaL_error(L, "%s: %s", fn, floe_ctx_error(s->ctx));
    lua_pushinteger(L, (lua_Integer)floe_set_size(s->ctx, set));
    return 1;
}

static const char *const BOUNDARY_BOX_KEYS[] = {"min", "max", "layers", "open_top", "set", NULL};

static int m_boundary_box(lua_State *L)
{
    const char *fn = "sim:boundary_box";
    lsim *s = ls_check_idle(L, fn);
    luaL_checktype(L, 2, LUA_TTABLE);
    ls_check_keys(L, 2, fn, BOUNDARY_BOX_KEYS);
    float lo[3], hi[3];
    ls_need_vec(L, 2, fn, "min", s->dim, lo);
    ls_need_vec(L, 2, fn, "max", s->dim, hi);
    ls_check_box(L, fn, s->dim, lo, hi);
    int layers = ls_field_int(L, 2, fn, "layers", 2, 1, 8);
    int open = ls_field_bool(L, 2, fn, "open_top", 0) ? FLOE_OPEN_TOP : FLOE_OPEN_NONE;
    const char *name = ls_field_str(L, 2, fn, "set", "boundary");
    check_set(L, s, fn, name, FLOE_SET_BOUNDARY, 0);
    floe_set set = ensure_set(L, s, fn, name, FLOE_SET_BOUNDARY, 0);
    return push_count(L, s, fn, floe_boundary_box(s->ctx, set, lo, hi, layers, open));
}

static const char *const SOLID_BOX_KEYS[] = {"min", "max", "set", NULL};

static int m_boundary_solid_box(lua_State *L)
{
    const char *fn = "sim:boundary_solid_box";
    lsim *s = ls_check_idle(L, fn);
    luaL_checktype(L, 2, LUA_TTABLE);
    ls_check_keys(L, 2, fn, SOLID_BOX_KEYS);
    float lo[3], hi[3];
    ls_need_vec(L, 2, fn, "min", s->dim, lo);
    ls_need_vec(L, 2, fn, "max", s->dim, hi);
    ls_check_box(L, fn, s->dim, lo, hi);
    const char *name = ls_field_str(L, 2, fn, "set", "boundary");
    check_set(L, s, fn, name, FLOE_SET_BOUNDARY, 0);
    floe_set set = ensure_set(L, s, fn, name, FLOE_SET_BOUNDARY, 0);
    return push_count(L, s, fn, floe_boundary_solid_box(s->ctx, set, lo, hi));
}

/* ---- module ------------------------------------------------------------- */

/* lua_mesh.c: sim:boundary_mesh, sim:fluid_mesh, floe.mesh_info */
int floe_lua_boundary_mesh(lua_State *L, floe_ctx *ctx);
int floe_lua_fluid_mesh(lua_State *L, floe_ctx *ctx);
int floe_lua_mesh_info(lua_State *L);
static int m_boundary_mesh(lua_State *L) { return floe_lua_boundary_mesh(L, ls_check_idle(L, "sim:boundary_mesh")->ctx); }
static int m_fluid_mesh(lua_State *L) { return floe_lua_fluid_mesh(L, ls_check_idle(L, "sim:fluid_mesh")->ctx); }
int floe_lua_probe(lua_State *L, floe_ctx *ctx);
static int m_probe(lua_State *L) { return floe_lua_probe(L, ls_check_idle(L, "sim:probe")->ctx); }
/* lua_terrain.c: sim:terrain, sim:terrain_height */
int floe_lua_terrain(lua_State *L, floe_ctx *ctx);
int floe_lua_terrain_height(lua_State *L, floe_ctx *ctx);
static int m_terrain(lua_State *L) { return floe_lua_terrain(L, ls_check_idle(L, "sim:terrain")->ctx); }
static int m_terrain_height(lua_State *L) { return floe_lua_terrain_height(L, ls_check_sim(L)->ctx); }
int floe_lua_lake(lua_State *L, floe_ctx *ctx);
static int m_lake(lua_State *L) { return floe_lua_lake(L, ls_check_idle(L, "sim:lake")->ctx); }
/* lua_emit.c: sources and sinks */
int floe_lua_source(lua_State *L, floe_ctx *ctx);
int floe_lua_source_on(lua_State *L, floe_ctx *ctx);
int floe_lua_sink(lua_State *L, floe_ctx *ctx);
int floe_lua_flow(lua_State *L, floe_ctx *ctx);
static int m_source(lua_State *L) { return floe_lua_source(L, ls_check_idle(L, "sim:source")->ctx); }
static int m_source_on(lua_State *L) { return floe_lua_source_on(L, ls_check_sim(L)->ctx); }
static int m_sink(lua_State *L) { return floe_lua_sink(L, ls_check_idle(L, "sim:sink")->ctx); }
static int m_flow(lua_State *L) { return floe_lua_flow(L, ls_check_sim(L)->ctx); }

static const luaL_Reg sim_methods[] = {
    {"load", m_load},
    {"fluid_box", m_fluid_box},
    {"fluid_sphere", m_fluid_sphere},
    {"boundary_box", m_boundary_box},
    {"boundary_set", m_boundary_set},
    {"boundary_solid_box", m_boundary_solid_box},
    {"boundary_mesh", m_boundary_mesh},
    {"fluid_mesh", m_fluid_mesh},
    {"probe", m_probe},
    {"terrain", m_terrain},
    {"terrain_height", m_terrain_height},
    {"lake", m_lake},
    {"source", m_source},
    {"source_on", m_source_on},
    {"sink", m_sink},
    {"flow", m_flow},
    {"pipeline", ls_m_pipeline},
    {"on_frame", ls_m_on_frame},
    {"run", ls_m_run},
    {"count", ls_m_count},
    {"reduce", ls_m_reduce},
    {"remove_set", ls_m_remove_set},
    {"get", ls_m_get},
    {"set", ls_m_set},
    {"info", ls_m_info},
    {"close", m_close},
    {NULL, NULL},
};

static const luaL_Reg sim_meta[] = {
    {"__gc", m_gc},
    {"__close", m_close},
    {"__newindex", m_newindex},
    {"__tostring", m_tostring},
    {NULL, NULL},
};

static const luaL_Reg floe_funcs[] = {
    {"sim", l_sim},
    {"param", l_param},
    {"preset", l_preset},
    {"log", l_log},
    {"mesh_info", floe_lua_mesh_info},
    {NULL, NULL},
};

int luaopen_floe(lua_State *L)
{
    luaL_checkversion(L);
    if (luaL_newmetatable(L, SIM_MT)) {
        luaL_setfuncs(L, sim_meta, 0);
        luaL_newlib(L, sim_methods);
        lua_pushcclosure(L, m_index, 1);
        lua_setfield(L, -2, "__index");
        lua_pushliteral(L, SIM_MT);
        lua_setfield(L, -2, "__metatable");
    }
    lua_pop(L, 1);
    luaL_newlib(L, floe_funcs);
    lua_pushliteral(L, FLOE_VERSION);
    lua_setfield(L, -2, "version");
    return 1;
}
