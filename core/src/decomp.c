/* Domain decomposition over MPI (docs/mpi.md). Every rank runs the whole
 * scene's set-up, so at the first floe_run each holds every particle: it
 * keeps those of its slab. Slabs cut the domain's longest axis at the
 * quantiles of the particles' coordinate (a histogram of 4096 bins), so
 * that ranks start with even counts; every `balance_every` frames the cuts
 * move again when the fullest rank holds more than 10% above the mean.
 *
 * Each step begins with the ghosts dropped, the particles that left the
 * slab sent to their new owner with all their attributes (MPI_Alltoallv of
 * packed rows) and the ghosts rebuilt: every owned particle within the
 * support radius H of another slab is copied there, after that rank's own
 * particles. Stages then run on the local arrays as in one process; before
 * each, the ghosts of the attributes it reads that an earlier stage wrote
 * are refreshed (owners send, in the ghost order of the step). Boundary
 * sets are whole on every rank. A frame: each rank writes its part, rank 0
 * joins them (decomp_io.c).
 *
 * Open MPI does the transport (MPI_Alltoallv, MPI_Allreduce, MPI_Gather);
 * nothing here talks to a socket. */
#include "decomp.h"
#include "decomp_cl.h"
#include "out_path.h"

#include <floe/floe.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef FLOE_HAVE_MPI
#include <mpi.h>

static int world_size = 1, world_rank = 0, balance_every = 10;

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

enum { NBINS = 4096, REORDER_EVERY = 10 };

typedef struct dd_set {
    uint32_t owned, ghosts;
    uint32_t *send_idx;      /* owned particles sent as ghosts, grouped by rank */
    size_t send_cap;
    int *scnt, *soff, *rcnt, *roff; /* per rank, in particles */
    uint8_t dirty[MAX_ATTRS]; /* written since the ghosts were last sent */
} dd_set;

struct floe_dd {
    MPI_Comm comm;
    int rank, size, axis;
    double *cuts;            /* size + 1: slab r is [cuts[r], cuts[r + 1]) */
    dd_set sets[MAX_SETS];
    char *sbuf, *rbuf;
    size_t scap, rcap;
    int *bs, *bso, *br, *bro; /* byte counts and offsets, per rank */
    double comm_ms, step_ms; /* this frame */
    uint64_t steps;
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static int grow(char **p, size_t *cap, size_t need)
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

static int slab_of(const struct floe_dd *d, double x)
{
    int lo = 0, hi = d->size - 1; /* the last slab whose cut is <= x */
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (d->cuts[mid] <= x)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

static size_t row_bytes(const pset *p)
{
    size_t b = 0;
    for (int a = 0; a < p->nattrs; a++)
        b += floe_type_size(p->attrs[a].type);
    return b;
}

static void pack_row(const pset *p, uint32_t i, char *dst)
{
    for (int a = 0; a < p->nattrs; a++) {
        size_t es = floe_type_size(p->attrs[a].type);
        memcpy(dst, (const char *)p->attrs[a].data + (size_t)i * es, es);
        dst += es;
    }
}

static void unpack_row(pset *p, uint32_t i, const char *src)
{
    for (int a = 0; a < p->nattrs; a++) {
        size_t es = floe_type_size(p->attrs[a].type);
        memcpy((char *)p->attrs[a].data + (size_t)i * es, src, es);
        src += es;
    }
}

static int mpi_fail(floe_ctx *ctx, int rc, const char *what)
{
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, s, &len);
    return ctx_fail(ctx, FLOE_ERR, "MPI (rank %d): %s failed: %s", ctx->dd ? ctx->dd->rank : world_rank, what, s);
}

/* counts in particles (scnt) to counts in bytes; the partners' counts
 * (rcnt) through MPI_Alltoall; offsets of both */
static int exchange_counts(floe_ctx *ctx, struct floe_dd *d, const int *scnt, int *rcnt, size_t row, size_t *stot,
                           size_t *rtot)
{
    int rc = MPI_Alltoall(scnt, 1, MPI_INT, rcnt, 1, MPI_INT, d->comm);
    if (rc != MPI_SUCCESS)
        return mpi_fail(ctx, rc, "MPI_Alltoall");
    size_t so = 0, ro = 0;
    for (int r = 0; r < d->size; r++) {
        if ((so + (size_t)scnt[r]) * row > (size_t)INT32_MAX || (ro + (size_t)rcnt[r]) * row > (size_t)INT32_MAX)
            return ctx_fail(ctx, FLOE_ERR, "MPI: more than 2 GiB of particles to exchange in one step on rank %d",
                            d->rank);
        d->bs[r] = (int)((size_t)scnt[r] * row);
        d->bso[r] = (int)(so * row);
        d->br[r] = (int)((size_t)rcnt[r] * row);
        d->bro[r] = (int)(ro * row);
        so += (size_t)scnt[r];
        ro += (size_t)rcnt[r];
    }
    *stot = so;
    *rtot = ro;
    return FLOE_OK;
}

/* ---- slabs ----------------------------------------------------------------- */

/* Cuts at the quantiles of the fluid particles' coordinate on the axis;
 * replicated: every rank holds every particle (no reduction) */
static int place_cuts(floe_ctx *ctx, struct floe_dd *d, int replicated, double *imbalance)
{
    const double lo = ctx->info.domain_min[d->axis], hi = ctx->info.domain_max[d->axis];
    const double w = (hi - lo) / NBINS;
    double *h = calloc(NBINS, sizeof *h);
    if (!h)
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory");
    for (int s = 0; s < ctx->npsets; s++) {
        const pset *p = &ctx->sets[s];
        if (p->kind != FLOE_SET_FLUID || !p->gen)
            continue;
        const float *x = pset_attr((pset *)p, "x")->data;
        const uint32_t n = replicated ? p->n : d->sets[s].owned;
        for (uint32_t i = 0; i < n; i++) {
            int b = (int)floor((x[3 * i + d->axis] - lo) / w);
            h[b < 0 ? 0 : b >= NBINS ? NBINS - 1 : b] += 1;
        }
    }
    if (!replicated) {
        int rc = MPI_Allreduce(MPI_IN_PLACE, h, NBINS, MPI_DOUBLE, MPI_SUM, d->comm);
        if (rc != MPI_SUCCESS) {
            free(h);
            return mpi_fail(ctx, rc, "MPI_Allreduce");
        }
    }
    double total = 0, cmax = 0;
    for (int b = 0; b < NBINS; b++)
        total += h[b];
    /* the counts the current cuts hold (bins split by a cut go to the slab of their centre) */
    double *cnt = calloc((size_t)d->size, sizeof *cnt);
    if (!cnt) {
        free(h);
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory");
    }
    for (int b = 0; b < NBINS; b++)
        cnt[slab_of(d, lo + (b + 0.5) * w)] += h[b];
    for (int r = 0; r < d->size; r++)
        cmax = cnt[r] > cmax ? cnt[r] : cmax;
    free(cnt);
    *imbalance = total > 0 ? cmax / (total / d->size) : 1;
    if (imbalance && *imbalance <= 1.1 && !replicated) {
        free(h);
        return FLOE_OK;
    }
    double acc = 0;
    int r = 1;
    d->cuts[0] = -INFINITY;
    for (int b = 0; b < NBINS && r < d->size; b++) {
        acc += h[b];
        while (r < d->size && acc >= total * r / d->size)
            d->cuts[r++] = lo + (b + 1) * w;
    }
    while (r < d->size)
        d->cuts[r++] = hi;
    d->cuts[d->size] = INFINITY;
    free(h);
    return FLOE_OK;
}

static const char *refusal(floe_ctx *ctx, char *buf, size_t len, int checkpointing)
{
    if (ctx->info.periodic)
        return "periodic domains are not decomposed (the slabs do not wrap round)";
    if (ctx->emit)
        return "sources and sinks (sim:source, sim:sink) grow sets the decomposition does not follow";
    if (ctx->probes)
        return "probes (sim:probe) sum over particles other ranks hold";
    if (checkpointing || (ctx->out && (ctx->out->flags & FLOE_OUTPUT_RESUME)))
        return "checkpoints and --resume are written by one process";
    for (int s = 0; s < ctx->npsets; s++) {
        const pset *p = &ctx->sets[s];
        if (p->gen && p->kind == FLOE_SET_BOUNDARY && (p->every_frame || !p->is_static)) {
            snprintf(buf, len, "boundary set '%s' changes during the run (moving or grown by a module)", p->name);
            return buf;
        }
    }
    for (int i = 0; i < ctx->nstages; i++) {
        const stage_inst *st = &ctx->stages[i];
        const floe_stage_desc *sd = st->desc;
        if (sd && sd->size >= offsetof(floe_stage_desc, serial) + sizeof sd->serial && sd->serial) {
            snprintf(buf, len, "stage '%s' declares it cannot run on a part of the particles (floe_stage_desc.serial)",
                     st->name);
            return buf;
        }
    }
    return NULL;
}

/* ---- migration and ghosts ---------------------------------------------------- */

static int drop_ghosts(floe_ctx *ctx)
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

/* the particles of set s outside this rank's slab go to their owners */
static int migrate(floe_ctx *ctx, int s)
{
    struct floe_dd *d = ctx->dd;
    dd_set *ds = &d->sets[s];
    pset *p = &ctx->sets[s];
    const size_t row = row_bytes(p);
    const uint32_t n = p->n;
    int *dest = malloc((size_t)n * sizeof *dest + 1);
    uint8_t *keep = malloc((size_t)n + 1);
    if (!dest || !keep) {
        free(dest), free(keep);
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory");
    }
    const float *x = pset_attr(p, "x")->data;
    for (int r = 0; r < d->size; r++)
        ds->scnt[r] = 0;
    for (uint32_t i = 0; i < n; i++) {
        dest[i] = slab_of(d, x[3 * i + d->axis]);
        keep[i] = dest[i] == d->rank;
        ds->scnt[dest[i]] += !keep[i];
    }
    size_t stot, rtot;
    int rc = exchange_counts(ctx, d, ds->scnt, ds->rcnt, row, &stot, &rtot);
    if (!rc && (grow(&d->sbuf, &d->scap, stot * row) || grow(&d->rbuf, &d->rcap, rtot * row)))
        rc = ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory");
    if (!rc) {
        int *fill = calloc((size_t)d->size, sizeof *fill);
        if (!fill)
            rc = ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory");
        for (uint32_t i = 0; i < n && fill; i++)
            if (!keep[i])
                pack_row(p, i, d->sbuf + d->bso[dest[i]] + (size_t)fill[dest[i]]++ * row);
        free(fill);
    }
    if (!rc) {
        int e = MPI_Alltoallv(d->sbuf, d->bs, d->bso, MPI_BYTE, d->rbuf, d->br, d->bro, MPI_BYTE, d->comm);
        if (e != MPI_SUCCESS)
            rc = mpi_fail(ctx, e, "MPI_Alltoallv (migration)");
    }
    if (!rc && stot) { /* the leavers' slots take the last particles (the order does not matter: the
                        * lists are in id order): O(leavers), not a pass over every attribute of the set */
        uint32_t last = n;
        for (uint32_t i = n; i-- > 0;) {
            if (keep[i])
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
    if (!rc && rtot) {
        const uint32_t m = p->n;
        if (!(rc = ctx_set_resize(ctx, ctx_set_handle(ctx, s), m + (uint32_t)rtot)))
            for (size_t k = 0; k < rtot; k++)
                unpack_row(p, m + (uint32_t)k, d->rbuf + k * row);
    }
    free(dest), free(keep);
    ds->owned = p->n;
    return rc;
}

typedef struct key_id {
    uint64_t key;
    uint32_t id, i;
} key_id;

static int cmp_key(const void *a, const void *b)
{
    const key_id *u = a, *v = b;
    if (u->key != v->key)
        return u->key < v->key ? -1 : 1;
    return u->id < v->id ? -1 : u->id > v->id;
}

/* owned particles along the cell key (then id) for memory locality: what
 * the neighbours stage's reorder does in one process, which would mix the
 * ghosts with the owned particles here */
static int reorder_owned(floe_ctx *ctx, int s)
{
    pset *p = &ctx->sets[s];
    const uint32_t n = p->n;
    if (n < 2)
        return FLOE_OK;
    key_id *k = malloc((size_t)n * sizeof *k);
    uint32_t *perm = malloc((size_t)n * sizeof *perm);
    if (!k || !perm) {
        free(k), free(perm);
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory");
    }
    const float *x = pset_attr(p, "x")->data;
    const attr *ida = pset_attr(p, "id");
    const uint32_t *id = ida ? ida->data : NULL;
    const float *lo = ctx->info.domain_min, *hi = ctx->info.domain_max, H = ctx->info.support;
    uint64_t nc[3];
    for (int a = 0; a < 3; a++)
        nc[a] = (uint64_t)((hi[a] - lo[a]) / H) + 1;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t c[3];
        for (int a = 0; a < 3; a++) {
            double q = floor((x[3 * i + a] - lo[a]) / H);
            c[a] = q < 0 ? 0 : q >= (double)nc[a] ? nc[a] - 1 : (uint64_t)q;
        }
        k[i] = (key_id){(c[2] * nc[1] + c[1]) * nc[0] + c[0], id ? id[i] : i, i};
    }
    qsort(k, n, sizeof *k, cmp_key);
    for (uint32_t i = 0; i < n; i++)
        perm[i] = k[i].i;
    free(k);
    int rc = floe_set_reorder(ctx, ctx_set_handle(ctx, s), perm);
    free(perm);
    return rc;
}

/* every owned particle within H of another slab is copied there, after
 * that rank's owned particles; the lists kept for the refreshes */
static int build_ghosts(floe_ctx *ctx, int s)
{
    struct floe_dd *d = ctx->dd;
    dd_set *ds = &d->sets[s];
    pset *p = &ctx->sets[s];
    const size_t row = row_bytes(p);
    const uint32_t n = ds->owned;
    const float *x = pset_attr(p, "x")->data;
    const double H = ctx->info.support * (1 + 1e-4);
    for (int r = 0; r < d->size; r++)
        ds->scnt[r] = 0;
    for (uint32_t i = 0; i < n; i++) {
        const double xa = x[3 * i + d->axis];
        for (int r = slab_of(d, xa - H), r1 = slab_of(d, xa + H); r <= r1; r++)
            ds->scnt[r] += r != d->rank;
    }
    size_t tot = 0;
    for (int r = 0; r < d->size; r++)
        ds->soff[r] = (int)tot, tot += (size_t)ds->scnt[r];
    if (tot > ds->send_cap) {
        uint32_t *q = realloc(ds->send_idx, tot * sizeof *q);
        if (!q)
            return ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory");
        ds->send_idx = q;
        ds->send_cap = tot;
    }
    int *fill = calloc((size_t)(unsigned)d->size, sizeof *fill);
    if (!fill)
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory");
    for (uint32_t i = 0; i < n; i++) {
        const double xa = x[3 * i + d->axis];
        for (int r = slab_of(d, xa - H), r1 = slab_of(d, xa + H); r <= r1; r++)
            if (r != d->rank)
                ds->send_idx[ds->soff[r] + fill[r]++] = i;
    }
    free(fill);
    size_t stot, rtot;
    int rc = exchange_counts(ctx, d, ds->scnt, ds->rcnt, row, &stot, &rtot);
    if (rc)
        return rc;
    for (int r = 0, o = 0; r < d->size; r++)
        ds->roff[r] = o, o += ds->rcnt[r];
    if (grow(&d->sbuf, &d->scap, stot * row) || grow(&d->rbuf, &d->rcap, rtot * row))
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory");
    for (size_t k = 0; k < stot; k++)
        pack_row(p, ds->send_idx[k], d->sbuf + k * row);
    int e = MPI_Alltoallv(d->sbuf, d->bs, d->bso, MPI_BYTE, d->rbuf, d->br, d->bro, MPI_BYTE, d->comm);
    if (e != MPI_SUCCESS)
        return mpi_fail(ctx, e, "MPI_Alltoallv (ghosts)");
    if (rtot && (rc = ctx_set_resize(ctx, ctx_set_handle(ctx, s), n + (uint32_t)rtot)))
        return rc;
    for (size_t k = 0; k < rtot; k++)
        unpack_row(p, n + (uint32_t)k, d->rbuf + k * row);
    ds->ghosts = (uint32_t)rtot;
    p->ghosts = ds->ghosts;
    memset(ds->dirty, 0, sizeof ds->dirty);
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
    }
    free(d->cuts), free(d->sbuf), free(d->rbuf), free(d->bs), free(d->bso), free(d->br), free(d->bro);
    if (d->comm != MPI_COMM_NULL)
        MPI_Comm_free(&d->comm);
    free(d);
}

void dd_free(floe_ctx *ctx)
{
    dd_destroy(ctx->dd);
    ctx->dd = NULL;
}

int dd_run_begin(floe_ctx *ctx, int checkpointing)
{
    if (world_size < 2)
        return FLOE_OK;
    char buf[512];
    const char *why = refusal(ctx, buf, sizeof buf, checkpointing);
    if (why)
        return ctx_fail(ctx, FLOE_ERR_ARG, "MPI (%d ranks): %s", world_size, why);
    if (ctx->dd) /* a later run of the scene: the sets are already split */
        return FLOE_OK;
    struct floe_dd *d = calloc(1, sizeof *d);
    if (!d)
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory");
    d->comm = MPI_COMM_NULL;
    MPI_Comm_dup(MPI_COMM_WORLD, &d->comm);
    MPI_Comm_rank(d->comm, &d->rank);
    MPI_Comm_size(d->comm, &d->size);
    const size_t ni = (size_t)d->size * sizeof(int);
    int ok = (d->cuts = calloc((size_t)d->size + 1, sizeof *d->cuts)) && (d->bs = malloc(ni)) &&
             (d->bso = malloc(ni)) && (d->br = malloc(ni)) && (d->bro = malloc(ni));
    for (int s = 0; s < MAX_SETS && ok; s++) {
        dd_set *ds = &d->sets[s];
        ok = (ds->scnt = calloc(1, ni)) && (ds->soff = calloc(1, ni)) && (ds->rcnt = calloc(1, ni)) &&
             (ds->roff = calloc(1, ni));
    }
    if (!ok) {
        dd_destroy(d);
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory");
    }
    d->axis = 0; /* the domain's longest axis */
    for (int a = 1; a < ctx->info.dim; a++)
        if (ctx->info.domain_max[a] - ctx->info.domain_min[a] > ctx->info.domain_max[d->axis] - ctx->info.domain_min[d->axis])
            d->axis = a;
    ctx->dd = d;
    /* every rank past its scene's set-up (and its output root's checks)
     * before rank 0 writes anything */
    MPI_Barrier(d->comm);
    double imb;
    int rc = place_cuts(ctx, d, 1, &imb);
    uint64_t total = 0;
    for (int s = 0; s < ctx->npsets && !rc; s++) { /* every rank holds everything: keep the slab */
        pset *p = &ctx->sets[s];
        if (!p->gen || p->kind != FLOE_SET_FLUID)
            continue;
        total += p->n;
        uint8_t *keep = malloc((size_t)p->n + 1);
        if (!keep) {
            rc = ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory");
            break;
        }
        const float *x = pset_attr(p, "x")->data;
        for (uint32_t i = 0; i < p->n; i++)
            keep[i] = slab_of(d, x[3 * i + d->axis]) == d->rank;
        rc = ctx_set_compact(ctx, ctx_set_handle(ctx, s), keep);
        free(keep);
        d->sets[s].owned = p->n;
    }
    if (rc) {
        dd_free(ctx);
        return rc;
    }
    uint64_t mine = 0;
    for (int s = 0; s < ctx->npsets; s++)
        mine += ctx->sets[s].kind == FLOE_SET_FLUID ? d->sets[s].owned : 0;
    static const char axes[] = "xyz";
    ctx_log(ctx, FLOE_LOG_INFO, "mpi: rank %d of %d (pid %ld): slab %c in [%.6g, %.6g), %llu of %llu particles",
            d->rank, d->size, (long)getpid(), axes[d->axis], d->rank ? d->cuts[d->rank] : ctx->info.domain_min[d->axis],
            d->rank < d->size - 1 ? d->cuts[d->rank + 1] : ctx->info.domain_max[d->axis], (unsigned long long)mine,
            (unsigned long long)total);
    return FLOE_OK;
}

void dd_run_end(floe_ctx *ctx)
{
    if (ctx->dd)
        drop_ghosts(ctx);
}

int dd_step_begin(floe_ctx *ctx)
{
    struct floe_dd *d = ctx->dd;
    if (!d)
        return FLOE_OK;
    double t0 = now_ms();
    dd_cl_host(ctx); /* OpenCL: the exchanges work on the host copies */
    int rc = drop_ghosts(ctx);
    for (int s = 0; s < ctx->npsets && !rc; s++) {
        if (!ctx->sets[s].gen || ctx->sets[s].kind != FLOE_SET_FLUID)
            continue;
        if (!(rc = migrate(ctx, s)) && d->steps % REORDER_EVERY == 0)
            rc = reorder_owned(ctx, s);
        if (!rc)
            rc = build_ghosts(ctx, s);
    }
    d->steps++;
    d->comm_ms += now_ms() - t0;
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
    dd_cl_host(ctx);
    int rc = drop_ghosts(ctx);
    for (int s = 0; s < ctx->npsets && !rc && ctx->outside == FLOE_OUTSIDE_DELETE; s++) {
        pset *p = &ctx->sets[s];
        if (!p->gen || p->kind != FLOE_SET_FLUID || p->n == 0)
            continue;
        const float *x = pset_attr(p, "x")->data, *lo = ctx->info.domain_min, *hi = ctx->info.domain_max;
        uint8_t *keep = malloc(p->n);
        if (!keep)
            return ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory");
        uint64_t out = 0;
        for (uint32_t i = 0; i < p->n; i++) {
            int in = 1;
            for (int k = 0; k < ctx->info.dim; k++)
                in &= x[3 * i + k] >= lo[k] && x[3 * i + k] <= hi[k];
            keep[i] = (uint8_t)in;
            out += !in;
        }
        if (out) {
            rc = ctx_set_compact(ctx, ctx_set_handle(ctx, s), keep);
            ctx->outside_count += out;
            d->sets[s].owned = p->n;
        }
        free(keep);
    }
    return rc;
}

static int reads(const stage_inst *st, const pset *p, const char *name)
{
    if (!st->desc) /* a Lua stage may read anything */
        return 1;
    for (const floe_attr_desc *a = st->desc->attrs; a && a->name; a++)
        if ((a->kind & p->kind) && (a->access & FLOE_READ) && !strcmp(a->name, name))
            return 1;
    return 0;
}

int dd_halo(floe_ctx *ctx, const pset *p, void *data, size_t elem)
{
    struct floe_dd *d = ctx->dd;
    if (!d)
        return FLOE_OK;
    if (p->kind != FLOE_SET_FLUID) /* boundary sets are whole on every rank */
        return FLOE_OK;
    double t0 = now_ms();
    dd_set *ds = &d->sets[p - ctx->sets];
    size_t stot, rtot = ds->ghosts;
    dd_cl_halo staged; /* OpenCL: device data through host memory (decomp_cl.c) */
    int rc = dd_cl_halo_begin(ctx, p, &data, elem, &staged);
    if (rc)
        return rc;
    for (int r = 0, so = 0; r < d->size; r++) { /* the counts of the step's ghosts */
        d->bs[r] = (int)((size_t)ds->scnt[r] * elem);
        d->bso[r] = (int)((size_t)so * elem);
        d->br[r] = (int)((size_t)ds->rcnt[r] * elem);
        d->bro[r] = (int)((size_t)ds->roff[r] * elem);
        so += ds->scnt[r];
    }
    stot = (size_t)ds->soff[d->size - 1] + (size_t)ds->scnt[d->size - 1];
    if (grow(&d->sbuf, &d->scap, stot * elem))
        return dd_cl_halo_end(ctx, &staged, elem, ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory"));
    const char *src = data;
    for (size_t k = 0; k < stot; k++)
        memcpy(d->sbuf + k * elem, src + (size_t)ds->send_idx[k] * elem, elem);
    char *ghosts = (char *)data + (size_t)ds->owned * elem; /* the ghosts in the order they came */
    (void)rtot;
    int e = MPI_Alltoallv(d->sbuf, d->bs, d->bso, MPI_BYTE, ghosts, d->br, d->bro, MPI_BYTE, d->comm);
    if (e != MPI_SUCCESS)
        rc = mpi_fail(ctx, e, "MPI_Alltoallv (halo)");
    rc = dd_cl_halo_end(ctx, &staged, elem, rc);
    d->comm_ms += now_ms() - t0;
    return rc;
}

int dd_stage_before(floe_ctx *ctx, const stage_inst *st)
{
    struct floe_dd *d = ctx->dd;
    if (!d)
        return FLOE_OK;
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        if (!p->gen || p->kind != FLOE_SET_FLUID)
            continue;
        if (p->n != d->sets[s].owned + d->sets[s].ghosts)
            return ctx_fail(ctx, FLOE_ERR, "MPI (rank %d): set '%s' changed size during the step before stage '%s' "
                            "(%u particles, %u owned, %u ghosts): the decomposition does not follow particles added or "
                            "removed inside a step", d->rank, p->name, st->name, p->n, d->sets[s].owned,
                            d->sets[s].ghosts);
        for (int a = 0; a < p->nattrs; a++) {
            if (!d->sets[s].dirty[a] || !reads(st, p, p->attrs[a].name))
                continue;
            int rc = dd_halo(ctx, p, p->attrs[a].data, floe_type_size(p->attrs[a].type));
            if (rc)
                return rc;
            d->sets[s].dirty[a] = 0;
        }
    }
    return FLOE_OK;
}

void dd_stage_after(floe_ctx *ctx, const stage_inst *st)
{
    struct floe_dd *d = ctx->dd;
    if (!d)
        return;
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        if (!p->gen || p->kind != FLOE_SET_FLUID)
            continue;
        for (int a = 0; a < p->nattrs; a++) {
            int w = !st->desc;
            for (const floe_attr_desc *ad = st->desc ? st->desc->attrs : NULL; ad && ad->name && !w; ad++)
                w = (ad->kind & p->kind) && (ad->access & FLOE_WRITE) && !strcmp(ad->name, p->attrs[a].name);
            d->sets[s].dirty[a] |= (uint8_t)w;
        }
    }
}

uint32_t dd_owned(const floe_ctx *ctx, const pset *p)
{
    if (!ctx->dd || p->kind != FLOE_SET_FLUID)
        return p->n;
    return ctx->dd->sets[p - ctx->sets].owned;
}

int dd_reduce(floe_ctx *ctx, double *v, int n, int op)
{
    struct floe_dd *d = ctx->dd;
    if (!d || n <= 0)
        return FLOE_OK;
    if (op < FLOE_REDUCE_SUM || op > FLOE_REDUCE_MIN)
        return ctx_fail(ctx, FLOE_ERR_ARG, "reduce: unknown operation %d", op);
    const MPI_Op ops[] = {MPI_SUM, MPI_MAX, MPI_MIN};
    double t0 = now_ms();
    int e = MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, ops[op], d->comm);
    d->comm_ms += now_ms() - t0;
    return e == MPI_SUCCESS ? FLOE_OK : mpi_fail(ctx, e, "MPI_Allreduce");
}

int dd_writer(const floe_ctx *ctx) { return !ctx->dd || ctx->dd->rank == 0; }

void dd_step_time(floe_ctx *ctx, double ms)
{
    if (ctx->dd)
        ctx->dd->step_ms += ms;
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
    double v[3] = {(double)mine, d->step_ms, d->comm_ms};
    double *all = d->rank == 0 ? malloc(3 * sizeof *all * (size_t)d->size) : NULL;
    int e = MPI_Gather(v, 3, MPI_DOUBLE, all, 3, MPI_DOUBLE, 0, d->comm);
    if (e != MPI_SUCCESS) {
        free(all);
        return mpi_fail(ctx, e, "MPI_Gather (timings)");
    }
    if (all) {
        out->n = d->size < 64 ? d->size : 64;
        for (int r = 0; r < out->n; r++) {
            out->particles[r] = (uint32_t)all[3 * r];
            out->step_ms[r] = (float)all[3 * r + 1];
            out->comm_ms[r] = (float)all[3 * r + 2];
        }
        free(all);
    }
    d->step_ms = d->comm_ms = 0;
    if (balance_every > 0 && frame % balance_every == 0) { /* ghosts are stale after: the next step rebuilds them */
        double *old = malloc(((size_t)d->size + 1) * sizeof *old);
        if (!old)
            return ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory");
        memcpy(old, d->cuts, ((size_t)d->size + 1) * sizeof *old);
        double imb = 1;
        int rc = place_cuts(ctx, d, 0, &imb);
        int moved = memcmp(old, d->cuts, ((size_t)d->size + 1) * sizeof *old) != 0;
        if (!rc && moved && d->rank == 0) {
            char line[1024];
            int len = 0;
            for (int r = 1; r < d->size && len < (int)sizeof line - 32; r++)
                len += snprintf(line + len, sizeof line - (size_t)len, "%s%.6g", r > 1 ? ", " : "", d->cuts[r]);
            ctx_log(ctx, FLOE_LOG_INFO, "mpi: load balance after frame %d: the largest rank held %.1f%% of the mean; "
                    "cuts moved to %s", frame, 100 * imb, line);
        }
        free(old);
        return rc;
    }
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

#endif
