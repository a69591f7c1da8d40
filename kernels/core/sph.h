/* Shared by the OpenCL kernels of every module (#include "core/sph.h"):
 * the cubic spline written branch-free exactly as the C reference path
 * (modules/wcsph/wcsph.c), and the minimum image on periodic axes.
 * Contraction into fma is off so sums round as the C path's do. */
#ifndef FLOE_CL_SPH_H
#define FLOE_CL_SPH_H

#pragma OPENCL FP_CONTRACT OFF

/* Kernel constants: kc = (inv_H, g = sigma / H, r_min2 = (1e-6 H)^2, sigma) */
inline float floe_pos(float a) { return 0.5f * (a + fabs(a)); } /* max(a, 0) */
inline float floe_neg(float a) { return 0.5f * (a - fabs(a)); } /* min(a, 0) */

/* W / sigma at distance^2 r2 */
inline float floe_w_hat(float4 kc, float r2)
{
    const float q = sqrt(r2) * kc.x;
    const float a = floe_pos(1.0f - q), b = floe_pos(0.5f - q);
    return 2.0f * a * a * a - 8.0f * b * b * b;
}

/* (dW/dr) / r at distance^2 r2: grad W_ij = floe_dw_r * x_ij */
inline float floe_dw_r(float4 kc, float r2)
{
    const float r = sqrt(r2 + kc.z);
    const float q = r * kc.x;
    const float a = floe_pos(1.0f - q), b = floe_pos(0.5f - q);
    return kc.y * (24.0f * b * b - 6.0f * a * a) / r;
}

/* Periodic axes: per = (Lx, Ly, Lz, any periodic axis ? 1 : 0), L = 0 on
 * the others. Minimum image of x_i - x_j, branch-free as in the C path. */
inline float3 floe_min_image(float3 d, float4 per)
{
    if (per.w != 0.0f) {
        const float3 hL = 0.5f * per.xyz;
        d.x -= per.x * ((float)(d.x > hL.x) - (float)(d.x < -hL.x));
        d.y -= per.y * ((float)(d.y > hL.y) - (float)(d.y < -hL.y));
        d.z -= per.z * ((float)(d.z > hL.z) - (float)(d.z < -hL.z));
    }
    return d;
}

inline float3 floe_load3(__global const float *x, uint i)
{
    return (float3)(x[3 * i], x[3 * i + 1], x[3 * i + 2]);
}

/* x_i - x_j (minimum image) as d and its r2, for neighbour j of target xt,
 * with xi and per in scope */
#define FLOE_X_IJ(xt)                                                \
    const float3 d = floe_min_image(xi - floe_load3(xt, j), per);    \
    const float r2 = d.x * d.x + d.y * d.y + d.z * d.z

/* The arguments of a force kernel over particles x, v, rho adding to a:
 * the module's factors (eps, cf, cb), then one fluid target set (f*: x, m,
 * rho, v; hasf = 0 when absent) and one boundary target set (b*: x, V), the
 * order of <floe/cl_module.h> floe_cl_rows' rows on the host. */
#define FLOE_FORCE_ARGS                                                                                             \
    uint n, __global const float *x, __global const float *v, __global const float *rho, __global float *a,         \
        float4 kc, float4 per, float eps, float cf, float cb, int hasf, int hasb, __global const float *xf,         \
        __global const float *mf, __global const float *rhof, __global const float *vf, __global const uint *cntf, \
        __global const uint *idxf, uint pitchf, __global const float *xb, __global const float *Vb,                \
        __global const uint *cntb, __global const uint *idxb, uint pitchb

/* the start of such a kernel: i (returns past n), xi, vi, rhoi, and the
 * fluid and boundary sums af, ab */
#define FLOE_FORCE_BEGIN                          \
    const uint i = get_global_id(0);              \
    if (i >= n)                                   \
        return;                                   \
    const float3 xi = floe_load3(x, i);           \
    const float3 vi = floe_load3(v, i);           \
    const float rhoi = rho[i];                    \
    float3 af = (float3)(0.0f), ab = (float3)(0.0f)

/* ---- one neighbour row (added with iisph and tension) ----------------------
 * Inside a kernel with i, xi, kc and per in scope, over the row of particle
 * i in a neighbour-major list (idx[k * pitch + i], cnt[i] entries) of the
 * target positions xt (FLOE_X_IJ's d and r2 per pair):
 *   FLOE_ROW_W:    s = sum_j WEIGHT W_ij / sigma
 *   FLOE_ROW_SUM3: s = sum_j V3                    (a float3)
 *   FLOE_ROW_GRAD: s = sum_j WEIGHT grad W_ij      (a float3)
 * with WEIGHT an expression in j (and d, r2), summed in list order as the
 * C rows of <floe/sph.h> sum. */
#define FLOE_ROW_W(cnt, idx, pitch, xt, WEIGHT, s)           \
    do {                                                     \
        const uint c_ = cnt[i];                              \
        float s_ = 0.0f;                                     \
        for (uint k = 0; k < c_; k++) {                      \
            const uint j = idx[k * (pitch) + i];             \
            FLOE_X_IJ(xt);                                   \
            s_ += (WEIGHT) * floe_w_hat(kc, r2);             \
        }                                                    \
        s = s_;                                              \
    } while (0)

/* s = sum_j V3 over the row, V3 a float3 expression in j, d and r2 */
#define FLOE_ROW_SUM3(cnt, idx, pitch, xt, V3, s)            \
    do {                                                     \
        const uint c_ = cnt[i];                              \
        float3 s_ = (float3)(0.0f);                          \
        for (uint k = 0; k < c_; k++) {                      \
            const uint j = idx[k * (pitch) + i];             \
            FLOE_X_IJ(xt);                                   \
            s_ += (V3);                                      \
        }                                                    \
        s = s_;                                              \
    } while (0)

#define FLOE_ROW_GRAD(cnt, idx, pitch, xt, WEIGHT, s)        \
    do {                                                     \
        const uint c_ = cnt[i];                              \
        float sx_ = 0.0f, sy_ = 0.0f, sz_ = 0.0f;            \
        for (uint k = 0; k < c_; k++) {                      \
            const uint j = idx[k * (pitch) + i];             \
            FLOE_X_IJ(xt);                                   \
            const float gk = (WEIGHT) * floe_dw_r(kc, r2);   \
            sx_ += gk * d.x;                                 \
            sy_ += gk * d.y;                                 \
            sz_ += gk * d.z;                                 \
        }                                                    \
        s = (float3)(sx_, sy_, sz_);                         \
    } while (0)

/* ---- work-group reductions (work groups of FLOE_WGS = 128 items) ---------- */
#define FLOE_WGS 128

/* max over the work group of a non-negative float, then one atomic max on
 * its bits into *out (non-negative floats order as their bit patterns) */
inline void floe_group_max(__local float *red, float v, __global uint *out)
{
    const uint l = get_local_id(0);
    red[l] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint h = FLOE_WGS / 2; h > 0; h >>= 1) {
        if (l < h)
            red[l] = fmax(red[l], red[l + h]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0)
        atomic_max(out, as_uint(red[0]));
}

/* the sum over the work group (a fixed-order tree: deterministic), valid in
 * item 0 */
inline float floe_group_sum(__local float *red, float v)
{
    const uint l = get_local_id(0);
    red[l] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint h = FLOE_WGS / 2; h > 0; h >>= 1) {
        if (l < h)
            red[l] += red[l + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return red[0];
}

/* inside a row loop over packed (x, m) neighbours: j, xj = (x_j, m_j), d = x_i
 * - x_j (minimum image) and r2, with i, k, xi and per in scope */
#define FLOE_XM_IJ(xm, idx, pitch)                                           \
    const uint j = idx[k * (pitch) + i];                                     \
    const float4 xj = xm[j];                                                 \
    const float3 d = floe_min_image(xi - xj.xyz, per);                      \
    const float r2 = d.x * d.x + d.y * d.y + d.z * d.z

/* gradient correction (floe_gamma_one of the C path, <floe/sph.h>): gamma_i
 * = dim / tr M_i, tr M_i = -(sum_j m_j / rho0 dW/dr r over the fluid row of
 * packed (x, m) + trb, the boundary part), clamped to [lo, 1/lo] */
inline float floe_gamma_row(uint i, __global const float4 *xm, float trb, float4 kc, float4 per, float inv_rho0,
                            float dim, float lo, __global const uint *cntf, __global const uint *idxf, uint pitchf)
{
    const float3 xi = xm[i].xyz;
    float s = 0.0f;
    const uint c = cntf[i];
    for (uint k = 0; k < c; k++) {
        FLOE_XM_IJ(xm, idxf, pitchf);
        s += xj.w * floe_dw_r(kc, r2) * r2;
    }
    const float t = -(inv_rho0 * s) - trb;
    const float g = t > 0.0f ? dim / t : 1.0f / lo;
    return g < lo ? lo : (g > 1.0f / lo ? 1.0f / lo : g);
}

#endif
