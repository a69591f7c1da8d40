/* The simulation context (internal to libfloe). */
#ifndef FLOE_CTX_H
#define FLOE_CTX_H

#include <floe/floe.h>

#include "neighbours.h"

#define MAX_SETS 16
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
} attr;

typedef struct pset {
    char name[NAME_LEN];
    uint16_t gen;            /* 0 = slot free */
    floe_set_kind kind;
    float rest_density;
    int is_static;
    uint32_t n, cap;
    uint32_t next_id;        /* fluid particles carry a stable "id" */
    int nattrs;
    attr attrs[MAX_ATTRS];
    nb_sorted sorted;        /* cell sort of this set */
    int sorted_valid;        /* static sets keep their sort */
    nb_list lists[MAX_SETS]; /* fluid sets: neighbours in set t */
    floe_nlist views[MAX_SETS]; /* what modules see of lists[] */
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
} stage_inst;

typedef struct stat_acc {
    char name[NAME_LEN];
    double sum, max;
    uint64_t count;
} stat_acc;

struct floe_ctx {
    floe_sim_info info;
    char error[2048];
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
    uint64_t nb_updates;
    double dt_limit;         /* smallest limit proposed this step */
    int nstats;
    stat_acc stats[MAX_STATS];
    const char *current_stage;
    int boundary_dirty;      /* boundary particles changed: recompute volumes */
};

pset *ctx_set(floe_ctx *ctx, floe_set s);
int ctx_set_resize(floe_ctx *ctx, floe_set set, uint32_t n);
int ctx_set_compact(floe_ctx *ctx, floe_set set, const uint8_t *keep);
floe_set ctx_set_handle(floe_ctx *ctx, int index);
attr *pset_attr(pset *p, const char *name);
int ctx_fail(floe_ctx *ctx, int status, const char *fmt, ...);
void ctx_log(floe_ctx *ctx, int level, const char *fmt, ...);

/* module_loader.c */
void floe_module_unload_handle(void *dl);

/* core stages (builtin_stages.c) */
const floe_module_desc *floe_core_module(void);
int ctx_neighbours_update(floe_ctx *ctx, int reorder);
int ctx_nb_grid_ensure(floe_ctx *ctx);

/* pipeline.c */
int ctx_pipeline_check(floe_ctx *ctx);
int ctx_run_stages(floe_ctx *ctx);

/* run-time checks (blowup.c): first bad particle in sets written by the
 * stage; fills msg and returns FLOE_ERR_BLOWUP. */
int ctx_check_blowup(floe_ctx *ctx, const stage_inst *st, int check_domain);

#endif
