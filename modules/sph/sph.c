/* Floe module "sph": the stages every SPH solver shares, each written once.
 *
 *   density  rho_i = m_i W(0) + sum_j m_j W_ij + sum_b rho0_i V_b W_ib
 *            (Akinci et al. 2012: a boundary particle counts as fluid of
 *            mass rho0_i V_b), after the neighbours stage; WCSPH, IISPH and
 *            whatever comes next read it
 *   xsph     XSPH velocity smoothing (Monaghan 1989) as an acceleration,
 *              a_i += 2 alpha / dt sum_j m_j / (rho_i + rho_j) (v_j - v_i) W_ij
 *                   - 2 alpha_b / dt sum_b rho0_i V_b / (2 rho_i) v_i W_ib
 *            (walls at rest, rho_b = rho_i); the pair term is the kit's
 *            floe_xsph_pair, which wcsph.pressure_force{xsph} also sums
 *
 * j runs over the neighbours in every fluid set, b over those in every
 * boundary set. Old names (wcsph.density, wcsph.viscosity{kind = "xsph"},
 * viscosity.xsph) run these stages (floe_stage_desc.replaced_by).
 *
 * Speed: the density is the hot path of every SPH step. The core sums each
 * row's kernel while it builds the lists (floe_nlist.wsum, asked for with
 * want_kernel_sums), so from the second step on the stage only adds those
 * sums up; where it does not (first step, periodic domains, the OpenCL
 * backend's host copies, after a stage that moved particles) the rows are
 * walked here, over packed records on AVX2 (<floe/sph_pack.h>), with
 * schedule(dynamic, 256) (rows differ in length). Each particle's sum is
 * made in one order fixed at compile time: bitwise the same results for any
 * thread count and schedule. */
#include "sph.h"

#include <floe/simd.h>
#include <floe/sph_pack.h>

#include <stdlib.h>

FLOE_MODULE_API_DEFINE; /* the core's services; the entry point sets it */

/* ---- module state: the packed records of the density rows ---------------- */

typedef struct sph_state {
    floe_records rec; /* A = (x, y, z, m) */
} sph_state;

FLOE_STATE_INIT(sph_init, sph_state)

static void sph_fini(void *state)
{
    sph_state *s = state;
    if (s)
        floe_records_free(&s->rec);
    free(s);
}

/* ---- density ------------------------------------------------------------- */

/* rho of fluid set fs from the targets t[0..nt): the core's row sums where
 * there are (tg->wsum), else a walk of the row */
static void density_c(floe_ctx *ctx, const sph_state *ss, const floe_kconst *pkc, const floe_fluid *fs,
                      floe_target *t, int nt, int packed, int sums_all, float *restrict rho)
{
    const floe_kconst kc = *pkc;
    const uint32_t n = fs->info.n;
    const float *restrict xs = api->attr_read(ctx, fs->set, "x", FLOE_VEC3);
    const float *restrict ms = api->attr_read(ctx, fs->set, "m", FLOE_F32);
    const float rho0 = fs->info.rest_density;
    (void)ss, (void)packed;
    if (sums_all) { /* the sum below, of the core's row sums */
#pragma omp parallel for schedule(static)
        for (uint32_t i = 0; i < n; i++) {
            float acc = ms[i];
            for (int b = 0; b < nt; b++)
                acc += t[b].boundary ? rho0 * t[b].wsum[i] : t[b].wsum[i];
            rho[i] = kc.sigma * acc;
        }
        return;
    }
#pragma omp parallel for schedule(dynamic, 256) firstprivate(t)
    for (uint32_t i = 0; i < n; i++) {
        floe_prefetch_rows(t, nt, i, n);
        const float xi = xs[3 * i], yi = xs[3 * i + 1], zi = xs[3 * i + 2];
        float acc = ms[i]; /* m_i W(0) / sigma */
        for (int b = 0; b < nt; b++) {
            if (t[b].wsum) {
                acc += t[b].boundary ? rho0 * t[b].wsum[i] : t[b].wsum[i];
                continue;
            }
#ifdef FLOE_SPH_AVX2
            const float sum = packed && !t[b].boundary
                                  ? floe_row_w8(kc.inv_H, FLOE_ROW(&t[b], i), ss->rec.A + 4 * t[b].off, xi, yi, zi)
                                  : FLOE_ROW_CALL(kc.periodic, floe_row_w, &kc, FLOE_ROW(&t[b], i), t[b].x,
                                                  t[b].mass, xi, yi, zi);
#else
            const float sum =
                FLOE_ROW_CALL(kc.periodic, floe_row_w, &kc, FLOE_ROW(&t[b], i), t[b].x, t[b].mass, xi, yi, zi);
#endif
            acc += t[b].boundary ? rho0 * sum : sum; /* boundary: rho0_i V_b */
        }
        rho[i] = kc.sigma * acc;
    }
}

static int st_density(const floe_stage_call *call)
{
    floe_ctx *ctx = call->ctx;
    sph_state *ss = call->state;
    const floe_kconst kc = floe_kconst_make(api->sim(ctx));
    floe_fluid f[FLOE_MAX_SETS];
    floe_target t[2 * FLOE_MAX_SETS];
    int nf, nt = 0, st;

    if ((st = floe_fluid_sets(api, ctx, f, &nf, NULL)) != FLOE_OK)
        return st;
    /* From the next neighbours stage on, the core sums the rows while it
     * builds them (floe_nlist.wsum: the floats floe_row_w8 gives); until
     * then, and wherever it does not, the rows are summed here. */
    api->want_kernel_sums(ctx);
    int packed = 0, pack_done = 0; /* fluid rows over packed (x, y, z, m) records, packed when first needed */
    for (int s = 0; s < nf; s++) {
        if (f[s].info.n == 0)
            continue;
        if ((st = floe_targets(api, ctx, &f[s], f, nf, FLOE_WITH_BOUNDARY, NULL, NULL, t, &nt)) != FLOE_OK)
            return st;
        int sums_all = 1; /* every row of this set has the core's sums */
        for (int b = 0; b < nt; b++)
            sums_all &= t[b].wsum != NULL;
        if (!sums_all && !pack_done) {
            if ((st = floe_pack_fluids(api, ctx, ss ? &ss->rec : NULL, &kc, f, nf, 0, NULL, &packed)) != FLOE_OK)
                return st;
            pack_done = 1;
        }
        float *rho = floe_attr_of(api, ctx, &f[s], "rho", FLOE_F32);
        if (!rho)
            return FLOE_ERR_ARG;
        density_c(ctx, ss, &kc, &f[s], t, nt, packed, sums_all, rho);
    }
    return FLOE_OK;
}

static int st_density_cl(const floe_stage_call *call) { return sph_cl_density(call->ctx); }

/* ---- XSPH ---------------------------------------------------------------- */

enum { XS_ALPHA, XS_BOUNDARY_ALPHA };

/* the factors of fluid set f: 2 alpha / dt and W = sigma w_hat, in the
 * float order of wcsph.pressure_force{xsph}'s cv */
static sph_xsph decode_xsph(const floe_stage_call *call, const floe_kconst *kc, const floe_fluid *f)
{
    const double dt = api->sim(call->ctx)->dt;
    const float alpha = (float)call->param[XS_ALPHA].f, balpha = (float)call->param[XS_BOUNDARY_ALPHA].f;
    const sph_xsph x = {(float)(2.0 * alpha / dt) * kc->sigma,
                        (float)(2.0 * balpha / dt) * kc->sigma * f->info.rest_density};
    return x;
}

/* XSPH of fluid set f[s] against every fluid set and (boundary) every boundary set (C path) */
static int xsph_c(floe_ctx *ctx, const floe_kconst *pkc, const floe_fluid *f, int nf, int s, int boundary,
                  const sph_xsph *x)
{
    const floe_kconst kc = *pkc;
    const floe_fluid *fs = &f[s];
    const uint32_t n = fs->info.n;
    floe_target t[2 * FLOE_MAX_SETS];
    int nt = 0;
    const int st = floe_targets(api, ctx, fs, f, nf, FLOE_NEED_RHO | FLOE_NEED_V | (boundary ? FLOE_WITH_BOUNDARY : 0),
                                NULL, NULL, t, &nt);
    if (st != FLOE_OK)
        return st;
    const float *restrict xs = api->attr_read(ctx, fs->set, "x", FLOE_VEC3);
    const float *restrict vs = api->attr_read(ctx, fs->set, "v", FLOE_VEC3);
    const float *restrict rhos = api->attr_read(ctx, fs->set, "rho", FLOE_F32);
    float *restrict a = floe_attr_of(api, ctx, fs, "a", FLOE_VEC3);
    const float cf = x->cf, cbi = x->cb;
    if (!a)
        return FLOE_ERR_ARG;

#pragma omp parallel for schedule(static)
    for (uint32_t i = 0; i < n; i++) {
        FLOE_FORCE_PARTICLE(t, nt, i, n, xs, vs, rhos);
        for (int b = 0; b < nt; b++) {
            const floe_target *tg = &t[b];
            if (!tg->boundary)
                FLOE_ROW_CALL(kc.periodic, floe_row_xsph, &kc, FLOE_ROW(tg, i), tg->x, tg->mass, tg->rho, tg->v, xi,
                              yi, zi, rhoi, vi3, af);
            else { /* at rest, mass rho0_i V_b, rho_b = rho_i: m_b / (rho_i + rho_b) (0 - v_i) W_ib */
                const float sw = -FLOE_ROW_CALL(kc.periodic, floe_row_w, &kc, FLOE_ROW(tg, i), tg->x, tg->mass, xi,
                                                yi, zi) / (2.0f * rhoi);
                ab[0] += sw * vi3[0];
                ab[1] += sw * vi3[1];
                ab[2] += sw * vi3[2];
            }
        }
        a[3 * i] += cf * af[0] + cbi * ab[0];
        a[3 * i + 1] += cf * af[1] + cbi * ab[1];
        a[3 * i + 2] += cf * af[2] + cbi * ab[2];
    }
    return FLOE_OK;
}

static int xsph(const floe_stage_call *call, int cl)
{
    floe_ctx *ctx = call->ctx;
    const floe_kconst kc = floe_kconst_make(api->sim(ctx));
    const int boundary = call->param[XS_BOUNDARY_ALPHA].f > 0.0;
    floe_fluid f[FLOE_MAX_SETS];
    int nf, st;

    if (call->param[XS_ALPHA].f == 0.0 && !boundary)
        return FLOE_OK;
    if (!(api->sim(ctx)->dt > 0.0))
        return FLOE_OK; /* nothing to smooth over a zero step */
    if ((st = floe_fluid_sets(api, ctx, f, &nf, NULL)) != FLOE_OK)
        return st;
    for (int s = 0; s < nf; s++) {
        const sph_xsph x = decode_xsph(call, &kc, &f[s]);
        if (f[s].info.n > 0 && (st = cl ? sph_cl_xsph(ctx, &f[s], &x) : xsph_c(ctx, &kc, f, nf, s, boundary, &x)))
            return st;
    }
    return FLOE_OK;
}

static int st_xsph(const floe_stage_call *call) { return xsph(call, 0); }
static int st_xsph_cl(const floe_stage_call *call) { return xsph(call, 1); }

/* ---- descriptors --------------------------------------------------------- */

static const floe_attr_desc density_attrs[] = {
    FLOE_ATTR_FLUID("x", FLOE_VEC3, FLOE_READ), FLOE_ATTR_FLUID("m", FLOE_F32, FLOE_READ),
    FLOE_ATTR_FLUID("rho", FLOE_F32, FLOE_WRITE | FLOE_OVERWRITE), FLOE_ATTRS_BOUND_READ, {0},
};

static const floe_param_desc xsph_params[] = {
    [XS_ALPHA] = { FLOE_SIZED(floe_param_desc), .name = "alpha", .type = FLOE_PARAM_FLOAT,
        .def = 0.01, .min = 0, .max = 10, .unit = "",
        .doc = "fraction of the relative velocity smoothed per step between fluid particles" },
    [XS_BOUNDARY_ALPHA] = { FLOE_SIZED(floe_param_desc), .name = "boundary_alpha", .type = FLOE_PARAM_FLOAT,
        .def = 0, .min = 0, .max = 10, .unit = "",
        .doc = "the same against boundary particles at rest (a sticky wall); 0 = none" },
    {0},
};

static const floe_attr_desc xsph_attrs[] = {FLOE_ATTRS_FORCE, {0}}; /* x v m rho, walls' x V; a */

static const floe_stage_desc stages[] = {
    { FLOE_SIZED(floe_stage_desc), .name = "density",
      .doc = "SPH density rho_i = m_i W(0) + sum_j m_j W_ij + sum_b rho0 V_b W_ib (after 'neighbours')",
      .run = st_density, .run_cl = st_density_cl, .attrs = density_attrs },
    { FLOE_SIZED(floe_stage_desc), .name = "xsph",
      .doc = "XSPH velocity smoothing as an acceleration 2 alpha/dt sum_j m_j/(rho_i+rho_j) (v_j-v_i) W_ij, "
             "added to a (after 'gravity')",
      .run = st_xsph, .run_cl = st_xsph_cl, .params = xsph_params, .attrs = xsph_attrs },
    {0},
};

FLOE_SPH_MODULE(sph, .version = "1.0.0", .stages = stages, .init = sph_init, .fini = sph_fini,
                .summary = "the stages SPH solvers share: the density sum (Akinci boundaries) and XSPH smoothing")
