/* The OpenCL paths of the viscosity and tension modules against their C
 * paths (PoCL in CI):
 *  - every stage and variant after one step (neighbours, sph.density, the
 *    stage): the acceleration it adds and the attributes it writes (colour,
 *    colour_grad2, normal) agree to float rounding, relative L2 < 1e-5; in
 *    3D, 2D, on a periodic axis, and with two fluid and two boundary sets
 *    (several launches per pass, partial sums kept on the device);
 *  - the intermediates stay on the device (not copied back in a step);
 *  - whole scenes, 100 steps: a 2D dam break with viscosity.kim and
 *    viscosity.laminar, zero-gravity droplets with tension.he +
 *    tension.air_pressure (2D) and tension.akinci + sph.xsph (3D).
 * Every test skips when no OpenCL platform is found. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <floe/floe.h>

#include "device.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_fixture.h"


enum { W_PERIODIC = 1, W_MULTI = 2 };

typedef struct world {
    floe_ctx *ctx;
    floe_set fluid[2];
    int nfluid;
} world;

/* fixed-seed jitter of positions (fraction `jitter` of d) and velocities of a set */
static void jitter_set(floe_ctx *ctx, floe_set s, int dim, float d, float jitter, uint64_t seed)
{
    uint32_t n = floe_set_size(ctx, s);
    float *x = floe_attr(ctx, s, "x", FLOE_VEC3);
    float *v = floe_attr(ctx, s, "v", FLOE_VEC3);
    for (uint32_t i = 0; i < 3 * n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        float r = (float)((seed >> 33) & 0xffffff) / (float)0x1000000 - 0.5f;
        if (dim == 2 && i % 3 == 2)
            continue;
        x[i] += jitter * d * r;
        v[i] = 0.5f * r;
    }
}

/* A tank with a jittered block of water moving at random, on the given
 * backend. W_PERIODIC: periodic along x with a solid floor, the water over
 * the whole period; W_MULTI: a second fluid set (rest density 800) next to
 * the water and a second boundary set (a solid block) next to that. */
static world make_world(const char *backend, int dim, int flags)
{
    setenv("FLOE_MODULE_PATH", FLOE_TEST_BUILD_ROOT "/modules", 1);
    const float d = dim == 3 ? 0.02f : 0.01f;
    const float tank[3] = {dim == 3 ? 0.3f : 0.4f, dim == 3 ? 0.3f : 0.4f, dim == 3 ? 0.2f : 0};
    float water[3] = {dim == 3 ? 0.12f : 0.2f, dim == 3 ? 0.2f : 0.3f, dim == 3 ? 0.2f : 0};
    const int periodic = flags & W_PERIODIC;
    floe_sim_def def = floe_sim_default_def();
    def.dim = dim;
    def.spacing = d;
    def.threads = 2;
    def.backend = backend;
    for (int k = 0; k < 3; k++) {
        def.domain_min[k] = -4 * d;
        def.domain_max[k] = tank[k] + 4 * d + (k == 1 ? tank[1] : 0);
    }
    if (periodic) {
        def.domain_min[0] = 0;
        def.domain_max[0] = tank[0];
        def.periodic[0] = 1;
        water[0] = tank[0];
    }
    char err[1024];
    world w;
    w.ctx = floe_ctx_create(&def, err, sizeof err);
    cr_assert_not_null(w.ctx, "%s", err);
    cr_assert_eq(floe_ctx_backend(w.ctx), strcmp(backend, "opencl") ? FLOE_BACKEND_CPU : FLOE_BACKEND_OPENCL);
    w.nfluid = 1;
    w.fluid[0] = floe_set_create(w.ctx, "fluid", FLOE_SET_FLUID, 1000);
    floe_set bnd = floe_set_create(w.ctx, "boundary", FLOE_SET_BOUNDARY, 0);
    float zero[3] = {0, 0, 0};
    cr_assert(floe_fill_box(w.ctx, w.fluid[0], zero, water, NULL) > 0);
    if (!periodic)
        cr_assert(floe_boundary_box(w.ctx, bnd, zero, tank, 2, 0) > 0);
    else {
        float lo[3] = {0, -3 * d, 0}, hi[3] = {tank[0], -0.5f * d, dim == 3 ? tank[2] : 0};
        cr_assert(floe_boundary_solid_box(w.ctx, bnd, lo, hi) > 0);
    }
    if (flags & W_MULTI) {
        /* oil against the water's right face, then a block against the oil */
        w.nfluid = 2;
        w.fluid[1] = floe_set_create(w.ctx, "oil", FLOE_SET_FLUID, 800);
        float lo[3] = {water[0], 0, 0}, hi[3] = {water[0] + 3 * d, 0.5f * water[1], water[2]};
        cr_assert(floe_fill_box(w.ctx, w.fluid[1], lo, hi, NULL) > 0);
        floe_set block = floe_set_create(w.ctx, "block", FLOE_SET_BOUNDARY, 0);
        float blo[3] = {hi[0] + 0.5f * d, 0, 0}, bhi[3] = {hi[0] + 2.5f * d, 0.25f * water[1], water[2]};
        cr_assert(floe_boundary_solid_box(w.ctx, block, blo, bhi) > 0);
    }
    for (int s = 0; s < w.nfluid; s++)
        jitter_set(w.ctx, w.fluid[s], dim, d, 0.2f, 12345 + 777 * s);
    const char *mods[] = {"sph", "wcsph", "viscosity", "tension"};
    for (int k = 0; k < 4; k++)
        cr_assert_eq(floe_module_load(w.ctx, mods[k]), FLOE_OK, "%s", floe_ctx_error(w.ctx));
    return w;
}

static void add(world *w, const char *stage, int n, const floe_param_kv *kv)
{
    cr_assert_eq(floe_pipeline_add(w->ctx, stage, kv, n), FLOE_OK, "%s", floe_ctx_error(w->ctx));
}

#define KV_F(n, x) ((floe_param_kv){(n), FLOE_PARAM_FLOAT, {.f = (x)}})
#define KV_S(n, x) ((floe_param_kv){(n), FLOE_PARAM_STRING, {.s = (x)}})

/* Relative L2 difference of an attribute between the two worlds over every
 * fluid set, particles matched by their stable id. */
static double rel_l2(world *a, world *b, const char *name, floe_type type)
{
    double num = 0, den = 0;
    const int c = type == FLOE_VEC3 ? 3 : 1;
    for (int s = 0; s < a->nfluid; s++) {
        floe_set sa = a->fluid[s], sb = b->fluid[s];
        uint32_t n = floe_set_size(a->ctx, sa);
        cr_assert_eq(n, floe_set_size(b->ctx, sb));
        const uint32_t *ida = floe_attr(a->ctx, sa, "id", FLOE_U32);
        const uint32_t *idb = floe_attr(b->ctx, sb, "id", FLOE_U32);
        const float *fa = floe_attr(a->ctx, sa, name, type);
        const float *fb = floe_attr(b->ctx, sb, name, type);
        cr_assert(fa && fb && ida && idb, "attribute '%s' missing", name);
        uint32_t *where = malloc(n * sizeof *where);
        for (uint32_t i = 0; i < n; i++)
            where[idb[i]] = i;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t j = where[ida[i]];
            for (int k = 0; k < c; k++) {
                double d = (double)fa[c * i + k] - fb[c * j + k];
                num += d * d;
                den += (double)fa[c * i + k] * fa[c * i + k];
            }
        }
        free(where);
    }
    cr_assert_gt(den, 0, "attribute '%s' is zero everywhere: nothing compared", name);
    return sqrt(num / den);
}

typedef struct cmp_attr {
    const char *name;
    floe_type type;
} cmp_attr;

static const cmp_attr A[] = {{"a", FLOE_VEC3}};
static const cmp_attr HE[] = {{"colour", FLOE_F32}, {"colour_grad2", FLOE_F32}, {"a", FLOE_VEC3}};
static const cmp_attr AK[] = {{"normal", FLOE_VEC3}, {"a", FLOE_VEC3}};

/* One step of neighbours, sph.density and the stage on both paths (no
 * gravity: a is the stage's contribution alone); every listed attribute
 * agrees to float rounding. */
static void stage_agrees(int dim, int flags, const char *stage, int nkv, const floe_param_kv *kv,
                         const cmp_attr *attrs, int nattrs)
{
    need_opencl();
    world w[2];
    for (int b = 0; b < 2; b++) {
        w[b] = make_world(b ? "opencl" : "cpu", dim, flags);
        add(&w[b], "neighbours", 0, NULL);
        add(&w[b], "sph.density", 0, NULL);
        add(&w[b], stage, nkv, kv);
        cr_assert_eq(floe_step(w[b].ctx, 2e-4), FLOE_OK, "%s", floe_ctx_error(w[b].ctx));
    }
    for (int k = 0; k < nattrs; k++) {
        double e = rel_l2(&w[0], &w[1], attrs[k].name, attrs[k].type);
        cr_log_info("%s %dD%s%s: '%s' relative L2 difference %.3g", stage, dim, flags & W_PERIODIC ? " periodic" : "",
                    flags & W_MULTI ? " two sets each" : "", attrs[k].name, e);
        cr_assert_lt(e, 1e-5, "%s %dD: '%s' differs by %.3g (relative L2)", stage, dim, attrs[k].name, e);
    }
    floe_ctx_destroy(w[0].ctx);
    floe_ctx_destroy(w[1].ctx);
}

/* ---- viscosity ------------------------------------------------------------- */

Test(visc_tension_cl, viscosity_laminar_morris, .timeout = FLOE_TIMEOUT(600))
{
    floe_param_kv mirror[] = {KV_F("nu", 1e-3), KV_F("boundary_nu", 2e-3)};
    floe_param_kv zero[] = {KV_F("nu", 1e-3), KV_S("wall_velocity", "zero")};
    stage_agrees(3, 0, "viscosity.laminar", 2, mirror, A, 1);
    stage_agrees(2, 0, "viscosity.laminar", 2, zero, A, 1);
    stage_agrees(2, W_PERIODIC, "viscosity.laminar", 2, mirror, A, 1);
    stage_agrees(2, W_MULTI, "viscosity.laminar", 2, mirror, A, 1);
}

Test(visc_tension_cl, viscosity_laminar_monaghan, .timeout = FLOE_TIMEOUT(600))
{
    floe_param_kv mirror[] = {KV_F("nu", 1e-3), KV_S("form", "monaghan")};
    floe_param_kv free_slip[] = {KV_F("nu", 1e-3), KV_S("form", "monaghan"), KV_F("boundary_nu", 0),
                                 KV_F("eps", 0.05)};
    stage_agrees(3, 0, "viscosity.laminar", 2, mirror, A, 1);
    stage_agrees(2, 0, "viscosity.laminar", 4, free_slip, A, 1);
    stage_agrees(2, W_MULTI, "viscosity.laminar", 2, mirror, A, 1);
}

Test(visc_tension_cl, viscosity_kim, .timeout = FLOE_TIMEOUT(600))
{
    floe_param_kv kim[] = {KV_F("beta0", 0.1), KV_F("beta1", 10), KV_F("boundary_beta0", 1)};
    floe_param_kv bulk[] = {KV_F("beta0", 0.2), KV_F("beta1", 5), KV_F("boundary_beta0", 0)};
    stage_agrees(3, 0, "viscosity.kim", 3, kim, A, 1);
    stage_agrees(2, 0, "viscosity.kim", 3, bulk, A, 1);
    stage_agrees(2, W_PERIODIC, "viscosity.kim", 3, kim, A, 1);
    stage_agrees(2, W_MULTI, "viscosity.kim", 3, kim, A, 1);
}

Test(visc_tension_cl, sph_xsph, .timeout = FLOE_TIMEOUT(600))
{
    floe_param_kv both[] = {KV_F("alpha", 0.05), KV_F("boundary_alpha", 0.1)};
    floe_param_kv fluid[] = {KV_F("alpha", 0.05)};
    stage_agrees(3, 0, "sph.xsph", 2, both, A, 1);
    stage_agrees(2, 0, "sph.xsph", 1, fluid, A, 1);
    stage_agrees(2, W_MULTI, "sph.xsph", 2, both, A, 1);
}

/* ---- tension ---------------------------------------------------------------- */

Test(visc_tension_cl, tension_he, .timeout = FLOE_TIMEOUT(600))
{
    floe_param_kv wet[] = {KV_F("kappa", 0.02), KV_F("wall_colour", 1)};
    floe_param_kv part[] = {KV_F("kappa", 0.05), KV_F("wall_colour", 0.3)};
    stage_agrees(3, 0, "tension.he", 2, wet, HE, 3);
    stage_agrees(2, 0, "tension.he", 2, part, HE, 3);
    stage_agrees(2, W_PERIODIC, "tension.he", 2, part, HE, 3);
    stage_agrees(2, W_MULTI, "tension.he", 2, part, HE, 3);
}

Test(visc_tension_cl, tension_air_pressure, .timeout = FLOE_TIMEOUT(600))
{
    floe_param_kv wet[] = {KV_F("p_atm", 5000), KV_F("wall_colour", 1)};
    floe_param_kv dry[] = {KV_F("p_atm", 100), KV_F("wall_colour", 0)};
    stage_agrees(3, 0, "tension.air_pressure", 2, wet, A, 1);
    stage_agrees(2, 0, "tension.air_pressure", 2, dry, A, 1);
    stage_agrees(2, W_MULTI, "tension.air_pressure", 2, wet, A, 1);
}

Test(visc_tension_cl, tension_akinci, .timeout = FLOE_TIMEOUT(600))
{
    floe_param_kv adh[] = {KV_F("gamma", 2), KV_F("beta", 1)};
    floe_param_kv coh[] = {KV_F("gamma", 0.5)};
    stage_agrees(3, 0, "tension.akinci", 2, adh, AK, 2);
    stage_agrees(2, 0, "tension.akinci", 1, coh, AK, 2);
    stage_agrees(2, W_PERIODIC, "tension.akinci", 2, adh, AK, 2);
    stage_agrees(2, W_MULTI, "tension.akinci", 2, adh, AK, 2);
}

/* ---- no host copies inside a step ------------------------------------------ */

/* A whole step with every stage of both modules on the device: what they
 * write (colour, colour_grad2, normal, a) is on the device and was not
 * copied back (host copy stale), so no stage ran on the C path. */
Test(visc_tension_cl, intermediates_stay_on_the_device, .timeout = FLOE_TIMEOUT(600))
{
    need_opencl();
    world g = make_world("opencl", 2, 0);
    add(&g, "neighbours", 0, NULL);
    add(&g, "sph.density", 0, NULL);
    floe_param_kv pk[] = {KV_F("speed_of_sound", 20)};
    add(&g, "wcsph.pressure", 1, pk);
    add(&g, "gravity", 0, NULL);
    const char *stages[] = {"viscosity.laminar", "viscosity.kim", "sph.xsph", "tension.he",
                            "tension.air_pressure", "tension.akinci"};
    for (int k = 0; k < 6; k++)
        add(&g, stages[k], 0, NULL);
    add(&g, "wcsph.pressure_force", 0, NULL);
    add(&g, "integrate", 0, NULL);
    cr_assert_eq(floe_step(g.ctx, 2e-4), FLOE_OK, "%s", floe_ctx_error(g.ctx));
    pset *p = ctx_set(g.ctx, g.fluid[0]);
    const char *written[] = {"colour", "colour_grad2", "normal", "a", "v", "x"};
    for (int k = 0; k < 6; k++) {
        attr *at = pset_attr(p, written[k]);
        cr_assert_not_null(at, "%s", written[k]);
        cr_assert_eq(dev_attr_state(g.ctx, p, at), (unsigned)DEV_HOST_STALE,
                     "'%s' was copied to the host during the step", written[k]);
    }
    /* and it reads back as a colour field: 1 inside the block */
    const float *c = floe_attr(g.ctx, g.fluid[0], "colour", FLOE_F32);
    uint32_t n = floe_set_size(g.ctx, g.fluid[0]);
    float cmax = 0;
    for (uint32_t i = 0; i < n; i++)
        cmax = c[i] > cmax ? c[i] : cmax;
    cr_assert(cmax > 0.8f && cmax < 1.5f, "colour max %g", cmax);
    floe_ctx_destroy(g.ctx);
}

/* ---- whole scenes ---------------------------------------------------------------- */

typedef struct summary {
    double kinetic, potential;
} summary;

static int grab(floe_ctx *ctx, const floe_frame_stats *st, void *u)
{
    (void)ctx;
    summary *s = u;
    s->kinetic = st->kinetic;
    s->potential = st->potential;
    return 0;
}

/* 100 fixed steps on both paths; positions, velocities (relative L2) and
 * total energy (relative) are compared after them. */
static void run_100(world *w, double dt, summary *s)
{
    floe_run_def r = floe_run_default_def();
    r.dt = dt;
    r.fps = 1.0 / (100 * dt);
    r.frames = 1;
    r.progress = 0;
    r.on_frame = grab;
    r.user = s;
    floe_run_summary sum;
    cr_assert_eq(floe_run(w->ctx, &r, &sum), FLOE_OK, "%s", floe_ctx_error(w->ctx));
    cr_assert_eq(sum.steps, 100);
}

static void compare_scene(world w[2], summary s[2], const char *what, double tol_x, double tol_v, double tol_e)
{
    double ex = rel_l2(&w[0], &w[1], "x", FLOE_VEC3), ev = rel_l2(&w[0], &w[1], "v", FLOE_VEC3);
    double e0 = s[0].kinetic + s[0].potential, e1 = s[1].kinetic + s[1].potential;
    double ee = fabs(e1 - e0) / fabs(e0);
    cr_log_info("%s, 100 steps: x rel L2 %.3g, v rel L2 %.3g, energy %.8g vs %.8g J (rel %.3g)", what, ex, ev, e0,
                e1, ee);
    cr_assert_lt(ex, tol_x, "%s: x differs by %.3g", what, ex);
    cr_assert_lt(ev, tol_v, "%s: v differs by %.3g", what, ev);
    cr_assert_lt(ee, tol_e, "%s: energy differs by %.3g", what, ee);
}

/* 2D dam break (600 particles) with WCSPH, viscosity.laminar and Kim's bulk
 * + boundary viscosity. */
Test(visc_tension_cl, scene_viscous_dam_break_2d, .timeout = FLOE_TIMEOUT(900))
{
    need_opencl();
    world w[2];
    summary s[2];
    for (int b = 0; b < 2; b++) {
        w[b] = make_world(b ? "opencl" : "cpu", 2, 0);
        add(&w[b], "neighbours", 0, NULL);
        add(&w[b], "sph.density", 0, NULL);
        floe_param_kv pk[] = {KV_F("speed_of_sound", 20)};
        add(&w[b], "wcsph.pressure", 1, pk);
        add(&w[b], "gravity", 0, NULL);
        floe_param_kv lk[] = {KV_F("nu", 1e-3)};
        add(&w[b], "viscosity.laminar", 1, lk);
        add(&w[b], "viscosity.kim", 0, NULL);
        add(&w[b], "wcsph.pressure_force", 0, NULL);
        add(&w[b], "integrate", 0, NULL);
        run_100(&w[b], 2e-4, &s[b]);
    }
    compare_scene(w, s, "viscous dam break 2D", 1e-5, 1e-4, 1e-5);
    floe_ctx_destroy(w[0].ctx);
    floe_ctx_destroy(w[1].ctx);
}

/* A zero-gravity droplet: a 2:1 block of water at d = 1 mm, no walls. */
static world droplet(const char *backend, int dim, int nx)
{
    setenv("FLOE_MODULE_PATH", FLOE_TEST_BUILD_ROOT "/modules", 1);
    const float d = 0.001f;
    floe_sim_def def = floe_sim_default_def();
    def.dim = dim;
    def.spacing = d;
    def.threads = 2;
    def.backend = backend;
    for (int k = 0; k < 3; k++) {
        def.gravity[k] = 0;
        def.domain_min[k] = -0.03f;
        def.domain_max[k] = 0.03f;
    }
    char err[1024];
    world w;
    w.ctx = floe_ctx_create(&def, err, sizeof err);
    cr_assert_not_null(w.ctx, "%s", err);
    w.nfluid = 1;
    w.fluid[0] = floe_set_create(w.ctx, "water", FLOE_SET_FLUID, 1000);
    const float hx = 0.5f * nx * d, hy = 0.25f * nx * d;
    float lo[3] = {-hx, -hy, dim == 3 ? -hy : 0}, hi[3] = {hx, hy, dim == 3 ? hy : 0};
    cr_assert(floe_fill_box(w.ctx, w.fluid[0], lo, hi, NULL) > 0);
    const char *mods[] = {"sph", "wcsph", "viscosity", "tension"};
    for (int k = 0; k < 4; k++)
        cr_assert_eq(floe_module_load(w.ctx, mods[k]), FLOE_OK, "%s", floe_ctx_error(w.ctx));
    add(&w, "neighbours", 0, NULL);
    add(&w, "sph.density", 0, NULL);
    floe_param_kv pk[] = {KV_F("speed_of_sound", 4)};
    add(&w, "wcsph.pressure", 1, pk);
    add(&w, "gravity", 0, NULL);
    return w;
}

/* 2D, 24 x 12 particles: tension.he (kappa 1e-4 N) and air pressure (20 Pa),
 * laminar viscosity */
Test(visc_tension_cl, scene_droplet_he_air_2d, .timeout = FLOE_TIMEOUT(900))
{
    need_opencl();
    world w[2];
    summary s[2];
    for (int b = 0; b < 2; b++) {
        w[b] = droplet(b ? "opencl" : "cpu", 2, 24);
        floe_param_kv hk[] = {KV_F("kappa", 1e-4)};
        add(&w[b], "tension.he", 1, hk);
        floe_param_kv ak[] = {KV_F("p_atm", 20)};
        add(&w[b], "tension.air_pressure", 1, ak);
        floe_param_kv vk[] = {KV_F("nu", 1e-5)};
        add(&w[b], "viscosity.laminar", 1, vk);
        add(&w[b], "wcsph.pressure_force", 0, NULL);
        add(&w[b], "integrate", 0, NULL);
        run_100(&w[b], 5e-5, &s[b]);
    }
    compare_scene(w, s, "droplet he + air pressure 2D", 1e-5, 1e-3, 1e-4);
    floe_ctx_destroy(w[0].ctx);
    floe_ctx_destroy(w[1].ctx);
}

/* 3D, 12 x 6 x 6 particles: tension.akinci (gamma 2) and XSPH */
Test(visc_tension_cl, scene_droplet_akinci_3d, .timeout = FLOE_TIMEOUT(900))
{
    need_opencl();
    world w[2];
    summary s[2];
    for (int b = 0; b < 2; b++) {
        w[b] = droplet(b ? "opencl" : "cpu", 3, 12);
        floe_param_kv tk[] = {KV_F("gamma", 2)};
        add(&w[b], "tension.akinci", 1, tk);
        floe_param_kv xk[] = {KV_F("alpha", 0.02)};
        add(&w[b], "sph.xsph", 1, xk);
        add(&w[b], "wcsph.pressure_force", 0, NULL);
        add(&w[b], "integrate", 0, NULL);
        run_100(&w[b], 5e-5, &s[b]);
    }
    compare_scene(w, s, "droplet akinci 3D", 1e-5, 1e-4, 1e-4);
    floe_ctx_destroy(w[0].ctx);
    floe_ctx_destroy(w[1].ctx);
}
