/* terrain.collide on the OpenCL backend (kernels/terrain/collide.cl): the
 * particles and the wet map stay on the device; the terrain's heights go up
 * once. The wet map comes back when terrain.output writes it or a
 * checkpoint saves it (tm_wet_to_host). The bounce and frozen counts of the
 * run record are C-path statistics only (counting them would cost a read
 * every step). */
#include "carpet.h"

#include <floe/cl_module.h>
#include <floe/sph.h>

#include <math.h>
#include <string.h>

typedef floe_cl_write_fn write_fn;
typedef floe_cl_read_fn read_fn;

enum { P_REST, P_MU, P_MU_WET, P_RADIUS, P_BISECT, P_FREEZE_V, P_FREEZE_N, P_WET_RATE, P_DRY_RATE };

static int buffers(floe_ctx *ctx, tm_state *s, const floe_terrain *t, void **h, void **wet, void **touched)
{
    const size_t n = s->nwet;
    *h = tm_api->cl_scratch(ctx, "terrain.heights", n * sizeof(float));
    *wet = tm_api->cl_scratch(ctx, "terrain.wet", n * sizeof(float));
    *touched = tm_api->cl_scratch(ctx, "terrain.touched", (n + 3) / 4 * 4);
    if (!*h || !*wet || !*touched)
        return tm_api->fail(ctx, FLOE_ERR_NOMEM, "terrain.collide: device buffers for %zu samples", n);
    if (s->wet_on_device)
        return FLOE_OK;
    write_fn w = floe_cl_write_fn_of(tm_api);
    void *q = tm_api->cl_queue(ctx);
    memset(s->touched, 0, n);
    int32_t e = w ? w(q, *h, 1, 0, n * sizeof(float), t->h, 0, NULL, NULL) : -1;
    if (!e)
        e = w(q, *wet, 1, 0, n * sizeof(float), s->wet, 0, NULL, NULL);
    if (!e)
        e = w(q, *touched, 1, 0, n, s->touched, 0, NULL, NULL);
    if (e)
        return tm_api->fail(ctx, FLOE_ERR, "terrain.collide: uploading the terrain failed (error %d)", (int)e);
    s->wet_on_device = 1;
    return FLOE_OK;
}

int tm_wet_to_host(tm_state *s)
{
    if (!s->wet_on_device)
        return FLOE_OK;
    read_fn rd = floe_cl_read_fn_of(tm_api);
    void *wet = tm_api->cl_scratch(s->ctx, "terrain.wet", s->nwet * sizeof(float));
    int32_t e = rd && wet ? rd(tm_api->cl_queue(s->ctx), wet, 1, 0, s->nwet * sizeof(float), s->wet, 0, NULL, NULL)
                          : -1;
    return e ? tm_api->fail(s->ctx, FLOE_ERR, "terrain: reading the wet map back failed (error %d)", (int)e)
             : FLOE_OK;
}

int tm_collide_cl(const floe_stage_call *call)
{
    floe_ctx *ctx = call->ctx;
    tm_state *s = call->state;
    const floe_sim_info *si = tm_api->sim(ctx);
    floe_terrain t;
    if (tm_terrain(ctx, &t) || tm_wet_ensure(s, &t))
        return FLOE_ERR_ARG;
    void *h, *wet, *touched;
    int rc = buffers(ctx, s, &t, &h, &wet, &touched);
    void *kc = tm_api->cl_kernel(ctx, "terrain", "collide.cl", "collide");
    void *kw = tm_api->cl_kernel(ctx, "terrain", "collide.cl", "wet");
    if (rc || !kc || !kw)
        return rc ? rc : FLOE_ERR;
    const floe_value *P = call->param;
    float r = (float)(P[P_RADIUS].f * si->spacing), e = (float)P[P_REST].f, mu = (float)P[P_MU].f;
    float mu_wet = (float)P[P_MU_WET].f, dt = (float)si->dt, x0 = t.x0, z0 = t.z0, cell = t.cell;
    float inv_cell = t.inv_cell, vfreeze2 = (float)(P[P_FREEZE_V].f * P[P_FREEZE_V].f);
    float wet_band = 2.0f * r + 0.5f * si->spacing;
    int nx = t.nx, nz = t.nz, bisect = (int)P[P_BISECT].i;
    uint32_t nfreeze = (uint32_t)P[P_FREEZE_N].i;
    floe_set sets[TM_MAX_SETS];
    int ns = tm_api->set_list(ctx, FLOE_SET_FLUID, sets, TM_MAX_SETS);
    if (ns > TM_MAX_SETS)
        return tm_api->fail(ctx, FLOE_ERR_ARG, "terrain.collide: %d fluid sets, at most %d", ns, TM_MAX_SETS);
    for (int q = 0; q < ns && !rc; q++) {
        floe_set_info info;
        if (tm_api->set_info(ctx, sets[q], &info) || !info.n)
            continue;
        void *x = tm_api->cl_attr(ctx, sets[q], "x", FLOE_VEC3, FLOE_READ | FLOE_WRITE);
        void *v = tm_api->cl_attr(ctx, sets[q], "v", FLOE_VEC3, FLOE_READ | FLOE_WRITE);
        void *rest = tm_api->cl_attr(ctx, sets[q], "rest", FLOE_U32, FLOE_READ | FLOE_WRITE);
        if (!x || !v || !rest)
            return tm_api->fail(ctx, FLOE_ERR_ARG, "terrain.collide: a fluid set without x, v or rest");
        uint32_t n = floe_owned(tm_api, ctx, sets[q], info.n); /* MPI: the owned particles */
        floe_cl_arg a[] = {FLOE_CL_ARG(n), FLOE_CL_ARG(x), FLOE_CL_ARG(v), FLOE_CL_ARG(rest), FLOE_CL_ARG(h),
                           FLOE_CL_ARG(wet), FLOE_CL_ARG(touched), FLOE_CL_ARG(nx), FLOE_CL_ARG(nz),
                           FLOE_CL_ARG(x0), FLOE_CL_ARG(z0), FLOE_CL_ARG(cell), FLOE_CL_ARG(inv_cell),
                           FLOE_CL_ARG(r), FLOE_CL_ARG(e), FLOE_CL_ARG(mu), FLOE_CL_ARG(mu_wet), FLOE_CL_ARG(dt),
                           FLOE_CL_ARG(bisect), FLOE_CL_ARG(vfreeze2), FLOE_CL_ARG(nfreeze), FLOE_CL_ARG(wet_band)};
        rc = tm_api->cl_run(ctx, kc, n, (int)(sizeof a / sizeof *a), a, 28.0 * n);
    }
    if (rc)
        return rc;
    if (tm_ranks(ctx, s) > 1) { /* MPI: the touched samples of every rank, through the host */
        read_fn rd = floe_cl_read_fn_of(tm_api);
        write_fn w = floe_cl_write_fn_of(tm_api);
        void *q = tm_api->cl_queue(ctx);
        int32_t e = rd && w ? rd(q, touched, 1, 0, s->nwet, s->touched, 0, NULL, NULL) : -1;
        if (e)
            return tm_api->fail(ctx, FLOE_ERR, "terrain.collide: reading the touched samples failed (error %d)", (int)e);
        if ((rc = tm_touched_all_ranks(ctx, s, s->touched)))
            return rc;
        if ((e = w(q, touched, 1, 0, s->nwet, s->touched, 0, NULL, NULL)))
            return tm_api->fail(ctx, FLOE_ERR, "terrain.collide: writing the touched samples failed (error %d)", (int)e);
    }
    uint32_t nw = (uint32_t)s->nwet;
    float up = (float)(P[P_WET_RATE].f * si->dt), down = (float)exp(-P[P_DRY_RATE].f * si->dt);
    floe_cl_arg a[] = {FLOE_CL_ARG(nw), FLOE_CL_ARG(wet), FLOE_CL_ARG(touched), FLOE_CL_ARG(up), FLOE_CL_ARG(down)};
    return tm_api->cl_run(ctx, kw, nw, 5, a, 9.0 * nw);
}
