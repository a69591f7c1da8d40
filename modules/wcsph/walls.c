/* Floe module "wcsph": the wall pressure of Adami, Hu & Adams 2012 (J.
 * Comput. Phys. 231, "A generalized wall boundary condition for smoothed
 * particle hydrodynamics", eq. 27), for wcsph.pressure_force{walls =
 * "extrapolated"}:
 *
 *   p_b = ( sum_f p_f W_bf + g . sum_f rho_f (x_b - x_f) W_bf ) / sum_f W_bf
 *   rho_b = rho0 (p_b / B + 1)^(1 / gamma)             (the inverse Tait law)
 *
 * f over the fluid neighbours of boundary particle b in every fluid set, g
 * the gravity, walls at rest (the wall's own acceleration of eq. 27 is zero;
 * moving boundary sets, rigid bodies, keep the mirrored pressure p_b = p_i).
 * The pressure force then sums rho0_i V_b (p_i / rho_i^2 + p_b / rho_b^2)
 * grad W_ib against static walls instead of rho0_i V_b 2 p_i / rho_i^2: a
 * wall particle pushes with the pressure the fluid has at its place (the
 * hydrostatic head below the fluid included), not with the pressure of the
 * fluid particle it meets. B, gamma and the clamp are those wcsph.pressure
 * gave the first fluid set (with several fluids of different rest density
 * an approximation). A boundary particle with no fluid neighbour has p_b = 0.
 *
 * The core's lists go from fluid particles to boundary particles only, so
 * the sums are scattered from the fluid rows, in one thread, in the order
 * of the fluid particles: the same floats for any thread count, no lock and
 * no atomic. Only fluid-wall pairs are walked (the particles next to a
 * wall). */
#include "wcsph.h"

#include <math.h>
#include <string.h>

/* the slice of ws->wall (per boundary particle, V_b p_b / rho_b^2) of
 * boundary set `set`, or NULL for a moving set or one not found */
const float *wcsph_wall_of(const wcsph_state *ws, floe_set set)
{
    for (int k = 0; k < ws->nwall; k++)
        if (ws->wall_set[k].id == set.id)
            return ws->wall_static[k] ? ws->wall + ws->wall_off[k] : NULL;
    return NULL;
}

int wcsph_wall_pressure(floe_ctx *ctx, wcsph_state *ws, const floe_kconst *pkc, const floe_fluid *f, int nf)
{
    const floe_kconst kc = *pkc;
    const floe_sim_info *si = api->sim(ctx);
    floe_set bs[FLOE_MAX_SETS];
    const int nb = api->set_list(ctx, FLOE_SET_BOUNDARY, bs, FLOE_MAX_SETS);
    floe_target t[2 * FLOE_MAX_SETS];
    int nt, st;

    if (!ws->eos_valid)
        return api->fail(ctx, FLOE_ERR_ARG,
                         "wcsph.pressure_force{walls = \"extrapolated\"} takes B and gamma from wcsph.pressure: put "
                         "'wcsph.pressure' before it in the step");
    /* the layout: every boundary set end to end */
    size_t total = 0;
    ws->nwall = 0;
    for (int k = 0; k < nb; k++) {
        floe_set_info bi;
        if ((st = api->set_info(ctx, bs[k], &bi)) != FLOE_OK)
            return st;
        ws->wall_set[k] = bs[k];
        ws->wall_off[k] = total;
        ws->wall_static[k] = bi.is_static;
        ws->wall_n[k] = bi.n;
        total += bi.n;
        ws->nwall++;
    }
    if ((st = floe_scratch(api, ctx, &ws->wall, &ws->wall_cap, 3 * total + 1)) != FLOE_OK)
        return st;
    float *restrict Sw = ws->wall + total, *restrict Sp = ws->wall + 2 * total; /* sum W, sum (p + rho g.x) W */
    memset(Sw, 0, 2 * total * sizeof *Sw);
    const float gx = si->gravity[0], gy = si->gravity[1], gz = si->gravity[2];
    for (int s = 0; s < nf; s++) {
        const uint32_t n = f[s].info.n;
        if (n == 0)
            continue;
        if ((st = floe_targets(api, ctx, &f[s], f, nf, FLOE_WITH_BOUNDARY, NULL, NULL, t, &nt)) != FLOE_OK)
            return st;
        const float *restrict xs = api->attr_read(ctx, f[s].set, "x", FLOE_VEC3);
        const float *restrict ps = floe_read_of(api, ctx, &f[s], "p", FLOE_F32);
        const float *restrict rhos = floe_read_of(api, ctx, &f[s], "rho", FLOE_F32);
        if (!ps || !rhos)
            return FLOE_ERR_ARG;
        for (int b = 0; b < nt; b++) {
            const floe_target *tg = &t[b];
            if (!tg->boundary)
                continue;
            int w = 0;
            while (w < ws->nwall && ws->wall_set[w].id != tg->set.id)
                w++;
            if (w == ws->nwall || !ws->wall_static[w])
                continue;
            float *restrict sw = Sw + ws->wall_off[w], *restrict sp = Sp + ws->wall_off[w];
            const float *restrict xt = tg->x;
            for (uint32_t i = 0; i < n; i++) {
                const uint32_t *restrict id = tg->idx + (size_t)i * tg->stride;
                const uint32_t cnt = tg->cnt[i];
                const float xi = xs[3 * i], yi = xs[3 * i + 1], zi = xs[3 * i + 2], pi = ps[i], ri = rhos[i];
                for (uint32_t k = 0; k < cnt; k++) {
                    const uint32_t j = id[k];
                    float d3[3] = {xt[3 * j] - xi, xt[3 * j + 1] - yi, xt[3 * j + 2] - zi}; /* x_b - x_f */
                    if (kc.periodic)
                        floe_periodic_delta(si, d3);
                    const float r2 = d3[0] * d3[0] + d3[1] * d3[1] + d3[2] * d3[2];
                    const float W = floe_kw(&kc, r2);
                    sw[j] += W;
                    sp[j] += (pi + ri * (gx * d3[0] + gy * d3[1] + gz * d3[2])) * W;
                }
            }
        }
    }
    /* P_b = p_b / rho_b^2 */
    const float inv_gamma = 1.0f / ws->eos0_gamma, inv_B = 1.0f / ws->eos0_B, rho0 = 1.0f / ws->eos0_inv_rho0,
                lo = ws->eos0_lo;
    for (int w = 0; w < ws->nwall; w++) {
        const uint32_t n = ws->wall_n[w];
        if (!ws->wall_static[w] || n == 0)
            continue;
        float *restrict out = ws->wall + ws->wall_off[w];
        const float *restrict sw = Sw + ws->wall_off[w], *restrict sp = Sp + ws->wall_off[w];

#pragma omp parallel for schedule(static)
        for (uint32_t b = 0; b < n; b++) {
            float pb = sw[b] > 0.0f ? sp[b] / sw[b] : 0.0f;
            pb = pb > lo ? pb : lo;
            const float rb = rho0 * powf(fmaxf(pb * inv_B + 1.0f, 1e-3f), inv_gamma);
            out[b] = pb / (rb * rb);
        }
    }
    return FLOE_OK;
}
