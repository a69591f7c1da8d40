/* OpenCL backend: a set's device cell sort handed to a module for cell
 * walks (api->cl_cells, ABI 1.14; kernels/core/cells.h). With
 * FLOE_CL_NEIGHBOURS=cells the neighbours stage only sorts (lists.c), and
 * the density and force kernels that can walk the 27 (9 in 2D) cells
 * around each particle do, in the order the lists would hold their
 * neighbours (ascending slot per row of three cells), so the sums are the
 * lists' sums term by term. */
#include "state.h"

#include <string.h>

int cl_cells(floe_ctx *ctx, pset *p, floe_cl_cells *out)
{
    memset(out, 0, sizeof *out);
    const int s = (int)(p - ctx->sets);
    cl_setdev *d = &CL->sets[s];
    /* cells only where preferred, without periodic axes (the lists carry
     * the query images), and on the sort of the current neighbours stage */
    if (!CL->cells || ctx->nbgrid.periodic || !d->sorted_valid || !d->spos || !d->cs)
        return FLOE_OK;
    cl_float4 go;
    cl_int4 gn;
    cl_grid_args(ctx, &go, &gn);
    for (int k = 0; k < 4; k++) {
        out->origin[k] = go.s[k];
        out->dims[k] = gn.s[k];
    }
    out->n = p->n;
    out->fresh = !d->spos_stale;
    out->spos = d->spos;
    out->start = d->cs;
    out->support2 = ctx->info.support * ctx->info.support;
    out->staged = CL->cells_staged;
    out->pack = CL->cells_pack;
    return FLOE_OK;
}
