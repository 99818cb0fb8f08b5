/* realworld_jobs.c: the real world's jobs: their specs as the decide step needs them, what is
 * kept of each between ticks, and their throughput models (restored from the state, refitted when
 * reports arrive, on the measurements of the job's family too, and stored) and gradient
 * statistics (the family's start before the job's own); the hang watch. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/events.h"
#include "control/realworld.h"
#include "control/realworld_internal.h"
#include "control/state.h"
#include "model/fit.h"
#include "model/goodput.h"
#include "model/profile.h"
#include "util/json.h"
#include "util/log.h"

/* ---- jobs: specs and models ---- */

static double rw_num(const struct jv *o, const char *key, double dflt)
{
    double v;

    return jv_number_value(jv_get(o, key), &v) == 0 ? v : dflt;
}

int rw_spec_parse(const char *text, struct rw_spec *out)
{
    struct jv *v = NULL;
    const char *family, *reconf;

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
    /* specs stored before the fields: the defaults */
    out->hang_timeout = rw_num(v, "hang_timeout", API_HANG_TIMEOUT_DEFAULT);
    out->max_restarts = (int)rw_num(v, "max_restarts", API_MAX_RESTARTS_DEFAULT);
    out->max_dollars = rw_num(v, "max_dollars", NAN);   /* absent or null: no limit */
    reconf = jv_string_value(jv_get(v, "reconfigure")); /* absent: restart */
    out->in_flight = reconf && strcmp(reconf, API_RECONFIGURE_IN_FLIGHT) == 0;
    jv_free(v);
    return out->m0 > 0 && out->max_local > 0 ? 0 : ERR_CORRUPT;
}

struct rw_job *rw_job_find(struct realworld *rw, const char *name, int create)
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
    grown[rw->njobs].eta = grown[rw->njobs].wait_told = grown[rw->njobs].config_at = NAN;
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

void rw_model_update(struct realworld *rw, struct rw_job *j, const struct state_job *sj,
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
    for (size_t i = 0; i < n; i++) {
        rw_profile_add(&prof, &rows[i]);
        /* measured since the change (an older row is of the last time it had it) */
        j->config_seen |= rows[i].local_bsz == sj->local_bsz &&
                          rows[i].accum_steps == sj->accum_steps && !(rows[i].at < j->config_at);
    }
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

struct grad_params rw_grad(struct realworld *rw, const struct state_job *sj,
                           const struct rw_spec *spec)
{
    struct grad_params g = GRAD_PARAMS_NONE;

    if (isfinite(sj->grad_sqr) && isfinite(sj->grad_var))
        return (struct grad_params){.sqr = sj->grad_sqr, .var = sj->grad_var};
    if (spec->family[0]) /* g is written only when the family has a start */
        (void)state_family_start_grad(rw->state, spec->family, spec->m0, &g.sqr, &g.var);
    return g;
}

/* ---- the hang watch ---- */

/* When the job (its allocation's na rows) last showed life, as far as this world can tell: its
 * last step report, its placement, its last failure (its replicas restarted then) and the world's
 * first observe, the latest of them; NAN when it never reported a step or holds no allocation. */
static double rw_last_life(struct realworld *rw, const struct state_job *sj,
                           const struct state_alloc *rows, size_t na, char *node, size_t size)
{
    struct state_report_config *cfg = NULL;
    size_t nc = 0;
    double last = -INFINITY;

    if (state_report_configs(rw->state, sj->name, &cfg, &nc) < 0)
        return NAN;
    for (size_t k = 0; k < nc; k++)
        last = fmax(last, cfg[k].at);
    free(cfg);
    if (nc == 0)
        return NAN;
    for (size_t k = 0; k < na; k++)
        last = fmax(last, rows[k].since);
    if (na > 0)
        snprintf(node, size, "%s", rows[0].node);
    if (isfinite(sj->failure_at))
        last = fmax(last, sj->failure_at);
    return na > 0 ? fmax(last, rw->watch_from) : NAN;
}

void rw_watch_start(struct realworld *rw, double now)
{
    if (isnan(rw->watch_from))
        rw->watch_from = now;
}

/* 1 when the job (its allocation's n rows) has replicas on a node whose agent is silent (its
 * silence is the node's, not the job's: the fence, or the operator, settles it). */
static int rw_on_silent_node(const struct realworld *rw, const struct state_alloc *rows, size_t n)
{
    int on = 0;

    for (size_t r = 0; r < n && !on; r++)
        on = rw_listed(rw->silent, rows[r].node);
    return on || rw_rows_fenced(rw, rows, n);
}

/* 1 when the job's new replicas wait for its old ones that other nodes say are alive (an earlier
 * generation: docs/api.md), which they are the nodes' to stop, not the job's; told as a `waiting`
 * event once per placement when the wait has lasted RW_WAIT_TELL_S (a checkpoint being written
 * takes seconds; one that never ends needs its node settled). The job's allocation is its n rows.
 * On a state error 1 too (seen again next tick). */
static int rw_waits_for_old_replicas(struct realworld *rw, const struct state_job *job,
                                     const struct state_alloc *rows, size_t n, double now)
{
    char gen[API_GENERATION_LEN + 1], **stale = NULL;
    size_t ns = 0;
    double since = n > 0 ? rows[0].since : NAN;
    struct rw_job *j;

    if (n == 0)
        return 0;
    if (api_job_generation(job, since, gen) < 0 ||
        state_job_stale_nodes(rw->state, job->name, gen, NULL, now, &stale, &ns) < 0)
        return 1;
    if (ns > 0 && now - since >= RW_WAIT_TELL_S && (j = rw_job_find(rw, job->name, 1)) &&
        !(j->wait_told == since)) {
        j->wait_told = since;
        event_note(rw->state, rw->log, now, LOG_WARN, job->name, stale[0], "waiting",
                   "its replicas start once its old ones on %s%s have stopped (they may still be "
                   "writing its checkpoint); an old replica that never stops is its node's to "
                   "settle: castor down, or terminate it",
                   stale[0], ns > 1 ? " and others" : "");
    }
    state_strv_free(stale, ns);
    return ns > 0;
}

/* The hang watch for one running job (its spec parsed, its allocation's na rows, whether it
 * waits for old replicas): 1 when it failed the job. */
static int rw_watch_hang(struct realworld *rw, const struct state_job *job,
                         const struct rw_spec *spec, const struct state_alloc *rows, size_t na,
                         int waiting, double now)
{
    enum state_failure_outcome out = STATE_FAILURE_STALE;
    char node[STATE_NAME_MAX + 1] = "", reason[STATE_FAILURE_MAX];
    double life;
    int streak = 0, rc;

    if (!(spec->hang_timeout > 0))
        return 0;
    life = rw_last_life(rw, job, rows, na, node, sizeof(node));
    if (!(now - life > spec->hang_timeout) || rw_on_silent_node(rw, rows, na) || waiting)
        return 0;
    snprintf(reason, sizeof(reason),
             "no training step reported for %.0f s (hang_timeout %.0f s): taken as hung",
             now - life, spec->hang_timeout);
    rc = state_job_replica_failed(rw->state, job->name, node, job->failures, reason,
                                  spec->max_restarts, now, &out, &streak);
    if (rc < 0) {
        log_msg(rw->log, now, LOG_WARN, job->name, NULL,
                "%s; not counted (%s): tried again next tick", reason, err_str(rc));
        return 0;
    }
    api_note_failure(rw->state, rw->log, now, job->name, NULL, reason, out, streak,
                     job->failures + 1, spec->max_restarts);
    return out == STATE_FAILURE_FAILED;
}

/* The cost watch for one pending or running job (its spec parsed). */
static void rw_watch_cost(struct realworld *rw, const struct state_job *job,
                          const struct rw_spec *spec, double now)
{
    char reason[STATE_FAILURE_MAX];
    struct rw_job *j;
    int rc;

    if (!(spec->max_dollars > 0))
        return;
    if (job->dollars >= spec->max_dollars) {
        snprintf(reason, sizeof(reason),
                 "it cost $%.2f, which reaches its max_dollars ($%.2f): stopped, its last "
                 "checkpoint kept",
                 job->dollars, spec->max_dollars);
        if ((rc = state_job_fail(rw->state, job->name, reason, now)) == 0)
            event_note(rw->state, rw->log, now, LOG_ERROR, job->name, NULL, "failed", "%s", reason);
        else
            log_msg(rw->log, now, LOG_WARN, job->name, NULL,
                    "%s; not failed (%s): tried again next tick", reason, err_str(rc));
    } else if (job->dollars >= RW_COST_WARN * spec->max_dollars &&
               (j = rw_job_find(rw, job->name, 1)) && !j->cost_warned) {
        j->cost_warned = 1;
        event_note(rw->state, rw->log, now, LOG_WARN, job->name, NULL, "warning",
                   "it cost $%.2f, %.0f%% of its max_dollars ($%.2f): it is stopped there",
                   job->dollars, 100 * job->dollars / spec->max_dollars, spec->max_dollars);
    }
}

void rw_watch_jobs(struct realworld *rw, double now)
{
    struct state_job *jobs = NULL;
    size_t n = 0;

    if (state_jobs_list(rw->state, STATE_MASK(STATE_JOB_PENDING) | STATE_MASK(STATE_JOB_RUNNING),
                        &jobs, &n) < 0)
        return;
    rw->jobs_waiting = 0;
    for (size_t i = 0; i < n; i++) {
        struct state_alloc *rows = NULL;
        size_t na = 0;
        /* a running job's allocation, read once for the watches (one that cannot be read is
         * counted as waiting and watched for hangs next tick) */
        int running = jobs[i].state == STATE_JOB_RUNNING,
            read = running && state_alloc_get(rw->state, jobs[i].name, &rows, &na) == 0,
            waiting = running && (!read || rw_waits_for_old_replicas(rw, &jobs[i], rows, na, now)),
            failed = 0;
        struct rw_spec spec;

        rw->jobs_waiting += waiting;
        if (rw_spec_parse(jobs[i].spec, &spec) == 0) {
            failed = read && rw_watch_hang(rw, &jobs[i], &spec, rows, na, waiting, now);
            if (!failed) /* (a failed job has nothing left to watch) */
                rw_watch_cost(rw, &jobs[i], &spec, now);
        }
        state_allocs_free(rows, na);
    }
    state_jobs_free(jobs, n);
}
