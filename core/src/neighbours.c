/* Cell-sorted neighbour search: the fixed-stride neighbour lists gathered
 * from the 3x3(x3) cell block of each particle, over the cell sort of
 * nb_sort.c (Kipfer & Westermann 2006). See neighbours.h for the contract.
 *
 * Everything here is deterministic: the sort is stable (a counting sort on
 * tight grids, else an LSD radix sort with the same result; neither depends
 * on the thread count), and each query particle of
 * nb_build writes only its own slots, in ascending sorted-slot order. */
#ifdef _OPENMP
#include <omp.h>
#endif
#include "neighbours_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- build -- */

static int list_reserve(nb_list *l, uint32_t rows, uint32_t stride)
{
    /* Invariant: count holds l->cap rows and idx holds l->cap * l->stride. */
    uint32_t cap = l->cap;
    if (rows > cap || !l->count) {
        uint64_t want = (uint64_t)cap + cap / 2;
        if (want < rows)
            want = rows;
        if (want < 1)
            want = 1;
        if (want > UINT32_MAX)
            want = UINT32_MAX;
        cap = (uint32_t)want;
    }
    if (stride < l->stride)
        stride = l->stride;
    stride = (stride + 7u) & ~7u; /* rows are padded to whole blocks of 8 (nb_pad_row) */
    if (cap == l->cap && stride == l->stride && l->count && l->idx)
        return 0;
    uint64_t nidx = (uint64_t)cap * stride;
    if (nidx > SIZE_MAX / sizeof(uint32_t))
        return -1;
    if (cap != l->cap || !l->count) {
        if (nb_grow_u32(&l->count, cap))
            return -1;
    }
    if (nb_grow_u32(&l->idx, (size_t)nidx))
        return -1;
    l->cap = cap;
    l->stride = stride;
    return 0;
}

/* Target set gathered into sorted-slot order, structure of arrays, each
 * padded with NB_PAD entries so vector loads may run past a range's end. */
#define NB_PAD 16u
typedef struct nb_soa {
    float *x, *y, *z;
    uint32_t *j; /* particle index at each slot (copy of order[], padded) */
} nb_soa;

#if defined(__AVX2__)
#include <immintrin.h>

#include "floe/simd.h" /* floe_w_hat8, floe_row_mask8, floe_hsum8: the kernel sums */
/* Compress table: byte t of entry m is the lane of the t-th set bit of m
 * (nb_compress8 widens it to the vpermd indices with one vpmovzxbd). */
static const uint64_t nb_compress_lut[256] = {
    0x0000000000000000ull, 0x0000000000000000ull, 0x0000000000000001ull, 0x0000000000000100ull,
    0x0000000000000002ull, 0x0000000000000200ull, 0x0000000000000201ull, 0x0000000000020100ull,
    0x0000000000000003ull, 0x0000000000000300ull, 0x0000000000000301ull, 0x0000000000030100ull,
    0x0000000000000302ull, 0x0000000000030200ull, 0x0000000000030201ull, 0x0000000003020100ull,
    0x0000000000000004ull, 0x0000000000000400ull, 0x0000000000000401ull, 0x0000000000040100ull,
    0x0000000000000402ull, 0x0000000000040200ull, 0x0000000000040201ull, 0x0000000004020100ull,
    0x0000000000000403ull, 0x0000000000040300ull, 0x0000000000040301ull, 0x0000000004030100ull,
    0x0000000000040302ull, 0x0000000004030200ull, 0x0000000004030201ull, 0x0000000403020100ull,
    0x0000000000000005ull, 0x0000000000000500ull, 0x0000000000000501ull, 0x0000000000050100ull,
    0x0000000000000502ull, 0x0000000000050200ull, 0x0000000000050201ull, 0x0000000005020100ull,
    0x0000000000000503ull, 0x0000000000050300ull, 0x0000000000050301ull, 0x0000000005030100ull,
    0x0000000000050302ull, 0x0000000005030200ull, 0x0000000005030201ull, 0x0000000503020100ull,
    0x0000000000000504ull, 0x0000000000050400ull, 0x0000000000050401ull, 0x0000000005040100ull,
    0x0000000000050402ull, 0x0000000005040200ull, 0x0000000005040201ull, 0x0000000504020100ull,
    0x0000000000050403ull, 0x0000000005040300ull, 0x0000000005040301ull, 0x0000000504030100ull,
    0x0000000005040302ull, 0x0000000504030200ull, 0x0000000504030201ull, 0x0000050403020100ull,
    0x0000000000000006ull, 0x0000000000000600ull, 0x0000000000000601ull, 0x0000000000060100ull,
    0x0000000000000602ull, 0x0000000000060200ull, 0x0000000000060201ull, 0x0000000006020100ull,
    0x0000000000000603ull, 0x0000000000060300ull, 0x0000000000060301ull, 0x0000000006030100ull,
    0x0000000000060302ull, 0x0000000006030200ull, 0x0000000006030201ull, 0x0000000603020100ull,
    0x0000000000000604ull, 0x0000000000060400ull, 0x0000000000060401ull, 0x0000000006040100ull,
    0x0000000000060402ull, 0x0000000006040200ull, 0x0000000006040201ull, 0x0000000604020100ull,
    0x0000000000060403ull, 0x0000000006040300ull, 0x0000000006040301ull, 0x0000000604030100ull,
    0x0000000006040302ull, 0x0000000604030200ull, 0x0000000604030201ull, 0x0000060403020100ull,
    0x0000000000000605ull, 0x0000000000060500ull, 0x0000000000060501ull, 0x0000000006050100ull,
    0x0000000000060502ull, 0x0000000006050200ull, 0x0000000006050201ull, 0x0000000605020100ull,
    0x0000000000060503ull, 0x0000000006050300ull, 0x0000000006050301ull, 0x0000000605030100ull,
    0x0000000006050302ull, 0x0000000605030200ull, 0x0000000605030201ull, 0x0000060503020100ull,
    0x0000000000060504ull, 0x0000000006050400ull, 0x0000000006050401ull, 0x0000000605040100ull,
    0x0000000006050402ull, 0x0000000605040200ull, 0x0000000605040201ull, 0x0000060504020100ull,
    0x0000000006050403ull, 0x0000000605040300ull, 0x0000000605040301ull, 0x0000060504030100ull,
    0x0000000605040302ull, 0x0000060504030200ull, 0x0000060504030201ull, 0x0006050403020100ull,
    0x0000000000000007ull, 0x0000000000000700ull, 0x0000000000000701ull, 0x0000000000070100ull,
    0x0000000000000702ull, 0x0000000000070200ull, 0x0000000000070201ull, 0x0000000007020100ull,
    0x0000000000000703ull, 0x0000000000070300ull, 0x0000000000070301ull, 0x0000000007030100ull,
    0x0000000000070302ull, 0x0000000007030200ull, 0x0000000007030201ull, 0x0000000703020100ull,
    0x0000000000000704ull, 0x0000000000070400ull, 0x0000000000070401ull, 0x0000000007040100ull,
    0x0000000000070402ull, 0x0000000007040200ull, 0x0000000007040201ull, 0x0000000704020100ull,
    0x0000000000070403ull, 0x0000000007040300ull, 0x0000000007040301ull, 0x0000000704030100ull,
    0x0000000007040302ull, 0x0000000704030200ull, 0x0000000704030201ull, 0x0000070403020100ull,
    0x0000000000000705ull, 0x0000000000070500ull, 0x0000000000070501ull, 0x0000000007050100ull,
    0x0000000000070502ull, 0x0000000007050200ull, 0x0000000007050201ull, 0x0000000705020100ull,
    0x0000000000070503ull, 0x0000000007050300ull, 0x0000000007050301ull, 0x0000000705030100ull,
    0x0000000007050302ull, 0x0000000705030200ull, 0x0000000705030201ull, 0x0000070503020100ull,
    0x0000000000070504ull, 0x0000000007050400ull, 0x0000000007050401ull, 0x0000000705040100ull,
    0x0000000007050402ull, 0x0000000705040200ull, 0x0000000705040201ull, 0x0000070504020100ull,
    0x0000000007050403ull, 0x0000000705040300ull, 0x0000000705040301ull, 0x0000070504030100ull,
    0x0000000705040302ull, 0x0000070504030200ull, 0x0000070504030201ull, 0x0007050403020100ull,
    0x0000000000000706ull, 0x0000000000070600ull, 0x0000000000070601ull, 0x0000000007060100ull,
    0x0000000000070602ull, 0x0000000007060200ull, 0x0000000007060201ull, 0x0000000706020100ull,
    0x0000000000070603ull, 0x0000000007060300ull, 0x0000000007060301ull, 0x0000000706030100ull,
    0x0000000007060302ull, 0x0000000706030200ull, 0x0000000706030201ull, 0x0000070603020100ull,
    0x0000000000070604ull, 0x0000000007060400ull, 0x0000000007060401ull, 0x0000000706040100ull,
    0x0000000007060402ull, 0x0000000706040200ull, 0x0000000706040201ull, 0x0000070604020100ull,
    0x0000000007060403ull, 0x0000000706040300ull, 0x0000000706040301ull, 0x0000070604030100ull,
    0x0000000706040302ull, 0x0000070604030200ull, 0x0000070604030201ull, 0x0007060403020100ull,
    0x0000000000070605ull, 0x0000000007060500ull, 0x0000000007060501ull, 0x0000000706050100ull,
    0x0000000007060502ull, 0x0000000706050200ull, 0x0000000706050201ull, 0x0000070605020100ull,
    0x0000000007060503ull, 0x0000000706050300ull, 0x0000000706050301ull, 0x0000070605030100ull,
    0x0000000706050302ull, 0x0000070605030200ull, 0x0000070605030201ull, 0x0007060503020100ull,
    0x0000000007060504ull, 0x0000000706050400ull, 0x0000000706050401ull, 0x0000070605040100ull,
    0x0000000706050402ull, 0x0000070605040200ull, 0x0000070605040201ull, 0x0007060504020100ull,
    0x0000000706050403ull, 0x0000070605040300ull, 0x0000070605040301ull, 0x0007060504030100ull,
    0x0000070605040302ull, 0x0007060504030200ull, 0x0007060504030201ull, 0x0706050403020100ull,
};

/* The lanes of v selected by mask m (movemask order) moved to the front, in
 * lane order; the lanes past popcount(m) hold lane 0. */
static inline __m256i nb_compress8(__m256i v, uint32_t m)
{
    const __m256i perm = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)&nb_compress_lut[m]));
    return _mm256_permutevar8x32_epi32(v, perm);
}

/* nb_compress8's permutation for mask m, to apply to several vectors */
static inline __m256i nb_compress_perm(uint32_t m)
{
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)&nb_compress_lut[m]));
}
#endif

/* One pass over all query particles. `qslot` (may be NULL) iterates the
 * queries in sorted-slot order when the query set is the target set: then
 * query i = t->j[q] sits at slot q, which keeps the candidate reads of
 * consecutive queries in cache. Returns the largest neighbour count found
 * (may exceed stride: such rows are truncated and must be redone). */
/* The query position and its periodic images (see nb_grid.periodic). */
static inline int nb_images(const nb_grid *g, float px, float py, float pz, float img[8][3])
{
    img[0][0] = px;
    img[0][1] = py;
    img[0][2] = pz;
    int n = 1;
    for (int k = 0; k < 3; k++) {
        if (!(g->periodic & (1u << k)))
            continue;
        const float c = k == 0 ? px : k == 1 ? py : pz;
        float shift = 0.0f;
        if (c < g->plo[k] + g->cell)
            shift = g->period[k];
        else if (c >= g->plo[k] + g->period[k] - g->cell)
            shift = -g->period[k];
        if (shift == 0.0f)
            continue;
        for (int m = 0; m < n; m++) {
            img[n + m][0] = img[m][0];
            img[n + m][1] = img[m][1];
            img[n + m][2] = img[m][2];
            img[n + m][k] += shift;
        }
        n *= 2;
    }
    return n;
}

static uint32_t build_pass(const nb_grid *g, const float *restrict xq, uint32_t nq, uint32_t nrows, int same_set,
                           const uint32_t *restrict cs, const uint8_t *restrict near, const nb_soa *t, float r2,
                           int exclude_self, uint32_t *restrict count, uint32_t *restrict idx, uint32_t stride)
{
    const float inv = 1.0f / g->cell;
    const float o0 = g->origin[0], o1 = g->origin[1], o2 = g->origin[2];
    const int f0 = g->off[0], f1 = g->off[1], f2 = g->off[2];
    const int n0 = g->n[0], n1 = g->n[1], n2 = g->n[2];
    const int dim3 = g->dim == 3;
    const float *restrict sx = t->x, *restrict sy = t->y, *restrict sz = t->z;
    const uint32_t *restrict sj = t->j;
    uint32_t maxc = 0;
    const int64_t nn = (int64_t)nq;

#pragma omp parallel for schedule(dynamic, 256) reduction(max : maxc) if (nq >= NB_PAR_MIN)
    for (int64_t q = 0; q < nn; q++) {
        uint32_t i;
        float px, py, pz;
        if (same_set) {
            i = sj[q];
            px = sx[q];
            py = sy[q];
            pz = dim3 ? sz[q] : 0.0f;
        } else {
            i = (uint32_t)q;
            px = xq[3 * q + 0];
            py = xq[3 * q + 1];
            pz = dim3 ? xq[3 * q + 2] : 0.0f;
        }
        if (i >= nrows) { /* an empty row (nb_build_rows) */
            count[i] = 0;
            continue;
        }
        uint32_t *restrict dst = idx + (size_t)i * stride;
        uint32_t c = 0;
        if (near) { /* no target particle within a cell of the query's cell */
            const int ix = nb_axis(px, o0, inv, f0, n0), iy = nb_axis(py, o1, inv, f1, n1);
            const int iz = dim3 ? nb_axis(pz, o2, inv, f2, n2) : 0;
            if (!near[(size_t)ix + (size_t)n0 * ((size_t)iy + (size_t)n1 * (size_t)iz)]) {
                count[i] = 0;
                continue;
            }
        }
        /* periodic axes: also search from the images of the query shifted by
         * one period when it lies within a cell of a periodic face (a period
         * is at least 3 cells, so no pair is found twice) */
        float img[8][3];
        int nimg = nb_images(g, px, py, pz, img);
        for (int im = 0; im < nimg; im++) {
            px = img[im][0];
            py = img[im][1];
            pz = img[im][2];
            const int ix = nb_axis(px, o0, inv, f0, n0);
            const int iy = nb_axis(py, o1, inv, f1, n1);
            const int iz = dim3 ? nb_axis(pz, o2, inv, f2, n2) : 0;
            const int xlo = ix > 0 ? ix - 1 : 0, xhi = ix < n0 - 1 ? ix + 1 : n0 - 1;
            const int ylo = iy > 0 ? iy - 1 : 0, yhi = iy < n1 - 1 ? iy + 1 : n1 - 1;
            const int zlo = iz > 0 ? iz - 1 : 0, zhi = iz < n2 - 1 ? iz + 1 : n2 - 1;
            /* with exclude_self off, `self` is a value no index can take */
            const uint32_t self = exclude_self ? i : UINT32_MAX;
    #if defined(__AVX2__)
            const __m256 vx = _mm256_set1_ps(px), vy = _mm256_set1_ps(py), vz = _mm256_set1_ps(pz);
            const __m256 vr2 = _mm256_set1_ps(r2);
            const __m256i vself = _mm256_set1_epi32((int)self);
    #else
            uint32_t spill; /* sink for stores past the end of a full row */
    #endif
            for (int z = zlo; z <= zhi; z++) {
                for (int y = ylo; y <= yhi; y++) {
                    const uint32_t row = (uint32_t)n0 * ((uint32_t)y + (uint32_t)n1 * (uint32_t)z);
                    const uint32_t a = cs[row + (uint32_t)xlo], b = cs[row + (uint32_t)xhi + 1];
    #if defined(__AVX2__)
                    for (uint32_t k = a; k < b; k += 8) {
                        const __m256 dx = _mm256_sub_ps(_mm256_loadu_ps(sx + k), vx);
                        const __m256 dy = _mm256_sub_ps(_mm256_loadu_ps(sy + k), vy);
                        __m256 d2 = _mm256_add_ps(_mm256_mul_ps(dx, dx), _mm256_mul_ps(dy, dy));
                        if (dim3) {
                            const __m256 dz = _mm256_sub_ps(_mm256_loadu_ps(sz + k), vz);
                            d2 = _mm256_add_ps(d2, _mm256_mul_ps(dz, dz));
                        }
                        const __m256i jv = _mm256_loadu_si256((const __m256i *)(sj + k));
                        const __m256 hit = _mm256_andnot_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(jv, vself)),
                                                            _mm256_cmp_ps(d2, vr2, _CMP_LT_OQ));
                        const uint32_t rem = b - k;
                        const uint32_t m = (uint32_t)_mm256_movemask_ps(hit) & (rem >= 8 ? 0xFFu : (1u << rem) - 1u);
                        if (c + 8 <= stride) {
                            /* compress the hits to the front, store all 8 lanes */
                            _mm256_storeu_si256((__m256i *)(dst + c), nb_compress8(jv, m));
                            c += (uint32_t)__builtin_popcount(m);
                        } else {
                            for (uint32_t mm = m; mm; mm &= mm - 1) {
                                if (c < stride)
                                    dst[c] = sj[k + (uint32_t)__builtin_ctz(mm)];
                                c++;
                            }
                        }
                    }
    #else
                    for (uint32_t k = a; k < b; k++) {
                        const float dx = sx[k] - px;
                        const float dy = sy[k] - py;
                        const float d2 = dim3 ? dx * dx + dy * dy + (sz[k] - pz) * (sz[k] - pz) : dx * dx + dy * dy;
                        const uint32_t j = sj[k];
                        /* branchless append: always store, advance on a hit */
                        *(c < stride ? dst + c : &spill) = j;
                        c += (uint32_t)((d2 < r2) & (j != self));
                    }
    #endif
                }
            }
        }
        nb_pad_row(dst, c, stride);
        count[i] = c;
        if (c > maxc)
            maxc = c;
    }
    return maxc;
}

#if defined(__AVX2__)
/* Queries per group, and sorted slots per work chunk, in build_cells. */
#define NB_GROUP 8
/* Candidates of a group copied into one range (test_group), at most. */
#define NB_MERGE 768u

/* the hits of mask mm (candidate sj[lane], squared distance d2l[lane] where
 * d2row is given) appended to a row one by one, the entries past stride
 * counted but not stored (the row then grows and is built again) */
static inline uint32_t store_hits_capped(uint32_t mm, const uint32_t *sj, const float *d2l, uint32_t *row,
                                         float *d2row, uint32_t cu, uint32_t stride)
{
    for (; mm; mm &= mm - 1) {
        if (cu < stride) {
            row[cu] = sj[__builtin_ctz(mm)];
            if (d2row)
                d2row[cu] = d2l[__builtin_ctz(mm)];
        }
        cu++;
    }
    return cu;
}

/* One range [a, b) of candidate slots of t against the gn <= NB_GROUP
 * queries of a group, one block of 8 candidates for all queries at a time
 * (each block is loaded once per group, and the trip counts are the same
 * for every query, which keeps the branches predictable): the hits of
 * query u are appended to dst[u] from c[u], and with sums their squared
 * distances to d2dst[u] at the same places. The constant flags: own,
 * whether the range may hold a query itself (self[u]); room, whether every
 * row has room for b - a + 8 more entries (no check per store). Returns
 * the largest c[u] after the range (kept in a register: reading c[] back
 * as a vector right after its scalar stores stalled on store forwarding). */
static inline __attribute__((always_inline)) uint32_t
test_range(uint32_t a, uint32_t b, uint32_t gn, const float *qx, const float *qy, const float *qz,
           const uint32_t *self, const nb_soa *t, const int dim3, const int own, const int room, __m256 vr2,
           uint32_t *const *dst, uint32_t *c, uint32_t stride, float *const *d2dst, const int sums)
{
    const float *restrict sx = t->x, *restrict sy = t->y, *restrict sz = t->z;
    const uint32_t *restrict sj = t->j;
    uint32_t cm = 0;
    for (uint32_t k = a; k < b; k += 8) {
        const __m256 cx = _mm256_loadu_ps(sx + k), cy = _mm256_loadu_ps(sy + k);
        const __m256 cz = dim3 ? _mm256_loadu_ps(sz + k) : _mm256_setzero_ps();
        const __m256i jv = _mm256_loadu_si256((const __m256i *)(sj + k));
        const uint32_t rem = b - k;
        const uint32_t tail = rem >= 8 ? 0xFFu : _bzhi_u32(0xFFu, rem);
        for (uint32_t u = 0; u < gn; u++) {
            const __m256 dx = _mm256_sub_ps(cx, _mm256_broadcast_ss(qx + u));
            const __m256 dy = _mm256_sub_ps(cy, _mm256_broadcast_ss(qy + u));
            /* floe_r2_8's float (fused: the additions bound this loop) */
            __m256 d2 = _mm256_fmadd_ps(dy, dy, _mm256_mul_ps(dx, dx));
            if (dim3) {
                const __m256 dz = _mm256_sub_ps(cz, _mm256_broadcast_ss(qz + u));
                d2 = _mm256_fmadd_ps(dz, dz, d2);
            }
            __m256 hit = _mm256_cmp_ps(d2, vr2, _CMP_LT_OQ);
            if (own)
                hit = _mm256_andnot_ps(
                    _mm256_castsi256_ps(_mm256_cmpeq_epi32(jv, _mm256_set1_epi32((int)self[u]))), hit);
            const uint32_t m = (uint32_t)_mm256_movemask_ps(hit) & tail;
            uint32_t cu = c[u];
            if (room || cu + 8 <= stride) {
                const __m256i perm = nb_compress_perm(m);
                _mm256_storeu_si256((__m256i *)(dst[u] + cu), _mm256_permutevar8x32_epi32(jv, perm));
                if (sums)
                    _mm256_storeu_ps(d2dst[u] + cu, _mm256_permutevar8x32_ps(d2, perm));
                cu += (uint32_t)__builtin_popcount(m);
            } else {
                _Alignas(32) float d2l[8];
                if (sums)
                    _mm256_store_ps(d2l, d2);
                cu = store_hits_capped((uint32_t)m, sj + k, d2l, dst[u], sums ? d2dst[u] : NULL, cu, stride);
            }
            c[u] = cu;
            cm = cu > cm ? cu : cm;
        }
    }
    return cm;
}

#if defined(__AVX512F__) && defined(__AVX512VL__)
/* Candidates a block in the grouped builds: 16 with AVX-512 (test_range16) */
#define NB_W 16u

/* test_range with blocks of 16 candidates (AVX-512): the same squared
 * distances lane by lane (sub, mul, fused multiply-adds in the same order),
 * the hits compressed in lane order into a register (vpcompressd; the
 * memory form is slow on some cores) and stored 16 lanes at a time, so
 * every row gets the same entries in the same order as the 8-wide blocks
 * give, and with sums the same squared distances. Ranges of about 24
 * candidates (three cells) take two blocks instead of three or four. */
static inline __attribute__((always_inline)) uint32_t
test_range16(uint32_t a, uint32_t b, uint32_t gn, const float *qx, const float *qy, const float *qz,
             const uint32_t *self, const nb_soa *t, const int dim3, const int own, const int room, __m256 r2v,
             uint32_t *const *dst, uint32_t *c, uint32_t stride, float *const *d2dst, const int sums)
{
    const float *restrict sx = t->x, *restrict sy = t->y, *restrict sz = t->z;
    const uint32_t *restrict sj = t->j;
    const __m512 vr2 = _mm512_broadcastss_ps(_mm256_castps256_ps128(r2v));
    uint32_t cm = 0;
    for (uint32_t k = a; k < b; k += 16) {
        const __m512 cx = _mm512_loadu_ps(sx + k), cy = _mm512_loadu_ps(sy + k);
        const __m512 cz = dim3 ? _mm512_loadu_ps(sz + k) : _mm512_setzero_ps();
        const __m512i jv = _mm512_loadu_si512((const void *)(sj + k));
        const uint32_t rem = b - k;
        const __mmask16 tail = (__mmask16)(rem >= 16 ? 0xFFFFu : _bzhi_u32(0xFFFFu, rem));
        for (uint32_t u = 0; u < gn; u++) {
            const __m512 dx = _mm512_sub_ps(cx, _mm512_set1_ps(qx[u]));
            const __m512 dy = _mm512_sub_ps(cy, _mm512_set1_ps(qy[u]));
            __m512 d2 = _mm512_fmadd_ps(dy, dy, _mm512_mul_ps(dx, dx));
            if (dim3) {
                const __m512 dz = _mm512_sub_ps(cz, _mm512_set1_ps(qz[u]));
                d2 = _mm512_fmadd_ps(dz, dz, d2);
            }
            __mmask16 m = _mm512_mask_cmp_ps_mask(tail, d2, vr2, _CMP_LT_OQ);
            if (own)
                m = _mm512_mask_cmpneq_epi32_mask(m, jv, _mm512_set1_epi32((int)self[u]));
            uint32_t cu = c[u];
            if (room || cu + 16 <= stride) {
                _mm512_storeu_si512((void *)(dst[u] + cu), _mm512_maskz_compress_epi32(m, jv));
                if (sums)
                    _mm512_storeu_ps(d2dst[u] + cu, _mm512_maskz_compress_ps(m, d2));
                cu += (uint32_t)__builtin_popcount((unsigned)m);
            } else {
                _Alignas(64) float d2l[16];
                if (sums)
                    _mm512_store_ps(d2l, d2);
                cu = store_hits_capped((uint32_t)m, sj + k, d2l, dst[u], sums ? d2dst[u] : NULL, cu, stride);
            }
            c[u] = cu;
            cm = cu > cm ? cu : cm;
        }
    }
    return cm;
}
#define TEST_RANGE test_range16
#else
#define NB_W 8u
#define TEST_RANGE test_range
#endif

/* test_range with its flags chosen at run time (each variant compiled
 * with constant ones). */
static inline __attribute__((always_inline)) uint32_t
test_span(uint32_t a, uint32_t b, uint32_t gn, const float *qx, const float *qy, const float *qz,
          const uint32_t *self, const nb_soa *t, const int dim3, int own, int room, __m256 vr2,
          uint32_t *const *dst, uint32_t *c, uint32_t stride, float *const *d2dst, const int sums)
{
    if (own && room)
        return TEST_RANGE(a, b, gn, qx, qy, qz, self, t, dim3, 1, 1, vr2, dst, c, stride, d2dst, sums);
    if (room)
        return TEST_RANGE(a, b, gn, qx, qy, qz, self, t, dim3, 0, 1, vr2, dst, c, stride, d2dst, sums);
    if (own)
        return TEST_RANGE(a, b, gn, qx, qy, qz, self, t, dim3, 1, 0, vr2, dst, c, stride, d2dst, sums);
    return TEST_RANGE(a, b, gn, qx, qy, qz, self, t, dim3, 0, 0, vr2, dst, c, stride, d2dst, sums);
}

/* Kernel sums of one finished row (nb_ksum): sum_k w[row[k]] W^(r2[k]),
 * W^ = floe_w_hat, in blocks of 8 in row order, lane by lane, then the lanes
 * in order: floe_row_w8's operations on the same floats (its r2 is the
 * same float: floe_r2_8 of the same positions), so a module's
 * own density sum over this row gives the same float. r2 is padded like
 * the row (nb_pad_row) first. */
static inline float row_ksum(const uint32_t *row, float *r2, uint32_t cnt, uint32_t stride, const nb_ksum *ks,
                             __m256 inv_H)
{
    const float *w = ks->w;
    if (cnt == 0)
        return 0.0f;
    const uint32_t e = (cnt + 7u) & ~7u;
    for (uint32_t k = cnt; k < e && k < stride; k++)
        r2[k] = r2[0];
    __m256 s = _mm256_setzero_ps();
    for (uint32_t k = 0; k < cnt; k += 8) {
        const __m256 mask = floe_row_mask8(cnt, k);
        /* no vgatherdps: on Zen 3 it took about 2.5 ms a step of the
         * reference bench here, eight loads take a fraction */
        const uint32_t *j = row + k;
        const __m256 wj = ks->uniform ? _mm256_set1_ps(ks->w0)
                                      : _mm256_setr_ps(w[j[0]], w[j[1]], w[j[2]], w[j[3]], w[j[4]], w[j[5]],
                                                       w[j[6]], w[j[7]]);
        s = _mm256_add_ps(s, _mm256_mul_ps(_mm256_and_ps(wj, mask), floe_w_hat8(inv_H, _mm256_loadu_ps(r2 + k))));
    }
    return floe_hsum8(s);
}

/* Search for the gn <= NB_GROUP queries (qx, qy, qz; particle indices
 * id[u]; with exclude_self, id[u] itself is no neighbour, and only range
 * rself can hold it) in the nr candidate ranges [ra[r], rb[r]) of the
 * sorted slots t: row id[u] of idx (stride entries) gets the hits in
 * ascending slot order, padded (nb_pad_row), count[id[u]] their number (which
 * may exceed stride: the caller widens and rebuilds). With sums (ks, and
 * d2buf: NB_GROUP * stride floats of the calling thread) also the row's
 * kernel sum into ks->out[id[u]]. Returns the largest count. dim3 and sums
 * are constants here (test_group picks the variant). */
static inline __attribute__((always_inline)) uint32_t
test_group_d(uint32_t gn, const float *qx, const float *qy, const float *qz, const uint32_t *id, int exclude_self,
             int rself, const uint32_t *ra, const uint32_t *rb, int nr, const nb_soa *t, const int dim3, float r2,
             uint32_t *restrict count, uint32_t *restrict idx, uint32_t stride, const nb_ksum *ks, float *d2buf,
             const int sums)
{
    const __m256 vr2 = _mm256_set1_ps(r2);
    uint32_t c[NB_GROUP], self[NB_GROUP];
    uint32_t *dst[NB_GROUP];
    float *d2dst[NB_GROUP];
    for (uint32_t u = 0; u < gn; u++) {
        c[u] = 0;
        self[u] = id[u];
        dst[u] = idx + (size_t)id[u] * stride;
        d2dst[u] = sums ? d2buf + (size_t)u * stride : NULL;
    }
    /* Few candidates (sparse regions: splashes, surfaces; the fluid against
     * thin walls): when every row has room for all of them, the ranges are
     * copied one after another (in range order, so the hits keep ascending
     * slot order) and tested as one range: no partly filled block at the
     * end of each range, one loop, no check per store. Late in the
     * reference bench about a quarter of the groups take this path; a
     * dense group (about 216 candidates for 64 slots a row) takes the
     * ranges one by one. */
    uint32_t total = 0;
    for (int r = 0; r < nr; r++)
        total += rb[r] - ra[r];
    if (total + NB_W <= NB_MERGE && (NB_W == 16 || total + NB_W <= stride)) {
        _Alignas(64) float mx[NB_MERGE], my[NB_MERGE], mz[NB_MERGE];
        _Alignas(64) uint32_t mj[NB_MERGE];
        const int room = total + NB_W <= stride;
        const nb_soa m = {mx, my, mz, mj};
        uint32_t p = 0, po = 0, no = 0; /* the own range at [po, po + no) */
        for (int r = 0; r < nr; r++) {
            const uint32_t a = ra[r], n = rb[r] - ra[r];
            if (r == rself)
                po = p, no = n;
            /* whole blocks of NB_W: the slots have NB_PAD entries of
             * slack past their end, the buffer NB_W past total */
#if NB_W == 16
            for (uint32_t k = 0; k < n; k += 16) {
                _mm512_storeu_ps(mx + p + k, _mm512_loadu_ps(t->x + a + k));
                _mm512_storeu_ps(my + p + k, _mm512_loadu_ps(t->y + a + k));
                if (dim3)
                    _mm512_storeu_ps(mz + p + k, _mm512_loadu_ps(t->z + a + k));
                _mm512_storeu_si512((void *)(mj + p + k), _mm512_loadu_si512((const void *)(t->j + a + k)));
            }
#else
            for (uint32_t k = 0; k < n; k += 8) {
                _mm256_storeu_ps(mx + p + k, _mm256_loadu_ps(t->x + a + k));
                _mm256_storeu_ps(my + p + k, _mm256_loadu_ps(t->y + a + k));
                if (dim3)
                    _mm256_storeu_ps(mz + p + k, _mm256_loadu_ps(t->z + a + k));
                _mm256_storeu_si256((__m256i *)(mj + p + k), _mm256_loadu_si256((const __m256i *)(t->j + a + k)));
            }
#endif
            p += n;
        }
        /* only the blocks holding the own range test for self */
        const int own = exclude_self && no > 0;
        const uint32_t e = (po + no + 7u) & ~7u, s0 = own ? po & ~7u : total, s1 = own && e < total ? e : total;
        test_span(0, s0, gn, qx, qy, qz, self, &m, dim3, 0, room, vr2, dst, c, stride, d2dst, sums);
        test_span(s0, s1, gn, qx, qy, qz, self, &m, dim3, 1, room, vr2, dst, c, stride, d2dst, sums);
        test_span(s1, total, gn, qx, qy, qz, self, &m, dim3, 0, room, vr2, dst, c, stride, d2dst, sums);
    } else {
        uint32_t cmax = 0; /* the largest c[u] so far */
        for (int r = 0; r < nr; r++) {
            const uint32_t a = ra[r], b = rb[r];
            if (a >= b)
                continue;
            /* the counts only grow, and every query takes part in each block */
            cmax = test_span(a, b, gn, qx, qy, qz, self, t, dim3, exclude_self && r == rself,
                             (uint64_t)cmax + (b - a) + NB_W <= stride, vr2, dst, c, stride, d2dst, sums);
        }
    }
    uint32_t cm = 0;
    for (uint32_t u = 0; u < gn; u++) {
        nb_pad_row(dst[u], c[u], stride);
        count[id[u]] = c[u];
        cm = c[u] > cm ? c[u] : cm;
        if (sums && c[u] <= stride) /* else truncated: the caller rebuilds */
            ks->out[id[u]] = row_ksum(dst[u], d2dst[u], c[u], stride, ks, _mm256_set1_ps(ks->inv_H));
    }
    return cm;
}

/* test_group_d for dim3 = g->dim == 3 and sums = (ks != NULL), each
 * compiled with them constant. */
static inline uint32_t test_group(uint32_t gn, const float *qx, const float *qy, const float *qz, const uint32_t *id,
                                  int exclude_self, int rself, const uint32_t *ra, const uint32_t *rb, int nr,
                                  const nb_soa *t, int dim3, float r2, uint32_t *restrict count,
                                  uint32_t *restrict idx, uint32_t stride, const nb_ksum *ks, float *d2buf)
{
    if (ks)
        return dim3 ? test_group_d(gn, qx, qy, qz, id, exclude_self, rself, ra, rb, nr, t, 1, r2, count, idx, stride,
                                   ks, d2buf, 1)
                    : test_group_d(gn, qx, qy, qz, id, exclude_self, rself, ra, rb, nr, t, 0, r2, count, idx, stride,
                                   ks, d2buf, 1);
    return dim3 ? test_group_d(gn, qx, qy, qz, id, exclude_self, rself, ra, rb, nr, t, 1, r2, count, idx, stride,
                               NULL, NULL, 0)
                : test_group_d(gn, qx, qy, qz, id, exclude_self, rself, ra, rb, nr, t, 0, r2, count, idx, stride,
                               NULL, NULL, 0);
}

/* The candidate ranges of cell (ix, iy, iz): one per (y, z) row of the
 * 3x3(x3) block, three cells of x each. Returns their number; *rself is
 * the index of the range holding the cell itself. */
static inline int cell_ranges(const nb_grid *g, const uint32_t *restrict cs, int ix, int iy, int iz, uint32_t ra[9],
                              uint32_t rb[9], int *rself)
{
    const int n0 = g->n[0], n1 = g->n[1], n2 = g->n[2];
    const int xlo = ix > 0 ? ix - 1 : 0, xhi = ix < n0 - 1 ? ix + 1 : n0 - 1;
    const int ylo = iy > 0 ? iy - 1 : 0, yhi = iy < n1 - 1 ? iy + 1 : n1 - 1;
    const int zlo = iz > 0 ? iz - 1 : 0, zhi = iz < n2 - 1 ? iz + 1 : n2 - 1;
    int nr = 0;
    *rself = (iz - zlo) * (yhi - ylo + 1) + (iy - ylo);
    for (int z = zlo; z <= zhi; z++)
        for (int y = ylo; y <= yhi; y++) {
            const uint32_t row = (uint32_t)n0 * ((uint32_t)y + (uint32_t)n1 * (uint32_t)z);
            const uint32_t a = cs[row + (uint32_t)xlo], b = cs[row + (uint32_t)xhi + 1];
            ra[nr] = a;
            rb[nr] = b < a ? a : b; /* past nb_sort's high-water mark: [n, 0), empty */
            nr++;
        }
    return nr;
}

#define NB_CHUNK 256u

/* With kernel sums (ks), the calling thread's buffer for the squared
 * distances of a group's rows (test_group_d), freed by the caller; without
 * memory *nomem is set and the build fails. NULL without sums. */
static float *group_d2_buffer(const nb_ksum *ks, uint32_t stride, int *nomem)
{
    if (!ks)
        return NULL;
    float *b = aligned_alloc(32, (size_t)NB_GROUP * stride * sizeof(float));
    if (!b) {
#pragma omp atomic write
        *nomem = 1;
    }
    return b;
}

/* Chunk ch of n items, [*lo, *hi); 0 when the thread must skip it (sums
 * asked for, but its buffer could not be had: the build fails anyway). */
static inline int chunk_bounds(int64_t ch, uint32_t n, const nb_ksum *ks, const float *d2buf, uint32_t *lo,
                               uint32_t *hi)
{
    *lo = (uint32_t)ch * NB_CHUNK;
    *hi = n - *lo < NB_CHUNK ? n : *lo + NB_CHUNK;
    return !ks || d2buf;
}

/* The set against itself, AVX2: the queries of one cell share the same
 * candidate ranges, so walk cell by cell and test each block of 8 candidates
 * against a group of the cell's queries at once. This loads each candidate
 * block once per group instead of once per query and makes the inner trip
 * counts constant within a cell (well predicted). Results are identical to
 * build_pass: per query, candidates in ascending slot order. */
static uint32_t build_cells(const nb_grid *g, const uint32_t *restrict cs, const uint32_t *restrict key,
                            const nb_soa *t, uint32_t nt, uint32_t nrows, float r2, int exclude_self,
                            uint32_t *restrict count, uint32_t *restrict idx, uint32_t stride, const nb_ksum *ks,
                            int *nomem)
{
    const int n0 = g->n[0], n1 = g->n[1];
    const int dim3 = g->dim == 3;
    const float *restrict sx = t->x, *restrict sy = t->y, *restrict sz = t->z;
    const uint32_t *restrict sj = t->j;
    const int64_t nchunks = ((int64_t)nt + NB_CHUNK - 1) / NB_CHUNK;
    uint32_t maxc = 0;

    /* Work is split into chunks of sorted slots (cost O(n), whatever the
     * number of cells); inside a chunk, runs of slots of one cell share
     * their candidate ranges. A cell cut by a chunk edge is simply done as
     * two runs: results do not depend on the split. */
#pragma omp parallel reduction(max : maxc) if (nt >= NB_PAR_MIN)
    {
        float *d2buf = group_d2_buffer(ks, stride, nomem);
#pragma omp for schedule(dynamic, 1)
        for (int64_t ch = 0; ch < nchunks; ch++) {
            uint32_t clo, chi;
            if (!chunk_bounds(ch, nt, ks, d2buf, &clo, &chi))
                continue;
            for (uint32_t qa = clo, qb; qa < chi; qa = qb) {
                const uint32_t cell = key[sj[qa]];
                qb = cs[cell + 1] < chi ? cs[cell + 1] : chi;
                const int ix = (int)(cell % (uint32_t)n0), iy = (int)(cell / (uint32_t)n0 % (uint32_t)n1);
                const int iz = (int)(cell / ((uint32_t)n0 * (uint32_t)n1));
                uint32_t ra[9], rb[9];
                int rself;
                const int nr = cell_ranges(g, cs, ix, iy, iz, ra, rb, &rself);
                for (uint32_t g0 = qa; g0 < qb; g0 += NB_GROUP) {
                    const uint32_t gn = qb - g0 < NB_GROUP ? qb - g0 : NB_GROUP;
                    uint32_t m;
                    if (nrows >= nt)
                        m = test_group(gn, sx + g0, sy + g0, sz + g0, sj + g0, exclude_self, rself, ra, rb, nr, t,
                                       dim3, r2, count, idx, stride, ks, d2buf);
                    else { /* the group's queries below nrows; the others' rows empty (a row does not depend on
                            * the other queries of its group) */
                        float gx[NB_GROUP], gy[NB_GROUP], gz[NB_GROUP];
                        uint32_t gj[NB_GROUP], gm = 0;
                        for (uint32_t u = 0; u < gn; u++) {
                            const uint32_t j = sj[g0 + u];
                            if (j >= nrows) {
                                count[j] = 0;
                                if (ks)
                                    ks->out[j] = 0.0f;
                                continue;
                            }
                            gx[gm] = sx[g0 + u], gy[gm] = sy[g0 + u], gz[gm] = sz[g0 + u], gj[gm++] = j;
                        }
                        m = gm ? test_group(gm, gx, gy, gz, gj, exclude_self, rself, ra, rb, nr, t, dim3, r2, count,
                                            idx, stride, ks, d2buf)
                               : 0;
                    }
                    maxc = m > maxc ? m : maxc;
                }
            }
        }
        free(d2buf);
    }
    return maxc;
}

/* One set against another (a fluid against its walls), AVX2, no periodic
 * axis: runs of consecutive queries in one cell (queries reordered along
 * the cell key come in such runs) share the near-map test and the candidate
 * ranges and are tested as one group, as in build_cells. Results are
 * identical to build_pass. */
static uint32_t build_cross(const nb_grid *g, const float *restrict xq, uint32_t nq, const uint32_t *restrict cs,
                            const uint8_t *restrict near, const nb_soa *t, float r2, uint32_t *restrict count,
                            uint32_t *restrict idx, uint32_t stride, const nb_ksum *ks, int *nomem)
{
    const float inv = 1.0f / g->cell;
    const float o0 = g->origin[0], o1 = g->origin[1], o2 = g->origin[2];
    const int f0 = g->off[0], f1 = g->off[1], f2 = g->off[2];
    const int n0 = g->n[0], n1 = g->n[1], n2 = g->n[2];
    const int dim3 = g->dim == 3;
    const int64_t nchunks = ((int64_t)nq + NB_CHUNK - 1) / NB_CHUNK;
    uint32_t maxc = 0;

#pragma omp parallel reduction(max : maxc) if (nq >= NB_PAR_MIN)
    {
        float *d2buf = group_d2_buffer(ks, stride, nomem);
#pragma omp for schedule(dynamic, 1)
        for (int64_t ch = 0; ch < nchunks; ch++) {
            uint32_t q0, q1;
            if (!chunk_bounds(ch, nq, ks, d2buf, &q0, &q1))
                continue;
#define CELL_OF(q, c)                                                                \
    do {                                                                             \
        (c)[0] = nb_axis(xq[3 * (size_t)(q)], o0, inv, f0, n0);                          \
        (c)[1] = nb_axis(xq[3 * (size_t)(q) + 1], o1, inv, f1, n1);                      \
        (c)[2] = dim3 ? nb_axis(xq[3 * (size_t)(q) + 2], o2, inv, f2, n2) : 0;           \
    } while (0)
            for (uint32_t qa = q0, qb; qa < q1; qa = qb) {
                int cx[3];
                CELL_OF(qa, cx);
                /* the run: following queries in the same cell, at most NB_GROUP */
                for (qb = qa + 1; qb < q1 && qb - qa < NB_GROUP; qb++) {
                    int cn[3];
                    CELL_OF(qb, cn);
                    if (cn[0] != cx[0] || cn[1] != cx[1] || cn[2] != cx[2])
                        break;
                }
#undef CELL_OF
                const uint32_t gn = qb - qa;
                if (near && !near[(size_t)cx[0] + (size_t)n0 * ((size_t)cx[1] + (size_t)n1 * (size_t)cx[2])]) {
                    for (uint32_t u = 0; u < gn; u++) {
                        count[qa + u] = 0;
                        if (ks)
                            ks->out[qa + u] = 0.0f;
                    }
                    continue;
                }
                uint32_t ra[9], rb[9];
                int rself;
                const int nr = cell_ranges(g, cs, cx[0], cx[1], cx[2], ra, rb, &rself);
                float qx[NB_GROUP], qy[NB_GROUP], qz[NB_GROUP];
                uint32_t id[NB_GROUP];
                for (uint32_t u = 0; u < gn; u++) {
                    const size_t q = qa + u;
                    qx[u] = xq[3 * q];
                    qy[u] = xq[3 * q + 1];
                    qz[u] = dim3 ? xq[3 * q + 2] : 0.0f;
                    id[u] = (uint32_t)q;
                }
                const uint32_t m =
                    test_group(gn, qx, qy, qz, id, 0, -1, ra, rb, nr, t, dim3, r2, count, idx, stride, ks, d2buf);
                maxc = m > maxc ? m : maxc;
            }
        }
        free(d2buf);
    }
    return maxc;
}
#endif

/* x of the target's particles into buf in sorted-slot order: len floats of
 * x, y, z, then len particle indices; the NB_PAD slots past n are padding
 * (zeros, index UINT32_MAX), read only by vector loads past a range's end */
static void gather_slots(const nb_sorted *target, const float *xt, float *buf, size_t len)
{
    const uint32_t nt = target->n;
    const uint32_t *restrict order = target->order;
    float *restrict tx = buf, *restrict ty = buf + len, *restrict tz = buf + 2 * len;
    uint32_t *restrict tj = (uint32_t *)(void *)(buf + 3 * len);
    const int64_t nn = (int64_t)nt;
#pragma omp parallel for schedule(static) if (nt >= NB_PAR_MIN)
    for (int64_t k = 0; k < nn; k++) {
        const uint32_t j = order[k];
        const float *p = xt + 3 * (size_t)j;
        tx[k] = p[0];
        ty[k] = p[1];
        tz[k] = p[2];
        tj[k] = j;
    }
    for (size_t k = nt; k < len; k++) {
        tx[k] = ty[k] = tz[k] = 0.0f;
        tj[k] = UINT32_MAX;
    }
}

int nb_build(nb_list *out, const nb_grid *g, const float *xq, uint32_t nq, const nb_sorted *target,
             const float *xt, float radius, int exclude_self)
{
    return nb_build_sums(out, g, xq, nq, target, xt, radius, exclude_self, NULL);
}

int nb_build_sums(nb_list *out, const nb_grid *g, const float *xq, uint32_t nq, const nb_sorted *target,
                  const float *xt, float radius, int exclude_self, nb_ksum *ks)
{
    return nb_build_rows(out, g, xq, nq, nq, target, xt, radius, exclude_self, ks);
}

int nb_build_rows(nb_list *out, const nb_grid *g, const float *xq, uint32_t nq, uint32_t nrows,
                  const nb_sorted *target, const float *xt, float radius, int exclude_self, nb_ksum *ks)
{
    if (nrows > nq)
        nrows = nq;
    if (ks)
        ks->done = 0;
    if (!out || !g || !target || (nq && !xq) || !nb_grid_ok(g))
        return -1;
    if (isnan(radius) || radius > g->cell)
        return -1;
    const uint32_t nt = target->n;
    const uint32_t ncells = (uint32_t)g->n[0] * (uint32_t)g->n[1] * (uint32_t)g->n[2];
    if (nt && (!xt || target->ncells != ncells || !target->key || !target->order || !target->cell_start))
        return -1;

    uint32_t stride = out->stride ? out->stride : (g->dim == 3 ? 64u : 32u);
    if (list_reserve(out, nq, stride))
        return -1;
    out->n = nq;
    if (nq == 0)
        return 0;
    if (nt == 0 || !(radius > 0.0f)) {
        memset(out->count, 0, (size_t)nq * sizeof(uint32_t));
        if (ks && ks->w && ks->out) {
            memset(ks->out, 0, (size_t)nq * sizeof(float));
            ks->done = 1;
        }
        return 0;
    }

    /* The target positions in sorted-slot order, so the candidate loop
     * streams through memory instead of chasing order[]: kept by a static
     * target (nb_sorted_keep_slots), else gathered here. */
    const size_t len = (size_t)nt + NB_PAD;
    float *buf = NULL;
    if (target->slots && target->slots_x == xt && target->slots_len == len)
        buf = target->slots;
    else if (!(buf = malloc(len * (3 * sizeof(float) + sizeof(uint32_t)))))
        return -1;
    else
        gather_slots(target, xt, buf, len);
    nb_soa t = {buf, buf + len, buf + 2 * len, (uint32_t *)(void *)(buf + 3 * len)};
    /* the set against itself: walk the queries in sorted order */
    const int same_set = xq == xt && nq == nt;

    const float r2 = radius * radius;
    int rc = 0;
    int summed = 0, nomem = 0;
    for (;;) {
        uint32_t maxc;
#if defined(__AVX2__)
        /* kernel sums only come with the grouped AVX2 builds */
        const nb_ksum *kv = ks && ks->w && ks->out ? ks : NULL;
        if (same_set && !g->periodic) {
            /* slots past n_in: particles the sort left out, rows empty */
            const uint32_t nin = target->n_in < nt ? target->n_in : nt;
            maxc = build_cells(g, target->cell_start, target->key, &t, nin, nrows, r2, exclude_self, out->count,
                               out->idx, out->stride, kv, &nomem);
            for (uint32_t k = nin; k < nt; k++) {
                out->count[t.j[k]] = 0;
                if (kv)
                    kv->out[t.j[k]] = 0.0f;
            }
            summed = kv != NULL;
        } else if (!same_set && !exclude_self && !g->periodic) {
            maxc = build_cross(g, xq, nrows, target->cell_start,
                               target->near && target->near_cells == ncells ? target->near : NULL, &t, r2,
                               out->count, out->idx, out->stride, kv, &nomem);
            if (nrows < nq) { /* empty rows */
                memset(out->count + nrows, 0, (size_t)(nq - nrows) * sizeof(uint32_t));
                if (kv)
                    memset(kv->out + nrows, 0, (size_t)(nq - nrows) * sizeof(float));
            }
            summed = kv != NULL;
        } else
#endif
            maxc = build_pass(g, xq, nq, nrows, same_set, target->cell_start,
                              !g->periodic && target->near && target->near_cells == ncells ? target->near : NULL,
                              &t, r2, exclude_self, out->count, out->idx, out->stride);
        if (nomem) {
            rc = -1;
            break;
        }
        if (maxc <= out->stride)
            break;
        /* rare: some particle had more neighbours than fit; widen and redo */
        uint64_t ns = ((uint64_t)maxc + 7u) & ~(uint64_t)7u;
        if (ns > UINT32_MAX || list_reserve(out, nq, (uint32_t)ns)) {
            rc = -1;
            break;
        }
    }
    if (buf != target->slots)
        free(buf);
    if (ks && !rc)
        ks->done = summed;
    return rc;
}

int nb_sorted_keep_slots(nb_sorted *s, const float *x)
{
    if (!s || (s->n && !x) || !s->order)
        return -1;
    const size_t len = (size_t)s->n + NB_PAD;
    if (s->slots_len != len || !s->slots) {
        float *b = floe_big_alloc(len * (3 * sizeof(float) + sizeof(uint32_t)));
        if (!b)
            return -1;
        free(s->slots);
        s->slots = b;
        s->slots_len = len;
    }
    gather_slots(s, x, s->slots, len);
    s->slots_x = x;
    return 0;
}

/* ---------------------------------------------------------------- filter -- */

#define NB_FCHUNK 256u /* rows per work chunk */

/* Rows [r0, r1) of in cut to d2 < r2 into out (nb_filter); with sums the
 * d2 and w of the kept entries go to d2b and wb (stride floats each) and
 * the row's sum to ks->out. Returns the largest count (may exceed the
 * stride: those rows are truncated and the caller widens and redoes). */
static uint32_t filter_rows(uint32_t r0, uint32_t r1, nb_list *out, const nb_list *in, int dim3, const float *xq,
                            const float *pack, float r2, nb_ksum *ks)
{
    const uint32_t os = out->stride, is = in->stride;
    uint32_t maxc = 0;
    for (uint32_t i = r0; i < r1; i++) {
        const uint32_t *restrict row = in->idx + (size_t)i * is;
        const uint32_t cnt = in->count[i];
        uint32_t *restrict dst = out->idx + (size_t)i * os;
        const float px = xq[3 * (size_t)i], py = xq[3 * (size_t)i + 1], pz = dim3 ? xq[3 * (size_t)i + 2] : 0.0f;
        uint32_t c = 0;
#if defined(__AVX2__)
        const __m256 vx = _mm256_set1_ps(px), vy = _mm256_set1_ps(py), vz = _mm256_set1_ps(pz);
        const __m256 vr2 = _mm256_set1_ps(r2), inv_H = _mm256_set1_ps(ks ? ks->inv_H : 0.0f);
        const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        /* the kernel sum as row_ksum sums the cut row: its blocks of 8 are
         * assembled in registers (pd2, pw: the p kept entries not yet in a
         * full block) and added in row order, the lanes summed at the end */
        __m256 acc = _mm256_setzero_ps(), pd2 = _mm256_setzero_ps(), pw = _mm256_setzero_ps();
        uint32_t p = 0;
        for (uint32_t k = 0; k < cnt; k += 8) {
            __m256 X, Y, Z, W;
            /* rows are padded to whole blocks of 8 with valid indices */
            floe_load4x8(pack, row + k, &X, &Y, &Z, &W);
            const __m256 dx = _mm256_sub_ps(X, vx), dy = _mm256_sub_ps(Y, vy);
            /* the build's float: candidate minus query, fused */
            __m256 d2 = _mm256_fmadd_ps(dy, dy, _mm256_mul_ps(dx, dx));
            if (dim3)
                d2 = _mm256_fmadd_ps(_mm256_sub_ps(Z, vz), _mm256_sub_ps(Z, vz), d2);
            const uint32_t rem = cnt - k;
            const uint32_t m = (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(d2, vr2, _CMP_LT_OQ)) &
                               (rem >= 8 ? 0xFFu : (1u << rem) - 1u);
            if (!m)
                continue;
            const uint32_t nm = (uint32_t)__builtin_popcount(m);
            const __m256i jv = _mm256_loadu_si256((const __m256i *)(const void *)(row + k));
            const __m256i perm = nb_compress_perm(m);
            if (c + 8 <= os) {
                _mm256_storeu_si256((__m256i *)(void *)(dst + c), _mm256_permutevar8x32_epi32(jv, perm));
            } else {
                _Alignas(32) uint32_t jl[8];
                _mm256_store_si256((__m256i *)(void *)jl, _mm256_permutevar8x32_epi32(jv, perm));
                for (uint32_t l = 0; l < nm; l++)
                    if (c + l < os)
                        dst[c + l] = jl[l];
            }
            c += nm;
            if (ks) {
                /* the kept entries rotated to start at lane p */
                const __m256i rot = _mm256_and_si256(_mm256_sub_epi32(lane, _mm256_set1_epi32((int)p)),
                                                     _mm256_set1_epi32(7));
                const __m256 cd2 = _mm256_permutevar8x32_ps(_mm256_permutevar8x32_ps(d2, perm), rot);
                const __m256 cw = _mm256_permutevar8x32_ps(_mm256_permutevar8x32_ps(W, perm), rot);
                const __m256 hi = _mm256_castsi256_ps(_mm256_cmpgt_epi32(lane, _mm256_set1_epi32((int)p - 1)));
                const __m256 bd2 = _mm256_blendv_ps(pd2, cd2, hi), bw = _mm256_blendv_ps(pw, cw, hi);
                if (p + nm >= 8) { /* a full block: its lanes in row order */
                    acc = _mm256_add_ps(acc, _mm256_mul_ps(bw, floe_w_hat8(inv_H, bd2)));
                    pd2 = cd2; /* lanes below p + nm - 8: the rest */
                    pw = cw;
                    p = p + nm - 8;
                } else {
                    pd2 = bd2;
                    pw = bw;
                    p += nm;
                }
            }
        }
        if (ks && c <= os) {
            if (p) { /* the last block: lanes past the row weigh 0, as row_ksum's */
                const __m256 below = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32((int)p), lane));
                acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_and_ps(pw, below),
                                                       floe_w_hat8(inv_H, _mm256_and_ps(pd2, below))));
            }
            ks->out[i] = c ? floe_hsum8(acc) : 0.0f;
        }
#else
        (void)ks;
        for (uint32_t k = 0; k < cnt; k++) {
            const uint32_t j = row[k];
            const float *t = pack + 4 * (size_t)j;
            const float dx = t[0] - px, dy = t[1] - py;
            const float d2 = dim3 ? dx * dx + dy * dy + (t[2] - pz) * (t[2] - pz) : dx * dx + dy * dy;
            if (d2 < r2) {
                if (c < os)
                    dst[c] = j;
                c++;
            }
        }
#endif
        if (c <= os)
            nb_pad_row(dst, c, os);
        out->count[i] = c;
        maxc = c > maxc ? c : maxc;
    }
    return maxc;
}

int nb_filter(nb_list *out, const nb_list *in, int dim, const float *xq, const float *pack, float radius,
              nb_ksum *ks)
{
    if (ks)
        ks->done = 0;
    const uint32_t nq = in ? in->n : 0;
    if (!out || !in || (nq && (!xq || !pack || !in->count || !in->idx)) || isnan(radius))
        return -1;
    uint32_t stride = out->stride ? out->stride : (dim == 3 ? 64u : 32u);
    if (list_reserve(out, nq, stride))
        return -1;
    out->n = nq;
    if (nq == 0)
        return 0;
#if !defined(__AVX2__)
    ks = NULL; /* kernel sums only with the AVX2 builds, as nb_build_sums */
#endif
    const float r2 = radius * radius;
    const int dim3 = dim == 3;
    const int64_t nchunks = ((int64_t)nq + NB_FCHUNK - 1) / NB_FCHUNK;
    for (;;) {
        uint32_t maxc = 0;
#pragma omp parallel for schedule(dynamic, 1) reduction(max : maxc) if (nq >= NB_PAR_MIN)
        for (int64_t ch = 0; ch < nchunks; ch++) {
            const uint32_t lo = (uint32_t)ch * NB_FCHUNK, hi = nq - lo < NB_FCHUNK ? nq : lo + NB_FCHUNK;
            const uint32_t m = filter_rows(lo, hi, out, in, dim3, xq, pack, r2, ks);
            maxc = m > maxc ? m : maxc;
        }
        if (maxc <= out->stride)
            break;
        uint64_t ns = ((uint64_t)maxc + 7u) & ~(uint64_t)7u;
        if (ns > UINT32_MAX || list_reserve(out, nq, (uint32_t)ns))
            return -1;
    }
    if (ks)
        ks->done = 1;
    return 0;
}

/* ---------------------------------------------------------------- free -- */

int nb_sorted_near(nb_sorted *s, const nb_grid *g)
{
    if (!s || !g || !nb_grid_ok(g) || !s->cell_start)
        return -1;
    const int n0 = g->n[0], n1 = g->n[1], n2 = g->n[2];
    const size_t nc = (size_t)n0 * (size_t)n1 * (size_t)n2;
    if (nc != s->ncells)
        return -1;
    uint8_t *a = realloc(s->near, nc), *b = malloc(nc);
    if (!a || !b) {
        free(b);
        s->near = a;
        s->near_cells = 0;
        return -1;
    }
    s->near = a;
    /* occupancy, then a dilation by one cell along x, y and z (clamped at the
     * grid's faces as the search is) */
    for (size_t c = 0; c < nc; c++)
        a[c] = s->cell_start[c + 1] > s->cell_start[c];
    const size_t st[3] = {1, (size_t)n0, (size_t)n0 * (size_t)n1};
    const int len[3] = {n0, n1, n2};
    for (int ax = 0; ax < (g->dim == 3 ? 3 : 2); ax++) {
        uint8_t *src = ax % 2 ? b : a, *dst = ax % 2 ? a : b;
        for (size_t c = 0; c < nc; c++) {
            const int i = (int)(c / st[ax] % (size_t)len[ax]);
            uint8_t v = src[c];
            if (i > 0)
                v |= src[c - st[ax]];
            if (i < len[ax] - 1)
                v |= src[c + st[ax]];
            dst[c] = v;
        }
    }
    if (g->dim == 3) /* three passes end in b, two in a */
        memcpy(a, b, nc);
    free(b);
    s->near_cells = (uint32_t)nc;
    return 0;
}

void nb_sorted_free(nb_sorted *s)
{
    if (!s)
        return;
    free(s->near);
    free(s->slots);
    free(s->key);
    free(s->order);
    free(s->scratch);
    free(s->cell_start);
    memset(s, 0, sizeof *s);
}

void nb_list_free(nb_list *l)
{
    if (!l)
        return;
    free(l->count);
    free(l->idx);
    memset(l, 0, sizeof *l);
}

static void runs_by_id(uint32_t *ord, const uint32_t *key, const uint32_t *id, uint32_t k0, uint32_t k1)
{
    for (uint32_t r0 = k0; r0 < k1;) {
        uint32_t r1 = r0 + 1;
        while (r1 < k1 && key[ord[r1]] == key[ord[r0]])
            r1++;
        for (uint32_t a = r0 + 1; a < r1; a++) {
            const uint32_t v = ord[a], idv = id[v];
            uint32_t b = a;
            for (; b > r0 && id[ord[b - 1]] > idv; b--)
                ord[b] = ord[b - 1];
            ord[b] = v;
        }
        r0 = r1;
    }
}

/* each thread's part starts at a cell's first slot, found before any slot
 * moves: the parts' runs are disjoint */
void nb_sorted_by_id(nb_sorted *s, const uint32_t *id)
{
    enum { MAXT = 256 };
    uint32_t start[MAXT + 1];
    const uint32_t n = s->n, *key = s->key;
    uint32_t *ord = s->order;
#pragma omp parallel
    {
#ifdef _OPENMP
        int T = omp_get_num_threads(), t = omp_get_thread_num();
#else
        int T = 1, t = 0;
#endif
        T = T > MAXT ? MAXT : T;
        if (t < T) {
            uint32_t k = (uint32_t)((uint64_t)n * (uint64_t)t / (uint64_t)T);
            while (k > 0 && k < n && key[ord[k]] == key[ord[k - 1]])
                k++;
            start[t] = k;
        }
        if (t == 0)
            start[T] = n;
#pragma omp barrier
        if (t < T)
            runs_by_id(ord, key, id, start[t], start[t + 1] > start[t] ? start[t + 1] : start[t]);
    }
}
