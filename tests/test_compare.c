/* floe compare (core/cli/compare.c, scripts/floe_report.py): the report of
 * scenes/dam_break_2d.lua with wcsph, iisph and dfsph (coarse: 200
 * particles, 12 frames of each run) holds the numbers of the run records:
 * frames.csv line by line, summary.csv recomputed from the records; the page
 * is well formed and every image it shows exists; bad arguments are errors. */
#include "csv_fixture.h"
#include "scene_fixture.h"

#include <sys/stat.h>

TestSuite(compare, .init = sc_setup, .fini = sc_teardown);


/* "key: value" of a run record's flow mapping line */
static double field(const char *line, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, " %s: ", key);
    const char *p = strstr(line, pat);
    cr_assert_not_null(p, "no %s in %s", key, line);
    return strtod(p + strlen(pat), NULL);
}

static int count(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
        n++;
    return n;
}

static const char *const VARIANTS[] = {"wcsph", "iisph", "dfsph"};

Test(compare, report_holds_the_run_records_numbers, .timeout = FLOE_TIMEOUT(600))
{
    char out[512];
    snprintf(out, sizeof out, "%s/report", sc_tmp);
    const char *args[] = {"compare", FLOE_TEST_SOURCE_ROOT "/scenes/dam_break_2d.lua", "--vary",
                          "solver=wcsph,iisph,dfsph", "--set", "resolution=10", "--frames", "12", "--threads", "1",
                          "--out", out, NULL};
    int rc = sc_cli(args);
    char *log = sc_slurp("%s/log", sc_tmp);
    cr_assert_eq(rc, 0, "floe compare failed:\n%s", log);
    free(log);

    csv_table fr, sm;
    char p[700];
    snprintf(p, sizeof p, "%s/frames.csv", out);
    cr_assert_eq(csv_read(p, &fr), 0);
    snprintf(p, sizeof p, "%s/summary.csv", out);
    cr_assert_eq(csv_read(p, &sm), 0);
    cr_assert_eq(sm.nrows, 3);
    int row = 0;
    static const char *const keys[] = {"time", "steps", "particles", "density_error_avg", "density_error_max",
                                       "kinetic_energy", "potential_energy", "wall_s"};
    for (int v = 0; v < 3; v++) {
        /* the last run of the scene (the release) is run.2.yaml */
        char *rec = sc_slurp("%s/%s/run.2.yaml", out, VARIANTS[v]);
        cr_assert(rec[0], "no run.2.yaml for %s", VARIANTS[v]);
        cr_assert_not_null(strstr(rec, "status: finished"));
        double steps = 0, wall = 0, err_sum = 0, err_max = 0, e0 = 0, e1 = 0, t_first = 0, t_last = 0;
        int nf = 0;
        for (char *line = strstr(rec, "\n- {frame: "); line; line = strstr(line + 1, "\n- {frame: ")) {
            char *end = strchr(line + 1, '\n');
            char buf[8192];
            size_t len = end ? (size_t)(end - line) : strlen(line);
            snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf ? len : sizeof buf - 1), line);
            /* frames.csv's line: the record's values, unchanged */
            cr_assert_lt(row, fr.nrows);
            for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
                const double a = field(buf, keys[k]), b = csv_at(&fr, row, csv_col(&fr, keys[k]));
                cr_assert_eq(a, b, "%s frame %d %s: record %.17g, report %.17g", VARIANTS[v], nf + 1, keys[k], a, b);
            }
            steps += field(buf, "steps");
            wall += field(buf, "wall_s");
            err_sum += field(buf, "density_error_avg");
            err_max = fmax(err_max, field(buf, "density_error_max"));
            const double e = field(buf, "kinetic_energy") + field(buf, "potential_energy");
            if (nf == 0)
                e0 = e, t_first = field(buf, "time");
            e1 = e, t_last = field(buf, "time");
            nf++;
            row++;
        }
        cr_assert_eq(nf, 12, "%s: %d frames in the record", VARIANTS[v], nf);
        const double fps = 200, sim = t_last - (t_first - 1 / fps);
        const struct { const char *col; double want; } S[] = {
            {"frames", nf}, {"steps", steps}, {"wall_s", wall}, {"sim_time_s", sim}, {"wall_per_sim_s", wall / sim},
            {"density_err_avg", err_sum / nf}, {"density_err_max", err_max}, {"energy_first_J", e0},
            {"energy_last_J", e1}, {"energy_drift", (e1 - e0) / fabs(e0)},
        };
        for (size_t k = 0; k < sizeof S / sizeof S[0]; k++) {
            const double got = csv_at(&sm, v, csv_col(&sm, S[k].col));
            cr_assert(fabs(got - S[k].want) <= 1e-12 * fabs(S[k].want), "%s %s: report %.17g, record %.17g",
                      VARIANTS[v], S[k].col, got, S[k].want);
        }
        cr_log_info("%s: %.0f steps, density error %.4f%% mean, %.4f%% max, energy drift %+.3f%%", VARIANTS[v], steps,
                    100 * err_sum / nf, 100 * err_max, 100 * (e1 - e0) / fabs(e0));
        /* its front table, copied unchanged */
        char *a = sc_slurp("%s/%s/front.probe.csv", out, VARIANTS[v]), *b = sc_slurp("%s/%s.front.probe.csv", out, VARIANTS[v]);
        cr_assert(a[0] && !strcmp(a, b), "%s.front.probe.csv differs from %s/front.probe.csv", VARIANTS[v], VARIANTS[v]);
        free(a);
        free(b);
        free(rec);
    }
    cr_assert_eq(row, fr.nrows);
    csv_free(&fr);
    csv_free(&sm);

    /* the front against Martin & Moyce, each method: a line each, errors
     * of a front that moves like the measured one (coarse here: 10
     * particles across the column, 12 frames of 5 ms reach T = 0.84) */
    csv_table re;
    snprintf(p, sizeof p, "%s/reference_errors.csv", out);
    cr_assert_eq(csv_read(p, &re), 0, "no reference_errors.csv");
    cr_assert_eq(re.nrows, 3);
    for (int r = 0; r < 3; r++) {
        const double w = csv_at(&re, r, csv_col(&re, "worst_error")), n = csv_at(&re, r, csv_col(&re, "points"));
        cr_log_info("front against Martin & Moyce: %d points, worst %+.1f%%", (int)n, 100 * w);
        cr_assert(n >= 2 && fabs(w) < 0.3, "%g points, worst error %g", n, w);
    }
    csv_free(&re);

    /* the page: well formed, every image it shows exists */
    char *page = sc_slurp("%s/report.html", out);
    cr_assert(!strncmp(page, "<!DOCTYPE html>", 15));
    cr_assert_not_null(strstr(page, "</html>"));
    static const char *const tags[] = {"table", "tr", "h2", "body", "head"};
    for (size_t k = 0; k < sizeof tags / sizeof tags[0]; k++) {
        char open[16], close[16];
        snprintf(open, sizeof open, "<%s", tags[k]);
        snprintf(close, sizeof close, "</%s>", tags[k]);
        cr_assert_eq(count(page, open), count(page, close), "<%s> opened %d times, closed %d", tags[k],
                     count(page, open), count(page, close));
    }
    int images = 0;
    for (const char *s = page; (s = strstr(s, "<img src=\"")); s++) {
        s += 10;
        char img[256];
        snprintf(img, sizeof img, "%.*s", (int)(strchr(s, '"') - s), s);
        cr_assert(sc_exists("%s/%s", out, img), "report.html shows %s, which is missing", img);
        images++;
    }
    if (!strstr(page, "No plots"))
        cr_assert_geq(images, 6, "%d plots", images); /* density error, energies, cost, stages, the front */
    cr_log_info("report.html: %d plots", images);
    free(page);
}

Test(compare, bad_arguments_are_errors)
{
    char out[512];
    snprintf(out, sizeof out, "%s/report", sc_tmp);
    const char *no_vary[] = {"compare", FLOE_TEST_SOURCE_ROOT "/scenes/dam_break_2d.lua", NULL};
    cr_expect_eq(sc_cli(no_vary), 2);
    const char *bad_vary[] = {"compare", FLOE_TEST_SOURCE_ROOT "/scenes/dam_break_2d.lua", "--vary",
                              "solver=", "--out", out, NULL};
    cr_expect_eq(sc_cli(bad_vary), 2);
    char *log = sc_slurp("%s/log", sc_tmp);
    cr_expect_not_null(strstr(log, "expected KEY=A,B"), "%s", log);
    free(log);
    const char *missing[] = {"compare", "/nonexistent/scene.lua", "--vary", "solver=a,b", NULL};
    cr_expect_eq(sc_cli(missing), 1);
    /* a folder holding other files is refused, even with --force */
    cr_assert_eq(mkdir(out, 0777), 0);
    char note[600];
    snprintf(note, sizeof note, "%s/notes.txt", out);
    FILE *f = fopen(note, "w");
    cr_assert_not_null(f);
    fputs("mine\n", f);
    fclose(f);
    const char *other[] = {"compare", FLOE_TEST_SOURCE_ROOT "/scenes/dam_break_2d.lua", "--vary",
                           "solver=wcsph", "--out", out, "--force", NULL};
    cr_expect_eq(sc_cli(other), 1);
    log = sc_slurp("%s/log", sc_tmp);
    cr_expect_not_null(strstr(log, "not a report"), "%s", log);
    free(log);
    cr_expect(sc_exists("%s", note), "the other file was removed");
}
