/* OpenCL backend: a frame's statistics of a fluid set (the run record's
 * kinetic and potential energy, mean and largest density error) reduced on
 * the device (kernels/core/stats.cl): 16 bytes per 256 particles come back
 * instead of every attribute of the set, so a run on the device copies
 * the particles to the host only for what writes them (frame files). */
#include "state.h"

#include <stdlib.h>

#define STATS_WG 256 /* stats.cl */

int cl_frame_stats(floe_ctx *ctx, pset *p, double out[4])
{
    out[0] = out[1] = out[2] = out[3] = 0;
    const int s = (int)(p - ctx->sets);
    const uint32_t n = p->n;
    if (!n)
        return FLOE_OK;
    cl_mem x = cl_attr_named(ctx, s, "x", FLOE_VEC3, FLOE_READ), v = cl_attr_named(ctx, s, "v", FLOE_VEC3, FLOE_READ);
    cl_mem m = cl_attr_named(ctx, s, "m", FLOE_F32, FLOE_READ), rho = cl_attr_named(ctx, s, "rho", FLOE_F32, FLOE_READ);
    const size_t groups = (n + STATS_WG - 1) / STATS_WG, bytes = groups * 4 * sizeof(float);
    cl_mem sums = cl_scratch(ctx, "core.frame_stats", bytes);
    if (!x || !v || !m || !rho || !sums)
        return FLOE_ERR;
    const float *g = ctx->info.gravity, *lo = ctx->info.domain_min;
    cl_float4 g4 = {{g[0], g[1], g[2], 0}}, lo4 = {{lo[0], lo[1], lo[2], 0}};
    cl_float rho0 = p->rest_density > 0 ? p->rest_density : 1;
    cl_uint nn = n;
    int rc = LAUNCH(cl_core_kernel(ctx, "stats.cl", "frame_sums"), n, STATS_WG, 36.0 * n, ARG(nn), ARG(x), ARG(v),
                    ARG(m), ARG(rho), ARG(g4), ARG(lo4), ARG(rho0), ARG(sums));
    if (rc)
        return rc;
    float *host = cl_pinned(ctx, "core.frame_stats", bytes), *own = NULL;
    if (!host && !(host = own = malloc(bytes)))
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "frame statistics: out of memory");
    cl_int e = F->clEnqueueReadBuffer(CL->q, sums, CL_TRUE, 0, bytes, host, 0, NULL, NULL);
    if (e != CL_SUCCESS) {
        free(own);
        return cl_err(ctx, e, "reading the frame statistics");
    }
    for (size_t k = 0; k < groups; k++) {
        out[0] += host[4 * k];
        out[1] += host[4 * k + 1];
        out[2] += host[4 * k + 2];
        out[3] = host[4 * k + 3] > out[3] ? host[4 * k + 3] : out[3];
    }
    free(own);
    return FLOE_OK;
}
