/* The OpenCL backend's state and the functions its files share (internal
 * to core/src/opencl/; the core sees only device.h and opencl.h).
 *
 * Attribute storage on the host stays the single source of truth: each
 * attribute may have a device mirror (cl_mirror). Two flags say which copy
 * is current: host_stale (the device wrote it since) and dev_stale (the
 * host may have written it since). A stage's run_cl asks for device buffers
 * through api->cl_attr (uploading stale ones, marking the host stale when it
 * writes); a C stage, an output or a host access copies back only what it
 * touches. Neighbour lists work the same way: device lists (lists_valid) or
 * host lists (ctx->nb_valid), converted lazily when the other side asks.
 *
 * Blow-up checks of OpenCL stages run on the device: small kernels record
 * the first bad particle per (stage, set, attribute) in a flag word; the
 * flags (a few bytes) are read once at the end of each step, or once per
 * window of steps inside a run, which also resolves the per-stage timings. */
#ifndef FLOE_CL_STATE_H
#define FLOE_CL_STATE_H

#include "../device.h"
#include "loader.h"

#include <time.h>

#define MAX_PROGS 32
#define MAX_KERNELS 48
#define MAX_SCRATCH 32
#define MAX_FLAGS 512   /* flag words per step: 64 check launches of FLAG_GROUP words */
#define FLAG_GROUP 8    /* words of one check launch: 4 attributes, 4 of the domain */
#define FLAG_SPILL (FLAG_WIN * MAX_FLAGS) /* words past the windows: checks beyond MAX_FLAGS */
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

/* The device copy of one attribute: absent (mem NULL) counts as stale. */
typedef struct cl_mirror {
    cl_mem mem;              /* cap elements */
    uint32_t cap;
    uint8_t host_stale, dev_stale;
} cl_mirror;

/* What the device holds of one particle set (by its slot in ctx->sets). */
typedef struct cl_setdev {
    cl_mirror at[MAX_ATTRS]; /* by the attribute's slot in the set */
    int sorted_valid;        /* the device cell sort is current */
    cl_mem key, rank, tmp, order, spos;
    uint32_t cap;
    cl_mem cs;
    uint32_t cs_cap;
    cl_mem near;             /* a static set: the cells with it in their block (nb_near_cells) */
    uint32_t near_cap;
    int near_valid;          /* near is of the current sort */
    cl_mem cnt[MAX_SETS], idx[MAX_SETS];
    uint32_t lcap[MAX_SETS], lstride[MAX_SETS], ln[MAX_SETS];
    double ltotal[MAX_SETS];
    cl_mem perm_tmp;
    size_t perm_bytes;
    int spos_stale;          /* a device stage wrote x since the sort (spos differs from x) */
    /* Verlet lists (verlet.c): the lists within support + skin, their
     * counts in scnt and their rows in sidx (cnt/idx: the cut), or, with
     * FLOE_CL_VERLET_CUT=swap, in idx itself (cnt: how many of each row
     * are within the support); the positions of their build, and the
     * count, layout and slot generation the build saw */
    cl_mem scnt[MAX_SETS], sidx[MAX_SETS]; /* sidx: the skin rows (cut in build order) */
    cl_mem x0, xp;           /* xp: the positions as float4 for the cut */
    uint32_t x0_cap, xp_cap, vn, vlayout;
    uint16_t vgen;
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

/* What a flag word holds. attr < 0: a word read with the one before it
 * (or unused); domain: FLAG_ATTR (2 i + Inf of attribute `attr`),
 * FLAG_OUT_ERROR (the first index outside, then its x, y, z as floats),
 * FLAG_OUT_CLAMP (~ the count clamped, then the lowest id). */
enum { FLAG_ATTR = 0, FLAG_OUT_ERROR = 1, FLAG_OUT_CLAMP = 2 };
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

typedef struct cl_backend {
    struct floe_backend base; /* ops: ops.c */
    const cl_fns *f;
    cl_platform_id plat;
    cl_device_id dev;
    cl_context context;
    cl_command_queue q;
    char desc[4 * 256 + 64]; /* "opencl: " and four strings of at most 255 */
    int nprogs;
    cl_prog progs[MAX_PROGS];
    cl_setdev sets[MAX_SETS];
    int lists_valid;        /* the device neighbour lists are current */
    int defer;              /* inside a run: a step may leave its blow-up checks to a later one */
    cl_mem scan_sums[6];
    uint32_t scan_cap[6];
    cl_mem cmp_rank, cmp_perm; /* a compaction's ranks and order (resize.c) */
    uint32_t cmp_cap[2];
    cl_mem rdx_key, rdx_val, rdx_hist; /* the radix sort's other half and digit counts (sort.c) */
    uint32_t rdx_cap[3];
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
    int nb_near_off;        /* FLOE_CL_NB_NEAR=0: lists into a static set walk every query's block */
    /* neighbour lists built speculatively: the counts (overflow check) are
     * read without waiting and settled before the first stage that cannot
     * simply be run again (cl_lists_settle; FLOE_CL_NB_SPECULATE=0: at once) */
    int nb_spec_off;
    /* FLOE_CL_NEIGHBOURS=cells: the neighbours stage sorts only; kernels
     * that can walk the cells do (api->cl_cells), lists are built when a
     * module asks for them (lists_lazy: the sort is current, the lists not
     * built yet). cells_staged (FLOE_CL_CELLS_LOCAL, default 1): the walk
     * kernels stage a work group's candidates in local memory; cells_pack
     * (FLOE_CL_CELLS_PACK, default 1): force walks read their neighbours'
     * data packed in sorted order. */
    int cells, cells_staged, cells_pack, lists_lazy;
    int nb_pending;         /* a build whose counts have not been looked at */
    /* Verlet lists (verlet.c, the neighbours stage's skin > 0): vgrid has
     * cells of support + skin; vvalid: skin lists built and not ended by a
     * change; vbuilt: this step's neighbours stage built them; vreorder: a
     * reorder asked for since the last build; vd: the largest pair
     * displacement bound of the last two settled steps (vd[0] the later) */
    float vskin;
    nb_grid vgrid;
    int von, vvalid, vbuilt, vreorder, vpredict_off; /* FLOE_CL_VERLET_PREDICT=0 */
    int vswap;              /* FLOE_CL_VERLET_CUT=swap: the cut in place (nb_cut) */
    double vd[2];
    uint64_t vbuilds, vsteps, vlate; /* builds, steps, builds at the settling */
    int nb_np, nb_pq[MAX_SETS * MAX_SETS], nb_pt[MAX_SETS * MAX_SETS];
    cl_event nb_ev;         /* the counts' read */
    /* where they go without pinned memory: the outside words, then the pairs' */
    cl_uint nb_st_page[2 * MAX_SETS + 2 * MAX_SETS * MAX_SETS + MAX_SETS];
    int cur_stage;          /* OpenCL stage being enqueued, -1 outside */
    int flags_clear;        /* the flag words are all ones on the device */
    int stage_events;       /* time stages by kernel events (profiling queue) */
    int sample_every;       /* steps between timed steps (FLOE_CL_STAGE_SAMPLE) */
    int sampling;           /* this step's stages are timed */
    uint64_t tstep;         /* steps begun, for the sampling */
    double stage_sum[MAX_STAGES]; /* ms of each OpenCL stage over the timed steps of the run */
    uint32_t stage_n[MAX_STAGES];
    unsigned char stage_cl[MAX_STAGES]; /* ran on the device this step */
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
    /* The outside rule "delete" (outside.c): a check after a device stage
     * that moved particles lowers two words per set at the head of `stats`
     * (~ the count outside, the lowest id); they come back with the next
     * neighbour build's counts (no read of their own), or are read when
     * the host must know sooner. The particles are removed by a compaction
     * on the device before anything else uses the set, or, where the next
     * stages are the neighbour build and the stages run on its speculative
     * lists, when those lists are settled (then built again and those
     * stages run again). */
    int out_pending;        /* words lowered maybe, not looked at yet */
    int out_in_counts;      /* the pending words ride with the counts' read */
    int out_stage;          /* the stage, step and time they checked */
    uint64_t out_step;
    double out_time;
    /* new rows of a growing set (cl_write_rows): a pinned staging ring
     * ("core.rows") copied from without waiting; the last copy's event */
    size_t rows_off, rows_cap;
    cl_event rows_ev;
    /* bytes of attributes and rows copied to the device and back (cl_sync,
     * cl_to_host, cl_write_rows, cl_buffer_io, rows.c): what a decomposed
     * run moves over the bus (docs/mpi.md, "GPU ranks") */
    uint64_t bus_up, bus_down;
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
} cl_backend;

/* Every function below takes the context; its backend is this. */
#define CL ((cl_backend *)ctx->dev)
#define F (CL->f)

static inline double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static inline int ev_time(floe_ctx *ctx, cl_event ev, cl_profiling_info what, cl_ulong *t)
{
    return ev && F->clGetEventProfilingInfo(ev, what, sizeof *t, t, NULL) == CL_SUCCESS ? 0 : -1;
}

/* device.c: platforms and devices */
void cl_dev_str(const cl_fns *f, cl_device_id d, cl_device_info what, char *buf, size_t len);
void cl_plat_str(const cl_fns *f, cl_platform_id p, cl_platform_info what, char *buf, size_t len);
int cl_pick_device(cl_backend *b, const char *device, char *err, size_t errlen);

/* buffers.c: device memory and the attribute mirrors */
int cl_err(floe_ctx *ctx, cl_int e, const char *what);
cl_mem cl_mk(floe_ctx *ctx, size_t bytes);
void cl_rel(floe_ctx *ctx, cl_mem *m);
/* a buffer of at least `need` elements of `es` bytes (contents dropped on growth) */
int cl_ensure(floe_ctx *ctx, cl_mem *m, uint32_t *cap, uint64_t need, size_t es);
cl_mirror *cl_mirror_of(floe_ctx *ctx, const pset *p, const attr *at);
int cl_sync(floe_ctx *ctx, pset *p, attr *at);
void cl_to_host(floe_ctx *ctx, pset *p, attr *at, int write);
void cl_set_to_host(floe_ctx *ctx, pset *p, int write);
unsigned cl_attr_state(floe_ctx *ctx, const pset *p, const attr *at);
uint32_t cl_capacity(floe_ctx *ctx, const pset *p, const attr *at);
int cl_write_rows(floe_ctx *ctx, pset *p, attr *at, uint32_t first, uint32_t count);
void *cl_attr(floe_ctx *ctx, pset *p, attr *at, unsigned access);
/* the buffer of set slot s's attribute `name` of type t, NULL when absent */
cl_mem cl_attr_named(floe_ctx *ctx, int s, const char *name, floe_type t, unsigned access);
void *cl_scratch(floe_ctx *ctx, const char *name, size_t bytes);
/* halos through host memory (device.h: is_buffer, buffer_io) */
int cl_is_buffer(floe_ctx *ctx, const void *mem);
int cl_buffer_io(floe_ctx *ctx, void *mem, int write, size_t off, size_t bytes, void *host);
void *cl_pinned(floe_ctx *ctx, const char *name, size_t bytes);

/* programs.c: kernel sources, programs, kernels */
cl_prog *cl_program_get(floe_ctx *ctx, const char *module, const char *file);
cl_kernel cl_kernel_get(floe_ctx *ctx, const char *module, const char *file, const char *name);
cl_kernel cl_core_kernel(floe_ctx *ctx, const char *file, const char *name);
const char *cl_kernel_name(floe_ctx *ctx, cl_kernel k);

/* launch.c: kernel launches (arguments cached, events kept for timing) */
int cl_launch(floe_ctx *ctx, cl_kernel k, size_t n, size_t local, int nargs, const floe_cl_arg *args, double bytes);
#define ARG(v) FLOE_CL_ARG(v)
#define LAUNCH(k, n, local, bytes, ...)                                                                   \
    cl_launch(ctx, k, n, local, (int)(sizeof((floe_cl_arg[]){__VA_ARGS__}) / sizeof(floe_cl_arg)),       \
              (floe_cl_arg[]){__VA_ARGS__}, bytes)

/* sort.c: the device cell sort of a set, and the reorder along it */
int cl_sort(floe_ctx *ctx, int s);
int cl_reorder(floe_ctx *ctx, int s);

void cl_grid_args(floe_ctx *ctx, cl_float4 *go, cl_int4 *gn);
/* exclusive prefix sum of n words in place */
int cl_scan_words(floe_ctx *ctx, cl_mem buf, uint32_t n);
/* stable sort of n ulong keys by their low `bits` bits, with a uint payload,
 * in place (api->cl_sort; kernels/core/sort.cl) */
int cl_radix_sort(floe_ctx *ctx, cl_mem key, cl_mem val, uint32_t n, int bits);

/* rows.c: what a decomposed step reads of the device (decomp_cl.c) */
int cl_gather_rows(floe_ctx *ctx, int nbuf, void *const *mems, const size_t *elems, const uint32_t *idx, uint32_t m,
                   void *out);
int cl_max_drift2(floe_ctx *ctx, pset *p, uint32_t n, double *out);
int cl_count_outside(floe_ctx *ctx, pset *p, uint32_t n, uint32_t *out);
void cl_bus_bytes(floe_ctx *ctx, uint64_t *up, uint64_t *down);
int cl_select_rows(floe_ctx *ctx, pset *p, uint32_t n, const float lo[3], const float hi[3], float r, int mode,
                   uint32_t *idx, uint32_t *m);
void *cl_keep_except(floe_ctx *ctx, uint32_t n, const uint32_t *idx, uint32_t m);
int cl_keep_positions(floe_ctx *ctx, pset *p, uint32_t n);

/* resize.c: sets that change size on the device (ABI 1.10) */
int cl_set_resize(floe_ctx *ctx, pset *p, uint32_t n);
int cl_set_compact(floe_ctx *ctx, pset *p, cl_mem keep, uint32_t n_keep);

/* lists.c: neighbour lists built on the device */
int cl_neighbours(floe_ctx *ctx, int reorder);
int cl_lists_pending(floe_ctx *ctx);
int cl_lists_settle(floe_ctx *ctx, int *rebuilt);
/* the lists built now where the last neighbours stage only sorted (cells) */
int cl_lists_ensure(floe_ctx *ctx);
/* verlet.c: neighbour lists within support + skin reused over steps */
/* the grid the device sorts on: cells of support + skin with Verlet lists */
const nb_grid *cl_dev_grid(floe_ctx *ctx);
/* whether this neighbours stage uses Verlet lists (sets CL->von, the grid) */
int cl_verlet_setup(floe_ctx *ctx);
/* the skin lists must be built now (a change, a frame start, the skin
 * nearly closed by the last settled steps' displacements) */
int cl_verlet_due(floe_ctx *ctx);
/* a build (after the sorts, before the lists): the positions and layout
 * of every set kept, the positions packed for the cut */
int cl_verlet_built(floe_ctx *ctx);
/* every step: the displacements of the moving sets into the stats words,
 * their positions packed for the cut (build: the static sets' too) */
int cl_verlet_moved(floe_ctx *ctx, int build);
/* cut pair (q, t)'s skin lists to the support in place (fresh: just
 * built; else the counts go to stats) */
int cl_verlet_cut(floe_ctx *ctx, int q, int t, cl_uint slot, int fresh);
/* the settled words st (the stats buffer's head): 1 when a pair may have
 * closed the skin (the lists must be built again), else 0; keeps vd */
int cl_verlet_closed(floe_ctx *ctx, const cl_uint *st);
/* cells.c: a set's cell sort for cell walks (api->cl_cells) */
int cl_cells(floe_ctx *ctx, pset *p, floe_cl_cells *out);

/* lists_copy.c: neighbour lists between host and device */
int cl_lists_to_host(floe_ctx *ctx);
int cl_lists(floe_ctx *ctx, pset *q, pset *t, floe_cl_nlist *out);

/* checks.c: blow-up checks on the device, read in windows of steps */
int cl_stage_end(floe_ctx *ctx, int index, int *host_timed);
int cl_report_flags(floe_ctx *ctx, const cl_uint *fl, const flag_slot *slots, int n, uint64_t step, double time);
int cl_win_report(floe_ctx *ctx, int w);
int cl_win_read(floe_ctx *ctx, int w, int blocking);
int cl_checks_flush(floe_ctx *ctx);
/* the queue finished, every check so far reported (the windows and this
 * step's flags): before the host looks at, or renumbers, the particles */
int cl_checks_now(floe_ctx *ctx);
/* the buffer of the neighbour counts, headed by the outside rule's words
 * (2 MAX_SETS of them, all ones between checks; pair p's two words at
 * STATS_PAIR0 + 2 p) */
#define STATS_PAIR0 (2 * MAX_SETS)
/* then one word per set: its largest squared displacement since the
 * Verlet lists' build (float bits; verlet.c) */
#define STATS_DISP0 (STATS_PAIR0 + 2 * MAX_SETS * MAX_SETS)
#define STATS_WORDS (STATS_DISP0 + MAX_SETS)
cl_mem cl_stats(floe_ctx *ctx);

/* outside.c: the outside rule "delete" settled (particles removed on the
 * device); words: the host copy of the stats buffer's head where it came
 * back with the counts (waited for), else NULL (read now); *changed (may be
 * NULL) = 1 when a set lost particles */
int cl_outside_settle(floe_ctx *ctx, int *changed, const cl_uint *words);
/* the seam's entries that must see the deletions first */
void cl_to_host_settled(floe_ctx *ctx, pset *p, attr *at, int write);
double cl_max_speed_settled(floe_ctx *ctx);
int cl_flush_settled(floe_ctx *ctx);

/* step.c: runs, steps, stages and their device times */
void cl_run_begin(floe_ctx *ctx);
int cl_step_begin(floe_ctx *ctx);
int cl_stage_begin(floe_ctx *ctx, const stage_inst *st, int on_device);
int cl_step_end(floe_ctx *ctx);

/* stages.c: the core's stages and reductions */
int cl_gravity(floe_ctx *ctx);
int cl_integrate(floe_ctx *ctx);
double cl_max_speed(floe_ctx *ctx);

/* frame_stats.c: a frame's statistics of a fluid set, reduced on the device */
int cl_frame_stats(floe_ctx *ctx, pset *p, double out[4]);

/* profile.c: FLOE_CL_PROFILE's kernel table, FLOE_CL_WAITS' host waits;
 * the finished launches' times into the table (waits for them) */
void cl_print_profile(floe_ctx *ctx);
void cl_profile_collect(floe_ctx *ctx);

#endif
