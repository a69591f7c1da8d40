/* Helpers shared by scene-level tests: build a tank with fluid and
 * boundary particles and a WCSPH pipeline through the host API. */
#ifndef FLOE_TEST_SIM_FIXTURE_H
#define FLOE_TEST_SIM_FIXTURE_H

#include <criterion/criterion.h>
#include <floe/floe.h>

#include <math.h>
#include <stdio.h>
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
    cr_assert_eq(floe_module_load(f.ctx, "sph"), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    return f;
}

static inline void fixture_add(fixture *f, const char *stage, int n, const floe_param_kv *kv)
{
    cr_assert_eq(floe_pipeline_add(f->ctx, stage, kv, n), FLOE_OK, "%s", floe_ctx_error(f->ctx));
}

#define KV_F(n, x) ((floe_param_kv){(n), FLOE_PARAM_FLOAT, {.f = (x)}})
#define KV_S(n, x) ((floe_param_kv){(n), FLOE_PARAM_STRING, {.s = (x)}})
#define KV_B(n, x) ((floe_param_kv){(n), FLOE_PARAM_BOOL, {.b = (x)}})

/* neighbours, density, Tait pressure, gravity, viscosity, pressure force,
 * optional velocity damping (settling), integration. */
static inline void fixture_wcsph(fixture *f, double c, const char *visc, double alpha, double damp)
{
    fixture_add(f, "neighbours", 0, NULL);
    fixture_add(f, "sph.density", 0, NULL);
    floe_param_kv pk[] = {KV_F("speed_of_sound", c)};
    fixture_add(f, "wcsph.pressure", 1, pk);
    fixture_add(f, "gravity", 0, NULL);
    floe_param_kv vk[] = {KV_S("kind", visc), KV_F("alpha", alpha)};
    if (!strcmp(visc, "xsph"))
        fixture_add(f, "sph.xsph", 1, vk + 1);
    else
        fixture_add(f, "wcsph.viscosity", 2, vk);
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

/* ---- the 2D dam break against Martin & Moyce (1952) ------------------------- */

/* The simulated surge front Z = z / a against T = t sqrt(2 g / a), one entry
 * per frame (each test's frame callback decides what the front is). */
typedef struct front_log {
    int n;
    double T[4096], Z[4096];
    double a, tscale, t0;
    floe_set fluid;
    float d;
} front_log;

/* the time origin shifted by 0.175 in T, the usual correction for Martin &
 * Moyce's gate (Lethe's dam-break-2d.py; tests/validation/README.md) */
#define FRONT_SHIFT 0.175

static inline double front_interp(const front_log *L, double T)
{
    for (int i = 1; i < L->n; i++)
        if (L->T[i] >= T) {
            double w = (T - L->T[i - 1]) / (L->T[i] - L->T[i - 1]);
            return L->Z[i - 1] + w * (L->Z[i] - L->Z[i - 1]);
        }
    return L->Z[L->n - 1];
}

/* Compare with Martin & Moyce's Table 2 (n^2 = 2) for T in [0.5, 2.5], as
 * measured and with the time origin shifted by FRONT_SHIFT; logs the table
 * and returns the number of points compared, the worst relative errors in
 * *worst and *worst_shift. */
static inline int front_vs_martin_moyce(const front_log *L, double *worst, double *worst_shift)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/dambreak2d_martin_moyce_n2eq2_a2.25in_table2_front.csv",
             FLOE_TEST_SOURCE_ROOT "/tests/validation");
    FILE *csv = fopen(path, "r");
    cr_assert_not_null(csv, "cannot open %s", path);
    char line[512];
    int compared = 0;
    *worst = *worst_shift = 0;
    cr_log_info("T      Z_exp  Z_floe  rel.error  Z_floe(T - %.3f)  rel.error", FRONT_SHIFT);
    while (fgets(line, sizeof line, csv)) {
        double T, Z;
        if (line[0] == '#' || sscanf(line, "%lf,%lf", &T, &Z) != 2 || T < 0.5 || T > 2.5)
            continue;
        double zs = front_interp(L, T), zsh = front_interp(L, T - FRONT_SHIFT);
        cr_log_info("%.2f  %.2f   %.3f   %+5.1f%%   %.3f  %+5.1f%%", T, Z, zs, 100 * (zs - Z) / Z, zsh,
                    100 * (zsh - Z) / Z);
        *worst = fmax(*worst, fabs(zs - Z) / Z);
        *worst_shift = fmax(*worst_shift, fabs(zsh - Z) / Z);
        compared++;
    }
    fclose(csv);
    return compared;
}

/* ---- a density stage over the core's kernel sums ---------------------------
 * After its first call, the density stage (sph.density) takes each row's sum from the
 * neighbours stage (floe_nlist.wsum) instead of walking the rows. Ways:
 * 0 neighbours, density: the sums from the second step on;
 * 1 neighbours, a C function stage that does nothing, density: a function
 *   stage may move particles, which ends the sums: density walks its rows;
 * 2 as 1, the function stage shearing the particles: density must see
 *   where they are now, not the sums from before. */
static inline int fixture_shear_stage(const floe_stage_call *c)
{
    if (!c->user)
        return FLOE_OK;
    floe_set s = floe_set_find(c->ctx, "fluid");
    float *x = floe_attr(c->ctx, s, "x", FLOE_VEC3);
    for (uint32_t i = 0; i < floe_set_size(c->ctx, s); i++)
        x[3 * i] += 0.004f * x[3 * i + 1];
    return FLOE_OK;
}

/* The density after three steps of neighbours, [function stage], <module>.density;
 * *sums_left: whether the lists still carry kernel sums at the end. */
static inline float *fixture_density_by_way(const char *module, int way, uint32_t *n_out, int *sums_left,
                                            uint32_t **wall_count)
{
    const float d = 0.05f, tank[3] = {0.6f, 0.6f, 0.4f}, water[3] = {0.3f, 0.4f, 0.4f};
    static int shear = 1;
    fixture f = fixture_tank(3, d, tank, water, 1);
    char stage[64];
    snprintf(stage, sizeof stage, "%s.density", module);
    if (strcmp(module, "wcsph") != 0)
        cr_assert_eq(floe_module_load(f.ctx, module), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    fixture_add(&f, "neighbours", 0, NULL);
    if (way >= 1)
        cr_assert_eq(floe_pipeline_add_fn(f.ctx, "move", fixture_shear_stage, way == 2 ? &shear : NULL), FLOE_OK);
    fixture_add(&f, stage, 0, NULL);
    floe_run_def r = fixture_run_def(3 * 0.001, 1 / (3 * 0.001));
    r.dt = 0.001;
    cr_assert_eq(floe_run(f.ctx, &r, NULL), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    const uint32_t n = floe_set_size(f.ctx, f.fluid);
    const floe_api *api = floe_core_api();
    const floe_nlist *ff = api->neighbours(f.ctx, f.fluid, f.fluid), *fb = api->neighbours(f.ctx, f.fluid, f.bnd);
    cr_assert(ff && fb);
    *sums_left = ff->wsum != NULL && fb->wsum != NULL;
    if (wall_count) {
        *wall_count = malloc((size_t)n * sizeof **wall_count);
        memcpy(*wall_count, fb->count, (size_t)n * sizeof **wall_count);
    }
    float *rho = malloc((size_t)n * sizeof *rho);
    memcpy(rho, floe_attr(f.ctx, f.fluid, "rho", FLOE_F32), (size_t)n * sizeof *rho);
    *n_out = n;
    floe_ctx_destroy(f.ctx);
    return rho;
}


#endif
