/* Floe module "wcsph": what its two files share. wcsph.c decodes each
 * stage's parameters once into the structs below and runs the C path or
 * hands them to the OpenCL path (wcsph_cl.c), which parses nothing. */
#ifndef FLOE_WCSPH_H
#define FLOE_WCSPH_H

#include <floe/sph.h>

FLOE_MODULE_API_EXTERN; /* one `api` for wcsph.c and wcsph_cl.c (<floe/sph.h>) */

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

/* the OpenCL path (wcsph_cl.c): one launch per set or per pair of sets */
int wcsph_cl_pressure(floe_ctx *ctx, const floe_fluid *f, const wcsph_eos *e);
int wcsph_cl_viscosity(floe_ctx *ctx, const floe_fluid *f, const wcsph_visc *vi);
int wcsph_cl_pressure_force(floe_ctx *ctx, const wcsph_pf *pf);

#endif
