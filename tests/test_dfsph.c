/* DFSPH (modules/dfsph) against numbers: a hydrostatic tank (density error at
 * rest, pressure against rho0 g h, time step against WCSPH's acoustic step),
 * the 2D dam break against Martin & Moyce (1952), bitwise determinism over
 * thread counts. docs/dfsph.md reports the measured values. */
#include "ctx.h" /* the frame's module statistics (ctx->stats) */
#include "csv_fixture.h"
#include "plunger_scene.h"
#include "scene_fixture.h"
#include "tank_fixture.h"

#include <math.h>
#include <stdio.h>

/* neighbours, density, gravity, the solve, velocity damping while settling,
 * an optional host stage, integration */
static double wall_alpha; /* XSPH against walls (sph.xsph boundary_alpha), 0 = free slip */
static int grad_corr;     /* dfsph.solve's gradient_correction */

static void dfsph_pipeline(fixture *f, double damping, floe_stage_fn host, void *user)
{
    cr_assert_eq(floe_module_load(f->ctx, "sph"), FLOE_OK, "%s", floe_ctx_error(f->ctx)); /* sph.density */
    cr_assert_eq(floe_module_load(f->ctx, "dfsph"), FLOE_OK, "%s", floe_ctx_error(f->ctx));
    floe_pipeline_clear(f->ctx);
    fixture_add(f, "neighbours", 0, NULL);
    fixture_add(f, "sph.density", 0, NULL);
    fixture_add(f, "gravity", 0, NULL);
    if (wall_alpha > 0) {
        cr_assert_eq(floe_module_load(f->ctx, "sph"), FLOE_OK, "%s", floe_ctx_error(f->ctx));
        floe_param_kv xk[] = {KV_F("alpha", 0), KV_F("boundary_alpha", wall_alpha)};
        fixture_add(f, "sph.xsph", 2, xk);
    }
    floe_param_kv sk[] = {{"gradient_correction", FLOE_PARAM_BOOL, {.b = grad_corr}}};
    fixture_add(f, "dfsph.solve", 1, sk);
    if (damping > 0) {
        cr_assert_eq(floe_module_load(f->ctx, "hello"), FLOE_OK, "%s", floe_ctx_error(f->ctx));
        floe_param_kv dk[] = {KV_F("rate", damping)};
        fixture_add(f, "hello.damp", 1, dk);
    }
    if (host)
        cr_assert_eq(floe_pipeline_add_fn(f->ctx, "test.host", host, user), FLOE_OK, "%s", floe_ctx_error(f->ctx));
    fixture_add(f, "integrate", 0, NULL);
}

typedef struct run_log {
    double err_sum, err_max, it_sum, it_max, itv_sum;
    uint64_t steps;
    double t0, t1;
    floe_frame_fn next;
    void *next_user;
} run_log;

static int log_frame(floe_ctx *ctx, const floe_frame_stats *st, void *user)
{
    run_log *L = user;
    for (int i = 0; i < ctx->nstats; i++) {
        const stat_acc *s = &ctx->stats[i];
        if (!strcmp(s->name, "dfsph.density_error")) {
            L->err_sum += s->sum;
            L->err_max = fmax(L->err_max, s->max);
        } else if (!strcmp(s->name, "dfsph.iterations")) {
            L->it_sum += s->sum;
            L->it_max = fmax(L->it_max, s->max);
        } else if (!strcmp(s->name, "dfsph.divergence_iterations")) {
            L->itv_sum += s->sum;
        }
    }
    L->steps += st->steps;
    L->t1 = st->time;
    return L->next ? L->next(ctx, st, L->next_user) : 0;
}

static void run_logged(fixture *f, double seconds, double fps, run_log *L)
{
    L->t0 = floe_ctx_info(f->ctx)->time;
    floe_run_def r = fixture_run_def(seconds, fps);
    r.on_frame = log_frame;
    r.user = L;
    cr_assert_eq(floe_run(f->ctx, &r, NULL), FLOE_OK, "%s", floe_ctx_error(f->ctx));
}

/* A 2D tank (0.2 x 0.3 m of water, d = 1 cm, 600 particles) settles damped
 * for 1.5 s, then is measured undamped for 1.0 s. The floor carries the
 * weight within 2% (a force probe at 1 kHz with the solver's Akinci wall
 * pressure; measured -0.02%); pressure probes (kernel-sum normalised,
 * time-averaged at 1 kHz) read rho0 g (h - y), h from the water-height
 * gauges (measured -0.3 to +3.2%: the plain SPH pressure of a settled
 * packing sits 1.5-3% high, as IISPH's without its gradient correction,
 * docs/iisph.md "Hydrostatic pressure"; with dfsph.solve's
 * gradient_correction within 2%). The particles' own time-averaged
 * pressures are logged (docs/dfsph.md): with Akinci's wall force the
 * layers next to the floor carry twice the pressure a mirrored wall needs. */
#define F_TOL 0.02
/* plain: measured -0.27..+3.17% in the native (AVX2) build, up to +4.25%
 * (y = 0.18 m) in the generic build of make sanitize-generic, where the rows
 * sum in another order and the settled packing comes out differently */
#define P_TOL 0.05
/* with gradient_correction: probes -1.98, -0.07, +0.47, +0.85, +0.12,
 * +1.06% (native build); the limit leaves room for another build's packing.
 * The floor's force probe then reads +4.1%: it sums Akinci's wall force
 * with the plain gradients, the solver scales them by gamma_i (docs/dfsph.md) */
#define P_TOL_CORR 0.025
#define F_TOL_CORR 0.06
static void tank_case(int corr)
{
    const float d = 0.01f, tank[3] = {0.2f, 0.4f, 0}, water[3] = {0.2f, 0.3f, 0};
    const double p_tol = corr ? P_TOL_CORR : P_TOL, f_tol = corr ? F_TOL_CORR : F_TOL;
    grad_corr = corr;
    fixture f = tank_fixture(2, d, 2.0f, tank, water, 0);
    static pavg A;
    A.fluid = f.fluid;
    A.T = 0;
    cr_assert_eq(floe_attr_add(f.ctx, f.fluid, "p_sum", FLOE_F32), FLOE_OK);
    cr_assert_eq(floe_attr_add(f.ctx, f.fluid, "y_sum", FLOE_F32), FLOE_OK);
    const uint32_t n0 = floe_set_size(f.ctx, f.fluid);
    const double m0 = total_mass(&f);

    enum { NP = 6 };
    float pts[NP][3], gauges[3][3] = {{0.05f, 0, 0}, {0.1f, 0, 0}, {0.15f, 0, 0}};
    for (int k = 0; k < NP; k++)
        pts[k][0] = 0.1f, pts[k][1] = 0.06f + 0.04f * k, pts[k][2] = 0;
    floe_probe_def pd = {.name = "pressure", .kind = FLOE_PROBE_POINTS, .npoints = NP,
                         .points = (const float(*)[3])pts, .rate = 1000};
    floe_probe_def gd = {.name = "gauges", .kind = FLOE_PROBE_HEIGHT, .npoints = 3, .points = (const float(*)[3])gauges};
    floe_probe_def fd = {.name = "floor", .kind = FLOE_PROBE_FORCE, .set = "boundary", .wall = FLOE_WALL_AKINCI,
                         .rate = 1000};
    cr_assert_eq(floe_probe_add(f.ctx, &pd), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    cr_assert_eq(floe_probe_add(f.ctx, &gd), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    cr_assert_eq(floe_probe_add(f.ctx, &fd), FLOE_OK, "%s", floe_ctx_error(f.ctx));

    run_log S = {0}, L = {0};
    dfsph_pipeline(&f, 20, NULL, NULL);
    run_logged(&f, 1.5, 10, &S);
    dfsph_pipeline(&f, 0, accumulate_p, &A);
    float *ps = floe_attr(f.ctx, f.fluid, "p_sum", FLOE_F32), *ys = floe_attr(f.ctx, f.fluid, "y_sum", FLOE_F32);
    memset(ps, 0, n0 * sizeof *ps);
    memset(ys, 0, n0 * sizeof *ys);
    sc_setup(); /* a folder for the probes' tables */
    L.t0 = floe_ctx_info(f.ctx)->time;
    floe_run_def r = fixture_run_def(1.0, 10);
    r.on_frame = log_frame;
    r.user = &L;
    r.out_dir = sc_out;
    cr_assert_eq(floe_run(f.ctx, &r, NULL), FLOE_OK, "%s", floe_ctx_error(f.ctx));

    /* what the probes read */
    csv_table tp, tg, tf;
    char path[400];
    snprintf(path, sizeof path, "%s/pressure.probe.csv", sc_out);
    cr_assert_eq(csv_read(path, &tp), 0);
    snprintf(path, sizeof path, "%s/gauges.probe.csv", sc_out);
    cr_assert_eq(csv_read(path, &tg), 0);
    snprintf(path, sizeof path, "%s/floor.probe.csv", sc_out);
    cr_assert_eq(csv_read(path, &tf), 0);
    sc_teardown();
    double h = 0, fy = 0;
    for (int r0 = 0; r0 < tg.nrows; r0++)
        for (int k = 1; k <= 3; k++)
            h += csv_at(&tg, r0, k) / (3.0 * tg.nrows);
    for (int r0 = 0; r0 < tf.nrows; r0++)
        fy += csv_at(&tf, r0, 2) / tf.nrows;
    const double weight = 1000.0 * water[0] * water[1] * 9.81;
    cr_log_info("floor force %.2f N/m against the weight %.2f N/m (%+.2f%%); gauges %.5f m (fill %.3f m)", -fy,
                weight, 100 * (-fy / weight - 1), h, water[1]);
    cr_expect(fabs(-fy / weight - 1) < f_tol, "floor force %.2f against the weight %.2f", -fy, weight);
    cr_expect(fabs(h - water[1]) < 0.5 * d, "gauges read %.4f m", h);
    for (int k = 0; k < NP; k++) {
        double sum = 0;
        for (int r0 = 0; r0 < tp.nrows; r0++)
            sum += csv_at(&tp, r0, 1 + 2 * k);
        const double avg = sum / tp.nrows, ref = 1000.0 * 9.81 * (h - pts[k][1]);
        cr_log_info("pressure probe at y = %.2f m: %.1f Pa against rho0 g (h - y) = %.1f Pa (%+.2f%%)", pts[k][1], avg,
                    ref, 100 * (avg / ref - 1));
        cr_expect(fabs(avg / ref - 1) < p_tol, "probe at y = %.2f: %.1f Pa against %.1f Pa", pts[k][1], avg, ref);
    }
    csv_free(&tp);
    csv_free(&tg);
    csv_free(&tf);

    cr_assert_eq(floe_set_size(f.ctx, f.fluid), n0);
    cr_assert_eq(total_mass(&f), m0, "mass must be conserved exactly");
    check_in_tank(&f, tank, d);
    const double err_rho = compression(&f), err_stat = L.err_sum / (double)L.steps;
    cr_log_info("density error at rest: %.4f%% (rho), solver %.4f%% mean / %.4f%% max per step; %.1f iterations "
                "(max %.0f), %.1f divergence iterations per step", 100 * err_rho, 100 * err_stat, 100 * L.err_max,
                L.it_sum / (double)L.steps, L.it_max, L.itv_sum / (double)L.steps);

    const uint32_t n = floe_set_size(f.ctx, f.fluid);
    float *pa = malloc(n * sizeof *pa), *ya = malloc(n * sizeof *ya);
    ps = floe_attr(f.ctx, f.fluid, "p_sum", FLOE_F32);
    ys = floe_attr(f.ctx, f.fluid, "y_sum", FLOE_F32);
    for (uint32_t i = 0; i < n; i++) {
        pa[i] = (float)(ps[i] / A.T);
        ya[i] = (float)(ys[i] / A.T);
    }
    int layers, slabs;
    double fill;
    const double worst = layer_pressure_error(&f, pa, ya, tank[0], d, d, &layers, &fill, "time-averaged");
    const double worst_slab =
        layer_pressure_error(&f, pa, ya, tank[0], d, floe_ctx_info(f.ctx)->support, &slabs, &fill, "time-averaged");
    free(pa);
    free(ya);
    cr_log_info("pressure vs rho0 g h below the top two layers, time-averaged over %.2f s: layers worst %.2f%% (%d), "
                "slabs one support radius high worst %.2f%% (%d); fill %.4f", A.T, 100 * worst, layers,
                100 * worst_slab, slabs, fill);
    const double g = 9.81, c = 10 * sqrt(2 * g * water[1]), dt_wcsph = 0.4 * d / c;
    const double dt_mean = (L.t1 - L.t0) / (double)L.steps;
    cr_log_info("mean dt %.3g s vs WCSPH 0.4 d / c = %.3g s (c = %.1f m/s): %.1fx", dt_mean, dt_wcsph, c,
                dt_mean / dt_wcsph);
    cr_assert(layers >= 10 && slabs >= 5, "%d layers, %d slabs compared", layers, slabs);
    cr_assert(dt_mean >= 5 * dt_wcsph, "mean dt %.3g s < 5 x WCSPH's %.3g s", dt_mean, dt_wcsph);
    /* the limit: average density error at rest <= 0.05% (the solver's
     * measure, the prediction it stops on); summed from rho at the new
     * positions within 0.06% (iisph's limit: the prediction is linear) */
    cr_assert(err_stat <= 0.0005, "solver's average density error %.4f%% > 0.05%%", 100 * err_stat);
    cr_assert(err_rho <= 0.0006, "average density error %.4f%% > 0.06%%", 100 * err_rho);
    floe_ctx_destroy(f.ctx);
    grad_corr = 0;
}

Test(dfsph, hydrostatic_tank_2d, .timeout = FLOE_TIMEOUT(600)) { tank_case(0); }

/* the 2% of the pressure probes: met with gradient_correction */
Test(dfsph, hydrostatic_tank_2d_gradient_correction, .timeout = FLOE_TIMEOUT(600)) { tank_case(1); }

/* Martin & Moyce (1952), n^2 = 2, as test_iisph.c's: settle 0.4 s behind a
 * gate, release; the front within IISPH's limits (18% as measured, 10% with
 * the time origin shifted by 0.175, sim_fixture.h). Free-slip walls lead by
 * up to 19.5% (T = 1.19; IISPH free slip: 19.2%); XSPH against the walls
 * (viscosity.xsph boundary_alpha 0.02: 18.2%, 0.05: 17.1%; 17.7% with
 * Chebyshev) is the wall friction here, as IISPH's test uses its implicit
 * wall viscosity. */
#define WALL_ALPHA 0.05
Test(dfsph, dam_break_2d_martin_moyce, .timeout = FLOE_TIMEOUT(1200))
{
    const double a = 0.1;
    const float d = (float)(a / 40), tank[3] = {(float)(5 * a), (float)(3 * a), 0};
    const float water[3] = {(float)a, (float)(2 * a), 0};
    fixture f = tank_fixture(2, d, 2.0f, tank, water, 1);
    floe_set gate = floe_set_create(f.ctx, "gate", FLOE_SET_BOUNDARY, 0);
    float g0[3] = {(float)a + 0.5f * d, 0, 0}, g1[3] = {(float)a + 2.5f * d, (float)(2.2 * a), 0};
    cr_assert(floe_boundary_solid_box(f.ctx, gate, g0, g1) > 0);
    run_log S = {0};
    dfsph_pipeline(&f, 20, NULL, NULL);
    run_logged(&f, 0.4, 10, &S);
    cr_assert_eq(floe_core_api()->set_resize(f.ctx, gate, 0), FLOE_OK);
    wall_alpha = WALL_ALPHA;
    dfsph_pipeline(&f, 0, NULL, NULL);
    wall_alpha = 0;

    static front_log L;
    L.n = 0;
    L.a = a;
    L.d = d;
    L.tscale = sqrt(2 * 9.81 / a);
    L.t0 = floe_ctx_info(f.ctx)->time;
    L.fluid = f.fluid;
    run_log R = {0};
    R.next = on_front;
    R.next_user = &L;
    run_logged(&f, 2.7 / L.tscale, 400, &R);
    double worst, worst_shift;
    const int compared = front_vs_martin_moyce(&L, &worst, &worst_shift);
    cr_log_info("release: %llu steps (mean dt %.3g s), %.1f iterations and %.1f divergence iterations per step, "
                "density error %.4f%% mean", (unsigned long long)R.steps, (R.t1 - R.t0) / (double)R.steps,
                R.it_sum / (double)R.steps, R.itv_sum / (double)R.steps, 100 * R.err_sum / (double)R.steps);
    cr_assert(compared >= 8, "compared only %d points", compared);
    cr_assert(worst < 0.18, "surge front deviates %.1f%% from Martin & Moyce (limit 18%%)", 100 * worst);
    cr_assert(worst_shift < 0.10, "shifted surge front deviates %.1f%% (limit 10%%)", 100 * worst_shift);
    floe_ctx_destroy(f.ctx);
}

/* A collapsing column, 1 and 2 threads: the same positions bit for bit. */
static float *collapse(int threads, uint32_t *n)
{
    const float d = 0.02f, tank[3] = {0.6f, 0.4f, 0}, water[3] = {0.2f, 0.3f, 0};
    fixture f = tank_fixture(2, d, 2.0f, tank, water, 1);
    floe_ctx_set_threads(f.ctx, threads);
    dfsph_pipeline(&f, 0, NULL, NULL);
    floe_run_def r = fixture_run_def(0.2, 20);
    cr_assert_eq(floe_run(f.ctx, &r, NULL), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    *n = floe_set_size(f.ctx, f.fluid);
    float *x = malloc(3 * *n * sizeof *x);
    memcpy(x, floe_attr(f.ctx, f.fluid, "x", FLOE_VEC3), 3 * *n * sizeof *x);
    floe_ctx_destroy(f.ctx);
    return x;
}

Test(dfsph, bit_identical_over_thread_counts, .timeout = FLOE_TIMEOUT(300))
{
    uint32_t n1, n2;
    float *a = collapse(1, &n1), *b = collapse(2, &n2);
    cr_assert_eq(n1, n2);
    cr_assert(memcmp(a, b, 3 * n1 * sizeof *a) == 0, "positions differ between 1 and 2 threads");
    free(a);
    free(b);
}

/* A column started on a fresh lattice and left alone (no damping) stays at
 * rest. A fresh 2D lattice sums to 0.086% above rho0 (cubic spline, H = 2
 * d), and the row next to a two-layer Akinci wall to 3-4.6%. Removed at a
 * speed per particle (max(max_correction_speed, |v|max) dt / d of the
 * density a step), the rows' shares added up over the column, the |v|max in
 * the bound fed on itself, and the top rows left at 7.5 m/s (adaptive dt,
 * over 0.2 s) and 9.6 m/s (dt = 1e-4 s, over 0.02 s). The compression a run
 * starts with is now a budget that shrinks by max_correction_speed dt / L a
 * step (dfsph_start_lag, L the fluid column's height): 0.39 and 0.41 m/s over 0.2
 * s, the largest speed of any particle (rms 0.07-0.09 m/s: the square
 * lattice rearranging under pressure; the same column under WCSPH, c = 30
 * m/s, reaches 1.3 m/s, docs/dfsph.md). */
static int log_vmax(floe_ctx *ctx, const floe_frame_stats *st, void *user)
{
    (void)ctx;
    double *vm = user;
    *vm = fmax(*vm, st->max_speed);
    return 0;
}

static double column_vmax(float d, double dt, double seconds)
{
    const float tank[3] = {0.2f, 0.4f, 0}, water[3] = {0.2f, 0.3f, 0};
    fixture f = tank_fixture(2, d, 2.0f, tank, water, 0);
    dfsph_pipeline(&f, 0, NULL, NULL);
    double vm = 0;
    floe_run_def r = fixture_run_def(seconds, 100);
    r.dt = dt;
    r.on_frame = log_vmax;
    r.user = &vm;
    cr_assert_eq(floe_run(f.ctx, &r, NULL), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    cr_log_info("2D column 0.3 m deep, d = %g m, dt %s: largest speed over %.2f s %.4g m/s", d,
                dt > 0 ? "1e-4 s" : "adaptive", seconds, vm);
    floe_ctx_destroy(f.ctx);
    return vm;
}

Test(dfsph, fresh_lattice_column_stays_at_rest, .timeout = FLOE_TIMEOUT(600))
{
    const double v1 = column_vmax(0.01f, 0, 0.2), v2 = column_vmax(0.01f, 1e-4, 0.2);
    cr_assert(v1 < 0.5, "adaptive dt: a particle of the column reached %.3g m/s (limit 0.5)", v1);
    cr_assert(v2 < 0.5, "dt = 1e-4 s: a particle of the column reached %.3g m/s (limit 0.5)", v2);
}

/* dfsph.solve's `viscosity` (computed in its set-up pass on the stored rows)
 * is viscosity.laminar's monaghan form without a wall term: a collapsing
 * column (2D and 3D, nu = 0.01 m^2/s, SPlisHSPlasH's dam break value) run
 * with either gives the same positions to float rounding, and without any
 * viscosity visibly other ones. */
static float *visc_column(int dim, int mode, uint32_t *n)
{
    const float d = dim == 3 ? 0.04f : 0.02f, tank[3] = {0.6f, 0.4f, 0.2f}, water[3] = {0.2f, 0.3f, 0.2f};
    fixture f = tank_fixture(dim, d, 2.0f, tank, water, 1);
    cr_assert_eq(floe_module_load(f.ctx, "sph"), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    cr_assert_eq(floe_module_load(f.ctx, "dfsph"), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    cr_assert_eq(floe_module_load(f.ctx, "viscosity"), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    floe_pipeline_clear(f.ctx);
    fixture_add(&f, "neighbours", 0, NULL);
    fixture_add(&f, "sph.density", 0, NULL);
    fixture_add(&f, "gravity", 0, NULL);
    const double nu = 0.01;
    if (mode == 1) {
        floe_param_kv vk[] = {KV_F("nu", nu), KV_S("form", "monaghan"), KV_F("boundary_nu", 0)};
        fixture_add(&f, "viscosity.laminar", 3, vk);
    }
    floe_param_kv sk[] = {KV_F("viscosity", mode == 2 ? nu : 0.0)};
    fixture_add(&f, "dfsph.solve", 1, sk);
    fixture_add(&f, "integrate", 0, NULL);
    floe_run_def r = fixture_run_def(0.15, 20);
    cr_assert_eq(floe_run(f.ctx, &r, NULL), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    *n = floe_set_size(f.ctx, f.fluid);
    float *x = malloc(3 * *n * sizeof *x);
    memcpy(x, floe_attr(f.ctx, f.fluid, "x", FLOE_VEC3), 3 * *n * sizeof *x);
    floe_ctx_destroy(f.ctx);
    return x;
}

static double rms_apart(const float *a, const float *b, uint32_t n)
{
    double s = 0;
    for (uint32_t i = 0; i < 3 * n; i++)
        s += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    return sqrt(s / n);
}

Test(dfsph, viscosity_equals_the_laminar_stage, .timeout = FLOE_TIMEOUT(300))
{
    for (int dim = 2; dim <= 3; dim++) {
        uint32_t n0, n1, n2;
        float *none = visc_column(dim, 0, &n0), *stage = visc_column(dim, 1, &n1), *fused = visc_column(dim, 2, &n2);
        cr_assert(n0 == n1 && n1 == n2);
        const double same = rms_apart(stage, fused, n1), other = rms_apart(stage, none, n1);
        cr_log_info("%dD column, %u particles, 0.15 s: rms distance stage / fused %.3g m, stage / inviscid %.3g m", dim,
                    n1, same, other);
        cr_assert(same < 1e-5, "%dD: fused viscosity %.3g m (rms) from viscosity.laminar's (limit 1e-5 m)", dim, same);
        cr_assert(other > 1e-3, "%dD: the viscosity moved the particles only %.3g m (rms)", dim, other);
        free(none), free(stage), free(fused);
    }
}

/* A body pushed into the water (plunger_scene.h): the density change of
 * both solves takes the fluid's velocity relative to the body's particles.
 * Largest compression under the plate within 1.5% (measured 0.52%; with
 * the body's particles taken as at rest, as before 2026-12-05's third
 * session, 4.87%), mean within 0.5% (measured -0.27%, before -0.29%). */
Test(dfsph, pushed_plate_does_not_compress_the_water, .init = sc_setup, .fini = sc_teardown,
     .timeout = FLOE_TIMEOUT(300))
{
    floe_scene_opts o = sc_opts();
    cr_assert_eq(sc_run(&o, PLUNGER_SCENE, "dfsph", "'dfsph.solve'", 0.005, 0.015), 0, "%s", sc_err);
}
