/* Mesh files, built in memory and handed to the core's out_write (which
 * writes them atomically): OBJ text (v, vn, f a//a b//b c//c, 1-based) and
 * binary little-endian PLY (float x y z nx ny nz; faces as uchar count and
 * int indices). */
#include "surface.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mesh_obj(const mesh *m, char **buf, size_t *len)
{
    /* at most: "v " and three %.7g (15 characters each), "vn " and three
     * %.5f of [-1, 1] (8 each), "f " and three "a//a" of `digits` each */
    const size_t digits = (size_t)snprintf(NULL, 0, "%u", m->nv + 1);
    size_t cap = 128 + (size_t)m->nv * (2 + 3 * 16 + 3 + 3 * 9) + (size_t)m->nt * (2 + 3 * (2 * digits + 3)), n = 0;
    char *b = malloc(cap);
    if (!b)
        return FLOE_ERR_NOMEM;
    n += (size_t)snprintf(b + n, cap - n, "# floe surface: %u vertices, %u triangles\n", m->nv, m->nt);
    for (uint32_t i = 0; i < m->nv; i++) {
        const float *v = &m->v[3 * (size_t)i];
        n += (size_t)snprintf(b + n, cap - n, "v %.7g %.7g %.7g\n", v[0], v[1], v[2]);
    }
    for (uint32_t i = 0; i < m->nv; i++) {
        const float *v = &m->nrm[3 * (size_t)i];
        n += (size_t)snprintf(b + n, cap - n, "vn %.5f %.5f %.5f\n", v[0], v[1], v[2]);
    }
    for (uint32_t t = 0; t < m->nt; t++) {
        const uint32_t *i = &m->tri[3 * (size_t)t];
        n += (size_t)snprintf(b + n, cap - n, "f %u//%u %u//%u %u//%u\n", i[0] + 1, i[0] + 1, i[1] + 1, i[1] + 1,
                              i[2] + 1, i[2] + 1);
    }
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
    for (uint32_t i = 0; i < m->nv; i++) {
        for (int k = 0; k < 3; k++)
            p = put32(p, &m->v[3 * (size_t)i + k]);
        for (int k = 0; k < 3; k++)
            p = put32(p, &m->nrm[3 * (size_t)i + k]);
    }
    for (uint32_t t = 0; t < m->nt; t++) {
        *p++ = 3;
        for (int k = 0; k < 3; k++)
            p = put32(p, &m->tri[3 * (size_t)t + k]);
    }
    *buf = b;
    *len = n;
    return FLOE_OK;
}
