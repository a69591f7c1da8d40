/* The surface module: meshes of a particle sphere (volume, area, closed
 * oriented manifold, Euler characteristic 2), a resting slab (flatness of
 * the anisotropic surface against the isotropic one), a thin sheet, no
 * particles, NaN positions, and the sparse grid's memory. */
#include "surface_mesh.h"

#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <floe/anisotropy.h>
#include <floe/floe.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const float D = 0.1f; /* particle spacing */

/* <floe/anisotropy.h>: A v = lambda v with orthonormal v, sorted; G keeps
 * the kernel volume (det G = 1/H^3) and clamps the axis ratio to k_r */
Test(anisotropy, eigen_decomposition_and_kernel_matrix)
{
    srand(3);
    for (int trial = 0; trial < 200; trial++) {
        double m[6], ev[3], R[3][3];
        for (int k = 0; k < 6; k++)
            m[k] = 2.0 * rand() / RAND_MAX - 1.0;
        const double A[3][3] = {{m[0], m[1], m[2]}, {m[1], m[3], m[4]}, {m[2], m[4], m[5]}};
        floe_sym3_eigen(m, ev, R);
        cr_assert(ev[0] >= ev[1] && ev[1] >= ev[2]);
        for (int k = 0; k < 3; k++)
            for (int r = 0; r < 3; r++) {
                double av = A[r][0] * R[k][0] + A[r][1] * R[k][1] + A[r][2] * R[k][2];
                cr_assert_lt(fabs(av - ev[k] * R[k][r]), 1e-12, "trial %d: A v != lambda v", trial);
                double dot = R[k][0] * R[r][0] + R[k][1] * R[r][1] + R[k][2] * R[r][2];
                cr_assert_lt(fabs(dot - (k == r)), 1e-12, "trial %d: eigenvectors not orthonormal", trial);
            }
    }
    /* a flat neighbourhood (variance 1, 1, 0.01 along x, y, z) */
    const floe_aniso_def d = {0.2, 4, 25};
    const double cov[6] = {1, 0, 0, 1, 0, 0.01};
    double G[9];
    double ax = floe_aniso_matrix(&d, cov, 30, G);
    double det = G[0] * (G[4] * G[8] - G[5] * G[7]) - G[1] * (G[3] * G[8] - G[5] * G[6]) +
                 G[2] * (G[3] * G[7] - G[4] * G[6]);
    cr_assert_lt(fabs(det * d.H * d.H * d.H - 1), 1e-12, "det G H^3 = %g", det * d.H * d.H * d.H);
    cr_assert_lt(fabs(G[8] / G[0] - 4), 1e-12, "axis ratio %g, clamped to k_r = 4", G[8] / G[0]);
    cr_assert_lt(fabs(ax - cbrt(4.0)), 1e-12, "longest semi-axis %g H", ax);
    cr_assert_eq(floe_aniso_matrix(&d, cov, 24, G), 1.0, "too few neighbours: isotropic");
    cr_assert_lt(fabs(G[0] * d.H - 1) + fabs(G[1]) + fabs(G[8] * d.H - 1), 1e-15);
}

static floe_ctx *make_ctx(float lo, float hi)
{
    setenv("FLOE_MODULE_PATH", FLOE_TEST_BUILD_ROOT "/modules", 1);
    floe_sim_def def = floe_sim_default_def();
    def.dim = 3;
    def.spacing = D;
    def.threads = 2;
    for (int k = 0; k < 3; k++) {
        def.domain_min[k] = lo;
        def.domain_max[k] = hi;
    }
    char err[512];
    floe_ctx *ctx = floe_ctx_create(&def, err, sizeof err);
    cr_assert_not_null(ctx, "%s", err);
    cr_assert_eq(floe_module_load(ctx, "surface"), FLOE_OK, "%s", floe_ctx_error(ctx));
    return ctx;
}

static void out_dir(char *buf, size_t len, const char *tag)
{
    snprintf(buf, len, "%s/surface-%s-%ld", FLOE_TEST_BUILD_ROOT "/tests", tag, (long)getpid());
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", buf, buf);
    cr_assert_eq(system(cmd), 0);
}

/* surface the context's particles once (frame 0) with `stage` and its
 * mesher ("cubes", "tetrahedra") and read the PLY back */
static void surface_with(floe_ctx *ctx, const char *stage, const char *mesher, const char *tag, tmesh *m)
{
    char dir[1024], path[1100];
    out_dir(dir, sizeof dir, tag);
    floe_pipeline_clear(ctx);
    floe_param_kv kv[] = {{"format", FLOE_PARAM_STRING, {.s = "ply"}}, {"mesher", FLOE_PARAM_STRING, {.s = mesher}}};
    cr_assert_eq(floe_pipeline_add(ctx, stage, kv, 2), FLOE_OK, "%s", floe_ctx_error(ctx));
    cr_assert_eq(floe_frame_stages(ctx, dir, 0), FLOE_OK, "%s", floe_ctx_error(ctx));
    snprintf(path, sizeof path, "%s/surface.0000.ply", dir);
    cr_assert_eq(tmesh_read_ply(path, m), 0, "cannot read %s", path);
}

static void surface(floe_ctx *ctx, const char *stage, const char *tag, tmesh *m)
{
    surface_with(ctx, stage, "cubes", tag, m);
}

static void check_closed_sphere(const tmesh *m, const char *what)
{
    uint64_t edges;
    long bad = tmesh_bad_edges(m, &edges);
    long euler = (long)m->nv - (long)edges + (long)m->nt;
    printf("%s: %u vertices, %llu edges, %u triangles, Euler %ld, %ld bad edges\n", what, m->nv,
           (unsigned long long)edges, m->nt, euler, bad);
    cr_assert_gt(m->nt, 1000u, "%s: %u triangles", what, m->nt);
    cr_assert_eq(bad, 0, "%s: %ld edges not shared by exactly two triangles in opposite directions", what, bad);
    cr_assert_eq(euler, 2, "%s: Euler characteristic %ld", what, euler);
    cr_assert_eq(tmesh_components(m), 1u, "%s: more than one piece", what);
}

static void sphere_case(const char *stage, const char *mesher, double vol_tol)
{
    floe_ctx *ctx = make_ctx(-3, 3);
    floe_set s = floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000);
    const float R = 20 * D, c[3] = {0.013f, -0.021f, 0.007f}; /* off the lattice's symmetry */
    cr_assert_gt(floe_fill_sphere(ctx, s, c, R, NULL), 30000);
    tmesh m;
    surface_with(ctx, stage, mesher, "sphere", &m);
    char what[128];
    snprintf(what, sizeof what, "%s (%s)", stage, mesher);
    check_closed_sphere(&m, what);
    double vol, area, v0 = 4.0 / 3.0 * FLOE_PI * R * R * R, a0 = 4 * FLOE_PI * R * R;
    tmesh_volume_area(&m, &vol, &area);
    printf("%s: volume %.5f (sphere %.5f, %+.2f%%), area %.4f (%.4f, %+.2f%%)\n", what, vol, v0,
           100 * (vol / v0 - 1), area, a0, 100 * (area / a0 - 1));
    cr_assert_lt(fabs(vol / v0 - 1), vol_tol, "%s: volume %g vs %g", stage, vol, v0);
    cr_assert_lt(fabs(area / a0 - 1), 0.05, "%s: area %g vs %g", stage, area, a0);
    tmesh_free(&m);
    floe_ctx_destroy(ctx);
}

Test(surface, sphere_isotropic) { sphere_case("surface.mc", "cubes", 0.04); }
Test(surface, sphere_anisotropic) { sphere_case("surface.anisotropic", "cubes", 0.02); }
Test(surface, sphere_anisotropic_tetrahedra) { sphere_case("surface.anisotropic", "tetrahedra", 0.02); }

/* Particles thrown anywhere in a box: a field full of bubbles, drops,
 * thin bridges and saddles, so the cells meet every corner pattern,
 * ambiguous faces included. Both meshers, both kernels: every edge in
 * exactly two triangles in opposite directions, and every piece a closed
 * orientable surface (Euler characteristic even). */
Test(surface, random_cloud_is_a_closed_manifold)
{
    floe_ctx *ctx = make_ctx(-1, 3);
    floe_set s = floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000);
    const float lo[3] = {0, 0, 0}, hi[3] = {14 * D, 14 * D, 14 * D};
    cr_assert_eq(floe_fill_box(ctx, s, lo, hi, NULL), 14 * 14 * 14);
    /* a third of the fluid's density, anywhere: clusters above the iso value */
    float *x = floe_attr(ctx, s, "x", FLOE_VEC3);
    srand(5);
    for (uint32_t i = 0; i < 3 * floe_set_size(ctx, s); i++)
        x[i] = 20 * D * (float)rand() / (float)RAND_MAX;
    const char *stage[2] = {"surface.mc", "surface.anisotropic"}, *mesher[2] = {"cubes", "tetrahedra"};
    uint32_t nt[2][2];
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++) {
            tmesh m;
            surface_with(ctx, stage[a], mesher[b], "cloud", &m);
            uint64_t edges;
            long bad = tmesh_bad_edges(&m, &edges), euler = (long)m.nv - (long)edges + (long)m.nt;
            uint32_t pieces = tmesh_components(&m);
            printf("cloud, %s (%s): %u triangles, %u pieces, Euler %ld, %ld bad edges\n", stage[a], mesher[b], m.nt,
                   pieces, euler, bad);
            cr_assert_gt(m.nt, 1000u);
            cr_assert_eq(bad, 0, "%s (%s): %ld edges not shared by two opposite triangles", stage[a], mesher[b], bad);
            cr_assert_eq(euler % 2, 0, "%s (%s): Euler characteristic %ld", stage[a], mesher[b], euler);
            nt[a][b] = m.nt;
            tmesh_free(&m);
        }
    for (int a = 0; a < 2; a++)
        cr_assert_lt(nt[a][0], nt[a][1], "%s: cubes %u triangles, tetrahedra %u", stage[a], nt[a][0], nt[a][1]);
    floe_ctx_destroy(ctx);
}

/* mean angle (deg) of the vertex normals from +y on the slab's top face,
 * away from its edges */
static double top_deviation(const tmesh *m, const float top[3])
{
    double sum = 0;
    long n = 0;
    for (uint32_t i = 0; i < m->nv; i++) {
        const float *v = &m->v[3 * i];
        if (v[1] < top[1] - D || v[0] < 6 * D || v[0] > top[0] - 6 * D || v[2] < 6 * D || v[2] > top[2] - 6 * D)
            continue;
        double ny = m->n[3 * i + 1];
        sum += acos(ny > 1 ? 1 : ny < -1 ? -1 : ny) * 180 / FLOE_PI;
        n++;
    }
    cr_assert_gt(n, 100, "only %ld vertices on the top face", n);
    return sum / (double)n;
}

Test(surface, slab_flatness)
{
    floe_ctx *ctx = make_ctx(-1, 5);
    floe_set s = floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000);
    const float lo[3] = {0, 0, 0}, hi[3] = {30 * D, 8 * D, 30 * D};
    cr_assert_gt(floe_fill_box(ctx, s, lo, hi, NULL), 0);
    /* a resting surface is not a perfect lattice: jitter the particles */
    float *x = floe_attr(ctx, s, "x", FLOE_VEC3);
    srand(7);
    for (uint32_t i = 0; i < 3 * floe_set_size(ctx, s); i++)
        x[i] += 0.05f * D * (2.0f * rand() / (float)RAND_MAX - 1.0f);
    tmesh mi, ma;
    surface(ctx, "surface.mc", "slab-mc", &mi);
    surface(ctx, "surface.anisotropic", "slab-an", &ma);
    double di = top_deviation(&mi, hi), da = top_deviation(&ma, hi);
    printf("slab: mean normal deviation from vertical: isotropic %.3f deg, anisotropic %.3f deg\n", di, da);
    cr_assert_lt(da, 3.0, "anisotropic top face deviates %.3f deg", da);
    cr_assert_gt(di, 1.2 * da, "isotropic %.3f deg is not bumpier than anisotropic %.3f deg", di, da);
    tmesh_free(&mi);
    tmesh_free(&ma);
    floe_ctx_destroy(ctx);
}

Test(surface, thin_sheet_stays_connected)
{
    floe_ctx *ctx = make_ctx(-1, 5);
    floe_set s = floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000);
    const float lo[3] = {0, 0, 0}, hi[3] = {30 * D, 2 * D, 30 * D}; /* two particles thick */
    cr_assert_eq(floe_fill_box(ctx, s, lo, hi, NULL), 30 * 2 * 30);
    tmesh m;
    surface(ctx, "surface.anisotropic", "sheet", &m);
    uint64_t edges;
    long bad = tmesh_bad_edges(&m, &edges);
    uint32_t comp = tmesh_components(&m);
    double vol, area;
    tmesh_volume_area(&m, &vol, &area);
    printf("sheet: %u triangles, %u pieces, area %.3f (two faces %.3f)\n", m.nt, comp, area, 2 * 9 * D * D * 100.0);
    cr_assert_eq(bad, 0);
    cr_assert_eq(comp, 1u, "the sheet broke into %u pieces", comp);
    cr_assert_eq((long)m.nv - (long)edges + (long)m.nt, 2, "the sheet has holes");
    cr_assert_gt(area, 0.9 * 2 * (30 * D) * (30 * D), "area %g: the sheet has holes", area);
    tmesh_free(&m);
    floe_ctx_destroy(ctx);
}

Test(surface, no_particles, .init = cr_redirect_stderr)
{
    floe_ctx *ctx = make_ctx(-1, 1);
    floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000);
    tmesh m;
    surface(ctx, "surface.anisotropic", "empty", &m);
    cr_assert_eq(m.nv, 0u);
    cr_assert_eq(m.nt, 0u);
    tmesh_free(&m);
    floe_ctx_destroy(ctx);
    fflush(stderr);
    cr_assert_stderr_eq_str("floe: info: surface.anisotropic: frame 0: no particles, empty mesh\n");
}

Test(surface, nan_position_is_an_error)
{
    floe_ctx *ctx = make_ctx(-1, 3);
    floe_set s = floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000);
    const float lo[3] = {0, 0, 0}, hi[3] = {5 * D, 5 * D, 5 * D};
    floe_fill_box(ctx, s, lo, hi, NULL);
    float *x = floe_attr(ctx, s, "x", FLOE_VEC3);
    x[3 * 17 + 1] = NAN;
    char dir[1024];
    out_dir(dir, sizeof dir, "nan");
    cr_assert_eq(floe_pipeline_add(ctx, "surface.mc", NULL, 0), FLOE_OK, "%s", floe_ctx_error(ctx));
    cr_assert_neq(floe_frame_stages(ctx, dir, 0), FLOE_OK);
    const char *e = floe_ctx_error(ctx);
    cr_assert(strstr(e, "particle 17 of set 'fluid' has a non-finite position"), "message: %s", e);
    char path[1100];
    snprintf(path, sizeof path, "%s/surface.0000.obj", dir);
    cr_assert_neq(access(path, F_OK), 0, "a mesh was written");
    floe_ctx_destroy(ctx);
}

/* 1000 particles in a 100 m domain at 0.5-spacing cells (a dense grid
 * would hold 4e12 points): a ball of 500 and 500 drops anywhere; through
 * floe_run, so the peak lands in the run record */
Test(surface, sparse_grid_memory)
{
    floe_ctx *ctx = make_ctx(0, 100);
    floe_set s = floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000);
    const float c[3] = {50, 50, 50};
    cr_assert_gt(floe_fill_sphere(ctx, s, c, 0.49f, NULL), 400);
    srand(11);
    while (floe_set_size(ctx, s) < 1000) { /* one particle per spacing-wide box */
        float p[3], q[3];
        for (int k = 0; k < 3; k++) {
            p[k] = D * floorf(999.0f * rand() / (float)RAND_MAX);
            q[k] = p[k] + D;
        }
        cr_assert_eq(floe_fill_box(ctx, s, p, q, NULL), 1);
    }
    printf("splash: %u particles\n", floe_set_size(ctx, s));
    char dir[1024], path[1100];
    out_dir(dir, sizeof dir, "sparse");
    cr_assert_eq(floe_pipeline_add(ctx, "surface.anisotropic", NULL, 0), FLOE_OK, "%s", floe_ctx_error(ctx));
    floe_run_def r = floe_run_default_def();
    r.frames = 1;
    r.progress = 0;
    r.out_dir = dir;
    cr_assert_eq(floe_run(ctx, &r, NULL), FLOE_OK, "%s", floe_ctx_error(ctx));
    snprintf(path, sizeof path, "%s/run.yaml", dir);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    char line[512];
    double peak = -1;
    while (fgets(line, sizeof line, f)) /* stats: {surface_peak_mb: {mean: M, max: X}, ...} */
        if (strstr(line, "surface_peak_mb: {mean: "))
            cr_assert_eq(sscanf(strstr(line, "surface_peak_mb: {mean: "), "surface_peak_mb: {mean: %*g, max: %lg", &peak), 1);
    fclose(f);
    printf("splash: peak %.2f MB\n", peak);
    cr_assert_gt(peak, 0, "no surface_peak_mb in %s", path);
    cr_assert_lt(peak, 100, "peak %.1f MB", peak);
    snprintf(path, sizeof path, "%s/surface.0001.obj", dir);
    cr_assert_eq(access(path, F_OK), 0, "no mesh %s", path);
    floe_ctx_destroy(ctx);
}

/* floe_surface_dir (`floe surface OUT_DIR`) on a run's particle frames gives
 * the mesh the stage gave during the run */
Test(surface, offline_matches_the_run)
{
    floe_ctx *ctx = make_ctx(-1, 3);
    floe_set s = floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000);
    const float c[3] = {1, 1, 1};
    cr_assert_gt(floe_fill_sphere(ctx, s, c, 6 * D, NULL), 500);
    char dir[1024], path[1100];
    out_dir(dir, sizeof dir, "offline");
    floe_param_kv kv[] = {{"name", FLOE_PARAM_STRING, {.s = "online"}}, {"format", FLOE_PARAM_STRING, {.s = "ply"}}};
    cr_assert_eq(floe_pipeline_add(ctx, "surface.mc", kv, 2), FLOE_OK, "%s", floe_ctx_error(ctx));
    floe_run_def r = floe_run_default_def();
    r.frames = 1;
    r.progress = 0;
    r.out_dir = dir;
    cr_assert_eq(floe_run(ctx, &r, NULL), FLOE_OK, "%s", floe_ctx_error(ctx));
    floe_ctx_destroy(ctx);
    char err[1024];
    floe_surface_opts so = {.method = "mc", .cell = 0.5};
    cr_assert_eq(floe_surface_dir(dir, &so, err, sizeof err), FLOE_OK, "%s", err);
    for (int f = 0; f <= 1; f++) {
        tmesh a, b;
        snprintf(path, sizeof path, "%s/online.%04d.ply", dir, f);
        cr_assert_eq(tmesh_read_ply(path, &a), 0, "%s", path);
        snprintf(path, sizeof path, "%s/surface.%04d.ply", dir, f);
        cr_assert_eq(tmesh_read_ply(path, &b), 0, "%s", path);
        cr_assert_gt(a.nt, 100u);
        cr_assert_eq(a.nt, b.nt, "frame %d: %u triangles during the run, %u offline", f, a.nt, b.nt);
        cr_assert_eq(memcmp(a.v, b.v, (size_t)a.nv * 3 * sizeof *a.v), 0, "frame %d: vertices differ", f);
        tmesh_free(&a);
        tmesh_free(&b);
    }
}
