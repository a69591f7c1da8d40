/* The surface module's shared types: a sparse grid of 8^3-point blocks, the
 * field splat, the marching-cubes and marching-tetrahedra meshers and the
 * mesh files. */
#ifndef FLOE_SURFACE_H
#define FLOE_SURFACE_H

#include <floe/sph.h>

#include <stddef.h>
#include <stdint.h>

FLOE_MODULE_API_EXTERN;

/* bytes the module holds now and at most during one frame */
typedef struct mem_meter {
    size_t now, peak;
} mem_meter;
void *meter_alloc(mem_meter *m, size_t bytes, int zero);
void *meter_realloc(mem_meter *m, void *p, size_t old_bytes, size_t new_bytes);
void meter_free(mem_meter *m, void *p, size_t bytes);

/* ---- sparse grid (blocks.c) ----------------------------------------------
 * Grid point p (integers, >= 0) sits at lo + p * cell. Points are stored
 * in blocks of B^3 (x fastest), found through an open-addressing hash map
 * keyed by the block's coordinates: only blocks near particles exist, and
 * an absent point reads 0. */
#define BLOCK_LOG 3
#define BLOCK (1 << BLOCK_LOG)
#define BLOCK_PTS (BLOCK * BLOCK * BLOCK)

typedef struct sgrid {
    double lo[3];
    double cell;
    int32_t max_block[3];    /* blocks per axis, below 2^17 */
    uint64_t *keys;          /* hash slots: key + 1, 0 = empty */
    int32_t *slot_block;
    size_t cap;              /* slots, a power of two */
    int32_t nblocks;
    int32_t *coord;          /* 3 per block */
    size_t coord_cap;
    float *val;              /* BLOCK_PTS per block, after sgrid_alloc_values */
    mem_meter *mem;
} sgrid;

int sgrid_init(sgrid *g, mem_meter *m, const double lo[3], const double hi[3], double cell);
void sgrid_free(sgrid *g);
/* the block at block coordinates b, created if absent: its index, or -1 (out of memory) */
int32_t sgrid_touch(sgrid *g, const int32_t b[3]);
int32_t sgrid_find(const sgrid *g, int32_t bx, int32_t by, int32_t bz);
int sgrid_alloc_values(sgrid *g);  /* zeroed values for every block */
/* every block within the point box [p0, p1] (inclusive, clamped) */
int sgrid_touch_box(sgrid *g, const int64_t p0[3], const int64_t p1[3]);

/* ---- particles and the field (field.c) ----------------------------------- */

/* A particle's kernel: centre c, matrix G (W = det G P(|G (x - c)|), P the
 * unit-support cubic spline), volume V and half-extent of its support box. */
typedef struct kern {
    float c[3];
    float G[9];
    float V;
    float ext[3];
} kern;

/* The particles sorted by cells of half the neighbourhood radius
 * (field.c; kernels/surface/aniso.cl reads the same arrays): cell keys x
 * fastest (21 bits an axis), so the cells of one (dy, dz) row are one run
 * of the entries. */
#define CELL_DIV 2
#define ROW_CELLS (2 * CELL_DIV + 1)
#define ROWS (ROW_CELLS * ROW_CELLS)
#define LANES 8 /* candidates a neighbourhood row takes at once */
#define KEY_MASK 0x1fffff
typedef struct cell_sort {
    uint64_t *key;           /* sorted cell keys */
    uint32_t *idx;           /* particle of each entry */
    float *xs[3];            /* positions in entry order, one array per axis,
                              * LANES zeros of padding after the last */
    uint32_t *cell;          /* first entry of each occupied cell, and n */
    uint64_t *ckey;          /* key of each occupied cell, then UINT64_MAX */
    uint32_t ncell;
    double lo[3], inv, h;
    uint32_t n;
} cell_sort;
int cells_build(cell_sort *cs, const float *x, uint32_t n, double r, mem_meter *m);
void cells_free(cell_sort *cs, mem_meter *m);
/* the same arrays in device buffers (cells_cl.c, kernels/surface/cells.cl),
 * sorted on the device from positions there (pos: `stride` floats a
 * point; span bounds their extent along each axis): ncell is word n of
 * count, lo is 3 doubles; api->fail's status on an error */
typedef struct cells_dev {
    void *X, *Y, *Z, *ckey, *cell, *key, *idx, *count, *lo;
    double inv, h;
    uint32_t n;
} cells_dev;
int cells_build_cl(floe_ctx *ctx, void *pos, uint32_t stride, uint32_t n, double r, const double span[3],
                   cells_dev *cd);

typedef struct aniso_opts {
    float H;                 /* kernel support */
    float lambda;            /* Laplacian smoothing of the centres */
    float radius;            /* neighbourhood radius */
    float kr;                /* largest ratio of the principal axes */
    int n_min;               /* fewer neighbours: isotropic */
} aniso_opts;

/* isotropic kernels of support H at the positions (centres, G, extents;
 * the volumes V are the caller's) */
void kerns_isotropic(kern *k, const float *x, uint32_t n, float H);
/* Yu & Turk kernels: smoothed centres and G from the weighted covariance;
 * returns FLOE_OK or FLOE_ERR_NOMEM */
int kerns_anisotropic(kern *k, const float *x, uint32_t n, const aniso_opts *o, mem_meter *m, uint32_t *n_stretched);
/* ---- the device path (surface_cl.c, cells_cl.c, grid_cl.c) ----------------
 * The positions and volumes are the sets' device copies (gather_cl); the
 * kernel records are made there (surface.kernels) and stay
 * there: the isotropic ones (kernels/surface/grid.cl), or the Yu & Turk
 * ones (kernels/surface/aniso.cl: the device sorts the particles by cell,
 * sums the neighbourhoods and decomposes; span bounds the cells;
 * the count of stretched kernels is in **n_stretched after the next
 * waiting read). api->fail's status on an error. */
/* the sets a stage surfaces: the non-empty ones chosen, their total */
typedef struct chosen {
    floe_set set[FLOE_MAX_SETS];
    floe_set_info info[FLOE_MAX_SETS];
    int n;
    uint32_t total;
} chosen;
/* the chosen sets' positions and volumes on the device (grid_cl.c): the
 * set's own device copy of x when one set is chosen, else copies side by
 * side (surface.x); the volumes m / rho0 in surface.V; span: the extent of
 * the positions along each axis. A non-finite position is an error naming
 * the particle and the set. */
int gather_cl(floe_ctx *ctx, const chosen *ch, void **bx, void **bv, double span[3]);
/* the core's named device buffer (surface.*), nothing when *rc is already
 * an error; a missing buffer makes *rc one */
void *surface_scratch(floe_ctx *ctx, const char *name, size_t bytes, int *rc);
int kerns_isotropic_cl(floe_ctx *ctx, void *bx, void *bv, uint32_t n, float H);
int kerns_anisotropic_cl(floe_ctx *ctx, const double span[3], void *bx, void *bv, uint32_t n, const aniso_opts *o,
                         const uint32_t **n_stretched);
/* the grid's lo and hi from the records, as build_mesh computes them from
 * host records */
int grid_box_cl(floe_ctx *ctx, uint32_t n, double cell, double lo[3], double hi[3]);
/* sum_j V_j W_j onto every point of g near a kernel (creates the blocks) */
int field_splat(sgrid *g, const kern *k, uint32_t n);
_Static_assert(sizeof(kern) == 16 * sizeof(float), "kernels/surface/splat.cl reads 16 floats a kernel");

/* the blocks (created, values zeroed) and the kernels of each block, in
 * kernel order: start[b]..start[b + 1] index list */
typedef struct splat_lists {
    uint32_t *start, *list;
    size_t sb, lb;
} splat_lists;
int splat_lists_build(sgrid *g, const kern *k, uint32_t n, splat_lists *sl);
int splat_blocks(sgrid *g, const kern *k, uint32_t n);  /* the blocks the kernels touch, values allocated */
int splat_lists_fill(sgrid *g, const kern *k, uint32_t n, splat_lists *sl); /* after splat_blocks */
void splat_lists_free(sgrid *g, splat_lists *sl);
/* field_splat on the OpenCL device (grid_cl.c) from the records there: the
 * same blocks and lists, one work item per grid point; g gets the block
 * count, and with read_back its blocks and values too (the host's mesher) */
int field_splat_cl(floe_ctx *ctx, sgrid *g, uint32_t n, int read_back);

/* ---- the mesh (mesher.c, cubes.c) ------------------------------------------- */

typedef struct mesh {
    float *v, *nrm;          /* 3 per vertex */
    uint32_t *tri;           /* 3 per triangle, counter-clockwise seen from outside */
    uint32_t nv, nt;
    size_t v_cap, t_cap;
    mem_meter *mem;
} mesh;

/* the marching-cubes table (cubes.c): for each pattern of inside corners
 * (bit c: corner c at offset (c & 1, c >> 1 & 1, c >> 2 & 1) is inside),
 * triangles on the cell's edges mc_edge (corner pairs, the first corner's
 * bits a subset of the second's), counter-clockwise seen from outside */
#define MC_MAX_TRI 12
typedef struct mc_table {
    uint8_t ntri[256];
    uint8_t tri[256][MC_MAX_TRI][3];
} mc_table;
extern const int mc_edge[12][2];
/* 0, or -1 when a pattern's segments do not close into loops (a bug) */
int mc_table_build(mc_table *t);

typedef enum mesher_kind { MESHER_CUBES, MESHER_TETRAHEDRA } mesher_kind;

/* the iso surface as a closed, oriented 2-manifold with vertices welded per
 * grid edge and area-weighted vertex normals: marching cubes (cubes.c's
 * table) or marching tetrahedra (every cell split into the same six
 * tetrahedra around its diagonal: about three times the triangles) */
int mesh_extract(const sgrid *g, float iso, mesher_kind kind, mesh *out);
void mesh_free(mesh *m);
/* the table, built on first use; NULL if it does not close (a bug) */
const mc_table *mc_table_get(void);
/* out's area-weighted vertex normals (allocated) */
int mesh_normals(mesh *out);
/* marching cubes on the OpenCL device (surface_cl.c, kernels/surface/mc.cl)
 * over the values field_splat_cl left there (read_back = 0): the mesh
 * mesh_extract(MESHER_CUBES) makes, vertices numbered alike; api->fail's
 * status on an error */
int mesh_extract_cl(floe_ctx *ctx, const sgrid *g, float iso, mesh *out);

/* ---- files (mesh_file.c) ---------------------------------------------------- */

/* the mesh as OBJ text or binary little-endian PLY, malloc'd into *buf */
int mesh_obj(const mesh *m, char **buf, size_t *len);
int mesh_ply(const mesh *m, char **buf, size_t *len);

#endif
