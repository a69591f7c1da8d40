/* The carpet's files: carpet.NNNN.ply, the wet part of the carpet (cells
 * whose four vertices have water) with per-vertex depth, speed and flow
 * direction, and carpet.NNNN.png, a top view: the terrain hill-shaded
 * (light from the north-west), water blended over it, its colour by depth
 * (light to dark blue) or by speed (blue to white, scaled to the frame's
 * fastest vertex). Image row j is carpet row j (z grows downwards, as in
 * the height map). */
#include "carpet.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int tm_carpet_ply(const tm_carpet *c, floe_ctx *ctx, int frame, int whole)
{
    const size_t n = (size_t)c->nx * c->nz;
    uint8_t *mask = malloc(n);
    if (!mask)
        return tm_api->fail(ctx, FLOE_ERR_NOMEM, "terrain.carpet: out of memory");
    for (size_t k = 0; k < n; k++)
        mask[k] = whole || c->depth[k] > 0.0f;
    static const char *const names[] = {"depth", "speed", "flow_x", "flow_z"};
    const float *values[] = {c->depth, c->speed, c->fx, c->fz};
    char name[64];
    snprintf(name, sizeof name, "carpet.%04d.ply", frame);
    int rc = tm_ply_heightfield(ctx, name, c->nx, c->nz, c->x0, c->z0, c->cs, c->y, mask, 4, names, values);
    free(mask);
    return rc;
}

int tm_carpet_png(const tm_carpet *c, floe_ctx *ctx, const floe_terrain *t, int frame, int by_speed)
{
    /* at least ~512 pixels across: each vertex a square of s x s pixels */
    const int big = c->nx > c->nz ? c->nx : c->nz;
    const int s = big >= 512 ? 1 : (512 + big - 1) / big;
    const int w = c->nx * s, h = c->nz * s;
    uint8_t *img = malloc((size_t)w * h * 3);
    if (!img)
        return tm_api->fail(ctx, FLOE_ERR_NOMEM, "terrain.carpet: out of memory for the image");
    float vmax = 1e-6f, dmax = 1e-6f;
    for (size_t k = 0; k < (size_t)c->nx * c->nz; k++) {
        vmax = c->depth[k] > 0 && c->speed[k] > vmax ? c->speed[k] : vmax;
        dmax = c->depth[k] > dmax ? c->depth[k] : dmax;
    }
    const float L[3] = {-0.577f, 0.577f, -0.577f}; /* towards the light: north-west, up */
    for (int j = 0; j < c->nz; j++)
        for (int i = 0; i < c->nx; i++) {
            const size_t k = (size_t)i + (size_t)c->nx * j;
            float nrm[3];
            floe_terrain_normal(t, c->x0 + i * c->cs, c->z0 + j * c->cs, nrm);
            float shade = nrm[0] * L[0] + nrm[1] * L[1] + nrm[2] * L[2];
            shade = 0.35f + 0.65f * (shade > 0 ? shade : 0);
            float rgb[3] = {0.62f * shade, 0.55f * shade, 0.42f * shade};
            if (c->depth[k] > 0.0f) {
                float water[3], a;
                if (by_speed) {
                    const float u = fminf(1.0f, c->speed[k] / vmax);
                    water[0] = 0.1f + 0.9f * u;
                    water[1] = 0.3f + 0.7f * u;
                    water[2] = 0.8f + 0.2f * u;
                    a = 0.85f;
                } else {
                    const float u = fminf(1.0f, c->depth[k] / dmax);
                    water[0] = 0.45f - 0.4f * u;
                    water[1] = 0.7f - 0.5f * u;
                    water[2] = 0.95f - 0.45f * u;
                    a = 0.55f + 0.4f * u;
                }
                for (int q = 0; q < 3; q++)
                    rgb[q] = (1 - a) * rgb[q] + a * water[q];
            }
            uint8_t px[3];
            for (int q = 0; q < 3; q++)
                px[q] = (uint8_t)(fminf(1.0f, fmaxf(0.0f, rgb[q])) * 255.0f + 0.5f);
            for (int b = 0; b < s; b++)
                for (int a = 0; a < s; a++) {
                    uint8_t *o = img + 3 * ((size_t)(j * s + b) * w + (size_t)(i * s + a));
                    o[0] = px[0];
                    o[1] = px[1];
                    o[2] = px[2];
                }
        }
    char name[64];
    snprintf(name, sizeof name, "carpet.%04d.png", frame);
    int rc = tm_png(ctx, name, img, w, h, 3);
    free(img);
    return rc;
}
