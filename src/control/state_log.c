/* state_log.c: the controller's records in its state: the decision log (one summary per tick)
 * and the costs of nodes. */
#include "control/state.h"
#include "control/state_internal.h"
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
