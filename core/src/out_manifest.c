/* The list of the files modules wrote into a run folder under names of
 * their own (OUT_MANIFEST, out_path.h): what api->out_write adds, what a
 * later run into the folder (out_take, the output root's check) reads. */
#include "out_path.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int out_manifest_has(int dirfd, const char *name)
{
    int fd = openat(dirfd, OUT_MANIFEST, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    char line[512];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        found = strcmp(line, name) == 0;
    }
    fclose(f);
    return found;
}

int out_manifest_add(int dirfd, const char *name)
{
    if (out_is_floe_file(name) || out_manifest_has(dirfd, name))
        return 0;
    int fd = openat(dirfd, OUT_MANIFEST, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    char line[512];
    const int n = snprintf(line, sizeof line, "%s\n", name);
    const int ok = n > 0 && n < (int)sizeof line && write(fd, line, (size_t)n) == n;
    close(fd);
    return ok ? 0 : -1;
}
