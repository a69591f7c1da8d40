/* Floe: the one header a module includes.
 *
 * A module is a shared library exporting one entry point named after it:
 *
 *     FLOE_MODULE(wcsph) { api = core; return &desc; }
 *
 * expands to `const floe_module_desc *floe_module_wcsph(const floe_api *core)`.
 * The core hands its services over as the floe_api table, so a module links
 * against no core symbol (it loads with RTLD_LOCAL). The descriptor it returns
 * is const, append-only and size-stamped; the core checks abi_major/abi_minor
 * and refuses a module built for another major or a newer minor.
 * See docs/modules.md and modules/hello/ for a walk-through. */
#ifndef FLOE_MODULE_H
#define FLOE_MODULE_H

#include <floe/kernel.h>
#include <floe/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FLOE_ABI_MAJOR 1
#define FLOE_ABI_MINOR 16

enum { FLOE_LOG_DEBUG = 0, FLOE_LOG_INFO, FLOE_LOG_WARN, FLOE_LOG_ERROR };

/* ---- parameters ------------------------------------------------------- */

typedef enum floe_param_type {
    FLOE_PARAM_FLOAT = 1,
    FLOE_PARAM_INT,
    FLOE_PARAM_BOOL,
    FLOE_PARAM_STRING,
    FLOE_PARAM_VEC3
} floe_param_type;

/* One parameter of a stage. Zero means default: min == max means no range;
 * choices == NULL means any string. */
typedef struct floe_param_desc {
    uint32_t size;          /* sizeof(floe_param_desc) */
    const char *name;
    floe_param_type type;
    double def;             /* default of FLOAT/INT/BOOL */
    double min, max;        /* inclusive range of FLOAT/INT */
    const char *def_str;    /* default of STRING */
    const char *choices;    /* STRING: allowed values "a|b|c" */
    const char *unit;       /* SI unit, "" when dimensionless */
    const char *doc;
    double def_vec[3];      /* default of VEC3 */
} floe_param_desc;

/* A resolved parameter value; strings are owned by the core. */
typedef union floe_value {
    double f;
    int64_t i;
    int b;
    const char *s;
    double v[3];
} floe_value;

/* ---- attributes ------------------------------------------------------- */

/* FLOE_OVERWRITE (with FLOE_WRITE, without FLOE_READ): the stage sets every
 * value of the attribute from inputs it does not write, so running it twice
 * in a row gives what running it once does. A device stage whose writes are
 * all FLOE_OVERWRITE (and that records no statistics; dt_limit is fine) may be run again by
 * the core, e.g. after neighbour lists built speculatively had to be rebuilt
 * (ABI 1.3). */
/* FLOE_OWN (with FLOE_READ, ABI 1.15): the stage reads the attribute of a
 * particle only for that particle itself, never a neighbour's (an
 * accumulator: a_i += ...). Under MPI the core then does not refresh the
 * ghosts' values before it (docs/mpi.md). */
enum { FLOE_READ = 1, FLOE_WRITE = 2, FLOE_OVERWRITE = 4, FLOE_OWN = 8 };

/* An attribute a stage reads or writes on every set of a kind. Written
 * attributes are created (zeroed) when the stage joins a pipeline; read
 * attributes must exist or be written by some stage of the pipeline. */
typedef struct floe_attr_desc {
    uint32_t size;          /* sizeof(floe_attr_desc) */
    floe_set_kind kind;
    const char *name;
    floe_type type;
    unsigned access;        /* FLOE_READ | FLOE_WRITE [| FLOE_OVERWRITE] */
} floe_attr_desc;

/* ---- stages and modules ----------------------------------------------- */

typedef struct floe_stage_call {
    floe_ctx *ctx;
    const floe_value *param; /* in the order of the stage's params */
    void *state;             /* the module's state from init() */
    void *user;              /* host data (Lua stages) */
    const char *name;        /* qualified stage name, "wcsph.density" */
} floe_stage_call;

typedef int (*floe_stage_fn)(const floe_stage_call *call);

typedef struct floe_stage_desc {
    uint32_t size;                 /* sizeof(floe_stage_desc) */
    const char *name;              /* unqualified: "density" */
    const char *doc;
    floe_stage_fn run;             /* C reference path, required */
    floe_stage_fn run_cl;          /* OpenCL path, optional: run instead of `run` on the
                                    * OpenCL backend; without it `run` works on host copies */
    const floe_param_desc *params; /* terminated by an entry with name NULL */
    const floe_attr_desc *attrs;   /* terminated by an entry with name NULL */
    /* ABI 1.6: nonzero: the stage is not part of the step; it runs once per
     * output frame, after the frame's steps (and once for frame 0 before the
     * first step), with floe_sim_info.frame set: surfacers, exporters. */
    int per_frame;
    /* ABI 1.7: nonzero: the stage corrects the positions an integrator
     * wrote (terrain collision, constraints, emitters that add and remove
     * particles): it writes x but is no second integrator (the pipeline
     * check accepts it after 'integrate'). */
    int corrects;
    /* ABI 1.8: an old name kept for old scenes. Non-NULL: the pipeline
     * runs the qualified stage `replaced_by` ("sph.density"; its module is
     * loaded when it is not) in place of this one, with this stage's
     * parameter values (defaults included) under the names that stage also
     * has, and logs a deprecation warning once per context. With
     * replaced_if ("kind=xsph": a string parameter and its value) only when
     * the parameter has that value; otherwise this stage runs. run may be
     * NULL for an unconditional replacement. */
    const char *replaced_by;
    const char *replaced_if;
    /* ABI 1.13: nonzero: the stage cannot run on a part of the particles
     * (mpirun -np N, docs/mpi.md): it needs the whole set in one process
     * (a grid over the domain, a mesh of the whole surface, sums over a
     * body), or grows sets the decomposition does not know of. A pipeline
     * holding it is refused under MPI with a message naming it. Zero (and
     * every module built for an older ABI): each particle's values are a
     * gather over its neighbours, which the core's halos serve. */
    int serial;
    /* ABI 1.15: nonzero: each particle's values are a function of its own
     * attributes only (an equation of state; no neighbours, no sums over
     * particles), and the stage computes every particle of a set. Under MPI
     * what it writes on a rank's ghosts then equals what their owners
     * write, from the ghosts' refreshed inputs, and needs no halo refresh
     * before a later stage reads it (one exchange less a step for
     * wcsph.pressure, docs/mpi.md). Zero: the written attributes' ghosts are
     * refreshed from their owners when a later stage reads them. */
    int pointwise;
    /* ABI 1.16: nonzero: the stage computes each particle it computes from
     * that particle's and its neighbours' attributes only, writes nothing
     * but that particle's values, and may be called more than once in a
     * step, each call over a part of each fluid set's particles, which
     * api->rows names (every other call computes all of them, as before).
     * Under MPI the core then runs it over the particles whose neighbours
     * are all owned while the ghosts' refresh is under way, and over the
     * rest after it (docs/mpi.md, "Overlap"). */
    int rows;
} floe_stage_desc;

/* A module's state in a checkpoint (ABI 1.6): save writes bytes in an
 * order of the module's choosing, load reads them back in that order.
 * write/read return 0, or -1 (the message set) when the checkpoint is
 * full (write) or holds fewer bytes than asked for (read: a truncated or
 * foreign blob); a hook returns FLOE_OK or passes the failure on. */
typedef struct floe_state_io {
    uint32_t size;           /* sizeof(floe_state_io) */
    void *impl;              /* the core's */
    int (*write)(struct floe_state_io *io, const void *data, size_t bytes);
    int (*read)(struct floe_state_io *io, void *data, size_t bytes);
} floe_state_io;

typedef struct floe_module_desc {
    uint32_t size;                 /* sizeof(floe_module_desc) */
    uint16_t abi_major, abi_minor; /* FLOE_ABI_MAJOR, FLOE_ABI_MINOR */
    const char *name;              /* must equal the entry point's suffix */
    const char *version;           /* module version, "1.0.0" */
    const char *summary;
    const floe_stage_desc *stages; /* terminated by an entry with name NULL */
    int (*init)(floe_ctx *ctx, void **state); /* optional */
    void (*fini)(void *state);                /* optional */
    /* ABI 1.6, optional: what of the state must survive a checkpoint and
     * resume (sim:run{checkpoint_every}) for the frames after it to be
     * those of a run never interrupted; NULL when the state is scratch
     * rebuilt every step (the attributes are saved by the core). load
     * gets the state of a fresh init(), after the scene's set-up. */
    int (*save)(void *state, floe_state_io *out);
    int (*load)(void *state, floe_state_io *in);
    /* ABI 1.9, optional: the module's face in scenes. `local m = sim:load
     * "name"` calls it with the scene's lua_State (as void *, so that the
     * header needs no Lua) once per sim after init; it pushes the values
     * sim:load returns (a table of functions, say) and returns how many.
     * Its functions may raise Lua errors (luaL_error); they run on the
     * scene's thread, between steps or inside a Lua call the module makes.
     * The module links Lua itself (docs/modules.md, "A face in scenes"). */
    int (*lua_open)(void *state, floe_ctx *ctx, void *L);
} floe_module_desc;

/* ---- what the core offers --------------------------------------------- */

typedef struct floe_sim_info {
    int dim;                 /* 2 or 3 */
    float spacing;           /* particle spacing d */
    float support;           /* kernel support radius H (2 d by default) */
    float gravity[3];
    float domain_min[3], domain_max[3];
    double time;             /* simulated time at the start of this step */
    double dt;               /* this step's time step */
    uint64_t step;
    int threads;
    /* appended in ABI 1.0: */
    unsigned periodic;       /* bit k set: axis k is periodic over the domain */
    float period[3];         /* domain_max - domain_min on periodic axes, else 0 */
    /* appended in ABI 1.6: the output frame a per-frame stage runs for (its
     * file number: a run continuing in a folder continues the numbering) */
    int frame;
} floe_sim_info;

/* Minimum-image difference on periodic axes: call on x_i - x_j of every
 * neighbour pair when si->periodic != 0 (neighbour lists then cross the
 * periodic faces). A no-op on non-periodic axes. */
static inline void floe_periodic_delta(const floe_sim_info *si, float d[3])
{
    for (int k = 0; k < 3; k++)
        if (si->periodic & (1u << k)) {
            float L = si->period[k];
            if (d[k] > 0.5f * L)
                d[k] -= L;
            else if (d[k] < -0.5f * L)
                d[k] += L;
        }
}

typedef struct floe_set_info {
    const char *name;
    floe_set_kind kind;
    uint32_t n;
    float rest_density;      /* kg/m^3 (fluid) */
    int is_static;           /* never moves (boundary walls) */
} floe_set_info;

/* Neighbours of each particle of a query set inside a target set, within the
 * support radius, excluding the particle itself: for particle i,
 * idx[i * stride + k] for k < count[i]. Valid until the next "neighbours".
 * stride is a multiple of 8, and each row is padded with its first index up
 * to the next multiple of 8 (or stride): vector loops read whole blocks of 8
 * indices (<floe/simd.h> floe_row_mask8). */
typedef struct floe_nlist {
    uint32_t n;
    uint32_t stride;
    const uint32_t *count;
    const uint32_t *idx;
    /* ABI 1.4: kernel sums, or NULL. After want_kernel_sums, the neighbours
     * stage computes, with the lists, wsum[i] = sum_k w_j floe_w_hat(inv_H,
     * r_ij^2) over row i (j = idx[i * stride + k], k < count[i]; w_j = m_j
     * in a fluid target, V_j in a boundary one; inv_H of floe_kernel_make)
     * in floe_row_w8's order, so it is the float a module's own sum over
     * the row with floe_row_w8 gives: the density sum without the cost of a
     * walk of the rows. NULL when not computed (not asked for, a periodic
     * domain, the OpenCL backend, no AVX2) and from the first stage that may
     * move particles (one that writes x, a Lua stage, sim:set) until the
     * next neighbours stage. */
    const float *wsum;
} floe_nlist;

enum { FLOE_BACKEND_CPU = 0, FLOE_BACKEND_OPENCL = 1 };

/* Device neighbour lists (OpenCL backend): for query particle i, its
 * neighbours are idx[k * pitch + i] for k < count[i] (neighbour-major, so
 * consecutive work items read consecutive words); same set of neighbours as
 * floe_nlist. count and idx are cl_mem. total = sum of counts (for
 * bandwidth estimates). */
typedef struct floe_cl_nlist {
    uint32_t n, stride, pitch;
    void *count, *idx;
    double total;
} floe_cl_nlist;

/* The device cell sort of a particle set (OpenCL backend, ABI 1.14), for
 * kernels that walk the neighbour cells instead of reading lists
 * (kernels/core/cells.h; FLOE_CL_NEIGHBOURS=cells). spos holds, per sorted
 * slot, the position and the particle index (float4: x, y, z, index as
 * uint bits); start[c] .. start[c + 1] are the slots of cell c (key ix +
 * n0 (iy + n1 iz)), n0 n1 n2 + 1 words. origin = (grid origin, 1 / cell
 * edge), dims = (cells per axis, dim == 3). fresh: no position of the set
 * changed since the sort (spos equals x); else the walk finds the
 * neighbours of the sorted positions, as lists built then hold, and
 * reads x for the sums. spos NULL: no cells (lists are the way). */
typedef struct floe_cl_cells {
    uint32_t n;
    int32_t fresh;
    void *spos, *start;
    float origin[4];
    int32_t dims[4];
    float support2; /* the search radius squared (the lists' test: d2 < support2) */
    int32_t staged; /* walk a work group's candidates through local memory (FLOE_CL_CELLS_LOCAL) */
    int32_t pack;   /* pack the neighbours' data in sorted order first (FLOE_CL_CELLS_PACK) */
} floe_cl_cells;

/* One kernel argument for api->cl_run: a buffer is {sizeof(void *), &mem}
 * (&null_mem for none), a value {sizeof v, &v}, local memory {bytes, NULL}. */
typedef struct floe_cl_arg {
    size_t size;
    const void *value;
} floe_cl_arg;
#define FLOE_CL_ARG(v) ((floe_cl_arg){sizeof(v), &(v)})

typedef struct floe_grid_def {
    uint32_t size;           /* sizeof(floe_grid_def) */
    const char *name;
    uint32_t n[3];           /* cells; n[2] = 1 in 2D */
    float origin[3];         /* world position of cell (0,0,0)'s centre */
    float cell;              /* cell edge length */
    floe_type type;          /* FLOE_F32 or FLOE_VEC3 */
} floe_grid_def;

typedef struct floe_grid_info {
    const char *name;
    uint32_t n[3];
    float origin[3];
    float cell;
    floe_type type;
    void *data;              /* n[0]*n[1]*n[2] elements, x fastest */
} floe_grid_info;

struct floe_mesh;     /* <floe/mesh.h> */
struct floe_mesh_use;

typedef struct floe_api {
    uint32_t size;                 /* sizeof(floe_api); grows append-only */
    uint16_t abi_major, abi_minor;

    void (*log)(floe_ctx *ctx, int level, const char *fmt, ...);
    /* Record an error message for the current stage; returns status. */
    int (*fail)(floe_ctx *ctx, int status, const char *fmt, ...);

    const floe_sim_info *(*sim)(floe_ctx *ctx);
    /* Upper bound for the next time step (CFL-type conditions). */
    void (*dt_limit)(floe_ctx *ctx, double dt);
    /* A per-step statistic (solver iterations, residual...): the run record
     * keeps its mean and max per frame. */
    void (*stat)(floe_ctx *ctx, const char *name, double value);

    floe_set (*set_find)(floe_ctx *ctx, const char *name);
    int (*set_list)(floe_ctx *ctx, floe_set_kind kind, floe_set *out, int max);
    int (*set_info)(floe_ctx *ctx, floe_set set, floe_set_info *out);
    int (*set_resize)(floe_ctx *ctx, floe_set set, uint32_t n);
    int (*set_compact)(floe_ctx *ctx, floe_set set, const uint8_t *keep);

    /* Pointer to an attribute's data, NULL if absent or of another type. */
    void *(*attr)(floe_ctx *ctx, floe_set set, const char *name, floe_type type);
    int (*attr_add)(floe_ctx *ctx, floe_set set, const char *name, floe_type type);

    const floe_nlist *(*neighbours)(floe_ctx *ctx, floe_set query, floe_set target);

    floe_grid (*grid_add)(floe_ctx *ctx, const floe_grid_def *def);
    floe_grid (*grid_find)(floe_ctx *ctx, const char *name);
    int (*grid_info)(floe_ctx *ctx, floe_grid grid, floe_grid_info *out);

    /* ---- appended in ABI 1.1: the OpenCL backend (docs/opencl.md) ------
     * Handles are OpenCL objects passed as void * (cl_context, cl_command_queue,
     * cl_program, cl_kernel, cl_mem), so a module needs no OpenCL header. On
     * the cpu backend every getter returns NULL / FLOE_ERR. A stage's run_cl is
     * called instead of run when the backend is OpenCL; it enqueues work on
     * the core's queue and need not wait for it. */
    int (*backend)(floe_ctx *ctx);             /* FLOE_BACKEND_CPU or _OPENCL */
    void *(*cl_context)(floe_ctx *ctx);
    void *(*cl_queue)(floe_ctx *ctx);
    /* kernels/<module>/<file>, built once per run; NULL and an error message
     * (with the build log, file:line, naming the module) on failure */
    void *(*cl_program)(floe_ctx *ctx, const char *module, const char *file);
    /* a kernel of that program (cached: the same handle every call) */
    void *(*cl_kernel)(floe_ctx *ctx, const char *module, const char *file, const char *kernel);
    /* Device buffer mirroring an attribute, up to date on return. access
     * FLOE_WRITE marks the host copy stale (copied back only when a C stage
     * or an output needs it). NULL if absent or of another type. */
    void *(*cl_attr)(floe_ctx *ctx, floe_set set, const char *name, floe_type type, unsigned access);
    /* Device neighbour lists of query in target (see floe_cl_nlist). */
    int (*cl_neighbours)(floe_ctx *ctx, floe_set query, floe_set target, floe_cl_nlist *out);
    /* A named device buffer of at least `bytes` owned by the core (module scratch). */
    void *(*cl_scratch)(floe_ctx *ctx, const char *name, size_t bytes);
    /* Set the arguments and enqueue kernel over n work items (global size is
     * rounded up: kernels check their index against n). `bytes` estimates
     * the memory the launch moves (benchmark bandwidth figures; 0 = unknown).
     * The core remembers each kernel's arguments and sets only those that
     * changed: set a core kernel's arguments through cl_run only, and pass
     * buffers the core owns (cl_attr, cl_scratch) or that live as long as
     * the kernel is used. */
    int (*cl_run)(floe_ctx *ctx, void *kernel, size_t n, int nargs, const floe_cl_arg *args, double bytes);
    /* Any OpenCL entry point of the runtime the core loaded (dlsym). */
    void *(*cl_fn)(const char *name);
    /* ABI 1.2: named host memory of at least `bytes` that the runtime can copy
     * into without waiting (host-allocated, mapped; owned by the core): the
     * destination for small non-blocking reads (a read into ordinary memory
     * may wait for the copy). Contents kept while the size fits. NULL if
     * the runtime gives none: use ordinary memory then. */
    void *(*cl_pinned)(floe_ctx *ctx, const char *name, size_t bytes);
    /* ABI 1.4: from the next neighbours stage on, compute the kernel sums of
     * every fluid set's lists (floe_nlist.wsum). A density stage asks on its
     * first call and sums the rows itself while wsum is NULL. */
    void (*want_kernel_sums)(floe_ctx *ctx);
    /* ABI 1.5: the folder `folder` (relative, no '..') below the scene's
     * output root (--out; the working directory for a host without one),
     * made when missing, reached without following symbolic links: the
     * one way a module writes files (openat/renameat in it). Its first use
     * in a scene refuses an earlier run's frames there (--force: removes
     * them). A descriptor the module closes, or -1 with the message set. */
    int (*out_dir)(floe_ctx *ctx, const char *folder);
    /* ABI 1.6: write `len` bytes as the file `name` (a plain file name, no
     * '/', not starting with '.') in the run's output folder, atomically
     * (temporary file, then rename, like the particle frames). Without an
     * output folder (no out_dir, or a run that writes no frames) nothing is
     * written and FLOE_OK is returned. The folder is the run's, reached as
     * out_dir's are (no symbolic link, nothing outside the output root). FLOE_ERR_IO with a message on failure. */
    int (*out_write)(floe_ctx *ctx, const char *name, const void *data, size_t len);
    /* ABI 1.8: the read-only view of an attribute: what a stage reads that
     * it declared FLOE_READ (attr stays for what it writes). Reading it
     * never marks the device copy stale. NULL if absent or of another type.
     * Debug builds (and floe_ctx_check_access) compare the attributes a C
     * stage declared FLOE_READ only before and after it runs: a write
     * through any pointer fails the stage, naming it. */
    const void *(*attr_read)(floe_ctx *ctx, floe_set set, const char *name, floe_type type);
    /* ---- appended in ABI 1.9: sets and meshes of a module's own ---------
     * A set made by the module (as floe_set_create: NULL name or a taken
     * one is an error; the handle's id is 0 then, with the message set). */
    floe_set (*set_create)(floe_ctx *ctx, const char *name, floe_set_kind kind, float rest_density);
    /* Mark a boundary set as moving (rigid bodies): its positions change
     * every step (the module writes x), so the neighbour search sorts it at
     * every "neighbours" stage like a fluid set, and its Akinci volumes V
     * are the module's: floe_boundary_volumes neither writes them nor counts
     * its particles in the static walls' volumes. Its particles are not
     * written as frames. */
    int (*set_moving)(floe_ctx *ctx, floe_set set);
    /* The mesh the placement keys (file, object, scale, rotation,
     * translation) of the Lua table at index t describe, read and placed as
     * sim:boundary_mesh does (docs/meshes.md); on failure a Lua error
     * raised with `fn` and the file named. L is the lua_State a lua_open
     * function got. Free with mesh_destroy. */
    struct floe_mesh *(*lua_mesh)(floe_ctx *ctx, void *L, int t, const char *fn);
    void (*mesh_destroy)(struct floe_mesh *m);
    /* floe_boundary_mesh of <floe/mesh.h>: boundary particles on the mesh's
     * surface appended to `set`; the count added, or < 0 with the message set. */
    long (*boundary_mesh)(floe_ctx *ctx, floe_set set, const struct floe_mesh *m, const struct floe_mesh_use *use);
    /* ---- appended in ABI 1.10: sets that change size on the device ------
     * set_resize and set_compact without the host round trip: the device
     * copies stay the truth (the host copies are brought back only when a
     * C stage or an output asks). cl_set_resize: rows added are zero.
     * cl_set_compact: keep is a device buffer of the set's count of uint
     * words (1 keep, 0 drop), n_keep of them 1 (the caller counted them);
     * the kept particles keep their order. Both end the set's neighbour
     * lists and cell sort, like set_resize. On the cpu backend: FLOE_ERR. */
    int (*cl_set_resize)(floe_ctx *ctx, floe_set set, uint32_t n);
    int (*cl_set_compact)(floe_ctx *ctx, floe_set set, void *keep, uint32_t n_keep);
    /* Exclusive prefix sum of n uint words of a device buffer, in place. */
    int (*cl_scan)(floe_ctx *ctx, void *buf, uint32_t n);
    /* ---- appended in ABI 1.11: the core's device sort ----------------------
     * Sort n keys (a device buffer of n 64-bit unsigned words) by their low
     * `bits` bits (0 to 64; higher bits are ignored) with a payload (a
     * device buffer of n uint words that moves with them), in place and
     * stably: equal keys keep their order, so a payload of 0 .. n - 1 ends
     * as the stable sort's permutation. The core's LSD radix sort
     * (kernels/core/sort.cl, 4 bits a pass); the queue runs it in order
     * with the caller's kernels, nothing is read back. */
    int (*cl_sort)(floe_ctx *ctx, void *keys, void *vals, uint32_t n, int bits);
    /* ---- appended in ABI 1.12: a moving set placed late -------------------
     * On the OpenCL backend, fn(state) is called before the core next uses
     * the moving set `set`'s positions: in a neighbours stage after the
     * other sets' sorts and their neighbour lists are launched and before
     * this set is sorted (so what the owner does on the host there
     * overlaps that device work), or before a copy of the set to the host.
     * The owner places the set's particles there (returns FLOE_OK, or an
     * error with the message set) and, with nothing pending, returns at
     * once. The cpu backend never calls it. NULL fn: none. */
    int (*set_placer)(floe_ctx *ctx, floe_set set, int (*fn)(void *state), void *state);
    /* ---- appended in ABI 1.13: domain decomposition (docs/mpi.md) ------
     * Under mpirun -np N each process owns the particles of its slab of
     * the domain: the first `owned` of each fluid set. After them come
     * ghosts, copies of other ranks' particles within the support radius
     * of this slab, so that every owned particle's neighbour rows are
     * whole. Stages may compute on ghosts too (their results are thrown
     * away); before a stage runs, the core refreshes the ghosts of every
     * attribute it declares FLOE_READ that an earlier stage of the step
     * wrote. Without MPI: owned is the set's size, halo does nothing and
     * reduce leaves the values as they are.
     * owned: how many particles of the set this process owns (the first). */
    uint32_t (*owned)(floe_ctx *ctx, floe_set set);
    /* Refresh the ghosts of a per-particle array of the set now (data: the
     * set's n elements of elem_bytes each, an attribute or a module's
     * scratch laid out like it): a solver's iterate between iterations. */
    int (*halo)(floe_ctx *ctx, floe_set set, void *data, size_t elem_bytes);
    /* values[0..n) reduced over all ranks in place (FLOE_REDUCE_*): sums
     * over owned particles, maxima for time-step limits, convergence. */
    int (*reduce)(floe_ctx *ctx, double *values, int n, int op);
    /* ---- appended in ABI 1.14: neighbour cells on the device ------------
     * The cell sort of the last neighbours stage of `set` (floe_cl_cells),
     * where the backend prefers cell walks to lists (FLOE_CL_NEIGHBOURS=
     * cells, no periodic axis); else out->spos = NULL and the module reads
     * lists (api->cl_neighbours builds them on demand). FLOE_OK either way
     * on the OpenCL backend. */
    int (*cl_cells)(floe_ctx *ctx, floe_set set, floe_cl_cells *out);
    /* ---- appended in ABI 1.16: a stage over a part of the particles -----
     * For a stage that declares floe_stage_desc.rows: the particles of
     * `set` this call computes, *count indices in ascending order, or NULL
     * (all of them, 0..n: always outside such a split). *part: 0 for a
     * whole call, else 1 or 2, the first or second of the two calls of a
     * split; between them only the ghosts' (the particles from api->owned
     * on) attributes change, refreshed from their owners. */
    const uint32_t *(*rows)(floe_ctx *ctx, floe_set set, uint32_t *count, int *part);
} floe_api;

enum { FLOE_REDUCE_SUM = 0, FLOE_REDUCE_MAX, FLOE_REDUCE_MIN };

typedef const floe_module_desc *(*floe_module_entry_fn)(const floe_api *core);

#define FLOE_MODULE(name) \
    FLOE_EXPORT const floe_module_desc *floe_module_##name(const floe_api *core); \
    FLOE_EXPORT const floe_module_desc *floe_module_##name(const floe_api *core)

#define FLOE_SIZED(T) .size = sizeof(T)

#ifdef __cplusplus
}
#endif
#endif
