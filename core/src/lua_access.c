/* The `floe` Lua module: slow access to particles from Lua (Lua stages,
 * tests): sim:count, sim:reduce, sim:remove_set, sim:get, sim:set and
 * sim:info (docs/lua-api.md). */
#include "lua_sim.h"
#include "decomp.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- slow access (Lua stages, tests) ------------------------------------ */

static floe_set arg_set(lua_State *L, lsim *s, const char *fn)
{
    const char *name = luaL_checkstring(L, 2);
    floe_set set = floe_set_find(s->ctx, name);
    if (!set.id)
        luaL_error(L, "%s: no particle set '%s'", fn, name);
    return set;
}

int ls_m_count(lua_State *L)
{
    lsim *s = ls_check_sim(L);
    lua_pushinteger(L, floe_set_size(s->ctx, arg_set(L, s, "sim:count")));
    return 1;
}

/* sim:reduce("sum"|"max"|"min", a, b, ...): the numbers reduced over every
 * rank under MPI (each rank's own particles summed into one figure), as
 * they are in one process; every rank must call it at the same point */
int ls_m_reduce(lua_State *L)
{
    lsim *s = ls_check_sim(L);
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
int ls_m_remove_set(lua_State *L)
{
    lsim *s = ls_check_idle(L, "sim:remove_set");
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

int ls_m_get(lua_State *L)
{
    lsim *s = ls_check_sim(L);
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

int ls_m_set(lua_State *L)
{
    lsim *s = ls_check_sim(L);
    attr_ref r = arg_attr(L, s, "sim:set");
    if (r.type == FLOE_VEC3) {
        int n = lua_gettop(L) - 4;
        if (!(n == 3 || (s->dim == 2 && n == 2)))
            return luaL_error(L, "sim:set: a vector attribute takes %s numbers (got %d)", s->dim == 2 ? "2 or 3" : "3", n);
        float v[3] = {0, 0, 0};
        for (int k = 0; k < n; k++)
            v[k] = (float)ls_to_finite(L, 5 + k, "sim:set", "a component");
        memcpy((float *)r.data + 3 * r.i, v, sizeof v);
        /* a moved particle: the core's sort of its set (kept for a static
         * set) and, for walls, the boundary volumes are stale now */
        if (strcmp(r.name, "x") == 0)
            floe_set_moved(s->ctx, r.set);
    } else if (r.type == FLOE_F32)
        ((float *)r.data)[r.i] = (float)ls_to_finite(L, 5, "sim:set", "the value");
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

int ls_m_info(lua_State *L)
{
    const floe_sim_info *in = floe_ctx_info(ls_check_sim(L)->ctx);
    lua_createtable(L, 0, 10);
    ls_set_int(L, "dim", in->dim);
    ls_set_num(L, "spacing", in->spacing);
    ls_set_num(L, "support", in->support);
    ls_set_num(L, "time", in->time);
    ls_set_int(L, "step", (lua_Integer)in->step);
    ls_set_num(L, "dt", in->dt);
    ls_set_int(L, "threads", in->threads);
    set_vec(L, "gravity", in->gravity);
    lua_createtable(L, 0, 2);
    set_vec(L, "min", in->domain_min);
    set_vec(L, "max", in->domain_max);
    lua_setfield(L, -2, "domain");
    return 1;
}
