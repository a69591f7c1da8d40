/* The fuzz targets (tests/fuzz/targets.c) without libFuzzer: every input of
 * tests/fuzz/corpus/<target>/ and every crash that fuzzing found
 * (tests/fuzz/crashes/<target>/) goes through the same entry point. An
 * input named ok_* must be accepted, bad_* refused with a message; a crash
 * input must come back (either way) with a message when refused. Under
 * `make sanitize` (and CI) this runs with address and undefined sanitizers. */
#include <criterion/criterion.h>

#include "fuzz/targets.c"

#include <dirent.h>
#include <sys/stat.h>

typedef int (*target_fn)(const uint8_t *, size_t);

static int run_dir(const char *target, const char *kind, target_fn fn)
{
    char dirpath[1024];
    snprintf(dirpath, sizeof dirpath, "%s/tests/fuzz/%s/%s", FLOE_TEST_SOURCE_ROOT, kind, target);
    DIR *d = opendir(dirpath);
    if (!d)
        return 0;
    int count = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dirpath, e->d_name);
        FILE *f = fopen(path, "rb");
        cr_assert_not_null(f, "cannot open %s", path);
        static uint8_t buf[1 << 20];
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        int rc = fn(buf, n);
        if (!strncmp(e->d_name, "ok_", 3))
            cr_expect_eq(rc, 0, "%s: %s was refused: %s", target, path, fuzz_message);
        else if (!strncmp(e->d_name, "bad_", 4))
            cr_expect_eq(rc, -1, "%s: %s was accepted", target, path);
        if (rc != 0)
            cr_expect(fuzz_message[0] != 0, "%s: %s refused without a message", target, path);
        count++;
    }
    closedir(d);
    return count;
}

static void run_target(const char *target, target_fn fn)
{
    int n = run_dir(target, "corpus", fn);
    cr_assert_gt(n, 0, "no corpus for %s", target);
    int c = run_dir(target, "crashes", fn);
    cr_log_info("%s: %d corpus inputs, %d crash inputs", target, n, c);
}

Test(fuzz, yaml_corpus_and_crashes)
{
    run_target("yaml", fuzz_yaml);
    /* a refused preset names the file, line and column */
    const char *dup = "a: 1\na: 2\n";
    cr_assert_eq(fuzz_yaml((const uint8_t *)dup, strlen(dup)), -1);
    cr_expect(strstr(fuzz_message, "preset.yaml:2:") != NULL, "%s", fuzz_message);
}

Test(fuzz, ply_corpus_and_crashes) { run_target("ply", fuzz_ply); }

Test(fuzz, params_corpus_and_crashes)
{
    setenv("FLOE_MODULE_PATH", FLOE_TEST_BUILD_ROOT "/modules", 1);
    run_target("params", fuzz_params);
}

Test(fuzz, mesh_corpus_and_crashes)
{
    run_target("mesh", fuzz_mesh);
    /* a refused mesh names its file */
    const uint8_t garbage[] = "\001not an STL";
    cr_assert_eq(fuzz_mesh(garbage, sizeof garbage - 1), -1);
    cr_expect(strstr(fuzz_message, "mesh.stl") != NULL, "%s", fuzz_message);
    /* an input that crashes assimp's PLY importer: the import runs in a
     * child process, and the scene gets an error naming the file */
    const uint8_t ply[] = "\002ply\nformat ascii 1.0\n\000eleme";
    cr_assert_eq(fuzz_mesh(ply, sizeof ply - 1), -1);
    cr_expect(strstr(fuzz_message, "mesh.ply") && strstr(fuzz_message, "importer crashed"), "%s", fuzz_message);
}

Test(fuzz, heightmap_corpus_and_crashes)
{
    run_target("heightmap", fuzz_heightmap);
    /* an 8-bit PNG is refused with the reason and the file */
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fuzz/corpus/heightmap/bad_grey8.png", FLOE_TEST_SOURCE_ROOT);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    uint8_t buf[256];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    cr_assert_eq(fuzz_heightmap(buf, n), -1);
    cr_expect(strstr(fuzz_message, "height.png") && strstr(fuzz_message, "16-bit greyscale"), "%s", fuzz_message);
}
