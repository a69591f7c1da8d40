/* The terrain module's files, built in memory and written through the
 * core's api->out_write (atomic, below the run's folder): PNG images
 * through libpng, binary little-endian PLY meshes of height fields. */
#include "terrain_mod.h"

#include <png.h>

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct membuf {
    unsigned char *d;
    size_t len, cap;
    int oom;
} membuf;

static void put(membuf *b, const void *p, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n)
            cap *= 2;
        unsigned char *d = realloc(b->d, cap);
        if (!d) {
            b->oom = 1;
            return;
        }
        b->d = d;
        b->cap = cap;
    }
    memcpy(b->d + b->len, p, n);
    b->len += n;
}

static void png_put(png_structp png, png_bytep data, size_t n) { put(png_get_io_ptr(png), data, n); }
static void png_flush_none(png_structp png) { (void)png; }

int tm_png(floe_ctx *ctx, const char *name, const uint8_t *px, int w, int h, int channels)
{
    membuf b = {0};
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        return tm_api->fail(ctx, FLOE_ERR_NOMEM, "%s: out of memory for the image", name);
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        free(b.d);
        return tm_api->fail(ctx, FLOE_ERR_IO, "%s: libpng could not encode the image", name);
    }
    png_set_write_fn(png, &b, png_put, png_flush_none);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, channels == 1 ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_compression_level(png, 3);
    png_write_info(png, info);
    for (int y = 0; y < h; y++)
        png_write_row(png, (png_const_bytep)(px + (size_t)y * w * channels));
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    if (b.oom) {
        free(b.d);
        return tm_api->fail(ctx, FLOE_ERR_NOMEM, "%s: out of memory for the image", name);
    }
    int rc = tm_api->out_write(ctx, name, b.d, b.len);
    free(b.d);
    return rc;
}

int tm_ply_heightfield(floe_ctx *ctx, const char *name, int nx, int nz, float x0, float z0, float cell,
                       const float *y, const uint8_t *mask, int nextra, const char *const *names,
                       const float *const *values)
{
    /* vertices used by kept cells only, renumbered */
    const size_t nv = (size_t)nx * nz;
    int32_t *map = malloc(nv * sizeof *map);
    if (!map)
        return tm_api->fail(ctx, FLOE_ERR_NOMEM, "%s: out of memory", name);
    const int ncx = nx > 1 ? nx - 1 : 1, ncz = nz > 1 ? nz - 1 : 1;
    const int d2 = nz == 1; /* a 2D profile: a line of vertices, no faces */
    for (size_t k = 0; k < nv; k++)
        map[k] = mask ? -1 : 0;
    size_t nf = 0;
    if (mask)
        for (int j = 0; j < ncz; j++)
            for (int i = 0; i < ncx; i++) {
                size_t a = (size_t)i + (size_t)nx * j, b = a + 1, c = d2 ? a : a + nx, e = d2 ? b : c + 1;
                if (mask[a] && mask[b] && mask[c] && mask[e]) {
                    map[a] = map[b] = map[c] = map[e] = 0;
                    nf += 2;
                }
            }
    else
        nf = d2 ? 0 : 2 * (size_t)ncx * ncz;
    if (d2) { /* a profile: the vertices where the mask holds, no faces */
        nf = 0;
        for (size_t k = 0; k < nv; k++)
            map[k] = !mask || mask[k] ? 0 : -1;
    }
    size_t used = 0;
    for (size_t k = 0; k < nv; k++)
        if (map[k] == 0)
            map[k] = (int32_t)used++;
    membuf b = {0};
    char head[1024];
    int hl = snprintf(head, sizeof head,
                      "ply\nformat binary_little_endian 1.0\ncomment Floe terrain module\nelement vertex %zu\n"
                      "property float x\nproperty float y\nproperty float z\n", used);
    put(&b, head, (size_t)hl);
    for (int e = 0; e < nextra; e++) {
        hl = snprintf(head, sizeof head, "property float %s\n", names[e]);
        put(&b, head, (size_t)hl);
    }
    hl = snprintf(head, sizeof head, "element face %zu\nproperty list uchar int vertex_indices\nend_header\n", nf);
    put(&b, head, (size_t)hl);
    for (int j = 0; j < nz; j++)
        for (int i = 0; i < nx; i++) {
            size_t k = (size_t)i + (size_t)nx * j;
            if (map[k] < 0)
                continue;
            float rec[3] = {x0 + i * cell, y[k], z0 + j * cell};
            put(&b, rec, sizeof rec);
            for (int e = 0; e < nextra; e++)
                put(&b, &values[e][k], sizeof(float));
        }
    for (int j = 0; j < ncz && !d2; j++)
        for (int i = 0; i < ncx; i++) {
            size_t a = (size_t)i + (size_t)nx * j, c = a + 1, d = a + nx, e = d + 1;
            if (map[a] < 0 || map[c] < 0 || map[d] < 0 || map[e] < 0 ||
                (mask && !(mask[a] && mask[c] && mask[d] && mask[e])))
                continue;
            /* counter-clockwise seen from above (+y): normals up */
            unsigned char three = 3;
            int32_t t1[3] = {map[a], map[d], map[c]}, t2[3] = {map[c], map[d], map[e]};
            put(&b, &three, 1);
            put(&b, t1, sizeof t1);
            put(&b, &three, 1);
            put(&b, t2, sizeof t2);
        }
    free(map);
    if (b.oom) {
        free(b.d);
        return tm_api->fail(ctx, FLOE_ERR_NOMEM, "%s: out of memory", name);
    }
    int rc = tm_api->out_write(ctx, name, b.d, b.len);
    free(b.d);
    return rc;
}
