/* Floe module "wcsph": the OpenCL path of its stages, kernels in
 * kernels/wcsph/wcsph.cl. wcsph.c decodes the parameters (wcsph.h) and calls
 * in here; the equations and the arithmetic are those of its C path. Each
 * launch sums over one fluid target set and one boundary target set (the
 * usual scene has exactly one of each). Needs no OpenCL header: device
 * objects are void * through floe_api. */
#include "wcsph.h"

#include <floe/cl_module.h>

#include <stdio.h>

FLOE_MODULE_API_EXTERN;

#define FILE_CL "wcsph.cl"
#define ARG(v) FLOE_CL_ARG(v)

typedef floe_cl_set cset; /* <floe/cl_module.h> */

/* ---- pressure ------------------------------------------------------------ */

int wcsph_cl_pressure(floe_ctx *ctx, const floe_fluid *fs, const wcsph_eos *e)
{
    void *k = api->cl_kernel(ctx, "wcsph", FILE_CL, "pressure");
    if (!k)
        return FLOE_ERR;
    const cset c = {fs->set, fs->info};
    int st = FLOE_OK;
    void *rho = floe_cl_attr(api, ctx, &c, "rho", FLOE_F32, FLOE_READ, &st);
    void *p = floe_cl_attr(api, ctx, &c, "p", FLOE_F32, FLOE_WRITE, &st);
    if (st)
        return st;
    uint32_t n = c.info.n;
    float B = e->B, inv_rho0 = e->inv_rho0, gf = e->gamma, lo = e->lo;
    int32_t mode = e->mode;
    floe_cl_arg a[] = {ARG(n), ARG(rho), ARG(p), ARG(B), ARG(inv_rho0), ARG(gf), ARG(mode), ARG(lo)};
    return api->cl_run(ctx, k, n, (int)(sizeof a / sizeof *a), a, 8.0 * n);
}

/* ---- pressure force ------------------------------------------------------ */

/* ... with the neighbours' data packed in sorted order first (pack_cells:
 * u = (v, rho), w = (m, P) per slot of each fluid set), which the walk
 * stages in local memory with the positions */
static int pressure_force_packed(floe_ctx *ctx, float cv, const cset *f, int nf, const cset *b, int nb,
                                 const floe_cl_cellq *cq)
{
    float kc[4], per[4];
    floe_cl_consts(api->sim(ctx), kc, per);
    void *kp = api->cl_kernel(ctx, "wcsph", FILE_CL, "pack_cells");
    void *k = api->cl_kernel(ctx, "wcsph", FILE_CL, "pressure_force_packed");
    if (!k || !kp)
        return FLOE_ERR;
    void *U[FLOE_MAX_SETS], *Wm[FLOE_MAX_SETS];
    int st;
    for (int s = 0; s < nf; s++) {
        char name[96];
        uint32_t n = f[s].info.n;
        snprintf(name, sizeof name, "wcsph.pack_u.%s", f[s].info.name);
        U[s] = api->cl_scratch(ctx, name, (size_t)n * 16);
        snprintf(name, sizeof name, "wcsph.pack_w.%s", f[s].info.name);
        Wm[s] = api->cl_scratch(ctx, name, (size_t)n * 8);
        st = FLOE_OK;
        void *v = floe_cl_attr(api, ctx, &f[s], "v", FLOE_VEC3, FLOE_READ, &st);
        void *rho = floe_cl_attr(api, ctx, &f[s], "rho", FLOE_F32, FLOE_READ, &st);
        void *m = floe_cl_attr(api, ctx, &f[s], "m", FLOE_F32, FLOE_READ, &st);
        void *p = floe_cl_attr(api, ctx, &f[s], "p", FLOE_F32, FLOE_READ, &st);
        if (st || !U[s] || !Wm[s])
            return st ? st : FLOE_ERR_NOMEM;
        floe_cl_arg a[] = {ARG(n), ARG(cq[s].sp), ARG(v), ARG(rho), ARG(m), ARG(p), ARG(U[s]), ARG(Wm[s])};
        if ((st = api->cl_run(ctx, kp, n, (int)(sizeof a / sizeof *a), a, 64.0 * n)))
            return st;
    }
    const int launches = nf > nb ? nf : nb;
    for (int s = 0; s < nf; s++) {
        st = FLOE_OK;
        void *x = floe_cl_attr(api, ctx, &f[s], "x", FLOE_VEC3, FLOE_READ, &st);
        void *acc = floe_cl_attr(api, ctx, &f[s], "a", FLOE_VEC3, FLOE_READ | FLOE_WRITE, &st);
        if (st)
            return st;
        uint32_t n = f[s].info.n;
        float rho0 = f[s].info.rest_density;
        for (int l = 0; l < launches; l++) {
            floe_cl_row rf, rb;
            floe_cl_cellt tf, tb;
            const float cvl = l < nf ? cv : 0.0f;
            if ((st = floe_cl_cell_rows(api, ctx, f, nf, b, nb, l, 0, &rf, &rb, &tf, &tb)))
                return st;
            void *fu = l < nf ? U[l] : U[s], *fw = l < nf ? Wm[l] : Wm[s];
            int32_t selff = l < nf && f[l].set.id == f[s].set.id;
            /* compulsory: sorted position 16, packs 24, a 24 (read, write) */
            floe_cl_arg a[] = {ARG(n),      ARG(x),      ARG(acc),  ARG(kc),   ARG(per),  ARG(rho0),
                               ARG(tf.has), ARG(tb.has), ARG(U[s]), ARG(Wm[s]), ARG(fu),  ARG(fw),
                               ARG(rf.x),   ARG(rb.x),   ARG(rb.w), ARG(cvl),  FLOE_CL_CELLQ_ARGS(cq[s]),
                               FLOE_CL_CELLT_ARGS(tf), ARG(selff), FLOE_CL_CELLT_ARGS(tb)};
            if ((st = api->cl_run(ctx, k, n, (int)(sizeof a / sizeof *a), a, 64.0 * n)))
                return st;
        }
    }
    return FLOE_OK;
}

/* the pressure force (with XSPH where cv > 0) of every fluid set over cell
 * walks: launch l sums over the l-th fluid and l-th boundary target, as the
 * list launches do; P = p / rho^2 computed in the walk (no prho2 pass) */
static int pressure_force_cells(floe_ctx *ctx, float cv, const cset *f, int nf, const cset *b, int nb,
                                const floe_cl_cellq *cq)
{
    void *k = api->cl_kernel(ctx, "wcsph", FILE_CL, "pressure_force_cells");
    if (!k)
        return FLOE_ERR;
    if (cq[0].pack)
        return pressure_force_packed(ctx, cv, f, nf, b, nb, cq);
    float kc[4], per[4];
    floe_cl_consts(api->sim(ctx), kc, per);
    const int launches = nf > nb ? nf : nb;
    for (int s = 0; s < nf; s++) {
        int st = FLOE_OK;
        void *x = floe_cl_attr(api, ctx, &f[s], "x", FLOE_VEC3, FLOE_READ, &st);
        void *acc = floe_cl_attr(api, ctx, &f[s], "a", FLOE_VEC3, FLOE_READ | FLOE_WRITE, &st);
        void *p = floe_cl_attr(api, ctx, &f[s], "p", FLOE_F32, FLOE_READ, &st);
        void *rho = floe_cl_attr(api, ctx, &f[s], "rho", FLOE_F32, FLOE_READ, &st);
        void *v = cv > 0.0f ? floe_cl_attr(api, ctx, &f[s], "v", FLOE_VEC3, FLOE_READ, &st) : x;
        if (st)
            return st;
        uint32_t n = f[s].info.n;
        float rho0 = f[s].info.rest_density;
        for (int l = 0; l < launches; l++) {
            floe_cl_row rf, rb;
            floe_cl_cellt tf, tb;
            const float cvl = l < nf ? cv : 0.0f;
            if ((st = floe_cl_cell_rows(api, ctx, f, nf, b, nb, l, FLOE_CL_ROW_RHO | (cvl > 0.0f ? FLOE_CL_ROW_V : 0), &rf,
                                        &rb, &tf, &tb)))
                return st;
            void *pf = x;
            if (l < nf && !(pf = floe_cl_attr(api, ctx, &f[l], "p", FLOE_F32, FLOE_READ, &st)))
                return st;
            void *vf = cvl > 0.0f ? rf.v : x;
            int32_t selff = l < nf && f[l].set.id == f[s].set.id;
            /* compulsory: sorted position 16, p, rho 8, a 24 (read, write), v 12 with XSPH */
            double bytes = (cvl > 0.0f ? 60.0 : 48.0) * n;
            floe_cl_arg a[] = {ARG(n),      ARG(x),      ARG(p),    ARG(acc),  ARG(kc),   ARG(per),    ARG(rho0),
                               ARG(tf.has), ARG(tb.has), ARG(rf.x), ARG(rf.w), ARG(pf),   ARG(rb.x),   ARG(rb.w),
                               ARG(cvl),    ARG(v),      ARG(rho),  ARG(vf),   ARG(rf.rho), FLOE_CL_CELLQ_ARGS(cq[s]),
                               FLOE_CL_CELLT_ARGS(tf), ARG(selff), FLOE_CL_CELLT_ARGS(tb)};
            if ((st = api->cl_run(ctx, k, n, (int)(sizeof a / sizeof *a), a, bytes)))
                return st;
        }
    }
    return FLOE_OK;
}

int wcsph_cl_pressure_force(floe_ctx *ctx, const wcsph_pf *pf)
{
    void *k = api->cl_kernel(ctx, "wcsph", FILE_CL, "pressure_force");
    if (!k)
        return FLOE_ERR;
    float kc[4], per[4];
    floe_cl_consts(api->sim(ctx), kc, per);
    const float cv = pf->cv; /* XSPH in the same pass */
    cset f[FLOE_MAX_SETS], b[FLOE_MAX_SETS];
    int nf, nb, st;
    if ((st = floe_cl_sets(api, ctx, FLOE_SET_FLUID, f, &nf)) || (st = floe_cl_sets(api, ctx, FLOE_SET_BOUNDARY, b, &nb)))
        return st;
    floe_cl_cellq cq[FLOE_MAX_SETS];
    int cells = nf > 0;
    for (int s = 0; s < nf; s++)
        cells = cells && floe_cl_cell_query(api, ctx, &f[s], &cq[s]);
    if (cells) /* walk the cells (kernels/core/cells.h) */
        return pressure_force_cells(ctx, cv, f, nf, b, nb, cq);
    const int launches = nf > nb ? nf : nb;
    for (int s = 0; s < nf; s++) {
        st = FLOE_OK;
        void *x = floe_cl_attr(api, ctx, &f[s], "x", FLOE_VEC3, FLOE_READ, &st);
        void *acc = floe_cl_attr(api, ctx, &f[s], "a", FLOE_VEC3, FLOE_READ | FLOE_WRITE, &st);
        void *p = floe_cl_attr(api, ctx, &f[s], "p", FLOE_F32, FLOE_READ, &st);
        void *rho = floe_cl_attr(api, ctx, &f[s], "rho", FLOE_F32, FLOE_READ, &st);
        void *v = cv > 0.0f ? floe_cl_attr(api, ctx, &f[s], "v", FLOE_VEC3, FLOE_READ, &st) : x; /* a dummy without xsph */
        if (st)
            return st;
        uint32_t n = f[s].info.n;
        float rho0 = f[s].info.rest_density;
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
            /* p, rho of i and of each neighbour: P = p / rho^2 in the pass */
            double bytes = (cvl > 0.0f ? 64.0 : 52.0) * n + 4.0 * (rf.total + rb.total);
            floe_cl_arg a[] = {ARG(n), ARG(x), ARG(p), ARG(acc), ARG(kc), ARG(per), ARG(rho0),
                               ARG(rf.has), ARG(rb.has), ARG(rf.x), ARG(rf.w), ARG(pf_), ARG(rf.cnt), ARG(rf.idx), ARG(rf.pitch),
                               ARG(rb.x), ARG(rb.w), ARG(rb.cnt), ARG(rb.idx), ARG(rb.pitch), ARG(cvl), ARG(v), ARG(rho),
                               ARG(vf), ARG(rf.rho)};
            if ((st = api->cl_run(ctx, k, n, (int)(sizeof a / sizeof *a), a, bytes)))
                return st;
        }
    }
    return FLOE_OK;
}

/* ---- viscosity ----------------------------------------------------------- */

/* the artificial viscosity of fluid set fs against every fluid and boundary set */
int wcsph_cl_viscosity(floe_ctx *ctx, const floe_fluid *fs, const wcsph_visc *vi)
{
    void *k = api->cl_kernel(ctx, "wcsph", FILE_CL, "viscosity");
    const cset q = {fs->set, fs->info};
    return k ? floe_cl_force(api, ctx, k, &q, vi->boundary, vi->eps, vi->cf, vi->cb) : FLOE_ERR;
}

/* ---- continuity (continuity.c) -------------------------------------------- */

/* <grad rho> of every fluid set (co[s].dc > 0: the sums over each fluid
 * target into A, 9 per particle, then solved into G), then d rho / dt over
 * each pair of a fluid and a boundary target into D, then rho += dt D */
int wcsph_cl_continuity(floe_ctx *ctx, const wcsph_cont *co)
{
    void *kg = api->cl_kernel(ctx, "wcsph", FILE_CL, "cont_grad");
    void *ks = api->cl_kernel(ctx, "wcsph", FILE_CL, "cont_solve");
    void *kd = api->cl_kernel(ctx, "wcsph", FILE_CL, "continuity");
    void *ku = api->cl_kernel(ctx, "wcsph", FILE_CL, "cont_step");
    if (!kg || !ks || !kd || !ku)
        return FLOE_ERR;
    float kc[4], per[4];
    floe_cl_consts(api->sim(ctx), kc, per);
    cset f[FLOE_MAX_SETS], b[FLOE_MAX_SETS];
    void *G[FLOE_MAX_SETS], *D[FLOE_MAX_SETS];
    int nf, nb, st;
    if ((st = floe_cl_sets(api, ctx, FLOE_SET_FLUID, f, &nf)) || (st = floe_cl_sets(api, ctx, FLOE_SET_BOUNDARY, b, &nb)))
        return st;
    for (int s = 0; s < nf; s++) { /* scratch: G (zero without diffusion: the kernel skips it), D */
        char name[96];
        const size_t n = f[s].info.n ? f[s].info.n : 1;
        snprintf(name, sizeof name, "wcsph.G.%s", f[s].info.name);
        G[s] = api->cl_scratch(ctx, name, n * 12);
        snprintf(name, sizeof name, "wcsph.D.%s", f[s].info.name);
        D[s] = api->cl_scratch(ctx, name, n * 4);
        if (!G[s] || !D[s])
            return FLOE_ERR_NOMEM;
    }
    for (int s = 0; s < nf; s++) {
        uint32_t n = f[s].info.n;
        if (n == 0 || !(co[s].dc > 0.0f))
            continue;
        char name[96];
        snprintf(name, sizeof name, "wcsph.A.%s", f[s].info.name);
        void *A = api->cl_scratch(ctx, name, (size_t)n * 36);
        st = FLOE_OK;
        void *x = floe_cl_attr(api, ctx, &f[s], "x", FLOE_VEC3, FLOE_READ, &st);
        void *rho = floe_cl_attr(api, ctx, &f[s], "rho", FLOE_F32, FLOE_READ, &st);
        if (st || !A)
            return st ? st : FLOE_ERR_NOMEM;
        for (int l = 0; l < nf; l++) {
            floe_cl_row rf, rb;
            if ((st = floe_cl_rows(api, ctx, &f[s], f, nf, b, 0, l, FLOE_CL_ROW_RHO, &rf, &rb)))
                return st;
            int32_t init = l == 0;
            floe_cl_arg a[] = {ARG(n), ARG(x), ARG(rho), ARG(A), ARG(kc), ARG(per), ARG(init), ARG(rf.has), ARG(rf.x),
                               ARG(rf.w), ARG(rf.rho), ARG(rf.cnt), ARG(rf.idx), ARG(rf.pitch)};
            if ((st = api->cl_run(ctx, kg, n, (int)(sizeof a / sizeof *a), a, 52.0 * n + 4.0 * rf.total)))
                return st;
        }
        int32_t dim = co[s].dim;
        floe_cl_arg a[] = {ARG(n), ARG(A), ARG(G[s]), ARG(dim)};
        if ((st = api->cl_run(ctx, ks, n, 4, a, 48.0 * n)))
            return st;
    }
    const int launches = nf > nb ? nf : nb;
    for (int s = 0; s < nf; s++) {
        uint32_t n = f[s].info.n;
        if (n == 0)
            continue;
        st = FLOE_OK;
        void *x = floe_cl_attr(api, ctx, &f[s], "x", FLOE_VEC3, FLOE_READ, &st);
        void *v = floe_cl_attr(api, ctx, &f[s], "v", FLOE_VEC3, FLOE_READ, &st);
        void *rho = floe_cl_attr(api, ctx, &f[s], "rho", FLOE_F32, FLOE_READ, &st);
        if (st)
            return st;
        float rho0 = f[s].info.rest_density, dc = co[s].dc;
        for (int l = 0; l < launches; l++) {
            floe_cl_row rf, rb;
            if ((st = floe_cl_rows(api, ctx, &f[s], f, nf, b, nb, l, FLOE_CL_ROW_RHO | FLOE_CL_ROW_V, &rf, &rb)))
                return st;
            void *Gf = l < nf ? G[l] : G[s];
            int32_t init = l == 0;
            floe_cl_arg a[] = {ARG(n),      ARG(x),     ARG(v),     ARG(rho),    ARG(G[s]),   ARG(D[s]),  ARG(kc),
                               ARG(per),    ARG(rho0),  ARG(dc),    ARG(init),   ARG(rf.has), ARG(rb.has), ARG(rf.x),
                               ARG(rf.w),   ARG(rf.rho), ARG(rf.v), ARG(Gf),     ARG(rf.cnt), ARG(rf.idx), ARG(rf.pitch),
                               ARG(rb.x),   ARG(rb.w),  ARG(rb.cnt), ARG(rb.idx), ARG(rb.pitch)};
            double bytes = 48.0 * n + 4.0 * (rf.total + rb.total);
            if ((st = api->cl_run(ctx, kd, n, (int)(sizeof a / sizeof *a), a, bytes)))
                return st;
        }
    }
    for (int s = 0; s < nf; s++) { /* rho steps after every sum read the old values */
        uint32_t n = f[s].info.n;
        if (n == 0)
            continue;
        st = FLOE_OK;
        void *rho = floe_cl_attr(api, ctx, &f[s], "rho", FLOE_F32, FLOE_READ | FLOE_WRITE, &st);
        if (st)
            return st;
        float dt = co[s].dt;
        floe_cl_arg a[] = {ARG(n), ARG(rho), ARG(D[s]), ARG(dt)};
        if ((st = api->cl_run(ctx, ku, n, 4, a, 12.0 * n)))
            return st;
    }
    return FLOE_OK;
}
