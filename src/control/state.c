/* state.c: the controller's durable state: the schema and its migrations, opening and closing,
 * and the statement helpers that the operations' files (state_jobs.c, state_reports.c,
 * state_nodes.c, state_log.c) share, one transaction per operation. */
#include "control/state.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/state_internal.h"
#include "util/db.h"
#include "util/file.h"

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
    /* v6: replicas that failed (exited with an error, or killed by a signal castor did not
     * send): every failure counted (each starts a new attempt), those in a row without progress,
     * the progress at the last one, and what and when it was */
    "ALTER TABLE jobs ADD COLUMN failures INTEGER NOT NULL DEFAULT 0 CHECK (failures >= 0);"
    "ALTER TABLE jobs ADD COLUMN failure_streak INTEGER NOT NULL DEFAULT 0"
    " CHECK (failure_streak >= 0);"
    "ALTER TABLE jobs ADD COLUMN failure_progress REAL CHECK (failure_progress >= 0);"
    "ALTER TABLE jobs ADD COLUMN failure TEXT CHECK (length(failure) BETWEEN 1 AND 512);"
    "ALTER TABLE jobs ADD COLUMN failure_at REAL;",
    /* v7: job events, for their owners: what happened to each job, and why */
    "CREATE TABLE events ("
    " id INTEGER PRIMARY KEY,"
    " job_id INTEGER NOT NULL REFERENCES jobs (id),"
    " at REAL NOT NULL,"
    " kind TEXT NOT NULL CHECK (length(kind) BETWEEN 1 AND 32),"
    " node TEXT CHECK (length(node) BETWEEN 1 AND 128),"
    " message TEXT NOT NULL CHECK (length(message) BETWEEN 1 AND 1024)"
    ") STRICT;"
    "CREATE INDEX events_by_job ON events (job_id, id);",
    /* v8: how long a node's agent takes, once the controller stops answering it, to stop its
     * replicas itself (its self-fence; NULL: it does not), so that a silent static node's jobs may
     * move safely */
    "ALTER TABLE nodes ADD COLUMN fence_s REAL CHECK (fence_s > 0);",
    /* v9: what each job cost: its share of its nodes' dollars (state_cost_add); the costs by their
     * end, for what a period cost (state_cost_since) */
    "ALTER TABLE jobs ADD COLUMN dollars REAL NOT NULL DEFAULT 0 CHECK (dollars >= 0);"
    "CREATE INDEX costs_by_end ON costs (end_at);",
    /* v10: the agent that registered each node (a random name it drew), so that the same agent
     * retrying a registration whose answer it lost is answered again */
    "ALTER TABLE nodes ADD COLUMN agent TEXT CHECK (length(agent) BETWEEN 16 AND 64);",
    /* v11: the replicas each node's agent said, in its last heartbeat, are alive there (running,
     * or stopping), by job and generation, so that a job's new replicas start only once those of
     * its past generations have stopped (state_job_stale_nodes) */
    "CREATE TABLE node_replicas ("
    " node_id INTEGER NOT NULL REFERENCES nodes (id),"
    " job TEXT NOT NULL CHECK (length(job) BETWEEN 1 AND 128),"
    " generation TEXT NOT NULL CHECK (length(generation) BETWEEN 1 AND 64),"
    " PRIMARY KEY (node_id, job, generation)"
    ") STRICT;"
    "CREATE INDEX node_replicas_by_job ON node_replicas (job);",
    /* v12: each job's dollars by the live node they were spent on (state_cost_add's shares), so
     * that a node the cloud did not bill is taken back from its jobs too (state_cost_refund); a
     * node's rows go when it terminates. Nodes live at the migration have none: taken back, they
     * leave their jobs' dollars as they were. */
    "CREATE TABLE node_job_costs ("
    " node_id INTEGER NOT NULL REFERENCES nodes (id),"
    " job_id INTEGER NOT NULL REFERENCES jobs (id),"
    " dollars REAL NOT NULL CHECK (dollars >= 0),"
    " PRIMARY KEY (node_id, job_id)"
    ") STRICT;",
    /* v13: the controller's own secrets (hex), drawn once and kept: the key of the nodes' own
     * tokens, which no token a worker holds may derive (state_secret); and until when each node
     * held each job it no longer holds, so that a node's heartbeat may say replicas are alive only
     * of jobs it holds or held lately (state_node_heartbeat) */
    "CREATE TABLE secrets ("
    " name TEXT PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 64),"
    " value TEXT NOT NULL CHECK (length(value) BETWEEN 32 AND 512)"
    ") STRICT;"
    "CREATE TABLE node_jobs_held ("
    " node_id INTEGER NOT NULL REFERENCES nodes (id),"
    " job_id INTEGER NOT NULL REFERENCES jobs (id),"
    " until REAL NOT NULL,"
    " PRIMARY KEY (node_id, job_id)"
    ") STRICT;",
    /* v14: what the instances terminated as strays cost (state_stray_charge): the cloud billed
     * them, and no node row explains them (a launch given up whose instance turned up later, a
     * second instance under one token, one still listed after its node was terminated). Kept
     * per instance and UTC hour as the nodes' costs are, under their offer, zone and market;
     * no job is charged. */
    "CREATE TABLE stray_costs ("
    " id INTEGER PRIMARY KEY,"
    " instance_id TEXT NOT NULL CHECK (length(instance_id) BETWEEN 1 AND 128),"
    " offer TEXT NOT NULL CHECK (length(offer) BETWEEN 1 AND 128),"
    " zone TEXT NOT NULL CHECK (length(zone) BETWEEN 1 AND 128),"
    " market TEXT NOT NULL CHECK (market IN ('on-demand', 'spot')),"
    " start_at REAL NOT NULL,"
    " end_at REAL NOT NULL CHECK (end_at >= start_at),"
    " dollars REAL NOT NULL CHECK (dollars >= 0)"
    ") STRICT;"
    "CREATE INDEX stray_costs_by_instance ON stray_costs (instance_id, end_at);"
    "CREATE INDEX stray_costs_by_end ON stray_costs (end_at);",
    /* v15: the placement (its first node's allocation time) of the attempt that the last counted
     * replica failure ended, NULL when the last failure was not a replica's (state_job_fail), and
     * the placement each node held a job in until it left it, so that rank 0's completion of
     * that attempt, told after its peers' failure by a node of that placement, still finishes the
     * job (state_job_complete). Jobs failed and nodes left before the migration have none. */
    "ALTER TABLE jobs ADD COLUMN failure_placed_at REAL;"
    "ALTER TABLE node_jobs_held ADD COLUMN since REAL;",
};

/* ---- checks, statements and rows ---- */

/* The index of text in names, or ERR_CORRUPT for text the schema's checks should have kept out. */
static int st_lookup(const char *const *names, int n, const char *text)
{
    for (int i = 0; text && i < n; i++)
        if (strcmp(names[i], text) == 0)
            return i;
    return ERR_CORRUPT;
}

int st_name_ok(const char *s)
{
    return s && s[0] && strlen(s) <= STATE_NAME_MAX;
}

int st_time_ok(double t)
{
    return isfinite(t);
}

int st_opt_time_ok(double t)
{
    return isnan(t) || isfinite(t);
}

/* st_prepare with the arguments to bind in ap. */
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

int st_prepare(struct db *db, struct db_stmt **out, const char *sql, const char *types, ...)
{
    va_list ap;
    int rc;

    va_start(ap, types);
    rc = st_vprepare(db, out, sql, types, ap);
    va_end(ap);
    return rc;
}

int st_run(struct db *db, const char *sql, const char *types, ...)
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

int st_update(struct state *st, const char *sql, const char *types, ...)
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

/* The first column of the first row as an integer (*i) or a number (*d). */
static int st_one(struct db *db, long long *i, double *d, const char *sql, const char *types,
                  va_list ap)
{
    struct db_stmt *s = NULL;
    int rc = st_vprepare(db, &s, sql, types, ap);

    if (rc < 0)
        return rc;
    rc = db_step(s);
    if (rc == DB_ROW) {
        if (i)
            *i = db_column_int(s, 0);
        else
            *d = db_column_double(s, 0);
        rc = 0;
    } else if (rc == 0) {
        rc = ERR_UNKNOWN;
    }
    db_finalize(s);
    return rc;
}

int st_int(struct db *db, long long *out, const char *sql, const char *types, ...)
{
    va_list ap;
    int rc;

    va_start(ap, types);
    rc = st_one(db, out, NULL, sql, types, ap);
    va_end(ap);
    return rc;
}

int st_double(struct db *db, double *out, const char *sql, const char *types, ...)
{
    va_list ap;
    int rc;

    va_start(ap, types);
    rc = st_one(db, NULL, out, sql, types, ap);
    va_end(ap);
    return rc;
}

int st_end(struct state *st, int rc)
{
    int crc;

    if (rc < 0) {
        db_rollback(st->db);
        return rc;
    }
    crc = db_commit(st->db);
    return crc < 0 ? crc : rc;
}

double st_col_time(struct db_stmt *s, int col)
{
    return db_column_is_null(s, col) ? NAN : db_column_double(s, col);
}

int st_col_enum(struct db_stmt *s, int col, const char *const *names, int n)
{
    return st_lookup(names, n, db_column_text(s, col));
}

int st_collect(struct db_stmt *s, const struct st_rows *kind, void **out, size_t *n)
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

int st_get_one(struct db *db, const char *sql, const char *key, const struct st_rows *kind,
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

int st_collect_by(struct db *db, enum st_key key, const char *name, const char *sql,
                  const struct st_rows *kind, void **out, size_t *n)
{
    enum state_job_state job_state = STATE_JOB_PENDING;
    enum state_node_state node_state = STATE_NODE_LAUNCHING;
    struct db_stmt *s = NULL;
    long long id = 0;
    int rc;

    if (!st_name_ok(name))
        return ERR_INVAL;
    rc = key == ST_KEY_JOB ? st_job_find(db, name, &id, &job_state)
                           : st_node_find(db, name, &id, &node_state);
    if (rc == 0)
        rc = st_prepare(db, &s, sql, "i", id);
    if (rc < 0)
        return rc;
    return st_collect(s, kind, out, n);
}

int st_list_by_state(struct db *db, const char *sql, const char *const *names, int count,
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

int st_find(struct db *db, const char *sql, const char *key, const char *const *names, int n,
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

int state_open_readonly(const char *path, struct state **out, int *version, struct error *e)
{
    struct state *st = NULL;
    long long app = 0, objects = 0;
    int rc, v = 0;

    st = calloc(1, sizeof(*st));
    if (!st)
        return err_set(e, ERR_NOMEM, path, 0, 0, NULL);
    rc = db_open_readonly(path, &st->db, e);
    if (rc < 0)
        goto out;
    rc = db_begin_read(st->db);
    if (rc == 0)
        rc = st_header(st->db, &app, &v, &objects);
    db_rollback(st->db);
    if (rc < 0) {
        err_set(e, rc, path, 0, 0, "cannot read the schema version: %s", db_errmsg(st->db));
        goto out;
    }
    if (app != ST_APPLICATION_ID || v < 1) {
        rc = err_set(e, ERR_INVAL, path, 0, 0,
                     "not a castor state database (application id %lld, version %d)", app, v);
        goto out;
    }
    if (v > STATE_SCHEMA_VERSION) {
        rc = err_set(e, ERR_RANGE, path, 0, 0,
                     "schema version %d is newer than this castor knows (%d): run a newer castor",
                     v, STATE_SCHEMA_VERSION);
        goto out;
    }
    if (version)
        *version = v;
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

int state_read_begin(struct state *st)
{
    return db_begin_read(st->db);
}

void state_read_end(struct state *st)
{
    db_rollback(st->db);
}

int state_version(struct state *st, int *out)
{
    return db_user_version(st->db, out);
}

struct db *state_db(struct state *st)
{
    return st->db;
}

int state_claim(const char *path, int *fd, struct error *e)
{
    char lock[4200];
    long holder = 0;
    int rc;

    if (!path || !fd || strlen(path) + 6 > sizeof(lock))
        return err_set(e, ERR_INVAL, path ? path : "", 0, 0, "a state's path is required");
    snprintf(lock, sizeof(lock), "%s.lock", path);
    rc = file_lock(lock, fd, &holder, e);
    if (rc == ERR_CONFLICT)
        return err_set(e, rc, path, 0, 0,
                       "another castor (pid %ld) is using this state: one controller per state "
                       "database; stop it first",
                       holder);
    return rc;
}
