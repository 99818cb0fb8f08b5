/* realworld_spend.c: the fleet's spend limit: what it cost since the day, week or month began
 * (UTC), a warning near the limit, and at the limit no launch and every launched instance
 * terminated until the next period. */
#include <math.h>
#include <stdint.h>

#include "control/realworld.h"
#include "control/realworld_internal.h"
#include "control/state.h"
#include "util/log.h"
#include "util/timestamp.h"

#define RW_DAY_S 86400.0

double realworld_period_start(double now, enum realworld_period period)
{
    int64_t day = (int64_t)floor(now / RW_DAY_S), year;
    int month, mday;

    switch (period) {
    case REALWORLD_WEEK:
        /* 1970-01-01 was a Thursday: its Monday is 3 days before */
        return (double)(day - ((day + 3) % 7 + 7) % 7) * RW_DAY_S;
    case REALWORLD_MONTH:
        timestamp_civil_from_days(day, &year, &month, &mday);
        return (double)timestamp_days_from_civil(year, month, 1) * RW_DAY_S;
    default:
        return (double)day * RW_DAY_S;
    }
}

double realworld_period_next(double now, enum realworld_period period)
{
    double start = realworld_period_start(now, period);
    int64_t year;
    int month, mday;

    switch (period) {
    case REALWORLD_WEEK:
        return start + 7 * RW_DAY_S;
    case REALWORLD_MONTH:
        timestamp_civil_from_days((int64_t)(start / RW_DAY_S), &year, &month, &mday);
        return (double)timestamp_days_from_civil(month == 12 ? year + 1 : year,
                                                 month == 12 ? 1 : month + 1, 1) *
               RW_DAY_S;
    default:
        return start + RW_DAY_S;
    }
}

void realworld_set_spend(struct realworld *rw, const struct realworld_spend *spend)
{
    rw->spend = spend ? *spend : (struct realworld_spend){0};
    if (!(rw->spend.dollars > 0)) {
        rw->over_spend = 0;
        rw->spent = NAN;
    }
}

/* Over the limit: every instance castor launched goes (asked again each tick while the cloud
 * refuses), its jobs told once it has gone (read before: its termination drops them). */
static void rw_spend_stop(struct realworld *rw, double now)
{
    struct state_node *nodes = NULL;
    size_t n = 0;

    if (state_nodes_list(rw->state, RW_LIVE_NODES, &nodes, &n) < 0)
        return;
    for (size_t i = 0; i < n; i++)
        if (nodes[i].launch_token) /* (a static node is not castor's to stop) */
            rw_node_terminate_lost(
                rw, nodes[i].instance_id, nodes[i].market == STATE_MARKET_SPOT, now,
                "the spend limit", "node-lost",
                "the fleet reached its spend_limit: its instances are terminated",
                "the job waits for the next period (or a static node), and "
                "restarts from its last checkpoint",
                -1);
    state_nodes_free(nodes, n);
}

void rw_spend_check(struct realworld *rw, double now)
{
    double start, spent = 0;
    char from[TIMESTAMP_ISO8601_LEN + 1] = "?", until[TIMESTAMP_ISO8601_LEN + 1] = "?";

    if (!(rw->spend.dollars > 0))
        return;
    start = realworld_period_start(now, rw->spend.period);
    if (state_cost_since(rw->state, start, &spent) < 0)
        return; /* as it was */
    rw->spent = spent;
    rw->over_spend = spent >= rw->spend.dollars;
    timestamp_format_iso8601((int64_t)start, from);
    timestamp_format_iso8601((int64_t)realworld_period_next(now, rw->spend.period), until);
    if (rw->over_spend) {
        if (!(rw->stop_told == start))
            log_msg(rw->log, now, LOG_ERROR, NULL, NULL,
                    "the fleet cost $%.2f since %s, at or over its spend_limit ($%.2f): castor "
                    "launches nothing and terminates the instances it launched until %s",
                    spent, from, rw->spend.dollars, until);
        rw->stop_told = start;
        rw_spend_stop(rw, now);
    } else if (spent >= RW_COST_WARN * rw->spend.dollars && !(rw->spend_told == start)) {
        rw->spend_told = start;
        log_msg(rw->log, now, LOG_WARN, NULL, NULL,
                "the fleet cost $%.2f since %s, %.0f%% of its spend_limit ($%.2f): at the limit "
                "castor stops renting until %s",
                spent, from, 100 * spent / rw->spend.dollars, rw->spend.dollars, until);
    }
}

int rw_spend_uncounted(const struct realworld *rw, const struct rw_offer *of)
{
    return rw->spend.dollars > 0 && isnan(rw_offer_bill(of));
}
