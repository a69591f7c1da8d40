/* GPU ranks under MPI (docs/mpi.md, "GPU ranks"). With --backend opencl
 * each rank opens the device of its local rank (backend.c asks for
 * "local:L": the L-th GPU modulo their count, core/src/opencl/device.c).
 * The decomposition's exchanges go through host memory: before a step's
 * migration the fluid sets come back to the host (decomp.c then works as
 * on the cpu backend, and the device copies are uploaded when a device
 * stage next asks); a halo of data that lives on the device reads the
 * owned rows back, exchanges them as decomp.c does any host array, and
 * writes the ghost rows back. A device-aware path (MPI on device memory)
 * is a later optimisation. */
#include "decomp_cl.h"
#include "device.h"

#include <stdlib.h>
#include <string.h>

#ifdef FLOE_HAVE_MPI
#include <mpi.h>
#endif

int dd_local_rank(void)
{
#ifdef FLOE_HAVE_MPI
    static int local = -2;
    if (local != -2)
        return local;
    int inited = 0, rank = 0, size = 1;
    MPI_Initialized(&inited);
    if (inited)
        MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2)
        return -1; /* not cached: the job may not have begun yet */
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *e = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    if (e && *e) {
        local = atoi(e);
        return local;
    }
    MPI_Comm node;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Comm_rank(node, &local);
        MPI_Comm_free(&node);
        return local;
    }
    local = rank;
    return local;
#else
    return -1;
#endif
}

void dd_cl_host(floe_ctx *ctx)
{
    if (!ctx->dev || !ctx->dd)
        return;
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        if (!p->gen || p->kind != FLOE_SET_FLUID)
            continue;
        dev_host_set(ctx, p, 1);
        dev_moved(ctx, p);
    }
}

void dd_cl_current(floe_ctx *ctx, pset *p, int positions_only)
{
    if (!ctx->dev || !ctx->dd)
        return;
    for (int a = 0; a < p->nattrs; a++)
        if (!positions_only || !strcmp(p->attrs[a].name, "x"))
            dev_host(ctx, p, &p->attrs[a], 0);
}

int dd_cl_rows(floe_ctx *ctx, pset *p, uint32_t first, uint32_t count)
{
    if (!ctx->dev)
        return FLOE_OK;
    for (int a = 0; a < p->nattrs; a++)
        if (ctx->dev->ops->write_rows(ctx, p, &p->attrs[a], first, count))
            return ctx_fail(ctx, FLOE_ERR, "MPI: writing the ghosts of '%s' to the device failed", p->attrs[a].name);
    return FLOE_OK;
}

int dd_cl_halo_begin(floe_ctx *ctx, const pset *p, void **data, size_t elem, dd_cl_halo *h)
{
    memset(h, 0, sizeof *h);
    h->p = (pset *)p;
    if (!ctx->dev)
        return FLOE_OK;
    if (ctx->dev->ops->is_buffer(ctx, *data)) {
        const uint32_t owned = p->n - p->ghosts;
        h->kind = 1;
        h->mem = *data;
        if (!(h->host = malloc((size_t)p->n * elem + 1)))
            return ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory for a halo of set '%s'", p->name);
        int rc = ctx->dev->ops->buffer_io(ctx, h->mem, 0, 0, (size_t)owned * elem, h->host);
        if (rc) {
            free(h->host);
            h->kind = 0;
            return rc;
        }
        *data = h->host;
        return FLOE_OK;
    }
    for (int a = 0; a < p->nattrs; a++)
        if (p->attrs[a].data == *data) { /* an attribute: its host copy current, the device's kept */
            h->kind = 2;
            h->at = &h->p->attrs[a];
            dev_host(ctx, h->p, h->at, 0);
            break;
        }
    return FLOE_OK;
}

int dd_cl_halo_end(floe_ctx *ctx, dd_cl_halo *h, size_t elem, int rc)
{
    const uint32_t ghosts = h->kind ? h->p->ghosts : 0, owned = h->kind ? h->p->n - ghosts : 0;
    if (h->kind == 1) {
        if (!rc && ghosts)
            rc = ctx->dev->ops->buffer_io(ctx, h->mem, 1, (size_t)owned * elem, (size_t)ghosts * elem,
                                          (char *)h->host + (size_t)owned * elem);
        free(h->host);
    } else if (h->kind == 2 && !rc && ghosts) /* into the device copy where it is current, else that copy stale */
        rc = ctx->dev->ops->write_rows(ctx, h->p, h->at, owned, ghosts);
    h->kind = 0;
    return rc;
}
