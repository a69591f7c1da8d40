/* Internal to the mesh files (mesh.c, mesh_query.c, mesh_sample.c,
 * mesh_fill.c) and the tests. */
#ifndef FLOE_MESH_INTERNAL_H
#define FLOE_MESH_INTERNAL_H

#include <floe/mesh.h>

#define MESH_NO_TRI UINT32_MAX

/* An undirected edge a < b with the triangles using it (the first two;
 * uses counts them all). */
typedef struct mesh_edge {
    uint32_t a, b;
    uint32_t t0, t1;         /* MESH_NO_TRI when absent */
    uint32_t uses;
    uint32_t forward;        /* how many of the uses run a -> b */
} mesh_edge;

/* The unique edges of m, sorted by (a, b), into *out (malloc'd). Returns
 * the count, or -1 when out of memory. */
long mesh_edges(const floe_mesh *m, mesh_edge **out);

/* Triangle t's area vector (b - a) x (c - a) / 2, in double. */
void mesh_tri_area_vec(const floe_mesh *m, uint32_t t, double out[3]);

/* ---- mesh_query.c: a bounding volume hierarchy over the triangles -------- */

typedef struct bvh_node {
    float lo[3], hi[3];      /* box of the node's triangles */
    uint32_t first, count;   /* leaf: order[first .. first + count) */
    uint32_t left;           /* inner node (count 0): children left, left + 1 */
    double c[3];             /* area-weighted centre */
    double n[3];             /* sum of the area vectors */
    double r;                /* radius of a ball about c holding the box */
} bvh_node;

typedef struct mesh_bvh {
    const floe_mesh *m;
    bvh_node *nodes;
    uint32_t nnodes;
    uint32_t *order;         /* triangle indices, leaf by leaf */
} mesh_bvh;

int mesh_bvh_build(mesh_bvh *b, const floe_mesh *m);
void mesh_bvh_free(mesh_bvh *b);
/* The generalised winding number of the mesh at p (Jacobson et al. 2013):
 * the sum of the triangles' signed solid angles over 4 pi, with far
 * clusters taken as dipoles (Barill et al. 2018). 1 inside a closed
 * outward mesh, 0 outside, in between near holes. */
double mesh_winding(const mesh_bvh *b, const double p[3]);
/* Nonzero when some triangle lies closer than r to p. */
int mesh_near(const mesh_bvh *b, const double p[3], double r);
/* Nonzero when the segment p q meets a triangle (touching counts). */
int mesh_segment_hits(const mesh_bvh *b, const double p[3], const double q[3]);
/* Squared distance from p to triangle t. */
double mesh_tri_dist2(const floe_mesh *m, uint32_t t, const double p[3]);

#endif
