/* Viscosity on the device: the OpenCL path of modules/viscosity
 * (viscosity_cl.c). Same equations and the same arithmetic, term by term,
 * as the C path in modules/viscosity/viscosity.c. Each launch sums over one
 * fluid target set (f*) and one boundary target set (b*), either absent
 * (has* = 0, dummy buffers), and adds its share to a; the usual scene has
 * one of each, so one launch per stage. V_j = m_j / rho_j (monaghan) is
 * formed inline, so no volume pass is needed. Neighbour lists are
 * neighbour-major: idx[k * pitch + i].
 *
 * kc = (1/H, sigma/H, (1e-6 H)^2, sigma), per = periods (core/sph.h). */
#include "core/sph.h"

enum { VK_MORRIS = 0, VK_MONAGHAN = 1, VK_KIM = 2 };

/* laminar (morris, monaghan) and kim; KIND is a constant at every call.
 *   morris:   a_i += cf sum_j m_j (1/rho_i + 1/rho_j) r^2/(r^2+eps) dW/r v_ij
 *                  + cb/rho_i (sum_b V_b r^2/(r^2+eps) dW/r) v_i
 *   monaghan: a_i += cf sum_j V_j (v_ij.x_ij)/(r^2+eps) grad W_ij
 *                  + cb/rho_i sum_b V_b (v_i.x_ib)/(r^2+eps) grad W_ib
 *   kim:      as monaghan with m_j / (rho_i + rho_j) in place of V_j
 * (cf, cb: the factors of run_visc in viscosity.c; cb includes rho0_i) */
inline void visc_body(const int KIND, uint i, __global const float *x, __global const float *v,
                      __global const float *rho, __global float *a, float4 kc, float4 per, float eps, float cf,
                      float cb, int hasf, int hasb, __global const float *xf, __global const float *mf,
                      __global const float *rhof, __global const float *vf, __global const uint *cntf,
                      __global const uint *idxf, uint pitchf, __global const float *xb, __global const float *Vb,
                      __global const uint *cntb, __global const uint *idxb, uint pitchb)
{
    const float3 xi = floe_load3(x, i);
    const float3 vi = floe_load3(v, i);
    const float rhoi = rho[i];
    float3 af = (float3)(0.0f), ab = (float3)(0.0f);
    if (hasf) {
        const uint c = cntf[i];
        float sx = 0.0f, sy = 0.0f, sz = 0.0f;
        if (KIND == VK_MORRIS) {
            const float inv_rhoi = 1.0f / rhoi;
            for (uint k = 0; k < c; k++) {
                const uint j = idxf[k * pitchf + i];
                FLOE_X_IJ(xf);
                const float3 vj = floe_load3(vf, j);
                const float F = mf[j] * (inv_rhoi + 1.0f / rhof[j]) * r2 / (r2 + eps) * floe_dw_r(kc, r2);
                sx += F * (vi.x - vj.x);
                sy += F * (vi.y - vj.y);
                sz += F * (vi.z - vj.z);
            }
        } else {
            for (uint k = 0; k < c; k++) {
                const uint j = idxf[k * pitchf + i];
                FLOE_X_IJ(xf);
                const float3 vj = floe_load3(vf, j);
                const float vx = (vi.x - vj.x) * d.x + (vi.y - vj.y) * d.y + (vi.z - vj.z) * d.z;
                float gk;
                if (KIND == VK_KIM)
                    gk = mf[j] / (rhoi + rhof[j]) * vx / (r2 + eps) * floe_dw_r(kc, r2);
                else {
                    const float Vj = mf[j] / rhof[j];
                    gk = Vj * vx / (r2 + eps) * floe_dw_r(kc, r2);
                }
                sx += gk * d.x;
                sy += gk * d.y;
                sz += gk * d.z;
            }
        }
        af = (float3)(sx, sy, sz);
    }
    if (hasb) {
        const uint c = cntb[i];
        if (KIND == VK_MORRIS) {
            float s = 0.0f;
            for (uint k = 0; k < c; k++) {
                const uint j = idxb[k * pitchb + i];
                FLOE_X_IJ(xb);
                s += Vb[j] * r2 / (r2 + eps) * floe_dw_r(kc, r2);
            }
            ab = (float3)(s * vi.x, s * vi.y, s * vi.z);
        } else {
            float sx = 0.0f, sy = 0.0f, sz = 0.0f;
            for (uint k = 0; k < c; k++) {
                const uint j = idxb[k * pitchb + i];
                FLOE_X_IJ(xb);
                const float vx = vi.x * d.x + vi.y * d.y + vi.z * d.z;
                const float gk = Vb[j] * vx / (r2 + eps) * floe_dw_r(kc, r2);
                sx += gk * d.x;
                sy += gk * d.y;
                sz += gk * d.z;
            }
            ab = (float3)(sx, sy, sz);
        }
    }
    const float cbi = cb / rhoi;
    a[3 * i] += cf * af.x + cbi * ab.x;
    a[3 * i + 1] += cf * af.y + cbi * ab.y;
    a[3 * i + 2] += cf * af.z + cbi * ab.z;
}

#define VISC_ARGS FLOE_FORCE_ARGS
#define VISC_PASS x, v, rho, a, kc, per, eps, cf, cb, hasf, hasb, xf, mf, rhof, vf, cntf, idxf, pitchf, xb, Vb, cntb, idxb, pitchb

__kernel void visc_morris(VISC_ARGS)
{
    const uint i = get_global_id(0);
    if (i < n)
        visc_body(VK_MORRIS, i, VISC_PASS);
}

__kernel void visc_monaghan(VISC_ARGS)
{
    const uint i = get_global_id(0);
    if (i < n)
        visc_body(VK_MONAGHAN, i, VISC_PASS);
}

__kernel void visc_kim(VISC_ARGS)
{
    const uint i = get_global_id(0);
    if (i < n)
        visc_body(VK_KIM, i, VISC_PASS);
}
