/* The context's own services, used by every layer of the core: the error
 * message, log lines, the thread team of its parallel loops, its info. */
#include "ctx.h"

#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

void floe_ctx_set_threads(floe_ctx *ctx, int threads)
{
#ifdef _OPENMP
    if (threads <= 0)
        threads = omp_get_num_procs();
#else
    threads = 1;
#endif
    ctx->info.threads = threads;
}

/* OpenMP keeps the team size per calling thread (the nthreads-var ICV), so
 * setting it for the length of a call and back is what makes it the
 * context's: another context, or another host thread, keeps its own. */
int ctx_threads_enter(const floe_ctx *ctx)
{
#ifdef _OPENMP
    int prev = omp_get_max_threads();
    if (prev != ctx->info.threads)
        omp_set_num_threads(ctx->info.threads);
    return prev;
#else
    (void)ctx;
    return 1;
#endif
}

void ctx_threads_leave(int prev)
{
#ifdef _OPENMP
    if (omp_get_max_threads() != prev)
        omp_set_num_threads(prev);
#else
    (void)prev;
#endif
}

const char *floe_ctx_error(const floe_ctx *ctx)
{
    return ctx->error[0] ? ctx->error : "no error";
}

const floe_sim_info *floe_ctx_info(floe_ctx *ctx) { return &ctx->info; }

int ctx_fail(floe_ctx *ctx, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->error, sizeof ctx->error, fmt, ap);
    va_end(ap);
    return status;
}

void ctx_log(floe_ctx *ctx, int level, const char *fmt, ...)
{
    static const char *const names[] = {"debug", "info", "warning", "error"};
    if (level < ctx->log_level)
        return;
    if (level < 0 || level > FLOE_LOG_ERROR)
        level = FLOE_LOG_ERROR;
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (ctx->log_fn)
        ctx->log_fn(level, msg, ctx->log_user);
    else
        fprintf(stderr, "floe: %s: %s\n", names[level], msg);
}

void floe_ctx_set_log(floe_ctx *ctx, floe_log_fn fn, void *user)
{
    ctx->log_fn = fn;
    ctx->log_user = user;
}

void floe_ctx_set_log_level(floe_ctx *ctx, int level) { ctx->log_level = level; }

/* accumulate a named per-frame statistic (the run record's mean and max) */
void ctx_stat(floe_ctx *ctx, const char *name, double value)
{
    stat_acc *s = NULL;
    for (int i = 0; i < ctx->nstats; i++)
        if (!strcmp(ctx->stats[i].name, name))
            s = &ctx->stats[i];
    if (!s) {
        if (ctx->nstats == MAX_STATS)
            return;
        s = &ctx->stats[ctx->nstats++];
        memset(s, 0, sizeof *s);
        snprintf(s->name, NAME_LEN, "%s", name);
        s->max = -INFINITY;
    }
    s->sum += value;
    s->count++;
    if (value > s->max)
        s->max = value;
}
