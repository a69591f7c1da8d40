/* Sources and sinks: water enters at emitters and leaves at sinks, so
 * fluid sets grow and shrink during a run (docs/terrain.md, "Sources and
 * sinks"; SPlisHSPlasH calls these emitters).
 *
 * A source emits layers of particles on a lattice of the spacing d across
 * its opening (a point: one particle; a disc: the lattice points within
 * the radius on the plane normal to the flow, in 2D a segment; a line:
 * points d apart between its ends), each layer when the previous one has
 * moved d: with speed u it advances the distance u dt a step, and a new
 * layer starts where a particle emitted at the exact time would be by now.
 * The opening's particle count n fixes the discharge: Q = n d^(dim-1) u, so
 * a given rate sets u = Q / (n d^(dim-1)) and the mass entering is exactly
 * the nominal rho Q t, up to the one layer in progress. A sink removes the
 * particles inside its box, or within `width` of the domain's side faces
 * (x, and z in 3D: water running off the edge of a terrain).
 *
 * Particles are appended through the set's amortised growth (capacity
 * doubles, so a growing set reallocates O(log n) times in a run, not each
 * step) and removed by compaction; every new particle takes the set's next
 * id, so an id names one particle for its life and is never reused, and
 * every frame lists the particles alive then with their ids. */
#include "emit.h"
#include "decomp.h"

#include "device.h"
#include "geometry.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SOURCES 64
#define MAX_SINKS 64

typedef struct source {
    emit_source_def def;
    float *pts;              /* the layer's positions, 3 floats each */
    uint32_t npts;
    double speed;            /* m/s */
    double travelled;        /* distance the layer in progress has moved */
    int on;                  /* switched from Lua (default on) */
} source;

struct emit_state {
    source src[MAX_SOURCES];
    int nsrc;
    emit_sink_def sink[MAX_SINKS];
    int nsink;
    emit_flow flow;
    uint8_t *keep;
    size_t keep_cap;
    float *buf;              /* positions of one step's new particles */
    size_t buf_cap;
};

static struct emit_state *state(floe_ctx *ctx)
{
    if (!ctx->emit)
        ctx->emit = calloc(1, sizeof *ctx->emit);
    return ctx->emit;
}

void emit_free(floe_ctx *ctx)
{
    struct emit_state *e = ctx->emit;
    if (!e)
        return;
    for (int i = 0; i < e->nsrc; i++)
        free(e->src[i].pts);
    free(e->keep);
    free(e->buf);
    free(e);
    ctx->emit = NULL;
}

/* two unit vectors u, w spanning the plane normal to n */
static void basis(const float n[3], float u[3], float w[3])
{
    const float a[3] = {fabsf(n[0]) < 0.9f ? 1.0f : 0.0f, fabsf(n[0]) < 0.9f ? 0.0f : 1.0f, 0.0f};
    u[0] = a[1] * n[2] - a[2] * n[1];
    u[1] = a[2] * n[0] - a[0] * n[2];
    u[2] = a[0] * n[1] - a[1] * n[0];
    float l = sqrtf(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
    for (int k = 0; k < 3; k++)
        u[k] /= l;
    w[0] = n[1] * u[2] - n[2] * u[1];
    w[1] = n[2] * u[0] - n[0] * u[2];
    w[2] = n[0] * u[1] - n[1] * u[0];
}

/* the opening's lattice points */
static int layer_points(floe_ctx *ctx, source *s)
{
    const emit_source_def *d = &s->def;
    const float h = ctx->info.spacing;
    const int dim = ctx->info.dim;
    uint32_t cap = 1, n = 0;
    int m = 0;
    if (d->shape == EMIT_DISC) {
        m = (int)floorf(d->radius / h);
        cap = dim == 3 ? (uint32_t)((2 * m + 2) * (2 * m + 2)) : (uint32_t)(2 * m + 2);
    } else if (d->shape == EMIT_LINE) {
        float L = sqrtf((d->b[0] - d->a[0]) * (d->b[0] - d->a[0]) + (d->b[1] - d->a[1]) * (d->b[1] - d->a[1]) +
                        (d->b[2] - d->a[2]) * (d->b[2] - d->a[2]));
        m = (int)floorf(L / h);
        cap = (uint32_t)m + 1;
    }
    s->pts = malloc((size_t)cap * 3 * sizeof(float));
    if (!s->pts)
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "source: out of memory");
    if (d->shape == EMIT_POINT) {
        memcpy(s->pts, d->centre, 3 * sizeof(float));
        n = 1;
    } else if (d->shape == EMIT_LINE) { /* points d apart, centred on the segment */
        float ab[3] = {d->b[0] - d->a[0], d->b[1] - d->a[1], d->b[2] - d->a[2]};
        const float len = sqrtf(ab[0] * ab[0] + ab[1] * ab[1] + ab[2] * ab[2]);
        for (int i = 0; i <= m; i++, n++)
            for (int k = 0; k < 3; k++)
                s->pts[3 * n + k] = 0.5f * (d->a[k] + d->b[k]) + (len > 0 ? ab[k] / len : 0.0f) * ((float)i - 0.5f * (float)m) * h;
    } else {
        float u[3], w[3];
        if (dim == 2) { /* the opening: the segment normal to dir in the plane */
            u[0] = -d->dir[1];
            u[1] = d->dir[0];
            u[2] = 0;
            w[0] = w[1] = w[2] = 0;
        } else {
            basis(d->dir, u, w);
        }
        /* the cell-centred lattice (offsets (i + 1/2) h) within the radius,
         * symmetric about the centre; a node-centred one (offsets i h) when
         * no cell-centred point fits */
        const float r = d->radius;
        for (int half = 0; half < 2 && n == 0; half++) {
            const float o = half ? 0.0f : 0.5f;
            for (int j = dim == 3 ? -m - 1 : 0; j <= (dim == 3 ? m : 0); j++)
                for (int i = -m - 1; i <= m; i++) {
                    const float a = ((float)i + o) * h, b = dim == 3 ? ((float)j + o) * h : 0.0f;
                    if (a * a + b * b > r * r * (1 + 1e-6f))
                        continue;
                    for (int k = 0; k < 3; k++)
                        s->pts[3 * n + k] = d->centre[k] + a * u[k] + b * w[k];
                    n++;
                }
        }
        if (n == 0) { /* an opening narrower than a spacing: its centre */
            memcpy(s->pts, d->centre, 3 * sizeof(float));
            n = 1;
        }
    }
    s->npts = n;
    return FLOE_OK;
}

int emit_source_add(floe_ctx *ctx, const emit_source_def *def)
{
    struct emit_state *e = state(ctx);
    if (!e)
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "source: out of memory"), -1;
    if (e->nsrc == MAX_SOURCES)
        return ctx_fail(ctx, FLOE_ERR_ARG, "more than %d sources", MAX_SOURCES), -1;
    pset *p = ctx_set(ctx, def->set);
    if (!p || p->kind != FLOE_SET_FLUID)
        return ctx_fail(ctx, FLOE_ERR_ARG, "source: 'set' must name a fluid set"), -1;
    if ((def->rate > 0) == (def->speed > 0))
        return ctx_fail(ctx, FLOE_ERR_ARG, "source: give either rate (m^3/s) or speed (m/s), positive"), -1;
    /* the first layer leaves when the water has moved d/2: each layer
     * stands for the volume of the half spacing either side of it, so the
     * particles emitted stay within half a layer of the nominal inflow */
    source s = {.def = *def, .on = 1, .travelled = 0.5 * ctx->info.spacing};
    float l = sqrtf(def->dir[0] * def->dir[0] + def->dir[1] * def->dir[1] + def->dir[2] * def->dir[2]);
    if (!(l > 0) || !isfinite(l))
        return ctx_fail(ctx, FLOE_ERR_ARG, "source: 'direction' must be a non-zero vector"), -1;
    for (int k = 0; k < 3; k++)
        s.def.dir[k] /= l;
    if (ctx->info.dim == 2 && fabsf(s.def.dir[2]) > 1e-6f)
        return ctx_fail(ctx, FLOE_ERR_ARG, "source: a 2D direction has z = 0"), -1;
    if (def->shape == EMIT_DISC && !(def->radius > 0))
        return ctx_fail(ctx, FLOE_ERR_ARG, "source: a disc needs a positive radius"), -1;
    if (layer_points(ctx, &s))
        return -1;
    for (uint32_t i = 0; i < s.npts; i++)
        for (int k = 0; k < ctx->info.dim; k++) {
            const float c = s.pts[3 * i + k];
            if (!(c >= ctx->info.domain_min[k] && c <= ctx->info.domain_max[k])) {
                ctx_fail(ctx, FLOE_ERR_ARG,
                         "source: its opening reaches outside the domain (a particle at %g %g %g; the domain is "
                         "%g..%g along %c)", s.pts[3 * i], s.pts[3 * i + 1], s.pts[3 * i + 2],
                         ctx->info.domain_min[k], ctx->info.domain_max[k], "xyz"[k]);
                free(s.pts);
                return -1;
            }
        }
    const double area = s.npts * pow(ctx->info.spacing, ctx->info.dim - 1);
    s.speed = def->speed > 0 ? def->speed : def->rate / area;
    const int i = e->nsrc++;
    e->src[i] = s;
    e->flow.speed[i] = s.speed;
    e->flow.layer[i] = s.npts;
    return i;
}

int emit_source_switch(floe_ctx *ctx, int i, int on)
{
    struct emit_state *e = ctx->emit;
    if (!e || i < 0 || i >= e->nsrc)
        return ctx_fail(ctx, FLOE_ERR_ARG, "no source %d", i);
    e->src[i].on = on;
    return FLOE_OK;
}

int emit_sink_add(floe_ctx *ctx, const emit_sink_def *def)
{
    struct emit_state *e = state(ctx);
    if (!e)
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "sink: out of memory");
    if (e->nsink == MAX_SINKS)
        return ctx_fail(ctx, FLOE_ERR_ARG, "more than %d sinks", MAX_SINKS);
    emit_sink_def s = *def;
    if (s.edge && s.width <= 0)
        s.width = 2 * ctx->info.spacing;
    if (!s.edge)
        for (int k = 0; k < ctx->info.dim; k++)
            if (!(s.max[k] > s.min[k]))
                return ctx_fail(ctx, FLOE_ERR_ARG, "sink: max must be greater than min on every axis");
    e->sink[e->nsink++] = s;
    return FLOE_OK;
}

void emit_flow_get(floe_ctx *ctx, emit_flow *out)
{
    if (ctx->emit)
        *out = ctx->emit->flow;
    else
        memset(out, 0, sizeof *out);
}

static int active(const source *s, double t)
{
    return s->on && t >= s->def.start && (s->def.stop <= s->def.start || t < s->def.stop);
}

/* OpenCL: append the n new particles into the device copies directly: the
 * rest of the set stays where it is, instead of a round trip of every
 * attribute. A device copy without room grows on the device (the backend's
 * set_resize: a copy into a buffer of the set's doubled capacity). 1 when
 * done, 2 when done after growing, 0 when the host path must do it (no
 * OpenCL), -1 on error. */
static int append_on_device(floe_ctx *ctx, pset *p, const float *pos, uint32_t n, const float v0[3])
{
    if (!ctx->dev || ctx->dd) /* MPI: the sets are on the host (dd_emit_begin) */
        return 0;
    const uint32_t n0 = p->n, n1 = n0 + n;
    int room = 1;
    for (int a = 0; a < p->nattrs; a++) {
        const attr *at = &p->attrs[a];
        if ((dev_attr_state(ctx, p, at) & DEV_HOST_STALE) && ctx->dev->ops->capacity(ctx, p, at) < n1)
            room = 0;
    }
    if (!room && !ctx->dev->ops->set_resize)
        return 0;
    if (ctx_set_reserve(p, n1))
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "source: out of memory for %u particles", n1), -1;
    if (!room && ctx->dev->ops->set_resize(ctx, p, n1)) /* grown on the device, the new rows zero */
        return -1;
    const float mass = p->rest_density * powf(ctx->info.spacing, (float)ctx->info.dim);
    for (int a = 0; a < p->nattrs; a++) {
        attr *at = &p->attrs[a];
        const size_t es = floe_type_size(at->type);
        char *d = (char *)at->data + (size_t)n0 * es;
        memset(d, 0, (size_t)n * es);
        for (uint32_t i = 0; i < n; i++) {
            if (!strcmp(at->name, "x"))
                memcpy(d + i * es, pos + 3 * (size_t)i, es);
            else if (!strcmp(at->name, "v"))
                memcpy(d + i * es, v0, es);
            else if (!strcmp(at->name, "m"))
                memcpy(d + i * es, &mass, es);
            else if (!strcmp(at->name, "rho"))
                memcpy(d + i * es, &p->rest_density, es);
            else if (!strcmp(at->name, "id"))
                ((uint32_t *)(void *)d)[i] = p->next_id++;
        }
        /* the device copy, where it is current, gets the new range */
        if (ctx->dev->ops->write_rows(ctx, p, at, n0, n))
            return ctx_fail(ctx, FLOE_ERR, "source: OpenCL write of '%s' failed", at->name), -1;
    }
    p->n = n1;
    return floe_set_moved(ctx, ctx_set_handle(ctx, (int)(p - ctx->sets))) ? -1 : room ? 1 : 2;
}

static int run_sources(floe_ctx *ctx, struct emit_state *e)
{
    const double t = ctx->info.time, dt = ctx->info.dt, h = ctx->info.spacing;
    for (int i = 0; i < e->nsrc; i++) {
        source *s = &e->src[i];
        if (!active(s, t))
            continue;
        pset *p = ctx_set(ctx, s->def.set);
        if (!p)
            return ctx_fail(ctx, FLOE_ERR_ARG, "source %d: its set was removed", i);
        const double rho = p->rest_density;
        e->flow.mass_in += rho * s->speed * s->npts * pow(h, ctx->info.dim) / h * dt;
        s->travelled += s->speed * dt;
        uint32_t layers = 0;
        while (s->travelled - (layers + 1) * h >= -1e-9 * h)
            layers++;
        if (!layers)
            continue;
        const size_t need = (size_t)layers * s->npts * 3;
        if (need > e->buf_cap) {
            float *b = realloc(e->buf, need * sizeof(float));
            if (!b)
                return ctx_fail(ctx, FLOE_ERR_NOMEM, "source %d: out of memory", i);
            e->buf = b;
            e->buf_cap = need;
        }
        /* layer l left the opening (travelled - (l + 1) h) ago, in distance */
        for (uint32_t l = 0; l < layers; l++) {
            const float ahead = (float)(s->travelled - (l + 1) * h);
            for (uint32_t q = 0; q < s->npts; q++)
                for (int k = 0; k < 3; k++)
                    e->buf[3 * ((size_t)l * s->npts + q) + k] = s->pts[3 * q + k] + ahead * s->def.dir[k];
        }
        s->travelled -= layers * h;
        const float v0[3] = {(float)(s->speed * s->def.dir[0]), (float)(s->speed * s->def.dir[1]),
                             (float)(s->speed * s->def.dir[2])};
        const uint32_t n = layers * s->npts;
        const int dev = append_on_device(ctx, p, e->buf, n, v0);
        if (dev < 0)
            return FLOE_ERR;
        e->flow.device_appends += dev > 0;
        e->flow.device_grows += dev == 2;
        if (!dev && geom_append(ctx, s->def.set, p, e->buf, n, v0) < 0)
            return FLOE_ERR_NOMEM;
        e->flow.emitted += n;
        e->flow.mass_emitted += (double)n * p->rest_density * pow(h, ctx->info.dim);
    }
    return FLOE_OK;
}

static int in_sink(const floe_ctx *ctx, const emit_sink_def *s, const float *x)
{
    const int dim = ctx->info.dim;
    if (s->edge) { /* the side faces: every axis but y, the up axis of terrains */
        for (int k = 0; k < dim; k += k == 0 ? 2 : 1)
            if (x[k] < ctx->info.domain_min[k] + s->width || x[k] > ctx->info.domain_max[k] - s->width)
                return 1;
        return 0;
    }
    for (int k = 0; k < dim; k++)
        if (x[k] < s->min[k] || x[k] > s->max[k])
            return 0;
    return 1;
}

/* OpenCL: the sinks of set q on the device (kernels/core/emit.cl): the
 * particles inside are flagged, counted and their mass summed (8 bytes
 * back), and where there are any the set is compacted on the device along
 * the flags (device.h's set_compact, opencl/resize.c: a scan of the flags,
 * one gather per attribute): the set never comes back to the host. 1 when
 * done, 0 when the host must look (no device path), -1 on error. The edge
 * sink's inner box is domain_min + width .. domain_max - width: the bounds
 * in_sink compares against. */
static int sinks_on_device(floe_ctx *ctx, struct emit_state *e, int q)
{
    typedef int32_t (*rw_fn)(void *, void *, uint32_t, size_t, size_t, void *, uint32_t, const void *, void *);
    void *fw = api_cl_fn("clEnqueueWriteBuffer"), *fr = api_cl_fn("clEnqueueReadBuffer");
    void *k = fw && fr && ctx->dev->ops->set_compact ? api_cl_kernel(ctx, "core", "emit.cl", "sinks") : NULL;
    if (!k)
        return 0;
    rw_fn w, r;
    memcpy(&w, &fw, sizeof w);
    memcpy(&r, &fr, sizeof r);
    float box[8 * MAX_SINKS];
    for (int s = 0; s < e->nsink; s++) {
        const emit_sink_def *d = &e->sink[s];
        float *b = box + 8 * s;
        b[0] = (float)d->edge, b[1] = 0;
        for (int a = 0; a < 3; a++) {
            b[2 + a] = d->edge ? ctx->info.domain_min[a] + d->width : d->min[a];
            b[5 + a] = d->edge ? ctx->info.domain_max[a] - d->width : d->max[a];
        }
    }
    const floe_set set = ctx_set_handle(ctx, q);
    uint32_t zero[2] = {0, 0}, out[2] = {0, 0}, n = ctx->sets[q].n;
    void *bs = api_cl_scratch(ctx, "emit.sinks", sizeof box), *bo = api_cl_scratch(ctx, "emit.out", sizeof out);
    void *keep = api_cl_scratch(ctx, "emit.keep", (size_t)n * sizeof(uint32_t));
    void *x = api_cl_attr(ctx, set, "x", FLOE_VEC3, FLOE_READ), *m = api_cl_attr(ctx, set, "m", FLOE_F32, FLOE_READ);
    int nsk = e->nsink, dim = ctx->info.dim;
    if (!bs || !bo || !keep || !x || !m ||
        w(api_cl_queue(ctx), bs, 0, 0, (size_t)8 * nsk * sizeof(float), box, 0, NULL, NULL) ||
        w(api_cl_queue(ctx), bo, 0, 0, sizeof zero, zero, 0, NULL, NULL))
        return 0;
    floe_cl_arg a[] = {FLOE_CL_ARG(n), FLOE_CL_ARG(x), FLOE_CL_ARG(m), FLOE_CL_ARG(bs), FLOE_CL_ARG(nsk),
                       FLOE_CL_ARG(dim), FLOE_CL_ARG(keep), FLOE_CL_ARG(bo)};
    if (api_cl_run(ctx, k, n, 8, a, 20.0 * n) || r(api_cl_queue(ctx), bo, 1, 0, sizeof out, out, 0, NULL, NULL))
        return ctx_fail(ctx, FLOE_ERR, "sink: the device check failed"), -1;
    if (!out[0]) {
        e->flow.device_sink_checks++;
        return 1;
    }
    if (out[0] > n)
        return ctx_fail(ctx, FLOE_ERR, "sink: %u of %u particles counted in the sinks", out[0], n), -1;
    const uint32_t removed = out[0];
    if (ctx_set_compact_cl(ctx, set, keep, n - removed))
        return -1;
    float mass;
    memcpy(&mass, &out[1], sizeof mass);
    e->flow.removed += removed;
    e->flow.mass_out += mass;
    e->flow.device_compactions++;
    return 1;
}

static int run_sinks(floe_ctx *ctx, struct emit_state *e)
{
    for (int q = 0; q < ctx->npsets && e->nsink; q++) {
        pset *p = &ctx->sets[q];
        if (!p->gen || p->kind != FLOE_SET_FLUID || !p->n)
            continue;
        if (ctx->dev && (dev_attr_state(ctx, p, pset_attr(p, "x")) & DEV_HOST_STALE)) {
            const int dev = sinks_on_device(ctx, e, q); /* the positions stay on the device */
            if (dev < 0)
                return FLOE_ERR;
            if (dev)
                continue;
        }
        dev_host(ctx, p, pset_attr(p, "x"), 0);
        dev_host(ctx, p, pset_attr(p, "m"), 0);
        const float *x = pset_attr(p, "x")->data, *m = pset_attr(p, "m")->data;
        if (p->n > e->keep_cap) {
            uint8_t *k = realloc(e->keep, p->n);
            if (!k)
                return ctx_fail(ctx, FLOE_ERR_NOMEM, "sink: out of memory");
            e->keep = k;
            e->keep_cap = p->n;
        }
        uint32_t gone = 0;
        double mass = 0;
        uint8_t *keep = e->keep;
        const emit_sink_def *sk = e->sink;
        const int nsk = e->nsink;
        const long n = (long)p->n;
#pragma omp parallel for schedule(static) reduction(+ : gone, mass)
        for (long i = 0; i < n; i++) {
            int out = 0;
            for (int s = 0; s < nsk && !out; s++)
                out = in_sink(ctx, &sk[s], x + 3 * i);
            keep[i] = !out;
            if (out) {
                gone++;
                mass += m[i];
            }
        }
        if (!gone)
            continue;
        int rc = ctx_set_compact(ctx, ctx_set_handle(ctx, q), e->keep);
        if (rc)
            return rc;
        e->flow.removed += gone;
        e->flow.mass_out += mass;
        e->flow.host_compactions++;
    }
    return FLOE_OK;
}

int emit_stage(const floe_stage_call *call)
{
    floe_ctx *ctx = call->ctx;
    struct emit_state *e = ctx->emit;
    if (!e)
        return FLOE_OK; /* no source or sink: nothing to do */
    /* MPI: the ghosts dropped, each rank's sinks on its own particles, the
     * counts added over the ranks; every rank emits what one process
     * emits and keeps what falls in its box (decomp.c) */
    int rc = dd_emit_begin(ctx, "emit");
    const uint64_t removed0 = e->flow.removed;
    const double mass0 = e->flow.mass_out;
    /* sinks first: the particles just emitted stay one step at least */
    if (!rc)
        rc = run_sinks(ctx, e);
    if (!rc && ctx->dd && e->nsink) {
        double out[2] = {(double)(e->flow.removed - removed0), e->flow.mass_out - mass0};
        rc = dd_reduce(ctx, out, 2, FLOE_REDUCE_SUM);
        e->flow.removed = removed0 + (uint64_t)out[0];
        e->flow.mass_out = mass0 + out[1];
    }
    if (!rc)
        rc = run_sources(ctx, e);
    if (!rc)
        rc = dd_emit_end(ctx);
    const floe_api *api = floe_core_api();
    api->stat(ctx, "emit.mass_in", e->flow.mass_in);
    api->stat(ctx, "emit.mass_out", e->flow.mass_out);
    return rc;
}

/* ---- checkpoints ----------------------------------------------------------
 * The scene's set-up makes the sources and sinks again on --resume; what a
 * run adds to them is saved: each source's layer in progress and switch,
 * and the flow counters, so the resumed run emits and counts as the
 * uninterrupted one. */
int emit_save(void *state, floe_state_io *out)
{
    floe_ctx *ctx = state;
    const struct emit_state *e = ctx->emit;
    uint32_t n = e ? (uint32_t)e->nsrc : 0;
    emit_flow f;
    emit_flow_get(ctx, &f);
    if (out->write(out, &n, sizeof n))
        return FLOE_ERR;
    for (uint32_t i = 0; i < n; i++)
        if (out->write(out, &e->src[i].travelled, sizeof(double)) || out->write(out, &e->src[i].on, sizeof(int)))
            return FLOE_ERR;
    return out->write(out, &f, sizeof f) ? FLOE_ERR : FLOE_OK;
}

int emit_load(void *state, floe_state_io *in)
{
    floe_ctx *ctx = state;
    struct emit_state *e = ctx->emit;
    uint32_t n;
    if (in->read(in, &n, sizeof n))
        return FLOE_ERR;
    if (n != (uint32_t)(e ? e->nsrc : 0))
        return ctx_fail(ctx, FLOE_ERR_ARG, "--resume: the checkpoint has %u sources, the scene's set-up made %d", n,
                        e ? e->nsrc : 0);
    for (uint32_t i = 0; i < n; i++)
        if (in->read(in, &e->src[i].travelled, sizeof(double)) || in->read(in, &e->src[i].on, sizeof(int)))
            return FLOE_ERR;
    emit_flow f;
    if (in->read(in, &f, sizeof f))
        return FLOE_ERR;
    if (e)
        e->flow = f;
    return FLOE_OK;
}
