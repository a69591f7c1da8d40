/* The `floe` Lua module: what a scene script calls to build a world and run
 * it. See docs/lua-api.md.
 *
 * Every function checks all of its arguments before it changes anything,
 * rejects unknown table keys (naming the accepted ones) and raises its
 * errors with luaL_error from the C function the scene called, so messages
 * read "scene.lua:LINE: ...". A sim is a userdata with one metatable
 * ("floe.sim"); __gc and __close destroy its context. */
#include "lua_floe.h"
#include "decomp.h"

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

#define SIM_MT "floe.sim"
#define SCENE_KEY "floe.scene"
#define OUTPUT_KEY "floe.output"
#define MAX_STAGES 64   /* pipeline length (the core's limit) */
#define MAX_KV 32       /* parameters of one stage */
#define MAX_RUN_ATTRS 32
#define MAX_LOAD 32

/* ---- scene state (one per floe_scene_run, in the registry) -------------- */

enum { SET_UNUSED = 0, SET_PARAM = 1, SET_STAGE = 2 };

typedef struct scene_state {
    const floe_scene_opts *opt;
    char path[4096];
    char dir[4096];
    char hash[17];
    int status;              /* floe status of the last failed sim:run */
    int nsets;
    unsigned char used[];    /* per --set entry: SET_* */
} scene_state;

/* NULL when the module is used outside floe_scene_run. */
static scene_state *scene_get(lua_State *L)
{
    lua_getfield(L, LUA_REGISTRYINDEX, SCENE_KEY);
    scene_state *sc = lua_touserdata(L, -1);
    lua_pop(L, 1);
    return sc;
}

static size_t set_key_len(const char *kv)
{
    const char *eq = strchr(kv, '=');
    return eq ? (size_t)(eq - kv) : 0;
}

static int set_is(const char *kv, const char *key)
{
    size_t n = set_key_len(kv);
    return n == strlen(key) && strncmp(kv, key, n) == 0;
}

void floe_lua_scene_init(lua_State *L, const floe_scene_opts *opt, const char *dir, const char *hash)
{
    int n = opt->sets ? opt->nsets : 0;
    for (int i = 0; i < n; i++)
        if (!opt->sets[i] || set_key_len(opt->sets[i]) == 0)
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
    scene_state *sc = scene_get(L);
    return sc ? sc->status : FLOE_OK;
}

int floe_lua_scene_unused(lua_State *L, char *err, size_t errlen)
{
    scene_state *sc = scene_get(L);
    for (int i = 0; sc && i < sc->nsets; i++)
        if (sc->used[i] == SET_UNUSED) {
            snprintf(err, errlen, "%s: --set %.*s: not used by the scene (no floe.param reads it and no "
                     "stage parameter of a sim:run has that name)", sc->path,
                     (int)set_key_len(sc->opt->sets[i]), sc->opt->sets[i]);
            return FLOE_ERR_ARG;
        }
    return FLOE_OK;
}

/* ---- argument checking -------------------------------------------------- */

static int in_list(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(s, *list) == 0)
            return 1;
    return 0;
}

static void join(const char *const *list, char *buf, size_t len)
{
    buf[0] = '\0';
    for (size_t n = 0; *list; list++) {
        snprintf(buf + n, len - n, "%s%s", n ? ", " : "", *list);
        n = strlen(buf);
    }
}

/* Every key of the table at t must be a string of keys. */
static void check_keys(lua_State *L, int t, const char *fn, const char *const *keys)
{
    lua_pushnil(L);
    while (lua_next(L, t)) {
        lua_pop(L, 1);
        if (lua_type(L, -1) == LUA_TSTRING && in_list(lua_tostring(L, -1), keys))
            continue;
        char acc[512];
        join(keys, acc, sizeof acc);
        if (lua_type(L, -1) == LUA_TSTRING) {
            int n = 0;
            while (keys[n])
                n++;
            const char *near = floe_nearest_name(lua_tostring(L, -1), keys, n);
            luaL_error(L, "%s: unknown key '%s'%s%s%s (accepted: %s)", fn, lua_tostring(L, -1),
                       near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "", acc);
        }
        lua_pushvalue(L, -1);
        luaL_error(L, "%s: unexpected element [%s] (accepted keys: %s)", fn, luaL_tolstring(L, -1, NULL), acc);
    }
}

/* The table at t must be a plain array; returns its length. */
static int check_array(lua_State *L, int t, const char *fn, const char *what)
{
    lua_Integer n = (lua_Integer)lua_rawlen(L, t), count = 0;
    lua_pushnil(L);
    while (lua_next(L, t)) {
        lua_pop(L, 1);
        count++;
        if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1 || lua_tointeger(L, -1) > n)
            luaL_error(L, "%s: %s must be a list {...} without other keys", fn, what);
    }
    if (count != n)
        luaL_error(L, "%s: %s must be a list without holes", fn, what);
    return (int)n;
}

static double to_finite(lua_State *L, int idx, const char *fn, const char *what)
{
    if (lua_type(L, idx) != LUA_TNUMBER)
        luaL_error(L, "%s: %s must be a number (got %s)", fn, what, luaL_typename(L, idx));
    double v = lua_tonumber(L, idx);
    /* the core keeps floats: 1e300 would be Inf there */
    if (!isfinite(v) || fabs(v) > FLT_MAX) {
        char msg[320];
        snprintf(msg, sizeof msg, "%s: %s must be finite (|x| <= %g), got %g", fn, what, (double)FLT_MAX, v);
        luaL_error(L, "%s", msg);
    }
    return v;
}

/* A vector {x, y, z} (or {x, y} in 2D) at idx into out (z = 0). */
static void read_vec(lua_State *L, int idx, int dim, const char *fn, const char *what, double out[3])
{
    idx = lua_absindex(L, idx);
    if (lua_type(L, idx) != LUA_TTABLE)
        luaL_error(L, "%s: %s must be a vector {x, y%s} (got %s)", fn, what, dim == 2 ? "" : ", z",
                   luaL_typename(L, idx));
    int n = check_array(L, idx, fn, what);
    if (!(n == 3 || (dim == 2 && n == 2)))
        luaL_error(L, "%s: %s must have %s entries (got %d)", fn, what, dim == 2 ? "2 or 3" : "3", n);
    out[2] = 0;
    for (int k = 0; k < n; k++) {
        lua_rawgeti(L, idx, k + 1);
        out[k] = to_finite(L, -1, fn, what);
        lua_pop(L, 1);
    }
}

/* Pushes t[key]; returns 0 (and pushes nothing) when absent. */
static int field(lua_State *L, int t, const char *key)
{
    if (lua_getfield(L, t, key) != LUA_TNIL)
        return 1;
    lua_pop(L, 1);
    return 0;
}

/* A finite number t[key] into *out; returns 0 (out untouched) when absent. */
static int get_num(lua_State *L, int t, const char *fn, const char *key, double *out)
{
    if (!field(L, t, key))
        return 0;
    char what[80];
    snprintf(what, sizeof what, "'%s'", key);
    *out = to_finite(L, -1, fn, what);
    lua_pop(L, 1);
    return 1;
}

static double field_num(lua_State *L, int t, const char *fn, const char *key, double def, double lo, double hi)
{
    double v = def;
    if (get_num(L, t, fn, key, &v) && (v < lo || v > hi))
        luaL_error(L, "%s: '%s' = %f is out of range [%f, %f]", fn, key, (lua_Number)v, (lua_Number)lo,
                   (lua_Number)hi);
    return v;
}

/* A number in (0, hi] when present, def when absent. */
static double field_pos(lua_State *L, int t, const char *fn, const char *key, double def, double hi)
{
    double v = def;
    if (get_num(L, t, fn, key, &v) && !(v > 0 && v <= hi))
        luaL_error(L, "%s: '%s' = %f is out of range (0, %f]", fn, key, (lua_Number)v, (lua_Number)hi);
    return v;
}

static int field_int(lua_State *L, int t, const char *fn, const char *key, int def, int lo, int hi)
{
    if (!field(L, t, key))
        return def;
    if (!lua_isinteger(L, -1)) {
        lua_Number f = lua_type(L, -1) == LUA_TNUMBER ? lua_tonumber(L, -1) : 0.5;
        if (f != floor(f) || fabs(f) > INT_MAX)
            luaL_error(L, "%s: '%s' must be an integer (got %s)", fn, key, luaL_tolstring(L, -1, NULL));
    }
    lua_Number v = lua_tonumber(L, -1);
    lua_pop(L, 1);
    if (v < lo || v > hi)
        luaL_error(L, "%s: '%s' = %d is out of range [%d, %d]", fn, key, (int)v, lo, hi);
    return (int)v;
}

static int field_bool(lua_State *L, int t, const char *fn, const char *key, int def)
{
    if (!field(L, t, key))
        return def;
    if (lua_type(L, -1) != LUA_TBOOLEAN)
        luaL_error(L, "%s: '%s' must be true or false (got %s)", fn, key, luaL_typename(L, -1));
    int v = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return v;
}

/* A non-empty string; the pointer stays valid while the table lives. */
static const char *field_str(lua_State *L, int t, const char *fn, const char *key, const char *def)
{
    if (!field(L, t, key))
        return def;
    if (lua_type(L, -1) != LUA_TSTRING || lua_rawlen(L, -1) == 0)
        luaL_error(L, "%s: '%s' must be a non-empty string (got %s)", fn, key, luaL_typename(L, -1));
    const char *s = lua_tostring(L, -1);
    lua_pop(L, 1);
    return s;
}

static int field_vec(lua_State *L, int t, const char *fn, const char *key, int dim, float out[3])
{
    if (!field(L, t, key))
        return 0;
    char what[80];
    double v[3];
    snprintf(what, sizeof what, "'%s'", key);
    read_vec(L, -1, dim, fn, what, v);
    lua_pop(L, 1);
    for (int k = 0; k < 3; k++)
        out[k] = (float)v[k];
    return 1;
}

static void need_vec(lua_State *L, int t, const char *fn, const char *key, int dim, float out[3])
{
    if (!field_vec(L, t, fn, key, dim, out))
        luaL_error(L, "%s: '%s' is required", fn, key);
}

static void check_box(lua_State *L, const char *fn, int dim, const float lo[3], const float hi[3])
{
    for (int k = 0; k < dim; k++)
        if (!(hi[k] > lo[k]))
            luaL_error(L, "%s: 'max' must be greater than 'min' on every axis (axis %d: %f >= %f)", fn, k + 1,
                       (lua_Number)lo[k], (lua_Number)hi[k]);
}

/* ---- the sim userdata --------------------------------------------------- */

struct lsim;

typedef struct lua_stage {
    struct lsim *sim;
    int ref;                 /* the Lua function */
} lua_stage;

typedef struct lsim {
    floe_ctx *ctx;
    int dim;
    lua_State *L;            /* the thread inside sim:run (for callbacks) */
    int running;
    int self_ref;            /* the sim itself, while running */
    int frame_ref;           /* sim:on_frame function */
    int spec_ref;            /* the last pipeline spec that was accepted */
    int cb_err_ref;          /* error raised by on_frame during a run */
    const floe_scene_opts *host; /* the host's on_frame (floe view), NULL outside a scene */
    int nstages;
    lua_stage stages[MAX_STAGES];
} lsim;

static lsim *check_sim(lua_State *L)
{
    lsim *s = luaL_checkudata(L, 1, SIM_MT);
    if (!s->ctx)
        luaL_error(L, "the sim is closed");
    return s;
}

/* A sim whose structure may change (not from inside its own run). */
static lsim *check_idle(lua_State *L, const char *fn)
{
    lsim *s = check_sim(L);
    if (s->running)
        luaL_error(L, "%s: not allowed while the sim runs (from a Lua stage or on_frame)", fn);
    return s;
}

static void unref(lua_State *L, int *ref)
{
    luaL_unref(L, LUA_REGISTRYINDEX, *ref);
    *ref = LUA_NOREF;
}

static void stages_release(lua_State *L, lsim *s)
{
    for (int i = 0; i < s->nstages; i++)
        unref(L, &s->stages[i].ref);
    s->nstages = 0;
}

static void sim_free(lua_State *L, lsim *s)
{
    if (s->ctx)
        floe_ctx_destroy(s->ctx);
    s->ctx = NULL;
    stages_release(L, s);
    unref(L, &s->frame_ref);
    unref(L, &s->spec_ref);
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
    const scene_state *sc = scene_get(L);
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
    } else if (in_list(v, yes) || in_list(v, no))
        lua_pushboolean(L, in_list(v, yes));
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
    scene_state *sc = scene_get(L);
    const char *v = NULL;
    for (int i = 0; sc && i < sc->nsets; i++)
        if (set_is(sc->opt->sets[i], key)) {
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
    if (!name[0] || !preset_find(scene_get(L), name, path, sizeof path))
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
    if (!field(L, 1, "periodic"))
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
    double sp = field_pos(L, 1, "floe.sim", "spacing", 0, HUGE_VAL);
    double r = field_pos(L, 1, "floe.sim", "radius", 0, HUGE_VAL);
    if ((sp > 0) == (r > 0))
        luaL_error(L, "floe.sim: give exactly one of 'spacing' and 'radius' (spacing = 2 radius)");
    d->spacing = (float)(sp > 0 ? sp : 2 * r);
}

static void sim_domain(lua_State *L, floe_sim_def *d)
{
    if (!field(L, 1, "domain"))
        return;
    int t = lua_gettop(L);
    if (!lua_istable(L, t))
        luaL_error(L, "floe.sim: 'domain' must be a table {min = {...}, max = {...}}");
    check_keys(L, t, "floe.sim domain", DOMAIN_KEYS);
    need_vec(L, t, "floe.sim domain", "min", d->dim, d->domain_min);
    need_vec(L, t, "floe.sim domain", "max", d->dim, d->domain_max);
    check_box(L, "floe.sim domain", d->dim, d->domain_min, d->domain_max);
    static const char *const rules[] = {"delete", "error", "clamp", NULL};
    const char *rule = field_str(L, t, "floe.sim domain", "outside", "delete");
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
    check_keys(L, 1, "floe.sim", SIM_KEYS);
    floe_sim_def d = floe_sim_default_def();
    d.dim = field_int(L, 1, "floe.sim", "dim", 3, 2, 3);
    sim_spacing(L, &d);
    d.support_factor = (float)field_num(L, 1, "floe.sim", "support", 2, 1, 4);
    field_vec(L, 1, "floe.sim", "gravity", d.dim, d.gravity);
    sim_domain(L, &d);
    sim_periodic(L, &d);
    d.threads = field_int(L, 1, "floe.sim", "threads", 0, 0, 4096);
    scene_state *sc = scene_get(L);
    if (sc && sc->opt->threads > 0)
        d.threads = sc->opt->threads;
    /* "cpu", "opencl" or "auto"; --backend / --device override */
    d.backend = field_str(L, 1, "floe.sim", "backend", NULL);
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
    lsim *s = check_idle(L, "sim:load");
    const char *names[MAX_LOAD];
    int n = 0;
    if (lua_type(L, 2) == LUA_TSTRING)
        names[n++] = lua_tostring(L, 2);
    else if (lua_type(L, 2) == LUA_TTABLE) {
        n = check_array(L, 2, "sim:load", "the module list");
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
    a->density = field_pos(L, 2, fn, "density", 1000, HUGE_VAL);
    memset(a->v, 0, sizeof a->v);
    field_vec(L, 2, fn, "velocity", s->dim, a->v);
    a->set = field_str(L, 2, fn, "set", "fluid");
    check_set(L, s, fn, a->set, FLOE_SET_FLUID, a->density);
}

static const char *const FLUID_BOX_KEYS[] = {"min", "max", "density", "velocity", "set", NULL};

static int m_fluid_box(lua_State *L)
{
    const char *fn = "sim:fluid_box";
    lsim *s = check_idle(L, fn);
    luaL_checktype(L, 2, LUA_TTABLE);
    check_keys(L, 2, fn, FLUID_BOX_KEYS);
    float lo[3], hi[3];
    need_vec(L, 2, fn, "min", s->dim, lo);
    need_vec(L, 2, fn, "max", s->dim, hi);
    check_box(L, fn, s->dim, lo, hi);
    fluid_args a;
    fluid_common(L, s, fn, &a);
    floe_set set = ensure_set(L, s, fn, a.set, FLOE_SET_FLUID, a.density);
    return push_count(L, s, fn, floe_fill_box(s->ctx, set, lo, hi, a.v));
}

static const char *const FLUID_SPHERE_KEYS[] = {"centre", "center", "radius", "density", "velocity", "set", NULL};

static int m_fluid_sphere(lua_State *L)
{
    const char *fn = "sim:fluid_sphere";
    lsim *s = check_idle(L, fn);
    luaL_checktype(L, 2, LUA_TTABLE);
    check_keys(L, 2, fn, FLUID_SPHERE_KEYS);
    float c[3], c2[3];
    int has_centre = field_vec(L, 2, fn, "centre", s->dim, c), has_center = field_vec(L, 2, fn, "center", s->dim, c2);
    if (has_centre == has_center)
        luaL_error(L, "%s: %s", fn, has_centre ? "give 'centre' or 'center', not both" : "'centre' is required");
    if (has_center)
        memcpy(c, c2, sizeof c);
    double r = field_pos(L, 2, fn, "radius", 0, HUGE_VAL);
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
    lsim *s = check_idle(L, fn);
    luaL_checktype(L, 2, LUA_TTABLE);
    check_keys(L, 2, fn, BOUNDARY_SET_KEYS);
    const char *name = field_str(L, 2, fn, "name", "ice");
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
    lsim *s = check_idle(L, fn);
    luaL_checktype(L, 2, LUA_TTABLE);
    check_keys(L, 2, fn, BOUNDARY_BOX_KEYS);
    float lo[3], hi[3];
    need_vec(L, 2, fn, "min", s->dim, lo);
    need_vec(L, 2, fn, "max", s->dim, hi);
    check_box(L, fn, s->dim, lo, hi);
    int layers = field_int(L, 2, fn, "layers", 2, 1, 8);
    int open = field_bool(L, 2, fn, "open_top", 0) ? FLOE_OPEN_TOP : FLOE_OPEN_NONE;
    const char *name = field_str(L, 2, fn, "set", "boundary");
    check_set(L, s, fn, name, FLOE_SET_BOUNDARY, 0);
    floe_set set = ensure_set(L, s, fn, name, FLOE_SET_BOUNDARY, 0);
    return push_count(L, s, fn, floe_boundary_box(s->ctx, set, lo, hi, layers, open));
}

static const char *const SOLID_BOX_KEYS[] = {"min", "max", "set", NULL};

static int m_boundary_solid_box(lua_State *L)
{
    const char *fn = "sim:boundary_solid_box";
    lsim *s = check_idle(L, fn);
    luaL_checktype(L, 2, LUA_TTABLE);
    check_keys(L, 2, fn, SOLID_BOX_KEYS);
    float lo[3], hi[3];
    need_vec(L, 2, fn, "min", s->dim, lo);
    need_vec(L, 2, fn, "max", s->dim, hi);
    check_box(L, fn, s->dim, lo, hi);
    const char *name = field_str(L, 2, fn, "set", "boundary");
    check_set(L, s, fn, name, FLOE_SET_BOUNDARY, 0);
    floe_set set = ensure_set(L, s, fn, name, FLOE_SET_BOUNDARY, 0);
    return push_count(L, s, fn, floe_boundary_solid_box(s->ctx, set, lo, hi));
}

/* ---- sim:pipeline ------------------------------------------------------- */

typedef struct pentry {
    const char *name;
    int is_fn;               /* a Lua stage */
    int nkv;
    floe_param_kv kv[MAX_KV];
    char auto_name[24];
} pentry;

#define PFN "sim:pipeline"

/* The parameter key = value on top of the stack (key below it). */
static void parse_param(lua_State *L, lsim *s, int i, pentry *e, const char *key)
{
    if (e->nkv == MAX_KV)
        luaL_error(L, PFN ": entry %d ('%s'): more than %d parameters", i, e->name, MAX_KV);
    floe_param_kv *kv = &e->kv[e->nkv++];
    char what[160];
    snprintf(what, sizeof what, "entry %d ('%s'): parameter '%s'", i, e->name, key);
    kv->name = key;
    switch (lua_type(L, -1)) {
    case LUA_TNUMBER: kv->type = FLOE_PARAM_FLOAT; kv->value.f = to_finite(L, -1, PFN, what); break;
    case LUA_TBOOLEAN: kv->type = FLOE_PARAM_BOOL; kv->value.b = lua_toboolean(L, -1); break;
    case LUA_TSTRING: kv->type = FLOE_PARAM_STRING; kv->value.s = lua_tostring(L, -1); break;
    case LUA_TTABLE: kv->type = FLOE_PARAM_VEC3; read_vec(L, -1, s->dim, PFN, what, kv->value.v); break;
    default:
        luaL_error(L, PFN ": %s must be a number, boolean, string or vector (got %s)", what, luaL_typename(L, -1));
    }
}

/* { "stage", key = value, ... } or { "name", fn = function } at index v. */
static void parse_table_entry(lua_State *L, lsim *s, int v, int i, pentry *e)
{
    if (lua_rawgeti(L, v, 1) != LUA_TSTRING)
        luaL_error(L, PFN ": entry %d: the first element must be the stage name (got %s)", i, luaL_typename(L, -1));
    e->name = lua_tostring(L, -1);
    lua_pop(L, 1);
    lua_pushnil(L);
    while (lua_next(L, v)) {
        if (lua_isinteger(L, -2) && lua_tointeger(L, -2) == 1) {
            lua_pop(L, 1);
            continue;
        }
        if (lua_type(L, -2) != LUA_TSTRING) {
            lua_pushvalue(L, -2);
            luaL_error(L, PFN ": entry %d ('%s'): unexpected element [%s] (parameters are name = value)", i,
                       e->name, luaL_tolstring(L, -1, NULL));
        }
        const char *key = lua_tostring(L, -2);
        if (strcmp(key, "fn") == 0) {
            if (!lua_isfunction(L, -1))
                luaL_error(L, PFN ": entry %d ('%s'): 'fn' must be a function", i, e->name);
            e->is_fn = 1;
        } else
            parse_param(L, s, i, e, key);
        lua_pop(L, 1);
    }
    if (e->is_fn && e->nkv)
        luaL_error(L, PFN ": entry %d ('%s'): a Lua stage (fn = ...) takes no parameters", i, e->name);
}

/* Pushes entry i of the spec at index spec and parses it (the value keeps
 * its strings alive; the caller pops it). */
static void parse_entry(lua_State *L, lsim *s, int spec, int i, pentry *e)
{
    e->is_fn = 0;
    e->nkv = 0;
    lua_rawgeti(L, spec, i);
    int v = lua_gettop(L);
    switch (lua_type(L, v)) {
    case LUA_TSTRING: e->name = lua_tostring(L, v); break;
    case LUA_TFUNCTION:
        snprintf(e->auto_name, sizeof e->auto_name, "lua#%d", i);
        e->name = e->auto_name;
        e->is_fn = 1;
        break;
    case LUA_TTABLE: parse_table_entry(L, s, v, i, e); break;
    default:
        luaL_error(L, PFN ": entry %d must be a stage name, a table or a function (got %s)", i, luaL_typename(L, v));
    }
    if (!e->name[0])
        luaL_error(L, PFN ": entry %d: empty stage name", i);
}

static void pipeline_validate(lua_State *L, lsim *s, int spec)
{
    int n = check_array(L, spec, PFN, "the pipeline");
    if (n > MAX_STAGES)
        luaL_error(L, PFN ": more than %d stages", MAX_STAGES);
    for (int i = 1; i <= n; i++) {
        pentry e;
        parse_entry(L, s, spec, i, &e);
        lua_pop(L, 1);
    }
}

static int lua_stage_run(const floe_stage_call *call);

/* Entry value at v (a function, or a table with fn). */
static int add_lua_stage(lua_State *L, lsim *s, int v, const pentry *e)
{
    if (lua_istable(L, v))
        lua_getfield(L, v, "fn");
    else
        lua_pushvalue(L, v);
    lua_stage *st = &s->stages[s->nstages];
    st->sim = s;
    st->ref = luaL_ref(L, LUA_REGISTRYINDEX);
    int rc = floe_pipeline_add_fn(s->ctx, e->name, lua_stage_run, st);
    if (rc != FLOE_OK)
        unref(L, &st->ref);
    else
        s->nstages++;
    return rc;
}

static void pipeline_reset(lua_State *L, lsim *s)
{
    floe_pipeline_clear(s->ctx);
    stages_release(L, s);
}

/* Adds every entry of a validated spec; on failure names the entry. */
static int pipeline_build(lua_State *L, lsim *s, int spec, char *bad, size_t badlen)
{
    int n = (int)lua_rawlen(L, spec);
    for (int i = 1; i <= n; i++) {
        pentry e;
        int top = lua_gettop(L);
        parse_entry(L, s, spec, i, &e);
        int rc = e.is_fn ? add_lua_stage(L, s, top + 1, &e) : floe_pipeline_add(s->ctx, e.name, e.kv, e.nkv);
        if (rc != FLOE_OK)
            snprintf(bad, badlen, "entry %d ('%s')", i, e.name);
        lua_settop(L, top);
        if (rc != FLOE_OK)
            return rc;
    }
    return FLOE_OK;
}

static int restore_cf(lua_State *L)
{
    lsim *s = lua_touserdata(L, 1);
    char bad[128];
    lua_rawgeti(L, LUA_REGISTRYINDEX, s->spec_ref);
    pipeline_validate(L, s, 2);
    if (pipeline_build(L, s, 2, bad, sizeof bad) != FLOE_OK)
        pipeline_reset(L, s);
    return 0;
}

/* Puts back the last accepted pipeline (the scene may have changed it). */
static void pipeline_restore(lua_State *L, lsim *s)
{
    pipeline_reset(L, s);
    if (s->spec_ref == LUA_NOREF)
        return;
    lua_pushcfunction(L, restore_cf);
    lua_pushlightuserdata(L, s);
    if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
        lua_pop(L, 1);
        pipeline_reset(L, s);
    }
}

static int m_pipeline(lua_State *L)
{
    lsim *s = check_idle(L, PFN);
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_settop(L, 2);
    pipeline_validate(L, s, 2);
    pipeline_reset(L, s);
    char bad[128], msg[2048];
    if (pipeline_build(L, s, 2, bad, sizeof bad) != FLOE_OK) {
        snprintf(msg, sizeof msg, "%s", floe_ctx_error(s->ctx));
        pipeline_restore(L, s);
        return luaL_error(L, PFN ": %s: %s", bad, msg);
    }
    /* the dataflow, named by this line (warnings printed, errors raised) */
    luaL_where(L, 1);
    if (floe_pipeline_check(s->ctx, lua_tostring(L, -1), NULL) != FLOE_OK) {
        snprintf(msg, sizeof msg, "%s", floe_ctx_error(s->ctx));
        pipeline_restore(L, s);
        lua_pushstring(L, msg);
        return lua_error(L);
    }
    lua_pop(L, 1);
    unref(L, &s->spec_ref);
    lua_pushvalue(L, 2);
    s->spec_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    return 0;
}

/* ---- callbacks from floe_run -------------------------------------------- */

static const char *error_text(lua_State *L)
{
    const char *m = lua_tostring(L, -1);
    return m ? m : "(error object is not a string)";
}

static int lua_stage_run(const floe_stage_call *call)
{
    lua_stage *st = call->user;
    lsim *s = st->sim;
    lua_State *L = s->L;
    if (!L || s->self_ref == LUA_NOREF)
        return floe_core_api()->fail(call->ctx, FLOE_ERR, "Lua stage '%s' runs only inside sim:run", call->name);
    int top = lua_gettop(L);
    lua_rawgeti(L, LUA_REGISTRYINDEX, st->ref);
    lua_rawgeti(L, LUA_REGISTRYINDEX, s->self_ref);
    lua_pushnumber(L, floe_ctx_info(call->ctx)->dt);
    int rc = FLOE_OK;
    if (lua_pcall(L, 2, 0, 0) != LUA_OK)
        rc = floe_core_api()->fail(call->ctx, FLOE_ERR, "%s", error_text(L));
    lua_settop(L, top);
    return rc;
}

static void set_num(lua_State *L, const char *k, double v)
{
    lua_pushnumber(L, v);
    lua_setfield(L, -2, k);
}

static void set_int(lua_State *L, const char *k, lua_Integer v)
{
    lua_pushinteger(L, v);
    lua_setfield(L, -2, k);
}

static void push_stats(lua_State *L, const floe_frame_stats *st)
{
    lua_createtable(L, 0, 12);
    set_int(L, "frame", st->frame);
    set_num(L, "time", st->time);
    set_int(L, "steps", (lua_Integer)st->steps);
    set_num(L, "dt_min", st->dt_min);
    set_num(L, "dt_max", st->dt_max);
    set_int(L, "particles", st->particles);
    set_num(L, "max_speed", st->max_speed);
    set_num(L, "density_err_avg", st->density_err_avg);
    set_num(L, "density_err_max", st->density_err_max);
    set_num(L, "kinetic", st->kinetic);
    set_num(L, "potential", st->potential);
    set_num(L, "wall_s", st->wall_s);
}

/* The error with the traceback of where it was raised (the callback's
 * frames, which are gone once lua_pcall returns). */
static int traceback_handler(lua_State *L)
{
    const char *msg = lua_tostring(L, 1);
    luaL_traceback(L, L, msg ? msg : luaL_typename(L, 1), 1);
    return 1;
}

/* sim:on_frame's function; returning false stops the run (status
 * stopped). A Lua error fails it (status failed, the error and its
 * traceback in the record) and is raised again by sim:run. */
static int frame_cb(floe_ctx *ctx, const floe_frame_stats *st, void *user)
{
    lsim *s = user;
    lua_State *L = s->L;
    if (!L)
        return 0;
    if (s->frame_ref == LUA_NOREF) /* only the host's */
        return s->host && s->host->on_frame ? s->host->on_frame(ctx, st, s->host->frame_user) : 0;
    int top = lua_gettop(L), rc = 0;
    lua_pushcfunction(L, traceback_handler);
    lua_rawgeti(L, LUA_REGISTRYINDEX, s->frame_ref);
    lua_rawgeti(L, LUA_REGISTRYINDEX, s->self_ref);
    push_stats(L, st);
    if (lua_pcall(L, 2, 1, top + 1) != LUA_OK) {
        rc = floe_core_api()->fail(ctx, FLOE_ERR, "on_frame: %s", lua_tostring(L, -1));
        s->cb_err_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    } else
        rc = lua_type(L, -1) == LUA_TBOOLEAN && !lua_toboolean(L, -1);
    lua_settop(L, top);
    if (rc == 0 && s->host && s->host->on_frame) /* the scene's first, then the host's */
        rc = s->host->on_frame(ctx, st, s->host->frame_user);
    return rc;
}

static int m_on_frame(lua_State *L)
{
    lsim *s = check_sim(L);
    if (!lua_isnil(L, 2))
        luaL_checktype(L, 2, LUA_TFUNCTION);
    unref(L, &s->frame_ref);
    lua_settop(L, 2);
    s->frame_ref = lua_isnil(L, 2) ? LUA_NOREF : luaL_ref(L, LUA_REGISTRYINDEX);
    return 0;
}

/* ---- sim:run ------------------------------------------------------------ */

#define RFN "sim:run"

static const char *const RUN_KEYS[] = {"frames", "fps", "end_time", "dt", "cfl", "dt_max", "out", "name",
                                       "formats", "attributes", "progress", "checkpoint_every", NULL};

typedef struct run_args {
    floe_run_def def;
    const char *attrs[MAX_RUN_ATTRS];
} run_args;

static unsigned parse_format(lua_State *L, int idx)
{
    const char *f = lua_type(L, idx) == LUA_TSTRING ? lua_tostring(L, idx) : "";
    if (strcmp(f, "ply") == 0)
        return FLOE_FMT_PLY;
    if (strcmp(f, "vtk") == 0)
        return FLOE_FMT_VTK;
    return (unsigned)luaL_error(L, RFN ": unknown format '%s' (accepted: ply, vtk)", luaL_tolstring(L, idx, NULL));
}

static unsigned run_formats(lua_State *L, int t)
{
    unsigned fmt = 0;
    if (!field(L, t, "formats"))
        return 0;
    int f = lua_gettop(L);
    if (lua_type(L, f) == LUA_TSTRING)
        fmt = parse_format(L, f);
    else if (lua_type(L, f) == LUA_TTABLE) {
        int n = check_array(L, f, RFN, "'formats'");
        for (int i = 1; i <= n; i++) {
            lua_rawgeti(L, f, i);
            fmt |= parse_format(L, -1);
            lua_pop(L, 1);
        }
    } else
        luaL_error(L, RFN ": 'formats' must be a list like {\"ply\", \"vtk\"}");
    lua_pop(L, 1);
    return fmt;
}

static void run_attrs(lua_State *L, int t, run_args *a)
{
    if (!field(L, t, "attributes"))
        return;
    int f = lua_gettop(L);
    if (!lua_istable(L, f))
        luaL_error(L, RFN ": 'attributes' must be a list of attribute names");
    int n = check_array(L, f, RFN, "'attributes'");
    if (n > MAX_RUN_ATTRS)
        luaL_error(L, RFN ": more than %d attributes", MAX_RUN_ATTRS);
    for (int i = 0; i < n; i++) {
        if (lua_rawgeti(L, f, i + 1) != LUA_TSTRING)
            luaL_error(L, RFN ": 'attributes' entry %d must be a string", i + 1);
        a->attrs[i] = lua_tostring(L, -1); /* kept alive by the table */
        lua_pop(L, 1);
    }
    a->def.attrs = a->attrs;
    a->def.nattrs = n;
    lua_pop(L, 1);
}

static void run_parse(lua_State *L, int t, run_args *a)
{
    floe_run_def *d = &a->def;
    check_keys(L, t, RFN, RUN_KEYS);
    d->frames = field_int(L, t, RFN, "frames", d->frames, 0, 100000000);
    d->fps = field_pos(L, t, RFN, "fps", d->fps, 1e6);
    d->end_time = field_pos(L, t, RFN, "end_time", d->end_time, 1e9);
    d->dt = field_pos(L, t, RFN, "dt", d->dt, 10);
    d->cfl = field_pos(L, t, RFN, "cfl", d->cfl, 1);
    d->dt_max = field_pos(L, t, RFN, "dt_max", d->dt_max, 10);
    d->out_dir = field_str(L, t, RFN, "out", d->out_dir);
    d->name = field_str(L, t, RFN, "name", d->name);
    if (d->name && strchr(d->name, '/'))
        luaL_error(L, RFN ": 'name' must be a file base name without '/'");
    d->formats = run_formats(L, t);
    run_attrs(L, t, a);
    d->progress = field_bool(L, t, RFN, "progress", d->progress);
    d->checkpoint_every = field_int(L, t, RFN, "checkpoint_every", d->checkpoint_every, 0, 100000000);
}

static void run_overrides(const scene_state *sc, floe_run_def *d)
{
    if (!sc)
        return;
    const floe_scene_opts *o = sc->opt;
    if (o->frames >= 0) {
        d->frames = o->frames;
        d->end_time = 0;
    }
    if (o->out_dir)
        d->out_dir = o->out_dir;
    if (o->resume) /* the run folder being resumed */
        d->out_dir = o->resume;
    if (o->write_frames == 0)
        d->write_frames = 0;
    if (o->progress >= 0)
        d->progress = o->progress;
    d->scene_path = sc->path;
    d->scene_hash = sc->hash;
}

/* Every --set key not read by floe.param goes to a stage parameter. */
static void run_apply_sets(lua_State *L, lsim *s, scene_state *sc)
{
    for (int i = 0; sc && i < sc->nsets; i++) {
        const char *kv = sc->opt->sets[i];
        size_t kl = set_key_len(kv);
        char key[256];
        if (sc->used[i] == SET_PARAM)
            continue;
        if (kl >= sizeof key)
            luaL_error(L, RFN ": --set key too long: %s", kv);
        memcpy(key, kv, kl);
        key[kl] = '\0';
        if (floe_pipeline_set(s->ctx, key, kv + kl + 1) != FLOE_OK)
            luaL_error(L, RFN ": %s (and no floe.param reads '%s')", floe_ctx_error(s->ctx), key);
        sc->used[i] = SET_STAGE;
    }
}

/* The summary holds copies of the stage names: it outlives the context
 * (opt->summary is read after the scene ends). */
static void summary_out(const scene_state *sc, const floe_run_summary *sum)
{
    if (sc && sc->opt->summary)
        *sc->opt->summary = *sum;
}

static int push_summary(lua_State *L, const floe_run_summary *sum)
{
    lua_createtable(L, 0, 7);
    set_int(L, "frames", sum->frames);
    set_int(L, "steps", (lua_Integer)sum->steps);
    set_num(L, "sim_time", sum->sim_time);
    set_num(L, "wall_s", sum->wall_s);
    set_num(L, "particle_steps_per_s", sum->particle_steps_per_s);
    set_int(L, "status", sum->status);
    lua_createtable(L, 0, sum->nstages);
    for (int i = 0; i < sum->nstages && i < MAX_STAGES; i++)
        set_num(L, sum->stage_name[i], sum->stage_ms[i]);
    lua_setfield(L, -2, "stages");
    return 1;
}

static int run_exec(lua_State *L, lsim *s, scene_state *sc, floe_run_def *def)
{
    floe_run_summary sum;
    memset(&sum, 0, sizeof sum);
    s->host = sc && sc->opt->on_frame ? sc->opt : NULL;
    def->on_frame = s->frame_ref != LUA_NOREF || s->host ? frame_cb : NULL;
    def->user = s;
    lua_pushvalue(L, 1);
    s->self_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    s->L = L;
    s->running = 1;
    if (sc)
        sc->status = FLOE_OK;
    int rc = floe_run(s->ctx, def, &sum);
    s->running = 0;
    s->L = NULL;
    unref(L, &s->self_ref);
    summary_out(sc, &sum);
    if (rc != FLOE_OK && sc)
        sc->status = rc;
    if (s->cb_err_ref != LUA_NOREF) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, s->cb_err_ref);
        unref(L, &s->cb_err_ref);
        if (rc != FLOE_ERR_INTERRUPT && rc != FLOE_ERR_TIMEOUT) /* else the stop is the news */
            return lua_error(L);
        lua_pop(L, 1);
    }
    if (rc != FLOE_OK)
        return luaL_error(L, RFN ": %s", floe_ctx_error(s->ctx));
    return push_summary(L, &sum);
}

static int m_run(lua_State *L)
{
    lsim *s = check_idle(L, RFN);
    if (lua_isnoneornil(L, 2)) {
        lua_settop(L, 1);
        lua_newtable(L);
    }
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_settop(L, 2);
    scene_state *sc = scene_get(L);
    run_args a;
    memset(&a, 0, sizeof a);
    a.def = floe_run_default_def();
    run_parse(L, 2, &a);
    run_overrides(sc, &a.def);
    if (a.def.out_dir && a.def.write_frames)
        floe_lua_sandbox_check_write(L, a.def.out_dir, RFN " writing frames to");
    run_apply_sets(L, s, sc);
    return run_exec(L, s, sc, &a.def);
}

/* ---- slow access (Lua stages, tests) ------------------------------------ */

static floe_set arg_set(lua_State *L, lsim *s, const char *fn)
{
    const char *name = luaL_checkstring(L, 2);
    floe_set set = floe_set_find(s->ctx, name);
    if (!set.id)
        luaL_error(L, "%s: no particle set '%s'", fn, name);
    return set;
}

static int m_count(lua_State *L)
{
    lsim *s = check_sim(L);
    lua_pushinteger(L, floe_set_size(s->ctx, arg_set(L, s, "sim:count")));
    return 1;
}

/* sim:reduce("sum"|"max"|"min", a, b, ...): the numbers reduced over every
 * rank under MPI (each rank's own particles summed into one figure), as
 * they are in one process; every rank must call it at the same point */
static int m_reduce(lua_State *L)
{
    lsim *s = check_sim(L);
    static const char *const ops[] = {"sum", "max", "min", NULL}; /* FLOE_REDUCE_SUM, _MAX, _MIN */
    const int op = luaL_checkoption(L, 2, NULL, ops);
    const int n = lua_gettop(L) - 2;
    if (n < 1 || n > 64)
        return luaL_error(L, "sim:reduce: 1 to 64 numbers after the operation (got %d)", n);
    double v[64];
    for (int i = 0; i < n; i++)
        v[i] = luaL_checknumber(L, 3 + i);
    if (dd_reduce(s->ctx, v, n, op))
        return luaL_error(L, "sim:reduce: %s", floe_ctx_error(s->ctx));
    for (int i = 0; i < n; i++)
        lua_pushnumber(L, v[i]);
    return n;
}

typedef struct attr_ref {
    floe_type type;
    void *data;
    uint32_t i;              /* 0-based */
    floe_set set;
    const char *name;
} attr_ref;

/* (set, attr, i) at 2, 3, 4. */
/* sim:remove_set(name): remove every particle of a set (e.g. lift a gate). */
static int m_remove_set(lua_State *L)
{
    lsim *s = check_idle(L, "sim:remove_set");
    floe_set set = arg_set(L, s, "sim:remove_set");
    if (floe_set_clear(s->ctx, set) != FLOE_OK)
        return luaL_error(L, "sim:remove_set: %s", floe_ctx_error(s->ctx));
    return 0;
}

static attr_ref arg_attr(lua_State *L, lsim *s, const char *fn)
{
    floe_set set = arg_set(L, s, fn);
    const char *want = luaL_checkstring(L, 3), *name;
    lua_Integer i = luaL_checkinteger(L, 4);
    uint32_t n = floe_set_size(s->ctx, set);
    if (i < 1 || i > (lua_Integer)n)
        luaL_error(L, "%s: index %I out of range [1, %d] of set '%s'", fn, i, (int)n, lua_tostring(L, 2));
    attr_ref r = {0, NULL, (uint32_t)(i - 1), set, want};
    for (int k = 0; floe_attr_at(s->ctx, set, k, &name, &r.type, &r.data); k++)
        if (strcmp(name, want) == 0)
            return r;
    luaL_error(L, "%s: set '%s' has no attribute '%s'", fn, lua_tostring(L, 2), want);
    return r;
}

static int m_get(lua_State *L)
{
    lsim *s = check_sim(L);
    attr_ref r = arg_attr(L, s, "sim:get");
    switch (r.type) {
    case FLOE_VEC3:
        for (int k = 0; k < 3; k++)
            lua_pushnumber(L, ((const float *)r.data)[3 * r.i + k]);
        return 3;
    case FLOE_F32: lua_pushnumber(L, ((const float *)r.data)[r.i]); break;
    case FLOE_I32: lua_pushinteger(L, ((const int32_t *)r.data)[r.i]); break;
    case FLOE_U32: lua_pushinteger(L, ((const uint32_t *)r.data)[r.i]); break;
    }
    return 1;
}

static int m_set(lua_State *L)
{
    lsim *s = check_sim(L);
    attr_ref r = arg_attr(L, s, "sim:set");
    if (r.type == FLOE_VEC3) {
        int n = lua_gettop(L) - 4;
        if (!(n == 3 || (s->dim == 2 && n == 2)))
            return luaL_error(L, "sim:set: a vector attribute takes %s numbers (got %d)", s->dim == 2 ? "2 or 3" : "3", n);
        float v[3] = {0, 0, 0};
        for (int k = 0; k < n; k++)
            v[k] = (float)to_finite(L, 5 + k, "sim:set", "a component");
        memcpy((float *)r.data + 3 * r.i, v, sizeof v);
        /* a moved particle: the core's sort of its set (kept for a static
         * set) and, for walls, the boundary volumes are stale now */
        if (strcmp(r.name, "x") == 0)
            floe_set_moved(s->ctx, r.set);
    } else if (r.type == FLOE_F32)
        ((float *)r.data)[r.i] = (float)to_finite(L, 5, "sim:set", "the value");
    else {
        lua_Integer v = luaL_checkinteger(L, 5);
        if (r.type == FLOE_I32 && (v < INT32_MIN || v > INT32_MAX))
            return luaL_argerror(L, 5, "out of range of a 32-bit integer");
        if (r.type == FLOE_U32 && (v < 0 || v > (lua_Integer)UINT32_MAX))
            return luaL_argerror(L, 5, "out of range of an unsigned 32-bit integer");
        if (r.type == FLOE_I32)
            ((int32_t *)r.data)[r.i] = (int32_t)v;
        else
            ((uint32_t *)r.data)[r.i] = (uint32_t)v;
    }
    return 0;
}

static void set_vec(lua_State *L, const char *k, const float v[3])
{
    lua_createtable(L, 3, 0);
    for (int i = 0; i < 3; i++) {
        lua_pushnumber(L, v[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, k);
}

static int m_info(lua_State *L)
{
    const floe_sim_info *in = floe_ctx_info(check_sim(L)->ctx);
    lua_createtable(L, 0, 10);
    set_int(L, "dim", in->dim);
    set_num(L, "spacing", in->spacing);
    set_num(L, "support", in->support);
    set_num(L, "time", in->time);
    set_int(L, "step", (lua_Integer)in->step);
    set_num(L, "dt", in->dt);
    set_int(L, "threads", in->threads);
    set_vec(L, "gravity", in->gravity);
    lua_createtable(L, 0, 2);
    set_vec(L, "min", in->domain_min);
    set_vec(L, "max", in->domain_max);
    lua_setfield(L, -2, "domain");
    return 1;
}

/* ---- module ------------------------------------------------------------- */

/* lua_mesh.c: sim:boundary_mesh, sim:fluid_mesh, floe.mesh_info */
int floe_lua_boundary_mesh(lua_State *L, floe_ctx *ctx);
int floe_lua_fluid_mesh(lua_State *L, floe_ctx *ctx);
int floe_lua_mesh_info(lua_State *L);
static int m_boundary_mesh(lua_State *L) { return floe_lua_boundary_mesh(L, check_idle(L, "sim:boundary_mesh")->ctx); }
static int m_fluid_mesh(lua_State *L) { return floe_lua_fluid_mesh(L, check_idle(L, "sim:fluid_mesh")->ctx); }
int floe_lua_probe(lua_State *L, floe_ctx *ctx);
static int m_probe(lua_State *L) { return floe_lua_probe(L, check_idle(L, "sim:probe")->ctx); }
/* lua_terrain.c: sim:terrain, sim:terrain_height */
int floe_lua_terrain(lua_State *L, floe_ctx *ctx);
int floe_lua_terrain_height(lua_State *L, floe_ctx *ctx);
static int m_terrain(lua_State *L) { return floe_lua_terrain(L, check_idle(L, "sim:terrain")->ctx); }
static int m_terrain_height(lua_State *L) { return floe_lua_terrain_height(L, check_sim(L)->ctx); }
int floe_lua_lake(lua_State *L, floe_ctx *ctx);
static int m_lake(lua_State *L) { return floe_lua_lake(L, check_idle(L, "sim:lake")->ctx); }
/* lua_emit.c: sources and sinks */
int floe_lua_source(lua_State *L, floe_ctx *ctx);
int floe_lua_source_on(lua_State *L, floe_ctx *ctx);
int floe_lua_sink(lua_State *L, floe_ctx *ctx);
int floe_lua_flow(lua_State *L, floe_ctx *ctx);
static int m_source(lua_State *L) { return floe_lua_source(L, check_idle(L, "sim:source")->ctx); }
static int m_source_on(lua_State *L) { return floe_lua_source_on(L, check_sim(L)->ctx); }
static int m_sink(lua_State *L) { return floe_lua_sink(L, check_idle(L, "sim:sink")->ctx); }
static int m_flow(lua_State *L) { return floe_lua_flow(L, check_sim(L)->ctx); }

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
    {"pipeline", m_pipeline},
    {"on_frame", m_on_frame},
    {"run", m_run},
    {"count", m_count},
    {"reduce", m_reduce},
    {"remove_set", m_remove_set},
    {"get", m_get},
    {"set", m_set},
    {"info", m_info},
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
