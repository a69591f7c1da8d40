/* freeze.picture: one PNG a frame to look at: water, ice and the cold
 * solids as shaded spheres (a z-buffered splat through a pinhole camera),
 * encoded by libpng into memory and written by the core (api->out_write),
 * atomically, into the run's folder. Water is blue, glaze white, icicles
 * pale cyan, thermal ice light grey-blue, solids grey. */
#include "freeze.h"

#include <math.h>
#include <png.h>
#include <stdlib.h>
#include <string.h>

enum { PIC_EYE, PIC_TARGET, PIC_FOV, PIC_WIDTH, PIC_HEIGHT, PIC_SOLIDS, PIC_ICE, PIC_NAME };

typedef struct cam {
    double eye[3], f[3], r[3], u[3]; /* position, forward, right, up */
    double focal;                    /* pixels */
    int w, h;
} cam;

typedef struct img {
    uint8_t *rgb;
    float *z;
    int w, h;
} img;

static void normalise(double v[3])
{
    double l = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    for (int a = 0; a < 3; a++)
        v[a] = l > 0 ? v[a] / l : 0;
}

static void cross(const double a[3], const double b[3], double o[3])
{
    o[0] = a[1] * b[2] - a[2] * b[1];
    o[1] = a[2] * b[0] - a[0] * b[2];
    o[2] = a[0] * b[1] - a[1] * b[0];
}

/* one sphere of radius rad at x, colour col */
static void splat(img *im, const cam *c, const float x[3], float rad, const float col[3])
{
    double d[3] = {x[0] - c->eye[0], x[1] - c->eye[1], x[2] - c->eye[2]};
    double zc = d[0] * c->f[0] + d[1] * c->f[1] + d[2] * c->f[2];
    if (zc <= rad)
        return;
    double xc = d[0] * c->r[0] + d[1] * c->r[1] + d[2] * c->r[2];
    double yc = d[0] * c->u[0] + d[1] * c->u[1] + d[2] * c->u[2];
    double px = 0.5 * c->w + c->focal * xc / zc, py = 0.5 * c->h - c->focal * yc / zc, pr = c->focal * rad / zc;
    int x0 = (int)floor(px - pr), x1 = (int)ceil(px + pr), y0 = (int)floor(py - pr), y1 = (int)ceil(py + pr);
    if (x1 < 0 || y1 < 0 || x0 >= c->w || y0 >= c->h)
        return;
    static const double light[3] = {-0.45, 0.75, 0.48};
    for (int y = y0 < 0 ? 0 : y0; y <= y1 && y < c->h; y++)
        for (int xx = x0 < 0 ? 0 : x0; xx <= x1 && xx < c->w; xx++) {
            double sx = (xx + 0.5 - px) / pr, sy = (y + 0.5 - py) / pr, s2 = sx * sx + sy * sy;
            if (s2 >= 1)
                continue;
            double sz = sqrt(1 - s2);
            float z = (float)(zc - sz * rad);
            size_t k = (size_t)y * c->w + xx;
            if (z >= im->z[k])
                continue;
            im->z[k] = z;
            /* the sphere's normal in camera axes: right sx, up -sy, towards the eye sz */
            double n[3];
            for (int a = 0; a < 3; a++)
                n[a] = sx * c->r[a] - sy * c->u[a] - sz * c->f[a];
            double lam = n[0] * light[0] + n[1] * light[1] + n[2] * light[2];
            double shade = 0.35 + 0.65 * (lam > 0 ? lam : 0);
            for (int a = 0; a < 3; a++) {
                double v = col[a] * shade * 255.0;
                im->rgb[3 * k + a] = (uint8_t)(v > 255 ? 255 : v);
            }
        }
}

typedef struct membuf {
    uint8_t *p;
    size_t n, cap;
    int oom;
} membuf;

static void mem_write(png_structp png, png_bytep data, png_size_t len)
{
    membuf *m = png_get_io_ptr(png);
    if (m->oom)
        return;
    if (m->n + len > m->cap) {
        size_t c = (m->n + len) * 2;
        uint8_t *q = realloc(m->p, c);
        if (!q) {
            m->oom = 1;
            return;
        }
        m->p = q;
        m->cap = c;
    }
    memcpy(m->p + m->n, data, len);
    m->n += len;
}

static void mem_flush(png_structp png) { (void)png; }

/* the PNG of an RGB image in memory: 0, or -1 */
static int encode(const img *im, membuf *out)
{
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) {
        png_destroy_write_struct(&png, NULL);
        return -1;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        return -1;
    }
    png_set_write_fn(png, out, mem_write, mem_flush);
    png_set_IHDR(png, info, (png_uint_32)im->w, (png_uint_32)im->h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_compression_level(png, 3);
    png_write_info(png, info);
    for (int y = 0; y < im->h; y++)
        png_write_row(png, (png_const_bytep)(im->rgb + (size_t)y * im->w * 3));
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    return out->oom ? -1 : 0;
}

int fz_picture(const floe_stage_call *c)
{
    floe_ctx *ctx = c->ctx;
    const floe_sim_info *si = api->sim(ctx);
    const floe_value *pv = c->param;
    cam cm;
    cm.w = (int)pv[PIC_WIDTH].i;
    cm.h = (int)pv[PIC_HEIGHT].i;
    for (int a = 0; a < 3; a++) {
        cm.eye[a] = pv[PIC_EYE].v[a];
        cm.f[a] = pv[PIC_TARGET].v[a] - pv[PIC_EYE].v[a];
    }
    normalise(cm.f);
    if (cm.f[0] == 0 && cm.f[1] == 0 && cm.f[2] == 0)
        return api->fail(ctx, FLOE_ERR_ARG, "%s: eye and target are the same point", c->name);
    double up[3] = {0, 1, 0};
    if (fabs(cm.f[1]) > 0.999)
        up[1] = 0, up[2] = 1;
    cross(cm.f, up, cm.r);
    normalise(cm.r);
    cross(cm.r, cm.f, cm.u);
    cm.focal = 0.5 * cm.h / tan(0.5 * pv[PIC_FOV].f * M_PI / 180.0);
    img im = {malloc((size_t)cm.w * cm.h * 3), malloc((size_t)cm.w * cm.h * sizeof(float)), cm.w, cm.h};
    if (!im.rgb || !im.z) {
        free(im.rgb);
        free(im.z);
        return api->fail(ctx, FLOE_ERR_NOMEM, "%s: out of memory for a %dx%d picture", c->name, cm.w, cm.h);
    }
    for (int y = 0; y < cm.h; y++) /* a grey-blue backdrop, lighter at the top */
        for (int x = 0; x < cm.w; x++) {
            size_t k = (size_t)y * cm.w + x;
            double t = (double)y / cm.h;
            im.rgb[3 * k] = (uint8_t)(70 - 30 * t);
            im.rgb[3 * k + 1] = (uint8_t)(80 - 30 * t);
            im.rgb[3 * k + 2] = (uint8_t)(95 - 30 * t);
            im.z[k] = INFINITY;
        }
    const float rad = 0.6f * si->spacing;
    static const float water[3] = {0.25f, 0.5f, 0.95f}, solid[3] = {0.55f, 0.55f, 0.55f};
    static const float ice_col[4][3] = {{0.9f, 0.95f, 1}, {0.95f, 0.97f, 1}, {0.7f, 0.92f, 1}, {0.8f, 0.85f, 0.95f}};
    floe_set sets[FLOE_MAX_SETS];
    int ns = api->set_list(ctx, FLOE_SET_ANY, sets, FLOE_MAX_SETS);
    for (int k = 0; k < ns && k < FLOE_MAX_SETS; k++) {
        floe_set_info in;
        if (api->set_info(ctx, sets[k], &in) != FLOE_OK || !in.n)
            continue;
        int is_ice = strcmp(in.name, pv[PIC_ICE].s) == 0;
        if (in.kind == FLOE_SET_BOUNDARY && !is_ice && !floe_name_listed(pv[PIC_SOLIDS].s, in.name))
            continue;
        const float *x = api->attr(ctx, sets[k], "x", FLOE_VEC3);
        const int32_t *kind = is_ice ? api->attr(ctx, sets[k], "ice_kind", FLOE_I32) : NULL;
        for (uint32_t i = 0; i < in.n; i++) {
            const float *col = in.kind == FLOE_SET_FLUID ? water : !is_ice ? solid
                               : ice_col[kind && kind[i] >= 1 && kind[i] <= 3 ? kind[i] : 0];
            splat(&im, &cm, &x[3 * (size_t)i], rad, col);
        }
    }
    membuf mb = {0};
    int rc = encode(&im, &mb);
    free(im.rgb);
    free(im.z);
    if (rc) {
        free(mb.p);
        return api->fail(ctx, FLOE_ERR_NOMEM, "%s: cannot encode the PNG (out of memory)", c->name);
    }
    char name[300];
    snprintf(name, sizeof name, "%s.%04d.png", pv[PIC_NAME].s, si->frame);
    rc = api->out_write(ctx, name, mb.p, mb.n);
    free(mb.p);
    return rc;
}
