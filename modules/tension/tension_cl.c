/* Floe module "tension": the OpenCL path of its stages (run_cl), kernels in
 * kernels/tension/tension.cl. tension.c turns the parameters into the
 * coefficients (shared by both paths) and calls ten_cl_he / ten_cl_air /
 * ten_cl_akinci here instead of its C loops. Launches per fluid set and
 * pass: max(fluid sets, boundary sets) where a pass sums over both, the
 * number of fluid sets where it sums over fluid only (one each for the usual
 * scene): he 3, air_pressure 1, akinci 2. Intermediates stay on the device:
 * colour, colour_grad2 and normal are attributes (cl_attr), the Shepard sums
 * of eq. 34 and the partial gradient sums of several launches are scratch
 * (cl_scratch). Needs no OpenCL header. */
#include <floe/cl_module.h>
#include <floe/module.h>

#include <string.h>

const floe_api *ten_cl_api; /* set by the entry point in tension.c */
#define api ten_cl_api

#define MAXS 16
#define FILE_CL "tension.cl"
#define ARG(v) FLOE_CL_ARG(v)
#define NARGS(a) ((int)(sizeof(a) / sizeof *(a)))

int ten_cl_he(const floe_stage_call *call, float kappa, float wall);
int ten_cl_air(const floe_stage_call *call, float p_atm, float wall);
int ten_cl_akinci(const floe_stage_call *call, double gamma, double beta, double cC, double cA);

typedef floe_cl_set cset; /* floe/cl_module.h */

static int list_sets(floe_ctx *ctx, floe_set_kind kind, cset *out, int *n)
{
    return floe_cl_sets(api, ctx, kind, out, n);
}

/* kernel constants as kconst_make in tension.c: (1/H, sigma/H, (1e-6 H)^2,
 * sigma), the periods (L on periodic axes, any periodic); returns H */
static float consts(const floe_sim_info *si, float kc[4], float per[4])
{
    return floe_cl_consts(si, kc, per).H;
}

static void *attr_cl(floe_ctx *ctx, const cset *s, const char *name, floe_type t, unsigned acc, int *st)
{
    return floe_cl_attr(api, ctx, s, name, t, acc, st);
}

static void *dummy(floe_ctx *ctx) { return api->cl_scratch(ctx, "tension.none", 16); }

/* One target set as kernel arguments. Fluid: x, m, rho and (extra) one of
 * colour / colour_grad2 / normal; boundary: x, V. An absent target (has = 0)
 * gets the dummy buffer in every slot (never read: no NULL arguments). */
typedef struct row {
    void *x, *w, *rho, *extra, *cnt, *idx;
    uint32_t pitch;
    int32_t has;
    double total;
} row;

static int get_row(floe_ctx *ctx, const cset *q, const cset *t, const char *extra, floe_type etype, row *r)
{
    memset(r, 0, sizeof *r);
    void *none = dummy(ctx);
    if (!none)
        return FLOE_ERR_NOMEM;
    r->x = r->w = r->rho = r->extra = r->cnt = r->idx = none;
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
        if (extra)
            r->extra = attr_cl(ctx, t, extra, etype, FLOE_READ, &st);
    }
    r->cnt = nl.count;
    r->idx = nl.idx;
    r->pitch = nl.pitch;
    r->total = nl.total;
    return st;
}

typedef struct sets {
    cset f[MAXS], b[MAXS];
    int nf, nb;
    uint32_t nmax, total;
} sets;

static int get_sets(floe_ctx *ctx, sets *S)
{
    int st;
    if ((st = list_sets(ctx, FLOE_SET_FLUID, S->f, &S->nf)) || (st = list_sets(ctx, FLOE_SET_BOUNDARY, S->b, &S->nb)))
        return st;
    S->nmax = S->total = 0;
    for (int s = 0; s < S->nf; s++) {
        S->total += S->f[s].info.n;
        if (S->f[s].info.n > S->nmax)
            S->nmax = S->f[s].info.n;
    }
    return FLOE_OK;
}

/* ---- he: colour, gradient, force (three passes, each over every set) ----- */

int ten_cl_he(const floe_stage_call *call, float kappa, float wall)
{
    floe_ctx *ctx = call->ctx;
    void *kcol = api->cl_kernel(ctx, "tension", FILE_CL, "he_colour");
    void *kgrad = api->cl_kernel(ctx, "tension", FILE_CL, "he_gradient");
    void *kforce = api->cl_kernel(ctx, "tension", FILE_CL, "he_force");
    if (!kcol || !kgrad || !kforce)
        return FLOE_ERR;
    float kc[4], per[4];
    consts(api->sim(ctx), kc, per);
    sets S;
    int st;
    if ((st = get_sets(ctx, &S)))
        return st;
    if (S.nf == 0)
        return FLOE_OK;
    const int launches = S.nf > S.nb ? S.nf : S.nb;
    void *shep = api->cl_scratch(ctx, "tension.shep", (size_t)S.total * 4);
    void *acc = launches > 1 ? api->cl_scratch(ctx, "tension.acc", (size_t)S.nmax * 24) : dummy(ctx);
    if (!shep || !acc)
        return FLOE_ERR_NOMEM;
    const float coef = 0.25f * kappa;
    for (int pass = 0; pass < 3; pass++) {
        if (pass == 2 && kappa == 0.0f)
            break;
        for (int s = 0; s < S.nf; s++) {
            const cset *q = &S.f[s];
            uint32_t so = 0; /* this set's Shepard sums in the scratch */
            for (int t = 0; t < s; t++)
                so += S.f[t].info.n;
            const uint32_t n = q->info.n;
            st = FLOE_OK;
            void *x = attr_cl(ctx, q, "x", FLOE_VEC3, FLOE_READ, &st);
            void *m = attr_cl(ctx, q, "m", FLOE_F32, FLOE_READ, &st);
            void *rho = attr_cl(ctx, q, "rho", FLOE_F32, FLOE_READ, &st);
            if (st)
                return st;
            if (pass == 0) {
                void *col = attr_cl(ctx, q, "colour", FLOE_F32, FLOE_READ | FLOE_WRITE, &st);
                if (st)
                    return st;
                for (int l = 0; l < launches; l++) {
                    row rf, rb;
                    if ((st = get_row(ctx, q, l < S.nf ? &S.f[l] : NULL, NULL, FLOE_F32, &rf)) ||
                        (st = get_row(ctx, q, l < S.nb ? &S.b[l] : NULL, NULL, FLOE_F32, &rb)))
                        return st;
                    int32_t init = l == 0, fin = l == launches - 1;
                    floe_cl_arg a[] = {ARG(n),       ARG(x),      ARG(m),      ARG(rho),    ARG(col),    ARG(shep),
                                       ARG(so),      ARG(kc),     ARG(per),    ARG(wall),   ARG(init),   ARG(fin),
                                       ARG(rf.has),  ARG(rb.has), ARG(rf.x),   ARG(rf.w),   ARG(rf.rho), ARG(rf.cnt),
                                       ARG(rf.idx),  ARG(rf.pitch), ARG(rb.x), ARG(rb.w),   ARG(rb.cnt), ARG(rb.idx),
                                       ARG(rb.pitch)};
                    if ((st = api->cl_run(ctx, kcol, n, NARGS(a), a, 28.0 * n + 4.0 * (rf.total + rb.total))))
                        return st;
                }
            } else if (pass == 1) {
                void *g2 = attr_cl(ctx, q, "colour_grad2", FLOE_F32, FLOE_WRITE, &st);
                if (st)
                    return st;
                for (int l = 0; l < launches; l++) {
                    row rf, rb;
                    if ((st = get_row(ctx, q, l < S.nf ? &S.f[l] : NULL, "colour", FLOE_F32, &rf)) ||
                        (st = get_row(ctx, q, l < S.nb ? &S.b[l] : NULL, NULL, FLOE_F32, &rb)))
                        return st;
                    int32_t init = l == 0, fin = l == launches - 1;
                    floe_cl_arg a[] = {ARG(n),      ARG(x),      ARG(shep),   ARG(so),       ARG(g2),    ARG(acc),
                                       ARG(kc),     ARG(per),    ARG(wall),   ARG(init),     ARG(fin),   ARG(rf.has),
                                       ARG(rb.has), ARG(rf.x),   ARG(rf.w),   ARG(rf.rho),   ARG(rf.extra), ARG(rf.cnt),
                                       ARG(rf.idx), ARG(rf.pitch), ARG(rb.x), ARG(rb.w),     ARG(rb.cnt), ARG(rb.idx),
                                       ARG(rb.pitch)};
                    if ((st = api->cl_run(ctx, kgrad, n, NARGS(a), a, 20.0 * n + 4.0 * (rf.total + rb.total))))
                        return st;
                }
            } else {
                void *g2 = attr_cl(ctx, q, "colour_grad2", FLOE_F32, FLOE_READ, &st);
                void *acc_a = attr_cl(ctx, q, "a", FLOE_VEC3, FLOE_READ | FLOE_WRITE, &st);
                if (st)
                    return st;
                for (int l = 0; l < S.nf; l++) {
                    row rf;
                    if ((st = get_row(ctx, q, &S.f[l], "colour_grad2", FLOE_F32, &rf)))
                        return st;
                    floe_cl_arg a[] = {ARG(n),    ARG(x),    ARG(rho),      ARG(g2),     ARG(acc_a),  ARG(kc),
                                       ARG(per),  ARG(coef), ARG(rf.x),     ARG(rf.w),   ARG(rf.rho), ARG(rf.extra),
                                       ARG(rf.cnt), ARG(rf.idx), ARG(rf.pitch)};
                    if ((st = api->cl_run(ctx, kforce, n, NARGS(a), a, 36.0 * n + 4.0 * rf.total)))
                        return st;
                }
            }
        }
    }
    return FLOE_OK;
}

/* ---- air pressure (eq. 36) ---------------------------------------------------- */

int ten_cl_air(const floe_stage_call *call, float p_atm, float wall)
{
    floe_ctx *ctx = call->ctx;
    void *k = api->cl_kernel(ctx, "tension", FILE_CL, "air");
    if (!k)
        return FLOE_ERR;
    float kc[4], per[4];
    consts(api->sim(ctx), kc, per);
    sets S;
    int st;
    if ((st = get_sets(ctx, &S)))
        return st;
    const int nb = wall != 0.0f ? S.nb : 0; /* as st_air: walls only with a weight */
    const int launches = S.nf > nb ? S.nf : nb;
    for (int s = 0; s < S.nf; s++) {
        const cset *q = &S.f[s];
        const uint32_t n = q->info.n;
        st = FLOE_OK;
        void *x = attr_cl(ctx, q, "x", FLOE_VEC3, FLOE_READ, &st);
        void *rho = attr_cl(ctx, q, "rho", FLOE_F32, FLOE_READ, &st);
        void *acc = attr_cl(ctx, q, "a", FLOE_VEC3, FLOE_READ | FLOE_WRITE, &st);
        if (st)
            return st;
        for (int l = 0; l < launches; l++) {
            row rf, rb;
            if ((st = get_row(ctx, q, l < S.nf ? &S.f[l] : NULL, NULL, FLOE_F32, &rf)) ||
                (st = get_row(ctx, q, l < nb ? &S.b[l] : NULL, NULL, FLOE_F32, &rb)))
                return st;
            floe_cl_arg a[] = {ARG(n),      ARG(x),      ARG(rho),    ARG(acc),    ARG(kc),    ARG(per),
                               ARG(p_atm),  ARG(wall),   ARG(rf.has), ARG(rb.has), ARG(rf.x),  ARG(rf.w),
                               ARG(rf.rho), ARG(rf.cnt), ARG(rf.idx), ARG(rf.pitch), ARG(rb.x), ARG(rb.w),
                               ARG(rb.cnt), ARG(rb.idx), ARG(rb.pitch)};
            if ((st = api->cl_run(ctx, k, n, NARGS(a), a, 40.0 * n + 4.0 * (rf.total + rb.total))))
                return st;
        }
    }
    return FLOE_OK;
}

/* ---- akinci: normals, then cohesion + curvature + adhesion ------------------- */

int ten_cl_akinci(const floe_stage_call *call, double gamma, double beta, double cC, double cA)
{
    floe_ctx *ctx = call->ctx;
    void *knrm = api->cl_kernel(ctx, "tension", FILE_CL, "ak_normal");
    void *kforce = api->cl_kernel(ctx, "tension", FILE_CL, "ak_force");
    if (!knrm || !kforce)
        return FLOE_ERR;
    float kc[4], per[4];
    const float H = consts(api->sim(ctx), kc, per);
    sets S;
    int st;
    if ((st = get_sets(ctx, &S)))
        return st;
    const int nb = beta != 0.0 ? S.nb : 0; /* as st_akinci: adhesion only with beta */
    const int launches = S.nf > nb ? S.nf : nb;
    const float coh = (float)cC;
    for (int pass = 0; pass < 2; pass++) {
        for (int s = 0; s < S.nf; s++) {
            const cset *q = &S.f[s];
            const uint32_t n = q->info.n;
            st = FLOE_OK;
            void *x = attr_cl(ctx, q, "x", FLOE_VEC3, FLOE_READ, &st);
            if (pass == 0) {
                void *nrm = attr_cl(ctx, q, "normal", FLOE_VEC3, FLOE_READ | FLOE_WRITE, &st);
                if (st)
                    return st;
                for (int l = 0; l < S.nf; l++) {
                    row rf;
                    if ((st = get_row(ctx, q, &S.f[l], NULL, FLOE_F32, &rf)))
                        return st;
                    int32_t init = l == 0, fin = l == S.nf - 1;
                    floe_cl_arg a[] = {ARG(n),    ARG(x),   ARG(nrm),  ARG(kc),  ARG(per),    ARG(H),
                                       ARG(init), ARG(fin), ARG(rf.x), ARG(rf.w), ARG(rf.rho), ARG(rf.cnt),
                                       ARG(rf.idx), ARG(rf.pitch)};
                    if ((st = api->cl_run(ctx, knrm, n, NARGS(a), a, 24.0 * n + 4.0 * rf.total)))
                        return st;
                }
            } else {
                void *rho = attr_cl(ctx, q, "rho", FLOE_F32, FLOE_READ, &st);
                void *nrm = attr_cl(ctx, q, "normal", FLOE_VEC3, FLOE_READ, &st);
                void *acc = attr_cl(ctx, q, "a", FLOE_VEC3, FLOE_READ | FLOE_WRITE, &st);
                if (st)
                    return st;
                const double rho0 = q->info.rest_density;
                const float coef = (float)(gamma * rho0);     /* K_ij = 2 rho0 / (rho_i + rho_j) */
                const float coef2 = (float)(beta * rho0 * cA); /* Psi_b = rho0 V_b */
                for (int l = 0; l < launches; l++) {
                    row rf, rb;
                    if ((st = get_row(ctx, q, l < S.nf ? &S.f[l] : NULL, "normal", FLOE_VEC3, &rf)) ||
                        (st = get_row(ctx, q, l < nb ? &S.b[l] : NULL, NULL, FLOE_F32, &rb)))
                        return st;
                    floe_cl_arg a[] = {ARG(n),      ARG(x),      ARG(rho),      ARG(nrm),    ARG(acc),   ARG(kc),
                                       ARG(per),    ARG(H),      ARG(coh),      ARG(coef),   ARG(coef2), ARG(rf.has),
                                       ARG(rb.has), ARG(rf.x),   ARG(rf.w),     ARG(rf.rho), ARG(rf.extra), ARG(rf.cnt),
                                       ARG(rf.idx), ARG(rf.pitch), ARG(rb.x),   ARG(rb.w),   ARG(rb.cnt), ARG(rb.idx),
                                       ARG(rb.pitch)};
                    if ((st = api->cl_run(ctx, kforce, n, NARGS(a), a, 56.0 * n + 4.0 * (rf.total + rb.total))))
                        return st;
                }
            }
        }
    }
    return FLOE_OK;
}
