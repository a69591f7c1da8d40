/* The backend seam (internal): the one way the core talks to a compute
 * device. A backend is a table of functions (floe_backend_ops) and the state
 * behind it; the context holds a pointer to it, ctx->dev, which is NULL on
 * the host-only path: then nothing here is called and every helper below
 * returns at once. The OpenCL backend (core/src/opencl/) is the one
 * implementation; backend.c opens it. The way OBS keeps its graphics
 * backends behind one export table.
 *
 * The host copy of every attribute (attr.data) is the truth unless the
 * backend says otherwise: it tracks which of its device copies, and which
 * host copies, are stale (to_host, attr_state), and what a host-side change
 * of the positions makes stale (moved). */
#ifndef FLOE_DEVICE_H
#define FLOE_DEVICE_H

#include "ctx.h"

/* attr_state: which copies of an attribute are stale */
enum { DEV_HOST_STALE = 1u, DEV_DEVICE_STALE = 2u };

typedef struct floe_backend_ops {
    int kind;                                   /* FLOE_BACKEND_OPENCL */
    const char *(*describe)(floe_ctx *ctx);     /* "opencl: DEVICE (PLATFORM, VERSION, driver ...)" */
    void (*destroy)(floe_ctx *ctx);             /* releases everything; ctx->dev becomes NULL */

    /* ---- copies and staleness ---- */
    /* the host copy of one attribute current; write: the device copy stale */
    void (*to_host)(floe_ctx *ctx, pset *p, attr *at, int write);
    unsigned (*attr_state)(floe_ctx *ctx, const pset *p, const attr *at); /* DEV_*_STALE bits */
    /* set p changed on the host (positions, count, order): its device cell
     * sort and every device neighbour list are stale */
    void (*moved)(floe_ctx *ctx, pset *p);
    /* the device copy's capacity in elements (0 without one) */
    uint32_t (*capacity)(floe_ctx *ctx, const pset *p, const attr *at);
    /* host rows [first, first + count) written: copied into the device copy
     * where it is current and has room, else that copy marked stale (a set
     * that grows without a round trip of what the device holds: emit.c) */
    int (*write_rows)(floe_ctx *ctx, pset *p, attr *at, uint32_t first, uint32_t count);

    /* ---- neighbour lists ---- */
    int (*neighbours)(floe_ctx *ctx, int reorder); /* the 'neighbours' stage on the device */
    /* a build whose overflow check is not done yet (the lists speculative) */
    int (*lists_pending)(floe_ctx *ctx);
    /* do it: *rebuilt = 1 when lists changed, so the stages run on the
     * speculative lists must run again */
    int (*lists_settle)(floe_ctx *ctx, int *rebuilt);
    /* the host lists (ctx->nb_valid) from the device ones; FLOE_ERR without any */
    int (*lists_to_host)(floe_ctx *ctx);

    /* ---- runs, steps, stages, waits ---- */
    void (*run_begin)(floe_ctx *ctx);           /* kernel statistics per run */
    /* inside a run a step may leave its blow-up checks to a later one */
    void (*defer_checks)(floe_ctx *ctx, int on);
    int (*step_begin)(floe_ctx *ctx);
    /* before stage st: on_device, it runs its run_cl; else the host copies
     * of what it declares are made current (all of them for a host stage) */
    int (*stage_begin)(floe_ctx *ctx, const stage_inst *st, int on_device);
    /* after device stage `index`: its blow-up checks enqueued; *host_timed = 0
     * when the backend times it itself */
    int (*stage_end)(floe_ctx *ctx, int index, int *host_timed);
    int (*step_end)(floe_ctx *ctx);
    /* report the blow-up checks read so far without waiting */
    int (*checks_flush)(floe_ctx *ctx);

    /* ---- the core's stages and reductions on the device ---- */
    int (*gravity)(floe_ctx *ctx);
    int (*integrate)(floe_ctx *ctx);
    double (*max_speed)(floe_ctx *ctx);
    /* a frame's statistics of fluid set p reduced on the device: kinetic
     * energy, potential energy, sum and largest of the positive density
     * errors (run.c's frame_stats, without copying the set back) */
    int (*frame_stats)(floe_ctx *ctx, pset *p, double out[4]);

    /* ---- what modules reach through floe_api (ABI 1.1, api_device.c) ---- */
    void *(*context)(floe_ctx *ctx);
    void *(*queue)(floe_ctx *ctx);
    void *(*program)(floe_ctx *ctx, const char *module, const char *file);
    void *(*kernel)(floe_ctx *ctx, const char *module, const char *file, const char *kernel);
    /* the device buffer of an attribute, uploaded when stale; FLOE_WRITE
     * makes the host copy stale */
    void *(*attr)(floe_ctx *ctx, pset *p, attr *at, unsigned access);
    /* the device lists of fluid set q in set t */
    int (*lists)(floe_ctx *ctx, pset *q, pset *t, floe_cl_nlist *out);
    void *(*scratch)(floe_ctx *ctx, const char *name, size_t bytes);
    void *(*pinned)(floe_ctx *ctx, const char *name, size_t bytes);
    int (*launch)(floe_ctx *ctx, void *kernel, size_t n, int nargs, const floe_cl_arg *args, double bytes);
    /* ABI 1.10: a set's count changed on the device, its device copies kept
     * as the truth (resize.c): new rows zero; compaction by a device buffer
     * of keep flags (uint words, n_keep of them 1); an exclusive scan of n
     * uint words in place. The caller sets p->n and invalidates. */
    int (*set_resize)(floe_ctx *ctx, pset *p, uint32_t n);
    int (*set_compact)(floe_ctx *ctx, pset *p, void *keep, uint32_t n_keep);
    int (*scan)(floe_ctx *ctx, void *buf, uint32_t n);
    /* ABI 1.11: a stable sort of n ulong keys (their low `bits` bits) with
     * a uint payload, in place */
    int (*sort)(floe_ctx *ctx, void *keys, void *vals, uint32_t n, int bits);
    /* ABI 1.14: the cell sort of set p for cell walks (spos NULL: lists) */
    int (*cells)(floe_ctx *ctx, pset *p, floe_cl_cells *out);

    /* ---- halos through host memory (MPI, decomp_cl.c) ---- */
    /* mem is a buffer the backend gave out (an attribute's device copy, a
     * scratch or pinned buffer): 1, else 0 (a host pointer) */
    int (*is_buffer)(floe_ctx *ctx, const void *mem);
    /* bytes [off, off + bytes) of such a buffer to (write 0) or from the
     * host, waiting; written into an attribute's copy, its host copy stale */
    int (*buffer_io)(floe_ctx *ctx, void *mem, int write, size_t off, size_t bytes, void *host);
    /* rows idx[0..m) of nbuf such buffers (elems[b] bytes a row, whole
     * words), gathered on the device and read into out at once, buffer
     * after buffer, each m rows packed; waiting */
    int (*gather_rows)(floe_ctx *ctx, int nbuf, void *const *mems, const size_t *elems, const uint32_t *idx,
                       uint32_t m, void *out);
    /* the largest squared distance of set p's first n positions on the
     * device from those keep_positions kept (the last rebuild of the ghost
     * lists) */
    int (*max_drift2)(floe_ctx *ctx, pset *p, uint32_t n, double *out);
    /* how many of set p's first n positions on the device lie outside the
     * domain */
    int (*count_outside)(floe_ctx *ctx, pset *p, uint32_t n, uint32_t *out);
    /* bytes of attributes and rows copied to the device and back so far */
    void (*bus_bytes)(floe_ctx *ctx, uint64_t *up, uint64_t *down);
    /* the indices (ascending, into idx, room for n) of set p's first n
     * particles that lie, on the device: mode 0, outside [lo, hi) on some
     * axis (not a number: outside); mode 1, within r of a face of [lo, hi]
     * on some axis; infinite bounds cut nothing */
    int (*select_rows)(floe_ctx *ctx, pset *p, uint32_t n, const float lo[3], const float hi[3], float r, int mode,
                       uint32_t *idx, uint32_t *m);
    /* a device buffer of n keep flags, 1 but at idx[0..m) (set_compact's) */
    void *(*keep_except)(floe_ctx *ctx, uint32_t n, const uint32_t *idx, uint32_t m);
    /* set p's first n positions kept on the device for max_drift2 */
    int (*keep_positions)(floe_ctx *ctx, pset *p, uint32_t n);
} floe_backend_ops;

/* An implementation's state starts with this. */
struct floe_backend {
    const floe_backend_ops *ops;
};

/* backend.c: ctx->dev for a backend name (cpu, opencl, auto) and a device
 * ("PLATFORM:DEVICE"); cpu leaves it NULL. A message into err on failure. */
int backend_open(floe_ctx *ctx, const char *backend, const char *device, char *err, size_t errlen);
void backend_close(floe_ctx *ctx);
/* a function of the device runtime by name (api->cl_fn), NULL without one */
void *backend_sym(const char *name);

/* ---- the core's calls (each a no-op on the host-only path) ---- */

static inline void dev_host(floe_ctx *ctx, pset *p, attr *at, int write)
{
    if (ctx->dev && at)
        ctx->dev->ops->to_host(ctx, p, at, write);
}

/* every attribute of a set (resize, compact, reorder, frame output) */
static inline void dev_host_set(floe_ctx *ctx, pset *p, int write)
{
    if (ctx->dev)
        for (int a = 0; a < p->nattrs; a++)
            ctx->dev->ops->to_host(ctx, p, &p->attrs[a], write);
}

static inline void dev_moved(floe_ctx *ctx, pset *p)
{
    if (ctx->dev)
        ctx->dev->ops->moved(ctx, p);
}

static inline unsigned dev_attr_state(floe_ctx *ctx, const pset *p, const attr *at)
{
    return ctx->dev ? ctx->dev->ops->attr_state(ctx, p, at) : 0;
}

/* the floe_api entries of ABI 1.1 (api_device.c) */
int api_backend(floe_ctx *ctx);
void *api_cl_context(floe_ctx *ctx);
void *api_cl_queue(floe_ctx *ctx);
void *api_cl_program(floe_ctx *ctx, const char *module, const char *file);
void *api_cl_kernel(floe_ctx *ctx, const char *module, const char *file, const char *kernel);
void *api_cl_attr(floe_ctx *ctx, floe_set set, const char *name, floe_type type, unsigned access);
int api_cl_neighbours(floe_ctx *ctx, floe_set query, floe_set target, floe_cl_nlist *out);
void *api_cl_scratch(floe_ctx *ctx, const char *name, size_t bytes);
int api_cl_run(floe_ctx *ctx, void *kernel, size_t n, int nargs, const floe_cl_arg *args, double bytes);
void *api_cl_fn(const char *name);
void *api_cl_pinned(floe_ctx *ctx, const char *name, size_t bytes);
/* ABI 1.10 (particles.c, api_device.c) */
int ctx_set_resize_cl(floe_ctx *ctx, floe_set set, uint32_t n);
int ctx_set_compact_cl(floe_ctx *ctx, floe_set set, void *keep, uint32_t n_keep);
int api_cl_scan(floe_ctx *ctx, void *buf, uint32_t n);
int api_cl_sort(floe_ctx *ctx, void *keys, void *vals, uint32_t n, int bits);
/* ABI 1.14 */
int api_cl_cells(floe_ctx *ctx, floe_set set, floe_cl_cells *out);

#endif
