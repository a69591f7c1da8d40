/* floe compare SCENE --vary KEY=A,B,... [--vary ...] [--out DIR]: the
 * variants of one scene (every combination of the values, each read by the
 * scene through floe.param or a stage parameter), each run from the scene's
 * own set-up into DIR/<variant>/, then one report in DIR (docs/compare.md):
 * report.html with PNG plots, summary.csv, frames.csv, stages.csv and the
 * probe tables, written by scripts/floe_report.py from the run records. */
#include "report.h"

#include <errno.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_VARY 4
#define MAX_VALUES 16
#define MAX_VARIANTS 64
#define MAX_SETS 64

static const char help_compare[] =
    "usage: floe compare SCENE.lua --vary KEY=A,B[,...] [--vary ...] [options]\n"
    "run the variants of a scene (every combination of the values; the scene reads KEY with\n"
    "floe.param, or KEY is STAGE.PARAM) from the same initial state, each into DIR/<variant>/,\n"
    "then write one report in DIR: report.html (PNG plots with python3-matplotlib),\n"
    "summary.csv, frames.csv, stages.csv and the probe tables (docs/compare.md)\n"
    "\n"
    "options:\n"
    "  --out DIR       report folder (default out/compare); must be new or empty unless --force\n"
    "  --set K=V       a parameter for every variant\n"
    "  --frames N      output frames of every sim:run (quick looks)\n"
    "  --threads N     worker threads of every run\n"
    "  --force         replace an earlier report in DIR\n"
    "\n"
    "example: floe compare scenes/dam_break_2d.lua --vary solver=wcsph,iisph,dfsph --out out/cmp\n";

int report_mkdirs(const char *path)
{
    char p[4096];
    snprintf(p, sizeof p, "%s", path);
    for (char *c = p + 1; *c; c++)
        if (*c == '/') {
            *c = '\0';
            if (mkdir(p, 0777) != 0 && errno != EEXIST)
                return -1;
            *c = '/';
        }
    return mkdir(p, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

static void rm_tree(const char *p)
{
    struct stat st;
    if (lstat(p, &st) != 0)
        return;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(p);
        for (struct dirent *e; d && (e = readdir(d));) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char sub[4096];
            snprintf(sub, sizeof sub, "%s/%s", p, e->d_name);
            rm_tree(sub);
        }
        if (d)
            closedir(d);
        rmdir(p);
    } else {
        unlink(p);
    }
}

int report_dir_ready(const char *cmd, const char *dir, int force)
{
    DIR *d = opendir(dir);
    if (d) {
        int empty = 1, report = 0;
        for (struct dirent *e; (e = readdir(d));) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            empty = 0;
            report |= !strcmp(e->d_name, "variants.csv") || !strcmp(e->d_name, "cases.csv");
        }
        closedir(d);
        if (!empty && !force) {
            fprintf(stderr, "floe %s: %s is not empty (%s); give a new folder or --force\n", cmd, dir,
                    report ? "an earlier report" : "other files");
            return -1;
        }
        if (!empty && !report) {
            fprintf(stderr, "floe %s: %s holds files that are not a report; refused even with --force\n", cmd, dir);
            return -1;
        }
        if (!empty)
            rm_tree(dir); /* an earlier report, replaced */
    }
    if (report_mkdirs(dir) != 0) {
        fprintf(stderr, "floe %s: cannot make %s: %s\n", cmd, dir, strerror(errno));
        return -1;
    }
    return 0;
}

/* argv[0] run with the rest; its exit status, -1 when it cannot start */
static int spawn(char *const argv[], int quiet)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        if (quiet) {
            FILE *n = freopen("/dev/null", "w", stderr);
            (void)n;
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char *report_script(void)
{
    static char path[4096];
    const char *env = getenv("FLOE_REPORT_SCRIPT");
    const char *dirs[] = {FLOE_SOURCE_SCRIPT_DIR, FLOE_INSTALL_SCRIPT_DIR};
    if (env && access(env, R_OK) == 0)
        return env;
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/floe_report.py", dirs[i]);
        if (access(path, R_OK) == 0)
            return path;
    }
    return NULL;
}

int report_write(const char *cmd, const char *mode, const char *dir)
{
    const char *script = report_script();
    if (!script) {
        fprintf(stderr, "floe %s: scripts/floe_report.py not found (set FLOE_REPORT_SCRIPT); the runs are in %s\n",
                cmd, dir);
        return -1;
    }
    /* a python3 with PyYAML, one with matplotlib too when there is one (a
     * python3 of a version manager may lack the system's packages) */
    const char *cands[] = {getenv("FLOE_PYTHON"), "python3", "/usr/bin/python3"};
    const char *with_yaml = NULL, *with_both = NULL;
    for (int i = 0; i < 3 && !with_both; i++) {
        if (!cands[i] || !cands[i][0])
            continue;
        char *both[] = {(char *)cands[i], "-c", "import yaml, matplotlib", NULL};
        char *yaml[] = {(char *)cands[i], "-c", "import yaml", NULL};
        if (spawn(both, 1) == 0)
            with_both = cands[i];
        else if (!with_yaml && spawn(yaml, 1) == 0)
            with_yaml = cands[i];
    }
    const char *py = with_both ? with_both : with_yaml;
    if (!py) {
        fprintf(stderr, "floe %s: the report needs python3 with PyYAML (python3-yaml; scripts/bootstrap.sh "
                        "installs it); the runs are in %s\n", cmd, dir);
        return -1;
    }
    if (!with_both)
        fprintf(stderr, "floe %s: no matplotlib (python3-matplotlib): the report has no plots\n", cmd);
    char *argv[] = {(char *)py, (char *)script, (char *)mode, (char *)dir, NULL};
    int rc = spawn(argv, 0);
    if (rc != 0) {
        fprintf(stderr, "floe %s: %s %s failed (exit %d)\n", cmd, py, script, rc);
        return -1;
    }
    return 0;
}

int report_run_scene(const char *scene, const char *out_dir, const char *const *sets, int nsets, int threads,
                     int frames, int force, floe_run_summary *sum, char *err, size_t errlen)
{
    floe_scene_opts o;
    memset(&o, 0, sizeof o);
    o.path = scene;
    o.frames = frames;
    o.out_dir = out_dir;
    o.threads = threads;
    o.progress = 0;
    o.write_frames = 1;
    o.sets = sets;
    o.nsets = nsets;
    o.summary = sum;
    o.force = force;
    memset(sum, 0, sizeof *sum);
    return floe_scene_run(&o, err, errlen);
}

/* a value as part of a folder name: letters, digits, '.', '-'; others '-' */
static void name_part(char *dst, size_t len, const char *v)
{
    size_t k = 0;
    for (; *v && k + 1 < len; v++)
        dst[k++] = (char)((*v >= 'a' && *v <= 'z') || (*v >= 'A' && *v <= 'Z') || (*v >= '0' && *v <= '9') ||
                                  *v == '.' || *v == '-'
                              ? *v
                              : '-');
    dst[k] = '\0';
}

typedef struct vary {
    char key[128];
    int n;
    char val[MAX_VALUES][128];
} vary;

static int parse_vary(const char *arg, vary *v)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || (size_t)(eq - arg) >= sizeof v->key || !eq[1])
        return -1;
    memcpy(v->key, arg, (size_t)(eq - arg));
    v->key[eq - arg] = '\0';
    v->n = 0;
    for (const char *p = eq + 1; *p;) {
        const char *c = strchr(p, ',');
        size_t l = c ? (size_t)(c - p) : strlen(p);
        if (l == 0 || l >= sizeof v->val[0] || v->n == MAX_VALUES)
            return -1;
        memcpy(v->val[v->n], p, l);
        v->val[v->n][l] = '\0';
        v->n++;
        p += l + (c ? 1 : 0);
        if (c && !*p)
            return -1;
    }
    return v->n > 0 ? 0 : -1;
}

int floe_cmd_compare(int argc, char **argv)
{
    const char *scene = NULL, *out = "out/compare";
    const char *sets[MAX_SETS];
    int nsets = 0, threads = 0, frames = -1, force = 0, nvary = 0;
    vary vr[MAX_VARY];
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(help_compare, stdout);
            return 0;
        }
        if (!strcmp(a, "--force")) {
            force = 1;
            continue;
        }
        if ((!strcmp(a, "--vary") || !strcmp(a, "--out") || !strcmp(a, "--set") || !strcmp(a, "--threads") ||
             !strcmp(a, "--frames")) && i + 1 >= argc) {
            fprintf(stderr, "floe compare: %s needs a value\n", a);
            return 2;
        }
        if (!strcmp(a, "--vary")) {
            if (nvary == MAX_VARY || parse_vary(argv[++i], &vr[nvary]) != 0) {
                fprintf(stderr, "floe compare: --vary '%s': expected KEY=A,B,... (at most %d --vary, %d values)\n",
                        argv[i], MAX_VARY, MAX_VALUES);
                return 2;
            }
            nvary++;
        } else if (!strcmp(a, "--out")) {
            out = argv[++i];
        } else if (!strcmp(a, "--set")) {
            if (nsets == MAX_SETS - MAX_VARY || !strchr(argv[i + 1], '=')) {
                fprintf(stderr, "floe compare: --set '%s': expected K=V\n", argv[i + 1]);
                return 2;
            }
            sets[nsets++] = argv[++i];
        } else if (!strcmp(a, "--threads") || !strcmp(a, "--frames")) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 0 || v > 100000000) {
                fprintf(stderr, "floe compare: %s '%s': expected a whole number >= 0\n", a, argv[i]);
                return 2;
            }
            if (a[2] == 't')
                threads = (int)v;
            else
                frames = (int)v;
        } else if (a[0] == '-') {
            fprintf(stderr, "floe compare: unknown option '%s' (floe compare --help)\n", a);
            return 2;
        } else if (!scene) {
            scene = a;
        } else {
            fprintf(stderr, "floe compare: one scene only ('%s' and '%s')\n", scene, a);
            return 2;
        }
    }
    if (!scene || nvary == 0) {
        fputs(help_compare, stderr);
        return 2;
    }
    if (access(scene, R_OK) != 0) {
        fprintf(stderr, "floe compare: cannot read %s: %s\n", scene, strerror(errno));
        return 1;
    }
    int nvar = 1;
    for (int k = 0; k < nvary; k++)
        nvar *= vr[k].n;
    if (nvar > MAX_VARIANTS) {
        fprintf(stderr, "floe compare: %d variants, at most %d\n", nvar, MAX_VARIANTS);
        return 2;
    }
    if (report_dir_ready("compare", out, force) != 0)
        return 1;
    char scene_abs[4096];
    if (!realpath(scene, scene_abs))
        snprintf(scene_abs, sizeof scene_abs, "%s", scene);
    char path[4096];
    snprintf(path, sizeof path, "%s/variants.csv", out);
    FILE *vf = fopen(path, "w");
    if (!vf) {
        fprintf(stderr, "floe compare: cannot write %s: %s\n", path, strerror(errno));
        return 1;
    }
    fprintf(vf, "variant,folder,params,scene,status\n");
    int failed = 0;
    for (int v = 0; v < nvar; v++) {
        char name[512] = "", params[1024] = "", kv[MAX_VARY][300];
        int rest = v;
        for (int k = 0; k < nvary; k++) {
            const char *val = vr[k].val[rest % vr[k].n];
            rest /= vr[k].n;
            char part[130];
            name_part(part, sizeof part, val);
            snprintf(name + strlen(name), sizeof name - strlen(name), "%s%s", k ? "_" : "", part);
            snprintf(params + strlen(params), sizeof params - strlen(params), "%s%.127s=%.127s", k ? " " : "", vr[k].key, val);
            snprintf(kv[k], sizeof kv[k], "%.127s=%.127s", vr[k].key, val);
            sets[nsets + k] = kv[k];
        }
        char dir[4096], err[4096];
        snprintf(dir, sizeof dir, "%s/%s", out, name);
        fprintf(stderr, "floe compare: %s (%d of %d) into %s\n", params, v + 1, nvar, dir);
        floe_run_summary sum;
        int rc = report_run_scene(scene, dir, sets, nsets + nvary, threads, frames, force, &sum, err, sizeof err);
        if (rc != FLOE_OK) {
            fprintf(stderr, "floe compare: %s failed: %s\n", params, err);
            failed++;
        } else {
            fprintf(stderr, "floe compare: %s: %llu steps, %.3g s simulated in %.3g s\n", params,
                    (unsigned long long)sum.steps, sum.sim_time, sum.wall_s);
        }
        fprintf(vf, "%s,%s,%s,%s,%s\n", name, name, params, scene_abs, rc == FLOE_OK ? "finished" : "failed");
    }
    if (fclose(vf) != 0) {
        fprintf(stderr, "floe compare: cannot write %s\n", path);
        return 1;
    }
    if (report_write("compare", "compare", out) != 0)
        return 1;
    fprintf(stderr, "floe compare: report in %s/report.html\n", out);
    return failed ? 1 : 0;
}
