/* Kim 2020 sec. 3.2.3: the freezing coefficient (eq. 31), the nucleation
 * energy (eq. 32) and the phase change water -> ice: glaze where a fluid
 * particle's energy against a cold solid passes gz_th, icicles where its
 * energy against ice passes ic_th. */
#include "freeze.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


/* eq. 31: fr from the unit growth direction gh (zero: no flow) and the unit
 * vector u from the solid or ice particle to the fluid particle */
static inline float freezing_coeff(int mode, const float gh[3], const float u[3])
{
    if (mode == FR_NONE)
        return 1.0f;
    float dot = gh[0] * u[0] + gh[1] * u[1] + gh[2] * u[2];
    return mode == FR_RESCALED ? 0.5f * (dot + 1.0f) : fmaxf(dot, 0.0f);
}

/* A growth direction is gv / |gv|: where |gv| is at the level of the
 * velocities a resting SPH fluid makes by itself, the direction is noise at
 * full weight (measured on the ledge: water resting on its ice freezes
 * layer on layer upward, docs/freezing.md). sqrt(|g| d) is that speed
 * scale and keeps the threshold where it is when a scene is scaled (Froude
 * similarity). */
float fz_min_flow(const floe_stage_call *c)
{
    const floe_sim_info *si = api->sim(c->ctx);
    const double g = sqrt(si->gravity[0] * si->gravity[0] + si->gravity[1] * si->gravity[1] +
                          si->gravity[2] * si->gravity[2]);
    return (float)fmax(c->param[TR_MIN_SPEED].f, c->param[TR_MIN_FROUDE].f * sqrt(g * si->spacing));
}

int fz_fr_mode(const char *s)
{
    return strcmp(s, "clamped") == 0 ? FR_CLAMPED : strcmp(s, "none") == 0 ? FR_NONE : FR_RESCALED;
}

int fz_transition(const floe_stage_call *c)
{
    floe_ctx *ctx = c->ctx;
    fz_state *s = c->state;
    const floe_sim_info *si = api->sim(ctx);
    fz_parts *p = &s->p;
    if (!s->film_ok || s->film_step != si->step)
        return api->fail(ctx, FLOE_ERR_ARG, "%s needs freeze.film before it in the same step", c->name);
    if (!s->g_valid || s->g_step != si->step || s->g_nf != p->nf)
        return api->fail(ctx, FLOE_ERR_ARG, "%s needs freeze.direction before it in the same step", c->name);
    const float gz = (float)c->param[TR_GLAZE].f, ic = (float)c->param[TR_ICICLE].f;
    const int mode = fz_fr_mode(c->param[TR_FR].s);
    const float vmin = fz_min_flow(c);
    const float H = si->support;
    /* Gamma and the unit growth direction of every frost particle, concatenated */
    float *gam = malloc(((size_t)p->nb + 1) * sizeof *gam), *gh = malloc(((size_t)p->nb + 1) * 3 * sizeof *gh);
    uint8_t *freeze = calloc((size_t)p->nf + 1, 1);
    float *dir = malloc(((size_t)p->nf + 1) * 3 * sizeof *dir);
    int32_t *kind = calloc((size_t)p->nf + 1, sizeof *kind);
    int st = FLOE_OK;
    if (!gam || !gh || !freeze || !dir || !kind)
        st = api->fail(ctx, FLOE_ERR_NOMEM, "out of memory for %u particles", p->nf);
    for (int k = 0; k < p->nbs && !st; k++) {
        if (!p->bn[k])
            continue;
        floe_set_info in;
        api->set_info(ctx, p->bset[k], &in);
        const float *g = floe_need(api, ctx, p->bset[k], in.name, "Gamma", FLOE_F32, &st);
        const float *gv = floe_need(api, ctx, p->bset[k], in.name, "gv", FLOE_VEC3, &st);
        if (st)
            break;
        memcpy(gam + p->boff[k], g, p->bn[k] * sizeof *g);
        for (uint32_t i = 0; i < p->bn[k]; i++) {
            const float *v = &gv[3 * (size_t)i];
            float n = sqrtf(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
            float *o = &gh[3 * ((size_t)p->boff[k] + i)];
            for (int a = 0; a < 3; a++)
                o[a] = n > 0 && n >= vmin ? v[a] / n : 0.0f; /* slower: no direction */
        }
    }
    const uint32_t ice0 = p->nb - p->nice; /* frost index where the ice set starts */
    double ce_max = 0;
    int fail = 0;
    if (!st) {
#pragma omp parallel for schedule(dynamic, 256) reduction(| : fail) reduction(max : ce_max)
        for (uint32_t j = 0; j < p->nf; j++) {
            if (!s->near[j])
                continue;
            const float *xj = &p->xf[3 * (size_t)j];
            uint32_t m = 0;
            const uint32_t *b = fz_query(s, &s->gb, xj, H, UINT32_MAX, &m);
            if (!b) {
                fail = 1;
                continue;
            }
            float best[2] = {0, 0}; /* eq. 32 against solid, against ice */
            uint32_t arg[2] = {UINT32_MAX, UINT32_MAX};
            for (uint32_t q = 0; q < m; q++) {
                const uint32_t i = b[q];
                const float *xi = &p->xb[3 * (size_t)i];
                float r[3] = {xi[0] - xj[0], xi[1] - xj[1], xi[2] - xj[2]};
                float len = sqrtf(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
                float u[3] = {0, 0, 0};
                if (len > 0)
                    for (int a = 0; a < 3; a++)
                        u[a] = -r[a] / len; /* from the solid/ice towards the fluid */
                float fr = freezing_coeff(mode, &gh[3 * (size_t)i], u);
                float ce = gam[i] * fr * fz_wa(s->G + 9 * (size_t)j, r, si->dim);
                int t = i >= ice0;
                if (ce > best[t]) {
                    best[t] = ce;
                    arg[t] = i;
                }
            }
            ce_max = fmax(ce_max, fmax(best[0], best[1]));
            /* glaze against a solid, icicle against ice; both: the larger excess */
            float xs = gz > 0 ? best[0] / gz : (best[0] > 0 ? INFINITY : 0);
            float xc = ic > 0 ? best[1] / ic : (best[1] > 0 ? INFINITY : 0);
            int t = -1;
            if (best[0] > gz && (best[1] <= ic || xs >= xc))
                t = 0;
            else if (best[1] > ic)
                t = 1;
            if (t < 0)
                continue;
            freeze[j] = 1;
            kind[j] = t == 0 ? ICE_GLAZE : ICE_ICICLE;
            const float *xp = &p->xb[3 * (size_t)arg[t]];
            float d[3] = {xj[0] - xp[0], xj[1] - xp[1], xj[2] - xp[2]};
            float n = sqrtf(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
            for (int a = 0; a < 3; a++)
                dir[3 * (size_t)j + a] = n > 0 ? d[a] / n : 0.0f;
        }
        if (fail)
            st = api->fail(ctx, FLOE_ERR_NOMEM, "out of memory for the neighbour queries");
    }
    long moved = 0;
    if (!st) {
        moved = fz_move_to_ice(ctx, s, freeze, dir, kind, NULL);
        if (moved < 0)
            st = (int)moved;
    }
    if (!st) {
        floe_set_info ii;
        api->set_info(ctx, p->ice, &ii);
        api->stat(ctx, "frozen", (double)moved);
        api->stat(ctx, "ice", (double)ii.n);
        api->stat(ctx, "ce_max", ce_max);
    }
    s->g_valid = 0; /* the fluid changed */
    s->film_ok = 0;
    free(gam);
    free(gh);
    free(freeze);
    free(dir);
    free(kind);
    return st;
}
