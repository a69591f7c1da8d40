/* The OpenCL path of the surface stages (docs/surface.md, "OpenCL"): the
 * Yu & Turk kernels (kernels/surface/aniso.cl) over the particles sorted
 * by cell on the device (cells_cl.c), twice (Taubin's step on the
 * smoothed centres); the records stay there for the grid and the splat
 * (grid_cl.c). Marching cubes (kernels/surface/mc.cl) on the values the
 * splat left there: count, scan (the core's cl_scan), emit, the vertices
 * numbered by first use along the triangles as mesher.c numbers them; the
 * vertex normals (kernels/surface/normals.cl) summed there too; the mesh
 * comes back in one wait. */
#include "surface.h"

#include <floe/cl_module.h>

#include <math.h>
#include <stddef.h>
#include <string.h>

typedef floe_cl_write_fn write_fn;
typedef floe_cl_read_fn read_fn;

/* Device buffers: the core's named scratch (at most 32 names a run, shared
 * by all modules), so the phases share eight of them, surface.s0 .. s7
 * (the queue runs in order: a phase's kernels are done before the next
 * phase's writes); surface.kernels, .blocks and .values hold what one
 * phase leaves to the next. */
static int upload(floe_ctx *ctx, write_fn w, const char *name, const void *data, size_t bytes, void **buf)
{
    *buf = api->cl_scratch(ctx, name, bytes ? bytes : 4);
    if (!*buf)
        return api->fail(ctx, FLOE_ERR_NOMEM, "no device buffer of %zu bytes for %s", bytes, name);
    int32_t e = bytes && data ? w(api->cl_queue(ctx), *buf, 1, 0, bytes, data, 0, NULL, NULL) : 0;
    return e ? api->fail(ctx, FLOE_ERR, "OpenCL write of %s failed (error %d)", name, (int)e) : FLOE_OK;
}

void *surface_scratch(floe_ctx *ctx, const char *name, size_t bytes, int *rc)
{
    void *b = *rc ? NULL : api->cl_scratch(ctx, name, bytes ? bytes : 4);
    if (!b && !*rc)
        *rc = api->fail(ctx, FLOE_ERR_NOMEM, "no device buffer of %zu bytes for %s", bytes, name);
    return b;
}

/* a write from data that outlives the queue (static): it need not wait */
static int upload_static(floe_ctx *ctx, write_fn w, const char *name, const void *data, size_t bytes, void **buf)
{
    *buf = api->cl_scratch(ctx, name, bytes);
    if (!*buf)
        return api->fail(ctx, FLOE_ERR_NOMEM, "no device buffer of %zu bytes for %s", bytes, name);
    int32_t e = w(api->cl_queue(ctx), *buf, 0, 0, bytes, data, 0, NULL, NULL);
    return e ? api->fail(ctx, FLOE_ERR, "OpenCL write of %s failed (error %d)", name, (int)e) : FLOE_OK;
}

static int get_fns(floe_ctx *ctx, write_fn *w, read_fn *r)
{
    *w = floe_cl_write_fn_of(api);
    *r = floe_cl_read_fn_of(api);
    return *w && *r ? FLOE_OK : api->fail(ctx, FLOE_ERR, "the OpenCL runtime lacks buffer reads or writes");
}

/* aniso_shape's or aniso_inflate's arguments over the sorted cells cd */
#define CELL_ARGS(cd)                                                                                           \
    FLOE_CL_ARG((cd).X), FLOE_CL_ARG((cd).Y), FLOE_CL_ARG((cd).Z), FLOE_CL_ARG((cd).ckey), FLOE_CL_ARG((cd).cell), \
        FLOE_CL_ARG((cd).count), FLOE_CL_ARG((cd).key), FLOE_CL_ARG((cd).idx)

int kerns_anisotropic_cl(floe_ctx *ctx, const double span[3], void *bx, void *bv, uint32_t n, const aniso_opts *o,
                         const uint32_t **n_stretched)
{
    static const uint32_t none = 0;
    static uint32_t unpinned;
    *n_stretched = &none;
    if (n == 0)
        return FLOE_OK;
    write_fn w;
    read_fn r;
    int rc = get_fns(ctx, &w, &r);
    void *shape = rc ? NULL : api->cl_kernel(ctx, "surface", "aniso.cl", "aniso_shape");
    void *infl = shape ? api->cl_kernel(ctx, "surface", "aniso.cl", "aniso_inflate") : NULL;
    if (!infl)
        return rc ? rc : FLOE_ERR;
    void *bk, *bst;
    cells_dev cd;
    if ((rc = upload(ctx, w, "surface.kernels", NULL, (size_t)n * sizeof(kern), &bk)) ||
        (rc = upload_static(ctx, w, "surface.stretched", &none, sizeof none, &bst)) ||
        (rc = cells_build_cl(ctx, bx, 3, n, o->radius, span, &cd)))
        return rc;
    const double r_ = o->radius, H = o->H, kr = o->kr, mu = -o->lambda / (1.0 - 0.1 * o->lambda);
    const float lambda = o->lambda;
    const int n_min = o->n_min;
    floe_cl_arg a[] = {FLOE_CL_ARG(n),     CELL_ARGS(cd),      FLOE_CL_ARG(bk),  FLOE_CL_ARG(cd.lo),
                       FLOE_CL_ARG(cd.inv), FLOE_CL_ARG(cd.h), FLOE_CL_ARG(r_),  FLOE_CL_ARG(lambda),
                       FLOE_CL_ARG(H),     FLOE_CL_ARG(kr),    FLOE_CL_ARG(n_min), FLOE_CL_ARG(bst),
                       FLOE_CL_ARG(bv)};
    if ((rc = api->cl_run(ctx, shape, n, (int)(sizeof a / sizeof *a), a, 64.0 * n)))
        return rc;
    /* Taubin's step on the smoothed centres (the records' first 3 floats), sorted again */
    if (o->lambda > 0 && !(rc = cells_build_cl(ctx, bk, 16, n, o->radius, span, &cd))) {
        floe_cl_arg b[] = {FLOE_CL_ARG(n),      CELL_ARGS(cd),      FLOE_CL_ARG(bk), FLOE_CL_ARG(cd.lo),
                           FLOE_CL_ARG(cd.inv), FLOE_CL_ARG(cd.h),  FLOE_CL_ARG(r_), FLOE_CL_ARG(mu)};
        rc = api->cl_run(ctx, infl, n, (int)(sizeof b / sizeof *b), b, 16.0 * n);
    }
    if (rc)
        return rc;
    /* the count arrives by the caller's next waiting read (in-order queue):
     * into pinned memory without waiting, else read now */
    uint32_t *pin = api->cl_pinned(ctx, "surface.stretched", sizeof *pin);
    int32_t e = r(api->cl_queue(ctx), bst, !pin, 0, sizeof *pin, pin ? pin : &unpinned, 0, NULL, NULL);
    *n_stretched = pin ? pin : &unpinned;
    return e ? api->fail(ctx, FLOE_ERR, "OpenCL read of the stretched count failed (error %d)", (int)e) : FLOE_OK;
}

/* the vertex normals of the mesh on the device (kernels/surface/normals.cl,
 * the sums of mesher.c's vertex_normals_par): bv holds its nv vertices,
 * bt its nt triangles; the normals into *bn */
static int normals_cl(floe_ctx *ctx, void *bv, void *bt, uint32_t nv, uint32_t nt, void **bn)
{
    const uint32_t nv1 = nv + 1;
    *bn = NULL;
    if (!nv)
        return FLOE_OK;
    void *k0 = api->cl_kernel(ctx, "surface", "normals.cl", "nrm_zero");
    void *k1 = k0 ? api->cl_kernel(ctx, "surface", "normals.cl", "nrm_face") : NULL;
    void *k2 = k1 ? api->cl_kernel(ctx, "surface", "normals.cl", "nrm_place") : NULL;
    void *k3 = k2 ? api->cl_kernel(ctx, "surface", "normals.cl", "nrm_vertex") : NULL;
    if (!k3)
        return FLOE_ERR;
    void *fn = api->cl_scratch(ctx, "surface.s0", (size_t)nt * 3 * sizeof(float) + 4);
    void *cnt = api->cl_scratch(ctx, "surface.s5", (size_t)nv1 * sizeof(uint32_t));
    void *pos = api->cl_scratch(ctx, "surface.s4", (size_t)nv1 * sizeof(uint32_t));
    void *list = api->cl_scratch(ctx, "surface.s6", (size_t)nt * 3 * sizeof(uint32_t) + 4);
    void *nrm = api->cl_scratch(ctx, "surface.s3", (size_t)nv * 3 * sizeof(float));
    if (!fn || !cnt || !pos || !list || !nrm)
        return api->fail(ctx, FLOE_ERR_NOMEM, "no device buffers for the normals of %u vertices", nv);
    floe_cl_arg a0[] = {FLOE_CL_ARG(nv1), FLOE_CL_ARG(cnt), FLOE_CL_ARG(pos)};
    floe_cl_arg a1[] = {FLOE_CL_ARG(nt), FLOE_CL_ARG(bv), FLOE_CL_ARG(bt), FLOE_CL_ARG(fn), FLOE_CL_ARG(cnt)};
    floe_cl_arg a2[] = {FLOE_CL_ARG(nt), FLOE_CL_ARG(bt), FLOE_CL_ARG(cnt), FLOE_CL_ARG(pos), FLOE_CL_ARG(list)};
    floe_cl_arg a3[] = {FLOE_CL_ARG(nv), FLOE_CL_ARG(cnt), FLOE_CL_ARG(list), FLOE_CL_ARG(fn), FLOE_CL_ARG(nrm)};
    int rc = api->cl_run(ctx, k0, nv1, 3, a0, 8.0 * nv1);
    if (!rc && nt)
        rc = api->cl_run(ctx, k1, nt, 5, a1, 36.0 * nt + 24.0 * nt);
    if (!rc && !(rc = api->cl_scan(ctx, cnt, nv1)) && nt)
        rc = api->cl_run(ctx, k2, nt, 5, a2, 36.0 * nt);
    if (!rc)
        rc = api->cl_run(ctx, k3, nv, 5, a3, 8.0 * nv + 48.0 * nt);
    *bn = nrm;
    return rc;
}

/* count, scan, emit (kernels/surface/mc.cl); the vertices come back and
 * are numbered by first use along the triangles, as mesher.c's merge
 * numbers them */
int mesh_extract_cl(floe_ctx *ctx, const sgrid *g, float iso, mesh *out)
{
    const mc_table *t = mc_table_get();
    if (!t)
        return api->fail(ctx, FLOE_ERR, "the marching-cubes table's loops do not close (a bug)");
    if (!g->nblocks)
        return mesh_normals(out);
    write_fn w;
    read_fn r;
    int rc = get_fns(ctx, &w, &r);
    void *kc = rc ? NULL : api->cl_kernel(ctx, "surface", "mc.cl", "mc_count");
    void *ke = kc ? api->cl_kernel(ctx, "surface", "mc.cl", "mc_emit") : NULL;
    if (!ke)
        return rc ? rc : FLOE_ERR;
    const size_t nb = (size_t)g->nblocks, npts = nb * BLOCK_PTS;
    if (npts >= UINT32_MAX)
        return api->fail(ctx, FLOE_ERR_ARG, "%zu grid points: too many for the device mesher", npts);
    /* what field_splat_cl left: the values, the blocks' coordinates and
     * their 2x2x2 neighbourhoods (mesher.c's block_triangulate's) */
    void *bv = api->cl_scratch(ctx, "surface.values", npts * sizeof(float));
    void *bc = api->cl_scratch(ctx, "surface.blocks", nb * 3 * sizeof(int32_t));
    void *bn = api->cl_scratch(ctx, "surface.nbr", nb * 8 * sizeof(int32_t));
    void *bnt, *btri, *btc, *bvc, *bvo, *bto;
    static const uint32_t zero = 0;
    uint32_t tot[2] = {0, 0}, np = (uint32_t)npts;
    uint32_t *pin = api->cl_pinned(ctx, "surface.mesh_counts", sizeof tot);
    rc = bv && bc && bn ? FLOE_OK : api->fail(ctx, FLOE_ERR_NOMEM, "no device buffers for the grid");
    /* the table and the zeros are static: their writes need not wait */
    if (!rc && !(rc = upload_static(ctx, w, "surface.s3", t->ntri, sizeof t->ntri, &bnt)) &&
        !(rc = upload_static(ctx, w, "surface.s4", t->tri, sizeof t->tri, &btri)) &&
        !(rc = upload(ctx, w, "surface.s5", NULL, (npts + 1) * sizeof(uint32_t), &btc)) &&
        !(rc = upload(ctx, w, "surface.s6", NULL, (npts + 1) * sizeof(uint32_t), &bvc))) {
        /* the word after the last point stays 0: the scans leave the totals there */
        int32_t e = w(api->cl_queue(ctx), btc, 0, npts * sizeof(uint32_t), sizeof zero, &zero, 0, NULL, NULL);
        e = e ? e : w(api->cl_queue(ctx), bvc, 0, npts * sizeof(uint32_t), sizeof zero, &zero, 0, NULL, NULL);
        if (e)
            rc = api->fail(ctx, FLOE_ERR, "OpenCL write failed (error %d)", (int)e);
    }
    if (!rc) {
        floe_cl_arg a[] = {FLOE_CL_ARG(np), FLOE_CL_ARG(bv), FLOE_CL_ARG(bn), FLOE_CL_ARG(bnt),
                           FLOE_CL_ARG(iso), FLOE_CL_ARG(btc), FLOE_CL_ARG(bvc)};
        rc = api->cl_run(ctx, kc, npts, (int)(sizeof a / sizeof *a), a, 4.0 * 4 * npts);
    }
    if (!rc && !(rc = api->cl_scan(ctx, btc, np + 1)) && !(rc = api->cl_scan(ctx, bvc, np + 1))) {
        /* both counts by one wait: the first into pinned memory without waiting */
        int32_t e = r(api->cl_queue(ctx), btc, !pin, npts * sizeof(uint32_t), sizeof tot[0], pin ? pin : &tot[0], 0,
                      NULL, NULL);
        e = e ? e : r(api->cl_queue(ctx), bvc, 1, npts * sizeof(uint32_t), sizeof tot[1], &tot[1], 0, NULL, NULL);
        if (e)
            rc = api->fail(ctx, FLOE_ERR, "OpenCL read of the mesh's counts failed (error %d)", (int)e);
        else if (pin)
            tot[0] = pin[0];
    }
    const uint32_t nt = tot[0], nv = tot[1], nc = 3 * nt;
    if (!rc && (uint64_t)nt * 3 >= UINT32_MAX)
        rc = api->fail(ctx, FLOE_ERR_ARG, "%u triangles: too many for the device mesher", nt);
    const size_t sv = (size_t)nv * 3 * sizeof(float), st = (size_t)nt * 3 * sizeof(uint32_t);
    void *bfirst, *bflag, *bvf;
    uint32_t nkept = 0;
    if (!rc && !(rc = upload(ctx, w, "surface.s0", NULL, sv, &bvo)) &&
        !(rc = upload(ctx, w, "surface.s1", NULL, st, &bto))) {
        const double lo0 = g->lo[0], lo1 = g->lo[1], lo2 = g->lo[2], cell = g->cell;
        floe_cl_arg a[] = {FLOE_CL_ARG(np),  FLOE_CL_ARG(bv),   FLOE_CL_ARG(bn),   FLOE_CL_ARG(bc),
                           FLOE_CL_ARG(bnt), FLOE_CL_ARG(btri), FLOE_CL_ARG(iso),  FLOE_CL_ARG(btc),
                           FLOE_CL_ARG(bvc), FLOE_CL_ARG(lo0),  FLOE_CL_ARG(lo1),  FLOE_CL_ARG(lo2),
                           FLOE_CL_ARG(cell), FLOE_CL_ARG(bvo), FLOE_CL_ARG(bto)};
        rc = api->cl_run(ctx, ke, npts, (int)(sizeof a / sizeof *a), a, 8.0 * npts + (double)sv + (double)st);
    }
    /* the vertices numbered by first use along the triangles, as mesher.c's
     * merge numbers them: first corner of each vertex, flags, scan, rewrite */
    void *k1 = rc ? NULL : api->cl_kernel(ctx, "surface", "mc.cl", "mc_first_init");
    void *k2 = k1 ? api->cl_kernel(ctx, "surface", "mc.cl", "mc_first_min") : NULL;
    void *k3 = k2 ? api->cl_kernel(ctx, "surface", "mc.cl", "mc_first_flag") : NULL;
    void *k4 = k3 ? api->cl_kernel(ctx, "surface", "mc.cl", "mc_renumber_vertices") : NULL;
    void *k5 = k4 ? api->cl_kernel(ctx, "surface", "mc.cl", "mc_renumber_corners") : NULL;
    if (!rc && !k5)
        rc = FLOE_ERR;
    if (!rc && !(rc = upload(ctx, w, "surface.s5", NULL, (size_t)nv * sizeof(uint32_t), &bfirst)) &&
        !(rc = upload(ctx, w, "surface.s6", NULL, ((size_t)nc + 1) * sizeof(uint32_t), &bflag)) &&
        !(rc = upload(ctx, w, "surface.s2", NULL, sv, &bvf))) {
        int32_t e = w(api->cl_queue(ctx), bflag, 0, (size_t)nc * sizeof(uint32_t), sizeof zero, &zero, 0, NULL, NULL);
        if (e)
            rc = api->fail(ctx, FLOE_ERR, "OpenCL write failed (error %d)", (int)e);
        floe_cl_arg a1[] = {FLOE_CL_ARG(nv), FLOE_CL_ARG(bfirst)};
        floe_cl_arg a2[] = {FLOE_CL_ARG(nc), FLOE_CL_ARG(bto), FLOE_CL_ARG(bfirst)};
        floe_cl_arg a3[] = {FLOE_CL_ARG(nc), FLOE_CL_ARG(bto), FLOE_CL_ARG(bfirst), FLOE_CL_ARG(bflag)};
        floe_cl_arg a4[] = {FLOE_CL_ARG(nv), FLOE_CL_ARG(bfirst), FLOE_CL_ARG(bflag), FLOE_CL_ARG(bvo), FLOE_CL_ARG(bvf)};
        floe_cl_arg a5[] = {FLOE_CL_ARG(nc), FLOE_CL_ARG(bto), FLOE_CL_ARG(bfirst), FLOE_CL_ARG(bflag)};
        if (!rc && nv && !(rc = api->cl_run(ctx, k1, nv, 2, a1, 4.0 * nv)) && nc &&
            !(rc = api->cl_run(ctx, k2, nc, 3, a2, 8.0 * nc)) && !(rc = api->cl_run(ctx, k3, nc, 4, a3, 12.0 * nc)) &&
            !(rc = api->cl_scan(ctx, bflag, nc + 1)) && !(rc = api->cl_run(ctx, k4, nv, 5, a4, 32.0 * nv)) &&
            !(rc = api->cl_run(ctx, k5, nc, 4, a5, 12.0 * nc))) {
            e = r(api->cl_queue(ctx), bflag, 1, (size_t)nc * sizeof(uint32_t), sizeof nkept, &nkept, 0, NULL, NULL);
            if (e || nkept > nv)
                rc = api->fail(ctx, FLOE_ERR, "OpenCL read of the vertex count failed (error %d, %u of %u)", (int)e,
                               nkept, nv);
        }
    }
    void *bnrm = NULL;
    if (!rc)
        rc = normals_cl(ctx, bvf, bto, nkept, nt, &bnrm);
    const size_t skept = (size_t)nkept * 3 * sizeof(float);
    if (!rc) {
        out->tri = meter_alloc(out->mem, st, 0);
        out->v = meter_alloc(out->mem, skept, 0);
        out->nrm = meter_alloc(out->mem, skept, 0);
        out->t_cap = nt; /* what mesh_free frees */
        out->v_cap = out->nv = nkept;
        if (!out->tri || !out->v || !out->nrm)
            rc = api->fail(ctx, FLOE_ERR_NOMEM, "out of memory for a mesh of %u triangles", nt);
    }
    if (!rc) {
        /* the mesh in one wait: vertices and triangles without waiting, the
         * normals waiting (the queue runs in order) */
        int32_t e = nkept ? r(api->cl_queue(ctx), bvf, 0, 0, skept, out->v, 0, NULL, NULL) : 0;
        e = e || !nt ? e : r(api->cl_queue(ctx), bto, 0, 0, st, out->tri, 0, NULL, NULL);
        e = e || !nkept ? e : r(api->cl_queue(ctx), bnrm, 1, 0, skept, out->nrm, 0, NULL, NULL);
        if (e) {
            /* no read may still be writing into the mesh when it is freed */
            int32_t (*finish)(void *) = NULL;
            void *pf = api->cl_fn("clFinish");
            memcpy(&finish, &pf, sizeof finish);
            if (finish)
                finish(api->cl_queue(ctx));
            rc = api->fail(ctx, FLOE_ERR, "OpenCL read of the mesh failed (error %d)", (int)e);
        }
        out->nt = nt;
        long bad = 0;
#pragma omp parallel for reduction(+ : bad) if (nc > 65536)
        for (long q = 0; q < (long)nc; q++)
            bad += out->tri[q] >= nkept;
        if (!rc && bad)
            rc = api->fail(ctx, FLOE_ERR, "the device mesher made %ld vertex indices out of %u", bad, nkept);
    }
    return rc;
}
