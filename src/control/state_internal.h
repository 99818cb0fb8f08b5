/* state_internal.h: what state.c and the operations' files (state_jobs.c, state_reports.c,
 * state_nodes.c, state_log.c) share (private; not installed). */
#ifndef CASTOR_CONTROL_STATE_INTERNAL_H
#define CASTOR_CONTROL_STATE_INTERNAL_H

#include <stddef.h>

#include "control/state.h"
#include "util/db.h"

/* A state (state_open): its database connection. */
struct state {
    struct db *db;
};

/* A kind of row read into a struct: its size, how to fill a zeroed one from the current row
 * (on failure, what it filled is freed by clear) and how to free what it owns. */
struct st_rows {
    size_t elem;
    int (*read)(struct db_stmt *s, void *item);
    void (*clear)(void *item);
};

/* ---- checks, statements and rows (state.c) ---- */

/* A name or key the schema takes: 1 to STATE_NAME_MAX bytes. */
int st_name_ok(const char *s);

/* A known time: finite. */
int st_time_ok(double t);

/* An optional time: finite, or NAN (not known yet). */
int st_opt_time_ok(double t);

/* Prepare sql and bind the arguments that follow, one per character of types: 'i' long long,
 * 'n' int, 'x' long long or NULL when negative (an optional index), 'd' double (NAN binds NULL:
 * a time not known yet), 't' text (NULL binds NULL). */
int st_prepare(struct db *db, struct db_stmt **out, const char *sql, const char *types, ...);

/* Run one statement with binds (as st_prepare) to its end; rows it answers are passed over. */
int st_run(struct db *db, const char *sql, const char *types, ...);

/* Run one statement that writes, with binds (as st_prepare); ERR_UNKNOWN when it changed no row
 * (an UPDATE or INSERT ... SELECT that found nothing). */
int st_update(struct state *st, const char *sql, const char *types, ...);

/* Run one statement with binds that answers at most one integer; *out = that integer, or
 * ERR_UNKNOWN (out untouched) when it answers no row. */
int st_int(struct db *db, long long *out, const char *sql, const char *types, ...);

/* As st_int, the value as a number. */
int st_double(struct db *db, double *out, const char *sql, const char *types, ...);

/* End the transaction an operation began: commit when rc is not an error, else roll back.
 * Returns rc, or the commit's error. */
int st_end(struct state *st, int rc);

/* A column that holds a time, NAN for SQL NULL. */
double st_col_time(struct db_stmt *s, int col);

/* Column col's stored name as its index in names (ERR_CORRUPT for an unknown one). */
int st_col_enum(struct db_stmt *s, int col, const char *const *names, int n);

/* Read every row of s (stolen: finalized here) into a new array of kind's structs; on success
 * *out owns *n of them (NULL when 0). */
int st_collect(struct db_stmt *s, const struct st_rows *kind, void **out, size_t *n);

/* The one row of sql (a SELECT by a unique key bound as ?1) into *out, a struct of kind's; its
 * strings are then owned by *out. ERR_UNKNOWN when there is no such row. */
int st_get_one(struct db *db, const char *sql, const char *key, const struct st_rows *kind,
               void *out);

/* What st_collect_by names. */
enum st_key { ST_KEY_JOB, ST_KEY_NODE };

/* The rows of sql, which selects by the id of the job (ST_KEY_JOB) or node (ST_KEY_NODE, by
 * instance id) named name bound as ?1, into a new array of kind's structs (st_collect). ERR_INVAL
 * for a bad name, ERR_UNKNOWN when there is no such job or node. */
int st_collect_by(struct db *db, enum st_key key, const char *name, const char *sql,
                  const struct st_rows *kind, void **out, size_t *n);

/* The rows of sql, which selects by state IN (?1 .. ?count): state i is bound when its bit is in
 * mask, else NULL (which matches nothing). */
int st_list_by_state(struct db *db, const char *sql, const char *const *names, int count,
                     unsigned mask, const struct st_rows *kind, void **out, size_t *n);

/* The id and state (its index in names) of the row sql selects as (id, state) by a key bound as
 * ?1; ERR_UNKNOWN when there is none. */
int st_find(struct db *db, const char *sql, const char *key, const char *const *names, int n,
            long long *id, int *state);

/* ---- jobs (state_jobs.c) ---- */

/* state_jobs.c: the job's id and state by name; ERR_UNKNOWN when there is none. */
int st_job_find(struct db *db, const char *name, long long *id, enum state_job_state *state);

/* state_nodes.c: the node's id and state by instance id; ERR_UNKNOWN when there is none. */
int st_node_find(struct db *db, const char *instance_id, long long *id,
                 enum state_node_state *state);

/* state_jobs.c: a state a job does not leave: finished, cancelled or failed. */
int st_job_final(enum state_job_state s);

/* state_jobs.c: job id leaves its nodes at now: each keeps, in node_jobs_held, until when it held
 * the job and in which placement (its allocation time), and the allocation goes. Within the
 * caller's transaction. */
int st_job_release(struct db *db, long long id, double now);

#endif
