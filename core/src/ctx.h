/* The simulation context (internal to libfloe). */
#ifndef FLOE_CTX_H
#define FLOE_CTX_H

#include <floe/floe.h>

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
    void *data;              /* cap elements, 64-byte aligned */
    /* OpenCL mirror (backend_cl.c): the host copy is the truth unless
     * host_stale; the device copy is valid unless dev_stale */
    void *dev;               /* cl_mem of dev_cap elements, or NULL */
    uint32_t dev_cap;
    uint8_t host_stale, dev_stale;
} attr;

typedef struct pset {
    char name[NAME_LEN];
    uint16_t gen;            /* 0 = slot free */
    floe_set_kind kind;
    float rest_density;
    int is_static;
    int every_frame;         /* a boundary set written with every frame (floe_set_every_frame) */
    uint32_t n, cap;
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
    int dev_sorted_valid;    /* OpenCL: the device cell sort is current */
} pset;

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
    int nb_valid;            /* lists valid for the current positions */
    int ksums_wanted;        /* a module asked for kernel sums (want_kernel_sums) */
    int ksums_valid;         /* the sums match the positions (no stage moved them since) */
    uint64_t nb_updates;
    double dt_limit;         /* smallest limit proposed this step */
    double dt_last;          /* last step taken by floe_run (0 = none yet) */
    int nstats;
    stat_acc stats[MAX_STATS];
    const char *current_stage;
    int boundary_dirty;      /* boundary particles changed: recompute volumes */
    struct cl_backend *cl;   /* OpenCL backend state, NULL on the cpu path */
    int nb_dev_valid;        /* OpenCL: device neighbour lists are current */
    int cl_defer;            /* OpenCL: a run's step may leave its blow-up checks to the next */
    const stage_inst *running; /* the stage being run (attribute access rules) */
    floe_output *out;        /* where runs and modules write (NULL: out_dir as given) */
    int dataflow_checked;    /* floe_pipeline_check passed since the pipeline last changed */
    int outside;             /* FLOE_OUTSIDE_*: particles leaving the domain (blowup.c) */
    uint64_t outside_count;  /* particles deleted or clamped so far */
    int frame_dir;           /* the run's folder while per-frame stages run (api out_write), else -1 */
    const char *frame_dir_name; /* its name in messages */
    uint32_t nruns;          /* floe_run calls so far (a checkpoint names its run by this) */
    int resumed;             /* FLOE_OUTPUT_RESUME: the checkpoint was restored */
    /* floe_pipeline_set calls since the current frame of a run began: the
     * next frame's line of the run record lists them ("set:") */
    int nset_log;
    char set_log_key[8][128], set_log_value[8][64];
    struct emit_state *emit; /* sources and sinks (emit.c), NULL when none */
    struct nbs_ctx *nbs;     /* sorted-key neighbour search (neighbours_sorted.c), NULL until used */
    int check_access;        /* floe_ctx_check_access: 1 on, -1 off, 0 the build's default */
};

pset *ctx_set(floe_ctx *ctx, floe_set s);
int ctx_set_resize(floe_ctx *ctx, floe_set set, uint32_t n);
int ctx_set_compact(floe_ctx *ctx, floe_set set, const uint8_t *keep);
int ctx_set_reserve(pset *p, uint32_t n);
floe_set ctx_set_handle(floe_ctx *ctx, int index);
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
int ctx_neighbours_update(floe_ctx *ctx, int reorder);
int ctx_nb_grid_ensure(floe_ctx *ctx);
/* neighbours_sorted.c: the neighbours stage's method "sorted_keys" */
int ctx_neighbours_sorted(floe_ctx *ctx);
void ctx_nbs_free(floe_ctx *ctx);

/* pipeline.c */
int ctx_pipeline_check(floe_ctx *ctx);
/* the stage a deprecated stage name runs as (ABI 1.8), and its condition; NULL when none */
const char *ctx_stage_replaced_by(const floe_stage_desc *sd, const char **cond);
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

/* OpenCL backend (backend_cl.c); every call is a no-op on the cpu path */
int ctx_cl_init(floe_ctx *ctx, const char *backend, const char *device, char *err, size_t errlen);
void ctx_cl_destroy(floe_ctx *ctx);
/* host copy of one attribute up to date; write: device copy stale */
void ctx_cl_host(floe_ctx *ctx, attr *at, int write);
/* every attribute of a set (resize, compact, reorder, frame output) */
void ctx_cl_host_set(floe_ctx *ctx, pset *p, int write);
/* host access through floe_attr: write unless the running stage only reads it */
void ctx_cl_host_access(floe_ctx *ctx, pset *p, attr *at);
/* host neighbour lists from the device ones, when only those are current */
int ctx_cl_lists_to_host(floe_ctx *ctx);
/* boundary volumes on the host, device copies of V marked stale */
int ctx_boundary_volumes(floe_ctx *ctx);
double ctx_cl_max_speed(floe_ctx *ctx);
/* stage dispatch hooks (pipeline.c): a step's flags are reset at its
 * begin and read (a few bytes) at its end; per-stage device times too */
int ctx_cl_step_begin(floe_ctx *ctx);
void ctx_cl_run_begin(floe_ctx *ctx);
int ctx_cl_stage_begin(floe_ctx *ctx, const stage_inst *st, int use_cl);
int ctx_cl_stage_end(floe_ctx *ctx, int index, int *host_timed);
int ctx_cl_step_end(floe_ctx *ctx);
/* Report the blow-up checks of a step read without waiting (ctx->cl_defer);
 * called before anything uses the step's results on the host. */
int ctx_cl_checks_flush(floe_ctx *ctx);
/* the core's OpenCL stages (builtin_stages.c run_cl) */
int ctx_cl_neighbours(floe_ctx *ctx, int reorder);
/* the last device build's overflow check not done yet (lists speculative) */
int ctx_cl_nb_pending(floe_ctx *ctx);
/* do it: wait for the counts, rebuild overflowed lists; *rebuilt = 1 when
 * lists changed, so stages run on the speculative lists must run again */
int ctx_cl_nb_settle(floe_ctx *ctx, int *rebuilt);
int ctx_cl_gravity(floe_ctx *ctx);
int ctx_cl_integrate(floe_ctx *ctx);
/* the floe_api entries of ABI 1.1 (api.c) */
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

/* run-time checks (blowup.c): first bad particle in sets written by the
 * stage; fills msg and returns FLOE_ERR_BLOWUP. */
int ctx_check_blowup(floe_ctx *ctx, const stage_inst *st, int check_domain);
/* the message of a bad particle i of set p after a stage (FLOE_ERR_BLOWUP) */
int ctx_blowup_report(floe_ctx *ctx, const pset *p, uint32_t i, const char *stage, const char *what);

#endif
