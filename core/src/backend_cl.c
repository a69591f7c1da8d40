/* The OpenCL backend (docs/opencl.md).
 *
 * OpenCL is loaded at run time (cl_loader.c); without a runtime, or when
 * libfloe is built without the OpenCL headers, every entry point here is a
 * no-op and the context runs on the C path.
 *
 * Attribute storage stays the single source of truth: each attribute may
 * have a device mirror (attr.dev). Two flags say which copy is current:
 * host_stale (the device wrote it since) and dev_stale (the host may have
 * written it since). A stage's run_cl asks for device buffers through
 * api->cl_attr (uploading stale ones, marking the host stale when it
 * writes); a C stage, an output or a host access copies back only what it
 * touches. Neighbour lists work the same way: device lists (ctx->nb_dev_valid)
 * or host lists (ctx->nb_valid), converted lazily when the other side asks.
 *
 * Blow-up checks of OpenCL stages run on the device: small kernels record
 * the first bad particle per (stage, set, attribute) in a flag word; the
 * flags (a few bytes) are read once at the end of each step, which also
 * resolves the per-stage timings (marker events, no wait per stage). */
#include "ctx.h"
#include "cl_loader.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Boundary volumes are computed on the host: the device copies of V go stale. */
int ctx_boundary_volumes(floe_ctx *ctx)
{
    int rc = floe_boundary_volumes(ctx);
    for (int s = 0; s < ctx->npsets && !rc; s++)
        if (ctx->sets[s].kind == FLOE_SET_BOUNDARY) {
            attr *V = pset_attr(&ctx->sets[s], "V");
            if (V)
                V->dev_stale = 1;
        }
    return rc;
}

#ifndef FLOE_HAVE_OPENCL

int ctx_cl_init(floe_ctx *ctx, const char *backend, const char *device, char *err, size_t errlen)
{
    (void)ctx, (void)device;
    if (!backend || !strcmp(backend, "cpu") || !strcmp(backend, "auto"))
        return FLOE_OK;
    if (!strcmp(backend, "opencl")) {
        snprintf(err, errlen, "floe.sim: backend 'opencl': this Floe was built without the OpenCL headers");
        return FLOE_ERR_ARG;
    }
    snprintf(err, errlen, "floe.sim: backend must be cpu, opencl or auto (got '%s')", backend);
    return FLOE_ERR_ARG;
}
void ctx_cl_destroy(floe_ctx *ctx) { (void)ctx; }
void ctx_cl_host(floe_ctx *ctx, attr *at, int write) { (void)ctx, (void)at, (void)write; }
void ctx_cl_host_set(floe_ctx *ctx, pset *p, int write) { (void)ctx, (void)p, (void)write; }
void ctx_cl_host_access(floe_ctx *ctx, pset *p, attr *at) { (void)ctx, (void)p, (void)at; }
int ctx_cl_lists_to_host(floe_ctx *ctx) { (void)ctx; return FLOE_ERR; }
double ctx_cl_max_speed(floe_ctx *ctx) { (void)ctx; return 0; }
int ctx_cl_step_begin(floe_ctx *ctx) { (void)ctx; return FLOE_OK; }
void ctx_cl_run_begin(floe_ctx *ctx) { (void)ctx; }
int ctx_cl_stage_begin(floe_ctx *ctx, const stage_inst *st, int use_cl)
{
    (void)ctx, (void)st, (void)use_cl;
    return FLOE_OK;
}
int ctx_cl_stage_end(floe_ctx *ctx, int index, int *host_timed) { (void)ctx, (void)index; *host_timed = 1; return FLOE_OK; }
int ctx_cl_step_end(floe_ctx *ctx) { (void)ctx; return FLOE_OK; }
int ctx_cl_checks_flush(floe_ctx *ctx) { (void)ctx; return FLOE_OK; }
int ctx_cl_neighbours(floe_ctx *ctx, int reorder) { (void)reorder; return ctx_fail(ctx, FLOE_ERR, "no OpenCL"); }
int ctx_cl_nb_pending(floe_ctx *ctx) { (void)ctx; return 0; }
int ctx_cl_nb_settle(floe_ctx *ctx, int *rebuilt) { (void)ctx; *rebuilt = 0; return FLOE_OK; }
int ctx_cl_gravity(floe_ctx *ctx) { return ctx_fail(ctx, FLOE_ERR, "no OpenCL"); }
int ctx_cl_integrate(floe_ctx *ctx) { return ctx_fail(ctx, FLOE_ERR, "no OpenCL"); }
int floe_cl_devices(void (*fn)(const char *line, void *u), void *u)
{
    fn("OpenCL: this Floe was built without the OpenCL headers (opencl-c-headers)", u);
    return -1;
}
int api_backend(floe_ctx *ctx) { (void)ctx; return FLOE_BACKEND_CPU; }
void *api_cl_context(floe_ctx *ctx) { (void)ctx; return NULL; }
void *api_cl_queue(floe_ctx *ctx) { (void)ctx; return NULL; }
void *api_cl_program(floe_ctx *ctx, const char *m, const char *f)
{
    (void)m, (void)f;
    ctx_fail(ctx, FLOE_ERR, "the OpenCL backend is not active");
    return NULL;
}
void *api_cl_kernel(floe_ctx *ctx, const char *m, const char *f, const char *k)
{
    (void)k;
    return api_cl_program(ctx, m, f);
}
void *api_cl_attr(floe_ctx *ctx, floe_set s, const char *n, floe_type t, unsigned a)
{
    (void)ctx, (void)s, (void)n, (void)t, (void)a;
    return NULL;
}
int api_cl_neighbours(floe_ctx *ctx, floe_set q, floe_set t, floe_cl_nlist *o)
{
    (void)q, (void)t, (void)o;
    return ctx_fail(ctx, FLOE_ERR, "the OpenCL backend is not active");
}
void *api_cl_scratch(floe_ctx *ctx, const char *n, size_t b)
{
    (void)ctx, (void)n, (void)b;
    return NULL;
}
int api_cl_run(floe_ctx *ctx, void *k, size_t n, int na, const floe_cl_arg *a, double b)
{
    (void)k, (void)n, (void)na, (void)a, (void)b;
    return ctx_fail(ctx, FLOE_ERR, "the OpenCL backend is not active");
}
void *api_cl_fn(const char *name) { return cl_loader_sym(name); }
void *api_cl_pinned(floe_ctx *ctx, const char *n, size_t b)
{
    (void)ctx, (void)n, (void)b;
    return NULL;
}
const char *floe_ctx_backend_name(floe_ctx *ctx)
{
    (void)ctx;
    return "cpu";
}
int floe_ctx_backend(floe_ctx *ctx)
{
    (void)ctx;
    return FLOE_BACKEND_CPU;
}

#else /* FLOE_HAVE_OPENCL */

#define MAX_PROGS 32
#define MAX_KERNELS 48
#define MAX_SCRATCH 32
#define MAX_FLAGS 256
#define FLAG_WIN 8      /* steps per read of the blow-up flags inside a run */
#define MAX_KSTATS 64
#define WG 128          /* local size of the element-wise launches */
#define SCAN_BLOCK 4096 /* scan_block: 256 work items x 16 words (SCAN_PER in neighbours.cl) */

typedef struct cl_prog {
    char module[NAME_LEN], file[128];
    cl_program prog;
    int nk;
    char kname[MAX_KERNELS][NAME_LEN];
    cl_kernel kern[MAX_KERNELS];
} cl_prog;

typedef struct cl_setdev {
    cl_mem key, rank, tmp, order, spos;
    uint32_t cap;
    cl_mem cs;
    uint32_t cs_cap;
    cl_mem cnt[MAX_SETS], idx[MAX_SETS];
    uint32_t lcap[MAX_SETS], lstride[MAX_SETS], ln[MAX_SETS];
    double ltotal[MAX_SETS];
    cl_mem perm_tmp;
    size_t perm_bytes;
} cl_setdev;

/* Kernel arguments as last set, per kernel: a launch sets only those that
 * changed (clSetKernelArg costs the host time on every launch otherwise).
 * Forgotten whenever a buffer is released, since a new buffer may reuse
 * the handle value. */
#define ARGC_SLOTS 256
#define ARGC_MAX 32
#define ARGC_BYTES 16
typedef struct argcache {
    void *k;
    uint8_t size[ARGC_MAX]; /* 0: unknown */
    unsigned char val[ARGC_MAX][ARGC_BYTES];
} argcache;

typedef struct flag_slot {
    int stage, set, attr, domain;
} flag_slot;

typedef struct kstat {
    char name[NAME_LEN];
    double ms, bytes;
    uint64_t calls;
} kstat;

typedef struct pending {
    cl_event ev;
    int k;
    double bytes;
} pending;

struct cl_backend {
    const cl_fns *f;
    cl_platform_id plat;
    cl_device_id dev;
    cl_context context;
    cl_command_queue q;
    char desc[640];
    int nprogs;
    cl_prog progs[MAX_PROGS];
    cl_setdev sets[MAX_SETS];
    cl_mem scan_sums[6];
    uint32_t scan_cap[6];
    cl_mem stats, flags, speed;
    int nflags;
    flag_slot slots[MAX_FLAGS];
    int nscr;
    struct {
        char name[96];
        cl_mem mem;
        size_t bytes;
    } scr[MAX_SCRATCH];
    int npin;
    struct {
        char name[96];
        cl_mem mem;
        void *host;
        size_t bytes;
    } pin[MAX_SCRATCH];
    /* timing */
    int host_timing;        /* clFinish per stage and host clocks */
    /* stage times: the events of a stage's first and last kernel (no
     * marker commands, which cost the queue a few microseconds each) */
    cl_event ev_begin[MAX_STAGES], ev_end[MAX_STAGES];
    argcache *argc;         /* ARGC_SLOTS entries, open addressing by kernel */
    int argcache_off, nb_local_off; /* FLOE_CL_ARGCACHE=0, FLOE_CL_NB_LOCAL=0 */
    /* neighbour lists built speculatively: the counts (overflow check) are
     * read without waiting and settled before the first stage that cannot
     * simply be run again (ctx_cl_nb_settle; FLOE_CL_NB_SPECULATE=0: at once) */
    int nb_spec_off;
    int nb_pending;         /* a build whose counts have not been looked at */
    int nb_np, nb_pq[MAX_SETS * MAX_SETS], nb_pt[MAX_SETS * MAX_SETS];
    cl_event nb_ev;         /* the counts' read */
    cl_uint nb_st_page[2 * MAX_SETS * MAX_SETS]; /* where they go without pinned memory */
    int cur_stage;          /* OpenCL stage being enqueued, -1 outside */
    int flags_clear;        /* the flag words are all ones on the device */
    int stage_events;       /* time stages by kernel events (profiling queue) */
    int sample_every;       /* steps between timed steps (FLOE_CL_STAGE_SAMPLE) */
    int sampling;           /* this step's stages are timed */
    uint64_t tstep;         /* steps begun, for the sampling */
    double stage_sum[MAX_STAGES]; /* ms of each OpenCL stage over the timed steps of the run */
    uint32_t stage_n[MAX_STAGES];
    unsigned char stage_cl[MAX_STAGES]; /* ran on the device this step */
    /* the blow-up flags of the previous step, read without waiting (a run
     * checks them one step late, and before every frame) */
    /* Blow-up flags: step b of a window of FLAG_WIN steps writes block b
     * of the flag buffer; inside a run the window is read in one copy,
     * without waiting, when full, and reported when the next one is full
     * (or at the frame's end). Two windows: one filling, one in flight. */
    struct flag_win {
        int nsteps;
        int nflags[FLAG_WIN];
        uint64_t step[FLAG_WIN];
        double time[FLAG_WIN];
        flag_slot slots[FLAG_WIN][MAX_FLAGS];
        cl_uint fl[FLAG_WIN * MAX_FLAGS]; /* pageable copy, without pinned memory */
    } win[2];
    int wcur, wpending;     /* window filling; window read in flight (-1: none) */
    cl_event wev;           /* that read */
    cl_uint flag_base;      /* this step's block in the flag buffer */
    cl_mem pinned;          /* host-allocated buffer the flags are read into */
    cl_uint *pinned_fl;     /* its mapping, 2 windows (NULL: the pageable copies) */
    /* host side: time blocked in the neighbour-count and end-of-step reads */
    double wait_nb_ms, wait_end_ms;
    uint64_t wait_steps;
    double launch_ms, step_t0, step_host_ms; /* host time in launches; per step */
    uint64_t launches;
    int profile;            /* per-kernel events (FLOE_CL_PROFILE) */
    int nks;
    kstat ks[MAX_KSTATS];
    pending *pend;
    int npend, cappend;
    uint64_t steps;
};

#define CL (ctx->cl)
#define F (ctx->cl->f)

static int report_flags(floe_ctx *ctx, const cl_uint *fl, const flag_slot *slots, int n, uint64_t step, double time);

static int cl_err(floe_ctx *ctx, cl_int e, const char *what)
{
    return ctx_fail(ctx, FLOE_ERR, "OpenCL: %s failed (error %d)", what, (int)e);
}

/* ---------------------------------------------------------- devices -- */

static void dev_str(const cl_fns *f, cl_device_id d, cl_device_info what, char *buf, size_t len)
{
    buf[0] = 0;
    if (f->clGetDeviceInfo(d, what, len, buf, NULL) != CL_SUCCESS)
        snprintf(buf, len, "?");
}

static void plat_str(const cl_fns *f, cl_platform_id p, cl_platform_info what, char *buf, size_t len)
{
    buf[0] = 0;
    if (f->clGetPlatformInfo(p, what, len, buf, NULL) != CL_SUCCESS)
        snprintf(buf, len, "?");
}

int floe_cl_devices(void (*fn)(const char *line, void *u), void *u)
{
    const char *why;
    const cl_fns *f = cl_load(&why);
    char line[1024];
    if (!f) {
        snprintf(line, sizeof line, "OpenCL: %s (the cpu backend still runs)", why);
        fn(line, u);
        return -1;
    }
    cl_platform_id plats[16];
    cl_uint np = 0;
    if (f->clGetPlatformIDs(16, plats, &np) != CL_SUCCESS || np == 0) {
        fn("OpenCL: the runtime found no platform (no ICD installed?)", u);
        return 0;
    }
    int total = 0;
    for (cl_uint p = 0; p < np && p < 16; p++) {
        char name[256], vendor[256], ver[256];
        plat_str(f, plats[p], CL_PLATFORM_NAME, name, sizeof name);
        plat_str(f, plats[p], CL_PLATFORM_VENDOR, vendor, sizeof vendor);
        plat_str(f, plats[p], CL_PLATFORM_VERSION, ver, sizeof ver);
        snprintf(line, sizeof line, "platform %u: %s (%s, %s)", p, name, vendor, ver);
        fn(line, u);
        cl_device_id devs[16];
        cl_uint nd = 0;
        if (f->clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 16, devs, &nd) != CL_SUCCESS)
            nd = 0;
        for (cl_uint d = 0; d < nd && d < 16; d++) {
            char dn[256], dver[256], drv[256];
            cl_device_type type = 0;
            cl_uint cu = 0;
            cl_ulong mem = 0;
            dev_str(f, devs[d], CL_DEVICE_NAME, dn, sizeof dn);
            dev_str(f, devs[d], CL_DEVICE_VERSION, dver, sizeof dver);
            dev_str(f, devs[d], CL_DRIVER_VERSION, drv, sizeof drv);
            f->clGetDeviceInfo(devs[d], CL_DEVICE_TYPE, sizeof type, &type, NULL);
            f->clGetDeviceInfo(devs[d], CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
            f->clGetDeviceInfo(devs[d], CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL);
            snprintf(line, sizeof line, "  device %u:%u: %s [%s, %u compute units, %.1f GiB, %s, driver %s]", p, d, dn,
                     type & CL_DEVICE_TYPE_GPU ? "gpu" : type & CL_DEVICE_TYPE_CPU ? "cpu" : "other", cu,
                     (double)mem / (1024.0 * 1024.0 * 1024.0), dver, drv);
            fn(line, u);
            total++;
        }
    }
    return total;
}

static int pick_device(floe_ctx *ctx, const cl_fns *f, const char *device, char *err, size_t errlen)
{
    cl_platform_id plats[16];
    cl_uint np = 0;
    if (f->clGetPlatformIDs(16, plats, &np) != CL_SUCCESS || np == 0) {
        snprintf(err, errlen, "no OpenCL platform found (no ICD installed?)");
        return -1;
    }
    int want_p = -1, want_d = -1;
    if (device && device[0]) {
        if (sscanf(device, "%d:%d", &want_p, &want_d) != 2 || want_p < 0 || want_d < 0) {
            snprintf(err, errlen, "device '%s': expected PLATFORM:DEVICE as `floe devices` lists them", device);
            return -1;
        }
    }
    cl_device_id first = NULL, gpu = NULL;
    cl_platform_id first_p = NULL, gpu_p = NULL;
    for (cl_uint p = 0; p < np && p < 16; p++) {
        cl_device_id devs[16];
        cl_uint nd = 0;
        if (f->clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 16, devs, &nd) != CL_SUCCESS)
            continue;
        for (cl_uint d = 0; d < nd && d < 16; d++) {
            if (want_p >= 0) {
                if ((int)p == want_p && (int)d == want_d) {
                    CL->plat = plats[p];
                    CL->dev = devs[d];
                    return 0;
                }
                continue;
            }
            cl_device_type type = 0;
            f->clGetDeviceInfo(devs[d], CL_DEVICE_TYPE, sizeof type, &type, NULL);
            if (!first) {
                first = devs[d];
                first_p = plats[p];
            }
            if (!gpu && (type & CL_DEVICE_TYPE_GPU)) {
                gpu = devs[d];
                gpu_p = plats[p];
            }
        }
    }
    if (want_p >= 0) {
        snprintf(err, errlen, "no OpenCL device %d:%d (see `floe devices`)", want_p, want_d);
        return -1;
    }
    if (!first) {
        snprintf(err, errlen, "no OpenCL device found");
        return -1;
    }
    CL->plat = gpu ? gpu_p : first_p;
    CL->dev = gpu ? gpu : first;
    return 0;
}

int ctx_cl_init(floe_ctx *ctx, const char *backend, const char *device, char *err, size_t errlen)
{
    if (!backend || !strcmp(backend, "cpu"))
        return FLOE_OK;
    int autosel = !strcmp(backend, "auto");
    if (!autosel && strcmp(backend, "opencl")) {
        snprintf(err, errlen, "floe.sim: backend must be cpu, opencl or auto (got '%s')", backend);
        return FLOE_ERR_ARG;
    }
    const char *why = NULL;
    const cl_fns *f = cl_load(&why);
    char msg[512] = "";
    if (!f)
        snprintf(msg, sizeof msg, "%s", why);
    if (f) {
        CL = calloc(1, sizeof *CL);
        if (!CL) {
            snprintf(err, errlen, "floe.sim: out of memory");
            return FLOE_ERR_NOMEM;
        }
        CL->f = f;
        if (!pick_device(ctx, f, device, msg, sizeof msg)) {
            cl_int e;
            CL->context = f->clCreateContext(NULL, 1, &CL->dev, NULL, NULL, &e);
            /* FLOE_CL_STAGE_TIMES=0 and no FLOE_CL_PROFILE: a queue without
             * profiling (stage times are then host enqueue times) */
            const char *stt = getenv("FLOE_CL_STAGE_TIMES"), *pr = getenv("FLOE_CL_PROFILE");
            int events = !(stt && !strcmp(stt, "0")) || (pr && pr[0] && strcmp(pr, "0") != 0);
            if (CL->context)
                CL->q = f->clCreateCommandQueue(CL->context, CL->dev, events ? CL_QUEUE_PROFILING_ENABLE : 0, &e);
            CL->stage_events = events;
            if (!CL->q)
                snprintf(msg, sizeof msg, "cannot create an OpenCL context and queue (error %d)", (int)e);
        }
        if (!CL->q) {
            ctx_cl_destroy(ctx);
            f = NULL;
        }
    }
    if (!f) {
        if (autosel) {
            ctx_log(ctx, FLOE_LOG_INFO, "backend auto: %s; running on the cpu", msg);
            return FLOE_OK;
        }
        snprintf(err, errlen, "floe.sim: backend 'opencl': %s", msg);
        return FLOE_ERR_ARG;
    }
    char dn[256], pn[256], dver[256], drv[256];
    dev_str(f, CL->dev, CL_DEVICE_NAME, dn, sizeof dn);
    dev_str(f, CL->dev, CL_DEVICE_VERSION, dver, sizeof dver);
    dev_str(f, CL->dev, CL_DRIVER_VERSION, drv, sizeof drv);
    plat_str(f, CL->plat, CL_PLATFORM_NAME, pn, sizeof pn);
    snprintf(CL->desc, sizeof CL->desc, "opencl: %s (%s, %s, driver %s)", dn, pn, dver, drv);
    const char *prof = getenv("FLOE_CL_PROFILE");
    CL->profile = prof && prof[0] && strcmp(prof, "0") != 0;
    const char *sync = getenv("FLOE_CL_SYNC_STAGES");
    CL->host_timing = sync && sync[0] && strcmp(sync, "0") != 0;
    CL->cur_stage = -1;
    CL->wpending = -1;
    const char *se = getenv("FLOE_CL_STAGE_SAMPLE");
    CL->sample_every = se && atoi(se) > 0 ? atoi(se) : 16;
    /* A/B switches for timing (docs/opencl.md), read once */
    const char *ac = getenv("FLOE_CL_ARGCACHE"), *nl = getenv("FLOE_CL_NB_LOCAL");
    CL->argcache_off = ac && !strcmp(ac, "0");
    CL->nb_local_off = nl && !strcmp(nl, "0");
    const char *sp = getenv("FLOE_CL_NB_SPECULATE");
    CL->nb_spec_off = sp && !strcmp(sp, "0");
    ctx_log(ctx, FLOE_LOG_INFO, "backend %s", CL->desc);
    return FLOE_OK;
}

const char *floe_ctx_backend_name(floe_ctx *ctx) { return ctx->cl ? ctx->cl->desc : "cpu"; }
int floe_ctx_backend(floe_ctx *ctx) { return ctx->cl ? FLOE_BACKEND_OPENCL : FLOE_BACKEND_CPU; }

static void rel(floe_ctx *ctx, cl_mem *m)
{
    if (*m) {
        F->clReleaseMemObject(*m);
        if (CL->argc) /* the handle value may come back for another buffer */
            memset(CL->argc, 0, ARGC_SLOTS * sizeof *CL->argc);
    }
    *m = NULL;
}

static argcache *argc_of(floe_ctx *ctx, cl_kernel k)
{
    if (CL->argcache_off)
        return NULL;
    if (!CL->argc && !(CL->argc = calloc(ARGC_SLOTS, sizeof *CL->argc)))
        return NULL;
    size_t h = ((uintptr_t)k >> 4) * 2654435761u;
    for (int probe = 0; probe < ARGC_SLOTS; probe++) {
        argcache *c = &CL->argc[(h + (size_t)probe) % ARGC_SLOTS];
        if (c->k == (void *)k)
            return c;
        if (!c->k) {
            c->k = (void *)k;
            return c;
        }
    }
    return NULL; /* full: set every argument */
}

static void print_profile(floe_ctx *ctx);

void ctx_cl_destroy(floe_ctx *ctx)
{
    if (!CL)
        return;
    if (CL->q)
        F->clFinish(CL->q);
    if (CL->nb_ev)
        F->clReleaseEvent(CL->nb_ev);
    CL->nb_ev = NULL;
    if (CL->profile && CL->steps)
        print_profile(ctx);
    const char *wv = getenv("FLOE_CL_WAITS");
    if ((CL->profile || (wv && wv[0] && strcmp(wv, "0") != 0)) && CL->wait_steps)
        printf("OpenCL host: %llu steps, waits %.4f ms/step for the neighbour counts, %.4f ms/step at the step "
               "end; %.4f ms/step from step begin to end, %.4f ms/step in %.1f kernel launches\n",
               (unsigned long long)CL->wait_steps, CL->wait_nb_ms / (double)CL->wait_steps,
               CL->wait_end_ms / (double)CL->wait_steps, CL->step_host_ms / (double)CL->wait_steps,
               CL->launch_ms / (double)CL->wait_steps, (double)CL->launches / (double)CL->wait_steps);
    for (int s = 0; s < ctx->npsets; s++)
        for (int a = 0; a < ctx->sets[s].nattrs; a++) {
            attr *at = &ctx->sets[s].attrs[a];
            rel(ctx, (cl_mem *)&at->dev);
            at->dev_cap = 0;
            at->dev_stale = 1;
            at->host_stale = 0;
        }
    for (int s = 0; s < MAX_SETS; s++) {
        cl_setdev *d = &CL->sets[s];
        cl_mem *ms[] = {&d->key, &d->rank, &d->tmp, &d->order, &d->spos, &d->cs, &d->perm_tmp};
        for (size_t k = 0; k < sizeof ms / sizeof *ms; k++)
            rel(ctx, ms[k]);
        for (int t = 0; t < MAX_SETS; t++) {
            rel(ctx, &d->cnt[t]);
            rel(ctx, &d->idx[t]);
        }
    }
    for (int k = 0; k < 6; k++)
        rel(ctx, &CL->scan_sums[k]);
    rel(ctx, &CL->stats);
    rel(ctx, &CL->flags);
    rel(ctx, &CL->speed);
    for (int k = 0; k < CL->nscr; k++)
        rel(ctx, &CL->scr[k].mem);
    for (int k = 0; k < CL->npin; k++) {
        if (CL->pin[k].host)
            F->clEnqueueUnmapMemObject(CL->q, CL->pin[k].mem, CL->pin[k].host, 0, NULL, NULL);
        CL->pin[k].host = NULL;
        rel(ctx, &CL->pin[k].mem);
    }
    if (CL->npin)
        F->clFinish(CL->q);
    for (int p = 0; p < CL->nprogs; p++) {
        for (int k = 0; k < CL->progs[p].nk; k++)
            F->clReleaseKernel(CL->progs[p].kern[k]);
        if (CL->progs[p].prog)
            F->clReleaseProgram(CL->progs[p].prog);
    }
    for (int i = 0; i < CL->npend; i++)
        F->clReleaseEvent(CL->pend[i].ev);
    free(CL->pend);
    free(CL->argc);
    CL->argc = NULL;
    if (CL->wpending >= 0 && CL->wev)
        F->clWaitForEvents(1, &CL->wev), F->clReleaseEvent(CL->wev);
    if (CL->pinned_fl)
        F->clEnqueueUnmapMemObject(CL->q, CL->pinned, CL->pinned_fl, 0, NULL, NULL);
    if (CL->pinned_fl)
        F->clFinish(CL->q);
    CL->pinned_fl = NULL;
    rel(ctx, &CL->pinned);
    for (int i = 0; i < MAX_STAGES; i++) {
        if (CL->ev_begin[i])
            F->clReleaseEvent(CL->ev_begin[i]);
        if (CL->ev_end[i])
            F->clReleaseEvent(CL->ev_end[i]);
    }
    if (CL->q)
        F->clReleaseCommandQueue(CL->q);
    if (CL->context)
        F->clReleaseContext(CL->context);
    free(CL);
    CL = NULL;
}

/* ---------------------------------------------------------- buffers -- */

static cl_mem mk(floe_ctx *ctx, size_t bytes)
{
    cl_int e;
    cl_mem m = F->clCreateBuffer(CL->context, CL_MEM_READ_WRITE, bytes ? bytes : 4, NULL, &e);
    if (!m)
        ctx_fail(ctx, FLOE_ERR_NOMEM, "OpenCL: cannot allocate %zu bytes on the device (error %d)", bytes, (int)e);
    return m;
}

/* a buffer of at least `need` elements of `es` bytes (contents dropped on growth) */
static int ensure(floe_ctx *ctx, cl_mem *m, uint32_t *cap, uint64_t need, size_t es)
{
    if (*m && *cap >= need)
        return FLOE_OK;
    rel(ctx, m);
    uint64_t c = need + need / 4 + 64;
    if (c > UINT32_MAX)
        c = need;
    if (!(*m = mk(ctx, (size_t)c * es)))
        return FLOE_ERR_NOMEM;
    *cap = (uint32_t)c;
    return FLOE_OK;
}

static attr *set_attr_idx(pset *p, int a) { return &p->attrs[a]; }

/* The device copy of an attribute up to date (allocated to the set's capacity). */
static int dev_sync(floe_ctx *ctx, pset *p, attr *at)
{
    size_t es = floe_type_size(at->type);
    if (!at->dev || at->dev_cap < p->n) {
        if (at->dev && at->host_stale) { /* cannot happen: resizes copy back first */
            return ctx_fail(ctx, FLOE_ERR, "OpenCL: attribute '%s' of set '%s' resized while only on the device",
                            at->name, p->name);
        }
        rel(ctx, (cl_mem *)&at->dev);
        uint32_t cap = p->cap > p->n ? p->cap : p->n;
        if (!(at->dev = mk(ctx, (size_t)(cap ? cap : 1) * es)))
            return FLOE_ERR_NOMEM;
        at->dev_cap = cap;
        at->dev_stale = 1;
    }
    if (at->dev_stale) {
        if (p->n) {
            cl_int e = F->clEnqueueWriteBuffer(CL->q, at->dev, CL_TRUE, 0, (size_t)p->n * es, at->data, 0, NULL, NULL);
            if (e != CL_SUCCESS)
                return cl_err(ctx, e, "uploading an attribute");
        }
        at->dev_stale = 0;
    }
    return FLOE_OK;
}

void ctx_cl_host(floe_ctx *ctx, attr *at, int write)
{
    if (!CL || !at)
        return;
    if (at->host_stale) {
        pset *p = NULL;
        for (int s = 0; s < ctx->npsets && !p; s++)
            if (at >= ctx->sets[s].attrs && at < ctx->sets[s].attrs + MAX_ATTRS)
                p = &ctx->sets[s];
        if (p && p->n && at->dev) {
            cl_int e = F->clEnqueueReadBuffer(CL->q, at->dev, CL_TRUE, 0, (size_t)p->n * floe_type_size(at->type),
                                              at->data, 0, NULL, NULL);
            if (e != CL_SUCCESS)
                ctx_log(ctx, FLOE_LOG_ERROR, "OpenCL: copying attribute '%s' back failed (error %d)", at->name, (int)e);
        }
        at->host_stale = 0;
    }
    if (write)
        at->dev_stale = 1;
}

void ctx_cl_host_set(floe_ctx *ctx, pset *p, int write)
{
    if (!CL)
        return;
    for (int a = 0; a < p->nattrs; a++)
        ctx_cl_host(ctx, &p->attrs[a], write);
}

void ctx_cl_host_access(floe_ctx *ctx, pset *p, attr *at)
{
    if (!CL)
        return;
    int write = 1;
    const stage_inst *st = ctx->running;
    if (st && st->desc) /* a C stage: attributes it only reads stay valid on the device */
        for (const floe_attr_desc *a = st->desc->attrs; a && a->name; a++)
            if ((a->kind & p->kind) && !strcmp(a->name, at->name))
                write = (a->access & FLOE_WRITE) != 0;
    ctx_cl_host(ctx, at, write);
}

/* ---------------------------------------------------------- programs -- */

static const char *kernel_dirs(int i)
{
    static char env[4096];
    static const char *fixed[] = {FLOE_SOURCE_KERNEL_DIR, FLOE_INSTALL_KERNEL_DIR};
    const char *e = getenv("FLOE_KERNEL_PATH");
    int ne = 0;
    if (e && e[0]) { /* ':'-separated, searched first */
        const char *s = e;
        for (;;) {
            const char *c = strchr(s, ':');
            size_t l = c ? (size_t)(c - s) : strlen(s);
            if (l && ne++ == i) {
                snprintf(env, sizeof env, "%.*s", (int)l, s);
                return env;
            }
            if (!c)
                break;
            s = c + 1;
        }
    }
    i -= ne;
    return i >= 0 && i < 2 ? fixed[i] : NULL;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (buf && fread(buf, 1, (size_t)n, fp) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(fp);
    if (buf) {
        buf[n] = 0;
        *len = (size_t)n;
    }
    return buf;
}

static cl_prog *get_prog(floe_ctx *ctx, const char *module, const char *file)
{
    if (!CL) {
        ctx_fail(ctx, FLOE_ERR, "the OpenCL backend is not active (floe.sim{ backend = \"opencl\" })");
        return NULL;
    }
    for (int p = 0; p < CL->nprogs; p++)
        if (!strcmp(CL->progs[p].module, module) && !strcmp(CL->progs[p].file, file))
            return CL->progs[p].prog ? &CL->progs[p] : NULL;
    if (CL->nprogs == MAX_PROGS) {
        ctx_fail(ctx, FLOE_ERR, "OpenCL: more than %d kernel programs", MAX_PROGS);
        return NULL;
    }
    char path[4200], dir[4096], looked[8192] = "";
    char *src = NULL;
    size_t len = 0, used = 0;
    for (int i = 0; kernel_dirs(i) && !src; i++) {
        snprintf(dir, sizeof dir, "%s", kernel_dirs(i));
        snprintf(path, sizeof path, "%s/%s/%s", dir, module, file);
        src = read_file(path, &len);
        int w = snprintf(looked + used, sizeof looked - used, "%s%s", used ? ", " : "", path);
        if (w > 0 && (size_t)w < sizeof looked - used)
            used += (size_t)w;
    }
    if (!src) {
        ctx_fail(ctx, FLOE_ERR_ARG, "OpenCL: module '%s': kernel source %s/%s not found (looked in %s; "
                 "FLOE_KERNEL_PATH adds folders)", module, module, file, looked);
        return NULL;
    }
    /* #line makes the compiler's messages name the file */
    size_t hl = strlen(path) + 32;
    char *full = malloc(hl + len + 1);
    if (!full) {
        free(src);
        ctx_fail(ctx, FLOE_ERR_NOMEM, "out of memory");
        return NULL;
    }
    int h = snprintf(full, hl, "#line 1 \"%s\"\n", path);
    memcpy(full + h, src, len + 1);
    free(src);
    const char *srcs[1] = {full};
    cl_int e;
    cl_program prog = F->clCreateProgramWithSource(CL->context, 1, srcs, NULL, &e);
    free(full);
    if (!prog) {
        cl_err(ctx, e, "clCreateProgramWithSource");
        return NULL;
    }
    char opts[4400];
    snprintf(opts, sizeof opts, "-cl-std=CL1.2 -I %s", dir);
    e = F->clBuildProgram(prog, 1, &CL->dev, opts, NULL, NULL);
    if (e != CL_SUCCESS) {
        size_t ll = 0;
        F->clGetProgramBuildInfo(prog, CL->dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &ll);
        char *log = malloc(ll + 1);
        if (log) {
            log[0] = 0;
            F->clGetProgramBuildInfo(prog, CL->dev, CL_PROGRAM_BUILD_LOG, ll, log, NULL);
            log[ll] = 0;
        }
        ctx_fail(ctx, FLOE_ERR, "OpenCL: module '%s': building %s failed (error %d):\n%s", module, path, (int)e,
                 log ? log : "(no build log)");
        free(log);
        F->clReleaseProgram(prog);
        return NULL;
    }
    cl_prog *cp = &CL->progs[CL->nprogs++];
    memset(cp, 0, sizeof *cp);
    snprintf(cp->module, sizeof cp->module, "%s", module);
    snprintf(cp->file, sizeof cp->file, "%s", file);
    cp->prog = prog;
    return cp;
}

static cl_kernel get_kernel(floe_ctx *ctx, const char *module, const char *file, const char *name)
{
    cl_prog *cp = get_prog(ctx, module, file);
    if (!cp)
        return NULL;
    for (int k = 0; k < cp->nk; k++)
        if (!strcmp(cp->kname[k], name))
            return cp->kern[k];
    if (cp->nk == MAX_KERNELS) {
        ctx_fail(ctx, FLOE_ERR, "OpenCL: more than %d kernels in %s/%s", MAX_KERNELS, module, file);
        return NULL;
    }
    cl_int e;
    cl_kernel k = F->clCreateKernel(cp->prog, name, &e);
    if (!k) {
        ctx_fail(ctx, FLOE_ERR, "OpenCL: module '%s': no kernel '%s' in %s (error %d)", module, name, file, (int)e);
        return NULL;
    }
    snprintf(cp->kname[cp->nk], NAME_LEN, "%s", name);
    cp->kern[cp->nk++] = k;
    return k;
}

static const char *kernel_name(floe_ctx *ctx, cl_kernel k)
{
    for (int p = 0; p < CL->nprogs; p++)
        for (int i = 0; i < CL->progs[p].nk; i++)
            if (CL->progs[p].kern[i] == k)
                return CL->progs[p].kname[i];
    return "?";
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* ---------------------------------------------------------- launches -- */

static void note_event(floe_ctx *ctx, cl_kernel k, cl_event ev, double bytes)
{
    const char *name = kernel_name(ctx, k);
    int ki = -1;
    for (int i = 0; i < CL->nks; i++)
        if (!strcmp(CL->ks[i].name, name))
            ki = i;
    if (ki < 0 && CL->nks < MAX_KSTATS) {
        ki = CL->nks++;
        memset(&CL->ks[ki], 0, sizeof CL->ks[ki]);
        snprintf(CL->ks[ki].name, NAME_LEN, "%s", name);
    }
    if (ki < 0 || (CL->npend == CL->cappend && !(CL->pend = realloc(CL->pend, (size_t)(CL->cappend = CL->cappend * 2 + 64) * sizeof *CL->pend)))) {
        F->clReleaseEvent(ev);
        return;
    }
    CL->pend[CL->npend++] = (pending){ev, ki, bytes};
}

static int launch_(floe_ctx *ctx, cl_kernel k, size_t n, size_t local, int nargs, const floe_cl_arg *args,
                   double bytes);

/* a launch, its host time counted (FLOE_CL_WAITS) */
static int launch(floe_ctx *ctx, cl_kernel k, size_t n, size_t local, int nargs, const floe_cl_arg *args,
                  double bytes)
{
    double t0 = now_ms();
    int rc = launch_(ctx, k, n, local, nargs, args, bytes);
    CL->launch_ms += now_ms() - t0;
    return rc;
}

static int launch_(floe_ctx *ctx, cl_kernel k, size_t n, size_t local, int nargs, const floe_cl_arg *args,
                   double bytes)
{
    if (!k)
        return FLOE_ERR;
    argcache *ac = argc_of(ctx, k);
    for (int a = 0; a < nargs; a++) {
        const size_t sz = args[a].size;
        int cache = ac && a < ARGC_MAX && sz > 0 && sz <= ARGC_BYTES && args[a].value;
        if (cache && ac->size[a] == sz && !memcmp(ac->val[a], args[a].value, sz))
            continue; /* set to this value already */
        cl_int e = F->clSetKernelArg(k, (cl_uint)a, sz, args[a].value);
        if (e != CL_SUCCESS) {
            if (ac && a < ARGC_MAX)
                ac->size[a] = 0;
            return ctx_fail(ctx, FLOE_ERR, "OpenCL: kernel '%s': argument %d rejected (error %d)", kernel_name(ctx, k),
                            a, (int)e);
        }
        if (cache) {
            ac->size[a] = (uint8_t)sz;
            memcpy(ac->val[a], args[a].value, sz);
        } else if (ac && a < ARGC_MAX) {
            ac->size[a] = 0;
        }
    }
    if (n == 0)
        return FLOE_OK;
    CL->launches++;
    size_t global = (n + local - 1) / local * local;
    cl_event ev = NULL;
    const int si = CL->cur_stage;
    cl_int e = F->clEnqueueNDRangeKernel(CL->q, k, 1, NULL, &global, &local, 0, NULL,
                                         CL->profile || si >= 0 ? &ev : NULL);
    if (e != CL_SUCCESS)
        return ctx_fail(ctx, FLOE_ERR, "OpenCL: kernel '%s' could not be enqueued over %zu items (error %d)",
                        kernel_name(ctx, k), n, (int)e);
    if (ev && si >= 0) { /* first kernel of the stage, else its latest */
        cl_event *slot = CL->ev_begin[si] ? &CL->ev_end[si] : &CL->ev_begin[si];
        if (*slot)
            F->clReleaseEvent(*slot);
        F->clRetainEvent(ev);
        *slot = ev;
    }
    if (ev && CL->profile)
        note_event(ctx, k, ev, bytes);
    else if (ev)
        F->clReleaseEvent(ev);
    return FLOE_OK;
}

#define ARG(v) FLOE_CL_ARG(v)
#define LAUNCH(k, n, local, bytes, ...)                                                                   \
    launch(ctx, k, n, local, (int)(sizeof((floe_cl_arg[]){__VA_ARGS__}) / sizeof(floe_cl_arg)),          \
           (floe_cl_arg[]){__VA_ARGS__}, bytes)

static cl_kernel core_kernel(floe_ctx *ctx, const char *file, const char *name)
{
    return get_kernel(ctx, "core", file, name);
}

/* ---------------------------------------------------------- module api -- */

int api_backend(floe_ctx *ctx) { return ctx->cl ? FLOE_BACKEND_OPENCL : FLOE_BACKEND_CPU; }
void *api_cl_context(floe_ctx *ctx) { return ctx->cl ? (void *)ctx->cl->context : NULL; }
void *api_cl_queue(floe_ctx *ctx) { return ctx->cl ? (void *)ctx->cl->q : NULL; }

void *api_cl_program(floe_ctx *ctx, const char *module, const char *file)
{
    cl_prog *p = module && file ? get_prog(ctx, module, file) : NULL;
    return p ? (void *)p->prog : NULL;
}

void *api_cl_kernel(floe_ctx *ctx, const char *module, const char *file, const char *kernel)
{
    return module && file && kernel ? (void *)get_kernel(ctx, module, file, kernel) : NULL;
}

void *api_cl_attr(floe_ctx *ctx, floe_set set, const char *name, floe_type type, unsigned access)
{
    pset *p = ctx_set(ctx, set);
    if (!CL || !p || !name)
        return NULL;
    attr *at = pset_attr(p, name);
    if (!at || at->type != type)
        return NULL;
    if (dev_sync(ctx, p, at))
        return NULL;
    if (access & FLOE_WRITE)
        at->host_stale = 1;
    return at->dev;
}

void *api_cl_scratch(floe_ctx *ctx, const char *name, size_t bytes)
{
    if (!CL || !name)
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
        rel(ctx, &CL->scr[k].mem);
        size_t b = bytes + bytes / 4 + 256;
        if (!(CL->scr[k].mem = mk(ctx, b)))
            return NULL;
        CL->scr[k].bytes = b;
    }
    return CL->scr[k].mem;
}

void *api_cl_pinned(floe_ctx *ctx, const char *name, size_t bytes)
{
    if (!CL || !name || !bytes)
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
    rel(ctx, &CL->pin[k].mem);
    cl_int e;
    CL->pin[k].mem = F->clCreateBuffer(CL->context, CL_MEM_ALLOC_HOST_PTR, bytes, NULL, &e);
    if (!CL->pin[k].mem)
        return NULL;
    CL->pin[k].host = F->clEnqueueMapBuffer(CL->q, CL->pin[k].mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0,
                                            NULL, NULL, &e);
    if (!CL->pin[k].host) {
        rel(ctx, &CL->pin[k].mem);
        return NULL;
    }
    CL->pin[k].bytes = bytes;
    memset(CL->pin[k].host, 0, bytes);
    return CL->pin[k].host;
}

int api_cl_run(floe_ctx *ctx, void *kernel, size_t n, int nargs, const floe_cl_arg *args, double bytes)
{
    if (!CL)
        return ctx_fail(ctx, FLOE_ERR, "the OpenCL backend is not active");
    return launch(ctx, (cl_kernel)kernel, n, WG, nargs, args, bytes);
}

void *api_cl_fn(const char *name) { return cl_loader_sym(name); }

/* ---------------------------------------------------------- neighbours -- */

static int scan(floe_ctx *ctx, cl_mem buf, uint32_t m, int level)
{
    if (level >= 6)
        return ctx_fail(ctx, FLOE_ERR, "OpenCL: scan too deep");
    uint32_t nblk = (m + SCAN_BLOCK - 1) / SCAN_BLOCK;
    int rc = ensure(ctx, &CL->scan_sums[level], &CL->scan_cap[level], nblk, 4);
    if (rc)
        return rc;
    cl_kernel kb = core_kernel(ctx, "neighbours.cl", "scan_block"), ka = core_kernel(ctx, "neighbours.cl", "scan_add");
    if (!kb || !ka)
        return FLOE_ERR;
    cl_mem sums = CL->scan_sums[level];
    if ((rc = LAUNCH(kb, (size_t)nblk * 256, 256, 8.0 * m, ARG(buf), ARG(m), ARG(sums))))
        return rc;
    if (nblk > 1) {
        if ((rc = scan(ctx, sums, nblk, level + 1)))
            return rc;
        if ((rc = LAUNCH(ka, (size_t)nblk * 256, 256, 8.0 * m, ARG(buf), ARG(m), ARG(sums))))
            return rc;
    }
    return FLOE_OK;
}

static void grid_args(floe_ctx *ctx, cl_float4 *go, cl_int4 *gn)
{
    const nb_grid *g = &ctx->nbgrid;
    go->s[0] = g->origin[0];
    go->s[1] = g->origin[1];
    go->s[2] = g->origin[2];
    go->s[3] = 1.0f / g->cell;
    gn->s[0] = g->n[0];
    gn->s[1] = g->n[1];
    gn->s[2] = g->n[2];
    gn->s[3] = g->dim == 3;
}

static int dev_sort(floe_ctx *ctx, int s)
{
    pset *p = &ctx->sets[s];
    cl_setdev *d = &CL->sets[s];
    const nb_grid *g = &ctx->nbgrid;
    uint32_t n = p->n, ncells = (uint32_t)g->n[0] * (uint32_t)g->n[1] * (uint32_t)g->n[2];
    int rc;
    if (!d->key || d->cap < n) {
        cl_mem *ms[] = {&d->key, &d->rank, &d->tmp, &d->order};
        for (int k = 0; k < 4; k++)
            rel(ctx, ms[k]);
        rel(ctx, &d->spos);
        uint32_t cap = (p->cap > n ? p->cap : n) + 64;
        for (int k = 0; k < 4; k++)
            if (!(*ms[k] = mk(ctx, (size_t)cap * 4)))
                return FLOE_ERR_NOMEM;
        if (!(d->spos = mk(ctx, (size_t)cap * 16)))
            return FLOE_ERR_NOMEM;
        d->cap = cap;
    }
    if ((rc = ensure(ctx, &d->cs, &d->cs_cap, (uint64_t)ncells + 1, 4)))
        return rc;
    cl_uint zero = 0;
    cl_int e = F->clEnqueueFillBuffer(CL->q, d->cs, &zero, 4, 0, ((size_t)ncells + 1) * 4, 0, NULL, NULL);
    if (e != CL_SUCCESS)
        return cl_err(ctx, e, "clEnqueueFillBuffer");
    if (n == 0)
        return FLOE_OK;
    floe_set h = ctx_set_handle(ctx, s);
    cl_mem x = api_cl_attr(ctx, h, "x", FLOE_VEC3, FLOE_READ);
    if (!x)
        return ctx->error[0] ? FLOE_ERR : ctx_fail(ctx, FLOE_ERR, "set '%s' has no positions", p->name);
    cl_float4 go;
    cl_int4 gn;
    grid_args(ctx, &go, &gn);
    if ((rc = LAUNCH(core_kernel(ctx, "neighbours.cl", "nb_keys"), n, WG, 24.0 * n, ARG(x), ARG(n), ARG(go), ARG(gn),
                     ARG(d->key), ARG(d->rank), ARG(d->cs))))
        return rc;
    uint32_t m = ncells + 1;
    if ((rc = scan(ctx, d->cs, m, 0)))
        return rc;
    if ((rc = LAUNCH(core_kernel(ctx, "neighbours.cl", "nb_scatter"), n, WG, 16.0 * n, ARG(d->key), ARG(d->rank),
                     ARG(d->cs), ARG(n), ARG(d->tmp))))
        return rc;
    if ((rc = LAUNCH(core_kernel(ctx, "neighbours.cl", "nb_stable"), n, WG, 24.0 * n, ARG(d->tmp), ARG(d->key),
                     ARG(d->cs), ARG(n), ARG(d->order))))
        return rc;
    return LAUNCH(core_kernel(ctx, "neighbours.cl", "nb_gather"), n, WG, 32.0 * n, ARG(x), ARG(d->order), ARG(n),
                  ARG(d->spos));
}

/* Physically reorder every attribute of a fluid set along the device sort. */
static int dev_reorder(floe_ctx *ctx, int s)
{
    pset *p = &ctx->sets[s];
    cl_setdev *d = &CL->sets[s];
    uint32_t n = p->n;
    size_t need = (size_t)n * 12;
    int rc;
    if (!d->perm_tmp || d->perm_bytes < need) {
        rel(ctx, &d->perm_tmp);
        size_t b = need + need / 4 + 256;
        if (!(d->perm_tmp = mk(ctx, b)))
            return FLOE_ERR_NOMEM;
        d->perm_bytes = b;
    }
    cl_kernel k = core_kernel(ctx, "core.cl", "permute");
    for (int a = 0; a < p->nattrs; a++) {
        attr *at = set_attr_idx(p, a);
        if ((rc = dev_sync(ctx, p, at)))
            return rc;
        cl_uint comps = (cl_uint)(floe_type_size(at->type) / 4);
        cl_mem src = at->dev;
        if ((rc = LAUNCH(k, n, WG, 8.0 * comps * n + 4.0 * n, ARG(src), ARG(d->perm_tmp), ARG(d->order), ARG(n),
                         ARG(comps))))
            return rc;
        cl_int e = F->clEnqueueCopyBuffer(CL->q, d->perm_tmp, at->dev, 0, 0, (size_t)n * comps * 4, 0, NULL, NULL);
        if (e != CL_SUCCESS)
            return cl_err(ctx, e, "clEnqueueCopyBuffer");
        at->host_stale = 1;
    }
    p->sorted_valid = 0; /* the host sort no longer matches */
    ctx->nb_valid = 0;
    return FLOE_OK;
}

/* where the neighbour counts are read to: pinned memory where there is some */
static cl_uint *nb_stats_host(floe_ctx *ctx)
{
    cl_uint *p = api_cl_pinned(ctx, "core.nb_stats", sizeof CL->nb_st_page);
    return p ? p : CL->nb_st_page;
}

static int build_pair(floe_ctx *ctx, int q, int t, cl_uint slot)
{
    pset *pq = &ctx->sets[q], *pt = &ctx->sets[t];
    cl_setdev *dq = &CL->sets[q], *dt = &CL->sets[t];
    uint32_t nq = pq->n;
    if (!dq->lstride[t])
        dq->lstride[t] = ctx->info.dim == 3 ? 64u : 32u;
    if (!dq->cnt[t] || dq->lcap[t] < nq) {
        uint64_t rows = pq->cap > nq ? pq->cap : nq;
        rel(ctx, &dq->cnt[t]);
        rel(ctx, &dq->idx[t]);
        dq->lcap[t] = 0;
        if (!(dq->cnt[t] = mk(ctx, (size_t)(rows ? rows : 1) * 4)) ||
            !(dq->idx[t] = mk(ctx, (size_t)(rows ? rows : 1) * dq->lstride[t] * 4)))
            return FLOE_ERR_NOMEM;
        dq->lcap[t] = (uint32_t)rows;
    }
    dq->ln[t] = nq;
    if (nq == 0)
        return FLOE_OK;
    if (pt->n == 0) { /* nothing to find */
        cl_uint zero = 0;
        cl_int e = F->clEnqueueFillBuffer(CL->q, dq->cnt[t], &zero, 4, 0, (size_t)nq * 4, 0, NULL, NULL);
        return e == CL_SUCCESS ? FLOE_OK : cl_err(ctx, e, "clEnqueueFillBuffer");
    }
    cl_mem xq = api_cl_attr(ctx, ctx_set_handle(ctx, q), "x", FLOE_VEC3, FLOE_READ);
    if (!xq)
        return FLOE_ERR;
    cl_float4 go, plo, period;
    cl_int4 gn;
    grid_args(ctx, &go, &gn);
    for (int k = 0; k < 3; k++) {
        plo.s[k] = ctx->nbgrid.plo[k];
        period.s[k] = ctx->nbgrid.period[k];
    }
    plo.s[3] = ctx->nbgrid.cell;
    period.s[3] = 0;
    cl_float r2 = ctx->info.support * ctx->info.support;
    cl_int same = q == t, excl = q == t;
    cl_uint per = ctx->nbgrid.periodic, stride = dq->lstride[t], pitch = dq->lcap[t], nqq = nq;
    /* bytes: queries, counts, and the lists as large as the last ones */
    double bytes = 24.0 * nq + 4.0 * (dq->ltotal[t] > 0 ? dq->ltotal[t] : 30.0 * nq);
    /* a set against itself, no periodic axes, lists of at most 64: the
     * work-group kernel (candidates staged in local memory) */
    if (same && !per && stride <= 64 && !CL->nb_local_off)
        return LAUNCH(core_kernel(ctx, "neighbours.cl", "nb_build_local"), nq, WG, bytes, ARG(nqq), ARG(dt->spos),
                      ARG(dt->cs), ARG(go), ARG(gn), ARG(r2), ARG(dq->cnt[t]), ARG(dq->idx[t]), ARG(stride),
                      ARG(pitch), ARG(CL->stats), ARG(slot));
    return LAUNCH(core_kernel(ctx, "neighbours.cl", "nb_build"), nq, WG, bytes, ARG(same), ARG(xq), ARG(nqq),
                  ARG(dt->spos), ARG(dt->order), ARG(dt->cs), ARG(go), ARG(gn), ARG(r2), ARG(excl), ARG(per),
                  ARG(plo), ARG(period), ARG(dq->cnt[t]), ARG(dq->idx[t]), ARG(stride), ARG(pitch), ARG(CL->stats),
                  ARG(slot));
}

/* Clear the counts and build the lists of the set pairs which[0..n) (all
 * of CL->nb_pq/nb_pt when which is NULL), each reporting into its slot */
static int build_pairs(floe_ctx *ctx, const int *which, int n)
{
    cl_uint zero = 0;
    cl_int e = F->clEnqueueFillBuffer(CL->q, CL->stats, &zero, 4, 0, (size_t)2 * CL->nb_np * 4, 0, NULL, NULL);
    if (e != CL_SUCCESS)
        return cl_err(ctx, e, "clEnqueueFillBuffer");
    for (int k = 0; k < n; k++) {
        const int pr = which ? which[k] : k;
        int rc = build_pair(ctx, CL->nb_pq[pr], CL->nb_pt[pr], (cl_uint)pr);
        if (rc)
            return rc;
    }
    return FLOE_OK;
}

int ctx_cl_neighbours(floe_ctx *ctx, int reorder)
{
    int rb, rc;
    if (CL && CL->nb_pending && (rc = ctx_cl_nb_settle(ctx, &rb))) /* an earlier build not looked at */
        return rc;
    rc = ctx_nb_grid_ensure(ctx);
    if (rc)
        return rc;
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        if (p->is_static && p->dev_sorted_valid)
            continue;
        if ((rc = dev_sort(ctx, s)))
            return rc;
        /* static sets were reordered once on the host (boundary volumes) */
        if (!p->is_static && reorder && p->n > 1) {
            /* the previous step's checks name particles by index: report
             * them before the indices change */
            if ((rc = ctx_cl_checks_flush(ctx)) || (rc = dev_reorder(ctx, s)) || (rc = dev_sort(ctx, s)))
                return rc;
        }
        p->dev_sorted_valid = 1;
    }
    enum { NPAIR = MAX_SETS * MAX_SETS };
    if (!CL->stats && !(CL->stats = mk(ctx, 2 * NPAIR * 4)))
        return FLOE_ERR_NOMEM;
    int np = 0;
    for (int q = 0; q < ctx->npsets; q++)
        if (ctx->sets[q].kind == FLOE_SET_FLUID)
            for (int t = 0; t < ctx->npsets; t++) {
                CL->nb_pq[np] = q;
                CL->nb_pt[np] = t;
                np++;
            }
    CL->nb_np = np;
    if ((rc = build_pairs(ctx, NULL, np)))
        return rc;
    /* the one small read of the neighbour update, the largest count and the
     * total of every pair: without waiting for it */
    cl_uint *st = nb_stats_host(ctx);
    cl_int e = F->clEnqueueReadBuffer(CL->q, CL->stats, CL_FALSE, 0, (size_t)2 * np * 4, st, 0, NULL, &CL->nb_ev);
    if (e != CL_SUCCESS)
        return cl_err(ctx, e, "reading the neighbour counts");
    F->clFlush(CL->q);
    CL->nb_pending = 1;
    ctx->nb_dev_valid = 1;
    ctx->nb_valid = 0;
    ctx->nb_updates++;
    if (CL->nb_spec_off) {
        int rebuilt;
        return ctx_cl_nb_settle(ctx, &rebuilt);
    }
    return FLOE_OK;
}

int ctx_cl_nb_pending(floe_ctx *ctx)
{
    return CL && CL->nb_pending;
}

/* Look at the counts of the last build: where a list overflowed its stride
 * (rows were cut), widen it and build that pair again, now waiting for the
 * counts. *rebuilt tells the caller that stages run on the speculative
 * lists must run again. */
int ctx_cl_nb_settle(floe_ctx *ctx, int *rebuilt)
{
    *rebuilt = 0;
    if (!CL || !CL->nb_pending)
        return FLOE_OK;
    CL->nb_pending = 0;
    enum { NPAIR = MAX_SETS * MAX_SETS };
    const int np = CL->nb_np;
    cl_uint *st = nb_stats_host(ctx);
    double t0 = now_ms();
    cl_int e = F->clWaitForEvents(1, &CL->nb_ev);
    CL->wait_nb_ms += now_ms() - t0;
    F->clReleaseEvent(CL->nb_ev);
    CL->nb_ev = NULL;
    if (e != CL_SUCCESS)
        return cl_err(ctx, e, "reading the neighbour counts");
    int pending[NPAIR], npending = 0, rc;
    for (int round = 0;; round++) {
        /* an overflow: kernels enqueued on the speculative lists may still
         * read them; let them finish before the lists are released */
        for (int k = 0; !round && k < np; k++)
            if (st[2 * k] > CL->sets[CL->nb_pq[k]].lstride[CL->nb_pt[k]]) {
                F->clFinish(CL->q);
                break;
            }
        int left = 0;
        for (int k = 0; k < (round ? npending : np); k++) {
            int pr = round ? pending[k] : k;
            cl_setdev *d = &CL->sets[CL->nb_pq[pr]];
            int t = CL->nb_pt[pr];
            d->ltotal[t] = st[2 * pr + 1];
            if (st[2 * pr] > d->lstride[t]) { /* rare: widen, rebuild this pair */
                d->lstride[t] = (st[2 * pr] + 7u) & ~7u;
                rel(ctx, &d->cnt[t]);
                rel(ctx, &d->idx[t]);
                pending[left++] = pr;
            }
        }
        npending = left;
        if (!npending)
            break;
        *rebuilt = 1;
        if (round > 4)
            return ctx_fail(ctx, FLOE_ERR, "OpenCL: neighbour lists keep overflowing");
        if ((rc = build_pairs(ctx, pending, npending)))
            return rc;
        t0 = now_ms();
        e = F->clEnqueueReadBuffer(CL->q, CL->stats, CL_TRUE, 0, (size_t)2 * np * 4, st, 0, NULL, NULL);
        CL->wait_nb_ms += now_ms() - t0;
        if (e != CL_SUCCESS)
            return cl_err(ctx, e, "reading the neighbour counts");
    }
    return FLOE_OK;
}

/* Host lists (neighbours.c layout) from the device lists. */
int ctx_cl_lists_to_host(floe_ctx *ctx)
{
    if (!CL || !ctx->nb_dev_valid)
        return FLOE_ERR;
    int rebuilt, rc;
    /* the pipeline settles the lists before any C stage; this is for other
     * callers, which have run nothing on the speculative lists */
    if ((rc = ctx_cl_nb_settle(ctx, &rebuilt)))
        return rc;
    uint32_t *tmp = NULL;
    size_t tcap = 0;
    for (int q = 0; q < ctx->npsets; q++) {
        pset *pq = &ctx->sets[q];
        if (pq->kind != FLOE_SET_FLUID)
            continue;
        cl_setdev *d = &CL->sets[q];
        for (int t = 0; t < ctx->npsets; t++) {
            nb_list *l = &pq->lists[t];
            uint32_t n = d->ln[t], stride = d->lstride[t], pitch = d->lcap[t];
            /* host rows as nb_build leaves them: the stride a multiple of 8,
             * each row padded with its first index to a whole block of 8
             * (floe_nlist; the AVX2 rows read whole blocks) */
            const uint32_t hstride = (stride + 7u) & ~7u;
            size_t need = (size_t)pitch * stride;
            uint32_t *c = realloc(l->count, (size_t)(n ? n : 1) * 4);
            if (c)
                l->count = c;
            uint32_t *ix = c ? realloc(l->idx, (size_t)(n ? n : 1) * (hstride ? hstride : 8) * 4) : NULL;
            if (ix)
                l->idx = ix;
            if (need > tcap) {
                free(tmp);
                tcap = need;
                tmp = malloc(tcap * 4);
            }
            if (!c || !ix || !tmp) {
                free(tmp);
                return ctx_fail(ctx, FLOE_ERR_NOMEM, "out of memory copying neighbour lists");
            }
            l->n = n;
            l->cap = n ? n : 1;
            l->stride = hstride ? hstride : 8;
            if (n) {
                cl_int e = F->clEnqueueReadBuffer(CL->q, d->cnt[t], CL_TRUE, 0, (size_t)n * 4, l->count, 0, NULL, NULL);
                if (e == CL_SUCCESS)
                    e = F->clEnqueueReadBuffer(CL->q, d->idx[t], CL_TRUE, 0, need * 4, tmp, 0, NULL, NULL);
                if (e != CL_SUCCESS) {
                    free(tmp);
                    return cl_err(ctx, e, "reading neighbour lists");
                }
                for (uint32_t i = 0; i < n; i++) {
                    uint32_t *row = l->idx + (size_t)i * l->stride;
                    const uint32_t cnt = l->count[i] < stride ? l->count[i] : stride;
                    for (uint32_t k = 0; k < cnt; k++)
                        row[k] = tmp[(size_t)k * pitch + i];
                    nb_pad_row(row, cnt, l->stride);
                }
            }
        }
    }
    free(tmp);
    ctx->nb_valid = 1;
    return FLOE_OK;
}

/* Device lists from the host lists (a C 'neighbours' stage before OpenCL stages). */
static int lists_to_device(floe_ctx *ctx)
{
    uint32_t *tmp = NULL;
    size_t tcap = 0;
    for (int q = 0; q < ctx->npsets; q++) {
        pset *pq = &ctx->sets[q];
        if (pq->kind != FLOE_SET_FLUID)
            continue;
        cl_setdev *d = &CL->sets[q];
        for (int t = 0; t < ctx->npsets; t++) {
            const nb_list *l = &pq->lists[t];
            uint32_t n = l->n, stride = l->stride ? l->stride : 8;
            rel(ctx, &d->cnt[t]);
            rel(ctx, &d->idx[t]);
            if (!(d->cnt[t] = mk(ctx, (size_t)(n ? n : 1) * 4)) || !(d->idx[t] = mk(ctx, (size_t)(n ? n : 1) * stride * 4))) {
                free(tmp);
                return FLOE_ERR_NOMEM;
            }
            d->lcap[t] = n ? n : 1;
            d->lstride[t] = stride;
            d->ln[t] = n;
            size_t need = (size_t)n * stride;
            if (need > tcap) {
                free(tmp);
                tcap = need;
                if (!(tmp = calloc(tcap, 4)))
                    return ctx_fail(ctx, FLOE_ERR_NOMEM, "out of memory copying neighbour lists");
            }
            double total = 0;
            for (uint32_t i = 0; i < n; i++) {
                total += l->count[i];
                for (uint32_t k = 0; k < l->count[i]; k++)
                    tmp[(size_t)k * n + i] = l->idx[(size_t)i * l->stride + k];
            }
            d->ltotal[t] = total;
            if (n) {
                cl_int e = F->clEnqueueWriteBuffer(CL->q, d->cnt[t], CL_TRUE, 0, (size_t)n * 4, l->count, 0, NULL, NULL);
                if (e == CL_SUCCESS)
                    e = F->clEnqueueWriteBuffer(CL->q, d->idx[t], CL_TRUE, 0, need * 4, tmp, 0, NULL, NULL);
                if (e != CL_SUCCESS) {
                    free(tmp);
                    return cl_err(ctx, e, "uploading neighbour lists");
                }
            }
        }
    }
    free(tmp);
    ctx->nb_dev_valid = 1;
    return FLOE_OK;
}

int api_cl_neighbours(floe_ctx *ctx, floe_set query, floe_set target, floe_cl_nlist *out)
{
    pset *q = ctx_set(ctx, query), *t = ctx_set(ctx, target);
    if (!CL)
        return ctx_fail(ctx, FLOE_ERR, "the OpenCL backend is not active");
    if (!q || !t || q->kind != FLOE_SET_FLUID || !out)
        return ctx_fail(ctx, FLOE_ERR_ARG, "cl_neighbours: invalid sets (the query must be a fluid set)");
    if (!ctx->nb_dev_valid) {
        if (!ctx->nb_valid)
            return ctx_fail(ctx, FLOE_ERR_ARG, "no neighbour lists for set '%s' (run the 'neighbours' stage first)",
                            q->name);
        int rc = lists_to_device(ctx);
        if (rc)
            return rc;
    }
    int qi = (int)(q - ctx->sets), ti = (int)(t - ctx->sets);
    cl_setdev *d = &CL->sets[qi];
    if (d->ln[ti] < q->n)
        return ctx_fail(ctx, FLOE_ERR, "stale neighbour lists for set '%s'", q->name);
    out->n = d->ln[ti];
    out->stride = d->lstride[ti];
    out->pitch = d->lcap[ti];
    out->count = d->cnt[ti];
    out->idx = d->idx[ti];
    out->total = d->ltotal[ti];
    return FLOE_OK;
}

/* ---------------------------------------------------------- core stages -- */

int ctx_cl_gravity(floe_ctx *ctx)
{
    cl_float4 g = {{ctx->info.gravity[0], ctx->info.gravity[1], ctx->info.gravity[2], 0}};
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        if (p->kind != FLOE_SET_FLUID)
            continue;
        cl_mem a = api_cl_attr(ctx, ctx_set_handle(ctx, s), "a", FLOE_VEC3, FLOE_WRITE);
        cl_uint n = p->n;
        int rc = a ? LAUNCH(core_kernel(ctx, "core.cl", "gravity"), n, WG, 12.0 * n, ARG(a), ARG(n), ARG(g)) : FLOE_ERR;
        if (rc)
            return rc;
    }
    return FLOE_OK;
}

int ctx_cl_integrate(floe_ctx *ctx)
{
    cl_float dt = (float)ctx->info.dt;
    cl_uint per = ctx->info.periodic;
    cl_float4 lo = {{ctx->info.domain_min[0], ctx->info.domain_min[1], ctx->info.domain_min[2], 0}};
    cl_float4 L = {{ctx->info.period[0], ctx->info.period[1], ctx->info.period[2], 0}};
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        if (p->kind != FLOE_SET_FLUID)
            continue;
        floe_set h = ctx_set_handle(ctx, s);
        cl_mem a = api_cl_attr(ctx, h, "a", FLOE_VEC3, FLOE_READ);
        cl_mem v = api_cl_attr(ctx, h, "v", FLOE_VEC3, FLOE_READ | FLOE_WRITE);
        cl_mem x = api_cl_attr(ctx, h, "x", FLOE_VEC3, FLOE_READ | FLOE_WRITE);
        cl_uint n = p->n;
        int rc = a && v && x ? LAUNCH(core_kernel(ctx, "core.cl", "integrate"), n, WG, 60.0 * n, ARG(a), ARG(v), ARG(x),
                                      ARG(n), ARG(dt), ARG(per), ARG(lo), ARG(L))
                             : FLOE_ERR;
        if (rc)
            return rc;
        p->sorted_valid = 0;
        p->dev_sorted_valid = 0;
    }
    ctx->nb_valid = 0;
    ctx->nb_dev_valid = 0;
    return FLOE_OK;
}

double ctx_cl_max_speed(floe_ctx *ctx)
{
    if (!CL)
        return 0;
    if (!CL->speed && !(CL->speed = mk(ctx, 4)))
        return 0;
    cl_uint zero = 0, out = 0;
    F->clEnqueueFillBuffer(CL->q, CL->speed, &zero, 4, 0, 4, 0, NULL, NULL);
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        if (p->kind != FLOE_SET_FLUID || p->n == 0)
            continue;
        cl_mem v = api_cl_attr(ctx, ctx_set_handle(ctx, s), "v", FLOE_VEC3, FLOE_READ);
        cl_uint n = p->n;
        if (!v || LAUNCH(core_kernel(ctx, "core.cl", "max_speed2"), n, WG, 12.0 * n, ARG(v), ARG(n), ARG(CL->speed)))
            return 0;
    }
    F->clEnqueueReadBuffer(CL->q, CL->speed, CL_TRUE, 0, 4, &out, 0, NULL, NULL);
    float v2;
    memcpy(&v2, &out, 4);
    return sqrt((double)v2);
}

/* ---------------------------------------------------------- dispatch -- */

void ctx_cl_run_begin(floe_ctx *ctx)
{
    if (!CL)
        return;
    CL->nks = 0;
    CL->steps = 0;
    memset(CL->stage_sum, 0, sizeof CL->stage_sum);
    memset(CL->stage_n, 0, sizeof CL->stage_n);
    CL->tstep = 0; /* the run's first step is timed */
}

int ctx_cl_step_begin(floe_ctx *ctx)
{
    if (!CL)
        return FLOE_OK;
    if (!CL->flags && !(CL->flags = mk(ctx, FLAG_WIN * MAX_FLAGS * 4)))
        return FLOE_ERR_NOMEM;
    if (!CL->pinned) { /* reads into host-allocated memory do not wait for the copy */
        cl_int em;
        CL->pinned = F->clCreateBuffer(CL->context, CL_MEM_ALLOC_HOST_PTR, 2 * FLAG_WIN * MAX_FLAGS * 4, NULL, &em);
        if (CL->pinned)
            CL->pinned_fl = F->clEnqueueMapBuffer(CL->q, CL->pinned, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                                  2 * FLAG_WIN * MAX_FLAGS * 4, 0, NULL, NULL, &em);
    }
    /* the checks only lower flag words from all ones, and a raised flag
     * ends the step with a report: clear them only after one (or at first) */
    if (!CL->flags_clear) {
        cl_uint ones = 0xffffffffu;
        cl_int e = F->clEnqueueFillBuffer(CL->q, CL->flags, &ones, 4, 0, FLAG_WIN * MAX_FLAGS * 4, 0, NULL, NULL);
        if (e != CL_SUCCESS)
            return cl_err(ctx, e, "clEnqueueFillBuffer");
        CL->flags_clear = 1;
    }
    CL->nflags = 0;
    CL->flag_base = (cl_uint)CL->win[CL->wcur].nsteps * MAX_FLAGS;
    /* stage times: kernel events on every sample_every-th step only (an
     * event costs the host microseconds per kernel); the steps between
     * are counted at the run's average of the timed steps */
    CL->step_t0 = now_ms();
    CL->sampling = CL->stage_events && (CL->profile || CL->tstep % (uint64_t)CL->sample_every == 0);
    CL->tstep++;
    memset(CL->stage_cl, 0, sizeof CL->stage_cl);
    return FLOE_OK;
}

int ctx_cl_stage_begin(floe_ctx *ctx, const stage_inst *st, int use_cl)
{
    if (!CL)
        return FLOE_OK;
    int i = (int)(st - ctx->stages);
    if (!use_cl) {
        /* a C stage: the host copies of what it declares, current; what
         * it writes is then stale on the device. Host (Lua) stages may touch
         * anything. Waiting here keeps device work out of its time. */
        F->clFinish(CL->q);
        /* settle the outstanding checks, earlier steps' and this step's so
         * far, before the host looks at (or reorders) the particles */
        int rc = ctx_cl_checks_flush(ctx);
        if (!rc && CL->nflags) {
            cl_uint fl[MAX_FLAGS];
            cl_int e = F->clEnqueueReadBuffer(CL->q, CL->flags, CL_TRUE, (size_t)CL->flag_base * 4,
                                              (size_t)CL->nflags * 4, fl, 0, NULL, NULL);
            rc = e != CL_SUCCESS ? cl_err(ctx, e, "reading the blow-up checks")
                                 : report_flags(ctx, fl, CL->slots, CL->nflags, ctx->info.step, ctx->info.time);
        }
        if (rc)
            return rc;
        if (!st->desc) {
            for (int s = 0; s < ctx->npsets; s++)
                ctx_cl_host_set(ctx, &ctx->sets[s], 1);
            return FLOE_OK;
        }
        for (const floe_attr_desc *a = st->desc->attrs; a && a->name; a++)
            for (int s = 0; s < ctx->npsets; s++)
                if (ctx->sets[s].kind & a->kind)
                    ctx_cl_host(ctx, pset_attr(&ctx->sets[s], a->name), (a->access & FLOE_WRITE) != 0);
        return FLOE_OK;
    }
    if (i >= 0 && i < MAX_STAGES)
        CL->stage_cl[i] = 1;
    if (CL->host_timing)
        F->clFinish(CL->q);
    else if (i >= 0 && i < MAX_STAGES && CL->sampling) {
        for (int k = 0; k < 2; k++) {
            cl_event *ev = k ? &CL->ev_end[i] : &CL->ev_begin[i];
            if (*ev)
                F->clReleaseEvent(*ev);
            *ev = NULL;
        }
        CL->cur_stage = i;
    }
    return FLOE_OK;
}

static int stage_writes(const stage_inst *st, const char *name, floe_set_kind kind)
{
    for (const floe_attr_desc *a = st->desc->attrs; a && a->name; a++)
        if ((a->access & FLOE_WRITE) && (a->kind & kind) && !strcmp(a->name, name))
            return 1;
    return 0;
}

/* After an OpenCL stage: enqueue its blow-up checks (one launch per set it
 * writes, groups of four attributes), then its end marker. */
int ctx_cl_stage_end(floe_ctx *ctx, int i, int *host_timed)
{
    *host_timed = 1;
    if (!CL)
        return FLOE_OK;
    const stage_inst *st = &ctx->stages[i];
    int rc;
    cl_kernel kchk = NULL;
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        if (p->kind != FLOE_SET_FLUID || p->n == 0)
            continue;
        int list[MAX_ATTRS], nl = 0;
        for (int a = 0; a < p->nattrs; a++) {
            attr *at = &p->attrs[a];
            if ((at->type == FLOE_F32 || at->type == FLOE_VEC3) && stage_writes(st, at->name, p->kind) && at->dev &&
                !at->dev_stale) /* written on the device */
                list[nl++] = a;
        }
        attr *x = &p->attrs[0];
        int dom = stage_writes(st, "x", p->kind) && x->dev && !x->dev_stale;
        for (int g = 0; g < nl || (g == 0 && dom); g += 4) {
            if (CL->nflags + 5 > MAX_FLAGS)
                break;
            if (!kchk && !(kchk = core_kernel(ctx, "core.cl", "check_stage")))
                return FLOE_ERR;
            cl_mem dummy = CL->flags; /* for absent buffers: never read */
            cl_mem m[4] = {dummy, dummy, dummy, dummy}, xm = g == 0 && dom ? (cl_mem)x->dev : dummy;
            cl_int dm = g == 0 && dom;
            cl_uint c[4] = {0, 0, 0, 0}, slot = CL->flag_base + (cl_uint)CL->nflags, n = p->n, per = ctx->info.periodic;
            double bytes = 0;
            for (int k = 0; k < 4; k++) {
                CL->slots[CL->nflags + k] = (flag_slot){i, s, -1, 0};
                if (g + k < nl) {
                    attr *at = &p->attrs[list[g + k]];
                    m[k] = at->dev;
                    c[k] = at->type == FLOE_VEC3 ? 3 : 1;
                    CL->slots[CL->nflags + k].attr = list[g + k];
                    bytes += 4.0 * c[k] * n;
                }
            }
            CL->slots[CL->nflags + 4] = (flag_slot){i, s, dm ? 0 : -1, 1};
            CL->nflags += 5;
            cl_int dim = ctx->info.dim;
            cl_float4 lo = {{ctx->info.domain_min[0], ctx->info.domain_min[1], ctx->info.domain_min[2], 0}};
            cl_float4 hi = {{ctx->info.domain_max[0], ctx->info.domain_max[1], ctx->info.domain_max[2], 0}};
            if ((rc = LAUNCH(kchk, n, WG, bytes + (dm ? 12.0 * n : 0), ARG(n), ARG(m[0]), ARG(c[0]), ARG(m[1]),
                             ARG(c[1]), ARG(m[2]), ARG(c[2]), ARG(m[3]), ARG(c[3]), ARG(dm), ARG(xm), ARG(lo), ARG(hi),
                             ARG(dim), ARG(per), ARG(CL->flags), ARG(slot))))
                return rc;
        }
    }
    if (CL->host_timing) {
        F->clFinish(CL->q);
        return FLOE_OK;
    }
    *host_timed = !CL->stage_events;
    CL->cur_stage = -1;
    return FLOE_OK;
}

static int ev_time(floe_ctx *ctx, cl_event ev, cl_profiling_info what, cl_ulong *t)
{
    return ev && F->clGetEventProfilingInfo(ev, what, sizeof *t, t, NULL) == CL_SUCCESS ? 0 : -1;
}

/* Report the first flagged check of a step (flags fl, their slots), as
 * the C path would after that stage; step and time are that step's. */
static int report_flags(floe_ctx *ctx, const cl_uint *fl, const flag_slot *slots, int n, uint64_t step, double time)
{
    for (int k = 0; k < n; k++) {
        if (fl[k] == 0xffffffffu || slots[k].attr < 0)
            continue;
        CL->flags_clear = 0;
        const flag_slot *sl = &slots[k];
        pset *p = &ctx->sets[sl->set];
        uint32_t i = sl->domain ? fl[k] : fl[k] >> 1; /* attributes: 2 i + (Inf) */
        ctx_cl_host_set(ctx, p, 0);
        char what[96];
        if (sl->domain)
            snprintf(what, sizeof what, "left the simulation domain");
        else
            snprintf(what, sizeof what, "%s in attribute '%s'", (fl[k] & 1u) ? "Inf" : "NaN",
                     p->attrs[sl->attr].name);
        uint64_t s0 = ctx->info.step;
        double t0 = ctx->info.time;
        ctx->info.step = step;
        ctx->info.time = time;
        int rc = ctx_blowup_report(ctx, p, i, ctx->stages[sl->stage].name, what);
        ctx->info.step = s0;
        ctx->info.time = t0;
        return rc;
    }
    return FLOE_OK;
}

static cl_uint *win_fl(floe_ctx *ctx, int w)
{
    return CL->pinned_fl ? CL->pinned_fl + (size_t)w * FLAG_WIN * MAX_FLAGS : CL->win[w].fl;
}

/* Report the first flagged step of window w (its flags read), in step order. */
static int win_report(floe_ctx *ctx, int w)
{
    struct flag_win *W = &CL->win[w];
    const cl_uint *fl = win_fl(ctx, w);
    int n = W->nsteps, rc = FLOE_OK;
    W->nsteps = 0;
    for (int b = 0; b < n && rc == FLOE_OK; b++)
        rc = report_flags(ctx, fl + (size_t)b * MAX_FLAGS, W->slots[b], W->nflags[b], W->step[b], W->time[b]);
    if (rc) { /* reported: the later steps' checks are moot (the flags are refilled) */
        if (CL->wpending >= 0) {
            F->clWaitForEvents(1, &CL->wev);
            F->clReleaseEvent(CL->wev);
            CL->wev = NULL;
            CL->wpending = -1;
        }
        CL->win[0].nsteps = CL->win[1].nsteps = 0;
    }
    return rc;
}

static int win_read(floe_ctx *ctx, int w, int blocking)
{
    size_t words = (size_t)CL->win[w].nsteps * MAX_FLAGS;
    cl_int e = F->clEnqueueReadBuffer(CL->q, CL->flags, blocking ? CL_TRUE : CL_FALSE, 0, words * 4, win_fl(ctx, w), 0,
                                      NULL, blocking ? NULL : &CL->wev);
    return e == CL_SUCCESS ? FLOE_OK : cl_err(ctx, e, "reading the blow-up checks");
}

/* Report the window in flight (normally long complete), then read and
 * report the steps of the filling one: after this every step run so far
 * has been checked. */
int ctx_cl_checks_flush(floe_ctx *ctx)
{
    if (!CL)
        return FLOE_OK;
    int rc;
    double t0 = now_ms();
    if (CL->wpending >= 0) {
        int w = CL->wpending;
        CL->wpending = -1;
        cl_int e = F->clWaitForEvents(1, &CL->wev);
        F->clReleaseEvent(CL->wev);
        CL->wev = NULL;
        CL->wait_end_ms += now_ms() - t0;
        if (e != CL_SUCCESS)
            return cl_err(ctx, e, "waiting for the blow-up checks");
        if ((rc = win_report(ctx, w)))
            return rc;
    }
    if (CL->win[CL->wcur].nsteps > 0) {
        t0 = now_ms();
        rc = win_read(ctx, CL->wcur, 1);
        CL->wait_end_ms += now_ms() - t0;
        if (rc || (rc = win_report(ctx, CL->wcur)))
            return rc;
    }
    return FLOE_OK;
}

int ctx_cl_step_end(floe_ctx *ctx)
{
    if (!CL)
        return FLOE_OK;
    int rc;
    CL->wait_steps++;
    CL->step_host_ms += now_ms() - CL->step_t0;
    /* untimed steps: the average of the run's timed steps */
    if (!CL->sampling && CL->stage_events && !CL->host_timing)
        for (int i = 0; i < ctx->nstages && i < MAX_STAGES; i++)
            if (CL->stage_cl[i] && CL->stage_n[i]) {
                double est = CL->stage_sum[i] / CL->stage_n[i];
                ctx->stages[i].ms_total += est;
                ctx->stages[i].ms_frame += est;
            }
    /* this step's checks: block b of the filling window */
    struct flag_win *W = &CL->win[CL->wcur];
    int b = W->nsteps++;
    W->nflags[b] = CL->nflags;
    W->step[b] = ctx->info.step;
    W->time[b] = ctx->info.time;
    memcpy(W->slots[b], CL->slots, (size_t)CL->nflags * sizeof *CL->slots);
    if (ctx->cl_defer && !CL->sampling && !CL->profile) {
        /* inside a run: a full window is read without waiting and reported
         * when the next one is full (or at the frame's end) */
        if (W->nsteps == FLAG_WIN) {
            if (CL->wpending >= 0) {
                int w = CL->wpending;
                double t0 = now_ms();
                CL->wpending = -1;
                cl_int e = F->clWaitForEvents(1, &CL->wev);
                F->clReleaseEvent(CL->wev);
                CL->wev = NULL;
                CL->wait_end_ms += now_ms() - t0;
                if (e != CL_SUCCESS)
                    return cl_err(ctx, e, "waiting for the blow-up checks");
                if ((rc = win_report(ctx, w)))
                    return rc;
            }
            if ((rc = win_read(ctx, CL->wcur, 0)))
                return rc;
            CL->wpending = CL->wcur;
            CL->wcur ^= 1;
            F->clFlush(CL->q);
        }
        return FLOE_OK;
    }
    /* waits for the step: its checks, then its timing */
    if ((rc = ctx_cl_checks_flush(ctx)))
        return rc;
    cl_int e;
    double t0 = now_ms();
    e = F->clFinish(CL->q);
    CL->wait_end_ms += now_ms() - t0;
    if (e != CL_SUCCESS)
        return cl_err(ctx, e, "waiting for the step");
    /* per-stage device times: from the start of the stage's first kernel
     * (or the end of the previous stage's last, if later: some runtimes
     * stamp a start when a command is submitted) to its last kernel's end */
    cl_ulong prev_end = 0;
    for (int i = 0; i < ctx->nstages && i < MAX_STAGES; i++) {
        if (!CL->ev_begin[i])
            continue; /* no kernel in this stage */
        cl_ulong t0, t1;
        if (ev_time(ctx, CL->ev_begin[i], CL_PROFILING_COMMAND_START, &t0) ||
            ev_time(ctx, CL->ev_end[i] ? CL->ev_end[i] : CL->ev_begin[i], CL_PROFILING_COMMAND_END, &t1)) {
            ctx_log(ctx, FLOE_LOG_INFO, "OpenCL: kernel events carry no timestamps; timing stages with a wait each");
            CL->host_timing = 1;
        } else {
            if (prev_end > t0)
                t0 = prev_end;
            prev_end = t1;
            double ms = t1 > t0 ? (double)(t1 - t0) * 1e-6 : 0;
            ctx->stages[i].ms_total += ms;
            ctx->stages[i].ms_frame += ms;
            CL->stage_sum[i] += ms;
            CL->stage_n[i]++;
        }
        F->clReleaseEvent(CL->ev_begin[i]);
        if (CL->ev_end[i])
            F->clReleaseEvent(CL->ev_end[i]);
        CL->ev_begin[i] = CL->ev_end[i] = NULL;
    }
    if (CL->profile) {
        for (int k = 0; k < CL->npend; k++) {
            cl_ulong t0, t1;
            if (!ev_time(ctx, CL->pend[k].ev, CL_PROFILING_COMMAND_START, &t0) &&
                !ev_time(ctx, CL->pend[k].ev, CL_PROFILING_COMMAND_END, &t1)) {
                kstat *ks = &CL->ks[CL->pend[k].k];
                ks->ms += t1 > t0 ? (double)(t1 - t0) * 1e-6 : 0;
                ks->bytes += CL->pend[k].bytes;
                ks->calls++;
            }
            F->clReleaseEvent(CL->pend[k].ev);
        }
        CL->npend = 0;
        CL->steps++;
    }
    return FLOE_OK;
}

/* ---------------------------------------------------------- profile -- */

/* Device copy bandwidth: a large buffer copied a few times (read + write). */
static double copy_bandwidth(floe_ctx *ctx)
{
    cl_ulong maxalloc = 0;
    F->clGetDeviceInfo(CL->dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof maxalloc, &maxalloc, NULL);
    size_t bytes = (size_t)1 << 30;
    while (bytes > maxalloc / 2 && bytes > ((size_t)1 << 20))
        bytes /= 2;
    cl_mem a = mk(ctx, bytes), b = a ? mk(ctx, bytes) : NULL;
    double best = 0;
    if (a && b) {
        cl_uint z = 0;
        F->clEnqueueFillBuffer(CL->q, a, &z, 4, 0, bytes, 0, NULL, NULL);
        for (int r = 0; r < 6; r++) {
            cl_event ev = NULL;
            if (F->clEnqueueCopyBuffer(CL->q, a, b, 0, 0, bytes, 0, NULL, &ev) != CL_SUCCESS)
                break;
            F->clWaitForEvents(1, &ev);
            cl_ulong t0, t1;
            if (!ev_time(ctx, ev, CL_PROFILING_COMMAND_START, &t0) && !ev_time(ctx, ev, CL_PROFILING_COMMAND_END, &t1) &&
                t1 > t0 && r > 0) {
                double gbs = 2.0 * (double)bytes / ((double)(t1 - t0) * 1e-9) / 1e9;
                if (gbs > best)
                    best = gbs;
            }
            F->clReleaseEvent(ev);
        }
    }
    rel(ctx, &a);
    rel(ctx, &b);
    return best;
}

static void print_profile(floe_ctx *ctx)
{
    double bw = copy_bandwidth(ctx);
    double total = 0;
    for (int k = 0; k < CL->nks; k++)
        total += CL->ks[k].ms;
    int order[MAX_KSTATS];
    for (int k = 0; k < CL->nks; k++)
        order[k] = k;
    for (int a = 0; a < CL->nks; a++) /* by time, descending */
        for (int b = a + 1; b < CL->nks; b++)
            if (CL->ks[order[b]].ms > CL->ks[order[a]].ms) {
                int t = order[a];
                order[a] = order[b];
                order[b] = t;
            }
    printf("OpenCL kernels (%s), %llu steps, %.3f ms of kernels per step; device copy bandwidth %.0f GB/s "
           "(read + write)\n",
           CL->desc, (unsigned long long)CL->steps, total / (double)CL->steps, bw);
    printf("    %-22s %8s %10s %9s %10s %8s\n", "kernel", "calls/st", "ms/step", "share", "GB/s est", "of copy");
    for (int a = 0; a < CL->nks; a++) {
        const kstat *k = &CL->ks[order[a]];
        double gbs = k->ms > 0 ? k->bytes / (k->ms * 1e-3) / 1e9 : 0;
        printf("    %-22s %8.2f %10.4f %8.1f%% %10.1f %7.0f%%\n", k->name,
               (double)k->calls / (double)CL->steps, k->ms / (double)CL->steps,
               total > 0 ? 100 * k->ms / total : 0, gbs, bw > 0 ? 100 * gbs / bw : 0);
    }
    fflush(stdout);
}

#endif /* FLOE_HAVE_OPENCL */
