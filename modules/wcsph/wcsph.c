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
 * rho0_i V_b, with pressure mirrored from the fluid particle, p_b = p_i,
 * rho_b = rho_i).
 *
 * Every loop is a gather (particle i writes only its own slot); the sums
 * over neighbours run in list order (omp simd lanes in a fixed pattern), so
 * results do not depend on the thread count. The kernel is the cubic spline
 * of <floe/kernel.h>, written branch-free here so the neighbour loops
 * vectorise:
 *   W(q)     = sigma (2 (1-q)^3 - 8 max(0, 1/2-q)^3)
 *   dW/dq    = sigma (24 max(0, 1/2-q)^2 - 6 (1-q)^2)      (q = r / H)
 * which equals floe_kernel_w / floe_kernel_dw_r piece by piece. */
#include <floe/module.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const floe_api *api; /* the core's services, from the entry point */

#define WCSPH_MAX_SETS 16

/* ---- module state: scratch for p / rho^2 ------------------------------ */

typedef struct wcsph_state {
    float *prho2;       /* p_i / rho_i^2 of every fluid set, concatenated */
    size_t cap;
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
    if (s)
        free(s->prho2);
    free(s);
}

/* ---- kernel constants -------------------------------------------------- */

typedef struct kconst {
    float H, inv_H;
    float sigma;        /* W(0) */
    float g;            /* sigma / H: grad W = g * dWdq_hat / r * x_ij */
    float r_min;        /* floor of r (coincident particles: grad W = 0) */
} kconst;

static kconst kconst_make(const floe_sim_info *si)
{
    floe_kernel k = floe_kernel_make(si->dim, si->support);
    kconst c;
    c.H = k.H;
    c.inv_H = k.inv_H;
    c.sigma = k.sigma;
    c.g = k.sigma * k.inv_H;
    c.r_min = 1e-6f * k.H;
    return c;
}

/* W(r) / sigma from r^2 */
static inline float w_hat(const kconst *c, float r2)
{
    float q = sqrtf(r2) * c->inv_H;
    float a = fmaxf(1.0f - q, 0.0f);
    float b = fmaxf(0.5f - q, 0.0f);
    return 2.0f * a * a * a - 8.0f * b * b * b;
}

/* (dW/dr) / r from r^2, so grad W_ij = dw_r * x_ij; 0 at r = 0 */
static inline float dw_r(const kconst *c, float r2)
{
    float r = fmaxf(sqrtf(r2), c->r_min);
    float q = r * c->inv_H;
    float a = fmaxf(1.0f - q, 0.0f);
    float b = fmaxf(0.5f - q, 0.0f);
    return c->g * (24.0f * b * b - 6.0f * a * a) / r;
}

/* ---- neighbour batches -------------------------------------------------- *
 * The neighbours of particle i are copied (a scalar gather) into small
 * contiguous arrays, padded with null neighbours (at distance 2H, weight 0)
 * to a multiple of LANES; the kernel arithmetic then runs as an omp simd
 * reduction over those arrays, which compilers vectorise (sqrt and division
 * included) without needing hardware gathers. */

#define BATCH 64 /* neighbours per batch, a multiple of LANES */
#define LANES 16

typedef struct batch {
    float dx[BATCH], dy[BATCH], dz[BATCH]; /* x_i - x_j */
    float m[BATCH];                        /* weight: m_j, rho0 V_b, or m_j (P_i + P_j) */
    float rho[BATCH];                      /* rho_j (mirrored rho_i for boundaries) */
    float vx[BATCH], vy[BATCH], vz[BATCH]; /* v_j (0 for boundaries) */
} batch;

/* pad [n, round up to LANES) with null neighbours; returns the padded count */
static inline uint32_t pad(batch *restrict b, uint32_t n, float far, int with_v)
{
    uint32_t np = (n + LANES - 1) / LANES * LANES;
    for (uint32_t k = n; k < np; k++) {
        b->dx[k] = far;
        b->dy[k] = b->dz[k] = 0.0f;
        b->m[k] = 0.0f;
        if (with_v) {
            b->rho[k] = 1.0f;
            b->vx[k] = b->vy[k] = b->vz[k] = 0.0f;
        }
    }
    return np;
}

/* positions and weights w_scale * w[j] (w = m or V) */
static inline uint32_t gather_x(batch *restrict b, const kconst *kc, const float *restrict xt,
                                const float *restrict w, float w_scale, const uint32_t *restrict id, uint32_t n,
                                float xi, float yi, float zi)
{
    for (uint32_t k = 0; k < n; k++) {
        const uint32_t j = id[k];
        b->dx[k] = xi - xt[3 * j];
        b->dy[k] = yi - xt[3 * j + 1];
        b->dz[k] = zi - xt[3 * j + 2];
        b->m[k] = w_scale * w[j];
    }
    return pad(b, n, 2.0f * kc->H, 0);
}

/* positions and pressure weights m_j (P_i + P_j), P = p / rho^2 */
static inline uint32_t gather_p(batch *restrict b, const kconst *kc, const float *restrict xt,
                                const float *restrict m, const float *restrict P, float Pi,
                                const uint32_t *restrict id, uint32_t n, float xi, float yi, float zi)
{
    for (uint32_t k = 0; k < n; k++) {
        const uint32_t j = id[k];
        b->dx[k] = xi - xt[3 * j];
        b->dy[k] = yi - xt[3 * j + 1];
        b->dz[k] = zi - xt[3 * j + 2];
        b->m[k] = m[j] * (Pi + P[j]);
    }
    return pad(b, n, 2.0f * kc->H, 0);
}

/* positions, masses, densities and velocities of fluid neighbours */
static inline uint32_t gather_xv(batch *restrict b, const kconst *kc, const float *restrict xt,
                                 const float *restrict m, const float *restrict rho, const float *restrict v,
                                 const uint32_t *restrict id, uint32_t n, float xi, float yi, float zi)
{
    for (uint32_t k = 0; k < n; k++) {
        const uint32_t j = id[k];
        b->dx[k] = xi - xt[3 * j];
        b->dy[k] = yi - xt[3 * j + 1];
        b->dz[k] = zi - xt[3 * j + 2];
        b->m[k] = m[j];
        b->rho[k] = rho[j];
        b->vx[k] = v[3 * j];
        b->vy[k] = v[3 * j + 1];
        b->vz[k] = v[3 * j + 2];
    }
    return pad(b, n, 2.0f * kc->H, 1);
}

/* boundary neighbours as fluid at rest: mass rho0 V_b, density rho_i */
static inline uint32_t gather_xv_boundary(batch *restrict b, const kconst *kc, const float *restrict xt,
                                          const float *restrict V, float rho0, float rhoi,
                                          const uint32_t *restrict id, uint32_t n, float xi, float yi, float zi)
{
    for (uint32_t k = 0; k < n; k++) {
        const uint32_t j = id[k];
        b->dx[k] = xi - xt[3 * j];
        b->dy[k] = yi - xt[3 * j + 1];
        b->dz[k] = zi - xt[3 * j + 2];
        b->m[k] = rho0 * V[j];
        b->rho[k] = rhoi;
        b->vx[k] = b->vy[k] = b->vz[k] = 0.0f;
    }
    return pad(b, n, 2.0f * kc->H, 1);
}

/* sum_k m_k W(r_k) / sigma */
static inline float sum_w(const kconst *kc, const batch *restrict b, uint32_t n)
{
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (uint32_t k = 0; k < n; k++)
        s += b->m[k] * w_hat(kc, b->dx[k] * b->dx[k] + b->dy[k] * b->dy[k] + b->dz[k] * b->dz[k]);
    return s;
}

/* s += sum_k m_k grad W(x_k) */
static inline void sum_grad(const kconst *kc, const batch *restrict b, uint32_t n, float s[3])
{
    float sx = 0.0f, sy = 0.0f, sz = 0.0f;
#pragma omp simd reduction(+ : sx, sy, sz)
    for (uint32_t k = 0; k < n; k++) {
        const float g = b->m[k] * dw_r(kc, b->dx[k] * b->dx[k] + b->dy[k] * b->dy[k] + b->dz[k] * b->dz[k]);
        sx += g * b->dx[k];
        sy += g * b->dy[k];
        sz += g * b->dz[k];
    }
    s[0] += sx;
    s[1] += sy;
    s[2] += sz;
}

/* XSPH: s += sum_k m_k / (rho_i + rho_k) (v_k - v_i) W_k / sigma */
static inline void sum_xsph(const kconst *kc, const batch *restrict b, uint32_t n, float rhoi, const float vi[3],
                            float s[3])
{
    float sx = 0.0f, sy = 0.0f, sz = 0.0f;
    const float ui = vi[0], wi = vi[1], zi = vi[2];
#pragma omp simd reduction(+ : sx, sy, sz)
    for (uint32_t k = 0; k < n; k++) {
        const float w = b->m[k] / (rhoi + b->rho[k]) *
                        w_hat(kc, b->dx[k] * b->dx[k] + b->dy[k] * b->dy[k] + b->dz[k] * b->dz[k]);
        sx += w * (b->vx[k] - ui);
        sy += w * (b->vy[k] - wi);
        sz += w * (b->vz[k] - zi);
    }
    s[0] += sx;
    s[1] += sy;
    s[2] += sz;
}

/* Monaghan: s += sum_k m_k min(v_ik . x_ik, 0) / ((rho_i + rho_k)(r^2 + eps)) grad W_k;
 * the caller multiplies by 2 alpha H c (that is -Pi_ik (rho_i + rho_k)(r^2+eps)/(v.x)). */
static inline void sum_artificial(const kconst *kc, const batch *restrict b, uint32_t n, float rhoi,
                                  const float vi[3], float eps, float s[3])
{
    float sx = 0.0f, sy = 0.0f, sz = 0.0f;
    const float ui = vi[0], wi = vi[1], zi = vi[2];
#pragma omp simd reduction(+ : sx, sy, sz)
    for (uint32_t k = 0; k < n; k++) {
        const float dx = b->dx[k], dy = b->dy[k], dz = b->dz[k];
        const float r2 = dx * dx + dy * dy + dz * dz;
        const float vx = (ui - b->vx[k]) * dx + (wi - b->vy[k]) * dy + (zi - b->vz[k]) * dz;
        const float g = b->m[k] * fminf(vx, 0.0f) / ((rhoi + b->rho[k]) * (r2 + eps)) * dw_r(kc, r2);
        sx += g * dx;
        sy += g * dy;
        sz += g * dz;
    }
    s[0] += sx;
    s[1] += sy;
    s[2] += sz;
}

/* Iterate the neighbours of i in target t batch by batch:
 *   FOR_BATCHES(t, i, id, n) { n = gather...(..., id, n, ...); ... }  */
#define FOR_BATCHES(t, i, id, nb)                                                                      \
    for (uint32_t k0_ = 0, cnt_ = (t)->nl->count[i]; k0_ < cnt_; k0_ += BATCH)                        \
        for (uint32_t nb = cnt_ - k0_ < BATCH ? cnt_ - k0_ : BATCH, once_ = 1; once_; once_ = 0)       \
            for (const uint32_t *restrict id = (t)->nl->idx + (size_t)(i) * (t)->nl->stride + k0_; once_; \
                 once_ = 0)

/* ---- gathering the sets a fluid set interacts with --------------------- */

typedef struct target {
    int boundary;
    uint32_t n;
    const float *x;     /* positions, 3 per particle */
    const float *mass;  /* m (fluid) or V (boundary) */
    const float *rho;   /* fluid only */
    const float *v;     /* fluid only, when asked */
    const float *prho2; /* fluid only, when asked: p / rho^2 */
    const floe_nlist *nl;
} target;

typedef struct fluid {
    floe_set set;
    floe_set_info info;
    size_t off;         /* offset into the p / rho^2 scratch */
} fluid;

enum { NEED_RHO = 1, NEED_V = 2 };

static int list_fluids(floe_ctx *ctx, fluid *f, int *nf)
{
    floe_set sets[WCSPH_MAX_SETS];
    int n = api->set_list(ctx, FLOE_SET_FLUID, sets, WCSPH_MAX_SETS);
    if (n < 0)
        return api->fail(ctx, FLOE_ERR, "cannot list fluid sets");
    if (n > WCSPH_MAX_SETS)
        return api->fail(ctx, FLOE_ERR_ARG, "%d fluid sets, at most %d supported", n, WCSPH_MAX_SETS);
    size_t off = 0;
    for (int s = 0; s < n; s++) {
        f[s].set = sets[s];
        if (api->set_info(ctx, sets[s], &f[s].info) != FLOE_OK)
            return api->fail(ctx, FLOE_ERR, "fluid set %d: no info", s);
        if (!(f[s].info.rest_density > 0.0f))
            return api->fail(ctx, FLOE_ERR_ARG, "fluid set '%s': rest density must be > 0",
                              f[s].info.name);
        f[s].off = off;
        off += f[s].info.n;
    }
    *nf = n;
    return FLOE_OK;
}

static const float *need(floe_ctx *ctx, floe_set set, const char *set_name, const char *attr, floe_type type,
                         int *status)
{
    const float *p = api->attr(ctx, set, attr, type);
    if (!p && *status == FLOE_OK)
        *status = api->fail(ctx, FLOE_ERR_ARG, "set '%s' has no %s attribute '%s'", set_name,
                             type == FLOE_VEC3 ? "vec3" : "f32", attr);
    return p;
}

/* Targets of fluid set q: every fluid set, then (if with_boundary) every
 * boundary set, with their neighbour lists from q. */
static int list_targets(floe_ctx *ctx, const fluid *q, const fluid *f, int nf, int with_boundary,
                        unsigned needs, const float *prho2, target *t, int *nt)
{
    int st = FLOE_OK;
    int n = 0;
    for (int s = 0; s < nf; s++) {
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

/* ---- density ------------------------------------------------------------ */

static int st_density(const floe_stage_call *call)
{
    floe_ctx *ctx = call->ctx;
    const floe_sim_info *si = api->sim(ctx);
    const kconst kc = kconst_make(si);
    fluid f[WCSPH_MAX_SETS];
    target t[2 * WCSPH_MAX_SETS];
    int nf, nt, st;

    if ((st = list_fluids(ctx, f, &nf)) != FLOE_OK)
        return st;
    for (int s = 0; s < nf; s++) {
        const uint32_t n = f[s].info.n;
        if (n == 0)
            continue;
        if ((st = list_targets(ctx, &f[s], f, nf, 1, 0, NULL, t, &nt)) != FLOE_OK)
            return st;
        const float *restrict xs = api->attr(ctx, f[s].set, "x", FLOE_VEC3);
        const float *restrict ms = api->attr(ctx, f[s].set, "m", FLOE_F32);
        float *restrict rho = api->attr(ctx, f[s].set, "rho", FLOE_F32);
        if (!rho)
            return api->fail(ctx, FLOE_ERR_ARG, "set '%s' has no f32 attribute 'rho'", f[s].info.name);
        const float rho0 = f[s].info.rest_density;

#pragma omp parallel for schedule(static)
        for (uint32_t i = 0; i < n; i++) {
            batch b;
            const float xi = xs[3 * i], yi = xs[3 * i + 1], zi = xs[3 * i + 2];
            float acc = ms[i]; /* m_i W(0) / sigma */
            for (int ti = 0; ti < nt; ti++) {
                const target *tg = &t[ti];
                const float scale = tg->boundary ? rho0 : 1.0f; /* m_b = rho0_i V_b */
                FOR_BATCHES(tg, i, id, nb)
                {
                    const uint32_t np = gather_x(&b, &kc, tg->x, tg->mass, scale, id, nb, xi, yi, zi);
                    acc += sum_w(&kc, &b, np);
                }
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
                p[i] = fmaxf(Bf * (r3 * r3 * r - 1.0f), lo);
            }
        } else if (gamma == 1.0) {
#pragma omp parallel for simd schedule(static)
            for (uint32_t i = 0; i < n; i++)
                p[i] = fmaxf(Bf * (rho[i] * inv_rho0 - 1.0f), lo);
        } else {
#pragma omp parallel for schedule(static)
            for (uint32_t i = 0; i < n; i++)
                p[i] = fmaxf(Bf * (powf(rho[i] * inv_rho0, gf) - 1.0f), lo);
        }
    }
    if (dt_max < INFINITY)
        api->dt_limit(ctx, dt_max);
    return FLOE_OK;
}

/* ---- pressure force ------------------------------------------------------ */

static int st_pressure_force(const floe_stage_call *call)
{
    floe_ctx *ctx = call->ctx;
    wcsph_state *ws = call->state;
    const floe_sim_info *si = api->sim(ctx);
    const kconst kc = kconst_make(si);
    fluid f[WCSPH_MAX_SETS];
    target t[2 * WCSPH_MAX_SETS];
    int nf, nt, st;

    if ((st = list_fluids(ctx, f, &nf)) != FLOE_OK)
        return st;
    if (!ws)
        return api->fail(ctx, FLOE_ERR, "module state missing");
    size_t total = nf ? f[nf - 1].off + f[nf - 1].info.n : 0;
    if (total > ws->cap) {
        float *np = realloc(ws->prho2, total * sizeof *np);
        if (!np)
            return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory (%zu particles)", total);
        ws->prho2 = np;
        ws->cap = total;
    }
    /* P = p / rho^2 of every fluid particle, once */
    for (int s = 0; s < nf; s++) {
        const uint32_t n = f[s].info.n;
        if (n == 0)
            continue;
        const float *restrict rho = api->attr(ctx, f[s].set, "rho", FLOE_F32);
        const float *restrict p = api->attr(ctx, f[s].set, "p", FLOE_F32);
        float *restrict out = ws->prho2 + f[s].off;
        if (!rho || !p)
            return api->fail(ctx, FLOE_ERR_ARG, "set '%s' has no f32 attribute '%s'", f[s].info.name,
                             rho ? "p" : "rho");
#pragma omp parallel for simd schedule(static)
        for (uint32_t i = 0; i < n; i++)
            out[i] = p[i] / (rho[i] * rho[i]);
    }
    for (int s = 0; s < nf; s++) {
        const uint32_t n = f[s].info.n;
        if (n == 0)
            continue;
        if ((st = list_targets(ctx, &f[s], f, nf, 1, 0, ws->prho2, t, &nt)) != FLOE_OK)
            return st;
        const float *restrict xs = api->attr(ctx, f[s].set, "x", FLOE_VEC3);
        float *restrict a = api->attr(ctx, f[s].set, "a", FLOE_VEC3);
        if (!a)
            return api->fail(ctx, FLOE_ERR_ARG, "set '%s' has no vec3 attribute 'a'", f[s].info.name);
        const float *restrict Ps = ws->prho2 + f[s].off;
        const float two_rho0 = 2.0f * f[s].info.rest_density;

#pragma omp parallel for schedule(static)
        for (uint32_t i = 0; i < n; i++) {
            batch b;
            const float xi = xs[3 * i], yi = xs[3 * i + 1], zi = xs[3 * i + 2];
            const float Pi = Ps[i];
            float acc[3] = {0.0f, 0.0f, 0.0f};
            for (int ti = 0; ti < nt; ti++) {
                const target *tg = &t[ti];
                FOR_BATCHES(tg, i, id, nb)
                {
                    /* boundary: rho0_i V_b (P_i + P_b) with P_b = P_i */
                    const uint32_t np =
                        tg->boundary ? gather_x(&b, &kc, tg->x, tg->mass, two_rho0 * Pi, id, nb, xi, yi, zi)
                                     : gather_p(&b, &kc, tg->x, tg->mass, tg->prho2, Pi, id, nb, xi, yi, zi);
                    sum_grad(&kc, &b, np, acc);
                }
            }
            a[3 * i] -= acc[0];
            a[3 * i + 1] -= acc[1];
            a[3 * i + 2] -= acc[2];
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
    int nf, nt, st;
    int artificial;

    if (!strcmp(kind, "xsph"))
        artificial = 0;
    else if (!strcmp(kind, "artificial"))
        artificial = 1;
    else
        return api->fail(ctx, FLOE_ERR_ARG, "viscosity kind '%s': expected xsph or artificial", kind);
    if (alpha == 0.0f && balpha == 0.0f)
        return FLOE_OK;
    /* XSPH smooths velocities, v_i += alpha sum_j 2 m_j/(rho_i+rho_j) (v_j-v_i) W_ij, applied as
     * alpha/dt times the sum so that integrate's v += dt a does it. Artificial viscosity:
     * a_i -= sum_j m_j Pi_ij grad W_ij = 2 alpha H c sum_j m_j min(v.x, 0)/((rho_i+rho_j)(r^2+eps)) grad W_ij. */
    float fluid_scale, bound_scale;
    if (!artificial) {
        if (!(si->dt > 0.0))
            return FLOE_OK; /* nothing to smooth over a zero step */
        fluid_scale = (float)(2.0 * alpha / si->dt) * kc.sigma; /* W = sigma w_hat */
        bound_scale = (float)(2.0 * balpha / si->dt) * kc.sigma;
    } else {
        fluid_scale = 2.0f * alpha * kc.H * c0;
        bound_scale = 2.0f * balpha * kc.H * c0;
    }
    const float eps = 0.01f * kc.H * kc.H;

    if ((st = list_fluids(ctx, f, &nf)) != FLOE_OK)
        return st;
    for (int s = 0; s < nf; s++) {
        const uint32_t n = f[s].info.n;
        if (n == 0)
            continue;
        if ((st = list_targets(ctx, &f[s], f, nf, balpha > 0.0f, NEED_RHO | NEED_V, NULL, t, &nt)) != FLOE_OK)
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
            batch b;
            const float xi = xs[3 * i], yi = xs[3 * i + 1], zi = xs[3 * i + 2];
            const float vi[3] = {vs[3 * i], vs[3 * i + 1], vs[3 * i + 2]};
            const float rhoi = rhos[i];
            float af[3] = {0.0f, 0.0f, 0.0f}, ab[3] = {0.0f, 0.0f, 0.0f};
            for (int ti = 0; ti < nt; ti++) {
                const target *tg = &t[ti];
                float *acc = tg->boundary ? ab : af;
                FOR_BATCHES(tg, i, id, nb)
                {
                    const uint32_t np =
                        tg->boundary
                            ? gather_xv_boundary(&b, &kc, tg->x, tg->mass, rho0, rhoi, id, nb, xi, yi, zi)
                            : gather_xv(&b, &kc, tg->x, tg->mass, tg->rho, tg->v, id, nb, xi, yi, zi);
                    if (artificial)
                        sum_artificial(&kc, &b, np, rhoi, vi, eps, acc);
                    else
                        sum_xsph(&kc, &b, np, rhoi, vi, acc);
                }
            }
            a[3 * i] += fluid_scale * af[0] + bound_scale * ab[0];
            a[3 * i + 1] += fluid_scale * af[1] + bound_scale * ab[1];
            a[3 * i + 2] += fluid_scale * af[2] + bound_scale * ab[2];
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
    FLUID("rho", FLOE_F32, FLOE_WRITE),
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
    FLUID("p", FLOE_F32, FLOE_WRITE),
    {0},
};

static const floe_attr_desc pressure_force_attrs[] = {
    FLUID("x", FLOE_VEC3, FLOE_READ),
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

static const floe_stage_desc stages[] = {
    { FLOE_SIZED(floe_stage_desc), .name = "density",
      .doc = "SPH density rho_i = m_i W(0) + sum_j m_j W_ij + sum_b rho0 V_b W_ib (after 'neighbours')",
      .run = st_density, .attrs = density_attrs },
    { FLOE_SIZED(floe_stage_desc), .name = "pressure",
      .doc = "Tait equation of state p = B((rho/rho0)^gamma - 1); proposes the acoustic dt limit",
      .run = st_pressure, .params = pressure_params, .attrs = pressure_attrs },
    { FLOE_SIZED(floe_stage_desc), .name = "viscosity",
      .doc = "XSPH or artificial viscosity, added to a (after 'gravity')",
      .run = st_viscosity, .params = viscosity_params, .attrs = viscosity_attrs },
    { FLOE_SIZED(floe_stage_desc), .name = "pressure_force",
      .doc = "symmetric pressure acceleration with Akinci boundaries (pressure mirroring), added to a",
      .run = st_pressure_force, .attrs = pressure_force_attrs },
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
    api = core;
    return &module;
}
