/* "Did you mean": the known name nearest to a misspelt one, by edit
 * distance (insertions, deletions, substitutions and swaps of neighbours,
 * each costing 1), when it is near enough to be a slip of the keyboard. */
#include <floe/floe.h>

#include <string.h>

#define LEN 64

/* Optimal string alignment distance of a and b, both cut at LEN bytes. */
static int distance(const char *a, const char *b)
{
    size_t n = strnlen(a, LEN), m = strnlen(b, LEN);
    int d[LEN + 1][LEN + 1];
    for (size_t i = 0; i <= n; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= m; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            int sub = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            int del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;
            int best = sub < del ? sub : del;
            best = ins < best ? ins : best;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[n][m];
}

const char *floe_nearest_name(const char *word, const char *const *names, int n)
{
    if (!word || !word[0])
        return NULL;
    const int len = (int)strnlen(word, LEN), limit = len < 3 ? 1 : (len + 2) / 3;
    const char *best = NULL;
    int bd = limit + 1;
    for (int i = 0; i < n; i++) {
        if (!names[i] || !strcmp(names[i], word))
            continue;
        int dd = distance(word, names[i]);
        if (dd < bd) {
            bd = dd;
            best = names[i];
        }
    }
    return best;
}

/* ---- stages and parameters of a context -------------------------------- */

#include "ctx.h"

#include <stdio.h>

#define MAX_NAMES 512

/* a deprecated stage name that always runs another stage (replaced_by) */
static int old_name(const floe_stage_desc *s)
{
    const char *cond;
    return ctx_stage_replaced_by(s, &cond) && !cond;
}

/* " (did you mean 'sph.density'?)" for a stage name no loaded module
 * has, or "": the nearest qualified name, or a stage of that exact name in
 * a module when the module was left out. */
void ctx_suggest_stage(floe_ctx *ctx, const char *qname, char *out, size_t len)
{
    static char names[MAX_NAMES][NAME_LEN * 2];
    const char *ptr[MAX_NAMES], *bare = NULL;
    int n = 0;
    out[0] = 0;
    for (int m = 0; m < ctx->nmodules; m++)
        for (const floe_stage_desc *s = ctx->modules[m].desc->stages; s && s->name && n < MAX_NAMES; s++) {
            if (old_name(s))
                continue; /* suggest the new name */
            snprintf(names[n], sizeof names[n], "%s%s%s", m ? ctx->modules[m].desc->name : "", m ? "." : "", s->name);
            if (m && !bare && !strcmp(s->name, qname))
                bare = names[n];
            ptr[n] = names[n];
            n++;
        }
    const char *near = bare ? bare : floe_nearest_name(qname, ptr, n);
    if (near)
        snprintf(out, len, " (did you mean '%s'?)", near);
}

/* " (did you mean 'alpha'?)" for a parameter stage sd (named stage) lacks, or the stages
 * of loaded modules that have a parameter of that name, or "". */
void ctx_suggest_param(floe_ctx *ctx, const floe_stage_desc *sd, const char *stage, const char *name, char *out,
                       size_t len)
{
    const char *ptr[MAX_PARAMS + 1];
    int n = 0;
    out[0] = 0;
    for (const floe_param_desc *p = sd->params; p && p->name && n < MAX_PARAMS; p++)
        ptr[n++] = p->name;
    const char *near = floe_nearest_name(name, ptr, n);
    if (near) {
        snprintf(out, len, " (did you mean '%s'?)", near);
        return;
    }
    size_t used = 0;
    int found = 0;
    for (int m = 0; m < ctx->nmodules; m++)
        for (const floe_stage_desc *s = ctx->modules[m].desc->stages; s && s->name; s++)
            for (const floe_param_desc *p = s->params; s != sd && !old_name(s) && p && p->name; p++)
                if (!strcmp(p->name, name) && used < len) {
                    int w = snprintf(out + used, len - used, "%s'%s%s%s'", found ? ", " : " (a parameter of stage ",
                                     m ? ctx->modules[m].desc->name : "", m ? "." : "", s->name);
                    used += w > 0 ? (size_t)w : 0;
                    found++;
                }
    if (found && used < len)
        snprintf(out + used, len - used, ", not of '%s')", stage);
}

/* " (did you mean 'wcsph.pressure.gamma'?)" for a --set STAGE.PARAM that
 * no stage of the pipeline has, or "". */
void ctx_suggest_set(floe_ctx *ctx, const char *key, char *out, size_t len)
{
    static char names[MAX_NAMES][NAME_LEN * 3];
    const char *ptr[MAX_NAMES];
    int n = 0;
    out[0] = 0;
    for (int i = 0; i < ctx->nstages; i++)
        for (int k = 0; ctx->stages[i].desc && k < ctx->stages[i].nparams && n < MAX_NAMES; k++) {
            snprintf(names[n], sizeof names[n], "%s.%s", ctx->stages[i].name, ctx->stages[i].desc->params[k].name);
            ptr[n] = names[n];
            n++;
        }
    const char *near = floe_nearest_name(key, ptr, n);
    if (near)
        snprintf(out, len, " (did you mean '%s'?)", near);
}
