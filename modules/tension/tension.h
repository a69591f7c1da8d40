/* Floe module "tension": what its two files share. tension.c decodes each
 * stage's parameters once into the structs below and runs the C path or
 * hands them to the OpenCL path (tension_cl.c), which parses nothing. */
#ifndef FLOE_TENSION_H
#define FLOE_TENSION_H

#include <floe/sph.h>

FLOE_MODULE_API_EXTERN; /* one `api` for tension.c and tension_cl.c (<floe/sph.h>) */

/* tension.he: a_i += coef / rho_i sum_j V_j (g_i + g_j) grad W_ij with
 * coef = kappa / 4 (the force pass runs when force is set, kappa != 0);
 * wall = colour of boundary particles in eq. 33/34 */
typedef struct ten_he {
    float coef, wall;
    int force;
} ten_he;

/* tension.air_pressure: a_i += coef / rho_i (sum_j V_j grad W_ij + wall sum_b V_b grad W_ib), coef = p_atm */
typedef struct ten_air {
    float coef, wall;
} ten_air;

/* tension.akinci: gamma, beta as given, coh and cA the constants of
 * Akinci's cohesion spline C and adhesion kernel A, curv the factor of the
 * curvature term; adhesion: beta != 0 (the boundary rows are walked) */
typedef struct ten_akinci {
    double gamma, beta, cA;
    float coh, curv;
    int adhesion;
} ten_akinci;

/* the factors of fluid set rest density rho0: coef = gamma rho0 (K_ij = 2
 * rho0 / (rho_i + rho_j)), coef2 = beta rho0 A's constant (Psi_b = rho0 V_b) */
static inline void ten_akinci_coef(const ten_akinci *p, double rho0, float *coef, float *coef2)
{
    *coef = (float)(p->gamma * rho0);
    *coef2 = (float)(p->beta * rho0 * p->cA);
}

/* the OpenCL path (tension_cl.c) */
int ten_cl_he(floe_ctx *ctx, const ten_he *p);
int ten_cl_air(floe_ctx *ctx, const ten_air *p);
int ten_cl_akinci(floe_ctx *ctx, const ten_akinci *p);

#endif
