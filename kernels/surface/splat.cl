/* The colour field splat of modules/surface on the device (grid_cl.c):
 * one work item per grid point, summing the kernels listed for its
 * sub-block of 4^3 points (range/list, in kernel order; kernels/surface/
 * grid.cl makes the lists). field.c sums a block's list on the host, in
 * the same order: the kernels a sub-block's list leaves out add nothing
 * to its points (their support boxes miss them), so the sums are the
 * host's bit for bit:
 *   phi(x) += V det(G) 8/pi P(|G (x - c)|),  P the cubic spline of support 1.
 * A kernel record is 16 floats: c[3], G[9], V, support half-extents[3]. */

#pragma OPENCL FP_CONTRACT OFF

#define SPLINE_SIGMA 2.54647908947f /* 8 / pi */

static float spline_unit(float q)
{
    if (q <= 0.5f)
        return 6.0f * (q * q * q - q * q) + 1.0f;
    float t = 1.0f - q;
    return q < 1.0f ? 2.0f * t * t * t : 0.0f;
}

__kernel void splat(uint npts, __global const float *kern, __global const uint *range, __global const uint *list,
                    __global const int *coord, __global float *val, float lo0, float lo1, float lo2, float cell)
{
    const uint gid = get_global_id(0);
    if (gid >= npts)
        return;
    /* 64 consecutive work items take one sub-block (4^3 points): they share
     * its list */
    const uint b = gid >> 9, sub = (gid >> 6) & 7u, q = gid & 63u;
    const uint lx = (sub & 1u) * 4 + (q & 3u), ly = (sub >> 1 & 1u) * 4 + (q >> 2 & 3u), lz = (sub >> 2) * 4 + (q >> 4);
    /* operation by operation as splat_block in modules/surface/field.c */
    const float px = lo0 + (float)(coord[3 * b] * 8 + (int)lx) * cell;
    const float py = lo1 + (float)(coord[3 * b + 1] * 8 + (int)ly) * cell;
    const float pz = lo2 + (float)(coord[3 * b + 2] * 8 + (int)lz) * cell;
    const uint e0 = range[2 * (8 * b + sub)], e1 = range[2 * (8 * b + sub) + 1];
    float sum = 0.0f;
    for (uint e = e0; e < e1; e++) {
        __global const float *k = kern + 16 * (size_t)list[e];
        const float dx = px - k[0], dy = py - k[1], dz = pz - k[2];
        const float a = k[3] * dx + k[4] * dy + k[5] * dz;
        const float c = k[6] * dx + k[7] * dy + k[8] * dz;
        const float d = k[9] * dx + k[10] * dy + k[11] * dz;
        const float q2 = a * a + c * c + d * d;
        if (q2 < 1.0f) {
            const float det = k[3] * (k[7] * k[11] - k[8] * k[10]) - k[4] * (k[6] * k[11] - k[8] * k[9]) +
                              k[5] * (k[6] * k[10] - k[7] * k[9]);
            const float amp = k[12] * fabs(det) * SPLINE_SIGMA;
            sum += amp * spline_unit(sqrt(q2));
        }
    }
    val[(size_t)b * 512 + lx + 8 * ly + 64 * lz] = sum;
}
