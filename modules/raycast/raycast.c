/* Floe module "raycast": a surfacer that renders a named density grid
 * (flip.rho by default) to PNG frames (Guay 2013: the splatted density is
 * ray cast directly). 3D: ray marching to the iso surface with a fixed,
 * orbiting or keyframed camera; 2D: an image of the density field, or a
 * shaded height field (shallow water). Frames go to <folder>/<name>.NNNNN.png
 * at `fps` images per simulated second; when the simulation is closed and
 * `ffmpeg` is on PATH, they are assembled into <folder>/<name>.mp4.
 *
 * The folder is relative to the scene's output root (--out, else ./out) and
 * free of ".."; the core resolves it (api->out_dir: no symbolic link
 * followed) and every file is made with openat/renameat in that folder. */
#define _GNU_SOURCE /* posix_spawn_file_actions_addfchdir_np (glibc 2.29) */
#include "raycast.h"

#include <floe/module_desc.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static const floe_api *api;

enum { RP_GRID, RP_ISO, RP_SOLID, RP_GROUND, RP_MODE, RP_SCALE, RP_WIDTH, RP_HEIGHT, RP_EYE, RP_TARGET, RP_FOV,
       RP_ORBIT, RP_PATH, RP_LIGHT, RP_STEP, RP_FPS, RP_FOLDER, RP_NAME, RP_VIDEO };

/* one output sequence per (folder, name) */
typedef struct rc_seq {
    char folder[1024], name[128];
    int dir;                   /* the folder (api->out_dir) */
    double next_t, fps;
    int count;
    int video;
} rc_seq;

typedef struct rc_state {
    floe_ctx *ctx;
    rc_seq *seq;
    int nseq, cap;
    uint8_t *rgb;
    size_t rgb_cap;
} rc_state;

static int rc_init(floe_ctx *ctx, void **state)
{
    rc_state *s = calloc(1, sizeof *s);
    if (!s)
        return FLOE_ERR_NOMEM;
    s->ctx = ctx;
    *state = s;
    return FLOE_OK;
}

/* ffmpeg on PATH? (searched by hand: no shell is involved anywhere) */
static int have_ffmpeg(void)
{
    const char *path = getenv("PATH");
    if (!path)
        return 0;
    char buf[4096];
    while (*path) {
        const char *c = strchr(path, ':');
        size_t l = c ? (size_t)(c - path) : strlen(path);
        if (l > 0 && l < sizeof buf - 8) {
            snprintf(buf, sizeof buf, "%.*s/ffmpeg", (int)l, path);
            if (access(buf, X_OK) == 0)
                return 1;
        }
        path += l + (c ? 1 : 0);
    }
    return 0;
}

/* ffmpeg runs in the sequence's folder (fchdir to its descriptor) on
 * names without '/'; a symbolic link in place of the video is refused. */
static void make_video(rc_state *s, const rc_seq *q)
{
    char pattern[300], out[300], rate[32];
    snprintf(pattern, sizeof pattern, "%s.%%05d.png", q->name);
    snprintf(out, sizeof out, "%s.mp4", q->name);
    snprintf(rate, sizeof rate, "%g", q->fps);
    struct stat st;
    if (fstatat(q->dir, out, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode)) {
        api->log(s->ctx, FLOE_LOG_WARN, "raycast: %s/%s is not a plain file: no video made", q->folder, out);
        return;
    }
    char *argv[] = {"ffmpeg", "-y", "-loglevel", "error", "-framerate", rate, "-i", pattern, "-vf",
                    "pad=ceil(iw/2)*2:ceil(ih/2)*2", "-pix_fmt", "yuv420p", out, NULL};
    pid_t pid;
    posix_spawn_file_actions_t fa;
    int rc = posix_spawn_file_actions_init(&fa);
    if (rc == 0)
        rc = posix_spawn_file_actions_addfchdir_np(&fa, q->dir);
    if (rc == 0)
        rc = posix_spawnp(&pid, "ffmpeg", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        api->log(s->ctx, FLOE_LOG_WARN, "raycast: cannot start ffmpeg: %s", strerror(rc));
        return;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        api->log(s->ctx, FLOE_LOG_INFO, "raycast: %d frames -> %s/%s", q->count, q->folder, out);
    else
        api->log(s->ctx, FLOE_LOG_WARN, "raycast: ffmpeg failed on %s/%s (frames kept)", q->folder, pattern);
}

static void rc_fini(void *state)
{
    rc_state *s = state;
    if (!s)
        return;
    int ff = -1;
    for (int i = 0; i < s->nseq; i++) {
        rc_seq *q = &s->seq[i];
        if (!q->video || q->count < 2)
            continue;
        if (ff < 0)
            ff = have_ffmpeg();
        if (ff)
            make_video(s, q);
        else
            api->log(s->ctx, FLOE_LOG_INFO, "raycast: ffmpeg not on PATH; %d frames left as %s/%s.*.png", q->count,
                     q->folder, q->name);
    }
    for (int i = 0; i < s->nseq; i++)
        close(s->seq[i].dir);
    free(s->seq);
    free(s->rgb);
    free(s);
}

/* relative, no "..", no empty or odd names */
static int folder_ok(const char *f)
{
    if (!f || !f[0] || f[0] == '/' || strlen(f) >= 1000)
        return 0;
    const char *c = f;
    while (*c) {
        const char *e = strchr(c, '/');
        size_t l = e ? (size_t)(e - c) : strlen(c);
        if (l == 2 && c[0] == '.' && c[1] == '.')
            return 0;
        c += l + (e ? 1 : 0);
    }
    for (c = f; *c; c++)
        if (*c == '\\' || (unsigned char)*c < 32)
            return 0;
    return 1;
}

static int name_ok(const char *n)
{
    if (!n || !n[0] || strlen(n) >= 100)
        return 0;
    for (const char *c = n; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' ||
              *c == '-' || *c == '.'))
            return 0;
    return n[0] != '.';
}

static int get_field(floe_ctx *ctx, const char *name, rc_field *f, int dim)
{
    memset(f, 0, sizeof *f);
    if (!name || !name[0])
        return 0;
    floe_grid g = api->grid_find(ctx, name);
    floe_grid_info gi;
    if (!g.id || api->grid_info(ctx, g, &gi) != FLOE_OK)
        return -1;
    if (gi.type != FLOE_F32)
        return -2;
    f->data = gi.data;
    memcpy(f->n, gi.n, sizeof f->n);
    memcpy(f->origin, gi.origin, sizeof f->origin);
    f->h = gi.cell;
    f->inv_h = 1.0f / gi.cell;
    f->dim = dim;
    for (int k = 0; k < dim; k++)
        if (f->n[k] < 2)
            return -3;
    return 0;
}

/* camera keyframes "t ex ey ez tx ty tz; ..." */
static int camera_path(const char *path, double t, float eye[3], float target[3])
{
    if (!path || !path[0])
        return 0;
    float prev[7] = {0}, cur[7];
    int have = 0;
    const char *c = path;
    while (*c) {
        int n = 0;
        while (*c && *c != ';' && n < 7) {
            char *e;
            double v = strtod(c, &e);
            if (e == c) {
                c++;
                continue;
            }
            cur[n++] = (float)v;
            c = e;
        }
        while (*c && *c != ';')
            c++;
        if (*c)
            c++;
        if (n == 0)
            continue;
        if (n != 7)
            return -1;
        if (!have && t <= cur[0]) {
            memcpy(eye, cur + 1, 3 * sizeof(float));
            memcpy(target, cur + 4, 3 * sizeof(float));
            return 1;
        }
        if (have && t <= cur[0]) {
            float u = cur[0] > prev[0] ? (float)((t - prev[0]) / (cur[0] - prev[0])) : 1.0f;
            for (int k = 0; k < 3; k++) {
                eye[k] = prev[1 + k] + u * (cur[1 + k] - prev[1 + k]);
                target[k] = prev[4 + k] + u * (cur[4 + k] - prev[4 + k]);
            }
            return 1;
        }
        memcpy(prev, cur, sizeof prev);
        have = 1;
    }
    if (have) {
        memcpy(eye, prev + 1, 3 * sizeof(float));
        memcpy(target, prev + 4, 3 * sizeof(float));
        return 1;
    }
    return 0;
}

static int st_render(const floe_stage_call *call)
{
    floe_ctx *ctx = call->ctx;
    rc_state *s = call->state;
    const floe_value *P = call->param;
    const floe_sim_info *si = api->sim(ctx);
    if (!s)
        return api->fail(ctx, FLOE_ERR, "module state missing");
    const char *folder = P[RP_FOLDER].s, *name = P[RP_NAME].s;
    if (!folder_ok(folder))
        return api->fail(ctx, FLOE_ERR_ARG, "folder '%s' must be a relative path without '..'", folder ? folder : "");
    if (!name_ok(name))
        return api->fail(ctx, FLOE_ERR_ARG, "name '%s' must be letters, digits, '_', '-' or '.'", name ? name : "");

    /* the sequence of this (folder, name) */
    rc_seq *q = NULL;
    for (int i = 0; i < s->nseq; i++)
        if (!strcmp(s->seq[i].folder, folder) && !strcmp(s->seq[i].name, name))
            q = &s->seq[i];
    if (!q) {
        if (s->nseq == s->cap) {
            int nc = s->cap ? 2 * s->cap : 4;
            rc_seq *ns = realloc(s->seq, (size_t)nc * sizeof *ns);
            if (!ns)
                return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory");
            s->seq = ns;
            s->cap = nc;
        }
        int dir = api->out_dir(ctx, folder);
        if (dir < 0)
            return FLOE_ERR_IO; /* the message is set */
        q = &s->seq[s->nseq++];
        memset(q, 0, sizeof *q);
        snprintf(q->folder, sizeof q->folder, "%s", folder);
        snprintf(q->name, sizeof q->name, "%s", name);
        q->dir = dir;
        q->next_t = si->time;
    }
    q->fps = P[RP_FPS].f;
    q->video = P[RP_VIDEO].b;
    if (si->time + 1e-9 < q->next_t)
        return FLOE_OK; /* not yet time for the next image */
    q->next_t += 1.0 / q->fps;
    if (q->next_t <= si->time) /* fell behind (large steps): no burst of frames */
        q->next_t = si->time + 1.0 / q->fps;

    rc_view v;
    memset(&v, 0, sizeof v);
    const int dim = si->dim;
    int rc = get_field(ctx, P[RP_GRID].s, &v.dens, dim);
    if (rc != 0 || !v.dens.data)
        return api->fail(ctx, FLOE_ERR_ARG, "no F32 grid '%s' to render (run the stage that makes it first, e.g. flip.grid)",
                         P[RP_GRID].s);
    if (get_field(ctx, P[RP_SOLID].s, &v.solid, dim) != 0)
        memset(&v.solid, 0, sizeof v.solid); /* optional */
    if (get_field(ctx, P[RP_GROUND].s, &v.ground, dim) != 0)
        memset(&v.ground, 0, sizeof v.ground);
    const char *mode = P[RP_MODE].s;
    if (!strcmp(mode, "auto"))
        v.mode = dim == 3 ? RC_SURFACE : RC_IMAGE;
    else if (!strcmp(mode, "surface"))
        v.mode = RC_SURFACE;
    else if (!strcmp(mode, "image"))
        v.mode = RC_IMAGE;
    else
        v.mode = RC_HEIGHT;
    if (v.mode == RC_SURFACE && dim != 3)
        return api->fail(ctx, FLOE_ERR_ARG, "mode 'surface' needs a 3D simulation (2D: 'image' or 'height')");
    if (v.mode != RC_SURFACE && dim != 2)
        return api->fail(ctx, FLOE_ERR_ARG, "mode '%s' is for 2D simulations", mode);
    for (int k = 0; k < 3; k++) {
        v.lo[k] = si->domain_min[k];
        v.hi[k] = si->domain_max[k];
    }
    v.iso = (float)P[RP_ISO].f;
    v.scale = (float)P[RP_SCALE].f;
    v.step = (float)P[RP_STEP].f;
    v.fov_deg = (float)P[RP_FOV].f;
    for (int k = 0; k < 3; k++) {
        v.eye[k] = (float)P[RP_EYE].v[k];
        v.target[k] = (float)P[RP_TARGET].v[k];
        v.light[k] = (float)P[RP_LIGHT].v[k];
    }
    float ll = sqrtf(v.light[0] * v.light[0] + v.light[1] * v.light[1] + v.light[2] * v.light[2]);
    if (!(ll > 0.0f))
        return api->fail(ctx, FLOE_ERR_ARG, "light must not be zero");
    for (int k = 0; k < 3; k++)
        v.light[k] /= ll;
    if (camera_path(P[RP_PATH].s, si->time, v.eye, v.target) < 0)
        return api->fail(ctx, FLOE_ERR_ARG, "camera path: every key needs 7 numbers \"t ex ey ez tx ty tz; ...\"");
    if (v.mode == RC_SURFACE) {
        int same = v.eye[0] == v.target[0] && v.eye[1] == v.target[1] && v.eye[2] == v.target[2];
        if (same) { /* default camera: in front of the domain, a little above */
            float c[3], L = 0.0f;
            for (int k = 0; k < 3; k++) {
                c[k] = 0.5f * (v.lo[k] + v.hi[k]);
                L = fmaxf(L, v.hi[k] - v.lo[k]);
            }
            memcpy(v.target, c, sizeof c);
            v.target[1] = v.lo[1] + 0.3f * (v.hi[1] - v.lo[1]);
            v.eye[0] = c[0] + 0.35f * L;
            v.eye[1] = v.lo[1] + 0.9f * L;
            v.eye[2] = c[2] + 1.5f * L;
        }
        const double orbit = P[RP_ORBIT].f;
        if (orbit != 0.0) { /* rotate the eye about the vertical through the target */
            float a = (float)(orbit * si->time), dx = v.eye[0] - v.target[0], dz = v.eye[2] - v.target[2];
            v.eye[0] = v.target[0] + cosf(a) * dx + sinf(a) * dz;
            v.eye[2] = v.target[2] - sinf(a) * dx + cosf(a) * dz;
        }
    }
    v.width = (int)P[RP_WIDTH].i;
    v.height = (int)P[RP_HEIGHT].i;
    if (v.height == 0)
        v.height = v.mode == RC_SURFACE
                       ? (v.width * 9) / 16
                       : (int)lrintf((float)v.width * (v.hi[1] - v.lo[1]) / (v.hi[0] - v.lo[0]));
    if (v.height < 1)
        v.height = 1;
    const size_t need = (size_t)v.width * (size_t)v.height * 3;
    if (need > s->rgb_cap) {
        uint8_t *nb = realloc(s->rgb, need);
        if (!nb)
            return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory (%dx%d image)", v.width, v.height);
        s->rgb = nb;
        s->rgb_cap = need;
    }
    rc_render(&v, s->rgb);
    char file[300], err[1600];
    snprintf(file, sizeof file, "%s.%05d.png", q->name, q->count);
    if (rc_png_write(q->dir, file, s->rgb, v.width, v.height, err, sizeof err) != 0)
        return api->fail(ctx, FLOE_ERR_IO, "%s/%s", q->folder, err);
    q->count++;
    return FLOE_OK;
}

/* short names for the kit's descriptor macros (<floe/module_desc.h>) */
#define PF FLOE_PARAM_F
#define PI_(n, d, lo, hi, doc_) FLOE_PARAM_I(n, d, lo, hi, "", doc_)
#define PV FLOE_PARAM_V
#define PS FLOE_PARAM_S
#define PB FLOE_PARAM_B

static const floe_param_desc render_params[] = {
    [RP_GRID] = PS("grid", "flip.rho", NULL, "F32 density grid to render"),
    [RP_ISO] = PF("iso", 500, -1e9, 1e9, "grid units", "surface level (kg/m^3 for flip.rho: about half the rest density)"),
    [RP_SOLID] = PS("solid", "flip.phi", NULL, "signed distance grid drawn as solid where < 0 (\"\" = none; absent = none)"),
    [RP_GROUND] = PS("ground", "", NULL, "height mode: ground height grid in m (e.g. flip.ground)"),
    [RP_MODE] = PS("mode", "auto", "auto|surface|image|height",
                   "surface: 3D ray cast; image: 2D density picture; height: 2D shaded height field; auto: by dimension"),
    [RP_SCALE] = PF("scale", 1e-4, 0, 1e9, "m per grid unit", "height mode: water height = scale * density"),
    [RP_WIDTH] = PI_("width", 640, 16, 8192, "image width in pixels"),
    [RP_HEIGHT] = PI_("height", 0, 0, 8192, "image height in pixels; 0 = 9/16 of the width (3D) or the domain's aspect (2D)"),
    [RP_EYE] = PV("eye", 0, 0, 0, "m", "camera position (eye = target: a default view of the domain)"),
    [RP_TARGET] = PV("target", 0, 0, 0, "m", "point the camera looks at"),
    [RP_FOV] = PF("fov", 40, 1, 170, "deg", "vertical field of view"),
    [RP_ORBIT] = PF("orbit", 0, -100, 100, "rad/s", "turn the eye about the vertical through the target"),
    [RP_PATH] = PS("path", "", NULL, "scripted camera \"t ex ey ez tx ty tz; ...\" (s, m), linear in between"),
    [RP_LIGHT] = PV("light", 0.4, 1.0, 0.3, "", "direction towards the light"),
    [RP_STEP] = PF("step", 0.5, 0.05, 4, "cells", "ray march step"),
    [RP_FPS] = PF("fps", 30, 1e-3, 1e6, "1/s", "images per simulated second"),
    [RP_FOLDER] = PS("folder", "raycast", NULL, "output folder, relative to the output root (--out, else ./out), no '..'"),
    [RP_NAME] = PS("name", "frame", NULL, "file base name: <folder>/<name>.NNNNN.png, <name>.mp4"),
    [RP_VIDEO] = PB("video", 1, "assemble <name>.mp4 with ffmpeg (if on PATH) when the simulation is closed"),
    {0},
};

static const floe_stage_desc stages[] = {
    { FLOE_SIZED(floe_stage_desc), .serial = 1, .name = "render",
      .doc = "ray-cast a density grid to PNG frames (3D surface, 2D density image or height field); mp4 via ffmpeg",
      .run = st_render, .params = render_params },
    {0},
};

FLOE_MODULE_DESC(raycast, .version = "1.0.0",
                 .summary = "Ray-cast surfacer: renders a density grid (flip.rho) to PNG frames through libpng; mp4 "
                            "through ffmpeg",
                 .stages = stages, .init = rc_init, .fini = rc_fini)
