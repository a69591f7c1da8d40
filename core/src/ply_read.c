/* The PLY reader (floe surface, the tests): the binary little-endian frames of
 * core/src/io_ply.c, checked strictly (header, sizes, data length) so a
 * malformed file fails instead of reading garbage. */
#include "ply_read.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static uint32_t get_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#define PLY_MAX_LINE 1024
#define PLY_MAX_HEADER_LINES 4096

enum { T_FLOAT = 1, T_INT, T_UINT, T_OTHER };

/* Size in bytes and kind of a PLY scalar type name, or 0 if unknown. */
static size_t ply_type(const char *t, int *kind)
{
    static const struct { const char *name; size_t size; int kind; } types[] = {
        {"float", 4, T_FLOAT}, {"float32", 4, T_FLOAT},
        {"int", 4, T_INT}, {"int32", 4, T_INT},
        {"uint", 4, T_UINT}, {"uint32", 4, T_UINT},
        {"char", 1, T_OTHER}, {"int8", 1, T_OTHER}, {"uchar", 1, T_OTHER}, {"uint8", 1, T_OTHER},
        {"short", 2, T_OTHER}, {"int16", 2, T_OTHER}, {"ushort", 2, T_OTHER}, {"uint16", 2, T_OTHER},
        {"double", 8, T_OTHER}, {"float64", 8, T_OTHER},
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strcmp(t, types[i].name) == 0) {
            *kind = types[i].kind;
            return types[i].size;
        }
    return 0;
}

/* Read one header line without its newline; 0 on success, -1 if the line is
 * missing, too long or holds a NUL byte. */
static int read_line(FILE *f, char *line)
{
    if (!fgets(line, PLY_MAX_LINE, f))
        return -1;
    size_t len = strlen(line);
    if (len == 0 || line[len - 1] != '\n')
        return -1; /* too long, EOF inside the line, or NUL */
    line[--len] = '\0';
    if (len > 0 && line[len - 1] == '\r')
        line[--len] = '\0';
    return 0;
}

static int parse_count(const char *s, uint32_t *out)
{
    if (!s || !*s)
        return -1;
    for (const char *p = s; *p; p++)
        if (*p < '0' || *p > '9')
            return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v > UINT32_MAX)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

int ply_read_property(const char *path, const char *prop, uint32_t *n, float **out)
{
    if (out)
        *out = NULL;
    if (n)
        *n = 0;
    if (!path || !prop || !n || !out) {
        errno = EINVAL;
        return -1;
    }
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;

    char line[PLY_MAX_LINE];
    int bad = 0;
    int nlines = 0, format_seen = 0, have_element = 0, in_vertex = 0, vertex_seen = 0;
    uint64_t skip_before = 0;     /* bytes of the elements before "vertex" */
    uint64_t cur_stride = 0, cur_count = 0; /* element being declared */
    uint32_t count = 0;
    uint64_t stride = 0, offset = 0;
    int found = 0, kind = 0;

    if (read_line(f, line) != 0 || strcmp(line, "ply") != 0)
        bad = 1;
    while (!bad) {
        if (++nlines > PLY_MAX_HEADER_LINES || read_line(f, line) != 0) {
            bad = 1;
            break;
        }
        char *save = NULL;
        char *kw = strtok_r(line, " \t", &save);
        if (!kw)
            continue; /* blank line */
        if (strcmp(kw, "comment") == 0 || strcmp(kw, "obj_info") == 0)
            continue;
        if (strcmp(kw, "format") == 0) {
            const char *fmt = strtok_r(NULL, " \t", &save);
            const char *ver = strtok_r(NULL, " \t", &save);
            if (format_seen || have_element || !fmt || !ver || strcmp(fmt, "binary_little_endian") != 0 ||
                strcmp(ver, "1.0") != 0 || strtok_r(NULL, " \t", &save))
                bad = 1;
            format_seen = 1;
        } else if (strcmp(kw, "element") == 0) {
            const char *name = strtok_r(NULL, " \t", &save);
            const char *cnt = strtok_r(NULL, " \t", &save);
            uint32_t c;
            if (!format_seen || !name || parse_count(cnt, &c) != 0 || strtok_r(NULL, " \t", &save)) {
                bad = 1;
                break;
            }
            if (have_element && !vertex_seen) /* close an element before "vertex" */
                skip_before += cur_stride * cur_count;
            have_element = 1;
            in_vertex = 0;
            cur_stride = 0;
            cur_count = c;
            if (strcmp(name, "vertex") == 0) {
                if (vertex_seen)
                    bad = 1;
                vertex_seen = in_vertex = 1;
                count = c;
            }
        } else if (strcmp(kw, "property") == 0) {
            const char *type = strtok_r(NULL, " \t", &save);
            if (vertex_seen && !in_vertex && type && strcmp(type, "list") == 0)
                continue; /* faces after the vertices (meshes): not read */
            const char *name = strtok_r(NULL, " \t", &save);
            int k = 0;
            size_t sz = type ? ply_type(type, &k) : 0;
            /* "property list ..." and unknown types are not supported */
            if (!have_element || sz == 0 || !name || strtok_r(NULL, " \t", &save)) {
                bad = 1;
                break;
            }
            if (in_vertex) {
                if (strcmp(name, prop) == 0) {
                    if (found || k == T_OTHER) /* duplicate, or not float/int/uint */
                        bad = 1;
                    found = 1;
                    kind = k;
                    offset = stride;
                }
                stride += sz;
            }
            cur_stride += sz;
            if (cur_stride > 65536) /* absurd record size */
                bad = 1;
        } else if (strcmp(kw, "end_header") == 0) {
            if (strtok_r(NULL, " \t", &save))
                bad = 1;
            break;
        } else {
            bad = 1;
        }
    }
    if (!bad && (!format_seen || !vertex_seen || stride == 0))
        bad = 1;
    if (bad) {
        fclose(f);
        errno = EINVAL;
        return -1;
    }
    if (!found) {
        fclose(f);
        errno = ENOENT;
        return -1;
    }

    /* The data must be all there before anything is allocated. */
    off_t hdr_end = ftello(f);
    struct stat st;
    if (hdr_end < 0 || fstat(fileno(f), &st) != 0) {
        fclose(f);
        return -1;
    }
    uint64_t need = (uint64_t)count * stride; /* count < 2^32, stride < 2^40 */
    if ((uint64_t)st.st_size < (uint64_t)hdr_end ||
        (uint64_t)st.st_size - (uint64_t)hdr_end < skip_before ||
        (uint64_t)st.st_size - (uint64_t)hdr_end - skip_before < need) {
        fclose(f);
        errno = EINVAL;
        return -1;
    }
    if (skip_before > 0 && fseeko(f, hdr_end + (off_t)skip_before, SEEK_SET) != 0) {
        fclose(f);
        return -1;
    }

    float *res = malloc(count ? (size_t)count * sizeof(float) : 1);
    size_t per_chunk = stride > 256u * 1024u ? 1 : (256u * 1024u) / (size_t)stride;
    unsigned char *buf = malloc(per_chunk * (size_t)stride);
    if (!res || !buf) {
        free(res);
        free(buf);
        fclose(f);
        errno = ENOMEM;
        return -1;
    }
    for (uint32_t i0 = 0; i0 < count; i0 += (uint32_t)per_chunk) {
        size_t m = count - i0 < per_chunk ? count - i0 : per_chunk;
        if (fread(buf, (size_t)stride, m, f) != m) {
            free(res);
            free(buf);
            fclose(f);
            errno = EIO;
            return -1;
        }
        for (size_t j = 0; j < m; j++) {
            uint32_t u = get_le32(buf + j * stride + offset);
            float v;
            if (kind == T_FLOAT)
                memcpy(&v, &u, 4);
            else if (kind == T_INT) {
                int32_t s;
                memcpy(&s, &u, 4);
                v = (float)s;
            }
            else
                v = (float)u;
            res[i0 + j] = v;
        }
    }
    free(buf);
    fclose(f);
    *n = count;
    *out = res;
    return 0;
}
