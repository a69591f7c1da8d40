/* Helpers for a module's OpenCL path (header only: modules do not link
 * against the core, so everything goes through the floe_api table passed
 * in). Used by the run_cl functions of the particle modules (sph, wcsph,
 * iisph, viscosity, tension).
 *
 *   floe_cl_set s[FLOE_MAX_SETS]; int n;
 *   if ((st = floe_cl_sets(api, ctx, FLOE_SET_FLUID, s, &n))) return st;
 *   float kc[4], per[4]; floe_cl_consts(api->sim(ctx), kc, per);
 *   void *x = floe_cl_attr(api, ctx, &s[0], "x", FLOE_VEC3, FLOE_READ, &st);
 */
#ifndef FLOE_CL_MODULE_H
#define FLOE_CL_MODULE_H

#include <floe/kernel.h>
#include <floe/module.h>

#include <string.h>

#define FLOE_CL_MAX_SETS FLOE_MAX_SETS /* an older name of <floe/types.h>'s limit */

/* A particle set and its info, as the OpenCL glue passes them around. */
typedef struct floe_cl_set {
    floe_set set;
    floe_set_info info;
} floe_cl_set;

/* The non-empty sets of a kind, at most FLOE_MAX_SETS; a fluid set
 * without a positive rest density is an error naming it. */
static inline int floe_cl_sets(const floe_api *api, floe_ctx *ctx, floe_set_kind kind, floe_cl_set *out, int *n)
{
    floe_set s[FLOE_MAX_SETS];
    *n = 0;
    int k = api->set_list(ctx, kind, s, FLOE_MAX_SETS);
    if (k < 0 || k > FLOE_MAX_SETS)
        return api->fail(ctx, FLOE_ERR_ARG, "%d particle sets, at most %d supported", k, FLOE_MAX_SETS);
    for (int i = 0; i < k; i++) {
        if (api->set_info(ctx, s[i], &out[*n].info) != FLOE_OK)
            return api->fail(ctx, FLOE_ERR, "particle set %d: no info", i);
        if (kind == FLOE_SET_FLUID && !(out[*n].info.rest_density > 0.0f))
            return api->fail(ctx, FLOE_ERR_ARG, "fluid set '%s': rest density must be > 0", out[*n].info.name);
        out[*n].set = s[i];
        if (out[*n].info.n > 0)
            (*n)++;
    }
    return FLOE_OK;
}

/* The kernel constants of kernels/core/sph.h: kc = (1/H, sigma/H,
 * (1e-6 H)^2, sigma), per = (period of each axis or 0, any periodic axis). */
static inline floe_kernel floe_cl_consts(const floe_sim_info *si, float kc[4], float per[4])
{
    floe_kernel k = floe_kernel_make(si->dim, si->support);
    kc[0] = k.inv_H;
    kc[1] = k.sigma * k.inv_H;
    kc[2] = (1e-6f * k.H) * (1e-6f * k.H);
    kc[3] = k.sigma;
    for (int d = 0; d < 3; d++)
        per[d] = (si->periodic & (1u << d)) ? si->period[d] : 0.0f;
    per[3] = si->periodic ? 1.0f : 0.0f;
    return k;
}

/* The device buffer of an attribute; when absent, *st (if still FLOE_OK)
 * becomes an error naming the set, the type and the attribute. */
static inline void *floe_cl_attr(const floe_api *api, floe_ctx *ctx, const floe_cl_set *s, const char *name,
                                 floe_type t, unsigned acc, int *st)
{
    void *m = api->cl_attr(ctx, s->set, name, t, acc);
    if (!m && *st == FLOE_OK)
        *st = api->fail(ctx, FLOE_ERR_ARG, "set '%s' has no %s attribute '%s' on the device", s->info.name,
                        t == FLOE_VEC3 ? "vec3" : "f32", name);
    return m;
}

/* One target set of a launch as kernel arguments: its positions x, its
 * weights w (m of a fluid set, V of a boundary set), with FLOE_CL_ROW_RHO /
 * FLOE_CL_ROW_V (fluid sets) rho and v, and the device neighbour lists of
 * the query set q in it. An absent target (t NULL, has = 0) gets a small
 * buffer in every slot, never read (no NULL buffer arguments). */
typedef struct floe_cl_row {
    void *x, *w, *rho, *v, *cnt, *idx;
    uint32_t pitch;
    int32_t has;
    double total; /* neighbours in the lists (bandwidth estimates) */
} floe_cl_row;

enum { FLOE_CL_ROW_RHO = 1, FLOE_CL_ROW_V = 2 };

/* the target's attributes of a row, without lists (a cell walk's target) */
static inline int floe_cl_target_get(const floe_api *api, floe_ctx *ctx, const floe_cl_set *t, unsigned needs,
                                     floe_cl_row *r)
{
    memset(r, 0, sizeof *r);
    void *none = api->cl_scratch(ctx, "floe.none", 16);
    if (!none)
        return FLOE_ERR_NOMEM;
    r->x = r->w = r->rho = r->v = r->cnt = r->idx = none;
    if (!t)
        return FLOE_OK;
    r->has = 1;
    int st = FLOE_OK;
    const int bound = t->info.kind == FLOE_SET_BOUNDARY;
    r->x = floe_cl_attr(api, ctx, t, "x", FLOE_VEC3, FLOE_READ, &st);
    r->w = floe_cl_attr(api, ctx, t, bound ? "V" : "m", FLOE_F32, FLOE_READ, &st);
    if (!bound && (needs & FLOE_CL_ROW_RHO))
        r->rho = floe_cl_attr(api, ctx, t, "rho", FLOE_F32, FLOE_READ, &st);
    if (!bound && (needs & FLOE_CL_ROW_V))
        r->v = floe_cl_attr(api, ctx, t, "v", FLOE_VEC3, FLOE_READ, &st);
    return st;
}

static inline int floe_cl_row_get(const floe_api *api, floe_ctx *ctx, const floe_cl_set *q, const floe_cl_set *t,
                                  unsigned needs, floe_cl_row *r)
{
    int st = floe_cl_target_get(api, ctx, NULL, 0, r);
    if (st || !t)
        return st;
    floe_cl_nlist nl;
    if ((st = api->cl_neighbours(ctx, q->set, t->set, &nl)))
        return st;
    if (nl.n < q->info.n)
        return api->fail(ctx, FLOE_ERR, "stale neighbour lists for set '%s' (%u < %u particles)", q->info.name, nl.n,
                         q->info.n);
    if ((st = floe_cl_target_get(api, ctx, t, needs, r)))
        return st;
    r->cnt = nl.count;
    r->idx = nl.idx;
    r->pitch = nl.pitch;
    r->total = nl.total;
    return st;
}

/* ---- cell walks (ABI 1.14, kernels/core/cells.h) ------------------------
 * The arguments of FLOE_CELL_ARGS (the query set's sort, the grid) and of
 * a FLOE_CELL_TARGET (a target set's sort). floe_cl_cell_query answers 0
 * (and the module reads lists) where the backend prefers lists, the
 * domain is periodic or the set has no current sort. */
typedef struct floe_cl_cellq {
    void *sp;
    int32_t fresh, staged, pack;
    float go[4], rc2;
    int32_t gn[4];
} floe_cl_cellq;

typedef struct floe_cl_cellt {
    void *sp, *cs;
    int32_t fresh, has;
} floe_cl_cellt;

static inline int floe_cl_cell_query(const floe_api *api, floe_ctx *ctx, const floe_cl_set *q, floe_cl_cellq *out)
{
    floe_cl_cells c;
    memset(out, 0, sizeof *out);
    if (api->cl_cells(ctx, q->set, &c) != FLOE_OK || !c.spos || c.n < q->info.n)
        return 0;
    out->sp = c.spos;
    out->fresh = c.fresh;
    out->staged = c.staged;
    out->pack = c.pack;
    memcpy(out->go, c.origin, sizeof out->go);
    memcpy(out->gn, c.dims, sizeof out->gn);
    out->rc2 = c.support2;
    return 1;
}

/* a target's cells (t NULL: absent, dummy buffers); FLOE_ERR where the
 * target has no current sort while the query has (not expected: every set
 * is sorted by the same neighbours stage) */
static inline int floe_cl_cell_target(const floe_api *api, floe_ctx *ctx, const floe_cl_set *t, floe_cl_cellt *out)
{
    memset(out, 0, sizeof *out);
    void *none = api->cl_scratch(ctx, "floe.none", 16);
    if (!none)
        return FLOE_ERR_NOMEM;
    out->sp = out->cs = none;
    if (!t)
        return FLOE_OK;
    floe_cl_cells c;
    int st = api->cl_cells(ctx, t->set, &c);
    if (st)
        return st;
    if (!c.spos || c.n < t->info.n)
        return api->fail(ctx, FLOE_ERR, "set '%s': no current cell sort on the device", t->info.name);
    out->sp = c.spos;
    out->cs = c.start;
    out->fresh = c.fresh;
    out->has = 1;
    return FLOE_OK;
}

/* Launch l of a cell walk (as floe_cl_rows for lists): the l-th fluid
 * target's and the l-th boundary target's cells and attributes (needs: the
 * fluid target's FLOE_CL_ROW_RHO / _V) */
static inline int floe_cl_cell_rows(const floe_api *api, floe_ctx *ctx, const floe_cl_set *f, int nf,
                                    const floe_cl_set *b, int nb, int l, unsigned needs, floe_cl_row *rf,
                                    floe_cl_row *rb, floe_cl_cellt *tf, floe_cl_cellt *tb)
{
    int st;
    if (l < 0)
        return FLOE_ERR_ARG;
    if ((st = floe_cl_cell_target(api, ctx, l < nf ? &f[l] : NULL, tf)) ||
        (st = floe_cl_cell_target(api, ctx, l < nb ? &b[l] : NULL, tb)) ||
        (st = floe_cl_target_get(api, ctx, l < nf ? &f[l] : NULL, needs, rf)))
        return st;
    return floe_cl_target_get(api, ctx, l < nb ? &b[l] : NULL, 0, rb);
}

#define FLOE_CL_CELLQ_ARGS(cq) \
    FLOE_CL_ARG((cq).sp), FLOE_CL_ARG((cq).fresh), FLOE_CL_ARG((cq).go), FLOE_CL_ARG((cq).gn), FLOE_CL_ARG((cq).rc2), \
        FLOE_CL_ARG((cq).staged)
#define FLOE_CL_CELLT_ARGS(ct) FLOE_CL_ARG((ct).sp), FLOE_CL_ARG((ct).cs), FLOE_CL_ARG((ct).fresh)

/* Launch l of the launches = max(nf, nb) of query set q: the rows of its
 * l-th fluid target (f[l], absent when l >= nf) and l-th boundary target. */
static inline int floe_cl_rows(const floe_api *api, floe_ctx *ctx, const floe_cl_set *q, const floe_cl_set *f,
                               int nf, const floe_cl_set *b, int nb, int l, unsigned needs, floe_cl_row *rf,
                               floe_cl_row *rb)
{
    if (l < 0) /* a launch index from 0 (and the compiler told so) */
        return FLOE_ERR_ARG;
    int st = floe_cl_row_get(api, ctx, q, l < nf ? &f[l] : NULL, needs, rf);
    return st ? st : floe_cl_row_get(api, ctx, q, l < nb ? &b[l] : NULL, 0, rb);
}

/* The launches of a force kernel (kernels/core/sph.h FLOE_FORCE_ARGS) for
 * fluid set q: one per pair of its l-th fluid target (every non-empty
 * fluid set) and l-th boundary target (with_boundary), each adding
 * cf (fluid sum) + cb (boundary sum) to q's a. */
static inline int floe_cl_force(const floe_api *api, floe_ctx *ctx, void *kernel, const floe_cl_set *q,
                                int with_boundary, float eps, float cf, float cb)
{
    floe_cl_set f[FLOE_MAX_SETS], b[FLOE_MAX_SETS];
    int nf, nb = 0, st;
    if ((st = floe_cl_sets(api, ctx, FLOE_SET_FLUID, f, &nf)))
        return st;
    if (with_boundary && (st = floe_cl_sets(api, ctx, FLOE_SET_BOUNDARY, b, &nb)))
        return st;
    float kc[4], per[4];
    floe_cl_consts(api->sim(ctx), kc, per);
    void *x = floe_cl_attr(api, ctx, q, "x", FLOE_VEC3, FLOE_READ, &st);
    void *v = floe_cl_attr(api, ctx, q, "v", FLOE_VEC3, FLOE_READ, &st);
    void *rho = floe_cl_attr(api, ctx, q, "rho", FLOE_F32, FLOE_READ, &st);
    void *acc = floe_cl_attr(api, ctx, q, "a", FLOE_VEC3, FLOE_READ | FLOE_WRITE, &st);
    if (st)
        return st;
    uint32_t n = q->info.n;
    const int launches = nf > nb ? nf : nb;
    for (int l = 0; l < launches; l++) {
        floe_cl_row rf, rb;
        if ((st = floe_cl_rows(api, ctx, q, f, nf, b, nb, l, FLOE_CL_ROW_RHO | FLOE_CL_ROW_V, &rf, &rb)))
            return st;
        const double bytes = 52.0 * n + 4.0 * (rf.total + rb.total);
        floe_cl_arg a[] = {FLOE_CL_ARG(n),        FLOE_CL_ARG(x),      FLOE_CL_ARG(v),        FLOE_CL_ARG(rho),
                           FLOE_CL_ARG(acc),      FLOE_CL_ARG(kc),     FLOE_CL_ARG(per),      FLOE_CL_ARG(eps),
                           FLOE_CL_ARG(cf),       FLOE_CL_ARG(cb),     FLOE_CL_ARG(rf.has),   FLOE_CL_ARG(rb.has),
                           FLOE_CL_ARG(rf.x),     FLOE_CL_ARG(rf.w),   FLOE_CL_ARG(rf.rho),   FLOE_CL_ARG(rf.v),
                           FLOE_CL_ARG(rf.cnt),   FLOE_CL_ARG(rf.idx), FLOE_CL_ARG(rf.pitch), FLOE_CL_ARG(rb.x),
                           FLOE_CL_ARG(rb.w),     FLOE_CL_ARG(rb.cnt), FLOE_CL_ARG(rb.idx),   FLOE_CL_ARG(rb.pitch)};
        if ((st = api->cl_run(ctx, kernel, n, (int)(sizeof a / sizeof *a), a, bytes)))
            return st;
    }
    return FLOE_OK;
}

/* The OpenCL transfer entry points, typed once (the runtime's own headers
 * are not a module's dependency): looked up through api->cl_fn, NULL where
 * the runtime lacks one. Arguments as clEnqueueReadBuffer,
 * clEnqueueWriteBuffer and clEnqueueFillBuffer. */
typedef int32_t (*floe_cl_read_fn)(void *queue, void *mem, uint32_t blocking, size_t off, size_t size, void *ptr,
                                   uint32_t nwait, const void *wait, void *event);
typedef int32_t (*floe_cl_write_fn)(void *queue, void *mem, uint32_t blocking, size_t off, size_t size,
                                    const void *ptr, uint32_t nwait, const void *wait, void *event);
typedef int32_t (*floe_cl_fill_fn)(void *queue, void *mem, const void *pattern, size_t psize, size_t off,
                                   size_t size, uint32_t nwait, const void *wait, void *event);

static inline floe_cl_read_fn floe_cl_read_fn_of(const floe_api *api)
{
    void *p = api->cl_fn("clEnqueueReadBuffer");
    floe_cl_read_fn f;
    memcpy(&f, &p, sizeof f);
    return f;
}

static inline floe_cl_write_fn floe_cl_write_fn_of(const floe_api *api)
{
    void *p = api->cl_fn("clEnqueueWriteBuffer");
    floe_cl_write_fn f;
    memcpy(&f, &p, sizeof f);
    return f;
}

static inline floe_cl_fill_fn floe_cl_fill_fn_of(const floe_api *api)
{
    void *p = api->cl_fn("clEnqueueFillBuffer");
    floe_cl_fill_fn f;
    memcpy(&f, &p, sizeof f);
    return f;
}

#endif
