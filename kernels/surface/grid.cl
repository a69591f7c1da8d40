/* The sparse grid of modules/surface on the device (grid_cl.c), from the
 * kernel records already there: the blocks field.c's touch_blocks makes on
 * the host, numbered alike (by position: z, then y, then x), and each
 * block's list of kernels as splat_lists_fill makes it (kernel order).
 *
 *   parts_in      the chosen sets' positions and volumes side by side,
 *                 their box and first non-finite position
 *   kern_iso      isotropic records (field.c's kerns_isotropic)
 *   kern_box      the least c - ext and the largest c + ext of each axis
 *                 (atomics on the floats' ordered bits: exact)
 *   blk_count     each kernel's blocks: those of its point box widened by
 *                 one point (the grid's blocks), and the sub-blocks (4^3
 *                 points, 8 a block) of its point box (its splat list
 *                 entries: a point sums the kernels of its sub-block)
 *   (the core's scan of both counts)
 *   blk_emit      the (block key, kernel) pairs of both, in kernel order;
 *                 the core's stable sort (api->cl_sort) then groups them
 *                 by block, each group in kernel order
 *   blk_flag      where a block starts among the sorted keys
 *   (the core's scan numbers the blocks)
 *   blk_compact   each block's key and coordinates
 *   blk_lists     where each sub-block's list lies among the sorted pairs
 *   blk_nbr       each block's 2x2x2 neighbourhood (mesher.c's), -1 absent
 *
 * Block keys: (bz ny + by) nx + bx with (nx, ny) the grid's blocks per axis
 * (blocks.c's max_block), so sorted keys are blocks by position; sub-block
 * keys alike with 2 nx, 2 ny. A kernel
 * record is 16 floats: c[3], G[9], V, support half-extents[3]. */
#pragma OPENCL FP_CONTRACT OFF
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

#include "surface/ordered.h"

/* one set's particles into the surfacer's arrays from entry `at` on: the
 * volume m / rho0 (float division, done in double and rounded: the same
 * float) or vol without masses, the positions when copy != 0; the box of
 * its positions (box[0..2] least, box[3..5] largest, ordered bits) and the
 * entry of the first non-finite position (*bad, starting at UINT_MAX).
 * Local size at most 256. */
__kernel void parts_in(uint n, __global const float *x, __global const float *m, int has_m, float rho0, float vol,
                       int copy, uint at, __global float *xo, __global float *V, __global int *box,
                       __global uint *bad)
{
    __local int l[6][256];
    const uint i = get_global_id(0), lid = get_local_id(0), ls = get_local_size(0);
    int fin = 0;
    float p[3] = {0.0f, 0.0f, 0.0f};
    if (i < n) {
        for (int d = 0; d < 3; d++)
            p[d] = x[3 * (size_t)i + d];
        fin = isfinite(p[0]) && isfinite(p[1]) && isfinite(p[2]);
        if (!fin)
            atomic_min(bad, at + i);
        V[at + i] = has_m ? (float)((double)m[i] / (double)rho0) : vol;
        if (copy)
            for (int d = 0; d < 3; d++)
                xo[3 * ((size_t)at + i) + d] = p[d];
    }
    for (int d = 0; d < 3; d++) {
        l[d][lid] = fin ? ordered(p[d]) : INT_MAX;
        l[3 + d][lid] = fin ? ordered(p[d]) : INT_MIN;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = 1; s < ls; s <<= 1) {
        if (lid % (2 * s) == 0 && lid + s < ls)
            for (int d = 0; d < 3; d++) {
                l[d][lid] = min(l[d][lid], l[d][lid + s]);
                l[3 + d][lid] = max(l[3 + d][lid], l[3 + d][lid + s]);
            }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        for (int d = 0; d < 3; d++) {
            atomic_min(&box[d], l[d][0]);
            atomic_max(&box[3 + d], l[3 + d][0]);
        }
}

__kernel void kern_iso(uint n, __global const float *x, __global const float *V, float H, __global float *kern)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    __global float *k = kern + 16 * (size_t)i;
    const float g = 1.0f / H;
    for (int d = 0; d < 3; d++) {
        k[d] = x[3 * (size_t)i + d];
        k[13 + d] = H;
    }
    for (int d = 0; d < 9; d++)
        k[3 + d] = d % 4 == 0 ? g : 0.0f;
    k[12] = V[i];
}

/* box[0..2] start at INT_MAX, box[3..5] at INT_MIN; local size at most 256 */
__kernel void kern_box(uint n, __global const float *kern, __global int *box)
{
    __local int l[6][256];
    const uint i = get_global_id(0), lid = get_local_id(0), ls = get_local_size(0);
    __global const float *k = kern + 16 * (size_t)i;
    for (int d = 0; d < 3; d++) {
        l[d][lid] = i < n ? ordered(k[d] - k[13 + d]) : INT_MAX;
        l[3 + d][lid] = i < n ? ordered(k[d] + k[13 + d]) : INT_MIN;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = 1; s < ls; s <<= 1) {
        if (lid % (2 * s) == 0 && lid + s < ls)
            for (int d = 0; d < 3; d++) {
                l[d][lid] = min(l[d][lid], l[d][lid + s]);
                l[3 + d][lid] = max(l[3 + d][lid], l[3 + d][lid + s]);
            }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        for (int d = 0; d < 3; d++) {
            atomic_min(&box[d], l[d][0]);
            atomic_max(&box[3 + d], l[3 + d][0]);
        }
}

/* the blocks (shift 3; or the sub-blocks of 4^3 points: shift 2) of kernel
 * k's point box widened by `margin` points (field.c's point_box; clamped as
 * blocks.c's sgrid_touch_box); m: the grid's blocks (or sub-blocks) an axis */
static void block_range(__global const float *k, const double lo[3], double cell, int4 m, int margin, int shift,
                        int b0[3], int b1[3])
{
    const int mm[3] = {m.x, m.y, m.z};
    for (int d = 0; d < 3; d++) {
        long p0 = (long)ceil(((double)(k[d] - k[13 + d]) - lo[d]) / cell) - margin;
        const long p1 = (long)floor(((double)(k[d] + k[13 + d]) - lo[d]) / cell) + margin;
        p0 = p0 < 0 ? 0 : p0;
        b0[d] = (int)(p0 >> shift);
        b1[d] = (int)(p1 >> shift);
        b1[d] = b1[d] >= mm[d] ? mm[d] - 1 : b1[d];
    }
}

static uint blocks_in(const int b0[3], const int b1[3])
{
    uint c = 1;
    for (int d = 0; d < 3; d++)
        c *= b1[d] >= b0[d] ? (uint)(b1[d] - b0[d] + 1) : 0u;
    return c;
}

__kernel void blk_count(uint n, __global const float *kern, double lo0, double lo1, double lo2, double cell, int4 mb,
                        __global uint *cnt1, __global uint *cnt0)
{
    const uint i = get_global_id(0);
    if (i > n)
        return;
    if (i == n) { /* the scans leave the totals here */
        cnt1[n] = cnt0[n] = 0;
        return;
    }
    const double lo[3] = {lo0, lo1, lo2};
    int b0[3], b1[3];
    block_range(kern + 16 * (size_t)i, lo, cell, mb, 1, 3, b0, b1);
    cnt1[i] = blocks_in(b0, b1);
    block_range(kern + 16 * (size_t)i, lo, cell, mb * 2, 0, 2, b0, b1);
    cnt0[i] = blocks_in(b0, b1);
}

static void emit(__global const float *k, const double lo[3], double cell, int4 mb, int margin, int shift, uint at,
                 __global ulong *key, __global uint *val, uint i)
{
    int b0[3], b1[3];
    block_range(k, lo, cell, mb, margin, shift, b0, b1);
    for (int bz = b0[2]; bz <= b1[2]; bz++)
        for (int by = b0[1]; by <= b1[1]; by++)
            for (int bx = b0[0]; bx <= b1[0]; bx++) {
                key[at] = ((ulong)bz * (ulong)mb.y + (ulong)by) * (ulong)mb.x + (ulong)bx;
                val[at++] = i;
            }
}

__kernel void blk_emit(uint n, __global const float *kern, double lo0, double lo1, double lo2, double cell, int4 mb,
                       __global const uint *cnt1, __global const uint *cnt0, __global ulong *key1,
                       __global uint *val1, __global ulong *key0, __global uint *val0)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const double lo[3] = {lo0, lo1, lo2};
    emit(kern + 16 * (size_t)i, lo, cell, mb, 1, 3, cnt1[i], key1, val1, i);
    emit(kern + 16 * (size_t)i, lo, cell, mb * 2, 0, 2, cnt0[i], key0, val0, i);
}

__kernel void blk_flag(uint m, __global const ulong *key, __global uint *flag)
{
    const uint e = get_global_id(0);
    if (e < m)
        flag[e] = e == 0 || key[e] != key[e - 1];
    else if (e == m)
        flag[m] = 0;
}

__kernel void blk_compact(uint m, __global const ulong *key, __global const uint *flag, int4 mb,
                          __global ulong *bkey, __global int *coord)
{
    const uint e = get_global_id(0);
    if (e >= m || flag[e + 1] == flag[e])
        return;
    const uint b = flag[e];
    const ulong k = key[e];
    bkey[b] = k;
    coord[3 * (size_t)b] = (int)(k % (ulong)mb.x);
    coord[3 * (size_t)b + 1] = (int)(k / (ulong)mb.x % (ulong)mb.y);
    coord[3 * (size_t)b + 2] = (int)(k / (ulong)mb.x / (ulong)mb.y);
}

/* first of the m sorted keys at or above k */
static uint lower_bound(__global const ulong *key, uint m, ulong k)
{
    uint a = 0, b = m;
    while (a < b) {
        const uint mid = a + (b - a) / 2;
        if (key[mid] < k)
            a = mid + 1;
        else
            b = mid;
    }
    return a;
}

/* the entries of sub-block c (at offset (c & 1, c >> 1 & 1, c >> 2 & 1) in
 * sub-blocks) of block b among the m sorted list pairs: range[2 (8 b + c)]
 * to range[2 (8 b + c) + 1] */
__kernel void blk_lists(uint nb, __global const int *coord, int4 mb, __global const ulong *lkey, uint m,
                        __global uint *range)
{
    const uint g = get_global_id(0);
    if (g >= 8 * nb)
        return;
    const uint b = g >> 3, c = g & 7;
    const ulong sx = (ulong)(2 * coord[3 * (size_t)b] + (int)(c & 1)),
                sy = (ulong)(2 * coord[3 * (size_t)b + 1] + (int)(c >> 1 & 1)),
                sz = (ulong)(2 * coord[3 * (size_t)b + 2] + (int)(c >> 2));
    const ulong k = (sz * (ulong)(2 * mb.y) + sy) * (ulong)(2 * mb.x) + sx;
    range[2 * g] = lower_bound(lkey, m, k);
    range[2 * g + 1] = lower_bound(lkey, m, k + 1);
}

__kernel void blk_nbr(uint nb, __global const ulong *bkey, __global const int *coord, int4 mb, __global int *nbr)
{
    const uint b = get_global_id(0);
    if (b >= nb)
        return;
    for (int c = 0; c < 8; c++) {
        const int x = coord[3 * (size_t)b] + (c & 1), y = coord[3 * (size_t)b + 1] + (c >> 1 & 1),
                  z = coord[3 * (size_t)b + 2] + (c >> 2 & 1);
        int found = -1;
        if (x < mb.x && y < mb.y && z < mb.z) {
            const ulong k = ((ulong)z * (ulong)mb.y + (ulong)y) * (ulong)mb.x + (ulong)x;
            const uint at = lower_bound(bkey, nb, k);
            found = at < nb && bkey[at] == k ? (int)at : -1;
        }
        nbr[8 * (size_t)b + c] = found;
    }
}
