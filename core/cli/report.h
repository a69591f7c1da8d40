/* floe compare and floe validate (compare.c, validate.c): runs of scenes
 * side by side and the report folder written by scripts/floe_report.py. */
#ifndef FLOE_CLI_REPORT_H
#define FLOE_CLI_REPORT_H

#include <floe/floe.h>

#include <stddef.h>

int floe_cmd_compare(int argc, char **argv);
int floe_cmd_validate(int argc, char **argv);

/* what the two commands share (compare.c) */
int report_mkdirs(const char *path);
/* DIR must be new or empty, or --force: 0, else -1 with a message */
int report_dir_ready(const char *cmd, const char *dir, int force);
/* Runs scripts/floe_report.py MODE DIR with a python3 that has PyYAML
 * (and matplotlib when one has): 0, or -1 with a message on stderr. */
int report_write(const char *cmd, const char *mode, const char *dir);
/* One scene run into out_dir with the sets given; the summary of its last
 * sim:run in *sum, the error text in err. */
int report_run_scene(const char *scene, const char *out_dir, const char *const *sets, int nsets, int threads,
                     int frames, int force, floe_run_summary *sum, char *err, size_t errlen);

#endif
