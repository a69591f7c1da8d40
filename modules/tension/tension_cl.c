/* Floe module "tension": the OpenCL path of its stages (run_cl), kernels in
 * kernels/tension/tension.cl. tension.c decodes the parameters
 * (tension.h) and calls ten_cl_he / ten_cl_air / ten_cl_akinci here instead
 * of its C loops. Launches per fluid set and
 * pass: max(fluid sets, boundary sets) where a pass sums over both, the
 * number of fluid sets where it sums over fluid only (one each for the usual
 * scene): he 3, air_pressure 1, akinci 2. Intermediates stay on the device:
 * colour, colour_grad2 and normal are attributes (cl_attr), the Shepard sums
 * of eq. 34 and the partial gradient sums of several launches are scratch
 * (cl_scratch). Needs no OpenCL header. */
#include "tension.h"

#include <floe/cl_module.h>

FLOE_MODULE_API_EXTERN;

#define FILE_CL "tension.cl"
#define ARG(v) FLOE_CL_ARG(v)
#define NARGS(a) ((int)(sizeof(a) / sizeof *(a)))

/* the non-empty fluid and boundary sets, the kernel constants (kc, per:
 * <floe/cl_module.h>) and H */
typedef struct sets {
    floe_cl_set f[FLOE_MAX_SETS], b[FLOE_MAX_SETS];
    int nf, nb;
    uint32_t nmax, total;
    float kc[4], per[4], H;
} sets;

static int get_sets(floe_ctx *ctx, sets *S)
{
    int st;
    if ((st = floe_cl_sets(api, ctx, FLOE_SET_FLUID, S->f, &S->nf)) ||
        (st = floe_cl_sets(api, ctx, FLOE_SET_BOUNDARY, S->b, &S->nb)))
        return st;
    S->H = floe_cl_consts(api->sim(ctx), S->kc, S->per).H;
    S->nmax = S->total = 0;
    for (int s = 0; s < S->nf; s++) {
        S->total += S->f[s].info.n;
        if (S->f[s].info.n > S->nmax)
            S->nmax = S->f[s].info.n;
    }
    return FLOE_OK;
}

/* the rows of launch l: fluid set l with rho, boundary set l < nb; *ex the
 * attribute `extra` of fluid set l (NULL extra or no such set: a dummy) */
static int rows(floe_ctx *ctx, const sets *S, const floe_cl_set *q, int l, int nb, const char *extra, floe_type etype,
                floe_cl_row *rf, floe_cl_row *rb, void **ex)
{
    int st = floe_cl_rows(api, ctx, q, S->f, S->nf, S->b, nb, l, FLOE_CL_ROW_RHO, rf, rb);
    *ex = rf->x;
    if (st == FLOE_OK && extra && rf->has)
        *ex = floe_cl_attr(api, ctx, &S->f[l], extra, etype, FLOE_READ, &st);
    return st;
}

/* ---- he: colour, gradient, force (three passes, each over every set) ----- */

/* pass 0 (colour, Shepard sums) or 1 (|grad c|^2) of query set q, whose
 * Shepard sums start at so in the scratch */
static int he_pass(floe_ctx *ctx, const sets *S, const floe_cl_set *q, uint32_t so, int pass, void *shep, void *acc,
                   float wall, void *k)
{
    const uint32_t n = q->info.n;
    const int launches = S->nf > S->nb ? S->nf : S->nb;
    int st = FLOE_OK;
    void *x = floe_cl_attr(api, ctx, q, "x", FLOE_VEC3, FLOE_READ, &st);
    void *m = floe_cl_attr(api, ctx, q, "m", FLOE_F32, FLOE_READ, &st);
    void *rho = floe_cl_attr(api, ctx, q, "rho", FLOE_F32, FLOE_READ, &st);
    void *out = pass == 0 ? floe_cl_attr(api, ctx, q, "colour", FLOE_F32, FLOE_READ | FLOE_WRITE, &st)
                          : floe_cl_attr(api, ctx, q, "colour_grad2", FLOE_F32, FLOE_WRITE, &st);
    if (st)
        return st;
    for (int l = 0; l < launches; l++) {
        floe_cl_row rf, rb;
        void *ex;
        if ((st = rows(ctx, S, q, l, S->nb, pass == 0 ? NULL : "colour", FLOE_F32, &rf, &rb, &ex)))
            return st;
        int32_t init = l == 0, fin = l == launches - 1;
        const double pairs = 4.0 * (rf.total + rb.total);
        if (pass == 0) {
            floe_cl_arg a[] = {ARG(n),       ARG(x),      ARG(m),      ARG(rho),    ARG(out),    ARG(shep),
                               ARG(so),      ARG(S->kc),  ARG(S->per), ARG(wall),   ARG(init),   ARG(fin),
                               ARG(rf.has),  ARG(rb.has), ARG(rf.x),   ARG(rf.w),   ARG(rf.rho), ARG(rf.cnt),
                               ARG(rf.idx),  ARG(rf.pitch), ARG(rb.x), ARG(rb.w),   ARG(rb.cnt), ARG(rb.idx),
                               ARG(rb.pitch)};
            st = api->cl_run(ctx, k, n, NARGS(a), a, 28.0 * n + pairs);
        } else {
            floe_cl_arg a[] = {ARG(n),      ARG(x),      ARG(shep),   ARG(so),       ARG(out),   ARG(acc),
                               ARG(S->kc),  ARG(S->per), ARG(wall),   ARG(init),     ARG(fin),   ARG(rf.has),
                               ARG(rb.has), ARG(rf.x),   ARG(rf.w),   ARG(rf.rho),   ARG(ex), ARG(rf.cnt),
                               ARG(rf.idx), ARG(rf.pitch), ARG(rb.x), ARG(rb.w),     ARG(rb.cnt), ARG(rb.idx),
                               ARG(rb.pitch)};
            st = api->cl_run(ctx, k, n, NARGS(a), a, 20.0 * n + pairs);
        }
        if (st)
            return st;
    }
    return FLOE_OK;
}

/* pass 2: the force, fluid targets only */
static int he_force(floe_ctx *ctx, const sets *S, const floe_cl_set *q, float coef, void *k)
{
    const uint32_t n = q->info.n;
    int st = FLOE_OK;
    void *x = floe_cl_attr(api, ctx, q, "x", FLOE_VEC3, FLOE_READ, &st);
    void *rho = floe_cl_attr(api, ctx, q, "rho", FLOE_F32, FLOE_READ, &st);
    void *g2 = floe_cl_attr(api, ctx, q, "colour_grad2", FLOE_F32, FLOE_READ, &st);
    void *acc_a = floe_cl_attr(api, ctx, q, "a", FLOE_VEC3, FLOE_READ | FLOE_WRITE, &st);
    if (st)
        return st;
    for (int l = 0; l < S->nf; l++) {
        floe_cl_row rf, rb;
        void *ex;
        if ((st = rows(ctx, S, q, l, 0, "colour_grad2", FLOE_F32, &rf, &rb, &ex)))
            return st;
        floe_cl_arg a[] = {ARG(n),    ARG(x),    ARG(rho),      ARG(g2),     ARG(acc_a),  ARG(S->kc),
                           ARG(S->per), ARG(coef), ARG(rf.x),   ARG(rf.w),   ARG(rf.rho), ARG(ex),
                           ARG(rf.cnt), ARG(rf.idx), ARG(rf.pitch)};
        if ((st = api->cl_run(ctx, k, n, NARGS(a), a, 36.0 * n + 4.0 * rf.total)))
            return st;
    }
    return FLOE_OK;
}

/* MPI (docs/mpi.md): the ghosts of device attribute `name` of every fluid
 * set from their owners, between passes that read what the pass before
 * wrote (collective: every fluid set, also one empty on this rank; the
 * core stages the rows through host memory) */
static int halo_cl(floe_ctx *ctx, int ranks, const char *name, floe_type t)
{
    if (ranks < 2)
        return FLOE_OK;
    floe_set s[FLOE_MAX_SETS];
    const int k = api->set_list(ctx, FLOE_SET_FLUID, s, FLOE_MAX_SETS);
    int st = FLOE_OK;
    for (int i = 0; i < k && i < FLOE_MAX_SETS && st == FLOE_OK; i++) {
        void *m = api->cl_attr(ctx, s[i], name, t, FLOE_READ | FLOE_WRITE);
        st = floe_halo(api, ctx, s[i], m, t == FLOE_F32 ? sizeof(float) : 3 * sizeof(float));
    }
    return st;
}

int ten_cl_he(floe_ctx *ctx, const ten_he *p)
{
    void *kpass[2] = {api->cl_kernel(ctx, "tension", FILE_CL, "he_colour"),
                      api->cl_kernel(ctx, "tension", FILE_CL, "he_gradient")};
    void *kforce = api->cl_kernel(ctx, "tension", FILE_CL, "he_force");
    if (!kpass[0] || !kpass[1] || !kforce)
        return FLOE_ERR;
    sets S;
    int st;
    if ((st = get_sets(ctx, &S)))
        return st;
    const int ranks = floe_ranks(api, ctx); /* MPI: a rank without particles still takes part in the halos */
    if (S.nf == 0 && ranks < 2)
        return FLOE_OK;
    const int launches = S.nf > S.nb ? S.nf : S.nb;
    void *shep = api->cl_scratch(ctx, "tension.shep", (size_t)S.total * 4);
    void *acc = api->cl_scratch(ctx, "tension.acc", launches > 1 ? (size_t)S.nmax * 24 : 16);
    if (!shep || !acc)
        return FLOE_ERR_NOMEM;
    for (int pass = 0; pass < (p->force ? 3 : 2); pass++) {
        if (pass > 0 && (st = halo_cl(ctx, ranks, pass == 1 ? "colour" : "colour_grad2", FLOE_F32)))
            return st;
        uint32_t so = 0; /* each set's Shepard sums in the scratch */
        for (int s = 0; s < S.nf; so += S.f[s].info.n, s++) {
            st = pass < 2 ? he_pass(ctx, &S, &S.f[s], so, pass, shep, acc, p->wall, kpass[pass])
                          : he_force(ctx, &S, &S.f[s], p->coef, kforce);
            if (st)
                return st;
        }
    }
    return FLOE_OK;
}

/* ---- air pressure (eq. 36) ---------------------------------------------------- */

int ten_cl_air(floe_ctx *ctx, const ten_air *p)
{
    void *k = api->cl_kernel(ctx, "tension", FILE_CL, "air");
    if (!k)
        return FLOE_ERR;
    sets S;
    int st;
    if ((st = get_sets(ctx, &S)))
        return st;
    const int nb = p->wall != 0.0f ? S.nb : 0; /* as the C path: walls only with a weight */
    const int launches = S.nf > nb ? S.nf : nb;
    const float p_atm = p->coef, wall = p->wall;
    for (int s = 0; s < S.nf; s++) {
        const floe_cl_set *q = &S.f[s];
        const uint32_t n = q->info.n;
        st = FLOE_OK;
        void *x = floe_cl_attr(api, ctx, q, "x", FLOE_VEC3, FLOE_READ, &st);
        void *rho = floe_cl_attr(api, ctx, q, "rho", FLOE_F32, FLOE_READ, &st);
        void *acc = floe_cl_attr(api, ctx, q, "a", FLOE_VEC3, FLOE_READ | FLOE_WRITE, &st);
        if (st)
            return st;
        for (int l = 0; l < launches; l++) {
            floe_cl_row rf, rb;
            void *ex;
            if ((st = rows(ctx, &S, q, l, nb, NULL, FLOE_F32, &rf, &rb, &ex)))
                return st;
            floe_cl_arg a[] = {ARG(n),      ARG(x),      ARG(rho),    ARG(acc),    ARG(S.kc),  ARG(S.per),
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

/* pass 0: n = H sum_j V_j grad W_ij over the fluid targets of q */
static int ak_normal(floe_ctx *ctx, const sets *S, const floe_cl_set *q, void *k)
{
    const uint32_t n = q->info.n;
    int st = FLOE_OK;
    void *x = floe_cl_attr(api, ctx, q, "x", FLOE_VEC3, FLOE_READ, &st);
    void *nrm = floe_cl_attr(api, ctx, q, "normal", FLOE_VEC3, FLOE_READ | FLOE_WRITE, &st);
    if (st)
        return st;
    for (int l = 0; l < S->nf; l++) {
        floe_cl_row rf, rb;
        void *ex;
        if ((st = rows(ctx, S, q, l, 0, NULL, FLOE_F32, &rf, &rb, &ex)))
            return st;
        int32_t init = l == 0, fin = l == S->nf - 1;
        floe_cl_arg a[] = {ARG(n),    ARG(x),   ARG(nrm),  ARG(S->kc),  ARG(S->per), ARG(S->H),
                           ARG(init), ARG(fin), ARG(rf.x), ARG(rf.w), ARG(rf.rho), ARG(rf.cnt),
                           ARG(rf.idx), ARG(rf.pitch)};
        if ((st = api->cl_run(ctx, k, n, NARGS(a), a, 24.0 * n + 4.0 * rf.total)))
            return st;
    }
    return FLOE_OK;
}

/* pass 1: cohesion + curvature against the fluid targets, adhesion against
 * the boundary targets (nb of them) */
static int ak_force(floe_ctx *ctx, const sets *S, const floe_cl_set *q, int nb, const ten_akinci *p, void *k)
{
    const uint32_t n = q->info.n;
    const int launches = S->nf > nb ? S->nf : nb;
    int st = FLOE_OK;
    void *x = floe_cl_attr(api, ctx, q, "x", FLOE_VEC3, FLOE_READ, &st);
    void *rho = floe_cl_attr(api, ctx, q, "rho", FLOE_F32, FLOE_READ, &st);
    void *nrm = floe_cl_attr(api, ctx, q, "normal", FLOE_VEC3, FLOE_READ, &st);
    void *acc = floe_cl_attr(api, ctx, q, "a", FLOE_VEC3, FLOE_READ | FLOE_WRITE, &st);
    if (st)
        return st;
    float coef, coef2, coh = p->coh, curv = p->curv;
    ten_akinci_coef(p, q->info.rest_density, &coef, &coef2);
    for (int l = 0; l < launches; l++) {
        floe_cl_row rf, rb;
        void *ex;
        if ((st = rows(ctx, S, q, l, nb, "normal", FLOE_VEC3, &rf, &rb, &ex)))
            return st;
        floe_cl_arg a[] = {ARG(n),      ARG(x),      ARG(rho),      ARG(nrm),    ARG(acc),   ARG(S->kc),
                           ARG(S->per), ARG(S->H),   ARG(coh),      ARG(curv),   ARG(coef),  ARG(coef2), ARG(rf.has),
                           ARG(rb.has), ARG(rf.x),   ARG(rf.w),     ARG(rf.rho), ARG(ex), ARG(rf.cnt),
                           ARG(rf.idx), ARG(rf.pitch), ARG(rb.x),   ARG(rb.w),   ARG(rb.cnt), ARG(rb.idx),
                           ARG(rb.pitch)};
        if ((st = api->cl_run(ctx, k, n, NARGS(a), a, 56.0 * n + 4.0 * (rf.total + rb.total))))
            return st;
    }
    return FLOE_OK;
}

int ten_cl_akinci(floe_ctx *ctx, const ten_akinci *p)
{
    void *knrm = api->cl_kernel(ctx, "tension", FILE_CL, "ak_normal");
    void *kforce = api->cl_kernel(ctx, "tension", FILE_CL, "ak_force");
    if (!knrm || !kforce)
        return FLOE_ERR;
    sets S;
    int st;
    if ((st = get_sets(ctx, &S)))
        return st;
    const int nb = p->adhesion ? S.nb : 0; /* as the C path: adhesion only with beta */
    const int ranks = floe_ranks(api, ctx);
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1 && (st = halo_cl(ctx, ranks, "normal", FLOE_VEC3)))
            return st;
        for (int s = 0; s < S.nf; s++)
            if ((st = pass == 0 ? ak_normal(ctx, &S, &S.f[s], knrm) : ak_force(ctx, &S, &S.f[s], nb, p, kforce)))
                return st;
    }
    return FLOE_OK;
}
