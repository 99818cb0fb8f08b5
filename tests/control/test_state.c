/* test_state.c: the controller's durable state: migrations (from nothing, from each older version
 * with its rows, refusing newer and foreign files), a file its owner's alone, backups (of an older
 * schema as it is), the rules of each operation and that a refused one writes nothing, atomic
 * allocation replacement, foreign keys, and a writer SIGKILLed mid-run. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "control/state.h"
#include "util/db.h"
#include "util/db_fixture.h"
#include "util/error.h"

static struct state *open_state(const struct tmpdb *t)
{
    struct state *st = NULL;
    struct error e = {0};

    if (state_open(t->path, &st, &e) != 0)
        fail_msg("%s: %s", t->path, e.msg);
    assert_non_null(st);
    return st;
}

static long long count_rows(struct state *st, const char *sql)
{
    return one_int(state_db(st), sql);
}

/* A booting spot node with gpus GPUs, launched at 100 s under token (NULL: none). */
static struct state_node node_of(const char *id, int gpus, const char *token, int index)
{
    struct state_node n = {0};

    n.instance_id = (char *)id;
    n.provider = "sim";
    n.offer = "g4dn.12xlarge";
    n.market = STATE_MARKET_SPOT;
    n.zone = "us-east-1a";
    n.gpus = gpus;
    n.state = STATE_NODE_BOOTING;
    n.launch_token = (char *)token;
    n.launch_index = index;
    n.launched_at = 100.0;
    n.ready_at = NAN;
    n.terminated_at = NAN;
    n.price = 3.912;
    return n;
}

/* Insert ready nodes named ids[0 .. n-1] (4 GPUs each, no token). */
static void add_ready_nodes(struct state *st, const char *const *ids, int n)
{
    for (int i = 0; i < n; i++) {
        struct state_node node = node_of(ids[i], 4, NULL, 0);

        assert_int_equal(state_node_upsert(st, &node), 0);
        assert_int_equal(state_node_set_state(st, ids[i], STATE_NODE_READY, 110.0), 0);
    }
}

/* The query plan's details for a constant query, joined by "; ". */
static const char *query_plan(struct db *db, const char *sql, char *buf, size_t size)
{
    struct db_stmt *s = NULL;
    size_t used = 0;
    int rc;

    buf[0] = '\0';
    assert_int_equal(db_prepare(db, sql, &s), 0);
    while ((rc = db_step(s)) == DB_ROW && used < size)
        used += (size_t)snprintf(buf + used, size - used, "%s; ", db_column_text(s, 3));
    assert_int_equal(rc, 0);
    db_finalize(s);
    return buf;
}

/* ---- migrations ---- */

/* A new file is migrated to the latest version: every table and version 2's indexes are there,
 * with castor's application id; opening it again changes nothing. */
static void state_open__new_file_at_latest_version(void **state)
{
    static const char *const objects[] = {"jobs",           "nodes",
                                          "allocations",    "models",
                                          "decisions",      "costs",
                                          "launch_intents", "jobs_by_state",
                                          "nodes_by_state", "allocations_by_node",
                                          "costs_by_node",  "reports",
                                          "jobs_by_family", "stray_costs"};
    const struct tmpdb *t = *state;
    struct state *st = open_state(t);
    struct db_stmt *s = NULL;
    int v = 0;

    assert_int_equal(state_version(st, &v), 0);
    assert_int_equal(v, STATE_SCHEMA_VERSION);
    assert_int_equal(one_int(state_db(st), "PRAGMA application_id"), 0x43535452);
    for (size_t i = 0; i < sizeof(objects) / sizeof(objects[0]); i++) {
        assert_int_equal(
            db_prepare(state_db(st), "SELECT count(*) FROM sqlite_master WHERE name = ?1", &s), 0);
        assert_int_equal(db_bind_text(s, 1, objects[i]), 0);
        assert_int_equal(db_step(s), DB_ROW);
        assert_int_equal(db_column_int(s, 0), 1);
        db_finalize(s);
    }
    assert_int_equal(state_job_submit(st, "a", "{}", 1.0), 0);
    state_close(st);
    st = open_state(t);
    assert_int_equal(state_version(st, &v), 0);
    assert_int_equal(v, STATE_SCHEMA_VERSION);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM jobs"), 1);
    state_close(st);
}

/* A version 1 database (made by applying migration 1 only) holding a job and a node is migrated
 * to version 2 at open: the data is kept field for field, and the jobs-by-state query, which
 * scanned the table at version 1, now searches version 2's index. */
static void state_open__migrates_v1_to_v2(void **state)
{
    static const char *const by_state = "EXPLAIN QUERY PLAN SELECT id FROM jobs WHERE state = 'x'";
    const struct tmpdb *t = *state;
    struct state_node node = node_of("i-1", 8, NULL, 0), got_node;
    struct state *st = NULL;
    struct state_job job;
    char plan[256];
    int v = 0;

    assert_int_equal(state_open_version(t->path, 1, &st, NULL), 0);
    assert_int_equal(state_version(st, &v), 0);
    assert_int_equal(v, 1);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM sqlite_master WHERE type = 'index'"
                                    " AND name = 'jobs_by_state'"),
                     0);
    assert_non_null(strstr(query_plan(state_db(st), by_state, plan, sizeof(plan)), "SCAN jobs"));
    assert_int_equal(state_job_submit(st, "resnet", "{\"m0\": 128}", 5.0), 0);
    assert_int_equal(state_job_checkpoint(st, "resnet", 2.5, 50.0), 0);
    assert_int_equal(state_node_upsert(st, &node), 0);
    state_close(st);

    st = open_state(t);
    assert_int_equal(state_version(st, &v), 0);
    assert_int_equal(v, STATE_SCHEMA_VERSION);
    assert_non_null(
        strstr(query_plan(state_db(st), by_state, plan, sizeof(plan)), "INDEX jobs_by_state"));
    assert_int_equal(state_job_get(st, "resnet", &job), 0);
    assert_string_equal(job.spec, "{\"m0\": 128}");
    assert_true(job.submitted_at == 5.0 && job.checkpoint_progress == 2.5 &&
                job.checkpoint_at == 50.0 && job.progress == 2.5);
    assert_int_equal(job.state, STATE_JOB_PENDING);
    state_job_clear(&job);
    assert_int_equal(state_node_get(st, "i-1", &got_node), 0);
    assert_int_equal(got_node.gpus, 8);
    assert_string_equal(got_node.offer, "g4dn.12xlarge");
    state_node_clear(&got_node);
    state_close(st);
}

/* Only versions this build knows can be asked for; *out stays put. */
static void state_open_version__out_of_range(void **state)
{
    const struct tmpdb *t = *state;
    struct state *st = NULL;
    struct error e = {0};

    assert_int_equal(state_open_version(t->path, 0, &st, &e), ERR_INVAL);
    assert_int_equal(state_open_version(t->path, STATE_SCHEMA_VERSION + 1, &st, &e), ERR_INVAL);
    assert_null(st);
}

/* A database from a newer castor is refused with a message that says so, and left as it was
 * (its version and its rows); asking for an older version than the file's is refused alike. */
static void state_open__refuses_newer_version(void **state)
{
    const struct tmpdb *t = *state;
    struct state *st = open_state(t);
    struct error e = {0};
    struct db *db = NULL;
    char want[128];
    int v = 0;

    assert_int_equal(state_job_submit(st, "a", "{}", 1.0), 0);
    assert_int_equal(db_set_user_version(state_db(st), STATE_SCHEMA_VERSION + 1), 0);
    state_close(st);
    st = NULL;
    assert_int_equal(state_open(t->path, &st, &e), ERR_RANGE);
    assert_null(st);
    assert_int_equal(e.code, ERR_RANGE);
    assert_string_equal(e.file, t->path);
    snprintf(want, sizeof(want), "schema version %d is newer than this castor knows (%d)",
             STATE_SCHEMA_VERSION + 1, STATE_SCHEMA_VERSION);
    assert_non_null(strstr(e.msg, want));
    assert_int_equal(db_open(t->path, &db, NULL), 0);
    assert_int_equal(db_user_version(db, &v), 0);
    assert_int_equal(v, STATE_SCHEMA_VERSION + 1);
    assert_int_equal(one_int(db, "SELECT count(*) FROM jobs"), 1);
    assert_int_equal(db_set_user_version(db, 2), 0);
    db_close(db);
    assert_int_equal(state_open_version(t->path, 1, &st, &e), ERR_RANGE);
    assert_null(st);
}

/* A SQLite file that is not castor's is refused and not touched: one with tables of its own
 * (no castor version), and one with another application id. */
static void state_open__refuses_foreign_database(void **state)
{
    const struct tmpdb *t = *state;
    struct state *st = NULL;
    struct error e = {0};
    struct db *db = NULL;

    assert_int_equal(db_open(t->path, &db, NULL), 0);
    assert_int_equal(db_exec(db, "CREATE TABLE other (x INTEGER)"), 0);
    db_close(db);
    assert_int_equal(state_open(t->path, &st, &e), ERR_INVAL);
    assert_non_null(strstr(e.msg, "not a castor state database"));
    assert_int_equal(db_open(t->path, &db, NULL), 0);
    assert_int_equal(one_int(db, "SELECT count(*) FROM sqlite_master"), 1);
    assert_int_equal(db_exec(db, "DROP TABLE other; PRAGMA application_id = 1234"), 0);
    db_close(db);
    assert_int_equal(state_open(t->path, &st, &e), ERR_INVAL);
    assert_non_null(strstr(e.msg, "application id 1234"));
    assert_null(st);
}

/* ---- jobs ---- */

/* A second job with a taken name is ERR_CONFLICT and writes nothing: the first keeps its spec,
 * time, state and progress. Invalid JSON, an empty or over-long name and a non-finite time are
 * ERR_INVAL, also writing nothing. */
static void state_job_submit__duplicate_name_changes_nothing(void **state)
{
    struct state *st = open_state(*state);
    char longname[STATE_NAME_MAX + 2];
    struct state_job job;

    assert_int_equal(state_job_submit(st, "bert", "{\"m0\": 32}", 10.0), 0);
    assert_int_equal(state_job_set_state(st, "bert", STATE_JOB_RUNNING, 20.0), 0);
    assert_int_equal(state_job_progress(st, "bert", 4.0), 0);
    assert_int_equal(state_job_submit(st, "bert", "{\"m0\": 64}", 30.0), ERR_CONFLICT);
    assert_int_equal(state_job_submit(st, "other", "{not json", 30.0), ERR_INVAL);
    assert_int_equal(state_job_submit(st, "", "{}", 30.0), ERR_INVAL);
    memset(longname, 'n', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    assert_int_equal(state_job_submit(st, longname, "{}", 30.0), ERR_INVAL);
    assert_int_equal(state_job_submit(st, "other", "{}", NAN), ERR_INVAL);
    assert_int_equal(state_job_submit(st, "other", "{}", INFINITY), ERR_INVAL);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM jobs"), 1);
    assert_int_equal(state_job_get(st, "bert", &job), 0);
    assert_string_equal(job.name, "bert");
    assert_string_equal(job.spec, "{\"m0\": 32}");
    assert_true(job.submitted_at == 10.0);
    assert_int_equal(job.state, STATE_JOB_RUNNING);
    assert_true(job.progress == 4.0);
    assert_true(isnan(job.checkpoint_at) && isnan(job.finished_at));
    state_job_clear(&job);
    assert_int_equal(state_job_get(st, "nobody", &job), ERR_UNKNOWN);
    state_close(st);
}

/* The allowed moves and the refused ones; a final state records its time and releases the
 * job's allocation; the same state again is a no-op; an unknown job is ERR_UNKNOWN. */
static void state_job_set_state__allowed_moves(void **state)
{
    static const char *const nodes[] = {"i-1"};
    struct state *st = open_state(*state);
    struct state_alloc row = {"i-1", 2, 0};
    struct state_job job;

    add_ready_nodes(st, nodes, 1);
    assert_int_equal(state_job_submit(st, "a", "{}", 1.0), 0);
    assert_int_equal(state_job_submit(st, "b", "{}", 2.0), 0);
    assert_int_equal(state_job_set_state(st, "a", STATE_JOB_FINISHED, 3.0), ERR_CONFLICT);
    assert_int_equal(state_job_set_state(st, "a", STATE_JOB_RUNNING, 3.0), 0);
    assert_int_equal(state_job_set_state(st, "a", STATE_JOB_PENDING, 4.0), 0);
    assert_int_equal(state_job_set_state(st, "a", STATE_JOB_RUNNING, 5.0), 0);
    assert_int_equal(state_job_set_state(st, "a", STATE_JOB_RUNNING, 6.0), 0);
    assert_int_equal(state_alloc_replace(st, "a", &row, 1, 6.0), 0);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM allocations"), 1);
    assert_int_equal(state_job_set_state(st, "a", STATE_JOB_FINISHED, 7.0), 0);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM allocations"), 0);
    assert_int_equal(state_job_set_state(st, "a", STATE_JOB_FINISHED, 9.0), 0);
    assert_int_equal(state_job_set_state(st, "a", STATE_JOB_RUNNING, 8.0), ERR_CONFLICT);
    assert_int_equal(state_job_set_state(st, "a", STATE_JOB_FAILED, 8.0), ERR_CONFLICT);
    assert_int_equal(state_job_get(st, "a", &job), 0);
    assert_int_equal(job.state, STATE_JOB_FINISHED);
    assert_true(job.finished_at == 7.0);
    state_job_clear(&job);
    assert_int_equal(state_job_set_state(st, "b", STATE_JOB_CANCELLED, 10.0), 0);
    assert_int_equal(state_job_set_state(st, "b", STATE_JOB_PENDING, 11.0), ERR_CONFLICT);
    assert_int_equal(state_job_set_state(st, "nobody", STATE_JOB_RUNNING, 1.0), ERR_UNKNOWN);
    assert_int_equal(state_job_set_state(st, "b", STATE_JOB_NSTATES, 1.0), ERR_INVAL);
    state_close(st);
}

/* Progress may go back (a restart from a checkpoint); a checkpoint sets its progress and time
 * and raises the progress to it; restarts count up; unknown jobs and negative progress fail, and
 * a job that has ended takes no checkpoint. */
static void state_job_checkpoint__progress_and_restarts(void **state)
{
    struct state *st = open_state(*state);
    struct state_job job;

    assert_int_equal(state_job_submit(st, "a", "{}", 1.0), 0);
    assert_int_equal(state_job_progress(st, "a", 5.0), 0);
    assert_int_equal(state_job_checkpoint(st, "a", 3.0, 100.0), 0);
    assert_int_equal(state_job_get(st, "a", &job), 0);
    assert_true(job.progress == 5.0 && job.checkpoint_progress == 3.0 &&
                job.checkpoint_at == 100.0);
    state_job_clear(&job);
    assert_int_equal(state_job_checkpoint(st, "a", 7.0, 200.0), 0);
    assert_int_equal(state_job_progress(st, "a", 7.5), 0);
    assert_int_equal(state_job_progress(st, "a", 7.0), 0); /* restarted from the checkpoint */
    assert_int_equal(state_job_restarted(st, "a"), 0);
    assert_int_equal(state_job_restarted(st, "a"), 0);
    assert_int_equal(state_job_progress(st, "a", -1.0), ERR_INVAL);
    assert_int_equal(state_job_checkpoint(st, "a", 1.0, NAN), ERR_INVAL);
    assert_int_equal(state_job_progress(st, "nobody", 1.0), ERR_UNKNOWN);
    assert_int_equal(state_job_checkpoint(st, "nobody", 1.0, 1.0), ERR_UNKNOWN);
    assert_int_equal(state_job_restarted(st, "nobody"), ERR_UNKNOWN);
    assert_int_equal(state_job_get(st, "a", &job), 0);
    assert_true(job.progress == 7.0 && job.checkpoint_progress == 7.0 &&
                job.checkpoint_at == 200.0);
    assert_int_equal(job.restarts, 2);
    state_job_clear(&job);
    /* an ended job's record stays as it ended */
    assert_int_equal(state_job_fail(st, "a", "gave up", 300.0), 0);
    assert_int_equal(state_job_checkpoint(st, "a", 9.0, 400.0), ERR_CONFLICT);
    assert_int_equal(state_job_get(st, "a", &job), 0);
    assert_true(job.progress == 7.0 && job.checkpoint_progress == 7.0 &&
                job.checkpoint_at == 200.0);
    state_job_clear(&job);
    state_close(st);
}

/* Lists follow the mask, in submission order; an empty result is NULL and 0. */
static void state_jobs_list__by_state_mask(void **state)
{
    static const char *const names[] = {"j0", "j1", "j2", "j3", "j4"};
    struct state *st = open_state(*state);
    struct state_job *jobs = NULL;
    size_t n = 99;

    for (int i = 0; i < 5; i++)
        assert_int_equal(state_job_submit(st, names[i], "[]", (double)i), 0);
    assert_int_equal(state_job_set_state(st, "j1", STATE_JOB_RUNNING, 10.0), 0);
    assert_int_equal(state_job_set_state(st, "j3", STATE_JOB_RUNNING, 10.0), 0);
    assert_int_equal(state_job_set_state(st, "j3", STATE_JOB_FINISHED, 11.0), 0);
    assert_int_equal(state_job_set_state(st, "j4", STATE_JOB_CANCELLED, 12.0), 0);

    assert_int_equal(state_jobs_list(st,
                                     STATE_MASK(STATE_JOB_PENDING) | STATE_MASK(STATE_JOB_RUNNING),
                                     &jobs, &n),
                     0);
    assert_int_equal(n, 3);
    assert_string_equal(jobs[0].name, "j0");
    assert_string_equal(jobs[1].name, "j1");
    assert_int_equal(jobs[1].state, STATE_JOB_RUNNING);
    assert_string_equal(jobs[2].name, "j2");
    state_jobs_free(jobs, n);
    assert_int_equal(state_jobs_list(st, STATE_MASK(STATE_JOB_FINISHED), &jobs, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(jobs[0].name, "j3");
    assert_true(jobs[0].finished_at == 11.0);
    state_jobs_free(jobs, n);
    assert_int_equal(state_jobs_list(st, STATE_MASK(STATE_JOB_FAILED), &jobs, &n), 0);
    assert_int_equal(n, 0);
    assert_null(jobs);
    assert_int_equal(state_jobs_list(st, ~0u, &jobs, &n), 0);
    assert_int_equal(n, 5);
    state_jobs_free(jobs, n);
    state_close(st);
}

/* ---- launch intents and nodes ---- */

/* An intent is recorded once per token, listed while pending, resolved once (again with the
 * same outcome is a no-op, with the other a conflict). */
static void state_intent__record_resolve_pending(void **state)
{
    struct state *st = open_state(*state);
    struct state_intent *in = NULL;
    size_t n = 0;

    assert_int_equal(state_intent_record(st, "tok-1", "p3.8xlarge", 2, 50.0), 0);
    assert_int_equal(state_intent_record(st, "tok-2", "g5.xlarge", 1, 51.0), 0);
    assert_int_equal(state_intent_record(st, "tok-1", "g5.xlarge", 1, 52.0), ERR_CONFLICT);
    assert_int_equal(state_intent_record(st, "tok-3", "g5.xlarge", 0, 52.0), ERR_INVAL);
    assert_int_equal(state_intents_pending(st, &in, &n), 0);
    assert_int_equal(n, 2);
    assert_string_equal(in[0].token, "tok-1");
    assert_string_equal(in[0].offer, "p3.8xlarge");
    assert_int_equal(in[0].count, 2);
    assert_true(in[0].created_at == 50.0 && isnan(in[0].resolved_at));
    assert_int_equal(in[0].state, STATE_INTENT_PENDING);
    assert_string_equal(in[1].token, "tok-2");
    state_intents_free(in, n);

    assert_int_equal(state_intent_resolve(st, "tok-1", STATE_INTENT_LAUNCHED, 60.0), 0);
    assert_int_equal(state_intent_resolve(st, "tok-1", STATE_INTENT_LAUNCHED, 61.0), 0);
    assert_int_equal(state_intent_resolve(st, "tok-1", STATE_INTENT_FAILED, 62.0), ERR_CONFLICT);
    assert_int_equal(state_intent_resolve(st, "tok-2", STATE_INTENT_PENDING, 62.0), ERR_INVAL);
    assert_int_equal(state_intent_resolve(st, "tok-9", STATE_INTENT_FAILED, 62.0), ERR_UNKNOWN);
    assert_int_equal(state_intents_pending(st, &in, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(in[0].token, "tok-2");
    state_intents_free(in, n);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM launch_intents WHERE token = 'tok-1'"
                                    " AND state = 'launched' AND resolved_at = 60.0"),
                     1);
    state_close(st);
}

/* Upsert inserts, then updates in place (same id); a token must name an intent and an index
 * below its count, (token, index) is one node's; a terminated node stays terminated. */
static void state_node_upsert__insert_update_rules(void **state)
{
    struct state *st = open_state(*state);
    struct state_node a = node_of("i-a", 4, "tok", 0), b = node_of("i-b", 4, "tok", 0), got;
    long long id;

    assert_int_equal(state_node_upsert(st, &a), ERR_CONFLICT); /* no intent yet */
    assert_int_equal(state_intent_record(st, "tok", "g4dn.12xlarge", 2, 90.0), 0);
    assert_int_equal(state_node_upsert(st, &a), 0);
    assert_int_equal(state_node_get(st, "i-a", &got), 0);
    id = got.id;
    assert_string_equal(got.provider, "sim");
    assert_string_equal(got.zone, "us-east-1a");
    assert_string_equal(got.launch_token, "tok");
    assert_int_equal(got.market, STATE_MARKET_SPOT);
    assert_int_equal(got.state, STATE_NODE_BOOTING);
    assert_true(got.price == 3.912 && got.launched_at == 100.0 && isnan(got.ready_at));
    state_node_clear(&got);

    a.gpus = 8;
    a.market = STATE_MARKET_ON_DEMAND;
    assert_int_equal(state_node_upsert(st, &a), 0);
    assert_int_equal(state_node_get(st, "i-a", &got), 0);
    assert_true(got.id == id && got.gpus == 8 && got.market == STATE_MARKET_ON_DEMAND);
    state_node_clear(&got);

    assert_int_equal(state_node_upsert(st, &b), ERR_CONFLICT); /* (tok, 0) is i-a's */
    b.launch_index = 2;
    assert_int_equal(state_node_upsert(st, &b), ERR_RANGE); /* the intent asked for 2 */
    b.launch_index = 1;
    b.gpus = -1;
    assert_int_equal(state_node_upsert(st, &b), ERR_INVAL);
    b.gpus = 4;
    assert_int_equal(state_node_upsert(st, &b), 0);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM nodes"), 2);

    a.state = STATE_NODE_TERMINATED;
    a.terminated_at = 300.0;
    assert_int_equal(state_node_upsert(st, &a), 0);
    a.state = STATE_NODE_READY;
    assert_int_equal(state_node_upsert(st, &a), ERR_CONFLICT);
    assert_int_equal(state_node_get(st, "i-a", &got), 0);
    assert_int_equal(got.state, STATE_NODE_TERMINATED);
    assert_true(got.terminated_at == 300.0);
    state_node_clear(&got);
    state_close(st);
}

/* Node moves: forward, or draining back to ready; ready records its first time only;
 * terminated is final and releases the node's allocations (other nodes' stay). */
static void state_node_set_state__moves_and_release(void **state)
{
    static const char *const ids[] = {"i-1", "i-2"};
    struct state *st = open_state(*state);
    struct state_alloc rows[] = {{"i-1", 2, 0}, {"i-2", 1, 0}};
    struct state_node *nodes = NULL, got;
    size_t n = 0;

    add_ready_nodes(st, ids, 2); /* ready at 110 */
    assert_int_equal(state_node_set_state(st, "i-1", STATE_NODE_BOOTING, 120.0), ERR_CONFLICT);
    assert_int_equal(state_node_set_state(st, "i-1", STATE_NODE_DRAINING, 130.0), 0);
    assert_int_equal(state_node_set_state(st, "i-1", STATE_NODE_READY, 140.0), 0);
    assert_int_equal(state_node_get(st, "i-1", &got), 0);
    assert_true(got.ready_at == 110.0);
    state_node_clear(&got);
    assert_int_equal(state_job_submit(st, "a", "{}", 1.0), 0);
    assert_int_equal(state_alloc_replace(st, "a", rows, 2, 150.0), 0);
    assert_int_equal(state_node_set_state(st, "i-1", STATE_NODE_TERMINATED, 160.0), 0);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM allocations"), 1);
    assert_int_equal(state_node_set_state(st, "i-1", STATE_NODE_READY, 170.0), ERR_CONFLICT);
    assert_int_equal(state_node_set_state(st, "i-1", STATE_NODE_TERMINATED, 180.0), 0);
    assert_int_equal(state_node_set_state(st, "i-9", STATE_NODE_READY, 180.0), ERR_UNKNOWN);
    assert_int_equal(state_nodes_list(st, STATE_MASK(STATE_NODE_TERMINATED), &nodes, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(nodes[0].instance_id, "i-1");
    assert_true(nodes[0].terminated_at == 160.0);
    state_nodes_free(nodes, n);
    assert_int_equal(state_nodes_list(st, STATE_MASK(STATE_NODE_READY), &nodes, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(nodes[0].instance_id, "i-2");
    state_nodes_free(nodes, n);
    state_close(st);
}

/* A node's price changes from now on; a bad price, an unknown node and a terminated one (its
 * bill closed) change nothing. */
static void state_node_set_price__live_nodes_only(void **state)
{
    static const char *const ids[] = {"i-1", "i-2"};
    struct state *st = open_state(*state);
    struct state_node got;

    add_ready_nodes(st, ids, 2);
    assert_int_equal(state_node_set_price(st, "i-1", 0.95), 0);
    assert_int_equal(state_node_set_price(st, "i-1", -1.0), ERR_INVAL);
    assert_int_equal(state_node_set_price(st, "i-1", NAN), ERR_INVAL);
    assert_int_equal(state_node_set_price(st, "i-9", 1.0), ERR_UNKNOWN);
    assert_int_equal(state_node_get(st, "i-1", &got), 0);
    assert_true(got.price == 0.95);
    state_node_clear(&got);
    assert_int_equal(state_node_set_state(st, "i-2", STATE_NODE_TERMINATED, 160.0), 0);
    assert_int_equal(state_node_get(st, "i-2", &got), 0);
    assert_int_equal(state_node_set_price(st, "i-2", got.price + 1), ERR_CONFLICT);
    state_node_clear(&got);
    assert_int_equal(state_node_set_price(st, "i-1", 0.0), 0); /* free: allowed */
    state_close(st);
}

/* ---- allocations ---- */

/* Check that job a holds exactly i-1 x2 and i-2 x1 since 10 s. */
static void expect_first_alloc(struct state *st)
{
    struct state_alloc *got = NULL;
    size_t n = 0;

    assert_int_equal(state_alloc_get(st, "a", &got, &n), 0);
    assert_int_equal(n, 2);
    assert_string_equal(got[0].node, "i-1");
    assert_int_equal(got[0].replicas, 2);
    assert_string_equal(got[1].node, "i-2");
    assert_int_equal(got[1].replicas, 1);
    assert_true(got[0].since == 10.0 && got[1].since == 10.0);
    state_allocs_free(got, n);
}

/* Replacing a job's allocation is all or nothing: a replacement that fails part way (an unknown
 * node after a good one, a node named twice, a terminated node, a finished job) leaves the old
 * rows exactly as they were; a good one replaces them whole; an empty one clears them. */
static void state_alloc_replace__all_or_nothing(void **state)
{
    static const char *const ids[] = {"i-1", "i-2", "i-3", "i-4"};
    struct state *st = open_state(*state);
    struct state_alloc first[] = {{"i-1", 2, 0}, {"i-2", 1, 0}};
    struct state_alloc unknown[] = {{"i-3", 4, 0}, {"i-99", 1, 0}};
    struct state_alloc twice[] = {{"i-3", 1, 0}, {"i-3", 2, 0}};
    struct state_alloc dead[] = {{"i-3", 1, 0}, {"i-4", 1, 0}};
    struct state_alloc zero[] = {{"i-3", 0, 0}};
    struct state_alloc second[] = {{"i-3", 4, 0}};
    struct state_alloc *got = NULL;
    size_t n = 0;

    add_ready_nodes(st, ids, 4);
    assert_int_equal(state_node_set_state(st, "i-4", STATE_NODE_TERMINATED, 5.0), 0);
    assert_int_equal(state_job_submit(st, "a", "{}", 1.0), 0);
    assert_int_equal(state_alloc_replace(st, "a", first, 2, 10.0), 0);
    expect_first_alloc(st);
    assert_int_equal(state_alloc_replace(st, "a", unknown, 2, 20.0), ERR_UNKNOWN);
    expect_first_alloc(st);
    assert_int_equal(state_alloc_replace(st, "a", twice, 2, 20.0), ERR_CONFLICT);
    expect_first_alloc(st);
    assert_int_equal(state_alloc_replace(st, "a", dead, 2, 20.0), ERR_CONFLICT);
    expect_first_alloc(st);
    assert_int_equal(state_alloc_replace(st, "a", zero, 1, 20.0), ERR_INVAL);
    expect_first_alloc(st);
    assert_int_equal(state_alloc_replace(st, "nobody", second, 1, 20.0), ERR_UNKNOWN);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM allocations"), 2);

    assert_int_equal(state_alloc_replace(st, "a", second, 1, 30.0), 0);
    assert_int_equal(state_alloc_get(st, "a", &got, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(got[0].node, "i-3");
    assert_int_equal(got[0].replicas, 4);
    assert_true(got[0].since == 30.0);
    state_allocs_free(got, n);
    assert_int_equal(state_alloc_replace(st, "a", NULL, 0, 40.0), 0);
    assert_int_equal(state_alloc_get(st, "a", &got, &n), 0);
    assert_int_equal(n, 0);
    assert_null(got);
    assert_int_equal(state_job_set_state(st, "a", STATE_JOB_CANCELLED, 50.0), 0);
    assert_int_equal(state_alloc_replace(st, "a", second, 1, 60.0), ERR_CONFLICT);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM allocations"), 0);
    state_close(st);
}

/* A placement and its configuration are written together or not at all: with the rows, the
 * configuration reads back; a replacement that fails (an unknown node) or a bad configuration
 * leaves both as they were; NULL keeps the configuration. */
static void state_alloc_replace_config__with_the_rows(void **state)
{
    static const char *const ids[] = {"i-1", "i-2", "i-3", "i-4"};
    struct state *st = open_state(*state);
    struct state_alloc first[] = {{"i-1", 2, 0}, {"i-2", 1, 0}};
    struct state_alloc unknown[] = {{"i-3", 4, 0}, {"i-99", 1, 0}};
    struct state_alloc second[] = {{"i-3", 4, 0}};
    const struct state_job_config c1 = {48.0, 1, 1.5}, c2 = {64.0, 0, 2.0}, bad = {0.0, 0, 1.0};
    struct state_job job;

    add_ready_nodes(st, ids, 4);
    assert_int_equal(state_job_submit(st, "a", "{}", 1.0), 0);
    assert_int_equal(state_alloc_replace_config(st, "a", first, 2, 10.0, &c1), 0);
    expect_first_alloc(st);
    assert_int_equal(state_job_get(st, "a", &job), 0);
    assert_true(job.local_bsz == 48.0 && job.accum_steps == 1 && job.lr_gain == 1.5);
    state_job_clear(&job);
    assert_int_equal(state_alloc_replace_config(st, "a", unknown, 2, 20.0, &c2), ERR_UNKNOWN);
    assert_int_equal(state_alloc_replace_config(st, "a", second, 1, 20.0, &bad), ERR_INVAL);
    expect_first_alloc(st);
    assert_int_equal(state_job_get(st, "a", &job), 0);
    assert_true(job.local_bsz == 48.0 && job.accum_steps == 1 && job.lr_gain == 1.5);
    state_job_clear(&job);
    assert_int_equal(state_alloc_replace_config(st, "a", second, 1, 30.0, NULL), 0);
    assert_int_equal(state_job_get(st, "a", &job), 0);
    assert_true(job.local_bsz == 48.0 && job.accum_steps == 1 && job.lr_gain == 1.5);
    state_job_clear(&job);
    state_close(st);
}

/* A secret is drawn once and kept: the first call keeps the bytes it is given, later ones (and a
 * reopened state) give those back whatever fresh bytes they bring; bad arguments are refused. */
static void state_secret__kept_once(void **state)
{
    struct state *st = open_state(*state);
    unsigned char a[32], b[32], got[32], again[32];

    for (int i = 0; i < 32; i++) {
        a[i] = (unsigned char)(i * 7 + 1);
        b[i] = (unsigned char)(255 - i);
    }
    assert_int_equal(state_secret(st, "node-token-key", a, 32, got), 0);
    assert_memory_equal(got, a, 32);
    assert_int_equal(state_secret(st, "node-token-key", b, 32, again), 0);
    assert_memory_equal(again, a, 32);
    assert_int_equal(state_secret(st, "other", b, 32, again), 0);
    assert_memory_equal(again, b, 32);
    assert_int_equal(state_secret(st, "node-token-key", b, 8, again), ERR_INVAL);
    assert_int_equal(state_secret(st, "", b, 32, again), ERR_INVAL);
    assert_int_equal(state_secret(st, "node-token-key", b, 16, again), ERR_CORRUPT); /* 32 kept */
    state_close(st);
    st = open_state(*state);
    assert_int_equal(state_secret(st, "node-token-key", b, 32, again), 0);
    assert_memory_equal(again, a, 32);
    state_close(st);
}

/* A heartbeat says alive only replicas of jobs the node holds, or held within
 * STATE_HELD_RECENT_S: a node that never ran job a cannot make a's other nodes wait for it (a
 * worker taken over could hold back any job); one a moved away from can, for an hour. */
static void state_node_heartbeat__only_jobs_it_held(void **state)
{
    static const char *const ids[] = {"i-1", "i-2", "i-3"};
    static const struct state_alive alive[] = {{"a", "old"}};
    struct state *st = open_state(*state);
    struct state_alloc on1[] = {{"i-1", 1, 0}}, on2[] = {{"i-2", 1, 0}};
    char **stale = NULL;
    size_t n = 0;

    add_ready_nodes(st, ids, 3);
    assert_int_equal(state_job_submit(st, "a", "{}", 1.0), 0);
    assert_int_equal(state_alloc_replace(st, "a", on1, 1, 10.0), 0);
    assert_int_equal(state_alloc_replace(st, "a", on2, 1, 20.0), 0);      /* moved from i-1 */
    assert_int_equal(state_node_heartbeat(st, "i-3", 30.0, alive, 1), 0); /* never held it */
    assert_int_equal(state_node_heartbeat(st, "i-1", 30.0, alive, 1), 0); /* held it */
    assert_int_equal(state_job_stale_nodes(st, "a", "new", "i-2", 31.0, &stale, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(stale[0], "i-1");
    state_strv_free(stale, n);
    /* an hour after it was moved away, i-1's word no longer counts either */
    assert_int_equal(state_node_heartbeat(st, "i-1", 20.0 + STATE_HELD_RECENT_S + 1, alive, 1), 0);
    assert_int_equal(
        state_job_stale_nodes(st, "a", "new", "i-2", 20.0 + STATE_HELD_RECENT_S + 2, &stale, &n),
        0);
    assert_int_equal(n, 0);
    state_strv_free(stale, n);
    state_close(st);
}

/* A read snapshot (state_read_begin) sees the state as one moment: the loop's connection replaces
 * the job's allocation between two reads of the API's connection, and the second read still
 * sees the first rows (so an answer built from both cannot mix them); once it ends, the new rows.
 * A snapshot inside an open one is refused. */
static void state_read_begin__one_moment(void **state)
{
    static const char *const ids[] = {"i-1", "i-2", "i-3", "i-4"};
    struct state *api = open_state(*state), *loop = open_state(*state);
    struct state_alloc first[] = {{"i-1", 2, 0}, {"i-2", 1, 0}};
    struct state_alloc second[] = {{"i-3", 4, 0}};
    struct state_node_job *jobs = NULL;
    struct state_alloc *got = NULL;
    size_t n = 0;

    add_ready_nodes(loop, ids, 4);
    assert_int_equal(state_job_submit(loop, "a", "{}", 1.0), 0);
    assert_int_equal(state_alloc_replace(loop, "a", first, 2, 10.0), 0);
    assert_int_equal(state_read_begin(api), 0);
    assert_int_equal(state_read_begin(api), ERR_INVAL);
    assert_int_equal(state_node_jobs(api, "i-1", &jobs, &n), 0);
    assert_int_equal(n, 1);
    state_node_jobs_free(jobs, n);
    assert_int_equal(state_alloc_replace(loop, "a", second, 1, 20.0), 0); /* not blocked */
    expect_first_alloc(api);
    state_read_end(api);
    assert_int_equal(state_alloc_get(api, "a", &got, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(got[0].node, "i-3");
    state_allocs_free(got, n);
    state_read_end(api); /* none open: nothing */
    state_close(loop);
    state_close(api);
}

/* Run a constant statement with one integer bind; its code. */
static int exec_int(struct state *st, const char *sql, long long v)
{
    struct db_stmt *s = NULL;
    int rc;

    assert_int_equal(db_prepare(state_db(st), sql, &s), 0);
    assert_int_equal(db_bind_int(s, 1, v), 0);
    rc = db_step(s);
    db_finalize(s);
    return rc;
}

/* The schema's foreign keys hold even for writes that bypass the API: rows that point nowhere
 * and deletes of rows still pointed to are ERR_CONFLICT, and the file has no dangling key. */
static void state_foreign_keys__enforced(void **state)
{
    static const char *const ids[] = {"i-1"};
    struct state *st = open_state(*state);
    struct state_alloc row = {"i-1", 1, 0};

    add_ready_nodes(st, ids, 1);
    assert_int_equal(state_job_submit(st, "a", "{}", 1.0), 0);
    assert_int_equal(state_alloc_replace(st, "a", &row, 1, 2.0), 0);
    assert_int_equal(state_cost_add(st, "i-1", 0.0, 3600.0, 3.9), 0);
    assert_int_equal(exec_int(st, "INSERT INTO allocations VALUES (?1, 1, 1, 0.0)", 999),
                     ERR_CONFLICT);
    assert_int_equal(exec_int(st, "INSERT INTO models VALUES (?1, '{}', '{}', 0.0)", 999),
                     ERR_CONFLICT);
    assert_int_equal(exec_int(st,
                              "INSERT INTO costs (node_id, start_at, end_at, dollars)"
                              " VALUES (?1, 0, 1, 1)",
                              999),
                     ERR_CONFLICT);
    assert_int_equal(exec_int(st, "UPDATE nodes SET launch_token = 'nope', launch_index = ?1", 0),
                     ERR_CONFLICT);
    assert_int_equal(exec_int(st, "DELETE FROM jobs WHERE id = ?1", 1), ERR_CONFLICT);
    assert_int_equal(exec_int(st, "DELETE FROM nodes WHERE id = ?1", 1), ERR_CONFLICT);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM jobs"), 1);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM nodes"), 1);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM pragma_foreign_key_check"), 0);
    state_close(st);
}

/* ---- models, decisions, costs ---- */

/* One model per job, replaced by the next; bad JSON is refused and keeps the old one. */
static void state_model__store_and_replace(void **state)
{
    struct state *st = open_state(*state);
    struct state_model m;

    assert_int_equal(state_job_submit(st, "a", "{}", 1.0), 0);
    assert_int_equal(state_model_get(st, "a", &m), ERR_EMPTY);
    assert_int_equal(state_model_store(st, "a", "[1, 2]", "{\"sqr\": 1}", 10.0), 0);
    assert_int_equal(state_model_store(st, "a", "[3, 4]", "{\"sqr\": 2}", 20.0), 0);
    assert_int_equal(state_model_store(st, "a", "[5", "{}", 30.0), ERR_INVAL);
    assert_int_equal(state_model_store(st, "a", "[]", "nope", 30.0), ERR_INVAL);
    assert_int_equal(state_model_store(st, "nobody", "[]", "{}", 30.0), ERR_UNKNOWN);
    assert_int_equal(state_model_get(st, "nobody", &m), ERR_UNKNOWN);
    assert_int_equal(state_model_get(st, "a", &m), 0);
    assert_string_equal(m.params, "[3, 4]");
    assert_string_equal(m.grad_stats, "{\"sqr\": 2}");
    assert_true(m.fitted_at == 20.0);
    state_model_clear(&m);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM models"), 1);
    state_close(st);
}

/* The decision log appends (the last tick reads back; bad JSON is refused) and costs add up
 * (an unknown node or a backwards interval is refused and adds nothing). */
static void state_decision_and_cost__append_and_total(void **state)
{
    static const char *const ids[] = {"i-1", "i-2"};
    struct state *st = open_state(*state);
    long long tick = -1;
    double total = -1.0;

    assert_int_equal(state_decision_last_tick(st, &tick), ERR_EMPTY);
    assert_int_equal(tick, -1);
    assert_int_equal(state_decision_append(st, 0, 60.0, "{\"jobs\": 0}"), 0);
    assert_int_equal(state_decision_append(st, 1, 120.0, "{\"jobs\": 2}"), 0);
    assert_int_equal(state_decision_append(st, 2, 180.0, "{jobs"), ERR_INVAL);
    assert_int_equal(state_decision_append(st, -1, 180.0, "{}"), ERR_INVAL);
    assert_int_equal(state_decision_last_tick(st, &tick), 0);
    assert_int_equal(tick, 1);

    assert_int_equal(state_cost_total(st, &total), 0);
    assert_true(total == 0.0);
    add_ready_nodes(st, ids, 2);
    assert_int_equal(state_cost_add(st, "i-1", 0.0, 3600.0, 3.912), 0);
    assert_int_equal(state_cost_add(st, "i-2", 0.0, 1800.0, 0.5), 0);
    assert_int_equal(state_cost_add(st, "i-9", 0.0, 1800.0, 0.5), ERR_UNKNOWN);
    assert_int_equal(state_cost_add(st, "i-1", 10.0, 5.0, 0.5), ERR_INVAL);
    assert_int_equal(state_cost_add(st, "i-1", 0.0, 5.0, -0.5), ERR_INVAL);
    assert_int_equal(state_cost_total(st, &total), 0);
    assert_float_equal(total, 4.412, 1e-12);
    state_close(st);
}

/* Each node's cost is shared by the jobs on it, by their GPUs there: a 4-GPU node with job a on 1
 * and job b on 2 gives a a quarter and b a half; the idle quarter goes to no job. A node with no
 * job gives nothing; a refused cost gives nothing either. A job keeps what it got after it ends. */
static void state_cost_add__shared_by_the_jobs_on_the_node(void **state)
{
    static const char *const ids[] = {"i-1", "i-2"};
    struct state *st = open_state(*state);
    struct state_alloc a_rows[] = {{"i-1", 1, 0}}, b_rows[] = {{"i-1", 2, 0}, {"i-2", 4, 0}};
    struct state_job job;
    double total = -1;
    struct state_costs costs = {0};

    add_ready_nodes(st, ids, 2); /* 4 GPUs each */
    assert_int_equal(state_job_submit(st, "a", "{}", 1.0), 0);
    assert_int_equal(state_job_submit(st, "b", "{}", 1.0), 0);
    assert_int_equal(state_job_submit(st, "c", "{}", 1.0), 0);
    assert_int_equal(state_alloc_replace(st, "a", a_rows, 1, 2.0), 0);
    assert_int_equal(state_alloc_replace(st, "b", b_rows, 2, 2.0), 0);
    assert_int_equal(state_cost_add(st, "i-1", 0.0, 3600.0, 4.0), 0);
    assert_int_equal(state_cost_add(st, "i-2", 0.0, 3600.0, 2.0), 0);
    assert_int_equal(state_cost_add(st, "i-9", 0.0, 3600.0, 100.0), ERR_UNKNOWN);
    assert_int_equal(state_job_get(st, "a", &job), 0);
    assert_float_equal(job.dollars, 1.0, 1e-12);
    state_job_clear(&job);
    assert_int_equal(state_job_get(st, "b", &job), 0);
    assert_float_equal(job.dollars, 2.0 + 2.0, 1e-12);
    state_job_clear(&job);
    assert_int_equal(state_job_get(st, "c", &job), 0);
    assert_true(job.dollars == 0.0);
    state_job_clear(&job);
    assert_int_equal(state_cost_total(st, &total), 0);
    assert_int_equal(state_cost_split(st, &costs), 0);
    assert_float_equal(total, 6.0, 1e-12);
    assert_float_equal(costs.spent, 6.0, 1e-12);
    assert_float_equal(costs.jobs, 5.0, 1e-12); /* i-1's idle GPU: $1 on no job */
    assert_float_equal(costs.idle, 1.0, 1e-12);
    /* a ends: its allocation goes, its dollars stay; i-1 then costs b and idle GPUs only */
    assert_int_equal(state_job_set_state(st, "a", STATE_JOB_CANCELLED, 5.0), 0);
    assert_int_equal(state_cost_add(st, "i-1", 3600.0, 7200.0, 4.0), 0);
    assert_int_equal(state_job_get(st, "a", &job), 0);
    assert_float_equal(job.dollars, 1.0, 1e-12);
    state_job_clear(&job);
    assert_int_equal(state_job_get(st, "b", &job), 0);
    assert_float_equal(job.dollars, 6.0, 1e-12);
    state_job_clear(&job);
    state_close(st);
}

/* job's dollars. */
static double job_dollars(struct state *st, const char *name)
{
    struct state_job job;
    double d;

    assert_int_equal(state_job_get(st, name, &job), 0);
    d = job.dollars;
    state_job_clear(&job);
    return d;
}

/* A node the cloud did not bill is taken back whole: its costs (so the fleet's total and every
 * period's spend) and each job's share of it, which a job that also held another node keeps for
 * that one (b: $2 on i-1 taken back, $2 on i-2 kept; a ended before, its $1 on i-1 taken back
 * too); its price is 0 from then on. Taken back twice, nothing more goes; a terminated node's
 * shares are gone (ERR_CONFLICT), and so is an unknown node (ERR_UNKNOWN). */
static void state_cost_refund__takes_back_the_node_and_its_shares(void **state)
{
    static const char *const ids[] = {"i-1", "i-2"};
    struct state *st = open_state(*state);
    struct state_alloc a_rows[] = {{"i-1", 1, 0}}, b_rows[] = {{"i-1", 2, 0}, {"i-2", 4, 0}};
    struct state_node node;
    struct state_cost_share *shares = NULL;
    size_t nshares = 0;
    double back = -1, since = -1;

    add_ready_nodes(st, ids, 2); /* 4 GPUs each */
    assert_int_equal(state_job_submit(st, "a", "{}", 1.0), 0);
    assert_int_equal(state_job_submit(st, "b", "{}", 1.0), 0);
    assert_int_equal(state_alloc_replace(st, "a", a_rows, 1, 2.0), 0);
    assert_int_equal(state_alloc_replace(st, "b", b_rows, 2, 2.0), 0);
    assert_int_equal(state_cost_add(st, "i-1", 0.0, 1800.0, 2.0), 0);
    assert_int_equal(state_cost_add(st, "i-2", 0.0, 3600.0, 2.0), 0);
    assert_int_equal(state_job_set_state(st, "a", STATE_JOB_CANCELLED, 1900.0), 0);
    assert_int_equal(state_cost_add(st, "i-1", 1800.0, 3600.0, 2.0), 0);
    assert_float_equal(job_dollars(st, "a"), 0.5, 1e-12);
    assert_float_equal(job_dollars(st, "b"), 1.0 + 1.0 + 2.0, 1e-12);

    assert_int_equal(state_cost_refund(st, "i-1", &back, &shares, &nshares), 0);
    assert_float_equal(back, 4.0, 1e-12);
    assert_int_equal(nshares, 2); /* by job: a's $0.50, b's $2 */
    assert_string_equal(shares[0].job, "a");
    assert_float_equal(shares[0].dollars, 0.5, 1e-12);
    assert_string_equal(shares[1].job, "b");
    assert_float_equal(shares[1].dollars, 2.0, 1e-12);
    state_cost_shares_free(shares, nshares);
    assert_float_equal(job_dollars(st, "a"), 0.0, 1e-12);
    assert_float_equal(job_dollars(st, "b"), 2.0, 1e-12);
    assert_int_equal(state_cost_since(st, 0.0, &since), 0);
    assert_float_equal(since, 2.0, 1e-12);
    assert_int_equal(state_node_get(st, "i-1", &node), 0);
    assert_true(node.price == 0.0);
    state_node_clear(&node);
    assert_int_equal(state_cost_refund(st, "i-1", &back, NULL, NULL), 0);
    assert_true(back == 0.0);
    assert_float_equal(job_dollars(st, "b"), 2.0, 1e-12);
    assert_int_equal(state_cost_refund(st, "i-9", &back, NULL, NULL), ERR_UNKNOWN);
    assert_int_equal(state_node_set_state(st, "i-2", STATE_NODE_TERMINATED, 4000.0), 0);
    assert_int_equal(state_cost_refund(st, "i-2", NULL, NULL, NULL), ERR_CONFLICT);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM node_job_costs"), 0);
    assert_float_equal(job_dollars(st, "b"), 2.0, 1e-12);
    state_close(st);
}

/* The dollars recorded for instance id, in millionths. */
static long long node_micros(struct state *st, const char *id)
{
    return node_cost_micros(state_db(st), id);
}

/* Ticks record each node's part of each span at its price ($3.60/h: $0.001 a second), each second
 * once: i-1, launched at 100 under a token and terminated at 120 (cancelled while booting), is
 * billed the clouds' minute, 100 to 160, over the spans that reach it ($0.06, not $0.02); a
 * static node (no token) taken down at 130 is billed to 130 only ($0.02 from 110); i-3, launched
 * at 140 and alive, from its launch ($0.12 at 260); a node at price 0 adds nothing. A span that
 * ends before it starts is refused. */
static void state_cost_accrue__spans_and_the_minute(void **state)
{
    struct state *st = open_state(*state);
    struct state_node launched = node_of("i-1", 4, "tok", 0), late = node_of("i-3", 4, "tok", 1),
                      fixed = node_of("static-1", 4, NULL, 0), free_ = node_of("i-0", 4, NULL, 0);

    double none = 0;

    assert_int_equal(state_cost_recorded_until(st, &none), 0);
    assert_true(isnan(none)); /* no costs yet */
    launched.price = late.price = fixed.price = 3.6;
    fixed.launched_at = 110;
    late.launched_at = 140;
    free_.price = 0;
    assert_int_equal(state_intent_record(st, "tok", "g4dn.12xlarge", 2, 90.0), 0);
    assert_int_equal(state_node_upsert(st, &launched), 0);
    assert_int_equal(state_node_upsert(st, &fixed), 0);
    assert_int_equal(state_node_upsert(st, &free_), 0);
    assert_int_equal(state_cost_accrue(st, 100, 110), 0);
    assert_int_equal(state_node_set_state(st, "i-1", STATE_NODE_TERMINATED, 120), 0);
    assert_int_equal(state_node_set_state(st, "static-1", STATE_NODE_TERMINATED, 130), 0);
    assert_int_equal(state_cost_accrue(st, 110, 135), 0);
    assert_int_equal(state_node_upsert(st, &late), 0);
    assert_int_equal(state_cost_accrue(st, 135, 200), 0);
    assert_int_equal(state_cost_accrue(st, 200, 260), 0);
    assert_int_equal(node_micros(st, "i-1"), 60000);
    assert_int_equal(node_micros(st, "static-1"), 20000);
    assert_int_equal(node_micros(st, "i-3"), 120000);
    assert_int_equal(node_micros(st, "i-0"), 0);
    assert_int_equal(state_cost_accrue(st, 260, 250), ERR_INVAL);
    /* a restarted controller: the costs recorded end at 260; from there to 300 only the nodes
     * not terminated count (i-3): the terminated ones ended before */
    {
        double until = 0;

        assert_int_equal(state_cost_recorded_until(st, &until), 0);
        assert_true(until == 260);
        assert_int_equal(state_cost_accrue_listed(st, until, 300, NULL), 0);
        assert_int_equal(node_micros(st, "i-3"), 160000);
        assert_int_equal(node_micros(st, "i-1"), 60000);
        assert_int_equal(node_micros(st, "static-1"), 20000);
    }
    /* the cloud lists no instance now: i-3 is gone (when, not known), nothing added for it */
    {
        char *none_listed[] = {NULL}, *i3[] = {"i-3", NULL};

        assert_int_equal(state_cost_accrue_listed(st, 300, 320, none_listed), 0);
        assert_int_equal(node_micros(st, "i-3"), 160000);
        assert_int_equal(state_cost_accrue_listed(st, 320, 330, i3), 0);
        assert_int_equal(node_micros(st, "i-3"), 170000);
    }
    state_close(st);
}

/* state_write_check tells whether the state takes writes: 0, then ERR_IO from a connection that
 * may not write (as from a read-only file or a full disk), changing nothing. */
static void state_write_check__tells_a_state_that_cannot_be_written(void **state)
{
    struct state *st = open_state(*state);
    int version = 0, after = 0;

    assert_int_equal(state_version(st, &version), 0);
    assert_int_equal(state_write_check(st), 0);
    assert_int_equal(db_exec(state_db(st), "PRAGMA query_only = 1"), 0);
    assert_int_equal(state_write_check(st), ERR_IO);
    assert_int_equal(db_exec(state_db(st), "PRAGMA query_only = 0"), 0);
    assert_int_equal(state_write_check(st), 0);
    assert_int_equal(state_version(st, &after), 0);
    assert_int_equal(after, version);
    state_close(st);
}

/* A span's costs are recorded for every node or for none: when one node's cannot be (the state
 * refuses the write, as a full disk would: here a trigger on i-2's rows), i-1's are not either,
 * so that the whole span asked again later counts each second once. */
static void state_cost_accrue__all_or_nothing(void **state)
{
    struct state *st = open_state(*state);
    struct state_node one = node_of("i-1", 4, NULL, 0), two = node_of("i-2", 4, NULL, 0);

    one.price = two.price = 3.6;
    assert_int_equal(state_node_upsert(st, &one), 0);
    assert_int_equal(state_node_upsert(st, &two), 0);
    assert_int_equal(db_exec(state_db(st),
                             "CREATE TRIGGER no_room BEFORE INSERT ON costs WHEN NEW.node_id ="
                             " (SELECT id FROM nodes WHERE instance_id = 'i-2')"
                             " BEGIN SELECT RAISE(ABORT, 'no room'); END"),
                     0);
    assert_true(state_cost_accrue(st, 100, 110) < 0);
    assert_int_equal(node_micros(st, "i-1"), 0);
    assert_int_equal(node_micros(st, "i-2"), 0);
    assert_int_equal(db_exec(state_db(st), "DROP TRIGGER no_room"), 0);
    assert_int_equal(state_cost_accrue(st, 100, 120), 0); /* the span asked again, with the next */
    assert_int_equal(node_micros(st, "i-1"), 20000);
    assert_int_equal(node_micros(st, "i-2"), 20000);
    state_close(st);
}

/* The costs by UTC day and by offer, split by market: a spot node launched on day 1 (86400 s is
 * 1970-01-02) billed $1 that day and $2 the next; an on-demand one $4 on day 2; a static node $8
 * on day 2. By day: 1970-01-02 {spot 1}, 1970-01-03 {on-demand 4, spot 2, static 8}; from day 2
 * on, only the latter; by offer, dearest first. A span that ends before it starts is refused. */
static void state_cost_report__by_day_and_by_offer(void **state)
{
    struct state *st = open_state(*state);
    struct state_node spot = node_of("i-s", 4, "tok", 0), od = node_of("i-o", 4, "tok", 1),
                      fixed = node_of("rack-1", 4, NULL, 0);
    struct state_cost_row *rows = NULL;
    size_t n = 0;
    const double day = 86400;

    od.market = STATE_MARKET_ON_DEMAND;
    od.offer = "p3.2xlarge";
    fixed.offer = "rack";
    assert_int_equal(state_intent_record(st, "tok", "g4dn.12xlarge", 2, 90.0), 0);
    assert_int_equal(state_node_upsert(st, &spot), 0);
    assert_int_equal(state_node_upsert(st, &od), 0);
    assert_int_equal(state_node_upsert(st, &fixed), 0);
    assert_int_equal(state_cost_add(st, "i-s", day + 100, day + 3600, 1.0), 0);
    assert_int_equal(state_cost_add(st, "i-s", 2 * day, 2 * day + 3600, 2.0), 0);
    assert_int_equal(state_cost_add(st, "i-o", 2 * day + 3600, 2 * day + 7200, 4.0), 0);
    assert_int_equal(state_cost_add(st, "rack-1", 2 * day + 7200, 2 * day + 9000, 8.0), 0);

    assert_int_equal(state_cost_report(st, 0, INFINITY, STATE_COST_BY_DAY, &rows, &n), 0);
    assert_int_equal(n, 2);
    assert_string_equal(rows[0].key, "1970-01-02");
    assert_true(rows[0].spot == 1 && rows[0].on_demand == 0 && rows[0].dollars == 1);
    assert_string_equal(rows[1].key, "1970-01-03");
    assert_true(rows[1].spot == 2 && rows[1].on_demand == 4 && rows[1].fixed == 8);
    assert_true(rows[1].dollars == 14);
    state_cost_rows_free(rows, n);

    assert_int_equal(state_cost_report(st, 2 * day, INFINITY, STATE_COST_BY_DAY, &rows, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(rows[0].key, "1970-01-03");
    state_cost_rows_free(rows, n);

    assert_int_equal(state_cost_report(st, 0, INFINITY, STATE_COST_BY_OFFER, &rows, &n), 0);
    assert_int_equal(n, 3);
    assert_string_equal(rows[0].key, "rack");
    assert_string_equal(rows[1].key, "p3.2xlarge");
    assert_string_equal(rows[2].key, "g4dn.12xlarge");
    assert_true(rows[2].dollars == 3 && rows[2].spot == 3);
    state_cost_rows_free(rows, n);
    assert_int_equal(state_cost_report(st, 10, 5, STATE_COST_BY_DAY, &rows, &n), ERR_INVAL);
    state_close(st);
}

/* What castor's nodes of each offer went through in a window (1000 to 37000 s): on g4dn, i-1
 * (launched at 100, noticed at 18100 and terminated at 18200) alive 4.78 h of it and i-2 (launched
 * at 100, alive) 10 h; i-0 noticed at 500 and gone at 900, before the window, not counted; on p3,
 * i-3 from 1000, 10 h, no notice; a static node not at all. */
static void state_offer_records__notices_and_hours(void **state)
{
    struct state *st = open_state(*state);
    struct state_node a = node_of("i-1", 4, "tok", 0), b = node_of("i-2", 4, "tok", 1),
                      old = node_of("i-0", 4, "tok", 2), od = node_of("i-3", 4, "tok", 3),
                      fixed = node_of("rack-1", 4, NULL, 0);
    struct state_offer_record *rows = NULL;
    size_t n = 0;

    od.offer = "p3.2xlarge";
    od.launched_at = 1000;
    assert_int_equal(state_intent_record(st, "tok", "g4dn.12xlarge", 4, 90.0), 0);
    assert_int_equal(state_node_upsert(st, &a), 0);
    assert_int_equal(state_node_upsert(st, &b), 0);
    assert_int_equal(state_node_upsert(st, &old), 0);
    assert_int_equal(state_node_upsert(st, &od), 0);
    assert_int_equal(state_node_upsert(st, &fixed), 0);
    assert_int_equal(state_node_notice(st, "i-0", 500, 620), 1);
    assert_int_equal(state_node_set_state(st, "i-0", STATE_NODE_TERMINATED, 900), 0);
    assert_int_equal(state_node_notice(st, "i-1", 18100, 18220), 1);
    assert_int_equal(state_node_set_state(st, "i-1", STATE_NODE_TERMINATED, 18200), 0);
    assert_int_equal(state_offer_records(st, 1000, 37000, &rows, &n), 0);
    assert_int_equal(n, 2);
    assert_string_equal(rows[0].offer, "g4dn.12xlarge");
    assert_int_equal(rows[0].preemptions, 1);
    assert_float_equal(rows[0].hours, (17200.0 + 36000.0) / 3600, 1e-9);
    assert_string_equal(rows[1].offer, "p3.2xlarge");
    assert_int_equal(rows[1].preemptions, 0);
    assert_float_equal(rows[1].hours, 10.0, 1e-9);
    state_offer_records_free(rows, n);
    assert_int_equal(state_offer_records(st, 10, 5, &rows, &n), ERR_INVAL);
    state_close(st);
}

/* ---- a writer SIGKILLed mid-run ---- */

#define CRASH_ITERS 400
#define CRASH_NODES 4

static const char *const crash_nodes[CRASH_NODES] = {"n-0", "n-1", "n-2", "n-3"};

/* Iteration k replaces job j's allocation by k % 4 + 1 rows of k + 1 replicas each, then appends
 * decision k, then reports k. */
static void crash_state_writer(void *ctx, int fd)
{
    struct state_alloc rows[CRASH_NODES];
    struct state *st = NULL;

    if (state_open(ctx, &st, NULL) != 0)
        _exit(2);
    for (long k = 0; k < CRASH_ITERS; k++) {
        for (int i = 0; i < CRASH_NODES; i++)
            rows[i] = (struct state_alloc){(char *)crash_nodes[i], (int)k + 1, 0.0};
        if (state_alloc_replace(st, "j", rows, (size_t)(k % CRASH_NODES) + 1, (double)k) != 0 ||
            state_decision_append(st, k, (double)k, "{\"ok\": true}") != 0)
            _exit(2);
        crash_report(fd, k);
    }
    state_close(st);
}

/*
 * Four seeded runs of a writer going through the state API, SIGKILLed by the parent after a
 * seeded number of iterations and a seeded delay. The reopened state holds decisions 0 .. m
 * with m the last reported or one more, and the job's allocation is one iteration's whole
 * (all rows with the same replicas r, k % 4 + 1 of them for k = r - 1), from iteration m or m + 1
 * (replaced, killed before its decision).
 */
static void state_alloc_replace__survives_sigkill(void **state)
{
    const struct tmpdb *t = *state;
    uint64_t seed = 77;
    struct crash_result res = {-1, 0};
    struct state *st;

    st = open_state(t);
    assert_int_equal(state_job_submit(st, "j", "{}", 0.0), 0);
    add_ready_nodes(st, crash_nodes, CRASH_NODES);
    state_close(st);
    for (int run = 0; run < 4; run++) {
        long kill_after = 1 + (long)(crash_rand(&seed) % (CRASH_ITERS / 2));
        long delay_us = (long)(crash_rand(&seed) % 3000);
        struct state_alloc *got = NULL;
        long long m = -1;
        size_t n = 0;

        assert_int_equal(crash_run(crash_state_writer, (void *)t->path, kill_after, delay_us, &res),
                         0);
        st = open_state(t);
        assert_int_equal(state_decision_last_tick(st, &m), 0);
        assert_true(m >= res.reported && m <= res.reported + 1);
        assert_int_equal(count_rows(st, "SELECT count(*) FROM decisions"), m + 1);
        assert_int_equal(count_rows(st, "SELECT count(DISTINCT tick) FROM decisions"), m + 1);
        assert_int_equal(state_alloc_get(st, "j", &got, &n), 0);
        assert_true(n >= 1);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(got[i].replicas, got[0].replicas);
        assert_int_equal(n, (size_t)((got[0].replicas - 1) % CRASH_NODES) + 1);
        assert_true(got[0].replicas - 1 == m || got[0].replicas - 1 == m + 1);
        state_allocs_free(got, n);
        assert_int_equal(db_exec(state_db(st), "DELETE FROM decisions"), 0);
        state_close(st);
    }
}

#define STATE_TEST(f) cmocka_unit_test_setup_teardown(f, tmpdb_setup, tmpdb_teardown)

/* ---- version 3: what the API records ---- */

/* A version 2 database with a job and a node migrates to version 3 (and on): the rows are kept
 * and version 3's fields read as not known yet. */
static void state_open__migrates_v2_to_v3(void **state)
{
    const struct tmpdb *t = *state;
    struct state_node node = node_of("i-1", 8, NULL, 0), got;
    struct state *st = NULL;
    struct state_job job;
    int v = 0;

    assert_int_equal(state_open_version(t->path, 2, &st, NULL), 0);
    assert_int_equal(state_job_submit(st, "resnet", "{}", 5.0), 0);
    assert_int_equal(state_node_upsert(st, &node), 0);
    state_close(st);
    st = open_state(t);
    assert_int_equal(state_version(st, &v), 0);
    assert_int_equal(v, STATE_SCHEMA_VERSION);
    assert_int_equal(state_job_get(st, "resnet", &job), 0);
    assert_true(job.submitted_at == 5.0 && isnan(job.local_bsz) && isnan(job.lr_gain) &&
                isnan(job.grad_sqr) && isnan(job.reported_at));
    state_job_clear(&job);
    assert_int_equal(state_node_get(st, "i-1", &got), 0);
    assert_int_equal(got.gpus, 8);
    assert_int_equal(got.gpu_memory_mib, 0);
    assert_true(isnan(got.heartbeat_at) && isnan(got.notice_at) && isnan(got.notice_deadline));
    state_node_clear(&got);
    state_close(st);
}

/* A version 3 database with a reported job migrates to version 4: the report is kept, the job has
 * no sync prior until a report brings one, and a report without one keeps it. */
static void state_open__migrates_v3_to_v4(void **state)
{
    const struct tmpdb *t = *state;
    const struct state_report_config c = {1, 1, 32.0, 0, 10, 1.0, 0.0, 0.0, 0};
    struct state_report r = {&c, 1, NAN, NAN, 2.0, 0};
    struct state *st = NULL;
    struct state_job job;
    int v = 0;

    assert_int_equal(state_open_version(t->path, 3, &st, NULL), 0);
    assert_int_equal(state_job_submit(st, "bert", "{}", 5.0), 0);
    /* version 3's report, as its code wrote it */
    assert_int_equal(db_exec(state_db(st),
                             "INSERT INTO reports (job_id, nodes, replicas, local_bsz, accum_steps,"
                             " count, step_mean, step_var, sync_mean, at)"
                             " SELECT id, 1, 1, 32.0, 0, 10, 1.0, 0.0, 0.0, 6.0 FROM jobs;"
                             "UPDATE jobs SET progress = 2.0, reported_at = 6.0;"),
                     0);
    state_close(st);
    st = open_state(t);
    assert_int_equal(state_version(st, &v), 0);
    assert_int_equal(v, STATE_SCHEMA_VERSION);
    assert_int_equal(state_job_get(st, "bert", &job), 0);
    assert_true(job.progress == 2.0 && job.reported_at == 6.0 && isnan(job.sync_prior));
    state_job_clear(&job);
    r.sync_prior = 0.015;
    assert_int_equal(state_report_store(st, "bert", &r, 7.0), 0);
    r.sync_prior = 0;
    assert_int_equal(state_report_store(st, "bert", &r, 8.0), 0);
    assert_int_equal(state_job_get(st, "bert", &job), 0);
    assert_true(job.sync_prior == 0.015 && job.reported_at == 8.0);
    state_job_clear(&job);
    state_close(st);
}

/* A booting node that registers takes the GPUs and memory reported and becomes ready; a second
 * registration is refused; an unknown node is inserted as a static node (never with a launch
 * token); no GPUs is refused. Refusals write nothing. */
/* A static node registered with a launch time before the end of the costs recorded (its
 * registration raced a tick that had read the nodes and recorded them up to its own time) is
 * launched, and billed, from that end: the next tick starts there, and the part before would be
 * lost. Every second of its launched span is billed; a registration after the costs keeps its time.
 */
static void state_node_register__static_billed_from_its_launch(void **state)
{
    struct state *st = open_state(*state);
    struct state_node a = node_of("i-1", 4, NULL, 0), b = node_of("rack-1", 1, NULL, 0),
                      c = node_of("rack-2", 1, NULL, 0), got;

    a.price = b.price = c.price = 3.6;
    assert_int_equal(state_node_upsert(st, &a), 0);
    assert_int_equal(state_cost_accrue(st, 100, 200), 0); /* the tick of time 200 */
    b.launched_at = 190;                                  /* its request came at 190 */
    assert_int_equal(state_node_register(st, &b, 190), 0);
    c.launched_at = 230;
    assert_int_equal(state_node_register(st, &c, 230), 0);
    assert_int_equal(state_cost_accrue(st, 200, 260), 0);
    assert_int_equal(state_node_get(st, "rack-1", &got), 0);
    assert_true(got.launched_at == 200);
    state_node_clear(&got);
    assert_int_equal(state_node_get(st, "rack-2", &got), 0);
    assert_true(got.launched_at == 230);
    state_node_clear(&got);
    assert_int_equal(node_micros(st, "rack-1"), 60000); /* 60 s at $3.6/h, from its launch */
    assert_int_equal(node_micros(st, "rack-2"), 30000);
    state_close(st);
}

static void state_node_register__launched_static_duplicate(void **state)
{
    const struct tmpdb *t = *state;
    struct state *st = open_state(t);
    struct state_node node = node_of("i-1", 0, NULL, 0), got;

    assert_int_equal(state_node_upsert(st, &node), 0);
    node.gpus = 4;
    node.gpu_memory_mib = 16384;
    assert_int_equal(state_node_register(st, &node, 200.0), 0);
    assert_int_equal(state_node_get(st, "i-1", &got), 0);
    assert_int_equal(got.state, STATE_NODE_READY);
    assert_int_equal(got.gpus, 4);
    assert_int_equal(got.gpu_memory_mib, 16384);
    assert_true(got.ready_at == 200.0 && got.heartbeat_at == 200.0 && got.launched_at == 100.0);
    state_node_clear(&got);
    node.gpus = 8;
    assert_int_equal(state_node_register(st, &node, 201.0), ERR_CONFLICT);
    assert_int_equal(state_node_get(st, "i-1", &got), 0);
    assert_int_equal(got.gpus, 4);
    assert_true(got.heartbeat_at == 200.0);
    state_node_clear(&got);

    node = node_of("static-1", 2, NULL, 0);
    node.gpu_memory_mib = 1024;
    node.address = (char *)"10.0.0.7";
    assert_int_equal(state_node_register(st, &node, 300.0), 0);
    assert_int_equal(state_node_get(st, "static-1", &got), 0);
    assert_int_equal(got.state, STATE_NODE_READY);
    assert_string_equal(got.address, "10.0.0.7");
    assert_string_equal(got.offer, "g4dn.12xlarge");
    assert_true(got.ready_at == 300.0 && got.price == 3.912);
    state_node_clear(&got);
    node = node_of("static-2", 2, "tok", 0);
    assert_int_equal(state_node_register(st, &node, 300.0), ERR_INVAL);
    node = node_of("static-3", 0, NULL, 0);
    assert_int_equal(state_node_register(st, &node, 300.0), ERR_INVAL);
    node = node_of("static-4", 1, NULL, 0);
    node.address = (char *)""; /* an address is 1 to 255 characters */
    assert_int_equal(state_node_register(st, &node, 300.0), ERR_INVAL);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM nodes"), 2);
    state_close(st);
}

/* An agent can register before the controller has recorded the launch that made its instance
 * (the cloud started it, the record is on its way): the node is then a static one, ready. The
 * launch's record that follows writes the launch's identity (offer, token, price, launch time)
 * and keeps what the agent registered: ready, its GPUs, its ready time and address. Without
 * that the node went back to booting, and its agent, registered, never registered again: the
 * PyTorch world's stall. A draining node keeps draining the same way; a booting one is written
 * whole. */
static void state_node_upsert__launch_recorded_after_registration(void **state)
{
    const struct tmpdb *t = *state;
    struct state *st = open_state(t);
    struct state_node node = node_of("i-1", 1, NULL, 0), got;

    assert_int_equal(state_intent_record(st, "tok", "box.1gpu/spot", 2, 90.0), 0);
    node.address = (char *)"10.0.0.9";
    node.offer = "unknown";
    node.price = 0;
    assert_int_equal(state_node_register(st, &node, 95.0), 0);
    node = node_of("i-1", 4, "tok", 0); /* the record: booting, the offer's 4 GPUs, not ready */
    node.offer = "box.1gpu/spot";
    node.price = 0.5;
    assert_int_equal(state_node_upsert(st, &node), 0);
    assert_int_equal(state_node_get(st, "i-1", &got), 0);
    assert_int_equal(got.state, STATE_NODE_READY);
    assert_int_equal(got.gpus, 1);
    assert_true(got.ready_at == 95.0 && got.launched_at == 100.0 && got.price == 0.5);
    assert_string_equal(got.offer, "box.1gpu/spot");
    assert_string_equal(got.launch_token, "tok");
    assert_string_equal(got.address, "10.0.0.9");
    state_node_clear(&got);

    assert_int_equal(state_node_notice(st, "i-1", 110.0, 230.0), 1);
    assert_int_equal(state_node_upsert(st, &node), 0);
    assert_int_equal(state_node_get(st, "i-1", &got), 0);
    assert_int_equal(got.state, STATE_NODE_DRAINING);
    state_node_clear(&got);

    node = node_of("i-2", 4, "tok", 1); /* not registered: booting, written whole */
    assert_int_equal(state_node_upsert(st, &node), 0);
    node.gpus = 8;
    assert_int_equal(state_node_upsert(st, &node), 0);
    assert_int_equal(state_node_get(st, "i-2", &got), 0);
    assert_int_equal(got.state, STATE_NODE_BOOTING);
    assert_int_equal(got.gpus, 8);
    state_node_clear(&got);
    state_close(st);
}

/* Heartbeats are recorded; a notice moves the node to draining, keeps the first notice's time and
 * the latest deadline; a terminated node refuses both; an unknown one is ERR_UNKNOWN. */
static void state_node_heartbeat_notice__rules(void **state)
{
    const struct tmpdb *t = *state;
    struct state *st = open_state(t);
    const char *ids[] = {"i-1"};
    struct state_node got;

    add_ready_nodes(st, ids, 1);
    assert_int_equal(state_node_heartbeat(st, "i-1", 150.0, NULL, 0), 0);
    assert_int_equal(state_node_heartbeat(st, "i-9", 150.0, NULL, 0), ERR_UNKNOWN);
    assert_int_equal(state_node_notice(st, "i-1", 160.0, 150.0), ERR_INVAL);
    assert_int_equal(state_node_notice(st, "i-1", 160.0, NAN), 1);   /* its first notice */
    assert_int_equal(state_node_notice(st, "i-1", 170.0, 280.0), 0); /* told again */
    assert_int_equal(state_node_get(st, "i-1", &got), 0);
    assert_int_equal(got.state, STATE_NODE_DRAINING);
    assert_true(got.heartbeat_at == 150.0 && got.notice_at == 160.0 &&
                got.notice_deadline == 280.0);
    state_node_clear(&got);
    assert_int_equal(state_node_set_state(st, "i-1", STATE_NODE_TERMINATED, 290.0), 0);
    assert_int_equal(state_node_heartbeat(st, "i-1", 300.0, NULL, 0), ERR_CONFLICT);
    assert_int_equal(state_node_notice(st, "i-1", 300.0, NAN), ERR_CONFLICT);
    assert_int_equal(state_node_notice(st, "i-9", 300.0, NAN), ERR_UNKNOWN);
    state_close(st);
}

/* The jobs on a node, by name, with their replicas there; none on an idle node. */
static void state_node_jobs__allocations_on_a_node(void **state)
{
    const struct tmpdb *t = *state;
    struct state *st = open_state(t);
    const char *ids[] = {"i-1", "i-2"};
    struct state_alloc a[] = {{"i-1", 2, 0}, {"i-2", 1, 0}}, b[] = {{"i-1", 1, 0}};
    struct state_node_job *rows = NULL;
    size_t n = 9;

    add_ready_nodes(st, ids, 2);
    assert_int_equal(state_job_submit(st, "zeta", "{}", 1.0), 0);
    assert_int_equal(state_job_submit(st, "alpha", "{}", 1.0), 0);
    assert_int_equal(state_alloc_replace(st, "zeta", a, 2, 200.0), 0);
    assert_int_equal(state_alloc_replace(st, "alpha", b, 1, 200.0), 0);
    assert_int_equal(state_node_jobs(st, "i-1", &rows, &n), 0);
    assert_int_equal(n, 2);
    assert_string_equal(rows[0].job, "alpha");
    assert_int_equal(rows[0].replicas, 1);
    assert_string_equal(rows[1].job, "zeta");
    assert_int_equal(rows[1].replicas, 2);
    state_node_jobs_free(rows, n);
    assert_int_equal(state_job_set_state(st, "zeta", STATE_JOB_CANCELLED, 300.0), 0);
    assert_int_equal(state_node_jobs(st, "i-2", &rows, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(state_node_jobs(st, "i-9", &rows, &n), ERR_UNKNOWN);
    state_close(st);
}

/* Two reports of one configuration pool as if their steps had come in one: counts add, the mean
 * is the mean of all steps and the spread their standard deviation (checked against the steps
 * themselves); gradient statistics and progress are the latest; the configuration set by the plan
 * reads back. */
static void state_report_store__pools_configurations(void **state)
{
    const struct tmpdb *t = *state;
    struct state *st = open_state(t);
    /* steps 1.0 x 10 then 2.0, 3.0 alternating x 30 */
    struct state_report_config c1 = {1, 2, 32.0, 0, 10, 1.0, 0.0, 0.1, 0};
    struct state_report_config c2 = {1, 2, 32.0, 0, 30, 2.5, 0.5, 0.3, 0};
    struct state_report_config other = {2, 4, 32.0, 1, 5, 4.0, 0.25, 1.0, 0};
    struct state_report r1 = {&c1, 1, 0.5, 2.0, 3.0, 0.02}, r2 = {&c2, 1, NAN, NAN, NAN, 0};
    struct state_report r3 = {&other, 1, 0.25, 1.0, 4.0, 0};
    struct state_report_config *rows = NULL;
    double mean = 0, ss = 0;
    struct state_job job;
    size_t n = 0;

    for (int i = 0; i < 40; i++)
        mean += (i < 10 ? 1.0 : (i % 2 ? 3.0 : 2.0)) / 40;
    for (int i = 0; i < 40; i++) {
        double x = i < 10 ? 1.0 : (i % 2 ? 3.0 : 2.0);

        ss += (x - mean) * (x - mean);
    }
    assert_int_equal(state_job_submit(st, "j", "{}", 1.0), 0);
    assert_int_equal(state_report_store(st, "j", &r1, 10.0), 0);
    assert_int_equal(state_report_store(st, "j", &r2, 20.0), 0);
    assert_int_equal(state_report_store(st, "j", &r3, 30.0), 0);
    assert_int_equal(state_report_configs(st, "j", &rows, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(rows[0].count, 40);
    assert_float_equal(rows[0].step_mean, mean, 1e-12);
    assert_float_equal(rows[0].step_sd, sqrt(ss / 40), 1e-12);
    assert_float_equal(rows[0].sync_mean, (10 * 0.1 + 30 * 0.3) / 40, 1e-12);
    assert_true(rows[0].at == 20.0);
    assert_int_equal(rows[1].nodes, 2);
    assert_int_equal(rows[1].accum_steps, 1);
    assert_float_equal(rows[1].step_sd, 0.25, 1e-12);
    free(rows);
    assert_int_equal(state_job_set_config(st, "j", 48.0, 2, 1.5), 0);
    assert_int_equal(state_job_get(st, "j", &job), 0);
    assert_true(job.grad_sqr == 0.25 && job.grad_var == 1.0 && job.progress == 4.0 &&
                job.reported_at == 30.0);
    assert_true(job.sync_prior == 0.02); /* r1's, kept by reports without one */
    assert_true(job.local_bsz == 48.0 && job.accum_steps == 2 && job.lr_gain == 1.5);
    state_job_clear(&job);
    state_close(st);
}

/* Two reports whose sync time is just below their step time pool into means that rounding would
 * make equal (the schema wants the sync time below the step time): the second is stored, with
 * its progress, the pooled sync time below the pooled step time. */
static void state_report_store__pooled_sync_stays_below_the_step(void **state)
{
    struct state *st = open_state(*state);
    struct state_report_config c1 = {1, 1, 32.0, 0, 858, 5.56897868329781, 0.0, 5.568978683297809,
                                     0};
    struct state_report_config c2 = {1, 1, 32.0, 0, 939, 6.426520685695131, 0.0, 6.42652068569513,
                                     0};
    struct state_report r1 = {&c1, 1, NAN, NAN, 1.0, 0}, r2 = {&c2, 1, NAN, NAN, 2.0, 0};
    struct state_report_config *rows = NULL;
    struct state_job job;
    size_t n = 0;

    assert_int_equal(state_job_submit(st, "j", "{}", 1.0), 0);
    assert_int_equal(state_report_store(st, "j", &r1, 10.0), 0);
    assert_int_equal(state_report_store(st, "j", &r2, 20.0), 0);
    assert_int_equal(state_report_configs(st, "j", &rows, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(rows[0].count, 858 + 939);
    assert_true(rows[0].sync_mean < rows[0].step_mean);
    assert_float_equal(rows[0].sync_mean, rows[0].step_mean, 1e-8 * rows[0].step_mean);
    free(rows);
    assert_int_equal(state_job_get(st, "j", &job), 0);
    assert_true(job.progress == 2.0);
    state_job_clear(&job);
    state_close(st);
}

/* A report with a configuration that makes no sense (zero replicas, fewer replicas than nodes,
 * a negative or NaN time, sync not below the step, zero count), or half the gradient statistics,
 * is refused whole: nothing of it is written, not even its good configurations; unknown and
 * finished jobs are refused likewise. */
static void state_report_store__bad_reports_write_nothing(void **state)
{
    const struct tmpdb *t = *state;
    struct state *st = open_state(t);
    const struct state_report_config good = {1, 1, 16.0, 0, 3, 0.5, 0.1, 0.0, 0};
    struct state_report_config bad[8];
    struct state_report r = {bad, 2, 1.0, 1.0, 1.0, 0};
    struct state_job job;

    for (int i = 0; i < 8; i++)
        bad[i] = good;
    bad[1].replicas = 0;
    bad[2].nodes = 2;
    bad[3].step_mean = -0.5;
    bad[4].step_sd = NAN;
    bad[5].sync_mean = 0.5;
    bad[6].count = 0;
    bad[7].local_bsz = 0;
    assert_int_equal(state_job_submit(st, "j", "{}", 1.0), 0);
    for (int i = 1; i < 8; i++) {
        bad[1] = bad[i];
        assert_int_equal(state_report_store(st, "j", &r, 5.0), ERR_INVAL);
    }
    bad[1] = good;
    r.grad_var = NAN;
    assert_int_equal(state_report_store(st, "j", &r, 5.0), ERR_INVAL);
    r.grad_var = 1.0;
    r.sync_prior = -0.1; /* a negative or non-finite measured all-reduce */
    assert_int_equal(state_report_store(st, "j", &r, 5.0), ERR_INVAL);
    r.sync_prior = INFINITY;
    assert_int_equal(state_report_store(st, "j", &r, 5.0), ERR_INVAL);
    r.sync_prior = 0;
    assert_int_equal(count_rows(st, "SELECT count(*) FROM reports"), 0);
    assert_int_equal(state_job_get(st, "j", &job), 0);
    assert_true(isnan(job.reported_at) && job.progress == 0.0 && isnan(job.sync_prior));
    state_job_clear(&job);
    assert_int_equal(state_report_store(st, "nope", &r, 5.0), ERR_UNKNOWN);
    assert_int_equal(state_job_set_state(st, "j", STATE_JOB_CANCELLED, 6.0), 0);
    assert_int_equal(state_report_store(st, "j", &r, 7.0), ERR_CONFLICT);
    assert_int_equal(state_job_set_config(st, "j", 8.0, 0, 1.0), ERR_CONFLICT);
    assert_int_equal(state_job_set_config(st, "j", 0.0, 0, 1.0), ERR_INVAL);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM reports"), 0);
    state_close(st);
}

/* A batch of reports is one transaction in which each report stands alone: the good ones are
 * stored, a bad one, one for an unknown job and one for an ended job are refused with their own
 * code and leave nothing. */
static void state_report_store_many__each_report_alone(void **state)
{
    const struct tmpdb *t = *state;
    struct state *st = open_state(t);
    const struct state_report_config good = {1, 1, 16.0, 0, 3, 0.5, 0.1, 0.0, 0};
    struct state_report_config bad = good;
    struct state_report_item items[5] = {
        {"a", {&good, 1, NAN, NAN, 1.0, 0}, 7},    {"a", {&bad, 1, NAN, NAN, NAN, 0}, 7},
        {"nope", {&good, 1, NAN, NAN, NAN, 0}, 7}, {"done", {&good, 1, NAN, NAN, NAN, 0}, 7},
        {"b", {&good, 1, NAN, NAN, 2.0, 0}, 7},
    };
    struct state_job job;

    bad.replicas = 0;
    assert_int_equal(state_job_submit(st, "a", "{}", 1.0), 0);
    assert_int_equal(state_job_submit(st, "b", "{}", 1.0), 0);
    assert_int_equal(state_job_submit(st, "done", "{}", 1.0), 0);
    assert_int_equal(state_job_set_state(st, "done", STATE_JOB_CANCELLED, 2.0), 0);
    assert_int_equal(state_report_store_many(st, items, 5, 3.0), 0);
    assert_int_equal(items[0].rc, 0);
    assert_int_equal(items[1].rc, ERR_INVAL);
    assert_int_equal(items[2].rc, ERR_UNKNOWN);
    assert_int_equal(items[3].rc, ERR_CONFLICT);
    assert_int_equal(items[4].rc, 0);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM reports"), 2);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM jobs WHERE reported_at = 3.0"), 2);
    assert_int_equal(state_job_get(st, "b", &job), 0);
    assert_true(job.progress == 2.0);
    state_job_clear(&job);
    assert_int_equal(state_report_store_many(st, items, 0, 3.0), ERR_INVAL);
    state_close(st);
}

/* ---- version 5: model families ---- */

/* The job's first gradient statistics are sqr and var (NAN: not known). */
static void assert_grad0(struct state *st, const char *name, double sqr, double var)
{
    struct state_job job;

    assert_int_equal(state_job_get(st, name, &job), 0);
    assert_true(isnan(sqr) ? isnan(job.grad0_sqr) : job.grad0_sqr == sqr);
    assert_true(isnan(var) ? isnan(job.grad0_var) : job.grad0_var == var);
    state_job_clear(&job);
}

/* Close st and open its file again, migrated to the latest version; the new state. */
static struct state *reopen_latest(const struct tmpdb *t, struct state *st)
{
    int v = 0;

    state_close(st);
    st = open_state(t);
    assert_int_equal(state_version(st, &v), 0);
    assert_int_equal(v, STATE_SCHEMA_VERSION);
    return st;
}

/* The plan of the query for a family's jobs mentions want. */
static void assert_family_plan(struct state *st, const char *want)
{
    static const char *const sql =
        "EXPLAIN QUERY PLAN SELECT id FROM jobs WHERE json_extract(spec, '$.family') = 'x'";
    char plan[256];

    assert_non_null(strstr(query_plan(state_db(st), sql, plan, sizeof(plan)), want));
}

/* A version 4 database migrates to version 5: a job that reported gradient statistics before
 * keeps them and never gets first statistics (its first are not known); a job that had reported
 * none gets its next report's; the jobs are searched by family through the new index. */
static void state_open__migrates_v4_to_v5(void **state)
{
    const struct tmpdb *t = *state;
    struct state_report r = {NULL, 0, 0.5, 2.0, NAN, 0};
    struct state *st = NULL;
    struct state_job job;

    assert_int_equal(state_open_version(t->path, 4, &st, NULL), 0);
    assert_int_equal(state_job_submit(st, "old", "{\"family\": \"f\"}", 5.0), 0);
    assert_int_equal(state_job_submit(st, "fresh", "{\"family\": \"f\"}", 5.0), 0);
    /* version 4's report of statistics, as its code wrote it */
    assert_int_equal(db_exec(state_db(st), "UPDATE jobs SET grad_sqr = 0.1, grad_var = 0.2,"
                                           " reported_at = 6.0 WHERE name = 'old'"),
                     0);
    assert_family_plan(st, "SCAN jobs");
    st = reopen_latest(t, st);
    assert_family_plan(st, "INDEX jobs_by_family");
    assert_grad0(st, "old", NAN, NAN);
    assert_int_equal(state_report_store(st, "old", &r, 7.0), 0);
    assert_int_equal(state_report_store(st, "fresh", &r, 7.0), 0);
    assert_int_equal(state_job_get(st, "old", &job), 0);
    assert_true(job.grad_sqr == 0.5 && isnan(job.grad0_sqr)); /* the latest only */
    state_job_clear(&job);
    assert_grad0(st, "fresh", 0.5, 2.0);
    state_close(st);
}

/* A job's first gradient statistics are those of the first report that carries any, written by
 * that report's transaction and kept through later reports (which replace the latest only); a
 * refused report writes neither. */
static void state_report_store__first_grad_written_once(void **state)
{
    const struct tmpdb *t = *state;
    struct state *st = open_state(t);
    const struct state_report_config c = {1, 1, 32.0, 0, 10, 1.0, 0.0, 0.0, 0};
    struct state_report none = {&c, 1, NAN, NAN, 1.0, 0}, first = {NULL, 0, 0.5, 2.0, NAN, 0};
    struct state_report later = {&c, 1, 0.25, 1.0, 2.0, 0}, bad = later;
    struct state_job job;

    bad.grad_var = -1;
    assert_int_equal(state_job_submit(st, "j", "{}", 1.0), 0);
    assert_int_equal(state_report_store(st, "j", &none, 2.0), 0);
    assert_int_equal(state_report_store(st, "j", &bad, 2.5), ERR_INVAL);
    assert_grad0(st, "j", NAN, NAN);
    assert_int_equal(state_report_store(st, "j", &first, 3.0), 0);
    assert_int_equal(state_report_store(st, "j", &later, 4.0), 0);
    assert_int_equal(state_report_store(st, "j", &none, 5.0), 0);
    assert_grad0(st, "j", 0.5, 2.0);
    assert_int_equal(state_job_get(st, "j", &job), 0);
    assert_true(job.grad_sqr == 0.25 && job.grad_var == 1.0);
    state_job_clear(&job);
    state_close(st);
}

/* Submit job name of family (NULL: none) and store one report of one configuration (replicas,
 * step_mean) with first gradient statistics sqr and var. */
static void family_job(struct state *st, const char *name, const char *family, int replicas,
                       double step_mean, double sqr, double var)
{
    const struct state_report_config c = {1, replicas, 32.0, 0, 10, step_mean, 0.0, 0.0, 0};
    const struct state_report r = {&c, 1, sqr, var, NAN, 0};
    char spec[128];

    if (family)
        snprintf(spec, sizeof(spec), "{\"family\": \"%s\", \"samples\": null}", family);
    else
        snprintf(spec, sizeof(spec), "{\"family\": null}");
    assert_int_equal(state_job_submit(st, name, spec, 1.0), 0);
    assert_int_equal(state_report_store(st, name, &r, 2.0), 0);
}

/* A family's configurations are those of its other jobs, in any state (a finished one's
 * included), grouped job by job in submission order; the job asking, other families and jobs
 * without a family are left out. Its start statistics are the mean of its jobs' first ones;
 * a family no job has reported statistics for has none. */
static void state_family__configs_and_start_grad(void **state)
{
    const struct tmpdb *t = *state;
    struct state *st = open_state(t);
    const struct state_report_config more = {1, 4, 32.0, 0, 5, 0.6, 0.0, 0.1, 0};
    const struct state_report r = {&more, 1, 9.0, 9.0, NAN, 0};
    struct state_family_config *rows = NULL;
    double sqr = -1, var = -1;
    size_t n = 9;

    family_job(st, "a", "resnet50/t4", 1, 1.0, 0.5, 2.0);
    family_job(st, "other", "resnet50/v100", 1, 0.5, 7.0, 7.0);
    family_job(st, "lone", NULL, 1, 0.7, 8.0, 8.0);
    family_job(st, "b", "resnet50/t4", 2, 0.8, 1.5, 4.0);
    family_job(st, "c", "resnet50/t4", 1, 0.9, 1.0, 3.0);
    assert_int_equal(state_report_store(st, "a", &r, 3.0), 0); /* a second configuration */
    assert_int_equal(state_job_set_state(st, "a", STATE_JOB_RUNNING, 4.0), 0);
    assert_int_equal(state_job_finish(st, "a", NAN, 5.0), 0);
    assert_int_equal(state_family_configs(st, "resnet50/t4", "c", &rows, &n), 0);
    assert_int_equal(n, 3); /* a's two, then b's */
    assert_true(rows[0].job_id == rows[1].job_id && rows[1].job_id < rows[2].job_id);
    assert_true(rows[0].config.replicas == 1 && rows[0].config.step_mean == 1.0);
    assert_true(rows[1].config.replicas == 4 && rows[1].config.sync_mean == 0.1);
    assert_true(rows[2].config.replicas == 2 && rows[2].config.step_mean == 0.8);
    free(rows);
    assert_int_equal(state_family_configs(st, "resnet50/t4", NULL, &rows, &n), 0);
    assert_int_equal(n, 4); /* c's too */
    assert_true(rows[3].config.step_mean == 0.9);
    free(rows);
    assert_int_equal(state_family_configs(st, "resnet50/v100", "other", &rows, &n), 0);
    assert_int_equal(n, 0);
    assert_null(rows);
    n = 9;
    assert_int_equal(state_family_configs(st, "nobody", "c", &rows, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(state_family_configs(st, "", "c", &rows, &n), ERR_INVAL);
    /* the start: first statistics (a's later 9.0 is not its first) */
    assert_int_equal(state_family_start_grad(st, "resnet50/t4", 64, &sqr, &var), 0);
    assert_float_equal(sqr, 1.0, 1e-12);
    assert_float_equal(var, 3.0, 1e-12);
    assert_int_equal(state_family_start_grad(st, "resnet50/v100", 64, &sqr, &var), 0);
    assert_true(sqr == 7.0 && var == 7.0);
    assert_int_equal(state_job_submit(st, "quiet", "{\"family\": \"quiet\"}", 1.0), 0);
    assert_int_equal(state_family_start_grad(st, "quiet", 64, &sqr, &var), ERR_NOENT);
    assert_int_equal(state_family_start_grad(st, "nobody", 64, &sqr, &var), ERR_NOENT);
    assert_true(sqr == 7.0 && var == 7.0); /* untouched */
    assert_int_equal(state_family_start_grad(st, NULL, 64, &sqr, &var), ERR_INVAL);
    assert_int_equal(state_family_start_grad(st, "resnet50/t4", 0, &sqr, &var), ERR_INVAL);
    state_close(st);
}

/* A sweep over initial batch sizes: grad_var is per batch of the job's own M0, so the family's
 * start scales it: jobs at M0 64 (var 2.0) and 256 (var 1.0) have per-sample variances 128 and
 * 256, mean 192: 1.5 for a job starting at 128, 0.75 at 256; sqr is the plain mean (3.0). */
static void state_family_start_grad__scaled_to_the_initial_batch(void **state)
{
    const struct tmpdb *t = *state;
    struct state *st = open_state(t);
    const struct state_report_config c = {1, 1, 32.0, 0, 10, 0.5, 0.0, 0.0, 0};
    const struct state_report small = {&c, 1, 2.0, 2.0, NAN, 0}, large = {&c, 1, 4.0, 1.0, NAN, 0};
    double sqr = -1, var = -1;

    assert_int_equal(
        state_job_submit(st, "s64", "{\"family\": \"sweep\", \"init_batch_size\": 64}", 1.0), 0);
    assert_int_equal(
        state_job_submit(st, "s256", "{\"family\": \"sweep\", \"init_batch_size\": 256}", 1.0), 0);
    assert_int_equal(state_report_store(st, "s64", &small, 2.0), 0);
    assert_int_equal(state_report_store(st, "s256", &large, 2.0), 0);
    assert_int_equal(state_family_start_grad(st, "sweep", 128, &sqr, &var), 0);
    assert_float_equal(sqr, 3.0, 1e-12);
    assert_float_equal(var, 1.5, 1e-12);
    assert_int_equal(state_family_start_grad(st, "sweep", 256, &sqr, &var), 0);
    assert_float_equal(var, 0.75, 1e-12);
    state_close(st);
}

/* The failure columns of job name: failures, streak, reason ("" when none), state. */
static void assert_failures(struct state *st, const char *name, int failures, int streak,
                            const char *reason, enum state_job_state state)
{
    struct state_job job;

    assert_int_equal(state_job_get(st, name, &job), 0);
    assert_int_equal(job.failures, failures);
    assert_int_equal(job.failure_streak, streak);
    assert_string_equal(job.failure ? job.failure : "", reason);
    assert_int_equal(job.state, state);
    state_job_clear(&job);
}

/* Failure reports: one per attempt counts (a second replica's, or a retried one, of an attempt
 * already counted writes nothing); a streak grows while the job makes no progress and starts
 * again at 1 when it did; a streak above max_restarts fails the job and releases its allocation;
 * a node that holds no replica of the job, a final job, an unknown job and bad arguments are
 * refused and write nothing. max_restarts 2: the third failure in a row fails the job. */
/* Job name submitted at 1 s, running from 2 s, placed on rows[0 .. n-1] at at. */
static void running_on(struct state *st, const char *name, const struct state_alloc *rows, size_t n,
                       double at)
{
    assert_int_equal(state_job_submit(st, name, "{}", 1.0), 0);
    assert_int_equal(state_job_set_state(st, name, STATE_JOB_RUNNING, 2.0), 0);
    assert_int_equal(state_alloc_replace(st, name, rows, n, at), 0);
}

/* The job's state, from a fresh read. */
static enum state_job_state job_state_now(struct state *st, const char *name)
{
    struct state_job j;
    enum state_job_state s;

    assert_int_equal(state_job_get(st, name, &j), 0);
    s = j.state;
    state_job_clear(&j);
    return s;
}

/* Rank 0's own end finishes the job from its current attempt and placement (placed at 200 on
 * i-1 and i-2: the first node's since); one from another placement, or from the attempt before
 * without a placement said (an exit for a restart the node was not told of yet), is stale; a
 * finished job stays finished; a cancelled one is refused. */
static void state_job_complete__only_the_current_attempt_and_placement(void **state)
{
    const struct tmpdb *t = *state;
    struct state *st = open_state(t);
    const char *ids[] = {"i-1", "i-2", "i-3"};
    struct state_alloc a[] = {{"i-2", 2, 0}, {"i-1", 2, 0}};
    enum state_complete_outcome o = STATE_COMPLETE_FINISHED;
    struct state_alloc *rows = NULL;
    size_t n = 9;

    add_ready_nodes(st, ids, 3);
    running_on(st, "job", a, 2, 200.0);
    assert_int_equal(state_job_replica_failed(st, "job", "i-1", 0, "x", 3, 250.0, NULL, NULL), 0);

    /* refused: nothing written, the out-param untouched */
    assert_int_equal(state_job_complete(st, "job", "i-3", 1, 200.0, 300.0, &o), ERR_RANGE);
    assert_int_equal(state_job_complete(st, "nope", "i-1", 1, 200.0, 300.0, &o), ERR_UNKNOWN);
    assert_int_equal(state_job_complete(st, "job", "i-1", -1, 200.0, 300.0, &o), ERR_INVAL);
    assert_int_equal(state_job_complete(st, "job", "i-1", 1, INFINITY, 300.0, &o), ERR_INVAL);
    assert_int_equal(o, STATE_COMPLETE_FINISHED);

    /* attempt 0 (before the failure) without its placement, or another placement: stale */
    assert_int_equal(state_job_complete(st, "job", "i-1", 0, NAN, 300.0, &o), 0);
    assert_int_equal(o, STATE_COMPLETE_STALE);
    o = STATE_COMPLETE_FINISHED;
    assert_int_equal(state_job_complete(st, "job", "i-1", 0, 150.0, 300.0, &o), 0);
    assert_int_equal(o, STATE_COMPLETE_STALE);
    assert_int_equal(state_job_complete(st, "job", "i-2", 1, 150.0, 300.0, &o), 0);
    assert_int_equal(o, STATE_COMPLETE_STALE);
    assert_int_equal(job_state_now(st, "job"), STATE_JOB_RUNNING);

    /* the current one, from either node: finished, its allocation released */
    o = STATE_COMPLETE_STALE;
    assert_int_equal(state_job_complete(st, "job", "i-2", 1, 200.0, 300.0, &o), 0);
    assert_int_equal(o, STATE_COMPLETE_FINISHED);
    assert_int_equal(job_state_now(st, "job"), STATE_JOB_FINISHED);
    assert_int_equal(state_alloc_get(st, "job", &rows, &n), 0);
    assert_int_equal(n, 0);
    state_allocs_free(rows, n);
    /* told again (the other node, a retry): nothing more */
    assert_int_equal(state_job_complete(st, "job", "i-1", 1, 200.0, 301.0, &o), 0);
    assert_int_equal(o, STATE_COMPLETE_STALE);

    /* without a placement said, the attempt alone; a cancelled job refuses */
    running_on(st, "two", a, 1, 400.0);
    assert_int_equal(state_job_complete(st, "two", "i-2", 0, NAN, 410.0, &o), 0);
    assert_int_equal(o, STATE_COMPLETE_FINISHED);
    running_on(st, "three", a, 1, 400.0);
    assert_int_equal(state_job_set_state(st, "three", STATE_JOB_CANCELLED, 420.0), 0);
    assert_int_equal(state_job_complete(st, "three", "i-2", 0, 400.0, 430.0, &o), ERR_CONFLICT);
    state_close(st);
}

/* The race across nodes: rank 0 (i-1) ends the job's work, rank 1 (i-2) fails as its rendezvous'
 * host is gone, and rank 1's report comes first. Rank 0's completion of the attempt that failure
 * ended, in its placement, still finishes the job, whether the failure restarted it, failed it
 * (max_restarts 0) or it has moved since; from a node that did not hold it at the failure, from
 * another placement, from before two counted failures, or once something else failed it, it does
 * not. */
static void state_job_complete__after_its_peers_failure(void **state)
{
    const struct tmpdb *t = *state;
    struct state *st = open_state(t);
    const char *ids[] = {"i-1", "i-2", "i-3", "i-4"};
    struct state_alloc a[] = {{"i-1", 2, 0}, {"i-2", 2, 0}}, b[] = {{"i-3", 2, 0}, {"i-4", 2, 0}};
    enum state_complete_outcome o = STATE_COMPLETE_FINISHED;
    enum state_failure_outcome f = STATE_FAILURE_STALE;

    add_ready_nodes(st, ids, 4);
    running_on(st, "job", a, 2, 200.0);
    assert_int_equal(
        state_job_replica_failed(st, "job", "i-2", 0, "rank 1: exit 1", 3, 250.0, &f, NULL), 0);
    assert_int_equal(f, STATE_FAILURE_RESTART);
    /* a node that never held it; another placement; no placement said: nothing */
    assert_int_equal(state_job_complete(st, "job", "i-3", 0, 200.0, 260.0, &o), ERR_RANGE);
    assert_int_equal(state_job_complete(st, "job", "i-1", 0, 150.0, 260.0, &o), 0);
    assert_int_equal(o, STATE_COMPLETE_STALE);
    o = STATE_COMPLETE_FINISHED;
    assert_int_equal(state_job_complete(st, "job", "i-1", 0, NAN, 260.0, &o), 0);
    assert_int_equal(o, STATE_COMPLETE_STALE);
    assert_int_equal(job_state_now(st, "job"), STATE_JOB_RUNNING);
    assert_int_equal(state_job_complete(st, "job", "i-1", 0, 200.0, 270.0, &o), 0);
    assert_int_equal(o, STATE_COMPLETE_PEERS);
    assert_int_equal(job_state_now(st, "job"), STATE_JOB_FINISHED);

    /* max_restarts 0: the failure failed the job; the completion finishes it */
    running_on(st, "zero", a, 2, 300.0);
    assert_int_equal(state_job_replica_failed(st, "zero", "i-2", 0, "x", 0, 350.0, &f, NULL), 0);
    assert_int_equal(f, STATE_FAILURE_FAILED);
    assert_int_equal(state_job_complete(st, "zero", "i-3", 0, 300.0, 360.0, &o), ERR_CONFLICT);
    assert_int_equal(state_job_complete(st, "zero", "i-1", 0, 300.0, 360.0, &o), 0);
    assert_int_equal(o, STATE_COMPLETE_PEERS);
    assert_int_equal(job_state_now(st, "zero"), STATE_JOB_FINISHED);

    /* moved after the failure: a node of the failed placement still says so */
    running_on(st, "moved", a, 2, 400.0);
    assert_int_equal(state_job_replica_failed(st, "moved", "i-2", 0, "x", 3, 450.0, NULL, NULL), 0);
    assert_int_equal(state_alloc_replace(st, "moved", b, 2, 460.0), 0);
    assert_int_equal(state_job_complete(st, "moved", "i-1", 0, 400.0, 470.0, &o), 0);
    assert_int_equal(o, STATE_COMPLETE_PEERS);

    /* a node of the placement after the failure (i-3) has no say in the attempt it ended, whether
     * it holds the job still or has left it too */
    running_on(st, "later", a, 2, 1100.0);
    assert_int_equal(state_job_replica_failed(st, "later", "i-2", 0, "x", 3, 1150.0, NULL, NULL),
                     0);
    assert_int_equal(state_alloc_replace(st, "later", b, 2, 1160.0), 0);
    o = STATE_COMPLETE_FINISHED;
    assert_int_equal(state_job_complete(st, "later", "i-3", 0, 1100.0, 1170.0, &o), 0);
    assert_int_equal(o, STATE_COMPLETE_STALE);
    assert_int_equal(state_alloc_replace(st, "later", a, 2, 1180.0), 0);
    assert_int_equal(state_job_complete(st, "later", "i-3", 0, 1100.0, 1190.0, &o), ERR_RANGE);
    assert_int_equal(job_state_now(st, "later"), STATE_JOB_RUNNING);

    /* moved before the failure: a node it left then has no say in the new placement's attempt */
    running_on(st, "left", a, 2, 500.0);
    assert_int_equal(state_alloc_replace(st, "left", b, 2, 510.0), 0);
    assert_int_equal(state_job_replica_failed(st, "left", "i-4", 0, "x", 3, 550.0, NULL, NULL), 0);
    assert_int_equal(state_job_complete(st, "left", "i-1", 0, 510.0, 560.0, &o), ERR_RANGE);
    assert_int_equal(state_job_complete(st, "left", "i-3", 0, 510.0, 560.0, &o), 0);
    assert_int_equal(o, STATE_COMPLETE_PEERS);

    /* two failures counted since: stale */
    running_on(st, "twice", a, 2, 600.0);
    assert_int_equal(state_job_replica_failed(st, "twice", "i-2", 0, "x", 3, 650.0, NULL, NULL), 0);
    assert_int_equal(state_job_replica_failed(st, "twice", "i-2", 1, "x", 3, 660.0, NULL, NULL), 0);
    assert_int_equal(state_job_complete(st, "twice", "i-1", 0, 600.0, 670.0, &o), 0);
    assert_int_equal(o, STATE_COMPLETE_STALE);
    assert_int_equal(job_state_now(st, "twice"), STATE_JOB_RUNNING);

    /* failed since by something else (its hang timeout, or moved there): refused */
    running_on(st, "hung", a, 2, 700.0);
    assert_int_equal(state_job_replica_failed(st, "hung", "i-2", 0, "x", 3, 750.0, NULL, NULL), 0);
    assert_int_equal(state_job_fail(st, "hung", "no report for 600 s", 800.0), 0);
    o = STATE_COMPLETE_FINISHED;
    assert_int_equal(state_job_complete(st, "hung", "i-1", 0, 700.0, 810.0, &o), ERR_CONFLICT);
    assert_int_equal(o, STATE_COMPLETE_FINISHED);
    assert_int_equal(job_state_now(st, "hung"), STATE_JOB_FAILED);
    running_on(st, "set", a, 2, 900.0);
    assert_int_equal(state_job_replica_failed(st, "set", "i-2", 0, "x", 3, 950.0, NULL, NULL), 0);
    assert_int_equal(state_job_set_state(st, "set", STATE_JOB_FAILED, 1000.0), 0);
    assert_int_equal(state_job_complete(st, "set", "i-1", 0, 900.0, 1010.0, &o), ERR_CONFLICT);
    state_close(st);
}

static void state_job_replica_failed__attempts_streaks_and_the_limit(void **state)
{
    const struct tmpdb *t = *state;
    struct state *st = open_state(t);
    const char *ids[] = {"i-1", "i-2", "i-3"};
    struct state_alloc a[] = {{"i-1", 2, 0}, {"i-2", 2, 0}};
    enum state_failure_outcome o = STATE_FAILURE_FAILED;
    int streak = -1;

    add_ready_nodes(st, ids, 3);
    running_on(st, "job", a, 2, 200.0);
    assert_failures(st, "job", 0, 0, "", STATE_JOB_RUNNING);

    /* refused: nothing written, out-params untouched */
    assert_int_equal(state_job_replica_failed(st, "job", "i-3", 0, "x", 2, 300.0, &o, &streak),
                     ERR_RANGE);
    assert_int_equal(state_job_replica_failed(st, "nope", "i-1", 0, "x", 2, 300.0, &o, &streak),
                     ERR_UNKNOWN);
    assert_int_equal(state_job_replica_failed(st, "job", "i-1", -1, "x", 2, 300.0, &o, &streak),
                     ERR_INVAL);
    assert_int_equal(state_job_replica_failed(st, "job", "i-1", 0, "", 2, 300.0, &o, &streak),
                     ERR_INVAL);
    assert_int_equal(state_job_replica_failed(st, "job", "i-1", 0, "x", -1, 300.0, &o, &streak),
                     ERR_INVAL);
    assert_int_equal(o, STATE_FAILURE_FAILED);
    assert_int_equal(streak, -1);
    assert_failures(st, "job", 0, 0, "", STATE_JOB_RUNNING);

    /* attempt 0 fails on i-2: counted once, rank 0's report of the same attempt is stale */
    assert_int_equal(state_job_replica_failed(st, "job", "i-2", 0, "rank 3 exited with status 1", 2,
                                              300.0, &o, &streak),
                     0);
    assert_int_equal(o, STATE_FAILURE_RESTART);
    assert_int_equal(streak, 1);
    assert_int_equal(state_job_replica_failed(st, "job", "i-1", 0, "rank 0 exited with status 1", 2,
                                              301.0, &o, &streak),
                     0);
    assert_int_equal(o, STATE_FAILURE_STALE);
    assert_int_equal(streak, 1);
    assert_failures(st, "job", 1, 1, "rank 3 exited with status 1", STATE_JOB_RUNNING);

    /* attempt 1 fails without progress: the streak grows */
    assert_int_equal(state_job_replica_failed(st, "job", "i-1", 1, "rank 0 killed by signal 9", 2,
                                              310.0, &o, &streak),
                     0);
    assert_int_equal(o, STATE_FAILURE_RESTART);
    assert_int_equal(streak, 2);
    /* progress since: attempt 2's failure starts a new streak */
    assert_int_equal(state_job_progress(st, "job", 4.0), 0);
    assert_int_equal(state_job_replica_failed(st, "job", "i-1", 2, "rank 0 exited with status 2", 2,
                                              320.0, &o, &streak),
                     0);
    assert_int_equal(streak, 1);
    assert_failures(st, "job", 3, 1, "rank 0 exited with status 2", STATE_JOB_RUNNING);

    /* two more in a row without progress: 2 is still within max_restarts, 3 is above it */
    assert_int_equal(state_job_replica_failed(st, "job", "i-2", 3, "a", 2, 330.0, &o, &streak), 0);
    assert_int_equal(o, STATE_FAILURE_RESTART);
    assert_int_equal(streak, 2);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM allocations"), 2);
    assert_int_equal(state_job_replica_failed(st, "job", "i-2", 4, "b", 2, 340.0, &o, &streak), 0);
    assert_int_equal(o, STATE_FAILURE_FAILED);
    assert_int_equal(streak, 3);
    assert_failures(st, "job", 5, 3, "b", STATE_JOB_FAILED);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM allocations"), 0);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM jobs WHERE finished_at = 340.0"), 1);

    /* a failed job takes no more reports */
    assert_int_equal(state_job_replica_failed(st, "job", "i-2", 5, "c", 2, 350.0, &o, &streak),
                     ERR_CONFLICT);
    assert_failures(st, "job", 5, 3, "b", STATE_JOB_FAILED);
    state_close(st);
}

/* Version 5's jobs read as never failed after the migration to 6, and can fail. */
static void state_open__migrates_v5_to_v6(void **state)
{
    const struct tmpdb *t = *state;
    const char *ids[] = {"i-1"};
    struct state_alloc a[] = {{"i-1", 1, 0}};
    struct state *st = NULL;
    enum state_failure_outcome o;

    assert_int_equal(state_open_version(t->path, 5, &st, NULL), 0);
    assert_int_equal(state_job_submit(st, "old", "{}", 5.0), 0);
    st = reopen_latest(t, st);
    assert_failures(st, "old", 0, 0, "", STATE_JOB_PENDING);
    add_ready_nodes(st, ids, 1);
    assert_int_equal(state_alloc_replace(st, "old", a, 1, 200.0), 0);
    assert_int_equal(state_job_replica_failed(st, "old", "i-1", 0, "why", 0, 300.0, &o, NULL), 0);
    assert_int_equal(o, STATE_FAILURE_FAILED);
    assert_failures(st, "old", 1, 1, "why", STATE_JOB_FAILED);
    state_close(st);
}

/* Job events: kept in order with their node (or none); only the newest STATE_EVENTS_KEPT stay;
 * a list gives the newest, oldest first; a message too long is cut (at a character: the text
 * stays UTF-8); an unknown job and bad
 * arguments are refused and write nothing. */
static void state_events__kept_newest_first_cut(void **state)
{
    const struct tmpdb *t = *state;
    struct state *st = open_state(t);
    struct state_event *ev = NULL;
    char long_msg[STATE_EVENT_MESSAGE_MAX + 40];
    size_t n = 9;

    assert_int_equal(state_job_submit(st, "j", "{}", 1.0), 0);
    assert_int_equal(state_job_submit(st, "k", "{}", 1.0), 0);
    assert_int_equal(state_event_add(st, "j", 2.0, "submitted", NULL, "submitted"), 0);
    assert_int_equal(state_event_add(st, "j", 3.0, "placed", "i-1", "placed on i-1"), 0);
    assert_int_equal(state_event_add(st, "k", 3.5, "submitted", NULL, "k's"), 0);
    assert_int_equal(state_events_list(st, "j", 10, &ev, &n), 0);
    assert_int_equal(n, 2);
    assert_string_equal(ev[0].kind, "submitted");
    assert_null(ev[0].node);
    assert_true(ev[1].at == 3.0 && ev[1].id > ev[0].id);
    assert_string_equal(ev[1].node, "i-1");
    assert_string_equal(ev[1].message, "placed on i-1");
    state_events_free(ev, n);
    /* refused: nothing written */
    assert_int_equal(state_event_add(st, "nope", 4.0, "x", NULL, "m"), ERR_UNKNOWN);
    assert_int_equal(state_event_add(st, "j", 4.0, "", NULL, "m"), ERR_INVAL);
    assert_int_equal(state_event_add(st, "j", 4.0, "x", NULL, ""), ERR_INVAL);
    assert_int_equal(
        state_event_add(st, "j", 4.0, "a-kind-far-longer-than-thirty-two-bytes", NULL, "m"),
        ERR_INVAL);
    assert_int_equal(state_events_list(st, "nope", 10, &ev, &n), ERR_UNKNOWN);
    assert_int_equal(state_events_list(st, "j", 0, &ev, &n), ERR_INVAL);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM events"), 3);
    /* a long message is cut; only the newest STATE_EVENTS_KEPT of a job stay */
    memset(long_msg, 'x', sizeof(long_msg) - 1);
    long_msg[sizeof(long_msg) - 1] = '\0';
    assert_int_equal(state_event_add(st, "j", 5.0, "long", NULL, long_msg), 0);
    for (int i = 0; i < STATE_EVENTS_KEPT; i++)
        assert_int_equal(state_event_add(st, "j", 10.0 + i, "tick", NULL, "t"), 0);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM events WHERE kind = 'long'"), 0);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM events e JOIN jobs j ON j.id = e.job_id"
                                    " WHERE j.name = 'j'"),
                     STATE_EVENTS_KEPT);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM events e JOIN jobs j ON j.id = e.job_id"
                                    " WHERE j.name = 'k'"),
                     1); /* another job's stay */
    assert_int_equal(state_events_list(st, "j", 3, &ev, &n), 0);
    assert_int_equal(n, 3);
    assert_true(ev[0].at == 10.0 + STATE_EVENTS_KEPT - 3 &&
                ev[2].at == 10.0 + STATE_EVENTS_KEPT - 1);
    state_events_free(ev, n);
    state_close(st);
    st = open_state(t);
    assert_int_equal(state_event_add(st, "k", 6.0, "long", NULL, long_msg), 0);
    assert_int_equal(count_rows(st, "SELECT length(message) FROM events WHERE kind = 'long'"),
                     STATE_EVENT_MESSAGE_MAX);
    /* a cut through a character (a two-byte one from the last byte kept on) keeps the text
     * UTF-8: the cut half is a '?' */
    long_msg[STATE_EVENT_MESSAGE_MAX - 1] = '\xc3';
    long_msg[STATE_EVENT_MESSAGE_MAX] = '\xa9';
    assert_int_equal(state_event_add(st, "k", 7.0, "utf8", NULL, long_msg), 0);
    assert_int_equal(state_events_list(st, "k", 1, &ev, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(strlen(ev[0].message), STATE_EVENT_MESSAGE_MAX);
    assert_int_equal(ev[0].message[STATE_EVENT_MESSAGE_MAX - 1], '?');
    assert_int_equal(ev[0].message[STATE_EVENT_MESSAGE_MAX - 2], 'x');
    state_events_free(ev, n);
    state_close(st);
}

/* Version 6 has no events; migrated to 7, its jobs take them. */
static void state_open__migrates_v6_to_v7(void **state)
{
    const struct tmpdb *t = *state;
    struct state *st = NULL;

    assert_int_equal(state_open_version(t->path, 6, &st, NULL), 0);
    assert_int_equal(state_job_submit(st, "old", "{}", 5.0), 0);
    assert_true(state_event_add(st, "old", 6.0, "x", NULL, "m") < 0); /* no table yet */
    st = reopen_latest(t, st);
    assert_int_equal(state_event_add(st, "old", 6.0, "submitted", NULL, "before events"), 0);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM events"), 1);
    state_close(st);
}

static void state_open__migrates_v7_to_v8(void **state)
{
    const struct tmpdb *t = *state;
    struct state *st = NULL;
    struct state_node node = node_of("static-1", 2, NULL, 0), got;

    assert_int_equal(state_open_version(t->path, 7, &st, NULL), 0);
    assert_int_equal(state_node_upsert(st, &node), 0);
    st = reopen_latest(t, st);
    assert_int_equal(state_node_get(st, "static-1", &got), 0);
    assert_true(isnan(got.fence_s));
    state_node_clear(&got);
    state_close(st);
}

/* A node's costs tick by tick make one row per UTC hour: an interval that follows the node's last
 * row and ends in its hour grows it; one that runs into the next hour is split at the hour, its
 * dollars by the seconds on each side; one that leaves a gap starts a new row. The dollars are the
 * same either way, and what a period cost counts what the rows hold after it began. */
static void state_cost_add__one_row_per_node_and_hour(void **state)
{
    static const char *const ids[] = {"i-1", "i-2"};
    struct state *st = open_state(*state);
    double total = 0, since = 0;

    add_ready_nodes(st, ids, 2);
    for (int k = 0; k < 59; k++) /* 7200 .. 10740: one hour's ticks, a minute each */
        assert_int_equal(state_cost_add(st, "i-1", 7200.0 + 60 * k, 7260.0 + 60 * k, 0.01), 0);
    assert_int_equal(state_cost_add(st, "i-2", 7200.0, 7260.0, 1.0), 0); /* its own row */
    assert_int_equal(count_rows(st, "SELECT count(*) FROM costs"), 2);
    assert_int_equal(state_cost_add(st, "i-1", 10740.0, 10830.0, 0.03), 0); /* into the next hour */
    assert_int_equal(count_rows(st, "SELECT count(*) FROM costs WHERE end_at = 10800"), 1);
    assert_int_equal(state_cost_add(st, "i-1", 10830.0, 10890.0, 0.01), 0);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM costs"), 3);
    assert_int_equal(state_cost_add(st, "i-1", 10950.0, 11010.0, 0.01), 0); /* after a gap */
    assert_int_equal(count_rows(st, "SELECT count(*) FROM costs"), 4);
    assert_int_equal(state_cost_total(st, &total), 0);
    assert_float_equal(total, 0.59 + 1.0 + 0.05, 1e-9);
    assert_int_equal(state_cost_since(st, 10800.0, &since), 0); /* from 03:00 */
    assert_float_equal(since, 0.01 + 0.01 + 0.01, 1e-9);
    assert_int_equal(state_cost_since(st, NAN, &since), ERR_INVAL);
    state_close(st);
}

/* A span over midnight (a controller down from 20:00 to 02:00, its nodes billed all along) is
 * recorded in each hour it covers: the day it began holds its 4 hours, the new day (a spend
 * limit's period, `castor costs --by day`) only its 2. */
static void state_cost_add__a_span_over_midnight_counts_in_each_day(void **state)
{
    static const char *const ids[] = {"i-1"};
    struct state *st = open_state(*state);
    struct state_cost_row *rows = NULL;
    const double day = 86400 * 2;
    double since = 0;
    size_t n = 0;

    add_ready_nodes(st, ids, 1);
    assert_int_equal(state_cost_add(st, "i-1", day - 4 * 3600, day + 2 * 3600, 60.0), 0);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM costs"), 6); /* one an hour */
    assert_int_equal(state_cost_since(st, day, &since), 0);
    assert_float_equal(since, 20.0, 1e-9);
    assert_int_equal(state_cost_report(st, 0, INFINITY, STATE_COST_BY_DAY, &rows, &n), 0);
    assert_int_equal(n, 2);
    assert_string_equal(rows[0].key, "1970-01-02");
    assert_float_equal(rows[0].dollars, 40.0, 1e-9);
    assert_string_equal(rows[1].key, "1970-01-03");
    assert_float_equal(rows[1].dollars, 20.0, 1e-9);
    state_cost_rows_free(rows, n);
    state_close(st);
}

/* A job failed by the controller (its cost limit) keeps the reason and time, loses its allocation
 * and cannot be failed again; bad arguments write nothing. */
static void state_job_fail__reason_kept_allocation_released(void **state)
{
    static const char *const ids[] = {"i-1"};
    struct state *st = open_state(*state);
    struct state_alloc rows[] = {{"i-1", 2, 0}};
    struct state_alloc *got = NULL;
    struct state_job job;
    size_t n = 9;

    add_ready_nodes(st, ids, 1);
    assert_int_equal(state_job_submit(st, "a", "{}", 1.0), 0);
    assert_int_equal(state_alloc_replace(st, "a", rows, 1, 2.0), 0);
    assert_int_equal(state_job_fail(st, "a", "", 3.0), ERR_INVAL);
    assert_int_equal(state_job_fail(st, "nope", "why", 3.0), ERR_UNKNOWN);
    assert_int_equal(state_job_get(st, "a", &job), 0);
    assert_int_equal(job.state, STATE_JOB_PENDING);
    state_job_clear(&job);
    assert_int_equal(state_job_fail(st, "a", "it cost too much", 3.0), 0);
    assert_int_equal(state_job_get(st, "a", &job), 0);
    assert_int_equal(job.state, STATE_JOB_FAILED);
    assert_string_equal(job.failure, "it cost too much");
    assert_true(job.failure_at == 3.0 && job.finished_at == 3.0);
    state_job_clear(&job);
    assert_int_equal(state_alloc_get(st, "a", &got, &n), 0);
    assert_int_equal(n, 0);
    state_allocs_free(got, n);
    assert_int_equal(state_job_fail(st, "a", "again", 4.0), ERR_CONFLICT);
    state_close(st);
}

/* A backup taken while another connection writes holds what was committed and not what is still
 * in a transaction; it is whole (integrity checked), the owner's alone, and never overwrites. */
static void state_backup__a_consistent_copy(void **state)
{
    const struct tmpdb *t = *state;
    struct state *st = open_state(t), *writer = open_state(t), *copy = NULL;
    struct state_backup_info info = {0};
    struct state_job job;
    struct error e = {0};
    struct stat sb;
    char path[600];

    snprintf(path, sizeof(path), "%s.backup", t->path);
    assert_int_equal(state_job_submit(st, "done", "{}", 1.0), 0);
    assert_int_equal(db_begin(state_db(writer)), 0);
    assert_int_equal(db_exec(state_db(writer), "INSERT INTO jobs (name, spec, state, submitted_at)"
                                               " VALUES ('half', '{}', 'pending', 2)"),
                     0);
    assert_int_equal(state_backup(st, path, &info, &e), 0);
    assert_int_equal(db_rollback(state_db(writer)), 0);
    assert_int_equal(info.version, STATE_SCHEMA_VERSION);
    assert_int_equal(info.jobs, 1);
    assert_true(info.bytes > 0);
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    assert_int_equal(state_backup(st, path, NULL, &e), ERR_CONFLICT);
    assert_non_null(strstr(e.msg, "exists"));
    assert_int_equal(state_open(path, &copy, NULL), 0);
    assert_int_equal(state_job_get(copy, "done", &job), 0);
    state_job_clear(&job);
    assert_int_equal(state_job_get(copy, "half", &job), ERR_UNKNOWN);
    state_close(copy);
    unlink(path);
    state_close(writer);
    state_close(st);
}

/* Version 10 has no node_replicas; migrated to 11, a node's heartbeat says what is alive there,
 * replaced by its next heartbeat, cleared by one that says nothing and when the node is
 * terminated; a bad entry is refused and writes nothing; the lookup by job uses its index. */
static void state_open__migrates_v10_to_v11(void **state)
{
    static const struct state_alive alive[] = {{"a", "g1"}, {"a", "g1"}, {"a", "g2"}, {"b", "g1"}};
    static const struct state_alive bad[] = {{"a", "g3"}, {"a", ""}};
    const struct tmpdb *t = *state;
    struct state *st = NULL;
    struct state_node node = node_of("static-1", 2, NULL, 0);
    char **ids = NULL, plan[256];
    size_t n = 0;

    node.state = STATE_NODE_READY;
    assert_int_equal(state_open_version(t->path, 10, &st, NULL), 0);
    assert_int_equal(state_node_upsert(st, &node), 0);
    st = reopen_latest(t, st);
    /* (a node says alive only replicas of the jobs it holds: both on it) */
    {
        const struct state_alloc on[] = {{"static-1", 1, 0}};

        assert_int_equal(state_job_submit(st, "a", "{}", 100.0), 0);
        assert_int_equal(state_job_submit(st, "b", "{}", 100.0), 0);
        assert_int_equal(state_alloc_replace(st, "a", on, 1, 150.0), 0);
        assert_int_equal(state_alloc_replace(st, "b", on, 1, 150.0), 0);
    }
    assert_int_equal(state_node_heartbeat(st, "static-1", 200.0, alive, 4), 0);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM node_replicas"), 3);
    /* a's generation g1 is current elsewhere: g2 is stale there; b's g1 is its current one */
    assert_int_equal(state_job_stale_nodes(st, "a", "g1", NULL, 201.0, &ids, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(ids[0], "static-1");
    state_strv_free(ids, n);
    assert_int_equal(state_job_stale_nodes(st, "a", "g1", "static-1", 201.0, &ids, &n), 0);
    assert_int_equal(n, 0); /* the node asking is left out */
    state_strv_free(ids, n);
    assert_int_equal(state_job_stale_nodes(st, "b", "g1", NULL, 201.0, &ids, &n), 0);
    assert_int_equal(n, 0);
    state_strv_free(ids, n);
    assert_int_equal(state_node_heartbeat(st, "static-1", 202.0, bad, 2), ERR_INVAL);
    assert_int_equal(state_node_heartbeat(st, "static-1", 202.0, NULL, 1), ERR_INVAL);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM node_replicas"), 3);
    assert_int_equal(state_node_heartbeat(st, "static-1", 203.0, alive + 3, 1), 0);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM node_replicas"), 1);
    assert_int_equal(state_node_heartbeat(st, "static-1", 204.0, NULL, 0), 0);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM node_replicas"), 0);
    assert_int_equal(state_node_heartbeat(st, "static-1", 205.0, alive, 4), 0);
    assert_int_equal(state_node_set_state(st, "static-1", STATE_NODE_TERMINATED, 206.0), 0);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM node_replicas"), 0);
    assert_non_null(
        strstr(query_plan(state_db(st),
                          "EXPLAIN QUERY PLAN SELECT node_id FROM node_replicas WHERE job = 'a'",
                          plan, sizeof(plan)),
               "node_replicas_by_job"));
    state_close(st);
}

static void state_open__migrates_v9_to_v10(void **state)
{
    const struct tmpdb *t = *state;
    struct state *st = NULL;
    struct state_node node = node_of("static-1", 2, NULL, 0), got;

    assert_int_equal(state_open_version(t->path, 9, &st, NULL), 0);
    assert_int_equal(state_node_upsert(st, &node), 0);
    st = reopen_latest(t, st);
    assert_int_equal(state_node_get(st, "static-1", &got), 0);
    assert_null(got.agent);
    state_node_clear(&got);
    state_close(st);
}

static void state_open__migrates_v8_to_v9(void **state)
{
    const struct tmpdb *t = *state;
    struct state *st = NULL;
    struct state_job job;

    assert_int_equal(state_open_version(t->path, 8, &st, NULL), 0);
    assert_int_equal(state_job_submit(st, "old", "{}", 5.0), 0);
    st = reopen_latest(t, st);
    assert_int_equal(state_job_get(st, "old", &job), 0);
    assert_true(job.dollars == 0.0);
    state_job_clear(&job);
    state_close(st);
}

/* A static node's self-fence is kept (none when 0); a bad one is refused. A static node that was
 * terminated (taken down, or its cluster torn down) registers again over its old row, with what
 * its new agent says; a launched node terminated does not come back. */
static void state_node_register__fence_and_static_return(void **state)
{
    const struct tmpdb *t = *state;
    struct state *st = open_state(t);
    struct state_node node = node_of("static-1", 2, NULL, 0), got;

    node.fence_s = 90;
    assert_int_equal(state_node_register(st, &node, 200.0), 0);
    assert_int_equal(state_node_get(st, "static-1", &got), 0);
    assert_true(got.fence_s == 90.0);
    state_node_clear(&got);
    assert_int_equal(state_node_set_state(st, "static-1", STATE_NODE_TERMINATED, 300.0), 0);
    node.gpus = 8;
    node.fence_s = 0;
    node.launched_at = 400.0;
    assert_int_equal(state_node_register(st, &node, 400.0), 0);
    assert_int_equal(state_node_get(st, "static-1", &got), 0);
    assert_int_equal(got.state, STATE_NODE_READY);
    assert_int_equal(got.gpus, 8);
    assert_true(isnan(got.fence_s) && isnan(got.terminated_at) && got.ready_at == 400.0 &&
                got.heartbeat_at == 400.0 && got.launched_at == 400.0);
    state_node_clear(&got);
    assert_int_equal(state_node_register(st, &node, 401.0), ERR_CONFLICT); /* ready: twice */

    /* a launched node, terminated */
    assert_int_equal(state_intent_record(st, "tok", "g4dn.12xlarge", 1, 90.0), 0);
    node = node_of("i-1", 4, "tok", 0);
    assert_int_equal(state_node_upsert(st, &node), 0);
    assert_int_equal(state_node_set_state(st, "i-1", STATE_NODE_TERMINATED, 300.0), 0);
    node = node_of("i-1", 4, NULL, 0);
    assert_int_equal(state_node_register(st, &node, 500.0), ERR_CONFLICT);
    assert_int_equal(state_node_get(st, "i-1", &got), 0);
    assert_int_equal(got.state, STATE_NODE_TERMINATED);
    state_node_clear(&got);

    /* the agent that registered a node, again (its answer lost): answered; another: refused */
    node = node_of("static-5", 2, NULL, 0);
    node.agent = "00112233445566778899aabbccddeeff";
    assert_int_equal(state_node_register(st, &node, 600.0), 0);
    assert_int_equal(state_node_register(st, &node, 610.0), 0);
    assert_int_equal(state_node_get(st, "static-5", &got), 0);
    assert_true(got.heartbeat_at == 610.0 && got.ready_at == 600.0);
    assert_string_equal(got.agent, "00112233445566778899aabbccddeeff");
    state_node_clear(&got);
    node.agent = "ffeeddccbbaa99887766554433221100";
    assert_int_equal(state_node_register(st, &node, 620.0), ERR_CONFLICT);
    node.agent = NULL;
    assert_int_equal(state_node_register(st, &node, 620.0), ERR_CONFLICT);
    node.agent = "short";
    assert_int_equal(state_node_register(st, &node, 620.0), ERR_INVAL);

    /* bad fences: nothing written */
    node = node_of("static-2", 2, NULL, 0);
    node.fence_s = -1;
    assert_int_equal(state_node_register(st, &node, 500.0), ERR_INVAL);
    node.fence_s = INFINITY;
    assert_int_equal(state_node_register(st, &node, 500.0), ERR_INVAL);
    node.fence_s = STATE_NODE_FENCE_MAX + 1;
    assert_int_equal(state_node_register(st, &node, 500.0), ERR_INVAL);
    assert_int_equal(state_node_get(st, "static-2", &got), ERR_UNKNOWN);
    state_close(st);
}

/* A checkpoint's progress never goes back: a late report below the one recorded (replicas of an
 * earlier generation stopping after the new ones checkpointed further) changes nothing, time
 * included, and answers 0; an equal one or a higher one is recorded. */
static void state_job_checkpoint__a_late_lower_one_changes_nothing(void **state)
{
    struct state *st = open_state(*state);
    struct state_job job;

    assert_int_equal(state_job_submit(st, "a", "{}", 1.0), 0);
    assert_int_equal(state_job_checkpoint(st, "a", 40.0, 100.0), 0);
    assert_int_equal(state_job_checkpoint(st, "a", 25.0, 110.0), 0); /* the old generation's */
    assert_int_equal(state_job_get(st, "a", &job), 0);
    assert_true(job.checkpoint_progress == 40.0 && job.checkpoint_at == 100.0 &&
                job.progress == 40.0);
    state_job_clear(&job);
    assert_int_equal(state_job_checkpoint(st, "a", 40.0, 120.0), 0);
    assert_int_equal(state_job_checkpoint(st, "a", 55.0, 130.0), 0);
    assert_int_equal(state_job_get(st, "a", &job), 0);
    assert_true(job.checkpoint_progress == 55.0 && job.checkpoint_at == 130.0 &&
                job.progress == 55.0);
    state_job_clear(&job);
    state_close(st);
}

/* The mode of the file at path, its permission bits only (-1 when it is not there). */
static int mode_of(const char *path)
{
    struct stat sb;

    return stat(path, &sb) == 0 ? (int)(sb.st_mode & 0777) : -1;
}

/* The state holds secrets (the key of the nodes' tokens): a new one is its owner's alone, and so
 * is its -wal, whatever the umask; one that others may read (an older castor's, made under the
 * umask) is refused, for writing and for a backup, saying how to mend it, and left as it was. */
static void state_open__the_owners_alone(void **state)
{
    const struct tmpdb *t = *state;
    unsigned char key[32] = {1, 2, 3}, got[32];
    struct state *st = NULL;
    struct error e = {0};
    char wal[128];
    mode_t old = umask(022);

    snprintf(wal, sizeof(wal), "%s-wal", t->path);
    st = open_state(t);
    umask(old);
    assert_int_equal(state_secret(st, "node-token-key", key, sizeof(key), got), 0);
    assert_int_equal(mode_of(t->path), 0600);
    assert_int_equal(mode_of(wal), 0600);
    state_close(st);
    st = NULL;
    assert_int_equal(chmod(t->path, 0644), 0);
    assert_int_equal(state_open(t->path, &st, &e), ERR_INVAL);
    assert_null(st);
    assert_string_equal(e.file, t->path);
    assert_non_null(strstr(e.msg, "mode 644"));
    assert_non_null(strstr(e.msg, "chmod 600"));
    assert_int_equal(state_open_readonly(t->path, &st, NULL, &e), ERR_INVAL);
    assert_null(st);
    assert_int_equal(mode_of(t->path), 0644);
    assert_int_equal(chmod(t->path, 0600), 0);
    st = open_state(t);
    assert_int_equal(state_secret(st, "node-token-key", got, sizeof(got), got), 0);
    assert_memory_equal(got, key, sizeof(key));
    state_close(st);
}

/* A backup taken by this castor of an older one's state (which may still run on it) copies it as
 * it is: opened read only, neither the state nor its copy is migrated, both keep their rows, and
 * a write on it is refused; the copy migrates when a castor opens it. A state newer than this
 * castor, and a file that is not castor's, are refused and left as they were. */
static void state_backup__an_older_schema_as_it_is(void **state)
{
    const struct tmpdb *t = *state;
    struct state_backup_info info = {0};
    struct state *st = NULL, *copy = NULL;
    struct error e = {0};
    struct db *db = NULL;
    struct state_job job;
    char path[600];
    int v = 0;

    snprintf(path, sizeof(path), "%s.backup", t->path);
    assert_int_equal(state_open_version(t->path, 12, &st, NULL), 0);
    assert_int_equal(state_job_submit(st, "old", "{}", 1.0), 0);
    state_close(st);
    st = NULL;
    assert_int_equal(state_open_readonly(t->path, &st, &v, &e), 0);
    assert_int_equal(v, 12);
    assert_int_equal(state_job_submit(st, "new", "{}", 2.0), ERR_IO);
    assert_int_equal(state_backup(st, path, &info, &e), 0);
    assert_int_equal(info.version, 12);
    assert_int_equal(info.jobs, 1);
    state_close(st);
    st = NULL;
    assert_int_equal(state_open_readonly(t->path, &st, &v, &e), 0);
    assert_int_equal(v, 12);
    state_close(st);
    st = NULL;
    assert_int_equal(state_open_readonly(path, &copy, &v, &e), 0);
    assert_int_equal(v, 12);
    state_close(copy);
    copy = NULL;
    assert_int_equal(state_open(path, &copy, &e), 0);
    assert_int_equal(state_version(copy, &v), 0);
    assert_int_equal(v, STATE_SCHEMA_VERSION);
    assert_int_equal(state_job_get(copy, "old", &job), 0);
    state_job_clear(&job);
    state_close(copy);
    unlink(path);

    /* newer than this castor */
    assert_int_equal(db_open(t->path, &db, NULL), 0);
    assert_int_equal(db_set_user_version(db, STATE_SCHEMA_VERSION + 1), 0);
    db_close(db);
    assert_int_equal(state_open_readonly(t->path, &st, &v, &e), ERR_RANGE);
    assert_null(st);
    assert_non_null(strstr(e.msg, "newer than this castor knows"));
    /* not castor's */
    assert_int_equal(db_open(t->path, &db, NULL), 0);
    assert_int_equal(db_exec(db, "PRAGMA application_id = 1234"), 0);
    db_close(db);
    assert_int_equal(state_open_readonly(t->path, &st, &v, &e), ERR_INVAL);
    assert_non_null(strstr(e.msg, "not a castor state database"));
    assert_null(st);
}

/* Run constant SQL on the state's connection (rows made as an older castor made them). */
static void exec_sql(struct state *st, const char *sql)
{
    if (db_exec(state_db(st), sql) != 0)
        fail_msg("%s: %s", sql, db_errmsg(state_db(st)));
}

/* Two ready nodes of 4 GPUs (i-1, i-2), jobs a on i-1 (1 replica) and b on i-1 (2) and i-2 (4),
 * and an hour of costs ($4 on i-1, $2 on i-2) shared as castor shares them: a $1, b $4. Written
 * row by row, as a castor of an older version did (its operations write tables it did not
 * have). */
static void old_fleet(struct state *st)
{
    static const char *const ids[] = {"i-1", "i-2"};

    for (int i = 0; i < 2; i++) {
        struct state_node node = node_of(ids[i], 4, NULL, 0);

        node.state = STATE_NODE_READY;
        node.ready_at = 110.0;
        assert_int_equal(state_node_upsert(st, &node), 0);
    }
    assert_int_equal(state_job_submit(st, "a", "{}", 1.0), 0);
    assert_int_equal(state_job_submit(st, "b", "{}", 1.0), 0);
    exec_sql(st, "UPDATE jobs SET state = 'running'");
    exec_sql(st, "INSERT INTO allocations (job_id, node_id, replicas, since)"
                 " SELECT j.id, n.id, CASE WHEN j.name = 'a' THEN 1 WHEN n.instance_id = 'i-1'"
                 " THEN 2 ELSE 4 END, 120 FROM jobs j, nodes n"
                 " WHERE j.name = 'b' OR n.instance_id = 'i-1'");
    exec_sql(st, "INSERT INTO costs (node_id, start_at, end_at, dollars)"
                 " SELECT id, 0, 3600, CASE instance_id WHEN 'i-1' THEN 4 ELSE 2 END FROM nodes");
    exec_sql(st, "UPDATE jobs SET dollars = CASE name WHEN 'a' THEN 1 ELSE 4 END");
}

/* What old_fleet made is all there: the nodes ready, the allocations, the costs, the dollars
 * (with more spent on b's 4 GPUs of i-2 since). */
static void assert_old_fleet(struct state *st, double more)
{
    struct state_alloc *rows = NULL;
    struct state_node node;
    double total = 0;
    size_t n = 0;

    assert_int_equal(state_node_get(st, "i-2", &node), 0);
    assert_int_equal(node.state, STATE_NODE_READY);
    state_node_clear(&node);
    assert_int_equal(state_alloc_get(st, "b", &rows, &n), 0);
    assert_int_equal(n, 2);
    assert_true(strcmp(rows[0].node, "i-1") == 0 && rows[0].replicas == 2 &&
                strcmp(rows[1].node, "i-2") == 0 && rows[1].replicas == 4);
    state_allocs_free(rows, n);
    assert_int_equal(state_alloc_get(st, "a", &rows, &n), 0);
    assert_int_equal(n, 1);
    state_allocs_free(rows, n);
    assert_int_equal(state_cost_total(st, &total), 0);
    assert_float_equal(total, 6.0 + more, 1e-12);
    assert_float_equal(job_dollars(st, "a"), 1.0, 1e-12);
    assert_float_equal(job_dollars(st, "b"), 4.0 + more, 1e-12);
}

/* Version 11 has no node_job_costs: a fleet live at the migration (nodes, allocations, costs,
 * each job's dollars) is kept whole, with no shares by node; the hours after it are shared by
 * node too, so that a node taken back (state_cost_refund) returns its whole cost and the shares
 * recorded since, while those from before stay with their jobs (as the migration says). */
static void state_open__migrates_v11_to_v12(void **state)
{
    const struct tmpdb *t = *state;
    struct state_cost_share *shares = NULL;
    struct state *st = NULL;
    size_t nshares = 0;
    double back = 0;

    assert_int_equal(state_open_version(t->path, 11, &st, NULL), 0);
    old_fleet(st);
    st = reopen_latest(t, st);
    assert_old_fleet(st, 0.0);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM node_job_costs"), 0);
    assert_int_equal(state_cost_add(st, "i-1", 3600.0, 7200.0, 4.0), 0);
    assert_float_equal(job_dollars(st, "a"), 2.0, 1e-12);
    assert_float_equal(job_dollars(st, "b"), 6.0, 1e-12);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM node_job_costs"), 2);
    assert_int_equal(state_cost_refund(st, "i-1", &back, &shares, &nshares), 0);
    assert_float_equal(back, 8.0, 1e-12);
    assert_int_equal(nshares, 2);
    assert_true(strcmp(shares[0].job, "a") == 0 && strcmp(shares[1].job, "b") == 0);
    assert_float_equal(shares[0].dollars, 1.0, 1e-12);
    assert_float_equal(shares[1].dollars, 2.0, 1e-12);
    state_cost_shares_free(shares, nshares);
    assert_float_equal(job_dollars(st, "a"), 1.0, 1e-12);
    assert_float_equal(job_dollars(st, "b"), 4.0, 1e-12);
    state_close(st);
}

/* Version 12 has no secrets and no node_jobs_held: a fleet live at the migration (nodes their
 * agents registered, allocations, costs and their shares by node) is kept whole. No key of the
 * nodes' tokens comes from before (the tokens the nodes hold were made under another): the one
 * kept is the one drawn after, so the nodes register again; the agent that registered one is
 * answered, another only once the node is taken down. A job moved off a node from then on is
 * held there for a while: that node's heartbeat counts for it, another's does not. */
static void state_open__migrates_v12_to_v13(void **state)
{
    static const struct state_alive alive[] = {{"a", "g1"}};
    const struct tmpdb *t = *state;
    struct state_node node = node_of("i-1", 4, NULL, 0);
    struct state_alloc on2[] = {{"i-2", 1, 0}};
    unsigned char fresh[32], got[32];
    struct state_cost_share *shares = NULL;
    struct state *st = NULL;
    char **stale = NULL;
    size_t n = 0;

    for (int i = 0; i < 32; i++)
        fresh[i] = (unsigned char)(i + 40);
    assert_int_equal(state_open_version(t->path, 12, &st, NULL), 0);
    old_fleet(st);
    exec_sql(st, "UPDATE nodes SET agent = '00112233445566778899aabbccddeeff'");
    assert_int_equal(state_cost_add(st, "i-2", 3600.0, 7200.0, 2.0), 0); /* b: $2 by node */
    st = reopen_latest(t, st);
    assert_old_fleet(st, 2.0);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM secrets"), 0);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM node_jobs_held"), 0);
    assert_int_equal(state_cost_refund(st, "i-2", NULL, &shares, &n), 0); /* v12's shares kept */
    assert_int_equal(n, 1);
    assert_string_equal(shares[0].job, "b");
    assert_float_equal(shares[0].dollars, 2.0, 1e-12);
    state_cost_shares_free(shares, n);
    assert_float_equal(job_dollars(st, "b"), 4.0, 1e-12);
    assert_int_equal(state_secret(st, "node-token-key", fresh, sizeof(fresh), got), 0);
    assert_memory_equal(got, fresh, sizeof(fresh));

    /* the nodes register again: the same agent is answered, another refused until taken down */
    node.agent = "00112233445566778899aabbccddeeff";
    assert_int_equal(state_node_register(st, &node, 500.0), 0);
    node.agent = "ffeeddccbbaa99887766554433221100";
    assert_int_equal(state_node_register(st, &node, 500.0), ERR_CONFLICT);

    /* a moves off i-1 to i-2: i-1 held it, and its heartbeat holds a's new replicas back */
    assert_int_equal(state_alloc_replace(st, "a", on2, 1, 600.0), 0);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM node_jobs_held"), 1);
    assert_int_equal(state_node_heartbeat(st, "i-1", 610.0, alive, 1), 0);
    assert_int_equal(state_job_stale_nodes(st, "a", "g2", "i-2", 611.0, &stale, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(stale[0], "i-1");
    state_strv_free(stale, n);
    state_close(st);
}

/* A stray instance's charges: its first at least the minimum (60 s from 3500 at $3.60/h: $0.06),
 * then only what follows its last (to 3700: $0.14, split at the hour), nothing for a span already
 * charged; kept per instance and UTC hour; counted in the fleet's total, a period's sum, the split
 * (no job's: idle) and the report, under its offer and market beside the nodes' costs there. */
static void state_stray_charge__the_minimum_then_the_new_span(void **state)
{
    struct state *st = open_state(*state);
    struct state_node node = node_of("i-1", 4, NULL, 0);
    const struct state_stray od = {"i-od", "p3.2xlarge", "us-east-1a", STATE_MARKET_ON_DEMAND},
                             spot = {"i-sp", "g4dn.12xlarge", "us-east-1a", STATE_MARKET_SPOT};
    struct state_cost_row *rows = NULL;
    struct state_costs costs;
    double seconds = -1, dollars = -1, total = 0, since = 0;
    size_t n = 0;

    assert_int_equal(state_stray_charge(st, &od, 3500, 3530, 60, 3.6, &seconds, &dollars), 0);
    assert_float_equal(seconds, 60, 1e-9);
    assert_float_equal(dollars, 0.06, 1e-12);
    assert_int_equal(state_stray_charge(st, &od, 3500, 3700, 60, 3.6, &seconds, &dollars), 0);
    assert_float_equal(seconds, 140, 1e-9);
    assert_float_equal(dollars, 0.14, 1e-12);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM stray_costs"), 2); /* one an hour */
    assert_int_equal(state_stray_charge(st, &od, 3500, 3650, 60, 3.6, &seconds, &dollars), 0);
    assert_true(seconds == 0 && dollars == 0);
    assert_int_equal(state_stray_charge(st, &spot, 7200, 7500, 60, 1.2, NULL, NULL), 0);
    assert_int_equal(state_node_upsert(st, &node), 0); /* a static node of the spot stray's offer */
    assert_int_equal(state_cost_add(st, "i-1", 7200, 10800, 1.0), 0);

    assert_int_equal(state_cost_total(st, &total), 0);
    assert_float_equal(total, 0.2 + 0.1 + 1.0, 1e-12);
    assert_int_equal(state_cost_since(st, 3600, &since), 0);
    assert_float_equal(since, 0.1 + 0.1 + 1.0, 1e-12);
    assert_int_equal(state_cost_split(st, &costs), 0);
    assert_float_equal(costs.idle, 1.3, 1e-12);
    assert_int_equal(state_cost_report(st, 0, INFINITY, STATE_COST_BY_OFFER, &rows, &n), 0);
    assert_int_equal(n, 2);
    assert_string_equal(rows[0].key, "g4dn.12xlarge");
    assert_true(fabs(rows[0].spot - 0.1) < 1e-12 && rows[0].fixed == 1.0 && rows[0].on_demand == 0);
    assert_string_equal(rows[1].key, "p3.2xlarge");
    assert_true(fabs(rows[1].on_demand - 0.2) < 1e-12 && rows[1].spot == 0);
    state_cost_rows_free(rows, n);
    assert_int_equal(state_cost_report(st, 3600, 7200, STATE_COST_BY_DAY, &rows, &n), 0);
    assert_int_equal(n, 1);
    assert_float_equal(rows[0].on_demand, 0.1, 1e-12); /* the hour from 3600 */
    state_cost_rows_free(rows, n);

    /* bad arguments write nothing */
    assert_int_equal(state_stray_charge(st, NULL, 0, 1, 60, 1, NULL, NULL), ERR_INVAL);
    assert_int_equal(state_stray_charge(st, &od, NAN, 9000, 60, 1, NULL, NULL), ERR_INVAL);
    assert_int_equal(state_stray_charge(st, &od, 3700, 9000, 60, -1, NULL, NULL), ERR_INVAL);
    assert_int_equal(state_stray_charge(st, &od, 3700, 9000, -1, 1, NULL, NULL), ERR_INVAL);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM stray_costs"), 3);
    state_close(st);
}

/* Version 13 has no stray_costs: a fleet live at the migration (nodes, allocations, costs, each
 * job's dollars and their shares by node) is kept whole; strays charged after count beside it,
 * in no job's dollars. */
static void state_open__migrates_v13_to_v14(void **state)
{
    const struct tmpdb *t = *state;
    const struct state_stray s = {"i-late", "g4dn.12xlarge", "us-east-1a", STATE_MARKET_SPOT};
    struct state_cost_share *shares = NULL;
    struct state *st = NULL;
    double total = 0;
    size_t n = 0;

    assert_int_equal(state_open_version(t->path, 13, &st, NULL), 0);
    old_fleet(st);
    assert_int_equal(state_cost_add(st, "i-2", 3600.0, 7200.0, 2.0), 0); /* b: $2 by node */
    st = reopen_latest(t, st);
    assert_old_fleet(st, 2.0);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM stray_costs"), 0);
    assert_int_equal(state_stray_charge(st, &s, 7200.0, 9000.0, 60.0, 2.0, NULL, NULL), 0);
    assert_int_equal(state_cost_total(st, &total), 0);
    assert_float_equal(total, 8.0 + 1.0, 1e-12);
    assert_float_equal(job_dollars(st, "b"), 6.0, 1e-12);
    assert_int_equal(state_cost_refund(st, "i-2", NULL, &shares, &n), 0); /* v13's shares kept */
    assert_int_equal(n, 1);
    assert_float_equal(shares[0].dollars, 2.0, 1e-12);
    state_cost_shares_free(shares, n);
    state_close(st);
}

/* Version 14 kept no failure's placement: a job that failed there (counted, written as v14 did)
 * is told rank 0's end of that attempt as before, stale, and its current attempt's end finishes
 * it; a failure counted after the migration keeps its placement. */
static void state_open__migrates_v14_to_v15(void **state)
{
    const struct tmpdb *t = *state;
    const char *ids[] = {"i-1", "i-2"};
    enum state_complete_outcome o = STATE_COMPLETE_FINISHED;
    struct state *st = NULL;

    assert_int_equal(state_open_version(t->path, 14, &st, NULL), 0);
    add_ready_nodes(st, ids, 2);
    /* placed as version 14 did (its node_jobs_held has no placement) */
    for (int k = 0; k < 2; k++) {
        assert_int_equal(state_job_submit(st, k ? "new" : "old", "{}", 1.0), 0);
        assert_int_equal(state_job_set_state(st, k ? "new" : "old", STATE_JOB_RUNNING, 2.0), 0);
    }
    assert_int_equal(db_exec(state_db(st),
                             "INSERT INTO allocations (job_id, node_id, replicas,"
                             " since) SELECT j.id, n.id, 2, 200 FROM jobs j, nodes n"),
                     0);
    assert_int_equal(db_exec(state_db(st), "UPDATE jobs SET failures = 1, failure_streak = 1,"
                                           " failure = 'x', failure_at = 250 WHERE name = 'old'"),
                     0);
    st = reopen_latest(t, st);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM jobs WHERE failure_placed_at IS NULL"),
                     2);
    assert_int_equal(state_job_complete(st, "old", "i-1", 0, 200.0, 260.0, &o), 0);
    assert_int_equal(o, STATE_COMPLETE_STALE);
    assert_int_equal(state_job_complete(st, "old", "i-1", 1, 200.0, 260.0, &o), 0);
    assert_int_equal(o, STATE_COMPLETE_FINISHED);
    assert_int_equal(state_job_replica_failed(st, "new", "i-2", 0, "x", 3, 270.0, NULL, NULL), 0);
    assert_int_equal(count_rows(st, "SELECT count(*) FROM jobs WHERE failure_placed_at = 200"), 1);
    assert_int_equal(state_job_complete(st, "new", "i-1", 0, 200.0, 280.0, &o), 0);
    assert_int_equal(o, STATE_COMPLETE_PEERS);
    state_close(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        STATE_TEST(state_open__new_file_at_latest_version),
        STATE_TEST(state_open__migrates_v1_to_v2),
        STATE_TEST(state_open_version__out_of_range),
        STATE_TEST(state_open__refuses_newer_version),
        STATE_TEST(state_open__refuses_foreign_database),
        STATE_TEST(state_job_submit__duplicate_name_changes_nothing),
        STATE_TEST(state_job_set_state__allowed_moves),
        STATE_TEST(state_job_checkpoint__progress_and_restarts),
        STATE_TEST(state_jobs_list__by_state_mask),
        STATE_TEST(state_intent__record_resolve_pending),
        STATE_TEST(state_node_upsert__insert_update_rules),
        STATE_TEST(state_node_set_state__moves_and_release),
        STATE_TEST(state_node_set_price__live_nodes_only),
        STATE_TEST(state_alloc_replace__all_or_nothing),
        STATE_TEST(state_read_begin__one_moment),
        STATE_TEST(state_node_heartbeat__only_jobs_it_held),
        STATE_TEST(state_secret__kept_once),
        STATE_TEST(state_alloc_replace_config__with_the_rows),
        STATE_TEST(state_foreign_keys__enforced),
        STATE_TEST(state_model__store_and_replace),
        STATE_TEST(state_decision_and_cost__append_and_total),
        STATE_TEST(state_alloc_replace__survives_sigkill),
        STATE_TEST(state_open__migrates_v2_to_v3),
        STATE_TEST(state_open__migrates_v3_to_v4),
        STATE_TEST(state_node_register__launched_static_duplicate),
        STATE_TEST(state_node_register__static_billed_from_its_launch),
        STATE_TEST(state_node_upsert__launch_recorded_after_registration),
        STATE_TEST(state_node_heartbeat_notice__rules),
        STATE_TEST(state_node_jobs__allocations_on_a_node),
        STATE_TEST(state_report_store__pools_configurations),
        STATE_TEST(state_report_store__pooled_sync_stays_below_the_step),
        STATE_TEST(state_report_store__bad_reports_write_nothing),
        STATE_TEST(state_report_store_many__each_report_alone),
        STATE_TEST(state_open__migrates_v4_to_v5),
        STATE_TEST(state_report_store__first_grad_written_once),
        STATE_TEST(state_family__configs_and_start_grad),
        STATE_TEST(state_family_start_grad__scaled_to_the_initial_batch),
        STATE_TEST(state_job_complete__only_the_current_attempt_and_placement),
        STATE_TEST(state_job_complete__after_its_peers_failure),
        STATE_TEST(state_job_replica_failed__attempts_streaks_and_the_limit),
        STATE_TEST(state_open__migrates_v5_to_v6),
        STATE_TEST(state_events__kept_newest_first_cut),
        STATE_TEST(state_open__migrates_v6_to_v7),
        STATE_TEST(state_open__migrates_v7_to_v8),
        STATE_TEST(state_open__migrates_v8_to_v9),
        STATE_TEST(state_open__migrates_v9_to_v10),
        STATE_TEST(state_open__migrates_v10_to_v11),
        STATE_TEST(state_backup__a_consistent_copy),
        STATE_TEST(state_cost_add__one_row_per_node_and_hour),
        STATE_TEST(state_cost_add__a_span_over_midnight_counts_in_each_day),
        STATE_TEST(state_job_fail__reason_kept_allocation_released),
        STATE_TEST(state_cost_add__shared_by_the_jobs_on_the_node),
        STATE_TEST(state_cost_refund__takes_back_the_node_and_its_shares),
        STATE_TEST(state_cost_accrue__spans_and_the_minute),
        STATE_TEST(state_cost_accrue__all_or_nothing),
        STATE_TEST(state_write_check__tells_a_state_that_cannot_be_written),
        STATE_TEST(state_cost_report__by_day_and_by_offer),
        STATE_TEST(state_offer_records__notices_and_hours),
        STATE_TEST(state_node_register__fence_and_static_return),
        STATE_TEST(state_job_checkpoint__a_late_lower_one_changes_nothing),
        STATE_TEST(state_open__the_owners_alone),
        STATE_TEST(state_backup__an_older_schema_as_it_is),
        STATE_TEST(state_open__migrates_v11_to_v12),
        STATE_TEST(state_open__migrates_v12_to_v13),
        STATE_TEST(state_stray_charge__the_minimum_then_the_new_span),
        STATE_TEST(state_open__migrates_v13_to_v14),
        STATE_TEST(state_open__migrates_v14_to_v15),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
