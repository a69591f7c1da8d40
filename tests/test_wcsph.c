/* WCSPH against numbers: hydrostatic pressure in 2D and 3D tanks, mass
 * conservation, and the 2D dam break against Martin & Moyce (1952). */
#include "sim_fixture.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Time average of each particle's pressure (by stable id) over the last
 * part of the run: WCSPH pressure carries acoustic noise, the hydrostatic
 * profile is its mean. */
static double *p_acc;
static uint64_t p_steps;
static int accumulate_p(const floe_stage_call *c)
{
    floe_set s = floe_set_find(c->ctx, "fluid");
    const float *p = floe_attr(c->ctx, s, "p", FLOE_F32);
    const uint32_t *id = floe_attr(c->ctx, s, "id", FLOE_U32);
    for (uint32_t i = 0; i < floe_set_size(c->ctx, s); i++)
        p_acc[id[i]] += p[i];
    p_steps++;
    return FLOE_OK;
}

/* Settle for `settle` seconds, then average pressure over `avg` seconds. */
static void settle_and_average(fixture *f, double settle, double avg)
{
    floe_run_def r = fixture_run_def(settle, 10);
    cr_assert_eq(floe_run(f->ctx, &r, NULL), FLOE_OK, "%s", floe_ctx_error(f->ctx));
    p_acc = calloc(floe_set_size(f->ctx, f->fluid), sizeof *p_acc);
    p_steps = 0;
    cr_assert_eq(floe_pipeline_add_fn(f->ctx, "accumulate_p", accumulate_p, NULL), FLOE_OK);
    r = fixture_run_def(avg, 10);
    cr_assert_eq(floe_run(f->ctx, &r, NULL), FLOE_OK, "%s", floe_ctx_error(f->ctx));
}

/* Particle layers counted from the free surface: in each vertical column
 * (one spacing wide) particles sorted by height; layer k has k particles
 * above it. The hydrostatic depth of layer k is the water above it,
 * (k + 1/2) d, so rho0 g h is the weight of the column above per area. */
static const float *sort_y;
static int cmp_height(const void *a, const void *b)
{
    float ya = sort_y[3 * *(const uint32_t *)a + 1], yb = sort_y[3 * *(const uint32_t *)b + 1];
    return (ya < yb) - (ya > yb);
}

static void layer_index(const float *x, uint32_t n, float d, int dim, int *layer)
{
    enum { NC = 64 * 64 };
    uint32_t *idx = malloc(n * sizeof *idx), *start = calloc(NC + 1, sizeof *start);
    int *col = malloc(n * sizeof *col);
    for (uint32_t i = 0; i < n; i++) {
        int cx = (int)floorf(x[3 * i] / d), cz = dim == 3 ? (int)floorf(x[3 * i + 2] / d) : 0;
        col[i] = (cx & 63) + 64 * (cz & 63);
        start[col[i] + 1]++;
    }
    for (int c = 0; c < NC; c++)
        start[c + 1] += start[c];
    uint32_t *fill = calloc(NC, sizeof *fill);
    for (uint32_t i = 0; i < n; i++)
        idx[start[col[i]] + fill[col[i]]++] = i;
    sort_y = x;
    for (int c = 0; c < NC; c++) {
        qsort(idx + start[c], start[c + 1] - start[c], sizeof *idx, cmp_height);
        for (uint32_t k = start[c]; k < start[c + 1]; k++)
            layer[idx[k]] = (int)(k - start[c]);
    }
    free(idx);
    free(start);
    free(col);
    free(fill);
}

/* After settling, compare layer-averaged (and time-averaged) pressure with
 * rho0 g h below the top two layers; check density error and that nothing
 * left the tank. */
static void check_hydrostatic(fixture *f, const float tank[3], float d, double tol)
{
    floe_ctx *ctx = f->ctx;
    uint32_t n = floe_set_size(ctx, f->fluid);
    const float *x = floe_attr(ctx, f->fluid, "x", FLOE_VEC3);
    const uint32_t *id = floe_attr(ctx, f->fluid, "id", FLOE_U32);
    const float *rho = floe_attr(ctx, f->fluid, "rho", FLOE_F32);
    const floe_sim_info *in = floe_ctx_info(ctx);
    double g = fabs(in->gravity[1]);
    int *layer = malloc(n * sizeof *layer);
    layer_index(x, n, d, in->dim, layer);
    /* the slope of pressure against height, fitted below the top two
     * layers, is the weight gradient; the height where the fit reaches zero
     * is the free surface the pressure sees */
    double sy = 0, sp = 0, syy = 0, syp = 0, m = 0, err_sum = 0;
    for (uint32_t i = 0; i < n; i++) {
        for (int k = 0; k < in->dim; k++)
            cr_assert(x[3 * i + k] > -0.5f * d && x[3 * i + k] < tank[k] + 0.5f * d,
                      "particle %u left the tank: axis %d at %g", i, k, x[3 * i + k]);
        err_sum += fmax(rho[i] / 1000.0 - 1, 0);
        if (layer[i] < 2)
            continue;
        double y = x[3 * i + 1], pa = p_acc[id[i]] / (double)p_steps;
        sy += y;
        sp += pa;
        syy += y * y;
        syp += y * pa;
        m++;
    }
    double slope = (m * syp - sy * sp) / (m * syy - sy * sy), icept = (sp - slope * sy) / m;
    double surface = -icept / slope;
    cr_log_info("fitted dp/dy = %.1f Pa/m (rho0 g = %.1f), free surface at y = %.4f m", slope, -1000 * g, surface);
    cr_assert(fabs(-slope / (1000 * g) - 1) < tol, "pressure gradient %.1f Pa/m is off rho0 g by more than %.0f%%",
              -slope, 100 * tol);
    /* pressure averaged in slabs one support radius H = 2d high (SPH fields
     * are kernel averages; finer slabs see the particle-scale zig-zag next
     * to the walls) against rho0 g h */
    const double slab = floe_ctx_info(ctx)->support;
    enum { NB = 256 };
    double psum[NB] = {0}, hsum[NB] = {0};
    int cnt[NB] = {0};
    for (uint32_t i = 0; i < n; i++) {
        double h = surface - x[3 * i + 1];
        int b = (int)floor(h / slab);
        if (layer[i] < 2 || b < 0 || b >= NB)
            continue;
        psum[b] += p_acc[id[i]] / (double)p_steps;
        hsum[b] += h;
        cnt[b]++;
    }
    /* a slab that holds only a few particles (the top slab, cut by the
     * excluded top two layers: in a sanitizer build 3 particles of the third
     * layer fell into it) is no average; a slab counts with at least a
     * quarter of the mean */
    double cmean = 0;
    int nonempty = 0;
    for (int b = 0; b < NB; b++)
        if (cnt[b] > 0)
            cmean += cnt[b], nonempty++;
    cmean = nonempty ? cmean / nonempty : 0;
    double worst = 0;
    int layers = 0, worst_layer = -1;
    for (int b = 0; b < NB; b++) {
        if (cnt[b] < 3 || cnt[b] < 0.25 * cmean)
            continue;
        double pm = psum[b] / cnt[b], ref = 1000.0 * g * hsum[b] / cnt[b];
        double e = fabs(pm - ref) / ref;
        layers++;
        cr_log_info("slab %2d (%4d particles) depth %.4f m: p = %9.2f Pa, rho g h = %9.2f Pa, error %.2f%%", b,
                    cnt[b], hsum[b] / cnt[b], pm, ref, 100 * e);
        if (e > worst) {
            worst = e;
            worst_layer = b;
        }
    }
    double avg_err = err_sum / n;
    cr_log_info("worst slab error %.2f%% (slab %d), average density error (compression) %.3f%%", 100 * worst,
                worst_layer, 100 * avg_err);
    cr_assert(worst < tol, "slab %d: mean pressure off rho g h by %.1f%% (limit %.0f%%)", worst_layer, 100 * worst,
              100 * tol);
    cr_assert(layers >= 5, "too few slabs compared (%d)", layers);
    cr_assert(avg_err < 0.01, "average density error %.3f%% >= 1%%", 100 * avg_err);
    free(p_acc);
    free(layer);
}

static double total_mass(fixture *f)
{
    const float *m = floe_attr(f->ctx, f->fluid, "m", FLOE_F32);
    double s = 0;
    for (uint32_t i = 0; i < floe_set_size(f->ctx, f->fluid); i++)
        s += m[i];
    return s;
}

Test(wcsph, hydrostatic_tank_2d, .timeout = FLOE_TIMEOUT(600))
{
    const float d = 0.01f, tank[3] = {0.4f, 0.6f, 0}, water[3] = {0.4f, 0.5f, 0};
    fixture f = fixture_tank(2, d, tank, water, 0);
    fixture_wcsph(&f, 30, "xsph", 0.05, 30);
    uint32_t n0 = floe_set_size(f.ctx, f.fluid);
    double m0 = total_mass(&f);
    settle_and_average(&f, 1.0, 0.5);
    cr_assert_eq(floe_set_size(f.ctx, f.fluid), n0);
    cr_assert_eq(total_mass(&f), m0, "mass must be conserved exactly");
    check_hydrostatic(&f, tank, d, 0.05);
    floe_ctx_destroy(f.ctx);
}

Test(wcsph, hydrostatic_tank_3d, .timeout = FLOE_TIMEOUT(900))
{
    const float d = 0.025f, tank[3] = {0.4f, 0.5f, 0.4f}, water[3] = {0.4f, 0.4f, 0.4f};
    fixture f = fixture_tank(3, d, tank, water, 0);
    fixture_wcsph(&f, 25, "xsph", 0.05, 30);
    double m0 = total_mass(&f);
    settle_and_average(&f, 0.8, 0.4);
    cr_assert_eq(total_mass(&f), m0, "mass must be conserved exactly");
    check_hydrostatic(&f, tank, d, 0.05);
    floe_ctx_destroy(f.ctx);
}

/* The template solver of modules/hello (hello.pressure: a linear equation
 * of state and the symmetric pressure force, written on <floe/sph.h>) with
 * the shared stages holds the same hydrostatic tank to the same limits. */
Test(wcsph, hello_pressure_hydrostatic_tank_2d, .timeout = FLOE_TIMEOUT(600))
{
    const float d = 0.01f, tank[3] = {0.4f, 0.6f, 0}, water[3] = {0.4f, 0.5f, 0};
    fixture f = fixture_tank(2, d, tank, water, 0);
    cr_assert_eq(floe_module_load(f.ctx, "hello"), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    floe_param_kv xk[] = {KV_F("alpha", 0.05)}, pk[] = {KV_F("speed_of_sound", 30)}, dk[] = {KV_F("rate", 30)};
    fixture_add(&f, "neighbours", 0, NULL);
    fixture_add(&f, "sph.density", 0, NULL);
    fixture_add(&f, "gravity", 0, NULL);
    fixture_add(&f, "sph.xsph", 1, xk);
    fixture_add(&f, "hello.pressure", 1, pk);
    fixture_add(&f, "hello.damp", 1, dk);
    fixture_add(&f, "integrate", 0, NULL);
    const double m0 = total_mass(&f);
    settle_and_average(&f, 1.0, 0.5);
    cr_assert_eq(total_mass(&f), m0, "mass must be conserved exactly");
    check_hydrostatic(&f, tank, d, 0.05);
    floe_ctx_destroy(f.ctx);
}

/* ---- old stage names ------------------------------------------------------ */

static int warnings;
static void count_warning(int level, const char *msg, void *u)
{
    (void)msg, (void)u;
    warnings += level == FLOE_LOG_WARN;
}

/* 30 steps of a small 2D tank with the old stage names (wcsph.density,
 * wcsph.viscosity{kind = "xsph"}, speed_of_sound given to the artificial
 * viscosity) or the new ones; the positions afterwards (malloc'd). */
static float *tank_named(int old, uint32_t *n, int *warned)
{
    const float d = 0.02f, tank[3] = {0.4f, 0.4f, 0}, water[3] = {0.2f, 0.3f, 0};
    fixture f = fixture_tank(2, d, tank, water, 1);
    warnings = 0;
    floe_ctx_set_log(f.ctx, count_warning, NULL);
    floe_param_kv pk[] = {KV_F("speed_of_sound", 20)};
    floe_param_kv xk[] = {KV_S("kind", "xsph"), KV_F("alpha", 0.05)};
    floe_param_kv ak[] = {KV_S("kind", "artificial"), KV_F("alpha", 0.02), KV_F("boundary_alpha", 0.5),
                          KV_F("speed_of_sound", 20)};
    fixture_add(&f, "neighbours", 0, NULL);
    fixture_add(&f, old ? "wcsph.density" : "sph.density", 0, NULL);
    fixture_add(&f, "wcsph.pressure", 1, pk);
    fixture_add(&f, "gravity", 0, NULL);
    if (old)
        fixture_add(&f, "wcsph.viscosity", 2, xk);
    else
        fixture_add(&f, "sph.xsph", 1, xk + 1);
    fixture_add(&f, "wcsph.viscosity", old ? 4 : 3, ak);
    fixture_add(&f, "wcsph.pressure_force", 0, NULL);
    fixture_add(&f, "integrate", 0, NULL);
    for (int k = 0; k < 30; k++)
        cr_assert_eq(floe_step(f.ctx, 2e-4), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    *n = floe_set_size(f.ctx, f.fluid);
    float *x = malloc(3 * sizeof(float) * *n);
    memcpy(x, floe_attr(f.ctx, f.fluid, "x", FLOE_VEC3), 3 * sizeof(float) * *n);
    floe_ctx_destroy(f.ctx);
    *warned = warnings;
    return x;
}

Test(wcsph, old_stage_names_run_the_new_stages_bit_for_bit)
{
    uint32_t n_old, n_new;
    int w_old, w_new;
    float *x_old = tank_named(1, &n_old, &w_old), *x_new = tank_named(0, &n_new, &w_new);
    cr_assert_eq(n_old, n_new);
    cr_assert(memcmp(x_old, x_new, 3 * sizeof(float) * n_old) == 0, "old names moved the particles differently");
    /* wcsph.density, wcsph.viscosity{kind = "xsph"} and the speed_of_sound given: once each */
    cr_assert_eq(w_old, 3, "%d deprecation warnings", w_old);
    cr_assert_eq(w_new, 0, "%d warnings with the new names", w_new);
    free(x_old);
    free(x_new);
}

/* The artificial viscosity takes c from the equation of state: without
 * wcsph.pressure before it, or with another speed_of_sound, it says so. */
Test(wcsph, artificial_viscosity_takes_the_speed_of_sound_of_the_equation_of_state)
{
    const float d = 0.02f, tank[3] = {0.4f, 0.4f, 0}, water[3] = {0.2f, 0.3f, 0};
    fixture f = fixture_tank(2, d, tank, water, 1);
    floe_param_kv ak[] = {KV_S("kind", "artificial"), KV_F("alpha", 0.02), KV_F("speed_of_sound", 30)};
    floe_param_kv pk[] = {KV_F("speed_of_sound", 20)};
    fixture_add(&f, "neighbours", 0, NULL);
    fixture_add(&f, "sph.density", 0, NULL);
    fixture_add(&f, "gravity", 0, NULL);
    fixture_add(&f, "wcsph.viscosity", 2, ak);
    cr_assert_eq(floe_step(f.ctx, 2e-4), FLOE_ERR_ARG);
    cr_assert(strstr(floe_ctx_error(f.ctx), "put 'wcsph.pressure' before it"), "%s", floe_ctx_error(f.ctx));
    floe_pipeline_clear(f.ctx);
    fixture_add(&f, "neighbours", 0, NULL);
    fixture_add(&f, "sph.density", 0, NULL);
    fixture_add(&f, "wcsph.pressure", 1, pk);
    fixture_add(&f, "gravity", 0, NULL);
    fixture_add(&f, "wcsph.viscosity", 3, ak);
    cr_assert_eq(floe_step(f.ctx, 2e-4), FLOE_ERR_ARG);
    cr_assert(strstr(floe_ctx_error(f.ctx), "speed_of_sound = 30 differs from the 20 m/s of wcsph.pressure"), "%s",
              floe_ctx_error(f.ctx));
    floe_ctx_destroy(f.ctx);
}

/* ---- 2D dam break vs Martin & Moyce (1952), n^2 = 2 ------------------ */

static int on_frame(floe_ctx *ctx, const floe_frame_stats *st, void *user)
{
    front_log *L = user;
    const float *x = floe_attr(ctx, L->fluid, "x", FLOE_VEC3);
    double xmax = 0;
    for (uint32_t i = 0; i < floe_set_size(ctx, L->fluid); i++)
        xmax = fmax(xmax, x[3 * i]);
    if (L->n < (int)(sizeof L->T / sizeof L->T[0])) {
        L->T[L->n] = (st->time - L->t0) * L->tscale;
        L->Z[L->n] = (xmax + 0.5 * L->d) / L->a;
        L->n++;
    }
    return 0;
}

/* The column first settles to hydrostatic equilibrium behind a gate (a
 * boundary set), like the water behind the experiment's gate; the gate is
 * then removed and the clock starts. The floor and walls are no-slip through
 * Monaghan viscosity against boundary particles (boundary_alpha). */
Test(wcsph, dam_break_2d_martin_moyce, .timeout = FLOE_TIMEOUT(900))
{
    const double a = 0.1;
    const float d = (float)(a / 40), tank[3] = {(float)(5 * a), (float)(3 * a), 0};
    const float water[3] = {(float)a, (float)(2 * a), 0};
    fixture f = fixture_tank(2, d, tank, water, 1);
    floe_set gate = floe_set_create(f.ctx, "gate", FLOE_SET_BOUNDARY, 0);
    float g0[3] = {(float)a + 0.5f * d, 0, 0}, g1[3] = {(float)a + 2.5f * d, (float)(2.2 * a), 0};
    cr_assert(floe_boundary_solid_box(f.ctx, gate, g0, g1) > 0);

    /* settle: same solver plus velocity damping */
    fixture_add(&f, "neighbours", 0, NULL);
    fixture_add(&f, "sph.density", 0, NULL);
    floe_param_kv pk[] = {KV_F("speed_of_sound", 25)};
    fixture_add(&f, "wcsph.pressure", 1, pk);
    fixture_add(&f, "gravity", 0, NULL);
    floe_param_kv vk[] = {KV_S("kind", "artificial"), KV_F("alpha", 0.02), KV_F("boundary_alpha", 0.5)};
    fixture_add(&f, "wcsph.viscosity", 3, vk);
    fixture_add(&f, "wcsph.pressure_force", 0, NULL);
    cr_assert_eq(floe_module_load(f.ctx, "hello"), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    floe_param_kv dk[] = {KV_F("rate", 5)};
    fixture_add(&f, "hello.damp", 1, dk);
    fixture_add(&f, "integrate", 0, NULL);
    floe_run_def settle = fixture_run_def(0.4, 10);
    cr_assert_eq(floe_run(f.ctx, &settle, NULL), FLOE_OK, "%s", floe_ctx_error(f.ctx));

    /* release: remove the gate and the damping */
    cr_assert_eq(floe_core_api()->set_resize(f.ctx, gate, 0), FLOE_OK);
    floe_pipeline_clear(f.ctx);
    fixture_add(&f, "neighbours", 0, NULL);
    fixture_add(&f, "sph.density", 0, NULL);
    fixture_add(&f, "wcsph.pressure", 1, pk);
    fixture_add(&f, "gravity", 0, NULL);
    fixture_add(&f, "wcsph.viscosity", 3, vk);
    fixture_add(&f, "wcsph.pressure_force", 0, NULL);
    fixture_add(&f, "integrate", 0, NULL);

    static front_log L;
    L.a = a;
    L.d = d;
    L.tscale = sqrt(2 * 9.81 / a);
    L.t0 = floe_ctx_info(f.ctx)->time;
    L.fluid = f.fluid;
    floe_run_def r = fixture_run_def(2.7 / L.tscale, 400);
    r.on_frame = on_frame;
    r.user = &L;
    cr_assert_eq(floe_run(f.ctx, &r, NULL), FLOE_OK, "%s", floe_ctx_error(f.ctx));

    double worst, worst_shift;
    const int compared = front_vs_martin_moyce(&L, &worst, &worst_shift);
    cr_assert(compared >= 8, "compared only %d points", compared);
    cr_assert(worst < 0.15, "surge front deviates %.1f%% from Martin & Moyce (limit 15%%)", 100 * worst);
    cr_assert(worst_shift < 0.10,
              "surge front with the time origin shifted by %.3f deviates %.1f%% from Martin & Moyce (limit 10%%)",
              FRONT_SHIFT, 100 * worst_shift);
    floe_ctx_destroy(f.ctx);
}

/* wcsph.pressure_force{xsph = alpha} sums the same XSPH term as a preceding
 * sph.xsph{alpha} in its own walk of the lists: a 3D dam
 * break run 40 steps both ways ends in the same state (float rounding). */
static void dam_break_xsph(int fused, float **x_out, float **v_out, uint32_t *n_out)
{
    const float d = 0.05f, tank[3] = {1.0f, 0.6f, 0.4f}, water[3] = {0.3f, 0.4f, 0.4f};
    fixture f = fixture_tank(3, d, tank, water, 1);
    floe_param_kv pk[] = {KV_F("speed_of_sound", 20)};
    fixture_add(&f, "neighbours", 0, NULL);
    fixture_add(&f, "sph.density", 0, NULL);
    fixture_add(&f, "wcsph.pressure", 1, pk);
    fixture_add(&f, "gravity", 0, NULL);
    if (fused == 2) { /* no viscosity at all */
        fixture_add(&f, "wcsph.pressure_force", 0, NULL);
    } else if (fused) {
        floe_param_kv fk[] = {KV_F("xsph", 0.05)};
        fixture_add(&f, "wcsph.pressure_force", 1, fk);
    } else {
        floe_param_kv vk[] = {KV_F("alpha", 0.05)};
        fixture_add(&f, "sph.xsph", 1, vk);
        fixture_add(&f, "wcsph.pressure_force", 0, NULL);
    }
    fixture_add(&f, "integrate", 0, NULL);
    floe_run_def r = fixture_run_def(40 * 0.0004, 1 / (40 * 0.0004));
    r.dt = 0.0004;
    cr_assert_eq(floe_run(f.ctx, &r, NULL), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    const uint32_t n = floe_set_size(f.ctx, f.fluid);
    *n_out = n;
    *x_out = malloc((size_t)n * 12);
    *v_out = malloc((size_t)n * 12);
    cr_assert(*x_out && *v_out);
    memcpy(*x_out, floe_attr(f.ctx, f.fluid, "x", FLOE_VEC3), (size_t)n * 12);
    memcpy(*v_out, floe_attr(f.ctx, f.fluid, "v", FLOE_VEC3), (size_t)n * 12);
    floe_ctx_destroy(f.ctx);
}

static double rel_l2(const float *a, const float *b, size_t n)
{
    double num = 0, den = 0;
    for (size_t k = 0; k < n; k++) {
        num += ((double)a[k] - b[k]) * ((double)a[k] - b[k]);
        den += (double)b[k] * b[k];
    }
    return sqrt(num / (den > 0 ? den : 1));
}

Test(wcsph, pressure_force_xsph_equals_viscosity_stage, .timeout = FLOE_TIMEOUT(300))
{
    float *xs, *vs, *xf, *vf;
    uint32_t ns, nf;
    dam_break_xsph(0, &xs, &vs, &ns);
    dam_break_xsph(1, &xf, &vf, &nf);
    cr_assert_eq(ns, nf);
    double ex = rel_l2(xf, xs, 3 * (size_t)ns), ev = rel_l2(vf, vs, 3 * (size_t)ns);
    cr_log_info("fused vs separate after 40 steps: x %.2e, v %.2e (relative L2)", ex, ev);
    cr_assert(ex < 1e-6 && ev < 1e-5, "fused xsph differs: x %.2e, v %.2e", ex, ev);
    cr_assert(ns > 100);
    /* the term does act: without viscosity the velocities differ clearly */
    float *x0, *v0;
    uint32_t n0;
    dam_break_xsph(2, &x0, &v0, &n0);
    double e0 = rel_l2(v0, vs, 3 * (size_t)ns);
    cr_log_info("no viscosity vs xsph: v %.2e", e0);
    cr_assert(e0 > 1e-3, "xsph 0.05 changed the velocities only by %.2e", e0);
    free(xs), free(vs), free(xf), free(vf), free(x0), free(v0);
}

Test(wcsph, density_from_kernel_sums_equals_its_own_rows, .timeout = FLOE_TIMEOUT(120))
{
    uint32_t n[3];
    int left[3];
    uint32_t *walls;
    float *rho[3];
    for (int w = 0; w < 3; w++)
        rho[w] = fixture_density_by_way("wcsph", w, &n[w], &left[w], w == 0 ? &walls : NULL);
    cr_assert(n[1] == n[0] && n[2] == n[0]);
#if defined(__AVX2__)
    cr_assert(left[0], "the neighbours stage computed no kernel sums for sph.density");
#endif
    cr_assert(!left[1] && !left[2], "kernel sums outlived a stage that may move particles");
    /* fluid rows: the same floats; wall rows: the same terms, summed in
     * another order (the core's blocks, the generic loop's lanes) */
    uint32_t exact = 0;
    double worst = 0.0;
    for (uint32_t i = 0; i < n[0]; i++) {
        const double e = fabs((double)rho[0][i] - rho[1][i]) / rho[1][i];
        worst = e > worst ? e : worst;
        if (walls[i] == 0) {
            cr_assert(memcmp(&rho[0][i], &rho[1][i], sizeof(float)) == 0,
                      "particle %u (no wall neighbour): rho %.9g from kernel sums, %.9g from its rows", i,
                      (double)rho[0][i], (double)rho[1][i]);
            exact++;
        }
    }
    cr_log_info("kernel sums vs rows: %u of %u particles (those without wall neighbours) bitwise equal, worst %.2e",
                exact, n[0], worst);
    cr_assert(exact > n[0] / 10 && worst < 1e-6, "%u bitwise equal, worst relative difference %.2e", exact, worst);
    /* sheared after the search: the density of where the particles are */
    double moved = 0.0;
    for (uint32_t i = 0; i < n[0]; i++)
        moved = fmax(moved, fabs((double)rho[2][i] - rho[1][i]) / rho[1][i]);
    cr_log_info("sheared: density changed by up to %.2e", moved);
    cr_assert(moved > 1e-4, "density did not follow the moved particles (%.2e)", moved);
    free(walls);
    for (int w = 0; w < 3; w++)
        free(rho[w]);
}
