/* terrain.carpet (per frame): Kipfer & Westermann's carpet, a height-field
 * mesh draped over the water, over the part of the terrain inside the domain.
 *
 * The fluid particles go into the leaves of a quadtree over the horizontal
 * plane (x, z), split at the middle until a leaf holds at most `leaf`
 * particles or is smaller than a carpet cell; every node keeps the highest
 * particle top (y + r, r half a spacing) below it. Each carpet vertex then
 * falls from above: a top-down traversal that skips nodes farther than the
 * cover radius R horizontally or lower than the best height found so far
 * finds the highest particle top within R, where the vertex lands (on the
 * terrain where no particle covers it: dry ground). With fall > 0 the
 * vertices fall under that gravity from where they were the frame before
 * instead (a carpet that sinks smoothly as water drains; it rises at once).
 * Per vertex: water depth (carpet - terrain), and the flow, the
 * kernel-weighted mean horizontal velocity of the particles within R.
 * The buffers grow with the particle count and are kept (constant memory
 * from frame to frame); the traversal is parallel over vertex rows. */
#include "carpet.h"

#include <floe/module_sets.h> /* floe_grow */

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { P_CELL, P_RADIUS, P_LEAF, P_FALL, P_COLOUR, P_IMAGE, P_MESH };

#define MAX_DEPTH 32

#define grow floe_grow /* <floe/module_sets.h> */

/* gather every fluid particle as (x, top, z, vx, vz) */
static int gather(tm_carpet *c, floe_ctx *ctx, float r)
{
    floe_set sets[TM_MAX_SETS];
    int ns = tm_api->set_list(ctx, FLOE_SET_FLUID, sets, TM_MAX_SETS);
    if (ns > TM_MAX_SETS)
        return tm_api->fail(ctx, FLOE_ERR_ARG, "terrain.carpet: %d fluid sets, at most %d", ns, TM_MAX_SETS);
    size_t total = 0;
    for (int q = 0; q < ns; q++) {
        floe_set_info info;
        if (tm_api->set_info(ctx, sets[q], &info) == FLOE_OK)
            total += info.n;
    }
    if (grow((void **)&c->p, &c->pcap, total ? total : 1, sizeof *c->p) ||
        grow((void **)&c->nodes, &c->ncap, 2 * (total ? total : 1) + 64, sizeof *c->nodes))
        return tm_api->fail(ctx, FLOE_ERR_NOMEM, "terrain.carpet: out of memory for %zu particles", total);
    size_t m = 0;
    for (int q = 0; q < ns; q++) {
        floe_set_info info;
        const float *x = tm_api->attr(ctx, sets[q], "x", FLOE_VEC3), *v = tm_api->attr(ctx, sets[q], "v", FLOE_VEC3);
        if (tm_api->set_info(ctx, sets[q], &info) || !x || !v)
            return tm_api->fail(ctx, FLOE_ERR_ARG, "terrain.carpet: a fluid set without x or v");
        for (uint32_t i = 0; i < info.n; i++, m++)
            c->p[m] = (tm_particle){x[3 * i], x[3 * i + 1] + r, x[3 * i + 2], v[3 * i], v[3 * i + 2]};
    }
    c->np = m;
    return FLOE_OK;
}

/* Node k over particles [b, e) and the rectangle [x0, x1] x [z0, x1]:
 * split at the middle into four (2D: two) until small. Returns the index. */
static int build(tm_carpet *c, uint32_t b, uint32_t e, float x0, float z0, float x1, float z1, float minsize,
                 uint32_t leaf, int depth, int dim)
{
    int k = (int)c->nn++;
    tm_node *nd = &c->nodes[k];
    *nd = (tm_node){.x0 = x0, .z0 = z0, .x1 = x1, .z1 = z1, .b = b, .e = e, .child = {-1, -1, -1, -1}};
    float top = -INFINITY;
    for (uint32_t i = b; i < e; i++)
        top = c->p[i].y > top ? c->p[i].y : top;
    nd->top = top;
    if (e - b <= leaf || depth >= MAX_DEPTH || (x1 - x0 < minsize && (dim == 2 || z1 - z0 < minsize)))
        return k;
    const float xm = 0.5f * (x0 + x1), zm = 0.5f * (z0 + z1);
    /* partition [b, e) by x, then each half by z (the quadrants in order) */
    uint32_t cut[5] = {b, b, b, b, e};
    uint32_t i = b, j = e;
    while (i < j) {
        if (c->p[i].x < xm)
            i++;
        else {
            tm_particle t = c->p[i];
            c->p[i] = c->p[--j];
            c->p[j] = t;
        }
    }
    cut[2] = i;
    if (dim == 3) {
        for (int h = 0; h < 2; h++) {
            uint32_t lo = cut[2 * h], hi = cut[2 * h + 2];
            uint32_t a = lo, z = hi;
            while (a < z) {
                if (c->p[a].z < zm)
                    a++;
                else {
                    tm_particle t = c->p[a];
                    c->p[a] = c->p[--z];
                    c->p[z] = t;
                }
            }
            cut[2 * h + 1] = a;
        }
    } else {
        cut[1] = cut[2];
        cut[3] = e;
    }
    const float bx[4][4] = {{x0, z0, xm, zm}, {x0, zm, xm, z1}, {xm, z0, x1, zm}, {xm, zm, x1, z1}};
    for (int q = 0; q < 4; q++) {
        uint32_t qb = cut[q], qe = cut[q + 1];
        if (qe > qb && !(dim == 2 && (q == 1 || q == 3)))
            c->nodes[k].child[q] = build(c, qb, qe, bx[q][0], dim == 3 ? bx[q][1] : z0, bx[q][2],
                                         dim == 3 ? bx[q][3] : z1, minsize, leaf, depth + 1, dim);
        else if (qe > qb) /* 2D: the x halves only */
            c->nodes[k].child[q] = build(c, qb, qe, bx[q][0], z0, bx[q][2], z1, minsize, leaf, depth + 1, dim);
    }
    return k;
}

/* Horizontal distance squared from (X, Z) to a node's rectangle. */
static inline float rect_d2(const tm_node *nd, float X, float Z)
{
    const float dx = X < nd->x0 ? nd->x0 - X : X > nd->x1 ? X - nd->x1 : 0.0f;
    const float dz = Z < nd->z0 ? nd->z0 - Z : Z > nd->z1 ? Z - nd->z1 : 0.0f;
    return dx * dx + dz * dz;
}

/* The vertex at (X, Z) falls: the highest particle top within R, found
 * top-down, skipping nodes out of reach or no higher than the best so far
 * (the maxima pulled up the tree). Then the flow there: the weighted mean
 * horizontal velocity of the surface layer, the particles within R whose
 * top is within R of that height (nodes lower than that skipped). */
static float land(const tm_carpet *c, float X, float Z, float R, float fl[2])
{
    int stack[4 * MAX_DEPTH + 8], sp = 0;
    float best = -INFINITY;
    const float R2 = R * R;
    fl[0] = fl[1] = 0.0f;
    if (!c->nn)
        return best;
    stack[sp++] = 0;
    while (sp) {
        const tm_node *nd = &c->nodes[stack[--sp]];
        if (nd->top <= best || rect_d2(nd, X, Z) > R2)
            continue;
        int inner = 0;
        for (int q = 0; q < 4; q++)
            if (nd->child[q] >= 0) {
                stack[sp++] = nd->child[q];
                inner = 1;
            }
        if (inner)
            continue;
        for (uint32_t i = nd->b; i < nd->e; i++) {
            const tm_particle *p = &c->p[i];
            const float ex = p->x - X, ez = p->z - Z;
            if (ex * ex + ez * ez < R2 && p->y > best)
                best = p->y;
        }
    }
    if (best == -INFINITY)
        return best;
    const float floor_y = best - R;
    float wsum = 0, fx = 0, fz = 0;
    stack[sp++] = 0;
    while (sp) {
        const tm_node *nd = &c->nodes[stack[--sp]];
        if (nd->top < floor_y || rect_d2(nd, X, Z) > R2)
            continue;
        int inner = 0;
        for (int q = 0; q < 4; q++)
            if (nd->child[q] >= 0) {
                stack[sp++] = nd->child[q];
                inner = 1;
            }
        if (inner)
            continue;
        for (uint32_t i = nd->b; i < nd->e; i++) {
            const tm_particle *p = &c->p[i];
            const float ex = p->x - X, ez = p->z - Z, d2 = ex * ex + ez * ez;
            if (d2 >= R2 || p->y < floor_y)
                continue;
            const float w = 1.0f - d2 / R2;
            wsum += w;
            fx += w * p->vx;
            fz += w * p->vz;
        }
    }
    fl[0] = wsum > 0 ? fx / wsum : 0.0f;
    fl[1] = wsum > 0 ? fz / wsum : 0.0f;
    return best;
}

void tm_carpet_free(tm_carpet *c)
{
    if (!c)
        return;
    free(c->p);
    free(c->nodes);
    free(c->y);
    free(c->vy);
    free(c->depth);
    free(c->speed);
    free(c->fx);
    free(c->fz);
    free(c->top);
    free(c);
}

/* The carpet's vertex grid over the terrain; kept while its size holds. */
int tm_carpet_layout(tm_carpet *c, floe_ctx *ctx, const floe_terrain *t, float cs, int dim)
{
    /* the terrain's extent inside the domain: where water can be */
    const floe_sim_info *si = tm_api->sim(ctx);
    const float x0 = fmaxf(t->x0, si->domain_min[0]), x1 = fminf(t->x0 + (float)(t->nx - 1) * t->cell, si->domain_max[0]);
    const float z0 = dim == 3 ? fmaxf(t->z0, si->domain_min[2]) : t->z0;
    const float z1 = dim == 3 ? fminf(t->z0 + (float)(t->nz - 1) * t->cell, si->domain_max[2]) : t->z0;
    if (!(x1 >= x0) || !(z1 >= z0))
        return tm_api->fail(ctx, FLOE_ERR_ARG, "terrain.carpet: the terrain lies outside the domain");
    int nx = (int)floorf((x1 - x0) / cs) + 1, nz = dim == 3 ? (int)floorf((z1 - z0) / cs) + 1 : 1;
    if ((double)nx * nz > 16.0 * 1024 * 1024)
        return tm_api->fail(ctx, FLOE_ERR_ARG, "terrain.carpet: %d x %d vertices, more than 2^24: raise 'cell'", nx,
                            nz);
    if (c->nx == nx && c->nz == nz && c->cs == cs && c->x0 == x0 && c->z0 == z0)
        return FLOE_OK;
    size_t n = (size_t)nx * nz;
    float **bufs[] = {&c->y, &c->vy, &c->depth, &c->speed, &c->fx, &c->fz, &c->top};
    for (size_t b = 0; b < sizeof bufs / sizeof *bufs; b++) {
        free(*bufs[b]);
        *bufs[b] = calloc(n, sizeof(float));
        if (!*bufs[b])
            return tm_api->fail(ctx, FLOE_ERR_NOMEM, "terrain.carpet: out of memory for %zu vertices", n);
    }
    c->nx = nx;
    c->nz = nz;
    c->cs = cs;
    c->x0 = x0;
    c->z0 = z0;
    c->fresh = 1;
    return FLOE_OK;
}

int tm_carpet_build(tm_carpet *c, floe_ctx *ctx, const floe_terrain *t, const tm_carpet_par *par)
{
    const floe_sim_info *si = tm_api->sim(ctx);
    int rc = tm_carpet_layout(c, ctx, t, par->cell, si->dim);
    if (rc || (rc = gather(c, ctx, 0.5f * si->spacing)))
        return rc;
    /* the tree's root covers the carpet and every particle */
    float x0 = c->x0, z0 = c->z0, x1 = c->x0 + (c->nx - 1) * c->cs, z1 = c->z0 + (c->nz - 1) * c->cs;
    for (size_t i = 0; i < c->np; i++) {
        x0 = fminf(x0, c->p[i].x);
        x1 = fmaxf(x1, c->p[i].x);
        z0 = fminf(z0, c->p[i].z);
        z1 = fmaxf(z1, c->p[i].z);
    }
    c->nn = 0;
    if (c->np)
        build(c, 0, (uint32_t)c->np, x0, z0, x1, z1, par->cell, par->leaf, 0, si->dim);
    const int nx = c->nx, nz = c->nz;
#pragma omp parallel for schedule(dynamic, 4)
    for (int j = 0; j < nz; j++)
        for (int i = 0; i < nx; i++) {
            const size_t k = (size_t)i + (size_t)nx * j;
            float fl[2];
            c->top[k] = land(c, c->x0 + i * c->cs, c->z0 + j * c->cs, par->radius, fl);
            c->fx[k] = fl[0];
            c->fz[k] = fl[1];
        }
    tm_carpet_finish(c, t, par);
    return FLOE_OK;
}

void tm_carpet_finish(tm_carpet *c, const floe_terrain *t, const tm_carpet_par *par)
{
    const int nx = c->nx, nz = c->nz, fresh = c->fresh;
    const float fall = par->fall, dtf = par->frame_dt;
#pragma omp parallel for schedule(static)
    for (int j = 0; j < nz; j++)
        for (int i = 0; i < nx; i++) {
            const size_t k = (size_t)i + (size_t)nx * j;
            const float X = c->x0 + i * c->cs, Z = c->z0 + j * c->cs;
            const float ground = floe_terrain_height(t, X, Z, NULL, NULL);
            const float top = c->top[k];
            const float target = top > ground ? top : ground;
            float y = target;
            if (fall > 0 && !fresh && c->y[k] > target) { /* falls from last frame's height */
                c->vy[k] += fall * dtf;
                y = c->y[k] - c->vy[k] * dtf;
                if (y <= target) {
                    y = target;
                    c->vy[k] = 0;
                }
            } else {
                c->vy[k] = 0;
            }
            c->y[k] = y;
            c->depth[k] = y - ground;
            if (!(top > ground))
                c->fx[k] = c->fz[k] = 0.0f;
            c->speed[k] = sqrtf(c->fx[k] * c->fx[k] + c->fz[k] * c->fz[k]);
        }
    c->fresh = 0;
}

int tm_carpet_run(const floe_stage_call *call)
{
    floe_ctx *ctx = call->ctx;
    tm_state *s = call->state;
    const floe_sim_info *si = tm_api->sim(ctx);
    floe_terrain t;
    if (tm_terrain(ctx, &t))
        return FLOE_ERR_ARG;
    if (!s->carpet && !(s->carpet = calloc(1, sizeof *s->carpet)))
        return tm_api->fail(ctx, FLOE_ERR_NOMEM, "terrain.carpet: out of memory");
    const floe_value *P = call->param;
    tm_carpet *c = s->carpet;
    tm_carpet_par par = {.cell = (float)(P[P_CELL].f * si->spacing), .radius = (float)(P[P_RADIUS].f * si->spacing),
                         .leaf = (uint32_t)P[P_LEAF].i, .fall = (float)P[P_FALL].f,
                         .frame_dt = (float)(si->time - c->last_time)};
    int rc = tm_api->backend(ctx) == FLOE_BACKEND_OPENCL ? tm_carpet_build_cl(c, ctx, &t, &par)
                                                          : tm_carpet_build(c, ctx, &t, &par);
    c->last_time = si->time;
    if (rc)
        return rc;
    if (P[P_MESH].i && (rc = tm_carpet_ply(c, ctx, si->frame, P[P_MESH].i == 2)))
        return rc;
    if (P[P_IMAGE].i && si->dim == 3)
        rc = tm_carpet_png(c, ctx, &t, si->frame, P[P_COLOUR].s && P[P_COLOUR].s[0] == 's');
    return rc;
}
