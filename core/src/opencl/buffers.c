/* OpenCL backend: device memory. Buffers made and released (a released
 * handle forgets the cached kernel arguments), the mirrors of attributes
 * with their staleness, named scratch buffers and pinned host memory. */
#include "state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cl_err(floe_ctx *ctx, cl_int e, const char *what)
{
    return ctx_fail(ctx, FLOE_ERR, "OpenCL: %s failed (error %d)", what, (int)e);
}

void cl_rel(floe_ctx *ctx, cl_mem *m)
{
    if (*m) {
        F->clReleaseMemObject(*m);
        if (CL->argc) /* the handle value may come back for another buffer */
            memset(CL->argc, 0, ARGC_SLOTS * sizeof *CL->argc);
    }
    *m = NULL;
}

cl_mem cl_mk(floe_ctx *ctx, size_t bytes)
{
    cl_int e;
    cl_mem m = F->clCreateBuffer(CL->context, CL_MEM_READ_WRITE, bytes ? bytes : 4, NULL, &e);
    if (!m)
        ctx_fail(ctx, FLOE_ERR_NOMEM, "OpenCL: cannot allocate %zu bytes on the device (error %d)", bytes, (int)e);
    return m;
}

/* a buffer of at least `need` elements of `es` bytes (contents dropped on growth) */
int cl_ensure(floe_ctx *ctx, cl_mem *m, uint32_t *cap, uint64_t need, size_t es)
{
    if (*m && *cap >= need)
        return FLOE_OK;
    cl_rel(ctx, m);
    uint64_t c = need + need / 4 + 64;
    if (c > UINT32_MAX)
        c = need;
    if (!(*m = cl_mk(ctx, (size_t)c * es)))
        return FLOE_ERR_NOMEM;
    *cap = (uint32_t)c;
    return FLOE_OK;
}

cl_mirror *cl_mirror_of(floe_ctx *ctx, const pset *p, const attr *at)
{
    return &CL->sets[p - ctx->sets].at[at - p->attrs];
}

/* The device copy of an attribute up to date (allocated to the set's capacity). */
int cl_sync(floe_ctx *ctx, pset *p, attr *at)
{
    cl_mirror *m = cl_mirror_of(ctx, p, at);
    size_t es = floe_type_size(at->type);
    if (!m->mem || m->cap < p->n) {
        if (m->mem && m->host_stale) { /* cannot happen: resizes copy back first */
            return ctx_fail(ctx, FLOE_ERR, "OpenCL: attribute '%s' of set '%s' resized while only on the device",
                            at->name, p->name);
        }
        cl_rel(ctx, &m->mem);
        uint32_t cap = p->cap > p->n ? p->cap : p->n;
        if (!(m->mem = cl_mk(ctx, (size_t)(cap ? cap : 1) * es)))
            return FLOE_ERR_NOMEM;
        m->cap = cap;
        m->dev_stale = 1;
    }
    if (m->dev_stale) {
        if (p->n) {
            cl_int e = F->clEnqueueWriteBuffer(CL->q, m->mem, CL_TRUE, 0, (size_t)p->n * es, at->data, 0, NULL, NULL);
            if (e != CL_SUCCESS)
                return cl_err(ctx, e, "uploading an attribute");
            CL->bus_up += (uint64_t)p->n * es;
        }
        m->dev_stale = 0;
    }
    return FLOE_OK;
}

void cl_to_host(floe_ctx *ctx, pset *p, attr *at, int write)
{
    /* a set placed late (api->set_placer): placed before the host looks */
    if (p->placer && ctx_run_placer(ctx, p))
        ctx_log(ctx, FLOE_LOG_ERROR, "OpenCL: placing set '%s' before copying it back failed", p->name);
    cl_mirror *m = cl_mirror_of(ctx, p, at);
    if (m->host_stale) {
        if (p->n && m->mem) {
            cl_int e = F->clEnqueueReadBuffer(CL->q, m->mem, CL_TRUE, 0, (size_t)p->n * floe_type_size(at->type),
                                              at->data, 0, NULL, NULL);
            if (e != CL_SUCCESS)
                ctx_log(ctx, FLOE_LOG_ERROR, "OpenCL: copying attribute '%s' back failed (error %d)", at->name, (int)e);
            CL->bus_down += (uint64_t)p->n * floe_type_size(at->type);
        }
        m->host_stale = 0;
    }
    if (write)
        m->dev_stale = 1;
}

void cl_set_to_host(floe_ctx *ctx, pset *p, int write)
{
    for (int a = 0; a < p->nattrs; a++)
        cl_to_host(ctx, p, &p->attrs[a], write);
}

unsigned cl_attr_state(floe_ctx *ctx, const pset *p, const attr *at)
{
    const cl_mirror *m = cl_mirror_of(ctx, p, at);
    return (m->host_stale ? DEV_HOST_STALE : 0u) | (!m->mem || m->dev_stale ? DEV_DEVICE_STALE : 0u);
}

uint32_t cl_capacity(floe_ctx *ctx, const pset *p, const attr *at)
{
    const cl_mirror *m = cl_mirror_of(ctx, p, at);
    return m->mem ? m->cap : 0;
}

int cl_write_rows(floe_ctx *ctx, pset *p, attr *at, uint32_t first, uint32_t count)
{
    cl_mirror *m = cl_mirror_of(ctx, p, at);
    if (!m->mem || m->dev_stale || !count)
        return FLOE_OK; /* uploaded whole when next needed */
    if (m->cap < first + count) {
        m->dev_stale = 1; /* the host is current here (a caller checks host_stale first) */
        return FLOE_OK;
    }
    const size_t es = floe_type_size(at->type), bytes = (size_t)count * es;
    const char *src = (const char *)at->data + (size_t)first * es;
    CL->bus_up += bytes;
    /* without waiting: the rows go through a pinned staging ring (the host
     * copy may change before the copy is done); a full ring waits for the
     * last copy out of it, long done by then */
    if (CL->rows_off + bytes > CL->rows_cap) {
        if (CL->rows_ev) {
            F->clWaitForEvents(1, &CL->rows_ev);
            F->clReleaseEvent(CL->rows_ev);
            CL->rows_ev = NULL;
        }
        CL->rows_off = 0;
        CL->rows_cap = bytes > ((size_t)1 << 20) ? bytes : (size_t)1 << 20;
    }
    char *ring = cl_pinned(ctx, "core.rows", CL->rows_cap);
    if (!ring) { /* no pinned memory: a copy that waits */
        cl_int e = F->clEnqueueWriteBuffer(CL->q, m->mem, CL_TRUE, (size_t)first * es, bytes, src, 0, NULL, NULL);
        return e == CL_SUCCESS ? FLOE_OK : cl_err(ctx, e, "writing new rows of an attribute");
    }
    memcpy(ring + CL->rows_off, src, bytes);
    cl_event ev = NULL;
    cl_int e = F->clEnqueueWriteBuffer(CL->q, m->mem, CL_FALSE, (size_t)first * es, bytes, ring + CL->rows_off, 0, NULL,
                                       &ev);
    if (e != CL_SUCCESS)
        return cl_err(ctx, e, "writing new rows of an attribute");
    CL->rows_off += (bytes + 63) & ~(size_t)63;
    if (CL->rows_ev)
        F->clReleaseEvent(CL->rows_ev);
    CL->rows_ev = ev;
    return FLOE_OK;
}

void *cl_attr(floe_ctx *ctx, pset *p, attr *at, unsigned access)
{
    if (cl_sync(ctx, p, at))
        return NULL;
    cl_mirror *m = cl_mirror_of(ctx, p, at);
    if (access & FLOE_WRITE) {
        m->host_stale = 1;
        if (!strcmp(at->name, "x")) /* the cell sort's positions are the old ones now */
            CL->sets[p - ctx->sets].spos_stale = 1;
    }
    return m->mem;
}

cl_mem cl_attr_named(floe_ctx *ctx, int s, const char *name, floe_type type, unsigned access)
{
    pset *p = &ctx->sets[s];
    attr *at = pset_attr(p, name);
    return at && at->type == type ? cl_attr(ctx, p, at, access) : NULL;
}

void *cl_scratch(floe_ctx *ctx, const char *name, size_t bytes)
{
    if (!name)
        return NULL;
    int k;
    for (k = 0; k < CL->nscr; k++)
        if (!strcmp(CL->scr[k].name, name))
            break;
    if (k == CL->nscr) {
        if (CL->nscr == MAX_SCRATCH) {
            ctx_fail(ctx, FLOE_ERR, "OpenCL: more than %d scratch buffers", MAX_SCRATCH);
            return NULL;
        }
        CL->nscr++;
        memset(&CL->scr[k], 0, sizeof CL->scr[k]);
        snprintf(CL->scr[k].name, sizeof CL->scr[k].name, "%s", name);
    }
    if (!CL->scr[k].mem || CL->scr[k].bytes < bytes) {
        cl_rel(ctx, &CL->scr[k].mem);
        size_t b = bytes + bytes / 4 + 256;
        if (!(CL->scr[k].mem = cl_mk(ctx, b)))
            return NULL;
        CL->scr[k].bytes = b;
    }
    return CL->scr[k].mem;
}

void *cl_pinned(floe_ctx *ctx, const char *name, size_t bytes)
{
    if (!name || !bytes)
        return NULL;
    int k;
    for (k = 0; k < CL->npin; k++)
        if (!strcmp(CL->pin[k].name, name))
            break;
    if (k == CL->npin) {
        if (CL->npin == MAX_SCRATCH)
            return NULL;
        CL->npin++;
        memset(&CL->pin[k], 0, sizeof CL->pin[k]);
        snprintf(CL->pin[k].name, sizeof CL->pin[k].name, "%s", name);
    }
    if (CL->pin[k].host && CL->pin[k].bytes >= bytes)
        return CL->pin[k].host;
    if (CL->pin[k].host) {
        F->clEnqueueUnmapMemObject(CL->q, CL->pin[k].mem, CL->pin[k].host, 0, NULL, NULL);
        F->clFinish(CL->q);
        CL->pin[k].host = NULL;
    }
    cl_rel(ctx, &CL->pin[k].mem);
    cl_int e;
    CL->pin[k].mem = F->clCreateBuffer(CL->context, CL_MEM_ALLOC_HOST_PTR, bytes, NULL, &e);
    if (!CL->pin[k].mem)
        return NULL;
    CL->pin[k].host = F->clEnqueueMapBuffer(CL->q, CL->pin[k].mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0,
                                            NULL, NULL, &e);
    if (!CL->pin[k].host) {
        cl_rel(ctx, &CL->pin[k].mem);
        return NULL;
    }
    CL->pin[k].bytes = bytes;
    memset(CL->pin[k].host, 0, bytes);
    return CL->pin[k].host;
}

/* ---- halos through host memory (MPI: decomp_cl.c) ----------------------- */

/* the attribute mirror holding mem, NULL when mem is not one */
static cl_mirror *mirror_of_mem(floe_ctx *ctx, const void *mem)
{
    for (int s = 0; s < ctx->npsets; s++)
        for (int a = 0; a < ctx->sets[s].nattrs; a++)
            if (CL->sets[s].at[a].mem && (const void *)CL->sets[s].at[a].mem == mem)
                return &CL->sets[s].at[a];
    return NULL;
}

int cl_is_buffer(floe_ctx *ctx, const void *mem)
{
    if (!mem)
        return 0;
    for (int k = 0; k < CL->nscr; k++)
        if ((const void *)CL->scr[k].mem == mem)
            return 1;
    for (int k = 0; k < CL->npin; k++)
        if ((const void *)CL->pin[k].mem == mem)
            return 1;
    return mirror_of_mem(ctx, mem) != NULL;
}

int cl_buffer_io(floe_ctx *ctx, void *mem, int write, size_t off, size_t bytes, void *host)
{
    if (!bytes)
        return FLOE_OK;
    cl_int e = write ? F->clEnqueueWriteBuffer(CL->q, (cl_mem)mem, CL_TRUE, off, bytes, host, 0, NULL, NULL)
                     : F->clEnqueueReadBuffer(CL->q, (cl_mem)mem, CL_TRUE, off, bytes, host, 0, NULL, NULL);
    if (e != CL_SUCCESS)
        return cl_err(ctx, e, write ? "writing halo rows" : "reading rows for a halo");
    *(write ? &CL->bus_up : &CL->bus_down) += bytes;
    cl_mirror *m = write ? mirror_of_mem(ctx, mem) : NULL;
    if (m)
        m->host_stale = 1;
    return FLOE_OK;
}
