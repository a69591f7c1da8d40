/* floe validate --quick (core/cli/validate.c): every case passes, cases.csv
 * holds reference, measured, tolerance and result for each, the page is well
 * formed and every image it shows exists. About a minute on 2 cores. */
#include "csv_fixture.h"
#include "scene_fixture.h"

TestSuite(validate, .init = sc_setup, .fini = sc_teardown);

static int count(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
        n++;
    return n;
}

Test(validate, quick_passes_and_its_report_is_whole, .timeout = FLOE_TIMEOUT(900))
{
    char out[512];
    snprintf(out, sizeof out, "%s/validate", sc_tmp);
    const char *args[] = {"validate", "--quick", "--threads", "2", "--out", out, NULL};
    int rc = sc_cli(args);
    char *log = sc_slurp("%s/log", sc_tmp);
    cr_assert_eq(rc, 0, "floe validate --quick failed:\n%s", log);
    free(log);

    char p[700];
    snprintf(p, sizeof p, "%s/cases.csv", out);
    csv_table t;
    cr_assert_eq(csv_read(p, &t), 0);
    /* per method (3): 2 hydrostatic checks, the Martin & Moyce and the
     * Koshizuka & Oka fronts, the Poiseuille start-up and steady profile */
    cr_assert_eq(t.nrows, 18, "%d cases", t.nrows);
    const int ref = csv_col(&t, "reference"), got = csv_col(&t, "measured"), tol = csv_col(&t, "tolerance");
    cr_assert(ref >= 0 && got >= 0 && tol >= 0);
    for (int r = 0; r < t.nrows; r++) {
        const double e = fabs(csv_at(&t, r, got) - csv_at(&t, r, ref));
        cr_assert(e <= csv_at(&t, r, tol), "case %d: |%g - %g| > %g", r, csv_at(&t, r, got), csv_at(&t, r, ref),
                  csv_at(&t, r, tol));
    }
    csv_free(&t);
    char *cases = sc_slurp("%s/cases.csv", out);
    cr_assert_eq(count(cases, ",pass,"), 18, "%s", cases);
    free(cases);

    char *page = sc_slurp("%s/report.html", out);
    cr_assert(!strncmp(page, "<!DOCTYPE html>", 15));
    cr_assert_not_null(strstr(page, "</html>"));
    static const char *const tags[] = {"table", "tr", "td", "th", "h2", "body", "head"};
    for (size_t k = 0; k < sizeof tags / sizeof tags[0]; k++) {
        char open[16], close[16];
        snprintf(open, sizeof open, "<%s>", tags[k]);
        snprintf(close, sizeof close, "</%s>", tags[k]);
        const int o = count(page, open) + (strcmp(tags[k], "td") ? 0 : count(page, "<td class="));
        cr_assert_eq(o, count(page, close), "<%s> opened %d times, closed %d", tags[k], o, count(page, close));
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
        cr_assert_eq(images, 12, "%d plots", images); /* floor force, two fronts, profile; 3 methods */
    free(page);
}
