/* The domain's outside rule on the OpenCL backend, against the C path:
 * water slides off a floor through the domain's open +x side (2D WCSPH,
 * frames written, the device's checks read in windows of steps). "delete"
 * removes the same particles (the same ids survive, counted and logged the
 * same), "clamp" keeps every particle and puts them where the C path does,
 * "error" stops the run with the same message. The frames written before
 * particles leave stay whole. Skips without an OpenCL device. */
#include "cl_fixture.h"
#include "sim_fixture.h"

#include "ctx.h"
#include "device.h"
#include "ply_read.h"

#include <errno.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

/* the domain ends at x = 0.8; the floor (a tank of open top) reaches 1.0 */
#define DOM_X 0.8f

typedef struct logbuf {
    char text[32768];
    size_t len;
} logbuf;

/* the lines about particles leaving the domain */
static void grab_log(int level, const char *msg, void *user)
{
    (void)level;
    logbuf *b = user;
    if (!strstr(msg, "left the domain"))
        return;
    int k = snprintf(b->text + b->len, sizeof b->text - b->len, "%s\n", msg);
    if (k > 0 && b->len + (size_t)k < sizeof b->text)
        b->len += (size_t)k;
}

typedef struct outcome {
    int rc;
    char err[2048], dir[256];
    uint32_t n0, n;
    uint32_t *ids;
    float *x;
    uint64_t steps;
    logbuf log;
} outcome;

static void add_stage(floe_ctx *ctx, const char *stage, int n, const floe_param_kv *kv)
{
    cr_assert_eq(floe_pipeline_add(ctx, stage, kv, n), FLOE_OK, "%s", floe_ctx_error(ctx));
}

/* frames of `per_frame` fixed steps (a multiple of none of the windows'
 * 8), or adaptive steps; with_c: a C stage (hello.damp) after integrate */
static outcome *slide(const char *backend, int rule, int frames, int per_frame, int adaptive, int with_c)
{
    setenv("FLOE_MODULE_PATH", FLOE_TEST_BUILD_ROOT "/modules", 1);
    outcome *o = calloc(1, sizeof *o);
    cr_assert_not_null(o);
    floe_sim_def def = floe_sim_default_def();
    def.dim = 2;
    def.spacing = 0.02f;
    def.threads = 1;
    def.backend = backend;
    def.outside = rule;
    def.domain_min[0] = -0.1f, def.domain_min[1] = -0.1f;
    def.domain_max[0] = DOM_X, def.domain_max[1] = 1.0f;
    def.log = grab_log;
    def.log_user = &o->log;
    def.log_level = FLOE_LOG_DEBUG;
    char err[512];
    floe_ctx *ctx = floe_ctx_create(&def, err, sizeof err);
    cr_assert_not_null(ctx, "%s", err);
    floe_set fluid = floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000);
    floe_set bnd = floe_set_create(ctx, "boundary", FLOE_SET_BOUNDARY, 0);
    const float tlo[3] = {0, 0, 0}, thi[3] = {1.0f, 0.5f, 0};
    cr_assert(floe_boundary_box(ctx, bnd, tlo, thi, 2, FLOE_OPEN_TOP) > 0);
    const float lo[3] = {0.42f, 0, 0}, hi[3] = {0.74f, 0.16f, 0}, v0[3] = {3.0f, 0, 0};
    cr_assert(floe_fill_box(ctx, fluid, lo, hi, v0) > 0, "%s", floe_ctx_error(ctx));
    o->n0 = floe_set_size(ctx, fluid);
    cr_assert_eq(floe_module_load(ctx, "wcsph"), FLOE_OK, "%s", floe_ctx_error(ctx));
    cr_assert_eq(floe_module_load(ctx, "sph"), FLOE_OK, "%s", floe_ctx_error(ctx));
    add_stage(ctx, "neighbours", 0, NULL);
    add_stage(ctx, "sph.density", 0, NULL);
    floe_param_kv pk[] = {KV_F("speed_of_sound", 20)};
    add_stage(ctx, "wcsph.pressure", 1, pk);
    add_stage(ctx, "gravity", 0, NULL);
    floe_param_kv vk[] = {KV_S("kind", "artificial"), KV_F("alpha", 0.05)};
    add_stage(ctx, "wcsph.viscosity", 2, vk);
    add_stage(ctx, "wcsph.pressure_force", 0, NULL);
    add_stage(ctx, "integrate", 0, NULL);
    if (with_c) { /* right after the stage that moves the particles */
        cr_assert_eq(floe_module_load(ctx, "hello"), FLOE_OK, "%s", floe_ctx_error(ctx));
        floe_param_kv dk[] = {KV_F("rate", 0.01)};
        add_stage(ctx, "hello.damp", 1, dk);
    }
    snprintf(o->dir, sizeof o->dir, "/tmp/floe_test_outside.XXXXXX");
    cr_assert_not_null(mkdtemp(o->dir), "mkdtemp: %s", strerror(errno));
    floe_run_def r = floe_run_default_def();
    r.dt = adaptive ? 0 : 2e-4;
    r.fps = adaptive ? 100 : 1.0 / (per_frame * r.dt);
    r.frames = frames;
    r.progress = 0;
    r.out_dir = o->dir;
    floe_run_summary sum;
    o->rc = floe_run(ctx, &r, &sum);
    o->steps = floe_ctx_info(ctx)->step;
    snprintf(o->err, sizeof o->err, "%s", o->rc ? floe_ctx_error(ctx) : "");
    o->n = floe_set_size(ctx, fluid);
    const uint32_t *id = floe_attr(ctx, fluid, "id", FLOE_U32);
    const float *x = floe_attr(ctx, fluid, "x", FLOE_VEC3);
    o->ids = malloc(sizeof(uint32_t) * (o->n + 1));
    o->x = malloc(sizeof(float) * 3 * (o->n + 1));
    memcpy(o->ids, id, sizeof(uint32_t) * o->n);
    memcpy(o->x, x, sizeof(float) * 3 * o->n);
    floe_ctx_destroy(ctx);
    return o;
}

static void done(outcome *o)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", o->dir);
    cr_expect_eq(system(cmd), 0);
    free(o->ids);
    free(o->x);
    free(o);
}

/* index of id in o, or -1 */
static long find_id(const outcome *o, uint32_t id)
{
    for (uint32_t j = 0; j < o->n; j++)
        if (o->ids[j] == id)
            return j;
    return -1;
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot read %s", path);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* The frame k of a run: its particle count, all finite and inside x <= bound */
static uint32_t frame_count(const outcome *o, int k)
{
    char path[400];
    snprintf(path, sizeof path, "%s/fluid.%04d.ply", o->dir, k);
    uint32_t n = 0;
    float *x = NULL;
    cr_assert_eq(ply_read_property(path, "x", &n, &x), 0, "%s does not read back", path);
    for (uint32_t i = 0; i < n; i++)
        cr_assert(isfinite(x[i]), "%s: x[%u] = %g", path, i, x[i]);
    free(x);
    return n;
}

static void same_deletions(int frames, int per_frame, int adaptive, int with_c)
{
    need_opencl();
    outcome *c = slide("cpu", FLOE_OUTSIDE_DELETE, frames, per_frame, adaptive, with_c);
    outcome *g = slide("opencl", FLOE_OUTSIDE_DELETE, frames, per_frame, adaptive, with_c);
    cr_assert_eq(c->rc, FLOE_OK, "%s", c->err);
    cr_assert_eq(g->rc, FLOE_OK, "%s", g->err);
    cr_log_info("%u particles; C path %u left after %llu steps, OpenCL %u after %llu", c->n0, c->n,
                (unsigned long long)c->steps, g->n, (unsigned long long)g->steps);
    cr_assert_eq(c->steps, g->steps);
    cr_assert_lt(c->n, c->n0 - 10, "the scene should lose water through the open side");
    cr_assert_gt(c->n, c->n0 / 4, "and keep some");
    cr_assert_eq(g->n, c->n, "the same count survives");
    for (uint32_t i = 0; i < c->n; i++)
        cr_assert_geq(find_id(g, c->ids[i]), 0, "id %u survives on the C path, not on the device", c->ids[i]);
    /* ids are never reused: unique, below the initial count */
    for (uint32_t i = 0; i < g->n; i++) {
        cr_assert_lt(g->ids[i], g->n0);
        for (uint32_t j = i + 1; j < g->n; j++)
            cr_assert_neq(g->ids[i], g->ids[j]);
    }
    /* the same steps, counts and lowest ids in the log, and the same count
     * in the run record */
    cr_log_info("C path:\n%s", c->log.text);
    cr_assert_gt(c->log.len, 0);
    cr_assert_str_eq(g->log.text, c->log.text);
    char want[96];
    snprintf(want, sizeof want, "outside: {rule: delete, deleted: %u}", c->n0 - c->n);
    char path[400];
    snprintf(path, sizeof path, "%s/run.yaml", c->dir);
    cr_assert_not_null(strstr(read_text(path), want), "%s", want);
    snprintf(path, sizeof path, "%s/run.yaml", g->dir);
    const char *rec = read_text(path);
    cr_assert_not_null(strstr(rec, want), "%s not in:\n%s", want, rec);
    cr_assert_not_null(strstr(rec, "status: finished"));
    /* frames: frame 0 and 1 (before anything left) whole, later ones the survivors */
    for (int k = 0; k <= frames; k++) {
        uint32_t nc = frame_count(c, k), ng = frame_count(g, k);
        cr_assert_eq(ng, nc, "frame %d: %u particles on the device, %u on the C path", k, ng, nc);
        if (k <= 1)
            cr_assert_eq(ng, c->n0, "frame %d was written before any particle left", k);
    }
    cr_assert_eq(frame_count(g, frames), g->n);
    done(c);
    done(g);
}

/* fixed steps: the next step's neighbour build and the stages on its
 * speculative lists go ahead, and run again once the particles are removed */
Test(outside_cl, delete_removes_the_particles_the_c_path_removes, .timeout = FLOE_TIMEOUT(600)) { same_deletions(6, 50, 0, 0); }
/* adaptive steps: removed before the next step's largest speed */
Test(outside_cl, delete_with_adaptive_steps, .timeout = FLOE_TIMEOUT(600)) { same_deletions(6, 0, 1, 0); }
/* a C stage in the step: removed before it sees the set */
Test(outside_cl, delete_before_a_c_stage, .timeout = FLOE_TIMEOUT(600)) { same_deletions(4, 50, 0, 1); }

/* the count of the run record's "outside: {rule: clamp, clamped: N}" */
static long count_in(const outcome *o)
{
    char path[400];
    snprintf(path, sizeof path, "%s/run.yaml", o->dir);
    const char *at = strstr(read_text(path), "outside: {rule: clamp, clamped: ");
    cr_assert_not_null(at, "no outside count in %s", path);
    return atol(at + strlen("outside: {rule: clamp, clamped: "));
}

Test(outside_cl, clamp_puts_the_particles_where_the_c_path_does, .timeout = FLOE_TIMEOUT(600))
{
    need_opencl();
    outcome *c = slide("cpu", FLOE_OUTSIDE_CLAMP, 6, 50, 0, 0);
    outcome *g = slide("opencl", FLOE_OUTSIDE_CLAMP, 6, 50, 0, 0);
    cr_assert_eq(c->rc, FLOE_OK, "%s", c->err);
    cr_assert_eq(g->rc, FLOE_OK, "%s", g->err);
    cr_assert_eq(c->n, c->n0, "clamp keeps every particle");
    cr_assert_eq(g->n, g->n0);
    uint32_t on_face = 0;
    double worst = 0;
    for (uint32_t i = 0; i < c->n; i++) {
        long j = find_id(g, c->ids[i]);
        cr_assert_geq(j, 0);
        cr_assert_leq(g->x[3 * j], DOM_X, "id %u outside on the device", g->ids[j]);
        on_face += c->x[3 * i] == DOM_X;
        worst = fmax(worst, hypot(g->x[3 * j] - c->x[3 * i], g->x[3 * j + 1] - c->x[3 * i + 1]));
    }
    cr_log_info("%u of %u particles on the face x = %g (C path); farthest apart by id %.3g m", on_face, c->n,
                (double)DOM_X, worst);
    cr_assert_gt(on_face, 10, "the scene should push water against the open side");
    cr_assert_lt(worst, 1e-4, "positions by id within 1/200 of a spacing");
    /* the first particle out: the same step, count and id; then particles
     * pressed against the face cross it again in some steps, which float
     * differences decide: the counts (one per particle and step) agree
     * within 2% */
    const char *c1 = strchr(c->log.text, '\n'), *g1 = strchr(g->log.text, '\n');
    cr_assert(c1 && g1);
    cr_assert_eq(c1 - c->log.text, g1 - g->log.text);
    cr_assert_eq(strncmp(c->log.text, g->log.text, (size_t)(c1 - c->log.text)), 0, "%s\nvs\n%s", c->log.text,
                 g->log.text);
    long cc = count_in(c), gc = count_in(g);
    cr_log_info("clamped (particle-steps): %ld on the C path, %ld on the device", cc, gc);
    cr_assert_gt(cc, 100);
    cr_assert_lt(labs(gc - cc), cc / 50 + 1);
    done(c);
    done(g);
}

Test(outside_cl, error_stops_the_run_with_the_c_path_message, .timeout = FLOE_TIMEOUT(600))
{
    need_opencl();
    outcome *c = slide("cpu", FLOE_OUTSIDE_ERROR, 6, 50, 0, 0);
    outcome *g = slide("opencl", FLOE_OUTSIDE_ERROR, 6, 50, 0, 0);
    cr_assert_eq(c->rc, FLOE_ERR_BLOWUP, "%s", c->err);
    cr_assert_eq(g->rc, FLOE_ERR_BLOWUP, "%s", g->err);
    cr_log_info("cpu:    %s", c->err);
    cr_log_info("opencl: %s", g->err);
    cr_assert_not_null(strstr(c->err, "left the simulation domain"));
    cr_assert_str_eq(g->err, c->err);
    /* the frames before stay whole; the record says why it stopped */
    cr_assert_eq(frame_count(g, 1), g->n0);
    char path[400];
    snprintf(path, sizeof path, "%s/run.yaml", g->dir);
    cr_assert_not_null(strstr(read_text(path), "status: blowup"));
    done(c);
    done(g);
}

/* ---- the core's compaction on the device, which the outside rule uses ----- */

/* a 2D block after a few steps of gravity, on one backend */
static floe_ctx *block(const char *backend, floe_set *fluid)
{
    setenv("FLOE_MODULE_PATH", FLOE_TEST_BUILD_ROOT "/modules", 1);
    floe_sim_def def = floe_sim_default_def();
    def.dim = 2;
    def.spacing = 0.02f;
    def.threads = 1;
    def.backend = backend;
    def.domain_min[0] = -1, def.domain_min[1] = -1;
    def.domain_max[0] = 1, def.domain_max[1] = 1;
    def.log_level = FLOE_LOG_WARN;
    char err[512];
    floe_ctx *ctx = floe_ctx_create(&def, err, sizeof err);
    cr_assert_not_null(ctx, "%s", err);
    *fluid = floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000);
    const float lo[3] = {0, 0, 0}, hi[3] = {0.3f, 0.2f, 0}, v0[3] = {0.5f, 0.25f, 0};
    cr_assert(floe_fill_box(ctx, *fluid, lo, hi, v0) > 100);
    add_stage(ctx, "gravity", 0, NULL);
    add_stage(ctx, "integrate", 0, NULL);
    for (int s = 0; s < 3; s++)
        cr_assert_eq(floe_step(ctx, 1e-3), FLOE_OK, "%s", floe_ctx_error(ctx));
    return ctx;
}

typedef int32_t (*write_fn)(void *, void *, uint32_t, size_t, size_t, const void *, uint32_t, const void *, void *);

/* keep[i] by a rule of the index: every third removed; all; none */
static int keeps(int rule, uint32_t i) { return rule == 0 ? i % 3 != 1 : rule == 1; }

Test(outside_cl, compact_on_the_device_matches_the_host_compaction, .timeout = FLOE_TIMEOUT(300))
{
    need_opencl();
    const floe_api *api = floe_core_api();
    for (int rule = 0; rule < 3; rule++) {
        floe_set fc, fg;
        floe_ctx *c = block("cpu", &fc), *g = block("opencl", &fg);
        const uint32_t n = floe_set_size(c, fc);
        cr_assert_eq(floe_set_size(g, fg), n);
        uint8_t *k8 = malloc(n);
        uint32_t *k32 = malloc(4 * (size_t)n), expect = 0;
        for (uint32_t i = 0; i < n; i++) {
            k8[i] = (uint8_t)keeps(rule, i);
            k32[i] = (uint32_t)keeps(rule, i);
            expect += (uint32_t)keeps(rule, i);
        }
        cr_assert_eq(ctx_set_compact(c, fc, k8), FLOE_OK, "%s", floe_ctx_error(c));
        /* the caller's keep buffer on the device: a scratch buffer, written here */
        void *buf = api->cl_scratch(g, "test.keep", 4 * (size_t)n), *fw = api->cl_fn("clEnqueueWriteBuffer");
        cr_assert(buf && fw);
        write_fn w;
        memcpy(&w, &fw, sizeof w);
        cr_assert_eq(w(api->cl_queue(g), buf, 1, 0, 4 * (size_t)n, k32, 0, NULL, NULL), 0);
        cr_assert_eq(ctx_set_compact_cl(g, fg, buf, expect), FLOE_OK, "%s", floe_ctx_error(g));
        cr_assert_eq(floe_set_size(g, fg), expect);
        /* the set goes on: a step more on both, then the same particles in
         * the same order at the same places */
        cr_assert_eq(floe_step(c, 1e-3), FLOE_OK, "%s", floe_ctx_error(c));
        cr_assert_eq(floe_step(g, 1e-3), FLOE_OK, "%s", floe_ctx_error(g));
        const uint32_t *ic = floe_attr(c, fc, "id", FLOE_U32), *ig = floe_attr(g, fg, "id", FLOE_U32);
        const float *xc = floe_attr(c, fc, "x", FLOE_VEC3), *xg = floe_attr(g, fg, "x", FLOE_VEC3);
        for (uint32_t i = 0; i < expect; i++) {
            cr_assert_eq(ig[i], ic[i], "rule %d, index %u: id %u on the device, %u on the host", rule, i, ig[i],
                         ic[i]);
            cr_assert_float_eq(xg[3 * i], xc[3 * i], 1e-6);
            cr_assert_float_eq(xg[3 * i + 1], xc[3 * i + 1], 1e-6);
        }
        free(k8);
        free(k32);
        floe_ctx_destroy(c);
        floe_ctx_destroy(g);
    }
}
