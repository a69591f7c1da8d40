/* OpenCL backend: the table of functions the core calls (device.h), and
 * the backend's opening and closing. Opening reads the A/B switches of
 * docs/opencl.md once (FLOE_CL_PROFILE, FLOE_CL_SYNC_STAGES,
 * FLOE_CL_STAGE_TIMES, FLOE_CL_STAGE_SAMPLE, FLOE_CL_ARGCACHE,
 * FLOE_CL_NB_LOCAL, FLOE_CL_NB_SPECULATE). */
#include "opencl.h"
#include "state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *describe(floe_ctx *ctx) { return CL->desc; }
static void *context(floe_ctx *ctx) { return CL->context; }
static void *queue(floe_ctx *ctx) { return CL->q; }

static void *program(floe_ctx *ctx, const char *module, const char *file)
{
    cl_prog *p = cl_program_get(ctx, module, file);
    return p ? (void *)p->prog : NULL;
}

static void *kernel(floe_ctx *ctx, const char *module, const char *file, const char *name)
{
    return cl_kernel_get(ctx, module, file, name);
}

static int run(floe_ctx *ctx, void *k, size_t n, int nargs, const floe_cl_arg *args, double bytes)
{
    return cl_launch(ctx, (cl_kernel)k, n, WG, nargs, args, bytes);
}

static void moved(floe_ctx *ctx, pset *p)
{
    CL->sets[p - ctx->sets].sorted_valid = 0;
    CL->lists_valid = 0;
    CL->lists_lazy = 0;
}

static int set_compact(floe_ctx *ctx, pset *p, void *keep, uint32_t n_keep)
{
    return cl_set_compact(ctx, p, (cl_mem)keep, n_keep);
}

static int scan_words(floe_ctx *ctx, void *buf, uint32_t n) { return cl_scan_words(ctx, (cl_mem)buf, n); }

static int sort_keys(floe_ctx *ctx, void *keys, void *vals, uint32_t n, int bits)
{
    return cl_radix_sort(ctx, (cl_mem)keys, (cl_mem)vals, n, bits);
}

static void defer_checks(floe_ctx *ctx, int on) { CL->defer = on; }

static void destroy(floe_ctx *ctx)
{
    if (CL->q)
        F->clFinish(CL->q);
    if (CL->nb_ev)
        F->clReleaseEvent(CL->nb_ev);
    CL->nb_ev = NULL;
    if (CL->rows_ev)
        F->clReleaseEvent(CL->rows_ev);
    CL->rows_ev = NULL;
    if (CL->profile && (CL->steps || CL->nks))
        cl_print_profile(ctx);
    const char *wv = getenv("FLOE_CL_WAITS");
    if ((CL->profile || (wv && wv[0] && strcmp(wv, "0") != 0)) && CL->wait_steps)
        printf("OpenCL host: %llu steps, waits %.4f ms/step for the neighbour counts, %.4f ms/step at the step "
               "end; %.4f ms/step from step begin to end, %.4f ms/step in %.1f kernel launches\n",
               (unsigned long long)CL->wait_steps, CL->wait_nb_ms / (double)CL->wait_steps,
               CL->wait_end_ms / (double)CL->wait_steps, CL->step_host_ms / (double)CL->wait_steps,
               CL->launch_ms / (double)CL->wait_steps, (double)CL->launches / (double)CL->wait_steps);
    if ((CL->profile || (wv && wv[0] && strcmp(wv, "0") != 0)) && CL->vsteps)
        printf("OpenCL neighbours: Verlet lists (skin %g support radii), %llu builds in %llu updates, %llu of them "
               "when the step's displacements were settled\n",
               (double)CL->vskin, (unsigned long long)CL->vbuilds, (unsigned long long)CL->vsteps,
               (unsigned long long)CL->vlate);
    for (int s = 0; s < MAX_SETS; s++) {
        cl_setdev *d = &CL->sets[s];
        for (int a = 0; a < MAX_ATTRS; a++)
            cl_rel(ctx, &d->at[a].mem);
        cl_mem *ms[] = {&d->key, &d->rank, &d->tmp, &d->order, &d->spos, &d->cs, &d->perm_tmp, &d->near};
        for (size_t k = 0; k < sizeof ms / sizeof *ms; k++)
            cl_rel(ctx, ms[k]);
        cl_rel(ctx, &d->x0);
        cl_rel(ctx, &d->xp);
        for (int t = 0; t < MAX_SETS; t++) {
            cl_rel(ctx, &d->cnt[t]);
            cl_rel(ctx, &d->idx[t]);
            cl_rel(ctx, &d->scnt[t]);
            cl_rel(ctx, &d->sidx[t]);
        }
    }
    for (int k = 0; k < 6; k++)
        cl_rel(ctx, &CL->scan_sums[k]);
    cl_rel(ctx, &CL->cmp_rank);
    cl_rel(ctx, &CL->cmp_perm);
    cl_rel(ctx, &CL->rdx_key);
    cl_rel(ctx, &CL->rdx_val);
    cl_rel(ctx, &CL->rdx_hist);
    cl_rel(ctx, &CL->stats);
    cl_rel(ctx, &CL->flags);
    cl_rel(ctx, &CL->speed);
    for (int k = 0; k < CL->nscr; k++)
        cl_rel(ctx, &CL->scr[k].mem);
    for (int k = 0; k < CL->npin; k++) {
        if (CL->pin[k].host)
            F->clEnqueueUnmapMemObject(CL->q, CL->pin[k].mem, CL->pin[k].host, 0, NULL, NULL);
        CL->pin[k].host = NULL;
        cl_rel(ctx, &CL->pin[k].mem);
    }
    if (CL->npin)
        F->clFinish(CL->q);
    for (int p = 0; p < CL->nprogs; p++) {
        for (int k = 0; k < CL->progs[p].nk; k++)
            F->clReleaseKernel(CL->progs[p].kern[k]);
        if (CL->progs[p].prog)
            F->clReleaseProgram(CL->progs[p].prog);
    }
    for (int i = 0; i < CL->npend; i++)
        F->clReleaseEvent(CL->pend[i].ev);
    free(CL->pend);
    free(CL->argc);
    CL->argc = NULL;
    if (CL->wpending >= 0 && CL->wev)
        F->clWaitForEvents(1, &CL->wev), F->clReleaseEvent(CL->wev);
    if (CL->pinned_fl)
        F->clEnqueueUnmapMemObject(CL->q, CL->pinned, CL->pinned_fl, 0, NULL, NULL);
    if (CL->pinned_fl)
        F->clFinish(CL->q);
    CL->pinned_fl = NULL;
    cl_rel(ctx, &CL->pinned);
    for (int i = 0; i < MAX_STAGES; i++) {
        if (CL->ev_begin[i])
            F->clReleaseEvent(CL->ev_begin[i]);
        if (CL->ev_end[i])
            F->clReleaseEvent(CL->ev_end[i]);
    }
    if (CL->q)
        F->clReleaseCommandQueue(CL->q);
    if (CL->context)
        F->clReleaseContext(CL->context);
    free(CL);
    ctx->dev = NULL;
}

static const floe_backend_ops opencl_ops = {
    .kind = FLOE_BACKEND_OPENCL,
    .describe = describe,
    .destroy = destroy,
    .to_host = cl_to_host_settled,
    .attr_state = cl_attr_state,
    .moved = moved,
    .capacity = cl_capacity,
    .write_rows = cl_write_rows,
    .neighbours = cl_neighbours,
    .lists_pending = cl_lists_pending,
    .lists_settle = cl_lists_settle,
    .lists_to_host = cl_lists_to_host,
    .run_begin = cl_run_begin,
    .defer_checks = defer_checks,
    .step_begin = cl_step_begin,
    .stage_begin = cl_stage_begin,
    .stage_end = cl_stage_end,
    .step_end = cl_step_end,
    .checks_flush = cl_flush_settled,
    .gravity = cl_gravity,
    .integrate = cl_integrate,
    .max_speed = cl_max_speed_settled,
    .frame_stats = cl_frame_stats,
    .context = context,
    .queue = queue,
    .program = program,
    .kernel = kernel,
    .attr = cl_attr,
    .lists = cl_lists,
    .scratch = cl_scratch,
    .pinned = cl_pinned,
    .launch = run,
    .set_resize = cl_set_resize,
    .set_compact = set_compact,
    .scan = scan_words,
    .sort = sort_keys,
    .cells = cl_cells,
    .is_buffer = cl_is_buffer,
    .buffer_io = cl_buffer_io,
    .gather_rows = cl_gather_rows,
    .max_drift2 = cl_max_drift2,
    .count_outside = cl_count_outside,
    .bus_bytes = cl_bus_bytes,
    .select_rows = cl_select_rows,
    .keep_except = cl_keep_except,
    .keep_positions = cl_keep_positions,
};

struct floe_backend *floe_opencl_open(const char *device, char *msg, size_t msglen)
{
    const char *why = NULL;
    const cl_fns *f = cl_load(&why);
    if (!f) {
        snprintf(msg, msglen, "%s", why);
        return NULL;
    }
    cl_backend *b = calloc(1, sizeof *b);
    if (!b) {
        snprintf(msg, msglen, "out of memory");
        return NULL;
    }
    b->base.ops = &opencl_ops;
    b->f = f;
    if (cl_pick_device(b, device, msg, msglen)) {
        free(b);
        return NULL;
    }
    cl_int e;
    b->context = f->clCreateContext(NULL, 1, &b->dev, NULL, NULL, &e);
    /* FLOE_CL_STAGE_TIMES=0 and no FLOE_CL_PROFILE: a queue without
     * profiling (stage times are then host enqueue times) */
    const char *stt = getenv("FLOE_CL_STAGE_TIMES"), *pr = getenv("FLOE_CL_PROFILE");
    int events = !(stt && !strcmp(stt, "0")) || (pr && pr[0] && strcmp(pr, "0") != 0);
    if (b->context)
        b->q = f->clCreateCommandQueue(b->context, b->dev, events ? CL_QUEUE_PROFILING_ENABLE : 0, &e);
    b->stage_events = events;
    if (!b->q) {
        snprintf(msg, msglen, "cannot create an OpenCL context and queue (error %d)", (int)e);
        if (b->context)
            f->clReleaseContext(b->context);
        free(b);
        return NULL;
    }
    char dn[256], pn[256], dver[256], drv[256];
    cl_dev_str(f, b->dev, CL_DEVICE_NAME, dn, sizeof dn);
    cl_dev_str(f, b->dev, CL_DEVICE_VERSION, dver, sizeof dver);
    cl_dev_str(f, b->dev, CL_DRIVER_VERSION, drv, sizeof drv);
    cl_plat_str(f, b->plat, CL_PLATFORM_NAME, pn, sizeof pn);
    snprintf(b->desc, sizeof b->desc, "opencl: %s (%s, %s, driver %s)", dn, pn, dver, drv);
    const char *prof = getenv("FLOE_CL_PROFILE");
    b->profile = prof && prof[0] && strcmp(prof, "0") != 0;
    const char *sync = getenv("FLOE_CL_SYNC_STAGES");
    b->host_timing = sync && sync[0] && strcmp(sync, "0") != 0;
    b->cur_stage = -1;
    b->wpending = -1;
    const char *se = getenv("FLOE_CL_STAGE_SAMPLE");
    b->sample_every = se && atoi(se) > 0 ? atoi(se) : 16;
    /* A/B switches for timing (docs/opencl.md), read once */
    const char *ac = getenv("FLOE_CL_ARGCACHE"), *nl = getenv("FLOE_CL_NB_LOCAL");
    b->argcache_off = ac && !strcmp(ac, "0");
    b->nb_local_off = nl && !strcmp(nl, "0");
    const char *nn = getenv("FLOE_CL_NB_NEAR");
    b->nb_near_off = nn && !strcmp(nn, "0");
    const char *sp = getenv("FLOE_CL_NB_SPECULATE");
    b->nb_spec_off = sp && !strcmp(sp, "0");
    /* FLOE_CL_VERLET_PREDICT=0: Verlet lists built only where a step's
     * settled displacements say so (the late path, for tests) */
    const char *vp = getenv("FLOE_CL_VERLET_PREDICT");
    b->vpredict_off = vp && !strcmp(vp, "0");
    const char *vc = getenv("FLOE_CL_VERLET_CUT");
    b->vswap = vc && !strcmp(vc, "swap");
    /* FLOE_CL_NEIGHBOURS: lists (default) or cells (docs/opencl.md) */
    const char *nm = getenv("FLOE_CL_NEIGHBOURS");
    if (nm && nm[0] && strcmp(nm, "lists") != 0 && strcmp(nm, "cells") != 0) {
        snprintf(msg, msglen, "FLOE_CL_NEIGHBOURS must be \"lists\" or \"cells\" (got \"%s\")", nm);
        f->clReleaseCommandQueue(b->q);
        f->clReleaseContext(b->context);
        free(b);
        return NULL;
    }
    b->cells = nm && !strcmp(nm, "cells");
    const char *cst = getenv("FLOE_CL_CELLS_LOCAL");
    b->cells_staged = !(cst && !strcmp(cst, "0"));
    const char *cpk = getenv("FLOE_CL_CELLS_PACK");
    b->cells_pack = !(cpk && !strcmp(cpk, "0"));
    return &b->base;
}

void *floe_opencl_sym(const char *name) { return cl_loader_sym(name); }
