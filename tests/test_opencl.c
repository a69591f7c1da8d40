/* The OpenCL backend against the C path: device neighbour lists hold the
 * same neighbours, every OpenCL stage agrees with its C stage to float
 * rounding (relative L2 < 1e-5), whole scenes agree after 100 steps within
 * stated tolerances, blow-ups give the same message, kernel build errors
 * name module, file and line, and without a runtime the cpu path runs.
 * Every test that needs a device skips when no OpenCL platform is found
 * (CI installs PoCL, scripts/bootstrap.sh). */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <floe/floe.h>

#include "device.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cl_fixture.h"


typedef struct world {
    floe_ctx *ctx;
    floe_set fluid, bnd;
} world;

/* A tank [0, tank] with water [0, water] at spacing d on the given backend;
 * jitter (fraction of d) perturbs the fluid lattice and gives every
 * particle a velocity, the same for both backends (fixed seed). */
/* metres added to the domain beyond the tank on every axis (a sparse grid) */
static float extra_domain;

static world make_world_h(const char *backend, int dim, float d, const float tank[3], const float water[3],
                          float jitter, int periodic_x, float support)
{
    setenv("FLOE_MODULE_PATH", FLOE_TEST_BUILD_ROOT "/modules", 1);
    floe_sim_def def = floe_sim_default_def();
    def.dim = dim;
    def.spacing = d;
    if (support > 0)
        def.support_factor = support;
    def.threads = 2;
    def.backend = backend;
    for (int k = 0; k < 3; k++) {
        def.domain_min[k] = -4 * d;
        def.domain_max[k] = tank[k] + 4 * d + (k == 1 ? tank[1] : 0) + (k < dim ? extra_domain : 0);
    }
    if (periodic_x) {
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
    cr_assert(floe_fill_box(w.ctx, w.fluid, zero, water, NULL) > 0);
    if (!periodic_x)
        cr_assert(floe_boundary_box(w.ctx, w.bnd, zero, tank, 2, 0) > 0);
    else {
        float lo[3] = {0, -3 * d, 0}, hi[3] = {tank[0], -0.5f * d, dim == 3 ? tank[2] : 0};
        cr_assert(floe_boundary_solid_box(w.ctx, w.bnd, lo, hi) > 0);
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
    cr_assert_eq(floe_module_load(w.ctx, "wcsph"), FLOE_OK, "%s", floe_ctx_error(w.ctx));
    cr_assert_eq(floe_module_load(w.ctx, "sph"), FLOE_OK, "%s", floe_ctx_error(w.ctx));
    return w;
}

static world make_world(const char *backend, int dim, float d, const float tank[3], const float water[3],
                        float jitter, int periodic_x)
{
    return make_world_h(backend, dim, d, tank, water, jitter, periodic_x, 0);
}

static void add(world *w, const char *stage, int n, const floe_param_kv *kv)
{
    cr_assert_eq(floe_pipeline_add(w->ctx, stage, kv, n), FLOE_OK, "%s", floe_ctx_error(w->ctx));
}

#define KV_F(n, x) ((floe_param_kv){(n), FLOE_PARAM_FLOAT, {.f = (x)}})
#define KV_S(n, x) ((floe_param_kv){(n), FLOE_PARAM_STRING, {.s = (x)}})

/* The WCSPH step, cut after `upto` stages (0 = all) */
static void pipeline(world *w, int upto, const char *visc, double alpha, double balpha)
{
    const char *names[] = {"neighbours", "sph.density", "wcsph.pressure", "gravity", "wcsph.viscosity",
                           "wcsph.pressure_force", "integrate"};
    int n = upto ? upto : 7;
    for (int i = 0; i < n; i++) {
        if (!strcmp(names[i], "wcsph.pressure")) {
            floe_param_kv kv[] = {KV_F("speed_of_sound", 20)};
            add(w, names[i], 1, kv);
        } else if (!strcmp(visc, "fused") && !strcmp(names[i], "wcsph.viscosity")) {
            continue; /* XSPH summed inside wcsph.pressure_force */
        } else if (!strcmp(visc, "fused") && !strcmp(names[i], "wcsph.pressure_force")) {
            floe_param_kv kv[] = {KV_F("xsph", alpha)};
            add(w, names[i], 1, kv);
        } else if (!strcmp(names[i], "wcsph.viscosity") && !strcmp(visc, "xsph")) {
            floe_param_kv kv[] = {KV_F("alpha", alpha), KV_F("boundary_alpha", balpha)};
            add(w, "sph.xsph", 2, kv);
        } else if (!strcmp(names[i], "wcsph.viscosity")) {
            floe_param_kv kv[] = {KV_S("kind", visc), KV_F("alpha", alpha), KV_F("boundary_alpha", balpha)};
            add(w, names[i], 3, kv);
        } else {
            add(w, names[i], 0, NULL);
        }
    }
}

/* Relative L2 difference of an attribute between the two worlds, particles
 * matched by their stable id. */
static double rel_l2(world *a, world *b, const char *name, floe_type type)
{
    uint32_t n = floe_set_size(a->ctx, a->fluid);
    cr_assert_eq(n, floe_set_size(b->ctx, b->fluid));
    const uint32_t *ida = floe_attr(a->ctx, a->fluid, "id", FLOE_U32);
    const uint32_t *idb = floe_attr(b->ctx, b->fluid, "id", FLOE_U32);
    const float *fa = floe_attr(a->ctx, a->fluid, name, type);
    const float *fb = floe_attr(b->ctx, b->fluid, name, type);
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

static void destroy(world *w) { floe_ctx_destroy(w->ctx); }

static const float TANK3[3] = {0.3f, 0.3f, 0.2f}, WATER3[3] = {0.15f, 0.2f, 0.2f};
static const float TANK2[3] = {0.4f, 0.4f, 0}, WATER2[3] = {0.2f, 0.3f, 0};

/* ---- backend layer ------------------------------------------------------ */

Test(opencl, no_runtime_runs_on_the_cpu)
{
    setenv("FLOE_OPENCL_LIB", "/nonexistent/libOpenCL.so.1", 1);
    floe_sim_def def = floe_sim_default_def();
    def.spacing = 0.1f;
    char err[1024] = "";
    def.backend = "opencl";
    floe_ctx *ctx = floe_ctx_create(&def, err, sizeof err);
    cr_assert_null(ctx);
    cr_assert_not_null(strstr(err, "no OpenCL runtime"), "%s", err);
    def.backend = "auto";
    ctx = floe_ctx_create(&def, err, sizeof err);
    cr_assert_not_null(ctx, "%s", err);
    cr_assert_eq(floe_ctx_backend(ctx), FLOE_BACKEND_CPU);
    cr_assert_str_eq(floe_ctx_backend_name(ctx), "cpu");
    floe_ctx_destroy(ctx);
    def.backend = "cuda";
    cr_assert_null(floe_ctx_create(&def, err, sizeof err));
    cr_assert_not_null(strstr(err, "cpu, opencl or auto"), "%s", err);
    cr_assert_lt(floe_cl_devices(count_line, NULL), 0);
}

Test(opencl, device_selection)
{
    need_opencl();
    floe_sim_def def = floe_sim_default_def();
    def.spacing = 0.1f;
    def.backend = "opencl";
    def.device = "0:0";
    char err[1024] = "";
    floe_ctx *ctx = floe_ctx_create(&def, err, sizeof err);
    cr_assert_not_null(ctx, "%s", err);
    cr_assert_not_null(strstr(floe_ctx_backend_name(ctx), "opencl: "));
    floe_ctx_destroy(ctx);
    def.device = "7:9";
    cr_assert_null(floe_ctx_create(&def, err, sizeof err));
    cr_assert_not_null(strstr(err, "no OpenCL device 7:9"), "%s", err);
}

Test(opencl, kernel_build_error_names_module_file_and_line)
{
    need_opencl();
    char dir[] = "/tmp/floe_cl_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/broken", dir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/broken/bad.cl", dir);
    FILE *f = fopen(path, "w");
    fputs("__kernel void k(__global float *a)\n{\n    a[0] = undefined_thing;\n}\n", f);
    fclose(f);
    setenv("FLOE_KERNEL_PATH", dir, 1);
    world w = make_world("opencl", 2, 0.02f, TANK2, WATER2, 0, 0);
    const floe_api *api = floe_core_api();
    cr_assert_null(api->cl_program(w.ctx, "broken", "bad.cl"));
    const char *msg = floe_ctx_error(w.ctx);
    cr_log_info("%s", msg);
    cr_assert_not_null(strstr(msg, "module 'broken'"), "%s", msg);
    cr_assert_not_null(strstr(msg, "bad.cl:3"), "no file:line in: %s", msg);
    cr_assert_null(api->cl_program(w.ctx, "broken", "missing.cl"));
    cr_assert_not_null(strstr(floe_ctx_error(w.ctx), "not found"));
    /* the real kernels build from the source tree */
    cr_assert_not_null(api->cl_program(w.ctx, "wcsph", "wcsph.cl"), "%s", floe_ctx_error(w.ctx));
    destroy(&w);
    unlink(path);
}

/* ---- neighbour search ---------------------------------------------------- */

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static void same_neighbours_in(int dim, int periodic, const float tank[3], const float water[3])
{
    need_opencl();
    float d = dim == 3 ? 0.02f : 0.01f;
    world c = make_world("cpu", dim, d, tank, water, 0.3f, periodic);
    world g = make_world("opencl", dim, d, tank, water, 0.3f, periodic);
    floe_param_kv every[] = {{"reorder_every", FLOE_PARAM_INT, {.i = 1}}}; /* reorder on the device too */
    add(&c, "neighbours", 1, every);
    add(&g, "neighbours", 1, every);
    cr_assert_eq(floe_step(c.ctx, 1e-4), FLOE_OK, "%s", floe_ctx_error(c.ctx));
    cr_assert_eq(floe_step(g.ctx, 1e-4), FLOE_OK, "%s", floe_ctx_error(g.ctx));
    /* both reorder along the same stable sort: identical particle order */
    uint32_t n = floe_set_size(c.ctx, c.fluid);
    cr_assert_eq(memcmp(floe_attr(c.ctx, c.fluid, "id", FLOE_U32), floe_attr(g.ctx, g.fluid, "id", FLOE_U32),
                        n * 4), 0, "device reorder differs from the host's");
    const floe_api *api = floe_core_api();
    floe_set sets[2] = {c.fluid, c.bnd};
    uint64_t total = 0;
    for (int t = 0; t < 2; t++) {
        const floe_nlist *lc = api->neighbours(c.ctx, c.fluid, sets[t]);
        const floe_nlist *lg = api->neighbours(g.ctx, g.fluid, t ? g.bnd : g.fluid);
        cr_assert(lc && lg, "%s", floe_ctx_error(g.ctx));
        cr_assert_eq(lc->n, lg->n);
        uint32_t a[512], b[512];
        for (uint32_t i = 0; i < n; i++) {
            cr_assert_eq(lc->count[i], lg->count[i], "particle %u, target %d: %u neighbours on the cpu, %u on the device",
                         i, t, lc->count[i], lg->count[i]);
            uint32_t k = lc->count[i];
            cr_assert_leq(k, 512);
            memcpy(a, lc->idx + (size_t)i * lc->stride, k * 4);
            memcpy(b, lg->idx + (size_t)i * lg->stride, k * 4);
            /* the device's lists on the host are padded as nb_build's are */
            const uint32_t *row = lg->idx + (size_t)i * lg->stride;
            cr_assert_eq(lg->stride % 8, 0u, "host copy of the device lists: stride %u", lg->stride);
            for (uint32_t p = k; k > 0 && p < ((k + 7u) & ~7u) && p < lg->stride; p++)
                cr_assert_eq(row[p], row[0], "particle %u, target %d: pad slot %u holds %u, not %u", i, t, p,
                             row[p], row[0]);
            qsort(a, k, 4, cmp_u32);
            qsort(b, k, 4, cmp_u32);
            cr_assert_eq(memcmp(a, b, k * 4), 0, "particle %u, target %d: other neighbours", i, t);
            total += k;
        }
    }
    cr_log_info("%u particles, %.1f neighbours each: same sets on both paths", n, (double)total / n);
    destroy(&c);
    destroy(&g);
}

static void same_neighbours(int dim, int periodic)
{
    same_neighbours_in(dim, periodic, dim == 3 ? TANK3 : TANK2, dim == 3 ? WATER3 : WATER2);
}

/* water long along x: rows of cells with more particles than a work group
 * of the list build (128), whose queries then share their candidate rows
 * (nb_build_local's staged path; the small tanks above take the other) */
static const float LONG3[3] = {1.6f, 0.12f, 0.1f}, LONG_WATER3[3] = {1.6f, 0.1f, 0.1f};
static const float LONG2[3] = {1.6f, 0.12f, 0}, LONG_WATER2[3] = {1.6f, 0.06f, 0};

Test(opencl, neighbours_same_sets_3d, .timeout = FLOE_TIMEOUT(600)) { same_neighbours(3, 0); }
Test(opencl, neighbours_same_sets_long_rows, .timeout = FLOE_TIMEOUT(600))
{
    same_neighbours_in(3, 0, LONG3, LONG_WATER3);
    same_neighbours_in(2, 0, LONG2, LONG_WATER2);
}
Test(opencl, neighbours_same_sets_2d, .timeout = FLOE_TIMEOUT(600)) { same_neighbours(2, 0); }
Test(opencl, neighbours_same_sets_periodic, .timeout = FLOE_TIMEOUT(600)) { same_neighbours(2, 1); }
/* the water in a corner of a domain of about 2.9 million cells: the
 * cell-start scan runs over some 700 blocks, in two levels (neighbours.cl
 * scan_block, scan_add) */
Test(opencl, neighbours_same_sets_sparse_grid, .timeout = FLOE_TIMEOUT(600))
{
    extra_domain = 5.2f;
    same_neighbours(3, 0);
}

/* ---- single stages -------------------------------------------------------- */

typedef struct cmp_attr {
    const char *name;
    floe_type type;
} cmp_attr;

/* One step of the pipeline cut after `upto` stages on both paths; each
 * attribute listed must agree to float rounding. */
static void stage_agrees(int dim, int upto, const char *visc, double balpha, const cmp_attr *attrs, int nattrs)
{
    need_opencl();
    const float *tank = dim == 3 ? TANK3 : TANK2, *water = dim == 3 ? WATER3 : WATER2;
    float d = dim == 3 ? 0.02f : 0.01f;
    world c = make_world("cpu", dim, d, tank, water, 0.2f, 0);
    world g = make_world("opencl", dim, d, tank, water, 0.2f, 0);
    pipeline(&c, upto, visc, 0.1, balpha);
    pipeline(&g, upto, visc, 0.1, balpha);
    cr_assert_eq(floe_step(c.ctx, 2e-4), FLOE_OK, "%s", floe_ctx_error(c.ctx));
    cr_assert_eq(floe_step(g.ctx, 2e-4), FLOE_OK, "%s", floe_ctx_error(g.ctx));
    for (int k = 0; k < nattrs; k++) {
        double e = rel_l2(&c, &g, attrs[k].name, attrs[k].type);
        cr_log_info("%dD, %d stages: '%s' relative L2 difference %.3g", dim, upto ? upto : 7, attrs[k].name, e);
        cr_assert_lt(e, 1e-5, "'%s' differs by %.3g (relative L2)", attrs[k].name, e);
    }
    destroy(&c);
    destroy(&g);
}

static const cmp_attr RHO[] = {{"rho", FLOE_F32}}, P[] = {{"p", FLOE_F32}}, A[] = {{"a", FLOE_VEC3}};
static const cmp_attr XV[] = {{"x", FLOE_VEC3}, {"v", FLOE_VEC3}, {"rho", FLOE_F32}, {"p", FLOE_F32}};

Test(opencl, stage_density, .timeout = FLOE_TIMEOUT(600))
{
    stage_agrees(3, 2, "xsph", 0, RHO, 1);
    stage_agrees(2, 2, "xsph", 0, RHO, 1);
}
Test(opencl, stage_pressure, .timeout = FLOE_TIMEOUT(600)) { stage_agrees(3, 3, "xsph", 0, P, 1); }
Test(opencl, stage_gravity, .timeout = FLOE_TIMEOUT(600)) { stage_agrees(3, 4, "xsph", 0, A, 1); }
Test(opencl, stage_viscosity_xsph, .timeout = FLOE_TIMEOUT(600))
{
    stage_agrees(3, 5, "xsph", 0.05, A, 1);
    stage_agrees(2, 5, "xsph", 0, A, 1);
}
Test(opencl, stage_viscosity_artificial, .timeout = FLOE_TIMEOUT(600)) { stage_agrees(3, 5, "artificial", 0.05, A, 1); }
Test(opencl, stage_pressure_force, .timeout = FLOE_TIMEOUT(600)) { stage_agrees(3, 6, "xsph", 0, A, 1); }
Test(opencl, stage_pressure_force_xsph, .timeout = FLOE_TIMEOUT(600))
{
    stage_agrees(3, 6, "fused", 0, A, 1);
    stage_agrees(2, 6, "fused", 0, A, 1);
}
Test(opencl, stage_integrate, .timeout = FLOE_TIMEOUT(600)) { stage_agrees(3, 0, "xsph", 0, XV, 4); }

/* ---- mixed pipelines and lazy copies ------------------------------------ */

static int host_reads_rho(const floe_stage_call *c)
{
    floe_set s = floe_set_find(c->ctx, "fluid");
    const float *rho = floe_attr(c->ctx, s, "rho", FLOE_F32);
    return rho && rho[0] > 0 ? FLOE_OK : FLOE_ERR;
}

/* A C stage (hello.damp has no OpenCL path) and a host stage between
 * OpenCL stages: the backend moves the data both ways and the result still
 * agrees with the all-C pipeline. */
Test(opencl, mixed_pipeline_agrees, .timeout = FLOE_TIMEOUT(600))
{
    need_opencl();
    world w[2];
    for (int b = 0; b < 2; b++) {
        w[b] = make_world(b ? "opencl" : "cpu", 3, 0.02f, TANK3, WATER3, 0.2f, 0);
        cr_assert_eq(floe_module_load(w[b].ctx, "hello"), FLOE_OK);
        pipeline(&w[b], 2, "xsph", 0.1, 0);
        cr_assert_eq(floe_pipeline_add_fn(w[b].ctx, "host_reads_rho", host_reads_rho, NULL), FLOE_OK);
        floe_param_kv pk[] = {KV_F("speed_of_sound", 20)};
        add(&w[b], "wcsph.pressure", 1, pk);
        add(&w[b], "gravity", 0, NULL);
        floe_param_kv dk[] = {KV_F("rate", 5)};
        add(&w[b], "hello.damp", 1, dk);
        add(&w[b], "wcsph.pressure_force", 0, NULL);
        add(&w[b], "integrate", 0, NULL);
        for (int s = 0; s < 3; s++)
            cr_assert_eq(floe_step(w[b].ctx, 2e-4), FLOE_OK, "%s", floe_ctx_error(w[b].ctx));
    }
    for (int k = 0; k < 4; k++) {
        double e = rel_l2(&w[0], &w[1], XV[k].name, XV[k].type);
        cr_log_info("mixed pipeline, 3 steps: '%s' relative L2 difference %.3g", XV[k].name, e);
        cr_assert_lt(e, 1e-5);
    }
    destroy(&w[0]);
    destroy(&w[1]);
}

Test(opencl, attributes_copied_lazily, .timeout = FLOE_TIMEOUT(600))
{
    need_opencl();
    world g = make_world("opencl", 2, 0.01f, TANK2, WATER2, 0.2f, 0);
    pipeline(&g, 0, "xsph", 0.1, 0);
    cr_assert_eq(floe_step(g.ctx, 2e-4), FLOE_OK, "%s", floe_ctx_error(g.ctx));
    pset *p = ctx_set(g.ctx, g.fluid);
    attr *rho = pset_attr(p, "rho"), *m = pset_attr(p, "m"), *x = pset_attr(p, "x");
    const unsigned HOST = DEV_HOST_STALE, DEV = DEV_DEVICE_STALE;
    /* written on the device, not copied back; read-only ones valid on both */
    cr_assert_eq(dev_attr_state(g.ctx, p, rho), HOST);
    cr_assert(dev_attr_state(g.ctx, p, x) & HOST);
    cr_assert_eq(dev_attr_state(g.ctx, p, m), 0u);
    /* a host access copies back, then counts as a write */
    const float *r = floe_attr(g.ctx, g.fluid, "rho", FLOE_F32);
    cr_assert_eq(dev_attr_state(g.ctx, p, rho), DEV);
    cr_assert_gt(r[0], 500.0f);
    cr_assert_eq(dev_attr_state(g.ctx, p, m), 0u, "m untouched");
    /* the next step uploads rho again and agrees with itself */
    cr_assert_eq(floe_step(g.ctx, 2e-4), FLOE_OK, "%s", floe_ctx_error(g.ctx));
    cr_assert(!(dev_attr_state(g.ctx, p, rho) & DEV));
    destroy(&g);
}

/* ---- blow-ups --------------------------------------------------------------- */

Test(opencl, blowup_message_matches_cpu, .timeout = FLOE_TIMEOUT(600))
{
    need_opencl();
    char msg[2][2048];
    for (int b = 0; b < 2; b++) {
        world w = make_world(b ? "opencl" : "cpu", 3, 0.02f, TANK3, WATER3, 0, 0);
        pipeline(&w, 0, "xsph", 0.1, 0);
        float *m = floe_attr(w.ctx, w.fluid, "m", FLOE_F32);
        m[77] = NAN;
        cr_assert_eq(floe_step(w.ctx, 2e-4), FLOE_ERR_BLOWUP);
        snprintf(msg[b], sizeof msg[b], "%s", floe_ctx_error(w.ctx));
        destroy(&w);
    }
    cr_log_info("cpu:    %s", msg[0]);
    cr_log_info("opencl: %s", msg[1]);
    cr_assert_not_null(strstr(msg[1], "after stage 'sph.density'"), "%s", msg[1]);
    /* the same words, but the position: the OpenCL path reads the flags at
     * the end of the step, so it quotes where the particle is then */
    for (int b = 0; b < 2; b++) {
        char *at = strstr(msg[b], " at ("), *close = at ? strchr(at, ')') : NULL;
        cr_assert(at && close);
        memmove(at, close + 1, strlen(close + 1) + 1);
    }
    cr_assert_str_eq(msg[0], msg[1]);
}

/* ---- whole scenes ---------------------------------------------------------- */

/* 100 fixed steps of a scene on both paths. Tolerances (stated in
 * docs/opencl.md): positions relative L2 < tol_x, average density error
 * within 1e-4 (absolute, of rho/rho0 - 1), total energy within tol_e. */
static void scene_agrees(int dim, const float tank[3], const float water[3], float d, double tol_x, double tol_e,
                         const char *what)
{
    need_opencl();
    world w[2];
    cl_summary s[2];
    for (int b = 0; b < 2; b++) {
        w[b] = make_world(b ? "opencl" : "cpu", dim, d, tank, water, 0, 0);
        pipeline(&w[b], 0, "xsph", 0.02, 0);
        floe_run_def r = floe_run_default_def();
        r.dt = 2e-4;
        r.fps = 1.0 / (100 * r.dt);
        r.frames = 1;
        r.progress = 0;
        r.on_frame = cl_grab;
        r.user = &s[b];
        floe_run_summary sum;
        cr_assert_eq(floe_run(w[b].ctx, &r, &sum), FLOE_OK, "%s", floe_ctx_error(w[b].ctx));
        cr_assert_eq(sum.steps, 100);
    }
    double ex = rel_l2(&w[0], &w[1], "x", FLOE_VEC3), ev = rel_l2(&w[0], &w[1], "v", FLOE_VEC3);
    double e0 = s[0].kinetic + s[0].potential, e1 = s[1].kinetic + s[1].potential;
    cr_log_info("%s, 100 steps: x rel L2 %.3g, v rel L2 %.3g, density error %.5f%% vs %.5f%%, energy %.6g vs %.6g J "
                "(rel %.3g)", what, ex, ev, 100 * s[0].err_avg, 100 * s[1].err_avg, e0, e1, fabs(e1 - e0) / fabs(e0));
    cr_assert_lt(ex, tol_x);
    cr_assert_lt(fabs(s[0].err_avg - s[1].err_avg), 1e-4);
    cr_assert_lt(fabs(e1 - e0) / fabs(e0), tol_e);
    destroy(&w[0]);
    destroy(&w[1]);
}

Test(opencl, scene_hydrostatic_tank_2d, .timeout = FLOE_TIMEOUT(900))
{
    const float tank[3] = {0.3f, 0.4f, 0}, water[3] = {0.3f, 0.3f, 0};
    scene_agrees(2, tank, water, 0.01f, 1e-5, 1e-5, "hydrostatic tank 2D");
}

Test(opencl, scene_dam_break_3d, .timeout = FLOE_TIMEOUT(900))
{
    const float tank[3] = {0.5f, 0.3f, 0.2f}, water[3] = {0.16f, 0.2f, 0.2f};
    scene_agrees(3, tank, water, 0.02f, 1e-5, 1e-5, "dam break 3D");
}

/* In a run, the OpenCL path reads the blow-up checks of 8 steps at once,
 * while later steps run (docs/opencl.md): the report still names the step
 * and stage where the NaN appeared, as the C path does, and comes before
 * the frame's statistics. A NaN mass set after frame 1 blows up frame 2's
 * first step. */
static int poison_after_frame_1(floe_ctx *ctx, const floe_frame_stats *st, void *u)
{
    (void)u;
    if (st->frame == 1) {
        float *m = floe_attr(ctx, floe_set_find(ctx, "fluid"), "m", FLOE_F32);
        m[77] = NAN;
    }
    return 0;
}

/* frames of `per_frame` steps; the NaN appears at step per_frame; with_c:
 * a C stage (hello.damp) ends each step, so the checks are settled before it */
static void blowup_in_a_run(int per_frame, int with_c)
{
    need_opencl();
    char msg[2][2048];
    for (int b = 0; b < 2; b++) {
        world w = make_world(b ? "opencl" : "cpu", 3, 0.02f, TANK3, WATER3, 0, 0);
        pipeline(&w, 0, "xsph", 0.1, 0);
        if (with_c) {
            cr_assert_eq(floe_module_load(w.ctx, "hello"), FLOE_OK);
            floe_param_kv dk[] = {KV_F("rate", 0.5)};
            add(&w, "hello.damp", 1, dk);
        }
        floe_run_def r = floe_run_default_def();
        r.dt = 2e-4;
        r.fps = 1.0 / (per_frame * r.dt);
        r.frames = 3;
        r.progress = 0;
        r.on_frame = poison_after_frame_1;
        cr_assert_eq(floe_run(w.ctx, &r, NULL), FLOE_ERR_BLOWUP, "%s", floe_ctx_error(w.ctx));
        /* the device reads the flags of 8 steps at once and looks at them
         * when the next 8 are read, or at the end of the frame: it may run
         * on, but not past the end of the frame */
        uint64_t at = floe_ctx_info(w.ctx)->step;
        cr_assert(at == (uint64_t)per_frame || (b && at > (uint64_t)per_frame && at <= 2 * (uint64_t)per_frame),
                  "the run went on to step %llu", (unsigned long long)at);
        snprintf(msg[b], sizeof msg[b], "%s", floe_ctx_error(w.ctx));
        destroy(&w);
    }
    cr_log_info("cpu:    %s", msg[0]);
    cr_log_info("opencl: %s", msg[1]);
    char want[64];
    snprintf(want, sizeof want, "step %d,", per_frame);
    cr_assert_not_null(strstr(msg[1], want), "%s", msg[1]);
    for (int b = 0; b < 2; b++) {
        char *at = strstr(msg[b], " at ("), *close = at ? strchr(at, ')') : NULL;
        cr_assert(at && close);
        memmove(at, close + 1, strlen(close + 1) + 1);
    }
    cr_assert_str_eq(msg[0], msg[1]);
}

/* inside the first window of the frame (reported at the frame's end) */
Test(opencl, blowup_in_a_run_names_its_step, .timeout = FLOE_TIMEOUT(600)) { blowup_in_a_run(6, 0); }
/* two full windows later (reported when the next window fills) */
Test(opencl, blowup_in_a_long_frame_names_its_step, .timeout = FLOE_TIMEOUT(600)) { blowup_in_a_run(40, 0); }
/* found when the C stage settles the checks, reported at the step's end */
Test(opencl, blowup_before_a_c_stage_names_its_step, .timeout = FLOE_TIMEOUT(600)) { blowup_in_a_run(40, 1); }

/* Particles added between runs: the set grows, the backend reallocates the
 * device buffers, every kernel gets new buffer arguments, and the grown
 * scene still agrees with the C path. (Whether a released handle comes
 * back for a new buffer is the runtime's affair: PoCL gives new ones, so
 * this does not show that the argument cache forgets them on release.) */
Test(opencl, set_grown_between_runs_agrees, .timeout = FLOE_TIMEOUT(600))
{
    need_opencl();
    world w[2];
    for (int b = 0; b < 2; b++) {
        w[b] = make_world(b ? "opencl" : "cpu", 3, 0.02f, TANK3, WATER3, 0, 0);
        pipeline(&w[b], 0, "xsph", 0.02, 0);
        floe_run_def r = floe_run_default_def();
        r.dt = 2e-4;
        r.fps = 1.0 / (20 * r.dt);
        r.frames = 1;
        r.progress = 0;
        cr_assert_eq(floe_run(w[b].ctx, &r, NULL), FLOE_OK, "%s", floe_ctx_error(w[b].ctx));
        uint32_t n0 = floe_set_size(w[b].ctx, w[b].fluid);
        /* a second block, about as large as the first, on the tank's far side */
        float lo[3] = {0.16f, 0.0f, 0.0f}, hi[3] = {0.3f, 0.2f, 0.2f};
        cr_assert(floe_fill_box(w[b].ctx, w[b].fluid, lo, hi, NULL) > 0);
        cr_assert(floe_set_size(w[b].ctx, w[b].fluid) > n0 + n0 / 2);
        cr_assert_eq(floe_run(w[b].ctx, &r, NULL), FLOE_OK, "%s", floe_ctx_error(w[b].ctx));
    }
    double ex = rel_l2(&w[0], &w[1], "x", FLOE_VEC3), ev = rel_l2(&w[0], &w[1], "v", FLOE_VEC3);
    cr_log_info("grown set, 20 + 20 steps: x rel L2 %.3g, v rel L2 %.3g", ex, ev);
    cr_assert_lt(ex, 1e-5);
    cr_assert_lt(ev, 1e-3);
    destroy(&w[0]);
    destroy(&w[1]);
}

/* Neighbour lists are built without waiting for their overflow check
 * (core/src/opencl/lists.c, pipeline.c): stages that only overwrite what they write
 * (sph.density, wcsph.pressure, gravity) run on them at once, and the
 * check is settled before wcsph.pressure_force. With support 3.5 d in 2D the
 * first build overflows the initial stride of 32: the lists are rebuilt
 * wider and the three stages run again. The run must be bitwise the one
 * that waits for the check after every build (FLOE_CL_NB_SPECULATE=0). */
Test(opencl, speculative_lists_rebuilt_and_stages_replayed, .timeout = FLOE_TIMEOUT(600))
{
    need_opencl();
    const float support = 3.5f, d = 0.01f;
    /* the overflow happens: more than 32 neighbours on the C path's lists */
    world c = make_world_h("cpu", 2, d, TANK2, WATER2, 0.3f, 0, support);
    pipeline(&c, 1, "fused", 0.01, 0);
    cr_assert_eq(floe_step(c.ctx, 2e-4), FLOE_OK, "%s", floe_ctx_error(c.ctx));
    const floe_nlist *nl = floe_core_api()->neighbours(c.ctx, c.fluid, c.fluid);
    cr_assert_not_null(nl);
    uint32_t nmax = 0;
    for (uint32_t i = 0; i < floe_set_size(c.ctx, c.fluid); i++)
        nmax = nl->count[i] > nmax ? nl->count[i] : nmax;
    cr_assert(nmax > 32, "only %u neighbours: the initial stride does not overflow", nmax);
    destroy(&c);

    float *x[2] = {NULL, NULL};
    uint32_t n[2];
    setenv("FLOE_CL_NEIGHBOURS", "lists", 1); /* the lists built by the neighbours stage (cells: on demand) */
    for (int k = 0; k < 2; k++) {
        setenv("FLOE_CL_NB_SPECULATE", k ? "1" : "0", 1);
        world w = make_world_h("opencl", 2, d, TANK2, WATER2, 0.3f, 0, support);
        pipeline(&w, 0, "fused", 0.01, 0);
        for (int s = 0; s < 30; s++)
            cr_assert_eq(floe_step(w.ctx, 2e-4), FLOE_OK, "%s", floe_ctx_error(w.ctx));
        n[k] = floe_set_size(w.ctx, w.fluid);
        const float *xs = floe_attr(w.ctx, w.fluid, "x", FLOE_VEC3);
        const uint32_t *id = floe_attr(w.ctx, w.fluid, "id", FLOE_U32);
        x[k] = malloc(3 * (size_t)n[k] * sizeof(float));
        for (uint32_t i = 0; i < n[k]; i++)
            memcpy(x[k] + 3 * (size_t)id[i], xs + 3 * (size_t)i, 3 * sizeof(float));
        destroy(&w);
    }
    unsetenv("FLOE_CL_NB_SPECULATE");
    unsetenv("FLOE_CL_NEIGHBOURS");
    cr_assert_eq(n[0], n[1]);
    cr_assert(memcmp(x[0], x[1], 3 * (size_t)n[0] * sizeof(float)) == 0,
              "speculative lists and waiting for the counts give different runs");
    free(x[0]);
    free(x[1]);
}
