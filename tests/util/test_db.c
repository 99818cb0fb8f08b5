/* test_db.c: the SQLite wrapper: the durable settings read back, statements and binds, result
 * codes in castor's table, transactions, locks, and a writer SIGKILLed mid-transaction. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/db.h"
#include "util/db_fixture.h"
#include "util/error.h"

static struct db *open_db(const struct tmpdb *t)
{
    struct db *db = NULL;
    struct error e = {0};

    assert_int_equal(db_open(t->path, &db, &e), 0);
    assert_non_null(db);
    return db;
}

/* The settings are really in force: the pragmas read back wal, FULL (2) and foreign keys on,
 * and the file's own header says WAL (bytes 18 and 19, the read and write format versions, are
 * 2 for WAL and 1 for a rollback journal), as a second connection and any SQLite would see it. */
static void db_open__wal_full_foreign_keys(void **state)
{
    const struct tmpdb *t = *state;
    struct db *db = open_db(t), *db2;
    unsigned char header[100];
    char buf[32];
    FILE *f;

    assert_string_equal(one_text(db, "PRAGMA journal_mode", buf, sizeof(buf)), "wal");
    assert_int_equal(one_int(db, "PRAGMA synchronous"), 2);
    assert_int_equal(one_int(db, "PRAGMA foreign_keys"), 1);
    assert_int_equal(one_int(db, "PRAGMA busy_timeout"), DB_BUSY_TIMEOUT_MS);
    assert_int_equal(db_exec(db, "CREATE TABLE t (x INTEGER)"), 0);
    db2 = open_db(t);
    assert_string_equal(one_text(db2, "PRAGMA journal_mode", buf, sizeof(buf)), "wal");
    db_close(db2);
    db_close(db);
    f = fopen(t->path, "rb");
    assert_non_null(f);
    assert_int_equal(fread(header, 1, sizeof(header), f), sizeof(header));
    fclose(f);
    assert_memory_equal(header, "SQLite format 3", 16);
    assert_int_equal(header[18], 2);
    assert_int_equal(header[19], 2);
}

/* What cannot be opened as asked: no path, an in-memory database (WAL needs a file), a folder
 * that does not exist, and a file that is not a database; each says why, and *out stays put. */
static void db_open__refusals(void **state)
{
    const struct tmpdb *t = *state;
    int dummy;
    struct db *const sentinel = (struct db *)&dummy; /* *out must stay as it is */
    struct db *db = sentinel;
    struct error e = {0};
    char missing[160];
    FILE *f;

    assert_int_equal(db_open(NULL, &db, &e), ERR_INVAL);
    assert_int_equal(db_open("", &db, NULL), ERR_INVAL);
    assert_int_equal(db_open(":memory:", &db, &e), ERR_IO);
    assert_non_null(strstr(e.msg, "journal_mode"));
    snprintf(missing, sizeof(missing), "%s/no/such/folder.db", t->dir);
    assert_int_equal(db_open(missing, &db, &e), ERR_IO);
    assert_string_equal(e.file, missing);
    f = fopen(t->path, "wb");
    assert_non_null(f);
    for (int i = 0; i < 64; i++)
        fputs("this is not a database file, just text. ", f);
    fclose(f);
    assert_int_equal(chmod(t->path, 0600), 0);
    assert_int_equal(db_open(t->path, &db, &e), ERR_CORRUPT);
    assert_ptr_equal(db, sentinel);
}

/* The mode of the file at path, its permission bits only (-1 when it is not there). */
static int mode_of(const char *path)
{
    struct stat sb;

    return stat(path, &sb) == 0 ? (int)(sb.st_mode & 0777) : -1;
}

/* A database holds secrets: made under a lax umask it is mode 600, and so are the -wal and -shm
 * SQLite makes beside it. One that group or others may read or write (or whose -wal may be) is
 * refused, saying how to mend it, and left as it was: its mode, its bytes. */
static void db_open__the_owners_alone(void **state)
{
    const struct tmpdb *t = *state;
    struct db *db = NULL;
    struct error e = {0};
    char wal[128], shm[128], before[4096], after[4096];
    mode_t old = umask(022);
    FILE *f;
    size_t n;

    snprintf(wal, sizeof(wal), "%s-wal", t->path);
    snprintf(shm, sizeof(shm), "%s-shm", t->path);
    db = open_db(t);
    umask(old);
    assert_int_equal(db_exec(db, "CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1)"), 0);
    assert_int_equal(mode_of(t->path), 0600);
    assert_int_equal(mode_of(wal), 0600);
    assert_int_equal(mode_of(shm), 0600);
    db_close(db);
    db = NULL;

    assert_int_equal(chmod(t->path, 0644), 0);
    f = fopen(t->path, "rb");
    assert_non_null(f);
    n = fread(before, 1, sizeof(before), f);
    fclose(f);
    assert_int_equal(db_open(t->path, &db, &e), ERR_INVAL);
    assert_null(db);
    assert_string_equal(e.file, t->path);
    assert_non_null(strstr(e.msg, "mode 644"));
    assert_non_null(strstr(e.msg, "owner only"));
    assert_non_null(strstr(e.msg, "chmod 600"));
    assert_int_equal(db_open_readonly(t->path, &db, &e), ERR_INVAL);
    assert_null(db);
    assert_int_equal(mode_of(t->path), 0644);
    f = fopen(t->path, "rb");
    assert_non_null(f);
    assert_int_equal(fread(after, 1, sizeof(after), f), n);
    fclose(f);
    assert_memory_equal(before, after, n);

    /* the database mended but a -wal left readable by others */
    assert_int_equal(chmod(t->path, 0600), 0);
    f = fopen(wal, "wb");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(chmod(wal, 0640), 0);
    assert_int_equal(db_open(t->path, &db, &e), ERR_INVAL);
    assert_string_equal(e.file, wal);
    assert_int_equal(chmod(wal, 0600), 0);
    db = open_db(t);
    assert_int_equal(one_int(db, "SELECT x FROM t"), 1);
    db_close(db);
}

/* A read-only connection reads what is there and writes nothing: a write is ERR_IO; a file that
 * does not exist is not made. */
static void db_open_readonly__reads_only(void **state)
{
    const struct tmpdb *t = *state;
    struct db *db = open_db(t), *ro = NULL;
    struct error e = {0};

    assert_int_equal(db_exec(db, "CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (7)"), 0);
    db_close(db);
    assert_int_equal(db_open_readonly(t->path, &ro, &e), 0);
    assert_int_equal(one_int(ro, "SELECT x FROM t"), 7);
    assert_int_equal(db_exec(ro, "INSERT INTO t VALUES (8)"), ERR_IO);
    assert_int_equal(one_int(ro, "SELECT count(*) FROM t"), 1);
    db_close(ro);
    unlink(t->path);
    ro = NULL;
    assert_int_equal(db_open_readonly(t->path, &ro, &e), ERR_IO);
    assert_null(ro);
    assert_int_equal(mode_of(t->path), -1);
}

/* One constant statement per prepare: a second one, nothing at all, and SQL that does not compile
 * are refused; trailing semicolons and white space are fine. */
static void db_prepare__one_statement(void **state)
{
    struct db *db = open_db(*state);
    struct db_stmt *s = NULL;

    assert_int_equal(db_prepare(db, "SELECT 1; SELECT 2", &s), ERR_INVAL);
    assert_null(s);
    assert_int_equal(db_prepare(db, "  -- nothing\n", &s), ERR_INVAL);
    assert_int_equal(db_prepare(db, "SELEC 1", &s), ERR_INTERNAL);
    assert_int_equal(db_prepare(db, "SELECT * FROM no_such_table", &s), ERR_INTERNAL);
    assert_null(s);
    assert_int_equal(db_prepare(db, "SELECT 1 ;  \n", &s), 0);
    assert_int_equal(db_step(s), DB_ROW);
    assert_int_equal(db_column_int(s, 0), 1);
    assert_int_equal(db_step(s), 0);
    db_finalize(s);
    db_close(db);
}

/* Values go through binds and come back exactly: 64-bit extremes, a double, NULL, and text that
 * would be SQL if it were pasted into the statement (it is stored as text, and the table stays). */
static void db_bind__round_trip(void **state)
{
    static const char *const nasty = "x'); DROP TABLE t; --";
    struct db *db = open_db(*state);
    struct db_stmt *s = NULL;
    char *copy = (char *)"sentinel";

    assert_int_equal(db_exec(db, "CREATE TABLE t (i INTEGER, d REAL, s TEXT)"), 0);
    assert_int_equal(db_prepare(db, "INSERT INTO t (i, d, s) VALUES (?1, ?2, ?3)", &s), 0);
    assert_int_equal(db_bind_int(s, 1, INT64_MIN), 0);
    assert_int_equal(db_bind_double(s, 2, -0.1), 0);
    assert_int_equal(db_bind_text(s, 3, nasty), 0);
    assert_int_equal(db_step(s), 0);
    assert_int_equal(db_changes(db), 1);
    assert_int_equal(db_last_insert_id(db), 1);
    assert_int_equal(db_reset(s), 0);
    /* reset clears the binds: an unbound parameter is NULL */
    assert_int_equal(db_bind_int(s, 1, INT64_MAX), 0);
    assert_int_equal(db_bind_null(s, 2), 0);
    assert_int_equal(db_step(s), 0);
    /* no parameter 4; NaN is refused (SQLite would store NULL) */
    assert_int_equal(db_reset(s), 0);
    assert_int_equal(db_bind_int(s, 4, 1), ERR_INVAL);
    assert_int_equal(db_bind_double(s, 2, NAN), ERR_INVAL);
    db_finalize(s);

    assert_int_equal(db_prepare(db, "SELECT i, d, s FROM t ORDER BY rowid", &s), 0);
    assert_int_equal(db_step(s), DB_ROW);
    assert_true(db_column_int(s, 0) == INT64_MIN);
    assert_true(db_column_double(s, 1) == -0.1);
    assert_string_equal(db_column_text(s, 2), nasty);
    assert_int_equal(db_column_text_dup(s, 2, &copy), 0);
    assert_string_equal(copy, nasty);
    free(copy);
    assert_int_equal(db_step(s), DB_ROW);
    assert_true(db_column_int(s, 0) == INT64_MAX);
    assert_int_equal(db_column_is_null(s, 0), 0);
    assert_int_equal(db_column_is_null(s, 1), 1);
    assert_int_equal(db_column_is_null(s, 2), 1);
    assert_null(db_column_text(s, 2));
    assert_int_equal(db_column_text_dup(s, 2, &copy), 0);
    assert_null(copy);
    /* a column past the end reads as NULL */
    assert_int_equal(db_column_int(s, 7), 0);
    assert_int_equal(db_column_is_null(s, 7), 1);
    assert_int_equal(db_step(s), 0);
    db_finalize(s);
    assert_int_equal(one_int(db, "SELECT count(*) FROM sqlite_master WHERE name = 't'"), 1);
    db_close(db);
}

/* Insert (?1) into table sql and return the code (the statement is finalized). */
static int insert_int(struct db *db, const char *sql, long long v)
{
    struct db_stmt *s = NULL;
    int rc;

    assert_int_equal(db_prepare(db, sql, &s), 0);
    assert_int_equal(db_bind_int(s, 1, v), 0);
    rc = db_step(s);
    db_finalize(s);
    return rc;
}

/* Constraint violations are translated by kind: UNIQUE, PRIMARY KEY and FOREIGN KEY are
 * ERR_CONFLICT (the row clashes with another); CHECK and NOT NULL are ERR_INVAL (the row is bad
 * by itself). Each leaves the table as it was. */
static void db_step__constraint_codes(void **state)
{
    struct db *db = open_db(*state);

    assert_int_equal(db_exec(db, "CREATE TABLE p (id INTEGER PRIMARY KEY, u INTEGER UNIQUE);"
                                 "CREATE TABLE c (p INTEGER NOT NULL REFERENCES p (id),"
                                 " v INTEGER CHECK (v IS NULL OR v > 0))"),
                     0);
    assert_int_equal(insert_int(db, "INSERT INTO p (id, u) VALUES (1, ?1)", 10), 0);
    assert_int_equal(insert_int(db, "INSERT INTO p (id, u) VALUES (2, ?1)", 10), ERR_CONFLICT);
    assert_int_equal(insert_int(db, "INSERT INTO p (id, u) VALUES (?1, 11)", 1), ERR_CONFLICT);
    assert_int_equal(insert_int(db, "INSERT INTO c (p) VALUES (?1)", 99), ERR_CONFLICT);
    assert_int_equal(insert_int(db, "INSERT INTO c (p, v) VALUES (1, ?1)", -5), ERR_INVAL);
    assert_int_equal(insert_int(db, "INSERT INTO c (p, v) VALUES (NULL, ?1)", 5), ERR_INVAL);
    assert_int_equal(one_int(db, "SELECT count(*) FROM c"), 0);
    assert_int_equal(insert_int(db, "INSERT INTO c (p, v) VALUES (1, ?1)", 5), 0);
    /* the parent of a child row cannot go */
    assert_int_equal(insert_int(db, "DELETE FROM p WHERE id = ?1", 1), ERR_CONFLICT);
    assert_int_equal(one_int(db, "SELECT count(*) FROM p"), 1);
    assert_true(err_retryable(ERR_CONFLICT) == 0);
    db_close(db);
}

/* Transactions: a rollback forgets, a commit keeps; nesting, committing outside one and a
 * rollback outside one (a no-op, for cleanup paths) behave as documented. */
static void db_begin__commit_and_rollback(void **state)
{
    struct db *db = open_db(*state);

    assert_int_equal(db_exec(db, "CREATE TABLE t (x INTEGER)"), 0);
    assert_int_equal(db_in_transaction(db), 0);
    assert_int_equal(db_commit(db), ERR_INVAL);
    assert_int_equal(db_rollback(db), 0);
    assert_int_equal(db_begin(db), 0);
    assert_int_equal(db_in_transaction(db), 1);
    assert_int_equal(db_begin(db), ERR_INVAL);
    assert_int_equal(insert_int(db, "INSERT INTO t VALUES (?1)", 1), 0);
    assert_int_equal(db_rollback(db), 0);
    assert_int_equal(db_in_transaction(db), 0);
    assert_int_equal(one_int(db, "SELECT count(*) FROM t"), 0);
    assert_int_equal(db_begin(db), 0);
    assert_int_equal(insert_int(db, "INSERT INTO t VALUES (?1)", 2), 0);
    assert_int_equal(insert_int(db, "INSERT INTO t VALUES (?1)", 3), 0);
    assert_int_equal(db_commit(db), 0);
    assert_int_equal(db_in_transaction(db), 0);
    assert_int_equal(one_int(db, "SELECT sum(x) FROM t"), 5);
    db_close(db);
}

/* A commit that fails (a deferred foreign key still broken at COMMIT) is rolled back whole: the
 * code says why, no transaction stays open and neither row of it is there. */
static void db_commit__failure_rolls_back(void **state)
{
    struct db *db = open_db(*state);

    assert_int_equal(db_exec(db, "CREATE TABLE p (id INTEGER PRIMARY KEY);"
                                 "CREATE TABLE c (p INTEGER REFERENCES p (id)"
                                 " DEFERRABLE INITIALLY DEFERRED)"),
                     0);
    assert_int_equal(db_begin(db), 0);
    assert_int_equal(insert_int(db, "INSERT INTO p VALUES (?1)", 1), 0);
    assert_int_equal(insert_int(db, "INSERT INTO c VALUES (?1)", 7), 0);
    assert_int_equal(db_commit(db), ERR_CONFLICT);
    assert_int_equal(db_in_transaction(db), 0);
    assert_int_equal(one_int(db, "SELECT (SELECT count(*) FROM p) + (SELECT count(*) FROM c)"), 0);
    db_close(db);
}

/* A second connection meets the first one's write lock: BEGIN IMMEDIATE and a plain write fail
 * with the retryable ERR_AGAIN after the busy timeout, reads still work (WAL), and once the lock
 * is gone the same calls succeed. */
static void db_begin__locked_is_again(void **state)
{
    struct db *a = open_db(*state), *b = open_db(*state);

    assert_int_equal(db_exec(a, "CREATE TABLE t (x INTEGER)"), 0);
    assert_int_equal(db_busy_timeout(b, -1), ERR_INVAL);
    assert_int_equal(db_busy_timeout(b, 20), 0);
    assert_int_equal(db_begin(a), 0);
    assert_int_equal(insert_int(a, "INSERT INTO t VALUES (?1)", 1), 0);
    assert_int_equal(db_begin(b), ERR_AGAIN);
    assert_int_equal(db_in_transaction(b), 0);
    assert_int_equal(insert_int(b, "INSERT INTO t VALUES (?1)", 2), ERR_AGAIN);
    assert_true(err_retryable(ERR_AGAIN));
    assert_int_equal(one_int(b, "SELECT count(*) FROM t"), 0);
    assert_int_equal(db_commit(a), 0);
    assert_int_equal(db_begin(b), 0);
    assert_int_equal(insert_int(b, "INSERT INTO t VALUES (?1)", 2), 0);
    assert_int_equal(db_commit(b), 0);
    assert_int_equal(one_int(a, "SELECT sum(x) FROM t"), 3);
    db_close(b);
    db_close(a);
}

/* The schema version: 0 for a new file, then what was set; negative versions are refused. */
static void db_user_version__set_and_read(void **state)
{
    struct db *db = open_db(*state);
    int v = -1;

    assert_int_equal(db_user_version(db, &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(db_set_user_version(db, 42), 0);
    assert_int_equal(db_set_user_version(db, -1), ERR_INVAL);
    assert_int_equal(db_user_version(db, &v), 0);
    assert_int_equal(v, 42);
    db_close(db);
}

/* ---- a writer SIGKILLed mid-transaction ---- */

#define CRASH_TX 300  /* transactions the writer would run to the end */
#define CRASH_ROWS 6  /* rows per transaction */
#define CRASH_PAD 300 /* payload bytes: a transaction spans pages */

/* The payload of row r of transaction tx: its numbers, then a pattern to CRASH_PAD bytes. */
static void crash_payload(long tx, int r, char *buf)
{
    int n = snprintf(buf, CRASH_PAD + 1, "%ld/%d:", tx, r);

    for (int i = n; i < CRASH_PAD; i++)
        buf[i] = (char)('a' + (tx * 7 + r * 3 + i) % 26);
    buf[CRASH_PAD] = '\0';
}

struct crash_writer {
    const char *path;
    long kill_tx; /* the writer kills itself inside this transaction (-1: never) */
    int kill_row; /* ... after inserting this many of its rows */
};

static void crash_writer_run(void *ctx, int fd)
{
    const struct crash_writer *w = ctx;
    char payload[CRASH_PAD + 1];
    struct db_stmt *s = NULL;
    struct db *db = NULL;

    if (db_open(w->path, &db, NULL) != 0)
        _exit(2);
    for (long tx = 0; tx < CRASH_TX; tx++) {
        if (db_begin(db) != 0)
            _exit(2);
        for (int r = 0; r < CRASH_ROWS; r++) {
            if (tx == w->kill_tx && r == w->kill_row)
                raise(SIGKILL);
            crash_payload(tx, r, payload);
            if (db_prepare(db, "INSERT INTO t (tx, r, payload) VALUES (?1, ?2, ?3)", &s) != 0 ||
                db_bind_int(s, 1, tx) != 0 || db_bind_int(s, 2, r) != 0 ||
                db_bind_text(s, 3, payload) != 0 || db_step(s) != 0)
                _exit(2);
            db_finalize(s);
        }
        if (db_commit(db) != 0)
            _exit(2);
        crash_report(fd, tx);
    }
    db_close(db);
}

/* After the crash: the file is intact, every transaction reported committed is there whole with
 * its payloads, and the transactions there are exactly 0 .. m with m the last reported or the
 * one after it (committed, killed before it could say so): nothing of a later one is visible.
 * Returns m. */
static long crash_check(const char *path, long reported)
{
    char want[CRASH_PAD + 1], buf[32];
    struct db_stmt *s = NULL;
    struct db *db = NULL;
    long tx, m, rows = 0;

    assert_int_equal(db_open(path, &db, NULL), 0);
    assert_string_equal(one_text(db, "PRAGMA integrity_check", buf, sizeof(buf)), "ok");
    m = (long)one_int(db, "SELECT coalesce(max(tx), -1) FROM t");
    assert_true(m >= reported);
    assert_true(m <= reported + 1);
    assert_int_equal(db_prepare(db, "SELECT tx, r, payload FROM t ORDER BY tx, r", &s), 0);
    for (tx = 0; tx <= m; tx++) {
        for (int r = 0; r < CRASH_ROWS; r++) {
            assert_int_equal(db_step(s), DB_ROW);
            assert_int_equal(db_column_int(s, 0), tx);
            assert_int_equal(db_column_int(s, 1), r);
            crash_payload(tx, r, want);
            assert_string_equal(db_column_text(s, 2), want);
            rows++;
        }
    }
    assert_int_equal(db_step(s), 0);
    db_finalize(s);
    /* the recovered database takes new writes */
    assert_int_equal(db_begin(db), 0);
    assert_int_equal(db_exec(db, "DELETE FROM t"), 0);
    assert_int_equal(db_commit(db), 0);
    db_close(db);
    assert_int_equal(rows, (m + 1) * CRASH_ROWS);
    return m;
}

/*
 * Six seeded runs of a writer that commits transactions of CRASH_ROWS rows and is SIGKILLed:
 * in the even runs it kills itself between two inserts of a seeded transaction (certainly
 * mid-transaction), in the odd ones the parent kills it after a seeded number of commits and a
 * seeded delay (anywhere: inside an insert, the commit or its fsync). The database opens intact
 * each time with every reported transaction whole and no part of an uncommitted one.
 */
static void db_commit__survives_sigkill(void **state)
{
    const struct tmpdb *t = *state;
    uint64_t seed = 20240611;
    struct crash_result res = {-1, 0};
    struct db *db;

    for (int run = 0; run < 6; run++) {
        struct crash_writer w = {t->path, -1, 0};
        long kill_after = -1, delay_us = 0, m;

        db = open_db(t);
        assert_int_equal(db_exec(db, "CREATE TABLE IF NOT EXISTS t (tx INTEGER NOT NULL,"
                                     " r INTEGER NOT NULL, payload TEXT NOT NULL,"
                                     " PRIMARY KEY (tx, r))"),
                         0);
        db_close(db); /* no connection crosses the fork */
        if (run % 2 == 0) {
            w.kill_tx = 1 + (long)(crash_rand(&seed) % (CRASH_TX - 1));
            w.kill_row = 1 + (int)(crash_rand(&seed) % (CRASH_ROWS - 1));
        } else {
            kill_after = 1 + (long)(crash_rand(&seed) % (CRASH_TX / 2));
            delay_us = (long)(crash_rand(&seed) % 3000);
        }
        assert_int_equal(crash_run(crash_writer_run, &w, kill_after, delay_us, &res), 0);
        m = crash_check(t->path, res.reported);
        if (run % 2 == 0) {
            /* killed by itself inside kill_tx: exactly the ones before it are there */
            assert_int_equal(res.killed, 1);
            assert_int_equal(res.reported, w.kill_tx - 1);
            assert_int_equal(m, w.kill_tx - 1);
        } else {
            assert_true(res.reported >= kill_after - 1);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(db_open__wal_full_foreign_keys, tmpdb_setup,
                                        tmpdb_teardown),
        cmocka_unit_test_setup_teardown(db_open__refusals, tmpdb_setup, tmpdb_teardown),
        cmocka_unit_test_setup_teardown(db_open__the_owners_alone, tmpdb_setup, tmpdb_teardown),
        cmocka_unit_test_setup_teardown(db_open_readonly__reads_only, tmpdb_setup, tmpdb_teardown),
        cmocka_unit_test_setup_teardown(db_prepare__one_statement, tmpdb_setup, tmpdb_teardown),
        cmocka_unit_test_setup_teardown(db_bind__round_trip, tmpdb_setup, tmpdb_teardown),
        cmocka_unit_test_setup_teardown(db_step__constraint_codes, tmpdb_setup, tmpdb_teardown),
        cmocka_unit_test_setup_teardown(db_begin__commit_and_rollback, tmpdb_setup, tmpdb_teardown),
        cmocka_unit_test_setup_teardown(db_commit__failure_rolls_back, tmpdb_setup, tmpdb_teardown),
        cmocka_unit_test_setup_teardown(db_begin__locked_is_again, tmpdb_setup, tmpdb_teardown),
        cmocka_unit_test_setup_teardown(db_user_version__set_and_read, tmpdb_setup, tmpdb_teardown),
        cmocka_unit_test_setup_teardown(db_commit__survives_sigkill, tmpdb_setup, tmpdb_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
