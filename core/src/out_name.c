/* Names in an output folder, without touching the file system: paths made
 * lexically absolute, the names that may become file names, and the names
 * of the files Floe writes into a run folder (out_path.h). */
#include "out_path.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

int out_normalise(const char *path, int allow_up, char *out, size_t len)
{
    char buf[2 * PATH_MAX];
    if (!path || !path[0])
        return -1;
    if (path[0] == '/')
        snprintf(buf, sizeof buf, "%s", path);
    else {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd))
            return -1;
        snprintf(buf, sizeof buf, "%s/%s", cwd, path);
    }
    size_t n = 0;
    out[0] = '\0';
    for (char *save = NULL, *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        if (strcmp(c, ".") == 0)
            continue;
        if (strcmp(c, "..") == 0) {
            if (!allow_up)
                return -1;
            while (n > 0 && out[n - 1] != '/')
                n--;
            if (n > 0)
                n--;
            out[n] = '\0';
            continue;
        }
        size_t cl = strlen(c);
        if (n + cl + 2 > len)
            return -1;
        out[n++] = '/';
        memcpy(out + n, c, cl + 1);
        n += cl;
    }
    if (n == 0)
        snprintf(out, len, "/");
    return 0;
}

/* ---- what Floe writes ---------------------------------------------------- */

int out_name_ok(const char *name)
{
    if (!name || !name[0] || strlen(name) > 63 || name[0] == '.' || name[0] == '-')
        return 0;
    for (const char *c = name; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '_' && *c != '-' && *c != '.')
            return 0;
    return 1;
}

static int all_digits(const char *s, size_t n)
{
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i]))
            return 0;
    return 1;
}

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), t = strlen(tail);
    return n > t && strcmp(s + n - t, tail) == 0;
}

/* NAME.DIGITS.ext for the frame formats. */
static int is_frame(const char *name)
{
    static const char *const exts[] = {".ply", ".vtk", ".png", ".obj"}; /* .obj: the modules' meshes */
    for (size_t i = 0; i < sizeof exts / sizeof *exts; i++) {
        if (!ends_with(name, exts[i]))
            continue;
        size_t stem = strlen(name) - strlen(exts[i]);
        size_t dot = stem;
        while (dot > 0 && name[dot - 1] != '.')
            dot--;
        return dot > 1 && all_digits(name + dot, stem - dot);
    }
    return 0;
}

int out_is_floe_file(const char *name)
{
    if (strcmp(name, "run.yaml") == 0 || strcmp(name, "checkpoint.floe") == 0 || strcmp(name, OUT_MANIFEST) == 0 ||
        is_frame(name) ||
        ends_with(name, ".mp4"))
        return 1;
    if (strcmp(name, "probes.csv") == 0 || ends_with(name, ".probe.csv")) /* probes.c's tables */
        return 1;
    if (strncmp(name, "checkpoint.r", 12) == 0 && ends_with(name, ".floe")) /* MPI: rank R's checkpoint */
        return all_digits(name + 12, strlen(name) - 17);
    if (strncmp(name, "run.", 4) == 0 && ends_with(name, ".yaml"))
        return all_digits(name + 4, strlen(name) - 9);
    const char *tmp = strstr(name, ".tmp.");
    return name[0] == '.' && tmp && all_digits(tmp + 5, strlen(tmp + 5)); /* io_atomic's temporary */
}
