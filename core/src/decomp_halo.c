/* Domain decomposition over MPI: the halos (docs/mpi.md, "A step"). Before
 * a stage runs, the ghosts of the attributes it reads that an earlier
 * stage of this step wrote are refreshed: the owners send, in the ghost
 * order of the step (dd_stage_before, dd_stage_after). A module asks for
 * one attribute's halo itself with dd_halo (api->halo). A stage that
 * declares its rows (floe_stage_desc.rows) runs split around the refresh:
 * the refresh is posted, the interior rows run, then the border rows
 * once it arrived (dd_split_*, pipeline.c). */
#include "decomp.h"
#include "decomp_cl.h"

#include <floe/floe.h>

#include <stdlib.h>
#include <string.h>

#ifdef FLOE_HAVE_MPI
#include "decomp_int.h"

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
        rc = dd_xchg(ctx, d, d->np, d->peer, d->sbuf, d->bs, d->bso, into, d->br, d->bro, TAG_HALO, "halo");
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

#endif
