/* Particle sets: structure-of-arrays attributes registered by name and
 * type; the core grows, compacts and reorders all attributes of a set
 * together so they always stay consistent. */
#include "bigmem.h"
#include "device.h"
#include "out_path.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALIGN 64

static uint32_t make_id(int index, uint16_t gen) { return ((uint32_t)gen << 16) | (uint32_t)(index + 1); }

pset *ctx_set(floe_ctx *ctx, floe_set s)
{
    if (!ctx || s.id == 0)
        return NULL;
    int index = (int)(s.id & 0xffff) - 1;
    uint16_t gen = (uint16_t)(s.id >> 16);
    if (index < 0 || index >= ctx->npsets || ctx->sets[index].gen != gen || gen == 0)
        return NULL;
    return &ctx->sets[index];
}

int floe_set_is_valid(floe_ctx *ctx, floe_set set) { return ctx_set(ctx, set) != NULL; }

attr *pset_attr(pset *p, const char *name)
{
    for (int a = 0; a < p->nattrs; a++)
        if (strcmp(p->attrs[a].name, name) == 0)
            return &p->attrs[a];
    return NULL;
}

static void *alloc_elems(uint32_t cap, floe_type type)
{
    size_t bytes = (size_t)cap * floe_type_size(type);
    bytes = (bytes + ALIGN - 1) / ALIGN * ALIGN;
    if (bytes == 0)
        bytes = ALIGN;
    void *p = floe_big_alloc(bytes); /* ALIGN-aligned; huge pages for a large one */
    if (p)
        memset(p, 0, bytes);
    return p;
}

/* Grow capacity of every attribute to at least cap (amortised doubling). */
static int pset_reserve(pset *p, uint32_t cap)
{
    if (cap <= p->cap)
        return FLOE_OK;
    uint32_t ncap = p->cap ? p->cap : 256;
    while (ncap < cap)
        ncap = ncap > UINT32_MAX / 2 ? cap : ncap * 2;
    for (int a = 0; a < p->nattrs; a++) {
        attr *at = &p->attrs[a];
        void *d = alloc_elems(ncap, at->type);
        if (!d)
            return FLOE_ERR_NOMEM;
        memcpy(d, at->data, (size_t)p->n * floe_type_size(at->type));
        free(at->data);
        at->data = d;
    }
    p->cap = ncap;
    return FLOE_OK;
}

/* Host capacity for n particles without touching the device copies (emit.c
 * appends on the device; the host data moves as it is, current or not). */
int ctx_set_reserve(pset *p, uint32_t n) { return pset_reserve(p, n); }

int floe_attr_add(floe_ctx *ctx, floe_set set, const char *name, floe_type type)
{
    pset *p = ctx_set(ctx, set);
    if (!p)
        return ctx_fail(ctx, FLOE_ERR_ARG, "attribute '%s': invalid particle set handle", name);
    if (!name || !name[0] || strlen(name) >= NAME_LEN)
        return ctx_fail(ctx, FLOE_ERR_ARG, "attribute name must have 1..%d characters", NAME_LEN - 1);
    if (type < FLOE_F32 || type > FLOE_U32)
        return ctx_fail(ctx, FLOE_ERR_ARG, "attribute '%s': unknown type %d", name, (int)type);
    attr *at = pset_attr(p, name);
    if (at) {
        if (at->type != type)
            return ctx_fail(ctx, FLOE_ERR_ARG, "attribute '%s' of set '%s' exists with another type", name, p->name);
        return FLOE_OK;
    }
    if (p->nattrs == MAX_ATTRS)
        return ctx_fail(ctx, FLOE_ERR_ARG, "set '%s': more than %d attributes", p->name, MAX_ATTRS);
    void *d = alloc_elems(p->cap, type);
    if (!d)
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "out of memory adding attribute '%s'", name);
    at = &p->attrs[p->nattrs++];
    memset(at, 0, sizeof *at);
    snprintf(at->name, NAME_LEN, "%s", name);
    at->type = type;
    at->data = d;
    return FLOE_OK;
}

/* Host access through floe_attr: the host copy current, and the device
 * copy stale unless the running stage declared the attribute read-only. */
static void host_access(floe_ctx *ctx, pset *p, attr *at)
{
    int write = 1;
    const stage_inst *st = ctx->running;
    if (st && st->desc) /* a C stage: attributes it only reads stay valid on the device */
        for (const floe_attr_desc *a = st->desc->attrs; a && a->name; a++)
            if ((a->kind & p->kind) && !strcmp(a->name, at->name))
                write = (a->access & FLOE_WRITE) != 0;
    dev_host(ctx, p, at, write);
}

void *floe_attr(floe_ctx *ctx, floe_set set, const char *name, floe_type type)
{
    pset *p = ctx_set(ctx, set);
    if (!p)
        return NULL;
    attr *at = pset_attr(p, name);
    if (at && at->type == type && ctx->dev)
        host_access(ctx, p, at); /* a device: copy back if stale */
    return at && at->type == type ? at->data : NULL;
}

int floe_attr_at(floe_ctx *ctx, floe_set set, int index, const char **name, floe_type *type, void **data)
{
    pset *p = ctx_set(ctx, set);
    if (!p || index < 0 || index >= p->nattrs)
        return 0;
    dev_host(ctx, p, &p->attrs[index], 1);
    *name = p->attrs[index].name;
    *type = p->attrs[index].type;
    *data = p->attrs[index].data;
    return 1;
}

floe_set floe_set_create(floe_ctx *ctx, const char *name, floe_set_kind kind, float rest_density)
{
    floe_set none = {0};
    if (!out_name_ok(name)) { /* it becomes a file name: NAME.0000.ply */
        ctx_fail(ctx, FLOE_ERR_ARG, "set name '%s' must be " OUT_NAME_RULE, name ? name : "");
        return none;
    }
    if (kind != FLOE_SET_FLUID && kind != FLOE_SET_BOUNDARY) {
        ctx_fail(ctx, FLOE_ERR_ARG, "set '%s': kind must be fluid or boundary", name);
        return none;
    }
    if (floe_set_find(ctx, name).id) {
        ctx_fail(ctx, FLOE_ERR_ARG, "set '%s' exists already", name);
        return none;
    }
    if (ctx->npsets == MAX_SETS) {
        ctx_fail(ctx, FLOE_ERR_ARG, "more than %d particle sets", MAX_SETS);
        return none;
    }
    int index = ctx->npsets++;
    pset *p = &ctx->sets[index];
    memset(p, 0, sizeof *p);
    snprintf(p->name, NAME_LEN, "%s", name);
    p->gen = 1;
    p->kind = kind;
    p->rest_density = rest_density;
    p->is_static = kind == FLOE_SET_BOUNDARY;
    floe_set s = {make_id(index, p->gen)};
    /* core attributes every set of the kind carries */
    int rc = floe_attr_add(ctx, s, "x", FLOE_VEC3);
    if (kind == FLOE_SET_FLUID) {
        const char *f32[] = {"m", "rho", "p"};
        const char *vec[] = {"v", "a"};
        for (int i = 0; i < 2 && !rc; i++)
            rc = floe_attr_add(ctx, s, vec[i], FLOE_VEC3);
        for (int i = 0; i < 3 && !rc; i++)
            rc = floe_attr_add(ctx, s, f32[i], FLOE_F32);
        if (!rc)
            rc = floe_attr_add(ctx, s, "id", FLOE_U32);
    } else if (!rc) {
        rc = floe_attr_add(ctx, s, "V", FLOE_F32);
    }
    /* attributes that stages of the pipeline write on sets of this kind */
    for (int i = 0; i < ctx->nstages && !rc; i++) {
        const floe_stage_desc *sd = ctx->stages[i].desc;
        for (const floe_attr_desc *ad = sd ? sd->attrs : NULL; ad && ad->name && !rc; ad++)
            if ((ad->kind & kind) && (ad->access & FLOE_WRITE))
                rc = floe_attr_add(ctx, s, ad->name, ad->type);
    }
    if (rc) {
        ctx->npsets--;
        return none;
    }
    return s;
}

floe_set floe_set_find(floe_ctx *ctx, const char *name)
{
    for (int i = 0; i < ctx->npsets; i++)
        if (ctx->sets[i].gen && strcmp(ctx->sets[i].name, name) == 0)
            return (floe_set){make_id(i, ctx->sets[i].gen)};
    return (floe_set){0};
}

int floe_set_every_frame(floe_ctx *ctx, floe_set set, int on)
{
    pset *p = ctx_set(ctx, set);
    if (!p)
        return ctx_fail(ctx, FLOE_ERR_ARG, "every_frame: invalid particle set handle");
    p->every_frame = on != 0;
    return FLOE_OK;
}

uint32_t floe_set_size(floe_ctx *ctx, floe_set set)
{
    pset *p = ctx_set(ctx, set);
    return p ? p->n : 0;
}

static void invalidate(floe_ctx *ctx, pset *p)
{
    p->sorted_valid = 0;
    p->layout++; /* its Verlet lists too (nb_verlet.c) */
    dev_moved(ctx, p); /* the device's sort and lists too */
    if (p->kind == FLOE_SET_BOUNDARY && p->is_static && !p->every_frame) /* Akinci volumes depend on all of them */
        ctx->boundary_dirty = 1;
    ctx->nb_valid = 0;
    ctx->ksums_valid = 0;
}

int ctx_set_resize(floe_ctx *ctx, floe_set set, uint32_t n)
{
    pset *p = ctx_set(ctx, set);
    if (!p)
        return ctx_fail(ctx, FLOE_ERR_ARG, "resize: invalid particle set handle");
    dev_host_set(ctx, p, 1); /* a device: every attribute back on the host */
    if (pset_reserve(p, n))
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "set '%s': out of memory for %u particles", p->name, n);
    if (n > p->n) /* new particles start zeroed */
        for (int a = 0; a < p->nattrs; a++) {
            size_t es = floe_type_size(p->attrs[a].type);
            memset((char *)p->attrs[a].data + (size_t)p->n * es, 0, (size_t)(n - p->n) * es);
        }
    p->n = n;
    invalidate(ctx, p);
    return FLOE_OK;
}

int ctx_set_compact(floe_ctx *ctx, floe_set set, const uint8_t *keep)
{
    pset *p = ctx_set(ctx, set);
    if (!p)
        return ctx_fail(ctx, FLOE_ERR_ARG, "compact: invalid particle set handle");
    dev_host_set(ctx, p, 1);
    uint32_t m = 0;
    for (uint32_t i = 0; i < p->n; i++) {
        if (!keep[i])
            continue;
        if (m != i)
            for (int a = 0; a < p->nattrs; a++) {
                size_t es = floe_type_size(p->attrs[a].type);
                char *d = p->attrs[a].data;
                memcpy(d + (size_t)m * es, d + (size_t)i * es, es);
            }
        m++;
    }
    p->n = m;
    invalidate(ctx, p);
    return FLOE_OK;
}

/* ABI 1.10: the same on the device, its copies kept as the truth */
int ctx_set_resize_cl(floe_ctx *ctx, floe_set set, uint32_t n)
{
    pset *p = ctx_set(ctx, set);
    if (!p)
        return ctx_fail(ctx, FLOE_ERR_ARG, "cl_set_resize: invalid particle set handle");
    if (!ctx->dev)
        return ctx_fail(ctx, FLOE_ERR, "cl_set_resize: the OpenCL backend is not active");
    int rc = ctx->dev->ops->set_resize(ctx, p, n);
    if (rc)
        return rc;
    p->n = n;
    invalidate(ctx, p);
    return FLOE_OK;
}

int ctx_set_compact_cl(floe_ctx *ctx, floe_set set, void *keep, uint32_t n_keep)
{
    pset *p = ctx_set(ctx, set);
    if (!p)
        return ctx_fail(ctx, FLOE_ERR_ARG, "cl_set_compact: invalid particle set handle");
    if (!ctx->dev)
        return ctx_fail(ctx, FLOE_ERR, "cl_set_compact: the OpenCL backend is not active");
    if (!keep || n_keep > p->n)
        return ctx_fail(ctx, FLOE_ERR_ARG, "cl_set_compact: set '%s' has %u particles, %u to keep", p->name, p->n,
                        n_keep);
    int rc = ctx->dev->ops->set_compact(ctx, p, keep, n_keep);
    if (rc)
        return rc;
    p->n = n_keep;
    invalidate(ctx, p);
    return FLOE_OK;
}

static int reorder(floe_ctx *ctx, floe_set set, const uint32_t *perm)
{
    pset *p = ctx_set(ctx, set);
    if (!p)
        return ctx_fail(ctx, FLOE_ERR_ARG, "reorder: invalid particle set handle");
    if (p->n == 0)
        return FLOE_OK;
    dev_host_set(ctx, p, 1);
    size_t maxes = 3 * sizeof(float);
    char *tmp = malloc((size_t)p->n * maxes);
    if (!tmp)
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "reorder: out of memory");
    for (int a = 0; a < p->nattrs; a++) {
        size_t es = floe_type_size(p->attrs[a].type);
        const char *src = p->attrs[a].data;
        uint32_t n = p->n;
        if (es == 4) {
            const uint32_t *s4 = (const uint32_t *)src;
            uint32_t *t4 = (uint32_t *)tmp;
#pragma omp parallel for schedule(static)
            for (uint32_t k = 0; k < n; k++)
                t4[k] = s4[perm[k]];
        } else {
            const float *s3 = (const float *)src;
            float *t3 = (float *)tmp;
#pragma omp parallel for schedule(static)
            for (uint32_t k = 0; k < n; k++) {
                t3[3 * k] = s3[3 * perm[k]];
                t3[3 * k + 1] = s3[3 * perm[k] + 1];
                t3[3 * k + 2] = s3[3 * perm[k] + 2];
            }
        }
        memcpy(p->attrs[a].data, tmp, (size_t)n * es);
    }
    free(tmp);
    invalidate(ctx, p);
    return FLOE_OK;
}

int floe_set_reorder(floe_ctx *ctx, floe_set set, const uint32_t *perm)
{
    int prev = ctx_threads_enter(ctx);
    int rc = reorder(ctx, set, perm);
    ctx_threads_leave(prev);
    return rc;
}

int floe_set_moved(floe_ctx *ctx, floe_set set)
{
    pset *p = ctx_set(ctx, set);
    if (!p)
        return ctx_fail(ctx, FLOE_ERR_ARG, "invalid particle set handle");
    invalidate(ctx, p);
    return FLOE_OK;
}

int ctx_set_moving(floe_ctx *ctx, floe_set set)
{
    pset *p = ctx_set(ctx, set);
    if (!p)
        return ctx_fail(ctx, FLOE_ERR_ARG, "invalid particle set handle");
    if (p->kind != FLOE_SET_BOUNDARY)
        return ctx_fail(ctx, FLOE_ERR_ARG, "set '%s' is not a boundary set: only boundary sets are marked moving", p->name);
    if (p->is_static) {
        p->is_static = 0; /* sorted at every neighbours stage from now on */
        invalidate(ctx, p);
        ctx->boundary_dirty = 1; /* the walls' volumes no longer count it */
    }
    return FLOE_OK;
}

int ctx_set_placer(floe_ctx *ctx, floe_set set, int (*fn)(void *state), void *state)
{
    pset *p = ctx_set(ctx, set);
    if (!p)
        return ctx_fail(ctx, FLOE_ERR_ARG, "invalid particle set handle");
    if (fn && p->is_static)
        return ctx_fail(ctx, FLOE_ERR_ARG, "set '%s' is not moving: only a moving set is placed late", p->name);
    p->placer = fn;
    p->placer_state = state;
    return FLOE_OK;
}

int ctx_run_placer(floe_ctx *ctx, pset *p)
{
    (void)ctx;
    if (!p->placer || p->placing)
        return FLOE_OK;
    p->placing = 1;
    const int rc = p->placer(p->placer_state);
    p->placing = 0;
    return rc;
}

floe_set ctx_set_handle(floe_ctx *ctx, int index)
{
    if (index < 0 || index >= ctx->npsets || !ctx->sets[index].gen)
        return (floe_set){0};
    return (floe_set){make_id(index, ctx->sets[index].gen)};
}

int floe_set_clear(floe_ctx *ctx, floe_set set)
{
    return ctx_set_resize(ctx, set, 0);
}
