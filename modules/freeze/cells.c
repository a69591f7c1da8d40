/* The freezing module's cell list (cells.h). */
#include "cells.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static inline int64_t cell_of(float x, float inv) { return (int64_t)floorf(x * inv); }

/* cells as 21-bit fields (offset by 2^20): any position within 2^20 cells of the origin */
static inline uint64_t pack(int64_t cx, int64_t cy, int64_t cz)
{
    const int64_t o = 1 << 20, m = (1 << 21) - 1;
    return (uint64_t)((cx + o) & m) | (uint64_t)((cy + o) & m) << 21 | (uint64_t)((cz + o) & m) << 42;
}

static inline uint32_t bucket(uint64_t k, uint32_t mask)
{
    k ^= k >> 31;
    k *= 0x9e3779b97f4a7c15ull;
    k ^= k >> 29;
    return (uint32_t)k & mask;
}

int cg_build(cgrid *g, const float *x, uint32_t n, float cell)
{
    uint32_t nb = 64;
    while (nb < 2 * (uint64_t)n && nb < (1u << 30))
        nb <<= 1;
    if (n > g->cap_n) {
        free(g->idx);
        free(g->key);
        g->idx = malloc((size_t)n * sizeof *g->idx);
        g->key = malloc((size_t)n * sizeof *g->key);
        g->cap_n = n;
        if (!g->idx || !g->key) {
            g->cap_n = 0;
            return -1;
        }
    }
    if (nb + 2 > g->cap_b) {
        free(g->start);
        g->start = malloc(((size_t)nb + 2) * sizeof *g->start);
        g->cap_b = nb + 2;
        if (!g->start) {
            g->cap_b = 0;
            return -1;
        }
    }
    g->cell = cell;
    g->inv = 1.0f / cell;
    g->n = n;
    g->mask = nb - 1;
    g->x = x;
    uint32_t *cnt = g->start; /* counts at [b + 2], then starts at [b + 1] */
    memset(cnt, 0, ((size_t)nb + 2) * sizeof *cnt);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t k = pack(cell_of(x[3 * i], g->inv), cell_of(x[3 * i + 1], g->inv), cell_of(x[3 * i + 2], g->inv));
        cnt[bucket(k, g->mask) + 2]++;
    }
    for (uint32_t b = 0; b < nb; b++)
        cnt[b + 2] += cnt[b + 1];
    for (uint32_t i = 0; i < n; i++) { /* stable: point order inside a bucket */
        uint64_t k = pack(cell_of(x[3 * i], g->inv), cell_of(x[3 * i + 1], g->inv), cell_of(x[3 * i + 2], g->inv));
        uint32_t s = cnt[bucket(k, g->mask) + 1]++;
        g->idx[s] = i;
        g->key[s] = k;
    }
    /* now start[b] .. start[b + 1] is bucket b */
    return 0;
}

void cg_free(cgrid *g)
{
    free(g->idx);
    free(g->key);
    free(g->start);
    memset(g, 0, sizeof *g);
}

uint32_t cg_query(const cgrid *g, const float p[3], float r, uint32_t self, uint32_t *out, uint32_t cap)
{
    if (!g->n)
        return 0;
    const float r2 = r * r;
    const int64_t reach = (int64_t)ceilf(r * g->inv);
    int64_t c[3], lo[3], hi[3];
    for (int d = 0; d < 3; d++) {
        c[d] = cell_of(p[d], g->inv);
        lo[d] = cell_of(p[d] - r, g->inv);
        hi[d] = cell_of(p[d] + r, g->inv);
        if (lo[d] < c[d] - reach)
            lo[d] = c[d] - reach;
        if (hi[d] > c[d] + reach)
            hi[d] = c[d] + reach;
    }
    uint32_t m = 0;
    const float *x = g->x;
    for (int64_t cz = lo[2]; cz <= hi[2]; cz++)
        for (int64_t cy = lo[1]; cy <= hi[1]; cy++)
            for (int64_t cx = lo[0]; cx <= hi[0]; cx++) {
                uint64_t k = pack(cx, cy, cz);
                uint32_t b = bucket(k, g->mask);
                for (uint32_t s = g->start[b]; s < g->start[b + 1]; s++) {
                    if (g->key[s] != k)
                        continue;
                    uint32_t j = g->idx[s];
                    float dx = p[0] - x[3 * j], dy = p[1] - x[3 * j + 1], dz = p[2] - x[3 * j + 2];
                    if (j == self || dx * dx + dy * dy + dz * dz >= r2)
                        continue;
                    if (m < cap)
                        out[m] = j;
                    m++;
                }
            }
    return m;
}
