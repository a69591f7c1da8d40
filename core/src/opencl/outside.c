/* OpenCL backend: the domain's outside rule "delete" on the device. The
 * check after a device stage that moved a set counts the particles outside
 * into two words per set at the head of the neighbour counts' buffer
 * (kernels/core/core.cl check_stage, checks.c), which come back with the
 * next build's counts. Before anything else uses the set they are looked
 * at (read now where they have not come back) and, where particles left,
 * removed by a compaction on the device (api->cl_set_compact's, resize.c:
 * keep flags from the positions, the count known from the words, so no
 * read), counted and logged as
 * on the C path (blowup.c): the same particles go at the same step. The
 * one exception keeps a step from waiting for the check: the next step's
 * neighbour build and the stages run on its speculative lists may go
 * ahead; the lists' settling (lists.c) looks at the words first and, where
 * particles were removed, builds the lists again, and the pipeline runs
 * those stages again, as after a list that overflowed. */
#include "state.h"

#include <string.h>

int cl_outside_settle(floe_ctx *ctx, int *changed, const cl_uint *words)
{
    if (changed)
        *changed = 0;
    if (!CL->out_pending)
        return FLOE_OK;
    CL->out_pending = 0;
    cl_uint w[2 * MAX_SETS];
    if (words) /* with the neighbour counts, waited for */
        memcpy(w, words, (size_t)2 * ctx->npsets * sizeof *w);
    else {
        double t0 = now_ms();
        cl_int e = F->clEnqueueReadBuffer(CL->q, CL->stats, CL_TRUE, 0, (size_t)2 * ctx->npsets * 4, w, 0, NULL, NULL);
        CL->wait_end_ms += now_ms() - t0;
        if (e != CL_SUCCESS)
            return cl_err(ctx, e, "reading the particles outside the domain");
    }
    int any = 0, rc;
    for (int s = 0; s < ctx->npsets; s++)
        any |= ctx->sets[s].kind == FLOE_SET_FLUID && w[2 * s] != 0xffffffffu;
    if (!any)
        return FLOE_OK;
    /* the checks so far name particles by index: reported before the
     * indices change (a blow-up is the run's end) */
    if ((rc = cl_checks_now(ctx)))
        return rc;
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        if (p->kind != FLOE_SET_FLUID || w[2 * s] == 0xffffffffu)
            continue;
        /* the check counted them; the positions have not moved since */
        const cl_uint n = p->n, removed = ~w[2 * s], per = ctx->info.periodic;
        const cl_int dim = ctx->info.dim;
        if (removed > n)
            return ctx_fail(ctx, FLOE_ERR, "OpenCL: %u particles of set '%s' (of %u) outside the domain", removed,
                            p->name, n);
        cl_mem x = cl_attr_named(ctx, s, "x", FLOE_VEC3, FLOE_READ);
        cl_mem keep = cl_scratch(ctx, "core.outside_keep", (size_t)n * 4);
        if (!x || !keep)
            return FLOE_ERR;
        cl_float4 lo = {{ctx->info.domain_min[0], ctx->info.domain_min[1], ctx->info.domain_min[2], 0}};
        cl_float4 hi = {{ctx->info.domain_max[0], ctx->info.domain_max[1], ctx->info.domain_max[2], 0}};
        if ((rc = LAUNCH(cl_core_kernel(ctx, "core.cl", "outside_keep"), n, WG, 16.0 * n, ARG(n), ARG(x), ARG(lo),
                         ARG(hi), ARG(dim), ARG(per), ARG(keep))) ||
            (rc = ctx_set_compact_cl(ctx, ctx_set_handle(ctx, s), keep, n - removed)))
            return rc;
        ctx_outside_event(ctx, p, removed, w[2 * s + 1], CL->out_step, CL->out_time, ctx->stages[CL->out_stage].name);
    }
    cl_uint ones = 0xffffffffu;
    cl_int e = F->clEnqueueFillBuffer(CL->q, CL->stats, &ones, 4, 0, (size_t)STATS_PAIR0 * 4, 0, NULL, NULL);
    if (e != CL_SUCCESS)
        return cl_err(ctx, e, "clEnqueueFillBuffer");
    if (changed)
        *changed = 1;
    return FLOE_OK;
}

void cl_to_host_settled(floe_ctx *ctx, pset *p, attr *at, int write)
{
    if (CL->out_pending && p->kind == FLOE_SET_FLUID && cl_outside_settle(ctx, NULL, NULL))
        ctx_log(ctx, FLOE_LOG_ERROR, "OpenCL: removing particles that left the domain failed: %s", ctx->error);
    cl_to_host(ctx, p, at, write);
}

double cl_max_speed_settled(floe_ctx *ctx)
{
    if (CL->out_pending && cl_outside_settle(ctx, NULL, NULL))
        ctx_log(ctx, FLOE_LOG_ERROR, "OpenCL: removing particles that left the domain failed: %s", ctx->error);
    return cl_max_speed(ctx);
}

int cl_flush_settled(floe_ctx *ctx)
{
    int rc = cl_checks_flush(ctx);
    return rc ? rc : cl_outside_settle(ctx, NULL, NULL);
}
