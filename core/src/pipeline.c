/* The step pipeline: an ordered list of stage instances with resolved
 * parameters. Stage names are "module.stage"; the core's own stages may be
 * named without prefix. Everything is checked when a stage is added, so a
 * scene error points at the line that composed the pipeline. */
#include "decomp.h"
#include "device.h"
#include "out_path.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *type_name(floe_param_type t)
{
    switch (t) {
    case FLOE_PARAM_FLOAT: return "a number";
    case FLOE_PARAM_INT: return "an integer";
    case FLOE_PARAM_BOOL: return "a boolean";
    case FLOE_PARAM_STRING: return "a string";
    case FLOE_PARAM_VEC3: return "a 3-vector";
    }
    return "?";
}

static void list_stages(floe_ctx *ctx, const module_inst *only, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = 0;
    for (int m = 0; m < ctx->nmodules; m++) {
        const module_inst *mi = &ctx->modules[m];
        if (only && mi != only)
            continue;
        for (const floe_stage_desc *s = mi->desc->stages; s->name; s++) {
            int w = snprintf(buf + used, len - used, "%s%s%s%s", used ? ", " : "", m ? mi->desc->name : "",
                             m ? "." : "", s->name);
            if (w < 0 || (size_t)w >= len - used)
                return;
            used += (size_t)w;
        }
    }
}

static int find_stage(floe_ctx *ctx, const char *qname, module_inst **mod, const floe_stage_desc **stage)
{
    char buf[2048];
    const char *dot = strchr(qname, '.');
    module_inst *m = NULL;
    const char *sname = qname;
    if (dot) {
        size_t ml = (size_t)(dot - qname);
        for (int i = 0; i < ctx->nmodules; i++)
            if (strlen(ctx->modules[i].desc->name) == ml && strncmp(ctx->modules[i].desc->name, qname, ml) == 0)
                m = &ctx->modules[i];
        if (!m) {
            ctx_suggest_stage(ctx, qname, buf, sizeof buf);
            return ctx_fail(ctx, FLOE_ERR_ARG, "unknown stage '%s'%s: module '%.*s' is not loaded (load it first: "
                            "sim:load \"%.*s\")", qname, buf, (int)ml, qname, (int)ml, qname);
        }
        sname = dot + 1;
    } else {
        m = &ctx->modules[0]; /* the core */
    }
    for (const floe_stage_desc *s = m->desc->stages; s->name; s++)
        if (strcmp(s->name, sname) == 0) {
            *mod = m;
            *stage = s;
            return FLOE_OK;
        }
    char near[NAME_LEN * 2 + 32];
    ctx_suggest_stage(ctx, qname, near, sizeof near);
    list_stages(ctx, dot ? m : NULL, buf, sizeof buf);
    return ctx_fail(ctx, FLOE_ERR_ARG, "unknown stage '%s'%s (known stages: %s)", qname, near, buf);
}

static void set_default(stage_inst *st, int i, const floe_param_desc *p)
{
    switch (p->type) {
    case FLOE_PARAM_FLOAT: st->param[i].f = p->def; break;
    case FLOE_PARAM_INT: st->param[i].i = (int64_t)p->def; break;
    case FLOE_PARAM_BOOL: st->param[i].b = p->def != 0; break;
    case FLOE_PARAM_STRING: st->param[i].s = p->def_str ? p->def_str : ""; break;
    case FLOE_PARAM_VEC3: memcpy(st->param[i].v, p->def_vec, sizeof p->def_vec); break;
    }
}

static int choice_ok(const char *choices, const char *s)
{
    size_t n = strlen(s);
    for (const char *c = choices; c && *c;) {
        const char *bar = strchr(c, '|');
        size_t l = bar ? (size_t)(bar - c) : strlen(c);
        if (l == n && strncmp(c, s, n) == 0)
            return 1;
        c = bar ? bar + 1 : c + l;
    }
    return 0;
}

/* Convert a supplied value to the parameter's type and check its range. */
static int assign(floe_ctx *ctx, stage_inst *st, int i, const floe_param_desc *p, const floe_param_kv *kv)
{
    const char *sn = st->name;
    floe_value *out = &st->param[i];
    int ranged = p->min < p->max;
    if (kv->type != p->type && !(p->type == FLOE_PARAM_INT && kv->type == FLOE_PARAM_FLOAT) &&
        !(p->type == FLOE_PARAM_FLOAT && kv->type == FLOE_PARAM_INT))
        return ctx_fail(ctx, FLOE_ERR_ARG, "stage '%s': parameter '%s' must be %s, got %s", sn, p->name,
                        type_name(p->type), type_name(kv->type));
    switch (p->type) {
    case FLOE_PARAM_FLOAT: {
        double v = kv->type == FLOE_PARAM_INT ? (double)kv->value.i : kv->value.f;
        if (!isfinite(v))
            return ctx_fail(ctx, FLOE_ERR_ARG, "stage '%s': parameter '%s' must be finite", sn, p->name);
        if (ranged && (v < p->min || v > p->max))
            return ctx_fail(ctx, FLOE_ERR_ARG, "stage '%s': parameter '%s' = %g is out of range [%g, %g] %s", sn,
                            p->name, v, p->min, p->max, p->unit ? p->unit : "");
        out->f = v;
        break;
    }
    case FLOE_PARAM_INT: {
        double v = kv->type == FLOE_PARAM_INT ? (double)kv->value.i : kv->value.f;
        if (!isfinite(v) || v != floor(v) || fabs(v) > 9.0e15)
            return ctx_fail(ctx, FLOE_ERR_ARG, "stage '%s': parameter '%s' must be an integer, got %g", sn, p->name, v);
        if (ranged && (v < p->min || v > p->max))
            return ctx_fail(ctx, FLOE_ERR_ARG, "stage '%s': parameter '%s' = %g is out of range [%g, %g]", sn,
                            p->name, v, p->min, p->max);
        out->i = (int64_t)v;
        break;
    }
    case FLOE_PARAM_BOOL: out->b = kv->value.b != 0; break;
    case FLOE_PARAM_STRING: {
        const char *s = kv->value.s ? kv->value.s : "";
        if (p->choices && !choice_ok(p->choices, s))
            return ctx_fail(ctx, FLOE_ERR_ARG, "stage '%s': parameter '%s' = \"%s\" is not one of %s", sn, p->name, s,
                            p->choices);
        free(st->param_str[i]);
        st->param_str[i] = strdup(s);
        if (!st->param_str[i])
            return ctx_fail(ctx, FLOE_ERR_NOMEM, "out of memory");
        out->s = st->param_str[i];
        break;
    }
    case FLOE_PARAM_VEC3:
        for (int k = 0; k < 3; k++)
            if (!isfinite(kv->value.v[k]))
                return ctx_fail(ctx, FLOE_ERR_ARG, "stage '%s': parameter '%s' must be finite", sn, p->name);
        memcpy(out->v, kv->value.v, sizeof out->v);
        break;
    }
    return FLOE_OK;
}

static void param_list(const floe_stage_desc *sd, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = 0;
    for (const floe_param_desc *p = sd->params; p && p->name; p++) {
        int w = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", p->name);
        if (w < 0 || (size_t)w >= len - used)
            break;
        used += (size_t)w;
    }
    if (!used)
        snprintf(buf, len, "none");
}

static void stage_free(stage_inst *st)
{
    for (int i = 0; i < MAX_PARAMS; i++)
        free(st->param_str[i]);
    memset(st, 0, sizeof *st);
}

/* Create the attributes a stage writes on every set of their kind. */
static int register_writes(floe_ctx *ctx, const floe_stage_desc *sd)
{
    for (const floe_attr_desc *a = sd->attrs; a && a->name; a++) {
        if (!(a->access & FLOE_WRITE))
            continue;
        for (int s = 0; s < ctx->npsets; s++)
            if (ctx->sets[s].kind & a->kind) {
                int rc = floe_attr_add(ctx, ctx_set_handle(ctx, s), a->name, a->type);
                if (rc)
                    return rc;
            }
    }
    return FLOE_OK;
}

/* Whether a stage may move particles: its descriptor sd declares writing
 * x, or it is a host function (sd NULL: C or Lua, which may call sim:set).
 * The kernel sums of the neighbour lists (floe_nlist.wsum) hold for the
 * positions they were computed from: such a stage ends them until the next
 * neighbours stage. Decided once, when the stage joins the pipeline. */
static int stage_moves(const floe_stage_desc *sd)
{
    if (!sd)
        return 1;
    for (const floe_attr_desc *a = sd->attrs; a && a->name; a++)
        if ((a->access & FLOE_WRITE) && strcmp(a->name, "x") == 0)
            return 1;
    return 0;
}


/* Whether the resolved parameters of st meet a replaced_if "NAME=VALUE". */
static int replace_applies(const stage_inst *st, const char *cond)
{
    if (!cond)
        return 1;
    const char *eq = strchr(cond, '=');
    for (int i = 0; eq && i < st->nparams; i++) {
        const floe_param_desc *p = &st->desc->params[i];
        if (p->type == FLOE_PARAM_STRING && strlen(p->name) == (size_t)(eq - cond) &&
            !strncmp(p->name, cond, (size_t)(eq - cond)))
            return st->param[i].s && !strcmp(st->param[i].s, eq + 1);
    }
    return 0;
}

static int pipeline_add(floe_ctx *ctx, const char *stage, const floe_param_kv *kv, int nkv, int depth);

/* Run st (stage sd of module m, the deprecated name `stage`) as the stage
 * that replaces it, with st's values under the names that stage has. */
static int add_replacement(floe_ctx *ctx, const char *stage, const stage_inst *st, module_inst *m,
                           const floe_stage_desc *sd, const char *by, int depth)
{
    char mod[NAME_LEN];
    const char *dot = strchr(by, '.');
    snprintf(mod, sizeof mod, "%.*s", (int)(dot - by), by);
    int rc = floe_module_load(ctx, mod);
    if (rc)
        return rc;
    floe_param_kv kv[MAX_PARAMS];
    for (int i = 0; i < st->nparams; i++)
        kv[i] = (floe_param_kv){sd->params[i].name, sd->params[i].type, st->param[i]};
    /* only the names the replacement has: find it first */
    module_inst *tm;
    const floe_stage_desc *td;
    if ((rc = find_stage(ctx, by, &tm, &td)))
        return rc;
    int n = 0;
    for (int i = 0; i < st->nparams; i++)
        for (const floe_param_desc *p = td->params; p && p->name; p++)
            if (!strcmp(p->name, kv[i].name))
                kv[n++] = kv[i];
    const ptrdiff_t k = sd - m->desc->stages;
    if (k >= 0 && k < 64 && !(m->deprecation_logged & (1ull << k))) {
        m->deprecation_logged |= 1ull << k;
        ctx_log(ctx, FLOE_LOG_WARN, "stage '%s' is deprecated: it runs as '%s'; use that name", stage, by);
    }
    return pipeline_add(ctx, by, kv, n, depth + 1);
}

int floe_pipeline_add(floe_ctx *ctx, const char *stage, const floe_param_kv *kv, int nkv)
{
    return pipeline_add(ctx, stage, kv, nkv, 0);
}

static int pipeline_add(floe_ctx *ctx, const char *stage, const floe_param_kv *kv, int nkv, int depth)
{
    if (!stage || !stage[0])
        return ctx_fail(ctx, FLOE_ERR_ARG, "stage name is empty");
    if (ctx->nstages == MAX_STAGES)
        return ctx_fail(ctx, FLOE_ERR_ARG, "more than %d stages in the pipeline", MAX_STAGES);
    module_inst *m = NULL;
    const floe_stage_desc *sd = NULL;
    int rc = find_stage(ctx, stage, &m, &sd);
    if (rc)
        return rc;
    stage_inst st;
    memset(&st, 0, sizeof st);
    if (m == &ctx->modules[0])
        snprintf(st.name, sizeof st.name, "%s", sd->name);
    else
        snprintf(st.name, sizeof st.name, "%s.%s", m->desc->name, sd->name);
    st.desc = sd;
    st.mod = m;
    st.fn = sd->run;
    st.moves = stage_moves(sd);
    st.per_frame = sd->size >= offsetof(floe_stage_desc, per_frame) + sizeof sd->per_frame && sd->per_frame;
    st.corrects = sd->size >= offsetof(floe_stage_desc, corrects) + sizeof sd->corrects && sd->corrects;
    int np = 0;
    for (const floe_param_desc *p = sd->params; p && p->name; p++)
        set_default(&st, np++, p);
    st.nparams = np;
    for (int k = 0; k < nkv; k++) {
        int found = -1;
        for (int i = 0; i < np; i++)
            if (strcmp(sd->params[i].name, kv[k].name) == 0)
                found = i;
        if (found < 0) {
            char buf[1024], near[512];
            param_list(sd, buf, sizeof buf);
            ctx_suggest_param(ctx, sd, stage, kv[k].name, near, sizeof near);
            stage_free(&st);
            return ctx_fail(ctx, FLOE_ERR_ARG, "stage '%s': unknown parameter '%s'%s (parameters: %s)", stage,
                            kv[k].name, near, buf);
        }
        if ((rc = assign(ctx, &st, found, &sd->params[found], &kv[k]))) {
            stage_free(&st);
            return rc;
        }
    }
    const char *cond, *by = ctx_stage_replaced_by(sd, &cond);
    if (by && replace_applies(&st, cond)) {
        rc = depth < 4 ? add_replacement(ctx, stage, &st, m, sd, by, depth)
                       : ctx_fail(ctx, FLOE_ERR_ARG, "stage '%s': replaced_by '%s' loops", stage, by);
        stage_free(&st);
        return rc;
    }
    if ((rc = register_writes(ctx, sd))) {
        stage_free(&st);
        return rc;
    }
    ctx->stages[ctx->nstages++] = st;
    ctx->dataflow_checked = 0;
    return FLOE_OK;
}

int floe_pipeline_add_fn(floe_ctx *ctx, const char *name, floe_stage_fn fn, void *user)
{
    if (!fn || !name || !name[0])
        return ctx_fail(ctx, FLOE_ERR_ARG, "host stage needs a name and a function");
    if (ctx->nstages == MAX_STAGES)
        return ctx_fail(ctx, FLOE_ERR_ARG, "more than %d stages in the pipeline", MAX_STAGES);
    stage_inst *st = &ctx->stages[ctx->nstages++];
    memset(st, 0, sizeof *st);
    snprintf(st->name, sizeof st->name, "%s", name);
    st->fn = fn;
    st->user = user;
    st->moves = stage_moves(NULL);
    ctx->dataflow_checked = 0;
    return FLOE_OK;
}

void floe_pipeline_clear(floe_ctx *ctx)
{
    for (int i = 0; i < ctx->nstages; i++)
        stage_free(&ctx->stages[i]);
    ctx->nstages = 0;
    ctx->dataflow_checked = 0;
}

int floe_pipeline_length(floe_ctx *ctx) { return ctx->nstages; }

const char *floe_pipeline_stage_name(floe_ctx *ctx, int i)
{
    return i >= 0 && i < ctx->nstages ? ctx->stages[i].name : NULL;
}

/* Parse a textual value (from --set) as the parameter's type. */
static int parse_value(const floe_param_desc *p, const char *text, floe_param_kv *kv)
{
    char *end;
    kv->name = p->name;
    kv->type = p->type;
    switch (p->type) {
    case FLOE_PARAM_FLOAT:
    case FLOE_PARAM_INT:
        kv->type = FLOE_PARAM_FLOAT;
        errno = 0;
        kv->value.f = strtod(text, &end);
        return *text && !*end && !errno ? 0 : -1;
    case FLOE_PARAM_BOOL:
        if (!strcmp(text, "true") || !strcmp(text, "1") || !strcmp(text, "yes"))
            kv->value.b = 1;
        else if (!strcmp(text, "false") || !strcmp(text, "0") || !strcmp(text, "no"))
            kv->value.b = 0;
        else
            return -1;
        return 0;
    case FLOE_PARAM_STRING: kv->value.s = text; return 0;
    case FLOE_PARAM_VEC3:
        return sscanf(text, "%lf,%lf,%lf", &kv->value.v[0], &kv->value.v[1], &kv->value.v[2]) == 3 ? 0 : -1;
    }
    return -1;
}

int floe_pipeline_set(floe_ctx *ctx, const char *key, const char *value)
{
    const char *dot = strrchr(key, '.');
    if (!dot)
        return ctx_fail(ctx, FLOE_ERR_ARG, "--set %s: expected STAGE.PARAM=VALUE", key);
    size_t sl = (size_t)(dot - key);
    int matched = 0;
    for (int i = 0; i < ctx->nstages; i++) {
        stage_inst *st = &ctx->stages[i];
        if (!st->desc || strlen(st->name) != sl || strncmp(st->name, key, sl) != 0)
            continue;
        for (int k = 0; k < st->nparams; k++) {
            const floe_param_desc *p = &st->desc->params[k];
            if (strcmp(p->name, dot + 1) != 0)
                continue;
            floe_param_kv kv;
            if (parse_value(p, value, &kv))
                return ctx_fail(ctx, FLOE_ERR_ARG, "--set %s=%s: value must be %s", key, value, type_name(p->type));
            int rc = assign(ctx, st, k, p, &kv);
            if (rc)
                return rc;
            matched++;
        }
    }
    if (matched) { /* for the run record: the last value of a key wins */
        int i = 0;
        while (i < ctx->nset_log && strcmp(ctx->set_log_key[i], key) != 0)
            i++;
        if (i < 8) {
            snprintf(ctx->set_log_key[i], sizeof ctx->set_log_key[i], "%s", key);
            snprintf(ctx->set_log_value[i], sizeof ctx->set_log_value[i], "%s", value);
            if (i == ctx->nset_log)
                ctx->nset_log++;
        }
    }
    if (!matched) {
        char near[NAME_LEN * 3 + 32];
        ctx_suggest_set(ctx, key, near, sizeof near);
        return ctx_fail(ctx, FLOE_ERR_ARG, "--set %s: no stage '%.*s' with a parameter '%s' in the pipeline%s", key,
                        (int)sl, key, dot + 1, near);
    }
    return FLOE_OK;
}

int floe_pipeline_param(floe_ctx *ctx, int stage, int k, const floe_param_desc **desc, floe_value *value)
{
    if (!ctx || stage < 0 || stage >= ctx->nstages || k < 0)
        return -1;
    const stage_inst *st = &ctx->stages[stage];
    if (!st->desc || k >= st->nparams)
        return -1;
    if (desc)
        *desc = &st->desc->params[k];
    if (value)
        *value = st->param[k];
    return 0;
}

/* Every attribute a stage reads must exist on the sets of its kind. */
int ctx_pipeline_check(floe_ctx *ctx)
{
    if (ctx->nstages == 0)
        return ctx_fail(ctx, FLOE_ERR_ARG, "the pipeline is empty (compose it with sim:pipeline{...})");
    for (int i = 0; i < ctx->nstages; i++) {
        const stage_inst *st = &ctx->stages[i];
        if (st->desc && register_writes(ctx, st->desc))
            return FLOE_ERR;
    }
    for (int i = 0; i < ctx->nstages; i++) {
        const stage_inst *st = &ctx->stages[i];
        for (const floe_attr_desc *a = st->desc ? st->desc->attrs : NULL; a && a->name; a++)
            for (int s = 0; s < ctx->npsets; s++) {
                pset *p = &ctx->sets[s];
                if (!(p->kind & a->kind))
                    continue;
                attr *at = pset_attr(p, a->name);
                if (!at)
                    return ctx_fail(ctx, FLOE_ERR_ARG,
                                    "stage '%s' reads attribute '%s' of set '%s', which no stage of the pipeline writes",
                                    st->name, a->name, p->name);
                if (at->type != a->type)
                    return ctx_fail(ctx, FLOE_ERR_ARG, "stage '%s': attribute '%s' of set '%s' has another type",
                                    st->name, a->name, p->name);
            }
    }
    return FLOE_OK;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* Run stage i. With a device backend (device.h) a stage with a run_cl runs
 * on the device; the others run on the C path after the backend's
 * stage_begin copied back what they declare. Device stages are checked for
 * blow-ups on the device (flags read at the end of the step) and timed with
 * kernel events (core/src/opencl/). */
static int run_stage(floe_ctx *ctx, int i)
{
    int rc;
    stage_inst *st = &ctx->stages[i];
    floe_stage_call call = {ctx, st->param, st->mod ? st->mod->state : NULL, st->user, st->name};
    const int use_cl = ctx->dev && st->desc && st->desc->run_cl;
    ctx->current_stage = st->name;
    ctx->error[0] = 0;
    /* OpenCL: before a C stage every check so far is settled; a blow-up
     * found there is reported now, as the C path would have */
    if (ctx->dev && (rc = ctx->dev->ops->stage_begin(ctx, st, use_cl)))
        return rc;
    if (st->moves)
        ctx->ksums_valid = 0;
    if ((rc = dd_stage_before(ctx, st))) /* MPI: the ghosts of what it reads */
        return rc;
    access_snap *snap = use_cl ? NULL : ctx_access_snap(ctx, st); /* debug builds: what it only reads */
    ctx->running = st;
    int host_timed = 1;
    double t0 = now_ms();
    rc = use_cl ? st->desc->run_cl(&call) : st->fn(&call);
    ctx->running = NULL;
    if (snap) {
        const int rc_access = ctx_access_check(ctx, st, snap, rc == FLOE_OK);
        rc = rc ? rc : rc_access;
    }
    if (!rc && use_cl)
        rc = ctx->dev->ops->stage_end(ctx, i, &host_timed);
    double ms = now_ms() - t0;
    st->calls++;
    if (host_timed) {
        st->ms_total += ms;
        st->ms_frame += ms;
    }
    if (rc == FLOE_ERR_BLOWUP) /* an earlier step's check, reported here: complete as it is */
        return rc;
    if (rc) {
        char msg[sizeof ctx->error];
        snprintf(msg, sizeof msg, "%s", ctx->error[0] ? ctx->error : "no message");
        return ctx_fail(ctx, rc, "stage '%s' failed at step %llu (t = %.6g s): %s", st->name,
                        (unsigned long long)ctx->info.step, ctx->info.time, msg);
    }
    if (!use_cl && (rc = ctx_check_blowup(ctx, st, 1)))
        return rc;
    dd_stage_after(ctx, st);
    return FLOE_OK;
}

/* ---- a stage split around its refresh (MPI, floe_stage_desc.rows) --------
 * S, a pointwise stage that needs a refresh of the ghosts and runs over
 * parts of the rows, then only the core's own-values stages (gravity),
 * then G, a stage that runs over parts of the rows: the refresh is posted,
 * S runs over the owned particles, the stages between as ever, G over the
 * owned particles whose neighbours are all owned; then the refresh is
 * received, S runs over the ghosts and G over the rest. Each particle gets
 * what it gets without the split (docs/mpi.md, "Overlap"). */

static int splits(const stage_inst *st)
{
    const floe_stage_desc *sd = st->desc;
    return sd && !st->per_frame && sd->size >= offsetof(floe_stage_desc, rows) + sizeof sd->rows && sd->rows;
}

/* G's index for S at i, or -1 */
static int split_plan(const floe_ctx *ctx, int i)
{
    const stage_inst *S = &ctx->stages[i];
    if (!ctx->dd || ctx->dev || !splits(S) || !S->desc->pointwise)
        return -1;
    for (int j = i + 1; j < ctx->nstages; j++) {
        const stage_inst *st = &ctx->stages[j];
        if (st->per_frame || dd_split_between(st))
            continue;
        return splits(st) && !st->desc->pointwise ? j : -1;
    }
    return -1;
}

/* stage st's function over the rows set in ctx->rows (part: api->rows) */
static int call_part(floe_ctx *ctx, stage_inst *st, int part, int which)
{
    int rc = dd_split_rows(ctx, which);
    if (rc)
        return rc;
    floe_stage_call call = {ctx, st->param, st->mod ? st->mod->state : NULL, st->user, st->name};
    ctx->current_stage = st->name;
    ctx->error[0] = 0;
    ctx->rows_part = part;
    ctx->running = st;
    double t0 = now_ms();
    rc = st->fn(&call);
    double ms = now_ms() - t0;
    ctx->running = NULL;
    ctx->rows_part = 0;
    for (int s = 0; s < ctx->npsets; s++)
        ctx->rows[s] = NULL, ctx->nrows[s] = 0;
    st->ms_total += ms;
    st->ms_frame += ms;
    if (rc && rc != FLOE_ERR_BLOWUP) {
        char msg[sizeof ctx->error];
        snprintf(msg, sizeof msg, "%s", ctx->error[0] ? ctx->error : "no message");
        return ctx_fail(ctx, rc, "stage '%s' failed at step %llu (t = %.6g s): %s", st->name,
                        (unsigned long long)ctx->info.step, ctx->info.time, msg);
    }
    return rc;
}

/* call_part under the debug builds' check of what it only reads (each
 * call on its own: between them the refresh writes the ghosts) */
static int checked_part(floe_ctx *ctx, stage_inst *st, int part, int which)
{
    access_snap *snap = ctx_access_snap(ctx, st);
    int rc = call_part(ctx, st, part, which);
    if (snap) {
        const int r = ctx_access_check(ctx, st, snap, rc == FLOE_OK);
        rc = rc ? rc : r;
    }
    return rc;
}

static int run_split(floe_ctx *ctx, int i, int j, int *ran)
{
    stage_inst *S = &ctx->stages[i], *G = &ctx->stages[j];
    int posted = 0, rc;
    *ran = 0;
    if (S->moves || G->moves)
        ctx->ksums_valid = 0;
    if ((rc = dd_split_post(ctx, S, &posted)) || !posted)
        return rc; /* nothing to refresh: the stages run as ever (dd_stage_before finds nothing) */
    *ran = 1;
    rc = checked_part(ctx, S, 1, DD_ROWS_OWNED);
    S->calls++;
    if (!rc && !(rc = ctx_check_blowup(ctx, S, 1)))
        dd_stage_after(ctx, S);
    for (int m = i + 1; m < j && !rc; m++)
        if (!ctx->stages[m].per_frame)
            rc = run_stage(ctx, m);
    if (!rc)
        rc = dd_stage_before(ctx, G); /* what S wrote is fresh on the ghosts (pointwise): nothing left to refresh */
    if (!rc)
        rc = checked_part(ctx, G, 1, DD_ROWS_INTERIOR);
    const int rf = dd_split_finish(ctx); /* always: no refresh left under way */
    rc = rc ? rc : rf;
    if (!rc)
        rc = checked_part(ctx, S, 2, DD_ROWS_GHOSTS);
    if (!rc)
        rc = checked_part(ctx, G, 2, DD_ROWS_BORDER);
    G->calls++;
    if (!rc && !(rc = ctx_check_blowup(ctx, G, 1)))
        dd_stage_after(ctx, G);
    return rc;
}

/* A device stage the core may simply run again: it writes something, and
 * all it writes it overwrites from what it does not write (every written
 * attribute declared FLOE_OVERWRITE). */
static int replayable(const floe_ctx *ctx, const stage_inst *st)
{
    if (!ctx->dev || !st->desc || !st->desc->run_cl || !st->desc->attrs)
        return 0;
    int writes = 0;
    for (const floe_attr_desc *a = st->desc->attrs; a->name; a++)
        if (a->access & FLOE_WRITE) {
            if (!(a->access & FLOE_OVERWRITE))
                return 0;
            writes = 1;
        }
    return writes;
}

/* The OpenCL backend builds neighbour lists without waiting for the check
 * that no list overflowed; the stages after the build that are replayable
 * run on them at once, and the check is settled before the first stage
 * that is not (or at the end of the step). Where a list did overflow, it
 * is rebuilt wider and the stages from..to-1 run again. */
static int settle_lists(floe_ctx *ctx, int from, int to)
{
    int rebuilt, rc;
    if (!ctx->dev)
        return FLOE_OK;
    if ((rc = ctx->dev->ops->lists_settle(ctx, &rebuilt)))
        return rc;
    for (int k = from; rebuilt && k < to; k++)
        if ((rc = run_stage(ctx, k)))
            return rc;
    return FLOE_OK;
}

int ctx_run_stages(floe_ctx *ctx)
{
    int rc;
    if (ctx->dev && (rc = ctx->dev->ops->step_begin(ctx)))
        return rc;
    int spec = -1; /* first stage run on unchecked (speculative) lists */
    for (int i = 0; i < ctx->nstages; i++) {
        if (ctx->stages[i].per_frame) /* floe_frame_stages runs them */
            continue;
        if (spec >= 0 && !replayable(ctx, &ctx->stages[i])) {
            if ((rc = settle_lists(ctx, spec, i)))
                return rc;
            spec = -1;
        }
        const int j = split_plan(ctx, i);
        if (j > i) {
            int ran = 0;
            if ((rc = run_split(ctx, i, j, &ran)))
                return rc;
            if (ran) {
                i = j;
                continue;
            }
        }
        if ((rc = run_stage(ctx, i)))
            return rc;
        if (spec < 0 && ctx->dev && ctx->dev->ops->lists_pending(ctx))
            spec = i + 1;
    }
    if (spec >= 0 && (rc = settle_lists(ctx, spec, ctx->nstages)))
        return rc;
    ctx->current_stage = NULL;
    if (ctx->dev && (rc = ctx->dev->ops->step_end(ctx)))
        return rc;
    return FLOE_OK;
}

int ctx_has_frame_stages(const floe_ctx *ctx)
{
    for (int i = 0; i < ctx->nstages; i++)
        if (ctx->stages[i].per_frame)
            return 1;
    return 0;
}

int ctx_frame_stages_at(floe_ctx *ctx, int dirfd, const char *name, int frame)
{
    int rc = FLOE_OK;
    ctx->frame_dir = dirfd;
    ctx->frame_dir_name = name;
    ctx->info.frame = frame;
    int gathered = 0; /* MPI: rank 0 holds every particle for the stages that need them all */
    for (int i = 0; i < ctx->nstages && !rc; i++) {
        if (!ctx->stages[i].per_frame)
            continue;
        if (ctx->dd && dd_gathers(ctx, &ctx->stages[i])) {
            if (!gathered) { /* taken away below, after a failed gather too */
                gathered = 1;
                rc = dd_gather(ctx);
            }
            if (!rc && dd_writer(ctx))
                rc = run_stage(ctx, i);
            continue;
        }
        if (gathered) {
            gathered = 0;
            if ((rc = dd_ungather(ctx)))
                break;
        }
        rc = run_stage(ctx, i);
    }
    if (gathered) {
        const int urc = dd_ungather(ctx);
        rc = rc ? rc : urc;
    }
    ctx->frame_dir = -1;
    ctx->frame_dir_name = NULL;
    ctx->current_stage = NULL;
    return rc;
}

int floe_frame_stages(floe_ctx *ctx, const char *out_dir, int frame)
{
    if (!out_dir) {
        int prev = ctx_threads_enter(ctx);
        int rc = ctx_frame_stages_at(ctx, -1, NULL, frame);
        ctx_threads_leave(prev);
        return rc;
    }
    char err[1500];
    int fd = out_dir_open(ctx->out, out_dir, 1, err, sizeof err);
    if (fd < 0)
        return ctx_fail(ctx, errno == EPERM || errno == ELOOP ? FLOE_ERR_ARG : FLOE_ERR_IO, "%s", err);
    int prev = ctx_threads_enter(ctx);
    int rc = ctx_frame_stages_at(ctx, fd, out_dir, frame);
    ctx_threads_leave(prev);
    close(fd);
    return rc;
}

static int step(floe_ctx *ctx, double dt)
{
    if (!(dt > 0) || !isfinite(dt))
        return ctx_fail(ctx, FLOE_ERR_ARG, "step: dt must be positive");
    int rc;
    if (ctx->boundary_dirty && (rc = ctx_boundary_volumes(ctx)))
        return rc;
    if ((rc = ctx_pipeline_check(ctx)))
        return rc;
    ctx->info.dt = dt;
    ctx->dt_limit = INFINITY; /* stages propose limits for the next step */
    if ((rc = dd_step_begin(ctx))) /* MPI: migration, ghosts */
        return rc;
    if ((rc = ctx_run_stages(ctx)) || (rc = dd_step_end(ctx)))
        return rc;
    ctx->info.time += dt;
    ctx->info.step++;
    return FLOE_OK;
}

int floe_step(floe_ctx *ctx, double dt)
{
    int prev = ctx_threads_enter(ctx);
    int rc = step(ctx, dt);
    ctx_threads_leave(prev);
    return rc;
}
