/* Floe module "viscosity": the OpenCL path of its stages (run_cl), kernels
 * in kernels/viscosity/viscosity.cl. viscosity.c decodes the parameters
 * into a visc_coef (the same for both paths; the dt limit is proposed
 * there) and calls visc_cl instead of its C loops. Each launch sums over
 * one fluid target set and one boundary target set (launches = max(fluid
 * sets, boundary sets) per fluid set; one for the usual scene) and adds to
 * a. No host round trip: everything the kernels read is an attribute on
 * the device. Needs no OpenCL header. */
#include "viscosity.h"

#include <floe/cl_module.h>

FLOE_MODULE_API_EXTERN;

#define ARG(v) FLOE_CL_ARG(v)

int visc_cl(floe_ctx *ctx, const visc_coef *c)
{
    static const char *const kernels[] = {[VK_MORRIS] = "visc_morris", [VK_MONAGHAN] = "visc_monaghan",
                                          [VK_KIM] = "visc_kim"};
    void *k = api->cl_kernel(ctx, "viscosity", "viscosity.cl", kernels[c->kind]);
    if (!k)
        return FLOE_ERR;
    float kc[4], per[4];
    floe_cl_consts(api->sim(ctx), kc, per);
    floe_cl_set f[FLOE_MAX_SETS], b[FLOE_MAX_SETS];
    int nf, nb = 0, st;
    if ((st = floe_cl_sets(api, ctx, FLOE_SET_FLUID, f, &nf)))
        return st;
    if (c->cb_nu != 0.0 && (st = floe_cl_sets(api, ctx, FLOE_SET_BOUNDARY, b, &nb)))
        return st;
    const int launches = nf > nb ? nf : nb;
    float eps = c->eps, cf = c->cf;
    for (int s = 0; s < nf; s++) {
        st = FLOE_OK;
        void *x = floe_cl_attr(api, ctx, &f[s], "x", FLOE_VEC3, FLOE_READ, &st);
        void *v = floe_cl_attr(api, ctx, &f[s], "v", FLOE_VEC3, FLOE_READ, &st);
        void *rho = floe_cl_attr(api, ctx, &f[s], "rho", FLOE_F32, FLOE_READ, &st);
        void *acc = floe_cl_attr(api, ctx, &f[s], "a", FLOE_VEC3, FLOE_READ | FLOE_WRITE, &st);
        if (st)
            return st;
        const uint32_t n = f[s].info.n;
        float cb = (float)(c->cb_nu * f[s].info.rest_density);
        for (int l = 0; l < launches; l++) {
            floe_cl_row rf, rb;
            if ((st = floe_cl_rows(api, ctx, &f[s], f, nf, b, nb, l, FLOE_CL_ROW_RHO | FLOE_CL_ROW_V, &rf, &rb)))
                return st;
            const double bytes = 52.0 * n + 4.0 * (rf.total + rb.total);
            floe_cl_arg a[] = {ARG(n),     ARG(x),      ARG(v),      ARG(rho),    ARG(acc),     ARG(kc),
                               ARG(per),   ARG(eps),    ARG(cf),     ARG(cb),     ARG(rf.has),  ARG(rb.has),
                               ARG(rf.x),  ARG(rf.w),   ARG(rf.rho), ARG(rf.v),   ARG(rf.cnt),  ARG(rf.idx),
                               ARG(rf.pitch), ARG(rb.x), ARG(rb.w),  ARG(rb.cnt), ARG(rb.idx),  ARG(rb.pitch)};
            if ((st = api->cl_run(ctx, k, n, (int)(sizeof a / sizeof *a), a, bytes)))
                return st;
        }
    }
    return FLOE_OK;
}
