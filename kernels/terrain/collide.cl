/* terrain.collide on the device (modules/terrain/collide_cl.c): Kipfer's
 * collision, one work item per particle, operation by operation as
 * collide.c (see its header for the model); the wet map's touched flags
 * are bytes that every writer sets to 1, then `wet` updates the map. */

#pragma OPENCL FP_CONTRACT OFF

typedef struct {
    int nx, nz;
    float x0, z0, cell, inv_cell;
} terrain_t;

/* one axis of the bilinear lookup: the C path's text (<floe/terrain.h>) */
#include "floe/terrain_axis.h"
#define axis floe_terrain_axis

static float height(terrain_t t, __global const float *h, float x, float z, float *dx, float *dz)
{
    int i, j, inx, inz;
    float fx, fz;
    axis((x - t.x0) * t.inv_cell, t.nx, &i, &fx, &inx);
    axis((z - t.z0) * t.inv_cell, t.nz, &j, &fz, &inz);
    const int i1 = t.nx > 1 ? i + 1 : i, j1 = t.nz > 1 ? j + 1 : j;
    const float h00 = h[i + t.nx * j], h10 = h[i1 + t.nx * j];
    const float h01 = h[i + t.nx * j1], h11 = h[i1 + t.nx * j1];
    const float a = h00 + fx * (h10 - h00), b = h01 + fx * (h11 - h01);
    *dx = inx ? ((1.0f - fz) * (h10 - h00) + fz * (h11 - h01)) * t.inv_cell : 0.0f;
    *dz = inz ? (b - a) * t.inv_cell : 0.0f;
    return a + fz * (b - a);
}

static float clearance(terrain_t t, __global const float *h, float r, float3 p)
{
    float gx, gz;
    return p.y - height(t, h, p.x, p.z, &gx, &gz) - r;
}

static int sample_of(terrain_t t, float x, float z)
{
    float u = (x - t.x0) * t.inv_cell + 0.5f, w = (z - t.z0) * t.inv_cell + 0.5f;
    int i = u > 0 ? (int)u : 0, j = w > 0 ? (int)w : 0;
    i = i < t.nx ? i : t.nx - 1;
    j = j < t.nz ? j : t.nz - 1;
    return i + t.nx * j;
}

static float3 bounce(terrain_t t, __global const float *h, __global const float *wet, float e, float mu_dry,
                     float mu_wet, float3 p, float3 v)
{
    float gx, gz;
    (void)height(t, h, p.x, p.z, &gx, &gz);
    const float inv = 1.0f / sqrt(1.0f + gx * gx + gz * gz);
    const float3 n = (float3)(-gx * inv, inv, -gz * inv);
    const float vn = v.x * n.x + v.y * n.y + v.z * n.z;
    if (vn >= 0.0f)
        return v;
    const float3 vt = (float3)(v.x - vn * n.x, v.y - vn * n.y, v.z - vn * n.z);
    const float vtl = sqrt(vt.x * vt.x + vt.y * vt.y + vt.z * vt.z);
    const float w = wet[sample_of(t, p.x, p.z)];
    const float mu = mu_dry + (mu_wet - mu_dry) * w;
    float keep = vtl > 0.0f ? 1.0f - mu * (1.0f + e) * (-vn) / vtl : 0.0f;
    keep = keep > 0.0f ? keep : 0.0f;
    return (float3)(keep * vt.x - e * vn * n.x, keep * vt.y - e * vn * n.y, keep * vt.z - e * vn * n.z);
}

__kernel void collide(uint n, __global float *xs, __global float *vs, __global uint *rest, __global const float *h,
                      __global const float *wet, __global uchar *touched, int nx, int nz, float x0, float z0,
                      float cell, float inv_cell, float r, float e, float mu, float mu_wet, float dt, int bisect,
                      float vfreeze2, uint nfreeze, float wet_band)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const terrain_t t = {nx, nz, x0, z0, cell, inv_cell};
    float3 x = (float3)(xs[3 * i], xs[3 * i + 1], xs[3 * i + 2]);
    float3 v = (float3)(vs[3 * i], vs[3 * i + 1], vs[3 * i + 2]);
    const float v2 = v.x * v.x + v.y * v.y + v.z * v.z;
    uint ri = rest[i];
    ri = v2 < vfreeze2 ? (ri < nfreeze ? ri + 1 : nfreeze) : 0;
    const float f = clearance(t, h, r, x);
    if (f >= 0.0f) {
        rest[i] = ri;
        if (ri >= nfreeze && vfreeze2 > 0.0f)
            return;
        if (f < wet_band)
            touched[sample_of(t, x.x, x.z)] = 1;
        return;
    }
    rest[i] = 0;
    const float3 x1 = x;
    const float3 x0p = (float3)(x1.x - v.x * dt, x1.y - v.y * dt, x1.z - v.z * dt);
    float gx, gz;
    if (clearance(t, h, r, x0p) < 0.0f) {
        x.y = height(t, h, x.x, x.z, &gx, &gz) + r;
        v = bounce(t, h, wet, e, mu, mu_wet, x, v);
    } else {
        float lo = 0.0f, hi = 1.0f;
        for (int k = 0; k < bisect; k++) {
            const float mid = 0.5f * (lo + hi);
            const float3 p = (float3)(x0p.x + mid * (x1.x - x0p.x), x0p.y + mid * (x1.y - x0p.y),
                                      x0p.z + mid * (x1.z - x0p.z));
            if (clearance(t, h, r, p) >= 0.0f)
                lo = mid;
            else
                hi = mid;
        }
        const float3 xc = (float3)(x0p.x + lo * (x1.x - x0p.x), x0p.y + lo * (x1.y - x0p.y),
                                   x0p.z + lo * (x1.z - x0p.z));
        v = bounce(t, h, wet, e, mu, mu_wet, xc, v);
        const float restt = (1.0f - lo) * dt;
        x = (float3)(xc.x + restt * v.x, xc.y + restt * v.y, xc.z + restt * v.z);
        if (clearance(t, h, r, x) < 0.0f)
            x = xc;
        if (clearance(t, h, r, x) < 0.0f)
            x.y = height(t, h, x.x, x.z, &gx, &gz) + r;
    }
    touched[sample_of(t, x.x, x.z)] = 1;
    xs[3 * i] = x.x, xs[3 * i + 1] = x.y, xs[3 * i + 2] = x.z;
    vs[3 * i] = v.x, vs[3 * i + 1] = v.y, vs[3 * i + 2] = v.z;
}

__kernel void wet(uint n, __global float *wet, __global uchar *touched, float up, float down)
{
    const uint k = get_global_id(0);
    if (k >= n)
        return;
    wet[k] = touched[k] ? fmin(1.0f, wet[k] + up) : wet[k] * down;
    touched[k] = 0;
}
