/* The terrain: 16-bit PNG height maps and their bad inputs, bilinear
 * heights and normals, terrain.collide (no particle ever ends a step below
 * the surface), the wet map and the terrain mesh written by a scene. */
#include "scene_fixture.h"
#include "sim_fixture.h"

#include "heightmap.h"

#include <floe/terrain.h>
#include <png.h>

#define TERRAIN_DIR FLOE_TEST_SOURCE_ROOT "/scenes/terrain"

/* a small PNG of the given bit depth and colour type in sc_tmp */
static void write_png(const char *path, int depth, int type)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    png_init_io(png, f);
    const int w = 4, h = 3, ch = type == PNG_COLOR_TYPE_RGB ? 3 : 1;
    png_set_IHDR(png, info, w, h, depth, type, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    unsigned char row[4 * 3 * 2];
    for (int y = 0; y < h; y++) {
        for (int k = 0; k < w * ch * depth / 8; k++)
            row[k] = (unsigned char)(y * 40 + k);
        png_write_row(png, row);
    }
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    fclose(f);
}

TestSuite(terrain, .init = sc_setup, .fini = sc_teardown);

Test(terrain, the_jacksboro_height_maps_read_as_metres)
{
    uint16_t *px;
    uint32_t w, h;
    char err[512];
    cr_assert_eq(hm_read_png16(TERRAIN_DIR "/jacksboro_dem_16bit.png", &px, &w, &h, err, sizeof err), 0, "%s", err);
    cr_assert_eq(w, 403);
    cr_assert_eq(h, 344);
    uint16_t lo = 65535, hi = 0;
    for (size_t k = 0; k < (size_t)w * h; k++) {
        lo = px[k] < lo ? px[k] : lo;
        hi = px[k] > hi ? px[k] : hi;
    }
    cr_expect_eq(lo, 236); /* the data's README: 236..1076 m */
    cr_expect_eq(hi, 1076);
    uint16_t *crop;
    cr_assert_eq(hm_read_png16(TERRAIN_DIR "/jacksboro_crop128_16bit.png", &crop, &w, &h, err, sizeof err), 0);
    cr_assert_eq(w, 128);
    /* the crop is rows 100..227, columns 150..277 of the whole */
    for (uint32_t j = 0; j < 128; j += 9)
        for (uint32_t i = 0; i < 128; i += 7)
            cr_assert_eq(crop[j * 128 + i], px[(100 + j) * 403 + 150 + i]);
    free(px);
    free(crop);
}

Test(terrain, bilinear_heights_and_normals)
{
    /* h = 2 + 0.5 x - 0.25 z is reproduced exactly by bilinear samples */
    float hv[5 * 4];
    for (int j = 0; j < 4; j++)
        for (int i = 0; i < 5; i++)
            hv[i + 5 * j] = 2 + 0.5f * (1 + i * 0.5f) - 0.25f * (-1 + j * 0.5f);
    floe_terrain t = {.nx = 5, .nz = 4, .x0 = 1, .z0 = -1, .cell = 0.5f, .inv_cell = 2, .h = hv};
    float gx, gz;
    cr_expect_float_eq(floe_terrain_height(&t, 2.3f, -0.2f, &gx, &gz), 2 + 0.5f * 2.3f + 0.25f * 0.2f, 1e-5);
    cr_expect_float_eq(gx, 0.5f, 1e-5);
    cr_expect_float_eq(gz, -0.25f, 1e-5);
    float n[3];
    floe_terrain_normal(&t, 2.0f, 0.0f, n);
    const float s = 1 / sqrtf(1 + 0.25f + 0.0625f);
    cr_expect_float_eq(n[0], -0.5f * s, 1e-5);
    cr_expect_float_eq(n[1], s, 1e-5);
    cr_expect_float_eq(n[2], 0.25f * s, 1e-5);
    /* outside: the edge continues flat */
    cr_expect_float_eq(floe_terrain_height(&t, -5.0f, -1.0f, &gx, NULL), hv[0], 1e-6);
    cr_expect_float_eq(gx, 0.0f, 0);
    /* a bump: the midpoint of a cell is the mean of its corners */
    hv[1 + 5 * 1] += 1;
    cr_expect_float_eq(floe_terrain_height(&t, 1.75f, -0.25f, NULL, NULL),
                       0.25f * (hv[1 + 5] + hv[2 + 5] + hv[1 + 10] + hv[2 + 10]), 1e-5);
}

/* ---- bad input: clear errors naming the file or the scene line ---------- */

static void expect_terrain_error(const char *terrain_args, const char *msg)
{
    floe_scene_opts o = sc_opts();
    int rc = sc_run(&o, SC_HEAD SC_SIM "sim:terrain{ %s }\n" SC_BOX "sim:run{ frames = 1 }\n", terrain_args);
    cr_expect_neq(rc, FLOE_OK, "sim:terrain{ %s } should fail", terrain_args);
    sc_expect_err("scene.lua:3:");
    sc_expect_err(msg);
}

Test(terrain, a_missing_png_is_named)
{
    expect_terrain_error("file = '/nonexistent/dem.png', cell = 0.1", "/nonexistent/dem.png: cannot open the height map");
}

Test(terrain, an_8_bit_png_is_refused)
{
    char p[400];
    snprintf(p, sizeof p, "%s/grey8.png", sc_tmp);
    write_png(p, 8, PNG_COLOR_TYPE_GRAY);
    char args[600];
    snprintf(args, sizeof args, "file = '%s', cell = 0.1", p);
    expect_terrain_error(args, "grey8.png: a height map must be a 16-bit greyscale PNG; this one is 8-bit greyscale");
}

Test(terrain, a_colour_png_is_refused)
{
    char p[400];
    snprintf(p, sizeof p, "%s/rgb16.png", sc_tmp);
    write_png(p, 16, PNG_COLOR_TYPE_RGB);
    char args[600];
    snprintf(args, sizeof args, "file = '%s', cell = 0.1", p);
    expect_terrain_error(args, "rgb16.png: a height map must be a 16-bit greyscale PNG; this one is 16-bit RGB colour");
}

Test(terrain, a_file_that_is_no_png_is_refused)
{
    char p[400];
    snprintf(p, sizeof p, "%s/dem.png", sc_tmp);
    FILE *f = fopen(p, "w");
    fputs("P5 not a png\n", f);
    fclose(f);
    char args[600];
    snprintf(args, sizeof args, "file = '%s', cell = 0.1", p);
    expect_terrain_error(args, "dem.png: not a PNG file");
}

Test(terrain, a_scale_of_zero_is_refused)
{
    expect_terrain_error("file = '" TERRAIN_DIR "/jacksboro_crop128_16bit.png', cell = 0.01, scale = 0",
                         "'scale' (metres per height unit of");
}

Test(terrain, other_bad_keys)
{
    expect_terrain_error("cell = 0.1", "give either file =");
    expect_terrain_error("height = function(x, z) return 0 end, cell = 0, size = {4, 4}", "'cell'");
    expect_terrain_error("height = function(x, z) return 0 end, cell = 0.1", "needs size = {nx, nz}");
    expect_terrain_error("height = function(x, z) return 'a' end, cell = 0.1, size = {4, 4}", "not a finite number");
    expect_terrain_error("height = function(x, z) return 0 end, cell = 0.1, size = {4, 4}, slope = 1",
                         "unknown key 'slope'");
}

/* ---- collision ----------------------------------------------------------- */

typedef struct pen_check {
    floe_terrain t;
    long checked, below;
    float worst;
} pen_check;

/* every particle's position against the terrain, after every step */
static void check_positions(floe_ctx *ctx, floe_set fluid, pen_check *pc)
{
    const float *x = floe_attr(ctx, fluid, "x", FLOE_VEC3);
    const uint32_t n = floe_set_size(ctx, fluid);
    for (uint32_t i = 0; i < n; i++) {
        float h = floe_terrain_height(&pc->t, x[3 * i], x[3 * i + 2], NULL, NULL);
        if (x[3 * i + 1] < h) {
            pc->below++;
            pc->worst = fmaxf(pc->worst, h - x[3 * i + 1]);
        }
    }
    pc->checked += n;
}

/* water dropped onto a sinusoidal valley, WCSPH + terrain.collide, checked
 * after every step; returns the particle-steps checked */
static long drop_on_valley(int dim, float d, int steps, pen_check *pc, double *wet_mean)
{
    setenv("FLOE_MODULE_PATH", FLOE_TEST_BUILD_ROOT "/modules", 1);
    floe_sim_def def = floe_sim_default_def();
    def.dim = dim;
    def.spacing = d;
    def.threads = 1; /* small sets: one thread is quicker on a loaded machine */
    const float L = 1.0f;
    for (int k = 0; k < 3; k++) {
        def.domain_min[k] = -0.2f;
        def.domain_max[k] = L + 0.2f;
    }
    def.domain_max[1] = 1.5f;
    char err[512];
    floe_ctx *ctx = floe_ctx_create(&def, err, sizeof err);
    cr_assert_not_null(ctx, "%s", err);
    floe_ctx_set_log_level(ctx, FLOE_LOG_WARN);
    /* a V-shaped valley along x with ripples, steep sides (slopes ~1) */
    const int nx = 41, nz = dim == 3 ? 41 : 1;
    const float cell = L / (nx - 1);
    float *hv = malloc(sizeof(float) * nx * nz);
    for (int j = 0; j < nz; j++)
        for (int i = 0; i < nx; i++) {
            float x = i * cell, z = dim == 3 ? j * cell : 0.5f;
            hv[i + nx * j] = 0.1f + 0.6f * fabsf(x - 0.5f) + 0.3f * fabsf(z - 0.5f) + 0.03f * sinf(25 * x + 7 * z);
        }
    cr_assert_eq(hm_terrain_set(ctx, nx, nz, hv, cell, 0, 0), FLOE_OK, "%s", floe_ctx_error(ctx));
    free(hv);
    floe_set fluid = floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000);
    float lo[3] = {0.3f, 0.35f, dim == 3 ? 0.3f : 0}, hi[3] = {0.7f, dim == 3 ? 0.6f : 0.65f, dim == 3 ? 0.6f : 0};
    float v0[3] = {1.5f, -1.0f, 0.5f};
    cr_assert(floe_fill_box(ctx, fluid, lo, hi, v0) > 0);
    cr_assert_eq(floe_module_load(ctx, "wcsph"), FLOE_OK, "%s", floe_ctx_error(ctx));
    cr_assert_eq(floe_module_load(ctx, "sph"), FLOE_OK, "%s", floe_ctx_error(ctx));
    cr_assert_eq(floe_module_load(ctx, "terrain"), FLOE_OK, "%s", floe_ctx_error(ctx));
    floe_pipeline_add(ctx, "neighbours", NULL, 0);
    floe_pipeline_add(ctx, "sph.density", NULL, 0);
    floe_param_kv pk[] = {KV_F("speed_of_sound", 20)};
    floe_pipeline_add(ctx, "wcsph.pressure", pk, 1);
    floe_pipeline_add(ctx, "gravity", NULL, 0);
    floe_param_kv vk[] = {KV_S("kind", "artificial"), KV_F("alpha", 0.05)};
    floe_pipeline_add(ctx, "wcsph.viscosity", vk, 2);
    floe_pipeline_add(ctx, "wcsph.pressure_force", NULL, 0);
    floe_pipeline_add(ctx, "integrate", NULL, 0);
    floe_param_kv ck[] = {KV_F("restitution", 0.3), KV_F("friction", 0.3)};
    cr_assert_eq(floe_pipeline_add(ctx, "terrain.collide", ck, 2), FLOE_OK, "%s", floe_ctx_error(ctx));
    cr_assert_eq(floe_pipeline_check(ctx, NULL, NULL), FLOE_OK, "%s", floe_ctx_error(ctx));
    floe_grid_info gi;
    cr_assert_eq(floe_grid_get_info(ctx, floe_grid_find(ctx, FLOE_TERRAIN_GRID), &gi), FLOE_OK);
    cr_assert_eq(floe_terrain_view(&gi, &pc->t), 0);
    const double dt = 0.4 * d / 20;
    for (int s = 0; s < steps; s++) {
        cr_assert_eq(floe_step(ctx, dt), FLOE_OK, "step %d: %s", s, floe_ctx_error(ctx));
        check_positions(ctx, fluid, pc);
    }
    /* the water ran down into the valley: the lowest ground is wet */
    (void)wet_mean;
    float ymin = 1e9f;
    const float *x = floe_attr(ctx, fluid, "x", FLOE_VEC3);
    for (uint32_t i = 0; i < floe_set_size(ctx, fluid); i++)
        ymin = fminf(ymin, x[3 * i + 1]);
    cr_expect_lt(ymin, 0.3f, "the water should have reached the valley floor (lowest y %g)", ymin);
    floe_ctx_destroy(ctx);
    return pc->checked;
}

Test(terrain, no_particle_ends_below_the_terrain_3d)
{
    pen_check pc = {0};
    long ps = drop_on_valley(3, 0.03f, 1000, &pc, NULL);
    cr_log_info("3D: %ld particle-steps checked, %ld below the terrain (worst %g m)", ps, pc.below, pc.worst);
    cr_assert_gt(ps, 1000000);
    cr_assert_eq(pc.below, 0, "%ld particle positions below the terrain, worst %g m", pc.below, pc.worst);
}

Test(terrain, no_particle_ends_below_the_terrain_2d)
{
    pen_check pc = {0};
    long ps = drop_on_valley(2, 0.01f, 1000, &pc, NULL);
    cr_log_info("2D: %ld particle-steps checked, %ld below", ps, pc.below);
    cr_assert_gt(ps, 1000000);
    cr_assert_eq(pc.below, 0, "%ld particle positions below the terrain, worst %g m", pc.below, pc.worst);
}

/* ---- a scene: terrain mesh, wet map, carpet ----------------------------- */

#include "ply_read.h"

/* a basin: flat floor y = 0 over [0.2, 0.8]^2, walls rising at slope 2 */
#define BASIN "local function basin(x, z) return 2 * math.max(0, math.abs(x - 0.5) - 0.3, math.abs(z - 0.5) - 0.3) end\n"

Test(terrain, carpet_over_a_still_pool_and_dry_ground)
{
    const double d = 0.04, top = 0.32; /* the pool's surface */
    floe_scene_opts o = sc_opts();
    floe_run_summary sum;
    memset(&sum, 0, sizeof sum);
    o.summary = &sum;
    int rc = sc_run(&o, SC_HEAD BASIN
                    "local sim = floe.sim{ dim = 3, spacing = %g, domain = { min = {-0.1, -0.1, -0.1}, max = {1.1, 1.2, 1.1} } }\n"
                    "sim:load 'terrain'\n"
                    "sim:terrain{ height = basin, cell = 0.05, size = {21, 21} }\n"
                    "sim:fluid_box{ min = {0.2, 0, 0.2}, max = {0.8, %g, 0.8} }\n"
                    "sim:pipeline{ 'neighbours', 'gravity', 'integrate', 'terrain.collide', 'terrain.output',\n"
                    "              { 'terrain.carpet', mesh = 2, cell = 0.5 } }\n"
                    "sim:run{ frames = 2, fps = 1000, dt = 1e-4 }\n", d, top);
    cr_assert_eq(rc, FLOE_OK, "%s", sc_err);
    /* the run's summary (floe bench's figures): the per-frame stages ran once
     * per frame, frame 0 included, the others once per step */
    cr_assert_eq(sum.steps, 20);
    for (int i = 0; i < sum.nstages; i++) {
        const int frame_stage = !strcmp(sum.stage_name[i], "terrain.output") || !strcmp(sum.stage_name[i], "terrain.carpet");
        cr_assert_eq(sum.stage_per_frame[i], frame_stage, "stage %s", sum.stage_name[i]);
        cr_assert_eq(sum.stage_calls[i], frame_stage ? 3u : 20u, "stage %s ran %llu times", sum.stage_name[i],
                     (unsigned long long)sum.stage_calls[i]);
    }
    cr_assert_gt(sum.cpu_s, 0);
    const char *dir = sc_out; /* the run writes into the output root */
    cr_assert(sc_exists("%s/terrain.ply", dir), "terrain.ply in %s", dir);
    cr_assert(sc_exists("%s/wet.0000.png", dir) && sc_exists("%s/wet.0002.png", dir));
    cr_assert(sc_exists("%s/carpet.0000.png", dir) && sc_exists("%s/carpet.0002.png", dir));
    char ply[700];
    snprintf(ply, sizeof ply, "%s/carpet.0000.ply", dir);
    uint32_t n, n2;
    float *x, *y, *z, *depth;
    cr_assert_eq(ply_read_property(ply, "x", &n, &x), 0);
    cr_assert_eq(ply_read_property(ply, "y", &n2, &y), 0);
    cr_assert_eq(ply_read_property(ply, "z", &n2, &z), 0);
    cr_assert_eq(ply_read_property(ply, "depth", &n2, &depth), 0);
    cr_assert(n == 50 * 50 || n == 51 * 51, "the whole carpet of cells 0.02 m over 1 m: %u vertices", n);
    /* the terrain the scene sampled, bilinear between samples */
    float hv[21 * 21];
    for (int j = 0; j < 21; j++)
        for (int i = 0; i < 21; i++)
            hv[i + 21 * j] = 2 * fmaxf(0, fmaxf(fabsf(i * 0.05f - 0.5f) - 0.3f, fabsf(j * 0.05f - 0.5f) - 0.3f));
    floe_terrain t = {.nx = 21, .nz = 21, .x0 = 0, .z0 = 0, .cell = 0.05f, .inv_cell = 20, .h = hv};
    int pool = 0, dry = 0;
    float worst_pool = 0, worst_dry = 0;
    for (uint32_t k = 0; k < n; k++) {
        const float h = floe_terrain_height(&t, x[k], z[k], NULL, NULL);
        if (fabsf(x[k] - 0.5f) < 0.26f && fabsf(z[k] - 0.5f) < 0.26f) { /* inside the pool */
            worst_pool = fmaxf(worst_pool, fabsf(y[k] - (float)top));
            pool++;
        } else if (fabsf(x[k] - 0.5f) > 0.36f || fabsf(z[k] - 0.5f) > 0.36f) { /* dry slopes */
            worst_dry = fmaxf(worst_dry, fabsf(y[k] - h));
            cr_expect_eq(depth[k], 0.0f);
            dry++;
        }
    }
    cr_log_info("carpet: %d pool vertices within %g m of the surface (d = %g), %d dry ones within %g m of the "
                "terrain", pool, worst_pool, d, dry, worst_dry);
    cr_assert_gt(pool, 100);
    cr_assert_gt(dry, 100);
    cr_expect_leq(worst_pool, 0.5 * d, "the carpet over the still pool is %g m off its surface", worst_pool);
    cr_expect_leq(worst_dry, 1e-5, "the carpet over dry ground is %g m off the terrain", worst_dry);
    free(x);
    free(y);
    free(z);
    free(depth);
}

/* ---- the river scene at reduced size ------------------------------------ */

#include "emit.h"

/* scenes/river_jacksboro.lua's terrain, source and sink with a coarser
 * spacing, positions checked against the terrain after every step */
Test(terrain, no_particle_ends_below_the_jacksboro_terrain, .timeout = FLOE_TIMEOUT(600))
{
    setenv("FLOE_MODULE_PATH", FLOE_TEST_BUILD_ROOT "/modules", 1);
    const float px = 0.0745f, d = 0.04f;
    floe_sim_def def = floe_sim_default_def();
    def.dim = 3;
    def.spacing = d;
    def.threads = 1;
    const float lo[3] = {0.8f, 0.2f, 5.0f}, hi[3] = {4.2f, 1.3f, 127 * px};
    memcpy(def.domain_min, lo, sizeof lo);
    memcpy(def.domain_max, hi, sizeof hi);
    char err[512];
    floe_ctx *ctx = floe_ctx_create(&def, err, sizeof err);
    cr_assert_not_null(ctx, "%s", err);
    floe_ctx_set_log_level(ctx, FLOE_LOG_WARN);
    uint16_t *raw;
    uint32_t w, h;
    cr_assert_eq(hm_read_png16(TERRAIN_DIR "/jacksboro_crop128_16bit.png", &raw, &w, &h, err, sizeof err), 0, "%s",
                 err);
    float *hv = malloc(sizeof(float) * w * h);
    for (size_t k = 0; k < (size_t)w * h; k++)
        hv[k] = 0.001f * raw[k];
    cr_assert_eq(hm_terrain_set(ctx, w, h, hv, px, 0, 0), FLOE_OK, "%s", floe_ctx_error(ctx));
    free(raw);
    free(hv);
    pen_check pc = {0};
    floe_grid_info gi;
    cr_assert_eq(floe_grid_get_info(ctx, floe_grid_find(ctx, FLOE_TERRAIN_GRID), &gi), FLOE_OK);
    cr_assert_eq(floe_terrain_view(&gi, &pc.t), 0);
    floe_set fluid = floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000);
    const float sx = 27 * px, sz = 85 * px;
    emit_source_def src = {.shape = EMIT_DISC, .set = fluid, .dir = {0, -1, 0.3f}, .radius = 2.5f * d, .rate = 0.05};
    src.centre[0] = sx, src.centre[2] = sz;
    src.centre[1] = floe_terrain_height(&pc.t, sx, sz, NULL, NULL) + 0.08f;
    cr_assert_eq(emit_source_add(ctx, &src), 0, "%s", floe_ctx_error(ctx));
    emit_sink_def edge = {.edge = 1};
    cr_assert_eq(emit_sink_add(ctx, &edge), FLOE_OK);
    cr_assert_eq(floe_module_load(ctx, "wcsph"), FLOE_OK, "%s", floe_ctx_error(ctx));
    cr_assert_eq(floe_module_load(ctx, "sph"), FLOE_OK, "%s", floe_ctx_error(ctx));
    cr_assert_eq(floe_module_load(ctx, "terrain"), FLOE_OK, "%s", floe_ctx_error(ctx));
    floe_pipeline_add(ctx, "neighbours", NULL, 0);
    floe_pipeline_add(ctx, "sph.density", NULL, 0);
    floe_param_kv pk[] = {KV_F("speed_of_sound", 30)};
    floe_pipeline_add(ctx, "wcsph.pressure", pk, 1);
    floe_pipeline_add(ctx, "gravity", NULL, 0);
    floe_param_kv vk[] = {KV_S("kind", "artificial"), KV_F("alpha", 0.05)};
    floe_pipeline_add(ctx, "wcsph.viscosity", vk, 2);
    floe_pipeline_add(ctx, "wcsph.pressure_force", NULL, 0);
    floe_pipeline_add(ctx, "integrate", NULL, 0);
    floe_param_kv ck[] = {KV_F("restitution", 0.1), KV_F("friction", 0.3), KV_F("wet_friction", 0.05),
                          KV_F("freeze_speed", 0.02)};
    cr_assert_eq(floe_pipeline_add(ctx, "terrain.collide", ck, 4), FLOE_OK, "%s", floe_ctx_error(ctx));
    cr_assert_eq(floe_pipeline_add(ctx, "emit", NULL, 0), FLOE_OK, "%s", floe_ctx_error(ctx));
    cr_assert_eq(floe_pipeline_check(ctx, NULL, NULL), FLOE_OK, "%s", floe_ctx_error(ctx));
    const double dt = 0.4 * d / 30;
    int steps = 0;
    while (pc.checked < 1000000 && steps < 20000) {
        cr_assert_eq(floe_step(ctx, dt), FLOE_OK, "step %d: %s", steps, floe_ctx_error(ctx));
        check_positions(ctx, fluid, &pc);
        steps++;
    }
    emit_flow f;
    emit_flow_get(ctx, &f);
    cr_log_info("Jacksboro river at d = %g: %ld particle-steps over %d steps (%.2f s), %u particles now, %llu emitted; "
                "%ld below the terrain", d, pc.checked, steps, steps * dt, floe_set_size(ctx, fluid),
                (unsigned long long)f.emitted, pc.below);
    cr_assert_geq(pc.checked, 1000000);
    cr_assert_eq(pc.below, 0, "%ld particle positions below the terrain, worst %g m", pc.below, pc.worst);
    floe_ctx_destroy(ctx);
}

/* Frozen particles: water at rest on a flat terrain freezes after
 * freeze_steps slow steps (skipped by the collision from then on), and a
 * frozen particle pushed below the surface is still put back: the freeze
 * saves work, never lets a particle through. */
Test(terrain, frozen_particles_are_skipped_but_never_let_through)
{
    setenv("FLOE_MODULE_PATH", FLOE_TEST_BUILD_ROOT "/modules", 1);
    floe_sim_def def = floe_sim_default_def();
    def.dim = 2;
    def.spacing = 0.02f;
    def.threads = 1;
    def.gravity[1] = 0; /* at rest: nothing moves them */
    def.domain_min[0] = 0, def.domain_min[1] = -0.5f;
    def.domain_max[0] = 1, def.domain_max[1] = 1;
    char err[512];
    floe_ctx *ctx = floe_ctx_create(&def, err, sizeof err);
    cr_assert_not_null(ctx, "%s", err);
    float hv[11] = {0};
    cr_assert_eq(hm_terrain_set(ctx, 11, 1, hv, 0.1f, 0, 0), FLOE_OK, "%s", floe_ctx_error(ctx));
    floe_set fluid = floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000);
    const float lo[3] = {0.2f, 0, 0}, hi[3] = {0.4f, 0.04f, 0};
    cr_assert(floe_fill_box(ctx, fluid, lo, hi, NULL) > 0);
    cr_assert_eq(floe_module_load(ctx, "terrain"), FLOE_OK, "%s", floe_ctx_error(ctx));
    floe_pipeline_add(ctx, "integrate", NULL, 0);
    floe_param_kv ck[] = {KV_F("freeze_speed", 0.01), KV_F("freeze_steps", 5)};
    cr_assert_eq(floe_pipeline_add(ctx, "terrain.collide", ck, 2), FLOE_OK, "%s", floe_ctx_error(ctx));
    for (int s = 0; s < 6; s++)
        cr_assert_eq(floe_step(ctx, 1e-3), FLOE_OK, "%s", floe_ctx_error(ctx));
    const uint32_t n = floe_set_size(ctx, fluid);
    const uint32_t *rest = floe_attr(ctx, fluid, "rest", FLOE_U32);
    for (uint32_t i = 0; i < n; i++)
        cr_assert_eq(rest[i], 5, "particle %u: %u slow steps counted, frozen at 5", i, rest[i]);
    /* push one frozen particle below the surface (as if something moved it) */
    float *x = floe_attr(ctx, fluid, "x", FLOE_VEC3);
    x[1] = -0.05f;
    floe_set_moved(ctx, fluid);
    cr_assert_eq(floe_step(ctx, 1e-3), FLOE_OK, "%s", floe_ctx_error(ctx));
    x = floe_attr(ctx, fluid, "x", FLOE_VEC3);
    rest = floe_attr(ctx, fluid, "rest", FLOE_U32);
    cr_assert_geq(x[1], 0.0f, "the frozen particle below the terrain was left there (y = %g)", x[1]);
    cr_assert_float_eq(x[1], 0.01f, 1e-6, "lifted to a particle radius above the surface");
    cr_assert_eq(rest[0], 0, "it thawed");
    cr_assert_eq(rest[1], 5, "the others stay frozen");
    floe_ctx_destroy(ctx);
}
