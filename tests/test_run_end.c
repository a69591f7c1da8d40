/* Runs that end badly say so (docs/reliability.md): an on_frame error, a
 * callback that stops the run, SIGTERM, Ctrl-C during the set-up and in an
 * endless Lua loop, the wall-time limit, the command line's numbers, I/O
 * errors with their reason, and the run record appended per frame (valid
 * YAML at any kill point). */
#include "scene_fixture.h"

#include "record.h"

#include <fcntl.h>
#include <yaml.h>

TestSuite(run_end, .init = sc_setup, .fini = sc_teardown);

/* The file parses as one YAML document. */
static int yaml_valid(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    yaml_parser_t p;
    yaml_parser_initialize(&p);
    yaml_parser_set_input_file(&p, f);
    int ok = 1, done = 0;
    while (ok && !done) {
        yaml_event_t e;
        if (!yaml_parser_parse(&p, &e)) {
            ok = 0;
            break;
        }
        done = e.type == YAML_STREAM_END_EVENT;
        yaml_event_delete(&e);
    }
    yaml_parser_delete(&p);
    fclose(f);
    return ok;
}

static int count(const char *s, const char *what)
{
    int n = 0;
    for (const char *c = s; (c = strstr(c, what)); c += strlen(what))
        n++;
    return n;
}

/* 8 particles falling, a C host without an output (paths as given). */
static floe_ctx *tiny_ctx(void)
{
    char err[512];
    floe_sim_def d = floe_sim_default_def();
    d.spacing = 0.1f;
    floe_ctx *ctx = floe_ctx_create(&d, err, sizeof err);
    cr_assert_not_null(ctx, "%s", err);
    float lo[3] = {0, 0, 0}, hi[3] = {0.2f, 0.2f, 0.2f};
    floe_fill_box(ctx, floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000), lo, hi, NULL);
    cr_assert_eq(floe_pipeline_add(ctx, "integrate", NULL, 0), FLOE_OK);
    return ctx;
}

/* ---- on_frame -------------------------------------------------------------- */

Test(run_end, an_error_in_on_frame_fails_the_run_and_keeps_its_traceback)
{
    floe_scene_opts o = sc_opts();
    int rc = sc_run(&o, SC_HEAD SC_SIM SC_BOX
                    "local function inner(f) if f == 2 then error('boom at frame ' .. f) end end\n"
                    "sim:on_frame(function(s, st) inner(st.frame) end)\n"
                    "sim:run{ frames = 5, dt = 0.01 }\n");
    cr_assert_neq(rc, FLOE_OK);
    cr_assert_neq(rc, FLOE_ERR_INTERRUPT);
    sc_expect_err("scene.lua:5: boom at frame 2");
    sc_expect_err("inner");
    char *rec = sc_slurp("%s/run.yaml", sc_out);
    cr_expect(strstr(rec, "status: failed") != NULL, "%s", rec);
    cr_expect(strstr(rec, "boom at frame 2") != NULL, "%s", rec);
    cr_expect(strstr(rec, "inner") != NULL, "the callback's traceback is lost:\n%s", rec);
    cr_expect_eq(count(rec, "- {frame:"), 2, "%s", rec);
    free(rec);
    /* the program exits 1 */
    cr_assert_eq(chdir(sc_tmp), 0);
    const char *args[] = {"run", "scene.lua", "--out", "cli", "--quiet", NULL};
    cr_expect_eq(sc_cli(args), 1);
}

Test(run_end, on_frame_returning_false_is_stopped_not_finished)
{
    floe_scene_opts o = sc_opts();
    int rc = sc_run(&o, SC_HEAD SC_SIM SC_BOX "sim:on_frame(function(s, st) return st.frame < 3 end)\n"
                                              "sim:run{ frames = 10, dt = 0.01 }\n");
    cr_assert_eq(rc, FLOE_OK, "%s", sc_err);
    char *rec = sc_slurp("%s/run.yaml", sc_out);
    cr_expect(strstr(rec, "status: stopped") != NULL, "%s", rec);
    cr_expect_eq(count(rec, "- {frame:"), 3, "%s", rec);
    free(rec);
}

/* ---- signals and the time limit ----------------------------------------------- */

#define LONG_RUN SC_HEAD SC_SIM SC_BOX "sim:run{ frames = 100000, fps = 1000, dt = 0.001 }\n"

static pid_t start_long_run(const char *extra)
{
    FILE *f = fopen(sc_scene, "w");
    fputs(LONG_RUN, f);
    fclose(f);
    const char *args[] = {"run", "scene.lua", "--out", "o", "--quiet", extra, NULL};
    return sc_spawn(args);
}

Test(run_end, sigterm_finishes_the_frame_and_records_interrupted, .timeout = FLOE_TIMEOUT(60))
{
    pid_t pid = start_long_run(NULL);
    char rec[400];
    snprintf(rec, sizeof rec, "%s/o/run.yaml", sc_tmp);
    cr_assert(sc_wait_for(rec, "- {frame: 3,", 30), "the run did not start");
    kill(pid, SIGTERM);
    cr_expect_eq(sc_wait(pid), 143);
    char *r = sc_slurp("%s", rec);
    cr_expect(strstr(r, "status: interrupted") != NULL, "%s", r);
    cr_expect(yaml_valid(rec));
    free(r);
    char *log = sc_slurp("%s/log", sc_tmp);
    cr_expect(strstr(log, "interrupted after frame") != NULL, "%s", log);
    free(log);
}

Test(run_end, ctrl_c_in_an_endless_lua_loop_is_honoured, .timeout = FLOE_TIMEOUT(60))
{
    FILE *f = fopen(sc_scene, "w");
    fputs(SC_HEAD "local n = 0; floe.log('looping')\nwhile true do n = n + 1 end\n", f);
    fclose(f);
    const char *args[] = {"run", "scene.lua", "--out", "o", NULL};
    pid_t pid = sc_spawn(args);
    char logp[600];
    snprintf(logp, sizeof logp, "%s/log", sc_tmp);
    /* the loop has begun (not a fixed wait: a slow machine, or valgrind,
     * may still be starting after half a second) */
    cr_expect(sc_wait_for(logp, "looping", 50), "the scene did not start its loop");
    kill(pid, SIGINT);
    cr_expect_eq(sc_wait(pid), 130);
    char *log = sc_slurp("%s/log", sc_tmp);
    cr_expect(strstr(log, "scene.lua:3: interrupted") != NULL, "%s", log);
    free(log);
}

/* Asked for before floe_run began (Ctrl-C during a scene's set-up): the run
 * writes frame 0 and stops. */
Test(run_end, a_stop_asked_for_before_the_run_is_kept)
{
    floe_ctx *ctx = tiny_ctx();
    floe_run_def r = floe_run_default_def();
    r.frames = 5;
    r.dt = 0.01;
    r.progress = 0;
    r.out_dir = sc_out;
    floe_request_stop();
    cr_assert_eq(floe_run(ctx, &r, NULL), FLOE_ERR_INTERRUPT);
    cr_expect(sc_exists("%s/fluid.0000.ply", sc_out) && !sc_exists("%s/fluid.0001.ply", sc_out));
    char *rec = sc_slurp("%s/run.yaml", sc_out);
    cr_expect(strstr(rec, "status: interrupted") != NULL, "%s", rec);
    free(rec);
    /* handled: the next run is not stopped */
    cr_assert_eq(floe_run(ctx, &r, NULL), FLOE_OK, "%s", floe_ctx_error(ctx));
    floe_ctx_destroy(ctx);
}

Test(run_end, the_wall_time_limit_stops_lua_loops_and_runs, .timeout = FLOE_TIMEOUT(60))
{
    FILE *f = fopen(sc_scene, "w");
    fputs(SC_HEAD "while true do end\n", f);
    fclose(f);
    const char *args[] = {"run", "scene.lua", "--out", "o", "--timeout", "0.3", NULL};
    cr_expect_eq(sc_cli(args), 124);
    char *log = sc_slurp("%s/log", sc_tmp);
    cr_expect(strstr(log, "wall-time limit") != NULL, "%s", log);
    free(log);
    floe_scene_opts o = sc_opts();
    o.timeout_s = 0.5;
    cr_assert_eq(sc_run(&o, LONG_RUN), FLOE_ERR_TIMEOUT, "%s", sc_err);
    char *rec = sc_slurp("%s/run.yaml", sc_out);
    cr_expect(strstr(rec, "status: timeout") != NULL, "%s", rec);
    free(rec);
    o.timeout_s = -1;
    cr_expect_eq(sc_run(&o, SC_HEAD), FLOE_ERR_ARG);
}

/* ---- the command line ----------------------------------------------------------- */

Test(run_end, numbers_on_the_command_line_are_parsed_strictly)
{
    FILE *f = fopen(sc_scene, "w");
    fputs(SC_HEAD, f);
    fclose(f);
    const char *opts[][2] = {{"--frames", "abc"}, {"--frames", "5x"}, {"--threads", "-2"}, {"--timeout", "soon"},
                             {"--frames", ""}, {"--threads", "99999999999999999999"}};
    for (size_t i = 0; i < sizeof opts / sizeof *opts; i++) {
        const char *args[] = {"run", "scene.lua", opts[i][0], opts[i][1], NULL};
        cr_expect_eq(sc_cli(args), 2, "%s %s", opts[i][0], opts[i][1]);
        char *log = sc_slurp("%s/log", sc_tmp), want[64];
        snprintf(want, sizeof want, "%s '%s'", opts[i][0], opts[i][1]);
        cr_expect(strstr(log, want) != NULL, "%s", log);
        free(log);
    }
}

Test(run_end, threads_are_clamped_with_a_message, .timeout = FLOE_TIMEOUT(60))
{
    FILE *f = fopen(sc_scene, "w");
    fputs(SC_HEAD SC_SIM SC_BOX "sim:run{ frames = 1, dt = 0.01 }\n", f);
    fclose(f);
    const char *args[] = {"run", "scene.lua", "--out", "o", "--quiet", "--threads", "100000", NULL};
    cr_assert_eq(sc_cli(args), 0);
    char *log = sc_slurp("%s/log", sc_tmp), want[128];
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    snprintf(want, sizeof want, "--threads 100000 is more than 4 x the %ld cores: using %ld", cores, 4 * cores);
    cr_expect(strstr(log, want) != NULL, "%s", log);
    free(log);
    char *rec = sc_slurp("%s/o/run.yaml", sc_tmp);
    snprintf(want, sizeof want, "threads: %ld", 4 * cores);
    cr_expect(strstr(rec, want) != NULL, "%s", rec);
    free(rec);
}

/* ---- I/O errors name the reason --------------------------------------------------- */

Test(run_end, io_errors_carry_the_reason)
{
    char file[400];
    snprintf(file, sizeof file, "%s/a-file", sc_tmp);
    FILE *f = fopen(file, "w");
    fclose(f);
    floe_scene_opts o = sc_opts();
    char below[500];
    snprintf(below, sizeof below, "%s/sub", file);
    o.out_dir = below;
    cr_assert_eq(sc_run(&o, SC_HEAD), FLOE_ERR_IO);
    sc_expect_err("the output folder");
    sc_expect_err(strerror(ENOTDIR));
    /* a full disk */
    int fd = open("/dev/full", O_WRONLY);
    cr_assert(fd >= 0);
    floe_record r;
    memset(&r, 0, sizeof r);
    rec_frame fr;
    memset(&fr, 0, sizeof fr);
    fr.st.frame = 1;
    errno = 0;
    cr_expect_eq(rec_append_frame(fd, &r, &fr), -1);
    cr_expect_eq(errno, ENOSPC, "%s", strerror(errno));
    close(fd);
    /* a run folder that cannot be made: the message has the reason */
    o.out_dir = sc_out;
    cr_assert_eq(mkdir(sc_out, 0755), 0);
    char blocker[400];
    snprintf(blocker, sizeof blocker, "%s/blocked.ply", sc_out);
    f = fopen(blocker, "w");
    fclose(f);
    o.force = 1;
    o.out_dir = NULL;
    cr_assert_eq(chdir(sc_tmp), 0);
    int rc = sc_run(&o, SC_HEAD SC_SIM SC_BOX "sim:run{ frames = 1, dt = 0.01, out = 'out/blocked.ply/x' }\n");
    cr_assert_neq(rc, FLOE_OK);
    sc_expect_err(strerror(ENOTDIR));
}

/* ---- the run record ------------------------------------------------------------------ */

typedef struct rec_watch {
    char path[512];
    ino_t ino;
    int frames_seen, bad;
} rec_watch;

/* After each frame: run.yaml is valid YAML, holds this frame, and is the
 * same file (appended to, not rewritten and renamed). */
static int watch(floe_ctx *ctx, const floe_frame_stats *st, void *u)
{
    (void)ctx;
    rec_watch *w = u;
    struct stat s;
    if (stat(w->path, &s) != 0 || !yaml_valid(w->path)) {
        w->bad++;
        return 0;
    }
    if (st->frame == 1)
        w->ino = s.st_ino;
    else if (s.st_ino != w->ino)
        w->bad++;
    char *text = sc_slurp("%s", w->path);
    if (count(text, "- {frame:") != st->frame || !strstr(text, "status: running"))
        w->bad++;
    free(text);
    w->frames_seen++;
    return 0;
}

Test(run_end, the_record_is_appended_per_frame_and_valid_at_every_frame)
{
    floe_ctx *ctx = tiny_ctx();
    rec_watch w;
    memset(&w, 0, sizeof w);
    snprintf(w.path, sizeof w.path, "%s/run.yaml", sc_out);
    floe_run_def r = floe_run_default_def();
    r.frames = 40;
    r.dt = 0.01;
    r.progress = 0;
    r.out_dir = sc_out;
    r.on_frame = watch;
    r.user = &w;
    cr_assert_eq(floe_run(ctx, &r, NULL), FLOE_OK, "%s", floe_ctx_error(ctx));
    cr_expect_eq(w.frames_seen, 40);
    cr_expect_eq(w.bad, 0, "run.yaml rewritten or invalid during the run (%d times)", w.bad);
    char *rec = sc_slurp("%s", w.path);
    cr_expect(yaml_valid(w.path));
    cr_expect(strstr(rec, "status: finished") != NULL && !strstr(rec, "status: running"), "%s", rec);
    cr_expect_eq(count(rec, "- {frame:"), 40);
    free(rec);
    floe_ctx_destroy(ctx);
}

Test(run_end, the_record_is_valid_yaml_after_kill_9_at_any_moment, .timeout = FLOE_TIMEOUT(120))
{
    char rec[400];
    snprintf(rec, sizeof rec, "%s/o/run.yaml", sc_tmp);
    const double delays[] = {0.05, 0.13, 0.29, 0.41};
    for (int i = 0; i < 4; i++) {
        sc_rm_tree(rec); /* the file only; the folder is a previous run: --force */
        pid_t pid = start_long_run("--force");
        cr_assert(sc_wait_for(rec, "- {frame: 1,", 30), "the run did not start");
        sc_sleep(delays[i]);
        kill(pid, SIGKILL);
        cr_expect_eq(sc_wait(pid), 128 + SIGKILL);
        cr_expect(yaml_valid(rec), "run.yaml invalid after kill -9 at +%g s", delays[i]);
        char *r = sc_slurp("%s", rec);
        cr_expect(strstr(r, "status: running") != NULL, "%s", r);
        free(r);
    }
}
