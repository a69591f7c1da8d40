/* Signed-distance obstacles of the flip module on the device, written as in
 * modules/flip/obstacles.c (sdf_one, sdf_normal, flip_project,
 * flip_obstacle_velocity). The host poses the obstacles of a step (centre,
 * rotation, velocity at a time) and uploads them as packed records of
 * FLIP_OB_STRIDE floats (modules/flip/flip_cl.c, pack_posed), followed by
 * the metaball table (x y z r per ball). */
#ifndef FLIP_CL_OBSTACLES_H
#define FLIP_CL_OBSTACLES_H

#pragma OPENCL FP_CONTRACT OFF

#define FLIP_OB_STRIDE 48
/* record fields */
#define OB_SHAPE 0
#define OB_ROTATED 1
#define OB_NBALLS 2
#define OB_BALL0 3
#define OB_C 4
#define OB_RADIUS 7
#define OB_R 8
#define OB_V 17
#define OB_W 20
#define OB_BMIN 23
#define OB_BMAX 26
#define OB_HALF 29
#define OB_AXIS 32
#define OB_NORMAL 35
#define OB_BLEND 38
#define OB_MOVING 39
#define OB_CLO 40 /* cell range of the moving rasterisation (3 lo, 3 hi) */
#define OB_CHI 43

enum { SH_SPHERE, SH_BOX, SH_CAPSULE, SH_PLANE, SH_METABALLS };

inline float ob_dot3(const float *a, const float *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
inline float ob_len3(const float *a) { return sqrt(ob_dot3(a, a)); }

/* phi of one obstacle at x (world), phi < 0 inside */
inline float ob_sdf(__global const float *o, __global const float *balls, int dim, const float *x)
{
    float d[3] = {x[0] - o[OB_C], x[1] - o[OB_C + 1], dim == 3 ? x[2] - o[OB_C + 2] : 0.0f}, q[3];
    if (o[OB_ROTATED] != 0.0f) { /* local = R^T d */
        for (int k = 0; k < 3; k++)
            q[k] = o[OB_R + k] * d[0] + o[OB_R + 3 + k] * d[1] + o[OB_R + 6 + k] * d[2];
    } else {
        q[0] = d[0], q[1] = d[1], q[2] = d[2];
    }
    const int shape = (int)o[OB_SHAPE];
    if (shape == SH_SPHERE) {
        return ob_len3(q) - o[OB_RADIUS];
    } else if (shape == SH_BOX) {
        float out2 = 0.0f, in = -INFINITY;
        for (int k = 0; k < 3; k++) {
            const float e = fabs(q[k]) - o[OB_HALF + k];
            if (e > 0.0f)
                out2 += e * e;
            in = e > in ? e : in;
        }
        return sqrt(out2) + (in < 0.0f ? in : 0.0f);
    } else if (shape == SH_CAPSULE) {
        const float ax[3] = {o[OB_AXIS], o[OB_AXIS + 1], o[OB_AXIS + 2]};
        const float aa = ob_dot3(ax, ax);
        float u = aa > 0.0f ? ob_dot3(q, ax) / aa : 0.0f;
        u = u < -1.0f ? -1.0f : (u > 1.0f ? 1.0f : u);
        const float r[3] = {q[0] - u * ax[0], q[1] - u * ax[1], q[2] - u * ax[2]};
        return ob_len3(r) - o[OB_RADIUS];
    } else if (shape == SH_PLANE) {
        const float nrm[3] = {o[OB_NORMAL], o[OB_NORMAL + 1], o[OB_NORMAL + 2]};
        return ob_dot3(q, nrm);
    } else if (shape == SH_METABALLS) {
        const int nb = (int)o[OB_NBALLS];
        __global const float *bl = balls + 4 * (int)o[OB_BALL0];
        float m = INFINITY;
        for (int b = 0; b < nb; b++) {
            const float r[3] = {q[0] - bl[4 * b], q[1] - bl[4 * b + 1], q[2] - bl[4 * b + 2]};
            const float di = ob_len3(r) - bl[4 * b + 3];
            m = di < m ? di : m;
        }
        const float blend = o[OB_BLEND];
        if (!(blend > 0.0f))
            return m;
        float sum = 0.0f;
        for (int b = 0; b < nb; b++) {
            const float r[3] = {q[0] - bl[4 * b], q[1] - bl[4 * b + 1], q[2] - bl[4 * b + 2]};
            const float di = ob_len3(r) - bl[4 * b + 3];
            sum += exp(-(di - m) / blend);
        }
        return m - blend * log(sum);
    }
    return INFINITY;
}

/* nearest obstacle (first of equals, as flip_sdf) */
inline float ob_sdf_all(__global const float *ob, int nob, __global const float *balls, int dim, const float *x,
                        int *which)
{
    float best = INFINITY;
    int w = 0;
    for (int i = 0; i < nob; i++) {
        const float d = ob_sdf(ob + FLIP_OB_STRIDE * i, balls, dim, x);
        if (d < best) {
            best = d;
            w = i;
        }
    }
    *which = w;
    return best;
}

/* velocity of an obstacle at the world point x: v_c + w x (x - c) */
inline void ob_velocity(__global const float *o, const float *x, float *v)
{
    const float r[3] = {x[0] - o[OB_C], x[1] - o[OB_C + 1], x[2] - o[OB_C + 2]};
    v[0] = o[OB_V] + o[OB_W + 1] * r[2] - o[OB_W + 2] * r[1];
    v[1] = o[OB_V + 1] + o[OB_W + 2] * r[0] - o[OB_W] * r[2];
    v[2] = o[OB_V + 2] + o[OB_W] * r[1] - o[OB_W + 1] * r[0];
}

/* outward unit normal of one obstacle at x by central differences */
inline void ob_normal(__global const float *o, __global const float *balls, int dim, const float *x, float *n)
{
    const float bw = o[OB_BMAX] - o[OB_BMIN];
    const float e = 1e-4f * (isfinite(o[OB_BMAX]) ? fmax(bw, 1e-3f) : 1.0f);
    float l2 = 0.0f;
    for (int k = 0; k < 3; k++) {
        n[k] = 0.0f;
        if (k >= dim)
            continue;
        float a[3] = {x[0], x[1], x[2]}, b[3] = {x[0], x[1], x[2]};
        a[k] += e;
        b[k] -= e;
        n[k] = ob_sdf(o, balls, dim, a) - ob_sdf(o, balls, dim, b);
        l2 += n[k] * n[k];
    }
    if (l2 > 0.0f) {
        const float inv = 1.0f / sqrt(l2);
        for (int k = 0; k < 3; k++)
            n[k] *= inv;
    } else {
        n[0] = n[2] = 0.0f;
        n[1] = 1.0f;
    }
}

/* Push x out of every obstacle (phi >= margin), fixing the velocity v when
 * with_v; returns 1 if moved (flip_project). */
inline int ob_project(__global const float *ob, int nob, __global const float *balls, int dim, float margin, float *x,
                      float *v, int with_v)
{
    int moved = 0;
    for (int iter = 0; iter < 8; iter++) {
        int any = 0;
        for (int i = 0; i < nob; i++) {
            __global const float *p = ob + FLIP_OB_STRIDE * i;
            if (x[0] < p[OB_BMIN] - margin || x[0] > p[OB_BMAX] + margin || x[1] < p[OB_BMIN + 1] - margin ||
                x[1] > p[OB_BMAX + 1] + margin ||
                (dim == 3 && (x[2] < p[OB_BMIN + 2] - margin || x[2] > p[OB_BMAX + 2] + margin)))
                continue;
            const float d = ob_sdf(p, balls, dim, x);
            if (d >= margin)
                continue;
            float n[3];
            ob_normal(p, balls, dim, x, n);
            const float push = (margin - d) * 1.0001f + 1e-7f;
            for (int k = 0; k < dim; k++)
                x[k] += push * n[k];
            if (with_v) {
                float vo[3], vn = 0.0f;
                ob_velocity(p, x, vo);
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

#endif
