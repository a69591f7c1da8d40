/* The colour field splat of modules/surface on the device (surface_cl.c):
 * one work item per grid point of a block, summing the kernels listed for
 * its block (start/list, in kernel order, as field.c does on the host):
 *   phi(x) += V det(G) 8/pi P(|G (x - c)|),  P the cubic spline of support 1.
 * A kernel record is 16 floats: c[3], G[9], V, support half-extents[3]. */

#pragma OPENCL FP_CONTRACT OFF

#define SPLINE_SIGMA 2.54647908947f /* 8 / pi */

static float spline_unit(float q)
{
    if (q <= 0.5f)
        return 6.0f * (q * q * q - q * q) + 1.0f;
    float t = 1.0f - q;
    return q < 1.0f ? 2.0f * t * t * t : 0.0f;
}

__kernel void splat(uint npts, __global const float *kern, __global const uint *start, __global const uint *list,
                    __global const int *coord, __global float *val, float lo0, float lo1, float lo2, float cell)
{
    const uint gid = get_global_id(0);
    if (gid >= npts)
        return;
    const uint b = gid >> 9, l = gid & 511u;
    /* operation by operation as splat_block in modules/surface/field.c */
    const float px = lo0 + (float)(coord[3 * b] * 8 + (int)(l & 7u)) * cell;
    const float py = lo1 + (float)(coord[3 * b + 1] * 8 + (int)((l >> 3) & 7u)) * cell;
    const float pz = lo2 + (float)(coord[3 * b + 2] * 8 + (int)(l >> 6)) * cell;
    float sum = 0.0f;
    for (uint e = start[b]; e < start[b + 1]; e++) {
        __global const float *k = kern + 16 * (size_t)list[e];
        const float dx = px - k[0], dy = py - k[1], dz = pz - k[2];
        const float a = k[3] * dx + k[4] * dy + k[5] * dz;
        const float c = k[6] * dx + k[7] * dy + k[8] * dz;
        const float d = k[9] * dx + k[10] * dy + k[11] * dz;
        const float q2 = a * a + c * c + d * d;
        if (q2 < 1.0f) {
            const float det = k[3] * (k[7] * k[11] - k[8] * k[10]) - k[4] * (k[6] * k[11] - k[8] * k[9]) +
                              k[5] * (k[6] * k[10] - k[7] * k[9]);
            const float amp = k[12] * fabs(det) * SPLINE_SIGMA;
            sum += amp * spline_unit(sqrt(q2));
        }
    }
    val[gid] = sum;
}

/* The kernels of each block on the device, as field.c's splat_lists_fill
 * lists them (every existing block of a kernel's support box, each list in
 * kernel order):
 *   splat_zero:  counts and fill positions to 0
 *   splat_count: each kernel counts itself into its blocks
 *   (the host: an exclusive scan of the counts, api->cl_scan)
 *   splat_place: each kernel into its blocks' lists (in any order)
 *   splat_sort:  one work group a block sorts its list (bitonic, in local
 *                memory) into kernel order; a list longer than SORT_CAP is
 *                counted in *over and left (the host then lists them all)
 * The box (point_box in field.c) in double from the float corner, the
 * blocks found in the grid's hash (blocks.c's sgrid_find). */
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

#define SORT_CAP 4096

static int block_find(__global const ulong *keys, __global const int *slot, ulong mask, int4 mb, int bx, int by,
                      int bz)
{
    if (bx < 0 || by < 0 || bz < 0 || bx >= mb.x || by >= mb.y || bz >= mb.z)
        return -1;
    const ulong k = ((ulong)bx | (ulong)by << 21 | (ulong)bz << 42) + 1;
    ulong h = k;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdUL;
    h ^= h >> 33;
    for (ulong s = h & mask;; s = (s + 1) & mask) {
        const ulong ks = keys[s];
        if (ks == k)
            return slot[s];
        if (!ks)
            return -1;
    }
}

/* the block range of kernel k's support box */
static void block_box(__global const float *k, double lo0, double lo1, double lo2, double cell, int b0[3], int b1[3])
{
    const double lo[3] = {lo0, lo1, lo2};
    for (int d = 0; d < 3; d++) {
        const long p0 = (long)ceil(((double)(k[d] - k[13 + d]) - lo[d]) / cell);
        const long p1 = (long)floor(((double)(k[d] + k[13 + d]) - lo[d]) / cell);
        b0[d] = (int)(p0 >> 3);
        b1[d] = (int)(p1 >> 3);
    }
}

__kernel void splat_zero(uint n, __global uint *cnt, __global uint *pos)
{
    const uint i = get_global_id(0);
    if (i < n)
        cnt[i] = 0, pos[i] = 0;
}

__kernel void splat_count(uint n, __global const float *kern, double lo0, double lo1, double lo2, double cell,
                          int4 mb, __global const ulong *keys, __global const int *slot, ulong mask,
                          __global uint *cnt)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    int b0[3], b1[3];
    block_box(kern + 16 * (size_t)i, lo0, lo1, lo2, cell, b0, b1);
    for (int bz = b0[2]; bz <= b1[2]; bz++)
        for (int by = b0[1]; by <= b1[1]; by++)
            for (int bx = b0[0]; bx <= b1[0]; bx++) {
                const int b = block_find(keys, slot, mask, mb, bx, by, bz);
                if (b >= 0)
                    atomic_inc(&cnt[b]);
            }
}

__kernel void splat_place(uint n, __global const float *kern, double lo0, double lo1, double lo2, double cell,
                          int4 mb, __global const ulong *keys, __global const int *slot, ulong mask,
                          __global const uint *start, __global uint *pos, __global uint *list)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    int b0[3], b1[3];
    block_box(kern + 16 * (size_t)i, lo0, lo1, lo2, cell, b0, b1);
    for (int bz = b0[2]; bz <= b1[2]; bz++)
        for (int by = b0[1]; by <= b1[1]; by++)
            for (int bx = b0[0]; bx <= b1[0]; bx++) {
                const int b = block_find(keys, slot, mask, mb, bx, by, bz);
                if (b >= 0)
                    list[start[b] + atomic_inc(&pos[b])] = i;
            }
}

/* one work group a block: group g sorts blocks g, g + groups, ... (any
 * local size; the host launches 128 items a block) */
__kernel void splat_sort(uint nb, __global const uint *start, __global uint *list, __global uint *over)
{
    __local uint t[SORT_CAP];
    const uint lid = get_local_id(0), wg = get_local_size(0);
    for (uint b = get_group_id(0); b < nb; b += get_num_groups(0)) {
        const uint s0 = start[b], len = start[b + 1] - s0;
        if (len > SORT_CAP) {
            if (lid == 0)
                atomic_inc(over);
            continue;
        }
        uint m = 1;
        while (m < len)
            m <<= 1;
        for (uint i = lid; i < m; i += wg)
            t[i] = i < len ? list[s0 + i] : 0xffffffffu;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint k = 2; k <= m; k <<= 1)
            for (uint j = k >> 1; j > 0; j >>= 1) {
                for (uint i = lid; i < m; i += wg) {
                    const uint l = i ^ j;
                    if (l > i) {
                        const uint a = t[i], c = t[l];
                        if ((i & k) == 0 ? a > c : a < c)
                            t[i] = c, t[l] = a;
                    }
                }
                barrier(CLK_LOCAL_MEM_FENCE);
            }
        for (uint i = lid; i < len; i += wg)
            list[s0 + i] = t[i];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}
