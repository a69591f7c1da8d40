/* Floe module "wcsph": weakly compressible SPH (Becker & Teschner 2007).
 *
 * Stages, in pipeline order (core stages in brackets):
 *   [neighbours] density, pressure, [gravity] viscosity, pressure_force, [integrate]
 *
 *   density         rho_i = m_i W(0) + sum_j m_j W_ij + sum_b rho0_i V_b W_ib
 *   pressure        p_i = B ((rho_i / rho0)^gamma - 1), clamped at >= 0
 *   viscosity       XSPH or Monaghan (1992) artificial viscosity, added to a
 *   pressure_force  a_i -= sum_j m_j (p_i/rho_i^2 + p_j/rho_j^2) grad W_ij
 *                        + sum_b rho0_i V_b 2 p_i/rho_i^2 grad W_ib
 *
 * j runs over the neighbours in every fluid set, b over those in every
 * boundary set (Akinci et al. 2012: a boundary particle acts as fluid of mass
 * rho0_i V_b; pressure is mirrored from the fluid particle, p_b = p_i and
 * rho_b = rho_i). docs/modules.md has the equations in full.
 *
 * Speed: this is the hot path. Every loop is a gather (particle i writes only
 * its own slot), so it parallelises with a static OpenMP schedule, and the sum
 * over one neighbour row is an omp simd reduction: the compiler vectorises
 * it (emulating the indexed loads where the CPU has no fast gather). The
 * lanes are summed in a pattern fixed at compile time, so results are
 * bitwise the same for any thread count. For that the kernel is written
 * without branches (max(x, 0) = (x + |x|) / 2, exact in floating point):
 *   W(q)  = sigma (2 max(0, 1-q)^3 - 8 max(0, 1/2-q)^3)          q = r / H
 *   dW/dq = sigma (24 max(0, 1/2-q)^2 - 6 max(0, 1-q)^2)
 * the cubic spline of <floe/kernel.h> piece by piece (fmaxf itself would be a
 * library call, which no loop vectorises through). */
#include <floe/kernel.h>
#include <floe/module.h>
#include <floe/module_sets.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const floe_api *api; /* the core's services, from the entry point */

/* the row sums below must inline into the OpenMP loop bodies */
#if defined(__GNUC__)
#define ROW_FN static inline __attribute__((always_inline))
#else
#define ROW_FN static inline
#endif

#define WCSPH_MAX_SETS 16

/* ---- module state: scratch for p / rho^2 ------------------------------ */

typedef struct wcsph_state {
    float *prho2; /* p_i / rho_i^2 of every fluid set, concatenated */
    size_t cap;
    /* packed records of every fluid set (rows_avx2.h), 4 floats each:
     * A = (x, y, z, m), B = (P, rho, vx, vy); 64-byte aligned */
    float *A, *B;
    size_t cap_rec;
    /* per fluid set (index in list_fluids' order), after a pack with
     * PACK_VZ: the mass shared by all its particles, whose records then hold
     * A = (x, y, z, vz); 0 when the masses differ (A = (x, y, z, m)) */
    float umass[WCSPH_MAX_SETS];
} wcsph_state;

static int wcsph_init(floe_ctx *ctx, void **state)
{
    (void)ctx;
    wcsph_state *s = calloc(1, sizeof *s);
    if (!s)
        return FLOE_ERR_NOMEM;
    *state = s;
    return FLOE_OK;
}

static void wcsph_fini(void *state)
{
    wcsph_state *s = state;
    if (s) {
        free(s->prho2);
        free(s->A);
        free(s->B);
    }
    free(s);
}

/* ---- kernel ------------------------------------------------------------- */

typedef struct kconst {
    float H, inv_H;
    float sigma;    /* W(0) */
    float g;        /* sigma / H: dW/dr = g dW/dq / sigma */
    float r_min2;   /* (1e-6 H)^2, keeps 1/r finite for coincident particles */
    int periodic;   /* some axis is periodic: x_ij takes the minimum image */
    float L[3];     /* period of each axis, 0 if not periodic */
    float half_L[3];
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
    c.periodic = si->periodic != 0;
    for (int d = 0; d < 3; d++) {
        c.L[d] = (si->periodic & (1u << d)) ? si->period[d] : 0.0f;
        c.half_L[d] = 0.5f * c.L[d];
    }
    return c;
}

static inline float maxf(float a, float b) { return a > b ? a : b; }

/* W / sigma and (dW/dr) / r at distance^2 r2: <floe/kernel.h> */
static inline float w_hat(const kconst *c, float r2) { return floe_w_hat(c->inv_H, r2); }

static inline float dw_r(const kconst *c, float r2) { return floe_dw_r_hat(c->g, c->inv_H, c->r_min2, r2); }

/* ---- gathering the sets a fluid set interacts with --------------------- */

typedef struct target {
    int boundary;
    uint32_t n;
    const float *x;     /* positions, 3 per particle */
    const float *mass;  /* m (fluid) or V (boundary) */
    const float *rho;   /* fluid only */
    const float *v;     /* fluid only, when asked */
    const float *prho2; /* fluid only, when asked: p / rho^2 */
    size_t off;         /* fluid only: offset of the set in the module's scratch */
    float umass;        /* fluid only: wcsph_state.umass of the set (0: none) */
    const floe_nlist *nl;
    /* nl's row data, copied so that a row costs one load less */
    const uint32_t *idx, *cnt;
    const float *wsum; /* the core's kernel sums of the rows, or NULL */
    uint32_t stride;
} target;

typedef floe_fluid fluid; /* <floe/module_sets.h>: set, info, offset in the module's scratch */

enum { NEED_RHO = 1, NEED_V = 2 };

static int list_fluids(floe_ctx *ctx, fluid *f, int *nf)
{
    return floe_fluid_sets(api, ctx, f, nf, NULL);
}

static const float *need(floe_ctx *ctx, floe_set set, const char *set_name, const char *attr, floe_type type,
                         int *status)
{
    return floe_need(api, ctx, set, set_name, attr, type, status);
}

/* Targets of fluid set q: every fluid set, then (if with_boundary) every
 * boundary set, with their neighbour lists from q. umass (NULL: none) is
 * wcsph_state.umass of the fluid sets, after a pack with PACK_VZ. */
static int list_targets(floe_ctx *ctx, const fluid *q, const fluid *f, int nf, int with_boundary,
                        unsigned needs, const float *prho2, const float *umass, target *t, int *nt)
{
    int st = FLOE_OK;
    int n = 0;
    for (int s = 0; s < nf; s++) {
        if (f[s].info.n == 0)
            continue; /* nothing to interact with */
        target *tg = &t[n++];
        memset(tg, 0, sizeof *tg);
        tg->n = f[s].info.n;
        tg->x = need(ctx, f[s].set, f[s].info.name, "x", FLOE_VEC3, &st);
        tg->mass = need(ctx, f[s].set, f[s].info.name, "m", FLOE_F32, &st);
        if (needs & NEED_RHO)
            tg->rho = need(ctx, f[s].set, f[s].info.name, "rho", FLOE_F32, &st);
        if (needs & NEED_V)
            tg->v = need(ctx, f[s].set, f[s].info.name, "v", FLOE_VEC3, &st);
        if (prho2)
            tg->prho2 = prho2 + f[s].off;
        tg->off = f[s].off;
        tg->umass = umass ? umass[s] : 0.0f;
        tg->nl = api->neighbours(ctx, q->set, f[s].set);
    }
    if (with_boundary) {
        floe_set b[WCSPH_MAX_SETS];
        int nb = api->set_list(ctx, FLOE_SET_BOUNDARY, b, WCSPH_MAX_SETS);
        if (nb < 0 || nb > WCSPH_MAX_SETS)
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
    }
    if (st != FLOE_OK)
        return st;
    for (int s = 0; s < n; s++) {
        if (t[s].nl) {
            t[s].idx = t[s].nl->idx;
            t[s].cnt = t[s].nl->count;
            t[s].wsum = t[s].nl->wsum;
            t[s].stride = t[s].nl->stride;
        }
        if (!t[s].nl)
            return api->fail(ctx, FLOE_ERR_ARG,
                             "no neighbour lists for set '%s' (run the 'neighbours' stage first)",
                             q->info.name);
        if (t[s].nl->n < q->info.n)
            return api->fail(ctx, FLOE_ERR, "stale neighbour lists for set '%s' (%u < %u particles)",
                             q->info.name, t[s].nl->n, q->info.n);
    }
    *nt = n;
    return FLOE_OK;
}

/* ---- packed records (rows_avx2.h) ------------------------------------- */

#if defined(__AVX2__) && !defined(FLOE_WCSPH_GENERIC)
#include "rows_avx2.h" /* packed-record rows; FLOE_WCSPH_GENERIC=1 builds without them */
#endif

#ifdef ROWS_AVX2
/* Room for the records of `total` fluid particles. Returns 0, or -1 when
 * out of memory. */
static int ensure_records(wcsph_state *ws, size_t total)
{
    if (total <= ws->cap_rec)
        return 0;
    const size_t cap = total + total / 4 + 64;
    float *A = aligned_alloc(64, (4 * cap * sizeof(float) + 63) / 64 * 64);
    float *B = aligned_alloc(64, (4 * cap * sizeof(float) + 63) / 64 * 64);
    if (!A || !B) {
        free(A);
        free(B);
        return -1;
    }
    free(ws->A);
    free(ws->B);
    ws->A = A, ws->B = B, ws->cap_rec = cap;
    return 0;
}

/* The mass shared by all n particles of m, or 0 when they differ. */
static float uniform_mass(const float *restrict m, uint32_t n)
{
    if (n == 0)
        return 0.0f;
    float lo = m[0], hi = m[0];
#pragma omp parallel for simd schedule(static) reduction(min : lo) reduction(max : hi)
    for (uint32_t i = 0; i < n; i++) {
        lo = m[i] < lo ? m[i] : lo;
        hi = m[i] > hi ? m[i] : hi;
    }
    return lo == hi && lo > 0.0f ? lo : 0.0f;
}

/* Pack A = (x, y, z, m), or (x, y, z, vz) when a4 is v's z (vz_in_a), and,
 * with P or rho non-NULL, B = (P, rho, vx, vy) (NULL ones: zeros) of the n
 * particles of one set at record offset off. */
static void pack_records(wcsph_state *ws, size_t off, uint32_t n, const float *restrict x, const float *restrict m,
                         const float *restrict P, const float *restrict rho, const float *restrict v, int vz_in_a)
{
    float *restrict A = ws->A + 4 * off, *restrict B = ws->B + 4 * off;
#pragma omp parallel for schedule(static)
    for (uint32_t i = 0; i < n; i++) {
        A[4 * i] = x[3 * i];
        A[4 * i + 1] = x[3 * i + 1];
        A[4 * i + 2] = x[3 * i + 2];
        A[4 * i + 3] = vz_in_a ? v[3 * i + 2] : m[i];
        if (P || rho) {
            B[4 * i] = P ? P[i] : 0.0f;
            B[4 * i + 1] = rho ? rho[i] : 0.0f;
            B[4 * i + 2] = v ? v[3 * i] : 0.0f;
            B[4 * i + 3] = v ? v[3 * i + 1] : 0.0f;
        }
    }
}
#endif

enum { PACK_P = 1, PACK_RHO = 2, PACK_V = 4, PACK_VZ = 8 };

/* Pack every fluid set into the records of the AVX2 rows: A = (x, y, z, m)
 * always (with PACK_VZ and PACK_V, (x, y, z, vz) for a set whose particles
 * all have one mass, ws->umass), B = (P, rho, vx, vy) with the parts in
 * `what` (PACK_*; P from the p / rho^2 scratch, absent parts zero) when any
 * is asked. *packed = 1 when the rows may use them (AVX2 build, module
 * state, no periodic axis). */
static int pack_fluids(floe_ctx *ctx, wcsph_state *ws, const kconst *kc, const fluid *f, int nf, unsigned what,
                       int *packed)
{
    *packed = 0;
#ifdef ROWS_AVX2
    if (!ws || kc->periodic || nf == 0)
        return FLOE_OK;
    if (ensure_records(ws, f[nf - 1].off + f[nf - 1].info.n))
        return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory (packed records)");
    for (int s = 0; s < nf; s++) {
        const float *x = api->attr(ctx, f[s].set, "x", FLOE_VEC3), *m = api->attr(ctx, f[s].set, "m", FLOE_F32);
        const float *rho = what & PACK_RHO ? api->attr(ctx, f[s].set, "rho", FLOE_F32) : NULL;
        const float *v = what & PACK_V ? api->attr(ctx, f[s].set, "v", FLOE_VEC3) : NULL;
        if (!x || !m || (what & PACK_RHO && !rho) || (what & PACK_V && !v))
            return api->fail(ctx, FLOE_ERR_ARG, "set '%s' lacks x, m%s%s", f[s].info.name,
                             what & PACK_RHO ? ", rho" : "", what & PACK_V ? " or v" : "");
        /* PACK_VZ (with PACK_V): a set of one mass keeps vz in A instead */
        ws->umass[s] = what & PACK_VZ && v ? uniform_mass(m, f[s].info.n) : 0.0f;
        pack_records(ws, f[s].off, f[s].info.n, x, m, what & PACK_P ? ws->prho2 + f[s].off : NULL, rho, v,
                     ws->umass[s] > 0.0f);
    }
    *packed = 1;
#else
    (void)ctx, (void)ws, (void)kc, (void)f, (void)nf, (void)what;
#endif
    return FLOE_OK;
}

/* ---- sums over one neighbour row ------------------------------------------
 * Particle i at (xi, yi, zi); its neighbours in one target set are
 * id[0..cnt) (a row of the fixed-stride list). The row functions take a last
 * argument `per`, always a constant (ROW_CALL passes 1 or 0), so each is
 * compiled twice: with the minimum image on periodic axes, and without. */

#define ROW(tg, i) (tg)->idx + (size_t)(i) * (tg)->stride, (tg)->cnt[i]
#define ROW_CALL(fn, ...) (kc.periodic ? fn(__VA_ARGS__, 1) : fn(__VA_ARGS__, 0))

/* minimum image of one component, branch-free (L = 0: unchanged) */
#define MIN_IMAGE(d, k) d -= kc->L[k] * ((float)(d > kc->half_L[k]) - (float)(d < -kc->half_L[k]))
#define X_IJ                                                                       \
    const uint32_t j = id[k];                                                      \
    float dx = xi - xt[3 * j], dy = yi - xt[3 * j + 1], dz = zi - xt[3 * j + 2];   \
    if (per) {                                                                     \
        MIN_IMAGE(dx, 0);                                                          \
        MIN_IMAGE(dy, 1);                                                          \
        MIN_IMAGE(dz, 2);                                                          \
    }                                                                              \
    const float r2 = dx * dx + dy * dy + dz * dz

/* sum_j w_j W_ij / sigma */
ROW_FN float row_w(const kconst *kc, const uint32_t *restrict id, uint32_t cnt, const float *restrict xt,
                   const float *restrict w, float xi, float yi, float zi, const int per)
{
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (uint32_t k = 0; k < cnt; k++) {
        X_IJ;
        s += w[j] * w_hat(kc, r2);
    }
    return s;
}

/* s += sum_j c_j grad W_ij with c_j = w_j (P_i + P_j), or c_j = w_j if P is NULL */
ROW_FN void row_grad(const kconst *kc, const uint32_t *restrict id, uint32_t cnt, const float *restrict xt,
                     const float *restrict w, const float *restrict P, float Pi, float xi, float yi,
                     float zi, float s[3], const int per)
{
    float sx = 0.0f, sy = 0.0f, sz = 0.0f;
    if (P) {
#pragma omp simd reduction(+ : sx, sy, sz)
        for (uint32_t k = 0; k < cnt; k++) {
            X_IJ;
            const float g = w[j] * (Pi + P[j]) * dw_r(kc, r2);
            sx += g * dx;
            sy += g * dy;
            sz += g * dz;
        }
    } else {
#pragma omp simd reduction(+ : sx, sy, sz)
        for (uint32_t k = 0; k < cnt; k++) {
            X_IJ;
            const float g = w[j] * dw_r(kc, r2);
            sx += g * dx;
            sy += g * dy;
            sz += g * dz;
        }
    }
    s[0] += sx;
    s[1] += sy;
    s[2] += sz;
}

/* XSPH: s += sum_j m_j / (rho_i + rho_j) (v_j - v_i) W_ij / sigma */
ROW_FN void row_xsph(const kconst *kc, const uint32_t *restrict id, uint32_t cnt, const float *restrict xt,
                     const float *restrict m, const float *restrict rho, const float *restrict v, float xi,
                     float yi, float zi, float rhoi, const float vi[3], float s[3], const int per)
{
    float sx = 0.0f, sy = 0.0f, sz = 0.0f;
    const float ui = vi[0], wi = vi[1], ti = vi[2];
#pragma omp simd reduction(+ : sx, sy, sz)
    for (uint32_t k = 0; k < cnt; k++) {
        X_IJ;
        const float c = m[j] / (rhoi + rho[j]) * w_hat(kc, r2);
        sx += c * (v[3 * j] - ui);
        sy += c * (v[3 * j + 1] - wi);
        sz += c * (v[3 * j + 2] - ti);
    }
    s[0] += sx;
    s[1] += sy;
    s[2] += sz;
}

/* Pressure force and XSPH in one walk of a fluid row (wcsph.pressure_force
 * with xsph > 0): g += sum_j m_j (P_i + P_j) grad W_ij and
 * sv += sum_j m_j / (rho_i + rho_j) (v_j - v_i) W_ij / sigma, each term as
 * in row_grad and row_xsph. */
ROW_FN void row_grad_xsph(const kconst *kc, const uint32_t *restrict id, uint32_t cnt, const float *restrict xt,
                          const float *restrict m, const float *restrict P, const float *restrict rho,
                          const float *restrict v, float Pi, float rhoi, const float vi[3], float xi, float yi,
                          float zi, float g3[3], float sv[3], const int per)
{
    float gx = 0.0f, gy = 0.0f, gz = 0.0f, sx = 0.0f, sy = 0.0f, sz = 0.0f;
    const float ui = vi[0], wi = vi[1], ti = vi[2];
#pragma omp simd reduction(+ : gx, gy, gz, sx, sy, sz)
    for (uint32_t k = 0; k < cnt; k++) {
        X_IJ;
        const float g = m[j] * (Pi + P[j]) * dw_r(kc, r2);
        gx += g * dx;
        gy += g * dy;
        gz += g * dz;
        const float c = m[j] / (rhoi + rho[j]) * w_hat(kc, r2);
        sx += c * (v[3 * j] - ui);
        sy += c * (v[3 * j + 1] - wi);
        sz += c * (v[3 * j + 2] - ti);
    }
    g3[0] += gx;
    g3[1] += gy;
    g3[2] += gz;
    sv[0] += sx;
    sv[1] += sy;
    sv[2] += sz;
}

/* Monaghan: s += sum_j m_j min(v_ij . x_ij, 0) / ((rho_i + rho_j)(r^2 + eps)) grad W_ij,
 * which is -sum_j m_j Pi_ij grad W_ij / (2 alpha H c). A boundary row passes
 * v = NULL (at rest) and rho = NULL (mirrored, rho_j = rho_i). */
ROW_FN void row_artificial(const kconst *kc, const uint32_t *restrict id, uint32_t cnt,
                           const float *restrict xt, const float *restrict m, const float *restrict rho,
                           const float *restrict v, float xi, float yi, float zi, float rhoi,
                           const float vi[3], float eps, float s[3], const int per)
{
    float sx = 0.0f, sy = 0.0f, sz = 0.0f;
    const float ui = vi[0], wi = vi[1], ti = vi[2];
    if (v) {
#pragma omp simd reduction(+ : sx, sy, sz)
        for (uint32_t k = 0; k < cnt; k++) {
            X_IJ;
            const float vx = (ui - v[3 * j]) * dx + (wi - v[3 * j + 1]) * dy + (ti - v[3 * j + 2]) * dz;
            const float g = m[j] * floe_neg(vx) / ((rhoi + rho[j]) * (r2 + eps)) * dw_r(kc, r2);
            sx += g * dx;
            sy += g * dy;
            sz += g * dz;
        }
    } else {
        const float inv = 1.0f / (2.0f * rhoi);
#pragma omp simd reduction(+ : sx, sy, sz)
        for (uint32_t k = 0; k < cnt; k++) {
            X_IJ;
            const float vx = ui * dx + wi * dy + ti * dz;
            const float g = m[j] * floe_neg(vx) / (r2 + eps) * dw_r(kc, r2);
            sx += g * dx;
            sy += g * dy;
            sz += g * dz;
        }
        sx *= inv;
        sy *= inv;
        sz *= inv;
    }
    s[0] += sx;
    s[1] += sy;
    s[2] += sz;
}

/* Prefetch the neighbour rows of particle i + PREFETCH_AHEAD: rows are
 * stride * 4 bytes apart and only their first lines are read, a pattern the
 * hardware prefetchers follow poorly. */
#ifndef PREFETCH_AHEAD
#define PREFETCH_AHEAD 4
#endif
static inline void prefetch_rows(const target *t, int nt, uint32_t i, uint32_t n)
{
#if PREFETCH_AHEAD > 0
    if (i + PREFETCH_AHEAD >= n)
        return;
    for (int ti = 0; ti < nt; ti++) {
        const char *row = (const char *)(t[ti].idx + (size_t)(i + PREFETCH_AHEAD) * t[ti].stride);
        __builtin_prefetch(row);
        __builtin_prefetch(row + 64);
    }
#else
    (void)t, (void)nt, (void)i, (void)n;
#endif
}

/* ---- density ------------------------------------------------------------ */

static int st_density(const floe_stage_call *call)
{
    floe_ctx *ctx = call->ctx;
    wcsph_state *ws = call->state;
    const kconst kc = kconst_make(api->sim(ctx));
    fluid f[WCSPH_MAX_SETS];
    target t[2 * WCSPH_MAX_SETS];
    int nf, nt, st;

    if ((st = list_fluids(ctx, f, &nf)) != FLOE_OK)
        return st;
    /* From the next neighbours stage on, the core sums the rows while it
     * builds them (floe_nlist.wsum: the floats floe_row_w8 gives); until
     * then, and wherever it does not, the rows are summed here. */
    api->want_kernel_sums(ctx);
    int packed = 0, pack_done = 0; /* fluid rows over packed (x, y, z, m) records, packed when first needed */
    for (int s = 0; s < nf; s++) {
        const uint32_t n = f[s].info.n;
        if (n == 0)
            continue;
        if ((st = list_targets(ctx, &f[s], f, nf, 1, 0, NULL, NULL, t, &nt)) != FLOE_OK)
            return st;
        int sums_all = 1; /* every row of this set has the core's sums */
        for (int b = 0; b < nt; b++)
            sums_all &= t[b].wsum != NULL;
        if (!sums_all && !pack_done) {
            if ((st = pack_fluids(ctx, ws, &kc, f, nf, 0, &packed)) != FLOE_OK)
                return st;
            pack_done = 1;
        }
        const float *restrict xs = api->attr(ctx, f[s].set, "x", FLOE_VEC3);
        const float *restrict ms = api->attr(ctx, f[s].set, "m", FLOE_F32);
        float *restrict rho = api->attr(ctx, f[s].set, "rho", FLOE_F32);
        if (!rho)
            return api->fail(ctx, FLOE_ERR_ARG, "set '%s' has no f32 attribute 'rho'", f[s].info.name);
        const float rho0 = f[s].info.rest_density;
        if (sums_all) { /* the sum below, of the core's row sums */
#pragma omp parallel for schedule(static)
            for (uint32_t i = 0; i < n; i++) {
                float acc = ms[i];
                for (int b = 0; b < nt; b++)
                    acc += t[b].boundary ? rho0 * t[b].wsum[i] : t[b].wsum[i];
                rho[i] = kc.sigma * acc;
            }
            continue;
        }

#pragma omp parallel for schedule(dynamic, 256) firstprivate(t)
        for (uint32_t i = 0; i < n; i++) {
            prefetch_rows(t, nt, i, n);
            const float xi = xs[3 * i], yi = xs[3 * i + 1], zi = xs[3 * i + 2];
            float acc = ms[i]; /* m_i W(0) / sigma */
            for (int b = 0; b < nt; b++) {
                if (t[b].wsum) {
                    acc += t[b].boundary ? rho0 * t[b].wsum[i] : t[b].wsum[i];
                    continue;
                }
#ifdef ROWS_AVX2
                const float sum = packed && !t[b].boundary
                                      ? floe_row_w8(kc.inv_H, ROW(&t[b], i), ws->A + 4 * t[b].off, xi, yi, zi)
                                      : ROW_CALL(row_w, &kc, ROW(&t[b], i), t[b].x, t[b].mass, xi, yi, zi);
#else
                const float sum = ROW_CALL(row_w, &kc, ROW(&t[b], i), t[b].x, t[b].mass, xi, yi, zi);
#endif
                acc += t[b].boundary ? rho0 * sum : sum; /* boundary: rho0_i V_b */
            }
            rho[i] = kc.sigma * acc;
        }
    }
    return FLOE_OK;
}

/* ---- pressure ------------------------------------------------------------ */

enum { PR_STIFFNESS, PR_SPEED, PR_GAMMA, PR_COURANT, PR_CLAMP };

static int st_pressure(const floe_stage_call *call)
{
    floe_ctx *ctx = call->ctx;
    const floe_sim_info *si = api->sim(ctx);
    const double stiffness = call->param[PR_STIFFNESS].f;
    const double c0 = call->param[PR_SPEED].f;
    const double gamma = call->param[PR_GAMMA].f;
    const double courant = call->param[PR_COURANT].f;
    const int clamp = call->param[PR_CLAMP].b;
    fluid f[WCSPH_MAX_SETS];
    int nf, st;

    if (!(gamma >= 1.0))
        return api->fail(ctx, FLOE_ERR_ARG, "gamma must be >= 1 (got %g)", gamma);
    if ((st = list_fluids(ctx, f, &nf)) != FLOE_OK)
        return st;
    double dt_max = INFINITY;
    for (int s = 0; s < nf; s++) {
        const uint32_t n = f[s].info.n;
        const double rho0 = f[s].info.rest_density;
        const double B = stiffness > 0.0 ? stiffness : rho0 * c0 * c0 / gamma;
        const double c = sqrt(B * gamma / rho0);
        if (!(B > 0.0))
            return api->fail(ctx, FLOE_ERR_ARG, "set '%s': stiffness is 0 (give stiffness or speed_of_sound > 0)",
                             f[s].info.name);
        if (courant > 0.0 && c > 0.0 && courant * si->spacing / c < dt_max)
            dt_max = courant * si->spacing / c;
        if (n == 0)
            continue;
        const float *restrict rho = api->attr(ctx, f[s].set, "rho", FLOE_F32);
        float *restrict p = api->attr(ctx, f[s].set, "p", FLOE_F32);
        if (!rho || !p)
            return api->fail(ctx, FLOE_ERR_ARG, "set '%s' has no f32 attribute '%s'", f[s].info.name,
                             rho ? "p" : "rho");
        const float Bf = (float)B, inv_rho0 = (float)(1.0 / rho0), gf = (float)gamma;
        const float lo = clamp ? 0.0f : -INFINITY;
        if (gamma == 7.0) {
#pragma omp parallel for simd schedule(static)
            for (uint32_t i = 0; i < n; i++) {
                const float r = rho[i] * inv_rho0;
                const float r2 = r * r, r3 = r2 * r;
                p[i] = maxf(Bf * (r3 * r3 * r - 1.0f), lo);
            }
        } else if (gamma == 1.0) {
#pragma omp parallel for simd schedule(static)
            for (uint32_t i = 0; i < n; i++)
                p[i] = maxf(Bf * (rho[i] * inv_rho0 - 1.0f), lo);
        } else {
#pragma omp parallel for schedule(static)
            for (uint32_t i = 0; i < n; i++)
                p[i] = maxf(Bf * (powf(rho[i] * inv_rho0, gf) - 1.0f), lo);
        }
    }
    if (dt_max < INFINITY)
        api->dt_limit(ctx, dt_max);
    return FLOE_OK;
}

/* ---- pressure force ------------------------------------------------------ */

enum { PF_XSPH };

static int st_pressure_force(const floe_stage_call *call)
{
    floe_ctx *ctx = call->ctx;
    wcsph_state *ws = call->state;
    const floe_sim_info *si = api->sim(ctx);
    const kconst kc = kconst_make(si);
    /* XSPH in the same pass: the factor of st_viscosity (kind xsph) */
    const float xsph = (float)call->param[PF_XSPH].f;
    const float cv = xsph > 0.0f && si->dt > 0.0 ? (float)(2.0 * xsph / si->dt) * kc.sigma : 0.0f;
    fluid f[WCSPH_MAX_SETS];
    target t[2 * WCSPH_MAX_SETS];
    int nf, nt, st;

    if ((st = list_fluids(ctx, f, &nf)) != FLOE_OK)
        return st;
    if (!ws)
        return api->fail(ctx, FLOE_ERR, "module state missing");
    const size_t total = nf ? f[nf - 1].off + f[nf - 1].info.n : 0;
    if (total > ws->cap) {
        float *np = realloc(ws->prho2, total * sizeof *np);
        if (!np)
            return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory (%zu particles)", total);
        ws->prho2 = np;
        ws->cap = total;
    }
    /* P = p / rho^2 of every fluid particle, once per call */
    for (int s = 0; s < nf; s++) {
        const uint32_t n = f[s].info.n;
        if (n == 0)
            continue;
        const float *restrict rho = api->attr(ctx, f[s].set, "rho", FLOE_F32);
        const float *restrict p = api->attr(ctx, f[s].set, "p", FLOE_F32);
        float *restrict P = ws->prho2 + f[s].off;
        if (!rho || !p)
            return api->fail(ctx, FLOE_ERR_ARG, "set '%s' has no f32 attribute '%s'", f[s].info.name,
                             rho ? "p" : "rho");
#pragma omp parallel for simd schedule(static)
        for (uint32_t i = 0; i < n; i++)
            P[i] = p[i] / (rho[i] * rho[i]);
    }
    int packed; /* fluid rows over packed records A = (x, y, z, m), B = (P, rho, vx, vy) */
    if ((st = pack_fluids(ctx, ws, &kc, f, nf, PACK_P | PACK_RHO | (cv > 0.0f ? PACK_V | PACK_VZ : 0), &packed)) !=
        FLOE_OK)
        return st;
    for (int s = 0; s < nf; s++) {
        const uint32_t n = f[s].info.n;
        if (n == 0)
            continue;
        const unsigned needs = cv > 0.0f ? NEED_RHO | NEED_V : 0;
        if ((st = list_targets(ctx, &f[s], f, nf, 1, needs, ws->prho2, packed ? ws->umass : NULL, t, &nt)) !=
            FLOE_OK)
            return st;
        const float *restrict xs = api->attr(ctx, f[s].set, "x", FLOE_VEC3);
        float *restrict a = api->attr(ctx, f[s].set, "a", FLOE_VEC3);
        if (!a)
            return api->fail(ctx, FLOE_ERR_ARG, "set '%s' has no vec3 attribute 'a'", f[s].info.name);
        const float *restrict vs = cv > 0.0f ? api->attr(ctx, f[s].set, "v", FLOE_VEC3) : NULL;
        const float *restrict rhos = cv > 0.0f ? api->attr(ctx, f[s].set, "rho", FLOE_F32) : NULL;
        if (cv > 0.0f && (!vs || !rhos))
            return api->fail(ctx, FLOE_ERR_ARG, "set '%s' has no 'v' or 'rho' attribute (xsph)", f[s].info.name);
        const float *restrict Ps = ws->prho2 + f[s].off;
        const float rho0 = f[s].info.rest_density;

#pragma omp parallel for schedule(dynamic, 256) firstprivate(t)
        for (uint32_t i = 0; i < n; i++) {
            prefetch_rows(t, nt, i, n);
            const float xi = xs[3 * i], yi = xs[3 * i + 1], zi = xs[3 * i + 2];
            const float Pi = Ps[i];
            float af[3] = {0.0f, 0.0f, 0.0f}, ab[3] = {0.0f, 0.0f, 0.0f}, sv[3] = {0.0f, 0.0f, 0.0f};
            for (int b = 0; b < nt; b++) {
                if (t[b].boundary) /* sum_b V_b grad W_ib */
                    ROW_CALL(row_grad, &kc, ROW(&t[b], i), t[b].x, t[b].mass, NULL, 0.0f, xi, yi, zi, ab);
#ifdef ROWS_AVX2
                else if (packed) {
                    const float vi[3] = {cv > 0.0f ? vs[3 * i] : 0.0f, cv > 0.0f ? vs[3 * i + 1] : 0.0f,
                                         cv > 0.0f ? vs[3 * i + 2] : 0.0f};
                    if (cv > 0.0f && t[b].umass > 0.0f)
                        row_pf_avx2(&kc, ROW(&t[b], i), ws->A + 4 * t[b].off, ws->B + 4 * t[b].off, t[b].v, Pi,
                                    rhos[i], vi, xi, yi, zi, af, sv, 1, 1, t[b].umass);
                    else if (cv > 0.0f)
                        row_pf_avx2(&kc, ROW(&t[b], i), ws->A + 4 * t[b].off, ws->B + 4 * t[b].off, t[b].v, Pi,
                                    rhos[i], vi, xi, yi, zi, af, sv, 1, 0, 0.0f);
                    else
                        row_pf_avx2(&kc, ROW(&t[b], i), ws->A + 4 * t[b].off, ws->B + 4 * t[b].off, NULL, Pi,
                                    0.0f, vi, xi, yi, zi, af, sv, 0, 0, 0.0f);
                }
#endif
                else if (cv > 0.0f) {
                    const float vi[3] = {vs[3 * i], vs[3 * i + 1], vs[3 * i + 2]};
                    ROW_CALL(row_grad_xsph, &kc, ROW(&t[b], i), t[b].x, t[b].mass, t[b].prho2, t[b].rho, t[b].v,
                             Pi, rhos[i], vi, xi, yi, zi, af, sv);
                } else /* sum_j m_j (P_i + P_j) grad W_ij */
                    ROW_CALL(row_grad, &kc, ROW(&t[b], i), t[b].x, t[b].mass, t[b].prho2, Pi, xi, yi, zi, af);
            }
            if (cv > 0.0f) { /* as a preceding wcsph.viscosity{kind = "xsph"} would add */
                a[3 * i] += cv * sv[0];
                a[3 * i + 1] += cv * sv[1];
                a[3 * i + 2] += cv * sv[2];
            }
            /* boundary: rho0_i V_b (P_i + P_b) with P_b = P_i */
            const float cb = 2.0f * rho0 * Pi;
            a[3 * i] -= af[0] + cb * ab[0];
            a[3 * i + 1] -= af[1] + cb * ab[1];
            a[3 * i + 2] -= af[2] + cb * ab[2];
        }
    }
    return FLOE_OK;
}

/* ---- viscosity ----------------------------------------------------------- */

enum { VI_KIND, VI_ALPHA, VI_BOUNDARY_ALPHA, VI_SPEED };

static int st_viscosity(const floe_stage_call *call)
{
    floe_ctx *ctx = call->ctx;
    const floe_sim_info *si = api->sim(ctx);
    const kconst kc = kconst_make(si);
    const char *kind = call->param[VI_KIND].s ? call->param[VI_KIND].s : "xsph";
    const float alpha = (float)call->param[VI_ALPHA].f;
    const float balpha = (float)call->param[VI_BOUNDARY_ALPHA].f;
    const float c0 = (float)call->param[VI_SPEED].f;
    fluid f[WCSPH_MAX_SETS];
    target t[2 * WCSPH_MAX_SETS];
    int nf, nt, st, artificial;

    if (!strcmp(kind, "xsph"))
        artificial = 0;
    else if (!strcmp(kind, "artificial"))
        artificial = 1;
    else
        return api->fail(ctx, FLOE_ERR_ARG, "viscosity kind '%s': expected xsph or artificial", kind);
    if (alpha == 0.0f && balpha == 0.0f)
        return FLOE_OK;
    /* Factors in front of the row sums:
     * XSPH smooths velocities, v_i += alpha sum_j 2 m_j/(rho_i+rho_j) (v_j-v_i) W_ij,
     * applied as alpha/dt times the sum so that integrate's v += dt a does it.
     * Artificial: a_i -= sum_j m_j Pi_ij grad W_ij
     *                  = 2 alpha H c sum_j m_j min(v_ij.x_ij, 0) / ((rho_i+rho_j)(r^2+eps)) grad W_ij. */
    float cf, cb;
    if (!artificial) {
        if (!(si->dt > 0.0))
            return FLOE_OK; /* nothing to smooth over a zero step */
        cf = (float)(2.0 * alpha / si->dt) * kc.sigma; /* W = sigma w_hat */
        cb = (float)(2.0 * balpha / si->dt) * kc.sigma;
    } else {
        cf = 2.0f * alpha * kc.H * c0;
        cb = 2.0f * balpha * kc.H * c0;
    }
    const float eps = 0.01f * kc.H * kc.H;

    if ((st = list_fluids(ctx, f, &nf)) != FLOE_OK)
        return st;
    /* artificial viscosity over packed records A = (x, y, z, m), B = (0, rho, vx, vy) */
    int packed = 0;
    if (artificial && (st = pack_fluids(ctx, call->state, &kc, f, nf, PACK_RHO | PACK_V, &packed)) != FLOE_OK)
        return st;
    const wcsph_state *ws = call->state; /* the records of the rows above */
    (void)ws;
    for (int s = 0; s < nf; s++) {
        const uint32_t n = f[s].info.n;
        if (n == 0)
            continue;
        if ((st = list_targets(ctx, &f[s], f, nf, balpha > 0.0f, NEED_RHO | NEED_V, NULL, NULL, t, &nt)) != FLOE_OK)
            return st;
        const float *restrict xs = api->attr(ctx, f[s].set, "x", FLOE_VEC3);
        const float *restrict vs = api->attr(ctx, f[s].set, "v", FLOE_VEC3);
        const float *restrict rhos = api->attr(ctx, f[s].set, "rho", FLOE_F32);
        float *restrict a = api->attr(ctx, f[s].set, "a", FLOE_VEC3);
        if (!a)
            return api->fail(ctx, FLOE_ERR_ARG, "set '%s' has no vec3 attribute 'a'", f[s].info.name);
        const float rho0 = f[s].info.rest_density;

#pragma omp parallel for schedule(static)
        for (uint32_t i = 0; i < n; i++) {
            prefetch_rows(t, nt, i, n);
            const float xi = xs[3 * i], yi = xs[3 * i + 1], zi = xs[3 * i + 2];
            const float vi[3] = {vs[3 * i], vs[3 * i + 1], vs[3 * i + 2]};
            const float rhoi = rhos[i];
            float af[3] = {0.0f, 0.0f, 0.0f}, ab[3] = {0.0f, 0.0f, 0.0f};
            for (int b = 0; b < nt; b++) {
                const target *tg = &t[b];
                if (!tg->boundary) {
#ifdef ROWS_AVX2
                    if (packed)
                        row_art_avx2(&kc, ROW(tg, i), ws->A + 4 * tg->off, ws->B + 4 * tg->off, tg->v, xi, yi, zi,
                                     rhoi, vi, eps, af);
                    else
#endif
                    if (artificial)
                        ROW_CALL(row_artificial, &kc, ROW(tg, i), tg->x, tg->mass, tg->rho, tg->v, xi, yi, zi,
                                 rhoi, vi, eps, af);
                    else
                        ROW_CALL(row_xsph, &kc, ROW(tg, i), tg->x, tg->mass, tg->rho, tg->v, xi, yi, zi, rhoi,
                                 vi, af);
                } else {
                    /* boundary at rest (v_b = 0), mass rho0_i V_b, density mirrored (rho_b = rho_i) */
                    if (artificial) {
                        ROW_CALL(row_artificial, &kc, ROW(tg, i), tg->x, tg->mass, NULL, NULL, xi, yi, zi, rhoi,
                                 vi, eps, ab);
                    } else {
                        /* m_b / (rho_i + rho_b) (0 - v_i) W_ib = -V_b W_ib v_i / (2 rho_i), times rho0 below */
                        const float sw =
                            -ROW_CALL(row_w, &kc, ROW(tg, i), tg->x, tg->mass, xi, yi, zi) / (2.0f * rhoi);
                        ab[0] += sw * vi[0];
                        ab[1] += sw * vi[1];
                        ab[2] += sw * vi[2];
                    }
                }
            }
            const float cbi = cb * rho0; /* boundary mass rho0_i V_b */
            a[3 * i] += cf * af[0] + cbi * ab[0];
            a[3 * i + 1] += cf * af[1] + cbi * ab[1];
            a[3 * i + 2] += cf * af[2] + cbi * ab[2];
        }
    }
    return FLOE_OK;
}

/* ---- descriptors --------------------------------------------------------- */

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

static const floe_param_desc pressure_params[] = {
    [PR_STIFFNESS] = { FLOE_SIZED(floe_param_desc), .name = "stiffness", .type = FLOE_PARAM_FLOAT,
        .def = 0, .min = 0, .max = 1e12, .unit = "Pa",
        .doc = "Tait stiffness B; 0 derives it from speed_of_sound: B = rho0 c^2 / gamma" },
    [PR_SPEED] = { FLOE_SIZED(floe_param_desc), .name = "speed_of_sound", .type = FLOE_PARAM_FLOAT,
        .def = 20, .min = 1e-3, .max = 1e6, .unit = "m/s",
        .doc = "numerical speed of sound c when stiffness is 0 (about 10x the largest expected speed for ~1% compression)" },
    [PR_GAMMA] = { FLOE_SIZED(floe_param_desc), .name = "gamma", .type = FLOE_PARAM_FLOAT,
        .def = 7, .min = 1, .max = 10, .unit = "",
        .doc = "Tait exponent (7 for water, evaluated exactly by multiplications)" },
    [PR_COURANT] = { FLOE_SIZED(floe_param_desc), .name = "courant", .type = FLOE_PARAM_FLOAT,
        .def = 0.4, .min = 0, .max = 10, .unit = "",
        .doc = "acoustic CFL number: proposes dt <= courant d / c with c = sqrt(B gamma / rho0); 0 proposes nothing" },
    [PR_CLAMP] = { FLOE_SIZED(floe_param_desc), .name = "clamp_negative", .type = FLOE_PARAM_BOOL,
        .def = 1, .unit = "",
        .doc = "clamp negative pressures (expansion, free surface) to 0" },
    {0},
};

static const floe_attr_desc pressure_attrs[] = {
    FLUID("rho", FLOE_F32, FLOE_READ),
    FLUID("p", FLOE_F32, FLOE_WRITE | FLOE_OVERWRITE),
    {0},
};

static const floe_param_desc pressure_force_params[] = {
    [PF_XSPH] = { FLOE_SIZED(floe_param_desc), .name = "xsph", .type = FLOE_PARAM_FLOAT,
        .def = 0, .min = 0, .max = 10, .unit = "",
        .doc = "XSPH coefficient between fluid particles summed in the same neighbour pass (the same term as "
               "wcsph.viscosity{kind = \"xsph\", alpha = xsph} before this stage, one walk of the lists "
               "instead of two); 0 = none" },
    {0},
};

static const floe_attr_desc pressure_force_attrs[] = {
    FLUID("x", FLOE_VEC3, FLOE_READ),
    FLUID("v", FLOE_VEC3, FLOE_READ),
    FLUID("m", FLOE_F32, FLOE_READ),
    FLUID("rho", FLOE_F32, FLOE_READ),
    FLUID("p", FLOE_F32, FLOE_READ),
    FLUID("a", FLOE_VEC3, FLOE_READ | FLOE_WRITE),
    BOUND("x", FLOE_VEC3),
    BOUND("V", FLOE_F32),
    {0},
};

static const floe_param_desc viscosity_params[] = {
    [VI_KIND] = { FLOE_SIZED(floe_param_desc), .name = "kind", .type = FLOE_PARAM_STRING,
        .def_str = "xsph", .choices = "xsph|artificial", .unit = "",
        .doc = "xsph: velocity smoothing a_i += alpha/dt sum_j 2 m_j/(rho_i+rho_j) (v_j-v_i) W_ij; "
               "artificial: Monaghan 1992, a_i -= sum_j m_j Pi_ij grad W_ij on approaching pairs" },
    [VI_ALPHA] = { FLOE_SIZED(floe_param_desc), .name = "alpha", .type = FLOE_PARAM_FLOAT,
        .def = 0.01, .min = 0, .max = 10, .unit = "",
        .doc = "viscosity coefficient between fluid particles (xsph: fraction of relative velocity smoothed per step)" },
    [VI_BOUNDARY_ALPHA] = { FLOE_SIZED(floe_param_desc), .name = "boundary_alpha", .type = FLOE_PARAM_FLOAT,
        .def = 0, .min = 0, .max = 10, .unit = "",
        .doc = "coefficient against boundary particles (at rest, mass rho0 V_b); 0 = free slip" },
    [VI_SPEED] = { FLOE_SIZED(floe_param_desc), .name = "speed_of_sound", .type = FLOE_PARAM_FLOAT,
        .def = 20, .min = 0, .max = 1e6, .unit = "m/s",
        .doc = "speed of sound c in Pi_ij (artificial only; use the pressure stage's value)" },
    {0},
};

static const floe_attr_desc viscosity_attrs[] = {
    FLUID("x", FLOE_VEC3, FLOE_READ),
    FLUID("v", FLOE_VEC3, FLOE_READ),
    FLUID("m", FLOE_F32, FLOE_READ),
    FLUID("rho", FLOE_F32, FLOE_READ),
    FLUID("a", FLOE_VEC3, FLOE_READ | FLOE_WRITE),
    BOUND("x", FLOE_VEC3),
    BOUND("V", FLOE_F32),
    {0},
};

/* OpenCL path (wcsph_cl.c) */
extern const floe_api *wcsph_cl_api;
int wcsph_cl_density(const floe_stage_call *call);
int wcsph_cl_pressure(const floe_stage_call *call);
int wcsph_cl_viscosity(const floe_stage_call *call);
int wcsph_cl_pressure_force(const floe_stage_call *call);

static const floe_stage_desc stages[] = {
    { FLOE_SIZED(floe_stage_desc), .name = "density",
      .doc = "SPH density rho_i = m_i W(0) + sum_j m_j W_ij + sum_b rho0 V_b W_ib (after 'neighbours')",
      .run = st_density, .run_cl = wcsph_cl_density, .attrs = density_attrs },
    { FLOE_SIZED(floe_stage_desc), .name = "pressure",
      .doc = "Tait equation of state p = B((rho/rho0)^gamma - 1); proposes the acoustic dt limit",
      .run = st_pressure, .run_cl = wcsph_cl_pressure, .params = pressure_params, .attrs = pressure_attrs },
    { FLOE_SIZED(floe_stage_desc), .name = "viscosity",
      .doc = "XSPH or artificial viscosity, added to a (after 'gravity')",
      .run = st_viscosity, .run_cl = wcsph_cl_viscosity, .params = viscosity_params, .attrs = viscosity_attrs },
    { FLOE_SIZED(floe_stage_desc), .name = "pressure_force",
      .doc = "symmetric pressure acceleration with Akinci boundaries (pressure mirroring), added to a; "
             "optionally XSPH viscosity in the same pass",
      .run = st_pressure_force, .run_cl = wcsph_cl_pressure_force, .params = pressure_force_params,
      .attrs = pressure_force_attrs },
    {0},
};

static const floe_module_desc module = {
    FLOE_SIZED(floe_module_desc),
    .abi_major = FLOE_ABI_MAJOR,
    .abi_minor = FLOE_ABI_MINOR,
    .name = "wcsph",
    .version = "1.0.0",
    .summary = "Weakly compressible SPH (Becker & Teschner 2007): Tait equation of state, "
               "symmetric pressure force, XSPH/artificial viscosity, Akinci boundaries",
    .stages = stages,
    .init = wcsph_init,
    .fini = wcsph_fini,
};

FLOE_MODULE(wcsph)
{
    api = wcsph_cl_api = core;
    return &module;
}
