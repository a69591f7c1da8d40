/* Floe module "dfsph": divergence-free SPH (Bender & Koschier 2015, "Divergence-
 * free smoothed particle hydrodynamics"; 2017, "Divergence-free SPH for
 * incompressible and viscous fluids"), written on the kit <floe/sph.h>.
 *
 * One stage, in pipeline order (core stages in brackets, the density stage of
 * another module in braces):
 *   [neighbours] {sph.density} [gravity] {viscosity, tension...} solve [integrate]
 *
 * The density stage gives rho_i = m_i W(0) + sum_j m_j W_ij + sum_b rho0_i V_b W_ib
 * (Akinci et al. 2012 boundary particles, psi_b = rho0_i V_b). `solve` then
 * runs both solvers of the paper on the step's neighbour lists:
 *
 *   1. divergence-free solver (the paper's step after the neighbour search):
 *      on the velocities the step starts with, until the mean compressing
 *      density rate, mean(max(Drho_i/Dt, 0)) dt / rho0, is below
 *      `divergence_tolerance` (0.1%);
 *   2. constant density solver: on v* = v + dt a (a: gravity and every force
 *      stage before this one), until the mean predicted compression,
 *      mean(max(rho*_i / rho0 - 1, 0)), is below `tolerance` (0.05%);
 *
 * and sets a = (v_final - v) / dt, so that [integrate] (v += dt a; x += dt v)
 * finishes the step with the corrected velocity. Both solvers are relaxed
 * Jacobi iterations on P = p / rho^2 (the paper's kappa / rho), as
 * SPlisHSPlasH's DFSPH does them; an iteration is two passes over the
 * neighbour pairs:
 *
 *   a^p_i = -sum_j m_j (P_i + P_j) grad W_ij - P_i sum_b psi_b grad W_ib
 *   F_i   = S_i + dt^k (a^p_i . G_i - sum_j m_j a^p_j . grad W_ij)
 *   P_i  <- max(P_i + omega F_i / (dt^k D_i), 0)        (Chebyshev-accelerated)
 *
 * S_i the source (density: rho_i + dt Drho_i/Dt - rho0, k = 2; divergence:
 * Drho_i/Dt, k = 1), G_i = sum_j m_j grad W_ij + sum_b psi_b grad W_ib and
 * D_i = |G_i|^2 + sum_j m_i m_j |grad W_ij|^2, the paper's denominator of
 * alpha_i: the density change dt^k P_i D_i that P_i alone causes. The
 * velocity change dt a^p of the final P is applied once; `p` = rho^2 P of
 * the constant density solver. The boundary force is Akinci's (-psi_b P_i
 * grad W_ib; `mirror` doubles it), the adjoint of the boundary's density
 * term, so the projection cannot add energy. Applying each iteration's P
 * increment to the velocities at once (the paper's algorithms read
 * literally, omega = 1) let a 2D tank at rest blow apart (docs/dfsph.md).
 *
 * Warm start (the paper's section 4.4): the constant density solver starts
 * from `warm_start` times last step's P (read back from p / rho^2), the
 * divergence solver from `warm_start` times its last P, kept as dt P in the
 * attribute `dfsph_kv` (attributes move with the particles when the core
 * reorders them, and are saved in checkpoints).
 *
 * Speed: the set-up (setup.c) stores m_j grad W_ij of every fluid pair once per step
 * (CSR rows with global neighbour indices over every fluid set); each
 * iteration is then two passes over those rows and no kernel evaluation.
 * The solves' sources walk a row while it is in cache: the divergence
 * solve's in the set-up, the constant density solve's with its first
 * pass 1. With AVX2 the rows run eight neighbours at a time: a^p and u are
 * 16-byte records loaded whole (floe_load4x8, <floe/simd.h>), P_j is
 * gathered; the plain loops take the rows' tails and other CPUs. The
 * set-up reads the neighbours' x, y, z, m from records packed once a call
 * and runs each row's tail as one masked block.
 * Loops are gathers with a static schedule; the errors are summed in fixed
 * chunks of 512 particles, in order, so a run is bitwise the same for any
 * thread count. docs/dfsph.md has the parameters and measured results. */
#include "dfsph.h"

#include <floe/simd.h>
#include <floe/sph_pack.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

FLOE_MODULE_API_DEFINE;

#define CHUNK 512

enum { SO_TOL, SO_DIV_TOL, SO_MIN_IT, SO_MAX_IT, SO_DIV_MAX_IT, SO_DIV_MIN_IT, SO_WARM, SO_DIVERGENCE, SO_FORCE_COURANT, SO_DT_MAX, SO_CORR_SPEED, SO_OMEGA, SO_BOUNDARY, SO_GRAD_CORR, SO_CHEB, SO_CHEB_DELAY, SO_VISC };

/* ---- state: per-step scratch, grown as needed (dfsph_state, dfsph.h) ----------- */


static int dfsph_init(floe_ctx *ctx, void **state)
{
    (void)ctx;
    dfsph_state *s = calloc(1, sizeof *s);
    if (!s)
        return FLOE_ERR_NOMEM;
    *state = s;
    return FLOE_OK;
}

static void free_particles(dfsph_state *s)
{
    free(s->off), free(s->Gb), free(s->ub), free(s->D), free(s->u), free(s->P), free(s->Pold), free(s->S), free(s->ap);
    free(s->rho), free(s->rho0), free(s->lag), free(s->gam), free(s->av), free(s->few), free(s->own), free(s->part);
    s->off = NULL, s->Gb = s->ub = s->D = s->u = s->P = s->Pold = s->S = s->ap = s->rho = s->rho0 = s->lag = s->gam = s->av = NULL;
    s->few = s->own = NULL, s->part = NULL;
    s->cap_n = 0;
}

static void free_pairs(dfsph_state *s)
{
    free(s->nj), free(s->gx), free(s->gy), free(s->gz);
    s->nj = NULL, s->gx = s->gy = s->gz = NULL;
    s->cap_pairs = 0;
}

static void dfsph_fini(void *state)
{
    dfsph_state *s = state;
    if (!s)
        return;
    free_particles(s);
    free_pairs(s);
    floe_records_free(&s->rec);
    dfsph_cl_free(s->cl);
    free(s);
}

static int ensure_particles(dfsph_state *s, size_t n)
{
    if (n <= s->cap_n)
        return 0;
    free_particles(s);
    size_t cap = n + n / 4 + 64;
    s->off = malloc((cap + 1) * sizeof *s->off);
    s->Gb = malloc(3 * cap * sizeof(float));
    s->ub = malloc(cap * sizeof(float));
    s->D = malloc(cap * sizeof(float));
    s->u = aligned_alloc(64, (4 * cap * sizeof(float) + 63) / 64 * 64);
    s->P = malloc(cap * sizeof(float));
    s->Pold = malloc(cap * sizeof(float));
    s->S = malloc(cap * sizeof(float));
    s->ap = aligned_alloc(64, (4 * cap * sizeof(float) + 63) / 64 * 64);
    s->rho = malloc(cap * sizeof(float));
    s->rho0 = malloc(cap * sizeof(float));
    s->lag = malloc(cap * sizeof(float));
    s->gam = malloc(cap * sizeof(float));
    s->av = malloc(3 * cap * sizeof(float));
    s->few = malloc(cap);
    s->own = malloc(cap);
    s->part = malloc((cap / CHUNK + 2) * sizeof(double));
    if (!s->off || !s->Gb || !s->ub || !s->D || !s->u || !s->P || !s->Pold || !s->S || !s->ap || !s->rho || !s->rho0 || !s->lag || !s->gam || !s->av || !s->few ||
        !s->own || !s->part) {
        free_particles(s);
        return -1;
    }
    s->cap_n = cap;
    return 0;
}

static int ensure_pairs(dfsph_state *s, size_t n)
{
    if (n <= s->cap_pairs)
        return 0;
    free_pairs(s);
    size_t cap = n + n / 4 + 1024;
    s->nj = malloc(cap * sizeof *s->nj);
    s->gx = malloc(cap * sizeof(float));
    s->gy = malloc(cap * sizeof(float));
    s->gz = malloc(cap * sizeof(float));
    if (!s->nj || !s->gx || !s->gy || !s->gz) {
        free_pairs(s);
        return -1;
    }
    s->cap_pairs = cap;
    return 0;
}

/* sum over a row of (v - r_j) . g_k, r the 16-byte records of the fluid
 * particles (u or a^p) and g_k the stored m_j grad W_ij: with AVX2 eight
 * neighbours at a time (their records loaded whole and transposed,
 * floe_load4x8), the rest one by one */
static inline float row_rel_dot(const float *restrict r4, const uint32_t *restrict nj, const float *restrict gx,
                                const float *restrict gy, const float *restrict gz, uint32_t k0, uint32_t k1,
                                float vx, float vy, float vz)
{
    float d = 0.0f;
    uint32_t k = k0;
#if defined(__AVX2__)
    if (k1 - k0 >= 8) {
        const __m256 x8 = _mm256_set1_ps(vx), y8 = _mm256_set1_ps(vy), z8 = _mm256_set1_ps(vz);
        __m256 acc = _mm256_setzero_ps();
        for (; k + 8 <= k1; k += 8) {
            __m256 rx, ry, rz, rw;
            floe_load4x8(r4, nj + k, &rx, &ry, &rz, &rw);
            acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_sub_ps(x8, rx), _mm256_loadu_ps(gx + k)));
            acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_sub_ps(y8, ry), _mm256_loadu_ps(gy + k)));
            acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_sub_ps(z8, rz), _mm256_loadu_ps(gz + k)));
        }
        d = floe_hsum8(acc);
    }
#endif
    for (; k < k1; k++) {
        const float *rj = r4 + 4 * (size_t)nj[k];
        d += (vx - rj[0]) * gx[k] + (vy - rj[1]) * gy[k] + (vz - rj[2]) * gz[k];
    }
    return d;
}

/* Drho_i/Dt of the velocities u for particle gi (relative to the moving
 * boundaries' particles: ub) */
static inline float div_one(const dfsph_state *restrict s, size_t gi)
{
    const float *restrict u = s->u;
    const float ux = u[4 * gi], uy = u[4 * gi + 1], uz = u[4 * gi + 2];
    const float d = ux * s->Gb[3 * gi] + uy * s->Gb[3 * gi + 1] + uz * s->Gb[3 * gi + 2] - s->ub[gi];
    return d + row_rel_dot(u, s->nj, s->gx, s->gy, s->gz, s->off[gi], s->off[gi + 1], ux, uy, uz);
}

/* ---- the two passes of an iteration -------------------------------------------- */

/* The source of a solve, once before its iterations: S_i = Drho_i/Dt of u
 * (divergence; 0 for a particle with too few neighbours, as SPlisHSPlasH
 * does) or rho_i + dt Drho_i/Dt - rho0 - lag_i, the predicted density
 * beyond the rest density (constant density). */
static inline float source_one(const dfsph_state *restrict s, size_t i, float dt, int divergence)
{
    const float d = div_one(s, i);
    return divergence ? (s->few[i] ? 0.0f : d) : s->rho[i] + dt * d - s->rho0[i] - s->lag[i];
}

/* Pass 1: a^p_i = -sum_j m_j (P_i + P_j) grad W_ij - P_i sum_b psi_b grad W_ib */
static inline void accel_one(dfsph_state *restrict s, size_t i)
{
    const float *restrict P = s->P;
    const uint32_t *restrict nj = s->nj;
    const float *restrict gx = s->gx, *restrict gy = s->gy, *restrict gz = s->gz;
    const float Pi = P[i];
    float ax = Pi * s->Gb[3 * i], ay = Pi * s->Gb[3 * i + 1], az = Pi * s->Gb[3 * i + 2];
    uint32_t k = s->off[i];
    const uint32_t k1 = s->off[i + 1];
#if defined(__AVX2__)
    if (k1 - k >= 8) { /* eight neighbours at a time, P_j gathered */
        const __m256 pi8 = _mm256_set1_ps(Pi);
        __m256 sx = _mm256_setzero_ps(), sy = _mm256_setzero_ps(), sz = _mm256_setzero_ps();
        for (; k + 8 <= k1; k += 8) {
            const __m256 c = _mm256_add_ps(pi8, _mm256_i32gather_ps(P, _mm256_loadu_si256((const __m256i *)(nj + k)), 4));
            sx = _mm256_add_ps(sx, _mm256_mul_ps(c, _mm256_loadu_ps(gx + k)));
            sy = _mm256_add_ps(sy, _mm256_mul_ps(c, _mm256_loadu_ps(gy + k)));
            sz = _mm256_add_ps(sz, _mm256_mul_ps(c, _mm256_loadu_ps(gz + k)));
        }
        ax += floe_hsum8(sx), ay += floe_hsum8(sy), az += floe_hsum8(sz);
    }
#endif
    for (; k < k1; k++) {
        const float c = Pi + P[nj[k]];
        ax += c * gx[k];
        ay += c * gy[k];
        az += c * gz[k];
    }
    s->ap[4 * i] = -ax;
    s->ap[4 * i + 1] = -ay;
    s->ap[4 * i + 2] = -az;
    s->ap[4 * i + 3] = 0.0f;
}

static void pass_accel(dfsph_state *s, size_t N)
{
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < N; i++)
        accel_one(s, i);
}

/* The first iteration's pass 1 with the source (of the constant density
 * solve, or of the divergence solve when `with_source`): particle i's row
 * walked twice while it is in cache, the same sums as source() and
 * pass_accel() apart */
static void pass_source_accel(dfsph_state *s, size_t N, float dt, int divergence, int with_source)
{
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < N; i++) {
        if (with_source)
            s->S[i] = source_one(s, i, dt, divergence);
        accel_one(s, i);
    }
}

/* Pass 2: F_i = S_i + dt^k (a^p_i . G_i - sum_j m_j a^p_j . grad W_ij), the
 * density (k = 2) or density rate (k = 1) left with the pressure accelerations
 * a^p over the step, G_i = sum_j m_j grad W_ij + sum_b psi_b grad W_ib;
 * relaxed Jacobi P^_i = max(P_i + omega F_i / (dt^k D_i), 0) (dF_i/dP_i =
 * -dt^k D_i), and with Chebyshev acceleration (Wang 2015, as iisph's) the
 * next iterate max(Pold_i + cheb (P^_i - Pold_i), 0), written over Pold
 * (the caller swaps P and Pold). Returns the mean of max(F_i, 0) / rho0
 * (times dt for the rate) of the iterate the a^p came from: what
 * compression is left. */
static double pass_update(dfsph_state *s, size_t N, float dtk, int divergence, float omega, float cheb)
{
    const size_t nch = (N + CHUNK - 1) / CHUNK;
    const float *restrict ap = s->ap;
    const uint32_t *restrict nj = s->nj;
    const float *restrict gx = s->gx, *restrict gy = s->gy, *restrict gz = s->gz;
#pragma omp parallel for schedule(static)
    for (size_t ch = 0; ch < nch; ch++) {
        const size_t i0 = ch * CHUNK, i1 = i0 + CHUNK < N ? i0 + CHUNK : N;
        double e = 0;
        for (size_t i = i0; i < i1; i++) {
            const float ax = ap[4 * i], ay = ap[4 * i + 1], az = ap[4 * i + 2];
            /* a^p_i . G_i - sum_j a^p_j . m_j grad W_ij = sum_j (a^p_i - a^p_j) . g_ij + a^p_i . Gb_i */
            const float d = ax * s->Gb[3 * i] + ay * s->Gb[3 * i + 1] + az * s->Gb[3 * i + 2] +
                            row_rel_dot(ap, nj, gx, gy, gz, s->off[i], s->off[i + 1], ax, ay, az);
            const float F = divergence && s->few[i] ? 0.0f : s->S[i] + dtk * d;
            if (s->own[i]) /* a ghost's error is its owner's */
                e += floe_pos(F) / s->rho0[i];
            const float pj = s->D[i] > 0.0f ? floe_pos(s->P[i] + omega * F / (dtk * s->D[i])) : 0.0f;
            s->Pold[i] = cheb == 1.0f ? pj : floe_pos(s->Pold[i] + cheb * (pj - s->Pold[i]));
        }
        s->part[ch] = e;
    }
    double e = 0;
    for (size_t ch = 0; ch < nch; ch++)
        e += s->part[ch];
    return (divergence ? dtk : 1.0) * e; /* the caller divides by the particles owned over all ranks */
}

/* One solve: P from warm * prev, relaxed Jacobi until the mean error is at
 * most tol (after min_it iterations) or max_it, then u += dt a^p of the
 * final P. Returns the iterations; *err the last error measured. */
typedef struct iter {
    float omega, warm, cheb_rho; /* relaxation, warm start, Chebyshev's spectral radius estimate (0: off) */
    int64_t cheb_delay, min_it, max_it;
    double tol;
    int source_done; /* S already holds the divergence solve's source (the set-up's pass) */
} iter;

/* MPI (docs/mpi.md): the fluid sets, for the ghosts of the solver's own
 * arrays (their rows lack the neighbours beyond the halo: P, a^p and u of
 * a ghost are its owner's), and the particles owned over all ranks */
typedef struct dd_view {
    floe_ctx *ctx;
    const floe_fluid *f;
    int nf, ranks;
    double owned;
} dd_view;

static int halo_all(const dd_view *h, float *arr, int per)
{
    int st = FLOE_OK;
    for (int q = 0; q < h->nf && h->ranks > 1 && st == FLOE_OK; q++)
        st = floe_halo(api, h->ctx, h->f[q].set, arr + (size_t)per * h->f[q].off, (size_t)per * sizeof(float));
    return st;
}

static int solve(dfsph_state *s, size_t N, float dt, int divergence, const iter *c, const dd_view *h, int64_t *its,
                 double *err)
{
    const float dtk = divergence ? dt : dt * dt;
    int st;
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < N; i++)
        s->Pold[i] = s->P[i] = s->D[i] > 0.0f ? c->warm * floe_pos(s->P[i]) : 0.0f;
    if ((st = halo_all(h, s->P, 1)) != FLOE_OK)
        return st;
    const int64_t min_it = divergence ? 1 : c->min_it, max_it = c->max_it;
    const double tol = c->tol;
    int64_t it = 0;
    float om = 1.0f;
    for (;;) {
        if (it == 0)
            pass_source_accel(s, N, dt, divergence, !(divergence && c->source_done));
        else
            pass_accel(s, N);
        if ((st = halo_all(h, s->ap, 4)) != FLOE_OK)
            return st;
        om = floe_cheb_weight(c->cheb_rho, it + 1, c->cheb_delay, om);
        double e = pass_update(s, N, dtk, divergence, c->omega, om);
        if ((st = floe_reduce(api, h->ctx, &e, 1, FLOE_REDUCE_SUM)) != FLOE_OK)
            return st;
        *err = h->owned > 0.0 ? e / h->owned : 0.0;
        float *t = s->P; /* the new iterate is in Pold */
        s->P = s->Pold, s->Pold = t;
        if ((st = halo_all(h, s->P, 1)) != FLOE_OK)
            return st;
        it++;
        if ((it >= min_it && *err <= tol) || it >= max_it)
            break;
    }
    pass_accel(s, N);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < 4 * N; i++)
        s->u[i] += dt * s->ap[i];
    *its = it;
    return halo_all(h, s->u, 4);
}

/* The divergence solve's error before any iteration (its source S from the
 * set-up, no pressure): dt mean(max(S_i, 0) / rho0_i) over the owned
 * particles that take part, as pass_update measures an iterate's */
static int source_error(const dfsph_state *s, size_t N, float dt, const dd_view *h, double *err)
{
    double e = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : e)
    for (size_t i = 0; i < N; i++)
        if (s->own[i] && !s->few[i])
            e += floe_pos(s->S[i]) / s->rho0[i];
    int st = floe_reduce(api, h->ctx, &e, 1, FLOE_REDUCE_SUM);
    *err = h->owned > 0.0 ? dt * e / h->owned : 0.0;
    return st;
}

/* ---- the stage ---------------------------------------------------------------------- */

/* the parameters of dfsph.solve, once per call */
static void decode(const floe_stage_call *call, dfsph_cfg *c)
{
    const char *bmode = call->param[SO_BOUNDARY].s ? call->param[SO_BOUNDARY].s : "akinci";
    *c = (dfsph_cfg){
        .tol = call->param[SO_TOL].f,
        .tol_v = call->param[SO_DIV_TOL].f,
        .min_it = call->param[SO_MIN_IT].i,
        .max_it = call->param[SO_MAX_IT].i,
        .max_it_v = call->param[SO_DIV_MAX_IT].i,
        .min_it_v = call->param[SO_DIV_MIN_IT].i,
        .warm = (float)call->param[SO_WARM].f,
        .omega = (float)call->param[SO_OMEGA].f,
        .cheb_rho = (float)call->param[SO_CHEB].f,
        .beta = !strcmp(bmode, "mirror") ? 2.0f : 1.0f,
        .cheb_delay = call->param[SO_CHEB_DELAY].i,
        .divergence = call->param[SO_DIVERGENCE].b,
        .force_courant = call->param[SO_FORCE_COURANT].f,
        .dt_max = call->param[SO_DT_MAX].f,
        .corr_speed = call->param[SO_CORR_SPEED].f,
        .corr = call->param[SO_GRAD_CORR].b,
        .visc = call->param[SO_VISC].f,
    };
}

static int solve_c(const floe_stage_call *call, const dfsph_cfg *c)
{
    floe_ctx *ctx = call->ctx;
    dfsph_state *s = call->state;
    const floe_sim_info *si = api->sim(ctx);
    const floe_kconst kc = floe_kconst_make(si);
    const double tol = c->tol, tol_v = c->tol_v;
    const int64_t min_it = c->min_it, max_it = c->max_it;
    const int64_t max_it_v = c->max_it_v;
    const float warm = c->warm, dt = (float)si->dt;
    const int divergence = c->divergence;
    const float omega = c->omega, cheb_rho = c->cheb_rho;
    const int64_t cheb_delay = c->cheb_delay;
    const float beta = c->beta;
    floe_fluid f[FLOE_MODULE_MAX_SETS];
    floe_target t[FLOE_MODULE_MAX_SETS][2 * FLOE_MODULE_MAX_SETS];
    int nt[FLOE_MODULE_MAX_SETS];
    int nf, st;
    size_t N;

    if (!s)
        return api->fail(ctx, FLOE_ERR, "module state missing");
    if (min_it > max_it)
        return api->fail(ctx, FLOE_ERR_ARG, "min_iterations (%lld) > max_iterations (%lld)", (long long)min_it,
                         (long long)max_it);
    int ranks; /* MPI: a rank without particles takes part in the others' exchanges */
    if ((st = floe_solver_sets_dd(api, ctx, dt, f, &nf, &N, &ranks)) != FLOE_OK)
        return st == FLOE_SKIP ? FLOE_OK : st;
    if (ensure_particles(s, N ? N : 1))
        return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory (%zu particles)", N);
    dd_view h = {ctx, f, nf, ranks, 0.0};
    if ((st = floe_owned_mask(api, ctx, f, nf, s->own, &h.owned)) != FLOE_OK)
        return st;

    /* rows: fluid neighbours of every particle, then the prefix sum */
    double vmax = 0.0;
    for (int q = 0; q < nf; q++) {
        if (f[q].info.n == 0)
            continue;
        if ((st = floe_targets(api, ctx, &f[q], f, nf, FLOE_WITH_BOUNDARY, NULL, NULL, t[q], &nt[q])) != FLOE_OK)
            return st;
        floe_targets_moving(api, ctx, t[q], nt[q]); /* the density change's v_b */
        const float *rho = floe_attr_of(api, ctx, &f[q], "rho", FLOE_F32);
        if (!rho)
            return FLOE_ERR_ARG;
        const int nft = floe_targets_fluid(t[q], nt[q]);
        const float *v = floe_attr_of(api, ctx, &f[q], "v", FLOE_VEC3);
        if (!v)
            return FLOE_ERR_ARG;
        double v2 = 0.0;
#pragma omp parallel for schedule(static) reduction(max : v2)
        for (uint32_t i = 0; i < f[q].info.n; i++) {
            const double q2 = (double)v[3 * i] * v[3 * i] + (double)v[3 * i + 1] * v[3 * i + 1] +
                              (double)v[3 * i + 2] * v[3 * i + 2];
            v2 = q2 > v2 ? q2 : v2;
        }
        vmax = fmax(vmax, sqrt(v2));
#pragma omp parallel for schedule(static)
        for (uint32_t i = 0; i < f[q].info.n; i++) {
            uint32_t c = 0;
            for (int b = 0; b < nft; b++)
                c += t[q][b].cnt[i];
            s->off[f[q].off + i + 1] = c;
            s->rho[f[q].off + i] = rho[i];
            s->rho0[f[q].off + i] = f[q].info.rest_density;
        }
    }
    /* the compression present now (an initial lattice denser than rho0, a
     * wall overlap) is removed in this step only up to what moves particles
     * by max(max_correction_speed, |v|max) dt, a fraction vc dt / d of the
     * spacing: removed at once, a 1% overlap at dt = 1e-4 s would launch
     * particles at 1% of d / dt (as in iisph's solve). And the compression
     * a run starts with is a budget (dfsph_start_lag) that shrinks by
     * max_correction_speed dt / L a step, L the fluid column's height at the
     * first step: the rows' shares of a column add up, so the column rises
     * at most at max_correction_speed (dfsph_lag_step) */
    if ((st = floe_reduce(api, ctx, &vmax, 1, FLOE_REDUCE_MAX)) != FLOE_OK) /* MPI: over every rank */
        return st;
    const double corr = c->corr_speed;
    const float elim = corr > 0.0 ? (float)(fmax(corr, vmax) * dt / si->spacing) : 1e30f;
    const int first = si->step == 0;
    for (int q = 0; q < nf; q++) {
        float *restrict sl = floe_attr_of(api, ctx, &f[q], "dfsph_start_lag", FLOE_F32);
        float *restrict sr = floe_attr_of(api, ctx, &f[q], "dfsph_start_rate", FLOE_F32);
        const float *xq = floe_attr_of(api, ctx, &f[q], "x", FLOE_VEC3);
        if (!sl || !sr || !xq)
            return FLOE_ERR_ARG;
        const float rate0 = first && corr > 0.0 ? (float)(corr / dfsph_fluid_column(si, xq, f[q].info.n)) : 0.0f;
#pragma omp parallel for schedule(static)
        for (uint32_t i = 0; i < f[q].info.n; i++) {
            const size_t g = f[q].off + i;
            s->lag[g] = s->rho0[g] * dfsph_lag_step(&sl[i], &sr[i], s->rho[g] / s->rho0[g] - 1.0f, elim, rate0, dt, first);
        }
    }
    s->off[0] = 0;
    for (size_t i = 0; i < N; i++) {
        if ((uint64_t)s->off[i] + s->off[i + 1] >= UINT32_MAX)
            return api->fail(ctx, FLOE_ERR_ARG, "more than 2^32 neighbour pairs");
        s->off[i + 1] += s->off[i];
    }
    if (ensure_pairs(s, s->off[N]))
        return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory (%u neighbour pairs)", s->off[N]);

    /* set-up, and u = v; the previous step's sums for the warm starts */
    float *v[FLOE_MODULE_MAX_SETS] = {0}, *a[FLOE_MODULE_MAX_SETS] = {0}, *p[FLOE_MODULE_MAX_SETS] = {0};
    float *kv[FLOE_MODULE_MAX_SETS] = {0};
    /* gradient_correction: every gamma before any pair gradient uses it */
    for (int q = 0; q < nf; q++) {
        const uint32_t n = f[q].info.n;
        float *restrict gam = s->gam + f[q].off;
        if (n == 0)
            continue;
        if (!c->corr) {
            for (uint32_t i = 0; i < n; i++)
                gam[i] = 1.0f;
            continue;
        }
        const float *xq = floe_attr_of(api, ctx, &f[q], "x", FLOE_VEC3);
        if (!xq)
            return FLOE_ERR_ARG;
        const float ir0 = 1.0f / f[q].info.rest_density;
        const floe_target *tq = t[q];
        const int ntq = nt[q];
#define GAMMA(i, per) gam[i] = floe_gamma_one(&kc, tq, ntq, i, xq, ir0, si->dim, 0.9f, per)
        FLOE_PAR_FOR(kc.periodic, n, GAMMA);
#undef GAMMA
    }
    if (c->corr && (st = halo_all(&h, s->gam, 1)) != FLOE_OK) /* MPI: the ghosts' gamma are their owners' */
        return st;
    for (int q = 0; q < nf; q++) {
        const uint32_t n = f[q].info.n;
        if (n == 0)
            continue;
        v[q] = floe_attr_of(api, ctx, &f[q], "v", FLOE_VEC3);
        a[q] = floe_attr_of(api, ctx, &f[q], "a", FLOE_VEC3);
        p[q] = floe_attr_of(api, ctx, &f[q], "p", FLOE_F32);
        kv[q] = floe_attr_of(api, ctx, &f[q], "dfsph_kv", FLOE_F32);
        if (!v[q] || !a[q] || !p[q] || !kv[q])
            return FLOE_ERR_ARG;
        float *restrict uu = s->u + 4 * f[q].off;
        const float *restrict vq = v[q];
#pragma omp parallel for schedule(static)
        for (uint32_t i = 0; i < n; i++) {
            for (int k = 0; k < 3; k++)
                uu[4 * i + k] = vq[3 * i + k];
            uu[4 * i + 3] = 0.0f;
        }
    }
    int packed; /* the set-up's rows read the neighbours' (x, y, z, m) from s->rec.A; 0 only on periodic axes,
                 * where they take the plain loop */
    if ((st = floe_pack_fluids(api, ctx, &s->rec, &kc, f, nf, 0, NULL, &packed)) != FLOE_OK)
        return st;
    for (int q = 0; q < nf; q++) {
        const uint32_t n = f[q].info.n;
        if (n == 0)
            continue;
        dfsph_setup u = {&kc, t[q], nt[q], f[q].off, NULL, NULL, f[q].info.rest_density, beta, si->dim == 3 ? 20 : 7,
                         c->corr, divergence, (float)(2.0 * (si->dim + 2) * c->visc), 0.01f / (kc.inv_H * kc.inv_H), s};
        u.x = floe_attr_of(api, ctx, &f[q], "x", FLOE_VEC3);
        u.m = floe_attr_of(api, ctx, &f[q], "m", FLOE_F32);
        if (!u.x || !u.m)
            return FLOE_ERR_ARG;
        dfsph_setup_rows(&u, n);
    }

    /* 1. divergence-free solver on v, from last step's P of this solver
     * (kept as dt P, the velocity change per unit gradient) */
    int64_t it_v = 0;
    double err_v = 0.0;
    if (divergence) {
        for (int q = 0; q < nf; q++) {
            const float *restrict kq = kv[q];
            float *restrict Pq = s->P + f[q].off;
#pragma omp parallel for schedule(static)
            for (uint32_t i = 0; i < f[q].info.n; i++)
                Pq[i] = kq[i] / dt;
        }
        const iter cv = {omega, warm, cheb_rho, cheb_delay, 1, max_it_v, tol_v, 1};
        int skip = 0; /* divergence_min_iterations 0: no iteration where the error is within tol_v already */
        if (c->min_it_v == 0) {
            if ((st = source_error(s, N, dt, &h, &err_v)) != FLOE_OK)
                return st;
            skip = err_v <= tol_v;
        }
        if (!skip && (st = solve(s, N, dt, 1, &cv, &h, &it_v, &err_v)) != FLOE_OK)
            return st;
        for (int q = 0; q < nf && !skip; q++) { /* a skipped solve keeps its last P for the next warm start */
            float *restrict kq = kv[q];
            const float *restrict Pq = s->P + f[q].off;
#pragma omp parallel for schedule(static)
            for (uint32_t i = 0; i < f[q].info.n; i++)
                kq[i] = dt * Pq[i];
        }
    }
    /* 2. constant density solver on v* = u + dt (a + the set-up's viscous
     * acceleration), from last step's P = p / rho^2 */
    for (int q = 0; q < nf; q++) {
        const uint32_t n = f[q].info.n;
        float *restrict uu = s->u + 4 * f[q].off;
        const float *restrict aq = a[q], *restrict av = s->av + 3 * f[q].off;
#pragma omp parallel for schedule(static)
        for (uint32_t i = 0; i < n; i++) {
            for (int k = 0; k < 3; k++)
                uu[4 * i + k] += dt * (aq[3 * i + k] + av[3 * i + k]);
            const float r = s->rho[f[q].off + i];
            s->P[f[q].off + i] = p[q][i] / (r * r);
        }
    }
    double err = 0.0;
    const iter cd = {omega, warm, cheb_rho, cheb_delay, min_it, max_it, tol, 0};
    int64_t it = 0;
    if ((st = solve(s, N, dt, 0, &cd, &h, &it, &err)) != FLOE_OK)
        return st;

    /* a = (u - v) / dt, p = rho^2 P */
    for (int q = 0; q < nf; q++) {
        const uint32_t n = f[q].info.n;
        if (n == 0)
            continue;
        const float *restrict uu = s->u + 4 * f[q].off, *restrict rho = s->rho + f[q].off;
        const float *restrict Pq = s->P + f[q].off;
#pragma omp parallel for schedule(static)
        for (uint32_t i = 0; i < n; i++) {
            for (int k = 0; k < 3; k++)
                a[q][3 * i + k] = (uu[4 * i + k] - v[q][3 * i + k]) / dt;
            p[q][i] = Pq[i] * rho[i] * rho[i];
        }
    }
    dfsph_step_end(ctx, c, it, err, it_v, err_v);
    return FLOE_OK;
}

double dfsph_fluid_column(const floe_sim_info *si, const float *x, uint32_t n)
{
    const double g = sqrt((double)si->gravity[0] * si->gravity[0] + (double)si->gravity[1] * si->gravity[1] +
                          (double)si->gravity[2] * si->gravity[2]);
    double lo[4] = {INFINITY, INFINITY, INFINITY, INFINITY}, hi[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
    for (uint32_t i = 0; i < n; i++) {
        const double h = g > 0.0 ? (x[3 * i] * (double)si->gravity[0] + x[3 * i + 1] * (double)si->gravity[1] +
                                    x[3 * i + 2] * (double)si->gravity[2]) / g
                                 : 0.0;
        for (int k = 0; k < 3; k++)
            lo[k] = fmin(lo[k], x[3 * i + k]), hi[k] = fmax(hi[k], x[3 * i + k]);
        lo[3] = fmin(lo[3], h), hi[3] = fmax(hi[3], h);
    }
    double L = 0.0;
    if (n > 0 && g > 0.0)
        L = hi[3] - lo[3];
    else
        for (int k = 0; n > 0 && k < si->dim; k++)
            L = fmax(L, hi[k] - lo[k]);
    return L + si->spacing;
}

void dfsph_step_end(floe_ctx *ctx, const dfsph_cfg *c, int64_t it, double err, int64_t it_v, double err_v)
{
    const floe_sim_info *si = api->sim(ctx);
    /* the next step: the force condition on gravity (a fluid at rest has no
     * speed for the CFL condition to bound dt by), and at most dt_max
     * (SPlisHSPlasH's cflMaxTimeStep). Gravity, not |a|max: a velocity
     * dependent force in a (XSPH against the walls: alpha / dt times a
     * velocity difference) would shrink dt, which raises it further; force
     * stages that need a bound propose their own (the viscosity's
     * diffusion number). */
    const double fc = c->force_courant;
    const double g = sqrt((double)si->gravity[0] * si->gravity[0] + (double)si->gravity[1] * si->gravity[1] +
                          (double)si->gravity[2] * si->gravity[2]);
    if (fc > 0.0 && g > 0.0)
        api->dt_limit(ctx, fc * sqrt(si->spacing / g));
    api->dt_limit(ctx, c->dt_max);
    if (c->visc > 0.0) /* explicit diffusion, as viscosity.laminar's diffusion_number 0.125 */
        api->dt_limit(ctx, 0.125 * (double)si->spacing * si->spacing / c->visc);
    api->stat(ctx, "dfsph.iterations", (double)it);
    api->stat(ctx, "dfsph.density_error", err);
    if (c->divergence) {
        api->stat(ctx, "dfsph.divergence_iterations", (double)it_v);
        api->stat(ctx, "dfsph.divergence_error", err_v);
    }
}

/* decode once, then the device solve (dfsph_cl.c) or the C solve; a scene
 * with several fluid sets takes the C solve on either path */
static int run_solve(const floe_stage_call *call, int cl)
{
    dfsph_state *s = call->state;
    dfsph_cfg c;
    int st;
    if (!s)
        return api->fail(call->ctx, FLOE_ERR, "module state missing");
    decode(call, &c);
    if (c.min_it > c.max_it)
        return api->fail(call->ctx, FLOE_ERR_ARG, "min_iterations (%lld) > max_iterations (%lld)",
                         (long long)c.min_it, (long long)c.max_it);
    if (cl && (st = dfsph_cl_solve(call->ctx, &c, &s->cl)) != DFSPH_CL_USE_C)
        return st;
    return solve_c(call, &c);
}

static int st_solve(const floe_stage_call *call) { return run_solve(call, 0); }
static int st_solve_cl(const floe_stage_call *call) { return run_solve(call, 1); }

/* ---- descriptors --------------------------------------------------------------- */

static const floe_param_desc solve_params[] = {
    [SO_TOL] = FLOE_PARAM_F("tolerance", 0.0005, 1e-7, 0.5, "",
        "constant density solver: stop when the mean predicted compression mean(max(rho* / rho0 - 1, 0)) is "
        "below this (0.0005 = 0.05%, Bender & Koschier's eta)"),
    [SO_DIV_TOL] = FLOE_PARAM_F("divergence_tolerance", 0.001, 1e-7, 0.5, "",
        "divergence-free solver: stop when mean(max(Drho/Dt, 0)) dt / rho0 is below this (0.001 = 0.1%, eta_v)"),
    [SO_MIN_IT] = FLOE_PARAM_I("min_iterations", 2, 0, 100000, "",
        "constant density solver: at least this many iterations (the paper: 2)"),
    [SO_MAX_IT] = FLOE_PARAM_I("max_iterations", 100, 1, 100000, "",
        "constant density solver: at most this many iterations"),
    [SO_DIV_MAX_IT] = FLOE_PARAM_I("divergence_max_iterations", 100, 1, 100000, "",
        "divergence-free solver: at most this many iterations (at least 1)"),
    [SO_DIV_MIN_IT] = FLOE_PARAM_I("divergence_min_iterations", 1, 0, 1, "",
        "1: the divergence-free solve takes at least one iteration every step (Bender & Koschier's algorithm, "
        "SPlisHSPlasH); 0: none in a step whose divergence error is within divergence_tolerance before any "
        "iteration (the warm start not applied; the last P kept for the next)"),
    [SO_WARM] = FLOE_PARAM_F("warm_start", 0.5, 0, 1, "",
        "both solvers start from this times last step's summed P (0 = cold start)"),
    [SO_DIVERGENCE] = FLOE_PARAM_B("divergence", 1,
        "run the divergence-free solver before the constant density solver (false: constant density only)"),
    [SO_FORCE_COURANT] = FLOE_PARAM_F("force_courant", 0.05, 0, 10, "",
        "proposes dt <= force_courant sqrt(d / |g|), g gravity (0 proposes nothing)"),
    [SO_DT_MAX] = FLOE_PARAM_F("dt_max", 0.005, 1e-7, 10, "s",
        "proposes dt <= dt_max (SPlisHSPlasH's cflMaxTimeStep, 0.005 s)"),
    [SO_CORR_SPEED] = FLOE_PARAM_MAX_CORRECTION_SPEED,
    [SO_OMEGA] = FLOE_PARAM_F("omega", 0.5, 0.01, 1, "",
        "relaxation of the Jacobi update of P (SPlisHSPlasH's DFSPH: 0.5)"),
    [SO_BOUNDARY] = FLOE_PARAM_S("boundary_pressure", "akinci", "akinci|mirror",
        "wall pressure: akinci = Akinci's force -psi_b P_i grad W_ib (Bender & Koschier's), mirror = p_b = "
        "p_i (-2 psi_b P_i grad W_ib, as wcsph); the boundary's density term carries the same factor (the "
        "force stays the adjoint of the density change)"),
    [SO_GRAD_CORR] = FLOE_PARAM_B("gradient_correction", 0,
        "scale each pair gradient by (gamma_i + gamma_j) / 2 and the wall's by gamma_i, gamma_i = dim / "
        "tr(-sum_j V_j x_ij grad W_ij^T) clamped to [0.9, 1.11] (as iisph's): pressure consistent with rho0 g h "
        "on a settled packing; one more neighbour pass a step"),
    [SO_CHEB] = FLOE_PARAM_CHEBYSHEV,             /* of both iterations */
    [SO_CHEB_DELAY] = FLOE_PARAM_CHEBYSHEV_DELAY,
    [SO_VISC] = FLOE_PARAM_F("viscosity", 0, 0, 100, "m^2/s",
        "kinematic viscosity nu between fluid particles, computed in the set-up pass on the velocities the step "
        "starts with: a_i += 2 (d + 2) nu sum_j m_j / rho_j (v_ij . x_ij) / (|x_ij|^2 + 0.01 H^2) grad W_ij, "
        "viscosity.laminar's monaghan form with boundary_nu = 0 (SPlisHSPlasH's standard viscosity) without its "
        "own neighbour pass; no wall term; proposes dt <= 0.125 d^2 / nu; on the OpenCL backend the C solve; 0 = none"),
    {0},
};

static const floe_attr_desc solve_attrs[] = {
    FLOE_ATTR_FLUID("x", FLOE_VEC3, FLOE_READ),
    FLOE_ATTR_FLUID("v", FLOE_VEC3, FLOE_READ),
    FLOE_ATTR_FLUID("m", FLOE_F32, FLOE_READ),
    FLOE_ATTR_FLUID("rho", FLOE_F32, FLOE_READ),
    FLOE_ATTR_FLUID("p", FLOE_F32, FLOE_READ | FLOE_WRITE),
    FLOE_ATTR_FLUID("dfsph_kv", FLOE_F32, FLOE_READ | FLOE_WRITE),
    FLOE_ATTR_FLUID("dfsph_start_lag", FLOE_F32, FLOE_READ | FLOE_WRITE),
    FLOE_ATTR_FLUID("dfsph_start_rate", FLOE_F32, FLOE_READ | FLOE_WRITE),
    FLOE_ATTR_FLUID("a", FLOE_VEC3, FLOE_READ | FLOE_WRITE),
    FLOE_ATTR_BOUND("x", FLOE_VEC3),
    FLOE_ATTR_BOUND("V", FLOE_F32),
    {0},
};

static const floe_stage_desc stages[] = {
    { FLOE_SIZED(floe_stage_desc), .name = "solve",
      .doc = "DFSPH: divergence-free solver on v, then constant density solver on v + dt a, Akinci boundaries; "
             "adds the pressure acceleration to a (after a density stage, 'gravity' and other forces, before "
             "'integrate')",
      .run = st_solve, .run_cl = st_solve_cl, .params = solve_params, .attrs = solve_attrs },
    {0},
};

FLOE_MODULE_DESC(dfsph, .version = "1.0.0",
                 .summary = "Divergence-free SPH (Bender & Koschier 2015/2017): divergence-free and constant density "
                            "solvers with warm starts, Akinci boundaries",
                 .stages = stages, .init = dfsph_init, .fini = dfsph_fini)
