/* OpenCL backend: kernel launches. Arguments set only where they changed
 * (cached per kernel), the events of a stage's first and last kernel kept
 * for its device time, every kernel's kept with FLOE_CL_PROFILE. */
#include "state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static argcache *argc_of(floe_ctx *ctx, cl_kernel k)
{
    if (CL->argcache_off)
        return NULL;
    if (!CL->argc && !(CL->argc = calloc(ARGC_SLOTS, sizeof *CL->argc)))
        return NULL;
    size_t h = ((uintptr_t)k >> 4) * 2654435761u;
    for (int probe = 0; probe < ARGC_SLOTS; probe++) {
        argcache *c = &CL->argc[(h + (size_t)probe) % ARGC_SLOTS];
        if (c->k == (void *)k)
            return c;
        if (!c->k) {
            c->k = (void *)k;
            return c;
        }
    }
    return NULL; /* full: set every argument */
}

static void note_event(floe_ctx *ctx, cl_kernel k, cl_event ev, double bytes)
{
    const char *name = cl_kernel_name(ctx, k);
    int ki = -1;
    for (int i = 0; i < CL->nks; i++)
        if (!strcmp(CL->ks[i].name, name))
            ki = i;
    if (ki < 0 && CL->nks < MAX_KSTATS) {
        ki = CL->nks++;
        memset(&CL->ks[ki], 0, sizeof CL->ks[ki]);
        snprintf(CL->ks[ki].name, NAME_LEN, "%s", name);
    }
    if (ki < 0 || (CL->npend == CL->cappend && !(CL->pend = realloc(CL->pend, (size_t)(CL->cappend = CL->cappend * 2 + 64) * sizeof *CL->pend)))) {
        F->clReleaseEvent(ev);
        return;
    }
    CL->pend[CL->npend++] = (pending){ev, ki, bytes};
}

static int launch_(floe_ctx *ctx, cl_kernel k, size_t n, size_t local, int nargs, const floe_cl_arg *args,
                   double bytes)
{
    if (!k)
        return FLOE_ERR;
    argcache *ac = argc_of(ctx, k);
    for (int a = 0; a < nargs; a++) {
        const size_t sz = args[a].size;
        int cache = ac && a < ARGC_MAX && sz > 0 && sz <= ARGC_BYTES && args[a].value;
        if (cache && ac->size[a] == sz && !memcmp(ac->val[a], args[a].value, sz))
            continue; /* set to this value already */
        cl_int e = F->clSetKernelArg(k, (cl_uint)a, sz, args[a].value);
        if (e != CL_SUCCESS) {
            if (ac && a < ARGC_MAX)
                ac->size[a] = 0;
            return ctx_fail(ctx, FLOE_ERR, "OpenCL: kernel '%s': argument %d rejected (error %d)", cl_kernel_name(ctx, k),
                            a, (int)e);
        }
        if (cache) {
            ac->size[a] = (uint8_t)sz;
            memcpy(ac->val[a], args[a].value, sz);
        } else if (ac && a < ARGC_MAX) {
            ac->size[a] = 0;
        }
    }
    if (n == 0)
        return FLOE_OK;
    CL->launches++;
    size_t global = (n + local - 1) / local * local;
    cl_event ev = NULL;
    const int si = CL->cur_stage;
    cl_int e = F->clEnqueueNDRangeKernel(CL->q, k, 1, NULL, &global, &local, 0, NULL,
                                         CL->profile || si >= 0 ? &ev : NULL);
    if (e != CL_SUCCESS)
        return ctx_fail(ctx, FLOE_ERR, "OpenCL: kernel '%s' could not be enqueued over %zu items (error %d)",
                        cl_kernel_name(ctx, k), n, (int)e);
    if (ev && si >= 0) { /* first kernel of the stage, else its latest */
        cl_event *slot = CL->ev_begin[si] ? &CL->ev_end[si] : &CL->ev_begin[si];
        if (*slot)
            F->clReleaseEvent(*slot);
        F->clRetainEvent(ev);
        *slot = ev;
    }
    if (ev && CL->profile)
        note_event(ctx, k, ev, bytes);
    else if (ev)
        F->clReleaseEvent(ev);
    return FLOE_OK;
}

/* a launch, its host time counted (FLOE_CL_WAITS) */
int cl_launch(floe_ctx *ctx, cl_kernel k, size_t n, size_t local, int nargs, const floe_cl_arg *args, double bytes)
{
    double t0 = now_ms();
    int rc = launch_(ctx, k, n, local, nargs, args, bytes);
    CL->launch_ms += now_ms() - t0;
    return rc;
}
