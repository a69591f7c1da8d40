/* Terrain height fields in the core (heightmap.c): read from 16-bit
 * greyscale PNG files or filled by the caller, stored as the grid
 * "terrain" that <floe/terrain.h> describes. Internal. */
#ifndef FLOE_HEIGHTMAP_H
#define FLOE_HEIGHTMAP_H

#include <floe/floe.h>

#include <stddef.h>
#include <stdint.h>

/* Read a 16-bit greyscale PNG (colour type grey, bit depth 16, no alpha)
 * into *px (w * h samples, row 0 first, malloc'd). Anything else (missing,
 * not a PNG, 8-bit, colour, alpha, palette) fails with -1 and a message
 * naming the file in err. */
int hm_read_png16(const char *path, uint16_t **px, uint32_t *w, uint32_t *h, char *err, size_t errlen);

/* Make the grid "terrain" of the context from nx * nz heights in metres
 * (x fastest; nz = 1 for a 2D profile): sample (i, j) at
 * (x0 + i cell, z0 + j cell). Fails when a terrain exists already, the
 * sizes or cell are not positive, or a height is not finite. */
int hm_terrain_set(floe_ctx *ctx, uint32_t nx, uint32_t nz, const float *heights, float cell, float x0, float z0);

#endif
