/* The context's neighbour lists on the host: the cell grid, the cell sort of
 * each set (and the reorder along it), the lists of every fluid set in every
 * set and their kernel sums (neighbours.c does the work). */
#include "decomp.h"
#include "device.h"

#include "floe/kernel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* the grid over the whole domain, two cells past each face */
static int full_grid(floe_ctx *ctx, nb_grid *g)
{
    const floe_sim_info *in = &ctx->info;
    float lo[3], hi[3];
    for (int k = 0; k < 3; k++) {
        lo[k] = in->domain_min[k] - 2 * in->support;
        hi[k] = in->domain_max[k] + 2 * in->support;
    }
    if (nb_grid_init(g, in->dim, lo, hi, in->support, (uint64_t)1 << 28))
        return ctx_fail(ctx, FLOE_ERR_ARG,
                        "neighbour grid: the domain is too large for cells of %g m (more than 2^28 cells); "
                        "shrink the domain or raise the spacing", (double)in->support);
    g->periodic = in->periodic;
    for (int k = 0; k < 3; k++) {
        g->plo[k] = in->domain_min[k];
        g->period[k] = in->period[k];
    }
    return FLOE_OK;
}


/* MPI (decomp.c): the search over the cells of [lo, hi] only, the domain's
 * grid cut to a rank's box and a margin. The fluid's particles outside it
 * (none once migrated, but for a step's motion) are clamped into its face
 * cells as ever; the static boundary sets' particles outside are left out
 * of the search (nb_sorted.drop_outside): a rank's cell tables, sorts and
 * wall searches then scale with its box, not the domain, while each wall
 * stays whole in memory. Cells are the domain grid's, to the bit, so the
 * lists are those of one process. The boundary volumes are computed again
 * (those outside the window come out wrong and are never read: the margin
 * holds every wall particle within two support radii of a fluid particle
 * the rank computes, and the neighbours of those). Not with a device
 * (its kernels take the domain's grid). Sets *cells to the window's cell
 * count and *total to the domain grid's. decomp.c asks for it
 * (ctx->nb_win_pending), the next update applies it. */
static int nb_window(floe_ctx *ctx, const double lo[3], const double hi[3], uint64_t *cells, uint64_t *total)
{
    nb_grid full, w;
    int rc = full_grid(ctx, &full);
    if (rc)
        return rc;
    *total = (uint64_t)full.n[0] * (uint64_t)full.n[1] * (uint64_t)full.n[2];
    float l[3], h[3];
    for (int k = 0; k < 3; k++) { /* infinite faces clamp to the grid's */
        l[k] = isnan(lo[k]) ? -INFINITY : (float)lo[k];
        h[k] = isnan(hi[k]) ? INFINITY : (float)hi[k];
    }
    if (ctx->dev || nb_grid_window(&w, &full, l, h))
        w = full;
    *cells = (uint64_t)w.n[0] * (uint64_t)w.n[1] * (uint64_t)w.n[2];
    const nb_grid *g = &ctx->nbgrid;
    if (g->cell == w.cell && !memcmp(g->n, w.n, sizeof w.n) && !memcmp(g->off, w.off, sizeof w.off))
        return FLOE_OK; /* the same cells */
    ctx->nbgrid = w;
    const int windowed = *cells < *total;
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        p->sorted_valid = 0;
        p->sorted.drop_outside = windowed && p->kind == FLOE_SET_BOUNDARY && p->is_static;
        p->layout++; /* Verlet lists too */
    }
    ctx->nb_valid = 0;
    ctx->ksums_valid = 0;
    ctx->boundary_dirty = 1;
    return FLOE_OK;
}

int ctx_nb_grid_ensure(floe_ctx *ctx)
{
    if (ctx->nb_win_pending) {
        uint64_t cells, total;
        ctx->nb_win_pending = 0;
        int rc = nb_window(ctx, ctx->nb_win_lo, ctx->nb_win_hi, &cells, &total);
        if (!rc && !ctx->nb_win_logged) {
            int rank = 0;
            floe_mpi_size(&rank);
            ctx_log(ctx, FLOE_LOG_INFO, "mpi: rank %d: its neighbour search over %llu of the domain's %llu cells",
                    rank, (unsigned long long)cells, (unsigned long long)total);
            ctx->nb_win_logged = 1;
        }
        return rc;
    }
    if (ctx->nbgrid.cell > 0)
        return FLOE_OK;
    return full_grid(ctx, &ctx->nbgrid);
}

int ctx_nb_sort_set(floe_ctx *ctx, int s, int reorder)
{
    pset *p = &ctx->sets[s];
    float *x = pset_attr(p, "x")->data;
    if (nb_sort(&p->sorted, &ctx->nbgrid, x, p->n))
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "neighbour search: out of memory sorting set '%s'", p->name);
    /* neighbours{order = "id"}: each cell's particles in id order, so that
     * the lists, and every sum over them, do not depend on where particles
     * lie in memory (reorders, the ghosts of a decomposition: MPI runs with
     * it give one process's floats, docs/mpi.md);
     * before a reorder, so that memory follows that order too and the sort
     * after it is the identity (the search's contiguous path) */
    const attr *ida = pset_attr(p, "id");
    const int by_id = ctx->nb_by_id && p->kind == FLOE_SET_FLUID && ida && ida->type == FLOE_U32;
    if (by_id)
        nb_sorted_by_id(&p->sorted, ida->data);
    if (reorder && p->n > 1) {
        /* move every attribute along the cell key for memory locality, then
         * sort again (keys are now ascending, so order becomes the identity) */
        int rc = floe_set_reorder(ctx, ctx_set_handle(ctx, s), p->sorted.order);
        if (rc)
            return rc;
        x = pset_attr(p, "x")->data;
        if (nb_sort(&p->sorted, &ctx->nbgrid, x, p->n))
            return ctx_fail(ctx, FLOE_ERR_NOMEM, "neighbour search: out of memory sorting set '%s'", p->name);
        if (by_id) /* the reorder moved the id attribute too: the identity stays */
            nb_sorted_by_id(&p->sorted, pset_attr(p, "id")->data);
    }
    /* a static set is searched every step and sorted once: map the cells
     * near it, so that queries far from it (most fluid particles, for a
     * tank's walls) skip the search (without memory: the search still works) */
    if (p->is_static) {
        (void)nb_sorted_near(&p->sorted, &ctx->nbgrid);
        (void)nb_sorted_keep_slots(&p->sorted, pset_attr(p, "x")->data); /* without memory: gathered per build */
    }
    p->sorted_valid = 1;
    return FLOE_OK;
}

/* The weights and the room of the kernel sums of fluid set pq's list in
 * set t (floe_nlist.wsum): m of a fluid target, V of a boundary one. A
 * target without them gets none (ks->w stays NULL). */
int ctx_nb_ksum_target(floe_ctx *ctx, pset *pq, int t, float inv_H, nb_ksum *ks)
{
    pset *pt = &ctx->sets[t];
    const attr *w = pset_attr(pt, pt->kind == FLOE_SET_FLUID ? "m" : "V");
    if (!w || w->type != FLOE_F32)
        return FLOE_OK;
    if (pq->ksum_cap[t] < pq->n || !pq->ksum[t]) {
        float *b = aligned_alloc(64, ((size_t)(pq->n ? pq->n : 1) * sizeof(float) + 63) / 64 * 64);
        if (!b)
            return ctx_fail(ctx, FLOE_ERR_NOMEM, "neighbour search: out of memory for kernel sums of '%s'", pq->name);
        free(pq->ksum[t]);
        pq->ksum[t] = b;
        pq->ksum_cap[t] = pq->n;
    }
    *ks = (nb_ksum){.w = w->data, .inv_H = inv_H, .out = pq->ksum[t]};
    /* one mass for the whole set (the usual fluid): no loads of w per row */
    if (pt->kind == FLOE_SET_FLUID && pt->n) {
        const float *wd = w->data;
        int same = 1;
        for (uint32_t i = 1; i < pt->n; i++)
            same &= wd[i] == wd[0];
        ks->uniform = same;
        ks->w0 = wd[0];
    }
    return FLOE_OK;
}

int ctx_neighbours_update(floe_ctx *ctx, int reorder)
{
    int rc = ctx_nb_grid_ensure(ctx);
    for (int s = 0; s < ctx->npsets && ctx->dev; s++) /* a device: positions on the host */
        dev_host(ctx, &ctx->sets[s], pset_attr(&ctx->sets[s], "x"), 0);
    for (int s = 0; s < ctx->npsets && !rc; s++) {
        pset *p = &ctx->sets[s];
        if (p->is_static && p->sorted_valid)
            continue;
        /* static sets are reordered once, on their first sort */
        rc = ctx_nb_sort_set(ctx, s, p->is_static ? 1 : reorder);
    }
    ctx->ksums_valid = 0;
    const float inv_H = floe_kernel_make(ctx->info.dim, ctx->info.support).inv_H;
    for (int q = 0; q < ctx->npsets && !rc; q++) {
        pset *pq = &ctx->sets[q];
        if (pq->kind != FLOE_SET_FLUID)
            continue;
        const float *xq = pset_attr(pq, "x")->data;
        for (int t = 0; t < ctx->npsets; t++) {
            pset *pt = &ctx->sets[t];
            const float *xt = pset_attr(pt, "x")->data;
            nb_ksum ks = {0}, *ksp = NULL;
            pq->ksum_ok[t] = 0;
            if (ctx->ksums_wanted && (rc = ctx_nb_ksum_target(ctx, pq, t, inv_H, &ks)) == FLOE_OK && ks.w)
                ksp = &ks;
            if (rc)
                return rc;
            /* MPI: the ghosts' rows empty (what a stage computes on a ghost
             * is never used: its owner sends it before anyone reads it) */
            if (nb_build_rows(&pq->lists[t], &ctx->nbgrid, xq, pq->n, dd_owned(ctx, pq), &pt->sorted, xt,
                              ctx->info.support, q == t, ksp))
                return ctx_fail(ctx, FLOE_ERR_NOMEM, "neighbour search: out of memory for lists of '%s'", pq->name);
            pq->ksum_ok[t] = ksp && ks.done;
        }
    }
    if (!rc) {
        ctx->nb_valid = 1;
        ctx->ksums_valid = ctx->ksums_wanted;
        ctx->nb_updates++;
    }
    return rc;
}
