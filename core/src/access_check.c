/* Declared access enforced: a C stage that declared an attribute FLOE_READ
 * (and not FLOE_WRITE) must leave it as it was. The OpenCL backend decides
 * from the declarations which copies are stale, so a stage writing what it
 * declared read would leave a stale device copy behind, silently. Modules
 * get a const view of what they read (api->attr_read); this check catches a
 * write through any pointer: each such attribute is copied before the stage
 * and compared after it. It costs a copy and a compare of the read-only
 * attributes per module stage, so it is on by default only in debug builds (no
 * NDEBUG), or where floe_ctx_check_access turns it on. On the OpenCL
 * backend C stages get the host copies of what they declare before they
 * run, so the copies compared are current; device stages are not checked. */
#include "ctx.h"

#include <stdlib.h>
#include <string.h>

void floe_ctx_check_access(floe_ctx *ctx, int on)
{
    if (ctx)
        ctx->check_access = on ? 1 : -1;
}

static int checks_on(const floe_ctx *ctx)
{
#ifdef NDEBUG
    return ctx->check_access > 0;
#else
    return ctx->check_access >= 0;
#endif
}

typedef struct snap_item {
    int set;          /* index in ctx->sets */
    const attr *at;
    void *data;       /* the attribute's data when copied */
    uint32_t n;
    size_t bytes;
    void *copy;
} snap_item;

struct access_snap {
    int n;
    snap_item item[];
};

/* Whether st declares writing `name` on a set of kind `kind`. */
static int declares_write(const floe_stage_desc *sd, const char *name, floe_set_kind kind)
{
    for (const floe_attr_desc *a = sd->attrs; a && a->name; a++)
        if ((a->kind & kind) && (a->access & FLOE_WRITE) && !strcmp(a->name, name))
            return 1;
    return 0;
}

access_snap *ctx_access_snap(floe_ctx *ctx, const stage_inst *st)
{
    /* the core's own stages are left out: the neighbour search permutes
     * every attribute of a set in place (locality reorder), values unchanged */
    if (!checks_on(ctx) || !st->desc || !st->desc->attrs || st->mod == &ctx->modules[0])
        return NULL;
    int cap = 0;
    for (const floe_attr_desc *a = st->desc->attrs; a->name; a++)
        cap += ctx->npsets;
    access_snap *s = calloc(1, sizeof *s + (size_t)cap * sizeof(snap_item));
    if (!s)
        return NULL;
    for (const floe_attr_desc *a = st->desc->attrs; a->name; a++)
        for (int k = 0; k < ctx->npsets; k++) {
            pset *p = &ctx->sets[k];
            attr *at = (p->kind & a->kind) && a->access == FLOE_READ ? pset_attr(p, a->name) : NULL;
            if (!at || at->type != a->type || declares_write(st->desc, a->name, p->kind) || p->n == 0)
                continue;
            snap_item *it = &s->item[s->n];
            it->set = k;
            it->at = at;
            it->data = at->data;
            it->n = p->n;
            it->bytes = (size_t)p->n * floe_type_size(at->type);
            it->copy = malloc(it->bytes);
            if (!it->copy)
                continue; /* no memory for the check: skip it, the stage runs as without */
            memcpy(it->copy, at->data, it->bytes);
            s->n++;
        }
    return s;
}

int ctx_access_check(floe_ctx *ctx, const stage_inst *st, access_snap *s, int compare)
{
    if (!s)
        return FLOE_OK;
    int rc = compare ? FLOE_OK : FLOE_ERR; /* a failed stage keeps its own message */
    for (int k = 0; k < s->n; k++) {
        snap_item *it = &s->item[k];
        const pset *p = &ctx->sets[it->set];
        /* a set resized or reordered by the stage: its data moved, nothing to compare */
        if (rc == FLOE_OK && p->n == it->n && it->at->data == it->data && memcmp(it->copy, it->data, it->bytes)) {
            const size_t el = floe_type_size(it->at->type);
            size_t b = 0;
            while (b < it->bytes && ((const char *)it->copy)[b] == ((const char *)it->data)[b])
                b++;
            rc = ctx_fail(ctx, FLOE_ERR_ARG,
                          "stage '%s' wrote attribute '%s' of set '%s' (particle %zu), which it declared "
                          "FLOE_READ only: declare FLOE_WRITE, or leave it alone",
                          st->name, it->at->name, p->name, b / el);
        }
        free(it->copy);
    }
    free(s);
    return compare ? rc : FLOE_OK;
}
