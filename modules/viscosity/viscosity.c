/* Floe module "viscosity": viscous force stages that add to the acceleration
 * `a` after the core `gravity` stage and before the pressure force / pressure
 * solve, so they serve WCSPH (wcsph.pressure_force) and IISPH alike.
 *
 *   laminar  physical viscosity nu [m^2/s], two discretisations (`form`):
 *            morris (default; Morris et al. 1997, Lo & Shao 2002 with mu = rho nu):
 *              a_i += nu   sum_j m_j (1/rho_i + 1/rho_j) (x_ij.grad W_ij)/(|x_ij|^2 + eps H^2) v_ij
 *                   + nu_b sum_b 2 rho0 V_b / rho_i    (x_ib.grad W_ib)/(|x_ib|^2 + eps H^2) (v_i - v_b)
 *            monaghan (Monaghan 2005 / SPlisHSPlasH "standard", conserves
 *            angular momentum):
 *              a_i += 2(d+2) nu   sum_j (m_j/rho_j)     (v_ij.x_ij)/(|x_ij|^2 + eps H^2) grad W_ij
 *                   + 2(d+2) nu_b sum_b (rho0 V_b/rho_i) ((v_i - v_b).x_ib)/(|x_ib|^2 + eps H^2) grad W_ib
 *            (d = dimension). Walls are at rest; `wall_velocity` gives their
 *            particles v_b = -v_i (mirror, default: Takeda 1994 / Morris
 *            1997 extrapolation, no-slip at the wall surface) or v_b = 0
 *            (zero: no-slip about d/3 inside the wall). Both tend to
 *            nu Laplacian(v) for divergence-free flow; on a particle lattice
 *            with H = 2 d (spacing) the monaghan form relies on an isotropy of
 *            the neighbourhood that 8-12 neighbours do not have, and gives
 *            about 0.65-0.75 of nu for shear along a lattice axis, the morris
 *            form 0.96-0.98 (docs/viscosity_tension.md).
 *   kim      Kim 2020 section 3.2.4, eq. 37-39 between fluid particles and
 *            eq. 40 against boundary particles (water that clings to walls),
 *            as written (every pair, walls at rest: v_b = 0):
 *              a_i += sum_j m_j        beta0  beta1 u_ij / rho_ij^avg grad W_ij       (37)
 *                   + sum_b Psi_b      beta0b beta1 u_ib / rho_ib^avg grad W_ib       (40)
 *              u_ij = H (v_ij.x_ij) / (|x_ij|^2 + eps H^2)                           (38)
 *              rho_ij^avg = (rho_i + rho_j) / 2                                      (39)
 *            with Psi_b = rho0 V_b (Akinci 2012) and rho_b = rho_i (mirrored).
 *            Applied to every pair it is the monaghan form of laminar with
 *              nu = beta0 beta1 H / (2 (d + 2))   (nu_b likewise with beta0b)
 *            (exactly so where rho_i = rho_j; tests/test_viscosity.c).
 *   xsph     XSPH velocity smoothing (Monaghan 1989) as an acceleration:
 *              a_i += alpha/dt sum_j 2 m_j/(rho_i + rho_j) (v_j - v_i) W_ij
 *                   + alpha_b/dt sum_b 2 rho0 V_b/(2 rho_i) (0 - v_i) W_ib
 *
 * j runs over neighbours in every fluid set, b over those in every boundary
 * set. On periodic axes x_i - x_j is taken as the minimum image (the same
 * comparisons as floe_periodic_delta, written branch-free so the row sums
 * still vectorise); the choice between the periodic and the plain loop is
 * made once per stage call.
 *
 * Speed: the layout of modules/wcsph/wcsph.c. Every loop is a gather with a
 * static schedule; the sum over one neighbour row is an omp simd reduction
 * with a branch-free kernel; m_j / rho_j (monaghan) is computed once per
 * call into a scratch array. Results are bitwise the same for a given
 * thread count. */
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

#define VISC_MAX_SETS 16

/* ---- module state: V_j = m_j / rho_j of every fluid set ----------------- */

typedef struct visc_state {
    float *vol;
    size_t cap;
} visc_state;

static int visc_init(floe_ctx *ctx, void **state)
{
    (void)ctx;
    visc_state *s = calloc(1, sizeof *s);
    if (!s)
        return FLOE_ERR_NOMEM;
    *state = s;
    return FLOE_OK;
}

static void visc_fini(void *state)
{
    visc_state *s = state;
    if (s)
        free(s->vol);
    free(s);
}

/* ---- kernel and periodic images ------------------------------------------ */

typedef struct kconst {
    float H, inv_H;
    float sigma;   /* W(0) */
    float g;       /* sigma / H */
    float r_min2;  /* (1e-6 H)^2 */
    float L[3];    /* period on periodic axes, else 0 */
    float hL[3];   /* half period on periodic axes, else +inf */
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
    const float *w;    /* V_j = m_j / rho_j (fluid) or V_b (boundary) */
    const float *m;    /* fluid */
    const float *rho;  /* fluid */
    const float *v;    /* fluid */
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

/* V_j = m_j / rho_j of every fluid set into the scratch. */
static int compute_volumes(floe_ctx *ctx, visc_state *vs, const fluid *f, int nf, size_t total)
{
    if (!vs)
        return api->fail(ctx, FLOE_ERR, "module state missing");
    if (total > vs->cap) {
        float *p = realloc(vs->vol, total * sizeof *p);
        if (!p)
            return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory (%zu particles)", total);
        vs->vol = p;
        vs->cap = total;
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
        float *restrict V = vs->vol + f[s].off;
#pragma omp parallel for simd schedule(static)
        for (uint32_t i = 0; i < n; i++)
            V[i] = m[i] / rho[i];
    }
    return FLOE_OK;
}

/* Targets of fluid set q: every non-empty fluid set, then (with_boundary)
 * every non-empty boundary set, with their neighbour lists from q. */
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
        tg->v = need(ctx, f[s].set, f[s].info.name, "v", FLOE_VEC3, &st);
        tg->w = vol ? vol + f[s].off : NULL;
        tg->nl = api->neighbours(ctx, q->set, f[s].set);
    }
    if (with_boundary) {
        floe_set b[VISC_MAX_SETS];
        int nb = api->set_list(ctx, FLOE_SET_BOUNDARY, b, VISC_MAX_SETS);
        if (nb < 0 || nb > VISC_MAX_SETS)
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

/* ---- sums over one neighbour row -------------------------------------------
 * PER is a compile-time constant at every call (the callers are specialised
 * by FOR_EACH_PARTICLE), so the plain path carries no image arithmetic. */

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

/* s += sum_j c_j (v_ij . x_ij) / (r^2 + eps) grad W_ij, c_j = w_j (laminar)
 * or m_j / (rho_i + rho_j) (kim, rho != NULL). */
ROW_FN void row_visc(const kconst *kc, const uint32_t *restrict id, uint32_t cnt, const float *restrict xt,
                     const float *restrict w, const float *restrict rho, const float *restrict v, float xi,
                     float yi, float zi, float rhoi, const float vi[3], float eps, float s[3], const int PER)
{
    float sx = 0.0f, sy = 0.0f, sz = 0.0f;
    const float ui = vi[0], wi = vi[1], ti = vi[2];
    if (rho) {
#pragma omp simd reduction(+ : sx, sy, sz)
        for (uint32_t k = 0; k < cnt; k++) {
            X_IJ(PER);
            const float vx = (ui - v[3 * j]) * dx + (wi - v[3 * j + 1]) * dy + (ti - v[3 * j + 2]) * dz;
            const float gk = w[j] / (rhoi + rho[j]) * vx / (r2 + eps) * dw_r(kc, r2);
            sx += gk * dx;
            sy += gk * dy;
            sz += gk * dz;
        }
    } else {
#pragma omp simd reduction(+ : sx, sy, sz)
        for (uint32_t k = 0; k < cnt; k++) {
            X_IJ(PER);
            const float vx = (ui - v[3 * j]) * dx + (wi - v[3 * j + 1]) * dy + (ti - v[3 * j + 2]) * dz;
            const float gk = w[j] * vx / (r2 + eps) * dw_r(kc, r2);
            sx += gk * dx;
            sy += gk * dy;
            sz += gk * dz;
        }
    }
    s[0] += sx;
    s[1] += sy;
    s[2] += sz;
}

/* Boundary at rest: s += sum_b V_b (v_i . x_ib) / (r^2 + eps) grad W_ib */
ROW_FN void row_visc_wall(const kconst *kc, const uint32_t *restrict id, uint32_t cnt, const float *restrict xt,
                          const float *restrict V, float xi, float yi, float zi, const float vi[3], float eps,
                          float s[3], const int PER)
{
    float sx = 0.0f, sy = 0.0f, sz = 0.0f;
    const float ui = vi[0], wi = vi[1], ti = vi[2];
#pragma omp simd reduction(+ : sx, sy, sz)
    for (uint32_t k = 0; k < cnt; k++) {
        X_IJ(PER);
        const float vx = ui * dx + wi * dy + ti * dz;
        const float gk = V[j] * vx / (r2 + eps) * dw_r(kc, r2);
        sx += gk * dx;
        sy += gk * dy;
        sz += gk * dz;
    }
    s[0] += sx;
    s[1] += sy;
    s[2] += sz;
}

/* Morris: s += sum_j m_j (1/rho_i + 1/rho_j) F_ij v_ij, F_ij = (x_ij.grad W_ij)/(r^2 + eps) */
ROW_FN void row_morris(const kconst *kc, const uint32_t *restrict id, uint32_t cnt, const float *restrict xt,
                       const float *restrict m, const float *restrict rho, const float *restrict v, float xi,
                       float yi, float zi, float inv_rhoi, const float vi[3], float eps, float s[3], const int PER)
{
    float sx = 0.0f, sy = 0.0f, sz = 0.0f;
    const float ui = vi[0], wi = vi[1], ti = vi[2];
#pragma omp simd reduction(+ : sx, sy, sz)
    for (uint32_t k = 0; k < cnt; k++) {
        X_IJ(PER);
        const float F = m[j] * (inv_rhoi + 1.0f / rho[j]) * r2 / (r2 + eps) * dw_r(kc, r2);
        sx += F * (ui - v[3 * j]);
        sy += F * (wi - v[3 * j + 1]);
        sz += F * (ti - v[3 * j + 2]);
    }
    s[0] += sx;
    s[1] += sy;
    s[2] += sz;
}

/* Morris against walls at rest: sum_b V_b F_ib (times v_i outside) */
ROW_FN float row_morris_wall(const kconst *kc, const uint32_t *restrict id, uint32_t cnt, const float *restrict xt,
                             const float *restrict V, float xi, float yi, float zi, float eps, const int PER)
{
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (uint32_t k = 0; k < cnt; k++) {
        X_IJ(PER);
        s += V[j] * r2 / (r2 + eps) * dw_r(kc, r2);
    }
    return s;
}

/* XSPH: s += sum_j m_j / (rho_i + rho_j) (v_j - v_i) W_ij / sigma */
ROW_FN void row_xsph(const kconst *kc, const uint32_t *restrict id, uint32_t cnt, const float *restrict xt,
                     const float *restrict m, const float *restrict rho, const float *restrict v, float xi, float yi,
                     float zi, float rhoi, const float vi[3], float s[3], const int PER)
{
    float sx = 0.0f, sy = 0.0f, sz = 0.0f;
    const float ui = vi[0], wi = vi[1], ti = vi[2];
#pragma omp simd reduction(+ : sx, sy, sz)
    for (uint32_t k = 0; k < cnt; k++) {
        X_IJ(PER);
        const float c = m[j] / (rhoi + rho[j]) * w_hat(kc, r2);
        sx += c * (v[3 * j] - ui);
        sy += c * (v[3 * j + 1] - wi);
        sz += c * (v[3 * j + 2] - ti);
    }
    s[0] += sx;
    s[1] += sy;
    s[2] += sz;
}

/* sum_b V_b W_ib / sigma */
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

/* Run BODY(i, PER) for every particle i < n in a static OpenMP loop, with PER
 * a constant 1 on periodic domains and 0 otherwise (one branch per call). */
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

/* ---- laminar and kim ---------------------------------------------------------- */

enum { VK_MORRIS, VK_MONAGHAN, VK_KIM };

typedef struct visc_job {
    const kconst *kc;
    const target *t;
    int nt;
    uint32_t n;
    const float *x, *v, *rho;
    float *a;
    int kind;             /* VK_MORRIS, VK_MONAGHAN (pair weight V_j) or VK_KIM (m_j/(rho_i+rho_j)) */
    float cf;             /* factor of the fluid sum */
    float cb;             /* factor of the boundary sum, before the 1/rho_i */
    float eps;
} visc_job;

ROW_FN void visc_particle(const visc_job *J, uint32_t i, const int PER)
{
    const kconst *kc = J->kc;
    prefetch_rows(J->t, J->nt, i, J->n);
    const float xi = J->x[3 * i], yi = J->x[3 * i + 1], zi = J->x[3 * i + 2];
    const float vi[3] = {J->v[3 * i], J->v[3 * i + 1], J->v[3 * i + 2]};
    const float rhoi = J->rho[i];
    float af[3] = {0.0f, 0.0f, 0.0f}, ab[3] = {0.0f, 0.0f, 0.0f};
    if (J->kind == VK_MORRIS) {
        float sb = 0.0f;
        for (int b = 0; b < J->nt; b++) {
            const target *tg = &J->t[b];
            if (tg->boundary)
                sb += row_morris_wall(kc, ROW(tg->nl, i), tg->x, tg->w, xi, yi, zi, J->eps, PER);
            else
                row_morris(kc, ROW(tg->nl, i), tg->x, tg->m, tg->rho, tg->v, xi, yi, zi, 1.0f / rhoi, vi, J->eps,
                           af, PER);
        }
        ab[0] = sb * vi[0];
        ab[1] = sb * vi[1];
        ab[2] = sb * vi[2];
    } else {
        for (int b = 0; b < J->nt; b++) {
            const target *tg = &J->t[b];
            if (tg->boundary)
                row_visc_wall(kc, ROW(tg->nl, i), tg->x, tg->w, xi, yi, zi, vi, J->eps, ab, PER);
            else if (J->kind == VK_KIM)
                row_visc(kc, ROW(tg->nl, i), tg->x, tg->m, tg->rho, tg->v, xi, yi, zi, rhoi, vi, J->eps, af, PER);
            else
                row_visc(kc, ROW(tg->nl, i), tg->x, tg->w, NULL, tg->v, xi, yi, zi, rhoi, vi, J->eps, af, PER);
        }
    }
    const float cbi = J->cb / rhoi;
    J->a[3 * i] += J->cf * af[0] + cbi * ab[0];
    J->a[3 * i + 1] += J->cf * af[1] + cbi * ab[1];
    J->a[3 * i + 2] += J->cf * af[2] + cbi * ab[2];
}

#define VISC_BODY(i, PER) visc_particle(&job, (i), (PER))

/* a_i += cf * fluid sum + cb / rho_i * rho0 * boundary sum, for every fluid set */
/* OpenCL path (viscosity_cl.c): the same coefficients, summed on the device */
extern const floe_api *visc_cl_api;
int visc_cl_pairs(const floe_stage_call *call, int kind, double cf, double cb_nu, double eps_f);
int visc_cl_xsph(const floe_stage_call *call, double alpha, double balpha);

static int run_visc(const floe_stage_call *call, int cl, int kind, double cf, double cb_nu, double eps_f,
                    double nu_max, double diffusion)
{
    floe_ctx *ctx = call->ctx;
    const floe_sim_info *si = api->sim(ctx);
    const kconst kc = kconst_make(si);
    fluid f[VISC_MAX_SETS];
    target t[2 * VISC_MAX_SETS];
    int nf, nt, st;
    size_t total;

    if (diffusion > 0.0 && nu_max > 0.0)
        api->dt_limit(ctx, diffusion * (double)si->spacing * si->spacing / nu_max);
    if (cf == 0.0 && cb_nu == 0.0)
        return FLOE_OK;
    if (cl)
        return visc_cl_pairs(call, kind, cf, cb_nu, eps_f);
    if ((st = list_fluids(ctx, f, &nf, &total)) != FLOE_OK)
        return st;
    if (kind == VK_MONAGHAN && (st = compute_volumes(ctx, call->state, f, nf, total)) != FLOE_OK)
        return st;
    const float *vol = kind == VK_MONAGHAN ? ((visc_state *)call->state)->vol : NULL;
    for (int s = 0; s < nf; s++) {
        const uint32_t n = f[s].info.n;
        if (n == 0)
            continue;
        if ((st = list_targets(ctx, &f[s], f, nf, cb_nu != 0.0, vol, t, &nt)) != FLOE_OK)
            return st;
        visc_job job = {
            .kc = &kc, .t = t, .nt = nt, .n = n,
            .x = api->attr(ctx, f[s].set, "x", FLOE_VEC3),
            .v = api->attr(ctx, f[s].set, "v", FLOE_VEC3),
            .rho = api->attr(ctx, f[s].set, "rho", FLOE_F32),
            .a = api->attr(ctx, f[s].set, "a", FLOE_VEC3),
            .kind = kind,
            .cf = (float)cf,
            .cb = (float)(cb_nu * f[s].info.rest_density), /* boundary mass rho0_i V_b */
            .eps = (float)(eps_f * kc.H * kc.H),
        };
        if (!job.a)
            return api->fail(ctx, FLOE_ERR_ARG, "set '%s' has no vec3 attribute 'a'", f[s].info.name);
        FOR_EACH_PARTICLE(kc.periodic, n, VISC_BODY);
    }
    return FLOE_OK;
}

enum { LA_NU, LA_BOUNDARY_NU, LA_FORM, LA_WALL, LA_EPS, LA_DIFFUSION };

static int laminar(const floe_stage_call *call, int cl)
{
    const floe_sim_info *si = api->sim(call->ctx);
    const double nu = call->param[LA_NU].f;
    const double nub0 = call->param[LA_BOUNDARY_NU].f < 0.0 ? nu : call->param[LA_BOUNDARY_NU].f;
    const char *form = call->param[LA_FORM].s ? call->param[LA_FORM].s : "morris";
    const char *wall = call->param[LA_WALL].s ? call->param[LA_WALL].s : "mirror";
    const double eps = call->param[LA_EPS].f, dif = call->param[LA_DIFFUSION].f;
    double nub = nub0;
    if (!strcmp(wall, "mirror")) /* v_ib = v_i - v_b = 2 v_i */
        nub = 2.0 * nub0;
    else if (strcmp(wall, "zero"))
        return api->fail(call->ctx, FLOE_ERR_ARG, "viscosity.laminar: wall_velocity '%s': expected zero or mirror", wall);
    if (!strcmp(form, "morris")) /* boundary: m_b (1/rho_i + 1/rho_b) = 2 rho0 V_b / rho_i */
        return run_visc(call, cl, VK_MORRIS, nu, 2.0 * nub, eps, fmax(nu, nub), dif);
    if (!strcmp(form, "monaghan")) {
        const double c = 2.0 * (si->dim + 2);
        return run_visc(call, cl, VK_MONAGHAN, c * nu, c * nub, eps, fmax(nu, nub), dif);
    }
    return api->fail(call->ctx, FLOE_ERR_ARG, "viscosity.laminar: form '%s': expected morris or monaghan", form);
}

enum { KI_BETA0, KI_BETA1, KI_BOUNDARY_BETA0, KI_EPS, KI_DIFFUSION };

static int kim(const floe_stage_call *call, int cl)
{
    const floe_sim_info *si = api->sim(call->ctx);
    const double b0 = call->param[KI_BETA0].f, b1 = call->param[KI_BETA1].f;
    const double b0b = call->param[KI_BOUNDARY_BETA0].f;
    const double H = si->support;
    /* sum_j m_j beta0 beta1 u_ij / ((rho_i+rho_j)/2) grad W = 2 beta0 beta1 H sum_j m_j/(rho_i+rho_j) (...) grad W;
     * boundary: rho_ib^avg = rho_i, so beta0b beta1 H / rho_i sum_b rho0 V_b (...) grad W */
    const double nu_eq = b1 * H / (2.0 * (si->dim + 2)); /* times beta0 */
    return run_visc(call, cl, VK_KIM, 2.0 * b0 * b1 * H, b0b * b1 * H, call->param[KI_EPS].f, fmax(b0, b0b) * nu_eq,
                    call->param[KI_DIFFUSION].f);
}

static int st_laminar(const floe_stage_call *call) { return laminar(call, 0); }
static int st_laminar_cl(const floe_stage_call *call) { return laminar(call, 1); }
static int st_kim(const floe_stage_call *call) { return kim(call, 0); }
static int st_kim_cl(const floe_stage_call *call) { return kim(call, 1); }

/* ---- xsph --------------------------------------------------------------------- */

typedef struct xsph_job {
    const kconst *kc;
    const target *t;
    int nt;
    uint32_t n;
    const float *x, *v, *rho;
    float *a;
    float cf, cb;
} xsph_job;

ROW_FN void xsph_particle(const xsph_job *J, uint32_t i, const int PER)
{
    const kconst *kc = J->kc;
    prefetch_rows(J->t, J->nt, i, J->n);
    const float xi = J->x[3 * i], yi = J->x[3 * i + 1], zi = J->x[3 * i + 2];
    const float vi[3] = {J->v[3 * i], J->v[3 * i + 1], J->v[3 * i + 2]};
    const float rhoi = J->rho[i];
    float af[3] = {0.0f, 0.0f, 0.0f};
    float wb = 0.0f;
    for (int b = 0; b < J->nt; b++) {
        const target *tg = &J->t[b];
        if (tg->boundary)
            wb += row_w(kc, ROW(tg->nl, i), tg->x, tg->w, xi, yi, zi, PER);
        else
            row_xsph(kc, ROW(tg->nl, i), tg->x, tg->m, tg->rho, tg->v, xi, yi, zi, rhoi, vi, af, PER);
    }
    /* boundary: m_b / (rho_i + rho_b) (0 - v_i) W_ib with m_b = rho0 V_b, rho_b = rho_i */
    const float cbi = -J->cb * wb / (2.0f * rhoi);
    J->a[3 * i] += J->cf * af[0] + cbi * vi[0];
    J->a[3 * i + 1] += J->cf * af[1] + cbi * vi[1];
    J->a[3 * i + 2] += J->cf * af[2] + cbi * vi[2];
}

#define XSPH_BODY(i, PER) xsph_particle(&job, (i), (PER))

enum { XS_ALPHA, XS_BOUNDARY_ALPHA };

static int xsph(const floe_stage_call *call, int cl)
{
    floe_ctx *ctx = call->ctx;
    const floe_sim_info *si = api->sim(ctx);
    const kconst kc = kconst_make(si);
    const double alpha = call->param[XS_ALPHA].f, balpha = call->param[XS_BOUNDARY_ALPHA].f;
    fluid f[VISC_MAX_SETS];
    target t[2 * VISC_MAX_SETS];
    int nf, nt, st;
    size_t total;

    if ((alpha == 0.0 && balpha == 0.0) || !(si->dt > 0.0))
        return FLOE_OK; /* nothing to smooth over a zero step */
    if (cl)
        return visc_cl_xsph(call, alpha, balpha);
    if ((st = list_fluids(ctx, f, &nf, &total)) != FLOE_OK)
        return st;
    for (int s = 0; s < nf; s++) {
        const uint32_t n = f[s].info.n;
        if (n == 0)
            continue;
        if ((st = list_targets(ctx, &f[s], f, nf, balpha > 0.0, NULL, t, &nt)) != FLOE_OK)
            return st;
        xsph_job job = {
            .kc = &kc, .t = t, .nt = nt, .n = n,
            .x = api->attr(ctx, f[s].set, "x", FLOE_VEC3),
            .v = api->attr(ctx, f[s].set, "v", FLOE_VEC3),
            .rho = api->attr(ctx, f[s].set, "rho", FLOE_F32),
            .a = api->attr(ctx, f[s].set, "a", FLOE_VEC3),
            /* 2 alpha / dt, and W = sigma w_hat */
            .cf = (float)(2.0 * alpha / si->dt * kc.sigma),
            .cb = (float)(2.0 * balpha / si->dt * kc.sigma * f[s].info.rest_density),
        };
        if (!job.a)
            return api->fail(ctx, FLOE_ERR_ARG, "set '%s' has no vec3 attribute 'a'", f[s].info.name);
        FOR_EACH_PARTICLE(kc.periodic, n, XSPH_BODY);
    }
    return FLOE_OK;
}

static int st_xsph(const floe_stage_call *call) { return xsph(call, 0); }
static int st_xsph_cl(const floe_stage_call *call) { return xsph(call, 1); }

/* ---- descriptors ------------------------------------------------------------ */

#define FLUID(n, t, acc) { FLOE_SIZED(floe_attr_desc), .kind = FLOE_SET_FLUID, .name = n, .type = t, .access = acc }
#define BOUND(n, t) { FLOE_SIZED(floe_attr_desc), .kind = FLOE_SET_BOUNDARY, .name = n, .type = t, .access = FLOE_READ }

static const floe_attr_desc visc_attrs[] = {
    FLUID("x", FLOE_VEC3, FLOE_READ),
    FLUID("v", FLOE_VEC3, FLOE_READ),
    FLUID("m", FLOE_F32, FLOE_READ),
    FLUID("rho", FLOE_F32, FLOE_READ),
    FLUID("a", FLOE_VEC3, FLOE_READ | FLOE_WRITE),
    BOUND("x", FLOE_VEC3),
    BOUND("V", FLOE_F32),
    {0},
};

#define P_FLOAT(nm, d, lo, hi, u, txt) \
    { FLOE_SIZED(floe_param_desc), .name = nm, .type = FLOE_PARAM_FLOAT, .def = d, .min = lo, .max = hi, .unit = u, .doc = txt }

static const floe_param_desc laminar_params[] = {
    [LA_NU] = P_FLOAT("nu", 1e-6, 0, 100, "m^2/s",
                      "kinematic viscosity between fluid particles (water 1e-6, glycerol 1.1e-3, honey ~7e-3)"),
    [LA_BOUNDARY_NU] = P_FLOAT("boundary_nu", -1, -1, 100, "m^2/s",
                               "kinematic viscosity against boundary particles (walls at rest, no-slip); "
                               "-1: same as nu, 0: free slip"),
    [LA_FORM] = { FLOE_SIZED(floe_param_desc), .name = "form", .type = FLOE_PARAM_STRING, .def_str = "morris",
                  .choices = "morris|monaghan", .unit = "",
                  .doc = "morris: Morris et al. 1997, a_i += nu sum_j m_j (1/rho_i+1/rho_j) (x_ij.grad W_ij)/(r^2+eps H^2) v_ij "
                         "(accurate on coarse neighbourhoods); monaghan: 2(d+2) nu sum_j V_j (v_ij.x_ij)/(r^2+eps H^2) grad W_ij "
                         "(conserves angular momentum, ~30% low at H = 2d)" },
    [LA_WALL] = { FLOE_SIZED(floe_param_desc), .name = "wall_velocity", .type = FLOE_PARAM_STRING,
                  .def_str = "mirror", .choices = "zero|mirror", .unit = "",
                  .doc = "velocity given to boundary particles of walls at rest: mirror = -v_i (Takeda 1994, Morris 1997 "
                         "extrapolation with d_b = d_i: no-slip at the wall surface), zero = 0 (no-slip about a "
                         "third of a spacing inside the wall)" },
    [LA_EPS] = P_FLOAT("eps", 0.01, 1e-6, 1, "",
                       "regulariser: |x_ij|^2 + eps H^2 in the denominator (H = support radius)"),
    [LA_DIFFUSION] = P_FLOAT("diffusion_number", 0.125, 0, 10, "",
                             "explicit-diffusion limit: proposes dt <= diffusion_number d^2 / max(nu, boundary_nu) "
                             "(d = spacing); 0 proposes nothing"),
    {0},
};

static const floe_param_desc kim_params[] = {
    [KI_BETA0] = P_FLOAT("beta0", 0.1, 0, 100, "",
                         "bulk viscosity coefficient beta0 of eq. 37 (Kim 2020: 0.1)"),
    [KI_BETA1] = P_FLOAT("beta1", 10, 0, 1e4, "m/s",
                         "sound-wave speed beta1 of eq. 37/40 (Kim 2020: 10); "
                         "equivalent nu = beta0 beta1 H / (2 (dim + 2))"),
    [KI_BOUNDARY_BETA0] = P_FLOAT("boundary_beta0", 1, 0, 100, "",
                                  "coefficient of the boundary viscosity eq. 40 (as written it has none: 1); "
                                  "0 switches eq. 40 off"),
    [KI_EPS] = P_FLOAT("eps", 0.01, 1e-6, 1, "",
                       "regulariser of u_ij (eq. 38): |x_ij|^2 + eps H^2"),
    [KI_DIFFUSION] = P_FLOAT("diffusion_number", 0.125, 0, 10, "",
                             "proposes dt <= diffusion_number d^2 / nu_eq with the equivalent viscosity "
                             "nu_eq = max(beta0, boundary_beta0) beta1 H / (2 (dim + 2)); 0 proposes nothing"),
    {0},
};

static const floe_param_desc xsph_params[] = {
    [XS_ALPHA] = P_FLOAT("alpha", 0.01, 0, 1, "",
                         "fraction of the relative velocity smoothed per step between fluid particles"),
    [XS_BOUNDARY_ALPHA] = P_FLOAT("boundary_alpha", 0, 0, 1, "",
                                  "the same against boundary particles at rest (a sticky wall); 0 = none"),
    {0},
};

static const floe_stage_desc stages[] = {
    { FLOE_SIZED(floe_stage_desc), .name = "laminar",
      .doc = "physical kinematic viscosity nu (Morris et al. 1997, or the Monaghan form), no-slip walls at rest; "
             "after 'gravity', before the pressure force/solve",
      .run = st_laminar, .run_cl = st_laminar_cl, .params = laminar_params, .attrs = visc_attrs },
    { FLOE_SIZED(floe_stage_desc), .name = "kim",
      .doc = "Kim 2020 eq. 37-39 bulk viscosity between fluid particles and eq. 40 boundary viscosity "
             "(water clings to and runs down walls); after 'gravity', before the pressure force/solve",
      .run = st_kim, .run_cl = st_kim_cl, .params = kim_params, .attrs = visc_attrs },
    { FLOE_SIZED(floe_stage_desc), .name = "xsph",
      .doc = "XSPH velocity smoothing as an acceleration alpha/dt sum_j 2 m_j/(rho_i+rho_j) (v_j-v_i) W_ij",
      .run = st_xsph, .run_cl = st_xsph_cl, .params = xsph_params, .attrs = visc_attrs },
    {0},
};

static const floe_module_desc module = {
    FLOE_SIZED(floe_module_desc),
    .abi_major = FLOE_ABI_MAJOR,
    .abi_minor = FLOE_ABI_MINOR,
    .name = "viscosity",
    .version = "1.0.0",
    .summary = "viscous forces added to a: laminar (Morris 1997, physical nu), Kim 2020 bulk + boundary "
               "viscosity (eq. 37-40), XSPH; for WCSPH and IISPH",
    .stages = stages,
    .init = visc_init,
    .fini = visc_fini,
};

FLOE_MODULE(viscosity)
{
    api = visc_cl_api = core;
    return &module;
}
