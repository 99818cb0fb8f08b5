/* state_jobs.c: the jobs in the controller's state: submitted, moved from state to state,
 * finished, their progress, checkpoints, restarts, replica failures and configuration from the
 * plan; read one by name or listed by state. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "control/state.h"
#include "control/state_internal.h"
#include "util/db.h"

static const char *const st_job_states[STATE_JOB_NSTATES] = {
    [STATE_JOB_PENDING] = "pending",   [STATE_JOB_RUNNING] = "running",
    [STATE_JOB_FINISHED] = "finished", [STATE_JOB_CANCELLED] = "cancelled",
    [STATE_JOB_FAILED] = "failed",
};

const char *state_job_state_name(enum state_job_state s)
{
    return (int)s >= 0 && (int)s < STATE_JOB_NSTATES ? st_job_states[s] : NULL;
}

int st_job_find(struct db *db, const char *name, long long *id, enum state_job_state *state)
{
    int v = 0, rc;

    rc = st_find(db, "SELECT id, state FROM jobs WHERE name = ?1", name, st_job_states,
                 STATE_JOB_NSTATES, id, &v);
    if (rc == 0)
        *state = (enum state_job_state)v;
    return rc;
}

#define ST_JOB_COLUMNS                                                                             \
    "id, name, spec, state, submitted_at, progress, checkpoint_progress, checkpoint_at, restarts," \
    " finished_at, local_bsz, accum_steps, lr_gain, grad_sqr, grad_var, reported_at, sync_prior,"  \
    " grad0_sqr, grad0_var, failures, failure_streak, failure, failure_at, dollars"

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
    j->failures = (int)db_column_int(s, 19);
    j->failure_streak = (int)db_column_int(s, 20);
    j->failure_at = st_col_time(s, 22);
    j->dollars = db_column_double(s, 23);
    return db_column_text_dup(s, 21, &j->failure);
}

static void st_clear_job(void *item)
{
    state_job_clear(item);
}

static const struct st_rows st_job_rows = {sizeof(struct state_job), st_read_job, st_clear_job};

int st_job_final(enum state_job_state s)
{
    return s == STATE_JOB_FINISHED || s == STATE_JOB_CANCELLED || s == STATE_JOB_FAILED;
}

/* The id of job name, which has not ended: ERR_UNKNOWN when there is none, ERR_CONFLICT when it is
 * finished, cancelled or failed. */
static int st_job_live(struct db *db, const char *name, long long *id)
{
    enum state_job_state cur = STATE_JOB_PENDING;
    int rc = st_job_find(db, name, id, &cur);

    return rc == 0 && st_job_final(cur) ? ERR_CONFLICT : rc;
}

/* Move job id to state to at now: a final state records finished_at and releases the job's
 * allocation. Within the caller's transaction. */
static int st_job_move(struct db *db, long long id, enum state_job_state to, double now)
{
    int rc = st_run(db, "UPDATE jobs SET state = ?2, finished_at = ?3 WHERE id = ?1", "itd", id,
                    st_job_states[to], st_job_final(to) ? now : NAN);

    if (rc == 0 && st_job_final(to))
        rc = st_job_release(db, id, now);
    return rc;
}

int st_job_release(struct db *db, long long id, double now)
{
    int rc = st_run(db,
                    "INSERT INTO node_jobs_held (node_id, job_id, until, since)"
                    " SELECT node_id, job_id, ?2, since FROM allocations WHERE job_id = ?1"
                    " ON CONFLICT (node_id, job_id) DO UPDATE SET until = excluded.until,"
                    " since = excluded.since",
                    "id", id, now);

    return rc == 0 ? st_run(db, "DELETE FROM allocations WHERE job_id = ?1", "i", id) : rc;
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
    rc = st_job_move(st->db, id, to, now);
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
    rc = st_job_move(st->db, id, STATE_JOB_FINISHED, now);
    if (rc == 0 && !isnan(progress))
        rc = st_run(st->db,
                    "UPDATE jobs SET progress = ?2, checkpoint_progress = ?2, checkpoint_at = ?3"
                    " WHERE id = ?1",
                    "idd", id, progress, now);
out:
    return st_end(st, rc);
}

/* A failure's reason: 1 to STATE_FAILURE_MAX bytes. */
static int st_failure_ok(const char *reason)
{
    return reason && reason[0] && strlen(reason) <= STATE_FAILURE_MAX;
}

/* The placement job id runs in: its first node's (by instance id) allocation time, as assignments
 * say it. ERR_UNKNOWN when it holds none. Within the caller's transaction. */
static int st_job_placed_at(struct db *db, long long id, double *out)
{
    return st_double(db, out,
                     "SELECT a.since FROM allocations a JOIN nodes n ON n.id = a.node_id"
                     " WHERE a.job_id = ?1 ORDER BY n.instance_id LIMIT 1",
                     "i", id);
}

/* 0 when node holds some of job id's replicas, ERR_RANGE when it holds none. Within the caller's
 * transaction. */
static int st_job_held_on(struct db *db, long long id, const char *node)
{
    long long held = 0;
    int rc = st_int(db, &held,
                    "SELECT count(*) FROM allocations a JOIN nodes n ON n.id = a.node_id"
                    " WHERE a.job_id = ?1 AND n.instance_id = ?2",
                    "it", id, node);

    return rc == 0 && held == 0 ? ERR_RANGE : rc;
}

int state_job_replica_failed(struct state *st, const char *name, const char *node, int attempt,
                             const char *reason, int max_restarts, double now,
                             enum state_failure_outcome *outcome, int *streak)
{
    enum state_failure_outcome out = STATE_FAILURE_STALE;
    long long id = 0, failures = 0, run = 0;
    double placed_at = NAN;
    int rc;

    if (!st_name_ok(name) || !st_name_ok(node) || attempt < 0 || !st_failure_ok(reason) ||
        max_restarts < 0 || !st_time_ok(now))
        return ERR_INVAL;
    rc = db_begin(st->db);
    if (rc < 0)
        return rc;
    rc = st_job_live(st->db, name, &id);
    if (rc == 0)
        rc = st_job_held_on(st->db, id, node);
    if (rc == 0)
        rc = st_int(st->db, &failures, "SELECT failures FROM jobs WHERE id = ?1", "i", id);
    if (rc == 0 && failures == attempt)
        rc = st_job_placed_at(st->db, id, &placed_at);
    /* counted: progress since the last failure (or none before) starts a new streak */
    if (rc == 0 && failures == attempt)
        rc = st_run(st->db,
                    "UPDATE jobs SET failures = failures + 1, failure_streak = CASE WHEN"
                    " failure_progress IS NULL OR progress > failure_progress THEN 1 ELSE"
                    " failure_streak + 1 END, failure_progress = progress, failure = ?2,"
                    " failure_at = ?3, failure_placed_at = ?4 WHERE id = ?1",
                    "itdd", id, reason, now, placed_at);
    if (rc == 0)
        rc = st_int(st->db, &run, "SELECT failure_streak FROM jobs WHERE id = ?1", "i", id);
    if (rc == 0 && failures == attempt)
        out = run > max_restarts ? STATE_FAILURE_FAILED : STATE_FAILURE_RESTART;
    if (rc == 0 && out == STATE_FAILURE_FAILED)
        rc = st_job_move(st->db, id, STATE_JOB_FAILED, now);
    rc = st_end(st, rc);
    if (rc < 0)
        return rc;
    if (outcome)
        *outcome = out;
    if (streak)
        *streak = (int)run;
    return 0;
}

int state_job_complete(struct state *st, const char *name, const char *node, int attempt,
                       double placed_at, double now, enum state_complete_outcome *outcome)
{
    enum state_job_state from = STATE_JOB_PENDING;
    enum state_complete_outcome out = STATE_COMPLETE_STALE;
    long long id = 0, failures = 0, peers = 0;
    double since = NAN;
    int rc;

    if (!st_name_ok(name) || !st_name_ok(node) || attempt < 0 || isinf(placed_at) ||
        !st_time_ok(now))
        return ERR_INVAL;
    if ((rc = db_begin(st->db)) < 0)
        return rc;
    rc = st_job_find(st->db, name, &id, &from);
    if (rc < 0 || from == STATE_JOB_FINISHED)
        goto out;
    if (from == STATE_JOB_CANCELLED) {
        rc = ERR_CONFLICT;
        goto out;
    }
    rc = st_int(st->db, &failures, "SELECT failures FROM jobs WHERE id = ?1", "i", id);
    /* the attempt the last counted failure ended, in its placement, from a node of that placement
     * (holding it still, or left from it: every row of a placement has its time): its other
     * ranks failed first; a job failed since by anything else (state_job_fail: no failure
     * placement) is not; a placement not said (NAN, bound as NULL) matches none */
    if (rc == 0 && failures == (long long)attempt + 1)
        rc = st_int(st->db, &peers,
                    "SELECT count(*) FROM jobs j WHERE j.id = ?1 AND j.failure_placed_at = ?2"
                    " AND (j.state <> ?3 OR j.finished_at = j.failure_at) AND (EXISTS (SELECT 1"
                    " FROM allocations a JOIN nodes n ON n.id = a.node_id WHERE a.job_id = ?1"
                    " AND n.instance_id = ?4 AND a.since = ?2) OR EXISTS (SELECT 1 FROM"
                    " node_jobs_held h JOIN nodes n ON n.id = h.node_id WHERE h.job_id = ?1"
                    " AND n.instance_id = ?4 AND h.since = ?2))",
                    "idtt", id, placed_at, st_job_states[STATE_JOB_FAILED], node);
    if (rc == 0 && peers) {
        if ((rc = st_job_move(st->db, id, STATE_JOB_FINISHED, now)) == 0)
            out = STATE_COMPLETE_PEERS;
        goto out;
    }
    if (rc == 0 && from == STATE_JOB_FAILED)
        rc = ERR_CONFLICT;
    if (rc == 0)
        rc = st_job_held_on(st->db, id, node);
    if (rc == 0 && !isnan(placed_at))
        rc = st_job_placed_at(st->db, id, &since);
    if (rc < 0 || failures != attempt || (!isnan(placed_at) && !(since == placed_at)))
        goto out;
    rc = st_job_move(st->db, id, STATE_JOB_FINISHED, now);
    if (rc == 0)
        out = STATE_COMPLETE_FINISHED;
out:
    rc = st_end(st, rc);
    if (rc == 0 && outcome)
        *outcome = out;
    return rc;
}

int state_job_fail(struct state *st, const char *name, const char *reason, double now)
{
    long long id = 0;
    int rc;

    if (!st_name_ok(name) || !st_failure_ok(reason) || !st_time_ok(now))
        return ERR_INVAL;
    if ((rc = db_begin(st->db)) < 0)
        return rc;
    if ((rc = st_job_live(st->db, name, &id)) == 0)
        rc = st_run(st->db,
                    "UPDATE jobs SET failure = ?2, failure_at = ?3, failure_placed_at = NULL"
                    " WHERE id = ?1",
                    "itd", id, reason, now);
    if (rc == 0)
        rc = st_job_move(st->db, id, STATE_JOB_FAILED, now);
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
    long long id = 0;
    int rc;

    if (!st_name_ok(name) || !st_time_ok(progress) || progress < 0 || !st_time_ok(now))
        return ERR_INVAL;
    if ((rc = db_begin(st->db)) < 0)
        return rc;
    /* the check and the write in one transaction: a job that ends meanwhile keeps its record;
     * one below the checkpoint recorded is a late report (of replicas of an earlier generation,
     * or a retried request) and is passed over: the record never goes back */
    if ((rc = st_job_live(st->db, name, &id)) == 0)
        rc = st_run(st->db,
                    "UPDATE jobs SET checkpoint_progress = ?2, checkpoint_at = ?3,"
                    " progress = max(progress, ?2) WHERE id = ?1 AND checkpoint_progress <= ?2",
                    "idd", id, progress, now);
    return st_end(st, rc);
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
    long long id = 0;
    int rc;

    if (!st_name_ok(name) || !st_time_ok(local_bsz) || local_bsz <= 0 || accum_steps < 0 ||
        !st_time_ok(lr_gain) || lr_gain <= 0)
        return ERR_INVAL;
    rc = db_begin(st->db);
    if (rc < 0)
        return rc;
    rc = st_job_live(st->db, name, &id);
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
    free(j->failure);
    j->name = NULL;
    j->spec = NULL;
    j->failure = NULL;
}

void state_jobs_free(struct state_job *jobs, size_t n)
{
    for (size_t i = 0; jobs && i < n; i++)
        state_job_clear(&jobs[i]);
    free(jobs);
}
