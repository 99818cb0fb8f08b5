/* api_metrics.c: the metrics the daemon fills (the decide-latency histogram, the API's copy of
 * them) and GET /metrics in the Prometheus text format. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/api_internal.h"
#include "control/state.h"

const double api_decide_buckets[API_DECIDE_NBUCKETS] = {0.001, 0.005, 0.01, 0.05,
                                                        0.1,   0.5,   1.0,  5.0};

/* ---- metrics the daemon fills ---- */

int api_metrics_observe_decide(struct api_metrics *m, double seconds)
{
    int b = 0;

    if (!m || !isfinite(seconds) || seconds < 0)
        return ERR_INVAL;
    while (b < API_DECIDE_NBUCKETS && seconds > api_decide_buckets[b])
        b++;
    m->decide_counts[b]++;
    m->decide_sum += seconds;
    return 0;
}

void ap_metrics_free(struct ap_metrics *m)
{
    free(m->jobs);
    free(m->calls);
    free(m->errors);
    free(m->quotas);
    free(m->rooms);
    free(m->prices);
    free(m->strings);
    memset(m, 0, sizeof(*m));
}

/* Copy s into the string block at *pos; returns the copy. */
static const char *ap_put(char *block, size_t *pos, const char *s)
{
    char *at = block + *pos;
    size_t n = strlen(s) + 1;

    memcpy(at, s, n);
    *pos += n;
    return at;
}

const char *const api_node_loss_names[API_NLOSSES] = {
    [API_LOSS_GONE] = "gone",
    [API_LOSS_SILENT] = "silent",
    [API_LOSS_UNREGISTERED] = "unregistered",
    [API_LOSS_STRAY] = "stray",
};

int ap_metrics_copy(const struct api_metrics *m, struct ap_metrics *out)
{
    struct ap_metrics c = {0};
    size_t size = 1, pos = 0;

    for (size_t i = 0; i < m->njobs; i++)
        if (!m->jobs[i].job)
            return ERR_INVAL;
        else
            size += strlen(m->jobs[i].job) + 1;
    for (size_t i = 0; i < m->ncalls; i++)
        if (!m->calls[i].op)
            return ERR_INVAL;
        else
            size += strlen(m->calls[i].op) + 1;
    for (size_t i = 0; i < m->nerrors; i++)
        if (!m->errors[i].op || !m->errors[i].code)
            return ERR_INVAL;
        else
            size += strlen(m->errors[i].op) + strlen(m->errors[i].code) + 2;
    for (size_t i = 0; i < m->nquotas; i++)
        if (!m->quotas[i].quota || !m->quotas[i].title || !m->quotas[i].unit)
            return ERR_INVAL;
        else
            size += strlen(m->quotas[i].quota) + strlen(m->quotas[i].title) +
                    strlen(m->quotas[i].unit) + 3;
    for (size_t i = 0; i < m->nrooms; i++)
        if (!m->rooms[i].offer || !m->rooms[i].quota)
            return ERR_INVAL;
        else
            size += strlen(m->rooms[i].offer) + strlen(m->rooms[i].quota) + 2;
    for (size_t i = 0; i < m->nprices; i++)
        if (!m->prices[i].offer)
            return ERR_INVAL;
        else
            size += strlen(m->prices[i].offer) + 1;
    c.strings = malloc(size);
    c.jobs = calloc(m->njobs + 1, sizeof(*c.jobs));
    c.calls = calloc(m->ncalls + 1, sizeof(*c.calls));
    c.errors = calloc(m->nerrors + 1, sizeof(*c.errors));
    c.quotas = calloc(m->nquotas + 1, sizeof(*c.quotas));
    c.rooms = calloc(m->nrooms + 1, sizeof(*c.rooms));
    c.prices = calloc(m->nprices + 1, sizeof(*c.prices));
    if (!c.strings || !c.jobs || !c.calls || !c.errors || !c.quotas || !c.rooms || !c.prices) {
        ap_metrics_free(&c);
        return ERR_NOMEM;
    }
    for (size_t i = 0; i < m->njobs; i++) {
        c.jobs[i] = m->jobs[i];
        c.jobs[i].job = ap_put(c.strings, &pos, m->jobs[i].job);
    }
    for (size_t i = 0; i < m->ncalls; i++) {
        c.calls[i].op = ap_put(c.strings, &pos, m->calls[i].op);
        c.calls[i].code = "";
        c.calls[i].count = m->calls[i].count;
    }
    for (size_t i = 0; i < m->nerrors; i++) {
        c.errors[i].op = ap_put(c.strings, &pos, m->errors[i].op);
        c.errors[i].code = ap_put(c.strings, &pos, m->errors[i].code);
        c.errors[i].count = m->errors[i].count;
    }
    for (size_t i = 0; i < m->nquotas; i++) {
        c.quotas[i] = m->quotas[i];
        c.quotas[i].quota = ap_put(c.strings, &pos, m->quotas[i].quota);
        c.quotas[i].title = ap_put(c.strings, &pos, m->quotas[i].title);
        c.quotas[i].unit = ap_put(c.strings, &pos, m->quotas[i].unit);
    }
    for (size_t i = 0; i < m->nrooms; i++) {
        c.rooms[i] = m->rooms[i];
        c.rooms[i].offer = ap_put(c.strings, &pos, m->rooms[i].offer);
        c.rooms[i].quota = ap_put(c.strings, &pos, m->rooms[i].quota);
    }
    for (size_t i = 0; i < m->nprices; i++) {
        c.prices[i] = m->prices[i];
        c.prices[i].offer = ap_put(c.strings, &pos, m->prices[i].offer);
    }
    c.nprices = m->nprices;
    c.nquotas = m->nquotas;
    c.nrooms = m->nrooms;
    c.njobs = m->njobs;
    c.ncalls = m->ncalls;
    c.nerrors = m->nerrors;
    memcpy(c.decide_counts, m->decide_counts, sizeof(c.decide_counts));
    c.decide_sum = m->decide_sum;
    c.decide_failures = m->decide_failures;
    memcpy(c.node_losses, m->node_losses, sizeof(c.node_losses));
    c.nodes_unfenced = m->nodes_unfenced;
    c.jobs_waiting = m->jobs_waiting;
    c.spend_limit = m->spend_limit;
    c.spend_period = m->spend_period;
    c.spend_until = m->spend_until;
    *out = c;
    return 0;
}

/* ---- metrics ---- */

/* A label value with Prometheus's escapes (backslash, double quote, newline). */
static void ap_label(FILE *f, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            fputc('\\', f);
        if (*v == '\n')
            fputs("\\n", f);
        else
            fputc(*v, f);
    }
}

static void ap_family(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{label="value"[,label2="value2"]} v */
static void ap_sample(FILE *f, const char *name, const char *l1, const char *v1, const char *l2,
                      const char *v2, double v)
{
    fputs(name, f);
    if (l1) {
        fprintf(f, "{%s=\"", l1);
        ap_label(f, v1);
        if (l2) {
            fprintf(f, "\",%s=\"", l2);
            ap_label(f, v2);
        }
        fputs("\"}", f);
    }
    if (isnan(v))
        fputs(" NaN\n", f);
    else if (isinf(v))
        fputs(v > 0 ? " +Inf\n" : " -Inf\n", f);
    else
        fprintf(f, " %.17g\n", v);
}

/* The fleet by market and offer: nodes, GPUs and dollars per hour of every node not terminated. */
static int ap_metrics_fleet(struct ap_ctx *c, FILE *f)
{
    static const char *const names[3] = {"castor_fleet_nodes", "castor_fleet_gpus",
                                         "castor_fleet_cost_rate_dollars_per_hour"};
    static const char *const helps[3] = {
        "Nodes held (not terminated), by market and offer.",
        "GPUs on the nodes held, by market and offer.",
        "What the nodes held cost, in dollars per hour, by market and offer."};
    struct state_node *nodes = NULL;
    struct state_costs costs = {0};
    size_t n = 0;
    int rc = state_nodes_list(c->a->state, AP_LIVE_NODES, &nodes, &n);

    if (rc < 0)
        return rc;
    for (int k = 0; k < 3; k++) {
        ap_family(f, names[k], "gauge", helps[k]);
        for (size_t i = 0; i < n; i++) {
            double sum = 0;
            int first = 1;

            for (size_t j = 0; j < n && first; j++) /* one line per (market, offer), at its first */
                if (j < i && nodes[j].market == nodes[i].market &&
                    strcmp(nodes[j].offer, nodes[i].offer) == 0)
                    first = 0;
            if (!first)
                continue;
            for (size_t j = i; j < n; j++)
                if (nodes[j].market == nodes[i].market &&
                    strcmp(nodes[j].offer, nodes[i].offer) == 0)
                    sum += k == 0 ? 1.0 : k == 1 ? nodes[j].gpus : nodes[j].price;
            ap_sample(f, names[k], "market", ap_market_name(nodes[i].market), "offer",
                      nodes[i].offer, sum);
        }
    }
    state_nodes_free(nodes, n);
    if ((rc = state_cost_split(c->a->state, &costs)) < 0)
        return rc;
    ap_family(f, "castor_fleet_dollars_total", "counter",
              "Dollars the fleet cost: held by jobs, or idle (no job on those GPUs).");
    ap_sample(f, "castor_fleet_dollars_total", "held", "jobs", NULL, NULL, costs.jobs);
    ap_sample(f, "castor_fleet_dollars_total", "held", "idle", NULL, NULL, costs.idle);
    return 0;
}

/* Jobs by state, and each live job's restarts and replica failures, from the state. */
static int ap_metrics_jobs(struct ap_ctx *c, FILE *f)
{
    struct state_job *jobs = NULL;
    long long count[STATE_JOB_NSTATES] = {0};
    size_t n = 0;
    int rc = state_jobs_list(c->a->state, (1u << STATE_JOB_NSTATES) - 1, &jobs, &n);

    if (rc < 0)
        return rc;
    for (size_t i = 0; i < n; i++)
        count[jobs[i].state]++;
    ap_family(f, "castor_jobs", "gauge", "Jobs by state.");
    for (int s = 0; s < STATE_JOB_NSTATES; s++)
        ap_sample(f, "castor_jobs", "state", state_job_state_name((enum state_job_state)s), NULL,
                  NULL, (double)count[s]);
    for (int k = 0; k < 3; k++) {
        static const char *const names[3] = {
            "castor_job_restarts_total", "castor_job_failures_total", "castor_job_dollars_total"};
        static const char *const helps[3] = {
            "Restarts of each pending or running job.",
            "Replica failures of each pending or running job (each restarts its replicas).",
            "Dollars of each pending or running job: its share of its nodes' cost."};

        ap_family(f, names[k], "counter", helps[k]);
        for (size_t i = 0; i < n; i++)
            if (jobs[i].state == STATE_JOB_PENDING || jobs[i].state == STATE_JOB_RUNNING)
                ap_sample(f, names[k], "job", jobs[i].name, NULL, NULL,
                          k == 0   ? jobs[i].restarts
                          : k == 1 ? jobs[i].failures
                                   : jobs[i].dollars);
    }
    state_jobs_free(jobs, n);
    return 0;
}

/* Job figure k of the daemon's job gauges (ap_metrics_daemon's names): NAN where not known. */
static double ap_job_figure(const struct api_job_metrics *j, int k)
{
    switch (k) {
    case 0:
        return j->goodput;
    case 1:
        return j->speedup;
    case 2:
        return j->batch_size;
    case 3:
        return j->eta > 0 ? j->eta : NAN;
    default:
        return j->eta > 0 && j->deadline > 0 ? j->deadline - j->eta : NAN;
    }
}

/* What the daemon filled: goodput, speedup, batch size, predicted finish and deadline slack per
 * job (where known), the decide latency histogram, provider calls and errors. */
static void ap_metrics_daemon(const struct ap_metrics *m, FILE *f)
{
    static const char *const names[5] = {
        "castor_job_goodput", "castor_job_speedup", "castor_job_batch_size",
        "castor_job_finish_timestamp_seconds", "castor_job_deadline_slack_seconds"};
    static const char *const helps[5] = {
        "Goodput of each job at its configuration, samples per second at full efficiency.",
        "Speedup of each job over one GPU at its initial batch size.",
        "Total batch size of each job.",
        ("When each job that declares its samples is predicted to finish at its configuration, "
         "seconds since the epoch."),
        "Each job's deadline minus its predicted finish: below 0, late at its configuration."};
    long long cum = 0;
    char le[32];

    for (int k = 0; k < 5; k++) {
        ap_family(f, names[k], "gauge", helps[k]);
        for (size_t i = 0; i < m->njobs; i++) {
            double v = ap_job_figure(&m->jobs[i], k);

            if (!isnan(v))
                ap_sample(f, names[k], "job", m->jobs[i].job, NULL, NULL, v);
        }
    }
    ap_family(f, "castor_decide_latency_seconds", "histogram",
              "Time taken by each decide step, in seconds.");
    for (int b = 0; b <= API_DECIDE_NBUCKETS; b++) {
        cum += m->decide_counts[b];
        if (b < API_DECIDE_NBUCKETS)
            snprintf(le, sizeof(le), "%g", api_decide_buckets[b]);
        else
            snprintf(le, sizeof(le), "+Inf");
        ap_sample(f, "castor_decide_latency_seconds_bucket", "le", le, NULL, NULL, (double)cum);
    }
    ap_sample(f, "castor_decide_latency_seconds_sum", NULL, NULL, NULL, NULL, m->decide_sum);
    ap_sample(f, "castor_decide_latency_seconds_count", NULL, NULL, NULL, NULL, (double)cum);
    ap_family(f, "castor_decide_failures_total", "counter",
              "Decide steps whose policy failed, the allocation kept as it was.");
    ap_sample(f, "castor_decide_failures_total", NULL, NULL, NULL, NULL,
              (double)m->decide_failures);
    ap_family(f, "castor_node_losses_total", "counter",
              "Nodes lost, by reason: gone (the cloud took the instance), silent (its agent "
              "unheard), unregistered (its agent never came up), stray.");
    for (int r = 0; r < API_NLOSSES; r++)
        ap_sample(f, "castor_node_losses_total", "reason", api_node_loss_names[r], NULL, NULL,
                  (double)m->node_losses[r]);
    ap_family(f, "castor_nodes_unfenced", "gauge",
              "Silent static nodes whose jobs wait, since castor cannot stop their replicas: "
              "`castor down NODE` once a node is off.");
    ap_sample(f, "castor_nodes_unfenced", NULL, NULL, NULL, NULL, (double)m->nodes_unfenced);
    ap_family(f, "castor_jobs_waiting_for_old_replicas", "gauge",
              "Running jobs whose new replicas wait for their old ones that other nodes say are "
              "still alive (a checkpoint being written; one that never ends is its node's to "
              "settle: `castor down`, or terminate it).");
    ap_sample(f, "castor_jobs_waiting_for_old_replicas", NULL, NULL, NULL, NULL,
              (double)m->jobs_waiting);
    if (m->spend_limit > 0) {
        ap_family(f, "castor_spend_limit_dollars", "gauge",
                  "The fleet's spend limit per period (spend_limit).");
        ap_sample(f, "castor_spend_limit_dollars", NULL, NULL, NULL, NULL, m->spend_limit);
        ap_family(f, "castor_spend_period_dollars", "gauge",
                  "What the fleet cost in the current period: at the limit castor stops renting.");
        ap_sample(f, "castor_spend_period_dollars", NULL, NULL, NULL, NULL, m->spend_period);
    }
    ap_family(f, "castor_provider_calls_total", "counter", "Calls to the provider, by operation.");
    for (size_t i = 0; i < m->ncalls; i++)
        ap_sample(f, "castor_provider_calls_total", "op", m->calls[i].op, NULL, NULL,
                  (double)m->calls[i].count);
    ap_family(f, "castor_provider_errors_total", "counter",
              "Errors the provider answered, by operation and code.");
    for (size_t i = 0; i < m->nerrors; i++)
        ap_sample(f, "castor_provider_errors_total", "op", m->errors[i].op, "code",
                  m->errors[i].code, (double)m->errors[i].count);
    if (m->nquotas == 0)
        return;
    for (int k = 0; k < 2; k++) {
        static const char *const qnames[2] = {"castor_quota_limit", "castor_quota_used"};
        static const char *const qhelps[2] = {
            "A cloud quota that limits launches: what may be held, in its unit.",
            "What a cloud quota counts now, everything it counts (not only castor's): as last "
            "read, with castor's launches since."};

        ap_family(f, qnames[k], "gauge", qhelps[k]);
        for (size_t i = 0; i < m->nquotas; i++)
            ap_sample(f, qnames[k], "quota", m->quotas[i].quota, "unit", m->quotas[i].unit,
                      k ? m->quotas[i].used : m->quotas[i].limit);
    }
    ap_family(f, "castor_offer_quota_room_nodes", "gauge",
              "Nodes of an offer that its quotas still let castor launch (0: ask the cloud for an "
              "increase of the quota named).");
    for (size_t i = 0; i < m->nrooms; i++)
        ap_sample(f, "castor_offer_quota_room_nodes", "offer", m->rooms[i].offer, "quota",
                  m->rooms[i].quota, (double)m->rooms[i].room);
    ap_family(f, "castor_offer_price_dollars_per_hour", "gauge",
              "An offer's price per node as the planner last saw it (NaN: unknown; castor's "
              "planner does not launch it).");
    for (size_t i = 0; i < m->nprices; i++)
        ap_sample(f, "castor_offer_price_dollars_per_hour", "market",
                  m->prices[i].spot ? "spot" : "on-demand", "offer", m->prices[i].offer,
                  m->prices[i].price);
    ap_family(f, "castor_offer_preemptions_per_node_hour", "gauge",
              "The preemption rate the planner counts on for an offer: the configured prior, "
              "updated with the notices castor's own nodes there got over the last 7 days.");
    for (size_t i = 0; i < m->nprices; i++)
        if (!isnan(m->prices[i].rate))
            ap_sample(f, "castor_offer_preemptions_per_node_hour", "market",
                      m->prices[i].spot ? "spot" : "on-demand", "offer", m->prices[i].offer,
                      m->prices[i].rate);
}

void ap_metrics_text(struct ap_ctx *c)
{
    char *text = NULL, code[8];
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    int rc;

    if (!f) {
        ap_fail(c, 500, "out of memory");
        return;
    }
    rc = ap_metrics_fleet(c, f);
    if (rc == 0)
        rc = ap_metrics_jobs(c, f);
    if (rc == 0) {
        ap_metrics_daemon(&c->a->metrics, f);
        ap_family(f, "castor_api_report_commits_total", "counter",
                  "Transactions that stored reports (several reports share one under load).");
        ap_sample(f, "castor_api_report_commits_total", NULL, NULL, NULL, NULL,
                  (double)c->a->batches);
        ap_family(f, "castor_api_reports_committed_total", "counter",
                  "Reports those transactions held, stored or refused.");
        ap_sample(f, "castor_api_reports_committed_total", NULL, NULL, NULL, NULL,
                  (double)c->a->batched);
        ap_family(f, "castor_api_requests_total", "counter",
                  "Requests the API answered, by status (this one not yet counted).");
        for (int s = 0; s < AP_STATUS_MAX; s++)
            if (c->a->answered[s] > 0) {
                snprintf(code, sizeof(code), "%d", s);
                ap_sample(f, "castor_api_requests_total", "code", code, NULL, NULL,
                          (double)c->a->answered[s]);
            }
    }
    if (fclose(f) != 0 && rc == 0)
        rc = ERR_NOMEM;
    if (rc < 0) {
        free(text);
        ap_state_fail(c, rc, "metrics");
        return;
    }
    c->resp->status = 200;
    c->resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
    c->resp->body = text;
    c->resp->body_len = len;
}
