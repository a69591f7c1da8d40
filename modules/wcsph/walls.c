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
 * The sums are scattered from the fluid rows (<floe/wall_sums.h>: one
 * thread, the fluid particles' order, the same floats for any thread
 * count, no atomics; only fluid-wall pairs are walked). */
#include "wcsph.h"

#include <math.h>
#include <string.h>

/* the slice of ws->wall (per boundary particle, p_b / rho_b^2) of boundary
 * set `set`, or NULL for a moving set or one not found */
const float *wcsph_wall_of(const wcsph_state *ws, floe_set set)
{
    const int k = floe_walls_slot(&ws->walls, set);
    return k >= 0 && ws->walls.is_static[k] ? ws->wall + ws->walls.off[k] : NULL;
}

int wcsph_wall_pressure(floe_ctx *ctx, wcsph_state *ws, const floe_kconst *pkc, const floe_fluid *f, int nf)
{
    const floe_kconst kc = *pkc;
    const floe_sim_info *si = api->sim(ctx);
    floe_walls *w = &ws->walls;
    floe_target t[2 * FLOE_MAX_SETS];
    int nt, st;

    if (!ws->eos_valid)
        return api->fail(ctx, FLOE_ERR_ARG,
                         "wcsph.pressure_force{walls = \"extrapolated\"} takes B and gamma from wcsph.pressure: put "
                         "'wcsph.pressure' before it in the step");
    /* under MPI a wall particle's sums would need the fluid within a
     * support radius of it, up to two radii from a rank's own particles:
     * beyond its ghosts (one radius). Refused rather than wrong. */
    if (floe_ranks(api, ctx) > 1)
        return api->fail(ctx, FLOE_ERR_ARG,
                         "walls = \"extrapolated\" does not run under MPI (a wall's pressure sums fluid beyond a "
                         "rank's ghosts): use walls = \"mirror\" or one process");
    if ((st = floe_walls_layout(api, ctx, w)) != FLOE_OK)
        return st;
    const size_t total = w->total;
    if ((st = floe_scratch(api, ctx, &ws->wall, &ws->wall_cap, 3 * total + 1)) != FLOE_OK)
        return st;
    float *restrict Sw = ws->wall + total, *restrict Sp = ws->wall + 2 * total; /* sum W, sum (p + rho g.x) W */
    memset(Sw, 0, 2 * total * sizeof *Sw);
    const float gx = si->gravity[0], gy = si->gravity[1], gz = si->gravity[2];
    for (int s = 0; s < nf; s++) {
        const uint32_t n = f[s].info.n;
        const float *xs = NULL;
        if ((st = floe_walls_fluid(api, ctx, f, nf, s, t, &nt, &xs)) != FLOE_OK || nt == 0) {
            if (st != FLOE_OK)
                return st;
            continue;
        }
        const float *restrict ps = floe_read_of(api, ctx, &f[s], "p", FLOE_F32);
        const float *restrict rhos = floe_read_of(api, ctx, &f[s], "rho", FLOE_F32);
        if (!ps || !rhos)
            return FLOE_ERR_ARG;
        FLOE_WALL_SCATTER(w, t, nt, n, xs, kc, si, {
            Sw[b] += W;
            Sp[b] += (ps[i] + rhos[i] * (gx * d3[0] + gy * d3[1] + gz * d3[2])) * W;
        });
    }
    /* P_b = p_b / rho_b^2 */
    const float inv_gamma = 1.0f / ws->eos0_gamma, inv_B = 1.0f / ws->eos0_B, rho0 = 1.0f / ws->eos0_inv_rho0,
                lo = ws->eos0_lo;
    float *restrict out = ws->wall;
#pragma omp parallel for schedule(static)
    for (size_t b = 0; b < total; b++) {
        float pb = Sw[b] > 0.0f ? Sp[b] / Sw[b] : 0.0f;
        pb = pb > lo ? pb : lo;
        const float rb = rho0 * powf(fmaxf(pb * inv_B + 1.0f, 1e-3f), inv_gamma);
        out[b] = pb / (rb * rb);
    }
    return FLOE_OK;
}
