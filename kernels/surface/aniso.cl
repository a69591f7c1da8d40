/* The Yu & Turk kernels of modules/surface on the device (surface_cl.c):
 * one work item per particle, in the order of the host's cell sort (so a
 * group's neighbourhoods overlap). Operation by operation as field.c and
 * <floe/anisotropy.h> compute them on the host (the same lanes of 8
 * candidates summed in float and met in double in the same order, no
 * contraction), so the device's kernels are the host's up to the last
 * bit of cbrt.
 *
 *   aniso_shape:   smoothed centre, weighted covariance, its
 *                  eigen-decomposition (cyclic Jacobi), clamped stretch,
 *                  G and the support box, into the kernel records
 *   aniso_inflate: Taubin's second step on the smoothed centres
 *
 * A kernel record is 16 floats: c[3], G[9], V, support half-extents[3]. */

#pragma OPENCL FP_CONTRACT OFF
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

#define CELL_DIV 2
#define ROW_CELLS (2 * CELL_DIV + 1)
#define LANES 8
#define KEY_MASK 0x1fffffUL

typedef struct cells {
    __global const float *X, *Y, *Z;
    __global const ulong *ckey;   /* ncell keys, then ULONG_MAX */
    __global const uint *cell;    /* first entry of each cell, then n */
    uint ncell;
    double lo0, lo1, lo2, inv, h;
} cells;

static ulong cell_key(long cx, long cy, long cz)
{
    return (ulong)cx | (ulong)cy << 21 | (ulong)cz << 42;
}

/* first cell at or after a with key >= k: a gallop from the previous
 * row's cell (a row's keys come after the previous row's), then a
 * binary search (field.c's lower_bound_from); from a = 0, a binary
 * search of the whole list */
static uint lower_bound_from(__global const ulong *ckey, uint n, uint a, ulong k)
{
    uint step = 1, b = a;
    if (a == 0) /* the first row: the whole list */
        b = n;
    while (a > 0 && b < n && ckey[b] < k) {
        a = b + 1;
        b = a + step - 1 < n ? a + step - 1 : n;
        step *= 2;
    }
    while (a < b) {
        uint mid = a + (b - a) / 2;
        if (ckey[mid] < k)
            a = mid + 1;
        else
            b = mid;
    }
    return a;
}

static double axis_gap(double v, long c, double h)
{
    double a = (double)c * h, b = a + h;
    return v < a ? a - v : v > b ? v - b : 0.0;
}

/* field.c's neighbourhood(): the weighted mean and, when want_cov, the
 * covariance of the neighbourhood of entry e in cell key ck; the count */
static int neighbourhood(const cells *cs, uint e, ulong ck, double r, double mean[3], double cov[6], int want_cov)
{
    const float r2 = (float)(r * r), inv_r = (float)(1.0 / r);
    const float xi0 = cs->X[e], xi1 = cs->Y[e], xi2 = cs->Z[e];
    const double h = cs->h, rr = r * r * (1.0 + 1e-5);
    const long c0 = (long)(ck & KEY_MASK), c1 = (long)(ck >> 21 & KEY_MASK), c2 = (long)(ck >> 42);
    const double u0 = (double)xi0 - cs->lo0, u1 = (double)xi1 - cs->lo1, u2 = (double)xi2 - cs->lo2;
    float sw[LANES], s1[3][LANES], s2[6][LANES];
    int cnt[LANES];
    for (int l = 0; l < LANES; l++) {
        sw[l] = 0.0f;
        cnt[l] = 0;
        for (int k = 0; k < 3; k++)
            s1[k][l] = 0.0f;
        for (int k = 0; k < 6; k++)
            s2[k][l] = 0.0f;
    }
    uint from = 0;
    for (int dz = -CELL_DIV; dz <= CELL_DIV; dz++) {
        const double gz = axis_gap(u2, c2 + dz, h);
        for (int dy = -CELL_DIV; dy <= CELL_DIV; dy++) {
            const double gy = axis_gap(u1, c1 + dy, h), left = rr - gz * gz - gy * gy;
            if (left <= 0)
                continue;
            const double rx = sqrt(left) + 1e-6 * r;
            long x0 = (long)floor((u0 - rx) * cs->inv), x1 = (long)floor((u0 + rx) * cs->inv);
            x0 = x0 < c0 - CELL_DIV ? c0 - CELL_DIV : x0;
            x1 = x1 > c0 + CELL_DIV ? c0 + CELL_DIV : x1;
            /* the entries of x cells x0..x1 of the row: from the first cell
             * at or after x0 to the first at or after x1 + 1 */
            uint g = from = lower_bound_from(cs->ckey, cs->ncell, from, cell_key(x0, c1 + dy, c2 + dz));
            const uint f0 = cs->cell[g];
            const ulong kend = cell_key(x1 + 1, c1 + dy, c2 + dz);
            while (cs->ckey[g] < kend)
                g++;
            const uint f1 = cs->cell[g];
            for (uint f = f0; f < f1; f += LANES) {
                const int valid = (int)(f1 - f), self = (int)(e - f);
                for (int l = 0; l < LANES; l++) {
                    const float dx = cs->X[f + l] - xi0, dy_ = cs->Y[f + l] - xi1, dz_ = cs->Z[f + l] - xi2;
                    const float dd = dx * dx + dy_ * dy_ + dz_ * dz_;
                    const float q = sqrt(dd) * inv_r;
                    const int in = (dd < r2) & (l < valid);
                    const float w = in ? 1.0f - q * q * q : 0.0f;
                    cnt[l] += in & (l != self);
                    sw[l] += w;
                    s1[0][l] += w * dx, s1[1][l] += w * dy_, s1[2][l] += w * dz_;
                    if (want_cov) {
                        s2[0][l] += w * dx * dx, s2[1][l] += w * dx * dy_, s2[2][l] += w * dx * dz_;
                        s2[3][l] += w * dy_ * dy_, s2[4][l] += w * dy_ * dz_, s2[5][l] += w * dz_ * dz_;
                    }
                }
            }
        }
    }
    double W = 0, m1[3] = {0, 0, 0}, m2[6] = {0, 0, 0, 0, 0, 0};
    int count = 0;
    for (int l = 0; l < LANES; l++) {
        W += sw[l];
        count += cnt[l];
        for (int k = 0; k < 3; k++)
            m1[k] += s1[k][l];
        if (want_cov)
            for (int k = 0; k < 6; k++)
                m2[k] += s2[k][l];
    }
    const double m[3] = {m1[0] / W, m1[1] / W, m1[2] / W};
    mean[0] = xi0 + m[0], mean[1] = xi1 + m[1], mean[2] = xi2 + m[2];
    if (want_cov) {
        cov[0] = m2[0] / W - m[0] * m[0], cov[1] = m2[1] / W - m[0] * m[1], cov[2] = m2[2] / W - m[0] * m[2];
        cov[3] = m2[3] / W - m[1] * m[1], cov[4] = m2[4] / W - m[1] * m[2], cov[5] = m2[5] / W - m[2] * m[2];
    }
    return count;
}

/* <floe/anisotropy.h>'s floe_sym3_eigen and floe_aniso_matrix, the same
 * texts (<floe/sym3_eigen.h> in double, <floe/aniso_matrix.h>) */
#define FLOE_SYM3_T double
#define FLOE_SYM3_NAME floe_sym3_eigen
#define FLOE_SYM3_SWEEPS 32
#define FLOE_SYM3_TOL 1e-30
#include "floe/sym3_eigen.h"
#include "floe/aniso_matrix.h"

/* count[n]: the number of occupied cells; lo: the cells' corner (3 doubles) */
__kernel void aniso_shape(uint n, __global const float *X, __global const float *Y, __global const float *Z,
                          __global const ulong *ckey, __global const uint *cell, __global const uint *count,
                          __global const ulong *key, __global const uint *idx, __global float *kern,
                          __global const double *lo, double inv, double h, double r, float lambda,
                          double H, double kr, int n_min, __global uint *stretched, __global const float *V)
{
    const uint e = get_global_id(0);
    if (e >= n)
        return;
    const cells cs = {X, Y, Z, ckey, cell, count[n], lo[0], lo[1], lo[2], inv, h};
    double mean[3], cov[6], G[9];
    const int cnt = neighbourhood(&cs, e, key[e], r, mean, cov, 1);
    __global float *k = kern + 16 * (size_t)idx[e];
    const float x[3] = {X[e], Y[e], Z[e]};
    for (int d = 0; d < 3; d++)
        k[d] = (float)((1.0 - lambda) * x[d] + lambda * mean[d]);
    k[12] = V[idx[e]];
    const floe_aniso_def ad = {H, kr, n_min};
    const double ax = floe_aniso_matrix(&ad, cov, cnt, G);
    if (ax > 1.0 + 1e-6)
        atomic_inc(stretched);
    float g[9];
    for (int d = 0; d < 9; d++)
        k[3 + d] = g[d] = (float)G[d];
    /* field.c support_box: the norms of the rows of G^-1 */
    double a[9] = {g[4] * g[8] - g[5] * g[7], g[2] * g[7] - g[1] * g[8], g[1] * g[5] - g[2] * g[4],
                   g[5] * g[6] - g[3] * g[8], g[0] * g[8] - g[2] * g[6], g[2] * g[3] - g[0] * g[5],
                   g[3] * g[7] - g[4] * g[6], g[1] * g[6] - g[0] * g[7], g[0] * g[4] - g[1] * g[3]};
    double det = g[0] * a[0] + g[1] * a[3] + g[2] * a[6];
    for (int q = 0; q < 3; q++)
        k[13 + q] = (float)(sqrt(a[3 * q] * a[3 * q] + a[3 * q + 1] * a[3 * q + 1] + a[3 * q + 2] * a[3 * q + 2]) /
                            fabs(det));
}

/* the positions X, Y, Z are the smoothed centres here, sorted again */
__kernel void aniso_inflate(uint n, __global const float *X, __global const float *Y, __global const float *Z,
                            __global const ulong *ckey, __global const uint *cell, __global const uint *count,
                            __global const ulong *key, __global const uint *idx, __global float *kern,
                            __global const double *lo, double inv, double h, double r, double mu)
{
    const uint e = get_global_id(0);
    if (e >= n)
        return;
    const cells cs = {X, Y, Z, ckey, cell, count[n], lo[0], lo[1], lo[2], inv, h};
    double mean[3], cov[6];
    neighbourhood(&cs, e, key[e], r, mean, cov, 0);
    __global float *k = kern + 16 * (size_t)idx[e];
    const float c[3] = {X[e], Y[e], Z[e]};
    for (int d = 0; d < 3; d++)
        k[d] = (float)(c[d] + mu * (mean[d] - c[d]));
}
