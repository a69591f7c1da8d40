/* OpenCL backend: blow-up checks on the device. After a device stage, one
 * small kernel per set it writes records the first NaN/Inf (or particle out
 * of the domain) in a flag word; a step's flags fill one block of a window
 * of FLAG_WIN steps, read in one copy (without waiting inside a run) and
 * reported in step order as the C path would have (blowup.c). */
#include "state.h"

#include <stdio.h>
#include <string.h>

static int stage_writes(const stage_inst *st, const char *name, floe_set_kind kind)
{
    for (const floe_attr_desc *a = st->desc->attrs; a && a->name; a++)
        if ((a->access & FLOE_WRITE) && (a->kind & kind) && !strcmp(a->name, name))
            return 1;
    return 0;
}

/* After an OpenCL stage: enqueue its blow-up checks (one launch per set it
 * writes, groups of four attributes), then its end marker. */
int cl_stage_end(floe_ctx *ctx, int i, int *host_timed)
{
    *host_timed = 1;
    const stage_inst *st = &ctx->stages[i];
    int rc;
    cl_kernel kchk = NULL;
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        if (p->kind != FLOE_SET_FLUID || p->n == 0)
            continue;
        const cl_mirror *mir = CL->sets[s].at;
        int list[MAX_ATTRS], nl = 0;
        for (int a = 0; a < p->nattrs; a++) {
            attr *at = &p->attrs[a];
            if ((at->type == FLOE_F32 || at->type == FLOE_VEC3) && stage_writes(st, at->name, p->kind) && mir[a].mem &&
                !mir[a].dev_stale) /* written on the device */
                list[nl++] = a;
        }
        int dom = stage_writes(st, "x", p->kind) && mir[0].mem && !mir[0].dev_stale;
        for (int g = 0; g < nl || (g == 0 && dom); g += 4) {
            if (CL->nflags + 5 > MAX_FLAGS)
                break;
            if (!kchk && !(kchk = cl_core_kernel(ctx, "core.cl", "check_stage")))
                return FLOE_ERR;
            cl_mem dummy = CL->flags; /* for absent buffers: never read */
            cl_mem m[4] = {dummy, dummy, dummy, dummy}, xm = g == 0 && dom ? mir[0].mem : dummy;
            cl_int dm = g == 0 && dom;
            cl_uint c[4] = {0, 0, 0, 0}, slot = CL->flag_base + (cl_uint)CL->nflags, n = p->n, per = ctx->info.periodic;
            double bytes = 0;
            for (int k = 0; k < 4; k++) {
                CL->slots[CL->nflags + k] = (flag_slot){i, s, -1, 0};
                if (g + k < nl) {
                    attr *at = &p->attrs[list[g + k]];
                    m[k] = mir[list[g + k]].mem;
                    c[k] = at->type == FLOE_VEC3 ? 3 : 1;
                    CL->slots[CL->nflags + k].attr = list[g + k];
                    bytes += 4.0 * c[k] * n;
                }
            }
            CL->slots[CL->nflags + 4] = (flag_slot){i, s, dm ? 0 : -1, 1};
            CL->nflags += 5;
            cl_int dim = ctx->info.dim;
            cl_float4 lo = {{ctx->info.domain_min[0], ctx->info.domain_min[1], ctx->info.domain_min[2], 0}};
            cl_float4 hi = {{ctx->info.domain_max[0], ctx->info.domain_max[1], ctx->info.domain_max[2], 0}};
            if ((rc = LAUNCH(kchk, n, WG, bytes + (dm ? 12.0 * n : 0), ARG(n), ARG(m[0]), ARG(c[0]), ARG(m[1]),
                             ARG(c[1]), ARG(m[2]), ARG(c[2]), ARG(m[3]), ARG(c[3]), ARG(dm), ARG(xm), ARG(lo), ARG(hi),
                             ARG(dim), ARG(per), ARG(CL->flags), ARG(slot))))
                return rc;
        }
    }
    if (CL->host_timing || st->per_frame) { /* a per-frame stage: its time, its work done */
        F->clFinish(CL->q);
        return FLOE_OK;
    }
    *host_timed = !CL->stage_events;
    CL->cur_stage = -1;
    return FLOE_OK;
}

/* Report the first flagged check of a step (flags fl, their slots), as
 * the C path would after that stage; step and time are that step's. */
int cl_report_flags(floe_ctx *ctx, const cl_uint *fl, const flag_slot *slots, int n, uint64_t step, double time)
{
    for (int k = 0; k < n; k++) {
        if (fl[k] == 0xffffffffu || slots[k].attr < 0)
            continue;
        CL->flags_clear = 0;
        const flag_slot *sl = &slots[k];
        pset *p = &ctx->sets[sl->set];
        uint32_t i = sl->domain ? fl[k] : fl[k] >> 1; /* attributes: 2 i + (Inf) */
        cl_set_to_host(ctx, p, 0);
        char what[96];
        if (sl->domain)
            snprintf(what, sizeof what, "left the simulation domain");
        else
            snprintf(what, sizeof what, "%s in attribute '%s'", (fl[k] & 1u) ? "Inf" : "NaN",
                     p->attrs[sl->attr].name);
        uint64_t s0 = ctx->info.step;
        double t0 = ctx->info.time;
        ctx->info.step = step;
        ctx->info.time = time;
        int rc = ctx_blowup_report(ctx, p, i, ctx->stages[sl->stage].name, what);
        ctx->info.step = s0;
        ctx->info.time = t0;
        return rc;
    }
    return FLOE_OK;
}

static cl_uint *win_fl(floe_ctx *ctx, int w)
{
    return CL->pinned_fl ? CL->pinned_fl + (size_t)w * FLAG_WIN * MAX_FLAGS : CL->win[w].fl;
}

/* Report the first flagged step of window w (its flags read), in step order. */
int cl_win_report(floe_ctx *ctx, int w)
{
    struct flag_win *W = &CL->win[w];
    const cl_uint *fl = win_fl(ctx, w);
    int n = W->nsteps, rc = FLOE_OK;
    W->nsteps = 0;
    for (int b = 0; b < n && rc == FLOE_OK; b++)
        rc = cl_report_flags(ctx, fl + (size_t)b * MAX_FLAGS, W->slots[b], W->nflags[b], W->step[b], W->time[b]);
    if (rc) { /* reported: the later steps' checks are moot (the flags are refilled) */
        if (CL->wpending >= 0) {
            F->clWaitForEvents(1, &CL->wev);
            F->clReleaseEvent(CL->wev);
            CL->wev = NULL;
            CL->wpending = -1;
        }
        CL->win[0].nsteps = CL->win[1].nsteps = 0;
    }
    return rc;
}

int cl_win_read(floe_ctx *ctx, int w, int blocking)
{
    size_t words = (size_t)CL->win[w].nsteps * MAX_FLAGS;
    cl_int e = F->clEnqueueReadBuffer(CL->q, CL->flags, blocking ? CL_TRUE : CL_FALSE, 0, words * 4, win_fl(ctx, w), 0,
                                      NULL, blocking ? NULL : &CL->wev);
    return e == CL_SUCCESS ? FLOE_OK : cl_err(ctx, e, "reading the blow-up checks");
}

/* Report the window in flight (normally long complete), then read and
 * report the steps of the filling one: after this every step run so far
 * has been checked. */
int cl_checks_flush(floe_ctx *ctx)
{
    int rc;
    double t0 = now_ms();
    if (CL->wpending >= 0) {
        int w = CL->wpending;
        CL->wpending = -1;
        cl_int e = F->clWaitForEvents(1, &CL->wev);
        F->clReleaseEvent(CL->wev);
        CL->wev = NULL;
        CL->wait_end_ms += now_ms() - t0;
        if (e != CL_SUCCESS)
            return cl_err(ctx, e, "waiting for the blow-up checks");
        if ((rc = cl_win_report(ctx, w)))
            return rc;
    }
    if (CL->win[CL->wcur].nsteps > 0) {
        t0 = now_ms();
        rc = cl_win_read(ctx, CL->wcur, 1);
        CL->wait_end_ms += now_ms() - t0;
        if (rc || (rc = cl_win_report(ctx, CL->wcur)))
            return rc;
    }
    return FLOE_OK;
}
