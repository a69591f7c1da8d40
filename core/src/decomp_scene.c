/* Domain decomposition over MPI (docs/mpi.md): what the scene and the
 * core's own features need of it besides the step's exchanges. The
 * set-up's fluid shared out over the ranks, sources and sinks inside a
 * step, per-frame stages that need every particle (gathered to rank 0),
 * and checkpoints of every rank. */
#include "decomp.h"

#ifdef FLOE_HAVE_MPI
#include "decomp_cl.h"
#include "decomp_int.h"
#include "device.h"

#include <stdlib.h>
#include <string.h>

/* ---- checkpoints (checkpoint.c, run.c) ---------------------------------------
 * Each rank writes its own file (its owned particles, the boundary sets,
 * the modules' state) and reads it back on --resume; the ranks' files must
 * be of the same run and frame. The restored particles may lie in another
 * rank's box (the boxes come from the set-up's split): the first step's
 * migration goes to any rank. */
int dd_same_checkpoint(floe_ctx *ctx, uint32_t ordinal, int frame)
{
    struct floe_dd *d = ctx->dd;
    if (!d)
        return FLOE_OK;
    double v[4] = {ordinal, frame, -(double)ordinal, -(double)frame};
    int rc = dd_reduce(ctx, v, 4, FLOE_REDUCE_MAX);
    if (!rc && (v[0] != -v[2] || v[1] != -v[3]))
        rc = ctx_fail(ctx, FLOE_ERR_ARG, "--resume: the ranks' checkpoints are of different frames (rank %d's: run %u, "
                      "frame %d; others' up to run %.0f, frame %.0f): the run stopped while they were written",
                      d->rank, ordinal + 1, frame, v[0] + 1, v[1]);
    return rc;
}

int dd_restored(floe_ctx *ctx)
{
    struct floe_dd *d = ctx->dd;
    if (!d)
        return FLOE_OK;
    dd_all_owned(ctx);
    d->migrate_all = 1;
    return FLOE_OK;
}

/* ---- per-frame stages that need every particle (surfacers, carpet) ---------
 * A serial stage that runs once per frame (floe_stage_desc.serial and
 * per_frame) and writes no fluid attribute runs on rank 0 over every
 * rank's particles: dd_gather sends each rank's owned rows (every
 * attribute) to rank 0, which holds them after its own until dd_ungather.
 * Rank 0's memory then holds the whole fluid for the frame's stage. */
int dd_gather(floe_ctx *ctx)
{
    struct floe_dd *d = ctx->dd;
    if (!d)
        return FLOE_OK;
    dd_cl_host(ctx); /* OpenCL: the host copies, up to date */
    int *cnt = d->rank == 0 ? calloc((size_t)d->size * 2, sizeof *cnt) : NULL;
    if (d->rank == 0 && !cnt)
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory");
    int rc = FLOE_OK;
    for (int s = 0; s < ctx->npsets && !rc; s++) {
        pset *p = &ctx->sets[s];
        if (!p->gen || p->kind != FLOE_SET_FLUID)
            continue;
        const size_t row = dd_row_bytes(p), own = d->sets[s].owned;
        const size_t bytes = own * row;
        int mine = (int)bytes, e;
        if (bytes > (size_t)INT32_MAX) {
            rc = ctx_fail(ctx, FLOE_ERR, "MPI (rank %d): set '%s' is too large to gather for a frame stage (%zu bytes)",
                          d->rank, p->name, bytes);
            mine = -1;
        } else if (dd_grow(&d->sbuf, &d->scap, bytes + 1)) {
            rc = ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI (rank %d): out of memory for a frame stage's gather", d->rank);
            mine = -1;
        }
        if ((e = MPI_Gather(&mine, 1, MPI_INT, cnt, 1, MPI_INT, 0, d->comm)) != MPI_SUCCESS) {
            rc = dd_mpi_fail(ctx, e, "MPI_Gather (frame stage counts)");
            break;
        }
        size_t total = 0;
        int bad = rc != FLOE_OK;
        for (int r = 0; d->rank == 0 && r < d->size; r++) {
            bad |= cnt[r] < 0;
            cnt[d->size + r] = (int)total;
            total += cnt[r] > 0 ? (size_t)cnt[r] : 0;
        }
        if (d->rank == 0 && !bad && total > (size_t)INT32_MAX) {
            rc = ctx_fail(ctx, FLOE_ERR, "MPI: set '%s' is too large to gather for a frame stage (%zu bytes)",
                          p->name, total);
            bad = 1;
        } else if (d->rank == 0 && !bad && dd_grow(&d->rbuf, &d->rcap, total + 1)) {
            rc = ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory for a frame stage's gather (%zu bytes)", total);
            bad = 1;
        }
        /* every rank learns whether rank 0 can take the rows */
        if ((e = MPI_Bcast(&bad, 1, MPI_INT, 0, d->comm)) != MPI_SUCCESS) {
            rc = dd_mpi_fail(ctx, e, "MPI_Bcast (frame stage)");
            break;
        }
        if (bad) { /* every rank: none gathers */
            rc = rc ? rc : ctx_fail(ctx, FLOE_ERR, "MPI (rank %d): a rank could not gather set '%s' for a frame "
                                    "stage (too large, or out of memory)", d->rank, p->name);
            break;
        }
        for (size_t i = 0; i < own; i++)
            dd_pack_row(p, (uint32_t)i, d->sbuf + i * row);
        if ((e = MPI_Gatherv(d->sbuf, mine, MPI_BYTE, d->rbuf, cnt, cnt + d->size, MPI_BYTE, 0, d->comm)) !=
            MPI_SUCCESS) {
            rc = dd_mpi_fail(ctx, e, "MPI_Gatherv (frame stage)");
            break;
        }
        if (d->rank != 0)
            continue;
        /* rank 0: the other ranks' rows after its own */
        const size_t others = (total - bytes) / row;
        if ((rc = ctx_set_resize(ctx, ctx_set_handle(ctx, s), (uint32_t)(own + others))))
            break;
        size_t k = own;
        for (int r = 1; r < d->size; r++)
            for (size_t j = 0; j < (size_t)cnt[r] / row; j++)
                dd_unpack_row(p, (uint32_t)k++, d->rbuf + (size_t)cnt[d->size + r] + j * row);
        d->sets[s].ghosts = (uint32_t)others; /* the checks count them as ghosts */
        dev_moved(ctx, p);
    }
    free(cnt);
    d->gathered = 1; /* on an error too: dd_ungather takes rank 0's gathered rows away */
    return rc;
}

int dd_ungather(floe_ctx *ctx)
{
    struct floe_dd *d = ctx->dd;
    if (!d || !d->gathered)
        return FLOE_OK;
    d->gathered = 0;
    int rc = FLOE_OK;
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        if (!p->gen || p->kind != FLOE_SET_FLUID)
            continue;
        if (p->n != d->sets[s].owned && !rc)
            rc = ctx_set_resize(ctx, ctx_set_handle(ctx, s), d->sets[s].owned);
        d->sets[s].ghosts = 0;
        dev_moved(ctx, p);
    }
    return rc;
}

/* A fluid particle a scene adds (set-up, or between runs) is held by one
 * rank only: before the first run by its id (round robin: every rank holds
 * a share of the set-up's particles, never the whole), after it by the box
 * its position lies in. The first run then sends each particle to the
 * rank whose box holds it. */
int dd_keep_new(const floe_ctx *ctx, uint32_t id, const float *x)
{
    int rank = 0;
    const int size = floe_mpi_size(&rank);
    if (size < 2)
        return 1;
    if (ctx->dd)
        return dd_geom_owner(&ctx->dd->geom, x) == ctx->dd->rank;
    return id % (uint32_t)size == (uint32_t)rank;
}

int dd_splits_new(const floe_ctx *ctx)
{
    (void)ctx;
    return floe_mpi_size(NULL) > 1;
}

/* ---- sources and sinks (the core's "emit" stage, emit.c) ----------------------
 * The stage changes the sets inside a step: its sinks remove particles and
 * its sources add them. Under MPI the ghosts are dropped first (a later
 * stage that would need them fails, naming the stage), each rank's sinks
 * look at its own particles, and every rank runs every source as one
 * process does (the same layers, the same ids); geom_append keeps the new
 * particles inside its box (dd_keep_new). */
int dd_emit_begin(floe_ctx *ctx, const char *stage)
{
    struct floe_dd *d = ctx->dd;
    if (!d)
        return FLOE_OK;
    (void)dd_split_done(ctx); /* a split stage's sends still under way read the rows about to move */
    dd_cl_host(ctx);          /* OpenCL: the sets on the host, as for a migration */
    int rc = dd_drop_ghosts(ctx);
    d->ghosts_gone = stage;
    return rc;
}

int dd_emit_end(floe_ctx *ctx)
{
    if (ctx->dd)
        dd_all_owned(ctx);
    return FLOE_OK;
}
#endif
