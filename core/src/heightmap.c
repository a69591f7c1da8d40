/* Terrain height fields: 16-bit greyscale PNG height maps through libpng
 * (the format terrain tools exchange; libpng checks the file's structure
 * and CRCs, so a damaged file is refused, not half-read) and the grid
 * "terrain" (<floe/terrain.h>, docs/terrain.md). */
#include "heightmap.h"

#include "ctx.h"
#include "floe/terrain.h"

#include <png.h>

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct png_err {
    char *msg;
    size_t len;
    const char *path;
} png_err;

static void on_png_error(png_structp png, png_const_charp text)
{
    png_err *e = png_get_error_ptr(png);
    snprintf(e->msg, e->len, "%s: not a readable PNG file (%s)", e->path, text);
    png_longjmp(png, 1);
}

static void on_png_warning(png_structp png, png_const_charp text) { (void)png, (void)text; }

static const char *colour_name(int type)
{
    switch (type) {
    case PNG_COLOR_TYPE_GRAY: return "greyscale";
    case PNG_COLOR_TYPE_GRAY_ALPHA: return "greyscale with alpha";
    case PNG_COLOR_TYPE_PALETTE: return "palette colour";
    case PNG_COLOR_TYPE_RGB: return "RGB colour";
    case PNG_COLOR_TYPE_RGB_ALPHA: return "RGBA colour";
    default: return "unknown colour type";
    }
}

/* The body of hm_read_png16 after the file is open: every libpng call
 * below may longjmp back here on a damaged file. */
static int read_png(FILE *f, const char *path, uint16_t **px, uint32_t *w, uint32_t *h, char *err, size_t errlen)
{
    png_err pe = {err, errlen, path};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &pe, on_png_error, on_png_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    uint16_t *volatile data = NULL;
    png_bytep *volatile rows = NULL;
    if (!info) {
        snprintf(err, errlen, "%s: out of memory reading the PNG", path);
        png_destroy_read_struct(png ? &png : NULL, NULL, NULL);
        return -1;
    }
    if (setjmp(png_jmpbuf(png))) {
        free(data);
        free(rows);
        png_destroy_read_struct(&png, &info, NULL);
        return -1;
    }
    png_init_io(png, f);
    png_read_info(png, info);
    const uint32_t W = png_get_image_width(png, info), H = png_get_image_height(png, info);
    const int depth = png_get_bit_depth(png, info), type = png_get_color_type(png, info);
    if (type != PNG_COLOR_TYPE_GRAY || depth != 16) {
        snprintf(err, errlen,
                 "%s: a height map must be a 16-bit greyscale PNG; this one is %d-bit %s (%ux%u). "
                 "Export the heights as 16-bit grey (e.g. gdal_translate -ot UInt16, or 'Grayscale 16' in the "
                 "terrain tool)", path, depth, colour_name(type), W, H);
        png_destroy_read_struct(&png, &info, NULL);
        return -1;
    }
    if ((uint64_t)W * H > ((uint64_t)1 << 28)) {
        snprintf(err, errlen, "%s: %ux%u samples, at most 2^28", path, W, H);
        png_destroy_read_struct(&png, &info, NULL);
        return -1;
    }
    if (png_get_interlace_type(png, info) != PNG_INTERLACE_NONE)
        (void)png_set_interlace_handling(png);
    data = malloc((size_t)W * H * sizeof(uint16_t));
    rows = malloc((size_t)H * sizeof *rows);
    if (!data || !rows) {
        snprintf(err, errlen, "%s: out of memory for %ux%u samples", path, W, H);
        free(data);
        free(rows);
        png_destroy_read_struct(&png, &info, NULL);
        return -1;
    }
    for (uint32_t r = 0; r < H; r++)
        rows[r] = (png_bytep)(data + (size_t)r * W);
    png_read_image(png, rows);
    png_read_end(png, NULL);
    png_destroy_read_struct(&png, &info, NULL);
    free(rows);
    /* PNG stores 16-bit samples big-endian */
    uint16_t *d = data;
    for (size_t k = 0; k < (size_t)W * H; k++) {
        const uint8_t *b = (const uint8_t *)&d[k];
        d[k] = (uint16_t)(b[0] << 8 | b[1]);
    }
    *px = d;
    *w = W;
    *h = H;
    return 0;
}

int hm_read_png16(const char *path, uint16_t **px, uint32_t *w, uint32_t *h, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open the height map (%s)", path, strerror(errno));
        return -1;
    }
    unsigned char sig[8];
    if (fread(sig, 1, 8, f) != 8 || png_sig_cmp(sig, 0, 8)) {
        fclose(f);
        snprintf(err, errlen, "%s: not a PNG file (a height map must be a 16-bit greyscale PNG)", path);
        return -1;
    }
    rewind(f);
    int rc = read_png(f, path, px, w, h, err, errlen);
    fclose(f);
    return rc;
}

int hm_terrain_set(floe_ctx *ctx, uint32_t nx, uint32_t nz, const float *heights, float cell, float x0, float z0)
{
    if (floe_grid_find(ctx, FLOE_TERRAIN_GRID).id)
        return ctx_fail(ctx, FLOE_ERR_ARG, "terrain: the scene has one already (one terrain per sim)");
    if (nx < 2 || nz < 1 || !(cell > 0) || !isfinite(cell) || !isfinite(x0) || !isfinite(z0))
        return ctx_fail(ctx, FLOE_ERR_ARG, "terrain: needs at least 2 samples along x and a positive cell size");
    if (ctx->info.dim == 3 && nz < 2)
        return ctx_fail(ctx, FLOE_ERR_ARG, "terrain: a 3D terrain needs at least 2 rows of samples");
    if (ctx->info.dim == 2 && nz != 1)
        return ctx_fail(ctx, FLOE_ERR_ARG, "terrain: a 2D terrain is one profile (one row)");
    for (size_t k = 0; k < (size_t)nx * nz; k++)
        if (!isfinite(heights[k]))
            return ctx_fail(ctx, FLOE_ERR_ARG, "terrain: height %zu (x %zu, row %zu) is not finite", k,
                            k % nx, k / nx);
    floe_grid_def def = {.size = sizeof def, .name = FLOE_TERRAIN_GRID, .n = {nx, 1, nz},
                         .origin = {x0, 0.0f, z0}, .cell = cell, .type = FLOE_F32};
    floe_grid g = floe_grid_add(ctx, &def);
    if (!g.id)
        return FLOE_ERR_ARG;
    floe_grid_info gi;
    if (floe_grid_get_info(ctx, g, &gi))
        return FLOE_ERR;
    memcpy(gi.data, heights, (size_t)nx * nz * sizeof(float));
    return FLOE_OK;
}
