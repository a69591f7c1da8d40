/* Floe module "iisph": what its two files share. iisph.c decodes the
 * parameters of iisph.solve once into iisph_cfg and runs the C solve or
 * hands them to the OpenCL path (iisph_cl.c), which parses nothing. */
#ifndef FLOE_IISPH_H
#define FLOE_IISPH_H

#include <floe/sph.h>

FLOE_MODULE_API_EXTERN; /* one `api` for iisph.c and iisph_cl.c (<floe/sph.h>) */

/* iisph.solve, decoded (solve_params in iisph.c has the meaning of each) */
typedef struct iisph_cfg {
    float omega, warm;
    double tol;
    int64_t min_it, max_it;
    float beta;    /* boundary_pressure: 2 (extrapolate, mirror) or 1 (akinci) */
    int hyd;       /* extrapolate: the hydrostatic part of the wall pressure */
    float visc_c;  /* 2 (dim + 2) boundary_viscosity; 0 = none */
    float damping; /* 1/s */
    double force_courant, corr_speed;
    float cheb_rho; /* Chebyshev: estimate of the spectral radius, 0 = off */
    int64_t cheb_delay;
    int corr; /* gradient_correction */
} iisph_cfg;

/* gradient_correction: gamma_i is clamped to [IISPH_GAMMA_LO, 1 / IISPH_GAMMA_LO] */
#define IISPH_GAMMA_LO 0.9f

/* the OpenCL path (iisph_cl.c); *cl is its device state, created on demand.
 * IISPH_CL_USE_C: the scene needs the C solve (several non-empty fluid sets) */
#define IISPH_CL_USE_C 1
struct iisph_cl;
int iisph_cl_solve(floe_ctx *ctx, const iisph_cfg *c, struct iisph_cl **cl);
void iisph_cl_free(struct iisph_cl *cl);

#endif
