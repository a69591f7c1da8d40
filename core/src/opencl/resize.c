/* OpenCL backend: a set that changes size on the device (api->cl_set_resize,
 * cl_set_compact, cl_scan; ABI 1.10). The device copies stay the truth: the
 * rows a set gains are zeroed where each copy lives, the rows it loses are
 * squeezed out on the device (an exclusive scan of the keep flags, then the
 * core's permute kernel per attribute), and nothing comes back to the host
 * but what a later C stage or output asks for. */
#include "state.h"

#include <string.h>

/* one device buffer of a set's attribute grown to `cap` elements, its first
 * n rows kept (a copy on the device) */
static int grow(floe_ctx *ctx, cl_mirror *m, uint32_t n, uint32_t cap, size_t es)
{
    cl_mem b = cl_mk(ctx, (size_t)cap * es);
    if (!b)
        return FLOE_ERR_NOMEM;
    if (n) {
        cl_int e = F->clEnqueueCopyBuffer(CL->q, m->mem, b, 0, 0, (size_t)n * es, 0, NULL, NULL);
        if (e != CL_SUCCESS) {
            F->clReleaseMemObject(b);
            return cl_err(ctx, e, "clEnqueueCopyBuffer");
        }
    }
    cl_rel(ctx, &m->mem);
    m->mem = b;
    m->cap = cap;
    return FLOE_OK;
}

int cl_set_resize(floe_ctx *ctx, pset *p, uint32_t n)
{
    const uint32_t n0 = p->n;
    if (ctx_set_reserve(p, n))
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "set '%s': out of memory for %u particles", p->name, n);
    for (int a = 0; a < p->nattrs; a++) {
        attr *at = &p->attrs[a];
        cl_mirror *m = cl_mirror_of(ctx, p, at);
        const size_t es = floe_type_size(at->type);
        if (n > n0) /* the host rows too: zero wherever the truth is */
            memset((char *)at->data + (size_t)n0 * es, 0, (size_t)(n - n0) * es);
        if (!m->mem || m->dev_stale)
            continue; /* the host copy is the truth: uploaded whole when next needed */
        int rc;
        if (m->cap < n && (rc = grow(ctx, m, n < n0 ? n : n0, p->cap > n ? p->cap : n, es)))
            return rc;
        if (n > n0) {
            cl_uint zero = 0;
            cl_int e = F->clEnqueueFillBuffer(CL->q, m->mem, &zero, 4, (size_t)n0 * es, (size_t)(n - n0) * es, 0,
                                              NULL, NULL);
            if (e != CL_SUCCESS)
                return cl_err(ctx, e, "clEnqueueFillBuffer");
        }
    }
    return FLOE_OK;
}

/* keep: n_old uint words, 1 = keep; n_keep of them are 1 (the caller counted) */
int cl_set_compact(floe_ctx *ctx, pset *p, cl_mem keep, uint32_t n_keep)
{
    const uint32_t n = p->n;
    cl_setdev *d = &CL->sets[p - ctx->sets];
    if (!n || n_keep == n)
        return FLOE_OK;
    /* the ranks (exclusive scan of the flags), then the gather order */
    int rc;
    if ((rc = cl_ensure(ctx, &CL->cmp_rank, &CL->cmp_cap[0], (uint64_t)n + 1, 4)) ||
        (rc = cl_ensure(ctx, &CL->cmp_perm, &CL->cmp_cap[1], (uint64_t)n + 1, 4)))
        return rc;
    cl_int e = F->clEnqueueCopyBuffer(CL->q, keep, CL->cmp_rank, 0, 0, (size_t)n * 4, 0, NULL, NULL);
    if (e != CL_SUCCESS)
        return cl_err(ctx, e, "clEnqueueCopyBuffer");
    if ((rc = cl_scan_words(ctx, CL->cmp_rank, n)))
        return rc;
    cl_kernel kp = cl_core_kernel(ctx, "core.cl", "compact_order"), k = cl_core_kernel(ctx, "core.cl", "permute");
    if (!kp || !k)
        return FLOE_ERR;
    if ((rc = LAUNCH(kp, n, WG, 12.0 * n, ARG(keep), ARG(CL->cmp_rank), ARG(n), ARG(CL->cmp_perm))))
        return rc;
    const size_t need = (size_t)n * 12;
    if (!d->perm_tmp || d->perm_bytes < need) {
        cl_rel(ctx, &d->perm_tmp);
        size_t b = need + need / 4 + 256;
        if (!(d->perm_tmp = cl_mk(ctx, b)))
            return FLOE_ERR_NOMEM;
        d->perm_bytes = b;
    }
    for (int a = 0; a < p->nattrs; a++) {
        attr *at = &p->attrs[a];
        if ((rc = cl_sync(ctx, p, at))) /* a host-only copy goes up once */
            return rc;
        cl_mirror *mir = cl_mirror_of(ctx, p, at);
        cl_uint comps = (cl_uint)(floe_type_size(at->type) / 4);
        if (n_keep && (rc = LAUNCH(k, n_keep, WG, 8.0 * comps * n_keep + 4.0 * n_keep, ARG(mir->mem),
                                   ARG(d->perm_tmp), ARG(CL->cmp_perm), ARG(n_keep), ARG(comps))))
            return rc;
        if (n_keep) {
            e = F->clEnqueueCopyBuffer(CL->q, d->perm_tmp, mir->mem, 0, 0, (size_t)n_keep * comps * 4, 0, NULL, NULL);
            if (e != CL_SUCCESS)
                return cl_err(ctx, e, "clEnqueueCopyBuffer");
        }
        mir->host_stale = 1;
    }
    return FLOE_OK;
}
