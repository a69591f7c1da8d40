/* Floe module "wcsph", stage "continuity": the density by the continuity
 * equation with delta-SPH density diffusion (Molteni & Colagrossi 2009,
 * with the renormalised density gradient of Antuono et al. 2010), in place
 * of the density sum (sph.density):
 *
 *   d rho_i / dt = sum_j m_j (v_i - v_j) . grad W_ij
 *                + rho0 sum_b V_b v_i . grad W_ib                      (walls at rest)
 *                + delta h c0 sum_j V_j psi_ij . grad W_ij
 *   psi_ij = 2 (rho_j - rho_i) (x_j - x_i) / |x_ij|^2 - (<grad rho>_i + <grad rho>_j)
 *   <grad rho>_i = L_i sum_j V_j (rho_j - rho_i) grad W_ij,
 *   L_i = [ sum_j V_j (x_j - x_i) (x) grad W_ij ]^-1
 *
 * j runs over the neighbours in every fluid set, b over those in every
 * boundary set, V_j = m_j / rho_j, h = H / 2 the smoothing length (H the
 * support radius, the cubic spline's 2h), c0 the speed of sound of
 * wcsph.pressure's equation of state. The first line is the time
 * derivative of the density sum (boundary particles count as fluid of mass
 * rho0 V_b, as in sph.density). The diffusion term is zero for a density
 * that varies linearly in space (the hydrostatic one): with grad W_ij =
 * F_ij x_ij it reads -F_ij [2 (rho_j - rho_i) + (<grad rho>_i + <grad
 * rho>_j) . x_ij], which cancels for rho_j - rho_i = -k . x_ij, <grad rho> =
 * k. Where L_i cannot be inverted (det < 1e-2 of the full kernel's 1: a
 * particle with few neighbours, spray) <grad rho>_i = 0 (Molteni's term).
 * The diffusion moves density between pairs antisymmetrically: sum_i V_i d
 * rho_i / dt has no diffusion part.
 *
 * rho then steps with the step's dt, rho_i += dt d rho_i / dt, from the
 * positions and velocities the step starts with; put the stage where
 * sph.density would be (after 'neighbours', before 'wcsph.pressure'). The
 * density starts at the value the particles were made with (rho0). The
 * speed of sound is the one wcsph.pressure's equation of state gave each
 * set at the previous step; at the very first step, before any
 * wcsph.pressure ran, the density is uniform and the diffusion term is
 * zero, so it is left out (a second call without one is an error). */
#include "wcsph.h"

#include <math.h>

enum { CO_DELTA };

/* ---- the renormalised density gradient of one particle ----------------------
 * M = -sum_j V_j F_ij x_ij (x) x_ij (symmetric: 6 entries xx yy zz xy xz
 * yz), g = sum_j V_j (rho_j - rho_i) F_ij x_ij; <grad rho> = M^-1 g. */
FLOE_ROW_FN void row_grad_rho(const floe_kconst *kc, const uint32_t *restrict id, uint32_t cnt,
                              const float *restrict xt, const float *restrict m, const float *restrict rho,
                              float xi, float yi, float zi, float rhoi, float M[6], float g[3], const int per)
{
    float mxx = 0.0f, myy = 0.0f, mzz = 0.0f, mxy = 0.0f, mxz = 0.0f, myz = 0.0f;
    float gx = 0.0f, gy = 0.0f, gz = 0.0f;
#pragma omp simd reduction(+ : mxx, myy, mzz, mxy, mxz, myz, gx, gy, gz)
    for (uint32_t k = 0; k < cnt; k++) {
        FLOE_X_IJ(per);
        const float VF = m[j] / rho[j] * floe_kdw(kc, r2);
        mxx -= VF * dx * dx;
        myy -= VF * dy * dy;
        mzz -= VF * dz * dz;
        mxy -= VF * dx * dy;
        mxz -= VF * dx * dz;
        myz -= VF * dy * dz;
        const float c = VF * (rho[j] - rhoi);
        gx += c * dx;
        gy += c * dy;
        gz += c * dz;
    }
    M[0] += mxx, M[1] += myy, M[2] += mzz, M[3] += mxy, M[4] += mxz, M[5] += myz;
    g[0] += gx, g[1] += gy, g[2] += gz;
}

/* G = M^-1 g by cofactors; 2D: M's z row and column are those of the
 * identity; det below 1e-2: G = 0 */
static inline void solve_grad(const float M[6], const float g[3], int dim, float G[3])
{
    const float xx = M[0], yy = M[1], zz = dim == 2 ? 1.0f : M[2], xy = M[3], xz = dim == 2 ? 0.0f : M[4],
                yz = dim == 2 ? 0.0f : M[5];
    const float c0 = yy * zz - yz * yz, c1 = xz * yz - xy * zz, c2 = xy * yz - xz * yy;
    const float det = xx * c0 + xy * c1 + xz * c2;
    if (!(det > 1e-2f)) {
        G[0] = G[1] = G[2] = 0.0f;
        return;
    }
    const float inv = 1.0f / det;
    const float i11 = xx * zz - xz * xz, i12 = xy * xz - xx * yz, i22 = xx * yy - xy * xy;
    G[0] = inv * (c0 * g[0] + c1 * g[1] + c2 * g[2]);
    G[1] = inv * (c1 * g[0] + i11 * g[1] + i12 * g[2]);
    G[2] = dim == 2 ? 0.0f : inv * (c2 * g[0] + i12 * g[1] + i22 * g[2]);
}

/* ---- d rho / dt over one fluid row ----------------------------------------
 * s[0] += sum_j m_j F_ij (v_i - v_j) . x_ij,
 * s[1] += sum_j V_j (-F_ij) [2 (rho_j - rho_i) + (G_i + G_j) . x_ij] */
FLOE_ROW_FN void row_continuity(const floe_kconst *kc, const uint32_t *restrict id, uint32_t cnt,
                                const float *restrict xt, const float *restrict m, const float *restrict rho,
                                const float *restrict v, const float *restrict G, float xi, float yi, float zi,
                                float rhoi, const float vi[3], const float Gi[3], float s[2], const int per)
{
    float sc = 0.0f, sd = 0.0f;
    const float ui = vi[0], wi = vi[1], ti = vi[2], Gx = Gi[0], Gy = Gi[1], Gz = Gi[2];
#pragma omp simd reduction(+ : sc, sd)
    for (uint32_t k = 0; k < cnt; k++) {
        FLOE_X_IJ(per);
        const float F = floe_kdw(kc, r2);
        sc += m[j] * F * ((ui - v[3 * j]) * dx + (wi - v[3 * j + 1]) * dy + (ti - v[3 * j + 2]) * dz);
        sd -= m[j] / rho[j] * F *
              (2.0f * (rho[j] - rhoi) + (Gx + G[4 * j]) * dx + (Gy + G[4 * j + 1]) * dy + (Gz + G[4 * j + 2]) * dz);
    }
    s[0] += sc;
    s[1] += sd;
}

/* walls at rest: sum_b V_b F_ib v_i . x_ib */
FLOE_ROW_FN float row_continuity_wall(const floe_kconst *kc, const uint32_t *restrict id, uint32_t cnt,
                                      const float *restrict xt, const float *restrict V, float xi, float yi,
                                      float zi, const float vi[3], const int per)
{
    float s = 0.0f;
    const float ui = vi[0], wi = vi[1], ti = vi[2];
#pragma omp simd reduction(+ : s)
    for (uint32_t k = 0; k < cnt; k++) {
        FLOE_X_IJ(per);
        s += V[j] * floe_kdw(kc, r2) * (ui * dx + wi * dy + ti * dz);
    }
    return s;
}

/* ---- packed rows (AVX2) ---------------------------------------------------------
 * The generic rows above gather x, y, z, m, rho and v (and G) of every
 * neighbour from separate arrays and divide m_j / rho_j per pair; here each
 * fluid set is packed once per call into 16-byte records A = (x, y, z, V),
 * V = m / rho, and B = (rho, vx, vy, vz), G is kept as (Gx, Gy, Gz, 0), and
 * eight neighbours cost one 16-byte load per record each and a 4 x 8
 * transpose (<floe/simd.h>), as in the pressure force (rows_avx2.h). The
 * pair terms are the generic rows' with m_j = V_j rho_j and fused
 * multiply-adds; each row's sum has a fixed order (lanes, then lanes 0..7),
 * so results do not depend on the thread count. Lanes past a row's count
 * (the core pads rows to blocks of eight with valid indices) get V = 0. */
#ifdef FLOE_SPH_AVX2
static inline __attribute__((always_inline)) void row_grad_rho8(const floe_kconst *kc, const uint32_t *restrict id,
                                                                uint32_t cnt, const float *restrict A,
                                                                const float *restrict B, float xi, float yi, float zi,
                                                                float rhoi, float M[6], float g[3])
{
    const __m256 vxi = _mm256_set1_ps(xi), vyi = _mm256_set1_ps(yi), vzi = _mm256_set1_ps(zi);
    const __m256 inv_H = _mm256_set1_ps(kc->inv_H), gk = _mm256_set1_ps(kc->g), rmin2 = _mm256_set1_ps(kc->r_min2);
    const __m256 vrhoi = _mm256_set1_ps(rhoi);
    __m256 mxx = _mm256_setzero_ps(), myy = mxx, mzz = mxx, mxy = mxx, mxz = mxx, myz = mxx, gx = mxx, gy = mxx,
           gz = mxx;
    for (uint32_t k = 0; k < cnt; k += 8) {
        __m256 X, Y, Z, V, R, VX, VY, VZ;
        const uint32_t *j = id + k;
        floe_load4x8(A, j, &X, &Y, &Z, &V);
        floe_load4x8(B, j, &R, &VX, &VY, &VZ);
        (void)VX, (void)VY, (void)VZ;
        V = _mm256_and_ps(V, floe_row_mask8(cnt, k));
        const __m256 dx = _mm256_sub_ps(vxi, X), dy = _mm256_sub_ps(vyi, Y), dz = _mm256_sub_ps(vzi, Z);
        const __m256 VF = _mm256_mul_ps(V, floe_dw_r_hat8(gk, inv_H, rmin2, floe_r2_8(dx, dy, dz)));
        const __m256 fx = _mm256_mul_ps(VF, dx), fy = _mm256_mul_ps(VF, dy), fz = _mm256_mul_ps(VF, dz);
        mxx = _mm256_fnmadd_ps(fx, dx, mxx);
        myy = _mm256_fnmadd_ps(fy, dy, myy);
        mzz = _mm256_fnmadd_ps(fz, dz, mzz);
        mxy = _mm256_fnmadd_ps(fx, dy, mxy);
        mxz = _mm256_fnmadd_ps(fx, dz, mxz);
        myz = _mm256_fnmadd_ps(fy, dz, myz);
        const __m256 dr = _mm256_sub_ps(R, vrhoi);
        gx = _mm256_fmadd_ps(dr, fx, gx);
        gy = _mm256_fmadd_ps(dr, fy, gy);
        gz = _mm256_fmadd_ps(dr, fz, gz);
    }
    M[0] += floe_hsum8(mxx), M[1] += floe_hsum8(myy), M[2] += floe_hsum8(mzz);
    M[3] += floe_hsum8(mxy), M[4] += floe_hsum8(mxz), M[5] += floe_hsum8(myz);
    g[0] += floe_hsum8(gx), g[1] += floe_hsum8(gy), g[2] += floe_hsum8(gz);
}

/* row_continuity over packed records; G4 the targets' (Gx, Gy, Gz, 0) */
static inline __attribute__((always_inline)) void row_continuity8(const floe_kconst *kc, const uint32_t *restrict id,
                                                                  uint32_t cnt, const float *restrict A,
                                                                  const float *restrict B, const float *restrict G4,
                                                                  float xi, float yi, float zi, float rhoi,
                                                                  const float vi[3], const float Gi[3], float s[2])
{
    const __m256 vxi = _mm256_set1_ps(xi), vyi = _mm256_set1_ps(yi), vzi = _mm256_set1_ps(zi);
    const __m256 inv_H = _mm256_set1_ps(kc->inv_H), gk = _mm256_set1_ps(kc->g), rmin2 = _mm256_set1_ps(kc->r_min2);
    const __m256 vrhoi = _mm256_set1_ps(rhoi), two = _mm256_set1_ps(2.0f);
    const __m256 ui = _mm256_set1_ps(vi[0]), wi = _mm256_set1_ps(vi[1]), ti = _mm256_set1_ps(vi[2]);
    const __m256 Gx = _mm256_set1_ps(Gi[0]), Gy = _mm256_set1_ps(Gi[1]), Gz = _mm256_set1_ps(Gi[2]);
    __m256 sc = _mm256_setzero_ps(), sd = sc;
    for (uint32_t k = 0; k < cnt; k += 8) {
        __m256 X, Y, Z, V, R, VX, VY, VZ, GX, GY, GZ, G0;
        const uint32_t *j = id + k;
        floe_load4x8(A, j, &X, &Y, &Z, &V);
        floe_load4x8(B, j, &R, &VX, &VY, &VZ);
        floe_load4x8(G4, j, &GX, &GY, &GZ, &G0);
        (void)G0;
        V = _mm256_and_ps(V, floe_row_mask8(cnt, k));
        const __m256 dx = _mm256_sub_ps(vxi, X), dy = _mm256_sub_ps(vyi, Y), dz = _mm256_sub_ps(vzi, Z);
        const __m256 VF = _mm256_mul_ps(V, floe_dw_r_hat8(gk, inv_H, rmin2, floe_r2_8(dx, dy, dz)));
        const __m256 vx = _mm256_fmadd_ps(_mm256_sub_ps(ti, VZ), dz,
                                          _mm256_fmadd_ps(_mm256_sub_ps(wi, VY), dy,
                                                          _mm256_mul_ps(_mm256_sub_ps(ui, VX), dx)));
        sc = _mm256_fmadd_ps(_mm256_mul_ps(VF, R), vx, sc);
        const __m256 psi = _mm256_fmadd_ps(
            _mm256_add_ps(Gz, GZ), dz,
            _mm256_fmadd_ps(_mm256_add_ps(Gy, GY), dy,
                            _mm256_fmadd_ps(_mm256_add_ps(Gx, GX), dx, _mm256_mul_ps(two, _mm256_sub_ps(R, vrhoi)))));
        sd = _mm256_fnmadd_ps(VF, psi, sd);
    }
    s[0] += floe_hsum8(sc);
    s[1] += floe_hsum8(sd);
}

/* A = (x, y, z, m / rho), B = (rho, vx, vy, vz) of every fluid set */
static int pack_cont(floe_ctx *ctx, floe_records *r, const floe_fluid *f, int nf)
{
    if (floe_records_ensure(r, f[nf - 1].off + f[nf - 1].info.n))
        return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory (packed records)");
    for (int s = 0; s < nf; s++) {
        const uint32_t n = f[s].info.n;
        const float *restrict x = api->attr_read(ctx, f[s].set, "x", FLOE_VEC3);
        const float *restrict m = api->attr_read(ctx, f[s].set, "m", FLOE_F32);
        const float *restrict rho = api->attr_read(ctx, f[s].set, "rho", FLOE_F32);
        const float *restrict v = api->attr_read(ctx, f[s].set, "v", FLOE_VEC3);
        float *restrict A = r->A + 4 * f[s].off, *restrict B = r->B + 4 * f[s].off;
        if (n && (!x || !m || !rho || !v))
            return api->fail(ctx, FLOE_ERR_ARG, "set '%s' lacks x, m, rho or v", f[s].info.name);
#pragma omp parallel for simd schedule(static)
        for (uint32_t i = 0; i < n; i++) {
            A[4 * i] = x[3 * i], A[4 * i + 1] = x[3 * i + 1], A[4 * i + 2] = x[3 * i + 2];
            A[4 * i + 3] = m[i] / rho[i];
            B[4 * i] = rho[i], B[4 * i + 1] = v[3 * i], B[4 * i + 2] = v[3 * i + 1], B[4 * i + 3] = v[3 * i + 2];
        }
    }
    return FLOE_OK;
}
#endif

/* ---- the C path --------------------------------------------------------------- */

/* <grad rho> of every particle of fluid set fs into G (4 floats per
 * particle, the last 0: one 16-byte record for the packed rows) */
static void grad_c(floe_ctx *ctx, const floe_kconst *pkc, const floe_fluid *fs, const floe_target *t, int nt,
                   const floe_records *rec, int packed, float *restrict G)
{
    const floe_kconst kc = *pkc;
    const uint32_t n = fs->info.n;
    const float *restrict xs = api->attr_read(ctx, fs->set, "x", FLOE_VEC3);
    const float *restrict rhos = api->attr_read(ctx, fs->set, "rho", FLOE_F32);
    const int nfl = floe_targets_fluid(t, nt);
    (void)rec, (void)packed;
#pragma omp parallel for schedule(dynamic, 256)
    for (uint32_t i = 0; i < n; i++) {
        floe_prefetch_rows(t, nfl, i, n);
        const float xi = xs[3 * i], yi = xs[3 * i + 1], zi = xs[3 * i + 2];
        float M[6] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f}, g[3] = {0.0f, 0.0f, 0.0f};
        for (int b = 0; b < nfl; b++) {
#ifdef FLOE_SPH_AVX2
            if (packed) {
                row_grad_rho8(&kc, FLOE_ROW(&t[b], i), rec->A + 4 * t[b].off, rec->B + 4 * t[b].off, xi, yi, zi,
                              rhos[i], M, g);
                continue;
            }
#endif
            FLOE_ROW_CALL(kc.periodic, row_grad_rho, &kc, FLOE_ROW(&t[b], i), t[b].x, t[b].mass, t[b].rho, xi, yi,
                          zi, rhos[i], M, g);
        }
        float *Gi = G + 4 * (size_t)i;
        solve_grad(M, g, kc.dim, Gi);
        Gi[3] = 0.0f;
    }
}

/* d rho / dt of every particle of fluid set fs into D */
static void drho_c(floe_ctx *ctx, const floe_kconst *pkc, const floe_fluid *fs, const floe_target *t, int nt,
                   const float *grad, const wcsph_cont *co, const floe_records *rec, int packed, float *restrict D)
{
    const floe_kconst kc = *pkc;
    const uint32_t n = fs->info.n;
    const float *restrict xs = api->attr_read(ctx, fs->set, "x", FLOE_VEC3);
    const float *restrict vs = api->attr_read(ctx, fs->set, "v", FLOE_VEC3);
    const float *restrict rhos = api->attr_read(ctx, fs->set, "rho", FLOE_F32);
    const float *restrict Gs = grad + 4 * fs->off;
    const float rho0 = fs->info.rest_density, dc = co->dc;
    static const float zero3[3] = {0.0f, 0.0f, 0.0f};
    (void)rec, (void)packed;
#pragma omp parallel for schedule(dynamic, 256)
    for (uint32_t i = 0; i < n; i++) {
        floe_prefetch_rows(t, nt, i, n);
        const float xi = xs[3 * i], yi = xs[3 * i + 1], zi = xs[3 * i + 2];
        const float vi[3] = {vs[3 * i], vs[3 * i + 1], vs[3 * i + 2]};
        const float *Gi = dc > 0.0f ? Gs + 4 * (size_t)i : zero3;
        float s[2] = {0.0f, 0.0f}, sb = 0.0f;
        for (int b = 0; b < nt; b++) {
            const floe_target *tg = &t[b];
            if (tg->boundary)
                sb += FLOE_ROW_CALL(kc.periodic, row_continuity_wall, &kc, FLOE_ROW(tg, i), tg->x, tg->mass, xi, yi,
                                    zi, vi);
#ifdef FLOE_SPH_AVX2
            else if (packed)
                row_continuity8(&kc, FLOE_ROW(tg, i), rec->A + 4 * tg->off, rec->B + 4 * tg->off,
                                grad + 4 * tg->off, xi, yi, zi, rhos[i], vi, Gi, s);
#endif
            else
                FLOE_ROW_CALL(kc.periodic, row_continuity, &kc, FLOE_ROW(tg, i), tg->x, tg->mass, tg->rho, tg->v,
                              grad + 4 * tg->off, xi, yi, zi, rhos[i], vi, Gi, s);
        }
        D[i] = s[0] + rho0 * sb + dc * s[1];
    }
}

/* ---- the stage ------------------------------------------------------------------ */

static int continuity(const floe_stage_call *call, int cl)
{
    floe_ctx *ctx = call->ctx;
    wcsph_state *ws = call->state;
    const floe_sim_info *si = api->sim(ctx);
    const floe_kconst kc = floe_kconst_make(si);
    const double delta = call->param[CO_DELTA].f;
    floe_fluid f[FLOE_MAX_SETS];
    floe_target t[2 * FLOE_MAX_SETS];
    wcsph_cont co[FLOE_MAX_SETS];
    size_t total;
    int nf, nt = 0, st;

    if (!ws)
        return api->fail(ctx, FLOE_ERR, "module state missing");
    if (!(si->dt > 0.0))
        return FLOE_OK; /* nothing to step over a zero step */
    if ((st = floe_fluid_sets(api, ctx, f, &nf, &total)) != FLOE_OK)
        return st;
    /* the diffusion's factor delta h c0 of each set, h = H / 2 */
    int with_sound = 1;
    for (int s = 0; s < nf; s++) {
        const double c = wcsph_sound_of(ws, f[s].set);
        with_sound &= c > 0.0 || f[s].info.n == 0;
        co[s] = (wcsph_cont){(float)si->dt, (float)(delta * 0.5 * kc.H * c), si->dim};
    }
    if (delta > 0.0 && !with_sound && ws->calls_without_sound++ > 0)
        return api->fail(ctx, FLOE_ERR_ARG,
                         "wcsph.continuity{delta = %g} takes the speed of sound from wcsph.pressure's equation of "
                         "state: put 'wcsph.pressure' in the step (or delta = 0)",
                         delta);
    const int diffuse = delta > 0.0 && with_sound;
    for (int s = 0; s < nf && !diffuse; s++)
        co[s].dc = 0.0f;
    if (cl)
        return wcsph_cl_continuity(ctx, co);
    if ((st = floe_scratch(api, ctx, &ws->grad, &ws->grad_cap, 4 * total)) != FLOE_OK ||
        (st = floe_scratch(api, ctx, &ws->drho, &ws->drho_cap, total)) != FLOE_OK)
        return st;
    int packed = 0; /* the rows over packed records (AVX2, no periodic axis) */
#ifdef FLOE_SPH_AVX2
    if (!kc.periodic && total > 0) {
        if ((st = pack_cont(ctx, &ws->rec, f, nf)) != FLOE_OK)
            return st;
        packed = 1;
    }
#endif
    for (int s = 0; s < nf && diffuse; s++) { /* <grad rho> of every set first: pairs read both ends */
        if (f[s].info.n == 0)
            continue;
        if ((st = floe_targets(api, ctx, &f[s], f, nf, FLOE_NEED_RHO, NULL, NULL, t, &nt)) != FLOE_OK)
            return st;
        grad_c(ctx, &kc, &f[s], t, nt, &ws->rec, packed, ws->grad + 4 * f[s].off);
        /* under MPI the ghosts' <grad rho> from their owners (a ghost's
         * rows are empty here): the second walk reads both ends of a pair */
        if ((st = floe_halo(api, ctx, f[s].set, ws->grad + 4 * f[s].off, 4 * sizeof(float))) != FLOE_OK)
            return st;
    }
    if (!diffuse)
        for (size_t k = 0; k < 4 * total; k++)
            ws->grad[k] = 0.0f;
    for (int s = 0; s < nf; s++) {
        if (f[s].info.n == 0)
            continue;
        if ((st = floe_targets(api, ctx, &f[s], f, nf, FLOE_NEED_RHO | FLOE_NEED_V | FLOE_WITH_BOUNDARY, NULL, NULL,
                               t, &nt)) != FLOE_OK)
            return st;
        drho_c(ctx, &kc, &f[s], t, nt, ws->grad, &co[s], &ws->rec, packed, ws->drho + f[s].off);
    }
    for (int s = 0; s < nf; s++) { /* then rho steps: the sums above read the old rho of every set */
        const uint32_t n = f[s].info.n;
        if (n == 0)
            continue;
        float *restrict rho = floe_attr_of(api, ctx, &f[s], "rho", FLOE_F32);
        const float *restrict D = ws->drho + f[s].off;
        const float dt = co[s].dt;
        if (!rho)
            return FLOE_ERR_ARG;
#pragma omp parallel for simd schedule(static)
        for (uint32_t i = 0; i < n; i++)
            rho[i] += dt * D[i];
    }
    return FLOE_OK;
}

int wcsph_st_continuity(const floe_stage_call *call) { return continuity(call, 0); }
int wcsph_st_continuity_cl(const floe_stage_call *call) { return continuity(call, 1); }

/* ---- descriptors ------------------------------------------------------------------ */

const floe_param_desc wcsph_continuity_params[] = {
    [CO_DELTA] = { FLOE_SIZED(floe_param_desc), .name = "delta", .type = FLOE_PARAM_FLOAT,
        .def = 0.1, .min = 0, .max = 1, .unit = "",
        .doc = "delta-SPH density diffusion coefficient (Molteni & Colagrossi 2009, Antuono et al. 2010's "
               "renormalised gradient): d rho_i/dt += delta h c0 sum_j V_j psi_ij . grad W_ij, h = H/2, c0 of "
               "wcsph.pressure; 0 = the plain continuity equation" },
    {0},
};

const floe_attr_desc wcsph_continuity_attrs[] = {
    FLOE_ATTR_FLUID("x", FLOE_VEC3, FLOE_READ), FLOE_ATTR_FLUID("v", FLOE_VEC3, FLOE_READ),
    FLOE_ATTR_FLUID("m", FLOE_F32, FLOE_READ), FLOE_ATTR_FLUID("rho", FLOE_F32, FLOE_READ | FLOE_WRITE),
    FLOE_ATTRS_BOUND_READ, {0},
};
