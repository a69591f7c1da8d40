/* GPU ranks under MPI (decomp_cl.c, docs/mpi.md "GPU ranks"): each rank's
 * device by its local rank, and the halos of device-resident data through
 * host memory. Without MPI (or on one rank) every call returns at once. */
#ifndef FLOE_DECOMP_CL_H
#define FLOE_DECOMP_CL_H

#include "ctx.h"

/* this process's rank among the job's processes on its host (Open MPI's
 * OMPI_COMM_WORLD_LOCAL_RANK, else MPI_Comm_split_type(MPI_COMM_TYPE_SHARED));
 * -1 outside a job of several processes */
int dd_local_rank(void);

/* a halo's data on the device, staged through host memory */
typedef struct dd_cl_halo {
    int kind;           /* 0 host data, 1 a device buffer staged, 2 an attribute's host copy */
    void *mem, *host;   /* the device buffer and its host staging (kind 1) */
    pset *p;
    attr *at;           /* kind 2 */
} dd_cl_halo;

/* before a halo exchange of set p's per-particle array *data (elem bytes
 * a particle): the rows the exchange sends (idx[0..m)) of a device buffer
 * are read into host memory and *data points there; an attribute's rows
 * are made current on the host */
int dd_cl_halo_begin(floe_ctx *ctx, const pset *p, void **data, size_t elem, const uint32_t *idx, uint32_t m,
                     dd_cl_halo *h);
/* after it: the ghost rows go to the device; rc passed through */
int dd_cl_halo_end(floe_ctx *ctx, dd_cl_halo *h, size_t elem, int rc);
/* migration and ghosts work on the host copies: every attribute of the
 * fluid sets copied back, the device copies stale (uploaded when a device
 * stage next asks) */
void dd_cl_host(floe_ctx *ctx);
/* the host copy of set p's positions made current, the device's kept
 * current too (read, not moved) */
void dd_cl_positions(floe_ctx *ctx, pset *p);
/* rows idx[0..m) of every attribute of p current on the host: gathered on
 * the device where only its copy is current (the host copy stays marked
 * stale: a later read takes it whole); the whole copy read back where the
 * device's has no room for `rows` particles */
int dd_cl_rows_host(floe_ctx *ctx, pset *p, const uint32_t *idx, uint32_t m, uint32_t rows);
/* how many of p's first n positions lie outside the domain, counted on
 * the device where only it holds them; 1 when the host must count (its x
 * current then) */
int dd_cl_outside(floe_ctx *ctx, pset *p, uint32_t n, uint32_t *out, int *rc);
/* a rebuild that moves only the positions and the rows that move: the
 * backend gathers rows and compacts sets on the device */
int dd_cl_on_device(const floe_ctx *ctx);
/* room on the device for rows [n, n + add) of p where its copies are the
 * truth without it (grown there, the new rows zero; host room reserved by
 * the caller) */
int dd_cl_room(floe_ctx *ctx, pset *p, uint32_t n, uint32_t add);
/* set slot s's particles leavers[0..nleave) (of its n) squeezed out on
 * the device, the order of the others kept */
int dd_cl_squeeze(floe_ctx *ctx, int s, const uint32_t *leavers, uint32_t n, uint32_t nleave);
/* the same for one attribute (only, a name) or every one (NULL) */
int dd_cl_rows_of(floe_ctx *ctx, pset *p, const char *only, const uint32_t *idx, uint32_t m, uint32_t rows);
/* on the device, a superset of the particles of p's first n that the host
 * tests (it tests them again): mode 0 outside [lo, hi) on some axis, mode
 * 1 within r of a face of [lo, hi]; the indices ascending into idx (room
 * for n), *m of them */
int dd_cl_select(floe_ctx *ctx, pset *p, uint32_t n, const double lo[3], const double hi[3], double r, int mode,
                 uint32_t *idx, uint32_t *m);
/* a rebuild's positions kept on the device, and the largest squared
 * distance from them */
int dd_cl_keep_positions(floe_ctx *ctx, pset *p, uint32_t n);
int dd_cl_drift2(floe_ctx *ctx, pset *p, uint32_t n, double *out);
/* bytes copied to and from the device so far (0 without one) */
void dd_cl_bus(floe_ctx *ctx, double *up, double *down);
/* the ghosts' rows [first, first + count) of every attribute, written on
 * the host, into the device copies where they are current */
int dd_cl_rows(floe_ctx *ctx, pset *p, uint32_t first, uint32_t count);

#endif
