/* The `floe` Lua module: sim:run, its keys checked and the --set
 * overrides of stage parameters applied, the run's summary returned
 * (docs/lua-api.md). */
#include "lua_sim.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    if (!ls_field(L, t, "formats"))
        return 0;
    int f = lua_gettop(L);
    if (lua_type(L, f) == LUA_TSTRING)
        fmt = parse_format(L, f);
    else if (lua_type(L, f) == LUA_TTABLE) {
        int n = ls_check_array(L, f, RFN, "'formats'");
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
    if (!ls_field(L, t, "attributes"))
        return;
    int f = lua_gettop(L);
    if (!lua_istable(L, f))
        luaL_error(L, RFN ": 'attributes' must be a list of attribute names");
    int n = ls_check_array(L, f, RFN, "'attributes'");
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
    ls_check_keys(L, t, RFN, RUN_KEYS);
    d->frames = ls_field_int(L, t, RFN, "frames", d->frames, 0, 100000000);
    d->fps = ls_field_pos(L, t, RFN, "fps", d->fps, 1e6);
    d->end_time = ls_field_pos(L, t, RFN, "end_time", d->end_time, 1e9);
    d->dt = ls_field_pos(L, t, RFN, "dt", d->dt, 10);
    d->cfl = ls_field_pos(L, t, RFN, "cfl", d->cfl, 1);
    d->dt_max = ls_field_pos(L, t, RFN, "dt_max", d->dt_max, 10);
    d->out_dir = ls_field_str(L, t, RFN, "out", d->out_dir);
    d->name = ls_field_str(L, t, RFN, "name", d->name);
    if (d->name && strchr(d->name, '/'))
        luaL_error(L, RFN ": 'name' must be a file base name without '/'");
    d->formats = run_formats(L, t);
    run_attrs(L, t, a);
    d->progress = ls_field_bool(L, t, RFN, "progress", d->progress);
    d->checkpoint_every = ls_field_int(L, t, RFN, "checkpoint_every", d->checkpoint_every, 0, 100000000);
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
        size_t kl = ls_set_key_len(kv);
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
    ls_set_int(L, "frames", sum->frames);
    ls_set_int(L, "steps", (lua_Integer)sum->steps);
    ls_set_num(L, "sim_time", sum->sim_time);
    ls_set_num(L, "wall_s", sum->wall_s);
    ls_set_num(L, "particle_steps_per_s", sum->particle_steps_per_s);
    ls_set_int(L, "status", sum->status);
    lua_createtable(L, 0, sum->nstages);
    for (int i = 0; i < sum->nstages && i < MAX_STAGES; i++)
        ls_set_num(L, sum->stage_name[i], sum->stage_ms[i]);
    lua_setfield(L, -2, "stages");
    return 1;
}

static int run_exec(lua_State *L, lsim *s, scene_state *sc, floe_run_def *def)
{
    floe_run_summary sum;
    memset(&sum, 0, sizeof sum);
    s->host = sc && sc->opt->on_frame ? sc->opt : NULL;
    def->on_frame = s->frame_ref != LUA_NOREF || s->host ? ls_frame_cb : NULL;
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
    ls_unref(L, &s->self_ref);
    summary_out(sc, &sum);
    if (rc != FLOE_OK && sc)
        sc->status = rc;
    if (s->cb_err_ref != LUA_NOREF) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, s->cb_err_ref);
        ls_unref(L, &s->cb_err_ref);
        if (rc != FLOE_ERR_INTERRUPT && rc != FLOE_ERR_TIMEOUT) /* else the stop is the news */
            return lua_error(L);
        lua_pop(L, 1);
    }
    if (rc != FLOE_OK)
        return luaL_error(L, RFN ": %s", floe_ctx_error(s->ctx));
    return push_summary(L, &sum);
}

int ls_m_run(lua_State *L)
{
    lsim *s = ls_check_idle(L, RFN);
    if (lua_isnoneornil(L, 2)) {
        lua_settop(L, 1);
        lua_newtable(L);
    }
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_settop(L, 2);
    scene_state *sc = ls_scene_get(L);
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
