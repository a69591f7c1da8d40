/* Checkpoints (internal): the state a run needs to go on as if it had never
 * stopped, written beside its frames by sim:run{checkpoint_every = N} and
 * read back by `floe run SCENE --resume OUT_DIR` (docs/reliability.md).
 *
 * One file, CKPT_FILE, replaced atomically (io_atomic: temporary name,
 * fsync, rename) after every N-th frame. It holds a header (magic, format
 * version, Floe's version, the scene's hash), the run's place (which
 * floe_run of the context, frames done, time at its start, last dt, its
 * record's frame lines), the context's clock and counters (time, step,
 * dt_last, dt_limit, neighbour updates, kernel sums asked for), every
 * particle set with every attribute (n elements, whatever the capacity),
 * and the state of each module that has floe_module_desc.save; then a
 * 64-bit FNV-1a of all of it, so a corrupted or truncated file is refused
 * before anything is replaced. */
#ifndef FLOE_CHECKPOINT_H
#define FLOE_CHECKPOINT_H

#include "ctx.h"
#include "record.h"

#include <stddef.h>
#include <stdint.h>

#define CKPT_FILE "checkpoint.floe"

/* Where in the scene the checkpoint was taken. */
typedef struct ckpt_run {
    uint32_t ordinal;        /* which floe_run of the context (0 = its first) */
    int frame;               /* frames of that run done (its frame files 0..frame exist) */
    int first;               /* file number of its frame 0 */
    int recno;               /* its record: 0 = run.yaml, k = run.<k+1>.yaml */
    double t_start;          /* simulated time at its start */
    double dt_prev;          /* the step before the next one (adaptive dt) */
    uint64_t steps_total, particle_steps;
    rec_frame *frames;       /* its frames 1..frame (record lines) */
} ckpt_run;

/* A checkpoint read into memory and checked (header, checksum). */
typedef struct ckpt_file {
    unsigned char *data;
    size_t len, pos;         /* pos: after the run section once ckpt_read returns */
    char *names;             /* the statistics' names the frames point into */
    ckpt_run run;
} ckpt_file;

/* Write the checkpoint of ctx into the folder dirfd (shown as `shown` in
 * messages). FLOE_OK or an error status with the message in ctx. */
int ckpt_save(floe_ctx *ctx, int dirfd, const char *shown, const char *scene_hash, const ckpt_run *run);

/* Read dirfd/CKPT_FILE and check it against this Floe and scene_hash: the
 * run section is parsed into f->run, nothing of ctx is touched. FLOE_OK, or
 * an error status with a message that says what is wrong with the file. */
int ckpt_read(floe_ctx *ctx, int dirfd, const char *shown, const char *scene_hash, ckpt_file *f);

/* Replace ctx's state by the checkpoint's (sets, clock, module states).
 * A set, attribute or module the scene's set-up made differently is an
 * error naming it. */
int ckpt_restore(floe_ctx *ctx, ckpt_file *f, const char *shown);

void ckpt_free(ckpt_file *f);

#endif
