/* Probes: measurements a scene declares, written as CSV tables beside the
 * frames (docs/lua-api.md, "Probes").
 *
 *   points  SPH interpolation of fluid attributes at fixed points, with the
 *           kernel-sum (Shepard) normalisation of DualSPHysics' gauges and
 *           MeasureTool:  A(x) = sum_j V_j A_j W(x - x_j) / sum_j V_j W(x - x_j),
 *           V_j = m_j / rho_j. The kernel sum itself is a column (ksum_k):
 *           about 1 inside the fluid, 0.5 at a wall or the free surface; a
 *           point whose sum is below 0.1 is dry and reads nan.
 *   height  water-height gauges: along the up axis (against gravity) at a
 *           gauge's other coordinates, the kernel sum sampled every d/4 from
 *           the bottom of the domain; the height is the first level above
 *           the first wet sample where the sum falls below `threshold`
 *           (0.5, linear between samples; DualSPHysics' GaugeSwl).
 *   front   the fluid's furthest extent along an axis, the outermost
 *           particle's coordinate plus d/2 (or minus, direction -1); with
 *           min_neighbours > 0 the outermost particle that has that many
 *           other fluid particles within 1.5 d (a droplet ahead of a surge
 *           is not its front; the solver tests' rule).
 *   force   the pressure force the fluid exerts on a boundary set through
 *           Akinci boundary particles, the reaction of the force the solver
 *           puts on the fluid: F = sum_b sum_i m_i psi_b (p_i + p_b) / rho_i^2
 *           grad_i W_ib, psi_b = rho0_i V_b, with the wall pressure p_b the
 *           solver assumes: p_i mirrored (wcsph, iisph mirror), 0 (Akinci's
 *           force: dfsph, iisph akinci) or p_i + rho_i g.(x_b - x_i) where
 *           p_i > 0 (iisph's extrapolate).
 *
 * A probe samples after every output frame (and at frame 0), or at its own
 * rate (samples per second, taken after the first step at or past each
 * sample time). Its table lives in memory and is written whole to
 * <name>.probe.csv in the run's folder after every frame, through the atomic
 * writer of the frames (temporary file, rename): a run stopped at any
 * moment leaves complete tables of the samples up to its last frame.
 *
 * Neighbours of a probe point come from a cell grid of edge H over every
 * fluid particle, built here at each sample: the pipeline's lists describe
 * the positions at the start of the step and belong to the modules.
 *
 * Under MPI (docs/mpi.md) each rank sums over the particles it owns (not
 * its ghosts) and the sums are added over every rank (dd_reduce): a
 * point's kernel sum and weighted attributes, a gauge's kernel sums up its
 * column (in chunks of HEIGHT_CHUNK levels, so that every rank stops at
 * the same level), a wall's force; the front's outermost particle is the
 * largest over the ranks (ties: the least id, in one process too), and its
 * neighbour count a sum. Rank 0 writes the tables. */
#include "probes.h"
#include "decomp.h"
#include "device.h"

#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_PROBES 64
#define PROBE_MAX_ATTRS 8
#define PROBE_NAME 64
#define DRY_KSUM 0.1 /* a point probe with a kernel sum below this reads nan */

typedef struct probe {
    char name[PROBE_NAME];
    int kind;
    int npoints;
    float (*points)[3];
    char attrs[PROBE_MAX_ATTRS][NAME_LEN];
    int nattrs;
    int axis, direction, min_nb;
    char set[NAME_LEN];
    int wall;
    double rate, threshold;
    double t0, tscale, scale; /* units of the table */
    char *reference;        /* measured data to compare with, or NULL */
    double next_t;          /* own rate: next sample time */
    uint64_t k;             /* own rate: samples taken this run */
    char *buf;              /* the table so far */
    size_t len, cap;
    int failed;             /* out of memory: stops appending */
} probe;

/* the fluid particles sorted by cell (rebuilt at every sample) */
typedef struct pgrid {
    int n[3];
    float lo[3], inv;
    uint32_t *start;        /* cells + 1 */
    uint32_t *ref;          /* sorted by cell: particle index */
    uint8_t *rset;          /* and its set's slot in ctx->sets */
    float *rec;             /* and its x, y, z and volume m / rho, 4 floats a slot */
    uint32_t cap, cells_cap;
} pgrid;

struct probes {
    probe p[MAX_PROBES];
    int n;
    int dirfd;
    const char *dirname;
    double t0;
    pgrid g;
};

static void pgrid_free(pgrid *g)
{
    free(g->start);
    free(g->ref);
    free(g->rset);
    free(g->rec);
    memset(g, 0, sizeof *g);
}

void probes_free(floe_ctx *ctx)
{
    struct probes *P = ctx->probes;
    if (!P)
        return;
    for (int i = 0; i < P->n; i++) {
        free(P->p[i].points);
        free(P->p[i].buf);
        free(P->p[i].reference);
    }
    pgrid_free(&P->g);
    free(P);
    ctx->probes = NULL;
}

/* ---- declaring ------------------------------------------------------------ */

static int name_ok(const char *s)
{
    if (!s || !s[0] || strlen(s) >= PROBE_NAME - 4)
        return 0;
    for (const char *c = s; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' ||
              *c == '-'))
            return 0;
    return 1;
}

int floe_probe_add(floe_ctx *ctx, const floe_probe_def *d)
{
    if (!d)
        return ctx_fail(ctx, FLOE_ERR_ARG, "probe: no definition");
    if (!name_ok(d->name) || !strcmp(d->name, "probes"))
        return ctx_fail(ctx, FLOE_ERR_ARG, "probe: name '%s' must be 1-59 letters, digits, '_' or '-' (it names "
                        "the file NAME.probe.csv)", d->name ? d->name : "(null)");
    if (d->kind < FLOE_PROBE_POINTS || d->kind > FLOE_PROBE_FORCE)
        return ctx_fail(ctx, FLOE_ERR_ARG, "probe '%s': unknown kind %d", d->name, d->kind);
    if (!isfinite(d->time_origin) || !isfinite(d->time_scale) || !isfinite(d->scale))
        return ctx_fail(ctx, FLOE_ERR_ARG, "probe '%s': time_origin, time_scale and scale must be finite", d->name);
    if (d->reference && (strchr(d->reference, ',') || strchr(d->reference, '\n')))
        return ctx_fail(ctx, FLOE_ERR_ARG, "probe '%s': the reference path may not hold ',' or a line break", d->name);
    if (!(d->rate >= 0) || !isfinite(d->rate))
        return ctx_fail(ctx, FLOE_ERR_ARG, "probe '%s': rate must be >= 0 samples per second", d->name);
    struct probes *P = ctx->probes;
    for (int i = 0; P && i < P->n; i++)
        if (!strcmp(P->p[i].name, d->name))
            return ctx_fail(ctx, FLOE_ERR_ARG, "probe '%s' is declared twice", d->name);
    if (P && P->n >= MAX_PROBES)
        return ctx_fail(ctx, FLOE_ERR_ARG, "probe '%s': at most %d probes", d->name, MAX_PROBES);
    const int needs_points = d->kind == FLOE_PROBE_POINTS || d->kind == FLOE_PROBE_HEIGHT;
    if (needs_points && (d->npoints < 1 || d->npoints > 100000 || !d->points))
        return ctx_fail(ctx, FLOE_ERR_ARG, "probe '%s': give 1 to 100000 points", d->name);
    if (d->nattrs < 0 || d->nattrs > PROBE_MAX_ATTRS)
        return ctx_fail(ctx, FLOE_ERR_ARG, "probe '%s': at most %d attributes", d->name, PROBE_MAX_ATTRS);
    for (int a = 0; a < d->nattrs; a++)
        if (!d->attrs[a] || !d->attrs[a][0] || strlen(d->attrs[a]) >= NAME_LEN)
            return ctx_fail(ctx, FLOE_ERR_ARG, "probe '%s': attribute %d has no valid name", d->name, a + 1);
    if (d->kind == FLOE_PROBE_FRONT && (d->axis < 0 || d->axis >= ctx->info.dim || (d->direction != 1 && d->direction != -1)))
        return ctx_fail(ctx, FLOE_ERR_ARG, "probe '%s': front needs an axis of the sim (x, y%s) and direction +1 "
                        "or -1", d->name, ctx->info.dim == 3 ? ", z" : "");
    if (d->kind == FLOE_PROBE_FORCE) {
        pset *p = d->set ? ctx_set(ctx, floe_set_find(ctx, d->set)) : NULL;
        if (!p || p->kind != FLOE_SET_BOUNDARY)
            return ctx_fail(ctx, FLOE_ERR_ARG, "probe '%s': force needs a boundary set (set = '%s' is none)",
                            d->name, d->set ? d->set : "");
        if (d->wall < FLOE_WALL_MIRROR || d->wall > FLOE_WALL_EXTRAPOLATE)
            return ctx_fail(ctx, FLOE_ERR_ARG, "probe '%s': unknown wall pressure %d", d->name, d->wall);
    }
    if (d->kind == FLOE_PROBE_HEIGHT && !(d->threshold >= 0 && d->threshold < 1))
        return ctx_fail(ctx, FLOE_ERR_ARG, "probe '%s': threshold must be in (0, 1)", d->name);
    if (!P) {
        P = calloc(1, sizeof *P);
        if (!P)
            return ctx_fail(ctx, FLOE_ERR_NOMEM, "probe: out of memory");
        P->dirfd = -1;
        ctx->probes = P;
    }
    probe *q = &P->p[P->n];
    memset(q, 0, sizeof *q);
    snprintf(q->name, sizeof q->name, "%s", d->name);
    q->kind = d->kind;
    if (needs_points) {
        q->points = malloc((size_t)d->npoints * sizeof *q->points);
        if (!q->points)
            return ctx_fail(ctx, FLOE_ERR_NOMEM, "probe: out of memory");
        memcpy(q->points, d->points, (size_t)d->npoints * sizeof *q->points);
        q->npoints = d->npoints;
    }
    if (d->kind == FLOE_PROBE_POINTS) {
        q->nattrs = d->nattrs ? d->nattrs : 1;
        for (int a = 0; a < q->nattrs; a++)
            snprintf(q->attrs[a], NAME_LEN, "%s", d->nattrs ? d->attrs[a] : "p");
    }
    q->axis = d->axis;
    q->direction = d->direction;
    q->min_nb = d->min_neighbours > 0 ? d->min_neighbours : 0;
    snprintf(q->set, sizeof q->set, "%s", d->set ? d->set : "");
    q->wall = d->wall;
    q->rate = d->rate;
    q->threshold = d->threshold > 0 ? d->threshold : 0.5;
    q->t0 = d->time_origin;
    q->tscale = d->time_scale != 0 ? d->time_scale : 1.0;
    q->scale = d->scale != 0 ? d->scale : 1.0;
    if (d->reference && d->reference[0] && !(q->reference = strdup(d->reference)))
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "probe: out of memory");
    P->n++;
    return FLOE_OK;
}

/* ---- the table -------------------------------------------------------------- */

static void put(probe *q, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(probe *q, const char *fmt, ...)
{
    if (q->failed)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(q->buf ? q->buf + q->len : NULL, q->buf ? q->cap - q->len : 0, fmt, ap);
        va_end(ap);
        if (k < 0) {
            q->failed = 1;
            return;
        }
        if (q->buf && q->len + (size_t)k < q->cap) {
            q->len += (size_t)k;
            return;
        }
        size_t cap = q->cap ? 2 * q->cap : 4096;
        while (cap < q->len + (size_t)k + 1)
            cap *= 2;
        char *b = realloc(q->buf, cap);
        if (!b) {
            q->failed = 1;
            return;
        }
        q->buf = b;
        q->cap = cap;
    }
}

static const char *const AXIS = "xyz";

static void header(floe_ctx *ctx, probe *q)
{
    q->len = 0;
    q->failed = 0;
    put(q, "time");
    const int dim = ctx->info.dim;
    switch (q->kind) {
    case FLOE_PROBE_POINTS:
        for (int k = 0; k < q->npoints; k++) {
            for (int a = 0; a < q->nattrs; a++) {
                /* the type is looked up on the first fluid set carrying it */
                floe_type t = FLOE_F32;
                for (int s = 0; s < ctx->npsets; s++) {
                    attr *at = ctx->sets[s].kind == FLOE_SET_FLUID ? pset_attr(&ctx->sets[s], q->attrs[a]) : NULL;
                    if (at) {
                        t = at->type;
                        break;
                    }
                }
                if (t == FLOE_VEC3)
                    for (int c = 0; c < dim; c++)
                        put(q, ",%s_%c_%d", q->attrs[a], AXIS[c], k);
                else
                    put(q, ",%s_%d", q->attrs[a], k);
            }
            put(q, ",ksum_%d", k);
        }
        break;
    case FLOE_PROBE_HEIGHT:
        for (int k = 0; k < q->npoints; k++)
            put(q, ",height_%d", k);
        break;
    case FLOE_PROBE_FRONT:
        put(q, ",front_%c", AXIS[q->axis]);
        break;
    case FLOE_PROBE_FORCE:
        for (int c = 0; c < dim; c++)
            put(q, ",F%c", AXIS[c]);
        break;
    }
    put(q, "\n");
}

/* q's table as the file `file` (NULL: NAME.probe.csv) */
static int write_table(floe_ctx *ctx, struct probes *P, probe *q, const char *as)
{
    if (P->dirfd < 0)
        return FLOE_OK;
    if (q->failed)
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "probe '%s': out of memory for its table", q->name);
    char file[PROBE_NAME + 16];
    snprintf(file, sizeof file, "%s", as ? as : "");
    if (!as)
        snprintf(file, sizeof file, "%s.probe.csv", q->name);
    io_atomic a;
    if (io_atomic_openat(&a, P->dirfd, file) != 0)
        return ctx_fail(ctx, FLOE_ERR_IO, "cannot write %s/%s: %s", P->dirname, file, strerror(errno));
    if (q->len && fwrite(q->buf, 1, q->len, a.f) != q->len) {
        io_atomic_abort(&a);
        return ctx_fail(ctx, FLOE_ERR_IO, "cannot write %s/%s: %s", P->dirname, file, strerror(errno));
    }
    if (io_atomic_commit(&a) != 0)
        return ctx_fail(ctx, FLOE_ERR_IO, "cannot write %s/%s: %s", P->dirname, file, strerror(errno));
    return FLOE_OK;
}

/* ---- the particle grid ------------------------------------------------------- */

static int cell_of(const pgrid *g, const float *x, int c[3])
{
    for (int k = 0; k < 3; k++) {
        int v = (int)floorf((x[k] - g->lo[k]) * g->inv);
        c[k] = v < 0 ? 0 : (v >= g->n[k] ? g->n[k] - 1 : v);
    }
    return (c[2] * g->n[1] + c[1]) * g->n[0] + c[0];
}

static int grid_build(floe_ctx *ctx, pgrid *g)
{
    const float H = ctx->info.support;
    size_t cells = 1, total = 0;
    g->inv = 1.0f / H;
    for (int k = 0; k < 3; k++) {
        g->lo[k] = ctx->info.domain_min[k];
        double ext = (double)ctx->info.domain_max[k] - ctx->info.domain_min[k];
        g->n[k] = k < ctx->info.dim ? (int)fmin(ceil(ext / H) + 1, 4096) : 1;
        cells *= (size_t)g->n[k];
    }
    for (int s = 0; s < ctx->npsets; s++)
        if (ctx->sets[s].kind == FLOE_SET_FLUID)
            total += dd_owned(ctx, &ctx->sets[s]); /* MPI: not the ghosts, other ranks' */
    if (total >= UINT32_MAX || cells >= UINT32_MAX)
        return ctx_fail(ctx, FLOE_ERR_ARG, "probes: too many particles or grid cells");
    if (cells + 1 > g->cells_cap) {
        free(g->start);
        g->start = malloc((cells + 1) * sizeof *g->start);
        g->cells_cap = g->start ? (uint32_t)(cells + 1) : 0;
    }
    if (total > g->cap || !g->ref) {
        free(g->ref);
        free(g->rset);
        free(g->rec);
        g->ref = malloc((total + 1) * sizeof *g->ref);
        g->rset = malloc(total + 1);
        g->rec = malloc(4 * (total + 1) * sizeof *g->rec);
        g->cap = (uint32_t)total;
    }
    if (!g->start || !g->ref || !g->rset || !g->rec)
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "probes: out of memory");
    memset(g->start, 0, (cells + 1) * sizeof *g->start);
    int c[3];
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        if (p->kind != FLOE_SET_FLUID)
            continue;
        dev_host_set(ctx, p, 0); /* OpenCL: the host copies, up to date */
        const float *x = pset_attr(p, "x")->data;
        for (uint32_t i = 0, n = dd_owned(ctx, p); i < n; i++)
            g->start[cell_of(g, x + 3 * i, c) + 1]++;
    }
    for (size_t k = 0; k < cells; k++)
        g->start[k + 1] += g->start[k];
    /* fill: a second pass with running offsets (start[k] moves to the end
     * of cell k, then is shifted back) */
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        if (p->kind != FLOE_SET_FLUID)
            continue;
        const float *x = pset_attr(p, "x")->data, *m = pset_attr(p, "m")->data;
        attr *ra = pset_attr(p, "rho");
        const float *rho = ra ? ra->data : NULL;
        /* V_j = m_j / rho_j (rest density where rho is absent or not positive) */
        const float rho0 = p->rest_density > 0 ? p->rest_density : 1.0f;
        for (uint32_t i = 0, n = dd_owned(ctx, p); i < n; i++) {
            uint32_t slot = g->start[cell_of(g, x + 3 * i, c)]++;
            g->ref[slot] = i;
            g->rset[slot] = (uint8_t)s;
            const float r = rho && rho[i] > 0.0f ? rho[i] : rho0;
            float *rc = g->rec + 4 * (size_t)slot;
            rc[0] = x[3 * i], rc[1] = x[3 * i + 1], rc[2] = x[3 * i + 2], rc[3] = m[i] / r;
        }
    }
    for (size_t k = cells; k > 0; k--)
        g->start[k] = g->start[k - 1];
    g->start[0] = 0;
    return FLOE_OK;
}

/* Runs BODY(set slot, index, r2, dx, V) for every fluid particle within H
 * of pos (dx = pos - x_j, V = m_j / rho_j). */
#define FOR_NEAR(ctx, g, pos, BODY)                                                            \
    do {                                                                                       \
        int c_[3];                                                                             \
        cell_of(g, pos, c_);                                                                   \
        const float H2_ = (ctx)->info.support * (ctx)->info.support;                           \
        for (int z_ = c_[2] - 1; z_ <= c_[2] + 1; z_++)                                        \
            for (int y_ = c_[1] - 1; y_ <= c_[1] + 1; y_++)                                    \
                for (int x_ = c_[0] - 1; x_ <= c_[0] + 1; x_++) {                              \
                    if (x_ < 0 || y_ < 0 || z_ < 0 || x_ >= (g)->n[0] || y_ >= (g)->n[1] ||    \
                        z_ >= (g)->n[2])                                                       \
                        continue;                                                              \
                    const int cell_ = (z_ * (g)->n[1] + y_) * (g)->n[0] + x_;                  \
                    for (uint32_t k_ = (g)->start[cell_]; k_ < (g)->start[cell_ + 1]; k_++) {  \
                        const float *xj_ = (g)->rec + 4 * (size_t)k_;                          \
                        const float dx_[3] = {pos[0] - xj_[0], pos[1] - xj_[1], pos[2] - xj_[2]}; \
                        const float r2_ = dx_[0] * dx_[0] + dx_[1] * dx_[1] + dx_[2] * dx_[2];   \
                        if (r2_ >= H2_)                                                        \
                            continue;                                                          \
                        BODY((g)->rset[k_], (g)->ref[k_], r2_, dx_, xj_[3]);                   \
                    }                                                                          \
                }                                                                              \
    } while (0)

/* the kernel sum sum_j V_j W(pos - x_j) */
static double kernel_sum(floe_ctx *ctx, const pgrid *g, const float pos[3], const floe_kernel *K)
{
    double s = 0;
#define KS(set, j, r2, dx, V) s += (double)(V) * K->sigma * floe_w_hat(K->inv_H, r2)
    FOR_NEAR(ctx, g, pos, KS);
#undef KS
    return s;
}

/* ---- sampling ------------------------------------------------------------------ */

static int sample_points(floe_ctx *ctx, const pgrid *g, probe *q, const floe_kernel *K)
{
    const int dim = ctx->info.dim;
    attr *ap[PROBE_MAX_ATTRS][MAX_SETS]; /* the attributes of every set, looked up once */
    for (int a = 0; a < q->nattrs; a++)
        for (int s = 0; s < ctx->npsets; s++)
            ap[a][s] = ctx->sets[s].kind == FLOE_SET_FLUID ? pset_attr(&ctx->sets[s], q->attrs[a]) : NULL;
    /* per point: the kernel sum, then 3 sums per attribute (MPI: added
     * over the ranks before they are divided) */
    const size_t per = 1 + 3 * (size_t)q->nattrs;
    double *sums = calloc((size_t)q->npoints * per + 1, sizeof *sums);
    if (!sums)
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "probe '%s': out of memory", q->name);
    for (int k = 0; k < q->npoints; k++) {
        const float *pos = q->points[k];
        double *ks = sums + (size_t)k * per, *acc = ks + 1;
#define ACC(set, j, r2, dx, V)                                                        \
    do {                                                                              \
        const double w = (double)(V) * K->sigma * floe_w_hat(K->inv_H, r2);           \
        *ks += w;                                                                     \
        for (int a = 0; a < q->nattrs; a++) {                                         \
            const attr *at = ap[a][set];                                              \
            if (!at)                                                                  \
                continue;                                                             \
            const float *v = at->data;                                                \
            if (at->type == FLOE_VEC3)                                                \
                for (int c = 0; c < 3; c++)                                           \
                    acc[3 * a + c] += w * v[3 * (size_t)j + c];                       \
            else if (at->type == FLOE_F32)                                            \
                acc[3 * a] += w * v[j];                                               \
        }                                                                             \
    } while (0)
        FOR_NEAR(ctx, g, pos, ACC);
#undef ACC
    }
    int rc = dd_reduce(ctx, sums, (int)((size_t)q->npoints * per), FLOE_REDUCE_SUM);
    for (int k = 0; k < q->npoints && !rc; k++) {
        const double ks = sums[(size_t)k * per], *acc = sums + (size_t)k * per + 1;
        for (int a = 0; a < q->nattrs; a++) {
            floe_type t = FLOE_F32;
            for (int s = 0; s < ctx->npsets; s++) {
                attr *at = ctx->sets[s].kind == FLOE_SET_FLUID ? pset_attr(&ctx->sets[s], q->attrs[a]) : NULL;
                if (at) {
                    t = at->type;
                    break;
                }
            }
            const int nc = t == FLOE_VEC3 ? dim : 1;
            for (int c = 0; c < nc; c++) {
                if (ks < DRY_KSUM)
                    put(q, ",nan");
                else
                    put(q, ",%.9g", q->scale * acc[3 * a + c] / ks);
            }
        }
        put(q, ",%.6g", ks);
    }
    free(sums);
    return rc;
}

/* the up axis: against the largest component of gravity (y when none) */
static int up_axis(floe_ctx *ctx, int *sign)
{
    int ax = 1;
    float best = 0;
    for (int k = 0; k < ctx->info.dim; k++)
        if (fabsf(ctx->info.gravity[k]) > best)
            best = fabsf(ctx->info.gravity[k]), ax = k;
    *sign = best > 0 && ctx->info.gravity[ax] > 0 ? -1 : 1;
    return ax;
}

#define HEIGHT_CHUNK 64 /* a gauge's levels summed (and under MPI added over the ranks) at a time */

static int sample_height(floe_ctx *ctx, const pgrid *g, probe *q, const floe_kernel *K)
{
    int sign;
    const int up = up_axis(ctx, &sign);
    const double lo = ctx->info.domain_min[up], hi = ctx->info.domain_max[up], step = 0.25 * ctx->info.spacing;
    const int ns = (int)ceil((hi - lo) / step);
    for (int k = 0; k < q->npoints; k++) {
        float pos[3] = {q->points[k][0], q->points[k][1], q->points[k][2]};
        double h = NAN, prev_s = 0, prev_y = 0;
        int wet = 0, done = 0;
        for (int i0 = 0; i0 <= ns && !done; i0 += HEIGHT_CHUNK) {
            /* from the bottom (against gravity's direction) up */
            const int m = ns + 1 - i0 < HEIGHT_CHUNK ? ns + 1 - i0 : HEIGHT_CHUNK;
            double s[HEIGHT_CHUNK], y[HEIGHT_CHUNK];
            for (int i = 0; i < m; i++) {
                y[i] = sign > 0 ? lo + (i0 + i) * step : hi - (i0 + i) * step;
                pos[up] = (float)y[i];
                s[i] = kernel_sum(ctx, g, pos, K);
            }
            int rc = dd_reduce(ctx, s, m, FLOE_REDUCE_SUM); /* every rank: the same sums, the same level */
            if (rc)
                return rc;
            for (int i = 0; i < m; i++) {
                if (!wet) {
                    wet = s[i] >= q->threshold;
                } else if (s[i] < q->threshold) {
                    const double f = (prev_s - q->threshold) / (prev_s - s[i]);
                    h = prev_y + f * (y[i] - prev_y);
                    done = 1;
                    break;
                }
                prev_s = s[i];
                prev_y = y[i];
            }
        }
        put(q, isnan(h) ? ",nan" : ",%.9g", q->scale * h);
    }
    return FLOE_OK;
}

/* fluid particles within 1.5 d of (x, y, z), the particle itself included
 * (MPI: over every rank's) */
static int count_near(floe_ctx *ctx, const float c[3], uint32_t *count)
{
    const double r2 = 2.25 * (double)ctx->info.spacing * ctx->info.spacing;
    uint32_t cnt = 0;
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        if (p->kind != FLOE_SET_FLUID)
            continue;
        const float *x = pset_attr(p, "x")->data;
        for (uint32_t i = 0, n = dd_owned(ctx, p); i < n; i++) {
            const double dx = x[3 * i] - c[0], dy = x[3 * i + 1] - c[1], dz = x[3 * i + 2] - c[2];
            cnt += dx * dx + dy * dy + dz * dz <= r2;
        }
    }
    double v = cnt;
    int rc = dd_reduce(ctx, &v, 1, FLOE_REDUCE_SUM);
    *count = (uint32_t)v;
    return rc;
}

/* The outermost particle along the axis (direction +1: the largest
 * coordinate) among those beyond `limit` (strictly inside it), of the
 * least id where several share the coordinate: its coordinate and
 * position in *best and at; *found 0 when there is none. Under MPI over
 * every rank's particles (three reductions: the coordinate, the id, the
 * position). */
static int outermost(floe_ctx *ctx, const probe *q, double limit, double *best, float at[3], int *found)
{
    const int dir = q->direction;
    double v_best = -INFINITY, id_best = INFINITY; /* v_best: coordinate times direction */
    double pos[3] = {0, 0, 0};
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        if (p->kind != FLOE_SET_FLUID)
            continue;
        const float *x = pset_attr(p, "x")->data;
        const attr *ida = pset_attr(p, "id");
        const uint32_t *id = ida && ida->type == FLOE_U32 ? ida->data : NULL;
        for (uint32_t i = 0, n = dd_owned(ctx, p); i < n; i++) {
            const double v = x[3 * i + q->axis], dv = dir * v;
            if (!(dir > 0 ? v < limit : v > limit))
                continue;
            const double idv = id ? (double)id[i] : (double)i;
            if (dv > v_best || (dv == v_best && idv < id_best)) {
                v_best = dv, id_best = idv;
                for (int k = 0; k < 3; k++)
                    pos[k] = x[3 * i + k];
            }
        }
    }
    if (ctx->dd) {
        double g = v_best, gid;
        int rc = dd_reduce(ctx, &g, 1, FLOE_REDUCE_MAX);
        gid = v_best == g ? id_best : INFINITY;
        if (!rc)
            rc = dd_reduce(ctx, &gid, 1, FLOE_REDUCE_MIN);
        if (!(v_best == g && id_best == gid))
            pos[0] = pos[1] = pos[2] = 0;
        if (!rc)
            rc = dd_reduce(ctx, pos, 3, FLOE_REDUCE_SUM); /* the one rank that holds it adds its position */
        if (rc)
            return rc;
        v_best = g;
    }
    *found = v_best > -INFINITY;
    *best = dir * v_best;
    for (int k = 0; k < 3; k++)
        at[k] = (float)pos[k];
    return FLOE_OK;
}

static int sample_front(floe_ctx *ctx, probe *q)
{
    for (int s = 0; s < ctx->npsets; s++)
        if (ctx->sets[s].kind == FLOE_SET_FLUID)
            dev_host_set(ctx, &ctx->sets[s], 0);
    double best = 0, limit = q->direction > 0 ? INFINITY : -INFINITY;
    float at[3];
    int found, rc = outermost(ctx, q, limit, &best, at, &found);
    if (rc)
        return rc;
    if (!found) {
        put(q, ",nan");
        return FLOE_OK;
    }
    /* with min_neighbours: inwards, particle by particle, up to 64 of them
     * (then the 64th stands: a spray that wide is the front) */
    for (int tries = 1; q->min_nb > 0 && tries < 64; tries++) {
        uint32_t near;
        if ((rc = count_near(ctx, at, &near)))
            return rc;
        if (near >= (uint32_t)q->min_nb + 1)
            break;
        double next;
        if ((rc = outermost(ctx, q, best, &next, at, &found)))
            return rc;
        if (!found)
            break;
        best = next;
    }
    put(q, ",%.9g", q->scale * (best + 0.5 * q->direction * ctx->info.spacing));
    return FLOE_OK;
}

static int sample_force(floe_ctx *ctx, const pgrid *g, probe *q, const floe_kernel *K)
{
    pset *b = ctx_set(ctx, floe_set_find(ctx, q->set));
    if (!b)
        return ctx_fail(ctx, FLOE_ERR_ARG, "probe '%s': the boundary set '%s' is gone", q->name, q->set);
    dev_host_set(ctx, b, 0);
    const float *xb = pset_attr(b, "x")->data;
    attr *Va = pset_attr(b, "V");
    if (!Va)
        return ctx_fail(ctx, FLOE_ERR_ARG, "probe '%s': the boundary set '%s' has no volumes V", q->name, q->set);
    const float *V = Va->data;
    const float rmin2 = 1e-12f * ctx->info.support * ctx->info.support;
    const float gk = K->sigma * K->inv_H;
    const float *gv = ctx->info.gravity;
    /* p, rho, m and rest density of every fluid set, looked up once */
    const float *pp[MAX_SETS] = {0}, *rr[MAX_SETS] = {0}, *mm[MAX_SETS] = {0};
    double rho0[MAX_SETS] = {0};
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        attr *pa = p->kind == FLOE_SET_FLUID ? pset_attr(p, "p") : NULL, *ra = pa ? pset_attr(p, "rho") : NULL;
        if (!pa || !ra)
            continue; /* no pressure: no force */
        pp[s] = pa->data, rr[s] = ra->data, mm[s] = pset_attr(p, "m")->data;
        rho0[s] = p->rest_density;
    }
    double F[3] = {0, 0, 0};
    for (uint32_t bi = 0; bi < b->n; bi++) {
        const float *pos = xb + 3 * bi;
#define FB(set, j, r2, dx, Vj)                                                                  \
    do {                                                                                        \
        if (!pp[set])                                                                           \
            break;                                                                              \
        const float rho = rr[set][j], pr = pp[set][j];                                          \
        if (!(rho > 0))                                                                         \
            break;                                                                              \
        const double m = mm[set][j];                                                            \
        double pb = q->wall == FLOE_WALL_MIRROR ? pr : 0.0;                                     \
        if (q->wall == FLOE_WALL_EXTRAPOLATE && pr > 0)                                         \
            pb = pr + rho * (gv[0] * dx[0] + gv[1] * dx[1] + gv[2] * dx[2]);                    \
        /* grad_i W_ib = dW/dr (x_i - x_b) / r; dx = x_b - x_i */                               \
        const double c = m * rho0[set] * V[bi] * (pr + pb) / ((double)rho * rho) *              \
                         floe_dw_r_hat(gk, K->inv_H, rmin2, r2);                                \
        for (int a = 0; a < 3; a++)                                                             \
            F[a] -= c * dx[a];                                                                  \
    } while (0)
        FOR_NEAR(ctx, g, pos, FB);
#undef FB
    }
    int rc = dd_reduce(ctx, F, 3, FLOE_REDUCE_SUM); /* MPI: each rank's fluid particles' part */
    for (int c = 0; c < ctx->info.dim && !rc; c++)
        put(q, ",%.9g", q->scale * F[c]);
    return rc;
}

static int sample(floe_ctx *ctx, struct probes *P, probe *q, int *grid_ready)
{
    const floe_kernel K = floe_kernel_make(ctx->info.dim, ctx->info.support);
    int rc = FLOE_OK;
    if (q->kind != FLOE_PROBE_FRONT && !*grid_ready) {
        if ((rc = grid_build(ctx, &P->g)) != FLOE_OK)
            return rc;
        *grid_ready = 1;
    }
    put(q, "%.9g", (ctx->info.time - q->t0) * q->tscale);
    switch (q->kind) {
    case FLOE_PROBE_POINTS: rc = sample_points(ctx, &P->g, q, &K); break;
    case FLOE_PROBE_HEIGHT: rc = sample_height(ctx, &P->g, q, &K); break;
    case FLOE_PROBE_FRONT: rc = sample_front(ctx, q); break;
    case FLOE_PROBE_FORCE: rc = sample_force(ctx, &P->g, q, &K); break;
    }
    put(q, "\n");
    return rc;
}

/* ---- the run's hooks ------------------------------------------------------------ */

/* A resumed run (floe run --resume) keeps the rows its table had before
 * time t (in the table's units): the header is made anew, the rows read
 * back from the file in the run's folder. */
static void keep_rows_before(struct probes *P, probe *q, double t)
{
    char file[PROBE_NAME + 16];
    snprintf(file, sizeof file, "%s.probe.csv", q->name);
    int fd = openat(P->dirfd, file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return;
    FILE *f = fdopen(fd, "r");
    if (!f) {
        close(fd);
        return;
    }
    char line[1 << 16];
    int first = 1;
    while (fgets(line, sizeof line, f)) {
        if (first) { /* the header, already made */
            first = 0;
            continue;
        }
        char *end;
        const double tr = strtod(line, &end);
        if (end == line || !strchr(line, '\n') || tr >= t - 1e-9 * fmax(1.0, fabs(t)))
            break;
        put(q, "%s", line);
    }
    fclose(f);
}

/* probes.csv: the tables of the run and what each compares with */
static int write_index(floe_ctx *ctx, struct probes *P)
{
    static const char *const kinds[] = {"", "points", "height", "front", "force"};
    probe idx;
    memset(&idx, 0, sizeof idx);
    snprintf(idx.name, sizeof idx.name, "probes");
    put(&idx, "name,kind,file,reference\n");
    for (int i = 0; i < P->n; i++)
        put(&idx, "%s,%s,%s.probe.csv,%s\n", P->p[i].name, kinds[P->p[i].kind], P->p[i].name,
            P->p[i].reference ? P->p[i].reference : "");
    const int rc = write_table(ctx, P, &idx, "probes.csv");
    free(idx.buf);
    return rc;
}

int probes_run_begin(floe_ctx *ctx, int dirfd, const char *name, int resumed)
{
    struct probes *P = ctx->probes;
    if (!P)
        return FLOE_OK;
    P->dirfd = dirfd;
    P->dirname = name ? name : ".";
    if (dirfd >= 0 && write_index(ctx, P) != FLOE_OK)
        return FLOE_ERR_IO;
    P->t0 = ctx->info.time;
    int grid_ready = 0, rc = FLOE_OK;
    for (int i = 0; i < P->n && !rc; i++) {
        probe *q = &P->p[i];
        header(ctx, q);
        if (resumed && dirfd >= 0)
            keep_rows_before(P, q, (ctx->info.time - q->t0) * q->tscale);
        q->k = 0;
        q->next_t = q->rate > 0 ? P->t0 + 1.0 / q->rate : 0;
        rc = sample(ctx, P, q, &grid_ready);
        if (!rc)
            rc = write_table(ctx, P, q, NULL);
    }
    return rc;
}

int probes_after_step(floe_ctx *ctx)
{
    struct probes *P = ctx->probes;
    if (!P)
        return FLOE_OK;
    int grid_ready = 0, rc = FLOE_OK;
    const double t = ctx->info.time;
    for (int i = 0; i < P->n && !rc; i++) {
        probe *q = &P->p[i];
        if (q->rate <= 0 || t < q->next_t - 1e-9 / q->rate)
            continue;
        rc = sample(ctx, P, q, &grid_ready);
        /* the next sample time after t (steps longer than 1/rate skip some) */
        q->k = (uint64_t)floor((t - P->t0) * q->rate + 1e-6) + 1;
        q->next_t = P->t0 + (double)q->k / q->rate;
    }
    return rc;
}

int probes_after_frame(floe_ctx *ctx)
{
    struct probes *P = ctx->probes;
    if (!P)
        return FLOE_OK;
    int grid_ready = 0, rc = FLOE_OK;
    for (int i = 0; i < P->n && !rc; i++) {
        probe *q = &P->p[i];
        if (q->rate <= 0)
            rc = sample(ctx, P, q, &grid_ready);
        if (!rc)
            rc = write_table(ctx, P, q, NULL);
    }
    return rc;
}

void probes_run_end(floe_ctx *ctx)
{
    if (ctx->probes)
        ctx->probes->dirfd = -1;
}
