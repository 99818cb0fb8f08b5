/* state.c: the controller's durable state: the schema and its migrations, and one transaction per
 * operation over jobs, nodes, allocations, models, decisions, costs and launch intents. */
#include "control/state.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "util/db.h"

struct state {
    struct db *db;
};

/* PRAGMA application_id of a castor state database: "CSTR" in ASCII. */
#define ST_APPLICATION_ID 0x43535452

/*
 * The migrations, in order: st_migrations[v - 1] takes a database from version v - 1 to v. Each
 * runs in its own transaction together with the new user_version. Never edit a released one;
 * append a new one and raise STATE_SCHEMA_VERSION.
 */
static const char *const st_migrations[STATE_SCHEMA_VERSION] = {
    /* v1: the tables */
    "PRAGMA application_id = 1129534546;" /* ST_APPLICATION_ID */
    "CREATE TABLE jobs ("
    " id INTEGER PRIMARY KEY,"
    " name TEXT NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 128),"
    " spec TEXT NOT NULL CHECK (json_valid(spec)),"
    " state TEXT NOT NULL"
    "  CHECK (state IN ('pending', 'running', 'finished', 'cancelled', 'failed')),"
    " submitted_at REAL NOT NULL,"
    " progress REAL NOT NULL DEFAULT 0 CHECK (progress >= 0),"
    " checkpoint_progress REAL NOT NULL DEFAULT 0 CHECK (checkpoint_progress >= 0),"
    " checkpoint_at REAL,"
    " restarts INTEGER NOT NULL DEFAULT 0 CHECK (restarts >= 0),"
    " finished_at REAL"
    ") STRICT;"
    "CREATE TABLE launch_intents ("
    " id INTEGER PRIMARY KEY,"
    " token TEXT NOT NULL UNIQUE CHECK (length(token) BETWEEN 1 AND 128),"
    " offer TEXT NOT NULL,"
    " count INTEGER NOT NULL CHECK (count >= 1),"
    " created_at REAL NOT NULL,"
    " state TEXT NOT NULL CHECK (state IN ('pending', 'launched', 'failed')),"
    " resolved_at REAL"
    ") STRICT;"
    "CREATE TABLE nodes ("
    " id INTEGER PRIMARY KEY,"
    " instance_id TEXT NOT NULL UNIQUE CHECK (length(instance_id) BETWEEN 1 AND 128),"
    " provider TEXT NOT NULL,"
    " offer TEXT NOT NULL,"
    " market TEXT NOT NULL CHECK (market IN ('on-demand', 'spot')),"
    " zone TEXT NOT NULL,"
    " gpus INTEGER NOT NULL CHECK (gpus >= 0),"
    " state TEXT NOT NULL"
    "  CHECK (state IN ('launching', 'booting', 'ready', 'draining', 'terminated')),"
    " launch_token TEXT REFERENCES launch_intents (token),"
    " launch_index INTEGER CHECK (launch_index >= 0),"
    " launched_at REAL NOT NULL,"
    " ready_at REAL,"
    " terminated_at REAL,"
    " price REAL NOT NULL CHECK (price >= 0),"
    " UNIQUE (launch_token, launch_index),"
    " CHECK ((launch_token IS NULL) = (launch_index IS NULL))"
    ") STRICT;"
    "CREATE TABLE allocations ("
    " job_id INTEGER NOT NULL REFERENCES jobs (id),"
    " node_id INTEGER NOT NULL REFERENCES nodes (id),"
    " replicas INTEGER NOT NULL CHECK (replicas >= 1),"
    " since REAL NOT NULL,"
    " PRIMARY KEY (job_id, node_id)"
    ") STRICT;"
    "CREATE TABLE models ("
    " job_id INTEGER PRIMARY KEY REFERENCES jobs (id),"
    " params TEXT NOT NULL CHECK (json_valid(params)),"
    " grad_stats TEXT NOT NULL CHECK (json_valid(grad_stats)),"
    " fitted_at REAL NOT NULL"
    ") STRICT;"
    "CREATE TABLE decisions ("
    " id INTEGER PRIMARY KEY,"
    " tick INTEGER NOT NULL CHECK (tick >= 0),"
    " at REAL NOT NULL,"
    " summary TEXT NOT NULL CHECK (json_valid(summary))"
    ") STRICT;"
    "CREATE TABLE costs ("
    " id INTEGER PRIMARY KEY,"
    " node_id INTEGER NOT NULL REFERENCES nodes (id),"
    " start_at REAL NOT NULL,"
    " end_at REAL NOT NULL CHECK (end_at >= start_at),"
    " dollars REAL NOT NULL CHECK (dollars >= 0)"
    ") STRICT;",
    /* v2: indexes for the lists each tick makes (jobs and nodes by state) and on the child keys
     * of allocations and costs, which a change to a node's row would otherwise scan for */
    "CREATE INDEX jobs_by_state ON jobs (state);"
    "CREATE INDEX nodes_by_state ON nodes (state);"
    "CREATE INDEX allocations_by_node ON allocations (node_id);"
    "CREATE INDEX costs_by_node ON costs (node_id);",
    /* v3: what the API records: node agents' registrations (GPU memory), heartbeats and
     * preemption notices; each job's configuration from the plan and the gradient statistics of
     * its last report; the step times it reported, pooled per configuration */
    "ALTER TABLE nodes ADD COLUMN gpu_memory_mib INTEGER NOT NULL DEFAULT 0"
    " CHECK (gpu_memory_mib >= 0);"
    "ALTER TABLE nodes ADD COLUMN heartbeat_at REAL;"
    "ALTER TABLE nodes ADD COLUMN notice_at REAL;"
    "ALTER TABLE nodes ADD COLUMN notice_deadline REAL;"
    "ALTER TABLE jobs ADD COLUMN local_bsz REAL CHECK (local_bsz > 0);"
    "ALTER TABLE jobs ADD COLUMN accum_steps INTEGER CHECK (accum_steps >= 0);"
    "ALTER TABLE jobs ADD COLUMN lr_gain REAL CHECK (lr_gain > 0);"
    "ALTER TABLE jobs ADD COLUMN grad_sqr REAL CHECK (grad_sqr >= 0);"
    "ALTER TABLE jobs ADD COLUMN grad_var REAL CHECK (grad_var >= 0);"
    "ALTER TABLE jobs ADD COLUMN reported_at REAL;"
    "CREATE TABLE reports ("
    " job_id INTEGER NOT NULL REFERENCES jobs (id),"
    " nodes INTEGER NOT NULL CHECK (nodes >= 1),"
    " replicas INTEGER NOT NULL CHECK (replicas >= nodes),"
    " local_bsz REAL NOT NULL CHECK (local_bsz > 0),"
    " accum_steps INTEGER NOT NULL CHECK (accum_steps >= 0),"
    " count INTEGER NOT NULL CHECK (count >= 1),"
    " step_mean REAL NOT NULL CHECK (step_mean > 0),"
    " step_var REAL NOT NULL CHECK (step_var >= 0),"
    " sync_mean REAL NOT NULL CHECK (sync_mean >= 0 AND sync_mean < step_mean),"
    " at REAL NOT NULL,"
    " PRIMARY KEY (job_id, nodes, replicas, local_bsz, accum_steps)"
    ") STRICT;",
    /* v4: the all-reduce time a job's replicas measured, the prior for placements not yet run;
     * where a node's replicas are reached, as its agent registered it */
    "ALTER TABLE jobs ADD COLUMN sync_prior REAL CHECK (sync_prior > 0);"
    "ALTER TABLE nodes ADD COLUMN address TEXT CHECK (length(address) BETWEEN 1 AND 255);",
    /* v5: model families: the gradient statistics of each job's first report that carried any
     * (its family's start for the next job; NULL for the jobs reported before: their first is
     * not known), and the jobs by the family their spec names */
    "ALTER TABLE jobs ADD COLUMN grad0_sqr REAL CHECK (grad0_sqr >= 0);"
    "ALTER TABLE jobs ADD COLUMN grad0_var REAL CHECK (grad0_var >= 0);"
    "CREATE INDEX jobs_by_family ON jobs (json_extract(spec, '$.family'));",
};

static const char *const st_job_states[STATE_JOB_NSTATES] = {
    [STATE_JOB_PENDING] = "pending",   [STATE_JOB_RUNNING] = "running",
    [STATE_JOB_FINISHED] = "finished", [STATE_JOB_CANCELLED] = "cancelled",
    [STATE_JOB_FAILED] = "failed",
};

static const char *const st_node_states[STATE_NODE_NSTATES] = {
    [STATE_NODE_LAUNCHING] = "launching",   [STATE_NODE_BOOTING] = "booting",
    [STATE_NODE_READY] = "ready",           [STATE_NODE_DRAINING] = "draining",
    [STATE_NODE_TERMINATED] = "terminated",
};

static const char *const st_intent_states[] = {
    [STATE_INTENT_PENDING] = "pending",
    [STATE_INTENT_LAUNCHED] = "launched",
    [STATE_INTENT_FAILED] = "failed",
};

static const char *const st_markets[] = {
    [STATE_MARKET_ON_DEMAND] = "on-demand",
    [STATE_MARKET_SPOT] = "spot",
};

#define ST_COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

const char *state_job_state_name(enum state_job_state s)
{
    return (int)s >= 0 && (int)s < STATE_JOB_NSTATES ? st_job_states[s] : NULL;
}

const char *state_node_state_name(enum state_node_state s)
{
    return (int)s >= 0 && (int)s < STATE_NODE_NSTATES ? st_node_states[s] : NULL;
}

/* The index of text in names, or ERR_CORRUPT for text the schema's checks should have kept out. */
static int st_lookup(const char *const *names, int n, const char *text)
{
    for (int i = 0; text && i < n; i++)
        if (strcmp(names[i], text) == 0)
            return i;
    return ERR_CORRUPT;
}

static int st_name_ok(const char *s)
{
    return s && s[0] && strlen(s) <= STATE_NAME_MAX;
}

/* A known time: finite. An optional one may also be NAN (not known yet). */
static int st_time_ok(double t)
{
    return isfinite(t);
}

static int st_opt_time_ok(double t)
{
    return isnan(t) || isfinite(t);
}

/*
 * Prepare sql and bind the arguments that follow, one per character of types: 'i' long long,
 * 'n' int, 'x' long long or NULL when negative (an optional index), 'd' double (NAN binds NULL:
 * a time not known yet), 't' text (NULL binds NULL).
 */
static int st_vprepare(struct db *db, struct db_stmt **out, const char *sql, const char *types,
                       va_list ap)
{
    struct db_stmt *s = NULL;
    long long x;
    double d;
    int rc;

    rc = db_prepare(db, sql, &s);
    for (int i = 0; rc == 0 && types[i]; i++) {
        switch (types[i]) {
        case 'i':
            rc = db_bind_int(s, i + 1, va_arg(ap, long long));
            break;
        case 'n':
            rc = db_bind_int(s, i + 1, va_arg(ap, int));
            break;
        case 'x':
            x = va_arg(ap, long long);
            rc = x < 0 ? db_bind_null(s, i + 1) : db_bind_int(s, i + 1, x);
            break;
        case 'd':
            d = va_arg(ap, double);
            rc = isnan(d) ? db_bind_null(s, i + 1) : db_bind_double(s, i + 1, d);
            break;
        case 't':
            rc = db_bind_text(s, i + 1, va_arg(ap, const char *));
            break;
        default:
            rc = ERR_INTERNAL;
        }
    }
    if (rc < 0) {
        db_finalize(s);
        return rc;
    }
    *out = s;
    return 0;
}

static int st_prepare(struct db *db, struct db_stmt **out, const char *sql, const char *types, ...)
{
    va_list ap;
    int rc;

    va_start(ap, types);
    rc = st_vprepare(db, out, sql, types, ap);
    va_end(ap);
    return rc;
}

/* Run one statement with binds (as st_prepare) to its end; rows it answers are passed over. */
static int st_run(struct db *db, const char *sql, const char *types, ...)
{
    struct db_stmt *s = NULL;
    va_list ap;
    int rc;

    va_start(ap, types);
    rc = st_vprepare(db, &s, sql, types, ap);
    va_end(ap);
    while (rc >= 0 && (rc = db_step(s)) == DB_ROW)
        ;
    db_finalize(s);
    return rc;
}

/* Run one statement that writes, with binds (as st_prepare); ERR_UNKNOWN when it changed no row
 * (an UPDATE or INSERT ... SELECT that found nothing). */
static int st_update(struct state *st, const char *sql, const char *types, ...)
{
    struct db_stmt *s = NULL;
    va_list ap;
    int rc;

    va_start(ap, types);
    rc = st_vprepare(st->db, &s, sql, types, ap);
    va_end(ap);
    if (rc == 0)
        rc = db_step(s);
    if (rc == 0 && db_changes(st->db) == 0)
        rc = ERR_UNKNOWN;
    db_finalize(s);
    return rc == DB_ROW ? ERR_INTERNAL : rc;
}

/* Run one statement with binds that answers at most one integer; *out = that integer, or
 * ERR_UNKNOWN (out untouched) when it answers no row. */
static int st_int(struct db *db, long long *out, const char *sql, const char *types, ...)
{
    struct db_stmt *s = NULL;
    va_list ap;
    int rc;

    va_start(ap, types);
    rc = st_vprepare(db, &s, sql, types, ap);
    va_end(ap);
    if (rc < 0)
        return rc;
    rc = db_step(s);
    if (rc == DB_ROW) {
        *out = db_column_int(s, 0);
        rc = 0;
    } else if (rc == 0) {
        rc = ERR_UNKNOWN;
    }
    db_finalize(s);
    return rc;
}

/* End the transaction an operation began: commit when rc is not an error, else roll back.
 * Returns rc, or the commit's error. */
static int st_end(struct state *st, int rc)
{
    int crc;

    if (rc < 0) {
        db_rollback(st->db);
        return rc;
    }
    crc = db_commit(st->db);
    return crc < 0 ? crc : rc;
}

/* A column that holds a time, NAN for SQL NULL. */
static double st_col_time(struct db_stmt *s, int col)
{
    return db_column_is_null(s, col) ? NAN : db_column_double(s, col);
}

/* Column col's stored name as its index in names (ERR_CORRUPT for an unknown one). */
static int st_col_enum(struct db_stmt *s, int col, const char *const *names, int n)
{
    return st_lookup(names, n, db_column_text(s, col));
}

/* A kind of row read into a struct: its size, how to fill a zeroed one from the current row
 * (on failure, what it filled is freed by clear) and how to free what it owns. */
struct st_rows {
    size_t elem;
    int (*read)(struct db_stmt *s, void *item);
    void (*clear)(void *item);
};

/*
 * Read every row of s (stolen: finalized here) into a new array of kind's structs; on success
 * *out owns *n of them (NULL when 0).
 */
static int st_collect(struct db_stmt *s, const struct st_rows *kind, void **out, size_t *n)
{
    const size_t elem = kind->elem;
    char *items = NULL, *grown;
    size_t count = 0, cap = 0;
    int rc;

    while ((rc = db_step(s)) == DB_ROW) {
        if (count == cap) {
            cap = cap ? 2 * cap : 8;
            grown = realloc(items, cap * elem);
            if (!grown) {
                rc = ERR_NOMEM;
                break;
            }
            items = grown;
        }
        memset(items + count * elem, 0, elem);
        rc = kind->read(s, items + count * elem);
        if (rc < 0) {
            kind->clear(items + count * elem);
            break;
        }
        count++;
    }
    db_finalize(s);
    if (rc < 0) {
        for (size_t i = 0; i < count; i++)
            kind->clear(items + i * elem);
        free(items);
        return rc;
    }
    if (count == 0) {
        free(items);
        items = NULL;
    }
    *out = items;
    *n = count;
    return 0;
}

/* The one row of sql (a SELECT by a unique key bound as ?1) into *out, a struct of kind's; its
 * strings are then owned by *out. ERR_UNKNOWN when there is no such row. */
static int st_get_one(struct db *db, const char *sql, const char *key, const struct st_rows *kind,
                      void *out)
{
    struct db_stmt *s = NULL;
    void *items = NULL;
    size_t n = 0;
    int rc;

    if (!st_name_ok(key))
        return ERR_INVAL;
    rc = st_prepare(db, &s, sql, "t", key);
    if (rc == 0)
        rc = st_collect(s, kind, &items, &n);
    if (rc < 0)
        return rc;
    if (n == 0)
        return ERR_UNKNOWN;
    memcpy(out, items, kind->elem);
    free(items);
    return 0;
}

/* The rows of sql, which selects by state IN (?1 .. ?count): state i is bound when its bit is in
 * mask, else NULL (which matches nothing). */
static int st_list_by_state(struct db *db, const char *sql, const char *const *names, int count,
                            unsigned mask, const struct st_rows *kind, void **out, size_t *n)
{
    struct db_stmt *s = NULL;
    int rc;

    rc = db_prepare(db, sql, &s);
    for (int i = 0; rc == 0 && i < count; i++)
        rc = db_bind_text(s, i + 1, (mask & STATE_MASK(i)) ? names[i] : NULL);
    if (rc < 0) {
        db_finalize(s);
        return rc;
    }
    return st_collect(s, kind, out, n);
}

/* The id and state (its index in names) of the row sql selects as (id, state) by a key bound as
 * ?1; ERR_UNKNOWN when there is none. */
static int st_find(struct db *db, const char *sql, const char *key, const char *const *names, int n,
                   long long *id, int *state)
{
    struct db_stmt *s = NULL;
    int rc;

    rc = st_prepare(db, &s, sql, "t", key);
    if (rc < 0)
        return rc;
    rc = db_step(s);
    if (rc == DB_ROW) {
        rc = st_col_enum(s, 1, names, n);
        if (rc >= 0) {
            *id = db_column_int(s, 0);
            *state = rc;
            rc = 0;
        }
    } else if (rc == 0) {
        rc = ERR_UNKNOWN;
    }
    db_finalize(s);
    return rc;
}

/* The job's id and state by name; ERR_UNKNOWN when there is none. */
static int st_job_find(struct db *db, const char *name, long long *id, enum state_job_state *state)
{
    int v = 0, rc;

    rc = st_find(db, "SELECT id, state FROM jobs WHERE name = ?1", name, st_job_states,
                 STATE_JOB_NSTATES, id, &v);
    if (rc == 0)
        *state = (enum state_job_state)v;
    return rc;
}

/* The node's id and state by instance id; ERR_UNKNOWN when there is none. */
static int st_node_find(struct db *db, const char *instance_id, long long *id,
                        enum state_node_state *state)
{
    int v = 0, rc;

    rc = st_find(db, "SELECT id, state FROM nodes WHERE instance_id = ?1", instance_id,
                 st_node_states, STATE_NODE_NSTATES, id, &v);
    if (rc == 0)
        *state = (enum state_node_state)v;
    return rc;
}

/* ---- opening and the migrations ---- */

/* Inside the migration's transaction: the file's application id, schema version and number of
 * schema objects. */
static int st_header(struct db *db, long long *app, int *version, long long *objects)
{
    int rc;

    rc = st_int(db, app, "PRAGMA application_id", "");
    if (rc == 0)
        rc = db_user_version(db, version);
    if (rc == 0)
        rc = st_int(db, objects, "SELECT count(*) FROM sqlite_master", "");
    return rc;
}

/* Migrate to target, one version per transaction; refuses a database that is newer or not
 * castor's. Re-reads the version inside each transaction, so two processes opening the same new
 * file apply each migration once. */
static int st_migrate(struct db *db, int target, const char *path, struct error *e)
{
    long long app, objects;
    int rc, version;

    for (;;) {
        rc = db_begin(db);
        if (rc < 0)
            return err_set(e, rc, path, 0, 0, "cannot begin the migration: %s", db_errmsg(db));
        rc = st_header(db, &app, &version, &objects);
        if (rc < 0) {
            err_set(e, rc, path, 0, 0, "cannot read the schema version: %s", db_errmsg(db));
            break;
        }
        if (app != ST_APPLICATION_ID && (app != 0 || version != 0 || objects != 0)) {
            rc = err_set(e, ERR_INVAL, path, 0, 0,
                         "not a castor state database (application id %lld, version %d)", app,
                         version);
            break;
        }
        if (version > target) {
            rc = err_set(e, ERR_RANGE, path, 0, 0,
                         "schema version %d is newer than %s (%d): run a newer castor, or "
                         "restore a backup",
                         version,
                         target == STATE_SCHEMA_VERSION ? "this castor knows" : "the one asked for",
                         target);
            break;
        }
        if (version == target) {
            rc = db_commit(db);
            return rc < 0 ? err_set(e, rc, path, 0, 0, "cannot commit: %s", db_errmsg(db)) : 0;
        }
        rc = db_exec(db, st_migrations[version]);
        if (rc == 0)
            rc = db_set_user_version(db, version + 1);
        if (rc < 0) {
            err_set(e, rc, path, 0, 0, "migration to schema version %d: %s", version + 1,
                    db_errmsg(db));
            break;
        }
        rc = db_commit(db);
        if (rc < 0)
            return err_set(e, rc, path, 0, 0, "migration to schema version %d: cannot commit",
                           version + 1);
    }
    db_rollback(db);
    return rc;
}

int state_open_version(const char *path, int version, struct state **out, struct error *e)
{
    struct state *st = NULL;
    int rc;

    if (version < 1 || version > STATE_SCHEMA_VERSION)
        return err_set(e, ERR_INVAL, path, 0, 0, "no schema version %d", version);
    st = calloc(1, sizeof(*st));
    if (!st)
        return err_set(e, ERR_NOMEM, path, 0, 0, NULL);
    rc = db_open(path, &st->db, e);
    if (rc < 0)
        goto out;
    rc = st_migrate(st->db, version, path, e);
    if (rc < 0)
        goto out;
    *out = st;
    st = NULL;
out:
    state_close(st);
    return rc;
}

int state_open(const char *path, struct state **out, struct error *e)
{
    return state_open_version(path, STATE_SCHEMA_VERSION, out, e);
}

void state_close(struct state *st)
{
    if (!st)
        return;
    db_close(st->db);
    free(st);
}

int state_version(struct state *st, int *out)
{
    return db_user_version(st->db, out);
}

struct db *state_db(struct state *st)
{
    return st->db;
}

/* ---- jobs ---- */

#define ST_JOB_COLUMNS                                                                             \
    "id, name, spec, state, submitted_at, progress, checkpoint_progress, checkpoint_at, restarts," \
    " finished_at, local_bsz, accum_steps, lr_gain, grad_sqr, grad_var, reported_at, sync_prior,"  \
    " grad0_sqr, grad0_var"

static int st_read_job(struct db_stmt *s, void *item)
{
    struct state_job *j = item;
    int rc;

    j->id = db_column_int(s, 0);
    rc = db_column_text_dup(s, 1, &j->name);
    if (rc == 0)
        rc = db_column_text_dup(s, 2, &j->spec);
    if (rc < 0)
        return rc;
    rc = st_col_enum(s, 3, st_job_states, STATE_JOB_NSTATES);
    if (rc < 0)
        return rc;
    j->state = (enum state_job_state)rc;
    j->submitted_at = db_column_double(s, 4);
    j->progress = db_column_double(s, 5);
    j->checkpoint_progress = db_column_double(s, 6);
    j->checkpoint_at = st_col_time(s, 7);
    j->restarts = (int)db_column_int(s, 8);
    j->finished_at = st_col_time(s, 9);
    j->local_bsz = st_col_time(s, 10);
    j->accum_steps = (int)db_column_int(s, 11);
    j->lr_gain = st_col_time(s, 12);
    j->grad_sqr = st_col_time(s, 13);
    j->grad_var = st_col_time(s, 14);
    j->reported_at = st_col_time(s, 15);
    j->sync_prior = st_col_time(s, 16);
    j->grad0_sqr = st_col_time(s, 17);
    j->grad0_var = st_col_time(s, 18);
    return 0;
}

static void st_clear_job(void *item)
{
    state_job_clear(item);
}

static const struct st_rows st_job_rows = {sizeof(struct state_job), st_read_job, st_clear_job};

static int st_job_final(enum state_job_state s)
{
    return s == STATE_JOB_FINISHED || s == STATE_JOB_CANCELLED || s == STATE_JOB_FAILED;
}

static int st_job_move_ok(enum state_job_state from, enum state_job_state to)
{
    switch (from) {
    case STATE_JOB_PENDING:
        return to == STATE_JOB_RUNNING || to == STATE_JOB_CANCELLED || to == STATE_JOB_FAILED;
    case STATE_JOB_RUNNING:
        return to == STATE_JOB_PENDING || st_job_final(to);
    default:
        return 0;
    }
}

int state_job_submit(struct state *st, const char *name, const char *spec, double now)
{
    if (!st_name_ok(name) || !spec || !st_time_ok(now))
        return ERR_INVAL;
    /* one statement: the UNIQUE name makes a duplicate fail whole (ERR_CONFLICT) */
    return st_run(st->db,
                  "INSERT INTO jobs (name, spec, state, submitted_at) VALUES (?1, ?2, ?3, ?4)",
                  "tttd", name, spec, st_job_states[STATE_JOB_PENDING], now);
}

int state_job_set_state(struct state *st, const char *name, enum state_job_state to, double now)
{
    enum state_job_state from = STATE_JOB_PENDING;
    long long id = 0;
    int rc;

    if (!st_name_ok(name) || !state_job_state_name(to) || !st_time_ok(now))
        return ERR_INVAL;
    rc = db_begin(st->db);
    if (rc < 0)
        return rc;
    rc = st_job_find(st->db, name, &id, &from);
    if (rc < 0 || from == to)
        goto out;
    if (!st_job_move_ok(from, to)) {
        rc = ERR_CONFLICT;
        goto out;
    }
    rc = st_run(st->db, "UPDATE jobs SET state = ?2, finished_at = ?3 WHERE id = ?1", "itd", id,
                st_job_states[to], st_job_final(to) ? now : NAN);
    if (rc == 0 && st_job_final(to))
        rc = st_run(st->db, "DELETE FROM allocations WHERE job_id = ?1", "i", id);
out:
    return st_end(st, rc);
}

int state_job_finish(struct state *st, const char *name, double progress, double now)
{
    enum state_job_state from = STATE_JOB_PENDING;
    long long id = 0;
    int rc;

    if (!st_name_ok(name) || !st_time_ok(now) || (!isnan(progress) && !(progress >= 0)) ||
        isinf(progress))
        return ERR_INVAL;
    rc = db_begin(st->db);
    if (rc < 0)
        return rc;
    rc = st_job_find(st->db, name, &id, &from);
    if (rc < 0 || from == STATE_JOB_FINISHED)
        goto out;
    if (from != STATE_JOB_PENDING && from != STATE_JOB_RUNNING) {
        rc = ERR_CONFLICT;
        goto out;
    }
    rc = st_run(st->db, "UPDATE jobs SET state = ?2, finished_at = ?3 WHERE id = ?1", "itd", id,
                st_job_states[STATE_JOB_FINISHED], now);
    if (rc == 0 && !isnan(progress))
        rc = st_run(st->db,
                    "UPDATE jobs SET progress = ?2, checkpoint_progress = ?2, checkpoint_at = ?3"
                    " WHERE id = ?1",
                    "idd", id, progress, now);
    if (rc == 0)
        rc = st_run(st->db, "DELETE FROM allocations WHERE job_id = ?1", "i", id);
out:
    return st_end(st, rc);
}

int state_job_progress(struct state *st, const char *name, double progress)
{
    if (!st_name_ok(name) || !st_time_ok(progress) || progress < 0)
        return ERR_INVAL;
    return st_update(st, "UPDATE jobs SET progress = ?2 WHERE name = ?1", "td", name, progress);
}

int state_job_checkpoint(struct state *st, const char *name, double progress, double now)
{
    if (!st_name_ok(name) || !st_time_ok(progress) || progress < 0 || !st_time_ok(now))
        return ERR_INVAL;
    return st_update(st,
                     "UPDATE jobs SET checkpoint_progress = ?2, checkpoint_at = ?3,"
                     " progress = max(progress, ?2) WHERE name = ?1",
                     "tdd", name, progress, now);
}

int state_job_restarted(struct state *st, const char *name)
{
    if (!st_name_ok(name))
        return ERR_INVAL;
    return st_update(st, "UPDATE jobs SET restarts = restarts + 1 WHERE name = ?1", "t", name);
}

int state_job_set_config(struct state *st, const char *name, double local_bsz, int accum_steps,
                         double lr_gain)
{
    enum state_job_state cur = STATE_JOB_PENDING;
    long long id = 0;
    int rc;

    if (!st_name_ok(name) || !st_time_ok(local_bsz) || local_bsz <= 0 || accum_steps < 0 ||
        !st_time_ok(lr_gain) || lr_gain <= 0)
        return ERR_INVAL;
    rc = db_begin(st->db);
    if (rc < 0)
        return rc;
    rc = st_job_find(st->db, name, &id, &cur);
    if (rc == 0 && st_job_final(cur))
        rc = ERR_CONFLICT;
    if (rc == 0)
        rc = st_run(st->db,
                    "UPDATE jobs SET local_bsz = ?2, accum_steps = ?3, lr_gain = ?4 WHERE id = ?1",
                    "idnd", id, local_bsz, accum_steps, lr_gain);
    return st_end(st, rc);
}

int state_job_get(struct state *st, const char *name, struct state_job *out)
{
    return st_get_one(st->db, "SELECT " ST_JOB_COLUMNS " FROM jobs WHERE name = ?1", name,
                      &st_job_rows, out);
}

int state_jobs_list(struct state *st, unsigned states, struct state_job **out, size_t *n)
{
    return st_list_by_state(st->db,
                            "SELECT " ST_JOB_COLUMNS " FROM jobs"
                            " WHERE state IN (?1, ?2, ?3, ?4, ?5) ORDER BY id",
                            st_job_states, STATE_JOB_NSTATES, states, &st_job_rows, (void **)out,
                            n);
}

void state_job_clear(struct state_job *j)
{
    if (!j)
        return;
    free(j->name);
    free(j->spec);
    j->name = NULL;
    j->spec = NULL;
}

void state_jobs_free(struct state_job *jobs, size_t n)
{
    for (size_t i = 0; jobs && i < n; i++)
        state_job_clear(&jobs[i]);
    free(jobs);
}

/* ---- launch intents ---- */

static int st_read_intent(struct db_stmt *s, void *item)
{
    struct state_intent *in = item;
    int rc;

    rc = db_column_text_dup(s, 0, &in->token);
    if (rc == 0)
        rc = db_column_text_dup(s, 1, &in->offer);
    if (rc < 0)
        return rc;
    in->count = (int)db_column_int(s, 2);
    in->created_at = db_column_double(s, 3);
    rc = st_col_enum(s, 4, st_intent_states, ST_COUNT(st_intent_states));
    if (rc < 0)
        return rc;
    in->state = (enum state_intent_state)rc;
    in->resolved_at = st_col_time(s, 5);
    return 0;
}

static void st_clear_intent(void *item)
{
    struct state_intent *in = item;

    free(in->token);
    free(in->offer);
}

static const struct st_rows st_intent_rows = {sizeof(struct state_intent), st_read_intent,
                                              st_clear_intent};

int state_intent_record(struct state *st, const char *token, const char *offer, int count,
                        double now)
{
    if (!st_name_ok(token) || !st_name_ok(offer) || count < 1 || !st_time_ok(now))
        return ERR_INVAL;
    return st_run(st->db,
                  "INSERT INTO launch_intents (token, offer, count, created_at, state)"
                  " VALUES (?1, ?2, ?3, ?4, ?5)",
                  "ttndt", token, offer, count, now, st_intent_states[STATE_INTENT_PENDING]);
}

int state_intent_resolve(struct state *st, const char *token, enum state_intent_state outcome,
                         double now)
{
    long long id = 0;
    int rc, cur = 0;

    if (!st_name_ok(token) ||
        (outcome != STATE_INTENT_LAUNCHED && outcome != STATE_INTENT_FAILED) || !st_time_ok(now))
        return ERR_INVAL;
    rc = db_begin(st->db);
    if (rc < 0)
        return rc;
    rc = st_find(st->db, "SELECT id, state FROM launch_intents WHERE token = ?1", token,
                 st_intent_states, ST_COUNT(st_intent_states), &id, &cur);
    if (rc < 0 || cur == (int)outcome)
        goto out;
    if (cur != STATE_INTENT_PENDING) {
        rc = ERR_CONFLICT;
        goto out;
    }
    rc = st_run(st->db, "UPDATE launch_intents SET state = ?2, resolved_at = ?3 WHERE id = ?1",
                "itd", id, st_intent_states[outcome], now);
out:
    return st_end(st, rc);
}

int state_intents_pending(struct state *st, struct state_intent **out, size_t *n)
{
    struct db_stmt *s = NULL;
    int rc;

    rc = st_prepare(st->db, &s,
                    "SELECT token, offer, count, created_at, state, resolved_at FROM launch_intents"
                    " WHERE state = ?1 ORDER BY id",
                    "t", st_intent_states[STATE_INTENT_PENDING]);
    if (rc < 0)
        return rc;
    return st_collect(s, &st_intent_rows, (void **)out, n);
}

void state_intents_free(struct state_intent *intents, size_t n)
{
    for (size_t i = 0; intents && i < n; i++)
        st_clear_intent(&intents[i]);
    free(intents);
}

/* ---- nodes ---- */

#define ST_NODE_COLUMNS                                                                        \
    "id, instance_id, provider, offer, market, zone, gpus, state, launch_token, launch_index," \
    " launched_at, ready_at, terminated_at, price, gpu_memory_mib, heartbeat_at, notice_at,"   \
    " notice_deadline, address"

static int st_read_node(struct db_stmt *s, void *item)
{
    struct state_node *node = item;
    int rc;

    node->id = db_column_int(s, 0);
    rc = db_column_text_dup(s, 1, &node->instance_id);
    if (rc == 0)
        rc = db_column_text_dup(s, 2, &node->provider);
    if (rc == 0)
        rc = db_column_text_dup(s, 3, &node->offer);
    if (rc == 0)
        rc = db_column_text_dup(s, 5, &node->zone);
    if (rc == 0)
        rc = db_column_text_dup(s, 8, &node->launch_token);
    if (rc == 0)
        rc = db_column_text_dup(s, 18, &node->address);
    if (rc < 0)
        return rc;
    rc = st_col_enum(s, 4, st_markets, ST_COUNT(st_markets));
    if (rc < 0)
        return rc;
    node->market = (enum state_market)rc;
    node->gpus = (int)db_column_int(s, 6);
    rc = st_col_enum(s, 7, st_node_states, STATE_NODE_NSTATES);
    if (rc < 0)
        return rc;
    node->state = (enum state_node_state)rc;
    node->launch_index = (int)db_column_int(s, 9);
    node->launched_at = db_column_double(s, 10);
    node->ready_at = st_col_time(s, 11);
    node->terminated_at = st_col_time(s, 12);
    node->price = db_column_double(s, 13);
    node->gpu_memory_mib = (int)db_column_int(s, 14);
    node->heartbeat_at = st_col_time(s, 15);
    node->notice_at = st_col_time(s, 16);
    node->notice_deadline = st_col_time(s, 17);
    return 0;
}

static void st_clear_node(void *item)
{
    state_node_clear(item);
}

static const struct st_rows st_node_rows = {sizeof(struct state_node), st_read_node, st_clear_node};

static int st_node_ok(const struct state_node *n)
{
    return n && st_name_ok(n->instance_id) && st_name_ok(n->provider) && st_name_ok(n->offer) &&
           st_name_ok(n->zone) &&
           (n->market == STATE_MARKET_ON_DEMAND || n->market == STATE_MARKET_SPOT) &&
           n->gpus >= 0 && state_node_state_name(n->state) && st_time_ok(n->launched_at) &&
           st_opt_time_ok(n->ready_at) && st_opt_time_ok(n->terminated_at) &&
           st_time_ok(n->price) && n->price >= 0 &&
           (!n->launch_token || (st_name_ok(n->launch_token) && n->launch_index >= 0));
}

int state_node_upsert(struct state *st, const struct state_node *n)
{
    enum state_node_state cur = STATE_NODE_LAUNCHING;
    long long id = 0, count = 0;
    int rc;

    if (!st_node_ok(n))
        return ERR_INVAL;
    rc = db_begin(st->db);
    if (rc < 0)
        return rc;
    rc = st_node_find(st->db, n->instance_id, &id, &cur);
    if (rc == 0 && cur == STATE_NODE_TERMINATED && n->state != STATE_NODE_TERMINATED)
        rc = ERR_CONFLICT;
    else if (rc == ERR_UNKNOWN)
        rc = 0;
    if (rc < 0)
        goto out;
    if (n->launch_token) {
        rc = st_int(st->db, &count, "SELECT count FROM launch_intents WHERE token = ?1", "t",
                    n->launch_token);
        if (rc == ERR_UNKNOWN)
            rc = ERR_CONFLICT; /* as the foreign key would say */
        else if (rc == 0 && n->launch_index >= count)
            rc = ERR_RANGE;
        if (rc < 0)
            goto out;
    }
    rc = st_run(st->db,
                "INSERT INTO nodes (instance_id, provider, offer, market, zone, gpus, state,"
                " launch_token, launch_index, launched_at, ready_at, terminated_at, price)"
                " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"
                " ON CONFLICT (instance_id) DO UPDATE SET provider = excluded.provider,"
                " offer = excluded.offer, market = excluded.market, zone = excluded.zone,"
                " gpus = excluded.gpus, state = excluded.state,"
                " launch_token = excluded.launch_token, launch_index = excluded.launch_index,"
                " launched_at = excluded.launched_at, ready_at = excluded.ready_at,"
                " terminated_at = excluded.terminated_at, price = excluded.price",
                "tttttnttxdddd", n->instance_id, n->provider, n->offer, st_markets[n->market],
                n->zone, n->gpus, st_node_states[n->state], n->launch_token,
                n->launch_token ? (long long)n->launch_index : -1LL, n->launched_at, n->ready_at,
                n->terminated_at, n->price);
    if (rc == 0 && n->state == STATE_NODE_TERMINATED)
        rc = st_run(st->db,
                    "DELETE FROM allocations WHERE node_id ="
                    " (SELECT id FROM nodes WHERE instance_id = ?1)",
                    "t", n->instance_id);
out:
    return st_end(st, rc);
}

static int st_node_move_ok(enum state_node_state from, enum state_node_state to)
{
    if (from == STATE_NODE_TERMINATED)
        return 0;
    return to > from || (from == STATE_NODE_DRAINING && to == STATE_NODE_READY);
}

int state_node_set_state(struct state *st, const char *instance_id, enum state_node_state to,
                         double now)
{
    enum state_node_state from = STATE_NODE_LAUNCHING;
    long long id = 0;
    int rc;

    if (!st_name_ok(instance_id) || !state_node_state_name(to) || !st_time_ok(now))
        return ERR_INVAL;
    rc = db_begin(st->db);
    if (rc < 0)
        return rc;
    rc = st_node_find(st->db, instance_id, &id, &from);
    if (rc < 0 || from == to)
        goto out;
    if (!st_node_move_ok(from, to)) {
        rc = ERR_CONFLICT;
        goto out;
    }
    rc = st_run(st->db, "UPDATE nodes SET state = ?2 WHERE id = ?1", "it", id, st_node_states[to]);
    if (rc == 0 && to == STATE_NODE_READY)
        rc = st_run(st->db, "UPDATE nodes SET ready_at = coalesce(ready_at, ?2) WHERE id = ?1",
                    "id", id, now);
    if (rc == 0 && to == STATE_NODE_TERMINATED)
        rc = st_run(st->db, "UPDATE nodes SET terminated_at = ?2 WHERE id = ?1", "id", id, now);
    if (rc == 0 && to == STATE_NODE_TERMINATED)
        rc = st_run(st->db, "DELETE FROM allocations WHERE node_id = ?1", "i", id);
out:
    return st_end(st, rc);
}

int state_node_register(struct state *st, const struct state_node *n, double now)
{
    enum state_node_state cur = STATE_NODE_LAUNCHING;
    long long id = 0;
    int rc;

    if (!st_node_ok(n) || n->gpus < 1 || n->gpu_memory_mib < 0 || !st_time_ok(now) ||
        (n->address && (!n->address[0] || strlen(n->address) > 255)))
        return ERR_INVAL;
    rc = db_begin(st->db);
    if (rc < 0)
        return rc;
    rc = st_node_find(st->db, n->instance_id, &id, &cur);
    if (rc == 0 && cur != STATE_NODE_LAUNCHING && cur != STATE_NODE_BOOTING)
        rc = ERR_CONFLICT; /* registered before, or gone */
    if (rc == 0) {
        rc = st_run(st->db,
                    "UPDATE nodes SET gpus = ?2, gpu_memory_mib = ?3, state = ?4,"
                    " ready_at = ?5, heartbeat_at = ?5, address = ?6 WHERE id = ?1",
                    "inntdt", id, n->gpus, n->gpu_memory_mib, st_node_states[STATE_NODE_READY], now,
                    n->address);
    } else if (rc == ERR_UNKNOWN) {
        /* a static node: the controller did not launch it, so it carries no launch token */
        rc = n->launch_token
                 ? ERR_INVAL
                 : st_run(st->db,
                          "INSERT INTO nodes (instance_id, provider, offer, market,"
                          " zone, gpus, gpu_memory_mib, state, launched_at, ready_at,"
                          " heartbeat_at, price, address)"
                          " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10, ?11, ?12)",
                          "tttttnntdddt", n->instance_id, n->provider, n->offer,
                          st_markets[n->market], n->zone, n->gpus, n->gpu_memory_mib,
                          st_node_states[STATE_NODE_READY], n->launched_at, now, n->price,
                          n->address);
    }
    return st_end(st, rc);
}

/* The node's id, in a transaction just begun, for an update of a node that must exist and not be
 * terminated: ERR_UNKNOWN or ERR_CONFLICT otherwise. */
static int st_live_node(struct state *st, const char *instance_id, long long *id,
                        enum state_node_state *cur)
{
    int rc = st_node_find(st->db, instance_id, id, cur);

    return rc == 0 && *cur == STATE_NODE_TERMINATED ? ERR_CONFLICT : rc;
}

int state_node_heartbeat(struct state *st, const char *instance_id, double now)
{
    enum state_node_state cur = STATE_NODE_LAUNCHING;
    long long id = 0;
    int rc;

    if (!st_name_ok(instance_id) || !st_time_ok(now))
        return ERR_INVAL;
    rc = db_begin(st->db);
    if (rc < 0)
        return rc;
    rc = st_live_node(st, instance_id, &id, &cur);
    if (rc == 0)
        rc = st_run(st->db, "UPDATE nodes SET heartbeat_at = ?2 WHERE id = ?1", "id", id, now);
    return st_end(st, rc);
}

int state_node_notice(struct state *st, const char *instance_id, double now, double deadline)
{
    enum state_node_state cur = STATE_NODE_LAUNCHING;
    long long id = 0;
    int rc;

    if (!st_name_ok(instance_id) || !st_time_ok(now) || !st_opt_time_ok(deadline) || deadline < now)
        return ERR_INVAL;
    rc = db_begin(st->db);
    if (rc < 0)
        return rc;
    rc = st_live_node(st, instance_id, &id, &cur);
    if (rc == 0)
        rc = st_run(st->db,
                    "UPDATE nodes SET notice_at = coalesce(notice_at, ?2),"
                    " notice_deadline = coalesce(?3, notice_deadline), state = ?4 WHERE id = ?1",
                    "iddt", id, now, deadline, st_node_states[STATE_NODE_DRAINING]);
    return st_end(st, rc);
}

static int st_read_node_job(struct db_stmt *s, void *item)
{
    struct state_node_job *r = item;

    r->replicas = (int)db_column_int(s, 1);
    return db_column_text_dup(s, 0, &r->job);
}

static void st_clear_node_job(void *item)
{
    struct state_node_job *r = item;

    free(r->job);
}

static const struct st_rows st_node_job_rows = {sizeof(struct state_node_job), st_read_node_job,
                                                st_clear_node_job};

int state_node_jobs(struct state *st, const char *instance_id, struct state_node_job **out,
                    size_t *n)
{
    enum state_node_state cur = STATE_NODE_LAUNCHING;
    struct db_stmt *s = NULL;
    long long id = 0;
    int rc;

    if (!st_name_ok(instance_id))
        return ERR_INVAL;
    rc = st_node_find(st->db, instance_id, &id, &cur);
    if (rc == 0)
        rc =
            st_prepare(st->db, &s,
                       "SELECT j.name, a.replicas FROM allocations a JOIN jobs j ON j.id = a.job_id"
                       " WHERE a.node_id = ?1 ORDER BY j.name",
                       "i", id);
    if (rc < 0)
        return rc;
    return st_collect(s, &st_node_job_rows, (void **)out, n);
}

void state_node_jobs_free(struct state_node_job *rows, size_t n)
{
    for (size_t i = 0; rows && i < n; i++)
        st_clear_node_job(&rows[i]);
    free(rows);
}

int state_node_get(struct state *st, const char *instance_id, struct state_node *out)
{
    return st_get_one(st->db, "SELECT " ST_NODE_COLUMNS " FROM nodes WHERE instance_id = ?1",
                      instance_id, &st_node_rows, out);
}

int state_nodes_list(struct state *st, unsigned states, struct state_node **out, size_t *n)
{
    return st_list_by_state(st->db,
                            "SELECT " ST_NODE_COLUMNS " FROM nodes"
                            " WHERE state IN (?1, ?2, ?3, ?4, ?5) ORDER BY id",
                            st_node_states, STATE_NODE_NSTATES, states, &st_node_rows, (void **)out,
                            n);
}

void state_node_clear(struct state_node *node)
{
    if (!node)
        return;
    free(node->instance_id);
    free(node->provider);
    free(node->offer);
    free(node->zone);
    free(node->launch_token);
    free(node->address);
    node->instance_id = node->provider = node->offer = node->zone = node->launch_token = NULL;
    node->address = NULL;
}

void state_nodes_free(struct state_node *nodes, size_t n)
{
    for (size_t i = 0; nodes && i < n; i++)
        state_node_clear(&nodes[i]);
    free(nodes);
}

/* ---- allocations ---- */

static int st_read_alloc(struct db_stmt *s, void *item)
{
    struct state_alloc *a = item;
    int rc;

    rc = db_column_text_dup(s, 0, &a->node);
    if (rc < 0)
        return rc;
    a->replicas = (int)db_column_int(s, 1);
    a->since = db_column_double(s, 2);
    return 0;
}

static void st_clear_alloc(void *item)
{
    struct state_alloc *a = item;

    free(a->node);
}

static const struct st_rows st_alloc_rows = {sizeof(struct state_alloc), st_read_alloc,
                                             st_clear_alloc};

int state_alloc_replace(struct state *st, const char *job, const struct state_alloc *rows, size_t n,
                        double now)
{
    enum state_job_state jstate = STATE_JOB_PENDING;
    enum state_node_state nstate = STATE_NODE_LAUNCHING;
    long long job_id = 0, node_id = 0;
    int rc;

    if (!st_name_ok(job) || (n > 0 && !rows) || !st_time_ok(now))
        return ERR_INVAL;
    for (size_t i = 0; i < n; i++)
        if (!st_name_ok(rows[i].node) || rows[i].replicas < 1)
            return ERR_INVAL;
    rc = db_begin(st->db);
    if (rc < 0)
        return rc;
    rc = st_job_find(st->db, job, &job_id, &jstate);
    if (rc == 0 && st_job_final(jstate))
        rc = ERR_CONFLICT;
    if (rc == 0)
        rc = st_run(st->db, "DELETE FROM allocations WHERE job_id = ?1", "i", job_id);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        rc = st_node_find(st->db, rows[i].node, &node_id, &nstate);
        if (rc == 0 && nstate == STATE_NODE_TERMINATED)
            rc = ERR_CONFLICT;
        if (rc == 0) /* a node named twice breaks the primary key: ERR_CONFLICT */
            rc = st_run(st->db,
                        "INSERT INTO allocations (job_id, node_id, replicas, since)"
                        " VALUES (?1, ?2, ?3, ?4)",
                        "iind", job_id, node_id, rows[i].replicas, now);
    }
    return st_end(st, rc);
}

int state_alloc_get(struct state *st, const char *job, struct state_alloc **out, size_t *n)
{
    enum state_job_state jstate = STATE_JOB_PENDING;
    struct db_stmt *s = NULL;
    long long job_id = 0;
    int rc;

    if (!st_name_ok(job))
        return ERR_INVAL;
    rc = st_job_find(st->db, job, &job_id, &jstate);
    if (rc < 0)
        return rc;
    rc = st_prepare(st->db, &s,
                    "SELECT n.instance_id, a.replicas, a.since FROM allocations a"
                    " JOIN nodes n ON n.id = a.node_id WHERE a.job_id = ?1 ORDER BY n.instance_id",
                    "i", job_id);
    if (rc < 0)
        return rc;
    return st_collect(s, &st_alloc_rows, (void **)out, n);
}

void state_allocs_free(struct state_alloc *rows, size_t n)
{
    for (size_t i = 0; rows && i < n; i++)
        st_clear_alloc(&rows[i]);
    free(rows);
}

/* ---- goodput models ---- */

int state_model_store(struct state *st, const char *job, const char *params, const char *grad_stats,
                      double now)
{
    if (!st_name_ok(job) || !params || !grad_stats || !st_time_ok(now))
        return ERR_INVAL;
    /* the job is looked up inside the statement: no job, no row (ERR_UNKNOWN) */
    return st_update(st,
                     "INSERT INTO models (job_id, params, grad_stats, fitted_at)"
                     " SELECT id, ?2, ?3, ?4 FROM jobs WHERE name = ?1"
                     " ON CONFLICT (job_id) DO UPDATE SET params = excluded.params,"
                     " grad_stats = excluded.grad_stats, fitted_at = excluded.fitted_at",
                     "tttd", job, params, grad_stats, now);
}

int state_model_get(struct state *st, const char *job, struct state_model *out)
{
    enum state_job_state jstate = STATE_JOB_PENDING;
    struct state_model m = {0};
    struct db_stmt *s = NULL;
    long long job_id = 0;
    int rc;

    if (!st_name_ok(job))
        return ERR_INVAL;
    rc = st_job_find(st->db, job, &job_id, &jstate);
    if (rc < 0)
        return rc;
    rc =
        st_prepare(st->db, &s, "SELECT params, grad_stats, fitted_at FROM models WHERE job_id = ?1",
                   "i", job_id);
    if (rc < 0)
        return rc;
    rc = db_step(s);
    if (rc == 0)
        rc = ERR_EMPTY;
    if (rc == DB_ROW) {
        rc = db_column_text_dup(s, 0, &m.params);
        if (rc == 0)
            rc = db_column_text_dup(s, 1, &m.grad_stats);
        m.fitted_at = db_column_double(s, 2);
    }
    db_finalize(s);
    if (rc < 0) {
        state_model_clear(&m);
        return rc;
    }
    *out = m;
    return 0;
}

void state_model_clear(struct state_model *m)
{
    if (!m)
        return;
    free(m->params);
    free(m->grad_stats);
    m->params = m->grad_stats = NULL;
}

/* ---- reports ---- */

static int st_report_config_ok(const struct state_report_config *c)
{
    return c->nodes >= 1 && c->replicas >= c->nodes && st_time_ok(c->local_bsz) &&
           c->local_bsz > 0 && c->accum_steps >= 0 && c->count >= 1 && st_time_ok(c->step_mean) &&
           c->step_mean > 0 && st_time_ok(c->step_sd) && c->step_sd >= 0 &&
           st_time_ok(c->sync_mean) && c->sync_mean >= 0 && c->sync_mean < c->step_mean;
}

static int st_report_ok(const struct state_report *r)
{
    if (!r || (r->nconfigs > 0 && !r->configs) || isnan(r->grad_sqr) != isnan(r->grad_var) ||
        !st_opt_time_ok(r->grad_sqr) || !st_opt_time_ok(r->grad_var) || r->grad_sqr < 0 ||
        r->grad_var < 0 || !st_opt_time_ok(r->progress) || r->progress < 0 ||
        !isfinite(r->sync_prior) || r->sync_prior < 0)
        return 0;
    for (size_t i = 0; i < r->nconfigs; i++)
        if (!st_report_config_ok(&r->configs[i]))
            return 0;
    return 1;
}

/* Inside a transaction: store one report of the job (checked by the caller). */
static int st_report_one(struct state *st, const char *job, const struct state_report *r,
                         double now)
{
    enum state_job_state cur = STATE_JOB_PENDING;
    long long id = 0;
    int rc;

    rc = st_job_find(st->db, job, &id, &cur);
    if (rc == 0 && st_job_final(cur))
        rc = ERR_CONFLICT;
    /* pooled: counts add, means are weighted by counts, variances combine with the spread of
     * the two means (every right-hand side reads the row as it was) */
    for (size_t i = 0; rc == 0 && i < r->nconfigs; i++) {
        const struct state_report_config *c = &r->configs[i];

        rc = st_run(st->db,
                    "INSERT INTO reports (job_id, nodes, replicas, local_bsz, accum_steps, count,"
                    " step_mean, step_var, sync_mean, at)"
                    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
                    " ON CONFLICT DO UPDATE SET count = count + excluded.count,"
                    " step_mean = (count * step_mean + excluded.count * excluded.step_mean)"
                    "  / (count + excluded.count),"
                    " step_var = (count * step_var + excluded.count * excluded.step_var"
                    "  + count * excluded.count * (step_mean - excluded.step_mean)"
                    "  * (step_mean - excluded.step_mean) / (count + excluded.count))"
                    "  / (count + excluded.count),"
                    " sync_mean = (count * sync_mean + excluded.count * excluded.sync_mean)"
                    "  / (count + excluded.count),"
                    " at = excluded.at",
                    "inndnidddd", id, c->nodes, c->replicas, c->local_bsz, c->accum_steps, c->count,
                    c->step_mean, c->step_sd * c->step_sd, c->sync_mean, now);
    }
    /* grad0: the first statistics, written by the report that brings the job's first (its
     * grad_sqr still NULL: a job reported before version 5 never gets one) and kept after */
    if (rc == 0)
        rc = st_run(st->db,
                    "UPDATE jobs SET grad0_sqr = iif(grad_sqr IS NULL, ?2, grad0_sqr),"
                    " grad0_var = iif(grad_sqr IS NULL, ?3, grad0_var),"
                    " grad_sqr = coalesce(?2, grad_sqr),"
                    " grad_var = coalesce(?3, grad_var), progress = coalesce(?4, progress),"
                    " reported_at = ?5, sync_prior = coalesce(?6, sync_prior) WHERE id = ?1",
                    "iddddd", id, r->grad_sqr, r->grad_var, r->progress, now,
                    r->sync_prior > 0 ? r->sync_prior : NAN);
    return rc;
}

/* An error that belongs to one report (the others of a batch may still be written). */
static int st_report_own_error(int rc)
{
    return rc == ERR_UNKNOWN || rc == ERR_CONFLICT || rc == ERR_INVAL || rc == ERR_RANGE;
}

int state_report_store_many(struct state *st, struct state_report_item *items, size_t n, double now)
{
    int rc;

    if (!items || n == 0 || !st_time_ok(now))
        return ERR_INVAL;
    rc = db_begin(st->db);
    if (rc < 0)
        goto out;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (!st_name_ok(items[i].job) || !st_report_ok(&items[i].report)) {
            items[i].rc = ERR_INVAL;
            continue;
        }
        /* each report under a savepoint: a refused one leaves no trace, the others stay */
        rc = db_exec(st->db, "SAVEPOINT report");
        if (rc < 0)
            break;
        items[i].rc = st_report_one(st, items[i].job, &items[i].report, now);
        if (items[i].rc < 0 && !st_report_own_error(items[i].rc)) {
            rc = items[i].rc;
            break;
        }
        if (items[i].rc < 0)
            rc = db_exec(st->db, "ROLLBACK TO report");
        if (rc == 0)
            rc = db_exec(st->db, "RELEASE report");
    }
    rc = st_end(st, rc);
out:
    if (rc < 0)
        for (size_t i = 0; i < n; i++)
            items[i].rc = rc;
    return rc;
}

int state_report_store(struct state *st, const char *job, const struct state_report *r, double now)
{
    struct state_report_item item = {job, {0}, 0};
    int rc;

    if (!st_name_ok(job) || !st_report_ok(r) || !st_time_ok(now))
        return ERR_INVAL;
    item.report = *r;
    rc = state_report_store_many(st, &item, 1, now);
    return rc < 0 ? rc : item.rc;
}

static int st_read_report(struct db_stmt *s, void *item)
{
    struct state_report_config *c = item;

    c->nodes = (int)db_column_int(s, 0);
    c->replicas = (int)db_column_int(s, 1);
    c->local_bsz = db_column_double(s, 2);
    c->accum_steps = (int)db_column_int(s, 3);
    c->count = db_column_int(s, 4);
    c->step_mean = db_column_double(s, 5);
    c->step_sd = sqrt(fmax(db_column_double(s, 6), 0.0));
    c->sync_mean = db_column_double(s, 7);
    c->at = db_column_double(s, 8);
    return 0;
}

static void st_clear_nothing(void *item)
{
    (void)item;
}

static const struct st_rows st_report_rows = {sizeof(struct state_report_config), st_read_report,
                                              st_clear_nothing};

int state_report_configs(struct state *st, const char *job, struct state_report_config **out,
                         size_t *n)
{
    enum state_job_state cur = STATE_JOB_PENDING;
    struct db_stmt *s = NULL;
    long long id = 0;
    int rc;

    if (!st_name_ok(job))
        return ERR_INVAL;
    rc = st_job_find(st->db, job, &id, &cur);
    if (rc == 0)
        rc = st_prepare(st->db, &s,
                        "SELECT nodes, replicas, local_bsz, accum_steps, count, step_mean,"
                        " step_var, sync_mean, at FROM reports WHERE job_id = ?1"
                        " ORDER BY nodes, replicas, local_bsz, accum_steps",
                        "i", id);
    if (rc < 0)
        return rc;
    return st_collect(s, &st_report_rows, (void **)out, n);
}

/* ---- model families ---- */

/* The family a job's spec names, as the index jobs_by_family has it (the same expression, so
 * that the queries search the index). */
#define ST_FAMILY "json_extract(spec, '$.family')"

static int st_read_family_config(struct db_stmt *s, void *item)
{
    struct state_family_config *c = item;

    c->job_id = db_column_int(s, 9); /* after the columns st_read_report reads */
    return st_read_report(s, &c->config);
}

static const struct st_rows st_family_rows = {sizeof(struct state_family_config),
                                              st_read_family_config, st_clear_nothing};

int state_family_configs(struct state *st, const char *family, const char *except,
                         struct state_family_config **out, size_t *n)
{
    struct db_stmt *s = NULL;
    int rc;

    if (!st_name_ok(family) || (except && !st_name_ok(except)))
        return ERR_INVAL;
    rc = st_prepare(st->db, &s,
                    "SELECT r.nodes, r.replicas, r.local_bsz, r.accum_steps, r.count,"
                    " r.step_mean, r.step_var, r.sync_mean, r.at, r.job_id"
                    " FROM jobs j JOIN reports r ON r.job_id = j.id"
                    " WHERE " ST_FAMILY " = ?1 AND j.name IS NOT ?2"
                    " ORDER BY j.id, r.nodes, r.replicas, r.local_bsz, r.accum_steps",
                    "tt", family, except);
    if (rc < 0)
        return rc;
    return st_collect(s, &st_family_rows, (void **)out, n);
}

int state_family_start_grad(struct state *st, const char *family, double m0, double *sqr,
                            double *var)
{
    struct db_stmt *s = NULL;
    int rc;

    if (!st_name_ok(family) || !sqr || !var || !(m0 > 0) || !isfinite(m0))
        return ERR_INVAL;
    /* grad_var is per M0-sized batch: times the job's own M0 it is the per-sample variance,
     * which jobs of one model share whatever batch they start at */
    rc = st_prepare(st->db, &s,
                    "SELECT count(*), avg(grad0_sqr),"
                    " avg(grad0_var * coalesce(json_extract(spec, '$.init_batch_size'), ?2))"
                    " FROM jobs WHERE " ST_FAMILY " = ?1 AND grad0_sqr IS NOT NULL",
                    "td", family, m0);
    if (rc < 0)
        return rc;
    rc = db_step(s);
    if (rc == DB_ROW && db_column_int(s, 0) > 0) {
        *sqr = db_column_double(s, 1);
        *var = db_column_double(s, 2) / m0;
        rc = 0;
    } else if (rc == DB_ROW) {
        rc = ERR_NOENT;
    } else if (rc == 0) {
        rc = ERR_INTERNAL;
    }
    db_finalize(s);
    return rc;
}

/* ---- the decision log and costs ---- */

int state_decision_append(struct state *st, long long tick, double now, const char *summary)
{
    if (tick < 0 || !st_time_ok(now) || !summary)
        return ERR_INVAL;
    return st_run(st->db, "INSERT INTO decisions (tick, at, summary) VALUES (?1, ?2, ?3)", "idt",
                  tick, now, summary);
}

int state_decision_last_tick(struct state *st, long long *tick)
{
    int rc = st_int(st->db, tick, "SELECT tick FROM decisions ORDER BY id DESC LIMIT 1", "");

    return rc == ERR_UNKNOWN ? ERR_EMPTY : rc;
}

int state_cost_add(struct state *st, const char *instance_id, double from, double to,
                   double dollars)
{
    if (!st_name_ok(instance_id) || !st_time_ok(from) || !st_time_ok(to) || to < from ||
        !st_time_ok(dollars) || dollars < 0)
        return ERR_INVAL;
    return st_update(st,
                     "INSERT INTO costs (node_id, start_at, end_at, dollars)"
                     " SELECT id, ?2, ?3, ?4 FROM nodes WHERE instance_id = ?1",
                     "tddd", instance_id, from, to, dollars);
}

int state_cost_total(struct state *st, double *dollars)
{
    struct db_stmt *s = NULL;
    int rc;

    rc = st_prepare(st->db, &s, "SELECT total(dollars) FROM costs", "");
    if (rc < 0)
        return rc;
    rc = db_step(s);
    if (rc == DB_ROW) {
        *dollars = db_column_double(s, 0);
        rc = 0;
    } else if (rc == 0) {
        rc = ERR_INTERNAL;
    }
    db_finalize(s);
    return rc;
}
