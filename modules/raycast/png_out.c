/* PNG output through libpng: 8-bit RGB, written to ".<name>.tmp.<pid>" in
 * the target folder and renamed over the final name, so a reader never sees
 * a half-written frame. */
#include "raycast.h"

#include <errno.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int rc_png_write(const char *path, const uint8_t *rgb, int width, int height, char *err, size_t errlen)
{
    char tmp[4200];
    const char *slash = strrchr(path, '/');
    size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0;
    if (snprintf(tmp, sizeof tmp, "%.*s.%s.tmp.%ld", (int)dirlen, path, slash ? slash + 1 : path, (long)getpid()) >=
        (int)sizeof tmp) {
        snprintf(err, errlen, "path too long");
        return -1;
    }
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
        return -1;
    }
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) {
        png_destroy_write_struct(&png, NULL);
        fclose(f);
        remove(tmp);
        snprintf(err, errlen, "libpng: out of memory");
        return -1;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        fclose(f);
        remove(tmp);
        snprintf(err, errlen, "libpng failed writing %s", path);
        return -1;
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)width, (png_uint_32)height, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_compression_level(png, 3);
    png_write_info(png, info);
    for (int y = 0; y < height; y++)
        png_write_row(png, (png_const_bytep)(rgb + (size_t)y * (size_t)width * 3));
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    if (fflush(f) != 0 || fclose(f) != 0) {
        remove(tmp);
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        remove(tmp);
        snprintf(err, errlen, "cannot rename %s to %s: %s", tmp, path, strerror(e));
        return -1;
    }
    return 0;
}
