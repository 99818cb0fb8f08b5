/* api.c: the controller's HTTP API: tokens, routing, validation of each body, the state
 * operations behind each endpoint, and the Prometheus text of /metrics. */
#include "control/api.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "control/state.h"
#include "util/crypto.h"
#include "util/file.h"
#include "util/json.h"
#include "util/log.h"

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

const double api_decide_buckets[API_DECIDE_NBUCKETS] = {0.001, 0.005, 0.01, 0.05,
                                                        0.1,   0.5,   1.0,  5.0};

const char *const api_job_spec_keys[] = {"name",
                                         "command",
                                         "workdir",
                                         "image",
                                         "env",
                                         "init_batch_size",
                                         "max_batch_size",
                                         "max_local_bsz",
                                         "min_replicas",
                                         "max_replicas",
                                         "replicas",
                                         "checkpoint_interval",
                                         "samples",
                                         "family",
                                         "deadline",
                                         "priority",
                                         NULL};

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

/* A deep copy of the daemon's metrics: every string in one owned block per array. */
struct ap_metrics {
    struct api_job_metrics *jobs;
    size_t njobs;
    long long decide_counts[API_DECIDE_NBUCKETS + 1];
    double decide_sum;
    long long decide_failures;
    struct api_call_metrics *calls;
    size_t ncalls;
    struct api_call_metrics *errors;
    size_t nerrors;
    char *strings;
};

static void ap_metrics_free(struct ap_metrics *m)
{
    free(m->jobs);
    free(m->calls);
    free(m->errors);
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

static int ap_metrics_copy(const struct api_metrics *m, struct ap_metrics *out)
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
    c.strings = malloc(size);
    c.jobs = calloc(m->njobs + 1, sizeof(*c.jobs));
    c.calls = calloc(m->ncalls + 1, sizeof(*c.calls));
    c.errors = calloc(m->nerrors + 1, sizeof(*c.errors));
    if (!c.strings || !c.jobs || !c.calls || !c.errors) {
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
    c.njobs = m->njobs;
    c.ncalls = m->ncalls;
    c.nerrors = m->nerrors;
    memcpy(c.decide_counts, m->decide_counts, sizeof(c.decide_counts));
    c.decide_sum = m->decide_sum;
    c.decide_failures = m->decide_failures;
    *out = c;
    return 0;
}

/* ---- the API ---- */

#define AP_STATUS_MAX 600

struct api {
    struct state *state;
    struct log *log;
    api_clock_fn clock;
    void *clock_ctx;
    api_changed_fn changed;
    void *changed_ctx;
    unsigned char digest[API_NROLES][CRYPTO_SHA256_LEN];
    int has[API_NROLES];
    pthread_mutex_t mu; /* the state's connection, the metrics and the counts */
    struct ap_metrics metrics;
    long long answered[AP_STATUS_MAX]; /* responses by status */
    /* group commit of reports: requests queue their report; one of them at a time commits the
     * whole queue in one transaction while the next ones queue behind it */
    pthread_mutex_t qmu;
    pthread_cond_t qcv;
    struct ap_pending *queue;
    struct ap_pending **qtail;
    int committing;
    long long batches; /* transactions of reports committed, and reports in them */
    long long batched;
};

/* A report waiting for its group commit. */
struct ap_pending {
    struct state_report_item item;
    int done;
    struct ap_pending *next;
};

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
    if (rc < 0) {
        crypto_wipe(a->digest, sizeof(a->digest));
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
    ap_metrics_free(&a->metrics);
    crypto_wipe(a->digest, sizeof(a->digest));
    free(a);
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

#define AP_MAX_SEGS 6
#define AP_NAME_MAX 128
#define AP_MAX_CONFIGS 64

struct ap_ctx {
    struct api *a;
    const struct http_request *req;
    struct http_response *resp;
    double now;
    int role;
    const char *param; /* the {id} or {name} of the path */
    char segbuf[512];
    const char *segs[AP_MAX_SEGS];
    int nsegs;
    struct jv *body; /* the parsed body; owned */
    int json_failed; /* building an answer ran out of memory */
    char reason[320];
};

/* Set o[key] = v (stolen), remembering the first failure in c. */
static void ap_set(struct ap_ctx *c, struct jv *o, const char *key, struct jv *v)
{
    if (c->json_failed || jv_set(o, key, v) < 0)
        c->json_failed = 1;
}

static void ap_push(struct ap_ctx *c, struct jv *arr, struct jv *v)
{
    if (c->json_failed || jv_push(arr, v) < 0)
        c->json_failed = 1;
}

/* Answer status with v (stolen) as the JSON body. */
static void ap_reply(struct ap_ctx *c, int status, struct jv *v)
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

/* Answer status with {"error": reason}; the reason is kept for the log. */
static void ap_fail(struct ap_ctx *c, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void ap_fail(struct ap_ctx *c, int status, const char *fmt, ...)
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

/* A state operation's error as an answer: what names the thing it was about. */
static void ap_state_fail(struct ap_ctx *c, int rc, const char *what)
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

/* Note a bad request's reason (for ap_fail(c, 400, ...)); returns ERR_INVAL. */
static int ap_bad(struct ap_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int ap_bad(struct ap_ctx *c, const char *fmt, ...)
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

/* Parse the body as a JSON object into c->body (an empty body is {} when allow_empty). */
static int ap_parse_body(struct ap_ctx *c, int allow_empty)
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

/* Every key of obj is one of allowed (NULL-terminated): a misspelt field is an error, not a
 * default. where prefixes the names in the reason ("" or "configs[2]."). */
static int ap_keys(struct ap_ctx *c, const struct jv *obj, const char *where,
                   const char *const *allowed)
{
    struct ap_keys k = {allowed, NULL};

    if (jv_each(obj, ap_key_known, &k) != 0)
        return ap_bad(c, "unknown field %s%.64s", where, k.bad ? k.bad : "");
    return 0;
}

/* obj[key] as an integer in [min, max] into *out; absent: ERR_INVAL if required, else *out is
 * left (its default). */
static int ap_int(struct ap_ctx *c, const struct jv *obj, const char *where, const char *key,
                  int required, long long min, long long max, long long *out)
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

/* obj[key] as a number above min (or at least min when closed) into *out; absent as ap_int. */
static int ap_num(struct ap_ctx *c, const struct jv *obj, const char *where, const char *key,
                  int required, double min, int closed, double *out)
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

/* obj[key] as a string of 1 to max bytes into *out (borrowed from obj); absent as ap_int. */
static int ap_str(struct ap_ctx *c, const struct jv *obj, const char *where, const char *key,
                  int required, size_t max, const char **out)
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

/* ---- nodes ---- */

/* An address a node's peers can dial: an IPv4 or IPv6 address or a host name. */
static int ap_address_ok(const char *s)
{
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '.' || *s == '-' || *s == ':'))
            return 0;
    return 1;
}

static void ap_node_register(struct ap_ctx *c)
{
    static const char *const keys[] = {"instance_id", "gpus", "gpu_memory_mib", "provider",
                                       "offer",       "zone", "market",         "price",
                                       "address",     NULL};
    const char *id = NULL, *market = "on-demand", *address = NULL;
    long long gpus = 0, mem = 0;
    struct state_node n = {0};
    int rc;

    n.provider = "static";
    n.offer = "static";
    n.zone = "local";
    n.price = 0;
    rc = ap_parse_body(c, 0);
    if (rc == 0)
        rc = ap_keys(c, c->body, "", keys);
    if (rc == 0)
        rc = ap_str(c, c->body, "", "instance_id", 1, AP_NAME_MAX, &id);
    if (rc == 0 && !api_name_ok(id))
        rc = ap_bad(c, "instance_id must be letters, digits, '.', '_' or '-'");
    if (rc == 0)
        rc = ap_int(c, c->body, "", "gpus", 1, 1, 1024, &gpus);
    if (rc == 0)
        rc = ap_int(c, c->body, "", "gpu_memory_mib", 0, 0, 16 * 1024 * 1024, &mem);
    if (rc == 0)
        rc = ap_str(c, c->body, "", "provider", 0, STATE_NAME_MAX, (const char **)&n.provider);
    if (rc == 0)
        rc = ap_str(c, c->body, "", "offer", 0, STATE_NAME_MAX, (const char **)&n.offer);
    if (rc == 0)
        rc = ap_str(c, c->body, "", "zone", 0, STATE_NAME_MAX, (const char **)&n.zone);
    if (rc == 0)
        rc = ap_str(c, c->body, "", "market", 0, 16, &market);
    if (rc == 0 && strcmp(market, "spot") != 0 && strcmp(market, "on-demand") != 0)
        rc = ap_bad(c, "market must be \"spot\" or \"on-demand\"");
    if (rc == 0)
        rc = ap_num(c, c->body, "", "price", 0, 0.0, 1, &n.price);
    if (rc == 0)
        rc = ap_str(c, c->body, "", "address", 0, 255, &address);
    if (rc == 0 && address && !ap_address_ok(address))
        rc = ap_bad(c, "address must be an IP address or a host name (letters, digits, '.', "
                       "'-', ':')");
    if (rc < 0) {
        ap_fail(c, 400, "%s", c->reason);
        return;
    }
    n.instance_id = (char *)id;
    n.address = (char *)address;
    n.market = strcmp(market, "spot") == 0 ? STATE_MARKET_SPOT : STATE_MARKET_ON_DEMAND;
    n.gpus = (int)gpus;
    n.gpu_memory_mib = (int)mem;
    n.state = STATE_NODE_READY;
    n.launched_at = c->now;
    n.ready_at = n.terminated_at = NAN;
    c->param = id;
    rc = state_node_register(c->a->state, &n, c->now);
    if (rc == ERR_CONFLICT) {
        ap_fail(c, 409, "node %s is already registered", id);
    } else if (rc < 0) {
        ap_state_fail(c, rc, "node");
    } else {
        struct jv *o = jv_object();

        ap_set(c, o, "instance_id", jv_string(id));
        ap_set(c, o, "state", jv_string("ready"));
        ap_reply(c, 201, o);
    }
}

/* Answer {"instance_id", "state"} for the node of the path after an update. */
static void ap_node_state_reply(struct ap_ctx *c)
{
    struct state_node n;
    struct jv *o;
    int rc = state_node_get(c->a->state, c->param, &n);

    if (rc < 0) {
        ap_state_fail(c, rc, "such node");
        return;
    }
    o = jv_object();
    ap_set(c, o, "instance_id", jv_string(n.instance_id));
    ap_set(c, o, "state", jv_string(state_node_state_name(n.state)));
    state_node_clear(&n);
    ap_reply(c, 200, o);
}

static void ap_node_heartbeat(struct ap_ctx *c)
{
    static const char *const keys[] = {NULL};
    int rc = ap_parse_body(c, 1);

    if (rc == 0)
        rc = ap_keys(c, c->body, "", keys);
    if (rc < 0) {
        ap_fail(c, 400, "%s", c->reason);
        return;
    }
    rc = state_node_heartbeat(c->a->state, c->param, c->now);
    if (rc == ERR_CONFLICT)
        ap_fail(c, 409, "node %s is terminated", c->param);
    else if (rc < 0)
        ap_state_fail(c, rc, "such node");
    else
        ap_node_state_reply(c);
}

static void ap_node_notice(struct ap_ctx *c)
{
    static const char *const keys[] = {"deadline", NULL};
    double deadline = NAN;
    int rc = ap_parse_body(c, 1);

    if (rc == 0)
        rc = ap_keys(c, c->body, "", keys);
    if (rc == 0)
        rc = ap_num(c, c->body, "", "deadline", 0, 0.0, 1, &deadline);
    if (rc < 0) {
        ap_fail(c, 400, "%s", c->reason);
        return;
    }
    if (deadline < c->now) /* a deadline already past (clocks differ): it is now */
        deadline = c->now;
    rc = state_node_notice(c->a->state, c->param, c->now, deadline);
    if (rc == ERR_CONFLICT)
        ap_fail(c, 409, "node %s is terminated", c->param);
    else if (rc < 0)
        ap_state_fail(c, rc, "such node");
    else
        ap_node_state_reply(c);
}

/* The job's spec as stored, parsed again (it was written by ap_job_submit); NULL if it cannot be
 * (out of memory). */
static struct jv *ap_spec(const struct state_job *j)
{
    struct jv *v = NULL;

    return jv_parse(j->spec, strlen(j->spec), &v, NULL) == 0 ? v : NULL;
}

/* The configuration the plan gave the job: batch per replica, accumulation, gain (null before). */
static void ap_set_config(struct ap_ctx *c, struct jv *o, const struct state_job *j)
{
    ap_set(c, o, "local_bsz", jv_number(j->local_bsz));
    ap_set(c, o, "accum_steps", isnan(j->local_bsz) ? jv_null() : jv_integer(j->accum_steps));
    ap_set(c, o, "lr_gain", jv_number(j->lr_gain));
}

/* o's "master_addr": where node (the master) is reached, when its agent said so. */
static void ap_set_master_addr(struct ap_ctx *c, struct jv *o, const char *node)
{
    struct state_node m;

    if (state_node_get(c->a->state, node, &m) < 0)
        return;
    if (m.address)
        ap_set(c, o, "master_addr", jv_string(m.address));
    state_node_clear(&m);
}

/* One job's part of a node's assignment: its replicas there, ranks, world size, master (the
 * first node by instance id) and where it is reached (when its agent said), configuration and
 * spec. */
static struct jv *ap_assignment_job(struct ap_ctx *c, const struct state_node_job *nj)
{
    struct state_alloc *rows = NULL;
    struct state_job j;
    size_t n = 0;
    long long world = 0, offset = -1;
    struct jv *o;

    if (state_job_get(c->a->state, nj->job, &j) < 0)
        return NULL;
    if (state_alloc_get(c->a->state, nj->job, &rows, &n) < 0) {
        state_job_clear(&j);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (strcmp(rows[i].node, c->param) == 0)
            offset = world;
        world += rows[i].replicas;
    }
    o = jv_object();
    ap_set(c, o, "job", jv_string(j.name));
    ap_set(c, o, "replicas", jv_integer(nj->replicas));
    ap_set(c, o, "rank_offset", jv_integer(offset));
    ap_set(c, o, "world_size", jv_integer(world));
    ap_set(c, o, "master", jv_string(n > 0 ? rows[0].node : c->param));
    ap_set_master_addr(c, o, n > 0 ? rows[0].node : c->param);
    /* when the job was placed as it is: every re-placement changes it on every node, so that all
     * replicas restart into the new world, those on nodes it kept included */
    if (n > 0 && isfinite(rows[0].since))
        ap_set(c, o, "placed_at", jv_number(rows[0].since));
    ap_set_config(c, o, &j);
    ap_set(c, o, "spec", ap_spec(&j));
    state_allocs_free(rows, n);
    state_job_clear(&j);
    return o;
}

static void ap_node_assignment(struct ap_ctx *c)
{
    struct state_node_job *jobs = NULL;
    struct jv *o, *arr;
    struct state_node node;
    size_t n = 0;
    int rc = state_node_get(c->a->state, c->param, &node);

    if (rc < 0) {
        ap_state_fail(c, rc, "such node");
        return;
    }
    rc = state_node_jobs(c->a->state, c->param, &jobs, &n);
    if (rc < 0) {
        state_node_clear(&node);
        ap_state_fail(c, rc, "such node");
        return;
    }
    o = jv_object();
    arr = jv_array();
    ap_set(c, o, "instance_id", jv_string(node.instance_id));
    ap_set(c, o, "state", jv_string(state_node_state_name(node.state)));
    for (size_t i = 0; i < n; i++)
        ap_push(c, arr, ap_assignment_job(c, &jobs[i]));
    ap_set(c, o, "jobs", arr);
    state_node_jobs_free(jobs, n);
    state_node_clear(&node);
    ap_reply(c, 200, o);
}

/* ---- training jobs ---- */

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

static void ap_job_report(struct ap_ctx *c)
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

/* POST /v1/jobs/{name}/checkpoint: a checkpoint at {"progress"} is on disk. */
static void ap_job_checkpoint(struct ap_ctx *c)
{
    static const char *const keys[] = {"progress", NULL};
    struct state_job j;
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
    if ((rc = state_job_get(c->a->state, c->param, &j)) < 0) {
        ap_state_fail(c, rc, "such job");
        return;
    }
    rc = j.state == STATE_JOB_PENDING || j.state == STATE_JOB_RUNNING ? 0 : ERR_CONFLICT;
    state_job_clear(&j);
    if (rc == 0)
        rc = state_job_checkpoint(c->a->state, c->param, progress, c->now);
    if (rc == ERR_CONFLICT)
        ap_fail(c, 409, "job %s has ended", c->param);
    else if (rc < 0)
        ap_state_fail(c, rc, "such job");
    else
        ap_job_progress_reply(c);
}

/* POST /v1/jobs/{name}/finished: the job completed its work (optionally at {"progress"}). */
static void ap_job_finished(struct ap_ctx *c)
{
    static const char *const keys[] = {"progress", NULL};
    double progress = NAN;
    int rc = ap_parse_body(c, 1);

    if (rc == 0)
        rc = ap_keys(c, c->body, "", keys);
    if (rc == 0)
        rc = ap_num(c, c->body, "", "progress", 0, 0.0, 1, &progress);
    if (rc < 0) {
        ap_fail(c, 400, "%s", c->reason);
        return;
    }
    rc = state_job_finish(c->a->state, c->param, progress, c->now);
    if (rc == ERR_CONFLICT)
        ap_fail(c, 409, "job %s was cancelled or failed", c->param);
    else if (rc < 0)
        ap_state_fail(c, rc, "such job");
    else
        ap_job_progress_reply(c);
}

/* The job's allocation, node by node, with its world size (NULL on a state error, in *rc). */
static struct jv *ap_allocation(struct ap_ctx *c, const char *job, long long *world, int *rc)
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

static void ap_job_allocation(struct ap_ctx *c)
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

/* ---- users: jobs ---- */

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
    double m0 = 0, maxb = 0, local = 0, ckpt = 600, samples = NAN, deadline = NAN;
    long long minr = 1, maxr = 0, reqr = 1, prio = 0;
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
    if (rc == 0)
        rc = ap_num(c, c->body, "", "max_batch_size", 1, m0, 1, &maxb);
    if (rc == 0)
        rc = ap_num(c, c->body, "", "max_local_bsz", 1, 0.0, 0, &local);
    if (rc == 0)
        rc = ap_int(c, c->body, "", "min_replicas", 0, 1, 100000, &minr);
    if (rc == 0)
        rc = ap_int(c, c->body, "", "max_replicas", 1, minr, 100000, &maxr);
    reqr = minr;
    if (rc == 0)
        rc = ap_int(c, c->body, "", "replicas", 0, minr, maxr, &reqr);
    if (rc == 0)
        rc = ap_num(c, c->body, "", "checkpoint_interval", 0, 0.0, 0, &ckpt);
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
    if (rc == 0)
        rc = ap_int(c, c->body, "", "priority", 0, -1000, 1000, &prio);
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

static void ap_job_submit(struct ap_ctx *c)
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
    o = jv_object();
    ap_set(c, o, "name", jv_string(name));
    ap_set(c, o, "state", jv_string("pending"));
    ap_set(c, o, "spec", spec);
    if (warning) {
        struct jv *w = jv_array();

        ap_push(c, w, jv_string(warning));
        ap_set(c, o, "warnings", w);
        log_msg(c->a->log, c->now, LOG_WARN, name, NULL, "%s", warning);
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

static void ap_job_list(struct ap_ctx *c)
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

static void ap_job_get(struct ap_ctx *c)
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

static void ap_job_cancel(struct ap_ctx *c)
{
    struct jv *o;
    int rc = state_job_set_state(c->a->state, c->param, STATE_JOB_CANCELLED, c->now);

    if (rc == ERR_CONFLICT) {
        ap_fail(c, 409, "job %s has already ended", c->param);
        return;
    }
    if (rc < 0) {
        ap_state_fail(c, rc, "such job");
        return;
    }
    o = jv_object();
    ap_set(c, o, "name", jv_string(c->param));
    ap_set(c, o, "state", jv_string("cancelled"));
    ap_reply(c, 200, o);
}

/* Every node not terminated. */
#define AP_LIVE_NODES                                                    \
    (STATE_MASK(STATE_NODE_LAUNCHING) | STATE_MASK(STATE_NODE_BOOTING) | \
     STATE_MASK(STATE_NODE_READY) | STATE_MASK(STATE_NODE_DRAINING))

static const char *ap_market_name(enum state_market m)
{
    return m == STATE_MARKET_SPOT ? "spot" : "on-demand";
}

static void ap_fleet(struct ap_ctx *c)
{
    struct state_node *nodes = NULL;
    double rate = 0, spent = 0;
    long long gpus = 0;
    struct jv *o, *arr;
    size_t n = 0;
    int rc = state_nodes_list(c->a->state, AP_LIVE_NODES, &nodes, &n);

    if (rc == 0)
        rc = state_cost_total(c->a->state, &spent);
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
        ap_push(c, arr, v);
        rate += nodes[i].price;
        gpus += nodes[i].gpus;
    }
    ap_set(c, o, "nodes", arr);
    ap_set(c, o, "gpus", jv_integer(gpus));
    ap_set(c, o, "cost_rate", jv_number(rate));
    ap_set(c, o, "spent", jv_number(spent));
    state_nodes_free(nodes, n);
    ap_reply(c, 200, o);
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
    return 0;
}

/* Jobs by state, and each live job's restarts, from the state. */
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
    ap_family(f, "castor_job_restarts_total", "counter",
              "Restarts of each pending or running job.");
    for (size_t i = 0; i < n; i++)
        if (jobs[i].state == STATE_JOB_PENDING || jobs[i].state == STATE_JOB_RUNNING)
            ap_sample(f, "castor_job_restarts_total", "job", jobs[i].name, NULL, NULL,
                      jobs[i].restarts);
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
        "When each job that declares its samples is predicted to finish at its configuration, "
        "seconds since the epoch.",
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
    ap_family(f, "castor_provider_calls_total", "counter", "Calls to the provider, by operation.");
    for (size_t i = 0; i < m->ncalls; i++)
        ap_sample(f, "castor_provider_calls_total", "op", m->calls[i].op, NULL, NULL,
                  (double)m->calls[i].count);
    ap_family(f, "castor_provider_errors_total", "counter",
              "Errors the provider answered, by operation and code.");
    for (size_t i = 0; i < m->nerrors; i++)
        ap_sample(f, "castor_provider_errors_total", "op", m->errors[i].op, "code",
                  m->errors[i].code, (double)m->errors[i].count);
}

static void ap_metrics_text(struct ap_ctx *c)
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
    {"POST", "/v1/jobs/*/reports", AP_R(API_ROLE_JOB), ap_job_report, 1, 0},
    {"POST", "/v1/jobs/*/checkpoint", AP_R(API_ROLE_JOB), ap_job_checkpoint, 0, 0},
    {"POST", "/v1/jobs/*/finished", AP_R(API_ROLE_JOB), ap_job_finished, 0, 1},
    {"GET", "/v1/jobs/*/allocation", AP_R(API_ROLE_JOB) | AP_R(API_ROLE_USER), ap_job_allocation, 0,
     0},
    {"POST", "/v1/jobs", AP_R(API_ROLE_USER), ap_job_submit, 0, 1},
    {"GET", "/v1/jobs", AP_R(API_ROLE_USER), ap_job_list, 0, 0},
    {"GET", "/v1/jobs/*", AP_R(API_ROLE_USER), ap_job_get, 0, 0},
    {"DELETE", "/v1/jobs/*", AP_R(API_ROLE_USER), ap_job_cancel, 0, 1},
    {"GET", "/v1/fleet", AP_R(API_ROLE_USER), ap_fleet, 0, 0},
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

/* The role of the request's bearer token into *role: 0, or ERR_EMPTY (no token) or
 * ERR_UNKNOWN (a token that is none of ours). Every role's digest is compared, in constant time,
 * whichever matches. */
static int ap_auth(const struct api *a, const struct http_request *req, int *role)
{
    const char *h = http_request_header(req, "Authorization");
    unsigned char d[CRYPTO_SHA256_LEN];
    int found = -1;

    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return ERR_EMPTY;
    for (h += 7; *h == ' '; h++)
        ;
    if (!*h || crypto_sha256(h, strlen(h), d) < 0)
        return ERR_EMPTY;
    for (int r = 0; r < API_NROLES; r++)
        if (crypto_equal(d, a->digest[r], sizeof(d)) & a->has[r])
            found = r;
    crypto_wipe(d, sizeof(d));
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
    rc = ap_auth(a, req, &c.role);
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
