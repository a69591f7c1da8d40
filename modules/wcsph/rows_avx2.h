/* Floe module "wcsph": the density and pressure-force row sums for AVX2
 * CPUs, over packed particle records (included by wcsph.c when __AVX2__).
 *
 * The generic rows in wcsph.c gather each neighbour's x, y, z, m, P, rho and
 * v from separate arrays; a compiler without fast hardware gathers (GCC's
 * tuning for AMD Zen) emulates every one with a scalar load and an insert,
 * nine per pair, and spills registers doing so. Here each fluid set is
 * packed once per stage call into 16-byte records, A = (x, y, z, m) and B =
 * (P, rho, vx, vy), so eight neighbours cost eight 16-byte loads per record
 * and a 4 x 8 transpose. The kernel arithmetic is <floe/kernel.h>'s, lane by
 * lane in the same order; the squared distance (floe_r2_8) and the row
 * sums' accumulations are fused multiply-adds (fewer additions, which bound
 * these loops on Zen 3 as they bound the neighbour search), so a pair term
 * may differ from the generic path's float in its last bits (one rounding
 * where there were two; not measured per term). The row sum's order
 * (eight lane sums, then lanes 0..7 in order) is fixed, so results stay
 * bitwise reproducible for any thread count. The core pads each row to a
 * multiple of eight with its first index (floe_nlist); the lanes past the
 * count get a zero mass (no contribution).
 * Boundary rows keep the generic path: packing the (large, mostly idle)
 * boundary sets on every call cost more than it saved (reference bench
 * 56.5-58.3 s without, 58.5 s with). Periodic domains take the generic rows
 * (minimum image). */
#ifndef FLOE_WCSPH_ROWS_AVX2_H
#define FLOE_WCSPH_ROWS_AVX2_H

#include <floe/simd.h>

#include <immintrin.h>
#include <stdint.h>

#define ROWS_AVX2 1

/* 8 records of 4 floats into 4 vectors (<floe/simd.h>) */
#define load4x8 floe_load4x8

/* the z velocities of the eight neighbours j[0..7] (v: three floats each) */
static inline __attribute__((always_inline)) __m256 vz8(const float *restrict v, const uint32_t j[8])
{
    return _mm256_setr_ps(v[3 * (size_t)j[0] + 2], v[3 * (size_t)j[1] + 2], v[3 * (size_t)j[2] + 2],
                          v[3 * (size_t)j[3] + 2], v[3 * (size_t)j[4] + 2], v[3 * (size_t)j[5] + 2],
                          v[3 * (size_t)j[6] + 2], v[3 * (size_t)j[7] + 2]);
}

/* Pressure force over a fluid row, and with XSPH (xsph = 1, a constant)
 * the XSPH sum in the same walk:
 *   g3 += sum_j m_j (P_i + P_j) grad W_ij
 *   sv += sum_j m_j / (rho_i + rho_j) (v_j - v_i) W_ij / sigma
 * records A = (x, y, z, m), B = (P, rho, vx, vy), v the target's velocities
 * (for vz). With umass (a constant; XSPH only) every neighbour's mass is mu
 * and A = (x, y, z, vz): the block loads vz with the positions instead of
 * eight scalar reads of v, and each pair term is the same float. */
static inline __attribute__((always_inline)) void
row_pf_avx2(const floe_kconst *kc, const uint32_t *restrict id, uint32_t cnt, const float *restrict A,
            const float *restrict B, const float *restrict v, float Pi, float rhoi, const float vi[3], float xi,
            float yi, float zi, float g3[3], float sv[3], const int xsph, const int umass, float mu)
{
    const __m256 vxi = _mm256_set1_ps(xi), vyi = _mm256_set1_ps(yi), vzi = _mm256_set1_ps(zi);
    const __m256 inv_H = _mm256_set1_ps(kc->inv_H), g = _mm256_set1_ps(kc->g), rmin2 = _mm256_set1_ps(kc->r_min2);
    const __m256 vPi = _mm256_set1_ps(Pi), vrhoi = _mm256_set1_ps(rhoi);
    const __m256 ui = _mm256_set1_ps(vi[0]), wi = _mm256_set1_ps(vi[1]), ti = _mm256_set1_ps(vi[2]);
    __m256 gx = _mm256_setzero_ps(), gy = gx, gz = gx, sx = gx, sy = gx, sz = gx;
    for (uint32_t k = 0; k < cnt; k += 8) {
        __m256 X, Y, Z, M, P, R, VX, VY;
        const __m256 mask = floe_row_mask8(cnt, k);
        const uint32_t *j = id + k;
        __m256 A4;
        load4x8(A, j, &X, &Y, &Z, &A4);
        load4x8(B, j, &P, &R, &VX, &VY);
        M = _mm256_and_ps(umass ? _mm256_set1_ps(mu) : A4, mask);
        const __m256 dx = _mm256_sub_ps(vxi, X), dy = _mm256_sub_ps(vyi, Y), dz = _mm256_sub_ps(vzi, Z);
        const __m256 r2 = floe_r2_8(dx, dy, dz);
        __m256 W, DW;
        if (xsph)
            floe_w_dw_r_hat8(g, inv_H, rmin2, r2, &W, &DW);
        else
            DW = floe_dw_r_hat8(g, inv_H, rmin2, r2);
        const __m256 gk = _mm256_mul_ps(_mm256_mul_ps(M, _mm256_add_ps(vPi, P)), DW);
        gx = _mm256_fmadd_ps(gk, dx, gx);
        gy = _mm256_fmadd_ps(gk, dy, gy);
        gz = _mm256_fmadd_ps(gk, dz, gz);
        if (xsph) {
            const __m256 VZ = umass ? A4 : vz8(v, j);
            const __m256 c = _mm256_mul_ps(_mm256_div_ps(M, _mm256_add_ps(vrhoi, R)), W);
            sx = _mm256_fmadd_ps(c, _mm256_sub_ps(VX, ui), sx);
            sy = _mm256_fmadd_ps(c, _mm256_sub_ps(VY, wi), sy);
            sz = _mm256_fmadd_ps(c, _mm256_sub_ps(VZ, ti), sz);
        }
    }
    g3[0] += floe_hsum8(gx);
    g3[1] += floe_hsum8(gy);
    g3[2] += floe_hsum8(gz);
    if (xsph) {
        sv[0] += floe_hsum8(sx);
        sv[1] += floe_hsum8(sy);
        sv[2] += floe_hsum8(sz);
    }
}

/* Monaghan's artificial viscosity over a fluid row (row_artificial in
 * wcsph.c, term for term): s += sum_j m_j min(v_ij . x_ij, 0) /
 * ((rho_i + rho_j)(r^2 + eps)) grad W_ij; records A = (x, y, z, m), B = (.,
 * rho, vx, vy), v the target's velocities (for vz) */
static inline __attribute__((always_inline)) void
row_art_avx2(const floe_kconst *kc, const uint32_t *restrict id, uint32_t cnt, const float *restrict A,
             const float *restrict B, const float *restrict v, float xi, float yi, float zi, float rhoi,
             const float vi[3], float eps, float s3[3])
{
    const __m256 vxi = _mm256_set1_ps(xi), vyi = _mm256_set1_ps(yi), vzi = _mm256_set1_ps(zi);
    const __m256 inv_H = _mm256_set1_ps(kc->inv_H), g = _mm256_set1_ps(kc->g), rmin2 = _mm256_set1_ps(kc->r_min2);
    const __m256 vrhoi = _mm256_set1_ps(rhoi), veps = _mm256_set1_ps(eps);
    const __m256 ui = _mm256_set1_ps(vi[0]), wi = _mm256_set1_ps(vi[1]), ti = _mm256_set1_ps(vi[2]);
    const __m256 half = _mm256_set1_ps(0.5f), sign = _mm256_set1_ps(-0.0f);
    __m256 sx = _mm256_setzero_ps(), sy = sx, sz = sx;
    for (uint32_t k = 0; k < cnt; k += 8) {
        __m256 X, Y, Z, M, P, R, VX, VY;
        const __m256 mask = floe_row_mask8(cnt, k);
        const uint32_t *j = id + k;
        floe_load4x8(A, j, &X, &Y, &Z, &M);
        floe_load4x8(B, j, &P, &R, &VX, &VY);
        (void)P;
        M = _mm256_and_ps(M, mask);
        const __m256 VZ = vz8(v, j);
        const __m256 dx = _mm256_sub_ps(vxi, X), dy = _mm256_sub_ps(vyi, Y), dz = _mm256_sub_ps(vzi, Z);
        const __m256 r2 = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(dx, dx), _mm256_mul_ps(dy, dy)),
                                        _mm256_mul_ps(dz, dz));
        const __m256 vx = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(_mm256_sub_ps(ui, VX), dx),
                                                      _mm256_mul_ps(_mm256_sub_ps(wi, VY), dy)),
                                        _mm256_mul_ps(_mm256_sub_ps(ti, VZ), dz));
        /* floe_neg: 0.5 (a - |a|) */
        const __m256 neg = _mm256_mul_ps(half, _mm256_sub_ps(vx, _mm256_andnot_ps(sign, vx)));
        const __m256 den = _mm256_mul_ps(_mm256_add_ps(vrhoi, R), _mm256_add_ps(r2, veps));
        const __m256 gk = _mm256_mul_ps(_mm256_div_ps(_mm256_mul_ps(M, neg), den), floe_dw_r_hat8(g, inv_H, rmin2, r2));
        sx = _mm256_add_ps(sx, _mm256_mul_ps(gk, dx));
        sy = _mm256_add_ps(sy, _mm256_mul_ps(gk, dy));
        sz = _mm256_add_ps(sz, _mm256_mul_ps(gk, dz));
    }
    s3[0] += floe_hsum8(sx);
    s3[1] += floe_hsum8(sy);
    s3[2] += floe_hsum8(sz);
}

#endif
