/* db_fixture.h: what the database tests share: a temporary folder for a database file (a cmocka
 * setup and teardown), one-row queries, and a harness that runs a writer in a child process and
 * SIGKILLs it. Include after cmocka.h. */
#ifndef CASTOR_TESTS_DB_FIXTURE_H
#define CASTOR_TESTS_DB_FIXTURE_H

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/db.h"

/* A folder made by mkdtemp and the database path inside it. */
struct tmpdb {
    char dir[64];
    char path[96];
};

/* cmocka setup: a new folder; *state points to its struct tmpdb. */
static inline int tmpdb_setup(void **state)
{
    struct tmpdb *t = calloc(1, sizeof(*t));

    if (!t)
        return -1;
    snprintf(t->dir, sizeof(t->dir), "/tmp/castor-test-db-XXXXXX");
    if (!mkdtemp(t->dir)) {
        free(t);
        return -1;
    }
    snprintf(t->path, sizeof(t->path), "%s/state.db", t->dir);
    *state = t;
    return 0;
}

/* cmocka teardown: remove the database, its WAL and shared-memory files, and the folder (which
 * must then be empty: a test that leaves other files fails here). */
static inline int tmpdb_teardown(void **state)
{
    static const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};
    struct tmpdb *t = *state;
    char file[128];
    int rc = 0;

    for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
        snprintf(file, sizeof(file), "%s%s", t->path, suffixes[i]);
        if (unlink(file) != 0 && errno != ENOENT)
            rc = -1;
    }
    if (rmdir(t->dir) != 0)
        rc = -1;
    free(t);
    return rc;
}

/* Run a constant statement that answers one row and return its first column as text in buf. */
static inline const char *one_text(struct db *db, const char *sql, char *buf, size_t size)
{
    struct db_stmt *s = NULL;

    assert_int_equal(db_prepare(db, sql, &s), 0);
    assert_int_equal(db_step(s), DB_ROW);
    snprintf(buf, size, "%s", db_column_text(s, 0) ? db_column_text(s, 0) : "(null)");
    db_finalize(s);
    return buf;
}

/* As one_text, the first column as an integer. */
static inline long long one_int(struct db *db, const char *sql)
{
    struct db_stmt *s = NULL;
    long long v;

    assert_int_equal(db_prepare(db, sql, &s), 0);
    assert_int_equal(db_step(s), DB_ROW);
    v = db_column_int(s, 0);
    db_finalize(s);
    return v;
}

/* As one_text, the first column as a number. */
static inline double one_double(struct db *db, const char *sql)
{
    struct db_stmt *s = NULL;
    double v;

    assert_int_equal(db_prepare(db, sql, &s), 0);
    assert_int_equal(db_step(s), DB_ROW);
    v = db_column_double(s, 0);
    db_finalize(s);
    return v;
}

/* In a castor state's database: the dollars its costs record for the node of instance id, in
 * millionths. */
static inline long long node_cost_micros(struct db *db, const char *id)
{
    char sql[200];

    snprintf(sql, sizeof(sql),
             "SELECT CAST(round(total(c.dollars) * 1000000) AS INTEGER) FROM costs c"
             " JOIN nodes n ON n.id = c.node_id WHERE n.instance_id = '%s'",
             id);
    return one_int(db, sql);
}

/* splitmix64: the tests' seeded randomness. */
static inline uint64_t crash_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* What a child writer does: write, and after each committed transaction k report it with
 * crash_report(fd, k). It must not use a connection opened before the fork. */
typedef void (*crash_child_fn)(void *ctx, int report_fd);

static inline void crash_report(int fd, long k)
{
    if (write(fd, &k, sizeof(k)) != (ssize_t)sizeof(k))
        _exit(3);
}

/* The outcome of one crash run. */
struct crash_result {
    long reported; /* the last transaction the child reported committed; -1 for none */
    int killed;    /* 1 when the child died of SIGKILL, 0 when it ran to its end */
};

/*
 * Fork a child that runs fn(ctx, fd) and exits; once it has reported kill_after transactions
 * (never when kill_after < 0), wait delay_us microseconds and SIGKILL it, wherever it is (it may
 * also kill itself). Returns 0 and fills *out, or -1 when the child could not be run, failed
 * otherwise, or reported out of order.
 * The child runs C (SQLite, malloc) without exec, which is safe only in a process with one thread
 * when it forks: a lock another thread held then (the allocator's under ASan) stays held in the
 * child for ever. Call it from tests that start no thread (test_db, test_state), never with an
 * API server or a libcastor handle running.
 */
static inline int crash_run(crash_child_fn fn, void *ctx, long kill_after, long delay_us,
                            struct crash_result *out)
{
    struct timespec delay = {delay_us / 1000000, (delay_us % 1000000) * 1000};
    long k, seen = 0, last = -1;
    int fds[2], status, bad = 0;
    pid_t pid;
    ssize_t got;

    if (pipe(fds) != 0)
        return -1;
    pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(fds[0]);
        fn(ctx, fds[1]);
        _exit(0);
    }
    close(fds[1]);
    while ((got = read(fds[0], &k, sizeof(k))) == (ssize_t)sizeof(k)) {
        if (k != last + 1) { /* reports come in order, one per transaction */
            bad = 1;
            kill(pid, SIGKILL);
            break;
        }
        last = k;
        if (++seen == kill_after) {
            nanosleep(&delay, NULL);
            kill(pid, SIGKILL);
        }
    }
    close(fds[0]);
    if (waitpid(pid, &status, 0) != pid)
        return -1;
    if (bad || (got > 0 && got != (ssize_t)sizeof(k)))
        return -1;
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        out->killed = 1;
    else if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        out->killed = 0;
    else
        return -1;
    out->reported = last;
    return 0;
}

#endif
