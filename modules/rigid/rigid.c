/* Floe module "rigid": rigid bodies that float, sink, roll and collide in
 * the SPH fluid (issue 15; Akinci et al. 2012, patent CN101329772B steps
 * 1-8). rigid.h lists the files; docs/rigid.md the coupling and the choices.
 *
 * Stages, in pipeline order (others' stages in brackets):
 *   [neighbours] [density] [gravity] viscosity [pressure_force | solve] force [integrate] step
 *   viscosity  the fluid-body friction (artificial viscosity with the body
 *              particles' velocities): the fluid's a, the bodies' share kept
 *   force      the fluid's pressure forces on the body particles, summed
 *              per body into a force and a torque (plus the viscous part)
 *   step       ODE: fluid forces, gravity, contacts, joints, kinematic poses;
 *              then the body particles at x = c + R r0, v = v_c + w x R r0
 *   output     per frame: each body's mesh (NAME.NNNN.obj) and bodies.csv */
#include "rigid.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

FLOE_MODULE_API_DEFINE;

double rigid_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return 1e3 * (double)t.tv_sec + 1e-6 * (double)t.tv_nsec;
}

static int rigid_init(floe_ctx *ctx, void **state)
{
    rigid_state *s = calloc(1, sizeof *s);
    if (!s)
        return FLOE_ERR_NOMEM;
    s->ctx = ctx;
    s->csv_frame = -1;
    if (rigid_engine_init(s)) {
        free(s);
        return api->fail(ctx, FLOE_ERR, "the Open Dynamics Engine could not make a world");
    }
    *state = s;
    return FLOE_OK;
}

static void rigid_fini(void *state)
{
    rigid_state *s = state;
    if (!s)
        return;
    rigid_cl_fini(s);
    rigid_engine_fini(s);
    for (int k = 0; k < s->nb; k++) {
        free(s->b[k].mx);
        free(s->b[k].mtri);
    }
    free(s->b);
    free(s->j);
    free(s->part);
    free(s->cl_cen);
    free(s->cl_out_mem[0]);
    free(s->cl_out_mem[1]);
    free(s->cl_pose_mem);
    free(s->csv);
    free(s->att_idx);
    free(s);
}

/* ---- stages ----------------------------------------------------------------- */

enum { VI_ALPHA, VI_SPEED };
enum { FO_SOLVER, FO_BOUNDARY, FO_ALPHA, FO_SPEED };

static int have_bodies(const floe_stage_call *call)
{
    const rigid_state *s = call->state;
    return s && s->nb > 0 && s->set.id;
}

static int viscosity(const floe_stage_call *call, int cl)
{
    if (!have_bodies(call) || call->param[VI_ALPHA].f == 0.0)
        return FLOE_OK;
    rigid_state *s = call->state;
    s->visc_ran = 1;
    int st = cl ? rigid_cl_finish(s) : FLOE_OK; /* the last step's bodies, placed */
    if (st)
        return st;
    return cl ? rigid_cl_viscosity(s, call->param[VI_ALPHA].f, call->param[VI_SPEED].f)
              : rigid_couple_viscosity(s, call->param[VI_ALPHA].f, call->param[VI_SPEED].f);
}

static int st_viscosity(const floe_stage_call *call) { return viscosity(call, 0); }
static int st_viscosity_cl(const floe_stage_call *call) { return viscosity(call, 1); }

static int decode_force(const floe_stage_call *call, rigid_couple *c)
{
    const char *solver = call->param[FO_SOLVER].s, *bp = call->param[FO_BOUNDARY].s;
    *c = (rigid_couple){.solver = strcmp(solver, "iisph") == 0 ? RIGID_IISPH : RIGID_WCSPH, .beta = 2.0f,
                        .alpha = call->param[FO_ALPHA].f, .c0 = call->param[FO_SPEED].f};
    if (c->solver == RIGID_IISPH && !strcmp(bp, "akinci"))
        c->beta = 1.0f;
    else if (c->solver == RIGID_WCSPH && !strcmp(bp, "akinci"))
        return api->fail(call->ctx, FLOE_ERR_ARG,
                         "rigid.force: boundary_pressure 'akinci' is iisph's; wcsph mirrors (mirror) or extrapolates");
    c->hyd = !strcmp(bp, "extrapolate");
    return FLOE_OK;
}

/* the friction once: rigid.viscosity or rigid.force{alpha}, not both */
static int force(const floe_stage_call *call, int cl)
{
    if (!have_bodies(call))
        return FLOE_OK;
    rigid_state *s = call->state;
    rigid_couple c;
    int st = decode_force(call, &c);
    if (st)
        return st;
    const int both = c.alpha > 0.0 && s->visc_ran;
    s->visc_ran = 0;
    if (both)
        return api->fail(call->ctx, FLOE_ERR_ARG,
                         "rigid.force: alpha > 0 adds the fluid-body friction, and rigid.viscosity added it this "
                         "step too: keep one of the two");
    st = cl ? rigid_cl_finish(s) : FLOE_OK; /* the last step's bodies, placed */
    if (!st)
        st = cl ? rigid_cl_pressure(s, &c) : rigid_couple_pressure(s, &c);
    return st ? st : rigid_attach_forces(s, &c); /* on particles riding on the bodies (rigid.attach) */
}

static int st_force(const floe_stage_call *call) { return force(call, 0); }
static int st_force_cl(const floe_stage_call *call) { return force(call, 1); }


/* MPI: each rank summed the fluid's forces of the particles it owns; the
 * bodies' force and torque are their sums over the ranks, so that every
 * rank steps the same bodies (ODE is deterministic) and places the same
 * body particles (boundary sets are whole on every rank). */
static int reduce_forces(const floe_stage_call *call, int cl)
{
    rigid_state *s = call->state;
    if (!s->ranks)
        s->ranks = floe_ranks(api, call->ctx); /* collective: every rank's first step */
    if (s->ranks < 2)
        return FLOE_OK;
    /* OpenCL: the last step finished and this step's sums read here, not
     * on ODE's thread (which takes no part in MPI) */
    int st = cl ? rigid_cl_current(s) : FLOE_OK;
    double *v = st ? NULL : malloc((size_t)s->nb * 6 * sizeof *v + 1);
    if (!st && !v)
        st = api->fail(call->ctx, FLOE_ERR_NOMEM, "out of memory");
    for (int k = 0; k < s->nb && !st; k++)
        memcpy(v + 6 * k, s->b[k].F, sizeof s->b[k].F), memcpy(v + 6 * k + 3, s->b[k].T, sizeof s->b[k].T);
    if (!st)
        st = floe_reduce(api, call->ctx, v, 6 * s->nb, FLOE_REDUCE_SUM);
    for (int k = 0; k < s->nb && !st; k++)
        memcpy(s->b[k].F, v + 6 * k, sizeof s->b[k].F), memcpy(s->b[k].T, v + 6 * k + 3, sizeof s->b[k].T);
    free(v);
    return st;
}

static int step_common(const floe_stage_call *call, int cl)
{
    rigid_state *s = call->state;
    if (!have_bodies(call))
        return FLOE_OK;
    const floe_sim_info *si = api->sim(call->ctx);
    if (!(si->dt > 0.0))
        return FLOE_OK;
    /* OpenCL: the last step's ODE done before attached masses change it */
    int st = cl ? rigid_cl_finish(s) : FLOE_OK;
    if (!st)
        st = rigid_attach_update(s); /* mass of particles riding on the bodies (rigid.attach) */
    if (!st)
        st = reduce_forces(call, cl);
    if (st)
        return st;
    if (cl) /* rigid_cl.c: in two halves, the second overlapping the device's work */
        return rigid_cl_step(s, si->time, si->dt);
    /* the host's time per step in the run record: ODE's collision detection
     * and contacts, ODE's step */
    const double t0 = rigid_now_ms();
    st = rigid_engine_collide(s, si->time, si->dt);
    if (st)
        return st;
    const double t1 = rigid_now_ms();
    rigid_engine_solve(s);
    api->stat(call->ctx, "rigid.contacts_ms", t1 - t0);
    api->stat(call->ctx, "rigid.ode_step_ms", rigid_now_ms() - t1);
    return rigid_place_particles(s);
}

static int st_step(const floe_stage_call *call) { return step_common(call, 0); }
static int st_step_cl(const floe_stage_call *call) { return step_common(call, 1); }


static int st_output(const floe_stage_call *call)
{
    if (!have_bodies(call))
        return FLOE_OK;
    int st = rigid_cl_current(call->state); /* the OpenCL path's step, finished */
    return st ? st : rigid_write_frame(call->state);
}

/* ---- checkpoint: the bodies' state and the CSV so far ----------------------- */

static int rigid_save(void *state, floe_state_io *out)
{
    rigid_state *s = state;
    if (rigid_cl_current(s))
        return FLOE_ERR;
    int st = out->write(out, &s->nb, sizeof s->nb);
    for (int k = 0; k < s->nb && !st; k++) {
        rigid_body *b = &s->b[k];
        st = out->write(out, b->x, sizeof b->x) || out->write(out, b->q, sizeof b->q) ||
             out->write(out, b->v, sizeof b->v) || out->write(out, b->w, sizeof b->w) ||
             out->write(out, b->F, sizeof b->F) || out->write(out, b->T, sizeof b->T);
    }
    uint64_t len = s->csv_len;
    if (!st)
        st = out->write(out, &len, sizeof len) || (len && out->write(out, s->csv, len)) ||
             out->write(out, &s->csv_frame, sizeof s->csv_frame);
    return st ? FLOE_ERR_IO : FLOE_OK;
}

static int rigid_load(void *state, floe_state_io *in)
{
    rigid_state *s = state;
    int nb = 0;
    if (in->read(in, &nb, sizeof nb))
        return FLOE_ERR_IO;
    if (nb != s->nb)
        return api->fail(s->ctx, FLOE_ERR_ARG, "the checkpoint has %d rigid bodies, the scene %d", nb, s->nb);
    for (int k = 0; k < nb; k++) {
        rigid_body *b = &s->b[k];
        if (in->read(in, b->x, sizeof b->x) || in->read(in, b->q, sizeof b->q) || in->read(in, b->v, sizeof b->v) ||
            in->read(in, b->w, sizeof b->w) || in->read(in, b->F, sizeof b->F) || in->read(in, b->T, sizeof b->T))
            return FLOE_ERR_IO;
        dBodySetPosition(b->body, b->x[0], b->x[1], b->x[2]);
        const dQuaternion q = {b->q[0], b->q[1], b->q[2], b->q[3]};
        dBodySetQuaternion(b->body, q);
        dBodySetLinearVel(b->body, b->v[0], b->v[1], b->v[2]);
        dBodySetAngularVel(b->body, b->w[0], b->w[1], b->w[2]);
    }
    uint64_t len;
    if (in->read(in, &len, sizeof len))
        return FLOE_ERR_IO;
    if (len > s->csv_cap) {
        char *c = realloc(s->csv, len);
        if (!c)
            return FLOE_ERR_NOMEM;
        s->csv = c, s->csv_cap = len;
    }
    if ((len && in->read(in, s->csv, len)) || in->read(in, &s->csv_frame, sizeof s->csv_frame))
        return FLOE_ERR_IO;
    s->csv_len = len;
    rigid_attach_loaded(s);
    return FLOE_OK;
}

/* ---- descriptors ---------------------------------------------------------------- */

#define BOUND_RW(n, t) { FLOE_SIZED(floe_attr_desc), .kind = FLOE_SET_BOUNDARY, .name = n, .type = t, .access = FLOE_WRITE }

static const floe_param_desc visc_params[] = {
    [VI_ALPHA] = { FLOE_SIZED(floe_param_desc), .name = "alpha", .type = FLOE_PARAM_FLOAT,
        .def = 0.02, .min = 0, .max = 10, .unit = "",
        .doc = "artificial viscosity between fluid and body particles (moving with the body); 0 = free slip" },
    [VI_SPEED] = { FLOE_SIZED(floe_param_desc), .name = "speed_of_sound", .type = FLOE_PARAM_FLOAT,
        .def = 25, .min = 1e-6, .max = 1e6, .unit = "m/s", .doc = "c in the viscosity 2 alpha H c (as wcsph.viscosity)" },
    {0},
};

static const floe_param_desc force_params[] = {
    [FO_SOLVER] = { FLOE_SIZED(floe_param_desc), .name = "solver", .type = FLOE_PARAM_STRING,
        .def_str = "wcsph", .choices = "wcsph|iisph", .unit = "",
        .doc = "whose boundary pressure force to mirror onto the bodies: wcsph.pressure_force or iisph.solve" },
    [FO_BOUNDARY] = { FLOE_SIZED(floe_param_desc), .name = "boundary_pressure", .type = FLOE_PARAM_STRING,
        .def_str = "extrapolate", .choices = "extrapolate|mirror|akinci", .unit = "",
        .doc = "the bodies' boundary pressure. iisph: the solve's boundary_pressure (set both alike; "
               "gradient_correction off). wcsph: mirror (the solver's p_b = p_i) or extrapolate (p_b = p_i + "
               "rho_i g.(x_b - x_i) where p_i > 0, Adami et al. 2012: the hydrostatic part added to the fluid too)" },
    [FO_ALPHA] = { FLOE_SIZED(floe_param_desc), .name = "alpha", .type = FLOE_PARAM_FLOAT,
        .def = 0, .min = 0, .max = 10, .unit = "",
        .doc = "> 0: rigid.viscosity's friction in this stage's pass over the rows (one pass instead of two; "
               "leave rigid.viscosity out then)" },
    [FO_SPEED] = { FLOE_SIZED(floe_param_desc), .name = "speed_of_sound", .type = FLOE_PARAM_FLOAT,
        .def = 25, .min = 1e-6, .max = 1e6, .unit = "m/s", .doc = "c of that viscosity, 2 alpha H c" },
    {0},
};

static const floe_attr_desc visc_attrs[] = {
    FLOE_ATTR_FLUID("x", FLOE_VEC3, FLOE_READ), FLOE_ATTR_FLUID("v", FLOE_VEC3, FLOE_READ),
    FLOE_ATTR_FLUID("m", FLOE_F32, FLOE_READ),  FLOE_ATTR_FLUID("rho", FLOE_F32, FLOE_READ),
    FLOE_ATTR_FLUID("a", FLOE_VEC3, FLOE_READ | FLOE_WRITE),
    FLOE_ATTR_BOUND("x", FLOE_VEC3), FLOE_ATTR_BOUND("V", FLOE_F32),
    {0},
};

static const floe_attr_desc force_attrs[] = {
    FLOE_ATTR_FLUID("x", FLOE_VEC3, FLOE_READ), FLOE_ATTR_FLUID("m", FLOE_F32, FLOE_READ),
    FLOE_ATTR_FLUID("rho", FLOE_F32, FLOE_READ), FLOE_ATTR_FLUID("p", FLOE_F32, FLOE_READ),
    FLOE_ATTR_FLUID("v", FLOE_VEC3, FLOE_READ), FLOE_ATTR_FLUID("a", FLOE_VEC3, FLOE_READ | FLOE_WRITE),
    FLOE_ATTR_BOUND("x", FLOE_VEC3), FLOE_ATTR_BOUND("V", FLOE_F32),
    {0},
};

static const floe_attr_desc step_attrs[] = {
    BOUND_RW("x", FLOE_VEC3), BOUND_RW("v", FLOE_VEC3),
    {0},
};

static const floe_stage_desc stages[] = {
    { FLOE_SIZED(floe_stage_desc), .name = "viscosity",
      .doc = "fluid-body friction: artificial viscosity against the body particles' velocities, on the fluid's a and, "
             "opposite, on the bodies (before the pressure stage)",
      .run = st_viscosity, .run_cl = st_viscosity_cl, .params = visc_params, .attrs = visc_attrs },
    { FLOE_SIZED(floe_stage_desc), .name = "force",
      .doc = "the fluid's pressure forces on the body particles (the solver's boundary formula, Newton's third law), "
             "summed per body into a force and a torque (after the pressure stage, before integrate); with alpha > 0 "
             "also rigid.viscosity's friction, in the same pass",
      .run = st_force, .run_cl = st_force_cl, .params = force_params, .attrs = force_attrs },
    { FLOE_SIZED(floe_stage_desc), .name = "step",
      .doc = "the bodies' step through ODE (fluid forces, gravity, contacts, joints, kinematic poses), then the body "
             "particles moved with them (after integrate)",
      .run = st_step, .run_cl = st_step_cl, .attrs = step_attrs },
    { FLOE_SIZED(floe_stage_desc), .name = "output",
      .doc = "per frame: each body's surface as NAME.NNNN.obj and one bodies.csv (t, id, name, position, quaternion, "
             "velocity, angular velocity, fluid force and torque)",
      .run = st_output, .per_frame = 1 },
    {0},
};

FLOE_MODULE_DESC(rigid, .version = "1.0.0",
                 .summary = "Rigid bodies in SPH fluid: Akinci 2012 coupling, ODE for contacts, friction and joints",
                 .stages = stages, .init = rigid_init, .fini = rigid_fini, .save = rigid_save, .load = rigid_load,
                 .lua_open = rigid_lua_open)
