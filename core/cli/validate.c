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
 *       worst relative error */
#include "report.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char help_validate[] =
    "usage: floe validate [--quick] [--out DIR] [--threads N] [--force]\n"
    "run the validation cases (hydrostatic tank, Martin & Moyce dam break) with wcsph, iisph\n"
    "and dfsph; write cases.csv (reference, measured, tolerance, pass/fail) and report.html\n"
    "with a plot per case into DIR (default out/validate); exit 1 when a case fails\n"
    "\n"
    "  --quick   coarser particles and shorter settling: a few minutes on 2 cores\n";

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
    const char *root, *out;
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

static void martin_moyce(runctx *R, const char *m)
{
    char folder[64], solver[64], path[4096];
    snprintf(folder, sizeof folder, "martin_moyce_%s", m);
    snprintf(solver, sizeof solver, "solver=%s", m);
    const char *sets[] = {solver, R->quick ? "resolution=20" : "resolution=40"};
    int rc = run_case(R, "dam_break_2d.lua", folder, sets, 2);
    table Z = {0}, ref = {0};
    snprintf(path, sizeof path, "%s/%s/front.probe.csv", R->out, folder);
    const int ok_z = !rc && table_read(path, &Z) == 0 && Z.nrows > 1;
    snprintf(path, sizeof path, "%s/tests/validation/dambreak2d_martin_moyce_n2eq2_a2.25in_table2_front.csv",
             R->root);
    const int ok_ref = table_read(path, &ref) == 0;
    double worst = ok_z && ok_ref ? 0 : NAN;
    char series[128], sp[4096];
    snprintf(series, sizeof series, "%s_front.csv", folder);
    snprintf(sp, sizeof sp, "%s/%s", R->out, series);
    FILE *s = ok_z && ok_ref ? fopen(sp, "w") : NULL;
    if (s)
        fprintf(s, "T,floe (T - 0.175),reference\n");
    int compared = 0;
    for (int r = 0; ok_z && ok_ref && r < ref.nrows; r++) {
        const double T = at(&ref, r, 0), zr = at(&ref, r, 1);
        if (T < 0.5 || T > 2.5)
            continue;
        const double zs = interp(&Z, 1, T - 0.175);
        if (s)
            fprintf(s, "%.9g,%.9g,%.9g\n", T, zs, zr);
        worst = isnan(zs) ? NAN : fmax(worst, fabs(zs - zr) / zr);
        compared++;
    }
    if (s)
        fclose(s);
    if (compared < 5)
        worst = NAN;
    row(R, "Martin & Moyce front: worst error (T - 0.175)", m, 0.0, worst, 0.10, worst <= 0.10, s ? series : NULL);
    free(Z.v);
    free(ref.v);
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
    for (int k = 0; k < 3; k++)
        hydrostatic(&R, METHODS[k]);
    for (int k = 0; k < 3; k++)
        martin_moyce(&R, METHODS[k]);
    fclose(R.cases);
    if (report_write("validate", "validate", R.out) != 0)
        return 1;
    fprintf(stderr, "floe validate: %d case%s failed; report in %s/report.html\n", R.failed, R.failed == 1 ? "" : "s",
            R.out);
    return R.failed ? 1 : 0;
}
