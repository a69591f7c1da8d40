/* Floe module "wcsph": what its two files share. wcsph.c decodes each
 * stage's parameters once into the structs below and runs the C path or
 * hands them to the OpenCL path (wcsph_cl.c), which parses nothing. */
#ifndef FLOE_WCSPH_H
#define FLOE_WCSPH_H

#include <floe/sph.h>
#include <floe/sph_pack.h>
#include <floe/wall_sums.h>

FLOE_MODULE_API_EXTERN; /* one `api` for wcsph.c, continuity.c and wcsph_cl.c (<floe/sph.h>) */

/* The module state, one per context, shared by its stages. */
typedef struct wcsph_state {
    float *prho2; /* p_i / rho_i^2 of every fluid set, concatenated */
    size_t cap;
    floe_records rec; /* rows_avx2.h: A = (x, y, z, m), B = (P, rho, vx, vy) */
    /* the speed of sound of each fluid set, as the last pressure stage's
     * equation of state made it: the one place it is set (viscosity and
     * continuity read it) */
    floe_set sound_set[FLOE_MAX_SETS];
    double sound[FLOE_MAX_SETS];
    int nsound;
    int sound_param_logged; /* the deprecation of viscosity's speed_of_sound was logged */
    /* wcsph.continuity: the renormalised density gradient (3 per particle)
     * and d rho / dt of every fluid set, concatenated; calls made before
     * any wcsph.pressure gave a speed of sound */
    float *grad, *drho;
    size_t grad_cap, drho_cap;
    int calls_without_sound;
    /* the equation of state wcsph.pressure gave the first fluid set
     * (wcsph_eos below; eos_valid once it ran) */
    float eos0_B, eos0_inv_rho0, eos0_gamma, eos0_lo;
    int eos_valid;
    /* pressure_force{walls = "extrapolated"} (walls.c): per boundary
     * particle p_b / rho_b^2, every boundary set end to end, then two sums
     * of the same length */
    float *wall;
    size_t wall_cap;
    floe_walls walls; /* the boundary sets' layout (<floe/wall_sums.h>) */
} wcsph_state;

/* the speed of sound wcsph.pressure gave fluid set `set` (0 when it has
 * not run yet) */
static inline double wcsph_sound_of(const wcsph_state *ws, floe_set set)
{
    for (int k = 0; k < ws->nsound; k++)
        if (ws->sound_set[k].id == set.id)
            return ws->sound[k];
    return 0.0;
}

/* wcsph.pressure: the Tait equation of state of one fluid set,
 * p = B ((rho / rho0)^gamma - 1), clamped at lo; mode 7 or 1: gamma is 7
 * (exact powers) or 1 (linear), 0: powf */
typedef struct wcsph_eos {
    float B, inv_rho0, gamma, lo;
    int32_t mode;
} wcsph_eos;

/* wcsph.viscosity (Monaghan 1992 artificial viscosity) of one fluid set:
 * a_i += cf sum_j (...) + cb sum_b (...), cb with the boundary mass's
 * rho0_i, eps = 0.01 H^2 */
typedef struct wcsph_visc {
    float cf, cb, eps;
    int boundary; /* cb > 0: the boundary rows are walked */
} wcsph_visc;

/* wcsph.pressure_force: cv = 2 xsph / dt sigma, the XSPH factor of the
 * fused pass (0: none) */
typedef struct wcsph_pf {
    float cv;
} wcsph_pf;

/* wcsph.continuity of one fluid set: rho_i += dt (drho_i + dc sum_j ...),
 * dc = delta h c0 the density diffusion's factor (0: none), dim 2 or 3 */
typedef struct wcsph_cont {
    float dt, dc;
    int32_t dim;
} wcsph_cont;

/* Adami et al. 2012's wall pressure of every static boundary set, as V_b
 * p_b / rho_b^2 into ws->wall (walls.c); the slice of one set (NULL: a
 * moving set, mirrored pressure) */
int wcsph_wall_pressure(floe_ctx *ctx, wcsph_state *ws, const floe_kconst *kc, const floe_fluid *f, int nf);
const float *wcsph_wall_of(const wcsph_state *ws, floe_set set);

/* the stage (continuity.c) and its descriptors */
int wcsph_st_continuity(const floe_stage_call *call);
int wcsph_st_continuity_cl(const floe_stage_call *call);
extern const floe_param_desc wcsph_continuity_params[];
extern const floe_attr_desc wcsph_continuity_attrs[];

/* the OpenCL path (wcsph_cl.c): one launch per set or per pair of sets */
int wcsph_cl_pressure(floe_ctx *ctx, const floe_fluid *f, const wcsph_eos *e);
int wcsph_cl_viscosity(floe_ctx *ctx, const floe_fluid *f, const wcsph_visc *vi);
int wcsph_cl_pressure_force(floe_ctx *ctx, const wcsph_pf *pf);
int wcsph_cl_continuity(floe_ctx *ctx, const wcsph_cont *co); /* co: one per fluid set */
/* ... and of pressure_force with Adami's wall pressure (adami) and/or the
 * gradient correction (gc), walls_cl.c */
int wcsph_cl_pressure_force_walls(floe_ctx *ctx, wcsph_state *ws, const wcsph_pf *pf, int adami, int gc);

#endif
