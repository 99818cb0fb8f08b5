/* realworld_observe.c: the real world's observe: reconciliation, then the snapshot from the
 * offers, the state's nodes (schedulable once registered), booting nodes and intents, and the jobs
 * with their specs, models and what they hold. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "control/realworld.h"
#include "control/realworld_internal.h"
#include "control/state.h"
#include "util/log.h"

#define RW_MIN_BILLED_S 60.0 /* a node is billed for at least this long */

/* ---- observe ---- */

void rw_snapshot_free(struct realworld *rw)
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

/* A silent static node whose agent fences itself may have its jobs moved this long after its
 * fence_s (its heartbeats every 5 s, and the two clocks' loops). */
#define RW_SELF_FENCE_MARGIN_S 10.0

/* 1 when the silent static node's replicas may still run: its agent does not fence itself, or
 * its fence (plus a margin) has not passed since it was last heard. */
static int rw_unfenced(const struct realworld *rw, const struct state_node *n, double now)
{
    return !(n->fence_s > 0) || now - rw_node_heard(rw, n) <= n->fence_s + RW_SELF_FENCE_MARGIN_S;
}

/* A silent static node told: its jobs wait (unfenced), or move (its self-fence has passed). */
static void rw_tell_static_silence(struct realworld *rw, const struct state_node *n, int unfenced,
                                   double now)
{
    const char *id = n->instance_id;

    if (unfenced && !(n->fence_s > 0)) {
        log_msg(rw->log, now, LOG_ERROR, NULL, id,
                "its agent has not been heard from for over %.0f s, and castor cannot stop the "
                "replicas of a node it did not launch: its jobs wait until the node is heard "
                "again, or until `castor down %s` says it is off (set CASTOR_NODE_FENCE_S below "
                "%.0f s on its castor-node to have its jobs move on their own)",
                rw->heartbeat_timeout, id, rw->heartbeat_timeout);
        rw_note_node_jobs(rw, id, now, "waiting",
                          "the job's node is silent and castor cannot stop its replicas there",
                          "it waits until the node is heard again or taken down (castor down)");
    } else if (unfenced) {
        log_msg(rw->log, now, LOG_WARN, NULL, id,
                "its agent has not been heard from for over %.0f s: its jobs wait until its "
                "self-fence (%.0f s) has stopped their replicas",
                rw->heartbeat_timeout, n->fence_s);
    } else {
        log_msg(rw->log, now, LOG_WARN, NULL, id,
                "its agent has not been heard from for over %.0f s and has stopped its replicas "
                "itself by now (its self-fence, %.0f s): its jobs move",
                now - rw_node_heard(rw, n), n->fence_s);
        rw_note_node_jobs(rw, id, now, "node-lost",
                          "the job's node is silent, and its agent stopped the job's replicas "
                          "(its self-fence)",
                          RW_RESTARTS);
    }
}

/* The live nodes left out for their silence, as rw->silent, and the static ones among them whose
 * replicas may still run, as rw->unfenced (observe keeps their jobs where they are): each newly
 * silent one is told, each static one whose self-fence passes, and each heard again. Out of
 * memory: the old lists stay (the logs may repeat). */
static void rw_silent_update(struct realworld *rw, double now)
{
    char **now_silent = calloc(rw->nlive + 1, sizeof(char *));
    char **now_unfenced = calloc(rw->nlive + 1, sizeof(char *));
    size_t k = 0, u = 0;

    if (!now_silent || !now_unfenced)
        goto fail;
    for (size_t i = 0; i < rw->nlive; i++) {
        const struct state_node *n = &rw->live[i];
        int was = rw_listed(rw->silent, n->instance_id), unfenced;

        if (!rw_node_silent(rw, n, now))
            continue;
        if (!(now_silent[k] = strdup(n->instance_id)))
            goto fail;
        k++;
        if (n->launch_token) {
            if (!was)
                log_msg(rw->log, now, LOG_WARN, NULL, n->instance_id,
                        "its agent has not been heard from for over %.0f s: no job is placed on "
                        "it until it is",
                        rw->heartbeat_timeout);
            continue;
        }
        unfenced = rw_unfenced(rw, n, now);
        if (unfenced && !(now_unfenced[u++] = strdup(n->instance_id)))
            goto fail;
        if (!was || unfenced != rw_listed(rw->unfenced, n->instance_id))
            rw_tell_static_silence(rw, n, unfenced, now);
    }
    for (size_t i = 0; rw->silent && rw->silent[i]; i++)
        if (!rw_listed(now_silent, rw->silent[i]))
            log_msg(rw->log, now, LOG_INFO, NULL, rw->silent[i],
                    "its agent is heard from again: schedulable");
    rw_strv_free(rw->silent);
    rw_strv_free(rw->unfenced);
    rw->silent = now_silent;
    rw->unfenced = now_unfenced;
    return;
fail:
    rw_strv_free(now_silent);
    rw_strv_free(now_unfenced);
}

/* The nodes: ready ones are schedulable; launching and booting ones, and the pending intents
 * without a node, are booting. */
static int rw_observe_nodes(struct realworld *rw, int *gpus, double now)
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
    rw_silent_update(rw, now);
    for (size_t i = 0; i < rw->nlive; i++) {
        const struct state_node *n = &rw->live[i];
        int o = rw_offer_find(rw, n->offer);

        if (n->state == STATE_NODE_READY && n->gpus > 0 && !rw_node_silent(rw, n, now)) {
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

int rw_rows_fenced(const struct realworld *rw, const struct state_alloc *rows, size_t n)
{
    for (size_t i = 0; n > 0 && i < rw->nlive; i++) {
        if (!rw_node_fenced(rw, &rw->live[i]) && !rw_listed(rw->unfenced, rw->live[i].instance_id))
            continue;
        for (size_t r = 0; r < n; r++)
            if (strcmp(rw->live[i].instance_id, rows[r].node) == 0)
                return 1;
    }
    return 0;
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
        rc = state_alloc_get(rw->state, sj->name, &rw->held[n], &rw->nheld[n]);
        if (rc < 0)
            return rc;
        if (rw_rows_fenced(rw, rw->held[n], rw->nheld[n])) {
            /* its replicas there may still run: it is placed again once the node is gone */
            state_allocs_free(rw->held[n], rw->nheld[n]);
            rw->held[n] = NULL;
            rw->nheld[n] = 0;
            continue;
        }
        if (!(j = rw_job_find(rw, sj->name, 1)))
            return ERR_NOMEM;
        rw_model_update(rw, j, sj, &spec, now);
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

/* Tell the log once when an offer's price becomes unknown (castor's planner then does not launch
 * it: it would weigh it as free) and when it is known again; and when a spot price rises above
 * the offer's max_price (no launch is asked there: the cloud would refuse it) and falls back. */
static void rw_prices_tell(struct realworld *rw, double now)
{
    for (size_t o = 0; o < rw->noffers; o++) {
        struct rw_offer *of = &rw->offers[o];
        int unpriced = of->present && !isfinite(of->price);
        /* a read without its price leaves it as it was */
        int over = of->present && of->spot && of->max_price > 0 &&
                   (isfinite(of->list_price) ? of->list_price > of->max_price : of->over_max);

        if (over && !of->over_max)
            log_msg(rw->log, now, LOG_WARN, NULL, NULL,
                    "%s: its spot price $%.4f/h is above its max_price $%.4f/h: nothing is "
                    "launched there until it falls below",
                    of->name, of->list_price, of->max_price);
        else if (!over && of->over_max && of->present)
            log_msg(rw->log, now, LOG_INFO, NULL, NULL,
                    "%s: its spot price $%.4f/h is below its max_price again", of->name,
                    of->list_price);
        of->over_max = over;

        if (unpriced && !of->unpriced && rw_spend_uncounted(rw, of))
            log_msg(rw->log, now, LOG_WARN, NULL, NULL,
                    "%s has no known price: no fleet launches it while the spend_limit is set "
                    "(the limit could not count its nodes), and its nodes count $0 in job costs, "
                    "until the cloud prices it (a price table), or the configuration does "
                    "(offers: price)",
                    of->name);
        else if (unpriced && !of->unpriced)
            log_msg(rw->log, now, LOG_WARN, NULL, NULL,
                    "%s has no known price: castor's planner does not launch it, and its nodes "
                    "count %s in job costs and the spend limit until the cloud prices it (a price "
                    "table), or the configuration does (offers: price)",
                    of->name, of->spot && of->max_price > 0 ? "their max_price" : "$0");
        else if (!unpriced && of->unpriced && of->present)
            log_msg(rw->log, now, LOG_INFO, NULL, NULL, "%s is priced again: $%.4f/h", of->name,
                    of->price);
        of->unpriced = unpriced;
    }
}

/* The preemption rate the planner counts on for offer of (what the configuration says of it:
 * meta, or NULL): its prior (meta's preemption_rate, else 0.05 on spot and 0 on-demand), worth
 * RW_RATE_PRIOR_H node-hours, updated with what castor's own nodes there went through in the last
 * RW_RATE_WINDOW_S (notices per node-hour), as the simulated world learns it. */
static double rw_offer_rate(const struct rw_offer *of, const struct realworld_offer *meta,
                            const struct state_offer_record *rec, size_t nrec)
{
    double prior = meta && isfinite(meta->preempt_rate) ? meta->preempt_rate
                   : of->spot                           ? 0.05
                                                        : 0.0;

    for (size_t i = 0; i < nrec; i++)
        if (strcmp(rec[i].offer, of->name) == 0)
            return (prior * RW_RATE_PRIOR_H + (double)rec[i].preemptions) /
                   (RW_RATE_PRIOR_H + rec[i].hours);
    return prior;
}

static int rw_observe_offers(struct realworld *rw, double now)
{
    struct state_offer_record *rec = NULL;
    size_t nrec = 0;

    rw_quotas_tell(rw, now);
    rw_prices_tell(rw, now);
    if (state_offer_records(rw->state, now - RW_RATE_WINDOW_S, now, &rec, &nrec) < 0)
        nrec = 0; /* the priors alone this tick */
    if (!(rw->soffers = calloc(rw->noffers + 1, sizeof(*rw->soffers)))) {
        state_offer_records_free(rec, nrec);
        return ERR_NOMEM;
    }
    for (size_t o = 0; o < rw->noffers; o++) {
        struct rw_offer *of = &rw->offers[o];
        const struct realworld_offer *meta = rw_meta(rw, of->name);
        double rate = of->rate = rw_offer_rate(of, meta, rec, nrec);

        int room = 0, capped = rw_offer_room(rw, (int)o, &room);

        rw->soffers[o] = (struct snap_offer){
            .name = of->name,
            .gpus = of->gpus > 0 ? of->gpus : 1,
            .spot = of->spot,
            .price = of->price, /* NAN: unknown, and castor's planner does not launch there */
            .preempt_rate = rate,
            .boot_s = meta && meta->boot_s > 0 ? meta->boot_s : 180,
            .unavailable = !of->present || now < of->unavailable_until || rw->over_spend ||
                           of->over_max || rw_spend_uncounted(rw, of),
            .capped = capped,
            .room = room,
        };
    }
    state_offer_records_free(rec, nrec);
    /* nodes castor launched that are alive but not among the snapshot's (draining after a notice
     * or on their way out, or silent and being fenced): they count against max_nodes, as the
     * simulated world's noticed nodes do (snode_live lists the snapshot's in rw->live's order) */
    for (size_t i = 0, k = 0; i < rw->nlive; i++) {
        const struct state_node *n = &rw->live[i];
        int listed = k < (size_t)rw->snap.nnodes && rw->snode_live[k] == (int)i;
        int o = n->launch_token ? rw_offer_find(rw, n->offer) : -1;

        k += listed;
        if (o >= 0 &&
            (n->state == STATE_NODE_DRAINING || (n->state == STATE_NODE_READY && !listed)))
            rw->soffers[o].noticed++;
    }
    rw->snap.noffers = (int)rw->noffers;
    rw->snap.offers = rw->soffers;
    return 0;
}

int rw_observe(void *ctx, const struct snapshot **out)
{
    struct realworld *rw = ctx;
    double now = rw_now(rw);
    int rc, gpus = 0, priced;

    /* GPU-seconds held since the last look, by what each job held then (the last look's rows
     * stand until the next: a tick that changed the fleet counts too) */
    if (rw->current && now > rw->last_observe)
        for (int j = 0; j < rw->snap.njobs; j++)
            rw->jobs[rw->sjob_rw[j]].attained += rw->current->count[j] * (now - rw->last_observe);
    rw_snapshot_free(rw);
    memset(&rw->actions, 0, sizeof(rw->actions));
    rw_pause_check(rw, now); /* before the watches look at the nodes' silence */
    /* a cloud that cannot list now: the state as it is; over the spend limit: no launch, the
     * instances terminated */
    realworld_reconcile(rw);
    if (!(priced = rw_offers_refresh(rw) == 0))
        log_msg(rw->log, now, LOG_WARN, NULL, NULL, "cannot read the offers: prices as before");
    rw_quotas_refresh(rw, now); /* after the offers: the quotas name them */
    memset(&rw->snap, 0, sizeof(rw->snap));
    rw_watch_start(rw, now);
    if ((rc = rw_intents_read(rw)) == 0 && (rc = rw_observe_nodes(rw, &gpus, now)) == 0) {
        if (priced) /* the live nodes just read are billed at the prices of now */
            rw_node_prices(rw, rw->live, rw->nlive, now);
        rw_watch_jobs(rw, now); /* after the nodes' silence, before the jobs are read: a job it
                                 * fails is not planned for */
    }
    if (rc < 0 || (rc = rw_observe_jobs(rw, gpus, now)) < 0 ||
        (rc = rw_observe_offers(rw, now)) < 0) {
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
