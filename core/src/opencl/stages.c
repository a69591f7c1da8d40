/* OpenCL backend: the core's stages on the device (gravity, symplectic
 * Euler) and the largest speed of the fluid (a reduction, 4 bytes back). */
#include "state.h"

#include <math.h>
#include <string.h>

int cl_gravity(floe_ctx *ctx)
{
    cl_float4 g = {{ctx->info.gravity[0], ctx->info.gravity[1], ctx->info.gravity[2], 0}};
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        if (p->kind != FLOE_SET_FLUID)
            continue;
        cl_mem a = cl_attr_named(ctx, s, "a", FLOE_VEC3, FLOE_WRITE);
        cl_uint n = p->n;
        int rc = a ? LAUNCH(cl_core_kernel(ctx, "core.cl", "gravity"), n, WG, 12.0 * n, ARG(a), ARG(n), ARG(g)) : FLOE_ERR;
        if (rc)
            return rc;
    }
    return FLOE_OK;
}

int cl_integrate(floe_ctx *ctx)
{
    cl_float dt = (float)ctx->info.dt;
    cl_uint per = ctx->info.periodic;
    cl_float4 lo = {{ctx->info.domain_min[0], ctx->info.domain_min[1], ctx->info.domain_min[2], 0}};
    cl_float4 L = {{ctx->info.period[0], ctx->info.period[1], ctx->info.period[2], 0}};
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        if (p->kind != FLOE_SET_FLUID)
            continue;
        cl_mem a = cl_attr_named(ctx, s, "a", FLOE_VEC3, FLOE_READ);
        cl_mem v = cl_attr_named(ctx, s, "v", FLOE_VEC3, FLOE_READ | FLOE_WRITE);
        cl_mem x = cl_attr_named(ctx, s, "x", FLOE_VEC3, FLOE_READ | FLOE_WRITE);
        cl_uint n = p->n;
        int rc = a && v && x ? LAUNCH(cl_core_kernel(ctx, "core.cl", "integrate"), n, WG, 60.0 * n, ARG(a), ARG(v), ARG(x),
                                      ARG(n), ARG(dt), ARG(per), ARG(lo), ARG(L))
                             : FLOE_ERR;
        if (rc)
            return rc;
        p->sorted_valid = 0;
        CL->sets[s].sorted_valid = 0;
    }
    ctx->nb_valid = 0;
    CL->lists_valid = 0;
    CL->lists_lazy = 0;
    return FLOE_OK;
}

double cl_max_speed(floe_ctx *ctx)
{
    if (!CL->speed && !(CL->speed = cl_mk(ctx, 4)))
        return 0;
    cl_uint zero = 0, out = 0;
    F->clEnqueueFillBuffer(CL->q, CL->speed, &zero, 4, 0, 4, 0, NULL, NULL);
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        if (p->kind != FLOE_SET_FLUID || p->n == 0)
            continue;
        cl_mem v = cl_attr_named(ctx, s, "v", FLOE_VEC3, FLOE_READ);
        cl_uint n = p->n;
        if (!v || LAUNCH(cl_core_kernel(ctx, "core.cl", "max_speed2"), n, WG, 12.0 * n, ARG(v), ARG(n), ARG(CL->speed)))
            return 0;
    }
    F->clEnqueueReadBuffer(CL->q, CL->speed, CL_TRUE, 0, 4, &out, 0, NULL, NULL);
    float v2;
    memcpy(&v2, &out, 4);
    return sqrt((double)v2);
}
