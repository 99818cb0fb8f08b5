/* file.h: reading a whole (small) file into memory, and replacing one atomically. */
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
 * Replace the file at path by len bytes of data, atomically: written to path.tmp with mode
 * (creating it), synced, renamed over path, and the folder synced, so that a crash at any point
 * leaves the old file or the new one, whole. Errors, with *e naming the path: ERR_IO (cannot
 * write, sync or rename; the temporary file is removed), ERR_INVAL (a path too long).
 */
int file_write_atomic(const char *path, const void *data, size_t len, unsigned mode,
                      struct error *e);

#endif
