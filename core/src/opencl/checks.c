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

/* check_stage's dom: 1 error, 2 delete, 3 clamp */
static cl_int rule_code(const floe_ctx *ctx)
{
    return ctx->outside == FLOE_OUTSIDE_ERROR ? 1 : ctx->outside == FLOE_OUTSIDE_CLAMP ? 3 : 2;
}

cl_mem cl_stats(floe_ctx *ctx)
{
    if (CL->stats)
        return CL->stats;
    if (!(CL->stats = cl_mk(ctx, (size_t)STATS_WORDS * 4)))
        return NULL;
    cl_uint ones = 0xffffffffu;
    cl_int e = F->clEnqueueFillBuffer(CL->q, CL->stats, &ones, 4, 0, (size_t)STATS_PAIR0 * 4, 0, NULL, NULL);
    if (e != CL_SUCCESS) {
        cl_err(ctx, e, "clEnqueueFillBuffer");
        cl_rel(ctx, &CL->stats);
    }
    return CL->stats;
}

/* After an OpenCL stage: enqueue its blow-up checks (one launch per set it
 * writes, groups of four attributes, the first group with the domain's
 * outside rule where the stage moved the set), then its end marker. The
 * rule "delete" counts into the head of the stats buffer (outside.c
 * removes the particles); "error" and "clamp" into the flag words of the
 * step, read with its window. */
int cl_stage_end(floe_ctx *ctx, int i, int *host_timed)
{
    *host_timed = 1;
    const stage_inst *st = &ctx->stages[i];
    int rc, deleting = 0;
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
            const int room = CL->nflags + FLAG_GROUP <= MAX_FLAGS;
            cl_int dm = g == 0 && dom ? rule_code(ctx) : 0;
            if (dm == 2 && ctx->dd) /* MPI: deleting would renumber the step's ghosts; decomp.c deletes at its end */
                dm = 0;
            if (!room && !(dm == 2 || dm == 3)) /* past the words: only the rule's work is done */
                break;
            if (!kchk && !(kchk = cl_core_kernel(ctx, "core.cl", "check_stage")))
                return FLOE_ERR;
            cl_mem dummy = CL->flags; /* for absent buffers: never read */
            cl_mem m[4] = {dummy, dummy, dummy, dummy}, xm = dm ? mir[0].mem : dummy, vm = dummy, idm = dummy;
            cl_uint c[4] = {0, 0, 0, 0}, slot = room ? CL->flag_base + (cl_uint)CL->nflags : FLAG_SPILL,
                    n = p->n, per = ctx->info.periodic;
            cl_int hasid = 0;
            double bytes = 0;
            for (int k = 0; room && k < 4; k++) {
                CL->slots[CL->nflags + k] = (flag_slot){i, s, -1, FLAG_ATTR};
                if (g + k < nl) {
                    attr *at = &p->attrs[list[g + k]];
                    m[k] = mir[list[g + k]].mem;
                    c[k] = at->type == FLOE_VEC3 ? 3 : 1;
                    CL->slots[CL->nflags + k].attr = list[g + k];
                    bytes += 4.0 * c[k] * n;
                }
            }
            for (int k = 4; room && k < FLAG_GROUP; k++)
                CL->slots[CL->nflags + k] = (flag_slot){i, s, -1, FLAG_ATTR};
            cl_mem dw = CL->flags;
            cl_uint ds = slot + 4;
            if (dm >= 2) { /* delete, clamp: the lowest id; clamp moves x and v */
                attr *ida = pset_attr(p, "id");
                if (ida && ida->type == FLOE_U32 && (idm = cl_attr(ctx, p, ida, FLOE_READ)))
                    hasid = 1;
                idm = hasid ? idm : dummy;
                if (dm == 3 && !(vm = cl_attr_named(ctx, s, "v", FLOE_VEC3, FLOE_READ | FLOE_WRITE)))
                    return ctx_fail(ctx, FLOE_ERR, "set '%s' has no velocities to clamp", p->name);
                bytes += 4.0 * n;
            }
            if (dm == 2) { /* delete: the set's words at the head of stats */
                if (!(dw = cl_stats(ctx)))
                    return FLOE_ERR_NOMEM;
                ds = 2u * (cl_uint)s;
                deleting = 1;
            } else if (dm == 1 && room)
                CL->slots[CL->nflags + 4] = (flag_slot){i, s, 0, FLAG_OUT_ERROR};
            else if (dm == 3 && room)
                CL->slots[CL->nflags + 4] = (flag_slot){i, s, 0, FLAG_OUT_CLAMP};
            if (room)
                CL->nflags += FLAG_GROUP;
            cl_int dim = ctx->info.dim;
            cl_float4 lo = {{ctx->info.domain_min[0], ctx->info.domain_min[1], ctx->info.domain_min[2], 0}};
            cl_float4 hi = {{ctx->info.domain_max[0], ctx->info.domain_max[1], ctx->info.domain_max[2], 0}};
            if ((rc = LAUNCH(kchk, n, WG, bytes + (dm ? 12.0 * n : 0), ARG(n), ARG(m[0]), ARG(c[0]), ARG(m[1]),
                             ARG(c[1]), ARG(m[2]), ARG(c[2]), ARG(m[3]), ARG(c[3]), ARG(dm), ARG(xm), ARG(vm),
                             ARG(idm), ARG(hasid), ARG(lo), ARG(hi), ARG(dim), ARG(per), ARG(CL->flags), ARG(slot),
                             ARG(dw), ARG(ds))))
                return rc;
            /* error: where the first one was, as the C path quotes it */
            if (dm == 1 && room &&
                (rc = LAUNCH(cl_core_kernel(ctx, "core.cl", "outside_where"), 1, WG, 16, ARG(CL->flags), ARG(ds),
                             ARG(xm))))
                return rc;
        }
    }
    if (deleting) { /* outside.c looks at the words before the set is used */
        CL->out_pending = 1;
        CL->out_in_counts = 0;
        CL->out_stage = i;
        CL->out_step = ctx->info.step;
        CL->out_time = ctx->info.time;
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
 * the C path would after that stage; step and time are that step's.
 * Particles clamped on the way are counted and logged, in order. */
int cl_report_flags(floe_ctx *ctx, const cl_uint *fl, const flag_slot *slots, int n, uint64_t step, double time)
{
    for (int k = 0; k < n; k++) {
        if (fl[k] == 0xffffffffu || slots[k].attr < 0)
            continue;
        const flag_slot *sl = &slots[k];
        pset *p = &ctx->sets[sl->set];
        if (sl->domain == FLAG_OUT_CLAMP) { /* ~count, then the lowest id */
            ctx_outside_event(ctx, p, ~fl[k], k + 1 < n ? fl[k + 1] : 0, step, time, ctx->stages[sl->stage].name);
            continue;
        }
        CL->flags_clear = 0;
        uint32_t i = sl->domain ? fl[k] : fl[k] >> 1; /* attributes: 2 i + (Inf) */
        cl_set_to_host(ctx, p, 0);
        char what[96];
        float pos[3];
        if (sl->domain)
            snprintf(what, sizeof what, "left the simulation domain");
        else
            snprintf(what, sizeof what, "%s in attribute '%s'", (fl[k] & 1u) ? "Inf" : "NaN",
                     p->attrs[sl->attr].name);
        if (sl->domain && k + 3 < n) /* where it was after the stage (outside_where) */
            memcpy(pos, fl + k + 1, sizeof pos);
        uint64_t s0 = ctx->info.step;
        double t0 = ctx->info.time;
        ctx->info.step = step;
        ctx->info.time = time;
        int rc = ctx_blowup_report_at(ctx, p, i, ctx->stages[sl->stage].name, what,
                                      sl->domain && k + 3 < n ? pos : NULL);
        ctx->info.step = s0;
        ctx->info.time = t0;
        return rc;
    }
    return FLOE_OK;
}

/* The clamp rule counts by lowering flag words, which must be all ones
 * again before their block is used by a later step: words [first, first +
 * count) refilled after the read that took them (the queue is in order). */
static int refill(floe_ctx *ctx, size_t first, size_t count)
{
    if (ctx->outside != FLOE_OUTSIDE_CLAMP || !count)
        return FLOE_OK;
    cl_uint ones = 0xffffffffu;
    cl_int e = F->clEnqueueFillBuffer(CL->q, CL->flags, &ones, 4, first * 4, count * 4, 0, NULL, NULL);
    return e == CL_SUCCESS ? FLOE_OK : cl_err(ctx, e, "clEnqueueFillBuffer");
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
    return e == CL_SUCCESS ? refill(ctx, 0, words) : cl_err(ctx, e, "reading the blow-up checks");
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

int cl_checks_now(floe_ctx *ctx)
{
    F->clFinish(CL->q);
    int rc = cl_checks_flush(ctx);
    if (!rc && CL->nflags) {
        cl_uint fl[MAX_FLAGS];
        cl_int e = F->clEnqueueReadBuffer(CL->q, CL->flags, CL_TRUE, (size_t)CL->flag_base * 4,
                                          (size_t)CL->nflags * 4, fl, 0, NULL, NULL);
        rc = e != CL_SUCCESS ? cl_err(ctx, e, "reading the blow-up checks")
                             : cl_report_flags(ctx, fl, CL->slots, CL->nflags, ctx->info.step, ctx->info.time);
        if (!rc) /* counted: the step's window must not count them again */
            rc = refill(ctx, CL->flag_base, (size_t)CL->nflags);
    }
    return rc;
}
