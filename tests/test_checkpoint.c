/* Checkpoint and resume (docs/reliability.md): a run stopped after frame 5
 * (its last frame, or kill -9 later) and resumed with `floe run SCENE
 * --resume DIR` writes frames byte-identical to a run never interrupted
 * (WCSPH, IISPH, FLIP, a module with state); a checkpoint of another
 * scene, a corrupted, truncated or foreign one is refused with a message. */
#include "scene_fixture.h"

#include <fcntl.h>

static void setup(void) { sc_setup(); }
static void teardown(void) { sc_teardown(); }

TestSuite(checkpoint, .init = setup, .fini = teardown);

#define RUN() "sim:run{ frames = 10, fps = 30, out = 'o', checkpoint_every = floe.param('ck', 0) }\n"

static const char *const WCSPH =
    SC_HEAD "local d = 0.01\n"
    "local sim = floe.sim{ dim = 2, spacing = d, gravity = { 0, -9.81 }, domain = { min = { -4 * d, -4 * d }, max = { 0.5 + 4 * d, 0.6 } } }\n"
    "sim:load{ 'sph', 'wcsph', 'hello' }\n"
    "sim:fluid_box{ min = { 0, 0 }, max = { 0.1, 0.2 }, density = 1000 }\n"
    "sim:boundary_box{ min = { 0, 0 }, max = { 0.5, 0.3 }, layers = 2, open_top = true }\n"
    "sim:pipeline{ 'neighbours', 'sph.density', { 'wcsph.pressure', speed_of_sound = 20 }, 'gravity',\n"
    "  { 'wcsph.viscosity', kind = 'artificial', alpha = 0.02 }, 'wcsph.pressure_force',\n"
    "  { 'hello.damp', rate = 1 }, 'integrate' }\n"
    "local hang = floe.param('hang', 0)\n"
    "sim:on_frame(function(s, st) if hang == 1 and st.frame == 7 then while true do end end end)\n"
    RUN();

/* the same with Verlet lists (a skin): the resumed run rebuilds them at
 * the frame's first step, as the uninterrupted one does */
static const char *const WCSPH_SKIN =
    SC_HEAD "local d = 0.01\n"
    "local sim = floe.sim{ dim = 2, spacing = d, gravity = { 0, -9.81 }, domain = { min = { -4 * d, -4 * d }, max = { 0.5 + 4 * d, 0.6 } } }\n"
    "sim:load{ 'sph', 'wcsph' }\n"
    "sim:fluid_box{ min = { 0, 0 }, max = { 0.1, 0.2 }, density = 1000 }\n"
    "sim:boundary_box{ min = { 0, 0 }, max = { 0.5, 0.3 }, layers = 2, open_top = true }\n"
    "sim:pipeline{ { 'neighbours', skin = 0.3, reorder_every = 7 }, 'sph.density', { 'wcsph.pressure', speed_of_sound = 20 }, 'gravity',\n"
    "  { 'wcsph.viscosity', kind = 'artificial', alpha = 0.02 }, 'wcsph.pressure_force', 'integrate' }\n"
    RUN();

static const char *const IISPH =
    SC_HEAD "local sim = floe.sim{ dim = 3, spacing = 0.05, gravity = { 0, -9.81, 0 }, domain = { min = { -0.2, -0.2, -0.2 }, max = { 1.2, 1.2, 0.6 } } }\n"
    "sim:load{ 'sph', 'iisph' }\n"
    "sim:fluid_box{ min = { 0, 0, 0 }, max = { 0.3, 0.5, 0.4 }, density = 1000 }\n"
    "sim:boundary_box{ min = { 0, 0, 0 }, max = { 1, 0.8, 0.4 }, layers = 2, open_top = true }\n"
    "sim:pipeline{ 'neighbours', 'sph.density', 'gravity', { 'iisph.solve', tolerance = 0.001, omega = 0.5 }, 'integrate' }\n"
    RUN();

static const char *const FLIP =
    SC_HEAD "local a, d = 0.1, 0.1 / 20\n"
    "local sim = floe.sim{ dim = 2, spacing = d, gravity = { 0, -9.81 }, domain = { min = { 0, 0 }, max = { 5 * a, 3 * a } } }\n"
    "sim:load 'flip'\n"
    "sim:fluid_box{ min = { 0, 0 }, max = { a, 2 * a }, density = 1000 }\n"
    "sim:pipeline{ { 'flip.obstacle', shape = 'box', centre = { 3 * a, 0.5 * a }, size = { 4 * d, a } }, 'flip.splat',\n"
    "  { 'flip.grid', speed_of_sound = 20 }, { 'flip.advect', pic = 0.05 } }\n"
    RUN();

/* ice frozen on a moving (kinematic) body and carried with it
 * (freeze.carry): the ice set becomes a moving set during the run */
static const char *const FREEZE_CARRY =
    SC_HEAD "local sim = floe.sim{ dim = 3, spacing = 0.02, gravity = {0, -9.81, 0},\n"
    "  domain = { min = {-0.1, -0.1, -0.1}, max = {0.7, 0.6, 0.5} } }\n"
    "sim:load{ 'sph', 'iisph', 'viscosity', 'freeze' }\n"
    "local rigid = sim:load 'rigid'\n"
    "rigid.body{ name = 'box', shape = 'box', size = {0.16, 0.08, 0.16}, density = 900, position = {0.2, 0.15, 0.2},\n"
    "  kinematic = function(t) return { position = {0.2 + 0.25 * t, 0.15, 0.2}, rotation = {0, 90 * t, 0} } end }\n"
    "sim:boundary_box{ min = {0, 0, 0}, max = {0.6, 0.5, 0.4}, layers = 2, set = 'tank' }\n"
    "sim:boundary_set{ name = 'ice' }\n"
    "sim:fluid_box{ min = {0.14, 0.22, 0.14}, max = {0.26, 0.3, 0.26}, velocity = {0, -0.5, 0} }\n"
    "sim:pipeline{ 'neighbours', 'sph.density', 'gravity', { 'viscosity.kim', boundary_beta0 = 1 }, 'iisph.solve',\n"
    "  { 'freeze.film', cold = 'bodies', alpha = 30 }, 'freeze.direction',\n"
    "  { 'freeze.transition', glaze = 10, icicle = 30, fr = 'none' }, 'integrate', 'rigid.step', 'freeze.carry' }\n"
    RUN();

/* a free box spinning through water that freezes on it, its ice's mass and
 * the fluid's pressure on the ice the body's (rigid.attach) */
static const char *const ICE_ON_A_FREE_BODY =
    SC_HEAD "local sim = floe.sim{ dim = 3, spacing = 0.02, gravity = {0, 0, 0},\n"
    "  domain = { min = {-0.4, -0.3, -0.4}, max = {0.4, 0.3, 0.4} } }\n"
    "sim:load{ 'sph', 'iisph', 'freeze' }\n"
    "local rigid = sim:load 'rigid'\n"
    "rigid.body{ name = 'box', shape = 'box', size = {0.24, 0.1, 0.12}, density = 150, position = {0, 0, 0},\n"
    "  angular_velocity = {0.3, 3, 0} }\n"
    "sim:boundary_set{ name = 'ice' }\n"
    "rigid.attach{ set = 'ice' }\n"
    "sim:fluid_box{ min = {0.09, -0.04, -0.2}, max = {0.19, 0.04, 0.2} }\n"
    "sim:pipeline{ 'neighbours', 'sph.density', 'gravity', 'iisph.solve', { 'rigid.force', solver = 'iisph' },\n"
    "  { 'freeze.film', cold = 'bodies', alpha = 200 }, 'freeze.direction',\n"
    "  { 'freeze.transition', glaze = 2, icicle = 1e6, fr = 'none' }, 'integrate', 'rigid.step', 'freeze.carry' }\n"
    RUN();

static void write_scene(const char *text)
{
    FILE *f = fopen(sc_scene, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

/* `floe run scene.lua ARGS... --quiet --threads 2` in sc_tmp; its exit status. */
#define FLOE(...) sc_cli((const char *const[]){"run", "scene.lua", "--quiet", "--threads", "2", __VA_ARGS__, NULL})

static int same_file(const char *a, const char *b)
{
    char *x = sc_slurp("%s", a), *y = sc_slurp("%s", b);
    struct stat sa, sb;
    int same = stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_size == sb.st_size &&
               memcmp(x, y, (size_t)sa.st_size) == 0;
    free(x);
    free(y);
    return same;
}

/* Every frame file of `full` equals the one of `part`; their number. */
static int frames_identical(const char *set, int frames)
{
    for (int f = 0; f <= frames; f++) {
        char a[600], b[600];
        snprintf(a, sizeof a, "%s/full/%s.%04d.ply", sc_tmp, set, f);
        snprintf(b, sizeof b, "%s/part/%s.%04d.ply", sc_tmp, set, f);
        cr_assert(sc_exists("%s", a), "missing %s", a);
        cr_assert(sc_exists("%s", b), "missing %s", b);
        cr_expect(same_file(a, b), "frame %d of set %s differs after the resume", f, set);
    }
    return frames + 1;
}

/* full: 10 frames; part: 5 frames with a checkpoint after each, then --resume to 10. */
static void interrupted_and_resumed(const char *scene)
{
    write_scene(scene);
    cr_assert_eq(FLOE("--out", "full"), 0, "%s", sc_slurp("%s/log", sc_tmp));
    cr_assert_eq(FLOE("--out", "part", "--frames", "5", "--set", "ck=1"), 0, "%s", sc_slurp("%s/log", sc_tmp));
    cr_assert(sc_exists("%s/part/checkpoint.floe", sc_tmp));
    cr_assert(!sc_exists("%s/part/fluid.0006.ply", sc_tmp));
    cr_assert_eq(FLOE("--resume", "part", "--set", "ck=1"), 0, "%s", sc_slurp("%s/log", sc_tmp));
    char *log = sc_slurp("%s/log", sc_tmp);
    cr_expect(strstr(log, "resume: from the checkpoint after frame 5") != NULL, "%s", log);
    free(log);
    cr_expect_eq(frames_identical("fluid", 10), 11);
    char *rec = sc_slurp("%s/part/run.yaml", sc_tmp);
    cr_expect(strstr(rec, "status: finished") != NULL, "%s", rec);
    for (int f = 1; f <= 10; f++) { /* the record lists every frame once */
        char line[64];
        snprintf(line, sizeof line, "{frame: %d, ", f);
        const char *at = strstr(rec, line);
        cr_expect(at && !strstr(at + 1, line), "frame %d in the record: %s", f, rec);
    }
    free(rec);
}

Test(checkpoint, wcsph_resumed_frames_are_byte_identical) { interrupted_and_resumed(WCSPH); }
Test(checkpoint, wcsph_with_a_skin_resumed_frames_are_byte_identical) { interrupted_and_resumed(WCSPH_SKIN); }
Test(checkpoint, iisph_resumed_frames_are_byte_identical) { interrupted_and_resumed(IISPH); }
Test(checkpoint, flip_resumed_frames_are_byte_identical) { interrupted_and_resumed(FLIP); }

/* the ice set was made moving by freeze.carry after the scene's set-up: the
 * resume marks it moving again, and the ice goes on moving with the body */
Test(checkpoint, ice_carried_by_a_body_resumed_frames_are_byte_identical)
{
    interrupted_and_resumed(FREEZE_CARRY);
    cr_expect_eq(frames_identical("ice", 10), 11);
}

/* the attached mass is put back at the resume without exchanging momentum
 * (rigid_attach_loaded): the same water and the same ice, which sits where
 * the body's pose puts it */
Test(checkpoint, ice_on_a_free_body_resumed_frames_are_byte_identical)
{
    interrupted_and_resumed(ICE_ON_A_FREE_BODY);
    cr_expect_eq(frames_identical("ice", 10), 11);
}

Test(checkpoint, module_state_survives_the_resume)
{
    interrupted_and_resumed(WCSPH);
    /* hello.damp's call count goes on: 5 frames' steps, then the rest */
    char *log = sc_slurp("%s/log", sc_tmp);
    const char *at = strstr(log, "hello: damp ran ");
    cr_assert_not_null(at, "%s", log);
    long resumed = strtol(at + strlen("hello: damp ran "), NULL, 10);
    free(log);
    cr_assert_eq(FLOE("--out", "full", "--force"), 0);
    log = sc_slurp("%s/log", sc_tmp);
    at = strstr(log, "hello: damp ran ");
    cr_assert_not_null(at);
    cr_expect_eq(resumed, strtol(at + strlen("hello: damp ran "), NULL, 10), "%s", log);
    free(log);
}

Test(checkpoint, resume_after_kill_9)
{
    write_scene(WCSPH);
    cr_assert_eq(FLOE("--out", "full"), 0, "%s", sc_slurp("%s/log", sc_tmp));
    /* checkpoints after frames 2, 4, 6; the run hangs in frame 7's callback and is killed */
    pid_t pid = sc_spawn((const char *const[]){"run", "scene.lua", "--quiet", "--threads", "2", "--out", "part",
                                              "--set", "ck=2", "--set", "hang=1", NULL});
    char f7[600];
    snprintf(f7, sizeof f7, "%s/part/fluid.0007.ply", sc_tmp);
    for (int i = 0; i < 3000 && !sc_exists("%s", f7); i++)
        sc_sleep(0.01);
    cr_assert(sc_exists("%s", f7), "frame 7 never appeared");
    sc_sleep(0.2);
    kill(pid, SIGKILL);
    cr_assert_eq(sc_wait(pid), 128 + SIGKILL);
    char *rec = sc_slurp("%s/part/run.yaml", sc_tmp);
    cr_expect(strstr(rec, "status: running") != NULL, "%s", rec);
    free(rec);
    cr_assert_eq(FLOE("--resume", "part", "--set", "ck=2"), 0, "%s", sc_slurp("%s/log", sc_tmp));
    char *log = sc_slurp("%s/log", sc_tmp);
    cr_expect(strstr(log, "after frame 6") != NULL, "%s", log);
    free(log);
    frames_identical("fluid", 10);
    rec = sc_slurp("%s/part/run.yaml", sc_tmp);
    cr_expect(strstr(rec, "status: finished") != NULL && strstr(rec, "{frame: 10, "), "%s", rec);
    free(rec);
}

/* Makes part/ with a checkpoint after frame 2 of the WCSPH scene. */
static void checkpointed(void)
{
    write_scene(WCSPH);
    cr_assert_eq(FLOE("--out", "part", "--frames", "2", "--set", "ck=1"), 0, "%s", sc_slurp("%s/log", sc_tmp));
}

/* --resume part must fail (exit 1, not a crash) saying `why`. */
static void refused(const char *why)
{
    int rc = FLOE("--resume", "part", "--set", "ck=1");
    char *log = sc_slurp("%s/log", sc_tmp);
    cr_expect_eq(rc, 1, "exit %d: %s", rc, log);
    cr_expect(strstr(log, why) != NULL, "expected \"%s\" in:\n%s", why, log);
    free(log);
}

static void rewrite(long keep, long flip_at)
{
    char p[600];
    snprintf(p, sizeof p, "%s/part/checkpoint.floe", sc_tmp);
    if (keep >= 0)
        cr_assert_eq(truncate(p, keep), 0);
    if (flip_at >= 0) {
        int fd = open(p, O_RDWR);
        unsigned char c;
        cr_assert_eq(pread(fd, &c, 1, flip_at), 1);
        c ^= 0x10;
        cr_assert_eq(pwrite(fd, &c, 1, flip_at), 1);
        close(fd);
    }
}

static long ckpt_size(void)
{
    struct stat st;
    char p[600];
    snprintf(p, sizeof p, "%s/part/checkpoint.floe", sc_tmp);
    cr_assert_eq(stat(p, &st), 0);
    return (long)st.st_size;
}

Test(checkpoint, another_scene_is_refused)
{
    checkpointed();
    FILE *f = fopen(sc_scene, "a");
    fputs("-- edited\n", f);
    fclose(f);
    refused("was written for another scene");
}

Test(checkpoint, a_corrupted_byte_is_refused)
{
    checkpointed();
    rewrite(-1, ckpt_size() / 2); /* in the particle data */
    refused("is corrupted or truncated (its checksum does not match");
}

Test(checkpoint, a_truncated_checkpoint_is_refused)
{
    checkpointed();
    rewrite(ckpt_size() / 3, -1);
    refused("is corrupted or truncated");
    rewrite(20, -1);
    refused("is truncated (20 bytes)");
    rewrite(0, -1);
    refused("is not a Floe checkpoint");
}

Test(checkpoint, another_floe_version_is_refused)
{
    checkpointed();
    rewrite(-1, 16); /* the first byte of the version string */
    refused("was written by Floe ");
}

Test(checkpoint, a_foreign_file_is_refused)
{
    checkpointed();
    char p[600];
    snprintf(p, sizeof p, "%s/part/checkpoint.floe", sc_tmp);
    FILE *f = fopen(p, "w");
    fputs("ply\nformat binary_little_endian 1.0\nend_header\n", f);
    fclose(f);
    refused("is not a Floe checkpoint");
}

Test(checkpoint, a_folder_without_checkpoint_is_refused)
{
    write_scene(WCSPH);
    cr_assert_eq(FLOE("--out", "part", "--frames", "2"), 0);
    refused("holds no checkpoint (checkpoint.floe)");
}
