/* floe: the command line. run a scene, list modules, benchmark. */
#include <floe/floe.h>

#include "report.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: floe <command> [options]\n"
    "\n"
    "commands:\n"
    "  run SCENE.lua [options]    run a scene script (headless)\n"
    "  bench SCENE.lua [options]  run a scene without writing frames; print particle-steps/s\n"
    "                             and milliseconds per step of every stage\n"
    "  bench neighbours [--n N] [--dim D] [--iters K] [--threads T] [--method cells|sorted_keys]\n"
    "                   [--layout uniform|sparse]\n"
    "                             neighbour search updates per second\n"
    "  bench surface OUT_DIR [floe surface's options]\n"
    "                             the surfacer alone on a run's frames: ms per frame\n"
    "  surface OUT_DIR [--method mc|anisotropic] [--cell C] [--format F] [--mesher M] [--threads N] [--backend B] [--quiet]\n"
    "                             meshes (surface.NNNN.obj/.ply) of a finished run's particle\n"
    "                             frames; C = cell edge / spacing (0.5)\n"
    "  compare SCENE.lua --vary K=A,B [--out DIR]\n"
    "                             run variants of a scene side by side; one report (HTML, PNG, CSV)\n"
    "  validate [--quick] [--out DIR]\n"
    "                             run the validation cases with every method; report with pass/fail\n"
    "  modules [NAME]             list modules on the search path (or module NAME), their\n"
    "                             stages and parameters\n"
    "  devices                    list OpenCL platforms and devices (for --device)\n"
    "  view SCENE.lua|RUN_DIR ... watch a scene live, play a run back, two to four side by\n"
    "                             side (GLFW + OpenGL 4.3; `floe view --help`)\n"
    "  --version                  print the version\n"
    "  --help                     this text; `floe COMMAND --help`: that command's options\n"
    "\n"
    "environment: FLOE_MODULE_PATH (':'-separated module folders)\n"
    "exit status: 0 done, 1 error, 2 usage, 3 blow-up, 130 interrupted\n";

/* `floe COMMAND --help` */
static const char help_run[] =
    "usage: floe run SCENE.lua [options]\n"
    "run a scene script headless: frames and run.yaml in its output folder\n"
    "\n"
    "options:\n"
    "  --frames N      number of output frames (overrides the scene)\n"
    "  --out DIR       output folder (overrides the scene)\n"
    "  --threads N     worker threads (default: all cores)\n"
    "  --set K=V       scene parameter read by floe.param(K), or STAGE.PARAM=V for a stage\n"
    "  --unsafe        lift the scene sandbox (os.execute, io.popen, writes anywhere)\n"
    "  --force         write into an output folder that is refused otherwise ('/', the home\n"
    "                  folder, one holding other files) and replace an earlier run there\n"
    "  --timeout S     stop after S seconds of wall time (like Ctrl-C: the frame is finished)\n"
    "  --resume DIR    run: go on from the checkpoint in the run folder DIR (written with\n"
    "                  sim:run{checkpoint_every = N}); DIR is also the output folder\n"
    "  --quiet         no progress display\n"
    "  --backend B     cpu, opencl or auto (overrides floe.sim{ backend = ... })\n"
    "  --balance K     under mpirun: move the slabs to even out the ranks' work at most every\n"
    "                  K frames (default 10, 0 = never; docs/mpi.md)\n"
    "  --balance-by W  under mpirun: pairs (each particle weighed by its neighbour pairs, the\n"
    "                  default) or count (particle counts)\n"
    "  --mpi-skin F    under mpirun: ghosts within (1 + F) support radii of a box; migration and\n"
    "                  new ghost lists only when a particle moved F/2 support radii since the\n"
    "                  last ones (default 0.5; 0 = every step; docs/mpi.md)\n"
    "  --decomp D      under mpirun: slabs, boxes or auto (default: the split with the least\n"
    "                  cut area between the ranks; docs/mpi.md)\n"
    "  --device P:D    OpenCL platform and device as `floe devices` lists them\n"
    "\n"
    "environment: FLOE_MODULE_PATH (':'-separated module folders)\n"
    "exit status: 0 done (also when on_frame stopped the run), 1 error, 2 usage, 3 blow-up,\n"
    "             124 --timeout reached, 130 interrupted (Ctrl-C), 143 terminated (SIGTERM)\n";

static const char help_bench[] =
    "usage: floe bench SCENE.lua [options]\n"
    "       floe bench neighbours [--n N] [--dim D] [--iters K] [--threads T]\n"
    "                             [--method cells|sorted_keys] [--layout uniform|sparse]\n"
    "run a scene without writing frames and print steps/s, particle-steps/s, the milliseconds\n"
    "per step of every stage, the CPU time per step and the milliseconds per frame of the\n"
    "per-frame stages (the last sim:run of the scene); or time the neighbour search:\n"
    "N particles at fluid density (default 100000) in D dimensions (3), K updates (20)\n"
    "\n"
    "options (scenes): as `floe run --help`; with --backend opencl also per-kernel times\n"
    "and bandwidth (FLOE_CL_PROFILE=1)\n"
    "  --all-ranks     under mpirun: every rank prints its own stage times, its lines\n"
    "                  beginning `rank R:` (rank 0 alone prints the summary otherwise)\n";

static const char help_modules[] =
    "usage: floe modules [NAME]\n"
    "list every module on the search path (or only module NAME: 'core' for the built-in\n"
    "stages) with its stages, their parameters, defaults, ranges and units\n"
    "\n"
    "environment: FLOE_MODULE_PATH (':'-separated module folders, searched first)\n";

static const char help_devices[] =
    "usage: floe devices\n"
    "list OpenCL platforms and devices, one line each, as P:D for --device\n";

static int is_help(const char *a) { return !strcmp(a, "--help") || !strcmp(a, "-h"); }

#define MAX_THREADS_PER_CORE 4 /* --threads above 4 x the cores is clamped */

static volatile sig_atomic_t stop_signal;

/* Ctrl-C and SIGTERM: the frame is finished, the record says interrupted. */
static void on_stop_signal(int sig)
{
    stop_signal = sig;
    floe_request_stop();
    signal(sig, SIG_DFL); /* a second one ends at once */
}

/* Whole text as an integer in [lo, hi], else an error naming the option. */
static int parse_long(const char *cmd, const char *opt, const char *text, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (end == text || *end != '\0' || errno == ERANGE || v < lo || v > hi) {
        fprintf(stderr, "floe %s: %s '%s': expected a whole number in [%ld, %ld]\n", cmd, opt, text, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_double(const char *cmd, const char *opt, const char *text, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *end != '\0' || errno == ERANGE || !isfinite(v) || v < lo || v > hi) {
        fprintf(stderr, "floe %s: %s '%s': expected a number in [%g, %g]\n", cmd, opt, text, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

/* At most MAX_THREADS_PER_CORE x the cores: more only costs (10000 threads
 * hang a machine, 100000 fail to start). */
static int clamp_threads(const char *cmd, long t)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    long max = MAX_THREADS_PER_CORE * (cores > 0 ? cores : 1);
    if (t > max) {
        fprintf(stderr, "floe %s: --threads %ld is more than %d x the %ld cores: using %ld\n", cmd, t,
                MAX_THREADS_PER_CORE, cores, max);
        t = max;
    }
    return (int)t;
}

static const char *type_str(floe_param_type t)
{
    static const char *n[] = {"?", "float", "int", "bool", "string", "vec3"};
    return t >= FLOE_PARAM_FLOAT && t <= FLOE_PARAM_VEC3 ? n[t] : "?";
}

static void print_default(const floe_param_desc *p)
{
    switch (p->type) {
    case FLOE_PARAM_FLOAT: printf("%g", p->def); break;
    case FLOE_PARAM_INT: printf("%lld", (long long)p->def); break;
    case FLOE_PARAM_BOOL: printf("%s", p->def != 0 ? "true" : "false"); break;
    case FLOE_PARAM_STRING: printf("\"%s\"", p->def_str ? p->def_str : ""); break;
    case FLOE_PARAM_VEC3: printf("{%g, %g, %g}", p->def_vec[0], p->def_vec[1], p->def_vec[2]); break;
    }
}

static void list_module(const floe_module_listing *m, void *u)
{
    (void)u;
    printf("%s %s  (%s)\n  %s\n", m->name, m->version, m->path, m->summary ? m->summary : "");
    for (const floe_stage_desc *s = m->desc->stages; s->name; s++) {
        if (strcmp(m->name, "core") == 0)
            printf("  stage %s\n", s->name);
        else
            printf("  stage %s.%s\n", m->name, s->name);
        if (s->doc)
            printf("      %s\n", s->doc);
        for (const floe_param_desc *p = s->params; p && p->name; p++) {
            printf("      %-18s %-6s default ", p->name, type_str(p->type));
            print_default(p);
            if ((p->type == FLOE_PARAM_FLOAT || p->type == FLOE_PARAM_INT) && p->min < p->max)
                printf("  range [%g, %g]", p->min, p->max);
            if (p->choices)
                printf("  one of %s", p->choices);
            if (p->unit && p->unit[0])
                printf("  [%s]", p->unit);
            printf("\n");
            if (p->doc)
                printf("          %s\n", p->doc);
        }
    }
    printf("\n");
}

static void list_error(const char *path, const char *msg, void *u)
{
    (void)u;
    fprintf(stderr, "floe: skipping %s: %s\n", path, msg);
}

typedef struct module_pick {
    const char *want;        /* NULL: every module */
    int found, n;
    char names[256][64];
    const char *ptr[256];
} module_pick;

static void pick_module(const floe_module_listing *m, void *u)
{
    module_pick *p = u;
    if (p->n < 256) {
        snprintf(p->names[p->n], sizeof p->names[p->n], "%s", m->name);
        p->ptr[p->n] = p->names[p->n];
        p->n++;
    }
    if (p->want && strcmp(p->want, m->name) != 0)
        return;
    p->found++;
    list_module(m, NULL);
}

static int cmd_modules(int argc, char **argv)
{
    if (argc > 0 && is_help(argv[0])) {
        fputs(help_modules, stdout);
        return 0;
    }
    if (argc > 1) {
        fprintf(stderr, "floe modules: one module name at most\n%s", help_modules);
        return 2;
    }
    static module_pick pick;
    pick.want = argc ? argv[0] : NULL;
    char sp[4096];
    floe_module_search_path(sp, sizeof sp);
    if (!pick.want)
        printf("module search path: %s\n\n", sp);
    if (floe_module_scan(pick_module, pick.want ? NULL : list_error, &pick))
        return 1;
    if (pick.want && !pick.found) {
        const char *near = floe_nearest_name(pick.want, pick.ptr, pick.n);
        fprintf(stderr, "floe modules: no module '%s' on the search path %s%s%s%s\n", pick.want, sp,
                near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
        return 1;
    }
    return 0;
}

static int cmd_surface(int argc, char **argv);

static int cmd_bench_neighbours(int argc, char **argv)
{
    long n = 100000, dim = 3, iters = 20, threads = 0;
    const char *method = NULL, *layout = "uniform";
    for (int i = 0; i < argc; i++) {
        if ((!strcmp(argv[i], "--method") || !strcmp(argv[i], "--layout")) && i + 1 < argc) {
            *(argv[i][2] == 'm' ? &method : &layout) = argv[i + 1];
            i++;
            continue;
        }
        long *dst = !strcmp(argv[i], "--n") ? &n : !strcmp(argv[i], "--dim") ? &dim
                  : !strcmp(argv[i], "--iters") ? &iters : !strcmp(argv[i], "--threads") ? &threads : NULL;
        if (!dst || i + 1 >= argc) {
            fprintf(stderr, "floe bench neighbours: unknown or incomplete option '%s'\n", argv[i]);
            return 2;
        }
        if (parse_long("bench neighbours", argv[i], argv[i + 1], 0, 1000000000L, dst))
            return 2;
        i++;
    }
    threads = clamp_threads("bench neighbours", threads);
    double ups, sort_ms, build_ms, avg;
    if (method && strcmp(method, "cells") && strcmp(method, "sorted_keys")) {
        fprintf(stderr, "floe bench neighbours: --method is cells or sorted_keys (got '%s')\n", method);
        return 2;
    }
    if (strcmp(layout, "uniform") && strcmp(layout, "sparse")) {
        fprintf(stderr, "floe bench neighbours: --layout is uniform or sparse (got '%s')\n", layout);
        return 2;
    }
    /* without --method and --layout: the cell search's own benchmark, as before */
    int plain = !method && !strcmp(layout, "uniform");
    if (n <= 0 || (dim != 2 && dim != 3) || iters <= 0 ||
        (plain ? floe_bench_neighbours((uint32_t)n, (int)dim, (int)threads, (int)iters, &ups, &sort_ms, &build_ms, &avg)
               : floe_bench_neighbours_method((uint32_t)n, (int)dim, (int)threads, (int)iters,
                                              method ? method : "cells", layout, &ups, &sort_ms, &build_ms, &avg))) {
        fprintf(stderr, "floe bench neighbours: failed (bad arguments or out of memory)\n");
        return 1;
    }
    printf("neighbours: n=%ld dim=%ld threads=%ld iters=%ld method=%s layout=%s\n", n, dim, threads, iters,
           method ? method : "cells", layout);
    printf("  sort %.3f ms, lists %.3f ms per update, %.1f neighbours per particle\n", sort_ms, build_ms, avg);
    printf("  %.4g neighbour updates/s (particles x updates per second)\n", ups);
    return 0;
}

static void print_line(const char *line, void *u)
{
    (void)u;
    printf("%s\n", line);
}

static int cmd_devices(int argc, char **argv)
{
    if (argc > 0 && is_help(argv[0])) {
        fputs(help_devices, stdout);
        return 0;
    }
    return floe_cl_devices(print_line, NULL) < 0 ? 1 : 0;
}

static int cmd_run(int argc, char **argv, int bench)
{
    for (int i = 0; i < argc; i++)
        if (is_help(argv[i])) {
            fputs(bench ? help_bench : help_run, stdout);
            return 0;
        }
    if (bench && argc > 0 && !strcmp(argv[0], "neighbours"))
        return cmd_bench_neighbours(argc - 1, argv + 1);
    if (bench && argc > 0 && !strcmp(argv[0], "surface")) /* the surfacer alone: floe surface's timing */
        return cmd_surface(argc - 1, argv + 1);
    floe_scene_opts o;
    memset(&o, 0, sizeof o);
    o.frames = -1;
    o.progress = -1;
    o.write_frames = !bench;
    const char **sets = calloc((size_t)argc + 1, sizeof *sets);
    floe_run_summary sum;
    memset(&sum, 0, sizeof sum);
    o.summary = &sum;
    const char *cmd = bench ? "bench" : "run";
    int all_ranks = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int has = i + 1 < argc;
        long v;
        if ((!strcmp(a, "--frames") || !strcmp(a, "--threads")) && has) {
            if (parse_long(cmd, a, argv[++i], 0, 10000000L, &v)) {
                free(sets);
                return 2;
            }
            if (a[2] == 't')
                o.threads = clamp_threads(cmd, v);
            else
                o.frames = (int)v;
        } else if (!strcmp(a, "--timeout") && has) {
            if (parse_double(cmd, a, argv[++i], 1e-3, 1e9, &o.timeout_s)) {
                free(sets);
                return 2;
            }
        } else if (!strcmp(a, "--out") && has)
            o.out_dir = argv[++i];
        else if (!strcmp(a, "--resume") && has && !bench)
            o.resume = argv[++i];
        else if (!strcmp(a, "--force"))
            o.force = 1;
        else if (!strcmp(a, "--set") && has && strchr(argv[i + 1], '='))
            sets[o.nsets++] = argv[++i];
        else if (!strcmp(a, "--unsafe"))
            o.unsafe = 1;
        else if (!strcmp(a, "--quiet"))
            o.progress = 0;
        else if (!strcmp(a, "--all-ranks") && bench)
            all_ranks = 1;
        else if (!strcmp(a, "--backend") && has)
            o.backend = argv[++i];
        else if (!strcmp(a, "--device") && has)
            o.device = argv[++i];
        else if (!strcmp(a, "--balance") && has) {
            if (parse_long(cmd, a, argv[++i], 0, 1000000L, &v)) {
                free(sets);
                return 2;
            }
            floe_mpi_balance_every((int)v);
        } else if (!strcmp(a, "--mpi-skin") && has) {
            double f;
            if (parse_double(cmd, a, argv[++i], 0, 1, &f)) {
                free(sets);
                return 2;
            }
            floe_mpi_skin(f);
        } else if (!strcmp(a, "--balance-by") && has) {
            if (floe_mpi_balance_by(argv[++i])) {
                fprintf(stderr, "floe %s: --balance-by must be pairs or count, got '%s'\n", bench ? "bench" : "run",
                        argv[i]);
                free(sets);
                return 2;
            }
        } else if (!strcmp(a, "--decomp") && has) {
            if (floe_mpi_decomp(argv[++i])) {
                fprintf(stderr, "floe %s: --decomp must be slabs, boxes or auto, got '%s'\n", bench ? "bench" : "run",
                        argv[i]);
                free(sets);
                return 2;
            }
        } else if (a[0] != '-' && !o.path)
            o.path = a;
        else {
            fprintf(stderr, "floe %s: unknown or incomplete option '%s'\n%s", bench ? "bench" : "run", a, usage);
            free(sets);
            return 2;
        }
    }
    if (!o.path) {
        fprintf(stderr, "floe %s: no scene given\n%s", bench ? "bench" : "run", usage);
        free(sets);
        return 2;
    }
    o.sets = sets;
    if (bench && o.backend && strcmp(o.backend, "cpu") != 0)
        setenv("FLOE_CL_PROFILE", "1", 0); /* per-kernel table at the end */
    signal(SIGINT, on_stop_signal);
    signal(SIGTERM, on_stop_signal);
    char err[8192];
    int rank = 0, ranks = floe_mpi_size(&rank);
    if (rank != 0) /* MPI: rank 0 shows the progress and the summary */
        o.progress = 0;
    int rc = floe_scene_run(&o, err, sizeof err);
    free(sets);
    /* --all-ranks: each rank's lines begin "rank R: " (one process: none) */
    char who[32] = "";
    if (all_ranks && ranks > 1)
        snprintf(who, sizeof who, "rank %d: ", rank);
    if ((rank == 0 || (all_ranks && ranks > 1)) && (sum.frames > 0 || sum.steps > 0)) {
        printf("%s%s: %d frames, %llu steps, %.4g s simulated in %.3f s wall, %.1f steps/s, %.4g particle-steps/s\n", who,
               o.path, sum.frames, (unsigned long long)sum.steps, sum.sim_time, sum.wall_s,
               sum.wall_s > 0 ? (double)sum.steps / sum.wall_s : 0, sum.particle_steps_per_s);
        if (sum.steps > 0) {
            double total = 0;
            for (int i = 0; i < sum.nstages; i++)
                if (!sum.stage_per_frame[i])
                    total += sum.stage_ms[i];
            printf("%s  per step: %.3f ms in stages; %.3f ms of CPU time (all threads, the whole run)\n", who,
                   total / (double)sum.steps, 1e3 * sum.cpu_s / (double)sum.steps);
            for (int i = 0; i < sum.nstages; i++)
                if (!sum.stage_per_frame[i])
                    printf("%s    %-28s %9.3f ms  %5.1f%%\n", who, sum.stage_name[i], sum.stage_ms[i] / (double)sum.steps,
                           total > 0 ? 100 * sum.stage_ms[i] / total : 0);
            for (int i = 0, first = 1; i < sum.nstages; i++)
                if (sum.stage_per_frame[i] && sum.stage_calls[i]) {
                    if (first)
                        printf("%s  per frame (stages run once per output frame, frame 0 included):\n", who);
                    first = 0;
                    printf("%s    %-28s %9.3f ms  (%llu runs)\n", who, sum.stage_name[i],
                           sum.stage_ms[i] / (double)sum.stage_calls[i], (unsigned long long)sum.stage_calls[i]);
                }
        }
    }
    if (rc == FLOE_OK)
        return 0;
    if (ranks > 1)
        fprintf(stderr, "floe (rank %d of %d): %s\n", rank, ranks, err);
    else
        fprintf(stderr, "floe: %s\n", err);
    if (rc == FLOE_ERR_INTERRUPT)
        return 128 + (stop_signal ? stop_signal : SIGINT);
    return rc == FLOE_ERR_BLOWUP ? 3 : rc == FLOE_ERR_TIMEOUT ? 124 : 1;
}

static const char help_surface[] =
    "usage: floe surface OUT_DIR [--method mc|anisotropic] [--cell C] [--format obj|ply|both|none]\n"
    "                    [--mesher cubes|tetrahedra] [--threads N] [--backend cpu|opencl|auto] [--quiet]\n"
    "surface a finished run's particle frames: surface.NNNN.obj/.ply beside them\n"
    "(marching cubes of the SPH colour field; anisotropic: Yu & Turk kernels)\n"
    "  --cell C      grid cell edge as a fraction of the particle spacing (0.5)\n"
    "  --format F    mesh files to write (both; none: make the meshes, write nothing)\n"
    "  --mesher M    marching cubes, or tetrahedra (about three times the triangles) (cubes)\n"
    "  --threads N   OpenMP threads (all cores)\n"
    "  --backend B   where the colour field is splatted (cpu)\n"
    "It prints the time per frame (reading and writing included): the benchmark\n"
    "of the surfacer alone (docs/surface.md).\n";

static int cmd_surface(int argc, char **argv)
{
    const char *dir = NULL;
    floe_surface_opts o = {.method = "anisotropic", .cell = 0.5, .show = 1, .format = "both"};
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--method") && next && (!strcmp(next, "mc") || !strcmp(next, "anisotropic")))
            o.method = argv[++i];
        else if (!strcmp(a, "--format") && next &&
                 (!strcmp(next, "obj") || !strcmp(next, "ply") || !strcmp(next, "both") || !strcmp(next, "none")))
            o.format = argv[++i];
        else if (!strcmp(a, "--mesher") && next && (!strcmp(next, "cubes") || !strcmp(next, "tetrahedra")))
            o.mesher = argv[++i];
        else if (!strcmp(a, "--backend") && next && (!strcmp(next, "cpu") || !strcmp(next, "opencl") || !strcmp(next, "auto")))
            o.backend = argv[++i];
        else if (!strcmp(a, "--cell") && next) {
            if (parse_double("surface", "--cell", argv[++i], 0.05, 4, &o.cell))
                return 2;
        } else if (!strcmp(a, "--threads") && next) {
            long t;
            if (parse_long("surface", "--threads", argv[++i], 1, 1000000, &t))
                return 2;
            o.threads = clamp_threads("surface", t);
        } else if (is_help(a))
            return fputs(help_surface, stdout), 0;
        else if (!strcmp(a, "--quiet"))
            o.show = 0;
        else if (a[0] != '-' && !dir)
            dir = a;
        else
            return fprintf(stderr, "floe surface: unknown or incomplete option '%s'\n%s", a, help_surface), 2;
    }
    if (!dir)
        return fprintf(stderr, "floe surface: no output folder given\n%s", help_surface), 2;
    char err[4096];
    int rc = floe_surface_dir(dir, &o, err, sizeof err);
    if (rc)
        fprintf(stderr, "floe surface: %s\n", err);
    return rc ? 1 : 0;
}

/* floe view is a program of its own (floe-view, built where GLFW 3 and
 * libepoxy are found): beside this one when installed, in the build tree's
 * viewer/ folder when run from there. */
static int cmd_view(int argc, char **argv)
{
    char self[4096], path[4200];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = '\0';
    char *slash = strrchr(self, '/');
    if (slash)
        *slash = '\0';
    const char *env = getenv("FLOE_VIEW");
    const char *cand[3] = {env, NULL, NULL};
    char a[4200], b[4200];
    snprintf(a, sizeof a, "%s/floe-view", self);
    snprintf(b, sizeof b, "%s/../viewer/floe-view", self);
    cand[1] = a, cand[2] = b;
    for (int i = 0; i < 3; i++)
        if (cand[i] && access(cand[i], X_OK) == 0) {
            snprintf(path, sizeof path, "%s", cand[i]);
            argv[0] = path;
            execv(path, argv);
            fprintf(stderr, "floe view: cannot start %s: %s\n", path, strerror(errno));
            return 1;
        }
    (void)argc;
    fprintf(stderr, "floe view: the viewer is not built: this Floe was configured without GLFW 3, libepoxy or\n"
                    "libpng (apt-get install libglfw3-dev libepoxy-dev libpng-dev, then meson setup --reconfigure\n"
                    "BUILD_DIR); floe run, bench and surface work without it\n");
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("floe %s (module ABI %d.%d)\n", FLOE_VERSION, FLOE_ABI_MAJOR, FLOE_ABI_MINOR);
        return 0;
    }
    if (!strcmp(argv[1], "modules"))
        return cmd_modules(argc - 2, argv + 2);
    if (!strcmp(argv[1], "devices"))
        return cmd_devices(argc - 2, argv + 2);
    if (!strcmp(argv[1], "run") || !strcmp(argv[1], "bench")) {
        /* started by mpirun -np N (N > 1): one slab of the domain per process (docs/mpi.md) */
        const char *np = getenv("OMPI_COMM_WORLD_SIZE");
        if (!np)
            np = getenv("PMI_SIZE");
        if (np && atoi(np) > 1) {
            char err[512];
            if (floe_mpi_begin(&argc, &argv, err, sizeof err) < 0) {
                fprintf(stderr, "floe: started by mpirun with %s processes, but %s\n", np, err);
                return 1;
            }
            int rc = cmd_run(argc - 2, argv + 2, argv[1][0] == 'b');
            /* an interrupt or a time limit stops every rank at the same frame; any
             * other failure is one rank's, which the others would wait for forever */
            floe_mpi_end(rc == 0 || rc == 124 || rc >= 128 ? 0 : rc);
            return rc;
        }
    }
    if (!strcmp(argv[1], "run"))
        return cmd_run(argc - 2, argv + 2, 0);
    if (!strcmp(argv[1], "surface"))
        return cmd_surface(argc - 2, argv + 2);
    if (!strcmp(argv[1], "bench"))
        return cmd_run(argc - 2, argv + 2, 1);
    if (!strcmp(argv[1], "compare"))
        return floe_cmd_compare(argc - 2, argv + 2);
    if (!strcmp(argv[1], "validate"))
        return floe_cmd_validate(argc - 2, argv + 2);
    if (!strcmp(argv[1], "view"))
        return cmd_view(argc - 1, argv + 1);
    static const char *const commands[] = {"run", "bench", "surface", "modules", "devices", "compare", "validate",
                                           "view", "help"};
    const char *near = floe_nearest_name(argv[1], commands, 9);
    fprintf(stderr, "floe: unknown command '%s'%s%s%s\n%s", argv[1], near ? " (did you mean '" : "", near ? near : "",
            near ? "'?)" : "", usage);
    return 2;
}
