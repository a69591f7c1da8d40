/* OpenCL backend: Verlet lists (the neighbours stage's skin > 0). The
 * lists are built within support + skin on a grid of cells that wide and
 * reused while no pair can have closed the skin; every step nb_cut_stable
 * cuts them to the pairs within the support radius into the lists the
 * stages read, in the build's order (kernels/core/neighbours.cl; with
 * FLOE_CL_VERLET_CUT=swap nb_cut partitions the skin rows in place), so
 * the stages see the sets a build every step gives. A step without a
 * build launches no sort and no cell walk: the displacements since the
 * build (nb_moved) and the cut, which writes only the rows where a pair
 * crossed the support radius; their counts and the displacements come
 * back in the neighbour counts' read, without waiting. On the H200 this
 * is slower than building every step in the dam break benchmark
 * (docs/opencl.md, "Verlet lists on the H200"): the cut reads every skin
 * entry, about as dear as the build it saves.
 *
 * When to build: the host decides before the step's stages run, from the
 * displacements of the last settled steps (the largest pair bound of the
 * last step plus twice its growth over the step before, the margin of the
 * cpu path's rule, nb_verlet.c). The step's own displacements are checked
 * when its counts are settled (cl_lists_settle): where a pair may have
 * closed the skin, the lists are built again and the stages run on the
 * cut lists run again, as for a list that overflowed, so a wrong guess
 * costs time, never a neighbour. A pair's bound is the sum of its two
 * sets' largest displacements (twice one set's for a set against itself;
 * a static set does not move). Builds also follow every change of a set's
 * count, order or slot (pset.layout, gen), a static set's resort, each
 * output frame's start (ctx->nb_rebuild) and host lists copied in. */
#include "state.h"

#include <math.h>

const nb_grid *cl_dev_grid(floe_ctx *ctx) { return CL->von ? &CL->vgrid : &ctx->nbgrid; }

static void sorts_invalid(floe_ctx *ctx)
{
    for (int s = 0; s < MAX_SETS; s++)
        CL->sets[s].sorted_valid = 0;
    CL->vvalid = 0;
}

int cl_verlet_setup(floe_ctx *ctx)
{
    const float skin = ctx->nb_skin_dev;
    int on = skin > 0.0f && !CL->cells && !ctx->nbgrid.periodic && !ctx->dd;
    for (int s = 0; s < ctx->npsets && on; s++)
        on = !ctx->sets[s].placer;
    if (!on) {
        if (CL->von) /* back to the neighbour grid */
            sorts_invalid(ctx);
        CL->von = 0;
        return FLOE_OK;
    }
    const float radius = ctx->info.support * (1.0f + skin);
    if (!CL->von || CL->vgrid.cell != radius) {
        const nb_grid *g = &ctx->nbgrid;
        float lo[3], hi[3];
        for (int k = 0; k < 3; k++) {
            lo[k] = g->origin[k];
            hi[k] = g->origin[k] + (float)g->n[k] * g->cell;
        }
        if (nb_grid_init(&CL->vgrid, ctx->info.dim, lo, hi, radius, (uint64_t)1 << 28))
            return ctx_fail(ctx, FLOE_ERR_ARG, "neighbour grid: the domain is too large for cells of %g m (more "
                            "than 2^28 cells); shrink the domain, the skin or raise the spacing", (double)radius);
        sorts_invalid(ctx);
    }
    CL->von = 1;
    CL->vskin = skin;
    return FLOE_OK;
}

/* the bound two particles' displacements must stay under: the skin less a
 * hundredth and the rounding of coordinates as large as the grid's */
static double vlimit(floe_ctx *ctx)
{
    const nb_grid *g = &CL->vgrid;
    double big = 0;
    for (int k = 0; k < 3; k++) {
        big = fmax(big, fabs((double)g->origin[k]));
        big = fmax(big, fabs((double)g->origin[k] + (double)g->n[k] * g->cell));
    }
    return 0.99 * (double)CL->vskin * ctx->info.support - 16.0 * big * 0x1p-24;
}

int cl_verlet_due(floe_ctx *ctx)
{
    if (!CL->vvalid || ctx->nb_rebuild)
        return 1;
    for (int s = 0; s < ctx->npsets; s++) {
        const pset *p = &ctx->sets[s];
        const cl_setdev *d = &CL->sets[s];
        if (p->n != d->vn || p->layout != d->vlayout || p->gen != d->vgen || (p->is_static && !d->sorted_valid))
            return 1;
    }
    if (CL->vpredict_off)
        return 0;
    const double grow = CL->vd[0] > CL->vd[1] ? CL->vd[0] - CL->vd[1] : 0.0;
    return !(CL->vd[0] + 2.0 * grow < vlimit(ctx));
}

int cl_verlet_built(floe_ctx *ctx)
{
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        cl_setdev *d = &CL->sets[s];
        d->vn = p->n;
        d->vlayout = p->layout;
        d->vgen = p->gen;
        if (p->is_static || p->n == 0)
            continue;
        int rc = cl_ensure(ctx, &d->x0, &d->x0_cap, p->n, 12);
        if (rc)
            return rc;
        cl_mem x = cl_attr_named(ctx, s, "x", FLOE_VEC3, FLOE_READ);
        if (!x)
            return FLOE_ERR;
        cl_int e = F->clEnqueueCopyBuffer(CL->q, x, d->x0, 0, 0, (size_t)p->n * 12, 0, NULL, NULL);
        if (e != CL_SUCCESS)
            return cl_err(ctx, e, "clEnqueueCopyBuffer");
    }
    CL->vvalid = 1;
    CL->vbuilt = 1;
    CL->vbuilds++;
    ctx->nb_rebuild = 0;
    return cl_verlet_moved(ctx, 1);
}

int cl_verlet_moved(floe_ctx *ctx, int build)
{
    cl_kernel k = cl_core_kernel(ctx, "neighbours.cl", "nb_moved");
    cl_mem st = cl_stats(ctx);
    if (!k || !st)
        return FLOE_ERR;
    cl_int dim3 = ctx->info.dim == 3;
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        cl_setdev *d = &CL->sets[s];
        if ((p->is_static && !build) || p->n == 0)
            continue;
        cl_mem x = cl_attr_named(ctx, s, "x", FLOE_VEC3, FLOE_READ);
        int rc;
        if (!x || (!p->is_static && !d->x0))
            return FLOE_ERR;
        if ((rc = cl_ensure(ctx, &d->xp, &d->xp_cap, p->n, 16)))
            return rc;
        /* a static set: its own positions as x0 (no displacement) */
        cl_mem x0 = p->is_static ? x : d->x0;
        cl_uint n = p->n, word = (cl_uint)(STATS_DISP0 + s);
        if ((rc = LAUNCH(k, n, WG, 40.0 * n, ARG(x), ARG(x0), ARG(n), ARG(dim3), ARG(st), ARG(word), ARG(d->xp))))
            return rc;
    }
    return FLOE_OK;
}

int cl_verlet_cut(floe_ctx *ctx, int q, int t, cl_uint slot, int fresh)
{
    pset *pq = &ctx->sets[q], *pt = &ctx->sets[t];
    cl_setdev *dq = &CL->sets[q];
    cl_uint nq = pq->n;
    if (nq == 0 || !dq->scnt[t] || pt->n == 0) /* nothing to find: the build left zero counts */
        return FLOE_OK;
    cl_mem xq = cl_attr_named(ctx, q, "x", FLOE_VEC3, FLOE_READ), xt = CL->sets[t].xp;
    if (!xq || !xt)
        return FLOE_ERR;
    cl_float r2 = ctx->info.support * ctx->info.support;
    cl_int dim3 = ctx->info.dim == 3, fr = fresh, report = !fresh;
    cl_uint pitch = dq->lcap[t];
    /* bytes (the list kernels' model, docs/opencl.md: gathers of the
     * targets' positions, mostly cache hits, not counted): the query and
     * its two counts, and 4 B per entry of the skin rows (the last lists'
     * total times the candidates' volume ratio on a step without a build) */
    const double f = (1.0 + CL->vskin) * (1.0 + CL->vskin) * (1.0 + CL->vskin);
    const double total = (dq->ltotal[t] > 0 ? dq->ltotal[t] : 30.0 * nq) * (fresh ? 1.0 : f);
    const double bytes = 20.0 * nq + 4.0 * total;
    if (CL->vswap)
        return LAUNCH(cl_core_kernel(ctx, "neighbours.cl", "nb_cut"), nq, WG, bytes, ARG(nq), ARG(xq), ARG(xt),
                      ARG(r2), ARG(dim3), ARG(dq->scnt[t]), ARG(dq->cnt[t]), ARG(dq->idx[t]), ARG(pitch), ARG(fr),
                      ARG(report), ARG(CL->stats), ARG(slot));
    if (!dq->sidx[t])
        return FLOE_OK;
    return LAUNCH(cl_core_kernel(ctx, "neighbours.cl", "nb_cut_stable"), nq, WG, bytes, ARG(nq), ARG(xq), ARG(xt),
                  ARG(r2), ARG(dim3), ARG(dq->scnt[t]), ARG(dq->sidx[t]), ARG(dq->cnt[t]), ARG(dq->idx[t]),
                  ARG(pitch), ARG(fr), ARG(report), ARG(CL->stats), ARG(slot));
}

int cl_verlet_closed(floe_ctx *ctx, const cl_uint *st)
{
    if (CL->vbuilt) {
        CL->vd[0] = CL->vd[1] = 0.0;
        return 0;
    }
    double worst = 0.0;
    for (int pr = 0; pr < CL->nb_np; pr++) {
        const int q = CL->nb_pq[pr], t = CL->nb_pt[pr];
        union {
            cl_uint u;
            float f;
        } a = {st[STATS_DISP0 + q]}, b = {st[STATS_DISP0 + t]};
        const double dq = sqrt((double)a.f), dt = sqrt((double)b.f);
        const double bound = q == t ? 2.0 * dq : dq + dt;
        if (!(bound <= worst)) /* NaN too */
            worst = bound;
    }
    CL->vd[1] = CL->vd[0];
    CL->vd[0] = worst;
    return !(worst < vlimit(ctx));
}
