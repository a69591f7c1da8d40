/* The rigid module's coupling on the device (modules/rigid/rigid_cl.c):
 * the same pair terms as modules/rigid/couple.c, one fluid particle per work
 * item. Each fluid particle keeps its pairs' forces and torques on (at
 * most) two bodies; its work group sums them per body (couple), then one
 * work group per body adds the groups' entries (reduce_bodies): the
 * reduction reads about 8 words per 128 fluid particles and body, not the
 * particles themselves. Everything in a fixed order. Neighbour lists are
 * neighbour-major: idx[k * pitch + i]. */
#include "core/sph.h"

#define WGS 128 /* api->cl_run's work-group size (modules/rigid/rigid_cl.c) */
#define KMAX 8  /* bodies one work group of fluid particles may touch */

/* *p += v, atomically (OpenCL 1.2 has no float atomics) */
inline void add_atomic(volatile __global float *p, float v)
{
    union {
        uint u;
        float f;
    } o, nw;
    do {
        o.f = *p;
        nw.f = o.f + v;
    } while (atomic_cmpxchg((volatile __global uint *)p, o.u, nw.u) != o.u);
}

/* kind 0: wcsph pressure, 1: iisph pressure, 2: viscosity (added to a too);
 * visc (kinds 0, 1): the viscosity too, in the same pass (rigid.force{alpha}).
 * One work item per fluid particle; the group's slots are then summed per
 * body in local memory, in particle order, by the group's first item: at
 * most KMAX (body, F, T) entries per group of WGS fluid particles go out
 * (gid = -1: unused). The fluid is sorted by cell, so a group spans a few
 * cells and touches a body or two; most groups touch none and write only
 * their -1 ids. A third body in one row, or more than KMAX in one group
 * (rare), adds that part to spill[6 b..] with atomics, in no fixed order,
 * and is counted in `over`; reduce_bodies adds the spill in. */
__kernel __attribute__((reqd_work_group_size(WGS, 1, 1))) void
couple(uint n, int kind, int visc, __global const float *x, __global const float *m, __global const float *rho,
       __global const float *p, __global const float *v, __global float *a, float4 kc, float4 per, float rho0,
       float beta, int hyd, float cvisc, float eps, float4 g, __global const float *xb, __global const float *Vb,
       __global const float *vb, __global const uint *bid, __global const uint *cnt, __global const uint *idx,
       uint pitch, __global const float *cen, __global int *gid, __global float *gs, __global uint *over,
       __global float *spill)
{
    __local int lid_[2 * WGS];
    __local float ls[12 * WGS];
    __local int any;
    const uint i = get_global_id(0), li = get_local_id(0), grp = get_group_id(0);
    if (li == 0)
        any = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    int id0 = -1, id1 = -1;
    float s0[6] = {0, 0, 0, 0, 0, 0}, s1[6] = {0, 0, 0, 0, 0, 0};
    const uint c = i < n ? cnt[i] : 0;
    if (c) {
        const float3 xi = floe_load3(x, i);
        const float irho = 1.0f / rho[i];
        const int vs = kind == 2 || visc;
        const int hydf = kind == 0 && hyd; /* wcsph extrapolate: the fluid's share too (couple.c) */
        const float fv = vs ? cvisc * rho0 * 0.5f * irho : 0.0f;
        float fi = 0.0f, on = 0.0f;
        if (kind == 0) {
            fi = -2.0f * rho0 * (p[i] / (rho[i] * rho[i]));
            on = hydf && p[i] > 0.0f ? rho0 * irho : 0.0f;
        } else if (kind == 1) {
            fi = -beta * rho0 * (p[i] / (rho[i] * rho[i]));
            on = hyd && p[i] > 0.0f ? rho0 * irho : 0.0f;
        }
        const float mi = m[i];
        float3 ai = (float3)(0.0f);
        int third = 0;
        for (uint k = 0; k < c; k++) {
            const uint j = idx[k * pitch + i];
            const float3 d = floe_min_image(xi - floe_load3(xb, j), per);
            const float r2 = d.x * d.x + d.y * d.y + d.z * d.z;
            const float w = Vb[j] * floe_dw_r(kc, r2);
            /* gv: viscous (the fluid and the body), gp: pressure (the body;
             * of it gh, wcsph's extrapolated part, the fluid too) */
            float gp = 0.0f, gv = 0.0f, gh = 0.0f;
            if (vs) {
                const float3 vij = floe_load3(v, i) - floe_load3(vb, j);
                gv = w * (fv * floe_neg(vij.x * d.x + vij.y * d.y + vij.z * d.z) / (r2 + eps));
            }
            if (kind == 1)
                gp = w * (fi + on * (g.x * d.x + g.y * d.y + g.z * d.z));
            else if (kind == 0) {
                gh = w * (on * (g.x * d.x + g.y * d.y + g.z * d.z));
                gp = w * fi + gh;
            }
            const float gg = kind == 2 ? gv : visc ? gp + gv : gp;
            const float3 aib = gg * d;
            ai += (gv + gh) * d;
            const float3 fb = -mi * aib;
            const int o = (int)bid[j];
            const float3 r = floe_load3(xb, j) - floe_load3(cen, (uint)o);
            const float3 t = cross(r, fb);
            if (id0 < 0 || id0 == o) {
                id0 = o;
                s0[0] += fb.x, s0[1] += fb.y, s0[2] += fb.z, s0[3] += t.x, s0[4] += t.y, s0[5] += t.z;
            } else if (id1 < 0 || id1 == o) {
                id1 = o;
                s1[0] += fb.x, s1[1] += fb.y, s1[2] += fb.z, s1[3] += t.x, s1[4] += t.y, s1[5] += t.z;
            } else { /* a third body: straight into its spill */
                third = 1;
                const float e6[6] = {fb.x, fb.y, fb.z, t.x, t.y, t.z};
                for (int k = 0; k < 6; k++)
                    add_atomic(spill + 6 * o + k, e6[k]);
            }
        }
        if (third)
            atomic_inc(over);
        if (vs || hydf) {
            a[3 * i] += ai.x;
            a[3 * i + 1] += ai.y;
            a[3 * i + 2] += ai.z;
        }
        any = 1; /* every writer writes the same value */
    }
    lid_[2 * li] = id0;
    lid_[2 * li + 1] = id1;
    for (int k = 0; k < 6; k++) {
        ls[12 * li + k] = s0[k];
        ls[12 * li + 6 + k] = s1[k];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (li != 0)
        return;
    int tid[KMAX];
    float ts[KMAX][6];
    int nt = 0, full = 0;
    for (int e = 0; e < KMAX; e++)
        tid[e] = -1;
    if (any)
        for (uint q = 0; q < 2 * WGS; q++) {
            const int o = lid_[q];
            if (o < 0)
                continue;
            int e = 0;
            while (e < nt && tid[e] != o)
                e++;
            if (e == nt) {
                if (nt == KMAX) { /* no entry left: into the body's spill */
                    full = 1;
                    for (int k = 0; k < 6; k++)
                        add_atomic(spill + 6 * o + k, ls[6 * q + k]);
                    continue;
                }
                tid[nt++] = o;
                for (int k = 0; k < 6; k++)
                    ts[e][k] = 0.0f;
            }
            for (int k = 0; k < 6; k++)
                ts[e][k] += ls[6 * q + k];
        }
    if (full)
        atomic_inc(over);
    for (int e = 0; e < KMAX; e++) {
        gid[KMAX * grp + e] = tid[e];
        if (e < nt)
            for (int k = 0; k < 6; k++)
                gs[6 * (KMAX * grp + e) + k] = ts[e][k];
    }
}

/* out[6 b..] = body b's entries of every group, one work group per body:
 * item li sums groups li, li + WGS, ... in order, then a fixed tree adds
 * the items' sums (the same bits every run), then the body's spill (and
 * clears it). The first group also puts the `over` count after the sums
 * (out[6 nb], as bits) and clears it. */
__kernel __attribute__((reqd_work_group_size(WGS, 1, 1))) void
reduce_bodies(uint nb, uint ngroups, __global const int *gid, __global const float *gs, __global float *out,
              __global uint *over, __global float *spill)
{
    __local float red[6 * WGS];
    const uint b = get_group_id(0), li = get_local_id(0);
    if (b >= nb)
        return; /* the whole group: nb groups are launched */
    float s[6] = {0, 0, 0, 0, 0, 0};
    for (uint grp = li; grp < ngroups; grp += WGS)
        for (int e = 0; e < KMAX; e++) {
            const int o = gid[KMAX * grp + e];
            if (o < 0)
                break; /* entries are filled from the front */
            if (o == (int)b)
                for (int k = 0; k < 6; k++)
                    s[k] += gs[6 * (KMAX * grp + e) + k];
        }
    for (int k = 0; k < 6; k++)
        red[6 * li + k] = s[k];
    for (uint h = WGS / 2; h > 0; h >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (li < h)
            for (int k = 0; k < 6; k++)
                red[6 * li + k] += red[6 * (li + h) + k];
    }
    if (li == 0) {
        for (int k = 0; k < 6; k++) {
            out[6 * b + k] = red[k] + spill[6 * b + k];
            spill[6 * b + k] = 0.0f;
        }
        if (b == 0) {
            ((__global uint *)out)[6 * nb] = *over;
            *over = 0;
        }
    }
}

/* the body particles from the poses: pose[20 b..] = (c, R row-major, v, w):
 * x = c + R r0, v = v_c + w x (R r0) */
__kernel void place(uint n, __global const float *r0, __global const uint *bid, __global const float *pose,
                    __global float *x, __global float *v)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    __global const float *P = pose + 20 * bid[i];
    const float3 p = floe_load3(r0, i);
    const float3 r = (float3)(P[3] * p.x + P[4] * p.y + P[5] * p.z, P[6] * p.x + P[7] * p.y + P[8] * p.z,
                              P[9] * p.x + P[10] * p.y + P[11] * p.z);
    x[3 * i] = P[0] + r.x;
    x[3 * i + 1] = P[1] + r.y;
    x[3 * i + 2] = P[2] + r.z;
    const float3 w = (float3)(P[15], P[16], P[17]);
    const float3 u = (float3)(P[12], P[13], P[14]) + cross(w, r);
    v[3 * i] = u.x;
    v[3 * i + 1] = u.y;
    v[3 * i + 2] = u.z;
}
