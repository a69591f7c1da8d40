/* Domain decomposition over MPI, inside the core (decomp.c, decomp_move.c,
 * decomp_halo.c, decomp_scene.c; their shared helpers in decomp_comm.c):
 * a rank's state and the helpers its files share. Included only where
 * FLOE_HAVE_MPI is defined. */
#ifndef FLOE_DECOMP_INT_H
#define FLOE_DECOMP_INT_H

#include "decomp.h"
#include "decomp_geom.h"

#include <math.h>
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

enum { NBINS = 4096, REORDER_EVERY = 10 };
/* the messages' tags */
enum { TAG_COUNT = 11, TAG_MIGRATE, TAG_GHOSTS, TAG_HALO };
/* the skin of the ghost lists, a fraction of the support radius
 * (floe_mpi_skin, `--mpi-skin`; docs/mpi.md, "A step") */
#define SKIN_DEFAULT 0.5
#define SPLIT_PIECE ((size_t)4000) /* bytes: under the 4096 of Open MPI's shared-memory eager limit (btl_vader_eager_limit), its match header included */

/* where a rank's time in the decomposition goes (docs/mpi.md): each phase's
 * wall time, and of it the time inside MPI calls (transfers and waits for
 * the partners, whose unequal work shows here) */
enum { PH_MIGRATE, PH_GHOSTS, PH_HALO, PH_REDUCE, PH_BALANCE, NPH };

typedef struct dd_set {
    uint32_t owned, ghosts;
    uint32_t *send_idx;      /* owned particles sent as ghosts, grouped by partner */
    size_t send_cap;
    size_t *scnt, *soff, *rcnt, *roff; /* per partner, in particles */
    uint8_t dirty[MAX_ATTRS]; /* written since the ghosts were last sent */
    int fresh_in;             /* the running stage's reads are fresh on the ghosts */
    /* a split stage's rows (pipeline.c): 0..n-1, the owned particles within
     * the halo's width of a face (border) and the others (interior) */
    uint32_t *iota, *border, *interior;
    uint32_t nborder, ninterior, rows_cap, iota_cap;
    /* a refresh posted, not yet received (dd_split_post) */
    int pending, npreq, nprecv, sends_pending;
    MPI_Request *preq;
    size_t preq_cap;
    char *psbuf, *prbuf;
    size_t pscap, prcap;
    void *pdata[MAX_ATTRS];
    size_t pelem[MAX_ATTRS];
    int pk;
    /* the ghost lists kept between rebuilds (a skin: dd_step_begin): the
     * owned particles' positions at the last rebuild, and the set's layout
     * then (pset.layout: a change of count or order since ends the lists) */
    float *x0;
    size_t x0_cap;
    int x0_dev;               /* GPU ranks: the rebuild's positions kept on the device instead */
    uint32_t layout;
    int nattrs;
} dd_set;

struct floe_dd {
    MPI_Comm comm;
    int rank, size;
    dd_geom geom;
    double lo[3], hi[3];     /* this rank's box */
    int np, *peer;           /* partners: the ranks whose box lies within the halo width of this one */
    int *all;                /* every other rank (migration after the boxes moved) */
    int migrate_all;         /* the next migration may cross any distance */
    dd_set sets[MAX_SETS];
    char *sbuf, *rbuf;
    size_t scap, rcap;
    size_t *bs, *bso, *br, *bro; /* byte counts and offsets, per partner */
    uint64_t *csend, *crecv;
    MPI_Request *req;
    int *dest;               /* migration: each particle's new owner (-1: stays) */
    uint32_t *cand;          /* ghosts: the owned particles near the box's faces */
    size_t dest_cap, cand_cap;
    double comm_ms, step_ms; /* this frame */
    double ph_ms[NPH], ph_mpi[NPH]; /* this run */
    int phase;               /* where xchg counts its time */
    double *fig;             /* rank 0: every rank's figures of the run so far (NFIG each) */
    uint64_t steps, halos, ghosts_sent, migrated;
    double run_t0, run_step_ms;
    uint64_t passed_on;      /* particles passed on toward an owner that is not a partner */
    uint64_t overlapped;     /* halo refreshes overlapped with a split stage's interior rows */
    uint64_t kept_out;       /* passes that found no nearer partner (the particle stayed) */
    const char *ghosts_gone; /* the stage that dropped this step's ghosts ("emit"), until the next step */
    int gathered;            /* rank 0 holds every rank's particles after its own (dd_gather) */
    double skin;             /* metres: ghosts within H + skin, migration when a particle moved skin / 2 */
    int rebuild;             /* this rank needs a rebuild at the next step (a run began, the boxes moved) */
    uint64_t rebuilds;       /* steps that migrated and rebuilt the ghosts (the others forward their values) */
    uint64_t last_reorder;   /* the step of the last reorder_owned, + 1 (0: none yet) */
    double bus0[2];          /* OpenCL: bytes to and from the device at the run's start */
    /* the search window cut to this rank's fluid and a margin (dd_fit_window;
     * -/+infinity: not cut), and the times it was cut again in this run */
    double fit_lo[3], fit_hi[3];
    uint64_t refits;
};

/* decomp_window.c: the search window over the rank's box and a margin,
 * cut to its fluid (asked for; the next neighbour update applies it), and
 * at a rebuild (dd_step_begin) fitted again when the fluid came near its
 * faces */
void dd_window_apply(floe_ctx *ctx, struct floe_dd *d);
void dd_fit_window(floe_ctx *ctx);
/* this rank's bounding box of its fluid (owned particles, with the ghosts
 * when ghosts) and, when tank, of the boundary sets: b = lo[3], -hi[3],
 * +infinity where there is none */
void dd_local_bounds(const floe_ctx *ctx, const struct floe_dd *d, int ghosts, int tank, double b[6]);

/* ---- boxes: widths and distances (decomp.c places the boxes, decomp_move.c
 * sends particles into them) ---- */

/* the halo's width: the support radius, with room for rounding */
static inline double dd_halo_width(const floe_ctx *ctx) { return (double)ctx->info.support * (1 + 1e-4); }

/* the ghosts' width: the halo's and the skin (the particles' moves between
 * two rebuilds, skin / 2 each at most: dd_step_begin) */
static inline double dd_ghost_width(const floe_ctx *ctx) { return dd_halo_width(ctx) + ctx->dd->skin; }

/* Periodic axes (floe.sim{periodic}): the boxes at the domain's two ends
 * meet across it. An end box's open side is the domain's face there, and
 * distances along the axis are the shortest of the direct one and the two
 * across the wrap. */
static inline int dd_periodic_axis(const floe_ctx *ctx, int k) { return (ctx->info.periodic >> k) & 1u; }

static inline void dd_box_on_axis(const floe_ctx *ctx, int k, double *lo, double *hi)
{
    if (dd_periodic_axis(ctx, k)) {
        if (!isfinite(*lo))
            *lo = ctx->info.domain_min[k];
        if (!isfinite(*hi))
            *hi = ctx->info.domain_max[k];
    }
}

/* the distance along axis k between [a0, a1] and [b0, b1] (0 when they
 * overlap), across the wrap too on a periodic axis */
static inline double dd_gap_on_axis(const floe_ctx *ctx, int k, double a0, double a1, double b0, double b1)
{
    double best = INFINITY;
    const int per = dd_periodic_axis(ctx, k);
    const double L = (double)ctx->info.domain_max[k] - ctx->info.domain_min[k];
    if (per)
        dd_box_on_axis(ctx, k, &a0, &a1), dd_box_on_axis(ctx, k, &b0, &b1);
    for (int w = per ? -1 : 0; w <= (per ? 1 : 0); w++) {
        const double c0 = b0 + w * L, c1 = b1 + w * L;
        const double g = a1 < c0 ? c0 - a1 : c1 < a0 ? a0 - c1 : 0.0;
        best = g < best ? g : best;
    }
    return best;
}

double dd_now_ms(void);
/* *p at least `need` bytes (realloc); 0, or -1 out of memory */
int dd_grow(char **p, size_t *cap, size_t need);
/* the bytes of one particle with every attribute of the set, and its row
 * copied out of / into the set */
size_t dd_row_bytes(const pset *p);
void dd_pack_row(const pset *p, uint32_t i, char *dst);
void dd_unpack_row(pset *p, uint32_t i, const char *src);
/* Bytes to peer[k]: sc[k] from sbuf + so[k]; from peer[k]: rc[k] into
 * rbuf + ro[k], for each of the np partners (MPI_Isend/Irecv, then
 * MPI_Waitall); the time inside MPI counts toward d->phase */
int dd_xchg(floe_ctx *ctx, struct floe_dd *d, int np, const int *peer, const char *sbuf, const size_t *sc,
            const size_t *so, char *rbuf, const size_t *rc, const size_t *ro, int tag, const char *what);
/* an MPI call's failure as the context's error, naming the rank */
int dd_mpi_fail(floe_ctx *ctx, int rc, const char *what);
/* The particles of set s outside this rank's box sent to their owner
 * (decomp_move.c; dd_run_begin's first migration, dd_step_begin's) */
int dd_migrate(floe_ctx *ctx, int s);
/* the ghosts of the last step dropped: the sets hold the owned particles */
int dd_drop_ghosts(floe_ctx *ctx);
/* every fluid set's particles are this rank's own, no ghosts (after the
 * set-up, a restore, the sources and sinks) */
void dd_all_owned(floe_ctx *ctx);

#endif
