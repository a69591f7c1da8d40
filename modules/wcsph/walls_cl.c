/* Floe module "wcsph": the OpenCL path of wcsph.pressure_force{walls =
 * "extrapolated"} (Adami et al. 2012's wall pressure, walls.c) and of
 * {gradient_correction = true}, kernels in kernels/wcsph/walls.cl. The
 * plain pressure force keeps its own kernels (wcsph_cl.c); this one walks
 * neighbour lists:
 *   1. walls: zero the sums, scatter every fluid set's share into the sums
 *      of its static walls' particles (atomic additions), then P_b;
 *   2. gradient_correction: tr M_i of each fluid particle over every target;
 *   3. the force, one launch per pair of a fluid and a boundary target (as
 *      wcsph_cl.c), each scaled by the particle's correction.
 * Needs no OpenCL header: device objects are void * through floe_api. */
#include "wcsph.h"

#include <floe/wall_sums_cl.h>

#include <stdio.h>

#define FILE_CL "walls.cl"
#define ARG(v) FLOE_CL_ARG(v)

typedef floe_cl_set cset;

/* P_b of every boundary particle into S[0, total) (S: 3 total floats) */
static int wall_pressure_cl(floe_ctx *ctx, wcsph_state *ws, const cset *f, int nf, const cset *b, int nb, void **S)
{
    const floe_sim_info *si = api->sim(ctx);
    void *kz = api->cl_kernel(ctx, "wcsph", FILE_CL, "wall_zero");
    void *ks = api->cl_kernel(ctx, "wcsph", FILE_CL, "wall_scatter");
    void *kf = api->cl_kernel(ctx, "wcsph", FILE_CL, "wall_finish");
    if (!kz || !ks || !kf)
        return FLOE_ERR;
    if (!ws->eos_valid)
        return api->fail(ctx, FLOE_ERR_ARG,
                         "wcsph.pressure_force{walls = \"extrapolated\"} takes B and gamma from wcsph.pressure: put "
                         "'wcsph.pressure' before it in the step");
    floe_walls *w = &ws->walls;
    int st;
    if ((st = floe_walls_layout(api, ctx, w)) != FLOE_OK)
        return st;
    uint32_t total = (uint32_t)w->total, all = 3 * total;
    if (!(*S = api->cl_scratch(ctx, "wcsph.walls", 12 * (size_t)total + 16)))
        return FLOE_ERR_NOMEM;
    if (total == 0)
        return FLOE_OK;
    floe_cl_arg az[] = {ARG(all), ARG(*S)};
    if ((st = api->cl_run(ctx, kz, all, 2, az, 4.0 * all)))
        return st;
    float kc[4], per[4];
    floe_cl_consts(si, kc, per);
    float g[4] = {si->gravity[0], si->gravity[1], si->gravity[2], 0.0f};
    for (int s = 0; s < nf; s++) {
        uint32_t n = f[s].info.n;
        if (n == 0)
            continue;
        st = FLOE_OK;
        void *x = floe_cl_attr(api, ctx, &f[s], "x", FLOE_VEC3, FLOE_READ, &st);
        void *p = floe_cl_attr(api, ctx, &f[s], "p", FLOE_F32, FLOE_READ, &st);
        void *rho = floe_cl_attr(api, ctx, &f[s], "rho", FLOE_F32, FLOE_READ, &st);
        if (st)
            return st;
        floe_cl_wall_row wr;
        int more;
        for (int l = 0; (more = floe_walls_cl_next(api, ctx, w, &f[s], b, nb, &l, &wr)) > 0; l++) {
            floe_cl_arg a[] = {ARG(n),      ARG(x),        ARG(p),        ARG(rho),        ARG(kc),    ARG(per),
                               ARG(g),      ARG(wr.r.x),   ARG(wr.r.cnt), ARG(wr.r.idx),   ARG(wr.r.pitch),
                               ARG(wr.off), ARG(total),    ARG(*S)};
            if ((st = api->cl_run(ctx, ks, n, (int)(sizeof a / sizeof *a), a, 20.0 * n + 12.0 * wr.r.total)))
                return st;
        }
        if (more < 0)
            return more;
    }
    float inv_B = 1.0f / ws->eos0_B, inv_gamma = 1.0f / ws->eos0_gamma, rho0 = 1.0f / ws->eos0_inv_rho0,
          lo = ws->eos0_lo;
    floe_cl_arg a[] = {ARG(total), ARG(*S), ARG(inv_B), ARG(inv_gamma), ARG(rho0), ARG(lo)};
    return api->cl_run(ctx, kf, total, (int)(sizeof a / sizeof *a), a, 12.0 * total);
}

/* the slot offset of boundary target l when it is a static wall with
 * Adami's pressure (*wall = 1), else *wall = 0 */
static uint32_t wall_of(const wcsph_state *ws, int adami, const cset *b, int nb, int l, int32_t *wall)
{
    *wall = 0;
    if (!adami || l >= nb)
        return 0;
    const int k = floe_walls_slot(&ws->walls, b[l].set);
    if (k < 0 || !ws->walls.is_static[k])
        return 0;
    *wall = 1;
    return (uint32_t)ws->walls.off[k];
}

int wcsph_cl_pressure_force_walls(floe_ctx *ctx, wcsph_state *ws, const wcsph_pf *pf, int adami, int gc)
{
    const floe_sim_info *si = api->sim(ctx);
    void *kt = api->cl_kernel(ctx, "wcsph", FILE_CL, "grad_trace");
    void *kp = api->cl_kernel(ctx, "wcsph", FILE_CL, "pressure_force_walls");
    if (!kt || !kp)
        return FLOE_ERR;
    float kc[4], per[4];
    floe_cl_consts(si, kc, per);
    cset f[FLOE_MAX_SETS], b[FLOE_MAX_SETS];
    int nf, nb, st;
    if ((st = floe_cl_sets(api, ctx, FLOE_SET_FLUID, f, &nf)) || (st = floe_cl_sets(api, ctx, FLOE_SET_BOUNDARY, b, &nb)))
        return st;
    void *none = api->cl_scratch(ctx, "floe.none", 16), *S = none;
    if (!none)
        return FLOE_ERR_NOMEM;
    if (adami && (st = wall_pressure_cl(ctx, ws, f, nf, b, nb, &S)))
        return st;
    const float cv = pf->cv;
    float vlat = si->spacing * si->spacing * (si->dim == 3 ? si->spacing : 1.0f), dim = (float)si->dim;
    int32_t gci = gc != 0;
    const int launches = nf > nb ? nf : nb;
    for (int s = 0; s < nf; s++) {
        uint32_t n = f[s].info.n;
        if (n == 0)
            continue;
        st = FLOE_OK;
        void *x = floe_cl_attr(api, ctx, &f[s], "x", FLOE_VEC3, FLOE_READ, &st);
        void *acc = floe_cl_attr(api, ctx, &f[s], "a", FLOE_VEC3, FLOE_READ | FLOE_WRITE, &st);
        void *p = floe_cl_attr(api, ctx, &f[s], "p", FLOE_F32, FLOE_READ, &st);
        void *rho = floe_cl_attr(api, ctx, &f[s], "rho", FLOE_F32, FLOE_READ, &st);
        void *v = cv > 0.0f ? floe_cl_attr(api, ctx, &f[s], "v", FLOE_VEC3, FLOE_READ, &st) : x;
        if (st)
            return st;
        void *T = none;
        if (gc) { /* tr M_i over every target first: the correction scales the whole sum */
            char name[96];
            snprintf(name, sizeof name, "wcsph.gtrace.%s", f[s].info.name);
            if (!(T = api->cl_scratch(ctx, name, 4 * (size_t)n)))
                return FLOE_ERR_NOMEM;
            for (int l = 0; l < launches; l++) {
                floe_cl_row rf, rb;
                if ((st = floe_cl_rows(api, ctx, &f[s], f, nf, b, nb, l, FLOE_CL_ROW_RHO, &rf, &rb)))
                    return st;
                int32_t wall, init = l == 0;
                (void)wall_of(ws, adami, b, nb, l, &wall);
                floe_cl_arg a[] = {ARG(n),      ARG(x),      ARG(T),       ARG(kc),      ARG(per),    ARG(init),
                                   ARG(rf.has), ARG(rf.x),   ARG(rf.w),    ARG(rf.rho),  ARG(rf.cnt), ARG(rf.idx),
                                   ARG(rf.pitch), ARG(rb.has), ARG(wall),  ARG(vlat),    ARG(rb.x),   ARG(rb.w),
                                   ARG(rb.cnt), ARG(rb.idx), ARG(rb.pitch)};
                if ((st = api->cl_run(ctx, kt, n, (int)(sizeof a / sizeof *a), a,
                                      16.0 * n + 4.0 * (rf.total + rb.total))))
                    return st;
            }
        }
        float rho0 = f[s].info.rest_density, cw = rho0 * vlat;
        for (int l = 0; l < launches; l++) {
            floe_cl_row rf, rb;
            const float cvl = l < nf ? cv : 0.0f;
            if ((st = floe_cl_rows(api, ctx, &f[s], f, nf, b, nb, l, FLOE_CL_ROW_RHO | (cvl > 0.0f ? FLOE_CL_ROW_V : 0),
                                   &rf, &rb)))
                return st;
            void *pf_ = x;
            if (l < nf && !(pf_ = floe_cl_attr(api, ctx, &f[l], "p", FLOE_F32, FLOE_READ, &st)))
                return st;
            void *vf = cvl > 0.0f ? rf.v : x;
            int32_t wall;
            uint32_t woff = wall_of(ws, adami, b, nb, l, &wall);
            double bytes = (cvl > 0.0f ? 68.0 : 56.0) * n + 4.0 * (rf.total + rb.total);
            floe_cl_arg a[] = {ARG(n),      ARG(x),      ARG(p),      ARG(acc),     ARG(kc),     ARG(per),
                               ARG(rho0),   ARG(rf.has), ARG(rb.has), ARG(rf.x),    ARG(rf.w),   ARG(pf_),
                               ARG(rf.cnt), ARG(rf.idx), ARG(rf.pitch), ARG(rb.x),  ARG(rb.w),   ARG(rb.cnt),
                               ARG(rb.idx), ARG(rb.pitch), ARG(cvl),  ARG(v),       ARG(rho),    ARG(vf),
                               ARG(rf.rho), ARG(wall),   ARG(S),      ARG(woff),    ARG(cw),     ARG(gci),
                               ARG(dim),    ARG(T)};
            if ((st = api->cl_run(ctx, kp, n, (int)(sizeof a / sizeof *a), a, bytes)))
                return st;
        }
    }
    return FLOE_OK;
}
