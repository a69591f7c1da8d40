/* WCSPH with the density of the continuity equation and delta-SPH density
 * diffusion (wcsph.continuity): a still 2D tank keeps its hydrostatic
 * pressure and its mean density over 10 s, the pressure noise at one depth
 * is several times lower than with the density sum or the plain continuity
 * equation, and the OpenCL path agrees with the C path. */
#include "cl_fixture.h"
#include "tank_fixture.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#ifndef DS
#define DS 0.02f
#endif
/* limits of the hydrostatic test: measured -1.69% and 5.30% at d = 2 cm
 * (docs/validation.md; at d = 1 cm the top slabs read up to +22%: with the
 * continuity equation the free surface sits higher than the mass says) */
#define TOL_SLOPE 0.03
#define TOL_FIT 0.08
#define C0 30.0 /* m/s: 10 x the largest speed of a 0.2 m column, sqrt(2 g h) = 2 m/s, with 50% margin */

enum { SUMMATION, CONTINUITY, DELTA_SPH };
static const char *const mode_name[] = {"density sum (sph.density)", "continuity, delta = 0",
                                        "continuity, delta = 0.1"};

/* what a frame callback gathers over the measured window */
typedef struct tank_log {
    floe_set fluid;
    float d, depth_y;     /* the band of particles y in [depth_y - d/2, depth_y + d/2] */
    float W;              /* tank width: walls at x = 0 and x = W, floor at y = 0 */
    int frames;
    double rho_mean[256]; /* mean density of each frame */
    double rho_first, rho_last; /* averaged over the first and the last second */
    double var_sum;       /* sum over frames of the pressure variance in the band */
    double p_band_sum;    /* sum over frames of the band's mean pressure */
    int inside_wall;      /* particle centres found beyond a wall surface */
    float worst_x[2], worst_y;
} tank_log;

static int tank_frame(floe_ctx *ctx, const floe_frame_stats *st, void *user)
{
    (void)st;
    tank_log *L = user;
    const uint32_t n = floe_set_size(ctx, L->fluid);
    const float *x = floe_attr(ctx, L->fluid, "x", FLOE_VEC3);
    const float *rho = floe_attr(ctx, L->fluid, "rho", FLOE_F32);
    const float *p = floe_attr(ctx, L->fluid, "p", FLOE_F32);
    double rs = 0, ps = 0, pss = 0;
    int nb = 0;
    for (uint32_t i = 0; i < n; i++) {
        rs += rho[i];
        if (fabsf(x[3 * i + 1] - L->depth_y) <= 0.5f * L->d) {
            ps += p[i];
            pss += (double)p[i] * p[i];
            nb++;
        }
        L->worst_x[0] = fminf(L->worst_x[0], x[3 * i]);
        L->worst_x[1] = fmaxf(L->worst_x[1], x[3 * i]);
        L->worst_y = fminf(L->worst_y, x[3 * i + 1]);
        L->inside_wall += x[3 * i] < 0.0f || x[3 * i] > L->W || x[3 * i + 1] < 0.0f;
    }
    const double mean = nb ? ps / nb : 0;
    if (L->frames < 256)
        L->rho_mean[L->frames] = rs / n;
    L->var_sum += nb ? pss / nb - mean * mean : 0;
    L->p_band_sum += mean;
    L->frames++;
    return 0;
}

/* neighbours, the density by `mode`, Tait pressure (c), gravity, optional
 * viscosity stage, the pressure force, optional damping, integrate */
static void pipeline(fixture *f, int mode, int adami, double c, const char *visc, double damp, floe_stage_fn host,
                     void *user)
{
    floe_pipeline_clear(f->ctx);
    fixture_add(f, "neighbours", 0, NULL);
    if (mode == SUMMATION)
        fixture_add(f, "sph.density", 0, NULL);
    else {
        floe_param_kv ck[] = {KV_F("delta", mode == DELTA_SPH ? 0.1 : 0.0)};
        fixture_add(f, "wcsph.continuity", 1, ck);
    }
    floe_param_kv pk[] = {KV_F("speed_of_sound", c)};
    fixture_add(f, "wcsph.pressure", 1, pk);
    fixture_add(f, "gravity", 0, NULL);
    if (visc) { /* the water preset's alpha between fluid particles, none at the walls */
        floe_param_kv vk[] = {KV_S("kind", "artificial"), KV_F("alpha", 0.02)};
        fixture_add(f, "wcsph.viscosity", 2, vk);
    }
    if (visc && !strcmp(visc, "free_slip")) { /* water's nu, free-slip walls: no shear at the walls */
        floe_param_kv lk[] = {KV_F("nu", 1e-6), KV_F("boundary_nu", 0)};
        fixture_add(f, "viscosity.laminar", 2, lk);
    }
    /* adami: 1 Adami's wall pressure, 2 with the gradient correction too */
    floe_param_kv wk[] = {KV_S("walls", adami ? "extrapolated" : "mirror"),
                          KV_B("gradient_correction", adami == 2)};
    fixture_add(f, "wcsph.pressure_force", 2, wk);
    if (damp > 0) {
        floe_param_kv dk[] = {KV_F("rate", damp)};
        fixture_add(f, "hello.damp", 1, dk);
    }
    if (host)
        cr_assert_eq(floe_pipeline_add_fn(f->ctx, "accumulate_p", host, user), FLOE_OK);
    fixture_add(f, "integrate", 0, NULL);
}

static void run_frames(fixture *f, double seconds, double fps, floe_frame_fn fn, void *user)
{
    floe_run_def r = fixture_run_def(seconds, fps);
    r.on_frame = fn;
    r.user = user;
    cr_assert_eq(floe_run(f->ctx, &r, NULL), FLOE_OK, "%s", floe_ctx_error(f->ctx));
}

/* A 2D tank 0.2 x 0.3 m filled to 0.2 m at spacing d (DS, 2 cm, unless
 * told), c = 30 m/s, settled with damping for `settle` s, then measured for
 * `measure` s at 10 frames a second. */
static tank_log still_tank_d(float d, int mode, int adami, const char *visc, double settle, double measure, pavg *A,
                             fixture *out)
{
    const float tank[3] = {0.2f, 0.3f, 0}, water[3] = {0.2f, 0.2f, 0};
    fixture f = tank_fixture(2, d, 2.0f, tank, water, 0);
    floe_ctx_set_threads(f.ctx, 1); /* 100 particles: threads would only wait for each other */
    cr_assert_eq(floe_module_load(f.ctx, "wcsph"), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    cr_assert_eq(floe_module_load(f.ctx, "sph"), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    cr_assert_eq(floe_module_load(f.ctx, "hello"), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    cr_assert_eq(floe_module_load(f.ctx, "viscosity"), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    if (A) {
        cr_assert_eq(floe_attr_add(f.ctx, f.fluid, "p_sum", FLOE_F32), FLOE_OK);
        cr_assert_eq(floe_attr_add(f.ctx, f.fluid, "y_sum", FLOE_F32), FLOE_OK);
    }
    tank_log L = {.fluid = f.fluid, .d = d, .depth_y = 0.09f, .W = tank[0], .worst_x = {1e30f, -1e30f},
                  .worst_y = 1e30f};
    pipeline(&f, mode, adami, C0, visc, 20, NULL, NULL);
    run_frames(&f, settle, 10, NULL, NULL);
    pipeline(&f, mode, adami, C0, visc, 0, A ? accumulate_p : NULL, A);
    if (A) {
        A->fluid = f.fluid;
        A->T = 0;
    }
    run_frames(&f, measure, 10, tank_frame, &L);
    /* the mean density, averaged over the first and the last second (the
     * water still sloshes by a fraction of a per mille) */
    const int k1 = L.frames < 10 ? L.frames : 10;
    for (int k = 0; k < k1; k++) {
        L.rho_first += L.rho_mean[k] / k1;
        L.rho_last += L.rho_mean[L.frames - k1 + k] / k1;
    }
    cr_log_info("%s: mean density %.3f -> %.3f kg/m^3 from the first to the last second of %.1f s (drift %+.4f%%); "
                "pressure at y = %.3f m: mean %.1f Pa, std %.2f Pa (RMS over %d frames); particle centres beyond a "
                "wall %d (x in [%.4f, %.4f], y >= %.4f)",
                mode_name[mode], L.rho_first, L.rho_last, measure, 100 * (L.rho_last / L.rho_first - 1), L.depth_y,
                L.p_band_sum / L.frames, sqrt(L.var_sum / L.frames), L.frames, L.inside_wall, L.worst_x[0],
                L.worst_x[1], L.worst_y);
    if (out)
        *out = f;
    else
        floe_ctx_destroy(f.ctx);
    return L;
}

static tank_log still_tank(int mode, int adami, const char *visc, double settle, double measure, pavg *A,
                           fixture *out)
{
    return still_tank_d(DS, mode, adami, visc, settle, measure, A, out);
}

/* The hydrostatic figures of a still tank after 10 s: worst time-averaged
 * per-particle error against rho0 g (surface - y) 5 d deep and more, the
 * fitted slope's error, the mean density's drift, the worst layer below the
 * top two against rho0 g h of the mass above; asserted within tol_fit,
 * tol_slope, 5e-4 and tol_layer. */
static void hydrostatic(int adami, float d, double tol_slope, double tol_fit, double tol_layer)
{
    static pavg A;
    fixture f;
    const tank_log L = still_tank_d(d, DELTA_SPH, adami, "artificial", 1.0, 10.0, &A, &f);
    const uint32_t n = floe_set_size(f.ctx, f.fluid);
    float *pa = calloc(n, sizeof *pa), *ya = calloc(n, sizeof *ya); /* calloc: gcc cannot see the loop fill them */
    cr_assert(n > 0 && pa && ya);
    const float *ps = floe_attr(f.ctx, f.fluid, "p_sum", FLOE_F32), *ys = floe_attr(f.ctx, f.fluid, "y_sum", FLOE_F32);
    for (uint32_t i = 0; i < n; i++) {
        pa[i] = (float)(ps[i] / A.T);
        ya[i] = (float)(ys[i] / A.T);
    }
    int layers, slabs;
    double fill;
    const double worst = layer_pressure_error(&f, pa, ya, 0.2, d, d, &layers, &fill, "time-averaged");
    const double worst_slab =
        layer_pressure_error(&f, pa, ya, 0.2, d, floe_ctx_info(f.ctx)->support, &slabs, &fill, "time-averaged");
    /* as test_wcsph.c measures it: p(y) fitted below the top two layers
     * (by the mass depth h > 2 d), the free surface where the fit is zero */
    double sy = 0, sp = 0, syy = 0, syp = 0, m = 0;
    const float top = 0.2f * (float)fill; /* the column's height by its mass, spread over the base */
    for (uint32_t i = 0; i < n; i++)
        if (ya[i] < top - 2.5f * d) {
            sy += ya[i], sp += pa[i], syy += (double)ya[i] * ya[i], syp += (double)ya[i] * pa[i], m++;
        }
    const double slope = (m * syp - sy * sp) / (m * syy - sy * sy), surface = -(sp - slope * sy) / m / slope;
    double worst_fit = 0;
    for (uint32_t i = 0; i < n; i++) /* each particle against rho0 g (surface - y), 5 d deep and more */
        if (ya[i] < top - 5.0f * d)
            worst_fit = fmax(worst_fit, fabs(pa[i] / (1000.0 * 9.81 * (surface - ya[i])) - 1));
    cr_log_info("%s walls: pressure vs rho g h below the top two layers, averaged over %.1f s: worst layer %.2f%% (%d layers), "
                "worst slab %.2f%% (%d slabs), h from the mass above; fitted dp/dy %.1f Pa/m (rho0 g %.1f, %+.2f%%), "
                "free surface at %.4f m (the mass gives %.4f m), each particle 5 d deep or more within %.2f%% of "
                "rho0 g (surface - y)",
                adami == 2 ? "extrapolated (Adami), corrected gradient" : adami ? "extrapolated (Adami)" : "mirrored (Akinci)", A.T, 100 * worst, layers, 100 * worst_slab, slabs, -slope, 1000 * 9.81, 100 * (-slope / 9810 - 1),
                surface, top, 100 * worst_fit);
    free(pa);
    free(ya);
    cr_assert_eq(L.inside_wall, 0, "%d particle centres beyond a wall", L.inside_wall);
    cr_assert_lt(fabs(L.rho_last / L.rho_first - 1), 5e-4, "mean density drifted by %.4f%% in 10 s",
                 100 * (L.rho_last / L.rho_first - 1));
    cr_assert_lt(fabs(-slope / 9810 - 1), tol_slope, "dp/dy %.1f Pa/m", -slope);
    cr_assert_lt(worst_fit, tol_fit, "pressure off rho0 g (surface - y) by %.2f%%", 100 * worst_fit);
    cr_assert_lt(worst, tol_layer, "a layer's pressure off rho0 g h by %.2f%%", 100 * worst);
    floe_ctx_destroy(f.ctx);
}

/* mirrored walls: layers measured up to 22.7% off (the first below the
 * top two) on an AVX2 build, 31.5% on the generic (-Dnative=false) one,
 * so that limit only catches a broken tank */
Test(delta_sph, hydrostatic_tank_10s, .timeout = FLOE_TIMEOUT(600)) { hydrostatic(0, DS, TOL_SLOPE, TOL_FIT, 0.4); }

/* Adami et al. 2012's wall pressure (wcsph.pressure_force{walls =
 * "extrapolated"}): measured worst layer +2.55% (the one next to the
 * floor; the others +1.04% to +1.99%), slope +2.97%, per particle 4.39%,
 * drift +0.0004%: the 1% is not met (docs/validation.md) */
Test(delta_sph, hydrostatic_tank_10s_adami_walls, .timeout = FLOE_TIMEOUT(600)) { hydrostatic(1, DS, 0.04, 0.06, 0.03); }

/* ... and wcsph.pressure_force{gradient_correction}, at d = 1 cm (400
 * particles, 20 a layer). At d = 2 cm (10 a layer) the worst layer is not
 * a stable figure: on one AVX2 build it read 0.87%, 1.88%, 1.88%, 1.10% and
 * 0.79% for settling times of 1.0, 1.05, 1.1, 1.2 and 1.3 s (the generic
 * build's 1.37% is one more draw of the same spread: the packing the tank
 * settles into, not the code path). At d = 1 cm settling times of 1.0
 * and 1.1 s gave 0.78% and 0.79% on the AVX2 build, 0.60% on the generic
 * one (slope +0.56% / +0.34%, per particle 2.23% / 2.37%, drift 0.0000% /
 * -0.0001%; docs/validation.md): the 1% is asserted. */
Test(delta_sph, hydrostatic_tank_10s_adami_walls_corrected, .timeout = FLOE_TIMEOUT(600))
{
    hydrostatic(2, 0.01f, 0.015, 0.04, 0.01);
}

Test(delta_sph, pressure_noise, .timeout = FLOE_TIMEOUT(600))
{
    double sd[3];
    for (int m = 0; m < 3; m++) {
        /* the plain continuity density (delta = 0) is the unstable one: its
         * noise grows until the tank blows up, 1.8-3 s after the settling
         * depending on the last bits of the sums, so it is measured over
         * its first second only */
        const tank_log L = still_tank(m, 0, "artificial", 1.0, m == CONTINUITY ? 1.0 : 2.0, NULL, NULL);
        sd[m] = sqrt(L.var_sum / L.frames);
    }
    cr_log_info("pressure std at one depth: %.1f Pa (density sum), %.1f Pa (continuity), %.1f Pa (delta-SPH): "
                "%.1fx and %.1fx lower", sd[SUMMATION], sd[CONTINUITY], sd[DELTA_SPH], sd[SUMMATION] / sd[DELTA_SPH],
                sd[CONTINUITY] / sd[DELTA_SPH]);
    cr_assert_lt(3 * sd[DELTA_SPH], sd[SUMMATION], "delta-SPH noise %.1f Pa vs the density sum's %.1f Pa",
                 sd[DELTA_SPH], sd[SUMMATION]);
    cr_assert_lt(3 * sd[DELTA_SPH], sd[CONTINUITY], "delta-SPH noise %.1f Pa vs the continuity's %.1f Pa",
                 sd[DELTA_SPH], sd[CONTINUITY]);
}

/* Free-slip walls (no shear stress: viscosity.laminar with boundary_nu =
 * 0, no viscosity against boundary particles) keep the water in: over 10 s
 * of a still tank no particle centre gets past a wall's surface (x = 0,
 * x = W, y = 0), with the density sum and with delta-SPH; with delta-SPH
 * none comes within d/4 of one (measured 0.37 d; the density sum lets them
 * to 0.04 d). */
Test(delta_sph, free_slip_walls_hold_10s, .timeout = FLOE_TIMEOUT(600))
{
    for (int k = 0; k < 3; k++) { /* the density sum, delta-SPH, delta-SPH with Adami's wall pressure */
        const int m = k == 0 ? SUMMATION : DELTA_SPH, adami = k == 2;
        const tank_log L = still_tank(m, adami, "free_slip", 1.0, 10.0, NULL, NULL);
        cr_assert_eq(L.inside_wall, 0, "%s: %d particle centres beyond a wall (x in [%g, %g], y >= %g)",
                     mode_name[m], L.inside_wall, L.worst_x[0], L.worst_x[1], L.worst_y);
        const float gap = fminf(fminf(L.worst_x[0], L.W - L.worst_x[1]), L.worst_y);
        cr_log_info("%s%s: closest approach to a wall surface %.2f d", mode_name[m], adami ? ", Adami walls" : "",
                    gap / L.d);
        if (m == DELTA_SPH)
            cr_assert_gt(gap, 0.25f * L.d, "delta-SPH: a particle came within %.2f d of a wall", gap / L.d);
    }
}

/* ---- the OpenCL path against the C path ------------------------------------ */

/* a jittered 2D or 3D tank with random velocities on the given backend:
 * uneven densities, so the diffusion and the gradient do something */
static fixture cl_world(const char *backend, int dim)
{
    setenv("FLOE_MODULE_PATH", FLOE_TEST_BUILD_ROOT "/modules", 1);
    const float d = dim == 3 ? 0.02f : 0.01f;
    const float tank[3] = {0.3f, 0.3f, 0.2f}, water[3] = {0.15f, 0.2f, 0.2f};
    floe_sim_def def = floe_sim_default_def();
    def.dim = dim;
    def.spacing = d;
    def.threads = 1;
    def.backend = backend;
    for (int k = 0; k < 3; k++) {
        def.domain_min[k] = -4 * d;
        def.domain_max[k] = tank[k] + 4 * d + (k == 1 ? tank[1] : 0);
    }
    char err[1024];
    fixture w;
    w.ctx = floe_ctx_create(&def, err, sizeof err);
    cr_assert_not_null(w.ctx, "%s", err);
    w.fluid = floe_set_create(w.ctx, "fluid", FLOE_SET_FLUID, 1000);
    w.bnd = floe_set_create(w.ctx, "boundary", FLOE_SET_BOUNDARY, 0);
    const float zero[3] = {0, 0, 0};
    cr_assert(floe_fill_box(w.ctx, w.fluid, zero, water, NULL) > 0);
    cr_assert(floe_boundary_box(w.ctx, w.bnd, zero, tank, 2, 0) > 0);
    const uint32_t n = floe_set_size(w.ctx, w.fluid);
    float *x = floe_attr(w.ctx, w.fluid, "x", FLOE_VEC3), *v = floe_attr(w.ctx, w.fluid, "v", FLOE_VEC3);
    uint64_t s = 12345;
    for (uint32_t i = 0; i < 3 * n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        const float r = (float)((s >> 33) & 0xffffff) / (float)0x1000000 - 0.5f;
        if (dim == 2 && i % 3 == 2)
            continue;
        x[i] += 0.2f * d * r;
        v[i] = 0.5f * r;
    }
    cr_assert_eq(floe_module_load(w.ctx, "wcsph"), FLOE_OK, "%s", floe_ctx_error(w.ctx));
    cr_assert_eq(floe_module_load(w.ctx, "sph"), FLOE_OK, "%s", floe_ctx_error(w.ctx));
    fixture_add(&w, "neighbours", 0, NULL);
    floe_param_kv ck[] = {KV_F("delta", 0.1)}, pk[] = {KV_F("speed_of_sound", 20)};
    fixture_add(&w, "wcsph.continuity", 1, ck);
    fixture_add(&w, "wcsph.pressure", 1, pk);
    fixture_add(&w, "gravity", 0, NULL);
    fixture_add(&w, "wcsph.pressure_force", 0, NULL);
    fixture_add(&w, "integrate", 0, NULL);
    return w;
}

/* relative L2 difference of rho between the two worlds, particles matched by id */
static double rho_rel_l2(fixture *a, fixture *b)
{
    const uint32_t n = floe_set_size(a->ctx, a->fluid);
    cr_assert_eq(n, floe_set_size(b->ctx, b->fluid));
    const uint32_t *ida = floe_attr(a->ctx, a->fluid, "id", FLOE_U32), *idb = floe_attr(b->ctx, b->fluid, "id", FLOE_U32);
    const float *ra = floe_attr(a->ctx, a->fluid, "rho", FLOE_F32), *rb = floe_attr(b->ctx, b->fluid, "rho", FLOE_F32);
    uint32_t *where = malloc(n * sizeof *where);
    for (uint32_t i = 0; i < n; i++)
        where[idb[i]] = i;
    double num = 0, den = 0;
    for (uint32_t i = 0; i < n; i++) {
        const double e = (double)ra[i] - rb[where[ida[i]]];
        num += e * e;
        den += (double)ra[i] * ra[i];
    }
    free(where);
    return sqrt(num / den);
}

/* Three steps (the first without diffusion: no speed of sound yet; the
 * second and third with it) on both paths: rho agrees to float rounding,
 * and the diffusion moved it (against the plain continuity equation). */
static void cl_agrees(int dim)
{
    need_opencl();
    fixture c = cl_world("cpu", dim), g = cl_world("opencl", dim);
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(floe_step(c.ctx, 2e-4), FLOE_OK, "%s", floe_ctx_error(c.ctx));
        cr_assert_eq(floe_step(g.ctx, 2e-4), FLOE_OK, "%s", floe_ctx_error(g.ctx));
        const double e = rho_rel_l2(&c, &g);
        cr_log_info("%dD step %d: rho relative L2 difference %.3g", dim, k + 1, e);
        cr_assert_lt(e, 1e-6, "rho differs by %.3g (relative L2) after step %d", e, k + 1);
    }
    /* the same three steps with delta = 0 on the C path: the diffusion is not nothing */
    fixture z = cl_world("cpu", dim);
    floe_pipeline_clear(z.ctx);
    floe_param_kv ck[] = {KV_F("delta", 0.0)}, pk[] = {KV_F("speed_of_sound", 20)};
    fixture_add(&z, "neighbours", 0, NULL);
    fixture_add(&z, "wcsph.continuity", 1, ck);
    fixture_add(&z, "wcsph.pressure", 1, pk);
    fixture_add(&z, "gravity", 0, NULL);
    fixture_add(&z, "wcsph.pressure_force", 0, NULL);
    fixture_add(&z, "integrate", 0, NULL);
    for (int k = 0; k < 3; k++)
        cr_assert_eq(floe_step(z.ctx, 2e-4), FLOE_OK, "%s", floe_ctx_error(z.ctx));
    const double dz = rho_rel_l2(&c, &z);
    cr_log_info("%dD: delta = 0.1 against delta = 0 after 3 steps: rho relative L2 %.3g", dim, dz);
    cr_assert_gt(dz, 1e-5, "the diffusion changed rho by only %.3g", dz);
    floe_ctx_destroy(c.ctx);
    floe_ctx_destroy(g.ctx);
    floe_ctx_destroy(z.ctx);
}

Test(delta_sph, opencl_agrees_2d, .timeout = FLOE_TIMEOUT(600)) { cl_agrees(2); }
Test(delta_sph, opencl_agrees_3d, .timeout = FLOE_TIMEOUT(600)) { cl_agrees(3); }

/* a speed of sound is needed: a pipeline without wcsph.pressure says so at
 * the second step (the first has a uniform density: no diffusion) */
Test(delta_sph, needs_the_speed_of_sound)
{
    const float d = 0.02f, tank[3] = {0.2f, 0.3f, 0}, water[3] = {0.2f, 0.2f, 0};
    fixture f = tank_fixture(2, d, 2.0f, tank, water, 0);
    cr_assert_eq(floe_module_load(f.ctx, "wcsph"), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    floe_param_kv ck[] = {KV_F("delta", 0.1)};
    fixture_add(&f, "neighbours", 0, NULL);
    fixture_add(&f, "wcsph.continuity", 1, ck);
    fixture_add(&f, "gravity", 0, NULL);
    fixture_add(&f, "integrate", 0, NULL);
    cr_assert_eq(floe_step(f.ctx, 1e-4), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    cr_assert_eq(floe_step(f.ctx, 1e-4), FLOE_ERR_ARG);
    cr_assert(strstr(floe_ctx_error(f.ctx), "put 'wcsph.pressure' in the step"), "%s", floe_ctx_error(f.ctx));
    floe_ctx_destroy(f.ctx);
}

/* Adami's wall pressure takes B and gamma from wcsph.pressure: without it
 * in the step the pressure force stops with a message saying so */
Test(delta_sph, extrapolated_walls_need_the_equation_of_state)
{
    const float d = 0.02f, tank[3] = {0.2f, 0.3f, 0}, water[3] = {0.2f, 0.2f, 0};
    fixture f = tank_fixture(2, d, 2.0f, tank, water, 0);
    cr_assert_eq(floe_module_load(f.ctx, "wcsph"), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    cr_assert_eq(floe_module_load(f.ctx, "sph"), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    floe_param_kv wk[] = {KV_S("walls", "extrapolated")};
    fixture_add(&f, "neighbours", 0, NULL);
    fixture_add(&f, "sph.density", 0, NULL);
    fixture_add(&f, "gravity", 0, NULL);
    fixture_add(&f, "wcsph.pressure_force", 1, wk);
    fixture_add(&f, "integrate", 0, NULL);
    cr_assert_eq(floe_step(f.ctx, 1e-4), FLOE_ERR_ARG);
    cr_assert(strstr(floe_ctx_error(f.ctx), "put 'wcsph.pressure' before it"), "%s", floe_ctx_error(f.ctx));
    floe_ctx_destroy(f.ctx);
}

/* relative L2 difference of the accelerations a of two worlds, particles matched by id */
static double a_rel_l2(fixture *a, fixture *b)
{
    const uint32_t n = floe_set_size(a->ctx, a->fluid);
    cr_assert_eq(n, floe_set_size(b->ctx, b->fluid));
    const uint32_t *ida = floe_attr(a->ctx, a->fluid, "id", FLOE_U32), *idb = floe_attr(b->ctx, b->fluid, "id", FLOE_U32);
    const float *xa = floe_attr(a->ctx, a->fluid, "a", FLOE_VEC3), *xb = floe_attr(b->ctx, b->fluid, "a", FLOE_VEC3);
    uint32_t *where = malloc(n * sizeof *where);
    for (uint32_t i = 0; i < n; i++)
        where[idb[i]] = i;
    double num = 0, den = 0;
    for (uint32_t i = 0; i < n; i++)
        for (int c = 0; c < 3; c++) {
            const double e = (double)xa[3 * i + c] - xb[3 * where[ida[i]] + c];
            num += e * e;
            den += (double)xa[3 * i + c] * xa[3 * i + c];
        }
    free(where);
    return sqrt(num / den);
}

/* the jittered tank of cl_world with viscosity.laminar (nu = 1e-3, so the
 * walls' shear counts against the pressure) and the walls' options:
 * k = 0 Adami's wall pressure (wcsph.pressure_force{walls = "extrapolated"}),
 * 1 the gradient correction, 2 both with XSPH in the same pass, 3 Adami's
 * wall velocity (viscosity.laminar{wall_velocity = "extrapolated"}), 4 none
 * of them (mirrored walls, the reference the options must differ from) */
static fixture walls_world(const char *backend, int dim, int k)
{
    fixture w = cl_world(backend, dim);
    cr_assert_eq(floe_module_load(w.ctx, "viscosity"), FLOE_OK, "%s", floe_ctx_error(w.ctx));
    floe_pipeline_clear(w.ctx);
    floe_param_kv ck[] = {KV_F("delta", 0.1)}, pk[] = {KV_F("speed_of_sound", 20)};
    floe_param_kv lk[] = {KV_F("nu", 1e-3), KV_F("boundary_nu", 1e-3),
                          KV_S("wall_velocity", k == 3 ? "extrapolated" : "mirror")};
    floe_param_kv wk[] = {KV_S("walls", k == 0 || k == 2 ? "extrapolated" : "mirror"),
                          KV_B("gradient_correction", k == 1 || k == 2), KV_F("xsph", k == 2 ? 0.05 : 0.0)};
    fixture_add(&w, "neighbours", 0, NULL);
    fixture_add(&w, "wcsph.continuity", 1, ck);
    fixture_add(&w, "wcsph.pressure", 1, pk);
    fixture_add(&w, "gravity", 0, NULL);
    fixture_add(&w, "viscosity.laminar", 3, lk);
    fixture_add(&w, "wcsph.pressure_force", 3, wk);
    fixture_add(&w, "integrate", 0, NULL);
    return w;
}

/* Adami's wall pressure, the gradient correction and Adami's wall velocity
 * on the OpenCL path against the C path: three steps of the jittered tank,
 * the accelerations and densities agree to rounding (the device sums the
 * walls' values with atomic additions, in its own order), and each option
 * moved the accelerations away from the mirrored walls' by far more */
static void walls_agree(int dim)
{
    need_opencl();
    static const char *const what[] = {"walls = extrapolated", "gradient_correction", "both, with xsph",
                                       "wall_velocity = extrapolated"};
    fixture ref = walls_world("cpu", dim, 4);
    for (int k = 0; k < 3; k++)
        cr_assert_eq(floe_step(ref.ctx, 2e-4), FLOE_OK, "%s", floe_ctx_error(ref.ctx));
    for (int k = 0; k < 4; k++) {
        fixture c = walls_world("cpu", dim, k), g = walls_world("opencl", dim, k);
        double ea = 0, er = 0;
        for (int s = 0; s < 3; s++) {
            cr_assert_eq(floe_step(c.ctx, 2e-4), FLOE_OK, "%s", floe_ctx_error(c.ctx));
            cr_assert_eq(floe_step(g.ctx, 2e-4), FLOE_OK, "%s: %s", what[k], floe_ctx_error(g.ctx));
            ea = fmax(ea, a_rel_l2(&c, &g));
            er = fmax(er, rho_rel_l2(&c, &g));
        }
        const double moved = a_rel_l2(&c, &ref);
        cr_log_info("%dD %s: OpenCL vs C over 3 steps, a relative L2 %.3g, rho %.3g; against mirrored walls a "
                    "differs by %.3g", dim, what[k], ea, er, moved);
        cr_assert_lt(ea, 1e-4, "%s: a differs by %.3g (relative L2)", what[k], ea);
        cr_assert_lt(er, 1e-6, "%s: rho differs by %.3g (relative L2)", what[k], er);
        cr_assert_gt(moved, 100 * ea, "%s: the option moved a by only %.3g", what[k], moved);
        floe_ctx_destroy(c.ctx);
        floe_ctx_destroy(g.ctx);
    }
    floe_ctx_destroy(ref.ctx);
}

Test(delta_sph, extrapolated_walls_opencl_agrees_2d, .timeout = FLOE_TIMEOUT(600)) { walls_agree(2); }
Test(delta_sph, extrapolated_walls_opencl_agrees_3d, .timeout = FLOE_TIMEOUT(600)) { walls_agree(3); }
