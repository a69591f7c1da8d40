/* Deliberately broken modules: one source, compiled once per variant, each
 * exercising one error path of the module loader (tests/test_modules.c). */
#include <floe/module.h>

#include <stddef.h>

static const floe_api *core_api;

#if defined(WRITES_READ)
/* writes v, which it declares FLOE_READ only (access checks must catch it) */
static int run(const floe_stage_call *c)
{
    floe_set s;
    if (core_api->set_list(c->ctx, FLOE_SET_FLUID, &s, 1) < 1)
        return FLOE_OK;
    float *v = core_api->attr(c->ctx, s, "v", FLOE_VEC3);
    if (v)
        v[3 * 2 + 1] += 1.0f; /* particle 2 */
    return FLOE_OK;
}
#else
static int run(const floe_stage_call *c)
{
    (void)c;
    return FLOE_OK;
}
#endif

#if defined(OLD_NAMES)
/* old names (ABI 1.8 replaced_by): "old" always runs "run"; "cond" runs
 * "run" when mode = "new" and itself otherwise */
static const floe_param_desc cond_params[] = {
    {FLOE_SIZED(floe_param_desc), .name = "mode", .type = FLOE_PARAM_STRING, .def_str = "old", .choices = "old|new"},
    {FLOE_SIZED(floe_param_desc), .name = "k", .type = FLOE_PARAM_FLOAT, .def = 0.25, .min = 0, .max = 1},
    {0}};
#endif

static const floe_param_desc params[] = {
#if defined(BAD_PARAM)
    {FLOE_SIZED(floe_param_desc), .name = "k", .type = FLOE_PARAM_FLOAT, .def = 5, .min = 0, .max = 1},
#else
    {FLOE_SIZED(floe_param_desc), .name = "k", .type = FLOE_PARAM_FLOAT, .def = 0.5, .min = 0, .max = 1},
#endif
    {0}};

#if defined(BAD_OVERWRITE)
/* FLOE_OVERWRITE on an attribute the stage also reads: contradictory */
static const floe_attr_desc attrs[] = {
    {FLOE_SIZED(floe_attr_desc), .kind = FLOE_SET_FLUID, .name = "v", .type = FLOE_VEC3,
     .access = FLOE_READ | FLOE_WRITE | FLOE_OVERWRITE},
    {0}};
#else
static const floe_attr_desc attrs[] = {
    {FLOE_SIZED(floe_attr_desc), .kind = FLOE_SET_FLUID, .name = "v", .type = FLOE_VEC3, .access = FLOE_READ},
    {0}};
#endif

static const floe_stage_desc stages[] = {
    {FLOE_SIZED(floe_stage_desc), .name = "run", .run = run, .params = params, .attrs = attrs},
#if defined(DUP_STAGE)
    {FLOE_SIZED(floe_stage_desc), .name = "run", .run = run},
#endif
#if defined(NO_RUN)
    {FLOE_SIZED(floe_stage_desc), .name = "norun"},
#endif
#if defined(OLD_NAMES)
    {FLOE_SIZED(floe_stage_desc), .name = "old", .replaced_by = MODNAME_STR ".run"},
    {FLOE_SIZED(floe_stage_desc), .name = "cond", .run = run, .params = cond_params,
     .replaced_by = MODNAME_STR ".run", .replaced_if = "mode=new"},
#endif
    {0}};

#if defined(INIT_FAIL)
static int init(floe_ctx *ctx, void **state)
{
    (void)state;
    return core_api->fail(ctx, FLOE_ERR, "this module refuses to start");
}
#endif

static const floe_module_desc desc = {
#if defined(SMALL_DESC)
    .size = 8,
#else
    .size = sizeof(floe_module_desc),
#endif
#if defined(ABI_MAJOR)
    .abi_major = FLOE_ABI_MAJOR + 1,
#else
    .abi_major = FLOE_ABI_MAJOR,
#endif
#if defined(ABI_MINOR)
    .abi_minor = FLOE_ABI_MINOR + 1,
#else
    .abi_minor = FLOE_ABI_MINOR,
#endif
#if defined(WRONG_NAME)
    .name = "somebody_else",
#else
    .name = MODNAME_STR,
#endif
    .version = "0.0.1",
    .summary = "a deliberately broken module for the loader tests",
    .stages = stages,
#if defined(INIT_FAIL)
    .init = init,
#endif
};

#define CAT(a, b) a##b
#define ENTRY(n) CAT(floe_module_, n)

#if defined(NO_ENTRY)
FLOE_EXPORT const floe_module_desc *floe_module_misspelt(const floe_api *core);
FLOE_EXPORT const floe_module_desc *floe_module_misspelt(const floe_api *core)
#else
FLOE_EXPORT const floe_module_desc *ENTRY(MODNAME)(const floe_api *core);
FLOE_EXPORT const floe_module_desc *ENTRY(MODNAME)(const floe_api *core)
#endif
{
    core_api = core;
    return &desc;
}
