/* Module loader: every error path has a deliberately broken fixture module
 * (tests/modules/broken.c); messages must name what went wrong. */
#include <criterion/criterion.h>
#include <floe/floe.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static floe_ctx *ctx;

static void setup(void)
{
    setenv("FLOE_MODULE_PATH", FLOE_TEST_FIXTURE_DIR, 1);
    floe_sim_def d = floe_sim_default_def();
    d.spacing = 0.1f;
    ctx = floe_ctx_create(&d, NULL, 0);
    cr_assert_not_null(ctx);
}

static void teardown(void) { floe_ctx_destroy(ctx); }

TestSuite(loader, .init = setup, .fini = teardown);

static void expect_load_error(const char *name, const char *needle1, const char *needle2)
{
    int rc = floe_module_load(ctx, name);
    const char *msg = floe_ctx_error(ctx);
    cr_assert_neq(rc, FLOE_OK, "loading '%s' should fail", name);
    cr_assert_not_null(strstr(msg, needle1), "message for '%s' lacks '%s': %s", name, needle1, msg);
    if (needle2)
        cr_assert_not_null(strstr(msg, needle2), "message for '%s' lacks '%s': %s", name, needle2, msg);
    cr_assert_not_null(strstr(msg, name), "message does not name the module: %s", msg);
}

Test(loader, good_module_loads) { cr_assert_eq(floe_module_load(ctx, "good"), FLOE_OK, "%s", floe_ctx_error(ctx)); }

Test(loader, not_found_lists_where_it_looked)
{
    expect_load_error("nosuchmodule", "not found", FLOE_TEST_FIXTURE_DIR "/floe_nosuchmodule.so");
    cr_assert_not_null(strstr(floe_ctx_error(ctx), "FLOE_MODULE_PATH"));
}

Test(loader, not_a_shared_object) { expect_load_error("notalib", "cannot load", "floe_notalib.so"); }

Test(loader, missing_entry_symbol) { expect_load_error("noentry", "missing entry point floe_module_noentry", NULL); }

/* versions as the fixtures declare them: FLOE_ABI_MAJOR + 1, FLOE_ABI_MINOR + 1 */
static char abi_core[32], abi_major[32], abi_minor[32];
static void abi_strings(void)
{
    snprintf(abi_core, sizeof abi_core, "ABI %d.%d", FLOE_ABI_MAJOR, FLOE_ABI_MINOR);
    snprintf(abi_major, sizeof abi_major, "ABI %d.%d", FLOE_ABI_MAJOR + 1, FLOE_ABI_MINOR);
    snprintf(abi_minor, sizeof abi_minor, "ABI %d.%d", FLOE_ABI_MAJOR, FLOE_ABI_MINOR + 1);
}

Test(loader, abi_major_mismatch_names_both_versions)
{
    abi_strings();
    expect_load_error("abimajor", abi_major, abi_core);
}

Test(loader, abi_newer_minor_refused)
{
    abi_strings();
    expect_load_error("abiminor", abi_minor, abi_core);
}

Test(loader, duplicate_stage_names_owner) { expect_load_error("dupstage", "duplicate stage 'dupstage.run'", "module 'dupstage'"); }

Test(loader, stage_without_run) { expect_load_error("norun", "no run function", "norun"); }

Test(loader, descriptor_too_small) { expect_load_error("smalldesc", "malformed descriptor", NULL); }

Test(loader, descriptor_with_wrong_name) { expect_load_error("wrongname", "calls itself 'somebody_else'", NULL); }

Test(loader, default_out_of_range) { expect_load_error("badparam", "outside its range", "'k'"); }

Test(loader, overwrite_with_read_refused)
{
    expect_load_error("badoverwrite", "FLOE_OVERWRITE, which needs FLOE_WRITE and excludes FLOE_READ", "'v'");
}

Test(loader, init_failure_carries_module_message) { expect_load_error("initfail", "init failed", "refuses to start"); }

Test(loader, bad_module_name) { cr_assert_neq(floe_module_load(ctx, "../etc/passwd"), FLOE_OK); }

Test(loader, load_is_idempotent)
{
    cr_assert_eq(floe_module_load(ctx, "good"), FLOE_OK);
    cr_assert_eq(floe_module_load(ctx, "good"), FLOE_OK);
}

/* ---- pipeline composition --------------------------------------------- */

static int add(const char *stage, const char *pname, floe_param_type t, floe_value v)
{
    floe_param_kv kv = {pname, t, v};
    return floe_pipeline_add(ctx, stage, pname ? &kv : NULL, pname ? 1 : 0);
}

Test(loader, pipeline_checks_stages_and_params)
{
    cr_assert_eq(floe_module_load(ctx, "good"), FLOE_OK);
    cr_assert_eq(add("good.run", "k", FLOE_PARAM_FLOAT, (floe_value){.f = 0.25}), FLOE_OK);
    cr_assert_eq(add("neighbours", NULL, 0, (floe_value){0}), FLOE_OK);
    cr_assert_eq(floe_pipeline_length(ctx), 2);
    cr_assert_str_eq(floe_pipeline_stage_name(ctx, 0), "good.run");

    cr_assert_neq(add("good.nope", NULL, 0, (floe_value){0}), FLOE_OK);
    cr_assert_not_null(strstr(floe_ctx_error(ctx), "unknown stage 'good.nope'"));
    cr_assert_not_null(strstr(floe_ctx_error(ctx), "good.run"), "should list known stages: %s", floe_ctx_error(ctx));

    cr_assert_neq(add("other.run", NULL, 0, (floe_value){0}), FLOE_OK);
    cr_assert_not_null(strstr(floe_ctx_error(ctx), "module 'other' is not loaded"));

    cr_assert_neq(add("good.run", "kk", FLOE_PARAM_FLOAT, (floe_value){.f = 0.5}), FLOE_OK);
    cr_assert_not_null(strstr(floe_ctx_error(ctx), "unknown parameter 'kk'"));

    cr_assert_neq(add("good.run", "k", FLOE_PARAM_FLOAT, (floe_value){.f = 2}), FLOE_OK);
    cr_assert_not_null(strstr(floe_ctx_error(ctx), "out of range"));

    cr_assert_neq(add("good.run", "k", FLOE_PARAM_STRING, (floe_value){.s = "x"}), FLOE_OK);
    cr_assert_not_null(strstr(floe_ctx_error(ctx), "must be a number"));

    cr_assert_eq(floe_pipeline_length(ctx), 2, "failed adds must not change the pipeline");

    cr_assert_eq(floe_pipeline_set(ctx, "good.run.k", "0.75"), FLOE_OK);
    cr_assert_neq(floe_pipeline_set(ctx, "good.run.k", "abc"), FLOE_OK);
    cr_assert_neq(floe_pipeline_set(ctx, "good.run.zz", "1"), FLOE_OK);
    cr_assert_neq(floe_pipeline_set(ctx, "neighbours.reorder_every", "1.5"), FLOE_OK);
    cr_assert_eq(floe_pipeline_set(ctx, "neighbours.reorder_every", "3"), FLOE_OK);
}

static int listed_good, errors_seen;
static void on_module(const floe_module_listing *m, void *u)
{
    (void)u;
    if (!strcmp(m->name, "good"))
        listed_good++;
}
static void on_error(const char *path, const char *msg, void *u)
{
    (void)u;
    (void)msg;
    if (strstr(path, "floe_abimajor.so"))
        errors_seen++;
}

Test(loader, scan_lists_good_and_reports_broken)
{
    cr_assert_eq(floe_module_scan(on_module, on_error, NULL), FLOE_OK);
    cr_assert_eq(listed_good, 1);
    cr_assert_eq(errors_seen, 1);
}

/* ---- old stage names (floe_stage_desc.replaced_by, ABI 1.8) ------------------ */

static int warnings_logged;
static char last_warning[512];
static void count_warnings(int level, const char *msg, void *u)
{
    (void)u;
    if (level == FLOE_LOG_WARN) {
        warnings_logged++;
        snprintf(last_warning, sizeof last_warning, "%s", msg);
    }
}

Test(loader, old_stage_names_run_the_new_stage_and_warn_once)
{
    floe_ctx_set_log(ctx, count_warnings, NULL);
    cr_assert_eq(floe_module_load(ctx, "oldnames"), FLOE_OK, "%s", floe_ctx_error(ctx));
    cr_assert_eq(add("oldnames.old", NULL, 0, (floe_value){0}), FLOE_OK, "%s", floe_ctx_error(ctx));
    cr_assert_str_eq(floe_pipeline_stage_name(ctx, 0), "oldnames.run");
    cr_assert_eq(warnings_logged, 1);
    cr_assert_not_null(strstr(last_warning, "stage 'oldnames.old' is deprecated: it runs as 'oldnames.run'"), "%s",
                       last_warning);
    cr_assert_eq(add("oldnames.old", NULL, 0, (floe_value){0}), FLOE_OK);
    cr_assert_eq(warnings_logged, 1, "the deprecation is logged once per context");
    /* conditional: mode = "old" (the default) keeps the stage, "new" runs the replacement with k */
    cr_assert_eq(add("oldnames.cond", "k", FLOE_PARAM_FLOAT, (floe_value){.f = 0.5}), FLOE_OK);
    cr_assert_str_eq(floe_pipeline_stage_name(ctx, 2), "oldnames.cond");
    cr_assert_eq(add("oldnames.cond", "mode", FLOE_PARAM_STRING, (floe_value){.s = "new"}), FLOE_OK);
    cr_assert_str_eq(floe_pipeline_stage_name(ctx, 3), "oldnames.run");
    cr_assert_eq(warnings_logged, 2);
    cr_assert_eq(floe_pipeline_set(ctx, "oldnames.run.k", "0.75"), FLOE_OK);
    /* a misspelt name is offered the new name, not the old one */
    cr_assert_neq(add("oldnames.olt", NULL, 0, (floe_value){0}), FLOE_OK);
    cr_assert_null(strstr(floe_ctx_error(ctx), "did you mean 'oldnames.old'"), "%s", floe_ctx_error(ctx));
}

/* ---- declared access (floe_ctx_check_access) ---------------------------------- */

static floe_set some_fluid(void)
{
    floe_set s = floe_set_create(ctx, "water", FLOE_SET_FLUID, 1000);
    const float lo[3] = {0, 0, 0}, hi[3] = {0.3f, 0.3f, 0.3f};
    cr_assert_gt(floe_fill_box(ctx, s, lo, hi, NULL), 2, "%s", floe_ctx_error(ctx));
    return s;
}

Test(loader, a_write_to_an_attribute_declared_read_fails_the_stage)
{
    some_fluid();
    cr_assert_eq(floe_module_load(ctx, "writesread"), FLOE_OK, "%s", floe_ctx_error(ctx));
    cr_assert_eq(add("writesread.run", NULL, 0, (floe_value){0}), FLOE_OK, "%s", floe_ctx_error(ctx));
    floe_ctx_check_access(ctx, 1);
    cr_assert_eq(floe_step(ctx, 1e-3), FLOE_ERR_ARG, "the write went unnoticed");
    const char *msg = floe_ctx_error(ctx);
    cr_assert_not_null(strstr(msg, "stage 'writesread.run' wrote attribute 'v' of set 'water' (particle 2), which it "
                                   "declared FLOE_READ only"),
                       "%s", msg);
    floe_ctx_check_access(ctx, 0); /* off: the same step runs (the write is the module's bug) */
    cr_assert_eq(floe_step(ctx, 1e-3), FLOE_OK, "%s", floe_ctx_error(ctx));
}

Test(loader, a_stage_that_only_reads_passes_the_check)
{
    some_fluid();
    cr_assert_eq(floe_module_load(ctx, "good"), FLOE_OK, "%s", floe_ctx_error(ctx));
    cr_assert_eq(add("good.run", NULL, 0, (floe_value){0}), FLOE_OK, "%s", floe_ctx_error(ctx));
    floe_ctx_check_access(ctx, 1);
    cr_assert_eq(floe_step(ctx, 1e-3), FLOE_OK, "%s", floe_ctx_error(ctx));
}
