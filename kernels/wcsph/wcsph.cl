/* WCSPH on the device: the OpenCL path of modules/wcsph (wcsph_cl.c); the
 * density and XSPH are the sph module's (kernels/sph/sph.cl).
 * Same equations and the same arithmetic, term by term, as the C path in
 * modules/wcsph/wcsph.c; each launch sums over one fluid target set (f*)
 * and one boundary target set (b*), either absent (NULL count buffer).
 * Neighbour lists are neighbour-major: idx[k * pitch + i]. */
#include "core/cells.h"

inline float maxf(float a, float b) { return a > b ? a : b; }

/* Tait: gmode 7 (exact powers), 1 (linear) or 0 (pow) */
__kernel void pressure(uint n, __global const float *rho, __global float *p, float B, float inv_rho0, float gamma,
                       int gmode, float lo)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    float v;
    if (gmode == 7) {
        const float r = rho[i] * inv_rho0;
        const float r2 = r * r, r3 = r2 * r;
        v = B * (r3 * r3 * r - 1.0f);
    } else if (gmode == 1) {
        v = B * (rho[i] * inv_rho0 - 1.0f);
    } else {
        v = B * (pow(rho[i] * inv_rho0, gamma) - 1.0f);
    }
    p[i] = maxf(v, lo);
}

/* a_i -= sum_j m_j (P_i + P_j) grad W_ij + 2 rho0 P_i sum_b V_b grad W_ib,
 * P = p / rho^2 computed here as prho2 would (the same floats, no pass of
 * its own); with cv > 0 first a_i += cv sum_j m_j/(rho_i+rho_j) (v_j-v_i)
 * W_ij / sigma (XSPH in the same walk of the list, as the viscosity kernel
 * adds it) */
__kernel void pressure_force(uint n, __global const float *x, __global const float *p, __global float *a, float4 kc,
                             float4 per, float rho0, int hasf, int hasb, __global const float *xf, __global const float *mf,
                             __global const float *pf, __global const uint *cntf, __global const uint *idxf,
                             uint pitchf, __global const float *xb, __global const float *Vb,
                             __global const uint *cntb, __global const uint *idxb, uint pitchb, float cv,
                             __global const float *v, __global const float *rho, __global const float *vf,
                             __global const float *rhof)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const float3 xi = floe_load3(x, i);
    const float rhoi = rho[i];
    const float Pi = p[i] / (rhoi * rhoi);
    float3 af = (float3)(0.0f), ab = (float3)(0.0f), sv = (float3)(0.0f);
    if (hasf) {
        const uint c = cntf[i];
        if (cv > 0.0f) {
            const float3 vi = floe_load3(v, i);
            for (uint k = 0; k < c; k++) {
                const uint j = idxf[k * pitchf + i];
                FLOE_X_IJ(xf);
                const float mj = mf[j];
                const float rj = rhof[j];
                const float g = mj * (Pi + pf[j] / (rj * rj)) * floe_dw_r(kc, r2);
                af.x += g * d.x;
                af.y += g * d.y;
                af.z += g * d.z;
                const float3 vj = floe_load3(vf, j);
                const float cc = mj / (rhoi + rj) * floe_w_hat(kc, r2);
                sv.x += cc * (vj.x - vi.x);
                sv.y += cc * (vj.y - vi.y);
                sv.z += cc * (vj.z - vi.z);
            }
        } else {
            for (uint k = 0; k < c; k++) {
                const uint j = idxf[k * pitchf + i];
                FLOE_X_IJ(xf);
                const float rj = rhof[j];
                const float g = mf[j] * (Pi + pf[j] / (rj * rj)) * floe_dw_r(kc, r2);
                af.x += g * d.x;
                af.y += g * d.y;
                af.z += g * d.z;
            }
        }
    }
    if (hasb) {
        const uint c = cntb[i];
        for (uint k = 0; k < c; k++) {
            const uint j = idxb[k * pitchb + i];
            FLOE_X_IJ(xb);
            const float g = Vb[j] * floe_dw_r(kc, r2);
            ab.x += g * d.x;
            ab.y += g * d.y;
            ab.z += g * d.z;
        }
    }
    float3 ai = floe_load3(a, i);
    if (cv > 0.0f) {
        ai.x += cv * sv.x;
        ai.y += cv * sv.y;
        ai.z += cv * sv.z;
    }
    const float cb = 2.0f * rho0 * Pi;
    a[3 * i] = ai.x - (af.x + cb * ab.x);
    a[3 * i + 1] = ai.y - (af.y + cb * ab.y);
    a[3 * i + 2] = ai.z - (af.z + cb * ab.z);
}

/* pressure_force over a cell walk (kernels/core/cells.h): the same sums in
 * the same order as pressure_force's over lists */
__kernel __attribute__((reqd_work_group_size(FLOE_WGS, 1, 1)))
void pressure_force_cells(uint n, __global const float *x, __global const float *p, __global float *a, float4 kc,
                          float4 per, float rho0, int hasf, int hasb, __global const float *xf,
                          __global const float *mf, __global const float *pf, __global const float *xb,
                          __global const float *Vb, float cv, __global const float *v, __global const float *rho,
                          __global const float *vf, __global const float *rhof, FLOE_CELL_ARGS, FLOE_CELL_TARGET(f),
                          int selff, FLOE_CELL_TARGET(b))
{
    __local float4 cand[FLOE_CAND];
    FLOE_CELL_QUERY(n, x);
    /* P = p / rho^2 as prho2 computes it, here instead of in a pass of its own */
    const float rhoi = act ? rho[i] : 1.0f;
    const float Pi = act ? p[i] / (rhoi * rhoi) : 0.0f;
    float3 af = (float3)(0.0f), ab = (float3)(0.0f), sv = (float3)(0.0f);
    if (hasf) {
        const uint self = selff ? i : 0xffffffffu;
        if (cv > 0.0f) {
            const float3 vi = act ? floe_load3(v, i) : (float3)(0.0f);
            FLOE_CELL_WALK_BEGIN(cand, fsp, fcs, ffresh, xf, self, FLOE_CELL_NONE_)
                const float mj = mf[j];
                const float rj = rhof[j];
                const float g = mj * (Pi + pf[j] / (rj * rj)) * floe_dw_r(kc, r2);
                af.x += g * d.x;
                af.y += g * d.y;
                af.z += g * d.z;
                const float3 vj = floe_load3(vf, j);
                const float cc = mj / (rhoi + rj) * floe_w_hat(kc, r2);
                sv.x += cc * (vj.x - vi.x);
                sv.y += cc * (vj.y - vi.y);
                sv.z += cc * (vj.z - vi.z);
            FLOE_CELL_WALK_END
        } else {
            FLOE_CELL_WALK_BEGIN(cand, fsp, fcs, ffresh, xf, self, FLOE_CELL_NONE_)
                const float rj = rhof[j];
                const float g = mf[j] * (Pi + pf[j] / (rj * rj)) * floe_dw_r(kc, r2);
                af.x += g * d.x;
                af.y += g * d.y;
                af.z += g * d.z;
            FLOE_CELL_WALK_END
        }
    }
    if (hasb) {
        FLOE_CELL_WALK_BEGIN(cand, bsp, bcs, bfresh, xb, 0xffffffffu, FLOE_CELL_NONE_)
            const float g = Vb[j] * floe_dw_r(kc, r2);
            ab.x += g * d.x;
            ab.y += g * d.y;
            ab.z += g * d.z;
        FLOE_CELL_WALK_END
    }
    if (!act)
        return;
    float3 ai = floe_load3(a, i);
    if (cv > 0.0f) {
        ai.x += cv * sv.x;
        ai.y += cv * sv.y;
        ai.z += cv * sv.z;
    }
    const float cb = 2.0f * rho0 * Pi;
    a[3 * i] = ai.x - (af.x + cb * ab.x);
    a[3 * i + 1] = ai.y - (af.y + cb * ab.y);
    a[3 * i + 2] = ai.z - (af.z + cb * ab.z);
}

/* The data a packed pressure-force walk reads of each neighbour, per
 * sorted slot q of a fluid set (particle i = spos[q].w): u = (v, rho),
 * w = (m, P = p / rho^2, as prho2 computes it) */
__kernel void pack_cells(uint n, __global const float4 *sp, __global const float *v, __global const float *rho,
                         __global const float *m, __global const float *p, __global float4 *u, __global float2 *w)
{
    const uint q = get_global_id(0);
    if (q >= n)
        return;
    const uint i = as_uint(sp[q].w);
    const float r = rho[i];
    u[q] = (float4)(v[3 * i], v[3 * i + 1], v[3 * i + 2], r);
    w[q] = (float2)(m[i], p[i] / (r * r));
}

/* pressure_force_cells over packed neighbour data: a work group stages u
 * and w of its candidate rows in local memory with their positions, so a
 * neighbour costs no global read; the query's own from its slot (qu, qw:
 * the query set's packs). The same sums in the same order. */
#define PF_ST(l, g)     \
    cu[l] = fu[g];      \
    cw[l] = fw[g];
#define PF_STB(l, g) cu[l].x = Vb[as_uint(cand[l].w)]; /* the walls' volumes */

__kernel __attribute__((reqd_work_group_size(FLOE_WGS, 1, 1)))
void pressure_force_packed(uint n, __global const float *x, __global float *a, float4 kc, float4 per, float rho0,
                           int hasf, int hasb, __global const float4 *qu, __global const float2 *qw,
                           __global const float4 *fu, __global const float2 *fw, __global const float *xf,
                           __global const float *xb, __global const float *Vb, float cv, FLOE_CELL_ARGS,
                           FLOE_CELL_TARGET(f), int selff, FLOE_CELL_TARGET(b))
{
    __local float4 cand[FLOE_CAND], cu[FLOE_CAND];
    __local float2 cw[FLOE_CAND];
    FLOE_CELL_QUERY(n, x);
    const float4 ui = qu[act ? q_ : g0_];
    const float2 wi = qw[act ? q_ : g0_];
    const float rhoi = ui.w, Pi = act ? wi.y : 0.0f;
    const float3 vi = ui.xyz;
    float3 af = (float3)(0.0f), ab = (float3)(0.0f), sv = (float3)(0.0f);
    if (hasf) {
        const uint self = selff ? i : 0xffffffffu;
        if (cv > 0.0f) {
            FLOE_CELL_WALK_BEGIN(cand, fsp, fcs, ffresh, xf, self, PF_ST)
                const float4 uj = FLOE_CELL_STAGED(cu, fu[k_]);
                const float2 wj = FLOE_CELL_STAGED(cw, fw[k_]);
                const float mj = wj.x;
                const float g = mj * (Pi + wj.y) * floe_dw_r(kc, r2);
                af.x += g * d.x;
                af.y += g * d.y;
                af.z += g * d.z;
                const float cc = mj / (rhoi + uj.w) * floe_w_hat(kc, r2);
                sv.x += cc * (uj.x - vi.x);
                sv.y += cc * (uj.y - vi.y);
                sv.z += cc * (uj.z - vi.z);
            FLOE_CELL_WALK_END
        } else {
            FLOE_CELL_WALK_BEGIN(cand, fsp, fcs, ffresh, xf, self, PF_ST)
                const float2 wj = FLOE_CELL_STAGED(cw, fw[k_]);
                const float g = wj.x * (Pi + wj.y) * floe_dw_r(kc, r2);
                af.x += g * d.x;
                af.y += g * d.y;
                af.z += g * d.z;
            FLOE_CELL_WALK_END
        }
    }
    if (hasb) {
        FLOE_CELL_WALK_BEGIN(cand, bsp, bcs, bfresh, xb, 0xffffffffu, PF_STB)
            const float g = FLOE_CELL_STAGED(cu, (float4)(Vb[j])).x * floe_dw_r(kc, r2);
            ab.x += g * d.x;
            ab.y += g * d.y;
            ab.z += g * d.z;
        FLOE_CELL_WALK_END
    }
    if (!act)
        return;
    float3 ai = floe_load3(a, i);
    if (cv > 0.0f) {
        ai.x += cv * sv.x;
        ai.y += cv * sv.y;
        ai.z += cv * sv.z;
    }
    const float cb = 2.0f * rho0 * Pi;
    a[3 * i] = ai.x - (af.x + cb * ab.x);
    a[3 * i + 1] = ai.y - (af.y + cb * ab.y);
    a[3 * i + 2] = ai.z - (af.z + cb * ab.z);
}

/* Monaghan (1992) artificial viscosity, added to a:
 * a_i += cf * (fluid sum) + cb * (boundary sum), as visc_c in wcsph.c */
__kernel void viscosity(FLOE_FORCE_ARGS)
{
    FLOE_FORCE_BEGIN;
    if (hasf) {
        const uint c = cntf[i];
        for (uint k = 0; k < c; k++) {
            const uint j = idxf[k * pitchf + i];
            FLOE_X_IJ(xf);
            const float3 vj = floe_load3(vf, j);
            const float vx = (vi.x - vj.x) * d.x + (vi.y - vj.y) * d.y + (vi.z - vj.z) * d.z;
            const float g = mf[j] * floe_neg(vx) / ((rhoi + rhof[j]) * (r2 + eps)) * floe_dw_r(kc, r2);
            af.x += g * d.x;
            af.y += g * d.y;
            af.z += g * d.z;
        }
    }
    if (hasb) {
        const uint c = cntb[i];
        const float inv = 1.0f / (2.0f * rhoi);
        float3 s = (float3)(0.0f);
        for (uint k = 0; k < c; k++) {
            const uint j = idxb[k * pitchb + i];
            FLOE_X_IJ(xb);
            const float vx = vi.x * d.x + vi.y * d.y + vi.z * d.z;
            const float g = Vb[j] * floe_neg(vx) / (r2 + eps) * floe_dw_r(kc, r2);
            s.x += g * d.x;
            s.y += g * d.y;
            s.z += g * d.z;
        }
        ab.x += s.x * inv;
        ab.y += s.y * inv;
        ab.z += s.z * inv;
    }
    a[3 * i] += cf * af.x + cb * ab.x;
    a[3 * i + 1] += cf * af.y + cb * ab.y;
    a[3 * i + 2] += cf * af.z + cb * ab.z;
}

/* ---- wcsph.continuity (modules/wcsph/continuity.c) ----------------------- */

/* the sums of the renormalised density gradient over one fluid target, into
 * A (9 per particle: M xx yy zz xy xz yz, then g): M = -sum_j V_j F x_ij (x)
 * x_ij, g = sum_j V_j (rho_j - rho_i) F x_ij; init starts from zero */
__kernel void cont_grad(uint n, __global const float *x, __global const float *rho, __global float *A, float4 kc,
                        float4 per, int init, int hasf, __global const float *xf, __global const float *mf,
                        __global const float *rhof, __global const uint *cntf, __global const uint *idxf, uint pitchf)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const float3 xi = floe_load3(x, i);
    const float rhoi = rho[i];
    float s[9];
    for (int q = 0; q < 9; q++)
        s[q] = init ? 0.0f : A[9 * i + q];
    if (hasf) {
        const uint c = cntf[i];
        for (uint k = 0; k < c; k++) {
            const uint j = idxf[k * pitchf + i];
            FLOE_X_IJ(xf);
            const float VF = mf[j] / rhof[j] * floe_dw_r(kc, r2);
            s[0] -= VF * d.x * d.x;
            s[1] -= VF * d.y * d.y;
            s[2] -= VF * d.z * d.z;
            s[3] -= VF * d.x * d.y;
            s[4] -= VF * d.x * d.z;
            s[5] -= VF * d.y * d.z;
            const float cc = VF * (rhof[j] - rhoi);
            s[6] += cc * d.x;
            s[7] += cc * d.y;
            s[8] += cc * d.z;
        }
    }
    for (int q = 0; q < 9; q++)
        A[9 * i + q] = s[q];
}

/* G = M^-1 g by cofactors (2D: M's z row and column of the identity);
 * det below 1e-2: G = 0 (solve_grad in continuity.c) */
__kernel void cont_solve(uint n, __global const float *A, __global float *G, int dim)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    __global const float *M = A + 9 * i;
    const float xx = M[0], yy = M[1], zz = dim == 2 ? 1.0f : M[2], xy = M[3], xz = dim == 2 ? 0.0f : M[4],
                yz = dim == 2 ? 0.0f : M[5];
    const float c0 = yy * zz - yz * yz, c1 = xz * yz - xy * zz, c2 = xy * yz - xz * yy;
    const float det = xx * c0 + xy * c1 + xz * c2;
    if (!(det > 1e-2f)) {
        G[3 * i] = G[3 * i + 1] = G[3 * i + 2] = 0.0f;
        return;
    }
    const float inv = 1.0f / det;
    const float i11 = xx * zz - xz * xz, i12 = xy * xz - xx * yz, i22 = xx * yy - xy * xy;
    G[3 * i] = inv * (c0 * M[6] + c1 * M[7] + c2 * M[8]);
    G[3 * i + 1] = inv * (c1 * M[6] + i11 * M[7] + i12 * M[8]);
    G[3 * i + 2] = dim == 2 ? 0.0f : inv * (c2 * M[6] + i12 * M[7] + i22 * M[8]);
}

/* d rho / dt over one fluid target and one boundary target, into D (init
 * starts from zero):
 *   sum_j m_j F (v_i - v_j) . x_ij + rho0 sum_b V_b F v_i . x_ib
 *   + dc sum_j V_j (-F) [2 (rho_j - rho_i) + (G_i + G_j) . x_ij] */
__kernel void continuity(uint n, __global const float *x, __global const float *v, __global const float *rho,
                         __global const float *G, __global float *D, float4 kc, float4 per, float rho0, float dc,
                         int init, int hasf, int hasb, __global const float *xf, __global const float *mf,
                         __global const float *rhof, __global const float *vf, __global const float *Gf,
                         __global const uint *cntf, __global const uint *idxf, uint pitchf,
                         __global const float *xb, __global const float *Vb, __global const uint *cntb,
                         __global const uint *idxb, uint pitchb)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const float3 xi = floe_load3(x, i);
    const float3 vi = floe_load3(v, i);
    const float rhoi = rho[i];
    float sc = 0.0f, sd = 0.0f, sb = 0.0f;
    if (hasf) {
        const uint c = cntf[i];
        const float3 Gi = dc > 0.0f ? floe_load3(G, i) : (float3)(0.0f);
        for (uint k = 0; k < c; k++) {
            const uint j = idxf[k * pitchf + i];
            FLOE_X_IJ(xf);
            const float F = floe_dw_r(kc, r2);
            const float3 vj = floe_load3(vf, j);
            sc += mf[j] * F * ((vi.x - vj.x) * d.x + (vi.y - vj.y) * d.y + (vi.z - vj.z) * d.z);
            if (dc > 0.0f) {
                const float3 Gj = floe_load3(Gf, j);
                sd -= mf[j] / rhof[j] * F *
                      (2.0f * (rhof[j] - rhoi) + (Gi.x + Gj.x) * d.x + (Gi.y + Gj.y) * d.y + (Gi.z + Gj.z) * d.z);
            }
        }
    }
    if (hasb) {
        const uint c = cntb[i];
        for (uint k = 0; k < c; k++) {
            const uint j = idxb[k * pitchb + i];
            FLOE_X_IJ(xb);
            sb += Vb[j] * floe_dw_r(kc, r2) * (vi.x * d.x + vi.y * d.y + vi.z * d.z);
        }
    }
    D[i] = (init ? 0.0f : D[i]) + (sc + rho0 * sb + dc * sd);
}

/* rho += dt D */
__kernel void cont_step(uint n, __global float *rho, __global const float *D, float dt)
{
    const uint i = get_global_id(0);
    if (i < n)
        rho[i] += dt * D[i];
}
