/* floe view: the window, its panes and the options (app.c, ui.c, main.c). */
#ifndef FLOE_VW_APP_H
#define FLOE_VW_APP_H

#include "nk.h"
#include "render.h"
#include "vw.h"

#include <stdio.h>
#include <sys/types.h>

#define VW_MAX_PANES 4
#define VW_MAX_CHANGES 16
/* exit status when no window or OpenGL 4.3 core context can be had (no
 * display, no driver): the tests skip on it */
#define VW_NO_DISPLAY 77

typedef struct vw_opts {
    int ninputs;
    const char *input[VW_MAX_PANES]; /* SCENE.lua (live) or a run folder (playback) */
    const char *screenshot;  /* write this picture and exit (no window shown) */
    int frame;               /* playback: file number of the frame to show (-1: the last) */
    int frames;              /* live: output frames of the scene (-1: the scene's) */
    const char *color;       /* colour attribute (NULL: speed, else the first) */
    int fixed_range;
    float lo, hi;            /* --range */
    int width, height;
    int walls;               /* VW_WALLS_* */
    int print_camera, panel;
    int hide_particles, hide_meshes;
    double bench_s;          /* render for this long and print frames/s */
    const char *record;      /* mp4 through ffmpeg */
    const char *out_dir;     /* live: output folder (several scenes: a folder each below it) */
    int force, threads, quiet;
    const char *sets[64];
    int nsets;
    int nchanges;            /* --change F:KEY=VALUE, as the panel does after frame F */
    long change_frame[VW_MAX_CHANGES];
    char change_key[VW_MAX_CHANGES][160], change_value[VW_MAX_CHANGES][64];
    int change_done[VW_MAX_CHANGES];
} vw_opts;

typedef struct vw_pane {
    int live;
    vw_rundir dir;           /* playback */
    vw_live *lv;             /* live */
    char out_dir[4096];
    char scene[256];
    vw_frame frame;          /* shown */
    vw_gpu_frame gpu;
    int index;               /* playback: frame shown (-1: none yet) */
    long seen;               /* live: frames taken */
    int dirty;               /* frame changed: upload */
    int x, y, w, h;          /* viewport, framebuffer pixels, y from the bottom */
    float mvp[16];
} vw_pane;

typedef struct vw_app {
    struct nk_glfw nkg;      /* first: the back end's callbacks reach it through the window's user pointer */
    struct nk_context *nk;
    GLFWwindow *win;
    vw_opts *o;
    vw_renderer r;
    GLuint fbo, color_rb, depth_rb;
    int fb_w, fb_h;
    int npanes;
    vw_pane p[VW_MAX_PANES];
    vw_camera cam;
    int framed;              /* the camera framed the first frames */
    int playing, step, as_fast, quit;
    double speed, T, T_clock;
    char attr[VW_NAME];
    float lo, hi;
    int walls, show_particles, show_meshes, show_panel;
    double mx, my;           /* mouse */
    int drag;                /* 1 orbit, 2 pan */
    int shots;
    int events;              /* input since the last picture: draw again */
    FILE *rec;               /* ffmpeg's standard input */
    pid_t rec_pid;
    float legend[4];         /* legend bar x, y, w, h (window pixels, top left) */
} vw_app;

/* app.c */
int vw_app_run(vw_opts *o);
void vw_app_screenshot(vw_app *a, const char *path);
void vw_app_restart(vw_app *a);
void vw_app_toggle_play(vw_app *a); /* a finished run at its end plays from its start */
void vw_app_reframe(vw_app *a);
void vw_app_attr_changed(vw_app *a);
double vw_app_end_time(vw_app *a);

/* ui.c: the panel, the panes' labels and the legend */
void vw_ui(vw_app *a, int with_panel);

#endif
