/* api_reports.c: the training jobs' endpoints: reports stored by group commit, checkpoints,
 * the end of a job, and its allocation. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/events.h"
#include "control/api_internal.h"
#include "control/state.h"
#include "util/json.h"

#define AP_MAX_CONFIGS 64

/* A report waiting for its group commit. */
struct ap_pending {
    struct state_report_item item;
    int done;
    struct ap_pending *next;
};

/* configs[i] of a report into *out. */
static int ap_report_config(struct ap_ctx *c, const struct jv *v, size_t i,
                            struct state_report_config *out)
{
    static const char *const keys[] = {"nodes",     "replicas", "local_bsz", "accum_steps", "count",
                                       "step_mean", "step_sd",  "sync_mean", NULL};
    long long nodes = 0, replicas = 0, accum = 0, count = 0;
    char where[32];
    int rc;

    snprintf(where, sizeof(where), "configs[%zu].", i);
    if (jv_type_of(v) != JV_OBJECT)
        return ap_bad(c, "configs[%zu] must be an object", i);
    memset(out, 0, sizeof(*out));
    rc = ap_keys(c, v, where, keys);
    if (rc == 0)
        rc = ap_int(c, v, where, "nodes", 1, 1, 100000, &nodes);
    if (rc == 0)
        rc = ap_int(c, v, where, "replicas", 1, 1, 1000000, &replicas);
    if (rc == 0 && replicas < nodes)
        rc = ap_bad(c, "%sreplicas (%lld) must be at least nodes (%lld)", where, replicas, nodes);
    if (rc == 0)
        rc = ap_num(c, v, where, "local_bsz", 1, 0.0, 0, &out->local_bsz);
    if (rc == 0)
        rc = ap_int(c, v, where, "accum_steps", 1, 0, 1000000, &accum);
    if (rc == 0)
        rc = ap_int(c, v, where, "count", 1, 1, 1000000000000LL, &count);
    if (rc == 0)
        rc = ap_num(c, v, where, "step_mean", 1, 0.0, 0, &out->step_mean);
    if (rc == 0)
        rc = ap_num(c, v, where, "step_sd", 1, 0.0, 1, &out->step_sd);
    if (rc == 0)
        rc = ap_num(c, v, where, "sync_mean", 0, 0.0, 1, &out->sync_mean);
    if (rc == 0 && out->sync_mean >= out->step_mean)
        rc = ap_bad(c, "%ssync_mean must be below step_mean", where);
    out->nodes = (int)nodes;
    out->replicas = (int)replicas;
    out->accum_steps = (int)accum;
    out->count = count;
    return rc;
}

/* Commit the batch taken from the queue: one transaction for all (copies of the items, so that
 * they lie side by side), or one by one when there is no memory for the copy. */
static void ap_commit_batch(struct api *a, struct ap_pending *batch, double now)
{
    struct state_report_item *items;
    struct ap_pending *p;
    size_t n = 0, i = 0;

    for (p = batch; p; p = p->next)
        n++;
    items = calloc(n, sizeof(*items));
    pthread_mutex_lock(&a->mu);
    if (items) {
        for (p = batch; p; p = p->next)
            items[i++] = p->item;
        state_report_store_many(a->state, items, n, now);
        for (p = batch, i = 0; p; p = p->next)
            p->item.rc = items[i++].rc;
    } else {
        for (p = batch; p; p = p->next)
            p->item.rc = state_report_store(a->state, p->item.job, &p->item.report, now);
    }
    a->batches++;
    a->batched += (long long)n;
    pthread_mutex_unlock(&a->mu);
    free(items);
}

/*
 * Store a checked report by group commit: queue it; whoever finds no commit running takes the
 * whole queue and commits it in one transaction, and every request of that batch is answered
 * once it is durable. Returns the report's own outcome (as state_report_store).
 */
static int ap_report_commit(struct api *a, const char *job, const struct state_report *r,
                            double now)
{
    struct ap_pending self = {{job, *r, 0}, 0, NULL}, *batch;

    pthread_mutex_lock(&a->qmu);
    *a->qtail = &self;
    a->qtail = &self.next;
    while (!self.done) {
        if (a->committing) {
            pthread_cond_wait(&a->qcv, &a->qmu);
            continue;
        }
        batch = a->queue;
        a->queue = NULL;
        a->qtail = &a->queue;
        a->committing = 1;
        pthread_mutex_unlock(&a->qmu);
        ap_commit_batch(a, batch, now);
        pthread_mutex_lock(&a->qmu);
        for (struct ap_pending *p = batch, *next; p; p = next) {
            next = p->next; /* p may go (its request returns) once done is seen */
            p->done = 1;
        }
        a->committing = 0;
        pthread_cond_broadcast(&a->qcv);
    }
    pthread_mutex_unlock(&a->qmu);
    return self.item.rc;
}

void ap_job_report(struct ap_ctx *c)
{
    static const char *const keys[] = {"configs", "grad", "progress", "sync_prior", NULL};
    static const char *const grad_keys[] = {"sqr", "var", NULL};
    struct state_report_config cfgs[AP_MAX_CONFIGS];
    struct state_report r = {cfgs, 0, NAN, NAN, NAN, 0.0};
    const struct jv *configs, *grad;
    int rc = ap_parse_body(c, 0);

    if (rc == 0)
        rc = ap_keys(c, c->body, "", keys);
    configs = jv_get(c->body, "configs");
    if (rc == 0 && (jv_type_of(configs) != JV_ARRAY || jv_size(configs) > AP_MAX_CONFIGS))
        rc = ap_bad(c, "configs must be an array of at most %d configurations", AP_MAX_CONFIGS);
    for (size_t i = 0; rc == 0 && i < jv_size(configs); i++)
        rc = ap_report_config(c, jv_at(configs, i), i, &cfgs[r.nconfigs++]);
    grad = jv_get(c->body, "grad");
    if (rc == 0 && grad) {
        if (jv_type_of(grad) != JV_OBJECT)
            rc = ap_bad(c, "grad must be an object {\"sqr\", \"var\"}");
        if (rc == 0)
            rc = ap_keys(c, grad, "grad.", grad_keys);
        if (rc == 0)
            rc = ap_num(c, grad, "grad.", "sqr", 1, 0.0, 1, &r.grad_sqr);
        if (rc == 0)
            rc = ap_num(c, grad, "grad.", "var", 1, 0.0, 1, &r.grad_var);
    }
    if (rc == 0)
        rc = ap_num(c, c->body, "", "progress", 0, 0.0, 1, &r.progress);
    if (rc == 0)
        rc = ap_num(c, c->body, "", "sync_prior", 0, 0.0, 0, &r.sync_prior);
    if (rc < 0) {
        ap_fail(c, 400, "%s", c->reason);
        return;
    }
    rc = ap_report_commit(c->a, c->param, &r, c->now);
    if (rc == ERR_CONFLICT) {
        ap_fail(c, 409, "job %s has ended", c->param);
    } else if (rc < 0) {
        ap_state_fail(c, rc, "such job");
    } else {
        struct jv *o = jv_object();

        ap_set(c, o, "job", jv_string(c->param));
        ap_set(c, o, "configs", jv_integer((long long)r.nconfigs));
        ap_reply(c, 200, o);
    }
}

/* {"job", "state", "progress", "checkpoint_progress"} of the job now, as a 200 answer. */
static void ap_job_progress_reply(struct ap_ctx *c)
{
    struct state_job j;
    struct jv *o;
    int rc = state_job_get(c->a->state, c->param, &j);

    if (rc < 0) {
        ap_state_fail(c, rc, "such job");
        return;
    }
    o = jv_object();
    ap_set(c, o, "job", jv_string(j.name));
    ap_set(c, o, "state", jv_string(state_job_state_name(j.state)));
    ap_set(c, o, "progress", jv_number(j.progress));
    ap_set(c, o, "checkpoint_progress", jv_number(j.checkpoint_progress));
    state_job_clear(&j);
    ap_reply(c, 200, o);
}

void ap_job_checkpoint(struct ap_ctx *c)
{
    static const char *const keys[] = {"progress", NULL};
    double progress = NAN;
    int rc = ap_parse_body(c, 0);

    if (rc == 0)
        rc = ap_keys(c, c->body, "", keys);
    if (rc == 0)
        rc = ap_num(c, c->body, "", "progress", 1, 0.0, 1, &progress);
    if (rc < 0) {
        ap_fail(c, 400, "%s", c->reason);
        return;
    }
    /* refused for a job that has ended, in the same transaction as the write */
    rc = state_job_checkpoint(c->a->state, c->param, progress, c->now);
    if (rc == ERR_CONFLICT)
        ap_fail(c, 409, "job %s has ended", c->param);
    else if (rc < 0)
        ap_state_fail(c, rc, "such job");
    else
        ap_job_progress_reply(c);
}

void ap_job_finished(struct ap_ctx *c)
{
    static const char *const keys[] = {"progress", NULL};
    double progress = NAN;
    int rc = ap_parse_body(c, 1), was;

    if (rc == 0)
        rc = ap_keys(c, c->body, "", keys);
    if (rc == 0)
        rc = ap_num(c, c->body, "", "progress", 0, 0.0, 1, &progress);
    if (rc < 0) {
        ap_fail(c, 400, "%s", c->reason);
        return;
    }
    was = ap_job_state(c, c->param);
    rc = state_job_finish(c->a->state, c->param, progress, c->now);
    if (rc == 0 && was != STATE_JOB_FINISHED) /* (a retried call tells nothing new) */
        event_note(c->a->state, c->a->log, c->now, LOG_INFO, c->param, NULL, "finished",
                   "finished: the job said its work is done");
    if (rc == ERR_CONFLICT)
        ap_fail(c, 409, "job %s was cancelled or failed", c->param);
    else if (rc < 0)
        ap_state_fail(c, rc, "such job");
    else
        ap_job_progress_reply(c);
}

struct jv *ap_allocation(struct ap_ctx *c, const char *job, long long *world, int *rc)
{
    struct state_alloc *rows = NULL;
    struct jv *arr;
    size_t n = 0;

    *rc = state_alloc_get(c->a->state, job, &rows, &n);
    if (*rc < 0)
        return NULL;
    arr = jv_array();
    *world = 0;
    for (size_t i = 0; i < n; i++) {
        struct jv *o = jv_object();

        ap_set(c, o, "instance_id", jv_string(rows[i].node));
        ap_set(c, o, "replicas", jv_integer(rows[i].replicas));
        ap_set(c, o, "since", jv_number(rows[i].since));
        ap_push(c, arr, o);
        *world += rows[i].replicas;
    }
    state_allocs_free(rows, n);
    return arr;
}

void ap_job_allocation(struct ap_ctx *c)
{
    long long world = 0;
    struct state_job j;
    struct jv *o, *nodes;
    int rc = state_job_get(c->a->state, c->param, &j);

    if (rc < 0) {
        ap_state_fail(c, rc, "such job");
        return;
    }
    nodes = ap_allocation(c, c->param, &world, &rc);
    if (rc < 0) {
        state_job_clear(&j);
        ap_state_fail(c, rc, "such job");
        return;
    }
    o = jv_object();
    ap_set(c, o, "job", jv_string(j.name));
    ap_set(c, o, "state", jv_string(state_job_state_name(j.state)));
    ap_set(c, o, "world_size", jv_integer(world));
    ap_set(c, o, "nodes", nodes);
    ap_set_config(c, o, &j);
    state_job_clear(&j);
    ap_reply(c, 200, o);
}
