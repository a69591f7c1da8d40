/* Floe: SPH smoothing kernels, header-only so modules need no core symbol.
 *
 * Cubic spline (Monaghan 1992) written with the support radius H (W = 0 for
 * r >= H), as in SPlisHSPlasH: q = r / H,
 *   W(q) = s * (6 (q^3 - q^2) + 1)   for q <= 1/2
 *   W(q) = s * 2 (1 - q)^3           for 1/2 < q <= 1
 * with s = 8 / (pi H^3) in 3D and s = 40 / (7 pi H^2) in 2D, so that the
 * integral of W over the plane/space is 1 (tested in tests/test_kernel.c). */
#ifndef FLOE_KERNEL_H
#define FLOE_KERNEL_H

#include <math.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FLOE_PI 3.14159265358979323846

typedef struct floe_kernel {
    float H;      /* support radius */
    float inv_H;
    float sigma;  /* normalisation */
    int dim;
} floe_kernel;

static inline floe_kernel floe_kernel_make(int dim, float H)
{
    floe_kernel k;
    k.H = H;
    k.inv_H = 1.0f / H;
    k.dim = dim;
    if (dim == 2)
        k.sigma = (float)(40.0 / (7.0 * FLOE_PI * (double)H * H));
    else
        k.sigma = (float)(8.0 / (FLOE_PI * (double)H * H * H));
    return k;
}

/* W(r) for a distance r >= 0. */
static inline float floe_kernel_w(const floe_kernel *k, float r)
{
    float q = r * k->inv_H;
    if (q <= 0.5f)
        return k->sigma * (6.0f * (q * q * q - q * q) + 1.0f);
    if (q <= 1.0f) {
        float t = 1.0f - q;
        return k->sigma * 2.0f * t * t * t;
    }
    return 0.0f;
}

/* dW/dr divided by r, so that grad W(x_ij) = floe_kernel_dw_r(k, r) * x_ij.
 * Returns 0 at r = 0 (the gradient there is zero by symmetry). */
static inline float floe_kernel_dw_r(const floe_kernel *k, float r)
{
    if (r <= 1e-9f * k->H)
        return 0.0f;
    float q = r * k->inv_H;
    float dwdq;
    if (q <= 0.5f)
        dwdq = 6.0f * (3.0f * q * q - 2.0f * q);
    else if (q <= 1.0f) {
        float t = 1.0f - q;
        dwdq = -6.0f * t * t;
    } else
        return 0.0f;
    return k->sigma * dwdq * k->inv_H / r;
}

/* grad W at the vector x_ij = x_i - x_j (3 components; z = 0 in 2D). */
static inline void floe_kernel_grad(const floe_kernel *k, const float xij[3], float out[3])
{
    float r = sqrtf(xij[0] * xij[0] + xij[1] * xij[1] + xij[2] * xij[2]);
    float f = floe_kernel_dw_r(k, r);
    out[0] = f * xij[0];
    out[1] = f * xij[1];
    out[2] = f * xij[2];
}

/* Branch-free forms for the vectorised neighbour loops of the modules (one
 * definition for wcsph, iisph, viscosity and tension; kernels/core/sph.h is
 * the same for OpenCL). max(a, 0) = (a + |a|) / 2 is exact in floating point
 * and, unlike fmaxf, no library call a loop cannot vectorise through. */
static inline float floe_pos(float a) { return 0.5f * (a + fabsf(a)); } /* max(a, 0) */
static inline float floe_neg(float a) { return 0.5f * (a - fabsf(a)); } /* min(a, 0) */

/* W / sigma at the squared distance r2 (inv_H = 1 / H) */
static inline float floe_w_hat(float inv_H, float r2)
{
    const float q = sqrtf(r2) * inv_H;
    const float a = floe_pos(1.0f - q), b = floe_pos(0.5f - q);
    return 2.0f * a * a * a - 8.0f * b * b * b;
}

/* (dW/dr) / r at the squared distance r2, so grad W_ij = floe_dw_r_hat * x_ij;
 * g = sigma / H, r_min2 = (1e-6 H)^2 keeps it finite for coincident
 * particles (there x_ij = 0, so the gradient is 0) */
static inline float floe_dw_r_hat(float g, float inv_H, float r_min2, float r2)
{
    const float r = sqrtf(r2 + r_min2);
    const float q = r * inv_H;
    const float a = floe_pos(1.0f - q), b = floe_pos(0.5f - q);
    return g * (24.0f * b * b - 6.0f * a * a) / r;
}

#ifdef __cplusplus
}
#endif
#endif
