/* Helpers for a module's OpenCL path (header only: modules do not link
 * against the core, so everything goes through the floe_api table passed
 * in). Used by the run_cl functions of wcsph, iisph, viscosity and tension.
 *
 *   floe_cl_set s[FLOE_CL_MAX_SETS]; int n;
 *   if ((st = floe_cl_sets(api, ctx, FLOE_SET_FLUID, s, &n))) return st;
 *   float kc[4], per[4]; floe_cl_consts(api->sim(ctx), kc, per);
 *   void *x = floe_cl_attr(api, ctx, &s[0], "x", FLOE_VEC3, FLOE_READ, &st);
 */
#ifndef FLOE_CL_MODULE_H
#define FLOE_CL_MODULE_H

#include <floe/kernel.h>
#include <floe/module.h>

#define FLOE_CL_MAX_SETS FLOE_MAX_SETS /* <floe/types.h> */

/* A particle set and its info, as the OpenCL glue passes them around. */
typedef struct floe_cl_set {
    floe_set set;
    floe_set_info info;
} floe_cl_set;

/* The non-empty sets of a kind, at most FLOE_CL_MAX_SETS; a fluid set
 * without a positive rest density is an error naming it. */
static inline int floe_cl_sets(const floe_api *api, floe_ctx *ctx, floe_set_kind kind, floe_cl_set *out, int *n)
{
    floe_set s[FLOE_CL_MAX_SETS];
    *n = 0;
    int k = api->set_list(ctx, kind, s, FLOE_CL_MAX_SETS);
    if (k < 0 || k > FLOE_CL_MAX_SETS)
        return api->fail(ctx, FLOE_ERR_ARG, "%d particle sets, at most %d supported", k, FLOE_CL_MAX_SETS);
    for (int i = 0; i < k; i++) {
        if (api->set_info(ctx, s[i], &out[*n].info) != FLOE_OK)
            return api->fail(ctx, FLOE_ERR, "particle set %d: no info", i);
        if (kind == FLOE_SET_FLUID && !(out[*n].info.rest_density > 0.0f))
            return api->fail(ctx, FLOE_ERR_ARG, "fluid set '%s': rest density must be > 0", out[*n].info.name);
        out[*n].set = s[i];
        if (out[*n].info.n > 0)
            (*n)++;
    }
    return FLOE_OK;
}

/* The kernel constants of kernels/core/sph.h: kc = (1/H, sigma/H,
 * (1e-6 H)^2, sigma), per = (period of each axis or 0, any periodic axis). */
static inline floe_kernel floe_cl_consts(const floe_sim_info *si, float kc[4], float per[4])
{
    floe_kernel k = floe_kernel_make(si->dim, si->support);
    kc[0] = k.inv_H;
    kc[1] = k.sigma * k.inv_H;
    kc[2] = (1e-6f * k.H) * (1e-6f * k.H);
    kc[3] = k.sigma;
    for (int d = 0; d < 3; d++)
        per[d] = (si->periodic & (1u << d)) ? si->period[d] : 0.0f;
    per[3] = si->periodic ? 1.0f : 0.0f;
    return k;
}

/* The device buffer of an attribute; when absent, *st (if still FLOE_OK)
 * becomes an error naming the set, the type and the attribute. */
static inline void *floe_cl_attr(const floe_api *api, floe_ctx *ctx, const floe_cl_set *s, const char *name,
                                 floe_type t, unsigned acc, int *st)
{
    void *m = api->cl_attr(ctx, s->set, name, t, acc);
    if (!m && *st == FLOE_OK)
        *st = api->fail(ctx, FLOE_ERR_ARG, "set '%s' has no %s attribute '%s' on the device", s->info.name,
                        t == FLOE_VEC3 ? "vec3" : "f32", name);
    return m;
}

#endif
