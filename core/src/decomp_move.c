/* Domain decomposition over MPI: migration and ghosts (docs/mpi.md, "A
 * step"). At the start of a step the ghosts of the last one are dropped;
 * when any rank's ghost lists are over (a particle moved half the skin
 * since the last rebuild, or a set's count or order changed), the
 * particles that left this rank's box go to their new owner with all
 * their attributes and every owned particle within the halo's width and
 * the skin of a partner's box is copied there as a ghost, after that
 * rank's own particles (dd_step_begin). Between rebuilds the ghosts keep
 * their lists and only their rows are sent again. On GPU ranks the
 * selections run on the device and only the rows that cross come to the
 * host (decomp_cl.c). */
#include "decomp.h"
#include "decomp_cl.h"

#include <floe/floe.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef FLOE_HAVE_MPI
#include "decomp_int.h"

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

static int inside(const struct floe_dd *d, const float *x)
{
    for (int l = 0; l < d->geom.levels; l++) {
        const int k = d->geom.axis[l];
        if (!(x[k] >= d->lo[k] && x[k] < d->hi[k]))
            return 0;
    }
    return 1;
}

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
        const double q = dd_gap_on_axis(ctx, k, x[k], x[k], lo[k], hi[k]);
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
int dd_migrate(floe_ctx *ctx, int s)
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
        rc = dd_xchg(ctx, d, np, peer, d->sbuf, d->bs, d->bso, d->rbuf, d->br, d->bro, TAG_MIGRATE, "migration");
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

/* x within R of the box [lo, hi] along every axis (across the wrap on a
 * periodic one) */
static int near_box(const floe_ctx *ctx, const float *x, const double *lo, const double *hi, double R)
{
    if (!ctx->info.periodic)
        return x[0] >= lo[0] - R && x[0] <= hi[0] + R && x[1] >= lo[1] - R && x[1] <= hi[1] + R &&
               x[2] >= lo[2] - R && x[2] <= hi[2] + R;
    for (int k = 0; k < 3; k++)
        if (dd_gap_on_axis(ctx, k, x[k], x[k], lo[k], hi[k]) > R)
            return 0;
    return 1;
}

/* every owned particle within the halo's width of a partner's box is
 * copied there, after that rank's owned particles; the lists kept for the
 * refreshes */
static int build_ghosts(floe_ctx *ctx, int s)
{
    struct floe_dd *d = ctx->dd;
    dd_set *ds = &d->sets[s];
    pset *p = &ctx->sets[s];
    const size_t row = dd_row_bytes(p);
    const uint32_t n = ds->owned;
    const int dev = on_device(ctx);
    const double R = dd_ghost_width(ctx);
    if (reserve_dest(ctx, d, n))
        return FLOE_ERR_NOMEM;
    /* the owned particles within R of a face of the box: candidates */
    uint32_t nc = 0;
    double blo[3], bhi[3]; /* on a periodic axis an end box's open side is the domain's face */
    memcpy(blo, d->lo, sizeof blo), memcpy(bhi, d->hi, sizeof bhi);
    for (int k = 0; k < 3; k++)
        dd_box_on_axis(ctx, k, &blo[k], &bhi[k]);
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
    if ((rc = dd_xchg(ctx, d, d->np, d->peer, d->sbuf, d->bs, d->bso, d->rbuf, d->br, d->bro, TAG_GHOSTS, "ghosts")))
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
    if ((rc = dd_xchg(ctx, d, d->np, d->peer, d->sbuf, d->bs, d->bso, d->rbuf, d->br, d->bro, TAG_GHOSTS, "ghosts")))
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
        rc = dd_migrate(ctx, s);
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
    if (!rc)
        dd_fit_window(ctx);
    d->rebuild = 0;
    d->rebuilds++;
    d->steps++;
    double t3 = dd_now_ms();
    d->ph_ms[PH_GHOSTS] += t3 - t2;
    d->comm_ms += t3 - t0;
    return rc;
}

#endif
