/* realworld_reconcile.c: the real world's nodes in the state (recorded at launch, terminated,
 * launched under an intent's token) and the reconciliation of the state with the cloud:
 * instances adopted by their launch token, strays terminated (what they cost charged), notices
 * drained, gone instances' nodes terminated, pending intents asked again by their token or given
 * up after a timeout, nodes whose agents never registered or went silent terminated (the silent
 * fenced, a fence the state keeps), nodes whose notices the cloud did not carry out terminated. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/events.h"
#include "control/realworld.h"
#include "control/realworld_internal.h"
#include "control/state.h"
#include "util/log.h"

#define RW_UNAVAILABLE_S \
    600.0 /* an offer that refused a launch for capacity is avoided this long */
/* An offer refused for a quota (ERR_QUOTA: AWS's VcpuLimitExceeded, MaxSpotInstanceCountExceeded)
 * is avoided until the quota may have changed: an instance of the cluster in the same market
 * terminates (its vCPUs go back to the quota), or this long passes (an increase granted). */
#define RW_QUOTA_HOLD_S 3600.0
/* A node drained by a preemption notice whose instance the cloud still lists this long after the
 * notice's deadline (a false alarm, a host maintenance the cloud carried out by live migration) is
 * terminated by castor: it is no longer used and still billed. */
#define RW_NOTICE_MARGIN_S 600.0

/* ---- nodes in the state ---- */

/*
 * Record instance id of offer o launched under token (an intent of this controller): a node
 * booting, or, when the node's agent registered before the launch was recorded (a static node
 * then, ready), that node with the launch's provider, offer, token and price: the state keeps
 * what the agent registered in the same transaction (state_node_upsert), so that a registration
 * landing at any moment of this record is kept.
 */
static int rw_node_record(struct realworld *rw, const char *id, const char *offer,
                          const char *token, double launched, double now)
{
    const struct realworld_offer *meta = rw_meta(rw, offer);
    int o = rw_offer_find(rw, offer);
    struct state_node n = {0};

    n.instance_id = (char *)id;
    n.provider = (char *)rw->cloud->ops->name;
    n.offer = (char *)offer;
    n.market = o >= 0 && rw->offers[o].spot ? STATE_MARKET_SPOT : STATE_MARKET_ON_DEMAND;
    n.zone = (char *)(meta && meta->zone ? meta->zone : "default");
    n.gpus = o >= 0 ? rw->offers[o].gpus : 0;
    n.state = STATE_NODE_BOOTING;
    n.launch_token = (char *)token;
    n.launch_index = 0;
    n.launched_at = launched > 0 ? launched : now;
    n.ready_at = NAN;
    n.terminated_at = NAN;
    n.price = o >= 0 ? rw_offer_bill(&rw->offers[o]) : NAN;
    if (!isfinite(n.price))
        n.price = 0; /* priced when the cloud or the configuration tells (rw_node_prices) */
    return state_node_upsert(rw->state, &n);
}

double rw_offer_bill(const struct rw_offer *of)
{
    return realworld_offer_bill(of->price, of->spot, of->max_price, of->storage);
}

void rw_node_prices(struct realworld *rw, struct state_node *nodes, size_t n, double now)
{
    for (size_t i = 0; i < n; i++) {
        int o = rw_offer_find(rw, nodes[i].offer);
        /* unknown now: a node priced before keeps its last price, the best guess there is */
        double bill = o < 0 || (!isfinite(rw->offers[o].price) && nodes[i].price > 0)
                          ? NAN
                          : rw_offer_bill(&rw->offers[o]);

        if (!nodes[i].launch_token || !isfinite(bill) || fabs(bill - nodes[i].price) < 1e-9)
            continue; /* a static node keeps the price it registered with */
        if (state_node_set_price(rw->state, nodes[i].instance_id, bill) < 0)
            continue; /* the price as it was; asked again next tick */
        log_msg(rw->log, now, LOG_DEBUG, NULL, nodes[i].instance_id,
                "billed at $%.4f/h from now (was $%.4f/h): the price of %s", bill, nodes[i].price,
                nodes[i].offer);
        nodes[i].price = bill;
    }
}

/* An instance of market spot (1 spot, 0 on-demand, -1 not known) is gone: the offers of that
 * market held for a quota may launch again. */
static void rw_quota_freed(struct realworld *rw, int spot, double now)
{
    rw->quotas_stale = 1; /* what the quotas count has changed */
    for (size_t o = 0; spot >= 0 && o < rw->noffers; o++)
        if (rw->offers[o].quota_held && rw->offers[o].spot == spot) {
            rw->offers[o].quota_held = 0;
            rw->offers[o].unavailable_until = 0;
            log_msg(rw->log, now, LOG_INFO, NULL, NULL,
                    "an instance of the %s market is gone: %s may launch again (quota)",
                    spot ? "spot" : "on-demand", rw->offers[o].name);
        }
}

int rw_node_spot(const struct state_node *n)
{
    return n->market == STATE_MARKET_SPOT;
}

int rw_node_terminate(struct realworld *rw, const char *id, int spot, double now, const char *why)
{
    int rc = cloud_terminate(rw->cloud, rw->cluster, id);

    rw_count(rw, RW_OP_TERMINATE, rc);
    if (rc < 0 && rc != ERR_UNKNOWN) {
        log_msg(rw->log, now, LOG_WARN, NULL, id, "cannot terminate the instance (%s): %s", why,
                err_str(rc));
        return rc;
    }
    rw_quota_freed(rw, spot, now);
    rc = state_node_set_state(rw->state, id, STATE_NODE_TERMINATED, now);
    if (rc == ERR_UNKNOWN)
        rc = 0; /* an instance the state never knew */
    log_msg(rw->log, now, LOG_INFO, NULL, id, "instance terminated: %s", why);
    return rc;
}

int rw_node_terminate_lost(struct realworld *rw, const char *id, int spot, double now,
                           const char *why, const char *kind, const char *lost, const char *then,
                           int loss)
{
    struct state_node_job *jobs = NULL;
    size_t n = 0;
    int rc;

    /* its jobs, read before its termination drops them */
    if (!kind || state_node_jobs(rw->state, id, &jobs, &n) < 0)
        n = 0;
    rc = rw_node_terminate(rw, id, spot, now, why);
    if (rc == 0)
        event_note_jobs(rw->state, rw->log, now, jobs, n, id, kind, lost, then);
    if (rc == 0 && loss >= 0 && loss < API_NLOSSES)
        rw->losses[loss]++;
    state_node_jobs_free(jobs, n);
    return rc;
}

int rw_launch_token(struct realworld *rw, int o, const char *token, double now)
{
    char id[CLOUD_ID_MAX] = "";
    const char *offer = rw->offers[o].name;
    int rc = cloud_launch(rw->cloud, offer, rw->cluster, token, id);

    rw_count(rw, RW_OP_LAUNCH, rc);
    if (rc == 0) {
        rw_quota_launched(rw, o);
        if ((rc = rw_node_record(rw, id, offer, token, now, now)) == 0)
            rc = state_intent_resolve(rw->state, token, STATE_INTENT_LAUNCHED, now);
        if (rc == 0)
            log_msg(rw->log, now, LOG_INFO, NULL, id, "launched an instance of %s", offer);
        return rc;
    }
    if (rc == ERR_CAPACITY || rc == ERR_QUOTA || rc == ERR_UNKNOWN || rc == ERR_INVAL) {
        /* refused: nothing was made */
        log_msg(rw->log, now, LOG_WARN, NULL, NULL, "the cloud refused a launch of %s: %s", offer,
                err_str(rc));
        rw->offers[o].quota_held = rc == ERR_QUOTA;
        rw->quotas_stale |= rc == ERR_QUOTA;
        rw->offers[o].unavailable_until =
            now + (rc == ERR_QUOTA ? RW_QUOTA_HOLD_S : RW_UNAVAILABLE_S);
        state_intent_resolve(rw->state, token, STATE_INTENT_FAILED, now);
        return rc;
    }
    /* the answer is unknown (ERR_AGAIN, ERR_IO): the intent stays pending, asked again later */
    log_msg(rw->log, now, LOG_WARN, NULL, NULL, "a launch of %s has no answer yet: %s", offer,
            err_str(rc));
    return rc;
}

/* ---- reconciliation ---- */

static const struct state_intent *rw_intent(const struct realworld *rw, const char *token)
{
    for (size_t i = 0; token && token[0] && i < rw->nintents; i++)
        if (strcmp(rw->intents[i].token, token) == 0)
            return &rw->intents[i];
    return NULL;
}

static const struct cloud_instance *rw_instance(const struct cloud_instance *in, size_t n,
                                                const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(in[i].id, id) == 0)
            return &in[i];
    return NULL;
}

static const struct state_node *rw_node_by_id(const struct state_node *nodes, size_t n,
                                              const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(nodes[i].instance_id, id) == 0)
            return &nodes[i];
    return NULL;
}

int rw_token_has_node(const struct state_node *nodes, size_t n, const char *token)
{
    for (size_t i = 0; i < n; i++)
        if (nodes[i].launch_token && strcmp(nodes[i].launch_token, token) == 0)
            return 1;
    return 0;
}

int realworld_stray_charge(struct state *st, const struct cloud_instance *in,
                           const struct state_node *node, double price, int spot, const char *zone,
                           double now, double *seconds, double *dollars, double *charged)
{
    struct state_stray s = {.instance_id = in->id,
                            .offer = in->offer,
                            .zone = zone ? zone : "default",
                            .market = spot ? STATE_MARKET_SPOT : STATE_MARKET_ON_DEMAND};
    double from = in->launched > 0 ? fmin(in->launched, now) : now, min_s = STATE_MIN_BILLED_S;

    if (node && node->state != STATE_NODE_TERMINATED) { /* a live node: its own costs count */
        *seconds = *dollars = 0;
        return 0;
    }
    if (node) {
        s.offer = node->offer ? node->offer : in->offer;
        s.zone = node->zone ? node->zone : s.zone;
        s.market = node->market;
        if (!isfinite(price) && node->price > 0)
            price = node->price;
        min_s = 0; /* the node's own costs held the minimum, up to its termination */
        from = node->launch_token && isfinite(node->terminated_at)
                   ? fmax(node->terminated_at, node->launched_at + STATE_MIN_BILLED_S)
                   : node->terminated_at;
        from = isfinite(from) ? fmin(from, now) : now;
    }
    if (!isfinite(price) || !s.offer[0])
        return ERR_UNKNOWN;
    *charged = price;
    return state_stray_charge(st, &s, from, now, min_s, price, seconds, dollars);
}

/* What stray instance in (its node, NULL when the state has none) cost, charged to the fleet as
 * the reconciliation terminates it, and again each tick the cloud still lists it (termination
 * takes time, or was refused): the cloud bills it (realworld_stray_charge, at its offer's price
 * as castor prices its own nodes). A stray castor cannot price is logged and counted nowhere, as
 * an unpriced node. */
static void rw_stray_charge(struct realworld *rw, const struct cloud_instance *in,
                            const struct state_node *node, double now)
{
    const char *offer = node ? node->offer : in->offer;
    const struct realworld_offer *meta = rw_meta(rw, offer);
    int o = rw_offer_find(rw, offer);
    double price = o >= 0 ? rw_offer_bill(&rw->offers[o]) : NAN, seconds = 0, dollars = 0;
    int rc = realworld_stray_charge(rw->state, in, node, price, o >= 0 && rw->offers[o].spot,
                                    meta ? meta->zone : NULL, now, &seconds, &dollars, &price);

    if (rc == ERR_UNKNOWN)
        log_msg(rw->log, now, LOG_WARN, NULL, in->id,
                "a stray instance of %s, whose price castor cannot tell: what it cost is counted "
                "nowhere (give the offer a price)",
                offer && offer[0] ? offer : "an unknown offer");
    else if (rc < 0)
        log_msg(rw->log, now, LOG_WARN, NULL, in->id,
                "cannot record what the stray instance cost (%s): recorded with a later tick's "
                "while the cloud lists it",
                err_str(rc));
    else if (seconds > 0)
        log_msg(rw->log, now, LOG_INFO, NULL, in->id,
                "a stray instance of %s: $%.4f for %.0f s at $%.4f/h added to the fleet's costs",
                offer, dollars, seconds, price);
}

/* The instances listed: adopt, terminate, notice. */
static void rw_reconcile_instances(struct realworld *rw, const struct cloud_instance *in, size_t n,
                                   const struct state_node *nodes, size_t nn, double now)
{
    for (size_t i = 0; i < n; i++) {
        const struct state_node *node = rw_node_by_id(nodes, nn, in[i].id);
        const struct state_intent *intent;
        int o;

        if (in[i].state == CLOUD_GONE)
            continue;
        if (node && node->launch_token) {
            if (node->state == STATE_NODE_TERMINATED) {
                rw_stray_charge(rw, &in[i], node, now);
                rw_node_terminate(rw, in[i].id, rw_node_spot(node), now, "its node was terminated");
                continue;
            }
            if (node->state == STATE_NODE_LAUNCHING)
                state_node_set_state(rw->state, in[i].id, STATE_NODE_BOOTING, now);
            if (in[i].state == CLOUD_NOTICED && node->state != STATE_NODE_DRAINING) {
                double deadline = in[i].ends > now ? in[i].ends : now;

                /* told once: the agent's notice may have come since the list */
                if (state_node_notice(rw->state, in[i].id, now, deadline) == 1) {
                    log_msg(rw->log, now, LOG_WARN, NULL, in[i].id,
                            "preemption notice: the node drains");
                    rw_note_node_jobs(rw, in[i].id, now, "notice",
                                      "a preemption notice on the node (the cloud's)", RW_RESTARTS);
                }
            }
            continue;
        }
        intent = rw_intent(rw, in[i].token);
        if (intent && !rw_token_has_node(nodes, nn, intent->token) &&
            rw_node_record(rw, in[i].id, intent->offer, intent->token, in[i].launched, now) == 0 &&
            state_intent_resolve(rw->state, intent->token, STATE_INTENT_LAUNCHED, now) == 0) {
            log_msg(rw->log, now, LOG_INFO, NULL, in[i].id,
                    "adopted an instance of %s found by its launch token", intent->offer);
            continue;
        }
        rw_stray_charge(rw, &in[i], node, now);
        o = rw_offer_find(rw, in[i].offer);
        /* counted and told once it goes: a refusal asks it again next tick */
        rw_node_terminate_lost(
            rw, in[i].id,
            node     ? rw_node_spot(node)
            : o >= 0 ? rw->offers[o].spot
                     : -1,
            now, "an instance with the cluster's tag that no open launch intent explains",
            node ? "node-lost" : NULL, "its node's instance is a stray", RW_RESTARTS,
            API_LOSS_STRAY);
    }
}

/* A spot node the cloud reclaimed (its notice seen, and castor did not terminate it) within its
 * offer's reclaim_free_s of its launch is not billed (EC2: in its first hour): what it cost is
 * taken back from the fleet's costs and its jobs'. Before the node is terminated (its jobs'
 * shares go then). A notice missed leaves it billed: castor does not guess. */
static void rw_reclaim_refund(struct realworld *rw, const struct state_node *node, double now)
{
    int o = rw_offer_find(rw, node->offer);
    double gone = isfinite(node->notice_deadline) ? fmin(node->notice_deadline, now) : now;
    struct state_cost_share *shares = NULL;
    double back = 0;
    size_t n = 0;

    if (o < 0 || !rw_node_spot(node) || !isfinite(node->notice_at) || rw_node_fenced(rw, node) ||
        !(gone - node->launched_at < rw->offers[o].reclaim_free_s))
        return;
    if (state_cost_refund(rw->state, node->instance_id, &back, &shares, &n) < 0)
        return; /* billed, as far as castor can tell */
    log_msg(rw->log, now, LOG_INFO, NULL, node->instance_id,
            "reclaimed by the cloud %.0f s after its launch, within the %.0f s it does not bill: "
            "its $%.4f are taken back from the fleet's and its jobs' costs",
            gone - node->launched_at, rw->offers[o].reclaim_free_s, back);
    for (size_t i = 0; i < n; i++) /* each job's owner sees why its cost fell */
        if (shares[i].dollars > 0)
            event_note(rw->state, rw->log, now, LOG_INFO, shares[i].job, node->instance_id,
                       "refund",
                       "the cloud reclaimed the node %.0f s after its launch and does not bill it: "
                       "$%.4f taken back from this job's cost",
                       gone - node->launched_at, shares[i].dollars);
    state_cost_shares_free(shares, n);
}

/* The nodes the state holds: terminate those whose instance is gone. */
static void rw_reconcile_nodes(struct realworld *rw, const struct cloud_instance *in, size_t n,
                               const struct state_node *nodes, size_t nn, double now)
{
    for (size_t k = 0; k < nn; k++) {
        const struct state_node *node = &nodes[k];
        const struct cloud_instance *inst;
        struct state_node_job *jobs = NULL;
        size_t nj = 0;
        int gone, told;

        if (!node->launch_token || node->state == STATE_NODE_TERMINATED)
            continue;
        inst = rw_instance(in, n, node->instance_id);
        gone = inst ? inst->state == CLOUD_GONE
                    : node->state == STATE_NODE_READY || node->state == STATE_NODE_DRAINING ||
                          now - node->launched_at > rw->launch_timeout;
        if (!gone)
            continue;
        told = !rw_node_fenced(rw, node); /* (a fenced one was told already) */
        /* its jobs, read before the termination drops them, told and the loss counted once it
         * is written: a state that refuses it (a full disk) is asked again next tick */
        if (!told || state_node_jobs(rw->state, node->instance_id, &jobs, &nj) < 0)
            nj = 0;
        rw_quota_freed(rw, rw_node_spot(node), now);
        rw_reclaim_refund(rw, node, now);
        if (state_node_set_state(rw->state, node->instance_id, STATE_NODE_TERMINATED, now) == 0) {
            event_note_jobs(rw->state, rw->log, now, jobs, nj, node->instance_id, "node-lost",
                            "the node's instance is gone", RW_RESTARTS);
            rw->losses[API_LOSS_GONE] += told;
            log_msg(rw->log, now, LOG_WARN, NULL, node->instance_id,
                    "the instance is gone: the node is terminated");
        }
        state_node_jobs_free(jobs, nj);
    }
}

double rw_node_heard(const struct realworld *rw, const struct state_node *n)
{
    double heard = rw->watch_from, api = rw->heard ? rw->heard(rw->heard_ctx, n->instance_id) : NAN;

    if (isfinite(n->heartbeat_at))
        heard = fmax(heard, n->heartbeat_at);
    if (isfinite(n->ready_at))
        heard = fmax(heard, n->ready_at);
    if (isfinite(api)) /* a heartbeat the state could not record */
        heard = fmax(heard, api);
    return heard;
}

/* 1 when the state takes writes now (state_write_check), else 0, kept in rw->state_failing: the
 * start of an episode of failing writes is logged as an error, its end too, and the watches then
 * start again from now (watch_from). A write busy on another connection changes nothing. */
static int rw_state_writable(struct realworld *rw, double now)
{
    int rc = state_write_check(rw->state);

    if (rc == ERR_AGAIN) /* another connection writes: as it was */
        return !rw->state_failing;
    if (rc < 0 && !rw->state_failing) {
        log_msg(rw->log, now, LOG_ERROR, NULL, NULL,
                "the state cannot be written (%s: a full disk, or a read-only file?): no node is "
                "terminated or fenced for its silence until it can (what the state says of its "
                "agents may be stale); the nodes' costs are recorded once it can",
                err_str(rc));
    } else if (rc == 0 && rw->state_failing) {
        log_msg(rw->log, now, LOG_WARN, NULL, NULL,
                "the state can be written again: the nodes' silence and the jobs' hangs are "
                "timed from now");
        rw->watch_from = now; /* what the state could not record meanwhile is not held against
                               * the nodes (registrations) or the jobs (reports) */
    }
    rw->state_failing = rc < 0;
    return rc == 0;
}

int rw_node_silent(const struct realworld *rw, const struct state_node *n, double now)
{
    if (!(rw->heartbeat_timeout > 0) || n->state != STATE_NODE_READY)
        return 0;
    return now - rw_node_heard(rw, n) > rw->heartbeat_timeout;
}

int rw_node_fenced(const struct realworld *rw, const struct state_node *n)
{
    if (!n->launch_token || n->state == STATE_NODE_TERMINATED)
        return 0;
    /* a fence drains the node without a notice; a notice drains it with one */
    return rw_listed(rw->fenced, n->instance_id) ||
           (n->state == STATE_NODE_DRAINING && !isfinite(n->notice_at));
}

/*
 * Fence a silent launched node: its instance is asked to terminate (again each tick until the
 * cloud says it is gone) and the node drains; its jobs wait (observe leaves them out) until the
 * instance is gone and the node terminated, because a node that is only cut off from the
 * controller may still run their replicas, which would then write their checkpoints beside the
 * new ones. Told once, when the fence goes up.
 */
static void rw_fence(struct realworld *rw, const struct state_node *node, double now)
{
    int listed = rw_listed(rw->fenced, node->instance_id);
    /* a node found draining without a notice was fenced before this daemon's start: its jobs
     * were told then */
    int first = !listed && node->state == STATE_NODE_READY;
    int rc;

    if (!listed && rw_list_add(&rw->fenced, node->instance_id) < 0)
        return;
    if (first) {
        rw_note_node_jobs(rw, node->instance_id, now, "node-lost",
                          "the node's agent has not been heard from (its instance is terminated "
                          "first)",
                          RW_RESTARTS);
        rw->losses[API_LOSS_SILENT]++;
    } else if (!listed) {
        log_msg(rw->log, now, LOG_WARN, NULL, node->instance_id,
                "fenced before this start and its instance still listed: it is terminated again, "
                "and its jobs move once it is gone");
    }
    rc = cloud_terminate(rw->cloud, rw->cluster, node->instance_id);
    rw_count(rw, RW_OP_TERMINATE, rc);
    if (rc < 0 && rc != ERR_UNKNOWN)
        log_msg(rw->log, now, LOG_WARN, NULL, node->instance_id,
                "cannot terminate the silent node's instance (%s): tried again next tick",
                err_str(rc));
    else if (first)
        log_msg(rw->log, now, LOG_WARN, NULL, node->instance_id,
                "its agent has not been heard from for over %.0f s: the instance is terminated, "
                "and its jobs move once it is gone",
                rw->heartbeat_timeout);
    if (node->state == STATE_NODE_READY)
        state_node_set_state(rw->state, node->instance_id, STATE_NODE_DRAINING, now);
}

/* A launched node drained by a preemption notice (notice_at set) whose instance the cloud still
 * lists RW_NOTICE_MARGIN_S after the notice's deadline (the notice's time when it said none) was
 * not taken: it is terminated, asked again each tick while the cloud refuses. Its jobs moved when
 * the notice came. */
static int rw_notice_overdue(const struct state_node *n, double now, double *deadline)
{
    if (!n->launch_token || n->state != STATE_NODE_DRAINING || !isfinite(n->notice_at))
        return 0;
    *deadline = isfinite(n->notice_deadline) ? n->notice_deadline : n->notice_at;
    return now > *deadline + RW_NOTICE_MARGIN_S;
}

/* The launched nodes whose agents do not show life: one that never registered within the
 * registration timeout (its offer then avoided: the next launch would fail the same way) is
 * terminated with its instance; one ready that has gone silent past the heartbeat timeout is
 * fenced (rw_fence), and so again each tick is one fenced (rw_node_fenced: by this daemon or, as
 * the state says, before its start) while its instance is listed. A node whose preemption notice
 * the cloud did not carry out is terminated (rw_notice_overdue). None is terminated or fenced for
 * its silence while the state cannot be written (rw->state_failing). The nodes are those listed
 * (the gone ones were terminated before). The fleet planner launches what it still wants. */
static void rw_reconcile_silent(struct realworld *rw, const struct state_node *nodes, size_t nn,
                                double now)
{
    for (size_t k = 0; k < nn; k++) {
        const struct state_node *node = &nodes[k];
        double deadline = NAN;
        char why[160];
        int o, unregistered, silent;

        if (!node->launch_token)
            continue;
        unregistered = (node->state == STATE_NODE_LAUNCHING || node->state == STATE_NODE_BOOTING) &&
                       rw->register_timeout > 0 &&
                       now - fmax(node->launched_at, rw->watch_from) > rw->register_timeout;
        silent = !unregistered && rw_node_silent(rw, node, now);
        /* no node is taken down for its silence from a state that cannot be written: its agent's
         * registration or heartbeats may be what was not recorded, and the fence could not be */
        if ((unregistered || silent) && rw->state_failing)
            continue;
        if (unregistered) {
            o = rw_offer_find(rw, node->offer);
            if (o >= 0)
                rw->offers[o].unavailable_until = now + RW_UNAVAILABLE_S;
            /* told and counted once it went: a refusal asks it again next tick */
            if (rw_node_terminate_lost(rw, node->instance_id, rw_node_spot(node), now,
                                       "its agent never registered", NULL, NULL, NULL,
                                       API_LOSS_UNREGISTERED) == 0)
                log_msg(rw->log, now, LOG_ERROR, NULL, node->instance_id,
                        "its agent did not register within %.0f s of the launch: the instance "
                        "is terminated, and %s is not launched for %.0f s (check the image and "
                        "the user data that start castor-node)",
                        rw->register_timeout, node->offer, RW_UNAVAILABLE_S);
            continue;
        } else if (silent || (node->state == STATE_NODE_DRAINING && rw_node_fenced(rw, node))) {
            rw_fence(rw, node, now);
            continue;
        } else if (rw_notice_overdue(node, now, &deadline)) {
            snprintf(
                why, sizeof(why),
                "drained by a preemption notice the cloud has not carried out %.0f s after its "
                "deadline (a false alarm, or a live migration)",
                now - deadline);
        } else {
            continue;
        }
        rw_node_terminate(rw, node->instance_id, rw_node_spot(node), now, why);
    }
}

/* The pending intents: resolved, asked again, or failed after the timeout. */
static void rw_reconcile_intents(struct realworld *rw, const struct cloud_instance *in, size_t n,
                                 const struct state_node *nodes, size_t nn, double now)
{
    for (size_t i = 0; i < rw->nintents; i++) {
        const struct state_intent *it = &rw->intents[i];
        int live = 0, gone = 0, o;

        for (size_t k = 0; k < n; k++)
            if (strcmp(in[k].token, it->token) == 0) {
                live |= in[k].state != CLOUD_GONE;
                gone |= in[k].state == CLOUD_GONE;
            }
        if (rw_token_has_node(nodes, nn, it->token)) {
            state_intent_resolve(rw->state, it->token, STATE_INTENT_LAUNCHED, now);
        } else if (live) {
            continue; /* its instance was dealt with above */
        } else if (gone || now - it->created_at > rw->launch_timeout) {
            if (state_intent_resolve(rw->state, it->token, STATE_INTENT_FAILED, now) == 0)
                log_msg(rw->log, now, LOG_WARN, NULL, NULL,
                        "a launch of %s made no instance in %.0f s: given up", it->offer,
                        rw->launch_timeout);
        } else if ((o = rw_offer_find(rw, it->offer)) >= 0 && !rw->over_spend) {
            /* the same token: at most one instance. Asked again even while its offer is held
             * after another launch's refusal: the answer to this one is not known, and asking is
             * how it is learnt (a refusal fails the intent at once) */
            rw_launch_token(rw, o, it->token, now);
        } /* else over the spend limit: it waits, and is given up after the timeout */
    }
}

int rw_intents_read(struct realworld *rw)
{
    struct state_intent *in = NULL;
    size_t n = 0;
    int rc = state_intents_pending(rw->state, &in, &n);

    if (rc < 0)
        return rc;
    state_intents_free(rw->intents, rw->nintents);
    rw->intents = in;
    rw->nintents = n;
    return 0;
}

int realworld_reconcile(struct realworld *rw)
{
    struct cloud_instance *in = NULL;
    struct state_node *nodes = NULL;
    size_t n = 0, nn = 0;
    double now = rw_now(rw);
    int rc;

    rw->observed = 0; /* the snapshot's rows may no longer hold */
    rw_watch_start(rw, now);
    /* whether the state takes writes (rw->state_failing), for the watches below */
    rw_state_writable(rw, now);
    rw_spend_check(rw, now); /* before any pending launch is asked again */
    rc = cloud_list(rw->cloud, rw->cluster, &in, &n);
    rw_count(rw, RW_OP_LIST, rc);
    if (rc < 0) {
        log_msg(rw->log, now, LOG_WARN, NULL, NULL, "cannot list the cluster's instances: %s",
                err_str(rc));
        return rc;
    }
    if (rw->noffers == 0)
        rw_offers_refresh(rw);
    if ((rc = rw_intents_read(rw)) < 0 ||
        (rc = state_nodes_list(rw->state, RW_ALL_NODES, &nodes, &nn)) < 0)
        goto out;
    rw_reconcile_instances(rw, in, n, nodes, nn, now);
    state_nodes_free(nodes, nn);
    nodes = NULL;
    /* read again: adoptions and terminations changed the nodes */
    if ((rc = rw_intents_read(rw)) < 0 ||
        (rc = state_nodes_list(rw->state, RW_ALL_NODES, &nodes, &nn)) < 0)
        goto out;
    rw_reconcile_nodes(rw, in, n, nodes, nn, now);
    rw_reconcile_intents(rw, in, n, nodes, nn, now);
    state_nodes_free(nodes, nn);
    nodes = NULL;
    nn = 0;
    /* read again: the nodes of gone instances were terminated */
    if ((rc = state_nodes_list(rw->state, RW_LIVE_NODES, &nodes, &nn)) < 0)
        goto out;
    rw_reconcile_silent(rw, nodes, nn, now);
    rc = rw_intents_read(rw);
out:
    state_nodes_free(nodes, nn);
    free(in);
    return rc;
}
