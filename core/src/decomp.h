/* Domain decomposition over MPI (decomp.c, docs/mpi.md): slabs along the
 * domain's longest axis, one per rank; each rank owns the fluid particles
 * of its slab (the first `owned` of each set), followed by ghosts: copies
 * of other ranks' particles within the support radius of the slab.
 * Boundary sets are whole on every rank. A context holds one pointer,
 * ctx->dd: NULL without MPI (or on one rank), where every call below
 * returns at once; a build without MPI compiles none of decomp.c and the
 * inline forms below are all there is. */
#ifndef FLOE_DECOMP_H
#define FLOE_DECOMP_H

#include "ctx.h"

/* per-rank figures of a frame, gathered on rank 0 for the run record */
typedef struct dd_frame_ranks {
    int n;
    uint32_t particles[64];
    float step_ms[64], comm_ms[64];
} dd_frame_ranks;

/* the rows of a split stage call (dd_split_rows) */
enum { DD_ROWS_OWNED = 1, DD_ROWS_GHOSTS, DD_ROWS_INTERIOR, DD_ROWS_BORDER };

#ifdef FLOE_HAVE_MPI
/* floe_run begins: the world is split the first time (each rank holds its
 * share of the set-up's fluid then); a pipeline or scene the decomposition
 * cannot run is refused with the reason (FLOE_ERR_ARG). */
int dd_run_begin(floe_ctx *ctx);
/* floe_run ends: ghosts dropped, the sets hold what this rank owns */
void dd_run_end(floe_ctx *ctx);
/* before a step's stages: migration of particles that left the slab (all
 * attributes), ghosts rebuilt */
int dd_step_begin(floe_ctx *ctx);
/* after them: ghosts dropped, particles outside the domain deleted (rule "delete") */
int dd_step_end(floe_ctx *ctx);
/* ghosts of what stage st reads that an earlier stage wrote this step;
 * after it: what it wrote marked */
int dd_stage_before(floe_ctx *ctx, const stage_inst *st);
void dd_stage_after(floe_ctx *ctx, const stage_inst *st);
uint32_t dd_owned(const floe_ctx *ctx, const pset *p);
int dd_halo(floe_ctx *ctx, const pset *p, void *data, size_t elem);
/* a stage split around the refresh it needs (pipeline.c): the refresh
 * posted (*posted: one was needed), the rows of each fluid set for the
 * calls (DD_ROWS_*, in ctx->rows), the refresh received; between: what
 * may run while it travels (the core's own-values stages) */
int dd_split_post(floe_ctx *ctx, const stage_inst *st, int *posted);
int dd_split_rows(floe_ctx *ctx, int which);
int dd_split_finish(floe_ctx *ctx);
int dd_split_done(floe_ctx *ctx);
int dd_split_between(const stage_inst *st);
/* values reduced over every rank in place (before the first run too) */
int dd_reduce(floe_ctx *ctx, double *v, int n, int op);
/* the core's "emit" stage (emit.c): the step's ghosts dropped before its
 * sinks and sources run (a later refresh fails naming `stage`); after them
 * (dd_emit_end) the sets are this rank's own particles, the sources' new
 * ones already cut to its box by geom_append (dd_keep_new) */
int dd_emit_begin(floe_ctx *ctx, const char *stage);
/* under MPI (2 ranks or more) a fluid particle a scene adds is held by one
 * rank: dd_keep_new says whether this one (its id, its position) */
int dd_splits_new(const floe_ctx *ctx);
/* --resume: every rank's checkpoint of the same run and frame (collective);
 * after restoring, the sets are this rank's owned particles */
int dd_same_checkpoint(floe_ctx *ctx, uint32_t ordinal, int frame);
int dd_restored(floe_ctx *ctx);
/* per-frame stages that need every particle (serial and per_frame, writing
 * no fluid attribute) run on rank 0 alone, between dd_gather (collective:
 * rank 0 then holds every rank's particles after its own) and dd_ungather */
int dd_gathers(const floe_ctx *ctx, const stage_inst *st);
int dd_gather(floe_ctx *ctx);
int dd_ungather(floe_ctx *ctx);
int dd_keep_new(const floe_ctx *ctx, uint32_t id, const float *x);
int dd_emit_end(floe_ctx *ctx);
/* 1 on the rank that writes files (rank 0, or no decomposition) */
int dd_writer(const floe_ctx *ctx);
/* frame end: timings gathered (collective), step time counted from here;
 * the load balance every K frames */
int dd_frame_end(floe_ctx *ctx, int frame, dd_frame_ranks *out);
void dd_step_time(floe_ctx *ctx, double ms);
/* any rank's stop request ends every rank's run (collective) */
int dd_stop_any(floe_ctx *ctx, int why);
void dd_free(floe_ctx *ctx);
#else
static inline int dd_run_begin(floe_ctx *ctx) { (void)ctx; return FLOE_OK; }
static inline void dd_run_end(floe_ctx *ctx) { (void)ctx; }
static inline int dd_step_begin(floe_ctx *ctx) { (void)ctx; return FLOE_OK; }
static inline int dd_step_end(floe_ctx *ctx) { (void)ctx; return FLOE_OK; }
static inline int dd_stage_before(floe_ctx *ctx, const stage_inst *st) { (void)ctx, (void)st; return FLOE_OK; }
static inline void dd_stage_after(floe_ctx *ctx, const stage_inst *st) { (void)ctx, (void)st; }
static inline int dd_split_post(floe_ctx *ctx, const stage_inst *st, int *posted)
{
    (void)ctx, (void)st;
    *posted = 0;
    return FLOE_OK;
}
static inline int dd_split_rows(floe_ctx *ctx, int which) { (void)ctx, (void)which; return FLOE_OK; }
static inline int dd_split_finish(floe_ctx *ctx) { (void)ctx; return FLOE_OK; }
static inline int dd_split_done(floe_ctx *ctx) { (void)ctx; return FLOE_OK; }
static inline int dd_split_between(const stage_inst *st) { (void)st; return 0; }
static inline uint32_t dd_owned(const floe_ctx *ctx, const pset *p) { (void)ctx; return p->n; }
static inline int dd_halo(floe_ctx *ctx, const pset *p, void *data, size_t elem)
{
    (void)ctx, (void)p, (void)data, (void)elem;
    return FLOE_OK;
}
static inline int dd_reduce(floe_ctx *ctx, double *v, int n, int op) { (void)ctx, (void)v, (void)n, (void)op; return FLOE_OK; }
static inline int dd_emit_begin(floe_ctx *ctx, const char *stage) { (void)ctx, (void)stage; return FLOE_OK; }
static inline int dd_splits_new(const floe_ctx *ctx) { (void)ctx; return 0; }
static inline int dd_same_checkpoint(floe_ctx *ctx, uint32_t ordinal, int frame)
{
    (void)ctx, (void)ordinal, (void)frame;
    return FLOE_OK;
}
static inline int dd_restored(floe_ctx *ctx) { (void)ctx; return FLOE_OK; }
static inline int dd_gathers(const floe_ctx *ctx, const stage_inst *st) { (void)ctx, (void)st; return 0; }
static inline int dd_gather(floe_ctx *ctx) { (void)ctx; return FLOE_OK; }
static inline int dd_ungather(floe_ctx *ctx) { (void)ctx; return FLOE_OK; }
static inline int dd_keep_new(const floe_ctx *ctx, uint32_t id, const float *x) { (void)ctx, (void)id, (void)x; return 1; }
static inline int dd_emit_end(floe_ctx *ctx) { (void)ctx; return FLOE_OK; }
static inline int dd_writer(const floe_ctx *ctx) { (void)ctx; return 1; }
static inline int dd_frame_end(floe_ctx *ctx, int frame, dd_frame_ranks *out)
{
    (void)ctx, (void)frame;
    out->n = 0;
    return FLOE_OK;
}
static inline void dd_step_time(floe_ctx *ctx, double ms) { (void)ctx, (void)ms; }
static inline int dd_stop_any(floe_ctx *ctx, int why) { (void)ctx; return why; }
static inline void dd_free(floe_ctx *ctx) { (void)ctx; }
#endif

#endif
