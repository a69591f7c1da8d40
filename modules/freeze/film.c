/* Kim 2020 sec. 3.2.1-3.2.2: the virtual water film (eq. 25), the fluid's
 * anisotropic kernels (eqs. 27-30) and the growth direction (eq. 26). */
#include "freeze.h"

#include <floe/anisotropy.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

float fz_wa(const float G[9], const float r[3], int dim)
{
    float g[3];
    for (int a = 0; a < 3; a++)
        g[a] = G[3 * a] * r[0] + G[3 * a + 1] * r[1] + G[3 * a + 2] * r[2];
    const float q = sqrtf(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]);
    floe_kernel unit = floe_kernel_make(dim, 1.0f);
    float det = dim == 2 ? G[0] * G[4] - G[1] * G[3]
                         : G[0] * (G[4] * G[8] - G[5] * G[7]) - G[1] * (G[3] * G[8] - G[5] * G[6]) +
                               G[2] * (G[3] * G[7] - G[4] * G[6]);
    return fabsf(det) * floe_kernel_w(&unit, q);
}

static void iso(float G[9], float H)
{
    memset(G, 0, 9 * sizeof *G);
    G[0] = G[4] = G[8] = 1.0f / H;
}

int fz_kernels(floe_ctx *ctx, fz_state *s, int aniso, float kr, int n_min)
{
    const floe_sim_info *si = api->sim(ctx);
    fz_parts *p = &s->p;
    if (p->nf > s->capG) {
        size_t c = p->nf + p->nf / 4 + 64;
        float *G = realloc(s->G, c * 9 * sizeof *G);
        if (G)
            s->G = G;
        uint8_t *nr = realloc(s->near, c);
        if (nr)
            s->near = nr;
        if (!G || !nr)
            return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory for %u kernels", p->nf);
        s->capG = c;
    }
    const float H = si->support;
    const int dim = si->dim;
    aniso = aniso && dim == 3; /* eqs. 28-30 in 3D; a 2D scene keeps W */
    const floe_kernel kern = floe_kernel_make(dim, H);
    const floe_aniso_def def = {H, kr, n_min};
    int fail = 0;
#pragma omp parallel for schedule(dynamic, 256) reduction(| : fail)
    for (uint32_t j = 0; j < p->nf; j++) {
        float *G = s->G + 9 * (size_t)j;
        const float *xj = &p->xf[3 * (size_t)j];
        uint32_t nb = 0;
        const uint32_t *b = fz_query(s, &s->gb, xj, H, UINT32_MAX, &nb);
        if (!b) {
            fail = 1;
            continue;
        }
        s->near[j] = nb > 0;
        iso(G, H);
        if (!nb || !aniso)
            continue;
        /* eq. 28: C_j = sum_k W_jk (x_k - x_j)(x_k - x_j)^T / sum_k W_jk over the fluid */
        uint32_t m = 0;
        const uint32_t *f = fz_query(s, &s->gf, xj, H, j, &m);
        if (!f) {
            fail = 1;
            continue;
        }
        double c[6] = {0}, ws = 0;
        for (uint32_t k = 0; k < m; k++) {
            const float *xk = &p->xf[3 * (size_t)f[k]];
            double d[3] = {xk[0] - xj[0], xk[1] - xj[1], xk[2] - xj[2]};
            double w = floe_kernel_w(&kern, (float)sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]));
            ws += w;
            c[0] += w * d[0] * d[0];
            c[1] += w * d[0] * d[1];
            c[2] += w * d[0] * d[2];
            c[3] += w * d[1] * d[1];
            c[4] += w * d[1] * d[2];
            c[5] += w * d[2] * d[2];
        }
        if (!(ws > 0))
            continue;
        for (int a = 0; a < 6; a++)
            c[a] /= ws;
        /* eqs. 29-30: C = R Sigma R^T, stretch clamped to kr, volume kept */
        double Gd[9];
        floe_aniso_matrix(&def, c, (int)m, Gd);
        for (int a = 0; a < 9; a++)
            G[a] = (float)Gd[a];
    }
    if (fail)
        return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory for the neighbour queries");
    s->g_step = si->step;
    s->g_nf = p->nf;
    s->g_aniso = aniso;
    s->g_valid = 1;
    return FLOE_OK;
}

int fz_film(const floe_stage_call *c)
{
    floe_ctx *ctx = c->ctx;
    fz_state *s = c->state;
    const floe_sim_info *si = api->sim(ctx);
    s->g_valid = 0;
    int rc = fz_gather(ctx, s, c->param[FILM_COLD].s, c->param[FILM_ICE].s);
    if (rc)
        return rc;
    s->film_step = si->step;
    s->film_ok = 1;
    fz_parts *p = &s->p;
    /* Gamma_max: one fluid particle's mass (the core's m = rho0 d^dim) */
    floe_set fl[FLOE_MAX_SETS];
    double gmax = 0;
    int nfl = api->set_list(ctx, FLOE_SET_FLUID, fl, FLOE_MAX_SETS);
    for (int k = 0; k < nfl && k < FLOE_MAX_SETS; k++) {
        floe_set_info in;
        if (api->set_info(ctx, fl[k], &in) == FLOE_OK)
            gmax = fmax(gmax, (double)(in.rest_density * powf(si->spacing, (float)si->dim)));
    }
    s->gamma_max = (float)gmax;
    const float H = si->support;
    const floe_kernel kern = floe_kernel_make(si->dim, H);
    const double a_dt = c->param[FILM_ALPHA].f * si->dt;
    double film = 0;
    int st = FLOE_OK;
    for (int k = 0; k < p->nbs && !st; k++) {
        floe_set_info in;
        api->set_info(ctx, p->bset[k], &in);
        float *gam = fz_attr(ctx, p->bset[k], in.name, "Gamma", FLOE_F32, &st);
        if (st)
            break;
        const uint32_t off = p->boff[k];
        int fail = 0;
#pragma omp parallel for schedule(dynamic, 256) reduction(| : fail) reduction(+ : film)
        for (uint32_t i = 0; i < p->bn[k]; i++) {
            const float *xi = &p->xb[3 * ((size_t)off + i)];
            uint32_t m = 0;
            const uint32_t *f = fz_query(s, &s->gf, xi, H, UINT32_MAX, &m);
            if (!f) {
                fail = 1;
                continue;
            }
            /* eq. 25: dGamma = alpha dt eta V_i sum_j m_j W(x_i - x_j), eta = 1 - Gamma / Gamma_max */
            double sum = 0;
            for (uint32_t q = 0; q < m; q++) {
                const float *xj = &p->xf[3 * (size_t)f[q]];
                float d[3] = {xi[0] - xj[0], xi[1] - xj[1], xi[2] - xj[2]};
                sum += p->mf[f[q]] * floe_kernel_w(&kern, sqrtf(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]));
            }
            double g = gam[i];
            if (m && gmax > 0) {
                double eta = 1.0 - g / gmax;
                g += a_dt * eta * p->Vb[off + i] * sum;
                g = fmin(fmax(g, 0.0), gmax); /* the cap: never more than one particle's mass */
                gam[i] = (float)g;
            }
            film += gam[i];
        }
        if (fail)
            st = api->fail(ctx, FLOE_ERR_NOMEM, "out of memory for the neighbour queries");
    }
    if (!st)
        api->stat(ctx, "film_mass", film);
    return st;
}


int fz_direction(const floe_stage_call *c)
{
    floe_ctx *ctx = c->ctx;
    fz_state *s = c->state;
    const floe_sim_info *si = api->sim(ctx);
    if (!s->film_ok || s->film_step != si->step)
        return api->fail(ctx, FLOE_ERR_ARG, "%s needs freeze.film before it in the same step", c->name);
    int rc = fz_kernels(ctx, s, c->param[DIR_ANISO].b, (float)c->param[DIR_KR].f, (int)c->param[DIR_NMIN].i);
    if (rc)
        return rc;
    fz_parts *p = &s->p;
    const float H = si->support;
    /* gv of every boundary set: zero where not cold */
    floe_set bs[FLOE_MAX_SETS];
    int nbs = api->set_list(ctx, FLOE_SET_BOUNDARY, bs, FLOE_MAX_SETS);
    int st = FLOE_OK;
    for (int k = 0; k < nbs && k < FLOE_MAX_SETS && !st; k++) {
        floe_set_info in;
        api->set_info(ctx, bs[k], &in);
        float *gv = fz_attr(ctx, bs[k], in.name, "gv", FLOE_VEC3, &st);
        if (!st && in.n)
            memset(gv, 0, 3 * sizeof(float) * in.n);
    }
    for (int k = 0; k < p->nbs && !st; k++) {
        floe_set_info in;
        api->set_info(ctx, p->bset[k], &in);
        float *gv = fz_attr(ctx, p->bset[k], in.name, "gv", FLOE_VEC3, &st);
        if (st)
            break;
        const uint32_t off = p->boff[k];
        int fail = 0;
#pragma omp parallel for schedule(dynamic, 256) reduction(| : fail)
        for (uint32_t i = 0; i < p->bn[k]; i++) {
            const float *xi = &p->xb[3 * ((size_t)off + i)];
            uint32_t m = 0;
            const uint32_t *f = fz_query(s, &s->gf, xi, H, UINT32_MAX, &m);
            if (!f) {
                fail = 1;
                continue;
            }
            /* eq. 26: gv_i = sum_j v_j W_A(x_i - x_j, G_j), divided by sum_j W_A
             * instead of |S(i)|: the same direction, and gv a velocity (m/s) */
            double g[3] = {0, 0, 0}, ws = 0;
            for (uint32_t q = 0; q < m; q++) {
                const uint32_t j = f[q];
                const float *xj = &p->xf[3 * (size_t)j];
                float r[3] = {xi[0] - xj[0], xi[1] - xj[1], xi[2] - xj[2]};
                float w = fz_wa(s->G + 9 * (size_t)j, r, si->dim);
                ws += w;
                for (int a = 0; a < 3; a++)
                    g[a] += (double)w * p->vf[3 * (size_t)j + a];
            }
            for (int a = 0; a < 3; a++)
                gv[3 * (size_t)i + a] = ws > 0 ? (float)(g[a] / ws) : 0.0f;
        }
        if (fail)
            st = api->fail(ctx, FLOE_ERR_NOMEM, "out of memory for the neighbour queries");
    }
    return st;
}
