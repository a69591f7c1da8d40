/* Shared by test_iisph_cl.c and test_dfsph_cl.c: a tank of water on
 * either backend with a pressure solver loaded (`solver`, after "sph"),
 * pipeline stages added by name, and the relative L2 difference of an
 * attribute between two worlds with particles matched by id. */
#ifndef FLOE_TEST_SOLVER_CL_FIXTURE_H
#define FLOE_TEST_SOLVER_CL_FIXTURE_H

#include "ctx.h" /* the module statistics (ctx->stats) */

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cl_fixture.h"

typedef struct world {
    floe_ctx *ctx;
    floe_set fluid, bnd;
} world;

/* W_LIGHT: fluid masses 0.3% below rho0 d^dim. A fresh lattice sums to
 * 0.086% above rho0 (2D, cubic spline at H = 2 d); the solve removes that
 * at once, which in a column 30 rows deep lifts the top rows by 30 x
 * 0.086% of d in one step (0.6 m/s at dt = 1e-4 s, max_correction_speed
 * bounds each particle's share, not the sum over the column; docs/dfsph.md).
 * A lighter lattice starts below rho0, as SPlisHSPlasH's initial sampling
 * does (its particle volume 0.8 (2r)^dim). */
enum { W_PERIODIC = 1, W_OBSTACLE = 2, W_TWO_FLUIDS = 4, W_OPEN_TOP = 8, W_LIGHT = 16, W_LID = 32, W_MOVING = 64 };

/* A tank [0, tank] with water [0, water] at spacing d on the given backend;
 * jitter (fraction of d) perturbs the fluid lattice and gives every
 * particle a velocity, the same for both backends (fixed seed). Options:
 * periodic in x (a floor instead of the tank), a second boundary set (a
 * block inside the water), a second fluid set (a few layers on top), a
 * lid (W_LID: a solid plate two spacings thick one spacing above the
 * floor, across the water, with one row of water caught under it), the
 * lid moving (W_MOVING with W_LID: a moving set, as a rigid body's, of
 * velocity v = (0.3, -0.5, 0.2) m/s and volumes d^dim). */
static world make_world(const char *backend, int dim, float d, const float tank[3], const float water[3],
                        float jitter, unsigned opt, const char *solver)
{
    setenv("FLOE_MODULE_PATH", FLOE_TEST_BUILD_ROOT "/modules", 1);
    floe_sim_def def = floe_sim_default_def();
    def.dim = dim;
    def.spacing = d;
    def.threads = 2;
    def.backend = backend;
    for (int k = 0; k < 3; k++) {
        def.domain_min[k] = -4 * d;
        def.domain_max[k] = tank[k] + 4 * d + (k == 1 ? tank[1] : 0);
    }
    if (opt & W_PERIODIC) {
        def.domain_min[0] = 0;
        def.domain_max[0] = tank[0];
        def.periodic[0] = 1;
    }
    char err[1024];
    world w;
    w.ctx = floe_ctx_create(&def, err, sizeof err);
    cr_assert_not_null(w.ctx, "%s", err);
    cr_assert_eq(floe_ctx_backend(w.ctx), strcmp(backend, "opencl") ? FLOE_BACKEND_CPU : FLOE_BACKEND_OPENCL);
    w.fluid = floe_set_create(w.ctx, "fluid", FLOE_SET_FLUID, 1000);
    w.bnd = floe_set_create(w.ctx, "boundary", FLOE_SET_BOUNDARY, 0);
    float zero[3] = {0, 0, 0};
    if (opt & W_LID) { /* the row under the plate, the plate, the water above it */
        const float row[3] = {water[0], d, water[2]}, above[3] = {0, 3 * d, 0};
        const float lo[3] = {0, d, 0}, hi[3] = {water[0], 3 * d, water[2]};
        floe_set lid = floe_set_create(w.ctx, "lid", FLOE_SET_BOUNDARY, 0);
        cr_assert(floe_fill_box(w.ctx, w.fluid, zero, row, NULL) > 0);
        cr_assert(floe_fill_box(w.ctx, w.fluid, above, water, NULL) > 0);
        cr_assert(floe_boundary_solid_box(w.ctx, lid, lo, hi) > 0);
        if (opt & W_MOVING) {
            cr_assert_eq(ctx_set_moving(w.ctx, lid), FLOE_OK);
            cr_assert_eq(floe_attr_add(w.ctx, lid, "v", FLOE_VEC3), FLOE_OK);
            const uint32_t nb = floe_set_size(w.ctx, lid);
            float *v = floe_attr(w.ctx, lid, "v", FLOE_VEC3), *V = floe_attr(w.ctx, lid, "V", FLOE_F32);
            for (uint32_t i = 0; i < nb; i++) {
                v[3 * i] = 0.3f, v[3 * i + 1] = -0.5f, v[3 * i + 2] = dim == 3 ? 0.2f : 0.0f;
                V[i] = dim == 3 ? d * d * d : d * d;
            }
        }
    } else {
        cr_assert(floe_fill_box(w.ctx, w.fluid, zero, water, NULL) > 0);
    }
    if (!(opt & W_PERIODIC))
        cr_assert(floe_boundary_box(w.ctx, w.bnd, zero, tank, 2, (opt & W_OPEN_TOP) ? FLOE_OPEN_TOP : 0) > 0);
    else {
        float lo[3] = {0, -3 * d, 0}, hi[3] = {tank[0], -0.5f * d, dim == 3 ? tank[2] : 0};
        cr_assert(floe_boundary_solid_box(w.ctx, w.bnd, lo, hi) > 0);
    }
    if (opt & W_OBSTACLE) {
        floe_set ob = floe_set_create(w.ctx, "obstacle", FLOE_SET_BOUNDARY, 0);
        float lo[3] = {water[0] + 2 * d, 0.5f * d, 0}, hi[3] = {water[0] + 5 * d, 4 * d, dim == 3 ? tank[2] : 0};
        cr_assert(floe_boundary_solid_box(w.ctx, ob, lo, hi) > 0);
    }
    if (opt & W_TWO_FLUIDS) {
        floe_set f2 = floe_set_create(w.ctx, "oil", FLOE_SET_FLUID, 800);
        float lo[3] = {0, water[1] + d, 0}, hi[3] = {water[0], water[1] + 4 * d, water[2]};
        cr_assert(floe_fill_box(w.ctx, f2, lo, hi, NULL) > 0);
    }
    if (opt & W_LIGHT) {
        uint32_t n = floe_set_size(w.ctx, w.fluid);
        float *m = floe_attr(w.ctx, w.fluid, "m", FLOE_F32);
        for (uint32_t i = 0; i < n; i++)
            m[i] *= 0.997f;
    }
    if (jitter > 0) {
        uint32_t n = floe_set_size(w.ctx, w.fluid);
        float *x = floe_attr(w.ctx, w.fluid, "x", FLOE_VEC3);
        float *v = floe_attr(w.ctx, w.fluid, "v", FLOE_VEC3);
        uint64_t s = 12345;
        for (uint32_t i = 0; i < 3 * n; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            float r = (float)((s >> 33) & 0xffffff) / (float)0x1000000 - 0.5f;
            if (dim == 2 && i % 3 == 2)
                continue;
            x[i] += jitter * d * r;
            v[i] = 0.5f * r;
        }
    }
    cr_assert_eq(floe_module_load(w.ctx, "sph"), FLOE_OK, "%s", floe_ctx_error(w.ctx));
    cr_assert_eq(floe_module_load(w.ctx, solver), FLOE_OK, "%s", floe_ctx_error(w.ctx));
    return w;
}

static void destroy(world *w) { floe_ctx_destroy(w->ctx); }

static void add(world *w, const char *stage, int n, const floe_param_kv *kv)
{
    cr_assert_eq(floe_pipeline_add(w->ctx, stage, kv, n), FLOE_OK, "%s", floe_ctx_error(w->ctx));
}

#define KV_F(n, x) ((floe_param_kv){(n), FLOE_PARAM_FLOAT, {.f = (x)}})
#define KV_I(n, x) ((floe_param_kv){(n), FLOE_PARAM_INT, {.i = (x)}})
#define KV_S(n, x) ((floe_param_kv){(n), FLOE_PARAM_STRING, {.s = (x)}})

/* Relative L2 difference of an attribute of a set between the two worlds,
 * particles matched by their stable id. */
static double rel_l2_set(world *a, world *b, const char *set, const char *name, floe_type type)
{
    floe_set sa = floe_set_find(a->ctx, set), sb = floe_set_find(b->ctx, set);
    uint32_t n = floe_set_size(a->ctx, sa);
    cr_assert_eq(n, floe_set_size(b->ctx, sb));
    const uint32_t *ida = floe_attr(a->ctx, sa, "id", FLOE_U32);
    const uint32_t *idb = floe_attr(b->ctx, sb, "id", FLOE_U32);
    const float *fa = floe_attr(a->ctx, sa, name, type);
    const float *fb = floe_attr(b->ctx, sb, name, type);
    cr_assert(fa && fb && ida && idb);
    int c = type == FLOE_VEC3 ? 3 : 1;
    uint32_t *where = malloc(n * sizeof *where);
    for (uint32_t i = 0; i < n; i++)
        where[idb[i]] = i;
    double num = 0, den = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t j = where[ida[i]];
        for (int k = 0; k < c; k++) {
            double d = (double)fa[c * i + k] - fb[c * j + k];
            num += d * d;
            den += (double)fa[c * i + k] * fa[c * i + k];
        }
    }
    free(where);
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

static double rel_l2(world *a, world *b, const char *name, floe_type type)
{
    return rel_l2_set(a, b, "fluid", name, type);
}

/* sum and count of a module statistic since the context was made (no run:
 * nothing resets the accumulators) */
static double stat_sum(world *w, const char *name, uint64_t *count)
{
    for (int i = 0; i < w->ctx->nstats; i++)
        if (!strcmp(w->ctx->stats[i].name, name)) {
            if (count)
                *count = w->ctx->stats[i].count;
            return w->ctx->stats[i].sum;
        }
    if (count)
        *count = 0;
    return 0;
}

static const float TANK3[3] = {0.3f, 0.3f, 0.2f}, WATER3[3] = {0.15f, 0.2f, 0.2f};
static const float TANK2[3] = {0.4f, 0.4f, 0}, WATER2[3] = {0.2f, 0.3f, 0};

/* p of two cpu-backend worlds after two steps of 1 ms (relative L2); stages
 * adds each world's pipeline with its options o[b]; destroys the worlds */
static double worlds_p_change(world w[2], void (*stages)(world *, const void *), const void *const o[2])
{
    for (int b = 0; b < 2; b++) {
        stages(&w[b], o[b]);
        for (int s = 0; s < 2; s++)
            cr_assert_eq(floe_step(w[b].ctx, 1e-3), FLOE_OK, "%s", floe_ctx_error(w[b].ctx));
    }
    const double ep = rel_l2(&w[0], &w[1], "p", FLOE_F32);
    destroy(&w[0]);
    destroy(&w[1]);
    return ep;
}

/* How far a moving boundary moves p: the cpu backend's 2D tank with the
 * moving lid (W_LID | W_MOVING) after two steps, against the same lid at
 * rest. make: the test's world (its solver loaded), stages: adds its
 * pipeline with options o. */
typedef world (*world_maker)(const char *backend, int dim, float d, const float tank[3], const float water[3],
                             float jitter, unsigned opt);
static double moving_lid_p_change(world_maker make, void (*stages)(world *, const void *), const void *o)
{
    world w[2];
    for (int b = 0; b < 2; b++)
        w[b] = make("cpu", 2, 0.01f, TANK2, WATER2, 0.3f, W_LID | W_MOVING);
    floe_set lid = floe_set_find(w[0].ctx, "lid"); /* the same lid at rest */
    float *v = floe_attr(w[0].ctx, lid, "v", FLOE_VEC3);
    memset(v, 0, 3 * sizeof *v * floe_set_size(w[0].ctx, lid));
    const void *const oo[2] = {o, o};
    return worlds_p_change(w, stages, oo);
}

#endif
