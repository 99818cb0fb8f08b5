/* file.h: reading a whole (small) file into memory. */
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

#endif
