/* json_api.c: one call of an AWS JSON 1.1 API (see json_api.h): signed with SigV4 over
 * util/http_client, errors read from the JSON body and mapped by the API's table, retries with
 * backoff and full jitter, secrets starred out of every message and log line. */
#include "providers/aws/json_api.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/aws/ec2.h"
#include "providers/retry.h"
#include "util/http_client.h"
#include "util/sigv4.h"
#include "util/strbuf.h"

#define AWS_JSON_TIMEOUT_MS 30000

struct aws_json {
    const struct aws_json_api *api;
    char endpoint[512];
    char signing_region[32];
    struct http_client_url url;
    int tls_insecure;
    long timeout_ms;
    struct retry retry;
    struct aws_credential_source *credentials;
    int64_t (*clock)(void *arg);
    void (*log)(void *arg, const char *line);
    void *hook_arg;
    struct http_client *http;
};

int aws_json_new(const struct aws_json_api *api, const char *default_endpoint,
                 const char *default_region, const struct aws_json_config *cfg,
                 struct aws_json **out, struct error *e)
{
    const char *any = getenv("AWS_ENDPOINT_URL");
    const char *region =
        cfg && cfg->signing_region && *cfg->signing_region ? cfg->signing_region : default_region;
    struct aws_json *j;
    int rc;

    if (!api || !cfg || !out || !cfg->credentials)
        return err_set(e, ERR_INVAL, api ? api->who : "aws", 0, 0, "a credential source is needed");
    if (!region || !*region || strlen(region) >= sizeof(j->signing_region))
        return err_set(e, ERR_INVAL, api->who, 0, 0, "a region of at most %zu characters is needed",
                       sizeof(j->signing_region) - 1);
    j = calloc(1, sizeof(*j));
    if (!j)
        return ERR_NOMEM;
    j->api = api;
    /* the configured endpoint, the environment's, else the public one */
    rc = ec2_resolve_endpoint(cfg->endpoint, getenv(api->env), any && *any ? any : default_endpoint,
                              region, j->endpoint, sizeof(j->endpoint));
    if (rc < 0) {
        rc = err_set(e, ERR_INVAL, api->who, 0, 0, "endpoint too long");
        goto fail;
    }
    if ((rc = ec2_endpoint_check(api->who, j->endpoint, cfg->tls_insecure, &j->url, e)) < 0)
        goto fail;
    snprintf(j->signing_region, sizeof(j->signing_region), "%s", region);
    j->tls_insecure = cfg->tls_insecure;
    j->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : AWS_JSON_TIMEOUT_MS;
    retry_init(&j->retry, cfg->max_attempts, cfg->backoff_base_ms, cfg->backoff_cap_ms, cfg->seed,
               cfg->sleep_ms, cfg->hook_arg);
    j->credentials = cfg->credentials;
    j->clock = cfg->clock ? cfg->clock : retry_default_clock;
    j->log = cfg->log ? cfg->log : retry_default_log;
    j->hook_arg = cfg->hook_arg;
    if ((rc = http_client_new(&j->http)) < 0)
        goto fail;
    *out = j;
    return 0;
fail:
    free(j);
    return rc;
}

void aws_json_free(struct aws_json *j)
{
    if (!j)
        return;
    http_client_free(j->http);
    free(j);
}

const char *aws_json_endpoint(const struct aws_json *j)
{
    return j->endpoint;
}

/* Log a line with the secret and session token (cred may be NULL) starred out. */
static void json_log_line(struct aws_json *j, const struct aws_credentials *cred, char *line)
{
    if (cred) {
        strbuf_redact(line, cred->secret_access_key);
        strbuf_redact(line, cred->session_token);
    }
    j->log(j->hook_arg, line);
}

void aws_json_log(struct aws_json *j, const char *fmt, ...)
{
    char line[768];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    json_log_line(j, NULL, line);
}

/* What one call carries from attempt to attempt. */
struct json_call {
    struct aws_json *j;
    const char *where, *target, *body;
    struct aws_credentials cred;
    struct http_client_response r;
    char code[96], message[256], request_id[160];
    int last;    /* ERR_IO, ERR_AGAIN or ERR_PERM: what the last retried attempt met */
    int renewed; /* 1: the credentials were fetched anew after AWS refused them */
    struct error *e;
};

/* 1 for the error types with which AWS refuses credentials that have expired or been replaced
 * (or a request signed too far from AWS's clock): worth one more try with credentials fetched
 * anew. */
static int json_expired(const char *code)
{
    static const char *const types[] = {"ExpiredTokenException", "ExpiredToken", "RequestExpired",
                                        "UnrecognizedClientException", "InvalidClientTokenId"};

    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        if (strcmp(code, types[i]) == 0)
            return 1;
    return 0;
}

/* The error type of a JSON error body ("__type", after any '#' and before any ':', as the AWS
 * JSON protocol allows a namespace before it and extra data after it), its message, into x; 0,
 * or ERR_PARSE when the body is not such a document. */
static int json_read_error(struct json_call *x)
{
    struct jv *doc = NULL;
    const char *type, *msg, *hash;
    int rc = ERR_PARSE;

    if (jv_parse(x->r.body, x->r.body_len, &doc, NULL) < 0)
        return ERR_PARSE;
    type = jv_string_value(jv_get(doc, "__type"));
    msg = jv_string_value(jv_get(doc, "message"));
    if (!msg)
        msg = jv_string_value(jv_get(doc, "Message"));
    if (type && *type) {
        hash = strrchr(type, '#');
        snprintf(x->code, sizeof(x->code), "%s", hash ? hash + 1 : type);
        x->code[strcspn(x->code, ":")] = '\0';
        snprintf(x->message, sizeof(x->message), "%s", msg ? msg : "");
        strbuf_printable(x->code);
        strbuf_printable(x->message);
        rc = 0;
    }
    jv_free(doc);
    return rc;
}

/* Sign and send one attempt; the answer into x->r. Errors: the signature's and http_client_do's,
 * described in *sub. */
static int json_send(struct json_call *x, int64_t now, struct error *sub)
{
    struct aws_json *j = x->j;
    struct sigv4_header sh[3] = {{"Host", j->url.authority},
                                 {"Content-Type", AWS_JSON_CONTENT_TYPE},
                                 {"X-Amz-Target", x->target}};
    struct sigv4_request sreq = {"POST", j->url.path, NULL, sh, 3, x->body, strlen(x->body)};
    struct sigv4_params sp = {j->signing_region, j->api->service, now, SIGV4_NORMALIZE_PATH, NULL};
    struct sigv4_credentials sc = {x->cred.access_key_id, x->cred.secret_access_key,
                                   x->cred.session_token};
    struct sigv4_signed s = {0};
    struct http_client_header hs[3 + SIGV4_MAX_ADDED + 1];
    struct http_client_request req = {0};
    size_t n = 0;
    int rc;

    if ((rc = sigv4_sign(&sreq, &sc, &sp, &s)) < 0)
        return err_set(sub, rc, x->where, 0, 0, "cannot sign the request (%s)", err_str(rc));
    for (size_t i = 0; i < 3; i++)
        hs[n++] = (struct http_client_header){sh[i].name, sh[i].value};
    for (size_t i = 0; i < s.n_added; i++)
        hs[n++] = (struct http_client_header){s.added[i].name, s.added[i].value};
    hs[n++] = (struct http_client_header){"Authorization", s.authorization};
    req.method = "POST";
    req.url = j->endpoint;
    req.headers = hs;
    req.nheaders = n;
    req.body = x->body;
    req.body_len = strlen(x->body);
    req.timeout_ms = j->timeout_ms;
    req.insecure = j->tls_insecure;
    req.capture_header = "x-amzn-RequestId";
    rc = http_client_do(j->http, &req, &x->r, sub);
    sigv4_signed_free(&s);
    return rc;
}

/* One signed attempt (retry_attempt_fn): 0 with a 200 answer in x->r, RETRY_AGAIN, or an error
 * for good. */
static int json_attempt(void *arg, int attempt)
{
    struct json_call *x = arg;
    struct aws_json *j = x->j;
    struct error sub = {0};
    int64_t now = j->clock(j->hook_arg);
    int rc, mapped;

    (void)attempt;
    http_client_response_clear(&x->r);
    aws_credentials_clear(&x->cred);
    rc = aws_credential_source_get(j->credentials, now, &x->cred, &sub);
    if (rc < 0) /* none to be had (a missing or malformed source) is ERR_PERM, as for EC2: not an
                 * error type of the API's (the chain's ERR_NOENT is not NoSuchResourceException) */
        return err_set(x->e, rc == ERR_IO || rc == ERR_AGAIN || rc == ERR_NOMEM ? rc : ERR_PERM,
                       x->where, 0, 0, "no credentials: %.300s", sub.msg);
    rc = json_send(x, now, &sub);
    if (rc == ERR_IO || rc == ERR_AGAIN) { /* a transport failure or a timeout */
        x->last = ERR_IO;
        snprintf(x->code, sizeof(x->code), "(transport)");
        snprintf(x->message, sizeof(x->message), "%.250s", sub.msg);
        snprintf(x->request_id, sizeof(x->request_id), "(none)");
        return RETRY_AGAIN;
    }
    if (rc < 0) /* the signature (never ERR_IO or ERR_AGAIN), or the client's own error */
        return err_set(x->e, rc, x->where, 0, 0, "%.300s", sub.msg);
    snprintf(x->request_id, sizeof(x->request_id), "%s",
             x->r.captured[0] ? x->r.captured : "(none)");
    strbuf_printable(x->request_id);
    if (x->r.status == 200)
        return 0;
    if (json_read_error(x) == 0) {
        if (json_expired(x->code)) {
            if (x->renewed)
                return err_set(x->e, ERR_PERM, x->where, 0, 0,
                               "%s: %s (request id %s; refused again with credentials fetched "
                               "anew)",
                               x->code, x->message, x->request_id);
            x->renewed = 1;
            x->last = ERR_PERM;
            aws_credential_source_forget(j->credentials);
            return RETRY_AGAIN;
        }
        mapped = ERR_UNKNOWN;
        for (size_t i = 0; i < j->api->n_codes && mapped == ERR_UNKNOWN; i++)
            if (strcmp(x->code, j->api->codes[i].type) == 0)
                mapped = j->api->codes[i].err;
        if (mapped == ERR_UNKNOWN)
            return err_set(x->e, ERR_UNKNOWN, x->where, 0, 0,
                           "unknown error type %s (HTTP %ld): %s (request id %s)", x->code,
                           x->r.status, x->message, x->request_id);
        if (mapped < 0)
            return err_set(x->e, mapped, x->where, 0, 0, "%s: %s (request id %s)", x->code,
                           x->message, x->request_id);
    } else if (x->r.status < 500) {
        return err_set(x->e, ERR_PARSE, x->where, 0, 0,
                       "HTTP %ld with an answer that is not a JSON error (request id %s)",
                       x->r.status, x->request_id);
    } else {
        snprintf(x->code, sizeof(x->code), "HTTP %ld", x->r.status);
        x->message[0] = '\0';
    }
    x->last = ERR_AGAIN;
    return RETRY_AGAIN;
}

/* Before a retry's wait (retry_wait_fn): one log line. */
static void json_wait(void *arg, int attempt, int max_attempts, long delay)
{
    struct json_call *x = arg;
    char line[768];

    snprintf(line, sizeof(line), "%s: %s: %s: %s (request id %s); retry %d of %d in %ld ms",
             x->where,
             x->last == ERR_IO     ? "transport failure"
             : x->last == ERR_PERM ? "credentials refused, fetched anew"
                                   : "throttled or server error",
             x->code, x->message, x->request_id, attempt + 1, max_attempts - 1, delay);
    json_log_line(x->j, &x->cred, line);
}

int aws_json_call(struct aws_json *j, const char *where, const char *target, const char *body,
                  struct jv **out, char *rid, size_t rid_size, struct error *e)
{
    struct json_call x = {0};
    struct error sub = {0};
    int rc;

    if (!j || !where || !target || !body || !out || !rid)
        return err_set(e, ERR_INVAL, where ? where : "aws", 0, 0, "missing argument");
    x.j = j;
    x.where = where;
    x.target = target;
    x.body = body;
    x.e = e;
    rc = retry_run(&j->retry, json_attempt, json_wait, &x);
    if (rc == RETRY_AGAIN)
        rc = err_set(e, x.last, where, 0, 0, "gave up after %d attempts: %s %s (request id %s)",
                     j->retry.max_attempts, x.code, x.message, x.request_id);
    if (rc == 0) {
        rc = jv_parse(x.r.body, x.r.body_len, out, &sub);
        if (rc < 0)
            rc = err_set(e, rc == ERR_NOMEM ? rc : ERR_PARSE, where, 0, 0,
                         "the answer is not JSON: %.200s (request id %s)", sub.msg, x.request_id);
        else
            snprintf(rid, rid_size, "%s", x.request_id);
    }
    if (rc < 0 && e) {
        strbuf_redact(e->msg, x.cred.secret_access_key);
        strbuf_redact(e->msg, x.cred.session_token);
    }
    aws_credentials_clear(&x.cred);
    http_client_response_clear(&x.r);
    return rc;
}
