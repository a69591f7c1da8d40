/* Terrain in scenes: sim:terrain{...} and sim:terrain_height(x, z)
 * (docs/terrain.md, docs/lua-api.md). Every key is checked and the height
 * map read before the sim changes; errors name the file and, through
 * luaL_error, the scene line.
 *
 *   sim:terrain{ file = "dem.png", cell = 0.05, scale = 0.001, base = 0,
 *                origin = {x0, z0}, row = 64 }       -- a 16-bit grey PNG
 *   sim:terrain{ height = function(x, z) return ... end, cell = 0.05,
 *                size = {nx, nz}, origin = {x0, z0} } -- heights from Lua
 *
 * Pixel (column i, row j) of the image is the sample at
 * x = x0 + i cell, z = z0 + j cell (row 0, a map's north edge, at z0), its
 * height base + scale * value. In 2D the terrain is the profile of one
 * image row (`row`, by default the middle one), or height(x). */
#include "heightmap.h"

#include "floe/terrain.h"

#include <lauxlib.h>
#include <lua.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

int floe_lua_terrain(lua_State *L, floe_ctx *ctx);
int floe_lua_terrain_height(lua_State *L, floe_ctx *ctx);

static const char *const TERRAIN_KEYS[] = {"file", "height", "cell", "scale", "base", "origin", "row", "size", NULL};

static void terrain_keys(lua_State *L, int t)
{
    lua_pushnil(L);
    while (lua_next(L, t)) {
        lua_pop(L, 1);
        int ok = 0;
        for (const char *const *k = TERRAIN_KEYS; *k && !ok; k++)
            ok = lua_type(L, -1) == LUA_TSTRING && strcmp(lua_tostring(L, -1), *k) == 0;
        if (!ok)
            luaL_error(L, "sim:terrain: unknown key '%s' (accepted: file, height, cell, scale, base, origin, row, "
                          "size)", luaL_tolstring(L, -1, NULL));
    }
}

static double tnum(lua_State *L, int t, const char *key, double def, int required)
{
    int type = lua_getfield(L, t, key);
    double v = def;
    if (type == LUA_TNIL && required)
        luaL_error(L, "sim:terrain: '%s' is required", key);
    if (type != LUA_TNIL) {
        if (type != LUA_TNUMBER || !isfinite(lua_tonumber(L, -1)))
            luaL_error(L, "sim:terrain: '%s' must be a finite number (got %s)", key, luaL_typename(L, -1));
        v = lua_tonumber(L, -1);
    }
    lua_pop(L, 1);
    return v;
}

/* t[key] as {a, b} of finite numbers; 0 when absent */
static int tpair(lua_State *L, int t, const char *key, double out[2])
{
    if (lua_getfield(L, t, key) == LUA_TNIL) {
        lua_pop(L, 1);
        return 0;
    }
    if (!lua_istable(L, -1) || lua_rawlen(L, -1) != 2)
        luaL_error(L, "sim:terrain: '%s' must be a pair {a, b}", key);
    for (int k = 0; k < 2; k++) {
        if (lua_rawgeti(L, -1, k + 1) != LUA_TNUMBER || !isfinite(lua_tonumber(L, -1)))
            luaL_error(L, "sim:terrain: '%s' must hold 2 finite numbers", key);
        out[k] = lua_tonumber(L, -1);
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return 1;
}

/* heights from the image: all of it in 3D, one row in 2D */
static float *from_png(lua_State *L, int t, int dim, uint32_t *nx, uint32_t *nz)
{
    const char *file = (lua_getfield(L, t, "file"), lua_tostring(L, -1));
    if (!file || lua_type(L, -1) != LUA_TSTRING)
        luaL_error(L, "sim:terrain: 'file' must be a path to a 16-bit greyscale PNG");
    lua_pop(L, 1); /* the string stays alive in the argument table */
    double scale = tnum(L, t, "scale", 1, 0), base = tnum(L, t, "base", 0, 0);
    if (!(scale > 0))
        luaL_error(L, "sim:terrain: 'scale' (metres per height unit of %s) must be positive, got %f", file, scale);
    char err[1024];
    uint16_t *px;
    uint32_t w, h;
    if (hm_read_png16(file, &px, &w, &h, err, sizeof err))
        luaL_error(L, "sim:terrain: %s", err);
    uint32_t r0 = 0, rows = h;
    if (dim == 2) {
        double row = tnum(L, t, "row", floor(h / 2.0), 0);
        if (row < 0 || row >= h || row != floor(row)) {
            free(px);
            luaL_error(L, "sim:terrain: 'row' must be an image row 0..%u of %s, got %f", h - 1, file, row);
        }
        r0 = (uint32_t)row;
        rows = 1;
    }
    float *hf = malloc((size_t)w * rows * sizeof(float));
    if (!hf) {
        free(px);
        luaL_error(L, "sim:terrain: out of memory for %s", file);
    }
    for (size_t k = 0; k < (size_t)w * rows; k++)
        hf[k] = (float)(base + scale * px[(size_t)r0 * w + k]);
    free(px);
    *nx = w;
    *nz = rows;
    return hf;
}

/* heights from a Lua function height(x, z) (2D: height(x)) */
static float *from_function(lua_State *L, int t, int dim, double cell, const double o[2], uint32_t *nx, uint32_t *nz)
{
    double sz[2];
    if (!tpair(L, t, "size", sz))
        luaL_error(L, "sim:terrain: a height function needs size = {nx, nz} (samples; nz = 1 in 2D)");
    if (sz[0] < 2 || sz[1] < 1 || sz[0] != floor(sz[0]) || sz[1] != floor(sz[1]) || sz[0] * sz[1] > 1 << 26)
        luaL_error(L, "sim:terrain: size must be whole numbers nx >= 2, nz >= 1 with nx nz <= 2^26");
    if (dim == 2 && sz[1] != 1)
        luaL_error(L, "sim:terrain: a 2D terrain is one profile: size = {nx, 1}");
    *nx = (uint32_t)sz[0];
    *nz = (uint32_t)sz[1];
    float *hf = malloc((size_t)*nx * *nz * sizeof(float));
    if (!hf)
        luaL_error(L, "sim:terrain: out of memory");
    lua_getfield(L, t, "height");
    for (uint32_t j = 0; j < *nz; j++)
        for (uint32_t i = 0; i < *nx; i++) {
            lua_pushvalue(L, -1);
            lua_pushnumber(L, o[0] + i * cell);
            lua_pushnumber(L, o[1] + j * cell);
            if (lua_pcall(L, 2, 1, 0) != LUA_OK) {
                free(hf);
                lua_error(L);
            }
            if (lua_type(L, -1) != LUA_TNUMBER || !isfinite(lua_tonumber(L, -1))) {
                free(hf);
                luaL_error(L, "sim:terrain: height(%f, %f) returned %s, not a finite number", o[0] + i * cell,
                           o[1] + j * cell, luaL_typename(L, -1));
            }
            hf[(size_t)j * *nx + i] = (float)lua_tonumber(L, -1);
            lua_pop(L, 1);
        }
    lua_pop(L, 1);
    return hf;
}

int floe_lua_terrain(lua_State *L, floe_ctx *ctx)
{
    luaL_checktype(L, 2, LUA_TTABLE);
    terrain_keys(L, 2);
    const int dim = floe_ctx_info(ctx)->dim;
    const int has_file = lua_getfield(L, 2, "file") != LUA_TNIL;
    const int has_fn = lua_getfield(L, 2, "height") == LUA_TFUNCTION;
    const int has_height = lua_type(L, -1) != LUA_TNIL;
    lua_pop(L, 2);
    if (has_file == has_height)
        luaL_error(L, "sim:terrain: give either file = (a 16-bit greyscale PNG) or height = (a function)");
    if (has_height && !has_fn)
        luaL_error(L, "sim:terrain: 'height' must be a function height(x, z)");
    const double cell = tnum(L, 2, "cell", 0, 1);
    if (!(cell > 0))
        luaL_error(L, "sim:terrain: 'cell' (metres between samples) must be positive, got %f", cell);
    double o[2] = {0, 0};
    tpair(L, 2, "origin", o);
    uint32_t nx, nz;
    float *hf = has_file ? from_png(L, 2, dim, &nx, &nz) : from_function(L, 2, dim, cell, o, &nx, &nz);
    int rc = hm_terrain_set(ctx, nx, nz, hf, (float)cell, (float)o[0], (float)o[1]);
    float lo = hf[0], hi = hf[0];
    for (size_t k = 1; k < (size_t)nx * nz; k++) {
        lo = hf[k] < lo ? hf[k] : lo;
        hi = hf[k] > hi ? hf[k] : hi;
    }
    free(hf);
    if (rc)
        luaL_error(L, "sim:terrain: %s", floe_ctx_error(ctx));
    /* what a scene needs to place its domain and water: extent and heights */
    lua_createtable(L, 0, 6);
    lua_pushinteger(L, nx);
    lua_setfield(L, -2, "nx");
    lua_pushinteger(L, nz);
    lua_setfield(L, -2, "nz");
    lua_pushnumber(L, lo);
    lua_setfield(L, -2, "min_height");
    lua_pushnumber(L, hi);
    lua_setfield(L, -2, "max_height");
    lua_createtable(L, 2, 0);
    lua_pushnumber(L, o[0] + (nx - 1) * cell);
    lua_rawseti(L, -2, 1);
    lua_pushnumber(L, o[1] + (nz - 1) * cell);
    lua_rawseti(L, -2, 2);
    lua_setfield(L, -2, "max");
    lua_createtable(L, 2, 0);
    lua_pushnumber(L, o[0]);
    lua_rawseti(L, -2, 1);
    lua_pushnumber(L, o[1]);
    lua_rawseti(L, -2, 2);
    lua_setfield(L, -2, "min");
    return 1;
}

/* sim:terrain_height(x, z): the bilinear height there (z ignored in 2D) */
int floe_lua_terrain_height(lua_State *L, floe_ctx *ctx)
{
    const double x = luaL_checknumber(L, 2), z = luaL_optnumber(L, 3, 0);
    floe_grid_info gi;
    floe_terrain t = {0};
    if (floe_grid_get_info(ctx, floe_grid_find(ctx, FLOE_TERRAIN_GRID), &gi) || floe_terrain_view(&gi, &t))
        luaL_error(L, "sim:terrain_height: the sim has no terrain (sim:terrain{...} first)");
    lua_pushnumber(L, floe_terrain_height(&t, (float)x, (float)z, NULL, NULL));
    return 1;
}

/* sim:lake{ level = y, min = {x0, z0}, max = {x1, z1}, set = "fluid",
 * density = 1000 }: water at rest on the terrain up to `level`: columns
 * on the lattice of the spacing in x and z, each filled from half a
 * spacing above its ground (where terrain.collide keeps particles) up to
 * the level. Returns the particles added. In 2D min and max are x only. */
#include "geometry.h"

int floe_lua_lake(lua_State *L, floe_ctx *ctx);

int floe_lua_lake(lua_State *L, floe_ctx *ctx)
{
    luaL_checktype(L, 2, LUA_TTABLE);
    static const char *const keys[] = {"level", "min", "max", "set", "density", NULL};
    lua_pushnil(L);
    while (lua_next(L, 2)) {
        lua_pop(L, 1);
        int ok = 0;
        for (const char *const *k = keys; *k && !ok; k++)
            ok = lua_type(L, -1) == LUA_TSTRING && strcmp(lua_tostring(L, -1), *k) == 0;
        if (!ok)
            luaL_error(L, "sim:lake: unknown key '%s' (accepted: level, min, max, set, density)",
                       luaL_tolstring(L, -1, NULL));
    }
    const floe_sim_info *si = floe_ctx_info(ctx);
    const int dim = si->dim;
    floe_grid_info gi;
    floe_terrain t = {0};
    if (floe_grid_get_info(ctx, floe_grid_find(ctx, FLOE_TERRAIN_GRID), &gi) || floe_terrain_view(&gi, &t))
        luaL_error(L, "sim:lake: the sim has no terrain (sim:terrain{...} first)");
    const double level = tnum(L, 2, "level", 0, 1), rho = tnum(L, 2, "density", 1000, 0);
    double lo[2] = {0, 0}, hi[2] = {0, 0};
    if (dim == 3) {
        if (!tpair(L, 2, "min", lo) || !tpair(L, 2, "max", hi))
            luaL_error(L, "sim:lake: min = {x, z} and max = {x, z} are required");
    } else {
        lo[0] = tnum(L, 2, "min", 0, 1);
        hi[0] = tnum(L, 2, "max", 0, 1);
    }
    if (!(hi[0] > lo[0]) || (dim == 3 && !(hi[1] > lo[1])) || !(rho > 0))
        luaL_error(L, "sim:lake: max must exceed min, density be positive");
    lua_getfield(L, 2, "set");
    const char *name = luaL_optstring(L, -1, "fluid");
    floe_set set = floe_set_find(ctx, name);
    if (!set.id && !(set = floe_set_create(ctx, name, FLOE_SET_FLUID, (float)rho)).id)
        luaL_error(L, "sim:lake: %s", floe_ctx_error(ctx));
    lua_pop(L, 1);
    pset *p;
    if (geom_check_set(ctx, set, FLOE_SET_FLUID, "sim:lake", &p))
        luaL_error(L, "%s", floe_ctx_error(ctx));
    const double d = si->spacing;
    const long nx = (long)floor((hi[0] - lo[0]) / d), nz = dim == 3 ? (long)floor((hi[1] - lo[1]) / d) : 1;
    size_t cap = 4096, n = 0;
    float *pos = malloc(cap * 3 * sizeof(float));
    if (!pos)
        luaL_error(L, "sim:lake: out of memory");
    for (long j = 0; j < nz; j++)
        for (long i = 0; i < nx; i++) {
            const float x = (float)(lo[0] + (i + 0.5) * d), z = dim == 3 ? (float)(lo[1] + (j + 0.5) * d) : 0.0f;
            const double ground = floe_terrain_height(&t, x, z, NULL, NULL);
            for (double y = ground + 0.5 * d; y <= level - 0.5 * d + 1e-9; y += d) {
                if (n == cap) {
                    float *q = realloc(pos, 2 * cap * 3 * sizeof(float));
                    if (!q) {
                        free(pos);
                        luaL_error(L, "sim:lake: out of memory");
                    }
                    pos = q;
                    cap *= 2;
                }
                pos[3 * n] = x, pos[3 * n + 1] = (float)y, pos[3 * n + 2] = z;
                n++;
            }
        }
    long added = n ? geom_append(ctx, set, p, pos, (uint32_t)n, NULL) : 0;
    free(pos);
    if (added < 0)
        luaL_error(L, "sim:lake: %s", floe_ctx_error(ctx));
    lua_pushinteger(L, added);
    return 1;
}
