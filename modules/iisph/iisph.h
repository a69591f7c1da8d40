/* Floe module "iisph": what its two files share. iisph.c decodes the
 * parameters of iisph.solve once into iisph_cfg and runs the C solve or
 * hands them to the OpenCL path (iisph_cl.c), which parses nothing. */
#ifndef FLOE_IISPH_H
#define FLOE_IISPH_H

#include <floe/sph.h>

#include <math.h>

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
    float trapped; /* trapped_floor: |a_ii| at least this times a lattice particle's (0 = off) */
} iisph_cfg;

/* trapped_floor's bound on |a_ii|: c->trapped times |a_ii| of a particle
 * inside a rest lattice of the sim's spacing d (G_i = 0, every neighbour
 * of mass rho0 d^dim): dt^2 / rho0^2 m^2 sum_k |grad W(x_k)|^2 over the
 * lattice's points x_k within the support (2D or 3D); 0 when off. A
 * particle caught between a body and a wall has its own pressure pushing
 * it from both sides: its a_ii falls to a few per cent of the lattice's,
 * and its Jacobi steps rho0 r_i / a_ii grow as much (docs/iisph.md,
 * "Trapped particles"). For both paths (iisph.c, iisph_cl.c). */
static inline float iisph_aii_floor(const iisph_cfg *c, const floe_sim_info *si, float rho0, float dt)
{
    if (!(c->trapped > 0.0f))
        return 0.0f;
    const floe_kconst kc = floe_kconst_make(si);
    const float d = si->spacing;
    const int n = (int)(kc.H / d) + 1, nz = kc.dim == 3 ? n : 0;
    double s = 0.0;
    for (int a = -n; a <= n; a++)
        for (int b = -n; b <= n; b++)
            for (int k = -nz; k <= nz; k++) {
                const float r2 = d * d * (float)(a * a + b * b + k * k);
                if (r2 > 0.0f && r2 < kc.H * kc.H) {
                    const double g = floe_kdw(&kc, r2);
                    s += g * g * r2;
                }
            }
    const double m = rho0 * (kc.dim == 3 ? (double)d * d * d : (double)d * d);
    return (float)(c->trapped * (double)dt * dt / ((double)rho0 * rho0) * m * m * s);
}

/* Which particles trapped_floor bounds: those whose boundary neighbours
 * push them from opposite sides. q = |sum_b psi_b grad W_ib| / sum_b psi_b
 * |grad W_ib| is 1 by one flat wall, 0.71 in a 2D tank's corner, 0.58 in a
 * 3D tank's corner (three walls) and near 0 between a body and a parallel
 * wall (sin(a / 2) in a wedge of angle a). The bound applies in full at
 * q <= IISPH_TRAP_FULL, not at all from IISPH_TRAP_NONE on, linearly
 * between; a particle with no boundary neighbour is not trapped. gb2 =
 * |sum_b psi_b grad W_ib|^2, sb = sum_b psi_b |grad W_ib| (the same psi_b,
 * any common factor). kernels/iisph/iisph.cl's trap_weight is the same. */
#define IISPH_TRAP_FULL 0.25f
#define IISPH_TRAP_NONE 0.5f
static inline float iisph_trap_weight(float gb2, float sb)
{
    if (!(sb > 0.0f))
        return 0.0f;
    const float q = sqrtf(gb2) / sb, t = (IISPH_TRAP_NONE - q) / (IISPH_TRAP_NONE - IISPH_TRAP_FULL);
    return t < 0.0f ? 0.0f : t > 1.0f ? 1.0f : t;
}

/* gradient_correction: gamma_i is clamped to [IISPH_GAMMA_LO, 1 / IISPH_GAMMA_LO] */
#define IISPH_GAMMA_LO 0.9f

/* the OpenCL path (iisph_cl.c); *cl is its device state, created on demand.
 * IISPH_CL_USE_C: the scene needs the C solve (several non-empty fluid sets) */
#define IISPH_CL_USE_C 1
struct iisph_cl;
int iisph_cl_solve(floe_ctx *ctx, const iisph_cfg *c, struct iisph_cl **cl);
void iisph_cl_free(struct iisph_cl *cl);

#endif
