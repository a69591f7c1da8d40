/* Floe: sums over the fluid neighbours of boundary particles (header only;
 * <floe/sph.h> is the rest of the kit), for wall conditions that give each
 * wall particle a value extrapolated from the fluid around it (Adami et al.
 * 2012: the wall pressure of wcsph.pressure_force{walls = "extrapolated"},
 * the wall velocity of viscosity.laminar{wall_velocity = "extrapolated"}).
 *
 * The core's neighbour lists go from fluid particles to boundary particles
 * only, so the sums are scattered from the fluid rows: in one thread, in the
 * order of the fluid particles, so the floats do not depend on the thread
 * count, with no lock and no atomic; only fluid-wall pairs are walked.
 *
 *   floe_walls               every boundary set end to end (offsets), and
 *                            which ones are static (walls; moving sets,
 *                            rigid bodies, are left out)
 *   floe_walls_layout        fill it
 *   floe_walls_slot          the index of a boundary set in it, or -1
 *   floe_walls_fluid         a fluid set's targets and positions for the loop
 *   FLOE_WALL_SCATTER        the loop over the fluid-wall pairs of static
 *                            sets, a statement run per pair */
#ifndef FLOE_WALL_SUMS_H
#define FLOE_WALL_SUMS_H

#include <floe/sph.h>

typedef struct floe_walls {
    int n;
    floe_set set[FLOE_MAX_SETS];
    size_t off[FLOE_MAX_SETS];
    uint32_t count[FLOE_MAX_SETS];
    int is_static[FLOE_MAX_SETS];
    size_t total; /* boundary particles of every set */
} floe_walls;

static inline int floe_walls_layout(const floe_api *api, floe_ctx *ctx, floe_walls *w)
{
    floe_set bs[FLOE_MAX_SETS];
    const int nb = api->set_list(ctx, FLOE_SET_BOUNDARY, bs, FLOE_MAX_SETS);
    w->n = 0;
    w->total = 0;
    for (int k = 0; k < nb; k++) {
        floe_set_info bi;
        const int st = api->set_info(ctx, bs[k], &bi);
        if (st != FLOE_OK)
            return st;
        w->set[k] = bs[k];
        w->off[k] = w->total;
        w->count[k] = bi.n;
        w->is_static[k] = bi.is_static;
        w->total += bi.n;
        w->n++;
    }
    return FLOE_OK;
}

static inline int floe_walls_slot(const floe_walls *w, floe_set set)
{
    for (int k = 0; k < w->n; k++)
        if (w->set[k].id == set.id)
            return k;
    return -1;
}

/* The targets of fluid set f[s] with its boundary sets (floe_targets, no
 * fluid attribute but x) and its positions; *nt = 0 for an empty set. */
static inline int floe_walls_fluid(const floe_api *api, floe_ctx *ctx, const floe_fluid *f, int nf, int s,
                                   floe_target *t, int *nt, const float **xs)
{
    *nt = 0;
    if (f[s].info.n == 0)
        return FLOE_OK;
    const int st = floe_targets(api, ctx, &f[s], f, nf, FLOE_WITH_BOUNDARY, NULL, NULL, t, nt);
    *xs = api->attr_read(ctx, f[s].set, "x", FLOE_VEC3);
    return st != FLOE_OK ? st : *xs ? FLOE_OK : api->fail(ctx, FLOE_ERR_ARG, "set '%s' lacks x", f[s].info.name);
}

/* For every fluid particle i of fluid set q (targets t[0..nt) from
 * floe_targets with FLOE_WITH_BOUNDARY) and every neighbour b in a static
 * boundary set of w: run STMT with
 *   i        the fluid particle (index in q),
 *   b        the slot of the boundary particle in w's layout (off + j),
 *   W        the kernel W_ib / sigma (<floe/sph.h> floe_kw),
 *   d3[3]    x_b - x_i (minimum image on periodic axes).
 * si the floe_sim_info, kc the floe_kconst, xs q's positions. */
#define FLOE_WALL_SCATTER(w, t, nt, n, xs, kc, si, STMT)                                              \
    do {                                                                                              \
        for (int b_ = 0; b_ < (nt); b_++) {                                                           \
            const floe_target *tg_ = &(t)[b_];                                                        \
            const int w_ = tg_->boundary ? floe_walls_slot((w), tg_->set) : -1;                       \
            if (w_ < 0 || !(w)->is_static[w_])                                                        \
                continue;                                                                             \
            const float *restrict xt_ = tg_->x;                                                       \
            for (uint32_t i = 0; i < (n); i++) {                                                      \
                const uint32_t *restrict id_ = tg_->idx + (size_t)i * tg_->stride;                    \
                const float xi_ = (xs)[3 * i], yi_ = (xs)[3 * i + 1], zi_ = (xs)[3 * i + 2];          \
                for (uint32_t k_ = 0; k_ < tg_->cnt[i]; k_++) {                                       \
                    const uint32_t j_ = id_[k_];                                                      \
                    float d3[3] = {xt_[3 * j_] - xi_, xt_[3 * j_ + 1] - yi_, xt_[3 * j_ + 2] - zi_}; \
                    if ((kc).periodic)                                                                \
                        floe_periodic_delta((si), d3);                                                \
                    const float W = floe_kw(&(kc), d3[0] * d3[0] + d3[1] * d3[1] + d3[2] * d3[2]);    \
                    const size_t b = (w)->off[w_] + j_;                                               \
                    STMT;                                                                             \
                }                                                                                     \
            }                                                                                         \
        }                                                                                             \
    } while (0)

#endif
