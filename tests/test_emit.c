/* Sources and sinks: sets that grow and shrink during a run, ids kept while
 * a particle lives and never reused, capacity grown geometrically (not per
 * step), the mass balance of inflow, outflow and stored water, frames that
 * stay readable, and sources outside the domain refused. */
#include "scene_fixture.h"
#include "sim_fixture.h"

#include "ctx.h"
#include "emit.h"
#include "heightmap.h"
#include "ply_read.h"

TestSuite(emit, .init = sc_setup, .fini = sc_teardown);

/* 2D: water from a disc (a segment) onto a slope running down to the
 * right, a sink at the end of the slope and at the domain's edge */
static floe_ctx *slope_scene(float d, double rate, floe_set *fluid)
{
    setenv("FLOE_MODULE_PATH", FLOE_TEST_BUILD_ROOT "/modules", 1);
    floe_sim_def def = floe_sim_default_def();
    def.dim = 2;
    def.spacing = d;
    def.threads = 1; /* small sets: one thread is quicker on a loaded machine */
    def.domain_min[0] = 0;
    def.domain_min[1] = 0;
    def.domain_max[0] = 2;
    def.domain_max[1] = 1;
    char err[512];
    floe_ctx *ctx = floe_ctx_create(&def, err, sizeof err);
    cr_assert_not_null(ctx, "%s", err);
    floe_ctx_set_log_level(ctx, FLOE_LOG_WARN);
    float hv[41];
    for (int i = 0; i < 41; i++)
        hv[i] = 0.5f - 0.2f * i * 0.05f;
    cr_assert_eq(hm_terrain_set(ctx, 41, 1, hv, 0.05f, 0, 0), FLOE_OK, "%s", floe_ctx_error(ctx));
    *fluid = floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000);
    emit_source_def src = {.shape = EMIT_DISC, .set = *fluid, .centre = {0.15f, 0.62f, 0}, .dir = {1, -0.2f, 0},
                           .radius = 0.05f, .rate = rate};
    cr_assert_eq(emit_source_add(ctx, &src), 0, "%s", floe_ctx_error(ctx));
    emit_sink_def region = {.min = {1.0f, 0, 0}, .max = {2, 1, 0}}, edge = {.edge = 1};
    cr_assert_eq(emit_sink_add(ctx, &region), FLOE_OK);
    cr_assert_eq(emit_sink_add(ctx, &edge), FLOE_OK);
    cr_assert_eq(floe_module_load(ctx, "wcsph"), FLOE_OK, "%s", floe_ctx_error(ctx));
    cr_assert_eq(floe_module_load(ctx, "sph"), FLOE_OK, "%s", floe_ctx_error(ctx));
    cr_assert_eq(floe_module_load(ctx, "terrain"), FLOE_OK, "%s", floe_ctx_error(ctx));
    floe_pipeline_add(ctx, "neighbours", NULL, 0);
    floe_pipeline_add(ctx, "sph.density", NULL, 0);
    floe_param_kv pk[] = {KV_F("speed_of_sound", 10)};
    floe_pipeline_add(ctx, "wcsph.pressure", pk, 1);
    floe_pipeline_add(ctx, "gravity", NULL, 0);
    floe_param_kv vk[] = {KV_S("kind", "artificial"), KV_F("alpha", 0.05)};
    floe_pipeline_add(ctx, "wcsph.viscosity", vk, 2);
    floe_pipeline_add(ctx, "wcsph.pressure_force", NULL, 0);
    floe_pipeline_add(ctx, "integrate", NULL, 0);
    cr_assert_eq(floe_pipeline_add(ctx, "terrain.collide", NULL, 0), FLOE_OK, "%s", floe_ctx_error(ctx));
    cr_assert_eq(floe_pipeline_add(ctx, "emit", NULL, 0), FLOE_OK, "%s", floe_ctx_error(ctx));
    cr_assert_eq(floe_pipeline_check(ctx, NULL, NULL), FLOE_OK, "%s", floe_ctx_error(ctx));
    return ctx;
}

Test(emit, ids_live_with_their_particle_and_are_never_reused)
{
    floe_set fluid;
    floe_ctx *ctx = slope_scene(0.02f, 0.1, &fluid);
    enum { MAXID = 1 << 20 };
    uint8_t *state = calloc(MAXID, 1); /* 0 never seen, 1 alive, 2 gone */
    pset *p = ctx_set(ctx, fluid);
    int reallocs = 0, shrank = 0;
    uint32_t cap = p->cap, prev_n = 0, max_n = 0;
    const double dt = 0.4 * 0.02 / 10;
    for (int s = 0; s < 1500; s++) {
        cr_assert_eq(floe_step(ctx, dt), FLOE_OK, "step %d: %s", s, floe_ctx_error(ctx));
        const uint32_t n = floe_set_size(ctx, fluid);
        const uint32_t *id = floe_attr(ctx, fluid, "id", FLOE_U32);
        uint8_t *now = calloc(MAXID, 1);
        for (uint32_t i = 0; i < n; i++) {
            cr_assert_lt(id[i], MAXID);
            cr_assert_eq(now[id[i]], 0, "step %d: id %u twice", s, id[i]);
            cr_assert_neq(state[id[i]], 2, "step %d: id %u came back after its particle left", s, id[i]);
            now[id[i]] = 1;
        }
        for (uint32_t k = 0; k < MAXID; k++)
            if (state[k] == 1 && !now[k])
                state[k] = 2;
            else if (now[k])
                state[k] = 1;
        free(now);
        if (p->cap != cap) {
            reallocs++;
            cap = p->cap;
        }
        shrank += n < prev_n;
        prev_n = n;
        max_n = n > max_n ? n : max_n;
    }
    emit_flow f;
    emit_flow_get(ctx, &f);
    cr_log_info("%llu emitted, %llu removed, at most %u alive, capacity changed %d times in 1500 steps",
                (unsigned long long)f.emitted, (unsigned long long)f.removed, max_n, reallocs);
    cr_assert_gt(f.removed, 100, "the sinks should have removed water");
    cr_assert_gt(shrank, 10);
    cr_assert_leq(reallocs, 20, "capacity should grow geometrically, not per step");
    free(state);
    floe_ctx_destroy(ctx);
}

Test(emit, mass_balance_within_one_percent)
{
    floe_set fluid;
    const double rate = 0.1; /* m^2/s: 10 particles a layer at 1 m/s */
    floe_ctx *ctx = slope_scene(0.01f, rate, &fluid);
    const double dt = 0.4 * 0.01 / 10;
    double worst = 0;
    int frames = 0;
    for (int s = 1; s <= 3000; s++) {
        cr_assert_eq(floe_step(ctx, dt), FLOE_OK, "%s", floe_ctx_error(ctx));
        const double t = s * dt;
        if (s % 125 || t < 1.0 - 1e-9) /* a frame every 0.05 s after the first second */
            continue;
        emit_flow f;
        emit_flow_get(ctx, &f);
        const float *m = floe_attr(ctx, fluid, "m", FLOE_F32);
        double stored = 0;
        for (uint32_t i = 0; i < floe_set_size(ctx, fluid); i++)
            stored += m[i];
        const double nominal = 1000 * rate * t; /* rho Q t */
        cr_assert_float_eq(f.mass_in, nominal, 1e-6 * nominal);
        const double err = fabs(f.mass_in - f.mass_out - stored) / f.mass_in;
        worst = fmax(worst, err);
        frames++;
        cr_expect_lt(err, 0.01, "t = %.2f: in %.4f - out %.4f - stored %.4f = %.2f%% of the inflow", t, f.mass_in,
                     f.mass_out, stored, 100 * err);
        if (s == 3000) {
            emit_flow_get(ctx, &f);
            cr_log_info("t = %.2f s: in %.3f kg/m, out %.3f, stored %.3f (worst imbalance %.3f%% over %d frames)", t,
                        f.mass_in, f.mass_out, stored, 100 * worst, frames);
            cr_log_info("the source's speed: %.4f m/s over %u particles a layer", f.speed[0], f.layer[0]);
        }
    }
    emit_flow f;
    emit_flow_get(ctx, &f);
    cr_assert_gt(f.mass_out, 0.2 * f.mass_in, "water should leave through the sink");
    floe_ctx_destroy(ctx);
}

Test(emit, frames_of_a_growing_set_are_valid)
{
    floe_scene_opts o = sc_opts();
    int rc = sc_run(&o, SC_HEAD
                    "local sim = floe.sim{ dim = 2, spacing = 0.02, domain = { min = {0, 0}, max = {1, 1} } }\n"
                    "local id = sim:source{ centre = {0.1, 0.8}, direction = {1, 0}, radius = 0.04, speed = 1 }\n"
                    "sim:sink{ edge = true }\n"
                    "sim:pipeline{ 'neighbours', 'gravity', 'integrate', 'emit' }\n"
                    "sim:on_frame(function(s) if s.time >= 0.2 then s:source_on(id, false) end end)\n"
                    "sim:run{ frames = 8, fps = 20, dt = 0.005, attributes = { 'v', 'id' } }\n"
                    "local f = sim:flow()\n"
                    "floe.log('emitted', f.emitted, 'removed', f.removed)\n");
    cr_assert_eq(rc, FLOE_OK, "%s", sc_err);
    uint32_t prev_max = 0, total = 0;
    for (int fr = 0; fr <= 8; fr++) {
        char path[600];
        snprintf(path, sizeof path, "%s/fluid.%04d.ply", sc_out, fr);
        uint32_t n = 0, n2 = 0;
        float *id = NULL, *x = NULL;
        cr_assert_eq(ply_read_property(path, "id", &n, &id), 0, "%s", path);
        cr_assert_eq(ply_read_property(path, "x", &n2, &x), 0);
        cr_assert_eq(n, n2);
        for (uint32_t i = 0; i < n; i++)
            prev_max = (uint32_t)id[i] > prev_max ? (uint32_t)id[i] : prev_max;
        total += n;
        free(id);
        free(x);
    }
    cr_assert_gt(total, 0);
    /* switched off at 0.2 s: 5 particles a layer, a layer every 0.02 s */
    cr_assert_leq(prev_max, 5 * 11 + 5, "ids up to %u: the source should have stopped", prev_max);
}

Test(emit, a_source_outside_the_domain_is_refused)
{
    floe_scene_opts o = sc_opts();
    int rc = sc_run(&o, SC_HEAD SC_SIM
                    "sim:source{ centre = {0, 0.9, 0}, direction = {1, 0, 0}, radius = 0.2, rate = 0.01 }\n"
                    SC_BOX "sim:run{ frames = 1 }\n");
    cr_assert_neq(rc, FLOE_OK);
    sc_expect_err("scene.lua:3:");
    sc_expect_err("source: its opening reaches outside the domain");
    rc = sc_run(&o, SC_HEAD SC_SIM "sim:source{ centre = {0, 0, 0}, direction = {1, 0, 0}, radius = 0.2 }\n");
    cr_assert_neq(rc, FLOE_OK);
    sc_expect_err("scene.lua:3:");
    sc_expect_err("give either rate");
    rc = sc_run(&o, SC_HEAD SC_SIM "sim:sink{ min = {0, 0, 0} }\n");
    sc_expect_err("scene.lua:3: sim:sink: 'max' is required");
}

/* the three shapes: particles per layer and the speed a rate gives,
 * Q = n d^(dim-1) u, and the volume emitted after a second */
Test(emit, point_disc_and_line_openings)
{
    setenv("FLOE_MODULE_PATH", FLOE_TEST_BUILD_ROOT "/modules", 1);
    floe_sim_def def = floe_sim_default_def();
    def.dim = 3;
    def.spacing = 0.02f;
    def.threads = 1;
    for (int k = 0; k < 3; k++)
        def.domain_min[k] = -1, def.domain_max[k] = 1;
    def.gravity[1] = 0;
    char err[512];
    floe_ctx *ctx = floe_ctx_create(&def, err, sizeof err);
    cr_assert_not_null(ctx, "%s", err);
    floe_ctx_set_log_level(ctx, FLOE_LOG_WARN);
    floe_set fluid = floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000);
    emit_source_def point = {.shape = EMIT_POINT, .set = fluid, .centre = {0, 0, 0}, .dir = {0, 1, 0}, .rate = 8e-6};
    emit_source_def disc = {.shape = EMIT_DISC, .set = fluid, .centre = {0.5f, 0, 0}, .dir = {0, 0, 1}, .radius = 0.05f,
                            .speed = 0.5};
    emit_source_def line = {.shape = EMIT_LINE, .set = fluid, .a = {-0.5f, 0, 0}, .b = {-0.5f, 0.1f, 0},
                            .dir = {1, 0, 0}, .rate = 6 * 4e-4 * 0.25};
    cr_assert_eq(emit_source_add(ctx, &point), 0, "%s", floe_ctx_error(ctx));
    cr_assert_eq(emit_source_add(ctx, &disc), 1, "%s", floe_ctx_error(ctx));
    cr_assert_eq(emit_source_add(ctx, &line), 2, "%s", floe_ctx_error(ctx));
    emit_flow f;
    emit_flow_get(ctx, &f);
    /* a point: one particle a layer, u = Q / d^2 = 8e-6 / 4e-4 */
    cr_expect_eq(f.layer[0], 1);
    cr_expect_float_eq(f.speed[0], 0.02, 1e-9);
    /* a disc of radius 2.5 d: the lattice points within it (5 x 5 minus the corners, or 4 x 4 centred) */
    cr_expect(f.layer[1] >= 16 && f.layer[1] <= 21, "disc: %u particles a layer", f.layer[1]);
    cr_expect_float_eq(f.speed[1], 0.5, 1e-9);
    /* a line 0.1 m long: 6 points d apart, u = Q / (6 d^2) = 0.25 */
    cr_expect_eq(f.layer[2], 6);
    cr_expect_float_eq(f.speed[2], 0.25, 1e-6);
    floe_pipeline_add(ctx, "integrate", NULL, 0);
    cr_assert_eq(floe_pipeline_add(ctx, "emit", NULL, 0), FLOE_OK, "%s", floe_ctx_error(ctx));
    for (int s = 0; s < 1000; s++)
        cr_assert_eq(floe_step(ctx, 1e-3), FLOE_OK, "%s", floe_ctx_error(ctx));
    emit_flow_get(ctx, &f);
    const double v = 8e-6 + f.layer[1] * 4e-4 * 0.5 + 6 * 4e-4 * 0.25; /* m^3 in one second */
    const double emitted = f.emitted * 8e-6;
    cr_log_info("point %u, disc %u, line %u particles a layer; 1 s: %.4g m^3 emitted of %.4g nominal", f.layer[0],
                f.layer[1], f.layer[2], emitted, v);
    cr_assert_float_eq(f.mass_in, 1000 * v, 1e-6 * 1000 * v);
    /* within half a layer of each source */
    cr_assert_leq(fabs(emitted - v), 0.5 * (1 + f.layer[1] + f.layer[2]) * 8e-6 + 1e-12);
    floe_ctx_destroy(ctx);
}

/* A run with a source and a sink stopped after frame 5 and resumed from its
 * checkpoint writes the frames of a run never interrupted, byte for byte:
 * the sources' progress and the flow counters are in the checkpoint. */
#define FLOE(...) sc_cli((const char *const[]){"run", "scene.lua", "--quiet", "--threads", "1", __VA_ARGS__, NULL})

static int same_bytes(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa && fb;
    for (int ca = 0, cb = 0; same && ca != EOF;) {
        ca = fgetc(fa);
        cb = fgetc(fb);
        same = ca == cb;
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return same;
}

Test(emit, a_resumed_run_emits_as_the_uninterrupted_one, .timeout = FLOE_TIMEOUT(600))
{
    FILE *f = fopen(sc_scene, "w");
    cr_assert_not_null(f);
    fputs(SC_HEAD
          "local sim = floe.sim{ dim = 2, spacing = 0.02, domain = { min = {0, 0}, max = {1.5, 1} } }\n"
          "sim:load{ 'wcsph', 'terrain' }\n"
          "sim:terrain{ height = function(x) return 0.4 - 0.2 * x end, cell = 0.05, size = {31, 1} }\n"
          "sim:source{ centre = {0.1, 0.5}, direction = {1, -0.2}, radius = 0.04, speed = 1 }\n"
          "sim:sink{ min = {0.45, 0}, max = {1.5, 1} }\n"
          "sim:pipeline{ 'neighbours', 'wcsph.density', { 'wcsph.pressure', speed_of_sound = 15 }, 'gravity',\n"
          "  { 'wcsph.viscosity', kind = 'artificial', alpha = 0.05, speed_of_sound = 15 }, 'wcsph.pressure_force',\n"
          "  'integrate', 'terrain.collide', 'emit' }\n"
          "sim:on_frame(function(s) local fl = s:flow() floe.log('flow', fl.emitted, fl.removed) end)\n"
          "sim:run{ frames = 10, fps = 20, dt = 5e-4, out = 'o', attributes = { 'v', 'id' },\n"
          "         checkpoint_every = floe.param('ck', 0) }\n",
          f);
    fclose(f);
    cr_assert_eq(FLOE("--out", "full"), 0, "%s", sc_slurp("%s/log", sc_tmp));
    char *full_log = sc_slurp("%s/log", sc_tmp);
    cr_assert_eq(FLOE("--out", "part", "--frames", "5", "--set", "ck=1"), 0, "%s", sc_slurp("%s/log", sc_tmp));
    cr_assert_eq(FLOE("--resume", "part", "--set", "ck=1"), 0, "%s", sc_slurp("%s/log", sc_tmp));
    char *part_log = sc_slurp("%s/log", sc_tmp);
    for (int fr = 0; fr <= 10; fr++) {
        char a[600], b[600];
        snprintf(a, sizeof a, "%s/full/fluid.%04d.ply", sc_tmp, fr);
        snprintf(b, sizeof b, "%s/part/fluid.%04d.ply", sc_tmp, fr);
        cr_expect(sc_exists("%s", a) && same_bytes(a, b), "frame %d differs after the resume", fr);
    }
    /* the last frame's flow line of both runs */
    const char *la = strstr(full_log, "[scene] flow"), *lb = strstr(part_log, "[scene] flow");
    cr_assert(la && lb);
    const char *ea = la, *eb = lb;
    for (const char *p; (p = strstr(ea + 1, "[scene] flow"));)
        ea = p;
    for (const char *p; (p = strstr(eb + 1, "[scene] flow"));)
        eb = p;
    cr_assert_eq(strncmp(ea, eb, strcspn(ea, "\n")), 0, "flow after the resume: %.40s against %.40s", eb, ea);
    cr_log_info("last frame: %.*s (both runs)", (int)strcspn(ea, "\n"), ea);
    free(full_log);
    free(part_log);
}
