/* The core's stages on the device (gravity, integrate) and its services:
 * blow-up checks, maximum speed, attribute permutation. */
#include "core/sph.h"

__kernel void gravity(__global float *a, uint n, float4 g)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    a[3 * i] = g.x;
    a[3 * i + 1] = g.y;
    a[3 * i + 2] = g.z;
}

/* symplectic Euler; per: periodic bits, lo = domain_min, L = period */
__kernel void integrate(__global const float *a, __global float *v, __global float *x, uint n, float dt, uint per,
                        float4 lo, float4 L)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    for (int k = 0; k < 3; k++) {
        const uint c = 3 * i + k;
        const float vk = v[c] + dt * a[c];
        float xk = x[c] + dt * vk;
        v[c] = vk;
        if (per & (1u << k)) {
            const float l = k == 0 ? lo.x : k == 1 ? lo.y : lo.z;
            const float p = k == 0 ? L.x : k == 1 ? L.y : L.z;
            if (xk < l || xk >= l + p) {
                xk -= p * floor((xk - l) / p);
                if (xk >= l + p)
                    xk = l;
            }
        }
        x[c] = xk;
    }
}

/* Blow-up checks after an OpenCL stage, one launch per (stage, set): the
 * first particle (lowest index) with a non-finite component in each of up
 * to four attributes written (a0..a3, c = components, 0 = none) goes to
 * flags[slot + k] by atomic_min. dom applies the domain's outside rule to
 * x on the non-periodic axes (blowup.c's, the same comparisons):
 *   1 (error)  the first particle outside goes to dw[ds] by atomic_min;
 *   2 (delete) each one outside lowers dw[ds] by one (~dw[ds] counts them)
 *              and dw[ds + 1] becomes the lowest id among them;
 *   3 (clamp)  the same count, and each one is put back onto the faces it
 *              crossed with its outward velocity zeroed, in place.
 * No argument is a NULL buffer (absent ones get a dummy). */
/* 0 if the row is finite, else 1 + (its first non-finite component is an
 * Inf): the flag word is 2 i + (Inf), so the report can say NaN or Inf as
 * the C path does, even when it is read a step later */
inline uint bad_row(__global const uint *a, uint c, uint i)
{
    for (uint k = 0; k < c; k++) {
        const uint b = a[c * i + k];
        if ((b & 0x7f800000u) == 0x7f800000u)
            return 1u + ((b & 0x007fffffu) == 0u);
    }
    return 0u;
}

__kernel void check_stage(uint n, __global const uint *a0, uint c0, __global const uint *a1, uint c1,
                          __global const uint *a2, uint c2, __global const uint *a3, uint c3,
                          int dom, __global float *x, __global float *v, __global const uint *id, int hasid,
                          float4 lo, float4 hi, int dim, uint per, __global uint *flags, uint slot,
                          __global uint *dw, uint ds)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    uint b;
    if (c0 && (b = bad_row(a0, c0, i)))
        atomic_min(&flags[slot], 2u * i + b - 1u);
    if (c1 && (b = bad_row(a1, c1, i)))
        atomic_min(&flags[slot + 1], 2u * i + b - 1u);
    if (c2 && (b = bad_row(a2, c2, i)))
        atomic_min(&flags[slot + 2], 2u * i + b - 1u);
    if (c3 && (b = bad_row(a3, c3, i)))
        atomic_min(&flags[slot + 3], 2u * i + b - 1u);
    if (dom) {
        int out = 0;
        for (int k = 0; k < dim; k++) {
            const float c = x[3 * i + k];
            const float l = k == 0 ? lo.x : k == 1 ? lo.y : lo.z;
            const float h = k == 0 ? hi.x : k == 1 ? hi.y : hi.z;
            if (!(per & (1u << k)) && (c < l || c > h))
                out = 1;
        }
        if (!out)
            return;
        if (dom == 1) {
            atomic_min(&dw[ds], i);
            return;
        }
        atomic_dec(&dw[ds]);
        atomic_min(&dw[ds + 1], hasid ? id[i] : i);
        if (dom == 3)
            for (int k = 0; k < dim; k++) {
                if (per & (1u << k))
                    continue;
                const float l = k == 0 ? lo.x : k == 1 ? lo.y : lo.z;
                const float h = k == 0 ? hi.x : k == 1 ? hi.y : hi.z;
                const float c = x[3 * i + k], vk = v[3 * i + k];
                if (c < l || c > h)
                    v[3 * i + k] = c < l ? fmax(vk, 0.0f) : fmin(vk, 0.0f);
                x[3 * i + k] = fmin(fmax(c, l), h);
            }
    }
}

/* error rule: the position of the particle flagged in w[0] into w[1..3]
 * (as the C path quotes it: where it was after the stage), one work item */
__kernel void outside_where(__global uint *w, uint ws, __global const float *x)
{
    if (get_global_id(0) != 0)
        return;
    const uint i = w[ws];
    if (i == 0xffffffffu)
        return;
    for (int k = 0; k < 3; k++)
        w[ws + 1 + k] = as_uint(x[3 * i + k]);
}

/* particle i outside [lo, hi] on an axis that is not periodic (per's
 * bits); a coordinate that is not a number counts as outside where
 * nan_out is set (as decomp.c's host test), else as inside */
inline int outside_box(__global const float *x, uint i, float4 lo, float4 hi, int dim, uint per, int nan_out)
{
    int out = 0;
    for (int k = 0; k < dim; k++) {
        const float c = x[3 * i + k];
        const float l = k == 0 ? lo.x : k == 1 ? lo.y : lo.z;
        const float h = k == 0 ? hi.x : k == 1 ? hi.y : hi.z;
        if (!(per & (1u << k)) && (nan_out ? !(c >= l && c <= h) : (c < l || c > h)))
            out = 1;
    }
    return out;
}

/* the outside rule "delete" (core/src/opencl/outside.c): keep flags for
 * api->cl_set_compact, 1 where the particle is inside the domain */
__kernel void outside_keep(uint n, __global const float *x, float4 lo, float4 hi, int dim, uint per,
                           __global uint *keep)
{
    const uint i = get_global_id(0);
    if (i < n)
        keep[i] = !outside_box(x, i, lo, hi, dim, per, 0);
}

/* the work group's largest s (active items only; a NaN as infinity) into
 * *out, as the bits of a non-negative float (ordered like the value);
 * every item of the group calls it (barriers) */
inline void group_max_into(__local uint *lmax, int active, float s, __global uint *out)
{
    if (get_local_id(0) == 0)
        *lmax = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (active)
        atomic_max(lmax, isnan(s) ? 0x7f800000u : as_uint(s));
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_local_id(0) == 0 && *lmax)
        atomic_max(out, *lmax);
}

/* max |v|^2 */
__kernel void max_speed2(__global const float *v, uint n, __global uint *out)
{
    __local uint lmax;
    const uint i = get_global_id(0), k = i < n ? i : 0;
    const float a = v[3 * k], b = v[3 * k + 1], c = v[3 * k + 2];
    group_max_into(&lmax, i < n, a * a + b * b + c * c, out);
}

/* compaction (api->cl_set_compact): the kept particles' old indices in
 * order, from the keep flags and their exclusive scan */
__kernel void compact_order(__global const uint *keep, __global const uint *rank, uint n, __global uint *order)
{
    const uint i = get_global_id(0);
    if (i < n && keep[i])
        order[rank[i]] = i;
}

/* dst[k] = src[perm[k]] for elements of `comps` words */
__kernel void permute(__global const uint *src, __global uint *dst, __global const uint *perm, uint n, uint comps)
{
    const uint k = get_global_id(0);
    if (k >= n)
        return;
    const uint j = perm[k];
    for (uint c = 0; c < comps; c++)
        dst[comps * k + c] = src[comps * j + c];
}

/* MPI (core/src/opencl/rows.c): the largest squared distance of n
 * positions from x0, as the bits of a non-negative float (a NaN counts as
 * infinitely far) */
__kernel void max_drift2(__global const float *x, __global const float *x0, uint n, __global uint *out)
{
    __local uint lmax;
    const uint i = get_global_id(0), k = i < n ? i : 0;
    const float a = x[3 * k] - x0[3 * k], b = x[3 * k + 1] - x0[3 * k + 1], c = x[3 * k + 2] - x0[3 * k + 2];
    group_max_into(&lmax, i < n, a * a + b * b + c * c, out);
}

/* MPI: how many of n positions lie outside [lo, hi] (the outside rule
 * "delete" at a decomposed step's end, as decomp.c tests on the host) */
__kernel void count_outside(uint n, __global const float *x, float4 lo, float4 hi, int dim, __global uint *out)
{
    const uint i = get_global_id(0);
    if (i < n && outside_box(x, i, lo, hi, dim, 0u, 1))
        atomic_inc(out);
}

/* MPI (core/src/opencl/rows.c): rows idx[0..m) of a buffer of `comps`
 * words a row, into dst from word `off` on (several buffers' rows one
 * after another, read back at once) */
__kernel void gather_rows(__global const uint *src, __global uint *dst, uint off, __global const uint *idx, uint m,
                          uint comps)
{
    const uint k = get_global_id(0);
    if (k >= m)
        return;
    const uint j = idx[k];
    for (uint c = 0; c < comps; c++)
        dst[off + comps * k + c] = src[comps * j + c];
}

/* MPI (core/src/opencl/rows.c): flags of the particles a rebuild looks at
 * on the host. mode 0: outside the rank's box [lo, hi) on some axis (the
 * migration's leavers; not a number: outside); mode 1: within r of a face
 * of [lo, hi] on some axis (the ghost candidates). Axes with infinite
 * bounds are not cut. */
__kernel void dd_select(uint n, __global const float *x, float4 lo, float4 hi, float r, int mode, __global uint *flag)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    int f = 0;
    for (int k = 0; k < 3; k++) {
        const float l = k == 0 ? lo.x : k == 1 ? lo.y : lo.z;
        const float h = k == 0 ? hi.x : k == 1 ? hi.y : hi.z;
        const float c = x[3 * i + k];
        if (mode == 0)
            f |= !(c >= l && c < h);
        else
            f |= (c - l <= r) || (h - c <= r);
    }
    flag[i] = (uint)f;
}

/* MPI: keep flags, 1 but at the m indices idx (the leavers) */
__kernel void dd_drop(__global uint *keep, __global const uint *idx, uint m)
{
    const uint k = get_global_id(0);
    if (k < m)
        keep[idx[k]] = 0;
}
