/* The terrain module's shared state (internal to modules/terrain). */
#ifndef TERRAIN_MOD_H
#define TERRAIN_MOD_H

#include <floe/terrain.h>

#include <stddef.h>
#include <stdint.h>

extern const floe_api *tm_api;

#define TM_MAX_SETS FLOE_MAX_SETS /* <floe/types.h> */

typedef struct tm_carpet tm_carpet;

typedef struct tm_state {
    floe_ctx *ctx;
    /* the wet map: one value in [0, 1] per terrain sample */
    float *wet;
    uint8_t *touched;      /* samples water touched this step */
    size_t nwet;
    int mesh_written;      /* terrain.ply written for this run */
    uint64_t collisions;   /* bounces so far (statistics) */
    tm_carpet *carpet;     /* the carpet's buffers, made on first use */
    int wet_on_device;     /* OpenCL: the wet map's truth is the device copy */
    int ranks;             /* MPI: ranks running the scene (0: not asked yet) */
    double *touched_all;   /* MPI: the samples any rank's water touched this step */
} tm_state;

/* The terrain view; fails with a message when the scene has none. */
int tm_terrain(floe_ctx *ctx, floe_terrain *t);
/* The wet map sized to the terrain (zero when made). */
int tm_wet_ensure(tm_state *s, const floe_terrain *t);

/* stages */
int tm_collide(const floe_stage_call *call);
int tm_collide_cl(const floe_stage_call *call);
/* MPI: the samples touched this step by any rank's water (touched[] on
 * every rank: the largest over the ranks), so every rank's wet map stays
 * the one process's */
int tm_touched_all_ranks(floe_ctx *ctx, tm_state *s, uint8_t *touched);
/* the ranks running the scene, asked once (collective: every rank's first step) */
int tm_ranks(floe_ctx *ctx, tm_state *s);
/* OpenCL: the device's wet map into s->wet (no-op on the C path) */
int tm_wet_to_host(tm_state *s);
int tm_output(const floe_stage_call *call);
int tm_carpet_run(const floe_stage_call *call);
void tm_carpet_free(tm_carpet *c);

/* files.c: PNG into memory (8-bit grey or RGB), a binary PLY of a
 * height-field mesh; both return 0 or -1 (a message set on ctx). */
int tm_png(floe_ctx *ctx, const char *name, const uint8_t *px, int w, int h, int channels);
/* the terrain (or any nx x nz height field) as a binary PLY triangle mesh:
 * vertex (i, j) at (x0 + i cell, y[i + nx j], z0 + j cell); extra per
 * vertex float properties (names[k], values[k][vertex]) follow x y z.
 * Cells where mask is given and 0 at any corner are left out. */
int tm_ply_heightfield(floe_ctx *ctx, const char *name, int nx, int nz, float x0, float z0, float cell,
                       const float *y, const uint8_t *mask, int nextra, const char *const *names,
                       const float *const *values);

#endif
