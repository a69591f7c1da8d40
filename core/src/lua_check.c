/* The `floe` Lua module: the checks of a call's arguments (lua_sim.h).
 * Every function of the module checks all of its arguments before it
 * changes anything: unknown table keys are refused, naming the accepted
 * ones (and the nearest, "did you mean"), numbers must be finite and
 * within range, vectors have the sim's dimension; errors are raised with
 * luaL_error from the C function the scene called, so they read
 * "scene.lua:LINE: ...". */
#include "lua_sim.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- argument checking -------------------------------------------------- */

int ls_in_list(const char *s, const char *const *list)
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
void ls_check_keys(lua_State *L, int t, const char *fn, const char *const *keys)
{
    lua_pushnil(L);
    while (lua_next(L, t)) {
        lua_pop(L, 1);
        if (lua_type(L, -1) == LUA_TSTRING && ls_in_list(lua_tostring(L, -1), keys))
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
int ls_check_array(lua_State *L, int t, const char *fn, const char *what)
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

double ls_to_finite(lua_State *L, int idx, const char *fn, const char *what)
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
void ls_read_vec(lua_State *L, int idx, int dim, const char *fn, const char *what, double out[3])
{
    idx = lua_absindex(L, idx);
    if (lua_type(L, idx) != LUA_TTABLE)
        luaL_error(L, "%s: %s must be a vector {x, y%s} (got %s)", fn, what, dim == 2 ? "" : ", z",
                   luaL_typename(L, idx));
    int n = ls_check_array(L, idx, fn, what);
    if (!(n == 3 || (dim == 2 && n == 2)))
        luaL_error(L, "%s: %s must have %s entries (got %d)", fn, what, dim == 2 ? "2 or 3" : "3", n);
    out[2] = 0;
    for (int k = 0; k < n; k++) {
        lua_rawgeti(L, idx, k + 1);
        out[k] = ls_to_finite(L, -1, fn, what);
        lua_pop(L, 1);
    }
}

/* Pushes t[key]; returns 0 (and pushes nothing) when absent. */
int ls_field(lua_State *L, int t, const char *key)
{
    if (lua_getfield(L, t, key) != LUA_TNIL)
        return 1;
    lua_pop(L, 1);
    return 0;
}

/* A finite number t[key] into *out; returns 0 (out untouched) when absent. */
static int get_num(lua_State *L, int t, const char *fn, const char *key, double *out)
{
    if (!ls_field(L, t, key))
        return 0;
    char what[80];
    snprintf(what, sizeof what, "'%s'", key);
    *out = ls_to_finite(L, -1, fn, what);
    lua_pop(L, 1);
    return 1;
}

double ls_field_num(lua_State *L, int t, const char *fn, const char *key, double def, double lo, double hi)
{
    double v = def;
    if (get_num(L, t, fn, key, &v) && (v < lo || v > hi))
        luaL_error(L, "%s: '%s' = %f is out of range [%f, %f]", fn, key, (lua_Number)v, (lua_Number)lo,
                   (lua_Number)hi);
    return v;
}

/* A number in (0, hi] when present, def when absent. */
double ls_field_pos(lua_State *L, int t, const char *fn, const char *key, double def, double hi)
{
    double v = def;
    if (get_num(L, t, fn, key, &v) && !(v > 0 && v <= hi))
        luaL_error(L, "%s: '%s' = %f is out of range (0, %f]", fn, key, (lua_Number)v, (lua_Number)hi);
    return v;
}

int ls_field_int(lua_State *L, int t, const char *fn, const char *key, int def, int lo, int hi)
{
    if (!ls_field(L, t, key))
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

int ls_field_bool(lua_State *L, int t, const char *fn, const char *key, int def)
{
    if (!ls_field(L, t, key))
        return def;
    if (lua_type(L, -1) != LUA_TBOOLEAN)
        luaL_error(L, "%s: '%s' must be true or false (got %s)", fn, key, luaL_typename(L, -1));
    int v = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return v;
}

/* A non-empty string; the pointer stays valid while the table lives. */
const char *ls_field_str(lua_State *L, int t, const char *fn, const char *key, const char *def)
{
    if (!ls_field(L, t, key))
        return def;
    if (lua_type(L, -1) != LUA_TSTRING || lua_rawlen(L, -1) == 0)
        luaL_error(L, "%s: '%s' must be a non-empty string (got %s)", fn, key, luaL_typename(L, -1));
    const char *s = lua_tostring(L, -1);
    lua_pop(L, 1);
    return s;
}

int ls_field_vec(lua_State *L, int t, const char *fn, const char *key, int dim, float out[3])
{
    if (!ls_field(L, t, key))
        return 0;
    char what[80];
    double v[3];
    snprintf(what, sizeof what, "'%s'", key);
    ls_read_vec(L, -1, dim, fn, what, v);
    lua_pop(L, 1);
    for (int k = 0; k < 3; k++)
        out[k] = (float)v[k];
    return 1;
}

void ls_need_vec(lua_State *L, int t, const char *fn, const char *key, int dim, float out[3])
{
    if (!ls_field_vec(L, t, fn, key, dim, out))
        luaL_error(L, "%s: '%s' is required", fn, key);
}

void ls_check_box(lua_State *L, const char *fn, int dim, const float lo[3], const float hi[3])
{
    for (int k = 0; k < dim; k++)
        if (!(hi[k] > lo[k]))
            luaL_error(L, "%s: 'max' must be greater than 'min' on every axis (axis %d: %f >= %f)", fn, k + 1,
                       (lua_Number)lo[k], (lua_Number)hi[k]);
}
