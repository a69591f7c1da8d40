/* Floe module "iisph": implicit incompressible SPH (Ihmsen et al. 2013,
 * "Implicit incompressible SPH"), the water solver of Kim 2020 section 3.1.
 *
 * Stages, in pipeline order (core stages in brackets, other modules'
 * stages in braces):
 *   [neighbours] {sph.density}, [gravity] {viscosity, tension...} solve, [integrate]
 *
 *   density  (deprecated name) runs sph.density,
 *            rho_i = m_i W(0) + sum_j m_j W_ij + sum_b rho0_i V_b W_ib
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
 * OpenCL path (run_cl of the solve): iisph_cl.c and kernels/iisph/iisph.cl,
 * the same arithmetic with every Jacobi iteration on the device
 * (docs/iisph.md, "OpenCL path"). The parameters of the solve are decoded
 * once per call (decode_solve into iisph_cfg, iisph.h) and go to either
 * path. Targets, neighbour rows, kernel constants, the minimum image and
 * prefetching are the kit's (<floe/sph.h>); this file keeps the physics. */
#include "iisph.h"

#include <floe/simd.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

FLOE_MODULE_API_DEFINE; /* the core's services; the entry point sets it */

#define CHUNK 512 /* particles per partial sum of the density error */

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
    float *trap;        /* N: trapped_floor's weight, iisph_trap_weight (0 when off) */
    float *ub;          /* N: beta rho0 sum_b V_b v_b . grad W_ib of moving boundary particles */
    float *irho2;       /* N: 1 / rho^2 */
    float *gam;         /* N: kernel gradient correction gamma_i (gradient_correction; else unused) */
    float *P;           /* N: p / rho^2 of the current iterate */
    float *p[3];        /* N: pressure iterates (rotating: previous, current, next) */
    double *part;       /* density error partial sums, two per chunk */
    uint8_t *own;       /* N: 1 for a particle this rank owns, 0 for a ghost (MPI, docs/mpi.md) */
    struct iisph_cl *cl; /* the OpenCL path's state (iisph_cl.c), NULL until used */
} iisph_state;

FLOE_STATE_INIT(iisph_init, iisph_state)

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
    free(s->trap);
    free(s->ub);
    free(s->irho2);
    free(s->gam);
    free(s->P);
    free(s->p[0]);
    free(s->p[1]);
    free(s->p[2]);
    free(s->part);
    free(s->own);
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
    s->trap = alloc64(cap * sizeof(float));
    s->ub = alloc64(cap * sizeof(float));
    s->irho2 = alloc64(cap * sizeof(float));
    s->gam = alloc64(cap * sizeof(float));
    s->P = alloc64(cap * sizeof(float));
    s->p[0] = alloc64(cap * sizeof(float));
    s->p[1] = alloc64(cap * sizeof(float));
    s->p[2] = alloc64(cap * sizeof(float));
    s->part = alloc64(2 * (chunks + 1) * sizeof(double));
    s->own = alloc64(cap);
    if (!s->own || !s->cnt || !s->boff || !s->vadv || !s->G || !s->E || !s->ap || !s->b || !s->lag || !s->c || !s->w || !s->trap || !s->ub || !s->irho2 || !s->gam || !s->P ||
        !s->p[0] || !s->p[1] || !s->p[2] || !s->part) {
        free_particles(s);
        s->cnt = s->boff = NULL, s->vadv = s->G = s->E = s->ap = s->b = s->lag = s->c = s->w = s->trap = s->ub = s->irho2 = s->gam = s->P = NULL;
        s->p[0] = s->p[1] = s->p[2] = NULL, s->part = NULL, s->own = NULL;
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
 * (xx yy zz xy xz yz), so that sum_b V_b (v . x_ib) / (r^2 + eps) grad W_ib = K v;
 * when trap, *sb += sum_b V_b |grad W_ib| (trapped_floor's q); with the
 * boundary's velocities vt (a moving set), *ub += sum_b V_b v_b . grad W_ib. */
FLOE_ROW_FN void row_boundary(const floe_kconst *kc, const uint32_t *restrict id, uint32_t cnt,
                              const float *restrict xt, const float *restrict V, float xi, float yi, float zi,
                              const float *restrict vt, const float grav[3], int hyd, int visc, int trap, float eps,
                              float G[3], float E[3], float K[6], float *sb, float *ub, const int per)
{
    floe_row_grad(kc, id, cnt, xt, V, xi, yi, zi, G, per);
    if (vt)
        *ub += floe_row_vgrad(kc, id, cnt, xt, V, vt, xi, yi, zi, per);
    if (trap) {
        float sm = 0.0f;
#pragma omp simd reduction(+ : sm)
        for (uint32_t k = 0; k < cnt; k++) {
            FLOE_X_IJ(per);
            sm += V[j] * fabsf(floe_kdw(kc, r2)) * sqrtf(r2);
        }
        *sb += sm;
    }
    if (hyd) {
        const float g0 = grav[0], g1 = grav[1], g2 = grav[2];
        FLOE_ROW_SUM3(E, V[j] * floe_kdw(kc, r2) * (g0 * dx + g1 * dy + g2 * dz));
    }
    if (!visc)
        return;
    float kxx = 0.0f, kyy = 0.0f, kzz = 0.0f, kxy = 0.0f, kxz = 0.0f, kyz = 0.0f;
#pragma omp simd reduction(+ : kxx, kyy, kzz, kxy, kxz, kyz)
    for (uint32_t k = 0; k < cnt; k++) {
        FLOE_X_IJ(per);
        const float g = V[j] * floe_kdw(kc, r2) / (r2 + eps);
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

/* Fluid row: m_j grad W_ij of every pair and the neighbour's global index,
 * written into one lane of a SELL-8 block (stride 8); G += sum_j m_j grad W_ij,
 * *s2 += sum_j m_j |grad W_ij|^2, *dv += sum_j v_adv_j . m_j grad W_ij. The
 * row is computed into contiguous buffers (a vector loop) and then copied
 * to the strided lane (a scalar loop: scattered stores do not vectorise). */
#define ROW_BUF 128
FLOE_ROW_FN void row_pairs(const floe_kconst *kc, const uint32_t *restrict row, uint32_t cnt,
                           const float *restrict xt, const float *restrict m, const float *restrict vt, uint32_t goff,
                           float xi, float yi, float zi, uint32_t *restrict nj, float *restrict gx,
                           float *restrict gy, float *restrict gz, float G[3], float *s2, float *dv,
                           const float *restrict gam, float gam_i, const int per)
{
    float bx[ROW_BUF], by[ROW_BUF], bz[ROW_BUF];
    for (uint32_t k0 = 0; k0 < cnt; k0 += ROW_BUF) {
        const uint32_t n = cnt - k0 < ROW_BUF ? cnt - k0 : ROW_BUF;
        const uint32_t *restrict id = row + k0;
        float sx = 0.0f, sy = 0.0f, sz = 0.0f, ss = 0.0f, sv = 0.0f;
#pragma omp simd reduction(+ : sx, sy, sz, ss, sv)
        for (uint32_t k = 0; k < n; k++) {
            FLOE_X_IJ(per);
            const float d = floe_kdw(kc, r2);
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
            nj[8 * (size_t)(k0 + k)] = goff + id[k];
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
    const floe_kconst *kc;
    const floe_target *t;
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
    float aii_floor;        /* |a_ii| taken as at least this (trapped_floor; 0 = off) */
    float elim;             /* largest compression corrected in one step (relative) */
    int corr;               /* gradient_correction: pair gradients scaled by (gamma_i + gamma_j) / 2 */
    iisph_state *s;
};

/* First pass, particle i: boundary sums, the dissipative terms, v_adv, and
 * the number of fluid neighbours (into cnt[gi]). Returns |a_i|^2 of the
 * driving acceleration (before damping and wall friction). */
FLOE_ROW_FN float setup_boundary(const struct setup *u, uint32_t i, const int per)
{
    const floe_kconst *kc = u->kc;
    iisph_state *s = u->s;
    const size_t gi = u->off + i;
    const float xi = u->x[3 * i], yi = u->x[3 * i + 1], zi = u->x[3 * i + 2];
    const float vi[3] = {u->v[3 * i], u->v[3 * i + 1], u->v[3 * i + 2]};
    float G[3] = {0.0f, 0.0f, 0.0f}, E[3] = {0.0f, 0.0f, 0.0f}, K[6] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    float sb = 0.0f, ub = 0.0f;
    uint32_t cnt = 0;
    const int trap = u->aii_floor > 0.0f;
    for (int b = 0; b < u->nt; b++) {
        const floe_target *t = &u->t[b];
        if (t->boundary)
            row_boundary(kc, FLOE_ROW(t, i), t->x, t->mass, xi, yi, zi, t->v, u->grav, u->hyd, u->visc_c > 0.0f,
                         trap, u->eps, G, E, K, &sb, &ub, per);
        else
            cnt += t->cnt[i];
    }
    s->trap[gi] = trap ? iisph_trap_weight(G[0] * G[0] + G[1] * G[1] + G[2] * G[2], sb) : 0.0f;
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
    s->ub[gi] = gm * u->beta * u->rho0 * ub; /* the boundary's part of G_i, as the moving particles see it */
    s->cnt[gi] = cnt;
    return a2; /* the driving (non-dissipative) acceleration, for the force condition */
}

/* Second pass, particle i: the stored pair gradients, rho_adv, a_ii and the
 * warm-started pressure. */
FLOE_ROW_FN void setup_fluid(const struct setup *u, uint32_t i, const int per)
{
    const floe_kconst *kc = u->kc;
    iisph_state *s = u->s;
    const size_t gi = u->off + i;
    floe_prefetch_rows(u->t, u->nft, i, u->n);
    const float xi = u->x[3 * i], yi = u->x[3 * i + 1], zi = u->x[3 * i + 2];
    float G[3] = {0.0f, 0.0f, 0.0f}, s2 = 0.0f, dv = 0.0f;
    const size_t base = s->boff[gi >> 3] + (gi & 7), width = (s->boff[(gi >> 3) + 1] - s->boff[gi >> 3]) / 8;
    size_t o = base;
    for (int b = 0; b < u->nft; b++) {
        const floe_target *t = &u->t[b];
        const uint32_t cnt = t->cnt[i];
        row_pairs(kc, FLOE_ROW(t, i), t->x, t->mass, s->vadv + 3 * t->off, (uint32_t)t->off, xi, yi, zi, s->nj + o,
                  s->gx + o, s->gy + o, s->gz + o, G, &s2, &dv, u->corr ? s->gam : NULL, u->corr ? s->gam[gi] : 1.0f,
                  per);
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
    /* eq. 23: rho_adv = rho + dt (sum_j m_j v_adv_ij . grad W_ij + sum_b psi_b (v_adv_i - v_b) . grad W_ib),
     * v_b = 0 but on moving boundary sets (rigid bodies: ub) */
    Gi[0] += G[0];
    Gi[1] += G[1];
    Gi[2] += G[2];
    const float rho_adv = rho + dt * (va[0] * Gi[0] + va[1] * Gi[1] + va[2] * Gi[2] - dv - s->ub[gi]);
    /* eq. 20: a_ii = sum_j m_j (d_ii - d_ji) . grad W_ij + beta sum_b psi_b d_ii . grad W_ib
     *         with d_ii = -dt^2 G_i / rho_i^2 and d_ji = dt^2 m_i / rho_i^2 grad W_ij */
    const float aii = -dt * dt * ir2 * (Gi[0] * Gi[0] + Gi[1] * Gi[1] + Gi[2] * Gi[2] + u->m[i] * s2);
    /* the compression already present, rho_i / rho0 - 1, is removed in this
     * step up to elim; the rest (lag) is left to the next steps */
    const float lag = floe_pos(rho / u->rho0 - 1.0f - u->elim);
    s->b[gi] = 1.0f - rho_adv / u->rho0 + lag;
    s->lag[gi] = lag;
    s->c[gi] = dt * dt / u->rho0;
    /* trapped_floor: a trapped particle's step bounded (trap 0: aii itself) */
    const float fl = u->aii_floor * s->trap[gi];
    s->w[gi] = aii < -u->aii_min ? u->omega * u->rho0 / (aii < -fl ? aii : -fl) : 0.0f;
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
    const uint8_t *restrict own = s->own;
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
                if (own[i]) { /* a ghost's error is its owner's */
                    err += pcur[i] > 0.0f ? fabsf(r) : floe_pos(-r);
                    terr += floe_pos(lag[i] - r);
                }
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
    *true_err = t;
    return e;
}

/* ---- solve --------------------------------------------------------------------- */

enum {
    SO_OMEGA,
    SO_TOLERANCE,
    SO_MIN_IT,
    SO_MAX_IT,
    SO_WARM,
    SO_BOUNDARY,
    SO_BVISC,
    SO_DAMPING,
    SO_FORCE_COURANT,
    SO_CORR_SPEED,
    SO_TRAPPED,
    SO_CHEB,
    SO_CHEB_DELAY,
    SO_GRAD_CORR,
};

/* the parameters of iisph.solve, checked, for either path */
static int decode_solve(const floe_stage_call *call, iisph_cfg *c)
{
    floe_ctx *ctx = call->ctx;
    const floe_value *pv = call->param;
    const char *bmode = pv[SO_BOUNDARY].s ? pv[SO_BOUNDARY].s : "extrapolate";
    memset(c, 0, sizeof *c);
    c->omega = (float)pv[SO_OMEGA].f;
    c->warm = (float)pv[SO_WARM].f;
    c->tol = pv[SO_TOLERANCE].f;
    c->min_it = pv[SO_MIN_IT].i;
    c->max_it = pv[SO_MAX_IT].i;
    c->visc_c = (float)(2.0 * (api->sim(ctx)->dim + 2) * pv[SO_BVISC].f);
    c->damping = (float)pv[SO_DAMPING].f;
    c->force_courant = pv[SO_FORCE_COURANT].f;
    c->corr_speed = pv[SO_CORR_SPEED].f;
    c->cheb_rho = (float)pv[SO_CHEB].f;
    c->cheb_delay = pv[SO_CHEB_DELAY].i;
    c->corr = pv[SO_GRAD_CORR].b ? 1 : 0;
    c->trapped = (float)pv[SO_TRAPPED].f;
    if (c->min_it > c->max_it)
        return api->fail(ctx, FLOE_ERR_ARG, "min_iterations (%lld) > max_iterations (%lld)", (long long)c->min_it,
                         (long long)c->max_it);
    if (!strcmp(bmode, "extrapolate"))
        c->beta = 2.0f, c->hyd = 1;
    else if (!strcmp(bmode, "mirror"))
        c->beta = 2.0f;
    else if (!strcmp(bmode, "akinci"))
        c->beta = 1.0f;
    else
        return api->fail(ctx, FLOE_ERR_ARG, "boundary_pressure '%s': expected extrapolate, mirror or akinci", bmode);
    return FLOE_OK;
}

static int solve_c(floe_ctx *ctx, iisph_state *s, const iisph_cfg *c)
{
    const floe_sim_info *si = api->sim(ctx);
    const floe_kconst kc = floe_kconst_make(si);
    const double tol = c->tol;
    const int64_t min_it = c->min_it, max_it = c->max_it;
    const int corr = c->corr;
    const float dt = (float)si->dt;
    floe_fluid f[FLOE_MAX_SETS];
    floe_target t[2 * FLOE_MAX_SETS];
    int nf, nt, st;
    size_t N;

    int ranks; /* MPI (docs/mpi.md): a rank without particles takes part in the others' exchanges */
    if ((st = floe_solver_sets_dd(api, ctx, dt, f, &nf, &N, &ranks)) != FLOE_OK)
        return st == FLOE_SKIP ? FLOE_OK : st;
    if (ensure_particles(s, N ? N : 1))
        return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory (%zu particles)", N);
    double owned_total; /* the particles the errors average over */
    if ((st = floe_owned_mask(api, ctx, f, nf, s->own, &owned_total)) != FLOE_OK)
        return st;

    struct setup u[FLOE_MAX_SETS];
    floe_target tt[FLOE_MAX_SETS][2 * FLOE_MAX_SETS];
    /* dimensionless |a_ii| d^2 / dt^2 below 1e-6: the particle has (almost) no neighbours */
    const float aii_min = (float)(1e-6 * si->dt * si->dt / ((double)si->spacing * si->spacing));
    double amax2 = 0.0, v2s[FLOE_MAX_SETS] = {0};
    for (int q = 0; q < nf; q++) {
        const uint32_t n = f[q].info.n;
        if (n == 0)
            continue;
        if ((st = floe_targets(api, ctx, &f[q], f, nf, FLOE_WITH_BOUNDARY, NULL, NULL, t, &nt)) != FLOE_OK)
            return st;
        memcpy(tt[q], t, (size_t)nt * sizeof *t);
        floe_targets_moving(api, ctx, tt[q], nt); /* the density prediction's v_b */
        struct setup *w = &u[q];
        memset(w, 0, sizeof *w);
        w->kc = &kc;
        w->t = tt[q];
        w->nt = nt;
        w->nft = floe_targets_fluid(t, nt);
        w->n = n;
        w->off = f[q].off;
        w->x = api->attr_read(ctx, f[q].set, "x", FLOE_VEC3);
        w->v = api->attr_read(ctx, f[q].set, "v", FLOE_VEC3);
        w->m = api->attr_read(ctx, f[q].set, "m", FLOE_F32);
        w->rho = api->attr_read(ctx, f[q].set, "rho", FLOE_F32);
        w->pold = api->attr(ctx, f[q].set, "p", FLOE_F32);
        w->a = api->attr(ctx, f[q].set, "a", FLOE_VEC3);
        if (!w->x || !w->v || !w->m || !w->rho || !w->pold || !w->a)
            return api->fail(ctx, FLOE_ERR_ARG, "set '%s' lacks one of x, v, m, rho, p, a", f[q].info.name);
        w->rho0 = f[q].info.rest_density;
        w->dt = dt;
        w->beta = c->beta;
        w->hyd = c->hyd;
        w->grav = si->gravity;
        w->omega = c->omega;
        w->warm = c->warm;
        w->visc_c = c->visc_c;
        w->damping = c->damping;
        w->eps = 0.01f * kc.H * kc.H;
        w->aii_min = aii_min;
        w->aii_floor = iisph_aii_floor(c, si, w->rho0, dt);
        /* largest compression removed in one step: what moves particles at
         * the flow's own speed (or max_correction_speed, when larger) */
        double v2 = 0.0;
#pragma omp parallel for schedule(static) reduction(max : v2)
        for (uint32_t i = 0; i < n; i++) {
            const double q = (double)w->v[3 * i] * w->v[3 * i] + (double)w->v[3 * i + 1] * w->v[3 * i + 1] +
                             (double)w->v[3 * i + 2] * w->v[3 * i + 2];
            v2 = q > v2 ? q : v2;
        }
        v2s[q] = v2; /* the set's largest speed^2, reduced over ranks below */
        w->s = s;
        w->corr = corr;
        if (corr) {
            float *restrict gam = s->gam + f[q].off;
            const float ir0 = 1.0f / w->rho0;
            /* gradient_correction: gamma_i = dim / tr M_i (<floe/sph.h>); the settled
             * packings have tr M / dim 0.98-0.99, 1.5-2% of hydrostatic pressure */
#define GAMMA(i, per) gam[i] = floe_gamma_one(&kc, tt[q], nt, i, w->x, ir0, si->dim, IISPH_GAMMA_LO, per)
            FLOE_PAR_FOR(kc.periodic, n, GAMMA);
#undef GAMMA
        }
        double m2 = 0.0;
        if (si->periodic) {
#pragma omp parallel for schedule(static) reduction(max : m2)
            for (uint32_t i = 0; i < n; i++) {
                const double a2 = setup_boundary(w, i, 1);
                m2 = a2 > m2 ? a2 : m2;
            }
        } else {
#pragma omp parallel for schedule(static) reduction(max : m2)
            for (uint32_t i = 0; i < n; i++) {
                const double a2 = setup_boundary(w, i, 0);
                m2 = a2 > m2 ? a2 : m2;
            }
        }
        amax2 = m2 > amax2 ? m2 : amax2;
    }
    /* MPI: the largest speed of each set over every rank (elim), the
     * ghosts' gradient corrections from their owners */
    {
        if ((st = floe_reduce(api, ctx, v2s, nf, FLOE_REDUCE_MAX)) != FLOE_OK)
            return st;
        for (int q = 0; q < nf; q++) {
            const double vc = fmax(c->corr_speed, sqrt(v2s[q]));
            u[q].elim = c->corr_speed > 0.0 ? (float)fmin(vc * si->dt / si->spacing, 1e30) : 1e30f;
            if (corr && (st = floe_halo(api, ctx, f[q].set, s->gam + f[q].off, sizeof(float))) != FLOE_OK)
                return st;
        }
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
#define SETUP_FLUID(i, per) setup_fluid(w, i, per)
        FLOE_PAR_FOR(kc.periodic, f[q].info.n, SETUP_FLUID);
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
    /* MPI: a^p_j and P_j of ghosts are their owners' (the ghosts' own rows
     * lack the neighbours beyond the halo) */
#define IISPH_HALO(arr, per)                                                                         \
    for (int q = 0; q < nf; q++)                                                                     \
        if ((st = floe_halo(api, ctx, f[q].set, (arr) + (per) * f[q].off, (per) * sizeof(float))) != FLOE_OK) \
            return st
    if (ranks > 1)
        IISPH_HALO(s->P, 1);
    for (;;) {
        pass_accel(s, N);
        if (ranks > 1)
            IISPH_HALO(s->ap, 4);
        /* Chebyshev acceleration from iteration `chebyshev_delay` on (<floe/sph.h>) */
        om = floe_cheb_weight(c->cheb_rho, it + 1, c->cheb_delay, om);
        double e[2];
        e[0] = pass_update(s, N, s->p[prev], s->p[cur], s->p[next], om, &e[1]);
        if ((st = floe_reduce(api, ctx, e, 2, FLOE_REDUCE_SUM)) != FLOE_OK)
            return st;
        err = owned_total > 0.0 ? e[0] / owned_total : 0.0;
        true_err = owned_total > 0.0 ? e[1] / owned_total : 0.0;
        if (ranks > 1)
            IISPH_HALO(s->P, 1);
        it++;
        if ((it >= min_it && err <= tol) || it >= max_it)
            break;
        const int old = prev;
        prev = cur, cur = next, next = old;
    }
#undef IISPH_HALO
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
    if (c->force_courant > 0.0 && amax2 > 0.0)
        api->dt_limit(ctx, c->force_courant * sqrt(si->spacing / sqrt(amax2)));
    return FLOE_OK;
}

/* decode once, then the device solve (iisph_cl.c) or the C solve; a scene
 * with several fluid sets takes the C solve on either path */
static int solve(const floe_stage_call *call, int cl)
{
    iisph_state *s = call->state;
    iisph_cfg c;
    int st;
    if (!s)
        return api->fail(call->ctx, FLOE_ERR, "module state missing");
    if ((st = decode_solve(call, &c)) != FLOE_OK)
        return st;
    if (cl && (st = iisph_cl_solve(call->ctx, &c, &s->cl)) != IISPH_CL_USE_C)
        return st;
    return solve_c(call->ctx, s, &c);
}

static int st_solve(const floe_stage_call *call) { return solve(call, 0); }
static int st_solve_cl(const floe_stage_call *call) { return solve(call, 1); }

/* ---- descriptors ---------------------------------------------------------------- */

#define FLUID FLOE_ATTR_FLUID

static const floe_param_desc solve_params[] = {
    [SO_OMEGA] = FLOE_PARAM_F("omega", 0.5, 0.01, 1.0, "",
        "relaxation of the Jacobi update (eq. 24; Ihmsen 2013: 0.5, Kim 2020: 0.8)"),
    [SO_TOLERANCE] = FLOE_PARAM_F("tolerance", 0.0005, 1e-7, 0.5, "",
        "stop when the average predicted compression mean(max(rho/rho0 - 1, 0)) is below this (0.0005 = 0.05%)"),
    [SO_MIN_IT] = FLOE_PARAM_I("min_iterations", 2, 1, 100000, "",
        "at least this many iterations (each: pressure accelerations, then density error and update)"),
    [SO_MAX_IT] = FLOE_PARAM_I("max_iterations", 100, 1, 100000, "",
        "at most this many iterations; when still above tolerance the next dt is halved"),
    [SO_WARM] = FLOE_PARAM_F("warm_start", 0.5, 0, 1, "",
        "initial pressure = warm_start * previous step's pressure (Ihmsen 2013: 0.5; 0 = cold start; "
        "above ~0.7 a deep tank at rest oscillates)"),
    [SO_BOUNDARY] = FLOE_PARAM_S("boundary_pressure", "extrapolate", "extrapolate|mirror|akinci",
        "boundary pressure: extrapolate = -psi_b (p_i + p_b)/rho_i^2 grad W_ib with p_b = p_i + rho_i g.(x_b - x_i) "
        "where p_i > 0; mirror = the same with p_b = p_i (as wcsph); akinci = -psi_b p_i/rho_i^2 grad W_ib"),
    [SO_BVISC] = FLOE_PARAM_F("boundary_viscosity", 0, 0, 100, "m^2/s",
        "kinematic viscosity against boundary particles (wall friction), added to a before the solve: "
        "2(dim+2) nu sum_b psi_b/rho_i (v_i.x_ib)/(r^2+0.01H^2) grad W_ib; 0 = free slip"),
    [SO_DAMPING] = FLOE_PARAM_F("damping", 0, 0, 1e4, "1/s",
        "velocity damping v_adv = v / (1 + dt damping) + dt a: slows the velocity, not the step's force "
        "increment (for settling a scene at rest; 0 = none)"),
    [SO_FORCE_COURANT] = FLOE_PARAM_F("force_courant", 0.05, 0, 10, "",
        "proposes dt <= force_courant sqrt(d / |a|max), a the non-pressure acceleration (0 proposes nothing)"),
    [SO_CORR_SPEED] = FLOE_PARAM_MAX_CORRECTION_SPEED,
    [SO_TRAPPED] = FLOE_PARAM_F("trapped_floor", 1, 0, 10, "",
        "for particles caught between boundaries on opposite sides (a body and a wall: |sum_b psi_b grad W_ib| "
        "under half of sum_b psi_b |grad W_ib|), |a_ii| taken as at least this times a particle's inside a rest "
        "lattice: bounds their Jacobi steps, whose pressure otherwise grows without bound and kicks a heavy body off "
        "the floor (docs/iisph.md, \"Trapped particles\"); 0 = off"),
    [SO_CHEB] = FLOE_PARAM_CHEBYSHEV,
    [SO_CHEB_DELAY] = FLOE_PARAM_CHEBYSHEV_DELAY,
    [SO_GRAD_CORR] = FLOE_PARAM_B("gradient_correction", 0,
        "scale each pair gradient by (gamma_i + gamma_j) / 2, gamma_i = dim / tr(-sum_j V_j x_ij grad W_ij^T) "
        "clamped to [0.9, 1.11]: pressure consistent with rho0 g h on any packing; one more neighbour pass a "
        "step"),
    {0},
};

static const floe_attr_desc solve_attrs[] = {
    FLOE_ATTRS_PAIR_READ,
    FLUID("p", FLOE_F32, FLOE_READ | FLOE_WRITE),
    FLOE_ATTR_ACCEL,
    {0},
};

static const floe_stage_desc stages[] = {
    { FLOE_SIZED(floe_stage_desc), .name = "density", .doc = "deprecated: runs sph.density",
      .replaced_by = "sph.density" },
    FLOE_STAGE(solve, "solve",
               "IISPH pressure solve (relaxed Jacobi) with Akinci boundaries; adds the pressure acceleration to a "
               "(after 'gravity' and other force stages, before 'integrate')"),
    {0},
};

FLOE_SPH_MODULE(iisph, .version = "1.0.0",
                .summary = "Implicit incompressible SPH (Ihmsen et al. 2013; Kim 2020 sec. 3.1): relaxed Jacobi "
                           "pressure solve to a density tolerance, Akinci boundaries",
                .stages = stages, .init = iisph_init, .fini = iisph_fini)
