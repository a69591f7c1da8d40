/* Ritter's dam break on a dry, flat, frictionless bed: scenes/dam_break_dry_bed.lua
 * (WCSPH on a terrain bed with Kipfer's collision) against the
 * shallow-water solution h(x, t) = (2 sqrt(g h0) - x / t)^2 / (9 g) over the
 * rarefaction, the front tip excluded (-0.8 sqrt(g h0) t <= x <= sqrt(g h0) t),
 * at two times; the front speed is reported against 2 sqrt(g h0). */
#include "scene_fixture.h"

#include "ply_read.h"

#include <math.h>

TestSuite(ritter, .init = sc_setup, .fini = sc_teardown);

static const double g = 9.81, h0 = 0.1, d = 0.005;

/* depth profile by volume (particles in bins of 10 d, d^2 each) of frame fr;
 * returns the worst |h - h_Ritter| / h0 and the front (depth > 5% h0) */
static double compare(int fr, double t, double *front)
{
    char path[600];
    snprintf(path, sizeof path, "%s/fluid.%04d.ply", sc_out, fr); /* --out replaces the scene's folder */
    uint32_t n;
    float *x;
    cr_assert_eq(ply_read_property(path, "x", &n, &x), 0, "%s", path);
    const double bw = 10 * d, lo = -1.0, c0 = sqrt(g * h0);
    enum { NB = 1000 };
    static int bins[NB];
    memset(bins, 0, sizeof bins);
    for (uint32_t i = 0; i < n; i++) {
        int b = (int)floor((x[i] - lo) / bw);
        if (b >= 0 && b < NB)
            bins[b]++;
    }
    free(x);
    *front = -INFINITY;
    for (int b = 0; b < NB; b++)
        if (bins[b] * d * d / bw > 0.05 * h0)
            *front = lo + (b + 1) * bw;
    double worst = 0;
    cr_log_info("t = %.2f s:   x      h_floe   h_Ritter", t);
    for (int b = (int)floor((-0.8 * c0 * t - lo) / bw); lo + (b + 1) * bw <= c0 * t + 1e-9; b++) {
        const double xm = lo + (b + 0.5) * bw, h = bins[b] * d * d / bw;
        const double hr = pow(2 * c0 - xm / t, 2) / (9 * g);
        worst = fmax(worst, fabs(h - hr) / h0);
        if (b % 2 == 0)
            cr_log_info("          %6.3f  %.4f   %.4f", xm, h, hr);
    }
    return worst;
}

Test(ritter, depth_profile_within_ten_percent_at_two_times, .timeout = FLOE_TIMEOUT(600))
{
    floe_scene_opts o = sc_opts();
    o.path = FLOE_TEST_SOURCE_ROOT "/scenes/dam_break_dry_bed.lua";
    const char *sets[] = {"seconds=0.5", "fps=10"};
    o.sets = sets;
    o.nsets = 2;
    int rc = floe_scene_run(&o, sc_err, sizeof sc_err);
    cr_assert_eq(rc, FLOE_OK, "%s", sc_err);
    const double c0 = sqrt(g * h0);
    const double times[2] = {0.4, 0.5};
    for (int k = 0; k < 2; k++) {
        double front;
        double worst = compare((int)lround(times[k] * 10), times[k], &front);
        cr_log_info("t = %.2f s (t sqrt(g/h0) = %.1f): depth within %.1f%% of h0 of Ritter's; front at %.3f m, "
                    "2 sqrt(g h0) t = %.3f m: mean front speed %.2f of 2 sqrt(g h0)",
                    times[k], times[k] * sqrt(g / h0), 100 * worst, front, 2 * c0 * times[k],
                    front / (2 * c0 * times[k]));
        cr_expect_lt(worst, 0.10, "t = %.2f: the depth is %.1f%% of h0 off Ritter's profile", times[k], 100 * worst);
        cr_expect_gt(front, 0.5 * 2 * c0 * times[k], "the front lags far behind 2 sqrt(g h0) t");
    }
}
