/* The fuzz targets of targets.h. Inputs reach the entry points as files
 * (they read paths), written to one temporary file per process. */
#include "targets.h"

#include <floe/floe.h>

#include <floe/mesh.h>

#include "heightmap.h"
#include "io.h"
#include "ply_read.h"
#include "lua_floe.h"

#include <lauxlib.h>
#include <lua.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char fuzz_message[8192];

static void quiet_log(int level, const char *msg, void *user)
{
    (void)level;
    (void)msg;
    (void)user;
}

static char dir[256];

static void remove_dir(void)
{
    static const char *const files[] = {"preset.yaml", "frame.ply", "scene.lua", "mesh.obj",
                                        "mesh.stl", "mesh.ply", "mesh.dae", "mesh.off",
                                        "height.png"};
    char path[512];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
}

/* The input as the file `name` in a per-process folder (removed at exit);
 * its path. */
static const char *as_file(const uint8_t *data, size_t size, const char *name)
{
    static char path[512];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "%s/floe_fuzz.%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
        if (io_mkdirs(dir) != 0) {
            perror(dir);
            abort();
        }
        atexit(remove_dir);
    }
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
        perror(path);
        abort();
    }
    return path;
}

int fuzz_yaml(const uint8_t *data, size_t size)
{
    const char *path = as_file(data, size, "preset.yaml");
    lua_State *L = luaL_newstate();
    if (!L)
        abort();
    fuzz_message[0] = 0;
    int rc = yaml_push_file(L, path, fuzz_message, sizeof fuzz_message);
    lua_close(L);
    return rc == 0 ? 0 : -1;
}

int fuzz_ply(const uint8_t *data, size_t size)
{
    const char *path = as_file(data, size, "frame.ply");
    static const char *const props[] = {"x", "v_x"};
    int ok = 0;
    fuzz_message[0] = 0;
    for (int k = 0; k < 2; k++) {
        uint32_t n = 0;
        float *v = NULL;
        if (ply_read_property(path, props[k], &n, &v) == 0) {
            volatile float sink = 0; /* touch every value read: ASan checks the length */
            for (uint32_t i = 0; i < n; i++)
                sink += v[i];
            (void)sink;
            ok++;
        } else if (!fuzz_message[0])
            snprintf(fuzz_message, sizeof fuzz_message, "not a frame with property '%s'", props[k]);
        free(v);
    }
    return ok ? 0 : -1;
}

static const char scene[] =
    "local floe = require 'floe'\n"
    "local c = floe.param('c', 20)\n"
    "local layers = floe.param('layers', 2)\n"
    "local top = floe.param('open_top', true)\n"
    "local kind = floe.param('kind', 'xsph')\n"
    "local sim = floe.sim{ dim = 2, spacing = 0.1, domain = { min = {0, 0}, max = {1, 1} } }\n"
    "sim:load{ 'sph', 'wcsph' }\n"
    "sim:fluid_box{ min = {0.1, 0.1}, max = {0.4, 0.4} }\n"
    "sim:boundary_box{ min = {0, 0}, max = {1, 1}, layers = layers, open_top = top }\n"
    "sim:pipeline{ 'neighbours', 'sph.density', { 'wcsph.pressure', speed_of_sound = c }, 'gravity',\n"
    "  { 'wcsph.viscosity', kind = kind }, 'wcsph.pressure_force', 'integrate' }\n"
    "sim:run{ frames = 1, fps = 1000 }\n";

int fuzz_params(const uint8_t *data, size_t size)
{
    static const char *path;
    if (!path) {
        /* instrumented modules stay mapped: libFuzzer keeps their counters */
        setenv("FLOE_KEEP_MODULES", "1", 1);
        path = as_file((const uint8_t *)scene, sizeof scene - 1, "scene.lua");
        path = strdup(path);
    }
    char text[4096];
    size_t n = size < sizeof text - 1 ? size : sizeof text - 1;
    memcpy(text, data, n);
    text[n] = 0;
    const char *sets[8];
    int nsets = 0;
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line && nsets < 8; line = strtok_r(NULL, "\n", &save))
        sets[nsets++] = line;
    floe_scene_opts o;
    memset(&o, 0, sizeof o);
    o.path = path;
    o.frames = -1;
    o.progress = 0;
    o.write_frames = 0;
    o.threads = 1;
    o.sets = sets;
    o.nsets = nsets;
    o.log = quiet_log; /* the scene's warnings would flood the fuzzer's output */
    return floe_scene_run(&o, fuzz_message, sizeof fuzz_message) == FLOE_OK ? (fuzz_message[0] = 0, 0) : -1;
}

/* The first byte picks the file's extension (assimp chooses its importer
 * from it and from the content); the rest is the file. */
int fuzz_mesh(const uint8_t *data, size_t size)
{
    static const char *const names[] = {"mesh.obj", "mesh.stl", "mesh.ply", "mesh.dae", "mesh.off",
                                        "height.png"};
    const char *name = names[size ? data[0] % 5 : 0];
    const char *path = as_file(size ? data + 1 : data, size ? size - 1 : 0, name);
    floe_mesh_def def = floe_mesh_default_def();
    def.file = path;
    def.max_triangles = 200000; /* a fuzz input may claim millions */
    fuzz_message[0] = 0;
    floe_mesh *m = floe_mesh_load(&def, fuzz_message, sizeof fuzz_message);
    if (!m) {
        if (!fuzz_message[0])
            snprintf(fuzz_message, sizeof fuzz_message, "%s: refused without a reason", path);
        return -1;
    }
    /* touch every vertex and index: ASan checks the lengths, and every
     * index must name a vertex */
    volatile float sink = 0;
    for (uint32_t i = 0; i < 3 * m->nverts; i++)
        sink += m->x[i];
    for (uint32_t i = 0; i < 3 * m->ntris; i++)
        if (m->tri[i] >= m->nverts)
            abort();
    (void)sink;
    char buf[256];
    floe_mesh_describe(m, buf, sizeof buf);
    (void)floe_mesh_is_closed(m);
    floe_mesh_destroy(m);
    return 0;
}

int fuzz_heightmap(const uint8_t *data, size_t size)
{
    const char *path = as_file(data, size, "height.png");
    uint16_t *px = NULL;
    uint32_t w = 0, h = 0;
    fuzz_message[0] = 0;
    if (hm_read_png16(path, &px, &w, &h, fuzz_message, sizeof fuzz_message) != 0) {
        free(px);
        if (!fuzz_message[0])
            snprintf(fuzz_message, sizeof fuzz_message, "%s: refused without a reason", path);
        return -1;
    }
    volatile uint32_t sink = 0; /* touch every sample: ASan checks w x h */
    for (size_t i = 0; i < (size_t)w * h; i++)
        sink += px[i];
    (void)sink;
    free(px);
    return 0;
}
