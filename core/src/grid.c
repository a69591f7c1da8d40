/* Named dense 2D/3D grids (scalar or vector), x fastest. */
#include "ctx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

floe_grid floe_grid_add(floe_ctx *ctx, const floe_grid_def *def)
{
    floe_grid none = {0};
    if (!def || !def->name || !def->name[0] || strlen(def->name) >= NAME_LEN) {
        ctx_fail(ctx, FLOE_ERR_ARG, "grid: name must have 1..%d characters", NAME_LEN - 1);
        return none;
    }
    if (def->type != FLOE_F32 && def->type != FLOE_VEC3) {
        ctx_fail(ctx, FLOE_ERR_ARG, "grid '%s': type must be F32 or VEC3", def->name);
        return none;
    }
    uint64_t cells = 1;
    for (int k = 0; k < 3; k++)
        cells *= def->n[k] ? def->n[k] : 0;
    if (cells == 0 || cells > ((uint64_t)1 << 31) || !(def->cell > 0)) {
        ctx_fail(ctx, FLOE_ERR_ARG, "grid '%s': needs 1..2^31 cells and a positive cell size", def->name);
        return none;
    }
    if (floe_grid_find(ctx, def->name).id) {
        ctx_fail(ctx, FLOE_ERR_ARG, "grid '%s' exists already", def->name);
        return none;
    }
    if (ctx->ngrids == MAX_GRIDS) {
        ctx_fail(ctx, FLOE_ERR_ARG, "more than %d grids", MAX_GRIDS);
        return none;
    }
    void *data = calloc(cells, floe_type_size(def->type));
    if (!data) {
        ctx_fail(ctx, FLOE_ERR_NOMEM, "grid '%s': out of memory", def->name);
        return none;
    }
    int index = ctx->ngrids++;
    grid *g = &ctx->grids[index];
    snprintf(g->name, NAME_LEN, "%s", def->name);
    g->def = *def;
    g->def.name = g->name;
    g->gen = 1;
    g->data = data;
    return (floe_grid){((uint32_t)g->gen << 16) | (uint32_t)(index + 1)};
}

static grid *ctx_grid(floe_ctx *ctx, floe_grid h)
{
    int index = (int)(h.id & 0xffff) - 1;
    if (h.id == 0 || index < 0 || index >= ctx->ngrids || ctx->grids[index].gen != (h.id >> 16))
        return NULL;
    return &ctx->grids[index];
}

floe_grid floe_grid_find(floe_ctx *ctx, const char *name)
{
    for (int i = 0; i < ctx->ngrids; i++)
        if (strcmp(ctx->grids[i].name, name) == 0)
            return (floe_grid){((uint32_t)ctx->grids[i].gen << 16) | (uint32_t)(i + 1)};
    return (floe_grid){0};
}

int floe_grid_get_info(floe_ctx *ctx, floe_grid h, floe_grid_info *out)
{
    grid *g = ctx_grid(ctx, h);
    if (!g)
        return ctx_fail(ctx, FLOE_ERR_ARG, "invalid grid handle");
    out->name = g->name;
    memcpy(out->n, g->def.n, sizeof out->n);
    memcpy(out->origin, g->def.origin, sizeof out->origin);
    out->cell = g->def.cell;
    out->type = g->def.type;
    out->data = g->data;
    return FLOE_OK;
}
