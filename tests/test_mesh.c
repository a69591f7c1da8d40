/* Meshes from files (core/src/mesh*.c): every format reads (binary STL and
 * ASCII PLY written here, the shared OBJ models, the Collada teapot), the
 * topology and the divergence-theorem volume are right, placement works;
 * boundary particles sampled on a surface have the density and the Akinci
 * volumes of the core's boxes; fluid filling a mesh matches fluid_box and
 * the sphere's volume; a tank walled by a mesh holds water like a
 * boundary_box one; bad input gives messages naming the file. */
#include <criterion/criterion.h>
#include <criterion/logging.h>

#include "mesh_fixture.h"
#include "mesh_internal.h"
#include "sim_fixture.h"

#include <sys/stat.h>

static char tmpdir[256];

static void setup(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/floe_test_mesh.XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir), "mkdtemp: %s", strerror(errno));
}

static void teardown(void)
{
    const char *names[] = {"cube.stl", "cube.ply", "cube.obj", "sphere.obj", "garbage.stl", "empty.obj",
                           "open.obj", "wall.obj", "tank.obj", "flipped.obj", "scene.lua", "big.stl"};
    char p[512];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", tmpdir, names[i]);
        unlink(p);
    }
    rmdir(tmpdir);
}

TestSuite(mesh, .init = setup, .fini = teardown);

static const char *tmp(const char *name)
{
    static char p[4][512];
    static int next;
    char *s = p[next++ & 3];
    snprintf(s, sizeof p[0], "%s/%s", tmpdir, name);
    return s;
}

static shape S; /* large: static */

/* ---- loading ------------------------------------------------------------ */

static void check_cube(floe_mesh *m, const float lo[3], const float hi[3])
{
    double L[3] = {hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]};
    cr_assert_eq(m->nverts, 8);
    cr_assert_eq(m->ntris, 12);
    cr_assert(floe_mesh_is_closed(m));
    cr_assert_float_eq(m->volume, L[0] * L[1] * L[2], 1e-6 * L[0] * L[1] * L[2]);
    cr_assert_float_eq(m->area, 2 * (L[0] * L[1] + L[1] * L[2] + L[0] * L[2]), 1e-6 * m->area);
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(m->min[k], lo[k]);
        cr_assert_eq(m->max[k], hi[k]);
    }
}

Test(mesh, binary_stl_cube)
{
    const float lo[3] = {-0.5f, 0.25f, 1}, hi[3] = {0.5f, 0.75f, 1.5f};
    shape_box(&S, lo, hi, 0);
    write_stl(tmp("cube.stl"), &S);
    floe_mesh *m = load_mesh(tmp("cube.stl"));
    check_cube(m, lo, hi); /* STL repeats each corner per triangle: welded */
    cr_assert_eq(m->reversed, 0);
    floe_mesh_destroy(m);
}

Test(mesh, ascii_ply_cube)
{
    const float lo[3] = {0, 0, 0}, hi[3] = {2, 1, 0.5f};
    shape_box(&S, lo, hi, 0);
    write_ply(tmp("cube.ply"), &S);
    floe_mesh *m = load_mesh(tmp("cube.ply"));
    check_cube(m, lo, hi);
    floe_mesh_destroy(m);
}

Test(mesh, inside_out_cube_is_reversed)
{
    const float lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
    shape_box(&S, lo, hi, 0);
    for (int i = 0; i < S.nt; i++) {
        uint32_t t = S.t[3 * i + 1];
        S.t[3 * i + 1] = S.t[3 * i + 2];
        S.t[3 * i + 2] = t;
    }
    write_obj(tmp("flipped.obj"), &S);
    floe_mesh *m = load_mesh(tmp("flipped.obj"));
    cr_assert(floe_mesh_is_closed(m));
    cr_assert_eq(m->reversed, 1);
    cr_assert_float_eq(m->volume, 1, 1e-6);
    floe_mesh_destroy(m);
}

Test(mesh, sphere_volume_by_divergence_theorem)
{
    const double r = 0.3, c[3] = {0.1, 0.2, -0.3};
    shape_sphere(&S, r, c, 5);
    write_obj(tmp("sphere.obj"), &S);
    floe_mesh *m = load_mesh(tmp("sphere.obj"));
    cr_assert_eq(m->ntris, 20480);
    cr_assert(floe_mesh_is_closed(m));
    double v = 4.0 / 3 * M_PI * r * r * r, a = 4 * M_PI * r * r;
    cr_log_info("icosphere (5 levels): volume %.7g vs 4/3 pi r^3 = %.7g (%.4f%%), area %.7g vs %.7g (%.4f%%)", m->volume,
                v, 100 * (m->volume / v - 1), m->area, a, 100 * (m->area / a - 1));
    /* the inscribed polyhedron's deficit is below 0.1% at this level */
    cr_assert(m->volume < v && m->volume > 0.999 * v, "volume %.7g vs %.7g", m->volume, v);
    cr_assert(m->area < a && m->area > 0.999 * a);
    floe_mesh_destroy(m);
}

Test(mesh, bunny_is_closed_with_a_finite_volume)
{
    floe_mesh *m = load_mesh(model("bunny_10k.obj"));
    cr_log_info("bunny: %u vertices, %u triangles, volume %.6g, area %.6g", m->nverts, m->ntris, m->volume, m->area);
    cr_assert_eq(m->nverts, 5002);
    cr_assert_eq(m->ntris, 10000);
    cr_assert_eq(m->open_edges + m->nonmanifold_edges + m->misoriented_edges, 0, "every edge shared twice");
    cr_assert(isfinite(m->volume) && m->volume > 0);
    /* inside its box, and more than a tenth of it */
    double box = 1;
    for (int k = 0; k < 3; k++)
        box *= m->max[k] - m->min[k];
    cr_assert(m->volume < box && m->volume > 0.1 * box);
    /* every edge used by two triangles, in opposite directions */
    mesh_edge *e = NULL;
    long ne = mesh_edges(m, &e);
    cr_assert_eq(ne, 15000); /* Euler: V - E + F = 2 */
    for (long i = 0; i < ne; i++)
        cr_assert(e[i].uses == 2 && e[i].forward == 1);
    free(e);
    floe_mesh_destroy(m);
}

Test(mesh, dragon_reads_and_its_pinched_edges_are_reported)
{
    floe_mesh *m = load_mesh(model("dragon_50k.obj"));
    char what[256];
    floe_mesh_describe(m, what, sizeof what);
    cr_log_info("dragon: %u vertices, %u triangles, %s", m->nverts, m->ntris, what);
    cr_assert_eq(m->ntris, 50000);
    cr_assert_eq(m->open_edges, 0);
    cr_assert_eq(m->nonmanifold_edges, 16); /* four triangles at each, two each way */
    cr_assert_not_null(strstr(what, "16 edges shared by more than two triangles"), "%s", what);
    floe_mesh_destroy(m);
}

Test(mesh, collada_teapots_and_one_object)
{
    struct stat st;
    cr_assert_eq(stat(TEAPOT, &st), 0, "%s: %s (Debian package assimp-testmodels)", TEAPOT, strerror(errno));
    floe_mesh *all = load_mesh(TEAPOT);
    floe_mesh_def def = floe_mesh_default_def();
    def.file = TEAPOT;
    def.object = "Teapot01";
    char err[1024], what[256];
    floe_mesh *one = floe_mesh_load(&def, err, sizeof err);
    cr_assert_not_null(one, "%s", err);
    floe_mesh_describe(all, what, sizeof what);
    cr_log_info("teapots.DAE: %u triangles (%s); Teapot01: %u", all->ntris, what, one->ntris);
    cr_assert_eq(all->ntris, 2976);
    cr_assert_eq(3 * one->ntris, all->ntris);
    /* the Utah teapot has holes (lid and spout): reported, with the count */
    cr_assert(!floe_mesh_is_closed(all));
    cr_assert_eq(all->open_edges, 3 * one->open_edges);
    cr_assert_not_null(strstr(what, "boundary edges"), "%s", what);
    /* the Collada unit (1 cm) and Z_UP are applied: y up, under a metre */
    cr_assert(one->max[1] - one->min[1] > 0.1 && one->max[1] - one->min[1] < 1);
    def.object = "Teacup";
    cr_assert_null(floe_mesh_load(&def, err, sizeof err));
    cr_assert_not_null(strstr(err, "no object named 'Teacup'"), "%s", err);
    floe_mesh_destroy(one);
    floe_mesh_destroy(all);
}

Test(mesh, placement_scale_rotation_translation)
{
    const float lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
    shape_box(&S, lo, hi, 0);
    write_stl(tmp("cube.stl"), &S);
    floe_mesh_def def = floe_mesh_default_def();
    def.file = tmp("cube.stl");
    def.scale[0] = 2, def.scale[1] = 3, def.scale[2] = 4;
    const float deg[3] = {0, 90, 0}, axis[3] = {0, 2, 0};
    floe_rotation_euler(def.rotation, deg);
    float R2[3][3];
    floe_rotation_axis_angle(R2, axis, 90);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            cr_assert_float_eq(def.rotation[i][j], R2[i][j], 1e-6);
    def.translation[0] = 10, def.translation[1] = 20, def.translation[2] = 30;
    char err[1024];
    floe_mesh *m = floe_mesh_load(&def, err, sizeof err);
    cr_assert_not_null(m, "%s", err);
    /* 90 degrees about y: x -> -z, z -> x, so the box [0,2]x[0,3]x[0,4]
     * becomes [0,4]x[0,3]x[-2,0] */
    const float want_lo[3] = {10, 20, 28}, want_hi[3] = {14, 23, 30};
    for (int k = 0; k < 3; k++) {
        cr_assert_float_eq(m->min[k], want_lo[k], 1e-5, "axis %d: %g", k, m->min[k]);
        cr_assert_float_eq(m->max[k], want_hi[k], 1e-5, "axis %d: %g", k, m->max[k]);
    }
    cr_assert_float_eq(m->volume, 24, 1e-4);
    cr_assert(floe_mesh_is_closed(m) && !m->reversed);
    floe_mesh_destroy(m);
    /* Euler order: x first, then y, then z (fixed axes) */
    const float xz[3] = {90, 0, 90};
    floe_rotation_euler(def.rotation, xz);
    /* y -> z by Rx, then z stays under Rz: the unit y axis ends on z */
    cr_assert_float_eq(def.rotation[2][1], 1, 1e-6);
    /* x stays under Rx, then Rz takes it to y */
    cr_assert_float_eq(def.rotation[1][0], 1, 1e-6);
}

/* ---- boundary particles on a surface ------------------------------------ */

static floe_set boundary_of(floe_ctx *ctx, const char *file, const floe_mesh_use *use)
{
    floe_set b = floe_set_create(ctx, "boundary", FLOE_SET_BOUNDARY, 0);
    floe_mesh *m = load_mesh(file);
    long n = floe_boundary_mesh(ctx, b, m, use);
    cr_assert(n > 0, "%s", floe_ctx_error(ctx));
    floe_mesh_destroy(m);
    return b;
}

/* the smallest distance between two particles of a set (brute force) */
static double min_gap(const float *x, uint32_t n)
{
    double best = INFINITY;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = i + 1; j < n; j++) {
            double e[3] = {x[3 * i] - x[3 * j], x[3 * i + 1] - x[3 * j + 1], x[3 * i + 2] - x[3 * j + 2]};
            best = fmin(best, e[0] * e[0] + e[1] * e[1] + e[2] * e[2]);
        }
    return sqrt(best);
}

Test(mesh, cube_surface_density_is_one_per_spacing_squared)
{
    const float d = 0.02f, lo[3] = {0, 0, 0}, hi[3] = {0.4f, 0.3f, 0.2f}, dlo[3] = {-1, -1, -1}, dhi[3] = {1, 1, 1};
    shape_box(&S, lo, hi, 0);
    write_stl(tmp("cube.stl"), &S);
    floe_ctx *ctx = mesh_sim(d, dlo, dhi, NULL);
    floe_set b = boundary_of(ctx, tmp("cube.stl"), NULL);
    uint32_t n = floe_set_size(ctx, b);
    const float *x = floe_attr(ctx, b, "x", FLOE_VEC3);
    double area = 2 * (0.4 * 0.3 + 0.3 * 0.2 + 0.4 * 0.2), want = area / (d * d), gap = min_gap(x, n);
    cr_log_info("box 0.4 x 0.3 x 0.2 at d = %g: %u particles, area / d^2 = %.0f (%+.2f%%), closest pair %.3f d", d, n,
                want, 100 * (n / want - 1), gap / d);
    cr_assert(fabs(n / want - 1) < 0.03, "%u particles for %.0f", n, want);
    cr_assert(gap >= 0.5 * d * (1 - 1e-5), "two samples %.3f d apart", gap / d);
    /* on the surface: each particle on one of the faces */
    for (uint32_t i = 0; i < n; i++) {
        double off = INFINITY;
        for (int k = 0; k < 3; k++)
            off = fmin(off, fmin(fabs(x[3 * i + k] - lo[k]), fabs(x[3 * i + k] - hi[k])));
        cr_assert(off < 1e-6, "particle %u is %g off the faces", i, off);
    }
    floe_ctx_destroy(ctx);
}

/* Boundary volumes of particles at |x - 0.25|, |z - 0.25| < 0.1 on the floor */
static void floor_volumes(floe_ctx *ctx, floe_set b, float y, double *mean, double *spread, int *count)
{
    cr_assert_eq(floe_boundary_volumes(ctx), FLOE_OK, "%s", floe_ctx_error(ctx));
    const float *x = floe_attr(ctx, b, "x", FLOE_VEC3), *V = floe_attr(ctx, b, "V", FLOE_F32);
    double s = 0, s2 = 0;
    int n = 0;
    for (uint32_t i = 0; i < floe_set_size(ctx, b); i++)
        if (fabsf(x[3 * i + 1] - y) < 1e-5f && fabsf(x[3 * i] - 0.25f) < 0.1f && fabsf(x[3 * i + 2] - 0.25f) < 0.1f) {
            s += V[i];
            s2 += (double)V[i] * V[i];
            n++;
        }
    cr_assert(n > 0);
    *mean = s / n;
    *spread = sqrt(fmax(s2 / n - *mean * *mean, 0)) / *mean;
    *count = n;
}

Test(mesh, akinci_volumes_of_a_mesh_wall_match_a_boundary_box)
{
    const float d = 0.02f, dlo[3] = {-1, -1, -1}, dhi[3] = {1, 1, 1};
    /* a boundary_box floor: one layer d/2 below y = 0 */
    floe_ctx *ref = mesh_sim(d, dlo, dhi, NULL);
    floe_set rb = floe_set_create(ref, "boundary", FLOE_SET_BOUNDARY, 0);
    const float lo[3] = {0, 0, 0}, hi[3] = {0.5f, 0.2f, 0.5f};
    cr_assert(floe_boundary_box(ref, rb, lo, hi, 1, FLOE_OPEN_TOP) > 0);
    /* the same floor as a square mesh of two triangles */
    floe_ctx *ctx = mesh_sim(d, dlo, dhi, NULL);
    shape_square(&S, -0.5f * d, 0.5f + 0.5f * d, -0.5f * d, 0.5f + 0.5f * d, -0.5f * d);
    write_obj(tmp("wall.obj"), &S);
    floe_set b = boundary_of(ctx, tmp("wall.obj"), NULL);
    double mr, sr, mm, sm;
    int nr, nm;
    floor_volumes(ref, rb, -0.5f * d, &mr, &sr, &nr);
    floor_volumes(ctx, b, -0.5f * d, &mm, &sm, &nm);
    cr_log_info("floor centre: boundary_box V = %.4g d^3 (%d particles, spread %.2f%%), mesh V = %.4g d^3 (%d, spread "
                "%.2f%%): %+.2f%%", mr / (d * d * d), nr, 100 * sr, mm / (d * d * d), nm, 100 * sm, 100 * (mm / mr - 1));
    cr_assert(fabs(mm / mr - 1) < 0.03, "mesh wall V %.4g vs boundary_box %.4g", mm, mr);
    cr_assert(sm < 0.06, "mesh wall volumes spread by %.1f%%", 100 * sm);
    floe_ctx_destroy(ref);
    floe_ctx_destroy(ctx);
}

/* ---- fluid inside a mesh -------------------------------------------------- */

Test(mesh, fluid_mesh_of_a_cube_equals_fluid_box)
{
    const float d = 0.02f, lo[3] = {0.1f, 0.2f, -0.1f}, hi[3] = {0.5f, 0.5f, 0.1f}, dlo[3] = {-1, -1, -1},
                dhi[3] = {1, 1, 1};
    shape_box(&S, lo, hi, 0);
    write_ply(tmp("cube.ply"), &S);
    floe_ctx *ctx = mesh_sim(d, dlo, dhi, NULL);
    floe_set a = floe_set_create(ctx, "box", FLOE_SET_FLUID, 1000), f = floe_set_create(ctx, "mesh", FLOE_SET_FLUID, 1000);
    long nb = floe_fill_box(ctx, a, lo, hi, NULL);
    floe_mesh *m = load_mesh(tmp("cube.ply"));
    const float v0[3] = {1, 2, 3};
    long nm = floe_fill_mesh(ctx, f, m, NULL, v0);
    floe_mesh_destroy(m);
    cr_log_info("fluid_box %ld, fluid_mesh %ld", nb, nm);
    cr_assert_eq(nb, 20 * 15 * 10);
    cr_assert_eq(nm, nb, "%s", floe_ctx_error(ctx));
    /* the same lattice points, in the same order, with v0 and rest mass */
    const float *xa = floe_attr(ctx, a, "x", FLOE_VEC3), *xm = floe_attr(ctx, f, "x", FLOE_VEC3);
    const float *v = floe_attr(ctx, f, "v", FLOE_VEC3), *mass = floe_attr(ctx, f, "m", FLOE_F32);
    for (long i = 0; i < 3 * nb; i++)
        cr_assert_eq(xa[i], xm[i]);
    cr_assert(v[0] == 1 && v[1] == 2 && v[2] == 3);
    cr_assert_float_eq(mass[0], 1000 * d * d * d, 1e-9);
    floe_ctx_destroy(ctx);
}

Test(mesh, fluid_mesh_of_a_sphere_fills_its_volume)
{
    const float d = 0.005f, dlo[3] = {-1, -1, -1}, dhi[3] = {1, 1, 1};
    const double r = 0.3, c[3] = {0.0123, -0.0071, 0.0042};
    shape_sphere(&S, r, c, 5);
    write_obj(tmp("sphere.obj"), &S);
    floe_ctx *ctx = mesh_sim(d, dlo, dhi, NULL);
    floe_set f = floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000);
    floe_mesh *m = load_mesh(tmp("sphere.obj"));
    long n = floe_fill_mesh(ctx, f, m, NULL, NULL);
    cr_assert(n > 0, "%s", floe_ctx_error(ctx));
    /* lattice points of the ball r - d/2 (those at least d/2 inside) */
    double whole = 4.0 / 3 * M_PI * r * r * r / (d * d * d), inner = whole * pow(1 - 0.5 * d / r, 3);
    cr_log_info("sphere r = %g at d = %g: %ld particles; (4/3 pi r^3) / d^3 = %.0f (%+.2f%%); the ball of r - d/2: %.0f "
                "(%+.2f%%)", r, d, n, whole, 100 * (n / whole - 1), inner, 100 * (n / inner - 1));
    cr_assert(fabs(n / whole - 1) < 0.03);
    cr_assert(fabs(n / inner - 1) < 0.003);
    /* nothing within d/2 of the surface, nothing outside */
    const float *x = floe_attr(ctx, f, "x", FLOE_VEC3);
    for (long i = 0; i < n; i++) {
        double e[3] = {x[3 * i] - c[0], x[3 * i + 1] - c[1], x[3 * i + 2] - c[2]};
        cr_assert(sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]) < r - 0.49 * d);
    }
    floe_mesh_destroy(m);
    floe_ctx_destroy(ctx);
}

/* ---- bad input ------------------------------------------------------------ */

static void expect_load_error(const floe_mesh_def *def, const char *want1, const char *want2)
{
    char err[2048];
    floe_mesh *m = floe_mesh_load(def, err, sizeof err);
    cr_assert_null(m, "loading %s should fail", def->file);
    cr_log_info("%s", err);
    cr_assert_not_null(strstr(err, def->file), "the message names the file: %s", err);
    cr_assert_not_null(strstr(err, want1), "'%s' in: %s", want1, err);
    if (want2)
        cr_assert_not_null(strstr(err, want2), "'%s' in: %s", want2, err);
}

Test(mesh, missing_garbage_empty_and_directory_files)
{
    floe_mesh_def def = floe_mesh_default_def();
    def.file = tmp("no_such_mesh.obj");
    expect_load_error(&def, "cannot read the mesh", "No such file or directory");
    FILE *f = fopen(tmp("garbage.stl"), "wb");
    fputs("\x01\x02 this is not a mesh \x7f", f);
    fclose(f);
    def.file = tmp("garbage.stl");
    expect_load_error(&def, "cannot read the mesh: ", "STL"); /* assimp's own words follow */
    fclose(fopen(tmp("empty.obj"), "w"));
    def.file = tmp("empty.obj");
    expect_load_error(&def, "the file is empty", NULL);
    def.file = tmpdir;
    expect_load_error(&def, "is a directory", NULL);
    /* an OBJ with vertices and lines but no face */
    f = fopen(tmp("open.obj"), "w");
    fputs("v 0 0 0\nv 1 0 0\nv 0 1 0\nl 1 2\nl 2 3\n", f);
    fclose(f);
    def.file = tmp("open.obj");
    expect_load_error(&def, "no triangles", NULL);
}

Test(mesh, zero_or_negative_scale_and_bad_rotation)
{
    const float lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
    shape_box(&S, lo, hi, 0);
    write_stl(tmp("cube.stl"), &S);
    floe_mesh_def def = floe_mesh_default_def();
    def.file = tmp("cube.stl");
    def.scale[1] = 0;
    expect_load_error(&def, "scale must be positive", "axis 2");
    def.scale[1] = -2;
    expect_load_error(&def, "scale must be positive", NULL);
    def = floe_mesh_default_def();
    def.file = tmp("cube.stl");
    def.rotation[0][0] = -1; /* a mirror */
    expect_load_error(&def, "reflection", NULL);
    def.rotation[0][0] = 2;
    expect_load_error(&def, "not a rotation matrix", NULL);
}

Test(mesh, huge_meshes_hit_the_limits)
{
    floe_mesh_def def = floe_mesh_default_def();
    def.file = model("dragon_50k.obj");
    def.max_triangles = 10000;
    expect_load_error(&def, "50000 triangles", "more than the limit of 10000 triangles");
    /* the particle limit of one call */
    const float dlo[3] = {-1, -1, -1}, dhi[3] = {1, 1, 1};
    floe_ctx *ctx = mesh_sim(0.001f, dlo, dhi, NULL);
    floe_set b = floe_set_create(ctx, "boundary", FLOE_SET_BOUNDARY, 0);
    floe_set f = floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000);
    floe_mesh *m = load_mesh(model("bunny_10k.obj"));
    floe_mesh_use use = {.max_particles = 100000};
    cr_assert_lt(floe_boundary_mesh(ctx, b, m, &use), 0);
    cr_log_info("%s", floe_ctx_error(ctx));
    cr_assert_not_null(strstr(floe_ctx_error(ctx), "bunny_10k.obj"));
    cr_assert_not_null(strstr(floe_ctx_error(ctx), "more than the limit of 100000"), "%s", floe_ctx_error(ctx));
    cr_assert_lt(floe_fill_mesh(ctx, f, m, &use, NULL), 0);
    cr_log_info("%s", floe_ctx_error(ctx));
    cr_assert_not_null(strstr(floe_ctx_error(ctx), "more than the limit of 100000"), "%s", floe_ctx_error(ctx));
    cr_assert_eq(floe_set_size(ctx, b) + floe_set_size(ctx, f), 0, "nothing added");
    floe_mesh_destroy(m);
    floe_ctx_destroy(ctx);
}

Test(mesh, open_mesh_refused_by_fluid_mesh_unless_allowed)
{
    const float lo[3] = {0, 0, 0}, hi[3] = {0.2f, 0.2f, 0.2f}, dlo[3] = {-1, -1, -1}, dhi[3] = {1, 1, 1};
    shape_box(&S, lo, hi, 1); /* no lid */
    write_obj(tmp("open.obj"), &S);
    floe_ctx *ctx = mesh_sim(0.02f, dlo, dhi, NULL);
    floe_set f = floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000);
    floe_mesh *m = load_mesh(tmp("open.obj"));
    cr_assert_eq(m->open_edges, 4);
    cr_assert_lt(floe_fill_mesh(ctx, f, m, NULL, NULL), 0);
    const char *e = floe_ctx_error(ctx);
    cr_log_info("%s", e);
    cr_assert_not_null(strstr(e, "open.obj"), "%s", e);
    cr_assert_not_null(strstr(e, "not closed: 4 boundary edges"), "%s", e);
    /* allowed: by winding number, the open box still fills its lower part
     * (half of the lattice of a closed box or more) */
    floe_mesh_use use = {.allow_open = 1};
    long n = floe_fill_mesh(ctx, f, m, &use, NULL);
    cr_log_info("open box, allow_open: %ld of the closed box's 1000", n);
    cr_assert(n >= 500 && n <= 1000, "%ld", n);
    floe_mesh_destroy(m);
    floe_ctx_destroy(ctx);
}

/* ---- from Lua ------------------------------------------------------------- */

static char lua_err[8192];

/* Runs the scene text (one %s: the temp folder) in the sandbox. */
static int run_lua(const char *fmt)
{
    char text[8192];
    snprintf(text, sizeof text, fmt, tmpdir, tmpdir, tmpdir, tmpdir);
    FILE *f = fopen(tmp("scene.lua"), "w");
    fputs(text, f);
    fclose(f);
    floe_scene_opts o;
    memset(&o, 0, sizeof o);
    o.path = tmp("scene.lua");
    o.frames = -1;
    o.out_dir = tmpdir;
    o.force = 1; /* the meshes the test wrote share the folder */
    lua_err[0] = '\0';
    setenv("FLOE_MODULE_PATH", FLOE_TEST_BUILD_ROOT "/modules", 1);
    return floe_scene_run(&o, lua_err, sizeof lua_err);
}

#define LUA_SIM                                                                                                    \
    "local floe = require 'floe'\n"                                                                                \
    "local sim = floe.sim{ spacing = 0.02, domain = { min = {-1, -1, -1}, max = {1, 1, 1} } }\n"

Test(mesh, lua_boundary_mesh_fluid_mesh_and_mesh_info)
{
    const float lo[3] = {0, 0, 0}, hi[3] = {0.2f, 0.1f, 0.1f};
    shape_box(&S, lo, hi, 0);
    write_stl(tmp("cube.stl"), &S);
    int rc = run_lua(LUA_SIM
                     "local file = '%s/cube.stl'\n"
                     "local info = floe.mesh_info{ file = file, scale = 2, rotation = { axis = {0, 0, 1}, angle = 90 },\n"
                     "                             translation = {1, 0, 0} }\n"
                     "assert(info.vertices == 8 and info.triangles == 12 and info.closed, info.topology)\n"
                     "assert(math.abs(info.volume - 0.016) < 1e-6, info.volume)\n"
                     "assert(math.abs(info.min[1] - 0.8) < 1e-6 and math.abs(info.max[2] - 0.4) < 1e-6)\n"
                     "local nb = sim:boundary_mesh{ file = file, translation = {0.5, 0, 0}, layers = 2 }\n"
                     "local nf = sim:fluid_mesh{ file = file, scale = {1, 2, 1}, rotation = {0, 0, 0},\n"
                     "                           velocity = {0, -1, 0}, density = 1000 }\n"
                     "assert(nf == 10 * 10 * 5, 'fluid ' .. nf)\n"
                     "-- two layers of the 0.1 m^2 surface at 1 / d^2\n"
                     "assert(sim:count 'boundary' == nb and nb > 2 * 250 and nb < 2 * 250 * 1.15, 'boundary ' .. nb)\n"
                     "assert(sim:count 'fluid' == nf)\n");
    cr_assert_eq(rc, FLOE_OK, "%s", lua_err);
}

static void expect_lua_error(const char *scene, const char *a, const char *b)
{
    cr_assert_neq(run_lua(scene), FLOE_OK);
    cr_log_info("%s", lua_err);
    cr_assert_not_null(strstr(lua_err, a), "'%s' in:\n%s", a, lua_err);
    if (b)
        cr_assert_not_null(strstr(lua_err, b), "'%s' in:\n%s", b, lua_err);
}

Test(mesh, lua_errors_name_line_and_file)
{
    const float lo[3] = {0, 0, 0}, hi[3] = {0.2f, 0.1f, 0.1f};
    shape_box(&S, lo, hi, 0);
    write_stl(tmp("cube.stl"), &S);
    expect_lua_error(LUA_SIM "sim:boundary_mesh{ file = '%s/nothing.obj' }\n", "scene.lua:3: sim:boundary_mesh: ",
                     "nothing.obj: cannot read the mesh: No such file or directory");
    expect_lua_error(LUA_SIM "sim:fluid_mesh{ file = '%s/cube.stl', scale = 0 }\n", "scene.lua:3: sim:fluid_mesh: ",
                     "cube.stl: 'scale' must be positive");
    expect_lua_error(LUA_SIM "sim:fluid_mesh{ file = '%s/cube.stl', scale = {1, -1, 1} }\n", "scene.lua:3:",
                     "'scale' must be positive");
    expect_lua_error(LUA_SIM "sim:boundary_mesh{ file = '%s/cube.stl', scael = 2 }\n",
                     "scene.lua:3: sim:boundary_mesh: unknown key 'scael'", "accepted: file, object, scale");
    expect_lua_error(LUA_SIM "sim:boundary_mesh{ file = '%s/cube.stl', rotation = { axis = {0, 0, 0}, angle = 1 } }\n",
                     "scene.lua:3:", "non-zero axis");
    expect_lua_error(LUA_SIM "sim:fluid_box{ min = {0, 0, 0}, max = {0.1, 0.1, 0.1} }\n"
                             "sim:boundary_mesh{ file = '%s/cube.stl', set = 'fluid' }\n",
                     "scene.lua:4:", "set 'fluid' is a fluid set");
    shape_box(&S, lo, hi, 1);
    write_obj(tmp("open.obj"), &S);
    expect_lua_error(LUA_SIM "sim:fluid_mesh{ file = '%s/open.obj' }\n", "scene.lua:3: sim:fluid_mesh: ",
                     "open.obj: the mesh is not closed: 4 boundary edges");
    expect_lua_error("local floe = require 'floe'\n"
                     "local sim = floe.sim{ dim = 2, spacing = 0.02, domain = { min = {-1, -1}, max = {1, 1} } }\n"
                     "sim:boundary_mesh{ file = '%s/cube.stl' }\n",
                     "scene.lua:3:", "meshes need a 3D sim");
    /* nothing was added by the failed calls */
    cr_assert_eq(run_lua(LUA_SIM "pcall(sim.fluid_mesh, sim, { file = '%s/open.obj' })\n"
                                 "assert(not pcall(sim.count, sim, 'fluid'), 'no set was made')\n"),
                 FLOE_OK, "%s", lua_err);
}

/* ---- a tank walled by a mesh ------------------------------------------------ */

static double *p_sum;
static uint64_t p_steps;

/* each particle's pressure (by stable id) summed per step */
static int sum_pressure(const floe_stage_call *c)
{
    floe_set s = floe_set_find(c->ctx, "fluid");
    const float *p = floe_attr(c->ctx, s, "p", FLOE_F32);
    const uint32_t *id = floe_attr(c->ctx, s, "id", FLOE_U32);
    for (uint32_t i = 0; i < floe_set_size(c->ctx, s); i++)
        p_sum[id[i]] += p[i];
    p_steps++;
    return FLOE_OK;
}

/* Settle 0.5 s with damping, average each particle's pressure over 0.3 s,
 * fit p = p0 + g' y below the top two layers (y < top): the floor
 * pressure p0 and the gradient g'. */
static void settled_pressure(fixture *f, double top, double *p0, double *slope)
{
    fixture_wcsph(f, 25, "xsph", 0.05, 30);
    floe_run_def r = fixture_run_def(0.5, 10);
    cr_assert_eq(floe_run(f->ctx, &r, NULL), FLOE_OK, "%s", floe_ctx_error(f->ctx));
    uint32_t n = floe_set_size(f->ctx, f->fluid);
    p_sum = calloc(n, sizeof *p_sum);
    p_steps = 0;
    cr_assert_eq(floe_pipeline_add_fn(f->ctx, "sum_pressure", sum_pressure, NULL), FLOE_OK);
    r = fixture_run_def(0.3, 10);
    cr_assert_eq(floe_run(f->ctx, &r, NULL), FLOE_OK, "%s", floe_ctx_error(f->ctx));
    const float *x = floe_attr(f->ctx, f->fluid, "x", FLOE_VEC3);
    const uint32_t *id = floe_attr(f->ctx, f->fluid, "id", FLOE_U32);
    double sy = 0, sp = 0, syy = 0, syp = 0, m = 0;
    for (uint32_t i = 0; i < n; i++) {
        double y = x[3 * i + 1], pa = p_sum[id[i]] / (double)p_steps;
        if (y > top)
            continue;
        sy += y, sp += pa, syy += y * y, syp += y * pa, m++;
    }
    *slope = (m * syp - sy * sp) / (m * syy - sy * sy);
    *p0 = (sp - *slope * sy) / m;
    free(p_sum);
}

/* The walls' particles: boundary_box puts two layers outside the box, the
 * first d/2 out; the mesh is that first layer's box (open at the top) as
 * a container, its second layer d further out. */
static void mesh_tank(fixture *f, float d, const float tank[3], const char *file)
{
    const float lo[3] = {-0.5f * d, -0.5f * d, -0.5f * d};
    const float hi[3] = {tank[0] + 0.5f * d, tank[1], tank[2] + 0.5f * d};
    shape_box(&S, lo, hi, 1);
    write_obj(file, &S);
    floe_set_clear(f->ctx, f->bnd);
    floe_mesh *m = load_mesh(file);
    floe_mesh_use use = {.layers = 2, .container = 1};
    cr_assert(floe_boundary_mesh(f->ctx, f->bnd, m, &use) > 0, "%s", floe_ctx_error(f->ctx));
    floe_mesh_destroy(m);
}

Test(mesh, hydrostatic_tank_with_mesh_walls, .timeout = FLOE_TIMEOUT(900))
{
    const float d = 0.025f, tank[3] = {0.25f, 0.35f, 0.25f}, water[3] = {0.25f, 0.25f, 0.25f};
    double p[2], g[2];
    uint32_t nb[2];
    for (int k = 0; k < 2; k++) {
        fixture f = fixture_tank(3, d, tank, water, 1);
        if (k == 1)
            mesh_tank(&f, d, tank, tmp("tank.obj"));
        nb[k] = floe_set_size(f.ctx, f.bnd);
        settled_pressure(&f, water[1] - 2 * d, &p[k], &g[k]);
        floe_ctx_destroy(f.ctx);
    }
    double ref = 1000 * 9.81 * water[1];
    cr_log_info("floor pressure (fit): boundary_box %.1f Pa, dp/dy %.1f Pa/m (%u wall particles); mesh walls %.1f Pa, "
                "%.1f Pa/m (%u): %+.2f%%; rho g h %.1f Pa", p[0], g[0], nb[0], p[1], g[1], nb[1],
                100 * (p[1] / p[0] - 1), ref);
    cr_assert(fabs(p[1] / p[0] - 1) < 0.03, "mesh tank %.1f Pa vs boundary_box %.1f Pa", p[1], p[0]);
    cr_assert(fabs(g[1] / g[0] - 1) < 0.05, "mesh tank %.1f Pa/m vs boundary_box %.1f Pa/m", g[1], g[0]);
    /* WCSPH itself (c = 25 m/s, a small tank) is some percent off rho g h:
     * the mesh walls may not add more than 3% to that */
    cr_assert(fabs(p[1] / ref - 1) < fabs(p[0] / ref - 1) + 0.03, "mesh tank %.1f Pa, boundary_box %.1f Pa, rho g h "
              "%.1f Pa", p[1], p[0], ref);
}

/* ---- the winding number ---------------------------------------------------- */

/* every triangle's solid angle, no clusters */
static double exact_winding(const floe_mesh *m, const double p[3])
{
    double w = 0;
    for (uint32_t t = 0; t < m->ntris; t++) {
        double v[3][3], l[3];
        for (int c = 0; c < 3; c++) {
            for (int k = 0; k < 3; k++)
                v[c][k] = m->x[3 * (size_t)m->tri[3 * (size_t)t + c] + k] - p[k];
            l[c] = sqrt(v[c][0] * v[c][0] + v[c][1] * v[c][1] + v[c][2] * v[c][2]);
        }
        double det = v[0][0] * (v[1][1] * v[2][2] - v[1][2] * v[2][1]) -
                     v[0][1] * (v[1][0] * v[2][2] - v[1][2] * v[2][0]) + v[0][2] * (v[1][0] * v[2][1] - v[1][1] * v[2][0]);
        double ab = v[0][0] * v[1][0] + v[0][1] * v[1][1] + v[0][2] * v[1][2];
        double bc = v[1][0] * v[2][0] + v[1][1] * v[2][1] + v[1][2] * v[2][2];
        double ca = v[2][0] * v[0][0] + v[2][1] * v[0][1] + v[2][2] * v[0][2];
        w += 2 * atan2(det, l[0] * l[1] * l[2] + ab * l[2] + bc * l[0] + ca * l[1]);
    }
    return w / (4 * M_PI);
}

static void winding_against_exact(const char *file, double tol)
{
    floe_mesh *m = load_mesh(file);
    mesh_bvh b;
    cr_assert_eq(mesh_bvh_build(&b, m), FLOE_OK);
    double worst = 0;
    int inside = 0, n = 1000;
    uint64_t s = 99;
    for (int i = 0; i < n; i++) {
        double p[3];
        for (int k = 0; k < 3; k++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            double u = (double)(s >> 11) / 9007199254740992.0;
            p[k] = m->min[k] - 0.05 + u * (m->max[k] - m->min[k] + 0.1);
        }
        double w = mesh_winding(&b, p), we = exact_winding(m, p);
        worst = fmax(worst, fabs(w - we));
        inside += we >= 0.5;
        cr_assert_eq(w >= 0.5, we >= 0.5, "point %d: %g against %g", i, w, we);
    }
    cr_log_info("%s: winding number with dipole clusters against every triangle at %d points (%d inside): worst "
                "difference %.3g", file, n, inside, worst);
    cr_assert_lt(worst, tol);
    cr_assert(inside > 50 && inside < n - 50);
    mesh_bvh_free(&b);
    floe_mesh_destroy(m);
}

Test(mesh, winding_number_of_bunny_and_teapot_against_exact)
{
    winding_against_exact(model("bunny_10k.obj"), 0.05);
    winding_against_exact(TEAPOT, 0.05); /* open: fractional near the holes */
}

Test(mesh, slightly_open_bunny_fills_like_the_closed_one)
{
    const float d = 0.02f, dlo[3] = {-1, -1, -1}, dhi[3] = {1, 1, 1};
    floe_mesh *m = load_mesh(model("bunny_10k.obj"));
    /* the bunny without 6 triangles (holes of a few edges each) */
    FILE *f = fopen(tmp("open.obj"), "w");
    for (uint32_t i = 0; i < m->nverts; i++)
        fprintf(f, "v %.9g %.9g %.9g\n", m->x[3 * i], m->x[3 * i + 1], m->x[3 * i + 2]);
    for (uint32_t t = 0; t < m->ntris; t++)
        if (t % 1667 != 5)
            fprintf(f, "f %u %u %u\n", m->tri[3 * t] + 1, m->tri[3 * t + 1] + 1, m->tri[3 * t + 2] + 1);
    fclose(f);
    floe_mesh *holes = load_mesh(tmp("open.obj"));
    cr_assert_eq(holes->ntris, m->ntris - 6);
    cr_assert_eq(holes->open_edges, 18);
    floe_ctx *ctx = mesh_sim(d, dlo, dhi, NULL);
    floe_set a = floe_set_create(ctx, "closed", FLOE_SET_FLUID, 1000), b = floe_set_create(ctx, "open", FLOE_SET_FLUID, 1000);
    floe_mesh_use use = {.allow_open = 1};
    long n0 = floe_fill_mesh(ctx, a, m, NULL, NULL), n1 = floe_fill_mesh(ctx, b, holes, &use, NULL);
    cr_log_info("bunny at d = %g: %ld particles closed, %ld with 6 triangles missing (18 boundary edges)", d, n0, n1);
    cr_assert(n0 > 0.6 * m->volume / (d * d * d), "%ld", n0);
    cr_assert(labs(n1 - n0) <= n0 / 200, "%ld against %ld", n1, n0);
    floe_mesh_destroy(holes);
    floe_mesh_destroy(m);
    floe_ctx_destroy(ctx);
}
