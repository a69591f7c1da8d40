/* A cell list for the freezing module's own neighbour queries: the core's
 * lists are per fluid particle, and the film, the growth direction and the
 * heat flow also ask from solid and ice particles. Points are counting-
 * sorted into hashed buckets of cells of edge `cell`; a query visits the
 * cells within its radius and keeps the points of those cells (a bucket
 * shared by two cells is told apart by the stored cell key) closer than
 * the radius. The order of the results is fixed by the build (the points'
 * order), whatever the thread count. */
#ifndef FREEZE_CELLS_H
#define FREEZE_CELLS_H

#include <stddef.h>
#include <stdint.h>

typedef struct cgrid {
    float cell, inv;
    uint32_t n, mask;        /* points; buckets - 1 (a power of two minus one) */
    uint32_t *start;         /* mask + 2 bucket starts into idx */
    uint32_t *idx;           /* points by bucket, in point order inside a bucket */
    uint64_t *key;           /* cell key of each entry of idx */
    const float *x;          /* the points, 3 floats each (the caller's) */
    size_t cap_n, cap_b;     /* allocated entries and buckets */
} cgrid;

/* (Re)build over n points x; 0 or -1 (out of memory). */
int cg_build(cgrid *g, const float *x, uint32_t n, float cell);
void cg_free(cgrid *g);

/* The points within radius r (r2 = r^2, strictly closer) of p, excluding
 * the point `self` (UINT32_MAX: none), written to out[0..cap); returns how
 * many there are (more than cap: call again with a larger buffer). */
uint32_t cg_query(const cgrid *g, const float p[3], float r, uint32_t self, uint32_t *out, uint32_t cap);

#endif
