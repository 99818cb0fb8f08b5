/* file.c: reading a whole file into memory. */
#include "util/file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
