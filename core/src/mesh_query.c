/* Queries against a mesh through a bounding volume hierarchy over its
 * triangles (object-median splits along the longest axis, leaves of at
 * most LEAF triangles): the generalised winding number (Jacobson, Kavan
 * and Sorkine-Hornung 2013) and "is any triangle closer than r". */
#include "mesh_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LEAF 4
#define STACK 128
/* a cluster at distance > FAR * its radius counts as a dipole: Barill et
 * al. 2018 use 2 with second-order terms; first order needs more */
#define FAR 3.0

static void centroid(const floe_mesh *m, uint32_t t, double c[3])
{
    const uint32_t *v = m->tri + 3 * (size_t)t;
    for (int k = 0; k < 3; k++)
        c[k] = ((double)m->x[3 * (size_t)v[0] + k] + m->x[3 * (size_t)v[1] + k] + m->x[3 * (size_t)v[2] + k]) / 3;
}

/* box, area-weighted centre, summed area vector and radius of a node */
static void node_fill(mesh_bvh *b, bvh_node *nd, uint32_t first, uint32_t count)
{
    const floe_mesh *m = b->m;
    double area = 0, c[3] = {0, 0, 0};
    memset(nd, 0, sizeof *nd);
    for (int k = 0; k < 3; k++)
        nd->lo[k] = INFINITY, nd->hi[k] = -INFINITY;
    for (uint32_t i = first; i < first + count; i++) {
        uint32_t t = b->order[i];
        double n[3], ct[3];
        mesh_tri_area_vec(m, t, n);
        centroid(m, t, ct);
        double a = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
        area += a;
        for (int k = 0; k < 3; k++) {
            nd->n[k] += n[k];
            c[k] += a * ct[k];
        }
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 3; k++) {
                float x = m->x[3 * (size_t)m->tri[3 * (size_t)t + j] + k];
                nd->lo[k] = fminf(nd->lo[k], x);
                nd->hi[k] = fmaxf(nd->hi[k], x);
            }
    }
    double r2 = 0;
    for (int k = 0; k < 3; k++) {
        nd->c[k] = area > 0 ? c[k] / area : 0.5 * ((double)nd->lo[k] + nd->hi[k]);
        double e = fmax(nd->c[k] - nd->lo[k], nd->hi[k] - nd->c[k]);
        r2 += e * e;
    }
    nd->r = sqrt(r2);
}

/* order[first .. first + count) partially sorted so that the k-th smallest
 * centroid coordinate on axis sits at first + k (quickselect) */
static void select_k(mesh_bvh *b, const double *cen, int axis, uint32_t first, uint32_t count, uint32_t k)
{
    long lo = first, hi = (long)first + count - 1, want = (long)first + k;
    uint32_t *o = b->order;
#define KEY(i) cen[3 * (size_t)o[i] + axis]
    while (lo < hi) {
        double pivot = KEY((lo + hi) / 2);
        long i = lo, j = hi;
        while (i <= j) {
            while (KEY(i) < pivot)
                i++;
            while (KEY(j) > pivot)
                j--;
            if (i <= j) {
                uint32_t s = o[i];
                o[i++] = o[j];
                o[j--] = s;
            }
        }
        if (want <= j)
            hi = j;
        else if (want >= i)
            lo = i;
        else
            break;
    }
#undef KEY
}

static void build(mesh_bvh *b, const double *cen, uint32_t ni, uint32_t first, uint32_t count)
{
    bvh_node *nd = &b->nodes[ni];
    node_fill(b, nd, first, count);
    if (count <= LEAF) {
        nd->first = first;
        nd->count = count;
        return;
    }
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (uint32_t i = first; i < first + count; i++)
        for (int k = 0; k < 3; k++) {
            lo[k] = fmin(lo[k], cen[3 * (size_t)b->order[i] + k]);
            hi[k] = fmax(hi[k], cen[3 * (size_t)b->order[i] + k]);
        }
    int axis = 0;
    for (int k = 1; k < 3; k++)
        if (hi[k] - lo[k] > hi[axis] - lo[axis])
            axis = k;
    uint32_t half = count / 2;
    select_k(b, cen, axis, first, count, half);
    uint32_t left = b->nnodes;
    b->nnodes += 2;
    nd->left = left;
    build(b, cen, left, first, half);
    build(b, cen, left + 1, first + half, count - half);
}

int mesh_bvh_build(mesh_bvh *b, const floe_mesh *m)
{
    memset(b, 0, sizeof *b);
    b->m = m;
    b->nodes = malloc(2 * (size_t)m->ntris * sizeof *b->nodes);
    b->order = malloc((size_t)m->ntris * sizeof *b->order);
    double *cen = malloc(3 * (size_t)m->ntris * sizeof *cen);
    if (!b->nodes || !b->order || !cen) {
        free(cen);
        mesh_bvh_free(b);
        return FLOE_ERR_NOMEM;
    }
    for (uint32_t t = 0; t < m->ntris; t++) {
        b->order[t] = t;
        centroid(m, t, cen + 3 * (size_t)t);
    }
    b->nnodes = 1;
    build(b, cen, 0, 0, m->ntris);
    free(cen);
    return FLOE_OK;
}

void mesh_bvh_free(mesh_bvh *b)
{
    free(b->nodes);
    free(b->order);
    memset(b, 0, sizeof *b);
}

/* Signed solid angle of triangle t seen from p (van Oosterom and Strackee
 * 1983): positive when p lies behind its outward face. */
static double solid_angle(const floe_mesh *m, uint32_t t, const double p[3])
{
    double v[3][3], l[3];
    for (int c = 0; c < 3; c++) {
        for (int k = 0; k < 3; k++)
            v[c][k] = m->x[3 * (size_t)m->tri[3 * (size_t)t + c] + k] - p[k];
        l[c] = sqrt(v[c][0] * v[c][0] + v[c][1] * v[c][1] + v[c][2] * v[c][2]);
    }
    double det = v[0][0] * (v[1][1] * v[2][2] - v[1][2] * v[2][1]) - v[0][1] * (v[1][0] * v[2][2] - v[1][2] * v[2][0]) +
                 v[0][2] * (v[1][0] * v[2][1] - v[1][1] * v[2][0]);
#define DOT(a, b) (v[a][0] * v[b][0] + v[a][1] * v[b][1] + v[a][2] * v[b][2])
    double den = l[0] * l[1] * l[2] + DOT(0, 1) * l[2] + DOT(1, 2) * l[0] + DOT(2, 0) * l[1];
#undef DOT
    return 2 * atan2(det, den);
}

double mesh_winding(const mesh_bvh *b, const double p[3])
{
    uint32_t stack[STACK];
    int top = 0;
    double w = 0;
    stack[top++] = 0;
    while (top > 0) {
        const bvh_node *nd = &b->nodes[stack[--top]];
        if (nd->count) {
            for (uint32_t i = nd->first; i < nd->first + nd->count; i++)
                w += solid_angle(b->m, b->order[i], p);
            continue;
        }
        double d[3] = {nd->c[0] - p[0], nd->c[1] - p[1], nd->c[2] - p[2]};
        double d2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
        if (d2 > FAR * FAR * nd->r * nd->r) /* dipole: n . (c - p) / |c - p|^3 */
            w += (nd->n[0] * d[0] + nd->n[1] * d[1] + nd->n[2] * d[2]) / (d2 * sqrt(d2));
        else {
            stack[top++] = nd->left;
            stack[top++] = nd->left + 1;
        }
    }
    return w / (4 * M_PI);
}

double mesh_tri_dist2(const floe_mesh *m, uint32_t t, const double p[3])
{
    /* closest point on a triangle (Ericson, Real-Time Collision Detection 5.1.5) */
    double a[3], ab[3], ac[3], ap[3], q[3];
    const uint32_t *v = m->tri + 3 * (size_t)t;
    for (int k = 0; k < 3; k++) {
        a[k] = m->x[3 * (size_t)v[0] + k];
        ab[k] = m->x[3 * (size_t)v[1] + k] - a[k];
        ac[k] = m->x[3 * (size_t)v[2] + k] - a[k];
        ap[k] = p[k] - a[k];
    }
#define DOT3(x, y) (x[0] * y[0] + x[1] * y[1] + x[2] * y[2])
    double d1 = DOT3(ab, ap), d2 = DOT3(ac, ap), bp[3], cp[3];
    for (int k = 0; k < 3; k++) {
        bp[k] = ap[k] - ab[k];
        cp[k] = ap[k] - ac[k];
    }
    double d3 = DOT3(ab, bp), d4 = DOT3(ac, bp), d5 = DOT3(ab, cp), d6 = DOT3(ac, cp);
#undef DOT3
    double va = d3 * d6 - d5 * d4, vb = d5 * d2 - d1 * d6, vc = d1 * d4 - d3 * d2, s, u;
    if (d1 <= 0 && d2 <= 0)
        s = 0, u = 0; /* vertex a */
    else if (d3 >= 0 && d4 <= d3)
        s = 1, u = 0; /* vertex b */
    else if (d6 >= 0 && d5 <= d6)
        s = 0, u = 1; /* vertex c */
    else if (vc <= 0 && d1 >= 0 && d3 <= 0)
        s = d1 / (d1 - d3), u = 0; /* edge ab */
    else if (vb <= 0 && d2 >= 0 && d6 <= 0)
        s = 0, u = d2 / (d2 - d6); /* edge ac */
    else if (va <= 0 && d4 - d3 >= 0 && d5 - d6 >= 0) {
        u = (d4 - d3) / ((d4 - d3) + (d5 - d6)); /* edge bc */
        s = 1 - u;
    } else {
        double den = 1 / (va + vb + vc);
        s = vb * den, u = vc * den;
    }
    double r2 = 0;
    for (int k = 0; k < 3; k++) {
        q[k] = a[k] + s * ab[k] + u * ac[k] - p[k];
        r2 += q[k] * q[k];
    }
    return r2;
}

/* ---- "is there a triangle ...": one walk, two questions ----------------- */

typedef struct probe {
    const double *p;
    double r2;               /* near: squared radius */
    double dir[3], lo[3], hi[3]; /* segment: q - p and its box */
} probe;

/* Depth first over the nodes that `enter` accepts; 1 as soon as `hit`
 * accepts a triangle of a leaf. */
static int any_triangle(const mesh_bvh *b, const probe *pr, int (*enter)(const bvh_node *, const probe *),
                        int (*hit)(const floe_mesh *, uint32_t, const probe *))
{
    uint32_t stack[STACK];
    int top = 0;
    stack[top++] = 0;
    while (top > 0) {
        const bvh_node *nd = &b->nodes[stack[--top]];
        if (!enter(nd, pr))
            continue;
        if (!nd->count) {
            stack[top++] = nd->left;
            stack[top++] = nd->left + 1;
            continue;
        }
        for (uint32_t i = nd->first; i < nd->first + nd->count; i++)
            if (hit(b->m, b->order[i], pr))
                return 1;
    }
    return 0;
}

static int near_box(const bvh_node *nd, const probe *pr)
{
    double r2 = 0;
    for (int k = 0; k < 3; k++) {
        double e = pr->p[k] < nd->lo[k] ? nd->lo[k] - pr->p[k] : pr->p[k] > nd->hi[k] ? pr->p[k] - nd->hi[k] : 0;
        r2 += e * e;
    }
    return r2 < pr->r2;
}

static int near_tri(const floe_mesh *m, uint32_t t, const probe *pr)
{
    return mesh_tri_dist2(m, t, pr->p) < pr->r2;
}

int mesh_near(const mesh_bvh *b, const double p[3], double r)
{
    probe pr = {.p = p, .r2 = r * r};
    return any_triangle(b, &pr, near_box, near_tri);
}

static int segment_box(const bvh_node *nd, const probe *pr)
{
    for (int k = 0; k < 3; k++)
        if (pr->lo[k] > nd->hi[k] || pr->hi[k] < nd->lo[k])
            return 0;
    return 1;
}

/* Segment p q against triangle t (Moller and Trumbore 1997), with a
 * little slack so that a touch counts as a hit. */
static int segment_tri(const floe_mesh *m, uint32_t t, const probe *pr)
{
    const double *p = pr->p, *dir = pr->dir;
    const double eps = 1e-9;
    double a[3], e1[3], e2[3], s[3];
    const uint32_t *v = m->tri + 3 * (size_t)t;
    for (int k = 0; k < 3; k++) {
        a[k] = m->x[3 * (size_t)v[0] + k];
        e1[k] = m->x[3 * (size_t)v[1] + k] - a[k];
        e2[k] = m->x[3 * (size_t)v[2] + k] - a[k];
        s[k] = p[k] - a[k];
    }
    double h[3] = {dir[1] * e2[2] - dir[2] * e2[1], dir[2] * e2[0] - dir[0] * e2[2], dir[0] * e2[1] - dir[1] * e2[0]};
    double det = e1[0] * h[0] + e1[1] * h[1] + e1[2] * h[2];
    if (fabs(det) < 1e-300)
        return 0; /* parallel: a crossing elsewhere along the surface is still seen */
    double inv = 1 / det, u = inv * (s[0] * h[0] + s[1] * h[1] + s[2] * h[2]);
    if (u < -eps || u > 1 + eps)
        return 0;
    double q[3] = {s[1] * e1[2] - s[2] * e1[1], s[2] * e1[0] - s[0] * e1[2], s[0] * e1[1] - s[1] * e1[0]};
    double w = inv * (dir[0] * q[0] + dir[1] * q[1] + dir[2] * q[2]);
    if (w < -eps || u + w > 1 + eps)
        return 0;
    double f = inv * (e2[0] * q[0] + e2[1] * q[1] + e2[2] * q[2]);
    return f >= -eps && f <= 1 + eps;
}

int mesh_segment_hits(const mesh_bvh *b, const double p[3], const double q[3])
{
    probe pr = {.p = p};
    for (int k = 0; k < 3; k++) {
        pr.dir[k] = q[k] - p[k];
        pr.lo[k] = fmin(p[k], q[k]);
        pr.hi[k] = fmax(p[k], q[k]);
    }
    return any_triangle(b, &pr, segment_box, segment_tri);
}
