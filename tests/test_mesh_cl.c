/* Mesh boundaries on the OpenCL backend: boundary_mesh and fluid_mesh make
 * ordinary sets, so a short dam break over the Stanford bunny (a mesh
 * boundary) with water from a mesh agrees with the C path within the
 * tolerances of the other whole-scene OpenCL tests (docs/opencl.md:
 * positions relative L2 < 1e-5, average density error within 1e-4, total
 * energy within 1e-5 relative). Skips without an OpenCL device. */
#include <criterion/criterion.h>
#include <criterion/logging.h>

#include "cl_fixture.h"
#include "mesh_fixture.h"

static shape S;

#define KV_F(n, x) ((floe_param_kv){(n), FLOE_PARAM_FLOAT, {.f = (x)}})
#define KV_S(n, x) ((floe_param_kv){(n), FLOE_PARAM_STRING, {.s = (x)}})

static void add(floe_ctx *ctx, const char *stage, int n, const floe_param_kv *kv)
{
    cr_assert_eq(floe_pipeline_add(ctx, stage, kv, n), FLOE_OK, "%s", floe_ctx_error(ctx));
}

/* tank [0, 0.5] x [0, 0.3] x [0, 0.2], a 0.16 x 0.2 x 0.2 block of water
 * from a box mesh thrown at 1 m/s against the bunny (0.12 m tall, on the
 * floor half a spacing beside the water) */
static floe_ctx *bunny_world(const char *backend, const char *cube)
{
    const float d = 0.02f, tank[3] = {0.5f, 0.3f, 0.2f}, zero[3] = {0, 0, 0};
    const float lo[3] = {-4 * d, -4 * d, -4 * d}, hi[3] = {tank[0] + 4 * d, 2 * tank[1] + 4 * d, tank[2] + 4 * d};
    floe_ctx *ctx = mesh_sim(d, lo, hi, backend);
    floe_set fluid = floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000);
    floe_set walls = floe_set_create(ctx, "boundary", FLOE_SET_BOUNDARY, 0);
    floe_set bunny = floe_set_create(ctx, "bunny", FLOE_SET_BOUNDARY, 0);
    cr_assert(floe_boundary_box(ctx, walls, zero, tank, 2, 0) > 0);
    floe_mesh_def def = floe_mesh_default_def();
    def.file = model("bunny_10k.obj");
    for (int k = 0; k < 3; k++)
        def.scale[k] = 0.12f;
    def.translation[0] = 0.228f, def.translation[2] = 0.1f;
    char err[1024];
    floe_mesh *m = floe_mesh_load(&def, err, sizeof err);
    cr_assert_not_null(m, "%s", err);
    cr_assert(floe_boundary_mesh(ctx, bunny, m, NULL) > 0, "%s", floe_ctx_error(ctx));
    floe_mesh_destroy(m);
    m = load_mesh(cube);
    const float v0[3] = {1, 0, 0};
    cr_assert(floe_fill_mesh(ctx, fluid, m, NULL, v0) > 0, "%s", floe_ctx_error(ctx));
    floe_mesh_destroy(m);
    cr_assert_eq(floe_module_load(ctx, "wcsph"), FLOE_OK, "%s", floe_ctx_error(ctx));
    cr_assert_eq(floe_module_load(ctx, "sph"), FLOE_OK, "%s", floe_ctx_error(ctx));
    add(ctx, "neighbours", 0, NULL);
    add(ctx, "sph.density", 0, NULL);
    floe_param_kv pk[] = {KV_F("speed_of_sound", 20)};
    add(ctx, "wcsph.pressure", 1, pk);
    add(ctx, "gravity", 0, NULL);
    floe_param_kv vk[] = {KV_F("alpha", 0.02)};
    add(ctx, "sph.xsph", 1, vk);
    add(ctx, "wcsph.pressure_force", 0, NULL);
    add(ctx, "integrate", 0, NULL);
    return ctx;
}

/* fluid particles with a bunny particle within the support radius */
static uint32_t touching(floe_ctx *ctx)
{
    floe_set f = floe_set_find(ctx, "fluid"), b = floe_set_find(ctx, "bunny");
    const float *xf = floe_attr(ctx, f, "x", FLOE_VEC3), *xb = floe_attr(ctx, b, "x", FLOE_VEC3);
    const float h = floe_ctx_info(ctx)->support;
    uint32_t n = 0;
    for (uint32_t i = 0; i < floe_set_size(ctx, f); i++) {
        int near = 0;
        for (uint32_t j = 0; j < floe_set_size(ctx, b) && !near; j++) {
            float e[3] = {xf[3 * i] - xb[3 * j], xf[3 * i + 1] - xb[3 * j + 1], xf[3 * i + 2] - xb[3 * j + 2]};
            near = e[0] * e[0] + e[1] * e[1] + e[2] * e[2] < h * h;
        }
        n += (uint32_t)near;
    }
    return n;
}

/* relative L2 difference of x between the two runs, matched by id */
static double rel_l2_x(floe_ctx *a, floe_ctx *b)
{
    floe_set fa = floe_set_find(a, "fluid"), fb = floe_set_find(b, "fluid");
    uint32_t n = floe_set_size(a, fa);
    cr_assert_eq(n, floe_set_size(b, fb));
    const uint32_t *ida = floe_attr(a, fa, "id", FLOE_U32), *idb = floe_attr(b, fb, "id", FLOE_U32);
    const float *xa = floe_attr(a, fa, "x", FLOE_VEC3), *xb = floe_attr(b, fb, "x", FLOE_VEC3);
    uint32_t *where = malloc(n * sizeof *where);
    for (uint32_t i = 0; i < n; i++)
        where[idb[i]] = i;
    double num = 0, den = 0;
    for (uint32_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            double e = (double)xa[3 * i + k] - xb[3 * where[ida[i]] + k];
            num += e * e;
            den += (double)xa[3 * i + k] * xa[3 * i + k];
        }
    free(where);
    return sqrt(num / den);
}

Test(mesh_cl, bunny_boundary_agrees_with_the_cpu, .timeout = FLOE_TIMEOUT(900))
{
    need_opencl();
    char dir[] = "/tmp/floe_test_mesh_cl.XXXXXX", cube[64];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(cube, sizeof cube, "%s/water.stl", dir);
    const float lo[3] = {0, 0, 0}, hi[3] = {0.16f, 0.2f, 0.2f};
    shape_box(&S, lo, hi, 0);
    write_stl(cube, &S);
    floe_ctx *w[2];
    cl_summary s[2];
    for (int b = 0; b < 2; b++) {
        w[b] = bunny_world(b ? "opencl" : "cpu", cube);
        floe_run_def r = floe_run_default_def();
        r.dt = 2e-4;
        r.fps = 1.0 / (100 * r.dt);
        r.frames = 1;
        r.progress = 0;
        r.on_frame = cl_grab;
        r.user = &s[b];
        floe_run_summary sum;
        cr_assert_eq(floe_run(w[b], &r, &sum), FLOE_OK, "%s", floe_ctx_error(w[b]));
        cr_assert_eq(sum.steps, 100);
    }
    unlink(cube);
    rmdir(dir);
    cr_assert_eq(floe_ctx_backend(w[1]), FLOE_BACKEND_OPENCL);
    double ex = rel_l2_x(w[0], w[1]), e0 = s[0].kinetic + s[0].potential, e1 = s[1].kinetic + s[1].potential;
    cr_log_info("dam break over the bunny (%u fluid, %u bunny particles), 100 steps: x rel L2 %.3g, density error "
                "%.5f%% vs %.5f%%, energy %.6g vs %.6g J (rel %.3g)", floe_set_size(w[0], floe_set_find(w[0], "fluid")),
                floe_set_size(w[0], floe_set_find(w[0], "bunny")), ex, 100 * s[0].err_avg, 100 * s[1].err_avg, e0, e1,
                fabs(e1 - e0) / fabs(e0));
    uint32_t near = touching(w[0]);
    cr_log_info("%u fluid particles within the support of the bunny's", near);
    cr_assert_gt(near, 20, "the water must reach the bunny");
    cr_assert_lt(ex, 1e-5);
    cr_assert_lt(fabs(s[0].err_avg - s[1].err_avg), 1e-4);
    cr_assert_lt(fabs(e1 - e0) / fabs(e0), 1e-5);
    floe_ctx_destroy(w[0]);
    floe_ctx_destroy(w[1]);
}
