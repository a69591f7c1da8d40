/* Probes (core/src/probes.c): interpolation of a known field, a still tank's
 * gauges, pressure and floor force against hydrostatics, tables that stay
 * whole when a run is interrupted, own-rate sampling, bad declarations.
 * docs/validation.md ("Probes") reports the measured values. */
#include "csv_fixture.h"
#include "scene_fixture.h"
#include "sim_fixture.h"

static char dir[300];

static void setup(void)
{
    sc_setup();
    snprintf(dir, sizeof dir, "%s/run", sc_tmp);
}

TestSuite(probes, .init = setup, .fini = sc_teardown);

static void read_table(const char *name, csv_table *t)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s.probe.csv", dir, name);
    cr_assert_eq(csv_read(p, t), 0, "no table %s", p);
    cr_assert_not(t->ragged, "%s: a row with another number of fields than the header", p);
}

static floe_probe_def probe(const char *name, int kind)
{
    floe_probe_def d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.kind = kind;
    d.direction = 1;
    return d;
}

/* On a lattice with p = 1000 + 200 x - 300 y, the kernel-sum normalised
 * interpolation at interior points gives the linear field back (the
 * lattice is symmetric about each point to within its spacing); at a
 * corner of the fluid, half outside, the normalisation keeps the value
 * within a few per cent where a plain sum would be off by half. */
Test(probes, interpolation_recovers_a_linear_field)
{
    const float d = 0.01f, tank[3] = {0.2f, 0.2f, 0}, water[3] = {0.2f, 0.2f, 0};
    fixture f = fixture_tank(2, d, tank, water, 0);
    uint32_t n = floe_set_size(f.ctx, f.fluid);
    const float *x = floe_attr(f.ctx, f.fluid, "x", FLOE_VEC3);
    float *p = floe_attr(f.ctx, f.fluid, "p", FLOE_F32), *rho = floe_attr(f.ctx, f.fluid, "rho", FLOE_F32);
    for (uint32_t i = 0; i < n; i++) {
        p[i] = 1000.0f + 200.0f * x[3 * i] - 300.0f * x[3 * i + 1];
        rho[i] = 1000.0f;
    }
    const float pts[3][3] = {{0.1f, 0.1f, 0}, {0.0533f, 0.1377f, 0}, {0.0f, 0.0f, 0}};
    floe_probe_def pd = probe("p", FLOE_PROBE_POINTS);
    pd.points = pts;
    pd.npoints = 3;
    cr_assert_eq(floe_probe_add(f.ctx, &pd), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    fixture_add(&f, "neighbours", 0, NULL);
    floe_run_def r = fixture_run_def(0, 10);
    r.out_dir = dir;
    cr_assert_eq(floe_run(f.ctx, &r, NULL), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    csv_table t;
    read_table("p", &t);
    cr_assert_eq(t.nrows, 1);
    for (int k = 0; k < 3; k++) {
        char c[32];
        snprintf(c, sizeof c, "p_%d", k);
        const double got = csv_at(&t, 0, csv_col(&t, c)), want = 1000.0 + 200.0 * pts[k][0] - 300.0 * pts[k][1];
        snprintf(c, sizeof c, "ksum_%d", k);
        const double ks = csv_at(&t, 0, csv_col(&t, c));
        cr_log_info("point %d: %.3f against %.3f (kernel sum %.4f)", k, got, want, ks);
        cr_assert(fabs(got - want) < (k < 2 ? 1e-3 : 0.03) * want, "point %d: %g, expected %g", k, got, want);
        cr_assert(k < 2 ? fabs(ks - 1) < 0.02 : ks < 0.35, "kernel sum %g at point %d", ks, k);
    }
    csv_free(&t);
    floe_ctx_destroy(f.ctx);
}

/* A 2D tank (0.2 x 0.3 m of water, d = 1 cm) settles under IISPH with the
 * gradient correction (damped 1.5 s), then is measured 1.0 s undamped:
 * gauges read the fill height within d/2; the pressure probes, averaged
 * over the window at 1 kHz, read rho0 g (h - y) below the top two layers,
 * h the gauges' mean height, within 2% on average over the six points and
 * 3.5% each (measured +0.5% to +3.0%: the deepest point, 6 layers above the
 * floor, reads highest); the floor's force is the water's weight within 3%
 * (iisph's extrapolated wall pressure). */
Test(probes, still_tank_gauges_pressure_and_floor_force, .timeout = FLOE_TIMEOUT(300))
{
    const float d = 0.01f, tank[3] = {0.2f, 0.4f, 0}, water[3] = {0.2f, 0.3f, 0};
    fixture f = fixture_tank(2, d, tank, water, 0);
    cr_assert_eq(floe_module_load(f.ctx, "sph"), FLOE_OK, "%s", floe_ctx_error(f.ctx)); /* sph.density */
    cr_assert_eq(floe_module_load(f.ctx, "iisph"), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    enum { NP = 6 };
    float pts[NP][3], gauges[3][3] = {{0.05f, 0, 0}, {0.1f, 0, 0}, {0.15f, 0, 0}};
    for (int k = 0; k < NP; k++)
        pts[k][0] = 0.1f, pts[k][1] = 0.06f + 0.04f * k, pts[k][2] = 0;
    floe_probe_def pd = probe("pressure", FLOE_PROBE_POINTS);
    pd.points = (const float(*)[3])pts;
    pd.npoints = NP;
    pd.rate = 1000;
    floe_probe_def gd = probe("gauges", FLOE_PROBE_HEIGHT);
    gd.points = (const float(*)[3])gauges;
    gd.npoints = 3;
    floe_probe_def fd = probe("floor", FLOE_PROBE_FORCE);
    fd.set = "boundary";
    fd.wall = FLOE_WALL_EXTRAPOLATE; /* iisph's default */
    floe_probe_def xd = probe("front", FLOE_PROBE_FRONT);
    cr_assert_eq(floe_probe_add(f.ctx, &pd), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    cr_assert_eq(floe_probe_add(f.ctx, &gd), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    cr_assert_eq(floe_probe_add(f.ctx, &fd), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    cr_assert_eq(floe_probe_add(f.ctx, &xd), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    for (int pass = 0; pass < 2; pass++) {
        floe_pipeline_clear(f.ctx);
        fixture_add(&f, "neighbours", 0, NULL);
        fixture_add(&f, "sph.density", 0, NULL);
        fixture_add(&f, "gravity", 0, NULL);
        floe_param_kv kv[] = {KV_F("damping", pass ? 0 : 20), KV_B("gradient_correction", 1)};
        fixture_add(&f, "iisph.solve", 2, kv);
        fixture_add(&f, "integrate", 0, NULL);
        floe_run_def r = fixture_run_def(pass ? 1.0 : 1.5, 20);
        r.out_dir = pass ? dir : NULL;
        cr_assert_eq(floe_run(f.ctx, &r, NULL), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    }
    csv_table g, p, F, X;
    read_table("gauges", &g);
    read_table("pressure", &p);
    read_table("floor", &F);
    read_table("front", &X);
    cr_assert_eq(g.nrows, 21);
    double h = 0;
    for (int r = 0; r < g.nrows; r++)
        for (int k = 1; k <= 3; k++) {
            const double v = csv_at(&g, r, k);
            cr_assert(fabs(v - water[1]) < 0.5 * d, "gauge %d at t = %g reads %g, fill height %g", k,
                      csv_at(&g, r, 0), v, water[1]);
            h += v / (3.0 * g.nrows);
        }
    cr_log_info("gauges: mean height %.5f m, fill height %.3f m", h, water[1]);
    cr_assert_gt(p.nrows, 500, "1 kHz over 1 s: %d rows", p.nrows);
    double mean_err = 0;
    for (int k = 0; k < NP; k++) {
        char c[16];
        snprintf(c, sizeof c, "p_%d", k);
        const int col = csv_col(&p, c);
        double s = 0;
        for (int r = 0; r < p.nrows; r++)
            s += csv_at(&p, r, col);
        const double avg = s / p.nrows, ref = 1000.0 * 9.81 * (h - pts[k][1]);
        cr_log_info("pressure probe at y = %.2f: %.1f Pa, rho0 g (h - y) = %.1f Pa, %+.2f%%", pts[k][1], avg, ref,
                    100 * (avg / ref - 1));
        cr_expect(fabs(avg / ref - 1) < 0.035, "probe %d: %.1f Pa against %.1f Pa", k, avg, ref);
        mean_err += (avg / ref - 1) / NP;
    }
    cr_log_info("pressure probes: mean error %+.2f%%", 100 * mean_err);
    cr_assert(fabs(mean_err) < 0.02, "pressure probes %+.2f%% off on average", 100 * mean_err);
    double fy = 0;
    for (int r = 0; r < F.nrows; r++)
        fy += csv_at(&F, r, 2) / F.nrows;
    const double weight = 1000.0 * water[0] * water[1] * 9.81;
    cr_log_info("floor force %.2f N/m against the weight %.2f N/m (%+.2f%%)", -fy, weight, 100 * (-fy / weight - 1));
    cr_assert(fabs(-fy / weight - 1) < 0.03, "floor force %g against weight %g", -fy, weight);
    for (int r = 0; r < X.nrows; r++)
        cr_assert(fabs(csv_at(&X, r, 1) - water[0]) < 0.5 * d, "front at %g", csv_at(&X, r, 1));
    csv_free(&g);
    csv_free(&p);
    csv_free(&F);
    csv_free(&X);
    floe_ctx_destroy(f.ctx);
}

static int stop_at_3(floe_ctx *ctx, const floe_frame_stats *st, void *user)
{
    (void)ctx, (void)user;
    if (st->frame == 3)
        floe_request_stop(); /* as Ctrl-C does */
    return 0;
}

/* Interrupted after frame 3 (a stop request, as Ctrl-C): every table holds
 * the complete rows of frames 0..3 and nothing else. */
Test(probes, tables_are_whole_when_a_run_is_interrupted)
{
    const float d = 0.02f, tank[3] = {0.4f, 0.4f, 0}, water[3] = {0.2f, 0.3f, 0};
    fixture f = fixture_tank(2, d, tank, water, 1);
    fixture_wcsph(&f, 20, "artificial", 0.05, 0);
    const float pts[1][3] = {{0.1f, 0.1f, 0}};
    floe_probe_def pd = probe("p", FLOE_PROBE_POINTS);
    pd.points = pts;
    pd.npoints = 1;
    floe_probe_def xd = probe("front", FLOE_PROBE_FRONT);
    floe_probe_def fast = probe("fast", FLOE_PROBE_FRONT);
    fast.rate = 2000;
    cr_assert_eq(floe_probe_add(f.ctx, &pd), FLOE_OK);
    cr_assert_eq(floe_probe_add(f.ctx, &xd), FLOE_OK);
    cr_assert_eq(floe_probe_add(f.ctx, &fast), FLOE_OK);
    floe_run_def r = fixture_run_def(0.5, 50);
    r.out_dir = dir;
    r.on_frame = stop_at_3;
    cr_assert_eq(floe_run(f.ctx, &r, NULL), FLOE_ERR_INTERRUPT);
    csv_table t, x, q;
    read_table("p", &t);
    read_table("front", &x);
    read_table("fast", &q);
    cr_assert_eq(t.nrows, 4, "%d rows", t.nrows);
    cr_assert_eq(x.nrows, 4, "%d rows", x.nrows);
    for (int k = 0; k < 4; k++)
        cr_assert(fabs(csv_at(&t, k, 0) - k / 50.0) < 1e-9, "row %d at t = %g", k, csv_at(&t, k, 0));
    cr_assert(csv_at(&x, 3, 1) > csv_at(&x, 0, 1), "the front moved: %g -> %g", csv_at(&x, 0, 1), csv_at(&x, 3, 1));
    /* the own-rate table: up to the last frame written, at most one row in
     * each sampling period */
    cr_assert_gt(q.nrows, 10);
    cr_assert(csv_at(&q, q.nrows - 1, 0) <= 3 / 50.0 + 1e-9);
    for (int k = 1; k < q.nrows; k++)
        cr_assert_gt(floor(csv_at(&q, k, 0) * 2000 + 1e-6), floor(csv_at(&q, k - 1, 0) * 2000 + 1e-6));
    csv_free(&t);
    csv_free(&x);
    csv_free(&q);
    floe_ctx_destroy(f.ctx);
}

/* With a fixed dt of 1 ms a 250 Hz probe samples every 4 ms: 50 rows over
 * 0.2 s after the one at t = 0. */
Test(probes, own_rate)
{
    const float d = 0.02f, tank[3] = {0.4f, 0.4f, 0}, water[3] = {0.2f, 0.2f, 0};
    fixture f = fixture_tank(2, d, tank, water, 1);
    fixture_wcsph(&f, 20, "artificial", 0.05, 0);
    floe_probe_def xd = probe("front", FLOE_PROBE_FRONT);
    xd.rate = 250;
    cr_assert_eq(floe_probe_add(f.ctx, &xd), FLOE_OK);
    floe_run_def r = fixture_run_def(0.2, 10);
    r.out_dir = dir;
    r.dt = 1e-3;
    cr_assert_eq(floe_run(f.ctx, &r, NULL), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    csv_table t;
    read_table("front", &t);
    cr_assert_eq(t.nrows, 51, "%d rows", t.nrows);
    for (int k = 0; k < t.nrows; k++)
        cr_assert(fabs(csv_at(&t, k, 0) - 0.004 * k) < 1e-6, "row %d at %g", k, csv_at(&t, k, 0));
    csv_free(&t);
    floe_ctx_destroy(f.ctx);
}

/* A droplet ahead of the water: the plain front is the droplet's edge, the
 * front with min_neighbours = 2 the block's (its outermost particle plus
 * d/2), and with the direction -1 the block's other side. */
Test(probes, front_leaves_out_a_droplet_ahead)
{
    const float d = 0.02f, tank[3] = {0.6f, 0.4f, 0}, water[3] = {0.2f, 0.2f, 0};
    fixture f = fixture_tank(2, d, tank, water, 1);
    const float lo[3] = {0.4f, 0, 0}, hi[3] = {0.4f + d, d, 0};
    cr_assert_eq(floe_fill_box(f.ctx, f.fluid, lo, hi, NULL), 1);
    fixture_wcsph(&f, 20, "artificial", 0.05, 0);
    floe_probe_def a = probe("plain", FLOE_PROBE_FRONT), b = probe("body", FLOE_PROBE_FRONT),
                   c = probe("back", FLOE_PROBE_FRONT);
    b.min_neighbours = 2;
    c.min_neighbours = 2;
    c.direction = -1;
    cr_assert_eq(floe_probe_add(f.ctx, &a), FLOE_OK);
    cr_assert_eq(floe_probe_add(f.ctx, &b), FLOE_OK);
    cr_assert_eq(floe_probe_add(f.ctx, &c), FLOE_OK);
    floe_run_def r = fixture_run_def(0.01, 100);
    r.out_dir = dir;
    cr_assert_eq(floe_run(f.ctx, &r, NULL), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    csv_table ta, tb, tc;
    read_table("plain", &ta);
    read_table("body", &tb);
    read_table("back", &tc);
    /* frame 0: the lattice as filled */
    cr_assert(fabs(csv_at(&ta, 0, 1) - (0.4 + d)) < 1e-6, "plain front %g", csv_at(&ta, 0, 1));
    cr_assert(fabs(csv_at(&tb, 0, 1) - 0.2) < 1e-6, "front with neighbours %g", csv_at(&tb, 0, 1));
    cr_assert(fabs(csv_at(&tc, 0, 1)) < 1e-6, "back %g", csv_at(&tc, 0, 1));
    csv_free(&ta);
    csv_free(&tb);
    csv_free(&tc);
    floe_ctx_destroy(f.ctx);
}

/* Bad declarations name the scene line and the problem. */
Test(probes, bad_declarations_are_errors)
{
    static const char *const cases[][2] = {
        {"sim:probe{ name = 'a', kind = 'pressure', points = {{0, 0}} }", "unknown kind 'pressure'"},
        {"sim:probe{ name = 'a', kind = 'force', set = 'nothing' }", "needs a boundary set"},
        {"sim:probe{ name = 'a/b', kind = 'front' }", "must be 1-59 letters"},
        {"sim:probe{ name = 'a', points = {{0, 0, 0}} }", "point 1 must have 2 coordinates"},
        {"sim:probe{ name = 'a', kind = 'front', axis = 'z' }", "'axis' must be"},
        {"sim:probe{ name = 'a', kind = 'front' } sim:probe{ name = 'a', kind = 'front' }", "declared twice"},
        {"sim:probe{ name = 'a', kind = 'height' }", "needs 'points'"},
        {"sim:probe{ name = 'a', kind = 'front', speed = 1 }", "unknown key 'speed'"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        floe_scene_opts o = sc_opts();
        int rc = sc_run(&o,
                        SC_HEAD "local sim = floe.sim{ dim = 2, spacing = 0.1, domain = { min = {-1, -1}, max = {1, 1} } }\n"
                                "%s\n",
                        cases[c][0]);
        cr_expect_neq(rc, FLOE_OK, "%s: accepted", cases[c][0]);
        cr_expect(strstr(sc_err, "scene.lua:3:") != NULL, "no line in: %s", sc_err);
        sc_expect_err(cases[c][1]);
    }
}

/* A run that failed in frame 8 and was resumed from its checkpoint after
 * frame 5 (floe run --resume) has the tables of a run never interrupted,
 * byte for byte: the rows before the checkpoint are kept, the rest
 * sampled again. */
Test(probes, resumed_run_has_the_tables_of_an_uninterrupted_one, .timeout = FLOE_TIMEOUT(120))
{
    FILE *f = fopen(sc_scene, "w");
    cr_assert_not_null(f);
    fputs("local floe = require 'floe'\n"
          "local fail_at = floe.param('fail_at', 0)\n"
          "local sim = floe.sim{ dim = 2, spacing = 0.02, gravity = {0, -9.81}, domain = { min = {-0.1, -0.1}, max = {0.5, 0.5} } }\n"
          "sim:load 'wcsph'\n"
          "sim:fluid_box{ min = {0, 0}, max = {0.1, 0.2} }\n"
          "sim:boundary_box{ min = {0, 0}, max = {0.4, 0.4}, open_top = true }\n"
          "sim:pipeline{ 'neighbours', 'wcsph.density', { 'wcsph.pressure', speed_of_sound = 20 }, 'gravity',\n"
          "              'wcsph.pressure_force', 'integrate' }\n"
          "sim:probe{ name = 'front', kind = 'front', axis = 'x', rate = 500 }\n"
          "sim:probe{ name = 'p', points = { {0.05, 0.05} }, attributes = {'p', 'v'} }\n"
          "sim:on_frame(function(s, st) if st.frame == fail_at then error('stop here') end end)\n"
          "sim:run{ frames = 10, fps = 50, checkpoint_every = 5 }\n",
          f);
    fclose(f);
    const char *whole[] = {"run", sc_scene, "--out", "A", "--quiet", "--threads", "1", NULL};
    const char *broken[] = {"run", sc_scene, "--out", "B", "--quiet", "--threads", "1", "--set", "fail_at=8", NULL};
    const char *resume[] = {"run", sc_scene, "--resume", "B", "--quiet", "--threads", "1", NULL};
    cr_assert_eq(sc_cli(whole), 0);
    cr_assert_eq(sc_cli(broken), 1);
    cr_assert_eq(sc_cli(resume), 0);
    static const char *const tables[] = {"front.probe.csv", "p.probe.csv", "probes.csv"};
    for (int k = 0; k < 3; k++) {
        char *a = sc_slurp("%s/A/%s", sc_tmp, tables[k]), *b = sc_slurp("%s/B/%s", sc_tmp, tables[k]);
        cr_assert(a[0], "no %s", tables[k]);
        cr_assert_str_eq(a, b, "%s differs after the resume", tables[k]);
        free(a);
        free(b);
    }
}

/* the bytes of a (binary) file hold text */
static int file_has(const char *path, const char *text)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f), t = strlen(text);
    fclose(f);
    for (size_t i = 0; i + t <= n; i++)
        if (!memcmp(buf + i, text, t))
            return 1;
    return 0;
}

/* Frames carry the attributes a scene asks for, a module's own too
 * (dfsph_kv, p of dfsph.solve); a name no fluid set has is an error naming
 * it, not a frame without it. */
Test(probes, frames_carry_the_attributes_asked_for)
{
    static const char scene[] =
        SC_HEAD "local sim = floe.sim{ dim = 2, spacing = 0.05, gravity = {0, -9.81}, domain = { min = {-0.5, -0.5}, max = {1, 1} } }\n"
                "sim:load{ 'sph', 'dfsph' }\n"
                "sim:fluid_box{ min = {0, 0}, max = {0.2, 0.2} }\n"
                "sim:boundary_box{ min = {0, 0}, max = {0.4, 0.4}, open_top = true }\n"
                "sim:pipeline{ 'neighbours', 'sph.density', 'gravity', 'dfsph.solve', 'integrate' }\n"
                "sim:run{ frames = 2, attributes = { %s }, formats = { 'ply', 'vtk' } }\n";
    floe_scene_opts o = sc_opts();
    cr_assert_eq(sc_run(&o, scene, "'p', 'v', 'dfsph_kv'"), FLOE_OK, "%s", sc_err);
    char *ply = sc_slurp("%s/fluid.0002.ply", sc_out), *vtk = NULL, vtk_path[400];
    snprintf(vtk_path, sizeof vtk_path, "%s/fluid.0002.vtk", sc_out);
    cr_assert_not_null(strstr(ply, "property float dfsph_kv"), "PLY header lacks dfsph_kv");
    cr_assert_not_null(strstr(ply, "property float v_x"));
    cr_assert(file_has(vtk_path, "SCALARS dfsph_kv float"), "VTK lacks dfsph_kv");
    free(ply);
    free(vtk);
    sc_teardown();
    sc_setup();
    o = sc_opts();
    cr_assert_neq(sc_run(&o, scene, "'p', 'preasure'"), FLOE_OK);
    sc_expect_err("attribute 'preasure' (attributes) is on no fluid set");
    sc_expect_err("scene.lua:7:");
}
