/* Run record (internal): a YAML file next to the frames describing the run
 * and every frame so far: begun atomically, one line appended per frame,
 * rewritten atomically with the final status; a valid YAML document at any
 * moment. Written with libyaml. */
#ifndef FLOE_RECORD_H
#define FLOE_RECORD_H

#include <floe/floe.h>

#define REC_MAX_STAGES 64
#define REC_MAX_STATS 16
#define REC_MAX_SETS 8

typedef struct rec_module {
    const char *name, *version, *path;
} rec_module;

typedef struct rec_stage {
    const char *name;        /* "wcsph.density" */
    int nparams;
    const char *param_name[32];
    char param_value[32][64];/* printed value */
} rec_stage;

typedef struct rec_stat {
    const char *name;        /* "iisph.iterations" */
    double mean, max;
} rec_stat;

typedef struct rec_frame {
    floe_frame_stats st;
    double stage_ms[REC_MAX_STAGES]; /* per stage, this frame, milliseconds */
    int nstats;
    rec_stat stats[REC_MAX_STATS];
    int nsets;               /* parameters changed before this frame (floe_pipeline_set during the run) */
    char set_key[REC_MAX_SETS][128];  /* "wcsph.viscosity.alpha" */
    char set_value[REC_MAX_SETS][64]; /* as given */
    int nranks;              /* MPI: per rank, this frame: particles owned, ms in steps, of which communication */
    uint32_t rank_particles[64];
    float rank_step_ms[64], rank_comm_ms[64];
} rec_frame;

typedef struct floe_record {
    const char *floe_version;
    const char *scene_path, *scene_hash;
    const char *started;     /* ISO 8601 UTC */
    const char *backend;     /* "cpu" */
    int threads, dim;
    double spacing, support;
    double dt_fixed;         /* 0 = adaptive */
    double cfl, fps;
    int nmodules;
    rec_module modules[32];
    int nstages;
    rec_stage stages[REC_MAX_STAGES];
    int nframes;
    const rec_frame *frames;
    int first_frame;         /* file number of frame 0 (a continuing run), 0 = none */
    const char *status;      /* running | finished | stopped | interrupted | timeout | blowup | failed */
    const char *message;     /* error / blow-up message or NULL */
    const char *outside;     /* the domain's outside rule: delete | error | clamp */
    uint64_t outside_count;  /* particles deleted or clamped by it during the run */
} floe_record;

/* Write the whole record to path (atomically). 0 or -1. */
int rec_write(const char *path, const floe_record *r);
int rec_write_at(int dirfd, const char *name, const floe_record *r);
/* Everything but the frames, then "frames:" (atomically); returns a
 * descriptor open for appending, or -1. */
int rec_begin_at(int dirfd, const char *name, const floe_record *r);
/* Append one frame's line (one write). 0 or -1. */
int rec_append_frame(int fd, const floe_record *r, const rec_frame *fr);

#endif
