/* Floe module "viscosity": viscous force stages that add to the acceleration
 * `a` after the core `gravity` stage and before the pressure force / pressure
 * solve, so they serve WCSPH (wcsph.pressure_force) and IISPH alike.
 *
 *   laminar  physical viscosity nu [m^2/s], two discretisations (`form`):
 *            morris (default; Morris et al. 1997, Lo & Shao 2002 with mu = rho nu):
 *              a_i += nu   sum_j m_j (1/rho_i + 1/rho_j) (x_ij.grad W_ij)/(|x_ij|^2 + eps H^2) v_ij
 *                   + nu_b sum_b 2 rho0 V_b / rho_i    (x_ib.grad W_ib)/(|x_ib|^2 + eps H^2) (v_i - v_b)
 *            monaghan (Monaghan 2005 / SPlisHSPlasH "standard", conserves
 *            angular momentum):
 *              a_i += 2(d+2) nu   sum_j (m_j/rho_j)     (v_ij.x_ij)/(|x_ij|^2 + eps H^2) grad W_ij
 *                   + 2(d+2) nu_b sum_b (rho0 V_b/rho_i) ((v_i - v_b).x_ib)/(|x_ib|^2 + eps H^2) grad W_ib
 *            (d = dimension). Walls are at rest; `wall_velocity` gives their
 *            particles v_b = -v_i (mirror, default: Takeda 1994 / Morris
 *            1997 extrapolation, no-slip at the wall surface) or v_b = 0
 *            (zero: no-slip about d/3 inside the wall). Both tend to
 *            nu Laplacian(v) for divergence-free flow; on a particle lattice
 *            with H = 2 d (spacing) the monaghan form relies on an isotropy of
 *            the neighbourhood that 8-12 neighbours do not have, and gives
 *            about 0.65-0.75 of nu for shear along a lattice axis, the morris
 *            form 0.96-0.98 (docs/viscosity_tension.md).
 *   kim      Kim 2020 section 3.2.4, eq. 37-39 between fluid particles and
 *            eq. 40 against boundary particles (water that clings to walls),
 *            as written (every pair, walls at rest: v_b = 0):
 *              a_i += sum_j m_j        beta0  beta1 u_ij / rho_ij^avg grad W_ij       (37)
 *                   + sum_b Psi_b      beta0b beta1 u_ib / rho_ib^avg grad W_ib       (40)
 *              u_ij = H (v_ij.x_ij) / (|x_ij|^2 + eps H^2)                           (38)
 *              rho_ij^avg = (rho_i + rho_j) / 2                                      (39)
 *            with Psi_b = rho0 V_b (Akinci 2012) and rho_b = rho_i (mirrored).
 *            Applied to every pair it is the monaghan form of laminar with
 *              nu = beta0 beta1 H / (2 (d + 2))   (nu_b likewise with beta0b)
 *            (exactly so where rho_i = rho_j; tests/test_viscosity.c).
 *   xsph     an old name of sph.xsph (the one XSPH)
 *
 * j runs over neighbours in every fluid set, b over those in every boundary
 * set, the minimum image on periodic axes (<floe/sph.h>).
 *
 * Each stage decodes its parameters once into a visc_coef (viscosity.h),
 * proposes the diffusion dt limit, then runs the C path below or the OpenCL
 * path (viscosity_cl.c) with it. Speed: every loop is a gather with a
 * static schedule, the sum over one neighbour row an omp simd reduction of
 * the kit's branch-free kernel; m_j / rho_j (monaghan) is computed once per
 * call into a scratch array. Results are bitwise the same for a given
 * thread count. */
#include "viscosity.h"

#include <floe/wall_sums.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

FLOE_MODULE_API_DEFINE; /* the core's services; the entry point sets it */

/* ---- module state: V_j = m_j / rho_j of every fluid set ----------------- */

typedef struct visc_state {
    float *vol;
    size_t cap;
    /* wall_velocity = "extrapolated": v~_b (3 per boundary particle, every
     * boundary set end to end), then the kernel sums */
    float *wv;
    size_t wv_cap;
    floe_walls walls;
} visc_state;

FLOE_STATE_INIT(visc_init, visc_state)

static void visc_fini(void *state)
{
    visc_state *s = state;
    if (s) {
        free(s->vol);
        free(s->wv);
    }
    free(s);
}

/* V_j = m_j / rho_j of every fluid set into the scratch. */
static int compute_volumes(floe_ctx *ctx, visc_state *vs, const floe_fluid *f, int nf, size_t total)
{
    if (!vs)
        return api->fail(ctx, FLOE_ERR, "module state missing");
    int st = floe_scratch(api, ctx, &vs->vol, &vs->cap, total);
    for (int s = 0; s < nf && st == FLOE_OK; s++) {
        const uint32_t n = f[s].info.n;
        const float *restrict m = n ? floe_need_read(api, ctx, f[s].set, f[s].info.name, "m", FLOE_F32, &st) : NULL;
        const float *restrict rho = n ? floe_need_read(api, ctx, f[s].set, f[s].info.name, "rho", FLOE_F32, &st) : NULL;
        if (st != FLOE_OK) /* an empty set reads nothing */
            return st;
        float *restrict V = n ? vs->vol + f[s].off : NULL;
#pragma omp parallel for simd schedule(static)
        for (uint32_t i = 0; i < n; i++)
            V[i] = m[i] / rho[i];
    }
    return st;
}

/* ---- sums over one neighbour row (<floe/sph.h>: argument order, `per`) ---- */

/* s += sum_j c_j (v_ij . x_ij) / (r^2 + eps) grad W_ij, c_j = w_j (monaghan,
 * w = V) or m_j / (rho_i + rho_j) (kim, rho != NULL, w = m). */
#define V_IJ_X_IJ ((ui - v[3 * j]) * dx + (wi - v[3 * j + 1]) * dy + (ti - v[3 * j + 2]) * dz)
FLOE_ROW_FN void row_visc(const floe_kconst *kc, const uint32_t *restrict id, uint32_t cnt, const float *restrict xt,
                          const float *restrict w, const float *restrict rho, const float *restrict v, float xi,
                          float yi, float zi, float rhoi, const float vi[3], float eps, float s[3], const int per)
{
    const float ui = vi[0], wi = vi[1], ti = vi[2];
    if (rho)
        FLOE_ROW_GRAD_SUM(s, w[j] / (rhoi + rho[j]) * V_IJ_X_IJ / (r2 + eps));
    else
        FLOE_ROW_GRAD_SUM(s, w[j] * V_IJ_X_IJ / (r2 + eps));
}

/* Boundary at rest: s += sum_b V_b (v_i . x_ib) / (r^2 + eps) grad W_ib */
FLOE_ROW_FN void row_visc_wall(const floe_kconst *kc, const uint32_t *restrict id, uint32_t cnt,
                               const float *restrict xt, const float *restrict V, float xi, float yi, float zi,
                               const float vi[3], float eps, float s[3], const int per)
{
    const float ui = vi[0], wi = vi[1], ti = vi[2];
    FLOE_ROW_GRAD_SUM(s, V[j] * (ui * dx + wi * dy + ti * dz) / (r2 + eps));
}

/* Morris: s += sum_j m_j (1/rho_i + 1/rho_j) F_ij v_ij, F_ij = (x_ij.grad W_ij)/(r^2 + eps) */
FLOE_ROW_FN void row_morris(const floe_kconst *kc, const uint32_t *restrict id, uint32_t cnt,
                            const float *restrict xt, const float *restrict m, const float *restrict rho,
                            const float *restrict v, float xi, float yi, float zi, float inv_rhoi, const float vi[3],
                            float eps, float s[3], const int per)
{
    float sx = 0.0f, sy = 0.0f, sz = 0.0f;
    const float ui = vi[0], wi = vi[1], ti = vi[2];
#pragma omp simd reduction(+ : sx, sy, sz)
    for (uint32_t k = 0; k < cnt; k++) {
        FLOE_X_IJ(per);
        const float F = m[j] * (inv_rhoi + 1.0f / rho[j]) * r2 / (r2 + eps) * floe_kdw(kc, r2);
        sx += F * (ui - v[3 * j]);
        sy += F * (wi - v[3 * j + 1]);
        sz += F * (ti - v[3 * j + 2]);
    }
    s[0] += sx;
    s[1] += sy;
    s[2] += sz;
}

/* Morris against walls at rest: sum_b V_b F_ib (times v_i outside) */
FLOE_ROW_FN float row_morris_wall(const floe_kconst *kc, const uint32_t *restrict id, uint32_t cnt,
                                  const float *restrict xt, const float *restrict V, float xi, float yi, float zi,
                                  float eps, const int per)
{
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (uint32_t k = 0; k < cnt; k++) {
        FLOE_X_IJ(per);
        s += V[j] * r2 / (r2 + eps) * floe_kdw(kc, r2);
    }
    return s;
}

/* Morris against a static wall of velocity 2 v_w - v~_b, v_w = 0:
 * s += sum_b V_b F_ib (v_i + v~_b) */
FLOE_ROW_FN void row_morris_wall_ext(const floe_kconst *kc, const uint32_t *restrict id, uint32_t cnt,
                                     const float *restrict xt, const float *restrict V, const float *restrict vw,
                                     float xi, float yi, float zi, const float vi[3], float eps, float s[3],
                                     const int per)
{
    float sx = 0.0f, sy = 0.0f, sz = 0.0f;
    const float ui = vi[0], wi = vi[1], ti = vi[2];
#pragma omp simd reduction(+ : sx, sy, sz)
    for (uint32_t k = 0; k < cnt; k++) {
        FLOE_X_IJ(per);
        const float F = V[j] * r2 / (r2 + eps) * floe_kdw(kc, r2);
        sx += F * (ui + vw[3 * j]);
        sy += F * (wi + vw[3 * j + 1]);
        sz += F * (ti + vw[3 * j + 2]);
    }
    s[0] += sx;
    s[1] += sy;
    s[2] += sz;
}

/* v~_b = sum_f v_f W_bf / sum_f W_bf of every static boundary particle
 * (Adami et al. 2012's smoothed fluid velocity at the wall), into vs->wv */
static int wall_velocity(floe_ctx *ctx, visc_state *vs, const floe_kconst *pkc, const floe_fluid *f, int nf)
{
    /* under MPI a wall particle's velocity would need the fluid within a
     * support radius of it, beyond a rank's ghosts: refused rather than wrong */
    if (floe_ranks(api, ctx) > 1)
        return api->fail(ctx, FLOE_ERR_ARG,
                         "wall_velocity = \"extrapolated\" does not run under MPI (a wall's velocity averages fluid "
                         "beyond a rank's ghosts): use wall_velocity = \"mirror\" or one process");
    const floe_kconst kc = *pkc;
    const floe_sim_info *si = api->sim(ctx);
    floe_walls *w = &vs->walls;
    floe_target t[2 * FLOE_MAX_SETS];
    int nt, st;
    if ((st = floe_walls_layout(api, ctx, w)) != FLOE_OK ||
        (st = floe_scratch(api, ctx, &vs->wv, &vs->wv_cap, 4 * w->total + 1)) != FLOE_OK)
        return st;
    float *restrict Sv = vs->wv, *restrict Sw = vs->wv + 3 * w->total;
    memset(vs->wv, 0, 4 * w->total * sizeof *Sv);
    for (int s = 0; s < nf; s++) {
        const uint32_t n = f[s].info.n;
        const float *xs = NULL;
        if ((st = floe_walls_fluid(api, ctx, f, nf, s, t, &nt, &xs)) != FLOE_OK)
            return st;
        const float *restrict v = nt ? api->attr_read(ctx, f[s].set, "v", FLOE_VEC3) : NULL;
        if (nt == 0)
            continue;
        if (!v)
            return api->fail(ctx, FLOE_ERR_ARG, "set '%s' lacks v", f[s].info.name);
        FLOE_WALL_SCATTER(w, t, nt, n, xs, kc, si, {
            Sw[b] += W;
            Sv[3 * b] += v[3 * i] * W;
            Sv[3 * b + 1] += v[3 * i + 1] * W;
            Sv[3 * b + 2] += v[3 * i + 2] * W;
        });
    }
    const size_t total = w->total;
#pragma omp parallel for schedule(static)
    for (size_t b = 0; b < total; b++) {
        const float inv = Sw[b] > 0.0f ? 1.0f / Sw[b] : 0.0f;
        Sv[3 * b] *= inv, Sv[3 * b + 1] *= inv, Sv[3 * b + 2] *= inv;
    }
    return FLOE_OK;
}

/* ---- one particle, every target ------------------------------------------- */

typedef struct visc_job {
    const floe_kconst *kc;
    const floe_target *t;
    int nt;
    uint32_t n;
    const float *x, *v, *rho;
    float *a;
    int kind;
    float cf, cb, eps; /* cb with the boundary mass's rho0_i */
    const float *const *vw; /* per target: v~_b of a static wall (wall_velocity = extrapolated), else NULL */
} visc_job;

FLOE_ROW_FN void visc_particle(const visc_job *J, uint32_t i, const int per)
{
    const floe_kconst *kc = J->kc;
    floe_prefetch_rows(J->t, J->nt, i, J->n);
    const float xi = J->x[3 * i], yi = J->x[3 * i + 1], zi = J->x[3 * i + 2];
    const float vi[3] = {J->v[3 * i], J->v[3 * i + 1], J->v[3 * i + 2]};
    const float rhoi = J->rho[i];
    float af[3] = {0.0f, 0.0f, 0.0f}, ab[3] = {0.0f, 0.0f, 0.0f};
    if (J->kind == VK_MORRIS) {
        float sb = 0.0f;
        for (int b = 0; b < J->nt; b++) {
            const floe_target *tg = &J->t[b];
            if (tg->boundary && J->vw && J->vw[b])
                row_morris_wall_ext(kc, FLOE_ROW(tg, i), tg->x, tg->mass, J->vw[b], xi, yi, zi, vi, J->eps, ab, per);
            else if (tg->boundary && J->vw) /* a moving set: mirrored, v_i - v_b = 2 v_i */
                sb += 2.0f * row_morris_wall(kc, FLOE_ROW(tg, i), tg->x, tg->mass, xi, yi, zi, J->eps, per);
            else if (tg->boundary)
                sb += row_morris_wall(kc, FLOE_ROW(tg, i), tg->x, tg->mass, xi, yi, zi, J->eps, per);
            else
                row_morris(kc, FLOE_ROW(tg, i), tg->x, tg->mass, tg->rho, tg->v, xi, yi, zi, 1.0f / rhoi, vi, J->eps,
                           af, per);
        }
        ab[0] += sb * vi[0];
        ab[1] += sb * vi[1];
        ab[2] += sb * vi[2];
    } else {
        for (int b = 0; b < J->nt; b++) {
            const floe_target *tg = &J->t[b];
            if (tg->boundary)
                row_visc_wall(kc, FLOE_ROW(tg, i), tg->x, tg->mass, xi, yi, zi, vi, J->eps, ab, per);
            else if (J->kind == VK_KIM)
                row_visc(kc, FLOE_ROW(tg, i), tg->x, tg->mass, tg->rho, tg->v, xi, yi, zi, rhoi, vi, J->eps, af, per);
            else /* monaghan: V_j from the scratch */
                row_visc(kc, FLOE_ROW(tg, i), tg->x, tg->aux, NULL, tg->v, xi, yi, zi, rhoi, vi, J->eps, af, per);
        }
    }
    const float cbi = J->cb / rhoi;
    J->a[3 * i] += J->cf * af[0] + cbi * ab[0];
    J->a[3 * i + 1] += J->cf * af[1] + cbi * ab[1];
    J->a[3 * i + 2] += J->cf * af[2] + cbi * ab[2];
}

#define VISC_BODY(i, per) visc_particle(&job, (i), (per))

/* a_i += cf * fluid sum + cb_nu rho0_i / rho_i * boundary sum, every fluid set */
static int visc_c(const floe_stage_call *call, const visc_coef *c)
{
    floe_ctx *ctx = call->ctx;
    const floe_kconst kc = floe_kconst_make(api->sim(ctx));
    floe_fluid f[FLOE_MAX_SETS];
    floe_target t[2 * FLOE_MAX_SETS];
    int nf, nt = 0, st;
    size_t total;

    if ((st = floe_fluid_sets(api, ctx, f, &nf, &total)) != FLOE_OK)
        return st;
    if (c->kind == VK_MONAGHAN && (st = compute_volumes(ctx, call->state, f, nf, total)) != FLOE_OK)
        return st;
    const float *vol = c->kind == VK_MONAGHAN ? ((visc_state *)call->state)->vol : NULL;
    visc_state *vs = call->state;
    const int ext = c->wall_ext && c->cb_nu != 0.0;
    if (ext && (!vs || (st = wall_velocity(ctx, vs, &kc, f, nf)) != FLOE_OK))
        return vs ? st : api->fail(ctx, FLOE_ERR, "module state missing");
    const unsigned needs = FLOE_NEED_RHO | FLOE_NEED_V | (c->cb_nu != 0.0 ? FLOE_WITH_BOUNDARY : 0);
    for (int s = 0; s < nf; s++) {
        const uint32_t n = f[s].info.n;
        if (n == 0)
            continue;
        if ((st = floe_targets(api, ctx, &f[s], f, nf, needs, vol, NULL, t, &nt)) != FLOE_OK)
            return st;
        const float *vw[2 * FLOE_MAX_SETS];
        for (int b = 0; b < nt; b++) {
            const int k = ext && t[b].boundary ? floe_walls_slot(&vs->walls, t[b].set) : -1;
            vw[b] = k >= 0 && vs->walls.is_static[k] ? vs->wv + 3 * vs->walls.off[k] : NULL;
        }
        visc_job job = {
            .kc = &kc, .t = t, .nt = nt, .n = n,
            .x = api->attr_read(ctx, f[s].set, "x", FLOE_VEC3),
            .v = api->attr_read(ctx, f[s].set, "v", FLOE_VEC3),
            .rho = api->attr_read(ctx, f[s].set, "rho", FLOE_F32),
            .a = floe_attr_of(api, ctx, &f[s], "a", FLOE_VEC3),
            .kind = c->kind,
            .cf = c->cf,
            .cb = (float)(c->cb_nu * f[s].info.rest_density), /* boundary mass rho0_i V_b */
            .eps = c->eps,
            .vw = ext ? vw : NULL,
        };
        if (!job.a)
            return FLOE_ERR_ARG;
        FLOE_PAR_FOR(kc.periodic, n, VISC_BODY);
    }
    return FLOE_OK;
}

/* ---- decoding: one visc_coef per call, for both paths --------------------- */

static int run_visc(const floe_stage_call *call, int cl, const visc_coef *c, double nu_max, double diffusion)
{
    const floe_sim_info *si = api->sim(call->ctx);
    if (diffusion > 0.0 && nu_max > 0.0)
        api->dt_limit(call->ctx, diffusion * (double)si->spacing * si->spacing / nu_max);
    if (c->cf == 0.0f && c->cb_nu == 0.0)
        return FLOE_OK;
    return cl ? visc_cl(call->ctx, c) : visc_c(call, c);
}

static visc_coef coef(const floe_stage_call *call, int kind, double cf, double cb_nu, double eps_f)
{
    const floe_sim_info *si = api->sim(call->ctx);
    const float H = floe_kernel_make(si->dim, si->support).H;
    const visc_coef c = {kind, (float)cf, cb_nu, (float)(eps_f * H * H), 0};
    return c;
}

enum { LA_NU, LA_BOUNDARY_NU, LA_FORM, LA_WALL, LA_EPS, LA_DIFFUSION };

static int laminar(const floe_stage_call *call, int cl)
{
    const floe_sim_info *si = api->sim(call->ctx);
    const double nu = call->param[LA_NU].f;
    const double nub0 = call->param[LA_BOUNDARY_NU].f < 0.0 ? nu : call->param[LA_BOUNDARY_NU].f;
    const char *form = call->param[LA_FORM].s ? call->param[LA_FORM].s : "morris";
    const char *wall = call->param[LA_WALL].s ? call->param[LA_WALL].s : "mirror";
    const double eps = call->param[LA_EPS].f, dif = call->param[LA_DIFFUSION].f;
    double nub = nub0;
    const int ext = !strcmp(wall, "extrapolated");
    if (!strcmp(wall, "mirror")) /* v_ib = v_i - v_b = 2 v_i */
        nub = 2.0 * nub0;
    else if (strcmp(wall, "zero") && !ext)
        return api->fail(call->ctx, FLOE_ERR_ARG,
                         "viscosity.laminar: wall_velocity '%s': expected zero, mirror or extrapolated", wall);
    if (ext && strcmp(form, "morris"))
        return api->fail(call->ctx, FLOE_ERR_ARG,
                         "viscosity.laminar: wall_velocity = \"extrapolated\" is built for form = \"morris\"");
    if (!strcmp(form, "morris")) { /* boundary: m_b (1/rho_i + 1/rho_b) = 2 rho0 V_b / rho_i */
        visc_coef c = coef(call, VK_MORRIS, nu, 2.0 * nub, eps);
        c.wall_ext = ext;
        return run_visc(call, cl, &c, fmax(nu, ext ? 2.0 * nub : nub), dif);
    }
    if (!strcmp(form, "monaghan")) {
        const double k = 2.0 * (si->dim + 2);
        const visc_coef c = coef(call, VK_MONAGHAN, k * nu, k * nub, eps);
        return run_visc(call, cl, &c, fmax(nu, nub), dif);
    }
    return api->fail(call->ctx, FLOE_ERR_ARG, "viscosity.laminar: form '%s': expected morris or monaghan", form);
}

enum { KI_BETA0, KI_BETA1, KI_BOUNDARY_BETA0, KI_EPS, KI_DIFFUSION };

static int kim(const floe_stage_call *call, int cl)
{
    const floe_sim_info *si = api->sim(call->ctx);
    const double b0 = call->param[KI_BETA0].f, b1 = call->param[KI_BETA1].f;
    const double b0b = call->param[KI_BOUNDARY_BETA0].f;
    const double H = si->support;
    /* sum_j m_j beta0 beta1 u_ij / ((rho_i+rho_j)/2) grad W = 2 beta0 beta1 H sum_j m_j/(rho_i+rho_j) (...) grad W;
     * boundary: rho_ib^avg = rho_i, so beta0b beta1 H / rho_i sum_b rho0 V_b (...) grad W */
    const double nu_eq = b1 * H / (2.0 * (si->dim + 2)); /* times beta0 */
    const visc_coef c = coef(call, VK_KIM, 2.0 * b0 * b1 * H, b0b * b1 * H, call->param[KI_EPS].f);
    return run_visc(call, cl, &c, fmax(b0, b0b) * nu_eq, call->param[KI_DIFFUSION].f);
}

static int st_laminar(const floe_stage_call *call) { return laminar(call, 0); }
static int st_laminar_cl(const floe_stage_call *call) { return laminar(call, 1); }
static int st_kim(const floe_stage_call *call) { return kim(call, 0); }
static int st_kim_cl(const floe_stage_call *call) { return kim(call, 1); }

/* ---- xsph: an old name of sph.xsph ---------------------------------------- */

enum { XS_ALPHA, XS_BOUNDARY_ALPHA };

/* ---- descriptors ------------------------------------------------------------ */

static const floe_attr_desc visc_attrs[] = {
    FLOE_ATTRS_FORCE,
    {0},
};

static const floe_param_desc laminar_params[] = {
    [LA_NU] = FLOE_PARAM_F("nu", 1e-6, 0, 100, "m^2/s",
        "kinematic viscosity between fluid particles (water 1e-6, glycerol 1.1e-3, honey ~7e-3)"),
    [LA_BOUNDARY_NU] = FLOE_PARAM_F("boundary_nu", -1, -1, 100, "m^2/s",
        "kinematic viscosity against boundary particles (walls at rest, no-slip); "
        "-1: same as nu, 0: free slip"),
    [LA_FORM] = FLOE_PARAM_S("form", "morris", "morris|monaghan",
        "morris: Morris et al. 1997, a_i += nu sum_j m_j (1/rho_i+1/rho_j) (x_ij.grad W_ij)/(r^2+eps H^2) v_ij "
        "(accurate on coarse neighbourhoods); monaghan: 2(d+2) nu sum_j V_j (v_ij.x_ij)/(r^2+eps H^2) grad W_ij "
        "(conserves angular momentum, ~30% low at H = 2d)"),
    [LA_WALL] = FLOE_PARAM_S("wall_velocity", "mirror", "zero|mirror|extrapolated",
        "velocity given to boundary particles of walls at rest: mirror = -v_i (Takeda 1994, Morris 1997 "
        "extrapolation with d_b = d_i: no-slip at the wall surface), zero = 0 (no-slip about a "
        "third of a spacing inside the wall), extrapolated = 2 v_w - v~_b, v~_b the kernel-weighted fluid "
        "velocity around each static wall particle (Adami et al. 2012; morris form; moving sets "
        "mirror)"),
    [LA_EPS] = FLOE_PARAM_F("eps", 0.01, 1e-6, 1, "",
        "regulariser: |x_ij|^2 + eps H^2 in the denominator (H = support radius)"),
    [LA_DIFFUSION] = FLOE_PARAM_F("diffusion_number", 0.125, 0, 10, "",
        "explicit-diffusion limit: proposes dt <= diffusion_number d^2 / max(nu, boundary_nu) "
        "(d = spacing); 0 proposes nothing"),
    {0},
};

static const floe_param_desc kim_params[] = {
    [KI_BETA0] = FLOE_PARAM_F("beta0", 0.1, 0, 100, "",
        "bulk viscosity coefficient beta0 of eq. 37 (Kim 2020: 0.1)"),
    [KI_BETA1] = FLOE_PARAM_F("beta1", 10, 0, 1e4, "m/s",
        "sound-wave speed beta1 of eq. 37/40 (Kim 2020: 10); "
        "equivalent nu = beta0 beta1 H / (2 (dim + 2))"),
    [KI_BOUNDARY_BETA0] = FLOE_PARAM_F("boundary_beta0", 1, 0, 100, "",
        "coefficient of the boundary viscosity eq. 40 (as written it has none: 1); "
        "0 switches eq. 40 off"),
    [KI_EPS] = FLOE_PARAM_F("eps", 0.01, 1e-6, 1, "",
        "regulariser of u_ij (eq. 38): |x_ij|^2 + eps H^2"),
    [KI_DIFFUSION] = FLOE_PARAM_F("diffusion_number", 0.125, 0, 10, "",
        "proposes dt <= diffusion_number d^2 / nu_eq with the equivalent viscosity "
        "nu_eq = max(beta0, boundary_beta0) beta1 H / (2 (dim + 2)); 0 proposes nothing"),
    {0},
};

static const floe_param_desc xsph_params[] = {
    [XS_ALPHA] = FLOE_PARAM_F("alpha", 0.01, 0, 1, "",
        "fraction of the relative velocity smoothed per step between fluid particles"),
    [XS_BOUNDARY_ALPHA] = FLOE_PARAM_F("boundary_alpha", 0, 0, 1, "",
        "the same against boundary particles at rest (a sticky wall); 0 = none"),
    {0},
};

static const floe_stage_desc stages[] = {
    { FLOE_SIZED(floe_stage_desc), .name = "laminar",
      .doc = "physical kinematic viscosity nu (Morris et al. 1997, or the Monaghan form), no-slip walls at rest; "
             "after 'gravity', before the pressure force/solve",
      .run = st_laminar, .run_cl = st_laminar_cl, .params = laminar_params, .attrs = visc_attrs },
    { FLOE_SIZED(floe_stage_desc), .name = "kim",
      .doc = "Kim 2020 eq. 37-39 bulk viscosity between fluid particles and eq. 40 boundary viscosity "
             "(water clings to and runs down walls); after 'gravity', before the pressure force/solve",
      .run = st_kim, .run_cl = st_kim_cl, .params = kim_params, .attrs = visc_attrs },
    { FLOE_SIZED(floe_stage_desc), .name = "xsph", .doc = "deprecated: runs sph.xsph", .params = xsph_params,
      .replaced_by = "sph.xsph" },
    {0},
};

FLOE_SPH_MODULE(viscosity, .version = "1.0.0", .stages = stages, .init = visc_init, .fini = visc_fini,
                .summary = "viscous forces added to a: laminar (Morris 1997, physical nu), Kim 2020 bulk + "
                         "boundary viscosity (eq. 37-40); for WCSPH and IISPH")
