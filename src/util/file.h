/* file.h: reading a whole (small) file into memory, replacing one atomically, and holding one as
 * a lock. */
#ifndef CASTOR_UTIL_FILE_H
#define CASTOR_UTIL_FILE_H

#include <stddef.h>

#include "util/error.h"

/*
 * Read the file at path. On success *data is a new buffer (free with free(); NUL-terminated, the
 * terminator not counted in *len). Errors, with *e naming the path: ERR_NOENT, ERR_IO (cannot open
 * or read), ERR_NOMEM; the outputs are untouched.
 */
int file_read_all(const char *path, char **data, size_t *len, struct error *e);

/* The folder of the running program (/proc/self/exe without its last component) into buf (size
 * bytes). ERR_IO when it cannot be read, ERR_RANGE when it does not fit; buf written only on
 * success. */
int file_exe_dir(char *buf, size_t size);

/*
 * Replace the file at path by len bytes of data, atomically: written to a temporary file of
 * this call's own beside it (path.tmp.<pid>.<n>) with mode, synced, renamed over path, and the
 * folder synced, so that a crash at any point leaves the old file or the new one, whole, and of
 * writers at once the last rename wins, whole. Errors, with *e naming the path: ERR_IO (cannot
 * write, sync or rename; the temporary file is removed), ERR_INVAL (a path too long).
 */
int file_write_atomic(const char *path, const void *data, size_t len, unsigned mode,
                      struct error *e);

/*
 * Hold the file at path (created with mode 0600 when missing) as an exclusive lock for as long as
 * *fd stays open (close it to release; the process's end releases it too): flock(LOCK_EX |
 * LOCK_NB), then this process's pid written in it. ERR_CONFLICT when another process holds it
 * (*holder, which may be NULL, gets the pid written there, or 0 when it cannot be read), ERR_IO
 * when the file cannot be opened or locked, ERR_INVAL for a NULL argument; e names the path. *fd
 * is written only on success.
 */
int file_lock(const char *path, int *fd, long *holder, struct error *e);

#endif
