/* floe view: the window (GLFW, OpenGL 4.3 core), its panes side by side
 * with one camera and one clock, live scenes and finished runs, screenshots
 * (--screenshot: no window shown, an offscreen framebuffer), movies through
 * ffmpeg and a frame-rate measurement (--bench). */
#include "app.h"

#include <errno.h>
#include <fcntl.h>
#include <floe/floe.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char glfw_msg[512];
static volatile sig_atomic_t stop_asked; /* Ctrl-C, SIGTERM: close as the window's button does */

static void on_stop(int sig)
{
    stop_asked = 1;
    signal(sig, SIG_DFL); /* a second one ends at once */
}

static void on_glfw_error(int code, const char *msg)
{
    (void)code;
    snprintf(glfw_msg, sizeof glfw_msg, "%s", msg);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---- panes ---------------------------------------------------------------- */

static int ends_with(const char *s, const char *e)
{
    size_t a = strlen(s), b = strlen(e);
    return a >= b && !strcmp(s + a - b, e);
}

static const char *base_name(const char *path, char *buf, size_t len)
{
    const char *b = strrchr(path, '/');
    snprintf(buf, len, "%s", b && b[1] ? b + 1 : path);
    char *dot = strrchr(buf, '.');
    if (dot && !strcmp(dot, ".lua"))
        *dot = 0;
    return buf;
}

static int load_index(vw_app *a, vw_pane *p, int k);

/* Runs are read first (a bad folder is refused before any window opens);
 * live scenes start once the window is there (start_live). */
static int open_panes(vw_app *a, char *err, size_t errlen)
{
    vw_opts *o = a->o;
    for (int i = 0; i < o->ninputs; i++) {
        vw_pane *p = &a->p[a->npanes];
        memset(p, 0, sizeof *p);
        p->index = -1;
        base_name(o->input[i], p->scene, sizeof p->scene);
        if (ends_with(o->input[i], ".lua")) {
            if (access(o->input[i], R_OK)) {
                snprintf(err, errlen, "%s: %s", o->input[i], strerror(errno));
                return -1;
            }
            p->live = 1;
            a->npanes++;
            continue;
        }
        if (vw_rundir_open(&p->dir, o->input[i], err, errlen))
            return -1;
        a->npanes++;
        /* its first frame now: a broken file is refused before a window opens */
        if (load_index(a, p, 0)) {
            snprintf(err, errlen, "%s: cannot read its frames (above)", o->input[i]);
            return -1;
        }
    }
    return 0;
}

static int start_live(vw_app *a, char *err, size_t errlen)
{
    vw_opts *o = a->o;
    int nlive = 0;
    for (int i = 0; i < a->npanes; i++)
        nlive += a->p[i].live;
    for (int i = 0; i < a->npanes; i++) {
        vw_pane *p = &a->p[i];
        if (!p->live)
            continue;
        if (o->out_dir && nlive > 1) { /* one folder each */
            char nm[256];
            base_name(o->input[i], nm, sizeof nm);
            snprintf(p->out_dir, sizeof p->out_dir, "%.3900s/%d_%.100s", o->out_dir, i + 1, nm);
        } else if (o->out_dir)
            snprintf(p->out_dir, sizeof p->out_dir, "%s", o->out_dir);
        vw_live_opts lo = {o->input[i], p->out_dir[0] ? p->out_dir : NULL, o->frames, o->threads, o->force,
                           o->quiet, o->sets, o->nsets};
        if (!(p->lv = vw_live_start(&lo))) {
            snprintf(err, errlen, "%s: cannot start the scene", o->input[i]);
            return -1;
        }
    }
    return 0;
}

static void close_panes(vw_app *a)
{
    for (int i = 0; i < a->npanes; i++) {
        vw_pane *p = &a->p[i];
        if (p->live && p->lv)
            vw_live_stop(p->lv);
        else
            vw_rundir_close(&p->dir);
        vw_frame_free(&p->frame);
        vw_gpu_free(&p->gpu);
    }
    a->npanes = 0;
}

/* panes side by side (2), in a grid (3, 4) */
static void layout(vw_app *a)
{
    int n = a->npanes, cols = n <= 2 ? n : 2, rows = n <= 2 ? 1 : 2;
    for (int i = 0; i < n; i++) {
        vw_pane *p = &a->p[i];
        int c = i % cols, r = i / cols;
        p->x = a->fb_w * c / cols;
        p->w = a->fb_w * (c + 1) / cols - p->x - (c + 1 < cols ? 2 : 0); /* a seam between panes */
        int top = a->fb_h * r / rows, bottom = a->fb_h * (r + 1) / rows;
        p->y = a->fb_h - bottom;
        p->h = bottom - top - (r + 1 < rows ? 2 : 0);
    }
}

double vw_app_end_time(vw_app *a)
{
    double end = 0;
    for (int i = 0; i < a->npanes; i++)
        if (!a->p[i].live && a->p[i].dir.nframes)
            end = fmax(end, a->p[i].dir.time[a->p[i].dir.nframes - 1]);
    return end;
}

/* playback: the last frame at or before time T */
static int index_at(const vw_rundir *d, double T)
{
    int k = 0;
    for (int j = 0; j < d->nframes; j++)
        if (d->time[j] <= T + 1e-9)
            k = j;
    return k;
}

static int load_index(vw_app *a, vw_pane *p, int k)
{
    if (k == p->index)
        return 0;
    char err[1024];
    vw_frame f;
    if (vw_rundir_load(&p->dir, k, &f, err, sizeof err)) {
        fprintf(stderr, "floe view: %s\n", err);
        p->index = k; /* not tried again every frame */
        return -1;
    }
    vw_frame_free(&p->frame);
    p->frame = f;
    p->index = k;
    p->dirty = 1;
    (void)a;
    return 0;
}

/* the colour range over every pane's fluid (one scale for the comparison) */
static void update_range(vw_app *a)
{
    if (a->o->fixed_range || !a->attr[0])
        return;
    float lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < a->npanes; i++) {
        float l, h;
        if (vw_frame_range(&a->p[i].frame, a->attr, &l, &h))
            lo = fminf(lo, l), hi = fmaxf(hi, h);
    }
    if (lo <= hi)
        a->lo = lo, a->hi = hi;
}

void vw_app_attr_changed(vw_app *a)
{
    for (int i = 0; i < a->npanes; i++)
        a->p[i].dirty = 1;
}

/* the colour attribute: --color, else speed, else the first there is */
static void pick_attr(vw_app *a)
{
    if (a->attr[0] || (a->o->color && !a->o->color[0]))
        return;
    const char *want = a->o->color ? a->o->color : "speed";
    const char *first = NULL;
    for (int i = 0; i < a->npanes; i++)
        for (int c = 0; c < a->p[i].frame.nclouds; c++) {
            const vw_cloud *cl = &a->p[i].frame.clouds[c];
            for (int k = 0; !cl->boundary && k < cl->nattr; k++) {
                if (!strcmp(cl->attr_name[k], want)) {
                    snprintf(a->attr, sizeof a->attr, "%s", want);
                    return;
                }
                if (!first)
                    first = cl->attr_name[k];
            }
        }
    if (first && !a->o->color)
        snprintf(a->attr, sizeof a->attr, "%s", first);
}

void vw_app_reframe(vw_app *a)
{
    float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    int any = 0, dim = 2;
    for (int i = 0; i < a->npanes; i++) {
        float l[3], h[3];
        if (!vw_frame_bounds(&a->p[i].frame, l, h))
            continue;
        any = 1;
        for (int k = 0; k < 3; k++)
            lo[k] = fminf(lo[k], l[k]), hi[k] = fmaxf(hi[k], h[k]);
        if (a->p[i].frame.dim == 3 || (a->p[i].frame.dim == 0 && h[2] > l[2]))
            dim = 3;
    }
    if (any) {
        int fw, fh;
        glfwGetFramebufferSize(a->win, &fw, &fh);
        int cols = a->npanes <= 2 ? a->npanes : 2, rows = a->npanes <= 2 ? 1 : 2;
        float aspect = fh > 0 && cols > 0 ? ((float)fw / (float)cols) / ((float)fh / (float)rows) : 16.0f / 9;
        vw_camera_frame(&a->cam, lo, hi, dim, aspect);
        a->framed = 1;
    }
}

void vw_app_restart(vw_app *a)
{
    for (int i = 0; i < a->npanes; i++)
        if (a->p[i].live) {
            vw_live_restart(a->p[i].lv);
            a->p[i].seen = 0;
        }
    a->T = a->T_clock = 0;
    for (int i = 0; i < a->o->nchanges; i++) /* --change: again in the new run */
        a->o->change_done[i] = 0;
}

/* ---- the clock ------------------------------------------------------------ */

typedef struct live_progress {
    long frames;
    double t, wall, derr;
    int done, rc;
} live_progress;

static live_progress progress_of(vw_pane *p)
{
    live_progress g;
    vw_live_progress(p->lv, &g.frames, &g.t, &g.wall, &g.derr, &g.done, &g.rc);
    return g;
}

/* --change F:K=V: made once every live scene has shown frame F, before any
 * goes on; returns the frame the live scenes must wait at (-1: none) */
static long scripted_changes(vw_app *a)
{
    long cap = -1;
    for (int c = 0; c < a->o->nchanges; c++) {
        if (a->o->change_done[c])
            continue;
        int all = 1;
        for (int i = 0; i < a->npanes; i++) {
            if (!a->p[i].live)
                continue;
            live_progress g = progress_of(&a->p[i]);
            if (g.frames == a->o->change_frame[c] && !g.done)
                vw_live_set(a->p[i].lv, a->o->change_key[c], a->o->change_value[c]);
            else if (g.frames < a->o->change_frame[c] && !g.done)
                all = 0;
        }
        if (all)
            a->o->change_done[c] = 1;
        else if (cap < 0 || a->o->change_frame[c] < cap)
            cap = a->o->change_frame[c];
    }
    return cap;
}

/* Live panes advance together: one may compute its next frame while its
 * simulated time is not ahead of the others' (and, unless as fast as they
 * compute, not ahead of the clock). Returns the time the panes show. */
static double gate_live(vw_app *a, double dt_wall, int *nlive)
{
    int nrunning = 0;
    double tmin = INFINITY, tmax = 0;
    *nlive = 0;
    for (int i = 0; i < a->npanes; i++) {
        vw_pane *p = &a->p[i];
        if (!p->live)
            continue;
        (*nlive)++;
        if (vw_live_take(p->lv, &p->frame, &p->seen))
            p->dirty = 1;
        live_progress g = progress_of(p);
        tmax = fmax(tmax, g.t);
        if (!g.done)
            nrunning++, tmin = fmin(tmin, g.t);
    }
    if (!*nlive)
        return a->T;
    long cap = scripted_changes(a);
    if (a->playing)
        a->T_clock += dt_wall * a->speed;
    for (int i = 0; i < a->npanes; i++) {
        vw_pane *p = &a->p[i];
        if (!p->live)
            continue;
        live_progress g = progress_of(p);
        if (g.done)
            continue;
        long upto = g.frames; /* the frames it may have shown */
        if (a->step || (a->playing && g.t <= tmin + 1e-9 && (a->as_fast || g.t <= a->T_clock)))
            upto = g.frames + 1;
        if (cap >= 0 && upto > cap)
            upto = cap;
        vw_live_allow(p->lv, upto);
    }
    double T = nrunning ? tmin : tmax;
    if (a->T_clock > T + 0.1) /* the computation is slower than the clock */
        a->T_clock = T;
    return T;
}

/* Finished runs alone: the clock, or the next frame of any run for a step. */
static void run_clock(vw_app *a, double dt_wall)
{
    if (a->step) {
        double next = INFINITY;
        for (int i = 0; i < a->npanes; i++) {
            const vw_rundir *d = &a->p[i].dir;
            for (int j = 0; j < d->nframes; j++)
                if (d->time[j] > a->T + 1e-9) {
                    next = fmin(next, d->time[j]);
                    break;
                }
        }
        if (isfinite(next))
            a->T = next;
    } else if (a->playing)
        a->T += dt_wall * a->speed;
    double end = vw_app_end_time(a);
    if (a->T >= end) {
        a->T = end;
        a->playing = 0;
    }
}

/* One tick of the window: live scenes let go or held, finished runs show
 * the frame at the shared time (the live scenes', else the clock's). */
static void advance(vw_app *a, double dt_wall)
{
    int nlive;
    double T = gate_live(a, dt_wall, &nlive);
    if (nlive)
        a->T = T;
    else
        run_clock(a, dt_wall);
    a->step = 0;
    for (int i = 0; i < a->npanes; i++)
        if (!a->p[i].live && a->p[i].dir.nframes)
            load_index(a, &a->p[i], index_at(&a->p[i].dir, a->T));
}

void vw_app_toggle_play(vw_app *a)
{
    a->playing = !a->playing;
    int nlive = 0;
    for (int i = 0; i < a->npanes; i++)
        nlive += a->p[i].live;
    if (a->playing && !nlive && a->T >= vw_app_end_time(a)) /* from the start again */
        a->T = a->T_clock = 0;
}

/* ---- drawing -------------------------------------------------------------- */

static int make_fbo(vw_app *a, int w, int h)
{
    if (a->fbo && a->fb_w == w && a->fb_h == h)
        return 0;
    if (a->fbo) {
        glDeleteFramebuffers(1, &a->fbo);
        glDeleteRenderbuffers(1, &a->color_rb);
        glDeleteRenderbuffers(1, &a->depth_rb);
    }
    a->fb_w = w, a->fb_h = h;
    glGenFramebuffers(1, &a->fbo);
    glBindFramebuffer(GL_FRAMEBUFFER, a->fbo);
    glGenRenderbuffers(1, &a->color_rb);
    glBindRenderbuffer(GL_RENDERBUFFER, a->color_rb);
    glRenderbufferStorage(GL_RENDERBUFFER, GL_RGBA8, w, h);
    glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_RENDERBUFFER, a->color_rb);
    glGenRenderbuffers(1, &a->depth_rb);
    glBindRenderbuffer(GL_RENDERBUFFER, a->depth_rb);
    glRenderbufferStorage(GL_RENDERBUFFER, GL_DEPTH_COMPONENT24, w, h);
    glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_DEPTH_ATTACHMENT, GL_RENDERBUFFER, a->depth_rb);
    int ok = glCheckFramebufferStatus(GL_FRAMEBUFFER) == GL_FRAMEBUFFER_COMPLETE;
    glBindFramebuffer(GL_FRAMEBUFFER, 0);
    return ok ? 0 : -1;
}

/* the panes and the interface into the offscreen framebuffer */
static void draw(vw_app *a, int with_panel)
{
    int fw, fh;
    glfwGetFramebufferSize(a->win, &fw, &fh);
    if (fw <= 0 || fh <= 0 || make_fbo(a, fw, fh))
        return;
    int any_dirty = 0;
    for (int i = 0; i < a->npanes; i++)
        any_dirty |= a->p[i].dirty;
    if (any_dirty) {
        pick_attr(a);
        update_range(a);
        if (!a->framed)
            vw_app_reframe(a);
    }
    for (int i = 0; i < a->npanes; i++)
        if (a->p[i].dirty) {
            vw_gpu_upload(&a->p[i].gpu, &a->p[i].frame, a->attr[0] ? a->attr : NULL);
            a->p[i].dirty = 0;
        }
    layout(a);
    glBindFramebuffer(GL_FRAMEBUFFER, a->fbo);
    glViewport(0, 0, fw, fh);
    glDisable(GL_SCISSOR_TEST);
    glClearColor(0.05f, 0.05f, 0.06f, 1); /* the seams */
    glClear(GL_COLOR_BUFFER_BIT);
    vw_draw_opts d = {a->attr[0] ? a->attr : NULL, a->lo, a->hi, a->walls, a->show_particles, a->show_meshes, 0};
    for (int i = 0; i < a->npanes; i++)
        vw_render_pane(&a->r, &a->p[i].gpu, &a->cam, a->p[i].x, a->p[i].y, a->p[i].w, a->p[i].h, &d, a->p[i].mvp);
    nk_glfw3_new_frame(&a->nkg);
    vw_ui(a, with_panel);
    nk_glfw3_render(&a->nkg, NK_ANTI_ALIASING_ON, 512 * 1024, 128 * 1024);
}

/* the offscreen picture, rows top first */
static unsigned char *read_pixels(vw_app *a)
{
    unsigned char *px = malloc((size_t)a->fb_w * (size_t)a->fb_h * 3);
    unsigned char *row = malloc((size_t)a->fb_w * 3);
    if (!px || !row) {
        free(px);
        free(row);
        return NULL;
    }
    glBindFramebuffer(GL_READ_FRAMEBUFFER, a->fbo);
    glPixelStorei(GL_PACK_ALIGNMENT, 1);
    glReadPixels(0, 0, a->fb_w, a->fb_h, GL_RGB, GL_UNSIGNED_BYTE, px);
    size_t stride = (size_t)a->fb_w * 3;
    for (int y = 0; y < a->fb_h / 2; y++) {
        memcpy(row, px + (size_t)y * stride, stride);
        memcpy(px + (size_t)y * stride, px + (size_t)(a->fb_h - 1 - y) * stride, stride);
        memcpy(px + (size_t)(a->fb_h - 1 - y) * stride, row, stride);
    }
    free(row);
    return px;
}

void vw_app_screenshot(vw_app *a, const char *path)
{
    unsigned char *px = read_pixels(a);
    char err[1024];
    if (!px)
        fprintf(stderr, "floe view: out of memory for the screenshot\n");
    else if (vw_write_image(path, px, a->fb_w, a->fb_h, err, sizeof err))
        fprintf(stderr, "floe view: %s\n", err);
    else if (!a->o->quiet)
        fprintf(stderr, "floe view: wrote %s (%dx%d)\n", path, a->fb_w, a->fb_h);
    free(px);
}

static void present(vw_app *a)
{
    int ww, wh;
    glfwGetFramebufferSize(a->win, &ww, &wh);
    glBindFramebuffer(GL_READ_FRAMEBUFFER, a->fbo);
    glBindFramebuffer(GL_DRAW_FRAMEBUFFER, 0);
    glBlitFramebuffer(0, 0, a->fb_w, a->fb_h, 0, 0, ww, wh, GL_COLOR_BUFFER_BIT, GL_NEAREST);
    glBindFramebuffer(GL_FRAMEBUFFER, 0);
    glfwSwapBuffers(a->win);
}

/* ---- movies --------------------------------------------------------------- */

static int have_program(const char *name)
{
    const char *path = getenv("PATH");
    if (!path)
        return 0;
    char dir[4096];
    while (*path) {
        size_t n = strcspn(path, ":");
        snprintf(dir, sizeof dir, "%.*s/%s", (int)n, path, name);
        if (n && access(dir, X_OK) == 0)
            return 1;
        path += n + (path[n] == ':');
    }
    return 0;
}

static int record_start(vw_app *a)
{
    int fd[2];
    if (pipe(fd))
        return -1;
    char size[32];
    snprintf(size, sizeof size, "%dx%d", a->fb_w, a->fb_h);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        dup2(fd[0], 0);
        close(fd[0]);
        close(fd[1]);
        execlp("ffmpeg", "ffmpeg", "-y", "-loglevel", "error", "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", size, "-r",
               "30", "-i", "-", "-pix_fmt", "yuv420p", "-vf", "pad=ceil(iw/2)*2:ceil(ih/2)*2", a->o->record,
               (char *)NULL);
        _exit(127);
    }
    close(fd[0]);
    a->rec = fdopen(fd[1], "wb");
    a->rec_pid = pid;
    return a->rec ? 0 : -1;
}

static void record_frame(vw_app *a)
{
    unsigned char *px = read_pixels(a);
    if (px && fwrite(px, 3, (size_t)a->fb_w * (size_t)a->fb_h, a->rec) != (size_t)a->fb_w * (size_t)a->fb_h) {
        fprintf(stderr, "floe view: ffmpeg stopped taking frames; recording ends\n");
        fclose(a->rec);
        a->rec = NULL;
    }
    free(px);
}

static void record_end(vw_app *a)
{
    if (a->rec)
        fclose(a->rec);
    a->rec = NULL;
    int st;
    if (a->rec_pid > 0 && waitpid(a->rec_pid, &st, 0) == a->rec_pid && !a->o->quiet)
        fprintf(stderr, "floe view: %s %s\n", a->o->record,
                WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "written" : "failed (ffmpeg's message above)");
    a->rec_pid = 0;
}

/* ---- input ---------------------------------------------------------------- */

static vw_app *app_of(GLFWwindow *w)
{
    return glfwGetWindowUserPointer(w);
}

static void on_scroll(GLFWwindow *w, double dx, double dy)
{
    vw_app *a = app_of(w);
    a->events = 1;
    nk_gflw3_scroll_callback(w, dx, dy);
    if (!nk_window_is_any_hovered(a->nk))
        a->cam.dist *= (float)pow(0.9, dy);
}

static void on_button(GLFWwindow *w, int button, int action, int mods)
{
    vw_app *a = app_of(w);
    a->events = 1;
    nk_glfw3_mouse_button_callback(w, button, action, mods);
    if (action == GLFW_PRESS && !nk_window_is_any_hovered(a->nk))
        a->drag = button == GLFW_MOUSE_BUTTON_LEFT ? 1 : 2;
    else if (action == GLFW_RELEASE)
        a->drag = 0;
}

static void on_cursor(GLFWwindow *w, double x, double y)
{
    vw_app *a = app_of(w);
    a->events = 1;
    double dx = x - a->mx, dy = y - a->my;
    a->mx = x, a->my = y;
    if (a->drag == 1) {
        a->cam.yaw -= 0.008f * (float)dx;
        a->cam.pitch = fmaxf(-1.5f, fminf(1.5f, a->cam.pitch + 0.008f * (float)dy));
    } else if (a->drag == 2) { /* pan in the view plane */
        float view[16], proj[16];
        vw_camera_matrices(&a->cam, 1, view, proj);
        float s = a->cam.dist * 0.0015f;
        for (int k = 0; k < 3; k++)
            a->cam.target[k] += s * (-(float)dx * view[4 * k] + (float)dy * view[4 * k + 1]);
    }
}

static void on_key(GLFWwindow *w, int key, int sc, int action, int mods)
{
    vw_app *a = app_of(w);
    a->events = 1;
    nk_glfw3_key_callback(w, key, sc, action, mods);
    if (action == GLFW_RELEASE || nk_item_is_any_active(a->nk))
        return;
    switch (key) {
    case GLFW_KEY_SPACE: vw_app_toggle_play(a); break;
    case GLFW_KEY_N:
    case GLFW_KEY_PERIOD: a->step = 1, a->playing = 0; break;
    case GLFW_KEY_R: vw_app_restart(a); break;
    case GLFW_KEY_F:
    case GLFW_KEY_HOME: vw_app_reframe(a); break;
    case GLFW_KEY_H: a->show_panel = !a->show_panel; break;
    case GLFW_KEY_S:
    case GLFW_KEY_F12: {
        char path[64];
        snprintf(path, sizeof path, "floe_view_%04d.png", a->shots++);
        vw_app_screenshot(a, path);
        break;
    }
    case GLFW_KEY_LEFT: a->cam.yaw += 0.05f; break;
    case GLFW_KEY_RIGHT: a->cam.yaw -= 0.05f; break;
    case GLFW_KEY_UP: a->cam.pitch = fminf(1.5f, a->cam.pitch + 0.05f); break;
    case GLFW_KEY_DOWN: a->cam.pitch = fmaxf(-1.5f, a->cam.pitch - 0.05f); break;
    case GLFW_KEY_EQUAL:
    case GLFW_KEY_KP_ADD: a->cam.dist *= 0.9f; break;
    case GLFW_KEY_MINUS:
    case GLFW_KEY_KP_SUBTRACT: a->cam.dist /= 0.9f; break;
    case GLFW_KEY_Q:
    case GLFW_KEY_ESCAPE: glfwSetWindowShouldClose(w, 1); break;
    default: break;
    }
}

static void on_char(GLFWwindow *w, unsigned int c)
{
    app_of(w)->events = 1;
    nk_glfw3_char_callback(w, c);
}

static void on_resize(GLFWwindow *w, int width, int height)
{
    (void)width, (void)height;
    app_of(w)->events = 1;
}

/* ---- the program ------------------------------------------------------------ */

static int all_live_done(vw_app *a, int *failed)
{
    int all = 1;
    *failed = 0;
    for (int i = 0; i < a->npanes; i++) {
        if (!a->p[i].live)
            continue;
        long frames;
        double t, wall, derr;
        int done, rc;
        vw_live_progress(a->p[i].lv, &frames, &t, &wall, &derr, &done, &rc);
        all &= done;
        *failed |= done && rc != 0;
    }
    return all;
}

static void print_camera(vw_app *a)
{
    printf("framebuffer %d %d\n", a->fb_w, a->fb_h);
    for (int i = 0; i < a->npanes; i++) {
        vw_pane *p = &a->p[i];
        printf("pane %d viewport %d %d %d %d mvp", i, p->x, p->y, p->w, p->h);
        for (int k = 0; k < 16; k++)
            printf(" %.9g", p->mvp[k]);
        printf("\n");
    }
    if (a->attr[0])
        printf("legend %.0f %.0f %.0f %.0f range %.9g %.9g attr %s\n", a->legend[0], a->legend[1], a->legend[2],
               a->legend[3], a->lo, a->hi, a->attr);
    fflush(stdout);
}

static int open_window(vw_app *a, int visible, char *err, size_t errlen)
{
    glfwSetErrorCallback(on_glfw_error);
    const char *dpy = getenv("DISPLAY"), *wl = getenv("WAYLAND_DISPLAY");
    if ((!dpy || !*dpy) && (!wl || !*wl)) {
        snprintf(err, errlen, "no display (DISPLAY is not set): floe view needs a desktop, or Xvfb "
                              "(xvfb-run -s '-screen 0 1920x1080x24' floe view ...)");
        return -1;
    }
    if (!glfwInit()) {
        snprintf(err, errlen, "cannot open the display: %s", glfw_msg);
        return -1;
    }
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 4);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
    glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
    glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
    glfwWindowHint(GLFW_VISIBLE, visible ? GLFW_TRUE : GLFW_FALSE);
    a->win = glfwCreateWindow(a->o->width, a->o->height, "floe view", NULL, NULL);
    if (!a->win) {
        snprintf(err, errlen, "no OpenGL 4.3 core context: %s", glfw_msg);
        glfwTerminate();
        return -1;
    }
    glfwMakeContextCurrent(a->win);
    glfwSwapInterval(a->o->bench_s > 0 ? 0 : 1);
    if (vw_render_init(&a->r, err, errlen)) {
        glfwDestroyWindow(a->win);
        glfwTerminate();
        return -1;
    }
    a->nk = nk_glfw3_init(&a->nkg, a->win, NK_GLFW3_DEFAULT);
    glfwSetWindowUserPointer(a->win, a); /* a starts with its nk_glfw */
    struct nk_font_atlas *atlas;
    nk_glfw3_font_stash_begin(&a->nkg, &atlas);
    struct nk_font *font = nk_font_atlas_add_default(atlas, 15, NULL);
    nk_glfw3_font_stash_end(&a->nkg);
    nk_style_set_font(a->nk, &font->handle);
    /* a ticked box in a colour that reads as ticked */
    a->nk->style.checkbox.cursor_normal = nk_style_item_color(nk_rgb(110, 180, 250));
    a->nk->style.checkbox.cursor_hover = nk_style_item_color(nk_rgb(140, 200, 255));
    glfwSetScrollCallback(a->win, on_scroll);
    glfwSetMouseButtonCallback(a->win, on_button);
    glfwSetCursorPosCallback(a->win, on_cursor);
    glfwSetKeyCallback(a->win, on_key);
    glfwSetCharCallback(a->win, on_char);
    glfwSetFramebufferSizeCallback(a->win, on_resize);
    return 0;
}

static void close_window(vw_app *a)
{
    if (a->fbo) {
        glDeleteFramebuffers(1, &a->fbo);
        glDeleteRenderbuffers(1, &a->color_rb);
        glDeleteRenderbuffers(1, &a->depth_rb);
    }
    vw_render_free(&a->r);
    nk_glfw3_shutdown(&a->nkg);
    glfwDestroyWindow(a->win);
    glfwTerminate();
}

/* --screenshot: the scenes run to their end (or the run folder's frame is
 * read), one picture, no window shown */
static int headless(vw_app *a)
{
    vw_opts *o = a->o;
    a->playing = 1;
    a->as_fast = 1;
    int failed = 0;
    for (;;) {
        advance(a, 0);
        if (all_live_done(a, &failed))
            break;
        if (stop_asked) { /* the scenes stop after their frame (status stopped); no picture */
            fprintf(stderr, "floe view: stopped before the scenes ended; no picture written\n");
            return 130;
        }
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    advance(a, 0); /* the last frames */
    for (int i = 0; i < a->npanes; i++) {
        vw_pane *p = &a->p[i];
        if (p->live || !p->dir.nframes)
            continue;
        int k = p->dir.nframes - 1;
        if (o->frame >= 0) {
            k = -1;
            for (int j = 0; j < p->dir.nframes; j++)
                if (p->dir.frame_num[j] == o->frame)
                    k = j;
            if (k < 0) {
                fprintf(stderr, "floe view: %s has no frame %d (frames %d to %d)\n", p->dir.path, o->frame,
                        p->dir.frame_num[0], p->dir.frame_num[p->dir.nframes - 1]);
                return 1;
            }
        }
        p->index = -1;
        load_index(a, p, k);
        a->T = fmax(a->T, p->dir.time[k]);
    }
    /* the live panes' and the runs' frames may differ in time: each shows its own */
    draw(a, o->panel);
    draw(a, o->panel); /* Nuklear lays windows out from the previous frame's sizes */
    glFinish();
    if (o->print_camera)
        print_camera(a);
    vw_app_screenshot(a, o->screenshot);
    if (failed)
        fprintf(stderr, "floe view: a scene failed (its message above); the picture shows its last frame\n");
    return failed ? 1 : 0;
}

/* --bench S: draw the frames over and over for S seconds, the camera
 * turning, and print the frames per second */
static int bench(vw_app *a)
{
    advance(a, 0);
    draw(a, 0);
    present(a);
    glFinish();
    uint64_t particles = 0;
    for (int i = 0; i < a->npanes; i++)
        for (int c = 0; c < a->p[i].frame.nclouds; c++)
            particles += a->p[i].frame.clouds[c].n;
    int n = 0;
    double t0 = now_s(), t;
    do {
        a->cam.yaw += 0.01f;
        draw(a, 1);
        present(a);
        glfwPollEvents();
        n++;
        t = now_s() - t0;
    } while (t < a->o->bench_s);
    glFinish();
    t = now_s() - t0;
    printf("floe view: %d frames in %.2f s: %.1f frames/s (%llu particles, %dx%d, %s)\n", n, t, n / t,
           (unsigned long long)particles, a->fb_w, a->fb_h, (const char *)glGetString(GL_RENDERER));
    return 0;
}

int vw_app_run(vw_opts *o)
{
    static vw_app app; /* large; one per process */
    vw_app *a = &app;
    memset(a, 0, sizeof *a);
    a->o = o;
    a->speed = 1;
    a->as_fast = 1;
    a->walls = o->walls;
    a->show_particles = !o->hide_particles;
    a->show_meshes = !o->hide_meshes;
    a->show_panel = 1;
    a->playing = 1;
    if (o->color)
        snprintf(a->attr, sizeof a->attr, "%s", o->color);
    if (o->fixed_range)
        a->lo = o->lo, a->hi = o->hi;
    if (o->record && !have_program("ffmpeg")) {
        fprintf(stderr, "floe view: --record needs ffmpeg, which is not installed (apt-get install ffmpeg)\n");
        return 2;
    }
    char err[2048];
    if (open_panes(a, err, sizeof err)) {
        fprintf(stderr, "floe view: %s\n", err);
        close_panes(a);
        return 1;
    }
    if (open_window(a, !o->screenshot, err, sizeof err)) {
        fprintf(stderr, "floe view: %s\n", err);
        close_panes(a);
        return VW_NO_DISPLAY;
    }
    if (start_live(a, err, sizeof err)) {
        fprintf(stderr, "floe view: %s\n", err);
        close_panes(a);
        close_window(a);
        return 1;
    }
    signal(SIGINT, on_stop);
    signal(SIGTERM, on_stop);
    int rc = 0;
    if (o->screenshot)
        rc = headless(a);
    else if (o->bench_s > 0)
        rc = bench(a);
    else {
        double t_prev = now_s(), t_drawn = 0;
        int recording = 0;
        a->events = 1;
        while (!glfwWindowShouldClose(a->win) && !stop_asked) {
            glfwWaitEventsTimeout(1.0 / 60);
            double t = now_s();
            advance(a, a->rec ? 1.0 / 30 : t - t_prev); /* a movie: 1/30 s of its clock a frame */
            t_prev = t;
            int dirty = a->events;
            for (int i = 0; i < a->npanes; i++)
                dirty |= a->p[i].dirty;
            /* nothing new: the picture stands (a paused view costs nothing);
             * the labels are refreshed twice a second */
            if (!dirty && !a->rec && t - t_drawn < 0.5)
                continue;
            a->events = 0;
            t_drawn = t;
            draw(a, a->show_panel);
            if (o->record && !recording && a->fb_w > 0) {
                if (record_start(a))
                    fprintf(stderr, "floe view: cannot start ffmpeg for %s\n", o->record);
                recording = 1;
            }
            if (a->rec)
                record_frame(a);
            present(a);
        }
        if (recording)
            record_end(a);
    }
    close_panes(a);
    close_window(a);
    return rc;
}
