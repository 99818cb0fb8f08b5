/* api.c: the controller's HTTP API: tokens, the API's setup, the helpers every endpoint answers
 * with (body parsing, strict validation, JSON answers, errors), routing and api_handle. The
 * endpoints are in api_nodes.c, api_reports.c, api_jobs.c and api_metrics.c. */
#include "control/api.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "control/api_internal.h"
#include "util/crypto.h"
#include "util/file.h"
#include "util/json.h"
#include "util/log.h"

#define AP_JOB_TOKEN_PREFIX "cj1."                    /* a per-job token (api_job_token) */
#define AP_JOB_KEY_LABEL "castor per-job tokens v1"   /* their key: this under the job token */
#define AP_NODE_TOKEN_PREFIX "cn1."                   /* a per-node token (api_node_token) */
#define AP_NODE_KEY_LABEL "castor per-node tokens v1" /* their key: this under the node token */

static const char *const ap_role_names[API_NROLES] = {
    [API_ROLE_NODE] = "node",
    [API_ROLE_JOB] = "job",
    [API_ROLE_USER] = "user",
    [API_ROLE_METRICS] = "metrics",
};

static const char *const ap_env[API_NROLES] = {
    [API_ROLE_NODE] = API_ENV_NODE_TOKEN,
    [API_ROLE_JOB] = API_ENV_JOB_TOKEN,
    [API_ROLE_USER] = API_ENV_USER_TOKEN,
    [API_ROLE_METRICS] = API_ENV_METRICS_TOKEN,
};

/* ---- tokens ---- */

static int ap_token_ok(const char *t)
{
    size_t n = strlen(t);

    if (n < API_TOKEN_MIN || n > API_TOKEN_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (t[i] <= ' ' || t[i] > '~')
            return 0;
    return 1;
}

/* Every required token present and well formed, and no two roles alike; e names the source of
 * the first that is not (names[role]), never the token. */
static int ap_tokens_check(const struct api_tokens *t, const char *const *names, struct error *e)
{
    for (int r = 0; r < API_NROLES; r++) {
        if (!t->token[r]) {
            if (r == API_ROLE_METRICS)
                continue;
            return err_set(e, ERR_NOENT, names[r], 0, 0, "the %s token is not set",
                           ap_role_names[r]);
        }
        if (!ap_token_ok(t->token[r]))
            return err_set(e, ERR_INVAL, names[r], 0, 0,
                           "the %s token must be %d to %d printable characters without spaces",
                           ap_role_names[r], API_TOKEN_MIN, API_TOKEN_MAX);
        for (int q = 0; q < r; q++)
            if (t->token[q] && strcmp(t->token[q], t->token[r]) == 0)
                return err_set(e, ERR_INVAL, names[r], 0, 0,
                               "the %s and %s tokens are the same: each role needs its own",
                               ap_role_names[q], ap_role_names[r]);
    }
    return 0;
}

void api_tokens_clear(struct api_tokens *t)
{
    if (!t)
        return;
    for (int r = 0; r < API_NROLES; r++) {
        if (t->token[r]) {
            crypto_wipe(t->token[r], strlen(t->token[r]));
            free(t->token[r]);
        }
        t->token[r] = NULL;
    }
}

int api_tokens_from_env(struct api_tokens *out, struct error *e)
{
    struct api_tokens t = {{0}};
    int rc = 0;

    if (!out)
        return ERR_INVAL;
    for (int r = 0; r < API_NROLES && rc == 0; r++) {
        const char *v = getenv(ap_env[r]);

        if (v && !(t.token[r] = strdup(v)))
            rc = err_set(e, ERR_NOMEM, ap_env[r], 0, 0, "out of memory");
    }
    if (rc == 0)
        rc = ap_tokens_check(&t, ap_env, e);
    if (rc < 0) {
        api_tokens_clear(&t);
        return rc;
    }
    *out = t;
    return 0;
}

/* Read one token file: private to its owner, one line. */
static int ap_token_file(const char *path, char **out, struct error *e)
{
    struct stat sb;
    size_t len = 0;
    char *text = NULL;
    int rc;

    if (stat(path, &sb) == 0 && (sb.st_mode & 077))
        return err_set(e, ERR_INVAL, path, 0, 0,
                       "a token file must be readable by its owner only (chmod 600)");
    rc = file_read_all(path, &text, &len, e);
    if (rc < 0)
        return rc;
    if (len > 0 && text[len - 1] == '\n')
        text[--len] = '\0';
    if (len > 0 && text[len - 1] == '\r')
        text[--len] = '\0';
    *out = text;
    return 0;
}

int api_tokens_from_files(const char *node_path, const char *job_path, const char *user_path,
                          const char *metrics_path, struct api_tokens *out, struct error *e)
{
    const char *paths[API_NROLES] = {node_path, job_path, user_path, metrics_path};
    struct api_tokens t = {{0}};
    int rc = 0;

    if (!out)
        return ERR_INVAL;
    for (int r = 0; r < API_NROLES && rc == 0; r++)
        if (paths[r])
            rc = ap_token_file(paths[r], &t.token[r], e);
    if (rc == 0)
        rc = ap_tokens_check(&t, paths, e);
    if (rc < 0) {
        api_tokens_clear(&t);
        return rc;
    }
    *out = t;
    return 0;
}

/* ---- the API ---- */

static void ap_attest_free(struct api *a)
{
    free((char *)a->attest.certificate);
    free((char *)a->attest.account);
    free((char *)a->attest.region);
    free((char *)a->attest_gcp.certificates_path);
    free((char *)a->attest_gcp.audience);
    free((char *)a->attest_gcp.project);
    memset(&a->attest_gcp, 0, sizeof(a->attest_gcp));
    for (size_t i = 0; a->attest_static && a->attest_static[i]; i++)
        free(a->attest_static[i]);
    free(a->attest_static);
    memset(&a->attest, 0, sizeof(a->attest));
    a->attest_static = NULL;
}

/* The configuration's attestation, copied into a. */
static int ap_attest_copy(struct api *a, const struct api_config *cfg)
{
    const struct attest_aws *at = &cfg->attest;
    const struct attest_gcp *gt = &cfg->attest_gcp;
    size_t n = 0;
    char *cert;

    if (!at->certificate && !gt->certificates_path)
        return 0;
    if (gt->certificates_path &&
        (!gt->audience || !(a->attest_gcp.certificates_path = strdup(gt->certificates_path)) ||
         !(a->attest_gcp.audience = strdup(gt->audience)) ||
         (gt->project && !(a->attest_gcp.project = strdup(gt->project)))))
        return gt->audience ? ERR_NOMEM : ERR_INVAL;
    if (at->certificate) {
        if (!(cert = malloc(at->certificate_len + 1)))
            return ERR_NOMEM;
        memcpy(cert, at->certificate, at->certificate_len);
        cert[at->certificate_len] = '\0';
        a->attest.certificate = cert;
        a->attest.certificate_len = at->certificate_len;
    }
    if ((at->account && !(a->attest.account = strdup(at->account))) ||
        (at->region && !(a->attest.region = strdup(at->region))))
        return ERR_NOMEM;
    while (cfg->attest_static && cfg->attest_static[n])
        n++;
    if (cfg->attest_static && !(a->attest_static = calloc(n + 1, sizeof(char *))))
        return ERR_NOMEM;
    for (size_t i = 0; i < n; i++)
        if (!(a->attest_static[i] = strdup(cfg->attest_static[i])))
            return ERR_NOMEM;
    return 0;
}

int api_new(const struct api_config *cfg, struct api **out, struct error *e)
{
    static const char *const names[API_NROLES] = {"node token", "job token", "user token",
                                                  "metrics token"};
    struct api *a;
    int rc;

    if (!cfg || !cfg->state || !cfg->clock || !cfg->tokens || !out)
        return err_set(e, ERR_INVAL, "", 0, 0, "the API needs a state, a clock and tokens");
    rc = ap_tokens_check(cfg->tokens, names, e);
    if (rc < 0)
        return rc == ERR_NOENT ? ERR_INVAL : rc;
    a = calloc(1, sizeof(*a));
    if (!a)
        return err_set(e, ERR_NOMEM, "", 0, 0, "out of memory");
    for (int r = 0; r < API_NROLES && rc == 0; r++) {
        a->has[r] = cfg->tokens->token[r] != NULL;
        if (a->has[r])
            rc = crypto_sha256(cfg->tokens->token[r], strlen(cfg->tokens->token[r]), a->digest[r]);
    }
    if (rc == 0 && a->has[API_ROLE_JOB])
        rc = crypto_hmac_sha256(cfg->tokens->token[API_ROLE_JOB],
                                strlen(cfg->tokens->token[API_ROLE_JOB]), AP_JOB_KEY_LABEL,
                                strlen(AP_JOB_KEY_LABEL), a->job_key);
    if (rc == 0 && a->has[API_ROLE_NODE] && cfg->node_key)
        memcpy(a->node_key, cfg->node_key, API_NODE_KEY_LEN);
    else if (rc == 0 && a->has[API_ROLE_NODE])
        rc = crypto_hmac_sha256(cfg->tokens->token[API_ROLE_NODE],
                                strlen(cfg->tokens->token[API_ROLE_NODE]), AP_NODE_KEY_LABEL,
                                strlen(AP_NODE_KEY_LABEL), a->node_key);
    a->per_node_tokens = cfg->per_node_tokens != 0;
    if (rc == 0)
        rc = ap_attest_copy(a, cfg);
    if (rc == 0 && pthread_mutex_init(&a->mu, NULL) != 0)
        rc = ERR_NOMEM;
    if (rc == 0 && pthread_mutex_init(&a->qmu, NULL) != 0) {
        pthread_mutex_destroy(&a->mu);
        rc = ERR_NOMEM;
    }
    if (rc == 0 && pthread_cond_init(&a->qcv, NULL) != 0) {
        pthread_mutex_destroy(&a->qmu);
        pthread_mutex_destroy(&a->mu);
        rc = ERR_NOMEM;
    }
    if (rc == 0 && pthread_mutex_init(&a->hmu, NULL) != 0) {
        pthread_cond_destroy(&a->qcv);
        pthread_mutex_destroy(&a->qmu);
        pthread_mutex_destroy(&a->mu);
        rc = ERR_NOMEM;
    }
    if (rc < 0) {
        crypto_wipe(a->digest, sizeof(a->digest));
        crypto_wipe(a->job_key, sizeof(a->job_key));
        crypto_wipe(a->node_key, sizeof(a->node_key));
        ap_attest_free(a);
        free(a);
        return err_set(e, rc, "", 0, 0, "cannot set up the API");
    }
    a->state = cfg->state;
    a->log = cfg->log;
    a->clock = cfg->clock;
    a->clock_ctx = cfg->clock_ctx;
    a->changed = cfg->changed;
    a->changed_ctx = cfg->changed_ctx;
    a->qtail = &a->queue;
    *out = a;
    return 0;
}

void api_free(struct api *a)
{
    if (!a)
        return;
    pthread_mutex_destroy(&a->mu);
    pthread_mutex_destroy(&a->qmu);
    pthread_cond_destroy(&a->qcv);
    pthread_mutex_destroy(&a->hmu);
    free(a->heard);
    ap_metrics_free(&a->metrics);
    crypto_wipe(a->digest, sizeof(a->digest));
    crypto_wipe(a->job_key, sizeof(a->job_key));
    crypto_wipe(a->node_key, sizeof(a->node_key));
    ap_attest_free(a);
    free(a);
}

/* A scoped token of name under key into out: prefix, name, '.', the HMAC-SHA256 of name. */
static int ap_scoped_token(const unsigned char *key, int has, const char *prefix, const char *name,
                           char *out, size_t size)
{
    unsigned char mac[CRYPTO_SHA256_LEN];
    char hex[2 * CRYPTO_SHA256_LEN + 1];

    if (!name || !api_name_ok(name) || strlen(name) > AP_NAME_MAX || !out ||
        size < API_JOB_TOKEN_MAX || !has)
        return ERR_INVAL;
    if (crypto_hmac_sha256(key, CRYPTO_SHA256_LEN, name, strlen(name), mac) < 0)
        return ERR_INVAL;
    crypto_hex(mac, sizeof(mac), hex);
    snprintf(out, size, "%s%s.%s", prefix, name, hex);
    crypto_wipe(mac, sizeof(mac));
    crypto_wipe(hex, sizeof(hex));
    return 0;
}

int api_job_token(const struct api *a, const char *job, char *out, size_t size)
{
    return a ? ap_scoped_token(a->job_key, a->has[API_ROLE_JOB], AP_JOB_TOKEN_PREFIX, job, out,
                               size)
             : ERR_INVAL;
}

int api_node_token(const struct api *a, const char *node, char *out, size_t size)
{
    return a ? ap_scoped_token(a->node_key, a->has[API_ROLE_NODE], AP_NODE_TOKEN_PREFIX, node, out,
                               size)
             : ERR_INVAL;
}

int api_set_metrics(struct api *a, const struct api_metrics *m)
{
    struct ap_metrics copy, old;
    int rc;

    if (!a || !m)
        return ERR_INVAL;
    rc = ap_metrics_copy(m, &copy);
    if (rc < 0)
        return rc;
    pthread_mutex_lock(&a->mu);
    old = a->metrics;
    a->metrics = copy;
    pthread_mutex_unlock(&a->mu);
    ap_metrics_free(&old);
    return 0;
}

/* ---- one request ---- */

void ap_set(struct ap_ctx *c, struct jv *o, const char *key, struct jv *v)
{
    if (c->json_failed || jv_set(o, key, v) < 0)
        c->json_failed = 1;
}

void ap_push(struct ap_ctx *c, struct jv *arr, struct jv *v)
{
    if (c->json_failed || jv_push(arr, v) < 0)
        c->json_failed = 1;
}

void ap_reply(struct ap_ctx *c, int status, struct jv *v)
{
    char *text = NULL;

    if (c->json_failed || !v || jv_dump(v, &text) < 0) {
        jv_free(v);
        c->resp->status = 500; /* no body: the server could not build one */
        snprintf(c->reason, sizeof(c->reason), "out of memory building the answer");
        return;
    }
    jv_free(v);
    c->resp->status = status;
    c->resp->content_type = "application/json";
    c->resp->body = text;
    c->resp->body_len = strlen(text);
}

void ap_fail(struct ap_ctx *c, int status, const char *fmt, ...)
{
    char reason[sizeof(c->reason)];
    struct jv *o = jv_object();
    va_list ap;

    va_start(ap, fmt); /* through a copy: the reason may be an argument */
    vsnprintf(reason, sizeof(reason), fmt, ap);
    va_end(ap);
    memcpy(c->reason, reason, sizeof(reason));
    ap_set(c, o, "error", jv_string(c->reason));
    ap_reply(c, status, o);
}

void ap_state_fail(struct ap_ctx *c, int rc, const char *what)
{
    switch (rc) {
    case ERR_UNKNOWN:
        ap_fail(c, 404, "no %s", what);
        break;
    case ERR_CONFLICT:
        ap_fail(c, 409, "%s: conflicts with its current state", what);
        break;
    case ERR_INVAL:
        ap_fail(c, 400, "%s: a value is out of range", what);
        break;
    case ERR_AGAIN:
        ap_fail(c, 503, "the state database is busy; try again");
        break;
    default:
        ap_fail(c, 500, "state error: %s", err_str(rc));
    }
}

int ap_bad(struct ap_ctx *c, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(c->reason, sizeof(c->reason), fmt, ap);
    va_end(ap);
    return ERR_INVAL;
}

/* 1 when s is 1 to max bytes of letters, digits and the characters of punct, starting with a
 * letter or digit when lead_alnum; else 0 (NULL included). */
static int ap_word_ok(const char *s, size_t max, const char *punct, int lead_alnum)
{
    size_t n = s ? strlen(s) : 0;

    if (n == 0 || n > max)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        int alnum =
            (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');

        if (!alnum && ((lead_alnum && i == 0) || !strchr(punct, ch)))
            return 0;
    }
    return 1;
}

int api_name_ok(const char *s)
{
    return ap_word_ok(s, AP_NAME_MAX, "._-", 1);
}

int api_family_ok(const char *s)
{
    return ap_word_ok(s, API_FAMILY_MAX, "._:/-", 0);
}

int ap_parse_body(struct ap_ctx *c, int allow_empty)
{
    struct error e = {0};
    int rc;

    if (allow_empty && c->req->body_len == 0) {
        c->body = jv_object();
        return c->body ? 0 : ap_bad(c, "out of memory");
    }
    rc = jv_parse(c->req->body, c->req->body_len, &c->body, &e);
    if (rc < 0)
        return ap_bad(c, "malformed JSON at line %d, column %d: %s", e.line, e.column, e.msg);
    if (jv_type_of(c->body) != JV_OBJECT)
        return ap_bad(c, "the body must be a JSON object");
    return 0;
}

struct ap_keys {
    const char *const *allowed;
    const char *bad;
};

static int ap_key_known(void *ctx, const char *key, const struct jv *val)
{
    struct ap_keys *k = ctx;

    (void)val;
    for (size_t i = 0; k->allowed[i]; i++)
        if (strcmp(k->allowed[i], key) == 0)
            return 0;
    k->bad = key;
    return 1;
}

int ap_keys(struct ap_ctx *c, const struct jv *obj, const char *where, const char *const *allowed)
{
    struct ap_keys k = {allowed, NULL};

    if (jv_each(obj, ap_key_known, &k) != 0)
        return ap_bad(c, "unknown field %s%.64s", where, k.bad ? k.bad : "");
    return 0;
}

int ap_int(struct ap_ctx *c, const struct jv *obj, const char *where, const char *key, int required,
           long long min, long long max, long long *out)
{
    const struct jv *v = jv_get(obj, key);
    long long x;

    if (!v)
        return required ? ap_bad(c, "%s%s is required", where, key) : 0;
    if (jv_integer_value(v, &x) < 0 || x < min || x > max)
        return ap_bad(c, "%s%s must be an integer from %lld to %lld", where, key, min, max);
    *out = x;
    return 0;
}

int ap_num(struct ap_ctx *c, const struct jv *obj, const char *where, const char *key, int required,
           double min, int closed, double *out)
{
    const struct jv *v = jv_get(obj, key);
    double x;

    if (!v)
        return required ? ap_bad(c, "%s%s is required", where, key) : 0;
    if (jv_number_value(v, &x) < 0 || !isfinite(x) || x < min || (!closed && x == min))
        return ap_bad(c, "%s%s must be a number %s %g", where, key, closed ? ">=" : ">", min);
    *out = x;
    return 0;
}

int ap_str(struct ap_ctx *c, const struct jv *obj, const char *where, const char *key, int required,
           size_t max, const char **out)
{
    const struct jv *v = jv_get(obj, key);
    const char *s = jv_string_value(v);

    if (!v)
        return required ? ap_bad(c, "%s%s is required", where, key) : 0;
    if (!s || !s[0] || strlen(s) > max)
        return ap_bad(c, "%s%s must be a string of 1 to %zu bytes", where, key, max);
    *out = s;
    return 0;
}

int ap_job_state(struct ap_ctx *c, const char *name)
{
    struct state_job j;
    int s;

    if (state_job_get(c->a->state, name, &j) < 0)
        return -1;
    s = (int)j.state;
    state_job_clear(&j);
    return s;
}

/* ---- routing ---- */

#define AP_R(role) (1u << (role))

struct ap_route {
    const char *method;
    const char *path; /* '*' stands for one segment: the {id} or {name} */
    unsigned roles;
    void (*fn)(struct ap_ctx *c);
    int own_locking; /* fn takes the state's lock itself (else it runs under it) */
    int changes;     /* a 2xx answer changed what the decide step sees: api_config.changed */
};

static const struct ap_route ap_routes[] = {
    {"POST", "/v1/nodes", AP_R(API_ROLE_NODE), ap_node_register, 0, 1},
    {"POST", "/v1/nodes/*/heartbeat", AP_R(API_ROLE_NODE), ap_node_heartbeat, 0, 0},
    {"GET", "/v1/nodes/*/assignment", AP_R(API_ROLE_NODE), ap_node_assignment, 0, 0},
    {"POST", "/v1/nodes/*/notice", AP_R(API_ROLE_NODE), ap_node_notice, 0, 1},
    {"POST", "/v1/nodes/*/failures", AP_R(API_ROLE_NODE), ap_node_failure, 0, 1},
    {"POST", "/v1/nodes/*/completions", AP_R(API_ROLE_NODE), ap_node_completion, 0, 1},
    {"POST", "/v1/nodes/*/down", AP_R(API_ROLE_USER), ap_node_down, 0, 1},
    {"POST", "/v1/jobs/*/reports", AP_R(API_ROLE_JOB), ap_job_report, 1, 0},
    {"POST", "/v1/jobs/*/checkpoint", AP_R(API_ROLE_JOB), ap_job_checkpoint, 0, 0},
    {"POST", "/v1/jobs/*/finished", AP_R(API_ROLE_JOB), ap_job_finished, 0, 1},
    {"GET", "/v1/jobs/*/allocation", AP_R(API_ROLE_JOB) | AP_R(API_ROLE_USER), ap_job_allocation, 0,
     0},
    {"POST", "/v1/jobs", AP_R(API_ROLE_USER), ap_job_submit, 0, 1},
    {"GET", "/v1/jobs", AP_R(API_ROLE_USER), ap_job_list, 0, 0},
    {"GET", "/v1/jobs/*", AP_R(API_ROLE_USER), ap_job_get, 0, 0},
    {"GET", "/v1/jobs/*/events", AP_R(API_ROLE_USER), ap_job_events, 0, 0},
    {"DELETE", "/v1/jobs/*", AP_R(API_ROLE_USER), ap_job_cancel, 0, 1},
    {"GET", "/v1/fleet", AP_R(API_ROLE_USER), ap_fleet, 0, 0},
    {"GET", "/v1/costs", AP_R(API_ROLE_USER), ap_costs, 0, 0},
    {"GET", "/metrics", AP_R(API_ROLE_METRICS), ap_metrics_text, 0, 0},
};

size_t api_route_count(void)
{
    return sizeof(ap_routes) / sizeof(ap_routes[0]);
}

int api_route_get(size_t i, const char **method, const char **path, unsigned *roles)
{
    if (i >= api_route_count())
        return ERR_RANGE;
    *method = ap_routes[i].method;
    *path = ap_routes[i].path;
    *roles = ap_routes[i].roles;
    return 0;
}

/* Match path against pattern; the segment a '*' stands for is copied into param (at most size
 * - 1 bytes: a longer one does not match). */
static int ap_match(const char *pattern, const char *path, char *param, size_t size)
{
    while (*pattern && *path) {
        if (*pattern == '*') {
            size_t n = strcspn(path, "/");

            if (n == 0 || n >= size)
                return 0;
            memcpy(param, path, n);
            param[n] = '\0';
            path += n;
            pattern++;
        } else if (*pattern++ != *path++) {
            return 0;
        }
    }
    return *pattern == '\0' && *path == '\0';
}

/* 1 when token is a scoped token of the API's (prefix "cj1." a job's, "cn1." a node's: made by
 * maker), its name into name (AP_NAME_MAX + 1 bytes; "" otherwise); the mac compared in constant
 * time. */
static int ap_scoped_ok(const struct api *a, const char *token, const char *prefix,
                        int (*maker)(const struct api *, const char *, char *, size_t), char *name)
{
    char want[API_JOB_TOKEN_MAX];
    const char *start, *dot;
    size_t n;
    int ok;

    name[0] = '\0';
    if (strncmp(token, prefix, strlen(prefix)) != 0)
        return 0;
    start = token + strlen(prefix);
    if (!(dot = strrchr(start, '.')) || (n = (size_t)(dot - start)) == 0 || n > AP_NAME_MAX)
        return 0;
    memcpy(name, start, n);
    name[n] = '\0';
    if (maker(a, name, want, sizeof(want)) < 0 || strlen(want) != strlen(token))
        ok = 0;
    else
        ok = crypto_equal(want, token, strlen(want));
    crypto_wipe(want, sizeof(want));
    if (!ok)
        name[0] = '\0';
    return ok;
}

/* The role of the request's bearer token into *role: 0, or ERR_EMPTY (no token) or
 * ERR_UNKNOWN (a token that is none of ours). Every role's digest is compared, in constant time,
 * whichever matches. A per-job token is the job role, its job's name into c->token_job; a
 * per-node token the node role, its node into c->token_node (else both ""). */
static int ap_auth(const struct api *a, const struct http_request *req, int *role, struct ap_ctx *c)
{
    const char *h = http_request_header(req, "Authorization");
    unsigned char d[CRYPTO_SHA256_LEN];
    char token[API_TOKEN_MAX + 1];
    size_t n;
    int found = -1;

    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return ERR_EMPTY;
    for (h += 7; *h == ' ' || *h == '\t'; h++)
        ;
    /* white space after the token is the header's, not the token's (no token has any) */
    for (n = strlen(h); n > 0 && (h[n - 1] == ' ' || h[n - 1] == '\t'); n--)
        ;
    if (n == 0)
        return ERR_EMPTY;
    if (n > API_TOKEN_MAX) /* longer than any token of ours */
        return ERR_UNKNOWN;
    memcpy(token, h, n);
    token[n] = '\0';
    c->token_job[0] = c->token_node[0] = '\0';
    if (crypto_sha256(token, n, d) == 0) {
        for (int r = 0; r < API_NROLES; r++)
            if (crypto_equal(d, a->digest[r], sizeof(d)) & a->has[r])
                found = r;
        if (found < 0 && ap_scoped_ok(a, token, AP_JOB_TOKEN_PREFIX, api_job_token, c->token_job))
            found = API_ROLE_JOB;
        if (found < 0 &&
            ap_scoped_ok(a, token, AP_NODE_TOKEN_PREFIX, api_node_token, c->token_node))
            found = API_ROLE_NODE;
    }
    crypto_wipe(d, sizeof(d));
    crypto_wipe(token, n);
    if (found < 0)
        return ERR_UNKNOWN;
    *role = found;
    return 0;
}

/* Route an authenticated request and answer it. */
/* Routes the request; the route taken, or NULL (answered with an error). */
static const struct ap_route *ap_route(struct ap_ctx *c, char *param, size_t size)
{
    const struct ap_route *route = NULL;
    int path_known = 0;
    unsigned roles;

    for (size_t i = 0; i < sizeof(ap_routes) / sizeof(ap_routes[0]) && !route; i++) {
        if (!ap_match(ap_routes[i].path, c->req->path, param, size))
            continue;
        path_known = 1;
        if (strcmp(ap_routes[i].method, c->req->method) == 0)
            route = &ap_routes[i];
    }
    if (!path_known) {
        ap_fail(c, 404, "no such endpoint");
        return NULL;
    }
    if (!route) {
        ap_fail(c, 405, "%s is not allowed on this path", c->req->method);
        return NULL;
    }
    roles = route->roles;
    if (route->fn == ap_metrics_text && !c->a->has[API_ROLE_METRICS])
        roles |= AP_R(API_ROLE_USER); /* without a metrics token, the user's reads the metrics */
    if (!(roles & AP_R(c->role))) {
        ap_fail(c, 403, "a %s token may not %s %s", ap_role_names[c->role], route->method,
                route->path);
        return NULL;
    }
    if (strchr(route->path, '*')) {
        if (!api_name_ok(param)) {
            ap_fail(c, 404, "no such %s", strncmp(route->path, "/v1/nodes", 9) ? "job" : "node");
            return NULL;
        }
        c->param = param;
    }
    if (c->token_job[0] && (!c->param || strncmp(route->path, "/v1/jobs/", 9) != 0 ||
                            strcmp(c->param, c->token_job) != 0)) {
        ap_fail(c, 403, "the token of job %s may not %s %.128s", c->token_job, route->method,
                c->req->path);
        return NULL;
    }
    if (c->token_node[0] && (!c->param || strncmp(route->path, "/v1/nodes/", 10) != 0 ||
                             strcmp(c->param, c->token_node) != 0)) {
        ap_fail(c, 403, "the token of node %s may not %s %.128s", c->token_node, route->method,
                c->req->path);
        return NULL;
    }
    if (c->role == API_ROLE_NODE && !c->token_node[0] && c->a->per_node_tokens &&
        route->fn != ap_node_register) {
        ap_fail(c, 403,
                "the shared node token only registers nodes here (api.node_tokens: per-node): "
                "%s %.128s needs the node's own token, which its registration answered",
                route->method, c->req->path);
        return NULL;
    }
    if (route->own_locking) {
        route->fn(c);
        return route;
    }
    pthread_mutex_lock(&c->a->mu);
    route->fn(c);
    pthread_mutex_unlock(&c->a->mu);
    return route;
}

void api_handle(void *api, const struct http_request *req, struct http_response *resp)
{
    struct api *a = api;
    struct ap_ctx c = {.a = a, .req = req, .resp = resp, .role = -1};
    const struct ap_route *route = NULL;
    char param[AP_NAME_MAX + 2];
    const char *job = NULL, *node = NULL;
    int rc, status;

    c.now = a->clock(a->clock_ctx);
    rc = ap_auth(a, req, &c.role, &c);
    if (rc < 0) {
        ap_fail(&c, 401, rc == ERR_EMPTY ? "a bearer token is required" : "the token is not valid");
        resp->headers[0] = (struct http_pair){"WWW-Authenticate", "Bearer"};
        resp->nheaders = 1;
    } else {
        route = ap_route(&c, param, sizeof(param));
    }
    status = resp->status;
    if (route && route->changes && status >= 200 && status < 300 && a->changed)
        a->changed(a->changed_ctx);
    if (c.param && strncmp(req->path, "/v1/jobs", 8) == 0)
        job = c.param;
    else if (c.param && strncmp(req->path, "/v1/nodes", 9) == 0)
        node = c.param;
    pthread_mutex_lock(&a->mu);
    if (status > 0 && status < AP_STATUS_MAX)
        a->answered[status]++;
    pthread_mutex_unlock(&a->mu);
    log_msg(a->log, c.now,
            status >= 500   ? LOG_ERROR
            : status >= 400 ? LOG_WARN
                            : LOG_INFO,
            job, node, "%s %.128s -> %d (%s)%s%s", req->method, req->path, status,
            c.role >= 0 ? ap_role_names[c.role] : "no role", c.reason[0] ? ": " : "", c.reason);
    jv_free(c.body);
}
