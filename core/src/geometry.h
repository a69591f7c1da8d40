/* Shared by the geometry files (geometry.c, mesh_sample.c, mesh_fill.c). */
#ifndef FLOE_GEOMETRY_H
#define FLOE_GEOMETRY_H

#include "ctx.h"

/* The set behind a handle, which must be of the given kind ("what" names
 * the caller in the error). */
int geom_check_set(floe_ctx *ctx, floe_set set, floe_set_kind kind, const char *what, pset **out);
/* Append n particles at positions pos (3 floats each) with velocity v0
 * (NULL = at rest); fluid ones get mass rest_density d^dim, rho and an id.
 * Returns n, or -1 with the error in the context. */
long geom_append(floe_ctx *ctx, floe_set set, pset *p, const float *pos, uint32_t n, const float v0[3]);

#endif
