/* terrain.carpet on the OpenCL backend: the z-image construction of
 * Kipfer & Westermann (kernels/terrain/carpet.cl). The particles stay on
 * the device; the z-image (one unsigned int per vertex) and the flow sums
 * (three floats per vertex), one buffer zeroed on the device, come back in
 * one read (into pinned memory where there is some), and the host finishes the carpet as
 * the C path does (tm_carpet_finish: landing or falling, depth, speed) and
 * writes its files. The heights equal the C path's (a max of the same
 * floats); the flow sums differ in their order of addition. */
#include "carpet.h"

#include <floe/cl_module.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef floe_cl_read_fn read_fn;

static float unordered(uint32_t u)
{
    uint32_t b = (u & 0x80000000u) ? (u & 0x7fffffffu) : ~u;
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

int tm_carpet_build_cl(tm_carpet *c, floe_ctx *ctx, const floe_terrain *t, const tm_carpet_par *par)
{
    const floe_sim_info *si = tm_api->sim(ctx);
    int rc = tm_carpet_layout(c, ctx, t, par->cell, si->dim);
    if (rc)
        return rc;
    floe_cl_fill_fn fill = floe_cl_fill_fn_of(tm_api);
    read_fn rd = floe_cl_read_fn_of(tm_api);
    void *ks = tm_api->cl_kernel(ctx, "terrain", "carpet.cl", "splat");
    void *kf = tm_api->cl_kernel(ctx, "terrain", "carpet.cl", "flow");
    if (!fill || !rd || !ks || !kf)
        return ks && kf ? tm_api->fail(ctx, FLOE_ERR, "the OpenCL runtime lacks buffer reads or fills") : FLOE_ERR;
    const size_t nv = (size_t)c->nx * c->nz;
    /* one device buffer: the z-image (nv words), then the flow sums (3 nv
     * floats), zeroed on the device (the z-image's 0 is below every float) */
    void *buf = tm_api->cl_scratch(ctx, "terrain.carpet", nv * 4 * sizeof(float));
    const uint32_t zero = 0;
    int32_t e = !buf ? -1 : fill(tm_api->cl_queue(ctx), buf, &zero, sizeof zero, 0, nv * 4 * sizeof(float), 0, NULL, NULL);
    if (e)
        return tm_api->fail(ctx, FLOE_ERR, "terrain.carpet: device buffers for %zu vertices (error %d)", nv, (int)e);
    floe_set sets[TM_MAX_SETS];
    int ns = tm_api->set_list(ctx, FLOE_SET_FLUID, sets, TM_MAX_SETS);
    if (ns > TM_MAX_SETS)
        return tm_api->fail(ctx, FLOE_ERR_ARG, "terrain.carpet: %d fluid sets, at most %d", ns, TM_MAX_SETS);
    float r = 0.5f * si->spacing, R = par->radius, x0 = c->x0, z0 = c->z0, cs = c->cs;
    int nx = c->nx, nz = c->nz;
    for (int pass = 0; pass < 2; pass++)
        for (int s = 0; s < ns; s++) {
            floe_set_info info;
            if (tm_api->set_info(ctx, sets[s], &info) || !info.n)
                continue;
            void *x = tm_api->cl_attr(ctx, sets[s], "x", FLOE_VEC3, FLOE_READ);
            void *v = tm_api->cl_attr(ctx, sets[s], "v", FLOE_VEC3, FLOE_READ);
            if (!x || !v)
                return tm_api->fail(ctx, FLOE_ERR_ARG, "terrain.carpet: a fluid set without x or v");
            uint32_t n = info.n;
            if (pass == 0) {
                floe_cl_arg a[] = {FLOE_CL_ARG(n), FLOE_CL_ARG(x), FLOE_CL_ARG(buf), FLOE_CL_ARG(r), FLOE_CL_ARG(R),
                                   FLOE_CL_ARG(x0), FLOE_CL_ARG(z0), FLOE_CL_ARG(cs), FLOE_CL_ARG(nx), FLOE_CL_ARG(nz)};
                rc = tm_api->cl_run(ctx, ks, n, (int)(sizeof a / sizeof *a), a, 12.0 * n);
            } else {
                uint32_t nvert = (uint32_t)nv;
                floe_cl_arg a[] = {FLOE_CL_ARG(n), FLOE_CL_ARG(x), FLOE_CL_ARG(v), FLOE_CL_ARG(buf), FLOE_CL_ARG(nvert),
                                   FLOE_CL_ARG(r), FLOE_CL_ARG(R), FLOE_CL_ARG(x0), FLOE_CL_ARG(z0), FLOE_CL_ARG(cs),
                                   FLOE_CL_ARG(nx), FLOE_CL_ARG(nz)};
                rc = tm_api->cl_run(ctx, kf, n, (int)(sizeof a / sizeof *a), a, 24.0 * n);
            }
            if (rc)
                return rc;
        }
    /* back in one read, into pinned memory where the runtime gives some:
     * the z-image decoded into top, the sums into the flow */
    const size_t bytes = nv * 4 * sizeof(float);
    uint32_t *back = tm_api->cl_pinned(ctx, "terrain.carpet", bytes), *own = NULL;
    if (!back && !(back = own = malloc(bytes)))
        return tm_api->fail(ctx, FLOE_ERR_NOMEM, "terrain.carpet: out of memory");
    e = rd(tm_api->cl_queue(ctx), buf, 1, 0, bytes, back, 0, NULL, NULL);
    if (e) {
        free(own);
        return tm_api->fail(ctx, FLOE_ERR, "terrain.carpet: reading the z-image back failed (error %d)", (int)e);
    }
    const float *sums = (const float *)(back + nv);
    const long nvl = (long)nv;
#pragma omp parallel for schedule(static)
    for (long k = 0; k < nvl; k++) {
        const uint32_t u = back[k];
        c->top[k] = u ? unordered(u) : -INFINITY;
        const float ws = sums[3 * k];
        c->fx[k] = ws > 0 ? sums[3 * k + 1] / ws : 0.0f;
        c->fz[k] = ws > 0 ? sums[3 * k + 2] / ws : 0.0f;
    }
    free(own);
    tm_carpet_finish(c, t, par);
    return FLOE_OK;
}
