/* Boundary particles on a mesh's surface (Akinci et al. 2012 sample the
 * boundary with one layer of particles and weight each by its volume
 * psi = 1 / sum_k W_bk, which floe_boundary_volumes computes afterwards).
 *
 * The sampling, at spacing d, in this order:
 *  1. every vertex (sharp corners are kept exactly);
 *  2. every edge of length L split into round(L / d) equal parts;
 *  3. every triangle, inset by d/2 from its edges (the edge samples stand
 *     for that strip), filled with rows parallel to its longest edge: rows
 *     h = a sqrt(3)/2 apart, points a apart along a row, a = d sqrt(2/sqrt 3),
 *     so a h = d^2 and a flat face gets 1/d^2 samples per area like the
 *     triangular lattice it approximates; rows and points are centred in
 *     the inset triangle.
 * Each candidate is kept only when no sample kept before it lies closer
 * than d/2 (a vertex: closer than 3d/4 to an earlier vertex), so a mesh
 * finer than d is thinned to its vertices at about 3d/4 (a Poisson-disk
 * set of them) instead of one particle per vertex. Extra layers repeat the
 * kept samples k d along the inward normal (outward for a container). */
#include "geometry.h"
#include "mesh_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VERTEX_GAP 0.75f     /* of d, between kept vertices */
#define GAP 0.5f             /* of d, between any kept samples */

typedef struct cand {
    float *x, *n;            /* 3 each per candidate: position, unit normal */
    uint8_t *vertex;         /* a vertex of the mesh */
    size_t count, cap;
} cand;

static int cand_push(cand *c, const double p[3], const double n[3], int vertex)
{
    if (c->count == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 4096;
        float *x = realloc(c->x, cap * 3 * sizeof *x);
        if (x)
            c->x = x;
        float *nn = realloc(c->n, cap * 3 * sizeof *nn);
        if (nn)
            c->n = nn;
        uint8_t *v = realloc(c->vertex, cap);
        if (v)
            c->vertex = v;
        if (!x || !nn || !v)
            return FLOE_ERR_NOMEM;
        c->cap = cap;
    }
    double len = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    for (int k = 0; k < 3; k++) {
        c->x[3 * c->count + k] = (float)p[k];
        c->n[3 * c->count + k] = len > 0 ? (float)(n[k] / len) : 0.0f;
    }
    c->vertex[c->count++] = (uint8_t)vertex;
    return FLOE_OK;
}

static void cand_free(cand *c)
{
    free(c->x), free(c->n), free(c->vertex);
}

static void vertex_pos(const floe_mesh *m, uint32_t v, double p[3])
{
    for (int k = 0; k < 3; k++)
        p[k] = m->x[3 * (size_t)v + k];
}

static void unit_normal(const floe_mesh *m, uint32_t t, double n[3])
{
    mesh_tri_area_vec(m, t, n);
    double len = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    for (int k = 0; k < 3 && len > 0; k++)
        n[k] /= len;
}

/* 1. vertices, with area-weighted normals */
static int sample_vertices(const floe_mesh *m, cand *c)
{
    double *vn = calloc(3 * (size_t)m->nverts, sizeof *vn);
    if (!vn)
        return FLOE_ERR_NOMEM;
    for (uint32_t t = 0; t < m->ntris; t++) {
        double a[3];
        mesh_tri_area_vec(m, t, a);
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 3; k++)
                vn[3 * (size_t)m->tri[3 * (size_t)t + j] + k] += a[k];
    }
    int rc = FLOE_OK;
    for (uint32_t v = 0; v < m->nverts && !rc; v++) {
        double p[3];
        vertex_pos(m, v, p);
        rc = cand_push(c, p, vn + 3 * (size_t)v, 1);
    }
    free(vn);
    return rc;
}

/* 2. edges, with the mean normal of their triangles */
static int sample_edges(const floe_mesh *m, const mesh_edge *e, long ne, double d, cand *c)
{
    for (long i = 0; i < ne; i++) {
        double a[3], b[3], n[3] = {0, 0, 0}, tn[3];
        vertex_pos(m, e[i].a, a);
        vertex_pos(m, e[i].b, b);
        unit_normal(m, e[i].t0, n);
        if (e[i].t1 != MESH_NO_TRI) {
            unit_normal(m, e[i].t1, tn);
            for (int k = 0; k < 3; k++)
                n[k] += tn[k];
        }
        double len = sqrt((b[0] - a[0]) * (b[0] - a[0]) + (b[1] - a[1]) * (b[1] - a[1]) + (b[2] - a[2]) * (b[2] - a[2]));
        long parts = lround(len / d);
        for (long s = 1; s < parts; s++) {
            double p[3], f = (double)s / (double)parts;
            for (int k = 0; k < 3; k++)
                p[k] = a[k] + f * (b[k] - a[k]);
            if (cand_push(c, p, n, 0))
                return FLOE_ERR_NOMEM;
        }
    }
    return FLOE_OK;
}

/* 3. one triangle's inset interior, in rows parallel to its longest edge */
static int sample_face(const floe_mesh *m, uint32_t t, double d, cand *c)
{
    double P[3][3], len[3];
    for (int j = 0; j < 3; j++)
        vertex_pos(m, m->tri[3 * (size_t)t + j], P[j]);
    for (int j = 0; j < 3; j++) {
        const double *u = P[j], *v = P[(j + 1) % 3];
        len[j] = sqrt((v[0] - u[0]) * (v[0] - u[0]) + (v[1] - u[1]) * (v[1] - u[1]) + (v[2] - u[2]) * (v[2] - u[2]));
    }
    int j0 = len[0] >= len[1] && len[0] >= len[2] ? 0 : len[1] >= len[2] ? 1 : 2;
    const double *o = P[j0], *b = P[(j0 + 1) % 3], *apex = P[(j0 + 2) % 3];
    double n[3], e1[3], e2[3], area2;
    unit_normal(m, t, n);
    mesh_tri_area_vec(m, t, e2);
    area2 = 2 * sqrt(e2[0] * e2[0] + e2[1] * e2[1] + e2[2] * e2[2]);
    double L = len[j0], perim = len[0] + len[1] + len[2], r = area2 / perim, margin = 0.5 * d;
    if (!(L > 0) || r <= margin)
        return FLOE_OK;
    for (int k = 0; k < 3; k++)
        e1[k] = (b[k] - o[k]) / L;
    e2[0] = n[1] * e1[2] - n[2] * e1[1], e2[1] = n[2] * e1[0] - n[0] * e1[2], e2[2] = n[0] * e1[1] - n[1] * e1[0];
    double ax = 0, H = 0;
    for (int k = 0; k < 3; k++) {
        ax += (apex[k] - o[k]) * e1[k];
        H += (apex[k] - o[k]) * e2[k];
    }
    /* the inset triangle: scaled by s about the incentre (ix, r) */
    double s = (r - margin) / r, ix = (len[(j0 + 1) % 3] * 0 + len[(j0 + 2) % 3] * L + len[j0] * ax) / perim;
    double x0 = ix + s * (0 - ix), x1 = ix + s * (L - ix), xa = ix + s * (ax - ix), hs = s * H;
    const double a = d * sqrt(2 / sqrt(3.0)), h = a * sqrt(3.0) / 2;
    long rows = lround(hs / h);
    for (long k = 0; k < rows; k++) {
        double f = (k + 0.5) / (double)rows, y = margin + f * hs;
        double lx = x0 + f * (xa - x0), rx = x1 + f * (xa - x1), w = rx - lx;
        long pts = lround(w / a);
        for (long i = 0; i < pts; i++) {
            double x = lx + (i + 0.5) * w / (double)pts, p[3];
            for (int q = 0; q < 3; q++)
                p[q] = o[q] + x * e1[q] + y * e2[q];
            if (cand_push(c, p, n, 0))
                return FLOE_ERR_NOMEM;
        }
    }
    return FLOE_OK;
}

/* ---- thinning: keep a candidate when nothing kept is too close --------- */

typedef struct cellhash {
    uint64_t *key;
    uint32_t *head;          /* first kept sample of the cell */
    uint32_t *next;          /* per kept sample */
    size_t mask;
    float cell;
} cellhash;

static uint64_t cell_key(const float *p, float cell, int dx, int dy, int dz)
{
    int64_t c[3] = {(int64_t)floorf(p[0] / cell) + dx, (int64_t)floorf(p[1] / cell) + dy,
                    (int64_t)floorf(p[2] / cell) + dz};
    return ((uint64_t)(c[0] & 0x1fffff) << 42 | (uint64_t)(c[1] & 0x1fffff) << 21 | (uint64_t)(c[2] & 0x1fffff)) + 1;
}

static size_t cell_slot(const cellhash *h, uint64_t key)
{
    size_t s = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 17) & h->mask;
    while (h->key[s] && h->key[s] != key)
        s = (s + 1) & h->mask;
    return s;
}

/* 1 when no kept sample (positions x) of the 27 cells about p is closer than r */
static int cell_free(const cellhash *h, const float *x, const float *p, float r)
{
    for (int dz = -1; dz <= 1; dz++)
        for (int dy = -1; dy <= 1; dy++)
            for (int dx = -1; dx <= 1; dx++) {
                size_t s = cell_slot(h, cell_key(p, h->cell, dx, dy, dz));
                for (uint32_t j = h->key[s] ? h->head[s] : UINT32_MAX; j != UINT32_MAX; j = h->next[j]) {
                    const float *q = x + 3 * (size_t)j;
                    float e[3] = {q[0] - p[0], q[1] - p[1], q[2] - p[2]};
                    if (e[0] * e[0] + e[1] * e[1] + e[2] * e[2] < r * r)
                        return 0;
                }
            }
    return 1;
}

/* Greedy in candidate order; kept ones are moved to the front of c.
 * Returns how many were kept, or -1 when out of memory. */
static long thin(cand *c, float d)
{
    cellhash h = {.cell = VERTEX_GAP * d};
    size_t cap = 64;
    while (cap < 2 * c->count)
        cap *= 2;
    h.mask = cap - 1;
    h.key = calloc(cap, sizeof *h.key);
    h.head = malloc(cap * sizeof *h.head);
    h.next = malloc(c->count * sizeof *h.next);
    if (!h.key || !h.head || !h.next) {
        free(h.key), free(h.head), free(h.next);
        return -1;
    }
    size_t kept = 0;
    for (size_t i = 0; i < c->count; i++) {
        const float *p = c->x + 3 * i;
        if (!cell_free(&h, c->x, p, (c->vertex[i] ? VERTEX_GAP : GAP) * d))
            continue;
        memmove(c->x + 3 * kept, p, 3 * sizeof *c->x);
        memmove(c->n + 3 * kept, c->n + 3 * i, 3 * sizeof *c->n);
        size_t s = cell_slot(&h, cell_key(c->x + 3 * kept, h.cell, 0, 0, 0));
        h.next[kept] = h.key[s] ? h.head[s] : UINT32_MAX;
        h.key[s] = cell_key(c->x + 3 * kept, h.cell, 0, 0, 0);
        h.head[s] = (uint32_t)kept++;
    }
    free(h.key), free(h.head), free(h.next);
    c->count = kept;
    return (long)kept;
}

/* ---- floe_boundary_mesh ------------------------------------------------ */

/* samples of one layer before thinning: vertices + edge parts + area / d^2 */
static double estimate(const floe_mesh *m, const mesh_edge *e, long ne, double d)
{
    double n = m->nverts + m->area / (d * d);
    for (long i = 0; i < ne; i++) {
        const float *a = m->x + 3 * (size_t)e[i].a, *b = m->x + 3 * (size_t)e[i].b;
        float u[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
        n += sqrtf(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]) / d;
    }
    return n;
}

static int sample_surface(floe_ctx *ctx, const floe_mesh *m, const floe_mesh_use *use, cand *c)
{
    const double d = ctx->info.spacing;
    long limit = use->max_particles > 0 ? use->max_particles : FLOE_MESH_MAX_PARTICLES;
    int layers = use->layers > 0 ? use->layers : 1;
    mesh_edge *e = NULL;
    long ne = mesh_edges(m, &e);
    if (ne < 0)
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "boundary_mesh: %s: out of memory", m->file);
    double want = estimate(m, e, ne, d) * layers;
    if (want > (double)limit) {
        free(e);
        return ctx_fail(ctx, FLOE_ERR_ARG, "boundary_mesh: %s: about %.3g boundary particles at spacing %g (area %g m^2, "
                        "%u vertices): more than the limit of %ld; use a larger spacing or a smaller scale", m->file,
                        want, d, m->area, m->nverts, limit);
    }
    int rc = sample_vertices(m, c);
    if (!rc)
        rc = sample_edges(m, e, ne, d, c);
    for (uint32_t t = 0; t < m->ntris && !rc; t++)
        rc = sample_face(m, t, d, c);
    free(e);
    if (rc || thin(c, (float)d) < 0)
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "boundary_mesh: %s: out of memory sampling the surface", m->file);
    return FLOE_OK;
}

long floe_boundary_mesh(floe_ctx *ctx, floe_set set, const floe_mesh *m, const floe_mesh_use *use)
{
    static const floe_mesh_use none;
    pset *p = NULL;
    if (!use)
        use = &none;
    if (geom_check_set(ctx, set, FLOE_SET_BOUNDARY, "boundary_mesh", &p))
        return -1;
    if (!m)
        return ctx_fail(ctx, FLOE_ERR_ARG, "boundary_mesh: no mesh"), -1;
    if (ctx->info.dim != 3)
        return ctx_fail(ctx, FLOE_ERR_ARG, "boundary_mesh: %s: meshes need a 3D sim", m->file), -1;
    if (use->layers < 0 || use->layers > 8)
        return ctx_fail(ctx, FLOE_ERR_ARG, "boundary_mesh: layers must be in 1..8"), -1;
    if (!floe_mesh_is_closed(m)) { /* fine for a wall; said, since a solid should be closed */
        char what[256];
        floe_mesh_describe(m, what, sizeof what);
        ctx_log(ctx, FLOE_LOG_INFO, "boundary_mesh: %s: %s", m->file, what);
    }
    cand c = {0};
    if (sample_surface(ctx, m, use, &c)) {
        cand_free(&c);
        return -1;
    }
    int layers = use->layers > 0 ? use->layers : 1;
    float step = (use->container ? 1.0f : -1.0f) * ctx->info.spacing;
    size_t n1 = c.count;
    float *pos = malloc(n1 * (size_t)layers * 3 * sizeof *pos);
    if (!pos) {
        cand_free(&c);
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "boundary_mesh: %s: out of memory", m->file), -1;
    }
    for (int l = 0; l < layers; l++)
        for (size_t i = 0; i < 3 * n1; i++)
            pos[3 * n1 * (size_t)l + i] = c.x[i] + (float)l * step * c.n[i];
    cand_free(&c);
    long r = geom_append(ctx, set, p, pos, (uint32_t)(n1 * (size_t)layers), NULL);
    free(pos);
    return r;
}
