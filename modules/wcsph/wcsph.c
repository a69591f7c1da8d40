/* Floe module "wcsph": weakly compressible SPH (Becker & Teschner 2007).
 *
 * Stages, in pipeline order (core stages in brackets, the sph module's in braces):
 *   [neighbours] {sph.density} or continuity, pressure, [gravity] viscosity, pressure_force, [integrate]
 *
 *   continuity      rho by the continuity equation with delta-SPH density
 *                   diffusion (continuity.c), in place of the density sum
 *
 *   pressure        p_i = B ((rho_i / rho0)^gamma - 1), clamped at >= 0
 *   viscosity       Monaghan (1992) artificial viscosity, added to a
 *   pressure_force  a_i -= sum_j m_j (p_i/rho_i^2 + p_j/rho_j^2) grad W_ij
 *                        + sum_b rho0_i V_b 2 p_i/rho_i^2 grad W_ib
 *
 * j runs over the neighbours in every fluid set, b over those in every
 * boundary set (Akinci et al. 2012: a boundary particle acts as fluid of mass
 * rho0_i V_b; pressure is mirrored from the fluid particle, p_b = p_i and
 * rho_b = rho_i). docs/modules.md has the equations in full.
 *
 * Speed: this is the hot path. Every loop is a gather (particle i writes only
 * its own slot); the neighbour passes run with schedule(dynamic, 256) (rows
 * differ in length), the others static, and the sum over one neighbour row
 * is an omp simd reduction of a branch-free kernel (<floe/sph.h>). Each
 * particle's sums are made in one order fixed at compile time, so results
 * are bitwise the same for any thread count and schedule. On AVX2 the fluid
 * rows run over packed records (rows_avx2.h, <floe/sph_pack.h>).
 *
 * Parameters are decoded once per call (decode_*), then the C path below or
 * the OpenCL path (wcsph_cl.c, with the decoded values) runs. */
#include "wcsph.h"

#include <floe/sph_pack.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

FLOE_MODULE_API_DEFINE; /* the core's services; the entry point sets it */

/* ---- module state (wcsph.h): scratch, packed records, speeds of sound ---- */

FLOE_STATE_INIT(wcsph_init, wcsph_state)

static void wcsph_fini(void *state)
{
    wcsph_state *s = state;
    if (s) {
        free(s->prho2);
        free(s->grad);
        free(s->drho);
        free(s->wall);
        floe_records_free(&s->rec);
    }
    free(s);
}

#ifdef FLOE_SPH_AVX2
#include "rows_avx2.h" /* packed-record rows; FLOE_SPH_GENERIC=1 builds without them */
#endif

/* ---- sums over one neighbour row (<floe/sph.h>: argument order, `per`) ---- */

/* s += sum_j w_j (P_i + P_j) grad W_ij */
FLOE_ROW_FN void row_grad_p(const floe_kconst *kc, const uint32_t *restrict id, uint32_t cnt,
                            const float *restrict xt, const float *restrict w, const float *restrict P, float Pi,
                            float xi, float yi, float zi, float s[3], const int per)
{
    FLOE_ROW_GRAD_SUM(s, w[j] * (Pi + P[j]));
}

/* s += sum_b (P_i + P_b) grad W_ib (Adami's walls, walls.c: P_b = p_b / rho_b^2) */
FLOE_ROW_FN void row_grad_p_wall(const floe_kconst *kc, const uint32_t *restrict id, uint32_t cnt,
                                 const float *restrict xt, const float *restrict P, float Pi, float xi, float yi,
                                 float zi, float s[3], const int per)
{
    FLOE_ROW_GRAD_SUM(s, Pi + P[j]);
}

/* tr(-sum_j V_j x_ij (x) grad W_ij) = -sum_j V_j F_ij r_ij^2 over a fluid
 * row (V_j = m_j / rho_j) or, with rho = NULL, a boundary row of volumes
 * w (or, with w = NULL, every volume vol) */
FLOE_ROW_FN float row_trace(const floe_kconst *kc, const uint32_t *restrict id, uint32_t cnt,
                            const float *restrict xt, const float *restrict w, const float *restrict rho, float vol,
                            float xi, float yi, float zi, const int per)
{
    float s = 0.0f;
    if (rho) {
#pragma omp simd reduction(+ : s)
        for (uint32_t k = 0; k < cnt; k++) {
            FLOE_X_IJ(per);
            s -= w[j] / rho[j] * floe_kdw(kc, r2) * r2;
        }
    } else if (w) {
#pragma omp simd reduction(+ : s)
        for (uint32_t k = 0; k < cnt; k++) {
            FLOE_X_IJ(per);
            s -= w[j] * floe_kdw(kc, r2) * r2;
        }
    } else {
#pragma omp simd reduction(+ : s)
        for (uint32_t k = 0; k < cnt; k++) {
            FLOE_X_IJ(per);
            s -= vol * floe_kdw(kc, r2) * r2;
        }
    }
    return s;
}

/* Pressure force and XSPH in one walk of a fluid row (pressure_force with
 * xsph > 0): g += sum_j m_j (P_i + P_j) grad W_ij, and sv the XSPH sum of
 * floe_row_xsph, pair term floe_xsph_pair. */
FLOE_ROW_FN void row_grad_xsph(const floe_kconst *kc, const uint32_t *restrict id, uint32_t cnt,
                               const float *restrict xt, const float *restrict m, const float *restrict P,
                               const float *restrict rho, const float *restrict v, float Pi, float rhoi,
                               const float vi[3], float xi, float yi, float zi, float g3[3], float sv[3],
                               const int per)
{
    float gx = 0.0f, gy = 0.0f, gz = 0.0f, sx = 0.0f, sy = 0.0f, sz = 0.0f;
    const float ui = vi[0], wi = vi[1], ti = vi[2];
#pragma omp simd reduction(+ : gx, gy, gz, sx, sy, sz)
    for (uint32_t k = 0; k < cnt; k++) {
        FLOE_X_IJ(per);
        const float g = m[j] * (Pi + P[j]) * floe_kdw(kc, r2);
        gx += g * dx;
        gy += g * dy;
        gz += g * dz;
        const float c = floe_xsph_pair(kc, m[j], rhoi, rho[j], r2);
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
FLOE_ROW_FN void row_artificial(const floe_kconst *kc, const uint32_t *restrict id, uint32_t cnt,
                                const float *restrict xt, const float *restrict m, const float *restrict rho,
                                const float *restrict v, float xi, float yi, float zi, float rhoi,
                                const float vi[3], float eps, float s[3], const int per)
{
    const float ui = vi[0], wi = vi[1], ti = vi[2];
    if (v) /* Pi_ij's weight; v_ij . x_ij inline */
        FLOE_ROW_GRAD_SUM(s, m[j] * floe_neg((ui - v[3 * j]) * dx + (wi - v[3 * j + 1]) * dy +
                                             (ti - v[3 * j + 2]) * dz) /
                                 ((rhoi + rho[j]) * (r2 + eps)));
    else { /* walls at rest, rho_b = rho_i: the 1 / (2 rho_i) outside the sum */
        float sb[3] = {0.0f, 0.0f, 0.0f};
        FLOE_ROW_GRAD_SUM(sb, m[j] * floe_neg(ui * dx + wi * dy + ti * dz) / (r2 + eps));
        const float inv = 1.0f / (2.0f * rhoi);
        s[0] += sb[0] * inv;
        s[1] += sb[1] * inv;
        s[2] += sb[2] * inv;
    }
}

/* ---- pressure ------------------------------------------------------------ */

enum { PR_STIFFNESS, PR_SPEED, PR_GAMMA, PR_COURANT, PR_CLAMP };

static void pressure_c(floe_ctx *ctx, const floe_fluid *f, const wcsph_eos *e, const float *restrict rho,
                       float *restrict p)
{
    const float Bf = e->B, inv_rho0 = e->inv_rho0, gf = e->gamma, lo = e->lo;
    uint32_t n;
    int part;
    const uint32_t *rows = floe_rows(api, ctx, f->set, f->info.n, &n, &part);
    if (rows) { /* a part of the particles (api->rows): the same values */
#pragma omp parallel for schedule(static)
        for (uint32_t k = 0; k < n; k++) {
            const uint32_t i = rows[k];
            const float r = rho[i] * inv_rho0, r2 = r * r, r3 = r2 * r;
            const float v = e->mode == 7   ? Bf * (r3 * r3 * r - 1.0f)
                            : e->mode == 1 ? Bf * (r - 1.0f)
                                           : Bf * (powf(r, gf) - 1.0f);
            p[i] = v > lo ? v : lo;
        }
        return;
    }
    if (e->mode == 7) {
#pragma omp parallel for simd schedule(static)
        for (uint32_t i = 0; i < n; i++) {
            const float r = rho[i] * inv_rho0;
            const float r2 = r * r, r3 = r2 * r;
            const float v = Bf * (r3 * r3 * r - 1.0f);
            p[i] = v > lo ? v : lo;
        }
    } else if (e->mode == 1) {
#pragma omp parallel for simd schedule(static)
        for (uint32_t i = 0; i < n; i++) {
            const float v = Bf * (rho[i] * inv_rho0 - 1.0f);
            p[i] = v > lo ? v : lo;
        }
    } else {
#pragma omp parallel for schedule(static)
        for (uint32_t i = 0; i < n; i++) {
            const float v = Bf * (powf(rho[i] * inv_rho0, gf) - 1.0f);
            p[i] = v > lo ? v : lo;
        }
    }
}

/* the Tait equation of state of every fluid set, on the C or the device path */
static int pressure(const floe_stage_call *call, int cl)
{
    floe_ctx *ctx = call->ctx;
    const floe_sim_info *si = api->sim(ctx);
    const double stiffness = call->param[PR_STIFFNESS].f;
    const double c0 = call->param[PR_SPEED].f;
    const double gamma = call->param[PR_GAMMA].f;
    const double courant = call->param[PR_COURANT].f;
    const int clamp = call->param[PR_CLAMP].b;
    wcsph_state *ws = call->state;
    floe_fluid f[FLOE_MAX_SETS];
    int nf, st;

    if (!(gamma >= 1.0))
        return api->fail(ctx, FLOE_ERR_ARG, "gamma must be >= 1 (got %g)", gamma);
    if ((st = floe_fluid_sets(api, ctx, f, &nf, NULL)) != FLOE_OK)
        return st;
    if (!ws)
        return api->fail(ctx, FLOE_ERR, "module state missing");
    double dt_max = INFINITY;
    ws->nsound = 0;
    for (int s = 0; s < nf; s++) {
        const double rho0 = f[s].info.rest_density;
        const double B = stiffness > 0.0 ? stiffness : rho0 * c0 * c0 / gamma;
        const double c = sqrt(B * gamma / rho0);
        if (!(B > 0.0))
            return api->fail(ctx, FLOE_ERR_ARG, "set '%s': stiffness is 0 (give stiffness or speed_of_sound > 0)",
                             f[s].info.name);
        ws->sound_set[ws->nsound] = f[s].set;
        ws->sound[ws->nsound++] = stiffness > 0.0 ? c : c0;
        if (courant > 0.0 && c > 0.0 && courant * si->spacing / c < dt_max)
            dt_max = courant * si->spacing / c;
        if (f[s].info.n == 0)
            continue;
        const float gf = (float)gamma;
        const wcsph_eos e = {(float)B, (float)(1.0 / rho0), gf, clamp ? 0.0f : -INFINITY,
                             gf == 7.0f ? 7 : gf == 1.0f ? 1 : 0};
        if (s == 0) { /* the wall pressure's (walls.c) */
            ws->eos0_B = e.B, ws->eos0_inv_rho0 = e.inv_rho0, ws->eos0_gamma = e.gamma, ws->eos0_lo = e.lo;
            ws->eos_valid = 1;
        }
        if (cl) {
            if ((st = wcsph_cl_pressure(ctx, &f[s], &e)) != FLOE_OK)
                return st;
            continue;
        }
        const float *rho = floe_read_of(api, ctx, &f[s], "rho", FLOE_F32);
        float *p = rho ? floe_attr_of(api, ctx, &f[s], "p", FLOE_F32) : NULL;
        if (!p)
            return FLOE_ERR_ARG;
        pressure_c(ctx, &f[s], &e, rho, p);
    }
    if (dt_max < INFINITY)
        api->dt_limit(ctx, dt_max);
    return FLOE_OK;
}

static int st_pressure(const floe_stage_call *call) { return pressure(call, 0); }
static int st_pressure_cl(const floe_stage_call *call) { return pressure(call, 1); }

/* ---- pressure force ------------------------------------------------------ */

enum { PF_XSPH, PF_WALLS, PF_GRAD_CORR };

static wcsph_pf decode_pf(const floe_stage_call *call)
{
    const floe_sim_info *si = api->sim(call->ctx);
    const floe_kconst kc = floe_kconst_make(si);
    /* XSPH in the same pass, the factor of sph.xsph */
    const float xsph = (float)call->param[PF_XSPH].f;
    const wcsph_pf pf = {xsph > 0.0f && si->dt > 0.0 ? (float)(2.0 * xsph / si->dt) * kc.sigma : 0.0f};
    return pf;
}

/* P = p / rho^2 of every fluid particle, once per call, into ws->prho2;
 * ghosts_only: of the ghosts alone (the second call of a split: only
 * theirs changed since the first) */
static int prho2(floe_ctx *ctx, wcsph_state *ws, const floe_fluid *f, int nf, int ghosts_only)
{
    const size_t total = nf ? f[nf - 1].off + f[nf - 1].info.n : 0;
    int st = floe_scratch(api, ctx, &ws->prho2, &ws->cap, total);
    if (st != FLOE_OK)
        return st;
    for (int s = 0; s < nf; s++) {
        const uint32_t n = f[s].info.n;
        if (n == 0)
            continue;
        const float *restrict rho = floe_read_of(api, ctx, &f[s], "rho", FLOE_F32);
        const float *restrict p = rho ? floe_read_of(api, ctx, &f[s], "p", FLOE_F32) : NULL;
        float *restrict P = ws->prho2 + f[s].off;
        if (!p)
            return FLOE_ERR_ARG;
        const uint32_t from = ghosts_only ? floe_owned(api, ctx, f[s].set, n) : 0;
#pragma omp parallel for simd schedule(static)
        for (uint32_t i = from; i < n; i++)
            P[i] = p[i] / (rho[i] * rho[i]);
    }
    return FLOE_OK;
}

/* the ghosts' records again (the second call of a split: their P and rho
 * were refreshed); the owned particles' stay as the first call packed them */
static int wcsph_repack_ghosts(floe_ctx *ctx, wcsph_state *ws, const floe_fluid *f, int nf, int with_v, int *packed)
{
    *packed = 0;
#ifdef FLOE_SPH_AVX2
    if (floe_kconst_make(api->sim(ctx)).periodic || nf == 0 || !ws->rec.A)
        return FLOE_OK;
    for (int s = 0; s < nf; s++) {
        const uint32_t n = f[s].info.n, o = floe_owned(api, ctx, f[s].set, n);
        const float *x = api->attr_read(ctx, f[s].set, "x", FLOE_VEC3), *m = api->attr_read(ctx, f[s].set, "m", FLOE_F32);
        const float *rho = api->attr_read(ctx, f[s].set, "rho", FLOE_F32);
        const float *v = with_v ? api->attr_read(ctx, f[s].set, "v", FLOE_VEC3) : NULL;
        if (!x || !m || !rho || (with_v && !v))
            return FLOE_ERR_ARG;
        if (o < n)
            floe_pack_set(&ws->rec, f[s].off + o, n - o, x + 3 * (size_t)o, m + o, ws->prho2 + f[s].off + o, rho + o,
                          v ? v + 3 * (size_t)o : NULL, ws->rec.umass[s] > 0.0f);
    }
    *packed = 1;
#else
    (void)ctx, (void)ws, (void)f, (void)nf, (void)with_v;
#endif
    return FLOE_OK;
}

static int st_pressure_force(const floe_stage_call *call)
{
    floe_ctx *ctx = call->ctx;
    wcsph_state *ws = call->state;
    const floe_kconst kc = floe_kconst_make(api->sim(ctx));
    const float cv = decode_pf(call).cv;
    floe_fluid f[FLOE_MAX_SETS];
    floe_target t[2 * FLOE_MAX_SETS];
    int nf, nt, st;

    if ((st = floe_fluid_sets(api, ctx, f, &nf, NULL)) != FLOE_OK)
        return st;
    if (!ws)
        return api->fail(ctx, FLOE_ERR, "module state missing");
    const int adami = !strcmp(call->param[PF_WALLS].s ? call->param[PF_WALLS].s : "mirror", "extrapolated");
    const int gcorr = call->param[PF_GRAD_CORR].b;
    /* a split (api->rows): the first call over the particles whose
     * neighbours are all owned, the second over the rest, the ghosts' P
     * and records made again in between. Adami's wall pressure sums over
     * the ghosts too: with it the first call computes nothing and the
     * second every particle. */
    uint32_t cnt0;
    int part = 0;
    if (nf)
        (void)floe_rows(api, ctx, f[0].set, f[0].info.n, &cnt0, &part);
    if (adami && part == 1)
        return FLOE_OK;
    const int again = part == 2 && !adami;
    if ((st = prho2(ctx, ws, f, nf, again)) != FLOE_OK)
        return st;
    if (adami && (st = wcsph_wall_pressure(ctx, ws, &kc, f, nf)) != FLOE_OK)
        return st;
    int packed; /* fluid rows over packed records A = (x, y, z, m), B = (P, rho, vx, vy) */
    const unsigned what = FLOE_PACK_P | FLOE_PACK_RHO | (cv > 0.0f ? FLOE_PACK_V | FLOE_PACK_VZ : 0);
    if (again)
        st = wcsph_repack_ghosts(ctx, ws, f, nf, cv > 0.0f, &packed);
    else
        st = floe_pack_fluids(api, ctx, &ws->rec, &kc, f, nf, what, ws->prho2, &packed);
    if (st != FLOE_OK)
        return st;
    for (int s = 0; s < nf; s++) {
        const uint32_t n = f[s].info.n;
        if (n == 0)
            continue;
        const unsigned needs =
            FLOE_WITH_BOUNDARY | (cv > 0.0f ? FLOE_NEED_RHO | FLOE_NEED_V : 0) | (gcorr ? FLOE_NEED_RHO : 0);
        if ((st = floe_targets(api, ctx, &f[s], f, nf, needs, ws->prho2, packed ? ws->rec.umass : NULL, t, &nt)) !=
            FLOE_OK)
            return st;
        const float *restrict xs = api->attr_read(ctx, f[s].set, "x", FLOE_VEC3);
        float *restrict a = floe_attr_of(api, ctx, &f[s], "a", FLOE_VEC3);
        const float *restrict vs = cv > 0.0f ? floe_read_of(api, ctx, &f[s], "v", FLOE_VEC3) : NULL;
        const float *restrict rhos = cv > 0.0f ? floe_read_of(api, ctx, &f[s], "rho", FLOE_F32) : NULL;
        if (!a || (cv > 0.0f && (!vs || !rhos)))
            return FLOE_ERR_ARG;
        const float *restrict Ps = ws->prho2 + f[s].off;
        const float rho0 = f[s].info.rest_density;
        const float vlat = kc.dim == 2 ? api->sim(ctx)->spacing * api->sim(ctx)->spacing
                                       : api->sim(ctx)->spacing * api->sim(ctx)->spacing * api->sim(ctx)->spacing;
        const float *wallP[2 * FLOE_MAX_SETS]; /* P_b of static walls (walls = "extrapolated"), else NULL */
        for (int b = 0; b < nt; b++)
            wallP[b] = adami && t[b].boundary ? wcsph_wall_of(ws, t[b].set) : NULL;

        uint32_t cnt;
        int prt;
        const uint32_t *rows = adami ? NULL : floe_rows(api, ctx, f[s].set, n, &cnt, &prt);
        if (!rows)
            cnt = n;
#pragma omp parallel for schedule(dynamic, 256) firstprivate(t)
        for (uint32_t k = 0; k < cnt; k++) {
            const uint32_t i = rows ? rows[k] : k;
            floe_prefetch_rows(t, nt, i, n);
            const float xi = xs[3 * i], yi = xs[3 * i + 1], zi = xs[3 * i + 2];
            const float Pi = Ps[i];
            float af[3] = {0.0f, 0.0f, 0.0f}, ab[3] = {0.0f, 0.0f, 0.0f}, sv[3] = {0.0f, 0.0f, 0.0f};
            float aw[3] = {0.0f, 0.0f, 0.0f};
            for (int b = 0; b < nt; b++) {
                const floe_target *tg = &t[b];
                if (tg->boundary && wallP[b]) /* sum_b (P_i + P_b) grad W_ib */
                    FLOE_ROW_CALL(kc.periodic, row_grad_p_wall, &kc, FLOE_ROW(tg, i), tg->x, wallP[b], Pi, xi, yi, zi,
                                  aw);
                else if (tg->boundary) /* sum_b V_b grad W_ib */
                    FLOE_ROW_CALL(kc.periodic, floe_row_grad, &kc, FLOE_ROW(tg, i), tg->x, tg->mass, xi, yi, zi, ab);
#ifdef FLOE_SPH_AVX2
                else if (packed) {
                    const float *A = ws->rec.A + 4 * tg->off, *B = ws->rec.B + 4 * tg->off;
                    const float vi[3] = {cv > 0.0f ? vs[3 * i] : 0.0f, cv > 0.0f ? vs[3 * i + 1] : 0.0f,
                                         cv > 0.0f ? vs[3 * i + 2] : 0.0f};
                    if (cv > 0.0f && tg->umass > 0.0f)
                        row_pf_avx2(&kc, FLOE_ROW(tg, i), A, B, tg->v, Pi, rhos[i], vi, xi, yi, zi, af, sv, 1, 1,
                                    tg->umass);
                    else if (cv > 0.0f)
                        row_pf_avx2(&kc, FLOE_ROW(tg, i), A, B, tg->v, Pi, rhos[i], vi, xi, yi, zi, af, sv, 1, 0,
                                    0.0f);
                    else
                        row_pf_avx2(&kc, FLOE_ROW(tg, i), A, B, NULL, Pi, 0.0f, vi, xi, yi, zi, af, sv, 0, 0, 0.0f);
                }
#endif
                else if (cv > 0.0f) {
                    const float vi[3] = {vs[3 * i], vs[3 * i + 1], vs[3 * i + 2]};
                    FLOE_ROW_CALL(kc.periodic, row_grad_xsph, &kc, FLOE_ROW(tg, i), tg->x, tg->mass, tg->aux,
                                  tg->rho, tg->v, Pi, rhos[i], vi, xi, yi, zi, af, sv);
                } else /* sum_j m_j (P_i + P_j) grad W_ij */
                    FLOE_ROW_CALL(kc.periodic, row_grad_p, &kc, FLOE_ROW(tg, i), tg->x, tg->mass, tg->aux, Pi, xi,
                                  yi, zi, af);
            }
            if (cv > 0.0f) { /* as a preceding sph.xsph{alpha = xsph} would add */
                a[3 * i] += cv * sv[0];
                a[3 * i + 1] += cv * sv[1];
                a[3 * i + 2] += cv * sv[2];
            }
            /* boundary: rho0_i V_b (P_i + P_b) with P_b = P_i (mirrored), or
             * static walls with walls = "extrapolated": rho0_i d^dim (P_i + P_b)
             * with Adami's P_b (walls.c) */
            const float cb = 2.0f * rho0 * Pi, cw = rho0 * vlat;
            float gam = 1.0f; /* gradient_correction: dim / tr M_i in [0.9, 1/0.9], else 1 or 0.9 */
            if (gcorr) {
                float tr = 0.0f;
                for (int b = 0; b < nt; b++) {
                    const floe_target *tg = &t[b];
                    tr += FLOE_ROW_CALL(kc.periodic, row_trace, &kc, FLOE_ROW(tg, i), tg->x,
                                        tg->boundary && wallP[b] ? NULL : tg->mass, tg->boundary ? NULL : tg->rho,
                                        vlat, xi, yi, zi);
                }
                gam = tr > 0.0f ? (float)kc.dim / tr : 1.0f;
                gam = gam > 1.0f / 0.9f ? 1.0f : gam < 0.9f ? 0.9f : gam;
            }
            a[3 * i] -= gam * (af[0] + cb * ab[0] + cw * aw[0]);
            a[3 * i + 1] -= gam * (af[1] + cb * ab[1] + cw * aw[1]);
            a[3 * i + 2] -= gam * (af[2] + cb * ab[2] + cw * aw[2]);
        }
    }
    return FLOE_OK;
}

static int st_pressure_force_cl(const floe_stage_call *call)
{
    const wcsph_pf pf = decode_pf(call);
    const int adami = call->param[PF_WALLS].s && !strcmp(call->param[PF_WALLS].s, "extrapolated");
    if (adami || call->param[PF_GRAD_CORR].b) { /* walls_cl.c */
        if (!call->state)
            return api->fail(call->ctx, FLOE_ERR, "module state missing");
        return wcsph_cl_pressure_force_walls(call->ctx, call->state, &pf, adami, call->param[PF_GRAD_CORR].b);
    }
    return wcsph_cl_pressure_force(call->ctx, &pf);
}

/* ---- artificial viscosity ------------------------------------------------ */

enum { VI_KIND, VI_ALPHA, VI_BOUNDARY_ALPHA, VI_SPEED };

/* The speed of sound of fluid set f: the one the pressure stage's equation
 * of state gave it. The deprecated speed_of_sound parameter, when given,
 * must agree with it. */
static int sound_of(const floe_stage_call *call, wcsph_state *ws, const floe_fluid *f, float *c)
{
    floe_ctx *ctx = call->ctx;
    int k = 0;
    while (k < ws->nsound && ws->sound_set[k].id != f->set.id)
        k++;
    if (k == ws->nsound)
        return api->fail(ctx, FLOE_ERR_ARG,
                         "wcsph.viscosity{kind = \"artificial\"} takes the speed of sound of set '%s' from the "
                         "equation of state: put 'wcsph.pressure' before it in the step",
                         f->info.name);
    *c = (float)ws->sound[k];
    const double given = call->param[VI_SPEED].f;
    if (given > 0.0 && (float)given != *c)
        return api->fail(ctx, FLOE_ERR_ARG,
                         "wcsph.viscosity: speed_of_sound = %g differs from the %g m/s of wcsph.pressure for set "
                         "'%s'; leave it out (the equation of state sets it)",
                         given, ws->sound[k], f->info.name);
    if (given > 0.0 && !ws->sound_param_logged) {
        ws->sound_param_logged = 1;
        api->log(ctx, FLOE_LOG_WARN, "wcsph.viscosity: speed_of_sound is deprecated (wcsph.pressure sets it); "
                                     "leave it out");
    }
    return FLOE_OK;
}

/* Factors in front of the row sums:
 * a_i -= sum_j m_j Pi_ij grad W_ij
 *      = 2 alpha H c sum_j m_j min(v_ij.x_ij, 0) / ((rho_i+rho_j)(r^2+eps)) grad W_ij,
 * against the boundary with boundary_alpha and the mass rho0_i V_b. */
static wcsph_visc decode_visc(const floe_stage_call *call, const floe_kconst *kc, const floe_fluid *f, float c0)
{
    const float alpha = (float)call->param[VI_ALPHA].f, balpha = (float)call->param[VI_BOUNDARY_ALPHA].f;
    const wcsph_visc vi = {2.0f * alpha * kc->H * c0, 2.0f * balpha * kc->H * c0 * f->info.rest_density,
                           0.01f * kc->H * kc->H, balpha > 0.0f};
    return vi;
}

/* the artificial viscosity of fluid set fs (C path) */
static void visc_c(floe_ctx *ctx, wcsph_state *ws, const floe_kconst *pkc, const floe_fluid *fs,
                   const floe_target *t, int nt, int packed, const wcsph_visc *vi)
{
    const floe_kconst kc = *pkc;
    const uint32_t n = fs->info.n;
    const float *restrict xs = api->attr_read(ctx, fs->set, "x", FLOE_VEC3);
    const float *restrict vs = api->attr_read(ctx, fs->set, "v", FLOE_VEC3);
    const float *restrict rhos = api->attr_read(ctx, fs->set, "rho", FLOE_F32);
    float *restrict a = api->attr(ctx, fs->set, "a", FLOE_VEC3);
    const float cf = vi->cf, cbi = vi->cb, eps = vi->eps;
    (void)ws, (void)packed;

#pragma omp parallel for schedule(static)
    for (uint32_t i = 0; i < n; i++) {
        FLOE_FORCE_PARTICLE(t, nt, i, n, xs, vs, rhos);
        for (int b = 0; b < nt; b++) {
            const floe_target *tg = &t[b];
            if (tg->boundary) /* at rest (v_b = 0), mass rho0_i V_b, density mirrored (rho_b = rho_i) */
                FLOE_ROW_CALL(kc.periodic, row_artificial, &kc, FLOE_ROW(tg, i), tg->x, tg->mass, NULL, NULL, xi, yi,
                              zi, rhoi, vi3, eps, ab);
#ifdef FLOE_SPH_AVX2
            else if (packed)
                row_art_avx2(&kc, FLOE_ROW(tg, i), ws->rec.A + 4 * tg->off, ws->rec.B + 4 * tg->off, tg->v, xi, yi,
                             zi, rhoi, vi3, eps, af);
#endif
            else
                FLOE_ROW_CALL(kc.periodic, row_artificial, &kc, FLOE_ROW(tg, i), tg->x, tg->mass, tg->rho, tg->v, xi,
                              yi, zi, rhoi, vi3, eps, af);
        }
        a[3 * i] += cf * af[0] + cbi * ab[0];
        a[3 * i + 1] += cf * af[1] + cbi * ab[1];
        a[3 * i + 2] += cf * af[2] + cbi * ab[2];
    }
}

/* kind = "artificial" (kind = "xsph" runs sph.xsph: replaced_if) */
static int viscosity(const floe_stage_call *call, int cl)
{
    floe_ctx *ctx = call->ctx;
    wcsph_state *ws = call->state;
    const floe_kconst kc = floe_kconst_make(api->sim(ctx));
    floe_fluid f[FLOE_MAX_SETS];
    floe_target t[2 * FLOE_MAX_SETS];
    int nf, nt, st;

    if (call->param[VI_ALPHA].f == 0.0 && call->param[VI_BOUNDARY_ALPHA].f == 0.0)
        return FLOE_OK;
    if (!ws)
        return api->fail(ctx, FLOE_ERR, "module state missing");
    if ((st = floe_fluid_sets(api, ctx, f, &nf, NULL)) != FLOE_OK)
        return st;
    /* the C path's fluid rows over packed records A = (x, y, z, m), B = (0, rho, vx, vy) */
    int packed = 0;
    if (!cl && (st = floe_pack_fluids(api, ctx, &ws->rec, &kc, f, nf, FLOE_PACK_RHO | FLOE_PACK_V, NULL, &packed)) !=
                   FLOE_OK)
        return st;
    for (int s = 0; s < nf; s++) {
        if (f[s].info.n == 0)
            continue;
        float c0 = 0.0f;
        if ((st = sound_of(call, ws, &f[s], &c0)) != FLOE_OK)
            return st;
        const wcsph_visc vi = decode_visc(call, &kc, &f[s], c0);
        if (cl) {
            if ((st = wcsph_cl_viscosity(ctx, &f[s], &vi)) != FLOE_OK)
                return st;
            continue;
        }
        const unsigned needs = FLOE_NEED_RHO | FLOE_NEED_V | (vi.boundary ? FLOE_WITH_BOUNDARY : 0);
        if ((st = floe_targets(api, ctx, &f[s], f, nf, needs, NULL, NULL, t, &nt)) != FLOE_OK)
            return st;
        if (!floe_attr_of(api, ctx, &f[s], "a", FLOE_VEC3))
            return FLOE_ERR_ARG;
        visc_c(ctx, ws, &kc, &f[s], t, nt, packed, &vi);
    }
    return FLOE_OK;
}

static int st_viscosity(const floe_stage_call *call) { return viscosity(call, 0); }
static int st_viscosity_cl(const floe_stage_call *call) { return viscosity(call, 1); }

/* ---- descriptors --------------------------------------------------------- */

#define FLUID FLOE_ATTR_FLUID
#define BOUND FLOE_ATTR_BOUND

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
               "sph.xsph{alpha = xsph} before this stage, one walk of the lists instead of two); 0 = none" },
    [PF_WALLS] = FLOE_PARAM_S("walls", "mirror", "mirror|extrapolated",
        "pressure of boundary particles: mirror = the fluid particle's own (Akinci et al. 2012, p_b = p_i), "
        "extrapolated = Adami et al. 2012's wall pressure from the fluid around each static wall particle, the "
        "hydrostatic head included (moving boundaries keep mirror)"),
    [PF_GRAD_CORR] = FLOE_PARAM_B("gradient_correction", 0,
        "scale particle i's pressure acceleration by gamma_i = dim / tr(-sum_j V_j x_ij grad W_ij^T) (fluid and "
        "boundary neighbours; walls = extrapolated: V = d^dim) where it lies in [0.9, 1/0.9], 0.9 below; 1 above "
        "(a truncated kernel at the free surface, not a packing error): hydrostatic pressure consistent with "
        "rho0 g h; one more neighbour walk"),
    {0},
};

static const floe_attr_desc pressure_force_attrs[] = {
    FLOE_ATTRS_PAIR_READ,
    FLUID("p", FLOE_F32, FLOE_READ),
    FLUID("a", FLOE_VEC3, FLOE_READ | FLOE_WRITE | FLOE_OWN), /* adds to its own a only */
    {0},
};

static const floe_param_desc viscosity_params[] = {
    [VI_KIND] = { FLOE_SIZED(floe_param_desc), .name = "kind", .type = FLOE_PARAM_STRING,
        .def_str = "xsph", .choices = "xsph|artificial", .unit = "",
        .doc = "artificial: Monaghan 1992, a_i -= sum_j m_j Pi_ij grad W_ij on approaching pairs; "
               "xsph (deprecated, the default for compatibility): runs sph.xsph" },
    [VI_ALPHA] = { FLOE_SIZED(floe_param_desc), .name = "alpha", .type = FLOE_PARAM_FLOAT,
        .def = 0.01, .min = 0, .max = 10, .unit = "",
        .doc = "viscosity coefficient between fluid particles" },
    [VI_BOUNDARY_ALPHA] = { FLOE_SIZED(floe_param_desc), .name = "boundary_alpha", .type = FLOE_PARAM_FLOAT,
        .def = 0, .min = 0, .max = 10, .unit = "",
        .doc = "coefficient against boundary particles (at rest, mass rho0 V_b); 0 = free slip" },
    [VI_SPEED] = { FLOE_SIZED(floe_param_desc), .name = "speed_of_sound", .type = FLOE_PARAM_FLOAT,
        .def = 0, .min = 0, .max = 1e6, .unit = "m/s",
        .doc = "deprecated: c in Pi_ij is the speed of sound of wcsph.pressure's equation of state; "
               "a value given must equal it" },
    {0},
};

static const floe_attr_desc viscosity_attrs[] = {FLOE_ATTRS_FORCE, {0}};

static const floe_stage_desc stages[] = {
    { FLOE_SIZED(floe_stage_desc), .name = "density", .doc = "deprecated: runs sph.density",
      .replaced_by = "sph.density" },
    { FLOE_SIZED(floe_stage_desc), .name = "continuity",
      .doc = "density by the continuity equation with delta-SPH density diffusion (Molteni & Colagrossi 2009, "
             "Antuono et al. 2010), in place of sph.density (after 'neighbours', before 'wcsph.pressure')",
      .run = wcsph_st_continuity, .run_cl = wcsph_st_continuity_cl, .params = wcsph_continuity_params,
      .attrs = wcsph_continuity_attrs },
    { FLOE_SIZED(floe_stage_desc), .name = "pressure",
      .doc = "Tait equation of state p = B((rho/rho0)^gamma - 1); proposes the acoustic dt limit",
      .run = st_pressure, .run_cl = st_pressure_cl, .params = pressure_params, .attrs = pressure_attrs,
      .pointwise = 1, .rows = 1 },
    { FLOE_SIZED(floe_stage_desc), .name = "viscosity",
      .doc = "Monaghan artificial viscosity with the speed of sound of 'wcsph.pressure', added to a (after "
             "'gravity'); kind = \"xsph\" (deprecated) runs sph.xsph",
      .run = st_viscosity, .run_cl = st_viscosity_cl, .params = viscosity_params, .attrs = viscosity_attrs,
      .replaced_by = "sph.xsph", .replaced_if = "kind=xsph" },
    { FLOE_SIZED(floe_stage_desc), .name = "pressure_force",
      .doc = "symmetric pressure acceleration with Akinci boundaries (pressure mirroring), added to a; "
             "optionally XSPH viscosity in the same pass",
      .run = st_pressure_force, .run_cl = st_pressure_force_cl, .params = pressure_force_params,
      .attrs = pressure_force_attrs, .rows = 1 },
    {0},
};

FLOE_SPH_MODULE(wcsph, .version = "1.2.0", .stages = stages, .init = wcsph_init, .fini = wcsph_fini,
                .summary = "Weakly compressible SPH (Becker & Teschner 2007): Tait equation of state, "
                         "symmetric pressure force, artificial viscosity, Akinci boundaries")
