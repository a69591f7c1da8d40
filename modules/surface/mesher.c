/* The meshers on the sparse grid: marching cubes (the table of cubes.c) by
 * default, or marching tetrahedra. Both put their vertices on grid edges,
 * welded by the edge's key, and triangulate the blocks in parallel.
 *
 * Marching tetrahedra: every cell is cut into the six
 * tetrahedra around its diagonal from corner 0 to corner 7 (Kuhn / Freudenthal:
 * the same cut in every cell, so neighbouring cells' tetrahedra share whole
 * faces). A point is inside when its value exceeds the iso value; inside a
 * tetrahedron that gives one triangle (one corner apart) or two (two and
 * two), with no ambiguous case, so the surface is a closed 2-manifold
 * wherever the field is below the iso value at the edge of the blocks.
 * Vertices lie on grid edges (the cell's 3 axes, 3 face diagonals and its
 * diagonal all go from a corner to one with more bits set) and are welded
 * by the key (lower point, direction). */
#include "surface.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct vmap {
    uint64_t *key;           /* key + 1, 0 = empty */
    uint32_t *vert;
    size_t cap;
} vmap;

static size_t hash64(uint64_t k)
{
    k ^= k >> 31;
    k *= 0x9e3779b97f4a7c15ULL;
    k ^= k >> 29;
    return (size_t)k;
}

static int vmap_grow(vmap *m, mem_meter *mm)
{
    size_t cap = m->cap ? 2 * m->cap : 4096;
    uint64_t *key = meter_alloc(mm, cap * sizeof *key, 1);
    uint32_t *vert = meter_alloc(mm, cap * sizeof *vert, 0);
    if (!key || !vert) {
        meter_free(mm, key, cap * sizeof *key);
        meter_free(mm, vert, cap * sizeof *vert);
        return FLOE_ERR_NOMEM;
    }
    for (size_t s = 0; s < m->cap; s++)
        if (m->key[s]) {
            size_t t = hash64(m->key[s]) & (cap - 1);
            while (key[t])
                t = (t + 1) & (cap - 1);
            key[t] = m->key[s];
            vert[t] = m->vert[s];
        }
    meter_free(mm, m->key, m->cap * sizeof *m->key);
    meter_free(mm, m->vert, m->cap * sizeof *m->vert);
    m->key = key;
    m->vert = vert;
    m->cap = cap;
    return FLOE_OK;
}

static int mesh_reserve(mesh *m, int verts)
{
    if (verts && m->nv == m->v_cap) {
        size_t cap = m->v_cap ? 2 * m->v_cap : 4096, o = m->v_cap * 3 * sizeof(float), b = cap * 3 * sizeof(float);
        float *v = meter_realloc(m->mem, m->v, o, b);
        if (!v)
            return FLOE_ERR_NOMEM;
        m->v = v;
        m->v_cap = cap;
    }
    if (!verts && m->nt == m->t_cap) {
        size_t cap = m->t_cap ? 2 * m->t_cap : 8192;
        uint32_t *t = meter_realloc(m->mem, m->tri, m->t_cap * 3 * sizeof *t, cap * 3 * sizeof *t);
        if (!t)
            return FLOE_ERR_NOMEM;
        m->tri = t;
        m->t_cap = cap;
    }
    return FLOE_OK;
}

void mesh_free(mesh *m)
{
    meter_free(m->mem, m->v, m->v_cap * 3 * sizeof(float));
    meter_free(m->mem, m->nrm, (size_t)m->nv * 3 * sizeof(float));
    meter_free(m->mem, m->tri, m->t_cap * 3 * sizeof(uint32_t));
    m->v = m->nrm = NULL;
    m->tri = NULL;
    m->nv = m->nt = 0;
    m->v_cap = m->t_cap = 0;
}

/* one cell being triangulated */
typedef struct cellx {
    const sgrid *g;
    int64_t p[3];            /* lowest corner */
    float f[8];              /* corner values, corner c at p + (c & 1, c >> 1 & 1, c >> 2 & 1) */
    float iso;
    vmap *map;
    mesh *out;
    uint64_t *vkey;          /* the key of each vertex of out, when not NULL */
    const mc_table *mc;      /* marching cubes; NULL: tetrahedra */
} cellx;

static void corner_offset(int c, int o[3])
{
    o[0] = c & 1;
    o[1] = c >> 1 & 1;
    o[2] = c >> 2 & 1;
}

/* the vertex on the edge from corner a to corner b (a's bits a subset of b's) */
static int edge_vertex(cellx *x, int a, int b, uint32_t *out)
{
    int oa[3];
    corner_offset(a, oa);
    uint64_t key = ((uint64_t)(x->p[0] + oa[0]) | (uint64_t)(x->p[1] + oa[1]) << 20 |
                    (uint64_t)(x->p[2] + oa[2]) << 40) << 3 | (uint64_t)(a ^ b);
    key += 1;
    vmap *m = x->map;
    if (2 * (size_t)(x->out->nv + 1) > m->cap && vmap_grow(m, x->out->mem))
        return FLOE_ERR_NOMEM;
    size_t s = hash64(key) & (m->cap - 1);
    for (; m->key[s]; s = (s + 1) & (m->cap - 1))
        if (m->key[s] == key) {
            *out = m->vert[s];
            return FLOE_OK;
        }
    if (mesh_reserve(x->out, 1))
        return FLOE_ERR_NOMEM;
    int ob[3];
    corner_offset(b, ob);
    float t = (x->iso - x->f[a]) / (x->f[b] - x->f[a]);
    float *v = &x->out->v[3 * (size_t)x->out->nv];
    for (int k = 0; k < 3; k++)
        v[k] = (float)(x->g->lo[k] + x->g->cell * ((double)(x->p[k] + oa[k]) + t * (ob[k] - oa[k])));
    m->key[s] = key;
    m->vert[s] = x->out->nv;
    if (x->vkey)
        x->vkey[x->out->nv] = key;
    *out = x->out->nv++;
    return FLOE_OK;
}

/* a triangle on the tetrahedron edges e[0..2] (pairs of corners), turned so
 * that it faces from the inside corners to the outside ones: decided on
 * the edges' midpoints in integers, so the orientation never depends on
 * rounding */
static int triangle(cellx *x, const int e[3][2], const int tet[4], const int in[4])
{
    int m[3][3], dir[3] = {0, 0, 0}, nin = in[0] + in[1] + in[2] + in[3];
    for (int i = 0; i < 3; i++) {
        int oa[3], ob[3];
        corner_offset(e[i][0], oa);
        corner_offset(e[i][1], ob);
        for (int k = 0; k < 3; k++)
            m[i][k] = oa[k] + ob[k];
    }
    for (int i = 0; i < 4; i++) {
        int o[3];
        corner_offset(tet[i], o);
        for (int k = 0; k < 3; k++)
            dir[k] += in[i] ? -(4 - nin) * o[k] : nin * o[k];
    }
    int a[3] = {m[1][0] - m[0][0], m[1][1] - m[0][1], m[1][2] - m[0][2]};
    int b[3] = {m[2][0] - m[0][0], m[2][1] - m[0][1], m[2][2] - m[0][2]};
    int n[3] = {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
    int flip = n[0] * dir[0] + n[1] * dir[1] + n[2] * dir[2] < 0;
    uint32_t v[3];
    for (int i = 0; i < 3; i++) {
        int lo = e[i][0], hi = e[i][1];
        if ((lo & hi) != lo) { /* order the edge from the subset corner */
            lo = e[i][1];
            hi = e[i][0];
        }
        if (edge_vertex(x, lo, hi, &v[i]))
            return FLOE_ERR_NOMEM;
    }
    if (mesh_reserve(x->out, 0))
        return FLOE_ERR_NOMEM;
    uint32_t *t = &x->out->tri[3 * (size_t)x->out->nt++];
    t[0] = v[0];
    t[1] = flip ? v[2] : v[1];
    t[2] = flip ? v[1] : v[2];
    return FLOE_OK;
}

static int tetrahedron(cellx *x, const int tet[4])
{
    int in[4], nin = 0;
    for (int i = 0; i < 4; i++)
        nin += in[i] = x->f[tet[i]] > x->iso;
    if (nin == 0 || nin == 4)
        return FLOE_OK;
    if (nin == 1 || nin == 3) { /* corner a apart from b, c, d */
        int a = 0;
        while ((in[a] != 0) == (nin == 3))
            a++;
        int o[3], k = 0;
        for (int i = 0; i < 4; i++)
            if (i != a)
                o[k++] = i;
        int e[3][2] = {{tet[a], tet[o[0]]}, {tet[a], tet[o[1]]}, {tet[a], tet[o[2]]}};
        return triangle(x, e, tet, in);
    }
    int p[2], q[2], np = 0, nq = 0; /* two inside (p), two outside (q): a quad */
    for (int i = 0; i < 4; i++) {
        if (in[i])
            p[np++] = tet[i];
        else
            q[nq++] = tet[i];
    }
    int e1[3][2] = {{p[0], q[0]}, {p[0], q[1]}, {p[1], q[1]}};
    int e2[3][2] = {{p[0], q[0]}, {p[1], q[1]}, {p[1], q[0]}};
    int rc = triangle(x, e1, tet, in);
    return rc ? rc : triangle(x, e2, tet, in);
}

/* the cell's triangles from the marching-cubes table */
static int cube(cellx *x, int pattern)
{
    const mc_table *t = x->mc;
    for (int i = 0; i < t->ntri[pattern]; i++) {
        uint32_t v[3];
        for (int k = 0; k < 3; k++) {
            const int *e = mc_edge[t->tri[pattern][i][k]];
            if (edge_vertex(x, e[0], e[1], &v[k]))
                return FLOE_ERR_NOMEM;
        }
        if (mesh_reserve(x->out, 0))
            return FLOE_ERR_NOMEM;
        memcpy(&x->out->tri[3 * (size_t)x->out->nt++], v, sizeof v);
    }
    return FLOE_OK;
}

static const int tets[6][4] = {{0, 1, 3, 7}, {0, 1, 5, 7}, {0, 2, 3, 7}, {0, 2, 6, 7}, {0, 4, 5, 7}, {0, 4, 6, 7}};

static void normalise(float *n)
{
    float l = sqrtf(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    if (l > 0)
        n[0] /= l, n[1] /= l, n[2] /= l;
    else
        n[0] = n[2] = 0, n[1] = 1; /* only degenerate triangles around it */
}

static void face_normal(const mesh *m, uint32_t t, float n[3])
{
    const uint32_t *i = &m->tri[3 * (size_t)t];
    const float *a = &m->v[3 * (size_t)i[0]], *b = &m->v[3 * (size_t)i[1]], *c = &m->v[3 * (size_t)i[2]];
    float u[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]}, w[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
    n[0] = u[1] * w[2] - u[2] * w[1], n[1] = u[2] * w[0] - u[0] * w[2], n[2] = u[0] * w[1] - u[1] * w[0];
}

/* the area-weighted vertex normals: each vertex sums the (unnormalised)
 * normals of its triangles in triangle order */
static void vertex_normals(mesh *m)
{
    memset(m->nrm, 0, (size_t)m->nv * 3 * sizeof *m->nrm);
    for (uint32_t t = 0; t < m->nt; t++) {
        float n[3];
        face_normal(m, t, n);
        for (int k = 0; k < 3; k++)
            for (int j = 0; j < 3; j++)
                m->nrm[3 * (size_t)m->tri[3 * (size_t)t + k] + j] += n[j];
    }
    for (uint32_t v = 0; v < m->nv; v++)
        normalise(&m->nrm[3 * (size_t)v]);
}

/* the same on all threads, the same sums in the same order: each vertex's
 * triangles listed (counted, placed, then sorted: the lists are short),
 * then each vertex sums its own; FLOE_ERR_NOMEM leaves nrm untouched */
static int vertex_normals_par(mesh *m)
{
    const size_t nv = m->nv, nt = m->nt, ss = (nv + 1) * sizeof(uint32_t), sl = 3 * nt * sizeof(uint32_t),
                 sf = 3 * nt * sizeof(float);
    uint32_t *start = meter_alloc(m->mem, ss, 1), *pos = meter_alloc(m->mem, ss, 0),
             *list = meter_alloc(m->mem, sl, 0);
    float *fn = meter_alloc(m->mem, sf, 0);
    int rc = start && pos && list && fn ? FLOE_OK : FLOE_ERR_NOMEM;
    if (!rc) {
        const long lt = (long)nt, lv = (long)nv;
#pragma omp parallel for
        for (long t = 0; t < lt; t++) {
            face_normal(m, (uint32_t)t, &fn[3 * (size_t)t]);
            for (int k = 0; k < 3; k++) {
#pragma omp atomic
                start[m->tri[3 * (size_t)t + k] + 1]++;
            }
        }
        for (size_t v = 0; v < nv; v++)
            start[v + 1] += start[v];
        memcpy(pos, start, ss);
#pragma omp parallel for
        for (long t = 0; t < lt; t++)
            for (int k = 0; k < 3; k++) {
                uint32_t at;
#pragma omp atomic capture
                at = pos[m->tri[3 * (size_t)t + k]]++;
                list[at] = (uint32_t)t;
            }
#pragma omp parallel for schedule(dynamic, 4096)
        for (long v = 0; v < lv; v++) {
            uint32_t *l = &list[start[v]];
            const uint32_t len = start[v + 1] - start[v];
            for (uint32_t i = 1; i < len; i++) /* insertion sort: triangle order */
                for (uint32_t j = i; j > 0 && l[j - 1] > l[j]; j--) {
                    uint32_t x = l[j];
                    l[j] = l[j - 1];
                    l[j - 1] = x;
                }
            float n[3] = {0, 0, 0};
            for (uint32_t i = 0; i < len; i++)
                for (int j = 0; j < 3; j++)
                    n[j] += fn[3 * (size_t)l[i] + j];
            normalise(n);
            memcpy(&m->nrm[3 * (size_t)v], n, sizeof n);
        }
    }
    meter_free(m->mem, start, ss);
    meter_free(m->mem, pos, ss);
    meter_free(m->mem, list, sl);
    meter_free(m->mem, fn, sf);
    return rc;
}

/* values of the 2x2x2 blocks from block b upwards (corners of b's cells) */
static float value_at(const sgrid *g, const int32_t nb[8], int lx, int ly, int lz)
{
    int bi = (lx >> BLOCK_LOG) | (ly >> BLOCK_LOG) << 1 | (lz >> BLOCK_LOG) << 2;
    if (nb[bi] < 0)
        return 0.0f;
    return g->val[(size_t)nb[bi] * BLOCK_PTS + (size_t)(lx & (BLOCK - 1)) +
                  BLOCK * ((size_t)(ly & (BLOCK - 1)) + BLOCK * (size_t)(lz & (BLOCK - 1)))];
}

/* one block's triangles on its own vertices (numbered in order of first
 * use), with the vertices' keys for the merge */
typedef struct block_mesh {
    float *v;
    uint64_t *key;
    uint32_t *tri;
    uint32_t nv, nt;
} block_mesh;

/* the most vertices one block can make: the 7 edges of each of the 9^3
 * lower points its cells reach */
#define BLOCK_VERTS (7 * (BLOCK + 1) * (BLOCK + 1) * (BLOCK + 1))
#define LOCAL_CAP 16384 /* hash slots, above 2 BLOCK_VERTS: never grows */

static int block_triangulate(const sgrid *g, float iso, int32_t b, cellx *x, block_mesh *bm)
{
    const int32_t *bc = &g->coord[3 * b];
    int32_t nb[8];
    int rc = FLOE_OK;
    x->out->nv = x->out->nt = 0;
    for (int c = 0; c < 8; c++)
        nb[c] = sgrid_find(g, bc[0] + (c & 1), bc[1] + (c >> 1 & 1), bc[2] + (c >> 2 & 1));
    for (int lz = 0; lz < BLOCK && !rc; lz++)
        for (int ly = 0; ly < BLOCK && !rc; ly++)
            for (int lx = 0; lx < BLOCK && !rc; lx++) {
                int pattern = 0;
                for (int c = 0; c < 8; c++) {
                    x->f[c] = value_at(g, nb, lx + (c & 1), ly + (c >> 1 & 1), lz + (c >> 2 & 1));
                    pattern |= (x->f[c] > iso) << c;
                }
                if (pattern == 0 || pattern == 255)
                    continue;
                x->p[0] = (int64_t)bc[0] * BLOCK + lx;
                x->p[1] = (int64_t)bc[1] * BLOCK + ly;
                x->p[2] = (int64_t)bc[2] * BLOCK + lz;
                if (x->mc)
                    rc = cube(x, pattern);
                else
                    for (int t = 0; t < 6 && !rc; t++)
                        rc = tetrahedron(x, tets[t]);
            }
    /* empty the block's hash slots for the next block */
    vmap *m = x->map;
    for (uint32_t i = 0; i < x->out->nv; i++) {
        size_t s = hash64(x->vkey[i]) & (m->cap - 1);
        while (m->key[s] != x->vkey[i])
            s = (s + 1) & (m->cap - 1);
        m->key[s] = 0;
    }
    /* linear probing needs no hole left inside a cluster: all were emptied */
    if (rc || x->out->nt == 0)
        return rc;
    const mesh *o = x->out;
    bm->v = malloc((size_t)o->nv * 3 * sizeof *bm->v);
    bm->key = malloc((size_t)o->nv * sizeof *bm->key);
    bm->tri = malloc((size_t)o->nt * 3 * sizeof *bm->tri);
    if (!bm->v || !bm->key || !bm->tri)
        return FLOE_ERR_NOMEM;
    memcpy(bm->v, o->v, (size_t)o->nv * 3 * sizeof *bm->v);
    memcpy(bm->key, x->vkey, (size_t)o->nv * sizeof *bm->key);
    memcpy(bm->tri, o->tri, (size_t)o->nt * 3 * sizeof *bm->tri);
    bm->nv = o->nv;
    bm->nt = o->nt;
    return FLOE_OK;
}

/* the blocks' pieces in block order (the blocks c0.. of one chunk, after
 * those of the chunks before): a vertex takes its number where it is
 * first used, as a single pass over the blocks would number it, so the
 * mesh is the same on any number of threads (and its position is the same
 * whichever block computed it: the edge's two grid values decide it) */
static int merge_blocks(const block_mesh *bm, int32_t nblocks, vmap *map, mesh *out, uint32_t *remap)
{
    for (int32_t b = 0; b < nblocks; b++) {
        const block_mesh *p = &bm[b];
        for (uint32_t i = 0; i < p->nv; i++) {
            if (2 * (size_t)(out->nv + 1) > map->cap && vmap_grow(map, out->mem))
                return FLOE_ERR_NOMEM;
            size_t s = hash64(p->key[i]) & (map->cap - 1);
            while (map->key[s] && map->key[s] != p->key[i])
                s = (s + 1) & (map->cap - 1);
            if (map->key[s]) {
                remap[i] = map->vert[s];
                continue;
            }
            if (mesh_reserve(out, 1))
                return FLOE_ERR_NOMEM;
            memcpy(&out->v[3 * (size_t)out->nv], &p->v[3 * (size_t)i], 3 * sizeof *out->v);
            map->key[s] = p->key[i];
            map->vert[s] = out->nv;
            remap[i] = out->nv++;
        }
        for (uint32_t t = 0; t < p->nt; t++) {
            if (mesh_reserve(out, 0))
                return FLOE_ERR_NOMEM;
            for (int k = 0; k < 3; k++)
                out->tri[3 * (size_t)out->nt + k] = remap[p->tri[3 * (size_t)t + k]];
            out->nt++;
        }
    }
    return FLOE_OK;
}

/* blocks triangulated before their pieces are merged and freed: bounds
 * the pieces held at once */
#define MERGE_CHUNK 256

static void free_pieces(block_mesh *bm, int32_t n, mem_meter *m, size_t bytes)
{
    for (int32_t b = 0; b < n; b++) {
        free(bm[b].v);
        free(bm[b].key);
        free(bm[b].tri);
    }
    memset(bm, 0, (size_t)n * sizeof *bm);
    m->now -= bytes;
}

const mc_table *mc_table_get(void)
{
    static mc_table table; /* the same every time: built under a lock, read after */
    static int table_ready;
    int ok;
#pragma omp critical(surface_mc_table)
    {
        if (!table_ready)
            table_ready = mc_table_build(&table) == 0 ? 1 : -1;
        ok = table_ready;
    }
    return ok > 0 ? &table : NULL;
}

int mesh_normals(mesh *out)
{
    out->nrm = meter_alloc(out->mem, (size_t)out->nv * 3 * sizeof *out->nrm, 0);
    if (!out->nrm && out->nv)
        return FLOE_ERR_NOMEM;
    if (out->nt < 65536 || vertex_normals_par(out))
        vertex_normals(out);
    return FLOE_OK;
}

int mesh_extract(const sgrid *g, float iso, mesher_kind kind, mesh *out)
{
    const mc_table *mc = NULL;
    if (kind == MESHER_CUBES && !(mc = mc_table_get()))
        return FLOE_ERR;
    const int32_t nblocks = g->nblocks;
    block_mesh *bm = calloc(MERGE_CHUNK, sizeof *bm);
    uint32_t *remap = malloc(BLOCK_VERTS * sizeof *remap);
    vmap map = {0};
    int rc = bm && remap ? FLOE_OK : FLOE_ERR_NOMEM;
    if (!rc) {
#pragma omp parallel
        {
            /* each thread: a block-sized hash map and mesh, reused block after block */
            mem_meter tm = {0, 0};
            vmap lmap = {0};
            mesh lmesh = {.mem = &tm};
            uint64_t *vkey = malloc(BLOCK_VERTS * sizeof *vkey);
            lmap.key = calloc(LOCAL_CAP, sizeof *lmap.key);
            lmap.vert = malloc(LOCAL_CAP * sizeof *lmap.vert);
            lmap.cap = LOCAL_CAP;
            int trc = vkey && lmap.key && lmap.vert ? FLOE_OK : FLOE_ERR_NOMEM;
            cellx x = {.g = g, .iso = iso, .map = &lmap, .out = &lmesh, .vkey = vkey, .mc = mc};
            for (int32_t c0 = 0; c0 < nblocks; c0 += MERGE_CHUNK) {
                const int32_t c1 = nblocks - c0 > MERGE_CHUNK ? c0 + MERGE_CHUNK : nblocks;
#pragma omp for schedule(dynamic, 8)
                for (int32_t b = c0; b < c1; b++)
                    if (!trc && !rc)
                        trc = block_triangulate(g, iso, b, &x, &bm[b - c0]);
#pragma omp critical(surface_mesh_rc)
                rc = rc ? rc : trc;
#pragma omp barrier
#pragma omp single
                {
                    /* the pieces count towards the peak while they are held */
                    size_t bytes = 0;
                    for (int32_t b = 0; b < c1 - c0; b++)
                        bytes += (size_t)bm[b].nv * (3 * sizeof(float) + sizeof(uint64_t)) +
                                 (size_t)bm[b].nt * 3 * sizeof(uint32_t);
                    out->mem->now += bytes;
                    out->mem->peak = out->mem->now > out->mem->peak ? out->mem->now : out->mem->peak;
                    if (!rc)
                        rc = merge_blocks(bm, c1 - c0, &map, out, remap);
                    free_pieces(bm, c1 - c0, out->mem, bytes);
                }
            }
            free(vkey);
            free(lmap.key);
            free(lmap.vert);
            free(lmesh.v);
            free(lmesh.tri);
        }
    }
    free(remap);
    free(bm);
    meter_free(out->mem, map.key, map.cap * sizeof *map.key);
    meter_free(out->mem, map.vert, map.cap * sizeof *map.vert);
    return rc ? rc : mesh_normals(out);
}
