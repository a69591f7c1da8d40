/* The carpet (carpet.c builds it, carpet_out.c writes it). Internal. */
#ifndef TM_CARPET_H
#define TM_CARPET_H

#include "terrain_mod.h"

typedef struct tm_particle {
    float x, y, z, vx, vz; /* y: the particle's top */
} tm_particle;

typedef struct tm_node {
    float x0, z0, x1, z1;  /* horizontal rectangle */
    float top;             /* highest particle top below */
    uint32_t b, e;         /* particles [b, e) of the tree's order */
    int child[4];          /* -1: none */
} tm_node;

struct tm_carpet {
    tm_particle *p;
    size_t np, pcap;
    tm_node *nodes;
    size_t nn, ncap;
    int nx, nz;            /* vertices */
    float x0, z0, cs;      /* vertex (0, 0) and spacing */
    float *y, *vy;         /* vertex heights and fall speeds */
    float *depth, *speed, *fx, *fz;
    float *top;            /* highest particle top within reach (-inf: none) */
    int fresh;             /* no earlier frame to fall from */
    double last_time;
};

typedef struct tm_carpet_par {
    float cell, radius, fall, frame_dt;
    uint32_t leaf;
} tm_carpet_par;

/* The vertex grid (cell cs) over terrain t, buffers kept while it holds. */
int tm_carpet_layout(tm_carpet *c, floe_ctx *ctx, const floe_terrain *t, float cs, int dim);
/* From top, fx, fz per vertex: heights (falling or landing), depth, speed. */
void tm_carpet_finish(tm_carpet *c, const floe_terrain *t, const tm_carpet_par *par);
/* The OpenCL construction (carpet_cl.c): top, fx, fz from a z-image. */
int tm_carpet_build_cl(tm_carpet *c, floe_ctx *ctx, const floe_terrain *t, const tm_carpet_par *par);
/* The carpet of the current particles over terrain t. */
int tm_carpet_build(tm_carpet *c, floe_ctx *ctx, const floe_terrain *t, const tm_carpet_par *par);
int tm_carpet_ply(const tm_carpet *c, floe_ctx *ctx, int frame, int whole);
int tm_carpet_png(const tm_carpet *c, floe_ctx *ctx, const floe_terrain *t, int frame, int by_speed);

#endif
