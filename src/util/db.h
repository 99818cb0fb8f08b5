/* db.h: castor's SQLite connections (wraps SQLite; sqlite3.h stays in db.c): open with durable
 * settings, statements with typed binds and column reads, transactions, and SQLite's result codes
 * translated into castor's error table. */
#ifndef CASTOR_UTIL_DB_H
#define CASTOR_UTIL_DB_H

#include "util/error.h"

/*
 * SQL text handed to this module must be a constant written in castor's source: values always
 * travel through binds, never through the text. The translation of result codes:
 *   BUSY, LOCKED                         -> ERR_AGAIN (another connection holds the lock)
 *   CONSTRAINT: UNIQUE, PRIMARYKEY,
 *               FOREIGNKEY               -> ERR_CONFLICT
 *   CONSTRAINT: CHECK, NOTNULL, other    -> ERR_INVAL
 *   IOERR, FULL, CANTOPEN, READONLY,
 *   PROTOCOL, PERM                       -> ERR_IO
 *   CORRUPT, NOTADB                      -> ERR_CORRUPT
 *   NOMEM                                -> ERR_NOMEM
 *   TOOBIG                               -> ERR_RANGE
 *   RANGE, MISMATCH                      -> ERR_INVAL (a bind index or a value of the wrong kind)
 *   anything else (ERROR, MISUSE, ...)   -> ERR_INTERNAL (the SQL or its use is wrong)
 */

struct db;      /* a connection; opaque; used by one thread at a time */
struct db_stmt; /* a prepared statement of one connection; opaque */

/* How long a statement waits for another connection's lock before failing with ERR_AGAIN. */
#define DB_BUSY_TIMEOUT_MS 5000

/* db_step's result when a row is ready to read (0 means the statement is done). */
#define DB_ROW 1

/*
 * Open (creating if missing) the database file at path with journal_mode=WAL, synchronous=FULL,
 * foreign_keys=ON, a busy timeout of DB_BUSY_TIMEOUT_MS, extended result codes and SQLite's
 * defensive mode; each setting is read back. The file is its owner's alone, since castor's
 * databases hold secrets: a missing one is created mode 600 before SQLite opens it (its -wal and
 * -shm get the same mode), and one that exists, or whose -wal or -shm exists, with any
 * permission for group or others is refused and left as it is. Errors: ERR_INVAL (path NULL or
 * empty; a file group or others may read or write, e saying to chmod 600 it), the translated
 * code (ERR_IO when the file cannot be created or opened, ERR_CORRUPT when it is not a
 * database), ERR_IO when a setting does not hold (WAL needs a file, so ":memory:" is refused),
 * ERR_NOMEM; e (may be NULL) names the path and SQLite's message. On success *out owns a new
 * connection (close with db_close); on error it is untouched.
 */
int db_open(const char *path, struct db **out, struct error *e);

/*
 * Open the existing database file at path for reading only (SQLite's read-only open): a write on
 * the connection fails (ERR_IO), VACUUM INTO another file works, and the journal mode is left as
 * it is.
 * The file must be its owner's alone, as for db_open. Errors: as db_open's (ERR_IO for a file
 * that does not exist); a file that is not a database is found by the first statement
 * (ERR_CORRUPT). *out as for db_open.
 */
int db_open_readonly(const char *path, struct db **out, struct error *e);

/* Close the connection, rolling back an open transaction. Statements must be finalized first.
 * NULL is ignored. */
void db_close(struct db *db);

/* Set the busy timeout in milliseconds (0: fail at once with ERR_AGAIN). ERR_INVAL if ms < 0. */
int db_busy_timeout(struct db *db, int ms);

/* Run sql, one or more constant statements without parameters and without result rows that
 * matter (schema, pragmas). Errors: the translated code; db_errmsg says more. */
int db_exec(struct db *db, const char *sql);

/*
 * Prepare exactly one constant statement (a second statement after it is ERR_INVAL). Errors: the
 * translated code (ERR_INTERNAL for SQL that does not compile), ERR_NOMEM. On success *out owns
 * the statement (finalize with db_finalize, before db_close); on error it is untouched.
 */
int db_prepare(struct db *db, const char *sql, struct db_stmt **out);

/* Free a statement; NULL is ignored. */
void db_finalize(struct db_stmt *s);

/*
 * Bind parameter idx (1-based, as ?1, ?2 in the SQL). Text is copied (NULL binds SQL NULL).
 * Errors: ERR_INVAL (no such parameter, or a NaN for db_bind_double: SQLite would store NULL),
 * ERR_RANGE (text too long), ERR_NOMEM.
 */
int db_bind_int(struct db_stmt *s, int idx, long long v);
int db_bind_double(struct db_stmt *s, int idx, double v);
int db_bind_text(struct db_stmt *s, int idx, const char *v);
int db_bind_null(struct db_stmt *s, int idx);

/* Run the statement one step: DB_ROW when a row is ready to read, 0 when it is done, else the
 * translated code (ERR_CONFLICT for a UNIQUE or FOREIGN KEY violation, ERR_AGAIN, ...). */
int db_step(struct db_stmt *s);

/* Make the statement ready to run again and clear its binds. Returns 0 (an earlier step's error
 * was already returned by db_step). */
int db_reset(struct db_stmt *s);

/*
 * Column col (0-based) of the current row. SQL NULL, and a column that does not exist, read as
 * 0, 0.0 and NULL. Text is borrowed: valid until the next db_step, db_reset or db_finalize.
 */
long long db_column_int(struct db_stmt *s, int col);
double db_column_double(struct db_stmt *s, int col);
const char *db_column_text(struct db_stmt *s, int col);
int db_column_is_null(struct db_stmt *s, int col); /* 1 when SQL NULL, else 0 */

/* A copy of text column col: *out owns it (free), or NULL for SQL NULL. ERR_NOMEM, *out untouched,
 * when the copy cannot be made. */
int db_column_text_dup(struct db_stmt *s, int col, char **out);

/* Begin a write transaction at once (BEGIN IMMEDIATE: the write lock is taken now, so a later
 * statement cannot fail for another writer). ERR_INVAL inside a transaction; ERR_AGAIN when
 * another connection holds the lock past the busy timeout. */
int db_begin(struct db *db);

/* Begin a read transaction (BEGIN DEFERRED): the reads until db_commit or db_rollback see one
 * snapshot of the database (WAL: from the first read on), whatever other connections write
 * meanwhile. ERR_INVAL inside a transaction. */
int db_begin_read(struct db *db);

/* Commit the open transaction. On failure the transaction is rolled back (nothing of it is
 * written) and the translated code returned; ERR_INVAL when no transaction is open. */
int db_commit(struct db *db);

/* Roll back the open transaction, if any (0 when none is open, so it fits a cleanup path).
 * Errors: the translated code. */
int db_rollback(struct db *db);

/* 1 inside a transaction, else 0. */
int db_in_transaction(struct db *db);

/* Rows changed by the last INSERT, UPDATE or DELETE on this connection. */
long long db_changes(struct db *db);

/* The rowid of the last successful INSERT on this connection (0 if none). */
long long db_last_insert_id(struct db *db);

/* PRAGMA user_version: the schema version a program keeps in the file (0 for a new one).
 * db_user_version writes *out only on success. Errors: the translated code. */
int db_user_version(struct db *db, int *out);
int db_set_user_version(struct db *db, int version); /* ERR_INVAL if version < 0 */

/* SQLite's message for the connection's last error; never NULL; borrowed, valid until the next
 * call on db. */
const char *db_errmsg(struct db *db);

#endif
