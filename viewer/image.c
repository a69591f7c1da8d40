/* floe view: screenshots as PNG (libpng) or binary PPM (what the tests read). */
#include "vw.h"

#include <errno.h>
#include <png.h>
#include <stdio.h>
#include <string.h>

static int write_ppm(FILE *f, const unsigned char *rgb, int w, int h)
{
    fprintf(f, "P6\n%d %d\n255\n", w, h);
    return fwrite(rgb, 3, (size_t)w * (size_t)h, f) == (size_t)w * (size_t)h ? 0 : -1;
}

static int write_png(FILE *f, const unsigned char *rgb, int w, int h)
{
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        return -1;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        return -1;
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < h; y++)
        png_write_row(png, (png_const_bytep)(rgb + (size_t)y * (size_t)w * 3));
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    return 0;
}

int vw_write_image(const char *path, const unsigned char *rgb, int w, int h, char *err, size_t errlen)
{
    size_t len = strlen(path);
    int ppm = len > 4 && !strcmp(path + len - 4, ".ppm");
    if (!ppm && !(len > 4 && !strcmp(path + len - 4, ".png"))) {
        snprintf(err, errlen, "%s: a screenshot is a .png or a .ppm", path);
        return -1;
    }
    FILE *f = fopen(path, "wb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    int rc = ppm ? write_ppm(f, rgb, w, h) : write_png(f, rgb, w, h);
    if (fclose(f) || rc) {
        snprintf(err, errlen, "%s: cannot write the image", path);
        return -1;
    }
    return 0;
}
