/* Floe: the kit for particle (SPH) modules, header only, the C twin of
 * kernels/core/sph.h. A module links no core symbol: everything here is
 * static inline or a macro and reaches the core through the floe_api table.
 *
 * What it holds (docs/modules.md walks a solver written on it):
 *   <floe/module_desc.h>              one `api` pointer for all the files of a module
 *                                     (FLOE_MODULE_API_DEFINE), the descriptor and entry point
 *                                     (FLOE_MODULE_DESC, also named FLOE_SPH_MODULE), the
 *                                     parameter, attribute and stage descriptor macros
 *   FLOE_STATE_INIT, floe_scratch     a zeroed module state, per-particle scratch arrays
 *   floe_kconst, floe_kw, floe_kdw    kernel constants and the branch-free spline
 *   FLOE_X_IJ(per)                    x_ij and r^2 of one pair, minimum image on periodic axes
 *   floe_target, floe_targets         the sets a fluid set interacts with, and their lists;
 *   floe_targets_moving               the velocities of the moving boundary sets among them
 *   FLOE_ROW, FLOE_ROW_CALL           one particle's row of a target, the periodic/plain choice
 *   floe_prefetch_rows, FLOE_PAR_FOR  row prefetching, the OpenMP loop over particles
 *   floe_row_w, floe_row_grad         the common row sums (density, sum_b V_b grad W_ib,
 *   floe_row_vgrad                    sum_b V_b v_b . grad W_ib)
 *   FLOE_ROW_SUM3, FLOE_ROW_GRAD_SUM  a row sum of (pair term) x_ij, of (pair weight) grad W_ij:
 *                                     the term or weight is the physics
 *   floe_xsph_pair, floe_row_xsph     the one XSPH term (sph.xsph and wcsph.pressure_force)
 *   floe_read_of, floe_attr_of        an attribute of a fluid set: the const view of what
 *                                     a stage reads (api->attr_read), the data it writes
 *   FLOE_ATTR_FLUID, FLOE_ATTR_BOUND  attribute descriptors; FLOE_ATTRS_PAIR_READ, what a
 *                                     stage over fluid and boundary neighbours reads;
 *   FLOE_ATTR_ADDS_ACCEL              the a a force stage adds its own particle's force to
 *   floe_solver_sets, floe_cheb_weight,  a pressure solve's sets, the Chebyshev weights of its
 *   FLOE_PARAM_CHEBYSHEV(_DELAY)      Jacobi iteration and their parameters (iisph, dfsph);
 *   FLOE_PARAM_MAX_CORRECTION_SPEED   the solves' bound on removing compression already present
 * Packed records for the AVX2 rows: <floe/sph_pack.h>.
 *
 * Row functions take the pair loop's inputs in one order,
 *   fn(kc, id, cnt, xt, w, ..., xi, yi, zi, ..., per)
 * with `per` last and always a constant at the call (FLOE_ROW_CALL passes 1
 * or 0): each is compiled twice, with the minimum image and without, and
 * the plain loop carries no image arithmetic. FLOE_ROW_FN makes them
 * always_inline so that they inline into the OpenMP loop bodies. */
#ifndef FLOE_SPH_H
#define FLOE_SPH_H

#include <floe/kernel.h>
#include <floe/module.h>
#include <floe/module_desc.h>
#include <floe/module_sets.h>

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A module state that starts zeroed, for floe_module_desc.init:
 * FLOE_STATE_INIT(my_init, my_state) defines static int my_init(floe_ctx *, void **). */
static inline int floe_state_new(void **state, size_t size)
{
    *state = calloc(1, size);
    return *state ? FLOE_OK : FLOE_ERR_NOMEM;
}
#define FLOE_STATE_INIT(fn, type)                     \
    static int fn(floe_ctx *ctx, void **state)        \
    {                                                 \
        (void)ctx;                                    \
        return floe_state_new(state, sizeof(type));   \
    }

/* Room for n floats in a module's scratch array (*p of *cap floats, grown
 * with realloc, freed by the module's fini); an error when out of memory. */
static inline int floe_scratch(const floe_api *api, floe_ctx *ctx, float **p, size_t *cap, size_t n)
{
    if (n <= *cap)
        return FLOE_OK;
    float *np = realloc(*p, n * sizeof *np);
    if (!np)
        return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory (%zu particles)", n);
    *p = np;
    *cap = n;
    return FLOE_OK;
}

/* the row sums must inline into the OpenMP loop bodies */
#if defined(__GNUC__)
#define FLOE_ROW_FN static inline __attribute__((always_inline))
#else
#define FLOE_ROW_FN static inline
#endif

/* ---- kernel constants ----------------------------------------------------- */

typedef struct floe_kconst {
    float H, inv_H;
    float sigma;    /* W(0) */
    float g;        /* sigma / H: dW/dr = g dW/dq / sigma */
    float r_min2;   /* (1e-6 H)^2, keeps 1/r finite for coincident particles */
    int periodic;   /* some axis is periodic: x_ij takes the minimum image */
    int dim;
    float L[3];     /* period of each axis, 0 if not periodic */
    float half_L[3];
} floe_kconst;

static inline floe_kconst floe_kconst_make(const floe_sim_info *si)
{
    floe_kernel k = floe_kernel_make(si->dim, si->support);
    floe_kconst c;
    c.H = k.H;
    c.inv_H = k.inv_H;
    c.sigma = k.sigma;
    c.g = k.sigma * k.inv_H;
    c.r_min2 = (1e-6f * k.H) * (1e-6f * k.H);
    c.periodic = si->periodic != 0;
    c.dim = si->dim;
    for (int d = 0; d < 3; d++) {
        c.L[d] = (si->periodic & (1u << d)) ? si->period[d] : 0.0f;
        c.half_L[d] = 0.5f * c.L[d];
    }
    return c;
}

/* W / sigma and (dW/dr) / r at distance^2 r2 (<floe/kernel.h>) */
static inline float floe_kw(const floe_kconst *c, float r2) { return floe_w_hat(c->inv_H, r2); }

static inline float floe_kdw(const floe_kconst *c, float r2)
{
    return floe_dw_r_hat(c->g, c->inv_H, c->r_min2, r2);
}

/* ---- one pair -----------------------------------------------------------------
 * Inside a row loop `for (uint32_t k = 0; k < cnt; k++)` with id (the row),
 * xt (the target's positions), xi, yi, zi and kc (a floe_kconst pointer) in
 * scope: j, dx, dy, dz (x_i - x_j, the minimum image when per) and r2. The
 * image is branch-free (L = 0 leaves an axis unchanged), so the loop still
 * vectorises; it takes the same values as floe_periodic_delta. */
#define FLOE_MIN_IMAGE(kc, d, a) d -= (kc)->L[a] * ((float)(d > (kc)->half_L[a]) - (float)(d < -(kc)->half_L[a]))
#define FLOE_X_IJ(per)                                                           \
    const uint32_t j = id[k];                                                    \
    float dx = xi - xt[3 * j], dy = yi - xt[3 * j + 1], dz = zi - xt[3 * j + 2]; \
    if (per) {                                                                   \
        FLOE_MIN_IMAGE(kc, dx, 0);                                               \
        FLOE_MIN_IMAGE(kc, dy, 1);                                               \
        FLOE_MIN_IMAGE(kc, dz, 2);                                               \
    }                                                                            \
    const float r2 = dx * dx + dy * dy + dz * dz

/* ---- the sets a fluid set interacts with -------------------------------- */

typedef struct floe_target {
    int boundary;
    uint32_t n;
    floe_set set;
    const char *name;
    const float *x;     /* positions, 3 per particle */
    const float *mass;  /* m (fluid) or V (boundary) */
    const float *rho;   /* fluid, with FLOE_NEED_RHO */
    const float *v;     /* fluid, with FLOE_NEED_V; a moving boundary set's by floe_targets_moving */
    const float *aux;   /* fluid, when floe_targets got a scratch array: its slice of the set */
    size_t off;         /* fluid: offset of the set in the module's scratch (floe_fluid.off) */
    float umass;        /* fluid: the mass all its particles share (floe_targets' umass), else 0 */
    const floe_nlist *nl;
    /* nl's row data, copied so that a row costs one load less */
    const uint32_t *idx, *cnt;
    const float *wsum;  /* the core's kernel sums of the rows (floe_nlist.wsum), or NULL */
    uint32_t stride;
} floe_target;

/* what floe_targets fetches besides x and m / V */
enum { FLOE_NEED_RHO = 1, FLOE_NEED_V = 2, FLOE_WITH_BOUNDARY = 4 };

/* Targets of fluid set q (one of f[0..nf)): every non-empty fluid set, then,
 * with FLOE_WITH_BOUNDARY in `needs`, every non-empty boundary set, with
 * their neighbour lists from q; at most 2 FLOE_MAX_SETS. aux (NULL: none) is
 * a per-particle scratch over all fluid sets (laid out by floe_fluid.off),
 * umass (NULL: none) the shared mass of each fluid set (index as in f).
 * An absent attribute or neighbour list is an error naming the set. */
static inline int floe_targets(const floe_api *api, floe_ctx *ctx, const floe_fluid *q, const floe_fluid *f,
                               int nf, unsigned needs, const float *aux, const float *umass, floe_target *t,
                               int *nt)
{
    int st = FLOE_OK;
    int n = 0;
    for (int s = 0; s < nf; s++) {
        if (f[s].info.n == 0)
            continue; /* nothing to interact with */
        floe_target *tg = &t[n++];
        memset(tg, 0, sizeof *tg);
        tg->n = f[s].info.n;
        tg->set = f[s].set;
        tg->name = f[s].info.name;
        tg->x = floe_need_read(api, ctx, f[s].set, f[s].info.name, "x", FLOE_VEC3, &st);
        tg->mass = floe_need_read(api, ctx, f[s].set, f[s].info.name, "m", FLOE_F32, &st);
        if (needs & FLOE_NEED_RHO)
            tg->rho = floe_need_read(api, ctx, f[s].set, f[s].info.name, "rho", FLOE_F32, &st);
        if (needs & FLOE_NEED_V)
            tg->v = floe_need_read(api, ctx, f[s].set, f[s].info.name, "v", FLOE_VEC3, &st);
        if (aux)
            tg->aux = aux + f[s].off;
        tg->off = f[s].off;
        tg->umass = umass ? umass[s] : 0.0f;
        tg->nl = api->neighbours(ctx, q->set, f[s].set);
    }
    if (needs & FLOE_WITH_BOUNDARY) {
        floe_set b[FLOE_MAX_SETS];
        int nb = api->set_list(ctx, FLOE_SET_BOUNDARY, b, FLOE_MAX_SETS);
        if (nb < 0 || nb > FLOE_MAX_SETS)
            return api->fail(ctx, FLOE_ERR, "cannot list boundary sets (%d)", nb);
        for (int s = 0; s < nb; s++) {
            floe_set_info bi;
            if (api->set_info(ctx, b[s], &bi) != FLOE_OK)
                return api->fail(ctx, FLOE_ERR, "boundary set %d: no info", s);
            if (bi.n == 0)
                continue;
            floe_target *tg = &t[n++];
            memset(tg, 0, sizeof *tg);
            tg->boundary = 1;
            tg->n = bi.n;
            tg->set = b[s];
            tg->name = bi.name;
            tg->x = floe_need_read(api, ctx, b[s], bi.name, "x", FLOE_VEC3, &st);
            tg->mass = floe_need_read(api, ctx, b[s], bi.name, "V", FLOE_F32, &st);
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
        t[s].idx = t[s].nl->idx;
        t[s].cnt = t[s].nl->count;
        t[s].wsum = t[s].nl->wsum;
        t[s].stride = t[s].nl->stride;
    }
    *nt = n;
    return FLOE_OK;
}

/* The velocities v of the moving boundary sets among targets t[0..nt) (a
 * rigid body's particles, api->set_moving), for a solver whose predicted
 * density takes the fluid's velocity relative to them; walls at rest, and
 * a moving set without v, keep v = NULL. v is read undeclared: boundary
 * sets carry it only where a stage writes it (the rigid module). */
static inline void floe_targets_moving(const floe_api *api, floe_ctx *ctx, floe_target *t, int nt)
{
    for (int b = 0; b < nt; b++) {
        floe_set_info bi;
        if (t[b].boundary && api->set_info(ctx, t[b].set, &bi) == FLOE_OK && !bi.is_static)
            t[b].v = (const float *)api->attr_read(ctx, t[b].set, "v", FLOE_VEC3);
    }
}

/* the fluid targets come first: how many there are */
static inline int floe_targets_fluid(const floe_target *t, int nt)
{
    int n = 0;
    while (n < nt && !t[n].boundary)
        n++;
    return n;
}

/* The host data of a fluid set's attribute that a stage writes (api->attr;
 * floe_read_of for what it only reads: the const view); NULL with an
 * error naming the set when absent. */
static inline float *floe_attr_of(const floe_api *api, floe_ctx *ctx, const floe_fluid *f, const char *attr,
                                  floe_type type)
{
    float *p = (float *)api->attr(ctx, f->set, attr, type);
    if (!p)
        api->fail(ctx, FLOE_ERR_ARG, "set '%s' has no %s attribute '%s'", f->info.name,
                  type == FLOE_VEC3 ? "vec3" : "f32", attr);
    return p;
}

static inline const float *floe_read_of(const floe_api *api, floe_ctx *ctx, const floe_fluid *f, const char *attr,
                                        floe_type type)
{
    int st = FLOE_OK;
    return floe_need_read(api, ctx, f->set, f->info.name, attr, type, &st);
}

/* ---- rows ------------------------------------------------------------------- */

/* particle i's row of target tg, as the (id, cnt) arguments of a row function */
#define FLOE_ROW(tg, i) (tg)->idx + (size_t)(i) * (tg)->stride, (tg)->cnt[i]
/* fn(..., 1) with the minimum image when periodic, fn(..., 0) without */
#define FLOE_ROW_CALL(periodic, fn, ...) ((periodic) ? fn(__VA_ARGS__, 1) : fn(__VA_ARGS__, 0))

/* Run BODY(i, 1) (periodic) or BODY(i, 0) over i in [0, n) in parallel, a
 * static schedule: one branch on the periodic flag outside the loop. */
#define FLOE_PAR_FOR(periodic, n, BODY)                            \
    do {                                                           \
        if (periodic) {                                            \
            _Pragma("omp parallel for schedule(static)")           \
            for (uint32_t i_ = 0; i_ < (n); i_++)                  \
                BODY(i_, 1);                                       \
        } else {                                                   \
            _Pragma("omp parallel for schedule(static)")           \
            for (uint32_t i_ = 0; i_ < (n); i_++)                  \
                BODY(i_, 0);                                       \
        }                                                          \
    } while (0)

/* Prefetch the neighbour rows of particle i + FLOE_PREFETCH_AHEAD: rows are
 * stride * 4 bytes apart and only their first lines are read, a pattern the
 * hardware prefetchers follow poorly. */
#ifndef FLOE_PREFETCH_AHEAD
#define FLOE_PREFETCH_AHEAD 4
#endif
static inline void floe_prefetch_rows(const floe_target *t, int nt, uint32_t i, uint32_t n)
{
#if FLOE_PREFETCH_AHEAD > 0 && defined(__GNUC__)
    if (i + FLOE_PREFETCH_AHEAD >= n)
        return;
    for (int ti = 0; ti < nt; ti++) {
        const char *row = (const char *)(t[ti].idx + (size_t)(i + FLOE_PREFETCH_AHEAD) * t[ti].stride);
        __builtin_prefetch(row);
        __builtin_prefetch(row + 64);
    }
#else
    (void)t, (void)nt, (void)i, (void)n;
#endif
}

/* The body of a row function that adds a pair term times x_ij,
 *   s += sum_j (G) x_ij,
 * G an expression of j, dx, dy, dz and r2 (FLOE_X_IJ's names) and of the
 * function's arguments; the function names its arguments as floe_row_grad
 * does (kc, id, cnt, xt, xi, yi, zi, per). FLOE_ROW_GRAD_SUM(s, EXPR) is the
 * case of a pair weight times grad W_ij = floe_kdw(kc, r2) x_ij: the pair
 * term is (EXPR) * floe_kdw(kc, r2), in that order. */
#define FLOE_ROW_SUM3(s, G)                                          \
    do {                                                             \
        float sx_ = 0.0f, sy_ = 0.0f, sz_ = 0.0f;                    \
        _Pragma("omp simd reduction(+ : sx_, sy_, sz_)")             \
        for (uint32_t k = 0; k < cnt; k++) {                         \
            FLOE_X_IJ(per);                                          \
            const float g_ = (G);                                    \
            sx_ += g_ * dx;                                          \
            sy_ += g_ * dy;                                          \
            sz_ += g_ * dz;                                          \
        }                                                            \
        (s)[0] += sx_;                                               \
        (s)[1] += sy_;                                               \
        (s)[2] += sz_;                                               \
    } while (0)
#define FLOE_ROW_GRAD_SUM(s, EXPR) FLOE_ROW_SUM3(s, (EXPR) * floe_kdw(kc, r2))

/* Particle i's turn in a force loop over the query set's positions x,
 * velocities v and densities rho (the kernels' FLOE_FORCE_BEGIN): its
 * rows of the targets t[0..nt) prefetched ahead, xi, yi, zi, vi3, rhoi,
 * and the fluid and boundary sums af, ab at zero. */
#define FLOE_FORCE_PARTICLE(t, nt, i, n, x, v, rho)                          \
    floe_prefetch_rows(t, nt, i, n);                                         \
    const float xi = (x)[3 * (i)], yi = (x)[3 * (i) + 1], zi = (x)[3 * (i) + 2]; \
    const float vi3[3] = {(v)[3 * (i)], (v)[3 * (i) + 1], (v)[3 * (i) + 2]};  \
    const float rhoi = (rho)[i];                                              \
    float af[3] = {0.0f, 0.0f, 0.0f}, ab[3] = {0.0f, 0.0f, 0.0f}

/* sum_j w_j W_ij / sigma */
FLOE_ROW_FN float floe_row_w(const floe_kconst *kc, const uint32_t *restrict id, uint32_t cnt,
                             const float *restrict xt, const float *restrict w, float xi, float yi, float zi,
                             const int per)
{
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (uint32_t k = 0; k < cnt; k++) {
        FLOE_X_IJ(per);
        s += w[j] * floe_kw(kc, r2);
    }
    return s;
}

/* s += sum_j w_j grad W_ij */
FLOE_ROW_FN void floe_row_grad(const floe_kconst *kc, const uint32_t *restrict id, uint32_t cnt,
                               const float *restrict xt, const float *restrict w, float xi, float yi, float zi,
                               float s[3], const int per)
{
    FLOE_ROW_GRAD_SUM(s, w[j]);
}

/* sum_j w_j v_j . grad W_ij: a moving boundary set's part of the density
 * change (w = V, v = the set's velocities, floe_targets_moving) */
FLOE_ROW_FN float floe_row_vgrad(const floe_kconst *kc, const uint32_t *restrict id, uint32_t cnt,
                                 const float *restrict xt, const float *restrict w, const float *restrict vt,
                                 float xi, float yi, float zi, const int per)
{
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (uint32_t k = 0; k < cnt; k++) {
        FLOE_X_IJ(per);
        s += w[j] * floe_kdw(kc, r2) * (vt[3 * j] * dx + vt[3 * j + 1] * dy + vt[3 * j + 2] * dz);
    }
    return s;
}

/* ---- XSPH (Monaghan 1989), one definition ------------------------------------
 * The weight of neighbour j in the XSPH sum of particle i,
 *   s_i += sum_j m_j / (rho_i + rho_j) (v_j - v_i) W_ij / sigma,
 * which sph.xsph and the fused pass of wcsph.pressure_force{xsph=} both add
 * up (the AVX2 row of the latter, modules/wcsph/rows_avx2.h, lane by lane). */
static inline float floe_xsph_pair(const floe_kconst *kc, float m_j, float rhoi, float rho_j, float r2)
{
    return m_j / (rhoi + rho_j) * floe_kw(kc, r2);
}

/* s += sum_j m_j / (rho_i + rho_j) (v_j - v_i) W_ij / sigma over a fluid row */
FLOE_ROW_FN void floe_row_xsph(const floe_kconst *kc, const uint32_t *restrict id, uint32_t cnt,
                               const float *restrict xt, const float *restrict m, const float *restrict rho,
                               const float *restrict v, float xi, float yi, float zi, float rhoi, const float vi[3],
                               float s[3], const int per)
{
    float sx = 0.0f, sy = 0.0f, sz = 0.0f;
    const float ui = vi[0], wi = vi[1], ti = vi[2];
#pragma omp simd reduction(+ : sx, sy, sz)
    for (uint32_t k = 0; k < cnt; k++) {
        FLOE_X_IJ(per);
        const float c = floe_xsph_pair(kc, m[j], rhoi, rho[j], r2);
        sx += c * (v[3 * j] - ui);
        sy += c * (v[3 * j + 1] - wi);
        sz += c * (v[3 * j + 2] - ti);
    }
    s[0] += sx;
    s[1] += sy;
    s[2] += sz;
}

/* ---- descriptors ---------------------------------------------------------------- */

/* FLOE_ATTR_FLUID, FLOE_ATTR_BOUND: <floe/module_desc.h> */
/* what every stage over boundary neighbours reads of them: x and V */
#define FLOE_ATTRS_BOUND_READ FLOE_ATTR_BOUND("x", FLOE_VEC3), FLOE_ATTR_BOUND("V", FLOE_F32)
/* what a stage summing over fluid and boundary neighbours reads: x, v, m,
 * rho of every fluid set, x and V of every boundary set */
#define FLOE_ATTRS_PAIR_READ                                                                              \
    FLOE_ATTR_FLUID("x", FLOE_VEC3, FLOE_READ), FLOE_ATTR_FLUID("v", FLOE_VEC3, FLOE_READ),                 \
        FLOE_ATTR_FLUID("m", FLOE_F32, FLOE_READ), FLOE_ATTR_FLUID("rho", FLOE_F32, FLOE_READ),             \
        FLOE_ATTRS_BOUND_READ
/* ... and a force stage adds to a: FLOE_ATTRS_PAIR_READ and a (read and
 * written, its own particle's only: FLOE_OWN, so that under MPI the ghosts'
 * a is not refreshed for it; ABI 1.15) */
#define FLOE_ATTRS_FORCE FLOE_ATTRS_PAIR_READ, FLOE_ATTR_ADDS_ACCEL

/* ==== added with iisph and tension ============================================ */

/* V_j = m_j / rho_j of every fluid set f[0..nf) into vol (laid out by floe_fluid.off) */
static inline int floe_volumes(const floe_api *api, floe_ctx *ctx, const floe_fluid *f, int nf, float *vol)
{
    int st = FLOE_OK;
    for (int s = 0; s < nf; s++) {
        const uint32_t n = f[s].info.n;
        if (n == 0)
            continue;
        const float *restrict m = floe_need_read(api, ctx, f[s].set, f[s].info.name, "m", FLOE_F32, &st);
        const float *restrict rho = floe_need_read(api, ctx, f[s].set, f[s].info.name, "rho", FLOE_F32, &st);
        if (st != FLOE_OK)
            return st;
        float *restrict V = vol + f[s].off;
#pragma omp parallel for simd schedule(static)
        for (uint32_t i = 0; i < n; i++)
            V[i] = m[i] / rho[i];
    }
    return FLOE_OK;
}

/* the acceleration a force stage adds to */
#define FLOE_ATTR_ACCEL FLOE_ATTR_FLUID("a", FLOE_VEC3, FLOE_READ | FLOE_WRITE)
/* ... when the stage reads only its own particle's a, never a neighbour's
 * (ABI 1.15: under MPI the ghosts' a is not refreshed for it) */
#define FLOE_ATTR_ADDS_ACCEL FLOE_ATTR_FLUID("a", FLOE_VEC3, FLOE_READ | FLOE_WRITE | FLOE_OWN)

/* ==== pressure solvers (iisph, dfsph) ========================================== */

/* A pressure solve's fluid sets (floe_fluid_sets) and their particles *N,
 * before a step of time step dt: FLOE_OK to solve, FLOE_SKIP when there is
 * nothing to solve (no fluid particle, or dt <= 0: the stage returns
 * FLOE_OK), or an error: more than 2^32 - 2 particles, which the solvers'
 * uint32_t indices cannot hold. */
#define FLOE_SKIP 1
static inline int floe_solver_sets(const floe_api *api, floe_ctx *ctx, float dt, floe_fluid *f, int *nf, size_t *N)
{
    int st = floe_fluid_sets(api, ctx, f, nf, N);
    if (st != FLOE_OK)
        return st;
    if (*N == 0 || !(dt > 0.0f))
        return FLOE_SKIP;
    if (*N >= UINT32_MAX)
        return api->fail(ctx, FLOE_ERR_ARG, "%zu fluid particles, at most 2^32 - 2 supported", *N);
    return FLOE_OK;
}

/* ---- domain decomposition (ABI 1.13, docs/mpi.md) ------------------------------
 * The core's services, also against a core older than 1.13 (then: one
 * process). Every rank must make the same calls in the same order (they
 * are collective), also a rank that holds no particle. */
static inline int floe_has_dd(const floe_api *api)
{
    return api->size >= offsetof(floe_api, reduce) + sizeof api->reduce;
}
/* the particles of the set this process owns: the first ones, ghosts after */
static inline uint32_t floe_owned(const floe_api *api, floe_ctx *ctx, floe_set set, uint32_t n)
{
    return floe_has_dd(api) ? api->owned(ctx, set) : n;
}
/* the ghosts of a per-particle array of the set refreshed from their owners */
static inline int floe_halo(const floe_api *api, floe_ctx *ctx, floe_set set, void *data, size_t elem_bytes)
{
    return floe_has_dd(api) ? api->halo(ctx, set, data, elem_bytes) : FLOE_OK;
}
/* the particles of fluid set `set` (n of them) that this call of a stage
 * declaring floe_stage_desc.rows computes: a list of *count indices, or NULL
 * with *count = n (all); *part as api->rows gives it (0: a whole call) */
static inline const uint32_t *floe_rows(const floe_api *api, floe_ctx *ctx, floe_set set, uint32_t n,
                                        uint32_t *count, int *part)
{
    const uint32_t *r = NULL;
    *part = 0;
    if (api->size >= offsetof(floe_api, rows) + sizeof api->rows && api->rows)
        r = api->rows(ctx, set, count, part);
    if (!r)
        *count = n, *part = 0;
    return r;
}
/* values reduced over every rank (FLOE_REDUCE_SUM, _MAX, _MIN) in place */
static inline int floe_reduce(const floe_api *api, floe_ctx *ctx, double *v, int n, int op)
{
    return floe_has_dd(api) ? api->reduce(ctx, v, n, op) : FLOE_OK;
}
/* how many ranks run the scene (1: one process); collective */
static inline int floe_ranks(const floe_api *api, floe_ctx *ctx)
{
    double r = 1.0;
    return floe_reduce(api, ctx, &r, 1, FLOE_REDUCE_SUM) == FLOE_OK ? (int)r : 1;
}

/* floe_solver_sets for a solve that runs decomposed: a rank without
 * particles (N = 0) goes on when other ranks run (FLOE_OK, *ranks > 1),
 * since it takes part in their reductions and halo exchanges; *ranks is
 * the rank count (floe_ranks). */
static inline int floe_solver_sets_dd(const floe_api *api, floe_ctx *ctx, float dt, floe_fluid *f, int *nf, size_t *N,
                                      int *ranks)
{
    *ranks = floe_ranks(api, ctx);
    const int st = floe_solver_sets(api, ctx, dt, f, nf, N);
    return st == FLOE_SKIP && *ranks > 1 && dt > 0.0f ? FLOE_OK : st;
}

/* own[off + i] = 1 for the particles of fluid set f[q] this rank owns, 0
 * for its ghosts (laid out by floe_fluid.off); *total: the owned particles
 * of all ranks, what an average error divides by */
static inline int floe_owned_mask(const floe_api *api, floe_ctx *ctx, const floe_fluid *f, int nf, uint8_t *own,
                                  double *total)
{
    *total = 0.0;
    for (int q = 0; q < nf; q++) {
        const uint32_t n = f[q].info.n, o = floe_owned(api, ctx, f[q].set, n);
        memset(own + f[q].off, 1, o);
        memset(own + f[q].off + o, 0, n - o);
        *total += o;
    }
    return floe_reduce(api, ctx, total, 1, FLOE_REDUCE_SUM);
}

/* Chebyshev semi-iterative acceleration (Wang 2015) of a Jacobi iteration:
 * the weight of iteration k (1-based), given the previous one; 1 (plain
 * Jacobi) before `delay` or with rho = 0, om_delay = 2 / (2 - rho^2), then
 * om_k+1 = 4 / (4 - rho^2 om_k). The iterate is then
 * p_prev + om (Jacobi(p) - p_prev). One definition, so that the solvers and
 * their C and OpenCL paths use the same floats. */
static inline float floe_cheb_weight(float rho, int64_t k, int64_t delay, float prev)
{
    if (!(rho > 0.0f) || k < delay)
        return 1.0f;
    return k == delay ? 2.0f / (2.0f - rho * rho) : 4.0f / (4.0f - rho * rho * prev);
}

/* the two parameters of that acceleration: rho's estimate, and `delay` */
#define FLOE_PARAM_CHEBYSHEV                                                                                    \
    FLOE_PARAM_F("chebyshev", 0.9, 0, 0.9999, "",                                                               \
                 "Chebyshev acceleration of the Jacobi iteration (Wang 2015) with this estimate of its spectral " \
                 "radius (0 = plain relaxed Jacobi)")
#define FLOE_PARAM_CHEBYSHEV_DELAY                      \
    FLOE_PARAM_I("chebyshev_delay", 4, 2, 100000, "", \
                 "plain Jacobi iterations before the Chebyshev weights start")

/* A pressure solve's bound on removing compression already present
 * (iisph's and dfsph's max_correction_speed) */
#define FLOE_PARAM_MAX_CORRECTION_SPEED                                                                           \
    FLOE_PARAM_F("max_correction_speed", 0.1, 0, 1e4, "m/s",                                                     \
                 "compression already present is removed in one step only up to max(max_correction_speed, "       \
                 "|v|max) dt / d (the rest in later steps), so an initial or wall overlap does not explode at small " \
                 "dt; 0 = no limit")

/* FLOE_PARAM_F and FLOE_STAGE: <floe/module_desc.h> */

/* Kernel gradient correction (iisph's and dfsph's gradient_correction):
 * gamma_i = dim / tr M_i, M_i = -sum_j V_j x_ij grad W_ij^T over fluid
 * (V_j = m_j / rho0) and boundary (V_b) neighbours of the targets t, so that
 * the corrected gradient of a linear field is exact on average over
 * directions (the scalar form of Bonet & Lok 1999's L_i = M_i^-1). Clamped
 * to [lo, 1/lo]: at the free surface M_i is deficient and the plain
 * gradient is kept within 1 - lo. */
FLOE_ROW_FN float floe_gamma_one(const floe_kconst *kc, const floe_target *t, int nt, uint32_t i,
                                 const float *restrict xs, float inv_rho0, int dim, float lo, const int per)
{
    const float xi = xs[3 * i], yi = xs[3 * i + 1], zi = xs[3 * i + 2];
    float tr = 0.0f;
    for (int b = 0; b < nt; b++) {
        const uint32_t *restrict id = t[b].idx + (size_t)i * t[b].stride;
        const uint32_t cnt = t[b].cnt[i];
        const float *restrict xt = t[b].x, *restrict V = t[b].mass;
        const float sc = t[b].boundary ? 1.0f : inv_rho0;
        float s = 0.0f;
#pragma omp simd reduction(+ : s)
        for (uint32_t k = 0; k < cnt; k++) {
            FLOE_X_IJ(per);
            s += V[j] * floe_kdw(kc, r2) * r2;
        }
        tr -= sc * s;
    }
    const float g = tr > 0.0f ? (float)dim / tr : 1.0f / lo;
    return g < lo ? lo : (g > 1.0f / lo ? 1.0f / lo : g);
}

#endif
