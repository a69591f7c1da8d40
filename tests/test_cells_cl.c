/* Cell walks on the device (FLOE_CL_NEIGHBOURS=cells, docs/opencl.md): the
 * density and pressure-force kernels that walk the neighbour cells of the
 * device sort visit the neighbours the lists hold, in the lists' order, so
 * a run with cells equals a run with lists bit for bit: positions,
 * velocities, densities and pressures after steps that cross a reorder
 * (every 10 updates). Stages without a cell walk (sph.xsph, the artificial
 * viscosity) get lists built on demand from the same sort; the walks with
 * and without local-memory staging, the force walk with and without its
 * neighbours' data packed in sorted order, all equal; a periodic
 * domain keeps lists; a bad value of the switch is refused by name. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <floe/floe.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cl_fixture.h"
#include "device.h"

typedef struct world {
    floe_ctx *ctx;
    floe_set fluid, bnd;
} world;

#define KV_F(n, x) ((floe_param_kv){(n), FLOE_PARAM_FLOAT, {.f = (x)}})
#define KV_S(n, x) ((floe_param_kv){(n), FLOE_PARAM_STRING, {.s = (x)}})

/* a jittered dam break (3D) or tank (2D) on the OpenCL backend with the
 * given neighbour mode; periodic: x periodic over a floor */
static float support_factor; /* 0: the default */

static world make(const char *mode, int dim, int periodic)
{
    setenv("FLOE_MODULE_PATH", FLOE_TEST_BUILD_ROOT "/modules", 1);
    /* "cells-global": cells without the local-memory staging;
     * "cells-unpacked": the force walk gathers its neighbours' data */
    setenv("FLOE_CL_NEIGHBOURS", strncmp(mode, "cells", 5) ? mode : "cells", 1);
    setenv("FLOE_CL_CELLS_LOCAL", strcmp(mode, "cells-global") ? "1" : "0", 1);
    setenv("FLOE_CL_CELLS_PACK", strcmp(mode, "cells-unpacked") ? "1" : "0", 1);
    const float d = dim == 3 ? 0.02f : 0.01f;
    const float tank[3] = {0.3f, 0.3f, dim == 3 ? 0.2f : 0.0f};
    const float water[3] = {0.15f, 0.2f, dim == 3 ? 0.2f : 0.0f};
    floe_sim_def def = floe_sim_default_def();
    def.dim = dim;
    def.spacing = d;
    def.threads = 2;
    def.backend = "opencl";
    if (support_factor > 0)
        def.support_factor = support_factor;
    for (int k = 0; k < 3; k++) {
        def.domain_min[k] = -4 * d;
        def.domain_max[k] = tank[k] + 4 * d + (k == 1 ? tank[1] : 0);
    }
    if (periodic) {
        def.domain_min[0] = 0;
        def.domain_max[0] = tank[0];
        def.periodic[0] = 1;
    }
    char err[1024];
    world w;
    w.ctx = floe_ctx_create(&def, err, sizeof err);
    unsetenv("FLOE_CL_NEIGHBOURS");
    unsetenv("FLOE_CL_CELLS_LOCAL");
    unsetenv("FLOE_CL_CELLS_PACK");
    cr_assert_not_null(w.ctx, "%s", err);
    w.fluid = floe_set_create(w.ctx, "fluid", FLOE_SET_FLUID, 1000);
    w.bnd = floe_set_create(w.ctx, "boundary", FLOE_SET_BOUNDARY, 0);
    float zero[3] = {0, 0, 0};
    cr_assert(floe_fill_box(w.ctx, w.fluid, zero, water, NULL) > 0);
    if (!periodic)
        cr_assert(floe_boundary_box(w.ctx, w.bnd, zero, tank, 2, 0) > 0);
    else {
        float lo[3] = {0, -3 * d, 0}, hi[3] = {tank[0], -0.5f * d, dim == 3 ? tank[2] : 0};
        cr_assert(floe_boundary_solid_box(w.ctx, w.bnd, lo, hi) > 0);
    }
    uint32_t n = floe_set_size(w.ctx, w.fluid);
    float *x = floe_attr(w.ctx, w.fluid, "x", FLOE_VEC3);
    float *v = floe_attr(w.ctx, w.fluid, "v", FLOE_VEC3);
    uint64_t s = 12345;
    for (uint32_t i = 0; i < 3 * n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        float r = (float)((s >> 33) & 0xffffff) / (float)0x1000000 - 0.5f;
        if (dim == 2 && i % 3 == 2)
            continue;
        x[i] += 0.2f * d * r;
        v[i] = 0.5f * r;
    }
    cr_assert_eq(floe_module_load(w.ctx, "sph"), FLOE_OK, "%s", floe_ctx_error(w.ctx));
    cr_assert_eq(floe_module_load(w.ctx, "wcsph"), FLOE_OK, "%s", floe_ctx_error(w.ctx));
    return w;
}

static void add(world *w, const char *stage, int n, const floe_param_kv *kv)
{
    cr_assert_eq(floe_pipeline_add(w->ctx, stage, kv, n), FLOE_OK, "%s", floe_ctx_error(w->ctx));
}

/* fused: XSPH inside wcsph.pressure_force (both walk the cells); else
 * sph.xsph and the artificial viscosity as their own stages (lists) */
static void pipeline(world *w, int fused)
{
    add(w, "neighbours", 0, NULL);
    add(w, "sph.density", 0, NULL);
    floe_param_kv eos[] = {KV_F("speed_of_sound", 20)};
    add(w, "wcsph.pressure", 1, eos);
    add(w, "gravity", 0, NULL);
    if (fused) {
        floe_param_kv kv[] = {KV_F("xsph", 0.05)};
        add(w, "wcsph.pressure_force", 1, kv);
    } else {
        floe_param_kv xs[] = {KV_F("alpha", 0.05), KV_F("boundary_alpha", 0.02)};
        add(w, "sph.xsph", 2, xs);
        floe_param_kv av[] = {KV_S("kind", "artificial"), KV_F("alpha", 0.05), KV_F("boundary_alpha", 0.05)};
        add(w, "wcsph.viscosity", 3, av);
        add(w, "wcsph.pressure_force", 0, NULL);
    }
    add(w, "integrate", 0, NULL);
}

/* the largest difference of an attribute between the worlds (same order:
 * both reorder at the same updates), in units of its largest magnitude */
static double max_diff(world *a, world *b, const char *name, floe_type type)
{
    uint32_t n = floe_set_size(a->ctx, a->fluid);
    cr_assert_eq(n, floe_set_size(b->ctx, b->fluid));
    const uint32_t *ida = floe_attr(a->ctx, a->fluid, "id", FLOE_U32);
    const uint32_t *idb = floe_attr(b->ctx, b->fluid, "id", FLOE_U32);
    const float *fa = floe_attr(a->ctx, a->fluid, name, type);
    const float *fb = floe_attr(b->ctx, b->fluid, name, type);
    cr_assert(fa && fb && ida && idb);
    const int c = type == FLOE_VEC3 ? 3 : 1;
    double worst = 0, mag = 0;
    for (uint32_t i = 0; i < n; i++) {
        cr_assert_eq(ida[i], idb[i], "particle order differs at %u", i);
        for (int k = 0; k < c; k++) {
            worst = fmax(worst, fabs((double)fa[c * i + k] - fb[c * i + k]));
            mag = fmax(mag, fabs((double)fa[c * i + k]));
        }
    }
    return mag > 0 ? worst / mag : worst;
}

/* steps of the same world with lists and with cells: equal bit for bit */
static void cells_equal_lists(const char *mode, int dim, int fused, int periodic, int steps)
{
    need_opencl();
    world w[2];
    for (int m = 0; m < 2; m++) {
        w[m] = make(m ? mode : "lists", dim, periodic);
        pipeline(&w[m], fused);
        for (int s = 0; s < steps; s++)
            cr_assert_eq(floe_step(w[m].ctx, 2e-4), FLOE_OK, "%s", floe_ctx_error(w[m].ctx));
    }
    const char *names[] = {"x", "v", "rho", "p", "a"};
    const floe_type types[] = {FLOE_VEC3, FLOE_VEC3, FLOE_F32, FLOE_F32, FLOE_VEC3};
    for (int k = 0; k < 5; k++) {
        double e = max_diff(&w[0], &w[1], names[k], types[k]);
        cr_log_info("%s %dD %s%s, %d steps: '%s' vs lists largest difference %.3g", mode, dim,
                    fused ? "fused" : "separate stages", periodic ? " periodic" : "", steps, names[k], e);
        cr_assert_eq(e, 0.0, "'%s' differs by %.3g", names[k], e);
    }
    floe_ctx_destroy(w[0].ctx);
    floe_ctx_destroy(w[1].ctx);
}

Test(cells_cl, equal_lists_3d_fused, .timeout = FLOE_TIMEOUT(900)) { cells_equal_lists("cells", 3, 1, 0, 22); }
Test(cells_cl, equal_lists_3d_fused_global_walk, .timeout = FLOE_TIMEOUT(900)) { cells_equal_lists("cells-global", 3, 1, 0, 22); }
Test(cells_cl, equal_lists_3d_fused_unpacked, .timeout = FLOE_TIMEOUT(900)) { cells_equal_lists("cells-unpacked", 3, 1, 0, 22); }
Test(cells_cl, equal_lists_2d_fused, .timeout = FLOE_TIMEOUT(900)) { cells_equal_lists("cells", 2, 1, 0, 22); }
Test(cells_cl, equal_lists_with_list_stages, .timeout = FLOE_TIMEOUT(900)) { cells_equal_lists("cells", 3, 0, 0, 12); }
/* support 3.5 d in 2D: more neighbours than the first stride of 32, so
 * the lists built on demand are widened and built again before use */
Test(cells_cl, lists_on_demand_widened, .timeout = FLOE_TIMEOUT(900))
{
    support_factor = 3.5f;
    cells_equal_lists("cells", 2, 0, 0, 6);
    support_factor = 0;
}
Test(cells_cl, periodic_keeps_lists, .timeout = FLOE_TIMEOUT(900)) { cells_equal_lists("cells", 2, 1, 1, 12); }

Test(cells_cl, bad_switch_named)
{
    need_opencl();
    setenv("FLOE_CL_NEIGHBOURS", "cell", 1);
    floe_sim_def def = floe_sim_default_def();
    def.backend = "opencl";
    def.spacing = 0.02f;
    char err[1024] = "";
    floe_ctx *ctx = floe_ctx_create(&def, err, sizeof err);
    unsetenv("FLOE_CL_NEIGHBOURS");
    cr_assert_null(ctx);
    cr_log_info("%s", err);
    cr_assert(strstr(err, "FLOE_CL_NEIGHBOURS") && strstr(err, "\"cell\""), "%s", err);
}

/* the backend hands out a set's cells after a neighbours stage where the
 * switch asks for them and the domain is not periodic, and only then */
static int has_cells(const char *mode, int periodic)
{
    world w = make(mode, 2, periodic);
    add(&w, "neighbours", 0, NULL);
    cr_assert_eq(floe_step(w.ctx, 2e-4), FLOE_OK, "%s", floe_ctx_error(w.ctx));
    floe_cl_cells c;
    cr_assert_eq(w.ctx->dev->ops->cells(w.ctx, ctx_set(w.ctx, w.fluid), &c), FLOE_OK);
    const int has = c.spos != NULL;
    if (has) {
        cr_assert_eq(c.n, floe_set_size(w.ctx, w.fluid));
        cr_assert(c.start && c.fresh && c.dims[0] > 0 && c.dims[3] == 0 && c.support2 > 0);
    }
    floe_ctx_destroy(w.ctx);
    return has;
}

Test(cells_cl, cells_only_where_asked, .timeout = FLOE_TIMEOUT(600))
{
    need_opencl();
    cr_assert(has_cells("cells", 0));
    cr_assert(!has_cells("lists", 0));
    cr_assert(!has_cells("cells", 1));
}
