/* Cell-sorted neighbour search (internal).
 *
 * Stable sort of particles by linear cell key (the "sorted key" scheme of
 * Kipfer & Westermann 2006; a counting sort on tight grids, else an LSD
 * radix sort, whose cost does not grow with the number of cells), a cell
 * start table, then fixed-stride neighbour
 * lists gathered from the 3x3(x3) cell block. Cell coordinates are clamped
 * into the grid, which keeps the search exact for particles outside it
 * (clamping never separates two cells that were adjacent). */
#ifndef FLOE_NEIGHBOURS_H
#define FLOE_NEIGHBOURS_H

#include <stddef.h>
#include <stdint.h>

typedef struct nb_grid {
    int dim;          /* 2 or 3 (2: n[2] == 1, z ignored) */
    float origin[3];  /* lower corner of cell (0,0,0) */
    float cell;       /* cell edge = search radius */
    int n[3];         /* cells per axis */
    unsigned periodic;/* bit k: axis k is periodic over [plo, plo + period) */
    float plo[3], period[3]; /* period >= 3 cells; set after nb_grid_init */
    /* a window of a larger grid (nb_grid_window): cell (0,0,0) is that
     * grid's cell off; origin and cell stay that grid's, so a particle
     * falls in the same cell as it would there, to the last bit */
    int off[3];
} nb_grid;

/* Particles of one set sorted by cell key. Reusable across updates; memory
 * grows but never shrinks (static once warmed up). */
typedef struct nb_sorted {
    uint32_t n, cap;
    uint32_t *key;         /* key of particle i (unsorted order) */
    uint32_t *order;       /* order[k] = particle at sorted slot k */
    uint32_t *scratch;     /* cap: the radix sort's second buffer, then the sorted keys */
    uint32_t *cell_start;  /* ncells + 1 entries: slots of cell c are [start[c], start[c+1]) */
    uint32_t ncells;
    /* the smallest key of the last sort and the table's high-water mark,
     * when fill_ok: cells below fill_kmin hold 0, cells from fill_hwm on
     * hold 0 too (an empty range, cell_ranges), so that the next sort
     * rewrites only the cells between, whatever its count (the ghosts of
     * an MPI rank change it every step) */
    uint32_t fill_kmin, fill_kmax, fill_hwm;
    int fill_ok;
    /* set by the caller: particles outside the grid are left out (key
     * ncells: after every cell, in none) instead of clamped into the cells
     * at its faces; a wall cut to an MPI rank's window (nb_update.c). Then
     * n_in counts those kept (slots [0, n_in)). */
    int drop_outside;
    uint32_t n_in;
    /* optional (nb_sorted_near): near[c] != 0 iff a particle lies in the
     * 3x3(x3) block of cells around c; lets queries far from the set skip
     * the search. Dropped by every nb_sort. */
    uint8_t *near;
    uint32_t near_cells;
    /* optional (nb_sorted_keep_slots): the positions gathered into sorted
     * slot order, as nb_build needs them, kept for a set that does not move
     * (a wall is searched every step and sorted once). Dropped by nb_sort. */
    float *slots;
    const float *slots_x;  /* the positions they were gathered from */
    size_t slots_len;
} nb_sorted;

/* Within each cell of the sort, the slots in ascending id (id[i] of
 * particle i): the lists then list a row's neighbours in an order that does
 * not depend on the particles' indices. Insertion sort of each cell's run. */
void nb_sorted_by_id(nb_sorted *s, const uint32_t *id);

typedef struct nb_list {
    uint32_t n, cap, stride;
    uint32_t *count;       /* n */
    uint32_t *idx;         /* n * stride */
} nb_list;

/* Set up a grid covering [lo, hi] with cells of edge `cell`. Fails (-1) if
 * it would need more than max_cells cells. */
int nb_grid_init(nb_grid *g, int dim, const float lo[3], const float hi[3], float cell, uint64_t max_cells);
uint32_t nb_cell_key(const nb_grid *g, const float x[3]);
/* The cells of full (not periodic) that [lo, hi] touches, as a window w of
 * it (nb_grid.off); 0, or -1 when full is not a plain grid */
int nb_grid_window(nb_grid *w, const nb_grid *full, const float lo[3], const float hi[3]);

/* Sort n particles (positions x, 3 floats each) by cell. Returns 0 or -1 (no memory). */
int nb_sort(nb_sorted *s, const nb_grid *g, const float *x, uint32_t n);

/* For each of the nq query particles xq, the indices j of target particles
 * xt with |xq_i - xt_j| < radius (radius <= g->cell), excluding j == i when
 * exclude_self. Parallel over query particles, deterministic. Grows stride
 * (a multiple of 8) when a particle has more neighbours than fit. Rows are
 * padded with their first index up to a multiple of 8 entries (floe_nlist).
 * Returns 0 or -1. */
/* Pad a row of c <= stride neighbours up to the next multiple of 8 (or
 * stride) with its first entry: vector loops may then read whole blocks of
 * 8 indices, masking the lanes past c, and every index read is valid. Every
 * producer of host lists calls it (nb_build, the OpenCL backend's copy). */
static inline void nb_pad_row(uint32_t *restrict row, uint32_t c, uint32_t stride)
{
    if (c == 0 || c >= stride)
        return;
    const uint32_t e = (c + 7u) & ~7u;
    const uint32_t end = e < stride ? e : stride;
    for (uint32_t k = c; k < end; k++)
        row[k] = row[0];
}

int nb_build(nb_list *out, const nb_grid *g, const float *xq, uint32_t nq,
             const nb_sorted *target, const float *xt, float radius, int exclude_self);

/* Kernel sums (nb_build_sums): with the list, for each query i,
 * out[i] = sum_k w[j_k] floe_w_hat(inv_H, |x_i - x_j_k|^2) over its row
 * j_0.. (the self pair excluded as the row excludes it), summed as
 * floe_row_w8 sums a row: blocks of 8 in row order, then the lanes in
 * order, so the float equals a module's own sum over the same row. w is
 * indexed by target particle (masses, volumes). done is set to 1 when they
 * were computed: only the grouped AVX2 builds (no periodic axis) do, the
 * others leave out untouched and done 0. */
typedef struct nb_ksum {
    const float *w;
    int uniform;  /* every w is w0 (saves the loads) */
    float w0;
    float inv_H;
    float *out; /* nq floats */
    int done;
} nb_ksum;

/* nb_build, and with ks (may be NULL) the kernel sums of the rows */
int nb_build_sums(nb_list *out, const nb_grid *g, const float *xq, uint32_t nq, const nb_sorted *target,
                  const float *xt, float radius, int exclude_self, nb_ksum *ks);
/* nb_build_sums with rows [nrows, nq) left empty (count 0, kernel sum 0):
 * an MPI rank's ghosts, whose own sums are never used; rows below nrows
 * are those nb_build_sums gives */
int nb_build_rows(nb_list *out, const nb_grid *g, const float *xq, uint32_t nq, uint32_t nrows,
                  const nb_sorted *target, const float *xt, float radius, int exclude_self, nb_ksum *ks);

/* Verlet lists (nb_verlet.c): the rows of `in` (lists within a radius
 * larger than `radius`, built earlier) cut to the pairs now within radius,
 * in the rows' order, into out (rows padded as nb_build pads them). xq:
 * the query positions (3 floats each); pack: the target's records (x, y,
 * z, w), 16-byte aligned, w the kernel sums' weight (ks->w is not read:
 * ks->out gets the sums of the cut rows, summed as nb_build_sums sums).
 * The squared distance is the build's float (fused in the AVX2 build), so
 * a pair is in a cut row exactly when a build within radius finds it.
 * Returns 0 or -1 (no memory). */
int nb_filter(nb_list *out, const nb_list *in, int dim, const float *xq, const float *pack, float radius,
              nb_ksum *ks);

/* Permutation that sorts particles by cell key (for locality reordering):
 * perm[k] = old index now at k. Equal to s->order after nb_sort. */

/* Build s->near for a sorted set that stays put (a static boundary): one
 * pass over the cells, worth it only when the set is searched many times
 * between sorts. Returns 0 or -1 (no memory; the search then works without). */
int nb_sorted_near(nb_sorted *s, const nb_grid *g);
/* Keep the sorted-slot copy of x (the positions s was sorted from) for the
 * builds against s until the next nb_sort. Returns 0, or -1 without memory
 * (the builds then gather it themselves). */
int nb_sorted_keep_slots(nb_sorted *s, const float *x);
void nb_sorted_free(nb_sorted *s);
void nb_list_free(nb_list *l);

/* Benchmark (nb_bench.c): n random particles at fluid density (jittered
 * lattice of spacing d, support radius 2d, cells of 2d) in 2D or 3D; times
 * `iters` full updates (nb_sort + nb_build of the set against itself) on
 * `threads` OpenMP threads (0: leave the default). Reports neighbour updates
 * per second (n * iters / s), mean ms of sort and of build, and the average
 * neighbour count. Any output pointer may be NULL. Returns 0 or -1. */
int nb_bench(uint32_t n, int dim, int threads, int iters, double *updates_per_s, double *sort_ms, double *build_ms, double *avg_neighbours);

#endif
