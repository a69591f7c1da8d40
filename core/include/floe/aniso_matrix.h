/* Floe: the Yu & Turk kernel matrix of a particle from the weighted
 * covariance of its neighbourhood, one text for C and OpenCL C:
 * <floe/anisotropy.h> includes it (after instantiating floe_sym3_eigen in
 * double), and so does kernels/surface/aniso.cl (the OpenCL programs are
 * built with the public headers' folder on their include path), so the
 * device's kernels are the host's operation by operation. Needs double
 * (cl_khr_fp64 in a kernel), <math.h> in C (as every text shared with
 * OpenCL C, it includes nothing) and floe_sym3_eigen (<floe/sym3_eigen.h>
 * with FLOE_SYM3_T double, FLOE_SYM3_NAME floe_sym3_eigen). */
#ifndef FLOE_ANISO_MATRIX_H
#define FLOE_ANISO_MATRIX_H

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

#endif
