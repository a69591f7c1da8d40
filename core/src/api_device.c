/* The floe_api entries of ABI 1.1 (module.h): a module's device path goes
 * through the context's backend (device.h). On the host-only path the
 * getters answer NULL and the calls fail with a message. */
#include "device.h"

#include <string.h>

#define NOT_ACTIVE "the OpenCL backend is not active (floe.sim{ backend = \"opencl\" })"

int api_backend(floe_ctx *ctx) { return ctx->dev ? ctx->dev->ops->kind : FLOE_BACKEND_CPU; }
void *api_cl_context(floe_ctx *ctx) { return ctx->dev ? ctx->dev->ops->context(ctx) : NULL; }
void *api_cl_queue(floe_ctx *ctx) { return ctx->dev ? ctx->dev->ops->queue(ctx) : NULL; }

void *api_cl_program(floe_ctx *ctx, const char *module, const char *file)
{
    if (!module || !file)
        return NULL;
    if (!ctx->dev) {
        ctx_fail(ctx, FLOE_ERR, NOT_ACTIVE);
        return NULL;
    }
    return ctx->dev->ops->program(ctx, module, file);
}

void *api_cl_kernel(floe_ctx *ctx, const char *module, const char *file, const char *kernel)
{
    if (!module || !file || !kernel)
        return NULL;
    if (!ctx->dev) {
        ctx_fail(ctx, FLOE_ERR, NOT_ACTIVE);
        return NULL;
    }
    return ctx->dev->ops->kernel(ctx, module, file, kernel);
}

void *api_cl_attr(floe_ctx *ctx, floe_set set, const char *name, floe_type type, unsigned access)
{
    pset *p = ctx_set(ctx, set);
    if (!ctx->dev || !p || !name)
        return NULL;
    attr *at = pset_attr(p, name);
    if (!at || at->type != type)
        return NULL;
    return ctx->dev->ops->attr(ctx, p, at, access);
}

int api_cl_neighbours(floe_ctx *ctx, floe_set query, floe_set target, floe_cl_nlist *out)
{
    pset *q = ctx_set(ctx, query), *t = ctx_set(ctx, target);
    if (!ctx->dev)
        return ctx_fail(ctx, FLOE_ERR, "the OpenCL backend is not active");
    if (!q || !t || q->kind != FLOE_SET_FLUID || !out)
        return ctx_fail(ctx, FLOE_ERR_ARG, "cl_neighbours: invalid sets (the query must be a fluid set)");
    return ctx->dev->ops->lists(ctx, q, t, out);
}

void *api_cl_scratch(floe_ctx *ctx, const char *name, size_t bytes)
{
    return ctx->dev ? ctx->dev->ops->scratch(ctx, name, bytes) : NULL;
}

int api_cl_run(floe_ctx *ctx, void *kernel, size_t n, int nargs, const floe_cl_arg *args, double bytes)
{
    if (!ctx->dev)
        return ctx_fail(ctx, FLOE_ERR, "the OpenCL backend is not active");
    return ctx->dev->ops->launch(ctx, kernel, n, nargs, args, bytes);
}

void *api_cl_fn(const char *name) { return backend_sym(name); }

int api_cl_scan(floe_ctx *ctx, void *buf, uint32_t n)
{
    if (!ctx->dev)
        return ctx_fail(ctx, FLOE_ERR, NOT_ACTIVE);
    if (!buf)
        return ctx_fail(ctx, FLOE_ERR_ARG, "cl_scan: no buffer");
    return ctx->dev->ops->scan(ctx, buf, n);
}

int api_cl_sort(floe_ctx *ctx, void *keys, void *vals, uint32_t n, int bits)
{
    if (!ctx->dev)
        return ctx_fail(ctx, FLOE_ERR, NOT_ACTIVE);
    if (bits < 0 || bits > 64)
        return ctx_fail(ctx, FLOE_ERR_ARG, "cl_sort: %d key bits (0 to 64)", bits);
    if (n && (!keys || !vals))
        return ctx_fail(ctx, FLOE_ERR_ARG, "cl_sort: no buffer");
    return ctx->dev->ops->sort(ctx, keys, vals, n, bits);
}

int api_cl_cells(floe_ctx *ctx, floe_set set, floe_cl_cells *out)
{
    pset *p = ctx_set(ctx, set);
    if (!ctx->dev)
        return ctx_fail(ctx, FLOE_ERR, NOT_ACTIVE);
    if (!p || !out)
        return ctx_fail(ctx, FLOE_ERR_ARG, "cl_cells: invalid set");
    memset(out, 0, sizeof *out);
    return ctx->dev->ops->cells(ctx, p, out);
}

void *api_cl_pinned(floe_ctx *ctx, const char *name, size_t bytes)
{
    return ctx->dev ? ctx->dev->ops->pinned(ctx, name, bytes) : NULL;
}
