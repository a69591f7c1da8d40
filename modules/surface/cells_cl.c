/* The particles' cell sort on the OpenCL device (kernels/surface/cells.cl
 * with the core's api->cl_sort and api->cl_scan): the arrays of field.c's
 * cells_build, in the same order, from positions already on the device,
 * with nothing read back. The host's radix sort orders a compact key made
 * from the cells' actual range; the device's key is made from a bound of
 * it (the span the host passes), in the same (z, y, x) order, and both
 * sorts are stable, so the entries come out alike. */
#include "surface.h"

#include <floe/cl_module.h>

#include <limits.h>
#include <math.h>

int cells_build_cl(floe_ctx *ctx, void *pos, uint32_t stride, uint32_t n, double r, const double span[3],
                   cells_dev *cd)
{
    const double h = r / CELL_DIV, inv = 1.0 / h;
    cd->h = h;
    cd->inv = inv;
    cd->n = n;
    void *k0 = api->cl_kernel(ctx, "surface", "cells.cl", "cells_min");
    void *k1 = k0 ? api->cl_kernel(ctx, "surface", "cells.cl", "cells_keys") : NULL;
    void *k2 = k1 ? api->cl_kernel(ctx, "surface", "cells.cl", "cells_gather") : NULL;
    void *k3 = k2 ? api->cl_kernel(ctx, "surface", "cells.cl", "cells_compact") : NULL;
    floe_cl_fill_fn fill = floe_cl_fill_fn_of(api);
    if (!k3 || !fill)
        return k3 ? api->fail(ctx, FLOE_ERR, "the OpenCL runtime lacks clEnqueueFillBuffer") : FLOE_ERR;
    /* the cells of an axis: coordinates floor((x - lo) / h) with lo = min -
     * (CELL_DIV + 1) h, at most span / h + CELL_DIV + 2; a margin for the
     * rounding, and KEY_MASK + 1 at most (the host masks alike) */
    uint64_t nc[3];
    for (int d = 0; d < 3; d++) {
        const double c = floor(span[d] * inv) + 2 * CELL_DIV + 8;
        nc[d] = c < (double)KEY_MASK + 1 ? (uint64_t)c : (uint64_t)KEY_MASK + 1;
    }
    int bits = 0;
    while (bits < 64 && ((uint64_t)1 << bits) < nc[0] * nc[1] * nc[2])
        bits++;
    const size_t pad = (size_t)n + LANES, n1 = (size_t)n + 1;
    int rc = FLOE_OK;
    cd->X = surface_scratch(ctx, "surface.s0", pad * 4, &rc);
    cd->Y = surface_scratch(ctx, "surface.s1", pad * 4, &rc);
    cd->Z = surface_scratch(ctx, "surface.s2", pad * 4, &rc);
    cd->ckey = surface_scratch(ctx, "surface.s3", n1 * 8, &rc);
    cd->cell = surface_scratch(ctx, "surface.s4", n1 * 4, &rc);
    cd->key = surface_scratch(ctx, "surface.s5", (size_t)n * 8, &rc);
    cd->idx = surface_scratch(ctx, "surface.s6", (size_t)n * 4, &rc);
    cd->count = surface_scratch(ctx, "surface.s8", n1 * 4, &rc);
    cd->lo = surface_scratch(ctx, "surface.geo", 3 * sizeof(double), &rc);
    void *skey = surface_scratch(ctx, "surface.s9", (size_t)n * 8, &rc), *mins = surface_scratch(ctx, "surface.min", 16, &rc);
    if (rc)
        return rc;
    const int32_t big = INT_MAX;
    int32_t e = fill(api->cl_queue(ctx), mins, &big, sizeof big, 0, 3 * sizeof big, 0, NULL, NULL);
    if (e)
        return api->fail(ctx, FLOE_ERR, "OpenCL fill failed (error %d)", (int)e);
    const uint32_t np = n + LANES, n1u = n + 1;
    floe_cl_arg a0[] = {FLOE_CL_ARG(n), FLOE_CL_ARG(pos), FLOE_CL_ARG(stride), FLOE_CL_ARG(mins)};
    floe_cl_arg a1[] = {FLOE_CL_ARG(n),     FLOE_CL_ARG(pos),   FLOE_CL_ARG(stride), FLOE_CL_ARG(mins),
                        FLOE_CL_ARG(h),     FLOE_CL_ARG(inv),   FLOE_CL_ARG(nc[0]),  FLOE_CL_ARG(nc[1]),
                        FLOE_CL_ARG(skey),  FLOE_CL_ARG(cd->idx), FLOE_CL_ARG(cd->lo)};
    floe_cl_arg a2[] = {FLOE_CL_ARG(n),      FLOE_CL_ARG(pos),    FLOE_CL_ARG(stride), FLOE_CL_ARG(cd->lo),
                        FLOE_CL_ARG(inv),    FLOE_CL_ARG(skey),   FLOE_CL_ARG(cd->idx), FLOE_CL_ARG(cd->X),
                        FLOE_CL_ARG(cd->Y),  FLOE_CL_ARG(cd->Z),  FLOE_CL_ARG(cd->key), FLOE_CL_ARG(cd->count)};
    floe_cl_arg a3[] = {FLOE_CL_ARG(n), FLOE_CL_ARG(cd->key), FLOE_CL_ARG(cd->count), FLOE_CL_ARG(cd->ckey),
                        FLOE_CL_ARG(cd->cell)};
    if (n && (rc = api->cl_run(ctx, k0, n, 4, a0, 4.0 * stride * n)))
        return rc;
    if (n && (rc = api->cl_run(ctx, k1, n, 11, a1, 24.0 * n)))
        return rc;
    if ((rc = api->cl_sort(ctx, skey, cd->idx, n, bits)))
        return rc;
    if ((rc = api->cl_run(ctx, k2, np, 12, a2, 40.0 * n)) || (rc = api->cl_scan(ctx, cd->count, n1u)))
        return rc;
    return api->cl_run(ctx, k3, n1u, 5, a3, 24.0 * n);
}
