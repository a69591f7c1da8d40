/* Floe: triangle meshes from files (OBJ, STL, PLY, Collada and the other
 * formats assimp reads), and scene geometry made from them: boundary
 * particles sampled on a mesh's surface (Akinci et al. 2012) and fluid
 * filling a closed mesh's interior. docs/meshes.md explains the choices. */
#ifndef FLOE_MESH_H
#define FLOE_MESH_H

#include <floe/floe.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* Limits that turn a huge input into an error instead of an exhausted
 * machine (each overridable per call). */
#define FLOE_MESH_MAX_TRIANGLES 4000000u      /* after triangulation */
#define FLOE_MESH_MAX_FILE_BYTES (1ll << 30)  /* checked before parsing */
#define FLOE_MESH_MAX_PARTICLES 20000000l     /* one boundary_mesh or fluid_mesh */

/* Where a mesh comes from and how it is placed: x' = R (S x) + t, the
 * scale S (per axis, each > 0) first, then the rotation R, then t. */
typedef struct floe_mesh_def {
    const char *file;
    const char *object;      /* only the nodes of this name and below (NULL = all) */
    float scale[3];
    float rotation[3][3];    /* row-major, proper (det 1) */
    float translation[3];
    uint32_t max_triangles;  /* 0 = FLOE_MESH_MAX_TRIANGLES */
} floe_mesh_def;

/* scale 1, identity rotation, no translation, default limits */
floe_mesh_def floe_mesh_default_def(void);
/* R from Euler angles in degrees, applied about the fixed x, then y, then z
 * axis: R = Rz(deg[2]) Ry(deg[1]) Rx(deg[0]). */
void floe_rotation_euler(float R[3][3], const float deg[3]);
/* R from a rotation of deg degrees about axis (any length > 0), right-handed. */
void floe_rotation_axis_angle(float R[3][3], const float axis[3], float deg);

/* A loaded, welded, placed triangle mesh. Vertices that coincide exactly
 * after assimp's JoinIdenticalVertices are merged across its meshes,
 * triangles with a repeated vertex dropped. The edge counts describe the
 * topology: the mesh is closed when every edge is shared by exactly two
 * triangles of opposite orientation (all three counts zero); a closed mesh
 * whose file lists it inside out (negative volume) is reversed so that
 * its triangles face outward. */
typedef struct floe_mesh {
    char file[1024];
    uint32_t nverts, ntris;
    float *x;                /* 3 per vertex, placed */
    uint32_t *tri;           /* 3 vertex indices per triangle */
    uint32_t open_edges;     /* used by one triangle only (boundary edges) */
    uint32_t nonmanifold_edges; /* used by more than two */
    uint32_t misoriented_edges; /* two triangles that traverse it the same way */
    uint32_t dropped;        /* degenerate triangles removed */
    int reversed;            /* closed and inside out in the file: reversed */
    double area, volume;     /* volume by the divergence theorem (closed meshes) */
    float min[3], max[3];    /* bounding box, placed */
} floe_mesh;

/* Read and place a mesh. NULL on failure, with the reason in err, which
 * names the file: missing or unreadable file (strerror), larger than the
 * limits, a format assimp cannot read (its own message), no triangles. */
floe_mesh *floe_mesh_load(const floe_mesh_def *def, char *err, size_t errlen);
void floe_mesh_destroy(floe_mesh *m);
int floe_mesh_is_closed(const floe_mesh *m);
/* "closed", or e.g. "not closed: 12 boundary edges, 2 edges of more than
 * two triangles" into buf. */
void floe_mesh_describe(const floe_mesh *m, char *buf, size_t len);

/* How mesh geometry becomes particles (zero means default). */
typedef struct floe_mesh_use {
    int layers;              /* boundary: surface layers (0 = 1), each d further in */
    int container;           /* boundary: the fluid is inside, extra layers go outward */
    int allow_open;          /* fluid: accept a mesh that is not closed */
    long max_particles;      /* 0 = FLOE_MESH_MAX_PARTICLES */
} floe_mesh_use;

/* Boundary particles on the surface at about the sim spacing d: every
 * vertex, points along every edge at about d, faces filled on a triangular
 * lattice of density 1/d^2 kept d/2 from their edges; points closer than
 * d/2 to one already placed are dropped (docs/meshes.md). Extra layers
 * are offset by k*d along the (inward, or for a container outward) normal.
 * Their volumes come from floe_boundary_volumes. Returns the count added. */
long floe_boundary_mesh(floe_ctx *ctx, floe_set set, const floe_mesh *m, const floe_mesh_use *use);
/* Fluid on the sim's lattice (cell-centred from the mesh's bounding box
 * minimum, as floe_fill_box) at the points inside the mesh (generalised
 * winding number >= 1/2) that lie at least d/2 from its surface. The mesh
 * must be closed unless use->allow_open. Returns the count added. */
long floe_fill_mesh(floe_ctx *ctx, floe_set set, const floe_mesh *m, const floe_mesh_use *use, const float v0[3]);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif
