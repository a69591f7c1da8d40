/* The `floe` Lua module's shared parts (internal; docs/lua-api.md): the
 * scene record and the sim userdata, the checks of a call's arguments
 * (lua_check.c), and the methods each file defines: lua_sim.c (floe.*,
 * the sim, its particles, the method table), lua_pipeline.c (sim:pipeline,
 * Lua stages, on_frame), lua_run.c (sim:run), lua_access.c (sim:count,
 * get, set, reduce, info). */
#ifndef FLOE_LUA_SIM_H
#define FLOE_LUA_SIM_H

#include "lua_floe.h"

#include <lauxlib.h>
#include <lua.h>

#include <stddef.h>
#include <string.h>

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

/* NULL when the module is used outside floe_scene_run. */
static inline scene_state *ls_scene_get(lua_State *L)
{
    lua_getfield(L, LUA_REGISTRYINDEX, SCENE_KEY);
    scene_state *sc = lua_touserdata(L, -1);
    lua_pop(L, 1);
    return sc;
}

static inline size_t ls_set_key_len(const char *kv)
{
    const char *eq = strchr(kv, '=');
    return eq ? (size_t)(eq - kv) : 0;
}

static inline int ls_set_is(const char *kv, const char *key)
{
    size_t n = ls_set_key_len(kv);
    return n == strlen(key) && strncmp(kv, key, n) == 0;
}

static inline lsim *ls_check_sim(lua_State *L)
{
    lsim *s = luaL_checkudata(L, 1, SIM_MT);
    if (!s->ctx)
        luaL_error(L, "the sim is closed");
    return s;
}

/* A sim whose structure may change (not from inside its own run). */
static inline lsim *ls_check_idle(lua_State *L, const char *fn)
{
    lsim *s = ls_check_sim(L);
    if (s->running)
        luaL_error(L, "%s: not allowed while the sim runs (from a Lua stage or on_frame)", fn);
    return s;
}

static inline void ls_unref(lua_State *L, int *ref)
{
    luaL_unref(L, LUA_REGISTRYINDEX, *ref);
    *ref = LUA_NOREF;
}

static inline void ls_set_num(lua_State *L, const char *k, double v)
{
    lua_pushnumber(L, v);
    lua_setfield(L, -2, k);
}

static inline void ls_set_int(lua_State *L, const char *k, lua_Integer v)
{
    lua_pushinteger(L, v);
    lua_setfield(L, -2, k);
}

/* ---- lua_check.c: a call's arguments, checked before anything changes ---- */

int ls_in_list(const char *s, const char *const *list);
/* Every key of the table at t must be a string of keys. */
void ls_check_keys(lua_State *L, int t, const char *fn, const char *const *keys);
/* The table at t must be a plain array; returns its length. */
int ls_check_array(lua_State *L, int t, const char *fn, const char *what);
/* The number at idx, finite and within float range. */
double ls_to_finite(lua_State *L, int idx, const char *fn, const char *what);
/* A vector {x, y, z} (or {x, y} in 2D) at idx into out (z = 0). */
void ls_read_vec(lua_State *L, int idx, int dim, const char *fn, const char *what, double out[3]);
/* Pushes t[key]; returns 0 (and pushes nothing) when absent. */
int ls_field(lua_State *L, int t, const char *key);
/* t[key] checked (absent: def): a number in [lo, hi], a positive number up
 * to hi, an integer in [lo, hi], a boolean, a string */
double ls_field_num(lua_State *L, int t, const char *fn, const char *key, double def, double lo, double hi);
double ls_field_pos(lua_State *L, int t, const char *fn, const char *key, double def, double hi);
int ls_field_int(lua_State *L, int t, const char *fn, const char *key, int def, int lo, int hi);
int ls_field_bool(lua_State *L, int t, const char *fn, const char *key, int def);
const char *ls_field_str(lua_State *L, int t, const char *fn, const char *key, const char *def);
/* t[key] as a vector into out; 0 when absent (need_vec: an error then) */
int ls_field_vec(lua_State *L, int t, const char *fn, const char *key, int dim, float out[3]);
void ls_need_vec(lua_State *L, int t, const char *fn, const char *key, int dim, float out[3]);
/* lo < hi on every axis of the dimension */
void ls_check_box(lua_State *L, const char *fn, int dim, const float lo[3], const float hi[3]);

/* ---- lua_pipeline.c ------------------------------------------------------ */

int ls_m_pipeline(lua_State *L);
int ls_m_on_frame(lua_State *L);
/* the sim's Lua stages released (a new pipeline, the sim closed) */
void ls_stages_release(lua_State *L, lsim *s);
/* floe_run_def.on_frame of a sim: on_frame's function, the host's view */
int ls_frame_cb(floe_ctx *ctx, const floe_frame_stats *st, void *user);

/* ---- lua_run.c, lua_access.c ---------------------------------------------- */

int ls_m_run(lua_State *L);
int ls_m_count(lua_State *L);
int ls_m_reduce(lua_State *L);
int ls_m_remove_set(lua_State *L);
int ls_m_get(lua_State *L);
int ls_m_set(lua_State *L);
int ls_m_info(lua_State *L);

#endif
