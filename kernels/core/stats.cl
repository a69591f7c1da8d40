/* Per-frame statistics of a fluid set on the device (core/src/run.c's
 * frame_stats, core/src/opencl/frame_stats.c): each work group of STATS_WG
 * particles sums the kinetic energy 1/2 m |v|^2, the potential energy
 * m (-g . (x - lo)) and the positive density error max(rho / rho0 - 1, 0),
 * and keeps the largest error; the host adds the groups' sums in double.
 * So a frame's record needs 16 bytes per group back, not every attribute
 * of every particle. */

#define STATS_WG 256

__kernel __attribute__((reqd_work_group_size(STATS_WG, 1, 1)))
void frame_sums(uint n, __global const float *x, __global const float *v, __global const float *m,
                __global const float *rho, float4 g, float4 lo, float rho0, __global float *out)
{
    __local float s[4][STATS_WG];
    const uint i = get_global_id(0), l = get_local_id(0);
    float ke = 0.0f, pe = 0.0f, e = 0.0f;
    if (i < n) {
        const float vx = v[3 * i], vy = v[3 * i + 1], vz = v[3 * i + 2];
        const float h = -(g.x * (x[3 * i] - lo.x) + g.y * (x[3 * i + 1] - lo.y) + g.z * (x[3 * i + 2] - lo.z));
        ke = 0.5f * m[i] * (vx * vx + vy * vy + vz * vz);
        pe = m[i] * h;
        e = fmax(rho[i] / rho0 - 1.0f, 0.0f);
    }
    s[0][l] = ke;
    s[1][l] = pe;
    s[2][l] = e;
    s[3][l] = e;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint w = STATS_WG / 2; w > 0; w >>= 1) {
        if (l < w) {
            s[0][l] += s[0][l + w];
            s[1][l] += s[1][l + w];
            s[2][l] += s[2][l + w];
            s[3][l] = fmax(s[3][l], s[3][l + w]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0)
        for (int k = 0; k < 4; k++)
            out[4 * get_group_id(0) + k] = s[k][0];
}
