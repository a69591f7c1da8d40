/* Floe module "wcsph": the OpenCL path of its stages, kernels in
 * kernels/wcsph/wcsph.cl. wcsph.c decodes the parameters (wcsph.h) and calls
 * in here; the equations and the arithmetic are those of its C path. Each
 * launch sums over one fluid target set and one boundary target set (the
 * usual scene has exactly one of each). Needs no OpenCL header: device
 * objects are void * through floe_api. */
#include "wcsph.h"

#include <floe/cl_module.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

FLOE_MODULE_API_EXTERN;

#define FILE_CL "wcsph.cl"
#define ARG(v) FLOE_CL_ARG(v)

typedef floe_cl_set cset; /* floe/cl_module.h */
static int list_sets(floe_ctx *ctx, floe_set_kind kind, cset *out, int *n)
{
    return floe_cl_sets(api, ctx, kind, out, n);
}

/* kernel constants as in wcsph.c: (1/H, sigma/H, (1e-6 H)^2, sigma) and
 * the periods (L, periodic) */
static void consts(const floe_sim_info *si, float kc[4], float per[4])
{
    floe_cl_consts(si, kc, per);
}

static void *attr_cl(floe_ctx *ctx, const cset *s, const char *name, floe_type t, unsigned acc, int *st)
{
    return floe_cl_attr(api, ctx, s, name, t, acc, st);
}

/* One neighbour list as kernel arguments; an absent target (has = 0) gets a
 * small dummy buffer in every slot, never read (no NULL buffer arguments). */
typedef struct row {
    void *x, *w, *cnt, *idx;
    uint32_t pitch;
    int32_t has;
    double total;
} row;

static void *dummy(floe_ctx *ctx) { return api->cl_scratch(ctx, "wcsph.none", 16); }

static int get_row(floe_ctx *ctx, const cset *q, const cset *t, const char *wname, row *r)
{
    memset(r, 0, sizeof *r);
    if (!t) {
        r->x = r->w = r->cnt = r->idx = dummy(ctx);
        return r->x ? FLOE_OK : FLOE_ERR_NOMEM;
    }
    r->has = 1;
    floe_cl_nlist nl;
    int st = api->cl_neighbours(ctx, q->set, t->set, &nl);
    if (st)
        return st;
    if (nl.n < q->info.n)
        return api->fail(ctx, FLOE_ERR, "stale neighbour lists for set '%s'", q->info.name);
    st = FLOE_OK;
    r->x = attr_cl(ctx, t, "x", FLOE_VEC3, FLOE_READ, &st);
    r->w = attr_cl(ctx, t, wname, FLOE_F32, FLOE_READ, &st);
    r->cnt = nl.count;
    r->idx = nl.idx;
    r->pitch = nl.pitch;
    r->total = nl.total;
    return st;
}

/* ---- density ------------------------------------------------------------ */

int wcsph_cl_density(const floe_stage_call *call);
int wcsph_cl_density(const floe_stage_call *call)
{
    floe_ctx *ctx = call->ctx;
    void *k = api->cl_kernel(ctx, "wcsph", FILE_CL, "density");
    if (!k)
        return FLOE_ERR;
    float kc[4], per[4];
    consts(api->sim(ctx), kc, per);
    cset f[FLOE_MAX_SETS], b[FLOE_MAX_SETS];
    int nf, nb, st;
    if ((st = list_sets(ctx, FLOE_SET_FLUID, f, &nf)) || (st = list_sets(ctx, FLOE_SET_BOUNDARY, b, &nb)))
        return st;
    const int launches = nf > nb ? nf : nb;
    for (int s = 0; s < nf; s++) {
        st = FLOE_OK;
        void *x = attr_cl(ctx, &f[s], "x", FLOE_VEC3, FLOE_READ, &st);
        void *m = attr_cl(ctx, &f[s], "m", FLOE_F32, FLOE_READ, &st);
        void *rho = attr_cl(ctx, &f[s], "rho", FLOE_F32, FLOE_WRITE, &st);
        if (st)
            return st;
        uint32_t n = f[s].info.n;
        float rho0 = f[s].info.rest_density;
        for (int l = 0; l < (launches ? launches : 1); l++) {
            row rf, rb;
            if ((st = get_row(ctx, &f[s], l < nf ? &f[l] : NULL, "m", &rf)) ||
                (st = get_row(ctx, &f[s], l < nb ? &b[l] : NULL, "V", &rb)))
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

/* ---- pressure ------------------------------------------------------------ */

int wcsph_cl_pressure(floe_ctx *ctx, const floe_fluid *fs, const wcsph_eos *e)
{
    void *k = api->cl_kernel(ctx, "wcsph", FILE_CL, "pressure");
    if (!k)
        return FLOE_ERR;
    const cset c = {fs->set, fs->info};
    int st = FLOE_OK;
    void *rho = attr_cl(ctx, &c, "rho", FLOE_F32, FLOE_READ, &st);
    void *p = attr_cl(ctx, &c, "p", FLOE_F32, FLOE_WRITE, &st);
    if (st)
        return st;
    uint32_t n = c.info.n;
    float B = e->B, inv_rho0 = e->inv_rho0, gf = e->gamma, lo = e->lo;
    int32_t gmode = gf == 7.0f ? 7 : gf == 1.0f ? 1 : 0;
    floe_cl_arg a[] = {ARG(n), ARG(rho), ARG(p), ARG(B), ARG(inv_rho0), ARG(gf), ARG(gmode), ARG(lo)};
    return api->cl_run(ctx, k, n, (int)(sizeof a / sizeof *a), a, 8.0 * n);
}

/* ---- pressure force ------------------------------------------------------ */

int wcsph_cl_pressure_force(floe_ctx *ctx, const wcsph_pf *pf)
{
    void *k = api->cl_kernel(ctx, "wcsph", FILE_CL, "pressure_force");
    void *kp = api->cl_kernel(ctx, "wcsph", FILE_CL, "prho2");
    if (!k || !kp)
        return FLOE_ERR;
    float kc[4], per[4];
    consts(api->sim(ctx), kc, per);
    const float cv = pf->cv; /* XSPH in the same pass */
    cset f[FLOE_MAX_SETS], b[FLOE_MAX_SETS];
    void *P[FLOE_MAX_SETS];
    int nf, nb, st;
    if ((st = list_sets(ctx, FLOE_SET_FLUID, f, &nf)) || (st = list_sets(ctx, FLOE_SET_BOUNDARY, b, &nb)))
        return st;
    /* P = p / rho^2 of every fluid particle, once per call, in scratch */
    for (int s = 0; s < nf; s++) {
        char name[96];
        snprintf(name, sizeof name, "wcsph.P.%s", f[s].info.name);
        uint32_t n = f[s].info.n;
        P[s] = api->cl_scratch(ctx, name, (size_t)n * 4);
        st = FLOE_OK;
        void *rho = attr_cl(ctx, &f[s], "rho", FLOE_F32, FLOE_READ, &st);
        void *p = attr_cl(ctx, &f[s], "p", FLOE_F32, FLOE_READ, &st);
        if (st || !P[s])
            return st ? st : FLOE_ERR_NOMEM;
        floe_cl_arg a[] = {ARG(n), ARG(rho), ARG(p), ARG(P[s])};
        if ((st = api->cl_run(ctx, kp, n, 4, a, 12.0 * n)))
            return st;
    }
    const int launches = nf > nb ? nf : nb;
    for (int s = 0; s < nf; s++) {
        st = FLOE_OK;
        void *x = attr_cl(ctx, &f[s], "x", FLOE_VEC3, FLOE_READ, &st);
        void *acc = attr_cl(ctx, &f[s], "a", FLOE_VEC3, FLOE_READ | FLOE_WRITE, &st);
        void *v = x, *rho = x; /* dummies without xsph */
        if (cv > 0.0f) {
            v = attr_cl(ctx, &f[s], "v", FLOE_VEC3, FLOE_READ, &st);
            rho = attr_cl(ctx, &f[s], "rho", FLOE_F32, FLOE_READ, &st);
        }
        if (st)
            return st;
        uint32_t n = f[s].info.n;
        float rho0 = f[s].info.rest_density;
        for (int l = 0; l < launches; l++) {
            row rf, rb;
            if ((st = get_row(ctx, &f[s], l < nf ? &f[l] : NULL, "m", &rf)) ||
                (st = get_row(ctx, &f[s], l < nb ? &b[l] : NULL, "V", &rb)))
                return st;
            void *Pf = l < nf ? P[l] : rf.x;
            void *vf = rf.x, *rhof = rf.x;
            float cvl = l < nf ? cv : 0.0f;
            if (cvl > 0.0f) {
                vf = attr_cl(ctx, &f[l], "v", FLOE_VEC3, FLOE_READ, &st);
                rhof = attr_cl(ctx, &f[l], "rho", FLOE_F32, FLOE_READ, &st);
                if (st)
                    return st;
            }
            double bytes = (cvl > 0.0f ? 60.0 : 44.0) * n + 4.0 * (rf.total + rb.total);
            floe_cl_arg a[] = {ARG(n), ARG(x), ARG(P[s]), ARG(acc), ARG(kc), ARG(per), ARG(rho0),
                               ARG(rf.has), ARG(rb.has), ARG(rf.x), ARG(rf.w), ARG(Pf), ARG(rf.cnt), ARG(rf.idx), ARG(rf.pitch),
                               ARG(rb.x), ARG(rb.w), ARG(rb.cnt), ARG(rb.idx), ARG(rb.pitch), ARG(cvl), ARG(v), ARG(rho),
                               ARG(vf), ARG(rhof)};
            if ((st = api->cl_run(ctx, k, n, (int)(sizeof a / sizeof *a), a, bytes)))
                return st;
        }
    }
    return FLOE_OK;
}

/* ---- viscosity ----------------------------------------------------------- */

/* the viscosity of query set fs[q] against every fluid and boundary set */
int wcsph_cl_viscosity(floe_ctx *ctx, const floe_fluid *fs, int nfs, int q, const wcsph_visc *vi)
{
    float kc[4], per[4];
    consts(api->sim(ctx), kc, per);
    void *k = api->cl_kernel(ctx, "wcsph", FILE_CL, "viscosity");
    if (!k)
        return FLOE_ERR;
    cset f[FLOE_MAX_SETS], b[FLOE_MAX_SETS];
    int nf = 0, nb = 0, st;
    for (int s = 0; s < nfs; s++)
        if (fs[s].info.n > 0)
            f[nf++] = (cset){fs[s].set, fs[s].info};
    if (vi->boundary && (st = list_sets(ctx, FLOE_SET_BOUNDARY, b, &nb)))
        return st;
    const int launches = nf > nb ? nf : nb;
    const cset c = {fs[q].set, fs[q].info};
    st = FLOE_OK;
    void *x = attr_cl(ctx, &c, "x", FLOE_VEC3, FLOE_READ, &st);
    void *v = attr_cl(ctx, &c, "v", FLOE_VEC3, FLOE_READ, &st);
    void *rho = attr_cl(ctx, &c, "rho", FLOE_F32, FLOE_READ, &st);
    void *acc = attr_cl(ctx, &c, "a", FLOE_VEC3, FLOE_READ | FLOE_WRITE, &st);
    if (st)
        return st;
    uint32_t n = c.info.n;
    int32_t artificial = vi->artificial;
    float eps = vi->eps, cf = vi->cf, cbi = vi->cb * c.info.rest_density;
    for (int l = 0; l < launches; l++) {
        row rf, rb;
        if ((st = get_row(ctx, &c, l < nf ? &f[l] : NULL, "m", &rf)) ||
            (st = get_row(ctx, &c, l < nb ? &b[l] : NULL, "V", &rb)))
            return st;
        void *rhof = rf.x, *vf = rf.x; /* dummies when absent */
        if (l < nf) {
            rhof = attr_cl(ctx, &f[l], "rho", FLOE_F32, FLOE_READ, &st);
            vf = attr_cl(ctx, &f[l], "v", FLOE_VEC3, FLOE_READ, &st);
            if (st)
                return st;
        }
        double bytes = 52.0 * n + 4.0 * (rf.total + rb.total);
        floe_cl_arg a[] = {ARG(n), ARG(x), ARG(v), ARG(rho), ARG(acc), ARG(kc), ARG(per), ARG(artificial),
                           ARG(eps), ARG(cf), ARG(cbi), ARG(rf.has), ARG(rb.has), ARG(rf.x), ARG(rf.w), ARG(rhof),
                           ARG(vf), ARG(rf.cnt), ARG(rf.idx), ARG(rf.pitch), ARG(rb.x), ARG(rb.w), ARG(rb.cnt),
                           ARG(rb.idx), ARG(rb.pitch)};
        if ((st = api->cl_run(ctx, k, n, (int)(sizeof a / sizeof *a), a, bytes)))
            return st;
    }
    return FLOE_OK;
}
