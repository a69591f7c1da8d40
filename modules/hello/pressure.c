/* Floe module "hello", stage "pressure": the smallest SPH fluid solver,
 * written on the kit (<floe/sph.h>) as the template for a new one
 * (docs/modules.md walks through it). With the shared stages it makes a
 * whole weakly compressible solver:
 *   neighbours, sph.density, gravity, hello.pressure, integrate
 *
 *   p_i  = c^2 max(rho_i - rho0, 0)                       (linear equation of state)
 *   a_i -= sum_j m_j (p_i / rho_i^2 + p_j / rho_j^2) grad W_ij
 *        + sum_b rho0 V_b 2 p_i / rho_i^2 grad W_ib        (Akinci 2012 walls)
 *
 * j runs over the neighbours in every fluid set, b over those in every
 * boundary set (a boundary particle is fluid of mass rho0 V_b whose pressure
 * mirrors p_i). The kit brings the rest: the sets, their neighbour rows,
 * the kernel and its constants, the minimum image on periodic axes. */
#include "hello.h"

#include <floe/sph.h>

FLOE_MODULE_API_EXTERN; /* hello.c's api (<floe/sph.h>) */

/* s += sum_j m_j (Pi + p_j / rho_j^2) grad W_ij over one row (<floe/sph.h>:
 * argument order, `per`; the kit walks the row, j is the neighbour) */
FLOE_ROW_FN void row_pressure(const floe_kconst *kc, const uint32_t *restrict id, uint32_t cnt,
                              const float *restrict xt, const float *restrict m, const float *restrict p,
                              const float *restrict rho, float Pi, float xi, float yi, float zi, float s[3],
                              const int per)
{
    FLOE_ROW_GRAD_SUM(s, m[j] * (Pi + p[j] / (rho[j] * rho[j])));
}

/* the force on fluid set fs from its targets t[0..nt), whose pressures are pt */
static int force(floe_ctx *ctx, const floe_kconst *pkc, const floe_fluid *fs, const floe_target *t, int nt,
                 const float *const *pt)
{
    const floe_kconst kc = *pkc;
    const uint32_t n = fs->info.n;
    const float *restrict x = floe_read_of(api, ctx, fs, "x", FLOE_VEC3);
    const float *restrict rho = floe_read_of(api, ctx, fs, "rho", FLOE_F32);
    const float *restrict p = floe_read_of(api, ctx, fs, "p", FLOE_F32);
    float *restrict a = floe_attr_of(api, ctx, fs, "a", FLOE_VEC3);
    const float rho0 = fs->info.rest_density;
    if (!x || !rho || !p || !a)
        return FLOE_ERR_ARG; /* the message names the set */
#pragma omp parallel for schedule(static)
    for (uint32_t i = 0; i < n; i++) {
        floe_prefetch_rows(t, nt, i, n);
        const float xi = x[3 * i], yi = x[3 * i + 1], zi = x[3 * i + 2];
        const float Pi = p[i] / (rho[i] * rho[i]);
        float af[3] = {0.0f, 0.0f, 0.0f}, ab[3] = {0.0f, 0.0f, 0.0f};
        for (int b = 0; b < nt; b++) {
            const floe_target *tg = &t[b];
            if (tg->boundary) /* sum_b V_b grad W_ib */
                FLOE_ROW_CALL(kc.periodic, floe_row_grad, &kc, FLOE_ROW(tg, i), tg->x, tg->mass, xi, yi, zi, ab);
            else
                FLOE_ROW_CALL(kc.periodic, row_pressure, &kc, FLOE_ROW(tg, i), tg->x, tg->mass, pt[b], tg->rho, Pi,
                              xi, yi, zi, af);
        }
        const float cb = 2.0f * rho0 * Pi; /* rho0 V_b (P_i + P_b), P_b = P_i */
        for (int d = 0; d < 3; d++)
            a[3 * i + d] -= af[d] + cb * ab[d];
    }
    return FLOE_OK;
}

int hello_pressure(const floe_stage_call *call)
{
    floe_ctx *ctx = call->ctx;
    const floe_sim_info *si = api->sim(ctx);
    const floe_kconst kc = floe_kconst_make(si);
    const double c = call->param[HELLO_PRESSURE_SPEED].f;
    const float c2 = (float)(c * c);
    floe_fluid f[FLOE_MAX_SETS];
    floe_target t[2 * FLOE_MAX_SETS];
    const float *pt[2 * FLOE_MAX_SETS];
    int nf, nt = 0, st;

    if ((st = floe_fluid_sets(api, ctx, f, &nf, NULL)) != FLOE_OK)
        return st;
    for (int s = 0; s < nf; s++) { /* 1. every set's pressure: its neighbours in the others read it */
        const float *restrict rho = floe_read_of(api, ctx, &f[s], "rho", FLOE_F32);
        float *restrict p = floe_attr_of(api, ctx, &f[s], "p", FLOE_F32);
        const float rho0 = f[s].info.rest_density;
        if (!rho || !p)
            return FLOE_ERR_ARG;
#pragma omp parallel for schedule(static)
        for (uint32_t i = 0; i < f[s].info.n; i++)
            p[i] = rho[i] > rho0 ? c2 * (rho[i] - rho0) : 0.0f;
    }
    for (int s = 0; s < nf; s++) { /* 2. the force */
        if (f[s].info.n == 0)
            continue;
        if ((st = floe_targets(api, ctx, &f[s], f, nf, FLOE_NEED_RHO | FLOE_WITH_BOUNDARY, NULL, NULL, t, &nt)))
            return st;
        for (int b = 0; b < nt; b++)
            pt[b] = t[b].boundary ? NULL : api->attr_read(ctx, t[b].set, "p", FLOE_F32);
        if ((st = force(ctx, &kc, &f[s], t, nt, pt)))
            return st;
    }
    api->dt_limit(ctx, 0.4 * si->spacing / c); /* acoustic CFL: dt <= 0.4 d / c */
    return FLOE_OK;
}
