/* The OpenCL path of the surface stages: the colour field splat runs on the
 * device (kernels/surface/splat.cl), one work item per grid point over the
 * kernels listed for its block; the kernels' shapes (neighbourhoods,
 * eigen-decompositions) and the mesher stay on the host. The lists are
 * built as for the host splat; the kernels, lists and block coordinates go
 * up, the values come back. */
#include "surface.h"

#include <string.h>

typedef int32_t (*write_fn)(void *, void *, uint32_t, size_t, size_t, const void *, uint32_t, const void *, void *);
typedef int32_t (*read_fn)(void *, void *, uint32_t, size_t, size_t, void *, uint32_t, const void *, void *);

static int upload(floe_ctx *ctx, write_fn w, const char *name, const void *data, size_t bytes, void **buf)
{
    *buf = api->cl_scratch(ctx, name, bytes ? bytes : 4);
    if (!*buf)
        return api->fail(ctx, FLOE_ERR_NOMEM, "no device buffer of %zu bytes for %s", bytes, name);
    int32_t e = bytes && data ? w(api->cl_queue(ctx), *buf, 1, 0, bytes, data, 0, NULL, NULL) : 0;
    return e ? api->fail(ctx, FLOE_ERR, "OpenCL write of %s failed (error %d)", name, (int)e) : FLOE_OK;
}

int field_splat_cl(floe_ctx *ctx, sgrid *g, const kern *k, uint32_t n)
{
    write_fn w;
    read_fn r;
    void *pw = api->cl_fn("clEnqueueWriteBuffer"), *pr = api->cl_fn("clEnqueueReadBuffer");
    memcpy(&w, &pw, sizeof w);
    memcpy(&r, &pr, sizeof r);
    void *kernel = api->cl_kernel(ctx, "surface", "splat.cl", "splat");
    if (!w || !r || !kernel)
        return kernel ? api->fail(ctx, FLOE_ERR, "the OpenCL runtime lacks buffer reads or writes") : FLOE_ERR;
    splat_lists sl;
    int rc = splat_lists_build(g, k, n, &sl);
    if (rc) {
        splat_lists_free(g, &sl);
        return api->fail(ctx, rc, "out of memory for the grid (%d blocks)", g->nblocks);
    }
    void *bk, *bs, *bl, *bc, *bv;
    const size_t npts = (size_t)g->nblocks * BLOCK_PTS;
    if (!(rc = upload(ctx, w, "surface.kernels", k, (size_t)n * sizeof *k, &bk)) &&
        !(rc = upload(ctx, w, "surface.start", sl.start, sl.sb, &bs)) &&
        !(rc = upload(ctx, w, "surface.list", sl.list, sl.lb, &bl)) &&
        !(rc = upload(ctx, w, "surface.blocks", g->coord, (size_t)g->nblocks * 3 * sizeof *g->coord, &bc)) &&
        !(rc = upload(ctx, w, "surface.values", NULL, npts * sizeof(float), &bv)) && npts) {
        uint32_t np = (uint32_t)npts;
        float lo0 = (float)g->lo[0], lo1 = (float)g->lo[1], lo2 = (float)g->lo[2], cell = (float)g->cell;
        floe_cl_arg a[] = {FLOE_CL_ARG(np), FLOE_CL_ARG(bk), FLOE_CL_ARG(bs), FLOE_CL_ARG(bl), FLOE_CL_ARG(bc),
                           FLOE_CL_ARG(bv), FLOE_CL_ARG(lo0), FLOE_CL_ARG(lo1), FLOE_CL_ARG(lo2), FLOE_CL_ARG(cell)};
        rc = api->cl_run(ctx, kernel, npts, (int)(sizeof a / sizeof *a), a, 4.0 * npts + 64.0 * sl.lb / 4);
        int32_t e = rc ? 0 : r(api->cl_queue(ctx), bv, 1, 0, npts * sizeof(float), g->val, 0, NULL, NULL);
        if (e)
            rc = api->fail(ctx, FLOE_ERR, "OpenCL read of the grid values failed (error %d)", (int)e);
    }
    splat_lists_free(g, &sl);
    return rc;
}
