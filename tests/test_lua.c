/* Lua scenes: floe_scene_run, the floe module, the sandbox. Each test writes
 * a scene into a fresh temp folder and checks the error text (file:line and
 * what was wrong) or what the scene produced. */
#include "scene_fixture.h"

#include <floe/floe.h>

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ERRLEN 8192

static char tmpdir[256], outdir[300], scene_path[300];
static char err[ERRLEN];

static void setup(void)
{
    setenv("FLOE_MODULE_PATH", FLOE_TEST_BUILD_ROOT "/modules", 1);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/floe_test_lua.XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir), "mkdtemp: %s", strerror(errno));
    snprintf(outdir, sizeof outdir, "%s/out", tmpdir);
    snprintf(scene_path, sizeof scene_path, "%s/scene.lua", tmpdir);
    err[0] = '\0';
}

static void teardown(void) { sc_rm_tree(tmpdir); }

TestSuite(lua, .init = setup, .fini = teardown);

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
}

/* Whole file into buf ("" when missing). */
static const char *read_file(const char *path, char *buf, size_t len)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return buf;
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static floe_scene_opts opts(void)
{
    floe_scene_opts o = sc_opts();
    o.out_dir = outdir;
    return o;
}

/* Writes the scene (printf format; %s are folders the test passes) and runs it. */
static int run_scene(floe_scene_opts *o, const char *fmt, ...)
{
    char text[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    write_file(scene_path, text);
    o->path = scene_path;
    return floe_scene_run(o, err, sizeof err);
}

static void expect_error(const char *a, const char *b)
{
    cr_expect(strstr(err, a) != NULL, "error should contain \"%s\", got:\n%s", a, err);
    if (b)
        cr_expect(strstr(err, b) != NULL, "error should contain \"%s\", got:\n%s", b, err);
}

#define HEAD "local floe = require 'floe'\n"
#define SIM "local sim = floe.sim{ dim = 3, spacing = 0.1, domain = { min = {-1, -1, -1}, max = {1, 1, 1} } }\n"

/* ---- errors name the file and line --------------------------------------- */

Test(lua, syntax_error_names_line)
{
    floe_scene_opts o = opts();
    int rc = run_scene(&o, HEAD "local x = 1\nlocal y = = 2\n");
    cr_assert_eq(rc, FLOE_ERR_ARG);
    expect_error("scene.lua:3:", NULL);
}

Test(lua, unknown_stage_names_line_and_stage)
{
    floe_scene_opts o = opts();
    int rc = run_scene(&o, HEAD SIM "sim:fluid_box{ min = {0, 0, 0}, max = {0.2, 0.2, 0.2} }\n"
                                    "sim:pipeline{ 'neighbours', 'no_such_stage', 'integrate' }\n");
    cr_assert_eq(rc, FLOE_ERR_ARG);
    expect_error("scene.lua:4:", "no_such_stage");
    expect_error("entry 2", "stack traceback");
}

Test(lua, unknown_parameter)
{
    floe_scene_opts o = opts();
    int rc = run_scene(&o, HEAD SIM "\nsim:pipeline{ 'gravity', { 'neighbours', bogus_param = 3 } }\n");
    cr_assert_eq(rc, FLOE_ERR_ARG);
    expect_error("scene.lua:4:", "bogus_param");
    expect_error("entry 2", "neighbours");
}

Test(lua, wrong_parameter_type)
{
    floe_scene_opts o = opts();
    int rc = run_scene(&o, HEAD SIM "sim:pipeline{ { 'neighbours', reorder_every = 'often' } }\n");
    cr_assert_eq(rc, FLOE_ERR_ARG);
    expect_error("scene.lua:3:", "reorder_every");
    expect_error("must be", NULL);
}

Test(lua, out_of_range_parameter)
{
    floe_scene_opts o = opts();
    int rc = run_scene(&o, HEAD SIM "sim:load{ 'sph', 'wcsph' }\n"
                                    "sim:pipeline{ 'neighbours', 'sph.density', { 'wcsph.pressure', gamma = 50 } }\n");
    cr_assert_eq(rc, FLOE_ERR_ARG);
    expect_error("scene.lua:4:", "gamma");
    expect_error("out of range", "wcsph.pressure");
}

Test(lua, failed_pipeline_keeps_previous_one)
{
    floe_scene_opts o = opts();
    o.write_frames = 0;
    mkdir(outdir, 0755);
    int rc = run_scene(&o, HEAD SIM "sim:pipeline{ 'neighbours', 'gravity' }\n"
                                    "local ok, msg = pcall(sim.pipeline, sim, { 'integrate', 'nope' })\n"
                                    "assert(not ok and msg:find('nope'), msg)\n"
                                    "sim:fluid_box{ min = {0, 0, 0}, max = {0.2, 0.2, 0.2} }\n"
                                    "local r = sim:run{ frames = 1, dt = 0.01 }\n"
                                    "local f = assert(io.open('%s/stages.txt', 'w'))\n"
                                    "f:write(floe.version, ' ', tostring(r.stages.gravity ~= nil), ' ',\n"
                                    "  tostring(r.stages.integrate ~= nil))\nf:close()\n",
                           outdir);
    cr_assert_eq(rc, FLOE_OK, "%s", err);
    char buf[256], path[512];
    snprintf(path, sizeof path, "%s/stages.txt", outdir);
    cr_expect_str_eq(read_file(path, buf, sizeof buf), FLOE_VERSION " true false");
}

Test(lua, unknown_key_in_sim)
{
    floe_scene_opts o = opts();
    int rc = run_scene(&o, HEAD "\nlocal sim = floe.sim{ dim = 3, spacing = 0.1, gravty = {0, -9.81, 0} }\n");
    cr_assert_eq(rc, FLOE_ERR_ARG);
    expect_error("scene.lua:3:", "unknown key 'gravty'");
    expect_error("accepted: dim, spacing", NULL);
}

Test(lua, bad_values_in_sim)
{
    floe_scene_opts o = opts();
    cr_assert_eq(run_scene(&o, HEAD "floe.sim{ dim = 4, spacing = 0.1 }\n"), FLOE_ERR_ARG);
    expect_error("scene.lua:2:", "'dim' = 4 is out of range [2, 3]");
    cr_assert_eq(run_scene(&o, HEAD "floe.sim{ spacing = 0.1, gravity = {0, -9.81} }\n"), FLOE_ERR_ARG);
    expect_error("scene.lua:2:", "'gravity' must have 3 entries");
    cr_assert_eq(run_scene(&o, HEAD "floe.sim{ spacing = 0.1, radius = 0.05 }\n"), FLOE_ERR_ARG);
    expect_error("exactly one of 'spacing' and 'radius'", NULL);
    cr_assert_eq(run_scene(&o, HEAD "floe.sim{ dim = 2, radius = 0.05, gravity = {0, -1} }\n"
                               "local s = floe.sim{ spacing = 'x' }\n"), FLOE_ERR_ARG);
    expect_error("scene.lua:3:", "'spacing' must be a number (got string)");
}

Test(lua, unknown_module_named)
{
    floe_scene_opts o = opts();
    int rc = run_scene(&o, HEAD SIM "sim:load{ 'wcsph', 'no_such_module' }\n");
    cr_assert_eq(rc, FLOE_ERR_ARG);
    expect_error("scene.lua:3:", "no_such_module");
}

Test(lua, fluid_box_checks_before_effect)
{
    floe_scene_opts o = opts();
    int rc = run_scene(&o, HEAD SIM
                       "local ok, msg = pcall(sim.fluid_box, sim, { min = {0, 0, 0}, max = {0.2, 0.2, 0.2}, colour = 1 })\n"
                       "assert(not ok and msg:find(\"unknown key 'colour'\"), msg)\n"
                       "assert(not pcall(sim.count, sim, 'fluid'), 'the set must not exist')\n"
                       "assert(sim:fluid_box{ min = {0, 0, 0}, max = {0.2, 0.2, 0.2} } == 8)\n"
                       "sim:fluid_box{ min = {0.5, 0, 0}, max = {0.7, 0.2, 0.2}, density = 500 }\n");
    cr_assert_eq(rc, FLOE_ERR_ARG);
    expect_error("scene.lua:7:", "set 'fluid' has density 1000.0, not 500.0");
}

/* ---- the sandbox ----------------------------------------------------------- */

Test(lua, sandbox_refuses_os_execute)
{
    floe_scene_opts o = opts();
    int rc = run_scene(&o, "local x = 1\nos.execute('true')\n");
    cr_assert_eq(rc, FLOE_ERR_ARG);
    expect_error("scene.lua:2:", "sandbox: os.execute is not allowed in scenes (run with --unsafe to allow)");
    o.unsafe = 1;
    rc = run_scene(&o, "assert(type(os.execute) == 'function')\nassert(os.execute() ~= nil)\n");
    cr_assert_eq(rc, FLOE_OK, "%s", err);
}

Test(lua, sandbox_refuses_io_popen)
{
    floe_scene_opts o = opts();
    int rc = run_scene(&o, "local f = io.popen('echo hi')\n");
    cr_assert_eq(rc, FLOE_ERR_ARG);
    expect_error("scene.lua:1:", "sandbox: io.popen is not allowed");
    o.unsafe = 1;
    rc = run_scene(&o, "local f = io.popen('echo hi')\nlocal s = f:read('a')\nf:close()\n"
                       "assert(s == 'hi\\n', s)\n");
    cr_assert_eq(rc, FLOE_OK, "%s", err);
}

Test(lua, sandbox_writes_only_under_output_root)
{
    floe_scene_opts o = opts();
    char buf[256], path[512];
    mkdir(outdir, 0755);
    /* inside the root: fine */
    int rc = run_scene(&o, "local f = assert(io.open('%s/inside.txt', 'w'))\nf:write('in')\nf:close()\n", outdir);
    cr_assert_eq(rc, FLOE_OK, "%s", err);
    snprintf(path, sizeof path, "%s/inside.txt", outdir);
    cr_expect_str_eq(read_file(path, buf, sizeof buf), "in");
    o.force = 1; /* the root now holds the scene's own file, not a Floe run */
    /* outside, through "..", and with io.output: refused */
    rc = run_scene(&o, "local x\nlocal f = io.open('%s/outside.txt', 'w')\n", tmpdir);
    cr_assert_eq(rc, FLOE_ERR_ARG);
    expect_error("scene.lua:2:", "sandbox: writing to");
    expect_error("outside.txt", "run with --unsafe to allow");
    rc = run_scene(&o, "io.open('%s/../outside.txt', 'a')\n", outdir);
    cr_assert_eq(rc, FLOE_ERR_ARG);
    expect_error("scene.lua:1:", "sandbox: writing to");
    rc = run_scene(&o, "io.output('%s/outside.txt')\n", tmpdir);
    cr_assert_eq(rc, FLOE_ERR_ARG);
    expect_error("scene.lua:1:", "sandbox: writing to");
    snprintf(path, sizeof path, "%s/outside.txt", tmpdir);
    cr_expect(!exists(path));
    /* reading is allowed anywhere */
    rc = run_scene(&o, "local f = assert(io.open('%s', 'r'))\nassert(f:read('l'):find('io.open'))\nf:close()\n",
                   scene_path);
    cr_assert_eq(rc, FLOE_OK, "%s", err);
    /* unsafe: writes anywhere */
    o.unsafe = 1;
    rc = run_scene(&o, "local f = assert(io.open('%s/outside.txt', 'w'))\nf:write('out')\nf:close()\n", tmpdir);
    cr_assert_eq(rc, FLOE_OK, "%s", err);
    cr_expect_str_eq(read_file(path, buf, sizeof buf), "out");
}

Test(lua, sandbox_refuses_binary_chunks_debug_and_c_modules)
{
    floe_scene_opts o = opts();
    int rc = run_scene(&o, "local f = load(string.dump(function() return 1 end))\n");
    cr_assert_eq(rc, FLOE_ERR_ARG);
    expect_error("scene.lua:1:", "sandbox: loading binary chunks is not allowed");
    rc = run_scene(&o, "\nlocal t = debug.getinfo(1)\n");
    cr_assert_eq(rc, FLOE_ERR_ARG);
    expect_error("scene.lua:2:", "sandbox: debug.getinfo is not allowed");
    rc = run_scene(&o, "package.loadlib('libc.so.6', 'abort')\n");
    cr_assert_eq(rc, FLOE_ERR_ARG);
    expect_error("scene.lua:1:", "sandbox: package.loadlib is not allowed");
    /* text chunks, os.getenv and Lua modules still work */
    rc = run_scene(&o, "assert(load('return 1 + 1')() == 2)\nassert(os.getenv('FLOE_MODULE_PATH'))\n"
                       "local util = require 'floe.util'\nlocal lo, hi = util.box({0, 1}, {2, 4})\n"
                       "assert(lo[1] == -1 and lo[2] == -1 and hi[1] == 1 and hi[2] == 3)\n"
                       "assert(util.lerp(2, 4, 0.5) == 3)\n"
                       "local cmin, cmax = util.column(0.1, 2)\nassert(cmax[2] == 0.2 and cmax[3] == 0.1)\n");
    cr_assert_eq(rc, FLOE_OK, "%s", err);
}

/* ---- --set ------------------------------------------------------------------- */

Test(lua, param_picks_up_override)
{
    floe_scene_opts o = opts();
    const char *sets[] = {"count=7", "label=hello", "flag=yes"};
    o.sets = sets;
    o.nsets = 3;
    mkdir(outdir, 0755);
    int rc = run_scene(&o, HEAD "local n = floe.param('count', 3)\n"
                                "local s = floe.param('label', 'a')\n"
                                "local b = floe.param('flag', false)\n"
                                "local d = floe.param('absent', 0.5)\n"
                                "local f = assert(io.open('%s/param.txt', 'w'))\n"
                                "f:write(n + 1, ' ', s, ' ', tostring(b), ' ', d)\nf:close()\n",
                       outdir);
    cr_assert_eq(rc, FLOE_OK, "%s", err);
    char buf[256], path[512];
    snprintf(path, sizeof path, "%s/param.txt", outdir);
    cr_expect_str_eq(read_file(path, buf, sizeof buf), "8 hello true 0.5");
    o.force = 1; /* the root now holds the scene's own file, not a Floe run */
    const char *bad[] = {"count=many"};
    o.sets = bad;
    o.nsets = 1;
    rc = run_scene(&o, HEAD "\nlocal n = floe.param('count', 3)\n");
    cr_assert_eq(rc, FLOE_ERR_ARG);
    expect_error("scene.lua:3:", "--set count=many: expected a number");
}

Test(lua, unused_set_key_is_error)
{
    floe_scene_opts o = opts();
    const char *sets[] = {"colour=red"};
    o.sets = sets;
    o.nsets = 1;
    int rc = run_scene(&o, HEAD "local n = floe.param('count', 3)\n");
    cr_assert_eq(rc, FLOE_ERR_ARG);
    expect_error("--set colour", "not used by the scene");
}

Test(lua, set_reaches_stage_parameter)
{
    floe_scene_opts o = opts();
    floe_run_summary sum;
    const char *sets[] = {"neighbours.reorder_every=5"};
    o.sets = sets;
    o.nsets = 1;
    o.summary = &sum;
    o.write_frames = 0;
    const char *scene = HEAD SIM "sim:fluid_box{ min = {0, 0, 0}, max = {0.2, 0.2, 0.2} }\n"
                                 "sim:pipeline{ 'neighbours', 'gravity', 'integrate' }\n"
                                 "sim:run{ frames = 1, dt = 0.01 }\n";
    int rc = run_scene(&o, "%s", scene);
    cr_assert_eq(rc, FLOE_OK, "%s", err);
    cr_expect_eq(sum.frames, 1);
    const char *bad[] = {"gravity.strength=2"};
    o.sets = bad;
    rc = run_scene(&o, "%s", scene);
    cr_assert_eq(rc, FLOE_ERR_ARG);
    expect_error("scene.lua:5:", "--set gravity.strength");
}

/* ---- Lua stages and runs ------------------------------------------------------ */

Test(lua, lua_stage_runs_and_sets_attributes)
{
    floe_scene_opts o = opts();
    mkdir(outdir, 0755);
    int rc = run_scene(&o, HEAD SIM
                       "sim:fluid_box{ min = {0, 0, 0}, max = {0.2, 0.2, 0.2} }\n"
                       "local function ysum()\n"
                       "  local y = 0\n"
                       "  for i = 1, sim:count('fluid') do y = y + select(2, sim:get('fluid', 'x', i)) end\n"
                       "  return y\n"
                       "end\n"
                       "local calls, y0 = 0, ysum()\n"
                       "sim:pipeline{ 'neighbours', 'gravity',\n"
                       "  function(s, dt)\n"
                       "    calls = calls + 1\n"
                       "    for i = 1, s:count('fluid') do s:set('fluid', 'a', i, 0, 0, 0) end\n"
                       "  end,\n"
                       "  { 'mark', fn = function(s, dt) s:set('fluid', 'rho', 2, 1234.5) end },\n"
                       "  'integrate' }\n"
                       "local r = sim:run{ frames = 1, dt = 0.01, progress = false }\n"
                       "local f = assert(io.open('%s/stage.txt', 'w'))\n"
                       "f:write(calls, ' ', r.steps, ' ', sim:get('fluid', 'rho', 2), ' ',\n"
                       "  tostring(math.abs(ysum() - y0) < 1e-6), ' ', tostring(r.stages['lua#3'] ~= nil), ' ',\n"
                       "  tostring(r.stages.mark ~= nil), ' ', string.format('%%.2f', sim.time))\n"
                       "f:close()\n",
                       outdir);
    cr_assert_eq(rc, FLOE_OK, "%s", err);
    char buf[256], path[512];
    snprintf(path, sizeof path, "%s/stage.txt", outdir);
    /* 1 frame at 30 fps with dt 0.01: 3 or 4 steps, one call each; no
     * acceleration left, so x stays */
    read_file(path, buf, sizeof buf);
    int calls = 0, steps = 0;
    cr_assert_eq(sscanf(buf, "%d %d", &calls, &steps), 2, "%s", buf);
    cr_expect(calls >= 3 && calls == steps, "%s", buf);
    cr_expect(strstr(buf, " 1234.5 true true true 0.03") != NULL, "%s", buf);
}

/* Moving a wall particle with sim:set between runs: the core re-sorts the
 * static set (its sort is otherwise kept) and recomputes the volumes, so
 * the fluid particle next to it feels it in its density. */
Test(lua, set_x_of_a_wall_particle_is_seen_by_the_search)
{
    floe_scene_opts o = opts();
    mkdir(outdir, 0755);
    int rc = run_scene(&o, HEAD SIM
                       "sim:load{ 'sph', 'wcsph' }\n"
                       "sim:fluid_box{ min = {0, 0, 0}, max = {0.1, 0.1, 0.1} }\n"
                       "assert(sim:count('fluid') == 1)\n"
                       "sim:boundary_box{ min = {-0.8, -0.8, -0.8}, max = {0.8, 0.8, 0.8}, layers = 1 }\n"
                       "sim:pipeline{ 'neighbours', 'sph.density' }\n"
                       "sim:run{ frames = 1, dt = 0.01, progress = false }\n"
                       "local rho1 = sim:get('fluid', 'rho', 1)\n"
                       "local x, y, z = sim:get('fluid', 'x', 1)\n"
                       "sim:set('boundary', 'x', 1, x + 0.08, y, z)\n"
                       "sim:run{ frames = 1, dt = 0.01, progress = false }\n"
                       "local rho2 = sim:get('fluid', 'rho', 1)\n"
                       "local f = assert(io.open('%s/moved.txt', 'w'))\n"
                       "f:write(string.format('%%.9g %%.9g', rho1, rho2))\n"
                       "f:close()\n",
                       outdir);
    cr_assert_eq(rc, FLOE_OK, "%s", err);
    char buf[256], path[512];
    snprintf(path, sizeof path, "%s/moved.txt", outdir);
    read_file(path, buf, sizeof buf);
    double rho1 = 0, rho2 = 0;
    cr_assert_eq(sscanf(buf, "%lf %lf", &rho1, &rho2), 2, "%s", buf);
    /* alone: m W(0) only; with a wall particle 0.8 d away: more */
    cr_expect(rho1 > 0.0, "%s", buf);
    cr_expect(rho2 > rho1 * 1.01, "the moved wall particle is not seen: rho %g -> %g", rho1, rho2);
}

Test(lua, lua_stage_error_names_its_line)
{
    floe_scene_opts o = opts();
    int rc = run_scene(&o, HEAD SIM
                       "sim:fluid_box{ min = {0, 0, 0}, max = {0.2, 0.2, 0.2} }\n"
                       "sim:pipeline{ 'neighbours', function(s, dt)\n"
                       "  error('stage went wrong')\n"
                       "end }\n"
                       "sim:run{ frames = 1 }\n");
    cr_assert_eq(rc, FLOE_ERR, "rc %d: %s", rc, err);
    expect_error("scene.lua:5: stage went wrong", "lua#2");
    expect_error("scene.lua:7:", "sim:run");
}

Test(lua, fluid_box_runs_and_writes_frames)
{
    floe_scene_opts o = opts();
    floe_run_summary sum;
    memset(&sum, 0, sizeof sum);
    o.summary = &sum;
    int rc = run_scene(&o, HEAD SIM
                       "local n = sim:fluid_box{ min = {0, 0, 0}, max = {0.2, 0.3, 0.2}, velocity = {1, 0, 0} }\n"
                       "assert(n == 12 and sim:count('fluid') == 12)\n"
                       "sim:boundary_box{ min = {-0.5, -0.5, -0.5}, max = {0.5, 0.5, 0.5}, layers = 1 }\n"
                       "sim:pipeline{ 'neighbours', 'gravity', 'integrate' }\n"
                       "local frames = 0\n"
                       "sim:on_frame(function(s, st) frames = frames + 1; assert(st.particles == 12) end)\n"
                       "local r = sim:run{ frames = 2, fps = 30, dt = 0.005, out = 'ignored', formats = {'ply', 'vtk'} }\n"
                       "assert(frames == 2 and r.frames == 2 and r.steps >= 12, r.steps)\n"
                       "local vx = sim:get('fluid', 'v', 1)\n"
                       "assert(vx == 1, vx)\n");
    cr_assert_eq(rc, FLOE_OK, "%s", err);
    cr_expect_eq(sum.frames, 2);
    cr_expect(sum.steps >= 12);
    cr_expect(sum.nstages == 3 && strcmp(sum.stage_name[1], "gravity") == 0);
    const char *files[] = {"fluid.0000.ply", "fluid.0001.ply", "fluid.0002.ply", "fluid.0002.vtk",
                           "boundary.0000.ply", "run.yaml"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", outdir, files[i]);
        cr_expect(exists(path), "missing %s", path);
    }
    char buf[8192], path[512];
    snprintf(path, sizeof path, "%s/run.yaml", outdir);
    cr_expect(strstr(read_file(path, buf, sizeof buf), "scene.lua") != NULL, "run.yaml:\n%s", buf);
}

Test(lua, on_frame_false_stops_and_frames_override)
{
    floe_scene_opts o = opts();
    floe_run_summary sum;
    o.summary = &sum;
    o.write_frames = 0;
    const char *scene = HEAD SIM "sim:fluid_box{ min = {0, 0, 0}, max = {0.2, 0.2, 0.2} }\n"
                                 "sim:pipeline{ 'neighbours', 'gravity', 'integrate' }\n"
                                 "sim:on_frame(function(s, st) return st.frame < 3 end)\n"
                                 "sim:run{ frames = 10, dt = 0.01 }\n";
    cr_assert_eq(run_scene(&o, "%s", scene), FLOE_OK, "%s", err);
    cr_expect_eq(sum.frames, 3);
    o.frames = 1;
    o.force = 1; /* replaces the first run's record */
    cr_assert_eq(run_scene(&o, "%s", scene), FLOE_OK, "%s", err);
    cr_expect_eq(sum.frames, 1);
}

Test(lua, blowup_status_is_returned)
{
    floe_scene_opts o = opts();
    o.write_frames = 0;
    int rc = run_scene(&o, HEAD "local sim = floe.sim{ spacing = 0.1, gravity = {0, -1000, 0},\n"
                                "  domain = { min = {-0.5, -0.5, -0.5}, max = {0.5, 0.5, 0.5}, outside = 'error' } }\n"
                                "sim:fluid_box{ min = {0, 0, 0}, max = {0.2, 0.2, 0.2} }\n"
                                "sim:pipeline{ 'neighbours', 'gravity', 'integrate' }\n"
                                "sim:run{ frames = 30, dt = 0.01 }\n");
    cr_assert_eq(rc, FLOE_ERR_BLOWUP, "rc %d: %s", rc, err);
    expect_error("scene.lua:6:", "left the simulation domain");
}

Test(lua, preset_from_yaml)
{
    floe_scene_opts o = opts();
    char path[512];
    snprintf(path, sizeof path, "%s/tank.yaml", tmpdir);
    write_file(path, "size: [1, 0.5, 0.25]\nfluid:\n  density: 997\n  name: water\n");
    snprintf(path, sizeof path, "%s/broken.yaml", tmpdir);
    write_file(path, "a: 1\nb: [1, 2\n");
    mkdir(outdir, 0755);
    int rc = run_scene(&o, HEAD "local p = floe.preset('tank')\n"
                                "local q = floe.preset('tank.yaml')\n"
                                "local f = assert(io.open('%s/preset.txt', 'w'))\n"
                                "f:write(p.size[2], ' ', p.fluid.density, ' ', q.fluid.name)\nf:close()\n",
                       outdir);
    cr_assert_eq(rc, FLOE_OK, "%s", err);
    char buf[256];
    snprintf(path, sizeof path, "%s/preset.txt", outdir);
    cr_expect_str_eq(read_file(path, buf, sizeof buf), "0.5 997 water");
    o.force = 1; /* the root now holds the scene's own file, not a Floe run */
    rc = run_scene(&o, HEAD "\nfloe.preset('broken')\n");
    cr_assert_eq(rc, FLOE_ERR_ARG);
    expect_error("scene.lua:3:", "broken.yaml:");
    rc = run_scene(&o, HEAD "floe.preset('no_such_preset')\n");
    cr_assert_eq(rc, FLOE_ERR_ARG);
    expect_error("scene.lua:2:", "no preset 'no_such_preset'");
}

Test(lua, missing_scene_file)
{
    floe_scene_opts o = opts();
    o.path = "/nonexistent/floe/scene.lua";
    cr_assert_eq(floe_scene_run(&o, err, sizeof err), FLOE_ERR_IO);
    expect_error("/nonexistent/floe/scene.lua", "cannot open");
}

Test(lua, sandbox_run_output_under_root)
{
    floe_scene_opts o = opts();
    o.out_dir = NULL; /* root = ./out of the working directory */
    int rc = run_scene(&o, HEAD SIM "sim:fluid_box{ min = {0, 0, 0}, max = {0.2, 0.2, 0.2} }\n"
                                    "sim:pipeline{ 'neighbours', 'gravity', 'integrate' }\n"
                                    "sim:run{ frames = 1, out = '%s/frames' }\n",
                       tmpdir);
    cr_assert_eq(rc, FLOE_ERR_ARG);
    expect_error("scene.lua:5:", "sandbox: sim:run writing frames to");
    char path[512];
    snprintf(path, sizeof path, "%s/frames", tmpdir);
    cr_expect(!exists(path));
}

Test(lua, sim_2d_info_and_close)
{
    floe_scene_opts o = opts();
    o.write_frames = 0;
    int rc = run_scene(&o, HEAD
                       "local keep\n"
                       "do\n"
                       "  local sim <close> = floe.sim{ dim = 2, radius = 0.05, gravity = {0, -9.81},\n"
                       "    domain = { min = {-1, -1}, max = {1, 1} } }\n"
                       "  keep = sim\n"
                       "  local info = sim:info()\n"
                       "  assert(info.dim == 2 and math.abs(info.spacing - 0.1) < 1e-6, info.spacing)\n"
                       "  assert(math.abs(info.support - 0.2) < 1e-6 and info.gravity[3] == 0)\n"
                       "  assert(sim:fluid_box{ min = {0, 0}, max = {0.3, 0.2} } == 6)\n"
                       "  assert(sim:fluid_sphere{ center = {-0.5, 0.5}, radius = 0.1, set = 'drop' } > 0)\n"
                       "  assert(sim:boundary_box{ min = {-0.6, -0.6}, max = {0.6, 0.6}, open_top = true } > 0)\n"
                       "  sim:pipeline{ 'neighbours', 'gravity', 'integrate' }\n"
                       "  local r = sim:run{ frames = 1, dt = 0.01 }\n"
                       "  assert(r.frames == 1 and sim.time > 0.02, sim.time)\n"
                       "  local x, y, z = sim:get('fluid', 'v', 1)\n"
                       "  assert(y < 0 and z == 0, y)\n"
                       "  floe.log('2D run done at t =', sim.time)\n"
                       "end\n"
                       "local ok, msg = pcall(keep.count, keep, 'fluid')\n"
                       "assert(not ok and msg:find('the sim is closed'), msg)\n"
                       "assert(tostring(keep) == 'floe.sim (closed)')\n");
    cr_assert_eq(rc, FLOE_OK, "%s", err);
}

/* sim:reduce in one process returns its numbers as they are; a bad
 * operation or no number is an error naming the line */
Test(lua, reduce_in_one_process_returns_the_numbers)
{
    floe_scene_opts o = opts();
    int rc = run_scene(&o, HEAD SIM "sim:fluid_box{ min = {0, 0, 0}, max = {0.2, 0.2, 0.2} }\n"
                                    "local a, b, c = sim:reduce('sum', sim:count 'fluid', 2.5, -1)\n"
                                    "assert(a == sim:count 'fluid' and b == 2.5 and c == -1, 'sum')\n"
                                    "assert(sim:reduce('max', 3) == 3 and sim:reduce('min', 4) == 4, 'max, min')\n");
    cr_assert_eq(rc, FLOE_OK, "%s", err);
    rc = run_scene(&o, HEAD SIM "sim:reduce('mean', 1)\n");
    cr_assert_eq(rc, FLOE_ERR_ARG);
    expect_error("scene.lua:3:", "invalid option 'mean'");
    rc = run_scene(&o, HEAD SIM "sim:reduce('sum')\n");
    cr_assert_eq(rc, FLOE_ERR_ARG);
    expect_error("scene.lua:3:", "1 to 64 numbers");
}
