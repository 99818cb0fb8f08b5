/* realworld_apply.c: the real world's apply (each job's allocation and configuration, with its
 * predicted finish, written to the state) and resize (releases, cancellations, and launches each
 * after its intent is committed). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/events.h"
#include "control/realworld.h"
#include "control/realworld_internal.h"
#include "control/state.h"
#include "model/bsz.h"
#include "model/goodput.h"
#include "util/crypto.h"
#include "util/log.h"

#define RW_HYSTERESIS 1.05 /* a new batch size without a new placement must gain 5% goodput */
/* what a restart into a new configuration costs a job, in seconds (the policies' default restart
 * penalty, the simulator's restart delay) */
#define RW_RESTART_COST_S 30.0

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
        *local = bsz_cap_local(&sj->lim, replicas, c.accum_steps, c.local_bsz);
        *accum = c.accum_steps;
        *goodput = c.goodput;
        return;
    }
    share = ceil(sj->lim.init_bsz / replicas);
    s = (int)ceil(share / sj->lim.max_local) - 1;
    if (s < 0)
        s = 0;
    *accum = s;
    *local = bsz_cap_local(&sj->lim, replicas, s, ceil(share / (s + 1)));
    *goodput = sj->has_model
                   ? bsz_goodput(&sj->tput, &sj->grad, sj->lim.init_bsz, nodes, replicas, *local, s)
                   : NAN;
}

/* The M0-equivalent samples job sj has left to its declared target (NAN: it declared none). */
static double rw_samples_left(const struct snap_job *sj)
{
    if (!(sj->progress_target > 0))
        return NAN;
    return fmax(sj->progress_target - sj->progress, 0) * sj->lim.init_bsz;
}

/* When job sj is predicted to finish at goodput (samples per second at full efficiency): its work
 * left (iterations at M0 to its target) at that rate from now. NAN without a declared length or a
 * goodput. */
static double rw_eta(const struct snap_job *sj, double goodput, double now)
{
    double left = rw_samples_left(sj);

    if (isnan(left) || !(goodput > 0) || !isfinite(goodput))
        return NAN;
    return now + left / goodput;
}

/* Tell the log and the job's events where the job now runs: its replicas node by node, or that it
 * waits for GPUs. */
static void rw_note_placement(struct realworld *rw, const char *job, const struct state_alloc *rows,
                              size_t n, int replicas, double now)
{
    char where[STATE_EVENT_MESSAGE_MAX - 64] = "";
    size_t used = 0;

    if (replicas == 0) {
        event_note(rw->state, rw->log, now, LOG_INFO, job, NULL, "waiting",
                   "no GPUs at this decision: the job waits for its next placement");
        return;
    }
    for (size_t k = 0; k < n && used < sizeof(where); k++)
        used += (size_t)snprintf(where + used, sizeof(where) - used, "%s%s (%d)", k ? ", " : "",
                                 rows[k].node, rows[k].replicas);
    event_note(rw->state, rw->log, now, LOG_INFO, job, NULL, "placed",
               "placed: %d replicas on %zu nodes: %s", replicas, n, where);
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
        event_note(rw->state, rw->log, now, LOG_WARN, sj->name, NULL, "deadline",
                   "predicted to finish %.0f s after its deadline at this configuration (in %.0f "
                   "s; the deadline is in %.0f s)",
                   job->eta - sj->deadline, job->eta - now, sj->deadline - now);
    } else if (job->eta <= sj->deadline && job->late) {
        job->late = 0;
        event_note(rw->state, rw->log, now, LOG_INFO, sj->name, NULL, "deadline",
                   "predicted to finish %.0f s before its deadline again (in %.0f s)",
                   sj->deadline - job->eta, job->eta - now);
    }
}

/* Job j's configuration on nodes x replicas (replicas > 0) into *cfg and its predicted goodput:
 * the best for a new allocation (moved) or one without a configuration yet, else a better one for
 * the same allocation (by the hysteresis, after a refit, and for a job that restarts into it only
 * when it saves more than the restart on the job's declared work left: bsz_change_pays) or the one
 * it has; in_flight: its workers take a new configuration as they run (rw_spec's). 1
 * when *cfg is to be written (moved, or changed), else 0. */
static int rw_apply_choose(struct realworld *rw, int j, int moved, int in_flight, int nodes,
                           int replicas, struct state_job_config *cfg, double *goodput)
{
    const struct snap_job *sj = &rw->sjobs[j];
    const struct state_job *st = &rw->sjob_state[j];
    struct rw_job *job = &rw->jobs[rw->sjob_rw[j]];
    double local = st->local_bsz, l1, gain, now = rw_now(rw);
    int accum = st->accum_steps, a1;

    if (moved || !isfinite(local) || !(local > 0)) {
        rw_config(sj, nodes, replicas, &local, &accum, goodput);
    } else {
        double cur = sj->has_model ? bsz_goodput(&sj->tput, &sj->grad, sj->lim.init_bsz, nodes,
                                                 replicas, local, accum)
                                   : NAN;
        /* the configuration it has was measured, or had its chance to be */
        int settled = job->config_seen || !(now - job->config_at < REALWORLD_CONFIG_SETTLE_S);

        rw_config(sj, nodes, replicas, &l1, &a1, goodput);
        if (job->refitted && settled && isfinite(cur) &&
            bsz_change_pays(cur, *goodput, RW_HYSTERESIS, rw_samples_left(sj),
                            in_flight ? 0 : RW_RESTART_COST_S) &&
            (l1 != local || a1 != accum)) {
            local = l1;
            accum = a1;
            job->config_at = now;
            job->config_seen = 0;
        } else {
            *goodput = cur;
        }
    }
    gain = goodput_gain(&sj->grad, local * replicas * (accum + 1) / sj->lim.init_bsz);
    *cfg = (struct state_job_config){local, accum, gain > 0 ? gain : 1.0};
    return local != st->local_bsz || accum != st->accum_steps || moved;
}

/* Say job's new configuration in the log. */
static void rw_config_told(struct realworld *rw, const char *job, const struct state_job_config *c,
                           int nodes, int replicas, double now)
{
    log_msg(rw->log, now, LOG_INFO, job, NULL,
            "configuration: %d replicas on %d nodes, local batch %.0f, %d accumulation steps, "
            "learning-rate gain %.3f",
            replicas, nodes, c->local_bsz, c->accum_steps, c->lr_gain);
}

/* Job j's figures for the metrics at its configuration c (NULL: no replicas): goodput, speedup,
 * batch, predicted finish; and the deadline told. */
static void rw_apply_figures(struct realworld *rw, int j, int replicas,
                             const struct state_job_config *c, double goodput, double now)
{
    const struct snap_job *sj = &rw->sjobs[j];
    struct rw_job *job = &rw->jobs[rw->sjob_rw[j]];
    double l1, g1;
    int a1;

    job->goodput = job->speedup = job->batch = job->eta = NAN;
    if (!c)
        return;
    job->batch = c->local_bsz * replicas * (c->accum_steps + 1);
    job->goodput = goodput;
    rw_config(sj, 1, 1, &l1, &a1, &g1);
    job->speedup = isfinite(goodput) && isfinite(g1) && g1 > 0 ? goodput / g1 : NAN;
    job->eta = rw_eta(sj, goodput, now);
    rw_tell_deadline(rw, sj, job, now);
}

/* Job j's rows of the plan, node by node as the state keeps them (by instance id, sorted), into
 * *out (the ids borrowed from rw->live; freed by the caller) and their count into *nodes.
 * ERR_NOMEM; ERR_INVAL: a node not in the snapshot. Nothing is written on error. */
static int rw_plan_rows(const struct realworld *rw, const struct alloc *plan, int j,
                        struct state_alloc **out, int *nodes)
{
    int n = plan->count[j] > 0 ? alloc_nodes_used(plan, j) : 0, rc = 0;
    struct state_alloc *rows = calloc((size_t)n + 1, sizeof(*rows));
    int *place = calloc((size_t)n + 1, sizeof(*place));

    if (!rows || !place) {
        rc = ERR_NOMEM;
        goto cleanup;
    }
    if (n > 0)
        n = alloc_placement(plan, j, place);
    for (int k = 0, at = 0; k < n; k++) {
        int sn = plan->node[(size_t)j * (size_t)plan->width + (size_t)at];

        if (sn < 0 || sn >= rw->snap.nnodes) {
            rc = ERR_INVAL;
            goto cleanup;
        }
        rows[k] = (struct state_alloc){.node = rw->live[rw->snode_live[sn]].instance_id,
                                       .replicas = place[k]};
        at += place[k];
    }
    qsort(rows, (size_t)n, sizeof(rows[0]), rw_alloc_cmp);
    *out = rows;
    *nodes = n;
    rows = NULL;
cleanup:
    free(rows);
    free(place);
    return rc;
}

int rw_apply(void *ctx, const struct alloc *plan)
{
    struct realworld *rw = ctx;
    double now = rw_now(rw);
    char why[STATE_EVENT_MESSAGE_MAX - 96] = "";
    int blocked = -1; /* whether the fleet can grow: asked once, for the first job with none */

    if (!rw->observed || plan->njobs != rw->snap.njobs || plan->nnodes != rw->current->nnodes)
        return ERR_INVAL;
    for (int j = 0; j < plan->njobs; j++) {
        const struct state_job *st = &rw->sjob_state[j];
        struct state_alloc *rows = NULL;
        struct state_job_config cfg = {0};
        double goodput = NAN;
        int nodes = 0, replicas = plan->count[j], moved, write, r;
        int in_flight = rw->specs[j].in_flight;

        if ((r = rw_plan_rows(rw, plan, j, &rows, &nodes)) < 0) {
            /* this job keeps what it had; the others go on */
            log_msg(rw->log, now, LOG_ERROR, st->name, NULL,
                    "cannot read the job's placement from the plan: %s", err_str(r));
            continue;
        }
        moved = !rw_alloc_same(rows, (size_t)nodes, rw->held[j], rw->nheld[j]);
        /* the configuration for the new placement is written with it, in one transaction */
        write = replicas > 0 &&
                rw_apply_choose(rw, j, moved, in_flight, nodes, replicas, &cfg, &goodput);
        if (moved) {
            if ((r = state_alloc_replace_config(rw->state, st->name, rows, (size_t)nodes, now,
                                                write ? &cfg : NULL)) < 0) {
                /* this job keeps what it had; the others go on */
                log_msg(rw->log, now, LOG_ERROR, st->name, NULL, "cannot write the allocation: %s",
                        err_str(r));
                free(rows);
                continue;
            }
            if (replicas > 0 && (rw->nheld[j] > 0 || st->state == STATE_JOB_RUNNING ||
                                 st->progress > 0 || isfinite(st->checkpoint_at)))
                state_job_restarted(rw->state, st->name);
            state_job_set_state(rw->state, st->name,
                                replicas > 0 ? STATE_JOB_RUNNING : STATE_JOB_PENDING, now);
            rw_note_placement(rw, st->name, rows, (size_t)nodes, replicas, now);
            if (write)
                rw_config_told(rw, st->name, &cfg, nodes, replicas, now);
        } else {
            /* GPUs it holds: it runs, where the move written after the allocation was not (a
             * daemon killed between the two, a write that failed). (A running job left with
             * none, its node gone, stays running until it is placed again, as before.) */
            if (replicas > 0 && st->state == STATE_JOB_PENDING)
                state_job_set_state(rw->state, st->name, STATE_JOB_RUNNING, now);
            if (write && state_job_set_config(rw->state, st->name, cfg.local_bsz, cfg.accum_steps,
                                              cfg.lr_gain) == 0) {
                rw_config_told(rw, st->name, &cfg, nodes, replicas, now);
                /* its replicas restart into it (a new generation), unless its workers take it
                 * in flight: a restart as a move is, which the policies' restart penalty counts */
                if (!in_flight)
                    state_job_restarted(rw->state, st->name);
            }
        }
        free(rows);
        rw_apply_figures(rw, j, replicas, replicas > 0 ? &cfg : NULL, goodput, now);
        if (replicas == 0 && blocked < 0)
            blocked = rw_fleet_blocked(rw, now, why, sizeof(why));
        rw_tell_blocked(rw, st, &rw->jobs[rw->sjob_rw[j]], replicas, blocked > 0, why, now);
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

int rw_resize(void *ctx, const struct fleet_plan *f)
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
            int room;

            if (now < rw->offers[o].unavailable_until)
                break;
            /* the plan was made within the room of each offer; offers that share a quota share
             * it, so it is asked again before each launch */
            if (rw_offer_room(rw, o, &room) && room <= 0)
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
