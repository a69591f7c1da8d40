/* The sparse grid and the colour field splat on the OpenCL device
 * (kernels/surface/grid.cl, splat.cl), from the kernel records the device
 * made (surface.kernels): the box of the supports, the blocks, each
 * block's list of kernels and the splat, with the core's scan and sort
 * (api->cl_scan, api->cl_sort). What comes back: the box (6 words), the
 * pair counts (2 words) and the block count (1 word). The blocks are
 * numbered as field.c's touch_blocks numbers them and each list is in
 * kernel order as splat_lists_fill makes it, so the values are the host's
 * bit for bit. */
#include "surface.h"

#include <floe/cl_module.h>

#include <limits.h>
#include <math.h>
#include <string.h>

/* word `at` of buf (uint words) into *out, waiting (the queue runs in
 * order: every earlier read is done too) */
static int read_word(floe_ctx *ctx, void *buf, size_t at, uint32_t *out, const char *what)
{
    floe_cl_read_fn r = floe_cl_read_fn_of(api);
    int32_t e = r ? r(api->cl_queue(ctx), buf, 1, at * sizeof *out, sizeof *out, out, 0, NULL, NULL) : -1;
    return e ? api->fail(ctx, FLOE_ERR, "OpenCL read of %s failed (error %d)", what, (int)e) : FLOE_OK;
}

static float unordered(int32_t i)
{
    const int32_t b = i >= 0 ? i : i ^ 0x7fffffff;
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

int gather_cl(floe_ctx *ctx, const chosen *ch, void **bx, void **bv, double span[3])
{
    const floe_sim_info *si = api->sim(ctx);
    const float vol = (float)((double)si->spacing * si->spacing * si->spacing);
    const uint32_t n = ch->total;
    const int32_t copy = ch->n > 1;
    static const int32_t init[6] = {INT_MAX, INT_MAX, INT_MAX, INT_MIN, INT_MIN, INT_MIN};
    static const uint32_t none = UINT32_MAX;
    memset(span, 0, 3 * sizeof *span);
    *bx = *bv = NULL;
    floe_cl_write_fn w = floe_cl_write_fn_of(api);
    floe_cl_read_fn r = floe_cl_read_fn_of(api);
    void *k = api->cl_kernel(ctx, "surface", "grid.cl", "parts_in");
    int rc = k && w && r ? FLOE_OK : FLOE_ERR;
    void *V = surface_scratch(ctx, "surface.V", (size_t)n * 4, &rc);
    void *xo = copy ? surface_scratch(ctx, "surface.x", (size_t)n * 12, &rc) : V; /* V: never written then */
    void *box = surface_scratch(ctx, "surface.min", sizeof init, &rc), *bad = surface_scratch(ctx, "surface.bad", 4, &rc);
    if (rc || !n)
        return rc;
    int32_t e = w(api->cl_queue(ctx), box, 0, 0, sizeof init, init, 0, NULL, NULL);
    e = e ? e : w(api->cl_queue(ctx), bad, 0, 0, sizeof none, &none, 0, NULL, NULL);
    if (e)
        return api->fail(ctx, FLOE_ERR, "OpenCL write failed (error %d)", (int)e);
    void *xs[FLOE_MAX_SETS];
    uint32_t at = 0;
    for (int s = 0; s < ch->n && !rc; s++) {
        const floe_set_info *in = &ch->info[s];
        xs[s] = api->cl_attr(ctx, ch->set[s], "x", FLOE_VEC3, FLOE_READ);
        void *m = api->cl_attr(ctx, ch->set[s], "m", FLOE_F32, FLOE_READ);
        if (!xs[s])
            return api->fail(ctx, FLOE_ERR_ARG, "set '%s' has no positions on the device", in->name);
        const int32_t has_m = m && in->rest_density > 0;
        const float rho0 = in->rest_density;
        const uint32_t ns = in->n;
        void *bm = m ? m : V; /* no NULL buffer arguments */
        floe_cl_arg a[] = {FLOE_CL_ARG(ns),   FLOE_CL_ARG(xs[s]), FLOE_CL_ARG(bm),        FLOE_CL_ARG(has_m),
                           FLOE_CL_ARG(rho0), FLOE_CL_ARG(vol),   FLOE_CL_ARG(copy),      FLOE_CL_ARG(at),
                           FLOE_CL_ARG(xo),   FLOE_CL_ARG(V),     FLOE_CL_ARG(box),       FLOE_CL_ARG(bad)};
        rc = api->cl_run(ctx, k, ns, 12, a, 20.0 * ns);
        at += ns;
    }
    int32_t got[6];
    uint32_t first = UINT32_MAX;
    e = rc ? 0 : r(api->cl_queue(ctx), bad, 0, 0, sizeof first, &first, 0, NULL, NULL);
    e = e || rc ? e : r(api->cl_queue(ctx), box, 1, 0, sizeof got, got, 0, NULL, NULL);
    if (e)
        return api->fail(ctx, FLOE_ERR, "OpenCL read of the particles' box failed (error %d)", (int)e);
    if (rc)
        return rc;
    /* parts_in noted the first non-finite position as its entry */
    at = 0;
    for (int s = 0; s < ch->n && first != UINT32_MAX; at += ch->info[s++].n)
        if (first - at < ch->info[s].n) {
            const uint32_t i = first - at;
            float p[3] = {NAN, NAN, NAN};
            r(api->cl_queue(ctx), xs[s], 1, (size_t)i * 12, sizeof p, p, 0, NULL, NULL);
            return api->fail(ctx, FLOE_ERR_ARG, "particle %u of set '%s' has a non-finite position (%g, %g, %g)", i,
                             ch->info[s].name, p[0], p[1], p[2]);
        }
    for (int d = 0; d < 3; d++)
        span[d] = (double)unordered(got[3 + d]) - (double)unordered(got[d]);
    *bx = copy ? xo : xs[0];
    *bv = V;
    return FLOE_OK;
}

int kerns_isotropic_cl(floe_ctx *ctx, void *x, void *V, uint32_t n, float H)
{
    void *k = api->cl_kernel(ctx, "surface", "grid.cl", "kern_iso");
    int rc = k ? FLOE_OK : FLOE_ERR;
    void *bk = surface_scratch(ctx, "surface.kernels", (size_t)n * sizeof(kern), &rc);
    if (rc || !n)
        return rc;
    floe_cl_arg a[] = {FLOE_CL_ARG(n), FLOE_CL_ARG(x), FLOE_CL_ARG(V), FLOE_CL_ARG(H), FLOE_CL_ARG(bk)};
    return api->cl_run(ctx, k, n, 5, a, 80.0 * n);
}


int grid_box_cl(floe_ctx *ctx, uint32_t n, double cell, double lo[3], double hi[3])
{
    if (!n) {
        memset(lo, 0, 3 * sizeof *lo);
        memset(hi, 0, 3 * sizeof *hi);
        return FLOE_OK;
    }
    static const int32_t init[6] = {INT_MAX, INT_MAX, INT_MAX, INT_MIN, INT_MIN, INT_MIN};
    floe_cl_write_fn w = floe_cl_write_fn_of(api);
    floe_cl_read_fn r = floe_cl_read_fn_of(api);
    void *k = api->cl_kernel(ctx, "surface", "grid.cl", "kern_box");
    int rc = k ? FLOE_OK : FLOE_ERR;
    void *bk = surface_scratch(ctx, "surface.kernels", (size_t)n * sizeof(kern), &rc);
    void *box = surface_scratch(ctx, "surface.min", sizeof init, &rc);
    if (rc)
        return rc;
    int32_t got[6];
    /* a write from static data need not wait */
    int32_t e = w ? w(api->cl_queue(ctx), box, 0, 0, sizeof init, init, 0, NULL, NULL) : -1;
    floe_cl_arg a[] = {FLOE_CL_ARG(n), FLOE_CL_ARG(bk), FLOE_CL_ARG(box)};
    if (e || (rc = api->cl_run(ctx, k, n, 3, a, 64.0 * n)))
        return rc ? rc : api->fail(ctx, FLOE_ERR, "OpenCL write failed (error %d)", (int)e);
    e = r ? r(api->cl_queue(ctx), box, 1, 0, sizeof got, got, 0, NULL, NULL) : -1;
    if (e)
        return api->fail(ctx, FLOE_ERR, "OpenCL read of the grid's box failed (error %d)", (int)e);
    /* as build_mesh on the host: the float c -/+ ext, then 2 cells in double */
    for (int d = 0; d < 3; d++) {
        lo[d] = (double)unordered(got[d]) - 2 * cell;
        hi[d] = (double)unordered(got[3 + d]) + 2 * cell;
    }
    return FLOE_OK;
}

/* the blocks' coordinates back into g's hash (in block order: the same
 * numbering) and its values, for the host's mesher */
static int grid_to_host(floe_ctx *ctx, sgrid *g, int32_t nb, void *coord, void *val)
{
    floe_cl_read_fn r = floe_cl_read_fn_of(api);
    const size_t cb = (size_t)nb * 3 * sizeof(int32_t);
    int32_t *c = meter_alloc(g->mem, cb, 0);
    if (!c)
        return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory for the grid (%d blocks)", nb);
    int32_t e = nb ? r(api->cl_queue(ctx), coord, 1, 0, cb, c, 0, NULL, NULL) : 0;
    int rc = e ? api->fail(ctx, FLOE_ERR, "OpenCL read of the blocks failed (error %d)", (int)e) : FLOE_OK;
    for (int32_t b = 0; b < nb && !rc; b++)
        if (sgrid_touch(g, &c[3 * (size_t)b]) != b)
            rc = api->fail(ctx, FLOE_ERR_NOMEM, "out of memory for the grid (%d blocks)", nb);
    meter_free(g->mem, c, cb);
    if (!rc && sgrid_alloc_values(g))
        rc = api->fail(ctx, FLOE_ERR_NOMEM, "out of memory for the grid (%d blocks)", nb);
    e = rc || !nb ? 0 : r(api->cl_queue(ctx), val, 1, 0, (size_t)nb * BLOCK_PTS * sizeof(float), g->val, 0, NULL, NULL);
    return e ? api->fail(ctx, FLOE_ERR, "OpenCL read of the grid values failed (error %d)", (int)e) : rc;
}

int field_splat_cl(floe_ctx *ctx, sgrid *g, uint32_t n, int read_back)
{
    static const char *const names[] = {"blk_count", "blk_emit", "blk_flag", "blk_compact", "blk_lists", "blk_nbr"};
    void *kn[6];
    for (int i = 0; i < 6; i++)
        if (!(kn[i] = api->cl_kernel(ctx, "surface", "grid.cl", names[i])))
            return FLOE_ERR;
    void *ks = api->cl_kernel(ctx, "surface", "splat.cl", "splat");
    if (!ks)
        return FLOE_ERR;
    if (!n)
        return read_back ? sgrid_alloc_values(g) : FLOE_OK;
    const uint32_t n1 = n + 1;
    int rc = FLOE_OK;
    void *bk = surface_scratch(ctx, "surface.kernels", (size_t)n * sizeof(kern), &rc);
    void *cnt1 = surface_scratch(ctx, "surface.s0", (size_t)n1 * 4, &rc), *cnt0 = surface_scratch(ctx, "surface.s1", (size_t)n1 * 4, &rc);
    if (rc)
        return rc;
    const double lo0 = g->lo[0], lo1 = g->lo[1], lo2 = g->lo[2], cell = g->cell;
    const int32_t mb[4] = {g->max_block[0], g->max_block[1], g->max_block[2], 0};
    floe_cl_arg ac[] = {FLOE_CL_ARG(n),    FLOE_CL_ARG(bk),   FLOE_CL_ARG(lo0),  FLOE_CL_ARG(lo1),
                        FLOE_CL_ARG(lo2),  FLOE_CL_ARG(cell), FLOE_CL_ARG(mb),   FLOE_CL_ARG(cnt1),
                        FLOE_CL_ARG(cnt0)};
    if ((rc = api->cl_run(ctx, kn[0], n1, 9, ac, 72.0 * n)) || (rc = api->cl_scan(ctx, cnt1, n1)) ||
        (rc = api->cl_scan(ctx, cnt0, n1)))
        return rc;
    /* both totals by one wait: the first into pinned memory without waiting */
    uint32_t m1, m0, *pin = api->cl_pinned(ctx, "surface.pairs", sizeof m1);
    floe_cl_read_fn r = floe_cl_read_fn_of(api);
    int32_t e = pin && r ? r(api->cl_queue(ctx), cnt1, 0, (size_t)n * 4, 4, pin, 0, NULL, NULL) : 0;
    if (e)
        return api->fail(ctx, FLOE_ERR, "OpenCL read of the grid's pair count failed (error %d)", (int)e);
    if ((!pin && (rc = read_word(ctx, cnt1, n, &m1, "the grid's pair count"))) ||
        (rc = read_word(ctx, cnt0, n, &m0, "the splat lists' length")))
        return rc;
    if (pin)
        m1 = *pin;
    void *key1 = surface_scratch(ctx, "surface.s2", (size_t)m1 * 8, &rc), *val1 = surface_scratch(ctx, "surface.s3", (size_t)m1 * 4, &rc);
    void *key0 = surface_scratch(ctx, "surface.s4", (size_t)m0 * 8, &rc), *val0 = surface_scratch(ctx, "surface.s5", (size_t)m0 * 4, &rc);
    void *flag = surface_scratch(ctx, "surface.s6", ((size_t)m1 + 1) * 4, &rc);
    if (rc)
        return rc;
    const uint64_t blocks = (uint64_t)mb[0] * (uint64_t)mb[1] * (uint64_t)mb[2];
    int bits = 0; /* of a block key; a sub-block key has 3 more */
    while (bits < 61 && ((uint64_t)1 << bits) < blocks)
        bits++;
    floe_cl_arg ae[] = {FLOE_CL_ARG(n),    FLOE_CL_ARG(bk),   FLOE_CL_ARG(lo0),  FLOE_CL_ARG(lo1),
                        FLOE_CL_ARG(lo2),  FLOE_CL_ARG(cell), FLOE_CL_ARG(mb),   FLOE_CL_ARG(cnt1),
                        FLOE_CL_ARG(cnt0), FLOE_CL_ARG(key1), FLOE_CL_ARG(val1), FLOE_CL_ARG(key0),
                        FLOE_CL_ARG(val0)};
    floe_cl_arg af[] = {FLOE_CL_ARG(m1), FLOE_CL_ARG(key1), FLOE_CL_ARG(flag)};
    const uint32_t m11 = m1 + 1;
    if ((rc = api->cl_run(ctx, kn[1], n, 13, ae, 12.0 * ((double)m1 + m0))) ||
        (rc = api->cl_sort(ctx, key1, val1, m1, bits)) || (rc = api->cl_sort(ctx, key0, val0, m0, bits + 3)) ||
        (rc = api->cl_run(ctx, kn[2], m11, 3, af, 12.0 * m1)) || (rc = api->cl_scan(ctx, flag, m11)))
        return rc;
    uint32_t nb;
    if ((rc = read_word(ctx, flag, m1, &nb, "the grid's block count")))
        return rc;
    if (nb > (uint32_t)INT32_MAX / BLOCK_PTS)
        return api->fail(ctx, FLOE_ERR_ARG, "%u blocks: too many for the device grid", nb);
    const size_t npts = (size_t)nb * BLOCK_PTS;
    void *bkey = surface_scratch(ctx, "surface.bkey", (size_t)nb * 8, &rc);
    void *coord = surface_scratch(ctx, "surface.blocks", (size_t)nb * 12, &rc);
    void *range = surface_scratch(ctx, "surface.s7", (size_t)nb * 16 * 4, &rc);
    void *nbr = surface_scratch(ctx, "surface.nbr", (size_t)nb * 32, &rc);
    void *val = surface_scratch(ctx, "surface.values", npts * 4, &rc);
    if (rc)
        return rc;
    const uint32_t nsub = 8 * nb, np = (uint32_t)npts;
    const float flo0 = (float)g->lo[0], flo1 = (float)g->lo[1], flo2 = (float)g->lo[2], fcell = (float)g->cell;
    floe_cl_arg a3[] = {FLOE_CL_ARG(m1), FLOE_CL_ARG(key1), FLOE_CL_ARG(flag), FLOE_CL_ARG(mb), FLOE_CL_ARG(bkey),
                        FLOE_CL_ARG(coord)};
    floe_cl_arg a4[] = {FLOE_CL_ARG(nb),   FLOE_CL_ARG(coord), FLOE_CL_ARG(mb), FLOE_CL_ARG(key0),
                        FLOE_CL_ARG(m0),   FLOE_CL_ARG(range)};
    floe_cl_arg a5[] = {FLOE_CL_ARG(nb), FLOE_CL_ARG(bkey), FLOE_CL_ARG(coord), FLOE_CL_ARG(mb), FLOE_CL_ARG(nbr)};
    floe_cl_arg a6[] = {FLOE_CL_ARG(np),   FLOE_CL_ARG(bk),   FLOE_CL_ARG(range), FLOE_CL_ARG(val0),
                        FLOE_CL_ARG(coord), FLOE_CL_ARG(val), FLOE_CL_ARG(flo0),  FLOE_CL_ARG(flo1),
                        FLOE_CL_ARG(flo2), FLOE_CL_ARG(fcell)};
    if ((rc = api->cl_run(ctx, kn[3], m1, 6, a3, 24.0 * m1)) || (rc = api->cl_run(ctx, kn[4], nsub, 6, a4, 16.0 * nsub)) ||
        (rc = api->cl_run(ctx, kn[5], nb, 5, a5, 64.0 * nb)) ||
        (nb && (rc = api->cl_run(ctx, ks, npts, 10, a6, 4.0 * npts + 64.0 * m0))))
        return rc;
    if (read_back)
        return grid_to_host(ctx, g, (int32_t)nb, coord, val);
    g->nblocks = (int32_t)nb;
    return FLOE_OK;
}
