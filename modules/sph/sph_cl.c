/* Floe module "sph": the OpenCL path of its stages, kernels in
 * kernels/sph/sph.cl. sph.c decodes the parameters (sph.h) and calls in
 * here; the equations and the arithmetic are those of its C path. Each
 * launch sums over one fluid target set and one boundary target set
 * (<floe/cl_module.h> floe_cl_rows; the usual scene has one of each). */
#include "sph.h"

#include <floe/cl_module.h>

FLOE_MODULE_API_EXTERN;

#define FILE_CL "sph.cl"
#define ARG(v) FLOE_CL_ARG(v)

/* the density of fluid set q over cell walks: launch l sums over q's l-th
 * fluid and l-th boundary target, as the list launches do */
static int density_cells(floe_ctx *ctx, const floe_cl_set *q, const floe_cl_set *f, int nf, const floe_cl_set *b,
                         int nb, const floe_cl_cellq *cq, void *x, void *m, void *rho)
{
    float kc[4], per[4];
    floe_cl_consts(api->sim(ctx), kc, per);
    void *k = api->cl_kernel(ctx, "sph", FILE_CL, "density_cells");
    if (!k)
        return FLOE_ERR;
    const int launches = nf > nb ? nf : nb;
    uint32_t n = q->info.n;
    float rho0 = q->info.rest_density;
    for (int l = 0; l < (launches ? launches : 1); l++) {
        floe_cl_row rf, rb;
        floe_cl_cellt cf, cb;
        int st;
        if ((st = floe_cl_cell_rows(api, ctx, f, nf, b, nb, l, 0, &rf, &rb, &cf, &cb)))
            return st;
        int32_t init = l == 0, fin = l == (launches ? launches : 1) - 1;
        int32_t selff = l < nf && f[l].set.id == q->set.id;
        floe_cl_arg a[] = {ARG(n),     ARG(x),     ARG(m),      ARG(rho),    ARG(kc),   ARG(per),
                           ARG(rho0),  ARG(init),  ARG(fin),    ARG(cf.has), ARG(cb.has), ARG(rf.x),
                           ARG(rf.w),  ARG(rb.x),  ARG(rb.w),   FLOE_CL_CELLQ_ARGS(*cq), FLOE_CL_CELLT_ARGS(cf),
                           ARG(selff), FLOE_CL_CELLT_ARGS(cb)};
        if ((st = api->cl_run(ctx, k, n, (int)(sizeof a / sizeof *a), a, 24.0 * n)))
            return st;
    }
    return FLOE_OK;
}

int sph_cl_density(floe_ctx *ctx)
{
    void *k = api->cl_kernel(ctx, "sph", FILE_CL, "density");
    if (!k)
        return FLOE_ERR;
    float kc[4], per[4];
    floe_cl_consts(api->sim(ctx), kc, per);
    floe_cl_set f[FLOE_MAX_SETS], b[FLOE_MAX_SETS];
    int nf, nb, st;
    if ((st = floe_cl_sets(api, ctx, FLOE_SET_FLUID, f, &nf)) || (st = floe_cl_sets(api, ctx, FLOE_SET_BOUNDARY, b, &nb)))
        return st;
    const int launches = nf > nb ? nf : nb;
    for (int s = 0; s < nf; s++) {
        st = FLOE_OK;
        void *x = floe_cl_attr(api, ctx, &f[s], "x", FLOE_VEC3, FLOE_READ, &st);
        void *m = floe_cl_attr(api, ctx, &f[s], "m", FLOE_F32, FLOE_READ, &st);
        void *rho = floe_cl_attr(api, ctx, &f[s], "rho", FLOE_F32, FLOE_WRITE, &st);
        if (st)
            return st;
        floe_cl_cellq cq;
        if (floe_cl_cell_query(api, ctx, &f[s], &cq)) { /* walk the cells (kernels/core/cells.h) */
            if ((st = density_cells(ctx, &f[s], f, nf, b, nb, &cq, x, m, rho)))
                return st;
            continue;
        }
        uint32_t n = f[s].info.n;
        float rho0 = f[s].info.rest_density;
        for (int l = 0; l < (launches ? launches : 1); l++) {
            floe_cl_row rf, rb;
            if ((st = floe_cl_rows(api, ctx, &f[s], f, nf, b, nb, l, 0, &rf, &rb)))
                return st;
            int32_t init = l == 0, fin = l == (launches ? launches : 1) - 1;
            double bytes = 24.0 * n + 4.0 * (rf.total + rb.total);
            floe_cl_arg a[] = {ARG(n), ARG(x), ARG(m), ARG(rho), ARG(kc), ARG(per), ARG(rho0), ARG(init), ARG(fin),
                               ARG(rf.has), ARG(rb.has), ARG(rf.x), ARG(rf.w), ARG(rf.cnt), ARG(rf.idx), ARG(rf.pitch),
                               ARG(rb.x), ARG(rb.w), ARG(rb.cnt), ARG(rb.idx), ARG(rb.pitch)};
            if ((st = api->cl_run(ctx, k, n, (int)(sizeof a / sizeof *a), a, bytes)))
                return st;
        }
    }
    return FLOE_OK;
}

/* XSPH of fluid set fs (cf, cb > 0: its boundary term too; FLOE_FORCE_ARGS' eps unused) */
int sph_cl_xsph(floe_ctx *ctx, const floe_fluid *fs, const sph_xsph *xs)
{
    void *k = api->cl_kernel(ctx, "sph", FILE_CL, "xsph");
    const floe_cl_set q = {fs->set, fs->info};
    return k ? floe_cl_force(api, ctx, k, &q, xs->cb > 0.0f, 0.0f, xs->cf, xs->cb) : FLOE_ERR;
}
