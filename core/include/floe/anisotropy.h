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

/* floe_aniso_def and floe_aniso_matrix: one text for C and OpenCL C
 * (kernels/surface/aniso.cl includes it too) */
#include <floe/aniso_matrix.h>

#ifdef __cplusplus
}
#endif
#endif
