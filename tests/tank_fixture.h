/* Settling tanks and the dam-break front for the pressure solvers' tests
 * (test_iisph.c, test_dfsph.c: the same measurements): a tank with a kernel support
 * of choice, total mass, the run record's compression, time averages of p
 * and y through a host stage, layer and slab pressure against rho0 g h with
 * h from the mass above, and the surge front of the body of water. */
#ifndef FLOE_TEST_TANK_FIXTURE_H
#define FLOE_TEST_TANK_FIXTURE_H

#include "sim_fixture.h"

static inline double total_mass(fixture *f)
{
    const float *m = floe_attr(f->ctx, f->fluid, "m", FLOE_F32);
    double s = 0;
    for (uint32_t i = 0; i < floe_set_size(f->ctx, f->fluid); i++)
        s += m[i];
    return s;
}

/* Compression error as the run record defines it: mean of max(rho/rho0 - 1, 0). */
static inline double compression(fixture *f)
{
    uint32_t n = floe_set_size(f->ctx, f->fluid);
    const float *rho = floe_attr(f->ctx, f->fluid, "rho", FLOE_F32);
    double s = 0;
    for (uint32_t i = 0; i < n; i++)
        s += fmax(rho[i] / 1000.0 - 1.0, 0.0);
    return n ? s / n : 0;
}

/* Time averages over the measurement window: a host stage after the solve
 * adds p dt and y dt into the attributes "p_sum" and "y_sum" (which move
 * with the particles when the core reorders them). */
typedef struct pavg {
    floe_set fluid;
    double T;
} pavg;

static inline int accumulate_p(const floe_stage_call *c)
{
    pavg *A = c->user;
    const double dt = floe_ctx_info(c->ctx)->dt;
    uint32_t n = floe_set_size(c->ctx, A->fluid);
    const float *p = floe_attr(c->ctx, A->fluid, "p", FLOE_F32);
    const float *x = floe_attr(c->ctx, A->fluid, "x", FLOE_VEC3);
    float *ps = floe_attr(c->ctx, A->fluid, "p_sum", FLOE_F32), *ys = floe_attr(c->ctx, A->fluid, "y_sum", FLOE_F32);
    for (uint32_t i = 0; i < n; i++) {
        ps[i] += (float)(p[i] * dt);
        ys[i] += (float)(x[3 * i + 1] * dt);
    }
    A->T += dt;
    return FLOE_OK;
}

typedef struct hy {
    float y, m;
    uint32_t i;
} hy;

static inline int cmp_hy(const void *a, const void *b)
{
    float x = ((const hy *)a)->y, y = ((const hy *)b)->y;
    return (x < y) - (x > y);
}

/* Layer-averaged pressure p (heights y) against rho0 g h below the top two
 * layers, where h is the depth of water above the particle: the mass above
 * it per unit base area (half its own mass included) over rho0 s, so the
 * reference needs no guess of where the SPH free surface lies. s = -dh/dy of
 * that mass depth against height, fitted below the top two layers: the share
 * of the base the fluid fills (1.000 in the 2D tank; 0.984 in the 3D one,
 * whose 12-particle cross-section keeps a wider gap at the side walls; the
 * interior packing itself sums to rho0 within 0.05%). *fill returns s. Layers
 * are bins of h of height bin. Returns the worst relative error; logs every
 * layer. */
static inline double layer_pressure_error(fixture *f, const float *p, const float *y, double base_area, float d, double bin,
                                   int *layers, double *fill, const char *what)
{
    floe_ctx *ctx = f->ctx;
    uint32_t n = floe_set_size(ctx, f->fluid);
    const float *m = floe_attr(ctx, f->fluid, "m", FLOE_F32);
    const double g = fabs(floe_ctx_info(ctx)->gravity[1]), rho0 = 1000.0;
    hy *s = malloc(n * sizeof *s);
    for (uint32_t i = 0; i < n; i++)
        s[i] = (hy){y[i], m[i], i};
    qsort(s, n, sizeof *s, cmp_hy);
    enum { NB = 256 };
    double psum[NB] = {0}, hsum[NB] = {0};
    int cnt[NB] = {0};
    double above = 0;
    /* the fill s: least squares of the mass depth against y below 2 d */
    double sy = 0, sh = 0, syy = 0, syh = 0, sn = 0;
    for (uint32_t k = 0; k < n; k++) {
        double h = (above + 0.5 * s[k].m) / (rho0 * base_area);
        above += s[k].m;
        if (h > 2.0 * d) {
            sy += s[k].y, sh += h, syy += (double)s[k].y * s[k].y, syh += s[k].y * h, sn++;
        }
    }
    *fill = -(sn * syh - sy * sh) / (sn * syy - sy * sy);
    above = 0;
    for (uint32_t k = 0; k < n; k++) {
        double h = (above + 0.5 * s[k].m) / (rho0 * base_area * *fill);
        above += s[k].m;
        int b = (int)floor(h / bin);
        if (b >= 0 && b < NB) {
            psum[b] += p[s[k].i];
            hsum[b] += h;
            cnt[b]++;
        }
    }
    free(s);
    double worst = 0;
    *layers = 0;
    /* below the top two layers: bins whose top is at least 2 d deep */
    /* a bin holding less than half of what a full one holds is the floor
     * layer split by the bin edge, not a layer */
    const double full = n * bin / (above / (rho0 * base_area * *fill));
    for (int b = (int)ceil(2.0 * d / bin - 1e-9); b < NB; b++) {
        if (cnt[b] < 3 || cnt[b] < 0.5 * full)
            continue;
        double pm = psum[b] / cnt[b], ref = rho0 * g * hsum[b] / cnt[b];
        double e = fabs(pm - ref) / ref;
        worst = fmax(worst, e);
        (*layers)++;
        cr_log_info("%s %s %2d depth %.4f m: p = %9.2f Pa, rho g h = %9.2f Pa, error %+.2f%%", what,
                    bin > 1.5 * d ? "slab" : "layer", b, hsum[b] / cnt[b], pm, ref, 100 * (pm - ref) / ref);
    }
    return worst;
}

static inline void check_in_tank(fixture *f, const float tank[3], float d)
{
    uint32_t n = floe_set_size(f->ctx, f->fluid);
    const float *x = floe_attr(f->ctx, f->fluid, "x", FLOE_VEC3);
    int dim = floe_ctx_info(f->ctx)->dim;
    for (uint32_t i = 0; i < n; i++)
        for (int k = 0; k < dim; k++)
            cr_assert(x[3 * i + k] > -0.5f * d && x[3 * i + k] < tank[k] + 0.5f * d,
                      "particle %u left the tank: axis %d at %g", i, k, x[3 * i + k]);
}

/* fixture_tank with the kernel support H = support * d */
static inline fixture tank_fixture(int dim, float d, float support, const float tank[3], const float water[3], int open_top)
{
    setenv("FLOE_MODULE_PATH", FLOE_TEST_BUILD_ROOT "/modules", 1);
    floe_sim_def def = floe_sim_default_def();
    def.dim = dim;
    def.spacing = d;
    def.support_factor = support;
    def.threads = 2;
    for (int k = 0; k < 3; k++) {
        def.domain_min[k] = -4 * d;
        def.domain_max[k] = tank[k] + 4 * d + (k == 1 ? tank[1] : 0);
    }
    char err[512];
    fixture f;
    f.ctx = floe_ctx_create(&def, err, sizeof err);
    cr_assert_not_null(f.ctx, "%s", err);
    f.fluid = floe_set_create(f.ctx, "fluid", FLOE_SET_FLUID, 1000);
    f.bnd = floe_set_create(f.ctx, "boundary", FLOE_SET_BOUNDARY, 0);
    float zero[3] = {0, 0, 0};
    cr_assert(floe_fill_box(f.ctx, f.fluid, zero, water, NULL) > 0);
    cr_assert(floe_boundary_box(f.ctx, f.bnd, zero, tank, 2, open_top ? FLOE_OPEN_TOP : 0) > 0);
    return f;
}

/* the dam break's front: a frame callback logging Z against T */
static inline int on_front(floe_ctx *ctx, const floe_frame_stats *st, void *user)
{
    front_log *L = user;
    const float *x = floe_attr(ctx, L->fluid, "x", FLOE_VEC3);
    const uint32_t n = floe_set_size(ctx, L->fluid);
    double xmax = 0;
    /* the front: the rightmost particle that belongs to the body of water,
     * i.e. has at least two others within 1.5 d (a droplet ahead of the
     * surge is not its front) */
    for (int tries = 0; tries < 64; tries++) {
        uint32_t best = UINT32_MAX;
        float bx = -1e30f;
        for (uint32_t i = 0; i < n; i++)
            if (x[3 * i] > bx && x[3 * i] < (tries ? (float)xmax : 1e30f))
                bx = x[3 * i], best = i;
        if (best == UINT32_MAX)
            break;
        int near = 0;
        for (uint32_t j = 0; j < n && near < 2; j++) {
            float dx = x[3 * j] - x[3 * best], dy = x[3 * j + 1] - x[3 * best + 1];
            near += j != best && dx * dx + dy * dy < 2.25f * L->d * L->d;
        }
        xmax = bx;
        if (near >= 2)
            break;
    }
    if (L->n < (int)(sizeof L->T / sizeof L->T[0])) {
        L->T[L->n] = (st->time - L->t0) * L->tscale;
        L->Z[L->n] = (xmax + 0.5 * L->d) / L->a;
        L->n++;
    }
    return 0;
}

#endif
