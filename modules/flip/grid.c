/* Grid geometry and the module's named grids (created through the core's
 * grid_add on the first splat, sized to the sim domain), position clamping
 * and the half-space kernel fraction used for obstacle density. */
#include "flip.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

float *flip_grid_data(floe_ctx *ctx, floe_grid g)
{
    floe_grid_info gi;
    if (!g.id || flip_api->grid_info(ctx, g, &gi) != FLOE_OK)
        return NULL;
    return gi.data;
}

static floe_grid add_grid(floe_ctx *ctx, const flip_geom *g, const char *name, floe_type type)
{
    floe_grid_def def;
    memset(&def, 0, sizeof def);
    def.size = sizeof def;
    def.name = name;
    memcpy(def.n, g->n, sizeof def.n);
    memcpy(def.origin, g->origin, sizeof def.origin);
    def.cell = g->h;
    def.type = type;
    return flip_api->grid_add(ctx, &def);
}

static int chunks_for(float radius) { return (int)((floorf(2.0f * radius) + 2.0f + FLIP_LANES - 1) / FLIP_LANES); }

int flip_grids_ensure(floe_ctx *ctx, flip_state *s, float cell, float radius)
{
    const floe_sim_info *si = flip_api->sim(ctx);
    if (s->ready) {
        if (cell != s->cell_param)
            return flip_api->fail(ctx, FLOE_ERR_ARG,
                                  "the flip grids were made with cell = %g m; a context has one set of flip grids "
                                  "(got cell = %g m)", (double)s->cell_param, (double)cell);
        if (ceilf(radius) + 1.0f > (float)s->g.pad || (long)chunks_for(radius) * FLIP_LANES > (long)s->g.n[0])
            return flip_api->fail(ctx, FLOE_ERR_ARG,
                                  "splat radius %g cells is larger than the grids were made for (%u ghost cells); "
                                  "use the same radius in every flip.splat", (double)radius, s->g.pad - 1);
        s->g.radius = radius;
        s->g.chunks = chunks_for(radius);
        return FLOE_OK;
    }
    if (si->periodic)
        return flip_api->fail(ctx, FLOE_ERR_ARG, "flip does not support periodic axes (the domain faces are walls)");
    flip_geom *g = &s->g;
    memset(g, 0, sizeof *g);
    g->dim = si->dim;
    g->h = cell > 0.0f ? cell : 2.0f * si->spacing;
    g->inv_h = 1.0f / g->h;
    g->radius = radius;
    g->pad = (uint32_t)ceilf(radius) + 1;
    g->chunks = chunks_for(radius);
    g->cells = 1;
    for (int k = 0; k < 3; k++) {
        g->lo[k] = si->domain_min[k];
        g->hi[k] = si->domain_max[k];
        if (k < g->dim) {
            double L = (double)g->hi[k] - g->lo[k];
            if (!(L > 0))
                return flip_api->fail(ctx, FLOE_ERR_ARG, "the sim domain is empty along axis %d", k);
            double nc = ceil(L / g->h - 1e-4) + 2.0 * g->pad;
            if (nc > 65536)
                return flip_api->fail(ctx, FLOE_ERR_ARG, "flip grid: %g cells along axis %d (cell %g m); raise 'cell'",
                                      nc, k, (double)g->h);
            g->n[k] = (uint32_t)nc;
            g->m[k] = g->n[k] - 2 * g->pad;
            g->origin[k] = g->lo[k] - ((float)g->pad - 0.5f) * g->h;
            if (g->m[k] >= 2 * g->pad) {
                g->fold |= 1u << (2 * k); /* the low wall is a cell face by construction */
                if (fabs((double)g->lo[k] + (double)g->m[k] * g->h - g->hi[k]) <= 1e-3 * g->h)
                    g->fold |= 1u << (2 * k + 1);
            }
        } else {
            g->n[k] = 1;
            g->origin[k] = 0.0f;
        }
        g->cells *= g->n[k];
    }
    if ((long)g->chunks * FLIP_LANES > (long)g->n[0])
        return flip_api->fail(ctx, FLOE_ERR_ARG, "flip grid: %u cells along x is too few for splat radius %g",
                              g->n[0], (double)radius);
    if (g->cells > ((size_t)1 << 27))
        return flip_api->fail(ctx, FLOE_ERR_ARG, "flip grid: %zu cells is too many; raise 'cell'", g->cells);
    s->acc = calloc(4 * g->cells, sizeof(float));
    s->un = calloc(3 * g->cells, sizeof(float));
    s->uo = calloc(3 * g->cells, sizeof(float));
    s->rho_obs = calloc(g->cells, sizeof(float));
    if (!s->acc || !s->un || !s->uo || !s->rho_obs)
        return flip_api->fail(ctx, FLOE_ERR_NOMEM, "flip grid: out of memory (%zu cells)", g->cells);
    s->g_rho = add_grid(ctx, g, "flip.rho", FLOE_F32);
    s->g_u = add_grid(ctx, g, "flip.u", FLOE_VEC3);
    s->g_u_old = add_grid(ctx, g, "flip.u_old", FLOE_VEC3);
    s->g_p = add_grid(ctx, g, "flip.p", FLOE_F32);
    s->g_phi = add_grid(ctx, g, "flip.phi", FLOE_F32);
    s->g_ground = add_grid(ctx, g, "flip.ground", FLOE_F32);
    if (!s->g_rho.id || !s->g_u.id || !s->g_u_old.id || !s->g_p.id || !s->g_phi.id || !s->g_ground.id)
        return FLOE_ERR_ARG; /* grid_add recorded the message */
    float *phi = flip_grid_data(ctx, s->g_phi);
    for (size_t c = 0; c < g->cells; c++)
        phi[c] = FLIP_FAR;
    s->cell_param = cell;
    flip_ftab_init(s, g->dim);
    s->ready = 1;
    flip_api->log(ctx, FLOE_LOG_DEBUG, "flip: grid %u x %u x %u cells of %g m, splat radius %g cells", g->n[0], g->n[1],
                  g->n[2], (double)g->h, (double)radius);
    return FLOE_OK;
}

/* F(s): the fraction of the normalised splat kernel (1 - d^2/r^2)^3 that lies
 * beyond a plane at signed distance s r from its centre, i.e.
 *   F(s) = int_s^1 A(z) dz / int_-1^1 A(z) dz,
 * with A(z) = (1 - z^2)^4 in 3D (area integral of the kernel over a disc)
 * and (1 - z^2)^(7/2) in 2D (line integral over a chord). F(-1) = 1,
 * F(0) = 1/2, F(1) = 0. Tabulated once by the trapezoid rule. */
void flip_ftab_init(flip_state *s, int dim)
{
    const double p = dim == 3 ? 4.0 : 3.5;
    const int sub = 64;
    double cum[FLIP_FTAB + 1];
    cum[FLIP_FTAB] = 0.0;
    /* integrate from the top (z = 1) down */
    for (int j = FLIP_FTAB - 1; j >= 0; j--) {
        double z0 = -1.0 + 2.0 * j / FLIP_FTAB, dz = 2.0 / FLIP_FTAB / sub, acc = 0.0;
        for (int q = 0; q < sub; q++) {
            double a = z0 + q * dz, b = a + dz;
            double fa = pow(fmax(0.0, 1.0 - a * a), p), fb = pow(fmax(0.0, 1.0 - b * b), p);
            acc += 0.5 * (fa + fb) * dz;
        }
        cum[j] = cum[j + 1] + acc;
    }
    for (int j = 0; j <= FLIP_FTAB; j++)
        s->ftab[j] = (float)(cum[j] / cum[0]);
    s->ftab_dim = dim;
}

float flip_ftab(const flip_state *s, float sd)
{
    if (sd <= -1.0f)
        return 1.0f;
    if (sd >= 1.0f)
        return 0.0f;
    float f = (sd + 1.0f) * 0.5f * FLIP_FTAB;
    int j = (int)f;
    if (j >= FLIP_FTAB)
        j = FLIP_FTAB - 1;
    float t = f - (float)j;
    return (1.0f - t) * s->ftab[j] + t * s->ftab[j + 1];
}

int flip_list_fluids(floe_ctx *ctx, flip_fluid *f, int *nf)
{
    floe_set sets[FLIP_MAX_SETS];
    int n = flip_api->set_list(ctx, FLOE_SET_FLUID, sets, FLIP_MAX_SETS);
    if (n < 0)
        return flip_api->fail(ctx, FLOE_ERR, "cannot list fluid sets");
    if (n > FLIP_MAX_SETS)
        return flip_api->fail(ctx, FLOE_ERR_ARG, "%d fluid sets, at most %d supported", n, FLIP_MAX_SETS);
    for (int i = 0; i < n; i++) {
        f[i].set = sets[i];
        if (flip_api->set_info(ctx, sets[i], &f[i].info) != FLOE_OK)
            return flip_api->fail(ctx, FLOE_ERR, "fluid set %d: no info", i);
    }
    *nf = n;
    return FLOE_OK;
}
