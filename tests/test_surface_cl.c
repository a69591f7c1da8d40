/* The surface stages on the OpenCL backend (the cell sorts, the anisotropic
 * kernels' shapes, the grid, the splat and marching cubes on the device)
 * give the mesh of the C path: triangle count within 0.1%, vertices within
 * 1e-4 of the cell size, normals within 1e-4; on a sphere with a slab
 * through it, and on a ball with drops spread over a 20 m box (wide sort
 * keys, blocks far apart), and on two sets surfaced together. A frame
 * without particles gives an empty mesh, a non-finite position an error
 * naming it.
 * Skipped without an OpenCL device. */
#include "cl_fixture.h"
#include "surface_mesh.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const float D = 0.1f;

enum scene { SPHERE_SLAB, DROPS, EMPTY, TWO_SETS, NAN_AT_17 };

static uint32_t lcg = 12345;
static float rnd(void) /* in [0, 1) */
{
    lcg = lcg * 1664525u + 1013904223u;
    return (float)(lcg >> 8) / 16777216.0f;
}

/* the mesh of scene sc by the stage on the backend; NAN_AT_17: returns the
 * stage's error message instead (m untouched) */
static char last_error[512];
static void mesh_on(const char *backend, const char *stage, enum scene sc, tmesh *m)
{
    setenv("FLOE_MODULE_PATH", FLOE_TEST_BUILD_ROOT "/modules", 1);
    floe_sim_def def = floe_sim_default_def();
    def.dim = 3;
    def.spacing = D;
    def.threads = 2;
    def.backend = backend;
    for (int k = 0; k < 3; k++) {
        def.domain_min[k] = sc == DROPS ? -12 : -2;
        def.domain_max[k] = sc == DROPS ? 12 : 2;
    }
    char err[512], dir[1024], path[1100];
    floe_ctx *ctx = floe_ctx_create(&def, err, sizeof err);
    cr_assert_not_null(ctx, "%s", err);
    cr_assert_eq(floe_module_load(ctx, "surface"), FLOE_OK, "%s", floe_ctx_error(ctx));
    floe_set s = floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000);
    if (sc == SPHERE_SLAB || sc == TWO_SETS || sc == NAN_AT_17) {
        const float c[3] = {0.013f, -0.021f, 0.007f};
        cr_assert_gt(floe_fill_sphere(ctx, s, c, 10 * D, NULL), 4000);
        const float lo[3] = {-1.2f, -1.2f, -0.2f}, hi[3] = {1.2f, -0.8f, 0.2f}; /* a slab through it: stretched kernels */
        /* TWO_SETS: the slab is a set of its own (another rest density),
         * surfaced together with the sphere: the device copies them side
         * by side */
        floe_fill_box(ctx, sc == TWO_SETS ? floe_set_create(ctx, "slab", FLOE_SET_FLUID, 500) : s, lo, hi, NULL);
        if (sc == NAN_AT_17)
            ((float *)floe_attr(ctx, s, "x", FLOE_VEC3))[3 * 17 + 2] = NAN;
    } else if (sc == DROPS) {
        const float c[3] = {-9.5f, 3.0f, 8.0f};
        cr_assert_gt(floe_fill_sphere(ctx, s, c, 5 * D, NULL), 400);
        /* drops of 3^3 particles anywhere in a 20 m box */
        lcg = 12345;
        for (int d = 0; d < 60; d++) {
            const float o[3] = {-10 + 20 * rnd(), -10 + 20 * rnd(), -10 + 20 * rnd()};
            const float lo[3] = {o[0], o[1], o[2]}, hi[3] = {o[0] + 2.9f * D, o[1] + 2.9f * D, o[2] + 2.9f * D};
            cr_assert_gt(floe_fill_box(ctx, s, lo, hi, NULL), 0);
        }
    }
    snprintf(dir, sizeof dir, "%s/surface-cl-%s-%ld", FLOE_TEST_BUILD_ROOT "/tests", backend, (long)getpid());
    snprintf(path, sizeof path, "mkdir -p '%s'", dir);
    cr_assert_eq(system(path), 0);
    floe_param_kv kv[] = {{"format", FLOE_PARAM_STRING, {.s = "ply"}}};
    cr_assert_eq(floe_pipeline_add(ctx, stage, kv, 1), FLOE_OK, "%s", floe_ctx_error(ctx));
    if (sc == NAN_AT_17) {
        cr_assert_neq(floe_frame_stages(ctx, dir, 0), FLOE_OK);
        snprintf(last_error, sizeof last_error, "%s", floe_ctx_error(ctx));
        floe_ctx_destroy(ctx);
        return;
    }
    cr_assert_eq(floe_frame_stages(ctx, dir, 0), FLOE_OK, "%s", floe_ctx_error(ctx));
    snprintf(path, sizeof path, "%s/surface.0000.ply", dir);
    cr_assert_eq(tmesh_read_ply(path, m), 0, "%s", path);
    floe_ctx_destroy(ctx);
}

static const float *sort_base;
static int by_x(const void *p, const void *q)
{
    float a = sort_base[3 * *(const uint32_t *)p], b = sort_base[3 * *(const uint32_t *)q];
    return (a > b) - (a < b);
}

/* the share of b's vertices with a vertex of a within tol */
static double matched_share(const tmesh *a, const tmesh *b, double tol)
{
    uint32_t *o = malloc((a->nv + 1) * sizeof *o), hit = 0;
    for (uint32_t i = 0; i < a->nv; i++)
        o[i] = i;
    sort_base = a->v;
    qsort(o, a->nv, sizeof *o, by_x);
    for (uint32_t j = 0; j < b->nv; j++) {
        const float *p = &b->v[3 * j];
        uint32_t lo = 0, hi = a->nv; /* first with x >= p.x - tol */
        while (lo < hi) {
            uint32_t mid = (lo + hi) / 2;
            if (a->v[3 * o[mid]] < p[0] - tol)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (uint32_t k = lo; k < a->nv && a->v[3 * o[k]] <= p[0] + tol; k++) {
            const float *q = &a->v[3 * o[k]];
            if (fabs(q[1] - p[1]) <= tol && fabs(q[2] - p[2]) <= tol) {
                hit++;
                break;
            }
        }
    }
    free(o);
    return b->nv ? (double)hit / b->nv : 1.0;
}

static void agree(const char *stage, enum scene sc)
{
    need_opencl();
    tmesh a, b;
    mesh_on("cpu", stage, sc, &a);
    mesh_on("opencl", stage, sc, &b);
    double dt = fabs((double)a.nt - b.nt) / a.nt, dmax = 0;
    if (a.nv == b.nv)
        for (uint32_t i = 0; i < 3 * a.nv; i++)
            dmax = fmax(dmax, fabs(a.v[i] - b.v[i]));
    /* the device's vertices with one of the host's within 1e-4 cells (all
     * but those around the 0.1% of triangles that may differ) */
    const double share = matched_share(&a, &b, 1e-4 * 0.5 * D);
    printf("%s: %u / %u triangles (cpu / opencl), largest vertex difference %.3g cells, %.4f%% of the vertices "
           "within 1e-4 cells\n",
           stage, a.nt, b.nt, dmax / (0.5 * D), 100 * share);
    cr_assert_gt(a.nt, sc == DROPS ? 500u : 1000u);
    cr_assert_lt(dt, 1e-3, "%s: %u vs %u triangles", stage, a.nt, b.nt);
    cr_assert_gt(share, 0.998, "%s: only %.3f%% of the vertices agree", stage, 100 * share);
    if (a.nt == b.nt)
        cr_assert_eq(a.nv, b.nv, "%s: %u vs %u vertices", stage, a.nv, b.nv);
    if (a.nt == b.nt && a.nv == b.nv) {
        cr_assert_lt(dmax, 1e-4 * 0.5 * D, "%s: vertices differ by %g m", stage, dmax);
        /* the device's normals (summed there) against the host's: unit vectors */
        double nmax = 0;
        for (uint32_t i = 0; i < 3 * a.nv; i++)
            nmax = fmax(nmax, fabs(a.n[i] - b.n[i]));
        printf("%s: largest normal difference %.3g\n", stage, nmax);
        cr_assert_lt(nmax, 1e-4, "%s: normals differ by %g", stage, nmax);
    }
    tmesh_free(&a);
    tmesh_free(&b);
}

Test(surface_cl, mc_agrees_with_the_c_path) { agree("surface.mc", SPHERE_SLAB); }
Test(surface_cl, anisotropic_agrees_with_the_c_path) { agree("surface.anisotropic", SPHERE_SLAB); }
Test(surface_cl, drops_in_a_large_box_agree_with_the_c_path)
{
    agree("surface.mc", DROPS);
    agree("surface.anisotropic", DROPS);
}

Test(surface_cl, two_sets_are_surfaced_together_as_on_the_cpu)
{
    agree("surface.anisotropic", TWO_SETS);
}

Test(surface_cl, a_non_finite_position_is_an_error_naming_the_particle)
{
    need_opencl();
    const char *stages[] = {"surface.mc", "surface.anisotropic"};
    for (int i = 0; i < 2; i++) {
        mesh_on("opencl", stages[i], NAN_AT_17, NULL);
        cr_assert(strstr(last_error, "particle 17 of set 'fluid' has a non-finite position"), "%s: %s", stages[i],
                  last_error);
    }
}

Test(surface_cl, no_particles_give_an_empty_mesh)
{
    need_opencl();
    const char *stages[] = {"surface.mc", "surface.anisotropic"};
    for (int i = 0; i < 2; i++) {
        tmesh m;
        mesh_on("opencl", stages[i], EMPTY, &m);
        cr_assert_eq(m.nt, 0u, "%s: %u triangles", stages[i], m.nt);
        cr_assert_eq(m.nv, 0u, "%s: %u vertices", stages[i], m.nv);
        tmesh_free(&m);
    }
}
