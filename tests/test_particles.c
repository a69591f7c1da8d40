/* Particle sets: attribute registry, resize, compaction and reordering
 * keep every attribute of a set consistent. */
#include <criterion/criterion.h>
#include <floe/floe.h>

#include <string.h>

static floe_ctx *make(int dim)
{
    floe_sim_def d = floe_sim_default_def();
    d.dim = dim;
    d.spacing = 0.1f;
    floe_ctx *ctx = floe_ctx_create(&d, NULL, 0);
    cr_assert_not_null(ctx);
    return ctx;
}

Test(particles, registry_and_types)
{
    floe_ctx *ctx = make(3);
    floe_set s = floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000);
    cr_assert(floe_set_is_valid(ctx, s));
    cr_assert_not_null(floe_attr(ctx, s, "x", FLOE_VEC3));
    cr_assert_not_null(floe_attr(ctx, s, "rho", FLOE_F32));
    cr_assert_null(floe_attr(ctx, s, "rho", FLOE_VEC3), "type mismatch must give NULL");
    cr_assert_null(floe_attr(ctx, s, "nothing", FLOE_F32));
    cr_assert_eq(floe_attr_add(ctx, s, "film", FLOE_F32), FLOE_OK);
    cr_assert_eq(floe_attr_add(ctx, s, "film", FLOE_F32), FLOE_OK, "re-adding with the same type is fine");
    cr_assert_neq(floe_attr_add(ctx, s, "film", FLOE_U32), FLOE_OK);
    cr_assert_neq(floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000).id, 1, "duplicate names refused");
    cr_assert_eq(floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000).id, 0);
    cr_assert_eq(floe_set_find(ctx, "fluid").id, s.id);
    cr_assert_eq(floe_set_find(ctx, "nope").id, 0);
    floe_set bogus = {s.id + (1u << 16)};
    cr_assert(!floe_set_is_valid(ctx, bogus), "stale generation must be invalid");
    floe_ctx_destroy(ctx);
}

Test(particles, fill_box_count_mass_and_ids)
{
    floe_ctx *ctx = make(3);
    floe_set s = floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000);
    float lo[3] = {0, 0, 0}, hi[3] = {0.5f, 0.3f, 0.2f}, v0[3] = {1, 0, 0};
    cr_assert_eq(floe_fill_box(ctx, s, lo, hi, v0), 5 * 3 * 2);
    const float *m = floe_attr(ctx, s, "m", FLOE_F32), *v = floe_attr(ctx, s, "v", FLOE_VEC3);
    const uint32_t *id = floe_attr(ctx, s, "id", FLOE_U32);
    for (uint32_t i = 0; i < floe_set_size(ctx, s); i++) {
        cr_assert_float_eq(m[i], 1000 * 0.001f, 1e-6);
        cr_assert_eq(v[3 * i], 1.0f);
        cr_assert_eq(id[i], i);
    }
    floe_ctx_destroy(ctx);

    ctx = make(2);
    s = floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000);
    cr_assert_eq(floe_fill_box(ctx, s, lo, hi, NULL), 5 * 3);
    m = floe_attr(ctx, s, "m", FLOE_F32);
    cr_assert_float_eq(m[0], 1000 * 0.01f, 1e-5, "2D mass is rho0 d^2");
    const float *x = floe_attr(ctx, s, "x", FLOE_VEC3);
    cr_assert_eq(x[2], 0.0f);
    floe_ctx_destroy(ctx);
}

Test(particles, reorder_and_compact_move_all_attributes_together)
{
    floe_ctx *ctx = make(3);
    floe_set s = floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000);
    float lo[3] = {0, 0, 0}, hi[3] = {1.0f, 1.0f, 0.5f};
    long n = floe_fill_box(ctx, s, lo, hi, NULL);
    cr_assert_eq(n, 500);
    cr_assert_eq(floe_attr_add(ctx, s, "tag", FLOE_I32), FLOE_OK);
    int32_t *tag = floe_attr(ctx, s, "tag", FLOE_I32);
    float *x = floe_attr(ctx, s, "x", FLOE_VEC3);
    for (long i = 0; i < n; i++)
        tag[i] = (int32_t)(x[3 * i] * 1000 + x[3 * i + 1] * 100 + x[3 * i + 2] * 10);
    uint32_t perm[500];
    for (long k = 0; k < n; k++)
        perm[k] = (uint32_t)((k * 37 + 11) % n); /* 37 is coprime with 500 */
    cr_assert_eq(floe_set_reorder(ctx, s, perm), FLOE_OK);
    x = floe_attr(ctx, s, "x", FLOE_VEC3);
    tag = floe_attr(ctx, s, "tag", FLOE_I32);
    const uint32_t *id = floe_attr(ctx, s, "id", FLOE_U32);
    for (long k = 0; k < n; k++) {
        cr_assert_eq(id[k], perm[k]);
        cr_assert_eq(tag[k], (int32_t)(x[3 * k] * 1000 + x[3 * k + 1] * 100 + x[3 * k + 2] * 10));
    }
    uint8_t keep[500];
    for (long k = 0; k < n; k++)
        keep[k] = id[k] % 3 == 0;
    const floe_api *api = floe_core_api();
    cr_assert_eq(api->set_compact(ctx, s, keep), FLOE_OK);
    uint32_t m = floe_set_size(ctx, s);
    cr_assert_eq(m, 167);
    x = floe_attr(ctx, s, "x", FLOE_VEC3);
    tag = floe_attr(ctx, s, "tag", FLOE_I32);
    id = floe_attr(ctx, s, "id", FLOE_U32);
    for (uint32_t k = 0; k < m; k++) {
        cr_assert_eq(id[k] % 3, 0);
        cr_assert_eq(tag[k], (int32_t)(x[3 * k] * 1000 + x[3 * k + 1] * 100 + x[3 * k + 2] * 10));
    }
    /* grow: old data kept, new particles zeroed */
    cr_assert_eq(api->set_resize(ctx, s, 100000), FLOE_OK);
    tag = floe_attr(ctx, s, "tag", FLOE_I32);
    x = floe_attr(ctx, s, "x", FLOE_VEC3);
    cr_assert_eq(tag[0], (int32_t)(x[0] * 1000 + x[1] * 100 + x[2] * 10));
    cr_assert_eq(tag[99999], 0);
    floe_ctx_destroy(ctx);
}

Test(particles, boundary_box_and_volumes)
{
    floe_ctx *ctx = make(2);
    floe_set b = floe_set_create(ctx, "boundary", FLOE_SET_BOUNDARY, 0);
    float lo[3] = {0, 0, 0}, hi[3] = {1, 1, 0};
    long n = floe_boundary_box(ctx, b, lo, hi, 2, FLOE_OPEN_NONE);
    /* 14 x 14 lattice minus the 10 x 10 inside */
    cr_assert_eq(n, 14 * 14 - 100);
    cr_assert_eq(floe_boundary_volumes(ctx), FLOE_OK);
    const float *V = floe_attr(ctx, b, "V", FLOE_F32), *x = floe_attr(ctx, b, "x", FLOE_VEC3);
    /* a particle in the middle of a wall (two layers, support 2d) sees a
     * lattice truncated on one side: its volume exceeds d^2 but not 2 d^2 */
    for (long i = 0; i < n; i++)
        cr_assert(V[i] > 0.01f * 0.9f && V[i] < 0.01f * 3.5f, "V[%ld] = %g at (%g,%g)", i, V[i], x[3 * i], x[3 * i + 1]);
    floe_ctx_destroy(ctx);

    ctx = make(2);
    b = floe_set_create(ctx, "boundary", FLOE_SET_BOUNDARY, 0);
    cr_assert_eq(floe_boundary_box(ctx, b, lo, hi, 2, FLOE_OPEN_TOP), 14 * 12 - 100);
    floe_ctx_destroy(ctx);
}
