/* Floe module "sph": what its two files share. sph.c decodes each stage's
 * parameters once and runs the C path or hands the decoded values to the
 * OpenCL path (sph_cl.c), which parses nothing. */
#ifndef FLOE_SPH_MODULE_H
#define FLOE_SPH_MODULE_H

#include <floe/sph.h>

FLOE_MODULE_API_EXTERN; /* one `api` for sph.c and sph_cl.c (<floe/sph.h>) */

/* sph.xsph of one fluid set: a_i += cf sum_j (...) + cb sum_b (...) */
typedef struct sph_xsph {
    float cf; /* 2 alpha / dt sigma */
    float cb; /* 2 boundary_alpha / dt sigma rho0_i: boundary mass rho0_i V_b */
} sph_xsph;

/* the OpenCL path (sph_cl.c): one launch per set or per pair of sets */
int sph_cl_density(floe_ctx *ctx);
int sph_cl_xsph(floe_ctx *ctx, const floe_fluid *f, const sph_xsph *x);

#endif
