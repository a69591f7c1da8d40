/* OpenCL backend: particles removed from a set on the device (device.h's
 * compact), what ctx_set_compact does on the host, without copying the set
 * back and forth: the caller's keep words become flags (n + 1 words, the
 * last 0), an exclusive scan of them in place (sort.c's cl_scan) gives each
 * survivor its new index, a kernel writes where each comes from, and one
 * gather per attribute (cl_permute_set) moves them, in their order
 * (kernels/core/compact.cl). One 4-byte read: the survivors' count, which
 * the host needs for the set's size. Ids move with their particles and no
 * new one is made, so an id still names one particle for its life. */
#include "state.h"

int cl_compact(floe_ctx *ctx, pset *p, void *keep, uint32_t *removed)
{
    const int s = (int)(p - ctx->sets);
    cl_setdev *d = &CL->sets[s];
    cl_uint n = p->n, kept = 0;
    *removed = 0;
    if (!n)
        return FLOE_OK;
    int rc = cl_ensure(ctx, &d->ckeep, &d->ckeep_cap, (uint64_t)n + 1, 4);
    if (!rc)
        rc = cl_ensure(ctx, &d->csrc, &d->csrc_cap, n, 4);
    cl_mem k = keep;
    if (!rc)
        rc = LAUNCH(cl_core_kernel(ctx, "compact.cl", "compact_flags"), (size_t)n + 1, WG, 8.0 * n, ARG(n), ARG(k),
                    ARG(d->ckeep));
    if (!rc)
        rc = cl_scan(ctx, d->ckeep, n + 1);
    if (!rc)
        rc = LAUNCH(cl_core_kernel(ctx, "compact.cl", "compact_src"), n, WG, 12.0 * n, ARG(n), ARG(d->ckeep),
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
