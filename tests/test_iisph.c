/* IISPH (modules/iisph) against numbers: hydrostatic tanks (density error,
 * pressure against rho g h, time step against WCSPH's acoustic step), the 2D
 * dam break against Martin & Moyce (1952), periodic axes, determinism.
 * docs/iisph.md reports the measured values. */
#include "ctx.h" /* the frame's module statistics (ctx->stats) */
#include "tank_fixture.h" /* tanks, total mass, compression, layer pressure, the front */

#include <math.h>
#include <stdio.h>
#include <unistd.h>

/* ---- helpers ------------------------------------------------------------- */

/* The IISPH pipeline: neighbours, density, gravity, pressure solve (with
 * velocity damping while settling), an optional host stage, integration. */
/* neighbours, density, gravity, the solve (damping, wall friction, gradient
 * correction), an optional host stage, integration */
static void iisph_pipeline(fixture *f, double damping, double boundary_viscosity, int grad_corr, floe_stage_fn host,
                           void *user)
{
    cr_assert_eq(floe_module_load(f->ctx, "sph"), FLOE_OK, "%s", floe_ctx_error(f->ctx)); /* sph.density */
    cr_assert_eq(floe_module_load(f->ctx, "iisph"), FLOE_OK, "%s", floe_ctx_error(f->ctx));
    floe_pipeline_clear(f->ctx);
    fixture_add(f, "neighbours", 0, NULL);
    fixture_add(f, "sph.density", 0, NULL);
    fixture_add(f, "gravity", 0, NULL);
    floe_param_kv kv[] = {KV_F("damping", damping), KV_F("boundary_viscosity", boundary_viscosity),
                          KV_B("gradient_correction", grad_corr)};
    fixture_add(f, "iisph.solve", 3, kv);
    if (host)
        cr_assert_eq(floe_pipeline_add_fn(f->ctx, "test.host", host, user), FLOE_OK, "%s", floe_ctx_error(f->ctx));
    fixture_add(f, "integrate", 0, NULL);
}

/* Per-step statistics of the solver, gathered frame by frame from the run
 * record's accumulators, and the step count and simulated time. */
typedef struct run_log {
    double err_sum, err_max; /* iisph.density_error: sum of per-frame means (weighted by steps), max */
    double it_sum, it_max;   /* iisph.iterations */
    uint64_t steps;
    double t0, t1;
    floe_frame_fn next;      /* chained callback */
    void *next_user;
} run_log;

static int log_frame(floe_ctx *ctx, const floe_frame_stats *st, void *user)
{
    run_log *L = user;
    for (int i = 0; i < ctx->nstats; i++) {
        const stat_acc *s = &ctx->stats[i];
        if (!strcmp(s->name, "iisph.density_error")) {
            L->err_sum += s->sum;
            L->err_max = fmax(L->err_max, s->max);
        } else if (!strcmp(s->name, "iisph.iterations")) {
            L->it_sum += s->sum;
            L->it_max = fmax(L->it_max, s->max);
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

/* ---- hydrostatic tanks ------------------------------------------------------ */

/* Pressure limits (measured, docs/iisph.md). With gradient_correction the
 * time-averaged pressure in slabs one support radius high (as the WCSPH
 * test) is within 1.4% (2D) and 1.1% (3D) of rho g h, single interior layers
 * within 0.8%; the four layers within one support radius of the floor carry
 * an odd-even pattern (2D: +-2.4 to 3.9%) that exerts no force and cancels
 * in the slabs. Without it the pressure sits 1.5-2.4% high in 2D (the settled
 * packing's tr M / dim = 0.984) and 1.4% in 3D: asserted at 3%. */
#define P_TOL_SLAB 0.02
#define P_TOL_LAYER 0.05
#define P_TOL_SLAB_PLAIN 0.03
/* Without it in 2D the odd-even pattern reaches further up, over the nine
 * layers above the floor, on top of the 1.5-2.4% the whole column sits
 * high: a generic (non-native) build gave layers 41-49 of the tank at
 * +3.2, -0.9, +5.0, -1.1, +3.4, +2.6, +0.9, +3.8, -1.8% (the pairs' means
 * +1.1 to +1.9%, what the slabs check at 3%), a native one at most +3.8%.
 * Single layers are held to the bias bound plus the pattern, 3% + 3.5% */
#define P_TOL_LAYER_PLAIN_2D 0.065

/* Settle with velocity damping, then measure without it (damping only
 * slows the velocity, so it would not bias the pressure either): the density error
 * (run record definition, from rho, and the solver's own per-step value),
 * the time-averaged layer pressure against rho g h (the snapshot is logged
 * too: IISPH pressure carries an odd-even part that exerts no force, see
 * docs/iisph.md), and the mean time step against WCSPH's acoustic step
 * dt = 0.4 d / c with c = 10 sqrt(2 g H) (about 1% density error). */
static void hydrostatic(int dim, float d, float support, const float tank[3], const float water[3], double settle,
                        double measure, int corr, double slab_tol, double layer_tol)
{
    fixture f = tank_fixture(dim, d, support, tank, water, 0);
    static pavg A;
    A.fluid = f.fluid;
    A.T = 0;
    cr_assert_eq(floe_attr_add(f.ctx, f.fluid, "p_sum", FLOE_F32), FLOE_OK);
    cr_assert_eq(floe_attr_add(f.ctx, f.fluid, "y_sum", FLOE_F32), FLOE_OK);
    uint32_t n0 = floe_set_size(f.ctx, f.fluid);
    double m0 = total_mass(&f);

    run_log S = {0};
    iisph_pipeline(&f, 20, 0, corr, NULL, NULL);
    run_logged(&f, settle, 10, &S);

    run_log L = {0};
    iisph_pipeline(&f, 0, 0, corr, accumulate_p, &A);
    float *ps = floe_attr(f.ctx, f.fluid, "p_sum", FLOE_F32), *ys = floe_attr(f.ctx, f.fluid, "y_sum", FLOE_F32);
    memset(ps, 0, n0 * sizeof *ps);
    memset(ys, 0, n0 * sizeof *ys);
    run_logged(&f, measure, 10, &L);

    cr_assert_eq(floe_set_size(f.ctx, f.fluid), n0);
    cr_assert_eq(total_mass(&f), m0, "mass must be conserved exactly");
    check_in_tank(&f, tank, d);

    /* density error */
    double err_rho = compression(&f);
    double err_stat = L.err_sum / (double)L.steps, it_mean = L.it_sum / (double)L.steps;
    cr_log_info("density error at rest: %.4f%% (rho), solver %.4f%% mean / %.4f%% max per step; "
                "%.1f iterations per step (max %.0f)", 100 * err_rho, 100 * err_stat, 100 * L.err_max, it_mean,
                L.it_max);

    /* pressure */
    uint32_t n = floe_set_size(f.ctx, f.fluid);
    float *pa = malloc(n * sizeof *pa), *ya = malloc(n * sizeof *ya), *yn = malloc(n * sizeof *yn);
    ps = floe_attr(f.ctx, f.fluid, "p_sum", FLOE_F32);
    ys = floe_attr(f.ctx, f.fluid, "y_sum", FLOE_F32);
    const float *x = floe_attr(f.ctx, f.fluid, "x", FLOE_VEC3);
    for (uint32_t i = 0; i < n; i++) {
        pa[i] = (float)(ps[i] / A.T);
        ya[i] = (float)(ys[i] / A.T);
        yn[i] = x[3 * i + 1];
    }
    const double area = tank[0] * (dim == 3 ? tank[2] : 1.0);
    int layers, layers_snap;
    double fill, fill_snap;
    double worst_snap = layer_pressure_error(&f, floe_attr(f.ctx, f.fluid, "p", FLOE_F32), yn, area, d, d,
                                             &layers_snap, &fill_snap, "snapshot");
    double worst = layer_pressure_error(&f, pa, ya, area, d, d, &layers, &fill, "time-averaged");
    int slabs;
    const double Hs = floe_ctx_info(f.ctx)->support;
    double worst_slab = layer_pressure_error(&f, pa, ya, area, d, Hs, &slabs, &fill, "time-averaged");
    free(pa);
    free(ya);
    free(yn);
    cr_log_info("layer pressure vs rho g h below the top two layers: worst %.2f%% time-averaged over %.2f s, "
                "%.2f%% snapshot (%d layers); in slabs one support radius high (as the WCSPH test): worst %.2f%% "
                "(%d slabs)", 100 * worst, A.T, 100 * worst_snap, layers, 100 * worst_slab, slabs);
    cr_log_info("the fluid fills %.4f of the base (snapshot %.4f)", fill, fill_snap);
    cr_assert(fill > 0.97 && fill < 1.01, "the fluid fills %.4f of the base: compressed or spread", fill);
    cr_assert(layers >= 10, "too few layers compared (%d)", layers);
    cr_assert(slabs >= 5, "too few slabs compared (%d)", slabs);

    /* time step */
    const double g = 9.81, H = water[1], c = 10 * sqrt(2 * g * H), dt_wcsph = 0.4 * d / c;
    double dt_mean = (L.t1 - L.t0) / (double)L.steps;
    cr_log_info("mean dt %.3g s (settling %.3g s) vs WCSPH 0.4 d / c = %.3g s (c = %.1f m/s): %.1fx", dt_mean,
                (S.t1 - S.t0) / (double)S.steps, dt_wcsph, c, dt_mean / dt_wcsph);
    cr_assert(dt_mean >= 5 * dt_wcsph, "mean dt %.3g s < 5 x WCSPH's %.3g s", dt_mean, dt_wcsph);
    cr_assert(worst < layer_tol, "layer pressure deviates %.2f%% from rho g h (limit %.0f%%)", 100 * worst,
              100 * layer_tol);
    cr_assert(worst_slab < slab_tol, "slab pressure deviates %.2f%% from rho g h (limit %.0f%%)", 100 * worst_slab,
              100 * slab_tol);
    /* the solver's own measure is held to the tolerance; the density summed
     * at the new positions (the run record's) may exceed it slightly: the
     * prediction is linear in the motion and, at the walls, counts the
     * mirrored boundary term twice (see iisph.c) */
    cr_assert(err_stat <= 0.0005, "solver's average density error %.4f%% > 0.05%%", 100 * err_stat);
    cr_assert(err_rho <= 0.0006, "average density error %.4f%% > 0.06%%", 100 * err_rho);
    floe_ctx_destroy(f.ctx);
}

Test(iisph, hydrostatic_tank_2d, .timeout = FLOE_TIMEOUT(600))
{
    const float d = 0.01f, tank[3] = {0.4f, 0.6f, 0}, water[3] = {0.4f, 0.5f, 0};
    hydrostatic(2, d, 2.0f, tank, water, 1.5, 1.0, 1, P_TOL_SLAB, P_TOL_LAYER);
}

/* the same without gradient_correction (the default) */
Test(iisph, hydrostatic_tank_2d_plain, .timeout = FLOE_TIMEOUT(600))
{
    const float d = 0.01f, tank[3] = {0.4f, 0.6f, 0}, water[3] = {0.4f, 0.5f, 0};
    hydrostatic(2, d, 2.0f, tank, water, 1.5, 1.0, 0, P_TOL_SLAB_PLAIN, P_TOL_LAYER_PLAIN_2D);
}

Test(iisph, hydrostatic_tank_3d, .timeout = FLOE_TIMEOUT(900))
{
    const float d = 0.02f, tank[3] = {0.24f, 0.5f, 0.24f}, water[3] = {0.24f, 0.4f, 0.24f};
    hydrostatic(3, d, 2.0f, tank, water, 1.2, 0.5, 1, P_TOL_SLAB, P_TOL_LAYER);
}

Test(iisph, hydrostatic_tank_3d_plain, .timeout = FLOE_TIMEOUT(900))
{
    const float d = 0.02f, tank[3] = {0.24f, 0.5f, 0.24f}, water[3] = {0.24f, 0.4f, 0.24f};
    hydrostatic(3, d, 2.0f, tank, water, 1.2, 0.5, 0, P_TOL_SLAB_PLAIN, P_TOL_LAYER);
}

/* ---- 2D dam break vs Martin & Moyce (1952), n^2 = 2 ------------------ */

/* Wall friction on release (m^2/s, the solve's implicit boundary viscosity)
 * and the limit on the front error: the issue asks for 10%; with free-slip
 * walls the front leads by up to 19%, with this friction by up to ~14% at
 * T = 1.2 (WCSPH's test: 14%, limit 15%). docs/iisph.md. */
#define BOUNDARY_VISCOSITY 0.01
/* Unshifted, the front leads by up to 15-16%: 14.9%, and 15.8% at T = 1.19
 * with the density summed in another order (a packed-record variant of the
 * same terms, tried and dropped); one particle spacing is 1.7% of Z there. A
 * guard against gross errors, at 18% */
#define FRONT_TOL 0.18
/* Martin & Moyce's gate took time to lift: simulations that release the
 * column at once lead the measured front by a roughly constant time. The
 * validation data's README names the usual correction, the time origin
 * shifted by 0.175 in T (Lethe's dam-break-2d.py); compared that way the
 * front must lie within the 10% (docs/iisph.md). */
#define FRONT_TOL_SHIFTED 0.10

/* The column settles behind a gate (a boundary set) with velocity damping,
 * then the gate is removed and the clock starts; walls are free slip, or
 * carry the solver's boundary viscosity (BVISC). */
Test(iisph, dam_break_2d_martin_moyce, .timeout = FLOE_TIMEOUT(1200))
{
    const double a = 0.1;
    const float d = (float)(a / 40), tank[3] = {(float)(5 * a), (float)(3 * a), 0};
    const float water[3] = {(float)a, (float)(2 * a), 0};
    fixture f = tank_fixture(2, d, 2.0f, tank, water, 1);
    floe_set gate = floe_set_create(f.ctx, "gate", FLOE_SET_BOUNDARY, 0);
    float g0[3] = {(float)a + 0.5f * d, 0, 0}, g1[3] = {(float)a + 2.5f * d, (float)(2.2 * a), 0};
    cr_assert(floe_boundary_solid_box(f.ctx, gate, g0, g1) > 0);
    const double bvisc = BOUNDARY_VISCOSITY;

    run_log S = {0};
    iisph_pipeline(&f, 20, 0, 0, NULL, NULL);
    run_logged(&f, 0.4, 10, &S);

    cr_assert_eq(floe_core_api()->set_resize(f.ctx, gate, 0), FLOE_OK);
    iisph_pipeline(&f, 0, bvisc, 0, NULL, NULL);

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
    cr_log_info("settling: %llu steps, %.1f iterations; release: %llu steps (mean dt %.3g s), %.1f iterations per step "
                "(max %.0f), density error %.4f%% mean, %.4f%% max per step",
                (unsigned long long)S.steps, S.it_sum / (double)S.steps, (unsigned long long)R.steps,
                (R.t1 - R.t0) / (double)R.steps, R.it_sum / (double)R.steps, R.it_max,
                100 * R.err_sum / (double)R.steps, 100 * R.err_max);
    cr_assert(compared >= 8, "compared only %d points", compared);
    cr_assert(worst < FRONT_TOL, "surge front deviates %.1f%% from Martin & Moyce (limit %.0f%%)", 100 * worst,
              100 * FRONT_TOL);
    cr_assert(worst_shift < FRONT_TOL_SHIFTED,
              "surge front with the time origin shifted by %.3f deviates %.1f%% from Martin & Moyce (limit %.0f%%)",
              FRONT_SHIFT, 100 * worst_shift, 100 * FRONT_TOL_SHIFTED);
    floe_ctx_destroy(f.ctx);
}

/* ---- periodic axes ------------------------------------------------------------ */

/* A layer of water on a floor, periodic along x (no side walls), moving at
 * 0.5 m/s: pressure forces are pairwise antisymmetric and the floor is
 * uniform, so the mean x velocity stays; particles cross the periodic faces
 * (wrapped by the core) and the density error stays within the tolerance. */
/* ---- Chebyshev acceleration ---------------------------------------------------- */

/* One solve of a 2D tank at rest from p = 0 (no warm start), to a tight
 * tolerance: the iterations it took and the pressures. */
static float *one_solve(double chebyshev, double *iterations, uint32_t *n)
{
    const float tank[3] = {0.4f, 0.6f, 0}, water[3] = {0.4f, 0.5f, 0};
    fixture f = tank_fixture(2, 0.01f, 2.0f, tank, water, 0);
    cr_assert_eq(floe_module_load(f.ctx, "sph"), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    cr_assert_eq(floe_module_load(f.ctx, "iisph"), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    fixture_add(&f, "neighbours", 0, NULL);
    fixture_add(&f, "sph.density", 0, NULL);
    fixture_add(&f, "gravity", 0, NULL);
    floe_param_kv kv[] = {KV_F("chebyshev", chebyshev), KV_F("tolerance", 1e-4), KV_F("max_iterations", 5000),
                          KV_F("warm_start", 0), KV_F("max_correction_speed", 0)};
    fixture_add(&f, "iisph.solve", 5, kv);
    cr_assert_eq(floe_step(f.ctx, 0.001), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    *iterations = -1;
    for (int i = 0; i < f.ctx->nstats; i++)
        if (!strcmp(f.ctx->stats[i].name, "iisph.iterations"))
            *iterations = f.ctx->stats[i].sum;
    *n = floe_set_size(f.ctx, f.fluid);
    float *p = malloc(*n * sizeof *p);
    memcpy(p, floe_attr(f.ctx, f.fluid, "p", FLOE_F32), *n * sizeof *p);
    floe_ctx_destroy(f.ctx);
    return p;
}

/* Chebyshev acceleration (the default, chebyshev = 0.9) reaches the same
 * pressures as plain relaxed Jacobi (chebyshev = 0) in fewer iterations. */
Test(iisph, chebyshev_same_pressure_fewer_iterations, .timeout = FLOE_TIMEOUT(600))
{
    double it_j, it_c;
    uint32_t nj, nc;
    float *pj = one_solve(0, &it_j, &nj), *pc = one_solve(0.9, &it_c, &nc);
    cr_assert_eq(nj, nc);
    double d2 = 0, p2 = 0;
    for (uint32_t i = 0; i < nj; i++) {
        d2 += ((double)pc[i] - pj[i]) * ((double)pc[i] - pj[i]);
        p2 += (double)pj[i] * pj[i];
    }
    const double rel = sqrt(d2 / p2);
    cr_log_info("tank at rest from p = 0 to tolerance 1e-4: Jacobi %.0f iterations, Chebyshev %.0f; pressure "
                "relative L2 difference %.3g", it_j, it_c, rel);
    cr_assert(it_j > 0 && it_c > 0);
    cr_assert(it_c < 0.6 * it_j, "Chebyshev took %.0f iterations, Jacobi %.0f", it_c, it_j);
    cr_assert(rel < 0.01, "the two answers differ by %.3g (relative L2)", rel);
    free(pj);
    free(pc);
}

Test(iisph, periodic_channel_keeps_its_flow, .timeout = FLOE_TIMEOUT(600))
{
    setenv("FLOE_MODULE_PATH", FLOE_TEST_BUILD_ROOT "/modules", 1);
    const float d = 0.01f, L = 0.4f;
    floe_sim_def def = floe_sim_default_def();
    def.dim = 2;
    def.spacing = d;
    def.threads = 2;
    def.periodic[0] = 1;
    def.domain_min[0] = 0, def.domain_max[0] = L;
    def.domain_min[1] = -0.1f, def.domain_max[1] = 0.5f;
    char err[512];
    fixture f;
    f.ctx = floe_ctx_create(&def, err, sizeof err);
    cr_assert_not_null(f.ctx, "%s", err);
    f.fluid = floe_set_create(f.ctx, "fluid", FLOE_SET_FLUID, 1000);
    f.bnd = floe_set_create(f.ctx, "floor", FLOE_SET_BOUNDARY, 0);
    float w0[3] = {0, 0, 0}, w1[3] = {L, 0.1f, 0}, v0[3] = {0.5f, 0, 0};
    float b0[3] = {0, -2 * d, 0}, b1[3] = {L, 0, 0};
    cr_assert(floe_fill_box(f.ctx, f.fluid, w0, w1, v0) > 0);
    cr_assert(floe_boundary_solid_box(f.ctx, f.bnd, b0, b1) > 0);
    iisph_pipeline(&f, 0, 0, 0, NULL, NULL);
    run_log R = {0};
    run_logged(&f, 0.5, 10, &R);

    uint32_t n = floe_set_size(f.ctx, f.fluid);
    const float *x = floe_attr(f.ctx, f.fluid, "x", FLOE_VEC3), *v = floe_attr(f.ctx, f.fluid, "v", FLOE_VEC3);
    double vx = 0, y_max = 0;
    for (uint32_t i = 0; i < n; i++) {
        cr_assert(x[3 * i] >= 0 && x[3 * i] < L, "particle %u outside the periodic axis: x = %g", i, x[3 * i]);
        vx += v[3 * i];
        y_max = fmax(y_max, x[3 * i + 1]);
    }
    vx /= n;
    double err_stat = R.err_sum / (double)R.steps;
    cr_log_info("periodic channel: mean vx %.5f m/s (start 0.5), top %.4f m, %llu steps, %.1f iterations per step, "
                "density error %.4f%% mean per step",
                vx, y_max, (unsigned long long)R.steps, R.it_sum / (double)R.steps, 100 * err_stat);
    /* the floor's particles push each fluid particle back and forth along
     * x as it passes over them; with a pressure converged only to the
     * tolerance these pushes do not cancel exactly, and the mean velocity
     * wanders: measured -0.0088 to +0.0084 m/s over thirteen solver settings
     * (tolerance 0.002-0.1%, chebyshev 0-0.95, delay 2-6; docs/iisph.md). Friction or
     * a lost periodic wrap would take far more. */
    cr_assert(fabs(vx - 0.5) < 0.015, "mean x velocity %.5f m/s drifted from 0.5", vx);
    cr_assert(y_max < 0.15, "the layer did not stay on the floor (top %.3f m)", y_max);
    cr_assert(err_stat <= 0.0005, "density error %.4f%% > 0.05%%", 100 * err_stat);
    floe_ctx_destroy(f.ctx);
}

/* ---- determinism ------------------------------------------------------------- */

static float *collapse_positions(int threads, uint32_t *n)
{
    const float d = 0.01f, tank[3] = {0.6f, 0.4f, 0}, water[3] = {0.2f, 0.3f, 0};
    fixture f = tank_fixture(2, d, 2.0f, tank, water, 1);
    floe_ctx_set_threads(f.ctx, threads);
    iisph_pipeline(&f, 0, 0.001, 0, NULL, NULL);
    run_log R = {0};
    run_logged(&f, 0.3, 10, &R);
    *n = floe_set_size(f.ctx, f.fluid);
    const float *x = floe_attr(f.ctx, f.fluid, "x", FLOE_VEC3);
    float *copy = malloc(3 * (size_t)*n * sizeof *copy);
    memcpy(copy, x, 3 * (size_t)*n * sizeof *copy);
    floe_ctx_destroy(f.ctx);
    return copy;
}

/* A collapsing column, run twice with 2 threads and once with 1: positions
 * are bitwise identical (gathers, row sums in list order, the density error
 * summed over fixed chunks in order). */
Test(iisph, bit_identical_runs, .timeout = FLOE_TIMEOUT(600))
{
    uint32_t n1, n2, n3;
    float *a = collapse_positions(2, &n1), *b = collapse_positions(2, &n2), *c = collapse_positions(1, &n3);
    cr_assert_eq(n1, n2);
    cr_assert_eq(n1, n3);
    cr_assert(memcmp(a, b, 3 * (size_t)n1 * sizeof *a) == 0, "two runs with 2 threads differ");
    cr_assert(memcmp(a, c, 3 * (size_t)n1 * sizeof *a) == 0, "1 and 2 threads differ");
    free(a);
    free(b);
    free(c);
}

/* ---- the scenes run without NaN ----------------------------------------------- */

static void run_scene_file(const char *scene, const char *const *sets, int nsets)
{
    setenv("FLOE_MODULE_PATH", FLOE_TEST_BUILD_ROOT "/modules", 1);
    char dir[] = "/tmp/floe_iisph_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[1024], err[4096];
    snprintf(path, sizeof path, "%s/scenes/%s", FLOE_TEST_SOURCE_ROOT, scene);
    floe_run_summary sum;
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
    o.summary = &sum;
    const int rc = floe_scene_run(&o, err, sizeof err);
    cr_assert_eq(rc, FLOE_OK, "%s: %s", scene, err);
    cr_log_info("%s: %llu steps, %.3f s simulated in %.1f s", scene, (unsigned long long)sum.steps, sum.sim_time,
                sum.wall_s);
    cr_assert_eq(sum.status, FLOE_OK);
    snprintf(path, sizeof path, "%s/run.yaml", dir);
    unlink(path);
    rmdir(dir);
}

Test(iisph, dam_break_scene_runs, .timeout = FLOE_TIMEOUT(600))
{
    const char *sets[] = {"spacing=0.04", "seconds=0.5"};
    run_scene_file("iisph_dam_break.lua", sets, 2);
}

Test(iisph, bench_scene_runs, .timeout = FLOE_TIMEOUT(600))
{
    const char *sets[] = {"seconds=0.03"};
    run_scene_file("bench/iisph_dam_break_59k.lua", sets, 1);
}

/* ---- the old density name ------------------------------------------------------ */

static int density_warnings;
static char density_warning[512];
static void note_warning(int level, const char *msg, void *u)
{
    (void)u;
    if (level == FLOE_LOG_WARN) {
        density_warnings++;
        snprintf(density_warning, sizeof density_warning, "%s", msg);
    }
}

/* iisph.density is the deprecated name of sph.density: the pipeline runs
 * sph.density in its place and says so once per context */
Test(iisph, old_density_name_runs_sph_density_and_warns_once)
{
    const float tank[3] = {0.2f, 0.2f, 0}, water[3] = {0.1f, 0.1f, 0};
    fixture f = tank_fixture(2, 0.02f, 2.0f, tank, water, 1);
    floe_ctx_set_log(f.ctx, note_warning, NULL);
    cr_assert_eq(floe_module_load(f.ctx, "iisph"), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    fixture_add(&f, "neighbours", 0, NULL);
    fixture_add(&f, "iisph.density", 0, NULL);
    cr_assert_str_eq(floe_pipeline_stage_name(f.ctx, 1), "sph.density");
    cr_assert_eq(density_warnings, 1);
    cr_assert_not_null(strstr(density_warning, "stage 'iisph.density' is deprecated: it runs as 'sph.density'"), "%s",
                       density_warning);
    fixture_add(&f, "iisph.density", 0, NULL);
    cr_assert_str_eq(floe_pipeline_stage_name(f.ctx, 2), "sph.density");
    cr_assert_eq(density_warnings, 1, "the deprecation is logged once per context");
    floe_ctx_destroy(f.ctx);
}
