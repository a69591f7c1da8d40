/* Floe: anisotropic kernels from the neighbourhood of a particle, header-only.
 *
 * Yu & Turk 2013 ("Reconstructing surfaces of particle-based fluids using
 * anisotropic kernels"), as Kim 2020 sec. 3.3.1 (eqs. 41-42) uses them:
 *
 *   w_ij  = 1 - (|x_i - x_j| / r)^3  for |x_i - x_j| < r, else 0
 *   x^w_i = sum_j w_ij x_j / sum_j w_ij                  (weighted mean)
 *   C_i   = sum_j w_ij (x_j - x^w_i)(x_j - x^w_i)^T / sum_j w_ij
 *   C_i   = R diag(s1, s2, s3) R^T,  s1 >= s2 >= s3     (eigen-decomposition)
 *   S~    = diag(s1, max(s2, s1 / kr), max(s3, s1 / kr)) (clamped stretch)
 *   G_i   = (1 / H) R S~^-1 R^T                           (kernel matrix)
 *
 * and the kernel W(x - x_i, G_i) = det(G_i) P(|G_i (x - x_i)|), P the
 * isotropic kernel of unit support. One choice differs from the paper: S~
 * is divided by the cube root of its determinant, so det(G_i) = 1 / H^3: the kernel keeps
 * its volume and only changes shape. The colour field sum_j V_j W then
 * integrates to the particle volume whatever the stretch (the paper's k_s
 * and k_n constants do this approximately and depend on the spacing).
 * Particles with fewer than n_min neighbours keep the isotropic kernel.
 *
 * The same decomposition gives a neighbourhood's principal directions
 * (floe_sym3_eigen), e.g. a crystal's growth direction. Symmetric 3x3
 * matrices are stored as {xx, xy, xz, yy, yz, zz}. */
#ifndef FLOE_ANISOTROPY_H
#define FLOE_ANISOTROPY_H

#include <math.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The neighbour weight of Yu & Turk (eq. 41's w_ij) at distance^2 r2 with
 * neighbourhood radius r (inv_r = 1 / r). */
static inline double floe_aniso_weight(double r2, double inv_r)
{
    double q = sqrt(r2) * inv_r;
    return q < 1.0 ? 1.0 - q * q * q : 0.0;
}

/* Eigen-decomposition of a symmetric 3x3 matrix by cyclic Jacobi rotations:
 * eval[0] >= eval[1] >= eval[2], evec[k] the unit eigenvector of eval[k]
 * (the columns of R, stored as rows). Converges to machine precision in a
 * few sweeps; exact for diagonal input. The text is <floe/sym3_eigen.h>,
 * which the kernels instantiate in float.
 *   void floe_sym3_eigen(const double m[6], double eval[3], double evec[3][3]) */
#define FLOE_SYM3_T double
#define FLOE_SYM3_NAME floe_sym3_eigen
#define FLOE_SYM3_SWEEPS 32
#define FLOE_SYM3_TOL 1e-30
#include <floe/sym3_eigen.h>

typedef struct floe_aniso_def {
    double H;        /* support radius of the isotropic kernel */
    double kr;       /* largest ratio of the principal axes (Yu & Turk k_r, 4) */
    int n_min;       /* fewer neighbours: isotropic kernel (Yu & Turk N_eps, 25) */
} floe_aniso_def;

/* The kernel matrix G (row-major 3x3, symmetric) of a particle from the
 * weighted covariance cov of its n neighbours; returns the longest semi-axis
 * of the kernel's support ellipsoid |G x| <= 1, in units of H (1 for the
 * isotropic kernel, at most kr^(2/3)). */
static inline double floe_aniso_matrix(const floe_aniso_def *d, const double cov[6], int n, double G[9])
{
    double ev[3], R[3][3];
    floe_sym3_eigen(cov, ev, R);
    if (n < d->n_min || !(ev[0] > 0) || !isfinite(ev[0])) {
        for (int k = 0; k < 9; k++)
            G[k] = k % 4 == 0 ? 1.0 / d->H : 0.0;
        return 1.0;
    }
    double s[3] = {ev[0], fmax(ev[1], ev[0] / d->kr), fmax(ev[2], ev[0] / d->kr)};
    double ax[3], norm = cbrt(s[0] * s[1] * s[2]);
    for (int k = 0; k < 3; k++)
        ax[k] = s[k] / norm; /* semi-axes in units of H, product 1 */
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) {
            double g = 0;
            for (int k = 0; k < 3; k++)
                g += R[k][r] * R[k][c] / ax[k];
            G[3 * r + c] = g / d->H;
        }
    return ax[0];
}

#ifdef __cplusplus
}
#endif
#endif
