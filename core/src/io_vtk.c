/* Legacy VTK frames (binary, big-endian): POLYDATA with one vertex cell per
 * particle, columns as POINT_DATA. Layout, every binary block followed by a
 * newline as the legacy format asks:
 *
 *   # vtk DataFile Version 3.0
 *   Floe particles
 *   BINARY
 *   DATASET POLYDATA
 *   POINTS N float          <3N big-endian floats>
 *   VERTICES N 2N           <N times: int32 1, int32 i>
 *   POINT_DATA N
 *   SCALARS name float 1    (F32)  LOOKUP_TABLE default  <N floats>
 *   VECTORS name float      (VEC3) <3N floats>
 *   SCALARS name int 1      (I32, U32) LOOKUP_TABLE default  <N int32>
 *
 * With no particles the file ends after "POINTS 0 float". */
#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VTK_CHUNK_WORDS (64u * 1024u) /* 256 KiB write buffer */

static void put_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)((v >> 24) & 0xffu);
    p[1] = (unsigned char)((v >> 16) & 0xffu);
    p[2] = (unsigned char)((v >> 8) & 0xffu);
    p[3] = (unsigned char)(v & 0xffu);
}

/* VTK legacy names are single tokens. */
static int name_ok(const char *s)
{
    if (!s || !*s || strlen(s) > 200)
        return 0;
    for (; *s; s++)
        if ((unsigned char)*s <= ' ' || (unsigned char)*s >= 0x7f)
            return 0;
    return 1;
}

/* Write `words` 32-bit words from src (host order) as big-endian, then a
 * newline. 0 or -1. */
static int write_be_block(FILE *f, unsigned char *buf, const void *src, size_t words)
{
    const unsigned char *s = src;
    for (size_t w0 = 0; w0 < words; w0 += VTK_CHUNK_WORDS) {
        size_t m = words - w0 < VTK_CHUNK_WORDS ? words - w0 : VTK_CHUNK_WORDS;
        for (size_t k = 0; k < m; k++) {
            uint32_t u;
            memcpy(&u, s + 4 * (w0 + k), 4);
            put_be32(buf + 4 * k, u);
        }
        if (fwrite(buf, 4, m, f) != m)
            return -1;
    }
    return fputc('\n', f) == EOF ? -1 : 0;
}

static int write_vertices(FILE *f, unsigned char *buf, uint32_t n)
{
    const size_t per = VTK_CHUNK_WORDS / 2;
    for (uint32_t i0 = 0; i0 < n; i0 += (uint32_t)per) {
        size_t m = n - i0 < per ? n - i0 : per;
        for (size_t k = 0; k < m; k++) {
            put_be32(buf + 8 * k, 1u);
            put_be32(buf + 8 * k + 4, (uint32_t)(i0 + k));
        }
        if (fwrite(buf, 8, m, f) != m)
            return -1;
    }
    return fputc('\n', f) == EOF ? -1 : 0;
}

int io_vtk_vertices(FILE *f, uint32_t n)
{
    unsigned char *buf = malloc(4 * (size_t)VTK_CHUNK_WORDS);
    if (!buf) {
        errno = ENOMEM;
        return -1;
    }
    fprintf(f, "VERTICES %lu %lu\n", (unsigned long)n, 2 * (unsigned long)n);
    int r = write_vertices(f, buf, n);
    free(buf);
    return r;
}

void io_vtk_column_header(FILE *f, const io_column *c)
{
    switch (c->type) {
    case FLOE_F32: fprintf(f, "SCALARS %s float 1\nLOOKUP_TABLE default\n", c->name); break;
    case FLOE_VEC3: fprintf(f, "VECTORS %s float\n", c->name); break;
    case FLOE_I32:
    case FLOE_U32: /* as int: the bit pattern of uint32 values */
        fprintf(f, "SCALARS %s int 1\nLOOKUP_TABLE default\n", c->name);
        break;
    }
}

int io_write_vtk(const char *path, uint32_t n, const float *x, const io_column *cols, int ncols)
{
    return io_write_vtk_at(AT_FDCWD, path, n, x, cols, ncols);
}

int io_write_vtk_at(int dirfd, const char *path, uint32_t n, const float *x, const io_column *cols, int ncols)
{
    if (!path || ncols < 0 || (ncols > 0 && !cols) || (n > 0 && !x) || n > (uint32_t)INT32_MAX) {
        errno = EINVAL;
        return -1;
    }
    for (int c = 0; c < ncols; c++) {
        floe_type t = cols[c].type;
        if (!name_ok(cols[c].name) || (t != FLOE_F32 && t != FLOE_VEC3 && t != FLOE_I32 && t != FLOE_U32) ||
            (n > 0 && !cols[c].data)) {
            errno = EINVAL;
            return -1;
        }
    }
    unsigned char *buf = malloc(4 * (size_t)VTK_CHUNK_WORDS);
    if (!buf) {
        errno = ENOMEM;
        return -1;
    }
    io_atomic a;
    if (io_atomic_openat(&a, dirfd, path) != 0) {
        int e = errno;
        free(buf);
        errno = e;
        return -1;
    }
    FILE *f = a.f;
    unsigned long un = (unsigned long)n;
    int r = 0;

    fprintf(f, "# vtk DataFile Version 3.0\nFloe particles\nBINARY\nDATASET POLYDATA\nPOINTS %lu float\n", un);
    if (n == 0) /* VTK's reader fails on "VERTICES 0 0": points only */
        goto done;
    r |= write_be_block(f, buf, x, 3 * (size_t)n);
    r |= io_vtk_vertices(f, n);
    fprintf(f, "POINT_DATA %lu\n", un);
    for (int c = 0; c < ncols && !r; c++) {
        io_vtk_column_header(f, &cols[c]);
        r |= write_be_block(f, buf, cols[c].data, (cols[c].type == FLOE_VEC3 ? 3 : 1) * (size_t)n);
    }
done:
    free(buf);
    if (r || ferror(f)) {
        int e = errno ? errno : EIO;
        io_atomic_abort(&a);
        errno = e;
        return -1;
    }
    return io_atomic_commit(&a);
}
