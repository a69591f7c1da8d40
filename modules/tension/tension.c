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
 * branch-free kernel (<floe/sph.h>); V = m / rho is computed once per call
 * into scratch. Bitwise the same results for a given thread count.
 *
 * Parameters are decoded once per call (decode_*, tension.h), then the C
 * path below or the OpenCL path (tension_cl.c) runs. */
#include "tension.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

FLOE_MODULE_API_DEFINE; /* the core's services; the entry point sets it */

/* ---- module state: V = m / rho and the Shepard sums ----------------------- */

typedef struct ten_state {
    float *vol;     /* V_j of every fluid set, concatenated */
    float *shepard; /* sum_j V_j W_ij over fluid and boundary (eq. 34 denominator) */
    size_t cap_vol, cap_shepard;
} ten_state;

FLOE_STATE_INIT(ten_init, ten_state)

static void ten_fini(void *state)
{
    ten_state *s = state;
    if (s) {
        free(s->vol);
        free(s->shepard);
    }
    free(s);
}

/* Scratch for every fluid particle; V_j = m_j / rho_j of every fluid set. */
static int prepare(floe_ctx *ctx, ten_state *ts, const floe_fluid *f, int nf, size_t total)
{
    int st;
    if (!ts)
        return api->fail(ctx, FLOE_ERR, "module state missing");
    if ((st = floe_scratch(api, ctx, &ts->vol, &ts->cap_vol, total)) != FLOE_OK ||
        (st = floe_scratch(api, ctx, &ts->shepard, &ts->cap_shepard, total)) != FLOE_OK)
        return st;
    return floe_volumes(api, ctx, f, nf, ts->vol);
}

/* The targets of fluid set q (<floe/sph.h>: fluid sets with rho and V_j in
 * aux, then, with_boundary, the boundary sets) and, when `extra` is not NULL,
 * that attribute of each fluid target (written by this module's stages). */
typedef struct ten_targets {
    floe_target t[2 * FLOE_MAX_SETS];
    const float *ex[2 * FLOE_MAX_SETS];
    int nt;
} ten_targets;

static int targets(floe_ctx *ctx, const ten_state *ts, const floe_fluid *q, const floe_fluid *f, int nf,
                   int with_boundary, const char *extra, floe_type etype, ten_targets *T)
{
    const unsigned needs = FLOE_NEED_RHO | (with_boundary ? FLOE_WITH_BOUNDARY : 0);
    int st = floe_targets(api, ctx, q, f, nf, needs, ts->vol, NULL, T->t, &T->nt);
    for (int b = 0; st == FLOE_OK && b < T->nt; b++) {
        T->ex[b] = extra && !T->t[b].boundary ? api->attr(ctx, T->t[b].set, extra, etype) : NULL;
        if (extra && !T->t[b].boundary && !T->ex[b])
            st = api->fail(ctx, FLOE_ERR_ARG, "fluid set '%s' has no '%s' attribute", T->t[b].name, extra);
    }
    return st;
}

/* MPI: the ghosts of attribute `name` of every fluid set from their owners
 * (collective: every set, also an empty one) */
static int halo_attr(floe_ctx *ctx, const floe_fluid *f, int nf, const char *name, size_t elem)
{
    int st = FLOE_OK;
    for (int s = 0; s < nf && st == FLOE_OK; s++)
        st = floe_halo(api, ctx, f[s].set, api->attr(ctx, f[s].set, name, elem == 4 ? FLOE_F32 : FLOE_VEC3), elem);
    return st;
}

/* V_j of a target: the module's scratch (fluid) or the attribute V (boundary) */
static inline const float *vol_of(const floe_target *t) { return t->boundary ? t->mass : t->aux; }

/* ---- sums over one neighbour row (<floe/sph.h>: argument order, `per`) ---- */

/* s += sum_j w_j c_j grad W_ij */
FLOE_ROW_FN void row_grad_c(const floe_kconst *kc, const uint32_t *restrict id, uint32_t cnt,
                            const float *restrict xt, const float *restrict w, const float *restrict c, float xi,
                            float yi, float zi, float s[3], const int per)
{
    FLOE_ROW_GRAD_SUM(s, w[j] * c[j]);
}

/* s += sum_j w_j (gi + g_j) grad W_ij */
FLOE_ROW_FN void row_energy(const floe_kconst *kc, const uint32_t *restrict id, uint32_t cnt,
                            const float *restrict xt, const float *restrict w, const float *restrict g2, float gi,
                            float xi, float yi, float zi, float s[3], const int per)
{
    FLOE_ROW_GRAD_SUM(s, w[j] * (gi + g2[j]));
}

/* Akinci 2013 cohesion spline C(r) / (32 / (pi H^9)), r <= H:
 *   (H - r)^3 r^3                   H/2 < r <= H
 *   2 (H - r)^3 r^3 - H^6 / 64      0 < r <= H/2
 * branch-free: t = max(H - r, 0); the lower branch adds (H-r)^3 r^3 - H^6/64
 * when r <= H/2 (a mask, exact). */
FLOE_ROW_FN float cohesion_hat(const floe_kconst *kc, float r)
{
    const float t = floe_pos(kc->H - r);
    const float u = t * t * t * r * r * r;
    const float inner = (float)(r <= 0.5f * kc->H);
    const float H3 = kc->H * kc->H * kc->H;
    return u + inner * (u - H3 * H3 * (1.0f / 64.0f));
}

/* Akinci 2013 adhesion kernel A(r) / (0.007 / H^3.25): (-4 r^2/H + 6 r - 2H)^(1/4)
 * for H/2 < r <= H, else 0. */
FLOE_ROW_FN float adhesion_hat(const floe_kconst *kc, float r)
{
    const float on = (float)(r > 0.5f * kc->H) * (float)(r <= kc->H);
    const float p = floe_pos(-4.0f * r * r * kc->inv_H + 6.0f * r - 2.0f * kc->H);
    return on * sqrtf(sqrtf(p));
}

/* s += sum_j 2/(rho_i+rho_j) (cc m_j C(r) x_ij / r + kq (n_i - n_j)) (the minus and gamma rho0 outside) */
FLOE_ROW_FN void row_akinci(const floe_kconst *kc, const uint32_t *restrict id, uint32_t cnt,
                            const float *restrict xt, const float *restrict m, const float *restrict rho,
                            const float *restrict nrm, float rhoi, const float ni[3], float cc, float kq, float xi,
                            float yi, float zi, float s[3], const int per)
{
    float sx = 0.0f, sy = 0.0f, sz = 0.0f;
#pragma omp simd reduction(+ : sx, sy, sz)
    for (uint32_t k = 0; k < cnt; k++) {
        FLOE_X_IJ(per);
        const float r = sqrtf(r2 + kc->r_min2);
        const float K = 2.0f / (rhoi + rho[j]);
        const float coh = cc * m[j] * cohesion_hat(kc, r) / r;
        sx += K * (coh * dx + kq * (ni[0] - nrm[3 * j]));
        sy += K * (coh * dy + kq * (ni[1] - nrm[3 * j + 1]));
        sz += K * (coh * dz + kq * (ni[2] - nrm[3 * j + 2]));
    }
    s[0] += sx;
    s[1] += sy;
    s[2] += sz;
}

/* s += sum_b V_b A(r) x_ib / r  (A / its constant) */
FLOE_ROW_FN void row_adhesion(const floe_kconst *kc, const uint32_t *restrict id, uint32_t cnt,
                              const float *restrict xt, const float *restrict V, float xi, float yi, float zi,
                              float s[3], const int per)
{
    FLOE_ROW_SUM3(s, V[j] * adhesion_hat(kc, sqrtf(r2 + kc->r_min2)) / sqrtf(r2 + kc->r_min2));
}

/* One fluid set's pass: the query set's data and its targets. */
typedef struct job {
    const floe_kconst *kc;
    const ten_targets *T;
    uint32_t n;
    const float *x, *V, *rho;
    float *c, *shep, *g2, *nrm; /* per pass */
    float *a;
    float wall;                 /* he, air_pressure: colour of boundary particles */
    float coh;                  /* akinci: cohesion kernel constant */
    float curv;                 /* akinci: factor of the curvature term */
    float coef, coef2;          /* per stage */
} job;

/* ---- he: colour, gradient, force ------------------------------------------- */

/* c_i = V_i W(0) + sum_j V_j W_ij + wall sum_b V_b W_ib, Shepard sum with wall = 1 */
FLOE_ROW_FN void he_colour(const job *J, uint32_t i, const int per)
{
    const floe_kconst *kc = J->kc;
    const floe_target *t = J->T->t;
    floe_prefetch_rows(t, J->T->nt, i, J->n);
    const float xi = J->x[3 * i], yi = J->x[3 * i + 1], zi = J->x[3 * i + 2];
    float sf = J->V[i], sb = 0.0f;
    for (int b = 0; b < J->T->nt; b++) {
        const float s = floe_row_w(kc, FLOE_ROW(&t[b], i), t[b].x, vol_of(&t[b]), xi, yi, zi, per);
        if (t[b].boundary)
            sb += s;
        else
            sf += s;
    }
    J->c[i] = kc->sigma * (sf + J->wall * sb);
    J->shep[i] = kc->sigma * (sf + sb);
}

/* |grad c_i|^2 with grad c_i = (sum_j V_j c_j grad W_ij + wall sum_b V_b grad W_ib) / shepard_i */
FLOE_ROW_FN void he_gradient(const job *J, uint32_t i, const int per)
{
    const floe_kconst *kc = J->kc;
    const floe_target *t = J->T->t;
    floe_prefetch_rows(t, J->T->nt, i, J->n);
    const float xi = J->x[3 * i], yi = J->x[3 * i + 1], zi = J->x[3 * i + 2];
    float gf[3] = {0.0f, 0.0f, 0.0f}, gb[3] = {0.0f, 0.0f, 0.0f};
    for (int b = 0; b < J->T->nt; b++) {
        if (t[b].boundary)
            floe_row_grad(kc, FLOE_ROW(&t[b], i), t[b].x, t[b].mass, xi, yi, zi, gb, per);
        else
            row_grad_c(kc, FLOE_ROW(&t[b], i), t[b].x, t[b].aux, J->T->ex[b], xi, yi, zi, gf, per);
    }
    const float inv = 1.0f / J->shep[i];
    const float gx = (gf[0] + J->wall * gb[0]) * inv, gy = (gf[1] + J->wall * gb[1]) * inv,
                gz = (gf[2] + J->wall * gb[2]) * inv;
    J->g2[i] = gx * gx + gy * gy + gz * gz;
}

/* a_i += kappa / (4 rho_i) sum_j V_j (g_i + g_j) grad W_ij */
FLOE_ROW_FN void he_force(const job *J, uint32_t i, const int per)
{
    const floe_kconst *kc = J->kc;
    const floe_target *t = J->T->t;
    floe_prefetch_rows(t, J->T->nt, i, J->n);
    const float xi = J->x[3 * i], yi = J->x[3 * i + 1], zi = J->x[3 * i + 2];
    const float gi = J->g2[i];
    float s[3] = {0.0f, 0.0f, 0.0f};
    for (int b = 0; b < J->T->nt; b++)
        if (!t[b].boundary)
            row_energy(kc, FLOE_ROW(&t[b], i), t[b].x, t[b].aux, J->T->ex[b], gi, xi, yi, zi, s, per);
    const float f = J->coef / J->rho[i];
    J->a[3 * i] += f * s[0];
    J->a[3 * i + 1] += f * s[1];
    J->a[3 * i + 2] += f * s[2];
}

#define HE_COLOUR(i, per) he_colour(&J, (i), (per))
#define HE_GRADIENT(i, per) he_gradient(&J, (i), (per))
#define HE_FORCE(i, per) he_force(&J, (i), (per))

enum { HE_KAPPA, HE_WALL };

static ten_he decode_he(const floe_stage_call *call)
{
    const float kappa = (float)call->param[HE_KAPPA].f;
    const ten_he p = {0.25f * kappa, (float)call->param[HE_WALL].f, kappa != 0.0f};
    return p;
}

/* the three passes over every fluid set: each needs the previous one everywhere */
static int he_c(floe_ctx *ctx, ten_state *ts, const ten_he *p)
{
    static const char *const extra[3] = {NULL, "colour", "colour_grad2"};
    const floe_kconst kc = floe_kconst_make(api->sim(ctx));
    floe_fluid f[FLOE_MAX_SETS];
    ten_targets T;
    int nf, st;
    size_t total;

    if ((st = floe_fluid_sets(api, ctx, f, &nf, &total)) != FLOE_OK)
        return st;
    if ((st = prepare(ctx, ts, f, nf, total)) != FLOE_OK)
        return st;
    for (int pass = 0; pass < (p->force ? 3 : 2); pass++) {
        for (int s = 0; s < nf; s++) {
            const uint32_t n = f[s].info.n;
            if (n == 0)
                continue;
            if ((st = targets(ctx, ts, &f[s], f, nf, pass < 2, extra[pass], FLOE_F32, &T)) != FLOE_OK)
                return st;
            job J = {
                .kc = &kc, .T = &T, .n = n,
                .x = floe_read_of(api, ctx, &f[s], "x", FLOE_VEC3),
                .V = ts->vol + f[s].off,
                .rho = floe_read_of(api, ctx, &f[s], "rho", FLOE_F32),
                .c = floe_attr_of(api, ctx, &f[s], "colour", FLOE_F32),
                .shep = ts->shepard + f[s].off,
                .g2 = floe_attr_of(api, ctx, &f[s], "colour_grad2", FLOE_F32),
                .a = floe_attr_of(api, ctx, &f[s], "a", FLOE_VEC3),
                .wall = p->wall,
                .coef = p->coef,
            };
            if (!J.x || !J.rho || !J.c || !J.g2 || !J.a)
                return FLOE_ERR_ARG;
            if (pass == 0)
                FLOE_PAR_FOR(kc.periodic, n, HE_COLOUR);
            else if (pass == 1)
                FLOE_PAR_FOR(kc.periodic, n, HE_GRADIENT);
            else
                FLOE_PAR_FOR(kc.periodic, n, HE_FORCE);
        }
        /* MPI (docs/mpi.md): the next pass reads the neighbours' colour
         * (gradient) and |grad c|^2 (force): the ghosts' from their owners */
        if (pass < 2 && (st = halo_attr(ctx, f, nf, extra[pass + 1], sizeof(float))) != FLOE_OK)
            return st;
    }
    return FLOE_OK;
}

static int he(const floe_stage_call *call, int cl)
{
    const ten_he p = decode_he(call);
    return cl ? ten_cl_he(call->ctx, &p) : he_c(call->ctx, call->state, &p);
}

static int st_he(const floe_stage_call *call) { return he(call, 0); }
static int st_he_cl(const floe_stage_call *call) { return he(call, 1); }

/* ---- air pressure (eq. 36) --------------------------------------------------- */

/* a_i += p_atm / rho_i (sum_j V_j grad W_ij + wall sum_b V_b grad W_ib) */
FLOE_ROW_FN void air_force(const job *J, uint32_t i, const int per)
{
    const floe_kconst *kc = J->kc;
    const floe_target *t = J->T->t;
    floe_prefetch_rows(t, J->T->nt, i, J->n);
    const float xi = J->x[3 * i], yi = J->x[3 * i + 1], zi = J->x[3 * i + 2];
    float gf[3] = {0.0f, 0.0f, 0.0f}, gb[3] = {0.0f, 0.0f, 0.0f};
    for (int b = 0; b < J->T->nt; b++)
        floe_row_grad(kc, FLOE_ROW(&t[b], i), t[b].x, vol_of(&t[b]), xi, yi, zi, t[b].boundary ? gb : gf, per);
    const float f = J->coef / J->rho[i];
    J->a[3 * i] += f * (gf[0] + J->wall * gb[0]);
    J->a[3 * i + 1] += f * (gf[1] + J->wall * gb[1]);
    J->a[3 * i + 2] += f * (gf[2] + J->wall * gb[2]);
}

#define AIR_FORCE(i, per) air_force(&J, (i), (per))

enum { AIR_P, AIR_WALL };

static int air_c(floe_ctx *ctx, ten_state *ts, const ten_air *p)
{
    const floe_kconst kc = floe_kconst_make(api->sim(ctx));
    floe_fluid f[FLOE_MAX_SETS];
    ten_targets T;
    int nf, st;
    size_t total;

    if ((st = floe_fluid_sets(api, ctx, f, &nf, &total)) != FLOE_OK)
        return st;
    if ((st = prepare(ctx, ts, f, nf, total)) != FLOE_OK)
        return st;
    for (int s = 0; s < nf; s++) {
        const uint32_t n = f[s].info.n;
        if (n == 0)
            continue;
        if ((st = targets(ctx, ts, &f[s], f, nf, p->wall != 0.0f, NULL, FLOE_F32, &T)) != FLOE_OK)
            return st;
        job J = {
            .kc = &kc, .T = &T, .n = n,
            .x = floe_read_of(api, ctx, &f[s], "x", FLOE_VEC3),
            .rho = floe_read_of(api, ctx, &f[s], "rho", FLOE_F32),
            .a = floe_attr_of(api, ctx, &f[s], "a", FLOE_VEC3),
            .wall = p->wall,
            .coef = p->coef,
        };
        if (!J.x || !J.rho || !J.a)
            return FLOE_ERR_ARG;
        FLOE_PAR_FOR(kc.periodic, n, AIR_FORCE);
    }
    return FLOE_OK;
}

static int air(const floe_stage_call *call, int cl)
{
    const ten_air p = {(float)call->param[AIR_P].f, (float)call->param[AIR_WALL].f};
    if (p.coef == 0.0f)
        return FLOE_OK;
    return cl ? ten_cl_air(call->ctx, &p) : air_c(call->ctx, call->state, &p);
}

static int st_air(const floe_stage_call *call) { return air(call, 0); }
static int st_air_cl(const floe_stage_call *call) { return air(call, 1); }

/* ---- akinci: normals, then cohesion + curvature + adhesion ------------------- */

/* n_i = H sum_j V_j grad W_ij (fluid only) */
FLOE_ROW_FN void ak_normal(const job *J, uint32_t i, const int per)
{
    const floe_kconst *kc = J->kc;
    const floe_target *t = J->T->t;
    floe_prefetch_rows(t, J->T->nt, i, J->n);
    const float xi = J->x[3 * i], yi = J->x[3 * i + 1], zi = J->x[3 * i + 2];
    float s[3] = {0.0f, 0.0f, 0.0f};
    for (int b = 0; b < J->T->nt; b++)
        if (!t[b].boundary)
            floe_row_grad(kc, FLOE_ROW(&t[b], i), t[b].x, t[b].aux, xi, yi, zi, s, per);
    J->nrm[3 * i] = kc->H * s[0];
    J->nrm[3 * i + 1] = kc->H * s[1];
    J->nrm[3 * i + 2] = kc->H * s[2];
}

/* a_i -= gamma rho0 sum_j 2/(rho_i+rho_j) (m_j C(r) x_ij/r + n_i - n_j) + beta rho0 sum_b V_b A(r) x_ib/r */
FLOE_ROW_FN void ak_force(const job *J, uint32_t i, const int per)
{
    const floe_kconst *kc = J->kc;
    const floe_target *t = J->T->t;
    floe_prefetch_rows(t, J->T->nt, i, J->n);
    const float xi = J->x[3 * i], yi = J->x[3 * i + 1], zi = J->x[3 * i + 2];
    const float ni[3] = {J->nrm[3 * i], J->nrm[3 * i + 1], J->nrm[3 * i + 2]};
    const float rhoi = J->rho[i];
    float sf[3] = {0.0f, 0.0f, 0.0f}, sb[3] = {0.0f, 0.0f, 0.0f};
    for (int b = 0; b < J->T->nt; b++) {
        if (t[b].boundary)
            row_adhesion(kc, FLOE_ROW(&t[b], i), t[b].x, t[b].mass, xi, yi, zi, sb, per);
        else
            row_akinci(kc, FLOE_ROW(&t[b], i), t[b].x, t[b].mass, t[b].rho, J->T->ex[b], rhoi, ni, J->coh, J->curv,
                       xi, yi, zi, sf, per);
    }
    J->a[3 * i] -= J->coef * sf[0] + J->coef2 * sb[0];
    J->a[3 * i + 1] -= J->coef * sf[1] + J->coef2 * sb[1];
    J->a[3 * i + 2] -= J->coef * sf[2] + J->coef2 * sb[2];
}

#define AK_NORMAL(i, per) ak_normal(&J, (i), (per))
#define AK_FORCE(i, per) ak_force(&J, (i), (per))

enum { AK_GAMMA, AK_BETA, AK_CURV };

/* kernel constants: C = 32/(pi H^9) in 3D (Akinci 2013), 32/(pi H^8) in 2D;
 * A = 0.007/H^3.25 in 3D, 0.007/H^2.25 in 2D (one power of H less, so
 * gamma and beta keep their 3D meaning per unit depth). */
static ten_akinci decode_akinci(const floe_stage_call *call)
{
    const floe_sim_info *si = api->sim(call->ctx);
    const double H = floe_kconst_make(si).H;
    const double cC = si->dim == 3 ? 32.0 / (FLOE_PI * pow(H, 9)) : 32.0 / (FLOE_PI * pow(H, 8));
    const double cA = si->dim == 3 ? 0.007 / pow(H, 3.25) : 0.007 / pow(H, 2.25);
    const double beta = call->param[AK_BETA].f;
    const ten_akinci p = {call->param[AK_GAMMA].f, beta, cA, (float)cC, (float)call->param[AK_CURV].f, beta != 0.0};
    return p;
}

static int akinci_c(floe_ctx *ctx, ten_state *ts, const ten_akinci *p)
{
    const floe_kconst kc = floe_kconst_make(api->sim(ctx));
    floe_fluid f[FLOE_MAX_SETS];
    ten_targets T;
    int nf, st;
    size_t total;

    if ((st = floe_fluid_sets(api, ctx, f, &nf, &total)) != FLOE_OK)
        return st;
    if ((st = prepare(ctx, ts, f, nf, total)) != FLOE_OK)
        return st;
    for (int pass = 0; pass < 2; pass++) {
        for (int s = 0; s < nf; s++) {
            const uint32_t n = f[s].info.n;
            if (n == 0)
                continue;
            if ((st = targets(ctx, ts, &f[s], f, nf, pass == 1 && p->adhesion, pass == 1 ? "normal" : NULL,
                              FLOE_VEC3, &T)) != FLOE_OK)
                return st;
            job J = {
                .kc = &kc, .T = &T, .n = n,
                .x = floe_read_of(api, ctx, &f[s], "x", FLOE_VEC3),
                .rho = floe_read_of(api, ctx, &f[s], "rho", FLOE_F32),
                .nrm = floe_attr_of(api, ctx, &f[s], "normal", FLOE_VEC3),
                .a = floe_attr_of(api, ctx, &f[s], "a", FLOE_VEC3),
                .coh = p->coh,
                .curv = p->curv,
            };
            if (!J.x || !J.rho || !J.nrm || !J.a)
                return FLOE_ERR_ARG;
            ten_akinci_coef(p, f[s].info.rest_density, &J.coef, &J.coef2);
            if (pass == 0)
                FLOE_PAR_FOR(kc.periodic, n, AK_NORMAL);
            else
                FLOE_PAR_FOR(kc.periodic, n, AK_FORCE);
        }
        /* MPI (docs/mpi.md): the forces read the neighbours' normals */
        if (pass == 0 && (st = halo_attr(ctx, f, nf, "normal", 3 * sizeof(float))) != FLOE_OK)
            return st;
    }
    return FLOE_OK;
}

static int akinci(const floe_stage_call *call, int cl)
{
    const ten_akinci p = decode_akinci(call);
    if (p.gamma == 0.0 && p.beta == 0.0)
        return FLOE_OK;
    return cl ? ten_cl_akinci(call->ctx, &p) : akinci_c(call->ctx, call->state, &p);
}

static int st_akinci(const floe_stage_call *call) { return akinci(call, 0); }
static int st_akinci_cl(const floe_stage_call *call) { return akinci(call, 1); }

/* ---- descriptors ------------------------------------------------------------ */

#define FLUID FLOE_ATTR_FLUID

static const floe_attr_desc he_attrs[] = {
    FLUID("x", FLOE_VEC3, FLOE_READ),
    FLUID("m", FLOE_F32, FLOE_READ),
    FLUID("rho", FLOE_F32, FLOE_READ),
    FLUID("colour", FLOE_F32, FLOE_WRITE),
    FLUID("colour_grad2", FLOE_F32, FLOE_WRITE),
    FLOE_ATTR_ADDS_ACCEL,
    FLOE_ATTRS_BOUND_READ,
    {0},
};

static const floe_attr_desc air_attrs[] = {
    FLUID("x", FLOE_VEC3, FLOE_READ),
    FLUID("m", FLOE_F32, FLOE_READ),
    FLUID("rho", FLOE_F32, FLOE_READ),
    FLOE_ATTR_ADDS_ACCEL,
    FLOE_ATTRS_BOUND_READ,
    {0},
};

static const floe_attr_desc akinci_attrs[] = {
    FLUID("x", FLOE_VEC3, FLOE_READ),
    FLUID("m", FLOE_F32, FLOE_READ),
    FLUID("rho", FLOE_F32, FLOE_READ),
    FLUID("normal", FLOE_VEC3, FLOE_WRITE),
    FLOE_ATTR_ADDS_ACCEL,
    FLOE_ATTRS_BOUND_READ,
    {0},
};

static const floe_param_desc he_params[] = {
    [HE_KAPPA] = FLOE_PARAM_F("kappa", 0.02, 0, 1e3, "N",
                              "squared-gradient energy coefficient kappa of eq. 35 (J/m; Kim 2020: 0.02). The "
                              "surface tension it makes scales as kappa / H"),
    [HE_WALL] = FLOE_PARAM_F("wall_colour", 1, 0, 1, "",
                             "colour of boundary particles in eq. 33/34: 1 = wetted wall (no interface along it), "
                             "0 = the wall counts as air"),
    {0},
};

static const floe_param_desc air_params[] = {
    [AIR_P] = FLOE_PARAM_F("p_atm", 5000, 0, 1e7, "Pa",
                           "air pressure p_atm of eq. 36 (Kim 2020: 5000); pushes the free surface inwards"),
    [AIR_WALL] = FLOE_PARAM_F("wall_colour", 1, 0, 1, "",
                              "weight of boundary particles in the sum of eq. 36: 1 = no air along walls, "
                              "0 = walls count as air"),
    {0},
};

static const floe_param_desc akinci_params[] = {
    [AK_GAMMA] = FLOE_PARAM_F("gamma", 0.1, 0, 1e3, "",
                              "Akinci surface tension coefficient gamma (cohesion m^4 kg^-1 s^-2, curvature "
                              "m s^-2, as published: a tuning coefficient, not sigma)"),
    [AK_BETA] = FLOE_PARAM_F("beta", 0, 0, 1e3, "",
                             "Akinci adhesion coefficient beta against boundary particles (m^4 kg^-1 s^-2); "
                             "0 = none"),
    [AK_CURV] = FLOE_PARAM_F("curvature", 1, 0, 1e3, "",
                             "factor of the curvature term gamma (n_i - n_j) (1 = Akinci's; 0 = cohesion only, "
                             "which holds a 2D droplet as an elastic solid, docs/viscosity_tension.md)"),
    {0},
};

static const floe_stage_desc stages[] = {
    FLOE_STAGE(he, "he", "He et al. 2014 surface tension from the colour-field gradient energy (Kim 2020 eq. 33-35), "
                   "writes colour and colour_grad2; after 'gravity', before the pressure force/solve"),
    FLOE_STAGE(air, "air_pressure",
               "air pressure on the free surface, a_i += p_atm/rho_i sum_j V_j grad W_ij (Kim 2020 eq. 36)"),
    FLOE_STAGE(akinci, "akinci", "Akinci et al. 2013 cohesion + curvature surface tension and adhesion to boundaries, "
                       "writes normal"),
    {0},
};

FLOE_SPH_MODULE(tension, .version = "1.0.0",
                .summary = "surface tension added to a: He et al. 2014 colour-field energy + air pressure (Kim 2020 "
                           "eq. 33-36), Akinci et al. 2013 cohesion/curvature/adhesion; for WCSPH and IISPH",
                .stages = stages, .init = ten_init, .fini = ten_fini)
