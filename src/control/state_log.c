/* state_log.c: the controller's records in its state: the decision log (one summary per tick),
 * the costs of nodes and of strays, the jobs' events, the controller's own secrets, and a check
 * that the state takes writes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/state.h"
#include "control/state_internal.h"
#include "util/crypto.h"
#include "util/strbuf.h"
#include "util/db.h"

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

/* The cost row of one node and UTC hour: the node's latest row grows when [from, to] (within one
 * hour) follows it in that hour, else a row is added. ERR_UNKNOWN: no such node. */
static int st_cost_row(struct state *st, const void *key, double from, double to, double dollars)
{
    const char *instance_id = key;
    int rc = st_run(st->db,
                    "UPDATE costs SET end_at = ?3, dollars = dollars + ?4 WHERE id = (SELECT c.id"
                    " FROM costs c JOIN nodes n ON n.id = c.node_id WHERE n.instance_id = ?1"
                    " ORDER BY c.id DESC LIMIT 1) AND end_at = ?2 AND CAST(start_at / 3600 AS"
                    " INTEGER) = CAST(?2 / 3600 AS INTEGER)",
                    "tddd", instance_id, from, to, dollars);

    if (rc == 0 && db_changes(st->db) == 0)
        rc = st_run(st->db,
                    "INSERT INTO costs (node_id, start_at, end_at, dollars)"
                    " SELECT id, ?2, ?3, ?4 FROM nodes WHERE instance_id = ?1",
                    "tddd", instance_id, from, to, dollars);
    if (rc == 0 && db_changes(st->db) == 0)
        rc = ERR_UNKNOWN;
    return rc;
}

/* Record dollars spent over [from, to] by row(st, key, ...) once for each UTC hour it covers,
 * its part of the span at the span's rate. */
static int st_by_hour(struct state *st, const void *key, double from, double to, double dollars,
                      int (*row)(struct state *st, const void *key, double from, double to,
                                 double dollars))
{
    double a = from, b;
    int rc;

    /* one row per node and UTC hour, a span over several hours split among them at its rate:
     * a tick's costs do not add a row each (a year of a 100-node fleet at one tick a minute:
     * under a million rows, not 52 million), and a day or a period holds what its own hours
     * cost (a long span, the controller's downtime, is not charged to the hour it ends in) */
    do {
        b = fmin(to, (floor(a / 3600.0) + 1) * 3600.0);
        rc = row(st, key, a, b, to > from ? dollars * (b - a) / (to - from) : dollars);
        a = b;
    } while (rc == 0 && a < to);
    return rc;
}

/* state_cost_add inside the caller's transaction. */
static int st_cost_add(struct state *st, const char *instance_id, double from, double to,
                       double dollars)
{
    int rc = st_by_hour(st, instance_id, from, to, dollars, st_cost_row);

    /* each job on the node: its GPUs' share (of the node's GPUs, or of the replicas placed there
     * if ever more); the share of idle GPUs goes to no job */
    if (rc == 0)
        rc = st_run(st->db,
                    "UPDATE jobs SET dollars = jobs.dollars + ?2 * a.replicas / max(n.gpus,"
                    " (SELECT total(replicas) FROM allocations WHERE node_id = n.id))"
                    " FROM allocations a JOIN nodes n ON n.id = a.node_id"
                    " WHERE a.job_id = jobs.id AND n.instance_id = ?1 AND n.gpus > 0",
                    "td", instance_id, dollars);
    /* the same shares by node, while it lives (state_cost_refund) */
    if (rc == 0)
        rc = st_run(st->db,
                    "INSERT INTO node_job_costs (node_id, job_id, dollars)"
                    " SELECT n.id, a.job_id, ?2 * a.replicas / max(n.gpus,"
                    " (SELECT total(replicas) FROM allocations WHERE node_id = n.id))"
                    " FROM allocations a JOIN nodes n ON n.id = a.node_id"
                    " WHERE n.instance_id = ?1 AND n.gpus > 0 AND n.state != 'terminated'"
                    " ON CONFLICT (node_id, job_id) DO UPDATE SET dollars = dollars +"
                    " excluded.dollars",
                    "td", instance_id, dollars);
    return rc;
}

int state_cost_add(struct state *st, const char *instance_id, double from, double to,
                   double dollars)
{
    int rc;

    if (!st_name_ok(instance_id) || !st_time_ok(from) || !st_time_ok(to) || to < from ||
        !st_time_ok(dollars) || dollars < 0)
        return ERR_INVAL;
    if ((rc = db_begin(st->db)) < 0)
        return rc;
    return st_end(st, st_cost_add(st, instance_id, from, to, dollars));
}

static int st_read_share(struct db_stmt *s, void *item)
{
    struct state_cost_share *r = item;

    r->dollars = db_column_double(s, 1);
    return db_column_text_dup(s, 0, &r->job);
}

static void st_clear_share(void *item)
{
    free(((struct state_cost_share *)item)->job);
}

static const struct st_rows st_share_rows = {sizeof(struct state_cost_share), st_read_share,
                                             st_clear_share};

void state_cost_shares_free(struct state_cost_share *rows, size_t n)
{
    for (size_t i = 0; rows && i < n; i++)
        st_clear_share(&rows[i]);
    free(rows);
}

int state_cost_refund(struct state *st, const char *instance_id, double *dollars,
                      struct state_cost_share **shares, size_t *nshares)
{
    struct state_cost_share *got = NULL;
    struct db_stmt *s = NULL;
    double back = 0;
    long long id = 0, gone = 0;
    size_t ngot = 0;
    int rc;

    if (!st_name_ok(instance_id))
        return ERR_INVAL;
    if ((rc = db_begin(st->db)) < 0)
        return rc;
    rc = st_int(st->db, &id, "SELECT id FROM nodes WHERE instance_id = ?1", "t", instance_id);
    if (rc == 0)
        rc = st_int(st->db, &gone, "SELECT state = 'terminated' FROM nodes WHERE id = ?1", "i", id);
    if (rc == 0 && gone)
        rc = ERR_CONFLICT;
    if (rc == 0)
        rc = st_double(st->db, &back, "SELECT total(dollars) FROM costs WHERE node_id = ?1", "i",
                       id);
    if (rc == 0 && shares &&
        (rc = st_prepare(st->db, &s,
                         "SELECT j.name, c.dollars FROM node_job_costs c"
                         " JOIN jobs j ON j.id = c.job_id"
                         " WHERE c.node_id = ?1 ORDER BY j.name",
                         "i", id)) == 0)
        rc = st_collect(s, &st_share_rows, (void **)&got, &ngot);
    if (rc == 0)
        rc = st_run(st->db, "UPDATE costs SET dollars = 0 WHERE node_id = ?1", "i", id);
    if (rc == 0)
        rc = st_run(st->db,
                    "UPDATE jobs SET dollars = max(0, jobs.dollars - c.dollars)"
                    " FROM node_job_costs c WHERE c.job_id = jobs.id AND c.node_id = ?1",
                    "i", id);
    if (rc == 0)
        rc = st_run(st->db, "DELETE FROM node_job_costs WHERE node_id = ?1", "i", id);
    if (rc == 0)
        rc = st_run(st->db, "UPDATE nodes SET price = 0 WHERE id = ?1", "i", id);
    rc = st_end(st, rc);
    if (rc < 0) {
        state_cost_shares_free(got, ngot);
        return rc;
    }
    if (dollars)
        *dollars = back;
    if (shares) {
        *shares = got;
        *nshares = ngot;
    }
    return 0;
}

int state_cost_accrue_listed(struct state *st, double from, double now, char *const *listed)
{
    struct state_node *nodes = NULL;
    size_t n = 0;
    int rc;

    if (!st_time_ok(from) || !st_time_ok(now) || now < from)
        return ERR_INVAL;
    if ((rc = db_begin(st->db)) < 0)
        return rc;
    if ((rc = state_nodes_list(st, (1u << STATE_NODE_NSTATES) - 1, &nodes, &n)) < 0)
        return st_end(st, rc);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const struct state_node *x = &nodes[i];
        double end = x->terminated_at, start = fmax(x->launched_at, from), to;
        size_t k = 0;

        while (listed && x->launch_token && listed[k] && strcmp(listed[k], x->instance_id) != 0)
            k++;
        /* gone, when is not known; a node the state terminated by now ended then, and one it
         * terminated after now (a span recorded late) was gone at now, as it was listed then */
        if (listed && x->launch_token && !listed[k] &&
            !(x->state == STATE_NODE_TERMINATED && x->terminated_at <= now))
            continue;

        if (isfinite(end) && x->launch_token) /* the cloud's minimum, for what it was asked */
            end = fmax(end, x->launched_at + STATE_MIN_BILLED_S);
        to = isfinite(end) && end < now ? end : now;
        if (to > start && x->price > 0)
            rc = st_cost_add(st, x->instance_id, start, to, x->price * (to - start) / 3600.0);
    }
    state_nodes_free(nodes, n);
    return st_end(st, rc);
}

int state_cost_accrue(struct state *st, double from, double now)
{
    return state_cost_accrue_listed(st, from, now, NULL);
}

/* The charge row of one stray and UTC hour: as st_cost_row, by the stray's instance id. */
static int st_stray_row(struct state *st, const void *key, double from, double to, double dollars)
{
    const struct state_stray *s = key;
    int rc = st_run(st->db,
                    "UPDATE stray_costs SET end_at = ?3, dollars = dollars + ?4 WHERE id = (SELECT"
                    " id FROM stray_costs WHERE instance_id = ?1 ORDER BY id DESC LIMIT 1)"
                    " AND end_at = ?2 AND CAST(start_at / 3600 AS INTEGER) = CAST(?2 / 3600 AS"
                    " INTEGER)",
                    "tddd", s->instance_id, from, to, dollars);

    if (rc == 0 && db_changes(st->db) == 0)
        rc = st_run(st->db,
                    "INSERT INTO stray_costs (instance_id, offer, zone, market, start_at, end_at,"
                    " dollars) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    "ttttddd", s->instance_id, s->offer, s->zone,
                    s->market == STATE_MARKET_SPOT ? "spot" : "on-demand", from, to, dollars);
    return rc;
}

int state_stray_charge(struct state *st, const struct state_stray *s, double from, double to,
                       double min_s, double price, double *seconds, double *dollars)
{
    double last = NAN, add = 0;
    int rc;

    if (!s || !st_name_ok(s->instance_id) || !st_name_ok(s->offer) || !st_name_ok(s->zone) ||
        (s->market != STATE_MARKET_ON_DEMAND && s->market != STATE_MARKET_SPOT) ||
        !st_time_ok(from) || !st_time_ok(to) || !st_time_ok(min_s) || min_s < 0 ||
        !st_time_ok(price) || price < 0)
        return ERR_INVAL;
    if ((rc = db_begin(st->db)) < 0)
        return rc;
    rc = st_double(st->db, &last,
                   "SELECT end_at FROM stray_costs WHERE instance_id = ?1 ORDER BY end_at DESC"
                   " LIMIT 1",
                   "t", s->instance_id);
    if (rc == 0) {
        from = fmax(from, last); /* charged up to last already */
    } else if (rc == ERR_UNKNOWN) {
        rc = 0;
        to = fmax(to, from + min_s); /* the first charge: the cloud's minimum */
    }
    if (rc == 0 && to > from) {
        add = price * (to - from) / 3600.0;
        rc = st_by_hour(st, s, from, to, add, st_stray_row);
    }
    rc = st_end(st, rc);
    if (rc < 0)
        return rc;
    if (seconds)
        *seconds = to > from ? to - from : 0;
    if (dollars)
        *dollars = add;
    return 0;
}

int state_cost_recorded_until(struct state *st, double *until)
{
    double t = NAN;
    int rc = st_double(st->db, &t, "SELECT coalesce(max(end_at), -1) FROM costs", "");

    if (rc < 0)
        return rc;
    *until = t >= 0 ? t : NAN;
    return 0;
}

int state_cost_total(struct state *st, double *dollars)
{
    /* total() is 0.0 over no rows: a row always comes */
    return st_double(st->db, dollars,
                     "SELECT (SELECT total(dollars) FROM costs) +"
                     " (SELECT total(dollars) FROM stray_costs)",
                     "");
}

/* The dollars of table's rows (costs, stray_costs) that end after ?1: a row that straddles it
 * (one recorded before rows were split by the hour) counts for its part after it. */
#define ST_SINCE(table)                                                                        \
    "(SELECT total(CASE WHEN start_at >= ?1 OR end_at <= start_at THEN dollars ELSE dollars *" \
    " (end_at - ?1) / (end_at - start_at) END) FROM " table " WHERE end_at > ?1)"

int state_cost_since(struct state *st, double from, double *dollars)
{
    if (!st_time_ok(from))
        return ERR_INVAL;
    return st_double(st->db, dollars, "SELECT " ST_SINCE("costs") " + " ST_SINCE("stray_costs"),
                     "d", from);
}
#undef ST_SINCE

int state_cost_split(struct state *st, struct state_costs *out)
{
    struct state_costs c = {0};
    int rc = state_cost_total(st, &c.spent);

    if (rc == 0)
        rc = st_double(st->db, &c.jobs, "SELECT total(dollars) FROM jobs", "");
    if (rc < 0)
        return rc;
    c.idle = c.spent - c.jobs > 0 ? c.spent - c.jobs : 0;
    *out = c;
    return 0;
}

static int st_read_cost_row(struct db_stmt *s, void *item)
{
    struct state_cost_row *r = item;

    r->on_demand = db_column_double(s, 1);
    r->spot = db_column_double(s, 2);
    r->fixed = db_column_double(s, 3);
    r->dollars = db_column_double(s, 4);
    return db_column_text_dup(s, 0, &r->key);
}

static void st_clear_cost_row(void *item)
{
    free(((struct state_cost_row *)item)->key);
}

static const struct st_rows st_cost_rows = {sizeof(struct state_cost_row), st_read_cost_row,
                                            st_clear_cost_row};

int state_cost_report(struct state *st, double from, double to, enum state_cost_by by,
                      struct state_cost_row **out, size_t *n)
{
    /* the same sums over the costs of [from, to), the nodes' (a static node's in its own
     * column) and the strays' (in their market's), by day (UTC) or by offer */
#define ST_COST_SUMS                                                                             \
    " total(CASE WHEN m = 'on-demand' THEN dollars END),"                                        \
    " total(CASE WHEN m = 'spot' THEN dollars END),"                                             \
    " total(CASE WHEN m IS NULL THEN dollars END), total(dollars) AS d FROM (SELECT c.start_at," \
    " c.dollars, n.offer, CASE WHEN n.launch_token IS NOT NULL THEN n.market END AS m"           \
    " FROM costs c JOIN nodes n ON n.id = c.node_id WHERE c.start_at >= ?1 AND c.start_at < ?2"  \
    " UNION ALL SELECT start_at, dollars, offer, market FROM stray_costs"                        \
    " WHERE start_at >= ?1 AND start_at < ?2)"
    static const char *const sql[] = {
        [STATE_COST_BY_DAY] =
            "SELECT date(start_at, 'unixepoch') AS k," ST_COST_SUMS " GROUP BY k ORDER BY k",
        [STATE_COST_BY_OFFER] = "SELECT offer AS k," ST_COST_SUMS " GROUP BY k ORDER BY d DESC, k",
    };
#undef ST_COST_SUMS
    struct db_stmt *s = NULL;
    int rc;

    if (!st_time_ok(from) || !(to >= from) ||
        (by != STATE_COST_BY_DAY && by != STATE_COST_BY_OFFER) || !out || !n)
        return ERR_INVAL;
    rc = st_prepare(st->db, &s, sql[by], "dd", from, isinf(to) ? 1e300 : to);
    if (rc < 0)
        return rc;
    return st_collect(s, &st_cost_rows, (void **)out, n);
}

void state_cost_rows_free(struct state_cost_row *rows, size_t n)
{
    for (size_t i = 0; rows && i < n; i++)
        st_clear_cost_row(&rows[i]);
    free(rows);
}

/* ---- job events ---- */

int state_event_add(struct state *st, const char *job, double now, const char *kind,
                    const char *node, const char *message)
{
    char text[STATE_EVENT_MESSAGE_MAX + 1];
    enum state_job_state cur = STATE_JOB_PENDING;
    long long id = 0;
    int rc;

    if (!st_name_ok(job) || !st_time_ok(now) || !kind || !kind[0] ||
        strlen(kind) > STATE_EVENT_KIND_MAX || (node && !st_name_ok(node)) || !message ||
        !message[0])
        return ERR_INVAL;
    snprintf(text, sizeof(text), "%s", message); /* a longer one is cut */
    strbuf_utf8_clean(text); /* where the cut split a character, or the text was not UTF-8 */
    rc = db_begin(st->db);
    if (rc < 0)
        return rc;
    rc = st_job_find(st->db, job, &id, &cur);
    if (rc == 0)
        rc = st_run(st->db,
                    "INSERT INTO events (job_id, at, kind, node, message) VALUES (?1, ?2, ?3, ?4,"
                    " ?5)",
                    "idttt", id, now, kind, node, text);
    if (rc == 0) /* only the newest stay */
        rc = st_run(st->db,
                    "DELETE FROM events WHERE job_id = ?1 AND id <= (SELECT id FROM events WHERE"
                    " job_id = ?1 ORDER BY id DESC LIMIT 1 OFFSET ?2)",
                    "in", id, STATE_EVENTS_KEPT);
    return st_end(st, rc);
}

static int st_read_event(struct db_stmt *s, void *item)
{
    struct state_event *ev = item;
    int rc;

    ev->id = db_column_int(s, 0);
    ev->at = db_column_double(s, 1);
    rc = db_column_text_dup(s, 2, &ev->kind);
    if (rc == 0)
        rc = db_column_text_dup(s, 3, &ev->node);
    if (rc == 0)
        rc = db_column_text_dup(s, 4, &ev->message);
    return rc;
}

static void st_clear_event(void *item)
{
    struct state_event *ev = item;

    free(ev->kind);
    free(ev->node);
    free(ev->message);
}

static const struct st_rows st_event_rows = {sizeof(struct state_event), st_read_event,
                                             st_clear_event};

int state_events_list(struct state *st, const char *job, int limit, struct state_event **out,
                      size_t *n)
{
    enum state_job_state cur = STATE_JOB_PENDING;
    struct db_stmt *s = NULL;
    long long id = 0;
    int rc;

    if (!st_name_ok(job) || limit < 1 || !out || !n)
        return ERR_INVAL;
    rc = st_job_find(st->db, job, &id, &cur);
    if (rc == 0)
        rc = st_prepare(st->db, &s,
                        "SELECT id, at, kind, node, message FROM (SELECT * FROM events WHERE"
                        " job_id = ?1 ORDER BY id DESC LIMIT ?2) ORDER BY id",
                        "in", id, limit);
    if (rc < 0)
        return rc;
    return st_collect(s, &st_event_rows, (void **)out, n);
}

void state_events_free(struct state_event *events, size_t n)
{
    for (size_t i = 0; events && i < n; i++)
        st_clear_event(&events[i]);
    free(events);
}

/* ---- the controller's secrets ---- */

/* The value of hex digit c, or -1. */
static int st_hex_digit(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int state_write_check(struct state *st)
{
    long long version = 0;
    char sql[64];
    int rc;

    if ((rc = db_begin(st->db)) < 0)
        return rc;
    rc = st_int(st->db, &version, "PRAGMA user_version", "");
    if (rc == 0) {
        snprintf(sql, sizeof(sql), "PRAGMA user_version = %lld", version);
        rc = db_exec(st->db, sql);
    }
    return st_end(st, rc);
}

int state_secret(struct state *st, const char *name, const unsigned char *fresh, size_t len,
                 unsigned char *out)
{
    char hex[2 * STATE_SECRET_MAX + 1];
    unsigned char got[STATE_SECRET_MAX];
    struct db_stmt *s = NULL;
    char *kept = NULL;
    int rc;

    if (!name || !name[0] || strlen(name) > 64 || !fresh || len < 16 || len > STATE_SECRET_MAX ||
        !out)
        return ERR_INVAL;
    crypto_hex(fresh, len, hex);
    if ((rc = db_begin(st->db)) < 0)
        return rc;
    rc = st_run(st->db, "INSERT INTO secrets (name, value) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
                "tt", name, hex);
    if (rc == 0 && (rc = st_prepare(st->db, &s, "SELECT value FROM secrets WHERE name = ?1", "t",
                                    name)) == 0) {
        rc = db_step(s);
        rc = rc == DB_ROW ? db_column_text_dup(s, 0, &kept) : rc == 0 ? ERR_CORRUPT : rc;
        db_finalize(s);
    }
    rc = st_end(st, rc);
    if (rc == 0 && (!kept || strlen(kept) != 2 * len))
        rc = ERR_CORRUPT;
    for (size_t i = 0; rc == 0 && i < len; i++) {
        int hi = st_hex_digit(kept[2 * i]), lo = st_hex_digit(kept[2 * i + 1]);

        if (hi < 0 || lo < 0)
            rc = ERR_CORRUPT;
        else
            got[i] = (unsigned char)(hi << 4 | lo);
    }
    if (rc == 0)
        memcpy(out, got, len);
    if (kept)
        memset(kept, 0, strlen(kept));
    free(kept);
    memset(hex, 0, sizeof(hex));
    memset(got, 0, sizeof(got));
    return rc;
}
