/* The pipeline as a dataflow: what each stage declares it reads and writes
 * (floe_attr_desc), walked in step order before the first step, so that a
 * pipeline that cannot work is refused at the line that composed it and
 * one that looks wrong is warned about. See docs/lua-api.md, "Pipeline
 * checks".
 *
 * Where a value comes from at the start of a step depends on the attribute:
 *   - set by the scene when particles are made: fluid x, v, m, id; boundary
 *     x and V (the core computes the volumes before the first step);
 *   - started afresh every step: fluid a (gravity sets a = g, force stages
 *     add to it); a stage that reads it before any stage of the step set it
 *     sees what the last step left, and with no stage setting it but some
 *     adding to it the accelerations add up from step to step (with no
 *     stage writing it, it keeps its initial 0);
 *   - meaningful only once a stage wrote it: everything else (rho, p, a
 *     module's own attributes). A stage that reads and writes such an
 *     attribute keeps its own state between steps (iisph.solve's warm start
 *     of p) and needs no other writer.
 * Host (Lua) stages declare nothing: they may read and write anything, so
 * the walk assumes they do. */
#include "ctx.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum { FROM_SCENE, FROM_STEP, FROM_STAGE };

static int origin(const char *name, floe_set_kind kind)
{
    static const char *const fluid_scene[] = {"x", "v", "m", "id", NULL};
    static const char *const bound_scene[] = {"x", "V", NULL};
    const char *const *scene = kind == FLOE_SET_FLUID ? fluid_scene : bound_scene;
    for (; *scene; scene++)
        if (!strcmp(name, *scene))
            return FROM_SCENE;
    if (kind == FLOE_SET_FLUID && !strcmp(name, "a"))
        return FROM_STEP;
    return FROM_STAGE;
}

static const char *kind_name(floe_set_kind kind) { return kind == FLOE_SET_FLUID ? "fluid" : "boundary"; }

/* What stage st declares for attribute name on sets of kind (FLOE_READ |
 * FLOE_WRITE | FLOE_OVERWRITE bits, 0 if nothing). */
static unsigned access_of(const stage_inst *st, const char *name, floe_set_kind kind)
{
    unsigned acc = 0;
    for (const floe_attr_desc *a = st->desc ? st->desc->attrs : NULL; a && a->name; a++)
        if ((a->kind & kind) && !strcmp(a->name, name))
            acc |= a->access;
    return acc;
}

typedef struct report {
    floe_ctx *ctx;
    const char *where;
    char errors[sizeof ((floe_ctx *)0)->error];
    size_t used;
    int nerrors, nwarnings;
} report;

static void say(report *r, int error, int entry, const floe_ctx *ctx, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *w = r->where ? r->where : "";
    char head[NAME_LEN * 2 + 32] = "";
    if (entry >= 0)
        snprintf(head, sizeof head, "entry %d ('%s'): ", entry + 1, ctx->stages[entry].name);
    if (!error) {
        ctx_log(r->ctx, FLOE_LOG_WARN, "%ssim:pipeline: %s%s", w, head, msg);
        r->nwarnings++;
        return;
    }
    if (r->used < sizeof r->errors) {
        int n = snprintf(r->errors + r->used, sizeof r->errors - r->used, "%s%ssim:pipeline: %s%s",
                         r->nerrors ? "\n" : "", r->nerrors ? w : "", head, msg);
        r->used += n > 0 ? (size_t)n : 0;
    }
    r->nerrors++;
}

/* A stage of a loaded module that sets attribute name afresh
 * (FLOE_OVERWRITE), for the advice "add 'wcsph.density' before it". */
static void a_writer(const floe_ctx *ctx, const char *name, floe_set_kind kind, char *out, size_t len)
{
    out[0] = 0;
    for (int m = 0; m < ctx->nmodules; m++)
        for (const floe_stage_desc *s = ctx->modules[m].desc->stages; s && s->name; s++)
            for (const floe_attr_desc *a = s->attrs; a && a->name; a++)
                if ((a->kind & kind) && !strcmp(a->name, name) && (a->access & FLOE_OVERWRITE)) {
                    snprintf(out, len, " (add '%s%s%s' before it)", m ? ctx->modules[m].desc->name : "", m ? "." : "",
                             s->name);
                    return;
                }
}

/* One attribute on one kind of set, stage by stage through the step. */
static void walk_attr(floe_ctx *ctx, report *r, const char *name, floe_set_kind kind)
{
    const int from = origin(name, kind);
    int first_writer = -1, first_setter = -1; /* any write; a write without a read */
    for (int i = 0; i < ctx->nstages; i++) {
        unsigned acc = access_of(&ctx->stages[i], name, kind);
        if ((acc & FLOE_WRITE) && first_writer < 0)
            first_writer = i;
        if ((acc & FLOE_OVERWRITE) && first_setter < 0)
            first_setter = i;
    }
    int written = -1, read_since = 0;
    for (int i = 0; i < ctx->nstages; i++) {
        const stage_inst *st = &ctx->stages[i];
        if (!st->desc) { /* a host stage: may read and write anything */
            written = i;
            read_since = 1;
            continue;
        }
        unsigned acc = access_of(st, name, kind);
        /* no stage writes a step-started value at all: it keeps the value the
         * particles were made with (a = 0: free flight), which is fine */
        const int untouched = from == FROM_STEP && first_writer < 0;
        if ((acc & FLOE_READ) && written < 0 && from != FROM_SCENE && !untouched) {
            char adv[160];
            if (from == FROM_STEP && first_setter < 0)
                say(r, 1, i, ctx,
                    "reads '%s' of the %s sets, which no stage of the step starts afresh: it adds up from step to step "
                    "(add 'gravity', which sets a = g, before the force stages)",
                    name, kind_name(kind));
            else if (from == FROM_STEP)
                say(r, 0, i, ctx,
                    "reads '%s' of the %s sets before entry %d ('%s') starts it afresh: it sees what the last step "
                    "left (put '%s' before the stages that add to '%s')",
                    name, kind_name(kind), first_setter + 1, ctx->stages[first_setter].name,
                    ctx->stages[first_setter].name, name);
            else if (first_writer < 0 && !(acc & FLOE_WRITE)) {
                a_writer(ctx, name, kind, adv, sizeof adv);
                say(r, 1, i, ctx, "reads '%s' of the %s sets, which no stage of the pipeline writes and the scene does "
                    "not set%s", name, kind_name(kind), adv);
            } else if (!(acc & FLOE_WRITE))
                say(r, 0, i, ctx,
                    "reads '%s' of the %s sets before entry %d ('%s') writes it: it sees the previous step's value "
                    "(and at the first step none)",
                    name, kind_name(kind), first_writer + 1, ctx->stages[first_writer].name);
        }
        if (acc & FLOE_READ)
            read_since = 1;
        if (!(acc & FLOE_WRITE))
            continue;
        /* (a stage listed twice is warned about as such) */
        if ((acc & FLOE_OVERWRITE) && written >= 0 && !read_since && ctx->stages[written].desc != st->desc)
            say(r, 1, i, ctx,
                "sets '%s' of the %s sets afresh, but entry %d ('%s') wrote it earlier in the step and no stage "
                "read it in between: that result is lost (move '%s' before '%s')",
                name, kind_name(kind), written + 1, ctx->stages[written].name, st->name,
                ctx->stages[written].name);
        written = i;
        read_since = 0;
    }
}

/* Stages writing the same attribute that only one should: positions (two
 * integrators), or any attribute besides v and a (which stages add to) by
 * stages of two modules (two solvers). */
static void writers(floe_ctx *ctx, report *r, const char *name, floe_set_kind kind)
{
    int first = -1;
    for (int i = 0; i < ctx->nstages; i++) {
        const stage_inst *st = &ctx->stages[i];
        if (!st->desc || !(access_of(st, name, kind) & FLOE_WRITE))
            continue;
        if (first < 0) {
            first = i;
            continue;
        }
        const stage_inst *f = &ctx->stages[first];
        if (!strcmp(name, "x") && kind == FLOE_SET_FLUID && st->corrects)
            continue; /* a collision or an emitter after the integrator (ABI 1.7) */
        if (!strcmp(name, "x") && kind == FLOE_SET_FLUID)
            say(r, 1, i, ctx, "moves the fluid too: entry %d ('%s') already writes 'x', so positions would advance "
                "twice per step", first + 1, f->name);
        else if (strcmp(name, "v") && strcmp(name, "a") && f->mod != st->mod)
            say(r, 0, i, ctx, "writes '%s' of the %s sets, which entry %d ('%s') of another module writes too: two "
                "solvers for the same quantity?", name, kind_name(kind), first + 1, f->name);
    }
}

static int same_params(const stage_inst *a, const stage_inst *b)
{
    if (a->desc != b->desc || a->nparams != b->nparams)
        return 0;
    for (int k = 0; k < a->nparams; k++) {
        const floe_param_desc *p = &a->desc->params[k];
        const floe_value *u = &a->param[k], *v = &b->param[k];
        int eq = p->type == FLOE_PARAM_STRING ? !strcmp(u->s ? u->s : "", v->s ? v->s : "")
                 : p->type == FLOE_PARAM_VEC3 ? !memcmp(u->v, v->v, sizeof u->v)
                 : p->type == FLOE_PARAM_FLOAT ? u->f == v->f
                 : p->type == FLOE_PARAM_BOOL  ? u->b == v->b
                                               : u->i == v->i;
        if (!eq)
            return 0;
    }
    return 1;
}

/* Was attribute (at->name, kind) declared before at (stage i)? Each is
 * walked once, at its first declaration. */
static int seen_before(const floe_ctx *ctx, int i, const floe_attr_desc *at, floe_set_kind kind)
{
    for (int j = 0; j <= i; j++)
        for (const floe_attr_desc *a = ctx->stages[j].desc ? ctx->stages[j].desc->attrs : NULL; a && a->name; a++) {
            if (j == i && a == at)
                return 0;
            if ((a->kind & kind) && !strcmp(a->name, at->name))
                return 1;
        }
    return 0;
}

int floe_pipeline_check(floe_ctx *ctx, const char *where, int *warnings)
{
    report r;
    memset(&r, 0, sizeof r);
    r.ctx = ctx;
    r.where = where;
    int has_host = 0, moves = 0;
    for (int i = 0; i < ctx->nstages; i++) {
        const stage_inst *st = &ctx->stages[i];
        has_host |= !st->desc;
        moves |= st->desc && (access_of(st, "x", FLOE_SET_FLUID) & FLOE_WRITE);
        for (int j = 0; j < i && st->desc; j++)
            if (same_params(&ctx->stages[j], st)) {
                say(&r, 0, i, ctx, "the same stage with the same parameters as entry %d: it runs twice per step", j + 1);
                break;
            }
        for (const floe_attr_desc *a = st->desc ? st->desc->attrs : NULL; a && a->name; a++)
            for (floe_set_kind k = FLOE_SET_FLUID; k <= FLOE_SET_BOUNDARY; k <<= 1)
                if ((a->kind & k) && !seen_before(ctx, i, a, k)) {
                    walk_attr(ctx, &r, a->name, k);
                    writers(ctx, &r, a->name, k);
                }
    }
    if (ctx->nstages && !moves && !has_host)
        say(&r, 0, -1, ctx,
            "no stage of the pipeline moves the fluid (none writes 'x', as 'integrate' does): the particles stay "
            "where they are");
    if (warnings)
        *warnings = r.nwarnings;
    ctx->dataflow_checked = r.nerrors == 0;
    if (r.nerrors)
        return ctx_fail(ctx, FLOE_ERR_ARG, "%s%s", where ? where : "", r.errors);
    return FLOE_OK;
}
