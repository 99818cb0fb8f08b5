/* db.c: the SQLite wrapper: durable connections, statements, transactions, error translation. */
#include "util/db.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

struct db {
    sqlite3 *h;
};

struct db_stmt {
    sqlite3_stmt *h;
    struct db *db;
};

/* SQLite's result code (primary or extended) as castor's. */
static int db_code(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_OK:
    case SQLITE_ROW:
    case SQLITE_DONE:
        return 0;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return ERR_AGAIN;
    case SQLITE_CONSTRAINT:
        switch (rc) {
        case SQLITE_CONSTRAINT_UNIQUE:
        case SQLITE_CONSTRAINT_PRIMARYKEY:
        case SQLITE_CONSTRAINT_FOREIGNKEY:
            return ERR_CONFLICT;
        default:
            return ERR_INVAL;
        }
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PROTOCOL:
    case SQLITE_PERM:
        return ERR_IO;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
        return ERR_CORRUPT;
    case SQLITE_NOMEM:
        return ERR_NOMEM;
    case SQLITE_TOOBIG:
        return ERR_RANGE;
    case SQLITE_RANGE:
    case SQLITE_MISMATCH:
        return ERR_INVAL;
    default:
        return ERR_INTERNAL;
    }
}

/* Run one constant pragma that answers a row and copy its first column's text into buf (""
 * when it answers none). */
static int db_pragma_text(struct db *db, const char *sql, char *buf, size_t size)
{
    struct db_stmt *s = NULL;
    const char *v;
    int rc;

    rc = db_prepare(db, sql, &s);
    if (rc < 0)
        goto out;
    buf[0] = '\0';
    rc = db_step(s);
    if (rc == DB_ROW) {
        v = db_column_text(s, 0);
        snprintf(buf, size, "%s", v ? v : "");
        rc = 0;
    }
out:
    db_finalize(s);
    return rc;
}

/* Apply one setting and read it back: ERR_IO (with e) when the answer is not want. */
static int db_setting(struct db *db, const char *set, const char *get, const char *want,
                      const char *path, struct error *e)
{
    char got[32];
    int rc;

    rc = db_pragma_text(db, set, got, sizeof(got));
    if (rc == 0)
        rc = db_pragma_text(db, get, got, sizeof(got));
    if (rc < 0)
        return err_set(e, rc, path, 0, 0, "%s: %s", get, db_errmsg(db));
    if (strcmp(got, want) != 0)
        return err_set(e, ERR_IO, path, 0, 0, "%s is '%s', not '%s'", get, got, want);
    return 0;
}

/* ERR_INVAL (with e) when the file at path exists and its group or others may read or write it;
 * 0 when it is its owner's alone or missing. */
static int db_owner_only(const char *path, struct error *e)
{
    struct stat sb;

    if (stat(path, &sb) != 0 || !(sb.st_mode & 066))
        return 0;
    return err_set(e, ERR_INVAL, path, 0, 0,
                   "mode %03o: a database holds secrets and must be readable and writable by "
                   "its owner only (chmod 600 %s)",
                   (unsigned)(sb.st_mode & 0777), path);
}

/* The database at path made its owner's before SQLite opens it: created mode 600 when missing
 * and create is set (SQLite gives the -wal and -shm it makes the database's mode), and refused,
 * unchanged, when it, its -wal or its -shm may be read or written by group or others. */
static int db_private(const char *path, int create, struct error *e)
{
    static const char *const suffixes[] = {"", "-wal", "-shm"};
    char file[4200];
    int fd, rc;

    if (strcmp(path, ":memory:") == 0)
        return 0;
    if (strlen(path) + 5 > sizeof(file))
        return err_set(e, ERR_INVAL, path, 0, 0, "the database's path is too long");
    if (create) {
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0 && errno != EEXIST)
            return err_set(e, ERR_IO, path, 0, 0, "cannot create: %s", strerror(errno));
        if (fd >= 0) { /* exactly 600, whatever the umask took away */
            rc = fchmod(fd, 0600);
            close(fd);
            if (rc != 0)
                return err_set(e, ERR_IO, path, 0, 0, "cannot make it private: %s",
                               strerror(errno));
        }
    }
    for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
        snprintf(file, sizeof(file), "%s%s", path, suffixes[i]);
        if ((rc = db_owner_only(file, e)) < 0)
            return rc;
    }
    return 0;
}

/* A new connection to the file at path: made private (db_private), opened with flags, extended
 * result codes, defensive mode and the busy timeout. */
static int db_connect(const char *path, int flags, struct db **out, struct error *e)
{
    struct db *db = NULL;
    int rc, src;

    if (!path || !path[0])
        return err_set(e, ERR_INVAL, "", 0, 0, "no database path");
    rc = db_private(path, (flags & SQLITE_OPEN_CREATE) != 0, e);
    if (rc < 0)
        return rc;
    db = calloc(1, sizeof(*db));
    if (!db)
        return err_set(e, ERR_NOMEM, path, 0, 0, NULL);
    src = sqlite3_open_v2(path, &db->h, flags | SQLITE_OPEN_NOMUTEX, NULL);
    if (src != SQLITE_OK) {
        rc = err_set(e, db->h ? db_code(sqlite3_extended_errcode(db->h)) : ERR_NOMEM, path, 0, 0,
                     "cannot open: %s", db->h ? sqlite3_errmsg(db->h) : sqlite3_errstr(src));
        goto out;
    }
    sqlite3_extended_result_codes(db->h, 1);
    /* defensive: no writes to the schema or the file's pages by PRAGMA; trusted_schema stays on,
     * since castor's own schema checks JSON with json_valid, which 3.40 does not mark innocuous */
    if (sqlite3_db_config(db->h, SQLITE_DBCONFIG_DEFENSIVE, 1, (int *)NULL) != SQLITE_OK) {
        rc = err_set(e, ERR_INTERNAL, path, 0, 0, "cannot configure: %s", sqlite3_errmsg(db->h));
        goto out;
    }
    rc = db_busy_timeout(db, DB_BUSY_TIMEOUT_MS);
    if (rc < 0)
        goto out;
    *out = db;
    db = NULL;
out:
    db_close(db);
    return rc;
}

int db_open(const char *path, struct db **out, struct error *e)
{
    struct db *db = NULL;
    int rc;

    rc = db_connect(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, &db, e);
    if (rc < 0)
        return rc;
    /* journal_mode reads the file's header: the first statement to fail on a file that is not a
     * database */
    rc = db_setting(db, "PRAGMA journal_mode = WAL", "PRAGMA journal_mode", "wal", path, e);
    if (rc < 0)
        goto out;
    rc = db_setting(db, "PRAGMA synchronous = FULL", "PRAGMA synchronous", "2", path, e);
    if (rc < 0)
        goto out;
    rc = db_setting(db, "PRAGMA foreign_keys = ON", "PRAGMA foreign_keys", "1", path, e);
    if (rc < 0)
        goto out;
    *out = db;
    db = NULL;
out:
    db_close(db);
    return rc;
}

int db_open_readonly(const char *path, struct db **out, struct error *e)
{
    /* (not query_only as well: that refuses VACUUM INTO, which writes another file) */
    return db_connect(path, SQLITE_OPEN_READONLY, out, e);
}

void db_close(struct db *db)
{
    if (!db)
        return;
    /* sqlite3_close_v2 rolls back an open transaction; every statement is finalized by contract */
    sqlite3_close_v2(db->h);
    free(db);
}

int db_busy_timeout(struct db *db, int ms)
{
    if (ms < 0)
        return ERR_INVAL;
    return db_code(sqlite3_busy_timeout(db->h, ms));
}

int db_exec(struct db *db, const char *sql)
{
    return db_code(sqlite3_exec(db->h, sql, NULL, NULL, NULL));
}

int db_prepare(struct db *db, const char *sql, struct db_stmt **out)
{
    struct db_stmt *s = NULL;
    const char *tail = NULL;
    int rc;

    s = calloc(1, sizeof(*s));
    if (!s)
        return ERR_NOMEM;
    s->db = db;
    rc = db_code(sqlite3_prepare_v2(db->h, sql, -1, &s->h, &tail));
    if (rc < 0)
        goto out;
    if (!s->h) { /* only white space or comments */
        rc = ERR_INVAL;
        goto out;
    }
    /* one statement only: what follows may be white space and semicolons, nothing else */
    while (tail &&
           (*tail == ' ' || *tail == '\t' || *tail == '\n' || *tail == '\r' || *tail == ';'))
        tail++;
    if (tail && *tail) {
        rc = ERR_INVAL;
        goto out;
    }
    *out = s;
    s = NULL;
out:
    db_finalize(s);
    return rc;
}

void db_finalize(struct db_stmt *s)
{
    if (!s)
        return;
    sqlite3_finalize(s->h);
    free(s);
}

int db_bind_int(struct db_stmt *s, int idx, long long v)
{
    return db_code(sqlite3_bind_int64(s->h, idx, (sqlite3_int64)v));
}

int db_bind_double(struct db_stmt *s, int idx, double v)
{
    if (isnan(v))
        return ERR_INVAL;
    return db_code(sqlite3_bind_double(s->h, idx, v));
}

int db_bind_text(struct db_stmt *s, int idx, const char *v)
{
    if (!v)
        return db_bind_null(s, idx);
    return db_code(sqlite3_bind_text(s->h, idx, v, -1, SQLITE_TRANSIENT));
}

int db_bind_null(struct db_stmt *s, int idx)
{
    return db_code(sqlite3_bind_null(s->h, idx));
}

int db_step(struct db_stmt *s)
{
    int src = sqlite3_step(s->h);

    if (src == SQLITE_ROW)
        return DB_ROW;
    return db_code(src);
}

int db_reset(struct db_stmt *s)
{
    sqlite3_reset(s->h);
    sqlite3_clear_bindings(s->h);
    return 0;
}

long long db_column_int(struct db_stmt *s, int col)
{
    return (long long)sqlite3_column_int64(s->h, col);
}

double db_column_double(struct db_stmt *s, int col)
{
    return sqlite3_column_double(s->h, col);
}

const char *db_column_text(struct db_stmt *s, int col)
{
    return (const char *)sqlite3_column_text(s->h, col);
}

int db_column_is_null(struct db_stmt *s, int col)
{
    return sqlite3_column_type(s->h, col) == SQLITE_NULL;
}

int db_column_text_dup(struct db_stmt *s, int col, char **out)
{
    const char *v = db_column_text(s, col);
    char *copy;

    if (!v) {
        if (!db_column_is_null(s, col))
            return ERR_NOMEM; /* SQLite could not make the text */
        *out = NULL;
        return 0;
    }
    copy = strdup(v);
    if (!copy)
        return ERR_NOMEM;
    *out = copy;
    return 0;
}

int db_begin(struct db *db)
{
    if (db_in_transaction(db))
        return ERR_INVAL;
    return db_exec(db, "BEGIN IMMEDIATE");
}

int db_begin_read(struct db *db)
{
    if (db_in_transaction(db))
        return ERR_INVAL;
    return db_exec(db, "BEGIN DEFERRED");
}

int db_commit(struct db *db)
{
    int rc;

    if (!db_in_transaction(db))
        return ERR_INVAL;
    rc = db_exec(db, "COMMIT");
    if (rc < 0)
        db_rollback(db);
    return rc;
}

int db_rollback(struct db *db)
{
    if (!db_in_transaction(db))
        return 0;
    return db_exec(db, "ROLLBACK");
}

int db_in_transaction(struct db *db)
{
    return sqlite3_get_autocommit(db->h) ? 0 : 1;
}

long long db_changes(struct db *db)
{
    return (long long)sqlite3_changes(db->h);
}

long long db_last_insert_id(struct db *db)
{
    return (long long)sqlite3_last_insert_rowid(db->h);
}

int db_user_version(struct db *db, int *out)
{
    struct db_stmt *s = NULL;
    long long v;
    int rc;

    rc = db_prepare(db, "PRAGMA user_version", &s);
    if (rc < 0)
        goto out;
    rc = db_step(s);
    if (rc != DB_ROW) {
        rc = rc < 0 ? rc : ERR_INTERNAL;
        goto out;
    }
    v = db_column_int(s, 0);
    *out = (int)v;
    rc = 0;
out:
    db_finalize(s);
    return rc;
}

int db_set_user_version(struct db *db, int version)
{
    char sql[64];

    if (version < 0)
        return ERR_INVAL;
    /* a pragma takes no parameters: the text carries a number formatted here, nothing else */
    snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", version);
    return db_exec(db, sql);
}

const char *db_errmsg(struct db *db)
{
    return sqlite3_errmsg(db->h);
}
