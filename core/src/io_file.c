/* Atomic file writing and mkdir -p.
 *
 * io_atomic_open() creates ".<basename>.tmp.<pid>" in the folder of the final
 * path (io_atomic_openat: relative to a folder descriptor, as out_path.c
 * resolves them); io_atomic_commit() flushes, fsyncs, closes and renames it over the
 * final name; io_atomic_abort() closes and removes it. Every failure path
 * removes the temporary file and leaves whatever was under the final name
 * untouched. */
#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

int io_atomic_open(io_atomic *a, const char *path)
{
    return io_atomic_openat(a, AT_FDCWD, path);
}

int io_atomic_openat(io_atomic *a, int dirfd, const char *path)
{
    if (!a) {
        errno = EINVAL;
        return -1;
    }
    a->f = NULL;
    a->dirfd = dirfd;
    a->path[0] = '\0';
    a->tmp[0] = '\0';
    if (!path || !path[0]) {
        errno = EINVAL;
        return -1;
    }
    size_t len = strlen(path);
    if (len >= sizeof a->path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    if (path[len - 1] == '/') { /* a folder, not a file */
        errno = EISDIR;
        return -1;
    }
    memcpy(a->path, path, len + 1);

    const char *slash = strrchr(path, '/');
    size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0; /* with the '/' */
    const char *base = slash ? slash + 1 : path;
    int w = snprintf(a->tmp, sizeof a->tmp, "%.*s.%s.tmp.%ld", (int)dirlen, path, base, (long)getpid());
    if (w < 0 || (size_t)w >= sizeof a->tmp) {
        a->tmp[0] = '\0';
        errno = ENAMETOOLONG;
        return -1;
    }

    /* A stale temp of a crashed process with the same pid is overwritten;
     * a symbolic link under that name is not followed. */
    int fd = openat(dirfd, a->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd < 0) {
        a->tmp[0] = '\0';
        return -1;
    }
    a->f = fdopen(fd, "wb");
    if (!a->f) {
        int e = errno;
        close(fd);
        unlinkat(dirfd, a->tmp, 0);
        a->tmp[0] = '\0';
        errno = e;
        return -1;
    }
    return 0;
}

int io_atomic_commit(io_atomic *a)
{
    if (!a || !a->f) {
        errno = EINVAL;
        return -1;
    }
    FILE *f = a->f;
    a->f = NULL;
    int e = 0;
    if (fflush(f) != 0)
        e = errno ? errno : EIO;
    else if (ferror(f))
        e = EIO;
    else if (fsync(fileno(f)) != 0)
        e = errno;
    if (fclose(f) != 0 && !e)
        e = errno ? errno : EIO;
    if (!e && renameat(a->dirfd, a->tmp, a->dirfd, a->path) != 0)
        e = errno;
    if (e) {
        unlinkat(a->dirfd, a->tmp, 0);
        a->tmp[0] = '\0';
        errno = e;
        return -1;
    }
    a->tmp[0] = '\0';
    return 0;
}

void io_atomic_abort(io_atomic *a)
{
    if (!a)
        return;
    int e = errno;
    if (a->f) {
        fclose(a->f);
        a->f = NULL;
    }
    if (a->tmp[0]) {
        unlinkat(a->dirfd, a->tmp, 0);
        a->tmp[0] = '\0';
    }
    errno = e;
}

static int mkdir_one(const char *p)
{
    if (mkdir(p, 0777) == 0)
        return 0;
    int e = errno;
    struct stat st;
    if (stat(p, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return 0;
        errno = ENOTDIR;
        return -1;
    }
    errno = e;
    return -1;
}

int io_mkdirs(const char *path)
{
    if (!path || !path[0]) {
        errno = EINVAL;
        return -1;
    }
    char buf[4096];
    size_t len = strlen(path);
    if (len >= sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(buf, path, len + 1);
    while (len > 1 && buf[len - 1] == '/') /* trailing slashes */
        buf[--len] = '\0';
    for (size_t i = 1; i < len; i++) {
        if (buf[i] != '/' || buf[i - 1] == '/')
            continue;
        buf[i] = '\0';
        int r = mkdir_one(buf);
        buf[i] = '/';
        if (r != 0)
            return -1;
    }
    return mkdir_one(buf);
}
