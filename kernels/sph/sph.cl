/* The sph module on the device: the OpenCL path of modules/sph (sph_cl.c).
 * Same equations and the same arithmetic, term by term, as the C path in
 * modules/sph/sph.c; each launch sums over one fluid target set (f*) and
 * one boundary target set (b*), either absent (has* = 0, dummy buffers).
 * Neighbour lists are neighbour-major: idx[k * pitch + i].
 * kc = (1/H, sigma/H, (1e-6 H)^2, sigma), per = periods (core/sph.h). */
#include "core/sph.h"

#define X_IJ(xt)                                                     \
    const float3 d = floe_min_image(xi - floe_load3(xt, j), per);    \
    const float r2 = d.x * d.x + d.y * d.y + d.z * d.z

/* rho_i = sigma (m_i + sum_j m_j w_ij + rho0 sum_b V_b w_ib); init starts
 * from m_i, fin multiplies by sigma (several launches for several sets) */
__kernel void density(uint n, __global const float *x, __global const float *m, __global float *rho, float4 kc,
                      float4 per, float rho0, int init, int fin, int hasf, int hasb, __global const float *xf,
                      __global const float *mf, __global const uint *cntf, __global const uint *idxf, uint pitchf,
                      __global const float *xb, __global const float *Vb, __global const uint *cntb,
                      __global const uint *idxb, uint pitchb)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const float3 xi = floe_load3(x, i);
    float acc = init ? m[i] : rho[i];
    if (hasf) {
        float s = 0.0f;
        const uint c = cntf[i];
        for (uint k = 0; k < c; k++) {
            const uint j = idxf[k * pitchf + i];
            X_IJ(xf);
            s += mf[j] * floe_w_hat(kc, r2);
        }
        acc += s;
    }
    if (hasb) {
        float s = 0.0f;
        const uint c = cntb[i];
        for (uint k = 0; k < c; k++) {
            const uint j = idxb[k * pitchb + i];
            X_IJ(xb);
            s += Vb[j] * floe_w_hat(kc, r2);
        }
        acc += rho0 * s;
    }
    rho[i] = fin ? kc.w * acc : acc;
}

/* XSPH: a_i += cf sum_j m_j/(rho_i+rho_j) (v_j - v_i) W_ij/sigma
 *            + cbi (-(sum_b V_b W_ib/sigma) / (2 rho_i)) v_i
 * (cf = 2 alpha/dt sigma, cbi = 2 alpha_b/dt sigma rho0_i: decode_xsph) */
__kernel void xsph(uint n, __global const float *x, __global const float *v, __global const float *rho,
                   __global float *a, float4 kc, float4 per, float cf, float cbi, int hasf, int hasb,
                   __global const float *xf, __global const float *mf, __global const float *rhof,
                   __global const float *vf, __global const uint *cntf, __global const uint *idxf, uint pitchf,
                   __global const float *xb, __global const float *Vb, __global const uint *cntb,
                   __global const uint *idxb, uint pitchb)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const float3 xi = floe_load3(x, i);
    const float3 vi = floe_load3(v, i);
    const float rhoi = rho[i];
    float3 af = (float3)(0.0f), ab = (float3)(0.0f);
    if (hasf) {
        const uint c = cntf[i];
        for (uint k = 0; k < c; k++) {
            const uint j = idxf[k * pitchf + i];
            X_IJ(xf);
            const float3 vj = floe_load3(vf, j);
            const float cc = mf[j] / (rhoi + rhof[j]) * floe_w_hat(kc, r2);
            af.x += cc * (vj.x - vi.x);
            af.y += cc * (vj.y - vi.y);
            af.z += cc * (vj.z - vi.z);
        }
    }
    if (hasb) {
        float s = 0.0f;
        const uint c = cntb[i];
        for (uint k = 0; k < c; k++) {
            const uint j = idxb[k * pitchb + i];
            X_IJ(xb);
            s += Vb[j] * floe_w_hat(kc, r2);
        }
        const float sw = -s / (2.0f * rhoi);
        ab.x += sw * vi.x;
        ab.y += sw * vi.y;
        ab.z += sw * vi.z;
    }
    a[3 * i] += cf * af.x + cbi * ab.x;
    a[3 * i + 1] += cf * af.y + cbi * ab.y;
    a[3 * i + 2] += cf * af.z + cbi * ab.z;
}
