/* Stage "splat" (Guay 2013, section 3): every particle adds its kernel
 *
 *     w(d, r) = (1 - d^2 / r^2)^3,   d = |x_cell - x_p|,  r = radius * h
 *
 * times its mass, and the kernel-weighted velocity, to the cells within r,
 * in one pass over the particles. The grid pass turns the sums into
 * rho = sigma sum_p m_p w and u = sum_p m_p w u_p / sum_p m_p w.
 *
 * Walls: the field is mirrored at the domain faces, as if a particle closer
 * than r to a wall had a mirror image (position reflected, normal velocity
 * negated), so the kernel support is complete at the walls (no spurious
 * pull towards them) and the ghost cells outside hold the mirrored field.
 * Walls on cell faces do it on the grid after the splat (fold_walls); the
 * others by splatting the images.
 *
 * Determinism: splatting is a scatter, so it is decomposed by slabs, not by
 * particles. The grid rows along the last axis (y in 2D, z in 3D) are cut
 * into one contiguous slab per thread; every thread walks over all particles
 * in a fixed order and writes only the part of each kernel that falls into its
 * own slab. Each cell is therefore written by exactly one thread, and sums
 * the particles in the same order whatever the number of threads or the
 * position of the cuts: the result is bit-identical for any thread count.
 * The cuts balance the particle count per slab (a histogram of the particle
 * rows, integer counts). The price is that each thread reads every
 * particle's position once (a few bytes per particle, against about 28
 * cells per particle in 2D and 113 in 3D for radius 3). */
#include "flip.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

typedef struct splat_src {
    const float *x, *v, *m;
    uint32_t n;
} splat_src;

/* The accumulator planes (SoA, x fastest). */
typedef struct planes {
    float *restrict M, *restrict U, *restrict V, *restrict W;
} planes;

#define FLIP_MAX_CHUNKS 3 /* radius <= 8 cells */
#define SPLAT_INTERLEAVE 16u

/* One row of a kernel: cells i0 .. i0 + 8 chunks - 1 of the row starting at
 * offset `row`; bx holds (x_cell - x_p)^2 / r^2 of those cells (the same for
 * every row of a particle), a = 1 - (dy^2 + dz^2) / r^2 of this row. Lanes
 * outside the radius get w = 0 (adding +-0 changes nothing). Fixed trip
 * counts, so the lanes vectorise. */
static inline void splat_row(const planes *p, size_t row, long i0, int chunks, const float *restrict bx, float a,
                             float m, float vx, float vy, float vz, int dim3)
{
    for (int ch = 0; ch < chunks; ch++) {
        const size_t b = row + (size_t)i0 + (size_t)(FLIP_LANES * ch);
        const float *restrict bc = bx + FLIP_LANES * ch;
        float *restrict M = p->M + b, *restrict U = p->U + b, *restrict V = p->V + b, *restrict W = p->W + b;
        if (dim3) {
#pragma omp simd
            for (int l = 0; l < FLIP_LANES; l++) {
                float q = a - bc[l];
                q = 0.5f * (q + fabsf(q)); /* max(q, 0), branch-free */
                const float w = m * q * q * q;
                M[l] += w;
                U[l] += w * vx;
                V[l] += w * vy;
                W[l] += w * vz;
            }
        } else {
#pragma omp simd
            for (int l = 0; l < FLIP_LANES; l++) {
                float q = a - bc[l];
                q = 0.5f * (q + fabsf(q)); /* max(q, 0), branch-free */
                const float w = m * q * q * q;
                M[l] += w;
                U[l] += w * vx;
                V[l] += w * vy;
            }
        }
    }
}

static inline void row_terms(float *restrict bx, long i0, int chunks, float fx, float invR2)
{
    const float base = (float)i0 - fx;
    for (int ch = 0; ch < chunks; ch++)
#pragma omp simd
        for (int l = 0; l < FLIP_LANES; l++) {
            const float dx = base + (float)(FLIP_LANES * ch + l);
            bx[FLIP_LANES * ch + l] = dx * dx * invR2;
        }
}

/* first cell of a row window of `chunks` x 8 cells covering [f - R, f + R] */
static inline long window_start(float f, float R, long n, int chunks)
{
    long i0 = (long)floorf(f - R);
    const long last = n - (long)chunks * FLIP_LANES;
    i0 = i0 > last ? last : i0;
    return i0 < 0 ? 0 : i0;
}

/* Add one (possibly mirrored) particle to rows [r0, r1) of the slab axis. */
static inline void splat_2d(const flip_geom *g, const planes *p, long r0, long r1, const float xp[3],
                            const float vp[3], float m)
{
    const float R = g->radius, R2 = R * R, invR2 = 1.0f / R2;
    const float fx = (xp[0] - g->origin[0]) * g->inv_h, fy = (xp[1] - g->origin[1]) * g->inv_h;
    long j0 = (long)ceilf(fy - R), j1 = (long)floorf(fy + R);
    if (j0 < r0)
        j0 = r0;
    if (j1 > r1 - 1)
        j1 = r1 - 1;
    const long nx = (long)g->n[0];
    const long i0 = window_start(fx, R, nx, g->chunks);
    float bx[FLIP_LANES * FLIP_MAX_CHUNKS];
    row_terms(bx, i0, g->chunks, fx, invR2);
    for (long j = j0; j <= j1; j++) {
        const float dy = (float)j - fy;
        if (dy * dy >= R2)
            continue;
        splat_row(p, (size_t)j * (size_t)nx, i0, g->chunks, bx, 1.0f - dy * dy * invR2, m, vp[0], vp[1], 0.0f, 0);
    }
}

static inline void splat_3d(const flip_geom *g, const planes *p, long r0, long r1, const float xp[3],
                            const float vp[3], float m)
{
    const float R = g->radius, R2 = R * R, invR2 = 1.0f / R2;
    const float fx = (xp[0] - g->origin[0]) * g->inv_h, fy = (xp[1] - g->origin[1]) * g->inv_h,
                fz = (xp[2] - g->origin[2]) * g->inv_h;
    long k0 = (long)ceilf(fz - R), k1 = (long)floorf(fz + R);
    if (k0 < r0)
        k0 = r0;
    if (k1 > r1 - 1)
        k1 = r1 - 1;
    const long nx = (long)g->n[0], ny = (long)g->n[1];
    const long i0 = window_start(fx, R, nx, g->chunks);
    float bx[FLIP_LANES * FLIP_MAX_CHUNKS];
    row_terms(bx, i0, g->chunks, fx, invR2);
    for (long k = k0; k <= k1; k++) {
        const float dz = (float)k - fz, remz = R2 - dz * dz;
        if (remz <= 0.0f)
            continue;
        const float swz = sqrtf(remz);
        long j0 = (long)ceilf(fy - swz), j1 = (long)floorf(fy + swz);
        if (j0 < 0)
            j0 = 0;
        if (j1 > ny - 1)
            j1 = ny - 1;
        for (long j = j0; j <= j1; j++) {
            const float dy = (float)j - fy, dyz2 = dy * dy + dz * dz;
            if (dyz2 >= R2)
                continue;
            splat_row(p, ((size_t)k * (size_t)ny + (size_t)j) * (size_t)nx, i0, g->chunks, bx, 1.0f - dyz2 * invR2, m,
                      vp[0], vp[1], vp[2], 1);
        }
    }
}

/* Splat particle i and its wall images into rows [r0, r1). */
static inline void splat_particle(const flip_geom *g, const planes *acc, long r0, long r1, const float x[3],
                                  const float v[3], float m)
{
    const int dim = g->dim, a = dim - 1;
    const float rw = g->radius * g->h;
    /* quick reject on the slab axis, images included */
    const float fa = (x[a] - g->origin[a]) * g->inv_h;
    const int near_lo_a = !(g->fold & (1u << (2 * a))) && x[a] - g->lo[a] < rw;
    const int near_hi_a = !(g->fold & (2u << (2 * a))) && g->hi[a] - x[a] < rw;
    if (!near_lo_a && !near_hi_a && (fa + g->radius < (float)r0 || fa - g->radius > (float)(r1 - 1)))
        return;
    /* the common case: no image to splat */
    int images = 0;
    for (int k = 0; k < dim; k++)
        images |= (!(g->fold & (1u << (2 * k))) && x[k] - g->lo[k] < rw) |
                  (!(g->fold & (2u << (2 * k))) && g->hi[k] - x[k] < rw);
    if (!images) {
        if (dim == 2)
            splat_2d(g, acc, r0, r1, x, v, m);
        else
            splat_3d(g, acc, r0, r1, x, v, m);
        return;
    }
    /* choices per axis: 0 = as is, 1 = mirrored in the low face, 2 = in the high face */
    int nc[3] = {1, 1, 1};
    int ch[3][3] = {{0}, {0}, {0}};
    for (int k = 0; k < dim; k++) {
        if (!(g->fold & (1u << (2 * k))) && x[k] - g->lo[k] < rw)
            ch[k][nc[k]++] = 1;
        if (!(g->fold & (2u << (2 * k))) && g->hi[k] - x[k] < rw)
            ch[k][nc[k]++] = 2;
    }
    for (int c2 = 0; c2 < nc[2]; c2++)
        for (int c1 = 0; c1 < nc[1]; c1++)
            for (int c0 = 0; c0 < nc[0]; c0++) {
                const int sel[3] = {ch[0][c0], ch[1][c1], ch[2][c2]};
                float xp[3] = {x[0], x[1], x[2]}, vp[3] = {v[0], v[1], v[2]};
                for (int k = 0; k < dim; k++) {
                    if (sel[k] == 1) {
                        xp[k] = 2.0f * g->lo[k] - x[k];
                        vp[k] = -v[k];
                    } else if (sel[k] == 2) {
                        xp[k] = 2.0f * g->hi[k] - x[k];
                        vp[k] = -v[k];
                    }
                }
                if (dim == 2)
                    splat_2d(g, acc, r0, r1, xp, vp, m);
                else
                    splat_3d(g, acc, r0, r1, xp, vp, m);
            }
}

/* Walls on cell faces: what the particles splatted into the ghost cells
 * beyond the wall is what their mirror images would splat into the interior
 * cells mirrored across it (reflection maps cells onto cells), so fold it
 * there (normal momentum negated), then make the ghost cells the mirror of
 * the interior. Axes one after the other, so corners get the images of
 * images. Each iteration owns one (ghost, mirror) pair of cells. */
static void fold_walls(const flip_geom *g, const flip_box *box, float *acc)
{
    const size_t cells = g->cells;
    const long n0 = (long)g->n[0], n1 = (long)g->n[1], pad = (long)g->pad;
    (void)n0;
    const size_t stride[3] = {1, (size_t)n0, (size_t)n0 * (size_t)n1};
    for (int k = 0; k < g->dim; k++)
        for (int side = 0; side < 2; side++) {
            if (!(g->fold & (1u << (2 * k + side))))
                continue;
            /* only where the active box reaches this wall (it then spans the ghost layers) */
            if (side == 0 ? box->lo[k] > 0 : box->hi[k] < (long)g->n[k] - 1)
                continue;
            /* the ghost layers of this side over the box's extent on the two other axes */
            const int a1 = k == 0 ? 1 : 0, a2 = k == 2 ? 1 : 2;
            const long w1 = box->hi[a1] - box->lo[a1] + 1, w2 = box->hi[a2] - box->lo[a2] + 1;
            const long other = w1 * w2;
#pragma omp parallel for schedule(static) if (other * pad > 32768)
            for (long e = 0; e < other * pad; e++) {
                const long layer = e / other, o = e % other; /* layer 0 touches the wall */
                long idx[3];
                idx[a1] = box->lo[a1] + o % w1;
                idx[a2] = box->lo[a2] + o / w1;
                long ig, im; /* ghost and mirrored interior index along k */
                if (side == 0) {
                    ig = pad - 1 - layer;
                    im = pad + layer;
                } else {
                    ig = pad + (long)g->m[k] + layer;
                    im = pad + (long)g->m[k] - 1 - layer;
                }
                idx[k] = ig;
                const size_t cg = (size_t)idx[0] * stride[0] + (size_t)idx[1] * stride[1] + (size_t)idx[2] * stride[2];
                idx[k] = im;
                const size_t cm = (size_t)idx[0] * stride[0] + (size_t)idx[1] * stride[1] + (size_t)idx[2] * stride[2];
                for (int q = 0; q < 4; q++) {
                    float *P = acc + (size_t)q * cells;
                    const float sgn = q == 1 + k ? -1.0f : 1.0f;
                    const float sum = P[cm] + sgn * P[cg];
                    P[cm] = sum;
                    P[cg] = sgn * sum;
                }
            }
        }
}

static long slab_cut(const uint32_t *prefix, long nrows, size_t total, int t, int T)
{
    if (t <= 0)
        return 0;
    if (t >= T)
        return nrows;
    const double want = (double)total * t / T;
    for (long r = 0; r < nrows; r++)
        if ((double)prefix[r] >= want)
            return r;
    return nrows;
}

int flip_st_splat(const floe_stage_call *call)
{
    floe_ctx *ctx = call->ctx;
    flip_state *s = call->state;
    const floe_sim_info *si = flip_api->sim(ctx);
    int st;
    if (!s)
        return flip_api->fail(ctx, FLOE_ERR, "module state missing");
    if ((st = flip_grids_ensure(ctx, s, (float)call->param[SP_CELL].f, (float)call->param[SP_RADIUS].f)))
        return st;
    const flip_geom *g = &s->g;

    flip_fluid f[FLIP_MAX_SETS];
    int nf;
    if ((st = flip_list_fluids(ctx, f, &nf)))
        return st;
    splat_src src[FLIP_MAX_SETS];
    size_t total = 0;
    for (int i = 0; i < nf; i++) {
        src[i].n = f[i].info.n;
        src[i].x = flip_api->attr(ctx, f[i].set, "x", FLOE_VEC3);
        src[i].v = flip_api->attr(ctx, f[i].set, "v", FLOE_VEC3);
        src[i].m = flip_api->attr(ctx, f[i].set, "m", FLOE_F32);
        if (src[i].n && (!src[i].x || !src[i].v || !src[i].m))
            return flip_api->fail(ctx, FLOE_ERR_ARG, "fluid set '%s' lacks x, v or m", f[i].info.name);
        total += src[i].n;
    }

    /* particle bounds -> the active box; histogram of particle rows along
     * the slab axis (integer counts) */
    const int a = g->dim - 1;
    float bmin[3] = {INFINITY, INFINITY, INFINITY}, bmax[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (int i = 0; i < nf; i++)
        for (uint32_t p = 0; p < src[i].n; p++)
            for (int k = 0; k < g->dim; k++) {
                const float c = src[i].x[3 * p + k];
                bmin[k] = c < bmin[k] ? c : bmin[k];
                bmax[k] = c > bmax[k] ? c : bmax[k];
            }
    flip_box box;
    const long reach = 2 * (long)ceilf(g->radius) + 1;
    for (int k = 0; k < 3; k++) {
        const long n = (long)g->n[k];
        if (k >= g->dim || total == 0) {
            box.lo[k] = 0;
            box.hi[k] = k >= g->dim ? 0 : -1; /* empty */
            continue;
        }
        long lo = (long)floorf((bmin[k] - g->origin[k]) * g->inv_h) - reach;
        long hi = (long)ceilf((bmax[k] - g->origin[k]) * g->inv_h) + reach;
        /* near a wall: take the ghost layers and the folded band whole */
        if (lo < 2 * (long)g->pad + 1)
            lo = 0;
        if (hi > n - 2 - 2 * (long)g->pad)
            hi = n - 1;
        box.lo[k] = lo < 0 ? 0 : lo;
        box.hi[k] = hi > n - 1 ? n - 1 : hi;
    }
    s->box = box;
    const long row0 = box.lo[a], nrows = box.hi[a] - box.lo[a] + 1; /* the slab rows, offset row0 */
    if ((size_t)(nrows > 0 ? nrows : 0) + 1 > s->hist_cap) {
        uint32_t *nh = realloc(s->hist, ((size_t)nrows + 1) * sizeof *nh);
        if (!nh)
            return flip_api->fail(ctx, FLOE_ERR_NOMEM, "out of memory");
        s->hist = nh;
        s->hist_cap = (size_t)nrows + 1;
    }
    uint32_t *hist = s->hist;
    if (nrows > 0) {
        memset(hist, 0, ((size_t)nrows + 1) * sizeof *hist);
        for (int i = 0; i < nf; i++)
            for (uint32_t p = 0; p < src[i].n; p++) {
                long r = (long)((src[i].x[3 * p + a] - g->origin[a]) * g->inv_h + 0.5f) - row0;
                r = r < 0 ? 0 : (r >= nrows ? nrows - 1 : r);
                hist[r]++;
            }
        /* exclusive prefix sums: hist[r] = particles in rows < r */
        uint32_t run = 0;
        for (long r = 0; r <= nrows; r++) {
            uint32_t c = r < nrows ? hist[r] : 0;
            hist[r] = run;
            run += c;
        }
    }

    const size_t cells = g->cells;
    const planes acc = {s->acc, s->acc + cells, s->acc + 2 * cells, s->acc + 3 * cells};
    const size_t nx = g->n[0], ny = g->n[1];
    const long bw = box.hi[0] - box.lo[0] + 1;
#pragma omp parallel
    {
        int T = 1, tid = 0;
#ifdef _OPENMP
        T = omp_get_num_threads();
        tid = omp_get_thread_num();
#endif
        /* slab [cut(tid), cut(tid + 1)), cut(t) = the first row with at
         * least t/T of the particles below it: monotone, so the slabs tile
         * the box's rows; cut(0) = 0, cut(T) = nrows */
        const long r0 = row0 + slab_cut(hist, nrows, total, tid, T), r1 = row0 + slab_cut(hist, nrows, total, tid + 1, T);
        /* clear the box's cells of this slab */
        for (long r = r0; r < r1; r++) {
            const long j0 = a == 2 ? box.lo[1] : r, j1 = a == 2 ? box.hi[1] : r;
            for (long j = j0; j <= j1 && bw > 0; j++) {
                const size_t row = a == 2 ? ((size_t)r * ny + (size_t)j) * nx : (size_t)j * nx;
                for (int q = 0; q < 4; q++)
                    memset(s->acc + (size_t)q * cells + row + (size_t)box.lo[0], 0, (size_t)bw * sizeof(float));
            }
        }
        if (r1 > r0)
            for (int i = 0; i < nf; i++) {
                const float *restrict x = src[i].x, *restrict v = src[i].v, *restrict m = src[i].m;
                /* interleaved order (a fixed permutation, so still deterministic):
                 * neighbouring particles in memory overlap in the grid, and
                 * back-to-back overlapping vector read-modify-writes stall on
                 * store forwarding */
                for (uint32_t b = 0; b < SPLAT_INTERLEAVE; b++)
                    for (uint32_t p = b; p < src[i].n; p += SPLAT_INTERLEAVE)
                        splat_particle(g, &acc, r0, r1, x + 3 * p, v + 3 * p, m[p]);
            }
    }
    if (g->fold && total > 0)
        fold_walls(g, &box, s->acc);
    s->splat_step = si->step;
    s->splat_done = 1;
    return FLOE_OK;
}
