/* The boxes of the MPI decomposition (core/src/decomp_geom.c, docs/mpi.md),
 * without MPI: which split each mode picks, that every point has exactly
 * the owner whose box holds it, that the cuts sit at equal counts, and the
 * description rank 0 logs. */
#include "decomp_geom.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int split_of(const dd_geom *g, int axis)
{
    for (int l = 0; l < g->levels; l++)
        if (g->axis[l] == axis)
            return g->parts[l];
    return 1;
}

Test(decomp_geom, each_mode_picks_its_split)
{
    dd_geom g;
    /* the reference bench's tank at length 4: 16 x 3 x 1.5 m */
    const double tank[3] = {16, 3, 1.5};
    cr_assert_eq(dd_geom_init(&g, 4, 3, tank, DD_AUTO), 0);
    cr_assert(g.levels == 1 && g.axis[0] == 0 && g.parts[0] == 4, "auto on a long tank: 4 slabs along x");
    dd_geom_free(&g);
    cr_assert_eq(dd_geom_init(&g, 4, 3, tank, DD_BOXES), 0);
    cr_assert_eq(g.levels, 2);
    cr_assert(split_of(&g, 0) == 2 && split_of(&g, 1) == 2, "boxes: 2 x 2 over x and y (the two longest)");
    dd_geom_free(&g);
    /* the 2D test tank 0.4 x 0.25: 2 x 2 boxes cut less than 4 slabs (0.65 m against 0.75) */
    const double t2[3] = {0.4, 0.25, 0};
    cr_assert_eq(dd_geom_init(&g, 4, 2, t2, DD_AUTO), 0);
    cr_assert(g.levels == 2 && split_of(&g, 0) == 2 && split_of(&g, 1) == 2);
    char buf[96];
    dd_geom_describe(&g, buf, sizeof buf);
    cr_assert_str_eq(buf, "2x2 boxes (x, y)");
    dd_geom_free(&g);
    cr_assert_eq(dd_geom_init(&g, 4, 2, t2, DD_SLABS), 0);
    dd_geom_describe(&g, buf, sizeof buf);
    cr_assert_str_eq(buf, "4 slabs along x");
    dd_geom_free(&g);
    /* a cube and 8 ranks: 2 x 2 x 2; 64 ranks: 4 x 4 x 4 */
    const double cube[3] = {1, 1, 1};
    cr_assert_eq(dd_geom_init(&g, 8, 3, cube, DD_AUTO), 0);
    cr_assert(g.levels == 3 && split_of(&g, 0) == 2 && split_of(&g, 1) == 2 && split_of(&g, 2) == 2);
    dd_geom_free(&g);
    cr_assert_eq(dd_geom_init(&g, 64, 3, cube, DD_AUTO), 0);
    cr_assert(g.levels == 3 && split_of(&g, 0) == 4 && split_of(&g, 1) == 4 && split_of(&g, 2) == 4);
    dd_geom_free(&g);
    /* a prime count: boxes fall back to slabs */
    cr_assert_eq(dd_geom_init(&g, 7, 3, cube, DD_BOXES), 0);
    cr_assert(g.levels == 1 && g.parts[0] == 7);
    dd_geom_free(&g);
}

static float frand(unsigned *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)(*s >> 8) / (float)(1u << 24);
}

/* 3 levels with each piece's own cuts placed from its own histogram:
 * every point's owner holds it in its box, no other box does, and the
 * counts come out even */
Test(decomp_geom, owners_hold_their_points_and_counts_are_even)
{
    dd_geom g;
    const double ext[3] = {1, 1, 1};
    cr_assert_eq(dd_geom_init(&g, 8, 3, ext, DD_AUTO), 0);
    enum { N = 40000, NB = 1024 };
    float *x = malloc(3 * N * sizeof *x);
    unsigned seed = 12345;
    for (int i = 0; i < N; i++) { /* denser towards the origin: the cuts must follow */
        for (int k = 0; k < 3; k++) {
            float u = frand(&seed);
            x[3 * i + k] = u * u;
        }
    }
    for (int l = 0; l < g.levels; l++) {
        double *h = calloc((size_t)g.nodes[l] * NB, sizeof *h);
        const int k = g.axis[l];
        for (int i = 0; i < N; i++) {
            int b = (int)floor(x[3 * i + k] * NB);
            b = b < 0 ? 0 : b >= NB ? NB - 1 : b;
            h[(size_t)dd_geom_node(&g, l, x + 3 * i) * NB + b] += 1;
        }
        for (int node = 0; node < g.nodes[l]; node++)
            dd_geom_cut_row(&g, l, node, h + (size_t)node * NB, NB, 0.0, 1.0);
        free(h);
    }
    int count[8] = {0};
    for (int i = 0; i < N; i++) {
        const int r = dd_geom_owner(&g, x + 3 * i);
        cr_assert(r >= 0 && r < 8);
        count[r]++;
        for (int q = 0; q < 8; q++) {
            double lo[3], hi[3];
            dd_geom_box(&g, q, lo, hi);
            int in = 1;
            for (int k = 0; k < 3; k++)
                in &= x[3 * i + k] >= lo[k] && x[3 * i + k] < hi[k];
            cr_assert_eq(in, q == r, "point %d (%g, %g, %g): owner %d, box of %d holds it %d", i, x[3 * i],
                         x[3 * i + 1], x[3 * i + 2], r, q, in);
        }
    }
    /* equal counts within the histogram's resolution (a bin of 1/1024 of
     * the densest corner holds a few hundred points) */
    for (int r = 0; r < 8; r++)
        cr_assert(abs(count[r] - N / 8) < N / 8 / 10, "rank %d holds %d of %d", r, count[r], N);
    free(x);
    dd_geom_free(&g);
}

/* A histogram of lattice layers, one a bin (as a dam break's undisturbed
 * column): each cut sits on the bin edge nearer its quantile, so a rank
 * is off by at most half a layer, not a whole one */
Test(decomp_geom, a_cut_sits_on_the_bin_edge_nearer_its_quantile)
{
    dd_geom g;
    const double ext[3] = {4, 1, 1};
    cr_assert_eq(dd_geom_init(&g, 4, 3, ext, DD_SLABS), 0);
    enum { NB = 16 };
    double h[NB] = {0};
    /* layers of 100 at bins 0, 2, 4, ..., 14 (8 layers), then one of 100
     * more at bin 1: 900 in all, 225 a rank */
    for (int b = 0; b < NB; b += 2)
        h[b] = 100;
    h[1] = 100;
    const double most = dd_geom_cut_row(&g, 0, 0, h, NB, 0.0, 16.0);
    const double *c = dd_geom_row(&g, 0, 0);
    /* parts of 200, 300, 200 and 200 against 225 */
    cr_assert_float_eq(most, 300.0 / 225.0, 1e-12, "fullest part %g of the mean", most);
    /* quantile 225: 200 before bin 2, 300 after it: 25 against 75, the
     * near edge is bin 2's start (the old rule took its end, 3) */
    cr_assert_float_eq(c[1], 2.0, 1e-12, "first cut at %g", c[1]);
    /* quantile 450: 400 before bin 6, 500 after: 50 against 50, a tie
     * takes the far edge */
    cr_assert_float_eq(c[2], 7.0, 1e-12, "second cut at %g", c[2]);
    /* quantile 675: 600 before bin 10, 700 after: 75 against 25 */
    cr_assert_float_eq(c[3], 11.0, 1e-12, "third cut at %g", c[3]);
    /* two quantiles in one bin: the cuts stay in order */
    double one[NB] = {0};
    one[5] = 1000;
    dd_geom_cut_row(&g, 0, 0, one, NB, 0.0, 16.0);
    c = dd_geom_row(&g, 0, 0);
    cr_assert(c[1] <= c[2] && c[2] <= c[3], "cuts %g %g %g out of order", c[1], c[2], c[3]);
    dd_geom_free(&g);
}
