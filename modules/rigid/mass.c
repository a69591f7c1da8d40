/* Mass properties of a closed triangle mesh from its volume integrals.
 *
 * Each triangle (a, b, c), oriented outward, spans with the origin a
 * tetrahedron of signed volume V_t = a . (b x c) / 6; the solid is their sum
 * (the divergence theorem), so for any origin
 *   V        = sum V_t
 *   V c      = sum V_t (a + b + c) / 4
 *   C = int x x^T dV = sum V_t / 20 (a a^T + b b^T + c c^T + s s^T),  s = a + b + c
 * (the covariance of a tetrahedron with one vertex at the origin; Tonon 2004,
 * Eberly "Polyhedral mass properties"). The inertia about the centre is
 *   I = rho (tr(C') 1 - C'),  C' = C - V c c^T.
 * Sums in double; the vertices are taken relative to the first one, which
 * keeps the sums well conditioned for a mesh far from the origin. */
#include "rigid.h"

#include <math.h>
#include <string.h>

int rigid_mesh_moments(const float *x, const uint32_t *tri, uint32_t nt, double *vol, double c[3], double C[3][3])
{
    double V = 0.0, m1[3] = {0, 0, 0}, m2[3][3] = {{0}};
    const double o[3] = {x[0], x[1], x[2]};
    for (uint32_t t = 0; t < nt; t++) {
        double p[3][3];
        for (int k = 0; k < 3; k++)
            for (int d = 0; d < 3; d++)
                p[k][d] = (double)x[3 * tri[3 * t + k] + d] - o[d];
        const double *a = p[0], *b = p[1], *e = p[2];
        const double det = a[0] * (b[1] * e[2] - b[2] * e[1]) - a[1] * (b[0] * e[2] - b[2] * e[0]) +
                           a[2] * (b[0] * e[1] - b[1] * e[0]);
        const double vt = det / 6.0;
        const double s[3] = {a[0] + b[0] + e[0], a[1] + b[1] + e[1], a[2] + b[2] + e[2]};
        V += vt;
        for (int d = 0; d < 3; d++)
            m1[d] += vt * s[d] / 4.0;
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                m2[i][j] += vt / 20.0 * (a[i] * a[j] + b[i] * b[j] + e[i] * e[j] + s[i] * s[j]);
    }
    if (!(V > 0.0))
        return -1;
    /* centre relative to o, then the second moment about the centre moved to the origin */
    double cr[3];
    for (int d = 0; d < 3; d++)
        cr[d] = m1[d] / V;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            const double about_c = m2[i][j] - V * cr[i] * cr[j];
            C[i][j] = about_c + V * (cr[i] + o[i]) * (cr[j] + o[j]);
        }
    for (int d = 0; d < 3; d++)
        c[d] = cr[d] + o[d];
    *vol = V;
    return 0;
}

void rigid_inertia(double mass, double vol, const double c[3], const double C[3][3], double I[3][3])
{
    const double rho = mass / vol;
    double Cc[3][3];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            Cc[i][j] = C[i][j] - vol * c[i] * c[j];
    const double tr = Cc[0][0] + Cc[1][1] + Cc[2][2];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            I[i][j] = rho * ((i == j ? tr : 0.0) - Cc[i][j]);
}
