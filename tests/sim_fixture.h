/* Helpers shared by scene-level tests: build a tank with fluid and
 * boundary particles and a WCSPH pipeline through the host API. */
#ifndef FLOE_TEST_SIM_FIXTURE_H
#define FLOE_TEST_SIM_FIXTURE_H

#include <criterion/criterion.h>
#include <floe/floe.h>

#include <stdlib.h>
#include <string.h>

typedef struct fixture {
    floe_ctx *ctx;
    floe_set fluid, bnd;
} fixture;

/* Tank with inner box [0, tank], water block [0, water], spacing d. */
static inline fixture fixture_tank(int dim, float d, const float tank[3], const float water[3], int open_top)
{
    setenv("FLOE_MODULE_PATH", FLOE_TEST_BUILD_ROOT "/modules", 1);
    floe_sim_def def = floe_sim_default_def();
    def.dim = dim;
    def.spacing = d;
    def.threads = 2;
    if (getenv("FLOE_TEST_SUPPORT"))
        def.support_factor = (float)atof(getenv("FLOE_TEST_SUPPORT"));
    for (int k = 0; k < 3; k++) {
        def.domain_min[k] = -4 * d;
        def.domain_max[k] = tank[k] + 4 * d + (k == 1 ? tank[1] : 0);
    }
    char err[512];
    fixture f;
    f.ctx = floe_ctx_create(&def, err, sizeof err);
    cr_assert_not_null(f.ctx, "%s", err);
    f.fluid = floe_set_create(f.ctx, "fluid", FLOE_SET_FLUID, 1000);
    f.bnd = floe_set_create(f.ctx, "boundary", FLOE_SET_BOUNDARY, 0);
    float zero[3] = {0, 0, 0};
    cr_assert(floe_fill_box(f.ctx, f.fluid, zero, water, NULL) > 0);
    cr_assert(floe_boundary_box(f.ctx, f.bnd, zero, tank, 2, open_top ? FLOE_OPEN_TOP : 0) > 0);
    cr_assert_eq(floe_module_load(f.ctx, "wcsph"), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    return f;
}

static inline void fixture_add(fixture *f, const char *stage, int n, const floe_param_kv *kv)
{
    cr_assert_eq(floe_pipeline_add(f->ctx, stage, kv, n), FLOE_OK, "%s", floe_ctx_error(f->ctx));
}

#define KV_F(n, x) ((floe_param_kv){(n), FLOE_PARAM_FLOAT, {.f = (x)}})
#define KV_S(n, x) ((floe_param_kv){(n), FLOE_PARAM_STRING, {.s = (x)}})

/* neighbours, density, Tait pressure, gravity, viscosity, pressure force,
 * optional velocity damping (settling), integration. */
static inline void fixture_wcsph(fixture *f, double c, const char *visc, double alpha, double damp)
{
    fixture_add(f, "neighbours", 0, NULL);
    fixture_add(f, "wcsph.density", 0, NULL);
    floe_param_kv pk[] = {KV_F("speed_of_sound", c)};
    fixture_add(f, "wcsph.pressure", 1, pk);
    fixture_add(f, "gravity", 0, NULL);
    floe_param_kv vk[] = {KV_S("kind", visc), KV_F("alpha", alpha), KV_F("speed_of_sound", c)};
    fixture_add(f, "wcsph.viscosity", 3, vk);
    fixture_add(f, "wcsph.pressure_force", 0, NULL);
    if (damp > 0) {
        cr_assert_eq(floe_module_load(f->ctx, "hello"), FLOE_OK, "%s", floe_ctx_error(f->ctx));
        floe_param_kv dk[] = {KV_F("rate", damp)};
        fixture_add(f, "hello.damp", 1, dk);
    }
    fixture_add(f, "integrate", 0, NULL);
}

static inline floe_run_def fixture_run_def(double seconds, double fps)
{
    floe_run_def r = floe_run_default_def();
    r.fps = fps;
    r.frames = (int)(seconds * fps + 0.5);
    r.progress = 0;
    r.out_dir = NULL;
    return r;
}

#endif
