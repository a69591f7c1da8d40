/* Kipfer & Westermann's sorted-key neighbour search (neighbours_sorted.c),
 * the `neighbours{ method = "sorted_keys" }` of the core stage. Internal. */
#ifndef FLOE_NEIGHBOURS_SORTED_H
#define FLOE_NEIGHBOURS_SORTED_H

#include "neighbours.h"

#include <stdint.h>

typedef struct nbs_pairs {
    uint32_t *p;             /* (i, j) pairs, 2 words each */
    size_t n, cap;           /* pairs */
} nbs_pairs;

/* Buffers kept from update to update (memory grows, never shrinks). */
typedef struct nbs_state {
    uint64_t *key, *key2;
    uint32_t *idx, *idx2;
    uint32_t cap;
    float *sx, *sy, *sz;     /* positions in key order */
    int32_t *by, *bz;        /* their unstaggered y and z bins */
    uint32_t *hits;          /* per thread: a scan's hits (hits_len each) */
    size_t hits_cap, hits_len;
    nbs_pairs *part;         /* one pair buffer per thread */
    int nparts;
    uint32_t *start, *adj;   /* CSR: neighbours of point i are adj[start[i] .. start[i + 1]) */
    size_t start_cap, adj_cap;
    uint32_t *fill;
    size_t fill_cap;
} nbs_state;

/* Every pair of the n points x (3 floats each) closer than radius, as
 * adjacency lists (CSR in s->start, s->adj), each ascending. Keys
 * 0|iz|iy|ix of bins 2 radius wide, sorted; each point scans its left
 * neighbours in key order until key <= key_self - 2; 2^(dim-1) grids
 * staggered by half a bin in y (and z), a pair counted in a staggered grid
 * only when the unstaggered bins of that axis differ (Kipfer's leading
 * bit), so each pair is found once. Returns 0 or -1 (no memory). */
int nbs_adjacency(nbs_state *s, int dim, const float *x, uint32_t n, float radius);

/* Rows [first, first + nq) of the adjacency as a fixed-stride list of the
 * neighbours j in [tfirst, tfirst + nt), renumbered j - tfirst (the lists
 * of one set in another; self never appears). 0 or -1. */
int nbs_list(const nbs_state *s, uint32_t first, uint32_t nq, uint32_t tfirst, uint32_t nt, nb_list *out);

void nbs_free(nbs_state *s);

/* Benchmark (`floe bench neighbours --method sorted_keys|cells --layout
 * uniform|sparse`): like nb_bench, over the same point sets, timing either
 * method; sort_ms is the key sort (sorted keys: all grids) and build_ms the
 * lists. layout sparse: a thin winding river over a domain 16 times wider
 * than the points need. */
int nbs_bench(uint32_t n, int dim, int threads, int iters, int sorted_keys, int sparse, double *updates_per_s,
              double *sort_ms, double *build_ms, double *avg_neighbours);

#endif
