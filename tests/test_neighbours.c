/* Cell-sorted neighbour search (core/src/neighbours.c) against brute force. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "neighbours.h"

/* ------------------------------------------------------------ helpers -- */

static uint64_t rng_state;

static void rng_seed(uint64_t s) { rng_state = s ? s : 0x9E3779B97F4A7C15ull; }

static uint64_t rng_next(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

/* uniform in [a, b) */
static float rng_uniform(float a, float b)
{
    double u = (double)(rng_next() >> 11) / 9007199254740992.0;
    return (float)(a + (b - a) * u);
}

static float *random_points(uint32_t n, const float lo[3], const float hi[3], int dim)
{
    float *x = malloc((size_t)(n ? n : 1) * 3 * sizeof(float));
    cr_assert_not_null(x);
    for (uint32_t i = 0; i < n; i++)
        for (int a = 0; a < 3; a++)
            x[3 * i + a] = rng_uniform(lo[a], hi[a]);
    /* in 2D the z component must be ignored: fill it with junk */
    if (dim == 2)
        for (uint32_t i = 0; i < n; i++)
            x[3 * i + 2] = rng_uniform(-100.0f, 100.0f);
    return x;
}

static double dist2(const float *a, const float *b, int dim)
{
    double s = 0.0;
    for (int k = 0; k < dim; k++) {
        double d = (double)a[k] - (double)b[k];
        s += d * d;
    }
    return s;
}

/* Relative band around radius^2 inside which float rounding may decide
 * either way; pairs clearly inside must be found, clearly outside must not. */
#define BAND 1e-5

static uint64_t check_band(const nb_list *l, const float *xq, uint32_t nq, const float *xt, uint32_t nt,
                           float radius, int exclude_self, int dim, double band);

/* Compare every list with the brute-force neighbour SET of the query
 * particle (order-independent). Returns the total number of neighbours. */
static uint64_t check_against_brute(const nb_list *l, const float *xq, uint32_t nq, const float *xt,
                                    uint32_t nt, float radius, int exclude_self, int dim)
{
    return check_band(l, xq, nq, xt, nt, radius, exclude_self, dim, BAND);
}

/* band 0: exact comparison, for inputs whose distances are exact in float */
static uint64_t check_band(const nb_list *l, const float *xq, uint32_t nq, const float *xt, uint32_t nt,
                           float radius, int exclude_self, int dim, double band)
{
    cr_assert_eq(l->n, nq, "list has %u rows, expected %u", l->n, nq);
    cr_assert(nq == 0 || (l->stride >= 8 && l->stride % 8 == 0), "stride %u", l->stride);
    uint32_t *stamp = calloc(nt ? nt : 1, sizeof *stamp);
    cr_assert_not_null(stamp);
    const double r2 = (double)radius * radius;
    uint64_t total = 0;
    for (uint32_t i = 0; i < nq; i++) {
        uint32_t c = l->count[i];
        cr_assert_leq(c, l->stride, "particle %u: count %u beyond stride %u", i, c, l->stride);
        cr_assert_leq(c, nt, "particle %u: count %u > target size %u", i, c, nt);
        const uint32_t *row = l->idx + (size_t)i * l->stride;
        for (uint32_t k = 0; k < c; k++) {
            uint32_t j = row[k];
            cr_assert_lt(j, nt, "particle %u: neighbour index %u out of range", i, j);
            cr_assert_neq(stamp[j], i + 1, "particle %u: neighbour %u listed twice", i, j);
            stamp[j] = i + 1;
            cr_assert(!(exclude_self && j == i), "particle %u lists itself", i);
            double d2 = dist2(xq + 3 * (size_t)i, xt + 3 * (size_t)j, dim);
            cr_assert_lt(d2, r2 * (1.0 + band), "particle %u: %u at distance %g >= radius %g", i, j,
                         sqrt(d2), (double)radius);
        }
        /* padded to whole blocks of 8 with the first index (floe_nlist) */
        for (uint32_t k = c; c > 0 && k < ((c + 7u) & ~7u) && k < l->stride; k++)
            cr_assert_eq(row[k], row[0], "particle %u: pad slot %u holds %u, not the first index %u", i, k, row[k],
                         row[0]);
        for (uint32_t j = 0; j < nt; j++) {
            if (exclude_self && j == i)
                continue;
            double d2 = dist2(xq + 3 * (size_t)i, xt + 3 * (size_t)j, dim);
            if (d2 < r2 * (1.0 - band))
                cr_assert_eq(stamp[j], i + 1, "particle %u: missed neighbour %u at distance %g (radius %g)",
                             i, j, sqrt(d2), (double)radius);
        }
        total += c;
    }
    free(stamp);
    return total;
}

static void check_sort(const nb_sorted *s, const nb_grid *g, const float *x, uint32_t n)
{
    const uint32_t ncells = (uint32_t)g->n[0] * g->n[1] * g->n[2];
    cr_assert_eq(s->n, n);
    cr_assert_eq(s->ncells, ncells);
    cr_assert_eq(s->cell_start[0], 0u);
    /* every run of 1-3 consecutive cells (what the search reads: a row of
     * a 3x3(x3) block) starts at the particles of lower key and holds
     * exactly its cells' particles; an end below its start reads as empty
     * (the table's tail past nb_sort's high-water mark holds 0) */
    uint32_t *cnt = calloc((size_t)ncells + 1, sizeof *cnt), *below = calloc((size_t)ncells + 1, sizeof *below);
    cr_assert(cnt && below);
    for (uint32_t i = 0; i < n; i++)
        cnt[nb_cell_key(g, x + 3 * (size_t)i)]++;
    for (uint32_t c = 0; c < ncells; c++)
        below[c + 1] = below[c] + cnt[c];
    for (uint32_t c = 0; c < ncells; c++)
        for (uint32_t w = 1; w <= 3 && c + w <= ncells; w++) {
            const uint32_t a = s->cell_start[c], e = s->cell_start[c + w], b = e < a ? a : e;
            const uint32_t want = below[c + w] - below[c];
            cr_assert_eq(b - a, want, "cells %u..%u: range [%u, %u) for %u particles", c, c + w - 1, a, e, want);
            if (want)
                cr_assert_eq(a, below[c], "cells %u..%u start at slot %u, not %u", c, c + w - 1, a, below[c]);
        }
    free(cnt), free(below);
    uint8_t *seen = calloc(n ? n : 1, 1);
    cr_assert_not_null(seen);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t k = nb_cell_key(g, x + 3 * (size_t)i);
        cr_assert_eq(s->key[i], k, "key[%u] = %u, nb_cell_key gives %u", i, s->key[i], k);
        cr_assert_lt(k, ncells);
    }
    for (uint32_t k = 0; k < n; k++) {
        uint32_t p = s->order[k];
        cr_assert_lt(p, n, "order[%u] = %u out of range", k, p);
        cr_assert_eq(seen[p], 0, "order is not a permutation: %u twice", p);
        seen[p] = 1;
        if (k > 0) {
            uint32_t q = s->order[k - 1];
            cr_assert_leq(s->key[q], s->key[p], "keys decrease along order at slot %u", k);
            if (s->key[q] == s->key[p])
                cr_assert_lt(q, p, "sort not stable at slot %u", k);
        }
    }
    for (uint32_t c = 0; c < ncells; c++)
        for (uint32_t k = s->cell_start[c]; k < s->cell_start[c + 1]; k++)
            cr_assert_eq(s->key[s->order[k]], c, "slot %u lies in cell %u's range but has key %u", k, c,
                         s->key[s->order[k]]);
    free(seen);
}

/* sort xt, build xq against it, compare with brute force; returns total */
/* run_case builds the target's near-cell map (nb_sorted_near) first */
static int with_near;
/* run_case keeps the target's sorted-slot positions (nb_sorted_keep_slots) */
static int with_slots;

static uint64_t run_case(int dim, const float lo[3], const float hi[3], float cell, const float *xq, uint32_t nq,
                         const float *xt, uint32_t nt, float radius, int exclude_self)
{
    nb_grid g;
    cr_assert_eq(nb_grid_init(&g, dim, lo, hi, cell, 1u << 24), 0);
    nb_sorted s = {0};
    nb_list l = {0};
    cr_assert_eq(nb_sort(&s, &g, xt, nt), 0);
    check_sort(&s, &g, xt, nt);
    if (with_near)
        cr_assert_eq(nb_sorted_near(&s, &g), 0);
    if (with_slots)
        cr_assert_eq(nb_sorted_keep_slots(&s, xt), 0);
    cr_assert_eq(nb_build(&l, &g, xq, nq, &s, xt, radius, exclude_self), 0);
    uint64_t total = check_against_brute(&l, xq, nq, xt, nt, radius, exclude_self, dim);
    nb_list_free(&l);
    nb_sorted_free(&s);
    return total;
}

/* ------------------------------------------------------------- search -- */

Test(neighbours, random_3d_self)
{
    rng_seed(1);
    const float lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
    const uint32_t n = 6000;
    float *x = random_points(n, lo, hi, 3);
    /* ~ n * 4/3 pi r^3 neighbours each: make sure the test is not vacuous */
    uint64_t t1 = run_case(3, lo, hi, 0.07f, x, n, x, n, 0.07f, 1);
    cr_assert_gt(t1, (uint64_t)n * 4, "only %llu neighbour pairs", (unsigned long long)t1);
    uint64_t t0 = run_case(3, lo, hi, 0.07f, x, n, x, n, 0.07f, 0);
    cr_assert_eq(t0, t1 + n, "exclude_self off must add exactly the n self pairs");
    /* radius smaller than the cell */
    run_case(3, lo, hi, 0.1f, x, n, x, n, 0.063f, 1);
    free(x);
}

Test(neighbours, random_2d_self)
{
    rng_seed(2);
    const float lo[3] = {-0.5f, 0.25f, 0}, hi[3] = {1.5f, 1.25f, 0};
    const uint32_t n = 5000;
    float *x = random_points(n, lo, hi, 2);
    uint64_t t1 = run_case(2, lo, hi, 0.05f, x, n, x, n, 0.05f, 1);
    cr_assert_gt(t1, (uint64_t)n * 4, "only %llu neighbour pairs", (unsigned long long)t1);
    uint64_t t0 = run_case(2, lo, hi, 0.05f, x, n, x, n, 0.05f, 0);
    cr_assert_eq(t0, t1 + n);
    run_case(2, lo, hi, 0.07f, x, n, x, n, 0.04f, 0);
    free(x);
}

Test(neighbours, cross_set)
{
    rng_seed(3);
    for (int dim = 2; dim <= 3; dim++) {
        const float lo[3] = {0, 0, 0}, hi[3] = {1, 2, 1};
        const uint32_t nq = 3000, nt = 4500;
        float *xq = random_points(nq, lo, hi, dim);
        float *xt = random_points(nt, lo, hi, dim);
        float cell = dim == 3 ? 0.1f : 0.04f;
        uint64_t t = run_case(dim, lo, hi, cell, xq, nq, xt, nt, cell, 0);
        cr_assert_gt(t, (uint64_t)nq * 3, "dim %d: only %llu pairs", dim, (unsigned long long)t);
        /* also the other way round, with more queries than targets */
        run_case(dim, lo, hi, cell, xt, nt, xq, nq, cell * 0.9f, 0);
        /* exclude_self on a cross set skips exactly the pairs j == i */
        run_case(dim, lo, hi, cell, xq, nq, xt, nt, cell, 1);
        free(xq);
        free(xt);
    }
}

static const nb_grid *key_grid;
static int cmp_key(const void *a, const void *b)
{
    const uint32_t ka = nb_cell_key(key_grid, a), kb = nb_cell_key(key_grid, b);
    return (ka > kb) - (ka < kb);
}

/* Queries of another set in cell-key order (as a reordered fluid comes):
 * runs of queries in one cell are searched as groups (build_cross), runs
 * longer than a group included; with and without the near map, 2D and 3D,
 * against brute force */
Test(neighbours, cross_set_queries_in_cell_order)
{
    rng_seed(31);
    for (int dim = 2; dim <= 3; dim++)
        for (int near = 0; near < 2; near++) {
            const float lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
            const float qlo[3] = {0.2f, 0.1f, 0.3f}, qhi[3] = {0.7f, 0.6f, 0.6f};
            const uint32_t nq = 6000, nt = 2500;
            float *xq = random_points(nq, qlo, qhi, dim);
            float *xt = random_points(nt, lo, hi, dim);
            const float cell = dim == 3 ? 0.1f : 0.05f;
            nb_grid g;
            cr_assert_eq(nb_grid_init(&g, dim, lo, hi, cell, 1u << 24), 0);
            key_grid = &g;
            qsort(xq, nq, 3 * sizeof(float), cmp_key);
            with_near = near;
            uint64_t t = run_case(dim, lo, hi, cell, xq, nq, xt, nt, cell, 0);
            with_near = 0;
            cr_assert_gt(t, (uint64_t)nq, "dim %d: only %llu pairs", dim, (unsigned long long)t);
            free(xq);
            free(xt);
        }
}

Test(neighbours, all_in_one_cell)
{
    rng_seed(4);
    const uint32_t n = 700;
    /* a grid of a single cell */
    const float lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
    float *x = random_points(n, lo, hi, 3);
    nb_grid g;
    cr_assert_eq(nb_grid_init(&g, 3, lo, hi, 1.0f, 1000), 0);
    cr_assert(g.n[0] == 1 && g.n[1] == 1 && g.n[2] == 1);
    run_case(3, lo, hi, 1.0f, x, n, x, n, 0.3f, 1);
    /* many cells but all particles packed inside one of them */
    const float lo2[3] = {0.31f, 0.51f, 0.71f}, hi2[3] = {0.36f, 0.56f, 0.76f};
    float *y = random_points(n, lo2, hi2, 3);
    uint64_t t = run_case(3, lo, hi, 0.1f, y, n, y, n, 0.1f, 1);
    cr_assert_eq(t, (uint64_t)n * (n - 1), "every pair lies within radius: expected %u, got %llu", n * (n - 1),
                 (unsigned long long)t);
    free(x);
    free(y);
}

Test(neighbours, empty_target)
{
    rng_seed(5);
    const float lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
    float *xq = random_points(3000, lo, hi, 3);
    nb_grid g;
    cr_assert_eq(nb_grid_init(&g, 3, lo, hi, 0.1f, 1u << 20), 0);
    nb_sorted s = {0};
    nb_list l = {0};
    cr_assert_eq(nb_sort(&s, &g, NULL, 0), 0);
    cr_assert_eq(s.n, 0u);
    cr_assert_eq(s.cell_start[s.ncells], 0u);
    /* pre-fill counts with junk: they must be reset */
    cr_assert_eq(nb_build(&l, &g, xq, 3000, &s, xq, 0.1f, 0), 0);
    memset(l.count, 0xAB, 3000 * sizeof(uint32_t));
    cr_assert_eq(nb_build(&l, &g, xq, 3000, &s, NULL, 0.1f, 0), 0);
    cr_assert_eq(l.n, 3000u);
    for (uint32_t i = 0; i < 3000; i++)
        cr_assert_eq(l.count[i], 0u, "particle %u has %u neighbours in an empty set", i, l.count[i]);
    nb_list_free(&l);
    nb_sorted_free(&s);
    free(xq);
}

Test(neighbours, empty_query)
{
    rng_seed(6);
    const float lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
    float *xt = random_points(2000, lo, hi, 3);
    nb_grid g;
    cr_assert_eq(nb_grid_init(&g, 3, lo, hi, 0.1f, 1u << 20), 0);
    nb_sorted s = {0};
    nb_list l = {0};
    cr_assert_eq(nb_sort(&s, &g, xt, 2000), 0);
    cr_assert_eq(nb_build(&l, &g, NULL, 0, &s, xt, 0.1f, 1), 0);
    cr_assert_eq(l.n, 0u);
    /* a list that had rows shrinks to zero rows */
    cr_assert_eq(nb_build(&l, &g, xt, 2000, &s, xt, 0.1f, 1), 0);
    cr_assert_eq(l.n, 2000u);
    cr_assert_eq(nb_build(&l, &g, xt, 0, &s, xt, 0.1f, 1), 0);
    cr_assert_eq(l.n, 0u);
    nb_list_free(&l);
    nb_sorted_free(&s);
    free(xt);
}

Test(neighbours, outside_grid_clamped)
{
    rng_seed(7);
    for (int dim = 2; dim <= 3; dim++) {
        /* grid covers [0,1]^d; particles spread over [-1,2]^d, i.e. beyond
         * every face, plus a layer hugging each face from outside */
        const float glo[3] = {0, 0, 0}, ghi[3] = {1, 1, 1};
        const float plo[3] = {-1, -1, -1}, phi[3] = {2, 2, 2};
        const uint32_t n = dim == 3 ? 5000 : 4000;
        float *x = random_points(n, plo, phi, dim);
        for (uint32_t i = 0; i < n / 4; i++) {
            int a = (int)(rng_next() % (uint64_t)dim);
            x[3 * i + a] = (rng_next() & 1) ? rng_uniform(1.0f, 1.1f) : rng_uniform(-0.1f, 0.0f);
        }
        float cell = dim == 3 ? 0.25f : 0.1f;
        uint64_t t = run_case(dim, glo, ghi, cell, x, n, x, n, cell, 1);
        cr_assert_gt(t, (uint64_t)n, "dim %d: only %llu pairs", dim, (unsigned long long)t);
        /* queries far outside against targets inside, and the reverse */
        const uint32_t nt = 2000;
        float *xt = random_points(nt, glo, ghi, dim);
        run_case(dim, glo, ghi, cell, x, n, xt, nt, cell, 0);
        run_case(dim, glo, ghi, cell, xt, nt, x, n, cell, 0);
        free(xt);
        free(x);
    }
}

Test(neighbours, cell_key_clamping)
{
    nb_grid g;
    const float lo[3] = {0, 0, 0}, hi[3] = {1, 2, 3};
    cr_assert_eq(nb_grid_init(&g, 3, lo, hi, 0.5f, 1000), 0);
    cr_assert(g.n[0] == 2 && g.n[1] == 4 && g.n[2] == 6, "n = %d %d %d", g.n[0], g.n[1], g.n[2]);
    const float in[3] = {0.75f, 1.25f, 2.25f};
    cr_assert_eq(nb_cell_key(&g, in), 1u + 2u * (2u + 4u * 4u));
    const float below[3] = {-5.0f, -0.01f, -1e30f};
    cr_assert_eq(nb_cell_key(&g, below), 0u);
    const float above[3] = {5.0f, 2.0f, INFINITY};
    cr_assert_eq(nb_cell_key(&g, above), 1u + 2u * (3u + 4u * 5u));
    const float nan3[3] = {NAN, NAN, NAN};
    cr_assert_eq(nb_cell_key(&g, nan3), 0u);
    const float mixed[3] = {NAN, 1.9f, -INFINITY};
    cr_assert_eq(nb_cell_key(&g, mixed), 2u * 3u);

    /* 2D: one layer, z ignored */
    cr_assert_eq(nb_grid_init(&g, 2, lo, hi, 0.5f, 1000), 0);
    cr_assert(g.n[0] == 2 && g.n[1] == 4 && g.n[2] == 1, "n = %d %d %d", g.n[0], g.n[1], g.n[2]);
    const float z1[3] = {0.75f, 1.25f, 100.0f}, z2[3] = {0.75f, 1.25f, -7.0f};
    cr_assert_eq(nb_cell_key(&g, z1), 1u + 2u * 2u);
    cr_assert_eq(nb_cell_key(&g, z2), 1u + 2u * 2u);
}

Test(neighbours, grid_init_errors)
{
    nb_grid g;
    const float lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
    cr_assert_eq(nb_grid_init(&g, 3, lo, hi, 0.0f, 1000), -1, "zero cell");
    cr_assert_eq(nb_grid_init(&g, 3, lo, hi, -0.1f, 1000), -1, "negative cell");
    cr_assert_eq(nb_grid_init(&g, 3, lo, hi, NAN, 1000), -1, "NaN cell");
    cr_assert_eq(nb_grid_init(&g, 4, lo, hi, 0.1f, 1000), -1, "dim 4");
    cr_assert_eq(nb_grid_init(&g, 1, lo, hi, 0.1f, 1000), -1, "dim 1");
    const float nanlo[3] = {0, NAN, 0};
    cr_assert_eq(nb_grid_init(&g, 3, nanlo, hi, 0.1f, 1000), -1, "NaN bound");
    const float nanhi[3] = {0, 0, NAN};
    cr_assert_eq(nb_grid_init(&g, 3, lo, nanhi, 0.1f, 1000), -1, "NaN bound");
    /* exactly 1000 cells fits, 999 allowed does not */
    cr_assert_eq(nb_grid_init(&g, 3, lo, hi, 0.1f, 1000), 0);
    cr_assert(g.n[0] * g.n[1] * g.n[2] == 1000);
    cr_assert_eq(nb_grid_init(&g, 3, lo, hi, 0.1f, 999), -1, "over max_cells");
    /* 2D ignores the z extent, so a NaN z bound does not matter */
    cr_assert_eq(nb_grid_init(&g, 2, lo, nanhi, 0.1f, 100), 0);
    cr_assert(g.n[2] == 1);
    /* degenerate box: at least one cell per axis */
    cr_assert_eq(nb_grid_init(&g, 3, lo, lo, 0.1f, 1000), 0);
    cr_assert(g.n[0] == 1 && g.n[1] == 1 && g.n[2] == 1);
    /* radius larger than the cell is refused */
    nb_sorted s = {0};
    nb_list l = {0};
    const float p[3] = {0.5f, 0.5f, 0.5f};
    cr_assert_eq(nb_grid_init(&g, 3, lo, hi, 0.1f, 1000), 0);
    cr_assert_eq(nb_sort(&s, &g, p, 1), 0);
    cr_assert_eq(nb_build(&l, &g, p, 1, &s, p, 0.2f, 0), -1);
    /* a grid that was never initialised is refused, not indexed */
    nb_grid z;
    memset(&z, 0, sizeof z);
    cr_assert_eq(nb_sort(&s, &z, p, 1), -1);
    cr_assert_eq(nb_build(&l, &z, p, 1, &s, p, 0.0f, 0), -1);
    nb_list_free(&l);
    nb_sorted_free(&s);
}

Test(neighbours, coincident)
{
    rng_seed(8);
    const float lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
    const uint32_t n = 2000, stack = 90;
    float *x = random_points(n, lo, hi, 3);
    /* a stack of coincident particles, and coincident pairs */
    for (uint32_t i = 0; i < stack; i++) {
        x[3 * i + 0] = 0.5f;
        x[3 * i + 1] = 0.5f;
        x[3 * i + 2] = 0.5f;
    }
    for (uint32_t i = stack; i + 1 < n; i += 20)
        memcpy(x + 3 * (i + 1), x + 3 * i, 3 * sizeof(float));
    run_case(3, lo, hi, 0.1f, x, n, x, n, 0.1f, 1);
    run_case(3, lo, hi, 0.1f, x, n, x, n, 0.1f, 0);

    nb_grid g;
    nb_sorted s = {0};
    nb_list l = {0};
    cr_assert_eq(nb_grid_init(&g, 3, lo, hi, 0.1f, 1u << 20), 0);
    cr_assert_eq(nb_sort(&s, &g, x, n), 0);
    cr_assert_eq(nb_build(&l, &g, x, n, &s, x, 0.1f, 1), 0);
    for (uint32_t i = 0; i < stack; i++)
        cr_assert_geq(l.count[i], stack - 1, "stacked particle %u sees only %u", i, l.count[i]);
    nb_list_free(&l);
    nb_sorted_free(&s);
    free(x);
}

Test(neighbours, single_particle)
{
    const float lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
    const float p[3] = {0.3f, 0.6f, 0.9f};
    for (int dim = 2; dim <= 3; dim++) {
        nb_grid g;
        nb_sorted s = {0};
        nb_list l = {0};
        cr_assert_eq(nb_grid_init(&g, dim, lo, hi, 0.25f, 1000), 0);
        cr_assert_eq(nb_sort(&s, &g, p, 1), 0);
        check_sort(&s, &g, p, 1);
        cr_assert_eq(nb_build(&l, &g, p, 1, &s, p, 0.25f, 1), 0);
        cr_assert_eq(l.n, 1u);
        cr_assert_eq(l.count[0], 0u, "dim %d: alone, excluding self", dim);
        cr_assert_eq(nb_build(&l, &g, p, 1, &s, p, 0.25f, 0), 0);
        cr_assert_eq(l.count[0], 1u, "dim %d: alone, including self", dim);
        cr_assert_eq(l.idx[0], 0u);
        nb_list_free(&l);
        nb_sorted_free(&s);
    }
}

Test(neighbours, stride_growth)
{
    rng_seed(9);
    const float lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
    const uint32_t n = 3000, cluster = 333;
    const float r = 0.05f;
    for (int dim = 2; dim <= 3; dim++) {
        float *x = random_points(n, lo, hi, dim);
        /* a dense cluster: all within r/2 of a centre, so pairwise < r */
        for (uint32_t i = 0; i < cluster; i++) {
            uint32_t k = 7 + 5 * i; /* spread through the index range */
            for (int a = 0; a < dim; a++)
                x[3 * k + a] = 0.4f + rng_uniform(-0.28f, 0.28f) * r;
        }
        nb_grid g;
        nb_sorted s = {0};
        nb_list l = {0};
        cr_assert_eq(nb_grid_init(&g, dim, lo, hi, r, 1u << 20), 0);
        cr_assert_eq(nb_sort(&s, &g, x, n), 0);
        cr_assert_eq(nb_build(&l, &g, x, n, &s, x, r, 1), 0);
        cr_assert_geq(l.stride, cluster - 1, "dim %d: stride %u too small", dim, l.stride);
        cr_assert_eq(l.stride % 8, 0u, "stride %u not a multiple of 8", l.stride);
        uint32_t maxc = 0;
        for (uint32_t i = 0; i < n; i++)
            maxc = l.count[i] > maxc ? l.count[i] : maxc;
        cr_assert_geq(maxc, cluster - 1);
        cr_assert_lt(l.stride, maxc + 8, "stride %u is not max count %u rounded to 8", l.stride, maxc);
        check_against_brute(&l, x, n, x, n, r, 1, dim);
        /* the wider stride stays and later builds remain exact */
        uint32_t stride = l.stride;
        float *y = random_points(n, lo, hi, dim);
        cr_assert_eq(nb_sort(&s, &g, y, n), 0);
        cr_assert_eq(nb_build(&l, &g, y, n, &s, y, r, 0), 0);
        cr_assert_eq(l.stride, stride);
        check_against_brute(&l, y, n, y, n, r, 0, dim);
        nb_list_free(&l);
        nb_sorted_free(&s);
        free(x);
        free(y);
    }
}

Test(neighbours, deterministic)
{
    rng_seed(10);
    const float lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
    const uint32_t n = 20000;
    float *x = random_points(n, lo, hi, 3);
    nb_grid g;
    cr_assert_eq(nb_grid_init(&g, 3, lo, hi, 0.05f, 1u << 20), 0);
    nb_sorted s1 = {0}, s2 = {0};
    nb_list l1 = {0}, l2 = {0};
#ifdef _OPENMP
    int prev = omp_get_max_threads();
    omp_set_num_threads(1);
#endif
    cr_assert_eq(nb_sort(&s1, &g, x, n), 0);
    cr_assert_eq(nb_build(&l1, &g, x, n, &s1, x, 0.05f, 1), 0);
#ifdef _OPENMP
    omp_set_num_threads(prev > 1 ? prev + 1 : 3); /* a different thread count */
#endif
    cr_assert_eq(nb_sort(&s2, &g, x, n), 0);
    cr_assert_eq(nb_build(&l2, &g, x, n, &s2, x, 0.05f, 1), 0);
#ifdef _OPENMP
    omp_set_num_threads(prev);
#endif
    cr_assert_eq(memcmp(s1.key, s2.key, n * sizeof(uint32_t)), 0, "keys differ");
    cr_assert_eq(memcmp(s1.order, s2.order, n * sizeof(uint32_t)), 0, "sort orders differ");
    cr_assert_eq(memcmp(s1.cell_start, s2.cell_start, (s1.ncells + 1) * sizeof(uint32_t)), 0);
    cr_assert_eq(l1.stride, l2.stride);
    cr_assert_eq(memcmp(l1.count, l2.count, n * sizeof(uint32_t)), 0, "counts differ");
    /* slot position of each particle, to check the in-list order */
    uint32_t *slot = malloc(n * sizeof *slot);
    cr_assert_not_null(slot);
    for (uint32_t k = 0; k < n; k++)
        slot[s1.order[k]] = k;
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        const uint32_t *a = l1.idx + (size_t)i * l1.stride, *b = l2.idx + (size_t)i * l2.stride;
        cr_assert_eq(memcmp(a, b, l1.count[i] * sizeof(uint32_t)), 0, "lists of %u differ", i);
        for (uint32_t k = 1; k < l1.count[i]; k++)
            cr_assert_lt(slot[a[k - 1]], slot[a[k]], "list of %u not in ascending slot order", i);
        total += l1.count[i];
    }
    cr_assert_gt(total, (uint64_t)n * 5);
    /* rebuilding into a warmed-up list gives the same again */
    cr_assert_eq(nb_build(&l2, &g, x, n, &s2, x, 0.05f, 1), 0);
    for (uint32_t i = 0; i < n; i++)
        cr_assert_eq(memcmp(l1.idx + (size_t)i * l1.stride, l2.idx + (size_t)i * l2.stride,
                            l1.count[i] * sizeof(uint32_t)),
                     0);
    free(slot);
    nb_list_free(&l1);
    nb_list_free(&l2);
    nb_sorted_free(&s1);
    nb_sorted_free(&s2);
    free(x);
}

Test(neighbours, sort_properties)
{
    rng_seed(11);
    nb_sorted s = {0};
    /* several sizes and grids into the same nb_sorted: buffers are reused,
     * n and ncells both grow and shrink */
    const struct {
        int dim;
        uint32_t n;
        float cell;
    } cases[] = {{3, 5000, 0.1f}, {3, 100, 0.05f}, {2, 7000, 0.02f}, {3, 9000, 0.3f},
                 {2, 1, 1.0f},    {3, 0, 0.1f},     {3, 3000, 0.07f},
                 /* grids of millions of cells: the radix sort's two and
                  * three passes, the cell table filled in parallel ranges */
                 {3, 20000, 0.01f}, {3, 5000, 0.006f}, {2, 3000, 0.0005f}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const float lo[3] = {-1, 0, 2}, hi[3] = {1, 1, 3};
        const float plo[3] = {-1.2f, -0.1f, 1.9f}, phi[3] = {1.2f, 1.1f, 3.1f};
        float *x = random_points(cases[c].n, plo, phi, cases[c].dim);
        nb_grid g;
        cr_assert_eq(nb_grid_init(&g, cases[c].dim, lo, hi, cases[c].cell, 1u << 24), 0);
        cr_assert_eq(nb_sort(&s, &g, x, cases[c].n), 0);
        check_sort(&s, &g, x, cases[c].n);
        cr_assert_geq(s.cap, cases[c].n);
        free(x);
    }
    /* the same number of particles sorted again after moving, on the same
     * grid: only the cells between the old and new extreme keys are
     * rewritten; moved away from both ends, then towards them */
    {
        const float lo[3] = {-1, 0, 2}, hi[3] = {1, 1, 3};
        const float plo[3] = {-0.5f, 0.3f, 2.4f}, phi[3] = {0.2f, 0.6f, 2.7f};
        const uint32_t n = 6000;
        nb_grid g;
        cr_assert_eq(nb_grid_init(&g, 3, lo, hi, 0.01f, 1u << 24), 0);
        for (int round = 0; round < 4; round++) {
            float *x = random_points(n, plo, phi, 3);
            for (uint32_t i = 0; i < n; i++)
                for (int k = 0; k < 3; k++)
                    x[3 * i + k] += (round % 2 ? -0.25f : 0.2f) * (float)round * (k == 2 ? 0.5f : 1.0f);
            cr_assert_eq(nb_sort(&s, &g, x, n), 0);
            check_sort(&s, &g, x, n);
            free(x);
        }
    }
    /* sorted again with a different count each time (an MPI rank's ghosts
     * change it every step), moving up and down: the cells between the
     * extreme keys and the table's high-water mark are rewritten, the
     * runs past it read as empty */
    {
        const float lo[3] = {-1, 0, 2}, hi[3] = {1, 1, 3};
        const float plo[3] = {-0.5f, 0.3f, 2.4f}, phi[3] = {0.2f, 0.6f, 2.7f};
        const uint32_t counts[] = {6000, 5900, 6100, 300, 7000, 6999, 6000};
        nb_grid g;
        cr_assert_eq(nb_grid_init(&g, 3, lo, hi, 0.01f, 1u << 24), 0);
        for (int round = 0; round < (int)(sizeof counts / sizeof counts[0]); round++) {
            const uint32_t n = counts[round];
            float *x = random_points(n, plo, phi, 3);
            for (uint32_t i = 0; i < n; i++)
                x[3 * i + 2] += (round % 2 ? -0.3f : 0.25f) * (float)(round % 3);
            cr_assert_eq(nb_sort(&s, &g, x, n), 0);
            check_sort(&s, &g, x, n);
            free(x);
        }
    }
    /* many particles per cell, in reverse spatial order: stability matters */
    {
        const float lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
        const uint32_t n = 4000;
        float *x = malloc(n * 3 * sizeof(float));
        cr_assert_not_null(x);
        for (uint32_t i = 0; i < n; i++) {
            x[3 * i + 0] = 1.0f - (float)i / n;
            x[3 * i + 1] = 0.5f;
            x[3 * i + 2] = 0.5f;
        }
        nb_grid g;
        cr_assert_eq(nb_grid_init(&g, 3, lo, hi, 0.25f, 1000), 0);
        cr_assert_eq(nb_sort(&s, &g, x, n), 0);
        check_sort(&s, &g, x, n);
        free(x);
    }
    /* the same on a grid of millions of cells with enough particles for the
     * radix sort's parallel parts: runs of one cell cross the parts */
    {
        const float lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
        const uint32_t n = 50000;
        float *x = malloc(n * 3 * sizeof(float));
        cr_assert_not_null(x);
        for (uint32_t i = 0; i < n; i++) {
            x[3 * i + 0] = 1.0f - (float)(i / 7) / (float)n * 7.0f; /* 7 in a row share x */
            x[3 * i + 1] = (float)(i % 3) * 0.3f + 0.05f;
            x[3 * i + 2] = 0.5f;
        }
        nb_grid g;
        cr_assert_eq(nb_grid_init(&g, 3, lo, hi, 0.005f, 1u << 24), 0);
        cr_assert_eq(nb_sort(&s, &g, x, n), 0);
        check_sort(&s, &g, x, n);
        free(x);
    }
    nb_sorted_free(&s);
    cr_assert_null(s.order);
}

/* Distances exactly equal to the radius are not neighbours (strict <): a
 * lattice of spacing 1/4 with radius 1/2 has many such pairs, all exact. */
Test(neighbours, radius_is_exclusive)
{
    for (int dim = 2; dim <= 3; dim++) {
        const uint32_t m = 12, n = dim == 3 ? m * m * m : m * m;
        float *x = malloc(n * 3 * sizeof(float));
        cr_assert_not_null(x);
        for (uint32_t k = 0; k < n; k++) {
            x[3 * k + 0] = 0.25f * (float)(k % m);
            x[3 * k + 1] = 0.25f * (float)((k / m) % m);
            x[3 * k + 2] = dim == 3 ? 0.25f * (float)(k / m / m) : 0.0f;
        }
        const float lo[3] = {0, 0, 0}, hi[3] = {3, 3, 3};
        nb_grid g;
        nb_sorted s = {0};
        nb_list l = {0};
        cr_assert_eq(nb_grid_init(&g, dim, lo, hi, 0.5f, 1u << 20), 0);
        cr_assert_eq(nb_sort(&s, &g, x, n), 0);
        cr_assert_eq(nb_build(&l, &g, x, n, &s, x, 0.5f, 1), 0);
        check_band(&l, x, n, x, n, 0.5f, 1, dim, 0.0);
        /* an interior point: |v|^2 < 4 lattice steps -> 26 (3D) / 8 (2D) */
        uint32_t c = m / 2 + m * (m / 2) + (dim == 3 ? m * m * (m / 2) : 0);
        cr_assert_eq(l.count[c], dim == 3 ? 26u : 8u, "dim %d: interior point has %u neighbours", dim, l.count[c]);
        nb_list_free(&l);
        nb_sorted_free(&s);
        free(x);
    }
}

/* Rows filled to within a few slots of the stride, and exactly to it, must
 * not spill into the next particle's row. Clusters of coincident particles
 * of sizes stride-7 .. stride+1 (counts stride-8 .. stride, self excluded),
 * each preceded in slot order by 0..7 decoys in the cell to its left (which
 * shifts where the 8-wide blocks fall), sit at even indices; every odd index
 * is a member of a far-away close pair, whose rows thus lie right after the
 * cluster rows and are computed before them. */
Test(neighbours, full_rows_do_not_spill)
{
    for (int dim = 2; dim <= 3; dim++) {
        const uint32_t stride = dim == 3 ? 64 : 32, nsize = 9, ndecoy = 8, nclust = nsize * ndecoy;
        uint32_t total = 0, ndec = 0;
        for (uint32_t c = 0; c < nclust; c++) {
            total += stride - 7 + c % nsize;
            ndec += c / nsize;
        }
        const uint32_t n = 2 * total + ndec;
        float *x = malloc(n * 3 * sizeof(float));
        cr_assert_not_null(x);
        uint32_t k = 0, e = 2 * total;
        for (uint32_t c = 0; c < nclust; c++) {
            /* cell centres, 4 cells apart */
            const float cx = 0.105f + 0.04f * (float)(c % 20), cy = 0.505f + 0.04f * (float)(c / 20);
            for (uint32_t u = 0; u < stride - 7 + c % nsize; u++, k++) {
                x[3 * (2 * k) + 0] = cx;
                x[3 * (2 * k) + 1] = dim == 3 ? 0.905f : cy;
                x[3 * (2 * k) + 2] = dim == 3 ? cy : 0.0f;
                const uint32_t p = k / 2;
                x[3 * (2 * k + 1) + 0] = 0.01f + 0.0025f * (float)(p % 350) + 0.001f * (float)(k % 2);
                x[3 * (2 * k + 1) + 1] = 0.01f + 0.005f * (float)(p / 350);
                x[3 * (2 * k + 1) + 2] = dim == 3 ? 0.01f : 0.0f;
            }
            for (uint32_t u = 0; u < c / nsize; u++, e++) {
                x[3 * e + 0] = cx - 0.01f;
                x[3 * e + 1] = dim == 3 ? 0.905f : cy;
                x[3 * e + 2] = dim == 3 ? cy : 0.0f;
            }
        }
        cr_assert_eq(e, n);
        const float lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
        const float r = 0.0012f;
        nb_grid g;
        nb_sorted s = {0};
        nb_list l = {0};
        cr_assert_eq(nb_grid_init(&g, dim, lo, hi, 0.01f, 1u << 24), 0);
        cr_assert_eq(nb_sort(&s, &g, x, n), 0);
        for (int pass = 0; pass < 2; pass++) {
            /* pass 0: the set against itself; pass 1: a copy as query set */
            float *y = x;
            if (pass) {
                y = malloc(n * 3 * sizeof(float));
                cr_assert_not_null(y);
                memcpy(y, x, n * 3 * sizeof(float));
            }
            cr_assert_eq(nb_build(&l, &g, y, n, &s, x, r, 1), 0);
            cr_assert_eq(l.stride, stride, "dim %d: stride changed to %u although no count exceeds it", dim, l.stride);
            uint32_t full = 0;
            for (uint32_t i = 0; i < 2 * total; i += 2)
                full += l.count[i] == stride;
            cr_assert_eq(full, (stride + 1) * ndecoy, "dim %d: %u rows filled exactly to the stride", dim, full);
            for (uint32_t i = 1; i < 2 * total; i += 2) {
                const uint32_t kk = i / 2, want = (kk % 2 == 0 && kk + 1 == total) ? 0u : 1u; /* last may be unpaired */
                cr_assert_eq(l.count[i], want, "dim %d: pair particle %u has %u neighbours", dim, i, l.count[i]);
                cr_assert_eq(l.idx[(size_t)i * l.stride], kk % 2 ? i - 2 : i + 2, "dim %d: row %u overwritten", dim, i);
            }
            check_against_brute(&l, y, n, x, n, r, 1, dim);
            if (pass)
                free(y);
        }
        nb_list_free(&l);
        nb_sorted_free(&s);
        free(x);
    }
}

/* Periodic axes: the lists equal a brute-force search with minimum-image
 * distances, for particles spread over the whole periodic box. */
Test(neighbours, periodic_matches_minimum_image)
{
    for (int dim = 2; dim <= 3; dim++) {
        const float H = 0.1f, L[3] = {0.5f, 0.8f, 0.35f};
        nb_grid g;
        float lo[3] = {-2 * H, -2 * H, -2 * H}, hi[3] = {L[0] + 2 * H, L[1] + 2 * H, L[2] + 2 * H};
        cr_assert_eq(nb_grid_init(&g, dim, lo, hi, H, 1u << 20), 0);
        g.periodic = dim == 3 ? 5u : 1u; /* x (and z in 3D) periodic, y not */
        for (int k = 0; k < 3; k++) {
            g.plo[k] = 0;
            g.period[k] = (g.periodic >> k) & 1u ? L[k] : 0;
        }
        enum { N = 1500 };
        static float x[3 * N];
        uint32_t s = 12345u;
        for (int i = 0; i < N; i++)
            for (int k = 0; k < 3; k++) {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                x[3 * i + k] = k < dim ? L[k] * (float)(s % 100000u) / 100000.0f : 0.0f;
            }
        nb_sorted srt = {0};
        nb_list lst = {0};
        cr_assert_eq(nb_sort(&srt, &g, x, N), 0);
        cr_assert_eq(nb_build(&lst, &g, x, N, &srt, x, H, 1), 0);
        long total = 0;
        for (int i = 0; i < N; i++) {
            uint32_t brute = 0;
            for (int j = 0; j < N; j++) {
                if (j == i)
                    continue;
                float d2 = 0;
                for (int k = 0; k < dim; k++) {
                    float d = x[3 * i + k] - x[3 * j + k];
                    if ((g.periodic >> k) & 1u)
                        d -= L[k] * rintf(d / L[k]);
                    d2 += d * d;
                }
                if (d2 < H * H) {
                    brute++;
                    int found = 0;
                    for (uint32_t c = 0; c < lst.count[i]; c++)
                        found |= lst.idx[(size_t)i * lst.stride + c] == (uint32_t)j;
                    cr_assert(found, "dim %d: pair (%d,%d) at periodic distance %g missing", dim, i, j, sqrtf(d2));
                }
            }
            cr_assert_eq(lst.count[i], brute, "dim %d particle %d: %u listed, %u by brute force", dim, i,
                         lst.count[i], brute);
            total += brute;
        }
        cr_assert(total > N, "the test must see pairs across the faces");
        nb_sorted_free(&srt);
        nb_list_free(&lst);
    }
}

/* Queries against a set with its near-cell map (as the core does for a
 * static boundary): the same lists as brute force, for targets spread out,
 * outside the grid, and a thin wall that most queries are far from. */
Test(neighbours, near_map_skips_only_far_queries)
{
    rng_seed(11);
    with_near = 1;
    for (int dim = 2; dim <= 3; dim++) {
        const float lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
        const float plo[3] = {-0.5f, -0.5f, -0.5f}, phi[3] = {1.5f, 1.5f, 1.5f};
        const uint32_t nq = 4000, nt = 3000;
        float cell = dim == 3 ? 0.1f : 0.05f;
        float *xq = random_points(nq, plo, phi, dim);
        float *xt = random_points(nt, plo, phi, dim);
        uint64_t t = run_case(dim, lo, hi, cell, xq, nq, xt, nt, cell, 0);
        cr_assert_gt(t, (uint64_t)nq / 2, "dim %d: only %llu pairs", dim, (unsigned long long)t);
        /* a wall: targets in a thin slab at y < 0.05 */
        for (uint32_t j = 0; j < nt; j++)
            xt[3 * j + 1] = rng_uniform(-0.02f, 0.05f);
        t = run_case(dim, lo, hi, cell, xq, nq, xt, nt, cell, 0);
        cr_assert_gt(t, (uint64_t)0);
        free(xq);
        free(xt);
    }
    with_near = 0;
}

/* A static target keeps its positions in sorted-slot order between builds
 * (nb_sorted_keep_slots): the lists are those of a build that gathers them,
 * checked against brute force, for a wall-like and a random target, with
 * and without the near map; a second build reuses the kept slots. */
Test(neighbours, kept_slots_give_the_same_lists)
{
    rng_seed(12);
    with_slots = 1;
    for (int near = 0; near <= 1; near++) {
        with_near = near;
        for (int dim = 2; dim <= 3; dim++) {
            const float lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
            const uint32_t nq = 3000, nt = 2500;
            const float cell = dim == 3 ? 0.1f : 0.05f;
            float *xq = random_points(nq, lo, hi, dim);
            float *xt = random_points(nt, lo, hi, dim);
            uint64_t t = run_case(dim, lo, hi, cell, xq, nq, xt, nt, cell, 0);
            cr_assert_gt(t, (uint64_t)nq, "dim %d: only %llu pairs", dim, (unsigned long long)t);
            for (uint32_t j = 0; j < nt; j++)
                xt[3 * j + 1] = rng_uniform(-0.02f, 0.05f);
            t = run_case(dim, lo, hi, cell, xq, nq, xt, nt, cell, 0);
            cr_assert_gt(t, (uint64_t)0);
            /* two builds against the same kept slots, the second after the
             * queries moved */
            nb_grid g;
            cr_assert_eq(nb_grid_init(&g, dim, lo, hi, cell, 1u << 24), 0);
            nb_sorted s = {0};
            nb_list l = {0};
            cr_assert_eq(nb_sort(&s, &g, xt, nt), 0);
            cr_assert_eq(nb_sorted_keep_slots(&s, xt), 0);
            for (int round = 0; round < 2; round++) {
                cr_assert_eq(nb_build(&l, &g, xq, nq, &s, xt, cell, 0), 0);
                check_against_brute(&l, xq, nq, xt, nt, cell, 0, dim);
                for (uint32_t i = 0; i < 3 * nq; i++)
                    xq[i] = xq[i] * 0.9f + 0.05f;
            }
            nb_list_free(&l);
            nb_sorted_free(&s);
            free(xq);
            free(xt);
        }
    }
    with_near = 0;
    with_slots = 0;
}

/* ------------------------------------------------------- kernel sums -- */

#include "floe/kernel.h"
#include "floe/simd.h"

/* nb_build_sums of xq against xt (weights w; uniform: all w equal) and
 * checks of every query's sum: against the sum over all targets within the
 * radius in double (so the rows and weights are right), and, with AVX2,
 * bitwise against floe_row_w8 over the built row (the float a module's own
 * density sum gives). Positions have z = 0 in 2D, as a simulation keeps
 * them. Without AVX2 the build computes none (done 0): only the lists are
 * checked then. With them, at least min_nonzero sums must be nonzero (the
 * case is not vacuous). */
static void check_ksums(int dim, const float lo[3], const float hi[3], float cell, const float *xq, uint32_t nq,
                            const float *xt, uint32_t nt, const float *w, float radius, int exclude_self,
                            uint32_t min_nonzero)
{
    nb_grid g;
    cr_assert_eq(nb_grid_init(&g, dim, lo, hi, cell, 1u << 24), 0);
    nb_sorted s = {0};
    nb_list l = {0};
    cr_assert_eq(nb_sort(&s, &g, xt, nt), 0);
    const float inv_H = floe_kernel_make(dim, radius).inv_H;
    float *out = malloc((size_t)(nq ? nq : 1) * sizeof(float));
    cr_assert_not_null(out);
    int uniform = nt > 0;
    for (uint32_t j = 1; j < nt; j++)
        uniform &= w[j] == w[0];
    nb_ksum ks = {.w = w, .uniform = uniform, .w0 = nt ? w[0] : 0.0f, .inv_H = inv_H, .out = out};
    cr_assert_eq(nb_build_sums(&l, &g, xq, nq, &s, xt, radius, exclude_self, &ks), 0);
    check_against_brute(&l, xq, nq, xt, nt, radius, exclude_self, dim);
#if defined(__AVX2__)
    cr_assert_eq(ks.done, 1, "the AVX2 build computed no kernel sums");
#endif
    uint32_t nonzero = 0;
    if (!ks.done) {
        free(out);
        nb_list_free(&l);
        nb_sorted_free(&s);
        return;
    }
    float *rec = malloc((size_t)(nt ? nt : 1) * 4 * sizeof(float) + 64);
    cr_assert_not_null(rec);
    float *A = (float *)(((uintptr_t)rec + 15) & ~(uintptr_t)15);
    for (uint32_t j = 0; j < nt; j++) {
        A[4 * j] = xt[3 * j];
        A[4 * j + 1] = xt[3 * j + 1];
        A[4 * j + 2] = xt[3 * j + 2];
        A[4 * j + 3] = w[j];
    }
    const double r2max = (double)radius * radius;
    for (uint32_t i = 0; i < nq; i++) {
        /* the sum in double; a term's float may be off by a few ulp of
         * the kernel's largest value (1, at r = 0), as the kernel is steep
         * in r2 near the radius: wsum, the summed weights, bounds that */
        double ref = 0.0, mag = 0.0, wsum = 0.0;
        for (uint32_t j = 0; j < nt; j++) {
            if (exclude_self && j == i)
                continue;
            const double d2 = dist2(xq + 3 * (size_t)i, xt + 3 * (size_t)j, dim);
            if (!(d2 < r2max))
                continue;
            const double t = (double)w[j] * (double)floe_w_hat(inv_H, (float)d2);
            ref += t;
            mag += fabs(t);
            wsum += fabs((double)w[j]);
        }
        cr_assert(fabs((double)out[i] - ref) <= 1e-5 * mag + 1e-6 * wsum + 1e-30,
                  "query %u: kernel sum %.9g, brute force %.9g", i, (double)out[i], ref);
        nonzero += out[i] != 0.0f;
#if defined(__AVX2__)
        const float mine = floe_row_w8(inv_H, l.idx + (size_t)i * l.stride, l.count[i], A, xq[3 * i],
                                       xq[3 * i + 1], xq[3 * i + 2]);
        cr_assert(memcmp(&mine, &out[i], sizeof mine) == 0, "query %u: kernel sum %.9g, floe_row_w8 %.9g", i,
                  (double)out[i], (double)mine);
#endif
    }
    cr_assert_geq(nonzero, min_nonzero, "only %u of %u kernel sums are nonzero", nonzero, nq);
    free(rec);
    free(out);
    nb_list_free(&l);
    nb_sorted_free(&s);
}

static float *weights(uint32_t n, int uniform)
{
    float *w = malloc((size_t)(n ? n : 1) * sizeof(float));
    cr_assert_not_null(w);
    for (uint32_t j = 0; j < n; j++)
        w[j] = uniform ? 0.015625f : rng_uniform(0.5f, 2.0f);
    return w;
}

Test(neighbours, kernel_sums_equal_the_row_sums)
{
    rng_seed(31);
    const float lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
    for (int dim = 2; dim <= 3; dim++) {
        const uint32_t n = dim == 3 ? 5000 : 3000, nb = 2500;
        float *x = random_points(n, lo, hi, dim), *xb = random_points(nb, lo, hi, dim);
        if (dim == 2)
            for (uint32_t i = 0; i < n; i++)
                x[3 * i + 2] = 0.0f;
        if (dim == 2)
            for (uint32_t i = 0; i < nb; i++)
                xb[3 * i + 2] = 0.0f;
        const float r = dim == 3 ? 0.08f : 0.04f;
        for (int uniform = 0; uniform <= 1; uniform++) {
            float *w = weights(n, uniform), *wb = weights(nb, uniform);
            /* the set against itself (build_cells), and a fluid against a wall (build_cross) */
            check_ksums(dim, lo, hi, r, x, n, x, n, w, r, 1, n / 2);
            check_ksums(dim, lo, hi, r, x, n, xb, nb, wb, r, 0, n / 4);
            /* a radius below the cell edge */
            check_ksums(dim, lo, hi, r, x, n, x, n, w, 0.7f * r, 1, n / 4);
            free(w), free(wb);
        }
        free(x), free(xb);
    }
}

Test(neighbours, kernel_sums_of_crowded_and_empty_rows)
{
    rng_seed(32);
    /* all in one cell: 400 neighbours a row, the stride grows and the
     * rows fill up (the checked stores); then no target at all */
    const float lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1}, clo[3] = {0.5f, 0.5f, 0.5f}, chi[3] = {0.55f, 0.55f, 0.55f};
    const uint32_t n = 400;
    float *x = random_points(n, clo, chi, 3);
    float *w = weights(n, 0);
    check_ksums(3, lo, hi, 0.1f, x, n, x, n, w, 0.1f, 1, n);
    nb_grid g;
    cr_assert_eq(nb_grid_init(&g, 3, lo, hi, 0.1f, 1u << 24), 0);
    nb_sorted s = {0};
    nb_list l = {0};
    cr_assert_eq(nb_sort(&s, &g, x, 0), 0);
    float out[400];
    for (uint32_t i = 0; i < n; i++)
        out[i] = 1.0f;
    nb_ksum ks = {.w = w, .inv_H = 10.0f, .out = out};
    cr_assert_eq(nb_build_sums(&l, &g, x, n, &s, x, 0.1f, 0, &ks), 0);
    cr_assert_eq(ks.done, 1, "no targets: the sums are zeros, whatever the build");
    for (uint32_t i = 0; i < n; i++)
        cr_assert_eq(out[i], 0.0f, "query %u: %g without targets", i, (double)out[i]);
    nb_list_free(&l);
    nb_sorted_free(&s);
    free(x), free(w);
}

/* nb_build_rows (an MPI rank's ghosts): the rows below nrows are the bytes
 * and kernel sums nb_build_sums gives, the others empty, against the set
 * itself (build_cells, queries grouped by cell) and against another set
 * (build_cross) */
Test(neighbours, rows_past_nrows_come_out_empty)
{
    rng_seed(41);
    const float lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
    const uint32_t n = 6000, nb = 2000, nrows = 4100;
    float *x = random_points(n, lo, hi, 3), *xb = random_points(nb, lo, hi, 3);
    float *w = weights(n, 1), *wb = weights(nb, 0);
    nb_grid g;
    cr_assert_eq(nb_grid_init(&g, 3, lo, hi, 0.08f, 1u << 20), 0);
    nb_sorted s = {0}, sb = {0};
    cr_assert_eq(nb_sort(&s, &g, x, n), 0);
    cr_assert_eq(nb_sort(&sb, &g, xb, nb), 0);
    for (int cross = 0; cross <= 1; cross++) {
        const nb_sorted *t = cross ? &sb : &s;
        const float *xt = cross ? xb : x, *wt = cross ? wb : w;
        nb_list full = {0}, part = {0};
        float *kf = calloc(n, sizeof *kf), *kp = malloc(n * sizeof *kp);
        for (uint32_t i = 0; i < n; i++)
            kp[i] = -1.0f; /* must be overwritten, ghosts with 0 */
        nb_ksum ksf = {.w = wt, .inv_H = 1.0f / 0.08f, .out = kf}, ksp = ksf;
        ksp.out = kp;
        cr_assert_eq(nb_build_sums(&full, &g, x, n, t, xt, 0.08f, !cross, &ksf), 0);
        cr_assert_eq(nb_build_rows(&part, &g, x, n, nrows, t, xt, 0.08f, !cross, &ksp), 0);
        cr_assert_eq(part.n, n);
        cr_assert_eq(ksf.done, ksp.done);
        uint64_t total = 0;
        for (uint32_t i = 0; i < n; i++) {
            if (i >= nrows) {
                cr_assert_eq(part.count[i], 0u, "row %u past nrows holds %u", i, part.count[i]);
                if (ksp.done)
                    cr_assert_eq(kp[i], 0.0f);
                continue;
            }
            cr_assert_eq(part.count[i], full.count[i], "row %u: %u entries, %u in the full build", i, part.count[i],
                         full.count[i]);
            cr_assert_eq(memcmp(part.idx + (size_t)i * part.stride, full.idx + (size_t)i * full.stride,
                                full.count[i] * sizeof(uint32_t)),
                         0, "row %u differs from the full build's", i);
            if (ksp.done)
                cr_assert(kp[i] == kf[i], "row %u: kernel sum %g, full build %g", i, kp[i], kf[i]);
            total += full.count[i];
        }
        cr_assert_gt(total, (uint64_t)nrows * 2);
        nb_list_free(&full), nb_list_free(&part);
        free(kf), free(kp);
    }
    nb_sorted_free(&s), nb_sorted_free(&sb);
    free(x), free(xb), free(w), free(wb);
}

/* Every row, entry by entry, is the targets whose squared distance (the
 * build's float: candidate minus query, fused multiply-adds) is below the
 * radius squared, in ascending sorted-slot order, padded to a whole block
 * of 8 with its first index: what the per-query scalar search gives. The
 * grouped builds (blocks of 8 with AVX2, of 16 with AVX-512) must give
 * exactly that: the self search and a fluid against another set, 2D and
 * 3D, with particles outside the grid, crowded cells (the stride grows and
 * rows fill up) and sparse ones (the ranges copied into one). */
Test(neighbours, rows_in_slot_order_entry_by_entry)
{
    rng_seed(34);
    const float lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
    for (int dim = 2; dim <= 3; dim++)
        for (int layout = 0; layout < 3; layout++)
            for (int cross = 0; cross <= 1; cross++) {
                const uint32_t n = dim == 3 ? 5000 : 3000;
                /* 0: uniform; 1: spread past the grid (clamped); 2: a crowded corner and sparse rest */
                const float plo[3] = {layout == 1 ? -0.3f : 0.0f, layout == 1 ? -0.3f : 0.0f,
                                      layout == 1 ? -0.3f : 0.0f};
                const float e = layout == 1 ? 1.3f : 1.0f;
                const float phi[3] = {e, e, e};
                float *x = random_points(n, plo, phi, dim), *xt = x;
                if (layout == 2)
                    for (uint32_t i = 0; i < n / 2; i++)
                        for (int a = 0; a < 3; a++)
                            x[3 * i + a] = rng_uniform(0.0f, 0.1f);
                if (dim == 2)
                    for (uint32_t i = 0; i < n; i++)
                        x[3 * i + 2] = 0.0f;
                const uint32_t nt = cross ? n / 2 + 7 : n;
                if (cross) {
                    xt = random_points(nt, plo, phi, dim);
                    if (dim == 2)
                        for (uint32_t i = 0; i < nt; i++)
                            xt[3 * i + 2] = 0.0f;
                }
                const float cell = dim == 3 ? 0.07f : 0.035f, radius = cell;
                nb_grid g;
                cr_assert_eq(nb_grid_init(&g, dim, lo, hi, cell, 1u << 24), 0);
                nb_sorted s = {0};
                nb_list l = {0};
                cr_assert_eq(nb_sort(&s, &g, xt, nt), 0);
                cr_assert_eq(nb_build(&l, &g, x, n, &s, xt, radius, !cross), 0);
                uint32_t *slot = malloc(nt * sizeof(uint32_t)), *ref = malloc(nt * sizeof(uint32_t));
                cr_assert(slot && ref);
                for (uint32_t k = 0; k < nt; k++)
                    slot[s.order[k]] = k;
                const float r2 = radius * radius;
                uint64_t total = 0;
                for (uint32_t i = 0; i < n; i++) {
                    uint32_t c = 0;
                    for (uint32_t k = 0; k < nt; k++) { /* the targets in slot order */
                        const uint32_t j = s.order[k];
                        if (!cross && j == i)
                            continue;
                        const float dx = xt[3 * j] - x[3 * i], dy = xt[3 * j + 1] - x[3 * i + 1];
                        const float dz = dim == 3 ? xt[3 * j + 2] - x[3 * i + 2] : 0.0f;
#if defined(__AVX2__) /* the grouped builds fuse; the scalar one (build_pass) does not */
                        float d2 = fmaf(dy, dy, dx * dx);
                        if (dim == 3)
                            d2 = fmaf(dz, dz, d2);
#else
                        const float d2 = dim == 3 ? dx * dx + dy * dy + dz * dz : dx * dx + dy * dy;
#endif
                        if (d2 < r2)
                            ref[c++] = j;
                    }
                    const uint32_t *row = l.idx + (size_t)i * l.stride;
                    cr_assert_eq(l.count[i], c, "row %u: %u entries, %u within the radius", i, l.count[i], c);
                    for (uint32_t k = 0; k < c; k++)
                        cr_assert_eq(row[k], ref[k], "row %u, entry %u: %u, in slot order %u", i, k, row[k], ref[k]);
                    for (uint32_t k = c; c && k < ((c + 7u) & ~7u) && k < l.stride; k++)
                        cr_assert_eq(row[k], row[0], "row %u: pad %u", i, k);
                    total += c;
                }
                cr_assert_gt(total, (uint64_t)n / 2, "too few pairs to test anything (%llu)", (unsigned long long)total);
                free(slot), free(ref);
                nb_list_free(&l);
                nb_sorted_free(&s);
                if (cross)
                    free(xt);
                free(x);
            }
}
