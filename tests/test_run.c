/* The frame loop: blow-up reports, earlier frames stay valid, interruption,
 * bit-identical reruns, the run record. */
#include "ply_read.h"
#include "sim_fixture.h"

#include <math.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

static char outdir[256];

static void make_outdir(void)
{
    snprintf(outdir, sizeof outdir, "/tmp/floe_test_run_XXXXXX");
    cr_assert_not_null(mkdtemp(outdir));
}

static fixture small_tank(void)
{
    const float d = 0.02f, tank[3] = {0.4f, 0.4f, 0}, water[3] = {0.2f, 0.3f, 0};
    fixture f = fixture_tank(2, d, tank, water, 1);
    fixture_wcsph(&f, 20, "artificial", 0.05, 0);
    return f;
}

static int file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

static char *slurp(const char *path, long *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    *len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)*len + 1);
    cr_assert_eq(fread(b, 1, (size_t)*len, f), (size_t)*len);
    b[*len] = 0;
    fclose(f);
    return b;
}

/* A host stage that writes NaN into one particle's velocity at step 350. */
static int inject_nan(const floe_stage_call *c)
{
    if (floe_ctx_info(c->ctx)->step == 350) {
        floe_set s = floe_set_find(c->ctx, "fluid");
        float *v = floe_attr(c->ctx, s, "v", FLOE_VEC3);
        v[3 * 17 + 1] = NAN;
    }
    return FLOE_OK;
}

Test(run, nan_is_reported_with_particle_step_time_and_stage)
{
    make_outdir();
    fixture f = small_tank();
    cr_assert_eq(floe_pipeline_add_fn(f.ctx, "inject_nan", inject_nan, NULL), FLOE_OK);
    const uint32_t *id = floe_attr(f.ctx, f.fluid, "id", FLOE_U32);
    (void)id;
    floe_run_def r = fixture_run_def(1.0, 100);
    r.dt = 1e-4; /* step 350 is t = 0.035 s: frames 0..3 are written before */
    r.out_dir = outdir;
    int rc = floe_run(f.ctx, &r, NULL);
    const char *msg = floe_ctx_error(f.ctx);
    cr_assert_eq(rc, FLOE_ERR_BLOWUP, "rc %d: %s", rc, msg);
    cr_assert_not_null(strstr(msg, "NaN"), "%s", msg);
    cr_assert_not_null(strstr(msg, "particle id"), "%s", msg);
    cr_assert_not_null(strstr(msg, "step 350"), "%s", msg);
    cr_assert_not_null(strstr(msg, "t = 0.035"), "%s", msg);
    cr_assert_not_null(strstr(msg, "after stage 'inject_nan'"), "%s", msg);
    /* earlier frames are complete and readable */
    for (int k = 0; k <= 3; k++) {
        char p[512];
        snprintf(p, sizeof p, "%s/fluid.%04d.ply", outdir, k);
        uint32_t n = 0;
        float *x = NULL;
        cr_assert_eq(ply_read_property(p, "x", &n, &x), 0, "frame %s unreadable", p);
        cr_assert_eq(n, floe_set_size(f.ctx, f.fluid));
        for (uint32_t i = 0; i < n; i++)
            cr_assert(isfinite(x[i]));
        free(x);
    }
    char p[512];
    snprintf(p, sizeof p, "%s/fluid.0004.ply", outdir);
    cr_assert(!file_exists(p), "no frame after the blow-up");
    snprintf(p, sizeof p, "%s/run.yaml", outdir);
    long len;
    char *rec = slurp(p, &len);
    cr_assert_not_null(strstr(rec, "status: blowup"), "%s", rec);
    cr_assert_not_null(strstr(rec, "NaN"));
    free(rec);
    floe_ctx_destroy(f.ctx);
}

static int escape(const floe_stage_call *c)
{
    if (floe_ctx_info(c->ctx)->step == 5) {
        float *x = floe_attr(c->ctx, floe_set_find(c->ctx, "fluid"), "x", FLOE_VEC3);
        x[3 * 3] = 50.0f;
    }
    return FLOE_OK;
}

Test(run, escaping_particle_is_reported)
{
    fixture f = small_tank();
    cr_assert_eq(floe_ctx_set_outside(f.ctx, FLOE_OUTSIDE_ERROR), FLOE_OK);
    cr_assert_eq(floe_pipeline_add_fn(f.ctx, "escape", escape, NULL), FLOE_OK);
    floe_run_def r = fixture_run_def(0.1, 100);
    int rc = floe_run(f.ctx, &r, NULL);
    cr_assert_eq(rc, FLOE_ERR_BLOWUP);
    cr_assert_not_null(strstr(floe_ctx_error(f.ctx), "left the simulation domain"), "%s", floe_ctx_error(f.ctx));
    cr_assert_not_null(strstr(floe_ctx_error(f.ctx), "index 3"), "%s", floe_ctx_error(f.ctx));
    floe_ctx_destroy(f.ctx);
}

static int stop_at_2(floe_ctx *ctx, const floe_frame_stats *st, void *u)
{
    (void)ctx;
    (void)u;
    if (st->frame == 2)
        floe_request_stop();
    return 0;
}

Test(run, interrupt_stops_after_the_current_frame)
{
    make_outdir();
    fixture f = small_tank();
    floe_run_def r = fixture_run_def(1.0, 50);
    r.out_dir = outdir;
    r.on_frame = stop_at_2;
    cr_assert_eq(floe_run(f.ctx, &r, NULL), FLOE_ERR_INTERRUPT);
    char p[512];
    snprintf(p, sizeof p, "%s/fluid.0002.ply", outdir);
    cr_assert(file_exists(p));
    snprintf(p, sizeof p, "%s/fluid.0003.ply", outdir);
    cr_assert(!file_exists(p));
    snprintf(p, sizeof p, "%s/run.yaml", outdir);
    long len;
    char *rec = slurp(p, &len);
    cr_assert_not_null(strstr(rec, "status: interrupted"), "%s", rec);
    free(rec);
    floe_ctx_destroy(f.ctx);
}

static void run_into(const char *dir, int threads)
{
    fixture f = small_tank();
    floe_ctx_set_threads(f.ctx, threads);
    floe_run_def r = fixture_run_def(0.1, 50);
    r.out_dir = dir;
    cr_assert_eq(floe_run(f.ctx, &r, NULL), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    floe_ctx_destroy(f.ctx);
}

Test(run, same_scene_twice_gives_bit_identical_frames)
{
    for (int threads = 1; threads <= 2; threads++) {
        char a[300], b[300];
        make_outdir();
        snprintf(a, sizeof a, "%s/a", outdir);
        snprintf(b, sizeof b, "%s/b", outdir);
        run_into(a, threads);
        run_into(b, threads);
        for (int k = 0; k <= 5; k++) {
            char pa[400], pb[400];
            snprintf(pa, sizeof pa, "%s/fluid.%04d.ply", a, k);
            snprintf(pb, sizeof pb, "%s/fluid.%04d.ply", b, k);
            long la, lb;
            char *ba = slurp(pa, &la), *bb = slurp(pb, &lb);
            cr_assert_eq(la, lb);
            cr_assert(memcmp(ba, bb, (size_t)la) == 0, "frame %d differs between two runs (%d threads)", k, threads);
            free(ba);
            free(bb);
        }
    }
}

Test(run, record_has_modules_params_and_frames)
{
    make_outdir();
    fixture f = small_tank();
    floe_run_def r = fixture_run_def(0.06, 50);
    r.out_dir = outdir;
    r.scene_path = "tests/test_run.c";
    r.scene_hash = "0123456789abcdef";
    cr_assert_eq(floe_run(f.ctx, &r, NULL), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    char p[512];
    snprintf(p, sizeof p, "%s/run.yaml", outdir);
    long len;
    char *rec = slurp(p, &len);
    const char *want[] = {"status: finished", "wcsph", "speed_of_sound", "0123456789abcdef", "frame: 3",
                          "density_error_avg", "kinetic_energy", "wcsph.pressure_force", "threads: 2"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        cr_assert_not_null(strstr(rec, want[i]), "run.yaml lacks '%s':\n%s", want[i], rec);
    free(rec);
    floe_ctx_destroy(f.ctx);
}

/* Large sets are scanned in parallel: with two bad particles far apart the
 * message still names the first (the smaller index), for NaN and for a
 * particle outside the domain. */
static int two_bad(const floe_stage_call *c)
{
    const int *what = c->user;
    floe_set s = floe_set_find(c->ctx, "fluid");
    if (*what == 0) {
        float *v = floe_attr(c->ctx, s, "v", FLOE_VEC3);
        v[3 * 38000 + 2] = NAN;
        v[3 * 21000 + 1] = INFINITY;
    } else {
        float *x = floe_attr(c->ctx, s, "x", FLOE_VEC3);
        x[3 * 39000] = 50.0f;
        x[3 * 33000 + 1] = -50.0f;
    }
    return FLOE_OK;
}

Test(run, first_bad_particle_of_a_large_set_is_reported)
{
    for (int what = 0; what < 2; what++) {
        const float d = 0.002f, tank[3] = {0.4f, 0.45f, 0}, water[3] = {0.4f, 0.4f, 0};
        fixture f = fixture_tank(2, d, tank, water, 1);
        cr_assert_eq(floe_ctx_set_outside(f.ctx, FLOE_OUTSIDE_ERROR), FLOE_OK);
        cr_assert_geq(floe_set_size(f.ctx, f.fluid), 40000u);
        floe_pipeline_clear(f.ctx);
        cr_assert_eq(floe_pipeline_add_fn(f.ctx, "two_bad", two_bad, &what), FLOE_OK);
        int rc = floe_step(f.ctx, 1e-4);
        const char *msg = floe_ctx_error(f.ctx);
        cr_assert_eq(rc, FLOE_ERR_BLOWUP, "rc %d: %s", rc, msg);
        cr_assert_not_null(strstr(msg, what ? "index 33000" : "index 21000"), "%s", msg);
        cr_assert_not_null(strstr(msg, what ? "left the simulation domain" : "Inf"), "%s", msg);
        floe_ctx_destroy(f.ctx);
    }
}
