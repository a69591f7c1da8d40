/* Floe module "raycast": internal declarations (not part of the module ABI).
 *
 *   raycast.c   descriptor, stage "render", frame timing, output folders,
 *               ffmpeg at the end of the simulation
 *   render.c    3D ray marching of a density grid, 2D density / height images
 *   png_out.c   PNG files through libpng, written atomically */
#ifndef RAYCAST_INTERNAL_H
#define RAYCAST_INTERNAL_H

#include <floe/module.h>

#include <stddef.h>
#include <stdint.h>

/* A grid looked up by name for one render. */
typedef struct rc_field {
    const float *data; /* NULL: absent */
    uint32_t n[3];
    float origin[3];
    float h, inv_h;
    int dim;
} rc_field;

typedef struct rc_view {
    int mode;                  /* RC_SURFACE, RC_IMAGE, RC_HEIGHT */
    int width, height;
    float iso;                 /* surface level of the density grid */
    float scale;               /* height mode: metres per grid unit of density */
    float eye[3], target[3], fov_deg;
    float light[3];            /* unit, towards the light */
    float step;                /* ray march step in cells */
    float lo[3], hi[3];        /* domain */
    rc_field dens, solid, ground;
} rc_view;

enum { RC_SURFACE, RC_IMAGE, RC_HEIGHT };

/* Render into rgb (3 bytes per pixel, rows top to bottom). */
void rc_render(const rc_view *v, uint8_t *rgb);

/* Write an RGB image as PNG named `name` in the folder dirfd (temporary
 * name + renameat). 0 or -1 (errno), why in err. */
int rc_png_write(int dirfd, const char *name, const uint8_t *rgb, int width, int height, char *err, size_t errlen);

#endif
