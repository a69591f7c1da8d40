/* The freezing module: water that turns to ice on cold solids (Kim 2020,
 * sec. 3.2, Algorithm 1) and a heat-conduction model to compare with it.
 * docs/freezing.md has the equations as implemented.
 *
 *   film.c     eq. 25: the virtual water film Gamma of solid and ice particles
 *              eqs. 26-30: the fluid's anisotropic kernels G_j and the growth
 *              direction gv of solid and ice particles
 *   phase.c    eqs. 31-32: freezing coefficient, nucleation energy, the phase
 *              change (fluid particles move to the ice set)
 *   thermal.c  Cleary & Monaghan heat conduction with an enthalpy method
 *   gather.c   the particles of the stages: fluid sets and "frost" (cold
 *              solids and ice) in contiguous arrays, and moving frozen
 *              particles from the fluid sets to the ice set
 *   cells.c    the module's cell lists (queries from solid and ice particles)
 *   carry.c    ice attached to moving bodies (the rigid module's) moves with them
 *   picture.c  a PNG a frame of water, ice and solids (libpng)
 *
 * Ice is a boundary set the scene makes (sim:boundary_set), so every solver
 * sees it as a wall: a boundary particle with its own volume m / rho0 (the
 * core leaves an every_frame set's volumes to its module), no velocity. A frozen particle leaves its fluid set (compacted)
 * and is appended to the ice set with its position, mass and id. */
#ifndef FREEZE_H
#define FREEZE_H

#include <floe/sph.h>

#include "cells.h"

#include <stdint.h>

FLOE_MODULE_API_EXTERN;

/* ice_kind of an ice particle: what it froze against */
enum { ICE_GLAZE = 1, ICE_ICICLE = 2, ICE_THERMAL = 3 };

/* the particles of one stage call, gathered from the sets */
typedef struct fz_parts {
    /* fluid: every fluid set, concatenated */
    uint32_t nf;
    int nfs;
    floe_set fset[FLOE_MAX_SETS];
    uint32_t fn[FLOE_MAX_SETS], foff[FLOE_MAX_SETS + 1];
    float frho[FLOE_MAX_SETS]; /* rest densities */
    float *xf, *vf, *mf;     /* copies, 3 / 3 / 1 per particle */
    /* frost: the cold solid sets, then the ice set, concatenated */
    uint32_t nb, nice;       /* all of them; those of the ice set (last) */
    int nbs;
    floe_set bset[FLOE_MAX_SETS + 1];
    uint32_t bn[FLOE_MAX_SETS + 1], boff[FLOE_MAX_SETS + 2];
    float *xb, *Vb;          /* copies */
    floe_set ice;
    size_t capf, capb;
} fz_parts;

typedef struct fz_state {
    fz_parts p;
    cgrid gf, gb;            /* cells of the fluid and of the frost */
    /* the fluid's kernels (eqs. 28-30), valid for step g_step and nf particles */
    float *G;                /* 9 per fluid particle; isotropic where near == 0 */
    uint8_t *near;           /* fluid particle within H of frost */
    size_t capG;
    uint64_t g_step;
    uint32_t g_nf;
    int g_aniso, g_valid;
    /* per-thread query buffers */
    uint32_t **qbuf;
    uint32_t *qcap;
    int nthreads;
    /* OpenCL: freeze.direction ran on the device in step cl_g_step */
    uint64_t cl_g_step;
    int cl_g_valid;
    /* freeze.film ran in step film_step (film_ok), Gamma_max */
    uint64_t film_step;
    int film_ok;
    float gamma_max;
    /* thermal: initial enthalpies set */
    int thermal_started;
    /* carry: the ice set marked moving; the bodies' poses of the last call */
    int carry_started;
    void *carry_pose;
    uint32_t carry_nb;
    uint32_t carry_cl_n, carry_cl_nb; /* OpenCL: the bodies' set size and body count read */
} fz_state;

/* An attribute's host data for writing (floe_need's error when absent) */
static inline void *fz_attr(floe_ctx *ctx, floe_set set, const char *set_name, const char *attr, floe_type type,
                            int *status)
{
    return (void *)(uintptr_t)floe_need(api, ctx, set, set_name, attr, type, status);
}

/* ---- gather.c ---- */
/* Fill s->p: fluid sets, the cold sets (`cold`: comma list of boundary set
 * names, "" = every boundary set but the ice set) and the ice set `ice`.
 * An unknown name, a fluid set named as cold or an ice set that is not a
 * boundary set is an error naming it. */
int fz_gather(floe_ctx *ctx, fz_state *s, const char *cold, const char *ice);
/* fz_gather's sets and counts only (no copies, no cell lists) */
int fz_resolve(floe_ctx *ctx, fz_state *s, const char *cold, const char *ice);
/* the host copies of the resolved fluid sets' x, v, m (p->xf, vf, mf) */
int fz_copy_fluid(floe_ctx *ctx, fz_state *s);
/* The query buffer of the calling thread; grows it to at least n. */
uint32_t *fz_qbuf(fz_state *s, uint32_t n);
/* Query the frost (gb) or fluid (gf) grid into the thread's buffer: count in *m */
const uint32_t *fz_query(fz_state *s, const cgrid *g, const float p[3], float r, uint32_t self, uint32_t *m);
/* Move the fluid particles with freeze[j] != 0 (concatenated index) to the
 * ice set, in index order; dir (3 per fluid particle, may be NULL), kind
 * (per fluid particle) and h (enthalpy, may be NULL) go to the ice's
 * ice_dir / ice_kind / h. Returns the number moved, or < 0 on error. */
long fz_move_to_ice(floe_ctx *ctx, fz_state *s, const uint8_t *freeze, const float *dir, const int32_t *kind,
                    const float *h);

/* parameter indices, in descriptor order (freeze.c) */
enum { FILM_ALPHA, FILM_COLD, FILM_ICE };
enum { DIR_ANISO, DIR_KR, DIR_NMIN };
enum { TR_GLAZE, TR_ICICLE, TR_FR, TR_MIN_SPEED, TR_MIN_FROUDE };
enum { FR_RESCALED, FR_CLAMPED, FR_NONE };
int fz_fr_mode(const char *s);
/* the slowest flow that gives a growth direction: max(min_speed,
 * min_froude sqrt(|g| d)) (phase.c) */
float fz_min_flow(const floe_stage_call *c);

/* ---- freeze_cl.c: the OpenCL path (kernels/freeze/freeze.cl) ---- */
int fz_film_cl(const floe_stage_call *c);
int fz_direction_cl(const floe_stage_call *c);
int fz_transition_cl(const floe_stage_call *c);

/* ---- film.c ---- */
/* the kernels G_j of the fluid particles near frost (computed once per step) */
int fz_kernels(floe_ctx *ctx, fz_state *s, int aniso, float kr, int n_min);
/* W_A(r, G) of eq. 27: det(G) P(|G r|), P the cubic spline of unit support */
float fz_wa(const float G[9], const float r[3], int dim);
int fz_film(const floe_stage_call *c);
int fz_direction(const floe_stage_call *c);

/* ---- phase.c ---- */
int fz_transition(const floe_stage_call *c);

/* ---- thermal.c ---- */
int fz_thermal(const floe_stage_call *c);

/* ---- carry.c ---- */
enum { CA_ICE, CA_BODIES };
typedef struct fz_pose {
    double c[3], R[3][3]; /* x = c + R r0 */
} fz_pose;
int fz_carry(const floe_stage_call *c);
int fz_carry_cl(const floe_stage_call *c); /* carry_cl.c */
int fz_carry_sets(const floe_stage_call *c, floe_set *ice, floe_set_info *ii, floe_set *bs, floe_set_info *bi);
/* body k's pose from its particles: count and sums of r0 and x (sum[0..6]),
 * S = sum (r0 - r0m)(r0 - r0m)^T, M = sum (x - xm)(r0 - r0m)^T */
int fz_pose_solve(floe_ctx *ctx, const char *set, uint32_t k, const double sum[7], const double S[3][3],
                  const double M[3][3], fz_pose *P);

/* ---- picture.c ---- */
int fz_picture(const floe_stage_call *c);

#endif
