/* The frame loop: sub-steps inside output frames, per-frame statistics,
 * frame files, the run record and progress. The step itself is the
 * pipeline (pipeline.c); this file only decides dt and when to write. */
#include "ctx.h"
#include "io.h"
#include "progress.h"
#include "record.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t stop_requested;

void floe_request_stop(void) { stop_requested = 1; }

floe_run_def floe_run_default_def(void)
{
    floe_run_def d;
    memset(&d, 0, sizeof d);
    d.frames = 60;
    d.fps = 30;
    d.cfl = 0.4;
    d.progress = 1;
    d.write_frames = 1;
    return d;
}

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double max_speed(floe_ctx *ctx)
{
    if (ctx->cl) /* OpenCL: reduced on the device, 4 bytes back */
        return ctx_cl_max_speed(ctx);
    double vmax2 = 0;
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        if (p->kind != FLOE_SET_FLUID)
            continue;
        const float *v = pset_attr(p, "v")->data;
        for (uint32_t i = 0; i < p->n; i++) {
            double v2 = (double)v[3 * i] * v[3 * i] + (double)v[3 * i + 1] * v[3 * i + 1] +
                        (double)v[3 * i + 2] * v[3 * i + 2];
            if (v2 > vmax2)
                vmax2 = v2;
        }
    }
    return sqrt(vmax2);
}

static void frame_stats(floe_ctx *ctx, floe_frame_stats *st)
{
    double ke = 0, pe = 0, err_sum = 0, err_max = 0;
    uint64_t n = 0;
    const float *g = ctx->info.gravity, *lo = ctx->info.domain_min;
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        if (p->kind != FLOE_SET_FLUID)
            continue;
        ctx_cl_host_set(ctx, p, 0); /* OpenCL: once per frame */
        const float *x = pset_attr(p, "x")->data, *v = pset_attr(p, "v")->data;
        const float *m = pset_attr(p, "m")->data, *rho = pset_attr(p, "rho")->data;
        double rho0 = p->rest_density > 0 ? p->rest_density : 1;
        for (uint32_t i = 0; i < p->n; i++) {
            double v2 = 0, h = 0;
            for (int k = 0; k < 3; k++) {
                v2 += (double)v[3 * i + k] * v[3 * i + k];
                h -= (double)g[k] * (x[3 * i + k] - lo[k]);
            }
            ke += 0.5 * m[i] * v2;
            pe += m[i] * h;
            double e = rho[i] / rho0 - 1;
            e = e > 0 ? e : 0;
            err_sum += e;
            err_max = e > err_max ? e : err_max;
        }
        n += p->n;
    }
    st->particles = (uint32_t)n;
    st->kinetic = ke;
    st->potential = pe;
    st->density_err_avg = n ? err_sum / (double)n : 0;
    st->density_err_max = err_max;
    st->max_speed = max_speed(ctx);
}

/* Write every fluid set (and static sets at frame 0) as numbered files. */
static int write_frame(floe_ctx *ctx, const floe_run_def *def, int frame)
{
    static const char *defaults[] = {"v", "rho", "p"};
    const char *const *names = def->attrs ? def->attrs : defaults;
    int nnames = def->attrs ? def->nattrs : 3;
    unsigned fmts = def->formats ? def->formats : FLOE_FMT_PLY;
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        if (p->kind != FLOE_SET_FLUID && (frame != 0 || !p->is_static))
            continue;
        ctx_cl_host_set(ctx, p, 0);
        io_column cols[MAX_ATTRS];
        int nc = 0;
        for (int a = 0; a < nnames; a++) {
            attr *at = pset_attr(p, names[a]);
            if (at && strcmp(names[a], "x") != 0)
                cols[nc++] = (io_column){at->name, at->type, at->data};
        }
        if (p->kind != FLOE_SET_FLUID) { /* boundary: positions and volumes */
            attr *at = pset_attr(p, "V");
            nc = 0;
            if (at)
                cols[nc++] = (io_column){at->name, at->type, at->data};
        }
        const char *base = def->name && p->kind == FLOE_SET_FLUID ? def->name : p->name;
        char path[2048];
        const float *x = pset_attr(p, "x")->data;
        for (int f = 0; f < 2; f++) {
            unsigned bit = f == 0 ? FLOE_FMT_PLY : FLOE_FMT_VTK;
            if (!(fmts & bit))
                continue;
            snprintf(path, sizeof path, "%s/%s.%04d.%s", def->out_dir, base, frame, f == 0 ? "ply" : "vtk");
            int rc = f == 0 ? io_write_ply(path, p->n, x, cols, nc) : io_write_vtk(path, p->n, x, cols, nc);
            if (rc)
                return ctx_fail(ctx, FLOE_ERR_IO, "cannot write frame %s", path);
        }
    }
    return FLOE_OK;
}

static void print_value(const floe_param_desc *p, const floe_value *v, char *buf, size_t len)
{
    switch (p->type) {
    case FLOE_PARAM_FLOAT: snprintf(buf, len, "%.9g", v->f); break;
    case FLOE_PARAM_INT: snprintf(buf, len, "%lld", (long long)v->i); break;
    case FLOE_PARAM_BOOL: snprintf(buf, len, "%s", v->b ? "true" : "false"); break;
    case FLOE_PARAM_STRING: snprintf(buf, len, "%s", v->s); break;
    case FLOE_PARAM_VEC3: snprintf(buf, len, "[%.9g, %.9g, %.9g]", v->v[0], v->v[1], v->v[2]); break;
    }
}

static void record_init(floe_ctx *ctx, const floe_run_def *def, floe_record *r, char *started, size_t slen)
{
    memset(r, 0, sizeof *r);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(started, slen, "%Y-%m-%dT%H:%M:%SZ", &tm);
    r->floe_version = FLOE_VERSION;
    r->scene_path = def->scene_path ? def->scene_path : "";
    r->scene_hash = def->scene_hash ? def->scene_hash : "";
    r->started = started;
    r->backend = floe_ctx_backend_name(ctx);
    r->threads = ctx->info.threads;
    r->dim = ctx->info.dim;
    r->spacing = ctx->info.spacing;
    r->support = ctx->info.support;
    r->dt_fixed = def->dt;
    r->cfl = def->cfl;
    r->fps = def->fps;
    for (int m = 0; m < ctx->nmodules && m < 32; m++) {
        r->modules[m] = (rec_module){ctx->modules[m].desc->name, ctx->modules[m].desc->version, ctx->modules[m].path};
        r->nmodules++;
    }
    for (int i = 0; i < ctx->nstages && i < REC_MAX_STAGES; i++) {
        const stage_inst *st = &ctx->stages[i];
        rec_stage *rs = &r->stages[r->nstages++];
        rs->name = st->name;
        for (int k = 0; k < st->nparams && k < 32; k++) {
            rs->param_name[k] = st->desc->params[k].name;
            print_value(&st->desc->params[k], &st->param[k], rs->param_value[k], sizeof rs->param_value[k]);
            rs->nparams++;
        }
    }
    r->status = "running";
}

/* Next time step: fixed, or CFL-adaptive bounded by the stages' limits,
 * growing by at most 50% a step, shortened to land on the frame time. */
static double choose_dt(floe_ctx *ctx, const floe_run_def *def, double prev, double t_end)
{
    double t = ctx->info.time, rest = t_end - t;
    if (def->dt > 0)
        return def->dt;
    double v = max_speed(ctx);
    double dt = def->dt_max;
    if (v > 0)
        dt = fmin(dt, def->cfl * ctx->info.spacing / v);
    if (isfinite(ctx->dt_limit))
        dt = fmin(dt, ctx->dt_limit);
    dt = prev > 0 ? fmin(dt, 1.5 * prev) : fmin(dt, 1e-4);
    if (dt >= rest)
        dt = rest;
    else if (dt > 0.5 * rest)
        dt = 0.5 * rest;
    return dt;
}

static int finish(floe_ctx *ctx, const floe_run_def *def, floe_record *rec, const char *rpath, int rc)
{
    static char msg[sizeof ctx->error];
    rec->status = rc == FLOE_OK ? "finished" : rc == FLOE_ERR_INTERRUPT ? "interrupted"
                  : rc == FLOE_ERR_BLOWUP ? "blowup" : "error";
    if (rc != FLOE_OK && rc != FLOE_ERR_INTERRUPT) {
        snprintf(msg, sizeof msg, "%s", ctx->error);
        rec->message = msg;
    }
    if (def->out_dir && rec_write(rpath, rec) && rc == FLOE_OK)
        rc = ctx_fail(ctx, FLOE_ERR_IO, "cannot write the run record %s", rpath);
    return rc;
}

static int check_def(floe_ctx *ctx, floe_run_def *d)
{
    if (d->fps == 0)
        d->fps = 30;
    if (d->cfl == 0)
        d->cfl = 0.4;
    if (!(d->fps > 0) || !isfinite(d->fps))
        return ctx_fail(ctx, FLOE_ERR_ARG, "run: fps must be positive");
    if (d->end_time > 0)
        d->frames = (int)ceil(d->end_time * d->fps - 1e-9);
    if (d->frames < 0 || d->frames > 10000000)
        return ctx_fail(ctx, FLOE_ERR_ARG, "run: frames must be in 0..1e7");
    if (d->dt < 0 || !isfinite(d->dt) || !(d->cfl > 0 && d->cfl <= 10) || d->dt_max < 0)
        return ctx_fail(ctx, FLOE_ERR_ARG, "run: dt, cfl and dt_max must be positive");
    if (d->dt_max == 0)
        d->dt_max = 1.0 / d->fps;
    return FLOE_OK;
}

int floe_run(floe_ctx *ctx, const floe_run_def *user_def, floe_run_summary *sum)
{
    floe_run_def def = *user_def;
    int rc = check_def(ctx, &def);
    if (!rc)
        rc = ctx_pipeline_check(ctx);
    if (!rc && ctx->boundary_dirty)
        rc = ctx_boundary_volumes(ctx);
    if (rc)
        return rc;
    char rpath[2048] = "", started[64];
    if (def.out_dir) {
        if (io_mkdirs(def.out_dir))
            return ctx_fail(ctx, FLOE_ERR_IO, "cannot create the output folder %s", def.out_dir);
        snprintf(rpath, sizeof rpath, "%s/run.yaml", def.out_dir);
    }
    floe_record rec;
    record_init(ctx, &def, &rec, started, sizeof started);
    rec_frame *frames = calloc((size_t)def.frames + 1, sizeof *frames);
    if (!frames)
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "run: out of memory");
    rec.frames = frames;
    for (int i = 0; i < ctx->nstages; i++)
        ctx->stages[i].ms_total = ctx->stages[i].ms_frame = 0;
    ctx_cl_run_begin(ctx); /* OpenCL: kernel statistics per run, like the stage times */
    stop_requested = 0;
    progress prog;
    progress_start(&prog, def.frames, def.progress);
    /* an adaptive run continues from the last step of the previous run */
    double t0 = wall_now(), dt_prev = ctx->dt_last;
    uint64_t steps_total = 0, particle_steps = 0;
    const char *frame_dir = def.write_frames ? def.out_dir : NULL; /* per-frame stages' files */
    if (def.out_dir && def.write_frames)
        rc = write_frame(ctx, &def, 0);
    if (!rc && ctx_has_frame_stages(ctx))
        rc = floe_frame_stages(ctx, frame_dir, 0);
    if (!rc && def.out_dir)
        rc = rec_write(rpath, &rec) ? ctx_fail(ctx, FLOE_ERR_IO, "cannot write %s", rpath) : FLOE_OK;
    double t_start = ctx->info.time;
    for (int f = 1; f <= def.frames && !rc; f++) {
        double t_end = t_start + f / def.fps, fw0 = wall_now();
        rec_frame *fr = &frames[f - 1];
        fr->st.frame = f;
        fr->st.dt_min = INFINITY;
        ctx->nstats = 0;
        for (int i = 0; i < ctx->nstages; i++)
            ctx->stages[i].ms_frame = 0;
        /* OpenCL: a step's blow-up checks may be read while the next step
         * runs; all are in before the frame's statistics and files */
        ctx->cl_defer = 1;
        while (!rc && ctx->info.time < t_end - (def.dt > 0 ? 0.5 * def.dt : 1e-12)) {
            double dt = choose_dt(ctx, &def, dt_prev, t_end);
            rc = floe_step(ctx, dt);
            dt_prev = dt;
            ctx->dt_last = dt;
            fr->st.steps++;
            fr->st.dt_min = fmin(fr->st.dt_min, dt);
            fr->st.dt_max = fmax(fr->st.dt_max, dt);
        }
        ctx->cl_defer = 0;
        if (ctx->cl && rc != FLOE_ERR_BLOWUP) { /* a blow-up of a step before the failing one is the cause */
            int frc = ctx_cl_checks_flush(ctx);
            if (frc)
                rc = frc;
        }
        if (rc)
            break;
        steps_total += fr->st.steps;
        frame_stats(ctx, &fr->st);
        if (ctx_has_frame_stages(ctx) && (rc = floe_frame_stages(ctx, frame_dir, f)))
            break;
        particle_steps += fr->st.steps * fr->st.particles;
        fr->st.time = ctx->info.time;
        fr->st.wall_s = wall_now() - fw0;
        for (int i = 0; i < ctx->nstages && i < REC_MAX_STAGES; i++)
            fr->stage_ms[i] = ctx->stages[i].ms_frame;
        for (int i = 0; i < ctx->nstats && i < REC_MAX_STATS; i++) {
            fr->stats[i] = (rec_stat){ctx->stats[i].name, ctx->stats[i].sum / (double)ctx->stats[i].count,
                                      ctx->stats[i].max};
            fr->nstats++;
        }
        rec.nframes = f;
        if (def.out_dir && def.write_frames)
            rc = write_frame(ctx, &def, f);
        if (!rc && def.out_dir && rec_write(rpath, &rec))
            rc = ctx_fail(ctx, FLOE_ERR_IO, "cannot write %s", rpath);
        progress_update(&prog, f, ctx->info.time, steps_total, wall_now() - t0);
        if (!rc && def.on_frame && def.on_frame(ctx, &fr->st, def.user))
            break;
        if (!rc && stop_requested)
            rc = ctx_fail(ctx, FLOE_ERR_INTERRUPT, "interrupted after frame %d", f);
    }
    progress_end(&prog);
    rc = finish(ctx, &def, &rec, rpath, rc);
    if (sum) {
        memset(sum, 0, sizeof *sum);
        sum->frames = rec.nframes;
        sum->steps = steps_total;
        sum->sim_time = ctx->info.time - t_start;
        sum->wall_s = wall_now() - t0;
        sum->particle_steps_per_s = sum->wall_s > 0 ? (double)particle_steps / sum->wall_s : 0;
        for (int i = 0; i < ctx->nstages && i < 64; i++) {
            sum->stage_name[i] = ctx->stages[i].name;
            sum->stage_ms[i] = ctx->stages[i].ms_total;
            sum->nstages++;
        }
        sum->status = rc;
    }
    free(frames);
    return rc;
}
