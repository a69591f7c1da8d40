/* Floe: the eigen-decomposition of a symmetric 3x3 matrix by cyclic Jacobi
 * rotations, one text for C and OpenCL C. <floe/anisotropy.h> instantiates
 * it in double (floe_sym3_eigen), kernels in float (kernels/freeze/freeze.cl;
 * the OpenCL programs are built with the public headers' folder on their
 * include path, so a kernel writes #include "floe/sym3_eigen.h").
 *
 * Define, then include (more than once for more instances):
 *   FLOE_SYM3_T       the real type: double in C, float in kernels
 *   FLOE_SYM3_NAME    the function's name
 *   FLOE_SYM3_SWEEPS  the most sweeps
 *   FLOE_SYM3_TOL     stop once off-diagonal^2 <= TOL diagonal^2 (a constant of type T)
 * It defines
 *   void NAME(const T m[6], T eval[3], T evec[3][3])
 * (static inline: OpenCL C 1.2 allows static functions too): m = {xx, xy, xz, yy, yz, zz},
 * eval[0] >= eval[1] >= eval[2], evec[k] the unit eigenvector of eval[k]
 * (the columns of R, stored as rows); exact for diagonal input. The four
 * macros are undefined at the end. Constants are written (T)k, so the float
 * instance never touches double. */
#if !defined(FLOE_SYM3_T) || !defined(FLOE_SYM3_NAME) || !defined(FLOE_SYM3_SWEEPS) || !defined(FLOE_SYM3_TOL)
#error "define FLOE_SYM3_T, FLOE_SYM3_NAME, FLOE_SYM3_SWEEPS and FLOE_SYM3_TOL before including floe/sym3_eigen.h"
#endif

static inline void FLOE_SYM3_NAME(const FLOE_SYM3_T m[6], FLOE_SYM3_T eval[3], FLOE_SYM3_T evec[3][3])
{
    typedef FLOE_SYM3_T T;
    T a[3][3] = {{m[0], m[1], m[2]}, {m[1], m[3], m[4]}, {m[2], m[4], m[5]}};
    T v[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    for (int sweep = 0; sweep < FLOE_SYM3_SWEEPS; sweep++) {
        T off = a[0][1] * a[0][1] + a[0][2] * a[0][2] + a[1][2] * a[1][2];
        T diag = a[0][0] * a[0][0] + a[1][1] * a[1][1] + a[2][2] * a[2][2];
        if (off <= FLOE_SYM3_TOL * diag || off == (T)0)
            break;
        for (int p = 0; p < 2; p++)
            for (int q = p + 1; q < 3; q++) {
                if (a[p][q] == (T)0)
                    continue;
                T theta = (a[q][q] - a[p][p]) / ((T)2 * a[p][q]);
                T t = (theta >= (T)0 ? (T)1 : (T)-1) / (fabs(theta) + sqrt(theta * theta + (T)1));
                T c = (T)1 / sqrt(t * t + (T)1), s = t * c;
                for (int k = 0; k < 3; k++) { /* A <- A J */
                    T akp = a[k][p], akq = a[k][q];
                    a[k][p] = c * akp - s * akq;
                    a[k][q] = s * akp + c * akq;
                }
                for (int k = 0; k < 3; k++) { /* A <- J^T A */
                    T apk = a[p][k], aqk = a[q][k];
                    a[p][k] = c * apk - s * aqk;
                    a[q][k] = s * apk + c * aqk;
                }
                for (int k = 0; k < 3; k++) { /* V <- V J */
                    T vkp = v[k][p], vkq = v[k][q];
                    v[k][p] = c * vkp - s * vkq;
                    v[k][q] = s * vkp + c * vkq;
                }
            }
    }
    int o[3] = {0, 1, 2};
    for (int i = 0; i < 2; i++)
        for (int j = i + 1; j < 3; j++)
            if (a[o[j]][o[j]] > a[o[i]][o[i]]) {
                int t = o[i];
                o[i] = o[j];
                o[j] = t;
            }
    for (int k = 0; k < 3; k++) {
        eval[k] = a[o[k]][o[k]];
        for (int r = 0; r < 3; r++)
            evec[k][r] = v[r][o[k]];
    }
}

#undef FLOE_SYM3_T
#undef FLOE_SYM3_NAME
#undef FLOE_SYM3_SWEEPS
#undef FLOE_SYM3_TOL
