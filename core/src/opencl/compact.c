/* OpenCL backend: particles removed from a set on the device, every
 * attribute together, the survivors in their order (what ctx_set_compact
 * does on the host): keep flags (n + 1 words, the last 0), an exclusive
 * scan of them in place, the source of each survivor, one gather per
 * attribute (kernels/core/core.cl). One 4-byte read: the survivors' count,
 * which the host needs for the set's size. Ids are untouched, so an id
 * still names one particle for its life (new ones take the set's next). */
#include "state.h"

/* the compaction buffers of set slot s, for n particles */
static int buffers(floe_ctx *ctx, int s, uint32_t n)
{
    cl_setdev *d = &CL->sets[s];
    int rc = cl_ensure(ctx, &d->ckeep, &d->ckeep_cap, (uint64_t)n + 1, 4);
    return rc ? rc : cl_ensure(ctx, &d->csrc, &d->csrc_cap, n ? n : 1, 4);
}

/* the flags in ckeep: scanned, gathered along; *removed */
static int compact_flagged(floe_ctx *ctx, int s, uint32_t *removed)
{
    pset *p = &ctx->sets[s];
    cl_setdev *d = &CL->sets[s];
    cl_uint n = p->n, kept = 0;
    int rc = cl_scan(ctx, d->ckeep, n + 1);
    if (!rc)
        rc = LAUNCH(cl_core_kernel(ctx, "core.cl", "compact_src"), n, WG, 12.0 * n, ARG(n), ARG(d->ckeep),
                    ARG(d->csrc));
    if (rc)
        return rc;
    cl_int e = F->clEnqueueReadBuffer(CL->q, d->ckeep, CL_TRUE, (size_t)n * 4, 4, &kept, 0, NULL, NULL);
    if (e != CL_SUCCESS)
        return cl_err(ctx, e, "reading the count of a compaction");
    *removed = n - kept;
    if (kept == n)
        return FLOE_OK;
    if ((rc = cl_permute_set(ctx, s, d->csrc, kept)))
        return rc;
    p->n = kept;
    return FLOE_OK;
}

/* keep: a device buffer of p->n 32-bit words, non-zero where the particle
 * stays. The caller tells the core the set changed (ctx_set_compact_device
 * in particles.c does). */
int cl_compact(floe_ctx *ctx, pset *p, void *keep, uint32_t *removed)
{
    const int s = (int)(p - ctx->sets);
    cl_uint n = p->n;
    *removed = 0;
    if (!n)
        return FLOE_OK;
    int rc = buffers(ctx, s, n);
    if (!rc)
        rc = LAUNCH(cl_core_kernel(ctx, "core.cl", "compact_flags"), (size_t)n + 1, WG, 8.0 * n, ARG(n),
                    ARG(keep), ARG(CL->sets[s].ckeep));
    return rc ? rc : compact_flagged(ctx, s, removed);
}

/* The outside rule "delete": the particles of set slot s outside the
 * domain, on its non-periodic axes (blowup.c's comparisons). */
int cl_compact_outside(floe_ctx *ctx, int s, uint32_t *removed)
{
    pset *p = &ctx->sets[s];
    cl_uint n = p->n, per = ctx->info.periodic;
    cl_int dim = ctx->info.dim;
    *removed = 0;
    if (!n)
        return FLOE_OK;
    cl_mem x = cl_attr_named(ctx, s, "x", FLOE_VEC3, FLOE_READ);
    if (!x)
        return ctx_fail(ctx, FLOE_ERR, "set '%s' has no positions", p->name);
    cl_float4 lo = {{ctx->info.domain_min[0], ctx->info.domain_min[1], ctx->info.domain_min[2], 0}};
    cl_float4 hi = {{ctx->info.domain_max[0], ctx->info.domain_max[1], ctx->info.domain_max[2], 0}};
    int rc = buffers(ctx, s, n);
    if (!rc)
        rc = LAUNCH(cl_core_kernel(ctx, "core.cl", "outside_keep"), (size_t)n + 1, WG, 16.0 * n, ARG(n), ARG(x),
                    ARG(lo), ARG(hi), ARG(dim), ARG(per), ARG(CL->sets[s].ckeep));
    return rc ? rc : compact_flagged(ctx, s, removed);
}
