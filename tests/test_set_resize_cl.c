/* Sets that change size on the device (ABI 1.10: api->cl_set_resize,
 * cl_set_compact, cl_scan; core/src/opencl/resize.c): the kept particles
 * keep their order and every attribute, rows added are zero, and the scan
 * is the exclusive prefix sum over several of the core's scan blocks. On
 * PoCL; skipped without an OpenCL device. */
#include "cl_fixture.h"

#include <floe/module.h>

#include <stdlib.h>
#include <string.h>

typedef int (*write_fn)(void *queue, void *mem, uint32_t blocking, size_t off, size_t size, const void *ptr,
                        uint32_t nwait, const void *wait, void *event);
typedef int (*read_fn)(void *queue, void *mem, uint32_t blocking, size_t off, size_t size, void *ptr, uint32_t nwait,
                       const void *wait, void *event);

static floe_ctx *world(floe_set *fluid)
{
    floe_sim_def def = floe_sim_default_def();
    def.dim = 3;
    def.spacing = 0.01f;
    def.backend = "opencl";
    const float lo[3] = {-0.1f, -0.1f, -0.1f}, hi[3] = {0.5f, 0.5f, 0.5f};
    memcpy(def.domain_min, lo, sizeof lo);
    memcpy(def.domain_max, hi, sizeof hi);
    char err[512];
    floe_ctx *ctx = floe_ctx_create(&def, err, sizeof err);
    cr_assert_not_null(ctx, "%s", err);
    floe_ctx_set_log_level(ctx, FLOE_LOG_WARN);
    *fluid = floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000);
    const float b0[3] = {0, 0, 0}, b1[3] = {0.2f, 0.2f, 0.2f}, v[3] = {1, 2, 3};
    cr_assert(floe_fill_box(ctx, *fluid, b0, b1, v) > 1000);
    return ctx;
}

/* every attribute's device copy made (the device holds the truth after a write) */
static void to_device(floe_ctx *ctx, floe_set s)
{
    const floe_api *api = floe_core_api();
    const char *vec[] = {"x", "v", "a"}, *f32[] = {"m", "rho", "p"};
    for (int i = 0; i < 3; i++) {
        cr_assert_not_null(api->cl_attr(ctx, s, vec[i], FLOE_VEC3, FLOE_READ | FLOE_WRITE));
        cr_assert_not_null(api->cl_attr(ctx, s, f32[i], FLOE_F32, FLOE_READ | FLOE_WRITE));
    }
    cr_assert_not_null(api->cl_attr(ctx, s, "id", FLOE_U32, FLOE_READ | FLOE_WRITE));
}

Test(set_resize_cl, compact_keeps_order_and_attributes_resize_adds_zero_rows)
{
    need_opencl();
    const floe_api *api = floe_core_api();
    floe_set fl;
    floe_ctx *ctx = world(&fl);
    const uint32_t n = floe_set_size(ctx, fl);
    float *x0 = malloc(3 * (size_t)n * sizeof *x0);
    memcpy(x0, floe_attr(ctx, fl, "x", FLOE_VEC3), 3 * (size_t)n * sizeof *x0);
    to_device(ctx, fl);
    /* keep the particles whose id is not a multiple of 3 */
    uint32_t *keep = malloc((size_t)n * sizeof *keep), n_keep = 0;
    for (uint32_t i = 0; i < n; i++)
        n_keep += keep[i] = i % 3 != 0;
    void *kb = api->cl_scratch(ctx, "test.keep", (size_t)n * 4);
    write_fn wr = (write_fn)api->cl_fn("clEnqueueWriteBuffer");
    cr_assert(kb && wr);
    cr_assert_eq(wr(api->cl_queue(ctx), kb, 1, 0, (size_t)n * 4, keep, 0, NULL, NULL), 0);
    cr_assert_eq(api->cl_set_compact(ctx, fl, kb, n_keep), FLOE_OK, "%s", floe_ctx_error(ctx));
    cr_assert_eq(floe_set_size(ctx, fl), n_keep);
    const uint32_t *id = floe_attr(ctx, fl, "id", FLOE_U32);
    const float *x = floe_attr(ctx, fl, "x", FLOE_VEC3), *v = floe_attr(ctx, fl, "v", FLOE_VEC3);
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (!keep[i])
            continue;
        cr_assert_eq(id[k], i, "row %u: id %u, expected %u", k, id[k], i);
        cr_assert_eq(memcmp(&x[3 * k], &x0[3 * i], 3 * sizeof *x), 0, "row %u: position moved", k);
        cr_assert_eq(v[3 * k + 2], 3.0f);
        k++;
    }
    /* grow by more than the capacity: old rows kept, new rows zero */
    to_device(ctx, fl);
    const uint32_t n2 = 3 * n;
    cr_assert_eq(api->cl_set_resize(ctx, fl, n2), FLOE_OK, "%s", floe_ctx_error(ctx));
    cr_assert_eq(floe_set_size(ctx, fl), n2);
    id = floe_attr(ctx, fl, "id", FLOE_U32);
    v = floe_attr(ctx, fl, "v", FLOE_VEC3);
    for (uint32_t i = 0; i < n2; i++) {
        cr_assert_eq(id[i], i < n_keep ? id[i] : 0u);
        cr_assert_eq(v[3 * i + 1], i < n_keep ? 2.0f : 0.0f, "row %u", i);
    }
    cr_assert_eq(id[n_keep - 1], n - 1 - ((n - 1) % 3 == 0));
    /* a step still runs on the changed set */
    cr_assert_eq(floe_pipeline_add(ctx, "neighbours", NULL, 0), FLOE_OK);
    cr_assert_eq(floe_pipeline_add(ctx, "integrate", NULL, 0), FLOE_OK);
    cr_assert_eq(api->cl_set_resize(ctx, fl, n_keep), FLOE_OK);
    cr_assert_eq(floe_step(ctx, 1e-4), FLOE_OK, "%s", floe_ctx_error(ctx));
    free(x0);
    free(keep);
    floe_ctx_destroy(ctx);
}

Test(set_resize_cl, scan_is_the_exclusive_prefix_sum)
{
    need_opencl();
    const floe_api *api = floe_core_api();
    floe_set fl;
    floe_ctx *ctx = world(&fl);
    const uint32_t n = 10000; /* three blocks of the core's scan */
    uint32_t *w = malloc(n * sizeof *w), *got = malloc(n * sizeof *got);
    for (uint32_t i = 0; i < n; i++)
        w[i] = (i * 7919u) % 5u;
    void *b = api->cl_scratch(ctx, "test.scan", (size_t)n * 4);
    write_fn wr = (write_fn)api->cl_fn("clEnqueueWriteBuffer");
    read_fn rd = (read_fn)api->cl_fn("clEnqueueReadBuffer");
    cr_assert_eq(wr(api->cl_queue(ctx), b, 1, 0, (size_t)n * 4, w, 0, NULL, NULL), 0);
    cr_assert_eq(api->cl_scan(ctx, b, n), FLOE_OK, "%s", floe_ctx_error(ctx));
    cr_assert_eq(rd(api->cl_queue(ctx), b, 1, 0, (size_t)n * 4, got, 0, NULL, NULL), 0);
    uint32_t s = 0;
    for (uint32_t i = 0; i < n; i++) {
        cr_assert_eq(got[i], s, "word %u: %u, expected %u", i, got[i], s);
        s += w[i];
    }
    free(w);
    free(got);
    floe_ctx_destroy(ctx);
}

Test(set_resize_cl, refused_on_the_cpu)
{
    const floe_api *api = floe_core_api();
    floe_sim_def def = floe_sim_default_def();
    def.spacing = 0.01f;
    char err[512];
    floe_ctx *ctx = floe_ctx_create(&def, err, sizeof err);
    cr_assert_not_null(ctx, "%s", err);
    floe_set s = floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000);
    cr_assert_neq(api->cl_set_resize(ctx, s, 10), FLOE_OK);
    cr_assert(strstr(floe_ctx_error(ctx), "OpenCL backend is not active"), "%s", floe_ctx_error(ctx));
    floe_ctx_destroy(ctx);
}
