/* Sources and sinks on the OpenCL backend: a set that grows and shrinks
 * between device stages (WCSPH on the device) keeps its ids, emits what the
 * C path emits and removes what it removes, and ends with the particles
 * the C path ends with; layers go straight into the device copies (grown
 * there when full), and the sinks flag, count and remove particles on the
 * device (the set compacted there, never copied back for it). Skips
 * without an OpenCL device. */
#include "cl_fixture.h"
#include "sim_fixture.h"

#include "ctx.h"
#include "device.h"
#include "emit.h"

#include <stdlib.h>

typedef struct run_out {
    uint32_t n;
    emit_flow flow;
    uint32_t *ids;
    float *x;
} run_out;

/* 2D: a jet from the left wall of a tank into a sink, before it falls onto anything (a flow that
 * is not chaotic, so the two paths stay close) */
static run_out jet(const char *backend, int steps)
{
    setenv("FLOE_MODULE_PATH", FLOE_TEST_BUILD_ROOT "/modules", 1);
    floe_sim_def def = floe_sim_default_def();
    def.dim = 2;
    def.spacing = 0.02f;
    def.threads = 1;
    def.backend = backend;
    def.domain_min[0] = -0.1f, def.domain_min[1] = -0.1f;
    def.domain_max[0] = 1.1f, def.domain_max[1] = 3.0f;
    char err[512];
    floe_ctx *ctx = floe_ctx_create(&def, err, sizeof err);
    cr_assert_not_null(ctx, "%s", err);
    floe_ctx_set_log_level(ctx, FLOE_LOG_WARN);
    floe_set fluid = floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000);
    floe_set bnd = floe_set_create(ctx, "boundary", FLOE_SET_BOUNDARY, 0);
    const float lo[3] = {0, 0, 0}, hi[3] = {1, 1, 0};
    cr_assert(floe_boundary_box(ctx, bnd, lo, hi, 2, FLOE_OPEN_TOP) > 0);
    emit_source_def src = {.shape = EMIT_DISC, .set = fluid, .centre = {0.05f, 0.6f, 0}, .dir = {1, 0, 0},
                           .radius = 0.05f, .speed = 1.5};
    cr_assert_eq(emit_source_add(ctx, &src), 0, "%s", floe_ctx_error(ctx));
    emit_sink_def sink = {.min = {0.3f, 0, 0}, .max = {1, 1, 0}}; /* reached before the jet falls onto anything */
    cr_assert_eq(emit_sink_add(ctx, &sink), FLOE_OK);
    cr_assert_eq(floe_module_load(ctx, "wcsph"), FLOE_OK, "%s", floe_ctx_error(ctx));
    floe_pipeline_add(ctx, "neighbours", NULL, 0);
    floe_pipeline_add(ctx, "wcsph.density", NULL, 0);
    floe_param_kv pk[] = {KV_F("speed_of_sound", 20)};
    floe_pipeline_add(ctx, "wcsph.pressure", pk, 1);
    floe_pipeline_add(ctx, "gravity", NULL, 0);
    floe_param_kv vk[] = {KV_S("kind", "artificial"), KV_F("alpha", 0.05), KV_F("speed_of_sound", 20)};
    floe_pipeline_add(ctx, "wcsph.viscosity", vk, 3);
    floe_pipeline_add(ctx, "wcsph.pressure_force", NULL, 0);
    floe_pipeline_add(ctx, "integrate", NULL, 0);
    cr_assert_eq(floe_pipeline_add(ctx, "emit", NULL, 0), FLOE_OK, "%s", floe_ctx_error(ctx));
    for (int s = 0; s < steps; s++)
        cr_assert_eq(floe_step(ctx, 4e-4), FLOE_OK, "%s step %d: %s", backend, s, floe_ctx_error(ctx));
    run_out r;
    r.n = floe_set_size(ctx, fluid);
    emit_flow_get(ctx, &r.flow);
    const uint32_t *id = floe_attr(ctx, fluid, "id", FLOE_U32);
    const float *x = floe_attr(ctx, fluid, "x", FLOE_VEC3);
    r.ids = malloc(sizeof(uint32_t) * (r.n + 1));
    r.x = malloc(sizeof(float) * 3 * (r.n + 1));
    memcpy(r.ids, id, sizeof(uint32_t) * r.n);
    memcpy(r.x, x, sizeof(float) * 3 * r.n);
    floe_ctx_destroy(ctx);
    return r;
}

Test(emit_cl, a_growing_and_shrinking_set_on_the_device_matches_the_c_path, .timeout = FLOE_TIMEOUT(600))
{
    need_opencl();
    const int steps = 700;
    run_out c = jet("cpu", steps), g = jet("opencl", steps);
    cr_log_info("C path: %u alive, %llu emitted, %llu removed; OpenCL: %u alive, %llu emitted, %llu removed", c.n,
                (unsigned long long)c.flow.emitted, (unsigned long long)c.flow.removed, g.n,
                (unsigned long long)g.flow.emitted, (unsigned long long)g.flow.removed);
    cr_assert_eq(g.flow.emitted, c.flow.emitted, "the sources emit by time alone");
    const uint64_t layers = g.flow.emitted / g.flow.layer[0];
    cr_log_info("layers appended into the device copies: %llu of %llu (%llu of them growing the copies on the "
                "device); steps whose sinks were found empty on the device: %llu",
                (unsigned long long)g.flow.device_appends, (unsigned long long)layers,
                (unsigned long long)g.flow.device_grows, (unsigned long long)g.flow.device_sink_checks);
    /* every layer straight into the device copies, none through a round trip of the set */
    cr_assert_eq(g.flow.device_appends, layers);
    cr_assert_gt(g.flow.device_grows, 0, "the set should have outgrown its device copies at least once");
    cr_log_info("steps whose sinks removed particles: %llu on the device, %llu on the host (C path: %llu); mass "
                "out %.9g kg on the device, %.9g kg on the C path", (unsigned long long)g.flow.device_compactions,
                (unsigned long long)g.flow.host_compactions, (unsigned long long)c.flow.host_compactions,
                g.flow.mass_out, c.flow.mass_out);
    cr_assert_gt(g.flow.device_sink_checks, 0, "the device check of the sinks should have run");
    /* the set is compacted on the device, never copied back for it */
    cr_assert_gt(g.flow.device_compactions, 0, "the sinks should have removed particles on the device");
    cr_assert_eq(g.flow.host_compactions, 0, "no compaction through the host on the device path");
    cr_assert_eq(c.flow.device_compactions, 0);
    /* from the step after the first layer left (half a spacing at 1.5 m/s): every step's sinks on the device */
    const uint64_t before = (uint64_t)ceil(0.5 * 0.02 / (1.5 * 4e-4) - 1e-9);
    cr_assert_eq(g.flow.device_compactions + g.flow.device_sink_checks, steps - before,
                 "every step's sinks checked on the device");
    cr_assert_lt(fabs(g.flow.mass_out - c.flow.mass_out), 1e-6 * c.flow.mass_out, "the same mass removed");
    cr_assert_gt(g.flow.device_appends, 0, "the device path of the sources should have run");
    cr_assert_eq(c.flow.device_appends, 0);
    cr_assert_gt(c.flow.removed, 20, "the sink should have removed water");
    cr_assert_eq(g.flow.removed, c.flow.removed, "the sink removes the same particles");
    cr_assert_eq(g.n, c.n);
    /* ids: unique, below the emitted count; the same particles alive */
    uint8_t *seen = calloc(c.flow.emitted + 1, 1);
    for (uint32_t i = 0; i < g.n; i++) {
        cr_assert_lt(g.ids[i], g.flow.emitted);
        cr_assert_eq(seen[g.ids[i]], 0, "id %u twice on the device path", g.ids[i]);
        seen[g.ids[i]] = 1;
    }
    uint32_t common = 0;
    double worst = 0;
    for (uint32_t i = 0; i < c.n; i++)
        if (seen[c.ids[i]]) {
            common++;
            for (uint32_t j = 0; j < g.n; j++)
                if (g.ids[j] == c.ids[i])
                    worst = fmax(worst, hypot(g.x[3 * j] - c.x[3 * i], g.x[3 * j + 1] - c.x[3 * i + 1]));
        }
    cr_log_info("%u particles alive on both paths, farthest apart %.3g m", common, worst);
    cr_assert_geq(common, c.n - c.n / 50, "the same particles should be alive (%u of %u)", common, c.n);
    /* a free jet of 5 particles across: the float sums' order differs on the
     * device and the thin jet amplifies it (measured 0.037 m after 700 steps) */
    cr_assert_lt(worst, 0.05, "positions by id within 2.5 spacings");
    free(seen);
    free(c.ids), free(c.x), free(g.ids), free(g.x);
}

/* The device compaction (device.h's set_compact, which the sinks use)
 * against the host's (ctx_set_compact): 27,000 particles, every attribute filled with distinct
 * values, a third removed at random; the survivors, in order, with every
 * attribute, the same on both. 27,000 flags scan in seven blocks, two levels. */
Test(emit_cl, the_device_compaction_equals_the_host_compaction, .timeout = FLOE_TIMEOUT(600))
{
    need_opencl();
    setenv("FLOE_MODULE_PATH", FLOE_TEST_BUILD_ROOT "/modules", 1);
    floe_ctx *ctx[2];
    floe_set set[2];
    for (int b = 0; b < 2; b++) {
        floe_sim_def def = floe_sim_default_def();
        def.dim = 3;
        def.spacing = 0.01f;
        def.threads = 1;
        def.backend = b ? "opencl" : "cpu";
        for (int k = 0; k < 3; k++)
            def.domain_min[k] = -0.1f, def.domain_max[k] = 0.5f;
        char err[512];
        ctx[b] = floe_ctx_create(&def, err, sizeof err);
        cr_assert_not_null(ctx[b], "%s", err);
        floe_ctx_set_log_level(ctx[b], FLOE_LOG_WARN);
        set[b] = floe_set_create(ctx[b], "fluid", FLOE_SET_FLUID, 1000);
        const float lo[3] = {0, 0, 0}, hi[3] = {0.3f, 0.3f, 0.3f};
        cr_assert_eq(floe_fill_box(ctx[b], set[b], lo, hi, NULL), 27000);
        floe_attr_add(ctx[b], set[b], "p", FLOE_F32);
        floe_attr_add(ctx[b], set[b], "a", FLOE_VEC3);
    }
    const uint32_t n = floe_set_size(ctx[0], set[0]);
    static const char *const names[] = {"x", "v", "a", "rho", "p", "m", "id"};
    static const floe_type types[] = {FLOE_VEC3, FLOE_VEC3, FLOE_VEC3, FLOE_F32, FLOE_F32, FLOE_F32, FLOE_U32};
    for (int b = 0; b < 2; b++)
        for (int a = 0; a < 6; a++) { /* distinct values: row i, attribute a */
            float *f = floe_attr(ctx[b], set[b], names[a], types[a]);
            cr_assert_not_null(f, "attribute %s", names[a]);
            const int c = types[a] == FLOE_VEC3 ? 3 : 1;
            for (uint32_t i = 0; i < n; i++)
                for (int k = 0; k < c; k++)
                    f[c * i + k] = (float)(a * 1000003 + 3 * i + (uint32_t)k) * 1e-3f;
        }
    uint8_t *keep = malloc(n);
    uint32_t *kw = malloc(n * sizeof *kw), expect = 0;
    srand(7);
    for (uint32_t i = 0; i < n; i++) {
        keep[i] = rand() % 3 != 0;
        kw[i] = keep[i];
        expect += keep[i];
    }
    cr_assert_eq(ctx_set_compact(ctx[0], set[0], keep), FLOE_OK);
    const floe_api *api = floe_core_api();
    /* the set on the device first: a device stage's view (every attribute uploaded) */
    for (int a = 0; a < 7; a++)
        cr_assert_not_null(api->cl_attr(ctx[1], set[1], names[a], types[a], FLOE_READ | FLOE_WRITE));
    void *buf = api->cl_scratch(ctx[1], "test.keep", n * sizeof *kw);
    typedef int32_t (*wr_fn)(void *, void *, uint32_t, size_t, size_t, const void *, uint32_t, const void *, void *);
    void *fw = api->cl_fn("clEnqueueWriteBuffer");
    wr_fn w;
    memcpy(&w, &fw, sizeof w);
    cr_assert(buf && fw);
    cr_assert_eq(w(api->cl_queue(ctx[1]), buf, 1, 0, n * sizeof *kw, kw, 0, NULL, NULL), 0);
    cr_assert_eq(ctx_set_compact_cl(ctx[1], set[1], buf, expect), FLOE_OK, "%s", floe_ctx_error(ctx[1]));
    const uint32_t removed = n - expect;
    cr_assert_eq(floe_set_size(ctx[0], set[0]), expect);
    cr_assert_eq(floe_set_size(ctx[1], set[1]), expect);
    for (int a = 0; a < 7; a++) {
        const int c = types[a] == FLOE_VEC3 ? 3 : 1;
        const void *h = floe_attr(ctx[0], set[0], names[a], types[a]), *d = floe_attr(ctx[1], set[1], names[a], types[a]);
        cr_assert_eq(memcmp(h, d, (size_t)expect * c * 4), 0, "attribute %s differs after the compaction", names[a]);
    }
    cr_log_info("%u particles, %u removed on the device: every attribute of the %u survivors equal to the host's", n,
                removed, expect);
    free(keep), free(kw);
    floe_ctx_destroy(ctx[0]);
    floe_ctx_destroy(ctx[1]);
}
