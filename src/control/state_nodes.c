/* state_nodes.c: the fleet in the controller's state: launch intents (committed before each
 * launch), nodes (upserted, moved from state to state, registered by their agents, heartbeats,
 * preemption notices, the jobs on each) and the allocations of jobs to nodes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "control/state.h"
#include "control/state_internal.h"
#include "util/db.h"

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

const char *state_node_state_name(enum state_node_state s)
{
    return (int)s >= 0 && (int)s < STATE_NODE_NSTATES ? st_node_states[s] : NULL;
}

int st_node_find(struct db *db, const char *instance_id, long long *id,
                 enum state_node_state *state)
{
    int v = 0, rc;

    rc = st_find(db, "SELECT id, state FROM nodes WHERE instance_id = ?1", instance_id,
                 st_node_states, STATE_NODE_NSTATES, id, &v);
    if (rc == 0)
        *state = (enum state_node_state)v;
    return rc;
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
    " notice_deadline, address, fence_s, agent"

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
    if (rc == 0)
        rc = db_column_text_dup(s, 20, &node->agent);
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
    node->fence_s = st_col_time(s, 19);
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
    if (id > 0 && (cur == STATE_NODE_READY || cur == STATE_NODE_DRAINING) &&
        n->state < STATE_NODE_READY) {
        /* the record of a launch whose agent registered first: the launch's identity is
         * written, what the agent registered (state, GPUs, when ready) stays, so that no node
         * goes back to booting with its agent registered and never registering again */
        rc = st_run(st->db,
                    "UPDATE nodes SET provider = ?2, offer = ?3, market = ?4, zone = ?5,"
                    " launch_token = ?6, launch_index = ?7, launched_at = ?8, price = ?9"
                    " WHERE id = ?1",
                    "itttttxdd", id, n->provider, n->offer, st_markets[n->market], n->zone,
                    n->launch_token, n->launch_token ? (long long)n->launch_index : -1LL,
                    n->launched_at, n->price);
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
    if (rc == 0 && to == STATE_NODE_TERMINATED)
        rc = st_run(st->db, "DELETE FROM node_replicas WHERE node_id = ?1", "i", id);
    if (rc == 0 && to == STATE_NODE_TERMINATED)
        rc = st_run(st->db, "DELETE FROM node_job_costs WHERE node_id = ?1", "i", id);
    if (rc == 0 && to == STATE_NODE_TERMINATED)
        rc = st_run(st->db, "DELETE FROM node_jobs_held WHERE node_id = ?1", "i", id);
out:
    return st_end(st, rc);
}

int state_node_set_price(struct state *st, const char *instance_id, double price)
{
    enum state_node_state cur = STATE_NODE_LAUNCHING;
    long long id = 0;
    int rc;

    if (!st_name_ok(instance_id) || !isfinite(price) || price < 0)
        return ERR_INVAL;
    rc = db_begin(st->db);
    if (rc < 0)
        return rc;
    rc = st_node_find(st->db, instance_id, &id, &cur);
    if (rc == 0 && cur == STATE_NODE_TERMINATED)
        rc = ERR_CONFLICT;
    if (rc == 0)
        rc = st_run(st->db, "UPDATE nodes SET price = ?2 WHERE id = ?1", "id", id, price);
    return st_end(st, rc);
}

/* A static node's launch time (?9) as registered, or the end of the costs recorded when that is
 * later: a tick that read the nodes before this registration was written has recorded every node up
 * to its own time, and the next starts from there, so a node registered with an earlier time would
 * never be billed for the part before (the milliseconds of a race, but lost). */
#define ST_LAUNCHED_AT "max(?9, coalesce((SELECT max(end_at) FROM costs), ?9))"

int state_node_register(struct state *st, const struct state_node *n, double now)
{
    enum state_node_state cur = STATE_NODE_LAUNCHING;
    double fence = n->fence_s > 0 ? n->fence_s : NAN;
    long long id = 0;
    int rc;

    if (!st_node_ok(n) || n->gpus < 1 || n->gpu_memory_mib < 0 || !st_time_ok(now) ||
        (n->address && (!n->address[0] || strlen(n->address) > 255)) ||
        (n->agent && (strlen(n->agent) < 16 || strlen(n->agent) > 64)) || n->fence_s < 0 ||
        isinf(n->fence_s) || fence > STATE_NODE_FENCE_MAX)
        return ERR_INVAL;
    rc = db_begin(st->db);
    if (rc < 0)
        return rc;
    rc = st_node_find(st->db, n->instance_id, &id, &cur);
    if (rc == 0 && cur == STATE_NODE_TERMINATED && !n->launch_token) {
        /* a static node that was terminated (taken down, or its cluster torn down) comes back:
         * its agent is a new one, with no replica left running */
        rc = st_run(st->db,
                    "UPDATE nodes SET provider = ?2, offer = ?3, market = ?4, zone = ?5, gpus = ?6,"
                    " gpu_memory_mib = ?7, state = ?8, launched_at = " ST_LAUNCHED_AT ","
                    " ready_at = ?10,"
                    " heartbeat_at = ?10, terminated_at = NULL, notice_at = NULL,"
                    " notice_deadline = NULL, price = ?11, address = ?12, fence_s = ?13,"
                    " agent = ?14 WHERE id = ?1 AND launch_token IS NULL",
                    "ittttnntdddtdt", id, n->provider, n->offer, st_markets[n->market], n->zone,
                    n->gpus, n->gpu_memory_mib, st_node_states[STATE_NODE_READY], n->launched_at,
                    now, n->price, n->address, fence, n->agent);
        if (rc == 0 && db_changes(st->db) == 0)
            rc = ERR_CONFLICT; /* a launched node's instance id: it does not come back */
    } else if (rc == 0 && cur != STATE_NODE_LAUNCHING && cur != STATE_NODE_BOOTING) {
        /* registered before, or a launched node gone; the same agent again (a retry whose answer
         * was lost) is answered as the first time, the node heard */
        rc = ERR_CONFLICT;
        if (n->agent && cur != STATE_NODE_TERMINATED &&
            st_run(st->db, "UPDATE nodes SET heartbeat_at = ?2 WHERE id = ?1 AND agent = ?3", "idt",
                   id, now, n->agent) == 0 &&
            db_changes(st->db) == 1)
            rc = 0;
    } else if (rc == 0) {
        rc = st_run(st->db,
                    "UPDATE nodes SET gpus = ?2, gpu_memory_mib = ?3, state = ?4,"
                    " ready_at = ?5, heartbeat_at = ?5, address = ?6, fence_s = ?7, agent = ?8"
                    " WHERE id = ?1",
                    "inntdtdt", id, n->gpus, n->gpu_memory_mib, st_node_states[STATE_NODE_READY],
                    now, n->address, fence, n->agent);
    } else if (rc == ERR_UNKNOWN) {
        /* a static node: the controller did not launch it, so it carries no launch token */
        rc = n->launch_token ? ERR_INVAL
                             : st_run(st->db,
                                      "INSERT INTO nodes (instance_id, provider, offer, market,"
                                      " zone, gpus, gpu_memory_mib, state, launched_at, ready_at,"
                                      " heartbeat_at, price, address, fence_s, agent)"
                                      " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, " ST_LAUNCHED_AT ","
                                      " ?10, ?10, ?11, ?12, ?13, ?14)",
                                      "tttttnntdddtdt", n->instance_id, n->provider, n->offer,
                                      st_markets[n->market], n->zone, n->gpus, n->gpu_memory_mib,
                                      st_node_states[STATE_NODE_READY], n->launched_at, now,
                                      n->price, n->address, fence, n->agent);
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

static int st_generation_ok(const char *s)
{
    return s && s[0] && strlen(s) <= STATE_GENERATION_MAX;
}

int state_node_heartbeat(struct state *st, const char *instance_id, double now,
                         const struct state_alive *alive, size_t n)
{
    enum state_node_state cur = STATE_NODE_LAUNCHING;
    long long id = 0;
    int rc;

    if (!st_name_ok(instance_id) || !st_time_ok(now) || (n > 0 && !alive))
        return ERR_INVAL;
    for (size_t i = 0; i < n; i++)
        if (!st_name_ok(alive[i].job) || !st_generation_ok(alive[i].generation))
            return ERR_INVAL;
    rc = db_begin(st->db);
    if (rc < 0)
        return rc;
    rc = st_live_node(st, instance_id, &id, &cur);
    if (rc == 0)
        rc = st_run(st->db, "UPDATE nodes SET heartbeat_at = ?2 WHERE id = ?1", "id", id, now);
    if (rc == 0)
        rc = st_run(st->db, "DELETE FROM node_replicas WHERE node_id = ?1", "i", id);
    /* only of a job the node holds, or held within STATE_HELD_RECENT_S: a node may not hold
     * back the start of a job it never ran (its other nodes wait for the replicas said alive) */
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = st_run(st->db,
                    "INSERT OR IGNORE INTO node_replicas (node_id, job, generation)"
                    " SELECT ?1, ?2, ?3 FROM jobs j WHERE j.name = ?2 AND (EXISTS (SELECT 1 FROM"
                    " allocations a WHERE a.node_id = ?1 AND a.job_id = j.id) OR EXISTS (SELECT 1"
                    " FROM node_jobs_held h WHERE h.node_id = ?1 AND h.job_id = j.id"
                    " AND h.until >= ?4))",
                    "ittd", id, alive[i].job, alive[i].generation, now - STATE_HELD_RECENT_S);
    return st_end(st, rc);
}

static int st_read_name(struct db_stmt *s, void *item)
{
    return db_column_text_dup(s, 0, (char **)item);
}

static void st_clear_name(void *item)
{
    free(*(char **)item);
}

static const struct st_rows st_name_rows = {sizeof(char *), st_read_name, st_clear_name};

int state_job_stale_nodes(struct state *st, const char *job, const char *generation,
                          const char *except, double now, char ***out, size_t *n)
{
    struct db_stmt *s = NULL;
    int rc;

    if (!st_name_ok(job) || !st_generation_ok(generation) || !st_time_ok(now) ||
        (except && !st_name_ok(except)))
        return ERR_INVAL;
    rc = st_prepare(st->db, &s,
                    "SELECT DISTINCT n.instance_id FROM node_replicas r"
                    " JOIN nodes n ON n.id = r.node_id"
                    " WHERE r.job = ?1 AND r.generation <> ?2 AND n.instance_id IS NOT ?3"
                    " AND n.state <> ?4"
                    " AND NOT coalesce(n.notice_deadline < ?5, 0)"
                    " AND NOT (n.launch_token IS NULL AND n.fence_s IS NOT NULL"
                    "  AND n.heartbeat_at + n.fence_s + ?6 < ?5)"
                    " ORDER BY n.instance_id",
                    "ttttdd", job, generation, except, st_node_states[STATE_NODE_TERMINATED], now,
                    STATE_SELF_FENCE_MARGIN_S);
    if (rc < 0)
        return rc;
    return st_collect(s, &st_name_rows, (void **)out, n);
}

void state_strv_free(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

int state_node_notice(struct state *st, const char *instance_id, double now, double deadline)
{
    enum state_node_state cur = STATE_NODE_LAUNCHING;
    long long id = 0, first = 0;
    int rc;

    if (!st_name_ok(instance_id) || !st_time_ok(now) || !st_opt_time_ok(deadline) || deadline < now)
        return ERR_INVAL;
    rc = db_begin(st->db);
    if (rc < 0)
        return rc;
    rc = st_live_node(st, instance_id, &id, &cur);
    if (rc == 0)
        rc = st_int(st->db, &first, "SELECT notice_at IS NULL FROM nodes WHERE id = ?1", "i", id);
    if (rc == 0)
        rc = st_run(st->db,
                    "UPDATE nodes SET notice_at = coalesce(notice_at, ?2),"
                    " notice_deadline = coalesce(?3, notice_deadline), state = ?4 WHERE id = ?1",
                    "iddt", id, now, deadline, st_node_states[STATE_NODE_DRAINING]);
    rc = st_end(st, rc);
    return rc < 0 ? rc : (int)first;
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
    return st_collect_by(
        st->db, ST_KEY_NODE, instance_id,
        "SELECT j.name, a.replicas FROM allocations a JOIN jobs j ON j.id = a.job_id"
        " WHERE a.node_id = ?1 ORDER BY j.name",
        &st_node_job_rows, (void **)out, n);
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
    free(node->agent);
    node->instance_id = node->provider = node->offer = node->zone = node->launch_token = NULL;
    node->address = node->agent = NULL;
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
    return state_alloc_replace_config(st, job, rows, n, now, NULL);
}

int state_alloc_replace_config(struct state *st, const char *job, const struct state_alloc *rows,
                               size_t n, double now, const struct state_job_config *cfg)
{
    enum state_job_state jstate = STATE_JOB_PENDING;
    enum state_node_state nstate = STATE_NODE_LAUNCHING;
    long long job_id = 0, node_id = 0;
    int rc;

    if (!st_name_ok(job) || (n > 0 && !rows) || !st_time_ok(now))
        return ERR_INVAL;
    if (cfg && (!st_time_ok(cfg->local_bsz) || cfg->local_bsz <= 0 || cfg->accum_steps < 0 ||
                !st_time_ok(cfg->lr_gain) || cfg->lr_gain <= 0))
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
    /* the nodes it leaves held it until now (their heartbeats may still say its replicas there
     * are alive while they stop) */
    if (rc == 0)
        rc = st_job_release(st->db, job_id, now);
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
    if (rc == 0 && cfg)
        rc = st_run(st->db,
                    "UPDATE jobs SET local_bsz = ?2, accum_steps = ?3, lr_gain = ?4 WHERE id = ?1",
                    "idnd", job_id, cfg->local_bsz, cfg->accum_steps, cfg->lr_gain);
    return st_end(st, rc);
}

int state_alloc_get(struct state *st, const char *job, struct state_alloc **out, size_t *n)
{
    return st_collect_by(st->db, ST_KEY_JOB, job,
                         "SELECT n.instance_id, a.replicas, a.since FROM allocations a"
                         " JOIN nodes n ON n.id = a.node_id WHERE a.job_id = ?1"
                         " ORDER BY n.instance_id",
                         &st_alloc_rows, (void **)out, n);
}

void state_allocs_free(struct state_alloc *rows, size_t n)
{
    for (size_t i = 0; rows && i < n; i++)
        st_clear_alloc(&rows[i]);
    free(rows);
}

static int st_read_offer_record(struct db_stmt *s, void *item)
{
    struct state_offer_record *r = item;

    r->preemptions = (long)db_column_int(s, 1);
    r->hours = db_column_double(s, 2);
    return db_column_text_dup(s, 0, &r->offer);
}

static void st_clear_offer_record(void *item)
{
    free(((struct state_offer_record *)item)->offer);
}

static const struct st_rows st_offer_records = {sizeof(struct state_offer_record),
                                                st_read_offer_record, st_clear_offer_record};

int state_offer_records(struct state *st, double since, double now, struct state_offer_record **out,
                        size_t *n)
{
    struct db_stmt *s = NULL;
    int rc;

    if (!st_time_ok(since) || !st_time_ok(now) || now < since || !out || !n)
        return ERR_INVAL;
    rc = st_prepare(st->db, &s,
                    "SELECT offer, total(notice_at >= ?1 AND notice_at <= ?2),"
                    " total(max(0, min(coalesce(terminated_at, ?2), ?2) - max(launched_at, ?1)))"
                    " / 3600.0 FROM nodes WHERE launch_token IS NOT NULL AND launched_at <= ?2"
                    " AND coalesce(terminated_at, ?2) >= ?1 GROUP BY offer ORDER BY offer",
                    "dd", since, now);
    if (rc < 0)
        return rc;
    return st_collect(s, &st_offer_records, (void **)out, n);
}

void state_offer_records_free(struct state_offer_record *rows, size_t n)
{
    for (size_t i = 0; rows && i < n; i++)
        st_clear_offer_record(&rows[i]);
    free(rows);
}
