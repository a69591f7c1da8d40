/* OpenCL backend: neighbour lists built on the device, column-major rows
 * of a fixed stride per (query set, target set). The build does not wait
 * for its overflow check: the counts are read without waiting and settled
 * before the first stage that cannot simply run again (cl_lists_settle),
 * where an overflowed pair is widened and built again. */
#include "state.h"

/* where the neighbour counts are read to (after the outside rule's words,
 * state.h's STATS_PAIR0): pinned memory where there is some */
static cl_uint *nb_stats_host(floe_ctx *ctx)
{
    cl_uint *p = cl_pinned(ctx, "core.nb_stats", sizeof CL->nb_st_page);
    return p ? p : CL->nb_st_page;
}

/* the cells of set t's sort with a particle of t in their block, once per
 * sort (nb_near_cells) */
static int near_cells(floe_ctx *ctx, int t)
{
    cl_setdev *d = &CL->sets[t];
    if (d->near_valid)
        return FLOE_OK;
    const nb_grid *g = cl_dev_grid(ctx);
    cl_uint ncells = (cl_uint)g->n[0] * (cl_uint)g->n[1] * (cl_uint)g->n[2];
    int rc = cl_ensure(ctx, &d->near, &d->near_cap, ncells, 1);
    if (rc)
        return rc;
    cl_float4 go;
    cl_int4 gn;
    cl_grid_args(ctx, &go, &gn);
    if ((rc = LAUNCH(cl_core_kernel(ctx, "neighbours.cl", "nb_near_cells"), ncells, WG, 73.0 * ncells, ARG(d->cs),
                     ARG(gn), ARG(ncells), ARG(d->near))))
        return rc;
    d->near_valid = 1;
    return FLOE_OK;
}

static int build_pair(floe_ctx *ctx, int q, int t, cl_uint slot)
{
    pset *pq = &ctx->sets[q], *pt = &ctx->sets[t];
    cl_setdev *dq = &CL->sets[q], *dt = &CL->sets[t];
    uint32_t nq = pq->n;
    if (!dq->lstride[t])
        dq->lstride[t] = ctx->info.dim == 3 ? 64u : 32u;
    /* Verlet lists: built within support + skin into scnt/sidx (the same
     * rows and stride), then cut into cnt/idx (FLOE_CL_VERLET_CUT=swap:
     * built into idx, its counts into scnt, then cut in place) */
    const int verlet = CL->von, sep = verlet && !CL->vswap;
    if (!dq->cnt[t] || dq->lcap[t] < nq || (verlet && !dq->scnt[t]) || (sep && !dq->sidx[t])) {
        uint64_t rows = pq->cap > nq ? pq->cap : nq;
        cl_rel(ctx, &dq->cnt[t]);
        cl_rel(ctx, &dq->idx[t]);
        cl_rel(ctx, &dq->scnt[t]);
        cl_rel(ctx, &dq->sidx[t]);
        dq->lcap[t] = 0;
        const size_t rw = (size_t)(rows ? rows : 1);
        if (!(dq->cnt[t] = cl_mk(ctx, rw * 4)) || !(dq->idx[t] = cl_mk(ctx, rw * dq->lstride[t] * 4)))
            return FLOE_ERR_NOMEM;
        if (verlet && !(dq->scnt[t] = cl_mk(ctx, rw * 4)))
            return FLOE_ERR_NOMEM;
        if (sep && !(dq->sidx[t] = cl_mk(ctx, rw * dq->lstride[t] * 4)))
            return FLOE_ERR_NOMEM;
        dq->lcap[t] = (uint32_t)rows;
    }
    dq->ln[t] = nq;
    if (nq == 0)
        return FLOE_OK;
    if (pt->n == 0) { /* nothing to find */
        cl_uint zero = 0;
        cl_int e = F->clEnqueueFillBuffer(CL->q, dq->cnt[t], &zero, 4, 0, (size_t)nq * 4, 0, NULL, NULL);
        if (e == CL_SUCCESS && verlet)
            e = F->clEnqueueFillBuffer(CL->q, dq->scnt[t], &zero, 4, 0, (size_t)nq * 4, 0, NULL, NULL);
        return e == CL_SUCCESS ? FLOE_OK : cl_err(ctx, e, "clEnqueueFillBuffer");
    }
    cl_mem xq = cl_attr_named(ctx, q, "x", FLOE_VEC3, FLOE_READ);
    if (!xq)
        return FLOE_ERR;
    cl_float4 go, plo, period;
    cl_int4 gn;
    cl_grid_args(ctx, &go, &gn);
    for (int k = 0; k < 3; k++) {
        plo.s[k] = ctx->nbgrid.plo[k];
        period.s[k] = ctx->nbgrid.period[k];
    }
    plo.s[3] = ctx->nbgrid.cell;
    period.s[3] = 0;
    const float radius = verlet ? cl_dev_grid(ctx)->cell : ctx->info.support;
    cl_float r2 = radius * radius;
    cl_int same = q == t, excl = q == t;
    cl_uint per = ctx->nbgrid.periodic, stride = dq->lstride[t], pitch = dq->lcap[t], nqq = nq;
    cl_mem cnt = verlet ? dq->scnt[t] : dq->cnt[t], idx = sep ? dq->sidx[t] : dq->idx[t];
    /* MPI (docs/mpi.md): a ghost's rows stay empty, as on the C path
     * (nb_build_rows): what a stage computes on a ghost is never used, the
     * core refreshes what a later stage reads there */
    const cl_uint nown = ctx->dd && pq->ghosts && pq->ghosts <= nq && !verlet ? nq - pq->ghosts : nq;
    /* bytes: queries, counts, and the lists as large as the last ones */
    double bytes = 24.0 * nq + 4.0 * (dq->ltotal[t] > 0 ? dq->ltotal[t] : 30.0 * nq);
    int rc;
    /* a set against itself, no periodic axes, lists of at most 64: the
     * work-group kernel (candidates staged in local memory; it walks the
     * sorted slots, ghosts among them, and leaves the ghosts' rows empty) */
    if (same && !per && stride <= 64 && !CL->nb_local_off)
        rc = LAUNCH(cl_core_kernel(ctx, "neighbours.cl", "nb_build_local"), nq, WG, bytes, ARG(nqq), ARG(dt->spos),
                    ARG(dt->cs), ARG(go), ARG(gn), ARG(r2), ARG(cnt), ARG(idx), ARG(stride), ARG(pitch),
                    ARG(CL->stats), ARG(slot), ARG(nown));
    else {
        if (nown < nq && !same) { /* into another set the queries go by index: the owned ones only, the
                                   * ghosts' counts 0 (a set against itself walks sorted slots: all rows built) */
            cl_uint zero = 0;
            cl_int e = F->clEnqueueFillBuffer(CL->q, cnt, &zero, 4, (size_t)nown * 4, (size_t)(nq - nown) * 4, 0, NULL,
                                              NULL);
            if (e != CL_SUCCESS)
                return cl_err(ctx, e, "clEnqueueFillBuffer");
            if ((nqq = nown) == 0)
                return FLOE_OK;
        }
        /* into a static set without periodic axes: the walks of queries
         * with none of it in their block are skipped */
        cl_int use_near = pt->is_static && !per && !CL->nb_near_off;
        if (use_near && (rc = near_cells(ctx, t)))
            return rc;
        cl_mem near = use_near ? dt->near : dt->cs; /* any buffer when unused */
        rc = LAUNCH(cl_core_kernel(ctx, "neighbours.cl", "nb_build"), nq, WG, bytes, ARG(same), ARG(xq), ARG(nqq),
                    ARG(dt->spos), ARG(dt->order), ARG(dt->cs), ARG(go), ARG(gn), ARG(r2), ARG(excl), ARG(per),
                    ARG(plo), ARG(period), ARG(cnt), ARG(idx), ARG(stride), ARG(pitch), ARG(CL->stats), ARG(slot),
                    ARG(near), ARG(use_near));
    }
    /* Verlet: the build reports the skin lists' counts (the overflow
     * check); the cut now */
    return rc || !verlet ? rc : cl_verlet_cut(ctx, q, t, slot, 1);
}

/* Clear the counts of every pair */
static int clear_counts(floe_ctx *ctx)
{
    cl_uint zero = 0;
    /* Verlet lists: the displacement words too */
    const size_t words = CL->von ? (size_t)(STATS_WORDS - STATS_PAIR0) : (size_t)2 * CL->nb_np;
    cl_int e = CL->nb_np || CL->von ? F->clEnqueueFillBuffer(CL->q, CL->stats, &zero, 4, (size_t)STATS_PAIR0 * 4,
                                                             words * 4, 0, NULL, NULL)
                                    : CL_SUCCESS;
    return e == CL_SUCCESS ? FLOE_OK : cl_err(ctx, e, "clEnqueueFillBuffer");
}

/* Clear the counts and build the lists of the set pairs which[0..n) (all
 * of CL->nb_pq/nb_pt when which is NULL), each reporting into its slot */
static int build_pairs(floe_ctx *ctx, const int *which, int n)
{
    int rc = clear_counts(ctx);
    for (int k = 0; k < n && !rc; k++) {
        const int pr = which ? which[k] : k;
        rc = build_pair(ctx, CL->nb_pq[pr], CL->nb_pt[pr], (cl_uint)(STATS_PAIR0 / 2 + pr));
    }
    return rc;
}

/* every (fluid set, set) pair, in CL->nb_pq/nb_pt */
static void set_pairs(floe_ctx *ctx)
{
    int np = 0;
    for (int q = 0; q < ctx->npsets; q++)
        if (ctx->sets[q].kind == FLOE_SET_FLUID)
            for (int t = 0; t < ctx->npsets; t++) {
                CL->nb_pq[np] = q;
                CL->nb_pt[np] = t;
                np++;
            }
    CL->nb_np = np;
}

/* Sort one set (reordering a fluid set along the sort when asked) */
static int sort_set(floe_ctx *ctx, int s, int reorder)
{
    pset *p = &ctx->sets[s];
    int rc;
    if ((rc = cl_sort(ctx, s)))
        return rc;
    /* static sets were reordered once on the host (boundary volumes) */
    if (!p->is_static && reorder && p->n > 1) {
        /* the previous step's checks name particles by index: report
         * them before the indices change */
        if ((rc = cl_checks_flush(ctx)) || (rc = cl_reorder(ctx, s)) || (rc = cl_sort(ctx, s)))
            return rc;
    }
    CL->sets[s].sorted_valid = 1;
    return FLOE_OK;
}

/* Build the lists of every pair whose target set is placed late (late = 1)
 * or not (0) */
static int build_lists(floe_ctx *ctx, int late)
{
    int rc = FLOE_OK;
    for (int pr = 0; pr < CL->nb_np && !rc; pr++)
        if (!ctx->sets[CL->nb_pt[pr]].placer == !late)
            rc = build_pair(ctx, CL->nb_pq[pr], CL->nb_pt[pr], (cl_uint)(STATS_PAIR0 / 2 + pr));
    return rc;
}

/* Verlet lists, a step without a build: the displacements and the cut of
 * every pair, their counts read without waiting */
static int cut_all(floe_ctx *ctx)
{
    int rc;
    if (!cl_stats(ctx))
        return FLOE_ERR_NOMEM;
    set_pairs(ctx);
    if ((rc = clear_counts(ctx)) || (rc = cl_verlet_moved(ctx, 0)))
        return rc;
    CL->vbuilt = 0;
    for (int pr = 0; pr < CL->nb_np && !rc; pr++)
        rc = cl_verlet_cut(ctx, CL->nb_pq[pr], CL->nb_pt[pr], (cl_uint)(STATS_PAIR0 / 2 + pr), 0);
    if (rc)
        return rc;
    cl_int e = F->clEnqueueReadBuffer(CL->q, CL->stats, CL_FALSE, 0, (size_t)STATS_WORDS * 4, nb_stats_host(ctx), 0,
                                      NULL, &CL->nb_ev);
    CL->out_in_counts = CL->out_pending;
    if (e != CL_SUCCESS)
        return cl_err(ctx, e, "reading the neighbour counts");
    F->clFlush(CL->q);
    CL->nb_pending = 1;
    CL->lists_valid = 1;
    CL->lists_lazy = 0;
    ctx->nb_valid = 0;
    return FLOE_OK;
}

/* Sort every set that needs it, build the lists of every pair and read
 * their counts without waiting. A set placed late (api->set_placer) comes
 * last: the other sets' sorts and lists are launched, then its owner
 * places it (host work that overlaps them), then it is sorted and the
 * lists into it built. */
static int build_all(floe_ctx *ctx, int reorder)
{
    int rc;
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        if ((p->is_static && CL->sets[s].sorted_valid) || p->placer)
            continue;
        if ((rc = sort_set(ctx, s, reorder)))
            return rc;
    }
    if (!cl_stats(ctx))
        return FLOE_ERR_NOMEM;
    /* cells: the sorts are all; lists only when a module asks (cl_lists_ensure) */
    const int lazy = CL->cells && !ctx->nbgrid.periodic;
    set_pairs(ctx);
    if (lazy)
        CL->nb_np = 0;
    const int np = CL->nb_np;
    /* Verlet lists: the positions of the build kept (the sorts may have
     * reordered them), packed for the cut */
    if ((CL->von && (rc = cl_verlet_built(ctx))) || (rc = clear_counts(ctx)) || (rc = build_lists(ctx, 0)))
        return rc;
    int late = 0;
    for (int s = 0; s < ctx->npsets; s++)
        late |= ctx->sets[s].placer != NULL;
    if (late) {
        F->clFlush(CL->q); /* the device starts on what is launched while the owners work */
        for (int s = 0; s < ctx->npsets; s++)
            if (ctx->sets[s].placer && ((rc = ctx_run_placer(ctx, &ctx->sets[s])) || (rc = sort_set(ctx, s, reorder))))
                return rc;
        if ((rc = build_lists(ctx, 1)))
            return rc;
    }
    /* the one small read of the neighbour update, the largest count and the
     * total of every pair, after the outside rule's words: without waiting */
    cl_uint *st = nb_stats_host(ctx);
    const size_t words = CL->von ? (size_t)STATS_WORDS : (size_t)(STATS_PAIR0 + 2 * np);
    cl_int e = F->clEnqueueReadBuffer(CL->q, CL->stats, CL_FALSE, 0, words * 4, st, 0, NULL, &CL->nb_ev);
    CL->out_in_counts = CL->out_pending;
    if (e != CL_SUCCESS)
        return cl_err(ctx, e, "reading the neighbour counts");
    F->clFlush(CL->q);
    CL->nb_pending = 1;
    CL->lists_valid = !lazy;
    CL->lists_lazy = lazy;
    ctx->nb_valid = 0;
    return FLOE_OK;
}

int cl_neighbours(floe_ctx *ctx, int reorder)
{
    int rb, rc;
    if (CL->nb_pending && (rc = cl_lists_settle(ctx, &rb))) /* an earlier build not looked at */
        return rc;
    /* particles that left the domain in the last step: removed first where
     * this build reorders the sets or waits anyway; else it goes ahead on
     * them, and the settling looks (outside.c) */
    if ((reorder || CL->nb_spec_off) && (rc = cl_outside_settle(ctx, NULL, NULL)))
        return rc;
    rc = ctx_nb_grid_ensure(ctx);
    if (rc || (rc = cl_verlet_setup(ctx)))
        return rc;
    if (CL->von) { /* Verlet lists: a reorder waits for the next build */
        CL->vreorder |= reorder;
        CL->vsteps++;
        if (!cl_verlet_due(ctx))
            rc = cut_all(ctx);
        else {
            rc = build_all(ctx, CL->vreorder);
            CL->vreorder = 0;
        }
    } else
        rc = build_all(ctx, reorder);
    if (rc)
        return rc;
    ctx->nb_updates++;
    if (CL->nb_spec_off) {
        int rebuilt;
        return cl_lists_settle(ctx, &rebuilt);
    }
    return FLOE_OK;
}

int cl_lists_pending(floe_ctx *ctx)
{
    return CL && CL->nb_pending;
}

/* Look at the counts of the last build: where a list overflowed its stride
 * (rows were cut), widen it and build that pair again, now waiting for the
 * counts. *rebuilt tells the caller that stages run on the speculative
 * lists must run again. */
static int widen(floe_ctx *ctx, cl_uint *st, int *rebuilt);

int cl_lists_settle(floe_ctx *ctx, int *rebuilt)
{
    *rebuilt = 0;
    if (!CL->nb_pending)
        return FLOE_OK;
    CL->nb_pending = 0;
    double t0 = now_ms();
    cl_int e = F->clWaitForEvents(1, &CL->nb_ev);
    CL->wait_nb_ms += now_ms() - t0;
    F->clReleaseEvent(CL->nb_ev);
    CL->nb_ev = NULL;
    if (e != CL_SUCCESS)
        return cl_err(ctx, e, "reading the neighbour counts");
    int rc, changed = 0;
    /* the build went ahead on particles that had left the domain: removed
     * now, the lists built again (no reorder: done, or not due), and the
     * stages run on the old ones run again */
    if (CL->out_pending && (rc = cl_outside_settle(ctx, &changed, CL->out_in_counts ? nb_stats_host(ctx) : NULL)))
        return rc;
    /* Verlet lists: a pair that may have closed the skin since the build
     * (the step's own displacements, settled now) builds them again */
    int late = 0;
    if (!changed && CL->von && (late = cl_verlet_closed(ctx, nb_stats_host(ctx)))) {
        changed = 1;
        CL->vlate++;
    }
    if (CL->von) { /* the run record's means per frame: the shares of steps that built */
        ctx_stat(ctx, "neighbours.rebuilt", changed || CL->vbuilt ? 1.0 : 0.0);
        ctx_stat(ctx, "neighbours.rebuilt_late", late ? 1.0 : 0.0);
    }
    if (changed) {
        if ((rc = build_all(ctx, 0)))
            return rc;
        CL->vd[0] = CL->vd[1] = 0.0;
        CL->nb_pending = 0;
        *rebuilt = 1;
        t0 = now_ms();
        e = F->clWaitForEvents(1, &CL->nb_ev);
        CL->wait_nb_ms += now_ms() - t0;
        F->clReleaseEvent(CL->nb_ev);
        CL->nb_ev = NULL;
        if (e != CL_SUCCESS)
            return cl_err(ctx, e, "reading the neighbour counts");
    }
    return widen(ctx, nb_stats_host(ctx) + STATS_PAIR0, rebuilt);
}

/* Look at the counts st of every pair: where a list overflowed its stride
 * (rows were cut), widen it and build that pair again, now waiting. */
static int widen(floe_ctx *ctx, cl_uint *st, int *rebuilt)
{
    enum { NPAIR = MAX_SETS * MAX_SETS };
    int pending[NPAIR], npending = 0, rc;
    double t0;
    cl_int e;
    const int np = CL->nb_np;
    for (int round = 0;; round++) {
        /* an overflow: kernels enqueued on the speculative lists may still
         * read them; let them finish before the lists are released */
        for (int k = 0; !round && k < np; k++)
            if (st[2 * k] > CL->sets[CL->nb_pq[k]].lstride[CL->nb_pt[k]]) {
                F->clFinish(CL->q);
                break;
            }
        int left = 0;
        for (int k = 0; k < (round ? npending : np); k++) {
            int pr = round ? pending[k] : k;
            cl_setdev *d = &CL->sets[CL->nb_pq[pr]];
            int t = CL->nb_pt[pr];
            d->ltotal[t] = st[2 * pr + 1];
            if (st[2 * pr] > d->lstride[t]) { /* rare: widen, rebuild this pair */
                d->lstride[t] = (st[2 * pr] + 7u) & ~7u;
                cl_rel(ctx, &d->cnt[t]);
                cl_rel(ctx, &d->idx[t]);
                pending[left++] = pr;
            }
        }
        npending = left;
        if (!npending)
            break;
        *rebuilt = 1;
        if (round > 4)
            return ctx_fail(ctx, FLOE_ERR, "OpenCL: neighbour lists keep overflowing");
        if ((rc = build_pairs(ctx, pending, npending)))
            return rc;
        t0 = now_ms();
        e = F->clEnqueueReadBuffer(CL->q, CL->stats, CL_TRUE, (size_t)STATS_PAIR0 * 4, (size_t)2 * np * 4, st, 0, NULL,
                                   NULL);
        CL->wait_nb_ms += now_ms() - t0;
        if (e != CL_SUCCESS)
            return cl_err(ctx, e, "reading the neighbour counts");
    }
    return FLOE_OK;
}

/* Where the last neighbours stage only sorted (cells), the lists of every
 * pair now, on that sort, waiting for their counts (a module that reads
 * lists asked: api->cl_neighbours, or a C stage the host lists). */
int cl_lists_ensure(floe_ctx *ctx)
{
    if (CL->lists_valid || !CL->lists_lazy)
        return FLOE_OK;
    set_pairs(ctx);
    int rc = build_pairs(ctx, NULL, CL->nb_np);
    if (rc)
        return rc;
    cl_uint *st = nb_stats_host(ctx) + STATS_PAIR0;
    double t0 = now_ms();
    cl_int e = F->clEnqueueReadBuffer(CL->q, CL->stats, CL_TRUE, (size_t)STATS_PAIR0 * 4, (size_t)2 * CL->nb_np * 4, st,
                                      0, NULL, NULL);
    CL->wait_nb_ms += now_ms() - t0;
    if (e != CL_SUCCESS)
        return cl_err(ctx, e, "reading the neighbour counts");
    int rebuilt;
    if ((rc = widen(ctx, st, &rebuilt)))
        return rc;
    CL->lists_lazy = 0;
    CL->lists_valid = 1;
    return FLOE_OK;
}
