/* Cell-sorted neighbour search: the grid and the counting sort by linear
 * cell key (Kipfer & Westermann 2006), with the cell start table; the
 * lists are built in neighbours.c. See neighbours.h for the contract.
 *
 * The sort is stable (a counting sort on tight grids, else an LSD radix
 * sort with the same result) and depends on no thread count. */
#ifdef _OPENMP
#include <omp.h>
#endif
#include "neighbours_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NB_RADIX_BITS 11
#define NB_SORT_PARTS 4

/* ---------------------------------------------------------------- grid -- */

int nb_grid_init(nb_grid *g, int dim, const float lo[3], const float hi[3], float cell, uint64_t max_cells)
{
    if (!g || !lo || !hi || (dim != 2 && dim != 3) || !(cell > 0.0f) || !isfinite(cell))
        return -1;
    int naxes = dim;
    uint64_t total = 1;
    int n[3] = {1, 1, 1};
    for (int a = 0; a < naxes; a++) {
        if (!isfinite(lo[a]) || !isfinite(hi[a]))
            return -1;
        double ext = ((double)hi[a] - (double)lo[a]) / (double)cell;
        double c = ceil(ext);
        if (!(c >= 1.0))
            c = 1.0;
        if (c > (double)UINT32_MAX || c > (double)max_cells)
            return -1;
        n[a] = (int)(c > (double)INT32_MAX ? INT32_MAX : c);
        if ((double)n[a] != c)
            return -1;
        total *= (uint64_t)n[a];
        if (total > max_cells || total >= (uint64_t)UINT32_MAX)
            return -1; /* keys and cell_start (ncells + 1 entries) are uint32 */
    }
    g->dim = dim;
    g->cell = cell;
    g->periodic = 0;
    for (int a = 0; a < 3; a++) {
        g->origin[a] = a < naxes ? lo[a] : 0.0f;
        g->n[a] = n[a];
        g->off[a] = 0;
    }
    return 0;
}

/* 1 when x lies in the grid's cells along every axis (not clamped) */
static inline int nb_inside(const nb_grid *g, const float *x, float inv)
{
    for (int a = 0; a < g->dim; a++) {
        const float f = (x[a] - g->origin[a]) * inv;
        if (!(f >= (float)g->off[a]) || f >= (float)(g->off[a] + g->n[a]))
            return 0;
    }
    return 1;
}

int nb_grid_window(nb_grid *w, const nb_grid *full, const float lo[3], const float hi[3])
{
    if (!w || !full || full->periodic || full->cell <= 0.0f)
        return -1;
    *w = *full;
    const float inv = 1.0f / full->cell;
    for (int a = 0; a < full->dim; a++) {
        int c0 = nb_axis(lo[a], full->origin[a], inv, full->off[a], full->n[a]);
        int c1 = nb_axis(hi[a], full->origin[a], inv, full->off[a], full->n[a]);
        if (c1 < c0)
            c1 = c0;
        w->off[a] = full->off[a] + c0;
        w->n[a] = c1 - c0 + 1;
    }
    return 0;
}

uint32_t nb_cell_key(const nb_grid *g, const float x[3])
{
    const float inv = 1.0f / g->cell;
    uint32_t ix = (uint32_t)nb_axis(x[0], g->origin[0], inv, g->off[0], g->n[0]);
    uint32_t iy = (uint32_t)nb_axis(x[1], g->origin[1], inv, g->off[1], g->n[1]);
    uint32_t iz = g->dim == 3 ? (uint32_t)nb_axis(x[2], g->origin[2], inv, g->off[2], g->n[2]) : 0u;
    return ix + (uint32_t)g->n[0] * (iy + (uint32_t)g->n[1] * iz);
}

/* ---------------------------------------------------------------- sort -- */

/* The first of the n items in part pt of nparts equal parts. */
static inline uint32_t part_start(uint32_t n, int64_t pt, int64_t nparts)
{
    return (uint32_t)((uint64_t)n * (uint64_t)pt / (uint64_t)nparts);
}

int nb_sort(nb_sorted *s, const nb_grid *g, const float *x, uint32_t n)
{
    if (!s || !g || (n && !x) || !nb_grid_ok(g))
        return -1;
    const uint32_t ncells = (uint32_t)g->n[0] * (uint32_t)g->n[1] * (uint32_t)g->n[2];

    if (n > s->cap || !s->key || !s->order || !s->scratch) {
        uint64_t want = (uint64_t)s->cap + s->cap / 2;
        if (want < n)
            want = n;
        if (want > UINT32_MAX)
            want = UINT32_MAX;
        if (nb_grow_u32(&s->key, (size_t)want) || nb_grow_u32(&s->order, (size_t)want) ||
            nb_grow_u32(&s->scratch, (size_t)want))
            return -1;
        s->cap = (uint32_t)want;
    }
    /* cell_start only grows; a smaller ncells reuses the block in place. */
    if (!s->cell_start || ncells > s->ncells) {
        if (nb_grow_u32(&s->cell_start, (size_t)ncells + 1))
            return -1;
        s->fill_ok = 0;
    }
    if (ncells != s->ncells)
        s->fill_ok = 0;
    s->ncells = ncells;
    s->n = n;
    s->n_in = n;
    s->near_cells = 0; /* the near map, if any, is stale now */
    s->slots_x = NULL; /* and the kept slots */

    uint32_t *restrict key = s->key;
    uint32_t *restrict cs = s->cell_start;

    /* keys (parallel) */
    {
        const float inv = 1.0f / g->cell;
        const float o0 = g->origin[0], o1 = g->origin[1], o2 = g->origin[2];
        const int f0 = g->off[0], f1 = g->off[1], f2 = g->off[2];
        const int n0 = g->n[0], n1 = g->n[1], n2 = g->n[2];
        const uint32_t s0 = (uint32_t)n0, s01 = (uint32_t)n0 * (uint32_t)n1;
        const int dim3 = g->dim == 3, drop = s->drop_outside;
        const float *restrict xp = x;
        const int64_t nn = (int64_t)n;
#pragma omp parallel for schedule(static) if (n >= NB_PAR_MIN)
        for (int64_t i = 0; i < nn; i++) {
            const float *p = xp + 3 * i;
            uint32_t ix = (uint32_t)nb_axis(p[0], o0, inv, f0, n0);
            uint32_t iy = (uint32_t)nb_axis(p[1], o1, inv, f1, n1);
            uint32_t iz = dim3 ? (uint32_t)nb_axis(p[2], o2, inv, f2, n2) : 0u;
            key[i] = drop && !nb_inside(g, p, inv) ? ncells : ix + s0 * iy + s01 * iz;
        }
    }

    /* Few cells for the particles (a tight grid): a counting sort, one
     * histogram, a prefix over the cells and a stable scatter, is cheapest. */
    if ((uint64_t)ncells <= 2 * (uint64_t)n) {
        uint32_t *restrict order = s->order;
        memset(cs, 0, ((size_t)ncells + 1) * sizeof(uint32_t));
        for (uint32_t i = 0; i < n; i++)
            cs[key[i]]++;
        uint32_t acc = 0;
        for (uint32_t c = 0; c < ncells; c++) {
            acc += cs[c];
            cs[c] = acc;
        }
        cs[ncells] = n;
        for (uint32_t i = n; i-- > 0;)
            order[--cs[key[i]]] = i;
        s->n_in = cs[ncells]; /* the particles left out sort last */
        s->fill_ok = 0;
        return 0;
    }

    /* LSD radix sort of the indices by key, digits of up to NB_RADIX_BITS:
     * each pass a histogram, its prefix and a forward (stable) scatter, so
     * order lists each cell's particles by ascending index, as a counting
     * sort would, at a cost in n, not in the number of cells (a scene's
     * generous domain has millions of empty cells) */
    int bits = 1; /* keys up to ncells - 1, or ncells with drop_outside */
    while (bits < 32 && ((uint64_t)1 << bits) < (uint64_t)ncells + (s->drop_outside != 0))
        bits++;
    const int passes = (bits + NB_RADIX_BITS - 1) / NB_RADIX_BITS;
    const int dbits = (bits + passes - 1) / passes;
    const uint32_t dmask = (1u << dbits) - 1u;
    /* Each pass in NB_SORT_PARTS fixed parts of the input, each with its own
     * histogram: the prefix runs over digits, then parts, so part p's items
     * of a digit land after part p - 1's, and the result is the serial
     * stable sort's whatever the number of threads. */
    uint32_t hist[NB_SORT_PARTS][1u << NB_RADIX_BITS]; /* 32 KB */
    const int64_t nparts = n >= 4 * NB_PAR_MIN ? NB_SORT_PARTS : 1;
    /* passes alternate between order and scratch, the last one writing
     * order: an odd count starts in order, an even one in scratch */
    uint32_t *restrict src = NULL, *restrict dst = passes % 2 ? s->order : s->scratch;
    for (int ps = 0; ps < passes; ps++) {
        const int sh = ps * dbits;
        const uint32_t *restrict from = src;
        uint32_t *restrict to = dst;
#pragma omp parallel for schedule(static) if (nparts > 1)
        for (int64_t pt = 0; pt < nparts; pt++) {
            const uint32_t k0 = part_start(n, pt, nparts), k1 = part_start(n, pt + 1, nparts);
            uint32_t *restrict h = hist[pt];
            memset(h, 0, ((size_t)dmask + 1) * sizeof h[0]);
            for (uint32_t k = k0; k < k1; k++)
                h[(key[from ? from[k] : k] >> sh) & dmask]++;
        }
        uint32_t acc = 0;
        for (uint32_t d = 0; d <= dmask; d++)
            for (int64_t pt = 0; pt < nparts; pt++) {
                const uint32_t c = hist[pt][d];
                hist[pt][d] = acc;
                acc += c;
            }
#pragma omp parallel for schedule(static) if (nparts > 1)
        for (int64_t pt = 0; pt < nparts; pt++) {
            const uint32_t k0 = part_start(n, pt, nparts), k1 = part_start(n, pt + 1, nparts);
            uint32_t *restrict h = hist[pt];
            for (uint32_t k = k0; k < k1; k++) {
                const uint32_t i = from ? from[k] : k;
                to[h[(key[i] >> sh) & dmask]++] = i;
            }
        }
        src = dst;
        dst = dst == s->order ? s->scratch : s->order;
    }
    uint32_t *restrict order = s->order;

    /* cell start table: cs[c] = number of particles with key < c, each
     * thread filling one range of cells by a merge walk over the sorted keys */
    uint32_t *restrict skey = s->scratch;
    {
        const int64_t nn = (int64_t)n;
#pragma omp parallel for schedule(static) if (n >= NB_PAR_MIN)
        for (int64_t k = 0; k < nn; k++)
            skey[k] = key[order[k]];
    }
    /* Cells below the smallest key hold 0, cells above the largest n up to
     * a high-water mark at least 3 cells past it, and 0 from there on: a
     * range read past the mark reads [n, 0) or [0, 0), empty
     * (cell_ranges; the search's loops run k < b), and every range that
     * holds a particle's cell ends within 3 cells of it, before the mark.
     * When the table holds an earlier sort on the same grid, only the
     * cells between the smaller of the two smallest keys and the mark
     * (raised to the new largest key + 4) change, whatever the count (a
     * tank's fluid spans about half of the reference bench's 1.4M cells). */
    uint32_t f0 = 0, f1 = ncells + 1, zero_from = ncells + 1; /* fill cells [f0, f1), zero [zero_from, ncells] */
    if (n > 0) {
        const uint32_t kmin = skey[0], kmax = skey[n - 1];
        const uint32_t mark = (uint64_t)kmax + 4 < (uint64_t)ncells + 1 ? kmax + 4 : ncells + 1;
        if (s->fill_ok) {
            f0 = kmin < s->fill_kmin ? kmin : s->fill_kmin;
            f1 = mark > s->fill_hwm ? mark : s->fill_hwm;
        } else
            zero_from = mark;
        s->fill_kmin = kmin;
        s->fill_kmax = kmax;
        s->fill_hwm = f1 < zero_from ? f1 : zero_from;
        s->fill_ok = 1;
    }
    const uint32_t nfill = f1 - f0;
    const int64_t nranges = nfill >= (1u << 16) && n >= NB_PAR_MIN ? 64 : 1;
#pragma omp parallel for schedule(static) if (nranges > 1)
    for (int64_t r = 0; r < nranges; r++) {
        const uint32_t c0 = f0 + (uint32_t)((uint64_t)nfill * (uint64_t)r / (uint64_t)nranges);
        const uint32_t c1 = f0 + (uint32_t)((uint64_t)nfill * (uint64_t)(r + 1) / (uint64_t)nranges);
        uint32_t lo = 0, hi = n; /* first k with skey[k] >= c0 */
        while (lo < hi) {
            const uint32_t mid = lo + (hi - lo) / 2;
            if (skey[mid] < c0)
                lo = mid + 1;
            else
                hi = mid;
        }
        /* cells c..e all have k as their first slot with key >= c: one
         * run of stores per occupied cell and per gap */
        uint32_t k = lo, c = c0;
        while (c < c1) {
            const uint32_t e = k < n && skey[k] < c1 ? skey[k] : c1 - 1;
            for (uint32_t q = c; q <= e; q++)
                cs[q] = k;
            c = e + 1;
            while (k < n && skey[k] < c)
                k++;
        }
    }
    if (zero_from <= ncells) /* a first fill: the table's tail past the mark */
        memset(cs + zero_from, 0, ((size_t)ncells + 1 - zero_from) * sizeof(uint32_t));
    /* the particles left out (key ncells) sort last */
    uint32_t nin = n;
    while (nin > 0 && skey[nin - 1] >= ncells)
        nin--;
    s->n_in = nin;
    return 0;
}
