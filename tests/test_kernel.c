/* Cubic spline kernel: normalisation, compact support, gradient. */
#include <criterion/criterion.h>
#include <floe/kernel.h>

#include <math.h>

/* Riemann sum of W over a fine lattice covering the support. */
static double integrate(int dim, float H)
{
    floe_kernel k = floe_kernel_make(dim, H);
    int n = dim == 3 ? 80 : 400;
    double h = 2.0 * H / n, sum = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            for (int l = 0; l < (dim == 3 ? n : 1); l++) {
                double x = -H + (i + 0.5) * h, y = -H + (j + 0.5) * h, z = dim == 3 ? -H + (l + 0.5) * h : 0;
                sum += floe_kernel_w(&k, (float)sqrt(x * x + y * y + z * z));
            }
    return sum * pow(h, dim);
}

Test(kernel, normalised_in_3d) { cr_assert_float_eq(integrate(3, 0.1f), 1.0, 2e-3); }
Test(kernel, normalised_in_2d) { cr_assert_float_eq(integrate(2, 0.05f), 1.0, 1e-3); }
Test(kernel, normalisation_independent_of_support)
{
    cr_assert_float_eq(integrate(3, 2.0f), integrate(3, 0.02f), 1e-4);
}

Test(kernel, compact_support_and_continuity)
{
    for (int dim = 2; dim <= 3; dim++) {
        floe_kernel k = floe_kernel_make(dim, 0.2f);
        cr_assert_eq(floe_kernel_w(&k, 0.2f), 0.0f);
        cr_assert_eq(floe_kernel_w(&k, 0.25f), 0.0f);
        cr_assert_eq(floe_kernel_dw_r(&k, 0.3f), 0.0f);
        cr_assert(floe_kernel_w(&k, 0.0f) > floe_kernel_w(&k, 0.05f));
        /* both branches meet at q = 1/2 */
        float a = floe_kernel_w(&k, 0.1f - 1e-6f), b = floe_kernel_w(&k, 0.1f + 1e-6f);
        cr_assert_float_eq(a, b, 1e-3 * a);
    }
}

Test(kernel, gradient_antisymmetric_and_matches_finite_difference)
{
    for (int dim = 2; dim <= 3; dim++) {
        floe_kernel k = floe_kernel_make(dim, 0.1f);
        float pts[][3] = {{0.01f, 0.02f, 0.0f}, {0.03f, -0.04f, 0.02f}, {-0.06f, 0.01f, 0.05f}, {0.07f, 0.0f, 0.0f}};
        for (int p = 0; p < 4; p++) {
            float x[3] = {pts[p][0], pts[p][1], dim == 3 ? pts[p][2] : 0}, mx[3] = {-x[0], -x[1], -x[2]};
            float g[3], gm[3];
            floe_kernel_grad(&k, x, g);
            floe_kernel_grad(&k, mx, gm);
            for (int c = 0; c < 3; c++)
                cr_assert_eq(g[c], -gm[c], "grad W(-x) must equal -grad W(x)");
            for (int c = 0; c < dim; c++) {
                double e = 1e-4;
                float xp[3] = {x[0], x[1], x[2]}, xm[3] = {x[0], x[1], x[2]};
                xp[c] += (float)e;
                xm[c] -= (float)e;
                double rp = sqrt(xp[0] * xp[0] + xp[1] * xp[1] + xp[2] * xp[2]);
                double rm = sqrt(xm[0] * xm[0] + xm[1] * xm[1] + xm[2] * xm[2]);
                double fd = (floe_kernel_w(&k, (float)rp) - floe_kernel_w(&k, (float)rm)) / (2 * e);
                cr_assert_float_eq(g[c], fd, 2e-2 * fabs(fd) + 1e-1, "dim %d comp %d: %g vs %g", dim, c, g[c], fd);
            }
        }
        float zero[3] = {0, 0, 0}, g0[3];
        floe_kernel_grad(&k, zero, g0);
        cr_assert(g0[0] == 0 && g0[1] == 0 && g0[2] == 0);
    }
}

/* The branch-free forms the modules' neighbour loops use agree with the
 * reference kernel: W = sigma floe_w_hat, dW/dr / r = floe_dw_r_hat, both
 * pieces of the spline, the joint at q = 1/2, the support's end and beyond. */
Test(kernel, branch_free_forms_match)
{
    for (int dim = 2; dim <= 3; dim++) {
        const float H = 0.05f;
        floe_kernel k = floe_kernel_make(dim, H);
        const float g = k.sigma * k.inv_H, rmin2 = (1e-6f * H) * (1e-6f * H);
        for (int s = 1; s <= 1200; s++) {
            const float r = H * (float)s / 1000.0f; /* up to 1.2 H */
            const float w = k.sigma * floe_w_hat(k.inv_H, r * r), w0 = floe_kernel_w(&k, r);
            const float d = floe_dw_r_hat(g, k.inv_H, rmin2, r * r), d0 = floe_kernel_dw_r(&k, r);
            cr_assert(fabsf(w - w0) <= 1e-5f * k.sigma, "dim %d r/H %.3f: W %g vs %g", dim, r / H, w, w0);
            /* near r = 0 both cancel 6 - 6 in float: relative 1e-4 */
            cr_assert(fabsf(d - d0) <= 1e-4f * (fabsf(g / H) + fabsf(d0)), "dim %d r/H %.3f: dW/r %g vs %g", dim,
                      r / H, d, d0);
        }
        /* coincident particles: finite, so grad W = dw_r * x_ij = 0 */
        cr_assert(isfinite(floe_dw_r_hat(g, k.inv_H, rmin2, 0.0f)));
        cr_assert_eq(floe_pos(-2.0f), 0.0f);
        cr_assert_eq(floe_neg(3.0f), 0.0f);
    }
}
