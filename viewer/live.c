/* floe view: a scene running live. The scene runs through libfloe's public
 * API (floe_scene_run) on a thread of its own; after every output frame its
 * on_frame copies the particles into a frame for the window, applies the
 * parameters changed in the panel (floe_pipeline_set: the run record's next
 * frame lists them under "set:") and waits until the window lets it go on
 * (pause, single step, the linked time of side-by-side panes). */
#include "vw.h"

#include <floe/floe.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CHANGES 16
#define MAX_PARAMS 128

struct vw_live {
    vw_live_opts o;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    vw_frame latest;         /* the newest frame not taken yet */
    long latest_no;          /* its number (frames shown, over all sim:run calls) */
    long shown, allowed;
    double time, wall, derr, t_prev;
    int done, rc, quit, restart, runs;
    int nchanges;
    char change_key[MAX_CHANGES][160], change_value[MAX_CHANGES][64];
    int nparams;
    vw_param params[MAX_PARAMS];
    char method[128];
    char message[1024];
};

/* a copy of every set of ctx: positions and float attributes */
static void snapshot(floe_ctx *ctx, vw_frame *f)
{
    const floe_api *api = floe_core_api();
    floe_set sets[VW_MAX_CLOUDS];
    int n = api->set_list(ctx, FLOE_SET_ANY, sets, VW_MAX_CLOUDS);
    const floe_sim_info *info = floe_ctx_info(ctx);
    f->time = info->time;
    f->spacing = info->spacing;
    f->dim = info->dim;
    for (int i = 0; i < n && f->nclouds < VW_MAX_CLOUDS; i++) {
        floe_set_info si;
        if (api->set_info(ctx, sets[i], &si))
            continue;
        const float *x = floe_attr(ctx, sets[i], "x", FLOE_VEC3);
        vw_cloud *c = &f->clouds[f->nclouds];
        memset(c, 0, sizeof *c);
        snprintf(c->name, VW_NAME, "%s", si.name);
        c->boundary = si.kind == FLOE_SET_BOUNDARY;
        c->n = si.n;
        c->x = malloc(sizeof(float) * 3 * (si.n ? si.n : 1));
        if (!c->x)
            continue;
        if (x)
            memcpy(c->x, x, sizeof(float) * 3 * si.n);
        else
            memset(c->x, 0, sizeof(float) * 3 * si.n);
        f->nclouds++;
        if (c->boundary)
            continue; /* walls: positions only */
        const char *name;
        floe_type type;
        void *data;
        for (int k = 0; floe_attr_at(ctx, sets[i], k, &name, &type, &data); k++) {
            if (!strcmp(name, "x") || (type != FLOE_F32 && type != FLOE_VEC3))
                continue;
            const float *src = floe_attr(ctx, sets[i], name, type); /* the host copy, up to date */
            if (!src)
                continue;
            float *dst = malloc(sizeof(float) * (si.n ? si.n : 1));
            if (!dst)
                break;
            char nm[VW_NAME];
            if (type == FLOE_VEC3) {
                for (uint32_t j = 0; j < si.n; j++) {
                    const float *v = &src[3 * j];
                    dst[j] = sqrtf(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
                }
                if (!strcmp(name, "v"))
                    snprintf(nm, sizeof nm, "speed");
                else
                    snprintf(nm, sizeof nm, "|%.*s|", VW_NAME - 3, name);
            } else {
                memcpy(dst, src, sizeof(float) * si.n);
                snprintf(nm, sizeof nm, "%s", name);
            }
            vw_cloud_add_attr(c, nm, dst);
        }
    }
}

/* the float, int and bool parameters of the pipeline, with their values */
static void list_params(vw_live *lv, floe_ctx *ctx)
{
    lv->nparams = 0;
    lv->method[0] = 0;
    for (int i = 0; i < floe_pipeline_length(ctx); i++) {
        const char *sn = floe_pipeline_stage_name(ctx, i);
        const char *dot = sn ? strchr(sn, '.') : NULL;
        if (dot) { /* the modules of the pipeline, in order: the method */
            char mod[64];
            snprintf(mod, sizeof mod, "%.*s", (int)(dot - sn), sn);
            if (strcmp(mod, "hello") && strcmp(mod, "surface") && strcmp(mod, "raycast") && !strstr(lv->method, mod)) {
                size_t l = strlen(lv->method);
                snprintf(lv->method + l, sizeof lv->method - l, "%s%s", l ? "+" : "", mod);
            }
        }
        const floe_param_desc *pd;
        floe_value v;
        for (int k = 0; lv->nparams < MAX_PARAMS && floe_pipeline_param(ctx, i, k, &pd, &v) == 0; k++) {
            int choice = pd->type == FLOE_PARAM_STRING && pd->choices && pd->choices[0];
            if (pd->type != FLOE_PARAM_FLOAT && pd->type != FLOE_PARAM_INT && pd->type != FLOE_PARAM_BOOL && !choice)
                continue;
            vw_param *p = &lv->params[lv->nparams];
            int dup = 0;
            snprintf(p->key, sizeof p->key, "%s.%s", sn, pd->name);
            for (int j = 0; j < lv->nparams; j++)
                dup |= !strcmp(lv->params[j].key, p->key);
            if (dup)
                continue;
            p->type = pd->type;
            if (choice) {
                snprintf(p->text, sizeof p->text, "%s", v.s ? v.s : "");
                snprintf(p->choices, sizeof p->choices, "%s", pd->choices);
                lv->nparams++;
                continue;
            }
            p->value = pd->type == FLOE_PARAM_FLOAT ? v.f : pd->type == FLOE_PARAM_INT ? (double)v.i : v.b;
            p->min = pd->min, p->max = pd->max;
            if (!(p->min < p->max)) { /* no range declared: around the value */
                p->min = 0;
                p->max = p->value > 0 ? 4 * p->value : 1;
            }
            lv->nparams++;
        }
    }
}

static void apply_changes(vw_live *lv, floe_ctx *ctx)
{
    for (int i = 0; i < lv->nchanges; i++)
        if (floe_pipeline_set(ctx, lv->change_key[i], lv->change_value[i]))
            snprintf(lv->message, sizeof lv->message, "%s", floe_ctx_error(ctx));
    if (lv->nchanges)
        list_params(lv, ctx);
    lv->nchanges = 0;
}

static int on_frame(floe_ctx *ctx, const floe_frame_stats *st, void *user)
{
    vw_live *lv = user;
    vw_frame f;
    memset(&f, 0, sizeof f);
    snapshot(ctx, &f);
    pthread_mutex_lock(&lv->mu);
    vw_frame_free(&lv->latest);
    lv->latest = f;
    lv->latest_no = ++lv->shown;
    if (st->time >= lv->t_prev) /* cost so far; a second sim:run of the scene goes on from its time */
        lv->wall += st->wall_s;
    lv->t_prev = st->time;
    lv->time = st->time;
    lv->derr = st->density_err_avg;
    if (lv->shown == 1 || lv->nparams == 0)
        list_params(lv, ctx);
    apply_changes(lv, ctx);
    pthread_cond_broadcast(&lv->cv);
    while (!lv->quit && !lv->restart && lv->allowed <= lv->shown) {
        pthread_cond_wait(&lv->cv, &lv->mu);
        apply_changes(lv, ctx); /* changed while paused: from the next frame on */
    }
    int stop = lv->quit || lv->restart;
    pthread_mutex_unlock(&lv->mu);
    return stop ? 1 : 0;
}

static void quiet_log(int level, const char *msg, void *user)
{
    (void)user;
    if (level >= FLOE_LOG_WARN)
        fprintf(stderr, "floe: %s\n", msg);
}

static void *scene_thread(void *u)
{
    vw_live *lv = u;
    for (;;) {
        floe_scene_opts o;
        memset(&o, 0, sizeof o);
        o.path = lv->o.scene;
        o.frames = lv->o.frames;
        o.out_dir = lv->o.out_dir;
        o.threads = lv->o.threads;
        o.progress = 0;
        o.write_frames = 1;
        o.sets = lv->o.sets;
        o.nsets = lv->o.nsets;
        o.force = lv->o.force || lv->runs > 0; /* a restart replaces the run it began */
        o.on_frame = on_frame;
        o.frame_user = lv;
        if (lv->o.quiet)
            o.log = quiet_log;
        char err[2048] = "";
        int rc = floe_scene_run(&o, err, sizeof err);
        pthread_mutex_lock(&lv->mu);
        lv->runs++;
        if (lv->restart && !lv->quit) {
            lv->restart = 0;
            lv->shown = lv->latest_no = 0;
            lv->wall = lv->time = lv->t_prev = lv->derr = 0;
            lv->allowed = 1;
            vw_frame_free(&lv->latest);
            pthread_mutex_unlock(&lv->mu);
            continue;
        }
        lv->done = 1;
        lv->rc = rc;
        if (rc && err[0])
            snprintf(lv->message, sizeof lv->message, "%s", err);
        pthread_cond_broadcast(&lv->cv);
        pthread_mutex_unlock(&lv->mu);
        if (rc && err[0])
            fprintf(stderr, "floe view: %s\n", err);
        return NULL;
    }
}

vw_live *vw_live_start(const vw_live_opts *o)
{
    vw_live *lv = calloc(1, sizeof *lv);
    if (!lv)
        return NULL;
    lv->o = *o;
    lv->allowed = 1;
    pthread_mutex_init(&lv->mu, NULL);
    pthread_cond_init(&lv->cv, NULL);
    if (pthread_create(&lv->thread, NULL, scene_thread, lv)) {
        free(lv);
        return NULL;
    }
    return lv;
}

void vw_live_allow(vw_live *lv, long upto)
{
    pthread_mutex_lock(&lv->mu);
    if (upto > lv->allowed) {
        lv->allowed = upto;
        pthread_cond_broadcast(&lv->cv);
    }
    pthread_mutex_unlock(&lv->mu);
}

int vw_live_take(vw_live *lv, vw_frame *f, long *seen)
{
    int got = 0;
    pthread_mutex_lock(&lv->mu);
    if (lv->latest_no > *seen && lv->latest.nclouds) {
        vw_frame_free(f);
        *f = lv->latest;
        memset(&lv->latest, 0, sizeof lv->latest);
        *seen = lv->latest_no;
        got = 1;
    }
    pthread_mutex_unlock(&lv->mu);
    return got;
}

void vw_live_progress(vw_live *lv, long *frames, double *time, double *wall, double *derr, int *done, int *rc)
{
    pthread_mutex_lock(&lv->mu);
    *frames = lv->shown;
    *time = lv->time;
    *wall = lv->wall;
    *derr = lv->derr;
    *done = lv->done;
    *rc = lv->rc;
    pthread_mutex_unlock(&lv->mu);
}

void vw_live_set(vw_live *lv, const char *key, const char *value)
{
    pthread_mutex_lock(&lv->mu);
    int i = 0;
    while (i < lv->nchanges && strcmp(lv->change_key[i], key))
        i++;
    if (i < MAX_CHANGES) {
        snprintf(lv->change_key[i], sizeof lv->change_key[i], "%s", key);
        snprintf(lv->change_value[i], sizeof lv->change_value[i], "%s", value);
        if (i == lv->nchanges)
            lv->nchanges++;
        for (int k = 0; k < lv->nparams; k++) /* the panel shows it at once */
            if (!strcmp(lv->params[k].key, key)) {
                if (lv->params[k].type == FLOE_PARAM_STRING)
                    snprintf(lv->params[k].text, sizeof lv->params[k].text, "%s", value);
                else if (lv->params[k].type == FLOE_PARAM_BOOL)
                    lv->params[k].value = !strcmp(value, "true") || !strcmp(value, "1") || !strcmp(value, "yes");
                else
                    lv->params[k].value = strtod(value, NULL);
            }
    }
    pthread_cond_broadcast(&lv->cv);
    pthread_mutex_unlock(&lv->mu);
}

int vw_live_params(vw_live *lv, vw_param *out, int max)
{
    pthread_mutex_lock(&lv->mu);
    int n = lv->nparams < max ? lv->nparams : max;
    memcpy(out, lv->params, sizeof *out * (size_t)n);
    pthread_mutex_unlock(&lv->mu);
    return n;
}

void vw_live_restart(vw_live *lv)
{
    pthread_mutex_lock(&lv->mu);
    int done = lv->done;
    if (!done)
        lv->restart = 1;
    pthread_cond_broadcast(&lv->cv);
    pthread_mutex_unlock(&lv->mu);
    if (done) { /* the scene had ended: run it again */
        pthread_join(lv->thread, NULL);
        pthread_mutex_lock(&lv->mu);
        lv->done = lv->rc = 0;
        lv->shown = lv->latest_no = 0;
        lv->wall = lv->time = lv->t_prev = lv->derr = 0;
        lv->allowed = 1;
        lv->message[0] = 0;
        pthread_mutex_unlock(&lv->mu);
        if (pthread_create(&lv->thread, NULL, scene_thread, lv)) {
            lv->done = 1;
            snprintf(lv->message, sizeof lv->message, "cannot start the scene's thread");
        }
    }
}

void vw_live_stop(vw_live *lv)
{
    if (!lv)
        return;
    pthread_mutex_lock(&lv->mu);
    lv->quit = 1;
    pthread_cond_broadcast(&lv->cv);
    pthread_mutex_unlock(&lv->mu);
    pthread_join(lv->thread, NULL);
    vw_frame_free(&lv->latest);
    pthread_mutex_destroy(&lv->mu);
    pthread_cond_destroy(&lv->cv);
    free(lv);
}

void vw_live_method(vw_live *lv, char *buf, size_t len)
{
    pthread_mutex_lock(&lv->mu);
    snprintf(buf, len, "%s", lv->method);
    pthread_mutex_unlock(&lv->mu);
}

void vw_live_message(vw_live *lv, char *buf, size_t len)
{
    pthread_mutex_lock(&lv->mu);
    snprintf(buf, len, "%s", lv->message);
    pthread_mutex_unlock(&lv->mu);
}
