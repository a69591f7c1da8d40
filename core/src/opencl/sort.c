/* OpenCL backend: the cell sort of a particle set on the device (keys,
 * a prefix sum over the cells, a stable scatter) and the reorder of a fluid
 * set's attributes along it (kernels/core/neighbours.cl, core.cl); the
 * radix sort of keys with a payload that modules borrow (api->cl_sort,
 * kernels/core/sort.cl). */
#include "state.h"

static int scan(floe_ctx *ctx, cl_mem buf, uint32_t m, int level)
{
    if (level >= 6)
        return ctx_fail(ctx, FLOE_ERR, "OpenCL: scan too deep");
    uint32_t nblk = (m + SCAN_BLOCK - 1) / SCAN_BLOCK;
    int rc = cl_ensure(ctx, &CL->scan_sums[level], &CL->scan_cap[level], nblk, 4);
    if (rc)
        return rc;
    cl_kernel kb = cl_core_kernel(ctx, "neighbours.cl", "scan_block"), ka = cl_core_kernel(ctx, "neighbours.cl", "scan_add");
    if (!kb || !ka)
        return FLOE_ERR;
    cl_mem sums = CL->scan_sums[level];
    if ((rc = LAUNCH(kb, (size_t)nblk * 256, 256, 8.0 * m, ARG(buf), ARG(m), ARG(sums))))
        return rc;
    if (nblk > 1) {
        if ((rc = scan(ctx, sums, nblk, level + 1)))
            return rc;
        if ((rc = LAUNCH(ka, (size_t)nblk * 256, 256, 8.0 * m, ARG(buf), ARG(m), ARG(sums))))
            return rc;
    }
    return FLOE_OK;
}

/* exclusive prefix sum of n words in place (api->cl_scan, cl_set_compact) */
int cl_scan_words(floe_ctx *ctx, cl_mem buf, uint32_t n) { return n ? scan(ctx, buf, n, 0) : FLOE_OK; }

/* api->cl_sort: kernels/core/sort.cl, RADIX_BITS (4) bits a pass over tiles
 * of RADIX_TILE (4096) keys; the passes alternate between the caller's
 * buffers and the core's second pair, and an odd count is copied back */
#define RADIX_BITS 4
#define RADIX_TILE 4096
int cl_radix_sort(floe_ctx *ctx, cl_mem key, cl_mem val, uint32_t n, int bits)
{
    if (n < 2 || bits <= 0)
        return FLOE_OK;
    const uint32_t ntiles = (n + RADIX_TILE - 1) / RADIX_TILE, nh = ntiles << RADIX_BITS;
    int rc;
    if ((rc = cl_ensure(ctx, &CL->rdx_key, &CL->rdx_cap[0], n, 8)) ||
        (rc = cl_ensure(ctx, &CL->rdx_val, &CL->rdx_cap[1], n, 4)) ||
        (rc = cl_ensure(ctx, &CL->rdx_hist, &CL->rdx_cap[2], nh, 4)))
        return rc;
    cl_kernel kc = cl_core_kernel(ctx, "sort.cl", "radix_count"), ks = cl_core_kernel(ctx, "sort.cl", "radix_scatter");
    if (!kc || !ks)
        return FLOE_ERR;
    const int passes = (bits + RADIX_BITS - 1) / RADIX_BITS;
    cl_mem k[2] = {key, CL->rdx_key}, v[2] = {val, CL->rdx_val};
    for (int p = 0; p < passes; p++) {
        const cl_uint shift = (cl_uint)(p * RADIX_BITS),
                      dmask = (1u << (bits - p * RADIX_BITS < RADIX_BITS ? bits - p * RADIX_BITS : RADIX_BITS)) - 1;
        cl_mem ki = k[p & 1], vi = v[p & 1], ko = k[!(p & 1)], vo = v[!(p & 1)];
        if ((rc = LAUNCH(kc, (size_t)ntiles * 256, 256, 8.0 * n, ARG(ki), ARG(n), ARG(shift), ARG(dmask), ARG(ntiles),
                         ARG(CL->rdx_hist))) ||
            (rc = cl_scan_words(ctx, CL->rdx_hist, nh)) ||
            (rc = LAUNCH(ks, (size_t)ntiles * 256, 256, 32.0 * n, ARG(ki), ARG(vi), ARG(n), ARG(shift), ARG(dmask), ARG(ntiles),
                         ARG(CL->rdx_hist), ARG(ko), ARG(vo))))
            return rc;
    }
    if (passes & 1) {
        cl_int e = F->clEnqueueCopyBuffer(CL->q, CL->rdx_key, key, 0, 0, (size_t)n * 8, 0, NULL, NULL);
        if (e == CL_SUCCESS)
            e = F->clEnqueueCopyBuffer(CL->q, CL->rdx_val, val, 0, 0, (size_t)n * 4, 0, NULL, NULL);
        if (e != CL_SUCCESS)
            return cl_err(ctx, e, "clEnqueueCopyBuffer");
    }
    return FLOE_OK;
}

void cl_grid_args(floe_ctx *ctx, cl_float4 *go, cl_int4 *gn)
{
    const nb_grid *g = cl_dev_grid(ctx);
    go->s[0] = g->origin[0];
    go->s[1] = g->origin[1];
    go->s[2] = g->origin[2];
    go->s[3] = 1.0f / g->cell;
    gn->s[0] = g->n[0];
    gn->s[1] = g->n[1];
    gn->s[2] = g->n[2];
    gn->s[3] = g->dim == 3;
}

int cl_sort(floe_ctx *ctx, int s)
{
    pset *p = &ctx->sets[s];
    cl_setdev *d = &CL->sets[s];
    const nb_grid *g = cl_dev_grid(ctx);
    uint32_t n = p->n, ncells = (uint32_t)g->n[0] * (uint32_t)g->n[1] * (uint32_t)g->n[2];
    int rc;
    if (!d->key || d->cap < n) {
        cl_mem *ms[] = {&d->key, &d->rank, &d->tmp, &d->order};
        for (int k = 0; k < 4; k++)
            cl_rel(ctx, ms[k]);
        cl_rel(ctx, &d->spos);
        uint32_t cap = (p->cap > n ? p->cap : n) + 64;
        for (int k = 0; k < 4; k++)
            if (!(*ms[k] = cl_mk(ctx, (size_t)cap * 4)))
                return FLOE_ERR_NOMEM;
        if (!(d->spos = cl_mk(ctx, (size_t)cap * 16)))
            return FLOE_ERR_NOMEM;
        d->cap = cap;
    }
    if ((rc = cl_ensure(ctx, &d->cs, &d->cs_cap, (uint64_t)ncells + 1, 4)))
        return rc;
    d->near_valid = 0;
    cl_uint zero = 0;
    cl_int e = F->clEnqueueFillBuffer(CL->q, d->cs, &zero, 4, 0, ((size_t)ncells + 1) * 4, 0, NULL, NULL);
    if (e != CL_SUCCESS)
        return cl_err(ctx, e, "clEnqueueFillBuffer");
    if (n == 0)
        return FLOE_OK;
    cl_mem x = cl_attr_named(ctx, s, "x", FLOE_VEC3, FLOE_READ);
    if (!x)
        return ctx->error[0] ? FLOE_ERR : ctx_fail(ctx, FLOE_ERR, "set '%s' has no positions", p->name);
    cl_float4 go;
    cl_int4 gn;
    cl_grid_args(ctx, &go, &gn);
    if ((rc = LAUNCH(cl_core_kernel(ctx, "neighbours.cl", "nb_keys"), n, WG, 24.0 * n, ARG(x), ARG(n), ARG(go), ARG(gn),
                     ARG(d->key), ARG(d->rank), ARG(d->cs))))
        return rc;
    uint32_t m = ncells + 1;
    if ((rc = scan(ctx, d->cs, m, 0)))
        return rc;
    if ((rc = LAUNCH(cl_core_kernel(ctx, "neighbours.cl", "nb_scatter"), n, WG, 16.0 * n, ARG(d->key), ARG(d->rank),
                     ARG(d->cs), ARG(n), ARG(d->tmp))))
        return rc;
    d->spos_stale = 0;
    /* the stable order and the sorted positions in one pass; a fluid set's
     * cells in id order where the lists must not depend on where particles
     * lie in memory (neighbours { order = "id" }, MPI: nb_update.c's rule) */
    const attr *ida = pset_attr(p, "id");
    cl_int byid = (ctx->nb_by_id || ctx->dd) && p->kind == FLOE_SET_FLUID && ida && ida->type == FLOE_U32;
    cl_mem id = byid ? cl_attr_named(ctx, s, "id", FLOE_U32, FLOE_READ) : x;
    if (!id)
        return FLOE_ERR;
    return LAUNCH(cl_core_kernel(ctx, "neighbours.cl", "nb_stable"), n, WG, (byid ? 60.0 : 52.0) * n, ARG(d->tmp),
                  ARG(d->key), ARG(d->cs), ARG(n), ARG(d->order), ARG(x), ARG(d->spos), ARG(id), ARG(byid));
}

/* Physically reorder every attribute of a fluid set along the device sort. */
int cl_reorder(floe_ctx *ctx, int s)
{
    pset *p = &ctx->sets[s];
    cl_setdev *d = &CL->sets[s];
    uint32_t n = p->n;
    size_t need = (size_t)n * 12;
    int rc;
    if (!d->perm_tmp || d->perm_bytes < need) {
        cl_rel(ctx, &d->perm_tmp);
        size_t b = need + need / 4 + 256;
        if (!(d->perm_tmp = cl_mk(ctx, b)))
            return FLOE_ERR_NOMEM;
        d->perm_bytes = b;
    }
    cl_kernel k = cl_core_kernel(ctx, "core.cl", "permute");
    for (int a = 0; a < p->nattrs; a++) {
        attr *at = &p->attrs[a];
        if ((rc = cl_sync(ctx, p, at)))
            return rc;
        cl_uint comps = (cl_uint)(floe_type_size(at->type) / 4);
        cl_mirror *mir = cl_mirror_of(ctx, p, at);
        cl_mem src = mir->mem;
        if ((rc = LAUNCH(k, n, WG, 8.0 * comps * n + 4.0 * n, ARG(src), ARG(d->perm_tmp), ARG(d->order), ARG(n),
                         ARG(comps))))
            return rc;
        cl_int e = F->clEnqueueCopyBuffer(CL->q, d->perm_tmp, mir->mem, 0, 0, (size_t)n * comps * 4, 0, NULL, NULL);
        if (e != CL_SUCCESS)
            return cl_err(ctx, e, "clEnqueueCopyBuffer");
        mir->host_stale = 1;
    }
    p->sorted_valid = 0; /* the host sort no longer matches */
    ctx->nb_valid = 0;
    return FLOE_OK;
}
