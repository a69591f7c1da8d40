/* The output root: paths resolved component by component from the root's
 * folder descriptor (openat with O_NOFOLLOW | O_DIRECTORY, mkdirat where a
 * folder is missing), the checks of a new root, and the first use of each
 * folder (an earlier run's files are refused or, with FLOE_OUTPUT_FORCE,
 * removed). See out_path.h and docs/reliability.md. */
#include "out_path.h"

#include "io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

/* Message into err, errno = e, -1. */
static int fail(char *err, size_t errlen, int e, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    errno = e;
    return -1;
}

/* One component below fd: the folder's descriptor, made first when create. */
static int step_into(int fd, const char *comp, int create, const char *shown, char *err, size_t errlen)
{
    int d = openat(fd, comp, DIR_FLAGS);
    if (d < 0 && errno == ENOENT && create) {
        if (mkdirat(fd, comp, 0777) != 0 && errno != EEXIST)
            return fail(err, errlen, errno, "cannot create the folder '%s': %s", shown, strerror(errno));
        d = openat(fd, comp, DIR_FLAGS);
    }
    if (d >= 0)
        return d;
    int e = errno;
    struct stat st;
    if (fstatat(fd, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
        return fail(err, errlen, ELOOP, "'%s': '%s' is a symbolic link (links are not followed below the output root)",
                    shown, comp);
    return fail(err, errlen, e, "cannot open the folder '%s': %s", shown, strerror(e));
}

/* Walks rel below dirfd; with check_only, stops (returning -2) at the first
 * missing component instead of failing. */
static int walk(int dirfd, const char *rel, int create, int check_only, const char *shown, char *err, size_t errlen)
{
    char buf[PATH_MAX];
    if (strlen(rel) >= sizeof buf)
        return fail(err, errlen, ENAMETOOLONG, "'%s': %s", shown, strerror(ENAMETOOLONG));
    if (rel[0] == '/')
        return fail(err, errlen, EPERM, "'%s' must be a relative path", shown);
    snprintf(buf, sizeof buf, "%s", rel);
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return fail(err, errlen, errno, "cannot open the folder of '%s': %s", shown, strerror(errno));
    for (char *save = NULL, *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        if (strcmp(c, ".") == 0)
            continue;
        if (strcmp(c, "..") == 0) {
            close(fd);
            return fail(err, errlen, EPERM, "'%s' has a '..' component", shown);
        }
        int d = step_into(fd, c, create, shown, err, errlen);
        int e = errno;
        close(fd);
        if (d < 0 && check_only && e == ENOENT)
            return -2;
        if (d < 0) {
            errno = e;
            return -1;
        }
        fd = d;
    }
    return fd;
}

int out_walk(int dirfd, const char *rel, int create, const char *what, char *err, size_t errlen)
{
    return walk(dirfd, rel ? rel : "", create, 0, what ? what : rel, err, errlen);
}

/* The part of path below the root, or NULL (message in err) when outside. */
static const char *below_root(const floe_output *out, const char *path, char *norm, size_t len, char *err,
                              size_t errlen)
{
    if (out_normalise(path, 0, norm, len) != 0) {
        fail(err, errlen, EPERM, "'%s' has a '..' component (or cannot be resolved)", path);
        return NULL;
    }
    size_t rl = strlen(out->root);
    if (strcmp(out->root, "/") == 0)
        return norm + 1;
    if (strncmp(norm, out->root, rl) != 0 || (norm[rl] != '\0' && norm[rl] != '/')) {
        fail(err, errlen, EPERM, "'%s' is outside the output root '%s'", path, out->root);
        return NULL;
    }
    return norm[rl] ? norm + rl + 1 : "";
}

static int confined(const floe_output *out) { return out && (out->flags & FLOE_OUTPUT_CONFINE); }

int out_dir_open(floe_output *out, const char *path, int create, char *err, size_t errlen)
{
    if (!path || !path[0])
        return fail(err, errlen, EINVAL, "no folder given");
    if (!confined(out)) { /* the host's or the --unsafe user's own path */
        if (create && io_mkdirs(path) != 0)
            return fail(err, errlen, errno, "cannot create the output folder %s: %s", path, strerror(errno));
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return fd >= 0 ? fd : fail(err, errlen, errno, "cannot open the output folder %s: %s", path, strerror(errno));
    }
    char norm[PATH_MAX];
    const char *rel = below_root(out, path, norm, sizeof norm, err, errlen);
    if (!rel || out_root_fd(out, err, errlen) < 0)
        return -1;
    return walk(out->fd, rel, create, 0, path, err, errlen);
}

int out_dir_check(floe_output *out, const char *path, char *err, size_t errlen)
{
    if (!confined(out))
        return 0;
    char norm[PATH_MAX];
    const char *rel = below_root(out, path, norm, sizeof norm, err, errlen);
    if (!rel)
        return -1;
    if (out->fd < 0) /* nothing below the root exists yet */
        return 0;
    int fd = walk(out->fd, rel, 0, 1, path, err, errlen);
    if (fd == -1)
        return -1;
    if (fd >= 0)
        close(fd);
    return 0;
}

int out_file_open(floe_output *out, const char *path, int oflags, char *err, size_t errlen)
{
    oflags |= O_CLOEXEC;
    if (!confined(out)) {
        int fd = open(path, oflags, 0666);
        return fd >= 0 ? fd : fail(err, errlen, errno, "%s: %s", path, strerror(errno));
    }
    char folder[PATH_MAX];
    const char *slash = strrchr(path, '/');
    const char *leaf = slash ? slash + 1 : path;
    if (!leaf[0] || strcmp(leaf, ".") == 0 || strcmp(leaf, "..") == 0)
        return fail(err, errlen, EISDIR, "'%s' names a folder, not a file", path);
    if (!slash)
        snprintf(folder, sizeof folder, ".");
    else if (slash == path)
        snprintf(folder, sizeof folder, "/");
    else
        snprintf(folder, sizeof folder, "%.*s", (int)(slash - path), path);
    int dfd = out_dir_open(out, folder, 0, err, errlen);
    if (dfd < 0)
        return -1;
    int fd = openat(dfd, leaf, oflags | O_NOFOLLOW, 0666);
    int e = errno;
    struct stat st;
    if (fd < 0 && e == ELOOP && fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
        close(dfd);
        return fail(err, errlen, ELOOP, "'%s' is a symbolic link (links are not followed below the output root)",
                    path);
    }
    close(dfd);
    return fd >= 0 ? fd : fail(err, errlen, e, "%s: %s", path, strerror(e));
}

/* ---- first use of a folder ---------------------------------------------- */

static out_taken *find_taken(floe_output *out, const struct stat *st)
{
    for (int i = 0; out && i < out->ntaken; i++)
        if (out->taken[i].dev == st->st_dev && out->taken[i].ino == st->st_ino)
            return &out->taken[i];
    return NULL;
}

/* run.yaml, run.N.yaml: a run's record */
static int is_record(const char *name)
{
    size_t l = strlen(name);
    if (strcmp(name, "run.yaml") == 0)
        return 1;
    if (l < 10 || strncmp(name, "run.", 4) != 0 || strcmp(name + l - 5, ".yaml") != 0)
        return 0;
    for (size_t i = 4; i < l - 5; i++)
        if (name[i] < '0' || name[i] > '9')
            return 0;
    return 1;
}

/* Count (or, when remove, unlink) the earlier run's files in the folder;
 * *others (if not NULL) gets how many of them are not run records. */
static int earlier_run(int dirfd, int remove, char *first, size_t flen, int *others)
{
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        struct stat st;
        if (!(out_is_floe_file(e->d_name) || out_manifest_has(dirfd, e->d_name)) ||
            fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || S_ISDIR(st.st_mode))
            continue;
        if (n++ == 0 && first)
            snprintf(first, flen, "%s", e->d_name);
        if (others && !is_record(e->d_name))
            ++*others;
        if (remove && unlinkat(dirfd, e->d_name, 0) != 0) {
            int er = errno;
            closedir(d);
            errno = er;
            return -1;
        }
    }
    closedir(d);
    return n;
}

int out_take(floe_output *out, int dirfd, const char *shown, int *first_frame, int *record, char *err,
             size_t errlen)
{
    *first_frame = 0;
    *record = 0;
    if (!out)
        return 0;
    struct stat st;
    if (fstat(dirfd, &st) != 0)
        return fail(err, errlen, errno, "cannot read the folder %s: %s", shown, strerror(errno));
    out_taken *t = find_taken(out, &st);
    if (t) {
        *first_frame = t->next_frame;
        *record = t->records;
        return 0;
    }
    char first[256] = "";
    int force = (out->flags & FLOE_OUTPUT_FORCE) != 0, others = 0;
    int n = earlier_run(dirfd, force, first, sizeof first, &others);
    /* a benchmark writes its record only: it replaces an earlier one's
     * records (a folder holding nothing else of a run), never frames */
    if (n > 0 && !force && others == 0 && (out->flags & FLOE_OUTPUT_BENCH) && !(out->flags & FLOE_OUTPUT_RESUME))
        n = earlier_run(dirfd, 1, NULL, 0, NULL) < 0 ? -1 : 0;
    if (n < 0)
        return fail(err, errlen, errno, "cannot %s the folder %s: %s", force ? "clear the earlier run in" : "list",
                    shown, strerror(errno));
    if (n > 0 && !force && !(out->flags & FLOE_OUTPUT_RESUME)) {
        if (err && errlen)
            snprintf(err, errlen, "%s holds an earlier run (%d files: %s, ...); --force replaces it (its run "
                     "records and frame files are removed first), or choose another --out", shown, n, first);
        errno = EEXIST;
        return -1;
    }
    if (out->ntaken == out->cap) {
        int nc = out->cap ? 2 * out->cap : 8;
        out_taken *nt = realloc(out->taken, (size_t)nc * sizeof *nt);
        if (!nt)
            return fail(err, errlen, ENOMEM, "%s: %s", shown, strerror(ENOMEM));
        out->taken = nt;
        out->cap = nc;
    }
    out->taken[out->ntaken++] = (out_taken){st.st_dev, st.st_ino, 0, 0};
    return 0;
}

void out_taken_set(floe_output *out, int dirfd, int next_frame, int records)
{
    struct stat st;
    out_taken *t = out && fstat(dirfd, &st) == 0 ? find_taken(out, &st) : NULL;
    if (t) {
        t->next_frame = next_frame;
        t->records = records;
    }
}

void out_taken_update(floe_output *out, int dirfd, int next_frame)
{
    struct stat st;
    out_taken *t = out && fstat(dirfd, &st) == 0 ? find_taken(out, &st) : NULL;
    if (t) {
        t->next_frame = next_frame;
        t->records++;
    }
}
