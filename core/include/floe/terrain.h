/* Terrain height fields (header-only, shared by the core and modules).
 *
 * sim:terrain{...} stores the terrain as the core grid named "terrain"
 * (FLOE_F32): a grid one cell thick along the up axis y, n = {nx, 1, nz},
 * origin = {x0, 0, z0}; element i + nx j is the height (metres, along +y)
 * at x = x0 + i cell, z = z0 + j cell. In 2D nz = 1 and the terrain is the
 * profile y = h(x). Between samples the height is bilinear; outside the
 * grid the edge values continue. A module reads it with
 *
 *     floe_grid_info gi; floe_terrain t;
 *     if (api->grid_info(ctx, api->grid_find(ctx, "terrain"), &gi) == FLOE_OK
 *         && floe_terrain_view(&gi, &t) == 0) ... floe_terrain_height(&t, x, z, NULL, NULL)
 */
#ifndef FLOE_TERRAIN_H
#define FLOE_TERRAIN_H

#include <floe/module.h>
#include <floe/terrain_axis.h> /* floe_terrain_axis: one axis of the lookup, shared with the kernels */

#include <math.h>

#define FLOE_TERRAIN_GRID "terrain"

typedef struct floe_terrain {
    int nx, nz;          /* samples along x and z (nz = 1 in 2D) */
    float x0, z0;        /* world position of sample (0, 0) */
    float cell, inv_cell;
    const float *h;      /* nx * nz heights, x fastest */
} floe_terrain;

/* A view of the "terrain" grid; -1 when the grid is not a height field. */
static inline int floe_terrain_view(const floe_grid_info *g, floe_terrain *t)
{
    if (!g || g->type != FLOE_F32 || g->n[1] != 1 || g->n[0] < 1 || !(g->cell > 0) || !g->data)
        return -1;
    t->nx = (int)g->n[0];
    t->nz = (int)g->n[2];
    t->x0 = g->origin[0];
    t->z0 = g->origin[2];
    t->cell = g->cell;
    t->inv_cell = 1.0f / g->cell;
    t->h = (const float *)g->data;
    return 0;
}

/* Bilinear height at (x, z); with dx/dz the slopes dh/dx, dh/dz (0 along
 * an axis outside the grid, where the edge continues flat). */
static inline float floe_terrain_height(const floe_terrain *t, float x, float z, float *dx, float *dz)
{
    int i, j, inx, inz;
    float fx, fz;
    floe_terrain_axis((x - t->x0) * t->inv_cell, t->nx, &i, &fx, &inx);
    floe_terrain_axis((z - t->z0) * t->inv_cell, t->nz, &j, &fz, &inz);
    const int i1 = t->nx > 1 ? i + 1 : i, j1 = t->nz > 1 ? j + 1 : j;
    const float h00 = t->h[i + (size_t)t->nx * j], h10 = t->h[i1 + (size_t)t->nx * j];
    const float h01 = t->h[i + (size_t)t->nx * j1], h11 = t->h[i1 + (size_t)t->nx * j1];
    const float a = h00 + fx * (h10 - h00), b = h01 + fx * (h11 - h01);
    if (dx)
        *dx = inx ? ((1.0f - fz) * (h10 - h00) + fz * (h11 - h01)) * t->inv_cell : 0.0f;
    if (dz)
        *dz = inz ? (b - a) * t->inv_cell : 0.0f;
    return a + fz * (b - a);
}

/* Unit upward normal of the surface at (x, z): (-dh/dx, 1, -dh/dz) normalised. */
static inline float floe_terrain_normal(const floe_terrain *t, float x, float z, float n[3])
{
    float gx, gz;
    float h = floe_terrain_height(t, x, z, &gx, &gz);
    float inv = 1.0f / sqrtf(1.0f + gx * gx + gz * gz);
    n[0] = -gx * inv;
    n[1] = inv;
    n[2] = -gz * inv;
    return h;
}

#endif
