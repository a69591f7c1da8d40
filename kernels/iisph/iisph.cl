/* IISPH on the device: the OpenCL path of modules/iisph (iisph_cl.c).
 * Same equations and, term by term, the same arithmetic as the C path in
 * modules/iisph/iisph.c (docs/iisph.md has the equations):
 *
 *   (kernels iisph_*; the density is sph.density's, kernels/sph/sph.cl)
 *   setup_b   boundary sums G_b, E, K; implicit damping / wall friction;
 *             v_adv; packs (x, m) into float4; max |v|^2 and max |a|^2
 *   gamma     gradient_correction only: gamma_i, G_b and E scaled by it
 *   setup_f   fluid sums G, sum m_j |grad W|^2, sum v_adv_j . m_j grad W;
 *             rho_adv, a_ii, source term, warm-started pressure
 *   accel     a^p_i = on_i E_i - (P_i G_i + sum_j P_j m_j grad W_ij)
 *   update    (A p)_i, residual, next pressure, per-group error sums
 *   reduce    the group sums into one pair of floats (one work group)
 *   finish    a += a^p, p = the iterate whose error was measured
 *
 * The pair gradients m_j grad W_ij are recomputed in every pass from the
 * packed (x, m) (the C path stores them; the values are the same floats).
 * Neighbour lists are neighbour-major: idx[k * pitch + i]. Work groups are
 * 128 items (api->cl_run). */
#include "core/sph.h"

#define WGS 128

/* ---- per-step set-up ------------------------------------------------------ */

/* trapped_floor's weight from q = |G_b| / sum_b V_b |grad W_ib|: 1 at q <=
 * 0.25, 0 from 0.5 on, linear between, 0 without boundary neighbours
 * (iisph_trap_weight in modules/iisph/iisph.h) */
inline float trap_weight(float gb2, float sb)
{
    if (!(sb > 0.0f))
        return 0.0f;
    const float q = sqrt(gb2) / sb, t = (0.5f - q) / (0.5f - 0.25f);
    return t < 0.0f ? 0.0f : t > 1.0f ? 1.0f : t;
}

/* x = M^-1 b for the symmetric 3x3 M = (xx yy zz xy xz yz), as solve3 */
inline float3 solve3(const float M[6], float3 b)
{
    const float a = M[0], e = M[1], i = M[2], bb = M[3], c = M[4], f = M[5];
    const float c0 = e * i - f * f, c1 = c * f - bb * i, c2 = bb * f - c * e;
    const float det = a * c0 + bb * c1 + c * c2;
    const float inv = 1.0f / det;
    float3 x;
    x.x = inv * (c0 * b.x + c1 * b.y + c2 * b.z);
    x.y = inv * (c1 * b.x + (a * i - c * c) * b.y + (bb * c - a * f) * b.z);
    x.z = inv * (c2 * b.x + (bb * c - a * f) * b.y + (a * e - bb * bb) * b.z);
    return x;
}

/* Boundary pass (setup_boundary of the C path), one launch per boundary set
 * (hasb = 0: none). init: the sums start at 0, else from the buffers (Gb,
 * Eb, K hold the raw sums of the previous launches); fin: the last launch,
 * which finishes the particle: v_adv (implicit damping and wall friction),
 * a, Gb = beta rho0 G_b, Eb = rho0 E, xm = (x, m), and the group maxima of
 * |v|^2 (mx[0]) and of the driving |a|^2 (mx[1]). gv = (g, 0.01 H^2). */
__kernel __attribute__((reqd_work_group_size(WGS, 1, 1))) void
iisph_setup_b(uint n, __global const float *x, __global const float *v, __global const float *m, __global float *a,
        __global float4 *xm, __global float4 *vadv, __global float4 *Gb, __global float4 *Eb, __global float *K,
        float4 kc, float4 per, float4 gv, float rho0, float dt, float beta, int hyd, float visc_c, float damping,
        int init, int fin, int hasb, __global const float *xb, __global const float *Vb, __global const uint *cntb,
        __global const uint *idxb, uint pitchb, __global uint *mx, int kgc, __global float *tr, int hasv,
        __global const float *vb)
{
    __local float red[WGS];
    const uint i = get_global_id(0);
    const int live = i < n;
    const int visc = visc_c > 0.0f;
    float v2 = 0.0f, a2 = 0.0f;
    if (live) {
        const float3 xi = floe_load3(x, i);
        float3 G = (float3)(0.0f), E = (float3)(0.0f);
        float Kc[6] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
        float sb = 0.0f; /* sum_b V_b |grad W_ib| (trapped_floor's q), in Gb.w between launches */
        float ub = 0.0f; /* sum_b V_b v_b . grad W_ib of moving sets (hasv), in Eb.w between launches */
        if (!init) {
            G = Gb[i].xyz;
            sb = Gb[i].w;
            E = Eb[i].xyz;
            ub = Eb[i].w;
            if (visc)
                for (int c = 0; c < 6; c++)
                    Kc[c] = K[6 * i + c];
        }
        float trb = kgc && !init ? tr[i] : 0.0f; /* gradient_correction: -tr M, boundary part */
        if (hasb) {
            float3 s = (float3)(0.0f), se = (float3)(0.0f);
            float kxx = 0.0f, kyy = 0.0f, kzz = 0.0f, kxy = 0.0f, kxz = 0.0f, kyz = 0.0f;
            float st = 0.0f, sm = 0.0f, su = 0.0f;
            const uint c = cntb[i];
            for (uint k = 0; k < c; k++) {
                const uint j = idxb[k * pitchb + i];
                FLOE_X_IJ(xb);
                const float dw = floe_dw_r(kc, r2);
                const float g = Vb[j] * dw;
                if (kgc)
                    st += Vb[j] * dw * r2;
                sm += Vb[j] * fabs(dw) * sqrt(r2);
                if (hasv)
                    su += g * dot(floe_load3(vb, j), d);
                s.x += g * d.x;
                s.y += g * d.y;
                s.z += g * d.z;
                if (hyd) {
                    const float ge = Vb[j] * dw * (gv.x * d.x + gv.y * d.y + gv.z * d.z);
                    se.x += ge * d.x;
                    se.y += ge * d.y;
                    se.z += ge * d.z;
                }
                if (visc) {
                    const float gk = Vb[j] * dw / (r2 + gv.w);
                    kxx += gk * d.x * d.x;
                    kyy += gk * d.y * d.y;
                    kzz += gk * d.z * d.z;
                    kxy += gk * d.x * d.y;
                    kxz += gk * d.x * d.z;
                    kyz += gk * d.y * d.z;
                }
            }
            G.x += s.x;
            G.y += s.y;
            G.z += s.z;
            trb += st;
            sb += sm;
            ub += su;
            if (hyd) {
                E.x += se.x;
                E.y += se.y;
                E.z += se.z;
            }
            if (visc) {
                Kc[0] += kxx;
                Kc[1] += kyy;
                Kc[2] += kzz;
                Kc[3] += kxy;
                Kc[4] += kxz;
                Kc[5] += kyz;
            }
        }
        if (kgc)
            tr[i] = trb;
        if (!fin) {
            Gb[i] = (float4)(G, sb);
            Eb[i] = (float4)(E, ub);
            if (visc)
                for (int c = 0; c < 6; c++)
                    K[6 * i + c] = Kc[c];
        } else {
            const float3 vi = floe_load3(v, i);
            float3 ai = floe_load3(a, i);
            a2 = ai.x * ai.x + ai.y * ai.y + ai.z * ai.z;
            v2 = vi.x * vi.x + vi.y * vi.y + vi.z * vi.z;
            /* the damping slows the velocity, not the force increment (C path) */
            const float vd = damping > 0.0f ? 1.0f / (1.0f + dt * damping) : 1.0f;
            const float3 rhs = (float3)(vd * vi.x + dt * ai.x, vd * vi.y + dt * ai.y, vd * vi.z + dt * ai.z);
            float3 va;
            if (visc || damping > 0.0f) {
                const float cv = visc_c;
                const float M[6] = {1.0f - dt * cv * Kc[0], 1.0f - dt * cv * Kc[1], 1.0f - dt * cv * Kc[2],
                                    -dt * cv * Kc[3], -dt * cv * Kc[4], -dt * cv * Kc[5]};
                va = solve3(M, rhs);
                ai.x = (va.x - vi.x) / dt;
                ai.y = (va.y - vi.y) / dt;
                ai.z = (va.z - vi.z) / dt;
                a[3 * i] = ai.x;
                a[3 * i + 1] = ai.y;
                a[3 * i + 2] = ai.z;
            } else {
                va = rhs;
            }
            vadv[i] = (float4)(va, 0.0f);
            /* .w: trapped_floor's weight, read by setup_f */
            Gb[i] = (float4)(beta * rho0 * G.x, beta * rho0 * G.y, beta * rho0 * G.z, trap_weight(dot(G, G), sb));
            /* .w: the moving boundaries' part of rho_adv, as Gb's (setup_f) */
            Eb[i] = (float4)(rho0 * E.x, rho0 * E.y, rho0 * E.z, beta * rho0 * ub);
            xm[i] = (float4)(xi, m[i]);
            /* the C path's maxima skip NaN (a > max ? a : max) */
            if (isnan(v2))
                v2 = 0.0f;
            if (isnan(a2))
                a2 = 0.0f;
        }
    }
    if (fin) {
        floe_group_max(red, v2, mx);
        floe_group_max(red, a2, mx + 1);
    }
}

/* gradient_correction (floe_gamma_one of the C path): gamma_i = dim / tr M_i,
 * tr M_i = -(sum_j m_j / rho0 dW/dr r + the boundary part from setup_b),
 * clamped to [lo, 1/lo]; the boundary sums G_b and E are scaled by gamma_i
 * (setup_f adds the fluid part with pair factors (gamma_i + gamma_j) / 2). */
__kernel void iisph_gamma(uint n, __global const float4 *xm, __global float4 *G, __global float4 *E,
                          __global const float *tr, __global float *gam, float4 kc, float4 per, float inv_rho0,
                          float dim, float lo, __global const uint *cntf, __global const uint *idxf, uint pitchf)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const float g = floe_gamma_row(i, xm, tr[i], kc, per, inv_rho0, dim, lo, cntf, idxf, pitchf);
    gam[i] = g;
    float4 Gi = G[i], Ei = E[i];
    G[i] = (float4)(g * Gi.x, g * Gi.y, g * Gi.z, Gi.w);
    E[i] = g * Ei;
}

/* Fluid pass (setup_fluid of the C path): G = G_b + sum_j m_j grad W_ij,
 * E /= rho, rho_adv, a_ii, the source term and the warm-started pressure.
 * cf = (rho0, dt, omega, warm), cg = (aii_min, max_correction_speed,
 * spacing, trapped_floor's |a_ii|, 0 = off). Writes G (.w = 0), E, co = (b, lag, w, 1/rho^2), p0, P. */
__kernel void iisph_setup_f(uint n, __global const float4 *xm, __global const float4 *vadv, __global const float *rho,
                      __global const float *pold, __global float4 *G, __global float4 *E, __global float4 *co,
                      __global float *p0, __global float *P, float4 kc, float4 per, float4 cf, float4 cg,
                      __global const uint *mx, __global const uint *cntf, __global const uint *idxf, uint pitchf,
                      int kgc, __global const float *gam)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const float gi = kgc ? gam[i] : 1.0f;
    const float4 xmi = xm[i];
    const float3 xi = xmi.xyz;
    float3 s = (float3)(0.0f);
    float s2 = 0.0f, dv = 0.0f;
    const uint c = cntf[i];
    for (uint k = 0; k < c; k++) {
        const uint j = idxf[k * pitchf + i];
        const float4 xj = xm[j];
        const float3 d = floe_min_image(xi - xj.xyz, per);
        const float r2 = d.x * d.x + d.y * d.y + d.z * d.z;
        const float dw = floe_dw_r(kc, r2);
        const float g = kgc ? xj.w * dw * (0.5f * (gi + gam[j])) : xj.w * dw;
        const float ux = g * d.x, uy = g * d.y, uz = g * d.z;
        s.x += ux;
        s.y += uy;
        s.z += uz;
        s2 += g * dw * r2;
        const float4 vj = vadv[j];
        dv += vj.x * ux + vj.y * uy + vj.z * uz;
    }
    const float rho0 = cf.x, dt = cf.y, omega = cf.z, warm = cf.w;
    const float rhoi = rho[i], ir2 = 1.0f / (rhoi * rhoi);
    float4 Ei = E[i];
    Ei.x /= rhoi;
    Ei.y /= rhoi;
    Ei.z /= rhoi;
    E[i] = Ei;
    float4 Gi = G[i];
    const float trap = Gi.w; /* setup_b's trapped_floor weight */
    Gi.x += s.x;
    Gi.y += s.y;
    Gi.z += s.z;
    Gi.w = 0.0f;
    G[i] = Gi;
    const float4 va = vadv[i];
    /* v_adv_i - v_b against moving boundary sets: E.w, setup_b's */
    const float rho_adv = rhoi + dt * (va.x * Gi.x + va.y * Gi.y + va.z * Gi.z - dv - Ei.w);
    const float aii = -dt * dt * ir2 * (Gi.x * Gi.x + Gi.y * Gi.y + Gi.z * Gi.z + xmi.w * s2);
    /* largest compression removed this step: max(max_correction_speed, |v|max) dt / d */
    const float corr = cg.y;
    float elim = 1e30f;
    if (corr > 0.0f) {
        const float vc = fmax(corr, sqrt(as_float(mx[0])));
        elim = fmin(vc * dt / cg.z, 1e30f);
    }
    const float lag = floe_pos(rhoi / rho0 - 1.0f - elim);
    const float b = 1.0f - rho_adv / rho0 + lag;
    /* trapped_floor: a trapped particle's step bounded (cg.w or trap 0: aii itself) */
    const float fl = cg.w * trap;
    const float w = aii < -cg.x ? omega * rho0 / (aii < -fl ? aii : -fl) : 0.0f;
    co[i] = (float4)(b, lag, w, ir2);
    const float p = w != 0.0f ? warm * floe_pos(pold[i]) : 0.0f;
    p0[i] = p;
    P[i] = p * ir2;
}

/* ---- the Jacobi iteration ------------------------------------------------- */

/* m_j dW/dr / r of pair (i, j), times (gamma_i + gamma_j) / 2 with
 * gradient_correction (kgc); d = x_i - x_j. The row functions below take kgc
 * as a constant at each call, so that each compiles to its own loop (a
 * select inside one loop cost the plain solve 10% on the H200). */
inline float pair_g(float3 xi, float4 xj, float gi, __global const float *gam, uint j, float4 kc, float4 per,
                    const int kgc, float3 *d)
{
    *d = floe_min_image(xi - xj.xyz, per);
    const float r2 = d->x * d->x + d->y * d->y + d->z * d->z;
    const float dw = floe_dw_r(kc, r2);
    return kgc ? xj.w * dw * (0.5f * (gi + gam[j])) : xj.w * dw;
}

/* sum_j P_j m_j grad W_ij over the fluid row of i */
inline float3 accel_row(uint i, uint c, float3 xi, float gi, __global const float4 *xm, __global const float *P,
                        __global const float *gam, float4 kc, float4 per, __global const uint *idxf, uint pitchf,
                        const int kgc)
{
    float sx = 0.0f, sy = 0.0f, sz = 0.0f;
    for (uint k = 0; k < c; k++) {
        const uint j = idxf[k * pitchf + i];
        float3 d;
        const float g = pair_g(xi, xm[j], gi, gam, j, kc, per, kgc, &d);
        const float Pj = P[j];
        sx += Pj * (g * d.x);
        sy += Pj * (g * d.y);
        sz += Pj * (g * d.z);
    }
    return (float3)(sx, sy, sz);
}

/* sum_j a^p_j . m_j grad W_ij over the fluid row of i */
inline float update_row(uint i, uint c, float3 xi, float gi, __global const float4 *xm, __global const float4 *ap,
                        __global const float *gam, float4 kc, float4 per, __global const uint *idxf, uint pitchf,
                        const int kgc)
{
    float sum = 0.0f;
    for (uint k = 0; k < c; k++) {
        const uint j = idxf[k * pitchf + i];
        float3 d;
        const float g = pair_g(xi, xm[j], gi, gam, j, kc, per, kgc, &d);
        const float4 aj = ap[j];
        sum += aj.x * (g * d.x) + aj.y * (g * d.y) + aj.z * (g * d.z);
    }
    return sum;
}

/* a^p_i = on_i E_i - (P_i G_i + sum_j P_j m_j grad W_ij) */
__kernel void iisph_accel(uint n, __global const float4 *xm, __global const float *P, __global const float4 *G,
                    __global const float4 *E, __global float4 *ap, float4 kc, float4 per,
                    __global const uint *cntf, __global const uint *idxf, uint pitchf, int kgc,
                    __global const float *gam)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const float gi = kgc ? gam[i] : 1.0f;
    const float3 xi = xm[i].xyz;
    /* a constant kgc per call: the plain loop carries no load of gamma */
    const float3 s = kgc ? accel_row(i, cntf[i], xi, gi, xm, P, gam, kc, per, idxf, pitchf, 1)
                         : accel_row(i, cntf[i], xi, gi, xm, P, gam, kc, per, idxf, pitchf, 0);
    const float sx = s.x, sy = s.y, sz = s.z;
    const float Pi = P[i], on = Pi > 0.0f ? 1.0f : 0.0f;
    const float4 Gi = G[i], Ei = E[i];
    ap[i] = (float4)(on * Ei.x - (Pi * Gi.x + sx), on * Ei.y - (Pi * Gi.y + sy), on * Ei.z - (Pi * Gi.z + sz), 0.0f);
}

/* (A p)_i = c (a^p_i . G_i - sum_j a^p_j . m_j grad W_ij), c = dt^2 / rho0;
 * r_i = b_i - (A p)_i; next iterate max(0, p_i + w_i r_i) and P = p / rho^2;
 * per work group the sums of the controlled error (|r| where p > 0,
 * max(-r, 0) where p = 0) and of the predicted compression max(lag - r, 0)
 * into part[group] (a fixed-order tree: deterministic), over the first nown
 * particles (MPI: the owned ones; n in one process). */
__kernel __attribute__((reqd_work_group_size(WGS, 1, 1))) void
iisph_update(uint n, __global const float4 *xm, __global const float4 *ap, __global const float4 *G,
       __global const float4 *co, float c, __global const float *pprev, __global const float *pcur,
       __global float *pnext, float om, __global float *P,
       __global float2 *part, float4 kc, float4 per, __global const uint *cntf, __global const uint *idxf,
       uint pitchf, int kgc, __global const float *gam, uint nown)
{
    __local float2 red[WGS];
    const uint i = get_global_id(0), l = get_local_id(0);
    float2 e = (float2)(0.0f);
    if (i < n) {
        const float3 xi = xm[i].xyz;
        const float gi = kgc ? gam[i] : 1.0f;
        const float sum = kgc ? update_row(i, cntf[i], xi, gi, xm, ap, gam, kc, per, idxf, pitchf, 1)
                              : update_row(i, cntf[i], xi, gi, xm, ap, gam, kc, per, idxf, pitchf, 0);
        const float4 ai = ap[i], Gi = G[i], ci = co[i];
        const float Ap = c * (ai.x * Gi.x + ai.y * Gi.y + ai.z * Gi.z - sum);
        const float r = ci.x - Ap;
        const float pc = pcur[i];
        e.x = pc > 0.0f ? fabs(r) : floe_pos(-r);
        e.y = floe_pos(ci.y - r);
        if (i >= nown) /* MPI: a ghost's error is its owner's */
            e = (float2)(0.0f);
        /* Jacobi iterate; with Chebyshev acceleration (om != 1) extrapolated
         * from the previous iterate */
        const float pj = pc + ci.z * r;
        const float pn = ci.z == 0.0f ? 0.0f : om == 1.0f ? floe_pos(pj) : floe_pos(pprev[i] + om * (pj - pprev[i]));
        pnext[i] = pn;
        P[i] = pn * ci.w;
    }
    red[l] = e;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint h = WGS / 2; h > 0; h >>= 1) {
        if (l < h)
            red[l] += red[l + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0)
        part[get_group_id(0)] = red[0];
}

/* One work group: the group sums of update into red[2 + 2 slot], red[3 + 2
 * slot] (fixed order; red[0..1] hold the maxima of setup_b). */
__kernel __attribute__((reqd_work_group_size(WGS, 1, 1))) void
iisph_reduce(uint nparts, __global const float2 *part, __global float *red_out, uint slot)
{
    __local float2 red[WGS];
    const uint l = get_local_id(0);
    float2 s = (float2)(0.0f);
    for (uint k = l; k < nparts; k += WGS)
        s += part[k];
    red[l] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint h = WGS / 2; h > 0; h >>= 1) {
        if (l < h)
            red[l] += red[l + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0) {
        red_out[2 + 2 * slot] = red[0].x;
        red_out[3 + 2 * slot] = red[0].y;
    }
}

/* a += a^p, p = the pressure of the same iterate */
__kernel void iisph_finish(uint n, __global const float4 *ap, __global const float *pc, __global float *a,
                     __global float *p)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const float4 api = ap[i];
    a[3 * i] += api.x;
    a[3 * i + 1] += api.y;
    a[3 * i + 2] += api.z;
    p[i] = pc[i];
}
