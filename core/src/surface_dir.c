/* `floe surface OUT_DIR`: the surface module's per-frame stage run over the
 * particle frames of a finished run (PLY in, meshes out beside them), the
 * way splashsurf is run after a simulation. The spacing, support and
 * dimension come from the run record; every NAME.NNNN.ply with positions,
 * no boundary volumes (V) and no normals (a mesh) is a fluid set's frame. */
#include "ctx.h"
#include "io.h"
#include "ply_read.h"
#include "progress.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_FRAMES 100000

typedef struct frame_set {
    char base[MAX_SETS][NAME_LEN];
    int nbase;
    unsigned char *has;      /* has[frame * MAX_SETS + base] */
    int last;
} frame_set;

static int record_number(const char *dir, const char *key, double *out)
{
    char path[2048], line[512];
    snprintf(path, sizeof path, "%s/run.yaml", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t kl = strlen(key);
    int found = 0;
    while (!found && fgets(line, sizeof line, f))
        if (!strncmp(line, key, kl) && line[kl] == ':')
            found = sscanf(line + kl + 1, "%lf", out) == 1;
    fclose(f);
    return found ? 0 : -1;
}

static int is_fluid_frame(const char *path)
{
    uint32_t n;
    float *v = NULL;
    if (ply_read_property(path, "x", &n, &v))
        return 0;
    free(v);
    int other = !ply_read_property(path, "V", &n, &v) || !ply_read_property(path, "nx", &n, &v);
    free(v);
    return !other;
}

static int scan(const char *dir, frame_set *fs, char *err, size_t errlen)
{
    DIR *d = opendir(dir);
    if (!d)
        return snprintf(err, errlen, "cannot open %s", dir), FLOE_ERR_IO;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        int frame = -1, p = 0;
        if (l < 10 || strcmp(e->d_name + l - 4, ".ply") != 0)
            continue;
        const char *dot = e->d_name + l - 4;
        const char *num = dot;
        while (num > e->d_name && num[-1] >= '0' && num[-1] <= '9')
            num--;
        if (dot - num < 4 || num == e->d_name || num[-1] != '.' || (size_t)(num - 1 - e->d_name) >= NAME_LEN)
            continue;
        frame = atoi(num);
        char path[2048], base[NAME_LEN];
        snprintf(base, sizeof base, "%.*s", (int)(num - 1 - e->d_name), e->d_name);
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (frame >= MAX_FRAMES || !is_fluid_frame(path))
            continue;
        for (p = 0; p < fs->nbase && strcmp(fs->base[p], base) != 0; p++)
            ;
        if (p == fs->nbase) {
            if (fs->nbase == MAX_SETS)
                continue;
            snprintf(fs->base[fs->nbase++], NAME_LEN, "%s", base);
        }
        fs->has[(size_t)frame * MAX_SETS + p] = 1;
        fs->last = frame > fs->last ? frame : fs->last;
    }
    closedir(d);
    if (!fs->nbase)
        return snprintf(err, errlen, "no particle frames (NAME.NNNN.ply) in %s", dir), FLOE_ERR_ARG;
    return FLOE_OK;
}

/* the set's particles from the frame file, with rest masses */
static int load_frame(floe_ctx *ctx, floe_set s, const char *path)
{
    uint32_t n = 0;
    float *x[3] = {NULL, NULL, NULL};
    static const char *names[3] = {"x", "y", "z"};
    int rc = FLOE_OK;
    for (int k = 0; k < 3 && !rc; k++)
        if (ply_read_property(path, names[k], &n, &x[k]))
            rc = ctx_fail(ctx, FLOE_ERR_IO, "cannot read %s from %s", names[k], path);
    if (!rc)
        rc = ctx_set_resize(ctx, s, n);
    if (!rc) {
        float *px = floe_attr(ctx, s, "x", FLOE_VEC3), *m = floe_attr(ctx, s, "m", FLOE_F32);
        float mass = ctx_set(ctx, s)->rest_density * ctx->info.spacing * ctx->info.spacing * ctx->info.spacing;
        for (uint32_t i = 0; i < n; i++) {
            for (int k = 0; k < 3; k++)
                px[3 * i + k] = x[k][i];
            m[i] = mass;
        }
    }
    for (int k = 0; k < 3; k++)
        free(x[k]);
    return rc;
}

static double stat_max(floe_ctx *ctx, const char *name)
{
    for (int i = 0; i < ctx->nstats; i++)
        if (!strcmp(ctx->stats[i].name, name))
            return ctx->stats[i].max;
    return 0;
}

static int surface_frames(floe_ctx *ctx, const char *dir, const frame_set *fs, const floe_set *sets, int show)
{
    progress prog;
    int total = 0, done = 0, rc = FLOE_OK;
    double peak = 0, tris = 0;
    struct timespec t0, t1 = {0, 0};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int f = 0; f <= fs->last; f++)
        for (int b = 0; b < fs->nbase; b++)
            total += b == 0 && memchr(&fs->has[(size_t)f * MAX_SETS], 1, (size_t)fs->nbase) != NULL;
    progress_start(&prog, total, show);
    for (int f = 0; f <= fs->last && !rc; f++) {
        if (!memchr(&fs->has[(size_t)f * MAX_SETS], 1, (size_t)fs->nbase))
            continue;
        for (int b = 0; b < fs->nbase && !rc; b++) {
            char path[2048];
            snprintf(path, sizeof path, "%s/%s.%04d.ply", dir, fs->base[b], f);
            rc = fs->has[(size_t)f * MAX_SETS + b] ? load_frame(ctx, sets[b], path) : ctx_set_resize(ctx, sets[b], 0);
        }
        ctx->nstats = 0;
        if (!rc)
            rc = floe_frame_stages(ctx, dir, f);
        peak = fmax(peak, stat_max(ctx, "surface_peak_mb"));
        tris = fmax(tris, stat_max(ctx, "surface_triangles"));
        clock_gettime(CLOCK_MONOTONIC, &t1);
        progress_update(&prog, ++done, 0, 0, (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec));
    }
    progress_end(&prog);
    double wall = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
    if (!rc && done)
        printf("floe surface: %d frames of %s in %.3f s (%.1f ms per frame, reading included), up to %.0f "
               "triangles, peak %.1f MB\n", done, dir, wall, 1e3 * wall / done, tris, peak);
    return rc;
}

int floe_surface_dir(const char *dir, const floe_surface_opts *o, char *err, size_t errlen)
{
    const char *method = o->method;
    double cell = o->cell;
    int show = o->show;
    double d, H, dim;
    if (record_number(dir, "spacing", &d) || record_number(dir, "support", &H) || record_number(dir, "dim", &dim))
        return snprintf(err, errlen, "%s/run.yaml: no spacing, support or dim (not a run's output folder?)", dir),
               FLOE_ERR_ARG;
    frame_set fs = {.last = -1};
    fs.has = calloc((size_t)MAX_FRAMES * MAX_SETS, 1);
    if (!fs.has)
        return snprintf(err, errlen, "out of memory"), FLOE_ERR_NOMEM;
    int rc = scan(dir, &fs, err, errlen);
    floe_ctx *ctx = NULL;
    if (!rc) {
        floe_sim_def def = floe_sim_default_def();
        def.dim = (int)dim;
        def.spacing = (float)d;
        def.support_factor = (float)(H / d);
        def.backend = o->backend;
        ctx = floe_ctx_create(&def, err, errlen);
        if (ctx && o->threads > 0)
            floe_ctx_set_threads(ctx, o->threads);
        rc = ctx ? FLOE_OK : FLOE_ERR_ARG;
    }
    floe_set sets[MAX_SETS];
    for (int b = 0; b < fs.nbase && !rc; b++)
        rc = floe_set_is_valid(ctx, sets[b] = floe_set_create(ctx, fs.base[b], FLOE_SET_FLUID, 1000)) ? FLOE_OK
                                                                                                      : FLOE_ERR;
    char stage[64];
    snprintf(stage, sizeof stage, "surface.%s", method && !strcmp(method, "mc") ? "mc" : "anisotropic");
    floe_param_kv kv[3] = {{"cell", FLOE_PARAM_FLOAT, {.f = cell > 0 ? cell : 0.5}},
                           {"format", FLOE_PARAM_STRING, {.s = o->format ? o->format : "both"}},
                           {"mesher", FLOE_PARAM_STRING, {.s = o->mesher ? o->mesher : "cubes"}}};
    if (!rc && !(rc = floe_module_load(ctx, "surface")))
        rc = floe_pipeline_add(ctx, stage, kv, 3);
    if (!rc) {
        floe_ctx_set_log_level(ctx, show ? FLOE_LOG_WARN : FLOE_LOG_INFO); /* the bar, not a line per frame */
        rc = surface_frames(ctx, dir, &fs, sets, show);
        floe_ctx_set_log_level(ctx, FLOE_LOG_INFO);
    }
    if (rc && ctx)
        snprintf(err, errlen, "%s", floe_ctx_error(ctx));
    floe_ctx_destroy(ctx);
    free(fs.has);
    return rc;
}
