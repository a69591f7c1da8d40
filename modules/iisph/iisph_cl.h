/* Floe module "iisph": the OpenCL path (iisph_cl.c), called from iisph.c. */
#ifndef FLOE_IISPH_CL_H
#define FLOE_IISPH_CL_H

#include <floe/module.h>

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
};

extern const floe_api *iisph_cl_api; /* set by the entry point in iisph.c */

struct iisph_cl;
int iisph_cl_density(const floe_stage_call *call);
/* call->state is the module state; *cl its device part, created on demand */
int iisph_cl_solve(const floe_stage_call *call, struct iisph_cl **cl);
void iisph_cl_free(struct iisph_cl *cl);

#endif
