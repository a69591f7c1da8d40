/* The frame loop: sub-steps inside output frames, per-frame statistics,
 * frame files, the run record and progress. The step itself is the
 * pipeline (pipeline.c); this file only decides dt and when to write. */
#include "checkpoint.h"
#include "decomp.h"
#include "decomp_io.h"
#include "device.h"
#include "io.h"
#include "out_path.h"
#include "probes.h"
#include "progress.h"
#include "record.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Stop requests (Ctrl-C, SIGTERM) are process-wide like the signals that
 * make them, and counted: a request is pending while the count differs from
 * the count handled, so acknowledging requests never clears one that
 * arrives meanwhile (no reset races between two runs). Lock-free, hence
 * signal-safe. The wall-time limit of floe_scene_run is a deadline. */
static atomic_uint stop_requests, stop_handled;
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "floe_request_stop needs a lock-free counter");
static double deadline; /* CLOCK_MONOTONIC seconds, 0 = none */

void floe_request_stop(void) { atomic_fetch_add_explicit(&stop_requests, 1, memory_order_relaxed); }

static double wall_now(void);

static void stop_acknowledge(void)
{
    atomic_store_explicit(&stop_handled, atomic_load_explicit(&stop_requests, memory_order_relaxed),
                          memory_order_relaxed);
}

void floe_stop_reset(double timeout_s)
{
    stop_acknowledge();
    deadline = timeout_s > 0 ? wall_now() + timeout_s : 0;
}

int floe_stop_pending(void)
{
    if (atomic_load_explicit(&stop_requests, memory_order_relaxed) !=
        atomic_load_explicit(&stop_handled, memory_order_relaxed))
        return FLOE_ERR_INTERRUPT;
    return deadline > 0 && wall_now() >= deadline ? FLOE_ERR_TIMEOUT : FLOE_OK;
}

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

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* the largest speed of this rank's fluid particles */
static double local_max_speed(floe_ctx *ctx)
{
    if (ctx->dev) /* reduced on the device, 4 bytes back */
        return ctx->dev->ops->max_speed(ctx);
    double vmax2 = 0;
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        if (p->kind != FLOE_SET_FLUID)
            continue;
        const float *v = pset_attr(p, "v")->data;
        for (uint32_t i = 0, n = dd_owned(ctx, p); i < n; i++) { /* MPI: ghosts are other ranks' */
            double v2 = (double)v[3 * i] * v[3 * i] + (double)v[3 * i + 1] * v[3 * i + 1] +
                        (double)v[3 * i + 2] * v[3 * i + 2];
            if (v2 > vmax2)
                vmax2 = v2;
        }
    }
    return sqrt(vmax2);
}

/* over every rank (MPI) */
static double max_speed(floe_ctx *ctx)
{
    double v = local_max_speed(ctx);
    dd_reduce(ctx, &v, 1, FLOE_REDUCE_MAX);
    return v;
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
        double d[4];
        if (ctx->dev && ctx->dev->ops->frame_stats && ctx->dev->ops->frame_stats(ctx, p, d) == FLOE_OK) {
            ke += d[0]; /* reduced on the device: the set stays there */
            pe += d[1];
            err_sum += d[2];
            err_max = d[3] > err_max ? d[3] : err_max;
            n += p->n;
            continue;
        }
        dev_host_set(ctx, p, 0); /* a device without the reduction: the set back, once per frame */
        const float *x = pset_attr(p, "x")->data, *v = pset_attr(p, "v")->data;
        const float *m = pset_attr(p, "m")->data, *rho = pset_attr(p, "rho")->data;
        double rho0 = p->rest_density > 0 ? p->rest_density : 1;
        const uint32_t owned = dd_owned(ctx, p);
        for (uint32_t i = 0; i < owned; i++) {
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
        n += owned;
    }
    double sums[4] = {ke, pe, err_sum, (double)n}; /* MPI: over every rank */
    dd_reduce(ctx, sums, 4, FLOE_REDUCE_SUM);
    dd_reduce(ctx, &err_max, 1, FLOE_REDUCE_MAX);
    ke = sums[0], pe = sums[1], err_sum = sums[2], n = (uint64_t)sums[3];
    st->particles = (uint32_t)n;
    st->kinetic = ke;
    st->potential = pe;
    st->density_err_avg = n ? err_sum / (double)n : 0;
    st->density_err_max = err_max;
    st->max_speed = max_speed(ctx);
}

/* Write every fluid set and every_frame boundary set (and static sets at frame 0) as files numbered
 * number, into the folder dirfd (shown as def->out_dir). */
static int write_frame(floe_ctx *ctx, const floe_run_def *def, int dirfd, int frame, int number)
{
    static const char *defaults[] = {"v", "rho", "p"};
    const char *const *names = def->attrs ? def->attrs : defaults;
    int nnames = def->attrs ? def->nattrs : 3;
    unsigned fmts = def->formats ? def->formats : FLOE_FMT_PLY;
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        if (p->kind != FLOE_SET_FLUID && (frame != 0 || !p->is_static) && !p->every_frame)
            continue;
        dev_host_set(ctx, p, 0);
        io_column cols[MAX_ATTRS + 1];
        int nc = 0;
        for (int a = 0; a < nnames; a++) {
            attr *at = pset_attr(p, names[a]);
            if (at && strcmp(names[a], "x") != 0)
                cols[nc++] = (io_column){at->name, at->type, at->data};
        }
        if (p->kind != FLOE_SET_FLUID) { /* boundary: positions and volumes */
            attr *at = pset_attr(p, "V");
            int chosen = p->every_frame ? nc : 0;
            /* a set that changes (every_frame): also the run's attributes it carries */
            memmove(cols + 1, cols, (size_t)chosen * sizeof *cols);
            nc = 0;
            if (at)
                cols[nc++] = (io_column){at->name, at->type, at->data};
            for (int a = 1; a <= chosen; a++)
                if (strcmp(cols[a].name, "V") != 0)
                    cols[nc++] = cols[a];
        }
        const char *base = def->name && p->kind == FLOE_SET_FLUID ? def->name : p->name;
        char path[2048];
        const float *x = pset_attr(p, "x")->data;
        uint32_t n = p->n;
        if (ctx->dd && p->kind == FLOE_SET_FLUID) { /* MPI: each rank's part, joined by rank 0 (decomp_io.c) */
            int rc = dd_write_frame(ctx, p, dirfd, def->out_dir, base, number, fmts, dd_owned(ctx, p), x, cols, nc);
            if (rc)
                return rc;
            continue;
        }
        if (!dd_writer(ctx)) /* boundary sets: rank 0's */
            continue;
        for (int f = 0; f < 2; f++) {
            unsigned bit = f == 0 ? FLOE_FMT_PLY : FLOE_FMT_VTK;
            if (!(fmts & bit))
                continue;
            snprintf(path, sizeof path, "%s.%04d.%s", base, number, f == 0 ? "ply" : "vtk");
            int rc = f == 0 ? io_write_ply_at(dirfd, path, n, x, cols, nc) : io_write_vtk_at(dirfd, path, n, x, cols, nc);
            if (rc)
                return ctx_fail(ctx, FLOE_ERR_IO, "cannot write frame %s/%s: %s", def->out_dir, path, strerror(errno));
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
    static const char *const outside[] = {"delete", "error", "clamp"};
    r->outside = outside[ctx->outside];
    r->status = "running";
}

/* Next time step: fixed, or CFL-adaptive bounded by the stages' limits,
 * growing by at most 50% a step, shortened to land on the frame time. */
static double choose_dt(floe_ctx *ctx, const floe_run_def *def, double prev, double t_end)
{
    double t = ctx->info.time, rest = t_end - t;
    if (def->dt > 0)
        return def->dt;
    /* MPI: the largest speed and the least of the stages' limits over every
     * rank, in one reduction */
    double r[2] = {local_max_speed(ctx), -ctx->dt_limit};
    dd_reduce(ctx, r, 2, FLOE_REDUCE_MAX);
    const double v = r[0], limit = -r[1];
    double dt = def->dt_max;
    if (v > 0)
        dt = fmin(dt, def->cfl * ctx->info.spacing / v);
    if (isfinite(limit))
        dt = fmin(dt, limit);
    dt = prev > 0 ? fmin(dt, 1.5 * prev) : fmin(dt, 1e-4);
    if (dt >= rest)
        dt = rest;
    else if (dt > 0.5 * rest)
        dt = 0.5 * rest;
    return dt;
}

/* Where a run writes: its folder, the record's name and descriptor. */
typedef struct run_out {
    int dir;                 /* the run folder, -1 = writes nothing */
    int parts;               /* MPI: the run folder on the other ranks, where they write frame parts */
    int rec;                 /* run record open for appending, -1 = none */
    int first;               /* file number of frame 0 */
    int recno;               /* record number: 0 = run.yaml, k = run.<k+1>.yaml */
    char rec_name[32];
} run_out;

static void out_record(run_out *o, int recno)
{
    o->recno = recno;
    if (recno == 0)
        snprintf(o->rec_name, sizeof o->rec_name, "run.yaml");
    else
        snprintf(o->rec_name, sizeof o->rec_name, "run.%d.yaml", recno + 1);
}

static int open_out(floe_ctx *ctx, const floe_run_def *def, run_out *o)
{
    char err[1500];
    int recno = 0;
    o->dir = o->rec = o->parts = -1;
    o->first = 0;
    if (!def->out_dir)
        return FLOE_OK;
    o->dir = out_dir_open(ctx->out, def->out_dir, 1, err, sizeof err);
    if (o->dir < 0)
        return ctx_fail(ctx, errno == EPERM || errno == ELOOP ? FLOE_ERR_ARG : FLOE_ERR_IO, "%s", err);
    if (out_take(ctx->out, o->dir, def->out_dir, &o->first, &recno, err, sizeof err) != 0)
        return ctx_fail(ctx, errno == EEXIST ? FLOE_ERR_ARG : FLOE_ERR_IO, "%s", err);
    out_record(o, recno);
    return FLOE_OK;
}

static void close_out(floe_ctx *ctx, run_out *o, int frames)
{
    if (o->rec >= 0)
        close(o->rec);
    if (o->dir >= 0) {
        out_taken_update(ctx->out, o->dir, o->first + frames + 1);
        close(o->dir);
    }
    if (o->parts >= 0)
        close(o->parts);
    o->rec = o->dir = o->parts = -1;
}

static const char *status_name(int rc, int stopped)
{
    switch (rc) {
    case FLOE_OK: return stopped ? "stopped" : "finished";
    case FLOE_ERR_INTERRUPT: return "interrupted";
    case FLOE_ERR_TIMEOUT: return "timeout";
    case FLOE_ERR_BLOWUP: return "blowup";
    default: return "failed";
    }
}

/* The record's final form, rewritten whole (once per run). */
static int finish(floe_ctx *ctx, const floe_run_def *def, floe_record *rec, run_out *o, int rc, int stopped)
{
    char msg[sizeof ctx->error]; /* read by the record's writer below */
    rec->status = status_name(rc, stopped);
    if (rc != FLOE_OK) {
        snprintf(msg, sizeof msg, "%s", ctx->error);
        rec->message = msg;
    }
    if (o->dir >= 0 && rec_write_at(o->dir, o->rec_name, rec) && rc == FLOE_OK)
        rc = ctx_fail(ctx, FLOE_ERR_IO, "cannot write the run record %s/%s: %s", def->out_dir, o->rec_name,
                      strerror(errno));
    return rc;
}

/* A stop asked for (signal, wall-time limit) ends the run after this frame. */
static int stop_check(floe_ctx *ctx, int frame)
{
    int why = dd_stop_any(ctx, floe_stop_pending()); /* MPI: one rank's request stops every rank */
    if (why == FLOE_ERR_INTERRUPT)
        return ctx_fail(ctx, why, "interrupted after frame %d", frame);
    if (why == FLOE_ERR_TIMEOUT)
        return ctx_fail(ctx, why, "the wall-time limit (--timeout) was reached after frame %d", frame);
    return FLOE_OK;
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
    if (d->dt > (1 + 1e-9) / d->fps)
        return ctx_fail(ctx, FLOE_ERR_ARG, "run: the fixed dt = %g s is longer than a frame (1/fps = %g s): frames "
                        "would repeat without a step between them; give fps <= 1/dt", d->dt, 1.0 / d->fps);
    if (d->dt_max == 0)
        d->dt_max = 1.0 / d->fps;
    if (d->checkpoint_every < 0 || (d->checkpoint_every > 0 && !d->out_dir))
        return ctx_fail(ctx, FLOE_ERR_ARG, "run: checkpoint_every must be >= 0 and needs an output folder (out)");
    for (int a = 0; d->attrs && a < d->nattrs; a++) { /* frames carry what they are asked for */
        int found = 0;
        for (int s = 0; s < ctx->npsets && !found; s++)
            /* a set written every frame (freeze's ice) gets its attributes
             * from its module during the run: they cannot be checked yet */
            found = (ctx->sets[s].kind == FLOE_SET_FLUID && pset_attr(&ctx->sets[s], d->attrs[a]) != NULL) ||
                    ctx->sets[s].every_frame;
        if (!found && ctx->npsets > 0)
            return ctx_fail(ctx, FLOE_ERR_ARG, "run: attribute '%s' (attributes) is on no fluid set", d->attrs[a]);
    }
    if (d->name && !out_name_ok(d->name)) /* it becomes a file name */
        return ctx_fail(ctx, FLOE_ERR_ARG, "run: name '%s' must be " OUT_NAME_RULE, d->name);
    return FLOE_OK;
}

enum { RESUME_SKIP = -1000 };

/* --resume (FLOE_OUTPUT_RESUME): the first run into the folder reads the
 * checkpoint there. A run before the checkpoint's is skipped (RESUME_SKIP);
 * the checkpoint's run gets its state, frame numbers and record (ck->data
 * stays set); later runs, and every run without --resume, run as usual. */
static int resume_begin(floe_ctx *ctx, const floe_run_def *def, const char *shown, run_out *o, uint32_t ordinal,
                        ckpt_file *ck)
{
    /* MPI: each rank reads its own checkpoint file, rank 0's in the run
     * folder, the others' in the same folder through their parts' handle */
    const int dir = o->dir >= 0 ? o->dir : o->parts;
    if (dir < 0 || !ctx->out || !(ctx->out->flags & FLOE_OUTPUT_RESUME) || ctx->resumed)
        return FLOE_OK;
    int rc = ckpt_read(ctx, dir, shown, def->scene_hash, ck);
    if (!rc && ctx->dd) /* MPI: every rank's checkpoint of the same run and frame, or none resumes */
        rc = dd_same_checkpoint(ctx, ck->run.ordinal, ck->run.frame);
    if (rc)
        return rc;
    if (ck->run.ordinal > ordinal) {
        ctx_log(ctx, FLOE_LOG_INFO, "resume: run %u of the scene comes before the checkpoint's (run %u): skipped",
                ordinal + 1, ck->run.ordinal + 1);
        return RESUME_SKIP;
    }
    if (ck->run.ordinal < ordinal || ck->run.frame > def->frames)
        return ctx_fail(ctx, FLOE_ERR_ARG, "--resume: the checkpoint in %s is after frame %d of run %u of the "
                        "scene; this run (%u) asks for %d frames", shown, ck->run.frame,
                        ck->run.ordinal + 1, ordinal + 1, def->frames);
    if ((rc = ckpt_restore(ctx, ck, shown)) != FLOE_OK || (rc = dd_restored(ctx)) != FLOE_OK)
        return rc;
    ctx->resumed = 1;
    o->first = ck->run.first;
    out_record(o, ck->run.recno);
    if (o->dir >= 0)
        out_taken_set(ctx->out, o->dir, o->first, ck->run.recno);
    ctx_log(ctx, FLOE_LOG_INFO, "resume: from the checkpoint after frame %d (t = %.9g s, step %llu) in %s",
            ck->run.frame, ctx->info.time, (unsigned long long)ctx->info.step, shown);
    return FLOE_OK;
}

static int run(floe_ctx *ctx, const floe_run_def *user_def, floe_run_summary *sum)
{
    floe_run_def def = *user_def;
    int rc = check_def(ctx, &def);
    if (!rc)
        rc = ctx_pipeline_check(ctx);
    if (!rc && !ctx->dataflow_checked)
        rc = floe_pipeline_check(ctx, NULL, NULL);
    if (!rc && ctx->boundary_dirty)
        rc = ctx_boundary_volumes(ctx);
    if (!rc) /* MPI: the sets split into slabs (the first run), or refused */
        rc = dd_run_begin(ctx);
    if (rc)
        return rc;
    /* MPI: rank 0 writes the record and joins the frames; every rank
     * writes its part of each frame (decomp_io.c) */
    const int frames_out = def.out_dir && def.write_frames;
    const char *out_dir = def.out_dir;
    if (!dd_writer(ctx)) {
        def.out_dir = NULL;
        def.progress = 0;
    }
    run_out out;
    char started[64];
    rc = open_out(ctx, &def, &out);
    /* MPI: every rank writes its frame parts into the folder rank 0 took */
    const int resuming = ctx->out && (ctx->out->flags & FLOE_OUTPUT_RESUME);
    if (!rc && (frames_out || (out_dir && (def.checkpoint_every > 0 || resuming))) && ctx->dd)
        rc = dd_frame_folder(ctx, out_dir, &out.first, &out.parts);
    if (rc) {
        close_out(ctx, &out, -1);
        return rc;
    }
    uint32_t ordinal = ctx->nruns++;
    ckpt_file ck;
    memset(&ck, 0, sizeof ck);
    if ((rc = resume_begin(ctx, &def, out_dir ? out_dir : ".", &out, ordinal, &ck)) != FLOE_OK) {
        ckpt_free(&ck);
        if (rc == RESUME_SKIP) { /* a run the checkpoint's lies after: its state is the checkpoint's */
            close(out.dir);
            if (sum)
                memset(sum, 0, sizeof *sum);
            return FLOE_OK;
        }
        close_out(ctx, &out, -1);
        return rc;
    }
    const int resumed = ck.data != NULL, k0 = resumed ? ck.run.frame : 0;
    floe_record rec;
    record_init(ctx, &def, &rec, started, sizeof started);
    rec.first_frame = out.first;
    rec_frame *frames = calloc((size_t)def.frames + 1, sizeof *frames);
    if (!frames) {
        ckpt_free(&ck);
        close_out(ctx, &out, -1);
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "run: out of memory");
    }
    if (resumed) /* the record's lines of the frames before the checkpoint */
        memcpy(frames, ck.run.frames, (size_t)k0 * sizeof *frames);
    rec.frames = frames;
    for (int i = 0; i < ctx->nstages; i++)
        ctx->stages[i].ms_total = ctx->stages[i].ms_frame = 0, ctx->stages[i].calls = 0;
    if (ctx->dev) /* kernel statistics per run, like the stage times */
        ctx->dev->ops->run_begin(ctx);
    progress prog;
    progress_start(&prog, def.frames, def.progress);
    /* an adaptive run continues from the last step of the previous run */
    double t0 = wall_now(), c0 = cpu_now(), dt_prev = resumed ? ck.run.dt_prev : ctx->dt_last;
    uint64_t steps_total = resumed ? ck.run.steps_total : 0, particle_steps = resumed ? ck.run.particle_steps : 0;
    int stopped = 0;
    if (out.dir >= 0 && (out.rec = rec_begin_at(out.dir, out.rec_name, &rec)) < 0)
        rc = ctx_fail(ctx, FLOE_ERR_IO, "cannot write %s/%s: %s", def.out_dir, out.rec_name, strerror(errno));
    for (int f = 1; f <= k0 && !rc && out.rec >= 0; f++) /* resumed: the record as the checkpoint left it */
        if (rec_append_frame(out.rec, &rec, &frames[f - 1]))
            rc = ctx_fail(ctx, FLOE_ERR_IO, "cannot write %s/%s: %s", def.out_dir, out.rec_name, strerror(errno));
    rec.nframes = k0;
    if (!rc && frames_out && !resumed)
        rc = write_frame(ctx, &def, out.dir >= 0 ? out.dir : out.parts, 0, out.first);
    if (!rc && !resumed && ctx_has_frame_stages(ctx)) /* meshes of frame 0 beside its particles */
        rc = ctx_frame_stages_at(ctx, def.write_frames ? out.dir : -1, def.out_dir, out.first);
    if (!rc) /* probes: new tables, their first row */
        rc = probes_run_begin(ctx, def.write_frames ? out.dir : -1, def.out_dir, resumed);
    if (!rc)
        rc = stop_check(ctx, k0); /* asked for before the run began */
    double t_start = resumed ? ck.run.t_start : ctx->info.time; /* ck kept: the frames name its statistics */
    const uint64_t outside0 = ctx->outside_count;
    ctx->nset_log = 0; /* set before the run: the record's stages show them */
    for (int f = k0 + 1; f <= def.frames && !rc; f++) {
        double t_end = t_start + f / def.fps, fw0 = wall_now();
        rec_frame *fr = &frames[f - 1];
        fr->st.frame = f;
        for (int i = 0; i < ctx->nset_log && i < REC_MAX_SETS; i++) { /* changed during the run */
            memcpy(fr->set_key[fr->nsets], ctx->set_log_key[i], sizeof fr->set_key[0]);
            memcpy(fr->set_value[fr->nsets], ctx->set_log_value[i], sizeof fr->set_value[0]);
            fr->nsets++;
        }
        ctx->nset_log = 0;
        fr->st.dt_min = INFINITY;
        ctx->nstats = 0;
        for (int i = 0; i < ctx->nstages; i++)
            ctx->stages[i].ms_frame = 0;
        /* a device: a step's blow-up checks may be read while the next
         * step runs; all are in before the frame's statistics and files */
        if (ctx->dev)
            ctx->dev->ops->defer_checks(ctx, 1);
        /* Verlet lists rebuilt at each frame's first step: a run resumed
         * from a frame's checkpoint rebuilds where this one does */
        ctx->nb_rebuild = 1;
        while (!rc && ctx->info.time < t_end - (def.dt > 0 ? 0.5 * def.dt : 1e-12)) {
            double dt = choose_dt(ctx, &def, dt_prev, t_end), ts0 = wall_now();
            rc = floe_step(ctx, dt);
            dd_step_time(ctx, 1e3 * (wall_now() - ts0));
            if (!rc)
                rc = probes_after_step(ctx);
            dt_prev = dt;
            ctx->dt_last = dt;
            fr->st.steps++;
            fr->st.dt_min = fmin(fr->st.dt_min, dt);
            fr->st.dt_max = fmax(fr->st.dt_max, dt);
        }
        if (ctx->dev)
            ctx->dev->ops->defer_checks(ctx, 0);
        if (ctx->dev && rc != FLOE_ERR_BLOWUP) { /* a blow-up of a step before the failing one is the cause */
            int frc = ctx->dev->ops->checks_flush(ctx);
            if (frc)
                rc = frc;
        }
        if (rc && floe_stop_pending()) /* a Lua stage stopped by Ctrl-C or the time limit */
            rc = stop_check(ctx, f - 1);
        if (rc)
            break;
        steps_total += fr->st.steps;
        frame_stats(ctx, &fr->st);
        if (ctx_has_frame_stages(ctx) &&
            (rc = ctx_frame_stages_at(ctx, def.write_frames ? out.dir : -1, def.out_dir, out.first + f)))
            break;
        particle_steps += fr->st.steps * fr->st.particles;
        fr->st.time = ctx->info.time;
        fr->st.wall_s = wall_now() - fw0;
        dd_frame_ranks ranks;
        if ((rc = dd_frame_end(ctx, f, &ranks))) /* MPI: per-rank timings; the load balance */
            break;
        fr->nranks = ranks.n;
        for (int r = 0; r < ranks.n; r++)
            fr->rank_particles[r] = ranks.particles[r], fr->rank_step_ms[r] = ranks.step_ms[r],
            fr->rank_comm_ms[r] = ranks.comm_ms[r];
        for (int i = 0; i < ctx->nstages && i < REC_MAX_STAGES; i++)
            fr->stage_ms[i] = ctx->stages[i].ms_frame;
        for (int i = 0; i < ctx->nstats && i < REC_MAX_STATS; i++) {
            fr->stats[i] = (rec_stat){ctx->stats[i].name, ctx->stats[i].sum / (double)ctx->stats[i].count,
                                      ctx->stats[i].max};
            fr->nstats++;
        }
        rec.nframes = f;
        rec.outside_count = ctx->outside_count - outside0;
        if (frames_out)
            rc = write_frame(ctx, &def, out.dir >= 0 ? out.dir : out.parts, f, out.first + f);
        if (!rc)
            rc = probes_after_frame(ctx);
        if (!rc && out.rec >= 0 && rec_append_frame(out.rec, &rec, fr))
            rc = ctx_fail(ctx, FLOE_ERR_IO, "cannot write %s/%s: %s", def.out_dir, out.rec_name, strerror(errno));
        if (!rc && def.checkpoint_every > 0 && f % def.checkpoint_every == 0) {
            ckpt_run cr = {ordinal, f, out.first, out.recno, t_start, dt_prev, steps_total, particle_steps, frames};
            /* MPI: every rank its own file in the run folder */
            rc = ckpt_save(ctx, out.dir >= 0 ? out.dir : out.parts, out_dir, def.scene_hash, &cr);
        }
        progress_update(&prog, f, ctx->info.time, steps_total, wall_now() - t0);
        /* on_frame: > 0 stops the run (status stopped), < 0 fails it with
         * the message the callback left in the context */
        int cb = !rc && def.on_frame ? def.on_frame(ctx, &fr->st, def.user) : 0;
        if (cb > 0)
            stopped = 1;
        else if (cb < 0) /* Ctrl-C or the time limit inside the callback is a stop */
            rc = floe_stop_pending() ? stop_check(ctx, f) : cb;
        if (!rc && !stopped)
            rc = stop_check(ctx, f);
        if (stopped)
            break;
    }
    progress_end(&prog);
    rec.outside_count = ctx->outside_count - outside0;
    if (rec.outside_count)
        ctx_log(ctx, FLOE_LOG_INFO, "%llu particles left the domain and were %s (domain outside = \"%s\")",
                (unsigned long long)rec.outside_count, ctx->outside == FLOE_OUTSIDE_CLAMP ? "clamped" : "deleted",
                rec.outside);
    probes_run_end(ctx);
    dd_run_end(ctx);
    rc = finish(ctx, &def, &rec, &out, rc, stopped);
    close_out(ctx, &out, rec.nframes);
    if (rc == FLOE_ERR_INTERRUPT || rc == FLOE_ERR_TIMEOUT)
        stop_acknowledge(); /* handled: a later run starts afresh */
    if (sum) {
        memset(sum, 0, sizeof *sum);
        sum->frames = rec.nframes;
        sum->steps = steps_total;
        sum->sim_time = ctx->info.time - t_start;
        sum->wall_s = wall_now() - t0;
        sum->cpu_s = cpu_now() - c0;
        sum->particle_steps_per_s = sum->wall_s > 0 ? (double)particle_steps / sum->wall_s : 0;
        for (int i = 0; i < ctx->nstages && i < 64; i++) {
            snprintf(sum->stage_name[i], sizeof sum->stage_name[i], "%s", ctx->stages[i].name);
            sum->stage_ms[i] = ctx->stages[i].ms_total;
            sum->stage_calls[i] = ctx->stages[i].calls;
            sum->stage_per_frame[i] = ctx->stages[i].per_frame;
            sum->nstages++;
        }
        sum->status = rc;
    }
    free(frames);
    ckpt_free(&ck);
    return rc;
}

int floe_run(floe_ctx *ctx, const floe_run_def *def, floe_run_summary *sum)
{
    int prev = ctx_threads_enter(ctx);
    int rc = run(ctx, def, sum);
    ctx_threads_leave(prev);
    return rc;
}
