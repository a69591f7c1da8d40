/* Floe: small AVX2 helpers for module authors (header only, static inline;
 * empty without __AVX2__). Neighbour loops over packed 16-byte particle
 * records (four floats per particle, 16-byte aligned) load eight neighbours
 * with eight 16-byte loads and one 4 x 8 transpose instead of 32 scalar
 * inserts (floe_load4x8); the cubic spline of <floe/kernel.h> eight lanes at
 * a time, operation for operation, so each lane is the scalar function's
 * float; the squared distance as the neighbour search computes it (fused,
 * floe_r2_8); a row's padded blocks; the density row sum.
 * modules/wcsph/rows_avx2.h and modules/iisph/iisph.c use them. */
#ifndef FLOE_SIMD_H
#define FLOE_SIMD_H

#if defined(__AVX2__)
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

/* the records at base + 4 j[l] (l = 0..7) into four vectors: lane l of o0
 * is base[4 j[l]], of o1 base[4 j[l] + 1], and so on */
static inline __attribute__((always_inline)) void floe_load4x8(const float *base, const uint32_t j[8], __m256 *o0,
                                                               __m256 *o1, __m256 *o2, __m256 *o3)
{
    const __m256 r04 = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_load_ps(base + 4 * (size_t)j[0])),
                                            _mm_load_ps(base + 4 * (size_t)j[4]), 1);
    const __m256 r15 = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_load_ps(base + 4 * (size_t)j[1])),
                                            _mm_load_ps(base + 4 * (size_t)j[5]), 1);
    const __m256 r26 = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_load_ps(base + 4 * (size_t)j[2])),
                                            _mm_load_ps(base + 4 * (size_t)j[6]), 1);
    const __m256 r37 = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_load_ps(base + 4 * (size_t)j[3])),
                                            _mm_load_ps(base + 4 * (size_t)j[7]), 1);
    const __m256 t0 = _mm256_unpacklo_ps(r04, r15), t1 = _mm256_unpackhi_ps(r04, r15);
    const __m256 t2 = _mm256_unpacklo_ps(r26, r37), t3 = _mm256_unpackhi_ps(r26, r37);
    *o0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
    *o1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
    *o2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
    *o3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
}

/* floe_pos (kernel.h) lane by lane, 0.5 (a + |a|), as max(a, +0): the
 * same float for every a but NaN (0 here, NaN there), in one operation
 * instead of three, and two fewer constants held in the neighbour loops */
static inline __attribute__((always_inline)) __m256 floe_pos8(__m256 a)
{
    return _mm256_max_ps(a, _mm256_setzero_ps());
}

/* floe_w_hat lane by lane, the same operations in the same order (no fused
 * multiply-add): 2 a^3 - 8 b^3, a = (1 - q)+, b = (1/2 - q)+, q = sqrt(r2) / H */
static inline __attribute__((always_inline)) __m256 floe_w_hat8(__m256 inv_H, __m256 r2)
{
    const __m256 q = _mm256_mul_ps(_mm256_sqrt_ps(r2), inv_H);
    const __m256 a = floe_pos8(_mm256_sub_ps(_mm256_set1_ps(1.0f), q));
    const __m256 b = floe_pos8(_mm256_sub_ps(_mm256_set1_ps(0.5f), q));
    const __m256 a3 = _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(2.0f), a), a), a);
    const __m256 b3 = _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(8.0f), b), b), b);
    return _mm256_sub_ps(a3, b3);
}

/* floe_dw_r_hat lane by lane: g (24 b^2 - 6 a^2) / r, r = sqrt(r2 + r_min2) */
static inline __attribute__((always_inline)) __m256 floe_dw_r_hat8(__m256 g, __m256 inv_H, __m256 rmin2, __m256 r2)
{
    const __m256 r = _mm256_sqrt_ps(_mm256_add_ps(r2, rmin2));
    const __m256 q = _mm256_mul_ps(r, inv_H);
    const __m256 a = floe_pos8(_mm256_sub_ps(_mm256_set1_ps(1.0f), q));
    const __m256 b = floe_pos8(_mm256_sub_ps(_mm256_set1_ps(0.5f), q));
    const __m256 t = _mm256_sub_ps(_mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(24.0f), b), b),
                                   _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(6.0f), a), a));
    return _mm256_div_ps(_mm256_mul_ps(g, t), r);
}

/* floe_w_hat8 and floe_dw_r_hat8 of the same pairs from one square root,
 * r = sqrt(r2 + r_min2): the rows that need both (XSPH fused with the
 * pressure force) save a vsqrtps a block. r_min2 = (1e-6 H)^2 is below
 * float resolution against r2 for r > 0.004 H, so both are the separate
 * functions' floats for every pair but (nearly) coincident ones. */
static inline __attribute__((always_inline)) void floe_w_dw_r_hat8(__m256 g, __m256 inv_H, __m256 rmin2, __m256 r2,
                                                                   __m256 *w, __m256 *dw)
{
    const __m256 r = _mm256_sqrt_ps(_mm256_add_ps(r2, rmin2));
    const __m256 q = _mm256_mul_ps(r, inv_H);
    const __m256 a = floe_pos8(_mm256_sub_ps(_mm256_set1_ps(1.0f), q));
    const __m256 b = floe_pos8(_mm256_sub_ps(_mm256_set1_ps(0.5f), q));
    const __m256 a3 = _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(2.0f), a), a), a);
    const __m256 b3 = _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(8.0f), b), b), b);
    *w = _mm256_sub_ps(a3, b3);
    const __m256 t = _mm256_sub_ps(_mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(24.0f), b), b),
                                   _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(6.0f), a), a));
    *dw = _mm256_div_ps(_mm256_mul_ps(g, t), r);
}

/* dx^2 + dy^2 + dz^2 as the core's neighbour search computes it, with two
 * fused multiply-adds, (dz dz + (dy dy + dx dx)): the squared distance the
 * search compares with the radius and its kernel sums use (floe_nlist.wsum).
 * Fusing saves two of the five additions, which bound the search's
 * candidate test on Zen 3 (15-18% faster lists, docs/performance.md). In
 * 2D pass dz = 0: the same float as without it. */
static inline __attribute__((always_inline)) __m256 floe_r2_8(__m256 dx, __m256 dy, __m256 dz)
{
    return _mm256_fmadd_ps(dz, dz, _mm256_fmadd_ps(dy, dy, _mm256_mul_ps(dx, dx)));
}

/* lanes 0..7 added in that order */
static inline __attribute__((always_inline)) float floe_hsum8(__m256 v)
{
    float l[8];
    _mm256_storeu_ps(l, v);
    return ((((((l[0] + l[1]) + l[2]) + l[3]) + l[4]) + l[5]) + l[6]) + l[7];
}

/* The indices of block k (eight entries from k) of a neighbour row of cnt
 * entries, padded past cnt with id[0] (tmp holds them then), and the mask of
 * the lanes below cnt */
static inline __attribute__((always_inline)) const uint32_t *floe_block_ids8(const uint32_t *id, uint32_t cnt,
                                                                             uint32_t k, uint32_t tmp[8],
                                                                             __m256 *mask)
{
    const uint32_t rem = cnt - k;
    if (rem >= 8) {
        *mask = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
        return id + k;
    }
    for (uint32_t l = 0; l < 8; l++)
        tmp[l] = l < rem ? id[k + l] : id[0];
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    *mask = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32((int)rem), lane));
    return tmp;
}

/* The mask of the lanes of block k (eight entries from k) of a row of the
 * core's neighbour lists that lie below cnt. Those rows are padded to whole
 * blocks of eight with valid indices (floe_nlist), so id + k may be read as
 * a block as it is: the masked lanes only need a zero weight. */
static inline __attribute__((always_inline)) __m256 floe_row_mask8(uint32_t cnt, uint32_t k)
{
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32((int)(cnt - k)), lane));
}

/* sum_j w_j W_ij / sigma over a row id[0..cnt) of the core's (padded)
 * neighbour lists, over packed records A = (x, y, z, w) (no periodic
 * image): the density sum of floe_w_hat */
static inline __attribute__((always_inline)) float floe_row_w8(float inv_H, const uint32_t *id, uint32_t cnt,
                                                               const float *A, float xi, float yi, float zi)
{
    const __m256 vxi = _mm256_set1_ps(xi), vyi = _mm256_set1_ps(yi), vzi = _mm256_set1_ps(zi);
    const __m256 vinv = _mm256_set1_ps(inv_H);
    __m256 s = _mm256_setzero_ps();
    for (uint32_t k = 0; k < cnt; k += 8) {
        __m256 X, Y, Z, W;
        const __m256 mask = floe_row_mask8(cnt, k);
        floe_load4x8(A, id + k, &X, &Y, &Z, &W);
        const __m256 dx = _mm256_sub_ps(vxi, X), dy = _mm256_sub_ps(vyi, Y), dz = _mm256_sub_ps(vzi, Z);
        const __m256 r2 = floe_r2_8(dx, dy, dz);
        s = _mm256_add_ps(s, _mm256_mul_ps(_mm256_and_ps(W, mask), floe_w_hat8(vinv, r2)));
    }
    return floe_hsum8(s);
}
#endif

#endif
