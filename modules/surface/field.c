/* The scalar field the surface is the iso level of: the colour field
 * phi(x) = sum_j V_j det(G_j) P(|G_j (x - c_j)|), P the cubic spline of unit
 * support. Isotropic kernels: c_j = x_j, G_j = I / H. Anisotropic (Yu &
 * Turk 2013, <floe/anisotropy.h>): c_j the Laplacian-smoothed centre and G_j
 * from the weighted covariance of the neighbourhood. */
#include "surface.h"

#include <floe/anisotropy.h>

#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include <stdlib.h>
#include <string.h>

/* fewer particles: the O(n) passes run on one thread (a parallel region
 * costs more than they do) */
#define PAR_MIN 16384

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

/* Cells of half the neighbourhood radius (CELL_DIV cells per radius), keyed
 * x fastest, so the cells of one (dy, dz) row are one run of the sorted
 * entries, read from a sorted copy of the positions. The particles of one
 * cell share their rows: the entries where each x cell of each row starts
 * are found once a cell (cell_rows). Each particle then reads of a row
 * only the x cells its slice of the radius sphere reaches, and skips the
 * rows the sphere misses: about half the candidates are neighbours,
 * against 27% over the whole 5^3 block of cells. */
/* row (dy, dz) of a cell: its x cell c - CELL_DIV + i holds the entries
 * b[row][i] .. b[row][i + 1] */
typedef uint32_t cell_rows[ROWS][ROW_CELLS + 1];

static uint64_t cell_key(int64_t cx, int64_t cy, int64_t cz)
{
    return (uint64_t)cx | (uint64_t)cy << 21 | (uint64_t)cz << 42;
}


void cells_free(cell_sort *cs, mem_meter *m)
{
    meter_free(m, cs->key, (size_t)cs->n * sizeof *cs->key);
    meter_free(m, cs->idx, (size_t)cs->n * sizeof *cs->idx);
    meter_free(m, cs->cell, ((size_t)cs->n + 1) * sizeof *cs->cell);
    meter_free(m, cs->ckey, ((size_t)cs->n + 1) * sizeof *cs->ckey);
    for (int k = 0; k < 3; k++)
        meter_free(m, cs->xs[k], ((size_t)cs->n + LANES) * sizeof *cs->xs[k]);
    memset(cs, 0, sizeof *cs);
}

/* A stable sort of the particles by the keys k < 2^bits (LSD radix, 8
 * bits a pass; each thread counts and places a contiguous chunk, so the
 * order is the same on any number of threads: ties stay in particle
 * order). k and idx are sorted in place; tk and ti are scratch, hist holds
 * 256 counts for each of at most maxt threads. */
static void radix_sort(uint64_t *k, uint32_t *idx, uint64_t *tk, uint32_t *ti, uint32_t n, int bits, size_t *hist,
                       int maxt)
{
    for (uint32_t i = 0; i < n; i++)
        idx[i] = i;
    for (int shift = 0; shift < bits; shift += 8) {
#pragma omp parallel num_threads(maxt) if (n >= PAR_MIN)
        {
            int t = 0, nt = 1;
#ifdef _OPENMP
            t = omp_get_thread_num();
            nt = omp_get_num_threads();
#endif
            size_t *h = &hist[256 * (size_t)t];
            const uint32_t a = (uint32_t)((uint64_t)n * t / nt), b = (uint32_t)((uint64_t)n * (t + 1) / nt);
            memset(h, 0, 256 * sizeof *h);
            for (uint32_t i = a; i < b; i++)
                h[k[i] >> shift & 255]++;
#pragma omp barrier
#pragma omp single
            {
                size_t at = 0;
                for (int d = 0; d < 256; d++)
                    for (int u = 0; u < nt; u++) {
                        size_t c = hist[256 * (size_t)u + d];
                        hist[256 * (size_t)u + d] = at;
                        at += c;
                    }
            }
            for (uint32_t i = a; i < b; i++) {
                size_t o = h[k[i] >> shift & 255]++;
                tk[o] = k[i];
                ti[o] = idx[i];
            }
        }
        memcpy(k, tk, (size_t)n * sizeof *k);
        memcpy(idx, ti, (size_t)n * sizeof *idx);
    }
}

int cells_build(cell_sort *cs, const float *x, uint32_t n, double r, mem_meter *m)
{
    const double h = r / CELL_DIV;
    memset(cs, 0, sizeof *cs);
    cs->n = n;
    cs->h = h;
    cs->inv = 1.0 / h;
    double lo0 = INFINITY, lo1 = INFINITY, lo2 = INFINITY;
#pragma omp parallel for reduction(min : lo0, lo1, lo2) if (n >= PAR_MIN)
    for (uint32_t i = 0; i < n; i++) {
        lo0 = fmin(lo0, x[3 * (size_t)i] - (CELL_DIV + 1) * h);
        lo1 = fmin(lo1, x[3 * (size_t)i + 1] - (CELL_DIV + 1) * h);
        lo2 = fmin(lo2, x[3 * (size_t)i + 2] - (CELL_DIV + 1) * h);
    }
    cs->lo[0] = lo0, cs->lo[1] = lo1, cs->lo[2] = lo2;
    int maxt = 1;
#ifdef _OPENMP
    maxt = omp_get_max_threads();
#endif
    const size_t sk = (size_t)n * sizeof(uint64_t), si = (size_t)n * sizeof(uint32_t), sh = 256 * sizeof(size_t) * maxt;
    uint64_t *ck = meter_alloc(m, sk, 0), *tk = meter_alloc(m, sk, 0);
    uint32_t *ti = meter_alloc(m, si, 0);
    size_t *hist = meter_alloc(m, sh, 0);
    cs->key = meter_alloc(m, sk, 0);
    cs->idx = meter_alloc(m, si, 0);
    cs->cell = meter_alloc(m, ((size_t)n + 1) * sizeof *cs->cell, 0);
    cs->ckey = meter_alloc(m, ((size_t)n + 1) * sizeof *cs->ckey, 0);
    for (int k = 0; k < 3; k++)
        cs->xs[k] = meter_alloc(m, ((size_t)n + LANES) * sizeof *cs->xs[k], 1);
    if (!ck || !tk || !ti || !hist || !cs->key || !cs->idx || !cs->cell || !cs->ckey || !cs->xs[0] || !cs->xs[1] ||
        !cs->xs[2]) {
        meter_free(m, ck, sk);
        meter_free(m, tk, sk);
        meter_free(m, ti, si);
        meter_free(m, hist, sh);
        cells_free(cs, m);
        return FLOE_ERR_NOMEM;
    }
    /* cell coordinates, then a compact key in the same order as cell_key's
     * (z, then y, then x): the sort reads only the bits it needs */
    int64_t cmin[3] = {KEY_MASK, KEY_MASK, KEY_MASK}, cmax[3] = {0, 0, 0};
#pragma omp parallel for reduction(min : cmin[:3]) reduction(max : cmax[:3]) if (n >= PAR_MIN)
    for (uint32_t i = 0; i < n; i++) {
        int64_t c[3];
        for (int k = 0; k < 3; k++) {
            c[k] = (int64_t)floor((x[3 * (size_t)i + k] - cs->lo[k]) * cs->inv) & KEY_MASK;
            cmin[k] = c[k] < cmin[k] ? c[k] : cmin[k];
            cmax[k] = c[k] > cmax[k] ? c[k] : cmax[k];
        }
        cs->key[i] = cell_key(c[0], c[1], c[2]); /* by particle until sorted */
    }
    const uint64_t nx = (uint64_t)(cmax[0] - cmin[0] + 1), ny = (uint64_t)(cmax[1] - cmin[1] + 1),
                   nz = (uint64_t)(cmax[2] - cmin[2] + 1);
    int bits = 0;
    while (bits < 63 && ((uint64_t)1 << bits) < nx * ny * nz)
        bits++;
#pragma omp parallel for if (n >= PAR_MIN)
    for (uint32_t i = 0; i < n; i++) {
        const uint64_t key = cs->key[i];
        const uint64_t cx = (key & KEY_MASK) - (uint64_t)cmin[0], cy = (key >> 21 & KEY_MASK) - (uint64_t)cmin[1],
                       cz = (key >> 42) - (uint64_t)cmin[2];
        ck[i] = (cz * ny + cy) * nx + cx;
    }
    radix_sort(ck, cs->idx, tk, ti, n, bits, hist, maxt);
    /* the keys by entry (tk is free again) */
#pragma omp parallel for if (n >= PAR_MIN)
    for (uint32_t e = 0; e < n; e++) {
        tk[e] = cs->key[cs->idx[e]];
        for (int k = 0; k < 3; k++)
            cs->xs[k][e] = x[3 * (size_t)cs->idx[e] + k];
    }
    memcpy(cs->key, tk, sk);
    for (uint32_t e = 0; e < n; e++) {
        if (e == 0 || cs->key[e] != cs->key[e - 1]) {
            cs->ckey[cs->ncell] = cs->key[e];
            cs->cell[cs->ncell++] = e;
        }
    }
    cs->cell[cs->ncell] = n;
    cs->ckey[cs->ncell] = UINT64_MAX; /* above every key: ends the scans */
    meter_free(m, ck, sk);
    meter_free(m, tk, sk);
    meter_free(m, ti, si);
    meter_free(m, hist, sh);
    return FLOE_OK;
}

/* first cell at or after a with key >= k: the rows of a cell come in
 * increasing key order, so a gallop from the previous row's cell */
static uint32_t lower_bound_from(const cell_sort *cs, uint32_t a, uint64_t k)
{
    const uint32_t n = cs->ncell;
    uint32_t step = 1, b = a;
    while (b < n && cs->ckey[b] < k) {
        a = b + 1;
        b = a + step - 1 < n ? a + step - 1 : n;
        step *= 2;
    }
    while (a < b) {
        uint32_t mid = a + (b - a) / 2;
        if (cs->ckey[mid] < k)
            a = mid + 1;
        else
            b = mid;
    }
    return a;
}

/* the cell coordinates of cell ci and the rows around it: the occupied
 * cells of a row follow each other in the cell list */
static void cell_rows_of(const cell_sort *cs, uint32_t ci, int64_t c[3], cell_rows b)
{
    const uint64_t key = cs->ckey[ci];
    c[0] = (int64_t)(key & KEY_MASK), c[1] = (int64_t)(key >> 21 & KEY_MASK), c[2] = (int64_t)(key >> 42);
    uint32_t from = 0;
    int row = 0;
    for (int dz = -CELL_DIV; dz <= CELL_DIV; dz++)
        for (int dy = -CELL_DIV; dy <= CELL_DIV; dy++, row++) {
            uint32_t g = from = lower_bound_from(cs, from, cell_key(c[0] - CELL_DIV, c[1] + dy, c[2] + dz));
            for (int i = 0; i <= ROW_CELLS; i++) {
                const uint64_t k = cell_key(c[0] - CELL_DIV + i, c[1] + dy, c[2] + dz);
                while (cs->ckey[g] < k) /* the UINT64_MAX after the last stops it */
                    g++;
                b[row][i] = cs->cell[g];
            }
        }
}

/* distance from v to the cell interval [c h, (c + 1) h) of one axis */
static double axis_gap(double v, int64_t c, double h)
{
    double a = (double)c * h, b = a + h;
    return v < a ? a - v : v > b ? v - b : 0.0;
}

/* weighted mean (and, when cov is not NULL, covariance) of the
 * neighbourhood of the particle of entry e, in cell c with rows b; returns
 * its neighbour count. The candidates of a row go LANES at a time through
 * branch-free lanes (the compiler makes them one vector each), each lane
 * summing its own share in float; the lanes' sums meet in double at the
 * end, always in the same order, so the result does not depend on the
 * thread count. */
static inline __attribute__((always_inline)) int neighbourhood(const cell_sort *cs, uint32_t e, const int64_t c[3],
                                                               cell_rows b, double r, double mean[3], double cov[6])
{
    const float r2 = (float)(r * r), inv_r = (float)(1.0 / r);
    const float *X = cs->xs[0], *Y = cs->xs[1], *Z = cs->xs[2];
    const float xi[3] = {X[e], Y[e], Z[e]};
    const double h = cs->h, rr = r * r * (1.0 + 1e-5); /* margin over the float test */
    double u[3];
    for (int k = 0; k < 3; k++)
        u[k] = (double)xi[k] - cs->lo[k];
    float sw[LANES] = {0}, s1[3][LANES] = {{0}}, s2[6][LANES] = {{0}};
    int32_t cnt[LANES] = {0};
    int row = 0;
    for (int dz = -CELL_DIV; dz <= CELL_DIV; dz++) {
        const double gz = axis_gap(u[2], c[2] + dz, h);
        for (int dy = -CELL_DIV; dy <= CELL_DIV; dy++, row++) {
            const double gy = axis_gap(u[1], c[1] + dy, h), left = rr - gz * gz - gy * gy;
            if (left <= 0)
                continue;
            const double rx = sqrt(left) + 1e-6 * r;
            int64_t x0 = (int64_t)floor((u[0] - rx) * cs->inv), x1 = (int64_t)floor((u[0] + rx) * cs->inv);
            x0 = x0 < c[0] - CELL_DIV ? c[0] - CELL_DIV : x0;
            x1 = x1 > c[0] + CELL_DIV ? c[0] + CELL_DIV : x1;
            const uint32_t f0 = b[row][x0 - c[0] + CELL_DIV], f1 = b[row][x1 - c[0] + CELL_DIV + 1];
            for (uint32_t f = f0; f < f1; f += LANES) {
                /* lanes past f1 read the padding or the next row: masked */
                const int32_t valid = (int32_t)(f1 - f), self = (int32_t)(e - f);
                const float *xf = X + f, *yf = Y + f, *zf = Z + f;
                for (int l = 0; l < LANES; l++) {
                    const float dx = xf[l] - xi[0], dy_ = yf[l] - xi[1], dz_ = zf[l] - xi[2];
                    const float dd = dx * dx + dy_ * dy_ + dz_ * dz_;
                    const float q = sqrtf(dd) * inv_r;
                    const int in = (dd < r2) & (l < valid);
                    const float w = in ? 1.0f - q * q * q : 0.0f; /* floe_aniso_weight */
                    cnt[l] += in & (l != self);
                    sw[l] += w;
                    /* moments about x_i: cancels the large coordinates */
                    s1[0][l] += w * dx, s1[1][l] += w * dy_, s1[2][l] += w * dz_;
                    if (cov) {
                        s2[0][l] += w * dx * dx, s2[1][l] += w * dx * dy_, s2[2][l] += w * dx * dz_;
                        s2[3][l] += w * dy_ * dy_, s2[4][l] += w * dy_ * dz_, s2[5][l] += w * dz_ * dz_;
                    }
                }
            }
        }
    }
    double W = 0, m1[3] = {0, 0, 0}, m2[6] = {0, 0, 0, 0, 0, 0};
    int count = 0;
    for (int l = 0; l < LANES; l++) {
        W += sw[l];
        count += cnt[l];
        for (int k = 0; k < 3; k++)
            m1[k] += s1[k][l];
        if (cov)
            for (int k = 0; k < 6; k++)
                m2[k] += s2[k][l];
    }
    double m[3] = {m1[0] / W, m1[1] / W, m1[2] / W};
    for (int k = 0; k < 3; k++)
        mean[k] = xi[k] + m[k];
    if (cov) {
        cov[0] = m2[0] / W - m[0] * m[0], cov[1] = m2[1] / W - m[0] * m[1], cov[2] = m2[2] / W - m[0] * m[2];
        cov[3] = m2[3] / W - m[1] * m[1], cov[4] = m2[4] / W - m[1] * m[2], cov[5] = m2[5] / W - m[2] * m[2];
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
#pragma omp parallel for schedule(dynamic, 32)
    for (uint32_t ci = 0; ci < cs.ncell; ci++) {
        cell_rows b;
        int64_t cc[3];
        cell_rows_of(&cs, ci, cc, b);
        for (uint32_t e = cs.cell[ci]; e < cs.cell[ci + 1]; e++) {
            double mean[3];
            uint32_t i = cs.idx[e];
            neighbourhood(&cs, e, cc, b, o->radius, mean, NULL);
            for (int d = 0; d < 3; d++)
                k[i].c[d] = (float)(c[3 * (size_t)i + d] + mu * (mean[d] - c[3 * (size_t)i + d]));
        }
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
#pragma omp parallel for schedule(dynamic, 32) reduction(+ : stretched)
    for (uint32_t ci = 0; ci < cs.ncell; ci++) {
        cell_rows b;
        int64_t cc[3];
        cell_rows_of(&cs, ci, cc, b);
        for (uint32_t e = cs.cell[ci]; e < cs.cell[ci + 1]; e++) {
            double mean[3], cov[6], G[9];
            uint32_t i = cs.idx[e];
            int cnt = neighbourhood(&cs, e, cc, b, o->radius, mean, cov);
            for (int d = 0; d < 3; d++)
                k[i].c[d] = (float)((1.0 - o->lambda) * x[3 * i + d] + o->lambda * mean[d]);
            double ax = floe_aniso_matrix(&ad, cov, cnt, G);
            stretched += ax > 1.0 + 1e-6;
            for (int d = 0; d < 9; d++)
                k[i].G[d] = (float)G[d];
            support_box(&k[i]);
        }
    }
    cells_free(&cs, m);
    *n_stretched = stretched;
    return o->lambda > 0 ? inflate(k, n, o, m) : FLOE_OK;
}

/* ---- the splat --------------------------------------------------------------- */

#define SPLINE_SIGMA 2.54647908947f /* 8 / pi, the cubic spline's normalisation at support 1 */

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
 * so the device's grid is the host's. A row of the block is one vector of
 * BLOCK lanes, every lane computed and those outside the support adding
 * 0 (as the device does: it tests q^2 < 1 alone); rows and planes
 * outside the support's box are skipped. */
static void splat_block(sgrid *g, const kern *k, int32_t blk, const int32_t bc[3])
{
    const float *G = k->G;
    const float det = G[0] * (G[4] * G[8] - G[5] * G[7]) - G[1] * (G[3] * G[8] - G[5] * G[6]) +
                      G[2] * (G[3] * G[7] - G[4] * G[6]);
    const float amp = k->V * fabsf(det) * SPLINE_SIGMA;
    int64_t p0[3], p1[3];
    point_box(g, k, p0, p1, 0);
    for (int d = 1; d < 3; d++) {
        int64_t b0 = (int64_t)bc[d] * BLOCK, b1 = b0 + BLOCK - 1;
        p0[d] = p0[d] < b0 ? b0 : p0[d];
        p1[d] = p1[d] > b1 ? b1 : p1[d];
    }
    float *val = &g->val[(size_t)blk * BLOCK_PTS];
    const float lo0 = (float)g->lo[0], lo1 = (float)g->lo[1], lo2 = (float)g->lo[2], cell = (float)g->cell;
    float dxs[BLOCK];
    for (int l = 0; l < BLOCK; l++)
        dxs[l] = (lo0 + (float)((int64_t)bc[0] * BLOCK + l) * cell) - k->c[0];
    for (int64_t pz = p0[2]; pz <= p1[2]; pz++) {
        const float dz = (lo2 + (float)pz * cell) - k->c[2];
        for (int64_t py = p0[1]; py <= p1[1]; py++) {
            const float dy = (lo1 + (float)py * cell) - k->c[1];
            float *row = &val[BLOCK * ((size_t)(py & (BLOCK - 1)) + BLOCK * (size_t)(pz & (BLOCK - 1)))];
            for (int l = 0; l < BLOCK; l++) {
                const float dx = dxs[l];
                const float a = G[0] * dx + G[1] * dy + G[2] * dz;
                const float b = G[3] * dx + G[4] * dy + G[5] * dz;
                const float c = G[6] * dx + G[7] * dy + G[8] * dz;
                const float q2 = a * a + b * b + c * c;
                const float q = sqrtf(q2), t = 1.0f - q;
                /* spline_unit, both pieces */
                const float w = q <= 0.5f ? 6.0f * (q * q * q - q * q) + 1.0f : 2.0f * t * t * t;
                row[l] += q2 < 1.0f ? amp * w : 0.0f;
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

/* The blocks every kernel's support box (plus one point) touches, each
 * thread gathering those of a contiguous share of the kernels in a grid of
 * its own; the union, sorted by block (z, then y, then x), becomes g's
 * blocks in that order: the numbering depends on the particles alone, not
 * on the threads. */
static int touch_blocks(sgrid *g, const kern *k, uint32_t n)
{
    int maxt = 1;
#ifdef _OPENMP
    maxt = omp_get_max_threads();
#endif
    sgrid *part = calloc((size_t)maxt, sizeof *part);
    mem_meter *pm = calloc((size_t)maxt, sizeof *pm);
    int rc = part && pm ? FLOE_OK : FLOE_ERR_NOMEM, used = 0;
    if (!rc) {
        const double hi[3] = {g->lo[0] + (double)g->max_block[0] * BLOCK * g->cell - 2 * g->cell,
                              g->lo[1] + (double)g->max_block[1] * BLOCK * g->cell - 2 * g->cell,
                              g->lo[2] + (double)g->max_block[2] * BLOCK * g->cell - 2 * g->cell};
#pragma omp parallel num_threads(maxt) reduction(min : rc) if (n >= PAR_MIN) /* errors are negative */
        {
            int t = 0, nt = 1;
#ifdef _OPENMP
            t = omp_get_thread_num();
            nt = omp_get_num_threads();
#endif
#pragma omp single
            used = nt;
            const uint32_t a = (uint32_t)((uint64_t)n * t / nt), b = (uint32_t)((uint64_t)n * (t + 1) / nt);
            int trc = sgrid_init(&part[t], &pm[t], g->lo, hi, g->cell);
            memcpy(part[t].lo, g->lo, sizeof g->lo); /* g's blocks exactly */
            memcpy(part[t].max_block, g->max_block, sizeof g->max_block);
            for (uint32_t i = a; i < b && !trc; i++) {
                int64_t p0[3], p1[3];
                point_box(g, &k[i], p0, p1, 1);
                trc = sgrid_touch_box(&part[t], p0, p1);
            }
            rc = trc;
        }
    }
    size_t total = 0;
    for (int t = 0; t < used; t++)
        total += (size_t)part[t].nblocks;
    const size_t sk = (total + 1) * sizeof(uint64_t), si = (total + 1) * sizeof(uint32_t);
    uint64_t *key = rc ? NULL : meter_alloc(g->mem, sk, 0), *tk = rc ? NULL : meter_alloc(g->mem, sk, 0);
    uint32_t *idx = rc ? NULL : meter_alloc(g->mem, si, 0), *ti = rc ? NULL : meter_alloc(g->mem, si, 0);
    size_t *hist = rc ? NULL : meter_alloc(g->mem, 256 * sizeof(size_t) * maxt, 0);
    if (!rc && (!key || !tk || !idx || !ti || !hist))
        rc = FLOE_ERR_NOMEM;
    if (!rc) {
        /* z, then y, then x: a compact key over the grid's blocks */
        const uint64_t nx = (uint64_t)g->max_block[0], ny = (uint64_t)g->max_block[1];
        size_t at = 0;
        for (int t = 0; t < used; t++)
            for (int32_t b = 0; b < part[t].nblocks; b++) {
                const int32_t *c = &part[t].coord[3 * (size_t)b];
                key[at++] = ((uint64_t)c[2] * ny + (uint64_t)c[1]) * nx + (uint64_t)c[0];
            }
        int bits = 0;
        while (bits < 63 && ((uint64_t)1 << bits) < nx * ny * (uint64_t)g->max_block[2])
            bits++;
        radix_sort(key, idx, tk, ti, (uint32_t)total, bits, hist, maxt);
        for (size_t e = 0; e < total && !rc; e++)
            if (e == 0 || key[e] != key[e - 1]) {
                const int32_t c[3] = {(int32_t)(key[e] % nx), (int32_t)(key[e] / nx % ny), (int32_t)(key[e] / nx / ny)};
                if (sgrid_touch(g, c) < 0)
                    rc = FLOE_ERR_NOMEM;
            }
    }
    size_t peak = 0;
    for (int t = 0; t < used; t++) {
        peak += pm[t].peak;
        sgrid_free(&part[t]);
    }
    /* the threads' grids count towards the peak as if held together */
    g->mem->peak = g->mem->now + peak > g->mem->peak ? g->mem->now + peak : g->mem->peak;
    meter_free(g->mem, key, sk);
    meter_free(g->mem, tk, sk);
    meter_free(g->mem, idx, si);
    meter_free(g->mem, ti, si);
    meter_free(g->mem, hist, 256 * sizeof(size_t) * maxt);
    free(part);
    free(pm);
    return rc;
}

int splat_blocks(sgrid *g, const kern *k, uint32_t n)
{
    /* one point of margin around every support: a point of value > 0 has
     * all its neighbours in existing blocks, so every cell the iso surface
     * crosses has its lowest corner in a block (mesher.c walks those) */
    int rc = touch_blocks(g, k, n);
    return rc ? rc : sgrid_alloc_values(g);
}

int splat_lists_build(sgrid *g, const kern *k, uint32_t n, splat_lists *sl)
{
    memset(sl, 0, sizeof *sl);
    int rc = splat_blocks(g, k, n);
    return rc ? rc : splat_lists_fill(g, k, n, sl);
}

int splat_lists_fill(sgrid *g, const kern *k, uint32_t n, splat_lists *sl)
{
    memset(sl, 0, sizeof *sl);
    /* the kernels of each block, in kernel order (so every point sums in
     * the same order on any number of threads): each thread counts the
     * blocks of a contiguous share of the kernels, and places them after
     * the shares before its own */
    int maxt = 1;
#ifdef _OPENMP
    maxt = omp_get_max_threads();
#endif
    const size_t nb = (size_t)g->nblocks, sc = nb * maxt * sizeof(uint32_t);
    sl->sb = (nb + 1) * sizeof(uint32_t);
    uint32_t *start = sl->start = meter_alloc(g->mem, sl->sb, 1), *cnt = meter_alloc(g->mem, sc, 1);
    if (!start || !cnt) {
        meter_free(g->mem, cnt, sc);
        return FLOE_ERR_NOMEM;
    }
    int used = 1;
#pragma omp parallel num_threads(maxt) if (n >= PAR_MIN)
    {
        int t = 0, nt = 1;
#ifdef _OPENMP
        t = omp_get_thread_num();
        nt = omp_get_num_threads();
#endif
        const uint32_t a = (uint32_t)((uint64_t)n * t / nt), b = (uint32_t)((uint64_t)n * (t + 1) / nt);
        uint32_t *c = &cnt[nb * t];
        for (uint32_t i = a; i < b; i++)
            FOR_BLOCKS_OF(g, &k[i], c[blk_]++);
#pragma omp barrier
#pragma omp single
        {
            used = nt;
            uint32_t at = 0;
            for (size_t bl = 0; bl < nb; bl++) {
                start[bl] = at;
                for (int u = 0; u < nt; u++) {
                    uint32_t v = cnt[nb * u + bl];
                    cnt[nb * u + bl] = at;
                    at += v;
                }
            }
            start[nb] = at;
            sl->lb = (size_t)at * sizeof(uint32_t);
            sl->list = meter_alloc(g->mem, sl->lb, 0);
        }
        if (sl->list)
            for (uint32_t i = a; i < b; i++)
                FOR_BLOCKS_OF(g, &k[i], sl->list[c[blk_]++] = i);
    }
    (void)used;
    meter_free(g->mem, cnt, sc);
    return sl->list ? FLOE_OK : FLOE_ERR_NOMEM;
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
