/* Viscosity module against numbers: start-up of plane Poiseuille flow in 2D
 * between two walls, periodic along the flow, driven by a body acceleration
 * F along x (the sim's gravity). The layer-averaged velocity profile is
 * compared with the series solution
 *   u(y,t) = F/(2 nu) y (L - y)
 *          - sum_{n>=0} 4 F L^2 / (nu pi^3 (2n+1)^3) sin((2n+1) pi y / L) exp(-(2n+1)^2 pi^2 nu t / L^2)
 * (walls at y = 0 and y = L) at two times. The pipeline is WCSPH with the
 * laminar operator (or Kim's operator at its equivalent nu):
 *   neighbours, sph.density, wcsph.pressure, gravity, viscosity.*, wcsph.pressure_force, integrate. */
#include "sim_fixture.h"

#include <math.h>
#include <stdio.h>
#include <unistd.h>

/* 2D channel: L = 0.1 m, nu = 0.01 m^2/s, F = 0.8 m/s^2, so u_max = F L^2 / (8 nu)
 * = 0.1 m/s and the diffusion time L^2 / nu = 1 s. */
#define CH_L 0.1
#define CH_NU 0.01
#define CH_F 0.8
#define CH_ROWS 30   /* particles across the channel */
#define CH_COLS 12   /* along the periodic axis (6 support radii) */

static double poiseuille(double y, double t)
{
    const double L = CH_L, nu = CH_NU, F = CH_F;
    double u = F / (2 * nu) * y * (L - y);
    for (int n = 0; n < 200; n++) {
        const double k = 2 * n + 1;
        u -= 4 * F * L * L / (nu * pow(FLOE_PI, 3) * k * k * k) * sin(k * FLOE_PI * y / L) *
             exp(-k * k * FLOE_PI * FLOE_PI * nu * t / (L * L));
    }
    return u;
}

typedef struct profile_log {
    floe_set fluid;
    float d;
    double t_check[2];
    double worst[2];   /* max over layers |u - u_exact| / u_exact(L/2) */
    double centre[2];  /* measured centre-line velocity / exact */
    double ymin, ymax; /* fluid extent at the end (particles stay between the walls) */
    int done;
} profile_log;

static int on_frame(floe_ctx *ctx, const floe_frame_stats *st, void *user)
{
    profile_log *P = user;
    for (int c = 0; c < 2; c++) {
        if (fabs(st->time - P->t_check[c]) > 1e-6)
            continue;
        const uint32_t n = floe_set_size(ctx, P->fluid);
        const float *x = floe_attr(ctx, P->fluid, "x", FLOE_VEC3), *v = floe_attr(ctx, P->fluid, "v", FLOE_VEC3);
        double su[CH_ROWS] = {0}, sy[CH_ROWS] = {0};
        int cnt[CH_ROWS] = {0};
        P->ymin = 1e9;
        P->ymax = -1e9;
        for (uint32_t i = 0; i < n; i++) {
            const double y = x[3 * i + 1];
            P->ymin = fmin(P->ymin, y);
            P->ymax = fmax(P->ymax, y);
            int b = (int)floor(y / P->d);
            b = b < 0 ? 0 : b >= CH_ROWS ? CH_ROWS - 1 : b;
            su[b] += v[3 * i];
            sy[b] += y;
            cnt[b]++;
        }
        const double uc = poiseuille(0.5 * CH_L, st->time);
        double worst = 0;
        cr_log_info("t = %.3f s (step %llu): y [m]   u_sph [m/s]   u_exact [m/s]   error / u_centre", st->time,
                    (unsigned long long)st->steps);
        for (int b = 0; b < CH_ROWS; b++) {
            if (!cnt[b])
                continue;
            const double y = sy[b] / cnt[b], u = su[b] / cnt[b], ue = poiseuille(y, st->time);
            const double e = fabs(u - ue) / uc;
            worst = fmax(worst, e);
            cr_log_info("  %.5f   %.5f   %.5f   %+.2f%%", y, u, ue, 100 * (u - ue) / uc);
        }
        double umid = 0;
        int nmid = 0;
        for (int b = CH_ROWS / 2 - 1; b <= CH_ROWS / 2; b++) {
            umid += su[b];
            nmid += cnt[b];
        }
        P->centre[c] = nmid ? umid / nmid / uc : 0;
        P->worst[c] = worst;
        P->done |= 1 << c;
        cr_log_info("t = %.3f s: worst layer error %.2f%% of u_centre = %.5f m/s", st->time, 100 * worst, uc);
    }
    return 0;
}

/* Builds the periodic channel and runs it with the given viscosity stage. */
static void run_channel(const char *stage, int nkv, const floe_param_kv *kv, profile_log *P)
{
    setenv("FLOE_MODULE_PATH", FLOE_TEST_BUILD_ROOT "/modules", 1);
    const float d = (float)(CH_L / CH_ROWS), Lx = CH_COLS * d;
    floe_sim_def def = floe_sim_default_def();
    def.dim = 2;
    def.spacing = d;
    def.threads = 2;
    def.gravity[0] = (float)CH_F;
    def.gravity[1] = 0;
    def.gravity[2] = 0;
    def.domain_min[0] = 0;
    def.domain_max[0] = Lx;
    def.domain_min[1] = -4 * d;
    def.domain_max[1] = (float)CH_L + 4 * d;
    def.periodic[0] = 1;
    char err[512];
    floe_ctx *ctx = floe_ctx_create(&def, err, sizeof err);
    cr_assert_not_null(ctx, "%s", err);
    cr_assert(floe_ctx_info(ctx)->periodic == 1u, "periodic x not set in sim info");

    floe_set fluid = floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000);
    floe_set wall = floe_set_create(ctx, "walls", FLOE_SET_BOUNDARY, 0);
    const float f0[3] = {0, 0, 0}, f1[3] = {Lx, (float)CH_L, 0};
    cr_assert_eq(floe_fill_box(ctx, fluid, f0, f1, NULL), CH_ROWS * CH_COLS);
    /* walls: 2 layers of boundary particles below y = 0 and above y = L, on the same lattice */
    const float b0[3] = {0, -2 * d, 0}, b1[3] = {Lx, 0, 0};
    const float t0[3] = {0, (float)CH_L, 0}, t1[3] = {Lx, (float)CH_L + 2 * d, 0};
    cr_assert_eq(floe_boundary_solid_box(ctx, wall, b0, b1), 2 * CH_COLS);
    cr_assert_eq(floe_boundary_solid_box(ctx, wall, t0, t1), 2 * CH_COLS);

    cr_assert_eq(floe_module_load(ctx, "wcsph"), FLOE_OK, "%s", floe_ctx_error(ctx));
    cr_assert_eq(floe_module_load(ctx, "sph"), FLOE_OK, "%s", floe_ctx_error(ctx));
    cr_assert_eq(floe_module_load(ctx, "viscosity"), FLOE_OK, "%s", floe_ctx_error(ctx));
    fixture f = {ctx, fluid, wall};
    fixture_add(&f, "neighbours", 0, NULL);
    fixture_add(&f, "sph.density", 0, NULL);
    floe_param_kv pk[] = {KV_F("speed_of_sound", 2.0)};
    fixture_add(&f, "wcsph.pressure", 1, pk);
    fixture_add(&f, "gravity", 0, NULL);
    fixture_add(&f, stage, nkv, kv);
    fixture_add(&f, "wcsph.pressure_force", 0, NULL);
    fixture_add(&f, "integrate", 0, NULL);

    P->fluid = fluid;
    P->d = d;
    P->t_check[0] = 0.1;
    P->t_check[1] = 1.0;
    floe_run_def r = fixture_run_def(1.0, 20);
    r.on_frame = on_frame;
    r.user = P;
    floe_run_summary sum;
    cr_assert_eq(floe_run(ctx, &r, &sum), FLOE_OK, "%s", floe_ctx_error(ctx));
    cr_log_info("%s: %llu steps, %.2f s wall", stage, (unsigned long long)sum.steps, sum.wall_s);
    cr_assert_eq(P->done, 3, "profile not sampled at both times");
    floe_ctx_destroy(ctx);
}

static void check(const profile_log *P)
{
    for (int c = 0; c < 2; c++) {
        cr_log_info("t = %.2f s: worst layer error %.2f%%, centre-line u / exact = %.4f", P->t_check[c],
                    100 * P->worst[c], P->centre[c]);
        cr_assert(P->worst[c] < 0.05, "t = %.2f s: velocity profile deviates %.2f%% of the centre-line velocity "
                  "from the series solution (limit 5%%)", P->t_check[c], 100 * P->worst[c]);
    }
    cr_assert(P->ymin > 0 && P->ymax < CH_L, "fluid left the channel: y in [%g, %g]", P->ymin, P->ymax);
}

Test(viscosity, poiseuille_laminar, .timeout = FLOE_TIMEOUT(300))
{
    static profile_log P;
    floe_param_kv kv[] = {KV_F("nu", CH_NU), KV_F("boundary_nu", CH_NU)};
    run_channel("viscosity.laminar", 2, kv, &P);
    check(&P);
}

/* The same channel with Adami et al. 2012's wall velocity (2 v_w - v~_b,
 * v~_b the kernel-weighted fluid velocity around each wall particle)
 * instead of the pairwise mirror: the same 5% of the centre-line velocity */
Test(viscosity, poiseuille_laminar_extrapolated_wall_velocity, .timeout = FLOE_TIMEOUT(300))
{
    static profile_log P;
    floe_param_kv kv[] = {KV_F("nu", CH_NU), KV_F("boundary_nu", CH_NU), KV_S("wall_velocity", "extrapolated")};
    run_channel("viscosity.laminar", 3, kv, &P);
    check(&P);
}

/* Kim 2020 eq. 37-40, applied to every pair, is the Monaghan form of the
 * laminar operator with nu = beta0 beta1 H / (2 (d + 2)) and walls at rest
 * (exactly so while rho_i = rho_j = rho0): one step of each on the same
 * particles, a 2D box of water in a tank with a swirling velocity field, must
 * give the same accelerations up to float rounding. */
static void accelerations(floe_ctx *ctx, floe_set fluid, const char *stage, int nkv, const floe_param_kv *kv,
                          float *out)
{
    floe_pipeline_clear(ctx);
    cr_assert_eq(floe_pipeline_add(ctx, "neighbours", NULL, 0), FLOE_OK, "%s", floe_ctx_error(ctx));
    cr_assert_eq(floe_pipeline_add(ctx, stage, kv, nkv), FLOE_OK, "%s", floe_ctx_error(ctx));
    /* no gravity stage: a is the viscous acceleration alone */
    memset(floe_attr(ctx, fluid, "a", FLOE_VEC3), 0, 3 * sizeof(float) * floe_set_size(ctx, fluid));
    cr_assert_eq(floe_step(ctx, 1e-4), FLOE_OK, "%s", floe_ctx_error(ctx));
    memcpy(out, floe_attr(ctx, fluid, "a", FLOE_VEC3), 3 * sizeof(float) * floe_set_size(ctx, fluid));
}

Test(viscosity, kim_is_monaghan_form_at_equivalent_nu, .timeout = FLOE_TIMEOUT(60))
{
    const float d = 0.01f, tank[3] = {0.3f, 0.3f, 0}, water[3] = {0.3f, 0.2f, 0};
    fixture f = fixture_tank(2, d, tank, water, 1);
    const floe_sim_info *si = floe_ctx_info(f.ctx);
    cr_assert_eq(floe_module_load(f.ctx, "viscosity"), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    const uint32_t n = floe_set_size(f.ctx, f.fluid);
    float *x = floe_attr(f.ctx, f.fluid, "x", FLOE_VEC3), *v = floe_attr(f.ctx, f.fluid, "v", FLOE_VEC3);
    for (uint32_t i = 0; i < n; i++) {
        v[3 * i] = (float)(sin(31.0 * x[3 * i + 1]) + 0.3 * cos(17.0 * x[3 * i]));
        v[3 * i + 1] = (float)(-cos(23.0 * x[3 * i]) + 0.2 * sin(11.0 * x[3 * i + 1]));
    }
    const double beta0 = 0.1, beta1 = 10, beta0b = 1, H = si->support;
    const double nu = beta0 * beta1 * H / 8, nub = beta0b * beta1 * H / 8;
    float *ak = malloc(3 * sizeof(float) * n), *al = malloc(3 * sizeof(float) * n);
    cr_assert(ak && al);
    floe_param_kv kk[] = {KV_F("beta0", beta0), KV_F("beta1", beta1), KV_F("boundary_beta0", beta0b)};
    accelerations(f.ctx, f.fluid, "viscosity.kim", 3, kk, ak);
    floe_param_kv lk[] = {KV_F("nu", nu), KV_F("boundary_nu", nub), KV_S("form", "monaghan"),
                          KV_S("wall_velocity", "zero")};
    accelerations(f.ctx, f.fluid, "viscosity.laminar", 4, lk, al);
    double amax = 0, emax = 0;
    for (uint32_t k = 0; k < 3 * n; k++) {
        amax = fmax(amax, fabs(ak[k]));
        emax = fmax(emax, fabs(ak[k] - al[k]));
    }
    cr_log_info("kim vs laminar(monaghan, nu = %.4g, boundary_nu = %.4g m^2/s): max |a| = %.4g m/s^2, max difference "
                "%.3g m/s^2 (%.2g relative)", nu, nub, amax, emax, emax / amax);
    cr_assert(amax > 1.0, "the test field must produce viscous accelerations (max |a| = %g)", amax);
    cr_assert(emax < 1e-4 * amax, "kim and laminar(monaghan) differ by %g of max |a|", emax / amax);
    free(ak);
    free(al);
    floe_ctx_destroy(f.ctx);
}

/* ---- the scene runs without NaN ---------------------------------------------- */

static void run_scene_file(const char *scene, const char *const *sets, int nsets, floe_run_summary *sum)
{
    setenv("FLOE_MODULE_PATH", FLOE_TEST_BUILD_ROOT "/modules", 1);
    char dir[] = "/tmp/floe_viscosity_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[1024], err[4096];
    snprintf(path, sizeof path, "%s/scenes/%s", FLOE_TEST_SOURCE_ROOT, scene);
    floe_scene_opts o;
    memset(&o, 0, sizeof o);
    o.path = path;
    o.frames = -1;
    o.out_dir = dir;
    o.threads = 2;
    o.progress = 0;
    o.write_frames = 0;
    o.sets = sets;
    o.nsets = nsets;
    o.summary = sum;
    const int rc = floe_scene_run(&o, err, sizeof err);
    cr_assert_eq(rc, FLOE_OK, "%s: %s", scene, err);
    cr_assert_eq(sum->status, FLOE_OK);
    cr_log_info("%s: %llu steps, %.3f s simulated", scene, (unsigned long long)sum->steps, sum->sim_time);
    snprintf(path, sizeof path, "%s/run.yaml", dir);
    unlink(path);
    rmdir(dir);
}

Test(viscosity, viscous_drop_on_wall_scene_runs, .timeout = FLOE_TIMEOUT(300))
{
    floe_run_summary sum;
    const char *flat[] = {"dim=2", "spacing=0.008", "seconds=0.6"};
    run_scene_file("viscous_drop_on_wall.lua", flat, 3, &sum);
    const char *deep[] = {"spacing=0.02", "seconds=0.4"};
    run_scene_file("viscous_drop_on_wall.lua", deep, 2, &sum);
}
