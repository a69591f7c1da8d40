/* Floe module "viscosity": the OpenCL path of its stages (run_cl), kernels
 * in kernels/viscosity/viscosity.cl. viscosity.c decodes the parameters
 * into a visc_coef (the same for both paths; the dt limit is proposed
 * there) and calls visc_cl instead of its C loops; <floe/cl_module.h>
 * floe_cl_force launches a kernel once per fluid target set and boundary
 * target set (one launch for the usual scene), adding to a. No host round
 * trip: everything the kernels read is an attribute on the device. Needs
 * no OpenCL header. */
#include "viscosity.h"

#include <floe/cl_module.h>

FLOE_MODULE_API_EXTERN;

int visc_cl(floe_ctx *ctx, const visc_coef *c)
{
    static const char *const kernels[] = {[VK_MORRIS] = "visc_morris", [VK_MONAGHAN] = "visc_monaghan",
                                          [VK_KIM] = "visc_kim"};
    if (c->kind == VK_MORRIS && c->wall_ext && c->cb_nu != 0.0)
        return visc_cl_wall_ext(ctx, c);
    void *k = api->cl_kernel(ctx, "viscosity", "viscosity.cl", kernels[c->kind]);
    if (!k)
        return FLOE_ERR;
    floe_cl_set f[FLOE_MAX_SETS];
    int nf, st;
    if ((st = floe_cl_sets(api, ctx, FLOE_SET_FLUID, f, &nf)))
        return st;
    for (int s = 0; s < nf; s++) /* cb with the boundary mass rho0_i V_b */
        if ((st = floe_cl_force(api, ctx, k, &f[s], c->cb_nu != 0.0, c->eps, c->cf,
                                (float)(c->cb_nu * f[s].info.rest_density))))
            return st;
    return FLOE_OK;
}
