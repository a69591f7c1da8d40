/* The particles' cell sort of modules/surface on the device (cells_cl.c):
 * the arrays field.c's cells_build makes on the host, in the same order,
 * made from positions already on the device (the particles, or the
 * smoothed centres in the kernel records: `stride` floats a point).
 *
 *   cells_min      the least coordinate of each axis (atomic_min on the
 *                  floats' ordered bits: exact, in any order)
 *   cells_keys     the corner lo = min - (CELL_DIV + 1) h, each point's
 *                  cell, a sort key in the order of cell_key (z, then y,
 *                  then x) and its index; the core's sort (api->cl_sort,
 *                  stable) then orders them as the host's radix sort does
 *   cells_gather   positions by entry (one array an axis, LANES zeros
 *                  after the last), cell keys by entry, and a flag where a
 *                  cell starts; the core's scan numbers the cells
 *   cells_compact  first entry and key of each occupied cell, then n and
 *                  ULONG_MAX; the scan's word n is the cell count */
#pragma OPENCL FP_CONTRACT OFF
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

#define CELL_DIV 2
#define LANES 8
#define KEY_MASK 0x1fffffL

/* a float's bits as an int that orders as the float does */
#include "surface/ordered.h"

/* m[3] starts at INT_MAX (the host fills it); local size at most 256 */
__kernel void cells_min(uint n, __global const float *pos, uint stride, __global int *m)
{
    __local int l[3][256];
    const uint i = get_global_id(0), lid = get_local_id(0), ls = get_local_size(0);
    for (int d = 0; d < 3; d++)
        l[d][lid] = i < n ? ordered(pos[(size_t)stride * i + d]) : INT_MAX;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = 1; s < ls; s <<= 1) {
        if (lid % (2 * s) == 0 && lid + s < ls)
            for (int d = 0; d < 3; d++)
                l[d][lid] = min(l[d][lid], l[d][lid + s]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        for (int d = 0; d < 3; d++)
            atomic_min(&m[d], l[d][0]);
}

static void cell_of(__global const float *p, const double lo[3], double inv, long c[3])
{
    for (int d = 0; d < 3; d++)
        c[d] = (long)floor(((double)p[d] - lo[d]) * inv) & KEY_MASK;
}

static void corner(__global const int *m, double h, double lo[3])
{
    for (int d = 0; d < 3; d++)
        lo[d] = (double)unordered(m[d]) - (CELL_DIV + 1) * h;
}

/* skey: (cz ny + cy) nx + cx (nx, ny bound the cells of an axis) */
__kernel void cells_keys(uint n, __global const float *pos, uint stride, __global const int *m, double h, double inv,
                         ulong nx, ulong ny, __global ulong *skey, __global uint *idx, __global double *geo)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    double lo[3];
    long c[3];
    corner(m, h, lo);
    if (i == 0)
        geo[0] = lo[0], geo[1] = lo[1], geo[2] = lo[2];
    cell_of(pos + (size_t)stride * i, lo, inv, c);
    skey[i] = ((ulong)c[2] * ny + (ulong)c[1]) * nx + (ulong)c[0];
    idx[i] = i;
}

__kernel void cells_gather(uint n, __global const float *pos, uint stride, __global const double *geo, double inv,
                           __global const ulong *skey, __global const uint *idx, __global float *X,
                           __global float *Y, __global float *Z, __global ulong *key, __global uint *flag)
{
    const uint e = get_global_id(0);
    if (e >= n + LANES)
        return;
    if (e >= n) {
        X[e] = Y[e] = Z[e] = 0.0f;
        if (e == n)
            flag[n] = 0;
        return;
    }
    __global const float *p = pos + (size_t)stride * idx[e];
    const double lo[3] = {geo[0], geo[1], geo[2]};
    long c[3];
    cell_of(p, lo, inv, c);
    X[e] = p[0], Y[e] = p[1], Z[e] = p[2];
    key[e] = (ulong)c[0] | (ulong)c[1] << 21 | (ulong)c[2] << 42;
    flag[e] = e == 0 || skey[e] != skey[e - 1];
}

/* after the scan: flag[e] is the cell of entry e's number when it starts one */
__kernel void cells_compact(uint n, __global const ulong *key, __global const uint *flag, __global ulong *ckey,
                            __global uint *cell)
{
    const uint e = get_global_id(0);
    if (e > n)
        return;
    const uint c = flag[e];
    if (e == n) {
        ckey[c] = ULONG_MAX;
        cell[c] = n;
    } else if (flag[e + 1] != c) {
        ckey[c] = key[e];
        cell[c] = e;
    }
}
