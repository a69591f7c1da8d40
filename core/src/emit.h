/* Sources and sinks of water (emit.c): particle sets that grow and shrink
 * during a run. Internal. */
#ifndef FLOE_EMIT_H
#define FLOE_EMIT_H

#include <floe/floe.h>

#include <stdint.h>

enum { EMIT_POINT = 1, EMIT_DISC, EMIT_LINE };

typedef struct emit_source_def {
    int shape;               /* EMIT_* */
    floe_set set;            /* fluid set the particles join */
    float centre[3];         /* point, disc */
    float dir[3];            /* flow direction (normalised by emit_add) */
    float radius;            /* disc: radius (2D: half-width of the opening) */
    float a[3], b[3];        /* line: its ends */
    double rate;             /* m^3/s (2D: m^2/s); 0: speed given */
    double speed;            /* m/s; 0: from rate */
    double start, stop;      /* active in [start, stop) (stop <= start: no end) */
} emit_source_def;

typedef struct emit_sink_def {
    int edge;                /* 1: the domain's side faces (x, and z in 3D), `width` deep */
    float width;             /* edge: metres (0 = two spacings) */
    float min[3], max[3];    /* region */
} emit_sink_def;

typedef struct emit_flow {
    double mass_in;          /* the sources' nominal inflow so far: rho * rate * active time */
    double mass_emitted;     /* mass of the particles emitted */
    double mass_out;         /* mass of the particles the sinks removed */
    uint64_t emitted, removed;
    uint64_t device_appends; /* OpenCL: layers appended into the device copies (no round trip) */
    uint64_t device_grows;   /* OpenCL: of those, appends that grew the device copies on the device */
    uint64_t device_sink_checks; /* OpenCL: set-steps whose sinks were found empty on the device */
    uint64_t device_compactions; /* OpenCL: set-steps whose sinks removed particles on the device */
    uint64_t host_compactions; /* set-steps whose sinks removed particles on the host */
    double speed[64];        /* each source's speed (m/s), after the lattice's rounding */
    uint32_t layer[64];      /* particles per layer of each source */
} emit_flow;

/* A source; checks it lies inside the domain. Returns its index or -1 (message set). */
int emit_source_add(floe_ctx *ctx, const emit_source_def *def);
/* Switch source i on or off (from Lua, e.g. in on_frame). */
int emit_source_switch(floe_ctx *ctx, int i, int on);
int emit_sink_add(floe_ctx *ctx, const emit_sink_def *def);
void emit_flow_get(floe_ctx *ctx, emit_flow *out);
void emit_free(floe_ctx *ctx);
/* checkpoints: the core module's save/load hooks, state = the context */
int emit_save(void *state, floe_state_io *out);
int emit_load(void *state, floe_state_io *in);
/* the core stage "emit" */
int emit_stage(const floe_stage_call *call);

#endif
