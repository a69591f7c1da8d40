/* Beyond Kim 2020 (his future work): freezing by heat transfer. SPH heat
 * conduction in Cleary & Monaghan's form (J. Comput. Phys. 148, 1999),
 *
 *   dh_a/dt = 4/rho0 sum_b V_b k_a k_b / (k_a + k_b) (T_a - T_b)
 *                  (x_ab . grad_a W_ab) / (r_ab^2 + eta^2),
 *
 * between water, ice and cold solid particles, with the enthalpy method for
 * the latent heat: h (J/kg) is 0 for ice at 0 C,
 *
 *   T = h / c_ice (h < 0),  0 (0 <= h <= L),  (h - L) / c_water (h > L),
 *
 * liquid fraction clamp(h / L, 0, 1). A fluid particle whose h reaches 0
 * (all its latent heat gone) moves to the ice set, keeping its h. Solid
 * particles hold T_solid (an object kept below 0 C). */
#include "freeze.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { TH_COLD, TH_ICE, TH_TSOLID, TH_TWATER, TH_KW, TH_KI, TH_KS, TH_CW, TH_CI, TH_L };

typedef struct mat {
    float kw, ki, ks, cw, ci, L;
} mat;

static inline float temp_of(const mat *m, float h)
{
    return h < 0 ? h / m->ci : h > m->L ? (h - m->L) / m->cw : 0.0f;
}

static inline float cond_of(const mat *m, float h)
{
    float f = fminf(fmaxf(h / m->L, 0.0f), 1.0f);
    return m->ki + f * (m->kw - m->ki);
}

int fz_thermal(const floe_stage_call *c)
{
    floe_ctx *ctx = c->ctx;
    fz_state *s = c->state;
    const floe_sim_info *si = api->sim(ctx);
    const floe_value *pv = c->param;
    int st = fz_gather(ctx, s, pv[TH_COLD].s, pv[TH_ICE].s);
    if (st)
        return st;
    s->film_ok = 0;
    s->g_valid = 0;
    fz_parts *p = &s->p;
    const mat mt = {(float)pv[TH_KW].f, (float)pv[TH_KI].f, (float)pv[TH_KS].f,
                    (float)pv[TH_CW].f, (float)pv[TH_CI].f, (float)pv[TH_L].f};
    const float Ts = (float)pv[TH_TSOLID].f;
    /* rest density: the first fluid set's (volumes m / rho0 of water and ice) */
    float rho0 = 1000.0f;
    floe_set fl[FLOE_MAX_SETS];
    int nfl = api->set_list(ctx, FLOE_SET_FLUID, fl, FLOE_MAX_SETS);
    for (int k = 0; k < nfl && k < FLOE_MAX_SETS; k++) {
        floe_set_info in;
        if (api->set_info(ctx, fl[k], &in) == FLOE_OK && in.rest_density > 0) {
            rho0 = in.rest_density;
            break;
        }
    }
    /* enthalpy, mass and temperature of every particle: fluid, then frost */
    const uint32_t nf = p->nf, nb = p->nb, ice0 = p->nb - p->nice;
    float *h = malloc(((size_t)nf + nb + 1) * sizeof *h), *T = malloc(((size_t)nf + nb + 1) * sizeof *T);
    float *mb = malloc(((size_t)nb + 1) * sizeof *mb), *dh = malloc(((size_t)nf + nb + 1) * sizeof *dh);
    if (!h || !T || !mb || !dh)
        st = api->fail(ctx, FLOE_ERR_NOMEM, "out of memory for %u particles", nf + nb);
    const float h_water = mt.L + mt.cw * (float)pv[TH_TWATER].f, h_solid = mt.ci * Ts;
    for (int k = 0; k < p->nfs && !st; k++) {
        floe_set_info in;
        api->set_info(ctx, p->fset[k], &in);
        float *hf = fz_attr(ctx, p->fset[k], in.name, "h", FLOE_F32, &st);
        if (st)
            break;
        if (!s->thermal_started)
            for (uint32_t i = 0; i < p->fn[k]; i++)
                hf[i] = h_water;
        if (p->fn[k])
            memcpy(h + p->foff[k], hf, p->fn[k] * sizeof *h);
    }
    for (int k = 0; k < p->nbs && !st; k++) {
        floe_set_info in;
        api->set_info(ctx, p->bset[k], &in);
        const uint32_t o = nf + p->boff[k];
        if (p->bset[k].id != p->ice.id) { /* a cold solid: held at T_solid */
            for (uint32_t i = 0; i < p->bn[k]; i++)
                h[o + i] = h_solid, mb[p->boff[k] + i] = 0;
            continue;
        }
        float *hi = fz_attr(ctx, p->bset[k], in.name, "h", FLOE_F32, &st);
        const float *mi = floe_need(api, ctx, p->bset[k], in.name, "m", FLOE_F32, &st);
        if (st)
            break;
        if (!s->thermal_started) /* ice the scene made: at the solid's temperature */
            for (uint32_t i = 0; i < p->bn[k]; i++)
                hi[i] = h_solid;
        if (p->bn[k]) {
            memcpy(h + o, hi, p->bn[k] * sizeof *h);
            memcpy(mb + p->boff[k], mi, p->bn[k] * sizeof *mb);
        }
    }
    s->thermal_started = 1;
    if (!st)
        for (uint32_t a = 0; a < nf + nb; a++)
            T[a] = a >= nf && a - nf < ice0 ? Ts : temp_of(&mt, h[a]);
    const float H = si->support, eta2 = 0.01f * (0.5f * H) * (0.5f * H);
    const floe_kernel kern = floe_kernel_make(si->dim, H);
    int fail = 0;
    if (!st) {
#pragma omp parallel for schedule(dynamic, 256) reduction(| : fail)
        for (uint32_t a = 0; a < nf + nb; a++) {
            dh[a] = 0;
            const int solid = a >= nf && a - nf < ice0;
            if (solid)
                continue;
            const float *xa = a < nf ? &p->xf[3 * (size_t)a] : &p->xb[3 * (size_t)(a - nf)];
            const float ka = cond_of(&mt, h[a]);
            double sum = 0;
            for (int g = 0; g < 2; g++) { /* fluid neighbours, then frost */
                uint32_t self = (g == 0) == (a < nf) ? (a < nf ? a : a - nf) : UINT32_MAX;
                uint32_t m = 0;
                const uint32_t *nbr = fz_query(s, g == 0 ? &s->gf : &s->gb, xa, H, self, &m);
                if (!nbr) {
                    fail = 1;
                    break;
                }
                for (uint32_t q = 0; q < m; q++) {
                    const uint32_t j = nbr[q], b = g == 0 ? j : nf + j;
                    const float *xb = g == 0 ? &p->xf[3 * (size_t)j] : &p->xb[3 * (size_t)j];
                    float d[3] = {xa[0] - xb[0], xa[1] - xb[1], xa[2] - xb[2]};
                    float r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2], r = sqrtf(r2);
                    float Vb, kb;
                    if (g == 0)
                        Vb = p->mf[j] / rho0, kb = cond_of(&mt, h[b]);
                    else if (j < ice0)
                        Vb = p->Vb[j], kb = mt.ks;
                    else
                        Vb = mb[j] / rho0, kb = cond_of(&mt, h[b]);
                    float xdw = r2 * floe_kernel_dw_r(&kern, r); /* x_ab . grad_a W_ab */
                    sum += (double)Vb * (ka * kb / (ka + kb)) * (T[a] - T[b]) * xdw / (r2 + eta2);
                }
            }
            dh[a] = (float)(4.0 * sum / rho0);
        }
        if (fail)
            st = api->fail(ctx, FLOE_ERR_NOMEM, "out of memory for the neighbour queries");
    }
    /* explicit step; the fluid that has given all its latent heat freezes */
    uint8_t *freeze = calloc((size_t)nf + 1, 1);
    int32_t *kind = malloc(((size_t)nf + 1) * sizeof *kind);
    if (!st && (!freeze || !kind))
        st = api->fail(ctx, FLOE_ERR_NOMEM, "out of memory");
    const float dt = (float)si->dt;
    double liquid = 0;
    for (uint32_t a = 0; a < nf + nb && !st; a++)
        h[a] += dt * dh[a];
    for (int k = 0; k < p->nfs && !st; k++) {
        floe_set_info in;
        api->set_info(ctx, p->fset[k], &in);
        float *hf = fz_attr(ctx, p->fset[k], in.name, "h", FLOE_F32, &st);
        float *Tf = fz_attr(ctx, p->fset[k], in.name, "T", FLOE_F32, &st);
        if (st)
            break;
        for (uint32_t i = 0; i < p->fn[k]; i++) {
            uint32_t a = p->foff[k] + i;
            hf[i] = h[a];
            Tf[i] = temp_of(&mt, h[a]);
            liquid += fminf(fmaxf(h[a] / mt.L, 0.0f), 1.0f);
            freeze[a] = h[a] <= 0.0f;
            kind[a] = ICE_THERMAL;
        }
    }
    for (int k = 0; k < p->nbs && !st; k++) {
        floe_set_info in;
        api->set_info(ctx, p->bset[k], &in);
        float *Tb = fz_attr(ctx, p->bset[k], in.name, "T", FLOE_F32, &st);
        float *hb = fz_attr(ctx, p->bset[k], in.name, "h", FLOE_F32, &st);
        if (st)
            break;
        for (uint32_t i = 0; i < p->bn[k]; i++) {
            uint32_t a = nf + p->boff[k] + i;
            hb[i] = h[a];
            Tb[i] = T[a] = p->bset[k].id == p->ice.id ? temp_of(&mt, h[a]) : Ts;
        }
    }
    long moved = 0;
    if (!st && (moved = fz_move_to_ice(ctx, s, freeze, NULL, kind, h)) < 0)
        st = (int)moved;
    if (!st) {
        floe_set_info ii;
        api->set_info(ctx, p->ice, &ii);
        api->stat(ctx, "frozen", (double)moved);
        api->stat(ctx, "ice", (double)ii.n);
        api->stat(ctx, "liquid_fraction", nf ? liquid / nf : 0.0);
    }
    free(h);
    free(T);
    free(mb);
    free(dh);
    free(freeze);
    free(kind);
    return st;
}
