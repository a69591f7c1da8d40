/* Floe module "terrain": water on a height-field terrain after Kipfer &
 * Westermann, "Realistic and Interactive Simulation of Rivers" (GI 2006).
 * The terrain itself is the core grid "terrain" that sim:terrain{...} makes
 * from a 16-bit PNG height map or a Lua function (<floe/terrain.h>).
 *
 *   terrain.collide  after integrate: particles that would end below the
 *                    surface are moved back along their motion path by
 *                    bisection, bounced with restitution and (wet-map
 *                    modulated) friction, and sent on for the rest of the
 *                    step; frozen (settled) particles are skipped
 *   terrain.output   per frame: terrain.ply once per run, wet.NNNN.png
 *   terrain.carpet   per frame: the carpet, a height-field mesh draped over
 *                    the water (carpet.NNNN.ply) and a shaded image of it
 *                    (carpet.NNNN.png)
 * docs/terrain.md. */
#include "carpet.h"

#include <floe/module_desc.h>

#include <stdlib.h>
#include <string.h>

const floe_api *tm_api;

int tm_terrain(floe_ctx *ctx, floe_terrain *t)
{
    floe_grid_info gi;
    floe_grid g = tm_api->grid_find(ctx, FLOE_TERRAIN_GRID);
    if (!g.id || tm_api->grid_info(ctx, g, &gi) != FLOE_OK || floe_terrain_view(&gi, t))
        return tm_api->fail(ctx, FLOE_ERR_ARG, "the scene has no terrain: call sim:terrain{ file = ..., cell = ..., "
                                               "scale = ... } (or height = function) before the run");
    return FLOE_OK;
}

int tm_wet_ensure(tm_state *s, const floe_terrain *t)
{
    size_t n = (size_t)t->nx * t->nz;
    if (s->wet && s->nwet == n)
        return FLOE_OK;
    free(s->wet);
    free(s->touched);
    free(s->touched_all);
    s->touched_all = NULL;
    s->wet = calloc(n, sizeof *s->wet);
    s->touched = calloc(n, 1);
    s->nwet = n;
    if (!s->wet || !s->touched)
        return tm_api->fail(s->ctx, FLOE_ERR_NOMEM, "terrain: out of memory for the wet map (%zu samples)", n);
    return FLOE_OK;
}

static int tm_init(floe_ctx *ctx, void **state)
{
    tm_state *s = calloc(1, sizeof *s);
    if (!s)
        return FLOE_ERR_NOMEM;
    s->ctx = ctx;
    *state = s;
    return FLOE_OK;
}

static void tm_fini(void *state)
{
    tm_state *s = state;
    free(s->wet);
    free(s->touched);
    free(s->touched_all);
    tm_carpet_free(s->carpet);
    free(s);
}

/* Checkpoints: the wet map and the count of bounces; the terrain mesh is
 * not written again by a resumed run. */
static int tm_save(void *state, floe_state_io *out)
{
    tm_state *s = state;
    if (tm_wet_to_host(s))
        return FLOE_ERR;
    uint64_t n = s->nwet;
    if (out->write(out, &n, sizeof n) || out->write(out, &s->collisions, sizeof s->collisions))
        return FLOE_ERR;
    return n && out->write(out, s->wet, n * sizeof *s->wet) ? FLOE_ERR : FLOE_OK;
}

static int tm_load(void *state, floe_state_io *in)
{
    tm_state *s = state;
    uint64_t n;
    if (in->read(in, &n, sizeof n) || in->read(in, &s->collisions, sizeof s->collisions) || n > ((uint64_t)1 << 31))
        return FLOE_ERR;
    s->mesh_written = 1;
    s->wet_on_device = 0; /* uploaded again by the next device step */
    if (!n)
        return FLOE_OK;
    free(s->wet);
    free(s->touched);
    free(s->touched_all);
    s->touched_all = NULL;
    s->wet = malloc(n * sizeof *s->wet);
    s->touched = calloc(n, 1);
    s->nwet = n;
    if (!s->wet || !s->touched)
        return FLOE_ERR_NOMEM;
    return in->read(in, s->wet, n * sizeof *s->wet) ? FLOE_ERR : FLOE_OK;
}

/* short names for the kit's descriptor macros (<floe/module_desc.h>) */
#define PF FLOE_PARAM_F
#define PI FLOE_PARAM_I
#define PS FLOE_PARAM_S
#define FLUID FLOE_ATTR_FLUID

/* parameter order: collide.c's enum */
static const floe_param_desc collide_params[] = {
    PF("restitution", 0.1, 0, 1, "", "normal velocity kept (reversed) by a bounce: 0 = inelastic, 1 = elastic"),
    PF("friction", 0.4, 0, 10, "", "Coulomb friction coefficient of dry terrain"),
    PF("wet_friction", 0.05, 0, 10, "", "friction coefficient of fully wet terrain (the wet map blends the two)"),
    PF("radius", 0.5, 0, 2, "spacings", "particles are kept this far above the surface (particle radius)"),
    PI("bisections", 16, 1, 40, "", "bisection steps locating the contact along the motion path"),
    PF("freeze_speed", 0.0, 0, 1e3, "m/s",
       "a particle slower than this for freeze_steps steps, ending the step above the terrain, is frozen (settled, "
       "e.g. in a lake) and skipped; 0 = never"),
    PI("freeze_steps", 20, 1, 1e6, "steps", "steps below freeze_speed before a particle freezes"),
    PF("wet_rate", 4, 0, 1e3, "1/s", "wetness rise per second where water touches the terrain"),
    PF("dry_rate", 0.2, 0, 1e3, "1/s", "wetness decay rate elsewhere: wet *= exp(-dry_rate dt)"),
    {0}};

static const floe_attr_desc collide_attrs[] = {
    FLUID("x", FLOE_VEC3, FLOE_READ | FLOE_WRITE),
    FLUID("v", FLOE_VEC3, FLOE_READ | FLOE_WRITE),
    FLUID("rest", FLOE_U32, FLOE_READ | FLOE_WRITE),
    {0}};

static const floe_param_desc output_params[] = {
    PS("mesh", "terrain.ply", NULL, "file name of the terrain mesh written once per run (\"\" = none)"),
    PI("wet_map", 1, 0, 1, "", "1: write the wet map as wet.NNNN.png every frame"),
    {0}};

/* parameter order: carpet.c's enum */
static const floe_param_desc carpet_params[] = {
    PF("cell", 1, 0.05, 100, "spacings", "carpet vertex spacing"),
    PF("radius", 1, 0.1, 10, "spacings", "a particle covers the carpet within this distance of it"),
    PI("leaf", 8, 1, 4096, "particles", "quadtree leaves hold at most this many particles"),
    PF("fall", 0, 0, 1e6, "m/s^2", "gravity of the falling carpet vertices (0: they land at once)"),
    PS("colour", "depth", "depth|speed", "the image's water colour: water depth or flow speed"),
    PI("image", 1, 0, 1, "", "1: write carpet.NNNN.png"),
    PI("mesh", 1, 0, 2, "", "carpet.NNNN.ply (x y z, depth, speed, flow_x, flow_z per vertex): 0 none, 1 the wet part, "
                            "2 the whole carpet (lying on the terrain where it is dry)"),
    {0}};

static const floe_attr_desc carpet_attrs[] = {
    FLUID("x", FLOE_VEC3, FLOE_READ),
    FLUID("v", FLOE_VEC3, FLOE_READ),
    {0}};

static const floe_stage_desc stages[] = {
    {FLOE_SIZED(floe_stage_desc), .name = "collide",
     .doc = "terrain collision after integrate: bisection along the motion path to the surface, inelastic bounce "
            "with restitution and wet-map friction, the rest of the path with the damped velocity",
     .run = tm_collide, .run_cl = tm_collide_cl, .params = collide_params, .attrs = collide_attrs, .corrects = 1},
    {FLOE_SIZED(floe_stage_desc), .serial = 1, .name = "output",
     .doc = "per frame: the terrain as a mesh (once per run) and the wet map as an image",
     .run = tm_output, .params = output_params, .per_frame = 1},
    {FLOE_SIZED(floe_stage_desc), .serial = 1, .name = "carpet",
     .doc = "per frame: the carpet, a height-field mesh draped over the water (quadtree of particles, vertices "
            "falling onto the water), as PLY with depth and flow per vertex and a shaded PNG",
     .run = tm_carpet_run, .run_cl = tm_carpet_run, .params = carpet_params, .attrs = carpet_attrs, .per_frame = 1},
    {0}};

FLOE_MODULE_DESC_API(terrain, tm_api, .version = "1.0.0",
                     .summary = "Water on height-field terrain (Kipfer & Westermann 2006): collision, wet map, carpet "
                                "surface",
                     .stages = stages, .init = tm_init, .fini = tm_fini, .save = tm_save, .load = tm_load)
