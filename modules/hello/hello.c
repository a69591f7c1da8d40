/* Floe module "hello": the template to copy for a new module (walked through
 * in docs/modules.md). Folder modules/hello/ builds floe_hello.so; a scene
 * loads it (sim:load "hello") and runs its stages "hello.damp",
 * "hello.report" and "hello.pressure", the last a whole SPH pressure solver
 * on the kit for particle modules (pressure.c). */
#include "hello.h"

#include <floe/sph.h> /* the kit: <floe/module.h> and what particle modules share */

#include <math.h>   /* exp, sqrt */
#include <stdlib.h> /* calloc, free */

FLOE_MODULE_API_DEFINE; /* the core's services for every file of the module, set by the entry point */

/* Per-simulation state: init() makes one for each context that loads the
 * module, the core hands it to every stage call as call->state, fini() frees it. */
typedef struct hello_state {
    floe_ctx *ctx;   /* to log from fini, which gets only the state */
    long damp_calls; /* how many times "damp" ran */
} hello_state;

static int hello_init(floe_ctx *ctx, void **state)
{
    hello_state *s = calloc(1, sizeof *s);
    if (!s)
        return FLOE_ERR_NOMEM; /* a failed init refuses the load */
    s->ctx = ctx;
    *state = s;
    return FLOE_OK;
}

static void hello_fini(void *state)
{
    hello_state *s = state;
    api->log(s->ctx, FLOE_LOG_INFO, "hello: damp ran %ld times", s->damp_calls);
    free(s);
}

/* Stage "damp": v *= exp(-rate dt) on every fluid set. */
enum { DAMP_RATE }; /* parameter indices, in descriptor order */

static int damp(const floe_stage_call *call)
{
    floe_ctx *ctx = call->ctx;
    const double rate = call->param[DAMP_RATE].f; /* FLOAT parameters arrive as double */
    const float f = (float)exp(-rate * api->sim(ctx)->dt);
    floe_set sets[FLOE_MAX_SETS];
    int ns = api->set_list(ctx, FLOE_SET_FLUID, sets, FLOE_MAX_SETS); /* returns how many there are */
    if (ns > FLOE_MAX_SETS)
        return api->fail(ctx, FLOE_ERR_ARG, "%d fluid sets, at most %d", ns, FLOE_MAX_SETS);
    for (int s = 0; s < ns; s++) {
        floe_set_info info; /* name, n, rest density... */
        if (api->set_info(ctx, sets[s], &info) != FLOE_OK)
            return FLOE_ERR;
        /* look pointers up in every call: a resize or reorder moves the data */
        float *v = api->attr(ctx, sets[s], "v", FLOE_VEC3);
        if (!v)
            return api->fail(ctx, FLOE_ERR_ARG, "set '%s' has no velocity", info.name);
#pragma omp parallel for schedule(static)
        for (uint32_t k = 0; k < 3 * info.n; k++) /* VEC3: 3 floats per particle */
            v[k] *= f;
    }
    ((hello_state *)call->state)->damp_calls++;
    return FLOE_OK;
}

/* Stage "report": log the largest fluid speed once every `every` steps. */
enum { REPORT_EVERY };

static int report(const floe_stage_call *call)
{
    floe_ctx *ctx = call->ctx;
    const floe_sim_info *si = api->sim(ctx);
    if (si->step % (uint64_t)call->param[REPORT_EVERY].i != 0) /* INT arrives as int64_t */
        return FLOE_OK;
    floe_set sets[FLOE_MAX_SETS];
    int ns = api->set_list(ctx, FLOE_SET_FLUID, sets, FLOE_MAX_SETS);
    double vmax2 = 0.0;
    for (int s = 0; s < ns && s < FLOE_MAX_SETS; s++) {
        floe_set_info info;
        const float *v = api->attr_read(ctx, sets[s], "v", FLOE_VEC3); /* the const view of what it reads */
        if (api->set_info(ctx, sets[s], &info) != FLOE_OK || !v)
            return api->fail(ctx, FLOE_ERR_ARG, "fluid set without velocity");
        for (uint32_t i = 0; i < info.n; i++) { /* serial: a max is a reduction */
            double v2 = (double)v[3 * i] * v[3 * i] + v[3 * i + 1] * v[3 * i + 1] + v[3 * i + 2] * v[3 * i + 2];
            vmax2 = v2 > vmax2 ? v2 : vmax2;
        }
    }
    api->log(ctx, FLOE_LOG_INFO, "hello: step %llu, t = %.4f s, max speed %.4g m/s",
             (unsigned long long)si->step, si->time, sqrt(vmax2));
    api->stat(ctx, "hello.max_speed", sqrt(vmax2)); /* the run record keeps mean and max per frame */
    return FLOE_OK;
}

/* Descriptors: what the core checks when loading and `floe modules` prints. */
static const floe_param_desc damp_params[] = { /* values arrive as call->param[i] */
    [DAMP_RATE] = { FLOE_SIZED(floe_param_desc), .name = "rate", .type = FLOE_PARAM_FLOAT, .def = 1,
                    .min = 0, .max = 1e6, .unit = "1/s", .doc = "damping rate: v *= exp(-rate dt) each step" },
    {0}, /* arrays end with a zeroed entry */
};
static const floe_attr_desc damp_attrs[] = { /* the core creates or checks these */
    { FLOE_SIZED(floe_attr_desc), .kind = FLOE_SET_FLUID, .name = "v", .type = FLOE_VEC3,
      .access = FLOE_READ | FLOE_WRITE }, {0},
};
static const floe_param_desc report_params[] = {
    [REPORT_EVERY] = { FLOE_SIZED(floe_param_desc), .name = "every", .type = FLOE_PARAM_INT, .def = 100,
                       .min = 1, .max = 1e9, .unit = "steps", .doc = "log once every this many steps" },
    {0},
};
static const floe_attr_desc report_attrs[] = {
    { FLOE_SIZED(floe_attr_desc), .kind = FLOE_SET_FLUID, .name = "v", .type = FLOE_VEC3, .access = FLOE_READ }, {0},
};
static const floe_param_desc pressure_params[] = {
    [HELLO_PRESSURE_SPEED] = { FLOE_SIZED(floe_param_desc), .name = "speed_of_sound", .type = FLOE_PARAM_FLOAT,
        .def = 20, .min = 1e-3, .max = 1e6, .unit = "m/s",
        .doc = "c of the equation of state p = c^2 max(rho - rho0, 0); also dt <= 0.4 d / c" },
    {0},
};
static const floe_attr_desc pressure_attrs[] = { /* <floe/sph.h> shorthands for these descriptors */
    FLOE_ATTR_FLUID("x", FLOE_VEC3, FLOE_READ),
    FLOE_ATTR_FLUID("m", FLOE_F32, FLOE_READ),
    FLOE_ATTR_FLUID("rho", FLOE_F32, FLOE_READ),
    FLOE_ATTR_FLUID("p", FLOE_F32, FLOE_WRITE),
    FLOE_ATTR_FLUID("a", FLOE_VEC3, FLOE_READ | FLOE_WRITE),
    FLOE_ATTRS_BOUND_READ, /* x and V of every boundary set */
    {0},
};
static const floe_stage_desc stages[] = {
    { FLOE_SIZED(floe_stage_desc), .name = "damp", .doc = "damp fluid velocities (settling a scene at rest)",
      .run = damp, .params = damp_params, .attrs = damp_attrs },
    { FLOE_SIZED(floe_stage_desc), .name = "report", .doc = "log the largest fluid speed now and then",
      .run = report, .params = report_params, .attrs = report_attrs },
    { FLOE_SIZED(floe_stage_desc), .name = "pressure",
      .doc = "a weakly compressible SPH pressure force, p = c^2 max(rho - rho0, 0), Akinci walls "
             "(after sph.density and gravity)",
      .run = hello_pressure, .params = pressure_params, .attrs = pressure_attrs },
    {0},
};
/* Checkpoints (ABI 1.6, optional): damp_calls survives a resume; a module
 * whose state is only scratch leaves save and load NULL. */
static int hello_save(void *state, floe_state_io *out)
{
    const hello_state *s = state;
    return out->write(out, &s->damp_calls, sizeof s->damp_calls) ? FLOE_ERR : FLOE_OK;
}

static int hello_load(void *state, floe_state_io *in)
{
    hello_state *s = state;
    return in->read(in, &s->damp_calls, sizeof s->damp_calls) ? FLOE_ERR : FLOE_OK;
}

/* The descriptor and the entry point, const floe_module_desc *floe_module_hello(const
 * floe_api *core), in one go (<floe/module_desc.h>): the descriptor gets its
 * size, the ABI this file was built for and .name = "hello" (which must match
 * the file floe_hello.so), and the entry point keeps the core's table in
 * `api` (the module links against nothing of the core) and returns it. */
FLOE_MODULE_DESC(hello, .version = "1.0.0", .summary = "Template module: velocity damping and a speed report",
                 .stages = stages,
                 .init = hello_init, .fini = hello_fini,  /* both optional */
                 .save = hello_save, .load = hello_load)  /* optional too */
