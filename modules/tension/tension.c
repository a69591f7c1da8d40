/* Floe module "tension": surface tension stages that add to the acceleration
 * `a` after the core `gravity` stage and before the pressure force / pressure
 * solve, so they serve WCSPH and IISPH alike.
 *
 *   he            He et al. 2014 surface tension from the colour-field
 *                 gradient energy, as written in Kim 2020 section 3.2.4:
 *                   c_i   = sum_j V_j W_ij                               (33)
 *                   grad c_i = sum_j V_j c_j grad W_ij / sum_j V_j W_ij   (34)
 *                   F_i^s = kappa/4 sum_j V_i V_j (|grad c_i|^2 + |grad c_j|^2) grad W_ij   (35)
 *                 (V_j = m_j / rho_j; the sums include j = i for c_i).
 *                 Boundary particles count in the colour field with colour
 *                 `wall_colour` (1: the wall is wetted, no interface along
 *                 it; 0: the wall looks like air). Writes the attributes
 *                 `colour` (c_i) and `colour_grad2` (|grad c_i|^2, 1/m^2).
 *   air_pressure  Kim 2020 eq. 36 (after He et al. 2014):
 *                   F_i^a = V_i p_atm sum_j V_j grad W_ij                 (36)
 *                 a uniform outside pressure that acts where the
 *                 neighbourhood is cut by the free surface; boundary
 *                 particles count with weight `wall_colour`.
 *   akinci        Akinci et al. 2013 cohesion + curvature + adhesion:
 *                   n_i  = H sum_j V_j grad W_ij                          (normals)
 *                   a_i += sum_j K_ij (-gamma m_j C(r) x_ij/r - gamma (n_i - n_j)),
 *                          K_ij = 2 rho0 / (rho_i + rho_j)
 *                   a_i -= beta sum_b rho0 V_b A(r) x_ib/r                (adhesion)
 *                 with Akinci's cohesion spline C and adhesion kernel A of
 *                 support H. Writes the attribute `normal`.
 *
 * The forces above become accelerations a = F / m_i (V_i / m_i = 1 / rho_i).
 * j runs over the neighbours in every fluid set (they form one liquid), b
 * over those in every boundary set. On periodic axes x_i - x_j is the
 * minimum image (the comparisons of floe_periodic_delta, branch-free); the
 * periodic/plain choice is made once per loop.
 *
 * Speed: as modules/wcsph/wcsph.c. Each pass is a gather with a static
 * OpenMP schedule, each neighbour row an omp simd reduction with a
 * branch-free kernel; V = m / rho is computed once per call into scratch.
 * Bitwise the same results for a given thread count. */
#include <floe/kernel.h>
#include <floe/module.h>
#include <floe/module_sets.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const floe_api *api;

#if defined(__GNUC__)
#define ROW_FN static inline __attribute__((always_inline))
#else
#define ROW_FN static inline
#endif

#define TEN_MAX_SETS 16

/* ---- module state: V = m / rho and the Shepard sums ----------------------- */

typedef struct ten_state {
    float *vol;     /* V_j of every fluid set, concatenated */
    float *shepard; /* sum_j V_j W_ij over fluid and boundary (eq. 34 denominator) */
    size_t cap;
} ten_state;

static int ten_init(floe_ctx *ctx, void **state)
{
    (void)ctx;
    ten_state *s = calloc(1, sizeof *s);
    if (!s)
        return FLOE_ERR_NOMEM;
    *state = s;
    return FLOE_OK;
}

static void ten_fini(void *state)
{
    ten_state *s = state;
    if (s) {
        free(s->vol);
        free(s->shepard);
    }
    free(s);
}

/* ---- kernel and periodic images ------------------------------------------ */

typedef struct kconst {
    float H, inv_H;
    float sigma;  /* W(0) */
    float g;      /* sigma / H */
    float r_min2;
    float L[3], hL[3];
    int periodic;
    int dim;
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
    c.dim = si->dim;
    for (int a = 0; a < 3; a++) {
        const int on = (si->periodic >> a) & 1u;
        c.L[a] = on ? si->period[a] : 0.0f;
        c.hL[a] = on ? 0.5f * si->period[a] : INFINITY;
    }
    return c;
}


/* W / sigma and (dW/dr) / r at distance^2 r2: <floe/kernel.h> */
static inline float w_hat(const kconst *c, float r2) { return floe_w_hat(c->inv_H, r2); }

static inline float dw_r(const kconst *c, float r2) { return floe_dw_r_hat(c->g, c->inv_H, c->r_min2, r2); }

/* ---- sets ---------------------------------------------------------------- */

typedef struct target {
    int boundary;
    const float *x;
    const float *w;    /* V_j (fluid, scratch) or V_b (boundary) */
    const float *m, *rho;
    const float *c;    /* colour (fluid) */
    const float *g2;   /* |grad c|^2 (fluid) */
    const float *nrm;  /* normals (fluid) */
    const floe_nlist *nl;
} target;

typedef floe_fluid fluid; /* <floe/module_sets.h>: set, info, offset in the module's scratch */

static int list_fluids(floe_ctx *ctx, fluid *f, int *nf, size_t *total)
{
    return floe_fluid_sets(api, ctx, f, nf, total);
}

static float *need(floe_ctx *ctx, floe_set set, const char *set_name, const char *attr, floe_type type, int *status)
{
    return (float *)floe_need(api, ctx, set, set_name, attr, type, status); /* attribute data is writable */
}

/* Scratch for n particles; V_j = m_j / rho_j of every fluid set. */
static int prepare(floe_ctx *ctx, ten_state *ts, const fluid *f, int nf, size_t total)
{
    if (!ts)
        return api->fail(ctx, FLOE_ERR, "module state missing");
    if (total > ts->cap) {
        float *v = realloc(ts->vol, total * sizeof *v);
        if (!v)
            return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory (%zu particles)", total);
        ts->vol = v;
        float *s = realloc(ts->shepard, total * sizeof *s);
        if (!s)
            return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory (%zu particles)", total);
        ts->shepard = s;
        ts->cap = total;
    }
    int st = FLOE_OK;
    for (int s = 0; s < nf; s++) {
        const uint32_t n = f[s].info.n;
        if (n == 0)
            continue;
        const float *restrict m = need(ctx, f[s].set, f[s].info.name, "m", FLOE_F32, &st);
        const float *restrict rho = need(ctx, f[s].set, f[s].info.name, "rho", FLOE_F32, &st);
        if (st != FLOE_OK)
            return st;
        float *restrict V = ts->vol + f[s].off;
#pragma omp parallel for simd schedule(static)
        for (uint32_t i = 0; i < n; i++)
            V[i] = m[i] / rho[i];
    }
    return FLOE_OK;
}

static int list_targets(floe_ctx *ctx, const fluid *q, const fluid *f, int nf, int with_boundary, const float *vol,
                        target *t, int *nt)
{
    int st = FLOE_OK;
    int n = 0;
    for (int s = 0; s < nf; s++) {
        if (f[s].info.n == 0)
            continue;
        target *tg = &t[n++];
        memset(tg, 0, sizeof *tg);
        tg->x = need(ctx, f[s].set, f[s].info.name, "x", FLOE_VEC3, &st);
        tg->m = need(ctx, f[s].set, f[s].info.name, "m", FLOE_F32, &st);
        tg->rho = need(ctx, f[s].set, f[s].info.name, "rho", FLOE_F32, &st);
        tg->w = vol + f[s].off;
        /* written by this module's stages; absent ones stay NULL and are not read */
        tg->c = api->attr(ctx, f[s].set, "colour", FLOE_F32);
        tg->g2 = api->attr(ctx, f[s].set, "colour_grad2", FLOE_F32);
        tg->nrm = api->attr(ctx, f[s].set, "normal", FLOE_VEC3);
        tg->nl = api->neighbours(ctx, q->set, f[s].set);
    }
    if (with_boundary) {
        floe_set b[TEN_MAX_SETS];
        int nb = api->set_list(ctx, FLOE_SET_BOUNDARY, b, TEN_MAX_SETS);
        if (nb < 0 || nb > TEN_MAX_SETS)
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
            tg->x = need(ctx, b[s], bi.name, "x", FLOE_VEC3, &st);
            tg->w = need(ctx, b[s], bi.name, "V", FLOE_F32, &st);
            tg->nl = api->neighbours(ctx, q->set, b[s]);
        }
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

/* ---- sums over one neighbour row ------------------------------------------ */

#define ROW(nl, i) (nl)->idx + (size_t)(i) * (nl)->stride, (nl)->count[i]
#define X_IJ(PER)                                                                      \
    const uint32_t j = id[k];                                                          \
    float dx = xi - xt[3 * j], dy = yi - xt[3 * j + 1], dz = zi - xt[3 * j + 2];       \
    if (PER) {                                                                         \
        dx -= kc->L[0] * ((float)(dx > kc->hL[0]) - (float)(dx < -kc->hL[0]));         \
        dy -= kc->L[1] * ((float)(dy > kc->hL[1]) - (float)(dy < -kc->hL[1]));         \
        dz -= kc->L[2] * ((float)(dz > kc->hL[2]) - (float)(dz < -kc->hL[2]));         \
    }                                                                                  \
    const float r2 = dx * dx + dy * dy + dz * dz

/* sum_j w_j W_ij / sigma */
ROW_FN float row_w(const kconst *kc, const uint32_t *restrict id, uint32_t cnt, const float *restrict xt,
                   const float *restrict w, float xi, float yi, float zi, const int PER)
{
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (uint32_t k = 0; k < cnt; k++) {
        X_IJ(PER);
        s += w[j] * w_hat(kc, r2);
    }
    return s;
}

/* s += sum_j w_j c_j grad W_ij (c = NULL: c_j = 1) */
ROW_FN void row_grad(const kconst *kc, const uint32_t *restrict id, uint32_t cnt, const float *restrict xt,
                     const float *restrict w, const float *restrict c, float xi, float yi, float zi, float s[3],
                     const int PER)
{
    float sx = 0.0f, sy = 0.0f, sz = 0.0f;
    if (c) {
#pragma omp simd reduction(+ : sx, sy, sz)
        for (uint32_t k = 0; k < cnt; k++) {
            X_IJ(PER);
            const float gk = w[j] * c[j] * dw_r(kc, r2);
            sx += gk * dx;
            sy += gk * dy;
            sz += gk * dz;
        }
    } else {
#pragma omp simd reduction(+ : sx, sy, sz)
        for (uint32_t k = 0; k < cnt; k++) {
            X_IJ(PER);
            const float gk = w[j] * dw_r(kc, r2);
            sx += gk * dx;
            sy += gk * dy;
            sz += gk * dz;
        }
    }
    s[0] += sx;
    s[1] += sy;
    s[2] += sz;
}

/* s += sum_j w_j (gi + g_j) grad W_ij */
ROW_FN void row_energy(const kconst *kc, const uint32_t *restrict id, uint32_t cnt, const float *restrict xt,
                       const float *restrict w, const float *restrict g2, float gi, float xi, float yi, float zi,
                       float s[3], const int PER)
{
    float sx = 0.0f, sy = 0.0f, sz = 0.0f;
#pragma omp simd reduction(+ : sx, sy, sz)
    for (uint32_t k = 0; k < cnt; k++) {
        X_IJ(PER);
        const float gk = w[j] * (gi + g2[j]) * dw_r(kc, r2);
        sx += gk * dx;
        sy += gk * dy;
        sz += gk * dz;
    }
    s[0] += sx;
    s[1] += sy;
    s[2] += sz;
}

/* Akinci 2013 cohesion spline C(r) / (32 / (pi H^9)), r <= H:
 *   (H - r)^3 r^3                   H/2 < r <= H
 *   2 (H - r)^3 r^3 - H^6 / 64      0 < r <= H/2
 * branch-free: t = max(H - r, 0); the lower branch adds (H-r)^3 r^3 - H^6/64
 * when r <= H/2 (a mask, exact). */
ROW_FN float cohesion_hat(const kconst *kc, float r)
{
    const float t = floe_pos(kc->H - r);
    const float u = t * t * t * r * r * r;
    const float inner = (float)(r <= 0.5f * kc->H);
    const float H3 = kc->H * kc->H * kc->H;
    return u + inner * (u - H3 * H3 * (1.0f / 64.0f));
}

/* Akinci 2013 adhesion kernel A(r) / (0.007 / H^3.25): (-4 r^2/H + 6 r - 2H)^(1/4)
 * for H/2 < r <= H, else 0. */
ROW_FN float adhesion_hat(const kconst *kc, float r)
{
    const float on = (float)(r > 0.5f * kc->H) * (float)(r <= kc->H);
    const float p = floe_pos(-4.0f * r * r * kc->inv_H + 6.0f * r - 2.0f * kc->H);
    return on * sqrtf(sqrtf(p));
}

/* s += sum_j 2/(rho_i+rho_j) (cc m_j C(r) x_ij / r + (n_i - n_j)) (the minus and gamma rho0 outside) */
ROW_FN void row_akinci(const kconst *kc, const uint32_t *restrict id, uint32_t cnt, const float *restrict xt,
                       const float *restrict m, const float *restrict rho, const float *restrict nrm, float rhoi,
                       const float ni[3], float cc, float xi, float yi, float zi, float s[3], const int PER)
{
    float sx = 0.0f, sy = 0.0f, sz = 0.0f;
#pragma omp simd reduction(+ : sx, sy, sz)
    for (uint32_t k = 0; k < cnt; k++) {
        X_IJ(PER);
        const float r = sqrtf(r2 + kc->r_min2);
        const float K = 2.0f / (rhoi + rho[j]);
        const float coh = cc * m[j] * cohesion_hat(kc, r) / r;
        sx += K * (coh * dx + (ni[0] - nrm[3 * j]));
        sy += K * (coh * dy + (ni[1] - nrm[3 * j + 1]));
        sz += K * (coh * dz + (ni[2] - nrm[3 * j + 2]));
    }
    s[0] += sx;
    s[1] += sy;
    s[2] += sz;
}

/* s += sum_b V_b A(r) x_ib / r  (A / its constant) */
ROW_FN void row_adhesion(const kconst *kc, const uint32_t *restrict id, uint32_t cnt, const float *restrict xt,
                         const float *restrict V, float xi, float yi, float zi, float s[3], const int PER)
{
    float sx = 0.0f, sy = 0.0f, sz = 0.0f;
#pragma omp simd reduction(+ : sx, sy, sz)
    for (uint32_t k = 0; k < cnt; k++) {
        X_IJ(PER);
        const float r = sqrtf(r2 + kc->r_min2);
        const float gk = V[j] * adhesion_hat(kc, r) / r;
        sx += gk * dx;
        sy += gk * dy;
        sz += gk * dz;
    }
    s[0] += sx;
    s[1] += sy;
    s[2] += sz;
}

#ifndef PREFETCH_AHEAD
#define PREFETCH_AHEAD 4
#endif
static inline void prefetch_rows(const target *t, int nt, uint32_t i, uint32_t n)
{
#if PREFETCH_AHEAD > 0 && defined(__GNUC__)
    if (i + PREFETCH_AHEAD >= n)
        return;
    for (int ti = 0; ti < nt; ti++) {
        const char *row = (const char *)(t[ti].nl->idx + (size_t)(i + PREFETCH_AHEAD) * t[ti].nl->stride);
        __builtin_prefetch(row);
        __builtin_prefetch(row + 64);
    }
#else
    (void)t, (void)nt, (void)i, (void)n;
#endif
}

#define FOR_EACH_PARTICLE(periodic, n, BODY)                                   \
    do {                                                                       \
        if (periodic) {                                                        \
            _Pragma("omp parallel for schedule(static)")                      \
            for (uint32_t i_ = 0; i_ < (n); i_++)                              \
                BODY(i_, 1);                                                   \
        } else {                                                               \
            _Pragma("omp parallel for schedule(static)")                      \
            for (uint32_t i_ = 0; i_ < (n); i_++)                              \
                BODY(i_, 0);                                                   \
        }                                                                      \
    } while (0)

/* One fluid set's pass: the query set's data and its targets. */
typedef struct job {
    const kconst *kc;
    const target *t;
    int nt;
    uint32_t n;
    const float *x, *V, *rho;
    float *c, *shep, *g2, *nrm; /* per pass */
    const float *c_in, *g2_in, *n_in;
    float *a;
    float wall;                 /* he, air_pressure: colour of boundary particles */
    float coh;                  /* akinci: cohesion kernel constant */
    float coef, coef2;          /* per stage */
} job;

/* ---- he: colour, gradient, force ------------------------------------------- */

/* c_i = V_i W(0) + sum_j V_j W_ij + wall sum_b V_b W_ib, Shepard sum with wall = 1 */
ROW_FN void he_colour(const job *J, uint32_t i, const int PER)
{
    const kconst *kc = J->kc;
    prefetch_rows(J->t, J->nt, i, J->n);
    const float xi = J->x[3 * i], yi = J->x[3 * i + 1], zi = J->x[3 * i + 2];
    float sf = J->V[i], sb = 0.0f;
    for (int b = 0; b < J->nt; b++) {
        const float s = row_w(kc, ROW(J->t[b].nl, i), J->t[b].x, J->t[b].w, xi, yi, zi, PER);
        if (J->t[b].boundary)
            sb += s;
        else
            sf += s;
    }
    J->c[i] = kc->sigma * (sf + J->wall * sb);
    J->shep[i] = kc->sigma * (sf + sb);
}

/* |grad c_i|^2 with grad c_i = (sum_j V_j c_j grad W_ij + wall sum_b V_b grad W_ib) / shepard_i */
ROW_FN void he_gradient(const job *J, uint32_t i, const int PER)
{
    const kconst *kc = J->kc;
    prefetch_rows(J->t, J->nt, i, J->n);
    const float xi = J->x[3 * i], yi = J->x[3 * i + 1], zi = J->x[3 * i + 2];
    float gf[3] = {0.0f, 0.0f, 0.0f}, gb[3] = {0.0f, 0.0f, 0.0f};
    for (int b = 0; b < J->nt; b++) {
        const target *tg = &J->t[b];
        if (tg->boundary)
            row_grad(kc, ROW(tg->nl, i), tg->x, tg->w, NULL, xi, yi, zi, gb, PER);
        else
            row_grad(kc, ROW(tg->nl, i), tg->x, tg->w, tg->c, xi, yi, zi, gf, PER);
    }
    const float inv = 1.0f / J->shep[i];
    const float gx = (gf[0] + J->wall * gb[0]) * inv, gy = (gf[1] + J->wall * gb[1]) * inv,
                gz = (gf[2] + J->wall * gb[2]) * inv;
    J->g2[i] = gx * gx + gy * gy + gz * gz;
}

/* a_i += kappa / (4 rho_i) sum_j V_j (g_i + g_j) grad W_ij */
ROW_FN void he_force(const job *J, uint32_t i, const int PER)
{
    const kconst *kc = J->kc;
    prefetch_rows(J->t, J->nt, i, J->n);
    const float xi = J->x[3 * i], yi = J->x[3 * i + 1], zi = J->x[3 * i + 2];
    const float gi = J->g2_in[i];
    float s[3] = {0.0f, 0.0f, 0.0f};
    for (int b = 0; b < J->nt; b++) {
        const target *tg = &J->t[b];
        if (!tg->boundary)
            row_energy(kc, ROW(tg->nl, i), tg->x, tg->w, tg->g2, gi, xi, yi, zi, s, PER);
    }
    const float f = J->coef / J->rho[i];
    J->a[3 * i] += f * s[0];
    J->a[3 * i + 1] += f * s[1];
    J->a[3 * i + 2] += f * s[2];
}

#define HE_COLOUR(i, PER) he_colour(&J, (i), (PER))
#define HE_GRADIENT(i, PER) he_gradient(&J, (i), (PER))
#define HE_FORCE(i, PER) he_force(&J, (i), (PER))

enum { HE_KAPPA, HE_WALL };

/* OpenCL path (tension_cl.c): the same coefficients, summed on the device */
extern const floe_api *ten_cl_api;
int ten_cl_he(const floe_stage_call *call, float kappa, float wall);
int ten_cl_air(const floe_stage_call *call, float p_atm, float wall);
int ten_cl_akinci(const floe_stage_call *call, double gamma, double beta, double cC, double cA);

static int st_he_cl(const floe_stage_call *call)
{
    return ten_cl_he(call, (float)call->param[HE_KAPPA].f, (float)call->param[HE_WALL].f);
}

static int st_he(const floe_stage_call *call)
{
    floe_ctx *ctx = call->ctx;
    const kconst kc = kconst_make(api->sim(ctx));
    ten_state *ts = call->state;
    const float kappa = (float)call->param[HE_KAPPA].f, wall = (float)call->param[HE_WALL].f;
    fluid f[TEN_MAX_SETS];
    target t[2 * TEN_MAX_SETS];
    int nf, nt, st;
    size_t total;

    if ((st = list_fluids(ctx, f, &nf, &total)) != FLOE_OK)
        return st;
    if ((st = prepare(ctx, ts, f, nf, total)) != FLOE_OK)
        return st;
    /* three passes over all fluid sets: each needs the previous one everywhere */
    for (int pass = 0; pass < 3; pass++) {
        for (int s = 0; s < nf; s++) {
            const uint32_t n = f[s].info.n;
            if (n == 0)
                continue;
            if ((st = list_targets(ctx, &f[s], f, nf, pass < 2, ts->vol, t, &nt)) != FLOE_OK)
                return st;
            job J = {
                .kc = &kc, .t = t, .nt = nt, .n = n,
                .x = need(ctx, f[s].set, f[s].info.name, "x", FLOE_VEC3, &st),
                .V = ts->vol + f[s].off,
                .rho = need(ctx, f[s].set, f[s].info.name, "rho", FLOE_F32, &st),
                .c = need(ctx, f[s].set, f[s].info.name, "colour", FLOE_F32, &st),
                .shep = ts->shepard + f[s].off,
                .g2 = need(ctx, f[s].set, f[s].info.name, "colour_grad2", FLOE_F32, &st),
                .a = need(ctx, f[s].set, f[s].info.name, "a", FLOE_VEC3, &st),
                .wall = wall,
                .coef = 0.25f * kappa,
            };
            if (st != FLOE_OK)
                return st;
            for (int b = 0; b < nt; b++)
                if (!t[b].boundary && (!t[b].c || !t[b].g2))
                    return api->fail(ctx, FLOE_ERR_ARG, "a fluid set has no colour attributes");
            J.g2_in = J.g2;
            if (pass == 0)
                FOR_EACH_PARTICLE(kc.periodic, n, HE_COLOUR);
            else if (pass == 1)
                FOR_EACH_PARTICLE(kc.periodic, n, HE_GRADIENT);
            else if (kappa != 0.0f)
                FOR_EACH_PARTICLE(kc.periodic, n, HE_FORCE);
        }
    }
    return FLOE_OK;
}

/* ---- air pressure (eq. 36) --------------------------------------------------- */

/* a_i += p_atm / rho_i (sum_j V_j grad W_ij + wall sum_b V_b grad W_ib) */
ROW_FN void air_force(const job *J, uint32_t i, const int PER)
{
    const kconst *kc = J->kc;
    prefetch_rows(J->t, J->nt, i, J->n);
    const float xi = J->x[3 * i], yi = J->x[3 * i + 1], zi = J->x[3 * i + 2];
    float gf[3] = {0.0f, 0.0f, 0.0f}, gb[3] = {0.0f, 0.0f, 0.0f};
    for (int b = 0; b < J->nt; b++) {
        const target *tg = &J->t[b];
        row_grad(kc, ROW(tg->nl, i), tg->x, tg->w, NULL, xi, yi, zi, tg->boundary ? gb : gf, PER);
    }
    const float f = J->coef / J->rho[i];
    J->a[3 * i] += f * (gf[0] + J->wall * gb[0]);
    J->a[3 * i + 1] += f * (gf[1] + J->wall * gb[1]);
    J->a[3 * i + 2] += f * (gf[2] + J->wall * gb[2]);
}

#define AIR_FORCE(i, PER) air_force(&J, (i), (PER))

enum { AIR_P, AIR_WALL };

static int st_air_cl(const floe_stage_call *call)
{
    const float p_atm = (float)call->param[AIR_P].f, wall = (float)call->param[AIR_WALL].f;
    return p_atm == 0.0f ? FLOE_OK : ten_cl_air(call, p_atm, wall);
}

static int st_air(const floe_stage_call *call)
{
    floe_ctx *ctx = call->ctx;
    const kconst kc = kconst_make(api->sim(ctx));
    ten_state *ts = call->state;
    const float p_atm = (float)call->param[AIR_P].f, wall = (float)call->param[AIR_WALL].f;
    fluid f[TEN_MAX_SETS];
    target t[2 * TEN_MAX_SETS];
    int nf, nt, st;
    size_t total;

    if (p_atm == 0.0f)
        return FLOE_OK;
    if ((st = list_fluids(ctx, f, &nf, &total)) != FLOE_OK)
        return st;
    if ((st = prepare(ctx, ts, f, nf, total)) != FLOE_OK)
        return st;
    for (int s = 0; s < nf; s++) {
        const uint32_t n = f[s].info.n;
        if (n == 0)
            continue;
        if ((st = list_targets(ctx, &f[s], f, nf, wall != 0.0f, ts->vol, t, &nt)) != FLOE_OK)
            return st;
        job J = {
            .kc = &kc, .t = t, .nt = nt, .n = n,
            .x = need(ctx, f[s].set, f[s].info.name, "x", FLOE_VEC3, &st),
            .rho = need(ctx, f[s].set, f[s].info.name, "rho", FLOE_F32, &st),
            .a = need(ctx, f[s].set, f[s].info.name, "a", FLOE_VEC3, &st),
            .wall = wall,
            .coef = p_atm,
        };
        if (st != FLOE_OK)
            return st;
        FOR_EACH_PARTICLE(kc.periodic, n, AIR_FORCE);
    }
    return FLOE_OK;
}

/* ---- akinci: normals, then cohesion + curvature + adhesion ------------------- */

/* n_i = H sum_j V_j grad W_ij (fluid only) */
ROW_FN void ak_normal(const job *J, uint32_t i, const int PER)
{
    const kconst *kc = J->kc;
    prefetch_rows(J->t, J->nt, i, J->n);
    const float xi = J->x[3 * i], yi = J->x[3 * i + 1], zi = J->x[3 * i + 2];
    float s[3] = {0.0f, 0.0f, 0.0f};
    for (int b = 0; b < J->nt; b++)
        if (!J->t[b].boundary)
            row_grad(kc, ROW(J->t[b].nl, i), J->t[b].x, J->t[b].w, NULL, xi, yi, zi, s, PER);
    J->nrm[3 * i] = kc->H * s[0];
    J->nrm[3 * i + 1] = kc->H * s[1];
    J->nrm[3 * i + 2] = kc->H * s[2];
}

/* a_i -= gamma rho0 sum_j 2/(rho_i+rho_j) (m_j C(r) x_ij/r + n_i - n_j) + beta rho0 sum_b V_b A(r) x_ib/r */
ROW_FN void ak_force(const job *J, uint32_t i, const int PER)
{
    const kconst *kc = J->kc;
    prefetch_rows(J->t, J->nt, i, J->n);
    const float xi = J->x[3 * i], yi = J->x[3 * i + 1], zi = J->x[3 * i + 2];
    const float ni[3] = {J->n_in[3 * i], J->n_in[3 * i + 1], J->n_in[3 * i + 2]};
    const float rhoi = J->rho[i];
    float sf[3] = {0.0f, 0.0f, 0.0f}, sb[3] = {0.0f, 0.0f, 0.0f};
    for (int b = 0; b < J->nt; b++) {
        const target *tg = &J->t[b];
        if (tg->boundary)
            row_adhesion(kc, ROW(tg->nl, i), tg->x, tg->w, xi, yi, zi, sb, PER);
        else
            row_akinci(kc, ROW(tg->nl, i), tg->x, tg->m, tg->rho, tg->nrm, rhoi, ni, J->coh, xi, yi, zi, sf, PER);
    }
    J->a[3 * i] -= J->coef * sf[0] + J->coef2 * sb[0];
    J->a[3 * i + 1] -= J->coef * sf[1] + J->coef2 * sb[1];
    J->a[3 * i + 2] -= J->coef * sf[2] + J->coef2 * sb[2];
}

#define AK_NORMAL(i, PER) ak_normal(&J, (i), (PER))
#define AK_FORCE(i, PER) ak_force(&J, (i), (PER))

enum { AK_GAMMA, AK_BETA };

/* kernel constants: C = 32/(pi H^9) in 3D (Akinci 2013), 32/(pi H^8) in 2D;
 * A = 0.007/H^3.25 in 3D, 0.007/H^2.25 in 2D (one power of H less, so
 * gamma and beta keep their 3D meaning per unit depth). */
static void akinci_consts(const floe_sim_info *si, double H, double *cC, double *cA)
{
    *cC = si->dim == 3 ? 32.0 / (FLOE_PI * pow(H, 9)) : 32.0 / (FLOE_PI * pow(H, 8));
    *cA = si->dim == 3 ? 0.007 / pow(H, 3.25) : 0.007 / pow(H, 2.25);
}

static int akinci(const floe_stage_call *call, int cl)
{
    floe_ctx *ctx = call->ctx;
    const floe_sim_info *si = api->sim(ctx);
    const kconst kc = kconst_make(si);
    ten_state *ts = call->state;
    const double gamma = call->param[AK_GAMMA].f, beta = call->param[AK_BETA].f;
    fluid f[TEN_MAX_SETS];
    target t[2 * TEN_MAX_SETS];
    int nf, nt, st;
    size_t total;

    double cC, cA;
    akinci_consts(si, kc.H, &cC, &cA);

    if (gamma == 0.0 && beta == 0.0)
        return FLOE_OK;
    if (cl)
        return ten_cl_akinci(call, gamma, beta, cC, cA);
    if ((st = list_fluids(ctx, f, &nf, &total)) != FLOE_OK)
        return st;
    if ((st = prepare(ctx, ts, f, nf, total)) != FLOE_OK)
        return st;
    for (int pass = 0; pass < 2; pass++) {
        for (int s = 0; s < nf; s++) {
            const uint32_t n = f[s].info.n;
            if (n == 0)
                continue;
            if ((st = list_targets(ctx, &f[s], f, nf, pass == 1 && beta != 0.0, ts->vol, t, &nt)) != FLOE_OK)
                return st;
            const double rho0 = f[s].info.rest_density;
            job J = {
                .kc = &kc, .t = t, .nt = nt, .n = n,
                .x = need(ctx, f[s].set, f[s].info.name, "x", FLOE_VEC3, &st),
                .rho = need(ctx, f[s].set, f[s].info.name, "rho", FLOE_F32, &st),
                .nrm = need(ctx, f[s].set, f[s].info.name, "normal", FLOE_VEC3, &st),
                .a = need(ctx, f[s].set, f[s].info.name, "a", FLOE_VEC3, &st),
                .coh = (float)cC,
                .coef = (float)(gamma * rho0),       /* K_ij = 2 rho0/(rho_i+rho_j) */
                .coef2 = (float)(beta * rho0 * cA),  /* Psi_b = rho0 V_b */
            };
            if (st != FLOE_OK)
                return st;
            J.n_in = J.nrm;
            for (int b = 0; b < nt; b++)
                if (!t[b].boundary && !t[b].nrm)
                    return api->fail(ctx, FLOE_ERR_ARG, "a fluid set has no 'normal' attribute");
            if (pass == 0)
                FOR_EACH_PARTICLE(kc.periodic, n, AK_NORMAL);
            else
                FOR_EACH_PARTICLE(kc.periodic, n, AK_FORCE);
        }
    }
    return FLOE_OK;
}

static int st_akinci(const floe_stage_call *call) { return akinci(call, 0); }
static int st_akinci_cl(const floe_stage_call *call) { return akinci(call, 1); }

/* ---- descriptors ------------------------------------------------------------ */

#define FLUID(n, t, acc) { FLOE_SIZED(floe_attr_desc), .kind = FLOE_SET_FLUID, .name = n, .type = t, .access = acc }
#define BOUND(n, t) { FLOE_SIZED(floe_attr_desc), .kind = FLOE_SET_BOUNDARY, .name = n, .type = t, .access = FLOE_READ }
#define P_FLOAT(nm, d, lo, hi, u, txt) \
    { FLOE_SIZED(floe_param_desc), .name = nm, .type = FLOE_PARAM_FLOAT, .def = d, .min = lo, .max = hi, .unit = u, .doc = txt }

static const floe_attr_desc he_attrs[] = {
    FLUID("x", FLOE_VEC3, FLOE_READ),
    FLUID("m", FLOE_F32, FLOE_READ),
    FLUID("rho", FLOE_F32, FLOE_READ),
    FLUID("colour", FLOE_F32, FLOE_WRITE),
    FLUID("colour_grad2", FLOE_F32, FLOE_WRITE),
    FLUID("a", FLOE_VEC3, FLOE_READ | FLOE_WRITE),
    BOUND("x", FLOE_VEC3),
    BOUND("V", FLOE_F32),
    {0},
};

static const floe_attr_desc air_attrs[] = {
    FLUID("x", FLOE_VEC3, FLOE_READ),
    FLUID("m", FLOE_F32, FLOE_READ),
    FLUID("rho", FLOE_F32, FLOE_READ),
    FLUID("a", FLOE_VEC3, FLOE_READ | FLOE_WRITE),
    BOUND("x", FLOE_VEC3),
    BOUND("V", FLOE_F32),
    {0},
};

static const floe_attr_desc akinci_attrs[] = {
    FLUID("x", FLOE_VEC3, FLOE_READ),
    FLUID("m", FLOE_F32, FLOE_READ),
    FLUID("rho", FLOE_F32, FLOE_READ),
    FLUID("normal", FLOE_VEC3, FLOE_WRITE),
    FLUID("a", FLOE_VEC3, FLOE_READ | FLOE_WRITE),
    BOUND("x", FLOE_VEC3),
    BOUND("V", FLOE_F32),
    {0},
};

static const floe_param_desc he_params[] = {
    [HE_KAPPA] = P_FLOAT("kappa", 0.02, 0, 1e3, "N",
                         "squared-gradient energy coefficient kappa of eq. 35 (J/m; Kim 2020: 0.02). The surface "
                         "tension it makes scales as kappa / H"),
    [HE_WALL] = P_FLOAT("wall_colour", 1, 0, 1, "",
                        "colour of boundary particles in eq. 33/34: 1 = wetted wall (no interface along it), "
                        "0 = the wall counts as air"),
    {0},
};

static const floe_param_desc air_params[] = {
    [AIR_P] = P_FLOAT("p_atm", 5000, 0, 1e7, "Pa",
                      "air pressure p_atm of eq. 36 (Kim 2020: 5000); pushes the free surface inwards"),
    [AIR_WALL] = P_FLOAT("wall_colour", 1, 0, 1, "",
                         "weight of boundary particles in the sum of eq. 36: 1 = no air along walls, "
                         "0 = walls count as air"),
    {0},
};

static const floe_param_desc akinci_params[] = {
    [AK_GAMMA] = P_FLOAT("gamma", 0.1, 0, 1e3, "",
                         "Akinci surface tension coefficient gamma (cohesion m^4 kg^-1 s^-2, curvature m s^-2, "
                         "as published: a tuning coefficient, not sigma)"),
    [AK_BETA] = P_FLOAT("beta", 0, 0, 1e3, "",
                        "Akinci adhesion coefficient beta against boundary particles (m^4 kg^-1 s^-2); 0 = none"),
    {0},
};

static const floe_stage_desc stages[] = {
    { FLOE_SIZED(floe_stage_desc), .name = "he",
      .doc = "He et al. 2014 surface tension from the colour-field gradient energy (Kim 2020 eq. 33-35), "
             "writes colour and colour_grad2; after 'gravity', before the pressure force/solve",
      .run = st_he, .run_cl = st_he_cl, .params = he_params, .attrs = he_attrs },
    { FLOE_SIZED(floe_stage_desc), .name = "air_pressure",
      .doc = "air pressure on the free surface, a_i += p_atm/rho_i sum_j V_j grad W_ij (Kim 2020 eq. 36)",
      .run = st_air, .run_cl = st_air_cl, .params = air_params, .attrs = air_attrs },
    { FLOE_SIZED(floe_stage_desc), .name = "akinci",
      .doc = "Akinci et al. 2013 cohesion + curvature surface tension and adhesion to boundaries, writes normal",
      .run = st_akinci, .run_cl = st_akinci_cl, .params = akinci_params, .attrs = akinci_attrs },
    {0},
};

static const floe_module_desc module = {
    FLOE_SIZED(floe_module_desc),
    .abi_major = FLOE_ABI_MAJOR,
    .abi_minor = FLOE_ABI_MINOR,
    .name = "tension",
    .version = "1.0.0",
    .summary = "surface tension added to a: He et al. 2014 colour-field energy + air pressure (Kim 2020 "
               "eq. 33-36), Akinci et al. 2013 cohesion/curvature/adhesion; for WCSPH and IISPH",
    .stages = stages,
    .init = ten_init,
    .fini = ten_fini,
};

FLOE_MODULE(tension)
{
    api = ten_cl_api = core;
    return &module;
}
