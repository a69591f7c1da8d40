/* OpenCL backend: what a decomposed step (MPI, core/src/decomp.c) reads of
 * the device between two rebuilds of its ghost lists, so that only the
 * rows that cross to other ranks cross the bus (docs/mpi.md, "GPU ranks"):
 * rows gathered on the device by index and read back packed; the largest
 * distance of the positions from those of the last rebuild (the skin's
 * test); the particles outside the domain (the outside rule "delete").
 * Each waits for its read. */
#include "state.h"

#include <stdio.h>
#include <string.h>

int cl_gather_rows(floe_ctx *ctx, int nbuf, void *const *mems, const size_t *elems, const uint32_t *idx, uint32_t m,
                   void *out)
{
    size_t total = 0;
    for (int b = 0; b < nbuf; b++) {
        if (elems[b] % 4)
            return ctx_fail(ctx, FLOE_ERR_ARG, "OpenCL: rows of %zu bytes (whole words expected)", elems[b]);
        total += (size_t)m * elems[b];
    }
    if (!m || !total)
        return FLOE_OK;
    cl_mem ix = cl_scratch(ctx, "core.rows_idx", (size_t)m * 4), dst = cl_scratch(ctx, "core.rows_out", total);
    if (!ix || !dst)
        return FLOE_ERR;
    cl_int e = F->clEnqueueWriteBuffer(CL->q, ix, CL_FALSE, 0, (size_t)m * 4, idx, 0, NULL, NULL);
    if (e != CL_SUCCESS)
        return cl_err(ctx, e, "writing row indices");
    cl_kernel k = cl_core_kernel(ctx, "core.cl", "gather_rows");
    const cl_uint n = m;
    cl_uint off = 0;
    for (int b = 0; b < nbuf; b++) { /* one launch a buffer, no wait between them */
        cl_mem src = mems[b];
        const cl_uint comps = (cl_uint)(elems[b] / 4);
        int rc = LAUNCH(k, n, WG, 2.0 * (double)m * (double)elems[b] + 4.0 * m, ARG(src), ARG(dst), ARG(off), ARG(ix),
                        ARG(n), ARG(comps));
        if (rc)
            return rc;
        off += n * comps;
    }
    e = F->clEnqueueReadBuffer(CL->q, dst, CL_TRUE, 0, total, out, 0, NULL, NULL);
    if (e != CL_SUCCESS)
        return cl_err(ctx, e, "reading gathered rows");
    CL->bus_up += (uint64_t)m * 4;
    CL->bus_down += total;
    return FLOE_OK;
}

/* the positions a rebuild kept for set slot s (n particles) */
static cl_mem x0_buffer(floe_ctx *ctx, int s, uint32_t n)
{
    char name[48];
    snprintf(name, sizeof name, "core.dd_x0.%d", s);
    return cl_scratch(ctx, name, (size_t)(n ? n : 1) * 12);
}

/* the word a reduction kernel writes into, zeroed (NULL on failure) */
static cl_mem word_zeroed(floe_ctx *ctx)
{
    cl_mem w = cl_scratch(ctx, "core.dd_word", 4);
    cl_uint zero = 0;
    cl_int e = w ? F->clEnqueueFillBuffer(CL->q, w, &zero, 4, 0, 4, 0, NULL, NULL) : CL_SUCCESS;
    if (e != CL_SUCCESS) {
        cl_err(ctx, e, "clEnqueueFillBuffer");
        return NULL;
    }
    return w;
}

/* that word read back, waiting */
static int read_word(floe_ctx *ctx, cl_mem w, cl_uint *out)
{
    cl_int e = F->clEnqueueReadBuffer(CL->q, w, CL_TRUE, 0, 4, out, 0, NULL, NULL);
    return e == CL_SUCCESS ? FLOE_OK : cl_err(ctx, e, "reading a reduction");
}

int cl_max_drift2(floe_ctx *ctx, pset *p, uint32_t n, double *out)
{
    *out = 0;
    const int s = (int)(p - ctx->sets);
    if (!n)
        return FLOE_OK;
    cl_mem x0d = x0_buffer(ctx, s, n), w = word_zeroed(ctx), x = cl_attr_named(ctx, s, "x", FLOE_VEC3, FLOE_READ);
    if (!x0d || !w || !x)
        return FLOE_ERR;
    cl_uint bits = 0;
    const cl_uint nn = n;
    int rc = LAUNCH(cl_core_kernel(ctx, "core.cl", "max_drift2"), nn, WG, 24.0 * n, ARG(x), ARG(x0d), ARG(nn), ARG(w));
    if (rc || (rc = read_word(ctx, w, &bits)))
        return rc;
    float d2;
    memcpy(&d2, &bits, 4);
    *out = d2;
    return FLOE_OK;
}

int cl_count_outside(floe_ctx *ctx, pset *p, uint32_t n, uint32_t *out)
{
    *out = 0;
    const int s = (int)(p - ctx->sets);
    if (!n)
        return FLOE_OK;
    cl_mem w = word_zeroed(ctx), x = cl_attr_named(ctx, s, "x", FLOE_VEC3, FLOE_READ);
    if (!w || !x)
        return FLOE_ERR;
    cl_uint cnt = 0;
    const cl_float4 lo = {{ctx->info.domain_min[0], ctx->info.domain_min[1], ctx->info.domain_min[2], 0}};
    const cl_float4 hi = {{ctx->info.domain_max[0], ctx->info.domain_max[1], ctx->info.domain_max[2], 0}};
    const cl_uint nn = n;
    const cl_int dim = ctx->info.dim;
    int rc = LAUNCH(cl_core_kernel(ctx, "core.cl", "count_outside"), nn, WG, 12.0 * n, ARG(nn), ARG(x), ARG(lo),
                    ARG(hi), ARG(dim), ARG(w));
    if (rc || (rc = read_word(ctx, w, &cnt)))
        return rc;
    *out = cnt;
    return FLOE_OK;
}

int cl_select_rows(floe_ctx *ctx, pset *p, uint32_t n, const float lo[3], const float hi[3], float r, int mode,
                   uint32_t *idx, uint32_t *m)
{
    *m = 0;
    if (!n)
        return FLOE_OK;
    const int s = (int)(p - ctx->sets);
    cl_mem x = cl_attr_named(ctx, s, "x", FLOE_VEC3, FLOE_READ);
    cl_mem flag = cl_scratch(ctx, "core.dd_flag", (size_t)n * 4 + 4), rank = cl_scratch(ctx, "core.dd_rank", (size_t)n * 4 + 4);
    cl_mem order = cl_scratch(ctx, "core.dd_order", (size_t)n * 4 + 4);
    if (!x || !flag || !rank || !order)
        return FLOE_ERR;
    const cl_float4 l4 = {{lo[0], lo[1], lo[2], 0}}, h4 = {{hi[0], hi[1], hi[2], 0}};
    const cl_uint nn = n;
    const cl_int md = mode;
    int rc = LAUNCH(cl_core_kernel(ctx, "core.cl", "dd_select"), nn, WG, 16.0 * n, ARG(nn), ARG(x), ARG(l4), ARG(h4),
                    ARG(r), ARG(md), ARG(flag));
    if (rc)
        return rc;
    cl_int e = F->clEnqueueCopyBuffer(CL->q, flag, rank, 0, 0, (size_t)n * 4, 0, NULL, NULL);
    if (e != CL_SUCCESS)
        return cl_err(ctx, e, "clEnqueueCopyBuffer");
    if ((rc = cl_scan_words(ctx, rank, n)) ||
        (rc = LAUNCH(cl_core_kernel(ctx, "core.cl", "compact_order"), nn, WG, 12.0 * n, ARG(flag), ARG(rank), ARG(nn),
                     ARG(order))))
        return rc;
    cl_uint last[2]; /* the scan's last word and the last flag: the count */
    if ((e = F->clEnqueueReadBuffer(CL->q, rank, CL_TRUE, (size_t)(n - 1) * 4, 4, &last[0], 0, NULL, NULL)) != CL_SUCCESS ||
        (e = F->clEnqueueReadBuffer(CL->q, flag, CL_TRUE, (size_t)(n - 1) * 4, 4, &last[1], 0, NULL, NULL)) != CL_SUCCESS)
        return cl_err(ctx, e, "reading a selection's count");
    *m = last[0] + last[1];
    if (*m && (e = F->clEnqueueReadBuffer(CL->q, order, CL_TRUE, 0, (size_t)*m * 4, idx, 0, NULL, NULL)) != CL_SUCCESS)
        return cl_err(ctx, e, "reading a selection");
    CL->bus_down += 8 + (uint64_t)*m * 4;
    return FLOE_OK;
}

void *cl_keep_except(floe_ctx *ctx, uint32_t n, const uint32_t *idx, uint32_t m)
{
    cl_mem keep = cl_scratch(ctx, "core.dd_keep", (size_t)n * 4 + 4), ix = cl_scratch(ctx, "core.rows_idx", (size_t)m * 4 + 4);
    if (!keep || !ix)
        return NULL;
    cl_uint one = 1;
    cl_int e = F->clEnqueueFillBuffer(CL->q, keep, &one, 4, 0, (size_t)n * 4, 0, NULL, NULL);
    if (e == CL_SUCCESS && m)
        e = F->clEnqueueWriteBuffer(CL->q, ix, CL_TRUE, 0, (size_t)m * 4, idx, 0, NULL, NULL);
    if (e != CL_SUCCESS) {
        cl_err(ctx, e, "keep flags");
        return NULL;
    }
    CL->bus_up += (uint64_t)m * 4;
    const cl_uint mm = m;
    if (m && LAUNCH(cl_core_kernel(ctx, "core.cl", "dd_drop"), mm, WG, 8.0 * m, ARG(keep), ARG(ix), ARG(mm)))
        return NULL;
    return keep;
}

int cl_keep_positions(floe_ctx *ctx, pset *p, uint32_t n)
{
    const int s = (int)(p - ctx->sets);
    cl_mem x0d = x0_buffer(ctx, s, n), x = cl_attr_named(ctx, s, "x", FLOE_VEC3, FLOE_READ);
    if (!x0d || !x)
        return FLOE_ERR;
    cl_int e = n ? F->clEnqueueCopyBuffer(CL->q, x, x0d, 0, 0, (size_t)n * 12, 0, NULL, NULL) : CL_SUCCESS;
    return e == CL_SUCCESS ? FLOE_OK : cl_err(ctx, e, "keeping the positions of a rebuild");
}

void cl_bus_bytes(floe_ctx *ctx, uint64_t *up, uint64_t *down)
{
    *up = CL->bus_up;
    *down = CL->bus_down;
}
