/* PNG output through libpng: 8-bit RGB, written to ".<name>.tmp.<pid>" in
 * the target folder (a descriptor) and renamed over the final name, so a reader never sees
 * a half-written frame. */
#include "raycast.h"

#include <errno.h>
#include <fcntl.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int rc_png_write(int dirfd, const char *path, const uint8_t *rgb, int width, int height, char *err, size_t errlen)
{
    char tmp[400];
    if (strchr(path, '/') || snprintf(tmp, sizeof tmp, ".%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp) {
        snprintf(err, errlen, "%s: not a plain file name", path);
        return -1;
    }
    int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) {
        png_destroy_write_struct(&png, NULL);
        fclose(f);
        unlinkat(dirfd, tmp, 0);
        snprintf(err, errlen, "libpng: out of memory");
        return -1;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        fclose(f);
        unlinkat(dirfd, tmp, 0);
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
        unlinkat(dirfd, tmp, 0);
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    if (renameat(dirfd, tmp, dirfd, path) != 0) {
        int e = errno;
        unlinkat(dirfd, tmp, 0);
        snprintf(err, errlen, "cannot rename %s to %s: %s", tmp, path, strerror(e));
        return -1;
    }
    return 0;
}
