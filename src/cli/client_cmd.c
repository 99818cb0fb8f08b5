/* client_cmd.c: `castor status`, `castor jobs`, `castor submit`, `castor cancel`, `castor events`,
 * `castor down`: a thin client of the controller's API, with a readable table or --json. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/cli.h"
#include "control/config.h"
#include "util/conf.h"
#include "util/crypto.h"
#include "util/file.h"
#include "util/http_client.h"
#include "util/json.h"
#include "util/strbuf.h"
#include "util/timestamp.h"

#define CL_DEFAULT_URL "http://127.0.0.1:8470"

struct cl_conn {
    char base[1024];
    char *token; /* owned; wiped */
    const char *ca_file;
    struct http_client *http;
};

static void cl_usage(FILE *f)
{
    fprintf(
        f,
        "usage: castor status [--json] [--url URL]\n"
        "       castor jobs [--state pending,running,...] [--json] [--url URL]\n"
        "       castor submit JOB.yaml [--json] [--url URL]\n"
        "       castor cancel NAME [--json] [--url URL]\n"
        "       castor events NAME [--json] [--url URL]\n"
        "       castor down NODE [--json] [--url URL]\n"
        "       castor costs [--since DATE] [--until DATE] [--by day|offer] [--json] [--url URL]\n"
        "\n"
        "costs: what the fleet cost, by UTC day or by offer, split into castor's on-demand\n"
        "and spot nodes and static ones (DATE: YYYY-MM-DD, UTC, or an ISO 8601 time).\n"
        "down: a static node is off (castor cannot stop what runs on a node it did not\n"
        "launch): its jobs restart elsewhere. Say it only once the node is off.\n"
        "The controller's address: --url, else CASTOR_URL (default %s); a CA file for\n"
        "its certificate: CASTOR_CA_FILE. The user token: CASTOR_USER_TOKEN, else the file\n"
        "named by CASTOR_TOKEN_FILE (readable by its owner only); never an argument.\n"
        "A job file has the keys of a job in config/castor.yaml's jobs list.\n",
        CL_DEFAULT_URL);
}

static void cl_close(struct cl_conn *c)
{
    if (c->token) {
        crypto_wipe(c->token, strlen(c->token));
        free(c->token);
    }
    http_client_free(c->http);
    memset(c, 0, sizeof(*c));
}

/* The user token from the environment, or from a file only its owner may read. */
static int cl_token(struct cl_conn *c, FILE *err)
{
    const char *env = getenv("CASTOR_USER_TOKEN"), *path = getenv("CASTOR_TOKEN_FILE");
    struct stat sb;
    size_t len = 0;
    char *data = NULL;

    if (env && env[0])
        return (c->token = strdup(env)) ? 0 : -1;
    if (!path || !path[0]) {
        fprintf(err, "castor: no token: set CASTOR_USER_TOKEN or CASTOR_TOKEN_FILE\n");
        return -1;
    }
    if (stat(path, &sb) != 0 || file_read_all(path, &data, &len, NULL) < 0) {
        fprintf(err, "castor: %s: cannot read the token file\n", path);
        return -1;
    }
    if (sb.st_mode & 077) {
        crypto_wipe(data, len);
        free(data);
        fprintf(err, "castor: %s: a token file must be readable by its owner only (chmod 600)\n",
                path);
        return -1;
    }
    while (len > 0 && (data[len - 1] == '\n' || data[len - 1] == '\r'))
        data[--len] = '\0';
    c->token = data;
    return 0;
}

static int cl_open(struct cl_conn *c, const char *url, FILE *err)
{
    size_t n;

    memset(c, 0, sizeof(*c));
    if (!url)
        url = getenv("CASTOR_URL");
    if (!url || !url[0])
        url = CL_DEFAULT_URL;
    n = strlen(url);
    while (n > 0 && url[n - 1] == '/')
        n--;
    if (n >= sizeof(c->base)) {
        fprintf(err, "castor: the URL is too long\n");
        return -1;
    }
    memcpy(c->base, url, n);
    c->ca_file = getenv("CASTOR_CA_FILE");
    if (cl_token(c, err) < 0 || http_client_new(&c->http) < 0) {
        cl_close(c);
        return -1;
    }
    return 0;
}

/* One request; *out gets the parsed body (NULL when not JSON). The status, or -1 with a message
 * when there is no answer. */
static long cl_call(struct cl_conn *c, const char *method, const char *path, const char *body,
                    struct jv **out, FILE *err)
{
    char url[2048], auth[API_TOKEN_MAX + 16];
    const struct http_client_header h[2] = {{"Authorization", auth},
                                            {"Content-Type", "application/json"}};
    struct http_client_request req = {.method = method, .url = url, .headers = h};
    struct http_client_response r = {0};
    struct error e = {0};
    char buf[800];
    long status;
    int rc;

    snprintf(url, sizeof(url), "%s%s", c->base, path);
    snprintf(auth, sizeof(auth), "Bearer %s", c->token);
    req.nheaders = body ? 2 : 1;
    req.body = body;
    req.body_len = body ? strlen(body) : 0;
    req.ca_file = c->ca_file;
    rc = http_client_do(c->http, &req, &r, &e);
    crypto_wipe(auth, sizeof(auth));
    if (rc < 0) {
        fprintf(err, "castor: cannot reach the controller at %s: %s\n", c->base,
                err_format(&e, buf, sizeof(buf)));
        return -1;
    }
    status = r.status;
    *out = NULL;
    if (jv_parse(r.body, r.body_len, out, NULL) < 0)
        *out = NULL;
    http_client_response_clear(&r);
    return status;
}

/* A member an answer must have: its key and type (JV_REAL: any number). */
struct cl_member {
    const char *key;
    enum jv_type type;
};

/* What each answer the client reads must hold (a list ending in {NULL}): an answer without it is
 * not castor's (a proxy's page, --url naming another server). A node of unknown price makes the
 * fleet's cost_rate null: not required. */
static const struct cl_member cl_fleet_shape[] = {
    {"nodes", JV_ARRAY}, {"gpus", JV_REAL}, {NULL, JV_NULL}};
static const struct cl_member cl_jobs_shape[] = {{"jobs", JV_ARRAY}, {NULL, JV_NULL}};
static const struct cl_member cl_events_shape[] = {{"events", JV_ARRAY}, {NULL, JV_NULL}};
static const struct cl_member cl_costs_shape[] = {
    {"by", JV_STRING}, {"rows", JV_ARRAY}, {"total", JV_OBJECT}, {NULL, JV_NULL}};
static const struct cl_member cl_job_shape[] = {
    {"name", JV_STRING}, {"state", JV_STRING}, {NULL, JV_NULL}};
static const struct cl_member cl_node_shape[] = {
    {"instance_id", JV_STRING}, {"state", JV_STRING}, {NULL, JV_NULL}};

/* 1 when v is an object with every member of shape, of its type; else says why on err for cmd
 * and returns 0. */
static int cl_shape_ok(const char *cmd, const struct jv *v, const struct cl_member *shape,
                       FILE *err)
{
    static const char *const names[] = {"null",     "a boolean", "a number", "a number",
                                        "a string", "an array",  "an object"};

    if (jv_type_of(v) != JV_OBJECT) {
        fprintf(err,
                "castor %s: the answer is not castor's: not a JSON object (is the URL the "
                "controller's?)\n",
                cmd);
        return 0;
    }
    for (; shape->key; shape++) {
        enum jv_type t = jv_type_of(jv_get(v, shape->key));

        if (t == shape->type || (shape->type == JV_REAL && t == JV_INTEGER))
            continue;
        fprintf(err,
                "castor %s: the answer is not castor's: its \"%s\" is not %s (is the URL the "
                "controller's?)\n",
                cmd, shape->key, names[shape->type]);
        return 0;
    }
    return 1;
}

/* An error answer on err; returns 1. */
static int cl_failed(const char *cmd, long status, const struct jv *v, FILE *err)
{
    const char *msg = jv_string_value(jv_get(v, "error"));

    fprintf(err, "castor %s: the controller answered %ld: %s\n", cmd, status,
            msg ? msg : "(no reason given)");
    return 1;
}

/* One request of the command cmd, answered `want` when it went well: then its answer, which must
 * have the members of shape (else it is a failure, said on err), goes out as JSON with json (the
 * member json_key of it, or all when NULL), else *print is set and the caller prints *v its own
 * way; any other answer is reported with the controller's reason. *v is the answer (the caller's
 * to jv_free, NULL when there was none). Returns the command's exit status (0, or 1 for a
 * failure). */
static int cl_answer(struct cl_conn *c, const char *cmd, const char *method, const char *path,
                     const char *body, long want, const struct cl_member *shape, int json,
                     const char *json_key, FILE *out, FILE *err, struct jv **v, int *print)
{
    long st = cl_call(c, method, path, body, v, err);

    *print = 0;
    if (st < 0)
        return 1;
    if (st != want)
        return cl_failed(cmd, st, *v, err);
    if (!cl_shape_ok(cmd, *v, shape, err))
        return 1;
    if (json)
        return jv_write(json_key ? jv_get(*v, json_key) : *v, out) < 0;
    *print = 1;
    return 0;
}

/* One GET of path for the command cmd: on 200 with an answer of shape, the answer as JSON (the
 * member json_key of it, or all when NULL) or, without json, as show prints it; the controller's
 * reason otherwise. Returns the command's exit status (0, or 1 for a failure). */
static int cl_show(struct cl_conn *c, const char *cmd, const char *path,
                   const struct cl_member *shape, const char *json_key, int json,
                   void (*show)(const struct jv *v, FILE *out), FILE *out, FILE *err)
{
    struct jv *v = NULL;
    int print,
        rc = cl_answer(c, cmd, "GET", path, NULL, 200, shape, json, json_key, out, err, &v, &print);

    if (print)
        show(v, out);
    jv_free(v);
    return rc;
}

static void cl_time(double t, char *buf, size_t size)
{
    char iso[TIMESTAMP_ISO8601_LEN + 1];

    if (isfinite(t) && timestamp_format_iso8601((int64_t)t, iso) == 0)
        snprintf(buf, size, "%s", iso);
    else
        snprintf(buf, size, "-");
}

static double cl_num(const struct jv *o, const char *key)
{
    double v;

    return jv_number_value(jv_get(o, key), &v) == 0 ? v : NAN;
}

static const char *cl_str(const struct jv *o, const char *key)
{
    const char *s = jv_string_value(jv_get(o, key));

    return s ? s : "-";
}

/* Why each pending job waits, where its events say (the list's `waiting`): a line each. */
static void cl_waiting(const struct jv *jobs, FILE *out)
{
    for (size_t i = 0; i < jv_size(jobs); i++) {
        const struct jv *j = jv_at(jobs, i);

        if (jv_string_value(jv_get(j, "waiting")))
            fprintf(out, "%s waits: %s\n", cl_str(j, "name"), cl_str(j, "waiting"));
    }
}

/* The answer's jobs, a line each; then why each failed job failed, and why each pending job
 * waits where its events say. */
static void cl_jobs_table(const struct jv *v, FILE *out)
{
    const struct jv *jobs = jv_get(v, "jobs");

    fprintf(out, "%-32s %-10s %-21s %10s %10s %8s %8s %10s %-21s\n", "NAME", "STATE", "SUBMITTED",
            "PROGRESS", "CHECKPOINT", "RESTARTS", "FAILURES", "COST", "ETA");
    for (size_t i = 0; i < jv_size(jobs); i++) {
        const struct jv *j = jv_at(jobs, i);
        char when[32], eta[32], cost[32];

        cl_time(cl_num(j, "submitted_at"), when, sizeof(when));
        cl_time(cl_num(j, "eta"), eta, sizeof(eta)); /* null: not known, "-" */
        snprintf(cost, sizeof(cost), "$%.2f", cl_num(j, "dollars"));
        fprintf(out, "%-32s %-10s %-21s %10.4g %10.4g %8.0f %8.0f %10s %-21s\n", cl_str(j, "name"),
                cl_str(j, "state"), when, cl_num(j, "progress"), cl_num(j, "checkpoint_progress"),
                cl_num(j, "restarts"), cl_num(j, "failures"), cost, eta);
    }
    for (size_t i = 0; i < jv_size(jobs); i++) {
        const struct jv *j = jv_at(jobs, i);

        if (strcmp(cl_str(j, "state"), "failed") == 0)
            fprintf(out, "%s failed: %s\n", cl_str(j, "name"), cl_str(j, "failure"));
    }
    cl_waiting(jobs, out);
}

/* The cloud's quotas as /v1/fleet lists them: a line each, and each offer they leave no room. */
static void cl_quotas(const struct jv *quotas, FILE *out)
{
    for (size_t i = 0; i < jv_size(quotas); i++) {
        const struct jv *q = jv_at(quotas, i), *offers = jv_get(q, "offers");

        fprintf(out, "quota %s (%s): %.0f of %.0f %s in use\n", cl_str(q, "title"),
                cl_str(q, "quota"), cl_num(q, "used"), cl_num(q, "limit"), cl_str(q, "unit"));
        for (size_t k = 0; k < jv_size(offers); k++)
            if (cl_num(jv_at(offers, k), "room") <= 0)
                fprintf(out, "  %s: no room for another node (ask the cloud for more)\n",
                        cl_str(jv_at(offers, k), "offer"));
    }
}

void cli_spend_line(const struct jv *fleet, double now, FILE *out)
{
    double limit = cl_num(fleet, "spend_limit"), spent = cl_num(fleet, "spend_period");
    double rate = cl_num(fleet, "cost_rate"), until = cl_num(fleet, "spend_until"), at;
    char when[TIMESTAMP_ISO8601_LEN + 1];

    fprintf(out, "spend limit: $%.2f of $%.2f this period", spent, limit);
    if (spent >= limit) {
        fprintf(out, ": reached, nothing is rented until the next\n");
        return;
    }
    at = rate > 0 ? now + (limit - spent) / rate * 3600 : INFINITY;
    if (isfinite(until) && at >= until && timestamp_format_iso8601((int64_t)until, when) == 0)
        fprintf(out, "; at $%.2f/h it lasts past the period's end (%s)", rate, when);
    else if (isfinite(at) && timestamp_format_iso8601((int64_t)at, when) == 0)
        fprintf(out, "; at $%.2f/h the limit comes in %.1f h (%s), before the period ends", rate,
                (at - now) / 3600, when);
    fprintf(out, "\n");
}

static int cl_status(struct cl_conn *c, int json, FILE *out, FILE *err)
{
    static const char *const states[] = {"pending", "running", "finished", "cancelled", "failed"};
    struct jv *fleet = NULL, *jobs = NULL, *both;
    const struct jv *nodes, *list;
    int print, rc = cl_answer(c, "status", "GET", "/v1/fleet", NULL, 200, cl_fleet_shape, 0, NULL,
                              out, err, &fleet, &print);

    if (rc == 0)
        rc = cl_answer(c, "status", "GET", "/v1/jobs", NULL, 200, cl_jobs_shape, 0, NULL, out, err,
                       &jobs, &print);
    if (rc != 0)
        goto out;
    if (json) {
        both = jv_object();
        jv_set(both, "fleet", jv_ref(fleet));
        jv_set(both, "jobs", jv_ref(jv_get(jobs, "jobs")));
        rc = jv_write(both, out) < 0;
        jv_free(both);
        goto out;
    }
    nodes = jv_get(fleet, "nodes");
    fprintf(out, "fleet: %zu nodes, %.0f GPUs, $%.2f/h, $%.2f spent ($%.2f on GPUs no job held)\n",
            jv_size(nodes), cl_num(fleet, "gpus"), cl_num(fleet, "cost_rate"),
            cl_num(fleet, "spent"), cl_num(fleet, "idle"));
    if (isfinite(cl_num(fleet, "spend_limit")))
        cli_spend_line(fleet, (double)time(NULL), out);
    cl_quotas(jv_get(fleet, "quotas"), out);
    if (jv_size(nodes) > 0)
        fprintf(out, "%-24s %-10s %-32s %-10s %5s %9s\n", "INSTANCE", "STATE", "OFFER", "MARKET",
                "GPUS", "PRICE/H");
    for (size_t i = 0; i < jv_size(nodes); i++) {
        const struct jv *n = jv_at(nodes, i);

        fprintf(out, "%-24s %-10s %-32s %-10s %5.0f %9.3f\n", cl_str(n, "instance_id"),
                cl_str(n, "state"), cl_str(n, "offer"), cl_str(n, "market"), cl_num(n, "gpus"),
                cl_num(n, "price"));
    }
    list = jv_get(jobs, "jobs");
    fprintf(out, "jobs:");
    for (size_t s = 0; s < sizeof(states) / sizeof(states[0]); s++) {
        int count = 0;

        for (size_t i = 0; i < jv_size(list); i++)
            count += strcmp(cl_str(jv_at(list, i), "state"), states[s]) == 0;
        fprintf(out, "%s %d %s", s ? "," : "", count, states[s]);
    }
    fprintf(out, "\n");
    cl_waiting(list, out);
out:
    jv_free(fleet);
    jv_free(jobs);
    return rc;
}

static int cl_jobs(struct cl_conn *c, const char *filter, int json, FILE *out, FILE *err)
{
    char path[512];

    if (filter && strspn(filter, "abcdefghijklmnopqrstuvwxyz,") != strlen(filter)) {
        fprintf(err, "castor jobs: --state takes a comma-separated list of states\n");
        return 2;
    }
    snprintf(path, sizeof(path), "/v1/jobs%s%s", filter ? "?state=" : "", filter ? filter : "");
    return cl_show(c, "jobs", path, cl_jobs_shape, "jobs", json, cl_jobs_table, out, err);
}

/* A query argument's value: what a date or an ISO 8601 time may hold (the API checks it). */
static int cl_query_ok(const char *s)
{
    return s && s[0] && strspn(s, "0123456789-:TZ.+") == strlen(s) && strlen(s) < 40;
}

/* One row of the cost table. */
static void cl_cost_row(const char *key, const struct jv *r, FILE *out)
{
    fprintf(out, "%-40s %12.2f %12.2f %12.2f %12.2f\n", key, cl_num(r, "on_demand"),
            cl_num(r, "spot"), cl_num(r, "static"), cl_num(r, "dollars"));
}

/* The cost answer as a table: a row per day or offer, then the total. */
static void cl_costs_table(const struct jv *v, FILE *out)
{
    const char *key = strcmp(cl_str(v, "by"), "offer") == 0 ? "offer" : "day";
    const struct jv *rows = jv_get(v, "rows");

    fprintf(out, "%-40s %12s %12s %12s %12s\n", strcmp(key, "day") == 0 ? "DAY (UTC)" : "OFFER",
            "ON-DEMAND $", "SPOT $", "STATIC $", "TOTAL $");
    for (size_t i = 0; i < jv_size(rows); i++)
        cl_cost_row(cl_str(jv_at(rows, i), key), jv_at(rows, i), out);
    cl_cost_row("total", jv_get(v, "total"), out);
}

/* Append "&name=value" to the query in b, the value percent-encoded (a time's '+' would read as
 * a space); nothing when value is NULL. */
static void cl_query_add(struct strbuf *b, const char *name, const char *value)
{
    if (!value)
        return;
    strbuf_printf(b, "&%s=", name);
    strbuf_add_uri_encoded(b, value, strlen(value));
}

static int cl_costs(struct cl_conn *c, const char *since, const char *until, const char *by,
                    int json, FILE *out, FILE *err)
{
    struct strbuf path = {0};
    int rc;

    strbuf_str(&path, "/v1/costs?by=");
    strbuf_str(&path, by ? by : "day");
    cl_query_add(&path, "since", since);
    cl_query_add(&path, "until", until);
    if (path.failed) {
        strbuf_free(&path);
        fprintf(err, "castor costs: out of memory\n");
        return 1;
    }
    rc = cl_show(c, "costs", path.p, cl_costs_shape, NULL, json, cl_costs_table, out, err);
    strbuf_free(&path);
    return rc;
}

struct cl_strip {
    struct jv *to;
    int rc;
};

static int cl_strip_entry(void *ctx, const char *key, const struct jv *val)
{
    struct cl_strip *k = ctx;

    if (jv_type_of(val) != JV_NULL && jv_set(k->to, key, jv_ref(val)) < 0)
        k->rc = -1;
    return k->rc;
}

/* The spec as the API takes it: the fields that are null (not given) left out. */
static char *cl_request_body(const char *spec)
{
    struct jv *v = NULL;
    struct cl_strip k = {jv_object(), 0};
    char *text = NULL;

    if (k.to && jv_parse(spec, strlen(spec), &v, NULL) == 0 && jv_each(v, cl_strip_entry, &k) == 0)
        jv_dump(k.to, &text);
    jv_free(v);
    jv_free(k.to);
    return text;
}

static int cl_submit(struct cl_conn *c, const char *file, int json, FILE *out, FILE *err)
{
    struct conf *doc = NULL;
    struct error e = {0};
    struct jv *v = NULL;
    char *spec = NULL, *name = NULL, *body = NULL, buf[800];
    int print, rc;

    if (conf_load(file, &doc, &e) < 0 || config_job_spec(doc->root, 0, &spec, &name, &e) < 0) {
        fprintf(err, "castor submit: %s\n", err_format(&e, buf, sizeof(buf)));
        conf_free(doc);
        return 2;
    }
    if (!(body = cl_request_body(spec))) {
        fprintf(err, "castor submit: out of memory\n");
        free(spec);
        free(name);
        conf_free(doc);
        return 1;
    }
    rc = cl_answer(c, "submit", "POST", "/v1/jobs", body, 201, cl_job_shape, json, NULL, out, err,
                   &v, &print);
    free(body);
    if (print) { /* and what the controller cannot do for it */
        const struct jv *w = jv_get(v, "warnings");

        fprintf(out, "submitted %s (%s)\n", name, cl_str(v, "state"));
        for (size_t i = 0; i < jv_size(w); i++)
            if (jv_string_value(jv_at(w, i)))
                fprintf(err, "castor submit: warning: %s\n", jv_string_value(jv_at(w, i)));
    }
    jv_free(v);
    free(spec);
    free(name);
    conf_free(doc);
    return rc;
}

/* 1 when name can be a job's name; else says so for cmd on err. */
static int cl_name_ok(const char *cmd, const char *name, FILE *err)
{
    if (!name[0] || strlen(name) > CONFIG_NAME_MAX ||
        strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
            strlen(name)) {
        fprintf(err, "castor %s: \"%s\" is not a %s name\n", cmd, name,
                strcmp(cmd, "down") == 0 ? "node" : "job");
        return 0;
    }
    return 1;
}

/* The answer's events, a line each, oldest first: time, kind, node, message. */
static void cl_events_table(const struct jv *v, FILE *out)
{
    const struct jv *evs = jv_get(v, "events");

    for (size_t i = 0; i < jv_size(evs); i++) {
        const struct jv *e = jv_at(evs, i);
        char when[32];

        cl_time(cl_num(e, "at"), when, sizeof(when));
        fprintf(out, "%-21s %-10s %-24s %s\n", when, cl_str(e, "kind"), cl_str(e, "node"),
                cl_str(e, "message"));
    }
}

/* The job's events (cl_events_table), or the answer as JSON. */
static int cl_events(struct cl_conn *c, const char *name, int json, FILE *out, FILE *err)
{
    char path[512];

    if (!cl_name_ok("events", name, err))
        return 2;
    snprintf(path, sizeof(path), "/v1/jobs/%s/events?limit=500", name);
    return cl_show(c, "events", path, cl_events_shape, NULL, json, cl_events_table, out, err);
}

/* One request that acts on the thing named (a job or a node): its answer as JSON, or done (a
 * format with one %s, the name) on 200 with an answer of shape; the controller's reason
 * otherwise. */
static int cl_act(struct cl_conn *c, const char *cmd, const char *method, const char *path,
                  const char *body, const struct cl_member *shape, const char *name,
                  const char *done, int json, FILE *out, FILE *err)
{
    struct jv *v = NULL;
    int print,
        rc = cl_answer(c, cmd, method, path, body, 200, shape, json, NULL, out, err, &v, &print);

    if (print)
        fprintf(out, done, name);
    jv_free(v);
    return rc;
}

static int cl_cancel(struct cl_conn *c, const char *name, int json, FILE *out, FILE *err)
{
    char path[512];

    if (!cl_name_ok("cancel", name, err))
        return 2;
    snprintf(path, sizeof(path), "/v1/jobs/%s", name);
    return cl_act(c, "cancel", "DELETE", path, NULL, cl_job_shape, name, "cancelled %s\n", json,
                  out, err);
}

/* POST /v1/nodes/{id}/down: the operator says the static node is off. */
static int cl_down(struct cl_conn *c, const char *id, int json, FILE *out, FILE *err)
{
    char path[512];

    if (!cl_name_ok("down", id, err))
        return 2;
    snprintf(path, sizeof(path), "/v1/nodes/%s/down", id);
    return cl_act(c, "down", "POST", path, "{}", cl_node_shape, id,
                  "%s is down: its jobs restart elsewhere from their checkpoints\n", json, out,
                  err);
}

int cli_client(int argc, char **argv, FILE *out, FILE *err)
{
    const char *cmd = argv[0], *url = NULL, *filter = NULL, *arg = NULL, *since = NULL,
               *until = NULL, *by = NULL;
    int json = 0, rc,
        want_arg = strcmp(cmd, "submit") == 0 || strcmp(cmd, "cancel") == 0 ||
                   strcmp(cmd, "events") == 0 || strcmp(cmd, "down") == 0;
    struct cl_conn c;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--url") == 0 && i + 1 < argc) {
            url = argv[++i];
        } else if (strcmp(argv[i], "--state") == 0 && i + 1 < argc && strcmp(cmd, "jobs") == 0) {
            filter = argv[++i];
        } else if (strcmp(argv[i], "--since") == 0 && i + 1 < argc && strcmp(cmd, "costs") == 0) {
            since = argv[++i];
        } else if (strcmp(argv[i], "--until") == 0 && i + 1 < argc && strcmp(cmd, "costs") == 0) {
            until = argv[++i];
        } else if (strcmp(argv[i], "--by") == 0 && i + 1 < argc && strcmp(cmd, "costs") == 0) {
            by = argv[++i];
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            cl_usage(out);
            return 0;
        } else if (want_arg && !arg && argv[i][0] != '-') {
            arg = argv[i];
        } else {
            fprintf(err, "castor %s: unexpected argument \"%s\"\n", cmd, argv[i]);
            cl_usage(err);
            return 2;
        }
    }
    if (want_arg && !arg) {
        fprintf(err, "castor %s: %s\n", cmd,
                strcmp(cmd, "submit") == 0 ? "a job file is required"
                : strcmp(cmd, "down") == 0 ? "a node's instance id is required"
                                           : "a job name is required");
        cl_usage(err);
        return 2;
    }
    if ((since && !cl_query_ok(since)) || (until && !cl_query_ok(until)) ||
        (by && strcmp(by, "day") != 0 && strcmp(by, "offer") != 0)) {
        fprintf(err, "castor costs: --since and --until take a date (YYYY-MM-DD) or an ISO 8601 "
                     "time, --by day or offer\n");
        return 2;
    }
    if (cl_open(&c, url, err) < 0)
        return 1;
    if (strcmp(cmd, "status") == 0)
        rc = cl_status(&c, json, out, err);
    else if (strcmp(cmd, "jobs") == 0)
        rc = cl_jobs(&c, filter, json, out, err);
    else if (strcmp(cmd, "submit") == 0)
        rc = cl_submit(&c, arg, json, out, err);
    else if (strcmp(cmd, "events") == 0)
        rc = cl_events(&c, arg, json, out, err);
    else if (strcmp(cmd, "down") == 0)
        rc = cl_down(&c, arg, json, out, err);
    else if (strcmp(cmd, "costs") == 0)
        rc = cl_costs(&c, since, until, by, json, out, err);
    else
        rc = cl_cancel(&c, arg, json, out, err);
    cl_close(&c);
    return rc;
}
