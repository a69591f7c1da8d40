/* floe view: the command line (docs/viewer.md). Started by `floe view`. */
#include "app.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char help[] =
    "usage: floe view SCENE.lua|RUN_DIR [SCENE.lua|RUN_DIR ...] [options]\n"
    "show a scene running live (SCENE.lua) or a finished run played back from its frames\n"
    "(RUN_DIR: particles, surface and body meshes, anything NAME.NNNN.ply|obj); two to four\n"
    "of them side by side with one camera and one clock, each labelled with its scene,\n"
    "method, cost (wall seconds per simulated second) and density error\n"
    "\n"
    "options:\n"
    "  --screenshot FILE  render one picture (.png or .ppm) without showing a window, then exit:\n"
    "                     live scenes run to their end (--frames), runs show --frame or the last\n"
    "  --frame N          a run's frame of file number N (with --screenshot)\n"
    "  --frames N         live: output frames of the scene (overrides it)\n"
    "  --color ATTR       colour by this attribute (speed, rho, p, ...; default speed)\n"
    "  --range LO:HI      fixed colour range (default: the frame's over every pane)\n"
    "  --walls hidden|faint|shown   boundary particles (faint)\n"
    "  --hide particles|meshes   start with the fluid particles or the meshes hidden\n"
    "  --size WxH         window or picture size (1280x720)\n"
    "  --panel            draw the panel into the screenshot too\n"
    "  --print-camera     print each pane's viewport and projection matrix, the legend's place\n"
    "  --record FILE.mp4  record the window through ffmpeg\n"
    "  --bench S          draw for S seconds with the camera turning, print frames per second\n"
    "  --out DIR          live: output folder (several scenes: DIR/1_NAME, DIR/2_NAME, ...)\n"
    "  --force            live: replace an earlier run in the output folder\n"
    "  --set K=V          live: scene parameter or STAGE.PARAM, as floe run --set\n"
    "  --change F:STAGE.PARAM=V   live: change a parameter after frame F, as the panel does\n"
    "                     (logged in run.yaml, frame F+1: set)\n"
    "  --threads N        live: worker threads of each scene\n"
    "  --quiet            only warnings and errors\n"
    "\n"
    "exit status: 0 done, 1 error (a scene failed, a bad file), 2 usage, 77 no window or\n"
    "OpenGL 4.3 core context could be had (no display, no driver)\n"
    "\n"
    "keys: space play/pause, n step, r restart, f frame the view, h panel, s screenshot, q quit;\n"
    "mouse: left drag orbit, right drag pan, wheel zoom\n";

static int bad(const char *opt, const char *val, const char *want)
{
    fprintf(stderr, "floe view: %s '%s': %s\n", opt, val ? val : "", want);
    return 2;
}

static int parse(int argc, char **argv, vw_opts *o)
{
    memset(o, 0, sizeof *o);
    o->frame = -1;
    o->frames = -1;
    o->width = 1280, o->height = 720;
    o->walls = VW_WALLS_FAINT;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(help, stdout);
            exit(0);
        } else if (!strcmp(a, "--screenshot") && v)
            o->screenshot = argv[++i];
        else if ((!strcmp(a, "--frame") || !strcmp(a, "--frames") || !strcmp(a, "--threads")) && v) {
            long n = strtol(v, &end, 10);
            if (end == v || *end || n < 0 || n > 100000000)
                return bad(a, v, "expected a whole number >= 0");
            *(a[2] == 't' ? &o->threads : !strcmp(a, "--frame") ? &o->frame : &o->frames) = (int)n;
            i++;
        } else if (!strcmp(a, "--color") && v)
            o->color = argv[++i];
        else if (!strcmp(a, "--range") && v) {
            if (sscanf(v, "%f:%f", &o->lo, &o->hi) != 2 || !(o->lo < o->hi))
                return bad(a, v, "expected LO:HI with LO < HI");
            o->fixed_range = 1;
            i++;
        } else if (!strcmp(a, "--walls") && v) {
            o->walls = !strcmp(v, "hidden") ? VW_WALLS_HIDDEN : !strcmp(v, "faint") ? VW_WALLS_FAINT
                     : !strcmp(v, "shown") ? VW_WALLS_SHOWN : -1;
            if (o->walls < 0)
                return bad(a, v, "expected hidden, faint or shown");
            i++;
        } else if (!strcmp(a, "--hide") && v) {
            if (!strcmp(v, "particles"))
                o->hide_particles = 1;
            else if (!strcmp(v, "meshes"))
                o->hide_meshes = 1;
            else
                return bad(a, v, "expected particles or meshes");
            i++;
        } else if (!strcmp(a, "--size") && v) {
            if (sscanf(v, "%dx%d", &o->width, &o->height) != 2 || o->width < 64 || o->height < 64 || o->width > 16384 ||
                o->height > 16384)
                return bad(a, v, "expected WxH, each in [64, 16384]");
            i++;
        } else if (!strcmp(a, "--bench") && v) {
            o->bench_s = strtod(v, &end);
            if (end == v || *end || !(o->bench_s > 0 && o->bench_s < 3600))
                return bad(a, v, "expected seconds in (0, 3600)");
            i++;
        } else if (!strcmp(a, "--record") && v)
            o->record = argv[++i];
        else if (!strcmp(a, "--out") && v)
            o->out_dir = argv[++i];
        else if (!strcmp(a, "--set") && v && strchr(v, '=') && o->nsets < 64)
            o->sets[o->nsets++] = argv[++i];
        else if (!strcmp(a, "--change") && v) {
            const char *colon = strchr(v, ':'), *eq = colon ? strchr(colon, '=') : NULL;
            long f = strtol(v, &end, 10);
            if (!colon || !eq || end != colon || f < 1 || o->nchanges == VW_MAX_CHANGES || eq == colon + 1)
                return bad(a, v, "expected FRAME:STAGE.PARAM=VALUE (FRAME >= 1)");
            int k = o->nchanges++;
            o->change_frame[k] = f;
            snprintf(o->change_key[k], sizeof o->change_key[k], "%.*s", (int)(eq - colon - 1), colon + 1);
            snprintf(o->change_value[k], sizeof o->change_value[k], "%s", eq + 1);
            i++;
        } else if (!strcmp(a, "--force"))
            o->force = 1;
        else if (!strcmp(a, "--panel"))
            o->panel = 1;
        else if (!strcmp(a, "--print-camera"))
            o->print_camera = 1;
        else if (!strcmp(a, "--quiet"))
            o->quiet = 1;
        else if (a[0] != '-') {
            if (o->ninputs == VW_MAX_PANES) {
                fprintf(stderr, "floe view: at most %d scenes or runs side by side\n", VW_MAX_PANES);
                return 2;
            }
            struct stat st;
            size_t len = strlen(a);
            int lua = len > 4 && !strcmp(a + len - 4, ".lua");
            if (stat(a, &st) || (lua ? !S_ISREG(st.st_mode) : !S_ISDIR(st.st_mode))) {
                fprintf(stderr, "floe view: %s: %s\n", a,
                        errno == ENOENT ? "no such file or folder" : lua ? "not a scene file" : "not a run folder (a folder of frames) nor a .lua scene");
                return 2;
            }
            o->input[o->ninputs++] = a;
        } else {
            fprintf(stderr, "floe view: unknown or incomplete option '%s' (floe view --help)\n", a);
            return 2;
        }
    }
    if (!o->ninputs) {
        fprintf(stderr, "floe view: no scene or run folder given\n%s", help);
        return 2;
    }
    if (o->screenshot && (o->bench_s > 0 || o->record)) {
        fprintf(stderr, "floe view: --screenshot draws one picture; not with --bench or --record\n");
        return 2;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static vw_opts o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc;
    return vw_app_run(&o);
}
