/* The simulation context (internal to libfloe). */
#ifndef FLOE_CTX_H
#define FLOE_CTX_H

#include <floe/floe.h>
#include <floe/module.h>

#include <stddef.h>

#include "neighbours.h"

#define MAX_SETS FLOE_MAX_SETS /* <floe/types.h> */
#define MAX_ATTRS 48
#define MAX_GRIDS 32
#define MAX_MODULES 32
#define MAX_STAGES 64
#define MAX_PARAMS 32
#define MAX_STATS 16
#define NAME_LEN 64

typedef struct attr {
    char name[NAME_LEN];
    floe_type type;
    void *data;              /* cap elements, 64-byte aligned (a device copy: device.h) */
} attr;

typedef struct pset {
    char name[NAME_LEN];
    uint16_t gen;            /* 0 = slot free */
    floe_set_kind kind;
    float rest_density;
    int is_static;
    int every_frame;         /* a boundary set written with every frame (floe_set_every_frame) */
    uint32_t n, cap;
    uint32_t ghosts;         /* MPI (decomp.c): the last `ghosts` of the n are other ranks' particles */
    uint32_t next_id;        /* fluid particles carry a stable "id" */
    int nattrs;
    attr attrs[MAX_ATTRS];
    nb_sorted sorted;        /* cell sort of this set */
    int sorted_valid;        /* static sets keep their sort */
    nb_list lists[MAX_SETS]; /* fluid sets: neighbours in set t */
    floe_nlist views[MAX_SETS]; /* what modules see of lists[] */
    float *ksum[MAX_SETS];   /* fluid sets: kernel sums of lists[t] (floe_nlist.wsum) */
    uint32_t ksum_cap[MAX_SETS];
    uint8_t ksum_ok[MAX_SETS]; /* computed by the last update */
    int (*placer)(void *state); /* api->set_placer (OpenCL): the owner places the set late */
    void *placer_state;
    int placing;             /* in placer: not called again from inside */
    /* bumped by every change of the set's count or order and by every
     * position write outside the step (invalidate): ends its Verlet lists */
    uint32_t layout;
    /* Verlet lists (nb_verlet.c): the sort on the skin grid, the lists of a
     * fluid set within support + skin in set t, the positions they were
     * built from, and the packed records (x, y, z, w) the filter reads */
    nb_sorted vsorted;
    uint32_t vsorted_layout; /* the layout and cell size vsorted is of */
    float vsorted_cell;
    nb_list vlists[MAX_SETS];
    float *x0;
    float *pack;
    uint32_t x0_cap, pack_cap;
} pset;

/* The Verlet state (nb_verlet.c): what the lists were built for */
typedef struct nb_verlet {
    nb_grid grid;            /* cells of support + skin */
    int src_off[3], src_n[3]; /* the search grid's window it covers (an MPI rank's moves with its box) */
    int valid;               /* lists built and not ended by a change */
    float radius;            /* support + skin of the build */
    int npsets;
    uint16_t gen[MAX_SETS];
    uint32_t n[MAX_SETS], layout[MAX_SETS];
    uint8_t is_static[MAX_SETS], packed[MAX_SETS];
    uint64_t builds, updates; /* rebuilds and neighbour updates so far */
} nb_verlet;

typedef struct grid {
    char name[NAME_LEN];
    uint16_t gen;
    floe_grid_def def;
    void *data;
} grid;

typedef struct module_inst {
    const floe_module_desc *desc;
    void *dl;                /* dlopen handle, NULL for the built-in core */
    void *state;
    char path[1024];
    uint64_t deprecation_logged; /* bit k: the warning for stage k's old name was logged */
} module_inst;

typedef struct stage_inst {
    char name[NAME_LEN * 2]; /* qualified */
    const floe_stage_desc *desc; /* NULL for host functions */
    module_inst *mod;
    floe_stage_fn fn;
    void *user;
    int nparams;
    floe_value param[MAX_PARAMS];
    char *param_str[MAX_PARAMS]; /* owned copies of string values */
    double ms_total, ms_frame;
    uint64_t calls;          /* runs in the current floe_run */
    int moves;               /* may move particles (stage_moves): ends the kernel sums */
    int per_frame;           /* runs once per output frame, not in the step (ABI 1.5) */
    int corrects;            /* corrects an integrator's positions (ABI 1.7 floe_stage_desc.corrects) */
} stage_inst;

typedef struct stat_acc {
    char name[NAME_LEN];
    double sum, max;
    uint64_t count;
} stat_acc;

struct floe_ctx {
    floe_sim_info info;      /* info.threads: this context's worker threads */
    char error[2048];
    floe_log_fn log_fn;      /* NULL = stderr */
    void *log_user;
    int log_level;           /* messages below it are dropped */
    int npsets;
    pset sets[MAX_SETS];
    int ngrids;
    grid grids[MAX_GRIDS];
    int nmodules;
    module_inst modules[MAX_MODULES];
    int nstages;
    stage_inst stages[MAX_STAGES];
    nb_grid nbgrid;
    /* MPI (decomp.c): the next update cuts the search to [lo, hi] (a rank's
     * box and its margin; ctx_nb_grid_ensure applies it) */
    int nb_win_pending, nb_win_logged;
    double nb_win_lo[3], nb_win_hi[3];
    int nb_valid;            /* lists valid for the current positions */
    int ksums_wanted;        /* a module asked for kernel sums (want_kernel_sums) */
    int ksums_valid;         /* the sums match the positions (no stage moved them since) */
    uint64_t nb_updates;
    nb_verlet verlet;        /* skin lists of the cpu neighbour stage (nb_verlet.c) */
    int nb_rebuild;          /* the next Verlet update rebuilds (set at each frame's start) */
    float nb_skin_dev;       /* the device neighbours stage's skin (core/src/opencl/verlet.c), 0: none */
    double dt_limit;         /* smallest limit proposed this step */
    double dt_last;          /* last step taken by floe_run (0 = none yet) */
    int nstats;
    stat_acc stats[MAX_STATS];
    const char *current_stage;
    int boundary_dirty;      /* boundary particles changed: recompute volumes */
    struct floe_backend *dev; /* the device backend (device.h), NULL: host only */
    const stage_inst *running; /* the stage being run (attribute access rules) */
    floe_output *out;        /* where runs and modules write (NULL: out_dir as given) */
    int dataflow_checked;    /* floe_pipeline_check passed since the pipeline last changed */
    int outside;             /* FLOE_OUTSIDE_*: particles leaving the domain (blowup.c) */
    uint64_t outside_count;  /* particles deleted or clamped so far */
    int dd_outside;          /* MPI: a blow-up check saw a particle outside the domain (decomp.c deletes it) */
    /* a split stage call (floe_stage_desc.rows, pipeline.c): the particles
     * of each set this call computes (NULL: all), and which call (api->rows) */
    const uint32_t *rows[MAX_SETS];
    uint32_t nrows[MAX_SETS];
    int rows_part;
    int frame_dir;           /* the run's folder while per-frame stages run (api out_write), else -1 */
    const char *frame_dir_name; /* its name in messages */
    uint32_t nruns;          /* floe_run calls so far (a checkpoint names its run by this) */
    int resumed;             /* FLOE_OUTPUT_RESUME: the checkpoint was restored */
    struct probes *probes;   /* probes.c: declared measurements, NULL = none */
    /* floe_pipeline_set calls since the current frame of a run began: the
     * next frame's line of the run record lists them ("set:") */
    int nset_log;
    char set_log_key[8][128], set_log_value[8][64];
    struct emit_state *emit; /* sources and sinks (emit.c), NULL when none */
    struct nbs_ctx *nbs;     /* sorted-key neighbour search (neighbours_sorted.c), NULL until used */
    int check_access;        /* floe_ctx_check_access: 1 on, -1 off, 0 the build's default */
    int nb_by_id;            /* neighbours{order = "id"}: cells' particles in id order (nb_update.c) */
    struct floe_dd *dd;      /* domain decomposition over MPI (decomp.c), NULL: one process */
};

pset *ctx_set(floe_ctx *ctx, floe_set s);
int ctx_set_resize(floe_ctx *ctx, floe_set set, uint32_t n);
int ctx_set_compact(floe_ctx *ctx, floe_set set, const uint8_t *keep);
int ctx_set_reserve(pset *p, uint32_t n);
floe_set ctx_set_handle(floe_ctx *ctx, int index);
/* api->set_moving: a boundary set sorted every step, its volumes its owner's */
int ctx_set_moving(floe_ctx *ctx, floe_set set);
/* api->set_placer, and the call of a set's placer (FLOE_OK without one) */
int ctx_set_placer(floe_ctx *ctx, floe_set set, int (*fn)(void *state), void *state);
int ctx_run_placer(floe_ctx *ctx, pset *p);
/* sim:load: the values a loaded module's lua_open (ABI 1.7) pushes, or 0 */
int ctx_module_lua_open(floe_ctx *ctx, const char *name, void *L);
attr *pset_attr(pset *p, const char *name);
int ctx_fail(floe_ctx *ctx, int status, const char *fmt, ...);

/* run.c: the stop asked for (FLOE_ERR_INTERRUPT, FLOE_ERR_TIMEOUT) or
 * FLOE_OK; reset clears it and sets the wall-time limit (0 = none). */
int floe_stop_pending(void);
void floe_stop_reset(double timeout_s);
void ctx_log(floe_ctx *ctx, int level, const char *fmt, ...);
/* Around every public call that runs parallel loops: the calling thread's
 * OpenMP team size becomes the context's; ctx_threads_leave gives back
 * what ctx_threads_enter returned. */
int ctx_threads_enter(const floe_ctx *ctx);
void ctx_threads_leave(int prev);

/* module_loader.c */
void floe_module_unload_handle(void *dl);

/* core stages (builtin_stages.c) */
const floe_module_desc *floe_core_module(void);
/* host neighbour lists (nb_update.c) */
int ctx_neighbours_update(floe_ctx *ctx, int reorder);
int ctx_nb_grid_ensure(floe_ctx *ctx);
/* sort set s by cell (and with reorder move its attributes along) */
int ctx_nb_sort_set(floe_ctx *ctx, int s, int reorder);
/* the kernel sums' weights of fluid set pq's lists in set t (nb_ksum) */
int ctx_nb_ksum_target(floe_ctx *ctx, pset *pq, int t, float inv_H, nb_ksum *ks);
/* nb_verlet.c: the neighbours stage with a skin (a fraction of the support
 * radius; 0, a periodic domain or a device: ctx_neighbours_update) */
int ctx_neighbours_verlet(floe_ctx *ctx, float skin, int reorder);
/* neighbours_sorted.c: the neighbours stage's method "sorted_keys" */
int ctx_neighbours_sorted(floe_ctx *ctx);
void ctx_nbs_free(floe_ctx *ctx);

/* pipeline.c */
int ctx_pipeline_check(floe_ctx *ctx);
/* the stage a deprecated stage name runs as (ABI 1.8), and its condition; NULL when none */
static inline const char *ctx_stage_replaced_by(const floe_stage_desc *sd, const char **cond)
{
    const int has = sd && sd->size >= offsetof(floe_stage_desc, replaced_if) + sizeof sd->replaced_if;
    *cond = has ? sd->replaced_if : NULL;
    return has ? sd->replaced_by : NULL;
}
/* "did you mean" endings of error messages (suggest.c), "" when none */
void ctx_suggest_stage(floe_ctx *ctx, const char *qname, char *out, size_t len);
void ctx_suggest_set(floe_ctx *ctx, const char *key, char *out, size_t len);
void ctx_suggest_param(floe_ctx *ctx, const floe_stage_desc *sd, const char *stage, const char *name, char *out,
                       size_t len);
int ctx_run_stages(floe_ctx *ctx);
int ctx_has_frame_stages(const floe_ctx *ctx);
/* the per-frame stages for file number `frame`, writing into the folder dirfd
 * (shown as name; -1: they write nothing) */
int ctx_frame_stages_at(floe_ctx *ctx, int dirfd, const char *name, int frame);

/* access_check.c: the attributes stage st declared FLOE_READ only, copied
 * before it runs (NULL: nothing to check, or checks off), and, with
 * compare, compared after it: FLOE_ERR_ARG naming the stage when one
 * changed. Frees snap. */
typedef struct access_snap access_snap;
access_snap *ctx_access_snap(floe_ctx *ctx, const stage_inst *st);
int ctx_access_check(floe_ctx *ctx, const stage_inst *st, access_snap *snap, int compare);

/* boundary volumes on the host, their device copies stale (geometry.c) */
int ctx_boundary_volumes(floe_ctx *ctx);

/* run-time checks (blowup.c): first bad particle in sets written by the
 * stage; fills msg and returns FLOE_ERR_BLOWUP. */
int ctx_check_blowup(floe_ctx *ctx, const stage_inst *st, int check_domain);
/* the message of a bad particle i of set p after a stage (FLOE_ERR_BLOWUP) */
int ctx_blowup_report(floe_ctx *ctx, const pset *p, uint32_t i, const char *stage, const char *what);
/* the same quoting the position pos (3 floats) instead of the host copy's */
int ctx_blowup_report_at(floe_ctx *ctx, const pset *p, uint32_t i, const char *stage, const char *what,
                         const float *pos);
/* count particles of set p that left the domain at a step and were deleted
 * or clamped (ctx->outside), counted and logged (debug) the same on every
 * backend; first: the lowest id among them (the index without ids) */
void ctx_outside_event(floe_ctx *ctx, const pset *p, uint64_t count, uint32_t first, uint64_t step, double time,
                       const char *stage);

void ctx_stat(floe_ctx *ctx, const char *name, double value);

#endif
