/* The core's own stages, registered as the built-in module "core" through
 * the same descriptors as any plugin: neighbours, gravity, integrate.
 * Scenes name them without prefix ("neighbours") or as "core.neighbours". */
#include "ctx.h"
#include "emit.h"

#include "floe/kernel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- neighbours ------------------------------------------------------- */

int ctx_nb_grid_ensure(floe_ctx *ctx)
{
    if (ctx->nbgrid.cell > 0)
        return FLOE_OK;
    const floe_sim_info *in = &ctx->info;
    float lo[3], hi[3];
    for (int k = 0; k < 3; k++) {
        lo[k] = in->domain_min[k] - 2 * in->support;
        hi[k] = in->domain_max[k] + 2 * in->support;
    }
    if (nb_grid_init(&ctx->nbgrid, in->dim, lo, hi, in->support, (uint64_t)1 << 28))
        return ctx_fail(ctx, FLOE_ERR_ARG,
                        "neighbour grid: the domain is too large for cells of %g m (more than 2^28 cells); "
                        "shrink the domain or raise the spacing", (double)in->support);
    ctx->nbgrid.periodic = in->periodic;
    for (int k = 0; k < 3; k++) {
        ctx->nbgrid.plo[k] = in->domain_min[k];
        ctx->nbgrid.period[k] = in->period[k];
    }
    return FLOE_OK;
}

static int sort_set(floe_ctx *ctx, int s, int reorder)
{
    pset *p = &ctx->sets[s];
    float *x = pset_attr(p, "x")->data;
    if (nb_sort(&p->sorted, &ctx->nbgrid, x, p->n))
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "neighbour search: out of memory sorting set '%s'", p->name);
    if (reorder && p->n > 1) {
        /* move every attribute along the cell key for memory locality, then
         * sort again (keys are now ascending, so order becomes the identity) */
        int rc = floe_set_reorder(ctx, ctx_set_handle(ctx, s), p->sorted.order);
        if (rc)
            return rc;
        x = pset_attr(p, "x")->data;
        if (nb_sort(&p->sorted, &ctx->nbgrid, x, p->n))
            return ctx_fail(ctx, FLOE_ERR_NOMEM, "neighbour search: out of memory sorting set '%s'", p->name);
    }
    /* a static set is searched every step and sorted once: map the cells
     * near it, so that queries far from it (most fluid particles, for a
     * tank's walls) skip the search (without memory: the search still works) */
    if (p->is_static) {
        (void)nb_sorted_near(&p->sorted, &ctx->nbgrid);
        (void)nb_sorted_keep_slots(&p->sorted, pset_attr(p, "x")->data); /* without memory: gathered per build */
    }
    p->sorted_valid = 1;
    return FLOE_OK;
}

/* The weights and the room of the kernel sums of fluid set pq's list in
 * set t (floe_nlist.wsum): m of a fluid target, V of a boundary one. A
 * target without them gets none (ks->w stays NULL). */
static int ksum_target(floe_ctx *ctx, pset *pq, int t, float inv_H, nb_ksum *ks)
{
    pset *pt = &ctx->sets[t];
    const attr *w = pset_attr(pt, pt->kind == FLOE_SET_FLUID ? "m" : "V");
    if (!w || w->type != FLOE_F32)
        return FLOE_OK;
    if (pq->ksum_cap[t] < pq->n || !pq->ksum[t]) {
        float *b = aligned_alloc(64, ((size_t)(pq->n ? pq->n : 1) * sizeof(float) + 63) / 64 * 64);
        if (!b)
            return ctx_fail(ctx, FLOE_ERR_NOMEM, "neighbour search: out of memory for kernel sums of '%s'", pq->name);
        free(pq->ksum[t]);
        pq->ksum[t] = b;
        pq->ksum_cap[t] = pq->n;
    }
    *ks = (nb_ksum){.w = w->data, .inv_H = inv_H, .out = pq->ksum[t]};
    /* one mass for the whole set (the usual fluid): no loads of w per row */
    if (pt->kind == FLOE_SET_FLUID && pt->n) {
        const float *wd = w->data;
        int same = 1;
        for (uint32_t i = 1; i < pt->n; i++)
            same &= wd[i] == wd[0];
        ks->uniform = same;
        ks->w0 = wd[0];
    }
    return FLOE_OK;
}

int ctx_neighbours_update(floe_ctx *ctx, int reorder)
{
    int rc = ctx_nb_grid_ensure(ctx);
    for (int s = 0; s < ctx->npsets && ctx->cl; s++) /* OpenCL: positions on the host */
        ctx_cl_host(ctx, pset_attr(&ctx->sets[s], "x"), 0);
    for (int s = 0; s < ctx->npsets && !rc; s++) {
        pset *p = &ctx->sets[s];
        if (p->is_static && p->sorted_valid)
            continue;
        /* static sets are reordered once, on their first sort */
        rc = sort_set(ctx, s, p->is_static ? 1 : reorder);
    }
    ctx->ksums_valid = 0;
    const float inv_H = floe_kernel_make(ctx->info.dim, ctx->info.support).inv_H;
    for (int q = 0; q < ctx->npsets && !rc; q++) {
        pset *pq = &ctx->sets[q];
        if (pq->kind != FLOE_SET_FLUID)
            continue;
        const float *xq = pset_attr(pq, "x")->data;
        for (int t = 0; t < ctx->npsets; t++) {
            pset *pt = &ctx->sets[t];
            const float *xt = pset_attr(pt, "x")->data;
            nb_ksum ks = {0}, *ksp = NULL;
            pq->ksum_ok[t] = 0;
            if (ctx->ksums_wanted && (rc = ksum_target(ctx, pq, t, inv_H, &ks)) == FLOE_OK && ks.w)
                ksp = &ks;
            if (rc)
                return rc;
            if (nb_build_sums(&pq->lists[t], &ctx->nbgrid, xq, pq->n, &pt->sorted, xt, ctx->info.support, q == t,
                              ksp))
                return ctx_fail(ctx, FLOE_ERR_NOMEM, "neighbour search: out of memory for lists of '%s'", pq->name);
            pq->ksum_ok[t] = ksp && ks.done;
        }
    }
    if (!rc) {
        ctx->nb_valid = 1;
        ctx->ksums_valid = ctx->ksums_wanted;
        ctx->nb_updates++;
    }
    return rc;
}

enum { NB_REORDER_EVERY, NB_METHOD };

/* method "sorted_keys": Kipfer & Westermann's search (neighbours_sorted.c) */
static int sorted_keys(const floe_stage_call *c) { return c->param[NB_METHOD].s && c->param[NB_METHOD].s[0] == 's'; }

static int stage_neighbours(const floe_stage_call *c)
{
    floe_ctx *ctx = c->ctx;
    if (sorted_keys(c))
        return ctx_neighbours_sorted(ctx);
    int64_t every = c->param[NB_REORDER_EVERY].i;
    int reorder = every > 0 && ctx->nb_updates % (uint64_t)every == 0;
    return ctx_neighbours_update(ctx, reorder);
}

/* ---- gravity and integration ------------------------------------------- */

static int stage_gravity(const floe_stage_call *c)
{
    floe_ctx *ctx = c->ctx;
    const float *g = ctx->info.gravity;
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        if (p->kind != FLOE_SET_FLUID)
            continue;
        float *restrict a = pset_attr(p, "a")->data;
        uint32_t n = p->n;
#pragma omp parallel for schedule(static)
        for (uint32_t i = 0; i < n; i++) {
            a[3 * i] = g[0];
            a[3 * i + 1] = g[1];
            a[3 * i + 2] = g[2];
        }
    }
    return FLOE_OK;
}

/* Positions on periodic axes back into [domain_min, domain_max). */
static void wrap_periodic(const floe_sim_info *in, float *x, uint32_t n)
{
    for (int k = 0; k < 3; k++) {
        if (!(in->periodic & (1u << k)))
            continue;
        const float lo = in->domain_min[k], L = in->period[k];
#pragma omp parallel for schedule(static)
        for (uint32_t i = 0; i < n; i++) {
            float *c = &x[3 * i + k];
            if (*c < lo || *c >= lo + L) {
                *c -= L * floorf((*c - lo) / L);
                if (*c >= lo + L) /* rounding */
                    *c = lo;
            }
        }
    }
}

static int stage_integrate(const floe_stage_call *c)
{
    floe_ctx *ctx = c->ctx;
    const float dt = (float)ctx->info.dt;
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        if (p->kind != FLOE_SET_FLUID)
            continue;
        const float *restrict a = pset_attr(p, "a")->data;
        float *restrict v = pset_attr(p, "v")->data;
        float *restrict x = pset_attr(p, "x")->data;
        uint32_t n3 = 3 * p->n;
#pragma omp parallel for schedule(static)
        for (uint32_t k = 0; k < n3; k++) {
            v[k] += dt * a[k];
            x[k] += dt * v[k];
        }
        if (ctx->info.periodic)
            wrap_periodic(&ctx->info, x, p->n);
        p->sorted_valid = 0;
        p->dev_sorted_valid = 0;
    }
    ctx->nb_valid = 0;
    ctx->nb_dev_valid = 0;
    return FLOE_OK;
}

/* OpenCL paths (backend_cl.c, kernels/core/) */
static int stage_neighbours_cl(const floe_stage_call *c)
{
    floe_ctx *ctx = c->ctx;
    if (sorted_keys(c))
        return ctx_fail(ctx, FLOE_ERR_ARG, "neighbours: method \"sorted_keys\" runs on the cpu backend only");
    int64_t every = c->param[NB_REORDER_EVERY].i;
    int reorder = every > 0 && ctx->nb_updates % (uint64_t)every == 0;
    ctx->ksums_valid = 0; /* the device's lists come without kernel sums */
    return ctx_cl_neighbours(ctx, reorder);
}

static int stage_gravity_cl(const floe_stage_call *c) { return ctx_cl_gravity(c->ctx); }
static int stage_integrate_cl(const floe_stage_call *c) { return ctx_cl_integrate(c->ctx); }

static const floe_param_desc nb_params[] = {
    {FLOE_SIZED(floe_param_desc), .name = "reorder_every", .type = FLOE_PARAM_INT, .def = 10, .min = 0, .max = 1e9,
     .unit = "steps", .doc = "reorder particles along the cell key every N updates for memory locality (0 = never)"},
    {FLOE_SIZED(floe_param_desc), .name = "method", .type = FLOE_PARAM_STRING, .def_str = "cells",
     .choices = "cells|sorted_keys", .unit = "",
     .doc = "cells: cell-sorted search with 3x3(x3) blocks; sorted_keys: Kipfer & Westermann's linear scan over "
            "sorted bin keys with staggered grids (cpu backend, no periodic domains; docs/neighbours.md)"},
    {0}};

static const floe_attr_desc nb_attrs[] = {
    {FLOE_SIZED(floe_attr_desc), .kind = FLOE_SET_ANY, .name = "x", .type = FLOE_VEC3, .access = FLOE_READ},
    {0}};

static const floe_attr_desc gravity_attrs[] = {
    {FLOE_SIZED(floe_attr_desc), .kind = FLOE_SET_FLUID, .name = "a", .type = FLOE_VEC3, .access = FLOE_WRITE | FLOE_OVERWRITE},
    {0}};

static const floe_attr_desc integrate_attrs[] = {
    {FLOE_SIZED(floe_attr_desc), .kind = FLOE_SET_FLUID, .name = "a", .type = FLOE_VEC3, .access = FLOE_READ},
    {FLOE_SIZED(floe_attr_desc), .kind = FLOE_SET_FLUID, .name = "v", .type = FLOE_VEC3, .access = FLOE_WRITE},
    {FLOE_SIZED(floe_attr_desc), .kind = FLOE_SET_FLUID, .name = "x", .type = FLOE_VEC3, .access = FLOE_WRITE},
    {0}};

static const floe_attr_desc emit_attrs[] = {
    {FLOE_SIZED(floe_attr_desc), .kind = FLOE_SET_FLUID, .name = "x", .type = FLOE_VEC3, .access = FLOE_READ | FLOE_WRITE},
    {FLOE_SIZED(floe_attr_desc), .kind = FLOE_SET_FLUID, .name = "v", .type = FLOE_VEC3, .access = FLOE_READ | FLOE_WRITE},
    {0}};

static const floe_stage_desc core_stages[] = {
    {FLOE_SIZED(floe_stage_desc), .name = "neighbours", .run = stage_neighbours, .run_cl = stage_neighbours_cl, .params = nb_params, .attrs = nb_attrs,
     .doc = "cell-sorted neighbour search: counting sort by cell key, neighbour lists of every fluid set "
            "against every set within the support radius"},
    {FLOE_SIZED(floe_stage_desc), .name = "gravity", .run = stage_gravity, .run_cl = stage_gravity_cl, .attrs = gravity_attrs,
     .doc = "start the step's accelerations: a = g on every fluid set (force stages add to a after it)"},
    {FLOE_SIZED(floe_stage_desc), .name = "integrate", .run = stage_integrate, .run_cl = stage_integrate_cl, .attrs = integrate_attrs,
     .doc = "symplectic Euler: v += dt a, then x += dt v"},
    {FLOE_SIZED(floe_stage_desc), .name = "emit", .run = emit_stage, .run_cl = emit_stage, .attrs = emit_attrs,
     .corrects = 1,
     .doc = "sources and sinks (sim:source, sim:sink): remove the particles in sinks, emit new ones with fresh "
            "ids; after integrate (and any collision stage)"},
    {0}};

const floe_module_desc *floe_core_module(void)
{
    static const floe_module_desc d = {
        .size = sizeof(floe_module_desc),
        .abi_major = FLOE_ABI_MAJOR,
        .abi_minor = FLOE_ABI_MINOR,
        .name = "core",
        .version = FLOE_VERSION,
        .summary = "built-in stages: neighbour search, gravity, symplectic Euler integration",
        .stages = core_stages,
        .save = emit_save, /* the sources' progress and the flow counters (state: the context) */
        .load = emit_load,
    };
    return &d;
}

int floe_bench_neighbours(uint32_t n, int dim, int threads, int iters, double *updates_per_s, double *sort_ms,
                          double *build_ms, double *avg_neighbours)
{
    return nb_bench(n, dim, threads, iters, updates_per_s, sort_ms, build_ms, avg_neighbours) ? FLOE_ERR : FLOE_OK;
}
