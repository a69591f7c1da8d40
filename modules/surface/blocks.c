/* The sparse grid: blocks of 8^3 points in a hash map keyed by block
 * coordinates, so memory follows the particles, not the domain. */
#include "surface.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void *meter_alloc(mem_meter *m, size_t bytes, int zero)
{
    void *p = zero ? calloc(1, bytes ? bytes : 1) : malloc(bytes ? bytes : 1);
    if (p) {
        m->now += bytes;
        m->peak = m->now > m->peak ? m->now : m->peak;
    }
    return p;
}

void *meter_realloc(mem_meter *m, void *p, size_t old_bytes, size_t new_bytes)
{
    void *q = realloc(p, new_bytes ? new_bytes : 1);
    if (q) {
        m->now += new_bytes - old_bytes;
        m->peak = m->now > m->peak ? m->now : m->peak;
    }
    return q;
}

void meter_free(mem_meter *m, void *p, size_t bytes)
{
    if (p) {
        free(p);
        m->now -= bytes;
    }
}

static uint64_t block_key(int32_t bx, int32_t by, int32_t bz)
{
    return (uint64_t)bx | (uint64_t)by << 21 | (uint64_t)bz << 42;
}

static size_t key_hash(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return (size_t)k;
}

int sgrid_init(sgrid *g, mem_meter *m, const double lo[3], const double hi[3], double cell)
{
    memset(g, 0, sizeof *g);
    g->mem = m;
    g->cell = cell;
    for (int k = 0; k < 3; k++) {
        g->lo[k] = floor(lo[k] / cell) * cell;
        double nb = ceil((hi[k] - g->lo[k]) / cell / BLOCK) + 1;
        if (!(nb < (double)(1 << 17))) /* points below 2^20: mesher.c packs them in a key */
            return FLOE_ERR_ARG;
        g->max_block[k] = (int32_t)nb;
    }
    g->cap = 1024;
    g->keys = meter_alloc(m, g->cap * sizeof *g->keys, 1);
    g->slot_block = meter_alloc(m, g->cap * sizeof *g->slot_block, 0);
    return g->keys && g->slot_block ? FLOE_OK : FLOE_ERR_NOMEM;
}

void sgrid_free(sgrid *g)
{
    meter_free(g->mem, g->keys, g->cap * sizeof *g->keys);
    meter_free(g->mem, g->slot_block, g->cap * sizeof *g->slot_block);
    meter_free(g->mem, g->coord, g->coord_cap * 3 * sizeof *g->coord);
    meter_free(g->mem, g->val, (size_t)g->nblocks * BLOCK_PTS * sizeof *g->val);
    memset(g, 0, sizeof *g);
}

int32_t sgrid_find(const sgrid *g, int32_t bx, int32_t by, int32_t bz)
{
    if (bx < 0 || by < 0 || bz < 0 || bx >= g->max_block[0] || by >= g->max_block[1] || bz >= g->max_block[2])
        return -1;
    uint64_t k = block_key(bx, by, bz) + 1;
    for (size_t s = key_hash(k) & (g->cap - 1);; s = (s + 1) & (g->cap - 1)) {
        if (g->keys[s] == k)
            return g->slot_block[s];
        if (!g->keys[s])
            return -1;
    }
}

static int grow(sgrid *g)
{
    size_t cap = g->cap * 2;
    uint64_t *keys = meter_alloc(g->mem, cap * sizeof *keys, 1);
    int32_t *sb = meter_alloc(g->mem, cap * sizeof *sb, 0);
    if (!keys || !sb) {
        meter_free(g->mem, keys, cap * sizeof *keys);
        meter_free(g->mem, sb, cap * sizeof *sb);
        return FLOE_ERR_NOMEM;
    }
    for (size_t s = 0; s < g->cap; s++)
        if (g->keys[s]) {
            size_t t = key_hash(g->keys[s]) & (cap - 1);
            while (keys[t])
                t = (t + 1) & (cap - 1);
            keys[t] = g->keys[s];
            sb[t] = g->slot_block[s];
        }
    meter_free(g->mem, g->keys, g->cap * sizeof *g->keys);
    meter_free(g->mem, g->slot_block, g->cap * sizeof *g->slot_block);
    g->keys = keys;
    g->slot_block = sb;
    g->cap = cap;
    return FLOE_OK;
}

int32_t sgrid_touch(sgrid *g, const int32_t b[3])
{
    uint64_t k = block_key(b[0], b[1], b[2]) + 1;
    size_t s = key_hash(k) & (g->cap - 1);
    for (; g->keys[s]; s = (s + 1) & (g->cap - 1))
        if (g->keys[s] == k)
            return g->slot_block[s];
    if (2 * (size_t)(g->nblocks + 1) > g->cap) { /* load factor 1/2 */
        if (grow(g))
            return -1;
        return sgrid_touch(g, b);
    }
    if ((size_t)g->nblocks == g->coord_cap) {
        size_t cap = g->coord_cap ? 2 * g->coord_cap : 256;
        int32_t *c = meter_realloc(g->mem, g->coord, g->coord_cap * 3 * sizeof *c, cap * 3 * sizeof *c);
        if (!c)
            return -1;
        g->coord = c;
        g->coord_cap = cap;
    }
    g->keys[s] = k;
    g->slot_block[s] = g->nblocks;
    memcpy(&g->coord[3 * g->nblocks], b, 3 * sizeof *b);
    return g->nblocks++;
}

int sgrid_touch_box(sgrid *g, const int64_t p0[3], const int64_t p1[3])
{
    int32_t b0[3], b1[3];
    for (int k = 0; k < 3; k++) {
        int64_t a = p0[k] < 0 ? 0 : p0[k], z = p1[k];
        b0[k] = (int32_t)(a >> BLOCK_LOG);
        b1[k] = (int32_t)(z >> BLOCK_LOG);
        if (b1[k] >= g->max_block[k])
            b1[k] = g->max_block[k] - 1;
    }
    int32_t b[3];
    for (b[2] = b0[2]; b[2] <= b1[2]; b[2]++)
        for (b[1] = b0[1]; b[1] <= b1[1]; b[1]++)
            for (b[0] = b0[0]; b[0] <= b1[0]; b[0]++)
                if (sgrid_touch(g, b) < 0)
                    return FLOE_ERR_NOMEM;
    return FLOE_OK;
}

int sgrid_alloc_values(sgrid *g)
{
    g->val = meter_alloc(g->mem, (size_t)g->nblocks * BLOCK_PTS * sizeof *g->val, 1);
    return g->val || !g->nblocks ? FLOE_OK : FLOE_ERR_NOMEM;
}
