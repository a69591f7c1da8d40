/* The freezing module's OpenCL path (modules/freeze/freeze_cl.c): Kim 2020
 * eqs. 25-32 as in the C path (film.c, phase.c), written per fluid
 * particle over the core's fluid -> boundary neighbour lists. The sums over
 * a solid or ice particle's fluid neighbours (the film, the growth
 * direction) are scattered with atomic float additions, so their order,
 * and the last bits, vary from run to run. */
#include "core/sph.h"

/* Per fluid particle j: fw[20 j ..] = G (9), best energy against solids and
 * ice (2), the frost positions they came from (6), the growth direction
 * (3); fi[2 j] = near frost, fi[2 j + 1] = what it froze to (0 nothing, 1
 * glaze, 2 icicle). Per frost particle i of the set in hand: acc[4 i ..] =
 * sum v W_A (3), then sum W_A, or eq. 25's sum in acc[4 i + 3]. (Few named
 * device buffers: the core holds 32 for all modules.) */
#define FW 20

/* x += v on a global float (compare-and-swap on its bits) */
inline void add_f(volatile __global float *x, float v)
{
    union { uint u; float f; } o, n;
    do {
        o.f = *x;
        n.f = o.f + v;
    } while (atomic_cmpxchg((volatile __global uint *)x, o.u, n.u) != o.u);
}

/* W (the cubic spline) at distance^2 r2: sigma * W_hat */
inline float w_of(float4 kc, float r2) { return kc.w * floe_w_hat(kc, r2); }

/* W_A(r, G) = det(G) P(|G r|), P the spline of unit support (sigma1 its
 * normalisation: 8 / pi in 3D) */
inline float w_a(__global const float *G, float3 r, float sigma1)
{
    float3 g = (float3)(G[0] * r.x + G[1] * r.y + G[2] * r.z, G[3] * r.x + G[4] * r.y + G[5] * r.z,
                        G[6] * r.x + G[7] * r.y + G[8] * r.z);
    float q = sqrt(dot(g, g));
    float a = floe_pos(1.0f - q), b = floe_pos(0.5f - q);
    float det = G[0] * (G[4] * G[8] - G[5] * G[7]) - G[1] * (G[3] * G[8] - G[5] * G[6]) +
                G[2] * (G[3] * G[7] - G[4] * G[6]);
    return fabs(det) * sigma1 * (2.0f * a * a * a - 8.0f * b * b * b);
}

/* eq. 25's sum: s_i += m_j W(x_i - x_j) over the fluid particle j's list in
 * one boundary set; near_j |= the list is not empty */
__kernel void film_scatter(uint n, __global const float *xf, __global const float *mf, __global const uint *cnt,
                           __global const uint *idx, uint pitch, __global const float *xb,
                           volatile __global float *acc, __global int *fi, float4 kc)
{
    uint j = get_global_id(0);
    if (j >= n)
        return;
    float3 xj = floe_load3(xf, j);
    uint c = cnt[j];
    if (c)
        fi[2 * j] = 1;
    for (uint k = 0; k < c; k++) {
        uint i = idx[k * pitch + j];
        float3 d = floe_load3(xb, i) - xj;
        float r2 = dot(d, d);
        if (r2 < 1.0f / (kc.x * kc.x))
            add_f(&acc[4 * i + 3], mf[j] * w_of(kc, r2));
    }
}

/* eq. 25: Gamma_i += alpha dt eta V_i s_i, capped at Gamma_max */
__kernel void film_update(uint n, __global const float *acc, __global const float *V, __global float *gam,
                          float a_dt, float gmax)
{
    uint i = get_global_id(0);
    const float sum = i < n ? acc[4 * i + 3] : 0.0f;
    if (i >= n || !(sum > 0.0f) || !(gmax > 0.0f))
        return;
    float g = gam[i];
    g += a_dt * (1.0f - g / gmax) * V[i] * sum;
    gam[i] = fmin(fmax(g, 0.0f), gmax);
}

/* eigen-decomposition of a symmetric 3x3 by cyclic Jacobi, the text of
 * <floe/anisotropy.h>'s floe_sym3_eigen in float: ev descending, R[k] the
 * eigenvector of ev[k] */
#define FLOE_SYM3_T float
#define FLOE_SYM3_NAME sym3_eigen
#define FLOE_SYM3_SWEEPS 16
#define FLOE_SYM3_TOL 1e-14f
#include "floe/sym3_eigen.h"

/* eqs. 28-30: the kernel matrix G_j of a fluid particle near frost from its
 * fluid neighbours' weighted covariance (floe_aniso_matrix); I / H elsewhere */
__kernel void kernels_G(uint n, __global const float *xf, __global const uint *cnt, __global const uint *idx,
                        uint pitch, __global const int *fi, __global float *fw, float4 kc, float kr, int n_min,
                        int aniso)
{
    uint j = get_global_id(0);
    if (j >= n)
        return;
    __global float *g = fw + FW * (size_t)j;
    const float H = 1.0f / kc.x;
    for (int a = 0; a < 9; a++)
        g[a] = a % 4 == 0 ? kc.x : 0.0f;
    g[9] = g[10] = 0.0f; /* the energies of freeze.transition */
    if (!aniso || !fi[2 * j])
        return;
    float3 xj = floe_load3(xf, j);
    float c[6] = {0, 0, 0, 0, 0, 0}, ws = 0;
    uint m = cnt[j];
    for (uint k = 0; k < m; k++) {
        float3 d = floe_load3(xf, idx[k * pitch + j]) - xj;
        float r2 = dot(d, d);
        if (r2 >= H * H)
            continue;
        float w = w_of(kc, r2);
        ws += w;
        c[0] += w * d.x * d.x;
        c[1] += w * d.x * d.y;
        c[2] += w * d.x * d.z;
        c[3] += w * d.y * d.y;
        c[4] += w * d.y * d.z;
        c[5] += w * d.z * d.z;
    }
    if (!(ws > 0.0f))
        return;
    for (int a = 0; a < 6; a++)
        c[a] /= ws;
    float ev[3], R[3][3];
    sym3_eigen(c, ev, R);
    if ((int)m < n_min || !(ev[0] > 0.0f) || !isfinite(ev[0]))
        return;
    float s[3] = {ev[0], fmax(ev[1], ev[0] / kr), fmax(ev[2], ev[0] / kr)};
    float norm = cbrt(s[0] * s[1] * s[2]);
    for (int r = 0; r < 3; r++)
        for (int q = 0; q < 3; q++) {
            float acc = 0.0f;
            for (int k = 0; k < 3; k++)
                acc += R[k][r] * R[k][q] / (s[k] / norm);
            g[3 * r + q] = acc * kc.x;
        }
}

/* eq. 26's sums: acc_i += (v_j W_A, W_A) over the fluid particle j's list */
__kernel void gv_scatter(uint n, __global const float *xf, __global const float *vf, __global const float *fw,
                         __global const uint *cnt, __global const uint *idx, uint pitch, __global const float *xb,
                         volatile __global float *acc, float4 kc, float sigma1)
{
    uint j = get_global_id(0);
    if (j >= n)
        return;
    float3 xj = floe_load3(xf, j), vj = floe_load3(vf, j);
    uint c = cnt[j];
    for (uint k = 0; k < c; k++) {
        uint i = idx[k * pitch + j];
        float3 r = floe_load3(xb, i) - xj;
        if (dot(r, r) >= 1.0f / (kc.x * kc.x))
            continue;
        float w = w_a(fw + FW * (size_t)j, r, sigma1);
        if (w == 0.0f)
            continue;
        add_f(&acc[4 * i], w * vj.x);
        add_f(&acc[4 * i + 1], w * vj.y);
        add_f(&acc[4 * i + 2], w * vj.z);
        add_f(&acc[4 * i + 3], w);
    }
}

/* eq. 26: gv_i = sum v_j W_A / sum W_A (m/s) */
__kernel void gv_finish(uint n, __global const float *acc, __global float *gv)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    float ws = acc[4 * i + 3];
    for (int a = 0; a < 3; a++)
        gv[3 * i + a] = ws > 0.0f ? acc[4 * i + a] / ws : 0.0f;
}

/* eqs. 31-32 over one boundary set: best[2 j + t] and arg the largest energy
 * against solids (t = 0) or ice (t = 1), arg the frost particle's position */
__kernel void energy(uint n, __global const float *xf, __global float *fw, __global const int *fi,
                     __global const uint *cnt, __global const uint *idx, uint pitch, __global const float *xb,
                     __global const float *gam, __global const float *gv, int t, int mode, float vmin, float4 kc,
                     float sigma1)
{
    uint j = get_global_id(0);
    if (j >= n || !fi[2 * j])
        return;
    __global float *w = fw + FW * (size_t)j;
    float3 xj = floe_load3(xf, j);
    float b = w[9 + t];
    uint c = cnt[j];
    for (uint k = 0; k < c; k++) {
        uint i = idx[k * pitch + j];
        float3 xi = floe_load3(xb, i), r = xi - xj;
        float len = sqrt(dot(r, r));
        if (len >= 1.0f / kc.x)
            continue;
        float3 u = len > 0.0f ? -r / len : (float3)(0.0f);
        float3 g = floe_load3(gv, i);
        float gl = sqrt(dot(g, g));
        float3 gh = gl > 0.0f && gl >= vmin ? g / gl : (float3)(0.0f);
        float d = dot(gh, u);
        float fr = mode == 2 ? 1.0f : mode == 0 ? 0.5f * (d + 1.0f) : fmax(d, 0.0f);
        float ce = gam[i] * fr * w_a(w, r, sigma1);
        if (ce > b) {
            b = ce;
            w[11 + 3 * t] = xi.x;
            w[12 + 3 * t] = xi.y;
            w[13 + 3 * t] = xi.z;
        }
    }
    w[9 + t] = b;
}

/* the decision: freeze[j], kind, dir; count += frozen */
__kernel void decide(uint n, __global const float *xf, __global float *fw, float gz, float ic, __global int *fi,
                     volatile __global uint *count)
{
    uint j = get_global_id(0);
    if (j >= n)
        return;
    __global float *w = fw + FW * (size_t)j;
    float b0 = w[9], b1 = w[10];
    float xs = gz > 0.0f ? b0 / gz : (b0 > 0.0f ? INFINITY : 0.0f);
    float xc = ic > 0.0f ? b1 / ic : (b1 > 0.0f ? INFINITY : 0.0f);
    int t = -1;
    if (b0 > gz && (b1 <= ic || xs >= xc))
        t = 0;
    else if (b1 > ic)
        t = 1;
    fi[2 * j + 1] = t < 0 ? 0 : t + 1;
    if (t < 0)
        return;
    float3 d = floe_load3(xf, j) - (float3)(w[11 + 3 * t], w[12 + 3 * t], w[13 + 3 * t]);
    float l = sqrt(dot(d, d));
    d = l > 0.0f ? d / l : (float3)(0.0f);
    w[17] = d.x;
    w[18] = d.y;
    w[19] = d.z;
    atomic_inc(count);
}

/* The ice grows on the device (freeze_cl.c, ABI 1.10): the freezing flags
 * as words to scan (rank) and the keep flags of the fluid's compaction */
__kernel void move_flags(uint n, __global const int *fi, __global uint *rank, __global uint *keep)
{
    uint j = get_global_id(0);
    if (j >= n)
        return;
    uint f = fi[2 * j + 1] != 0;
    rank[j] = f;
    keep[j] = 1u - f;
}

/* a frozen fluid particle j appended as ice row base + rank[j] (rank: the
 * exclusive scan of the flags, so in fluid index order as on the host):
 * position, mass, id; its own volume m / rho0; a full film (Gamma = m,
 * where the ice carries Gamma); the growth direction, kind and time */
__kernel void ice_append(uint n, __global const int *fi, __global const uint *rank, __global const float *fw,
                         __global const float *xf, __global const float *mf, __global const uint *idf,
                         float inv_rho0, float now, uint base, __global float *xi, __global float *mi,
                         __global uint *idi, __global float *Vi, __global float *gi, int has_g, __global float *di,
                         __global int *ki, __global float *ti)
{
    uint j = get_global_id(0);
    if (j >= n || fi[2 * j + 1] == 0)
        return;
    uint w = base + rank[j];
    for (int a = 0; a < 3; a++) {
        xi[3 * w + a] = xf[3 * j + a];
        di[3 * w + a] = fw[FW * (size_t)j + 17 + a];
    }
    float m = mf[j];
    mi[w] = m;
    idi[w] = idf[j];
    Vi[w] = m * inv_rho0;
    if (has_g)
        gi[w] = m;
    ki[w] = fi[2 * j + 1];
    ti[w] = now;
}

/* freeze.carry (carry_cl.c). One buffer w: per body the count and sums of
 * r0 and x (7 floats from w[0]), the means of r0 and x (6 from mo), the
 * sums S = (r0 - r0m)(r0 - r0m)^T and M = (x - xm)(r0 - r0m)^T (18 from so),
 * and the poses c, R (row-major; 12 a body) of the last call (from po) and
 * this one's (from pn). */
__kernel void carry_sums(uint n, __global const float *x, __global const float *r0, __global const uint *body,
                         volatile __global float *w)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    volatile __global float *a = w + 7 * (size_t)body[i];
    add_f(a, 1.0f);
    for (int k = 0; k < 3; k++) {
        add_f(a + 1 + k, r0[3 * i + k]);
        add_f(a + 4 + k, x[3 * i + k]);
    }
}

__kernel void carry_moments(uint n, __global const float *x, __global const float *r0, __global const uint *body,
                            volatile __global float *w, uint mo, uint so)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    __global const float *m = w + mo + 6 * (size_t)body[i];
    volatile __global float *a = w + so + 18 * (size_t)body[i];
    float q[3], y[3];
    for (int k = 0; k < 3; k++)
        q[k] = r0[3 * i + k] - m[k], y[k] = x[3 * i + k] - m[3 + k];
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) {
            add_f(a + 3 * r + c, q[r] * q[c]);
            add_f(a + 9 + 3 * r + c, y[r] * q[c]);
        }
}

inline float3 carry_map(__global const float *P, float3 q)
{
    return (float3)(P[0] + P[3] * q.x + P[4] * q.y + P[5] * q.z, P[1] + P[6] * q.x + P[7] * q.y + P[8] * q.z,
                    P[2] + P[9] * q.x + P[10] * q.y + P[11] * q.z);
}

/* a new ice particle (kb 0) attached to what is nearest within H at the
 * last call's poses: a body particle, or ice attached before (kb_old) */
__kernel void carry_attach(uint ni, __global const float *xi, __global const int *kb_old, __global int *kb,
                           __global float *ri, uint nbp, __global const float *r0, __global const uint *body,
                           __global const float *w, uint po, float H)
{
    uint i = get_global_id(0);
    if (i >= ni || kb_old[i] != 0)
        return;
    float3 p = floe_load3(xi, i);
    float best = H * H;
    int k = -1;
    for (uint j = 0; j < nbp; j++) {
        float3 d = carry_map(w + po + 12 * (size_t)body[j], floe_load3(r0, j)) - p;
        float d2 = dot(d, d);
        if (d2 < best)
            best = d2, k = (int)body[j] + 1;
    }
    for (uint j = 0; j < ni; j++) {
        if (kb_old[j] == 0)
            continue;
        float3 d = floe_load3(xi, j) - p;
        float d2 = dot(d, d);
        if (d2 < best)
            best = d2, k = kb_old[j];
    }
    kb[i] = k > 0 ? k : -1;
    if (k <= 0)
        return;
    __global const float *P = w + po + 12 * (size_t)(k - 1);
    float3 d = p - (float3)(P[0], P[1], P[2]);
    ri[3 * i] = P[3] * d.x + P[6] * d.y + P[9] * d.z; /* R^T d */
    ri[3 * i + 1] = P[4] * d.x + P[7] * d.y + P[10] * d.z;
    ri[3 * i + 2] = P[5] * d.x + P[8] * d.y + P[11] * d.z;
}

/* attached ice at c + R r0 of this call's poses; v its displacement / dt */
__kernel void carry_place(uint ni, __global float *xi, __global float *vi, int has_v, __global const int *kb,
                          __global const float *ri, __global const float *w, uint pn, uint nb, float dt)
{
    uint i = get_global_id(0);
    if (i >= ni || kb[i] <= 0 || (uint)kb[i] > nb)
        return;
    float3 y = carry_map(w + pn + 12 * (size_t)(kb[i] - 1), floe_load3(ri, i));
    if (has_v) {
        float3 v = dt > 0.0f ? (y - floe_load3(xi, i)) / dt : (float3)(0.0f);
        vi[3 * i] = v.x, vi[3 * i + 1] = v.y, vi[3 * i + 2] = v.z;
    }
    xi[3 * i] = y.x, xi[3 * i + 1] = y.y, xi[3 * i + 2] = y.z;
}

__kernel void zero_f(uint n, __global float *a)
{
    uint i = get_global_id(0);
    if (i < n)
        a[i] = 0.0f;
}
