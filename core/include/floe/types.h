/* Floe: types shared by hosts and module authors. */
#ifndef FLOE_TYPES_H
#define FLOE_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define FLOE_EXPORT __declspec(dllexport)
#else
#define FLOE_EXPORT __attribute__((visibility("default")))
#endif

/* Status codes returned by every fallible call. FLOE_OK is zero. */
typedef enum floe_status {
    FLOE_OK = 0,
    FLOE_ERR = -1,          /* generic failure, message in floe_ctx_error() */
    FLOE_ERR_NOMEM = -2,
    FLOE_ERR_ARG = -3,      /* bad argument or parameter */
    FLOE_ERR_BLOWUP = -4,   /* NaN/Inf or particle left the domain */
    FLOE_ERR_IO = -5,
    FLOE_ERR_INTERRUPT = -6,/* user asked to stop (Ctrl-C, SIGTERM) */
    FLOE_ERR_TIMEOUT = -7   /* the wall-time limit (floe_scene_opts.timeout_s) was reached */
} floe_status;

/* Element type of a particle attribute or grid. Vectors always hold three
 * components; in 2D the third one is zero. */
typedef enum floe_type {
    FLOE_F32 = 1, /* float */
    FLOE_VEC3,    /* float[3] */
    FLOE_I32,     /* int32_t */
    FLOE_U32      /* uint32_t */
} floe_type;

/* Roles of particle sets. Fluid sets move and get neighbour lists against
 * every set; boundary sets are sampled walls/solids (Akinci volumes). */
typedef enum floe_set_kind {
    FLOE_SET_FLUID = 1,
    FLOE_SET_BOUNDARY = 2,
    FLOE_SET_ANY = 3
} floe_set_kind;

/* Handles: index + generation, 0 means none. Keep them across steps; look
 * pointers up again inside each stage call (a resize or reorder moves data). */
typedef struct floe_set { uint32_t id; } floe_set;
typedef struct floe_grid { uint32_t id; } floe_grid;

typedef struct floe_ctx floe_ctx;

/* The most particle sets of each kind a context holds (fluid and boundary
 * sets together): the core's tables and a module's per-set arrays
 * (<floe/sph.h> targets, <floe/module_sets.h>) are this long. */
#define FLOE_MAX_SETS 16

/* Size in bytes of one element of a type. */
static inline size_t floe_type_size(floe_type t)
{
    return t == FLOE_VEC3 ? 3 * sizeof(float) : 4;
}

#ifdef __cplusplus
}
#endif
#endif
