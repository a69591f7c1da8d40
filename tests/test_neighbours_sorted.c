/* Kipfer's sorted-key search (method "sorted_keys") gives the neighbour
 * sets of the cell search, checked against it and against brute force on
 * random, clustered and terrain-like sets in 2D and 3D, and through the
 * neighbours stage with a fluid and a boundary set. */
#include "sim_fixture.h"

#include "ctx.h"
#include "neighbours.h"
#include "neighbours_sorted.h"

#include <stdlib.h>

static uint64_t seed = 88172645463325252ull;
static float rnd(void)
{
    seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
    return (float)((double)(seed >> 11) / 9007199254740992.0);
}

enum { RANDOM, CLUSTERED, TERRAIN };

static void make(float *x, uint32_t n, int dim, int kind)
{
    for (uint32_t i = 0; i < n; i++) {
        float *p = x + 3 * i;
        if (kind == RANDOM) {
            p[0] = rnd(), p[1] = rnd(), p[2] = dim == 3 ? rnd() : 0;
        } else if (kind == CLUSTERED) { /* dense blobs and a few strays */
            int c = (int)(rnd() * 5);
            float cx = 0.2f * c, cy = 0.15f * (c % 3), s = i % 17 ? 0.03f : 0.5f;
            p[0] = cx + s * (rnd() - 0.5f), p[1] = cy + s * (rnd() - 0.5f), p[2] = dim == 3 ? s * (rnd() - 0.5f) : 0;
        } else { /* a thin sheet following a bumpy terrain */
            float u = rnd() * 2, w = dim == 3 ? rnd() * 2 : 0;
            p[0] = u, p[2] = w;
            p[1] = 0.1f * sinf(5 * u) * cosf(3 * w) + 0.03f * rnd();
        }
    }
}

/* the cell search's lists of x in x against the sorted keys' adjacency
 * and against brute force over every pair */
static void compare(int dim, int kind, uint32_t n, float r)
{
    float *x = malloc(sizeof(float) * 3 * n);
    make(x, n, dim, kind);
    float lo[3] = {1e9f, 1e9f, 1e9f}, hi[3] = {-1e9f, -1e9f, -1e9f};
    for (uint32_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++)
            lo[k] = fminf(lo[k], x[3 * i + k]), hi[k] = fmaxf(hi[k], x[3 * i + k]);
    nb_grid g;
    cr_assert_eq(nb_grid_init(&g, dim, lo, hi, r, (uint64_t)1 << 28), 0);
    nb_sorted so = {0};
    nb_list cells = {0}, keys = {0};
    cr_assert_eq(nb_sort(&so, &g, x, n), 0);
    cr_assert_eq(nb_build(&cells, &g, x, n, &so, x, r, 1), 0);
    nbs_state st = {0};
    cr_assert_eq(nbs_adjacency(&st, dim, x, n, r), 0);
    cr_assert_eq(nbs_list(&st, 0, n, 0, n, &keys), 0);
    uint64_t total = 0, brute = 0;
    uint8_t *mark = calloc(n, 1);
    for (uint32_t i = 0; i < n; i++) {
        cr_assert_eq(cells.count[i], keys.count[i], "kind %d, %dD: particle %u has %u neighbours by cells, %u by "
                     "sorted keys", kind, dim, i, cells.count[i], keys.count[i]);
        for (uint32_t k = 0; k < cells.count[i]; k++)
            mark[cells.idx[(size_t)i * cells.stride + k]] = 1;
        for (uint32_t k = 0; k < keys.count[i]; k++)
            cr_assert(mark[keys.idx[(size_t)i * keys.stride + k]], "kind %d: %u in the sorted keys' row of %u only",
                      kind, keys.idx[(size_t)i * keys.stride + k], i);
        for (uint32_t k = 0; k < cells.count[i]; k++)
            mark[cells.idx[(size_t)i * cells.stride + k]] = 0;
        total += keys.count[i];
        if (i % 7 == 0) /* brute force over every pair of a seventh of the rows */
            for (uint32_t j = 0; j < n; j++) {
                float dx = x[3 * j] - x[3 * i], dy = x[3 * j + 1] - x[3 * i + 1], dz = x[3 * j + 2] - x[3 * i + 2];
#if defined(__FMA__)
                float d2 = fmaf(dz, dz, fmaf(dy, dy, dx * dx));
#else
                float d2 = dx * dx + dy * dy + dz * dz;
#endif
                if (j != i && d2 < r * r) {
                    brute++;
                    int found = 0;
                    for (uint32_t k = 0; k < keys.count[i] && !found; k++)
                        found = keys.idx[(size_t)i * keys.stride + k] == j;
                    cr_assert(found, "brute force: %u is a neighbour of %u, the sorted keys miss it", j, i);
                }
            }
    }
    cr_log_info("kind %d, %dD: %u particles, %.1f neighbours each, identical (brute-force rows: %llu pairs)", kind, dim,
                n, (double)total / n, (unsigned long long)brute);
    cr_assert_gt(total, n, "the test set should have neighbours");
    free(mark);
    nbs_free(&st);
    nb_sorted_free(&so);
    nb_list_free(&cells);
    nb_list_free(&keys);
    free(x);
}

Test(sorted_keys, random_2d) { compare(2, RANDOM, 6000, 0.02f); }
Test(sorted_keys, random_3d) { compare(3, RANDOM, 8000, 0.06f); }
Test(sorted_keys, clustered_2d) { compare(2, CLUSTERED, 5000, 0.01f); }
Test(sorted_keys, clustered_3d) { compare(3, CLUSTERED, 6000, 0.012f); }
Test(sorted_keys, terrain_like_2d) { compare(2, TERRAIN, 5000, 0.004f); }
Test(sorted_keys, terrain_like_3d) { compare(3, TERRAIN, 8000, 0.05f); }

/* through the stage: a tank (fluid and boundary sets), method cells against
 * sorted_keys, every list of every set pair */
Test(sorted_keys, the_stage_gives_the_cell_search_lists)
{
    const float tank[3] = {0.4f, 0.3f, 0.2f}, water[3] = {0.2f, 0.2f, 0.2f};
    fixture f = fixture_tank(3, 0.02f, tank, water, 1);
    float *x = floe_attr(f.ctx, f.fluid, "x", FLOE_VEC3);
    for (uint32_t i = 0; i < floe_set_size(f.ctx, f.fluid); i++) /* disorder the lattice */
        for (int k = 0; k < 3; k++)
            x[3 * i + k] += 0.004f * (rnd() - 0.5f);
    floe_set_moved(f.ctx, f.fluid);
    floe_param_kv c[] = {KV_S("method", "cells"), KV_F("reorder_every", 0)};
    floe_param_kv s[] = {KV_S("method", "sorted_keys"), KV_F("reorder_every", 0)};
    pset *pq = ctx_set(f.ctx, f.fluid);
    uint64_t seen = 0;
    for (int pass = 0; pass < 2; pass++) {
        floe_pipeline_clear(f.ctx);
        cr_assert_eq(floe_pipeline_add(f.ctx, "neighbours", pass ? s : c, 2), FLOE_OK, "%s", floe_ctx_error(f.ctx));
        cr_assert_eq(floe_step(f.ctx, 1e-4), FLOE_OK, "%s", floe_ctx_error(f.ctx));
        static uint32_t rows[2][2][20000][64];
        static uint32_t counts[2][2][20000];
        for (int t = 0; t < 2; t++) {
            const nb_list *l = &pq->lists[t];
            for (uint32_t i = 0; i < l->n; i++) {
                counts[pass][t][i] = l->count[i];
                cr_assert_leq(l->count[i], 64);
                memcpy(rows[pass][t][i], l->idx + (size_t)i * l->stride, l->count[i] * sizeof(uint32_t));
                /* order within a row may differ: sort */
                uint32_t *r = rows[pass][t][i];
                for (uint32_t a = 1; a < l->count[i]; a++)
                    for (uint32_t b = a; b > 0 && r[b - 1] > r[b]; b--) {
                        uint32_t tmp = r[b];
                        r[b] = r[b - 1];
                        r[b - 1] = tmp;
                    }
            }
        }
        if (pass == 1)
            for (int t = 0; t < 2; t++)
                for (uint32_t i = 0; i < pq->n; i++) {
                    cr_assert_eq(counts[0][t][i], counts[1][t][i], "set %d, particle %u", t, i);
                    cr_assert_arr_eq(rows[0][t][i], rows[1][t][i], counts[0][t][i] * sizeof(uint32_t));
                    seen += counts[0][t][i];
                }
    }
    cr_log_info("stage: %u fluid particles, %llu list entries identical in fluid and boundary lists", pq->n,
                (unsigned long long)seen);
    cr_assert_gt(seen, 10000);
    floe_ctx_destroy(f.ctx);
}
