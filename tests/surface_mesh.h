/* Mesh checks for the surface tests: read the binary PLY the surface module
 * writes, and measure volume, area, edge sharing, orientation, Euler
 * characteristic, connected components and normals. */
#ifndef FLOE_TEST_SURFACE_MESH_H
#define FLOE_TEST_SURFACE_MESH_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct tmesh {
    uint32_t nv, nt;
    float *v, *n;            /* 3 per vertex */
    uint32_t *t;             /* 3 per triangle */
} tmesh;

/* 0 or -1 (not our PLY layout) */
static inline int tmesh_read_ply(const char *path, tmesh *m)
{
    memset(m, 0, sizeof *m);
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    char line[256];
    while (fgets(line, sizeof line, f) && strcmp(line, "end_header\n") != 0) {
        sscanf(line, "element vertex %u", &m->nv);
        sscanf(line, "element face %u", &m->nt);
    }
    m->v = malloc((size_t)m->nv * 3 * sizeof *m->v + 4);
    m->n = malloc((size_t)m->nv * 3 * sizeof *m->n + 4);
    m->t = malloc((size_t)m->nt * 3 * sizeof *m->t + 4);
    for (uint32_t i = 0; i < m->nv; i++) {
        float r[6];
        if (fread(r, sizeof r, 1, f) != 1)
            return fclose(f), -1;
        memcpy(&m->v[3 * i], r, 3 * sizeof *r);
        memcpy(&m->n[3 * i], r + 3, 3 * sizeof *r);
    }
    for (uint32_t i = 0; i < m->nt; i++) {
        unsigned char c;
        if (fread(&c, 1, 1, f) != 1 || c != 3 || fread(&m->t[3 * i], 4, 3, f) != 3)
            return fclose(f), -1;
    }
    int extra = fgetc(f);
    fclose(f);
    return extra == EOF ? 0 : -1;
}

static inline void tmesh_free(tmesh *m)
{
    free(m->v);
    free(m->n);
    free(m->t);
}

/* signed volume (divergence theorem: positive for outward triangles) and area */
static inline void tmesh_volume_area(const tmesh *m, double *vol, double *area)
{
    double V = 0, A = 0;
    for (uint32_t t = 0; t < m->nt; t++) {
        const float *a = &m->v[3 * m->t[3 * t]], *b = &m->v[3 * m->t[3 * t + 1]], *c = &m->v[3 * m->t[3 * t + 2]];
        double u[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]}, w[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
        double n[3] = {u[1] * w[2] - u[2] * w[1], u[2] * w[0] - u[0] * w[2], u[0] * w[1] - u[1] * w[0]};
        A += 0.5 * sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
        V += (a[0] * ((double)b[1] * c[2] - (double)b[2] * c[1]) - a[1] * ((double)b[0] * c[2] - (double)b[2] * c[0]) +
              a[2] * ((double)b[0] * c[1] - (double)b[1] * c[0])) / 6.0;
    }
    *vol = V;
    *area = A;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Every undirected edge in exactly two triangles, once in each direction
 * (consistent orientation); *edges = their number. Returns the number of
 * edges that break this (0 for a closed oriented manifold). */
static inline long tmesh_bad_edges(const tmesh *m, uint64_t *edges)
{
    size_t ne = (size_t)m->nt * 3;
    uint64_t *e = malloc(ne * sizeof *e + 8);
    for (uint32_t t = 0; t < m->nt; t++)
        for (int k = 0; k < 3; k++)
            e[3 * t + k] = (uint64_t)m->t[3 * t + k] << 32 | m->t[3 * t + (k + 1) % 3];
    qsort(e, ne, sizeof *e, cmp_u64);
    long bad = 0;
    uint64_t n = 0;
    for (size_t i = 0; i < ne; i++) {
        uint64_t a = e[i] >> 32, b = e[i] & 0xffffffffu, rev = b << 32 | a;
        if (i + 1 < ne && e[i + 1] == e[i]) /* the same directed edge twice */
            bad++;
        uint64_t *hit = bsearch(&rev, e, ne, sizeof *e, cmp_u64);
        if (!hit)
            bad++;
        if (a < b)
            n++;
    }
    free(e);
    *edges = n;
    return bad;
}

static inline uint32_t uf_find(uint32_t *p, uint32_t i)
{
    while (p[i] != i)
        i = p[i] = p[p[i]];
    return i;
}

/* connected components of the triangles (through shared vertices) */
static inline uint32_t tmesh_components(const tmesh *m)
{
    uint32_t *p = malloc((size_t)m->nv * sizeof *p + 4), n = 0;
    for (uint32_t i = 0; i < m->nv; i++)
        p[i] = i;
    for (uint32_t t = 0; t < m->nt; t++)
        for (int k = 1; k < 3; k++) {
            uint32_t a = uf_find(p, m->t[3 * t]), b = uf_find(p, m->t[3 * t + k]);
            if (a != b)
                p[a] = b;
        }
    char *used = calloc(m->nv + 1, 1);
    for (uint32_t t = 0; t < 3 * m->nt; t++)
        used[m->t[t]] = 1;
    for (uint32_t i = 0; i < m->nv; i++)
        n += used[i] && uf_find(p, i) == i;
    free(p);
    free(used);
    return n;
}

#endif
