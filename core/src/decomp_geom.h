/* The boxes of a domain decomposition (decomp_geom.c, docs/mpi.md): N
 * ranks as p0 x p1 [x p2] boxes, cut level by level (multi-section): the
 * first level cuts axis[0] into parts[0] slabs, each of these is cut along
 * axis[1] into parts[1] pieces at its own positions, and so on; slabs are
 * one level. Each level's cuts sit at equal particle counts within their
 * parent (decomp.c places them from histograms). The outermost cuts are
 * -inf and +inf: every point of space has an owner. No MPI in here. */
#ifndef FLOE_DECOMP_GEOM_H
#define FLOE_DECOMP_GEOM_H

#include <stddef.h>

enum { DD_SLABS, DD_BOXES, DD_AUTO };

typedef struct dd_geom {
    int ranks, levels;
    int axis[3], parts[3];
    int nodes[3];   /* parents of level l: parts[0] * ... * parts[l - 1] */
    size_t off[3];  /* level l's cuts start at cuts + off[l]: nodes[l] rows of parts[l] + 1 */
    double *cuts;
} dd_geom;

/* The split of `ranks` for extents ext (the particles' bounding box; dim 2
 * or 3) by mode: DD_SLABS along the longest axis, DD_BOXES the cheapest
 * split cutting at least two axes (slabs when ranks is prime), DD_AUTO the
 * cheapest (the least cut area: the halo's volume). Cuts unset (call
 * dd_geom_set_level per level). -1 out of memory. */
int dd_geom_init(dd_geom *g, int ranks, int dim, const double ext[3], int mode);
void dd_geom_free(dd_geom *g);
/* the row of level l's cuts for node (parts[l] + 1 values) */
static inline double *dd_geom_row(const dd_geom *g, int l, int node)
{
    return g->cuts + g->off[l] + (size_t)node * (size_t)(g->parts[l] + 1);
}
/* the node of level l holding point x (levels < l decide it) */
int dd_geom_node(const dd_geom *g, int l, const float *x);
/* the rank owning point x */
int dd_geom_owner(const dd_geom *g, const float *x);
/* the box of rank r: lo, hi per axis (infinite on the outer faces) */
void dd_geom_box(const dd_geom *g, int r, double lo[3], double hi[3]);
/* level l's cuts of node at the quantiles of a histogram of nb bins over
 * [lo, hi) along its axis, each on the bin edge nearer its quantile;
 * returns the fullest part's sum against the mean, by the histogram */
double dd_geom_cut_row(dd_geom *g, int l, int node, const double *hist, int nb, double lo, double hi);
/* "2x2 boxes (x, y)", "4 slabs along x" */
void dd_geom_describe(const dd_geom *g, char *buf, size_t len);

#endif
