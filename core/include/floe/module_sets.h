/* Helpers for a module's C stages (header only: modules link against no
 * core symbol, so everything goes through the floe_api table passed in).
 * Part of the kit for particle modules (<floe/sph.h>).
 *
 *   floe_fluid f[FLOE_MAX_SETS]; int nf; size_t total;
 *   if ((st = floe_fluid_sets(api, ctx, f, &nf, &total))) return st;
 *   const float *x = floe_need_read(api, ctx, f[0].set, f[0].info.name, "x", FLOE_VEC3, &st);
 *   if (floe_name_listed(call->param[P_SETS].s, f[0].info.name)) ...   (a list of set names)
 *   if (floe_grow((void **)&s->buf, &s->cap, n, sizeof *s->buf)) ...        (a growing array)
 */
#ifndef FLOE_MODULE_SETS_H
#define FLOE_MODULE_SETS_H

#include <floe/module.h>

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define FLOE_MODULE_MAX_SETS FLOE_MAX_SETS /* an older name of <floe/types.h>'s limit */

/* A fluid set, its info, and its offset when all fluid sets' particles are
 * laid end to end (per-particle module scratch covering every set). */
typedef struct floe_fluid {
    floe_set set;
    floe_set_info info;
    size_t off;
} floe_fluid;

/* Every fluid set (empty ones too), at most FLOE_MAX_SETS; a set
 * without a positive rest density is an error naming it. total (if not
 * NULL) gets the particles of all of them. */
static inline int floe_fluid_sets(const floe_api *api, floe_ctx *ctx, floe_fluid *f, int *nf, size_t *total)
{
    floe_set sets[FLOE_MAX_SETS];
    *nf = 0;
    if (total)
        *total = 0;
    int n = api->set_list(ctx, FLOE_SET_FLUID, sets, FLOE_MAX_SETS);
    if (n < 0)
        return api->fail(ctx, FLOE_ERR, "cannot list fluid sets");
    if (n > FLOE_MAX_SETS)
        return api->fail(ctx, FLOE_ERR_ARG, "%d fluid sets, at most %d supported", n, FLOE_MAX_SETS);
    size_t off = 0;
    for (int s = 0; s < n; s++) {
        f[s].set = sets[s];
        if (api->set_info(ctx, sets[s], &f[s].info) != FLOE_OK)
            return api->fail(ctx, FLOE_ERR, "fluid set %d: no info", s);
        if (!(f[s].info.rest_density > 0.0f))
            return api->fail(ctx, FLOE_ERR_ARG, "fluid set '%s': rest density must be > 0", f[s].info.name);
        f[s].off = off;
        off += f[s].info.n;
    }
    *nf = n;
    if (total)
        *total = off;
    return FLOE_OK;
}

/* Room for `need` elements of `elem` bytes in the array *p of *cap
 * elements, grown with realloc (doubling from 1024); 0, or -1 when out of
 * memory (*p and *cap unchanged). */
static inline int floe_grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 1024;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, n * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = n;
    return 0;
}

/* Is `name` one of the comma-separated names of `list` (a stage's "sets"
 * parameter, "water,ice")? An empty list names none; names match whole. */
static inline int floe_name_listed(const char *list, const char *name)
{
    size_t l = strlen(name);
    for (const char *c = list; *c;) {
        const char *comma = strchr(c, ',');
        size_t cl = comma ? (size_t)(comma - c) : strlen(c);
        if (cl == l && strncmp(c, name, l) == 0)
            return 1;
        c = comma ? comma + 1 : c + cl;
    }
    return 0;
}

/* An attribute's host data (api->attr: on the OpenCL backend a write
 * unless the running stage declared it FLOE_READ only); when absent,
 * *status (if still FLOE_OK) becomes an error naming the set, the type and
 * the attribute. floe_need_read is the const view (api->attr_read, ABI
 * 1.8) of what a stage only reads. */
static inline const float *floe_need_in(const floe_api *api, floe_ctx *ctx, floe_set set, const char *set_name,
                                        const char *attr, floe_type type, int *status, int read_only)
{
    const float *p = read_only ? (const float *)api->attr_read(ctx, set, attr, type)
                               : (const float *)api->attr(ctx, set, attr, type);
    if (!p && *status == FLOE_OK)
        *status = api->fail(ctx, FLOE_ERR_ARG, "set '%s' has no %s attribute '%s'", set_name,
                            type == FLOE_VEC3 ? "vec3" : "f32", attr);
    return p;
}

static inline const float *floe_need(const floe_api *api, floe_ctx *ctx, floe_set set, const char *set_name,
                                     const char *attr, floe_type type, int *status)
{
    return floe_need_in(api, ctx, set, set_name, attr, type, status, 0);
}

static inline const float *floe_need_read(const floe_api *api, floe_ctx *ctx, floe_set set, const char *set_name,
                                          const char *attr, floe_type type, int *status)
{
    return floe_need_in(api, ctx, set, set_name, attr, type, status, 1);
}

#endif
