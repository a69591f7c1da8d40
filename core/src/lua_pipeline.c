/* The `floe` Lua module: sim:pipeline (stages by name, with parameters,
 * and Lua functions as stages), and the callbacks of floe_run into Lua: a
 * Lua stage's call, sim:on_frame (docs/lua-api.md). */
#include "lua_sim.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    case LUA_TNUMBER: kv->type = FLOE_PARAM_FLOAT; kv->value.f = ls_to_finite(L, -1, PFN, what); break;
    case LUA_TBOOLEAN: kv->type = FLOE_PARAM_BOOL; kv->value.b = lua_toboolean(L, -1); break;
    case LUA_TSTRING: kv->type = FLOE_PARAM_STRING; kv->value.s = lua_tostring(L, -1); break;
    case LUA_TTABLE: kv->type = FLOE_PARAM_VEC3; ls_read_vec(L, -1, s->dim, PFN, what, kv->value.v); break;
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
    int n = ls_check_array(L, spec, PFN, "the pipeline");
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
        ls_unref(L, &st->ref);
    else
        s->nstages++;
    return rc;
}

static void pipeline_reset(lua_State *L, lsim *s)
{
    floe_pipeline_clear(s->ctx);
    ls_stages_release(L, s);
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

int ls_m_pipeline(lua_State *L)
{
    lsim *s = ls_check_idle(L, PFN);
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
    ls_unref(L, &s->spec_ref);
    lua_pushvalue(L, 2);
    s->spec_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    return 0;
}

void ls_stages_release(lua_State *L, lsim *s)
{
    for (int i = 0; i < s->nstages; i++)
        ls_unref(L, &s->stages[i].ref);
    s->nstages = 0;
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

static void push_stats(lua_State *L, const floe_frame_stats *st)
{
    lua_createtable(L, 0, 12);
    ls_set_int(L, "frame", st->frame);
    ls_set_num(L, "time", st->time);
    ls_set_int(L, "steps", (lua_Integer)st->steps);
    ls_set_num(L, "dt_min", st->dt_min);
    ls_set_num(L, "dt_max", st->dt_max);
    ls_set_int(L, "particles", st->particles);
    ls_set_num(L, "max_speed", st->max_speed);
    ls_set_num(L, "density_err_avg", st->density_err_avg);
    ls_set_num(L, "density_err_max", st->density_err_max);
    ls_set_num(L, "kinetic", st->kinetic);
    ls_set_num(L, "potential", st->potential);
    ls_set_num(L, "wall_s", st->wall_s);
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
int ls_frame_cb(floe_ctx *ctx, const floe_frame_stats *st, void *user)
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

int ls_m_on_frame(lua_State *L)
{
    lsim *s = ls_check_sim(L);
    if (!lua_isnil(L, 2))
        luaL_checktype(L, 2, LUA_TFUNCTION);
    ls_unref(L, &s->frame_ref);
    lua_settop(L, 2);
    s->frame_ref = lua_isnil(L, 2) ? LUA_NOREF : luaL_ref(L, LUA_REGISTRYINDEX);
    return 0;
}
