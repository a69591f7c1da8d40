/* Floe module "viscosity": the OpenCL path of viscosity.laminar{
 * wall_velocity = "extrapolated"} (form morris), kernels in
 * kernels/viscosity/walls.cl: zero the wall sums, scatter every fluid set's
 * velocities into the sums of its static walls' particles (atomic
 * additions), v~_b, then one launch of the force per pair of a fluid and a
 * boundary target, as floe_cl_force does for the other forms. Needs no
 * OpenCL header. */
#include "viscosity.h"

#include <floe/wall_sums_cl.h>

#define FILE_CL "walls.cl"
#define ARG(v) FLOE_CL_ARG(v)

typedef floe_cl_set cset;

/* v~_b of every static boundary particle into S (3 per particle, then the
 * kernel sums: 4 total floats) */
static int wall_velocity_cl(floe_ctx *ctx, const floe_walls *w, const cset *f, int nf, const cset *b, int nb, void *S)
{
    void *kz = api->cl_kernel(ctx, "viscosity", FILE_CL, "wall_zero");
    void *ks = api->cl_kernel(ctx, "viscosity", FILE_CL, "wall_vscatter");
    void *kf = api->cl_kernel(ctx, "viscosity", FILE_CL, "wall_vfinish");
    if (!kz || !ks || !kf)
        return FLOE_ERR;
    uint32_t total = (uint32_t)w->total, all = 4 * total;
    int st;
    floe_cl_arg az[] = {ARG(all), ARG(S)};
    if ((st = api->cl_run(ctx, kz, all, 2, az, 4.0 * all)))
        return st;
    float kc[4], per[4];
    floe_cl_consts(api->sim(ctx), kc, per);
    for (int s = 0; s < nf; s++) {
        uint32_t n = f[s].info.n;
        if (n == 0)
            continue;
        floe_cl_row q; /* the fluid set's x and v */
        if ((st = floe_cl_target_get(api, ctx, &f[s], FLOE_CL_ROW_V, &q)))
            return st;
        floe_cl_wall_row wr;
        int more;
        for (int l = 0; (more = floe_walls_cl_next(api, ctx, w, &f[s], b, nb, &l, &wr)) > 0; l++) {
            const floe_cl_row *rb = &wr.r;
            uint32_t off = wr.off;
            floe_cl_arg a[] = {ARG(n),       ARG(q.x),      ARG(q.v), ARG(kc),    ARG(per),  ARG(rb->x),
                               ARG(rb->cnt), ARG(rb->idx),  ARG(rb->pitch), ARG(off), ARG(total), ARG(S)};
            if ((st = api->cl_run(ctx, ks, n, (int)(sizeof a / sizeof *a), a, 24.0 * n + 20.0 * rb->total)))
                return st;
        }
        if (more < 0)
            return more;
    }
    floe_cl_arg a[] = {ARG(total), ARG(S)};
    return api->cl_run(ctx, kf, total, 2, a, 32.0 * total);
}

int visc_cl_wall_ext(floe_ctx *ctx, const visc_coef *c)
{
    void *k = api->cl_kernel(ctx, "viscosity", FILE_CL, "visc_morris_ext");
    if (!k)
        return FLOE_ERR;
    cset f[FLOE_MAX_SETS], b[FLOE_MAX_SETS];
    int nf, nb, st;
    if ((st = floe_cl_sets(api, ctx, FLOE_SET_FLUID, f, &nf)) || (st = floe_cl_sets(api, ctx, FLOE_SET_BOUNDARY, b, &nb)))
        return st;
    floe_walls w;
    if ((st = floe_walls_layout(api, ctx, &w)) != FLOE_OK)
        return st;
    void *S = api->cl_scratch(ctx, "viscosity.walls", 16 * w.total + 16);
    if (!S)
        return FLOE_ERR_NOMEM;
    if (w.total && (st = wall_velocity_cl(ctx, &w, f, nf, b, nb, S)))
        return st;
    float kc[4], per[4];
    floe_cl_consts(api->sim(ctx), kc, per);
    const int launches = nf > nb ? nf : nb;
    float eps = c->eps, cf = c->cf;
    for (int s = 0; s < nf; s++) {
        uint32_t n = f[s].info.n;
        if (n == 0)
            continue;
        floe_cl_row q; /* the fluid set's x, v and rho */
        if ((st = floe_cl_target_get(api, ctx, &f[s], FLOE_CL_ROW_RHO | FLOE_CL_ROW_V, &q)))
            return st;
        void *x = q.x, *v = q.v, *rho = q.rho;
        void *acc = floe_cl_attr(api, ctx, &f[s], "a", FLOE_VEC3, FLOE_READ | FLOE_WRITE, &st);
        if (st)
            return st;
        float cb = (float)(c->cb_nu * f[s].info.rest_density); /* boundary mass rho0_i V_b */
        for (int l = 0; l < launches; l++) {
            floe_cl_row rf, rb;
            if ((st = floe_cl_rows(api, ctx, &f[s], f, nf, b, nb, l, FLOE_CL_ROW_RHO | FLOE_CL_ROW_V, &rf, &rb)))
                return st;
            const int kw = l < nb ? floe_walls_slot(&w, b[l].set) : -1;
            int32_t wall = kw >= 0 && w.is_static[kw];
            uint32_t woff = wall ? (uint32_t)w.off[kw] : 0;
            floe_cl_arg a[] = {ARG(n),        ARG(x),      ARG(v),      ARG(rho),      ARG(acc),  ARG(kc),
                               ARG(per),      ARG(eps),    ARG(cf),     ARG(cb),       ARG(rf.has), ARG(rb.has),
                               ARG(rf.x),     ARG(rf.w),   ARG(rf.rho), ARG(rf.v),     ARG(rf.cnt), ARG(rf.idx),
                               ARG(rf.pitch), ARG(rb.x),   ARG(rb.w),   ARG(rb.cnt),   ARG(rb.idx), ARG(rb.pitch),
                               ARG(wall),     ARG(S),      ARG(woff)};
            if ((st = api->cl_run(ctx, k, n, (int)(sizeof a / sizeof *a), a,
                                  52.0 * n + 4.0 * (rf.total + rb.total))))
                return st;
        }
    }
    return FLOE_OK;
}
