/* DFSPH on the device: the OpenCL path of modules/dfsph (dfsph_cl.c). The
 * same equations and, term by term, the same arithmetic as the C path in
 * modules/dfsph/dfsph.c (docs/dfsph.md has the equations):
 *
 *   setup_b   per boundary set: Gb = sum_b V_b grad W_ib and the neighbour
 *             count, u.w = sum_b V_b v_b . grad W_ib of moving sets; on the
 *             last launch Gb and u.w *= beta rho0, xm = (x, m), u.xyz = v,
 *             and the group maxima of |v|^2
 *   setup_f   the fluid sums: G = Gb + sum_j m_j grad W_ij, s2 = sum_j m_i
 *             m_j |grad W_ij|^2; D = |G|^2 + s2 (0 where almost no
 *             neighbours), few (too few neighbours for the divergence
 *             solve), lag (compression left to later steps)
 *   predict   u += dt a (before the constant density solve)
 *   source    S = Drho/Dt of u (divergence) or rho + dt Drho/Dt - rho0 - lag
 *             (density); the warm-started P and its copy Pold
 *   accel     a^p_i = -(P_i Gb_i + sum_j (P_i + P_j) m_j grad W_ij)
 *   update    F_i, relaxed Jacobi with Chebyshev weights into Pold (the
 *             host swaps P and Pold), per-group sums of max(F, 0) / rho0
 *   reduce    the group sums into one float (one work group)
 *   apply     u += dt a^p of the final P; then kv = dt P (divergence), or
 *             a = (u - v) / dt and p = rho^2 P (density)
 *
 * The pair gradients m_j grad W_ij are recomputed in every pass from the
 * packed (x, m) (the C path stores them; the values are the same floats,
 * summed in the device lists' order). Neighbour lists are neighbour-major:
 * idx[k * pitch + i]. Work groups are 128 items (api->cl_run). */
#include "core/sph.h"

#define WGS FLOE_WGS

/* Boundary pass, one launch per boundary set (hasb = 0: none). init: the
 * sums start at 0, else from gb (.xyz the raw sum, .w the neighbour count
 * so far) and u.w (the raw sum of V_b v_b . grad W_ib of the moving sets:
 * hasv, their velocities vb); fin: the last launch, which finishes the
 * particle. mx[0]: bits of max |v|^2. */
__kernel __attribute__((reqd_work_group_size(WGS, 1, 1))) void
dfsph_setup_b(uint n, __global const float *x, __global const float *v, __global const float *m,
              __global float4 *xm, __global float4 *u, __global float4 *gb, float4 kc, float4 per, float brho0,
              int init, int fin, int hasb, __global const float *xb, __global const float *Vb,
              __global const uint *cntb, __global const uint *idxb, uint pitchb, __global uint *mx, int kgc,
              __global float *tr, int hasv, __global const float *vb)
{
    __local float red[WGS];
    const uint i = get_global_id(0);
    float v2 = 0.0f;
    if (i < n) {
        const float3 xi = floe_load3(x, i);
        float4 G = init ? (float4)(0.0f) : gb[i];
        float ub = init ? 0.0f : u[i].w;
        float trb = kgc && !init ? tr[i] : 0.0f; /* gradient_correction: sum_b V_b dW/dr r */
        if (hasb) {
            float sx = 0.0f, sy = 0.0f, sz = 0.0f, st = 0.0f, su = 0.0f;
            const uint cb = cntb[i];
            for (uint k = 0; k < cb; k++) {
                const uint j = idxb[k * pitchb + i];
                FLOE_X_IJ(xb);
                const float g = Vb[j] * floe_dw_r(kc, r2);
                sx += g * d.x;
                sy += g * d.y;
                sz += g * d.z;
                st += g * r2;
                if (hasv)
                    su += g * dot(floe_load3(vb, j), d);
            }
            G.x += sx;
            G.y += sy;
            G.z += sz;
            G.w += (float)cb;
            trb += st;
            ub += su;
        }
        if (kgc)
            tr[i] = trb;
        if (fin) {
            G.x *= brho0;
            G.y *= brho0;
            G.z *= brho0;
            const float3 vi = floe_load3(v, i);
            u[i] = (float4)(vi, brho0 * ub);
            xm[i] = (float4)(xi, m[i]);
            v2 = vi.x * vi.x + vi.y * vi.y + vi.z * vi.z;
            if (isnan(v2)) /* the C path's maxima skip NaN */
                v2 = 0.0f;
        }
        else
            u[i] = (float4)(0.0f, 0.0f, 0.0f, ub);
        gb[i] = G;
    }
    if (fin)
        floe_group_max(red, v2, mx);
}

/* gradient_correction (floe_gamma_one of the C path): gamma_i = dim / tr M_i,
 * tr M_i = -(sum_j m_j / rho0 dW/dr r + the boundary part from setup_b),
 * clamped to [lo, 1/lo]; the wall's gradients Gb scaled by gamma_i (the
 * pair gradients by (gamma_i + gamma_j) / 2 in every pass) */
__kernel void dfsph_gamma(uint n, __global const float4 *xm, __global float4 *gb, __global float4 *u,
                          __global const float *tr,
                          __global float *gam, float4 kc, float4 per, float inv_rho0, float dim, float lo,
                          __global const uint *cntf, __global const uint *idxf, uint pitchf)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const float g = floe_gamma_row(i, xm, tr[i], kc, per, inv_rho0, dim, lo, cntf, idxf, pitchf);
    gam[i] = g;
    const float4 G = gb[i];
    gb[i] = (float4)(g * G.x, g * G.y, g * G.z, G.w);
    u[i].w *= g;
}

/* m_j dW/dr / r of a pair, times (gamma_i + gamma_j) / 2 with
 * gradient_correction (as the C path's stored gradients) */
#define DF_G(kgc, dw) ((kgc) ? xj.w * ((dw) * (0.5f * (gi + gam[j]))) : xj.w * (dw))

/* Fluid pass: D, few and lag into co = (D, few, lag, 0). cf = (rho0,
 * D_min, elim inputs: max_correction_speed, dt / spacing); sl, sr the
 * start budgets and their rates (dfsph_start_lag, dfsph_start_rate), rate0
 * the rate set at the run's first step (first); few_limit the
 * neighbour count below which a particle takes no part in the divergence
 * solve. */
__kernel void dfsph_setup_f(uint n, __global const float4 *xm, __global const float4 *gb,
                            __global const float *rho, __global float4 *co, float4 kc, float4 per, float4 cf,
                            uint few_limit, __global const uint *mx, __global const uint *cntf,
                            __global const uint *idxf, uint pitchf, int kgc, __global const float *gam,
                            __global float *sl, __global float *sr, float rate0, float dt, int first)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const float4 xmi = xm[i];
    const float3 xi = xmi.xyz;
    const float gi = kgc ? gam[i] : 1.0f;
    float sx = 0.0f, sy = 0.0f, sz = 0.0f, ss = 0.0f;
    const uint c = cntf[i];
    for (uint k = 0; k < c; k++) {
        FLOE_XM_IJ(xm, idxf, pitchf);
        const float dw = kgc ? floe_dw_r(kc, r2) * (0.5f * (gi + gam[j])) : floe_dw_r(kc, r2), g = xj.w * dw;
        sx += g * d.x;
        sy += g * d.y;
        sz += g * d.z;
        ss += xmi.w * xj.w * dw * dw * r2;
    }
    const float4 Gb = gb[i];
    const float Gx = sx + Gb.x, Gy = sy + Gb.y, Gz = sz + Gb.z;
    const float D = Gx * Gx + Gy * Gy + Gz * Gz + ss;
    const float rho0 = cf.x;
    const uint count = c + (uint)Gb.w;
    /* the compression present now is removed in this step only up to
     * max(max_correction_speed, |v|max) dt / d */
    float elim = 1e30f;
    if (cf.z > 0.0f)
        elim = fmax(cf.z, sqrt(as_float(mx[0]))) * cf.w;
    const float rhoi = rho[i];
    /* and the start budget sl (dfsph_lag_step in modules/dfsph/dfsph.h) */
    const float e = rhoi / rho0 - 1.0f, ep = floe_pos(e);
    const float rate = first ? rate0 : sr[i];
    const float nb = rate > 0.0f ? (first ? ep : fmin(floe_pos(sl[i] - rate * dt), ep)) : 0.0f;
    sr[i] = rate;
    sl[i] = nb;
    const float lag = rho0 * fmax(nb, floe_pos(e - elim));
    co[i] = (float4)(D > cf.y ? D : 0.0f, count < few_limit ? 1.0f : 0.0f, lag, 0.0f);
}

/* u += dt a */
__kernel void dfsph_predict(uint n, __global float4 *u, __global const float *a, float dt)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    float4 ui = u[i];
    ui.x += dt * a[3 * i];
    ui.y += dt * a[3 * i + 1];
    ui.z += dt * a[3 * i + 2];
    u[i] = ui;
}

/* Drho_i/Dt of u: u_i . Gb_i - u_i.w (the moving boundaries' part, setup_b's)
 * + sum_j (u_i - u_j) . m_j grad W_ij */
inline float div_row(uint i, float3 xi, float4 ui, float4 Gb, __global const float4 *xm, __global const float4 *u,
                     float4 kc, float4 per, __global const uint *cntf, __global const uint *idxf, uint pitchf,
                     const int kgc, __global const float *gam)
{
    const float gi = kgc ? gam[i] : 1.0f;
    float s = ui.x * Gb.x + ui.y * Gb.y + ui.z * Gb.z - ui.w;
    const uint c = cntf[i];
    for (uint k = 0; k < c; k++) {
        FLOE_XM_IJ(xm, idxf, pitchf);
        const float g = DF_G(kgc, floe_dw_r(kc, r2));
        const float4 uj = u[j];
        s += (ui.x - uj.x) * (g * d.x) + (ui.y - uj.y) * (g * d.y) + (ui.z - uj.z) * (g * d.z);
    }
    return s;
}

/* The source of a solve and its warm start. divergence: S = Drho/Dt (0 for
 * a particle with too few neighbours), P = kv / dt; density: S = rho + dt
 * Drho/Dt - rho0 - lag, P = p / rho^2; then P = Pold = warm max(P, 0)
 * where D > 0, else 0. */
__kernel void dfsph_source(uint n, __global const float4 *xm, __global const float4 *u, __global const float4 *gb,
                           __global const float4 *co, __global const float *rho, __global const float *init,
                           int divergence, float dt, float warm, float rho0, __global float *S, __global float *P,
                           __global float *Pold, float4 kc, float4 per, __global const uint *cntf,
                           __global const uint *idxf, uint pitchf, int kgc, __global const float *gam)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const float3 xi = xm[i].xyz;
    const float d = kgc ? div_row(i, xi, u[i], gb[i], xm, u, kc, per, cntf, idxf, pitchf, 1, gam)
                        : div_row(i, xi, u[i], gb[i], xm, u, kc, per, cntf, idxf, pitchf, 0, gam);
    const float4 ci = co[i];
    const float rhoi = rho[i];
    S[i] = divergence ? (ci.y != 0.0f ? 0.0f : d) : rhoi + dt * d - rho0 - ci.z;
    const float p0 = divergence ? init[i] / dt : init[i] / (rhoi * rhoi);
    const float p = ci.x > 0.0f ? warm * floe_pos(p0) : 0.0f;
    P[i] = p;
    Pold[i] = p;
}

/* The divergence solve's error before any iteration: per work group the
 * sum of max(S_i, 0) / rho0 over the first nown particles (MPI: the owned
 * ones) that take part (not few), into part[group] (divergence_min_iterations
 * 0; the host reduces it as update's sums) */
__kernel __attribute__((reqd_work_group_size(WGS, 1, 1))) void
dfsph_source_err(uint n, __global const float *S, __global const float4 *co, float rho0, uint nown,
                 __global float *part)
{
    __local float red[WGS];
    const uint i = get_global_id(0);
    const float e = i < n && i < nown && co[i].y == 0.0f ? floe_pos(S[i]) / rho0 : 0.0f;
    const float sum = floe_group_sum(red, e);
    if (get_local_id(0) == 0)
        part[get_group_id(0)] = sum;
}

/* a^p_i = -(P_i Gb_i + sum_j (P_i + P_j) m_j grad W_ij) */
__kernel void dfsph_accel(uint n, __global const float4 *xm, __global const float *P, __global const float4 *gb,
                          __global float4 *ap, float4 kc, float4 per, __global const uint *cntf,
                          __global const uint *idxf, uint pitchf, int kgc, __global const float *gam)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const float3 xi = xm[i].xyz;
    const float gi = kgc ? gam[i] : 1.0f;
    const float Pi = P[i];
    const float4 Gb = gb[i];
    float ax = Pi * Gb.x, ay = Pi * Gb.y, az = Pi * Gb.z;
    const uint c = cntf[i];
    for (uint k = 0; k < c; k++) {
        FLOE_XM_IJ(xm, idxf, pitchf);
        const float g = DF_G(kgc, floe_dw_r(kc, r2));
        const float cc = Pi + P[j];
        ax += cc * (g * d.x);
        ay += cc * (g * d.y);
        az += cc * (g * d.z);
    }
    ap[i] = (float4)(-ax, -ay, -az, 0.0f);
}

/* F_i = S_i + dtk (a^p_i . Gb_i + sum_j (a^p_i - a^p_j) . m_j grad W_ij);
 * P^_i = max(P_i + omega F_i / (dtk D_i), 0), the next iterate
 * max(Pold_i + cheb (P^_i - Pold_i), 0) (P^ when cheb = 1) written over
 * Pold; per work group the sum of max(F_i, 0) / rho0 over the first nown
 * particles (MPI: the owned ones; n in one process) into part[group] (a
 * fixed-order tree). */
__kernel __attribute__((reqd_work_group_size(WGS, 1, 1))) void
dfsph_update(uint n, __global const float4 *xm, __global const float4 *ap, __global const float4 *gb,
             __global const float4 *co, __global const float *S, __global const float *P, __global float *Pold,
             __global float *part, float dtk, int divergence, float omega, float cheb, float rho0, float4 kc,
             float4 per, __global const uint *cntf, __global const uint *idxf, uint pitchf, int kgc,
             __global const float *gam, uint nown)
{
    __local float red[WGS];
    const uint i = get_global_id(0), l = get_local_id(0);
    float e = 0.0f;
    if (i < n) {
        const float3 xi = xm[i].xyz;
        const float gi = kgc ? gam[i] : 1.0f;
        const float4 ai = ap[i], Gb = gb[i];
        float s = ai.x * Gb.x + ai.y * Gb.y + ai.z * Gb.z;
        const uint c = cntf[i];
        for (uint k = 0; k < c; k++) {
            FLOE_XM_IJ(xm, idxf, pitchf);
            const float g = DF_G(kgc, floe_dw_r(kc, r2));
            const float4 aj = ap[j];
            s += (ai.x - aj.x) * (g * d.x) + (ai.y - aj.y) * (g * d.y) + (ai.z - aj.z) * (g * d.z);
        }
        const float4 ci = co[i];
        const float F = divergence && ci.y != 0.0f ? 0.0f : S[i] + dtk * s;
        e = i < nown ? floe_pos(F) / rho0 : 0.0f; /* MPI: a ghost's error is its owner's */
        const float Di = ci.x;
        const float pj = Di > 0.0f ? floe_pos(P[i] + omega * F / (dtk * Di)) : 0.0f;
        Pold[i] = cheb == 1.0f ? pj : floe_pos(Pold[i] + cheb * (pj - Pold[i]));
    }
    const float sum = floe_group_sum(red, e);
    if (l == 0)
        part[get_group_id(0)] = sum;
}

/* One work group: the group sums of update into out[slot] (fixed order). */
__kernel __attribute__((reqd_work_group_size(WGS, 1, 1))) void
dfsph_reduce(uint nparts, __global const float *part, __global float *out, uint slot)
{
    __local float red[WGS];
    const uint l = get_local_id(0);
    float s = 0.0f;
    for (uint k = l; k < nparts; k += WGS)
        s += part[k];
    const float sum = floe_group_sum(red, s);
    if (l == 0)
        out[slot] = sum;
}

/* u += dt a^p; divergence: kv = dt P; density: a = (u - v) / dt, p = rho^2 P */
__kernel void dfsph_apply(uint n, __global float4 *u, __global const float4 *ap, __global const float *P, float dt,
                          int divergence, __global float *kv, __global const float *v, __global float *a,
                          __global const float *rho, __global float *p)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    float4 ui = u[i];
    const float4 api = ap[i];
    ui.x += dt * api.x;
    ui.y += dt * api.y;
    ui.z += dt * api.z;
    u[i] = ui;
    if (divergence) {
        kv[i] = dt * P[i];
    } else {
        a[3 * i] = (ui.x - v[3 * i]) / dt;
        a[3 * i + 1] = (ui.y - v[3 * i + 1]) / dt;
        a[3 * i + 2] = (ui.z - v[3 * i + 2]) / dt;
        const float r = rho[i];
        p[i] = P[i] * r * r;
    }
}
