/* realworld.c: the provider of real worlds: snapshots from the state and a cloud, plans into the
 * state, fleet changes through the cloud with launch intents, and reconciliation. */
#include "control/realworld.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/state.h"
#include "model/bsz.h"
#include "model/fit.h"
#include "model/goodput.h"
#include "model/profile.h"
#include "util/crypto.h"
#include "util/json.h"
#include "util/log.h"

#define RW_CLUSTER_MAX 40
#define RW_UNAVAILABLE_S \
    600.0 /* an offer that refused a launch for capacity is avoided this long */
/* An offer refused for a quota (ERR_QUOTA: AWS's VcpuLimitExceeded, MaxSpotInstanceCountExceeded)
 * is avoided until the quota may have changed: an instance of the cluster in the same market
 * terminates (its vCPUs go back to the quota), or this long passes (an increase granted). */
#define RW_QUOTA_HOLD_S 3600.0
#define RW_MIN_BILLED_S 60.0
#define RW_HYSTERESIS 1.05 /* a new batch size without a new placement must gain 5% goodput */
#define RW_NOPS 4

static const char *const rw_ops[RW_NOPS] = {"offers", "list", "launch", "terminate"};
enum { RW_OP_OFFERS, RW_OP_LIST, RW_OP_LAUNCH, RW_OP_TERMINATE };

#define RW_LIVE_NODES                                                    \
    (STATE_MASK(STATE_NODE_LAUNCHING) | STATE_MASK(STATE_NODE_BOOTING) | \
     STATE_MASK(STATE_NODE_READY) | STATE_MASK(STATE_NODE_DRAINING))
#define RW_ALL_NODES (RW_LIVE_NODES | STATE_MASK(STATE_NODE_TERMINATED))

/* An offer the cloud has shown; it keeps its index for the world's life. */
struct rw_offer {
    char *name;
    int gpus;
    int spot;
    double price;
    int present; /* in the cloud's last answer */
    double unavailable_until;
    int quota_held; /* unavailable for a quota: released early by a termination in its market */
};

/* What is kept of a job between ticks. */
struct rw_job {
    char *name;
    int has_model;
    struct tput_params tput;
    double fitted_for; /* the reported_at of the reports fitted (NAN: none) */
    int family_fitted; /* a fit took its family's measurements (done once; then on its own) */
    int max_profiled;
    double attained; /* GPU-seconds held while this process watched */
    int refitted;    /* the model changed in this tick */
    /* the figures of its current configuration, for the metrics */
    double goodput, speedup, batch;
    double eta; /* when it is predicted to finish there, seconds since the epoch (NAN: unknown) */
    int late;   /* 1 while that is after its deadline (told once, and again when it is not) */
};

/* A job's spec, as the decide step needs it. */
struct rw_spec {
    double m0, max_bsz, max_local, checkpoint, deadline, weight;
    double samples;                  /* the job's length in samples (0: unknown) */
    char family[API_FAMILY_MAX + 1]; /* its model family ("": none) */
    int min_replicas, max_replicas, req_replicas;
};

struct rw_error_count {
    char op[16];
    char code[24];
    long long n;
};

struct realworld {
    struct state *state;
    struct cloud *cloud;
    struct log *log;
    char cluster[RW_CLUSTER_MAX + 1];
    realworld_clock_fn clock;
    realworld_sleep_fn sleep;
    void *clock_ctx;
    double launch_timeout;
    struct realworld_offer *meta; /* strings owned */
    size_t nmeta;
    const struct tput_model_ops *model;
    double wake_at; /* the deadline of the wait in progress (NAN: none) */
    double last_observe;
    /* offers, jobs and counts kept across ticks */
    struct rw_offer *offers;
    size_t noffers;
    struct rw_job *jobs;
    size_t njobs;
    long long calls[RW_NOPS];
    struct rw_error_count *errors;
    size_t nerrors;
    struct api_call_metrics *call_rows, *error_rows;
    struct api_job_metrics *job_rows;
    struct realworld_actions actions;
    /* the snapshot of the last observe and what its rows stand for */
    int observed;
    struct snapshot snap;
    struct state_node *live; /* nodes not terminated */
    size_t nlive;
    struct snap_node *snodes;
    int *snode_live; /* snapshot node -> index in live */
    struct snap_booting *booting;
    int *boot_live;    /* booting entry -> index in live, or -1 for an intent */
    char **boot_token; /* booting entry -> the intent's token (borrowed from intents) */
    struct state_intent *intents;
    size_t nintents;
    struct state_job *sjob_state; /* the jobs as read */
    size_t nsjobs;
    struct snap_job *sjobs;
    int *sjob_rw; /* snapshot job -> index in jobs */
    struct rw_spec *specs;
    struct state_alloc **held; /* per snapshot job: the state's allocation */
    size_t *nheld;
    struct alloc *current;
    struct snap_offer *soffers;
};

/* ---- small helpers ---- */

static double rw_now(struct realworld *rw)
{
    return rw->clock(rw->clock_ctx);
}

/* Count a cloud call and, when it failed, its error. */
static void rw_count(struct realworld *rw, int op, int rc)
{
    const char *code;
    struct rw_error_count *grown;

    rw->calls[op]++;
    if (rc >= 0)
        return;
    code = err_name(rc);
    for (size_t i = 0; i < rw->nerrors; i++)
        if (strcmp(rw->errors[i].op, rw_ops[op]) == 0 && strcmp(rw->errors[i].code, code) == 0) {
            rw->errors[i].n++;
            return;
        }
    if (!(grown = realloc(rw->errors, (rw->nerrors + 1) * sizeof(*grown))))
        return; /* a count lost to a lack of memory */
    rw->errors = grown;
    snprintf(grown[rw->nerrors].op, sizeof(grown[rw->nerrors].op), "%s", rw_ops[op]);
    snprintf(grown[rw->nerrors].code, sizeof(grown[rw->nerrors].code), "%s", code);
    grown[rw->nerrors].n = 1;
    rw->nerrors++;
}

static const struct realworld_offer *rw_meta(const struct realworld *rw, const char *offer)
{
    for (size_t i = 0; i < rw->nmeta; i++)
        if (strcmp(rw->meta[i].name, offer) == 0)
            return &rw->meta[i];
    return NULL;
}

static int rw_offer_find(const struct realworld *rw, const char *name)
{
    for (size_t i = 0; name && i < rw->noffers; i++)
        if (strcmp(rw->offers[i].name, name) == 0)
            return (int)i;
    return -1;
}

static const struct state_intent *rw_intent(const struct realworld *rw, const char *token)
{
    for (size_t i = 0; token && token[0] && i < rw->nintents; i++)
        if (strcmp(rw->intents[i].token, token) == 0)
            return &rw->intents[i];
    return NULL;
}

static void rw_meta_free(struct realworld_offer *m, size_t n)
{
    for (size_t i = 0; m && i < n; i++) {
        free((char *)m[i].name);
        free((char *)m[i].zone);
    }
    free(m);
}

static int rw_meta_copy(const struct realworld_offer *src, size_t n, struct realworld_offer **out)
{
    struct realworld_offer *m = calloc(n + 1, sizeof(*m));

    if (!m)
        return ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        m[i] = src[i];
        m[i].name = strdup(src[i].name ? src[i].name : "");
        m[i].zone = src[i].zone ? strdup(src[i].zone) : NULL;
        if (!m[i].name || (src[i].zone && !m[i].zone)) {
            rw_meta_free(m, i + 1);
            return ERR_NOMEM;
        }
    }
    *out = m;
    return 0;
}

/* ---- offers ---- */

/* Fetch the cloud's offers into rw->offers: known ones keep their index, new ones are appended,
 * those no longer offered stay, marked absent (unavailable). */
static int rw_offers_refresh(struct realworld *rw)
{
    struct cloud_offer *got = NULL;
    size_t n = 0;
    int rc = cloud_offers(rw->cloud, &got, &n);

    rw_count(rw, RW_OP_OFFERS, rc);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < rw->noffers; i++)
        rw->offers[i].present = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        int k = rw_offer_find(rw, got[i].name);

        if (k < 0) {
            struct rw_offer *grown = realloc(rw->offers, (rw->noffers + 1) * sizeof(*grown));

            if (!grown) {
                rc = ERR_NOMEM;
                break;
            }
            rw->offers = grown;
            k = (int)rw->noffers;
            memset(&grown[k], 0, sizeof(grown[k]));
            if (!(grown[k].name = strdup(got[i].name))) {
                rc = ERR_NOMEM;
                break;
            }
            rw->noffers++;
        }
        rw->offers[k].gpus = got[i].gpus;
        rw->offers[k].spot = got[i].spot;
        rw->offers[k].price = got[i].price;
        rw->offers[k].present = got[i].gpus > 0;
    }
    free(got);
    return rc;
}

int realworld_offer_index(struct realworld *rw, const char *name, int *index)
{
    int rc, k;

    if (rw->noffers == 0 && (rc = rw_offers_refresh(rw)) < 0)
        return rc;
    if ((k = rw_offer_find(rw, name)) < 0)
        return ERR_UNKNOWN;
    *index = k;
    return 0;
}

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
    n.price = o >= 0 && isfinite(rw->offers[o].price) ? rw->offers[o].price : 0;
    return state_node_upsert(rw->state, &n);
}

/* An instance of market spot (1 spot, 0 on-demand, -1 not known) is gone: the offers of that
 * market held for a quota may launch again. */
static void rw_quota_freed(struct realworld *rw, int spot, double now)
{
    for (size_t o = 0; spot >= 0 && o < rw->noffers; o++)
        if (rw->offers[o].quota_held && rw->offers[o].spot == spot) {
            rw->offers[o].quota_held = 0;
            rw->offers[o].unavailable_until = 0;
            log_msg(rw->log, now, LOG_INFO, NULL, NULL,
                    "an instance of the %s market is gone: %s may launch again (quota)",
                    spot ? "spot" : "on-demand", rw->offers[o].name);
        }
}

/* 1 when the state's node is spot, 0 when on-demand. */
static int rw_node_spot(const struct state_node *n)
{
    return n->market == STATE_MARKET_SPOT;
}

/* Terminate the node (its instance first; spot: its market as rw_quota_freed takes it); an
 * instance the cloud no longer knows is gone. */
static int rw_node_terminate(struct realworld *rw, const char *id, int spot, double now,
                             const char *why)
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

/* Log each job that held replicas on the node, before the node goes. */
static void rw_log_lost_jobs(struct realworld *rw, const char *id, double now)
{
    struct state_node_job *jobs = NULL;
    size_t n = 0;

    if (state_node_jobs(rw->state, id, &jobs, &n) < 0)
        return;
    for (size_t i = 0; i < n; i++)
        log_msg(rw->log, now, LOG_WARN, jobs[i].job, id,
                "the node is gone: the job restarts from its last checkpoint");
    state_node_jobs_free(jobs, n);
}

/* Launch one instance of offer o under token (an intent already committed). */
static int rw_launch_token(struct realworld *rw, int o, const char *token, double now)
{
    char id[CLOUD_ID_MAX] = "";
    const char *offer = rw->offers[o].name;
    int rc = cloud_launch(rw->cloud, offer, rw->cluster, token, id);

    rw_count(rw, RW_OP_LAUNCH, rc);
    if (rc == 0) {
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

static int rw_token_has_node(const struct state_node *nodes, size_t n, const char *token)
{
    for (size_t i = 0; i < n; i++)
        if (nodes[i].launch_token && strcmp(nodes[i].launch_token, token) == 0)
            return 1;
    return 0;
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
                rw_node_terminate(rw, in[i].id, rw_node_spot(node), now, "its node was terminated");
                continue;
            }
            if (node->state == STATE_NODE_LAUNCHING)
                state_node_set_state(rw->state, in[i].id, STATE_NODE_BOOTING, now);
            if (in[i].state == CLOUD_NOTICED && node->state != STATE_NODE_DRAINING) {
                double deadline = in[i].ends > now ? in[i].ends : now;

                if (state_node_notice(rw->state, in[i].id, now, deadline) == 0)
                    log_msg(rw->log, now, LOG_WARN, NULL, in[i].id,
                            "preemption notice: the node drains");
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
        if (node)
            rw_log_lost_jobs(rw, in[i].id, now);
        o = rw_offer_find(rw, in[i].offer);
        rw_node_terminate(rw, in[i].id,
                          node     ? rw_node_spot(node)
                          : o >= 0 ? rw->offers[o].spot
                                   : -1,
                          now,
                          "an instance with the cluster's tag that no open launch intent explains");
    }
}

/* The nodes the state holds: terminate those whose instance is gone. */
static void rw_reconcile_nodes(struct realworld *rw, const struct cloud_instance *in, size_t n,
                               const struct state_node *nodes, size_t nn, double now)
{
    for (size_t k = 0; k < nn; k++) {
        const struct state_node *node = &nodes[k];
        const struct cloud_instance *inst;
        int gone;

        if (!node->launch_token || node->state == STATE_NODE_TERMINATED)
            continue;
        inst = rw_instance(in, n, node->instance_id);
        gone = inst ? inst->state == CLOUD_GONE
                    : node->state == STATE_NODE_READY || node->state == STATE_NODE_DRAINING ||
                          now - node->launched_at > rw->launch_timeout;
        if (!gone)
            continue;
        rw_log_lost_jobs(rw, node->instance_id, now);
        rw_quota_freed(rw, rw_node_spot(node), now);
        if (state_node_set_state(rw->state, node->instance_id, STATE_NODE_TERMINATED, now) == 0)
            log_msg(rw->log, now, LOG_WARN, NULL, node->instance_id,
                    "the instance is gone: the node is terminated");
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
        } else if ((o = rw_offer_find(rw, it->offer)) >= 0) {
            rw_launch_token(rw, o, it->token, now); /* the same token: at most one instance */
        }
    }
}

/* Read the pending intents into rw->intents (replacing the last ones). */
static int rw_intents_read(struct realworld *rw)
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
    rc = rw_intents_read(rw);
out:
    state_nodes_free(nodes, nn);
    free(in);
    return rc;
}

/* ---- jobs: specs and models ---- */

static double rw_num(const struct jv *o, const char *key, double dflt)
{
    double v;

    return jv_number_value(jv_get(o, key), &v) == 0 ? v : dflt;
}

static int rw_spec_parse(const char *text, struct rw_spec *out)
{
    struct jv *v = NULL;
    const char *family;

    if (jv_parse(text, strlen(text), &v, NULL) < 0)
        return ERR_CORRUPT;
    out->m0 = rw_num(v, "init_batch_size", 0);
    out->max_bsz = rw_num(v, "max_batch_size", out->m0);
    out->max_local = rw_num(v, "max_local_bsz", 0);
    out->checkpoint = rw_num(v, "checkpoint_interval", 600);
    out->samples = rw_num(v, "samples", 0); /* absent or null: unknown */
    family = jv_string_value(jv_get(v, "family"));
    snprintf(out->family, sizeof(out->family), "%s", api_family_ok(family) ? family : "");
    out->deadline = rw_num(v, "deadline", NAN);
    out->min_replicas = (int)rw_num(v, "min_replicas", 1);
    out->max_replicas = (int)rw_num(v, "max_replicas", 0);
    /* what the owner asked for (specs stored before the field: the gang minimum) */
    out->req_replicas = (int)rw_num(v, "replicas", out->min_replicas);
    out->weight = pow(2.0, rw_num(v, "priority", 0) / 10.0);
    jv_free(v);
    return out->m0 > 0 && out->max_local > 0 ? 0 : ERR_CORRUPT;
}

static struct rw_job *rw_job_find(struct realworld *rw, const char *name, int create)
{
    struct rw_job *grown;

    for (size_t i = 0; i < rw->njobs; i++)
        if (strcmp(rw->jobs[i].name, name) == 0)
            return &rw->jobs[i];
    if (!create || !(grown = realloc(rw->jobs, (rw->njobs + 1) * sizeof(*grown))))
        return NULL;
    rw->jobs = grown;
    memset(&grown[rw->njobs], 0, sizeof(grown[0]));
    if (!(grown[rw->njobs].name = strdup(name)))
        return NULL;
    grown[rw->njobs].fitted_for = NAN;
    grown[rw->njobs].goodput = grown[rw->njobs].speedup = grown[rw->njobs].batch = NAN;
    grown[rw->njobs].eta = NAN;
    tput_params_init(&grown[rw->njobs].tput, rw->model);
    return &rw->jobs[rw->njobs++];
}

/* The model stored for the job, when it was fitted to the reports the job has now. */
static void rw_model_restore(struct realworld *rw, struct rw_job *j, const struct state_job *sj)
{
    struct state_model m = {0};
    struct jv *v = NULL;
    const struct jv *theta;
    const char *name;
    double fitted_for = NAN, mp = 0;

    if (state_model_get(rw->state, sj->name, &m) < 0)
        return;
    if (jv_parse(m.params, strlen(m.params), &v, NULL) == 0 &&
        (name = jv_string_value(jv_get(v, "model"))) && strcmp(name, rw->model->name) == 0 &&
        jv_number_value(jv_get(v, "reported_at"), &fitted_for) == 0 &&
        fitted_for == sj->reported_at && (theta = jv_get(v, "theta")) &&
        jv_size(theta) == (size_t)rw->model->nparams) {
        for (int i = 0; i < rw->model->nparams; i++)
            if (jv_number_value(jv_at(theta, (size_t)i), &j->tput.theta[i]) < 0)
                goto out;
        j->tput.ops = rw->model;
        jv_number_value(jv_get(v, "max_profiled"), &mp);
        j->max_profiled = (int)mp;
        j->fitted_for = fitted_for;
        j->has_model = 1;
    }
out:
    jv_free(v);
    state_model_clear(&m);
}

/* Store the job's fitted model (for a restart, and for people). */
static void rw_model_store(struct realworld *rw, const struct rw_job *j, const struct state_job *sj,
                           double now)
{
    struct jv *p = jv_object(), *theta = jv_array(), *g = jv_object();
    char *ptext = NULL, *gtext = NULL;
    int rc = 0;

    for (int i = 0; i < rw->model->nparams; i++)
        rc |= jv_push(theta, jv_number(j->tput.theta[i]));
    rc |= jv_set(p, "model", jv_string(rw->model->name));
    rc |= jv_set(p, "theta", theta);
    rc |= jv_set(p, "reported_at", jv_number(j->fitted_for));
    rc |= jv_set(p, "max_profiled", jv_integer(j->max_profiled));
    rc |= jv_set(g, "sqr", jv_number(sj->grad_sqr));
    rc |= jv_set(g, "var", jv_number(sj->grad_var));
    if (rc == 0 && jv_dump(p, &ptext) == 0 && jv_dump(g, &gtext) == 0)
        state_model_store(rw->state, sj->name, ptext, gtext, now);
    free(ptext);
    free(gtext);
    jv_free(p);
    jv_free(g);
}

/* One pooled configuration into p as one observation (as Pollux weighs them); with
 * accumulation, the step reported is (accum + 1) micro-batches of compute and one
 * synchronisation. A row the profile refuses is left out. */
static void rw_profile_add(struct profile *p, const struct state_report_config *c)
{
    struct tput_point x = {c->nodes, c->replicas, c->local_bsz};
    double compute = (c->step_mean - c->sync_mean) / (c->accum_steps + 1);

    (void)profile_add(p, &x, compute + c->sync_mean, c->sync_mean);
}

/* Merge the family's rows (state_family_configs: grouped by job) into prof job by job:
 * profile_merge keeps prof's own measurements, then those of the jobs submitted first. */
static int rw_family_merge(struct profile *prof, const struct state_family_config *rows, size_t n)
{
    int rc = 0;

    for (size_t i = 0, k; rc == 0 && i < n; i = k) {
        struct profile other;

        profile_init(&other);
        for (k = i; k < n && rows[k].job_id == rows[i].job_id; k++)
            rw_profile_add(&other, &rows[k].config);
        rc = profile_merge(prof, &other);
        profile_free(&other);
    }
    return rc;
}

/*
 * Refit the job's throughput model when reports came since the last fit, and once when it is
 * first seen with a family whose other jobs have measurements (a job of a family with no reports
 * of its own starts with the family's model). The profile fitted is the job's own pooled
 * configurations plus, for a job of a family, the configurations of the family's other jobs that
 * it has not measured itself.
 */
static void rw_model_update(struct realworld *rw, struct rw_job *j, const struct state_job *sj,
                            const struct rw_spec *spec, double now)
{
    struct state_report_config *rows = NULL;
    struct state_family_config *frows = NULL;
    struct profile prof;
    struct tput_params fitted;
    size_t n = 0, nf = 0;
    struct tput_coverage cov;
    int rc, own;

    j->refitted = 0;
    own = isfinite(sj->reported_at) && sj->reported_at != j->fitted_for;
    if (own && isnan(j->fitted_for) && !j->has_model) {
        rw_model_restore(rw, j, sj);
        own = !j->has_model;
    }
    if (spec->family[0] && (own || !j->family_fitted) &&
        (rc = state_family_configs(rw->state, spec->family, sj->name, &frows, &nf)) < 0)
        log_msg(rw->log, now, LOG_WARN, sj->name, NULL, "cannot read the family %s: %s",
                spec->family, err_str(rc)); /* fitted on its own this time */
    if ((!own && nf == 0) || state_report_configs(rw->state, sj->name, &rows, &n) < 0) {
        free(frows);
        return;
    }
    profile_init(&prof);
    if (isfinite(sj->sync_prior))
        prof.sync_prior = sj->sync_prior;
    for (size_t i = 0; i < n; i++)
        rw_profile_add(&prof, &rows[i]);
    free(rows);
    rc = rw_family_merge(&prof, frows, nf);
    free(frows);
    j->fitted_for = sj->reported_at;
    j->family_fitted |= nf > 0;
    profile_coverage(&prof, &cov);
    if (rc == 0)
        rc = prof.n > 0 ? fit_tput(rw->model, &prof, &fitted, NULL) : ERR_EMPTY;
    profile_free(&prof);
    if (rc == ERR_EMPTY)
        return; /* gradient statistics only: nothing to fit yet */
    if (rc < 0) {
        log_msg(rw->log, now, LOG_WARN, sj->name, NULL, "cannot fit the throughput model: %s",
                err_str(rc));
        return;
    }
    j->tput = fitted;
    j->has_model = 1;
    j->max_profiled = cov.max_replicas;
    j->refitted = 1;
    rw_model_store(rw, j, sj, now);
}

/* The job's gradient statistics: its own latest; before its first report of them, its family's
 * start (the mean of the family's jobs' first statistics) when it has one; else none. */
static struct grad_params rw_grad(struct realworld *rw, const struct state_job *sj,
                                  const struct rw_spec *spec)
{
    struct grad_params g = GRAD_PARAMS_NONE;

    if (isfinite(sj->grad_sqr) && isfinite(sj->grad_var))
        return (struct grad_params){.sqr = sj->grad_sqr, .var = sj->grad_var};
    if (spec->family[0]) /* g is written only when the family has a start */
        (void)state_family_start_grad(rw->state, spec->family, spec->m0, &g.sqr, &g.var);
    return g;
}

/* ---- observe ---- */

static void rw_snapshot_free(struct realworld *rw)
{
    state_nodes_free(rw->live, rw->nlive);
    state_jobs_free(rw->sjob_state, rw->nsjobs);
    for (size_t i = 0; rw->held && i < rw->nsjobs; i++)
        state_allocs_free(rw->held[i], rw->nheld[i]);
    free(rw->held);
    free(rw->nheld);
    free(rw->snodes);
    free(rw->snode_live);
    free(rw->booting);
    free(rw->boot_live);
    free(rw->boot_token);
    free(rw->sjobs);
    free(rw->sjob_rw);
    free(rw->specs);
    free(rw->soffers);
    alloc_free(rw->current);
    rw->live = NULL;
    rw->nlive = 0;
    rw->sjob_state = NULL;
    rw->nsjobs = 0;
    rw->held = NULL;
    rw->nheld = NULL;
    rw->snodes = NULL;
    rw->snode_live = NULL;
    rw->booting = NULL;
    rw->boot_live = NULL;
    rw->boot_token = NULL;
    rw->sjobs = NULL;
    rw->sjob_rw = NULL;
    rw->specs = NULL;
    rw->soffers = NULL;
    rw->current = NULL;
    rw->observed = 0;
}

/* The nodes: ready ones are schedulable; launching and booting ones, and the pending intents
 * without a node, are booting. */
static int rw_observe_nodes(struct realworld *rw, int *gpus)
{
    size_t nb = 0, nn = 0, nboot;
    int rc = state_nodes_list(rw->state, RW_LIVE_NODES, &rw->live, &rw->nlive);

    if (rc < 0)
        return rc;
    nboot = rw->nlive + rw->nintents + 1;
    rw->snodes = calloc(rw->nlive + 1, sizeof(*rw->snodes));
    rw->snode_live = calloc(rw->nlive + 1, sizeof(int));
    rw->booting = calloc(nboot, sizeof(*rw->booting));
    rw->boot_live = calloc(nboot, sizeof(int));
    rw->boot_token = calloc(nboot, sizeof(char *));
    if (!rw->snodes || !rw->snode_live || !rw->booting || !rw->boot_live || !rw->boot_token)
        return ERR_NOMEM;
    *gpus = 0;
    for (size_t i = 0; i < rw->nlive; i++) {
        const struct state_node *n = &rw->live[i];
        int o = rw_offer_find(rw, n->offer);

        if (n->state == STATE_NODE_READY && n->gpus > 0) {
            rw->snodes[nn] = (struct snap_node){.gpus = n->gpus,
                                                .preemptible = n->market == STATE_MARKET_SPOT,
                                                .offer = n->launch_token ? o : -1,
                                                .launched = n->launched_at};
            rw->snode_live[nn++] = (int)i;
            *gpus += n->gpus;
        } else if ((n->state == STATE_NODE_LAUNCHING || n->state == STATE_NODE_BOOTING) &&
                   n->launch_token && o >= 0) {
            rw->booting[nb] = (struct snap_booting){.offer = o, .launched = n->launched_at};
            rw->boot_live[nb] = (int)i;
            rw->boot_token[nb++] = NULL;
        }
    }
    for (size_t i = 0; i < rw->nintents; i++) {
        const struct state_intent *it = &rw->intents[i];
        int o = rw_offer_find(rw, it->offer);

        if (o < 0 || rw_token_has_node(rw->live, rw->nlive, it->token))
            continue;
        rw->booting[nb] = (struct snap_booting){.offer = o, .launched = it->created_at};
        rw->boot_live[nb] = -1;
        rw->boot_token[nb++] = it->token;
    }
    rw->snap.nnodes = (int)nn;
    rw->snap.nodes = rw->snodes;
    rw->snap.nbooting = (int)nb;
    rw->snap.booting = rw->booting;
    return 0;
}

/* The snapshot node of instance id, or -1. */
static int rw_snode(const struct realworld *rw, const char *id)
{
    for (int k = 0; k < rw->snap.nnodes; k++)
        if (strcmp(rw->live[rw->snode_live[k]].instance_id, id) == 0)
            return k;
    return -1;
}

/* Forget the jobs that are not among the snapshot's n (they ended), keeping the rows' links. */
static void rw_jobs_prune(struct realworld *rw, size_t n)
{
    size_t kept = 0;

    for (size_t i = 0; i < rw->njobs; i++) {
        int used = -1;

        for (size_t j = 0; j < n && used < 0; j++)
            used = rw->sjob_rw[j] == (int)i ? (int)j : -1;
        if (used < 0) {
            free(rw->jobs[i].name);
            continue;
        }
        for (size_t j = 0; j < n; j++)
            if (rw->sjob_rw[j] == (int)i)
                rw->sjob_rw[j] = (int)kept;
        rw->jobs[kept++] = rw->jobs[i];
    }
    rw->njobs = kept;
}

static int rw_observe_jobs(struct realworld *rw, int gpus, double now)
{
    size_t n = 0;
    int rc =
        state_jobs_list(rw->state, STATE_MASK(STATE_JOB_PENDING) | STATE_MASK(STATE_JOB_RUNNING),
                        &rw->sjob_state, &rw->nsjobs);

    if (rc < 0)
        return rc;
    rw->sjobs = calloc(rw->nsjobs + 1, sizeof(*rw->sjobs));
    rw->sjob_rw = calloc(rw->nsjobs + 1, sizeof(int));
    rw->specs = calloc(rw->nsjobs + 1, sizeof(*rw->specs));
    rw->held = calloc(rw->nsjobs + 1, sizeof(*rw->held));
    rw->nheld = calloc(rw->nsjobs + 1, sizeof(size_t));
    if (!rw->sjobs || !rw->sjob_rw || !rw->specs || !rw->held || !rw->nheld)
        return ERR_NOMEM;
    /* rows for every job read (those with a spec that cannot be read are left out) */
    for (size_t i = 0; i < rw->nsjobs; i++) {
        const struct state_job *sj = &rw->sjob_state[i];
        struct rw_spec spec;
        struct rw_job *j;

        if (rw_spec_parse(sj->spec, &spec) < 0) {
            log_msg(rw->log, now, LOG_ERROR, sj->name, NULL, "the job's spec cannot be read");
            continue;
        }
        if (!(j = rw_job_find(rw, sj->name, 1)))
            return ERR_NOMEM;
        rw_model_update(rw, j, sj, &spec, now);
        rc = state_alloc_get(rw->state, sj->name, &rw->held[n], &rw->nheld[n]);
        if (rc < 0)
            return rc;
        rw->specs[n] = spec;
        rw->sjob_rw[n] = (int)(j - rw->jobs);
        rw->sjobs[n] = (struct snap_job){
            .name = j->name,
            .submit_time = sj->submitted_at,
            .attained_service = j->attained,
            .restarts = sj->restarts,
            .has_model = j->has_model,
            .tput = j->tput,
            .grad = rw_grad(rw, sj, &spec),
            .lim = {.init_bsz = spec.m0,
                    .max_bsz = spec.max_bsz,
                    .max_local = spec.max_local,
                    .accumulation = 1},
            .min_replicas = spec.min_replicas,
            .max_replicas = spec.max_replicas,
            .max_profiled_replicas = j->max_profiled,
            .req_replicas = spec.req_replicas,
            .req_batch = spec.m0,
            .progress = sj->progress,
            .progress_target = spec.samples > 0 ? spec.samples / spec.m0 : 0,
            .checkpoint_s = spec.checkpoint,
            .deadline = isfinite(spec.deadline) ? spec.deadline : 0,
            .weight = spec.weight,
        };
        /* keep the state's row i at row n */
        if (n != i) {
            struct state_job tmp = rw->sjob_state[n];

            rw->sjob_state[n] = rw->sjob_state[i];
            rw->sjob_state[i] = tmp;
            rw->sjobs[n].name = rw->jobs[rw->sjob_rw[n]].name;
        }
        n++;
    }
    rw_jobs_prune(rw, n);
    if ((rc = alloc_new((int)n, rw->snap.nnodes > 0 ? rw->snap.nnodes : 1, gpus > 0 ? gpus : 1,
                        &rw->current)) < 0)
        return rc;
    /* what each job holds on schedulable nodes; a job with a replica elsewhere holds nothing it
     * can keep */
    for (size_t j = 0; j < n; j++)
        for (size_t r = 0; r < rw->nheld[j]; r++) {
            int k = rw_snode(rw, rw->held[j][r].node);

            if (k < 0 || alloc_add(rw->current, (int)j, k, rw->held[j][r].replicas) < 0) {
                alloc_clear_job(rw->current, (int)j);
                break;
            }
        }
    rw->snap.njobs = (int)n;
    rw->snap.jobs = rw->sjobs;
    rw->snap.current = rw->current;
    return 0;
}

static int rw_observe_offers(struct realworld *rw, double now)
{
    if (!(rw->soffers = calloc(rw->noffers + 1, sizeof(*rw->soffers))))
        return ERR_NOMEM;
    for (size_t o = 0; o < rw->noffers; o++) {
        const struct rw_offer *of = &rw->offers[o];
        const struct realworld_offer *meta = rw_meta(rw, of->name);
        double rate = meta && isfinite(meta->preempt_rate) ? meta->preempt_rate
                      : of->spot                           ? 0.05
                                                           : 0.0;

        rw->soffers[o] = (struct snap_offer){
            .name = of->name,
            .gpus = of->gpus > 0 ? of->gpus : 1,
            .spot = of->spot,
            .price = isfinite(of->price) ? of->price : 0,
            .preempt_rate = rate,
            .boot_s = meta && meta->boot_s > 0 ? meta->boot_s : 180,
            .unavailable = !of->present || now < of->unavailable_until,
        };
    }
    rw->snap.noffers = (int)rw->noffers;
    rw->snap.offers = rw->soffers;
    return 0;
}

static int rw_observe(void *ctx, const struct snapshot **out)
{
    struct realworld *rw = ctx;
    double now = rw_now(rw);
    int rc, gpus = 0;

    /* GPU-seconds held since the last look, by what each job held then */
    if (rw->observed && now > rw->last_observe)
        for (int j = 0; j < rw->snap.njobs; j++)
            rw->jobs[rw->sjob_rw[j]].attained += rw->current->count[j] * (now - rw->last_observe);
    rw_snapshot_free(rw);
    memset(&rw->actions, 0, sizeof(rw->actions));
    realworld_reconcile(rw); /* a cloud that cannot list now: the state as it is */
    if (rw_offers_refresh(rw) < 0)
        log_msg(rw->log, now, LOG_WARN, NULL, NULL, "cannot read the offers: prices as before");
    memset(&rw->snap, 0, sizeof(rw->snap));
    if ((rc = rw_intents_read(rw)) < 0 || (rc = rw_observe_nodes(rw, &gpus)) < 0 ||
        (rc = rw_observe_jobs(rw, gpus, now)) < 0 || (rc = rw_observe_offers(rw, now)) < 0) {
        rw_snapshot_free(rw);
        return rc;
    }
    rw->snap.now = now;
    rw->snap.min_billed_s = RW_MIN_BILLED_S;
    rw->last_observe = now;
    rw->observed = 1;
    *out = &rw->snap;
    return 0;
}

/* ---- apply ---- */

static int rw_alloc_cmp(const void *a, const void *b)
{
    return strcmp(((const struct state_alloc *)a)->node, ((const struct state_alloc *)b)->node);
}

/* 1 when two allocations (both sorted by instance id) are the same. */
static int rw_alloc_same(const struct state_alloc *a, size_t na, const struct state_alloc *b,
                         size_t nb)
{
    if (na != nb)
        return 0;
    for (size_t i = 0; i < na; i++)
        if (strcmp(a[i].node, b[i].node) != 0 || a[i].replicas != b[i].replicas)
            return 0;
    return 1;
}

/*
 * The configuration for job j on (nodes, replicas): the goodput-optimal batch from its model, or
 * without one (or where nothing fits its limits) its initial batch split over the replicas, with
 * accumulation where a replica's share is over its limit.
 */
static void rw_config(const struct snap_job *sj, int nodes, int replicas, double *local, int *accum,
                      double *goodput)
{
    struct bsz_choice c;
    double share;
    int s;

    if (sj->has_model && bsz_optimize(&sj->tput, &sj->grad, &sj->lim, nodes, replicas, &c) == 0) {
        *local = c.local_bsz;
        *accum = c.accum_steps;
        *goodput = c.goodput;
        return;
    }
    share = ceil(sj->lim.init_bsz / replicas);
    s = (int)ceil(share / sj->lim.max_local) - 1;
    if (s < 0)
        s = 0;
    *accum = s;
    *local = ceil(share / (s + 1));
    *goodput = sj->has_model
                   ? bsz_goodput(&sj->tput, &sj->grad, sj->lim.init_bsz, nodes, replicas, *local, s)
                   : NAN;
}

/* When job sj is predicted to finish at goodput (samples per second at full efficiency): its work
 * left (iterations at M0 to its target) at that rate from now. NAN without a declared length or a
 * goodput. */
static double rw_eta(const struct snap_job *sj, double goodput, double now)
{
    double left = sj->progress_target - sj->progress;

    if (!(sj->progress_target > 0) || !(goodput > 0) || !isfinite(goodput))
        return NAN;
    return now + (left > 0 ? left : 0) * sj->lim.init_bsz / goodput;
}

/* Tell the log when job's predicted finish crosses its deadline: a warning when it moves after
 * it, once, and a note when it is back before it. */
static void rw_tell_deadline(struct realworld *rw, const struct snap_job *sj, struct rw_job *job,
                             double now)
{
    if (!(sj->deadline > 0) || isnan(job->eta))
        return;
    if (job->eta > sj->deadline && !job->late) {
        job->late = 1;
        log_msg(rw->log, now, LOG_WARN, sj->name, NULL,
                "predicted to finish %.0f s after its deadline at this configuration (in %.0f s; "
                "the deadline is in %.0f s)",
                job->eta - sj->deadline, job->eta - now, sj->deadline - now);
    } else if (job->eta <= sj->deadline && job->late) {
        job->late = 0;
        log_msg(rw->log, now, LOG_INFO, sj->name, NULL,
                "predicted to finish %.0f s before its deadline again (in %.0f s)",
                sj->deadline - job->eta, job->eta - now);
    }
}

/* Write job j's configuration for its new allocation, or a better one for the same (by the
 * hysteresis), and its figures for the metrics: goodput, speedup, batch, predicted finish. */
static void rw_apply_config(struct realworld *rw, int j, int moved, int nodes, int replicas,
                            double now)
{
    const struct snap_job *sj = &rw->sjobs[j];
    const struct state_job *st = &rw->sjob_state[j];
    struct rw_job *job = &rw->jobs[rw->sjob_rw[j]];
    double local = st->local_bsz, goodput, one, l1, g1;
    int accum = st->accum_steps, a1;

    job->goodput = job->speedup = job->batch = job->eta = NAN;
    if (replicas == 0)
        return;
    if (moved || !isfinite(local) || !(local > 0)) {
        rw_config(sj, nodes, replicas, &local, &accum, &goodput);
    } else {
        double cur = sj->has_model ? bsz_goodput(&sj->tput, &sj->grad, sj->lim.init_bsz, nodes,
                                                 replicas, local, accum)
                                   : NAN;

        rw_config(sj, nodes, replicas, &l1, &a1, &goodput);
        if (job->refitted && isfinite(cur) && goodput >= RW_HYSTERESIS * cur) {
            local = l1;
            accum = a1;
        } else {
            goodput = cur;
        }
    }
    if (local != st->local_bsz || accum != st->accum_steps || moved) {
        double batch = local * replicas * (accum + 1);
        double gain = goodput_gain(&sj->grad, batch / sj->lim.init_bsz);

        if (state_job_set_config(rw->state, sj->name, local, accum, gain > 0 ? gain : 1.0) == 0)
            log_msg(rw->log, now, LOG_INFO, sj->name, NULL,
                    "configuration: %d replicas on %d nodes, local batch %.0f, %d accumulation "
                    "steps, learning-rate gain %.3f",
                    replicas, nodes, local, accum, gain > 0 ? gain : 1.0);
    }
    job->batch = local * replicas * (accum + 1);
    job->goodput = goodput;
    rw_config(sj, 1, 1, &l1, &a1, &g1);
    one = g1;
    job->speedup = isfinite(goodput) && isfinite(one) && one > 0 ? goodput / one : NAN;
    job->eta = rw_eta(sj, goodput, now);
    rw_tell_deadline(rw, sj, job, now);
}

static int rw_apply(void *ctx, const struct alloc *plan)
{
    struct realworld *rw = ctx;
    double now = rw_now(rw);

    if (!rw->observed || plan->njobs != rw->snap.njobs || plan->nnodes != rw->current->nnodes)
        return ERR_INVAL;
    for (int j = 0; j < plan->njobs; j++) {
        const struct state_job *st = &rw->sjob_state[j];
        struct state_alloc rows[64];
        int place[64], nodes = 0, replicas = plan->count[j], moved, r;

        if (replicas > 0 && alloc_nodes_used(plan, j) > 64)
            return ERR_RANGE;
        nodes = replicas > 0 ? alloc_placement(plan, j, place) : 0;
        /* the row's runs, node by node, as the state keeps them (by instance id) */
        for (int k = 0, at = 0; k < nodes; k++) {
            int sn = plan->node[(size_t)j * (size_t)plan->width + (size_t)at];

            if (sn < 0 || sn >= rw->snap.nnodes)
                return ERR_INVAL;
            rows[k] = (struct state_alloc){.node = rw->live[rw->snode_live[sn]].instance_id,
                                           .replicas = place[k]};
            at += place[k];
        }
        qsort(rows, (size_t)nodes, sizeof(rows[0]), rw_alloc_cmp);
        moved = !rw_alloc_same(rows, (size_t)nodes, rw->held[j], rw->nheld[j]);
        if (moved) {
            if ((r = state_alloc_replace(rw->state, st->name, rows, (size_t)nodes, now)) < 0) {
                /* this job keeps what it had; the others go on */
                log_msg(rw->log, now, LOG_ERROR, st->name, NULL, "cannot write the allocation: %s",
                        err_str(r));
                continue;
            }
            if (replicas > 0 && (rw->nheld[j] > 0 || st->state == STATE_JOB_RUNNING ||
                                 st->progress > 0 || isfinite(st->checkpoint_at)))
                state_job_restarted(rw->state, st->name);
            state_job_set_state(rw->state, st->name,
                                replicas > 0 ? STATE_JOB_RUNNING : STATE_JOB_PENDING, now);
            log_msg(rw->log, now, LOG_INFO, st->name, NULL, "allocation: %d replicas on %d nodes",
                    replicas, nodes);
        }
        rw_apply_config(rw, j, moved, nodes, replicas, now);
    }
    return 0;
}

/* ---- resize ---- */

static int rw_token_new(struct realworld *rw, char *out, size_t size)
{
    unsigned char raw[8];
    char hex[17];
    int rc = crypto_random(raw, sizeof(raw));

    if (rc < 0)
        return rc;
    crypto_hex(raw, sizeof(raw), hex);
    snprintf(out, size, "%s-%s", rw->cluster, hex);
    return 0;
}

static int rw_resize(void *ctx, const struct fleet_plan *f)
{
    struct realworld *rw = ctx;
    double now = rw_now(rw);
    int rc = 0, r;

    memset(&rw->actions, 0, sizeof(rw->actions));
    if (!rw->observed || f->noffers != rw->snap.noffers || f->nnodes != rw->snap.nnodes ||
        f->nbooting != rw->snap.nbooting)
        return ERR_INVAL;
    for (int k = 0; k < f->nnodes; k++) {
        const struct state_node *n = &rw->live[rw->snode_live[k]];

        if (!f->release[k])
            continue;
        if (!n->launch_token) {
            log_msg(rw->log, now, LOG_INFO, NULL, n->instance_id,
                    "a static node is not released: it was not launched by castor");
            continue;
        }
        if ((r = rw_node_terminate(rw, n->instance_id, rw_node_spot(n), now,
                                   "released by the plan")) < 0)
            rc = rc ? rc : r;
        else
            rw->actions.released++;
    }
    for (int b = 0; b < f->nbooting; b++) {
        if (!f->cancel[b])
            continue;
        if (rw->boot_live[b] >= 0) {
            const struct state_node *n = &rw->live[rw->boot_live[b]];

            r = rw_node_terminate(rw, n->instance_id, rw_node_spot(n), now,
                                  "cancelled by the plan while booting");
        } else {
            /* an intent with no instance yet: given up; an instance of it later is a stray */
            r = state_intent_resolve(rw->state, rw->boot_token[b], STATE_INTENT_FAILED, now);
        }
        if (r < 0)
            rc = rc ? rc : r;
        else
            rw->actions.cancelled++;
    }
    for (int o = 0; o < f->noffers; o++)
        for (int i = 0; i < f->launch[o]; i++) {
            char token[CLOUD_ID_MAX];

            if (now < rw->offers[o].unavailable_until)
                break;
            if ((r = rw_token_new(rw, token, sizeof(token))) < 0 ||
                (r = state_intent_record(rw->state, token, rw->offers[o].name, 1, now)) < 0) {
                rc = rc ? rc : r;
                break;
            }
            /* the intent is committed: a crash from here on is reconciled by its token */
            if ((r = rw_launch_token(rw, o, token, now)) < 0) {
                rw->actions.launch_failed++;
                rc = rc ? rc : r;
                break;
            }
            rw->actions.launched++;
        }
    rw->observed = 0; /* the fleet changed: the next plan needs a new look */
    return rc;
}

/* ---- time ---- */

static double rw_provider_now(void *ctx)
{
    return rw_now(ctx);
}

static int rw_wait(void *ctx, int seconds)
{
    struct realworld *rw = ctx;
    int rc = 0;

    if (isnan(rw->wake_at))
        rw->wake_at = rw_now(rw) + seconds;
    if (rw->sleep)
        rc = rw->sleep(rw->clock_ctx, rw->wake_at);
    if (rc == 0)
        rw->wake_at = NAN;
    return rc;
}

static int rw_finished(void *ctx)
{
    (void)ctx;
    return 0;
}

static const struct provider_ops rw_provider_ops = {
    .name = "real",
    .now = rw_provider_now,
    .wait = rw_wait,
    .observe = rw_observe,
    .apply = rw_apply,
    .resize = rw_resize,
    .finished = rw_finished,
};

void realworld_provider(struct realworld *rw, struct provider *out)
{
    out->ops = &rw_provider_ops;
    out->ctx = rw;
}

/* ---- life ---- */

int realworld_new(const struct realworld_config *cfg, struct realworld **out, struct error *e)
{
    struct realworld *rw;

    if (!cfg || !cfg->state || !cfg->cloud || !cfg->cloud->ops || !cfg->clock || !cfg->cluster ||
        !cfg->cluster[0] || strlen(cfg->cluster) > RW_CLUSTER_MAX || !out)
        return err_set(e, ERR_INVAL, "", 0, 0,
                       "the real world needs a state, a cloud, a clock and a cluster id of 1 to "
                       "%d bytes",
                       RW_CLUSTER_MAX);
    if (!(rw = calloc(1, sizeof(*rw))))
        return err_set(e, ERR_NOMEM, "", 0, 0, "out of memory");
    rw->state = cfg->state;
    rw->cloud = cfg->cloud;
    rw->log = cfg->log;
    snprintf(rw->cluster, sizeof(rw->cluster), "%s", cfg->cluster);
    rw->clock = cfg->clock;
    rw->sleep = cfg->sleep;
    rw->clock_ctx = cfg->clock_ctx;
    rw->model = cfg->model ? cfg->model : &tput_model_castor;
    rw->wake_at = NAN;
    if (realworld_set_options(rw, cfg->launch_timeout, cfg->offers, cfg->noffers) < 0) {
        free(rw);
        return err_set(e, ERR_NOMEM, "", 0, 0, "out of memory");
    }
    *out = rw;
    return 0;
}

int realworld_set_options(struct realworld *rw, double launch_timeout,
                          const struct realworld_offer *offers, size_t noffers)
{
    struct realworld_offer *m = NULL;
    int rc = rw_meta_copy(offers, offers ? noffers : 0, &m);

    if (rc < 0)
        return rc;
    rw_meta_free(rw->meta, rw->nmeta);
    rw->meta = m;
    rw->nmeta = offers ? noffers : 0;
    rw->launch_timeout = launch_timeout > 0 ? launch_timeout : 600;
    return 0;
}

void realworld_free(struct realworld *rw)
{
    if (!rw)
        return;
    rw_snapshot_free(rw);
    state_intents_free(rw->intents, rw->nintents);
    for (size_t i = 0; i < rw->noffers; i++)
        free(rw->offers[i].name);
    free(rw->offers);
    for (size_t i = 0; i < rw->njobs; i++)
        free(rw->jobs[i].name);
    free(rw->jobs);
    free(rw->errors);
    free(rw->call_rows);
    free(rw->error_rows);
    free(rw->job_rows);
    rw_meta_free(rw->meta, rw->nmeta);
    free(rw);
}

int realworld_metrics(struct realworld *rw, struct api_metrics *m)
{
    size_t nj = rw->sjob_rw ? (size_t)rw->snap.njobs : 0;

    free(rw->call_rows);
    free(rw->error_rows);
    free(rw->job_rows);
    rw->call_rows = calloc(RW_NOPS, sizeof(*rw->call_rows));
    rw->error_rows = calloc(rw->nerrors + 1, sizeof(*rw->error_rows));
    rw->job_rows = calloc(nj + 1, sizeof(*rw->job_rows));
    if (!rw->call_rows || !rw->error_rows || !rw->job_rows)
        return ERR_NOMEM;
    for (int op = 0; op < RW_NOPS; op++)
        rw->call_rows[op] =
            (struct api_call_metrics){.op = rw_ops[op], .code = "", .count = rw->calls[op]};
    for (size_t i = 0; i < rw->nerrors; i++)
        rw->error_rows[i] = (struct api_call_metrics){
            .op = rw->errors[i].op, .code = rw->errors[i].code, .count = rw->errors[i].n};
    for (size_t j = 0; j < nj; j++) {
        const struct rw_job *job = &rw->jobs[rw->sjob_rw[j]];

        rw->job_rows[j] = (struct api_job_metrics){
            .job = job->name,
            .goodput = job->goodput,
            .speedup = job->speedup,
            .batch_size = job->batch,
            .eta = job->eta,
            .deadline = rw->sjobs[j].deadline > 0 ? rw->sjobs[j].deadline : NAN};
    }
    m->jobs = rw->job_rows;
    m->njobs = nj;
    m->calls = rw->call_rows;
    m->ncalls = RW_NOPS;
    m->errors = rw->error_rows;
    m->nerrors = rw->nerrors;
    return 0;
}

void realworld_last_actions(const struct realworld *rw, struct realworld_actions *out)
{
    *out = rw->actions;
}
