/* OpenCL backend: neighbour lists between host and device. The host
 * layout (neighbours.c: rows of a stride padded to whole blocks of 8) from
 * the device's column-major rows, and back when a C 'neighbours' stage ran
 * before device stages; the device lists a module asks for (api->cl_neighbours). */
#include "state.h"

#include <stdlib.h>

/* Host lists (neighbours.c layout) from the device lists. */
int cl_lists_to_host(floe_ctx *ctx)
{
    int rebuilt, rc;
    if ((rc = cl_lists_ensure(ctx)))
        return rc;
    if (!CL->lists_valid)
        return FLOE_ERR;
    /* the pipeline settles the lists before any C stage; this is for other
     * callers, which have run nothing on the speculative lists */
    if ((rc = cl_lists_settle(ctx, &rebuilt)))
        return rc;
    uint32_t *tmp = NULL;
    size_t tcap = 0;
    for (int q = 0; q < ctx->npsets; q++) {
        pset *pq = &ctx->sets[q];
        if (pq->kind != FLOE_SET_FLUID)
            continue;
        cl_setdev *d = &CL->sets[q];
        for (int t = 0; t < ctx->npsets; t++) {
            nb_list *l = &pq->lists[t];
            uint32_t n = d->ln[t], stride = d->lstride[t], pitch = d->lcap[t];
            /* host rows as nb_build leaves them: the stride a multiple of 8,
             * each row padded with its first index to a whole block of 8
             * (floe_nlist; the AVX2 rows read whole blocks) */
            const uint32_t hstride = (stride + 7u) & ~7u;
            size_t need = (size_t)pitch * stride;
            uint32_t *c = realloc(l->count, (size_t)(n ? n : 1) * 4);
            if (c)
                l->count = c;
            uint32_t *ix = c ? realloc(l->idx, (size_t)(n ? n : 1) * (hstride ? hstride : 8) * 4) : NULL;
            if (ix)
                l->idx = ix;
            if (need > tcap) {
                free(tmp);
                tcap = need;
                tmp = malloc(tcap * 4);
            }
            if (!c || !ix || !tmp) {
                free(tmp);
                return ctx_fail(ctx, FLOE_ERR_NOMEM, "out of memory copying neighbour lists");
            }
            l->n = n;
            l->cap = n ? n : 1;
            l->stride = hstride ? hstride : 8;
            if (n) {
                cl_int e = F->clEnqueueReadBuffer(CL->q, d->cnt[t], CL_TRUE, 0, (size_t)n * 4, l->count, 0, NULL, NULL);
                if (e == CL_SUCCESS)
                    e = F->clEnqueueReadBuffer(CL->q, d->idx[t], CL_TRUE, 0, need * 4, tmp, 0, NULL, NULL);
                if (e != CL_SUCCESS) {
                    free(tmp);
                    return cl_err(ctx, e, "reading neighbour lists");
                }
                for (uint32_t i = 0; i < n; i++) {
                    uint32_t *row = l->idx + (size_t)i * l->stride;
                    const uint32_t cnt = l->count[i] < stride ? l->count[i] : stride;
                    for (uint32_t k = 0; k < cnt; k++)
                        row[k] = tmp[(size_t)k * pitch + i];
                    nb_pad_row(row, cnt, l->stride);
                }
            }
        }
    }
    free(tmp);
    ctx->nb_valid = 1;
    return FLOE_OK;
}

/* Device lists from the host lists (a C 'neighbours' stage before OpenCL stages). */
static int lists_to_device(floe_ctx *ctx)
{
    uint32_t *tmp = NULL;
    size_t tcap = 0;
    for (int q = 0; q < ctx->npsets; q++) {
        pset *pq = &ctx->sets[q];
        if (pq->kind != FLOE_SET_FLUID)
            continue;
        cl_setdev *d = &CL->sets[q];
        for (int t = 0; t < ctx->npsets; t++) {
            const nb_list *l = &pq->lists[t];
            uint32_t n = l->n, stride = l->stride ? l->stride : 8;
            cl_rel(ctx, &d->cnt[t]);
            cl_rel(ctx, &d->idx[t]);
            cl_rel(ctx, &d->scnt[t]); /* Verlet lists: built again */
            cl_rel(ctx, &d->sidx[t]);
            if (!(d->cnt[t] = cl_mk(ctx, (size_t)(n ? n : 1) * 4)) || !(d->idx[t] = cl_mk(ctx, (size_t)(n ? n : 1) * stride * 4))) {
                free(tmp);
                return FLOE_ERR_NOMEM;
            }
            d->lcap[t] = n ? n : 1;
            d->lstride[t] = stride;
            d->ln[t] = n;
            size_t need = (size_t)n * stride;
            if (need > tcap) {
                free(tmp);
                tcap = need;
                if (!(tmp = calloc(tcap, 4)))
                    return ctx_fail(ctx, FLOE_ERR_NOMEM, "out of memory copying neighbour lists");
            }
            double total = 0;
            for (uint32_t i = 0; i < n; i++) {
                total += l->count[i];
                for (uint32_t k = 0; k < l->count[i]; k++)
                    tmp[(size_t)k * n + i] = l->idx[(size_t)i * l->stride + k];
            }
            d->ltotal[t] = total;
            if (n) {
                cl_int e = F->clEnqueueWriteBuffer(CL->q, d->cnt[t], CL_TRUE, 0, (size_t)n * 4, l->count, 0, NULL, NULL);
                if (e == CL_SUCCESS)
                    e = F->clEnqueueWriteBuffer(CL->q, d->idx[t], CL_TRUE, 0, need * 4, tmp, 0, NULL, NULL);
                if (e != CL_SUCCESS) {
                    free(tmp);
                    return cl_err(ctx, e, "uploading neighbour lists");
                }
            }
        }
    }
    free(tmp);
    CL->lists_valid = 1;
    CL->vvalid = 0; /* Verlet lists: these are not cut from them */
    return FLOE_OK;
}

/* The device lists of fluid set q in set t (api->cl_neighbours; the core
 * checked the sets), copied up from the host lists when only those are current. */
int cl_lists(floe_ctx *ctx, pset *q, pset *t, floe_cl_nlist *out)
{
    int rc = cl_lists_ensure(ctx);
    if (rc)
        return rc;
    if (!CL->lists_valid) {
        if (!ctx->nb_valid)
            return ctx_fail(ctx, FLOE_ERR_ARG, "no neighbour lists for set '%s' (run the 'neighbours' stage first)",
                            q->name);
        if ((rc = lists_to_device(ctx)))
            return rc;
    }
    int qi = (int)(q - ctx->sets), ti = (int)(t - ctx->sets);
    cl_setdev *d = &CL->sets[qi];
    if (d->ln[ti] < q->n)
        return ctx_fail(ctx, FLOE_ERR, "stale neighbour lists for set '%s'", q->name);
    out->n = d->ln[ti];
    out->stride = d->lstride[ti];
    out->pitch = d->lcap[ti];
    out->count = d->cnt[ti];
    out->idx = d->idx[ti];
    out->total = d->ltotal[ti];
    return FLOE_OK;
}
