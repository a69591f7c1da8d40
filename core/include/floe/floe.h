/* Floe: the host API (command line, Lua bindings, tests, embedding). */
#ifndef FLOE_FLOE_H
#define FLOE_FLOE_H

#include <floe/module.h>
#include <floe/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FLOE_VERSION "0.1.0"

/* Everything declared here is exported from libfloe; the rest is hidden. */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* ---- simulation ------------------------------------------------------- */

/* Where a context's messages go: level (FLOE_LOG_*), the message without
 * prefix or newline, and the user pointer given with the function. Called on
 * the thread that runs the context's work (from inside a stage's parallel
 * loop too, when a module logs there). */
typedef void (*floe_log_fn)(int level, const char *msg, void *user);

typedef struct floe_sim_def {
    int dim;                 /* 2 or 3 (0 = 3) */
    float spacing;           /* particle spacing d (required) */
    float support_factor;    /* H = factor * d (0 = 2) */
    float gravity[3];
    float domain_min[3], domain_max[3];
    int threads;             /* 0 = all cores */
    int periodic[3];         /* nonzero: axis is periodic over the domain */
    /* appended: compute backend "cpu" (NULL = cpu), "opencl" or "auto"
     * (OpenCL when a device is found, else cpu); device "PLATFORM:DEVICE"
     * indices as `floe devices` lists them (NULL = first GPU, else first) */
    const char *backend;
    const char *device;
    /* appended: the context's messages go to log(level, msg, log_user)
     * (NULL = stderr, "floe: LEVEL: msg"); those below log_level are dropped
     * (floe_sim_default_def: FLOE_LOG_INFO) */
    floe_log_fn log;
    void *log_user;
    int log_level;
    /* appended: what happens to a fluid particle that leaves the domain
     * (on a non-periodic axis) after a stage moved it: FLOE_OUTSIDE_* */
    int outside;
} floe_sim_def;

enum {
    FLOE_OUTSIDE_DELETE = 0, /* removed from its set, counted (log, run record) */
    FLOE_OUTSIDE_ERROR = 1,  /* the run stops: a blow-up (exit status 3) */
    FLOE_OUTSIDE_CLAMP = 2   /* put back on the face it crossed, its outward velocity zeroed */
};

floe_sim_def floe_sim_default_def(void);
floe_ctx *floe_ctx_create(const floe_sim_def *def, char *err, size_t errlen);
/* Change the domain's outside rule (FLOE_OUTSIDE_*) from the next step on. */
int floe_ctx_set_outside(floe_ctx *ctx, int rule);
void floe_ctx_destroy(floe_ctx *ctx);
const char *floe_ctx_error(const floe_ctx *ctx);
/* Worker threads of this context's parallel loops (0 = all cores); other
 * contexts keep theirs. Each call into the context that computes (floe_step,
 * floe_run, ...) runs its OpenMP regions with this many threads and gives the
 * calling thread's own setting back on return. */
void floe_ctx_set_threads(floe_ctx *ctx, int threads);
const floe_sim_info *floe_ctx_info(floe_ctx *ctx);
/* Redirect this context's messages (fn NULL = stderr) and set the level
 * below which they are dropped (FLOE_LOG_*); other contexts keep theirs. */
void floe_ctx_set_log(floe_ctx *ctx, floe_log_fn fn, void *user);
void floe_ctx_set_log_level(floe_ctx *ctx, int level);
/* Check that modules' C stages leave the attributes they declared
 * FLOE_READ (and not FLOE_WRITE) unchanged: each is copied before the stage and compared
 * after it; a change fails the step naming the stage, the attribute, the
 * set and the first particle. On (1) by default in debug builds (no
 * NDEBUG: buildtype debug, debugoptimized), off (0) in release builds. */
void floe_ctx_check_access(floe_ctx *ctx, int on);
/* The name of names[0..n) nearest to a misspelt word, when near enough to
 * be a slip (edit distance at most about a third of its length), or NULL:
 * for "did you mean" in messages. */
const char *floe_nearest_name(const char *word, const char *const *names, int n);
/* The api table handed to modules (also usable by hosts). */
const floe_api *floe_core_api(void);

/* ---- particle sets ---------------------------------------------------- */

floe_set floe_set_create(floe_ctx *ctx, const char *name, floe_set_kind kind, float rest_density);
floe_set floe_set_find(floe_ctx *ctx, const char *name);
uint32_t floe_set_size(floe_ctx *ctx, floe_set set);
int floe_set_is_valid(floe_ctx *ctx, floe_set set);
/* Remove every particle of a set (the set and its attributes stay). */
int floe_set_clear(floe_ctx *ctx, floe_set set);
/* Apply a permutation (new index k takes old particle perm[k]) to every
 * attribute of the set. */
int floe_set_reorder(floe_ctx *ctx, floe_set set, const uint32_t *perm);
/* Positions of the set were changed from outside the pipeline (sim:set):
 * its cell sort is redone at the next "neighbours" (a static set is sorted
 * and reordered again once, not kept), and the boundary volumes are
 * recomputed when it is a boundary set. */
int floe_set_moved(floe_ctx *ctx, floe_set set);
/* A boundary set whose particles change during the run (a module grows
 * it: the freezing module's ice) is written with every frame, with its V
 * and the run's attributes it carries, instead of once at frame 0. Its
 * volumes V are the module's: the core's Akinci volumes neither overwrite
 * them nor count its particles, and growing it does not recompute them. */
int floe_set_every_frame(floe_ctx *ctx, floe_set set, int on);
void *floe_attr(floe_ctx *ctx, floe_set set, const char *name, floe_type type);
int floe_attr_add(floe_ctx *ctx, floe_set set, const char *name, floe_type type);
/* Attribute enumeration (for writers): returns 0 past the end. */
int floe_attr_at(floe_ctx *ctx, floe_set set, int index, const char **name, floe_type *type, void **data);

/* ---- grids ------------------------------------------------------------ */

floe_grid floe_grid_add(floe_ctx *ctx, const floe_grid_def *def);
floe_grid floe_grid_find(floe_ctx *ctx, const char *name);
int floe_grid_get_info(floe_ctx *ctx, floe_grid grid, floe_grid_info *out);

/* ---- scene geometry --------------------------------------------------- */

/* Fill [min,max] with particles on a lattice of the sim spacing (cell
 * centred), mass = rest_density * d^dim; velocity v0. Returns count added. */
long floe_fill_box(floe_ctx *ctx, floe_set set, const float min[3], const float max[3], const float v0[3]);
long floe_fill_sphere(floe_ctx *ctx, floe_set set, const float centre[3], float radius, const float v0[3]);

enum { /* sides of a boundary box left open */
    FLOE_OPEN_NONE = 0, FLOE_OPEN_TOP = 1
};
/* Sample the walls of the box [min,max] (inner faces) as `layers` layers of
 * boundary particles outside it. `open` leaves the top (+y) face open. */
long floe_boundary_box(floe_ctx *ctx, floe_set set, const float min[3], const float max[3], int layers, int open);
/* Sample a solid box [min,max] filled with boundary particles (obstacle). */
long floe_boundary_solid_box(floe_ctx *ctx, floe_set set, const float min[3], const float max[3]);
/* Akinci et al. 2012 volumes V_b = 1 / sum_k W(x_b - x_k) over all boundary
 * particles, into attribute "V" of every boundary set. */
int floe_boundary_volumes(floe_ctx *ctx);

/* ---- modules ---------------------------------------------------------- */

/* Load a module by name into the context (idempotent). */
int floe_module_load(floe_ctx *ctx, const char *name);
/* Directories searched, in order, ':'-separated into buf. */
void floe_module_search_path(char *buf, size_t len);

typedef struct floe_module_listing {
    const char *name, *version, *summary, *path;
    const floe_module_desc *desc;
} floe_module_listing;
/* Describe every module found on the search path; calls fn for each. Errors
 * of broken modules go to err_fn (may be NULL). */
int floe_module_scan(void (*fn)(const floe_module_listing *m, void *u),
                     void (*err_fn)(const char *path, const char *msg, void *u), void *u);

/* ---- pipeline --------------------------------------------------------- */

typedef struct floe_param_kv {
    const char *name;
    floe_param_type type;    /* what the caller supplies (FLOAT for numbers) */
    floe_value value;
} floe_param_kv;

/* Append a stage instance ("wcsph.density", or a core stage "neighbours").
 * Unknown stage, unknown parameter, wrong type and out-of-range values are
 * errors (message in floe_ctx_error). */
int floe_pipeline_add(floe_ctx *ctx, const char *stage, const floe_param_kv *kv, int nkv);
/* Append a host function as a stage (Lua stages). */
int floe_pipeline_add_fn(floe_ctx *ctx, const char *name, floe_stage_fn fn, void *user);
void floe_pipeline_clear(floe_ctx *ctx);
int floe_pipeline_length(floe_ctx *ctx);
const char *floe_pipeline_stage_name(floe_ctx *ctx, int i);
/* Run every stage once (one step with the given dt); for tests and hosts
 * that own their loop. */
int floe_step(floe_ctx *ctx, double dt);
/* Check the pipeline as a dataflow of the attributes its stages declare
 * (docs/lua-api.md, "Pipeline checks"): FLOE_ERR_ARG where it cannot work
 * (every finding in floe_ctx_error, one a line), warnings logged where it
 * looks wrong (their number in *warnings, may be NULL). `where` (a scene's
 * "file:line: ", or NULL) starts each message. floe_run checks a pipeline
 * not checked since it last changed before its first step. */
int floe_pipeline_check(floe_ctx *ctx, const char *where, int *warnings);
/* Override a stage parameter by "stage.param" after the pipeline is built
 * (from --set). Returns FLOE_ERR_ARG if no stage has that parameter. */
int floe_pipeline_set(floe_ctx *ctx, const char *key, const char *value);
/* Parameter k of pipeline stage i: its description and current value (a
 * string value stays valid until the parameter changes). 0, or -1 past the
 * end or for a host function. For hosts that show and change parameters
 * while a run goes on (floe view): a floe_pipeline_set from floe_run's
 * on_frame takes effect with the next frame and is written into that
 * frame's line of the run record ("set:"). */
int floe_pipeline_param(floe_ctx *ctx, int stage, int k, const floe_param_desc **desc, floe_value *value);
/* Run the per-frame stages (floe_stage_desc.per_frame) once for output frame
 * `frame`, writing their files into out_dir (NULL: write nothing). floe_run
 * calls it after every frame; hosts that own their loop call it themselves. */
int floe_frame_stages(floe_ctx *ctx, const char *out_dir, int frame);

/* ---- probes ----------------------------------------------------------- */

/* Measurements written as CSV tables (NAME.csv) in the folder of every
 * later run, one row per sample: after each output frame and at frame 0, or
 * at `rate` samples per second (docs/lua-api.md, "Probes"; probes.c). */
enum {
    FLOE_PROBE_POINTS = 1, /* fluid attributes interpolated at points (kernel-sum normalised) */
    FLOE_PROBE_HEIGHT,     /* water height at gauges (up = against gravity) */
    FLOE_PROBE_FRONT,      /* the fluid's furthest extent along an axis */
    FLOE_PROBE_FORCE       /* pressure force of the fluid on a boundary set */
};

typedef struct floe_probe_def {
    const char *name;         /* the table's file: NAME.csv (letters, digits, '_', '-') */
    int kind;                 /* FLOE_PROBE_* */
    int npoints;              /* POINTS, HEIGHT: how many points / gauges */
    const float (*points)[3]; /* POINTS: positions; HEIGHT: gauges (the up coordinate is ignored) */
    const char *const *attrs; /* POINTS: fluid attributes (F32 or VEC3), NULL = {"p"} */
    int nattrs;
    int axis;                 /* FRONT: 0, 1, 2 */
    int direction;            /* FRONT: +1 the largest coordinate, -1 the smallest */
    const char *set;          /* FORCE: the boundary set */
    int wall;                 /* FORCE: the wall pressure p_b the solver assumes, FLOE_WALL_* */
    double rate;              /* samples per second; 0 = once per output frame */
    double threshold;         /* HEIGHT: kernel sum at the surface (0 = 0.5) */
    /* units of the table: time column (t - time_origin) * time_scale, values
     * times scale (0 = 1), so it can sit on the axes of its reference */
    double time_origin, time_scale, scale;
    const char *reference;    /* a CSV of measured data (x, y) to compare with, or NULL:
                               * listed in probes.csv beside the tables (floe compare plots it) */
    int min_neighbours;       /* FRONT: the outermost particle with at least this many other fluid
                               * particles within 1.5 d (0 = the outermost particle) */
} floe_probe_def;

/* Declare a probe (checked here: name, kind, points, the boundary set). */
int floe_probe_add(floe_ctx *ctx, const floe_probe_def *def);
/* wall pressure of the force probe: p_b = p_i (wcsph, iisph mirror), p_b = 0
 * (Akinci's force alone: dfsph, iisph akinci), p_b = p_i + rho_i g.(x_b - x_i)
 * where p_i > 0 (iisph's default extrapolate) */
enum { FLOE_WALL_MIRROR = 0, FLOE_WALL_AKINCI, FLOE_WALL_EXTRAPOLATE };

/* ---- running ---------------------------------------------------------- */

enum { FLOE_FMT_PLY = 1, FLOE_FMT_VTK = 2 };

typedef struct floe_frame_stats {
    int frame;
    double time;
    uint64_t steps;          /* steps in this frame */
    double dt_min, dt_max;
    uint32_t particles;
    double max_speed;
    double density_err_avg, density_err_max; /* compression (rho/rho0 - 1)+ */
    double kinetic, potential;
    double wall_s;
} floe_frame_stats;

typedef int (*floe_frame_fn)(floe_ctx *ctx, const floe_frame_stats *st, void *user);

typedef struct floe_run_def {
    int frames;              /* output frames after frame 0 */
    double fps;              /* 0 = 30 */
    double end_time;         /* > 0 overrides frames = end_time * fps */
    double dt;               /* fixed step, 0 = adaptive */
    double cfl;              /* adaptive: dt <= cfl * d / v_max (0 = 0.4) */
    double dt_max;           /* adaptive upper bound (0 = 1/fps) */
    const char *out_dir;     /* NULL = write nothing */
    const char *name;        /* frame file base name (0 = set name) */
    unsigned formats;        /* FLOE_FMT_* (0 = PLY) */
    const char *const *attrs;/* attributes written besides x (NULL = v, rho, p) */
    int nattrs;
    int progress;            /* 1 bar/lines, 0 quiet */
    int write_frames;        /* 0 = stats and record only (benchmarks) */
    const char *scene_path;  /* for the run record */
    const char *scene_hash;
    floe_frame_fn on_frame;  /* after each frame is written; > 0 stops (status
                              * stopped), < 0 fails the run with that status
                              * and the message set through floe_api.fail */
    void *user;
    /* appended: write a checkpoint (checkpoint.floe in out_dir) after every
     * N-th frame (0 = never); a run of a context whose output was made with
     * FLOE_OUTPUT_RESUME goes on from the checkpoint there */
    int checkpoint_every;
} floe_run_def;

typedef struct floe_run_summary {
    int frames;
    uint64_t steps;
    double sim_time, wall_s;
    double particle_steps_per_s;
    int nstages;
    char stage_name[64][128]; /* copies: the summary outlives the context */
    double stage_ms[64];     /* total milliseconds per stage */
    int status;
    /* appended: how often each stage ran, and whether once per output
     * frame (ABI 1.5 per_frame: then its time is per frame, not per step) */
    uint64_t stage_calls[64];
    int stage_per_frame[64];
    double cpu_s;            /* the process's CPU time over the run (all threads) */
} floe_run_summary;

floe_run_def floe_run_default_def(void);
int floe_run(floe_ctx *ctx, const floe_run_def *def, floe_run_summary *sum);
/* Ask a running floe_run to stop after the current frame (signal-safe);
 * asked before a run, the run stops after frame 0. */
void floe_request_stop(void);

/* Surface the particle frames of a finished run in dir (NAME.NNNN.ply, run.yaml)
 * with the surface module's stage "surface.<method>" ("mc" or "anisotropic")
 * at cell size `cell` (fraction of the spacing, 0 = 0.5): meshes
 * surface.NNNN.obj/.ply beside them; a progress bar when show is set. */
typedef struct floe_surface_opts {
    const char *method;      /* "mc" or "anisotropic" (NULL = anisotropic) */
    double cell;             /* cell edge / spacing (0 = 0.5) */
    int show;                /* progress bar */
    int threads;             /* 0 = OpenMP's default */
    const char *backend;     /* "cpu" (NULL), "opencl" or "auto": where the splat runs */
    const char *format;      /* "obj", "ply" or "both" (NULL = both) */
    const char *mesher;      /* "cubes" (NULL) or "tetrahedra" */
} floe_surface_opts;
int floe_surface_dir(const char *dir, const floe_surface_opts *o, char *err, size_t errlen);

/* Neighbour search benchmark: n particles at fluid density, `iters` full
 * updates (sort + lists). Returns 0 or an error status. */
int floe_bench_neighbours(uint32_t n, int dim, int threads, int iters, double *updates_per_s,
                          double *sort_ms, double *build_ms, double *avg_neighbours);
/* The same for a method ("cells" or "sorted_keys") and a layout ("uniform":
 * a block at fluid density; "sparse": a thin winding river over a wide
 * terrain-like domain). docs/neighbours.md. */
int floe_bench_neighbours_method(uint32_t n, int dim, int threads, int iters, const char *method,
                                 const char *layout, double *updates_per_s, double *sort_ms, double *build_ms,
                                 double *avg_neighbours);

/* ---- OpenCL backend ---------------------------------------------------- */

/* The backend a context runs on (FLOE_BACKEND_CPU or FLOE_BACKEND_OPENCL)
 * and a one-line description ("cpu", "opencl: NVIDIA H200 (NVIDIA CUDA ...)"). */
int floe_ctx_backend(floe_ctx *ctx);
const char *floe_ctx_backend_name(floe_ctx *ctx);
/* List OpenCL platforms and devices, one line each, through fn. Returns the
 * number of devices, or -1 with why in the first line when no OpenCL
 * runtime can be loaded (the program itself runs without one). */
int floe_cl_devices(void (*fn)(const char *line, void *u), void *u);

/* ---- output ----------------------------------------------------------- */

/* An output root, shared by the contexts of one scene. With
 * FLOE_OUTPUT_CONFINE every file a run or a module of an attached context
 * writes lies below root: paths are resolved from the root's folder one
 * component at a time, '..' and symbolic links refused. Unless
 * FLOE_OUTPUT_FORCE, the root is refused when it is '/', the home folder or
 * a folder holding files that are not Floe output, and a folder holding an
 * earlier run is refused (with FORCE: that run's files are removed first).
 * A second run into a folder of the same output continues its numbering.
 * A context without an output writes where out_dir says (docs/reliability.md). */
typedef struct floe_output floe_output;
/* FLOE_OUTPUT_RESUME (--resume): the root holds the run being resumed; its
 * folders are taken as they are (nothing refused, nothing removed).
 * FLOE_OUTPUT_BENCH (floe bench: runs write their records, no frames): a
 * folder whose earlier run left only run records (run.yaml, run.N.yaml: an
 * earlier benchmark) is taken without FORCE, those records replaced; one
 * holding frames or other run files is refused as without the flag. */
enum { FLOE_OUTPUT_CONFINE = 1, FLOE_OUTPUT_FORCE = 2, FLOE_OUTPUT_RESUME = 4, FLOE_OUTPUT_BENCH = 8 };
floe_output *floe_output_create(const char *root, unsigned flags, char *err, size_t errlen);
void floe_output_destroy(floe_output *out);
/* out outlives the context (NULL detaches). */
void floe_ctx_set_output(floe_ctx *ctx, floe_output *out);

/* ---- Lua -------------------------------------------------------------- */

typedef struct floe_scene_opts {
    const char *path;
    int frames;              /* -1 = scene's */
    const char *out_dir;     /* NULL = scene's */
    int threads;             /* 0 = default */
    int unsafe;              /* lift the sandbox */
    int progress;            /* -1 auto */
    int write_frames;        /* 0 = benchmark: no frame files */
    const char *const *sets; /* "k=v" overrides */
    int nsets;
    floe_run_summary *summary; /* filled by the last sim:run */
    /* appended: override floe.sim{ backend = ... } and the device (CLI) */
    const char *backend;
    const char *device;
    /* appended: messages of the scene's sims and of floe.log (as
     * FLOE_LOG_INFO, "[scene] ...") go to log(level, msg, log_user);
     * NULL = stderr */
    floe_log_fn log;
    void *log_user;
    /* appended: write into a refused output folder, replace an earlier run
     * (--force); stop the scene after this many wall seconds (0 = never) */
    int force;
    double timeout_s;
    /* appended: go on from the checkpoint in this run folder (--resume): the
     * scene's set-up runs again, then the state becomes the checkpoint's and
     * the run continues at the next frame; it is also the output root
     * (out_dir is ignored) */
    const char *resume;
    /* appended: called after every output frame of every sim:run of the
     * scene (after the scene's own sim:on_frame), as floe_run_def.on_frame:
     * > 0 stops the run, < 0 fails it; NULL = none (floe view draws here) */
    floe_frame_fn on_frame;
    void *frame_user;
} floe_scene_opts;

/* Run a scene script. Errors (with file:line) into err. */
int floe_scene_run(const floe_scene_opts *opt, char *err, size_t errlen);

/* ---- MPI (docs/mpi.md) -------------------------------------------------- */

/* Join the MPI job this process was started in (mpirun -np N): MPI_Init,
 * then every floe_run of every context is decomposed into N slabs, one per
 * rank. Returns this process's rank (>= 0), or -1 with why in err (a build
 * without MPI). Process-wide, like MPI itself; call once, before any
 * context runs, and floe_mpi_end before exiting. */
int floe_mpi_begin(int *argc, char ***argv, char *err, size_t errlen);
/* Finalize (status 0) or abort the whole job with status (a rank that
 * failed: the others would wait for it forever). */
void floe_mpi_end(int status);
/* The job's size (1 without floe_mpi_begin) and this process's rank. */
int floe_mpi_size(int *rank);
/* Move the slab boundaries to even out the ranks' work at most every
 * `frames` output frames (0 = never; default 10), when the busiest rank
 * holds more than 2% above the mean. */
void floe_mpi_balance_every(int frames);
/* What the balance evens out: "pairs" (the default: each particle weighs
 * its neighbour pairs plus a fixed part, from the host's lists; counts on
 * GPU ranks) or "count" (particles). -1 for another name. */
int floe_mpi_balance_by(const char *what);
/* The skin of the ghost lists, a fraction of the support radius H (0 to
 * 1; default 0.5): ghosts are the particles within H + skin of a box, and
 * the particles migrate and the lists are rebuilt only when one moved more
 * than skin / 2 since the last rebuild; between rebuilds a step sends the
 * ghosts' values again. 0 rebuilds every step. -1 outside [0, 1]. */
int floe_mpi_skin(double frac);
/* How the ranks split the domain: "slabs" (along the fluid's longest
 * axis), "boxes" (cuts along two or three axes) or "auto" (the default:
 * the split with the least cut area, the halo's volume). -1 for another
 * name. */
int floe_mpi_decomp(const char *mode);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif
