/* file.c: reading a whole file into memory, and replacing one atomically. */
#include "util/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

int file_read_all(const char *path, char **data, size_t *len, struct error *e)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;

    if (!f) {
        int code = errno == ENOENT ? ERR_NOENT : ERR_IO;

        return err_set(e, code, path, 0, 0, "cannot open: %s", strerror(errno));
    }
    for (;;) {
        size_t got;

        if (n + 1 >= cap) {
            char *grown;

            cap = cap ? cap * 2 : 16384;
            grown = realloc(buf, cap);
            if (!grown) {
                rc = err_set(e, ERR_NOMEM, path, 0, 0, NULL);
                goto out;
            }
            buf = grown;
        }
        got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        rc = err_set(e, ERR_IO, path, 0, 0, "read error");
        goto out;
    }
    buf[n] = '\0';
    *data = buf;
    *len = n;
    buf = NULL;
out:
    free(buf);
    fclose(f);
    return rc;
}

/* Sync the folder that holds path, so that a rename in it is on disk. */
static int file_sync_dir(const char *path)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    int fd, rc;

    if (!slash)
        snprintf(dir, sizeof(dir), ".");
    else if (slash == path)
        snprintf(dir, sizeof(dir), "/");
    else
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
    fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return ERR_IO;
    rc = fsync(fd) == 0 || errno == EINVAL ? 0 : ERR_IO;
    close(fd);
    return rc;
}

int file_write_atomic(const char *path, const void *data, size_t len, unsigned mode,
                      struct error *e)
{
    static unsigned long serial; /* the temporary files this process has made */
    const char *p = data;
    char tmp[4096];
    size_t left = len;
    int fd, rc = 0;

    /* a name of this writer's own: two processes (or threads) replacing one file each rename a
     * whole file of theirs, where one shared name let one rename the other's half-written one */
    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%ld.%lu", path, (long)getpid(),
                         __atomic_add_fetch(&serial, 1, __ATOMIC_RELAXED)) >= sizeof(tmp))
        return err_set(e, ERR_INVAL, path, 0, 0, "the path is too long");
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, (mode_t)mode);
    if (fd < 0)
        return err_set(e, ERR_IO, path, 0, 0, "cannot create %s: %s", tmp, strerror(errno));
    while (left > 0 && rc == 0) {
        ssize_t w = write(fd, p, left);

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            rc = err_set(e, ERR_IO, path, 0, 0, "cannot write: %s", strerror(errno));
        else {
            p += w;
            left -= (size_t)w;
        }
    }
    if (rc == 0 && fsync(fd) != 0)
        rc = err_set(e, ERR_IO, path, 0, 0, "cannot sync: %s", strerror(errno));
    if (close(fd) != 0 && rc == 0)
        rc = err_set(e, ERR_IO, path, 0, 0, "cannot close: %s", strerror(errno));
    if (rc == 0 && rename(tmp, path) != 0)
        rc = err_set(e, ERR_IO, path, 0, 0, "cannot rename into place: %s", strerror(errno));
    if (rc < 0) {
        unlink(tmp);
        return rc;
    }
    if (file_sync_dir(path) < 0)
        return err_set(e, ERR_IO, path, 0, 0, "cannot sync its folder");
    return 0;
}

int file_exe_dir(char *buf, size_t size)
{
    char path[4096], *slash;
    ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);

    if (n <= 0)
        return ERR_IO;
    path[n] = '\0';
    if (!(slash = strrchr(path, '/')) || slash == path)
        return ERR_IO;
    *slash = '\0';
    if (strlen(path) >= size)
        return ERR_RANGE;
    memcpy(buf, path, strlen(path) + 1);
    return 0;
}

int file_lock(const char *path, int *fd, long *holder, struct error *e)
{
    char pid[32] = "";
    ssize_t got;
    int f;

    if (!path || !fd)
        return err_set(e, ERR_INVAL, path ? path : "", 0, 0, "a lock needs a path");
    f = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (f < 0)
        return err_set(e, ERR_IO, path, 0, 0, "cannot open the lock: %s", strerror(errno));
    if (flock(f, LOCK_EX | LOCK_NB) < 0) {
        int busy = errno == EWOULDBLOCK;

        got = busy ? pread(f, pid, sizeof(pid) - 1, 0) : -1;
        if (holder)
            *holder = got > 0 ? strtol(pid, NULL, 10) : 0;
        close(f);
        if (busy)
            return err_set(e, ERR_CONFLICT, path, 0, 0, "held by another process (pid %s)",
                           got > 0 ? strtok(pid, "\n") : "unknown");
        return err_set(e, ERR_IO, path, 0, 0, "cannot lock: %s", strerror(errno));
    }
    /* the pid, for what a process refused is told; the lock holds without it */
    snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
    if (ftruncate(f, 0) == 0)
        got = pwrite(f, pid, strlen(pid), 0);
    (void)got;
    *fd = f;
    return 0;
}
