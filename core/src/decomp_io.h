/* Frames under MPI (decomp_io.c, docs/mpi.md "Frames"): each rank writes
 * its part of a fluid set's frame into the run folder, rank 0 joins the
 * parts into one file per format, sorted by id, streaming (its memory holds
 * a few buffers per rank, never the whole frame), and removes them. */
#ifndef FLOE_DECOMP_IO_H
#define FLOE_DECOMP_IO_H

#include "ctx.h"
#include "io.h"

#ifdef FLOE_HAVE_MPI
/* Collective, after rank 0 opened and took the run folder out_dir: *first
 * (its first frame number) becomes rank 0's on every rank; the others
 * open the folder into *dirfd (rank 0's stays -1). */
int dd_frame_folder(floe_ctx *ctx, const char *out_dir, int *first, int *dirfd);
/* Collective. Set p's owned particles (n of them: positions x, columns
 * cols) written as BASE.NNNN.rR.part in the folder dirfd (shown as
 * dir_name), then on rank 0 joined into BASE.NNNN.ply / .vtk (fmts: the
 * FLOE_FMT_* bits). */
int dd_write_frame(floe_ctx *ctx, const pset *p, int dirfd, const char *dir_name, const char *base, int number,
                   unsigned fmts, uint32_t n, const float *x, const io_column *cols, int nc);
#else
static inline int dd_frame_folder(floe_ctx *ctx, const char *out_dir, int *first, int *dirfd)
{
    (void)out_dir, (void)first, (void)dirfd;
    return ctx_fail(ctx, FLOE_ERR, "a build without MPI writes no frame parts");
}
static inline int dd_write_frame(floe_ctx *ctx, const pset *p, int dirfd, const char *dir_name, const char *base,
                                 int number, unsigned fmts, uint32_t n, const float *x, const io_column *cols, int nc)
{
    (void)p, (void)dirfd, (void)dir_name, (void)base, (void)number, (void)fmts, (void)n, (void)x, (void)cols, (void)nc;
    return ctx_fail(ctx, FLOE_ERR, "a build without MPI writes no frame parts");
}
#endif

#endif
