/* Floe module "iisph": the OpenCL path of its stages (run_cl), kernels in
 * kernels/iisph/iisph.cl. Same equations, parameters and arithmetic as the
 * C path in iisph.c; every Jacobi iteration runs on the device.
 *
 * One step of iisph.solve on the device (one fluid set; several boundary
 * sets are summed launch by launch):
 *
 *   setup_b (per boundary set)   boundary sums, v_adv, (x, m) packed, max |v|^2, |a|^2
 *   setup_f                      rho_adv, a_ii, source term, warm start p^0
 *   per iteration r:  accel      a^p from P = p^r / rho^2
 *                     update     A p^r, residual, p^(r+1), per-group error sums
 *                     reduce     the group sums into one float pair (slot r % RING)
 *                                -> 8 bytes read back (non-blocking, pinned memory)
 *   finish                       a += a^p, p = p^r of the accepted iterate
 *
 * The convergence test is speculative by one iteration: iteration r + 1 is
 * enqueued before the host waits for the error of iteration r, so the
 * device never idles while the host looks at the 8 bytes; when r converged,
 * the work of r + 1 is discarded (ap ping-pongs between two buffers and p
 * rotates over three, so the accepted iterate's a^p and p are never
 * overwritten by the speculative one). The stopping iteration is therefore
 * exactly the C path's rule: the first r + 1 >= min_iterations with error
 * <= tolerance, or max_iterations. Iterations before min_iterations read
 * nothing back.
 *
 * A scene with several non-empty fluid sets falls back to the C solve (the
 * backend copies the data).
 * iisph.c decodes the parameters (iisph_cfg, iisph.h) and calls in here.
 * Needs no OpenCL header: device objects are void * through floe_api, and
 * the few runtime entry points used here (reads, events, a pinned buffer)
 * come from api->cl_fn with their C signatures spelled out below. */
#include "iisph.h"

#include <floe/cl_module.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

FLOE_MODULE_API_EXTERN;

#define FILE_CL "iisph.cl"
#define ARG(v) FLOE_CL_ARG(v)
#define WGS 128 /* work-group size of api->cl_run (the kernels' reductions assume it) */
#define RING 8  /* error slots on the device and in the pinned host buffer */
#define RED_FLOATS (2 + 2 * RING) /* mx[2] (bits of max |v|^2, max |a|^2), then RING (err, terr) pairs */

/* ---- the OpenCL entry points used directly (OpenCL 1.2 signatures) ------- */

typedef int32_t (*fn_read_t)(void *q, void *mem, uint32_t blocking, size_t off, size_t size, void *ptr,
                             uint32_t nwait, void *const *wait, void **ev);
typedef int32_t (*fn_wait_t)(uint32_t n, void *const *ev);
typedef int32_t (*fn_obj_t)(void *obj); /* clReleaseEvent, clFlush, clFinish, clReleaseMemObject */
typedef int32_t (*fn_fill_t)(void *q, void *mem, const void *pat, size_t pat_size, size_t off, size_t size,
                             uint32_t nwait, void *const *wait, void **ev);
typedef void *(*fn_create_t)(void *context, uint64_t flags, size_t size, void *host, int32_t *err);
typedef void *(*fn_map_t)(void *q, void *mem, uint32_t blocking, uint64_t flags, size_t off, size_t size,
                          uint32_t nwait, void *const *wait, void **ev, int32_t *err);
typedef int32_t (*fn_unmap_t)(void *q, void *mem, void *ptr, uint32_t nwait, void *const *wait, void **ev);

#define CL_MEM_READ_WRITE_ (1u << 0)
#define CL_MEM_ALLOC_HOST_PTR_ (1u << 4)
#define CL_MAP_READ_ (1u << 0)

struct iisph_cl {
    fn_read_t read;
    fn_wait_t wait;
    fn_obj_t release_event, flush, finish, release_mem;
    fn_fill_t fill;
    fn_unmap_t unmap;
    void *queue;
    void *pin;   /* host-visible buffer (CL_MEM_ALLOC_HOST_PTR), mapped once; NULL: plain memory */
    float *host; /* RED_FLOATS floats the reads land in */
    float plain[RED_FLOATS];
    int always_ahead; /* FLOE_IISPH_CL_PREDICT=0: always one iteration ahead (see the solve loop) */
};

void iisph_cl_free(struct iisph_cl *c)
{
    if (!c)
        return;
    if (c->pin) {
        c->unmap(c->queue, c->pin, c->host, 0, NULL, NULL);
        c->finish(c->queue);
        c->release_mem(c->pin);
    }
    free(c);
}

static struct iisph_cl *cl_state(floe_ctx *ctx, struct iisph_cl **cp)
{
    if (*cp)
        return *cp;
    struct iisph_cl *c = calloc(1, sizeof *c);
    if (!c) {
        api->fail(ctx, FLOE_ERR_NOMEM, "out of memory");
        return NULL;
    }
    c->read = (fn_read_t)api->cl_fn("clEnqueueReadBuffer");
    c->wait = (fn_wait_t)api->cl_fn("clWaitForEvents");
    c->release_event = (fn_obj_t)api->cl_fn("clReleaseEvent");
    c->flush = (fn_obj_t)api->cl_fn("clFlush");
    c->finish = (fn_obj_t)api->cl_fn("clFinish");
    c->release_mem = (fn_obj_t)api->cl_fn("clReleaseMemObject");
    c->fill = (fn_fill_t)api->cl_fn("clEnqueueFillBuffer");
    c->unmap = (fn_unmap_t)api->cl_fn("clEnqueueUnmapMemObject");
    fn_create_t create = (fn_create_t)api->cl_fn("clCreateBuffer");
    fn_map_t map = (fn_map_t)api->cl_fn("clEnqueueMapBuffer");
    c->queue = api->cl_queue(ctx);
    const char *pe = getenv("FLOE_IISPH_CL_PREDICT");
    c->always_ahead = pe && !strcmp(pe, "0");
    if (!c->read || !c->wait || !c->release_event || !c->flush || !c->finish || !c->release_mem || !c->fill ||
        !c->unmap || !create || !map || !c->queue) {
        free(c);
        api->fail(ctx, FLOE_ERR, "OpenCL: the runtime lacks an entry point iisph needs");
        return NULL;
    }
    /* pinned host memory, so that the non-blocking reads of the error are
     * truly asynchronous (a pageable destination may make them block) */
    c->host = c->plain;
    int32_t e = 0;
    void *pin = create(api->cl_context(ctx), CL_MEM_READ_WRITE_ | CL_MEM_ALLOC_HOST_PTR_, sizeof c->plain, NULL, &e);
    if (pin && e == 0) {
        void *p = map(c->queue, pin, 1, CL_MAP_READ_, 0, sizeof c->plain, 0, NULL, NULL, &e);
        if (p && e == 0) {
            c->pin = pin;
            c->host = p;
        } else {
            c->release_mem(pin);
        }
    }
    *cp = c;
    return c;
}

static void *scratch(floe_ctx *ctx, const char *name, size_t bytes, int *st)
{
    void *m = api->cl_scratch(ctx, name, bytes ? bytes : 16);
    if (!m && *st == FLOE_OK)
        *st = FLOE_ERR_NOMEM;
    return m;
}

/* ---- solve -------------------------------------------------------------------- */

typedef struct solver {
    floe_ctx *ctx;
    struct iisph_cl *cl;
    void *k_accel, *k_update, *k_reduce;
    uint32_t n, nown, nparts, pitch; /* nown: the particles this rank owns (MPI), n in one process */
    int64_t min_it, cheb_delay;
    float cheb_rho, om; /* Chebyshev: spectral radius estimate, weight of the last enqueued iteration */
    void *xm, *G, *E, *co, *P, *ap[2], *p[3], *part, *red, *cnt, *idx;
    void *gam;  /* gradient_correction: gamma per particle (else any buffer, unread) */
    int32_t corr;
    float kc[4], per[4], cc; /* cc = dt^2 / rho0 */
    double pairs;
    void *ev[RING];
} solver;

static int cl_check(floe_ctx *ctx, int32_t e, const char *what)
{
    return e == 0 ? FLOE_OK : api->fail(ctx, FLOE_ERR, "OpenCL: %s failed (error %d)", what, (int)e);
}

/* Enqueue iteration r: a^p of p^r, then A p^r, p^(r+1) and the group sums;
 * from r + 1 = min_iterations on also the final sum and its non-blocking
 * read into slot r % RING (event ev[slot]). */
static int enqueue_iteration(solver *S, int64_t r)
{
    floe_ctx *ctx = S->ctx;
    void *ap = S->ap[r & 1], *pc = S->p[r % 3], *pn = S->p[(r + 1) % 3], *pp = S->p[(r + 2) % 3];
    S->om = floe_cheb_weight(S->cheb_rho, r + 1, S->cheb_delay, S->om);
    const uint32_t n = S->n;
    int st;
    floe_cl_arg aa[] = {ARG(n),      ARG(S->xm),  ARG(S->P),   ARG(S->G),     ARG(S->E),    ARG(ap),
                        ARG(S->kc),  ARG(S->per), ARG(S->cnt), ARG(S->idx),   ARG(S->pitch), ARG(S->corr),
                        ARG(S->gam)};
    if ((st = api->cl_run(ctx, S->k_accel, n, (int)(sizeof aa / sizeof *aa), aa, 56.0 * n + 8.0 * S->pairs)))
        return st;
    floe_cl_arg ua[] = {ARG(n), ARG(S->xm), ARG(ap), ARG(S->G), ARG(S->co), ARG(S->cc), ARG(pp), ARG(pc), ARG(pn), ARG(S->om), ARG(S->P),
                        ARG(S->part), ARG(S->kc), ARG(S->per), ARG(S->cnt), ARG(S->idx), ARG(S->pitch),
                        ARG(S->corr), ARG(S->gam), ARG(S->nown)};
    if ((st = api->cl_run(ctx, S->k_update, n, (int)(sizeof ua / sizeof *ua), ua, 80.0 * n + 4.0 * S->pairs)))
        return st;
    if (r + 1 < S->min_it)
        return FLOE_OK;
    uint32_t slot = (uint32_t)(r % RING);
    floe_cl_arg ra[] = {ARG(S->nparts), ARG(S->part), ARG(S->red), ARG(slot)};
    if ((st = api->cl_run(ctx, S->k_reduce, WGS, 4, ra, 8.0 * S->nparts)))
        return st;
    if (S->ev[slot]) { /* a discarded speculative read of an earlier step */
        S->cl->release_event(S->ev[slot]);
        S->ev[slot] = NULL;
    }
    const size_t off = (size_t)(2 + 2 * slot) * sizeof(float);
    if ((st = cl_check(ctx, S->cl->read(S->cl->queue, S->red, 0, off, 2 * sizeof(float), (char *)S->cl->host + off, 0,
                                       NULL, &S->ev[slot]),
                       "reading the density error")))
        return st;
    return cl_check(ctx, S->cl->flush(S->cl->queue), "clFlush");
}

static void release_events(solver *S)
{
    for (int k = 0; k < RING; k++)
        if (S->ev[k]) {
            S->cl->release_event(S->ev[k]);
            S->ev[k] = NULL;
        }
}

/* MPI (docs/mpi.md): one iteration with the exchanges of the C solve: the
 * ghosts' a^p from their owners between the two passes, the error sums of
 * every rank's owned particles (read back, waiting: no speculation), and
 * the ghosts' P for the next iteration. The exchanges stage the device
 * rows through host memory (api->halo on device buffers). */
static int mpi_iteration(solver *S, floe_set set, int64_t r, int last_possible, double owned_total, double *err,
                         double *true_err)
{
    floe_ctx *ctx = S->ctx;
    void *ap = S->ap[r & 1], *pc = S->p[r % 3], *pn = S->p[(r + 1) % 3], *pp = S->p[(r + 2) % 3];
    S->om = floe_cheb_weight(S->cheb_rho, r + 1, S->cheb_delay, S->om);
    const uint32_t n = S->n;
    int st;
    floe_cl_arg aa[] = {ARG(n),      ARG(S->xm),  ARG(S->P),   ARG(S->G),     ARG(S->E),    ARG(ap),
                        ARG(S->kc),  ARG(S->per), ARG(S->cnt), ARG(S->idx),   ARG(S->pitch), ARG(S->corr),
                        ARG(S->gam)};
    if ((st = api->cl_run(ctx, S->k_accel, n, (int)(sizeof aa / sizeof *aa), aa, 56.0 * n + 8.0 * S->pairs)) ||
        (st = floe_halo(api, ctx, set, ap, 4 * sizeof(float))))
        return st;
    floe_cl_arg ua[] = {ARG(n),       ARG(S->xm),   ARG(ap),     ARG(S->G),     ARG(S->co),    ARG(S->cc),
                        ARG(pp),      ARG(pc),      ARG(pn),     ARG(S->om),    ARG(S->P),     ARG(S->part),
                        ARG(S->kc),   ARG(S->per),  ARG(S->cnt), ARG(S->idx),   ARG(S->pitch), ARG(S->corr),
                        ARG(S->gam),  ARG(S->nown)};
    if ((st = api->cl_run(ctx, S->k_update, n, (int)(sizeof ua / sizeof *ua), ua, 80.0 * n + 4.0 * S->pairs)))
        return st;
    uint32_t slot = 0;
    floe_cl_arg ra[] = {ARG(S->nparts), ARG(S->part), ARG(S->red), ARG(slot)};
    float e2[2];
    if ((st = api->cl_run(ctx, S->k_reduce, WGS, 4, ra, 8.0 * S->nparts)) ||
        (st = cl_check(ctx, S->cl->read(S->cl->queue, S->red, 1, 2 * sizeof(float), sizeof e2, e2, 0, NULL, NULL),
                       "reading the density error")))
        return st;
    double e[2] = {e2[0], e2[1]};
    if ((st = floe_reduce(api, ctx, e, 2, FLOE_REDUCE_SUM)))
        return st;
    *err = owned_total > 0.0 ? e[0] / owned_total : 0.0;
    *true_err = owned_total > 0.0 ? e[1] / owned_total : 0.0;
    /* P of the next iterate: not needed after the last possible one */
    return last_possible ? FLOE_OK : floe_halo(api, ctx, set, S->P, sizeof(float));
}

int iisph_cl_solve(floe_ctx *ctx, const iisph_cfg *c, struct iisph_cl **clp)
{
    const floe_sim_info *si = api->sim(ctx);
    const double tol = c->tol, force_courant = c->force_courant;
    const int64_t min_it = c->min_it, max_it = c->max_it;
    const float dt = (float)si->dt, beta = c->beta;
    const int32_t hyd = c->hyd, corr = c->corr;
    int st;

    floe_cl_set f[FLOE_MAX_SETS], b[FLOE_MAX_SETS];
    int nf, nb;
    if ((st = floe_cl_sets(api, ctx, FLOE_SET_FLUID, f, &nf)) ||
        (st = floe_cl_sets(api, ctx, FLOE_SET_BOUNDARY, b, &nb)))
        return st;
    /* MPI: the device solve where every rank holds particles of one fluid
     * set (decided together: the solves' exchanges are collective), else
     * every rank takes the C solve */
    const int ranks = floe_ranks(api, ctx);
    if (ranks > 1) {
        double one = nf == 1 && dt > 0.0f;
        if ((st = floe_reduce(api, ctx, &one, 1, FLOE_REDUCE_MIN)))
            return st;
        if (one == 0.0)
            return IISPH_CL_USE_C;
    }
    if (nf > 1)
        return IISPH_CL_USE_C;
    if (nf == 0 || !(dt > 0.0f))
        return FLOE_OK;

    solver S;
    memset(&S, 0, sizeof S);
    S.ctx = ctx;
    if (!(S.cl = cl_state(ctx, clp)))
        return FLOE_ERR;
    void *k_setup_b = api->cl_kernel(ctx, "iisph", FILE_CL, "iisph_setup_b");
    void *k_setup_f = api->cl_kernel(ctx, "iisph", FILE_CL, "iisph_setup_f");
    void *k_gamma = corr ? api->cl_kernel(ctx, "iisph", FILE_CL, "iisph_gamma") : NULL;
    void *k_finish = api->cl_kernel(ctx, "iisph", FILE_CL, "iisph_finish");
    S.k_accel = api->cl_kernel(ctx, "iisph", FILE_CL, "iisph_accel");
    S.k_update = api->cl_kernel(ctx, "iisph", FILE_CL, "iisph_update");
    S.k_reduce = api->cl_kernel(ctx, "iisph", FILE_CL, "iisph_reduce");
    if (!k_setup_b || !k_setup_f || !k_finish || !S.k_accel || !S.k_update || !S.k_reduce || (corr && !k_gamma))
        return FLOE_ERR;

    const floe_cl_set *q = &f[0];
    const uint32_t n = q->info.n;
    const float rho0 = q->info.rest_density;
    const float H = floe_cl_consts(si, S.kc, S.per).H;
    S.n = n;
    S.nown = floe_owned(api, ctx, q->set, n);
    S.min_it = min_it;
    S.cheb_rho = c->cheb_rho;
    S.cheb_delay = c->cheb_delay;
    S.om = 1.0f;
    S.nparts = (n + WGS - 1) / WGS;

    st = FLOE_OK;
    void *x = floe_cl_attr(api, ctx, q, "x", FLOE_VEC3, FLOE_READ, &st);
    void *v = floe_cl_attr(api, ctx, q, "v", FLOE_VEC3, FLOE_READ, &st);
    void *m = floe_cl_attr(api, ctx, q, "m", FLOE_F32, FLOE_READ, &st);
    void *rho = floe_cl_attr(api, ctx, q, "rho", FLOE_F32, FLOE_READ, &st);
    void *pold = floe_cl_attr(api, ctx, q, "p", FLOE_F32, FLOE_READ | FLOE_WRITE, &st);
    void *acc = floe_cl_attr(api, ctx, q, "a", FLOE_VEC3, FLOE_READ | FLOE_WRITE, &st);
    if (st)
        return st;
    const size_t n4 = (size_t)n * 16, n1 = (size_t)n * 4;
    void *vadv = scratch(ctx, "iisph.vadv", n4, &st);
    S.xm = scratch(ctx, "iisph.xm", n4, &st);
    S.G = scratch(ctx, "iisph.G", n4, &st);
    S.E = scratch(ctx, "iisph.E", n4, &st);
    S.co = scratch(ctx, "iisph.co", n4, &st);
    S.ap[0] = scratch(ctx, "iisph.ap0", n4, &st);
    S.ap[1] = scratch(ctx, "iisph.ap1", n4, &st);
    S.P = scratch(ctx, "iisph.P", n1, &st);
    S.p[0] = scratch(ctx, "iisph.p0", n1, &st);
    S.p[1] = scratch(ctx, "iisph.p1", n1, &st);
    S.p[2] = scratch(ctx, "iisph.p2", n1, &st);
    S.part = scratch(ctx, "iisph.part", (size_t)S.nparts * 8, &st);
    S.red = scratch(ctx, "iisph.red", RED_FLOATS * sizeof(float), &st);
    const float visc_c = c->visc_c, damp = c->damping;
    void *K = visc_c > 0.0f && nb > 1 ? scratch(ctx, "iisph.K", (size_t)n * 24, &st) : S.red;
    S.corr = corr;
    S.gam = corr ? scratch(ctx, "iisph.gamma", n1, &st) : S.red;
    void *tr = corr ? scratch(ctx, "iisph.trace", n1, &st) : S.red;
    if (st)
        return st == FLOE_ERR_NOMEM ? api->fail(ctx, st, "OpenCL: out of device memory (%u particles)", n) : st;

    /* the two maxima start at 0 (+0.0f bits) */
    const uint32_t zero = 0;
    if ((st = cl_check(ctx, S.cl->fill(S.cl->queue, S.red, &zero, 4, 0, 8, 0, NULL, NULL), "clEnqueueFillBuffer")))
        return st;

    /* boundary pass, one launch per boundary set (at least one) */
    const float gv[4] = {si->gravity[0], si->gravity[1], si->gravity[2], 0.01f * H * H};
    const int lb = nb > 1 ? nb : 1;
    for (int l = 0; l < lb; l++) {
        floe_cl_row rb;
        if ((st = floe_cl_row_get(api, ctx, q, l < nb ? &b[l] : NULL, 0, &rb)))
            return st;
        int32_t init = l == 0, fin = l == lb - 1;
        /* a moving set's (a rigid body's) velocities, read undeclared as the C path does */
        void *vb = l < nb && !b[l].info.is_static ? api->cl_attr(ctx, b[l].set, "v", FLOE_VEC3, FLOE_READ) : NULL;
        int32_t hasv = vb != NULL;
        if (!vb)
            vb = rb.x; /* unread */
        double bytes = 140.0 * n + 4.0 * rb.total;
        floe_cl_arg a[] = {ARG(n), ARG(x), ARG(v), ARG(m), ARG(acc), ARG(S.xm), ARG(vadv), ARG(S.G), ARG(S.E), ARG(K),
                           ARG(S.kc), ARG(S.per), ARG(gv), ARG(rho0), ARG(dt), ARG(beta), ARG(hyd), ARG(visc_c),
                           ARG(damp), ARG(init), ARG(fin), ARG(rb.has), ARG(rb.x), ARG(rb.w), ARG(rb.cnt), ARG(rb.idx),
                           ARG(rb.pitch), ARG(S.red), ARG(corr), ARG(tr), ARG(hasv), ARG(vb)};
        if ((st = api->cl_run(ctx, k_setup_b, n, (int)(sizeof a / sizeof *a), a, bytes)))
            return st;
    }
    /* MPI: the largest |v|^2 over every rank (setup_f's compression limit,
     * as the C solve's), the largest |a|^2 this rank's (the core takes the
     * smallest time-step limit of the ranks) */
    if (ranks > 1) {
        float mx[2];
        if ((st = cl_check(ctx, S.cl->read(S.cl->queue, S.red, 1, 0, sizeof mx, mx, 0, NULL, NULL),
                           "reading the maxima")))
            return st;
        double v2 = mx[0];
        if ((st = floe_reduce(api, ctx, &v2, 1, FLOE_REDUCE_MAX)))
            return st;
        const float g = (float)v2; /* a float's value: exact */
        uint32_t bits;
        memcpy(&bits, &g, sizeof bits);
        if ((st = cl_check(ctx, S.cl->fill(S.cl->queue, S.red, &bits, 4, 0, 4, 0, NULL, NULL), "clEnqueueFillBuffer")))
            return st;
    }
    /* the maxima come back with the first error read (in-order queue) */
    void *ev_mx = NULL;
    if ((st = cl_check(ctx, S.cl->read(S.cl->queue, S.red, 0, 0, 2 * sizeof(float), S.cl->host, 0, NULL, &ev_mx),
                       "reading the maxima")))
        return st;

    /* fluid pass */
    floe_cl_row rf;
    if ((st = floe_cl_row_get(api, ctx, q, q, 0, &rf))) {
        S.cl->release_event(ev_mx);
        return st;
    }
    S.cnt = rf.cnt;
    S.idx = rf.idx;
    S.pitch = rf.pitch;
    S.pairs = rf.total;
    const float aii_min = (float)(1e-6 * si->dt * si->dt / ((double)si->spacing * si->spacing));
    const float cf[4] = {rho0, dt, c->omega, c->warm};
    const float cg[4] = {aii_min, (float)c->corr_speed, si->spacing, iisph_aii_floor(c, si, rho0, dt)};
    if (corr) { /* gamma before any pair gradient uses it (floe_gamma_one, <floe/sph.h>) */
        const float ir0 = 1.0f / rho0, dimf = (float)si->dim, lo = IISPH_GAMMA_LO;
        floe_cl_arg a[] = {ARG(n),     ARG(S.xm), ARG(S.G), ARG(S.E),  ARG(tr),    ARG(S.gam), ARG(S.kc),
                           ARG(S.per), ARG(ir0),  ARG(dimf), ARG(lo),  ARG(rf.cnt), ARG(rf.idx), ARG(rf.pitch)};
        if ((st = api->cl_run(ctx, k_gamma, n, (int)(sizeof a / sizeof *a), a, 72.0 * n + 20.0 * rf.total)) ||
            (ranks > 1 && (st = floe_halo(api, ctx, q->set, S.gam, sizeof(float))))) { /* MPI: the ghosts' gamma */
            S.cl->release_event(ev_mx);
            return st;
        }
    }
    {
        floe_cl_arg a[] = {ARG(n), ARG(S.xm), ARG(vadv), ARG(rho), ARG(pold), ARG(S.G), ARG(S.E), ARG(S.co),
                           ARG(S.p[0]), ARG(S.P), ARG(S.kc), ARG(S.per), ARG(cf), ARG(cg), ARG(S.red), ARG(S.cnt),
                           ARG(S.idx), ARG(S.pitch), ARG(corr), ARG(S.gam)};
        if ((st = api->cl_run(ctx, k_setup_f, n, (int)(sizeof a / sizeof *a), a, 140.0 * n + 36.0 * rf.total))) {
            S.cl->release_event(ev_mx);
            return st;
        }
    }
    S.cc = dt * dt / rho0;

    /* relaxed Jacobi, speculative by one iteration (see the top of the
     * file), except where iteration r is expected to converge: its error
     * guessed from the last two read, err_{r-1}^2 / err_{r-2} (geometric
     * decay), at or under the tolerance. Then r + 1 waits for r's error,
     * and the device idles for the host's round trip, where a speculative
     * r + 1 would cost a whole iteration thrown away; a wrong guess costs
     * the round trip once. The iterates and the stopping iteration are the
     * same either way. MPI: one iteration at a time, with its exchanges */
    int64_t enq = 0, r = 0;
    double err = 0.0, true_err = 0.0, e1 = -1.0, e2 = -1.0; /* the last two errors read */
    if (ranks > 1) {
        double owned_total = S.nown;
        if ((st = floe_reduce(api, ctx, &owned_total, 1, FLOE_REDUCE_SUM)) ||
            (st = floe_halo(api, ctx, q->set, S.P, sizeof(float))))
            goto out;
        for (;; r++) {
            if ((st = mpi_iteration(&S, q->set, r, r + 1 >= max_it, owned_total, &err, &true_err)))
                goto out;
            if ((r + 1 >= min_it && err <= tol) || r + 1 >= max_it)
                break;
        }
    }
    for (; ranks < 2;) {
        const int ahead = S.cl->always_ahead || !(e1 > 0.0 && e2 > e1 && e1 * (e1 / e2) <= tol) ? 1 : 0;
        while (enq < max_it && enq <= r + ahead)
            if ((st = enqueue_iteration(&S, enq++)))
                goto out;
        if (r + 1 < min_it) {
            r++;
            continue;
        }
        const int slot = (int)(r % RING);
        if ((st = cl_check(ctx, S.cl->wait(1, &S.ev[slot]), "waiting for the density error")))
            goto out;
        S.cl->release_event(S.ev[slot]);
        S.ev[slot] = NULL;
        err = (double)S.cl->host[2 + 2 * slot] / (double)n;
        true_err = (double)S.cl->host[3 + 2 * slot] / (double)n;
        if ((r + 1 >= min_it && err <= tol) || r + 1 >= max_it)
            break;
        e2 = e1;
        e1 = err;
        r++;
    }
    /* a += a^p of the iterate whose error was measured, p = that iterate */
    {
        void *ap = S.ap[r & 1], *pc = S.p[r % 3];
        floe_cl_arg a[] = {ARG(n), ARG(ap), ARG(pc), ARG(acc), ARG(pold)};
        if ((st = api->cl_run(ctx, k_finish, n, 5, a, 44.0 * n)))
            goto out;
    }
    if ((st = cl_check(ctx, S.cl->wait(1, &ev_mx), "waiting for the maxima")))
        goto out;
    api->stat(ctx, "iisph.iterations", (double)(r + 1));
    /* speculative iterations thrown away (MPI: none enqueued ahead) */
    api->stat(ctx, "iisph.iterations_discarded", ranks > 1 ? 0.0 : (double)(enq - (r + 1)));
    api->stat(ctx, "iisph.density_error", true_err);
    float amax2;
    memcpy(&amax2, &S.cl->host[1], sizeof amax2);
    if (force_courant > 0.0 && amax2 > 0.0f)
        api->dt_limit(ctx, force_courant * sqrt(si->spacing / sqrt((double)amax2)));
out:
    release_events(&S);
    S.cl->release_event(ev_mx);
    return st;
}
