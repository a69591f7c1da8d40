/* floe view: particle sets, meshes and frames in memory. */
#include "vw.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void vw_cloud_free(vw_cloud *c)
{
    free(c->x);
    for (int i = 0; i < c->nattr; i++)
        free(c->attr[i]);
    memset(c, 0, sizeof *c);
}

void vw_mesh_free(vw_mesh *m)
{
    free(m->pos);
    free(m->nrm);
    free(m->tri);
    memset(m, 0, sizeof *m);
}

void vw_frame_free(vw_frame *f)
{
    for (int i = 0; i < f->nclouds; i++)
        vw_cloud_free(&f->clouds[i]);
    for (int i = 0; i < f->nmeshes; i++)
        vw_mesh_free(&f->meshes[i]);
    memset(f, 0, sizeof *f);
}

int vw_cloud_add_attr(vw_cloud *c, const char *name, float *data)
{
    if (c->nattr >= VW_MAX_ATTRS) {
        free(data);
        return -1;
    }
    snprintf(c->attr_name[c->nattr], VW_NAME, "%s", name);
    c->attr[c->nattr++] = data;
    return 0;
}

static int find_attr(const vw_cloud *c, const char *name)
{
    for (int i = 0; i < c->nattr; i++)
        if (!strcmp(c->attr_name[i], name))
            return i;
    return -1;
}

/* NAME_x, NAME_y, NAME_z -> |NAME| ("speed" for v); the components go. */
void vw_cloud_join_vectors(vw_cloud *c)
{
    for (int i = 0; i < c->nattr; i++) {
        size_t len = strlen(c->attr_name[i]);
        if (len < 3 || strcmp(c->attr_name[i] + len - 2, "_x") != 0)
            continue;
        char base[VW_NAME], ny[VW_NAME + 2], nz[VW_NAME + 2];
        snprintf(base, sizeof base, "%.*s", (int)(len - 2), c->attr_name[i]);
        snprintf(ny, sizeof ny, "%s_y", base);
        snprintf(nz, sizeof nz, "%s_z", base);
        int iy = find_attr(c, ny), iz = find_attr(c, nz);
        if (iy < 0 || iz < 0)
            continue;
        float *vx = c->attr[i], *vy = c->attr[iy], *vz = c->attr[iz];
        for (uint32_t k = 0; k < c->n; k++)
            vx[k] = sqrtf(vx[k] * vx[k] + vy[k] * vy[k] + vz[k] * vz[k]);
        if (!strcmp(base, "v"))
            snprintf(c->attr_name[i], VW_NAME, "speed");
        else
            snprintf(c->attr_name[i], VW_NAME, "|%.*s|", VW_NAME - 3, base);
        free(vy);
        free(vz);
        /* drop the two components (higher index first) */
        int hi = iy > iz ? iy : iz, lo = iy > iz ? iz : iy;
        for (int k = hi; k < c->nattr - 1; k++) {
            memcpy(c->attr_name[k], c->attr_name[k + 1], VW_NAME);
            c->attr[k] = c->attr[k + 1];
        }
        c->nattr--;
        for (int k = lo; k < c->nattr - 1; k++) {
            memcpy(c->attr_name[k], c->attr_name[k + 1], VW_NAME);
            c->attr[k] = c->attr[k + 1];
        }
        c->nattr--;
        i = -1; /* names moved: look again */
    }
}

int vw_frame_range(const vw_frame *f, const char *name, float *lo, float *hi)
{
    int found = 0;
    float a = INFINITY, b = -INFINITY;
    for (int i = 0; i < f->nclouds; i++) {
        const vw_cloud *c = &f->clouds[i];
        int k = c->boundary ? -1 : find_attr(c, name);
        if (k < 0)
            continue;
        for (uint32_t j = 0; j < c->n; j++) {
            float v = c->attr[k][j];
            if (isfinite(v)) {
                a = v < a ? v : a;
                b = v > b ? v : b;
                found = 1;
            }
        }
    }
    if (found) {
        *lo = a;
        *hi = b;
    }
    return found;
}

int vw_frame_bounds(const vw_frame *f, float lo[3], float hi[3])
{
    int any = 0;
    for (int k = 0; k < 3; k++)
        lo[k] = INFINITY, hi[k] = -INFINITY;
    for (int i = 0; i < f->nclouds; i++)
        for (uint32_t j = 0; j < f->clouds[i].n; j++)
            for (int k = 0; k < 3; k++) {
                float v = f->clouds[i].x[3 * j + k];
                if (isfinite(v)) {
                    lo[k] = v < lo[k] ? v : lo[k];
                    hi[k] = v > hi[k] ? v : hi[k];
                    any = 1;
                }
            }
    for (int i = 0; i < f->nmeshes; i++)
        for (uint32_t j = 0; j < f->meshes[i].nv; j++)
            for (int k = 0; k < 3; k++) {
                float v = f->meshes[i].pos[3 * j + k];
                if (isfinite(v)) {
                    lo[k] = v < lo[k] ? v : lo[k];
                    hi[k] = v > hi[k] ? v : hi[k];
                    any = 1;
                }
            }
    return any;
}
