/* Probes (probes.c): measurements a scene declares (sim:probe{...}),
 * sampled once per output frame or at their own rate and written as CSV
 * files in the run's folder. Internal to libfloe; the public side is
 * floe_probe_add in <floe/floe.h>. */
#ifndef FLOE_PROBES_H
#define FLOE_PROBES_H

#include "ctx.h"

/* The run begins writing into dirfd (shown as name; -1: nothing is
 * written): the probes start new tables and take their first sample; a
 * run resumed from a checkpoint keeps its tables' rows from before. */
int probes_run_begin(floe_ctx *ctx, int dirfd, const char *name, int resumed);
/* After each step: probes with their own rate sample when due. */
int probes_after_step(floe_ctx *ctx);
/* After each frame: per-frame probes sample; every table is written whole
 * (atomically: a file is always a complete table of the samples so far). */
int probes_after_frame(floe_ctx *ctx);
/* The run is over: nothing more is written (the tables stay in memory
 * until the next run or the context's end). */
void probes_run_end(floe_ctx *ctx);
void probes_free(floe_ctx *ctx);

#endif
