/* daemon.c: `castor run`: state, reconciliation, API, the loop in real time, cron jobs, metrics,
 * decisions and costs, SIGHUP and SIGTERM. */
#include "control/daemon.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "control/api.h"
#include "control/config.h"
#include "control/loop.h"
#include "control/realworld.h"
#include "control/state.h"
#include "providers/cloud.h"
#include "providers/faulty.h"
#include "util/crypto.h"
#include "util/file.h"
#include "util/http_server.h"
#include "util/json.h"
#include "util/log.h"
#include "util/timestamp.h"

/* When each template fires next. */
struct dm_cron {
    char *name;
    char *schedule;
    int64_t next; /* seconds; INT64_MAX: never */
};

struct daemon {
    struct config *cfg;
    struct log *log;
    int claim;            /* the state's lock (state_claim); -1: not held */
    struct state *st;     /* the loop's connection */
    struct state *st_api; /* the API's */
    struct api *api;
    struct http_server *server;
    struct cloud cloud;
    struct realworld *rw;
    struct provider prov;
    struct policy policy;
    struct fleet_policy fleet;
    int have_policy, have_fleet;
    struct loop loop;
    struct api_metrics metrics; /* the decide histogram lives here */
    sigset_t sigs;
    int stop, reload;
    pthread_t main;   /* the loop's thread: the API's requests wake it (SIGUSR2) */
    int changed;      /* a request changed what the decide step sees: decide soon */
    double last_tick; /* when the loop last decided (monotonic clock) */
    int failing;      /* ticks in a row whose decide step failed */
    long long tick;   /* the number of the next decision recorded */
    double cost_from; /* costs are recorded up to this time */
    /* what the nodes cost while it was down, when the start could not record it: the span, and
     * the instances the cloud listed then (down_listed NULL: it could not say, all count) */
    int down_pending;
    double down_from, down_to;
    char **down_listed;
    int bad_config; /* the start failed for a fault in the configuration's file */
    struct dm_cron *cron;
    size_t ncron;
};

#define DM_OFFER_TRIES 10 /* asking the cloud's offers at start: about 30 s of backoff */

/* The least time between two decisions that requests bring forward (a burst of submissions makes
 * one decision, not one each). */
#define DM_CHANGE_GAP_S 1.0

/* ---- clocks ---- */

static double dm_clock(void *ctx)
{
    struct timespec ts;

    (void)ctx;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double dm_timer(void *ctx)
{
    struct timespec ts;

    (void)ctx;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The next time a template fires, or HUGE_VAL. */
static double dm_next_cron(const struct daemon *d)
{
    double next = HUGE_VAL;

    for (size_t i = 0; i < d->ncron; i++)
        if (d->cron[i].next != INT64_MAX && (double)d->cron[i].next < next)
            next = (double)d->cron[i].next;
    return next;
}

/* Wait for a signal, at most `seconds`: 1 when one came (its flag set), 0 at the time. */
static int dm_wait_signal(struct daemon *d, double seconds)
{
    double left = seconds;
    struct timespec ts;
    int sig;

    if (!(left > 0))
        left = 0; /* only a look at the signals pending */
    if (left > 3600)
        left = 3600;
    ts.tv_sec = (time_t)left;
    ts.tv_nsec = (long)((left - (double)ts.tv_sec) * 1e9);
    sig = sigtimedwait(&d->sigs, NULL, &ts);
    if (sig == SIGHUP) {
        d->reload = 1;
        return 1;
    }
    if (sig == SIGTERM || sig == SIGINT) {
        d->stop = 1;
        return 1;
    }
    if (sig == SIGUSR2) {
        d->changed = 1;
        return 1;
    }
    return 0; /* timed out (EAGAIN) or interrupted (EINTR): look at the clock again */
}

/* The real world's sleep: until the monotonic clock (dm_timer) reads `until` (a wall clock
 * stepped back or forward moves no tick), but back early with ERR_AGAIN for a stop, a reload or a
 * template that is due (the templates' times are on the wall clock), and with 0 (decide now) once
 * a request has changed what the decide step sees, at least DM_CHANGE_GAP_S after the last
 * decision. */
static int dm_sleep(void *ctx, double until)
{
    struct daemon *d = ctx;

    for (;;) {
        double t = dm_timer(NULL), cron = dm_next_cron(d) - dm_clock(NULL), left = until - t;

        if (d->stop || d->reload || cron <= 0)
            return ERR_AGAIN;
        if (left <= 0) {
            d->changed = 0; /* this decision sees the change */
            return 0;
        }
        if (d->changed) {
            double soon = d->last_tick + DM_CHANGE_GAP_S - t;

            if (soon <= 0) {
                d->changed = 0;
                return 0;
            }
            if (soon < left)
                left = soon;
        }
        dm_wait_signal(d, cron < left ? cron : left);
    }
}

/* realworld_config.heard: the heartbeats the API answered, recorded in the state or not. */
static double dm_heard(void *ctx, const char *node)
{
    double at = NAN;

    return api_node_heard(((struct daemon *)ctx)->api, node, &at) == 0 ? at : NAN;
}

/* api_config.changed: from a request's thread, wake the loop's. */
static void dm_changed(void *ctx)
{
    struct daemon *d = ctx;

    pthread_kill(d->main, SIGUSR2);
}

/* ---- jobs: the configuration's and the templates' ---- */

static void dm_submit(struct daemon *d, const char *name, const char *spec, double now,
                      const char *why)
{
    int rc = state_job_submit(d->st, name, spec, now);
    const char *warning = rc == 0 ? api_job_spec_warning(spec) : NULL;

    if (rc == 0)
        log_msg(d->log, now, LOG_INFO, name, NULL, "job submitted (%s)", why);
    if (warning)
        log_msg(d->log, now, LOG_WARN, name, NULL, "%s", warning);
    else if (rc < 0 && rc != ERR_CONFLICT) /* a job of that name exists: submitted before */
        log_msg(d->log, now, LOG_ERROR, name, NULL, "cannot submit the job: %s", err_str(rc));
}

static void dm_submit_config_jobs(struct daemon *d, double now)
{
    for (size_t i = 0; i < d->cfg->njobs; i++)
        dm_submit(d, d->cfg->jobs[i].name, d->cfg->jobs[i].spec, now, "configuration");
}

/* Submit the template's job for the scheduled time at. */
static void dm_submit_template(struct daemon *d, const struct config_template *t, int64_t at,
                               double now, const char *why)
{
    char name[CONFIG_NAME_MAX + 1], *spec = NULL;

    if (config_template_job_name(t, at, name, sizeof(name)) < 0 ||
        config_template_spec(t, name, at, &spec) < 0) {
        log_msg(d->log, now, LOG_ERROR, NULL, NULL, "template %s: cannot build its job", t->name);
        return;
    }
    dm_submit(d, name, spec, now, why);
    free(spec);
}

/* The scheduled time of a job of template t, from its name, or -1 when it is not one. */
static int64_t dm_template_time(const struct config_template *t, const char *job)
{
    size_t n = strlen(t->name);
    char iso[32];
    int64_t at;
    const char *s = job + n + 1;

    if (strncmp(job, t->name, n) != 0 || job[n] != '-' || strlen(s) != 14 || s[8] != 'T' ||
        s[13] != 'Z')
        return -1;
    snprintf(iso, sizeof(iso), "%.4s-%.2s-%.2sT%.2s:%.2s:00Z", s, s + 4, s + 6, s + 9, s + 11);
    return timestamp_parse_iso8601(iso, &at) == 0 ? at : -1;
}

/* The missed-run rule (cron_missed) for a template, its last run read from its jobs' names: a
 * template with no job yet starts at its next time. */
static void dm_cron_catch_up(struct daemon *d, const struct config_template *t, double now)
{
    struct state_job *jobs = NULL;
    int64_t newest = -1, at;
    size_t n = 0;

    if (state_jobs_list(d->st, (1u << STATE_JOB_NSTATES) - 1, &jobs, &n) < 0)
        return;
    for (size_t i = 0; i < n; i++) {
        int64_t when = dm_template_time(t, jobs[i].name);

        if (when > newest)
            newest = when;
    }
    state_jobs_free(jobs, n);
    if (cron_missed(&t->schedule, newest, (int64_t)now, &at) == 1) {
        log_msg(d->log, now, LOG_WARN, NULL, NULL,
                "template %s: missed while the controller was down; submitting once, for the "
                "latest missed time",
                t->name);
        dm_submit_template(d, t, at, now, "missed schedule");
    }
}

/* The cron table for d->cfg's templates; those in old (same name and schedule) keep their next
 * time, new ones catch up by the missed-run rule and start at their next time. */
static int dm_cron_build(struct daemon *d, const struct dm_cron *old, size_t nold, double now)
{
    struct dm_cron *c = calloc(d->cfg->ntemplates + 1, sizeof(*c));

    if (!c)
        return ERR_NOMEM;
    for (size_t i = 0; i < d->cfg->ntemplates; i++) {
        const struct config_template *t = &d->cfg->templates[i];
        int kept = 0;

        c[i].name = strdup(t->name);
        c[i].schedule = strdup(t->schedule_text);
        if (!c[i].name || !c[i].schedule) {
            for (size_t k = 0; k <= i; k++) {
                free(c[k].name);
                free(c[k].schedule);
            }
            free(c);
            return ERR_NOMEM;
        }
        for (size_t k = 0; k < nold && !kept; k++)
            if (strcmp(old[k].name, t->name) == 0 &&
                strcmp(old[k].schedule, t->schedule_text) == 0) {
                c[i].next = old[k].next;
                kept = 1;
            }
        if (kept)
            continue;
        dm_cron_catch_up(d, t, now);
        if (cron_next(&t->schedule, (int64_t)now, &c[i].next) < 0)
            c[i].next = INT64_MAX;
    }
    d->cron = c;
    d->ncron = d->cfg->ntemplates;
    return 0;
}

static void dm_cron_free(struct dm_cron *c, size_t n)
{
    for (size_t i = 0; c && i < n; i++) {
        free(c[i].name);
        free(c[i].schedule);
    }
    free(c);
}

/* Submit the templates' jobs that are due: one per template for its latest time due. */
static void dm_cron_run(struct daemon *d, double now)
{
    for (size_t i = 0; i < d->ncron; i++) {
        const struct config_template *t = &d->cfg->templates[i];
        int64_t at;

        if (d->cron[i].next == INT64_MAX || (double)d->cron[i].next > now)
            continue;
        if (cron_prev(&t->schedule, (int64_t)now, &at) < 0 || at < d->cron[i].next)
            at = d->cron[i].next;
        dm_submit_template(d, t, at, now, "schedule");
        if (cron_next(&t->schedule, (int64_t)now, &d->cron[i].next) < 0)
            d->cron[i].next = INT64_MAX;
    }
}

/* ---- policies ---- */

/* New allocation and fleet policies for cfg into *pol and *fleet. */
static int dm_policies(struct daemon *d, const struct config *cfg, struct policy *pol,
                       struct fleet_policy *fleet, char *why, size_t size)
{
    struct fleet_config fc = cfg->fcfg;
    int rc;

    if (strcmp(cfg->fleet, "castor") != 0) {
        const char *offer = cfg->fleet_offer;

        /* without a name, the cloud's first offer (the look-up fetches the offers); a cloud that
         * fails for now (throttled, 5xx) is asked again, a while, before the start gives up */
        rc = realworld_offer_index(d->rw, offer ? offer : "", &fc.offer);
        for (int k = 0; k < DM_OFFER_TRIES && (rc == ERR_AGAIN || rc == ERR_IO) && !d->stop; k++) {
            log_msg(d->log, dm_clock(d), LOG_WARN, NULL, NULL,
                    "the cloud's offers cannot be read yet (%s): asking again", err_str(rc));
            if (dm_wait_signal(d, fmin(0.25 * (1 << k), 5.0)) && d->stop)
                break;
            rc = realworld_offer_index(d->rw, offer ? offer : "", &fc.offer);
        }
        if (!offer && rc == ERR_UNKNOWN) {
            fc.offer = 0;
            rc = 0;
        }
        if (rc < 0) {
            snprintf(why, size, "fleet.offer %s: %s", offer ? offer : "(the first)",
                     rc == ERR_UNKNOWN ? "the cloud has no such offer" : err_str(rc));
            return rc;
        }
    }
    if ((rc = policy_new(cfg->policy, &cfg->pcfg, pol)) < 0) {
        snprintf(why, size, "policy %s: %s", cfg->policy, err_str(rc));
        return rc;
    }
    if ((rc = fleet_new(cfg->fleet, &fc, fleet)) < 0) {
        policy_free(pol);
        snprintf(why, size, "fleet planner %s: %s", cfg->fleet, err_str(rc));
        return rc;
    }
    return 0;
}

/* ---- a tick's records ---- */

static int dm_record(void *ctx, double now, const struct snapshot *s, const struct alloc *plan)
{
    struct daemon *d = ctx;
    struct realworld_actions a;
    struct jv *o = jv_object(), *jobs = jv_object();
    char *text = NULL;
    int rc = 0;

    realworld_last_actions(d->rw, &a);
    api_metrics_observe_decide(&d->metrics, d->loop.decide_s);
    d->metrics.decide_failures = d->loop.policy_errs;
    for (int j = 0; j < plan->njobs; j++)
        rc |= jv_set(jobs, s->jobs[j].name, jv_integer(plan->count[j]));
    rc |= jv_set(o, "jobs", jobs);
    rc |= jv_set(o, "nodes", jv_integer(s->nnodes));
    rc |= jv_set(o, "gpus", jv_integer(snapshot_gpus(s)));
    rc |= jv_set(o, "booting", jv_integer(s->nbooting));
    rc |= jv_set(o, "launched", jv_integer(a.launched));
    rc |= jv_set(o, "released", jv_integer(a.released));
    rc |= jv_set(o, "cancelled", jv_integer(a.cancelled));
    rc |= jv_set(o, "launch_failed", jv_integer(a.launch_failed));
    rc |= jv_set(o, "decide_s", jv_number(d->loop.decide_s));
    if (rc == 0 && jv_dump(o, &text) == 0 &&
        (rc = state_decision_append(d->st, d->tick, now, text)) == 0)
        d->tick++;
    else
        log_msg(d->log, now, LOG_ERROR, NULL, NULL, "cannot record the decision: %s",
                err_str(rc ? rc : ERR_NOMEM));
    log_msg(d->log, now, LOG_DEBUG, NULL, NULL,
            "tick: %d jobs, %d nodes, %d booting, decided in %.4f s", s->njobs, s->nnodes,
            s->nbooting, d->loop.decide_s);
    free(text);
    jv_free(o);
    return 0; /* a record that failed is logged; the loop goes on */
}

/* The downtime span the start could not record, forgotten. */
static void dm_down_clear(struct daemon *d)
{
    for (size_t i = 0; d->down_listed && d->down_listed[i]; i++)
        free(d->down_listed[i]);
    free(d->down_listed);
    d->down_listed = NULL;
    d->down_pending = 0;
}

/* The dollars of every node alive since the last time, at its price (state_cost_accrue, all or
 * nothing): a span that could not be recorded (a full disk) is asked again whole with the next,
 * so that no cost is lost. */
static void dm_costs(struct daemon *d, double now)
{
    int rc;

    /* first what the start could not record (dm_costs_while_down), as it would have */
    if (d->down_pending &&
        (rc = state_cost_accrue_listed(d->st, d->down_from, d->down_to, d->down_listed)) < 0) {
        log_msg(d->log, now, LOG_WARN, NULL, NULL,
                "cannot record what the nodes cost while castor was down (%s): tried again with "
                "the next tick's",
                err_str(rc));
        return;
    }
    if (d->down_pending) {
        log_msg(d->log, now, LOG_INFO, NULL, NULL,
                "recorded what the nodes cost in the %.0f s castor was down, which the start "
                "could not",
                d->down_to - d->down_from);
        dm_down_clear(d);
    }
    if (!(now > d->cost_from))
        return; /* a clock stepped back: what was recorded up to cost_from stands */
    if ((rc = state_cost_accrue(d->st, d->cost_from, now)) < 0) {
        log_msg(d->log, now, LOG_WARN, NULL, NULL,
                "cannot record the nodes' costs of the last %.0f s (%s): tried again with the "
                "next tick's",
                now - d->cost_from, err_str(rc));
        return;
    }
    d->cost_from = now;
}

/* At start, before reconciliation changes anything: what the nodes live in the state cost since
 * the costs recorded last (the controller was down, or stopped after its last tick): the cloud
 * billed them all along, those that reconciliation then terminates too. A node castor launched
 * whose instance the cloud no longer lists, or lists as gone, is left out (when it went is not
 * known); when the cloud cannot be listed, every node counts (as far as castor knows, all ran). */
static void dm_costs_while_down(struct daemon *d, double now)
{
    struct cloud_instance *in = NULL;
    char **listed = NULL;
    double until = NAN;
    size_t n = 0, k = 0;
    int rc = state_cost_recorded_until(d->st, &until);

    if (rc < 0 || !isfinite(until) || !(until < now))
        goto out;
    if (cloud_list(&d->cloud, d->cfg->cluster, &in, &n) == 0 &&
        (listed = calloc(n + 1, sizeof(*listed))))
        for (size_t i = 0; i < n; i++)
            if (in[i].state != CLOUD_GONE)
                listed[k++] = in[i].id;
    /* every node: one terminated after the last costs recorded (the tick castor was killed in
     * terminated it, or its operator took it down since) up to its end */
    rc = state_cost_accrue_listed(d->st, until, now, listed);
    if (rc < 0) { /* (a full disk): asked again with the ticks' costs */
        d->down_pending = 1;
        d->down_from = until;
        d->down_to = now;
        if (listed && (d->down_listed = calloc(k + 1, sizeof(char *))))
            for (size_t i = 0; i < k && d->down_pending; i++)
                if (!(d->down_listed[i] = strdup(listed[i])))
                    dm_down_clear(d);
        if (listed && !d->down_listed)
            d->down_pending = 0; /* out of memory: as before, the span is not recorded */
    }
out:
    if (rc < 0)
        log_msg(d->log, now, LOG_WARN, NULL, NULL,
                "cannot record what the nodes cost while castor was down: %s%s", err_str(rc),
                d->down_pending ? " (tried again with the next tick's costs)" : "");
    else if (isfinite(until) && until < now)
        log_msg(d->log, now, LOG_INFO, NULL, NULL,
                "recorded what the nodes %s cost in the %.0f s since the last costs",
                listed ? "still running" : "of the state (the cloud cannot be listed)",
                now - until);
    free(listed);
    free(in);
}

static void dm_metrics(struct daemon *d)
{
    if (realworld_metrics(d->rw, &d->metrics) == 0)
        api_set_metrics(d->api, &d->metrics);
}

/* The configuration's spend limit, as the real world takes it. */
static struct realworld_spend dm_spend(const struct config *c)
{
    static const enum realworld_period periods[] = {REALWORLD_DAY, REALWORLD_WEEK, REALWORLD_MONTH};

    return (struct realworld_spend){
        .dollars = c->spend.dollars,
        .period = periods[c->spend.period >= 0 && c->spend.period <= 2 ? c->spend.period : 2]};
}

/* ---- reload ---- */

static void dm_reload(struct daemon *d)
{
    struct config *nc = NULL;
    struct realworld_offer *meta = NULL;
    struct policy pol;
    struct fleet_policy fleet;
    struct dm_cron *old = d->cron;
    size_t nold = d->ncron;
    struct error e = {0};
    char why[512], warn[128], buf[800];
    double now = dm_clock(NULL);
    struct config *prev;

    d->reload = 0;
    if (config_load(d->cfg->path, &nc, &e) < 0) {
        log_msg(d->log, now, LOG_ERROR, NULL, NULL,
                "reload refused, the running configuration stays: %s",
                err_format(&e, buf, sizeof(buf)));
        return;
    }
    if (config_reload_check(d->cfg, nc, why, sizeof(why), warn, sizeof(warn)) ||
        dm_policies(d, nc, &pol, &fleet, why, sizeof(why)) < 0) {
        log_msg(d->log, now, LOG_ERROR, NULL, NULL,
                "reload refused, the running configuration stays: %s: %s", nc->path, why);
        config_free(nc);
        return;
    }
    if (config_offer_meta(nc, &meta) < 0 ||
        realworld_set_options(d->rw,
                              &(struct realworld_timeouts){nc->launch_timeout, nc->register_timeout,
                                                           nc->heartbeat_timeout},
                              meta, nc->noffers) < 0) {
        free(meta);
        policy_free(&pol);
        fleet_free(&fleet);
        config_free(nc);
        log_msg(d->log, now, LOG_ERROR, NULL, NULL, "reload refused: out of memory");
        return;
    }
    {
        struct realworld_spend spend = dm_spend(nc);

        realworld_set_spend(d->rw, &spend);
    }
    free(meta);
    policy_free(&d->policy);
    fleet_free(&d->fleet);
    d->policy = pol;
    d->fleet = fleet;
    prev = d->cfg;
    d->cfg = nc;
    d->loop.seed = nc->seed;
    /* the wait in progress ends by the last tick plus the new interval, if that is sooner */
    d->loop.interval = nc->interval;
    if (dm_cron_build(d, old, nold, now) < 0) {
        d->cron = NULL; /* out of memory: no template fires until the next reload */
        d->ncron = 0;
        log_msg(d->log, now, LOG_ERROR, NULL, NULL, "the templates' schedules: out of memory");
    }
    dm_cron_free(old, nold);
    config_free(prev);
    dm_submit_config_jobs(d, now);
    log_msg(d->log, now, LOG_INFO, NULL, NULL,
            "configuration reloaded from %s: %zu jobs, %zu templates, policy %s, fleet %s",
            nc->path, nc->njobs, nc->ntemplates, nc->policy, nc->fleet);
    if (warn[0])
        log_msg(d->log, now, LOG_WARN, NULL, NULL, "changes to %s take effect at the next restart",
                warn);
}

/* ---- start and stop ---- */

static int dm_file_exists(const char *path)
{
    struct stat sb;

    return stat(path, &sb) == 0;
}

/* The tokens: the configuration's files, else systemd's credentials, else the environment. */
static int dm_tokens(const struct config *cfg, struct api_tokens *t, struct error *e)
{
    const char *cred = getenv(DAEMON_ENV_CREDENTIALS);
    static const char *const names[API_NROLES] = {"node.token", "job.token", "user.token",
                                                  "metrics.token"};
    char paths[API_NROLES][4096];

    if (cfg->token_files[API_ROLE_NODE])
        return api_tokens_from_files(
            cfg->token_files[API_ROLE_NODE], cfg->token_files[API_ROLE_JOB],
            cfg->token_files[API_ROLE_USER], cfg->token_files[API_ROLE_METRICS], t, e);
    if (cred && cred[0]) {
        for (int r = 0; r < API_NROLES; r++)
            snprintf(paths[r], sizeof(paths[r]), "%s/%s", cred, names[r]);
        if (dm_file_exists(paths[API_ROLE_NODE]))
            return api_tokens_from_files(
                paths[API_ROLE_NODE], paths[API_ROLE_JOB], paths[API_ROLE_USER],
                dm_file_exists(paths[API_ROLE_METRICS]) ? paths[API_ROLE_METRICS] : NULL, t, e);
    }
    return api_tokens_from_env(t, e);
}

static int dm_start_api(struct daemon *d, struct error *e)
{
    struct api_tokens tokens = {{NULL}};
    struct api_config ac = {0};
    struct http_server_config hc = {0};
    unsigned char fresh[API_NODE_KEY_LEN], node_key[API_NODE_KEY_LEN];
    int rc;

    if ((rc = dm_tokens(d->cfg, &tokens, e)) < 0)
        return rc;
    /* the nodes' own tokens under a key drawn once and kept in the state: derived from the shared
     * node token, every worker (which holds that to register) could forge any node's */
    if ((rc = crypto_random(fresh, sizeof(fresh))) < 0 ||
        (rc = state_secret(d->st_api, "node-token-key", fresh, sizeof(fresh), node_key)) < 0) {
        api_tokens_clear(&tokens);
        crypto_wipe(fresh, sizeof(fresh));
        return err_set(e, rc, d->cfg->state_path, 0, 0,
                       "cannot keep the key of the nodes' tokens: %s", err_str(rc));
    }
    crypto_wipe(fresh, sizeof(fresh));
    ac.node_key = node_key;
    ac.state = d->st_api;
    ac.log = d->log;
    ac.clock = dm_clock;
    ac.changed = dm_changed;
    ac.changed_ctx = d;
    ac.tokens = &tokens;
    ac.per_node_tokens = d->cfg->api.per_node_tokens;
    ac.attest = (struct attest_aws){.certificate = d->cfg->api.attest_certificate,
                                    .certificate_len = d->cfg->api.attest_certificate_len,
                                    .account = d->cfg->api.attest_account,
                                    .region = d->cfg->api.attest_region};
    ac.attest_gcp = (struct attest_gcp){.certificates_path = d->cfg->api.attest_google_certs,
                                        .audience = d->cfg->api.attest_audience,
                                        .project = d->cfg->api.attest_project};
    ac.attest_static = (const char *const *)d->cfg->api.attest_static_nodes;
    rc = api_new(&ac, &d->api, e);
    api_tokens_clear(&tokens);
    crypto_wipe(node_key, sizeof(node_key));
    if (rc < 0)
        return rc;
    hc.address = d->cfg->api.address;
    hc.port = d->cfg->api.port;
    hc.max_body = d->cfg->api.max_body;
    hc.threads = d->cfg->api.threads;
    hc.cert_file = d->cfg->api.tls_cert;
    hc.key_file = d->cfg->api.tls_key;
    hc.insecure_http = d->cfg->api.insecure_http;
    hc.rate_limit = d->cfg->api.rate_limit;
    hc.rate_burst = d->cfg->api.rate_burst;
    hc.max_client_connections = d->cfg->api.max_client_connections;
    if ((rc = http_server_start(&hc, api_handle, d->api, &d->server, e)) < 0)
        return rc;
    log_msg(d->log, dm_clock(NULL), LOG_INFO, NULL, NULL, "API listening on %s://%s%s%s:%d",
            d->cfg->api.tls_cert ? "https" : "http", strchr(hc.address, ':') ? "[" : "", hc.address,
            strchr(hc.address, ':') ? "]" : "", http_server_port(d->server));
    return 0;
}

/*
 * What the cloud may need to know of this daemon: its API's URL as a process on this machine
 * reaches it (a wildcard address becomes loopback) at port, the files its node and job tokens
 * came from (the configuration's, else systemd's credentials; NULL when they came from the
 * environment), and the folder of this program. The strings are written into the buffers.
 */
static void dm_host(const struct daemon *d, int port, struct cloud_host *h, char *url,
                    size_t url_size, char tokens[2][4096], char *bin_dir, size_t bin_size)
{
    const char *cred = getenv(DAEMON_ENV_CREDENTIALS);

    config_api_url(d->cfg, port, url, url_size);
    h->api_url = url;
    if (d->cfg->token_files[API_ROLE_NODE]) {
        h->node_token_file = d->cfg->token_files[API_ROLE_NODE];
        h->job_token_file = d->cfg->token_files[API_ROLE_JOB];
    } else if (cred && cred[0]) {
        snprintf(tokens[0], 4096, "%s/node.token", cred);
        snprintf(tokens[1], 4096, "%s/job.token", cred);
        if (dm_file_exists(tokens[0])) {
            h->node_token_file = tokens[0];
            h->job_token_file = tokens[1];
        }
    }
    if (file_exe_dir(bin_dir, bin_size) == 0)
        h->bin_dir = bin_dir;
}

static int dm_start(struct daemon *d, struct error *e)
{
    struct realworld_config rc_cfg = {0};
    struct realworld_offer *meta = NULL;
    struct cloud_host host = {0};
    char why[512], url[600], tokens[2][4096], bin_dir[4096];
    int rc;

    /* the process holds cloud credentials and the tokens' digests: no core file may hold them */
    if (crypto_no_core_dumps() < 0)
        return err_set(e, ERR_INTERNAL, "", 0, 0, "cannot turn core dumps off");
    /* the cloud's section read first (a cloud made and dropped, at the configured port): a
     * fault in it is the file's, told before anything is created (the API's port may be 0:
     * the cloud that runs is made once it listens) */
    dm_host(d, d->cfg->api.port > 0 ? d->cfg->api.port : 1, &host, url, sizeof(url), tokens,
            bin_dir, sizeof(bin_dir));
    if ((rc = cloud_new(d->cfg->world, d->cfg->cloud, d->cfg->dir, &host, &d->cloud, e)) < 0) {
        d->bad_config = rc == ERR_PARSE || rc == ERR_RANGE || rc == ERR_UNKNOWN;
        return rc;
    }
    cloud_free(&d->cloud);
    host = (struct cloud_host){0};
    if ((rc = state_claim(d->cfg->state_path, &d->claim, e)) < 0 ||
        (rc = state_open(d->cfg->state_path, &d->st, e)) < 0 ||
        (rc = state_open(d->cfg->state_path, &d->st_api, e)) < 0)
        return rc;
    /* the API first: a cloud whose instances talk back (local) is told its address */
    if ((rc = dm_start_api(d, e)) < 0)
        return rc;
    dm_host(d, http_server_port(d->server), &host, url, sizeof(url), tokens, bin_dir,
            sizeof(bin_dir));
    if ((rc = cloud_new(d->cfg->world, d->cfg->cloud, d->cfg->dir, &host, &d->cloud, e)) < 0)
        return rc;
    if (d->cfg->faults.on) { /* a chaos run: the cloud's calls fail at the configured rate */
        struct faulty_config fc = {.rate = d->cfg->faults.rate,
                                   .seed = d->cfg->faults.seed,
                                   .timeout_s = d->cfg->faults.timeout_s};
        struct cloud wrapped;

        if ((rc = faulty_wrap(&d->cloud, &fc, &wrapped)) < 0)
            return err_set(e, rc, d->cfg->path, 0, 0, "faults: %s", err_str(rc));
        d->cloud = wrapped;
        log_msg(d->log, dm_clock(d), LOG_WARN, NULL, NULL,
                "fault injection: %.0f%% of the cloud's calls fail (seed %llu, timeouts %.1f s)",
                100.0 * fc.rate, (unsigned long long)fc.seed, fc.timeout_s);
    }
    if ((rc = config_offer_meta(d->cfg, &meta)) < 0)
        return err_set(e, rc, "", 0, 0, "out of memory");
    rc_cfg.state = d->st;
    rc_cfg.cloud = &d->cloud;
    rc_cfg.log = d->log;
    rc_cfg.cluster = d->cfg->cluster;
    rc_cfg.clock = dm_clock;
    rc_cfg.timer = dm_timer;
    rc_cfg.sleep = dm_sleep;
    rc_cfg.clock_ctx = d;
    rc_cfg.timeouts = (struct realworld_timeouts){d->cfg->launch_timeout, d->cfg->register_timeout,
                                                  d->cfg->heartbeat_timeout};
    rc_cfg.offers = meta;
    rc_cfg.noffers = d->cfg->noffers;
    rc_cfg.model = d->cfg->tput_model;
    rc_cfg.spend = dm_spend(d->cfg);
    rc_cfg.heard = dm_heard;
    rc_cfg.heard_ctx = d;
    rc = realworld_new(&rc_cfg, &d->rw, e);
    free(meta);
    if (rc < 0)
        return rc;
    realworld_provider(d->rw, &d->prov);
    if ((rc = dm_policies(d, d->cfg, &d->policy, &d->fleet, why, sizeof(why))) < 0)
        return err_set(e, rc, d->cfg->path, 0, 0, "%s", why);
    d->have_policy = d->have_fleet = 1;
    d->loop = (struct loop){.provider = &d->prov,
                            .policy = &d->policy,
                            .fleet = &d->fleet,
                            .interval = 0, /* the first tick at once */
                            .seed = d->cfg->seed,
                            .record = dm_record,
                            .record_ctx = d,
                            .timer = dm_timer};
    if (state_decision_last_tick(d->st, &d->tick) == 0)
        d->tick++;
    else
        d->tick = 0;
    return 0;
}

static void dm_stop(struct daemon *d)
{
    http_server_stop(d->server);
    api_free(d->api);
    if (d->have_fleet)
        fleet_free(&d->fleet);
    if (d->have_policy)
        policy_free(&d->policy);
    realworld_free(d->rw);
    cloud_free(&d->cloud);
    state_close(d->st_api);
    state_close(d->st);
    if (d->claim >= 0)
        close(d->claim);
    dm_cron_free(d->cron, d->ncron);
    dm_down_clear(d);
}

int daemon_run(const char *config_path, FILE *logf)
{
    struct daemon d;
    struct error e = {0};
    char buf[800];
    double now;
    int rc, status = 0;

    memset(&d, 0, sizeof(d));
    d.claim = -1;
    if ((rc = config_load(config_path, &d.cfg, &e)) < 0) {
        fprintf(logf, "castor run: %s\n", err_format(&e, buf, sizeof(buf)));
        return rc == ERR_NOENT || rc == ERR_IO || rc == ERR_NOMEM ? 1 : 2;
    }
    if (log_new(logf, d.cfg->log_level, &d.log) < 0) {
        config_free(d.cfg);
        return 1;
    }
    sigemptyset(&d.sigs);
    sigaddset(&d.sigs, SIGTERM);
    sigaddset(&d.sigs, SIGINT);
    sigaddset(&d.sigs, SIGHUP);
    sigaddset(&d.sigs, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &d.sigs, NULL); /* before any thread: they all inherit it */
    d.main = pthread_self();
    now = dm_clock(NULL);
    d.cost_from = now;
    if ((rc = dm_start(&d, &e)) < 0) {
        log_msg(d.log, now, LOG_ERROR, NULL, NULL, "cannot start: %s",
                err_format(&e, buf, sizeof(buf)));
        status = d.bad_config ? 2 : 1;
        goto out;
    }
    log_msg(d.log, now, LOG_INFO, NULL, NULL,
            "castor %s started: cluster %s, world %s, state %s, policy %s, fleet %s",
            CASTOR_VERSION, d.cfg->cluster, d.cfg->world, d.cfg->state_path, d.cfg->policy,
            d.cfg->fleet);
    dm_costs_while_down(&d, now);
    if (realworld_reconcile(d.rw) < 0)
        log_msg(d.log, now, LOG_WARN, NULL, NULL,
                "reconciliation at start could not list the cloud; it is tried every tick");
    dm_submit_config_jobs(&d, now);
    if (dm_cron_build(&d, NULL, 0, now) < 0) {
        status = 1;
        goto out;
    }
    while (!d.stop) {
        rc = loop_tick(&d.loop);
        now = dm_clock(NULL);
        if (rc == 0 && d.loop.policy_err < 0 && d.failing++ == 0)
            log_msg(d.log, now, LOG_WARN, NULL, NULL,
                    "the decide step failed (%s): the current allocation stays until it works",
                    err_str(d.loop.policy_err));
        else if (rc == 0 && d.loop.policy_err == 0 && d.failing > 0) {
            log_msg(d.log, now, LOG_INFO, NULL, NULL,
                    "the decide step works again, after %d failed ticks", d.failing);
            d.failing = 0;
        }
        if (rc == 0) {
            d.last_tick = dm_timer(NULL);
            d.loop.interval = d.cfg->interval;
            dm_costs(&d, now);
            dm_metrics(&d);
        } else if (rc != ERR_AGAIN) {
            log_msg(d.log, now, LOG_ERROR, NULL, NULL, "tick failed: %s", err_str(rc));
            d.loop.interval = d.cfg->interval;
        }
        if (d.stop)
            break;
        if (d.reload)
            dm_reload(&d);
        dm_cron_run(&d, now);
    }
    dm_costs(&d, dm_clock(NULL)); /* up to the stop */
    log_msg(d.log, dm_clock(NULL), LOG_INFO, NULL, NULL, "stopping: the tick is done");
out:
    dm_stop(&d);
    log_msg(d.log, dm_clock(NULL), LOG_INFO, NULL, NULL, "stopped");
    log_free(d.log);
    config_free(d.cfg);
    return status;
}
