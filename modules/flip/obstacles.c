/* Obstacles as signed distance fields (Guay 2013, section 6) and the ground
 * of a shallow-water scene.
 *
 * Stage "obstacle": each instance in the pipeline registers one obstacle
 * for the current step (the first instance of a step clears last step's
 * list), so a scene composes any number of them and removes one by leaving
 * it out of the next pipeline. Shapes, phi < 0 inside:
 *   sphere     |p| - radius
 *   box        exact box distance with half extents size/2
 *   capsule    distance to the segment centre +- axis, minus radius
 *   plane      n . p, liquid on the side the normal points to
 *   metaballs  smooth union of balls "x y z r; ..." (offsets from centre):
 *              m - blend ln sum_i exp(-(d_i - m) / blend), d_i = |p - b_i| - r_i,
 *              m = min_i d_i (Blinn's exponential blend; blend = 0: plain union)
 * with p the point in the obstacle's frame. Motion: a keyframed path of the
 * centre "t x y z; ..." (linear, optionally looped), else a constant
 * velocity; plus a constant spin (angular velocity vector, rad/s) about the
 * centre.
 *
 * Stage "ground": a ground height b(x) = base + slope . x + sum of bumps
 * height (1 - d^2/R^2)^2, read by the grid pass as the extra density
 * rho0 b / depth (Guay's shallow-water analogy: the water height is
 * depth rho / rho0, the pressure g (h + b)). */
#include "flip.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- small vector helpers ------------------------------------------------ */

static inline float dot3(const float a[3], const float b[3]) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
static inline float len3(const float a[3]) { return sqrtf(dot3(a, a)); }

static int grow(void **p, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return 0;
    int nc = *cap ? *cap : 8;
    while (nc < need)
        nc *= 2;
    void *np = realloc(*p, (size_t)nc * elem);
    if (!np)
        return -1;
    *p = np;
    *cap = nc;
    return 0;
}

/* Parse "a b c d; e f g h; ..." (numbers separated by spaces or commas,
 * rows by ';' or newlines) into rows of `cols` floats. A row may have
 * `short_cols` numbers instead (2D forms), padded by inserting a zero at
 * column `pad_at`. Returns the number of rows or -1 (msg filled). */
static int parse_rows(const char *text, int cols, int short_cols, int pad_at, float **out, int *cap, int base,
                      char *msg, size_t msglen)
{
    int rows = 0;
    const char *c = text ? text : "";
    while (*c) {
        float vals[8];
        int nv = 0;
        while (*c && *c != ';' && *c != '\n') {
            if (isspace((unsigned char)*c) || *c == ',') {
                c++;
                continue;
            }
            char *end;
            double v = strtod(c, &end);
            if (end == c || !isfinite(v)) {
                snprintf(msg, msglen, "row %d: cannot read a number at \"%.12s\"", rows + 1, c);
                return -1;
            }
            if (nv == 8) {
                snprintf(msg, msglen, "row %d: too many numbers", rows + 1);
                return -1;
            }
            vals[nv++] = (float)v;
            c = end;
        }
        if (*c)
            c++;
        if (nv == 0)
            continue;
        if (nv != cols && !(short_cols > 0 && nv == short_cols)) {
            if (short_cols > 0)
                snprintf(msg, msglen, "row %d: expected %d (or %d) numbers, got %d", rows + 1, cols, short_cols, nv);
            else
                snprintf(msg, msglen, "row %d: expected %d numbers, got %d", rows + 1, cols, nv);
            return -1;
        }
        if (nv != cols) { /* insert a zero at pad_at */
            for (int k = cols - 1; k > pad_at; k--)
                vals[k] = vals[k - 1];
            vals[pad_at] = 0.0f;
        }
        if (grow((void **)out, cap, (base + rows + 1) * cols, sizeof(float))) {
            snprintf(msg, msglen, "out of memory");
            return -1;
        }
        memcpy(*out + (size_t)(base + rows) * cols, vals, (size_t)cols * sizeof(float));
        rows++;
    }
    return rows;
}

/* ---- the obstacle stage ---------------------------------------------------- */

static int shape_of(const char *s)
{
    if (!strcmp(s, "sphere"))
        return OB_SPHERE;
    if (!strcmp(s, "box"))
        return OB_BOX;
    if (!strcmp(s, "capsule"))
        return OB_CAPSULE;
    if (!strcmp(s, "plane"))
        return OB_PLANE;
    if (!strcmp(s, "metaballs"))
        return OB_METABALLS;
    return -1;
}

int flip_obstacles_active(const flip_state *s, uint64_t step) { return s->obs_valid && s->obs_step == step && s->nobs > 0; }
int flip_ground_active(const flip_state *s, uint64_t step) { return s->ground_valid && s->ground_step == step && s->ngrounds > 0; }

int flip_st_obstacle(const floe_stage_call *call)
{
    floe_ctx *ctx = call->ctx;
    flip_state *s = call->state;
    const floe_sim_info *si = flip_api->sim(ctx);
    const floe_value *P = call->param;
    const int dim = si->dim;
    char msg[160];
    if (!s)
        return flip_api->fail(ctx, FLOE_ERR, "module state missing");
    if (!s->obs_valid || s->obs_step != si->step) { /* first obstacle of this step */
        s->nobs = s->nballs = s->nkeys = 0;
        s->obs_step = si->step;
        s->obs_valid = 1;
    }
    if (s->nobs >= 64)
        return flip_api->fail(ctx, FLOE_ERR_ARG, "more than 64 flip.obstacle stages");
    if (grow((void **)&s->obs, &s->obs_cap, s->nobs + 1, sizeof *s->obs))
        return flip_api->fail(ctx, FLOE_ERR_NOMEM, "out of memory");
    flip_obstacle o;
    memset(&o, 0, sizeof o);
    o.shape = shape_of(P[OP_SHAPE].s ? P[OP_SHAPE].s : "");
    if (o.shape < 0)
        return flip_api->fail(ctx, FLOE_ERR_ARG, "unknown shape '%s'", P[OP_SHAPE].s);
    for (int k = 0; k < 3; k++) {
        const int on = k < dim;
        o.centre[k] = on ? (float)P[OP_CENTRE].v[k] : 0.0f;
        o.half[k] = on ? 0.5f * (float)P[OP_SIZE].v[k] : 1e30f;
        o.axis[k] = on ? (float)P[OP_AXIS].v[k] : 0.0f;
        o.normal[k] = on ? (float)P[OP_NORMAL].v[k] : 0.0f;
        o.vel[k] = on ? (float)P[OP_VELOCITY].v[k] : 0.0f;
        o.spin[k] = dim == 3 || k == 2 ? (float)P[OP_SPIN].v[k] : 0.0f;
    }
    o.radius = (float)P[OP_RADIUS].f;
    o.blend = (float)P[OP_BLEND].f;
    o.loop = P[OP_LOOP].b;
    switch (o.shape) {
    case OB_SPHERE:
    case OB_CAPSULE:
        if (!(o.radius > 0.0f))
            return flip_api->fail(ctx, FLOE_ERR_ARG, "%s: radius must be > 0", P[OP_SHAPE].s);
        break;
    case OB_BOX:
        for (int k = 0; k < dim; k++)
            if (!(o.half[k] > 0.0f))
                return flip_api->fail(ctx, FLOE_ERR_ARG, "box: every size component must be > 0");
        break;
    case OB_PLANE: {
        float l = len3(o.normal);
        if (!(l > 0.0f))
            return flip_api->fail(ctx, FLOE_ERR_ARG, "plane: normal must not be zero");
        for (int k = 0; k < 3; k++)
            o.normal[k] /= l;
        break;
    }
    case OB_METABALLS: {
        o.ball0 = s->nballs;
        int nb = parse_rows(P[OP_BALLS].s, 4, dim == 2 ? 3 : 0, 2, &s->balls, &s->balls_cap, s->nballs, msg,
                            sizeof msg);
        if (nb < 0)
            return flip_api->fail(ctx, FLOE_ERR_ARG, "metaballs: balls: %s (format \"x y z r; ...\")", msg);
        if (nb == 0)
            return flip_api->fail(ctx, FLOE_ERR_ARG, "metaballs: 'balls' is empty (format \"x y z r; ...\")");
        for (int b = 0; b < nb; b++) {
            float *ball = s->balls + 4 * (size_t)(s->nballs + b);
            if (dim == 2)
                ball[2] = 0.0f;
            if (!(ball[3] > 0.0f))
                return flip_api->fail(ctx, FLOE_ERR_ARG, "metaballs: ball %d has radius %g (must be > 0)", b + 1,
                                      (double)ball[3]);
        }
        o.nballs = nb;
        s->nballs += nb;
        break;
    }
    }
    o.key0 = s->nkeys;
    int nk = parse_rows(P[OP_PATH].s, 4, dim == 2 ? 3 : 0, 3, &s->keys, &s->keys_cap, s->nkeys, msg, sizeof msg);
    if (nk < 0)
        return flip_api->fail(ctx, FLOE_ERR_ARG, "path: %s (format \"t x y z; ...\")", msg);
    for (int q = 1; q < nk; q++)
        if (!(s->keys[4 * (size_t)(s->nkeys + q)] > s->keys[4 * (size_t)(s->nkeys + q - 1)]))
            return flip_api->fail(ctx, FLOE_ERR_ARG, "path: key times must increase (key %d)", q + 1);
    o.nkeys = nk;
    s->nkeys += nk;
    s->obs[s->nobs++] = o;
    return FLOE_OK;
}

/* ---- the ground stage ----------------------------------------------------------- */

int flip_st_ground(const floe_stage_call *call)
{
    floe_ctx *ctx = call->ctx;
    flip_state *s = call->state;
    const floe_sim_info *si = flip_api->sim(ctx);
    const floe_value *P = call->param;
    char msg[160];
    if (!s)
        return flip_api->fail(ctx, FLOE_ERR, "module state missing");
    if (si->dim != 2)
        return flip_api->fail(ctx, FLOE_ERR_ARG, "flip.ground is for 2D (shallow-water) simulations");
    if (!s->ground_valid || s->ground_step != si->step) {
        s->ngrounds = s->nbumps = 0;
        s->ground_step = si->step;
        s->ground_valid = 1;
    }
    if (grow((void **)&s->grounds, &s->grounds_cap, s->ngrounds + 1, sizeof *s->grounds))
        return flip_api->fail(ctx, FLOE_ERR_NOMEM, "out of memory");
    flip_ground gr;
    memset(&gr, 0, sizeof gr);
    gr.depth = (float)P[GR_DEPTH].f;
    gr.base = (float)P[GR_BASE].f;
    for (int k = 0; k < 2; k++)
        gr.slope[k] = (float)P[GR_SLOPE].v[k];
    gr.bump0 = s->nbumps;
    /* bumps "x y height radius" (2D) stored as 5 floats x y z height radius */
    float *tmp = NULL;
    int tcap = 0;
    int nb = parse_rows(P[GR_BUMPS].s, 4, 0, 0, &tmp, &tcap, 0, msg, sizeof msg);
    if (nb < 0) {
        free(tmp);
        return flip_api->fail(ctx, FLOE_ERR_ARG, "bumps: %s (format \"x y height radius; ...\")", msg);
    }
    if (grow((void **)&s->bumps, &s->bumps_cap, 5 * (s->nbumps + nb), sizeof(float))) {
        free(tmp);
        return flip_api->fail(ctx, FLOE_ERR_NOMEM, "out of memory");
    }
    for (int b = 0; b < nb; b++) {
        float *d = s->bumps + 5 * (size_t)(s->nbumps + b);
        d[0] = tmp[4 * b];
        d[1] = tmp[4 * b + 1];
        d[2] = 0.0f;
        d[3] = tmp[4 * b + 2];
        d[4] = tmp[4 * b + 3];
        if (!(d[4] > 0.0f)) {
            free(tmp);
            return flip_api->fail(ctx, FLOE_ERR_ARG, "bumps: bump %d has radius %g (must be > 0)", b + 1, (double)d[4]);
        }
    }
    free(tmp);
    gr.nbumps = nb;
    s->nbumps += nb;
    s->grounds[s->ngrounds++] = gr;
    return FLOE_OK;
}

static float ground_height(const flip_state *s, const flip_ground *gr, const float x[3])
{
    float b = gr->base + gr->slope[0] * x[0] + gr->slope[1] * x[1];
    for (int q = 0; q < gr->nbumps; q++) {
        const float *d = s->bumps + 5 * (size_t)(gr->bump0 + q);
        const float dx = x[0] - d[0], dy = x[1] - d[1];
        float t = 1.0f - (dx * dx + dy * dy) / (d[4] * d[4]);
        if (t > 0.0f)
            b += d[3] * t * t;
    }
    return b;
}

/* ---- placing obstacles in time ----------------------------------------------------- */

static void rotation(const float w[3], float angle, float R[9])
{
    float l = len3(w);
    float a[3] = {w[0] / l, w[1] / l, w[2] / l};
    float c = cosf(angle), sn = sinf(angle), t = 1.0f - c;
    R[0] = c + a[0] * a[0] * t;
    R[1] = a[0] * a[1] * t - a[2] * sn;
    R[2] = a[0] * a[2] * t + a[1] * sn;
    R[3] = a[1] * a[0] * t + a[2] * sn;
    R[4] = c + a[1] * a[1] * t;
    R[5] = a[1] * a[2] * t - a[0] * sn;
    R[6] = a[2] * a[0] * t - a[1] * sn;
    R[7] = a[2] * a[1] * t + a[0] * sn;
    R[8] = c + a[2] * a[2] * t;
}

/* radius of a ball about the centre outside which phi >= 0 (INFINITY for planes) */
static float bound_radius(const flip_state *s, const flip_obstacle *o)
{
    switch (o->shape) {
    case OB_SPHERE: return o->radius;
    case OB_BOX: {
        float h[3] = {o->half[0], o->half[1], o->half[2] > 1e29f ? 0.0f : o->half[2]};
        return len3(h);
    }
    case OB_CAPSULE: return len3(o->axis) + o->radius;
    case OB_METABALLS: {
        float r = 0.0f;
        for (int b = 0; b < o->nballs; b++) {
            const float *ball = s->balls + 4 * (size_t)(o->ball0 + b);
            float e = len3(ball) + ball[3];
            r = e > r ? e : r;
        }
        return r + o->blend * logf((float)o->nballs);
    }
    default: return INFINITY;
    }
}

int flip_obstacles_pose(flip_state *s, double t, int dim, flip_posed *out, int max)
{
    const floe_sim_info *si = flip_api->sim(s->ctx);
    if (!flip_obstacles_active(s, si->step))
        return 0;
    int n = s->nobs < max ? s->nobs : max;
    for (int i = 0; i < n; i++) {
        const flip_obstacle *o = &s->obs[i];
        flip_posed *p = &out[i];
        p->o = o;
        p->balls = o->nballs ? s->balls + 4 * (size_t)o->ball0 : NULL;
        for (int k = 0; k < 3; k++) {
            p->c[k] = o->centre[k] + o->vel[k] * (float)t;
            p->v[k] = o->vel[k];
            p->w[k] = o->spin[k];
        }
        if (o->nkeys > 0) {
            const float *K = s->keys + 4 * (size_t)o->key0;
            double tt = t, t0 = K[0], t1 = K[4 * (o->nkeys - 1)];
            if (o->loop && t1 > t0 && tt > t0)
                tt = t0 + fmod(tt - t0, t1 - t0);
            int seg = -1;
            for (int q = 0; q + 1 < o->nkeys; q++)
                if (tt >= K[4 * q] && tt <= K[4 * (q + 1)]) {
                    seg = q;
                    break;
                }
            if (seg < 0) { /* before the first key or after the last: rest there */
                const float *e = tt < t0 ? K : K + 4 * (o->nkeys - 1);
                for (int k = 0; k < 3; k++) {
                    p->c[k] = k < dim ? e[1 + k] : 0.0f;
                    p->v[k] = 0.0f;
                }
            } else {
                const float *a = K + 4 * seg, *b = a + 4;
                float span = b[0] - a[0], u = (float)((tt - a[0]) / span);
                for (int k = 0; k < 3; k++) {
                    p->c[k] = k < dim ? a[1 + k] + u * (b[1 + k] - a[1 + k]) : 0.0f;
                    p->v[k] = k < dim ? (b[1 + k] - a[1 + k]) / span : 0.0f;
                }
            }
        }
        float wl = len3(o->spin);
        p->rotated = wl > 0.0f;
        if (p->rotated)
            rotation(o->spin, wl * (float)t, p->R);
        else
            for (int k = 0; k < 9; k++)
                p->R[k] = (k % 4 == 0) ? 1.0f : 0.0f;
        const float br = bound_radius(s, o);
        for (int k = 0; k < 3; k++) {
            p->bmin[k] = p->c[k] - br;
            p->bmax[k] = p->c[k] + br;
        }
    }
    return n;
}

/* ---- distances ------------------------------------------------------------------- */

static float sdf_one(const flip_posed *p, int dim, const float x[3])
{
    const flip_obstacle *o = p->o;
    float d[3] = {x[0] - p->c[0], x[1] - p->c[1], dim == 3 ? x[2] - p->c[2] : 0.0f}, q[3];
    if (p->rotated) { /* local = R^T d */
        for (int k = 0; k < 3; k++)
            q[k] = p->R[k] * d[0] + p->R[3 + k] * d[1] + p->R[6 + k] * d[2];
    } else {
        q[0] = d[0], q[1] = d[1], q[2] = d[2];
    }
    switch (o->shape) {
    case OB_SPHERE: return len3(q) - o->radius;
    case OB_BOX: {
        float e[3], out2 = 0.0f, in = -INFINITY;
        for (int k = 0; k < 3; k++) {
            e[k] = fabsf(q[k]) - o->half[k];
            if (e[k] > 0.0f)
                out2 += e[k] * e[k];
            in = e[k] > in ? e[k] : in;
        }
        return sqrtf(out2) + (in < 0.0f ? in : 0.0f);
    }
    case OB_CAPSULE: {
        float aa = dot3(o->axis, o->axis), u = aa > 0.0f ? dot3(q, o->axis) / aa : 0.0f;
        u = u < -1.0f ? -1.0f : (u > 1.0f ? 1.0f : u);
        float r[3] = {q[0] - u * o->axis[0], q[1] - u * o->axis[1], q[2] - u * o->axis[2]};
        return len3(r) - o->radius;
    }
    case OB_PLANE: return dot3(q, o->normal);
    case OB_METABALLS: {
        float m = INFINITY;
        for (int b = 0; b < o->nballs; b++) {
            const float *ball = p->balls + 4 * b;
            float r[3] = {q[0] - ball[0], q[1] - ball[1], q[2] - ball[2]};
            float di = len3(r) - ball[3];
            m = di < m ? di : m;
        }
        if (!(o->blend > 0.0f))
            return m;
        float sum = 0.0f;
        for (int b = 0; b < o->nballs; b++) {
            const float *ball = p->balls + 4 * b;
            float r[3] = {q[0] - ball[0], q[1] - ball[1], q[2] - ball[2]};
            float di = len3(r) - ball[3];
            sum += expf(-(di - m) / o->blend);
        }
        return m - o->blend * logf(sum);
    }
    }
    return INFINITY;
}

float flip_sdf(const flip_posed *ob, int nob, int dim, const float x[3], int *which)
{
    float best = INFINITY;
    int w = 0;
    for (int i = 0; i < nob; i++) {
        float d = sdf_one(&ob[i], dim, x);
        if (d < best) {
            best = d;
            w = i;
        }
    }
    if (which)
        *which = w;
    return best;
}

void flip_obstacle_velocity(const flip_posed *ob, const float x[3], float v[3])
{
    const float r[3] = {x[0] - ob->c[0], x[1] - ob->c[1], x[2] - ob->c[2]};
    v[0] = ob->v[0] + ob->w[1] * r[2] - ob->w[2] * r[1];
    v[1] = ob->v[1] + ob->w[2] * r[0] - ob->w[0] * r[2];
    v[2] = ob->v[2] + ob->w[0] * r[1] - ob->w[1] * r[0];
}

/* outward unit normal of one obstacle at x by central differences */
static void sdf_normal(const flip_posed *p, int dim, const float x[3], float n[3])
{
    const float e = 1e-4f * (isfinite(p->bmax[0]) ? fmaxf(p->bmax[0] - p->bmin[0], 1e-3f) : 1.0f);
    float l2 = 0.0f;
    for (int k = 0; k < 3; k++) {
        n[k] = 0.0f;
        if (k >= dim)
            continue;
        float a[3] = {x[0], x[1], x[2]}, b[3] = {x[0], x[1], x[2]};
        a[k] += e;
        b[k] -= e;
        n[k] = sdf_one(p, dim, a) - sdf_one(p, dim, b);
        l2 += n[k] * n[k];
    }
    if (l2 > 0.0f) {
        const float inv = 1.0f / sqrtf(l2);
        for (int k = 0; k < 3; k++)
            n[k] *= inv;
    } else {
        n[0] = n[2] = 0.0f;
        n[1] = 1.0f;
    }
}

int flip_project(const flip_posed *ob, int nob, int dim, float margin, float x[3], float *v)
{
    int moved = 0;
    for (int iter = 0; iter < 8; iter++) {
        int any = 0;
        for (int i = 0; i < nob; i++) {
            const flip_posed *p = &ob[i];
            if (x[0] < p->bmin[0] - margin || x[0] > p->bmax[0] + margin || x[1] < p->bmin[1] - margin ||
                x[1] > p->bmax[1] + margin || (dim == 3 && (x[2] < p->bmin[2] - margin || x[2] > p->bmax[2] + margin)))
                continue;
            const float d = sdf_one(p, dim, x);
            if (d >= margin)
                continue;
            float n[3];
            sdf_normal(p, dim, x, n);
            /* a little more than the deficit, so float rounding lands outside */
            const float push = (margin - d) * 1.0001f + 1e-7f;
            for (int k = 0; k < dim; k++)
                x[k] += push * n[k];
            if (v) {
                float vo[3], vn = 0.0f;
                flip_obstacle_velocity(p, x, vo);
                for (int k = 0; k < dim; k++)
                    vn += (v[k] - vo[k]) * n[k];
                if (vn < 0.0f)
                    for (int k = 0; k < dim; k++)
                        v[k] -= vn * n[k];
            }
            any = moved = 1;
        }
        if (!any)
            break;
    }
    return moved;
}

/* ---- the obstacle density grid ------------------------------------------------------ */

/* A byte image of everything the grids depend on, to rebuild them only when
 * something changed (or moves). */
typedef struct snap_hdr {
    int nobs, nballs, nkeys, ngrounds, nbumps;
    float rho0, scale, radius;
} snap_hdr;

int flip_obstacle_moves(const flip_obstacle *o)
{
    return o->nkeys > 1 || o->vel[0] != 0.0f || o->vel[1] != 0.0f || o->vel[2] != 0.0f || o->spin[0] != 0.0f ||
           o->spin[1] != 0.0f || o->spin[2] != 0.0f;
}

static void *snap_take(const flip_state *s, int obs_on, int ground_on, float rho0, float scale, size_t *len)
{
    snap_hdr h;
    memset(&h, 0, sizeof h);
    h.nobs = obs_on ? s->nobs : 0;
    h.nballs = obs_on ? s->nballs : 0;
    h.nkeys = obs_on ? s->nkeys : 0;
    h.ngrounds = ground_on ? s->ngrounds : 0;
    h.nbumps = ground_on ? s->nbumps : 0;
    h.rho0 = rho0;
    h.scale = scale;
    h.radius = s->g.radius;
    size_t parts[6] = {sizeof h, (size_t)h.nobs * sizeof *s->obs, (size_t)h.nballs * 4 * sizeof(float),
                       (size_t)h.nkeys * 4 * sizeof(float), (size_t)h.ngrounds * sizeof *s->grounds,
                       (size_t)h.nbumps * 5 * sizeof(float)};
    const void *src[6] = {&h, s->obs, s->balls, s->keys, s->grounds, s->bumps};
    size_t total = 0;
    for (int i = 0; i < 6; i++)
        total += parts[i];
    char *buf = malloc(total ? total : 1);
    if (!buf)
        return NULL;
    size_t off = 0;
    for (int i = 0; i < 6; i++) {
        if (parts[i])
            memcpy(buf + off, src[i], parts[i]);
        off += parts[i];
    }
    *len = total;
    return buf;
}

/* phi over the bounding box (grown by the splat radius) of each obstacle
 * in `ob` whose moving flag equals `which`; each cell takes the minimum in
 * obstacle order. */
static void phi_min(const flip_geom *g, const flip_posed *ob, int nob, int which, float *restrict phi)
{
    const float rw = g->radius * g->h;
    const long nx = (long)g->n[0], ny = (long)g->n[1], nz = (long)g->n[2];
    const int dim = g->dim;
    for (int i = 0; i < nob; i++) {
        if (flip_obstacle_moves(ob[i].o) != which)
            continue;
        long lo[3] = {0, 0, 0}, hi[3] = {nx - 1, ny - 1, nz - 1};
        for (int k = 0; k < dim; k++) {
            if (!isfinite(ob[i].bmin[k]))
                continue;
            long a = (long)floorf((ob[i].bmin[k] - rw - g->origin[k]) * g->inv_h) - 1;
            long b = (long)ceilf((ob[i].bmax[k] + rw - g->origin[k]) * g->inv_h) + 1;
            lo[k] = a > lo[k] ? a : lo[k];
            hi[k] = b < hi[k] ? b : hi[k];
        }
        if (lo[0] > hi[0] || lo[1] > hi[1] || lo[2] > hi[2])
            continue;
        const long my = hi[1] - lo[1] + 1, mz = hi[2] - lo[2] + 1;
#pragma omp parallel for schedule(static)
        for (long kk = 0; kk < my * mz; kk++) {
            const long k3 = lo[2] + kk / my, j = lo[1] + kk % my;
            for (long ii = lo[0]; ii <= hi[0]; ii++) {
                const size_t c = (size_t)ii + (size_t)nx * ((size_t)j + (size_t)ny * (size_t)k3);
                const float xc[3] = {g->origin[0] + (float)ii * g->h, g->origin[1] + (float)j * g->h,
                                     dim == 3 ? g->origin[2] + (float)k3 * g->h : 0.0f};
                const float d = sdf_one(&ob[i], dim, xc);
                if (d < phi[c])
                    phi[c] = d;
            }
        }
    }
}

/* The part of the obstacle grids that changes only with the parameters:
 * the distance of the static obstacles (s->phi_static), the ground density
 * rho0 b / depth (s->rho_ground) and the ground grid flip.ground, rebuilt
 * when anything they depend on changed (*changed = 1). *moving: an active
 * obstacle moves (its distance is added every step). Shared by the C path
 * (flip_obstacle_grids) and the OpenCL path (flip_cl.c). */
int flip_obstacle_static(floe_ctx *ctx, flip_state *s, double t, float rho0, float scale, int *changed, int *moving)
{
    const floe_sim_info *si = flip_api->sim(ctx);
    const flip_geom *g = &s->g;
    const int obs_on = flip_obstacles_active(s, si->step), ground_on = flip_ground_active(s, si->step);
    *moving = 0;
    for (int i = 0; obs_on && i < s->nobs; i++)
        *moving |= flip_obstacle_moves(&s->obs[i]);
    size_t len = 0;
    char *snap = snap_take(s, obs_on, ground_on, rho0, scale, &len);
    if (!snap)
        return flip_api->fail(ctx, FLOE_ERR_NOMEM, "out of memory");
    *changed = !s->obs_grid_valid || s->snap_len != len || memcmp(snap, s->snap, len) != 0;
    if (!*changed) {
        free(snap);
        return FLOE_OK;
    }
    free(s->snap);
    s->snap = snap;
    s->snap_len = len;
    float *restrict ground = flip_grid_data(ctx, s->g_ground);
    if (!ground)
        return flip_api->fail(ctx, FLOE_ERR, "flip grids missing");
    const size_t cells = g->cells;
    if (!s->phi_static) {
        s->phi_static = malloc(cells * sizeof(float));
        s->rho_ground = malloc(cells * sizeof(float));
        if (!s->phi_static || !s->rho_ground)
            return flip_api->fail(ctx, FLOE_ERR_NOMEM, "out of memory (obstacle grids)");
    }
    flip_posed ob[64];
    const int nob = obs_on ? flip_obstacles_pose(s, t, g->dim, ob, 64) : 0;
    float *restrict phis = s->phi_static, *restrict rg = s->rho_ground;
    const long nx = (long)g->n[0];
#pragma omp parallel for schedule(static)
    for (size_t c = 0; c < cells; c++) {
        phis[c] = FLIP_FAR;
        float b = 0.0f, rb = 0.0f;
        if (ground_on) {
            const size_t i = c % (size_t)nx, j = c / (size_t)nx;
            const float xc[3] = {g->origin[0] + (float)i * g->h, g->origin[1] + (float)j * g->h, 0.0f};
            for (int q = 0; q < s->ngrounds; q++) {
                const float bq = ground_height(s, &s->grounds[q], xc);
                b += bq;
                rb += rho0 * bq / s->grounds[q].depth;
            }
        }
        ground[c] = b;
        rg[c] = rb;
    }
    phi_min(g, ob, nob, 0, phis);
    s->obs_grid_valid = 1;
    return FLOE_OK;
}

/* The obstacle distance grid flip.phi and the obstacle + ground density.
 * Static obstacles and the ground are rasterised once (again only when a
 * parameter changes); obstacles that move are added every step over their
 * bounding boxes. */
int flip_obstacle_grids(floe_ctx *ctx, flip_state *s, double t, float rho0, float scale)
{
    const floe_sim_info *si = flip_api->sim(ctx);
    const flip_geom *g = &s->g;
    int changed, moving, st;
    if ((st = flip_obstacle_static(ctx, s, t, rho0, scale, &changed, &moving)))
        return st;
    if (!changed && !moving)
        return FLOE_OK; /* nothing changed */
    float *restrict phi = flip_grid_data(ctx, s->g_phi);
    float *restrict rho_obs = s->rho_obs;
    if (!phi)
        return flip_api->fail(ctx, FLOE_ERR, "flip grids missing");
    const size_t cells = g->cells;
    const int obs_on = flip_obstacles_active(s, si->step);
    flip_posed ob[64];
    const int nob = obs_on && moving ? flip_obstacles_pose(s, t, g->dim, ob, 64) : 0;
    const float *restrict rg = s->rho_ground;
    memcpy(phi, s->phi_static, cells * sizeof(float));
    if (moving)
        phi_min(g, ob, nob, 1, phi);
    const float rw = g->radius * g->h, inv_rw = 1.0f / rw;
#pragma omp parallel for schedule(static)
    for (size_t c = 0; c < cells; c++)
        rho_obs[c] = (phi[c] < rw ? scale * rho0 * flip_ftab(s, phi[c] * inv_rw) : 0.0f) + rg[c];
    return FLOE_OK;
}
