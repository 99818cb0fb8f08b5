/* teardown.c: the end of a cluster: its instances terminated, its pending launches given up and
 * its nodes terminated in the state; the jobs kept. */
#include "control/teardown.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "control/realworld.h"
#include "control/state.h"
#include "providers/cloud.h"

static const char *td_state_name(enum cloud_state s)
{
    switch (s) {
    case CLOUD_PENDING:
        return "pending";
    case CLOUD_RUNNING:
        return "running";
    case CLOUD_NOTICED:
        return "noticed";
    default:
        return "gone";
    }
}

/* The instances: listed, and terminated when apply. */
static void td_instances(struct cloud *cloud, const char *cluster, const struct cloud_instance *in,
                         size_t n, int apply, FILE *out, struct teardown_result *r)
{
    for (size_t i = 0; i < n; i++) {
        int rc = 0;

        if (in[i].state == CLOUD_GONE)
            continue;
        r->instances++;
        if (apply && (rc = cloud_terminate(cloud, cluster, in[i].id)) < 0 && rc != ERR_UNKNOWN)
            r->failed++;
        else if (apply)
            r->terminated++;
        if (out)
            fprintf(out, "%s %s (%s, %s)%s%s\n",
                    apply ? (rc < 0 && rc != ERR_UNKNOWN ? "NOT terminated:" : "terminated")
                          : "would terminate",
                    in[i].id, in[i].offer, td_state_name(in[i].state),
                    rc < 0 && rc != ERR_UNKNOWN ? ": " : "",
                    rc < 0 && rc != ERR_UNKNOWN ? err_str(rc) : "");
    }
}

/* What the live nodes cost since the costs recorded last (the controller stopped before the
 * teardown): up to now for each, the nodes castor launched whose instances the cloud no longer
 * lists (the n listed, in) left out: when they went is not known. */
static int td_costs(struct state *st, const struct cloud_instance *in, size_t n, double now)
{
    char **listed = calloc(n + 1, sizeof(*listed));
    double until = NAN;
    size_t k = 0;
    int rc = listed ? state_cost_recorded_until(st, &until) : ERR_NOMEM;

    for (size_t i = 0; rc == 0 && i < n; i++)
        if (in[i].state != CLOUD_GONE)
            listed[k++] = (char *)in[i].id;
    if (rc == 0 && isfinite(until) && until < now)
        rc = state_cost_accrue_listed(st, until, now, listed); /* (one ended since: to its end) */
    free(listed);
    return rc;
}

/* What the controller bills a node of the offer named name for ($/h; NAN: it cannot tell), as
 * its world prices it: the cloud's price now among offers (n), or the configuration's own price
 * or discount (meta, nmeta: NULL and 0 for none), a spot node at most its bid
 * (realworld_offer_price, realworld_offer_bill); *spot: whether the cloud lists it as spot, and
 * *zone the configuration's zone (NULL: none said). */
static double td_price(const struct cloud_offer *offers, size_t n,
                       const struct realworld_offer *meta, size_t nmeta, const char *name,
                       int *spot, const char **zone)
{
    const struct cloud_offer *o = NULL;
    const struct realworld_offer *m = NULL;

    for (size_t i = 0; i < n && !o; i++)
        if (strcmp(offers[i].name, name) == 0)
            o = &offers[i];
    for (size_t i = 0; i < nmeta && !m; i++)
        if (meta[i].name && strcmp(meta[i].name, name) == 0)
            m = &meta[i];
    *spot = o && o->spot;
    *zone = m ? m->zone : NULL;
    if (!o)
        return m && m->price > 0 ? m->price : NAN;
    return realworld_offer_bill(m ? realworld_offer_price(m, o->price, o->storage) : o->price,
                                o->spot, o->max_price, o->storage);
}

/* What the listed instances that no live node of the state explains (strays: launched by a
 * controller that lost their answer, or after the state was replaced) cost, charged to the fleet
 * by the controller's own rule (realworld_stray_charge) at the price it bills their offer at
 * (td_price); once only (a stray the controller charged already is charged for the span since).
 * One no price can be told for is said on out and counted nowhere. */
static int td_strays(struct state *st, struct cloud *cloud, const struct realworld_offer *meta,
                     size_t nmeta, const struct cloud_instance *in, size_t n, double now, FILE *out)
{
    struct cloud_offer *offers = NULL;
    size_t no = 0;
    int rc = 0, priced = cloud_offers(cloud, &offers, &no) == 0;

    for (size_t i = 0; rc == 0 && i < n; i++) {
        struct state_node node;
        double price, seconds = 0, dollars = 0;
        const char *zone = NULL;
        int spot = 0, known;

        if (in[i].state == CLOUD_GONE)
            continue;
        known = state_node_get(st, in[i].id, &node);
        if (known < 0 && known != ERR_UNKNOWN) {
            rc = known;
            break;
        }
        price = td_price(offers, priced ? no : 0, meta, nmeta, in[i].offer, &spot, &zone);
        rc = realworld_stray_charge(st, &in[i], known == 0 ? &node : NULL, price, spot, zone, now,
                                    &seconds, &dollars, &price);
        if (known == 0)
            state_node_clear(&node);
        if (rc == ERR_UNKNOWN && out)
            fprintf(out,
                    "%s: a stray of %s, whose price castor cannot tell: what it cost is "
                    "counted nowhere\n",
                    in[i].id, in[i].offer[0] ? in[i].offer : "an unknown offer");
        else if (rc == 0 && out && seconds > 0)
            fprintf(out, "%s: a stray, $%.4f for %.0f s at $%.4f/h added to the fleet's costs\n",
                    in[i].id, dollars, seconds, price);
        if (rc == ERR_UNKNOWN)
            rc = 0;
    }
    free(offers);
    return rc;
}

/* The state: pending intents given up, live nodes terminated (what they cost up to now recorded
 * first), jobs counted. */
static int td_state(struct state *st, struct cloud *cloud, const struct realworld_offer *meta,
                    size_t nmeta, const struct cloud_instance *in, size_t n, int apply, double now,
                    FILE *out, struct teardown_result *r)
{
    struct state_intent *it = NULL;
    struct state_node *nodes = NULL;
    struct state_job *jobs = NULL;
    size_t ni = 0, nn = 0, nj = 0;
    int rc = state_intents_pending(st, &it, &ni);

    if (rc == 0)
        rc = state_nodes_list(st,
                              STATE_MASK(STATE_NODE_LAUNCHING) | STATE_MASK(STATE_NODE_BOOTING) |
                                  STATE_MASK(STATE_NODE_READY) | STATE_MASK(STATE_NODE_DRAINING),
                              &nodes, &nn);
    if (rc == 0)
        rc = state_jobs_list(st, STATE_MASK(STATE_JOB_PENDING) | STATE_MASK(STATE_JOB_RUNNING),
                             &jobs, &nj);
    if (rc == 0 && apply)
        rc = td_costs(st, in, n, now);
    if (rc == 0 && apply)
        rc = td_strays(st, cloud, meta, nmeta, in, n, now, out);
    for (size_t i = 0; i < ni && rc == 0 && apply; i++)
        rc = state_intent_resolve(st, it[i].token, STATE_INTENT_FAILED, now);
    for (size_t i = 0; i < nn && rc == 0 && apply; i++)
        rc = state_node_set_state(st, nodes[i].instance_id, STATE_NODE_TERMINATED, now);
    if (rc == 0) {
        r->intents = (int)ni;
        r->nodes = (int)nn;
        r->jobs = (int)nj;
    }
    state_intents_free(it, ni);
    state_nodes_free(nodes, nn);
    state_jobs_free(jobs, nj);
    return rc;
}

int teardown_run(struct state *st, struct cloud *cloud, const char *cluster,
                 const struct realworld_offer *meta, size_t nmeta, int apply, double now, FILE *out,
                 struct teardown_result *res, struct error *e)
{
    struct teardown_result r = {0};
    struct cloud_instance *in = NULL;
    size_t n = 0;
    int rc;

    if (!cloud || !cluster || !res)
        return err_set(e, ERR_INVAL, "", 0, 0, "a teardown needs a cloud and a cluster");
    if ((rc = cloud_list(cloud, cluster, &in, &n)) < 0)
        return err_set(e, rc, "", 0, 0, "cannot list the cluster's instances: %s", err_str(rc));
    td_instances(cloud, cluster, in, n, apply, out, &r);
    rc = st ? td_state(st, cloud, meta, nmeta, in, n, apply, now, out, &r) : 0;
    free(in);
    if (rc < 0)
        return err_set(e, rc, "", 0, 0, "the state: %s", err_str(rc));
    *res = r;
    return 0;
}
