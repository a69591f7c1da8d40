/* floe_output: the output root of a scene, and the checks a folder passes
 * before it becomes one. Without FLOE_OUTPUT_FORCE a root is refused when
 * it is '/', the home folder itself, or a folder holding anything that is
 * not Floe output (run records, frame files, folders of those, at most
 * ROOT_DEPTH deep). Paths below the root: out_path.c. */
#include "ctx.h"
#include "io.h"
#include "out_path.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

#define ROOT_DEPTH 3

/* Is everything in the folder Floe output? The first other entry into bad. */
static int floe_only(int dirfd, int depth, char *bad, size_t blen, const char *prefix)
{
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        snprintf(bad, blen, "%s (unreadable)", prefix[0] ? prefix : ".");
        return 0;
    }
    int ok = 1;
    for (struct dirent *e; ok && (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 || out_is_floe_file(e->d_name) ||
            out_manifest_has(dirfd, e->d_name))
            continue;
        char shown[1024];
        snprintf(shown, sizeof shown, "%s%s", prefix, e->d_name);
        struct stat st;
        int sub = -1;
        if (depth > 0 && fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
            sub = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0) {
            snprintf(bad, blen, "%s", shown);
            ok = 0;
            continue;
        }
        char pre[1100];
        snprintf(pre, sizeof pre, "%s/", shown);
        ok = floe_only(sub, depth - 1, bad, blen, pre);
        close(sub);
    }
    closedir(d);
    return ok;
}

static int same_folder(const char *a, const char *b)
{
    struct stat sa, sb;
    return a && b && stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* The refusals of a root (without FLOE_OUTPUT_FORCE); 0 or -1. */
static int root_refused(const char *shown, const char *abs, int fd, char *err, size_t errlen)
{
    const char *home = getenv("HOME");
    char bad[1200];
    if (strcmp(abs, "/") == 0 || same_folder(abs, "/"))
        snprintf(err, errlen, "the output folder %s is the root of the file system", shown);
    else if (home && home[0] && same_folder(abs, home))
        snprintf(err, errlen, "the output folder %s is the home folder itself", shown);
    else if (!floe_only(fd, ROOT_DEPTH, bad, sizeof bad, ""))
        snprintf(err, errlen, "the output folder %s holds files that are not a previous Floe run (%s)", shown, bad);
    else
        return 0;
    size_t n = strlen(err);
    snprintf(err + n, errlen - n, "; choose another --out, or pass --force to write there anyway");
    return -1;
}

FLOE_EXPORT floe_output *floe_output_create(const char *root, unsigned flags, char *err, size_t errlen)
{
    char dummy[8];
    if (!err || !errlen) {
        err = dummy;
        errlen = sizeof dummy;
    }
    err[0] = '\0';
    const char *shown = root && root[0] ? root : "out";
    floe_output *o = calloc(1, sizeof *o);
    if (!o) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    o->flags = flags;
    o->fd = -1;
    if (out_normalise(shown, 1, o->root, sizeof o->root) != 0) {
        snprintf(err, errlen, "cannot resolve the output folder %s", shown);
        free(o);
        return NULL;
    }
    /* the root itself is the user's choice: a link on its way is followed;
     * a missing root is made when the first file is written */
    o->fd = open(o->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (o->fd < 0 && errno == ENOENT)
        return o;
    if (o->fd < 0) {
        snprintf(err, errlen, "cannot open the output folder %s: %s", shown, strerror(errno));
        free(o);
        return NULL;
    }
    if (!(flags & FLOE_OUTPUT_FORCE) && root_refused(shown, o->root, o->fd, err, errlen) != 0) {
        floe_output_destroy(o);
        return NULL;
    }
    return o;
}

int out_root_fd(floe_output *out, char *err, size_t errlen)
{
    if (out->fd >= 0)
        return out->fd;
    if (io_mkdirs(out->root) != 0 || (out->fd = open(out->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        int e = errno;
        snprintf(err, errlen, "cannot create the output folder %s: %s", out->root, strerror(e));
        errno = e;
        return -1;
    }
    return out->fd;
}

FLOE_EXPORT void floe_output_destroy(floe_output *out)
{
    if (!out)
        return;
    if (out->fd >= 0)
        close(out->fd);
    free(out->taken);
    free(out);
}

FLOE_EXPORT void floe_ctx_set_output(floe_ctx *ctx, floe_output *out)
{
    if (ctx)
        ctx->out = out;
}
