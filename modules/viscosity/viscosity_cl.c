/* Floe module "viscosity": the OpenCL path of its stages (run_cl), kernels
 * in kernels/viscosity/viscosity.cl. viscosity.c turns the parameters into
 * the coefficients (the same for both paths, and the dt limit is proposed
 * there) and calls visc_cl_pairs / visc_cl_xsph here instead of its C loops.
 * Each launch sums over one fluid target set and one boundary target set
 * (launches = max(fluid sets, boundary sets) per fluid set; one for the
 * usual scene) and adds to a. No host round trip: everything the kernels
 * read is an attribute on the device. Needs no OpenCL header. */
#include <floe/cl_module.h>
#include <floe/module.h>

#include <string.h>

const floe_api *visc_cl_api; /* set by the entry point in viscosity.c */
#define api visc_cl_api

#define MAXS 16
#define FILE_CL "viscosity.cl"
#define ARG(v) FLOE_CL_ARG(v)

int visc_cl_pairs(const floe_stage_call *call, int kind, double cf, double cb_nu, double eps_f);
int visc_cl_xsph(const floe_stage_call *call, double alpha, double balpha);

typedef floe_cl_set cset; /* floe/cl_module.h */

static int list_sets(floe_ctx *ctx, floe_set_kind kind, cset *out, int *n)
{
    return floe_cl_sets(api, ctx, kind, out, n);
}

/* kernel constants as kconst_make in viscosity.c: (1/H, sigma/H, (1e-6 H)^2,
 * sigma) and the periods (L on periodic axes, any periodic) */
static floe_kernel consts(const floe_sim_info *si, float kc[4], float per[4])
{
    return floe_cl_consts(si, kc, per);
}

static void *attr_cl(floe_ctx *ctx, const cset *s, const char *name, floe_type t, unsigned acc, int *st)
{
    return floe_cl_attr(api, ctx, s, name, t, acc, st);
}

/* One target set as kernel arguments. Fluid: x, m, rho, v; boundary: x, V.
 * An absent target (has = 0) gets a small dummy buffer in every slot (never
 * read: no NULL buffer arguments). */
typedef struct row {
    void *x, *w, *rho, *v, *cnt, *idx;
    uint32_t pitch;
    int32_t has;
    double total;
} row;

static int get_row(floe_ctx *ctx, const cset *q, const cset *t, row *r)
{
    memset(r, 0, sizeof *r);
    void *none = api->cl_scratch(ctx, "viscosity.none", 16);
    if (!none)
        return FLOE_ERR_NOMEM;
    r->x = r->w = r->rho = r->v = r->cnt = r->idx = none;
    if (!t)
        return FLOE_OK;
    r->has = 1;
    floe_cl_nlist nl;
    int st = api->cl_neighbours(ctx, q->set, t->set, &nl);
    if (st)
        return st;
    if (nl.n < q->info.n)
        return api->fail(ctx, FLOE_ERR, "stale neighbour lists for set '%s' (%u < %u particles)", q->info.name, nl.n,
                         q->info.n);
    st = FLOE_OK;
    r->x = attr_cl(ctx, t, "x", FLOE_VEC3, FLOE_READ, &st);
    if (t->info.kind == FLOE_SET_BOUNDARY) {
        r->w = attr_cl(ctx, t, "V", FLOE_F32, FLOE_READ, &st);
    } else {
        r->w = attr_cl(ctx, t, "m", FLOE_F32, FLOE_READ, &st);
        r->rho = attr_cl(ctx, t, "rho", FLOE_F32, FLOE_READ, &st);
        r->v = attr_cl(ctx, t, "v", FLOE_VEC3, FLOE_READ, &st);
    }
    r->cnt = nl.count;
    r->idx = nl.idx;
    r->pitch = nl.pitch;
    r->total = nl.total;
    return st;
}

/* a_i += cf * (fluid sum) + cb_i / rho_i * (boundary sum), cb_i = cb_nu rho0_i:
 * kname "visc_morris", "visc_monaghan", "visc_kim" or "xsph" */
static int launch_all(const floe_stage_call *call, const char *kname, float cf, double cb_nu, int with_boundary,
                      float eps)
{
    floe_ctx *ctx = call->ctx;
    void *k = api->cl_kernel(ctx, "viscosity", FILE_CL, kname);
    if (!k)
        return FLOE_ERR;
    float kc[4], per[4];
    consts(api->sim(ctx), kc, per);
    cset f[MAXS], b[MAXS];
    int nf, nb = 0, st;
    if ((st = list_sets(ctx, FLOE_SET_FLUID, f, &nf)))
        return st;
    if (with_boundary && (st = list_sets(ctx, FLOE_SET_BOUNDARY, b, &nb)))
        return st;
    const int launches = nf > nb ? nf : nb;
    for (int s = 0; s < nf; s++) {
        st = FLOE_OK;
        void *x = attr_cl(ctx, &f[s], "x", FLOE_VEC3, FLOE_READ, &st);
        void *v = attr_cl(ctx, &f[s], "v", FLOE_VEC3, FLOE_READ, &st);
        void *rho = attr_cl(ctx, &f[s], "rho", FLOE_F32, FLOE_READ, &st);
        void *acc = attr_cl(ctx, &f[s], "a", FLOE_VEC3, FLOE_READ | FLOE_WRITE, &st);
        if (st)
            return st;
        const uint32_t n = f[s].info.n;
        float cb = (float)(cb_nu * f[s].info.rest_density);
        for (int l = 0; l < launches; l++) {
            row rf, rb;
            if ((st = get_row(ctx, &f[s], l < nf ? &f[l] : NULL, &rf)) ||
                (st = get_row(ctx, &f[s], l < nb ? &b[l] : NULL, &rb)))
                return st;
            const double bytes = 52.0 * n + 4.0 * (rf.total + rb.total);
            floe_cl_arg a[] = {ARG(n),      ARG(x),      ARG(v),      ARG(rho),    ARG(acc),     ARG(kc),
                               ARG(per),    ARG(eps),    ARG(cf),     ARG(cb),     ARG(rf.has),  ARG(rb.has),
                               ARG(rf.x),   ARG(rf.w),   ARG(rf.rho), ARG(rf.v),   ARG(rf.cnt),  ARG(rf.idx),
                               ARG(rf.pitch), ARG(rb.x), ARG(rb.w),   ARG(rb.cnt), ARG(rb.idx),  ARG(rb.pitch)};
            if ((st = api->cl_run(ctx, k, n, (int)(sizeof a / sizeof *a), a, bytes)))
                return st;
        }
    }
    return FLOE_OK;
}

/* laminar (kind 0 morris, 1 monaghan) and kim (2): the enum of viscosity.c */
int visc_cl_pairs(const floe_stage_call *call, int kind, double cf, double cb_nu, double eps_f)
{
    static const char *const names[] = {"visc_morris", "visc_monaghan", "visc_kim"};
    if (kind < 0 || kind > 2)
        return api->fail(call->ctx, FLOE_ERR, "viscosity: unknown kind %d", kind);
    const floe_sim_info *si = api->sim(call->ctx);
    const float H = floe_kernel_make(si->dim, si->support).H;
    const float eps = (float)(eps_f * H * H); /* as run_visc: eps_f * kc.H * kc.H in double */
    return launch_all(call, names[kind], (float)cf, cb_nu, cb_nu != 0.0, eps);
}

int visc_cl_xsph(const floe_stage_call *call, double alpha, double balpha)
{
    const floe_sim_info *si = api->sim(call->ctx);
    float kc[4], per[4];
    consts(si, kc, per);
    /* as st_xsph: cf = 2 alpha / dt sigma, cb = 2 balpha / dt sigma rho0 */
    const float cf = (float)(2.0 * alpha / si->dt * kc[3]);
    return launch_all(call, "xsph", cf, 2.0 * balpha / si->dt * kc[3], balpha > 0.0, 0.0f);
}
