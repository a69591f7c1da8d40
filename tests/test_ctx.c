/* Per-context state: two contexts (and two Lua states) in one process keep
 * their own log sink, log level and thread count. */
#include <criterion/criterion.h>

#include <floe/floe.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* ---- a log sink that keeps what it was given ---------------------------- */

typedef struct sink {
    int n;
    int level[16];
    char msg[16][256];
} sink;

static void sink_fn(int level, const char *msg, void *user)
{
    sink *s = user;
    if (s->n < 16) {
        s->level[s->n] = level;
        snprintf(s->msg[s->n], sizeof s->msg[s->n], "%s", msg);
    }
    s->n++;
}

static int sink_has(const sink *s, const char *text)
{
    for (int i = 0; i < s->n && i < 16; i++)
        if (strstr(s->msg[i], text))
            return 1;
    return 0;
}

static floe_ctx *make_ctx(floe_log_fn log, void *user, int level, int threads)
{
    floe_sim_def def = floe_sim_default_def();
    def.spacing = 0.1f;
    def.threads = threads;
    def.log = log;
    def.log_user = user;
    def.log_level = level;
    char err[512];
    floe_ctx *ctx = floe_ctx_create(&def, err, sizeof err);
    cr_assert_not_null(ctx, "%s", err);
    return ctx;
}

Test(ctx, log_goes_to_its_own_context_at_its_own_level)
{
    sink a = {0}, b = {0};
    floe_ctx *ca = make_ctx(sink_fn, &a, FLOE_LOG_INFO, 1);
    floe_ctx *cb = make_ctx(sink_fn, &b, FLOE_LOG_WARN, 1);
    const floe_api *api = floe_core_api(); /* what modules log through */
    api->log(ca, FLOE_LOG_DEBUG, "a debug");
    api->log(ca, FLOE_LOG_INFO, "a info %d", 1);
    api->log(cb, FLOE_LOG_INFO, "b info");
    api->log(cb, FLOE_LOG_ERROR, "b error %s", "x");
    api->log(ca, FLOE_LOG_WARN, "a warn");
    cr_assert_eq(a.n, 2, "a got %d messages", a.n);
    cr_expect_str_eq(a.msg[0], "a info 1");
    cr_expect_eq(a.level[0], FLOE_LOG_INFO);
    cr_expect_str_eq(a.msg[1], "a warn");
    cr_expect_eq(a.level[1], FLOE_LOG_WARN);
    cr_assert_eq(b.n, 1, "b got %d messages", b.n);
    cr_expect_str_eq(b.msg[0], "b error x");
    cr_expect_eq(b.level[0], FLOE_LOG_ERROR);

    /* levels and sinks change per context */
    floe_ctx_set_log_level(cb, FLOE_LOG_DEBUG);
    api->log(cb, FLOE_LOG_DEBUG, "b debug");
    api->log(ca, FLOE_LOG_DEBUG, "a debug again");
    cr_expect_eq(b.n, 2);
    cr_expect(sink_has(&b, "b debug"));
    cr_expect_eq(a.n, 2, "a's level is still info");
    sink c = {0};
    floe_ctx_set_log(ca, sink_fn, &c);
    api->log(ca, FLOE_LOG_ERROR, "a to c");
    cr_expect_eq(a.n, 2);
    cr_expect_eq(c.n, 1);
    cr_expect(sink_has(&c, "a to c"));
    cr_expect(!sink_has(&b, "a to c"));
    floe_ctx_destroy(ca);
    floe_ctx_destroy(cb);
}

Test(ctx, core_messages_of_creation_reach_the_def_sink)
{
    /* "auto" logs which backend it chose (a device or the cpu) at info */
    sink a = {0}, b = {0};
    floe_sim_def def = floe_sim_default_def();
    def.spacing = 0.1f;
    def.backend = "auto";
    def.log = sink_fn;
    def.log_user = &a;
    char err[512];
    floe_ctx *ca = floe_ctx_create(&def, err, sizeof err);
    cr_assert_not_null(ca, "%s", err);
    def.log_user = &b;
    def.log_level = FLOE_LOG_WARN;
    floe_ctx *cb = floe_ctx_create(&def, err, sizeof err);
    cr_assert_not_null(cb, "%s", err);
    cr_expect_eq(a.n, 1, "a got %d messages", a.n);
    cr_expect(sink_has(&a, "backend"), "a: %s", a.msg[0]);
    cr_expect_eq(a.level[0], FLOE_LOG_INFO);
    cr_expect_eq(b.n, 0, "b (warnings only) got %d messages", b.n);
    floe_ctx_destroy(ca);
    floe_ctx_destroy(cb);
}

/* ---- thread counts ------------------------------------------------------ */

typedef struct seen_threads {
    int max_threads; /* omp_get_max_threads() in the stage */
    int team;        /* threads of a parallel region in the stage */
} seen_threads;

static int record_threads(const floe_stage_call *call)
{
    seen_threads *s = call->user;
#ifdef _OPENMP
    s->max_threads = omp_get_max_threads();
    int team = 0;
#pragma omp parallel
    {
#pragma omp single
        team = omp_get_num_threads();
    }
    s->team = team;
#endif
    return FLOE_OK;
}

Test(ctx, thread_count_belongs_to_the_context)
{
#ifndef _OPENMP
    cr_skip_test("built without OpenMP");
#else
    omp_set_dynamic(0);
    int outside = omp_get_max_threads();
    seen_threads sa = {0}, sb = {0};
    floe_ctx *ca = make_ctx(NULL, NULL, FLOE_LOG_INFO, 1);
    floe_ctx *cb = make_ctx(NULL, NULL, FLOE_LOG_INFO, 3);
    cr_assert_eq(floe_ctx_info(ca)->threads, 1, "creating b changed a");
    cr_assert_eq(omp_get_max_threads(), outside, "creating a context changed the caller's threads");
    cr_assert_eq(floe_pipeline_add_fn(ca, "record", record_threads, &sa), FLOE_OK);
    cr_assert_eq(floe_pipeline_add_fn(cb, "record", record_threads, &sb), FLOE_OK);
    for (int round = 0; round < 2; round++) {
        cr_assert_eq(floe_step(ca, 1e-3), FLOE_OK, "%s", floe_ctx_error(ca));
        cr_assert_eq(floe_step(cb, 1e-3), FLOE_OK, "%s", floe_ctx_error(cb));
        cr_expect_eq(sa.max_threads, 1, "round %d: a ran with %d", round, sa.max_threads);
        cr_expect_eq(sa.team, 1);
        cr_expect_eq(sb.max_threads, 3, "round %d: b ran with %d", round, sb.max_threads);
        cr_expect_eq(sb.team, 3);
        cr_expect_eq(omp_get_max_threads(), outside, "a step left its count behind");
    }
    /* floe_run too, and a change of one context's count leaves the other */
    floe_ctx_set_threads(cb, 2);
    cr_expect_eq(floe_ctx_info(ca)->threads, 1);
    floe_run_def r = floe_run_default_def();
    r.frames = 1;
    r.dt = 1e-2;
    r.progress = 0;
    sa.max_threads = sb.max_threads = 0;
    cr_assert_eq(floe_run(ca, &r, NULL), FLOE_OK, "%s", floe_ctx_error(ca));
    cr_assert_eq(floe_run(cb, &r, NULL), FLOE_OK, "%s", floe_ctx_error(cb));
    cr_expect_eq(sa.max_threads, 1);
    cr_expect_eq(sb.max_threads, 2);
    cr_expect_eq(sb.team, 2);
    cr_expect_eq(omp_get_max_threads(), outside);
    floe_ctx_destroy(ca);
    floe_ctx_destroy(cb);
#endif
}

/* ---- two Lua states ----------------------------------------------------- */

typedef struct scene_job {
    char dir[128], path[160];
    floe_run_summary sum;
    sink log;
    int rc;
    char err[2048];
} scene_job;

static void job_init(scene_job *j, const char *text)
{
    memset(j, 0, sizeof *j);
    snprintf(j->dir, sizeof j->dir, "/tmp/floe_test_ctx.XXXXXX");
    cr_assert_not_null(mkdtemp(j->dir));
    snprintf(j->path, sizeof j->path, "%s/scene.lua", j->dir);
    FILE *f = fopen(j->path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

static void *job_run(void *arg)
{
    scene_job *j = arg;
    floe_scene_opts o;
    memset(&o, 0, sizeof o);
    o.path = j->path;
    o.frames = -1;
    o.progress = 0;
    o.threads = 1;
    o.summary = &j->sum;
    o.log = sink_fn;
    o.log_user = &j->log;
    j->rc = floe_scene_run(&o, j->err, sizeof j->err);
    return NULL;
}

static void job_done(scene_job *j)
{
    unlink(j->path);
    rmdir(j->dir);
}

#define SCENE_HEAD                                                                                  \
    "local floe = require 'floe'\n"                                                                 \
    "local sim = floe.sim{ dim = 2, spacing = 0.1, domain = { min = {-1, -1}, max = {1, 1} } }\n" \
    "sim:fluid_box{ min = {0, 0}, max = {0.3, 0.3} }\n"

static const char scene_a[] = SCENE_HEAD
    "sim:pipeline{ 'neighbours', 'gravity', 'integrate' }\n"
    "sim:run{ frames = 2, fps = 50, dt = 0.005 }\n"
    "floe.log('scene a done')\n";
static const char scene_b[] = SCENE_HEAD
    "sim:pipeline{ 'gravity', 'integrate' }\n"
    "sim:run{ frames = 1, fps = 50, dt = 0.01 }\n"
    "floe.log('scene b done')\n";

/* What each scene must leave in its own summary and log sink. */
typedef struct expected {
    int frames, steps, nstages;
    const char *stage[3];
    const char *line;
} expected;

static const expected want_a = {2, 8, 3, {"neighbours", "gravity", "integrate"}, "[scene] scene a done"};
static const expected want_b = {1, 2, 2, {"gravity", "integrate"}, "[scene] scene b done"};

static void expect_job(const scene_job *j, const expected *e)
{
    cr_assert_eq(j->rc, FLOE_OK, "%s", j->err);
    cr_expect_eq(j->sum.frames, e->frames);
    cr_expect_eq(j->sum.steps, (uint64_t)e->steps);
    cr_assert_eq(j->sum.nstages, e->nstages);
    for (int i = 0; i < e->nstages; i++)
        cr_expect_str_eq(j->sum.stage_name[i], e->stage[i]);
    cr_expect_eq(j->log.n, 1, "%d lines logged", j->log.n);
    cr_expect_str_eq(j->log.msg[0], e->line);
}

/* Scenes a and b one after the other (b must not rewrite a's summary) or
 * at once on two threads. */
static void run_two(int at_once)
{
    scene_job *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    cr_assert(a && b);
    job_init(a, scene_a);
    job_init(b, scene_b);
    if (at_once) {
        pthread_t ta, tb;
        cr_assert_eq(pthread_create(&ta, NULL, job_run, a), 0);
        cr_assert_eq(pthread_create(&tb, NULL, job_run, b), 0);
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
    } else {
        job_run(a);
        job_run(b);
    }
    expect_job(a, &want_a);
    expect_job(b, &want_b);
    job_done(a);
    job_done(b);
    free(a);
    free(b);
}

Test(ctx, summaries_of_two_scenes_stay_their_own) { run_two(0); }

Test(ctx, two_scenes_run_at_once) { run_two(1); }
