/* Floe module "iisph": implicit incompressible SPH (Ihmsen et al. 2013,
 * "Implicit incompressible SPH"), the water solver of Kim 2020 section 3.1.
 *
 * Stages, in pipeline order (core stages in brackets, other modules' force
 * stages in braces):
 *   [neighbours] density, [gravity] {viscosity, tension...} solve, [integrate]
 *
 *   density  rho_i = m_i W(0) + sum_j m_j W_ij + sum_b rho0_i V_b W_ib
 *   solve    the pressure that makes the density after the step rho0:
 *            v_adv = v + dt a (a: every non-pressure acceleration so far),
 *            rho_adv, d_ii and a_ii, relaxed Jacobi iteration on p until the
 *            average density error is below `tolerance`, then a += a^p so
 *            that [integrate] (v += dt a; x += dt v) finishes the step.
 *
 * docs/iisph.md has the equations numbered as in Kim 2020 / Ihmsen 2013, the
 * parameters and the measured results. In short, with P_i = p_i / rho_i^2
 * and psi_b = rho0_i V_b (Akinci et al. 2012 boundary particles):
 *   a^p_i   = -sum_j m_j (P_i + P_j) grad W_ij - beta P_i sum_b psi_b grad W_ib (+ E_i)
 *   (A p)_i = dt^2 [ sum_j m_j (a^p_i - a^p_j).grad W_ij + beta sum_b psi_b a^p_i.grad W_ib ]
 *           = the density change the pressures cause over dt      (eqs. 9-19)
 *   A p = rho0 - rho_adv,  a_ii = d(A p)_i / d p_i                      (eq. 20)
 *   p_i <- max(0, p_i + omega (rho0 - rho_adv_i - (A p)_i) / a_ii)       (eqs. 21, 24)
 * which is Ihmsen's d_ii / d_ij iteration written with the pressure
 * accelerations (d_ii p_i + sum_j d_ij p_j = dt^2 a^p_i). beta = 2 mirrors the
 * pressure into the wall (p_b = p_i, rho_b = rho_i, as wcsph does); E_i adds
 * the hydrostatic part of an extrapolated wall pressure p_b = p_i + rho_i
 * g.(x_b - x_i). The boundary term of the predicted density carries the same
 * beta, so that the pressure force is the adjoint of the density change and
 * the projection cannot add energy: with factor 1 there and 2 in the force, a
 * tank at rest never settled (docs/iisph.md, "Boundaries").
 *
 * Speed: per step one pass over the fluid neighbours stores m_j grad W_ij of
 * every pair with global neighbour indices (over all fluid sets) in blocks
 * of 8 particles (SELL-8: neighbour k of the 8 particles contiguous, rows
 * padded to the block's longest), so that each Jacobi iteration is two
 * vector passes over the blocks, one particle per lane: a^p (gathering P_j),
 * then A p and the update (gathering a^p_j). The boundary enters the
 * iteration only through per-particle sums computed once per step. Loops are
 * gathers with a static schedule; the density error is summed over fixed
 * chunks of 512 particles in a fixed order, so results are bitwise the same
 * for any thread count.
 *
 * OpenCL path (run_cl of both stages): iisph_cl.c and kernels/iisph/iisph.cl,
 * the same arithmetic with every Jacobi iteration on the device
 * (docs/iisph.md, "OpenCL path"). */
#include <floe/kernel.h>
#include <floe/module.h>
#include <floe/module_sets.h>
#include <floe/simd.h>

#include "iisph_cl.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const floe_api *api; /* the core's services, from the entry point */

/* the row sums below must inline into the OpenMP loop bodies */
#if defined(__GNUC__)
#define ROW_FN static inline __attribute__((always_inline))
#else
#define ROW_FN static inline
#endif

#define IISPH_MAX_SETS 16
#define CHUNK 512 /* particles per partial sum of the density error */

/* ---- kernel (as in wcsph.c: the cubic spline of <floe/kernel.h>, branch-free) */

typedef struct kconst {
    float H, inv_H;
    float sigma;  /* W(0) */
    float g;      /* sigma / H */
    float r_min2; /* (1e-6 H)^2, keeps 1/r finite for coincident particles */
} kconst;

static kconst kconst_make(const floe_sim_info *si)
{
    floe_kernel k = floe_kernel_make(si->dim, si->support);
    kconst c;
    c.H = k.H;
    c.inv_H = k.inv_H;
    c.sigma = k.sigma;
    c.g = k.sigma * k.inv_H;
    c.r_min2 = (1e-6f * k.H) * (1e-6f * k.H);
    return c;
}


/* W / sigma and (dW/dr) / r at distance^2 r2: <floe/kernel.h> */
static inline float w_hat(const kconst *c, float r2) { return floe_w_hat(c->inv_H, r2); }

static inline float dw_r(const kconst *c, float r2) { return floe_dw_r_hat(c->g, c->inv_H, c->r_min2, r2); }

/* ---- periodic axes: minimum image of x_i - x_j ---------------------------
 * L = period on periodic axes, 0 elsewhere (then the wrap is the identity).
 * Loops are written twice through the PER argument (a constant 0 or 1 at
 * every call site), so the non-periodic path carries no extra work. */

typedef struct per {
    float L[3], h[3];
} per;

static per per_make(const floe_sim_info *si)
{
    per p;
    for (int k = 0; k < 3; k++) {
        p.L[k] = (si->periodic & (1u << k)) ? si->period[k] : 0.0f;
        p.h[k] = 0.5f * p.L[k];
    }
    return p;
}

static inline float wrap(float d, float L, float h) { return d > h ? d - L : (d < -h ? d + L : d); }

#define ROW(nl, i) (nl)->idx + (size_t)(i) * (nl)->stride, (nl)->count[i]
#define X_IJ                                                                              \
    const uint32_t j = id[k];                                                             \
    float dx = xi - xt[3 * j], dy = yi - xt[3 * j + 1], dz = zi - xt[3 * j + 2];          \
    if (PER) {                                                                            \
        dx = wrap(dx, pr->L[0], pr->h[0]);                                                \
        dy = wrap(dy, pr->L[1], pr->h[1]);                                                \
        dz = wrap(dz, pr->L[2], pr->h[2]);                                                \
    }                                                                                     \
    const float r2 = dx * dx + dy * dy + dz * dz

/* Run BODY(i, 0) or BODY(i, 1) over i in [0, n) in parallel: one branch on
 * the periodic flag outside the loop. */
#define PAR_FOR(periodic, n, BODY)                                    \
    do {                                                              \
        if (periodic) {                                               \
            _Pragma("omp parallel for schedule(static)")              \
            for (uint32_t i_ = 0; i_ < (n); i_++)                     \
                BODY(i_, 1);                                          \
        } else {                                                      \
            _Pragma("omp parallel for schedule(static)")              \
            for (uint32_t i_ = 0; i_ < (n); i_++)                     \
                BODY(i_, 0);                                          \
        }                                                             \
    } while (0)

/* ---- the sets a fluid set interacts with --------------------------------- */

typedef struct target {
    int boundary;
    uint32_t n;
    const float *x;     /* positions, 3 per particle */
    const float *mass;  /* m (fluid) or V (boundary) */
    size_t off;         /* fluid: offset of the set in the solver's global arrays */
    const floe_nlist *nl;
} target;

typedef floe_fluid fluid; /* <floe/module_sets.h>: set, info, offset in the module's scratch */

static int list_fluids(floe_ctx *ctx, fluid *f, int *nf, size_t *total)
{
    return floe_fluid_sets(api, ctx, f, nf, total);
}

static const float *need(floe_ctx *ctx, floe_set set, const char *set_name, const char *attr, floe_type type,
                         int *status)
{
    return floe_need(api, ctx, set, set_name, attr, type, status);
}

/* Targets of fluid set q: every non-empty fluid set, then every non-empty
 * boundary set, with their neighbour lists from q. */
static int list_targets(floe_ctx *ctx, const fluid *q, const fluid *f, int nf, target *t, int *nt, int *nfluid)
{
    int st = FLOE_OK;
    int n = 0;
    for (int s = 0; s < nf; s++) {
        if (f[s].info.n == 0)
            continue;
        target *tg = &t[n++];
        memset(tg, 0, sizeof *tg);
        tg->n = f[s].info.n;
        tg->x = need(ctx, f[s].set, f[s].info.name, "x", FLOE_VEC3, &st);
        tg->mass = need(ctx, f[s].set, f[s].info.name, "m", FLOE_F32, &st);
        tg->off = f[s].off;
        tg->nl = api->neighbours(ctx, q->set, f[s].set);
    }
    *nfluid = n;
    floe_set b[IISPH_MAX_SETS];
    int nb = api->set_list(ctx, FLOE_SET_BOUNDARY, b, IISPH_MAX_SETS);
    if (nb < 0 || nb > IISPH_MAX_SETS)
        return api->fail(ctx, FLOE_ERR, "cannot list boundary sets (%d)", nb);
    for (int s = 0; s < nb; s++) {
        floe_set_info bi;
        if (api->set_info(ctx, b[s], &bi) != FLOE_OK)
            return api->fail(ctx, FLOE_ERR, "boundary set %d: no info", s);
        if (bi.n == 0)
            continue;
        target *tg = &t[n++];
        memset(tg, 0, sizeof *tg);
        tg->boundary = 1;
        tg->n = bi.n;
        tg->x = need(ctx, b[s], bi.name, "x", FLOE_VEC3, &st);
        tg->mass = need(ctx, b[s], bi.name, "V", FLOE_F32, &st);
        tg->nl = api->neighbours(ctx, q->set, b[s]);
    }
    if (st != FLOE_OK)
        return st;
    for (int s = 0; s < n; s++) {
        if (!t[s].nl)
            return api->fail(ctx, FLOE_ERR_ARG, "no neighbour lists for set '%s' (run the 'neighbours' stage first)",
                             q->info.name);
        if (t[s].nl->n < q->info.n)
            return api->fail(ctx, FLOE_ERR, "stale neighbour lists for set '%s' (%u < %u particles)", q->info.name,
                             t[s].nl->n, q->info.n);
    }
    *nt = n;
    return FLOE_OK;
}

/* Prefetch the neighbour rows of particle i + 4 (rows are stride * 4 bytes
 * apart and only their first lines are read). */
static inline void prefetch_rows(const target *t, int nt, uint32_t i, uint32_t n)
{
    if (i + 4 >= n)
        return;
    for (int ti = 0; ti < nt; ti++) {
        const char *row = (const char *)(t[ti].nl->idx + (size_t)(i + 4) * t[ti].nl->stride);
        __builtin_prefetch(row);
        __builtin_prefetch(row + 64);
    }
}

/* ---- density ---------------------------------------------------------------- */

/* sum_j w_j W_ij / sigma over one neighbour row */
ROW_FN float row_w(const kconst *kc, const per *pr, const int PER, const uint32_t *restrict id, uint32_t cnt,
                   const float *restrict xt, const float *restrict w, float xi, float yi, float zi)
{
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (uint32_t k = 0; k < cnt; k++) {
        X_IJ;
        s += w[j] * w_hat(kc, r2);
    }
    return s;
}

ROW_FN void density_one(const kconst *kc, const per *pr, const int PER, const target *t, int nt, uint32_t i,
                        uint32_t n, const float *restrict xs, const float *restrict ms, float rho0,
                        float *restrict rho)
{
    prefetch_rows(t, nt, i, n);
    const float xi = xs[3 * i], yi = xs[3 * i + 1], zi = xs[3 * i + 2];
    float acc = ms[i]; /* m_i W(0) / sigma */
    for (int b = 0; b < nt; b++) {
        /* the core's sum of the row (floe_nlist.wsum) when it made one */
        const float sum = t[b].nl->wsum ? t[b].nl->wsum[i]
                                        : row_w(kc, pr, PER, ROW(t[b].nl, i), t[b].x, t[b].mass, xi, yi, zi);
        acc += t[b].boundary ? rho0 * sum : sum; /* boundary: rho0_i V_b */
    }
    rho[i] = kc->sigma * acc;
}

static int st_density(const floe_stage_call *call)
{
    floe_ctx *ctx = call->ctx;
    const floe_sim_info *si = api->sim(ctx);
    const kconst kc = kconst_make(si);
    const per pr = per_make(si);
    fluid f[IISPH_MAX_SETS];
    target t[2 * IISPH_MAX_SETS];
    int nf, nt, nft, st;

    if ((st = list_fluids(ctx, f, &nf, NULL)) != FLOE_OK)
        return st;
    /* from the next neighbours stage on the core sums the rows as it builds
     * them (floe_nlist.wsum); rows without sums are walked here */
    api->want_kernel_sums(ctx);
    for (int s = 0; s < nf; s++) {
        const uint32_t n = f[s].info.n;
        if (n == 0)
            continue;
        if ((st = list_targets(ctx, &f[s], f, nf, t, &nt, &nft)) != FLOE_OK)
            return st;
        const float *restrict xs = api->attr(ctx, f[s].set, "x", FLOE_VEC3);
        const float *restrict ms = api->attr(ctx, f[s].set, "m", FLOE_F32);
        float *restrict rho = api->attr(ctx, f[s].set, "rho", FLOE_F32);
        if (!xs || !ms || !rho)
            return api->fail(ctx, FLOE_ERR_ARG, "set '%s' lacks x, m or rho", f[s].info.name);
        const float rho0 = f[s].info.rest_density;
#define DENSITY(i, P) density_one(&kc, &pr, P, t, nt, i, n, xs, ms, rho0, rho)
        PAR_FOR(si->periodic, n, DENSITY);
#undef DENSITY
    }
    return FLOE_OK;
}

/* ---- solver state: per-step scratch, grown as needed ----------------------- */

typedef struct iisph_state {
    size_t cap_n, cap_pairs, cap_chunks;
    /* per pair, in blocks of 8 particles (SELL-8): block b holds the rows of
     * particles 8b..8b+7 from boff[b], neighbour k of lane l at 8k + l, every
     * row padded to the block's longest with (j = i, zero gradient) */
    uint32_t *cnt;      /* N: fluid neighbours of each particle */
    uint32_t *boff;     /* N / 8 + 2 */
    uint32_t *nj;       /* global index of the neighbour */
    float *gx, *gy, *gz; /* m_j grad W_ij */
    /* per particle, global index gi = set offset + i */
    float *vadv;        /* 3N: v + dt a (non-pressure) */
    float *G;           /* 3N: sum_j m_j grad W_ij + beta sum_b psi_b grad W_ib */
    float *E;           /* 3N: hydrostatic part of the boundary pressure force (extrapolate) */
    float *ap;          /* 4N: pressure acceleration a^p, 16-byte records (x, y, z, 0) */
    float *b;           /* N: source term (rho0 - rho_adv) / rho0, compression limited */
    float *lag;         /* N: compression left for later steps by the limit (relative) */
    float *c;           /* N: dt^2 / rho0 */
    float *w;           /* N: omega rho0 / a_ii (0 where a_ii vanishes) */
    float *irho2;       /* N: 1 / rho^2 */
    float *gam;         /* N: kernel gradient correction gamma_i (gradient_correction; else unused) */
    float *P;           /* N: p / rho^2 of the current iterate */
    float *p[3];        /* N: pressure iterates (rotating: previous, current, next) */
    double *part;       /* density error partial sums, two per chunk */
    struct iisph_cl *cl; /* the OpenCL path's state (iisph_cl.c), NULL until used */
} iisph_state;

static int iisph_init(floe_ctx *ctx, void **state)
{
    (void)ctx;
    iisph_state *s = calloc(1, sizeof *s);
    if (!s)
        return FLOE_ERR_NOMEM;
    *state = s;
    return FLOE_OK;
}

static void free_particles(iisph_state *s)
{
    free(s->cnt);
    free(s->boff);
    free(s->vadv);
    free(s->G);
    free(s->E);
    free(s->ap);
    free(s->b);
    free(s->lag);
    free(s->c);
    free(s->w);
    free(s->irho2);
    free(s->gam);
    free(s->P);
    free(s->p[0]);
    free(s->p[1]);
    free(s->p[2]);
    free(s->part);
}

static void free_pairs(iisph_state *s)
{
    free(s->nj);
    free(s->gx);
    free(s->gy);
    free(s->gz);
}

static void iisph_fini(void *state)
{
    iisph_state *s = state;
    if (!s)
        return;
    free_particles(s);
    free_pairs(s);
    iisph_cl_free(s->cl);
    free(s);
}

/* 64-byte aligned, size rounded up to 64 bytes */
static void *alloc64(size_t bytes)
{
    return aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
}

static int ensure_particles(iisph_state *s, size_t n)
{
    if (n <= s->cap_n)
        return 0;
    size_t cap = n + n / 4 + 64, chunks = (cap + CHUNK - 1) / CHUNK;
    free_particles(s);
    s->cnt = alloc64(cap * sizeof *s->cnt);
    s->boff = alloc64((cap / 8 + 2) * sizeof *s->boff);
    s->vadv = alloc64(3 * cap * sizeof(float));
    s->G = alloc64(3 * cap * sizeof(float));
    s->E = alloc64(3 * cap * sizeof(float));
    s->ap = alloc64(4 * cap * sizeof(float));
    s->b = alloc64(cap * sizeof(float));
    s->lag = alloc64(cap * sizeof(float));
    s->c = alloc64(cap * sizeof(float));
    s->w = alloc64(cap * sizeof(float));
    s->irho2 = alloc64(cap * sizeof(float));
    s->gam = alloc64(cap * sizeof(float));
    s->P = alloc64(cap * sizeof(float));
    s->p[0] = alloc64(cap * sizeof(float));
    s->p[1] = alloc64(cap * sizeof(float));
    s->p[2] = alloc64(cap * sizeof(float));
    s->part = alloc64(2 * (chunks + 1) * sizeof(double));
    if (!s->cnt || !s->boff || !s->vadv || !s->G || !s->E || !s->ap || !s->b || !s->lag || !s->c || !s->w || !s->irho2 || !s->gam || !s->P ||
        !s->p[0] || !s->p[1] || !s->p[2] || !s->part) {
        free_particles(s);
        s->cnt = s->boff = NULL, s->vadv = s->G = s->E = s->ap = s->b = s->lag = s->c = s->w = s->irho2 = s->gam = s->P = NULL;
        s->p[0] = s->p[1] = s->p[2] = NULL, s->part = NULL;
        s->cap_n = 0;
        return -1;
    }
    s->cap_n = cap;
    s->cap_chunks = chunks;
    return 0;
}

static int ensure_pairs(iisph_state *s, size_t n)
{
    if (n <= s->cap_pairs)
        return 0;
    size_t cap = n + n / 4 + 1024;
    free_pairs(s);
    s->nj = alloc64(cap * sizeof *s->nj);
    s->gx = alloc64(cap * sizeof(float));
    s->gy = alloc64(cap * sizeof(float));
    s->gz = alloc64(cap * sizeof(float));
    if (!s->nj || !s->gx || !s->gy || !s->gz) {
        free_pairs(s);
        s->nj = NULL, s->gx = s->gy = s->gz = NULL;
        s->cap_pairs = 0;
        return -1;
    }
    s->cap_pairs = cap;
    return 0;
}

/* ---- per-step set-up --------------------------------------------------------- */

/* Boundary row: G += sum_b V_b grad W_ib; when hyd, E += sum_b V_b (g . x_ib)
 * grad W_ib; when visc, K += sum_b V_b dW/dr / (r (r^2 + eps)) x_ib x_ib^T
 * (xx yy zz xy xz yz), so that sum_b V_b (v . x_ib) / (r^2 + eps) grad W_ib = K v. */
ROW_FN void row_boundary(const kconst *kc, const per *pr, const int PER, const uint32_t *restrict id, uint32_t cnt,
                         const float *restrict xt, const float *restrict V, float xi, float yi, float zi,
                         const float grav[3], int hyd, int visc, float eps, float G[3], float E[3], float K[6])
{
    float sx = 0.0f, sy = 0.0f, sz = 0.0f;
#pragma omp simd reduction(+ : sx, sy, sz)
    for (uint32_t k = 0; k < cnt; k++) {
        X_IJ;
        const float g = V[j] * dw_r(kc, r2);
        sx += g * dx;
        sy += g * dy;
        sz += g * dz;
    }
    G[0] += sx;
    G[1] += sy;
    G[2] += sz;

    if (hyd) {
        const float g0 = grav[0], g1 = grav[1], g2 = grav[2];
        sx = sy = sz = 0.0f;
#pragma omp simd reduction(+ : sx, sy, sz)
        for (uint32_t k = 0; k < cnt; k++) {
            X_IJ;
            const float g = V[j] * dw_r(kc, r2) * (g0 * dx + g1 * dy + g2 * dz);
            sx += g * dx;
            sy += g * dy;
            sz += g * dz;
        }
        E[0] += sx;
        E[1] += sy;
        E[2] += sz;
    }
    if (!visc)
        return;
    float kxx = 0.0f, kyy = 0.0f, kzz = 0.0f, kxy = 0.0f, kxz = 0.0f, kyz = 0.0f;
#pragma omp simd reduction(+ : kxx, kyy, kzz, kxy, kxz, kyz)
    for (uint32_t k = 0; k < cnt; k++) {
        X_IJ;
        const float g = V[j] * dw_r(kc, r2) / (r2 + eps);
        kxx += g * dx * dx;
        kyy += g * dy * dy;
        kzz += g * dz * dz;
        kxy += g * dx * dy;
        kxz += g * dx * dz;
        kyz += g * dy * dz;
    }
    K[0] += kxx;
    K[1] += kyy;
    K[2] += kzz;
    K[3] += kxy;
    K[4] += kxz;
    K[5] += kyz;
}

/* x = M^-1 b for the symmetric 3x3 M = (xx yy zz xy xz yz) */
static inline void solve3(const float M[6], const float b[3], float x[3])
{
    const float a = M[0], e = M[1], i = M[2], bb = M[3], c = M[4], f = M[5];
    const float c0 = e * i - f * f, c1 = c * f - bb * i, c2 = bb * f - c * e;
    const float det = a * c0 + bb * c1 + c * c2;
    const float inv = 1.0f / det;
    x[0] = inv * (c0 * b[0] + c1 * b[1] + c2 * b[2]);
    x[1] = inv * (c1 * b[0] + (a * i - c * c) * b[1] + (bb * c - a * f) * b[2]);
    x[2] = inv * (c2 * b[0] + (bb * c - a * f) * b[1] + (a * e - bb * bb) * b[2]);
}

/* Kernel gradient correction (gradient_correction): gamma_i = dim / tr M_i,
 * M_i = -sum_j V_j x_ij grad W_ij^T over fluid (V_j = m_j / rho0) and
 * boundary (V_b) neighbours, so that the corrected gradient of a linear
 * field is exact on average over directions (the scalar form of Bonet &
 * Lok 1999's L_i = M_i^-1). The settled packings of the tanks have tr M / dim
 * 0.98-0.99, which alone puts the hydrostatic pressure 1.5-2% high
 * (docs/iisph.md). Clamped to [0.9, 1/0.9]: at the free surface M_i is
 * deficient and the plain gradient is kept within 10%. */
#define GAMMA_LO IISPH_GAMMA_LO
ROW_FN float gamma_one(const kconst *kc, const per *pr, const int PER, const target *t, int nt, uint32_t i,
                       const float *restrict xs, float inv_rho0, int dim)
{
    const float xi = xs[3 * i], yi = xs[3 * i + 1], zi = xs[3 * i + 2];
    float tr = 0.0f;
    for (int b = 0; b < nt; b++) {
        const uint32_t *restrict id = t[b].nl->idx + (size_t)i * t[b].nl->stride;
        const uint32_t cnt = t[b].nl->count[i];
        const float *restrict xt = t[b].x, *restrict V = t[b].mass;
        const float sc = t[b].boundary ? 1.0f : inv_rho0;
        float s = 0.0f;
#pragma omp simd reduction(+ : s)
        for (uint32_t k = 0; k < cnt; k++) {
            X_IJ;
            s += V[j] * dw_r(kc, r2) * r2;
        }
        tr -= sc * s;
    }
    const float g = tr > 0.0f ? (float)dim / tr : 1.0f / GAMMA_LO;
    return g < GAMMA_LO ? GAMMA_LO : (g > 1.0f / GAMMA_LO ? 1.0f / GAMMA_LO : g);
}

/* Fluid row: m_j grad W_ij of every pair and the neighbour's global index,
 * written into one lane of a SELL-8 block (stride 8); G += sum_j m_j grad W_ij,
 * *s2 += sum_j m_j |grad W_ij|^2, *dv += sum_j v_adv_j . m_j grad W_ij. The
 * row is computed into contiguous buffers (a vector loop) and then copied
 * to the strided lane (a scalar loop: scattered stores do not vectorise). */
#define ROW_BUF 128
ROW_FN void row_pairs(const kconst *kc, const per *pr, const int PER, const uint32_t *restrict id, uint32_t cnt,
                      const float *restrict xt, const float *restrict m, const float *restrict vt, uint32_t goff,
                      float xi, float yi, float zi, uint32_t *restrict nj, float *restrict gx, float *restrict gy,
                      float *restrict gz, float G[3], float *s2, float *dv, const float *restrict gam, float gam_i)
{
    float bx[ROW_BUF], by[ROW_BUF], bz[ROW_BUF];
    for (uint32_t k0 = 0; k0 < cnt; k0 += ROW_BUF) {
        const uint32_t n = cnt - k0 < ROW_BUF ? cnt - k0 : ROW_BUF;
        const uint32_t *restrict idk = id + k0;
        float sx = 0.0f, sy = 0.0f, sz = 0.0f, ss = 0.0f, sv = 0.0f;
#pragma omp simd reduction(+ : sx, sy, sz, ss, sv)
        for (uint32_t k = 0; k < n; k++) {
            const uint32_t j = idk[k];
            float dx = xi - xt[3 * j], dy = yi - xt[3 * j + 1], dz = zi - xt[3 * j + 2];
            if (PER) {
                dx = wrap(dx, pr->L[0], pr->h[0]);
                dy = wrap(dy, pr->L[1], pr->h[1]);
                dz = wrap(dz, pr->L[2], pr->h[2]);
            }
            const float r2 = dx * dx + dy * dy + dz * dz;
            const float d = dw_r(kc, r2);
            const float g = gam ? m[j] * d * (0.5f * (gam_i + gam[goff + j])) : m[j] * d;
            const float ux = g * dx, uy = g * dy, uz = g * dz;
            bx[k] = ux;
            by[k] = uy;
            bz[k] = uz;
            sx += ux;
            sy += uy;
            sz += uz;
            ss += g * d * r2;
            sv += vt[3 * j] * ux + vt[3 * j + 1] * uy + vt[3 * j + 2] * uz;
        }
        for (uint32_t k = 0; k < n; k++) {
            nj[8 * (size_t)(k0 + k)] = goff + idk[k];
            gx[8 * (size_t)(k0 + k)] = bx[k];
            gy[8 * (size_t)(k0 + k)] = by[k];
            gz[8 * (size_t)(k0 + k)] = bz[k];
        }
        G[0] += sx;
        G[1] += sy;
        G[2] += sz;
        *s2 += ss;
        *dv += sv;
    }
}

struct setup {
    const kconst *kc;
    const per *pr;
    const target *t;
    int nt, nft;            /* targets, the first nft of them fluid */
    uint32_t n;             /* particles of the set */
    size_t off;             /* global offset of the set */
    const float *x, *v, *m, *rho, *pold;
    float *a;
    float rho0, dt, beta, omega, warm;
    int hyd;                /* extrapolate: hydrostatic boundary pressure term */
    const float *grav;      /* gravity */
    float visc_c;           /* 2 (dim + 2) nu_b: boundary viscosity factor, 0 = none */
    float damping;          /* 1/s */
    float eps;              /* 0.01 H^2 */
    float aii_min;          /* |a_ii| below this: no pressure (isolated particle) */
    float elim;             /* largest compression corrected in one step (relative) */
    int corr;               /* gradient_correction: pair gradients scaled by (gamma_i + gamma_j) / 2 */
    iisph_state *s;
};

/* First pass, particle i: boundary sums, the dissipative terms, v_adv, and
 * the number of fluid neighbours (into cnt[gi]). Returns |a_i|^2 of the
 * driving acceleration (before damping and wall friction). */
ROW_FN float setup_boundary(const struct setup *u, const int PER, uint32_t i)
{
    const kconst *kc = u->kc;
    const per *pr = u->pr;
    iisph_state *s = u->s;
    const size_t gi = u->off + i;
    const float xi = u->x[3 * i], yi = u->x[3 * i + 1], zi = u->x[3 * i + 2];
    const float vi[3] = {u->v[3 * i], u->v[3 * i + 1], u->v[3 * i + 2]};
    float G[3] = {0.0f, 0.0f, 0.0f}, E[3] = {0.0f, 0.0f, 0.0f}, K[6] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    uint32_t cnt = 0;
    for (int b = 0; b < u->nt; b++) {
        const target *t = &u->t[b];
        if (t->boundary)
            row_boundary(kc, pr, PER, ROW(t->nl, i), t->x, t->mass, xi, yi, zi, u->grav, u->hyd, u->visc_c > 0.0f,
                         u->eps, G, E, K);
        else
            cnt += t->nl->count[i];
    }
    float *a = u->a + 3 * i, *va = s->vadv + 3 * gi;
    const float dt = u->dt, a2 = a[0] * a[0] + a[1] * a[1] + a[2] * a[2];
    /* v_adv = v / (1 + dt damping) + dt a, the wall friction implicit
     * (unconditionally stable, no bound on dt). The damping slows the
     * velocity the particle has, not this step's force increment: a fluid
     * at rest keeps its whole weight on the pressure (damping the increment
     * too left 1 / (1 + dt damping) of gravity to the pressure, 3% low in a
     * settling tank). The boundary viscosity against boundary particles at
     * rest (mass psi_b = rho0 V_b, psi_b / rho_i taken as V_b: rho_i = rho0
     * within the tolerance)
     *   2 (dim + 2) nu_b sum_b V_b (v_adv . x_ib) / (r^2 + 0.01 H^2) grad W_ib = cv K v_adv
     * acts on v_adv: (I - dt cv K) v_adv = v / (1 + dt damping) + dt a;
     * then a = (v_adv - v) / dt */
    const float vd = u->damping > 0.0f ? 1.0f / (1.0f + dt * u->damping) : 1.0f;
    const float rhs[3] = {vd * vi[0] + dt * a[0], vd * vi[1] + dt * a[1], vd * vi[2] + dt * a[2]};
    if (u->visc_c > 0.0f || u->damping > 0.0f) {
        const float cv = u->visc_c;
        const float M[6] = {1.0f - dt * cv * K[0], 1.0f - dt * cv * K[1], 1.0f - dt * cv * K[2],
                            -dt * cv * K[3], -dt * cv * K[4], -dt * cv * K[5]};
        solve3(M, rhs, va);
        for (int k = 0; k < 3; k++)
            a[k] = (va[k] - vi[k]) / dt;
    } else {
        va[0] = rhs[0], va[1] = rhs[1], va[2] = rhs[2];
    }
    const float gm = u->corr ? s->gam[gi] : 1.0f; /* boundary pairs: gamma_i */
    for (int k = 0; k < 3; k++) {
        s->G[3 * gi + k] = gm * u->beta * u->rho0 * G[k]; /* boundary part only, completed below */
        s->E[3 * gi + k] = gm * u->rho0 * E[k];          /* divided by rho_i below */
    }
    s->cnt[gi] = cnt;
    return a2; /* the driving (non-dissipative) acceleration, for the force condition */
}

/* Second pass, particle i: the stored pair gradients, rho_adv, a_ii and the
 * warm-started pressure. */
ROW_FN void setup_fluid(const struct setup *u, const int PER, uint32_t i)
{
    const kconst *kc = u->kc;
    const per *pr = u->pr;
    iisph_state *s = u->s;
    const size_t gi = u->off + i;
    prefetch_rows(u->t, u->nft, i, u->n);
    const float xi = u->x[3 * i], yi = u->x[3 * i + 1], zi = u->x[3 * i + 2];
    float G[3] = {0.0f, 0.0f, 0.0f}, s2 = 0.0f, dv = 0.0f;
    const size_t base = s->boff[gi >> 3] + (gi & 7), width = (s->boff[(gi >> 3) + 1] - s->boff[gi >> 3]) / 8;
    size_t o = base;
    for (int b = 0; b < u->nft; b++) {
        const target *t = &u->t[b];
        const uint32_t *id = t->nl->idx + (size_t)i * t->nl->stride;
        const uint32_t cnt = t->nl->count[i];
        row_pairs(kc, pr, PER, id, cnt, t->x, t->mass, s->vadv + 3 * t->off, (uint32_t)t->off, xi, yi, zi,
                  s->nj + o, s->gx + o, s->gy + o, s->gz + o, G, &s2, &dv, u->corr ? s->gam : NULL,
                  u->corr ? s->gam[gi] : 1.0f);
        o += 8 * (size_t)cnt;
    }
    for (size_t k = s->cnt[gi]; k < width; k++, o += 8) { /* padding: itself, no gradient */
        s->nj[o] = (uint32_t)gi;
        s->gx[o] = s->gy[o] = s->gz[o] = 0.0f;
    }
    const float rho = u->rho[i], ir2 = 1.0f / (rho * rho), dt = u->dt;
    /* extrapolated boundary pressure p_b = p_i + rho_i g . (x_b - x_i): the
     * part beyond the mirrored p_i adds -psi_b (g . (x_b - x_i)) / rho_i grad W_ib */
    float *Ei = s->E + 3 * gi;
    Ei[0] /= rho;
    Ei[1] /= rho;
    Ei[2] /= rho;
    float *Gi = s->G + 3 * gi;
    const float *va = s->vadv + 3 * gi;
    /* eq. 23: rho_adv = rho + dt (sum_j m_j v_adv_ij . grad W_ij + sum_b psi_b v_adv_i . grad W_ib) */
    Gi[0] += G[0];
    Gi[1] += G[1];
    Gi[2] += G[2];
    const float rho_adv = rho + dt * (va[0] * Gi[0] + va[1] * Gi[1] + va[2] * Gi[2] - dv);
    /* eq. 20: a_ii = sum_j m_j (d_ii - d_ji) . grad W_ij + beta sum_b psi_b d_ii . grad W_ib
     *         with d_ii = -dt^2 G_i / rho_i^2 and d_ji = dt^2 m_i / rho_i^2 grad W_ij */
    const float aii = -dt * dt * ir2 * (Gi[0] * Gi[0] + Gi[1] * Gi[1] + Gi[2] * Gi[2] + u->m[i] * s2);
    /* the compression already present, rho_i / rho0 - 1, is removed in this
     * step up to elim; the rest (lag) is left to the next steps */
    const float lag = floe_pos(rho / u->rho0 - 1.0f - u->elim);
    s->b[gi] = 1.0f - rho_adv / u->rho0 + lag;
    s->lag[gi] = lag;
    s->c[gi] = dt * dt / u->rho0;
    s->w[gi] = aii < -u->aii_min ? u->omega * u->rho0 / aii : 0.0f;
    s->irho2[gi] = ir2;
    const float p0 = s->w[gi] != 0.0f ? u->warm * floe_pos(u->pold[i]) : 0.0f;
    s->p[0][gi] = p0;
    s->P[gi] = p0 * ir2;
}

/* ---- the Jacobi iteration ---------------------------------------------------- */

/* a^p_i = -P_i G_i - sum_j P_j m_j grad W_ij (+ E_i where p_i > 0), for the
 * 8 particles of a block at once (one vector lane each) */
static void pass_accel(iisph_state *restrict s, size_t N)
{
    const uint32_t *restrict boff = s->boff, *restrict nj = s->nj;
    const float *restrict gx = s->gx, *restrict gy = s->gy, *restrict gz = s->gz;
    const float *restrict P = s->P, *restrict Gp = s->G, *restrict E = s->E;
    float *restrict ap = s->ap;
    const size_t nb = (N + 7) / 8;
#pragma omp parallel for schedule(static)
    for (size_t bl = 0; bl < nb; bl++) {
        float sx[8] = {0}, sy[8] = {0}, sz[8] = {0};
        const size_t k0 = boff[bl], k1 = boff[bl + 1];
        for (size_t k = k0; k < k1; k += 8) {
#pragma omp simd
            for (int l = 0; l < 8; l++) {
                const float Pj = P[nj[k + l]];
                sx[l] += Pj * gx[k + l];
                sy[l] += Pj * gy[k + l];
                sz[l] += Pj * gz[k + l];
            }
        }
        const size_t i0 = 8 * bl, nl = N - i0 < 8 ? N - i0 : 8;
        for (size_t l = 0; l < nl; l++) {
            const size_t i = i0 + l;
            const float Pi = P[i], on = Pi > 0.0f ? 1.0f : 0.0f;
            ap[4 * i] = on * E[3 * i] - (Pi * Gp[3 * i] + sx[l]);
            ap[4 * i + 1] = on * E[3 * i + 1] - (Pi * Gp[3 * i + 1] + sy[l]);
            ap[4 * i + 2] = on * E[3 * i + 2] - (Pi * Gp[3 * i + 2] + sz[l]);
            ap[4 * i + 3] = 0.0f;
        }
    }
}

/* (A p)_i = dt^2 (a^p_i . G_i - sum_j a^p_j . m_j grad W_ij); residual
 * r_i = b_i - (A p)_i / rho0 (without the compression limit:
 * 1 - predicted density / rho0); next iterate p_i + omega rho0 r_i / a_ii,
 * clamped at 0. Returns the error the iteration controls, the mean of |r_i|
 * where p_i > 0 and of max(-r_i, 0) where p_i = 0, and in *true_err the
 * average predicted compression, mean of max(lag_i - r_i, 0). Partial sums
 * over fixed chunks of CHUNK particles, added in order. */
static double pass_update(iisph_state *restrict s, size_t N, const float *restrict pprev, const float *restrict pcur,
                          float *restrict pnext, float cheb, double *true_err)
{
    const uint32_t *restrict boff = s->boff, *restrict nj = s->nj;
    const float *restrict gx = s->gx, *restrict gy = s->gy, *restrict gz = s->gz;
    const float *restrict ap = s->ap, *restrict G = s->G, *restrict b = s->b, *restrict c = s->c;
    const float *restrict w = s->w, *restrict irho2 = s->irho2, *restrict lag = s->lag;
    float *restrict P = s->P;
    double *restrict part = s->part;
    const size_t nch = (N + CHUNK - 1) / CHUNK;
#pragma omp parallel for schedule(static)
    for (size_t ch = 0; ch < nch; ch++) {
        const size_t b0 = ch * (CHUNK / 8), b1 = b0 + CHUNK / 8 < (N + 7) / 8 ? b0 + CHUNK / 8 : (N + 7) / 8;
        float err = 0.0f, terr = 0.0f;
        for (size_t bl = b0; bl < b1; bl++) {
            float sum[8] = {0};
            const size_t k0 = boff[bl], k1 = boff[bl + 1];
#if defined(__AVX2__)
            /* the eight lanes' a^p_j as 16-byte records, one 4 x 8
             * transpose (<floe/simd.h>) instead of 24 scalar inserts; the
             * same arithmetic per lane as the loop below */
            __m256 vs = _mm256_setzero_ps();
            for (size_t k = k0; k < k1; k += 8) {
                __m256 AX, AY, AZ, AW;
                floe_load4x8(ap, nj + k, &AX, &AY, &AZ, &AW);
                const __m256 t = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(AX, _mm256_load_ps(gx + k)),
                                                             _mm256_mul_ps(AY, _mm256_load_ps(gy + k))),
                                               _mm256_mul_ps(AZ, _mm256_load_ps(gz + k)));
                vs = _mm256_add_ps(vs, t);
            }
            _mm256_storeu_ps(sum, vs);
#else
            for (size_t k = k0; k < k1; k += 8) {
#pragma omp simd
                for (int l = 0; l < 8; l++) {
                    const uint32_t j = nj[k + l];
                    sum[l] += ap[4 * j] * gx[k + l] + ap[4 * j + 1] * gy[k + l] + ap[4 * j + 2] * gz[k + l];
                }
            }
#endif
            const size_t i0 = 8 * bl, nl = N - i0 < 8 ? N - i0 : 8;
            for (size_t l = 0; l < nl; l++) {
                const size_t i = i0 + l;
                const float Ap = c[i] * (ap[4 * i] * G[3 * i] + ap[4 * i + 1] * G[3 * i + 1] +
                                         ap[4 * i + 2] * G[3 * i + 2] - sum[l]);
                const float r = b[i] - Ap;
                /* where p > 0 both signs count (too much pressure is an error
                 * too); where p = 0 only compression (free surface) */
                err += pcur[i] > 0.0f ? fabsf(r) : floe_pos(-r);
                terr += floe_pos(lag[i] - r);
                /* Jacobi iterate pcur + w r; with Chebyshev acceleration
                 * (cheb > 1) extrapolated from the previous iterate */
                const float pj = pcur[i] + w[i] * r;
                const float pn = w[i] == 0.0f ? 0.0f
                                 : cheb == 1.0f ? floe_pos(pj)
                                                : floe_pos(pprev[i] + cheb * (pj - pprev[i]));
                pnext[i] = pn;
                P[i] = pn * irho2[i];
            }
        }
        part[2 * ch] = err;
        part[2 * ch + 1] = terr;
    }
    double e = 0.0, t = 0.0;
    for (size_t ch = 0; ch < nch; ch++) {
        e += part[2 * ch];
        t += part[2 * ch + 1];
    }
    *true_err = N ? t / (double)N : 0.0;
    return N ? e / (double)N : 0.0;
}

/* ---- solve --------------------------------------------------------------------- */

/* parameter indices SO_*: iisph_cl.h (shared with the OpenCL path) */

static int st_solve(const floe_stage_call *call)
{
    floe_ctx *ctx = call->ctx;
    iisph_state *s = call->state;
    const floe_sim_info *si = api->sim(ctx);
    const kconst kc = kconst_make(si);
    const per pr = per_make(si);
    const double omega = call->param[SO_OMEGA].f, tol = call->param[SO_TOLERANCE].f;
    const int64_t min_it = call->param[SO_MIN_IT].i, max_it = call->param[SO_MAX_IT].i;
    const char *bmode = call->param[SO_BOUNDARY].s ? call->param[SO_BOUNDARY].s : "extrapolate";
    const double nu_b = call->param[SO_BVISC].f, damping = call->param[SO_DAMPING].f;
    const double force_courant = call->param[SO_FORCE_COURANT].f;
    const double corr_speed = call->param[SO_CORR_SPEED].f;
    const float cheb_rho = (float)call->param[SO_CHEB].f;
    const int64_t cheb_delay = call->param[SO_CHEB_DELAY].i;
    const int corr = call->param[SO_GRAD_CORR].b;
    const float dt = (float)si->dt;
    fluid f[IISPH_MAX_SETS];
    target t[2 * IISPH_MAX_SETS];
    int nf, nt, nft, st;
    size_t N;

    if (!s)
        return api->fail(ctx, FLOE_ERR, "module state missing");
    if (min_it > max_it)
        return api->fail(ctx, FLOE_ERR_ARG, "min_iterations (%lld) > max_iterations (%lld)", (long long)min_it,
                         (long long)max_it);
    float beta;
    int hyd = 0;
    if (!strcmp(bmode, "extrapolate"))
        beta = 2.0f, hyd = 1;
    else if (!strcmp(bmode, "mirror"))
        beta = 2.0f;
    else if (!strcmp(bmode, "akinci"))
        beta = 1.0f;
    else
        return api->fail(ctx, FLOE_ERR_ARG, "boundary_pressure '%s': expected extrapolate, mirror or akinci", bmode);
    if ((st = list_fluids(ctx, f, &nf, &N)) != FLOE_OK)
        return st;
    if (N == 0 || !(dt > 0.0f))
        return FLOE_OK;
    if (N >= UINT32_MAX)
        return api->fail(ctx, FLOE_ERR_ARG, "%zu fluid particles, at most 2^32 - 2 supported", N);
    if (ensure_particles(s, N))
        return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory (%zu particles)", N);

    struct setup u[IISPH_MAX_SETS];
    target tt[IISPH_MAX_SETS][2 * IISPH_MAX_SETS];
    /* dimensionless |a_ii| d^2 / dt^2 below 1e-6: the particle has (almost) no neighbours */
    const float aii_min = (float)(1e-6 * si->dt * si->dt / ((double)si->spacing * si->spacing));
    double amax2 = 0.0;
    for (int q = 0; q < nf; q++) {
        const uint32_t n = f[q].info.n;
        if (n == 0)
            continue;
        if ((st = list_targets(ctx, &f[q], f, nf, t, &nt, &nft)) != FLOE_OK)
            return st;
        memcpy(tt[q], t, (size_t)nt * sizeof *t);
        struct setup *w = &u[q];
        memset(w, 0, sizeof *w);
        w->kc = &kc;
        w->pr = &pr;
        w->t = tt[q];
        w->nt = nt;
        w->nft = nft;
        w->n = n;
        w->off = f[q].off;
        w->x = api->attr(ctx, f[q].set, "x", FLOE_VEC3);
        w->v = api->attr(ctx, f[q].set, "v", FLOE_VEC3);
        w->m = api->attr(ctx, f[q].set, "m", FLOE_F32);
        w->rho = api->attr(ctx, f[q].set, "rho", FLOE_F32);
        w->pold = api->attr(ctx, f[q].set, "p", FLOE_F32);
        w->a = api->attr(ctx, f[q].set, "a", FLOE_VEC3);
        if (!w->x || !w->v || !w->m || !w->rho || !w->pold || !w->a)
            return api->fail(ctx, FLOE_ERR_ARG, "set '%s' lacks one of x, v, m, rho, p, a", f[q].info.name);
        w->rho0 = f[q].info.rest_density;
        w->dt = dt;
        w->beta = beta;
        w->hyd = hyd;
        w->grav = si->gravity;
        w->omega = (float)omega;
        w->warm = (float)call->param[SO_WARM].f;
        w->visc_c = (float)(2.0 * (si->dim + 2) * nu_b);
        w->damping = (float)damping;
        w->eps = 0.01f * kc.H * kc.H;
        w->aii_min = aii_min;
        /* largest compression removed in one step: what moves particles at
         * the flow's own speed (or max_correction_speed, when larger) */
        double v2 = 0.0;
#pragma omp parallel for schedule(static) reduction(max : v2)
        for (uint32_t i = 0; i < n; i++) {
            const double q = (double)w->v[3 * i] * w->v[3 * i] + (double)w->v[3 * i + 1] * w->v[3 * i + 1] +
                             (double)w->v[3 * i + 2] * w->v[3 * i + 2];
            v2 = q > v2 ? q : v2;
        }
        const double vc = fmax(corr_speed, sqrt(v2));
        w->elim = corr_speed > 0.0 ? (float)fmin(vc * si->dt / si->spacing, 1e30) : 1e30f;
        w->s = s;
        w->corr = corr;
        if (corr) {
            float *restrict gam = s->gam + f[q].off;
            const float ir0 = 1.0f / w->rho0;
#define GAMMA(i, P) gam[i] = gamma_one(&kc, &pr, P, tt[q], nt, i, w->x, ir0, si->dim)
            PAR_FOR(si->periodic, n, GAMMA);
#undef GAMMA
        }
        double m2 = 0.0;
        if (si->periodic) {
#pragma omp parallel for schedule(static) reduction(max : m2)
            for (uint32_t i = 0; i < n; i++) {
                const double a2 = setup_boundary(w, 1, i);
                m2 = a2 > m2 ? a2 : m2;
            }
        } else {
#pragma omp parallel for schedule(static) reduction(max : m2)
            for (uint32_t i = 0; i < n; i++) {
                const double a2 = setup_boundary(w, 0, i);
                m2 = a2 > m2 ? a2 : m2;
            }
        }
        amax2 = m2 > amax2 ? m2 : amax2;
    }
    /* blocks of 8 rows, each as wide as its longest row */
    uint64_t pairs = 0;
    const size_t nb = (N + 7) / 8;
    s->boff[0] = 0;
    for (size_t bl = 0; bl < nb; bl++) {
        uint32_t wmax = 0;
        for (size_t i = 8 * bl; i < 8 * bl + 8 && i < N; i++)
            wmax = s->cnt[i] > wmax ? s->cnt[i] : wmax;
        pairs += 8 * (uint64_t)wmax;
        if (pairs >= UINT32_MAX)
            return api->fail(ctx, FLOE_ERR_ARG, "more than 2^32 neighbour pairs");
        s->boff[bl + 1] = (uint32_t)pairs;
    }
    if (ensure_pairs(s, (size_t)pairs))
        return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory (%llu neighbour pairs)", (unsigned long long)pairs);
    for (int q = 0; q < nf; q++) {
        const struct setup *w = &u[q];
        if (f[q].info.n == 0)
            continue;
#define SETUP_FLUID(i, P) setup_fluid(w, P, i)
        PAR_FOR(si->periodic, f[q].info.n, SETUP_FLUID);
#undef SETUP_FLUID
    }
    /* the lanes past N of the last block (N not a multiple of 8) are read by
     * the vector passes too: a valid index and a zero gradient */
    if (N % 8) {
        const size_t i0 = N & ~(size_t)7;
        for (size_t k = s->boff[nb - 1]; k < s->boff[nb]; k += 8)
            for (size_t l = N - i0; l < 8; l++) {
                s->nj[k + l] = (uint32_t)i0;
                s->gx[k + l] = s->gy[k + l] = s->gz[k + l] = 0.0f;
            }
    }

    /* relaxed Jacobi: evaluate a^p and the density error of the current
     * iterate; stop when converged (after min_iterations evaluations) or
     * after max_iterations, else take the next iterate */
    int prev = 2, cur = 0, next = 1;
    int64_t it = 0;
    double err = 0.0, true_err = 0.0;
    float om = 1.0f;
    for (;;) {
        pass_accel(s, N);
        /* Chebyshev acceleration from iteration `chebyshev_delay` on (iisph_cl.h) */
        om = iisph_cheb_weight(cheb_rho, it + 1, cheb_delay, om);
        err = pass_update(s, N, s->p[prev], s->p[cur], s->p[next], om, &true_err);
        it++;
        if ((it >= min_it && err <= tol) || it >= max_it)
            break;
        const int old = prev;
        prev = cur, cur = next, next = old;
    }
    /* a += a^p of the iterate whose error was measured, p = that iterate */
    for (int q = 0; q < nf; q++) {
        const uint32_t n = f[q].info.n;
        if (n == 0)
            continue;
        float *restrict a = u[q].a, *restrict p = api->attr(ctx, f[q].set, "p", FLOE_F32);
        const float *restrict ap = s->ap + 4 * f[q].off, *restrict pc = s->p[cur] + f[q].off;
#pragma omp parallel for schedule(static)
        for (uint32_t i = 0; i < n; i++) {
            a[3 * i] += ap[4 * i];
            a[3 * i + 1] += ap[4 * i + 1];
            a[3 * i + 2] += ap[4 * i + 2];
            p[i] = pc[i];
        }
    }
    api->stat(ctx, "iisph.iterations", (double)it);
    api->stat(ctx, "iisph.density_error", true_err);
    /* time step proposals for the next step: force condition on the
     * non-pressure acceleration, and half the step when not converged */
    if (force_courant > 0.0 && amax2 > 0.0)
        api->dt_limit(ctx, force_courant * sqrt(si->spacing / sqrt(amax2)));
    return FLOE_OK;
}

/* OpenCL path (iisph_cl.c); several fluid sets take the C solve */
static int st_solve_cl(const floe_stage_call *call)
{
    iisph_state *s = call->state;
    if (!s)
        return api->fail(call->ctx, FLOE_ERR, "module state missing");
    const int st = iisph_cl_solve(call, &s->cl);
    return st == IISPH_CL_USE_C ? st_solve(call) : st;
}

/* ---- descriptors ---------------------------------------------------------------- */

#define FLUID(n, t, acc) { FLOE_SIZED(floe_attr_desc), .kind = FLOE_SET_FLUID, .name = n, .type = t, .access = acc }
#define BOUND(n, t) { FLOE_SIZED(floe_attr_desc), .kind = FLOE_SET_BOUNDARY, .name = n, .type = t, .access = FLOE_READ }

static const floe_attr_desc density_attrs[] = {
    FLUID("x", FLOE_VEC3, FLOE_READ),
    FLUID("m", FLOE_F32, FLOE_READ),
    FLUID("rho", FLOE_F32, FLOE_WRITE | FLOE_OVERWRITE),
    BOUND("x", FLOE_VEC3),
    BOUND("V", FLOE_F32),
    {0},
};

static const floe_param_desc solve_params[] = {
    [SO_OMEGA] = { FLOE_SIZED(floe_param_desc), .name = "omega", .type = FLOE_PARAM_FLOAT,
        .def = 0.5, .min = 0.01, .max = 1.0, .unit = "",
        .doc = "relaxation of the Jacobi update (eq. 24; Ihmsen 2013: 0.5, Kim 2020: 0.8)" },
    [SO_TOLERANCE] = { FLOE_SIZED(floe_param_desc), .name = "tolerance", .type = FLOE_PARAM_FLOAT,
        .def = 0.0005, .min = 1e-7, .max = 0.5, .unit = "",
        .doc = "stop when the average predicted compression mean(max(rho/rho0 - 1, 0)) is below this (0.0005 = 0.05%)" },
    [SO_MIN_IT] = { FLOE_SIZED(floe_param_desc), .name = "min_iterations", .type = FLOE_PARAM_INT,
        .def = 2, .min = 1, .max = 100000, .unit = "",
        .doc = "at least this many iterations (each: pressure accelerations, then density error and update)" },
    [SO_MAX_IT] = { FLOE_SIZED(floe_param_desc), .name = "max_iterations", .type = FLOE_PARAM_INT,
        .def = 100, .min = 1, .max = 100000, .unit = "",
        .doc = "at most this many iterations; when still above tolerance the next dt is halved" },
    [SO_WARM] = { FLOE_SIZED(floe_param_desc), .name = "warm_start", .type = FLOE_PARAM_FLOAT,
        .def = 0.5, .min = 0, .max = 1, .unit = "",
        .doc = "initial pressure = warm_start * previous step's pressure (Ihmsen 2013: 0.5; 0 = cold start; "
               "above ~0.7 a deep tank at rest oscillates)" },
    [SO_BOUNDARY] = { FLOE_SIZED(floe_param_desc), .name = "boundary_pressure", .type = FLOE_PARAM_STRING,
        .def_str = "extrapolate", .choices = "extrapolate|mirror|akinci", .unit = "",
        .doc = "boundary pressure: extrapolate = -psi_b (p_i + p_b)/rho_i^2 grad W_ib with p_b = p_i + rho_i g.(x_b - x_i) "
               "where p_i > 0; mirror = the same with p_b = p_i (as wcsph); akinci = -psi_b p_i/rho_i^2 grad W_ib" },
    [SO_BVISC] = { FLOE_SIZED(floe_param_desc), .name = "boundary_viscosity", .type = FLOE_PARAM_FLOAT,
        .def = 0, .min = 0, .max = 100, .unit = "m^2/s",
        .doc = "kinematic viscosity against boundary particles (wall friction), added to a before the solve: "
               "2(dim+2) nu sum_b psi_b/rho_i (v_i.x_ib)/(r^2+0.01H^2) grad W_ib; 0 = free slip" },
    [SO_DAMPING] = { FLOE_SIZED(floe_param_desc), .name = "damping", .type = FLOE_PARAM_FLOAT,
        .def = 0, .min = 0, .max = 1e4, .unit = "1/s",
        .doc = "velocity damping v_adv = v / (1 + dt damping) + dt a: slows the velocity, not the step's force "
               "increment (for settling a scene at rest; 0 = none)" },
    [SO_FORCE_COURANT] = { FLOE_SIZED(floe_param_desc), .name = "force_courant", .type = FLOE_PARAM_FLOAT,
        .def = 0.05, .min = 0, .max = 10, .unit = "",
        .doc = "proposes dt <= force_courant sqrt(d / |a|max), a the non-pressure acceleration (0 proposes nothing)" },
    [SO_CORR_SPEED] = { FLOE_SIZED(floe_param_desc), .name = "max_correction_speed", .type = FLOE_PARAM_FLOAT,
        .def = 0.1, .min = 0, .max = 1e4, .unit = "m/s",
        .doc = "compression already present is removed in one step only up to max(max_correction_speed, |v|max) dt / d "
               "(the rest in later steps), so an initial or wall overlap does not explode at small dt; 0 = no limit" },
    [SO_CHEB] = { FLOE_SIZED(floe_param_desc), .name = "chebyshev", .type = FLOE_PARAM_FLOAT,
        .def = 0.9, .min = 0, .max = 0.9999, .unit = "",
        .doc = "Chebyshev acceleration of the Jacobi iteration (Wang 2015) with this estimate of its spectral radius "
               "(0 = plain relaxed Jacobi)" },
    [SO_CHEB_DELAY] = { FLOE_SIZED(floe_param_desc), .name = "chebyshev_delay", .type = FLOE_PARAM_INT,
        .def = 4, .min = 2, .max = 100000, .unit = "",
        .doc = "plain Jacobi iterations before the Chebyshev weights start" },
    [SO_GRAD_CORR] = { FLOE_SIZED(floe_param_desc), .name = "gradient_correction", .type = FLOE_PARAM_BOOL,
        .def = 0, .unit = "",
        .doc = "scale each pair gradient by (gamma_i + gamma_j) / 2, gamma_i = dim / tr(-sum_j V_j x_ij grad W_ij^T) "
               "clamped to [0.9, 1.11]: pressure consistent with rho0 g h on any packing; one more neighbour pass a "
               "step" },
    {0},
};

static const floe_attr_desc solve_attrs[] = {
    FLUID("x", FLOE_VEC3, FLOE_READ),
    FLUID("v", FLOE_VEC3, FLOE_READ),
    FLUID("m", FLOE_F32, FLOE_READ),
    FLUID("rho", FLOE_F32, FLOE_READ),
    FLUID("p", FLOE_F32, FLOE_READ | FLOE_WRITE),
    FLUID("a", FLOE_VEC3, FLOE_READ | FLOE_WRITE),
    BOUND("x", FLOE_VEC3),
    BOUND("V", FLOE_F32),
    {0},
};

static const floe_stage_desc stages[] = {
    { FLOE_SIZED(floe_stage_desc), .name = "density",
      .doc = "SPH density rho_i = m_i W(0) + sum_j m_j W_ij + sum_b rho0 V_b W_ib (after 'neighbours')",
      .run = st_density, .run_cl = iisph_cl_density, .attrs = density_attrs },
    { FLOE_SIZED(floe_stage_desc), .name = "solve",
      .doc = "IISPH pressure solve (relaxed Jacobi) with Akinci boundaries; adds the pressure acceleration to a "
             "(after 'gravity' and other force stages, before 'integrate')",
      .run = st_solve, .run_cl = st_solve_cl, .params = solve_params, .attrs = solve_attrs },
    {0},
};

static const floe_module_desc module = {
    FLOE_SIZED(floe_module_desc),
    .abi_major = FLOE_ABI_MAJOR,
    .abi_minor = FLOE_ABI_MINOR,
    .name = "iisph",
    .version = "1.0.0",
    .summary = "Implicit incompressible SPH (Ihmsen et al. 2013; Kim 2020 sec. 3.1): relaxed Jacobi pressure "
               "solve to a density tolerance, Akinci boundaries",
    .stages = stages,
    .init = iisph_init,
    .fini = iisph_fini,
};

FLOE_MODULE(iisph)
{
    api = iisph_cl_api = core;
    return &module;
}
