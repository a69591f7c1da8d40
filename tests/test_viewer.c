/* floe view under Xvfb (Mesa's llvmpipe): screenshots of a short 2D run
 * whose pixels are checked against the particles projected with the camera
 * the viewer prints (--print-camera); the colour map's ends; two panes side
 * by side; a live scene whose parameter change lands in run.yaml; mesh files
 * found by pattern; what it says without a display. The tests that draw skip
 * (with the reason) only where the viewer is not built or neither a display
 * nor Xvfb gives an OpenGL 4.3 core context. */
#include "scene_fixture.h"

#include "ply_read.h"

#include <fcntl.h>
#include <math.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/un.h>

#define VIEW_BIN FLOE_TEST_BUILD_ROOT "/viewer/floe-view"

static pid_t xvfb_pid;

/* A display: the one in DISPLAY, else an Xvfb of our own on the first
 * free display number from 90 (ready once its socket takes a connection).
 * -1 and why in `why` when there is none. */
static int display_up(char *why, size_t len)
{
    const char *d = getenv("DISPLAY");
    if (d && *d && !getenv("FLOE_TEST_OWN_XVFB"))
        return 0;
    for (int num = 90; num < 190; num++) {
        char lock[64];
        snprintf(lock, sizeof lock, "/tmp/.X%d-lock", num);
        if (access(lock, F_OK) == 0)
            continue;
        char dpy[16];
        snprintf(dpy, sizeof dpy, ":%d", num);
        pid_t pid = fork();
        if (pid == 0) {
            const char *log = getenv("FLOE_TEST_XVFB_LOG");
            int fd = open(log ? log : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd >= 0)
                dup2(fd, 1), dup2(fd, 2);
            execlp("Xvfb", "Xvfb", dpy, "-screen", "0", "1600x1200x24", "-nolisten", "tcp", (char *)NULL);
            _exit(127);
        }
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        snprintf(sa.sun_path, sizeof sa.sun_path, "/tmp/.X11-unix/X%d", num);
        for (double t = 0; t < 20; t += 0.05) {
            int st;
            if (waitpid(pid, &st, WNOHANG) == pid) {
                if (WIFEXITED(st) && WEXITSTATUS(st) == 127) {
                    snprintf(why, len, "no DISPLAY and Xvfb is not installed (Debian: xvfb; scripts/bootstrap.sh installs it)");
                    return -1;
                }
                break; /* that number was taken meanwhile: the next */
            }
            int s = socket(AF_UNIX, SOCK_STREAM, 0);
            int ok = s >= 0 && connect(s, (struct sockaddr *)&sa, sizeof sa) == 0;
            if (s >= 0)
                close(s);
            if (ok) {
                setenv("DISPLAY", dpy, 1);
                xvfb_pid = pid;
                return 0;
            }
            sc_sleep(0.05);
        }
        if (waitpid(pid, NULL, WNOHANG) == 0) {
            kill(pid, SIGTERM);
            waitpid(pid, NULL, 0);
            snprintf(why, len, "Xvfb %s started but took no connection within 20 s", dpy);
            return -1;
        }
    }
    snprintf(why, len, "no DISPLAY and no free display number for Xvfb in :90..:189");
    return -1;
}

static void setup(void)
{
    sc_setup();
    xvfb_pid = 0;
    /* sanitizer builds (make sanitize): memory errors are still caught, but
     * not leaks: Mesa's driver is unloaded when the window closes, so what it
     * keeps until the process ends shows as leaks of no known library,
     * which no suppression can name */
    const char *asan = getenv("ASAN_OPTIONS");
    char opts[1024];
    snprintf(opts, sizeof opts, "%s%sdetect_leaks=0", asan ? asan : "", asan && *asan ? ":" : "");
    setenv("ASAN_OPTIONS", opts, 1);
}

static void teardown(void)
{
    if (xvfb_pid > 0) {
        kill(xvfb_pid, SIGTERM);
        waitpid(xvfb_pid, NULL, 0);
    }
    sc_teardown();
}

/* skips unless the viewer is built and a display is there */
static void need_display(void)
{
    if (access(VIEW_BIN, X_OK))
        cr_skip_test("floe view is not built (GLFW 3, libepoxy or libpng missing when Meson was configured)");
    char why[256];
    if (display_up(why, sizeof why))
        cr_skip_test("no display for floe view: %s", why);
}

/* floe view ARGS: exit status; skips when no OpenGL 4.3 context (77) */
static int view(const char *const *args)
{
    const char *argv[32] = {"view"};
    int n = 1;
    for (; args[n - 1] && n < 31; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    int rc = sc_cli(argv);
    if (rc == 77) {
        char *log = sc_slurp("%s/log", sc_tmp);
        cr_skip_test("floe view found no OpenGL 4.3 core context: %s", log);
    }
    return rc;
}

/* a 2D water column (width w) collapsing in a tank; 200 particles at w = 0.1 */
static const char column[] =
    "local floe = require 'floe'\n"
    "local d = 0.01\n"
    "local w = floe.param('width', 0.1)\n"
    "local sim = floe.sim{ dim = 2, spacing = d, gravity = { 0, -9.81 },\n"
    "  domain = { min = { -0.04, -0.04 }, max = { 0.44, 0.3 } } }\n"
    "sim:load{ 'sph', 'wcsph' }\n"
    "sim:fluid_box{ min = { 0, 0 }, max = { w, 0.2 }, density = 1000 }\n"
    "sim:boundary_box{ min = { 0, 0 }, max = { 0.4, 0.25 }, layers = 2, open_top = true }\n"
    "sim:pipeline{ 'neighbours', 'sph.density', { 'wcsph.pressure', speed_of_sound = 20 }, 'gravity',\n"
    "  { 'wcsph.viscosity', kind = 'artificial', alpha = 0.05 }, 'wcsph.pressure_force', 'integrate' }\n"
    "sim:run{ end_time = 0.2, fps = 50, out = 'col', formats = { 'ply' } }\n";

static void write_column(void)
{
    FILE *f = fopen(sc_scene, "w");
    cr_assert_not_null(f);
    fputs(column, f);
    fclose(f);
}

static void run_column(const char *out, const char *width)
{
    char set[64];
    snprintf(set, sizeof set, "width=%s", width);
    const char *args[] = {"run", sc_scene, "--out", out, "--threads", "1", "--quiet", "--set", set, NULL};
    cr_assert_eq(sc_cli(args), 0, "floe run: %s", sc_slurp("%s/log", sc_tmp));
}

typedef struct image {
    int w, h;
    unsigned char *px;
} image;

static image read_ppm(const char *path)
{
    image im = {0, 0, NULL};
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    int maxv = 0;
    cr_assert_eq(fscanf(f, "P6 %d %d %d", &im.w, &im.h, &maxv), 3, "%s: not a binary PPM", path);
    fgetc(f);
    im.px = malloc((size_t)im.w * (size_t)im.h * 3);
    cr_assert_eq(fread(im.px, 3, (size_t)im.w * (size_t)im.h, f), (size_t)im.w * (size_t)im.h);
    fclose(f);
    return im;
}

static const unsigned char *pixel(const image *im, int x, int y) { return im->px + 3 * ((size_t)y * (size_t)im->w + (size_t)x); }

/* the viewer's background (vw_background: 0.12, 0.12, 0.14) */
static int is_background(const unsigned char *p)
{
    return abs(p[0] - 31) <= 2 && abs(p[1] - 31) <= 2 && abs(p[2] - 36) <= 2;
}

typedef struct camera {
    int fb_w, fb_h, npanes;
    int vp[4][4];
    double mvp[4][16];
    double legend[4], lo, hi;
} camera;

static camera read_camera(void)
{
    camera c;
    memset(&c, 0, sizeof c);
    char *log = sc_slurp("%s/log", sc_tmp);
    for (char *l = strtok(log, "\n"); l; l = strtok(NULL, "\n")) {
        int k;
        if (sscanf(l, "framebuffer %d %d", &c.fb_w, &c.fb_h) == 2)
            continue;
        if (sscanf(l, "pane %d", &k) == 1 && k >= 0 && k < 4) {
            char *s = strstr(l, "viewport");
            cr_assert_not_null(s);
            cr_assert_eq(sscanf(s, "viewport %d %d %d %d", &c.vp[k][0], &c.vp[k][1], &c.vp[k][2], &c.vp[k][3]), 4);
            s = strstr(l, "mvp") + 3;
            for (int i = 0; i < 16; i++)
                c.mvp[k][i] = strtod(s, &s);
            c.npanes = k + 1 > c.npanes ? k + 1 : c.npanes;
        }
        sscanf(l, "legend %lf %lf %lf %lf range %lf %lf", &c.legend[0], &c.legend[1], &c.legend[2], &c.legend[3], &c.lo,
               &c.hi);
    }
    free(log);
    cr_assert(c.fb_w > 0 && c.npanes > 0, "no camera printed");
    return c;
}

/* a point's pixel (column, row from the top) in pane k */
static void project(const camera *c, int k, const float p[3], double *px, double *py)
{
    const double *m = c->mvp[k];
    double x = m[0] * p[0] + m[4] * p[1] + m[8] * p[2] + m[12];
    double y = m[1] * p[0] + m[5] * p[1] + m[9] * p[2] + m[13];
    double w = m[3] * p[0] + m[7] * p[1] + m[11] * p[2] + m[15];
    *px = c->vp[k][0] + (0.5 * x / w + 0.5) * c->vp[k][2];
    double gy = c->vp[k][1] + (0.5 * y / w + 0.5) * c->vp[k][3];
    *py = c->fb_h - gy;
}

typedef struct cloud {
    uint32_t n;
    float *x, *y, *z, *vx, *vy, *vz;
} cloud;

static cloud read_cloud(const char *path)
{
    cloud c;
    uint32_t n[6];
    cr_assert_eq(ply_read_property(path, "x", &n[0], &c.x), 0, "%s", path);
    cr_assert_eq(ply_read_property(path, "y", &n[1], &c.y), 0);
    cr_assert_eq(ply_read_property(path, "z", &n[2], &c.z), 0);
    cr_assert_eq(ply_read_property(path, "v_x", &n[3], &c.vx), 0);
    cr_assert_eq(ply_read_property(path, "v_y", &n[4], &c.vy), 0);
    cr_assert_eq(ply_read_property(path, "v_z", &n[5], &c.vz), 0);
    c.n = n[0];
    return c;
}

/* UI overlays: the labels (top left of each pane, 434 x 78) and the legend
 * (bottom right, 308 x 72) */
static int under_ui(const camera *c, double x, double y)
{
    for (int k = 0; k < c->npanes; k++) {
        double top = c->fb_h - c->vp[k][1] - c->vp[k][3];
        if (x >= c->vp[k][0] && x < c->vp[k][0] + 530 && y >= top && y < top + 80)
            return 1;
    }
    return x >= c->fb_w - 312 && y >= c->fb_h - 76;
}

/* Fraction of the particles of pane k whose centre is drawn (not
 * background), and of the pixels farther than `far` pixels from every
 * particle centre that are background. */
static void coverage(const image *im, const camera *c, int k, const cloud *cl, double far, double *hit, double *empty)
{
    double *cx = malloc(sizeof(double) * cl->n), *cy = malloc(sizeof(double) * cl->n);
    int n = 0, drawn = 0;
    for (uint32_t i = 0; i < cl->n; i++) {
        float p[3] = {cl->x[i], cl->y[i], cl->z[i]};
        project(c, k, p, &cx[i], &cy[i]);
        int x = (int)cx[i], y = (int)cy[i];
        if (x < 0 || y < 0 || x >= im->w || y >= im->h || under_ui(c, x, y))
            continue;
        n++;
        drawn += !is_background(pixel(im, x, y));
    }
    *hit = n ? (double)drawn / n : 0;
    cr_assert_gt(n, (int)cl->n / 2, "most particles lie in the picture");
    int nfar = 0, bg = 0;
    for (int y = 2; y < im->h; y += 7)
        for (int x = c->vp[k][0] + 2; x < c->vp[k][0] + c->vp[k][2]; x += 7) {
            if (under_ui(c, x, y))
                continue;
            int near = 0;
            for (uint32_t i = 0; i < cl->n && !near; i++)
                near = fabs(cx[i] - x) < far && fabs(cy[i] - y) < far;
            if (near)
                continue;
            nfar++;
            bg += is_background(pixel(im, x, y));
        }
    *empty = nfar ? (double)bg / nfar : 0;
    cr_assert_gt(nfar, 100);
    free(cx);
    free(cy);
}

/* |c - s * viridis(t)| small for some brightness s in [0.9, 1] */
static int near_viridis_end(const unsigned char *p, int end, int tol)
{
    static const int v[2][3] = {{68, 1, 84}, {253, 231, 37}}; /* viridis(0), viridis(1) */
    (void)0;
    return abs(p[0] - v[end][0]) <= tol && abs(p[1] - v[end][1]) <= tol && abs(p[2] - v[end][2]) <= tol;
}

TestSuite(viewer, .init = setup, .fini = teardown, .timeout = FLOE_TIMEOUT(600));

Test(viewer, particles_are_drawn_where_they_project_and_nowhere_else)
{
    need_display();
    write_column();
    char run[400], shot[400];
    snprintf(run, sizeof run, "%s/run", sc_tmp);
    snprintf(shot, sizeof shot, "%s/a.ppm", sc_tmp);
    run_column(run, "0.1");
    const char *args[] = {run, "--screenshot", shot, "--frame", "5", "--walls", "hidden", "--print-camera",
                          "--size", "800x600", NULL};
    cr_assert_eq(view(args), 0, "%s", sc_slurp("%s/log", sc_tmp));
    image im = read_ppm(shot);
    cr_assert_eq(im.w, 800);
    cr_assert_eq(im.h, 600);
    camera c = read_camera();
    cr_assert_eq(c.npanes, 1);
    cr_assert_eq(c.vp[0][2], 800);
    char ply[500];
    snprintf(ply, sizeof ply, "%s/fluid.0005.ply", run);
    cloud cl = read_cloud(ply);
    cr_assert_eq(cl.n, 200);
    double hit, empty;
    coverage(&im, &c, 0, &cl, 40, &hit, &empty);
    cr_expect_geq(hit, 0.98, "particle centres drawn: %.3f", hit);
    cr_expect_geq(empty, 0.999, "pixels away from every particle left empty: %.4f", empty);
    /* the picture of another frame differs where the water moved */
    snprintf(shot, sizeof shot, "%s/b.ppm", sc_tmp);
    const char *args0[] = {run, "--screenshot", shot, "--frame", "0", "--walls", "hidden", "--size", "800x600", NULL};
    cr_assert_eq(view(args0), 0);
    image im0 = read_ppm(shot);
    long diff = 0;
    for (size_t i = 0; i < (size_t)800 * 600 * 3; i++)
        diff += im.px[i] != im0.px[i];
    cr_expect_gt(diff, 10000, "frame 0 and frame 5 look alike (%ld bytes differ)", diff);
}

Test(viewer, colour_map_ends_when_colouring_by_speed)
{
    need_display();
    write_column();
    char run[400], shot[400], ply[500];
    snprintf(run, sizeof run, "%s/run", sc_tmp);
    snprintf(shot, sizeof shot, "%s/a.ppm", sc_tmp);
    run_column(run, "0.1");
    const char *args[] = {run, "--screenshot", shot, "--color", "speed", "--print-camera", NULL};
    cr_assert_eq(view(args), 0, "%s", sc_slurp("%s/log", sc_tmp));
    image im = read_ppm(shot);
    camera c = read_camera();
    /* the range is the last frame's slowest and fastest particle */
    snprintf(ply, sizeof ply, "%s/fluid.0010.ply", run);
    cloud cl = read_cloud(ply);
    double lo = INFINITY, hi = 0;
    for (uint32_t i = 0; i < cl.n; i++) {
        double s = sqrt((double)cl.vx[i] * cl.vx[i] + (double)cl.vy[i] * cl.vy[i] + (double)cl.vz[i] * cl.vz[i]);
        lo = fmin(lo, s), hi = fmax(hi, s);
    }
    cr_expect(fabs(c.lo - lo) <= 1e-5 * hi && fabs(c.hi - hi) <= 1e-5 * hi, "range %g..%g, particles %g..%g", c.lo,
              c.hi, lo, hi);
    /* the legend's bar runs from viridis(0) to viridis(1) */
    int y = (int)(c.legend[1] + 0.5 * c.legend[3]);
    cr_assert_gt(c.legend[2], 100);
    const unsigned char *l = pixel(&im, (int)c.legend[0] + 2, y), *r = pixel(&im, (int)(c.legend[0] + c.legend[2]) - 3, y);
    cr_expect(near_viridis_end(l, 0, 4), "legend's left end %d,%d,%d", l[0], l[1], l[2]);
    cr_expect(near_viridis_end(r, 1, 4), "legend's right end %d,%d,%d", r[0], r[1], r[2]);
    /* the slowest and the fastest particle are drawn in the ends' colours
     * (at the brightest point of the sphere) */
    int found[2] = {0, 0};
    for (int yy = 0; yy < im.h; yy++)
        for (int xx = 0; xx < im.w; xx++) {
            if (under_ui(&c, xx, yy))
                continue;
            for (int e = 0; e < 2; e++)
                found[e] += near_viridis_end(pixel(&im, xx, yy), e, 8);
        }
    cr_expect_gt(found[0], 0, "no particle pixel in viridis(0)");
    cr_expect_gt(found[1], 0, "no particle pixel in viridis(1)");
}

Test(viewer, two_runs_side_by_side)
{
    need_display();
    write_column();
    char a[400], b[400], shot[400], ply[500];
    snprintf(a, sizeof a, "%s/narrow", sc_tmp);
    snprintf(b, sizeof b, "%s/wide", sc_tmp);
    snprintf(shot, sizeof shot, "%s/ab.ppm", sc_tmp);
    run_column(a, "0.1");
    run_column(b, "0.2");
    const char *args[] = {a, b, "--screenshot", shot, "--frame", "3", "--walls", "hidden", "--print-camera", NULL};
    cr_assert_eq(view(args), 0, "%s", sc_slurp("%s/log", sc_tmp));
    image im = read_ppm(shot);
    camera c = read_camera();
    cr_assert_eq(c.npanes, 2);
    /* two viewports side by side, the same height, one camera */
    cr_expect_eq(c.vp[0][0], 0);
    cr_expect_geq(c.vp[1][0], c.vp[0][0] + c.vp[0][2]);
    cr_expect_eq(c.vp[0][3], c.vp[1][3]);
    cr_expect(abs(c.vp[0][2] - c.vp[1][2]) <= 2);
    for (int i = 0; i < 16; i++)
        if (i != 0 && i != 12) /* the x scale and offset follow the panes' widths */
            cr_expect(fabs(c.mvp[0][i] - c.mvp[1][i]) < 1e-6 * (1 + fabs(c.mvp[0][i])), "mvp[%d]", i);
    /* each pane draws its own run */
    for (int k = 0; k < 2; k++) {
        snprintf(ply, sizeof ply, "%s/fluid.0003.ply", k ? b : a);
        cloud cl = read_cloud(ply);
        cr_assert_eq(cl.n, k ? 400u : 200u);
        double hit, empty;
        coverage(&im, &c, k, &cl, 40, &hit, &empty);
        cr_expect_geq(hit, 0.98, "pane %d: particle centres drawn %.3f", k, hit);
        cr_expect_geq(empty, 0.999, "pane %d: empty pixels %.4f", k, empty);
    }
    /* the panes differ, and each carries a label (light text on its top left) */
    long diff = 0;
    int half = c.vp[1][0];
    for (int y = 0; y < im.h; y++)
        for (int x = 0; x < c.vp[0][2] && half + x < im.w; x++)
            diff += memcmp(pixel(&im, x, y), pixel(&im, half + x, y), 3) != 0;
    cr_expect_gt(diff, (long)im.w * im.h / 50, "the two panes look alike (%ld pixels differ)", diff);
    for (int k = 0; k < 2; k++) {
        int text = 0;
        for (int y = 4; y < 74; y++)
            for (int x = c.vp[k][0] + 4; x < c.vp[k][0] + 300; x++) {
                const unsigned char *p = pixel(&im, x, y);
                text += p[0] > 90 && p[1] > 90 && p[2] > 90;
            }
        cr_expect_gt(text, 300, "pane %d has no label text (%d light pixels)", k, text);
    }
}

Test(viewer, live_scene_logs_a_changed_parameter_in_the_run_record)
{
    need_display();
    write_column();
    char out[400], shot[400];
    snprintf(out, sizeof out, "%s/live", sc_tmp);
    snprintf(shot, sizeof shot, "%s/live.ppm", sc_tmp);
    const char *args[] = {sc_scene, "--frames", "4", "--threads", "1", "--out", out, "--quiet",
                          "--change", "2:wcsph.viscosity.alpha=0.2", "--screenshot", shot, "--walls", "hidden", NULL};
    cr_assert_eq(view(args), 0, "%s", sc_slurp("%s/log", sc_tmp));
    char *rec = sc_slurp("%s/run.yaml", out);
    cr_assert(strstr(rec, "status: finished"), "%s", rec);
    cr_expect(strstr(rec, "alpha: 0.05"), "the record's pipeline keeps the value the run began with");
    /* frame 3 is the first computed with the new value: its line says so */
    int lines = 0;
    for (char *l = strtok(rec, "\n"); l; l = strtok(NULL, "\n")) {
        if (strncmp(l, "- {frame: ", 10) != 0)
            continue;
        int f = atoi(l + 10);
        lines++;
        int has = strstr(l, "set: {wcsph.viscosity.alpha: \"0.2\"}") != NULL;
        cr_expect_eq(has, f == 3, "frame %d: %s", f, l);
    }
    cr_expect_eq(lines, 4);
    free(rec);
    cr_expect(sc_exists("%s/fluid.0004.ply", out));
    image im = read_ppm(shot);
    int drawn = 0;
    for (size_t i = 0; i < (size_t)im.w * im.h; i++)
        drawn += !is_background(im.px + 3 * i);
    cr_expect_gt(drawn, 5000, "the live scene's last frame is drawn (%d pixels)", drawn);
}

Test(viewer, watching_a_scene_live_does_not_change_its_frames)
{
    need_display();
    write_column();
    char live[400], ref[400], shot[400];
    snprintf(live, sizeof live, "%s/live", sc_tmp);
    snprintf(ref, sizeof ref, "%s/ref", sc_tmp);
    snprintf(shot, sizeof shot, "%s/live.ppm", sc_tmp);
    const char *args[] = {sc_scene, "--frames", "3", "--threads", "1", "--out", live, "--quiet", "--screenshot", shot, NULL};
    cr_assert_eq(view(args), 0, "%s", sc_slurp("%s/log", sc_tmp));
    const char *run[] = {"run", sc_scene, "--frames", "3", "--threads", "1", "--out", ref, "--quiet", NULL};
    cr_assert_eq(sc_cli(run), 0);
    for (int f = 0; f <= 3; f++) {
        char a[500], b[500];
        snprintf(a, sizeof a, "%s/fluid.%04d.ply", live, f);
        snprintf(b, sizeof b, "%s/fluid.%04d.ply", ref, f);
        char *x = sc_slurp("%s", a), *y = sc_slurp("%s", b);
        struct stat sa, sb;
        cr_assert_eq(stat(a, &sa), 0, "%s", a);
        cr_assert_eq(stat(b, &sb), 0, "%s", b);
        cr_expect(sa.st_size == sb.st_size && memcmp(x, y, (size_t)sa.st_size) == 0,
                  "frame %d of the live scene differs from floe run's", f);
        free(x);
        free(y);
    }
}

Test(viewer, meshes_of_any_name_are_read_by_pattern)
{
    need_display();
    /* a run folder of one particle and two meshes whose names the viewer
     * does not know: an OBJ cube and an ASCII PLY quad */
    char dir[400], shot[400];
    snprintf(dir, sizeof dir, "%s/meshes", sc_tmp);
    snprintf(shot, sizeof shot, "%s/m.ppm", sc_tmp);
    cr_assert_eq(mkdir(dir, 0755), 0);
    FILE *f;
    char p[500];
    snprintf(p, sizeof p, "%s/crate.obj", dir); /* written once, unnumbered (like terrain.ply) */
    cr_assert_not_null(f = fopen(p, "w"));
    fputs("v -0.6 -0.2 -0.2\nv -0.2 -0.2 -0.2\nv -0.2 0.2 -0.2\nv -0.6 0.2 -0.2\n"
          "v -0.6 -0.2 0.2\nv -0.2 -0.2 0.2\nv -0.2 0.2 0.2\nv -0.6 0.2 0.2\n"
          "f 1 2 3 4\nf 5 8 7 6\nf 1 5 6 2\nf 2 6 7 3\nf 3 7 8 4\nf 5 1 4 8\n", f);
    fclose(f);
    snprintf(p, sizeof p, "%s/ground.0000.ply", dir);
    cr_assert_not_null(f = fopen(p, "w"));
    fputs("ply\nformat ascii 1.0\nelement vertex 4\nproperty float x\nproperty float y\nproperty float z\n"
          "element face 1\nproperty list uchar int vertex_indices\nend_header\n"
          "0.2 -0.2 0\n0.6 -0.2 0\n0.6 0.2 0\n0.2 0.2 0\n4 0 1 2 3\n", f);
    fclose(f);
    snprintf(p, sizeof p, "%s/drop.0000.ply", dir);
    cr_assert_not_null(f = fopen(p, "w"));
    fputs("ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\nproperty float z\n"
          "end_header\n0 0.5 0\n", f);
    fclose(f);
    /* and a binary PLY quad with a face list, as floe surface writes them */
    snprintf(p, sizeof p, "%s/sheet.0000.ply", dir);
    cr_assert_not_null(f = fopen(p, "wb"));
    fputs("ply\nformat binary_little_endian 1.0\nelement vertex 4\nproperty float x\nproperty float y\n"
          "property float z\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n", f);
    const float sv[12] = {-0.15f, 0.15f, 0, 0.15f, 0.15f, 0, 0.15f, 0.35f, 0, -0.15f, 0.35f, 0};
    fwrite(sv, sizeof sv, 1, f);
    const unsigned char four = 4;
    const int32_t quad[4] = {0, 1, 2, 3};
    fwrite(&four, 1, 1, f);
    fwrite(quad, sizeof quad, 1, f);
    fclose(f);
    const char *args[] = {dir, "--screenshot", shot, "--print-camera", NULL};
    cr_assert_eq(view(args), 0, "%s", sc_slurp("%s/log", sc_tmp));
    image im = read_ppm(shot);
    camera c = read_camera();
    const float crate[3] = {-0.4f, 0, 0.2f}, ground[3] = {0.4f, 0, 0}, off[3] = {0, -0.5f, 0};
    const float sheet[3] = {0, 0.25f, 0};
    double sx, sy;
    project(&c, 0, sheet, &sx, &sy);
    cr_expect(!is_background(pixel(&im, (int)sx, (int)sy)), "the binary PLY quad is drawn at %.0f,%.0f", sx, sy);
    double x, y;
    project(&c, 0, crate, &x, &y);
    cr_expect(!is_background(pixel(&im, (int)x, (int)y)), "the OBJ cube is drawn at %.0f,%.0f", x, y);
    project(&c, 0, ground, &x, &y);
    cr_expect(!is_background(pixel(&im, (int)x, (int)y)), "the PLY quad is drawn at %.0f,%.0f", x, y);
    project(&c, 0, off, &x, &y);
    cr_expect(is_background(pixel(&im, (int)x, (int)y)), "nothing below them at %.0f,%.0f", x, y);
}

Test(viewer, without_a_display_it_says_what_is_missing)
{
    if (access(VIEW_BIN, X_OK))
        cr_skip_test("floe view is not built (GLFW 3, libepoxy or libpng missing when Meson was configured)");
    write_column();
    char run[400], shot[400];
    snprintf(run, sizeof run, "%s/run", sc_tmp);
    snprintf(shot, sizeof shot, "%s/x.png", sc_tmp);
    run_column(run, "0.1"); /* floe run needs no display */
    unsetenv("DISPLAY");
    unsetenv("WAYLAND_DISPLAY");
    const char *args[] = {"view", run, "--screenshot", shot, NULL};
    cr_assert_eq(sc_cli(args), 77);
    char *log = sc_slurp("%s/log", sc_tmp);
    cr_expect(strstr(log, "no display (DISPLAY is not set)"), "%s", log);
    cr_expect(!sc_exists("%s", shot));
    free(log);
}

Test(viewer, bad_inputs_are_refused_with_their_name)
{
    if (access(VIEW_BIN, X_OK))
        cr_skip_test("floe view is not built (GLFW 3, libepoxy or libpng missing when Meson was configured)");
    char dir[400], p[500];
    snprintf(dir, sizeof dir, "%s/broken", sc_tmp);
    cr_assert_eq(mkdir(dir, 0755), 0);
    const char *none[] = {"view", dir, NULL};
    cr_expect_eq(sc_cli(none), 1);
    char *log = sc_slurp("%s/log", sc_tmp);
    cr_expect(strstr(log, "no frames"), "%s", log);
    free(log);
    snprintf(p, sizeof p, "%s/water.0000.ply", dir);
    FILE *f = fopen(p, "w");
    fputs("ply\nformat binary_little_endian 1.0\nelement vertex 1000\nproperty float x\nproperty float y\n"
          "property float z\nend_header\n0123", f);
    fclose(f);
    unsetenv("DISPLAY"); /* the frame is read before any window opens */
    const char *bad[] = {"view", dir, "--screenshot", "x.png", NULL};
    cr_expect_eq(sc_cli(bad), 1);
    log = sc_slurp("%s/log", sc_tmp);
    cr_expect(strstr(log, "water.0000.ply: the file ends inside its data"), "%s", log);
    free(log);
    const char *missing[] = {"view", "no_such_run", NULL};
    cr_expect_eq(sc_cli(missing), 2);
    const char *opt[] = {"view", dir, "--size", "10x10", NULL};
    cr_expect_eq(sc_cli(opt), 2);
}

Test(viewer, record_without_ffmpeg_says_so)
{
    if (access(VIEW_BIN, X_OK))
        cr_skip_test("floe view is not built (GLFW 3, libepoxy or libpng missing when Meson was configured)");
    write_column();
    char run[400];
    snprintf(run, sizeof run, "%s/run", sc_tmp);
    run_column(run, "0.1");
    setenv("PATH", "/nonexistent", 1); /* no ffmpeg on it */
    const char *args[] = {"view", run, "--record", "movie.mp4", NULL};
    cr_expect_eq(sc_cli(args), 2);
    char *log = sc_slurp("%s/log", sc_tmp);
    cr_expect(strstr(log, "--record needs ffmpeg, which is not installed"), "%s", log);
    free(log);
}

Test(viewer, record_pipes_every_drawn_frame_to_ffmpeg)
{
    need_display();
    write_column();
    char run[400], bin[400], fake[500], raw[500];
    snprintf(run, sizeof run, "%s/run", sc_tmp);
    run_column(run, "0.1");
    /* an ffmpeg that keeps what it is given (its last argument + .raw) */
    snprintf(bin, sizeof bin, "%s/bin", sc_tmp);
    cr_assert_eq(mkdir(bin, 0755), 0);
    snprintf(fake, sizeof fake, "%s/ffmpeg", bin);
    FILE *f = fopen(fake, "w");
    fputs("#!/bin/sh\nfor a; do last=$a; done\necho \"$@\" > \"$last.args\"\ncat > \"$last.raw\"\n", f);
    fclose(f);
    chmod(fake, 0755);
    char path[1200];
    snprintf(path, sizeof path, "%s:%s", bin, getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    setenv("PATH", path, 1);
    snprintf(raw, sizeof raw, "%s/movie.mp4", sc_tmp);
    const char *argv[] = {"view", run, "--record", raw, "--size", "320x240", NULL};
    pid_t pid = sc_spawn(argv);
    long frame = 320L * 240 * 3;
    struct stat st;
    snprintf(path, sizeof path, "%s.raw", raw);
    /* plays the run back, drawing, until ffmpeg has had two frames (a
     * loaded machine may take seconds to start) */
    for (double t = 0; t < 60; t += 0.1) {
        if (stat(path, &st) == 0 && st.st_size >= 2 * frame)
            break;
        if (waitpid(pid, NULL, WNOHANG) == pid)
            cr_assert_fail("floe view ended before it recorded: %s", sc_slurp("%s/log", sc_tmp));
        sc_sleep(0.1);
    }
    kill(pid, SIGTERM); /* closes the window as its button does */
    int rc = sc_wait(pid);
    char *log = sc_slurp("%s/log", sc_tmp);
    if (rc == 77)
        cr_skip_test("floe view found no OpenGL 4.3 core context: %s", log);
    cr_assert_eq(rc, 0, "%s", log);
    cr_expect(strstr(log, "movie.mp4 written"), "%s", log);
    char *args = sc_slurp("%s.args", raw);
    cr_expect(strstr(args, "-f rawvideo -pix_fmt rgb24 -s 320x240"), "ffmpeg's arguments: %s", args);
    cr_assert_eq(stat(path, &st), 0);
    cr_expect(st.st_size >= 2 * frame && st.st_size % frame == 0, "%lld bytes: not whole 320x240 RGB frames",
              (long long)st.st_size);
    free(args);
    free(log);
}

/* ---- the core's side, with or without the viewer -------------------------- */

typedef struct host_log {
    int frames, calls;
    double alpha_seen[8];
} host_log;

/* after frame 2: what the panel does */
static int host_frame(floe_ctx *ctx, const floe_frame_stats *st, void *user)
{
    host_log *h = user;
    h->calls++;
    h->frames = st->frame;
    for (int i = 0; i < floe_pipeline_length(ctx); i++) {
        const floe_param_desc *pd;
        floe_value v;
        for (int k = 0; floe_pipeline_param(ctx, i, k, &pd, &v) == 0; k++)
            if (!strcmp(floe_pipeline_stage_name(ctx, i), "wcsph.viscosity") && !strcmp(pd->name, "alpha") && st->frame < 8)
                h->alpha_seen[st->frame] = v.f;
    }
    if (st->frame == 2)
        cr_assert_eq(floe_pipeline_set(ctx, "wcsph.viscosity.alpha", "0.3"), FLOE_OK, "%s", floe_ctx_error(ctx));
    return 0;
}

Test(viewer, host_on_frame_changes_a_parameter_and_the_record_logs_it)
{
    host_log h;
    memset(&h, 0, sizeof h);
    floe_scene_opts o = sc_opts();
    o.on_frame = host_frame;
    o.frame_user = &h;
    o.threads = 1;
    o.frames = 4;
    cr_assert_eq(sc_run(&o, "%s", column), FLOE_OK, "%s", sc_err);
    cr_expect_eq(h.calls, 4);
    cr_expect_eq(h.frames, 4);
    cr_expect_float_eq(h.alpha_seen[1], 0.05, 1e-12);
    cr_expect_float_eq(h.alpha_seen[2], 0.05, 1e-12);
    cr_expect_float_eq(h.alpha_seen[3], 0.3, 1e-12, "floe_pipeline_param gives the value set");
    char *rec = sc_slurp("%s/run.yaml", sc_out);
    int lines = 0;
    for (char *l = strtok(rec, "\n"); l; l = strtok(NULL, "\n"))
        if (!strncmp(l, "- {frame: ", 10)) {
            int f = atoi(l + 10), has = strstr(l, "set: {wcsph.viscosity.alpha: \"0.3\"}") != NULL;
            cr_expect_eq(has, f == 3, "frame %d: %s", f, l);
            lines++;
        }
    cr_expect_eq(lines, 4);
    free(rec);
    /* past the end, a host function, a bad stage: -1 */
    floe_sim_def d = floe_sim_default_def();
    d.spacing = 0.1f;
    char err[256];
    floe_ctx *ctx = floe_ctx_create(&d, err, sizeof err);
    cr_assert_not_null(ctx);
    cr_assert_eq(floe_pipeline_add(ctx, "gravity", NULL, 0), FLOE_OK);
    const floe_param_desc *pd;
    floe_value v;
    cr_expect_eq(floe_pipeline_param(ctx, 0, 0, &pd, &v), -1, "gravity has no parameters");
    cr_expect_eq(floe_pipeline_param(ctx, 5, 0, &pd, &v), -1);
    cr_expect_eq(floe_pipeline_param(ctx, -1, 0, &pd, &v), -1);
    floe_ctx_destroy(ctx);
}
