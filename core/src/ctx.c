/* Simulation context: creation and destruction (the services every layer
 * uses, errors, log, thread team: ctx_base.c). */
#include "decomp.h"
#include "device.h"
#include "probes.h"
#include "emit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

floe_sim_def floe_sim_default_def(void)
{
    floe_sim_def d;
    memset(&d, 0, sizeof d);
    d.dim = 3;
    d.support_factor = 2.0f;
    d.gravity[1] = -9.81f;
    d.log_level = FLOE_LOG_INFO;
    for (int k = 0; k < 3; k++) {
        d.domain_min[k] = -1.0f;
        d.domain_max[k] = 1.0f;
    }
    return d;
}

static int bad_float(float f) { return !isfinite(f); }

floe_ctx *floe_ctx_create(const floe_sim_def *def, char *err, size_t errlen)
{
    floe_sim_def d = *def;
    if (d.dim == 0)
        d.dim = 3;
    if (d.support_factor == 0)
        d.support_factor = 2.0f;
    const char *why = NULL;
    if (d.dim != 2 && d.dim != 3)
        why = "dim must be 2 or 3";
    else if (!(d.spacing > 0) || bad_float(d.spacing))
        why = "spacing must be a positive number";
    else if (!(d.support_factor >= 1.0f && d.support_factor <= 4.0f))
        why = "support factor must be in [1, 4]";
    for (int k = 0; k < d.dim && !why; k++)
        if (bad_float(d.domain_min[k]) || bad_float(d.domain_max[k]) || !(d.domain_max[k] > d.domain_min[k]))
            why = "domain max must be greater than domain min on every axis";
    if (!why && (d.outside < FLOE_OUTSIDE_DELETE || d.outside > FLOE_OUTSIDE_CLAMP))
        why = "outside must be FLOE_OUTSIDE_DELETE, _ERROR or _CLAMP";
    for (int k = 0; k < 3 && !why; k++)
        if (bad_float(d.gravity[k]))
            why = "gravity must be finite";
    for (int k = 0; k < d.dim && !why; k++)
        if (d.periodic[k] && d.domain_max[k] - d.domain_min[k] < 3 * d.spacing * d.support_factor)
            why = "a periodic axis needs a domain at least 3 support radii long";
    if (why) {
        if (err)
            snprintf(err, errlen, "floe.sim: %s", why);
        return NULL;
    }
    floe_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        if (err)
            snprintf(err, errlen, "floe.sim: out of memory");
        return NULL;
    }
    ctx->info.dim = d.dim;
    ctx->info.spacing = d.spacing;
    ctx->info.support = d.spacing * d.support_factor;
    memcpy(ctx->info.gravity, d.gravity, sizeof d.gravity);
    memcpy(ctx->info.domain_min, d.domain_min, sizeof d.domain_min);
    memcpy(ctx->info.domain_max, d.domain_max, sizeof d.domain_max);
    for (int k = 0; k < d.dim; k++)
        if (d.periodic[k]) {
            ctx->info.periodic |= 1u << k;
            ctx->info.period[k] = d.domain_max[k] - d.domain_min[k];
        }
    if (d.dim == 2) {
        ctx->info.gravity[2] = 0;
        ctx->info.domain_min[2] = 0;
        ctx->info.domain_max[2] = 0;
    }
    ctx->dt_limit = INFINITY;
    ctx->frame_dir = -1; /* per-frame stages write nothing outside floe_run */
    ctx->log_fn = d.log;
    ctx->log_user = d.log_user;
    ctx->log_level = d.log_level;
    ctx->outside = d.outside;
    floe_ctx_set_threads(ctx, d.threads);
    /* the built-in stages (neighbours, gravity, integrate) form module 0 */
    ctx->modules[0].desc = floe_core_module();
    ctx->modules[0].state = ctx; /* its checkpoint hooks (the sources' progress, emit.c) reach the context */
    snprintf(ctx->modules[0].path, sizeof ctx->modules[0].path, "(built in)");
    ctx->nmodules = 1;
    char clerr[1024] = "";
    if (backend_open(ctx, d.backend, d.device, clerr, sizeof clerr) != FLOE_OK) {
        if (err)
            snprintf(err, errlen, "%s", clerr);
        free(ctx);
        return NULL;
    }
    return ctx;
}

void floe_ctx_destroy(floe_ctx *ctx)
{
    if (!ctx)
        return;
    floe_pipeline_clear(ctx);
    for (int i = ctx->nmodules - 1; i >= 0; i--) {
        module_inst *m = &ctx->modules[i];
        if (m->desc && m->desc->fini && m->state)
            m->desc->fini(m->state);
    }
    backend_close(ctx); /* device buffers and kernels, before the modules go */
    probes_free(ctx);
    emit_free(ctx);
    dd_free(ctx);
    ctx_nbs_free(ctx);
    for (int i = 0; i < ctx->nmodules; i++)
        if (ctx->modules[i].dl)
            floe_module_unload_handle(ctx->modules[i].dl);
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        for (int a = 0; a < p->nattrs; a++)
            free(p->attrs[a].data);
        nb_sorted_free(&p->sorted);
        nb_sorted_free(&p->vsorted);
        free(p->x0);
        free(p->pack);
        for (int t = 0; t < MAX_SETS; t++) {
            nb_list_free(&p->vlists[t]);
            nb_list_free(&p->lists[t]);
            free(p->ksum[t]);
        }
    }
    for (int g = 0; g < ctx->ngrids; g++)
        free(ctx->grids[g].data);
    free(ctx);
}
