/* Domain decomposition over MPI (docs/mpi.md). Every rank runs the whole
 * scene's set-up and keeps a share of its fluid (dd_keep_new: by id); at
 * the first floe_run each particle is sent to the rank whose box holds it.
 * The boxes (decomp_geom.c: slabs along the
 * longest axis of the fluid and its tank, or a grid of boxes cut level by
 * level) sit at the quantiles of the particles' coordinates (histograms of
 * 4096 bins), so that ranks start with even counts; every `balance_every` frames the cuts
 * move again when the fullest rank holds more than 2% above the mean.
 *
 * Each step begins with the ghosts dropped, the particles that left the
 * box sent to their new owner with all their attributes (packed rows) and
 * the ghosts rebuilt: every owned particle within the support radius H of
 * another box is copied there, after that rank's own particles. A rank
 * talks only to its partners, the ranks whose box lies within H of its own
 * (MPI_Isend/MPI_Irecv), except for a migration after the boxes moved. Stages then run on the local arrays as in one process; before
 * each, the ghosts of the attributes it reads that an earlier stage wrote
 * are refreshed (owners send, in the ghost order of the step). Boundary
 * sets are whole on every rank. A frame: each rank writes its part, rank 0
 * joins them (decomp_io.c).
 *
 * Open MPI does the transport (MPI_Isend/Irecv, MPI_Allreduce, MPI_Gather);
 * nothing here talks to a socket. */
#include "decomp.h"
#include "decomp_cl.h"
#include "decomp_geom.h"
#include "out_path.h"

#include <floe/floe.h>

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef FLOE_HAVE_MPI
#include "decomp_int.h"

static int world_size = 1, world_rank = 0, balance_every = 10;
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

double dd_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

int dd_grow(char **p, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t n = need + need / 2 + 4096;
    char *q = realloc(*p, n);
    if (!q)
        return -1;
    *p = q;
    *cap = n;
    return 0;
}

size_t dd_row_bytes(const pset *p)
{
    size_t b = 0;
    for (int a = 0; a < p->nattrs; a++)
        b += floe_type_size(p->attrs[a].type);
    return b;
}

void dd_pack_row(const pset *p, uint32_t i, char *dst)
{
    for (int a = 0; a < p->nattrs; a++) {
        size_t es = floe_type_size(p->attrs[a].type);
        memcpy(dst, (const char *)p->attrs[a].data + (size_t)i * es, es);
        dst += es;
    }
}

void dd_unpack_row(pset *p, uint32_t i, const char *src)
{
    for (int a = 0; a < p->nattrs; a++) {
        size_t es = floe_type_size(p->attrs[a].type);
        memcpy((char *)p->attrs[a].data + (size_t)i * es, src, es);
        src += es;
    }
}

/* Ghost messages go by columns: for each attribute in turn, the values of
 * the particles sent (a gather of fixed-size elements); the receiver
 * copies each column whole into place. Rows (pack_row) cost a call per
 * attribute and particle. */
static void pack_columns(const pset *p, const uint32_t *idx, size_t m, char *dst)
{
    for (int a = 0; a < p->nattrs; a++) {
        const size_t es = floe_type_size(p->attrs[a].type);
        const char *src = p->attrs[a].data;
        if (es == 4) {
            const uint32_t *s4 = (const uint32_t *)(const void *)src;
            uint32_t *d4 = (uint32_t *)(void *)dst;
            for (size_t j = 0; j < m; j++)
                d4[j] = s4[idx[j]];
        } else if (es == 12) {
            const float *s3 = (const float *)(const void *)src;
            float *d3 = (float *)(void *)dst;
            for (size_t j = 0; j < m; j++) {
                const float *q = s3 + 3 * (size_t)idx[j];
                d3[3 * j] = q[0], d3[3 * j + 1] = q[1], d3[3 * j + 2] = q[2];
            }
        } else
            for (size_t j = 0; j < m; j++)
                memcpy(dst + j * es, src + (size_t)idx[j] * es, es);
        dst += m * es;
    }
}

static void unpack_columns(pset *p, uint32_t first, size_t m, const char *src)
{
    for (int a = 0; a < p->nattrs; a++) {
        const size_t es = floe_type_size(p->attrs[a].type);
        memcpy((char *)p->attrs[a].data + (size_t)first * es, src, m * es);
        src += m * es;
    }
}

int dd_mpi_fail(floe_ctx *ctx, int rc, const char *what)
{
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, s, &len);
    return ctx_fail(ctx, FLOE_ERR, "MPI (rank %d): %s failed: %s", ctx->dd ? ctx->dd->rank : world_rank, what, s);
}

/* ---- point to point with the partners ---------------------------------------- */

/* Bytes to peer[k]: sc[k] from sbuf + so[k]; from peer[k]: rc[k] into
 * rbuf + ro[k] (or rdst[k] when given). Only the partners talk: a rank
 * sends to and receives from its neighbouring boxes, not every rank. */
static int xchg(floe_ctx *ctx, struct floe_dd *d, int np, const int *peer, const char *sbuf, const size_t *sc,
                const size_t *so, char *rbuf, const size_t *rc, const size_t *ro, int tag, const char *what)
{
    int nr = 0, e = MPI_SUCCESS;
    double t0 = dd_now_ms();
    for (int k = 0; k < np && e == MPI_SUCCESS; k++) {
        if (sc[k] > (size_t)INT32_MAX || rc[k] > (size_t)INT32_MAX)
            return ctx_fail(ctx, FLOE_ERR, "MPI: more than 2 GiB to exchange with rank %d in one message on rank %d (%s)",
                            peer[k], d->rank, what);
        if (rc[k])
            e = MPI_Irecv(rbuf + ro[k], (int)rc[k], MPI_BYTE, peer[k], tag, d->comm, &d->req[nr++]);
    }
    for (int k = 0; k < np && e == MPI_SUCCESS; k++)
        if (sc[k])
            e = MPI_Isend(sbuf + so[k], (int)sc[k], MPI_BYTE, peer[k], tag, d->comm, &d->req[nr++]);
    if (e == MPI_SUCCESS)
        e = MPI_Waitall(nr, d->req, MPI_STATUSES_IGNORE);
    d->ph_mpi[d->phase] += dd_now_ms() - t0;
    return e == MPI_SUCCESS ? FLOE_OK : dd_mpi_fail(ctx, e, what);
}

/* how many particles each partner sends (cnt to peer[k] out, from it in) */
static int xchg_counts(floe_ctx *ctx, struct floe_dd *d, int np, const int *peer, const size_t *out, size_t *in,
                       int tag)
{
    int nr = 0, e = MPI_SUCCESS;
    double t0 = dd_now_ms();
    for (int k = 0; k < np && e == MPI_SUCCESS; k++)
        e = MPI_Irecv(&d->crecv[k], 1, MPI_UINT64_T, peer[k], tag, d->comm, &d->req[nr++]);
    for (int k = 0; k < np && e == MPI_SUCCESS; k++) {
        d->csend[k] = out[k];
        e = MPI_Isend(&d->csend[k], 1, MPI_UINT64_T, peer[k], tag, d->comm, &d->req[nr++]);
    }
    if (e == MPI_SUCCESS)
        e = MPI_Waitall(nr, d->req, MPI_STATUSES_IGNORE);
    for (int k = 0; k < np; k++)
        in[k] = (size_t)d->crecv[k];
    d->ph_mpi[d->phase] += dd_now_ms() - t0;
    return e == MPI_SUCCESS ? FLOE_OK : dd_mpi_fail(ctx, e, "exchange of counts");
}

enum { TAG_COUNT = 11, TAG_MIGRATE, TAG_GHOSTS, TAG_HALO };

/* ---- boxes ------------------------------------------------------------------ */

/* the halo's width: the support radius, with room for rounding */
static double halo_width(const floe_ctx *ctx) { return (double)ctx->info.support * (1 + 1e-4); }

/* the ghosts' width: the halo's and the skin (the particles' moves between
 * two rebuilds, skin / 2 each at most: dd_step_begin) */
static double ghost_width(const floe_ctx *ctx) { return halo_width(ctx) + ctx->dd->skin; }

/* Periodic axes (floe.sim{periodic}): the boxes at the domain's two ends
 * meet across it. An end box's open side is the domain's face there, and
 * distances along the axis are the shortest of the direct one and the two
 * across the wrap. */
static int periodic_axis(const floe_ctx *ctx, int k) { return (ctx->info.periodic >> k) & 1u; }

static void box_on_axis(const floe_ctx *ctx, int k, double *lo, double *hi)
{
    if (periodic_axis(ctx, k)) {
        if (!isfinite(*lo))
            *lo = ctx->info.domain_min[k];
        if (!isfinite(*hi))
            *hi = ctx->info.domain_max[k];
    }
}

/* the distance along axis k between [a0, a1] and [b0, b1] (0 when they
 * overlap), across the wrap too on a periodic axis */
static double gap_on_axis(const floe_ctx *ctx, int k, double a0, double a1, double b0, double b1)
{
    double best = INFINITY;
    const int per = periodic_axis(ctx, k);
    const double L = (double)ctx->info.domain_max[k] - ctx->info.domain_min[k];
    if (per)
        box_on_axis(ctx, k, &a0, &a1), box_on_axis(ctx, k, &b0, &b1);
    for (int w = per ? -1 : 0; w <= (per ? 1 : 0); w++) {
        const double c0 = b0 + w * L, c1 = b1 + w * L;
        const double g = a1 < c0 ? c0 - a1 : c1 < a0 ? a0 - c1 : 0.0;
        best = g < best ? g : best;
    }
    return best;
}

/* this rank's box, and its partners: the ranks whose box comes within the
 * halo's width of it (both ways: the relation is symmetric) */
static void set_partners(floe_ctx *ctx, struct floe_dd *d)
{
    const double R = ghost_width(ctx);
    dd_geom_box(&d->geom, d->rank, d->lo, d->hi);
    d->np = 0;
    for (int q = 0; q < d->size; q++) {
        if (q == d->rank)
            continue;
        double lo[3], hi[3];
        dd_geom_box(&d->geom, q, lo, hi);
        int near = 1;
        for (int k = 0; k < 3; k++)
            near &= gap_on_axis(ctx, k, d->lo[k], d->hi[k], lo[k], hi[k]) <= R;
        if (near)
            d->peer[d->np++] = q;
    }
}

/* the neighbour search over this rank's box and a margin (ctx_nb_window):
 * the halo's width, where its ghosts lie, and three support radii more,
 * which hold the walls' particles those ghosts and its own particles meet
 * and all of their neighbours (the walls' volumes) */
static void apply_window(floe_ctx *ctx, struct floe_dd *d)
{
    const double M = ghost_width(ctx) + 0.5 * d->skin + 3.0 * (double)ctx->info.support;
    double lo[3], hi[3];
    for (int k = 0; k < 3; k++)
        lo[k] = -INFINITY, hi[k] = INFINITY;
    for (int l = 0; l < d->geom.levels; l++) {
        const int k = d->geom.axis[l];
        if (periodic_axis(ctx, k))
            continue; /* the ghosts across the wrap keep their positions: the whole axis is searched */
        lo[k] = d->lo[k] - M;
        hi[k] = d->hi[k] + M;
    }
    memcpy(ctx->nb_win_lo, lo, sizeof lo), memcpy(ctx->nb_win_hi, hi, sizeof hi);
    ctx->nb_win_pending = 1; /* ctx_nb_grid_ensure applies it */
}

static int inside(const struct floe_dd *d, const float *x)
{
    for (int l = 0; l < d->geom.levels; l++) {
        const int k = d->geom.axis[l];
        if (!(x[k] >= d->lo[k] && x[k] < d->hi[k]))
            return 0;
    }
    return 1;
}

/* the bounding box of the fluid particles (this rank's, or every rank's);
 * with the boundary's (the tank the fluid may fill) when tank is set */
static int fluid_bounds(floe_ctx *ctx, struct floe_dd *d, int tank, double lo[3], double hi[3])
{
    double b[6] = {INFINITY, INFINITY, INFINITY, INFINITY, INFINITY, INFINITY}; /* lo, -hi */
    for (int s = 0; s < ctx->npsets; s++) {
        const pset *p = &ctx->sets[s];
        if (!p->gen || (p->kind != FLOE_SET_FLUID && !(tank && p->kind == FLOE_SET_BOUNDARY)))
            continue;
        const float *x = pset_attr((pset *)p, "x")->data;
        const uint32_t n = p->kind != FLOE_SET_FLUID ? p->n : d->sets[s].owned;
        for (uint32_t i = 0; i < n; i++)
            for (int k = 0; k < 3; k++) {
                if (x[3 * i + k] < b[k])
                    b[k] = x[3 * i + k];
                if (-x[3 * i + k] < b[3 + k])
                    b[3 + k] = -x[3 * i + k];
            }
    }
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

/* Cuts at the quantiles of the fluid particles' coordinates, level by
 * level (each level's histograms per parent piece, over the particles'
 * bounding box), every rank's owned particles counted. */
static int place_cuts(floe_ctx *ctx, struct floe_dd *d)
{
    double lo[3], hi[3];
    int rc = fluid_bounds(ctx, d, 0, lo, hi);
    for (int l = 0; l < d->geom.levels && !rc; l++) {
        const int k = d->geom.axis[l], nodes = d->geom.nodes[l];
        const double w = (hi[k] - lo[k]) / NBINS;
        double *h = calloc((size_t)nodes * NBINS, sizeof *h);
        if (!h)
            return ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory");
        for (int s = 0; s < ctx->npsets; s++) {
            const pset *p = &ctx->sets[s];
            if (p->kind != FLOE_SET_FLUID || !p->gen)
                continue;
            const float *x = pset_attr((pset *)p, "x")->data;
            const uint32_t n = d->sets[s].owned;
            for (uint32_t i = 0; i < n; i++) {
                int b = (int)floor((x[3 * i + k] - lo[k]) / w);
                h[(size_t)dd_geom_node(&d->geom, l, x + 3 * i) * NBINS + (b < 0 ? 0 : b >= NBINS ? NBINS - 1 : b)] += 1;
            }
        }
        int e = MPI_Allreduce(MPI_IN_PLACE, h, nodes * NBINS, MPI_DOUBLE, MPI_SUM, d->comm);
        if (e != MPI_SUCCESS) {
            free(h);
            return dd_mpi_fail(ctx, e, "MPI_Allreduce (histogram)");
        }
        for (int node = 0; node < nodes; node++)
            dd_geom_cut_row(&d->geom, l, node, h + (size_t)node * NBINS, NBINS, lo[k], hi[k]);
        free(h);
    }
    if (!rc) {
        set_partners(ctx, d);
        d->migrate_all = 1;
        apply_window(ctx, d);
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

/* ---- migration and ghosts ---------------------------------------------------- */


/* ---- migration and ghosts ---------------------------------------------------- */

void dd_all_owned(floe_ctx *ctx)
{
    for (int s = 0; s < ctx->npsets; s++)
        if (ctx->sets[s].gen && ctx->sets[s].kind == FLOE_SET_FLUID)
            ctx->dd->sets[s].owned = ctx->sets[s].n, ctx->dd->sets[s].ghosts = 0;
    ctx->dd->rebuild = 1; /* the ghost lists are of other sets */
}

int dd_drop_ghosts(floe_ctx *ctx)
{
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        if (p->gen && p->kind == FLOE_SET_FLUID && p->n != ctx->dd->sets[s].owned) {
            if (p->n != ctx->dd->sets[s].owned + ctx->dd->sets[s].ghosts)
                return ctx_fail(ctx, FLOE_ERR, "MPI (rank %d): set '%s' changed size during a step (%u particles, "
                                "%u owned and %u ghosts): a stage added or removed particles, which the decomposition "
                                "does not follow", ctx->dd->rank, p->name, p->n, ctx->dd->sets[s].owned,
                                ctx->dd->sets[s].ghosts);
            p->n = ctx->dd->sets[s].owned; /* the ghosts are the last particles */
        }
        ctx->dd->sets[s].ghosts = 0;
        p->ghosts = 0;
    }
    return FLOE_OK;
}

static int reserve_dest(floe_ctx *ctx, struct floe_dd *d, size_t n)
{
    if (n <= d->dest_cap)
        return FLOE_OK;
    size_t cap = n + n / 2 + 1024;
    int *a = realloc(d->dest, cap * sizeof *a);
    if (a)
        d->dest = a;
    uint32_t *b = realloc(d->cand, cap * sizeof *b);
    if (b)
        d->cand = b;
    if (!a || !b)
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory");
    d->dest_cap = d->cand_cap = cap;
    return FLOE_OK;
}

/* the squared distance from x to rank r's box (this rank's: r < 0) along
 * the cut axes (the boxes are unbounded along the others) */
static double box_dist2(const floe_ctx *ctx, const struct floe_dd *d, int r, const float *x)
{
    double lo[3], hi[3], d2 = 0;
    if (r < 0)
        memcpy(lo, d->lo, sizeof lo), memcpy(hi, d->hi, sizeof hi);
    else
        dd_geom_box(&d->geom, r, lo, hi);
    for (int l = 0; l < d->geom.levels; l++) {
        const int k = d->geom.axis[l];
        const double q = gap_on_axis(ctx, k, x[k], x[k], lo[k], hi[k]);
        d2 += q * q;
    }
    return d2;
}

/* A particle whose new owner is not a partner (it crossed more than a
 * neighbouring box in one step): the partner whose box lies nearest to it,
 * if nearer than this rank's, which passes it on at its next step, and so
 * on: the distance falls at each pass, so it arrives. On the way it is
 * owned outside its owner's box for a step or two (its neighbours there are
 * not all at hand: a particle that fast has already left the physics). -1
 * when no partner is nearer (the boxes tile the domain: not seen). */
static int toward(const floe_ctx *ctx, const struct floe_dd *d, const float *x)
{
    double best = box_dist2(ctx, d, -1, x);
    int r = -1;
    for (int k = 0; k < d->np; k++) {
        const double q = box_dist2(ctx, d, d->peer[k], x);
        if (q < best)
            best = q, r = d->peer[k];
    }
    return r;
}

static int is_partner(const struct floe_dd *d, int r)
{
    int lo = 0, hi = d->np - 1; /* sorted by rank */
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (d->peer[mid] < r)
            lo = mid + 1;
        else
            hi = mid;
    }
    return d->np > 0 && d->peer[lo] == r;
}

/* GPU ranks (docs/mpi.md): a rebuild moves only what it must over the bus
 * where the backend can gather rows and compact a set on the device: the
 * positions come back, the leavers' and the ghosts' rows are gathered
 * there, the leavers squeezed out there, and the rows received written into
 * the device copies (the host copies of the rest stay stale) */
static int on_device(const floe_ctx *ctx) { return dd_cl_on_device(ctx); }

/* room for `add` rows after the first n of set s, on the host and (where
 * it holds the truth without room) on the device: before they are filled */
static int rows_room(floe_ctx *ctx, int s, uint32_t n, uint32_t add)
{
    pset *p = &ctx->sets[s];
    if (ctx_set_reserve(p, n + add))
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory for %u particles of set '%s'", n + add, p->name);
    return dd_cl_room(ctx, p, n, add);
}

/* rows [n, n + add) of set s filled on the host: into the device copies,
 * and the set's count */
static int rows_placed(floe_ctx *ctx, int s, uint32_t n, uint32_t add)
{
    pset *p = &ctx->sets[s];
    int rc = dd_cl_rows(ctx, p, n, add);
    if (rc)
        return rc;
    p->n = n + add;
    return floe_set_moved(ctx, ctx_set_handle(ctx, s));
}

/* GPU ranks: into d->cand the particles of set s's first n that the
 * device finds outside [lo, hi) (mode 0, the migration's candidates) or
 * within r of its faces (mode 1, the ghost candidates), along the cut axes
 * (the others unbounded); their positions (and the leavers' ids) read
 * back, for the host's own test */
static int select_on_device(floe_ctx *ctx, int s, uint32_t n, const double blo[3], const double bhi[3], double r,
                            int mode, uint32_t *m)
{
    struct floe_dd *d = ctx->dd;
    pset *p = &ctx->sets[s];
    double lo[3], hi[3];
    for (int k = 0; k < 3; k++)
        lo[k] = -INFINITY, hi[k] = INFINITY;
    for (int l = 0; l < d->geom.levels; l++)
        lo[d->geom.axis[l]] = blo[d->geom.axis[l]], hi[d->geom.axis[l]] = bhi[d->geom.axis[l]];
    int rc = dd_cl_select(ctx, p, n, lo, hi, r, mode, d->cand, m);
    if (!rc)
        rc = dd_cl_rows_of(ctx, p, "x", d->cand, *m, 0);
    if (!rc && mode == 0) /* the ids for the log line of a particle passed on */
        rc = dd_cl_rows_of(ctx, p, "id", d->cand, *m, 0);
    return rc;
}

/* The particles of set s outside this rank's box go to their owners: to
 * the partners, or to any rank after the boxes moved (every rank knows
 * then). One that went further than a partner's box in one step is passed
 * on through the partners (toward): no collective a step, so that a rank
 * waits for its partners only, not for every rank. */
static int migrate(floe_ctx *ctx, int s)
{
    struct floe_dd *d = ctx->dd;
    pset *p = &ctx->sets[s];
    const size_t row = dd_row_bytes(p);
    const uint32_t n = p->n;
    if (reserve_dest(ctx, d, n))
        return FLOE_ERR_NOMEM;
    /* the particles to test: every one, or (GPU ranks) those the device
     * finds outside the box, their positions and ids read back */
    const int dev = on_device(ctx);
    uint32_t ntest = n;
    int rc0;
    if (dev && (rc0 = select_on_device(ctx, s, n, d->lo, d->hi, 0, 0, &ntest)))
        return rc0;
    const float *x = pset_attr(p, "x")->data;
    int *dest = d->dest;
    uint32_t nleave = 0;
    const int all = d->migrate_all;
    const attr *ida = pset_attr(p, "id");
    for (uint32_t t = 0; t < ntest; t++) { /* d->cand is filtered in place: nleave <= t */
        const uint32_t i = dev ? d->cand[t] : t;
        dest[i] = -1;
        if (inside(d, x + 3 * i))
            continue;
        int r = dd_geom_owner(&d->geom, x + 3 * i);
        if (r == d->rank) /* not a number: the blow-up check names it */
            continue;
        if (!all && !is_partner(d, r)) {
            const int via = toward(ctx, d, x + 3 * i);
            if (via < 0 ? !d->kept_out++ : !d->passed_on++) /* the first of each, once */
                ctx_log(ctx, via < 0 ? FLOE_LOG_WARN : FLOE_LOG_INFO,
                        "mpi: rank %d: particle %u of '%s' at (%g, %g, %g) crossed more than a neighbouring box in "
                        "one step (its owner: rank %d); %s%d", d->rank,
                        ida && ida->type == FLOE_U32 ? ((const uint32_t *)ida->data)[i] : i, p->name,
                        (double)x[3 * i], (double)x[3 * i + 1], (double)x[3 * i + 2], r,
                        via < 0 ? "no partner's box is nearer: it stays here, rank " : "passed on through rank ",
                        via < 0 ? d->rank : via);
            if (via < 0)
                continue;
            r = via;
        }
        dest[i] = r;
        d->cand[nleave++] = i;
    }
    d->phase = PH_MIGRATE;
    const int np = all ? d->size - 1 : d->np, *peer = all ? d->all : d->peer;
    size_t *cnt = d->sets[s].scnt, *rcnt = d->sets[s].rcnt;
    for (int k = 0; k < np; k++)
        cnt[k] = 0;
    /* peer index by rank: the lists are sorted by rank */
    for (uint32_t k = 0; k < nleave; k++) {
        int r = dest[d->cand[k]], lo = 0, hi = np - 1;
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (peer[mid] < r)
                lo = mid + 1;
            else
                hi = mid;
        }
        dest[d->cand[k]] = lo;
        cnt[lo]++;
    }
    int rc = xchg_counts(ctx, d, np, peer, cnt, rcnt, TAG_COUNT);
    size_t stot = 0, rtot = 0;
    for (int k = 0; k < np; k++) {
        d->bso[k] = stot * row, d->bs[k] = cnt[k] * row;
        d->bro[k] = rtot * row, d->br[k] = rcnt[k] * row;
        stot += cnt[k], rtot += rcnt[k];
    }
    if (!rc && (dd_grow(&d->sbuf, &d->scap, stot * row + 1) || dd_grow(&d->rbuf, &d->rcap, rtot * row + 1)))
        rc = ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory");
    if (!rc && dev) /* the leavers' rows gathered on the device (d->cand: ascending) */
        rc = dd_cl_rows_host(ctx, p, d->cand, nleave, 0);
    if (!rc) {
        size_t *fill = d->csend; /* reused: the counts are sent */
        for (int k = 0; k < np; k++)
            fill[k] = 0;
        for (uint32_t k = 0; k < nleave; k++) {
            const uint32_t i = d->cand[k];
            dd_pack_row(p, i, d->sbuf + d->bso[dest[i]] + fill[dest[i]]++ * row);
        }
        rc = xchg(ctx, d, np, peer, d->sbuf, d->bs, d->bso, d->rbuf, d->br, d->bro, TAG_MIGRATE, "migration");
    }
    if (!rc && nleave && dev) /* squeezed out on the device (their indices up) */
        rc = dd_cl_squeeze(ctx, s, d->cand, n, nleave);
    else if (!rc && nleave) { /* the leavers' slots take the last particles (the order does not matter: the
                          * lists are in id order): O(leavers), not a pass over every attribute of the set */
        uint32_t last = n;
        for (uint32_t i = n; i-- > 0;) {
            if (dest[i] < 0)
                continue;
            last--;
            if (i != last)
                for (int a = 0; a < p->nattrs; a++) {
                    size_t es = floe_type_size(p->attrs[a].type);
                    char *dd = p->attrs[a].data;
                    memcpy(dd + (size_t)i * es, dd + (size_t)last * es, es);
                }
        }
        rc = ctx_set_resize(ctx, ctx_set_handle(ctx, s), last);
    }
    if (!rc && rtot && dev) { /* into the device copies */
        const uint32_t m = p->n;
        if (!(rc = rows_room(ctx, s, m, (uint32_t)rtot))) {
            for (size_t k = 0; k < rtot; k++)
                dd_unpack_row(p, m + (uint32_t)k, d->rbuf + k * row);
            rc = rows_placed(ctx, s, m, (uint32_t)rtot);
        }
    } else if (!rc && rtot) {
        const uint32_t m = p->n;
        if (!(rc = ctx_set_resize(ctx, ctx_set_handle(ctx, s), m + (uint32_t)rtot)))
            for (size_t k = 0; k < rtot; k++)
                dd_unpack_row(p, m + (uint32_t)k, d->rbuf + k * row);
    }
    d->sets[s].owned = p->n;
    d->migrated += nleave;
    return rc;
}

/* owned particles along the cell key, then the id, for memory locality:
 * what the neighbours stage's reorder does in one process (its cells in id
 * order), which would mix the ghosts with the owned particles here. The
 * id matters: sums over owned particles (a solver's density error) are
 * then added in the order one process adds them. A stable radix sort, 11
 * bits a pass, linear in the particles. */
static int reorder_owned(floe_ctx *ctx, int s)
{
    pset *p = &ctx->sets[s];
    const uint32_t n = p->n;
    if (n < 2)
        return FLOE_OK;
    uint64_t *key = malloc((size_t)n * sizeof *key);
    uint32_t *perm = malloc((size_t)n * sizeof *perm), *tmp = malloc((size_t)n * sizeof *tmp);
    uint32_t *hist = calloc(2048, sizeof *hist);
    if (!key || !perm || !tmp || !hist) {
        free(key), free(perm), free(tmp), free(hist);
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory");
    }
    const float *x = pset_attr(p, "x")->data;
    const attr *ida = pset_attr(p, "id");
    const uint32_t *id = ida && ida->type == FLOE_U32 ? ida->data : NULL;
    const float *lo = ctx->info.domain_min, *hi = ctx->info.domain_max, H = ctx->info.support;
    uint64_t nc[3], kmax = 0;
    for (int a = 0; a < 3; a++)
        nc[a] = (uint64_t)((hi[a] - lo[a]) / H) + 1;
    /* key: cell (below 2^32 cells) above the id */
    const int idbits = nc[0] * nc[1] * nc[2] <= ((uint64_t)1 << 32) && id ? 32 : 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t c[3];
        for (int a = 0; a < 3; a++) {
            double q = floor((x[3 * i + a] - lo[a]) / H);
            c[a] = q < 0 ? 0 : q >= (double)nc[a] ? nc[a] - 1 : (uint64_t)q;
        }
        key[i] = ((c[2] * nc[1] + c[1]) * nc[0] + c[0]) << idbits | (idbits ? id[i] : 0);
        kmax = key[i] > kmax ? key[i] : kmax;
        perm[i] = i;
    }
    for (int sh = 0; sh < 64 && (kmax >> sh); sh += 11) {
        memset(hist, 0, 2048 * sizeof *hist);
        for (uint32_t i = 0; i < n; i++)
            hist[(key[perm[i]] >> sh) & 2047]++;
        for (uint32_t b = 0, acc = 0; b < 2048; b++) {
            uint32_t c = hist[b];
            hist[b] = acc;
            acc += c;
        }
        for (uint32_t i = 0; i < n; i++)
            tmp[hist[(key[perm[i]] >> sh) & 2047]++] = perm[i];
        uint32_t *t = perm;
        perm = tmp;
        tmp = t;
    }
    free(key), free(tmp), free(hist);
    int rc = floe_set_reorder(ctx, ctx_set_handle(ctx, s), perm);
    free(perm);
    return rc;
}

/* the rows of a split stage call: 0..n-1 (owned and ghosts), the owned
 * particles near a face of the box (d->cand[0..nc), ascending) and the
 * others; the ghosts' count is not known yet, so iota covers the owned and
 * grows with the ghosts when they arrive (dd_split_rows) */
static int keep_rows(floe_ctx *ctx, dd_set *ds, uint32_t n, uint32_t nc)
{
    const uint32_t *cand = ctx->dd->cand;
    if (n > ds->rows_cap) {
        const uint32_t cap = n + n / 4 + 1024;
        uint32_t *b = realloc(ds->border, cap * sizeof *b), *in = b ? realloc(ds->interior, cap * sizeof *in) : NULL;
        if (b)
            ds->border = b;
        if (in)
            ds->interior = in;
        if (!b || !in)
            return ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory");
        ds->rows_cap = cap;
    }
    if (nc) /* a rank without particles has no lists yet */
        memcpy(ds->border, cand, (size_t)nc * sizeof *cand);
    uint32_t m = 0;
    for (uint32_t i = 0, c = 0; i < n; i++) {
        if (c < nc && cand[c] == i) {
            c++;
            continue;
        }
        ds->interior[m++] = i;
    }
    ds->nborder = nc, ds->ninterior = m;
    return FLOE_OK;
}

/* every owned particle within the halo's width of a partner's box is
 * copied there, after that rank's owned particles; the lists kept for the
 * refreshes */
/* x within R of the box [lo, hi] along every axis (across the wrap on a
 * periodic one) */
static int near_box(const floe_ctx *ctx, const float *x, const double *lo, const double *hi, double R)
{
    if (!ctx->info.periodic)
        return x[0] >= lo[0] - R && x[0] <= hi[0] + R && x[1] >= lo[1] - R && x[1] <= hi[1] + R &&
               x[2] >= lo[2] - R && x[2] <= hi[2] + R;
    for (int k = 0; k < 3; k++)
        if (gap_on_axis(ctx, k, x[k], x[k], lo[k], hi[k]) > R)
            return 0;
    return 1;
}

static int build_ghosts(floe_ctx *ctx, int s)
{
    struct floe_dd *d = ctx->dd;
    dd_set *ds = &d->sets[s];
    pset *p = &ctx->sets[s];
    const size_t row = dd_row_bytes(p);
    const uint32_t n = ds->owned;
    const int dev = on_device(ctx);
    const double R = ghost_width(ctx);
    if (reserve_dest(ctx, d, n))
        return FLOE_ERR_NOMEM;
    /* the owned particles within R of a face of the box: candidates */
    uint32_t nc = 0;
    double blo[3], bhi[3]; /* on a periodic axis an end box's open side is the domain's face */
    memcpy(blo, d->lo, sizeof blo), memcpy(bhi, d->hi, sizeof bhi);
    for (int k = 0; k < 3; k++)
        box_on_axis(ctx, k, &blo[k], &bhi[k]);
    /* GPU ranks: the device's superset of them, their positions read back,
     * tested again here */
    uint32_t ntest = n;
    int rc0;
    if (dev && (rc0 = select_on_device(ctx, s, n, blo, bhi, R, 1, &ntest)))
        return rc0;
    const float *x = pset_attr(p, "x")->data;
    for (uint32_t t = 0; t < ntest; t++) { /* d->cand filtered in place: nc <= t */
        const uint32_t i = dev ? d->cand[t] : t;
        int near = 0;
        for (int l = 0; l < d->geom.levels; l++) {
            const int k = d->geom.axis[l];
            near |= x[3 * i + k] - blo[k] <= R || bhi[k] - x[3 * i + k] <= R;
        }
        if (near)
            d->cand[nc++] = i;
    }
    if (keep_rows(ctx, ds, n, nc))
        return FLOE_ERR_NOMEM;
    double plo[3], phi[3];
    size_t tot = 0;
    for (int k = 0; k < d->np; k++) { /* two passes: the counts, then the lists */
        dd_geom_box(&d->geom, d->peer[k], plo, phi);
        ds->scnt[k] = 0;
        for (uint32_t c = 0; c < nc; c++)
            ds->scnt[k] += near_box(ctx, x + 3 * d->cand[c], plo, phi, R);
        ds->soff[k] = tot;
        tot += ds->scnt[k];
    }
    if (tot > ds->send_cap) {
        uint32_t *q = realloc(ds->send_idx, tot * sizeof *q);
        if (!q)
            return ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory");
        ds->send_idx = q;
        ds->send_cap = tot;
    }
    for (int k = 0; k < d->np; k++) {
        dd_geom_box(&d->geom, d->peer[k], plo, phi);
        uint32_t *out = ds->send_idx + ds->soff[k];
        for (uint32_t c = 0; c < nc; c++)
            if (near_box(ctx, x + 3 * d->cand[c], plo, phi, R))
                *out++ = d->cand[c];
    }
    d->phase = PH_GHOSTS;
    int rc = xchg_counts(ctx, d, d->np, d->peer, ds->scnt, ds->rcnt, TAG_COUNT);
    if (rc)
        return rc;
    size_t rtot = 0;
    for (int k = 0; k < d->np; k++) {
        ds->roff[k] = rtot;
        rtot += ds->rcnt[k];
        d->bs[k] = ds->scnt[k] * row, d->bso[k] = ds->soff[k] * row;
        d->br[k] = ds->rcnt[k] * row, d->bro[k] = ds->roff[k] * row;
    }
    if (n + rtot > UINT32_MAX)
        return ctx_fail(ctx, FLOE_ERR, "MPI (rank %d): more than 2^32 particles with ghosts in set '%s'", d->rank,
                        p->name);
    if (dd_grow(&d->sbuf, &d->scap, tot * row + 1) || dd_grow(&d->rbuf, &d->rcap, rtot * row + 1))
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory");
    /* OpenCL: room for the ghosts where the device holds the truth, then
     * the rows sent gathered there */
    if (dev && ((rc = rows_room(ctx, s, n, (uint32_t)rtot)) ||
                (rc = dd_cl_rows_host(ctx, p, ds->send_idx, (uint32_t)tot, n + (uint32_t)rtot))))
        return rc;
    for (int k = 0; k < d->np; k++) /* each partner's block: by columns */
        pack_columns(p, ds->send_idx + ds->soff[k], ds->scnt[k], d->sbuf + ds->soff[k] * row);
    if ((rc = xchg(ctx, d, d->np, d->peer, d->sbuf, d->bs, d->bso, d->rbuf, d->br, d->bro, TAG_GHOSTS, "ghosts")))
        return rc;
    if (!dev && rtot && (rc = ctx_set_resize(ctx, ctx_set_handle(ctx, s), n + (uint32_t)rtot)))
        return rc;
    for (int k = 0; k < d->np; k++)
        unpack_columns(p, n + (uint32_t)ds->roff[k], ds->rcnt[k], d->rbuf + ds->roff[k] * row);
    if (dev && rtot && (rc = rows_placed(ctx, s, n, (uint32_t)rtot)))
        return rc;
    ds->ghosts = (uint32_t)rtot;
    p->ghosts = ds->ghosts;
    memset(ds->dirty, 0, sizeof ds->dirty);
    d->ghosts_sent += tot;
    return FLOE_OK;
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
        d->steps = d->halos = d->ghosts_sent = d->migrated = d->rebuilds = d->last_reorder = 0;
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
    int rc = place_cuts(ctx, d); /* the cuts at the quantiles of every rank's share */
    uint64_t total = 0;
    for (int s = 0; s < ctx->npsets && !rc; s++) { /* each particle to the rank whose box holds it */
        pset *p = &ctx->sets[s];
        if (!p->gen || p->kind != FLOE_SET_FLUID)
            continue;
        total += p->n;
        rc = migrate(ctx, s);
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

enum { F_STEPS, F_STEP_MS, F_PH, F_MPI = F_PH + NPH, F_HALOS = F_MPI + NPH, F_GHOSTS, F_MIGRATED, F_OWNED, F_OVERLAP, F_REBUILDS, F_BUS_UP, F_BUS_DOWN, NFIG };

static void log_figures(floe_ctx *ctx, const struct floe_dd *d)
{
    for (int r = 0; r < d->size; r++) {
        const double *f = d->fig + (size_t)r * NFIG, st = f[F_STEPS] > 0 ? f[F_STEPS] : 1;
        ctx_log(ctx, FLOE_LOG_INFO,
                "mpi: rank %d, ms per step: %.3f in steps, of which migration %.3f (mpi %.3f), ghosts %.3f (mpi "
                "%.3f), halos %.3f (mpi %.3f, %.1f a step, %.1f overlapped); reductions %.3f (in and between steps); "
                "load balance %.3f; ghosts sent %.0f, migrated %.1f a step; %.0f owned; rebuilt at %.0f%% of the "
                "steps", r, f[F_STEP_MS] / st,
                f[F_PH + PH_MIGRATE] / st, f[F_MPI + PH_MIGRATE] / st, f[F_PH + PH_GHOSTS] / st,
                f[F_MPI + PH_GHOSTS] / st, f[F_PH + PH_HALO] / st, f[F_MPI + PH_HALO] / st, f[F_HALOS] / st,
                f[F_OVERLAP] / st,
                f[F_PH + PH_REDUCE] / st, f[F_PH + PH_BALANCE] / st, f[F_GHOSTS] / st, f[F_MIGRATED] / st,
                f[F_OWNED], 100 * f[F_REBUILDS] / st);
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

/* whether this rank's ghost lists are over: a set's count or order changed
 * since the rebuild (a migration of its own, the sources, deletions, a
 * scene's additions, a restore), or one of its particles moved more than
 * half the skin since (a partner's particle that moved as far on its side
 * could have come within H unseen) */
static int lists_over(floe_ctx *ctx, struct floe_dd *d, int *rc)
{
    *rc = FLOE_OK;
    if (d->rebuild || d->migrate_all || !(d->skin > 0))
        return 1;
    const float lim2 = (float)(0.25 * d->skin * d->skin);
    for (int s = 0; s < ctx->npsets; s++) {
        const pset *p = &ctx->sets[s];
        dd_set *ds = &d->sets[s];
        if (!p->gen || p->kind != FLOE_SET_FLUID)
            continue;
        if (p->layout != ds->layout || p->nattrs != ds->nattrs || p->n != ds->owned || (!ds->x0 && !ds->x0_dev))
            return 1;
        const uint32_t n = ds->owned;
        double d2 = 0;
        if (ds->x0_dev) { /* GPU ranks: the rebuild's positions are on the device, 4 bytes back */
            if ((*rc = dd_cl_drift2(ctx, (pset *)p, n, &d2)) || !(d2 <= (double)lim2))
                return 1;
            continue;
        }
        dd_cl_positions(ctx, (pset *)p); /* OpenCL without the device's rebuild: the positions back */
        const float *x = pset_attr((pset *)p, "x")->data, *x0 = ds->x0;
        int over = 0;
#pragma omp parallel for schedule(static) reduction(| : over) if (n > 65536)
        for (uint32_t i = 0; i < n; i++) {
            const float a = x[3 * i] - x0[3 * i], b = x[3 * i + 1] - x0[3 * i + 1], c = x[3 * i + 2] - x0[3 * i + 2];
            over |= !(a * a + b * b + c * c <= lim2); /* not a number: over */
        }
        if (over)
            return 1;
    }
    return 0;
}

/* after a rebuild: where the owned particles are, for lists_over */
static int keep_positions(floe_ctx *ctx, int s)
{
    pset *p = &ctx->sets[s];
    dd_set *ds = &ctx->dd->sets[s];
    if ((ds->x0_dev = on_device(ctx))) /* GPU ranks: kept on the device (lists_over asks it) */
        return dd_cl_keep_positions(ctx, p, ds->owned);
    const size_t need = 3 * (size_t)ds->owned + 1;
    if (need > ds->x0_cap) {
        float *q = realloc(ds->x0, need * sizeof *q);
        if (!q)
            return ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory");
        ds->x0 = q, ds->x0_cap = need;
    }
    memcpy(ds->x0, pset_attr(p, "x")->data, 3 * (size_t)ds->owned * sizeof(float));
    return FLOE_OK;
}

/* a step between rebuilds: the ghosts come back in the same places, each
 * partner's block holding its owned particles of the rebuild's lists with
 * every attribute as they are now (one message a partner, no counts) */
static int forward_ghosts(floe_ctx *ctx, int s)
{
    struct floe_dd *d = ctx->dd;
    dd_set *ds = &d->sets[s];
    pset *p = &ctx->sets[s];
    const size_t row = dd_row_bytes(p);
    size_t tot = 0, rtot = 0;
    for (int k = 0; k < d->np; k++) {
        d->bs[k] = ds->scnt[k] * row, d->bso[k] = ds->soff[k] * row;
        d->br[k] = ds->rcnt[k] * row, d->bro[k] = ds->roff[k] * row;
        tot += ds->scnt[k], rtot += ds->rcnt[k];
    }
    if (dd_grow(&d->sbuf, &d->scap, tot * row + 1) || dd_grow(&d->rbuf, &d->rcap, rtot * row + 1))
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory");
    /* the ghosts go in place of last step's: room for them, then (OpenCL)
     * the rows sent read back, gathered on the device; no copy of the
     * owned rows (on the device they stay current there, decomp_cl.c) */
    const uint32_t n = ds->owned;
    int rc = rows_room(ctx, s, n, (uint32_t)rtot);
    if (!rc)
        rc = dd_cl_rows_host(ctx, p, ds->send_idx, (uint32_t)tot, n + (uint32_t)rtot);
    if (rc)
        return rc;
    for (int k = 0; k < d->np; k++)
        pack_columns(p, ds->send_idx + ds->soff[k], ds->scnt[k], d->sbuf + ds->soff[k] * row);
    d->phase = PH_GHOSTS;
    if ((rc = xchg(ctx, d, d->np, d->peer, d->sbuf, d->bs, d->bso, d->rbuf, d->br, d->bro, TAG_GHOSTS, "ghosts")))
        return rc;
    for (int k = 0; k < d->np; k++)
        unpack_columns(p, n + (uint32_t)ds->roff[k], ds->rcnt[k], d->rbuf + ds->roff[k] * row);
    if ((rc = rows_placed(ctx, s, n, (uint32_t)rtot)))
        return rc;
    ds->ghosts = (uint32_t)rtot;
    p->ghosts = ds->ghosts;
    ds->layout = p->layout; /* the move's */
    memset(ds->dirty, 0, sizeof ds->dirty);
    d->ghosts_sent += tot;
    return FLOE_OK;
}

/* Before the pipeline: the particles that left the box migrate and the
 * ghosts are rebuilt when any rank's lists are over (lists_over; one
 * MPI_Allreduce of a flag a step decides it for every rank together, as
 * every rank must take part in a migration); else the ghosts of the last
 * rebuild are sent again with their owners' values of now. Without a skin
 * every step rebuilds, with no collective. */
int dd_step_begin(floe_ctx *ctx)
{
    struct floe_dd *d = ctx->dd;
    if (!d)
        return FLOE_OK;
    double t0 = dd_now_ms();
    d->ghosts_gone = NULL;
    int rc = dd_drop_ghosts(ctx), rl;
    int over = lists_over(ctx, d, &rl);
    rc = rc ? rc : rl;
    if (!rc && d->skin > 0) { /* every rank rebuilds, or none */
        d->phase = PH_REDUCE;
        double r0 = dd_now_ms();
        int e = MPI_Allreduce(MPI_IN_PLACE, &over, 1, MPI_INT, MPI_LOR, d->comm);
        double r1 = dd_now_ms();
        d->ph_ms[PH_REDUCE] += r1 - r0, d->ph_mpi[PH_REDUCE] += r1 - r0;
        if (e != MPI_SUCCESS)
            rc = dd_mpi_fail(ctx, e, "MPI_Allreduce (ghost lists)");
    }
    double t1 = dd_now_ms();
    if (!rc && !over) {
        for (int s = 0; s < ctx->npsets && !rc; s++)
            if (ctx->sets[s].gen && ctx->sets[s].kind == FLOE_SET_FLUID)
                rc = forward_ghosts(ctx, s);
        d->steps++;
        double t2 = dd_now_ms();
        d->ph_ms[PH_GHOSTS] += t2 - t1;
        d->comm_ms += t2 - t0;
        return rc;
    }
    /* OpenCL: the migration and the new lists work on the host copies, or,
     * where the backend gathers and compacts on the device, on the
     * positions and the rows that move (no reorder there: the device's cell
     * sort orders each step's neighbours, memory order aside) */
    const int dev = on_device(ctx);
    if (!dev)
        dd_cl_host(ctx);
    const int reorder = !dev && (d->steps + 1 >= d->last_reorder + REORDER_EVERY || !d->last_reorder);
    for (int s = 0; s < ctx->npsets && !rc; s++) {
        if (!ctx->sets[s].gen || ctx->sets[s].kind != FLOE_SET_FLUID)
            continue;
        rc = migrate(ctx, s);
        if (!rc && reorder)
            rc = reorder_owned(ctx, s);
    }
    if (reorder)
        d->last_reorder = d->steps + 1;
    d->migrate_all = 0;
    double t2 = dd_now_ms();
    d->ph_ms[PH_MIGRATE] += t2 - t1;
    for (int s = 0; s < ctx->npsets && !rc; s++)
        if (ctx->sets[s].gen && ctx->sets[s].kind == FLOE_SET_FLUID && !(rc = keep_positions(ctx, s)) &&
            !(rc = build_ghosts(ctx, s))) {
            d->sets[s].layout = ctx->sets[s].layout;
            d->sets[s].nattrs = ctx->sets[s].nattrs;
        }
    d->rebuild = 0;
    d->rebuilds++;
    d->steps++;
    double t3 = dd_now_ms();
    d->ph_ms[PH_GHOSTS] += t3 - t2;
    d->comm_ms += t3 - t0;
    return rc;
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

static int reads(const stage_inst *st, const pset *p, const char *name)
{
    if (!st->desc) /* a Lua stage may read anything */
        return 1;
    for (const floe_attr_desc *a = st->desc->attrs; a && a->name; a++)
        if ((a->kind & p->kind) && (a->access & FLOE_READ) && !(a->access & FLOE_OWN) && !strcmp(a->name, name))
            return 1; /* FLOE_OWN: read for the particle itself only, a ghost's value never */
    return 0;
}

/* the arrays of set p that stage st reads and that are stale on the
 * ghosts: their data and element sizes, marked fresh (the caller refreshes
 * them now); how many */
static int stale_reads(dd_set *ds, const stage_inst *st, const pset *p, void **data, size_t *elem)
{
    int k = 0;
    for (int a = 0; a < p->nattrs; a++) {
        if (!ds->dirty[a] || !reads(st, p, p->attrs[a].name))
            continue;
        data[k] = p->attrs[a].data;
        elem[k++] = floe_type_size(p->attrs[a].type);
        ds->dirty[a] = 0;
    }
    return k;
}

/* The ghosts of k per-particle arrays refreshed from their owners, in one
 * message per partner (the owners send in the step's ghost order: no
 * search). One array is received in place. */
/* a refresh's message to each partner: each array's values of the
 * particles it gets as ghosts in turn (e bytes a particle in all) */
static void pack_halo(const struct floe_dd *d, const dd_set *ds, void *const *data, const size_t *elem, int k,
                      size_t e, char *buf)
{
    for (int q = 0; q < d->np; q++) {
        char *o = buf + ds->soff[q] * e;
        for (int a = 0; a < k; a++) {
            const char *src = data[a];
            const uint32_t *idx = ds->send_idx + ds->soff[q];
            const size_t es = elem[a];
            if (es == 4)
                for (size_t j = 0; j < ds->scnt[q]; j++)
                    memcpy(o + 4 * j, src + 4 * (size_t)idx[j], 4);
            else if (es == 12)
                for (size_t j = 0; j < ds->scnt[q]; j++)
                    memcpy(o + 12 * j, src + 12 * (size_t)idx[j], 12);
            else
                for (size_t j = 0; j < ds->scnt[q]; j++)
                    memcpy(o + es * j, src + es * (size_t)idx[j], es);
            o += ds->scnt[q] * es;
        }
    }
}

/* each partner's message into the arrays' ghosts, in the order they came */
static void unpack_halo(const struct floe_dd *d, const dd_set *ds, void *const *data, const size_t *elem, int k,
                        size_t e, const char *buf)
{
    for (int q = 0; q < d->np; q++) {
        const char *src = buf + ds->roff[q] * e;
        for (int a = 0; a < k; a++) {
            const size_t n = ds->rcnt[q] * elem[a];
            memcpy((char *)data[a] + ((size_t)ds->owned + ds->roff[q]) * elem[a], src, n);
            src += n;
        }
    }
}

static int split_finish_set(floe_ctx *ctx, dd_set *ds);

static int halo_arrays(floe_ctx *ctx, const pset *p, void *const *data, const size_t *elem, int k)
{
    struct floe_dd *d = ctx->dd;
    dd_set *ds = &d->sets[p - ctx->sets];
    if (d->ghosts_gone) /* every rank comes here at the same stage: every rank fails */
        return ctx_fail(ctx, FLOE_ERR_ARG, "MPI (rank %d): a stage after '%s' in the step reads other particles' "
                        "values of set '%s', which changed there (particles removed and added): place '%s' after "
                        "every stage that reads neighbours", d->rank, d->ghosts_gone, p->name, d->ghosts_gone);
    if (ds->pending) { /* a split stage's refresh still under way (not expected) */
        int rc = split_finish_set(ctx, ds);
        if (rc)
            return rc;
    }
    double t0 = dd_now_ms();
    /* OpenCL: device data through host memory (decomp_cl.c), each array */
    dd_cl_halo staged[MAX_ATTRS];
    void *host[MAX_ATTRS];
    int rc = FLOE_OK, ns = 0;
    size_t sent = 0;
    for (int q = 0; q < d->np; q++)
        sent += ds->scnt[q];
    for (; ns < k && !rc; ns++) {
        host[ns] = data[ns];
        rc = dd_cl_halo_begin(ctx, p, &host[ns], elem[ns], ds->send_idx, (uint32_t)sent, &staged[ns]);
    }
    if (rc) {
        for (int a = 0; a < ns - 1; a++)
            dd_cl_halo_end(ctx, &staged[a], elem[a], rc);
        return rc;
    }
    data = host;
    size_t e = 0, stot = 0;
    for (int a = 0; a < k; a++)
        e += elem[a];
    for (int q = 0; q < d->np; q++) {
        d->bs[q] = ds->scnt[q] * e, d->bso[q] = ds->soff[q] * e;
        d->br[q] = ds->rcnt[q] * e, d->bro[q] = ds->roff[q] * e;
        stot += ds->scnt[q];
    }
    if (dd_grow(&d->sbuf, &d->scap, stot * e + 1) || (k > 1 && dd_grow(&d->rbuf, &d->rcap, (size_t)ds->ghosts * e + 1)))
        rc = ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory");
    if (!rc)
        pack_halo(d, ds, data, elem, k, e, d->sbuf);
    /* one array: straight into its ghosts, in the order they came */
    char *into = k == 1 ? (char *)data[0] + (size_t)ds->owned * e : d->rbuf;
    d->phase = PH_HALO;
    if (!rc)
        rc = xchg(ctx, d, d->np, d->peer, d->sbuf, d->bs, d->bso, into, d->br, d->bro, TAG_HALO, "halo");
    if (k > 1 && !rc)
        unpack_halo(d, ds, data, elem, k, e, d->rbuf);
    for (int a = 0; a < k; a++)
        rc = dd_cl_halo_end(ctx, &staged[a], elem[a], rc);
    d->halos++;
    double dt = dd_now_ms() - t0;
    d->ph_ms[PH_HALO] += dt;
    d->comm_ms += dt;
    return rc;
}

int dd_halo(floe_ctx *ctx, const pset *p, void *data, size_t elem)
{
    if (!ctx->dd || p->kind != FLOE_SET_FLUID) /* boundary sets are whole on every rank */
        return FLOE_OK;
    return halo_arrays(ctx, p, &data, &elem, 1);
}

/* ---- a stage split around a refresh (pipeline.c, floe_stage_desc.rows) ----
 * The refresh a stage needs is posted without waiting; the stage runs over
 * the owned particles whose neighbours are all owned (farther than the
 * halo's width from every face of the box) while it travels, then over the
 * rest once it arrived. Host data only (no device backend). */

static int split_post_set(floe_ctx *ctx, const pset *p, void *const *data, const size_t *elem, int k)
{
    struct floe_dd *d = ctx->dd;
    dd_set *ds = &d->sets[p - ctx->sets];
    double t0 = dd_now_ms();
    size_t e = 0, stot = 0;
    for (int a = 0; a < k; a++)
        e += elem[a];
    for (int q = 0; q < d->np; q++)
        stot += ds->scnt[q];
    if (dd_grow(&ds->psbuf, &ds->pscap, stot * e + 1) || dd_grow(&ds->prbuf, &ds->prcap, (size_t)ds->ghosts * e + 1))
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory");
    /* in pieces small enough to go out at once (MPI's eager protocol): a
     * large message waits for the receiver to enter MPI (rendezvous), which
     * it does only after the stage's first call, and nothing would overlap */
    size_t pieces = 0;
    for (int q = 0; q < d->np; q++)
        pieces += (ds->scnt[q] * e + SPLIT_PIECE - 1) / SPLIT_PIECE + (ds->rcnt[q] * e + SPLIT_PIECE - 1) / SPLIT_PIECE;
    if (pieces > ds->preq_cap) {
        MPI_Request *r = realloc(ds->preq, (pieces + 16) * sizeof *r);
        if (!r)
            return ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory");
        ds->preq = r, ds->preq_cap = pieces + 16;
    }
    if (ds->sends_pending) { /* the last refresh's sends, before their buffer is written again */
        int err = MPI_Waitall(ds->npreq - ds->nprecv, ds->preq + ds->nprecv, MPI_STATUSES_IGNORE);
        ds->sends_pending = 0;
        if (err != MPI_SUCCESS)
            return dd_mpi_fail(ctx, err, "halo (sent)");
    }
    pack_halo(d, ds, data, elem, k, e, ds->psbuf);
    int nr = 0, err = MPI_SUCCESS;
    for (int q = 0; q < d->np && err == MPI_SUCCESS; q++)
        for (size_t at = 0, len = ds->rcnt[q] * e; at < len && err == MPI_SUCCESS; at += SPLIT_PIECE)
            err = MPI_Irecv(ds->prbuf + ds->roff[q] * e + at, (int)(len - at < SPLIT_PIECE ? len - at : SPLIT_PIECE),
                            MPI_BYTE, d->peer[q], TAG_HALO, d->comm, &ds->preq[nr++]);
    ds->nprecv = nr;
    for (int q = 0; q < d->np && err == MPI_SUCCESS; q++)
        for (size_t at = 0, len = ds->scnt[q] * e; at < len && err == MPI_SUCCESS; at += SPLIT_PIECE)
            err = MPI_Isend(ds->psbuf + ds->soff[q] * e + at, (int)(len - at < SPLIT_PIECE ? len - at : SPLIT_PIECE),
                            MPI_BYTE, d->peer[q], TAG_HALO, d->comm, &ds->preq[nr++]);
    if (err != MPI_SUCCESS)
        return dd_mpi_fail(ctx, err, "halo (posted)");
    ds->npreq = nr, ds->pk = k, ds->pending = 1;
    for (int a = 0; a < k; a++)
        ds->pdata[a] = data[a], ds->pelem[a] = elem[a];
    double dt = dd_now_ms() - t0;
    d->ph_ms[PH_HALO] += dt;
    d->comm_ms += dt;
    return FLOE_OK;
}

static int split_finish_set(floe_ctx *ctx, dd_set *ds)
{
    struct floe_dd *d = ctx->dd;
    double t0 = dd_now_ms();
    /* the receives only: a send completes when the partner takes it, which
     * it may do only once its own first call is over. The sends are waited
     * for before the next refresh writes their buffer (a step later, after
     * the migration, which the partner reaches only past taking them) and
     * at the run's end (dd_split_done) */
    int err = MPI_Waitall(ds->nprecv, ds->preq, MPI_STATUSES_IGNORE);
    double t1 = dd_now_ms();
    ds->pending = 0;
    ds->sends_pending = ds->npreq > ds->nprecv;
    if (err != MPI_SUCCESS)
        return dd_mpi_fail(ctx, err, "halo (waited for)");
    size_t e = 0;
    for (int a = 0; a < ds->pk; a++)
        e += ds->pelem[a];
    unpack_halo(d, ds, ds->pdata, ds->pelem, ds->pk, e, ds->prbuf);
    d->halos++;
    d->overlapped++;
    double dt = dd_now_ms() - t0;
    d->ph_mpi[PH_HALO] += t1 - t0;
    d->ph_ms[PH_HALO] += dt;
    d->comm_ms += dt;
    return FLOE_OK;
}

int dd_split_post(floe_ctx *ctx, const stage_inst *st, int *posted)
{
    struct floe_dd *d = ctx->dd;
    *posted = 0;
    if (!d || ctx->dev || d->ghosts_gone)
        return FLOE_OK;
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        if (!p->gen || p->kind != FLOE_SET_FLUID)
            continue;
        if (p->n != d->sets[s].owned + d->sets[s].ghosts)
            return ctx_fail(ctx, FLOE_ERR, "MPI (rank %d): set '%s' changed size during the step before stage '%s'",
                            d->rank, p->name, st->name);
        d->sets[s].fresh_in = 1;
        void *data[MAX_ATTRS];
        size_t elem[MAX_ATTRS];
        const int k = stale_reads(&d->sets[s], st, p, data, elem);
        if (k) {
            int rc = split_post_set(ctx, p, data, elem, k);
            if (rc)
                return rc;
            *posted = 1;
        }
    }
    return FLOE_OK;
}

int dd_split_finish(floe_ctx *ctx)
{
    struct floe_dd *d = ctx->dd;
    int rc = FLOE_OK;
    for (int s = 0; d && s < ctx->npsets; s++)
        if (d->sets[s].pending) {
            int r = split_finish_set(ctx, &d->sets[s]);
            rc = rc ? rc : r;
        }
    return rc;
}

int dd_split_done(floe_ctx *ctx)
{
    struct floe_dd *d = ctx->dd;
    int rc = FLOE_OK;
    for (int s = 0; d && s < ctx->npsets; s++) {
        dd_set *ds = &d->sets[s];
        if (!ds->sends_pending)
            continue;
        double t0 = dd_now_ms();
        int err = MPI_Waitall(ds->npreq - ds->nprecv, ds->preq + ds->nprecv, MPI_STATUSES_IGNORE);
        double dt = dd_now_ms() - t0;
        ds->sends_pending = 0;
        d->ph_mpi[PH_HALO] += dt, d->ph_ms[PH_HALO] += dt, d->comm_ms += dt;
        if (err != MPI_SUCCESS && !rc)
            rc = dd_mpi_fail(ctx, err, "halo (sent)");
    }
    return rc;
}

int dd_split_rows(floe_ctx *ctx, int which)
{
    struct floe_dd *d = ctx->dd;
    for (int s = 0; s < ctx->npsets; s++) {
        ctx->rows[s] = NULL, ctx->nrows[s] = 0;
        pset *p = &ctx->sets[s];
        if (!d || !p->gen || p->kind != FLOE_SET_FLUID)
            continue;
        dd_set *ds = &d->sets[s];
        if (which == DD_ROWS_OWNED || which == DD_ROWS_GHOSTS) {
            if (p->n > ds->iota_cap) {
                const uint32_t cap = p->n + p->n / 4 + 1024;
                uint32_t *q = realloc(ds->iota, (size_t)cap * sizeof *q);
                if (!q)
                    return ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory");
                for (uint32_t i = 0; i < cap; i++)
                    q[i] = i;
                ds->iota = q, ds->iota_cap = cap;
            }
            ctx->rows[s] = which == DD_ROWS_OWNED ? ds->iota : ds->iota + ds->owned;
            ctx->nrows[s] = which == DD_ROWS_OWNED ? ds->owned : ds->ghosts;
        } else {
            ctx->rows[s] = which == DD_ROWS_INTERIOR ? ds->interior : ds->border;
            ctx->nrows[s] = which == DD_ROWS_INTERIOR ? ds->ninterior : ds->nborder;
        }
    }
    return FLOE_OK;
}

static int own_values_only(const stage_inst *st);
/* not "emit": it drops the ghosts the refresh in flight fills */
int dd_split_between(const stage_inst *st) { return own_values_only(st) && strcmp(st->name, "emit") != 0; }

/* the core's own stages gravity and integrate compute each particle from
 * its own values only: no refresh before them; what they write on a ghost
 * is its owner's value when what they read there was fresh (gravity reads
 * nothing), else it is marked, so a later reader gets it fresh. So does
 * "emit" (sources and sinks), which drops the ghosts first. */
static int own_values_only(const stage_inst *st)
{
    return st->desc && st->mod && !st->mod->dl &&
           (!strcmp(st->name, "gravity") || !strcmp(st->name, "integrate") || !strcmp(st->name, "emit"));
}

/* a stage whose values are its particles' own (floe_stage_desc.pointwise,
 * ABI 1.15, or the core's two above): computed on every particle, ghosts
 * included */
static int pointwise(const stage_inst *st)
{
    const floe_stage_desc *sd = st->desc;
    return own_values_only(st) ||
           (sd && sd->size >= offsetof(floe_stage_desc, pointwise) + sizeof sd->pointwise && sd->pointwise);
}

int dd_stage_before(floe_ctx *ctx, const stage_inst *st)
{
    struct floe_dd *d = ctx->dd;
    if (!d || d->gathered) /* a gathered stage runs on rank 0 alone, on whole sets */
        return FLOE_OK;
    const int own = own_values_only(st);
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        if (!p->gen || p->kind != FLOE_SET_FLUID)
            continue;
        if (p->n != d->sets[s].owned + d->sets[s].ghosts)
            return ctx_fail(ctx, FLOE_ERR, "MPI (rank %d): set '%s' changed size during the step before stage '%s' "
                            "(%u particles, %u owned, %u ghosts): the decomposition does not follow particles added or "
                            "removed inside a step", d->rank, p->name, st->name, p->n, d->sets[s].owned,
                            d->sets[s].ghosts);
        /* own values only: nothing refreshed; what it writes on the ghosts
         * is fresh only if nothing it reads is stale there */
        d->sets[s].fresh_in = 1;
        if (own) {
            for (int a = 0; a < p->nattrs; a++)
                if (d->sets[s].dirty[a] && reads(st, p, p->attrs[a].name))
                    d->sets[s].fresh_in = 0;
            continue;
        }
        void *data[MAX_ATTRS];
        size_t elem[MAX_ATTRS];
        const int k = stale_reads(&d->sets[s], st, p, data, elem);
        int rc = k ? halo_arrays(ctx, p, data, elem, k) : FLOE_OK;
        if (rc)
            return rc;
    }
    return FLOE_OK;
}

void dd_stage_after(floe_ctx *ctx, const stage_inst *st)
{
    struct floe_dd *d = ctx->dd;
    if (!d || d->gathered)
        return;
    const int pw = pointwise(st);
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        if (!p->gen || p->kind != FLOE_SET_FLUID)
            continue;
        /* a pointwise stage computed the ghosts' values from fresh inputs:
         * they are their owners' */
        const int fresh = pw && d->sets[s].fresh_in;
        for (int a = 0; a < p->nattrs; a++) {
            int w = !st->desc;
            for (const floe_attr_desc *ad = st->desc ? st->desc->attrs : NULL; ad && ad->name && !w; ad++)
                w = (ad->kind & p->kind) && (ad->access & FLOE_WRITE) && !strcmp(ad->name, p->attrs[a].name);
            if (w)
                d->sets[s].dirty[a] = (uint8_t)!fresh;
        }
    }
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

/* every K frames: the boxes move to the counts' quantiles when the fullest
 * rank holds more than BALANCE_COUNT above the mean (every rank waits for
 * the fullest at each exchange: at 10%, the reference bench's 4 ranks ran
 * with one at 6.4% over the mean for the whole run; docs/mpi.md) */
#define BALANCE_COUNT 1.02
static int balance(floe_ctx *ctx, struct floe_dd *d, int frame)
{
    double t0 = dd_now_ms();
    uint64_t mine = 0;
    for (int s = 0; s < ctx->npsets; s++)
        mine += ctx->sets[s].gen && ctx->sets[s].kind == FLOE_SET_FLUID ? d->sets[s].owned : 0;
    double most = (double)mine, total = (double)mine;
    int e = MPI_Allreduce(MPI_IN_PLACE, &most, 1, MPI_DOUBLE, MPI_MAX, d->comm);
    if (e == MPI_SUCCESS)
        e = MPI_Allreduce(MPI_IN_PLACE, &total, 1, MPI_DOUBLE, MPI_SUM, d->comm);
    if (e != MPI_SUCCESS)
        return dd_mpi_fail(ctx, e, "MPI_Allreduce (load balance)");
    const double imb = total > 0 ? most / (total / d->size) : 1;
    int rc = FLOE_OK;
    if (imb > BALANCE_COUNT) {
        rc = place_cuts(ctx, d);
        if (!rc && d->rank == 0) {
            char line[1024];
            int len = 0;
            const double *c = dd_geom_row(&d->geom, 0, 0);
            for (int r = 1; r < d->geom.parts[0] && len < (int)sizeof line - 32; r++)
                len += snprintf(line + len, sizeof line - (size_t)len, "%s%.6g", r > 1 ? ", " : "", c[r]);
            if (d->geom.levels > 1)
                snprintf(line + len, sizeof line - (size_t)len, " along %c, and the cuts within each piece",
                         "xyz"[d->geom.axis[0]]);
            ctx_log(ctx, FLOE_LOG_INFO, "mpi: load balance after frame %d: the largest rank held %.1f%% of the mean; "
                    "cuts moved to %s", frame, 100 * imb, line);
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
int floe_mpi_skin(double frac) { return frac >= 0 && frac <= 1 ? 0 : -1; }

int floe_mpi_decomp(const char *mode)
{
    return mode && (!strcmp(mode, "slabs") || !strcmp(mode, "boxes") || !strcmp(mode, "auto")) ? 0 : -1;
}

#endif
