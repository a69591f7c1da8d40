/* The rigid module's coupling on the device (modules/rigid/rigid_cl.c):
 * the same pair terms as modules/rigid/couple.c, one fluid particle per work
 * item. Each fluid particle keeps its pairs' forces and torques on (at
 * most) two bodies in two slots; a third body in one row is counted in
 * `over` and the host takes the step's sums on the C path instead. The
 * sums per body are one work group each, in a fixed order. Neighbour lists
 * are neighbour-major: idx[k * pitch + i]. */
#include "core/sph.h"

/* kind 0: wcsph pressure, 1: iisph pressure, 2: viscosity (added to a too).
 * prm = (fi scale, beta, hyd, eps), g = gravity, cvisc */
__kernel void couple(uint n, int kind, __global const float *x, __global const float *m, __global const float *rho,
                     __global const float *p, __global const float *v, __global float *a, float4 kc, float4 per,
                     float rho0, float beta, int hyd, float cvisc, float eps, float4 g,
                     __global const float *xb, __global const float *Vb, __global const float *vb,
                     __global const uint *bid, __global const uint *cnt, __global const uint *idx, uint pitch,
                     __global const float *cen, __global int *slot_id, __global float *slot, __global uint *over)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    int id0 = -1, id1 = -1;
    float s0[6] = {0, 0, 0, 0, 0, 0}, s1[6] = {0, 0, 0, 0, 0, 0};
    const uint c = cnt[i];
    float3 ai = (float3)(0.0f);
    if (c) {
        const float3 xi = floe_load3(x, i);
        const float irho = 1.0f / rho[i];
        float fi = 0.0f, on = 0.0f;
        if (kind == 0)
            fi = -2.0f * rho0 * (p[i] / (rho[i] * rho[i]));
        else if (kind == 1) {
            fi = -beta * rho0 * (p[i] / (rho[i] * rho[i]));
            on = hyd && p[i] > 0.0f ? rho0 * irho : 0.0f;
        } else
            fi = cvisc * rho0 * 0.5f * irho;
        const float mi = m[i];
        int third = 0;
        for (uint k = 0; k < c; k++) {
            const uint j = idx[k * pitch + i];
            const float3 d = floe_min_image(xi - floe_load3(xb, j), per);
            const float r2 = d.x * d.x + d.y * d.y + d.z * d.z;
            float gg = Vb[j] * floe_dw_r(kc, r2);
            if (kind == 1)
                gg *= fi + on * (g.x * d.x + g.y * d.y + g.z * d.z);
            else if (kind == 2) {
                const float3 vij = floe_load3(v, i) - floe_load3(vb, j);
                gg *= fi * floe_neg(vij.x * d.x + vij.y * d.y + vij.z * d.z) / (r2 + eps);
            } else
                gg *= fi;
            const float3 aib = gg * d;
            ai += aib;
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
            } else
                third = 1;
        }
        if (third)
            atomic_inc(over);
        if (kind == 2) {
            a[3 * i] += ai.x;
            a[3 * i + 1] += ai.y;
            a[3 * i + 2] += ai.z;
        }
    }
    slot_id[2 * i] = id0;
    slot_id[2 * i + 1] = id1;
    for (int k = 0; k < 6; k++) {
        slot[12 * i + k] = s0[k];
        slot[12 * i + 6 + k] = s1[k];
    }
}

/* partial sums: item (body, chunk) sums the slots of particles
 * [chunk * len, (chunk + 1) * len) that belong to the body, in order */
__kernel void reduce_chunks(uint items, uint n, uint nchunks, uint len, __global const int *slot_id,
                            __global const float *slot, __global float *part)
{
    const uint it = get_global_id(0);
    if (it >= items)
        return;
    const int body = (int)(it / nchunks);
    const uint ch = it % nchunks, i0 = ch * len, i1 = min(n, i0 + len);
    float s[6] = {0, 0, 0, 0, 0, 0};
    for (uint i = i0; i < i1; i++)
        for (int q = 0; q < 2; q++)
            if (slot_id[2 * i + q] == body)
                for (int k = 0; k < 6; k++)
                    s[k] += slot[12 * i + 6 * q + k];
    for (int k = 0; k < 6; k++)
        part[6 * it + k] = s[k];
}

/* out[6 body..] = the body's chunks summed in order */
__kernel void reduce_bodies(uint nb, uint nchunks, __global const float *part, __global float *out)
{
    const uint b = get_global_id(0);
    if (b >= nb)
        return;
    float s[6] = {0, 0, 0, 0, 0, 0};
    for (uint c = 0; c < nchunks; c++)
        for (int k = 0; k < 6; k++)
            s[k] += part[6 * (b * nchunks + c) + k];
    for (int k = 0; k < 6; k++)
        out[6 * b + k] = s[k];
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
