/* floe validate [--quick] [--out DIR]: Floe's validation cases with every
 * method that applies, each a scene of the repository run into
 * DIR/<case>_<method>/ and measured through its probes; cases.csv (case,
 * method, reference, measured, tolerance, pass or fail) and report.html with
 * a plot per case (docs/validation.md, "floe validate").
 *
 *   hydrostatic tank 2D (scenes/validation/hydrostatic_2d.lua): the floor's
 *       force over the water's weight, time-averaged (reference 1); the
 *       gauges' mean height against the fill height (within d/2)
 *   Martin & Moyce 1952 dam break (scenes/dam_break_2d.lua): the surge front
 *       Z(T) against Table 2 for T in [0.5, 2.5] with the time origin shifted
 *       by 0.175 (the experiment's gate, tests/validation/README.md): the
 *       worst relative error
 *   Koshizuka & Oka 1996 dam break (the same scene, their 4 L tank, L =
 *       0.146 m): the front against their measured points for T in [0.5,
 *       3.2], the same shift
 *   Poiseuille start-up (scenes/validation/poiseuille_2d.lua, Morris et al.
 *       1997): u_x at seven heights against the series solution at t = 0.2 s
 *       and averaged over the steady state
 *   droplet oscillation (scenes/validation/droplet_2d.lua, full run only):
 *       Rayleigh's mode-2 period grows as R^1.5 */
#include "report.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char help_validate[] =
    "usage: floe validate [--quick] [--only CASES] [--out DIR] [--threads N] [--force]\n"
    "run the validation cases (hydrostatic tank, Martin & Moyce and Koshizuka & Oka dam breaks,\n"
    "Poiseuille start-up) with wcsph, iisph and dfsph, and the droplet oscillation (full run);\n"
    "write cases.csv (reference, measured, tolerance, pass/fail) and report.html with a plot\n"
    "per case into DIR (default out/validate); exit 1 when a case fails\n"
    "\n"
    "  --quick   coarser particles and shorter settling, no droplet: about a minute on 2 cores\n"
    "  --only    a comma-separated list of hydrostatic, martin_moyce, koshizuka_oka, poiseuille,\n"
    "            droplet (the droplet also with --quick when named)\n";

static const char *const METHODS[] = {"wcsph", "iisph", "dfsph"};

/* a numeric CSV table (the probes' and the references'); '#' lines skipped */
typedef struct table {
    int ncols, nrows;
    double *v;
} table;

static int table_read(const char *path, table *t)
{
    memset(t, 0, sizeof *t);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[8192];
    int header = 0, cap = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        if (!header) {
            header = 1;
            t->ncols = 1;
            for (char *c = line; *c; c++)
                t->ncols += *c == ',';
            continue;
        }
        if (t->nrows == cap) {
            cap = cap ? 2 * cap : 256;
            double *nv = realloc(t->v, (size_t)cap * t->ncols * sizeof *nv);
            if (!nv) {
                fclose(f);
                free(t->v);
                return -1;
            }
            t->v = nv;
        }
        char *p = line;
        for (int k = 0; k < t->ncols; k++) {
            char *end;
            t->v[(size_t)t->nrows * t->ncols + k] = strtod(p, &end);
            p = strchr(end, ',');
            p = p ? p + 1 : end;
        }
        t->nrows++;
    }
    fclose(f);
    return header ? 0 : -1;
}

static double at(const table *t, int r, int c) { return t->v[(size_t)r * t->ncols + c]; }

/* column c of t at x (column 0), linear; nan outside */
static double interp(const table *t, int c, double x)
{
    for (int r = 1; r < t->nrows; r++) {
        double x0 = at(t, r - 1, 0), x1 = at(t, r, 0);
        if (x >= x0 && x <= x1 && x1 > x0)
            return at(t, r - 1, c) + (x - x0) / (x1 - x0) * (at(t, r, c) - at(t, r - 1, c));
    }
    return NAN;
}

typedef struct runctx {
    const char *root, *out, *only;
    int threads, quick, force;
    FILE *cases;
    int failed;
} runctx;

static void row(runctx *R, const char *what, const char *method, double ref, double got, double tol, int ok,
                const char *series)
{
    fprintf(R->cases, "%s,%s,%.6g,%.6g,%.6g,%s,%s\n", what, method, ref, got, tol, ok ? "pass" : "fail",
            series ? series : "");
    fprintf(stderr, "floe validate: %-44s %-6s reference %-9.5g measured %-9.5g tolerance %-8.3g %s\n", what, method,
            ref, got, tol, ok ? "pass" : "FAIL");
    R->failed += !ok;
}

/* the case is in --only's list (or there is no list) */
static int wanted(const runctx *R, const char *name)
{
    if (!R->only)
        return 1;
    const size_t n = strlen(name);
    for (const char *p = R->only; *p;) {
        const size_t len = strcspn(p, ",");
        if (len == n && !strncmp(p, name, n))
            return 1;
        p += len + (p[len] == ',');
    }
    return 0;
}

static int run_case(runctx *R, const char *scene, const char *folder, const char *const *sets, int nsets)
{
    char path[4096], dir[4096], err[4096];
    snprintf(path, sizeof path, "%s/scenes/%s", R->root, scene);
    snprintf(dir, sizeof dir, "%s/%s", R->out, folder);
    floe_run_summary sum;
    fprintf(stderr, "floe validate: %s into %s\n", scene, dir);
    int rc = report_run_scene(path, dir, sets, nsets, R->threads, -1, R->force, &sum, err, sizeof err);
    if (rc != FLOE_OK)
        fprintf(stderr, "floe validate: %s (%s) failed: %s\n", scene, folder, err);
    return rc;
}

static void hydrostatic(runctx *R, const char *m)
{
    char folder[64], solver[64], path[4096];
    snprintf(folder, sizeof folder, "hydrostatic_%s", m);
    snprintf(solver, sizeof solver, "solver=%s", m);
    const double d = R->quick ? 0.02 : 0.01;
    const char *quick[] = {solver, "spacing=0.02", "settle=1.5", "measure=1.0"};
    const char *full[] = {solver};
    int rc = R->quick ? run_case(R, "validation/hydrostatic_2d.lua", folder, quick, 4)
                      : run_case(R, "validation/hydrostatic_2d.lua", folder, full, 1);
    table F = {0}, G = {0};
    snprintf(path, sizeof path, "%s/%s/floor.probe.csv", R->out, folder);
    double f = NAN, h = NAN;
    if (!rc && table_read(path, &F) == 0 && F.nrows > 0) {
        f = 0;
        for (int r = 0; r < F.nrows; r++)
            f -= at(&F, r, 2) / F.nrows; /* Fy / weight, pointing down */
        /* the series for the plot: time, floor force / weight, reference */
        char sp[4096];
        snprintf(sp, sizeof sp, "%s/%s_floor.csv", R->out, folder);
        FILE *s = fopen(sp, "w");
        if (s) {
            fprintf(s, "time,floor force / weight,reference\n");
            for (int r = 0; r < F.nrows; r++)
                fprintf(s, "%.9g,%.9g,1\n", at(&F, r, 0), -at(&F, r, 2));
            fclose(s);
        }
    }
    snprintf(path, sizeof path, "%s/%s/gauges.probe.csv", R->out, folder);
    if (!rc && table_read(path, &G) == 0 && G.nrows > 0) {
        h = 0;
        for (int r = 0; r < G.nrows; r++)
            for (int k = 1; k < G.ncols; k++)
                h += at(&G, r, k) / (G.nrows * (G.ncols - 1.0));
    }
    char series[128];
    snprintf(series, sizeof series, "%s_floor.csv", folder);
    row(R, "hydrostatic tank 2D: floor force / weight", m, 1.0, f, 0.03, fabs(f - 1.0) <= 0.03, series);
    row(R, "hydrostatic tank 2D: gauge height (m)", m, 0.3, h, 0.5 * d, fabs(h - 0.3) <= 0.5 * d, NULL);
    free(F.v);
    free(G.v);
}

/* A dam break against a measured front: the worst relative error of Z(T -
 * shift) for T in [T0, T1] (the experiment's gate: tests/validation/README.md) */
typedef struct dam_case {
    const char *name, *folder, *experiment, *a, *reference;
    double T0, T1, shift, tol;
} dam_case;

static const dam_case MARTIN_MOYCE = {"Martin & Moyce front: worst error (T - 0.175)", "martin_moyce", "martin_moyce",
                                      "0.1", "dambreak2d_martin_moyce_n2eq2_a2.25in_table2_front.csv", 0.5, 2.5,
                                      0.175, 0.10};
static const dam_case KOSHIZUKA_OKA = {"Koshizuka & Oka front: worst error (T - 0.175)", "koshizuka_oka",
                                       "koshizuka_oka", "0.146", "dambreak2d_koshizuka_oka_1996_experiment.csv", 0.5,
                                       3.2, 0.175, 0.10};

static void dam_break(runctx *R, const char *m, const dam_case *c)
{
    char folder[64], solver[64], exp[64], a[32], path[4096];
    snprintf(folder, sizeof folder, "%s_%s", c->folder, m);
    snprintf(solver, sizeof solver, "solver=%s", m);
    snprintf(exp, sizeof exp, "experiment=%s", c->experiment);
    snprintf(a, sizeof a, "a=%s", c->a);
    const char *sets[] = {solver, R->quick ? "resolution=20" : "resolution=40", exp, a};
    int rc = run_case(R, "dam_break_2d.lua", folder, sets, 4);
    table Z = {0}, ref = {0};
    snprintf(path, sizeof path, "%s/%s/front.probe.csv", R->out, folder);
    const int ok_z = !rc && table_read(path, &Z) == 0 && Z.nrows > 1;
    snprintf(path, sizeof path, "%s/tests/validation/%s", R->root, c->reference);
    const int ok_ref = table_read(path, &ref) == 0;
    double worst = ok_z && ok_ref ? 0 : NAN;
    char series[128], sp[4096], head[64];
    snprintf(series, sizeof series, "%s_front.csv", folder);
    snprintf(sp, sizeof sp, "%s/%s", R->out, series);
    FILE *s = ok_z && ok_ref ? fopen(sp, "w") : NULL;
    snprintf(head, sizeof head, "floe (T - %g)", c->shift);
    if (s)
        fprintf(s, "T,%s,reference\n", head);
    int compared = 0;
    for (int r = 0; ok_z && ok_ref && r < ref.nrows; r++) {
        const double T = at(&ref, r, 0), zr = at(&ref, r, 1);
        if (T < c->T0 || T > c->T1)
            continue;
        const double zs = interp(&Z, 1, T - c->shift);
        if (s)
            fprintf(s, "%.9g,%.9g,%.9g\n", T, zs, zr);
        worst = isnan(zs) ? NAN : fmax(worst, fabs(zs - zr) / zr);
        compared++;
    }
    if (s)
        fclose(s);
    if (compared < 5)
        worst = NAN;
    row(R, c->name, m, 0.0, worst, c->tol, worst <= c->tol, s ? series : NULL);
    free(Z.v);
    free(ref.v);
}

/* Start-up of plane Poiseuille flow (Morris et al. 1997) between walls at
 * y = -g and y = L + g (scenes/validation/poiseuille_2d.lua: L = 0.1 m,
 * nu = 0.01 m^2/s, F = 0.8 m/s^2, g = 0.05 d), the series solution */
#define PO_L 0.1
#define PO_NU 0.01
#define PO_F 0.8
static double poiseuille_u(double y, double t, double W)
{
    double u = PO_F / (2 * PO_NU) * y * (W - y);
    for (int n = 0; n < 200; n++) {
        const double k = 2 * n + 1;
        u -= 4 * PO_F * W * W / (PO_NU * pow(FLOE_PI, 3) * k * k * k) * sin(k * FLOE_PI * y / W) *
             exp(-k * k * FLOE_PI * FLOE_PI * PO_NU * t / (W * W));
    }
    return u;
}

/* The profile probe's u_x at its seven heights k L / 8 against the series:
 * at t = 0.2 s (start-up) and averaged over t >= 0.6 s (steady: the
 * transient is below 0.3% of u_max there); the worst |u - u_exact| over the
 * heights, relative to the exact centre-line velocity. */
static void poiseuille(runctx *R, const char *m)
{
    char folder[64], solver[64], path[4096];
    snprintf(folder, sizeof folder, "poiseuille_%s", m);
    snprintf(solver, sizeof solver, "solver=%s", m);
    const int rows = R->quick ? 20 : 30;
    const char *sets[] = {solver, R->quick ? "rows=20" : "rows=30"};
    int rc = run_case(R, "validation/poiseuille_2d.lua", folder, sets, 2);
    const double d = PO_L / rows, g = 0.05 * d, W = PO_L + 2 * g;
    table P = {0};
    snprintf(path, sizeof path, "%s/%s/profile.probe.csv", R->out, folder);
    double e_start = NAN, e_steady = NAN, mean[7] = {0};
    int nmean = 0;
    if (!rc && table_read(path, &P) == 0 && P.ncols >= 1 + 7 * 3) {
        for (int r = 0; r < P.nrows; r++) {
            const double t = at(&P, r, 0);
            if (fabs(t - 0.2) < 1e-6) {
                e_start = 0;
                for (int k = 0; k < 7; k++) {
                    const double y = (k + 1) * PO_L / 8 + g; /* from the lower wall */
                    const double u = at(&P, r, 1 + 3 * k); /* v_x_k, v_y_k, ksum_k */
                    e_start = fmax(e_start, fabs(u - poiseuille_u(y, t, W)) / poiseuille_u(W / 2, t, W));
                }
            }
            if (t >= 0.6 - 1e-9) {
                for (int k = 0; k < 7; k++)
                    mean[k] += at(&P, r, 1 + 3 * k);
                nmean++;
            }
        }
        char series[128], sp[4096];
        snprintf(series, sizeof series, "%s_profile.csv", folder);
        snprintf(sp, sizeof sp, "%s/%s", R->out, series);
        FILE *s = nmean ? fopen(sp, "w") : NULL;
        if (s)
            fprintf(s, "y (m),floe u_x (m/s) t >= 0.6 s,reference\n");
        if (nmean)
            e_steady = 0;
        const double uc = poiseuille_u(W / 2, 1e9, W);
        for (int k = 0; k < 7 && nmean; k++) {
            const double y = (k + 1) * PO_L / 8 + g, u = mean[k] / nmean, ue = poiseuille_u(y, 1e9, W);
            e_steady = fmax(e_steady, fabs(u - ue) / uc);
            if (s)
                fprintf(s, "%.9g,%.9g,%.9g\n", y, u, ue);
        }
        if (s)
            fclose(s);
    }
    char series[128];
    snprintf(series, sizeof series, "%s_profile.csv", folder);
    row(R, "Poiseuille start-up t = 0.2 s: worst error / u_centre", m, 0.0, e_start, 0.10, e_start <= 0.10, NULL);
    row(R, "Poiseuille steady (t >= 0.6 s): worst error / u_max", m, 0.0, e_steady, 0.05, e_steady <= 0.05,
        nmean ? series : NULL);
    free(P.v);
}

/* Least-squares fit of D(t) = exp(-lam t) (a cos(w t) + b sin(w t)) + c
 * (tests/test_tension.c's estimator): for each (w, lam) on a grid the
 * linear coefficients solve a 3x3 system; the best w is refined. Returns
 * the residual; *r2 the fraction of the variance the fit explains. */
static double fit_residual(const double *t, const double *D, int n, double w, double lam, double *r2)
{
    double A[3][3] = {{0}}, b[3] = {0};
    for (int k = 0; k < n; k++) {
        const double e = exp(-lam * t[k]), f[3] = {e * cos(w * t[k]), e * sin(w * t[k]), 1};
        for (int i = 0; i < 3; i++) {
            b[i] += f[i] * D[k];
            for (int j = 0; j < 3; j++)
                A[i][j] += f[i] * f[j];
        }
    }
    const double det = A[0][0] * (A[1][1] * A[2][2] - A[1][2] * A[2][1]) -
                       A[0][1] * (A[1][0] * A[2][2] - A[1][2] * A[2][0]) +
                       A[0][2] * (A[1][0] * A[2][1] - A[1][1] * A[2][0]);
    if (!(fabs(det) > 1e-300))
        return INFINITY;
    double x[3];
    for (int c = 0; c < 3; c++) { /* Cramer's rule */
        double M[3][3];
        memcpy(M, A, sizeof M);
        for (int r = 0; r < 3; r++)
            M[r][c] = b[r];
        x[c] = (M[0][0] * (M[1][1] * M[2][2] - M[1][2] * M[2][1]) - M[0][1] * (M[1][0] * M[2][2] - M[1][2] * M[2][0]) +
                M[0][2] * (M[1][0] * M[2][1] - M[1][1] * M[2][0])) / det;
    }
    double res = 0, mean = 0, var = 0;
    for (int k = 0; k < n; k++) {
        const double e = exp(-lam * t[k]);
        const double r = D[k] - (x[0] * e * cos(w * t[k]) + x[1] * e * sin(w * t[k]) + x[2]);
        res += r * r;
        mean += D[k] / n;
    }
    for (int k = 0; k < n; k++)
        var += (D[k] - mean) * (D[k] - mean);
    *r2 = var > 0 ? 1 - res / var : 0;
    return res;
}

/* the period 2 pi / w of the best fit, w in [1, 100] rad/s */
static double fit_period(const double *t, const double *D, int n, double *r2)
{
    static const double lams[] = {0, 0.25, 0.5, 1, 2, 3, 5};
    double best = INFINITY, bw = 0, blam = 0, q;
    for (double w = 1; w <= 100; w += 0.25)
        for (unsigned l = 0; l < sizeof lams / sizeof lams[0]; l++) {
            const double r = fit_residual(t, D, n, w, lams[l], &q);
            if (r < best)
                best = r, bw = w, blam = lams[l];
        }
    for (double w = bw - 0.25; w <= bw + 0.25; w += 0.005) {
        const double r = fit_residual(t, D, n, w, blam, &q);
        if (r < best)
            best = r, bw = w;
    }
    fit_residual(t, D, n, bw, blam, r2);
    return bw > 0 ? 2 * FLOE_PI / bw : NAN;
}

/* One droplet of radius `cells` spacings (scenes/validation/droplet_2d.lua),
 * started from the lattice with the mode-2 velocity: its period from
 * front_x - front_y. Writes the series for the plot. Returns the period
 * (nan on failure). */
static double droplet_run(runctx *R, int cells, double seconds, char *series, size_t slen)
{
    char folder[64], rad[32], osc[32], path[4096];
    snprintf(folder, sizeof folder, "droplet_R%d", cells);
    snprintf(rad, sizeof rad, "radius=%d", cells);
    snprintf(osc, sizeof osc, "oscillate=%g", seconds);
    const char *sets[] = {rad, osc, "settle=0", "measure=0"};
    series[0] = 0;
    if (run_case(R, "validation/droplet_2d.lua", folder, sets, 4))
        return NAN;
    table X = {0}, Y = {0};
    double T = NAN;
    snprintf(path, sizeof path, "%s/%s/front_x.probe.csv", R->out, folder);
    int ok = table_read(path, &X) == 0;
    snprintf(path, sizeof path, "%s/%s/front_y.probe.csv", R->out, folder);
    ok = ok && table_read(path, &Y) == 0 && X.nrows == Y.nrows && X.nrows > 20;
    double *t = ok ? malloc(sizeof(double) * X.nrows) : NULL, *D = ok ? malloc(sizeof(double) * X.nrows) : NULL;
    if (t && D) {
        const int n = X.nrows;
        for (int r = 0; r < n; r++) {
            t[r] = at(&X, r, 0) - at(&X, 0, 0);
            D[r] = at(&X, r, 1) - at(&Y, r, 1);
        }
        double r2 = 0;
        T = fit_period(t, D, n, &r2);
        if (r2 < 0.5) /* not a damped oscillation */
            T = NAN;
        fprintf(stderr, "floe validate: droplet R = %d d: period %.4f s (the fit explains %.0f%% of the variance)\n",
                cells, T, 100 * r2);
        snprintf(series, slen, "%s_deformation.csv", folder);
        snprintf(path, sizeof path, "%s/%s", R->out, series);
        FILE *s = fopen(path, "w");
        if (s) {
            fprintf(s, "t (s),front_x - front_y (m)\n");
            for (int k = 0; k < n; k++)
                fprintf(s, "%.9g,%.9g\n", t[k], D[k]);
            fclose(s);
        } else {
            series[0] = 0;
        }
    }
    free(t);
    free(D);
    free(X.v);
    free(Y.v);
    return T;
}

/* Rayleigh's mode-2 period of a 2D droplet, T = 2 pi sqrt(rho R^3 / (6
 * sigma)), grows as R^1.5 whatever sigma is: droplets of R = 10 d and 20 d
 * (tension.akinci, whose gamma is not sigma) against T(2R) / T(R) = 2^1.5.
 * Full run only (about 3 minutes on 2 cores). */
static void droplet(runctx *R)
{
    char s1[128], s2[128];
    const double T1 = droplet_run(R, 10, 1.6, s1, sizeof s1);
    const double T2 = droplet_run(R, 20, 2.4, s2, sizeof s2);
    const double ratio = T2 / T1 / pow(2.0, 1.5);
    /* the sigma the small droplet's period stands for (docs/validation.md) */
    fprintf(stderr, "floe validate: droplet: sigma from the R = 10 d period %.4f N/m\n",
            4 * FLOE_PI * FLOE_PI * 1000 * pow(0.01, 3) / (6 * T1 * T1));
    row(R, "droplet: period T(2R) / T(R) / 2^1.5 (Rayleigh)", "wcsph", 1.0, ratio, 0.15, fabs(ratio - 1) <= 0.15,
        s1[0] ? s1 : NULL);
}

int floe_cmd_validate(int argc, char **argv)
{
    runctx R = {0};
    R.out = "out/validate";
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(help_validate, stdout);
            return 0;
        } else if (!strcmp(argv[i], "--quick")) {
            R.quick = 1;
        } else if (!strcmp(argv[i], "--force")) {
            R.force = 1;
        } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
            R.only = argv[++i];
            static const char *const names[] = {"hydrostatic", "martin_moyce", "koshizuka_oka", "poiseuille",
                                                "droplet"};
            for (const char *p = R.only; *p;) {
                const size_t len = strcspn(p, ",");
                int known = 0;
                for (size_t k = 0; k < sizeof names / sizeof *names; k++)
                    known |= strlen(names[k]) == len && !strncmp(p, names[k], len);
                if (!known) {
                    fprintf(stderr, "floe validate: --only: unknown case '%.*s' (hydrostatic, martin_moyce, "
                                    "koshizuka_oka, poiseuille, droplet)\n", (int)len, p);
                    return 2;
                }
                p += len + (p[len] == ',');
            }
        } else if (!strcmp(argv[i], "--out") && i + 1 < argc) {
            R.out = argv[++i];
        } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 0 || v > 4096) {
                fprintf(stderr, "floe validate: --threads '%s': expected a whole number >= 0\n", argv[i]);
                return 2;
            }
            R.threads = (int)v;
        } else {
            fprintf(stderr, "floe validate: unknown option '%s'\n%s", argv[i], help_validate);
            return 2;
        }
    }
    R.root = getenv("FLOE_SOURCE_ROOT") ? getenv("FLOE_SOURCE_ROOT") : FLOE_SOURCE_ROOT_DIR;
    char probe_path[4096];
    snprintf(probe_path, sizeof probe_path, "%s/scenes/dam_break_2d.lua", R.root);
    if (access(probe_path, R_OK) != 0) {
        fprintf(stderr, "floe validate: the scenes are not at %s/scenes (set FLOE_SOURCE_ROOT to a Floe clone)\n",
                R.root);
        return 1;
    }
    if (report_dir_ready("validate", R.out, R.force) != 0)
        return 1;
    char path[4096];
    snprintf(path, sizeof path, "%s/cases.csv", R.out);
    R.cases = fopen(path, "w");
    if (!R.cases) {
        fprintf(stderr, "floe validate: cannot write %s: %s\n", path, strerror(errno));
        return 1;
    }
    fprintf(R.cases, "case,method,reference,measured,tolerance,result,series\n");
    for (int k = 0; k < 3 && wanted(&R, "hydrostatic"); k++)
        hydrostatic(&R, METHODS[k]);
    for (int k = 0; k < 3 && wanted(&R, "martin_moyce"); k++)
        dam_break(&R, METHODS[k], &MARTIN_MOYCE);
    for (int k = 0; k < 3 && wanted(&R, "koshizuka_oka"); k++)
        dam_break(&R, METHODS[k], &KOSHIZUKA_OKA);
    for (int k = 0; k < 3 && wanted(&R, "poiseuille"); k++)
        poiseuille(&R, METHODS[k]);
    if ((!R.quick && wanted(&R, "droplet")) || (R.only && wanted(&R, "droplet")))
        droplet(&R);
    fclose(R.cases);
    if (report_write("validate", "validate", R.out) != 0)
        return 1;
    fprintf(stderr, "floe validate: %d case%s failed; report in %s/report.html\n", R.failed, R.failed == 1 ? "" : "s",
            R.out);
    return R.failed ? 1 : 0;
}
