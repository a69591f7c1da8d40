/* Floe: small AVX2 helpers for module authors (header only, static inline;
 * empty without __AVX2__). Neighbour loops over packed 16-byte particle
 * records (four floats per particle, 16-byte aligned) load eight neighbours
 * with eight 16-byte loads and one 4 x 8 transpose instead of 32 scalar
 * inserts: modules/wcsph/rows_avx2.h and modules/iisph/iisph.c use it. */
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
#endif

#endif
