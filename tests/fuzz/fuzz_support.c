/* fuzz_support.c: the scratch folder and the copies the libFuzzer targets share. */
#include "fuzz/fuzz_support.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char fz_dir[256];
static char fz_buf[512];

/* Remove the scratch folder's files (one level: the targets make no subfolders) and the folder. */
static void fz_cleanup(void)
{
    DIR *d = opendir(fz_dir);
    struct dirent *ent;
    char path[600];

    if (!d)
        return;
    while ((ent = readdir(d)) != NULL) {
        if (strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", fz_dir, ent->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(fz_dir);
}

const char *fuzz_path(const char *name)
{
    if (!fz_dir[0]) {
        const char *tmp = getenv("TMPDIR");

        snprintf(fz_dir, sizeof(fz_dir), "%s/castor-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(fz_dir)) {
            perror("fuzz: mkdtemp");
            abort();
        }
        atexit(fz_cleanup);
    }
    snprintf(fz_buf, sizeof(fz_buf), "%s/%s", fz_dir, name);
    return fz_buf;
}

void fuzz_write(const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");

    /* the owner's alone: a state database that others may read is refused (db_open) */
    if (!f || (size > 0 && fwrite(data, 1, size, f) != size) || fclose(f) != 0 ||
        chmod(path, 0600) != 0) {
        perror(path);
        abort();
    }
}

char *fuzz_strndup(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);

    if (!s)
        abort();
    if (size > 0)
        memcpy(s, data, size);
    s[size] = '\0';
    return s;
}
