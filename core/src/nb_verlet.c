/* Verlet lists for the cpu neighbours stage: lists within support + skin,
 * built on a grid of cells that wide, reused while no two particles can
 * have closed the skin, and cut every step to the pairs within the support
 * radius (nb_filter), so the stages see exactly the lists a build every
 * step gives (the same sets; within a row, the order of the last build).
 *
 * A pair outside the lists was at least support + skin apart at their
 * build; it is within the support now only if its two particles moved by
 * skin together since. The lists are rebuilt when the two largest
 * displacements since the build (over every set that moves) add up to the
 * skin, less a margin for rounding (the molecular-dynamics rule, with the
 * two largest instead of twice the largest), and whenever a set changed
 * count, order or was written outside the step (pset.layout: emit, sinks,
 * deletes and clamps of particles outside the domain, sim:set, reorders,
 * resizes, a resume), at the start of each output frame (so a resumed run
 * rebuilds where the uninterrupted one did and its frames are the same
 * bytes) and when the particles are reordered along the cells (the
 * stage's reorder_every). docs/neighbours.md. */
#include "device.h"

#include "floe/kernel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* the grid of cells support + skin wide over the neighbour grid's extent */
static int vgrid_ensure(floe_ctx *ctx, float radius)
{
    nb_verlet *v = &ctx->verlet;
    const nb_grid *g = &ctx->nbgrid;
    if (v->grid.cell == radius && !memcmp(v->src_off, g->off, sizeof v->src_off) &&
        !memcmp(v->src_n, g->n, sizeof v->src_n))
        return FLOE_OK;
    float lo[3], hi[3];
    for (int k = 0; k < 3; k++) {
        lo[k] = g->origin[k] + (float)g->off[k] * g->cell; /* an MPI rank's window: its cells */
        hi[k] = lo[k] + (float)g->n[k] * g->cell;
    }
    if (nb_grid_init(&v->grid, ctx->info.dim, lo, hi, radius, (uint64_t)1 << 28))
        return ctx_fail(ctx, FLOE_ERR_ARG, "neighbour grid: the domain is too large for cells of %g m (more than "
                        "2^28 cells); shrink the domain, the skin or raise the spacing", (double)radius);
    memcpy(v->src_off, g->off, sizeof v->src_off);
    memcpy(v->src_n, g->n, sizeof v->src_n);
    v->valid = 0;
    return FLOE_OK;
}

/* The lists still hold every pair within the support: the sets are the ones
 * they were built for and no two particles closed the skin. */
static int lists_hold(floe_ctx *ctx, float skin)
{
    nb_verlet *v = &ctx->verlet;
    if (!v->valid || v->npsets != ctx->npsets)
        return 0;
    for (int s = 0; s < ctx->npsets; s++) {
        const pset *p = &ctx->sets[s];
        if (p->gen != v->gen[s] || p->n != v->n[s] || p->layout != v->layout[s] || p->is_static != v->is_static[s])
            return 0;
    }
    /* the two largest squared displacements of the particles that move */
    float t1 = 0.0f, t2 = 0.0f;
    int bad = 0;
    for (int s = 0; s < ctx->npsets; s++) {
        const pset *p = &ctx->sets[s];
        if (p->is_static || p->n == 0)
            continue;
        const float *restrict x = pset_attr((pset *)p, "x")->data, *restrict x0 = p->x0;
        const int64_t n = (int64_t)p->n;
#pragma omp parallel if (n >= 4096)
        {
            float a = 0.0f, b = 0.0f; /* this thread's two largest */
            int nan = 0;
#pragma omp for schedule(static) nowait
            for (int64_t i = 0; i < n; i++) {
                const float dx = x[3 * i] - x0[3 * i], dy = x[3 * i + 1] - x0[3 * i + 1],
                            dz = x[3 * i + 2] - x0[3 * i + 2];
                const float d2 = dx * dx + dy * dy + dz * dz;
                if (d2 > b) {
                    if (d2 > a) {
                        b = a;
                        a = d2;
                    } else
                        b = d2;
                }
                nan |= d2 != d2;
            }
#pragma omp critical(floe_verlet_top2)
            {
                bad |= nan;
                const float c[2] = {a, b};
                for (int k = 0; k < 2; k++) {
                    if (c[k] > t2) {
                        if (c[k] > t1) {
                            t2 = t1;
                            t1 = c[k];
                        } else
                            t2 = c[k];
                    }
                }
            }
        }
    }
    if (bad)
        return 0;
    /* margin: a hundredth of the skin, and the rounding of coordinates as
     * large as the grid's (positions and differences are floats) */
    const nb_grid *g = &ctx->verlet.grid;
    double big = 0;
    for (int k = 0; k < 3; k++) {
        big = fmax(big, fabs((double)g->origin[k]));
        big = fmax(big, fabs((double)g->origin[k] + (double)g->n[k] * g->cell));
    }
    const double limit = 0.99 * (double)skin - 16.0 * big * 0x1p-24;
    return sqrt((double)t1) + sqrt((double)t2) < limit;
}

/* x, y, z and the kernel sums' weight (m of a fluid set, V of a boundary
 * one; 0 without) of set s, 16 bytes a particle, for nb_filter */
static int pack_set(floe_ctx *ctx, int s)
{
    pset *p = &ctx->sets[s];
    if (p->pack_cap < p->n || !p->pack) {
        const uint32_t cap = p->n + p->n / 4 + 16;
        float *b = aligned_alloc(64, ((size_t)cap * 4 * sizeof(float) + 63) / 64 * 64);
        if (!b)
            return ctx_fail(ctx, FLOE_ERR_NOMEM, "neighbour search: out of memory for the records of '%s'", p->name);
        free(p->pack);
        p->pack = b;
        p->pack_cap = cap;
    }
    const float *restrict x = pset_attr(p, "x")->data;
    const attr *wa = pset_attr(p, p->kind == FLOE_SET_FLUID ? "m" : "V");
    const float *restrict w = wa && wa->type == FLOE_F32 ? wa->data : NULL;
    float *restrict r = p->pack;
    const int64_t n = (int64_t)p->n;
#pragma omp parallel for schedule(static) if (n >= 4096)
    for (int64_t i = 0; i < n; i++) {
        r[4 * i] = x[3 * i];
        r[4 * i + 1] = x[3 * i + 1];
        r[4 * i + 2] = x[3 * i + 2];
        r[4 * i + 3] = w ? w[i] : 0.0f;
    }
    return FLOE_OK;
}

/* Sort every set on the skin grid (fluid and moving sets reordered along
 * the cells with reorder), build the skin lists, keep the positions. */
static int rebuild(floe_ctx *ctx, int reorder)
{
    nb_verlet *v = &ctx->verlet;
    const nb_grid *g = &v->grid;
    v->valid = 0;
    int rc = FLOE_OK;
    for (int s = 0; s < ctx->npsets && !rc; s++) {
        pset *p = &ctx->sets[s];
        v->packed[s] = 0;
        if (p->is_static) {
            /* the neighbour grid's sort too (boundary volumes search it),
             * reordered on its first sort as ctx_neighbours_update does */
            if (!p->sorted_valid && (rc = ctx_nb_sort_set(ctx, s, 1)))
                break;
            if (p->vsorted_layout == p->layout && p->vsorted_cell == g->cell && p->vsorted.n == p->n &&
                p->vsorted.cell_start)
                continue; /* its sort on this grid still holds */
        }
        float *x = pset_attr(p, "x")->data;
        if (nb_sort(&p->vsorted, g, x, p->n))
            return ctx_fail(ctx, FLOE_ERR_NOMEM, "neighbour search: out of memory sorting set '%s'", p->name);
        if (reorder && !p->is_static && p->n > 1) {
            if ((rc = floe_set_reorder(ctx, ctx_set_handle(ctx, s), p->vsorted.order)))
                break;
            x = pset_attr(p, "x")->data;
            if (nb_sort(&p->vsorted, g, x, p->n))
                return ctx_fail(ctx, FLOE_ERR_NOMEM, "neighbour search: out of memory sorting set '%s'", p->name);
        }
        if (p->is_static) {
            (void)nb_sorted_near(&p->vsorted, g); /* without memory the search works without */
            (void)nb_sorted_keep_slots(&p->vsorted, x);
        }
        p->vsorted_layout = p->layout;
        p->vsorted_cell = p->is_static ? g->cell : 0.0f; /* a moving set is sorted at every build */
    }
    if (rc)
        return rc;
    for (int q = 0; q < ctx->npsets; q++) {
        pset *pq = &ctx->sets[q];
        if (pq->kind != FLOE_SET_FLUID)
            continue;
        const float *xq = pset_attr(pq, "x")->data;
        for (int t = 0; t < ctx->npsets; t++) {
            pset *pt = &ctx->sets[t];
            if (nb_build(&pq->vlists[t], g, xq, pq->n, &pt->vsorted, pset_attr(pt, "x")->data, g->cell, q == t))
                return ctx_fail(ctx, FLOE_ERR_NOMEM, "neighbour search: out of memory for lists of '%s'", pq->name);
        }
    }
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        if (!p->is_static) {
            if (p->x0_cap < p->n || !p->x0) {
                const uint32_t cap = p->n + p->n / 4 + 16;
                float *b = malloc((size_t)cap * 3 * sizeof(float));
                if (!b)
                    return ctx_fail(ctx, FLOE_ERR_NOMEM, "neighbour search: out of memory for set '%s'", p->name);
                free(p->x0);
                p->x0 = b;
                p->x0_cap = cap;
            }
            if (p->n)
                memcpy(p->x0, pset_attr(p, "x")->data, (size_t)p->n * 3 * sizeof(float));
        }
        v->gen[s] = p->gen;
        v->n[s] = p->n;
        v->layout[s] = p->layout;
        v->is_static[s] = (uint8_t)p->is_static;
    }
    v->npsets = ctx->npsets;
    v->radius = g->cell;
    v->valid = 1;
    v->builds++;
    return FLOE_OK;
}

int ctx_neighbours_verlet(floe_ctx *ctx, float skin, int reorder)
{
    /* order = id and MPI (ghosts appended every step): built every step */
    if (!(skin > 0.0f) || ctx->info.periodic || ctx->dev || ctx->nb_by_id || ctx->dd) {
        ctx->verlet.valid = 0;
        return ctx_neighbours_update(ctx, reorder);
    }
    int rc = ctx_nb_grid_ensure(ctx);
    const float h = ctx->info.support, radius = h * (1.0f + skin);
    if (!rc)
        rc = vgrid_ensure(ctx, radius);
    if (rc)
        return rc;
    const int again = reorder || ctx->nb_rebuild || !lists_hold(ctx, radius - h);
    ctx->nb_rebuild = 0;
    if (again && (rc = rebuild(ctx, reorder)))
        return rc;
    ctx->verlet.updates++;
    /* the run record's mean per frame: the share of steps that rebuilt */
    floe_core_api()->stat(ctx, "neighbours.rebuilt", again ? 1.0 : 0.0);
    /* the cut: every step */
    ctx->ksums_valid = 0;
    const float inv_H = floe_kernel_make(ctx->info.dim, h).inv_H;
    for (int t = 0; t < ctx->npsets && !rc; t++) {
        pset *pt = &ctx->sets[t];
        if ((!pt->is_static || !ctx->verlet.packed[t]) && !(rc = pack_set(ctx, t)))
            ctx->verlet.packed[t] = 1;
    }
    for (int q = 0; q < ctx->npsets && !rc; q++) {
        pset *pq = &ctx->sets[q];
        if (pq->kind != FLOE_SET_FLUID)
            continue;
        const float *xq = pset_attr(pq, "x")->data;
        for (int t = 0; t < ctx->npsets; t++) {
            nb_ksum ks = {0}, *ksp = NULL;
            pq->ksum_ok[t] = 0;
            if (ctx->ksums_wanted && (rc = ctx_nb_ksum_target(ctx, pq, t, inv_H, &ks)) == FLOE_OK && ks.w)
                ksp = &ks;
            if (rc)
                return rc;
            if (nb_filter(&pq->lists[t], &pq->vlists[t], ctx->info.dim, xq, ctx->sets[t].pack, h, ksp))
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
