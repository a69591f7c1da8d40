/* The grid-splat PIC/FLIP module (Guay 2013) against numbers: particle count
 * and mass constant, no particle inside an obstacle after any step (every
 * shape, moving ones included, 2D and 3D), a settled tank stays at rest, the
 * 2D dam break front against Martin & Moyce (1952), pure PIC damps a
 * sloshing tank faster than the default FLIP blend, bit-identical results
 * for 1 and 2 threads, parameter errors, and the raycast module's PNG
 * frames. Measured numbers go to the log (cr_log_info). */
#include <criterion/criterion.h>
#include <floe/floe.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim_fixture.h" /* KV_F/S/B, front_log and front_interp */

#define KV_V(n, x, y, z) ((floe_param_kv){(n), FLOE_PARAM_VEC3, {.v = {(x), (y), (z)}}})

static floe_ctx *make_sim(int dim, float d, const float lo[3], const float hi[3], int threads)
{
    setenv("FLOE_MODULE_PATH", FLOE_TEST_BUILD_ROOT "/modules", 1);
    floe_sim_def def = floe_sim_default_def();
    def.dim = dim;
    def.spacing = d;
    def.threads = threads;
    def.gravity[0] = def.gravity[2] = 0;
    def.gravity[1] = -9.81f;
    for (int k = 0; k < 3; k++) {
        def.domain_min[k] = lo[k];
        def.domain_max[k] = hi[k];
    }
    char err[512];
    floe_ctx *ctx = floe_ctx_create(&def, err, sizeof err);
    cr_assert_not_null(ctx, "%s", err);
    cr_assert_eq(floe_module_load(ctx, "flip"), FLOE_OK, "%s", floe_ctx_error(ctx));
    return ctx;
}

static void add(floe_ctx *ctx, const char *stage, int n, const floe_param_kv *kv)
{
    cr_assert_eq(floe_pipeline_add(ctx, stage, kv, n), FLOE_OK, "%s", floe_ctx_error(ctx));
}

/* splat, grid pass (speed of sound c), advect (PIC fraction pic) */
static void flip_stages(floe_ctx *ctx, double c, double pic)
{
    add(ctx, "flip.splat", 0, NULL);
    floe_param_kv g[] = {KV_F("speed_of_sound", c)};
    add(ctx, "flip.grid", 1, g);
    floe_param_kv a[] = {KV_F("pic", pic)};
    add(ctx, "flip.advect", 1, a);
}

static void damp(floe_ctx *ctx, double rate)
{
    cr_assert_eq(floe_module_load(ctx, "hello"), FLOE_OK, "%s", floe_ctx_error(ctx));
    floe_param_kv k[] = {KV_F("rate", rate)};
    add(ctx, "hello.damp", 1, k);
}

static floe_run_def run_def(double seconds, double fps)
{
    floe_run_def r = floe_run_default_def();
    r.fps = fps;
    r.frames = (int)(seconds * fps + 0.5);
    r.progress = 0;
    r.out_dir = NULL;
    return r;
}

static double total_mass(floe_ctx *ctx, floe_set s)
{
    const float *m = floe_attr(ctx, s, "m", FLOE_F32);
    double t = 0;
    for (uint32_t i = 0; i < floe_set_size(ctx, s); i++)
        t += m[i];
    return t;
}

static double kinetic(floe_ctx *ctx, floe_set s, double *vmax)
{
    const float *m = floe_attr(ctx, s, "m", FLOE_F32), *v = floe_attr(ctx, s, "v", FLOE_VEC3);
    double e = 0, vm = 0;
    for (uint32_t i = 0; i < floe_set_size(ctx, s); i++) {
        double v2 = (double)v[3 * i] * v[3 * i] + (double)v[3 * i + 1] * v[3 * i + 1] + (double)v[3 * i + 2] * v[3 * i + 2];
        e += 0.5 * m[i] * v2;
        vm = fmax(vm, sqrt(v2));
    }
    if (vmax)
        *vmax = vm;
    return e;
}

/* ---- count, mass, density attribute ------------------------------------------ */

Test(flip, count_mass_and_particle_density_constant, .timeout = FLOE_TIMEOUT(300))
{
    const float d = 0.005f, lo[3] = {0, 0, 0}, hi[3] = {0.4f, 0.3f, 0};
    floe_ctx *ctx = make_sim(2, d, lo, hi, 2);
    floe_set f = floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000);
    float wmax[3] = {0.15f, 0.25f, 0};
    cr_assert(floe_fill_box(ctx, f, lo, wmax, NULL) > 0);
    flip_stages(ctx, 20, 0.05);
    const uint32_t n0 = floe_set_size(ctx, f);
    const double m0 = total_mass(ctx, f);
    float *rho_before = malloc(n0 * sizeof(float));
    memcpy(rho_before, floe_attr(ctx, f, "rho", FLOE_F32), n0 * sizeof(float));
    floe_run_def r = run_def(0.3, 20);
    floe_run_summary sum;
    cr_assert_eq(floe_run(ctx, &r, &sum), FLOE_OK, "%s", floe_ctx_error(ctx));
    cr_assert_eq(floe_set_size(ctx, f), n0);
    cr_assert_eq(total_mass(ctx, f), m0, "total mass must not change (%.17g -> %.17g)", m0, total_mass(ctx, f));
    cr_assert_eq(memcmp(rho_before, floe_attr(ctx, f, "rho", FLOE_F32), n0 * sizeof(float)), 0,
                 "flip never changes the particles' density attribute");
    const float *x = floe_attr(ctx, f, "x", FLOE_VEC3);
    for (uint32_t i = 0; i < n0; i++)
        for (int k = 0; k < 2; k++)
            cr_assert(x[3 * i + k] >= lo[k] && x[3 * i + k] <= hi[k], "particle %u outside the domain", i);
    cr_log_info("%u particles, mass %.6f kg, %llu steps in 0.3 s: count and mass unchanged", n0, m0,
                (unsigned long long)sum.steps);
    free(rho_before);
    floe_ctx_destroy(ctx);
}

/* ---- obstacles ------------------------------------------------------------------ */

/* An independent (double precision) copy of the obstacle shapes, placed at
 * time t like the module does. */
typedef struct tob {
    const char *shape;
    double c[3], r, size[3], axis[3], n[3], vel[3], spin[3], blend;
    int nballs;
    double balls[8][4];
    int nkeys, loop;
    double keys[4][4];
} tob;

static double len3(const double a[3]) { return sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]); }

static void pose(const tob *o, double t, int dim, double c[3], double R[9])
{
    for (int k = 0; k < 3; k++)
        c[k] = o->c[k] + o->vel[k] * t;
    if (o->nkeys) {
        double t0 = o->keys[0][0], t1 = o->keys[o->nkeys - 1][0], tt = t;
        if (o->loop && tt > t0)
            tt = t0 + fmod(tt - t0, t1 - t0);
        if (tt <= t0)
            memcpy(c, &o->keys[0][1], 3 * sizeof(double));
        else if (tt >= t1)
            memcpy(c, &o->keys[o->nkeys - 1][1], 3 * sizeof(double));
        else
            for (int q = 0; q + 1 < o->nkeys; q++)
                if (tt >= o->keys[q][0] && tt <= o->keys[q + 1][0]) {
                    double u = (tt - o->keys[q][0]) / (o->keys[q + 1][0] - o->keys[q][0]);
                    for (int k = 0; k < 3; k++)
                        c[k] = o->keys[q][1 + k] + u * (o->keys[q + 1][1 + k] - o->keys[q][1 + k]);
                    break;
                }
    }
    if (dim == 2)
        c[2] = 0;
    double w = len3(o->spin), ang = w * t;
    for (int k = 0; k < 9; k++)
        R[k] = k % 4 == 0;
    if (w > 0) {
        double a[3] = {o->spin[0] / w, o->spin[1] / w, o->spin[2] / w}, cs = cos(ang), sn = sin(ang), tc = 1 - cs;
        double M[9] = {cs + a[0] * a[0] * tc,        a[0] * a[1] * tc - a[2] * sn, a[0] * a[2] * tc + a[1] * sn,
                       a[1] * a[0] * tc + a[2] * sn, cs + a[1] * a[1] * tc,        a[1] * a[2] * tc - a[0] * sn,
                       a[2] * a[0] * tc - a[1] * sn, a[2] * a[1] * tc + a[0] * sn, cs + a[2] * a[2] * tc};
        memcpy(R, M, sizeof M);
    }
}

static double sdf(const tob *o, double t, int dim, const float xf[3])
{
    double c[3], R[9], d[3], q[3];
    pose(o, t, dim, c, R);
    for (int k = 0; k < 3; k++)
        d[k] = k < dim ? xf[k] - c[k] : 0;
    for (int k = 0; k < 3; k++)
        q[k] = R[k] * d[0] + R[3 + k] * d[1] + R[6 + k] * d[2];
    if (!strcmp(o->shape, "sphere"))
        return len3(q) - o->r;
    if (!strcmp(o->shape, "box")) {
        double out = 0, in = -1e30;
        for (int k = 0; k < dim; k++) {
            double e = fabs(q[k]) - 0.5 * o->size[k];
            if (e > 0)
                out += e * e;
            in = fmax(in, e);
        }
        return sqrt(out) + fmin(in, 0);
    }
    if (!strcmp(o->shape, "capsule")) {
        double aa = o->axis[0] * o->axis[0] + o->axis[1] * o->axis[1] + o->axis[2] * o->axis[2];
        double u = (q[0] * o->axis[0] + q[1] * o->axis[1] + q[2] * o->axis[2]) / aa;
        u = fmax(-1, fmin(1, u));
        double r[3] = {q[0] - u * o->axis[0], q[1] - u * o->axis[1], q[2] - u * o->axis[2]};
        return len3(r) - o->r;
    }
    if (!strcmp(o->shape, "plane")) {
        double l = len3(o->n);
        return (q[0] * o->n[0] + q[1] * o->n[1] + q[2] * o->n[2]) / l;
    }
    /* metaballs */
    double m = 1e30, di[8];
    for (int b = 0; b < o->nballs; b++) {
        double r[3] = {q[0] - o->balls[b][0], q[1] - o->balls[b][1], dim == 3 ? q[2] - o->balls[b][2] : 0};
        di[b] = len3(r) - o->balls[b][3];
        m = fmin(m, di[b]);
    }
    double s = 0;
    for (int b = 0; b < o->nballs; b++)
        s += exp(-(di[b] - m) / o->blend);
    return m - o->blend * log(s);
}

static void add_obstacle(floe_ctx *ctx, const tob *o)
{
    floe_param_kv kv[16];
    int n = 0;
    char balls[512] = "", path[256] = "";
    kv[n++] = KV_S("shape", o->shape);
    kv[n++] = KV_V("centre", o->c[0], o->c[1], o->c[2]);
    kv[n++] = KV_F("radius", o->r > 0 ? o->r : 0.1);
    if (o->size[0] > 0)
        kv[n++] = KV_V("size", o->size[0], o->size[1], o->size[2]);
    kv[n++] = KV_V("axis", o->axis[0], o->axis[1], o->axis[2]);
    kv[n++] = KV_V("normal", o->n[0], o->n[1], o->n[2]);
    kv[n++] = KV_V("velocity", o->vel[0], o->vel[1], o->vel[2]);
    kv[n++] = KV_V("spin", o->spin[0], o->spin[1], o->spin[2]);
    kv[n++] = KV_F("blend", o->blend);
    for (int b = 0; b < o->nballs; b++)
        snprintf(balls + strlen(balls), sizeof balls - strlen(balls), "%g %g %g %g; ", o->balls[b][0], o->balls[b][1],
                 o->balls[b][2], o->balls[b][3]);
    kv[n++] = KV_S("balls", balls);
    for (int q = 0; q < o->nkeys; q++)
        snprintf(path + strlen(path), sizeof path - strlen(path), "%g %g %g %g; ", o->keys[q][0], o->keys[q][1],
                 o->keys[q][2], o->keys[q][3]);
    kv[n++] = KV_S("path", path);
    kv[n++] = KV_B("loop", o->loop);
    add(ctx, "flip.obstacle", n, kv);
}

/* Step with a fixed dt; after every step no particle may be inside any
 * obstacle (phi >= 0 in double precision, at the time the step ended). */
static void check_obstacles(int dim, const tob *ob, int nob, const float hi[3], const float wmin[3], const float wmax[3],
                            float d, int steps, double dt)
{
    const float lo[3] = {0, 0, 0};
    floe_ctx *ctx = make_sim(dim, d, lo, hi, 2);
    floe_set f = floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000);
    cr_assert(floe_fill_box(ctx, f, wmin, wmax, NULL) > 0);
    for (int i = 0; i < nob; i++)
        add_obstacle(ctx, &ob[i]);
    flip_stages(ctx, 15, 0.05);
    const uint32_t n = floe_set_size(ctx, f);
    double closest = 1e30;
    long near = 0;
    for (int s = 0; s < steps; s++) {
        cr_assert_eq(floe_step(ctx, dt), FLOE_OK, "%s", floe_ctx_error(ctx));
        const double t = floe_ctx_info(ctx)->time;
        const float *x = floe_attr(ctx, f, "x", FLOE_VEC3);
        for (uint32_t i = 0; i < n; i++) {
            double pmin = 1e30;
            int which = -1;
            for (int o = 0; o < nob; o++) {
                double p = sdf(&ob[o], t, dim, x + 3 * i);
                if (p < pmin)
                    pmin = p, which = o;
            }
            if (pmin < 2 * d)
                near++;
            closest = fmin(closest, pmin);
            cr_assert(pmin >= -1e-6, "step %d (t = %.4f s): particle %u at (%g, %g, %g) is inside obstacle %d (%s): "
                      "phi = %.3g m", s, t, i, x[3 * i], x[3 * i + 1], x[3 * i + 2], which, ob[which].shape, pmin);
        }
    }
    cr_assert(near > 1000, "the liquid hardly touched the obstacles (%ld particle-steps within 2d)", near);
    cr_log_info("%dD: %d obstacles, %u particles, %d steps: %ld particle-steps within 2d of an obstacle, "
                "smallest phi %.3g m (>= 0)", dim, nob, n, steps, near, closest);
    floe_ctx_destroy(ctx);
}

Test(flip, no_particle_inside_obstacles_2d, .timeout = FLOE_TIMEOUT(300))
{
    tob ob[7];
    memset(ob, 0, sizeof ob);
    ob[0] = (tob){.shape = "sphere", .c = {0.15, 0.06, 0}, .r = 0.04};
    ob[1] = (tob){.shape = "box", .c = {0.33, 0.05, 0}, .size = {0.06, 0.05, 0}, .spin = {0, 0, 1.5}};
    ob[2] = (tob){.shape = "capsule", .c = {0.28, 0.16, 0}, .axis = {0.05, 0.02, 0}, .r = 0.015, .spin = {0, 0, -3}};
    ob[3] = (tob){.shape = "plane", .c = {0.55, 0, 0}, .n = {-0.6, 1, 0}};
    ob[4] = (tob){.shape = "metaballs", .c = {0.45, 0.05, 0}, .blend = 0.01, .nballs = 3,
                  .balls = {{0, 0, 0, 0.025}, {0.03, 0.02, 0, 0.02}, {-0.02, 0.03, 0, 0.015}}};
    ob[5] = (tob){.shape = "sphere", .c = {0.05, 0.2, 0}, .r = 0.025, .vel = {0.3, -0.1, 0}};
    ob[6] = (tob){.shape = "box", .size = {0.02, 0.06, 0}, .nkeys = 3, .loop = 1,
                  .keys = {{0, 0.4, 0.2, 0}, {0.15, 0.4, 0.08, 0}, {0.3, 0.4, 0.2, 0}}};
    const float hi[3] = {0.6f, 0.35f, 0}, wmin[3] = {0.0f, 0.1f, 0}, wmax[3] = {0.24f, 0.3f, 0};
    check_obstacles(2, ob, 7, hi, wmin, wmax, 0.004f, 500, 2.5e-4);
}

Test(flip, no_particle_inside_obstacles_3d, .timeout = FLOE_TIMEOUT(300))
{
    tob ob[5];
    memset(ob, 0, sizeof ob);
    ob[0] = (tob){.shape = "sphere", .c = {0.12, 0.05, 0.1}, .r = 0.045, .vel = {0.1, 0, 0}};
    ob[1] = (tob){.shape = "box", .c = {0.25, 0.05, 0.1}, .size = {0.05, 0.08, 0.1}, .spin = {0, 2, 0}};
    ob[2] = (tob){.shape = "capsule", .c = {0.1, 0.15, 0.1}, .axis = {0.03, 0, 0.04}, .r = 0.015, .spin = {1, 0, 0}};
    ob[3] = (tob){.shape = "plane", .c = {0.3, 0, 0}, .n = {-1, 1, 0}};
    ob[4] = (tob){.shape = "metaballs", .c = {0.2, 0.05, 0.05}, .blend = 0.01, .nballs = 2,
                  .balls = {{0, 0, 0, 0.03}, {0.03, 0.02, 0.02, 0.02}}};
    const float hi[3] = {0.32f, 0.25f, 0.2f}, wmin[3] = {0.0f, 0.12f, 0.0f}, wmax[3] = {0.12f, 0.24f, 0.2f};
    check_obstacles(3, ob, 5, hi, wmin, wmax, 0.01f, 200, 5e-4);
}

/* ---- a tank at rest ---------------------------------------------------------------- */

Test(flip, settled_tank_stays_at_rest, .timeout = FLOE_TIMEOUT(300))
{
    const float d = 0.0025f, lo[3] = {0, 0, 0}, hi[3] = {0.1f, 0.15f, 0}, wmax[3] = {0.1f, 0.1f, 0};
    floe_ctx *ctx = make_sim(2, d, lo, hi, 2);
    floe_set f = floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000);
    cr_assert(floe_fill_box(ctx, f, lo, wmax, NULL) > 0);
    /* settle from the lattice with damping, then 200 free steps */
    flip_stages(ctx, 20, 0.05);
    damp(ctx, 20);
    floe_run_def settle = run_def(0.3, 10);
    cr_assert_eq(floe_run(ctx, &settle, NULL), FLOE_OK, "%s", floe_ctx_error(ctx));
    floe_pipeline_clear(ctx);
    flip_stages(ctx, 20, 0.05);
    double v0;
    kinetic(ctx, f, &v0);
    const double U = sqrt(9.81 * 0.1); /* the tank's gravity wave speed scale */
    double vmax = 0, dt_used = 0;
    for (int s = 0; s < 200; s++) {
        /* the adaptive step the run would take: courant h / c (defaults 0.5, h = 2d) */
        const double dt = 0.5 * 2 * d / 20;
        cr_assert_eq(floe_step(ctx, dt), FLOE_OK, "%s", floe_ctx_error(ctx));
        double vm;
        kinetic(ctx, f, &vm);
        vmax = fmax(vmax, vm);
        dt_used = dt;
    }
    cr_log_info("settled 2D tank (depth 0.1 m, %u particles): max speed after settling %.4f m/s, largest over the "
                "next 200 steps (dt %.3g s) %.4f m/s = %.2f%% of sqrt(g H) = %.2f m/s",
                floe_set_size(ctx, f), v0, dt_used, vmax, 100 * vmax / U, U);
    cr_assert(vmax < 0.02 * U, "max speed %.4f m/s over 200 steps exceeds 2%% of sqrt(g H) (%.4f m/s)", vmax, 0.02 * U);
    floe_ctx_destroy(ctx);
}

/* ---- 2D dam break vs Martin & Moyce (1952), n^2 = 2 ---------------------------------- */

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

/* The tank is the domain (its faces are the walls). The column settles
 * behind a gate (a box obstacle) with damping, then the gate is left out of
 * the pipeline and the clock starts, as in tests/test_wcsph.c. */
Test(flip, dam_break_2d_martin_moyce, .timeout = FLOE_TIMEOUT(600))
{
    const double a = 0.1;
    const float d = (float)(a / 40), lo[3] = {0, 0, 0}, hi[3] = {(float)(5 * a), (float)(3 * a), 0};
    const float water[3] = {(float)a, (float)(2 * a), 0};
    floe_ctx *ctx = make_sim(2, d, lo, hi, 2);
    floe_set f = floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000);
    cr_assert(floe_fill_box(ctx, f, lo, water, NULL) > 0);
    floe_param_kv gate[] = {KV_S("shape", "box"), KV_V("centre", a + 2 * d, 1.5 * a, 0), KV_V("size", 4 * d, 3 * a, 0)};
    add(ctx, "flip.obstacle", 3, gate);
    flip_stages(ctx, 20, 0.05);
    damp(ctx, 5);
    floe_run_def settle = run_def(0.4, 10);
    cr_assert_eq(floe_run(ctx, &settle, NULL), FLOE_OK, "%s", floe_ctx_error(ctx));

    floe_pipeline_clear(ctx);
    flip_stages(ctx, 20, 0.05);
    static front_log L;
    L.a = a;
    L.d = d;
    L.tscale = sqrt(2 * 9.81 / a);
    L.t0 = floe_ctx_info(ctx)->time;
    L.fluid = f;
    floe_run_def r = run_def(2.6 / L.tscale, 400);
    r.on_frame = on_frame;
    r.user = &L;
    floe_run_summary sum;
    cr_assert_eq(floe_run(ctx, &r, &sum), FLOE_OK, "%s", floe_ctx_error(ctx));

    char path[1024];
    snprintf(path, sizeof path, "%s/dambreak2d_martin_moyce_n2eq2_a2.25in_table2_front.csv",
             FLOE_TEST_SOURCE_ROOT "/tests/validation");
    FILE *csv = fopen(path, "r");
    cr_assert_not_null(csv, "cannot open %s", path);
    char line[512];
    int compared = 0;
    double worst = 0;
    cr_log_info("flip dam break: %u particles, %llu steps after the release", floe_set_size(ctx, f),
                (unsigned long long)sum.steps);
    cr_log_info("T      Z_exp  Z_flip  rel.error");
    while (fgets(line, sizeof line, csv)) {
        double T, Z;
        if (line[0] == '#' || sscanf(line, "%lf,%lf", &T, &Z) != 2 || T > 2.5)
            continue;
        double zs = front_interp(&L, T), e = (zs - Z) / Z;
        cr_log_info("%.2f  %.2f   %.3f   %+.1f%%%s", T, Z, zs, 100 * e, T >= 0.5 && T <= 2.0 ? "" : "  (not checked)");
        if (T < 0.5 || T > 2.0)
            continue;
        worst = fmax(worst, fabs(e));
        compared++;
    }
    fclose(csv);
    cr_log_info("worst deviation for T in [0.5, 2.0]: %.1f%%", 100 * worst);
    cr_assert(compared >= 5, "compared only %d points", compared);
    cr_assert(worst < 0.15, "surge front deviates %.1f%% from Martin & Moyce (limit 15%%)", 100 * worst);
    floe_ctx_destroy(ctx);
}

/* ---- PIC vs FLIP: kinetic energy decay of a sloshing tank -------------------------------- */

/* Water 0.3 m wide, 0.1 m deep on average, its surface tilted by +-0.04 m,
 * released from rest in a 0.3 m x 0.25 m tank: it sloshes with a period of
 * about 0.7 s (first mode, omega^2 = g k tanh(k h), k = pi / 0.3). Kinetic
 * energy is recorded at 50 frames/s; the largest value in the first half
 * period ([0, 0.4] s), in the third ([0.8, 1.2] s) and the time average over
 * 1.6 s are compared for r = 1 (pure PIC) and r = 0.05 (per step, Guay). */
typedef struct slosh_log {
    floe_set f;
    double peak0, peak1, sum;
    int frames;
} slosh_log;

static int slosh_frame(floe_ctx *ctx, const floe_frame_stats *st, void *user)
{
    slosh_log *S = user;
    const double e = kinetic(ctx, S->f, NULL);
    if (st->time <= 0.4)
        S->peak0 = fmax(S->peak0, e);
    else if (st->time >= 0.8 && st->time <= 1.2)
        S->peak1 = fmax(S->peak1, e);
    S->sum += e;
    S->frames++;
    return 0;
}

static void slosh(double pic, slosh_log *S)
{
    const float d = 0.004f, lo[3] = {0, 0, 0}, hi[3] = {0.3f, 0.25f, 0}, wmax[3] = {0.3f, 0.14f, 0};
    floe_ctx *ctx = make_sim(2, d, lo, hi, 2);
    floe_set f = floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000);
    cr_assert(floe_fill_box(ctx, f, lo, wmax, NULL) > 0);
    const uint32_t n = floe_set_size(ctx, f);
    const float *x = floe_attr(ctx, f, "x", FLOE_VEC3);
    uint8_t *keep = malloc(n);
    for (uint32_t i = 0; i < n; i++)
        keep[i] = x[3 * i + 1] < 0.1f + 0.04f * (x[3 * i] / 0.15f - 1.0f);
    cr_assert_eq(floe_core_api()->set_compact(ctx, f, keep), FLOE_OK, "%s", floe_ctx_error(ctx));
    free(keep);
    add(ctx, "flip.splat", 0, NULL);
    floe_param_kv g[] = {KV_F("speed_of_sound", 10)};
    add(ctx, "flip.grid", 1, g);
    floe_param_kv a[] = {KV_F("pic", pic)};
    add(ctx, "flip.advect", 1, a);
    memset(S, 0, sizeof *S);
    S->f = f;
    floe_run_def r = run_def(1.6, 50);
    r.on_frame = slosh_frame;
    r.user = S;
    cr_assert_eq(floe_run(ctx, &r, NULL), FLOE_OK, "%s", floe_ctx_error(ctx));
    floe_ctx_destroy(ctx);
}

Test(flip, pure_pic_damps_sloshing_faster_than_flip, .timeout = FLOE_TIMEOUT(300))
{
    slosh_log P, F;
    slosh(1.0, &P);
    slosh(0.05, &F);
    const double mp = P.sum / P.frames, mf = F.sum / F.frames;
    cr_log_info("sloshing tank, kinetic energy (J): peak in [0, 0.4] s: PIC %.4f, FLIP %.4f; peak in [0.8, 1.2] s: "
                "PIC %.5f, FLIP %.5f; mean over 1.6 s: PIC %.5f, FLIP %.5f (PIC/FLIP %.3f)",
                P.peak0, F.peak0, P.peak1, F.peak1, mp, mf, mp / mf);
    cr_assert(P.peak0 < 0.5 * F.peak0, "PIC should damp the first swing clearly more (%.4f vs %.4f J)", P.peak0,
              F.peak0);
    cr_assert(mp < 0.5 * mf, "PIC should keep clearly less kinetic energy on average (%.5f vs %.5f J)", mp, mf);
}

/* ---- determinism across thread counts ---------------------------------------------------- */

static float *run_threads(int threads, uint32_t *n)
{
    const float d = 0.005f, lo[3] = {0, 0, 0}, hi[3] = {0.4f, 0.3f, 0}, wmax[3] = {0.15f, 0.25f, 0};
    floe_ctx *ctx = make_sim(2, d, lo, hi, threads);
    floe_set f = floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000);
    cr_assert(floe_fill_box(ctx, f, lo, wmax, NULL) > 0);
    floe_param_kv ob[] = {KV_S("shape", "sphere"), KV_V("centre", 0.25, 0.03, 0), KV_F("radius", 0.04)};
    add(ctx, "flip.obstacle", 3, ob);
    flip_stages(ctx, 20, 0.05);
    for (int s = 0; s < 150; s++)
        cr_assert_eq(floe_step(ctx, 3e-4), FLOE_OK, "%s", floe_ctx_error(ctx));
    *n = floe_set_size(ctx, f);
    float *x = malloc(6 * (size_t)*n * sizeof(float));
    memcpy(x, floe_attr(ctx, f, "x", FLOE_VEC3), 3 * (size_t)*n * sizeof(float));
    memcpy(x + 3 * (size_t)*n, floe_attr(ctx, f, "v", FLOE_VEC3), 3 * (size_t)*n * sizeof(float));
    floe_ctx_destroy(ctx);
    return x;
}

Test(flip, bit_identical_for_one_and_two_threads, .timeout = FLOE_TIMEOUT(300))
{
    uint32_t n1, n2;
    float *a = run_threads(1, &n1), *b = run_threads(2, &n2);
    cr_assert_eq(n1, n2);
    cr_assert_eq(memcmp(a, b, 6 * (size_t)n1 * sizeof(float)), 0,
                 "positions/velocities differ between 1 and 2 threads (the splat must not depend on threads)");
    cr_log_info("%u particles, 150 steps: positions and velocities bit-identical with 1 and 2 threads", n1);
    free(a);
    free(b);
}

/* ---- errors ------------------------------------------------------------------------------- */

static void expect_step_error(floe_ctx *ctx, const char *what)
{
    int rc = floe_step(ctx, 1e-4);
    cr_assert_neq(rc, FLOE_OK, "expected an error mentioning '%s'", what);
    cr_assert_not_null(strstr(floe_ctx_error(ctx), what), "error '%s' should mention '%s'", floe_ctx_error(ctx), what);
    cr_log_info("refused: %s", floe_ctx_error(ctx));
}

Test(flip, parameter_errors_are_reported)
{
    const float lo[3] = {0, 0, 0}, hi[3] = {0.2f, 0.2f, 0}, w[3] = {0.1f, 0.1f, 0};
    floe_ctx *ctx = make_sim(2, 0.01f, lo, hi, 1);
    floe_set f = floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000);
    cr_assert(floe_fill_box(ctx, f, lo, w, NULL) > 0);
    /* wrong choice: refused when the stage is added */
    floe_param_kv bad[] = {KV_S("shape", "torus")};
    cr_assert_neq(floe_pipeline_add(ctx, "flip.obstacle", bad, 1), FLOE_OK);
    /* malformed metaballs and paths: refused at the first step, with the row */
    floe_param_kv mb[] = {KV_S("shape", "metaballs"), KV_S("balls", "0.1 0.1 0.02; 0.1 x")};
    add(ctx, "flip.obstacle", 2, mb);
    flip_stages(ctx, 20, 0.05);
    expect_step_error(ctx, "row 2");
    floe_pipeline_clear(ctx);
    floe_param_kv pth[] = {KV_S("shape", "sphere"), KV_S("path", "0 0.1 0.1; 0 0.2 0.1")};
    add(ctx, "flip.obstacle", 2, pth);
    flip_stages(ctx, 20, 0.05);
    expect_step_error(ctx, "increase");
    /* the passes in the wrong order */
    floe_pipeline_clear(ctx);
    floe_param_kv g[] = {KV_F("speed_of_sound", 20)};
    add(ctx, "flip.grid", 1, g);
    expect_step_error(ctx, "flip.splat");
    floe_ctx_destroy(ctx);
}

/* ---- raycast: PNG frames --------------------------------------------------------------------- */

static int is_png(const char *path)
{
    unsigned char sig[8];
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    size_t n = fread(sig, 1, 8, f);
    fclose(f);
    static const unsigned char png[8] = {0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a};
    return n == 8 && !memcmp(sig, png, 8);
}

Test(raycast, writes_png_frames_2d_and_3d, .timeout = FLOE_TIMEOUT(300))
{
    char folder[256];
    snprintf(folder, sizeof folder, "flip-test-frames-%ld", (long)getpid());
    for (int dim = 2; dim <= 3; dim++) {
        const float lo[3] = {0, 0, 0}, hi[3] = {0.2f, 0.15f, 0.1f}, w[3] = {0.08f, 0.1f, 0.1f};
        floe_ctx *ctx = make_sim(dim, 0.01f, lo, hi, 2);
        cr_assert_eq(floe_module_load(ctx, "raycast"), FLOE_OK, "%s", floe_ctx_error(ctx));
        floe_set f = floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000);
        cr_assert(floe_fill_box(ctx, f, lo, w, NULL) > 0);
        floe_param_kv ob[] = {KV_S("shape", "sphere"), KV_V("centre", 0.14, 0.02, 0.05), KV_F("radius", 0.03)};
        add(ctx, "flip.obstacle", 3, ob);
        flip_stages(ctx, 15, 0.05);
        floe_param_kv rk[] = {KV_S("folder", folder), KV_S("name", dim == 2 ? "img2d" : "img3d"), KV_F("fps", 100),
                              KV_F("width", 96), KV_B("video", 0)};
        add(ctx, "raycast.render", 5, rk);
        for (int s = 0; s < 40; s++)
            cr_assert_eq(floe_step(ctx, 5e-4), FLOE_OK, "%s", floe_ctx_error(ctx));
        floe_ctx_destroy(ctx);
        /* 40 steps of 0.5 ms at 100 images/s: t = 0, 0.01 (step 20) -> 2 images */
        int found = 0;
        for (int k = 0; k < 4; k++) {
            char p[512];
            snprintf(p, sizeof p, "%s/%s.%05d.png", folder, dim == 2 ? "img2d" : "img3d", k);
            if (is_png(p)) {
                found++;
                remove(p);
            }
        }
        cr_log_info("%dD: %d PNG frames written by raycast.render", dim, found);
        cr_assert_eq(found, 2, "%dD: expected 2 PNG frames, found %d", dim, found);
    }
    rmdir(folder);

    /* folders must be relative and free of ".." */
    const float lo[3] = {0, 0, 0}, hi[3] = {0.2f, 0.15f, 0}, w[3] = {0.08f, 0.1f, 0};
    floe_ctx *ctx = make_sim(2, 0.01f, lo, hi, 1);
    cr_assert_eq(floe_module_load(ctx, "raycast"), FLOE_OK, "%s", floe_ctx_error(ctx));
    floe_set f = floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000);
    cr_assert(floe_fill_box(ctx, f, lo, w, NULL) > 0);
    const char *bad[] = {"/tmp/frames", "out/../../etc", ".."};
    for (int i = 0; i < 3; i++) {
        floe_pipeline_clear(ctx);
        flip_stages(ctx, 15, 0.05);
        floe_param_kv rk[] = {KV_S("folder", bad[i])};
        add(ctx, "raycast.render", 1, rk);
        cr_assert_neq(floe_step(ctx, 1e-4), FLOE_OK, "folder '%s' must be refused", bad[i]);
        cr_assert_not_null(strstr(floe_ctx_error(ctx), "relative"), "%s", floe_ctx_error(ctx));
    }
    floe_ctx_destroy(ctx);
}

/* With an `ffmpeg` on PATH the frames are assembled when the simulation is
 * closed. A stand-in script records its arguments and creates the output. */
Test(raycast, runs_ffmpeg_on_path_when_the_simulation_closes, .timeout = FLOE_TIMEOUT(120))
{
    char bin[256], folder[256], script[512], args[512];
    snprintf(bin, sizeof bin, "/tmp/flip-test-bin-%ld", (long)getpid());
    snprintf(folder, sizeof folder, "flip-test-video-%ld", (long)getpid());
    cr_assert(mkdir(bin, 0755) == 0 || errno == EEXIST);
    snprintf(script, sizeof script, "%s/ffmpeg", bin);
    snprintf(args, sizeof args, "%s/args.txt", bin);
    FILE *sf = fopen(script, "w");
    cr_assert_not_null(sf);
    /* the last argument is the output file */
    fprintf(sf, "#!/bin/sh\necho \"$@\" > '%s'\nfor a in \"$@\"; do last=\"$a\"; done\n: > \"$last\"\n", args);
    fclose(sf);
    chmod(script, 0755);
    const char *old = getenv("PATH");
    char *saved = strdup(old ? old : "");
    char path[4096];
    snprintf(path, sizeof path, "%s:%s", bin, saved);
    setenv("PATH", path, 1);

    const float lo[3] = {0, 0, 0}, hi[3] = {0.2f, 0.15f, 0}, w[3] = {0.08f, 0.1f, 0};
    floe_ctx *ctx = make_sim(2, 0.01f, lo, hi, 1);
    cr_assert_eq(floe_module_load(ctx, "raycast"), FLOE_OK, "%s", floe_ctx_error(ctx));
    floe_set f = floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000);
    cr_assert(floe_fill_box(ctx, f, lo, w, NULL) > 0);
    flip_stages(ctx, 15, 0.05);
    floe_param_kv rk[] = {KV_S("folder", folder), KV_S("name", "clip"), KV_F("fps", 1000), KV_F("width", 32)};
    add(ctx, "raycast.render", 4, rk);
    for (int s = 0; s < 3; s++)
        cr_assert_eq(floe_step(ctx, 1e-3), FLOE_OK, "%s", floe_ctx_error(ctx));
    floe_ctx_destroy(ctx); /* fini runs ffmpeg */
    setenv("PATH", saved, 1);
    free(saved);

    FILE *af = fopen(args, "r");
    cr_assert_not_null(af, "ffmpeg was not started");
    char line[1024] = "";
    cr_assert_not_null(fgets(line, sizeof line, af));
    fclose(af);
    cr_log_info("ffmpeg %s", line);
    cr_assert_not_null(strstr(line, "clip.%05d.png"), "%s", line);
    cr_assert_not_null(strstr(line, "-framerate 1000"), "%s", line);
    char mp4[512];
    snprintf(mp4, sizeof mp4, "%s/clip.mp4", folder);
    cr_assert_eq(access(mp4, F_OK), 0, "no %s", mp4);
    remove(mp4);
    for (int k = 0; k < 3; k++) {
        char p[512];
        snprintf(p, sizeof p, "%s/clip.%05d.png", folder, k);
        cr_assert(is_png(p), "frame %d missing", k);
        remove(p);
    }
    rmdir(folder);
    remove(args);
    remove(script);
    rmdir(bin);
}
