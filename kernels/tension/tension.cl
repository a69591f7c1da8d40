/* Surface tension on the device: the OpenCL path of modules/tension
 * (tension_cl.c). Same equations and the same arithmetic, term by term, as
 * the C path in modules/tension/tension.c. Each launch sums over one fluid
 * target set (f*) and one boundary target set (b*), either absent (has* = 0,
 * dummy buffers). Passes whose result is not a plain addition to a (colour,
 * gradient, normals) keep their partial sums between launches (init: start
 * them, fin: finish them; both set for the usual scene of one fluid and one
 * boundary set, one launch). V_j = m_j / rho_j is formed inline.
 * Neighbour lists are neighbour-major: idx[k * pitch + i].
 *
 * kc = (1/H, sigma/H, (1e-6 H)^2, sigma), per = periods; the row sums
 * FLOE_ROW_W, FLOE_ROW_GRAD: core/sph.h. */
#include "core/sph.h"

/* ---- he (Kim eq. 33-35) ---------------------------------------------------- */

/* pass 1: c_i = sigma (V_i + sum_j V_j w_ij + wall sum_b V_b w_ib),
 * shep_i = sigma (V_i + sum_j V_j w_ij + sum_b V_b w_ib) (scratch of every
 * fluid set, this set's from offset so); between launches c and shep hold
 * the unscaled fluid and boundary sums */
__kernel void he_colour(uint n, __global const float *x, __global const float *m, __global const float *rho,
                        __global float *col, __global float *shep, uint so, float4 kc, float4 per, float wall, int init,
                        int fin, int hasf, int hasb, __global const float *xf, __global const float *mf,
                        __global const float *rhof, __global const uint *cntf, __global const uint *idxf,
                        uint pitchf, __global const float *xb, __global const float *Vb,
                        __global const uint *cntb, __global const uint *idxb, uint pitchb)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const float3 xi = floe_load3(x, i);
    float sf = init ? m[i] / rho[i] : col[i], sb = init ? 0.0f : shep[so + i];
    if (hasf) {
        float s;
        FLOE_ROW_W(cntf, idxf, pitchf, xf, mf[j] / rhof[j], s);
        sf += s;
    }
    if (hasb) {
        float s;
        FLOE_ROW_W(cntb, idxb, pitchb, xb, Vb[j], s);
        sb += s;
    }
    if (fin) {
        col[i] = kc.w * (sf + wall * sb);
        shep[so + i] = kc.w * (sf + sb);
    } else {
        col[i] = sf;
        shep[so + i] = sb;
    }
}

/* pass 2: g_i = |grad c_i|^2, grad c_i = (sum_j V_j c_j grad W_ij
 * + wall sum_b V_b grad W_ib) / shep_i; between launches the two sums sit
 * in acc (6 floats a particle) */
__kernel void he_gradient(uint n, __global const float *x, __global const float *shep, uint so, __global float *g2,
                          __global float *acc, float4 kc, float4 per, float wall, int init, int fin, int hasf,
                          int hasb, __global const float *xf, __global const float *mf, __global const float *rhof,
                          __global const float *colf, __global const uint *cntf, __global const uint *idxf,
                          uint pitchf, __global const float *xb, __global const float *Vb,
                          __global const uint *cntb, __global const uint *idxb, uint pitchb)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const float3 xi = floe_load3(x, i);
    float3 gf = (float3)(0.0f), gb = (float3)(0.0f);
    if (!init) {
        gf = (float3)(acc[6 * i], acc[6 * i + 1], acc[6 * i + 2]);
        gb = (float3)(acc[6 * i + 3], acc[6 * i + 4], acc[6 * i + 5]);
    }
    if (hasf) {
        float3 s;
        FLOE_ROW_GRAD(cntf, idxf, pitchf, xf, mf[j] / rhof[j] * colf[j], s);
        gf += s;
    }
    if (hasb) {
        float3 s;
        FLOE_ROW_GRAD(cntb, idxb, pitchb, xb, Vb[j], s);
        gb += s;
    }
    if (fin) {
        const float inv = 1.0f / shep[so + i];
        const float gx = (gf.x + wall * gb.x) * inv, gy = (gf.y + wall * gb.y) * inv, gz = (gf.z + wall * gb.z) * inv;
        g2[i] = gx * gx + gy * gy + gz * gz;
    } else {
        acc[6 * i] = gf.x;
        acc[6 * i + 1] = gf.y;
        acc[6 * i + 2] = gf.z;
        acc[6 * i + 3] = gb.x;
        acc[6 * i + 4] = gb.y;
        acc[6 * i + 5] = gb.z;
    }
}

/* pass 3: a_i += coef / rho_i sum_j V_j (g_i + g_j) grad W_ij (coef = kappa/4;
 * fluid neighbours only, one launch per fluid target set) */
__kernel void he_force(uint n, __global const float *x, __global const float *rho, __global const float *g2,
                       __global float *a, float4 kc, float4 per, float coef, __global const float *xf,
                       __global const float *mf, __global const float *rhof, __global const float *g2f,
                       __global const uint *cntf, __global const uint *idxf, uint pitchf)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const float3 xi = floe_load3(x, i);
    const float gi = g2[i];
    float3 s;
    FLOE_ROW_GRAD(cntf, idxf, pitchf, xf, mf[j] / rhof[j] * (gi + g2f[j]), s);
    const float f = coef / rho[i];
    a[3 * i] += f * s.x;
    a[3 * i + 1] += f * s.y;
    a[3 * i + 2] += f * s.z;
}

/* ---- air pressure (Kim eq. 36) ----------------------------------------------- */

/* a_i += coef / rho_i (sum_j V_j grad W_ij + wall sum_b V_b grad W_ib), coef = p_atm */
__kernel void air(uint n, __global const float *x, __global const float *rho, __global float *a, float4 kc,
                  float4 per, float coef, float wall, int hasf, int hasb, __global const float *xf,
                  __global const float *mf, __global const float *rhof, __global const uint *cntf,
                  __global const uint *idxf, uint pitchf, __global const float *xb, __global const float *Vb,
                  __global const uint *cntb, __global const uint *idxb, uint pitchb)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const float3 xi = floe_load3(x, i);
    float3 gf = (float3)(0.0f), gb = (float3)(0.0f);
    if (hasf)
        FLOE_ROW_GRAD(cntf, idxf, pitchf, xf, mf[j] / rhof[j], gf);
    if (hasb)
        FLOE_ROW_GRAD(cntb, idxb, pitchb, xb, Vb[j], gb);
    const float f = coef / rho[i];
    a[3 * i] += f * (gf.x + wall * gb.x);
    a[3 * i + 1] += f * (gf.y + wall * gb.y);
    a[3 * i + 2] += f * (gf.z + wall * gb.z);
}

/* ---- akinci ---------------------------------------------------------------- */

/* n_i = H sum_j V_j grad W_ij over fluid neighbours; between launches nrm
 * holds the unscaled sum */
__kernel void ak_normal(uint n, __global const float *x, __global float *nrm, float4 kc, float4 per, float H,
                        int init, int fin, __global const float *xf, __global const float *mf,
                        __global const float *rhof, __global const uint *cntf, __global const uint *idxf,
                        uint pitchf)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const float3 xi = floe_load3(x, i);
    float3 s = init ? (float3)(0.0f) : floe_load3(nrm, i), t;
    FLOE_ROW_GRAD(cntf, idxf, pitchf, xf, mf[j] / rhof[j], t);
    s += t;
    if (fin)
        s = (float3)(H * s.x, H * s.y, H * s.z);
    nrm[3 * i] = s.x;
    nrm[3 * i + 1] = s.y;
    nrm[3 * i + 2] = s.z;
}

/* Akinci 2013 cohesion spline / (32 / (pi H^9)), branch-free as cohesion_hat */
inline float cohesion_hat(float H, float r)
{
    const float t = floe_pos(H - r);
    const float u = t * t * t * r * r * r;
    const float inner = (float)(r <= 0.5f * H);
    const float H3 = H * H * H;
    return u + inner * (u - H3 * H3 * (1.0f / 64.0f));
}

/* Akinci 2013 adhesion kernel / (0.007 / H^3.25), as adhesion_hat */
inline float adhesion_hat(float H, float inv_H, float r)
{
    const float on = (float)(r > 0.5f * H) * (float)(r <= H);
    const float p = floe_pos(-4.0f * r * r * inv_H + 6.0f * r - 2.0f * H);
    return on * sqrt(sqrt(p));
}

/* a_i -= coef sum_j 2/(rho_i+rho_j) (coh m_j C(r) x_ij/r + n_i - n_j)
 *      + coef2 sum_b V_b A(r) x_ib/r
 * (coef = gamma rho0, coh = C's constant, coef2 = beta rho0 A's constant) */
__kernel void ak_force(uint n, __global const float *x, __global const float *rho, __global const float *nrm,
                       __global float *a, float4 kc, float4 per, float H, float coh, float curv, float coef,
                       float coef2,
                       int hasf, int hasb, __global const float *xf, __global const float *mf,
                       __global const float *rhof, __global const float *nrmf, __global const uint *cntf,
                       __global const uint *idxf, uint pitchf, __global const float *xb, __global const float *Vb,
                       __global const uint *cntb, __global const uint *idxb, uint pitchb)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const float3 xi = floe_load3(x, i);
    const float3 ni = floe_load3(nrm, i);
    const float rhoi = rho[i];
    float3 sf = (float3)(0.0f), sb = (float3)(0.0f);
    if (hasf) /* K_ij (coh m_j C(r) x_ij / r + curv (n_i - n_j)), K_ij = 2 / (rho_i + rho_j) */
        FLOE_ROW_SUM3(cntf, idxf, pitchf, xf,
                      2.0f / (rhoi + rhof[j]) *
                          (coh * mf[j] * cohesion_hat(H, sqrt(r2 + kc.z)) / sqrt(r2 + kc.z) * d +
                           curv * (ni - floe_load3(nrmf, j))),
                      sf);
    if (hasb) /* V_b A(r) x_ib / r */
        FLOE_ROW_SUM3(cntb, idxb, pitchb, xb, Vb[j] * adhesion_hat(H, kc.x, sqrt(r2 + kc.z)) / sqrt(r2 + kc.z) * d, sb);
    a[3 * i] -= coef * sf.x + coef2 * sb.x;
    a[3 * i + 1] -= coef * sf.y + coef2 * sb.y;
    a[3 * i + 2] -= coef * sf.z + coef2 * sb.z;
}
