/* The carpet on the device (modules/terrain/carpet_cl.c): Kipfer &
 * Westermann's GPU construction, particles splatted as depth sprites into a
 * z-image. One work item per particle writes, for every carpet vertex within
 * the cover radius R (horizontally), the particle's top y + r into the
 * vertex's z-image entry with an atomic max (floats mapped to ordered
 * unsigned ints), so the image holds the highest top within R, the value the
 * quadtree traversal of the C path finds. A second pass adds the weights
 * and weighted horizontal velocities of the surface layer (tops within R of
 * that height). Arithmetic operation by operation as carpet.c's. */

#pragma OPENCL FP_CONTRACT OFF

/* float -> unsigned int, order-preserving (0 stays below every float) */
static uint ordered(float f)
{
    uint u = as_uint(f);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

static float unordered(uint u)
{
    return as_float((u & 0x80000000u) ? (u & 0x7fffffffu) : ~u);
}

static void atomic_addf(volatile __global float *p, float v)
{
    union { uint u; float f; } old, next;
    do {
        old.f = *p;
        next.f = old.f + v;
    } while (atomic_cmpxchg((volatile __global uint *)p, old.u, next.u) != old.u);
}

/* the vertices (i, j) within R of particle (px, pz): a box, tested exactly */
#define VERTEX_BOX                                                              \
    const float px = x[3 * gid], pz = x[3 * gid + 2];                           \
    int i0 = (int)floor((px - R - x0) / cs), i1 = (int)ceil((px + R - x0) / cs); \
    int j0 = (int)floor((pz - R - z0) / cs), j1 = (int)ceil((pz + R - z0) / cs); \
    i0 = max(i0, 0), i1 = min(i1, nx - 1), j0 = max(j0, 0), j1 = min(j1, nz - 1)

__kernel void splat(uint n, __global const float *x, __global uint *zimg, float r, float R, float x0, float z0,
                    float cs, int nx, int nz)
{
    const uint gid = get_global_id(0);
    if (gid >= n)
        return;
    VERTEX_BOX;
    const float top = x[3 * gid + 1] + r;
    const float R2 = R * R;
    const uint key = ordered(top);
    for (int j = j0; j <= j1; j++)
        for (int i = i0; i <= i1; i++) {
            const float X = x0 + (float)i * cs, Z = z0 + (float)j * cs;
            const float ex = px - X, ez = pz - Z;
            if (ex * ex + ez * ez < R2)
                atomic_max(&zimg[i + nx * j], key);
        }
}

/* buf: the z-image (nv words), then the sums (3 floats per vertex) */
__kernel void flow(uint n, __global const float *x, __global const float *v, __global uint *buf, uint nv,
                   float r, float R, float x0, float z0, float cs, int nx, int nz)
{
    const uint gid = get_global_id(0);
    if (gid >= n)
        return;
    __global const uint *zimg = buf;
    __global float *acc = (__global float *)(buf + nv);
    VERTEX_BOX;
    const float top = x[3 * gid + 1] + r;
    const float R2 = R * R;
    for (int j = j0; j <= j1; j++)
        for (int i = i0; i <= i1; i++) {
            const float X = x0 + (float)i * cs, Z = z0 + (float)j * cs;
            const float ex = px - X, ez = pz - Z, d2 = ex * ex + ez * ez;
            const int k = i + nx * j;
            if (d2 >= R2 || zimg[k] == 0u || top < unordered(zimg[k]) - R)
                continue;
            const float w = 1.0f - d2 / R2;
            atomic_addf(&acc[3 * k], w);
            atomic_addf(&acc[3 * k + 1], w * v[3 * gid]);
            atomic_addf(&acc[3 * k + 2], w * v[3 * gid + 2]);
        }
}
