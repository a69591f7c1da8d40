/* Blow-up detection after every stage: NaN/Inf in what the stage wrote,
 * fluid particles outside the domain (an error, or deleted or clamped as
 * the domain's outside rule says). The message names the particle (its
 * stable id and current index), the set, the step, the time and the stage. */
#include "device.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Index of the first non-finite float of n, or -1: a branch-free scan of
 * blocks (in parallel for long arrays; the first bad block wins, so the
 * answer does not depend on the thread count), then the bad block again. */
static long first_nonfinite(const float *f, size_t n)
{
    const uint32_t *u = (const uint32_t *)f;
    const size_t blk = 4096;
    const int64_t nb = (int64_t)((n + blk - 1) / blk);
    int64_t first = nb;
#pragma omp parallel for schedule(static) reduction(min : first) if (nb >= 8)
    for (int64_t b = 0; b < nb; b++) {
        const size_t s = (size_t)b * blk, e = s + blk < n ? s + blk : n;
        uint32_t bad = 0;
        for (size_t i = s; i < e; i++)
            bad |= (uint32_t)((u[i] & 0x7f800000u) == 0x7f800000u);
        if (bad && b < first)
            first = b;
    }
    if (first == nb)
        return -1;
    const size_t s = (size_t)first * blk, e = s + blk < n ? s + blk : n;
    for (size_t i = s; i < e; i++)
        if (!isfinite(f[i]))
            return (long)i;
    return -1;
}

static const attr *id_attr(const pset *p)
{
    for (int a = 0; a < p->nattrs; a++)
        if (!strcmp(p->attrs[a].name, "id") && p->attrs[a].type == FLOE_U32)
            return &p->attrs[a];
    return NULL;
}

int ctx_blowup_report_at(floe_ctx *ctx, const pset *p, uint32_t i, const char *stage, const char *what,
                         const float *pos)
{
    if (ctx->dev) { /* a device: the host copies of what the message quotes */
        if (!pos)
            dev_host(ctx, (pset *)p, (attr *)&p->attrs[0], 0);
        dev_host(ctx, (pset *)p, pset_attr((pset *)p, "id"), 0);
    }
    const attr *id = id_attr(p);
    const float *x = pos ? pos : (const float *)p->attrs[0].data + 3 * (size_t)i;
    char idtxt[48] = "";
    if (id)
        snprintf(idtxt, sizeof idtxt, " id %u", ((const uint32_t *)id->data)[i]);
    return ctx_fail(ctx, FLOE_ERR_BLOWUP,
                    "blow-up: %s: particle%s (index %u of set '%s') at (%g, %g, %g), step %llu, t = %.6g s, "
                    "after stage '%s'",
                    what, idtxt, i, p->name, (double)x[0], (double)x[1], (double)x[2],
                    (unsigned long long)ctx->info.step, ctx->info.time, stage);
}

int ctx_blowup_report(floe_ctx *ctx, const pset *p, uint32_t i, const char *stage, const char *what)
{
    return ctx_blowup_report_at(ctx, p, i, stage, what, NULL);
}

void ctx_outside_event(floe_ctx *ctx, const pset *p, uint64_t count, uint32_t first, uint64_t step, double time,
                       const char *stage)
{
    ctx->outside_count += count;
    ctx_log(ctx, FLOE_LOG_DEBUG,
            "step %llu (t = %.6g s): %llu particle%s of set '%s' left the domain after stage '%s' and %s %s (the "
            "lowest %s: %u)",
            (unsigned long long)step, time, (unsigned long long)count, count == 1 ? "" : "s", p->name, stage,
            count == 1 ? "was" : "were", ctx->outside == FLOE_OUTSIDE_CLAMP ? "clamped" : "deleted",
            id_attr(p) ? "id" : "index", first);
}

static int writes(const stage_inst *st, const char *name, floe_set_kind kind)
{
    if (!st->desc) /* host (Lua) stages may write anything */
        return 1;
    for (const floe_attr_desc *a = st->desc->attrs; a && a->name; a++)
        if ((a->access & FLOE_WRITE) && (a->kind & kind) && !strcmp(a->name, name))
            return 1;
    return 0;
}

int floe_ctx_set_outside(floe_ctx *ctx, int rule)
{
    if (rule < FLOE_OUTSIDE_DELETE || rule > FLOE_OUTSIDE_CLAMP)
        return ctx_fail(ctx, FLOE_ERR_ARG, "outside rule must be FLOE_OUTSIDE_DELETE, _ERROR or _CLAMP");
    ctx->outside = rule;
    return FLOE_OK;
}

/* Axis k of the domain that position xi is outside of, or -1. */
static int outside_axis(const floe_ctx *ctx, const float *xi)
{
    for (int k = 0; k < ctx->info.dim; k++)
        if (!(ctx->info.periodic & (1u << k)) && (xi[k] < ctx->info.domain_min[k] || xi[k] > ctx->info.domain_max[k]))
            return k;
    return -1;
}

/* Particles of set s outside the domain, the first at index first:
 * deleted (the set compacted) or clamped back onto the faces they crossed
 * with their outward velocity zeroed, by ctx->outside; counted. The OpenCL
 * backend does the same on the device (kernels/core/core.cl check_stage,
 * core/src/opencl/outside.c). */
static int outside_apply(floe_ctx *ctx, int s, uint32_t first, const stage_inst *st)
{
    pset *p = &ctx->sets[s];
    float *x = p->attrs[0].data, *v = pset_attr(p, "v")->data;
    const attr *ida = id_attr(p);
    const uint32_t *id = ida ? ida->data : NULL;
    const float *lo = ctx->info.domain_min, *hi = ctx->info.domain_max;
    uint64_t count = 0;
    uint32_t lowest = UINT32_MAX;
    if (ctx->outside == FLOE_OUTSIDE_CLAMP) {
        for (uint32_t i = first; i < p->n; i++) {
            if (outside_axis(ctx, x + 3 * (size_t)i) < 0)
                continue;
            for (int k = 0; k < ctx->info.dim; k++) {
                float *xk = &x[3 * (size_t)i + k], *vk = &v[3 * (size_t)i + k];
                if (ctx->info.periodic & (1u << k))
                    continue;
                if (*xk < lo[k] || *xk > hi[k])
                    *vk = *xk < lo[k] ? fmaxf(*vk, 0.0f) : fminf(*vk, 0.0f);
                *xk = fminf(fmaxf(*xk, lo[k]), hi[k]);
            }
            count++;
            lowest = id ? (id[i] < lowest ? id[i] : lowest) : (i < lowest ? i : lowest);
        }
        ctx_outside_event(ctx, p, count, lowest, ctx->info.step, ctx->info.time, st->name);
        return floe_set_moved(ctx, ctx_set_handle(ctx, s));
    }
    uint8_t *keep = malloc(p->n);
    if (!keep)
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "out of memory deleting particles that left the domain");
    for (uint32_t i = 0; i < p->n; i++) {
        keep[i] = i < first || outside_axis(ctx, x + 3 * (size_t)i) < 0;
        if (!keep[i]) {
            count++;
            lowest = id ? (id[i] < lowest ? id[i] : lowest) : (i < lowest ? i : lowest);
        }
    }
    ctx_outside_event(ctx, p, count, lowest, ctx->info.step, ctx->info.time, st->name);
    int rc = ctx_set_compact(ctx, ctx_set_handle(ctx, s), keep);
    free(keep);
    return rc;
}

int ctx_check_blowup(floe_ctx *ctx, const stage_inst *st, int check_domain)
{
    int rc;
    for (int s = 0; s < ctx->npsets; s++) {
        const pset *p = &ctx->sets[s];
        if (p->kind != FLOE_SET_FLUID || p->n == 0)
            continue;
        for (int a = 0; a < p->nattrs; a++) {
            const attr *at = &p->attrs[a];
            if ((at->type != FLOE_F32 && at->type != FLOE_VEC3) || !writes(st, at->name, p->kind))
                continue;
            size_t comps = at->type == FLOE_VEC3 ? 3 : 1;
            /* MPI: the ghosts' values are their owners' to check */
            long bad = first_nonfinite(at->data, (size_t)(p->n - p->ghosts) * comps);
            if (bad >= 0) {
                char what[96];
                snprintf(what, sizeof what, "%s in attribute '%s'", isnan(((float *)at->data)[bad]) ? "NaN" : "Inf",
                         at->name);
                return ctx_blowup_report(ctx, p, (uint32_t)((size_t)bad / comps), st->name, what);
            }
        }
        if (!check_domain || !writes(st, "x", p->kind))
            continue;
        const float *x = p->attrs[0].data;
        const float *lo = ctx->info.domain_min, *hi = ctx->info.domain_max;
        const int dim = ctx->info.dim;
        const unsigned per = ctx->info.periodic;
        /* the first particle outside (parallel for many: the smallest index
         * wins, whatever the thread count) */
        const int64_t n = (int64_t)(p->n - p->ghosts);
        int64_t out = n;
#pragma omp parallel for schedule(static) reduction(min : out) if (n >= 32768)
        for (int64_t i = 0; i < n; i++) {
            int bad = 0;
            for (int k = 0; k < dim; k++)
                bad |= !(per & (1u << k)) && (x[3 * i + k] < lo[k] || x[3 * i + k] > hi[k]);
            if (bad && i < out)
                out = i;
        }
        if (out < n && ctx->outside == FLOE_OUTSIDE_ERROR)
            return ctx_blowup_report(ctx, p, (uint32_t)out, st->name, "left the simulation domain");
        /* MPI: deleting would renumber the ghosts of the step; the
         * decomposition deletes them when the step ends (decomp.c) */
        if (out < n && ctx->dd && ctx->outside == FLOE_OUTSIDE_DELETE) {
            ctx->dd_outside = 1;
            continue;
        }
        if (out < n && (rc = outside_apply(ctx, s, (uint32_t)out, st)))
            return rc;
    }
    return FLOE_OK;
}
