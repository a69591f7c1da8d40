/* The fluid's forces on the bodies (C path).
 *
 * A body particle b acts on fluid particle i as the solver's boundary
 * particles do (Akinci et al. 2012). The force the solver gave the fluid,
 * m_i a_ib, is evaluated here again from the same attributes with the same
 * formula, and the body gets -m_i a_ib at x_b (Newton's third law, pair by
 * pair), so no solver changes and buoyancy comes out of the pressure:
 *
 *   wcsph  a_ib = -2 rho0 V_b (p_i / rho_i^2) grad W_ib                (wcsph.pressure_force)
 *          + on_i rho0 V_b (g.x_ib / rho_i) grad W_ib    (boundary_pressure = extrapolate)
 *   iisph  a_ib = rho0 V_b (on_i g.x_ib / rho_i - beta p_i / rho_i^2) grad W_ib
 *          (iisph.solve: beta = 2 for mirror and extrapolate, 1 for akinci;
 *           the g term with extrapolate only, on_i = p_i > 0)
 *
 * with x_ib = x_i - x_b and grad W_ib = (dW/dr / r) x_ib. wcsph's solver
 * mirrors the pressure onto every boundary particle (p_b = p_i); with
 * extrapolate the body's particles get p_b = p_i + rho_i g.(x_b - x_i)
 * (Adami et al. 2012, the hydrostatic part, where p_i > 0): the second
 * term, which the solver does not have, is added to the fluid's a here
 * (the opposite to the body, with the rest). Mirrored, a body feels the
 * pressure of its first fluid row's centre, d/2 below its surface: rho0 g
 * d/2 too much, which lifts a floating box by about d/2 (docs/rigid.md,
 * "Archimedes"). The viscous
 * coupling is the module's own (rigid.viscosity), Monaghan's artificial
 * viscosity against a particle moving with the body, as wcsph's boundary
 * term with v_b:
 *
 *   a_ib = 2 alpha H c rho0 V_b min(v_ib . x_ib, 0) / (2 rho_i (r^2 + 0.01 H^2)) grad W_ib
 *
 * added to the fluid here, the opposite to the body. rigid.force{alpha}
 * evaluates it in the pressure's pass (one walk of the rows instead of two;
 * the fluid's a gets the same terms, added after the solver's instead of
 * before).
 *
 * Sums: the fluid particles are cut into fixed chunks; each chunk sums its
 * pairs per body in order (double), the chunks run in parallel and are
 * added in order, so the result does not depend on the threads. */
#include "rigid.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK 2048

/* per-chunk per-body sums (F, T): nchunks * nb * 6 doubles */
static double *chunk_sums(rigid_state *s, size_t nchunks)
{
    const size_t need = nchunks * (size_t)s->nb * 6;
    if (need > s->part_cap) {
        double *p = realloc(s->part, need * sizeof *p);
        if (!p)
            return NULL;
        s->part = p;
        s->part_cap = need;
    }
    memset(s->part, 0, need * sizeof *s->part);
    return s->part;
}

typedef struct pass {
    int kind;                   /* 0 pressure (wcsph), 1 pressure (iisph), 2 viscosity */
    int visc;                   /* kinds 0, 1: the viscosity in the same pass (rigid.force{alpha}) */
    float beta, hyd, cvisc, eps;
    float g[3];
    int sums_only;              /* the bodies' sums only, the fluid's a left alone (attached particles) */
} pass;

/* tg: the particles the forces act on (NULL: the bodies' own set); a
 * particle whose body index is nb or more is skipped */
static int run_pass(rigid_state *s, const pass *ps, const rigid_target *tg, double *F, double *T)
{
    floe_ctx *ctx = s->ctx;
    const floe_sim_info *si = api->sim(ctx);
    const floe_kconst kc = floe_kconst_make(si);
    floe_fluid f[FLOE_MAX_SETS];
    int nf, st;
    if ((st = floe_fluid_sets(api, ctx, f, &nf, NULL)) != FLOE_OK)
        return st;
    const floe_set tset = tg ? tg->set : s->set;
    const float *xb = tg ? tg->x : api->attr(ctx, s->set, "x", FLOE_VEC3);
    const float *Vb = tg ? tg->V : api->attr(ctx, s->set, "V", FLOE_F32);
    const float *vb = tg ? tg->x : api->attr(ctx, s->set, "v", FLOE_VEC3); /* tg: no viscosity, unread */
    const uint32_t *bid = tg ? tg->body : api->attr(ctx, s->set, "body", FLOE_U32);
    if (!xb || !Vb || !vb || !bid)
        return api->fail(ctx, FLOE_ERR, "set '%s' lacks x, V, v or body", RIGID_SET);
    const int nb = s->nb;
    double *cen = malloc((size_t)nb * 3 * sizeof *cen);
    if (!cen)
        return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory");
    for (int k = 0; k < nb; k++)
        memcpy(cen + 3 * k, s->b[k].x, sizeof s->b[k].x);
    for (int q = 0; q < nf && !st; q++) {
        /* MPI: the owned particles (a ghost's pairs are its owner's) */
        const uint32_t n = floe_owned(api, ctx, f[q].set, f[q].info.n);
        if (n == 0)
            continue;
        const floe_nlist *nl = api->neighbours(ctx, f[q].set, tset);
        if (!nl || nl->n < n) {
            st = api->fail(ctx, FLOE_ERR_ARG, "no neighbour lists of set '%s' in '%s' (run 'neighbours' first)",
                           f[q].info.name, tg ? tg->name : RIGID_SET);
            break;
        }
        const float *x = floe_attr_of(api, ctx, &f[q], "x", FLOE_VEC3);
        const float *m = floe_attr_of(api, ctx, &f[q], "m", FLOE_F32);
        const float *rho = floe_attr_of(api, ctx, &f[q], "rho", FLOE_F32);
        const float *p = ps->kind != 2 ? floe_attr_of(api, ctx, &f[q], "p", FLOE_F32) : NULL;
        const int visc = ps->kind == 2 || ps->visc;
        const int hydf = ps->kind == 0 && ps->hyd != 0.0f; /* wcsph extrapolate: the fluid's share too */
        const float *v = visc ? floe_attr_of(api, ctx, &f[q], "v", FLOE_VEC3) : NULL;
        const int wa = (visc || hydf) && !ps->sums_only; /* the fluid's a gets its share */
        float *a = wa ? floe_attr_of(api, ctx, &f[q], "a", FLOE_VEC3) : NULL;
        if (!x || !m || !rho || (ps->kind != 2 && !p) || (visc && !v) || (wa && !a)) {
            st = FLOE_ERR_ARG;
            break;
        }
        const float rho0 = f[q].info.rest_density;
        const size_t nch = (n + CHUNK - 1) / CHUNK;
        double *acc = chunk_sums(s, nch);
        if (!acc) {
            st = api->fail(ctx, FLOE_ERR_NOMEM, "out of memory (%zu chunks of %d bodies)", nch, nb);
            break;
        }
#pragma omp parallel for schedule(dynamic, 1) if (nch > 1)
        for (size_t c = 0; c < nch; c++) {
            double *ac = acc + c * (size_t)nb * 6;
            const uint32_t i1 = (uint32_t)((c + 1) * CHUNK < n ? (c + 1) * CHUNK : n);
            for (uint32_t i = (uint32_t)(c * CHUNK); i < i1; i++) {
                const uint32_t cnt = nl->count[i];
                if (!cnt)
                    continue;
                const uint32_t *row = nl->idx + (size_t)i * nl->stride;
                const float xi = x[3 * i], yi = x[3 * i + 1], zi = x[3 * i + 2];
                /* the factor of V_b (dW/dr / r) x_ib in a_ib, common to the row */
                float fi = 0.0f, on = 0.0f, irho = 1.0f / rho[i];
                const float fv = visc ? ps->cvisc * rho0 * 0.5f * irho : 0.0f;
                if (ps->kind == 0) {
                    fi = -2.0f * rho0 * (p[i] / (rho[i] * rho[i]));
                    on = hydf && p[i] > 0.0f ? rho0 * irho : 0.0f;
                } else if (ps->kind == 1) {
                    fi = -ps->beta * rho0 * (p[i] / (rho[i] * rho[i]));
                    on = ps->hyd != 0.0f && p[i] > 0.0f ? rho0 * irho : 0.0f;
                }
                float ai[3] = {0.0f, 0.0f, 0.0f};
                for (uint32_t k = 0; k < cnt; k++) {
                    const uint32_t j = row[k];
                    if (bid[j] >= (uint32_t)nb)
                        continue;
                    float dd[3] = {xi - xb[3 * j], yi - xb[3 * j + 1], zi - xb[3 * j + 2]};
                    if (si->periodic)
                        floe_periodic_delta(si, dd);
                    const float r2 = dd[0] * dd[0] + dd[1] * dd[1] + dd[2] * dd[2];
                    const float w = Vb[j] * floe_kdw(&kc, r2);
                    /* gv: the viscous factor (on the fluid and the body),
                     * gp: the pressure factor (the body; the solver gave
                     * the fluid its share but gh, wcsph's extrapolated part) */
                    float gp = 0.0f, gv = 0.0f, gh = 0.0f;
                    if (visc) {
                        const float vx = (v[3 * i] - vb[3 * j]) * dd[0] + (v[3 * i + 1] - vb[3 * j + 1]) * dd[1] +
                                         (v[3 * i + 2] - vb[3 * j + 2]) * dd[2];
                        gv = w * (fv * floe_neg(vx) / (r2 + ps->eps));
                    }
                    if (ps->kind == 1)
                        gp = w * (fi + on * (ps->g[0] * dd[0] + ps->g[1] * dd[1] + ps->g[2] * dd[2]));
                    else if (ps->kind == 0) {
                        gh = w * (on * (ps->g[0] * dd[0] + ps->g[1] * dd[1] + ps->g[2] * dd[2]));
                        gp = w * fi + gh;
                    }
                    const float g = ps->kind == 2 ? gv : ps->visc ? gp + gv : gp;
                    const float aib[3] = {g * dd[0], g * dd[1], g * dd[2]};
                    const float gf = gv + gh; /* the fluid's share */
                    ai[0] += gf * dd[0], ai[1] += gf * dd[1], ai[2] += gf * dd[2];
                    /* the body: -m_i a_ib at x_b */
                    const double fb[3] = {-(double)m[i] * aib[0], -(double)m[i] * aib[1], -(double)m[i] * aib[2]};
                    const uint32_t o = bid[j];
                    const double *cb = cen + 3 * o;
                    const double r[3] = {xb[3 * j] - cb[0], xb[3 * j + 1] - cb[1], xb[3 * j + 2] - cb[2]};
                    double *A = ac + 6 * (size_t)o;
                    A[0] += fb[0], A[1] += fb[1], A[2] += fb[2];
                    A[3] += r[1] * fb[2] - r[2] * fb[1];
                    A[4] += r[2] * fb[0] - r[0] * fb[2];
                    A[5] += r[0] * fb[1] - r[1] * fb[0];
                }
                if (a) {
                    a[3 * i] += ai[0];
                    a[3 * i + 1] += ai[1];
                    a[3 * i + 2] += ai[2];
                }
            }
        }
        for (size_t c = 0; c < nch; c++)
            for (int k = 0; k < nb; k++) {
                const double *A = acc + (c * (size_t)nb + k) * 6;
                for (int d = 0; d < 3; d++) {
                    F[3 * k + d] += A[d];
                    T[3 * k + d] += A[3 + d];
                }
            }
    }
    free(cen);
    return st;
}

static int add_into(rigid_state *s, const pass *ps, int viscous)
{
    double *F = calloc((size_t)s->nb * 6, sizeof *F);
    if (!F)
        return api->fail(s->ctx, FLOE_ERR_NOMEM, "out of memory");
    int st = run_pass(s, ps, NULL, F, F + 3 * (size_t)s->nb);
    for (int k = 0; k < s->nb && !st; k++) {
        rigid_body *b = &s->b[k];
        double *dF = viscous ? b->Fv : b->F, *dT = viscous ? b->Tv : b->T;
        for (int d = 0; d < 3; d++) {
            dF[d] += F[3 * k + d];
            dT[d] += F[3 * (size_t)s->nb + 3 * k + d];
        }
    }
    free(F);
    return st;
}

static pass make_pass(rigid_state *s, int kind, const rigid_couple *c, double alpha, double c0)
{
    const floe_sim_info *si = api->sim(s->ctx);
    const float H = si->support;
    if (kind != 2 && c && c->alpha > 0.0) /* rigid.force{alpha}: the viscosity in the pressure's pass */
        alpha = c->alpha, c0 = c->c0;
    pass ps = {.kind = kind, .visc = kind != 2 && c && c->alpha > 0.0, .beta = c ? c->beta : 2.0f,
               .hyd = c ? (float)c->hyd : 0.0f, .cvisc = (float)(2.0 * alpha * H * c0), .eps = 0.01f * H * H};
    memcpy(ps.g, si->gravity, sizeof ps.g);
    return ps;
}

/* this step's force: the pressure part comes now, the viscous part was kept */
void rigid_couple_begin(rigid_state *s)
{
    for (int k = 0; k < s->nb; k++) {
        memcpy(s->b[k].F, s->b[k].Fv, sizeof s->b[k].F);
        memcpy(s->b[k].T, s->b[k].Tv, sizeof s->b[k].T);
        memset(s->b[k].Fv, 0, sizeof s->b[k].Fv);
        memset(s->b[k].Tv, 0, sizeof s->b[k].Tv);
    }
}

int rigid_couple_pressure(rigid_state *s, const rigid_couple *c)
{
    rigid_couple_begin(s);
    const pass ps = make_pass(s, c->solver == RIGID_IISPH ? 1 : 0, c, 0.0, 0.0);
    return add_into(s, &ps, 0);
}

int rigid_couple_viscosity(rigid_state *s, double alpha, double c0)
{
    const pass ps = make_pass(s, 2, NULL, alpha, c0);
    return add_into(s, &ps, 1);
}

/* the pressure forces of the fluid on particles attached to the bodies
 * (attach.c): the solver's boundary formula, as on the bodies' own
 * particles, mirrored for wcsph (its wall term, which the fluid got: the
 * module adds nothing to the fluid for them); the viscous coupling is left
 * to the solver's wall terms */
int rigid_sums_attached(rigid_state *s, const rigid_couple *c, const rigid_target *tg, double *F, double *T)
{
    rigid_couple cp = *c;
    cp.alpha = 0.0;
    if (c->solver == RIGID_WCSPH)
        cp.hyd = 0;
    pass ps = make_pass(s, c->solver == RIGID_IISPH ? 1 : 0, &cp, 0.0, 0.0);
    ps.sums_only = 1;
    return run_pass(s, &ps, tg, F, T);
}
