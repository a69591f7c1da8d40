/* PLY frames: binary_little_endian 1.0, one "vertex" element holding the
 * positions (x y z) and every column (vectors as NAME_x NAME_y NAME_z).
 * Written through io_atomic; the tests read them back with tests/ply_read.c. */
#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ------------------------------------------------------------- */

static void put_le32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v & 0xffu);
    p[1] = (unsigned char)((v >> 8) & 0xffu);
    p[2] = (unsigned char)((v >> 16) & 0xffu);
    p[3] = (unsigned char)((v >> 24) & 0xffu);
}

static uint32_t bits_of(const void *src)
{
    uint32_t u;
    memcpy(&u, src, 4);
    return u;
}

/* A PLY property name: non-empty, printable, no white space. */
static int name_ok(const char *s)
{
    if (!s || !*s)
        return 0;
    for (; *s; s++)
        if ((unsigned char)*s <= ' ' || (unsigned char)*s >= 0x7f)
            return 0;
    return 1;
}

static int column_ok(const io_column *c, uint32_t n)
{
    if (!name_ok(c->name) || strlen(c->name) > 200)
        return 0;
    if (c->type != FLOE_F32 && c->type != FLOE_VEC3 && c->type != FLOE_I32 && c->type != FLOE_U32)
        return 0;
    return n == 0 || c->data != NULL;
}

/* ---- writer -------------------------------------------------------------- */

void io_ply_header(FILE *f, uint32_t n, const io_column *cols, int ncols)
{
    fprintf(f, "ply\nformat binary_little_endian 1.0\ncomment written by Floe\n"
               "element vertex %lu\nproperty float x\nproperty float y\nproperty float z\n",
            (unsigned long)n);
    for (int c = 0; c < ncols; c++) {
        const char *nm = cols[c].name;
        switch (cols[c].type) {
        case FLOE_F32: fprintf(f, "property float %s\n", nm); break;
        case FLOE_VEC3:
            fprintf(f, "property float %s_x\nproperty float %s_y\nproperty float %s_z\n", nm, nm, nm);
            break;
        case FLOE_I32: fprintf(f, "property int %s\n", nm); break;
        case FLOE_U32: fprintf(f, "property uint %s\n", nm); break;
        }
    }
    fputs("end_header\n", f);
}

int io_write_ply(const char *path, uint32_t n, const float *x, const io_column *cols, int ncols)
{
    return io_write_ply_at(AT_FDCWD, path, n, x, cols, ncols);
}

int io_write_ply_at(int dirfd, const char *path, uint32_t n, const float *x, const io_column *cols, int ncols)
{
    if (!path || ncols < 0 || (ncols > 0 && !cols) || (n > 0 && !x)) {
        errno = EINVAL;
        return -1;
    }
    size_t stride = 3 * sizeof(float);
    for (int c = 0; c < ncols; c++) {
        if (!column_ok(&cols[c], n)) {
            errno = EINVAL;
            return -1;
        }
        stride += floe_type_size(cols[c].type);
    }

    io_atomic a;
    if (io_atomic_openat(&a, dirfd, path) != 0)
        return -1;
    FILE *f = a.f;

    io_ply_header(f, n, cols, ncols);

    /* Interleaved records, buffered in chunks of about 256 KiB. */
    size_t per_chunk = (256u * 1024u) / stride;
    if (per_chunk == 0)
        per_chunk = 1;
    if (per_chunk > n)
        per_chunk = n ? n : 1;
    unsigned char *buf = malloc(per_chunk * stride);
    if (!buf) {
        io_atomic_abort(&a);
        errno = ENOMEM;
        return -1;
    }
    int ok = !ferror(f);
    for (uint32_t i0 = 0; ok && i0 < n; i0 += (uint32_t)per_chunk) {
        uint32_t i1 = n - i0 < per_chunk ? n : i0 + (uint32_t)per_chunk;
        unsigned char *p = buf;
        for (uint32_t i = i0; i < i1; i++) {
            for (int k = 0; k < 3; k++, p += 4)
                put_le32(p, bits_of(&x[3 * (size_t)i + k]));
            for (int c = 0; c < ncols; c++) {
                const unsigned char *d = cols[c].data;
                if (cols[c].type == FLOE_VEC3) {
                    for (int k = 0; k < 3; k++, p += 4)
                        put_le32(p, bits_of(d + 12 * (size_t)i + 4 * (size_t)k));
                } else {
                    put_le32(p, bits_of(d + 4 * (size_t)i));
                    p += 4;
                }
            }
        }
        size_t bytes = (size_t)(p - buf);
        if (fwrite(buf, 1, bytes, f) != bytes)
            ok = 0;
    }
    free(buf);
    if (!ok) {
        int e = errno ? errno : EIO;
        io_atomic_abort(&a);
        errno = e;
        return -1;
    }
    return io_atomic_commit(&a);
}
