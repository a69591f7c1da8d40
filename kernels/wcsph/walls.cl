/* wcsph.pressure_force on the device with Adami et al. 2012's wall pressure
 * (walls = "extrapolated") and the kernel-gradient correction
 * (gradient_correction = true): the OpenCL path of modules/wcsph/walls.c and
 * of those two options of st_pressure_force (modules/wcsph/wcsph.c), host
 * side in modules/wcsph/walls_cl.c. Same equations as the C path:
 *
 *   p_b = ( sum_f p_f W_bf + g . sum_f rho_f (x_b - x_f) W_bf ) / sum_f W_bf
 *   P_b = p_b / rho_b^2,  rho_b = rho0 (max(p_b, lo) / B + 1)^(1 / gamma)
 *   a_i -= gam_i ( sum_j m_j (P_i + P_j) grad W_ij
 *                + sum_b rho0_i d^dim (P_i + P_b) grad W_ib     (static walls)
 *                + sum_b rho0_i V_b 2 P_i grad W_ib )           (moving sets)
 *   gam_i = dim / tr M_i clamped to [0.9, 1/0.9] (1 outside, or without the
 *   correction), tr M_i = -sum_j V_j r_ij^2 (dW/dr)/r over every target
 *
 * The wall sums are scattered with atomic additions (core/walls.h), so the
 * device's floats differ from the C path's by rounding. Lists are
 * neighbour-major (idx[k * pitch + i]); kc, per as in core/sph.h. */
#include "core/sph.h"
#include "core/walls.h"

FLOE_WALLS_ZERO_KERNEL(wall_zero)

/* fluid particle i's share of the sums of its static-wall neighbours b:
 * S[total + off + b] += W, S[2 total + off + b] += (p_i + rho_i g . (x_b - x_i)) W
 * (S: P_b, then the two sums, each `total` long) */
__kernel void wall_scatter(uint n, __global const float *x, __global const float *p, __global const float *rho,
                           float4 kc, float4 per, float4 g, __global const float *xb, __global const uint *cntb,
                           __global const uint *idxb, uint pitchb, uint off, uint total, __global float *S)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const float3 xi = floe_load3(x, i);
    const float pi = p[i], rhoi = rho[i];
    const uint c = cntb[i];
    for (uint k = 0; k < c; k++) {
        const uint j = idxb[k * pitchb + i];
        FLOE_X_IJ(xb); /* d = x_i - x_b */
        const float W = floe_w_hat(kc, r2);
        floe_atomic_addf(S + total + off + j, W);
        floe_atomic_addf(S + 2 * total + off + j, (pi - rhoi * (g.x * d.x + g.y * d.y + g.z * d.z)) * W);
    }
}

/* P_b = p_b / rho_b^2 of every boundary particle (0 where no fluid is near) */
__kernel void wall_finish(uint total, __global float *S, float inv_B, float inv_gamma, float rho0, float lo)
{
    const uint b = get_global_id(0);
    if (b >= total)
        return;
    const float sw = S[total + b], sp = S[2 * total + b];
    float pb = sw > 0.0f ? sp / sw : 0.0f;
    pb = pb > lo ? pb : lo;
    const float rb = rho0 * pow(fmax(pb * inv_B + 1.0f, 1e-3f), inv_gamma);
    S[b] = pb / (rb * rb);
}

/* T_i (+)= tr M_i over one fluid target (V_j = m_j / rho_j) and one
 * boundary target (vol_b = d^dim for a static wall, wall != 0, else V_b) */
__kernel void grad_trace(uint n, __global const float *x, __global float *T, float4 kc, float4 per, int init,
                         int hasf, __global const float *xf, __global const float *mf, __global const float *rhof,
                         __global const uint *cntf, __global const uint *idxf, uint pitchf, int hasb, int wall,
                         float vlat, __global const float *xb, __global const float *Vb, __global const uint *cntb,
                         __global const uint *idxb, uint pitchb)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const float3 xi = floe_load3(x, i);
    float s = 0.0f, sb = 0.0f;
    if (hasf) {
        const uint c = cntf[i];
        for (uint k = 0; k < c; k++) {
            const uint j = idxf[k * pitchf + i];
            FLOE_X_IJ(xf);
            s -= mf[j] / rhof[j] * floe_dw_r(kc, r2) * r2;
        }
    }
    if (hasb) {
        const uint c = cntb[i];
        for (uint k = 0; k < c; k++) {
            const uint j = idxb[k * pitchb + i];
            FLOE_X_IJ(xb);
            sb -= (wall ? vlat : Vb[j]) * floe_dw_r(kc, r2) * r2;
        }
    }
    T[i] = (init ? 0.0f : T[i]) + s + sb;
}

/* one launch of the pressure force over one fluid and one boundary target:
 * the fluid sum, then the boundary sum (Adami's P_b from Pw + woff where
 * wall != 0, mirrored otherwise), times gam_i from T (gc != 0); XSPH (cv >
 * 0) as pressure_force's, outside the correction */
__kernel void pressure_force_walls(uint n, __global const float *x, __global const float *p, __global float *a,
                                   float4 kc, float4 per, float rho0, int hasf, int hasb, __global const float *xf,
                                   __global const float *mf, __global const float *pf, __global const uint *cntf,
                                   __global const uint *idxf, uint pitchf, __global const float *xb,
                                   __global const float *Vb, __global const uint *cntb, __global const uint *idxb,
                                   uint pitchb, float cv, __global const float *v, __global const float *rho,
                                   __global const float *vf, __global const float *rhof, int wall,
                                   __global const float *Pw, uint woff, float cw, int gc, float dim,
                                   __global const float *T)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const float3 xi = floe_load3(x, i);
    const float rhoi = rho[i];
    const float Pi = p[i] / (rhoi * rhoi);
    float3 af = (float3)(0.0f), ab = (float3)(0.0f), aw = (float3)(0.0f), sv = (float3)(0.0f);
    if (hasf) {
        const uint c = cntf[i];
        const float3 vi = cv > 0.0f ? floe_load3(v, i) : (float3)(0.0f);
        for (uint k = 0; k < c; k++) {
            const uint j = idxf[k * pitchf + i];
            FLOE_X_IJ(xf);
            const float mj = mf[j];
            const float rj = rhof[j];
            const float gk = mj * (Pi + pf[j] / (rj * rj)) * floe_dw_r(kc, r2);
            af.x += gk * d.x;
            af.y += gk * d.y;
            af.z += gk * d.z;
            if (cv > 0.0f) {
                const float3 vj = floe_load3(vf, j);
                const float cc = mj / (rhoi + rj) * floe_w_hat(kc, r2);
                sv.x += cc * (vj.x - vi.x);
                sv.y += cc * (vj.y - vi.y);
                sv.z += cc * (vj.z - vi.z);
            }
        }
    }
    if (hasb) {
        const uint c = cntb[i];
        for (uint k = 0; k < c; k++) {
            const uint j = idxb[k * pitchb + i];
            FLOE_X_IJ(xb);
            if (wall) {
                const float gk = (Pi + Pw[woff + j]) * floe_dw_r(kc, r2);
                aw.x += gk * d.x;
                aw.y += gk * d.y;
                aw.z += gk * d.z;
            } else {
                const float gk = Vb[j] * floe_dw_r(kc, r2);
                ab.x += gk * d.x;
                ab.y += gk * d.y;
                ab.z += gk * d.z;
            }
        }
    }
    float gam = 1.0f;
    if (gc) {
        const float tr = T[i];
        gam = tr > 0.0f ? dim / tr : 1.0f;
        gam = gam > 1.0f / 0.9f ? 1.0f : gam < 0.9f ? 0.9f : gam;
    }
    float3 ai = floe_load3(a, i);
    if (cv > 0.0f)
        ai += cv * sv;
    const float cb = 2.0f * rho0 * Pi;
    a[3 * i] = ai.x - gam * (af.x + cb * ab.x + cw * aw.x);
    a[3 * i + 1] = ai.y - gam * (af.y + cb * ab.y + cw * aw.y);
    a[3 * i + 2] = ai.z - gam * (af.z + cb * ab.z + cw * aw.z);
}
