/* Particles of another boundary set that ride on the bodies: the ice that
 * grew on a body (the freeze module's ice set, carried by freeze.carry).
 * rigid.attach{ set = "ice", body = "ice_body", r0 = "ice_r0" } names the
 * set and its two attributes: `body` (int32, k + 1 for body k, anything
 * else: not attached) and `r0` (the particle's position in body k's frame,
 * the frame of the bodies' own `r0`: x = c + R r0). Each attached particle
 *
 *  * adds its mass m (the set's `m`) at r0 to a dynamic body: the mass, the
 *    centre of mass and the inertia ODE integrates are those of body +
 *    attached particles (rigid_attach_update, before ODE's step);
 *  * takes the fluid's pressure force, by the solver's boundary formula as
 *    the body's own particles do (rigid_attach_forces, in rigid.force).
 *
 * When the attached mass changes, the body and what it gained keep the
 * body's linear momentum and its angular momentum about a fixed point (the
 * new mass joins at rest: the ice's water stopped when it froze, Kim's
 * model). ODE holds the body at the centre of mass of body + attached
 * particles; the state the module keeps and reports (x, v) stays the body's
 * own centre, so the body particles, its mesh, its collision shape (an
 * offset from ODE's body), its joints' anchors and the torques stay where
 * they were: rigid_attach_torque moves the torque about x to the centre of
 * mass, rigid_attach_from_com reads ODE's pose back to x. Kinematic and
 * fixed bodies carry their ice without its mass mattering. */
#include "rigid.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int rigid_attach_config(rigid_state *s, const char *set, const char *body, const char *r0)
{
    if (strlen(set) >= RIGID_NAME || strlen(body) >= RIGID_NAME || strlen(r0) >= RIGID_NAME || !*set || !*body ||
        !*r0)
        return -1;
    strcpy(s->att_set, set);
    strcpy(s->att_body, body);
    strcpy(s->att_r0, r0);
    return 0;
}

/* the attached set, its count and, per particle, the body index (nb: none) */
static int attached(rigid_state *s, floe_set *set, uint32_t *n, const float **r0, const float **m)
{
    floe_ctx *ctx = s->ctx;
    floe_set_info in;
    *set = api->set_find(ctx, s->att_set);
    if (!set->id || api->set_info(ctx, *set, &in) || in.kind != FLOE_SET_BOUNDARY)
        return api->fail(ctx, FLOE_ERR_ARG, "rigid.attach: no boundary set '%s'", s->att_set);
    *n = 0;
    const int32_t *kb = in.n ? api->attr_read(ctx, *set, s->att_body, FLOE_I32) : NULL;
    if (!kb) /* nothing attached yet (the attribute comes with the first attachment) */
        return FLOE_OK;
    *r0 = api->attr_read(ctx, *set, s->att_r0, FLOE_VEC3);
    *m = api->attr_read(ctx, *set, "m", FLOE_F32);
    if (!*r0 || !*m)
        return api->fail(ctx, FLOE_ERR_ARG, "rigid.attach: set '%s' has '%s' but lacks '%s' (vec3) or 'm'",
                         s->att_set, s->att_body, s->att_r0);
    if (in.n > s->att_cap) {
        uint32_t *p = realloc(s->att_idx, (size_t)in.n * sizeof *p);
        if (!p)
            return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory");
        s->att_idx = p, s->att_cap = in.n;
    }
    for (uint32_t i = 0; i < in.n; i++)
        s->att_idx[i] = kb[i] >= 1 && kb[i] <= s->nb ? (uint32_t)(kb[i] - 1) : (uint32_t)s->nb;
    *n = in.n;
    return FLOE_OK;
}

int rigid_attach_forces(rigid_state *s, const rigid_couple *c)
{
    if (!s->att_set[0])
        return FLOE_OK;
    floe_set set;
    uint32_t n;
    const float *r0 = NULL, *m = NULL;
    int st = attached(s, &set, &n, &r0, &m);
    if (st || n == 0)
        return st;
    rigid_target tg = {.set = set, .name = s->att_set, .body = s->att_idx,
                       .x = api->attr_read(s->ctx, set, "x", FLOE_VEC3), .V = api->attr_read(s->ctx, set, "V", FLOE_F32)};
    if (!tg.x || !tg.V)
        return api->fail(s->ctx, FLOE_ERR_ARG, "rigid.attach: set '%s' lacks x or V", s->att_set);
    double *F = calloc((size_t)s->nb * 6, sizeof *F);
    if (!F)
        return api->fail(s->ctx, FLOE_ERR_NOMEM, "out of memory");
    double *T = F + 3 * (size_t)s->nb;
    st = rigid_sums_attached(s, c, &tg, F, T);
    for (int k = 0; k < s->nb && !st; k++)
        for (int d = 0; d < 3; d++) {
            s->b[k].F[d] += F[3 * k + d];
            s->b[k].T[d] += T[3 * k + d];
        }
    free(F);
    return st;
}

static void cross(const double a[3], const double b[3], double o[3])
{
    o[0] = a[1] * b[2] - a[2] * b[1];
    o[1] = a[2] * b[0] - a[0] * b[2];
    o[2] = a[0] * b[1] - a[1] * b[0];
}

static void mulv(const double A[3][3], const double v[3], double o[3])
{
    for (int a = 0; a < 3; a++)
        o[a] = A[a][0] * v[0] + A[a][1] * v[1] + A[a][2] * v[2];
}

/* R I R^T */
static void to_world(const double R[3][3], const double I[3][3], double W[3][3])
{
    double T[3][3];
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            T[a][b] = R[a][0] * I[0][b] + R[a][1] * I[1][b] + R[a][2] * I[2][b];
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            W[a][b] = T[a][0] * R[b][0] + T[a][1] * R[b][1] + T[a][2] * R[b][2];
}

/* body + attached mass (m, first moment s1, second moment s2 about the
 * body's centre): total mass, centre c and inertia about c, body frame */
static double combined(const rigid_body *b, double m, const double s1[3], const double s2[3][3], double c[3],
                       double I[3][3])
{
    const double M = b->mass + m;
    for (int a = 0; a < 3; a++)
        c[a] = s1[a] / M;
    const double tr = s2[0][0] + s2[1][1] + s2[2][2], cc = c[0] * c[0] + c[1] * c[1] + c[2] * c[2];
    for (int a = 0; a < 3; a++)
        for (int e = 0; e < 3; e++)
            I[a][e] = b->inertia[a][e] + (a == e ? tr : 0.0) - s2[a][e] - M * ((a == e ? cc : 0.0) - c[a] * c[e]);
    return M;
}

static int inv3(const double A[3][3], double O[3][3])
{
    const double det = A[0][0] * (A[1][1] * A[2][2] - A[1][2] * A[2][1]) -
                       A[0][1] * (A[1][0] * A[2][2] - A[1][2] * A[2][0]) +
                       A[0][2] * (A[1][0] * A[2][1] - A[1][1] * A[2][0]);
    if (!(fabs(det) > 0.0))
        return -1;
    for (int a = 0; a < 3; a++)
        for (int e = 0; e < 3; e++) {
            const int a1 = (e + 1) % 3, a2 = (e + 2) % 3, e1 = (a + 1) % 3, e2 = (a + 2) % 3;
            O[a][e] = (A[a1][e1] * A[a2][e2] - A[a1][e2] * A[a2][e1]) / det;
        }
    return 0;
}

/* body k's new mass properties in ODE, its momenta kept (or, after a
 * load, its saved velocities of the body's centre kept) */
static int rebalance(rigid_state *s, rigid_body *b, double m, const double s1[3], const double s2[3][3], uint32_t n)
{
    double R[3][3], c0[3], I0[3][3], c1[3], I1[3][3];
    rigid_quat_rot(b->q, R);
    const double M0 = combined(b, b->att_m, b->att_s1, b->att_s2, c0, I0);
    const double M1 = combined(b, m, s1, s2, c1, I1);
    const dReal *pp = dBodyGetPosition(b->body), *pv = dBodyGetLinearVel(b->body), *pw = dBodyGetAngularVel(b->body);
    const double p0[3] = {pp[0], pp[1], pp[2]}, v0[3] = {pv[0], pv[1], pv[2]}, w0[3] = {pw[0], pw[1], pw[2]};
    double rc[3], p1[3], v1[3], w1[3];
    mulv(R, c1, rc);
    for (int a = 0; a < 3; a++)
        p1[a] = b->x[a] + rc[a];
    double W1[3][3];
    to_world(R, I1, W1);
    if (b->att_reset) { /* ODE was given the body's centre and its velocity */
        cross(b->w, rc, v1);
        for (int a = 0; a < 3; a++)
            v1[a] += b->v[a], w1[a] = b->w[a];
    } else {
        double W0[3][3], L[3], P[3], dp[3], t[3], Wi[3][3];
        to_world(R, I0, W0);
        mulv(W0, w0, L);
        for (int a = 0; a < 3; a++)
            P[a] = M0 * v0[a], dp[a] = p0[a] - p1[a], v1[a] = P[a] / M1;
        cross(dp, P, t); /* L about the new centre: L + (p0 - p1) x P */
        for (int a = 0; a < 3; a++)
            L[a] += t[a];
        if (inv3(W1, Wi))
            return api->fail(s->ctx, FLOE_ERR, "rigid body '%s': singular inertia with its attached particles",
                             b->name);
        mulv(Wi, L, w1);
    }
    dMass dm;
    dMassSetZero(&dm);
    dMassSetParameters(&dm, M1, 0, 0, 0, I1[0][0], I1[1][1], I1[2][2], I1[0][1], I1[0][2], I1[1][2]);
    if (!dMassCheck(&dm))
        return api->fail(s->ctx, FLOE_ERR, "rigid body '%s': ODE refuses its mass with %u attached particles (%g kg)",
                         b->name, n, m);
    /* the body's joints keep their world anchors (ODE keeps them relative
     * to the body's position, which moves to the new centre) */
    double(*anc)[3] = s->nj ? calloc((size_t)s->nj, sizeof *anc) : NULL;
    if (s->nj && !anc)
        return api->fail(s->ctx, FLOE_ERR_NOMEM, "out of memory");
    const int k = (int)(b - s->b);
    for (int j = 0; j < s->nj; j++)
        if ((s->j[j].a == k || s->j[j].b == k) && dJointGetType(s->j[j].j) == dJointTypeHinge) {
            dVector3 a;
            dJointGetHingeAnchor(s->j[j].j, a);
            anc[j][0] = a[0], anc[j][1] = a[1], anc[j][2] = a[2];
        }
    const int kin = dBodyIsKinematic(b->body); /* held: ODE keeps the mass for its release */
    dBodySetMass(b->body, &dm);
    if (kin)
        dBodySetKinematic(b->body);
    dBodySetPosition(b->body, p1[0], p1[1], p1[2]);
    if (b->geom) /* the collision shape stays on the body's own centre, -c from ODE's */
        dGeomSetOffsetPosition(b->geom, -c1[0], -c1[1], -c1[2]);
    for (int j = 0; j < s->nj; j++) {
        if (s->j[j].a != k && s->j[j].b != k)
            continue;
        if (dJointGetType(s->j[j].j) == dJointTypeHinge)
            dJointSetHingeAnchor(s->j[j].j, anc[j][0], anc[j][1], anc[j][2]);
        else if (dJointGetType(s->j[j].j) == dJointTypeFixed)
            dJointSetFixed(s->j[j].j); /* glued where they are */
    }
    free(anc);
    dBodySetLinearVel(b->body, v1[0], v1[1], v1[2]);
    dBodySetAngularVel(b->body, w1[0], w1[1], w1[2]);
    b->att_m = m, b->att_n = n;
    memcpy(b->att_s1, s1, sizeof b->att_s1);
    memcpy(b->att_s2, s2, sizeof b->att_s2);
    memcpy(b->att_c, c1, sizeof b->att_c);
    b->att_reset = 0;
    /* the body's centre's velocity, as rigid_attach_from_com gives it */
    double wr[3];
    cross(w1, rc, wr);
    for (int a = 0; a < 3; a++)
        b->v[a] = v1[a] - wr[a], b->w[a] = w1[a];
    return FLOE_OK;
}

int rigid_attach_update(rigid_state *s)
{
    if (!s->att_set[0])
        return FLOE_OK;
    floe_set set;
    uint32_t n;
    const float *r0 = NULL, *m = NULL;
    int st = attached(s, &set, &n, &r0, &m);
    if (st)
        return st;
    const int nb = s->nb;
    double(*sum)[13] = calloc((size_t)nb, sizeof *sum); /* m, m r, m r r^T (9) */
    uint32_t *cnt = calloc((size_t)nb, sizeof *cnt);
    if (!sum || !cnt) {
        free(sum), free(cnt);
        return api->fail(s->ctx, FLOE_ERR_NOMEM, "out of memory");
    }
    for (uint32_t i = 0; i < n; i++) {
        const uint32_t k = s->att_idx[i];
        if (k >= (uint32_t)nb)
            continue;
        const double mi = m[i], r[3] = {r0[3 * (size_t)i], r0[3 * (size_t)i + 1], r0[3 * (size_t)i + 2]};
        double *q = sum[k];
        q[0] += mi;
        for (int a = 0; a < 3; a++) {
            q[1 + a] += mi * r[a];
            for (int e = 0; e < 3; e++)
                q[4 + 3 * a + e] += mi * r[a] * r[e];
        }
        cnt[k]++;
    }
    for (int k = 0; k < nb && !st; k++) {
        rigid_body *b = &s->b[k];
        if (b->motion != RIGID_DYNAMIC || !b->body)
            continue;
        const double *q = sum[k];
        double s2[3][3];
        memcpy(s2, q + 4, sizeof s2);
        /* unchanged (the set's order, and so the sums' last bits, may change) */
        if (!b->att_reset && cnt[k] == b->att_n && fabs(q[0] - b->att_m) <= 1e-9 * q[0])
            continue;
        st = rebalance(s, b, q[0], q + 1, s2, cnt[k]);
    }
    free(sum), free(cnt);
    return st;
}

/* the torque about the body's centre (the couplings') about the centre of
 * mass ODE turns the body about: T - (R c) x F */
void rigid_attach_torque(const rigid_body *b, double T[3])
{
    double R[3][3], rc[3], t[3];
    rigid_quat_rot(b->q, R);
    mulv(R, b->att_c, rc);
    cross(rc, b->F, t);
    for (int a = 0; a < 3; a++)
        T[a] = b->T[a] - t[a];
}

/* ODE's centre of mass and its velocity (in b->x, b->v) to the body's own
 * centre: x - R c, v - w x R c */
void rigid_attach_from_com(rigid_body *b)
{
    if (b->att_c[0] == 0.0 && b->att_c[1] == 0.0 && b->att_c[2] == 0.0)
        return;
    double R[3][3], rc[3], wr[3];
    rigid_quat_rot(b->q, R);
    mulv(R, b->att_c, rc);
    cross(b->w, rc, wr);
    for (int a = 0; a < 3; a++)
        b->x[a] -= rc[a], b->v[a] -= wr[a];
}

/* a checkpoint gave ODE the bodies' own centres and velocities: the next
 * update re-places the attached mass without exchanging momentum */
void rigid_attach_loaded(rigid_state *s)
{
    for (int k = 0; k < s->nb; k++) {
        rigid_body *b = &s->b[k];
        b->att_m = 0.0, b->att_n = 0;
        memset(b->att_s1, 0, sizeof b->att_s1);
        memset(b->att_s2, 0, sizeof b->att_s2);
        memset(b->att_c, 0, sizeof b->att_c);
        b->att_reset = 1;
    }
}
