/* The scalar field the surface is the iso level of: the colour field
 * phi(x) = sum_j V_j det(G_j) P(|G_j (x - c_j)|), P the cubic spline of unit
 * support. Isotropic kernels: c_j = x_j, G_j = I / H. Anisotropic (Yu &
 * Turk 2013, <floe/anisotropy.h>): c_j the Laplacian-smoothed centre and G_j
 * from the weighted covariance of the neighbourhood. */
#include "surface.h"

#include <floe/anisotropy.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* half-extents of the support ellipsoid |G u| <= 1 along the axes: the norms
 * of the rows of G^-1 */
static void support_box(kern *k)
{
    const float *G = k->G;
    double a[9] = {G[4] * G[8] - G[5] * G[7], G[2] * G[7] - G[1] * G[8], G[1] * G[5] - G[2] * G[4],
                   G[5] * G[6] - G[3] * G[8], G[0] * G[8] - G[2] * G[6], G[2] * G[3] - G[0] * G[5],
                   G[3] * G[7] - G[4] * G[6], G[1] * G[6] - G[0] * G[7], G[0] * G[4] - G[1] * G[3]};
    double det = G[0] * a[0] + G[1] * a[3] + G[2] * a[6];
    for (int r = 0; r < 3; r++)
        k->ext[r] = (float)(sqrt(a[3 * r] * a[3 * r] + a[3 * r + 1] * a[3 * r + 1] + a[3 * r + 2] * a[3 * r + 2]) /
                            fabs(det));
}

void kerns_isotropic(kern *k, const float *x, uint32_t n, float H)
{
    for (uint32_t i = 0; i < n; i++) {
        memcpy(k[i].c, &x[3 * i], sizeof k[i].c);
        memset(k[i].G, 0, sizeof k[i].G);
        k[i].G[0] = k[i].G[4] = k[i].G[8] = 1.0f / H;
        k[i].ext[0] = k[i].ext[1] = k[i].ext[2] = H;
    }
}

/* ---- the particles' neighbourhoods: particles sorted by cell -------------- */

/* Cells of a quarter of the neighbourhood radius (CELL_DIV cells per
 * radius), keyed x fastest, so the cells of one (dy, dz) row are one run of
 * the sorted entries, read from a sorted copy of the positions. Each row
 * reads only the x cells its slice of the radius sphere reaches, and rows
 * the sphere misses are skipped: about half the candidates are neighbours,
 * against 27% over the whole 5^3 block of half-radius cells. */
#define CELL_DIV 2
typedef struct cell_sort {
    uint64_t *key;           /* sorted cell keys */
    uint32_t *idx;           /* particle of each entry */
    float *xs;               /* positions in entry order */
    double lo[3], inv, h;
    uint32_t n;
} cell_sort;

static uint64_t cell_key(int64_t cx, int64_t cy, int64_t cz)
{
    return (uint64_t)cx | (uint64_t)cy << 21 | (uint64_t)cz << 42;
}

static int cmp_entry(const void *a, const void *b) /* by cell, then by particle */
{
    const uint64_t *x = a, *y = b;
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return (x[1] > y[1]) - (x[1] < y[1]);
}

static int cells_build(cell_sort *cs, const float *x, uint32_t n, double r, mem_meter *m)
{
    const double h = r / CELL_DIV;
    cs->n = n;
    cs->h = h;
    cs->inv = 1.0 / h;
    for (int k = 0; k < 3; k++)
        cs->lo[k] = INFINITY;
    for (uint32_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++)
            cs->lo[k] = fmin(cs->lo[k], x[3 * i + k] - (CELL_DIV + 1) * h);
    uint64_t *pair = meter_alloc(m, (size_t)n * 2 * sizeof *pair, 0);
    cs->key = meter_alloc(m, (size_t)n * sizeof *cs->key, 0);
    cs->idx = meter_alloc(m, (size_t)n * sizeof *cs->idx, 0);
    cs->xs = meter_alloc(m, (size_t)n * 3 * sizeof *cs->xs, 0);
    if (!pair || !cs->key || !cs->idx || !cs->xs) {
        meter_free(m, pair, (size_t)n * 2 * sizeof *pair);
        return FLOE_ERR_NOMEM;
    }
    for (uint32_t i = 0; i < n; i++) {
        int64_t c[3];
        for (int k = 0; k < 3; k++)
            c[k] = (int64_t)floor((x[3 * i + k] - cs->lo[k]) * cs->inv) & 0x1fffff;
        pair[2 * i] = cell_key(c[0], c[1], c[2]);
        pair[2 * i + 1] = i;
    }
    qsort(pair, n, 2 * sizeof *pair, cmp_entry);
    for (uint32_t e = 0; e < n; e++) {
        cs->key[e] = pair[2 * e];
        cs->idx[e] = (uint32_t)pair[2 * e + 1];
        memcpy(&cs->xs[3 * (size_t)e], &x[3 * (size_t)cs->idx[e]], 3 * sizeof *x);
    }
    meter_free(m, pair, (size_t)n * 2 * sizeof *pair);
    return FLOE_OK;
}

static void cells_free(cell_sort *cs, mem_meter *m)
{
    meter_free(m, cs->key, (size_t)cs->n * sizeof *cs->key);
    meter_free(m, cs->idx, (size_t)cs->n * sizeof *cs->idx);
    meter_free(m, cs->xs, (size_t)cs->n * 3 * sizeof *cs->xs);
}

/* first entry at or after a with key >= k: the rows of one particle come in
 * increasing key order, so a gallop from the previous row's start */
static uint32_t lower_bound_from(const cell_sort *cs, uint32_t a, uint64_t k)
{
    uint32_t step = 1, b = a;
    while (b < cs->n && cs->key[b] < k) {
        a = b + 1;
        b = a + step - 1 < cs->n ? a + step - 1 : cs->n;
        step *= 2;
    }
    while (a < b) {
        uint32_t mid = a + (b - a) / 2;
        if (cs->key[mid] < k)
            a = mid + 1;
        else
            b = mid;
    }
    return a;
}

/* distance from v to the cell interval [c h, (c + 1) h) of one axis */
static double axis_gap(double v, int64_t c, double h)
{
    double a = (double)c * h, b = a + h;
    return v < a ? a - v : v > b ? v - b : 0.0;
}

/* weighted mean (and, when cov is not NULL, covariance) of the
 * neighbourhood of the particle of entry e; returns its neighbour count */
static int neighbourhood(const cell_sort *cs, uint32_t e, double r, double mean[3], double cov[6])
{
    const float r2 = (float)(r * r), inv_r = (float)(1.0 / r);
    const float *xi = &cs->xs[3 * (size_t)e];
    const double h = cs->h, rr = r * r * (1.0 + 1e-5); /* margin over the float test */
    double u[3];
    int64_t c[3];
    for (int k = 0; k < 3; k++) {
        u[k] = (double)xi[k] - cs->lo[k];
        c[k] = (int64_t)floor(u[k] * cs->inv);
    }
    double sw = 0, s1[3] = {0, 0, 0}, s2[6] = {0, 0, 0, 0, 0, 0};
    int count = 0;
    uint32_t from = 0;
    for (int dz = -CELL_DIV; dz <= CELL_DIV; dz++) {
        const double gz = axis_gap(u[2], c[2] + dz, h);
        for (int dy = -CELL_DIV; dy <= CELL_DIV; dy++) {
            const double gy = axis_gap(u[1], c[1] + dy, h), left = rr - gz * gz - gy * gy;
            if (left <= 0)
                continue;
            const double rx = sqrt(left) + 1e-6 * r;
            int64_t x0 = (int64_t)floor((u[0] - rx) * cs->inv), x1 = (int64_t)floor((u[0] + rx) * cs->inv);
            x0 = x0 < c[0] - CELL_DIV ? c[0] - CELL_DIV : x0;
            x1 = x1 > c[0] + CELL_DIV ? c[0] + CELL_DIV : x1;
            int64_t cy = c[1] + dy, cz = c[2] + dz;
            uint64_t k0 = cell_key(x0, cy, cz), k1 = cell_key(x1, cy, cz);
            uint32_t f = from = lower_bound_from(cs, from, k0);
            for (; f < cs->n && cs->key[f] <= k1; f++) {
                const float *xj = &cs->xs[3 * (size_t)f];
                float d[3] = {xj[0] - xi[0], xj[1] - xi[1], xj[2] - xi[2]};
                float dd = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
                if (dd >= r2)
                    continue;
                float q = sqrtf(dd) * inv_r, w = 1.0f - q * q * q; /* floe_aniso_weight */
                count += f != e;
                sw += w;
                /* moments about x_i: cancels the large coordinates */
                for (int k = 0; k < 3; k++)
                    s1[k] += w * d[k];
                if (cov) {
                    s2[0] += w * d[0] * d[0], s2[1] += w * d[0] * d[1], s2[2] += w * d[0] * d[2];
                    s2[3] += w * d[1] * d[1], s2[4] += w * d[1] * d[2], s2[5] += w * d[2] * d[2];
                }
            }
        }
    }
    double m[3] = {s1[0] / sw, s1[1] / sw, s1[2] / sw};
    for (int k = 0; k < 3; k++)
        mean[k] = xi[k] + m[k];
    if (cov) {
        cov[0] = s2[0] / sw - m[0] * m[0], cov[1] = s2[1] / sw - m[0] * m[1], cov[2] = s2[2] / sw - m[0] * m[2];
        cov[3] = s2[3] / sw - m[1] * m[1], cov[4] = s2[4] / sw - m[1] * m[2], cov[5] = s2[5] / sw - m[2] * m[2];
    }
    return count;
}

/* Taubin's second step (1995, "A signal processing approach to fair surface
 * design"): c <- c + mu (c^w - c) with mu = -lambda / (1 - 0.1 lambda). The
 * smoothing step alone pulls the outer layers inward (their neighbourhood
 * is one-sided), which shrinks a sphere of radius 20 spacings by 4-7% in
 * volume; this step pushes them back by about as much while the noise the
 * first step removed stays removed. */
static int inflate(kern *k, uint32_t n, const aniso_opts *o, mem_meter *m)
{
    size_t bytes = (size_t)n * 3 * sizeof(float);
    float *c = meter_alloc(m, bytes, 0);
    cell_sort cs;
    if (!c)
        return FLOE_ERR_NOMEM;
    for (uint32_t i = 0; i < n; i++)
        memcpy(&c[3 * (size_t)i], k[i].c, sizeof k[i].c);
    if (cells_build(&cs, c, n, o->radius, m)) {
        meter_free(m, c, bytes);
        return FLOE_ERR_NOMEM;
    }
    const double mu = -o->lambda / (1.0 - 0.1 * o->lambda);
#pragma omp parallel for schedule(dynamic, 256)
    for (uint32_t e = 0; e < n; e++) {
        double mean[3];
        uint32_t i = cs.idx[e];
        neighbourhood(&cs, e, o->radius, mean, NULL);
        for (int d = 0; d < 3; d++)
            k[i].c[d] = (float)(c[3 * (size_t)i + d] + mu * (mean[d] - c[3 * (size_t)i + d]));
    }
    cells_free(&cs, m);
    meter_free(m, c, bytes);
    return FLOE_OK;
}

int kerns_anisotropic(kern *k, const float *x, uint32_t n, const aniso_opts *o, mem_meter *m, uint32_t *n_stretched)
{
    cell_sort cs;
    if (n == 0) {
        *n_stretched = 0;
        return FLOE_OK;
    }
    if (cells_build(&cs, x, n, o->radius, m))
        return FLOE_ERR_NOMEM;
    const floe_aniso_def ad = {o->H, o->kr, o->n_min};
    uint32_t stretched = 0;
#pragma omp parallel for schedule(dynamic, 256) reduction(+ : stretched)
    for (uint32_t e = 0; e < n; e++) {
        double mean[3], cov[6], G[9];
        uint32_t i = cs.idx[e];
        int cnt = neighbourhood(&cs, e, o->radius, mean, cov);
        for (int d = 0; d < 3; d++)
            k[i].c[d] = (float)((1.0 - o->lambda) * x[3 * i + d] + o->lambda * mean[d]);
        double ax = floe_aniso_matrix(&ad, cov, cnt, G);
        stretched += ax > 1.0 + 1e-6;
        for (int d = 0; d < 9; d++)
            k[i].G[d] = (float)G[d];
        support_box(&k[i]);
    }
    cells_free(&cs, m);
    *n_stretched = stretched;
    return o->lambda > 0 ? inflate(k, n, o, m) : FLOE_OK;
}

/* ---- the splat --------------------------------------------------------------- */

#define SPLINE_SIGMA 2.54647908947f /* 8 / pi, the cubic spline's normalisation at support 1 */

static float spline_unit(float q) /* cubic spline of support 1 without its 8 / pi */
{
    if (q <= 0.5f)
        return 6.0f * (q * q * q - q * q) + 1.0f;
    float t = 1.0f - q;
    return q < 1.0f ? 2.0f * t * t * t : 0.0f;
}

static void point_box(const sgrid *g, const kern *k, int64_t p0[3], int64_t p1[3], int margin)
{
    for (int d = 0; d < 3; d++) {
        p0[d] = (int64_t)ceil((k->c[d] - k->ext[d] - g->lo[d]) / g->cell) - margin;
        p1[d] = (int64_t)floor((k->c[d] + k->ext[d] - g->lo[d]) / g->cell) + margin;
    }
}

/* the kernel's contribution to the points of block blk (coordinates bc),
 * in float, operation by operation as kernels/surface/splat.cl computes it
 * (no contraction on either side: c_std=c11 here, FP_CONTRACT OFF there),
 * so the device's grid is the host's */
static void splat_block(sgrid *g, const kern *k, int32_t blk, const int32_t bc[3])
{
    const float *G = k->G;
    const float det = G[0] * (G[4] * G[8] - G[5] * G[7]) - G[1] * (G[3] * G[8] - G[5] * G[6]) +
                      G[2] * (G[3] * G[7] - G[4] * G[6]);
    const float amp = k->V * fabsf(det) * SPLINE_SIGMA;
    int64_t p0[3], p1[3];
    point_box(g, k, p0, p1, 0);
    for (int d = 0; d < 3; d++) {
        int64_t b0 = (int64_t)bc[d] * BLOCK, b1 = b0 + BLOCK - 1;
        p0[d] = p0[d] < b0 ? b0 : p0[d];
        p1[d] = p1[d] > b1 ? b1 : p1[d];
    }
    float *val = &g->val[(size_t)blk * BLOCK_PTS];
    const float lo0 = (float)g->lo[0], lo1 = (float)g->lo[1], lo2 = (float)g->lo[2], cell = (float)g->cell;
    for (int64_t pz = p0[2]; pz <= p1[2]; pz++) {
        const float dz = (lo2 + (float)pz * cell) - k->c[2];
        for (int64_t py = p0[1]; py <= p1[1]; py++) {
            const float dy = (lo1 + (float)py * cell) - k->c[1];
            float *row = &val[BLOCK * ((size_t)(py & (BLOCK - 1)) + BLOCK * (size_t)(pz & (BLOCK - 1)))];
            for (int64_t px = p0[0]; px <= p1[0]; px++) {
                const float dx = (lo0 + (float)px * cell) - k->c[0];
                const float a = G[0] * dx + G[1] * dy + G[2] * dz;
                const float b = G[3] * dx + G[4] * dy + G[5] * dz;
                const float c = G[6] * dx + G[7] * dy + G[8] * dz;
                const float q2 = a * a + b * b + c * c;
                if (q2 < 1.0f)
                    row[px & (BLOCK - 1)] += amp * spline_unit(sqrtf(q2));
            }
        }
    }
}

/* BODY for every existing block blk_ of the kernel kk's support box */
#define FOR_BLOCKS_OF(g, kk, BODY)                                                                \
    do {                                                                                          \
        int64_t p0_[3], p1_[3];                                                                   \
        point_box((g), (kk), p0_, p1_, 0);                                                        \
        for (int32_t bz_ = (int32_t)(p0_[2] >> BLOCK_LOG); bz_ <= (int32_t)(p1_[2] >> BLOCK_LOG); bz_++) \
            for (int32_t by_ = (int32_t)(p0_[1] >> BLOCK_LOG); by_ <= (int32_t)(p1_[1] >> BLOCK_LOG); by_++) \
                for (int32_t bx_ = (int32_t)(p0_[0] >> BLOCK_LOG); bx_ <= (int32_t)(p1_[0] >> BLOCK_LOG); bx_++) { \
                    int32_t blk_ = sgrid_find((g), bx_, by_, bz_);                                \
                    if (blk_ >= 0) {                                                              \
                        BODY;                                                                     \
                    }                                                                             \
                }                                                                                 \
    } while (0)

int splat_lists_build(sgrid *g, const kern *k, uint32_t n, splat_lists *sl)
{
    memset(sl, 0, sizeof *sl);
    /* one point of margin around every support: a point of value > 0 has
     * all its neighbours in existing blocks, so every cell the iso surface
     * crosses has its lowest corner in a block (tets.c walks those) */
    for (uint32_t i = 0; i < n; i++) {
        int64_t p0[3], p1[3];
        point_box(g, &k[i], p0, p1, 1);
        int rc = sgrid_touch_box(g, p0, p1);
        if (rc)
            return rc;
    }
    int rc = sgrid_alloc_values(g);
    if (rc)
        return rc;
    /* the kernels of each block, in kernel order (so every point sums in
     * the same order on any number of threads) */
    const size_t nb = (size_t)g->nblocks;
    sl->sb = (nb + 1) * sizeof(uint32_t);
    uint32_t *start = sl->start = meter_alloc(g->mem, sl->sb, 1);
    if (!start)
        return FLOE_ERR_NOMEM;
    for (uint32_t i = 0; i < n; i++)
        FOR_BLOCKS_OF(g, &k[i], start[blk_ + 1]++);
    for (size_t b = 0; b < nb; b++)
        start[b + 1] += start[b];
    sl->lb = (size_t)start[nb] * sizeof(uint32_t);
    uint32_t *list = sl->list = meter_alloc(g->mem, sl->lb, 0), *fill = meter_alloc(g->mem, sl->sb, 0);
    if (!list || !fill) {
        meter_free(g->mem, fill, sl->sb);
        return FLOE_ERR_NOMEM;
    }
    memcpy(fill, start, sl->sb);
    for (uint32_t i = 0; i < n; i++)
        FOR_BLOCKS_OF(g, &k[i], list[fill[blk_]++] = i);
    meter_free(g->mem, fill, sl->sb);
    return FLOE_OK;
}

void splat_lists_free(sgrid *g, splat_lists *sl)
{
    meter_free(g->mem, sl->list, sl->lb);
    meter_free(g->mem, sl->start, sl->sb);
    memset(sl, 0, sizeof *sl);
}

int field_splat(sgrid *g, const kern *k, uint32_t n)
{
    splat_lists sl;
    int rc = splat_lists_build(g, k, n, &sl);
    if (!rc) {
        const int32_t nb = g->nblocks;
#pragma omp parallel for schedule(dynamic, 4)
        for (int32_t b = 0; b < nb; b++)
            for (uint32_t e = sl.start[b]; e < sl.start[b + 1]; e++)
                splat_block(g, &k[sl.list[e]], b, &g->coord[3 * (size_t)b]);
    }
    splat_lists_free(g, &sl);
    return rc;
}
