/* A mesh's edges and what they say: closed (every edge shared by exactly
 * two triangles that traverse it in opposite directions), or how many
 * edges are open, shared by more than two triangles, or misoriented; its
 * area, and its volume by the divergence theorem,
 *   V = sum over triangles (a . (b x c)) / 6,
 * which a closed mesh listed inside out in its file makes negative: such a
 * mesh is reversed so that every triangle faces outward. */
#include "mesh_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct half_edge {
    uint64_t key;            /* min << 32 | max */
    uint32_t tri;
    uint32_t forward;        /* runs min -> max */
} half_edge;

static int cmp_half(const void *pa, const void *pb)
{
    const half_edge *a = pa, *b = pb;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return (a->tri > b->tri) - (a->tri < b->tri);
}

long mesh_edges(const floe_mesh *m, mesh_edge **out)
{
    size_t nh = 3 * (size_t)m->ntris;
    half_edge *h = malloc(nh * sizeof *h);
    mesh_edge *e = malloc(nh * sizeof *e);
    if (!h || !e) {
        free(h), free(e);
        return -1;
    }
    for (uint32_t t = 0; t < m->ntris; t++)
        for (int k = 0; k < 3; k++) {
            uint32_t a = m->tri[3 * (size_t)t + k], b = m->tri[3 * (size_t)t + (k + 1) % 3];
            uint32_t lo = a < b ? a : b, hi = a < b ? b : a;
            h[3 * (size_t)t + k] = (half_edge){(uint64_t)lo << 32 | hi, t, a < b};
        }
    qsort(h, nh, sizeof *h, cmp_half);
    long n = 0;
    for (size_t i = 0; i < nh;) {
        mesh_edge *E = &e[n++];
        *E = (mesh_edge){(uint32_t)(h[i].key >> 32), (uint32_t)h[i].key, h[i].tri, MESH_NO_TRI, 0, 0};
        size_t j = i;
        for (; j < nh && h[j].key == h[i].key; j++) {
            E->uses++;
            E->forward += h[j].forward;
        }
        if (j - i > 1)
            E->t1 = h[i + 1].tri;
        i = j;
    }
    free(h);
    *out = e;
    return n;
}

void mesh_tri_area_vec(const floe_mesh *m, uint32_t t, double out[3])
{
    const uint32_t *v = m->tri + 3 * (size_t)t;
    const float *a = m->x + 3 * (size_t)v[0], *b = m->x + 3 * (size_t)v[1], *c = m->x + 3 * (size_t)v[2];
    double u[3] = {(double)b[0] - a[0], (double)b[1] - a[1], (double)b[2] - a[2]};
    double w[3] = {(double)c[0] - a[0], (double)c[1] - a[1], (double)c[2] - a[2]};
    out[0] = 0.5 * (u[1] * w[2] - u[2] * w[1]);
    out[1] = 0.5 * (u[2] * w[0] - u[0] * w[2]);
    out[2] = 0.5 * (u[0] * w[1] - u[1] * w[0]);
}

/* Volume about the bounding box centre (less cancellation than about the
 * origin for a mesh placed far from it), and area. */
static void measure(floe_mesh *m)
{
    double o[3], vol = 0, area = 0;
    for (int k = 0; k < 3; k++)
        o[k] = 0.5 * ((double)m->min[k] + m->max[k]);
    for (uint32_t t = 0; t < m->ntris; t++) {
        const uint32_t *v = m->tri + 3 * (size_t)t;
        double p[3][3], n[3];
        for (int c = 0; c < 3; c++)
            for (int k = 0; k < 3; k++)
                p[c][k] = m->x[3 * (size_t)v[c] + k] - o[k];
        vol += p[0][0] * (p[1][1] * p[2][2] - p[1][2] * p[2][1]) - p[0][1] * (p[1][0] * p[2][2] - p[1][2] * p[2][0]) +
               p[0][2] * (p[1][0] * p[2][1] - p[1][1] * p[2][0]);
        mesh_tri_area_vec(m, t, n);
        area += sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    }
    m->volume = vol / 6;
    m->area = area;
}

int mesh_topology(floe_mesh *m, char *err, size_t errlen)
{
    mesh_edge *e = NULL;
    long ne = mesh_edges(m, &e);
    if (ne < 0) {
        snprintf(err, errlen, "%s: out of memory finding the edges", m->file);
        return FLOE_ERR_NOMEM;
    }
    m->open_edges = m->nonmanifold_edges = m->misoriented_edges = 0;
    for (long i = 0; i < ne; i++) {
        if (e[i].uses == 1)
            m->open_edges++;
        else if (e[i].uses > 2)
            m->nonmanifold_edges++;
        else if (e[i].forward != 1)
            m->misoriented_edges++;
    }
    free(e);
    measure(m);
    m->reversed = 0;
    if (floe_mesh_is_closed(m) && m->volume < 0) {
        for (uint32_t t = 0; t < m->ntris; t++) {
            uint32_t s = m->tri[3 * (size_t)t + 1];
            m->tri[3 * (size_t)t + 1] = m->tri[3 * (size_t)t + 2];
            m->tri[3 * (size_t)t + 2] = s;
        }
        m->volume = -m->volume;
        m->reversed = 1;
    }
    return FLOE_OK;
}

int floe_mesh_is_closed(const floe_mesh *m)
{
    return m && m->open_edges == 0 && m->nonmanifold_edges == 0 && m->misoriented_edges == 0;
}

void floe_mesh_describe(const floe_mesh *m, char *buf, size_t len)
{
    if (floe_mesh_is_closed(m)) {
        snprintf(buf, len, "closed");
        return;
    }
    const char *what[3] = {"boundary edges (used by one triangle)", "edges shared by more than two triangles",
                           "edges whose two triangles face opposite ways"};
    uint32_t count[3] = {m->open_edges, m->nonmanifold_edges, m->misoriented_edges};
    size_t n = (size_t)snprintf(buf, len, "not closed:");
    for (int i = 0, first = 1; i < 3 && n < len; i++)
        if (count[i]) {
            n += (size_t)snprintf(buf + n, len - n, "%s %u %s", first ? "" : ",", count[i], what[i]);
            first = 0;
        }
}
