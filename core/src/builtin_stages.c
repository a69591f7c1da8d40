/* The core's own stages, registered as the built-in module "core" through
 * the same descriptors as any plugin: neighbours, gravity, integrate.
 * Scenes name them without prefix ("neighbours") or as "core.neighbours". */
#include "decomp.h"
#include "device.h"
#include "emit.h"

#include "floe/kernel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- neighbours ------------------------------------------------------- */

enum { NB_REORDER_EVERY, NB_METHOD, NB_ORDER, NB_SKIN };

/* method "sorted_keys": Kipfer & Westermann's search (neighbours_sorted.c) */
static int sorted_keys(const floe_stage_call *c) { return c->param[NB_METHOD].s && c->param[NB_METHOD].s[0] == 's'; }

static int stage_neighbours(const floe_stage_call *c)
{
    floe_ctx *ctx = c->ctx;
    if (sorted_keys(c))
        return ctx_neighbours_sorted(ctx);
    int64_t every = c->param[NB_REORDER_EVERY].i;
    /* MPI: the owned particles are reordered before the ghosts are added
     * (decomp.c); a reorder here would mix the two */
    int reorder = every > 0 && ctx->nb_updates % (uint64_t)every == 0 && !ctx->dd;
    ctx->nb_by_id = c->param[NB_ORDER].s && !strcmp(c->param[NB_ORDER].s, "id");
    return ctx_neighbours_verlet(ctx, (float)c->param[NB_SKIN].f, reorder);
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
        dev_moved(ctx, p); /* the device's sort and lists too */
    }
    ctx->nb_valid = 0;
    return FLOE_OK;
}

/* device paths (run only with a backend, device.h; kernels/core/ for OpenCL) */
static int stage_neighbours_cl(const floe_stage_call *c)
{
    floe_ctx *ctx = c->ctx;
    if (sorted_keys(c))
        return ctx_fail(ctx, FLOE_ERR_ARG, "neighbours: method \"sorted_keys\" runs on the cpu backend only");
    int64_t every = c->param[NB_REORDER_EVERY].i;
    int reorder = every > 0 && ctx->nb_updates % (uint64_t)every == 0 && !ctx->dd; /* MPI: as above */
    ctx->nb_by_id = c->param[NB_ORDER].s && !strcmp(c->param[NB_ORDER].s, "id"); /* the cell sort's order */
    ctx->ksums_valid = 0; /* the device's lists come without kernel sums */
    ctx->nb_skin_dev = (float)c->param[NB_SKIN].f;
    return ctx->dev->ops->neighbours(ctx, reorder);
}

static int stage_gravity_cl(const floe_stage_call *c) { return c->ctx->dev->ops->gravity(c->ctx); }
static int stage_integrate_cl(const floe_stage_call *c) { return c->ctx->dev->ops->integrate(c->ctx); }

static const floe_param_desc nb_params[] = {
    {FLOE_SIZED(floe_param_desc), .name = "reorder_every", .type = FLOE_PARAM_INT, .def = 10, .min = 0, .max = 1e9,
     .unit = "steps", .doc = "reorder particles along the cell key every N updates for memory locality (0 = never)"},
    {FLOE_SIZED(floe_param_desc), .name = "method", .type = FLOE_PARAM_STRING, .def_str = "cells",
     .choices = "cells|sorted_keys", .unit = "",
     .doc = "cells: cell-sorted search with 3x3(x3) blocks; sorted_keys: Kipfer & Westermann's linear scan over "
            "sorted bin keys with staggered grids (cpu backend, no periodic domains; docs/neighbours.md)"},
    {FLOE_SIZED(floe_param_desc), .name = "order", .type = FLOE_PARAM_STRING, .def_str = "index",
     .choices = "index|id", .unit = "",
     .doc = "order of a cell's particles in the lists (method cells, cpu): index (as they lie in memory) or id "
            "(the same lists, so the same floats, whatever the memory order: after reorders, and on any number "
            "of MPI ranks; it costs about 14% of the reference dam break's step; docs/mpi.md)"},
    {FLOE_SIZED(floe_param_desc), .name = "skin", .type = FLOE_PARAM_FLOAT, .def = 0, .min = 0, .max = 1,
     .unit = "support radii",
     .doc = "cells method: Verlet lists within the support radius plus this skin, rebuilt when "
            "two particles may have closed it, cut to the support radius every step (0, the default: build every "
            "step, faster on the reference dam break on the cpu; periodic domains, order = id and MPI runs build "
            "every step, and on the OpenCL backend also cell walks and sets placed late; docs/neighbours.md, "
            "docs/opencl.md)"},
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
