/* Frame and record output (internal). Every file is written to a temporary
 * name in the same folder and renamed into place, so a crash or Ctrl-C
 * never leaves a half-written file under a final name. */
#ifndef FLOE_IO_H
#define FLOE_IO_H

#include <floe/types.h>
#include <stdio.h>

/* One per-particle column written to a frame. */
typedef struct io_column {
    const char *name;      /* attribute name ("v", "rho") */
    floe_type type;        /* FLOE_F32, FLOE_VEC3, FLOE_I32, FLOE_U32 */
    const void *data;      /* n elements */
} io_column;

/* Atomic file writing: fopen a temp file next to `path`, then commit
 * (fflush, fsync, fclose, rename) or abort (fclose, unlink). */
typedef struct io_atomic {
    FILE *f;
    int dirfd;               /* path and tmp are relative to it (AT_FDCWD) */
    char path[1024];
    char tmp[1100];
} io_atomic;
int io_atomic_open(io_atomic *a, const char *path);     /* 0 or -1 (errno set) */
int io_atomic_openat(io_atomic *a, int dirfd, const char *path);
int io_atomic_commit(io_atomic *a);                      /* 0 or -1 */
void io_atomic_abort(io_atomic *a);

/* Create a directory and its parents (mkdir -p). 0 or -1. */
int io_mkdirs(const char *path);

/* Binary little-endian PLY: "x y z" then each column (vectors as
 * name_x name_y name_z, e.g. v_x v_y v_z). Positions are cols' x (VEC3). */
int io_write_ply(const char *path, uint32_t n, const float *x, const io_column *cols, int ncols);
int io_write_ply_at(int dirfd, const char *path, uint32_t n, const float *x, const io_column *cols, int ncols);
/* Legacy VTK (binary, big-endian) POLYDATA with VERTICES, columns as
 * POINT_DATA SCALARS / VECTORS. ParaView opens it. */
int io_write_vtk(const char *path, uint32_t n, const float *x, const io_column *cols, int ncols);
int io_write_vtk_at(int dirfd, const char *path, uint32_t n, const float *x, const io_column *cols, int ncols);

/* The writers' pieces, for a frame streamed row by row (the join of MPI
 * ranks' parts, decomp_io.c): a PLY header; VTK's VERTICES section (its
 * line, then n cells, newline) and one POINT_DATA column's header line(s). */
void io_ply_header(FILE *f, uint32_t n, const io_column *cols, int ncols);
int io_vtk_vertices(FILE *f, uint32_t n);
void io_vtk_column_header(FILE *f, const io_column *c);

#endif
