/* floe view: PLY files, particle frames (one "vertex" element, any scalar
 * properties) and meshes (a "face" element of vertex_indices lists), in
 * binary little-endian or ASCII 1.0. Read whole, once: every property of a
 * frame comes from one pass (libfloe's ply_read reads one property a call and
 * no faces). */
#include "vw.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PROPS 64
#define MAX_ELEMS 8

typedef enum { T_NONE, T_I8, T_U8, T_I16, T_U16, T_I32, T_U32, T_F32, T_F64 } ptype;

typedef struct prop {
    char name[VW_NAME];
    ptype type;
    ptype count_type;        /* T_NONE: scalar, else a list */
} prop;

typedef struct elem {
    char name[VW_NAME];
    uint64_t n;
    int nprops;
    prop props[MAX_PROPS];
} elem;

static ptype type_of(const char *s)
{
    static const struct { const char *n; ptype t; } tab[] = {
        {"char", T_I8}, {"int8", T_I8}, {"uchar", T_U8}, {"uint8", T_U8}, {"short", T_I16}, {"int16", T_I16},
        {"ushort", T_U16}, {"uint16", T_U16}, {"int", T_I32}, {"int32", T_I32}, {"uint", T_U32},
        {"uint32", T_U32}, {"float", T_F32}, {"float32", T_F32}, {"double", T_F64}, {"float64", T_F64}};
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (!strcmp(s, tab[i].n))
            return tab[i].t;
    return T_NONE;
}

static size_t type_size(ptype t)
{
    static const size_t sz[] = {0, 1, 1, 2, 2, 4, 4, 4, 8};
    return sz[t];
}

static double get_bin(const unsigned char *p, ptype t)
{
    union { int8_t i8; uint8_t u8; int16_t i16; uint16_t u16; int32_t i32; uint32_t u32; float f; double d; } u;
    memcpy(&u, p, type_size(t)); /* little-endian hosts (x86-64, arm64) */
    switch (t) {
    case T_I8: return u.i8;
    case T_U8: return u.u8;
    case T_I16: return u.i16;
    case T_U16: return u.u16;
    case T_I32: return u.i32;
    case T_U32: return u.u32;
    case T_F32: return u.f;
    case T_F64: return u.d;
    default: return 0;
    }
}

/* reads the next number of an ASCII body */
static int get_ascii(char **p, char *end, double *v)
{
    char *s = *p;
    while (s < end && (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n'))
        s++;
    if (s >= end)
        return -1;
    char *e;
    *v = strtod(s, &e);
    if (e == s)
        return -1;
    *p = e;
    return 0;
}

static int fail(char *err, size_t errlen, const char *path, const char *what)
{
    snprintf(err, errlen, "%s: %s", path, what);
    return -1;
}

int vw_read_ply(const char *path, vw_cloud *c, vw_mesh *m, int *is_mesh, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    memset(m, 0, sizeof *m);
    *is_mesh = 0;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = size > 0 ? malloc((size_t)size + 1) : NULL;
    if (!buf || fread(buf, 1, (size_t)size, f) != (size_t)size) {
        fclose(f);
        free(buf);
        return fail(err, errlen, path, "cannot read the file");
    }
    fclose(f);
    buf[size] = 0;
    char *end = buf + size;
    if (size < 4 || strncmp(buf, "ply", 3) != 0) {
        free(buf);
        return fail(err, errlen, path, "not a PLY file (no 'ply' on the first line)");
    }
    elem el[MAX_ELEMS];
    int nel = 0, binary = -1, line = 1, rc = -1;
    char *p = buf, *body = NULL;
    char msg[256];
    while (p < end) { /* header, one line at a time */
        char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            break;
        char ln[512];
        size_t len = (size_t)(nl - p) < sizeof ln - 1 ? (size_t)(nl - p) : sizeof ln - 1;
        memcpy(ln, p, len);
        ln[len] = 0;
        if (len && ln[len - 1] == '\r')
            ln[len - 1] = 0;
        p = nl + 1;
        char a[VW_NAME], b[VW_NAME], cc[VW_NAME], d[VW_NAME];
        unsigned long long n;
        if (!strncmp(ln, "format ", 7)) {
            binary = strstr(ln, "binary_little_endian") ? 1 : strstr(ln, "ascii") ? 0 : -2;
            if (binary == -2) {
                snprintf(msg, sizeof msg, "line %d: only binary_little_endian and ascii PLY are read", line);
                goto out;
            }
        } else if (sscanf(ln, "element %63s %llu", a, &n) == 2) {
            if (nel == MAX_ELEMS) {
                snprintf(msg, sizeof msg, "line %d: more than %d elements", line, MAX_ELEMS);
                goto out;
            }
            memset(&el[nel], 0, sizeof el[nel]);
            snprintf(el[nel].name, VW_NAME, "%s", a);
            el[nel++].n = n;
        } else if (sscanf(ln, "property list %63s %63s %63s", a, b, cc) == 3) {
            if (!nel || el[nel - 1].nprops == MAX_PROPS || type_of(a) == T_NONE || type_of(b) == T_NONE) {
                snprintf(msg, sizeof msg, "line %d: bad property list", line);
                goto out;
            }
            prop *pr = &el[nel - 1].props[el[nel - 1].nprops++];
            snprintf(pr->name, VW_NAME, "%s", cc);
            pr->count_type = type_of(a);
            pr->type = type_of(b);
        } else if (sscanf(ln, "property %63s %63s", a, d) == 2) {
            if (!nel || el[nel - 1].nprops == MAX_PROPS || type_of(a) == T_NONE) {
                snprintf(msg, sizeof msg, "line %d: bad property '%.100s'", line, ln);
                goto out;
            }
            prop *pr = &el[nel - 1].props[el[nel - 1].nprops++];
            snprintf(pr->name, VW_NAME, "%s", d);
            pr->type = type_of(a);
        } else if (!strcmp(ln, "end_header")) {
            body = p;
            break;
        }
        line++;
    }
    if (!body || binary < 0) {
        snprintf(msg, sizeof msg, "%s", !body ? "no end_header" : "no format line");
        goto out;
    }
    elem *ve = NULL, *fe = NULL;
    for (int i = 0; i < nel; i++) {
        if (!strcmp(el[i].name, "vertex"))
            ve = &el[i];
        if (!strcmp(el[i].name, "face") && el[i].n > 0)
            fe = &el[i];
    }
    if (!ve) {
        snprintf(msg, sizeof msg, "no 'vertex' element");
        goto out;
    }
    if (ve->n > 200000000ull || (fe && fe->n > 400000000ull)) {
        snprintf(msg, sizeof msg, "too many elements");
        goto out;
    }
    *is_mesh = fe != NULL;
    uint32_t nv = (uint32_t)ve->n;
    float *cols[MAX_PROPS] = {0};
    for (int k = 0; k < ve->nprops; k++)
        if (ve->props[k].count_type == T_NONE && !(cols[k] = malloc(sizeof(float) * (nv ? nv : 1)))) {
            snprintf(msg, sizeof msg, "out of memory");
            goto free_cols;
        }
    size_t tcap = fe ? (size_t)fe->n * 2 + 16 : 0, nt = 0;
    uint32_t *tri = fe ? malloc(sizeof(uint32_t) * 3 * tcap) : NULL;
    if (fe && !tri) {
        snprintf(msg, sizeof msg, "out of memory");
        goto free_cols;
    }
    const char *short_msg = "the file ends inside its data";
    for (int e = 0; e < nel; e++) {
        elem *E = &el[e];
        for (uint64_t r = 0; r < E->n; r++) {
            for (int k = 0; k < E->nprops; k++) {
                prop *pr = &E->props[k];
                double v;
                if (pr->count_type == T_NONE) {
                    if (binary) {
                        if ((size_t)(end - body) < type_size(pr->type))
                            goto truncated;
                        v = get_bin((unsigned char *)body, pr->type);
                        body += type_size(pr->type);
                    } else if (get_ascii(&body, end, &v))
                        goto truncated;
                    if (E == ve)
                        cols[k][r] = (float)v;
                    continue;
                }
                double cnt;
                if (binary) {
                    if ((size_t)(end - body) < type_size(pr->count_type))
                        goto truncated;
                    cnt = get_bin((unsigned char *)body, pr->count_type);
                    body += type_size(pr->count_type);
                } else if (get_ascii(&body, end, &cnt))
                    goto truncated;
                if (cnt < 0 || cnt > 1024) {
                    snprintf(msg, sizeof msg, "element %.60s %llu: a list of %g entries", E->name, (unsigned long long)r, cnt);
                    goto free_tri;
                }
                uint32_t idx[1024];
                for (int q = 0; q < (int)cnt; q++) {
                    if (binary) {
                        if ((size_t)(end - body) < type_size(pr->type))
                            goto truncated;
                        v = get_bin((unsigned char *)body, pr->type);
                        body += type_size(pr->type);
                    } else if (get_ascii(&body, end, &v))
                        goto truncated;
                    idx[q] = (uint32_t)v;
                    if (E == fe && (v < 0 || v >= nv)) {
                        snprintf(msg, sizeof msg, "face %llu: vertex index %g outside [0, %u)", (unsigned long long)r, v, nv);
                        goto free_tri;
                    }
                }
                if (E == fe && (!strcmp(pr->name, "vertex_indices") || !strcmp(pr->name, "vertex_index")))
                    for (int q = 1; q + 1 < (int)cnt; q++) { /* a fan */
                        if (nt == tcap) {
                            tcap *= 2;
                            uint32_t *t2 = realloc(tri, sizeof(uint32_t) * 3 * tcap);
                            if (!t2) {
                                snprintf(msg, sizeof msg, "out of memory");
                                goto free_tri;
                            }
                            tri = t2;
                        }
                        tri[3 * nt] = idx[0], tri[3 * nt + 1] = idx[q], tri[3 * nt + 2] = idx[q + 1];
                        nt++;
                    }
            }
        }
    }
    int ix = -1, iy = -1, iz = -1, inx = -1, iny = -1, inz = -1;
    for (int k = 0; k < ve->nprops; k++) {
        const char *n = ve->props[k].name;
        int *slot = !strcmp(n, "x") ? &ix : !strcmp(n, "y") ? &iy : !strcmp(n, "z") ? &iz : !strcmp(n, "nx") ? &inx
                  : !strcmp(n, "ny") ? &iny : !strcmp(n, "nz") ? &inz : NULL;
        if (slot && ve->props[k].count_type == T_NONE)
            *slot = k;
    }
    if (ix < 0 || iy < 0) {
        snprintf(msg, sizeof msg, "the vertices have no x and y");
        goto free_tri;
    }
    float *xyz = malloc(sizeof(float) * 3 * (nv ? nv : 1));
    if (!xyz) {
        snprintf(msg, sizeof msg, "out of memory");
        goto free_tri;
    }
    for (uint32_t i = 0; i < nv; i++) {
        xyz[3 * i] = cols[ix][i];
        xyz[3 * i + 1] = cols[iy][i];
        xyz[3 * i + 2] = iz >= 0 ? cols[iz][i] : 0.0f;
    }
    if (*is_mesh) {
        m->nv = nv;
        m->pos = xyz;
        m->nt = (uint32_t)nt;
        m->tri = tri;
        tri = NULL;
        if (inx >= 0 && iny >= 0 && inz >= 0 && (m->nrm = malloc(sizeof(float) * 3 * (nv ? nv : 1))))
            for (uint32_t i = 0; i < nv; i++)
                m->nrm[3 * i] = cols[inx][i], m->nrm[3 * i + 1] = cols[iny][i], m->nrm[3 * i + 2] = cols[inz][i];
        else
            vw_mesh_normals(m);
    } else {
        c->n = nv;
        c->x = xyz;
        for (int k = 0; k < ve->nprops; k++)
            if (cols[k] && k != ix && k != iy && k != iz) {
                vw_cloud_add_attr(c, ve->props[k].name, cols[k]);
                cols[k] = NULL;
            }
        vw_cloud_join_vectors(c);
    }
    rc = 0;
    goto free_tri;
truncated:
    snprintf(msg, sizeof msg, "%s", short_msg);
free_tri:
    free(tri);
free_cols:
    for (int k = 0; k < MAX_PROPS; k++)
        free(cols[k]);
out:
    free(buf);
    if (rc)
        fail(err, errlen, path, msg);
    return rc;
}
