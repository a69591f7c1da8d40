/* Floe module "iisph": the OpenCL path (iisph_cl.c), called from iisph.c. */
#ifndef FLOE_IISPH_CL_H
#define FLOE_IISPH_CL_H

#include <floe/module.h>

#include <stdint.h>

/* returned by iisph_cl_solve when the scene needs the C path (several
 * non-empty fluid sets): the caller runs st_solve instead */
#define IISPH_CL_USE_C 1

/* the parameter indices of iisph.solve (the order of solve_params) */
enum {
    SO_OMEGA,
    SO_TOLERANCE,
    SO_MIN_IT,
    SO_MAX_IT,
    SO_WARM,
    SO_BOUNDARY,
    SO_BVISC,
    SO_DAMPING,
    SO_FORCE_COURANT,
    SO_CORR_SPEED,
    SO_CHEB,
    SO_CHEB_DELAY,
    SO_GRAD_CORR,
};

/* gradient_correction: gamma_i is clamped to [IISPH_GAMMA_LO, 1 / IISPH_GAMMA_LO] */
#define IISPH_GAMMA_LO 0.9f

/* Chebyshev semi-iterative acceleration (Wang 2015) of the Jacobi
 * iteration: the weight of iteration k (1-based), given the previous one;
 * 1 (plain Jacobi) before `delay` or with rho = 0, om_delay = 2 / (2 - rho^2),
 * then om_k+1 = 4 / (4 - rho^2 om_k). The iterate is then
 * p_prev + om (Jacobi(p) - p_prev). Shared so that both paths use the same floats. */
static inline float iisph_cheb_weight(float rho, int64_t k, int64_t delay, float prev)
{
    if (!(rho > 0.0f) || k < delay)
        return 1.0f;
    return k == delay ? 2.0f / (2.0f - rho * rho) : 4.0f / (4.0f - rho * rho * prev);
}

extern const floe_api *iisph_cl_api; /* set by the entry point in iisph.c */

struct iisph_cl;
int iisph_cl_density(const floe_stage_call *call);
/* call->state is the module state; *cl its device part, created on demand */
int iisph_cl_solve(const floe_stage_call *call, struct iisph_cl **cl);
void iisph_cl_free(struct iisph_cl *cl);

#endif
