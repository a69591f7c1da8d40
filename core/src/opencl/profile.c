/* OpenCL backend: FLOE_CL_PROFILE's table of kernels (time, calls, bytes
 * moved against the device's copy bandwidth), printed when a context ends:
 * per step, or in all for a context that ran no step. */
#include "state.h"

#include <stdio.h>

/* Device copy bandwidth: a large buffer copied a few times (read + write). */
static double copy_bandwidth(floe_ctx *ctx)
{
    cl_ulong maxalloc = 0;
    F->clGetDeviceInfo(CL->dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof maxalloc, &maxalloc, NULL);
    size_t bytes = (size_t)1 << 30;
    while (bytes > maxalloc / 2 && bytes > ((size_t)1 << 20))
        bytes /= 2;
    cl_mem a = cl_mk(ctx, bytes), b = a ? cl_mk(ctx, bytes) : NULL;
    double best = 0;
    if (a && b) {
        cl_uint z = 0;
        F->clEnqueueFillBuffer(CL->q, a, &z, 4, 0, bytes, 0, NULL, NULL);
        for (int r = 0; r < 6; r++) {
            cl_event ev = NULL;
            if (F->clEnqueueCopyBuffer(CL->q, a, b, 0, 0, bytes, 0, NULL, &ev) != CL_SUCCESS)
                break;
            F->clWaitForEvents(1, &ev);
            cl_ulong t0, t1;
            if (!ev_time(ctx, ev, CL_PROFILING_COMMAND_START, &t0) && !ev_time(ctx, ev, CL_PROFILING_COMMAND_END, &t1) &&
                t1 > t0 && r > 0) {
                double gbs = 2.0 * (double)bytes / ((double)(t1 - t0) * 1e-9) / 1e9;
                if (gbs > best)
                    best = gbs;
            }
            F->clReleaseEvent(ev);
        }
    }
    cl_rel(ctx, &a);
    cl_rel(ctx, &b);
    return best;
}

void cl_profile_collect(floe_ctx *ctx)
{
    for (int k = 0; k < CL->npend; k++) {
        cl_ulong t0, t1;
        if (!ev_time(ctx, CL->pend[k].ev, CL_PROFILING_COMMAND_START, &t0) &&
            !ev_time(ctx, CL->pend[k].ev, CL_PROFILING_COMMAND_END, &t1)) {
            kstat *ks = &CL->ks[CL->pend[k].k];
            ks->ms += t1 > t0 ? (double)(t1 - t0) * 1e-6 : 0;
            ks->bytes += CL->pend[k].bytes;
            ks->calls++;
        }
        F->clReleaseEvent(CL->pend[k].ev);
    }
    CL->npend = 0;
}

void cl_print_profile(floe_ctx *ctx)
{
    cl_profile_collect(ctx); /* launches after the last step (per-frame stages) */
    double bw = copy_bandwidth(ctx);
    double total = 0;
    for (int k = 0; k < CL->nks; k++)
        total += CL->ks[k].ms;
    int order[MAX_KSTATS];
    for (int k = 0; k < CL->nks; k++)
        order[k] = k;
    for (int a = 0; a < CL->nks; a++) /* by time, descending */
        for (int b = a + 1; b < CL->nks; b++)
            if (CL->ks[order[b]].ms > CL->ks[order[a]].ms) {
                int t = order[a];
                order[a] = order[b];
                order[b] = t;
            }
    /* a context that ran no step (floe surface: per-frame stages alone)
     * gives the totals */
    const double per = CL->steps ? (double)CL->steps : 1.0;
    printf("OpenCL kernels (%s), %llu steps, %.3f ms of kernels %s; device copy bandwidth %.0f GB/s "
           "(read + write)\n",
           CL->desc, (unsigned long long)CL->steps, total / per, CL->steps ? "per step" : "in all", bw);
    printf("    %-22s %8s %10s %9s %10s %8s\n", "kernel", CL->steps ? "calls/st" : "calls", CL->steps ? "ms/step" : "ms",
           "share", "GB/s est", "of copy");
    for (int a = 0; a < CL->nks; a++) {
        const kstat *k = &CL->ks[order[a]];
        double gbs = k->ms > 0 ? k->bytes / (k->ms * 1e-3) / 1e9 : 0;
        printf("    %-22s %8.2f %10.4f %8.1f%% %10.1f %7.0f%%\n", k->name,
               (double)k->calls / per, k->ms / per,
               total > 0 ? 100 * k->ms / total : 0, gbs, bw > 0 ? 100 * gbs / bw : 0);
    }
    fflush(stdout);
}
