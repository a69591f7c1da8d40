/* viscosity.laminar{wall_velocity = "extrapolated"} on the device (form
 * morris): Adami et al. 2012's wall velocity 2 v_w - v~_b (walls at rest,
 * v_w = 0) with v~_b = sum_f v_f W_bf / sum_f W_bf over the fluid around
 * each static wall particle. Host side in modules/viscosity/walls_cl.c;
 * the C path is wall_velocity and row_morris_wall_ext in
 * modules/viscosity/viscosity.c, the same equations:
 *
 *   a_i += cf sum_j m_j (1/rho_i + 1/rho_j) r^2/(r^2+eps) dW/r v_ij
 *        + cb/rho_i sum_b V_b r^2/(r^2+eps) dW/r (v_i + v~_b)    (static walls)
 *        + cb/rho_i sum_b V_b r^2/(r^2+eps) dW/r 2 v_i           (moving sets)
 *
 * The wall sums are scattered with atomic additions (core/walls.h): the
 * device's floats differ from the C path's by rounding. */
#include "core/sph.h"
#include "core/walls.h"

FLOE_WALLS_ZERO_KERNEL(wall_zero)

/* fluid particle i's share of its static-wall neighbours' sums:
 * S[3 (off + b) + c] += v_i,c W, S[3 total + off + b] += W */
__kernel void wall_vscatter(uint n, __global const float *x, __global const float *v, float4 kc, float4 per,
                            __global const float *xb, __global const uint *cntb, __global const uint *idxb,
                            uint pitchb, uint off, uint total, __global float *S)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const float3 xi = floe_load3(x, i);
    const float3 vi = floe_load3(v, i);
    const uint c = cntb[i];
    for (uint k = 0; k < c; k++) {
        const uint j = idxb[k * pitchb + i];
        FLOE_X_IJ(xb);
        const float W = floe_w_hat(kc, r2);
        const uint s = off + j;
        floe_atomic_addf(S + 3 * s, vi.x * W);
        floe_atomic_addf(S + 3 * s + 1, vi.y * W);
        floe_atomic_addf(S + 3 * s + 2, vi.z * W);
        floe_atomic_addf(S + 3 * total + s, W);
    }
}

/* v~_b = the sums divided by sum W (0 where no fluid is near) */
__kernel void wall_vfinish(uint total, __global float *S)
{
    const uint b = get_global_id(0);
    if (b >= total)
        return;
    const float sw = S[3 * total + b];
    const float inv = sw > 0.0f ? 1.0f / sw : 0.0f;
    S[3 * b] *= inv;
    S[3 * b + 1] *= inv;
    S[3 * b + 2] *= inv;
}

/* one launch over one fluid and one boundary target (FLOE_FORCE_ARGS), the
 * boundary a static wall (wall != 0: v~_b from vw + 3 woff) or a moving set */
__kernel void visc_morris_ext(FLOE_FORCE_ARGS, int wall, __global const float *vw, uint woff)
{
    FLOE_FORCE_BEGIN;
    if (hasf) {
        const uint c = cntf[i];
        const float inv_rhoi = 1.0f / rhoi;
        float sx = 0.0f, sy = 0.0f, sz = 0.0f;
        for (uint k = 0; k < c; k++) {
            const uint j = idxf[k * pitchf + i];
            FLOE_X_IJ(xf);
            const float3 vj = floe_load3(vf, j);
            const float F = mf[j] * (inv_rhoi + 1.0f / rhof[j]) * r2 / (r2 + eps) * floe_dw_r(kc, r2);
            sx += F * (vi.x - vj.x);
            sy += F * (vi.y - vj.y);
            sz += F * (vi.z - vj.z);
        }
        af = (float3)(sx, sy, sz);
    }
    if (hasb) {
        const uint c = cntb[i];
        if (wall) {
            float sx = 0.0f, sy = 0.0f, sz = 0.0f;
            for (uint k = 0; k < c; k++) {
                const uint j = idxb[k * pitchb + i];
                FLOE_X_IJ(xb);
                const float F = Vb[j] * r2 / (r2 + eps) * floe_dw_r(kc, r2);
                const float3 wb = floe_load3(vw, woff + j);
                sx += F * (vi.x + wb.x);
                sy += F * (vi.y + wb.y);
                sz += F * (vi.z + wb.z);
            }
            ab = (float3)(sx, sy, sz);
        } else { /* a moving set: mirrored, v_i - v_b = 2 v_i */
            float s = 0.0f;
            for (uint k = 0; k < c; k++) {
                const uint j = idxb[k * pitchb + i];
                FLOE_X_IJ(xb);
                s += Vb[j] * r2 / (r2 + eps) * floe_dw_r(kc, r2);
            }
            s *= 2.0f;
            ab = (float3)(s * vi.x, s * vi.y, s * vi.z);
        }
    }
    const float cbi = cb / rhoi;
    a[3 * i] += cf * af.x + cbi * ab.x;
    a[3 * i + 1] += cf * af.y + cbi * ab.y;
    a[3 * i + 2] += cf * af.z + cbi * ab.z;
}
