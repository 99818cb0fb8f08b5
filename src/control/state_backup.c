/* state_backup.c: a consistent copy of the controller's state, taken while it runs (SQLite's
 * VACUUM INTO reads one snapshot), checked and put in place whole. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "control/state.h"
#include "control/state_internal.h"
#include "util/db.h"

/* fsync the file at path: 0, or ERR_IO. */
static int sb_sync(const char *path)
{
    int fd = open(path, O_RDONLY), rc;

    if (fd < 0)
        return ERR_IO;
    rc = fsync(fd) == 0 ? 0 : ERR_IO;
    close(fd);
    return rc;
}

/* The copy at path opened and checked: PRAGMA integrity_check says ok; its version and counts. */
static int sb_check(const char *path, struct state_backup_info *info, struct error *e)
{
    struct db *db = NULL;
    struct db_stmt *s = NULL;
    char *verdict = NULL;
    long long jobs = 0, nodes = 0;
    int rc = db_open(path, &db, e), version = 0;

    if (rc < 0)
        return rc;
    if ((rc = db_prepare(db, "PRAGMA integrity_check", &s)) == 0 && (rc = db_step(s)) == DB_ROW)
        rc = db_column_text_dup(s, 0, &verdict);
    db_finalize(s);
    if (rc >= 0 && (!verdict || strcmp(verdict, "ok") != 0))
        rc = err_set(e, ERR_CORRUPT, path, 0, 0, "the copy fails its integrity check: %s",
                     verdict ? verdict : "no answer");
    if (rc >= 0)
        rc = db_user_version(db, &version);
    if (rc >= 0)
        rc = st_int(db, &jobs, "SELECT count(*) FROM jobs", "");
    if (rc >= 0)
        rc = st_int(db, &nodes, "SELECT count(*) FROM nodes WHERE state <> 'terminated'", "");
    free(verdict);
    db_close(db);
    if (rc < 0)
        return rc;
    info->version = version;
    info->jobs = jobs;
    info->nodes = nodes;
    return 0;
}

int state_backup(struct state *st, const char *path, struct state_backup_info *info,
                 struct error *e)
{
    struct state_backup_info got = {0};
    struct db_stmt *s = NULL;
    struct stat sb;
    char tmp[4200];
    mode_t old;
    int rc;

    if (!st || !path || !path[0] || strlen(path) > 4096)
        return err_set(e, ERR_INVAL, path ? path : "", 0, 0, "no path to back up to");
    if (lstat(path, &sb) == 0)
        return err_set(e, ERR_CONFLICT, path, 0, 0, "exists: a backup does not overwrite a file");
    snprintf(tmp, sizeof(tmp), "%s.tmp-%ld", path, (long)getpid());
    unlink(tmp);
    old = umask(077); /* the copy is the owner's alone, as the state is */
    rc = st_prepare(st->db, &s, "VACUUM INTO ?1", "t", tmp);
    if (rc == 0 && (rc = db_step(s)) > 0)
        rc = 0;
    db_finalize(s);
    umask(old);
    if (rc < 0) {
        err_set(e, rc, tmp, 0, 0, "cannot copy the state: %s", db_errmsg(st->db));
        goto fail;
    }
    if ((rc = sb_check(tmp, &got, e)) < 0)
        goto fail;
    if (chmod(tmp, 0600) != 0 || stat(tmp, &sb) != 0 || (rc = sb_sync(tmp)) < 0) {
        rc = err_set(e, ERR_IO, tmp, 0, 0, "cannot finish the copy");
        goto fail;
    }
    got.bytes = (long long)sb.st_size;
    if (rename(tmp, path) != 0) {
        rc = err_set(e, ERR_IO, path, 0, 0, "cannot put the copy in place");
        goto fail;
    }
    if (info)
        *info = got;
    return 0;
fail:
    unlink(tmp);
    return rc;
}
