/* A float's bits as an int that orders as the float does, and back: exact
 * minima and maxima of floats by integer atomics (cells.cl, grid.cl; the
 * host decodes with surface's grid_cl.c). */
#ifndef FLOE_SURFACE_ORDERED_H
#define FLOE_SURFACE_ORDERED_H

static int ordered(float f)
{
    const int i = as_int(f);
    return i >= 0 ? i : i ^ 0x7fffffff;
}

static float unordered(int i) { return as_float(i >= 0 ? i : i ^ 0x7fffffff); }

#endif
