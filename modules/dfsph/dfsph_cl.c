/* Floe module "dfsph": the OpenCL path of dfsph.solve (run_cl), kernels in
 * kernels/dfsph/dfsph.cl. Same equations, parameters and arithmetic as the
 * C path in dfsph.c; every Jacobi iteration of both solvers runs on the
 * device.
 *
 * One step (one fluid set; several boundary sets are summed launch by
 * launch):
 *
 *   setup_b (per boundary set)   Gb, neighbour counts, (x, m) packed, u = v, max |v|^2
 *   setup_f                      D, few, lag (and the start budgets dfsph_start_lag)
 *   divergence-free solve        source (S = Drho/Dt of u, P from dfsph_kv), iterations, apply (kv = dt P)
 *   predict                      u += dt a
 *   constant density solve       source (S = rho* - rho0 - lag, P from p), iterations, apply (a, p)
 *   per iteration:  accel        a^p of P
 *                   update       F, the next iterate (into Pold), per-group error sums
 *                   reduce       from the solve's minimum iteration on: the group sums into
 *                                one float, read back (4 bytes, blocking)
 *
 * The stopping rule is the C path's: the first iteration at or past the
 * minimum with error <= tolerance, or the maximum. Each iteration from the
 * minimum on waits for its 4 bytes (iisph_cl.c hides that wait by
 * enqueueing the next iteration speculatively; not done here).
 *
 * A scene with several non-empty fluid sets runs the C solve (the backend
 * copies the data). Under MPI (docs/mpi.md) the C solve's exchanges: the
 * ghosts' gamma, P, a^p and u from their owners (api->halo on the device
 * buffers), the owned particles' errors summed over ranks. Needs no
 * OpenCL header: device objects are void * through floe_api; the two
 * runtime entry points used directly (a read, a fill) come from api->cl_fn
 * with their C signatures below. */
#include "dfsph.h"

#include <floe/cl_module.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FILE_CL "dfsph.cl"
#define ARG(v) FLOE_CL_ARG(v)
#define WGS 128 /* work-group size of api->cl_run (the kernels' reductions assume it) */

typedef int32_t (*fn_read_t)(void *q, void *mem, uint32_t blocking, size_t off, size_t size, void *ptr,
                             uint32_t nwait, void *const *wait, void **ev);
typedef int32_t (*fn_fill_t)(void *q, void *mem, const void *pat, size_t pat_size, size_t off, size_t size,
                             uint32_t nwait, void *const *wait, void **ev);

struct dfsph_cl {
    fn_read_t read;
    fn_fill_t fill;
    void *queue;
};

void dfsph_cl_free(struct dfsph_cl *c) { free(c); }

static struct dfsph_cl *cl_state(floe_ctx *ctx, struct dfsph_cl **cp)
{
    struct dfsph_cl *c = *cp ? *cp : calloc(1, sizeof *c);
    if (c && !*cp) {
        c->read = (fn_read_t)api->cl_fn("clEnqueueReadBuffer");
        c->fill = (fn_fill_t)api->cl_fn("clEnqueueFillBuffer");
        c->queue = api->cl_queue(ctx);
        if (c->read && c->fill && c->queue)
            *cp = c;
        else {
            free(c);
            api->fail(ctx, FLOE_ERR, "OpenCL: the runtime lacks an entry point dfsph needs");
            return NULL;
        }
    } else if (!c) {
        api->fail(ctx, FLOE_ERR_NOMEM, "out of memory");
    }
    return c;
}

static int cl_check(floe_ctx *ctx, int32_t e, const char *what)
{
    return e == 0 ? FLOE_OK : api->fail(ctx, FLOE_ERR, "OpenCL: %s failed (error %d)", what, (int)e);
}

/* the device buffers and kernels of one step */
typedef struct solver {
    floe_ctx *ctx;
    struct dfsph_cl *cl;
    const dfsph_cfg *c;
    void *k_source, *k_accel, *k_update, *k_reduce, *k_apply, *k_source_err;
    uint32_t n, nown, nparts, pitch; /* nown: the particles this rank owns (MPI), n in one process */
    int ranks;
    double owned_total;              /* MPI: the owned particles of every rank */
    floe_set set;
    float kc[4], per[4], dt, rho0;
    void *xm, *u, *gb, *co, *ap, *S, *P, *Pold, *part, *red, *cnt, *idx;
    void *rho, *v, *a, *p, *kv;
    void *gam;   /* gradient_correction: gamma per particle (else any buffer, unread) */
    int32_t kgc; /* gradient_correction */
    double pairs;
} solver;

/* The mean error from the work groups' sums in part: reduced on the device,
 * read back (blocking), summed over the ranks, times f (dt for the
 * divergence solve's rate) */
static int read_error(solver *S, float f, double *err)
{
    floe_ctx *ctx = S->ctx;
    const uint32_t slot = 0;
    floe_cl_arg ra[] = {ARG(S->nparts), ARG(S->part), ARG(S->red), ARG(slot)};
    int st;
    if ((st = api->cl_run(ctx, S->k_reduce, WGS, 4, ra, 4.0 * S->nparts)))
        return st;
    float e = 0.0f;
    if ((st = cl_check(ctx, S->cl->read(S->cl->queue, S->red, 1, 0, sizeof e, &e, 0, NULL, NULL),
                       "reading the density error")))
        return st;
    double es = e; /* MPI: the owned particles' errors of every rank */
    if (S->ranks > 1 && (st = floe_reduce(api, ctx, &es, 1, FLOE_REDUCE_SUM)))
        return st;
    *err = f * es / (S->ranks > 1 ? S->owned_total : (double)S->n);
    return FLOE_OK;
}

/* One solve: source and warm start from `init` (dfsph_kv or p), relaxed
 * Jacobi until the mean error is at most tol (after min_it) or max_it,
 * then u += dt a^p of the final P and the solve's outputs. */
static int solve(solver *S, int divergence, int64_t min_it, int64_t max_it, double tol, int64_t *it_out,
                 double *err)
{
    floe_ctx *ctx = S->ctx;
    const dfsph_cfg *c = S->c;
    const uint32_t n = S->n;
    const float dt = S->dt, dtk = divergence ? S->dt : S->dt * S->dt, warm = c->warm, omega = c->omega;
    const int32_t div = divergence;
    void *init = divergence ? S->kv : S->p;
    int st;
    const double row = 4.0 * S->pairs;
    floe_cl_arg sa[] = {ARG(n),    ARG(S->xm), ARG(S->u),    ARG(S->gb),  ARG(S->co), ARG(S->rho),
                        ARG(init), ARG(div),   ARG(dt),      ARG(warm),   ARG(S->rho0), ARG(S->S),
                        ARG(S->P), ARG(S->Pold), ARG(S->kc), ARG(S->per), ARG(S->cnt), ARG(S->idx),
                        ARG(S->pitch), ARG(S->kgc), ARG(S->gam)};
    if ((st = api->cl_run(ctx, S->k_source, n, (int)(sizeof sa / sizeof *sa), sa, 100.0 * n + 5.0 * row)) ||
        (S->ranks > 1 && (st = floe_halo(api, ctx, S->set, S->P, sizeof(float)))))
        return st;
    if (divergence && min_it == 0) { /* divergence_min_iterations 0: the error before any iteration */
        floe_cl_arg ea[] = {ARG(n), ARG(S->S), ARG(S->co), ARG(S->rho0), ARG(S->nown), ARG(S->part)};
        if ((st = api->cl_run(ctx, S->k_source_err, n, (int)(sizeof ea / sizeof *ea), ea, 24.0 * n)) ||
            (st = read_error(S, dtk, err)))
            return st;
        if (*err <= tol) { /* no iteration: u and the kept P (dfsph_kv) stay as they are */
            *it_out = 0;
            return FLOE_OK;
        }
    }
    int64_t it = 0;
    float om = 1.0f;
    for (;;) {
        floe_cl_arg aa[] = {ARG(n),     ARG(S->xm),  ARG(S->P),   ARG(S->gb),  ARG(S->ap),     ARG(S->kc),
                            ARG(S->per), ARG(S->cnt), ARG(S->idx), ARG(S->pitch), ARG(S->kgc), ARG(S->gam)};
        if ((st = api->cl_run(ctx, S->k_accel, n, (int)(sizeof aa / sizeof *aa), aa, 52.0 * n + 5.0 * row)) ||
            (S->ranks > 1 && (st = floe_halo(api, ctx, S->set, S->ap, 4 * sizeof(float)))))
            return st;
        om = floe_cheb_weight(c->cheb_rho, it + 1, c->cheb_delay, om);
        floe_cl_arg ua[] = {ARG(n),       ARG(S->xm),  ARG(S->ap),  ARG(S->gb),    ARG(S->co),   ARG(S->S),
                            ARG(S->P),    ARG(S->Pold), ARG(S->part), ARG(dtk),    ARG(div),     ARG(omega),
                            ARG(om),      ARG(S->rho0), ARG(S->kc), ARG(S->per),   ARG(S->cnt),  ARG(S->idx),
                            ARG(S->pitch), ARG(S->kgc), ARG(S->gam), ARG(S->nown)};
        if ((st = api->cl_run(ctx, S->k_update, n, (int)(sizeof ua / sizeof *ua), ua, 76.0 * n + 5.0 * row)))
            return st;
        void *t = S->P; /* the new iterate is in Pold */
        S->P = S->Pold, S->Pold = t;
        if (S->ranks > 1 && (st = floe_halo(api, ctx, S->set, S->P, sizeof(float)))) /* MPI: also for the last a^p */
            return st;
        it++;
        if (it >= min_it || it >= max_it) {
            if ((st = read_error(S, divergence ? dtk : 1.0f, err)))
                return st;
            if (*err <= tol || it >= max_it)
                break;
        }
    }
    floe_cl_arg aa[] = {ARG(n),     ARG(S->xm),  ARG(S->P),   ARG(S->gb),  ARG(S->ap),     ARG(S->kc),
                        ARG(S->per), ARG(S->cnt), ARG(S->idx), ARG(S->pitch), ARG(S->kgc), ARG(S->gam)};
    if ((st = api->cl_run(ctx, S->k_accel, n, (int)(sizeof aa / sizeof *aa), aa, 52.0 * n + 5.0 * row)))
        return st;
    floe_cl_arg pa[] = {ARG(n), ARG(S->u), ARG(S->ap), ARG(S->P), ARG(dt), ARG(div),
                        ARG(S->kv), ARG(S->v), ARG(S->a), ARG(S->rho), ARG(S->p)};
    if ((st = api->cl_run(ctx, S->k_apply, n, (int)(sizeof pa / sizeof *pa), pa, 64.0 * n)))
        return st;
    *it_out = it;
    /* MPI: the ghosts' corrected velocities are their owners' (the next solve's source reads them) */
    return S->ranks > 1 ? floe_halo(api, ctx, S->set, S->u, 4 * sizeof(float)) : FLOE_OK;
}

/* the start budgets' rate at a run's first step, from the fluid column's
 * height (positions read back once) */
static int first_rate(solver *S, void *x, const floe_sim_info *si, float *rate0)
{
    float *h = malloc((size_t)S->n * 3 * sizeof *h + 1);
    if (!h)
        return api->fail(S->ctx, FLOE_ERR_NOMEM, "out of memory");
    int st = cl_check(S->ctx, S->cl->read(S->cl->queue, x, 1, 0, (size_t)S->n * 3 * sizeof *h, h, 0, NULL, NULL),
                      "reading the positions");
    if (!st)
        *rate0 = (float)(S->c->corr_speed / dfsph_fluid_column(si, h, S->n));
    free(h);
    return st;
}

int dfsph_cl_solve(floe_ctx *ctx, const dfsph_cfg *c, struct dfsph_cl **clp)
{
    const floe_sim_info *si = api->sim(ctx);
    const float dt = (float)si->dt;
    int st;

    /* the fused viscosity (the same parameter on every rank): the C solve */
    if (c->visc > 0.0)
        return DFSPH_CL_USE_C;
    /* one fluid set on the device; several: the C solve. MPI (docs/mpi.md):
     * the device solve where every rank holds particles of one fluid set
     * (decided together: the exchanges are collective), else every rank
     * takes the C solve */
    floe_cl_set f[FLOE_MAX_SETS], b[FLOE_MAX_SETS];
    int nf = 0, nb = 0;
    st = floe_cl_sets(api, ctx, FLOE_SET_FLUID, f, &nf);
    const int ranks = floe_ranks(api, ctx);
    if (ranks > 1) {
        double one = st == FLOE_OK && nf == 1 && dt > 0.0f;
        int rs = floe_reduce(api, ctx, &one, 1, FLOE_REDUCE_MIN);
        if (rs)
            return rs;
        if (one == 0.0)
            return st ? st : DFSPH_CL_USE_C;
    }
    if (st == FLOE_OK && nf > 1)
        return DFSPH_CL_USE_C;
    if (st == FLOE_OK)
        st = floe_cl_sets(api, ctx, FLOE_SET_BOUNDARY, b, &nb);
    if (st != FLOE_OK || nf == 0 || !(dt > 0.0f))
        return st;

    solver S;
    memset(&S, 0, sizeof S);
    S.ctx = ctx;
    S.c = c;
    if (!(S.cl = cl_state(ctx, clp)))
        return FLOE_ERR;
    void *k_setup_b = api->cl_kernel(ctx, "dfsph", FILE_CL, "dfsph_setup_b");
    void *k_setup_f = api->cl_kernel(ctx, "dfsph", FILE_CL, "dfsph_setup_f");
    void *k_predict = api->cl_kernel(ctx, "dfsph", FILE_CL, "dfsph_predict");
    void *k_gamma = c->corr ? api->cl_kernel(ctx, "dfsph", FILE_CL, "dfsph_gamma") : NULL;
    S.k_source = api->cl_kernel(ctx, "dfsph", FILE_CL, "dfsph_source");
    S.k_source_err = c->min_it_v == 0 ? api->cl_kernel(ctx, "dfsph", FILE_CL, "dfsph_source_err") : NULL;
    S.k_accel = api->cl_kernel(ctx, "dfsph", FILE_CL, "dfsph_accel");
    S.k_update = api->cl_kernel(ctx, "dfsph", FILE_CL, "dfsph_update");
    S.k_reduce = api->cl_kernel(ctx, "dfsph", FILE_CL, "dfsph_reduce");
    S.k_apply = api->cl_kernel(ctx, "dfsph", FILE_CL, "dfsph_apply");
    if (!k_setup_b || !k_setup_f || !k_predict || (c->corr && !k_gamma) || !S.k_source || (c->min_it_v == 0 && !S.k_source_err) || !S.k_accel || !S.k_update || !S.k_reduce ||
        !S.k_apply)
        return FLOE_ERR;

    const floe_cl_set *q = &f[0];
    const uint32_t n = q->info.n;
    S.n = n;
    S.ranks = ranks;
    S.set = q->set;
    S.nown = floe_owned(api, ctx, q->set, n);
    S.owned_total = S.nown;
    if (ranks > 1 && (st = floe_reduce(api, ctx, &S.owned_total, 1, FLOE_REDUCE_SUM)))
        return st;
    S.dt = dt;
    S.rho0 = q->info.rest_density;
    S.nparts = (n + WGS - 1) / WGS;
    const floe_kernel kern = floe_cl_consts(si, S.kc, S.per);

    st = FLOE_OK;
    void *x = floe_cl_attr(api, ctx, q, "x", FLOE_VEC3, FLOE_READ, &st);
    void *m = floe_cl_attr(api, ctx, q, "m", FLOE_F32, FLOE_READ, &st);
    S.v = floe_cl_attr(api, ctx, q, "v", FLOE_VEC3, FLOE_READ, &st);
    S.rho = floe_cl_attr(api, ctx, q, "rho", FLOE_F32, FLOE_READ, &st);
    S.p = floe_cl_attr(api, ctx, q, "p", FLOE_F32, FLOE_READ | FLOE_WRITE, &st);
    S.kv = floe_cl_attr(api, ctx, q, "dfsph_kv", FLOE_F32, FLOE_READ | FLOE_WRITE, &st);
    S.a = floe_cl_attr(api, ctx, q, "a", FLOE_VEC3, FLOE_READ | FLOE_WRITE, &st);
    void *sl = floe_cl_attr(api, ctx, q, "dfsph_start_lag", FLOE_F32, FLOE_READ | FLOE_WRITE, &st);
    void *sr = floe_cl_attr(api, ctx, q, "dfsph_start_rate", FLOE_F32, FLOE_READ | FLOE_WRITE, &st);
    if (st)
        return st;
    /* device scratch: float4 per particle (xm, u, gb, co, ap), float (S, P,
     * Pold), the group sums, the read-back slot and the bits of max |v|^2 */
    void *mx = NULL, *tr = NULL;
    const size_t n4 = (size_t)n * 16, n1 = (size_t)n * 4;
    S.kgc = c->corr;
    const struct {
        void **buf;
        const char *name;
        size_t bytes;
    } bufs[] = {{&S.xm, "dfsph.xm", n4}, {&S.u, "dfsph.u", n4},     {&S.gb, "dfsph.gb", n4},
                {&S.co, "dfsph.co", n4}, {&S.ap, "dfsph.ap", n4},   {&S.S, "dfsph.S", n1},
                {&S.P, "dfsph.P", n1},   {&S.Pold, "dfsph.Pold", n1}, {&S.part, "dfsph.part", (size_t)S.nparts * 4},
                {&S.red, "dfsph.red", 16}, {&mx, "dfsph.mx", 16},
                {&S.gam, "dfsph.gam", c->corr ? n1 : 16}, {&tr, "dfsph.tr", c->corr ? n1 : 16}};
    for (size_t k = 0; k < sizeof bufs / sizeof *bufs; k++)
        if (!(*bufs[k].buf = api->cl_scratch(ctx, bufs[k].name, bufs[k].bytes > 0 ? bufs[k].bytes : 16)))
            return api->fail(ctx, FLOE_ERR_NOMEM, "OpenCL: out of device memory (%u particles)", n);

    /* max |v|^2 starts at 0 (+0.0f bits) */
    const uint32_t zero = 0;
    if ((st = cl_check(ctx, S.cl->fill(S.cl->queue, mx, &zero, 4, 0, 4, 0, NULL, NULL), "clEnqueueFillBuffer")))
        return st;

    /* boundary pass, one launch per boundary set (at least one) */
    const float brho0 = c->beta * S.rho0;
    for (int l = 0; l == 0 || l < nb; l++) {
        const int32_t init = l == 0, fin = l + 1 >= nb;
        floe_cl_row rb;
        st = floe_cl_row_get(api, ctx, q, l < nb ? &b[l] : NULL, 0, &rb);
        if (st)
            return st;
        /* a moving set's (a rigid body's) velocities, read undeclared as the C path does */
        void *vb = l < nb && !b[l].info.is_static ? api->cl_attr(ctx, b[l].set, "v", FLOE_VEC3, FLOE_READ) : NULL;
        int32_t hasv = vb != NULL;
        if (!vb)
            vb = rb.x; /* unread */
        floe_cl_arg a[] = {ARG(n),     ARG(x),     ARG(S.v),   ARG(m),    ARG(S.xm),  ARG(S.u),
                           ARG(S.gb),  ARG(S.kc),  ARG(S.per), ARG(brho0), ARG(init), ARG(fin),
                           ARG(rb.has), ARG(rb.x), ARG(rb.w),  ARG(rb.cnt), ARG(rb.idx), ARG(rb.pitch),
                           ARG(mx),     ARG(S.kgc), ARG(tr),   ARG(hasv), ARG(vb)};
        if ((st = api->cl_run(ctx, k_setup_b, n, (int)(sizeof a / sizeof *a), a, 80.0 * n + 4.0 * rb.total)))
            return st;
    }

    /* MPI: the largest |v|^2 over every rank (setup_f's compression limit, as the C solve's) */
    if (ranks > 1) {
        float v2f;
        if ((st = cl_check(ctx, S.cl->read(S.cl->queue, mx, 1, 0, sizeof v2f, &v2f, 0, NULL, NULL),
                           "reading max |v|^2")))
            return st;
        double v2 = v2f;
        if ((st = floe_reduce(api, ctx, &v2, 1, FLOE_REDUCE_MAX)))
            return st;
        const float g = (float)v2; /* a float's value: exact */
        uint32_t bits;
        memcpy(&bits, &g, sizeof bits);
        if ((st = cl_check(ctx, S.cl->fill(S.cl->queue, mx, &bits, 4, 0, 4, 0, NULL, NULL), "clEnqueueFillBuffer")))
            return st;
    }

    /* fluid pass: D, few, lag */
    floe_cl_row rf;
    if ((st = floe_cl_row_get(api, ctx, q, q, 0, &rf)))
        return st;
    S.cnt = rf.cnt;
    S.idx = rf.idx;
    S.pitch = rf.pitch;
    S.pairs = rf.total;
    if (c->corr) { /* gamma before any pair gradient uses it */
        const float ir0 = 1.0f / S.rho0, dimf = (float)si->dim, lo = 0.9f;
        floe_cl_arg a[] = {ARG(n),   ARG(S.xm), ARG(S.gb),  ARG(S.u),  ARG(tr),    ARG(S.gam),  ARG(S.kc),
                           ARG(S.per), ARG(ir0), ARG(dimf), ARG(lo),  ARG(S.cnt), ARG(S.idx), ARG(S.pitch)};
        if ((st = api->cl_run(ctx, k_gamma, n, (int)(sizeof a / sizeof *a), a, 56.0 * n + 20.0 * rf.total)) ||
            (ranks > 1 && (st = floe_halo(api, ctx, q->set, S.gam, sizeof(float))))) /* MPI: the ghosts' gamma */
            return st;
    }
    {
        /* D_min as the C path: 1e-6 rho0^2 / H^2; elim = max(corr, |v|max) dt / d */
        const float dmin = 1e-6f * S.rho0 * S.rho0 * kern.inv_H * kern.inv_H;
        const float cf[4] = {S.rho0, dmin, (float)c->corr_speed, (float)(dt / si->spacing)};
        const int32_t first = si->step == 0;
        float rate0 = 0.0f;
        if (first && c->corr_speed > 0.0 && (st = first_rate(&S, x, si, &rate0)))
            return st;
        const uint32_t few_limit = si->dim == 3 ? 20 : 7;
        floe_cl_arg a[] = {ARG(n),   ARG(S.xm),      ARG(S.gb), ARG(S.rho), ARG(S.co),    ARG(S.kc),  ARG(S.per),
                           ARG(cf),  ARG(few_limit), ARG(mx),   ARG(S.cnt), ARG(S.idx), ARG(S.pitch), ARG(S.kgc),
                           ARG(S.gam), ARG(sl),      ARG(sr),     ARG(rate0),  ARG(S.dt),   ARG(first)};
        if ((st = api->cl_run(ctx, k_setup_f, n, (int)(sizeof a / sizeof *a), a, 64.0 * n + 20.0 * rf.total)))
            return st;
    }

    /* 1. divergence-free solver on v, from last step's P of this solver (kept as dt P) */
    int64_t it_v = 0, it = 0;
    double err_v = 0.0, err = 0.0;
    if (c->divergence && (st = solve(&S, 1, c->min_it_v, c->max_it_v, c->tol_v, &it_v, &err_v)))
        return st;
    /* 2. constant density solver on v* = u + dt a, from last step's P = p / rho^2 */
    {
        floe_cl_arg a[] = {ARG(n), ARG(S.u), ARG(S.a), ARG(S.dt)};
        if ((st = api->cl_run(ctx, k_predict, n, 4, a, 44.0 * n)))
            return st;
    }
    if ((st = solve(&S, 0, c->min_it, c->max_it, c->tol, &it, &err)))
        return st;
    dfsph_step_end(ctx, c, it, err, it_v, err_v);
    return FLOE_OK;
}
