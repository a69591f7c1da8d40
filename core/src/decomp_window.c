/* The search window of an MPI rank (docs/mpi.md, "A rank's neighbour
 * search" and "The search window"): the cells of the domain's grid within
 * its box and a margin, cut to the fluid it holds; decomp.c asks for it
 * when the boxes move, decomp_move.c fits it at a rebuild, the next
 * neighbour update applies it (core/src/nb_update.c). */
#include "decomp.h"

#include <floe/floe.h>

#ifdef FLOE_HAVE_MPI
#include "decomp_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* the neighbour search over this rank's box and a margin (ctx_nb_window):
 * the halo's width, where its ghosts lie, and three support radii more,
 * which hold the walls' particles those ghosts and its own particles meet
 * and all of their neighbours (the walls' volumes) */
void dd_window_apply(floe_ctx *ctx, struct floe_dd *d)
{
    const double M = dd_ghost_width(ctx) + 0.5 * d->skin + 3.0 * (double)ctx->info.support;
    double lo[3], hi[3];
    for (int k = 0; k < 3; k++)
        lo[k] = -INFINITY, hi[k] = INFINITY;
    for (int l = 0; l < d->geom.levels; l++) {
        const int k = d->geom.axis[l];
        if (dd_periodic_axis(ctx, k))
            continue; /* the ghosts across the wrap keep their positions: the whole axis is searched */
        lo[k] = d->lo[k] - M;
        hi[k] = d->hi[k] + M;
    }
    for (int k = 0; k < ctx->info.dim; k++)
        if (!dd_periodic_axis(ctx, k)) {
            lo[k] = lo[k] > d->fit_lo[k] ? lo[k] : d->fit_lo[k];
            hi[k] = hi[k] < d->fit_hi[k] ? hi[k] : d->fit_hi[k];
        }
    memcpy(ctx->nb_win_lo, lo, sizeof lo), memcpy(ctx->nb_win_hi, hi, sizeof hi);
    ctx->nb_win_pending = 1; /* ctx_nb_grid_ensure applies it */
}

/* The search window fitted to this rank's fluid. The box's window
 * (dd_window_apply) spans the domain across the axes not cut, and an end
 * rank's reaches the domain's far end: the cell sort fills its table over
 * whole rows of the window between the fluid's smallest and largest cell
 * keys, and a rank's fluid fills a small part of that (docs/mpi.md, "The
 * search window"). Each axis is also cut to the extent of the fluid the
 * rank holds (owned and ghosts) and a margin: FIT_GUARD, what the window
 * must keep beyond the fluid (the walls within 3 H of a fluid particle and
 * the particles' moves until the next rebuild: skin / 2, or one step's
 * when the skin is 0), and FIT_SLACK more room, cut again only when the
 * fluid came within the guard of a face. The cells are the domain grid's:
 * the lists stay one process's. */
void dd_local_bounds(const floe_ctx *ctx, const struct floe_dd *d, int ghosts, int tank, double b[6])
{
    for (int k = 0; k < 6; k++)
        b[k] = INFINITY;
    for (int s = 0; s < ctx->npsets; s++) {
        const pset *p = &ctx->sets[s];
        if (!p->gen || (p->kind != FLOE_SET_FLUID && !(tank && p->kind == FLOE_SET_BOUNDARY)))
            continue;
        const float *x = pset_attr((pset *)p, "x")->data;
        const int64_t n = (int64_t)(p->kind != FLOE_SET_FLUID || ghosts ? p->n : d->sets[s].owned);
        double b0 = b[0], b1 = b[1], b2 = b[2], b3 = b[3], b4 = b[4], b5 = b[5];
#pragma omp parallel for schedule(static) reduction(min : b0, b1, b2, b3, b4, b5) if (n > 65536)
        for (int64_t i = 0; i < n; i++) {
            const double q0 = x[3 * i], q1 = x[3 * i + 1], q2 = x[3 * i + 2];
            b0 = q0 < b0 ? q0 : b0, b1 = q1 < b1 ? q1 : b1, b2 = q2 < b2 ? q2 : b2;
            b3 = -q0 < b3 ? -q0 : b3, b4 = -q1 < b4 ? -q1 : b4, b5 = -q2 < b5 ? -q2 : b5;
        }
        b[0] = b0, b[1] = b1, b[2] = b2, b[3] = b3, b[4] = b4, b[5] = b5;
    }
}

#define FIT_GUARD(ctx, d) (4.0 * (double)(ctx)->info.support + 0.5 * (d)->skin)
#define FIT_SLACK(ctx) (10.0 * (double)(ctx)->info.support)
/* FLOE_MPI_FIT=0: the box's window only (to measure what the fit gives) */
static int fit_off(void)
{
    const char *e = getenv("FLOE_MPI_FIT");
    return e && !strcmp(e, "0");
}
void dd_fit_window(floe_ctx *ctx)
{
    struct floe_dd *d = ctx->dd;
    if (!d || ctx->dev || fit_off()) /* a device searches the domain's grid */
        return;
    double b[6];
    dd_local_bounds(ctx, d, 1, 0, b);
    if (!isfinite(b[0])) /* no fluid here, or a position not a number (the blow-up check names it) */
        return;
    const double guard = FIT_GUARD(ctx, d), slack = FIT_SLACK(ctx);
    int cut = 0;
    for (int k = 0; k < ctx->info.dim; k++)
        cut |= !dd_periodic_axis(ctx, k) &&
               (b[k] - guard < d->fit_lo[k] || -b[3 + k] + guard > d->fit_hi[k] || !isfinite(d->fit_lo[k]));
    if (!cut)
        return;
    for (int k = 0; k < ctx->info.dim; k++)
        if (!dd_periodic_axis(ctx, k))
            d->fit_lo[k] = b[k] - guard - slack, d->fit_hi[k] = -b[3 + k] + guard + slack;
    d->refits++;
    dd_window_apply(ctx, d);
}

#endif
