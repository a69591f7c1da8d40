/* The output root (docs/reliability.md, "The sandbox"): every file a scene,
 * a run or a module writes lies below it. Each test is a way out that used
 * to work: set names with '..', symbolic links below the root, a module's
 * own folder, and roots that are not an output folder; plus what a re-run
 * into a folder does. */
#include "scene_fixture.h"

#include "out_path.h"

TestSuite(sandbox, .init = sc_setup, .fini = sc_teardown);

/* ---- 1. set names become file names -------------------------------------- */

Test(sandbox, set_names_with_a_path_are_refused_at_the_scene_line)
{
    floe_scene_opts o = sc_opts();
    int rc = sc_run(&o, SC_HEAD SC_SIM "\nsim:boundary_box{ min = {-0.5, -0.5, -0.5}, max = {0.5, 0.5, 0.5},\n"
                                       "  set = '../../x/wall' }\n");
    cr_assert_eq(rc, FLOE_ERR_ARG, "%s", sc_err);
    sc_expect_err("scene.lua:4:");
    sc_expect_err("set name '../../x/wall' must be");
    rc = sc_run(&o, SC_HEAD SC_SIM "sim:fluid_box{ min = {0, 0, 0}, max = {0.2, 0.2, 0.2}, set = '../../pwned' }\n");
    cr_assert_eq(rc, FLOE_ERR_ARG, "%s", sc_err);
    sc_expect_err("scene.lua:3:");
    sc_expect_err("letters, digits");
    const char *bad[] = {"a/b", ".hidden", "-x", "sp ace", "", "tab\tname"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        cr_expect(!out_name_ok(bad[i]), "'%s' must be refused", bad[i]);
    const char *good[] = {"fluid", "wall_2", "gate-left", "v1.2", "0"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        cr_expect(out_name_ok(good[i]), "'%s' must be accepted", good[i]);
    /* sim:run's file base name too */
    rc = sc_run(&o, SC_HEAD SC_SIM SC_BOX "sim:run{ frames = 1, dt = 0.01, name = '..' }\n");
    cr_assert_eq(rc, FLOE_ERR_ARG, "%s", sc_err);
    sc_expect_err("name '..' must be");
    cr_expect(!sc_exists("%s/x", sc_tmp) && !sc_exists("/tmp/pwned.0000.ply") && !sc_exists("%s/...0000.ply", sc_tmp));
}

/* ---- 2. symbolic links below the root are not followed -------------------- */

Test(sandbox, symbolic_links_below_the_root_are_not_followed)
{
    char elsewhere[400], link[400], flink[400];
    snprintf(elsewhere, sizeof elsewhere, "%s/elsewhere", sc_tmp);
    snprintf(link, sizeof link, "%s/link", sc_out);
    snprintf(flink, sizeof flink, "%s/file", sc_out);
    cr_assert_eq(mkdir(elsewhere, 0755), 0);
    cr_assert_eq(mkdir(sc_out, 0755), 0);
    cr_assert_eq(symlink(elsewhere, link), 0);
    floe_scene_opts o = sc_opts();
    /* a root holding a link is not an output folder */
    int rc = sc_run(&o, SC_HEAD);
    cr_assert_eq(rc, FLOE_ERR_IO);
    sc_expect_err("holds files that are not a previous Floe run (link)");
    o.force = 1;
    rc = sc_run(&o, SC_HEAD "local f = io.open('%s/f', 'w')\n", link);
    cr_assert_eq(rc, FLOE_ERR_ARG, "%s", sc_err);
    sc_expect_err("scene.lua:2: sandbox: writing to");
    sc_expect_err("'link' is a symbolic link");
    rc = sc_run(&o, SC_HEAD "io.output('%s/f')\n", link);
    cr_assert_eq(rc, FLOE_ERR_ARG, "%s", sc_err);
    sc_expect_err("symbolic link");
    /* a link to a file, opened for appending */
    char target[500];
    snprintf(target, sizeof target, "%s/target.txt", elsewhere);
    cr_assert_eq(symlink(target, flink), 0);
    rc = sc_run(&o, SC_HEAD "local f = io.open('%s', 'a')\n", flink);
    cr_assert_eq(rc, FLOE_ERR_ARG, "%s", sc_err);
    sc_expect_err("is a symbolic link");
    /* frames through the link, and into it */
    /* no --out: the root is ./out of the working directory, the scene's out is used */
    cr_assert_eq(chdir(sc_tmp), 0);
    o.out_dir = NULL;
    rc = sc_run(&o, SC_HEAD SC_SIM SC_BOX "sim:run{ frames = 1, dt = 0.01, out = 'out/link/frames' }\n");
    cr_assert_eq(rc, FLOE_ERR_ARG, "%s", sc_err);
    sc_expect_err("scene.lua:5: sandbox: sim:run writing frames to 'out/link/frames' is not allowed");
    rc = sc_run(&o, SC_HEAD SC_SIM SC_BOX "sim:run{ frames = 1, dt = 0.01, out = 'out/link' }\n");
    cr_assert_eq(rc, FLOE_ERR_ARG, "%s", sc_err);
    sc_expect_err("symbolic link");
    /* reading through the link stays allowed; writing inside the root too */
    rc = sc_run(&o, SC_HEAD "local f = assert(io.open('%s/fine.txt', 'w'))\nf:write('ok')\nf:close()\n"
                            "assert(io.open('%s', 'r'))\n", sc_out, sc_scene);
    cr_assert_eq(rc, FLOE_OK, "%s", sc_err);
    cr_expect(sc_exists("%s/fine.txt", sc_out));
    cr_expect(!sc_exists("%s/f", elsewhere) && !sc_exists("%s/frames", elsewhere) && !sc_exists("%s", target),
              "something was written through the link");
}

/* The core refuses the link itself, whatever the Lua layer checked. */
Test(sandbox, floe_run_resolves_its_folder_below_the_root)
{
    char elsewhere[400], link[400], err[2048];
    snprintf(elsewhere, sizeof elsewhere, "%s/elsewhere", sc_tmp);
    snprintf(link, sizeof link, "%s/link", sc_out);
    cr_assert_eq(mkdir(elsewhere, 0755), 0);
    cr_assert_eq(mkdir(sc_out, 0755), 0);
    floe_output *out = floe_output_create(sc_out, FLOE_OUTPUT_CONFINE, err, sizeof err);
    cr_assert_not_null(out, "%s", err);
    cr_assert_eq(symlink(elsewhere, link), 0);
    floe_sim_def d = floe_sim_default_def();
    d.spacing = 0.1f;
    floe_ctx *ctx = floe_ctx_create(&d, err, sizeof err);
    cr_assert_not_null(ctx, "%s", err);
    floe_ctx_set_output(ctx, out);
    float lo[3] = {0, 0, 0}, hi[3] = {0.2f, 0.2f, 0.2f};
    floe_fill_box(ctx, floe_set_create(ctx, "fluid", FLOE_SET_FLUID, 1000), lo, hi, NULL);
    cr_assert_eq(floe_pipeline_add(ctx, "integrate", NULL, 0), FLOE_OK, "%s", floe_ctx_error(ctx));
    floe_run_def r = floe_run_default_def();
    r.frames = 1;
    r.dt = 0.01;
    r.progress = 0;
    char dir[600];
    snprintf(dir, sizeof dir, "%s/frames", link);
    r.out_dir = dir;
    cr_assert_eq(floe_run(ctx, &r, NULL), FLOE_ERR_ARG);
    cr_expect(strstr(floe_ctx_error(ctx), "symbolic link") != NULL, "%s", floe_ctx_error(ctx));
    snprintf(dir, sizeof dir, "%s/../escape", sc_out);
    cr_assert_neq(floe_run(ctx, &r, NULL), FLOE_OK);
    cr_expect(strstr(floe_ctx_error(ctx), "'..'") != NULL, "%s", floe_ctx_error(ctx));
    r.out_dir = sc_tmp; /* outside */
    cr_assert_neq(floe_run(ctx, &r, NULL), FLOE_OK);
    cr_expect(strstr(floe_ctx_error(ctx), "outside the output root") != NULL, "%s", floe_ctx_error(ctx));
    cr_expect(!sc_exists("%s/frames", elsewhere) && !sc_exists("%s/escape", sc_tmp) && !sc_exists("%s/run.yaml", sc_tmp));
    floe_ctx_destroy(ctx);
    floe_output_destroy(out);
}

/* ---- 3. a module's folder is below the root ------------------------------ */

#define SC_FLIP                                                                                                  \
    "local sim = floe.sim{ dim = 2, spacing = 0.01, gravity = {0, -9.81},\n"                                     \
    "  domain = { min = {0, 0}, max = {0.2, 0.15} } }\n"                                                         \
    "sim:load{ 'flip', 'raycast' }\n"                                                                           \
    "sim:fluid_box{ min = {0, 0}, max = {0.08, 0.1} }\n"

Test(sandbox, raycast_folder_is_below_the_output_root, .timeout = FLOE_TIMEOUT(120))
{
    floe_scene_opts o = sc_opts();
    char cwd_probe[600];
    snprintf(cwd_probe, sizeof cwd_probe, "x-deep-%ld", (long)getpid());
    int rc = sc_run(&o, SC_HEAD SC_FLIP
                    "sim:pipeline{ 'flip.splat', { 'flip.grid', speed_of_sound = 15 }, 'flip.advect',\n"
                    "  { 'raycast.render', folder = '%s/deep', fps = 1000, width = 16, video = false } }\n"
                    "sim:run{ frames = 1, dt = 5e-4, fps = 1000, out = '%s' }\n",
                    cwd_probe, sc_out);
    cr_assert_eq(rc, FLOE_OK, "%s", sc_err);
    cr_expect(sc_exists("%s/%s/deep/frame.00000.png", sc_out, cwd_probe), "the image is not below the root");
    cr_expect(!sc_exists("%s", cwd_probe), "raycast wrote below the working directory");
    /* '..', absolute folders and links on the way are refused */
    char link[400];
    snprintf(link, sizeof link, "%s/lnk", sc_out);
    cr_assert_eq(symlink(sc_tmp, link), 0);
    o.force = 1;
    const char *bad[] = {"../up", "/tmp/abs", "lnk/in"};
    const char *why[] = {"relative", "relative", "symbolic link"};
    for (int i = 0; i < 3; i++) {
        rc = sc_run(&o, SC_HEAD SC_FLIP
                    "sim:pipeline{ 'flip.splat', { 'flip.grid', speed_of_sound = 15 }, 'flip.advect',\n"
                    "  { 'raycast.render', folder = '%s', fps = 1000, width = 16, video = false } }\n"
                    "sim:run{ frames = 1, dt = 5e-4, fps = 1000 }\n",
                    bad[i]);
        cr_assert_neq(rc, FLOE_OK, "folder '%s' must be refused", bad[i]);
        sc_expect_err(why[i]);
    }
    cr_expect(!sc_exists("%s/in", sc_tmp) && !sc_exists("%s/up", sc_tmp));
}

/* ---- 4. what may be an output root; re-runs -------------------------------- */

Test(sandbox, root_home_and_foreign_folders_are_refused_unless_forced)
{
    floe_scene_opts o = sc_opts();
    o.out_dir = "/";
    cr_assert_eq(sc_run(&o, SC_HEAD), FLOE_ERR_IO);
    sc_expect_err("the output folder / is the root of the file system");
    sc_expect_err("--force");
    o.out_dir = "/tmp/..";
    cr_assert_eq(sc_run(&o, SC_HEAD), FLOE_ERR_IO);
    char home[400], note[500];
    snprintf(home, sizeof home, "%s/home", sc_tmp);
    cr_assert_eq(mkdir(home, 0755), 0);
    const char *old = getenv("HOME");
    char *saved = old ? strdup(old) : NULL;
    setenv("HOME", home, 1);
    o.out_dir = home;
    int rc = sc_run(&o, SC_HEAD);
    if (saved) {
        setenv("HOME", saved, 1);
        free(saved);
    }
    cr_assert_eq(rc, FLOE_ERR_IO);
    sc_expect_err("is the home folder itself");
    /* a folder of someone's files */
    snprintf(note, sizeof note, "%s/notes.txt", home);
    FILE *f = fopen(note, "w");
    fputs("mine", f);
    fclose(f);
    cr_assert_eq(sc_run(&o, SC_HEAD), FLOE_ERR_IO);
    sc_expect_err("holds files that are not a previous Floe run (notes.txt)");
    o.force = 1;
    cr_assert_eq(sc_run(&o, SC_HEAD SC_SIM SC_BOX "sim:run{ frames = 1, dt = 0.01 }\n"), FLOE_OK, "%s", sc_err);
    cr_expect(sc_exists("%s/run.yaml", home) && sc_exists("%s", note), "forced: written, the note kept");
    /* a folder of Floe runs (frames, records, folders of those) is fine */
    o.force = 0;
    char ab[400];
    snprintf(ab, sizeof ab, "%s/a/b", sc_out);
    o.out_dir = ab;
    cr_assert_eq(sc_run(&o, SC_HEAD SC_SIM SC_BOX "sim:run{ frames = 1, dt = 0.01 }\n"), FLOE_OK, "%s", sc_err);
    o.out_dir = sc_out;
    cr_assert_eq(sc_run(&o, SC_HEAD SC_SIM SC_BOX "sim:run{ frames = 1, dt = 0.01 }\n"), FLOE_OK, "%s", sc_err);
    cr_expect(sc_exists("%s/a/b/run.yaml", sc_out) && sc_exists("%s/run.yaml", sc_out));
}

Test(sandbox, a_rerun_is_refused_or_replaces_and_never_mixes)
{
    floe_scene_opts o = sc_opts();
    const char *scene = SC_HEAD SC_SIM SC_BOX "sim:run{ frames = %d, dt = 0.01 }\n";
    cr_assert_eq(sc_run(&o, scene, 3), FLOE_OK, "%s", sc_err);
    cr_assert(sc_exists("%s/fluid.0003.ply", sc_out));
    cr_assert_eq(sc_run(&o, scene, 1), FLOE_ERR_ARG);
    sc_expect_err("holds an earlier run");
    sc_expect_err("--force replaces it");
    cr_expect(sc_exists("%s/fluid.0003.ply", sc_out), "a refused run removes nothing");
    o.force = 1;
    cr_assert_eq(sc_run(&o, scene, 1), FLOE_OK, "%s", sc_err);
    cr_expect(sc_exists("%s/fluid.0001.ply", sc_out));
    cr_expect(!sc_exists("%s/fluid.0002.ply", sc_out) && !sc_exists("%s/fluid.0003.ply", sc_out),
              "frames of the earlier run left mixed in");
}

/* Files a module writes under names of its own (terrain.output's
 * terrain.ply) are listed in the folder's .floe_files: a second run into
 * the folder sees an earlier run (not someone's files), and --force
 * replaces them with the rest of it */
Test(sandbox, a_rerun_knows_the_files_a_module_wrote)
{
    floe_scene_opts o = sc_opts();
    const char *scene = SC_HEAD "local sim = floe.sim{ dim = 3, spacing = 0.05, domain = { min = {0, -0.1, 0}, max = {1, 1, 1} } }\n"
                                "sim:load{ 'terrain' }\n"
                                "sim:terrain{ height = function(x, z) return 0.1 * x end, cell = 0.1, size = {11, 11} }\n"
                                "sim:fluid_box{ min = {0.4, 0.5, 0.4}, max = {0.6, 0.7, 0.6} }\n"
                                "sim:pipeline{ 'gravity', 'integrate', 'terrain.output' }\n"
                                "sim:run{ frames = 2, dt = 0.01, fps = 50 }\n";
    cr_assert_eq(sc_run(&o, "%s", scene), FLOE_OK, "%s", sc_err);
    cr_assert(sc_exists("%s/terrain.ply", sc_out) && sc_exists("%s/wet.0002.png", sc_out));
    char *list = sc_slurp("%s/.floe_files", sc_out);
    cr_assert(list && strcmp(list, "terrain.ply\n") == 0, "the folder's list: '%s'", list ? list : "(none)");
    free(list);
    cr_assert_eq(sc_run(&o, "%s", scene), FLOE_ERR_ARG);
    sc_expect_err("holds an earlier run");
    o.force = 1;
    cr_assert_eq(sc_run(&o, "%s", scene), FLOE_OK, "%s", sc_err);
    cr_assert(sc_exists("%s/terrain.ply", sc_out));
}

/* floe bench (no frames, the run record only) run twice into one folder
 * (scenes/bench/dam_break_gpu.lua names its own): the second replaces the first's record
 * without --force; a folder holding an earlier run's frames is still refused
 * and keeps them (docs/reliability.md) */
Test(sandbox, a_bench_replaces_an_earlier_bench_record_and_never_frames)
{
    floe_scene_opts o = sc_opts();
    const char *scene = SC_HEAD SC_SIM SC_BOX "sim:run{ frames = %d, dt = 0.01 }\n";
    o.write_frames = 0;
    cr_assert_eq(sc_run(&o, scene, 2), FLOE_OK, "%s", sc_err);
    cr_assert(sc_exists("%s/run.yaml", sc_out));
    cr_expect(!sc_exists("%s/fluid.0000.ply", sc_out), "a bench wrote frames");
    cr_assert_eq(sc_run(&o, scene, 1), FLOE_OK, "a second bench: %s", sc_err);
    char *r = sc_slurp("%s/run.yaml", sc_out);
    cr_expect(strstr(r, "{frame: 1,") && !strstr(r, "{frame: 2,"), "not the second bench's record (1 frame):\n%s", r);
    free(r);
    o.write_frames = 1;
    cr_assert_eq(sc_run(&o, scene, 2), FLOE_ERR_ARG, "a run over a bench's record needs --force");
    o.force = 1;
    cr_assert_eq(sc_run(&o, scene, 2), FLOE_OK, "%s", sc_err);
    cr_assert(sc_exists("%s/fluid.0002.ply", sc_out));
    o.force = 0;
    o.write_frames = 0;
    cr_assert_eq(sc_run(&o, scene, 1), FLOE_ERR_ARG);
    sc_expect_err("holds an earlier run");
    cr_expect(sc_exists("%s/fluid.0002.ply", sc_out), "a refused bench removes nothing");
}

Test(sandbox, a_second_sim_run_into_the_same_folder_continues_the_numbering)
{
    floe_scene_opts o = sc_opts();
    int rc = sc_run(&o, SC_HEAD SC_SIM SC_BOX "sim:run{ frames = 2, dt = 0.01 }\n"
                                              "sim:run{ frames = 2, dt = 0.01, name = 'later' }\n"
                                              "sim:run{ frames = 1, dt = 0.01 }\n");
    cr_assert_eq(rc, FLOE_OK, "%s", sc_err);
    const char *want[] = {"fluid.0000.ply", "fluid.0002.ply", "later.0003.ply", "later.0005.ply", "fluid.0006.ply",
                          "fluid.0007.ply", "run.yaml", "run.2.yaml", "run.3.yaml"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        cr_expect(sc_exists("%s/%s", sc_out, want[i]), "missing %s", want[i]);
    cr_expect(!sc_exists("%s/later.0000.ply", sc_out) && !sc_exists("%s/fluid.0008.ply", sc_out));
    char *r2 = sc_slurp("%s/run.2.yaml", sc_out), *r1 = sc_slurp("%s/run.yaml", sc_out);
    cr_expect(strstr(r2, "first_frame: 3") != NULL, "%s", r2);
    cr_expect(strstr(r1, "first_frame") == NULL, "%s", r1);
    free(r1);
    free(r2);
}

Test(sandbox, a_scene_that_writes_nothing_makes_no_folder)
{
    floe_scene_opts o = sc_opts();
    char none[400];
    snprintf(none, sizeof none, "%s/none/deeper", sc_tmp);
    o.out_dir = none;
    cr_assert_eq(sc_run(&o, SC_HEAD SC_SIM "local n = sim:fluid_box{ min = {0, 0, 0}, max = {0.2, 0.2, 0.2} }\n"),
                 FLOE_OK, "%s", sc_err);
    cr_expect(!sc_exists("%s/none", sc_tmp), "the output root was made though nothing was written");
    cr_assert_eq(sc_run(&o, SC_HEAD "local f = assert(io.open('%s/made.txt', 'w'))\nf:close()\n", none), FLOE_OK,
                 "%s", sc_err);
    cr_expect(sc_exists("%s/made.txt", none), "the first file makes the root");
}
