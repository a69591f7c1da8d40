/* Helpers for tests that run scenes (floe_scene_run or the floe program) in
 * a fresh temp folder: sc_tmp/scene.lua, output root sc_tmp/out. */
#ifndef FLOE_TEST_SCENE_FIXTURE_H
#define FLOE_TEST_SCENE_FIXTURE_H

#include <criterion/criterion.h>
#include <floe/floe.h>

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char sc_tmp[256], sc_out[300], sc_scene[300], sc_err[8192];

static inline void sc_rm_tree(const char *p)
{
    struct stat st;
    if (lstat(p, &st) != 0)
        return;
    if (!S_ISDIR(st.st_mode)) {
        unlink(p);
        return;
    }
    DIR *d = opendir(p);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char sub[1024];
        int n = snprintf(sub, sizeof sub, "%s/%s", p, e->d_name);
        if (n > 0 && (size_t)n < sizeof sub)
            sc_rm_tree(sub);
    }
    if (d)
        closedir(d);
    rmdir(p);
}

static inline void sc_setup(void)
{
    setenv("FLOE_MODULE_PATH", FLOE_TEST_BUILD_ROOT "/modules", 1);
    snprintf(sc_tmp, sizeof sc_tmp, "/tmp/floe_test_scene.XXXXXX");
    cr_assert_not_null(mkdtemp(sc_tmp), "mkdtemp: %s", strerror(errno));
    snprintf(sc_out, sizeof sc_out, "%s/out", sc_tmp);
    snprintf(sc_scene, sizeof sc_scene, "%s/scene.lua", sc_tmp);
    sc_err[0] = '\0';
}

static inline void sc_teardown(void) { sc_rm_tree(sc_tmp); }

static inline int sc_exists(const char *fmt, ...)
{
    char p[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p, sizeof p, fmt, ap);
    va_end(ap);
    struct stat st;
    return lstat(p, &st) == 0;
}

/* Whole file into a malloc'd string ("" when missing). */
static char *sc_slurp(const char *fmt, ...)
{
    char p[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p, sizeof p, fmt, ap);
    va_end(ap);
    FILE *f = fopen(p, "rb");
    char *b = calloc(1, 1);
    if (!f)
        return b;
    size_t n = 0, cap = 1;
    for (int c; (c = fgetc(f)) != EOF;) {
        if (n + 1 >= cap) {
            cap = 2 * cap + 4096;
            b = realloc(b, cap);
        }
        b[n++] = (char)c;
    }
    b[n] = '\0';
    fclose(f);
    return b;
}

static inline void sc_write_scene(const char *fmt, va_list ap)
{
    char text[16384];
    vsnprintf(text, sizeof text, fmt, ap);
    FILE *f = fopen(sc_scene, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

static inline floe_scene_opts sc_opts(void)
{
    floe_scene_opts o;
    memset(&o, 0, sizeof o);
    o.frames = -1;
    o.progress = 0;
    o.write_frames = 1;
    o.out_dir = sc_out;
    return o;
}

/* Writes the scene (printf format) and runs it; the error text in sc_err. */
static inline int sc_run(floe_scene_opts *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sc_write_scene(fmt, ap);
    va_end(ap);
    o->path = sc_scene;
    sc_err[0] = '\0';
    return floe_scene_run(o, sc_err, sizeof sc_err);
}

#define SC_HEAD "local floe = require 'floe'\n"
#define SC_SIM "local sim = floe.sim{ dim = 3, spacing = 0.1, domain = { min = {-1, -1, -1}, max = {1, 1, 1} } }\n"
#define SC_BOX "sim:fluid_box{ min = {0, 0, 0}, max = {0.2, 0.2, 0.2} }\nsim:pipeline{ 'neighbours', 'gravity', 'integrate' }\n"

#define sc_expect_err(s) cr_expect(strstr(sc_err, (s)) != NULL, "error should contain \"%s\", got:\n%s", (s), sc_err)

/* ---- the floe program --------------------------------------------------- */

/* Starts build/core/floe with argv (NULL-terminated, without "floe") in
 * sc_tmp, stdout and stderr into sc_tmp/log. */
static inline pid_t sc_spawn(const char *const *args)
{
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        char log[512];
        snprintf(log, sizeof log, "%s/log", sc_tmp);
        if (!freopen(log, "w", stdout) || dup2(fileno(stdout), 2) < 0 || chdir(sc_tmp) != 0)
            _exit(99);
        const char *argv[32] = {FLOE_TEST_BUILD_ROOT "/core/floe"};
        int n = 1;
        for (; args[n - 1] && n < 31; n++)
            argv[n] = args[n - 1];
        argv[n] = NULL;
        execv(argv[0], (char *const *)argv);
        _exit(98);
    }
    return pid;
}

/* Exit status (128 + signal when killed). */
static inline int sc_wait(pid_t pid)
{
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static inline int sc_cli(const char *const *args) { return sc_wait(sc_spawn(args)); }

static inline void sc_sleep(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* Waits (up to `limit` s) until the file holds `text`; 1 if it did. */
static inline int sc_wait_for(const char *path, const char *text, double limit)
{
    for (double t = 0; t < limit; t += 0.02) {
        char *s = sc_slurp("%s", path);
        int found = strstr(s, text) != NULL;
        free(s);
        if (found)
            return 1;
        sc_sleep(0.02);
    }
    return 0;
}

#endif
