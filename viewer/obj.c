/* floe view: Wavefront OBJ meshes (v, vn, f with v, v/t, v//n, v/t/n and
 * negative indices; polygons as fans) and vertex normals. */
#include "vw.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 1024;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

int vw_read_obj(const char *path, vw_mesh *m, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    float *pos = NULL;
    uint32_t *tri = NULL;
    size_t npos = 0, cpos = 0, nt = 0, ct = 0;
    char ln[4096];
    long line = 0;
    int rc = 0;
    while (fgets(ln, sizeof ln, f)) {
        line++;
        if (ln[0] == 'v' && ln[1] == ' ') {
            float x, y, z;
            if (sscanf(ln + 2, "%f %f %f", &x, &y, &z) != 3) {
                snprintf(err, errlen, "%s:%ld: a vertex needs three numbers", path, line);
                rc = -1;
                break;
            }
            if (grow((void **)&pos, &cpos, 3 * (npos + 1), sizeof(float))) {
                rc = -1;
                snprintf(err, errlen, "%s: out of memory", path);
                break;
            }
            pos[3 * npos] = x, pos[3 * npos + 1] = y, pos[3 * npos + 2] = z;
            npos++;
        } else if (ln[0] == 'f' && ln[1] == ' ') {
            uint32_t idx[256];
            int n = 0;
            char *s = ln + 2, *e;
            while (n < 256) {
                long v = strtol(s, &e, 10);
                if (e == s)
                    break;
                if (v < 0)
                    v += (long)npos + 1;
                if (v < 1 || v > (long)npos) {
                    snprintf(err, errlen, "%s:%ld: vertex %ld of %zu", path, line, v, npos);
                    rc = -1;
                    break;
                }
                idx[n++] = (uint32_t)(v - 1);
                s = e;
                while (*s && *s != ' ' && *s != '\t' && *s != '\n' && *s != '\r')
                    s++; /* /t/n */
            }
            if (rc)
                break;
            for (int q = 1; q + 1 < n; q++) {
                if (grow((void **)&tri, &ct, 3 * (nt + 1), sizeof(uint32_t))) {
                    rc = -1;
                    snprintf(err, errlen, "%s: out of memory", path);
                    break;
                }
                tri[3 * nt] = idx[0], tri[3 * nt + 1] = idx[q], tri[3 * nt + 2] = idx[q + 1];
                nt++;
            }
            if (rc)
                break;
        }
    }
    fclose(f);
    if (rc) {
        free(pos);
        free(tri);
        return -1;
    }
    m->nv = (uint32_t)npos;
    m->pos = pos;
    m->nt = (uint32_t)nt;
    m->tri = tri;
    vw_mesh_normals(m);
    return 0;
}

void vw_mesh_normals(vw_mesh *m)
{
    free(m->nrm);
    m->nrm = calloc((size_t)3 * (m->nv ? m->nv : 1), sizeof(float));
    if (!m->nrm)
        return;
    for (uint32_t t = 0; t < m->nt; t++) {
        const uint32_t *v = &m->tri[3 * t];
        const float *a = &m->pos[3 * v[0]], *b = &m->pos[3 * v[1]], *c = &m->pos[3 * v[2]];
        float e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]}, e2[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
        float n[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]};
        for (int k = 0; k < 3; k++)
            for (int j = 0; j < 3; j++)
                m->nrm[3 * v[k] + j] += n[j]; /* area weighted */
    }
    for (uint32_t i = 0; i < m->nv; i++) {
        float *n = &m->nrm[3 * i], l = sqrtf(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
        if (l > 0)
            n[0] /= l, n[1] /= l, n[2] /= l;
        else
            n[1] = 1;
    }
}
