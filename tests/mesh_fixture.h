/* Meshes for the mesh tests (test_mesh.c, test_mesh_cl.c): simple shapes
 * built here and written as binary STL, ASCII PLY or OBJ into a temp
 * folder, and the path of the shared models (FLOE_MODEL_DIR, by default
 * ../shared/data/models beside the source tree, as CI lays it out). */
#ifndef FLOE_TEST_MESH_FIXTURE_H
#define FLOE_TEST_MESH_FIXTURE_H

#include <criterion/criterion.h>
#include <floe/mesh.h>

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TEAPOT "/usr/share/assimp/models/Collada/teapots.DAE"

typedef struct shape {
    int nv, nt;
    float v[3 * 12000];
    uint32_t t[3 * 24000];
} shape;

static inline const char *model(const char *name)
{
    static char path[4][1024];
    static int next;
    const char *dir = getenv("FLOE_MODEL_DIR");
    char *p = path[next++ & 3];
    snprintf(p, sizeof path[0], "%s/%s", dir ? dir : FLOE_TEST_SOURCE_ROOT "/../shared/data/models", name);
    return p;
}

static inline int shape_vertex(shape *s, double x, double y, double z)
{
    s->v[3 * s->nv] = (float)x, s->v[3 * s->nv + 1] = (float)y, s->v[3 * s->nv + 2] = (float)z;
    return s->nv++;
}

static inline void shape_tri(shape *s, int a, int b, int c)
{
    s->t[3 * s->nt] = (uint32_t)a, s->t[3 * s->nt + 1] = (uint32_t)b, s->t[3 * s->nt + 2] = (uint32_t)c;
    s->nt++;
}

/* the quad a b c d (counter-clockwise seen from where its normal points) */
static inline void shape_quad(shape *s, int a, int b, int c, int d)
{
    shape_tri(s, a, b, c);
    shape_tri(s, a, c, d);
}

/* The box [lo, hi] with outward triangles; open_top leaves out the +y face. */
static inline void shape_box(shape *s, const float lo[3], const float hi[3], int open_top)
{
    s->nv = s->nt = 0;
    int c[8];
    for (int i = 0; i < 8; i++)
        c[i] = shape_vertex(s, i & 1 ? hi[0] : lo[0], i & 2 ? hi[1] : lo[1], i & 4 ? hi[2] : lo[2]);
    shape_quad(s, c[0], c[4], c[6], c[2]); /* -x */
    shape_quad(s, c[1], c[3], c[7], c[5]); /* +x */
    shape_quad(s, c[0], c[1], c[5], c[4]); /* -y */
    if (!open_top)
        shape_quad(s, c[2], c[6], c[7], c[3]); /* +y */
    shape_quad(s, c[0], c[2], c[3], c[1]); /* -z */
    shape_quad(s, c[4], c[5], c[7], c[6]); /* +z */
}

/* The square [x0, x1] x [z0, z1] at height y, facing +y. */
static inline void shape_square(shape *s, float x0, float x1, float z0, float z1, float y)
{
    s->nv = s->nt = 0;
    shape_quad(s, shape_vertex(s, x0, y, z0), shape_vertex(s, x0, y, z1), shape_vertex(s, x1, y, z1),
               shape_vertex(s, x1, y, z0));
}

/* the midpoint of edge a b pushed out to the sphere, made once per edge
 * (an open-addressed table of edge keys, cleared per subdivision level) */
#define ICO_SLOTS (1 << 16)
static uint64_t ico_key[ICO_SLOTS];
static int ico_val[ICO_SLOTS];

static inline int ico_mid(shape *s, int a, int b, double r, const double c[3])
{
    uint64_t key = a < b ? ((uint64_t)a << 32 | (uint64_t)b) + 1 : ((uint64_t)b << 32 | (uint64_t)a) + 1;
    size_t h = (size_t)(key * 0x9e3779b97f4a7c15ull >> 40) & (ICO_SLOTS - 1);
    while (ico_key[h] && ico_key[h] != key)
        h = (h + 1) & (ICO_SLOTS - 1);
    if (ico_key[h])
        return ico_val[h];
    double m[3];
    for (int k = 0; k < 3; k++)
        m[k] = 0.5 * ((double)s->v[3 * a + k] + s->v[3 * b + k]) - c[k];
    double l = sqrt(m[0] * m[0] + m[1] * m[1] + m[2] * m[2]);
    ico_key[h] = key;
    return ico_val[h] = shape_vertex(s, c[0] + r * m[0] / l, c[1] + r * m[1] / l, c[2] + r * m[2] / l);
}

/* An icosphere of radius r about c, `levels` times subdivided (20 4^levels
 * outward triangles, vertices on the sphere). */
static inline void shape_sphere(shape *s, double r, const double c[3], int levels)
{
    const double g = (1 + sqrt(5.0)) / 2, n = sqrt(1 + g * g);
    static const int F[20][3] = {{0, 11, 5}, {0, 5, 1}, {0, 1, 7}, {0, 7, 10}, {0, 10, 11}, {1, 5, 9}, {5, 11, 4},
                                 {11, 10, 2}, {10, 7, 6}, {7, 1, 8}, {3, 9, 4}, {3, 4, 2}, {3, 2, 6}, {3, 6, 8},
                                 {3, 8, 9}, {4, 9, 5}, {2, 4, 11}, {6, 2, 10}, {8, 6, 7}, {9, 8, 1}};
    const double V[12][3] = {{-1, g, 0}, {1, g, 0}, {-1, -g, 0}, {1, -g, 0}, {0, -1, g}, {0, 1, g},
                             {0, -1, -g}, {0, 1, -g}, {g, 0, -1}, {g, 0, 1}, {-g, 0, -1}, {-g, 0, 1}};
    s->nv = s->nt = 0;
    for (int i = 0; i < 12; i++)
        shape_vertex(s, c[0] + r * V[i][0] / n, c[1] + r * V[i][1] / n, c[2] + r * V[i][2] / n);
    for (int i = 0; i < 20; i++)
        shape_tri(s, F[i][0], F[i][1], F[i][2]);
    for (int l = 0; l < levels; l++) {
        int nt = s->nt;
        static uint32_t old[3 * 24000];
        memcpy(old, s->t, sizeof(uint32_t) * 3 * (size_t)nt);
        memset(ico_key, 0, sizeof ico_key);
        s->nt = 0;
        for (int i = 0; i < nt; i++) {
            int a = (int)old[3 * i], b = (int)old[3 * i + 1], cc = (int)old[3 * i + 2];
            int ab = ico_mid(s, a, b, r, c), bc = ico_mid(s, b, cc, r, c), ca = ico_mid(s, cc, a, r, c);
            shape_tri(s, a, ab, ca);
            shape_tri(s, ab, b, bc);
            shape_tri(s, ca, bc, cc);
            shape_tri(s, ab, bc, ca);
        }
    }
}

static inline void write_stl(const char *path, const shape *s)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    char header[80] = "floe test mesh";
    uint32_t n = (uint32_t)s->nt;
    fwrite(header, 1, 80, f);
    fwrite(&n, 4, 1, f);
    for (int i = 0; i < s->nt; i++) {
        float rec[12] = {0};
        for (int c = 0; c < 3; c++)
            memcpy(rec + 3 + 3 * c, s->v + 3 * s->t[3 * i + c], 3 * sizeof(float));
        uint16_t attr = 0;
        fwrite(rec, sizeof rec, 1, f);
        fwrite(&attr, 2, 1, f);
    }
    fclose(f);
}

static inline void write_ply(const char *path, const shape *s)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    fprintf(f, "ply\nformat ascii 1.0\nelement vertex %d\nproperty float x\nproperty float y\nproperty float z\n"
               "element face %d\nproperty list uchar int vertex_indices\nend_header\n", s->nv, s->nt);
    for (int i = 0; i < s->nv; i++)
        fprintf(f, "%.9g %.9g %.9g\n", s->v[3 * i], s->v[3 * i + 1], s->v[3 * i + 2]);
    for (int i = 0; i < s->nt; i++)
        fprintf(f, "3 %u %u %u\n", s->t[3 * i], s->t[3 * i + 1], s->t[3 * i + 2]);
    fclose(f);
}

static inline void write_obj(const char *path, const shape *s)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    for (int i = 0; i < s->nv; i++)
        fprintf(f, "v %.9g %.9g %.9g\n", s->v[3 * i], s->v[3 * i + 1], s->v[3 * i + 2]);
    for (int i = 0; i < s->nt; i++)
        fprintf(f, "f %u %u %u\n", s->t[3 * i] + 1, s->t[3 * i + 1] + 1, s->t[3 * i + 2] + 1);
    fclose(f);
}

static inline floe_mesh *load_mesh(const char *path)
{
    floe_mesh_def def = floe_mesh_default_def();
    def.file = path;
    char err[2048];
    floe_mesh *m = floe_mesh_load(&def, err, sizeof err);
    cr_assert_not_null(m, "%s", err);
    return m;
}

/* a 3D sim of spacing d over [lo, hi] (2 threads) */
static inline floe_ctx *mesh_sim(float d, const float lo[3], const float hi[3], const char *backend)
{
    setenv("FLOE_MODULE_PATH", FLOE_TEST_BUILD_ROOT "/modules", 1);
    floe_sim_def def = floe_sim_default_def();
    def.dim = 3;
    def.spacing = d;
    def.threads = 2;
    def.backend = backend;
    memcpy(def.domain_min, lo, sizeof def.domain_min);
    memcpy(def.domain_max, hi, sizeof def.domain_max);
    char err[1024];
    floe_ctx *ctx = floe_ctx_create(&def, err, sizeof err);
    cr_assert_not_null(ctx, "%s", err);
    return ctx;
}

#endif
