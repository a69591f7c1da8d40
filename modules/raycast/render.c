/* Rendering a density grid (Guay 2013: "we ray cast the density grid
 * directly to render the liquid surface").
 *
 * 3D (RC_SURFACE): one ray per pixel from a pinhole camera, marched through
 * the domain box in steps of `step` cells with trilinear samples; the first
 * sample above `iso` is refined by bisection, the normal is minus the density
 * gradient. A solid grid (signed distance, e.g. flip.phi) is marched along
 * the same ray (phi < 0 is solid), and the domain floor is a checkerboard.
 * Shading: ambient + Lambert + Blinn-Phong highlight, and a Fresnel-like
 * mix with the sky colour on the water.
 *
 * 2D: RC_IMAGE colours the density field (white to deep blue above iso, a
 * faint grey for the kernel tails below it, solids grey); RC_HEIGHT shades
 * the height field scale * density + ground (shallow water) with the light.
 *
 * Every pixel is computed independently (rows in parallel): the image is
 * the same for any thread count. */
#include "raycast.h"

#include <math.h>
#include <string.h>

static inline float clampf(float x, float a, float b) { return x < a ? a : (x > b ? b : x); }

static float sample(const rc_field *f, const float x[3])
{
    size_t idx[3] = {0, 0, 0};
    float t[3] = {0, 0, 0};
    for (int k = 0; k < f->dim; k++) {
        float u = (x[k] - f->origin[k]) * f->inv_h, fl = floorf(u);
        long i = (long)fl;
        float w = u - fl;
        if (i < 0) {
            i = 0;
            w = 0.0f;
        } else if (i > (long)f->n[k] - 2) {
            i = (long)f->n[k] - 2;
            w = 1.0f;
        }
        idx[k] = (size_t)i;
        t[k] = w;
    }
    const size_t sy = f->n[0], sz = (size_t)f->n[0] * f->n[1];
    const float *a = f->data + idx[0] + idx[1] * sy + idx[2] * sz, *b = a + sy;
    float v = (1 - t[1]) * ((1 - t[0]) * a[0] + t[0] * a[1]) + t[1] * ((1 - t[0]) * b[0] + t[0] * b[1]);
    if (f->dim == 3) {
        const float *c = a + sz, *d = c + sy;
        float w = (1 - t[1]) * ((1 - t[0]) * c[0] + t[0] * c[1]) + t[1] * ((1 - t[0]) * d[0] + t[0] * d[1]);
        v = (1 - t[2]) * v + t[2] * w;
    }
    return v;
}

static void gradient(const rc_field *f, const float x[3], float g[3])
{
    const float e = 0.75f * f->h;
    for (int k = 0; k < 3; k++) {
        g[k] = 0.0f;
        if (k >= f->dim)
            continue;
        float a[3] = {x[0], x[1], x[2]}, b[3] = {x[0], x[1], x[2]};
        a[k] += e;
        b[k] -= e;
        g[k] = (sample(f, a) - sample(f, b)) / (2.0f * e);
    }
}

static void normalise(float v[3])
{
    float l = sqrtf(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    if (l > 0.0f)
        for (int k = 0; k < 3; k++)
            v[k] /= l;
}

static inline float dot(const float a[3], const float b[3]) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

static void put(uint8_t *px, const float c[3])
{
    for (int k = 0; k < 3; k++) {
        /* gamma 2.2 for display */
        float v = powf(clampf(c[k], 0.0f, 1.0f), 1.0f / 2.2f);
        px[k] = (uint8_t)(v * 255.0f + 0.5f);
    }
}

static void sky(const float d[3], float c[3])
{
    float t = clampf(0.5f * (d[1] + 1.0f), 0.0f, 1.0f);
    c[0] = 0.75f - 0.35f * t;
    c[1] = 0.82f - 0.25f * t;
    c[2] = 0.90f - 0.05f * t;
}

/* ray / box slab test; returns 0 when missed */
static int box_hit(const float o[3], const float d[3], const float lo[3], const float hi[3], float *t0, float *t1)
{
    float a = 0.0f, b = INFINITY;
    for (int k = 0; k < 3; k++) {
        if (fabsf(d[k]) < 1e-12f) {
            if (o[k] < lo[k] || o[k] > hi[k])
                return 0;
            continue;
        }
        float inv = 1.0f / d[k], ta = (lo[k] - o[k]) * inv, tb = (hi[k] - o[k]) * inv;
        if (ta > tb) {
            float s = ta;
            ta = tb;
            tb = s;
        }
        a = ta > a ? ta : a;
        b = tb < b ? tb : b;
    }
    *t0 = a;
    *t1 = b;
    return b > a;
}

static void shade_water(const rc_view *v, const float n[3], const float d[3], float c[3])
{
    const float base[3] = {0.10f, 0.35f, 0.75f};
    float l = clampf(dot(n, v->light), 0.0f, 1.0f);
    float hv[3] = {v->light[0] - d[0], v->light[1] - d[1], v->light[2] - d[2]};
    normalise(hv);
    float sp = powf(clampf(dot(n, hv), 0.0f, 1.0f), 60.0f);
    float fr = powf(1.0f - clampf(-dot(n, d), 0.0f, 1.0f), 4.0f);
    float r[3] = {d[0] - 2 * dot(d, n) * n[0], d[1] - 2 * dot(d, n) * n[1], d[2] - 2 * dot(d, n) * n[2]};
    float s[3];
    sky(r, s);
    for (int k = 0; k < 3; k++)
        c[k] = (1.0f - fr) * base[k] * (0.3f + 0.7f * l) + fr * s[k] + 0.6f * sp;
}

static void shade_solid(const rc_view *v, const float n[3], float c[3])
{
    float l = clampf(dot(n, v->light), 0.0f, 1.0f);
    const float base[3] = {0.80f, 0.55f, 0.35f};
    for (int k = 0; k < 3; k++)
        c[k] = base[k] * (0.25f + 0.75f * l);
}

static void render_surface(const rc_view *v, uint8_t *rgb)
{
    float fw[3] = {v->target[0] - v->eye[0], v->target[1] - v->eye[1], v->target[2] - v->eye[2]};
    normalise(fw);
    float up[3] = {0.0f, 1.0f, 0.0f};
    if (fabsf(dot(fw, up)) > 0.999f)
        up[0] = 1.0f, up[1] = 0.0f;
    float rt[3] = {fw[1] * up[2] - fw[2] * up[1], fw[2] * up[0] - fw[0] * up[2], fw[0] * up[1] - fw[1] * up[0]};
    normalise(rt);
    float uu[3] = {rt[1] * fw[2] - rt[2] * fw[1], rt[2] * fw[0] - rt[0] * fw[2], rt[0] * fw[1] - rt[1] * fw[0]};
    const float tanh_ = tanf(0.5f * v->fov_deg * (float)M_PI / 180.0f);
    const float aspect = (float)v->width / (float)v->height;
    const float h = v->dens.h, ds = v->step * h;
    const int W = v->width, H = v->height;

#pragma omp parallel for schedule(dynamic, 4)
    for (int py = 0; py < H; py++) {
        for (int px = 0; px < W; px++) {
            const float sx = (2.0f * (px + 0.5f) / W - 1.0f) * tanh_ * aspect;
            const float sy = (1.0f - 2.0f * (py + 0.5f) / H) * tanh_;
            float d[3];
            for (int k = 0; k < 3; k++)
                d[k] = fw[k] + sx * rt[k] + sy * uu[k];
            normalise(d);
            float col[3];
            sky(d, col);
            float t0, t1;
            if (box_hit(v->eye, d, v->lo, v->hi, &t0, &t1)) {
                /* floor: the domain's lowest y face */
                float tf = INFINITY;
                if (d[1] < 0.0f) {
                    float t = (v->lo[1] - v->eye[1]) / d[1];
                    float p[3] = {v->eye[0] + t * d[0], v->eye[1] + t * d[1], v->eye[2] + t * d[2]};
                    if (t > 0.0f && p[0] >= v->lo[0] && p[0] <= v->hi[0] && p[2] >= v->lo[2] && p[2] <= v->hi[2])
                        tf = t;
                }
                float tend = t1 < tf ? t1 : tf;
                int hit = 0; /* 1 water, 2 solid */
                float tp = t0, prev_d = -1.0f, prev_s = 1.0f, th = 0.0f;
                int at_entry = 0; /* the ray enters the box already inside the liquid */
                for (float t = t0; t <= tend; t += ds) {
                    float p[3] = {v->eye[0] + t * d[0], v->eye[1] + t * d[1], v->eye[2] + t * d[2]};
                    float dv = sample(&v->dens, p) - v->iso;
                    float sv = v->solid.data ? sample(&v->solid, p) : 1.0f;
                    if (dv >= 0.0f || sv < 0.0f) {
                        hit = dv >= 0.0f ? 1 : 2;
                        if (t == t0) {
                            at_entry = 1;
                            th = t0;
                            break;
                        }
                        if (dv >= 0.0f && sv < 0.0f)
                            hit = (-prev_s / (sv - prev_s + 1e-20f)) < (-prev_d / (dv - prev_d + 1e-20f)) ? 2 : 1;
                        /* bisection between tp and t on the chosen field */
                        float a = tp, b = t;
                        for (int it = 0; it < 6; it++) {
                            float m = 0.5f * (a + b);
                            float q[3] = {v->eye[0] + m * d[0], v->eye[1] + m * d[1], v->eye[2] + m * d[2]};
                            int in = hit == 1 ? sample(&v->dens, q) >= v->iso : sample(&v->solid, q) < 0.0f;
                            if (in)
                                b = m;
                            else
                                a = m;
                        }
                        th = b;
                        break;
                    }
                    tp = t;
                    prev_d = dv;
                    prev_s = sv;
                }
                float p[3] = {v->eye[0] + th * d[0], v->eye[1] + th * d[1], v->eye[2] + th * d[2]};
                if (hit && at_entry) {
                    /* a cut through the liquid or solid at a wall: the wall's normal (the
                     * density gradient there is only noise, the field being mirrored) */
                    float n[3] = {0.0f, 0.0f, 0.0f};
                    int ax = 0;
                    float best = INFINITY;
                    for (int k = 0; k < 3; k++) {
                        float e = fminf(fabsf(p[k] - v->lo[k]), fabsf(p[k] - v->hi[k]));
                        if (e < best)
                            best = e, ax = k;
                    }
                    n[ax] = d[ax] > 0.0f ? -1.0f : 1.0f;
                    if (hit == 1)
                        shade_water(v, n, d, col);
                    else
                        shade_solid(v, n, col);
                } else if (hit == 1) {
                    float n[3];
                    gradient(&v->dens, p, n);
                    n[0] = -n[0], n[1] = -n[1], n[2] = -n[2];
                    normalise(n);
                    shade_water(v, n, d, col);
                } else if (hit == 2) {
                    float n[3];
                    gradient(&v->solid, p, n);
                    normalise(n);
                    shade_solid(v, n, col);
                } else if (tf < INFINITY && tf <= t1 + 1e-6f) {
                    float q[3] = {v->eye[0] + tf * d[0], 0.0f, v->eye[2] + tf * d[2]};
                    float cs = 4.0f * h * 4.0f;
                    int ck = ((int)floorf(q[0] / cs) + (int)floorf(q[2] / cs)) & 1;
                    float l = clampf(v->light[1], 0.0f, 1.0f);
                    float g = ck ? 0.55f : 0.75f;
                    for (int k = 0; k < 3; k++)
                        col[k] = g * (0.35f + 0.65f * l);
                }
            }
            put(rgb + 3 * ((size_t)py * W + px), col);
        }
    }
}

static void render_2d(const rc_view *v, uint8_t *rgb)
{
    const int W = v->width, H = v->height;
    const float Lx = v->hi[0] - v->lo[0], Ly = v->hi[1] - v->lo[1];
#pragma omp parallel for schedule(static)
    for (int py = 0; py < H; py++) {
        for (int px = 0; px < W; px++) {
            float p[3] = {v->lo[0] + (px + 0.5f) * Lx / W, v->hi[1] - (py + 0.5f) * Ly / H, 0.0f};
            float col[3];
            const float rho = sample(&v->dens, p);
            if (v->mode == RC_HEIGHT) {
                const float e = v->dens.h;
                float gx[3] = {p[0] + e, p[1], 0}, gx2[3] = {p[0] - e, p[1], 0};
                float gy[3] = {p[0], p[1] + e, 0}, gy2[3] = {p[0], p[1] - e, 0};
                float b = v->ground.data ? sample(&v->ground, p) : 0.0f;
                float Hc = v->scale * rho + b;
                float hx = v->scale * (sample(&v->dens, gx) - sample(&v->dens, gx2)) +
                           (v->ground.data ? sample(&v->ground, gx) - sample(&v->ground, gx2) : 0.0f);
                float hy = v->scale * (sample(&v->dens, gy) - sample(&v->dens, gy2)) +
                           (v->ground.data ? sample(&v->ground, gy) - sample(&v->ground, gy2) : 0.0f);
                /* exaggerate relief so that shallow waves show */
                const float ex = 10.0f;
                float n[3] = {-ex * hx / (2 * e), -ex * hy / (2 * e), 1.0f};
                normalise(n);
                float l3[3] = {v->light[0], v->light[2], v->light[1]}; /* light "up" is +z here */
                normalise(l3);
                float l = clampf(dot(n, l3), 0.0f, 1.0f);
                const float depth = v->scale * rho;
                if (depth > v->iso * v->scale) {
                    float t = clampf(depth / (2.0f * v->iso * v->scale + 1e-20f), 0.0f, 1.0f);
                    const float c0[3] = {0.45f, 0.75f, 0.95f}, c1[3] = {0.02f, 0.15f, 0.50f};
                    for (int k = 0; k < 3; k++)
                        col[k] = ((1 - t) * c0[k] + t * c1[k]) * (0.35f + 0.65f * l);
                } else {
                    float t = clampf(0.5f + Hc, 0.0f, 1.0f);
                    const float c0[3] = {0.55f, 0.50f, 0.30f}, c1[3] = {0.35f, 0.55f, 0.25f};
                    for (int k = 0; k < 3; k++)
                        col[k] = ((1 - t) * c0[k] + t * c1[k]) * (0.35f + 0.65f * l);
                }
            } else {
                float s = v->solid.data ? sample(&v->solid, p) : 1.0f;
                if (s < 0.0f) {
                    col[0] = 0.45f, col[1] = 0.42f, col[2] = 0.40f;
                } else if (rho >= v->iso) {
                    float t = clampf((rho / v->iso - 1.0f), 0.0f, 1.0f);
                    const float c0[3] = {0.55f, 0.80f, 1.00f}, c1[3] = {0.00f, 0.12f, 0.45f};
                    for (int k = 0; k < 3; k++)
                        col[k] = (1 - t) * c0[k] + t * c1[k];
                } else {
                    float t = clampf(rho / v->iso, 0.0f, 1.0f);
                    for (int k = 0; k < 3; k++)
                        col[k] = 1.0f - 0.25f * t;
                }
            }
            put(rgb + 3 * ((size_t)py * W + px), col);
        }
    }
}

void rc_render(const rc_view *v, uint8_t *rgb)
{
    if (v->mode == RC_SURFACE)
        render_surface(v, rgb);
    else
        render_2d(v, rgb);
}
