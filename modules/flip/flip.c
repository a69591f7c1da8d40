/* Floe module "flip": grid-splat PIC/FLIP liquid after Guay (2013), "Simple,
 * Rasterization-based Liquids" (GPU Pro 5). Particles are never sorted: they
 * are splatted onto a grid once per step, the forces are computed on the
 * grid, and the particles sample it back.
 *
 * Stages, in pipeline order (no core stage is needed):
 *   obstacle (any number)  register a signed-distance obstacle for this step
 *   ground   (2D only)     ground height of a shallow-water scene
 *   splat                  rasterise the kernel and kernel-weighted velocity
 *   grid                   density, pressure, velocity update, walls, obstacles
 *   advect                 PIC/FLIP velocity, RK2 positions, clamping
 *
 * The grids are named (core grid_add) so other modules can read them:
 * flip.rho (density, kg/m^3), flip.u and flip.u_old (velocity after and
 * before the update), flip.p (kinematic pressure, m^2/s^2), flip.phi
 * (obstacle distance, m), flip.ground (ground height, m). docs/flip.md has
 * the equations, parameters and units. */
#include "flip.h"

#include <floe/module_desc.h>

#include <stdlib.h>

const floe_api *flip_api;

static int flip_init(floe_ctx *ctx, void **state)
{
    flip_state *s = calloc(1, sizeof *s);
    if (!s)
        return FLOE_ERR_NOMEM;
    s->ctx = ctx;
    *state = s;
    return FLOE_OK;
}

static void flip_fini(void *state)
{
    flip_state *s = state;
    if (!s)
        return;
    free(s->acc);
    free(s->un);
    free(s->uo);
    free(s->sn);
    free(s->sd);
    free(s->row_tmp);
    free(s->rho_obs);
    free(s->hist);
    free(s->obs);
    free(s->balls);
    free(s->keys);
    free(s->snap);
    free(s->phi_static);
    free(s->rho_ground);
    free(s->grounds);
    free(s->bumps);
    flip_cl_release(s);
    free(s);
}

/* ---- descriptors ------------------------------------------------------------ */

/* short names for the kit's descriptor macros (<floe/module_desc.h>) */
#define PF FLOE_PARAM_F
#define PV FLOE_PARAM_V
#define PS FLOE_PARAM_S
#define PB FLOE_PARAM_B
#define FLUID FLOE_ATTR_FLUID

static const floe_param_desc splat_params[] = {
    [SP_CELL] = PF("cell", 0, 0, 1e3, "m", "grid cell edge h; 0 = 2 x the sim spacing. One grid per simulation, made on the first "
                                           "splat over the sim domain plus ceil(radius) + 1 ghost cells per side"),
    [SP_RADIUS] = PF("radius", 3, 1, 8, "cells", "splat radius r in cells: kernel w(d, r) = (1 - d^2/r^2)^3"),
    [SP_DEVICE] = PS("device_splat", "auto", "auto|gather|atomics",
                     "OpenCL backend, 2D: gather = particles filed by cell, each cell sums the particles within r (an "
                     "atomic a particle and one a cell row); atomics = each particle adds to the cells within r with "
                     "64-bit atomics; auto = gather from 1.5 particles per grid cell on. The same sums to the bit; "
                     "3D always uses atomics. Ignored on the C path"),
    {0},
};

static const floe_attr_desc splat_attrs[] = {
    FLUID("x", FLOE_VEC3, FLOE_READ),
    FLUID("v", FLOE_VEC3, FLOE_READ),
    FLUID("m", FLOE_F32, FLOE_READ),
    {0},
};

static const floe_param_desc grid_params[] = {
    [GP_STIFFNESS] = PF("stiffness", 0, 0, 1e12, "m^2/s^2",
                        "k in P = k (rho/rho0)^gamma (P is pressure over density); 0 = speed_of_sound^2 / gamma"),
    [GP_SPEED] = PF("speed_of_sound", 20, 1e-3, 1e6, "m/s",
                    "numerical speed of sound c = sqrt(k gamma) used when stiffness is 0 (about 10x the largest speed)"),
    [GP_GAMMA] = PF("gamma", 5, 1, 10, "", "exponent of the equation of state (Guay: 5; 1 for shallow water)"),
    [GP_EOS] = PS("eos", "tait", "guay|tait",
                  "guay: P = k (rho/rho0)^gamma; tait: P = k max((rho/rho0)^gamma - 1, 0) (same gradient where rho > rho0, "
                  "no pull at the free surface)"),
    [GP_REST_DENSITY] = PF("rest_density", 0, 0, 1e6, "kg/m^3", "rho0; 0 = the rest density of the first fluid set"),
    [GP_COURANT] = PF("courant", 0.5, 0, 10, "",
                      "proposes dt <= courant h / c at the largest density on the grid; 0 proposes nothing"),
    [GP_WALL_FRICTION] = PF("wall_friction", 0, 0, 1,
                            "", "fraction of the tangential velocity removed per step in boundary cells (0: Guay, normal "
                                "component zeroed only)"),
    [GP_OBSTACLE] = PF("obstacle_density", 1, 0, 100, "",
                       "obstacles add obstacle_density rho0 F(phi/r), the density of liquid at rest filling them"),
    [GP_VISCOSITY] = PF("viscosity", 0, 0, 1e3, "m^2/s",
                        "kinematic viscosity nu: u += dt nu lap u (5/7-point Laplacian over cells with liquid)"),
    [GP_HOST_FPS] = PF("host_fps", 30, -1, 1e6, "1/s",
                       "OpenCL backend: copy the device grids back to the host grids (flip.rho, flip.u, flip.u_old, "
                       "flip.p, flip.phi) this many times per simulated second, on the steps raycast.render at the "
                       "same fps renders; -1 = every step, 0 = never. Ignored on the C path"),
    {0},
};

static const floe_param_desc advect_params[] = {
    [AD_PIC] = PF("pic", 0.05, 0, 1, "", "PIC fraction r: u_p = r u_new(x_p) + (1 - r)(u_p + u_new(x_p) - u_old(x_p))"),
    [AD_MARGIN] = PF("margin", 0.01, 0, 1, "cells", "distance kept from the walls and obstacle surfaces"),
    [AD_SAMPLING] = PS("sampling", "smooth", "smooth|kernel|linear",
                       "grid -> particle read: kernel = the splat kernel at the particle, normalised (the adjoint of the "
                       "splat); smooth = linear read of the grid filtered once with that kernel (about the same, "
                       "cheaper); linear = plain (bi/tri)linear texture read (gains energy at rest)"),
    [AD_PIC_INTERVAL] = PF("pic_interval", 0, 0, 10, "s",
                           "0: r is the PIC fraction per step (Guay). > 0: r per pic_interval of simulated time, "
                           "the step uses 1 - (1 - r)^(dt / pic_interval) (less damping at small steps, see docs/flip.md)"),
    {0},
};

static const floe_attr_desc advect_attrs[] = {
    FLUID("x", FLOE_VEC3, FLOE_READ | FLOE_WRITE),
    FLUID("v", FLOE_VEC3, FLOE_READ | FLOE_WRITE),
    {0},
};

static const floe_param_desc obstacle_params[] = {
    [OP_SHAPE] = PS("shape", "sphere", "sphere|box|capsule|plane|metaballs", "signed distance shape"),
    [OP_CENTRE] = PV("centre", 0, 0, 0, "m", "centre (plane: a point on it) at t = 0"),
    [OP_RADIUS] = PF("radius", 0.1, 0, 1e3, "m", "sphere and capsule radius"),
    [OP_SIZE] = PV("size", 0.2, 0.2, 0.2, "m", "box edge lengths"),
    [OP_AXIS] = PV("axis", 0.1, 0, 0, "m", "capsule: half segment, the ends are centre +- axis"),
    [OP_NORMAL] = PV("normal", 0, 1, 0, "", "plane normal, pointing into the liquid"),
    [OP_BALLS] = PS("balls", "", NULL, "metaballs: \"x y z r; ...\" offsets from centre and radii (m); 2D: \"x y r; ...\""),
    [OP_BLEND] = PF("blend", 0.02, 0, 10, "m", "metaballs: smooth-union width (0 = plain union)"),
    [OP_VELOCITY] = PV("velocity", 0, 0, 0, "m/s", "constant velocity of the centre (ignored with a path)"),
    [OP_SPIN] = PV("spin", 0, 0, 0, "rad/s", "angular velocity about the centre (2D: z only)"),
    [OP_PATH] = PS("path", "", NULL, "keyframed centre \"t x y z; ...\" (s, m), linear in between, at rest outside"),
    [OP_LOOP] = PB("loop", 0, "repeat the path with the period of its last key time"),
    {0},
};

static const floe_param_desc ground_params[] = {
    [GR_DEPTH] = PF("depth", 0.1, 1e-6, 1e3, "m", "water depth h0 that the rest density stands for: h = h0 rho / rho0"),
    [GR_BASE] = PF("base", 0, -1e3, 1e3, "m", "ground height b at the origin"),
    [GR_SLOPE] = PV("slope", 0, 0, 0, "", "ground gradient (db/dx, db/dy)"),
    [GR_BUMPS] = PS("bumps", "", NULL, "\"x y height radius; ...\": bumps height (1 - d^2/radius^2)^2 (m)"),
    {0},
};

static const floe_stage_desc stages[] = {
    { FLOE_SIZED(floe_stage_desc), .serial = 1, .name = "obstacle",
      .doc = "register a signed-distance obstacle (sphere, box, capsule, plane, metaballs) for this step; before flip.grid",
      .run = flip_st_obstacle, .run_cl = flip_st_obstacle, .params = obstacle_params },
    { FLOE_SIZED(floe_stage_desc), .serial = 1, .name = "ground",
      .doc = "shallow water (2D): ground height b(x), adds rho0 b / depth to the grid density; before flip.grid",
      .run = flip_st_ground, .run_cl = flip_st_ground, .params = ground_params },
    { FLOE_SIZED(floe_stage_desc), .serial = 1, .name = "splat",
      .doc = "rasterise every particle's kernel (1 - d^2/r^2)^3 and kernel-weighted velocity onto the grid, once",
      .run = flip_st_splat, .run_cl = flip_cl_splat, .params = splat_params, .attrs = splat_attrs },
    { FLOE_SIZED(floe_stage_desc), .serial = 1, .name = "grid",
      .doc = "grid pass: rho, P = k (rho/rho0)^gamma, u -= dt grad P, gravity, obstacles, walls (normal velocity zeroed)",
      .run = flip_st_grid, .run_cl = flip_cl_grid, .params = grid_params },
    { FLOE_SIZED(floe_stage_desc), .serial = 1, .name = "advect",
      .doc = "PIC/FLIP velocity blend and RK2 positions in the grid velocity, clamped to the domain and out of obstacles",
      .run = flip_st_advect, .run_cl = flip_cl_advect, .params = advect_params, .attrs = advect_attrs },
    {0},
};

FLOE_MODULE_DESC_API(flip, flip_api, .version = "1.0.0",
                     .summary = "Grid-splat PIC/FLIP liquid (Guay 2013): splat once, solve on the grid, no particle "
                                "sorting; SDF obstacles, shallow water",
                     .stages = stages, .init = flip_init, .fini = flip_fini)
