/* Which backend a context runs on (device.h): none (the host only, "cpu"),
 * or the OpenCL one (core/src/opencl/), chosen by name at floe_ctx_create.
 * A Floe built without the OpenCL headers has no device backend at all. */
#include "decomp_cl.h"
#include "device.h"

#ifdef FLOE_HAVE_OPENCL
#include "opencl/opencl.h"
#endif

#include <stdio.h>
#include <string.h>

int backend_open(floe_ctx *ctx, const char *backend, const char *device, char *err, size_t errlen)
{
    if (!backend || !strcmp(backend, "cpu"))
        return FLOE_OK;
    int autosel = !strcmp(backend, "auto");
    if (!autosel && strcmp(backend, "opencl")) {
        snprintf(err, errlen, "floe.sim: backend must be cpu, opencl or auto (got '%s')", backend);
        return FLOE_ERR_ARG;
    }
    char msg[512] = "this Floe was built without the OpenCL headers";
#ifdef FLOE_HAVE_OPENCL
    /* MPI: without --device each rank takes the device of its local rank */
    const int local = dd_local_rank();
    char pick[32];
    if (local >= 0 && (!device || !device[0])) {
        snprintf(pick, sizeof pick, "local:%d", local);
        device = pick;
    }
    ctx->dev = floe_opencl_open(device, msg, sizeof msg);
    if (ctx->dev) {
        int rank = 0, ranks = floe_mpi_size(&rank);
        if (ranks > 1)
            ctx_log(ctx, FLOE_LOG_INFO, "mpi: rank %d of %d (local rank %d) uses %s", rank, ranks, local,
                    ctx->dev->ops->describe(ctx));
        else
            ctx_log(ctx, FLOE_LOG_INFO, "backend %s", ctx->dev->ops->describe(ctx));
        return FLOE_OK;
    }
#else
    (void)device;
#endif
    if (autosel) {
        ctx_log(ctx, FLOE_LOG_INFO, "backend auto: %s; running on the cpu", msg);
        return FLOE_OK;
    }
    snprintf(err, errlen, "floe.sim: backend 'opencl': %s", msg);
    return FLOE_ERR_ARG;
}

void backend_close(floe_ctx *ctx)
{
    if (ctx->dev)
        ctx->dev->ops->destroy(ctx);
}

void *backend_sym(const char *name)
{
#ifdef FLOE_HAVE_OPENCL
    return floe_opencl_sym(name);
#else
    (void)name;
    return NULL;
#endif
}

int floe_cl_devices(void (*fn)(const char *line, void *u), void *u)
{
#ifdef FLOE_HAVE_OPENCL
    return floe_opencl_devices(fn, u);
#else
    fn("OpenCL: this Floe was built without the OpenCL headers (opencl-c-headers)", u);
    return -1;
#endif
}

const char *floe_ctx_backend_name(floe_ctx *ctx) { return ctx->dev ? ctx->dev->ops->describe(ctx) : "cpu"; }
int floe_ctx_backend(floe_ctx *ctx) { return ctx->dev ? ctx->dev->ops->kind : FLOE_BACKEND_CPU; }
