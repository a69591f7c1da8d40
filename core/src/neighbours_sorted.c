/* Kipfer & Westermann's sorted-key neighbour search ("Realistic and
 * Interactive Simulation of Rivers", GI 2006): the `sorted_keys` method of
 * the neighbours stage, beside the cell search of neighbours.c.
 *
 * Space is cut into bins B = 2 r wide (r the search radius: twice the
 * "particle diameter" of the paper, whose collision distance is r). Each
 * point gets the key 0|iz|iy|ix of its bin (ix counted from 1, so that
 * key - 1 of a row's first bin is an empty bin of the same row), the
 * points are sorted by key, and each point walks left through the sorted
 * keys until key <= key_self - 2: it meets every earlier point of its own
 * bin and of the bin to its left, the pairs closer than r along x. Along
 * y (and z) a pair within r either shares a bin or shares one of the grid
 * staggered by B/2 on that axis; the search runs over the 2^(dim-1) grids
 * (staggered or not on y, z) and counts a pair in a staggered grid only
 * when the unstaggered bins on that axis differ (the paper's leading bit
 * per dimension), so it is found exactly once. Memory is static once
 * warmed up and the cost is linear in the points, independent of how many
 * empty bins the domain has; the points' bounding box sets the bins. */
#include "neighbours_sorted.h"

#include "bigmem.h"

#include <math.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#ifdef _OPENMP
#include <omp.h>
#endif

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap && *p)
        return 0;
    size_t n = *cap ? *cap : 1024;
    while (n < need)
        n += n / 2 + 1;
    void *q = realloc(*p, n * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = n;
    return 0;
}

static int bits_for(uint64_t v)
{
    int b = 1;
    while (b < 63 && (v >> b))
        b++;
    return b;
}

/* LSD radix sort of (key, idx) by key, 11-bit digits over `bits` bits */
static void radix(uint64_t *key, uint32_t *idx, uint64_t *k2, uint32_t *i2, uint32_t n, int bits)
{
    enum { D = 11, R = 1 << D };
    static _Thread_local uint32_t hist[R];
    for (int sh = 0; sh < bits; sh += D) {
        memset(hist, 0, sizeof hist);
        for (uint32_t i = 0; i < n; i++)
            hist[(key[i] >> sh) & (R - 1)]++;
        uint32_t sum = 0;
        for (int b = 0; b < R; b++) {
            uint32_t c = hist[b];
            hist[b] = sum;
            sum += c;
        }
        for (uint32_t i = 0; i < n; i++) {
            uint32_t o = hist[(key[i] >> sh) & (R - 1)]++;
            k2[o] = key[i];
            i2[o] = idx[i];
        }
        memcpy(key, k2, n * sizeof *key);
        memcpy(idx, i2, n * sizeof *idx);
    }
}

int nbs_adjacency(nbs_state *s, int dim, const float *x, uint32_t n, float radius)
{
    if (n > s->cap) {
        free(s->key), free(s->key2), free(s->idx), free(s->idx2);
        s->key = floe_big_alloc(n * sizeof(uint64_t));
        s->key2 = floe_big_alloc(n * sizeof(uint64_t));
        s->idx = floe_big_alloc(n * sizeof(uint32_t));
        s->idx2 = floe_big_alloc(n * sizeof(uint32_t));
        free(s->sx), free(s->sy), free(s->sz), free(s->by), free(s->bz);
        s->sx = floe_big_alloc(n * sizeof(float));
        s->sy = floe_big_alloc(n * sizeof(float));
        s->sz = floe_big_alloc(n * sizeof(float));
        s->by = floe_big_alloc(n * sizeof(int32_t));
        s->bz = floe_big_alloc(n * sizeof(int32_t));
        s->cap = n;
        if (!s->key || !s->key2 || !s->idx || !s->idx2 || !s->sx || !s->sy || !s->sz || !s->by || !s->bz) {
            s->cap = 0;
            return -1;
        }
    }
    int nth = 1;
#ifdef _OPENMP
    nth = omp_get_max_threads();
#endif
    if (nth > s->nparts) {
        nbs_pairs *p = realloc(s->part, (size_t)nth * sizeof *p);
        if (!p)
            return -1;
        memset(p + s->nparts, 0, (size_t)(nth - s->nparts) * sizeof *p);
        s->part = p;
        s->nparts = nth;
    }
    for (int t = 0; t < s->nparts; t++)
        s->part[t].n = 0;
    float lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
    for (int k = 0; k < 3 && n; k++) {
        lo[k] = hi[k] = x[k];
        for (uint32_t i = 1; i < n; i++) {
            lo[k] = fminf(lo[k], x[3 * i + k]);
            hi[k] = fmaxf(hi[k], x[3 * i + k]);
        }
    }
    const float B = 2.0f * radius, inv = 1.0f / B, r2 = radius * radius;
    uint64_t nb[3];
    for (int k = 0; k < 3; k++)
        nb[k] = (uint64_t)floor((hi[k] - lo[k]) * inv) + 3; /* + the empty bin 0, + the staggered one */
    const int bx = bits_for(nb[0]), by = bits_for(nb[1]), bz = dim == 3 ? bits_for(nb[2]) : 0;
    if (bx + by + bz > 63)
        return -1;
    int fail = 0;
    const int ngrids = dim == 3 ? 4 : 2;
    for (int gi = 0; gi < ngrids && !fail; gi++) {
        const int sy = gi & 1, sz = (gi >> 1) & 1;
        const float oy = sy ? 0.5f * B : 0.0f, oz = sz ? 0.5f * B : 0.0f;
#pragma omp parallel for schedule(static)
        for (uint32_t i = 0; i < n; i++) {
            const float *p = x + 3 * i;
            uint64_t ix = (uint64_t)((p[0] - lo[0]) * inv) + 1;
            uint64_t iy = (uint64_t)((p[1] - lo[1] + oy) * inv);
            uint64_t iz = dim == 3 ? (uint64_t)((p[2] - lo[2] + oz) * inv) : 0;
            s->key[i] = (iz << (bx + by)) | (iy << bx) | ix;
            s->idx[i] = i;
        }
        radix(s->key, s->idx, s->key2, s->idx2, n, bx + by + bz);
        /* room for the longest left scan: two runs of keys */
        size_t longest = 1;
        for (uint32_t k = 0, r0 = 0, prev = 0; k <= n; k++)
            if (k == n || s->key[k] != s->key[r0]) {
                const uint32_t len = k - r0;
                const uint32_t two = len + (r0 > 0 && s->key[r0 - 1] + 1 == s->key[r0] ? prev : 0);
                longest = two > longest ? two : longest;
                prev = len;
                r0 = k;
            }
        if ((size_t)s->nparts * longest > s->hits_cap) {
            free(s->hits);
            s->hits_cap = (size_t)s->nparts * longest;
            s->hits = malloc(s->hits_cap * sizeof(uint32_t));
            if (!s->hits) {
                s->hits_cap = 0;
                return -1;
            }
        }
        s->hits_len = longest;
        /* gathered in key order: the left scan reads contiguous memory */
#pragma omp parallel for schedule(static)
        for (uint32_t k = 0; k < n; k++) {
            const float *p = x + 3 * (size_t)s->idx[k];
            s->sx[k] = p[0], s->sy[k] = p[1], s->sz[k] = p[2];
            s->by[k] = (int32_t)((p[1] - lo[1]) * inv);
            s->bz[k] = dim == 3 ? (int32_t)((p[2] - lo[2]) * inv) : 0;
        }
#pragma omp parallel
        {
            int t = 0;
#ifdef _OPENMP
            t = omp_get_thread_num();
#endif
            nbs_pairs *buf = &s->part[t];
            uint32_t *hits = s->hits + (size_t)t * s->hits_len;
#pragma omp for schedule(static)
            for (uint32_t k = 0; k < n; k++) {
                const uint64_t K = s->key[k];
                uint32_t m0 = k;
                while (m0 > 0 && s->key[m0 - 1] + 2 > K) /* key >= K - 1 */
                    m0--;
                const float px = s->sx[k], py = s->sy[k], pz = s->sz[k];
                const int32_t iby = sy ? s->by[k] : INT32_MIN, ibz = sz ? s->bz[k] : INT32_MIN;
                uint32_t c = 0;
                /* branchless: every candidate stored, kept when it is a hit */
                for (uint32_t m = m0; m < k; m++) {
                    const float dx = s->sx[m] - px, dy = s->sy[m] - py, dz = s->sz[m] - pz;
#if defined(__FMA__)
                    const float d2 = fmaf(dz, dz, fmaf(dy, dy, dx * dx)); /* as floe_r2_8 */
#else
                    const float d2 = dx * dx + dy * dy + dz * dz;
#endif
                    /* staggered axes: only pairs the unstaggered grid separates */
                    const int keep = (d2 < r2) & (s->by[m] != iby) & (s->bz[m] != ibz);
                    hits[c] = m;
                    c += (uint32_t)keep;
                }
                if (c && (buf->n + c > buf->cap) &&
                    grow((void **)&buf->p, &buf->cap, buf->n + c, 2 * sizeof(uint32_t)))
                    fail = 1;
                else
                    for (uint32_t h = 0; h < c; h++) {
                        buf->p[2 * buf->n] = s->idx[k];
                        buf->p[2 * buf->n + 1] = s->idx[hits[h]];
                        buf->n++;
                    }
            }
        }
    }
    if (fail)
        return -1;
    /* CSR: degrees, offsets, fill, each row sorted ascending */
    if (grow((void **)&s->start, &s->start_cap, (size_t)n + 1, sizeof(uint32_t)) ||
        grow((void **)&s->fill, &s->fill_cap, (size_t)n + 1, sizeof(uint32_t)))
        return -1;
    memset(s->start, 0, ((size_t)n + 1) * sizeof(uint32_t));
    size_t total = 0;
    for (int t = 0; t < s->nparts; t++) {
        const nbs_pairs *b = &s->part[t];
        for (size_t q = 0; q < b->n; q++) {
            s->start[b->p[2 * q] + 1]++;
            s->start[b->p[2 * q + 1] + 1]++;
        }
        total += 2 * b->n;
    }
    for (uint32_t i = 0; i < n; i++)
        s->start[i + 1] += s->start[i];
    if (grow((void **)&s->adj, &s->adj_cap, total ? total : 1, sizeof(uint32_t)))
        return -1;
    memcpy(s->fill, s->start, ((size_t)n + 1) * sizeof(uint32_t));
    for (int t = 0; t < s->nparts; t++) {
        const nbs_pairs *b = &s->part[t];
        for (size_t q = 0; q < b->n; q++) {
            const uint32_t i = b->p[2 * q], j = b->p[2 * q + 1];
            s->adj[s->fill[i]++] = j;
            s->adj[s->fill[j]++] = i;
        }
    }
#pragma omp parallel for schedule(dynamic, 256)
    for (uint32_t i = 0; i < n; i++) { /* insertion sort: rows are short */
        uint32_t *r = s->adj + s->start[i];
        const uint32_t c = s->start[i + 1] - s->start[i];
        for (uint32_t a = 1; a < c; a++) {
            uint32_t v = r[a], b = a;
            for (; b > 0 && r[b - 1] > v; b--)
                r[b] = r[b - 1];
            r[b] = v;
        }
    }
    return 0;
}

int nbs_list(const nbs_state *s, uint32_t first, uint32_t nq, uint32_t tfirst, uint32_t nt, nb_list *out)
{
    /* the widest row decides the stride (a multiple of 8) */
    uint32_t widest = 0;
    for (uint32_t q = 0; q < nq; q++) {
        const uint32_t *r = s->adj + s->start[first + q], *e = s->adj + s->start[first + q + 1];
        uint32_t c = 0;
        for (; r < e; r++)
            c += *r >= tfirst && *r < tfirst + nt;
        widest = c > widest ? c : widest;
    }
    uint32_t stride = (widest + 7u) & ~7u;
    stride = stride ? stride : 8;
    if (stride < out->stride)
        stride = out->stride;
    if (nq > out->cap || stride != out->stride || !out->count || !out->idx) {
        const uint32_t cap = nq > out->cap ? nq : out->cap;
        free(out->count);
        free(out->idx);
        out->count = floe_big_alloc((size_t)(cap ? cap : 1) * sizeof(uint32_t));
        out->idx = floe_big_alloc((size_t)(cap ? cap : 1) * stride * sizeof(uint32_t));
        if (!out->count || !out->idx) {
            free(out->count), free(out->idx);
            memset(out, 0, sizeof *out);
            return -1;
        }
        out->cap = cap;
        out->stride = stride;
    }
    out->n = nq;
#pragma omp parallel for schedule(static)
    for (uint32_t q = 0; q < nq; q++) {
        const uint32_t *r = s->adj + s->start[first + q], *e = s->adj + s->start[first + q + 1];
        uint32_t *dst = out->idx + (size_t)q * out->stride, c = 0;
        for (; r < e; r++)
            if (*r >= tfirst && *r < tfirst + nt)
                dst[c++] = *r - tfirst;
        out->count[q] = c;
        nb_pad_row(dst, c, out->stride);
    }
    return 0;
}

void nbs_free(nbs_state *s)
{
    free(s->key), free(s->key2), free(s->idx), free(s->idx2);
    free(s->sx), free(s->sy), free(s->sz), free(s->by), free(s->bz), free(s->hits);
    for (int t = 0; t < s->nparts; t++)
        free(s->part[t].p);
    free(s->part);
    free(s->start), free(s->adj), free(s->fill);
    memset(s, 0, sizeof *s);
}

/* ---- benchmark ------------------------------------------------------------ */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static float rnd(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    *s = x;
    return (float)((double)(x >> 11) * (1.0 / 9007199254740992.0));
}

/* uniform: a jittered lattice filling a cube (square), as nb_bench; sparse:
 * a river, a band 6 d deep and 24 d wide winding over a plane 16 times
 * wider than the band is long, like water on a terrain */
static void bench_points(float *x, uint32_t n, int dim, int sparse, float d, float lo[3], float hi[3])
{
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    if (!sparse) {
        uint32_t m = (uint32_t)ceil(dim == 3 ? cbrt((double)n) : sqrt((double)n));
        for (uint32_t k = 0; k < n; k++) {
            uint32_t a = k % m, b = (k / m) % m, c = dim == 3 ? k / m / m : 0;
            x[3 * k] = ((float)a + 0.5f) * d + 0.1f * d * (2 * rnd(&seed) - 1);
            x[3 * k + 1] = ((float)b + 0.5f) * d + 0.1f * d * (2 * rnd(&seed) - 1);
            x[3 * k + 2] = dim == 3 ? ((float)c + 0.5f) * d + 0.1f * d * (2 * rnd(&seed) - 1) : 0;
        }
        for (int k = 0; k < 3; k++)
            lo[k] = 0, hi[k] = (dim == 3 || k < 2) ? (float)m * d : 0;
        return;
    }
    /* the band: w across (z), h deep (y), length from n */
    const uint32_t w = dim == 3 ? 24 : 1, h = 6;
    const uint32_t len = (n + w * h - 1) / (w * h);
    const float L = (float)len * d, A = 0.15f * L;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t a = k / (w * h), b = (k / w) % h, c = k % w;
        float s = ((float)a + 0.5f) * d;
        float xs = s, zs = A * sinf(6.2831853f * 3 * s / L) + ((float)c - 0.5f * w) * d;
        float ys = 0.05f * L * cosf(6.2831853f * s / L) + ((float)b + 0.5f) * d;
        x[3 * k] = xs + 0.1f * d * (2 * rnd(&seed) - 1);
        x[3 * k + 1] = ys + 0.1f * d * (2 * rnd(&seed) - 1);
        x[3 * k + 2] = dim == 3 ? zs + 0.1f * d * (2 * rnd(&seed) - 1) : 0;
    }
    lo[0] = -0.5f * L, hi[0] = 1.5f * L;       /* a terrain 16 times the band's area */
    lo[1] = -0.1f * L, hi[1] = 0.1f * L + h * d;
    lo[2] = dim == 3 ? -4 * A : 0, hi[2] = dim == 3 ? 4 * A : 0;
}

int nbs_bench(uint32_t n, int dim, int threads, int iters, int sorted_keys, int sparse, double *updates_per_s,
              double *sort_ms, double *build_ms, double *avg_neighbours)
{
    if (n == 0 || (dim != 2 && dim != 3) || iters <= 0 || threads < 0)
        return -1;
    const float d = 0.01f, h = 2.0f * d;
    float *x = malloc((size_t)n * 3 * sizeof(float)), lo[3], hi[3];
    if (!x)
        return -1;
    bench_points(x, n, dim, sparse, d, lo, hi);
#ifdef _OPENMP
    int prev = omp_get_max_threads();
    if (threads > 0)
        omp_set_num_threads(threads);
#endif
    int rc = -1;
    nb_grid g;
    nb_sorted so = {0};
    nb_list l = {0};
    nbs_state st = {0};
    double t_sort = 0, t_build = 0;
    if (sorted_keys) {
        if (nbs_adjacency(&st, dim, x, n, h) || nbs_list(&st, 0, n, 0, n, &l))
            goto done;
        for (int it = 0; it < iters; it++) {
            double t0 = now();
            if (nbs_adjacency(&st, dim, x, n, h))
                goto done;
            double t1 = now();
            if (nbs_list(&st, 0, n, 0, n, &l))
                goto done;
            t_sort += t1 - t0; /* keys, sorts and pairs */
            t_build += now() - t1;
        }
    } else {
        if (nb_grid_init(&g, dim, lo, hi, h, (uint64_t)1 << 31) || nb_sort(&so, &g, x, n) ||
            nb_build(&l, &g, x, n, &so, x, h, 1))
            goto done;
        for (int it = 0; it < iters; it++) {
            double t0 = now();
            if (nb_sort(&so, &g, x, n))
                goto done;
            double t1 = now();
            if (nb_build(&l, &g, x, n, &so, x, h, 1))
                goto done;
            t_sort += t1 - t0;
            t_build += now() - t1;
        }
    }
    uint64_t sum = 0;
    for (uint32_t i = 0; i < n; i++)
        sum += l.count[i];
    if (updates_per_s)
        *updates_per_s = (double)n * iters / (t_sort + t_build);
    if (sort_ms)
        *sort_ms = 1e3 * t_sort / iters;
    if (build_ms)
        *build_ms = 1e3 * t_build / iters;
    if (avg_neighbours)
        *avg_neighbours = (double)sum / n;
    rc = 0;
done:
#ifdef _OPENMP
    omp_set_num_threads(prev);
#endif
    nb_sorted_free(&so);
    nb_list_free(&l);
    nbs_free(&st);
    free(x);
    return rc;
}

/* ---- the neighbours stage's method ------------------------------------- */

#include "device.h"

struct nbs_ctx {
    nbs_state s;
    float *x;
    size_t xcap;
};

void ctx_nbs_free(floe_ctx *ctx)
{
    if (!ctx->nbs)
        return;
    nbs_free(&ctx->nbs->s);
    free(ctx->nbs->x);
    free(ctx->nbs);
    ctx->nbs = NULL;
}

int ctx_neighbours_sorted(floe_ctx *ctx)
{
    if (ctx->info.periodic)
        return ctx_fail(ctx, FLOE_ERR_ARG, "neighbours: method \"sorted_keys\" does not support periodic domains "
                                           "(use the default method \"cells\")");
    if (!ctx->nbs && !(ctx->nbs = calloc(1, sizeof *ctx->nbs)))
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "neighbours: out of memory");
    struct nbs_ctx *c = ctx->nbs;
    /* every set's positions, one after the other */
    uint32_t first[MAX_SETS + 1] = {0};
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        dev_host(ctx, p, pset_attr(p, "x"), 0);
        first[s + 1] = first[s] + (p->gen ? p->n : 0);
    }
    const uint32_t total = first[ctx->npsets];
    if (grow((void **)&c->x, &c->xcap, (size_t)total * 3 + 3, sizeof(float)))
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "neighbours: out of memory");
    for (int s = 0; s < ctx->npsets; s++)
        if (ctx->sets[s].gen && ctx->sets[s].n)
            memcpy(c->x + 3 * (size_t)first[s], pset_attr(&ctx->sets[s], "x")->data,
                   (size_t)ctx->sets[s].n * 3 * sizeof(float));
    if (nbs_adjacency(&c->s, ctx->info.dim, c->x, total, ctx->info.support))
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "neighbours: out of memory (sorted keys, %u particles)", total);
    for (int q = 0; q < ctx->npsets; q++) {
        pset *pq = &ctx->sets[q];
        if (!pq->gen || pq->kind != FLOE_SET_FLUID)
            continue;
        for (int t = 0; t < ctx->npsets; t++) {
            pq->ksum_ok[t] = 0;
            if (nbs_list(&c->s, first[q], pq->n, first[t], ctx->sets[t].gen ? ctx->sets[t].n : 0, &pq->lists[t]))
                return ctx_fail(ctx, FLOE_ERR_NOMEM, "neighbours: out of memory for lists of '%s'", pq->name);
        }
    }
    ctx->ksums_valid = 0;
    ctx->nb_valid = 1;
    ctx->nb_updates++;
    return FLOE_OK;
}

int floe_bench_neighbours_method(uint32_t n, int dim, int threads, int iters, const char *method,
                                 const char *layout, double *updates_per_s, double *sort_ms, double *build_ms,
                                 double *avg_neighbours)
{
    if (!method || !layout || (strcmp(method, "cells") && strcmp(method, "sorted_keys")) ||
        (strcmp(layout, "uniform") && strcmp(layout, "sparse")))
        return FLOE_ERR_ARG;
    return nbs_bench(n, dim, threads, iters, method[0] == 's', layout[0] == 's', updates_per_s, sort_ms, build_ms,
                     avg_neighbours)
               ? FLOE_ERR
               : FLOE_OK;
}
