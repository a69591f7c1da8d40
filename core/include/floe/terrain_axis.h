/* Floe: one axis of the terrain's bilinear lookup, one text for C
 * (<floe/terrain.h>) and OpenCL C (kernels/terrain/collide.cl, which the
 * OpenCL program build reaches through the public headers' folder:
 * #include "floe/terrain_axis.h"). Float only. */
#ifndef FLOE_TERRAIN_AXIS_H
#define FLOE_TERRAIN_AXIS_H

/* The lower sample index and the fraction towards the next of grid
 * coordinate u on an axis of n samples, clamped to the grid (flat outside);
 * *inside: u lies on the grid. */
static inline void floe_terrain_axis(float u, int n, int *i, float *f, int *inside)
{
    *inside = 1;
    if (n < 2 || !(u > 0.0f)) { /* NaN lands here too */
        *i = 0;
        *f = 0.0f;
        *inside = n >= 2 && u == 0.0f;
        return;
    }
    if (u >= (float)(n - 1)) {
        *i = n - 2;
        *f = 1.0f;
        *inside = u == (float)(n - 1);
        return;
    }
    *i = (int)u;
    *f = u - (float)*i;
}

#endif
