/* Floe module "viscosity": what its two files share. viscosity.c decodes
 * each stage's parameters once into a visc_coef and runs its C path or the
 * OpenCL path (viscosity_cl.c), which parses nothing. */
#ifndef FLOE_VISCOSITY_H
#define FLOE_VISCOSITY_H

#include <floe/sph.h>

FLOE_MODULE_API_EXTERN; /* one `api` for viscosity.c and viscosity_cl.c (<floe/sph.h>) */

/* the pair weight: morris, monaghan (V_j = m_j / rho_j) or kim (m_j / (rho_i + rho_j)) */
enum visc_kind { VK_MORRIS, VK_MONAGHAN, VK_KIM };

/* a_i += cf (fluid sum) + cb_nu rho0_i / rho_i (boundary sum), eps = eps_f H^2 */
typedef struct visc_coef {
    int kind;
    float cf;
    double cb_nu; /* 0: the boundary rows are not walked */
    float eps;
    int wall_ext; /* morris: wall velocity 2 v_w - v~_b (Adami 2012), v~_b from the fluid */
} visc_coef;

/* the OpenCL path (viscosity_cl.c) */
int visc_cl(floe_ctx *ctx, const visc_coef *c);
/* ... of morris with wall_ext (walls_cl.c) */
int visc_cl_wall_ext(floe_ctx *ctx, const visc_coef *c);

#endif
