/* Mesh files, built in memory and handed to the core's out_write (which
 * writes them atomically): OBJ text (v, vn, f a//a b//b c//c, 1-based) and
 * binary little-endian PLY (float x y z nx ny nz; faces as uchar count and
 * int indices). */
#include "surface.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* decimal digits of v, written at p; returns the end */
static char *put_u32(char *p, uint32_t v)
{
    char tmp[10];
    int n = 0;
    do
        tmp[n++] = (char)('0' + v % 10), v /= 10;
    while (v);
    while (n)
        *p++ = tmp[--n];
    return p;
}

/* Lines [lo, hi) of one kind: 0 "v x y z", 1 "vn x y z", 2 "f a//a b//b c//c". */
static char *obj_lines(const mesh *m, int kind, uint32_t lo, uint32_t hi, char *p)
{
    for (uint32_t i = lo; i < hi; i++) {
        if (kind == 0) {
            const float *v = &m->v[3 * (size_t)i];
            p += sprintf(p, "v %.7g %.7g %.7g\n", v[0], v[1], v[2]);
        } else if (kind == 1) {
            const float *v = &m->nrm[3 * (size_t)i];
            p += sprintf(p, "vn %.5f %.5f %.5f\n", v[0], v[1], v[2]);
        } else {
            const uint32_t *t = &m->tri[3 * (size_t)i];
            *p++ = 'f';
            for (int k = 0; k < 3; k++) {
                *p++ = ' ';
                p = put_u32(p, t[k] + 1);
                *p++ = '/', *p++ = '/';
                p = put_u32(p, t[k] + 1);
            }
            *p++ = '\n';
        }
    }
    return p;
}

/* The text is formatted in parallel: chunk c of the lines goes to its
 * worst-case offset in the buffer, then the chunks are moved together in
 * order (the same bytes as one sequential pass). */
#define OBJ_CHUNK 8192u

int mesh_obj(const mesh *m, char **buf, size_t *len)
{
    /* at most: "v " and three %.7g (15 characters each), "vn " and three
     * %.5f of [-1, 1] (8 each), "f " and three "a//a" of `digits` each */
    const size_t digits = (size_t)snprintf(NULL, 0, "%u", m->nv + 1);
    const size_t line_max[3] = {2 + 3 * 16 + 1, 3 + 3 * 9 + 1, 2 + 3 * (2 * digits + 3) + 1};
    const uint32_t count[3] = {m->nv, m->nv, m->nt};
    char head[96];
    size_t n = (size_t)snprintf(head, sizeof head, "# floe surface: %u vertices, %u triangles\n", m->nv, m->nt);
    size_t cap = n + 1, nchunks = 0;
    for (int k = 0; k < 3; k++) {
        cap += (size_t)count[k] * line_max[k];
        nchunks += (count[k] + OBJ_CHUNK - 1) / OBJ_CHUNK;
    }
    char *b = malloc(cap);
    size_t *start = malloc((nchunks + 1) * sizeof *start), *end = malloc((nchunks + 1) * sizeof *end);
    if (!b || !start || !end) {
        free(b), free(start), free(end);
        return FLOE_ERR_NOMEM;
    }
    memcpy(b, head, n);
    size_t off = n, c = 0;
    for (int k = 0; k < 3; k++)
        for (uint32_t lo = 0; lo < count[k]; lo += OBJ_CHUNK, c++) {
            start[c] = off;
            uint32_t hi = count[k] - lo < OBJ_CHUNK ? count[k] : lo + OBJ_CHUNK;
            off += (size_t)(hi - lo) * line_max[k];
        }
    const long nc = (long)nchunks;
#pragma omp parallel for schedule(dynamic, 1)
    for (long ci = 0; ci < nc; ci++) {
        /* chunk ci: which kind and which lines */
        long r = ci;
        int k = 0;
        for (; k < 3; k++) {
            long ck = (long)((count[k] + OBJ_CHUNK - 1) / OBJ_CHUNK);
            if (r < ck)
                break;
            r -= ck;
        }
        uint32_t lo = (uint32_t)r * OBJ_CHUNK, hi = count[k] - lo < OBJ_CHUNK ? count[k] : lo + OBJ_CHUNK;
        end[ci] = (size_t)(obj_lines(m, k, lo, hi, b + start[ci]) - b);
    }
    for (size_t ci = 0; ci < nchunks; ci++) {
        size_t l = end[ci] - start[ci];
        memmove(b + n, b + start[ci], l);
        n += l;
    }
    free(start), free(end);
    *buf = b;
    *len = n;
    return FLOE_OK;
}

static int little_endian(void)
{
    const uint16_t one = 1;
    return *(const uint8_t *)&one == 1;
}

static char *put32(char *p, const void *v)
{
    const uint8_t *s = v;
    if (little_endian())
        memcpy(p, s, 4);
    else
        p[0] = (char)s[3], p[1] = (char)s[2], p[2] = (char)s[1], p[3] = (char)s[0];
    return p + 4;
}

int mesh_ply(const mesh *m, char **buf, size_t *len)
{
    char head[512];
    int hl = snprintf(head, sizeof head,
                      "ply\nformat binary_little_endian 1.0\ncomment floe surface\nelement vertex %u\n"
                      "property float x\nproperty float y\nproperty float z\n"
                      "property float nx\nproperty float ny\nproperty float nz\n"
                      "element face %u\nproperty list uchar int vertex_indices\nend_header\n",
                      m->nv, m->nt);
    size_t n = (size_t)hl + (size_t)m->nv * 24 + (size_t)m->nt * 13;
    char *b = malloc(n), *p = b + hl;
    if (!b)
        return FLOE_ERR_NOMEM;
    memcpy(b, head, (size_t)hl);
    /* fixed-size records: each vertex and face at its own offset */
    const long nv = (long)m->nv, nt = (long)m->nt;
#pragma omp parallel for if (nv > 65536)
    for (long i = 0; i < nv; i++) {
        char *q = p + 24 * (size_t)i;
        for (int k = 0; k < 3; k++)
            q = put32(q, &m->v[3 * (size_t)i + k]);
        for (int k = 0; k < 3; k++)
            q = put32(q, &m->nrm[3 * (size_t)i + k]);
    }
    p += 24 * (size_t)nv;
#pragma omp parallel for if (nt > 65536)
    for (long t = 0; t < nt; t++) {
        char *q = p + 13 * (size_t)t;
        *q++ = 3;
        for (int k = 0; k < 3; k++)
            q = put32(q, &m->tri[3 * (size_t)t + k]);
    }
    *buf = b;
    *len = n;
    return FLOE_OK;
}
