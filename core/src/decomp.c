/* Domain decomposition over MPI (docs/mpi.md). Every rank runs the whole
 * scene's set-up and keeps a share of its fluid (dd_keep_new: by id); at
 * the first floe_run each particle is sent to the rank whose box holds it.
 * The boxes (decomp_geom.c: slabs along the
 * longest axis of the fluid and its tank, or a grid of boxes cut level by
 * level) sit at the quantiles of the particles' coordinates (histograms of
 * 4096 bins), so that ranks start with even counts; every `balance_every` frames the cuts
 * move again when the busiest rank holds more than 2% above the mean work,
 * each particle weighed by its neighbour pairs (floe_mpi_balance_by).
 *
 * This file holds the boxes, a run's and a step's begin and end, the
 * balance and the reductions. Each step begins with the particles that
 * left the box sent to their new owner and the ghosts rebuilt, or, between
 * rebuilds, the ghosts' rows sent again (decomp_move.c): every owned
 * particle within the support radius H (and the skin) of another box is
 * copied there, after that rank's own particles. A rank talks only to its
 * partners, the ranks whose box lies within H of its own
 * (MPI_Isend/MPI_Irecv, decomp_comm.c), except for a migration after the
 * boxes moved. Stages then run on the local arrays as in one process;
 * before each, the ghosts of the attributes it reads that an earlier stage
 * wrote are refreshed (decomp_halo.c). Boundary sets are whole on every
 * rank. A frame: each rank writes its part, rank 0 joins them
 * (decomp_io.c).
 *
 * Open MPI does the transport (MPI_Isend/Irecv, MPI_Allreduce, MPI_Gather);
 * nothing here talks to a socket. */
#include "decomp.h"
#include "decomp_cl.h"
#include "decomp_geom.h"

#include <floe/floe.h>

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef FLOE_HAVE_MPI
#include "decomp_int.h"

static int world_size = 1, world_rank = 0, balance_every = 10, balance_pairs = 1;
static double skin_frac = SKIN_DEFAULT; /* of the support radius (floe_mpi_skin) */

int floe_mpi_begin(int *argc, char ***argv, char *err, size_t errlen)
{
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited && MPI_Init(argc, argv) != MPI_SUCCESS) {
        if (err)
            snprintf(err, errlen, "MPI_Init failed");
        return -1;
    }
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    return world_rank;
}

void floe_mpi_end(int status)
{
    int inited = 0, fin = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&fin);
    if (!inited || fin)
        return;
    if (status != 0 && world_size > 1)
        MPI_Abort(MPI_COMM_WORLD, status);
    MPI_Finalize();
}

int floe_mpi_size(int *rank)
{
    if (rank)
        *rank = world_rank;
    return world_size;
}

void floe_mpi_balance_every(int frames) { balance_every = frames < 0 ? 0 : frames; }

int floe_mpi_balance_by(const char *what)
{
    if (!what || (strcmp(what, "pairs") && strcmp(what, "count")))
        return -1;
    balance_pairs = !strcmp(what, "pairs");
    return 0;
}

int floe_mpi_skin(double frac)
{
    if (!(frac >= 0 && frac <= 1))
        return -1;
    skin_frac = frac;
    return 0;
}

static int decomp_mode = DD_AUTO;

int floe_mpi_decomp(const char *mode)
{
    static const char *names[] = {"slabs", "boxes", "auto"};
    for (int m = 0; m < 3; m++)
        if (mode && !strcmp(mode, names[m])) {
            decomp_mode = m;
            return 0;
        }
    return -1;
}

/* ---- boxes ------------------------------------------------------------------ */

/* this rank's box, and its partners: the ranks whose box comes within the
 * halo's width of it (both ways: the relation is symmetric) */
static void set_partners(floe_ctx *ctx, struct floe_dd *d)
{
    const double R = dd_ghost_width(ctx);
    dd_geom_box(&d->geom, d->rank, d->lo, d->hi);
    d->np = 0;
    for (int q = 0; q < d->size; q++) {
        if (q == d->rank)
            continue;
        double lo[3], hi[3];
        dd_geom_box(&d->geom, q, lo, hi);
        int near = 1;
        for (int k = 0; k < 3; k++)
            near &= dd_gap_on_axis(ctx, k, d->lo[k], d->hi[k], lo[k], hi[k]) <= R;
        if (near)
            d->peer[d->np++] = q;
    }
}

/* the bounding box of the fluid particles (this rank's, or every rank's);
 * with the boundary's (the tank the fluid may fill) when tank is set */
static int fluid_bounds(floe_ctx *ctx, struct floe_dd *d, int tank, double lo[3], double hi[3])
{
    double b[6]; /* lo, -hi */
    dd_local_bounds(ctx, d, 0, tank, b);
    int rc = MPI_Allreduce(MPI_IN_PLACE, b, 6, MPI_DOUBLE, MPI_MIN, d->comm); /* over every rank's share */
    if (rc != MPI_SUCCESS)
        return dd_mpi_fail(ctx, rc, "MPI_Allreduce (bounds)");
    for (int k = 0; k < 3; k++) {
        lo[k] = isfinite(b[k]) ? b[k] : ctx->info.domain_min[k];
        hi[k] = isfinite(b[3 + k]) ? -b[3 + k] : ctx->info.domain_max[k];
        if (!(hi[k] > lo[k]))
            hi[k] = lo[k] + ctx->info.support;
    }
    return FLOE_OK;
}

/* The work of an owned fluid particle, for the balance: with pairs, its
 * neighbours in every set (the pair passes take most of a step, and a
 * particle in the bulk or by a wall has more of them than one in a splash)
 * plus BALANCE_FIXED, its own work (the sort, the integration, the checks)
 * counted in pairs; else 1. */
#define BALANCE_FIXED 8.0
static double work_of(const pset *p, uint32_t i, int pairs)
{
    if (!pairs)
        return 1;
    double w = BALANCE_FIXED;
    for (int t = 0; t < MAX_SETS; t++)
        if (p->lists[t].count && i < p->lists[t].n)
            w += p->lists[t].count[i];
    return w;
}

/* Whether the ranks weigh their particles by their pairs: asked for
 * (floe_mpi_balance_by), and host lists that cover the owned particles of
 * every fluid set on every rank (not before the first step, not on GPU
 * ranks, whose lists stay on the device) */
static int agree_pairs(floe_ctx *ctx, struct floe_dd *d, int *pairs)
{
    int mine = balance_pairs && !ctx->dev;
    for (int s = 0; s < ctx->npsets && mine; s++) {
        const pset *p = &ctx->sets[s];
        if (!p->gen || p->kind != FLOE_SET_FLUID)
            continue;
        int any = 0;
        for (int t = 0; t < MAX_SETS; t++)
            any |= p->lists[t].count && p->lists[t].n >= d->sets[s].owned;
        mine = any;
    }
    int e = MPI_Allreduce(&mine, pairs, 1, MPI_INT, MPI_LAND, d->comm);
    return e == MPI_SUCCESS ? FLOE_OK : dd_mpi_fail(ctx, e, "MPI_Allreduce (load balance)");
}

/* Cuts at the quantiles of the fluid particles' coordinates, level by
 * level (each level's histograms per parent piece, over the particles'
 * bounding box), every rank's owned particles counted, each by its work
 * (work_of) when pairs. moved: NULL for the first cuts; else set to
 * whether a cut moved, and when none did nothing else changes (no
 * migration). Slabs whose new cuts would leave the fullest rank at more
 * than `now` (the imbalance measured) less BALANCE_GAIN keep their cuts:
 * in a lattice one bin holds a whole layer, 2-3% of a rank, and the cuts
 * went one layer on and back at every other check. */
#define BALANCE_GAIN 0.005
static int place_cuts(floe_ctx *ctx, struct floe_dd *d, int pairs, double now, int *moved)
{
    const int last = d->geom.levels - 1;
    const size_t ncuts = d->geom.off[last] + (size_t)d->geom.nodes[last] * (size_t)(d->geom.parts[last] + 1);
    double *was = moved ? malloc(ncuts * sizeof *was) : NULL; /* the cuts before, to compare */
    if (moved && !was)
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory");
    if (was)
        memcpy(was, d->geom.cuts, ncuts * sizeof *was);
    double lo[3], hi[3];
    int rc = fluid_bounds(ctx, d, 0, lo, hi);
    for (int l = 0; l < d->geom.levels && !rc; l++) {
        const int k = d->geom.axis[l], nodes = d->geom.nodes[l];
        const double w = (hi[k] - lo[k]) / NBINS;
        double *h = calloc((size_t)nodes * NBINS, sizeof *h);
        if (!h) {
            free(was);
            return ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory");
        }
        for (int s = 0; s < ctx->npsets; s++) {
            const pset *p = &ctx->sets[s];
            if (p->kind != FLOE_SET_FLUID || !p->gen)
                continue;
            const float *x = pset_attr((pset *)p, "x")->data;
            const uint32_t n = d->sets[s].owned;
            for (uint32_t i = 0; i < n; i++) {
                int b = (int)floor((x[3 * i + k] - lo[k]) / w);
                h[(size_t)dd_geom_node(&d->geom, l, x + 3 * i) * NBINS + (b < 0 ? 0 : b >= NBINS ? NBINS - 1 : b)] +=
                    work_of(p, i, pairs);
            }
        }
        int e = MPI_Allreduce(MPI_IN_PLACE, h, nodes * NBINS, MPI_DOUBLE, MPI_SUM, d->comm);
        if (e != MPI_SUCCESS) {
            free(h), free(was);
            return dd_mpi_fail(ctx, e, "MPI_Allreduce (histogram)");
        }
        double most = 0;
        for (int node = 0; node < nodes; node++) {
            const double m = dd_geom_cut_row(&d->geom, l, node, h + (size_t)node * NBINS, NBINS, lo[k], hi[k]);
            most = m > most ? m : most;
        }
        free(h);
        if (moved && d->geom.levels == 1 && !(most < now - BALANCE_GAIN))
            memcpy(d->geom.cuts, was, ncuts * sizeof *was); /* no better than now */
    }
    const int changed = !was || memcmp(was, d->geom.cuts, ncuts * sizeof *was) != 0;
    free(was);
    if (moved)
        *moved = changed;
    if (!rc && changed) {
        set_partners(ctx, d);
        d->migrate_all = 1;
        dd_window_apply(ctx, d);
    }
    return rc;
}

/* a serial stage that runs once per frame and writes no fluid attribute:
 * gathered to rank 0 (dd_gather, decomp_scene.c), not refused */
int dd_gathers(const floe_ctx *ctx, const stage_inst *st)
{
    const floe_stage_desc *sd = st->desc;
    if (world_size < 2 || !sd || !st->per_frame || sd->size < offsetof(floe_stage_desc, serial) + sizeof sd->serial ||
        !sd->serial)
        return 0;
    for (const floe_attr_desc *a = sd->attrs; a && a->name; a++)
        if (a->kind == FLOE_SET_FLUID && (a->access & FLOE_WRITE))
            return 0; /* what it wrote on other ranks' particles would be lost */
    (void)ctx;
    return 1;
}

static const char *refusal(floe_ctx *ctx, char *buf, size_t len)
{
    /* boundary sets that move (rigid bodies, walls the scene moves) are
     * whole on every rank and move the same on every rank: the rigid
     * module steps its bodies from forces summed over the ranks; a module
     * that grows one (freeze) declares its stages serial */
    for (int i = 0; i < ctx->nstages; i++) {
        const stage_inst *st = &ctx->stages[i];
        const floe_stage_desc *sd = st->desc;
        if (sd && sd->size >= offsetof(floe_stage_desc, serial) + sizeof sd->serial && sd->serial &&
            !dd_gathers(ctx, st)) {
            snprintf(buf, len, "stage '%s' declares it cannot run on a part of the particles (floe_stage_desc.serial)",
                     st->name);
            return buf;
        }
    }
    return NULL;
}

/* ---- what the core calls --------------------------------------------------- */

static void dd_destroy(struct floe_dd *d)
{
    if (!d)
        return;
    for (int s = 0; s < MAX_SETS; s++) {
        dd_set *ds = &d->sets[s];
        free(ds->send_idx), free(ds->scnt), free(ds->soff), free(ds->rcnt), free(ds->roff);
        free(ds->iota), free(ds->border), free(ds->interior), free(ds->preq), free(ds->psbuf), free(ds->prbuf);
        free(ds->x0);
    }
    dd_geom_free(&d->geom);
    free(d->sbuf), free(d->rbuf), free(d->bs), free(d->bso), free(d->br), free(d->bro);
    free(d->peer), free(d->all), free(d->csend), free(d->crecv), free(d->req), free(d->dest), free(d->cand), free(d->fig);
    if (d->comm != MPI_COMM_NULL)
        MPI_Comm_free(&d->comm);
    free(d);
}

void dd_free(floe_ctx *ctx)
{
    dd_destroy(ctx->dd);
    ctx->dd = NULL;
}

int dd_run_begin(floe_ctx *ctx)
{
    if (world_size < 2)
        return FLOE_OK;
    char buf[512];
    const char *why = refusal(ctx, buf, sizeof buf);
    if (why)
        return ctx_fail(ctx, FLOE_ERR_ARG, "MPI (%d ranks): %s", world_size, why);
    if (ctx->dd) { /* a later run of the scene: the sets are already split */
        struct floe_dd *d = ctx->dd;
        /* what the scene added or removed between the runs (its additions
         * are already this rank's: dd_keep_new) */
        dd_all_owned(ctx);
        memset(d->ph_ms, 0, sizeof d->ph_ms), memset(d->ph_mpi, 0, sizeof d->ph_mpi);
        d->steps = d->halos = d->ghosts_sent = d->migrated = d->rebuilds = d->last_reorder = d->refits = 0;
        d->run_step_ms = 0;
        dd_cl_bus(ctx, &d->bus0[0], &d->bus0[1]);
        d->run_t0 = dd_now_ms();
        return FLOE_OK;
    }
    struct floe_dd *d = calloc(1, sizeof *d);
    if (!d)
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory");
    d->comm = MPI_COMM_NULL;
    d->skin = skin_frac * (double)ctx->info.support;
    for (int k = 0; k < 3; k++)
        d->fit_lo[k] = -INFINITY, d->fit_hi[k] = INFINITY;
    d->rebuild = 1;
    MPI_Comm_dup(MPI_COMM_WORLD, &d->comm);
    MPI_Comm_rank(d->comm, &d->rank);
    MPI_Comm_size(d->comm, &d->size);
    const size_t ni = (size_t)d->size * sizeof(int), nz = (size_t)d->size * sizeof(size_t);
    int ok = (d->bs = malloc(nz)) && (d->bso = malloc(nz)) && (d->br = malloc(nz)) && (d->bro = malloc(nz)) &&
             (d->peer = malloc(ni)) && (d->all = malloc(ni)) && (d->csend = malloc(nz)) &&
             (d->crecv = malloc(nz)) && (d->req = malloc(2 * (size_t)d->size * sizeof(MPI_Request)));
    for (int s = 0; s < MAX_SETS && ok; s++) {
        dd_set *ds = &d->sets[s];
        ok = (ds->scnt = calloc(1, nz)) && (ds->soff = calloc(1, nz)) && (ds->rcnt = calloc(1, nz)) &&
             (ds->roff = calloc(1, nz));
    }
    for (int q = 0, k = 0; q < d->size && ok; q++)
        if (q != d->rank)
            d->all[k++] = q;
    /* each rank holds a share of the fluid (dd_keep_new) and every boundary
     * set: the split follows the extent of the fluid and its tank (the
     * boundary sets), where the fluid may go */
    ctx->dd = d; /* dd_all_owned reads it (taken back below if anything failed) */
    if (ok)
        dd_all_owned(ctx);
    double lo[3], hi[3], ext[3];
    if (ok && !fluid_bounds(ctx, d, 1, lo, hi)) {
        for (int k = 0; k < 3; k++)
            ext[k] = k < ctx->info.dim ? hi[k] - lo[k] : 0;
        ok = !dd_geom_init(&d->geom, d->size, ctx->info.dim, ext, decomp_mode);
    }
    if (!ok) {
        ctx->dd = NULL;
        dd_destroy(d);
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory");
    }
    /* every rank past its scene's set-up (and its output root's checks)
     * before rank 0 writes anything */
    MPI_Barrier(d->comm);
    int rc = place_cuts(ctx, d, 0, 0, NULL); /* the cuts at the quantiles of every rank's share (no lists yet) */
    uint64_t total = 0;
    for (int s = 0; s < ctx->npsets && !rc; s++) { /* each particle to the rank whose box holds it */
        pset *p = &ctx->sets[s];
        if (!p->gen || p->kind != FLOE_SET_FLUID)
            continue;
        total += p->n;
        rc = dd_migrate(ctx, s);
        d->sets[s].owned = p->n;
    }
    d->migrate_all = 0;
    d->migrated = 0, d->kept_out = d->passed_on = 0; /* the figures count the steps' migrations */
    memset(d->ph_ms, 0, sizeof d->ph_ms), memset(d->ph_mpi, 0, sizeof d->ph_mpi);
    if (!rc && MPI_Allreduce(MPI_IN_PLACE, &total, 1, MPI_UINT64_T, MPI_SUM, d->comm) != MPI_SUCCESS)
        rc = ctx_fail(ctx, FLOE_ERR, "MPI: MPI_Allreduce (particle count) failed");
    if (rc) {
        dd_free(ctx);
        return rc;
    }
    uint64_t mine = 0;
    for (int s = 0; s < ctx->npsets; s++)
        mine += ctx->sets[s].kind == FLOE_SET_FLUID ? d->sets[s].owned : 0;
    static const char axes[] = "xyz";
    char box[256], how[96];
    int len = 0;
    for (int l = 0; l < d->geom.levels && len < (int)sizeof box - 64; l++) {
        const int k = d->geom.axis[l];
        len += snprintf(box + len, sizeof box - (size_t)len, "%s%c in [%.6g, %.6g)", l ? ", " : "", axes[k],
                        isfinite(d->lo[k]) ? d->lo[k] : ctx->info.domain_min[k],
                        isfinite(d->hi[k]) ? d->hi[k] : ctx->info.domain_max[k]);
    }
    dd_geom_describe(&d->geom, how, sizeof how);
    ctx_log(ctx, FLOE_LOG_INFO, "mpi: rank %d of %d (pid %ld): %s %s, %llu of %llu particles, %d partners", d->rank,
            d->size, (long)getpid(), d->geom.levels > 1 ? "box" : "slab", box, (unsigned long long)mine,
            (unsigned long long)total, d->np);
    if (d->rank == 0)
        ctx_log(ctx, FLOE_LOG_INFO, "mpi: %s", how);
    d->run_t0 = dd_now_ms();
    dd_cl_bus(ctx, &d->bus0[0], &d->bus0[1]);
    return FLOE_OK;
}

enum { F_STEPS, F_STEP_MS, F_PH, F_MPI = F_PH + NPH, F_HALOS = F_MPI + NPH, F_GHOSTS, F_MIGRATED, F_OWNED, F_OVERLAP, F_REBUILDS, F_REFITS, F_BUS_UP, F_BUS_DOWN, NFIG };

static void log_figures(floe_ctx *ctx, const struct floe_dd *d)
{
    for (int r = 0; r < d->size; r++) {
        const double *f = d->fig + (size_t)r * NFIG, st = f[F_STEPS] > 0 ? f[F_STEPS] : 1;
        ctx_log(ctx, FLOE_LOG_INFO,
                "mpi: rank %d, ms per step: %.3f in steps, of which migration %.3f (mpi %.3f), ghosts %.3f (mpi "
                "%.3f), halos %.3f (mpi %.3f, %.1f a step, %.1f overlapped); reductions %.3f (in and between steps); "
                "load balance %.3f; ghosts sent %.0f, migrated %.1f a step; %.0f owned; rebuilt at %.0f%% of the "
                "steps; search window fitted %.0f times", r, f[F_STEP_MS] / st,
                f[F_PH + PH_MIGRATE] / st, f[F_MPI + PH_MIGRATE] / st, f[F_PH + PH_GHOSTS] / st,
                f[F_MPI + PH_GHOSTS] / st, f[F_PH + PH_HALO] / st, f[F_MPI + PH_HALO] / st, f[F_HALOS] / st,
                f[F_OVERLAP] / st,
                f[F_PH + PH_REDUCE] / st, f[F_PH + PH_BALANCE] / st, f[F_GHOSTS] / st, f[F_MIGRATED] / st,
                f[F_OWNED], 100 * f[F_REBUILDS] / st, f[F_REFITS]);
        if (f[F_BUS_UP] + f[F_BUS_DOWN] > 0)
            ctx_log(ctx, FLOE_LOG_INFO, "mpi: rank %d, device copies a step: %.4g MB to the device, %.4g MB back", r,
                    1e-6 * f[F_BUS_UP] / st, 1e-6 * f[F_BUS_DOWN] / st);
    }
}

/* rank 0 logs where each rank's time in the decomposition went (the
 * figures gathered with each frame's timings: no collective here, a rank
 * may end the run alone on an error) */

void dd_run_end(floe_ctx *ctx)
{
    struct floe_dd *d = ctx->dd;
    if (!d)
        return;
    (void)dd_split_done(ctx); /* the last refresh's sends (taken by now: the partners ran on past it) */
    dd_drop_ghosts(ctx);
    if (d->rank == 0 && d->fig)
        log_figures(ctx, d);
}

/* the step's end: ghosts dropped; under the outside rule "delete" the
 * owned particles that left the domain deleted now (ctx_check_blowup
 * leaves them for this, the ghosts' numbering being the step's) */
int dd_step_end(floe_ctx *ctx)
{
    struct floe_dd *d = ctx->dd;
    if (!d)
        return FLOE_OK;
    int rc = dd_drop_ghosts(ctx);
    /* on the host the step's blow-up checks have seen every position a
     * stage wrote (ctx_check_blowup): a pass only when one lay outside;
     * on the device a pass over the positions read back (the compaction
     * reads every attribute back itself) */
    const int look = ctx->dd_outside || ctx->dev;
    ctx->dd_outside = 0;
    for (int s = 0; s < ctx->npsets && !rc && look && ctx->outside == FLOE_OUTSIDE_DELETE; s++) {
        pset *p = &ctx->sets[s];
        if (!p->gen || p->kind != FLOE_SET_FLUID || p->n == 0)
            continue;
        uint32_t on_dev = 0;
        if (!dd_cl_outside(ctx, p, p->n, &on_dev, &rc)) { /* OpenCL: counted on the device */
            if (rc)
                return rc;
            if (!on_dev)
                continue;
            dd_cl_positions(ctx, p);
        }
        const float *x = pset_attr(p, "x")->data, *lo = ctx->info.domain_min, *hi = ctx->info.domain_max;
        uint64_t out = 0;
        for (uint32_t i = 0; i < p->n; i++) {
            int in = 1;
            for (int k = 0; k < ctx->info.dim; k++)
                in &= x[3 * i + k] >= lo[k] && x[3 * i + k] <= hi[k];
            out += !in;
        }
        if (!out)
            continue;
        uint8_t *keep = malloc(p->n);
        if (!keep)
            return ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory");
        for (uint32_t i = 0; i < p->n; i++) {
            int in = 1;
            for (int k = 0; k < ctx->info.dim; k++)
                in &= x[3 * i + k] >= lo[k] && x[3 * i + k] <= hi[k];
            keep[i] = (uint8_t)in;
        }
        rc = ctx_set_compact(ctx, ctx_set_handle(ctx, s), keep);
        ctx->outside_count += out;
        d->sets[s].owned = p->n;
        free(keep);
    }
    return rc;
}

uint32_t dd_owned(const floe_ctx *ctx, const pset *p)
{
    if (!ctx->dd || p->kind != FLOE_SET_FLUID)
        return p->n;
    return ctx->dd->sets[p - ctx->sets].owned;
}

/* before the first run (the scene's sim:reduce at set-up) there is no
 * decomposition yet: the world's communicator, the same processes */
int dd_reduce(floe_ctx *ctx, double *v, int n, int op)
{
    struct floe_dd *d = ctx->dd;
    if (world_size < 2 || n <= 0)
        return FLOE_OK;
    if (op < FLOE_REDUCE_SUM || op > FLOE_REDUCE_MIN)
        return ctx_fail(ctx, FLOE_ERR_ARG, "reduce: unknown operation %d", op);
    const MPI_Op ops[] = {MPI_SUM, MPI_MAX, MPI_MIN};
    if (!d) {
        const int e = MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, ops[op], MPI_COMM_WORLD);
        return e == MPI_SUCCESS ? FLOE_OK : dd_mpi_fail(ctx, e, "MPI_Allreduce");
    }
    double t0 = dd_now_ms();
    int e = MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, ops[op], d->comm);
    double dt = dd_now_ms() - t0;
    d->comm_ms += dt;
    d->ph_ms[PH_REDUCE] += dt, d->ph_mpi[PH_REDUCE] += dt;
    return e == MPI_SUCCESS ? FLOE_OK : dd_mpi_fail(ctx, e, "MPI_Allreduce");
}

int dd_writer(const floe_ctx *ctx) { return !ctx->dd || ctx->dd->rank == 0; }

void dd_step_time(floe_ctx *ctx, double ms)
{
    if (ctx->dd) {
        ctx->dd->step_ms += ms;
        ctx->dd->run_step_ms += ms;
    }
}

/* every K frames: the boxes move to the quantiles of the particles' work
 * (work_of) when the busiest rank holds more than BALANCE_COUNT above the
 * mean (every rank waits for the busiest at each exchange: at 10%, the
 * reference bench's 4 ranks ran with one at 6.4% over the mean for the
 * whole run; docs/mpi.md) */
#define BALANCE_COUNT 1.02
static int balance(floe_ctx *ctx, struct floe_dd *d, int frame)
{
    double t0 = dd_now_ms();
    int pairs = 0;
    int e = agree_pairs(ctx, d, &pairs);
    if (e)
        return e;
    double mine = 0;
    for (int s = 0; s < ctx->npsets; s++) {
        const pset *p = &ctx->sets[s];
        if (!p->gen || p->kind != FLOE_SET_FLUID)
            continue;
        for (uint32_t i = 0; i < d->sets[s].owned; i++)
            mine += work_of(p, i, pairs);
    }
    double most = mine, total = mine;
    e = MPI_Allreduce(MPI_IN_PLACE, &most, 1, MPI_DOUBLE, MPI_MAX, d->comm);
    if (e == MPI_SUCCESS)
        e = MPI_Allreduce(MPI_IN_PLACE, &total, 1, MPI_DOUBLE, MPI_SUM, d->comm);
    if (e != MPI_SUCCESS)
        return dd_mpi_fail(ctx, e, "MPI_Allreduce (load balance)");
    const double imb = total > 0 ? most / (total / d->size) : 1;
    int rc = FLOE_OK;
    if (imb > BALANCE_COUNT) {
        int moved = 0;
        rc = place_cuts(ctx, d, pairs, imb, &moved);
        if (!rc && moved && d->rank == 0) {
            char line[1024];
            int len = 0;
            const double *c = dd_geom_row(&d->geom, 0, 0);
            for (int r = 1; r < d->geom.parts[0] && len < (int)sizeof line - 32; r++)
                len += snprintf(line + len, sizeof line - (size_t)len, "%s%.6g", r > 1 ? ", " : "", c[r]);
            if (d->geom.levels > 1)
                snprintf(line + len, sizeof line - (size_t)len, " along %c, and the cuts within each piece",
                         "xyz"[d->geom.axis[0]]);
            ctx_log(ctx, FLOE_LOG_INFO, "mpi: load balance after frame %d: the busiest rank held %.1f%% of the mean %s; "
                    "cuts moved to %s", frame, 100 * imb, pairs ? "work (neighbour pairs)" : "count", line);
        }
    }
    d->ph_ms[PH_BALANCE] += dd_now_ms() - t0;
    return rc;
}

int dd_frame_end(floe_ctx *ctx, int frame, dd_frame_ranks *out)
{
    struct floe_dd *d = ctx->dd;
    out->n = 0;
    if (!d)
        return FLOE_OK;
    uint64_t mine = 0;
    for (int s = 0; s < ctx->npsets; s++)
        mine += ctx->sets[s].gen && ctx->sets[s].kind == FLOE_SET_FLUID ? d->sets[s].owned : 0;
    /* this frame's timings, and the run's figures so far (logged at its end) */
    double v[3 + NFIG] = {(double)mine, d->step_ms, d->comm_ms};
    double *f = v + 3;
    f[F_STEPS] = (double)d->steps, f[F_STEP_MS] = d->run_step_ms, f[F_HALOS] = (double)d->halos;
    f[F_GHOSTS] = (double)d->ghosts_sent, f[F_MIGRATED] = (double)d->migrated, f[F_OWNED] = (double)mine;
    f[F_OVERLAP] = (double)d->overlapped, f[F_REBUILDS] = (double)d->rebuilds;
    f[F_REFITS] = (double)d->refits;
    dd_cl_bus(ctx, &f[F_BUS_UP], &f[F_BUS_DOWN]);
    f[F_BUS_UP] -= d->bus0[0], f[F_BUS_DOWN] -= d->bus0[1];
    for (int k = 0; k < NPH; k++)
        f[F_PH + k] = d->ph_ms[k], f[F_MPI + k] = d->ph_mpi[k];
    double *all = d->rank == 0 ? malloc((3 + NFIG) * sizeof *all * (size_t)d->size) : NULL;
    if (d->rank == 0 && !d->fig)
        d->fig = calloc((size_t)d->size * NFIG, sizeof *d->fig);
    int e = MPI_Gather(v, 3 + NFIG, MPI_DOUBLE, all, 3 + NFIG, MPI_DOUBLE, 0, d->comm);
    if (e != MPI_SUCCESS) {
        free(all);
        return dd_mpi_fail(ctx, e, "MPI_Gather (timings)");
    }
    if (all) {
        out->n = d->size < 64 ? d->size : 64;
        for (int r = 0; r < d->size; r++) {
            const double *a = all + (size_t)r * (3 + NFIG);
            if (r < out->n) {
                out->particles[r] = (uint32_t)a[0];
                out->step_ms[r] = (float)a[1];
                out->comm_ms[r] = (float)a[2];
            }
            if (d->fig)
                memcpy(d->fig + (size_t)r * NFIG, a + 3, NFIG * sizeof *a);
        }
        free(all);
    }
    d->step_ms = d->comm_ms = 0;
    if (balance_every > 0 && frame % balance_every == 0) /* ghosts are stale after: the next step rebuilds them */
        return balance(ctx, d, frame);
    return FLOE_OK;
}

int dd_stop_any(floe_ctx *ctx, int why)
{
    if (!ctx->dd)
        return why;
    int w = why, all = 0; /* codes are negative: the smallest is one that stops */
    MPI_Allreduce(&w, &all, 1, MPI_INT, MPI_MIN, ctx->dd->comm);
    return all;
}

#else /* a build without MPI */

int floe_mpi_begin(int *argc, char ***argv, char *err, size_t errlen)
{
    (void)argc, (void)argv;
    if (err)
        snprintf(err, errlen, "this floe was built without MPI (install libopenmpi-dev and rebuild: meson setup "
                 "--reconfigure -Dmpi=enabled build)");
    return -1;
}

void floe_mpi_end(int status) { (void)status; }

int floe_mpi_size(int *rank)
{
    if (rank)
        *rank = 0;
    return 1;
}

void floe_mpi_balance_every(int frames) { (void)frames; }
int floe_mpi_balance_by(const char *what) { return what && (!strcmp(what, "pairs") || !strcmp(what, "count")) ? 0 : -1; }
int floe_mpi_skin(double frac) { return frac >= 0 && frac <= 1 ? 0 : -1; }

int floe_mpi_decomp(const char *mode)
{
    return mode && (!strcmp(mode, "slabs") || !strcmp(mode, "boxes") || !strcmp(mode, "auto")) ? 0 : -1;
}

#endif
