/* OpenCL backend: runs, steps and stages. A step clears the flag words
 * when needed and picks whether its stages are timed (every
 * FLOE_CL_STAGE_SAMPLE-th step, by kernel events); before a C stage the
 * queue is drained, the checks so far reported and the host copies of what
 * it declares made current; a step's end files its checks and stage times. */
#include "state.h"

#include <string.h>

void cl_run_begin(floe_ctx *ctx)
{
    CL->nks = 0;
    CL->steps = 0;
    memset(CL->stage_sum, 0, sizeof CL->stage_sum);
    memset(CL->stage_n, 0, sizeof CL->stage_n);
    CL->tstep = 0; /* the run's first step is timed */
}

int cl_step_begin(floe_ctx *ctx)
{
    if (!CL->flags && !(CL->flags = cl_mk(ctx, (FLAG_SPILL + FLAG_GROUP) * 4)))
        return FLOE_ERR_NOMEM;
    if (!CL->pinned) { /* reads into host-allocated memory do not wait for the copy */
        cl_int em;
        CL->pinned = F->clCreateBuffer(CL->context, CL_MEM_ALLOC_HOST_PTR, 2 * FLAG_WIN * MAX_FLAGS * 4, NULL, &em);
        if (CL->pinned)
            CL->pinned_fl = F->clEnqueueMapBuffer(CL->q, CL->pinned, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                                  2 * FLAG_WIN * MAX_FLAGS * 4, 0, NULL, NULL, &em);
    }
    /* the checks only lower flag words from all ones, and a raised flag
     * ends the step with a report: clear them only after one (or at first) */
    if (!CL->flags_clear) {
        cl_uint ones = 0xffffffffu;
        cl_int e = F->clEnqueueFillBuffer(CL->q, CL->flags, &ones, 4, 0, FLAG_WIN * MAX_FLAGS * 4, 0, NULL, NULL);
        if (e != CL_SUCCESS)
            return cl_err(ctx, e, "clEnqueueFillBuffer");
        CL->flags_clear = 1;
    }
    CL->nflags = 0;
    CL->flag_base = (cl_uint)CL->win[CL->wcur].nsteps * MAX_FLAGS;
    /* stage times: kernel events on every sample_every-th step only (an
     * event costs the host microseconds per kernel); the steps between
     * are counted at the run's average of the timed steps */
    CL->step_t0 = now_ms();
    CL->sampling = CL->stage_events && (CL->profile || CL->tstep % (uint64_t)CL->sample_every == 0);
    CL->tstep++;
    memset(CL->stage_cl, 0, sizeof CL->stage_cl);
    return FLOE_OK;
}

static int declares_write(const stage_inst *st, const char *name)
{
    for (const floe_attr_desc *a = st->desc ? st->desc->attrs : NULL; a && a->name; a++)
        if ((a->access & FLOE_WRITE) && !strcmp(a->name, name))
            return 1;
    return !st->desc; /* a host stage may write anything */
}

static int reads_boundary(const stage_inst *st)
{
    for (const floe_attr_desc *a = st->desc ? st->desc->attrs : NULL; a && a->name; a++)
        if (a->kind & FLOE_SET_BOUNDARY)
            return 1;
    return 0;
}

/* The core's neighbour search on the device */
static int core_neighbours(const stage_inst *st)
{
    return st->desc && st->mod && !st->mod->dl && !strcmp(st->desc->name, "neighbours");
}

int cl_stage_begin(floe_ctx *ctx, const stage_inst *st, int use_cl)
{
    int i = (int)(st - ctx->stages), rc;
    /* particles the outside rule deletes are removed before a stage sees
     * the set, except by the neighbour build and the stages run on its
     * speculative lists that do not move particles: those run again once
     * the lists are settled, if particles were removed (outside.c) */
    if (CL->out_pending && !(use_cl && (core_neighbours(st) || (CL->nb_pending && !declares_write(st, "x")))) &&
        (rc = cl_outside_settle(ctx, NULL, NULL)))
        return rc;
    if (!use_cl) {
        /* a C stage: the host copies of what it declares, current; what
         * it writes is then stale on the device. Host (Lua) stages may touch
         * anything. Waiting here keeps device work out of its time; the
         * outstanding checks, earlier steps' and this step's so far, are
         * settled before the host looks at (or reorders) the particles. */
        if ((rc = cl_checks_now(ctx)))
            return rc;
        if (!st->desc) {
            for (int s = 0; s < ctx->npsets; s++)
                cl_set_to_host(ctx, &ctx->sets[s], 1);
            return FLOE_OK;
        }
        for (const floe_attr_desc *a = st->desc->attrs; a && a->name; a++)
            for (int s = 0; s < ctx->npsets; s++)
                if (ctx->sets[s].kind & a->kind) {
                    attr *at = pset_attr(&ctx->sets[s], a->name);
                    if (at)
                        cl_to_host(ctx, &ctx->sets[s], at, (a->access & FLOE_WRITE) != 0);
                }
        return FLOE_OK;
    }
    /* a device stage reading boundary sets: the sets placed late
     * (api->set_placer) placed first (the neighbours stage places them
     * itself, after launching the other sets' work) */
    if (!core_neighbours(st) && reads_boundary(st))
        for (int s = 0; s < ctx->npsets; s++)
            if ((rc = ctx_run_placer(ctx, &ctx->sets[s])))
                return rc;
    if (st->per_frame) { /* between steps: timed by the host, the steps' work done first */
        F->clFinish(CL->q);
        return FLOE_OK;
    }
    if (i >= 0 && i < MAX_STAGES)
        CL->stage_cl[i] = 1;
    if (CL->host_timing)
        F->clFinish(CL->q);
    else if (i >= 0 && i < MAX_STAGES && CL->sampling) {
        for (int k = 0; k < 2; k++) {
            cl_event *ev = k ? &CL->ev_end[i] : &CL->ev_begin[i];
            if (*ev)
                F->clReleaseEvent(*ev);
            *ev = NULL;
        }
        CL->cur_stage = i;
    }
    return FLOE_OK;
}

int cl_step_end(floe_ctx *ctx)
{
    int rc;
    CL->wait_steps++;
    CL->step_host_ms += now_ms() - CL->step_t0;
    /* untimed steps: the average of the run's timed steps */
    if (!CL->sampling && CL->stage_events && !CL->host_timing)
        for (int i = 0; i < ctx->nstages && i < MAX_STAGES; i++)
            if (CL->stage_cl[i] && CL->stage_n[i]) {
                double est = CL->stage_sum[i] / CL->stage_n[i];
                ctx->stages[i].ms_total += est;
                ctx->stages[i].ms_frame += est;
            }
    /* this step's checks: block b of the filling window */
    struct flag_win *W = &CL->win[CL->wcur];
    int b = W->nsteps++;
    W->nflags[b] = CL->nflags;
    W->step[b] = ctx->info.step;
    W->time[b] = ctx->info.time;
    memcpy(W->slots[b], CL->slots, (size_t)CL->nflags * sizeof *CL->slots);
    if (CL->defer && !CL->sampling && !CL->profile) {
        /* inside a run: a full window is read without waiting and reported
         * when the next one is full (or at the frame's end) */
        if (W->nsteps == FLAG_WIN) {
            if (CL->wpending >= 0) {
                int w = CL->wpending;
                double t0 = now_ms();
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
            if ((rc = cl_win_read(ctx, CL->wcur, 0)))
                return rc;
            CL->wpending = CL->wcur;
            CL->wcur ^= 1;
            F->clFlush(CL->q);
        }
        return FLOE_OK;
    }
    /* waits for the step: its checks (and deletions), then its timing */
    if ((rc = cl_flush_settled(ctx)))
        return rc;
    cl_int e;
    double t0 = now_ms();
    e = F->clFinish(CL->q);
    CL->wait_end_ms += now_ms() - t0;
    if (e != CL_SUCCESS)
        return cl_err(ctx, e, "waiting for the step");
    /* per-stage device times: from the start of the stage's first kernel
     * (or the end of the previous stage's last, if later: some runtimes
     * stamp a start when a command is submitted) to its last kernel's end */
    cl_ulong prev_end = 0;
    for (int i = 0; i < ctx->nstages && i < MAX_STAGES; i++) {
        if (!CL->ev_begin[i])
            continue; /* no kernel in this stage */
        cl_ulong t0, t1;
        if (ev_time(ctx, CL->ev_begin[i], CL_PROFILING_COMMAND_START, &t0) ||
            ev_time(ctx, CL->ev_end[i] ? CL->ev_end[i] : CL->ev_begin[i], CL_PROFILING_COMMAND_END, &t1)) {
            ctx_log(ctx, FLOE_LOG_INFO, "OpenCL: kernel events carry no timestamps; timing stages with a wait each");
            CL->host_timing = 1;
        } else {
            if (prev_end > t0)
                t0 = prev_end;
            prev_end = t1;
            double ms = t1 > t0 ? (double)(t1 - t0) * 1e-6 : 0;
            ctx->stages[i].ms_total += ms;
            ctx->stages[i].ms_frame += ms;
            CL->stage_sum[i] += ms;
            CL->stage_n[i]++;
        }
        F->clReleaseEvent(CL->ev_begin[i]);
        if (CL->ev_end[i])
            F->clReleaseEvent(CL->ev_end[i]);
        CL->ev_begin[i] = CL->ev_end[i] = NULL;
    }
    if (CL->profile) {
        cl_profile_collect(ctx);
        CL->steps++;
    }
    return FLOE_OK;
}
