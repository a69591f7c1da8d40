/* The terrain module on the OpenCL device against the C path: the carpet's
 * z-image construction against the quadtree (the same heights, a max of the
 * same floats; the flow within float summation order), and the collision
 * kernel against collide.c (positions, velocities and the wet map). Skips
 * without an OpenCL device. */
#include "cl_fixture.h"
#include "scene_fixture.h"

#include "ply_read.h"

TestSuite(terrain_cl, .init = sc_setup, .fini = sc_teardown);

static void carpet(const char *backend, float **y, float **depth, float **fx, uint32_t *n)
{
    floe_scene_opts o = sc_opts();
    char out[400];
    snprintf(out, sizeof out, "%s/%s", sc_tmp, backend);
    o.out_dir = out;
    int rc = sc_run(&o, SC_HEAD
                    "local sim = floe.sim{ dim = 3, spacing = 0.03, backend = '%s',\n"
                    "                      domain = { min = {-0.1, -0.5, -0.1}, max = {1.1, 1.2, 1.1} } }\n"
                    "sim:load 'terrain'\n"
                    "sim:terrain{ height = function(x, z) return 0.2 * math.sin(4 * x) * math.cos(3 * z) end,\n"
                    "             cell = 0.05, size = {21, 21} }\n"
                    "sim:fluid_sphere{ centre = {0.5, 0.5, 0.5}, radius = 0.25, velocity = {0.4, -0.2, 0.3} }\n"
                    "sim:fluid_box{ min = {0.05, 0.3, 0.6}, max = {0.4, 0.45, 0.95}, velocity = {-0.3, 0, 0.1}, set = 'b' }\n"
                    "sim:pipeline{ 'neighbours', 'gravity', 'integrate', 'terrain.collide',\n"
                    "              { 'terrain.carpet', mesh = 2, radius = 1.3 } }\n"
                    "sim:run{ frames = 1, fps = 20, dt = 0.0025 }\n", backend);
    cr_assert_eq(rc, FLOE_OK, "%s: %s", backend, sc_err);
    char ply[600];
    snprintf(ply, sizeof ply, "%s/carpet.0001.ply", out);
    uint32_t m;
    cr_assert_eq(ply_read_property(ply, "y", n, y), 0, "%s", ply);
    cr_assert_eq(ply_read_property(ply, "depth", &m, depth), 0);
    cr_assert_eq(ply_read_property(ply, "flow_x", &m, fx), 0);
}

Test(terrain_cl, the_z_image_gives_the_quadtree_carpet, .timeout = FLOE_TIMEOUT(600))
{
    need_opencl();
    float *yc, *dc, *fc, *yg, *dg, *fg;
    uint32_t nc, ng;
    carpet("cpu", &yc, &dc, &fc, &nc);
    carpet("opencl", &yg, &dg, &fg, &ng);
    cr_assert_eq(nc, ng);
    uint32_t wet = 0, hdiff = 0;
    float worst_flow = 0;
    for (uint32_t k = 0; k < nc; k++) {
        wet += dc[k] > 0;
        hdiff += yc[k] != yg[k];
        worst_flow = fmaxf(worst_flow, fabsf(fc[k] - fg[k]));
    }
    cr_log_info("%u vertices, %u wet; heights differing: %u; flow_x within %g m/s", nc, wet, hdiff, worst_flow);
    cr_assert_gt(wet, 100);
    cr_assert_eq(hdiff, 0, "%u vertex heights differ between the quadtree and the z-image", hdiff);
    /* the particles moved one frame on each backend: positions agree to
     * float rounding, so do the flows */
    cr_assert_lt(worst_flow, 1e-3f);
    free(yc), free(dc), free(fc), free(yg), free(dg), free(fg);
}

/* a whole file's bytes (PNG: binary), *len its size */
static unsigned char *bytes_of(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    rewind(f);
    unsigned char *b = malloc(*len + 1);
    cr_assert_eq(fread(b, 1, *len, f), *len);
    fclose(f);
    return b;
}

/* water thrown onto a bumpy terrain: gravity, integrate, terrain.collide */
static void thrown(const char *backend, float **x, float **y, float **vy, uint32_t *n)
{
    floe_scene_opts o = sc_opts();
    char out[400];
    snprintf(out, sizeof out, "%s/%s", sc_tmp, backend);
    o.out_dir = out;
    int rc = sc_run(&o, SC_HEAD
                    "local sim = floe.sim{ dim = 3, spacing = 0.03, backend = '%s',\n"
                    "                      domain = { min = {-0.1, -0.5, -0.1}, max = {1.1, 1.2, 1.1} } }\n"
                    "sim:load 'terrain'\n"
                    "sim:terrain{ height = function(x, z) return 0.2 * math.sin(4 * x) * math.cos(3 * z) end,\n"
                    "             cell = 0.05, size = {21, 21} }\n"
                    "sim:fluid_sphere{ centre = {0.5, 0.45, 0.5}, radius = 0.2, velocity = {0.8, -2, 0.5} }\n"
                    "sim:pipeline{ 'gravity', 'integrate', { 'terrain.collide', restitution = 0.3, friction = 0.5,\n"
                    "              freeze_speed = 0.05 }, 'terrain.output' }\n"
                    "sim:run{ frames = 4, fps = 20, dt = 0.0025 }\n", backend);
    cr_assert_eq(rc, FLOE_OK, "%s: %s", backend, sc_err);
    char ply[600];
    snprintf(ply, sizeof ply, "%s/fluid.0004.ply", out);
    uint32_t m;
    cr_assert_eq(ply_read_property(ply, "x", n, x), 0, "%s", ply);
    cr_assert_eq(ply_read_property(ply, "y", &m, y), 0);
    cr_assert_eq(ply_read_property(ply, "v_y", &m, vy), 0);
}

Test(terrain_cl, the_collision_kernel_gives_the_c_path, .timeout = FLOE_TIMEOUT(600))
{
    need_opencl();
    float *xc, *yc, *vc, *xg, *yg, *vg;
    uint32_t nc, ng;
    thrown("cpu", &xc, &yc, &vc, &nc);
    thrown("opencl", &xg, &yg, &vg, &ng);
    cr_assert_eq(nc, ng);
    float worst = 0, worst_v = 0;
    for (uint32_t k = 0; k < nc; k++) {
        worst = fmaxf(worst, fmaxf(fabsf(xc[k] - xg[k]), fabsf(yc[k] - yg[k])));
        worst_v = fmaxf(worst_v, fabsf(vc[k] - vg[k]));
    }
    char pc[500], pg[500];
    snprintf(pc, sizeof pc, "%s/cpu/wet.0004.png", sc_tmp);
    snprintf(pg, sizeof pg, "%s/opencl/wet.0004.png", sc_tmp);
    size_t lc, lg;
    unsigned char *wc = bytes_of(pc, &lc), *wg = bytes_of(pg, &lg);
    const int same = lc == lg && memcmp(wc, wg, lc) == 0;
    cr_log_info("%u particles after 80 steps: positions within %g m, v_y within %g m/s; wet maps (%zu bytes) %s", nc,
                worst, worst_v, lc, same ? "identical" : "differ");
    cr_assert_lt(worst, 1e-4f, "positions differ by %g m", worst);
    cr_assert_lt(worst_v, 1e-3f);
    cr_assert(same, "the wet maps should be the same image");
    free(wc), free(wg);
    free(xc), free(yc), free(vc), free(xg), free(yg), free(vg);
}
