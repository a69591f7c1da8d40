/* terrain.output (per frame): the terrain as a mesh, once per run, so
 * Blender or ParaView show it under the water (terrain.ply, with the
 * height map's samples as vertices), and the wet map of terrain.collide as
 * an 8-bit greyscale image wet.NNNN.png (white = wet; the image's row j is
 * the terrain's row j, like the height map's). */
#include "carpet.h"

#include <stdio.h>
#include <stdlib.h>

enum { P_MESH, P_WETMAP };

int tm_output(const floe_stage_call *call)
{
    floe_ctx *ctx = call->ctx;
    tm_state *s = call->state;
    floe_terrain t;
    if (tm_terrain(ctx, &t) || tm_wet_ensure(s, &t))
        return FLOE_ERR_ARG;
    const char *mesh = call->param[P_MESH].s;
    if (!s->mesh_written && mesh && mesh[0]) {
        int rc = tm_ply_heightfield(ctx, mesh, t.nx, t.nz, t.x0, t.z0, t.cell, t.h, NULL, 0, NULL, NULL);
        if (rc)
            return rc;
        s->mesh_written = 1;
    }
    if (!call->param[P_WETMAP].i)
        return FLOE_OK;
    if (tm_wet_to_host(s))
        return FLOE_ERR;
    uint8_t *img = malloc(s->nwet);
    if (!img)
        return tm_api->fail(ctx, FLOE_ERR_NOMEM, "terrain.output: out of memory for the wet map");
    for (size_t k = 0; k < s->nwet; k++)
        img[k] = (uint8_t)(s->wet[k] * 255.0f + 0.5f);
    char name[64];
    snprintf(name, sizeof name, "wet.%04d.png", tm_api->sim(ctx)->frame);
    int rc = tm_png(ctx, name, img, t.nx, t.nz, 1);
    free(img);
    return rc;
}
