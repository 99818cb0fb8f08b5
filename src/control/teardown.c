/* teardown.c: the end of a cluster: its instances terminated, its pending launches given up and
 * its nodes terminated in the state; the jobs kept. */
#include "control/teardown.h"

#include <math.h>
#include <stdlib.h>

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
        rc = state_cost_accrue_live(st, until, now, listed);
    free(listed);
    return rc;
}

/* The state: pending intents given up, live nodes terminated (what they cost up to now recorded
 * first), jobs counted. */
static int td_state(struct state *st, const struct cloud_instance *in, size_t n, int apply,
                    double now, struct teardown_result *r)
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

int teardown_run(struct state *st, struct cloud *cloud, const char *cluster, int apply, double now,
                 FILE *out, struct teardown_result *res, struct error *e)
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
    rc = st ? td_state(st, in, n, apply, now, &r) : 0;
    free(in);
    if (rc < 0)
        return err_set(e, rc, "", 0, 0, "the state: %s", err_str(rc));
    *res = r;
    return 0;
}
