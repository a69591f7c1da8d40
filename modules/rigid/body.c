/* Bodies as particles: boundary particles of each shape (Akinci et al. 2012),
 * their volumes psi, the shape's surface as a mesh, and the placement of
 * the particles from the bodies' poses every step.
 *
 * The particle layer lies d/2 inside the true surface. A fluid particle
 * rests about d from a boundary particle and stands for the volume d/2
 * around itself, so against particles placed on the surface the fluid
 * would end d/2 outside it: every body would displace (w + d)(h + d)...
 * instead of w h..., a box of 10 spacings 21% too buoyant in 3D. Inset by
 * d/2, the fluid's edge meets the true surface (docs/rigid.md, "Where the
 * particles sit"). */
#include "rigid.h"

#include <floe/mesh.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

void rigid_quat_rot(const double q[4], double R[3][3])
{
    const double w = q[0], x = q[1], y = q[2], z = q[3];
    R[0][0] = 1 - 2 * (y * y + z * z), R[0][1] = 2 * (x * y - w * z), R[0][2] = 2 * (x * z + w * y);
    R[1][0] = 2 * (x * y + w * z), R[1][1] = 1 - 2 * (x * x + z * z), R[1][2] = 2 * (y * z - w * x);
    R[2][0] = 2 * (x * z - w * y), R[2][1] = 2 * (y * z + w * x), R[2][2] = 1 - 2 * (x * x + y * y);
}

/* R = Rz Ry Rx of Euler degrees (as sim:boundary_mesh's rotation), as a quaternion */
void rigid_euler_quat(const double deg[3], double q[4])
{
    const double k = M_PI / 360.0;
    const double cx = cos(deg[0] * k), sx = sin(deg[0] * k), cy = cos(deg[1] * k), sy = sin(deg[1] * k),
                 cz = cos(deg[2] * k), sz = sin(deg[2] * k);
    /* q = qz * qy * qx */
    q[0] = cz * cy * cx + sz * sy * sx;
    q[1] = cz * cy * sx - sz * sy * cx;
    q[2] = cz * sy * cx + sz * cy * sx;
    q[3] = sz * cy * cx - cz * sy * sx;
}

/* the body's surface as a mesh: a box's 12 triangles */
static int box_mesh(rigid_body *b, const double h[3])
{
    static const int corner[8][3] = {{-1, -1, -1}, {1, -1, -1}, {1, 1, -1}, {-1, 1, -1},
                                     {-1, -1, 1},  {1, -1, 1},  {1, 1, 1},  {-1, 1, 1}};
    static const uint32_t tri[12][3] = {{0, 2, 1}, {0, 3, 2}, {4, 5, 6}, {4, 6, 7}, {0, 1, 5}, {0, 5, 4},
                                        {3, 7, 6}, {3, 6, 2}, {0, 4, 7}, {0, 7, 3}, {1, 2, 6}, {1, 6, 5}};
    b->mx = malloc(8 * 3 * sizeof(float));
    b->mtri = malloc(12 * 3 * sizeof(uint32_t));
    if (!b->mx || !b->mtri)
        return -1;
    for (int v = 0; v < 8; v++)
        for (int d = 0; d < 3; d++)
            b->mx[3 * v + d] = (float)(corner[v][d] * h[d]);
    memcpy(b->mtri, tri, sizeof tri);
    b->nv = 8, b->nt = 12;
    return 0;
}

/* a sphere's surface for output: latitude-longitude, 16 x 32 */
static int sphere_mesh(rigid_body *b, double r)
{
    enum { NLAT = 16, NLON = 32 };
    const uint32_t nv = 2 + (NLAT - 1) * NLON, nt = 2 * NLON * (NLAT - 1);
    b->mx = malloc((size_t)nv * 3 * sizeof(float));
    b->mtri = malloc((size_t)nt * 3 * sizeof(uint32_t));
    if (!b->mx || !b->mtri)
        return -1;
    uint32_t v = 0, t = 0;
    b->mx[3 * v] = 0, b->mx[3 * v + 1] = (float)-r, b->mx[3 * v + 2] = 0, v++;
    for (int i = 1; i < NLAT; i++) {
        const double th = M_PI * i / NLAT;
        for (int j = 0; j < NLON; j++, v++) {
            const double ph = 2 * M_PI * j / NLON;
            b->mx[3 * v] = (float)(r * sin(th) * cos(ph));
            b->mx[3 * v + 1] = (float)(-r * cos(th));
            b->mx[3 * v + 2] = (float)(-r * sin(th) * sin(ph));
        }
    }
    b->mx[3 * v] = 0, b->mx[3 * v + 1] = (float)r, b->mx[3 * v + 2] = 0, v++;
#define RING(i, j) (1 + (uint32_t)((i) - 1) * NLON + (uint32_t)((j) % NLON))
    for (int j = 0; j < NLON; j++) {
        uint32_t *q = b->mtri + 3 * t++;
        q[0] = 0, q[1] = RING(1, j), q[2] = RING(1, j + 1);
    }
    for (int i = 1; i < NLAT - 1; i++)
        for (int j = 0; j < NLON; j++) {
            uint32_t *q = b->mtri + 3 * t++;
            q[0] = RING(i, j), q[1] = RING(i + 1, j), q[2] = RING(i + 1, j + 1);
            q = b->mtri + 3 * t++;
            q[0] = RING(i, j), q[1] = RING(i + 1, j + 1), q[2] = RING(i, j + 1);
        }
    for (int j = 0; j < NLON; j++) {
        uint32_t *q = b->mtri + 3 * t++;
        q[0] = nv - 1, q[1] = RING(NLAT - 1, j + 1), q[2] = RING(NLAT - 1, j);
    }
#undef RING
    b->nv = nv, b->nt = t;
    return 0;
}

/* Boundary particles on the surface of the box of half extents h - d/2
 * (the inset layer), a lattice of about d on every face; in 2D the outline
 * of the rectangle in the plane z = 0. Body frame, centred. */
int rigid_shape_box(rigid_state *s, rigid_body *b, const double half[3], float **px, uint32_t *n)
{
    const floe_sim_info *si = api->sim(s->ctx);
    const double d = si->spacing;
    const int dim = si->dim;
    double hi[3];
    int nc[3] = {0, 0, 0};
    for (int k = 0; k < dim; k++) {
        hi[k] = half[k] - 0.5 * d;
        nc[k] = (int)fmax(1.0, floor(2.0 * hi[k] / d + 0.5));
    }
    if (dim == 2)
        hi[2] = 0.0;
    size_t cap = (size_t)(nc[0] + 1) * (nc[1] + 1) * (nc[2] + 1), m = 0;
    float *p = malloc(cap * 3 * sizeof(float));
    if (!p)
        return api->fail(s->ctx, FLOE_ERR_NOMEM, "rigid body '%s': out of memory", b->name);
    for (int k = 0; k <= nc[2]; k++)
        for (int j = 0; j <= nc[1]; j++)
            for (int i = 0; i <= nc[0]; i++) {
                const int face = i == 0 || i == nc[0] || j == 0 || j == nc[1] || (dim == 3 && (k == 0 || k == nc[2]));
                if (!face)
                    continue;
                p[3 * m] = (float)(-hi[0] + 2.0 * hi[0] * i / nc[0]);
                p[3 * m + 1] = (float)(-hi[1] + 2.0 * hi[1] * j / nc[1]);
                p[3 * m + 2] = dim == 3 ? (float)(-hi[2] + 2.0 * hi[2] * k / nc[2]) : 0.0f;
                m++;
            }
    *px = p;
    *n = (uint32_t)m;
    double hm[3] = {half[0], half[1], dim == 3 ? half[2] : 0.5 * d};
    memcpy(b->half, half, sizeof b->half);
    return box_mesh(b, hm) ? api->fail(s->ctx, FLOE_ERR_NOMEM, "out of memory") : FLOE_OK;
}

/* A sphere (circle in 2D) of radius r - d/2: Fibonacci points at about one
 * per d^2 (one per d along the circle). */
int rigid_shape_sphere(rigid_state *s, rigid_body *b, double r, float **px, uint32_t *n)
{
    const floe_sim_info *si = api->sim(s->ctx);
    const double d = si->spacing, ri = r - 0.5 * d;
    uint32_t m = si->dim == 3 ? (uint32_t)fmax(4.0, floor(4.0 * M_PI * ri * ri / (d * d) + 0.5))
                              : (uint32_t)fmax(3.0, floor(2.0 * M_PI * ri / d + 0.5));
    float *p = malloc((size_t)m * 3 * sizeof(float));
    if (!p)
        return api->fail(s->ctx, FLOE_ERR_NOMEM, "rigid body '%s': out of memory", b->name);
    const double ga = M_PI * (3.0 - sqrt(5.0));
    for (uint32_t i = 0; i < m; i++) {
        if (si->dim == 3) {
            const double y = 1.0 - 2.0 * (i + 0.5) / m, rr = sqrt(fmax(0.0, 1.0 - y * y)), ph = ga * i;
            p[3 * i] = (float)(ri * rr * cos(ph));
            p[3 * i + 1] = (float)(ri * y);
            p[3 * i + 2] = (float)(ri * rr * sin(ph));
        } else {
            const double ph = 2.0 * M_PI * i / m;
            p[3 * i] = (float)(ri * cos(ph));
            p[3 * i + 1] = (float)(ri * sin(ph));
            p[3 * i + 2] = 0.0f;
        }
    }
    *px = p;
    *n = m;
    b->radius = r;
    return sphere_mesh(b, r) ? api->fail(s->ctx, FLOE_ERR_NOMEM, "out of memory") : FLOE_OK;
}

/* The mesh moved d/2 inward along its (area-weighted) vertex normals, as a
 * mesh the core samples (floe_boundary_mesh). The caller's mesh m is
 * already in the body frame (centre at the origin); inset replaces m's
 * vertices for the sampling and restores them. */
int rigid_shape_mesh_inset(rigid_state *s, rigid_body *b, float **px, uint32_t *n, floe_mesh *m)
{
    const double d = api->sim(s->ctx)->spacing;
    float *nrm = calloc((size_t)m->nverts * 3, sizeof(float)), *orig = malloc((size_t)m->nverts * 3 * sizeof(float));
    if (!nrm || !orig) {
        free(nrm), free(orig);
        return api->fail(s->ctx, FLOE_ERR_NOMEM, "rigid body '%s': out of memory", b->name);
    }
    memcpy(orig, m->x, (size_t)m->nverts * 3 * sizeof(float));
    for (uint32_t t = 0; t < m->ntris; t++) {
        const uint32_t *q = m->tri + 3 * t;
        const float *a = m->x + 3 * q[0], *c1 = m->x + 3 * q[1], *c2 = m->x + 3 * q[2];
        const float e1[3] = {c1[0] - a[0], c1[1] - a[1], c1[2] - a[2]}, e2[3] = {c2[0] - a[0], c2[1] - a[1], c2[2] - a[2]};
        const float nn[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]};
        for (int k = 0; k < 3; k++)
            for (int c = 0; c < 3; c++)
                nrm[3 * q[k] + c] += nn[c];
    }
    for (uint32_t v = 0; v < m->nverts; v++) {
        float *nv = nrm + 3 * v;
        const float l = sqrtf(nv[0] * nv[0] + nv[1] * nv[1] + nv[2] * nv[2]);
        for (int c = 0; c < 3 && l > 0.0f; c++)
            m->x[3 * v + c] -= (float)(0.5 * d) * nv[c] / l;
    }
    free(nrm);
    /* sample into the set's end, then take the particles back as an array */
    floe_set_info in;
    api->set_info(s->ctx, s->set, &in);
    const uint32_t before = in.n;
    const floe_mesh_use use = {.layers = 1};
    long added = api->boundary_mesh(s->ctx, s->set, m, &use);
    memcpy(m->x, orig, (size_t)m->nverts * 3 * sizeof(float));
    free(orig);
    if (added < 0)
        return FLOE_ERR;
    const float *x = api->attr(s->ctx, s->set, "x", FLOE_VEC3);
    float *p = malloc((size_t)(added ? added : 1) * 3 * sizeof(float));
    if (!p || !x)
        return free(p), api->fail(s->ctx, FLOE_ERR_NOMEM, "rigid body '%s': out of memory", b->name);
    memcpy(p, x + 3 * (size_t)before, (size_t)added * 3 * sizeof(float));
    /* the caller appends them again with the body's attributes */
    if (api->set_resize(s->ctx, s->set, before) != FLOE_OK)
        return free(p), FLOE_ERR;
    *px = p;
    *n = (uint32_t)added;
    return FLOE_OK;
}

/* The bodies set, made on the first body: a moving boundary set with the
 * body index and the body-frame position r0 of each particle and the
 * velocity v the fluid sees. */
static int ensure_set(rigid_state *s)
{
    if (s->set.id)
        return FLOE_OK;
    floe_set set = api->set_find(s->ctx, RIGID_SET);
    if (!set.id && !(set = api->set_create(s->ctx, RIGID_SET, FLOE_SET_BOUNDARY, 0.0f)).id)
        return FLOE_ERR_ARG;
    int st = api->set_moving(s->ctx, set);
    if (!st)
        st = api->attr_add(s->ctx, set, "body", FLOE_U32);
    if (!st)
        st = api->attr_add(s->ctx, set, "r0", FLOE_VEC3);
    if (!st)
        st = api->attr_add(s->ctx, set, "v", FLOE_VEC3);
    if (st)
        return st;
    s->set = set;
    return FLOE_OK;
}

int rigid_body_set(rigid_state *s) { return ensure_set(s); }

/* Append body b's particles (body frame, px[0..n)) to the bodies set, with
 * the Akinci volumes psi_k = 1 / sum_l W(r_kl) over the body's own particles
 * (a rigid body's are constant: computed once). */
int rigid_body_particles(rigid_state *s, rigid_body *b, const float *px, uint32_t n)
{
    int st = ensure_set(s);
    if (st)
        return st;
    floe_set_info in;
    if ((st = api->set_info(s->ctx, s->set, &in)) != FLOE_OK)
        return st;
    if ((st = api->set_resize(s->ctx, s->set, in.n + n)) != FLOE_OK)
        return st;
    float *r0 = api->attr(s->ctx, s->set, "r0", FLOE_VEC3), *V = api->attr(s->ctx, s->set, "V", FLOE_F32);
    uint32_t *id = api->attr(s->ctx, s->set, "body", FLOE_U32);
    if (!r0 || !V || !id)
        return api->fail(s->ctx, FLOE_ERR, "set '%s' lacks r0, V or body", RIGID_SET);
    const floe_sim_info *si = api->sim(s->ctx);
    const floe_kernel k = floe_kernel_make(si->dim, si->support);
    const float H2 = k.H * k.H;
    /* Akinci's psi_k = 1 / sum_l W_kl scaled so that a flat layer on the
     * lattice (spacing d) gets d^dim: with H = 2 d a fluid particle d from
     * the layer then sees what a row of fluid would give it (one layer
     * alone, unscaled, gets 1.47 d^2 in 2D and crowds the fluid next to it
     * about 9% above rho0); the ratio keeps psi's adaptation to the local
     * sampling of curved and uneven surfaces. */
    double ideal = 0.0;
    for (int u = -2; u <= 2; u++)
        for (int w = (si->dim == 3 ? -2 : 0); w <= (si->dim == 3 ? 2 : 0); w++)
            ideal += floe_kernel_w(&k, (float)(si->spacing * sqrt((double)(u * u + w * w))));
    const double scale = pow(si->spacing, si->dim) * ideal;
    b->first = in.n;
    b->count = n;
    memcpy(r0 + 3 * (size_t)in.n, px, (size_t)n * 3 * sizeof(float));
#pragma omp parallel for schedule(dynamic, 64) if (n > 512)
    for (uint32_t i = 0; i < n; i++) {
        double sum = 0.0;
        for (uint32_t j = 0; j < n; j++) {
            const float dx = px[3 * i] - px[3 * j], dy = px[3 * i + 1] - px[3 * j + 1], dz = px[3 * i + 2] - px[3 * j + 2];
            const float r2 = dx * dx + dy * dy + dz * dz;
            if (r2 < H2)
                sum += floe_kernel_w(&k, sqrtf(r2));
        }
        V[in.n + i] = (float)(scale / sum);
        id[in.n + i] = (uint32_t)(b - s->b);
    }
    return FLOE_OK;
}

/* x_k = c + R r0_k and v_k = v + w x (R r0_k) for every body particle, from
 * the bodies' poses (C path; rigid_cl_place on the device) */
int rigid_place_particles(rigid_state *s)
{
    if (!s->set.id || s->nb == 0)
        return FLOE_OK;
    floe_set_info in;
    api->set_info(s->ctx, s->set, &in);
    float *x = api->attr(s->ctx, s->set, "x", FLOE_VEC3), *v = api->attr(s->ctx, s->set, "v", FLOE_VEC3);
    const float *r0 = api->attr(s->ctx, s->set, "r0", FLOE_VEC3);
    const uint32_t *id = api->attr(s->ctx, s->set, "body", FLOE_U32);
    if (!x || !v || !r0 || !id)
        return api->fail(s->ctx, FLOE_ERR, "set '%s' lacks x, v, r0 or body", RIGID_SET);
    double (*R)[3][3] = malloc((size_t)s->nb * sizeof *R);
    if (!R)
        return api->fail(s->ctx, FLOE_ERR_NOMEM, "out of memory");
    for (int i = 0; i < s->nb; i++)
        rigid_quat_rot(s->b[i].q, R[i]);
#pragma omp parallel for schedule(static) if (in.n > 8192)
    for (uint32_t i = 0; i < in.n; i++) {
        const rigid_body *b = &s->b[id[i]];
        const double(*Q)[3] = R[id[i]];
        const float *p = r0 + 3 * (size_t)i;
        double r[3];
        for (int d = 0; d < 3; d++)
            r[d] = Q[d][0] * p[0] + Q[d][1] * p[1] + Q[d][2] * p[2];
        x[3 * i] = (float)(b->x[0] + r[0]);
        x[3 * i + 1] = (float)(b->x[1] + r[1]);
        x[3 * i + 2] = (float)(b->x[2] + r[2]);
        v[3 * i] = (float)(b->v[0] + b->w[1] * r[2] - b->w[2] * r[1]);
        v[3 * i + 1] = (float)(b->v[1] + b->w[2] * r[0] - b->w[0] * r[2]);
        v[3 * i + 2] = (float)(b->v[2] + b->w[0] * r[1] - b->w[1] * r[0]);
    }
    free(R);
    return FLOE_OK;
}
