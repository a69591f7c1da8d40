/* GPU ranks under MPI (docs/mpi.md, "GPU ranks"). With --backend opencl
 * each rank opens the device of its local rank (backend.c asks for
 * "local:L": the L-th GPU modulo their count, core/src/opencl/device.c).
 * The decomposition's exchanges go through host memory: before a step's
 * migration the fluid sets come back to the host (decomp.c then works as
 * on the cpu backend, and the device copies are uploaded when a device
 * stage next asks); a halo of data that lives on the device reads the
 * owned rows back, exchanges them as decomp.c does any host array, and
 * writes the ghost rows back. A device-aware path (MPI on device memory)
 * is a later optimisation. */
#include "decomp_cl.h"
#include "device.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef FLOE_HAVE_MPI
#include <mpi.h>
#endif

int dd_local_rank(void)
{
#ifdef FLOE_HAVE_MPI
    static int local = -2;
    if (local != -2)
        return local;
    int inited = 0, rank = 0, size = 1;
    MPI_Initialized(&inited);
    if (inited)
        MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2)
        return -1; /* not cached: the job may not have begun yet */
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *e = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    if (e && *e) {
        local = atoi(e);
        return local;
    }
    MPI_Comm node;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Comm_rank(node, &local);
        MPI_Comm_free(&node);
        return local;
    }
    local = rank;
    return local;
#else
    return -1;
#endif
}

void dd_cl_host(floe_ctx *ctx)
{
    if (!ctx->dev || !ctx->dd)
        return;
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        if (!p->gen || p->kind != FLOE_SET_FLUID)
            continue;
        dev_host_set(ctx, p, 1);
        dev_moved(ctx, p);
    }
}

void dd_cl_positions(floe_ctx *ctx, pset *p)
{
    if (ctx->dev && ctx->dd)
        dev_host(ctx, p, pset_attr(p, "x"), 0);
}

/* rows idx[0..m) of nbuf device buffers gathered there in one read, each
 * scattered into its host array (elems[b] bytes a row) */
static int rows_into(floe_ctx *ctx, int nbuf, void *const *mems, const size_t *elems, const uint32_t *idx, uint32_t m,
                     char *const *hosts)
{
    size_t total = 0;
    for (int b = 0; b < nbuf; b++)
        total += (size_t)m * elems[b];
    char *tmp = malloc(total + 1);
    if (!tmp)
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory for %u rows", m);
    int rc = ctx->dev->ops->gather_rows(ctx, nbuf, mems, elems, idx, m, tmp);
    const char *src = tmp;
    for (int b = 0; b < nbuf && !rc; b++) {
        const size_t es = elems[b];
        for (uint32_t k = 0; k < m; k++)
            memcpy(hosts[b] + (size_t)idx[k] * es, src + (size_t)k * es, es);
        src += (size_t)m * es;
    }
    free(tmp);
    return rc;
}

int dd_cl_rows_host(floe_ctx *ctx, pset *p, const uint32_t *idx, uint32_t m, uint32_t rows)
{
    return dd_cl_rows_of(ctx, p, NULL, idx, m, rows);
}

int dd_cl_rows_of(floe_ctx *ctx, pset *p, const char *only, const uint32_t *idx, uint32_t m, uint32_t rows)
{
    if (!ctx->dev || !ctx->dd)
        return FLOE_OK;
    void *mems[MAX_ATTRS];
    size_t elems[MAX_ATTRS];
    char *hosts[MAX_ATTRS];
    int nb = 0;
    for (int a = 0; a < p->nattrs; a++) {
        attr *at = &p->attrs[a];
        if ((only && strcmp(at->name, only)) || !(dev_attr_state(ctx, p, at) & DEV_HOST_STALE))
            continue;
        /* the whole copy read back where the device cannot take the ghosts'
         * rows in place (dd_cl_rows would mark it stale: the host's must
         * then be whole) */
        if (!ctx->dev->ops->gather_rows || ctx->dev->ops->capacity(ctx, p, at) < rows) {
            dev_host(ctx, p, at, 0);
            continue;
        }
        if (!(mems[nb] = ctx->dev->ops->attr(ctx, p, at, FLOE_READ)))
            return FLOE_ERR;
        elems[nb] = floe_type_size(at->type), hosts[nb] = at->data;
        nb++;
    }
    return nb && m ? rows_into(ctx, nb, mems, elems, idx, m, hosts) : FLOE_OK;
}

int dd_cl_outside(floe_ctx *ctx, pset *p, uint32_t n, uint32_t *out, int *rc)
{
    *rc = FLOE_OK;
    const attr *x = pset_attr(p, "x");
    if (!ctx->dev || !ctx->dev->ops->count_outside || !x || !(dev_attr_state(ctx, p, x) & DEV_HOST_STALE)) {
        dd_cl_positions(ctx, p);
        return 1;
    }
    *rc = ctx->dev->ops->count_outside(ctx, p, n, out);
    return 0;
}

int dd_cl_on_device(const floe_ctx *ctx)
{
    const floe_backend_ops *o = ctx->dd && ctx->dev ? ctx->dev->ops : NULL;
    return o && o->gather_rows && o->set_compact && o->set_resize && o->select_rows && o->keep_except &&
           o->keep_positions && o->max_drift2;
}

/* a bound as a float on the side that keeps the device's selection a
 * superset of the host's test (up: the least float >= v, else the largest
 * <= v); infinities as they are */
static float bound_f(double v, int up)
{
    float f = (float)v;
    if (!isfinite(v))
        return f;
    if (up && (double)f < v)
        f = nextafterf(f, INFINITY);
    if (!up && (double)f > v)
        f = nextafterf(f, -INFINITY);
    return f;
}

int dd_cl_select(floe_ctx *ctx, pset *p, uint32_t n, const double lo[3], const double hi[3], double r, int mode,
                 uint32_t *idx, uint32_t *m)
{
    float l[3], h[3];
    double scale = r;
    for (int k = 0; k < 3; k++) {
        /* leavers (mode 0): flagged below lo rounded up or from hi rounded
         * down; near a face (mode 1): lo rounded up, hi down, r widened by
         * the float subtraction's rounding */
        l[k] = bound_f(lo[k], 1), h[k] = bound_f(hi[k], 0);
        scale = fmax(scale, fmax(isfinite(lo[k]) ? fabs(lo[k]) : 0, isfinite(hi[k]) ? fabs(hi[k]) : 0) + r);
    }
    const float rf = mode ? (float)(r * (1 + 1e-5) + 4.8e-7 * scale) : 0.0f;
    return ctx->dev->ops->select_rows(ctx, p, n, l, h, rf, mode, idx, m);
}

int dd_cl_keep_positions(floe_ctx *ctx, pset *p, uint32_t n) { return ctx->dev->ops->keep_positions(ctx, p, n); }

int dd_cl_drift2(floe_ctx *ctx, pset *p, uint32_t n, double *out) { return ctx->dev->ops->max_drift2(ctx, p, n, out); }

int dd_cl_room(floe_ctx *ctx, pset *p, uint32_t n, uint32_t add)
{
    if (!ctx->dev)
        return FLOE_OK;
    for (int a = 0; a < p->nattrs; a++) {
        const attr *at = &p->attrs[a];
        if (!(dev_attr_state(ctx, p, at) & DEV_DEVICE_STALE) && ctx->dev->ops->capacity(ctx, p, at) < n + add) {
            p->n = n;
            return ctx->dev->ops->set_resize(ctx, p, n + add); /* every copy that is the truth grown */
        }
    }
    return FLOE_OK;
}

int dd_cl_squeeze(floe_ctx *ctx, int s, const uint32_t *leavers, uint32_t n, uint32_t nleave)
{
    void *kd = ctx->dev->ops->keep_except(ctx, n, leavers, nleave);
    return kd ? ctx_set_compact_cl(ctx, ctx_set_handle(ctx, s), kd, n - nleave) : FLOE_ERR;
}

void dd_cl_bus(floe_ctx *ctx, double *up, double *down)
{
    uint64_t u = 0, w = 0;
    if (ctx->dev && ctx->dev->ops->bus_bytes)
        ctx->dev->ops->bus_bytes(ctx, &u, &w);
    *up = (double)u, *down = (double)w;
}

int dd_cl_rows(floe_ctx *ctx, pset *p, uint32_t first, uint32_t count)
{
    if (!ctx->dev)
        return FLOE_OK;
    for (int a = 0; a < p->nattrs; a++)
        if (ctx->dev->ops->write_rows(ctx, p, &p->attrs[a], first, count))
            return ctx_fail(ctx, FLOE_ERR, "MPI: writing the ghosts of '%s' to the device failed", p->attrs[a].name);
    return FLOE_OK;
}

int dd_cl_halo_begin(floe_ctx *ctx, const pset *p, void **data, size_t elem, const uint32_t *idx, uint32_t m,
                     dd_cl_halo *h)
{
    memset(h, 0, sizeof *h);
    h->p = (pset *)p;
    if (!ctx->dev)
        return FLOE_OK;
    if (ctx->dev->ops->is_buffer(ctx, *data)) {
        const uint32_t owned = p->n - p->ghosts;
        h->kind = 1;
        h->mem = *data;
        if (!(h->host = malloc((size_t)p->n * elem + 1)))
            return ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory for a halo of set '%s'", p->name);
        /* the rows sent, gathered on the device; without that, the owned rows */
        int rc = ctx->dev->ops->gather_rows && elem % 4 == 0
                     ? rows_into(ctx, 1, &h->mem, &elem, idx, m, (char *const *)&h->host)
                     : ctx->dev->ops->buffer_io(ctx, h->mem, 0, 0, (size_t)owned * elem, h->host);
        if (rc) {
            free(h->host);
            h->kind = 0;
            return rc;
        }
        *data = h->host;
        return FLOE_OK;
    }
    for (int a = 0; a < p->nattrs; a++)
        if (p->attrs[a].data == *data) { /* an attribute: its host copy current, the device's kept */
            h->kind = 2;
            h->at = &h->p->attrs[a];
            if (!(dev_attr_state(ctx, h->p, h->at) & DEV_HOST_STALE))
                break;
            /* the rows sent, gathered on the device, where it takes the
             * ghosts' rows back in place (else the host copy whole) */
            if (!ctx->dev->ops->gather_rows || floe_type_size(h->at->type) != elem ||
                ctx->dev->ops->capacity(ctx, h->p, h->at) < p->n) {
                dev_host(ctx, h->p, h->at, 0);
                break;
            }
            if (!m)
                break;
            void *mem = ctx->dev->ops->attr(ctx, h->p, h->at, FLOE_READ);
            return mem ? rows_into(ctx, 1, &mem, &elem, idx, m, (char *const *)data) : FLOE_ERR;
        }
    return FLOE_OK;
}

int dd_cl_halo_end(floe_ctx *ctx, dd_cl_halo *h, size_t elem, int rc)
{
    const uint32_t ghosts = h->kind ? h->p->ghosts : 0, owned = h->kind ? h->p->n - ghosts : 0;
    if (h->kind == 1) {
        if (!rc && ghosts)
            rc = ctx->dev->ops->buffer_io(ctx, h->mem, 1, (size_t)owned * elem, (size_t)ghosts * elem,
                                          (char *)h->host + (size_t)owned * elem);
        free(h->host);
    } else if (h->kind == 2 && !rc && ghosts) /* into the device copy where it is current, else that copy stale */
        rc = ctx->dev->ops->write_rows(ctx, h->p, h->at, owned, ghosts);
    h->kind = 0;
    return rc;
}
