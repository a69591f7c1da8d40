/* The sph module on the device: the OpenCL path of modules/sph (sph_cl.c).
 * Same equations and the same arithmetic, term by term, as the C path in
 * modules/sph/sph.c; each launch sums over one fluid target set (f*) and
 * one boundary target set (b*), either absent (has* = 0, dummy buffers).
 * Neighbour lists are neighbour-major: idx[k * pitch + i].
 * kc = (1/H, sigma/H, (1e-6 H)^2, sigma), per = periods (core/sph.h). */
#include "core/cells.h"

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
            FLOE_X_IJ(xf);
            s += mf[j] * floe_w_hat(kc, r2);
        }
        acc += s;
    }
    if (hasb) {
        float s = 0.0f;
        const uint c = cntb[i];
        for (uint k = 0; k < c; k++) {
            const uint j = idxb[k * pitchb + i];
            FLOE_X_IJ(xb);
            s += Vb[j] * floe_w_hat(kc, r2);
        }
        acc += rho0 * s;
    }
    rho[i] = fin ? kc.w * acc : acc;
}

/* density over a cell walk (kernels/core/cells.h): the same sums in the
 * same order as density's over lists; f* / b* the fluid and boundary
 * targets' cells (selff: the query set is the fluid target) */
__kernel __attribute__((reqd_work_group_size(FLOE_WGS, 1, 1)))
void density_cells(uint n, __global const float *x, __global const float *m, __global float *rho, float4 kc,
                   float4 per, float rho0, int init, int fin, int hasf, int hasb, __global const float *xf,
                   __global const float *mf, __global const float *xb, __global const float *Vb, FLOE_CELL_ARGS,
                   FLOE_CELL_TARGET(f), int selff, FLOE_CELL_TARGET(b))
{
    __local float4 cand[FLOE_CAND];
    __local float cw[FLOE_CAND]; /* the candidates' weights, staged with them */
    FLOE_CELL_QUERY(n, x);
    float acc = act ? (init ? m[i] : rho[i]) : 0.0f;
    if (hasf) {
        float s = 0.0f;
        const uint self = selff ? i : 0xffffffffu;
#define ST_F(l, g) cw[l] = mf[as_uint(cand[l].w)];
        FLOE_CELL_WALK_BEGIN(cand, fsp, fcs, ffresh, xf, self, ST_F)
            s += FLOE_CELL_STAGED(cw, mf[j]) * floe_w_hat(kc, r2);
        FLOE_CELL_WALK_END
        acc += s;
    }
    if (hasb) {
        float s = 0.0f;
#define ST_B(l, g) cw[l] = Vb[as_uint(cand[l].w)];
        FLOE_CELL_WALK_BEGIN(cand, bsp, bcs, bfresh, xb, 0xffffffffu, ST_B)
            s += FLOE_CELL_STAGED(cw, Vb[j]) * floe_w_hat(kc, r2);
        FLOE_CELL_WALK_END
        acc += rho0 * s;
    }
    if (act)
        rho[i] = fin ? kc.w * acc : acc;
}

/* XSPH: a_i += cf sum_j m_j/(rho_i+rho_j) (v_j - v_i) W_ij/sigma
 *            + cb (-(sum_b V_b W_ib/sigma) / (2 rho_i)) v_i
 * (cf = 2 alpha/dt sigma, cb = 2 alpha_b/dt sigma rho0_i: decode_xsph) */
__kernel void xsph(FLOE_FORCE_ARGS)
{
    (void)eps;
    FLOE_FORCE_BEGIN;
    for (uint k = 0; hasf && k < cntf[i]; k++) { /* m_j / (rho_i + rho_j) (v_j - v_i) W_ij / sigma */
        const uint j = idxf[k * pitchf + i];
        FLOE_X_IJ(xf);
        af += mf[j] / (rhoi + rhof[j]) * floe_w_hat(kc, r2) * (floe_load3(vf, j) - vi);
    }
    if (hasb) {
        float s = 0.0f;
        const uint c = cntb[i];
        for (uint k = 0; k < c; k++) {
            const uint j = idxb[k * pitchb + i];
            FLOE_X_IJ(xb);
            s += Vb[j] * floe_w_hat(kc, r2);
        }
        const float sw = -s / (2.0f * rhoi);
        ab.x += sw * vi.x;
        ab.y += sw * vi.y;
        ab.z += sw * vi.z;
    }
    a[3 * i] += cf * af.x + cb * ab.x;
    a[3 * i + 1] += cf * af.y + cb * ab.y;
    a[3 * i + 2] += cf * af.z + cb * ab.z;
}
