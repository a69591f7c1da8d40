/* Where a scene, a run and its modules may write (internal).
 *
 * A floe_output is the output root of one scene (floe.h). Every file a
 * scene, floe_run or a module writes is reached from the root's folder
 * descriptor one component at a time with openat(O_NOFOLLOW | O_DIRECTORY),
 * so the operating system, not a string comparison, decides where it lands:
 * a '..' component, an absolute path outside the root and a symbolic link
 * below the root are refused (docs/reliability.md). An output without
 * FLOE_OUTPUT_CONFINE (--unsafe) resolves paths as given.
 *
 * Every function that fails writes why into err (with strerror where the
 * system said no) and returns -1 with errno set. */
#ifndef FLOE_OUT_PATH_H
#define FLOE_OUT_PATH_H

#include <floe/floe.h>

#include <stddef.h>
#include <sys/types.h>

/* A folder some run or module of this output has written (first use done). */
typedef struct out_taken {
    dev_t dev;
    ino_t ino;
    int next_frame;          /* file number a continuing run starts at */
    int records;             /* run records written there (run.yaml, run.2.yaml, ...) */
} out_taken;

struct floe_output {
    char root[4096];         /* absolute, lexically normalised */
    int fd;                  /* the root folder (-1 until made: out_root_fd) */
    unsigned flags;          /* FLOE_OUTPUT_* */
    int ntaken, cap;
    out_taken *taken;
};

/* The root's descriptor, the folder made first if it is missing; -1. */
int out_root_fd(floe_output *out, char *err, size_t errlen);

/* Lexically absolute (against the working directory), "." and empty
 * components dropped; ".." pops one component when allow_up, else fails.
 * 0 or -1. */
int out_normalise(const char *path, int allow_up, char *out, size_t len);

/* The folder `path` names (relative to the working directory, or absolute),
 * below the root when confined; missing folders are made when create.
 * out may be NULL (a host without an output: the path as given). The
 * descriptor to close, or -1. */
int out_dir_open(floe_output *out, const char *path, int create, char *err, size_t errlen);

/* Like out_dir_open without creating anything: refuses what out_dir_open
 * would refuse (outside the root, '..', a symbolic link on the way) for the
 * part of the path that exists. 0 or -1. */
int out_dir_check(floe_output *out, const char *path, char *err, size_t errlen);

/* `rel` (relative, no '..', no symbolic link) below the folder dirfd, made
 * when create; what = how to name it in messages. The descriptor or -1. */
int out_walk(int dirfd, const char *rel, int create, const char *what, char *err, size_t errlen);

/* A file opened for writing (Lua io.open, io.output): its folder resolved
 * as out_dir_open(create = 0) does, the file itself opened with O_NOFOLLOW.
 * oflags as for open(2). The descriptor or -1. */
int out_file_open(floe_output *out, const char *path, int oflags, char *err, size_t errlen);

/* First use of the folder dirfd (shown as `shown`) by this output. A folder
 * used before continues: *first_frame is where its frame numbers go on and
 * *record the number of records already there. A new folder holding an
 * earlier run's files (run.yaml, NAME.NNNN.ply/vtk/png, NAME.mp4) is
 * refused, unless FLOE_OUTPUT_FORCE: those files are removed first. out
 * NULL: every folder is new and nothing is checked. 0 or -1. */
int out_take(floe_output *out, int dirfd, const char *shown, int *first_frame, int *record, char *err,
             size_t errlen);
/* A resumed run (FLOE_OUTPUT_RESUME) takes the place of the one it goes on:
 * its frame numbers and record are the checkpoint's. */
void out_taken_set(floe_output *out, int dirfd, int next_frame, int records);
/* After a run wrote frames first_frame .. next_frame - 1 and one record there. */
void out_taken_update(floe_output *out, int dirfd, int next_frame);

/* Names that become file names (set names, sim:run's name): 1..63 of
 * letters, digits, '_', '-' and '.', not starting with '.' or '-'. */
#define OUT_NAME_RULE "1..63 letters, digits, '_', '-' or '.', not starting with '.' or '-'"
int out_name_ok(const char *name);

/* 1 if name is one Floe writes into a run folder (see out_take): run
 * records, frames, videos, the checkpoint and io_atomic's temporaries. */
int out_is_floe_file(const char *name);

/* The files modules write into a run folder (api->out_write) under names
 * out_is_floe_file does not know (bodies.csv, terrain.ply): listed one a
 * line in OUT_MANIFEST there, so that a later run into the folder, or
 * --resume, takes them as Floe's (and an earlier run's are removed as its
 * frames are). */
#define OUT_MANIFEST ".floe_files"
int out_manifest_add(int dirfd, const char *name);
int out_manifest_has(int dirfd, const char *name);

#endif
