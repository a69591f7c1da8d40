/* terrain.collide: Kipfer & Westermann's terrain collision.
 *
 * After the integrator a particle went from x0 = x - v dt (symplectic Euler
 * moved it along v) to x. With clearance f(p) = p_y - h(p_x, p_z) - r (r the
 * particle radius), a particle with f(x) < 0 crossed the surface: the
 * contact along the path, the largest s in [0, 1] found with f(x0 + s (x -
 * x0)) >= 0, is located by bisection; there the velocity is split into
 * its normal part v_n = (v . n) n and tangential part v_t, and bounced:
 *     v' = (1 - mu (1 + e) |v . n| / |v_t|)^+ v_t - e v_n
 * (restitution e, Coulomb friction mu, blended from dry to wet friction by
 * the wet map), and the particle travels the rest of the step, (1 - s) dt,
 * with v'. Where that rest would end below the surface again (a valley's
 * far side) the particle stays at the contact point, which bisection keeps
 * on the upper side: no particle ends a step below the terrain.
 *
 * A particle that started the step below (placed there by the scene, or
 * an emitter) is lifted straight up to the surface and its normal velocity
 * bounced. Frozen particles (slower than freeze_speed for freeze_steps
 * steps, ending above the terrain: settled water in a lake) skip
 * everything else. The wet map rises where particles are within two radii
 * of the surface and dries elsewhere. */
#include "terrain_mod.h"

#include <floe/sph.h>

#include <math.h>
#include <stdlib.h>

enum { P_REST, P_MU, P_MU_WET, P_RADIUS, P_BISECT, P_FREEZE_V, P_FREEZE_N, P_WET_RATE, P_DRY_RATE };

typedef struct collide_par {
    const floe_terrain *t;
    float r, e, mu, mu_wet, dt;
    int bisect;
    const float *wet;
    uint8_t *touched;
} collide_par;

static inline float clearance(const collide_par *c, const float p[3])
{
    return p[1] - floe_terrain_height(c->t, p[0], p[2], NULL, NULL) - c->r;
}

static inline size_t sample_of(const floe_terrain *t, float x, float z)
{
    float u = (x - t->x0) * t->inv_cell + 0.5f, w = (z - t->z0) * t->inv_cell + 0.5f;
    int i = u > 0 ? (int)u : 0, j = w > 0 ? (int)w : 0;
    i = i < t->nx ? i : t->nx - 1;
    j = j < t->nz ? j : t->nz - 1;
    return (size_t)i + (size_t)t->nx * j;
}

/* The bounce at the surface point p: v becomes v' of the header comment. */
static void bounce(const collide_par *c, const float p[3], float v[3])
{
    float n[3];
    floe_terrain_normal(c->t, p[0], p[2], n);
    const float vn = v[0] * n[0] + v[1] * n[1] + v[2] * n[2];
    if (vn >= 0.0f) /* already leaving the surface */
        return;
    float vt[3] = {v[0] - vn * n[0], v[1] - vn * n[1], v[2] - vn * n[2]};
    const float vtl = sqrtf(vt[0] * vt[0] + vt[1] * vt[1] + vt[2] * vt[2]);
    const float w = c->wet[sample_of(c->t, p[0], p[2])];
    const float mu = c->mu + (c->mu_wet - c->mu) * w;
    float keep = vtl > 0.0f ? 1.0f - mu * (1.0f + c->e) * (-vn) / vtl : 0.0f;
    keep = keep > 0.0f ? keep : 0.0f;
    for (int k = 0; k < 3; k++)
        v[k] = keep * vt[k] - c->e * vn * n[k];
}

/* One particle that ended below the surface; returns 1 (a bounce). */
static int collide_one(const collide_par *c, float x[3], float v[3])
{
    const float x1[3] = {x[0], x[1], x[2]};
    const float x0[3] = {x1[0] - v[0] * c->dt, x1[1] - v[1] * c->dt, x1[2] - v[2] * c->dt};
    if (clearance(c, x0) < 0.0f) { /* started below: up to the surface */
        x[1] = floe_terrain_height(c->t, x[0], x[2], NULL, NULL) + c->r;
        bounce(c, x, v);
        return 1;
    }
    float lo = 0.0f, hi = 1.0f, p[3];
    for (int k = 0; k < c->bisect; k++) {
        const float mid = 0.5f * (lo + hi);
        for (int a = 0; a < 3; a++)
            p[a] = x0[a] + mid * (x1[a] - x0[a]);
        if (clearance(c, p) >= 0.0f)
            lo = mid;
        else
            hi = mid;
    }
    float xc[3];
    for (int a = 0; a < 3; a++)
        xc[a] = x0[a] + lo * (x1[a] - x0[a]);
    bounce(c, xc, v);
    const float rest = (1.0f - lo) * c->dt;
    for (int a = 0; a < 3; a++)
        x[a] = xc[a] + rest * v[a];
    if (clearance(c, x) < 0.0f) /* the rest of the path is blocked too: stay at the contact */
        for (int a = 0; a < 3; a++)
            x[a] = xc[a];
    if (clearance(c, x) < 0.0f) /* lo = 0 only from a start above, so this is rounding */
        x[1] = floe_terrain_height(c->t, x[0], x[2], NULL, NULL) + c->r;
    return 1;
}

int tm_ranks(floe_ctx *ctx, tm_state *s)
{
    if (!s->ranks)
        s->ranks = floe_ranks(tm_api, ctx);
    return s->ranks;
}

int tm_touched_all_ranks(floe_ctx *ctx, tm_state *s, uint8_t *touched)
{
    if (tm_ranks(ctx, s) < 2)
        return FLOE_OK;
    if (!s->touched_all && !(s->touched_all = malloc(s->nwet * sizeof *s->touched_all + 1)))
        return tm_api->fail(ctx, FLOE_ERR_NOMEM, "terrain.collide: out of memory for the wet map");
    for (size_t k = 0; k < s->nwet; k++)
        s->touched_all[k] = touched[k];
    int rc = floe_reduce(tm_api, ctx, s->touched_all, (int)s->nwet, FLOE_REDUCE_MAX);
    for (size_t k = 0; k < s->nwet && !rc; k++)
        touched[k] = s->touched_all[k] > 0.0;
    return rc;
}

int tm_collide(const floe_stage_call *call)
{
    floe_ctx *ctx = call->ctx;
    tm_state *s = call->state;
    const floe_sim_info *si = tm_api->sim(ctx);
    floe_terrain t;
    if (tm_terrain(ctx, &t) || tm_wet_ensure(s, &t))
        return FLOE_ERR_ARG;
    const floe_value *P = call->param;
    collide_par c = {.t = &t, .r = (float)(P[P_RADIUS].f * si->spacing), .e = (float)P[P_REST].f,
                     .mu = (float)P[P_MU].f, .mu_wet = (float)P[P_MU_WET].f, .dt = (float)si->dt,
                     .bisect = (int)P[P_BISECT].i, .wet = s->wet, .touched = s->touched};
    const float vfreeze2 = (float)(P[P_FREEZE_V].f * P[P_FREEZE_V].f);
    const uint32_t nfreeze = (uint32_t)P[P_FREEZE_N].i;
    const float wet_band = 2.0f * c.r + 0.5f * si->spacing;
    floe_set sets[TM_MAX_SETS];
    int ns = tm_api->set_list(ctx, FLOE_SET_FLUID, sets, TM_MAX_SETS);
    if (ns > TM_MAX_SETS)
        return tm_api->fail(ctx, FLOE_ERR_ARG, "terrain.collide: %d fluid sets, at most %d", ns, TM_MAX_SETS);
    long bounces = 0, frozen = 0;
    for (int q = 0; q < ns; q++) {
        floe_set_info info;
        float *x = tm_api->attr(ctx, sets[q], "x", FLOE_VEC3), *v = tm_api->attr(ctx, sets[q], "v", FLOE_VEC3);
        uint32_t *rest = tm_api->attr(ctx, sets[q], "rest", FLOE_U32);
        if (tm_api->set_info(ctx, sets[q], &info) || !x || !v || !rest)
            return tm_api->fail(ctx, FLOE_ERR_ARG, "terrain.collide: a fluid set without x, v or rest");
        /* MPI: the owned particles (a ghost is its owner's) */
        const uint32_t n = floe_owned(tm_api, ctx, sets[q], info.n);
#pragma omp parallel for schedule(static) reduction(+ : bounces, frozen)
        for (uint32_t i = 0; i < n; i++) {
            float *xi = x + 3 * i, *vi = v + 3 * i;
            const float v2 = vi[0] * vi[0] + vi[1] * vi[1] + vi[2] * vi[2];
            rest[i] = v2 < vfreeze2 ? (rest[i] < nfreeze ? rest[i] + 1 : nfreeze) : 0;
            const float f = clearance(&c, xi);
            if (f >= 0.0f) {
                if (rest[i] >= nfreeze && vfreeze2 > 0.0f) { /* settled: skipped */
                    frozen++;
                    continue;
                }
                if (f < wet_band)
                    c.touched[sample_of(&t, xi[0], xi[2])] = 1; /* every writer stores 1 */
                continue;
            }
            rest[i] = 0;
            bounces += collide_one(&c, xi, vi);
            c.touched[sample_of(&t, xi[0], xi[2])] = 1;
        }
    }
    int rc = tm_touched_all_ranks(ctx, s, s->touched);
    if (rc)
        return rc;
    /* the wet map: wetter where water is, drying elsewhere */
    const float up = (float)(P[P_WET_RATE].f * si->dt), down = (float)exp(-P[P_DRY_RATE].f * si->dt);
    const size_t nw = s->nwet;
    float *wet = s->wet;
    uint8_t *touched = s->touched;
#pragma omp parallel for schedule(static)
    for (size_t k = 0; k < nw; k++) {
        wet[k] = touched[k] ? fminf(1.0f, wet[k] + up) : wet[k] * down;
        touched[k] = 0;
    }
    s->collisions += (uint64_t)bounces;
    tm_api->stat(ctx, "terrain.bounces", (double)bounces);
    if (vfreeze2 > 0.0f)
        tm_api->stat(ctx, "terrain.frozen", (double)frozen);
    return FLOE_OK;
}
