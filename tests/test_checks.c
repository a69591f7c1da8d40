/* Scenes that are wrong are told so: the pipeline dataflow check, the
 * domain's outside rule, input checks at the scene line, "did you mean",
 * the command line's help, scripts/compare_frames.py on bad frames. Each
 * test writes a scene into a fresh temp folder, runs it and checks the
 * error text (file:line and what was wrong) or the warnings on stderr. */
#include <criterion/criterion.h>

#include <floe/floe.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[256], outdir[300], scene_path[300], log_path[300];
static char err[8192], log_text[65536];

static void setup(void)
{
    setenv("FLOE_MODULE_PATH", FLOE_TEST_BUILD_ROOT "/modules", 1);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/floe_test_checks.XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir), "mkdtemp: %s", strerror(errno));
    snprintf(outdir, sizeof outdir, "%s/out", tmpdir);
    snprintf(scene_path, sizeof scene_path, "%s/scene.lua", tmpdir);
    snprintf(log_path, sizeof log_path, "%s/stderr.txt", tmpdir);
    err[0] = log_text[0] = '\0';
}

static void teardown(void)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    cr_expect_eq(system(cmd), 0);
}

TestSuite(checks, .init = setup, .fini = teardown);

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
}

static void read_into(const char *path, char *buf, size_t len)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
}

/* Runs the scene text with stderr into log_text; the status. */
static int run_text(int frames, const char *text)
{
    write_file(scene_path, text);
    floe_scene_opts o;
    memset(&o, 0, sizeof o);
    o.path = scene_path;
    o.frames = frames;
    o.progress = 0;
    o.write_frames = 1;
    o.out_dir = outdir;
    o.force = 1; /* every scene writes into the same folder */
    fflush(stderr);
    int saved = dup(2), fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cr_assert(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    close(fd);
    int rc = floe_scene_run(&o, err, sizeof err);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    read_into(log_path, log_text, sizeof log_text);
    return rc;
}

static int count_of(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)); p += strlen(what))
        n++;
    return n;
}

#define expect_in(hay, needle) cr_expect(strstr((hay), (needle)) != NULL, "expected \"%s\" in:\n%s", (needle), (hay))

/* A 2D tank with water; line 6 is the pipeline, line 7 the run. */
#define TANK                                                                                                  \
    "local floe = require 'floe'\n"                                                                           \
    "local sim = floe.sim{ dim = 2, spacing = 0.05, domain = { min = {0, 0}, max = {1, 1} } }\n"              \
    "sim:load{ 'sph', 'wcsph', 'iisph' }\n"                                                                   \
    "sim:fluid_box{ min = {0.1, 0.1}, max = {0.4, 0.4} }\n"                                                   \
    "sim:boundary_box{ min = {0, 0}, max = {1, 1} }\n"

static int pipeline(const char *stages)
{
    char text[4096];
    snprintf(text, sizeof text, TANK "sim:pipeline{ %s }\nsim:run{ frames = 1, fps = 100 }\n", stages);
    return run_text(-1, text);
}

/* ---- the pipeline as a dataflow -------------------------------------------- */

Test(checks, pressure_without_density_is_an_error)
{
    cr_assert_eq(pipeline("'neighbours', 'wcsph.pressure', 'gravity', 'wcsph.pressure_force', 'integrate'"),
                 FLOE_ERR_ARG);
    expect_in(err, "scene.lua:6: sim:pipeline: entry 2 ('wcsph.pressure'): reads 'rho'");
    expect_in(err, "add 'sph.density' before it");
}

Test(checks, gravity_after_the_pressure_force_is_an_error)
{
    cr_assert_eq(pipeline("'neighbours', 'sph.density', 'wcsph.pressure', 'wcsph.pressure_force', 'gravity', "
                          "'integrate'"),
                 FLOE_ERR_ARG);
    expect_in(err, "scene.lua:6: sim:pipeline: entry 5 ('gravity'): sets 'a'");
    expect_in(err, "entry 4 ('wcsph.pressure_force') wrote it earlier in the step");
}

Test(checks, gravity_after_the_iisph_solve_is_an_error)
{
    cr_assert_eq(pipeline("'neighbours', 'sph.density', 'iisph.solve', 'gravity', 'integrate'"), FLOE_ERR_ARG);
    expect_in(err, "entry 4 ('gravity'): sets 'a'");
    expect_in(err, "entry 3 ('iisph.solve') wrote it");
}

Test(checks, forces_without_gravity_add_up_an_error)
{
    cr_assert_eq(pipeline("'neighbours', 'sph.density', 'wcsph.pressure', 'wcsph.pressure_force', 'integrate'"),
                 FLOE_ERR_ARG);
    expect_in(err, "entry 4 ('wcsph.pressure_force'): reads 'a' of the fluid sets, which no stage of the step starts");
}

Test(checks, integrating_twice_is_an_error)
{
    cr_assert_eq(pipeline("'neighbours', 'sph.density', 'wcsph.pressure', 'gravity', 'wcsph.pressure_force', "
                          "'integrate', 'integrate'"),
                 FLOE_ERR_ARG);
    expect_in(err, "entry 7 ('integrate'): moves the fluid too");
}

Test(checks, a_refused_pipeline_keeps_the_previous_one)
{
    cr_assert_eq(run_text(-1, TANK "sim:pipeline{ 'neighbours', 'gravity', 'integrate' }\n"
                                   "local ok, e = pcall(sim.pipeline, sim, { 'neighbours', 'wcsph.pressure', 'integrate' })\n"
                                   "assert(not ok and e:find('reads .rho.'))\n"
                                   "sim:run{ frames = 1 }\n"),
                 FLOE_OK, "%s", err);
}

Test(checks, suspicious_pipelines_are_warned_about_at_their_line)
{
    /* density after the pressure: the previous step's density */
    cr_assert_eq(pipeline("'neighbours', 'wcsph.pressure', 'sph.density', 'gravity', 'wcsph.pressure_force', "
                          "'integrate'"),
                 FLOE_OK, "%s", err);
    expect_in(log_text, "warning: ");
    expect_in(log_text, "scene.lua:6: sim:pipeline: entry 2 ('wcsph.pressure'): reads 'rho' of the fluid "
                        "sets before entry 3 ('sph.density') writes it");
    /* never integrated */
    cr_assert_eq(pipeline("'neighbours', 'sph.density', 'wcsph.pressure', 'gravity', 'wcsph.pressure_force'"),
                 FLOE_OK, "%s", err);
    expect_in(log_text, "no stage of the pipeline moves the fluid");
    /* a stage listed twice, two pressure solvers */
    cr_assert_eq(pipeline("'neighbours', 'sph.density', 'sph.density', 'wcsph.pressure', 'gravity', "
                          "'iisph.solve', 'wcsph.pressure_force', 'integrate'"),
                 FLOE_OK, "%s", err);
    expect_in(log_text, "entry 3 ('sph.density'): the same stage with the same parameters as entry 2");
    expect_in(log_text, "entry 6 ('iisph.solve'): writes 'p' of the fluid sets, which entry 4 ('wcsph.pressure')");
    /* warned once, at sim:pipeline, not again at sim:run */
    cr_expect_eq(count_of(log_text, "warning"), 2, "%s", log_text);
}

Test(checks, the_c_api_counts_the_warnings)
{
    floe_sim_def d = floe_sim_default_def();
    d.spacing = 0.1f;
    char e[512];
    floe_ctx *ctx = floe_ctx_create(&d, e, sizeof e);
    cr_assert_not_null(ctx, "%s", e);
    cr_assert_eq(floe_module_load(ctx, "wcsph"), FLOE_OK, "%s", floe_ctx_error(ctx));
    cr_assert_eq(floe_module_load(ctx, "sph"), FLOE_OK, "%s", floe_ctx_error(ctx));
    const char *ok[] = {"neighbours", "sph.density", "wcsph.pressure", "gravity", "wcsph.pressure_force", "integrate"};
    for (int i = 0; i < 6; i++)
        cr_assert_eq(floe_pipeline_add(ctx, ok[i], NULL, 0), FLOE_OK);
    int warnings = -1;
    cr_expect_eq(floe_pipeline_check(ctx, NULL, &warnings), FLOE_OK, "%s", floe_ctx_error(ctx));
    cr_expect_eq(warnings, 0);
    cr_assert_eq(floe_pipeline_add(ctx, "sph.density", NULL, 0), FLOE_OK); /* after integrate: rho of the old x */
    cr_expect_eq(floe_pipeline_check(ctx, "here: ", &warnings), FLOE_OK, "%s", floe_ctx_error(ctx));
    cr_expect_eq(warnings, 1);
    floe_ctx_destroy(ctx);
}

/* Every scene of the repository checks clean: no error, no warning. */
Test(checks, every_scene_checks_clean, .timeout = FLOE_TIMEOUT(600))
{
    static const char *const scenes[] = {
        "dam_break", "dam_break_2d", "droplet", "flip_dam_break_2d", "flip_obstacles", "flip_vs_wcsph_2d",
        "hydrostatic_tank", "iisph_dam_break", "shallow_water", "viscous_drop_on_wall", "bench/dam_break_59k",
        "bench/flip_2d_vs_wcsph", "bench/iisph_dam_break_59k"};
    for (size_t i = 0; i < sizeof scenes / sizeof scenes[0]; i++) {
        char path[512], text[1 << 16];
        snprintf(path, sizeof path, "%s/scenes/%s.lua", FLOE_TEST_SOURCE_ROOT, scenes[i]);
        read_into(path, text, sizeof text);
        cr_assert(text[0], "cannot read %s", path);
        int rc = run_text(0, text);
        cr_expect_eq(rc, FLOE_OK, "%s: %s", scenes[i], err);
        cr_expect_eq(count_of(log_text, "warning"), 0, "%s:\n%s", scenes[i], log_text);
    }
}

/* ---- the domain's outside rule -------------------------------------------- */

static int escape(const char *rule)
{
    char text[2048];
    snprintf(text, sizeof text,
             "local floe = require 'floe'\n"
             "local sim = floe.sim{ dim = 2, spacing = 0.05, gravity = {0, 0}, domain = { min = {0, 0}, max = {1, 1}%s } }\n"
             "sim:fluid_box{ min = {0.1, 0.1}, max = {0.3, 0.3}, velocity = {2, 0} }\n"
             "sim:fluid_box{ min = {0.5, 0.5}, max = {0.7, 0.7} }\n"
             "sim:pipeline{ 'gravity', 'integrate' }\n"
             "sim:run{ frames = 15, fps = 30, dt = 0.01 }\n"
             "floe.log('left', sim:count 'fluid')\n",
             rule);
    return run_text(-1, text);
}

/* The run record of the last run into outdir. */
static const char *record(void)
{
    static char rec[65536];
    char path[400];
    snprintf(path, sizeof path, "%s/run.yaml", outdir);
    read_into(path, rec, sizeof rec);
    return rec;
}

Test(checks, particles_leaving_the_domain_are_deleted_by_default)
{
    cr_assert_eq(escape(""), FLOE_OK, "%s", err);
    expect_in(log_text, "16 particles left the domain and were deleted");
    expect_in(log_text, "[scene] left 16");
    expect_in(record(), "outside: {rule: delete, deleted: 16}");
    expect_in(record(), "status: finished");
}

Test(checks, outside_error_stops_the_run)
{
    cr_assert_eq(escape(", outside = 'error'"), FLOE_ERR_BLOWUP, "%s", err);
    expect_in(err, "left the simulation domain");
}

Test(checks, outside_clamp_keeps_every_particle_inside)
{
    cr_assert_eq(escape(", outside = 'clamp'"), FLOE_OK, "%s", err);
    expect_in(log_text, "[scene] left 32");
    expect_in(log_text, "16 particles left the domain and were clamped");
    expect_in(record(), "outside: {rule: clamp, clamped: 16}");
}

Test(checks, an_unknown_outside_rule_is_refused)
{
    cr_assert_eq(escape(", outside = 'bounce'"), FLOE_ERR_ARG);
    expect_in(err, "scene.lua:2: floe.sim domain: 'outside' = \"bounce\" is not one of delete, error, clamp");
}

/* ---- input checks at the scene line ---------------------------------------- */

#define SIM2 "local floe = require 'floe'\n" \
             "local sim = floe.sim{ dim = 2, spacing = 0.05, domain = { min = {0, 0}, max = {1, 1} } }\n"

Test(checks, fluid_outside_the_domain_is_refused_at_its_line)
{
    cr_assert_eq(run_text(-1, SIM2 "sim:fluid_box{ min = {0.5, 0.5}, max = {1.2, 0.8} }\n"), FLOE_ERR_ARG);
    expect_in(err, "scene.lua:3: sim:fluid_box: fluid_box: [0.5, 1.2] on x is partly outside the domain [0, 1]");
    cr_assert_eq(run_text(-1, SIM2 "sim:fluid_box{ min = {2, 0}, max = {3, 1} }\n"), FLOE_ERR_ARG);
    expect_in(err, "is outside the domain");
    cr_assert_eq(run_text(-1, SIM2 "sim:fluid_sphere{ centre = {0.1, 0.5}, radius = 0.2 }\n"), FLOE_ERR_ARG);
    expect_in(err, "scene.lua:3: sim:fluid_sphere: fluid_sphere:");
}

Test(checks, a_box_thinner_than_the_spacing_warns)
{
    cr_assert_eq(run_text(-1, SIM2 "local n = sim:fluid_box{ min = {0.1, 0.1}, max = {0.5, 0.11} }\nassert(n == 0)\n"),
                 FLOE_OK, "%s", err);
    expect_in(log_text, "warning: ");
    expect_in(log_text, "scene.lua:3: sim:fluid_box: no particle made");
}

Test(checks, floats_beyond_float_range_are_refused)
{
    cr_assert_eq(run_text(-1, SIM2 "sim:fluid_box{ min = {0.1, 0.1}, max = {0.5, 0.5}, velocity = {1e300, 0} }\n"),
                 FLOE_ERR_ARG);
    expect_in(err, "scene.lua:3: sim:fluid_box: 'velocity' must be finite");
}

Test(checks, end_time_zero_and_a_dt_longer_than_a_frame_are_errors)
{
    cr_assert_eq(run_text(-1, SIM2 "sim:pipeline{ 'gravity', 'integrate' }\nsim:run{ end_time = 0 }\n"), FLOE_ERR_ARG);
    expect_in(err, "scene.lua:4: sim:run: 'end_time'");
    cr_assert_eq(run_text(-1, SIM2 "sim:pipeline{ 'gravity', 'integrate' }\nsim:run{ frames = 2, fps = 30, dt = 0.05 }\n"),
                 FLOE_ERR_ARG);
    expect_in(err, "scene.lua:4: sim:run: run: the fixed dt = 0.05 s is longer than a frame");
}

/* ---- did you mean ---------------------------------------------------------- */

Test(checks, misspelt_names_get_the_nearest)
{
    cr_assert_eq(pipeline("'neighbours', 'wcsph.densty'"), FLOE_ERR_ARG);
    expect_in(err, "unknown stage 'wcsph.densty' (did you mean 'sph.density'?)");
    cr_assert_eq(pipeline("'neighbours', 'density'"), FLOE_ERR_ARG);
    expect_in(err, "(did you mean 'sph.density'?)");
    cr_assert_eq(pipeline("'grvity'"), FLOE_ERR_ARG);
    expect_in(err, "(did you mean 'gravity'?)");
    cr_assert_eq(pipeline("{ 'wcsph.pressure', speed_of_sond = 20 }"), FLOE_ERR_ARG);
    expect_in(err, "unknown parameter 'speed_of_sond' (did you mean 'speed_of_sound'?)");
    cr_assert_eq(run_text(-1, SIM2 "sim:load 'wcsp'\n"), FLOE_ERR_ARG);
    expect_in(err, "module 'wcsp' not found (did you mean 'wcsph'?)");
    cr_assert_eq(run_text(-1, SIM2 "sim:fluid_box{ min = {0.1, 0.1}, max = {0.5, 0.5}, velocty = {1, 0} }\n"),
                 FLOE_ERR_ARG);
    expect_in(err, "unknown key 'velocty' (did you mean 'velocity'?)");
    /* a --set key */
    write_file(scene_path, TANK "sim:pipeline{ 'neighbours', 'sph.density', { 'wcsph.pressure', gamma = 7 }, 'gravity', "
                                "'wcsph.pressure_force', 'integrate' }\nsim:run{ frames = 0 }\n");
    floe_scene_opts o;
    memset(&o, 0, sizeof o);
    const char *sets[] = {"wcsph.pressure.gama=5"};
    o.path = scene_path;
    o.frames = -1;
    o.write_frames = 0;
    o.sets = sets;
    o.nsets = 1;
    cr_assert_eq(floe_scene_run(&o, err, sizeof err), FLOE_ERR_ARG);
    expect_in(err, "(did you mean 'wcsph.pressure.gamma'?)");
    cr_expect_null(floe_nearest_name("xyzzy", (const char *const[]){"density", "pressure"}, 2));
}

Test(checks, a_parameter_of_another_stage_names_that_stage)
{
    cr_assert_eq(pipeline("{ 'wcsph.pressure', boundary_alpha = 0.5 }"), FLOE_ERR_ARG);
    expect_in(err, "unknown parameter 'boundary_alpha' (a parameter of stage 'sph.xsph', 'wcsph.viscosity', not of "
                   "'wcsph.pressure')");
}

/* ---- the command line and scripts ------------------------------------------ */

/* Runs cmd (stdout and stderr into log_text); the exit status. */
static int shell(const char *fmt, ...)
{
    char cmd[2048], full[2400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    snprintf(full, sizeof full, "%s > '%s' 2>&1", cmd, log_path);
    int st = system(full);
    read_into(log_path, log_text, sizeof log_text);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#define FLOE FLOE_TEST_BUILD_ROOT "/core/floe"

Test(checks, every_command_has_help)
{
    static const char *const cmds[] = {"run", "bench", "modules", "devices"};
    for (int i = 0; i < 4; i++) {
        cr_expect_eq(shell(FLOE " %s --help", cmds[i]), 0, "%s: %s", cmds[i], log_text);
        char want[64];
        snprintf(want, sizeof want, "usage: floe %s", cmds[i]);
        expect_in(log_text, want);
    }
    cr_expect_eq(shell(FLOE " rn"), 2);
    expect_in(log_text, "unknown command 'rn' (did you mean 'run'?)");
}

Test(checks, modules_name_shows_one_module)
{
    cr_assert_eq(shell(FLOE " modules hello"), 0, "%s", log_text);
    expect_in(log_text, "stage hello.damp");
    cr_expect_null(strstr(log_text, "wcsph"), "%s", log_text);
    cr_expect_eq(shell(FLOE " modules helo"), 1);
    expect_in(log_text, "no module 'helo' on the search path");
    expect_in(log_text, "(did you mean 'hello'?)");
}

Test(checks, compare_frames_refuses_bad_frames)
{
    /* a good frame: a run's frame 0 */
    cr_assert_eq(run_text(-1, SIM2 "sim:fluid_box{ min = {0.1, 0.1}, max = {0.3, 0.3} }\n"
                                   "sim:pipeline{ 'gravity', 'integrate' }\nsim:run{ frames = 0 }\n"),
                 FLOE_OK, "%s", err);
    char good[400], bad[400], nan[400];
    snprintf(good, sizeof good, "%s/fluid.0000.ply", outdir);
    snprintf(bad, sizeof bad, "%s/bad.ply", tmpdir);
    snprintf(nan, sizeof nan, "%s/nan.ply", tmpdir);
    cr_assert_eq(shell("python3 " FLOE_TEST_SOURCE_ROOT "/scripts/compare_frames.py '%s' '%s' 0.05", good, good), 0,
                 "%s", log_text);
    expect_in(log_text, "16 particles (by index): x rms diff 0 d");
    write_file(bad, "ply\nformat\nend_header\n");
    cr_expect_eq(shell("python3 " FLOE_TEST_SOURCE_ROOT "/scripts/compare_frames.py '%s' '%s' 0.05", bad, good), 2);
    expect_in(log_text, "bad.ply:2: only 'format binary_little_endian 1.0' is read");
    cr_expect_null(strstr(log_text, "Traceback"), "%s", log_text);
    /* the first x of the good frame made NaN */
    cr_assert_eq(shell("python3 -c \"import sys; b = bytearray(open(sys.argv[1], 'rb').read()); "
                       "i = b.index(b'end_header\\n') + 11; b[i:i + 4] = b'\\x00\\x00\\xc0\\x7f'; "
                       "open(sys.argv[2], 'wb').write(b)\" '%s' '%s'", good, nan),
                 0, "%s", log_text);
    cr_expect_eq(shell("python3 " FLOE_TEST_SOURCE_ROOT "/scripts/compare_frames.py '%s' '%s' 0.05", nan, good), 2);
    expect_in(log_text, "particle 0 has a non-finite x (nan)");
    cr_expect_null(strstr(log_text, "rms diff nan"), "%s", log_text);
}
