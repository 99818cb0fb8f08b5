/* api_jobs.c: the users' endpoints: job specs checked and stored with their defaults, jobs
 * submitted, listed, shown and cancelled, and the fleet. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "control/events.h"
#include "control/api_internal.h"
#include "control/state.h"
#include "util/json.h"
#include "util/log.h"
#include "util/timestamp.h"

const char *const api_job_spec_keys[] = {"name",           "command",       "workdir",
                                         "image",          "env",           "init_batch_size",
                                         "max_batch_size", "max_local_bsz", "min_replicas",
                                         "max_replicas",   "replicas",      "checkpoint_interval",
                                         "samples",        "family",        "deadline",
                                         "priority",       "max_restarts",  "hang_timeout",
                                         "max_dollars",    "reconfigure",   NULL};

int api_env_name_ok(const char *s)
{
    if (!s || !s[0] || (s[0] >= '0' && s[0] <= '9'))
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_'))
            return 0;
    return 1;
}

struct ap_env_check {
    struct ap_ctx *c;
    int rc;
};

static int ap_env_entry(void *ctx, const char *key, const struct jv *val)
{
    struct ap_env_check *k = ctx;
    const char *s = jv_string_value(val);

    if (!api_env_name_ok(key) || strlen(key) > 256)
        k->rc = ap_bad(k->c, "env: '%.64s' is not a variable name", key);
    else if (!s || strlen(s) > 32768)
        k->rc = ap_bad(k->c, "env.%s must be a string of at most 32768 bytes", key);
    return k->rc;
}

/* The command: an array of 1 to 256 strings (argv), each 1 to 4096 bytes. */
static int ap_command(struct ap_ctx *c, const struct jv *cmd)
{
    if (!cmd)
        return ap_bad(c, "command is required");
    if (jv_type_of(cmd) != JV_ARRAY || jv_size(cmd) == 0 || jv_size(cmd) > 256)
        return ap_bad(c, "command must be an array of 1 to 256 strings (the argv)");
    for (size_t i = 0; i < jv_size(cmd); i++) {
        const char *s = jv_string_value(jv_at(cmd, i));

        if (!s || !s[0] || strlen(s) > 4096)
            return ap_bad(c, "command[%zu] must be a string of 1 to 4096 bytes", i);
    }
    return 0;
}

/* Check a job spec and build its stored form: every field, defaults filled in. */
static int ap_job_spec(struct ap_ctx *c, const char **name, struct jv **out)
{
    const char *const *keys = api_job_spec_keys;
    const struct jv *env = jv_get(c->body, "env");
    const char *workdir = NULL, *image = NULL, *family = NULL;
    const char *reconf = API_RECONFIGURE_RESTART;
    double m0 = 0, maxb = 0, local = 0, ckpt = 600, samples = NAN, deadline = NAN;
    double hang = API_HANG_TIMEOUT_DEFAULT, max_dollars = NAN;
    long long minr = 1, maxr = 0, reqr = 1, prio = 0, restarts = API_MAX_RESTARTS_DEFAULT;
    struct ap_env_check ec = {c, 0};
    struct jv *o;
    int rc;

    rc = ap_keys(c, c->body, "", keys);
    if (rc == 0)
        rc = ap_str(c, c->body, "", "name", 1, AP_NAME_MAX, name);
    if (rc == 0 && !api_name_ok(*name))
        rc = ap_bad(c, "name must be letters, digits, '.', '_' or '-', starting with a letter or "
                       "digit");
    if (rc == 0)
        rc = ap_command(c, jv_get(c->body, "command"));
    if (rc == 0)
        rc = ap_str(c, c->body, "", "workdir", 0, 4096, &workdir);
    if (rc == 0)
        rc = ap_str(c, c->body, "", "image", 0, 1024, &image);
    if (rc == 0 && !workdir && !image)
        rc = ap_bad(c, "a workdir or an image is required");
    if (rc == 0 && env && (jv_type_of(env) != JV_OBJECT || jv_size(env) > 256))
        rc = ap_bad(c, "env must be an object of at most 256 strings");
    if (rc == 0 && env)
        rc = jv_each(env, ap_env_entry, &ec) ? ERR_INVAL : 0;
    if (rc == 0)
        rc = ap_num(c, c->body, "", "init_batch_size", 1, 0.0, 0, &m0);
    if (rc == 0 && m0 > API_BATCH_MAX)
        rc = ap_bad(c, "init_batch_size must be at most %g", API_BATCH_MAX);
    if (rc == 0)
        rc = ap_num(c, c->body, "", "max_batch_size", 1, m0, 1, &maxb);
    if (rc == 0 && maxb > API_BATCH_MAX)
        rc = ap_bad(c, "max_batch_size must be at most %g", API_BATCH_MAX);
    if (rc == 0)
        rc = ap_num(c, c->body, "", "max_local_bsz", 1, API_LOCAL_BSZ_MIN, 1, &local);
    if (rc == 0 && local > API_BATCH_MAX)
        rc = ap_bad(c, "max_local_bsz must be at most %g", API_BATCH_MAX);
    if (rc == 0)
        rc = ap_int(c, c->body, "", "min_replicas", 0, 1, 100000, &minr);
    if (rc == 0)
        rc = ap_int(c, c->body, "", "max_replicas", 1, minr, 100000, &maxr);
    reqr = minr;
    if (rc == 0)
        rc = ap_int(c, c->body, "", "replicas", 0, minr, maxr, &reqr);
    if (rc == 0)
        rc = ap_num(c, c->body, "", "checkpoint_interval", 0, 0.0, 0, &ckpt);
    if (rc == 0 && ckpt > API_CHECKPOINT_INTERVAL_MAX)
        rc = ap_bad(c, "checkpoint_interval must be at most %g", API_CHECKPOINT_INTERVAL_MAX);
    if (rc == 0)
        rc = ap_num(c, c->body, "", "samples", 0, 0.0, 0, &samples);
    if (rc == 0 && samples > API_SAMPLES_MAX)
        rc = ap_bad(c, "samples must be at most %g", API_SAMPLES_MAX);
    if (rc == 0)
        rc = ap_str(c, c->body, "", "family", 0, API_FAMILY_MAX, &family);
    if (rc == 0 && family && !api_family_ok(family))
        rc = ap_bad(c, "family must be " API_FAMILY_CHARS);
    if (rc == 0)
        rc = ap_num(c, c->body, "", "deadline", 0, 0.0, 0, &deadline);
    if (rc == 0 && deadline > API_DEADLINE_MAX)
        rc = ap_bad(c, "deadline must be at most %.0f (9999-12-31T23:59:59Z)", API_DEADLINE_MAX);
    if (rc == 0)
        rc = ap_int(c, c->body, "", "priority", 0, -1000, 1000, &prio);
    if (rc == 0)
        rc = ap_int(c, c->body, "", "max_restarts", 0, 0, API_MAX_RESTARTS_MAX, &restarts);
    if (rc == 0)
        rc = ap_num(c, c->body, "", "hang_timeout", 0, 0.0, 1, &hang);
    if (rc == 0 && hang > API_HANG_TIMEOUT_MAX)
        rc = ap_bad(c, "hang_timeout must be at most %g", API_HANG_TIMEOUT_MAX);
    if (rc == 0)
        rc = ap_num(c, c->body, "", "max_dollars", 0, 0.0, 0, &max_dollars);
    if (rc == 0 && max_dollars > API_MAX_DOLLARS_MAX)
        rc = ap_bad(c, "max_dollars must be at most %g", API_MAX_DOLLARS_MAX);
    if (rc == 0)
        rc = ap_str(c, c->body, "", "reconfigure", 0, 16, &reconf);
    if (rc == 0 && strcmp(reconf, API_RECONFIGURE_RESTART) != 0 &&
        strcmp(reconf, API_RECONFIGURE_IN_FLIGHT) != 0)
        rc = ap_bad(c, "reconfigure must be restart or in_flight");
    if (rc < 0)
        return rc;
    o = jv_object();
    ap_set(c, o, "name", jv_string(*name));
    ap_set(c, o, "command", jv_ref(jv_get(c->body, "command")));
    ap_set(c, o, "workdir", workdir ? jv_string(workdir) : jv_null());
    ap_set(c, o, "image", image ? jv_string(image) : jv_null());
    ap_set(c, o, "env", env ? jv_ref(env) : jv_object());
    ap_set(c, o, "init_batch_size", jv_number(m0));
    ap_set(c, o, "max_batch_size", jv_number(maxb));
    ap_set(c, o, "max_local_bsz", jv_number(local));
    ap_set(c, o, "min_replicas", jv_integer(minr));
    ap_set(c, o, "max_replicas", jv_integer(maxr));
    ap_set(c, o, "replicas", jv_integer(reqr));
    ap_set(c, o, "checkpoint_interval", jv_number(ckpt));
    ap_set(c, o, "samples", jv_number(samples)); /* NAN (not given): null */
    ap_set(c, o, "family", family ? jv_string(family) : jv_null());
    ap_set(c, o, "deadline", jv_number(deadline));
    ap_set(c, o, "priority", jv_integer(prio));
    ap_set(c, o, "max_restarts", jv_integer(restarts));
    ap_set(c, o, "hang_timeout", jv_number(hang));
    ap_set(c, o, "max_dollars", jv_number(max_dollars)); /* NAN (no limit): null */
    ap_set(c, o, "reconfigure", jv_string(reconf));
    *out = o;
    return 0;
}

const char *api_job_spec_warning(const char *spec)
{
    struct jv *v = NULL;
    double deadline = NAN, samples = NAN;

    if (!spec || jv_parse(spec, strlen(spec), &v, NULL) < 0)
        return NULL;
    jv_number_value(jv_get(v, "deadline"), &deadline);
    jv_number_value(jv_get(v, "samples"), &samples);
    jv_free(v);
    if (isfinite(deadline) && !isfinite(samples))
        return "a deadline without samples (the job's length): castor cannot tell how much work is "
               "left, so it neither plans for the deadline nor predicts the job's finish";
    return NULL;
}

void ap_job_submit(struct ap_ctx *c)
{
    struct jv *spec = NULL, *o;
    const char *name = NULL, *warning;
    char *text = NULL;
    int rc = ap_parse_body(c, 0);

    if (rc == 0)
        rc = ap_job_spec(c, &name, &spec);
    if (rc < 0) {
        ap_fail(c, 400, "%s", c->reason);
        return;
    }
    c->param = name;
    if (c->json_failed || jv_dump(spec, &text) < 0) {
        jv_free(spec);
        ap_reply(c, 500, NULL);
        return;
    }
    rc = state_job_submit(c->a->state, name, text, c->now);
    warning = rc == 0 ? api_job_spec_warning(text) : NULL;
    free(text);
    if (rc < 0) {
        jv_free(spec);
        if (rc == ERR_CONFLICT)
            ap_fail(c, 409, "a job named %s exists", name);
        else
            ap_state_fail(c, rc, "job");
        return;
    }
    event_note(c->a->state, c->a->log, c->now, LOG_INFO, name, NULL, "submitted", "submitted");
    o = jv_object();
    ap_set(c, o, "name", jv_string(name));
    ap_set(c, o, "state", jv_string("pending"));
    ap_set(c, o, "spec", spec);
    if (warning) {
        struct jv *w = jv_array();

        ap_push(c, w, jv_string(warning));
        ap_set(c, o, "warnings", w);
        event_note(c->a->state, c->a->log, c->now, LOG_WARN, name, NULL, "warning", "%s", warning);
    }
    ap_reply(c, 201, o);
}

/* When job name is predicted to finish, from what the daemon last gave (NAN: not known). The
 * caller holds a->mu. */
static double ap_job_eta(const struct api *a, const char *name)
{
    for (size_t i = 0; i < a->metrics.njobs; i++)
        if (strcmp(a->metrics.jobs[i].job, name) == 0)
            return a->metrics.jobs[i].eta > 0 ? a->metrics.jobs[i].eta : NAN;
    return NAN;
}

/* Why a pending job waits: the message of its newest event when that is a `waiting` one (no
 * GPUs, a fleet that cannot grow, ...), else null; null for a job in another state, and when
 * its events cannot be read. */
static struct jv *ap_job_waiting(struct ap_ctx *c, const struct state_job *j)
{
    struct state_event *ev = NULL;
    struct jv *w = NULL;
    size_t n = 0;

    if (j->state != STATE_JOB_PENDING || state_events_list(c->a->state, j->name, 1, &ev, &n) < 0)
        return jv_null();
    w = n == 1 && strcmp(ev[0].kind, "waiting") == 0 ? jv_string(ev[0].message) : jv_null();
    state_events_free(ev, n);
    return w;
}

/* A job's summary, as listed. */
static struct jv *ap_job_summary(struct ap_ctx *c, const struct state_job *j)
{
    struct jv *o = jv_object();

    ap_set(c, o, "name", jv_string(j->name));
    ap_set(c, o, "state", jv_string(state_job_state_name(j->state)));
    ap_set(c, o, "submitted_at", jv_number(j->submitted_at));
    ap_set(c, o, "finished_at", jv_number(j->finished_at));
    ap_set(c, o, "progress", jv_number(j->progress));
    ap_set(c, o, "checkpoint_progress", jv_number(j->checkpoint_progress));
    ap_set(c, o, "restarts", jv_integer(j->restarts));
    ap_set(c, o, "failures", jv_integer(j->failures));
    ap_set(c, o, "failure", j->failure ? jv_string(j->failure) : jv_null());
    ap_set(c, o, "failure_at", jv_number(j->failure_at));
    ap_set(c, o, "waiting", ap_job_waiting(c, j));
    ap_set(c, o, "dollars", jv_number(j->dollars));
    /* (only jobs pending or running have one: the lookup stays within the daemon's jobs) */
    ap_set(c, o, "eta",
           jv_number(j->state == STATE_JOB_PENDING || j->state == STATE_JOB_RUNNING
                         ? ap_job_eta(c->a, j->name)
                         : NAN));
    return o;
}

/* The states named in a comma-separated list as a mask; 0 when a name is unknown. */
static unsigned ap_state_mask(const char *list)
{
    unsigned mask = 0;

    while (*list) {
        size_t n = strcspn(list, ",");
        int found = 0;

        for (int s = 0; s < STATE_JOB_NSTATES; s++) {
            const char *name = state_job_state_name((enum state_job_state)s);

            if (strlen(name) == n && strncmp(name, list, n) == 0) {
                mask |= STATE_MASK(s);
                found = 1;
            }
        }
        if (!found)
            return 0;
        list += n + (list[n] == ',');
    }
    return mask;
}

void ap_job_list(struct ap_ctx *c)
{
    const char *filter = http_request_query(c->req, "state");
    unsigned mask = (1u << STATE_JOB_NSTATES) - 1;
    struct state_job *jobs = NULL;
    struct jv *o, *arr;
    size_t n = 0;
    int rc;

    if (filter && !(mask = ap_state_mask(filter))) {
        ap_fail(c, 400,
                "state must be a comma-separated list of pending, running, finished, cancelled, "
                "failed");
        return;
    }
    rc = state_jobs_list(c->a->state, mask, &jobs, &n);
    if (rc < 0) {
        ap_state_fail(c, rc, "jobs");
        return;
    }
    o = jv_object();
    arr = jv_array();
    for (size_t i = 0; i < n; i++)
        ap_push(c, arr, ap_job_summary(c, &jobs[i]));
    ap_set(c, o, "jobs", arr);
    state_jobs_free(jobs, n);
    ap_reply(c, 200, o);
}

/* The job's reported configurations, pooled. */
static struct jv *ap_reports(struct ap_ctx *c, const char *job)
{
    struct state_report_config *rows = NULL;
    struct jv *arr;
    size_t n = 0;

    if (state_report_configs(c->a->state, job, &rows, &n) < 0)
        return NULL;
    arr = jv_array();
    for (size_t i = 0; i < n; i++) {
        struct jv *o = jv_object();

        ap_set(c, o, "nodes", jv_integer(rows[i].nodes));
        ap_set(c, o, "replicas", jv_integer(rows[i].replicas));
        ap_set(c, o, "local_bsz", jv_number(rows[i].local_bsz));
        ap_set(c, o, "accum_steps", jv_integer(rows[i].accum_steps));
        ap_set(c, o, "count", jv_integer(rows[i].count));
        ap_set(c, o, "step_mean", jv_number(rows[i].step_mean));
        ap_set(c, o, "step_sd", jv_number(rows[i].step_sd));
        ap_set(c, o, "sync_mean", jv_number(rows[i].sync_mean));
        ap_push(c, arr, o);
    }
    free(rows);
    return arr;
}

void ap_job_events(struct ap_ctx *c)
{
    const char *limit_text = http_request_query(c->req, "limit");
    struct state_event *ev = NULL;
    struct jv *o, *arr;
    char *end = NULL;
    long limit = 100;
    size_t n = 0;
    int rc;

    if (limit_text) {
        limit = strtol(limit_text, &end, 10);
        if (!limit_text[0] || *end || limit < 1 || limit > STATE_EVENTS_KEPT) {
            ap_fail(c, 400, "limit must be an integer from 1 to %d", STATE_EVENTS_KEPT);
            return;
        }
    }
    rc = state_events_list(c->a->state, c->param, (int)limit, &ev, &n);
    if (rc < 0) {
        ap_state_fail(c, rc, "such job");
        return;
    }
    o = jv_object();
    arr = jv_array();
    for (size_t i = 0; i < n; i++) {
        struct jv *e = jv_object();

        ap_set(c, e, "at", jv_number(ev[i].at));
        ap_set(c, e, "kind", jv_string(ev[i].kind));
        ap_set(c, e, "node", ev[i].node ? jv_string(ev[i].node) : jv_null());
        ap_set(c, e, "message", jv_string(ev[i].message));
        ap_push(c, arr, e);
    }
    ap_set(c, o, "job", jv_string(c->param));
    ap_set(c, o, "events", arr);
    state_events_free(ev, n);
    ap_reply(c, 200, o);
}

void ap_job_get(struct ap_ctx *c)
{
    long long world = 0;
    struct state_job j;
    struct jv *o, *grad;
    int rc = state_job_get(c->a->state, c->param, &j);

    if (rc < 0) {
        ap_state_fail(c, rc, "such job");
        return;
    }
    o = ap_job_summary(c, &j);
    ap_set(c, o, "spec", ap_spec(&j));
    ap_set(c, o, "allocation", ap_allocation(c, j.name, &world, &rc));
    ap_set(c, o, "world_size", jv_integer(world));
    ap_set_config(c, o, &j);
    grad = jv_object();
    ap_set(c, grad, "sqr", jv_number(j.grad_sqr));
    ap_set(c, grad, "var", jv_number(j.grad_var));
    ap_set(c, o, "grad", grad);
    ap_set(c, o, "reported_at", jv_number(j.reported_at));
    ap_set(c, o, "sync_prior", jv_number(j.sync_prior));
    ap_set(c, o, "reports", ap_reports(c, j.name));
    state_job_clear(&j);
    ap_reply(c, 200, o);
}

void ap_job_cancel(struct ap_ctx *c)
{
    struct jv *o;
    int was = ap_job_state(c, c->param);
    int rc = state_job_set_state(c->a->state, c->param, STATE_JOB_CANCELLED, c->now);

    if (rc == ERR_CONFLICT) {
        ap_fail(c, 409, "job %s has already ended", c->param);
        return;
    }
    if (rc < 0) {
        ap_state_fail(c, rc, "such job");
        return;
    }
    if (was != STATE_JOB_CANCELLED) /* (a retried cancel tells nothing new) */
        event_note(c->a->state, c->a->log, c->now, LOG_INFO, c->param, NULL, "cancelled",
                   "cancelled by its owner");
    o = jv_object();
    ap_set(c, o, "name", jv_string(c->param));
    ap_set(c, o, "state", jv_string("cancelled"));
    ap_reply(c, 200, o);
}

const char *ap_market_name(enum state_market m)
{
    return m == STATE_MARKET_SPOT ? "spot" : "on-demand";
}

/* The cloud's quotas as the daemon last read them: [{quota, title, unit, limit, used, offers:
 * [{offer, room}]}] (room: the nodes of the offer it still lets castor launch, under its
 * tightest quota, listed with that quota). */
static struct jv *ap_fleet_quotas(struct ap_ctx *c)
{
    const struct ap_metrics *m = &c->a->metrics;
    struct jv *arr = jv_array();

    for (size_t i = 0; i < m->nquotas; i++) {
        struct jv *q = jv_object(), *offers = jv_array();

        ap_set(c, q, "quota", jv_string(m->quotas[i].quota));
        ap_set(c, q, "title", jv_string(m->quotas[i].title));
        ap_set(c, q, "unit", jv_string(m->quotas[i].unit));
        ap_set(c, q, "limit", jv_number(m->quotas[i].limit));
        ap_set(c, q, "used", jv_number(m->quotas[i].used));
        for (size_t r = 0; r < m->nrooms; r++) {
            struct jv *v;

            if (strcmp(m->rooms[r].quota, m->quotas[i].quota) != 0)
                continue;
            v = jv_object();
            ap_set(c, v, "offer", jv_string(m->rooms[r].offer));
            ap_set(c, v, "room", jv_integer(m->rooms[r].room));
            ap_push(c, offers, v);
        }
        ap_set(c, q, "offers", offers);
        ap_push(c, arr, q);
    }
    return arr;
}

void ap_fleet(struct ap_ctx *c)
{
    struct state_node *nodes = NULL;
    double rate = 0;
    struct state_costs costs = {0};
    long long gpus = 0;
    struct jv *o, *arr;
    size_t n = 0;
    int rc = state_nodes_list(c->a->state, AP_LIVE_NODES, &nodes, &n);

    if (rc == 0)
        rc = state_cost_split(c->a->state, &costs);
    if (rc < 0) {
        state_nodes_free(nodes, n);
        ap_state_fail(c, rc, "fleet");
        return;
    }
    o = jv_object();
    arr = jv_array();
    for (size_t i = 0; i < n; i++) {
        struct jv *v = jv_object();

        ap_set(c, v, "instance_id", jv_string(nodes[i].instance_id));
        ap_set(c, v, "state", jv_string(state_node_state_name(nodes[i].state)));
        ap_set(c, v, "provider", jv_string(nodes[i].provider));
        ap_set(c, v, "offer", jv_string(nodes[i].offer));
        ap_set(c, v, "market", jv_string(ap_market_name(nodes[i].market)));
        ap_set(c, v, "zone", jv_string(nodes[i].zone));
        ap_set(c, v, "gpus", jv_integer(nodes[i].gpus));
        ap_set(c, v, "gpu_memory_mib", jv_integer(nodes[i].gpu_memory_mib));
        ap_set(c, v, "price", jv_number(nodes[i].price));
        ap_set(c, v, "heartbeat_at", jv_number(nodes[i].heartbeat_at));
        ap_set(c, v, "notice_at", jv_number(nodes[i].notice_at));
        if (isfinite(nodes[i].fence_s))
            ap_set(c, v, "fence_s", jv_number(nodes[i].fence_s));
        ap_push(c, arr, v);
        rate += nodes[i].price;
        gpus += nodes[i].gpus;
    }
    ap_set(c, o, "nodes", arr);
    ap_set(c, o, "gpus", jv_integer(gpus));
    ap_set(c, o, "cost_rate", jv_number(rate));
    ap_set(c, o, "spent", jv_number(costs.spent));
    /* what no job held: idle GPUs, booting nodes, nodes kept for the next jobs */
    ap_set(c, o, "idle", jv_number(costs.idle));
    /* the daemon's spend limit and what the current period cost (null: no limit) */
    ap_set(c, o, "spend_limit",
           jv_number(c->a->metrics.spend_limit > 0 ? c->a->metrics.spend_limit : NAN));
    ap_set(c, o, "spend_period",
           jv_number(c->a->metrics.spend_limit > 0 ? c->a->metrics.spend_period : NAN));
    ap_set(c, o, "spend_until",
           jv_number(c->a->metrics.spend_limit > 0 ? c->a->metrics.spend_until : NAN));
    ap_set(c, o, "quotas", ap_fleet_quotas(c));
    state_nodes_free(nodes, n);
    ap_reply(c, 200, o);
}

/* A query's time: a date (YYYY-MM-DD, its UTC midnight) or an ISO 8601 time; absent: dflt. 0, or
 * -1 when it is neither. */
static int ap_query_time(struct ap_ctx *c, const char *name, double dflt, double *out)
{
    const char *text = http_request_query(c->req, name);
    char stamp[40];
    int64_t t = 0;

    if (!text) {
        *out = dflt;
        return 0;
    }
    if (strlen(text) == 10 && snprintf(stamp, sizeof(stamp), "%sT00:00:00Z", text) > 0 &&
        timestamp_parse_iso8601(stamp, &t) == 0) {
        *out = (double)t;
        return 0;
    }
    if (strlen(text) < sizeof(stamp) && timestamp_parse_iso8601(text, &t) == 0) {
        *out = (double)t;
        return 0;
    }
    return -1;
}

/* One row of the cost report as JSON, its key under key_name (NULL: none, the total). */
static struct jv *ap_cost_row(struct ap_ctx *c, const char *key_name, const char *key,
                              const struct state_cost_row *r)
{
    struct jv *v = jv_object();

    if (key_name)
        ap_set(c, v, key_name, jv_string(key));
    ap_set(c, v, "on_demand", jv_number(r->on_demand));
    ap_set(c, v, "spot", jv_number(r->spot));
    ap_set(c, v, "static", jv_number(r->fixed));
    ap_set(c, v, "dollars", jv_number(r->dollars));
    return v;
}

void ap_costs(struct ap_ctx *c)
{
    const char *by = http_request_query(c->req, "by");
    enum state_cost_by group = STATE_COST_BY_DAY;
    struct state_cost_row *rows = NULL, sum = {0};
    double since = 0, until = INFINITY;
    struct jv *o, *arr;
    size_t n = 0;
    int rc;

    if (by && strcmp(by, "offer") == 0)
        group = STATE_COST_BY_OFFER;
    else if (by && strcmp(by, "day") != 0) {
        ap_fail(c, 400, "by must be day or offer");
        return;
    }
    if (ap_query_time(c, "since", 0, &since) < 0 ||
        ap_query_time(c, "until", INFINITY, &until) < 0) {
        ap_fail(c, 400, "since and until must be a date (YYYY-MM-DD) or an ISO 8601 time");
        return;
    }
    if (until < since) {
        ap_fail(c, 400, "until is before since");
        return;
    }
    if ((rc = state_cost_report(c->a->state, since, until, group, &rows, &n)) < 0) {
        ap_state_fail(c, rc, "costs");
        return;
    }
    o = jv_object();
    arr = jv_array();
    for (size_t i = 0; i < n; i++) {
        ap_push(
            c, arr,
            ap_cost_row(c, group == STATE_COST_BY_DAY ? "day" : "offer", rows[i].key, &rows[i]));
        sum.on_demand += rows[i].on_demand;
        sum.spot += rows[i].spot;
        sum.fixed += rows[i].fixed;
        sum.dollars += rows[i].dollars;
    }
    ap_set(c, o, "by", jv_string(group == STATE_COST_BY_DAY ? "day" : "offer"));
    ap_set(c, o, "rows", arr);
    ap_set(c, o, "total", ap_cost_row(c, NULL, NULL, &sum));
    state_cost_rows_free(rows, n);
    ap_reply(c, 200, o);
}
