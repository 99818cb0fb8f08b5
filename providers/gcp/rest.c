/* rest.c: a Google JSON REST call with its token, retries, error document and clean messages. */
#include "providers/gcp/rest.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/retry.h"
#include "util/crypto.h"
#include "util/http_client.h"
#include "util/strbuf.h"

#define DEFAULT_TIMEOUT_MS 30000

struct gcp_rest {
    char name[16];
    char endpoint[512];
    int tls_insecure;
    long timeout_ms;
    struct retry retry;
    struct gcp_auth *auth;
    int64_t (*clock)(void *arg);
    void (*log)(void *arg, const char *line);
    void *hook_arg;
    struct http_client *http;
};

/* ---- errors ---- */

static const struct {
    const char *reason;
    int err;
} reasons[] = {
    /* no capacity in that zone now: fail over, remember it for a while */
    {"ZONE_RESOURCE_POOL_EXHAUSTED", ERR_CAPACITY},
    {"ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS", ERR_CAPACITY},
    /* a quota (GPUS_ALL_REGIONS included): skip until it changes */
    {"QUOTA_EXCEEDED", ERR_QUOTA},
    {"quotaExceeded", ERR_QUOTA},
    /* retried */
    {"rateLimitExceeded", 0},
    {"userRateLimitExceeded", 0},
    {"RATE_LIMIT_EXCEEDED", 0},
    {"RESOURCE_OPERATION_RATE_EXCEEDED", 0},
    {"backendError", 0},
    {"internalError", 0},
    {"RESOURCE_EXHAUSTED", 0}, /* the HTTP status of a 429 */
    {"UNAVAILABLE", 0},
    {"INTERNAL", 0},
    {"DEADLINE_EXCEEDED", 0},
    /* gone, or there already */
    {"notFound", ERR_NOENT},
    {"RESOURCE_NOT_FOUND", ERR_NOENT},
    {"NOT_FOUND", ERR_NOENT},
    {"alreadyExists", ERR_CONFLICT},
    {"RESOURCE_ALREADY_EXISTS", ERR_CONFLICT},
    {"ALREADY_EXISTS", ERR_CONFLICT},
    {"conditionNotMet", ERR_CONFLICT},
    /* refused for good: fix the request or the permissions */
    {"invalid", ERR_INVAL},
    {"badRequest", ERR_INVAL},
    {"required", ERR_INVAL},
    {"invalidParameter", ERR_INVAL},
    {"forbidden", ERR_INVAL},
    {"insufficientPermissions", ERR_INVAL},
    {"authError", ERR_INVAL},
    {"accessNotConfigured", ERR_INVAL},
    {"INVALID_ARGUMENT", ERR_INVAL},
    {"INVALID_FIELD_VALUE", ERR_INVAL},
    {"FAILED_PRECONDITION", ERR_INVAL},
    {"PERMISSION_DENIED", ERR_INVAL},
    {"UNAUTHENTICATED", ERR_INVAL},
    {"UNSUPPORTED_OPERATION", ERR_INVAL},
};

int gcp_error_code(const char *reason)
{
    if (!reason || !*reason)
        return ERR_UNKNOWN;
    for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
        if (strcmp(reason, reasons[i].reason) == 0)
            return reasons[i].err;
    return ERR_UNKNOWN;
}

/* Copy the string at obj[key] into buf, cleaned; 1 when there was one. */
static int copy_text(const struct jv *obj, const char *key, char *buf, size_t size)
{
    const char *s = jv_string_value(jv_get(obj, key));

    if (!s || !*s)
        return 0;
    snprintf(buf, size, "%s", s);
    strbuf_printable(buf);
    return 1;
}

int gcp_error_read(const struct jv *error, struct gcp_error_info *out)
{
    const struct jv *first = jv_at(jv_get(error, "errors"), 0);
    const struct jv *details = jv_get(first, "errorDetails");
    long status = out->http_status;

    memset(out, 0, sizeof(*out));
    out->http_status = status;
    snprintf(out->reason, sizeof(out->reason), "(none)");
    snprintf(out->message, sizeof(out->message), "(none)");
    if (jv_type_of(error) != JV_OBJECT)
        return ERR_PARSE;
    if (!copy_text(first, "reason", out->reason, sizeof(out->reason)) &&
        !copy_text(first, "code", out->reason, sizeof(out->reason)) &&
        !copy_text(error, "status", out->reason, sizeof(out->reason))) {
        out->err = ERR_UNKNOWN;
        return ERR_PARSE;
    }
    if (!copy_text(first, "message", out->message, sizeof(out->message)))
        copy_text(error, "message", out->message, sizeof(out->message));
    for (size_t i = 0; i < jv_size(details); i++)
        if (copy_text(jv_get(jv_at(details, i), "quotaInfo"), "metricName", out->quota_metric,
                      sizeof(out->quota_metric)))
            break;
    out->err = gcp_error_code(out->reason);
    return 0;
}

/* ---- the client ---- */

int gcp_rest_new(const struct gcp_rest_config *cfg, const char *name, const char *default_endpoint,
                 struct gcp_rest **out, struct error *e)
{
    const char *endpoint =
        cfg && cfg->endpoint && *cfg->endpoint ? cfg->endpoint : default_endpoint;
    struct http_client_url u;
    struct gcp_rest *r;
    size_t n;
    int rc;

    if (!cfg || !name || !out || !endpoint || !*endpoint || !cfg->auth)
        return err_set(e, ERR_INVAL, name ? name : "gcp", 0, 0,
                       "an endpoint and a token source are needed");
    if (strlen(endpoint) >= sizeof(r->endpoint))
        return err_set(e, ERR_INVAL, name, 0, 0, "endpoint too long");
    if (http_client_parse_url(endpoint, &u) < 0 || u.query[0])
        return err_set(e, ERR_INVAL, name, 0, 0,
                       "endpoint %.200s is not an http(s) URL without query", endpoint);
    if (strcmp(u.scheme, "https") != 0 && !u.loopback)
        return err_set(e, ERR_INVAL, name, 0, 0, "plain http is accepted only on loopback (%.200s)",
                       endpoint);
    if (cfg->tls_insecure && !u.loopback)
        return err_set(e, ERR_INVAL, name, 0, 0,
                       "TLS verification may be turned off only for a loopback endpoint");
    r = calloc(1, sizeof(*r));
    if (!r)
        return ERR_NOMEM;
    snprintf(r->name, sizeof(r->name), "%s", name);
    snprintf(r->endpoint, sizeof(r->endpoint), "%s", endpoint);
    n = strlen(r->endpoint);
    while (n > 0 && r->endpoint[n - 1] == '/')
        r->endpoint[--n] = '\0';
    r->tls_insecure = cfg->tls_insecure;
    r->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : DEFAULT_TIMEOUT_MS;
    retry_init(&r->retry, cfg->max_attempts, cfg->backoff_base_ms, cfg->backoff_cap_ms, cfg->seed,
               cfg->sleep_ms, cfg->hook_arg);
    r->auth = cfg->auth;
    r->clock = cfg->clock ? cfg->clock : retry_default_clock;
    r->log = cfg->log ? cfg->log : retry_default_log;
    r->hook_arg = cfg->hook_arg;
    rc = http_client_new(&r->http);
    if (rc < 0) {
        free(r);
        return rc;
    }
    *out = r;
    return 0;
}

void gcp_rest_free(struct gcp_rest *r)
{
    if (!r)
        return;
    http_client_free(r->http);
    free(r);
}

const char *gcp_rest_endpoint(const struct gcp_rest *r)
{
    return r->endpoint;
}

int64_t gcp_rest_now(struct gcp_rest *r)
{
    return r->clock(r->hook_arg);
}

void gcp_rest_sleep(struct gcp_rest *r, long ms)
{
    r->retry.sleep_ms(r->retry.arg, ms);
}

/* A log line, printf-formatted, with token starred out wherever it appears. */
static void vlog_line(struct gcp_rest *r, const char *token, const char *fmt, va_list ap)
{
    char line[768];

    vsnprintf(line, sizeof(line), fmt, ap);
    strbuf_redact(line, token);
    r->log(r->hook_arg, line);
}

static void log_line(struct gcp_rest *r, const char *token, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void log_line(struct gcp_rest *r, const char *token, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vlog_line(r, token, fmt, ap);
    va_end(ap);
}

void gcp_rest_log(struct gcp_rest *r, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vlog_line(r, NULL, fmt, ap);
    va_end(ap);
}

int gcp_rest_logged(struct gcp_rest *r, int rc, const struct error *e)
{
    if (e)
        log_line(r, NULL, "%s failed: %s", e->file, e->msg);
    else
        log_line(r, NULL, "%s call failed reading its answer: %s", r->name, err_str(rc));
    return rc;
}

int gcp_last_segment(const char *url, char *buf, size_t size)
{
    const char *slash = url ? strrchr(url, '/') : NULL;
    const char *seg = slash ? slash + 1 : url;

    if (!seg || !*seg)
        return ERR_PARSE;
    if (strlen(seg) >= size)
        return ERR_RANGE;
    memcpy(buf, seg, strlen(seg) + 1);
    return 0;
}

/* What one gcp_rest_call carries from attempt to attempt. */
struct call {
    struct gcp_rest *r;
    const char *where; /* "<name> <call>" */
    const char *method;
    const char *url;
    const char *body;
    char *token;
    struct http_client_response resp;
    struct gcp_error_info info; /* what the last failed attempt met */
    int last;                   /* ERR_IO or ERR_AGAIN: what the last retried attempt met */
    int unauthorized;           /* 401s seen */
    struct error *e;
};

/* Note a retried failure with its words. */
static int again(struct call *x, int last, const char *reason, const char *message)
{
    x->last = last;
    snprintf(x->info.reason, sizeof(x->info.reason), "%s", reason);
    snprintf(x->info.message, sizeof(x->info.message), "%.250s", message);
    strbuf_printable(x->info.message);
    return RETRY_AGAIN;
}

/* One attempt (retry_attempt_fn): 0 with a 2xx answer in x->resp, RETRY_AGAIN, or an error. */
static int call_attempt(void *arg, int attempt)
{
    struct call *x = arg;
    struct gcp_rest *r = x->r;
    struct http_client_header h[3];
    struct http_client_request req = {0};
    struct error sub = {0};
    struct strbuf auth = {0};
    struct jv *doc = NULL;
    int rc, known;

    (void)attempt;
    http_client_response_clear(&x->resp);
    crypto_free_string(x->token);
    x->token = NULL;
    rc = gcp_auth_token(r->auth, r->clock(r->hook_arg), &x->token, &sub);
    if (rc == ERR_AGAIN || rc == ERR_IO)
        return again(x, rc == ERR_IO ? ERR_IO : ERR_AGAIN, "(token)", sub.msg);
    if (rc < 0)
        return err_set(x->e, rc, x->where, 0, 0, "no access token: %.300s", sub.msg);
    strbuf_str(&auth, "Bearer ");
    strbuf_str(&auth, x->token);
    if (auth.failed)
        return err_set(x->e, ERR_NOMEM, x->where, 0, 0, "out of memory");
    h[0] = (struct http_client_header){"Authorization", auth.p};
    h[1] = (struct http_client_header){"Accept", "application/json"};
    h[2] = (struct http_client_header){"Content-Type", "application/json"};
    req.method = x->method;
    req.url = x->url;
    req.headers = h;
    req.nheaders = x->body ? 3 : 2;
    req.body = x->body;
    req.body_len = x->body ? strlen(x->body) : 0;
    req.timeout_ms = r->timeout_ms;
    req.insecure = r->tls_insecure;
    rc = http_client_do(r->http, &req, &x->resp, &sub);
    strbuf_free(&auth);
    if (rc == ERR_IO || rc == ERR_AGAIN) /* a transport failure or a timeout */
        return again(x, ERR_IO, "(transport)", sub.msg);
    if (rc < 0)
        return err_set(x->e, rc, x->where, 0, 0, "%.300s", sub.msg);
    if (x->resp.status >= 200 && x->resp.status < 300)
        return 0;
    if (x->resp.status == 401 && !x->unauthorized++) {
        /* the token may have been revoked or expired early: a new one, once */
        gcp_auth_invalidate(r->auth);
        return again(x, ERR_INVAL, "HTTP 401", "unauthorized; fetching a new token");
    }
    x->info.http_status = x->resp.status;
    known = jv_parse(x->resp.body, x->resp.body_len, &doc, NULL) == 0 &&
            gcp_error_read(jv_get(doc, "error"), &x->info) == 0;
    jv_free(doc);
    strbuf_redact(x->info.message, x->token);
    if (x->resp.status == 401)
        return err_set(x->e, ERR_INVAL, x->where, 0, 0, "HTTP 401 with a new token: %s: %s",
                       x->info.reason, x->info.message);
    if (known && x->info.err < 0 && (x->info.err != ERR_UNKNOWN || x->resp.status < 500))
        return err_set(x->e, x->info.err, x->where, 0, 0, "%sHTTP %ld %s: %s",
                       x->info.err == ERR_UNKNOWN ? "unknown error reason: " : "", x->resp.status,
                       x->info.reason, x->info.message);
    if (!known && x->resp.status < 500 && x->resp.status != 429)
        return err_set(x->e, ERR_PARSE, x->where, 0, 0,
                       "HTTP %ld with an answer that is not a Google error document",
                       x->resp.status);
    if (!known)
        snprintf(x->info.reason, sizeof(x->info.reason), "HTTP %ld", x->resp.status);
    x->last = ERR_AGAIN; /* 429, 5xx, or a rate-limit reason */
    return RETRY_AGAIN;
}

/* Before a retry's wait (retry_wait_fn): one log line. */
static void call_wait(void *arg, int attempt, int max_attempts, long delay)
{
    struct call *x = arg;

    log_line(x->r, x->token, "%s: %s: %s: %s; retry %d of %d in %ld ms", x->where,
             x->last == ERR_IO ? "transport failure" : "throttled or server error", x->info.reason,
             x->info.message, attempt + 1, max_attempts - 1, delay);
}

int gcp_rest_call(struct gcp_rest *r, const char *call, const char *method, const char *path,
                  const char *body, struct jv **out, struct gcp_error_info *info, struct error *e)
{
    struct call x = {0};
    struct strbuf url = {0};
    struct error sub = {0};
    struct jv *doc = NULL;
    char where[96];
    int rc;

    if (!r || !call || !method || !path || path[0] != '/' || !out)
        return err_set(e, ERR_INVAL, r ? r->name : "gcp", 0, 0, "no client, call, path or output");
    snprintf(where, sizeof(where), "%s %.60s", r->name, call);
    strbuf_str(&url, r->endpoint);
    strbuf_str(&url, path);
    if (url.failed)
        return err_set(e, ERR_NOMEM, where, 0, 0, "out of memory building the request");
    x.r = r;
    x.where = where;
    x.method = method;
    x.url = url.p;
    x.body = body;
    x.e = e;
    rc = retry_run(&r->retry, call_attempt, call_wait, &x);
    if (rc == RETRY_AGAIN) {
        rc = err_set(e, x.last == ERR_INVAL ? ERR_AGAIN : x.last, where, 0, 0,
                     "gave up after %d attempts: %s %s", r->retry.max_attempts, x.info.reason,
                     x.info.message);
        goto out;
    }
    if (rc < 0)
        goto out;
    rc = jv_parse(x.resp.body, x.resp.body_len, &doc, &sub);
    if (rc == 0 && jv_type_of(doc) != JV_OBJECT)
        rc = ERR_PARSE;
    if (rc < 0) {
        rc = err_set(e, rc == ERR_NOMEM ? rc : ERR_PARSE, where, 0, 0,
                     "HTTP %ld with an answer that is not a JSON object%s%.200s", x.resp.status,
                     sub.msg[0] ? ": " : "", sub.msg);
        jv_free(doc);
        goto out;
    }
    *out = doc;
out:
    if (rc < 0) {
        if (e)
            strbuf_redact(e->msg, x.token);
        log_line(r, x.token, "%s failed: %s", where, e ? e->msg : err_str(rc));
    }
    if (info)
        *info = rc < 0 ? x.info : (struct gcp_error_info){0};
    crypto_free_string(x.token);
    http_client_response_clear(&x.resp);
    strbuf_free(&url);
    return rc;
}
