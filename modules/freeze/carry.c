/* freeze.carry: ice attached to a moving body moves with it (the issue's
 * "attached to the solid it grew on, moving with it if that solid is a
 * rigid body"). The bodies are a moving boundary set whose particles carry
 * `body` (the body's index) and `r0` (their position in the body's frame):
 * the rigid module's set "bodies". Each body's pose (centre c, rotation R
 * with x = c + R r0) is recovered from its particles by least squares,
 *
 *     S = sum (r0 - r0m)(r0 - r0m)^T,   M = sum (x - xm)(r0 - r0m)^T,
 *     R = M S^-1,   c = xm - R r0m,
 *
 * exact for a rigid motion (then M = R S). So the module reads nothing of
 * the rigid module's but the set, and any module that moves a boundary set
 * that way carries ice too.
 *
 * A new ice particle (ice_body 0) is attached, at the first carry after it
 * froze, to what is nearest to it within H at the pose it froze in (the
 * previous call's poses): a body particle (ice_body = k + 1, ice_r0 its
 * position in body k's frame), or ice already attached (the same
 * attachment), else nothing that moves (ice_body = -1: it stays). Attached
 * ice is then placed x = c + R ice_r0, v = its displacement / dt. The
 * rigid module adds the ice's mass and the fluid's pressure on it to the
 * body when the scene names the ice to it (rigid.attach{ set = "ice" }:
 * ice_body and ice_r0 are what it reads).
 * The stage runs after the bodies moved (after rigid.step); on its first
 * call it marks the ice set moving (sorted at every neighbours stage). */
#include "freeze.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int inv3(const double a[3][3], double o[3][3])
{
    double det = a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1]) - a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0]) +
                 a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0]);
    double tr = a[0][0] + a[1][1] + a[2][2];
    if (!(fabs(det) > 1e-12 * tr * tr * tr))
        return -1;
    o[0][0] = (a[1][1] * a[2][2] - a[1][2] * a[2][1]) / det;
    o[0][1] = (a[0][2] * a[2][1] - a[0][1] * a[2][2]) / det;
    o[0][2] = (a[0][1] * a[1][2] - a[0][2] * a[1][1]) / det;
    o[1][0] = (a[1][2] * a[2][0] - a[1][0] * a[2][2]) / det;
    o[1][1] = (a[0][0] * a[2][2] - a[0][2] * a[2][0]) / det;
    o[1][2] = (a[0][2] * a[1][0] - a[0][0] * a[1][2]) / det;
    o[2][0] = (a[1][0] * a[2][1] - a[1][1] * a[2][0]) / det;
    o[2][1] = (a[0][1] * a[2][0] - a[0][0] * a[2][1]) / det;
    o[2][2] = (a[0][0] * a[1][1] - a[0][1] * a[1][0]) / det;
    return 0;
}

/* body k's pose from its particles' count, sums of r0 and x (sum[0..6]),
 * S = sum (r0 - r0m)(r0 - r0m)^T and M = sum (x - xm)(r0 - r0m)^T */
int fz_pose_solve(floe_ctx *ctx, const char *name, uint32_t k, const double sum[7], const double S[3][3],
                  const double M[3][3], fz_pose *P)
{
    double Si[3][3];
    if (sum[0] < 4 || inv3(S, Si))
        return api->fail(ctx, FLOE_ERR_ARG,
                         "freeze.carry: body %u of set '%s' has its particles in a plane or a line (%g of them): "
                         "no rotation can be read from them",
                         k, name, sum[0]);
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            P->R[a][b] = M[a][0] * Si[0][b] + M[a][1] * Si[1][b] + M[a][2] * Si[2][b];
    for (int a = 0; a < 3; a++)
        P->c[a] = sum[4 + a] / sum[0] - (P->R[a][0] * sum[1] + P->R[a][1] * sum[2] + P->R[a][2] * sum[3]) / sum[0];
    return FLOE_OK;
}

/* the poses of bodies 0 .. nb-1 from their particles */
static int poses(floe_ctx *ctx, const char *name, const float *x, const float *r0, const uint32_t *bid, uint32_t n,
                 uint32_t nb, fz_pose *P)
{
    double(*sum)[7] = calloc(nb, sizeof *sum); /* count, sum r0, sum x */
    double(*S)[3][3] = calloc(nb, sizeof *S), (*M)[3][3] = calloc(nb, sizeof *M);
    if (!sum || !S || !M) {
        free(sum), free(S), free(M);
        return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory");
    }
    for (uint32_t i = 0; i < n; i++) {
        double *s = sum[bid[i]];
        s[0] += 1;
        for (int a = 0; a < 3; a++)
            s[1 + a] += r0[3 * (size_t)i + a], s[4 + a] += x[3 * (size_t)i + a];
    }
    for (uint32_t i = 0; i < n; i++) {
        const double *s = sum[bid[i]];
        double q[3], y[3];
        for (int a = 0; a < 3; a++)
            q[a] = r0[3 * (size_t)i + a] - s[1 + a] / s[0], y[a] = x[3 * (size_t)i + a] - s[4 + a] / s[0];
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++)
                S[bid[i]][a][b] += q[a] * q[b], M[bid[i]][a][b] += y[a] * q[b];
    }
    int st = FLOE_OK;
    for (uint32_t k = 0; k < nb && !st; k++)
        st = fz_pose_solve(ctx, name, k, sum[k], S[k], M[k], &P[k]);
    free(sum), free(S), free(M);
    return st;
}

static void place(const fz_pose *P, const float r[3], float out[3])
{
    for (int a = 0; a < 3; a++)
        out[a] = (float)(P->c[a] + P->R[a][0] * r[0] + P->R[a][1] * r[1] + P->R[a][2] * r[2]);
}

/* r = R^T (x - c) */
static void local(const fz_pose *P, const float x[3], float r[3])
{
    double d[3] = {x[0] - P->c[0], x[1] - P->c[1], x[2] - P->c[2]};
    for (int a = 0; a < 3; a++)
        r[a] = (float)(P->R[0][a] * d[0] + P->R[1][a] * d[1] + P->R[2][a] * d[2]);
}

/* attach the ice particles with ice_body 0 (new since the last call) */
static int attach(floe_ctx *ctx, const float *xi, int32_t *kb, float *r0i, uint32_t ni, const float *r0,
                  const uint32_t *bid, uint32_t n, const fz_pose *P)
{
    uint32_t fresh = 0;
    for (uint32_t i = 0; i < ni; i++)
        fresh += kb[i] == 0;
    if (!fresh)
        return FLOE_OK;
    /* candidates: the body particles where they were, then the attached ice */
    float *cx = malloc(((size_t)n + ni + 1) * 3 * sizeof *cx);
    int32_t *ck = malloc(((size_t)n + ni + 1) * sizeof *ck);
    if (!cx || !ck) {
        free(cx), free(ck);
        return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory");
    }
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++, m++) {
        place(&P[bid[i]], &r0[3 * (size_t)i], &cx[3 * (size_t)m]);
        ck[m] = (int32_t)bid[i] + 1;
    }
    for (uint32_t i = 0; i < ni; i++)
        if (kb[i] != 0) {
            memcpy(&cx[3 * (size_t)m], &xi[3 * (size_t)i], 3 * sizeof *cx);
            ck[m++] = kb[i];
        }
    const float H = api->sim(ctx)->support;
    cgrid g = {0};
    uint32_t cap = 256, *b = malloc(cap * sizeof *b);
    int st = !b || cg_build(&g, cx, m, H) ? api->fail(ctx, FLOE_ERR_NOMEM, "out of memory for the cell lists") : FLOE_OK;
    for (uint32_t i = 0; i < ni && !st; i++) {
        if (kb[i] != 0)
            continue;
        uint32_t q = cg_query(&g, &xi[3 * (size_t)i], H, UINT32_MAX, b, cap);
        if (q > cap) {
            uint32_t *nb = realloc(b, (size_t)q * sizeof *b);
            if (!nb) {
                st = api->fail(ctx, FLOE_ERR_NOMEM, "out of memory for the neighbour queries");
                break;
            }
            b = nb, cap = q;
            q = cg_query(&g, &xi[3 * (size_t)i], H, UINT32_MAX, b, cap);
        }
        float best = INFINITY;
        int32_t k = -1;
        for (uint32_t a = 0; a < q; a++) {
            const float *y = &cx[3 * (size_t)b[a]];
            float d2 = (y[0] - xi[3 * i]) * (y[0] - xi[3 * i]) + (y[1] - xi[3 * i + 1]) * (y[1] - xi[3 * i + 1]) +
                       (y[2] - xi[3 * i + 2]) * (y[2] - xi[3 * i + 2]);
            if (d2 < best)
                best = d2, k = ck[b[a]];
        }
        kb[i] = k > 0 ? k : -1;
        if (k > 0)
            local(&P[k - 1], &xi[3 * (size_t)i], &r0i[3 * (size_t)i]);
    }
    cg_free(&g);
    free(b), free(cx), free(ck);
    return st;
}

/* the stage's sets (checked) and, at its first call, the ice set made moving */
int fz_carry_sets(const floe_stage_call *c, floe_set *ice, floe_set_info *ii, floe_set *bs, floe_set_info *bi)
{
    floe_ctx *ctx = c->ctx;
    fz_state *s = c->state;
    const char *ice_name = c->param[CA_ICE].s, *bname = c->param[CA_BODIES].s;
    *ice = api->set_find(ctx, ice_name), *bs = api->set_find(ctx, bname);
    if (!ice->id || api->set_info(ctx, *ice, ii) || ii->kind != FLOE_SET_BOUNDARY)
        return api->fail(ctx, FLOE_ERR_ARG, "%s: no boundary set '%s' for the ice (sim:boundary_set)", c->name,
                         ice_name);
    if (!bs->id || api->set_info(ctx, *bs, bi) || bi->kind != FLOE_SET_BOUNDARY)
        return api->fail(ctx, FLOE_ERR_ARG, "%s: no boundary set '%s' of moving bodies (the rigid module's)", c->name,
                         bname);
    if (api->sim(ctx)->dim != 3)
        return api->fail(ctx, FLOE_ERR_ARG, "%s: 3D scenes only", c->name);
    if (!s->carry_started) { /* from now on the ice moves: sorted at every neighbours stage */
        int st = api->set_moving(ctx, *ice);
        if (st)
            return st;
        s->carry_started = 1;
    }
    return FLOE_OK;
}

int fz_carry(const floe_stage_call *c)
{
    floe_ctx *ctx = c->ctx;
    fz_state *s = c->state;
    const char *ice_name = c->param[CA_ICE].s, *bname = c->param[CA_BODIES].s;
    floe_set ice, bs;
    floe_set_info ii, bi;
    int st = fz_carry_sets(c, &ice, &ii, &bs, &bi);
    if (st)
        return st;
    const float *xb = floe_need(api, ctx, bs, bname, "x", FLOE_VEC3, &st);
    const float *r0 = floe_need(api, ctx, bs, bname, "r0", FLOE_VEC3, &st);
    const uint32_t *bid = (const uint32_t *)(const void *)floe_need(api, ctx, bs, bname, "body", FLOE_U32, &st);
    if (st)
        return st;
    uint32_t nb = 0;
    for (uint32_t i = 0; i < bi.n; i++)
        nb = bid[i] + 1 > nb ? bid[i] + 1 : nb;
    fz_pose *P = calloc(nb + 1, sizeof *P);
    if (!P)
        return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory");
    if ((st = poses(ctx, bname, xb, r0, bid, bi.n, nb, P))) {
        free(P);
        return st;
    }
    /* the poses the new ice froze in: the last call's (this one's at the first) */
    const fz_pose *P0 = s->carry_nb == nb && s->carry_pose ? (const fz_pose *)s->carry_pose : P;
    uint32_t moved = 0;
    if (ii.n) {
        float *xi = fz_attr(ctx, ice, ice_name, "x", FLOE_VEC3, &st);
        int32_t *kb = fz_attr(ctx, ice, ice_name, "ice_body", FLOE_I32, &st);
        float *ri = fz_attr(ctx, ice, ice_name, "ice_r0", FLOE_VEC3, &st);
        float *vi = api->attr(ctx, ice, "v", FLOE_VEC3); /* where a solver reads boundary velocities */
        if (!st)
            st = attach(ctx, xi, kb, ri, ii.n, r0, bid, bi.n, P0);
        const float dt = (float)api->sim(ctx)->dt;
        for (uint32_t i = 0; i < ii.n && !st; i++) {
            if (kb[i] <= 0 || (uint32_t)kb[i] > nb)
                continue;
            float y[3];
            place(&P[kb[i] - 1], &ri[3 * (size_t)i], y);
            for (int a = 0; a < 3; a++) {
                if (vi)
                    vi[3 * (size_t)i + a] = dt > 0 ? (y[a] - xi[3 * (size_t)i + a]) / dt : 0.0f;
                xi[3 * (size_t)i + a] = y[a];
            }
            moved++;
        }
    }
    if (!st) {
        free(s->carry_pose);
        s->carry_pose = P;
        s->carry_nb = nb;
        api->stat(ctx, "ice_carried", (double)moved);
    } else {
        free(P);
    }
    return st;
}
