/* The cell-sorted neighbour search's shared parts (internal to
 * nb_sort.c, the grid and the sort, and neighbours.c, the lists): the
 * clamped cell coordinate both use, so that a particle is searched for
 * exactly where it was binned, the grid check, the tables' allocation. */
#ifndef FLOE_NEIGHBOURS_INT_H
#define FLOE_NEIGHBOURS_INT_H

#include "neighbours.h"

#include "bigmem.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* Below this many particles the OpenMP fork/join costs more than it saves. */
#define NB_PAR_MIN 2048u

/* Clamped cell coordinate along one axis; NaN and anything below the grid
 * give 0, anything above gives n - 1. Shared by the sort and the search, so
 * a particle is always binned exactly where the search looks for it. */
static inline int nb_axis(float x, float o, float inv, int off, int n)
{
    /* a window (off > 0) compares with its bounds in the full grid's units,
     * so that (x - o) * inv, and the cell, are the full grid's */
    float f = (x - o) * inv;
    if (!(f >= (float)off))
        return 0;
    if (f >= (float)(off + n))
        return n - 1;
    int i = (int)f - off;
    return i < n ? (i < 0 ? 0 : i) : n - 1;
}

/* A grid as nb_grid_init leaves it (guards against a zeroed one). */
static inline int nb_grid_ok(const nb_grid *g)
{
    return (g->dim == 2 || g->dim == 3) && g->cell > 0.0f && g->n[0] >= 1 && g->n[1] >= 1 && g->n[2] >= 1 &&
           (g->dim == 3 || g->n[2] == 1) &&
           (uint64_t)g->n[0] * (uint64_t)g->n[1] * (uint64_t)g->n[2] < (uint64_t)UINT32_MAX;
}

/* (Re)allocate *p for n entries, 64-byte aligned, contents undefined
 * (every caller rewrites them). The alignment keeps each list row's
 * vector loads within cache lines: with realloc's 16-byte alignment the
 * layout of the heap decided it, and the density and force passes ran
 * 20-40% slower in some layouts (docs/performance.md). Large ones (rows,
 * cell tables) may get huge pages (bigmem.h). */
static inline int nb_grow_u32(uint32_t **p, size_t n)
{
    free(*p);
    *p = n > ((size_t)-1) / sizeof(uint32_t) ? NULL : floe_big_alloc((n ? n : 1) * sizeof(uint32_t));
    return *p ? 0 : -1;
}

#endif
