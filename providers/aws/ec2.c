/* ec2.c: the EC2 Query API client: requests signed with SigV4, answers read as XML, AWS error
 * codes mapped into castor's table, retries with exponential backoff and full jitter. */
#include "providers/aws/ec2.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/retry.h"
#include "util/crypto.h"
#include "util/http_client.h"
#include "util/sigv4.h"
#include "util/strbuf.h"
#include "util/timestamp.h"
#include "util/vec.h"

#define DEFAULT_TIMEOUT_MS 30000
#define TERMINATE_BATCH 1000
#define MAX_PAGES 10000 /* a server that never stops paginating is an error, not a hang */

struct ec2_client {
    char region[64];
    char endpoint[512];
    struct http_client_url url;
    int tls_insecure;
    long timeout_ms;
    struct retry retry;
    int page_size;
    struct aws_credential_source *credentials;
    int64_t (*clock)(void *arg);
    void (*log)(void *arg, const char *line);
    void *hook_arg;
    struct http_client *http;
};

struct ec2_param {
    char *key, *value;
};

struct ec2_params {
    struct ec2_param *items;
    size_t n, cap;
    int failed;
};

/* ---- parameters ---- */

struct ec2_params *ec2_params_new(void)
{
    return calloc(1, sizeof(struct ec2_params));
}

void ec2_params_add(struct ec2_params *p, const char *value, const char *key_fmt, ...)
{
    struct ec2_param *grown;
    char key[256];
    va_list ap;
    int n;

    if (!p || p->failed)
        return;
    va_start(ap, key_fmt);
    n = vsnprintf(key, sizeof(key), key_fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(key) || !value) {
        p->failed = 1;
        return;
    }
    if (!(grown = vec_grow(p->items, &p->cap, p->n, sizeof(*grown)))) {
        p->failed = 1;
        return;
    }
    p->items = grown;
    p->items[p->n].key = strdup(key);
    p->items[p->n].value = strdup(value);
    if (!p->items[p->n].key || !p->items[p->n].value) {
        free(p->items[p->n].key);
        free(p->items[p->n].value);
        p->failed = 1;
        return;
    }
    p->n++;
}

void ec2_params_free(struct ec2_params *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++) {
        free(p->items[i].key);
        free(p->items[i].value);
    }
    free(p->items);
    free(p);
}

/* Remove the last parameter if its key is key (the NextToken of the previous page). */
static void params_drop(struct ec2_params *p, const char *key)
{
    if (p && p->n > 0 && strcmp(p->items[p->n - 1].key, key) == 0) {
        p->n--;
        free(p->items[p->n].key);
        free(p->items[p->n].value);
    }
}

/* ---- configuration ---- */

int ec2_resolve_endpoint(const char *configured, const char *env_ec2, const char *env_any,
                         const char *region, char *buf, size_t size)
{
    char tmp[512];
    size_t n;
    int w;

    if (!region || !*region || !buf)
        return ERR_INVAL;
    if (configured && *configured)
        w = snprintf(tmp, sizeof(tmp), "%s", configured);
    else if (env_ec2 && *env_ec2)
        w = snprintf(tmp, sizeof(tmp), "%s", env_ec2);
    else if (env_any && *env_any)
        w = snprintf(tmp, sizeof(tmp), "%s", env_any);
    else
        w = snprintf(tmp, sizeof(tmp), "https://ec2.%s.amazonaws.com", region);
    if (w < 0 || (size_t)w >= sizeof(tmp))
        return ERR_RANGE;
    n = (size_t)w;
    while (n > 0 && tmp[n - 1] == '/')
        tmp[--n] = '\0';
    if (n + 1 > size)
        return ERR_RANGE;
    memcpy(buf, tmp, n + 1);
    return 0;
}

int ec2_endpoint_check(const char *who, const char *endpoint, int tls_insecure,
                       struct http_client_url *url, struct error *e)
{
    struct http_client_url u;

    if (http_client_parse_url(endpoint, &u) < 0 || u.query[0])
        return err_set(e, ERR_INVAL, who, 0, 0,
                       "endpoint %.200s is not an http(s) URL without query", endpoint);
    if (strcmp(u.scheme, "https") != 0 && !u.loopback)
        return err_set(e, ERR_INVAL, who, 0, 0, "plain http is accepted only on loopback (%.200s)",
                       endpoint);
    if (tls_insecure && !u.loopback)
        return err_set(e, ERR_INVAL, who, 0, 0,
                       "TLS verification may be turned off only for a loopback endpoint");
    *url = u;
    return 0;
}

int ec2_client_new(const struct ec2_config *cfg, struct ec2_client **out, struct error *e)
{
    struct ec2_client *c;
    int rc;

    if (!cfg || !out || !cfg->region || !*cfg->region || !cfg->credentials)
        return err_set(e, ERR_INVAL, "ec2", 0, 0, "a region and a credential source are needed");
    if (strlen(cfg->region) >= sizeof(c->region))
        return err_set(e, ERR_INVAL, "ec2", 0, 0, "region name too long");
    c = calloc(1, sizeof(*c));
    if (!c)
        return ERR_NOMEM;
    snprintf(c->region, sizeof(c->region), "%s", cfg->region);
    rc = ec2_resolve_endpoint(cfg->endpoint, getenv("AWS_ENDPOINT_URL_EC2"),
                              getenv("AWS_ENDPOINT_URL"), cfg->region, c->endpoint,
                              sizeof(c->endpoint));
    if (rc < 0) {
        rc = err_set(e, ERR_INVAL, "ec2", 0, 0, "endpoint too long");
        goto fail;
    }
    if ((rc = ec2_endpoint_check("ec2", c->endpoint, cfg->tls_insecure, &c->url, e)) < 0)
        goto fail;
    c->tls_insecure = cfg->tls_insecure;
    c->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : DEFAULT_TIMEOUT_MS;
    retry_init(&c->retry, cfg->max_attempts, cfg->backoff_base_ms, cfg->backoff_cap_ms, cfg->seed,
               cfg->sleep_ms, cfg->hook_arg);
    c->page_size = cfg->page_size;
    c->credentials = cfg->credentials;
    c->clock = cfg->clock ? cfg->clock : retry_default_clock;
    c->log = cfg->log ? cfg->log : retry_default_log;
    c->hook_arg = cfg->hook_arg;
    rc = http_client_new(&c->http);
    if (rc < 0)
        goto fail;
    *out = c;
    return 0;
fail:
    free(c);
    return rc;
}

void ec2_client_free(struct ec2_client *c)
{
    if (!c)
        return;
    http_client_free(c->http);
    free(c);
}

const char *ec2_client_endpoint(const struct ec2_client *c)
{
    return c->endpoint;
}

const char *ec2_market_name(enum ec2_market m)
{
    return m == EC2_SPOT ? "spot" : "on-demand";
}

/* ---- errors ---- */

static const struct {
    const char *code;
    int err;
} error_codes[] = {
    /* the pool cannot serve now: fail over and remember it for a while */
    {"InsufficientInstanceCapacity", ERR_CAPACITY},
    {"InsufficientHostCapacity", ERR_CAPACITY},
    {"InsufficientReservedInstanceCapacity", ERR_CAPACITY},
    {"InsufficientCapacity", ERR_CAPACITY},
    {"Unsupported", ERR_CAPACITY},
    {"SpotMaxPriceTooLow", ERR_CAPACITY},
    {"InsufficientFreeAddressesInSubnet", ERR_CAPACITY},
    /* a quota: skip the pool until it changes */
    {"VcpuLimitExceeded", ERR_QUOTA},
    {"MaxSpotInstanceCountExceeded", ERR_QUOTA},
    {"InstanceLimitExceeded", ERR_QUOTA},
    {"MaxSpotFleetRequestCountExceeded", ERR_QUOTA},
    {"MaxFleetCountExceeded", ERR_QUOTA},
    {"ResourceLimitExceeded", ERR_QUOTA},
    /* retried: 0 */
    {"RequestLimitExceeded", 0},
    {"Throttling", 0},
    {"ThrottlingException", 0},
    {"InternalError", 0},
    {"InternalFailure", 0},
    {"ServiceUnavailable", 0},
    {"Unavailable", 0},
    /* credentials refused as expired, or the clock off by more than AWS allows (the request's
     * date stamp 15 minutes away from AWS's: RequestExpired): asked again once with credentials
     * fetched anew, then ERR_PERM. Checked before the Invalid* prefix below. */
    {"RequestExpired", ERR_PERM},
    {"ExpiredToken", ERR_PERM},
    {"ExpiredTokenException", ERR_PERM},
    {"InvalidClientTokenId", ERR_PERM},
    /* refused for good */
    {"AuthFailure", ERR_INVAL},
    {"UnauthorizedOperation", ERR_INVAL},
    {"SignatureDoesNotMatch", ERR_INVAL},
    {"OptInRequired", ERR_INVAL},
    {"Blocked", ERR_INVAL},
    {"DryRunOperation", ERR_INVAL},
    {"IdempotentParameterMismatch", ERR_CONFLICT},
};

int ec2_error_code(const char *code)
{
    size_t n;

    if (!code)
        return ERR_UNKNOWN;
    for (size_t i = 0; i < sizeof(error_codes) / sizeof(error_codes[0]); i++)
        if (strcmp(code, error_codes[i].code) == 0)
            return error_codes[i].err;
    n = strlen(code);
    if (n > 9 && strcmp(code + n - 9, ".NotFound") == 0)
        return ERR_NOENT;
    if (strncmp(code, "Invalid", 7) == 0 || strncmp(code, "Missing", 7) == 0 ||
        strncmp(code, "Unknown", 7) == 0)
        return ERR_INVAL;
    return ERR_UNKNOWN;
}

/* Star out the secret and the session token in s (NUL-terminated, in place): a server that
 * echoes them gets them nowhere. */
static void scrub(char *s, const struct aws_credentials *cred)
{
    if (cred) {
        strbuf_redact(s, cred->secret_access_key);
        strbuf_redact(s, cred->session_token);
    }
}

/* Log a printf-formatted line, scrubbed. */
static void log_line(struct ec2_client *c, const struct aws_credentials *cred, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void log_line(struct ec2_client *c, const struct aws_credentials *cred, const char *fmt, ...)
{
    char line[768];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    scrub(line, cred);
    c->log(c->hook_arg, line);
}

/* What an error answer said. */
struct aws_error {
    char code[64];
    char message[256];
    char request_id[80];
};

/* Read <Response><Errors><Error><Code>, <Message> and <RequestID>; 0, or ERR_PARSE when the
 * body is not such a document (the fields then say "(none)"). */
static int read_error(const char *body, size_t len, struct aws_error *ae)
{
    struct xml_doc *doc = NULL;
    struct xml_node *root, *err;
    int rc = ERR_PARSE;

    snprintf(ae->code, sizeof(ae->code), "(none)");
    snprintf(ae->message, sizeof(ae->message), "(none)");
    snprintf(ae->request_id, sizeof(ae->request_id), "(none)");
    if (xml_parse(body, len, &doc, NULL) < 0)
        return ERR_PARSE;
    root = xml_root(doc);
    /* the Query protocol's shape; some front ends answer <ErrorResponse><Error> */
    err = xml_find(root, "Errors/Error");
    if (!err)
        err = xml_child(root, "Error");
    if (err && xml_copy(err, "Code", ae->code, sizeof(ae->code)) == 0) {
        rc = 0;
        if (xml_copy(err, "Message", ae->message, sizeof(ae->message)) == ERR_RANGE) {
            char *full = NULL;

            if (xml_text(xml_child(err, "Message"), &full) == 0)
                snprintf(ae->message, sizeof(ae->message), "%.250s...", full);
            free(full);
        }
    }
    if (xml_copy(root, "RequestID", ae->request_id, sizeof(ae->request_id)) < 0)
        xml_copy(root, "RequestId", ae->request_id, sizeof(ae->request_id));
    strbuf_printable(ae->code);
    strbuf_printable(ae->message);
    strbuf_printable(ae->request_id);
    xml_free(doc);
    return rc;
}

/* ---- one call ---- */

/* The form body: Action, Version, then the parameters, each percent-encoded. */
static char *form_body(const char *action, const struct ec2_params *p)
{
    struct strbuf b = {0};

    strbuf_str(&b, "Action=");
    strbuf_add_uri_encoded(&b, action, strlen(action));
    strbuf_str(&b, "&Version=" EC2_API_VERSION);
    for (size_t i = 0; p && i < p->n; i++) {
        strbuf_chr(&b, '&');
        strbuf_add_uri_encoded(&b, p->items[i].key, strlen(p->items[i].key));
        strbuf_chr(&b, '=');
        strbuf_add_uri_encoded(&b, p->items[i].value, strlen(p->items[i].value));
    }
    return strbuf_take(&b);
}

/* Sign and send one attempt; the answer into *r. */
static int send_once(struct ec2_client *c, const struct aws_credentials *cred, const char *body,
                     struct http_client_response *r, struct error *e)
{
    static const char content_type[] = "application/x-www-form-urlencoded; charset=utf-8";
    struct sigv4_header sh[2] = {{"Host", c->url.authority}, {"Content-Type", content_type}};
    struct sigv4_request sreq = {"POST", c->url.path, NULL, sh, 2, body, strlen(body)};
    struct sigv4_credentials sc = {cred->access_key_id, cred->secret_access_key,
                                   cred->session_token};
    struct sigv4_params sp = {c->region, "ec2", c->clock(c->hook_arg), SIGV4_NORMALIZE_PATH, NULL};
    struct sigv4_signed s = {0};
    struct http_client_header hs[2 + SIGV4_MAX_ADDED + 1];
    struct http_client_request req = {0};
    size_t n = 0;
    int rc;

    rc = sigv4_sign(&sreq, &sc, &sp, &s);
    if (rc < 0)
        return err_set(e, rc, "sigv4", 0, 0, "cannot sign the request (%s)", err_str(rc));
    hs[n++] = (struct http_client_header){"Host", c->url.authority};
    hs[n++] = (struct http_client_header){"Content-Type", content_type};
    for (size_t i = 0; i < s.n_added; i++)
        hs[n++] = (struct http_client_header){s.added[i].name, s.added[i].value};
    hs[n++] = (struct http_client_header){"Authorization", s.authorization};
    req.method = "POST";
    req.url = c->endpoint;
    req.headers = hs;
    req.nheaders = n;
    req.body = body;
    req.body_len = strlen(body);
    req.timeout_ms = c->timeout_ms;
    req.insecure = c->tls_insecure;
    req.capture_header = "x-amzn-RequestId";
    rc = http_client_do(c->http, &req, r, e);
    sigv4_signed_free(&s);
    return rc;
}

/* What one ec2_call carries from attempt to attempt. */
struct call {
    struct ec2_client *c;
    const char *where; /* "ec2 <Action>" */
    const char *body;
    struct aws_credentials cred;
    struct http_client_response r;
    struct aws_error ae; /* what the last failed attempt met */
    int last;            /* ERR_IO (transport), ERR_AGAIN (throttled, 5xx) or ERR_PERM (credentials
                          * refused): the last retried */
    int renewed;         /* 1: the credentials were fetched anew after AWS refused them */
    struct error *e;
};

/* The request id of an answer that does not parse: the x-amzn-RequestId header, else the text
 * of a <requestId> or <RequestID> element in the raw body (a truncated answer still has it near
 * its start), else "(none)". */
static void raw_request_id(const struct http_client_response *r, char *buf, size_t size)
{
    static const char *const tags[] = {"<requestId>", "<RequestID>", "<RequestId>"};

    snprintf(buf, size, "(none)");
    if (r->captured[0]) {
        snprintf(buf, size, "%.70s", r->captured);
    } else {
        for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++) {
            const char *at = r->body ? strstr(r->body, tags[i]) : NULL;
            size_t n;

            if (!at)
                continue;
            at += strlen(tags[i]);
            n = strcspn(at, "<");
            if (at[n] == '<' && n > 0 && n < size) {
                snprintf(buf, size, "%.*s", (int)n, at);
                break;
            }
        }
    }
    strbuf_printable(buf);
}

/* One signed attempt (retry_attempt_fn): 0 with a 200 answer in x->r, RETRY_AGAIN, or an
 * error for good. */
static int call_attempt(void *arg, int attempt)
{
    struct call *x = arg;
    struct ec2_client *c = x->c;
    struct error sub = {0};
    int rc, known, mapped;

    (void)attempt;
    http_client_response_clear(&x->r);
    aws_credentials_clear(&x->cred);
    rc = aws_credential_source_get(c->credentials, c->clock(c->hook_arg), &x->cred, &sub);
    if (rc < 0) /* none to be had (a missing or malformed source) is ERR_PERM: nothing was sent */
        return err_set(x->e, rc == ERR_IO || rc == ERR_AGAIN || rc == ERR_NOMEM ? rc : ERR_PERM,
                       x->where, 0, 0, "no credentials: %.300s", sub.msg);
    rc = send_once(c, &x->cred, x->body, &x->r, &sub);
    if (rc == ERR_IO || rc == ERR_AGAIN) { /* a transport failure or a timeout */
        x->last = ERR_IO;
        snprintf(x->ae.code, sizeof(x->ae.code), "(transport)");
        snprintf(x->ae.message, sizeof(x->ae.message), "%.250s", sub.msg);
        snprintf(x->ae.request_id, sizeof(x->ae.request_id), "(none)");
        return RETRY_AGAIN;
    }
    if (rc < 0)
        return err_set(x->e, rc, x->where, 0, 0, "%.300s", sub.msg);
    if (x->r.status == 200)
        return 0;
    known = read_error(x->r.body, x->r.body_len, &x->ae) == 0;
    mapped = known ? ec2_error_code(x->ae.code) : 0;
    if (mapped == ERR_PERM && !x->renewed) {
        /* expired (or rotated) credentials: drop the cached ones and ask again, once */
        x->renewed = 1;
        x->last = ERR_PERM;
        aws_credential_source_forget(c->credentials);
        return RETRY_AGAIN;
    }
    if (known && mapped == ERR_UNKNOWN)
        return err_set(x->e, ERR_UNKNOWN, x->where, 0, 0,
                       "unknown error code %s (HTTP %ld): %s (request id %s)", x->ae.code,
                       x->r.status, x->ae.message, x->ae.request_id);
    if (known && mapped < 0) /* refused for good, whatever the status (capacity comes as 500) */
        return err_set(x->e, mapped, x->where, 0, 0, "%s: %s (request id %s)", x->ae.code,
                       x->ae.message, x->ae.request_id);
    if (!known && x->r.status < 500) { /* refused (by EC2 or a proxy before it): ERR_INVAL */
        raw_request_id(&x->r, x->ae.request_id, sizeof(x->ae.request_id));
        return err_set(x->e, ERR_INVAL, x->where, 0, 0,
                       "HTTP %ld with an answer that is not an EC2 error document (request id %s)",
                       x->r.status, x->ae.request_id);
    }
    if (!known)
        snprintf(x->ae.code, sizeof(x->ae.code), "HTTP %ld", x->r.status);
    x->last = ERR_AGAIN; /* throttled, or a server error */
    return RETRY_AGAIN;
}

/* Before a retry's wait (retry_wait_fn): one log line. */
static void call_wait(void *arg, int attempt, int max_attempts, long delay)
{
    struct call *x = arg;

    log_line(x->c, &x->cred, "%s: %s: %s: %s (request id %s); retry %d of %d in %ld ms", x->where,
             x->last == ERR_IO     ? "transport failure"
             : x->last == ERR_PERM ? "credentials refused, fetched anew"
                                   : "throttled or server error",
             x->ae.code, x->ae.message, x->ae.request_id, attempt + 1, max_attempts - 1, delay);
}

int ec2_call(struct ec2_client *c, const char *action, const struct ec2_params *p,
             struct xml_doc **out, struct error *e)
{
    struct call x = {0};
    struct error sub = {0};
    char where[80], expect[96];
    char *body = NULL;
    int rc = 0;

    if (!c || !action || !*action || !out)
        return err_set(e, ERR_INVAL, "ec2", 0, 0, "no client, action or output");
    snprintf(where, sizeof(where), "ec2 %.60s", action);
    if (p && p->failed)
        return err_set(e, ERR_NOMEM, where, 0, 0, "out of memory building the request");
    body = form_body(action, p);
    if (!body)
        return err_set(e, ERR_NOMEM, where, 0, 0, "out of memory building the request");
    x.c = c;
    x.where = where;
    x.body = body;
    x.e = e;
    rc = retry_run(&c->retry, call_attempt, call_wait, &x);
    if (rc == RETRY_AGAIN) {
        rc = err_set(e, x.last, where, 0, 0, "gave up after %d attempts: %s %s (request id %s)",
                     c->retry.max_attempts, x.ae.code, x.ae.message, x.ae.request_id);
        goto out;
    }
    if (rc < 0)
        goto out;
    rc = xml_parse(x.r.body, x.r.body_len, out, &sub);
    if (rc < 0) {
        char id[80];

        raw_request_id(&x.r, id, sizeof(id));
        rc = err_set(e, rc == ERR_EMPTY ? ERR_PARSE : rc, where, 0, 0,
                     "the answer is not XML: %.300s (request id %s)", sub.msg, id);
        goto out;
    }
    snprintf(expect, sizeof(expect), "%sResponse", action);
    if (strcmp(xml_name(xml_root(*out)), expect) != 0) {
        char id[80] = "(none)";

        xml_copy(xml_root(*out), "requestId", id, sizeof(id));
        strbuf_printable(id);
        rc = err_set(e, ERR_PARSE, where, 0, 0, "unexpected answer <%.60s> (request id %s)",
                     xml_name(xml_root(*out)), id);
        xml_free(*out);
        goto out;
    }
out:
    if (rc < 0) {
        if (e)
            scrub(e->msg, &x.cred);
        log_line(c, &x.cred, "%s failed: %s", where, e ? e->msg : err_str(rc));
    }
    aws_credentials_clear(&x.cred);
    http_client_response_clear(&x.r);
    free(body);
    return rc;
}

/* ---- reading answers ---- */

/* The request id of a successful answer, for messages. */
static void request_id(const struct xml_doc *doc, char *buf, size_t size)
{
    if (xml_copy(xml_root(doc), "requestId", buf, size) < 0)
        snprintf(buf, size, "(none)");
    strbuf_printable(buf);
}

/* ERR_PARSE naming the call, what is wrong and the request id. */
static int bad_answer(struct error *e, const char *action, const struct xml_doc *doc,
                      const char *what)
{
    char id[80], where[80];

    request_id(doc, id, sizeof(id));
    snprintf(where, sizeof(where), "ec2 %.60s", action);
    return err_set(e, ERR_PARSE, where, 0, 0, "%s (request id %s)", what, id);
}

/* Log a failure found in an answer that ec2_call accepted (ec2_call logs its own), with the
 * message that names the call and the request id; returns rc. */
static int logged(struct ec2_client *c, int rc, const struct error *e)
{
    if (e)
        log_line(c, NULL, "%s failed: %s", e->file, e->msg);
    else
        log_line(c, NULL, "ec2 call failed reading its answer: %s", err_str(rc));
    return rc;
}

/* Copy a required field; ERR_PARSE when it is missing or too long. */
static int need(const struct xml_node *n, const char *path, char *buf, size_t size)
{
    return xml_copy(n, path, buf, size) == 0 && buf[0] ? 0 : ERR_PARSE;
}

/* Copy an optional field; "" when missing (too long is still an error). */
static int maybe(const struct xml_node *n, const char *path, char *buf, size_t size)
{
    int rc = xml_copy(n, path, buf, size);

    if (rc == ERR_EMPTY) {
        buf[0] = '\0';
        return 0;
    }
    return rc;
}

/* A whole number field; ERR_PARSE when it is not one. */
static int need_long(const struct xml_node *n, const char *path, long *out)
{
    char buf[32], *end;
    long v;

    if (need(n, path, buf, sizeof(buf)) < 0)
        return ERR_PARSE;
    errno = 0;
    v = strtol(buf, &end, 10);
    if (errno || *end || v < 0)
        return ERR_PARSE;
    *out = v;
    return 0;
}

/* Grow an array of elements of size sz to hold one more; ERR_NOMEM. */
static int grow(void **arr, size_t *cap, size_t n, size_t sz)
{
    void *g;
    size_t c;

    if (n < *cap)
        return 0;
    c = *cap ? 2 * *cap : 16;
    g = realloc(*arr, c * sz);
    if (!g)
        return ERR_NOMEM;
    *arr = g;
    *cap = c;
    return 0;
}

/* The items a paginated call collects, of one element type per call. */
struct list {
    void *items;
    size_t n, cap;
};

/* Append the sz bytes at item to x; ERR_NOMEM. */
static int list_push(struct list *x, const void *item, size_t sz)
{
    if (grow(&x->items, &x->cap, x->n, sz) < 0)
        return ERR_NOMEM;
    memcpy((char *)x->items + x->n * sz, item, sz);
    x->n++;
    return 0;
}

/* One page of a paginated call: the caller reads the items of *doc and passes its nextToken. */
typedef int (*page_reader)(void *ctx, const struct xml_doc *doc, struct error *e);

/* Call action with p (MaxResults added when max_results > 0) page after page until there is no
 * nextToken, handing each page to read. A page that answers with the token it was asked with
 * (a server that would page without end) is ERR_PARSE. */
static int paginate(struct ec2_client *c, const char *action, struct ec2_params *p, int max_results,
                    page_reader read, void *ctx, struct error *e)
{
    char token[1024], asked[1024] = "", mr[16];
    int rc = 0;

    if (max_results > 0) {
        snprintf(mr, sizeof(mr), "%d", max_results);
        ec2_params_add(p, mr, "MaxResults");
    }
    for (int page = 0;; page++) {
        struct xml_doc *doc = NULL;

        if (page == MAX_PAGES)
            return err_set(e, ERR_RANGE, "ec2", 0, 0, "ec2 %s: more than %d pages", action,
                           MAX_PAGES);
        rc = ec2_call(c, action, p, &doc, e);
        if (rc < 0)
            return rc;
        rc = read(ctx, doc, e);
        if (rc == 0) {
            rc = xml_copy(xml_root(doc), "nextToken", token, sizeof(token));
            if (rc == ERR_RANGE)
                rc = bad_answer(e, action, doc, "a nextToken too long");
            else if (rc == 0 && token[0] && strcmp(token, asked) == 0)
                rc = bad_answer(e, action, doc, "the nextToken it was asked with, again");
        }
        if (rc < 0 && rc != ERR_EMPTY)
            logged(c, rc, e);
        xml_free(doc);
        if (rc == ERR_EMPTY || (rc == 0 && !token[0]))
            return 0;
        if (rc < 0)
            return rc;
        params_drop(p, "NextToken");
        ec2_params_add(p, token, "NextToken");
        memcpy(asked, token, sizeof(asked));
    }
}

/* Paginate into x and release p; on failure x is emptied. */
static int collect(struct ec2_client *c, const char *action, struct ec2_params *p, int max_results,
                   page_reader read, struct list *x, struct error *e)
{
    int rc = paginate(c, action, p, max_results, read, x, e);

    ec2_params_free(p);
    if (rc < 0) {
        free(x->items);
        x->items = NULL;
        x->n = x->cap = 0;
    }
    return rc;
}

/* ---- DescribeInstanceTypes ---- */

static int read_types(void *arg, const struct xml_doc *doc, struct error *e)
{
    struct list *x = arg;
    const struct xml_node *root = xml_root(doc);

    for (struct xml_node *it = xml_find(root, "instanceTypeSet/item"); it; it = xml_next(it)) {
        struct ec2_instance_type t = {0};
        long v;

        if (need(it, "instanceType", t.name, sizeof(t.name)) < 0)
            return bad_answer(e, "DescribeInstanceTypes", doc, "an item without instanceType");
        if (need_long(it, "vCpuInfo/defaultVCpus", &v) < 0)
            return bad_answer(e, "DescribeInstanceTypes", doc, "an item without defaultVCpus");
        t.vcpus = (int)v;
        if (need_long(it, "memoryInfo/sizeInMiB", &t.memory_mib) < 0)
            return bad_answer(e, "DescribeInstanceTypes", doc, "an item without memory");
        for (struct xml_node *g = xml_find(it, "gpuInfo/gpus/item"); g; g = xml_next(g)) {
            long count, mem;

            if (need_long(g, "count", &count) < 0 || need_long(g, "memoryInfo/sizeInMiB", &mem) < 0)
                return bad_answer(e, "DescribeInstanceTypes", doc, "a GPU without count or memory");
            if (!t.gpu_name[0]) {
                maybe(g, "name", t.gpu_name, sizeof(t.gpu_name));
                maybe(g, "manufacturer", t.gpu_maker, sizeof(t.gpu_maker));
            }
            t.gpus += (int)count;
            t.gpu_memory_mib += count * mem;
        }
        if (list_push(x, &t, sizeof(t)) < 0)
            return ERR_NOMEM;
    }
    return 0;
}

int ec2_describe_instance_types(struct ec2_client *c, const char *const *types, size_t n,
                                struct ec2_instance_type **out, size_t *n_out, struct error *e)
{
    struct list x = {0};
    struct ec2_params *p;
    int rc;

    if (!c || !out || !n_out || (n && !types))
        return err_set(e, ERR_INVAL, "ec2", 0, 0, "DescribeInstanceTypes: missing argument");
    if (n > 100)
        return err_set(e, ERR_RANGE, "ec2", 0, 0, "DescribeInstanceTypes: at most 100 types");
    p = ec2_params_new();
    if (!p)
        return ERR_NOMEM;
    for (size_t i = 0; i < n; i++)
        ec2_params_add(p, types[i], "InstanceType.%zu", i + 1);
    /* MaxResults may not go with named types */
    rc = collect(c, "DescribeInstanceTypes", p, n ? 0 : c->page_size, read_types, &x, e);
    if (rc < 0)
        return rc;
    *out = x.items;
    *n_out = x.n;
    return 0;
}

/* ---- DescribeSpotPriceHistory ---- */

static int read_prices(void *arg, const struct xml_doc *doc, struct error *e)
{
    struct list *x = arg;

    for (struct xml_node *it = xml_find(xml_root(doc), "spotPriceHistorySet/item"); it;
         it = xml_next(it)) {
        struct ec2_spot_price s = {0};
        char price[40], when[48], *end;

        if (need(it, "instanceType", s.type, sizeof(s.type)) < 0 ||
            need(it, "availabilityZone", s.zone, sizeof(s.zone)) < 0 ||
            need(it, "spotPrice", price, sizeof(price)) < 0 ||
            need(it, "timestamp", when, sizeof(when)) < 0)
            return bad_answer(e, "DescribeSpotPriceHistory", doc, "an item without its fields");
        errno = 0;
        s.price = strtod(price, &end);
        if (errno || *end || !isfinite(s.price) || s.price < 0) {
            char what[96];

            strbuf_printable(price);
            snprintf(what, sizeof(what), "spot price '%s' does not parse", price);
            return bad_answer(e, "DescribeSpotPriceHistory", doc, what);
        }
        if (timestamp_parse_iso8601(when, &s.time) < 0)
            return bad_answer(e, "DescribeSpotPriceHistory", doc, "a timestamp does not parse");
        if (list_push(x, &s, sizeof(s)) < 0)
            return ERR_NOMEM;
    }
    return 0;
}

int ec2_describe_spot_prices(struct ec2_client *c, const char *const *types, size_t n,
                             int64_t start_time, struct ec2_spot_price **out, size_t *n_out,
                             struct error *e)
{
    struct list x = {0};
    struct ec2_params *p;
    int rc;
    char when[TIMESTAMP_ISO8601_LEN + 1];

    if (!c || !out || !n_out || (n && !types))
        return err_set(e, ERR_INVAL, "ec2", 0, 0, "DescribeSpotPriceHistory: missing argument");
    p = ec2_params_new();
    if (!p)
        return ERR_NOMEM;
    for (size_t i = 0; i < n; i++)
        ec2_params_add(p, types[i], "InstanceType.%zu", i + 1);
    ec2_params_add(p, "Linux/UNIX", "ProductDescription.1");
    if (start_time > 0 && timestamp_format_iso8601(start_time, when) == 0)
        ec2_params_add(p, when, "StartTime");
    rc = collect(c, "DescribeSpotPriceHistory", p, c->page_size, read_prices, &x, e);
    if (rc < 0)
        return rc;
    *out = x.items;
    *n_out = x.n;
    return 0;
}

/* ---- launches ---- */

/* 1 when the token can serve as a ClientToken: 1 to 64 printable ASCII characters. */
static int token_ok(const char *t)
{
    size_t n = t ? strlen(t) : 0;

    if (n == 0 || n > 64)
        return 0;
    for (; *t; t++)
        if ((unsigned char)*t <= ' ' || (unsigned char)*t >= 0x7f)
            return 0;
    return 1;
}

/* TagSpecification.<k> for resource with the cluster and token tags. */
static void add_tags(struct ec2_params *p, const char *prefix, int k, const char *resource,
                     const char *cluster, const char *token)
{
    ec2_params_add(p, resource, "%s.%d.ResourceType", prefix, k);
    ec2_params_add(p, EC2_TAG_CLUSTER, "%s.%d.Tag.1.Key", prefix, k);
    ec2_params_add(p, cluster, "%s.%d.Tag.1.Value", prefix, k);
    ec2_params_add(p, EC2_TAG_TOKEN, "%s.%d.Tag.2.Key", prefix, k);
    ec2_params_add(p, token, "%s.%d.Tag.2.Value", prefix, k);
}

/* key = price (USD per hour) when price > 0. */
static void add_price(struct ec2_params *p, double price, const char *key)
{
    char v[32];

    if (price > 0) {
        snprintf(v, sizeof(v), "%.6f", price);
        ec2_params_add(p, v, "%s", key);
    }
}

static enum ec2_market market_of(const char *lifecycle)
{
    return strcmp(lifecycle, "spot") == 0 ? EC2_SPOT : EC2_ON_DEMAND;
}

void ec2_fleet_result_free(struct ec2_fleet_result *r)
{
    if (!r)
        return;
    free(r->instances);
    free(r->errors);
    memset(r, 0, sizeof(*r));
}

/* When zone is empty and subnet names one of the request's overrides, that override's zone. */
static void zone_of_subnet(const struct ec2_fleet_request *req, const char *subnet, char *zone,
                           size_t size)
{
    for (size_t i = 0; !zone[0] && subnet[0] && i < req->n_overrides; i++)
        if (req->overrides[i].subnet_id && req->overrides[i].zone &&
            strcmp(req->overrides[i].subnet_id, subnet) == 0)
            snprintf(zone, size, "%s", req->overrides[i].zone);
}

/* Read CreateFleet's fleetInstanceSet and errorSet. */
static int read_fleet(const struct xml_doc *doc, const struct ec2_fleet_request *req,
                      struct ec2_fleet_result *res, struct error *e)
{
    const struct xml_node *root = xml_root(doc);
    size_t cap_i = 0, cap_e = 0;

    if (maybe(root, "fleetId", res->fleet_id, sizeof(res->fleet_id)) < 0)
        return bad_answer(e, "CreateFleet", doc, "a fleetId too long");
    for (struct xml_node *it = xml_find(root, "fleetInstanceSet/item"); it; it = xml_next(it)) {
        struct ec2_launched l = {0};
        char lifecycle[16] = "";

        if (need(it, "instanceType", l.type, sizeof(l.type)) < 0 ||
            maybe(it, "lifecycle", lifecycle, sizeof(lifecycle)) < 0 ||
            maybe(it, "launchTemplateAndOverrides/overrides/availabilityZone", l.zone,
                  sizeof(l.zone)) < 0 ||
            maybe(it, "launchTemplateAndOverrides/overrides/subnetId", l.subnet, sizeof(l.subnet)) <
                0)
            return bad_answer(e, "CreateFleet", doc, "an instance item without its fields");
        l.market = market_of(lifecycle);
        zone_of_subnet(req, l.subnet, l.zone, sizeof(l.zone));
        for (struct xml_node *id = xml_find(it, "instanceIds/item"); id; id = xml_next(id)) {
            if (need(id, "", l.id, sizeof(l.id)) < 0)
                return bad_answer(e, "CreateFleet", doc, "an empty instance id");
            if (grow((void **)&res->instances, &cap_i, res->n_instances, sizeof(l)) < 0)
                return ERR_NOMEM;
            res->instances[res->n_instances++] = l;
        }
    }
    for (struct xml_node *it = xml_find(root, "errorSet/item"); it; it = xml_next(it)) {
        struct ec2_launch_error le = {0};
        char lifecycle[16] = "";

        if (need(it, "errorCode", le.code, sizeof(le.code)) < 0 ||
            maybe(it, "lifecycle", lifecycle, sizeof(lifecycle)) < 0 ||
            maybe(it, "launchTemplateAndOverrides/overrides/instanceType", le.type,
                  sizeof(le.type)) < 0 ||
            maybe(it, "launchTemplateAndOverrides/overrides/availabilityZone", le.zone,
                  sizeof(le.zone)) < 0 ||
            maybe(it, "launchTemplateAndOverrides/overrides/subnetId", le.subnet,
                  sizeof(le.subnet)) < 0)
            return bad_answer(e, "CreateFleet", doc, "an error item without its fields");
        if (xml_copy(it, "errorMessage", le.message, sizeof(le.message)) < 0)
            le.message[0] = '\0';
        strbuf_printable(le.code);
        strbuf_printable(le.message);
        le.market = market_of(lifecycle);
        le.err = ec2_error_code(le.code);
        if (le.err == 0)
            le.err = ERR_AGAIN;
        zone_of_subnet(req, le.subnet, le.zone, sizeof(le.zone));
        if (grow((void **)&res->errors, &cap_e, res->n_errors, sizeof(le)) < 0)
            return ERR_NOMEM;
        res->errors[res->n_errors++] = le;
    }
    return 0;
}

int ec2_create_fleet(struct ec2_client *c, const struct ec2_fleet_request *req,
                     struct ec2_fleet_result *out, struct error *e)
{
    struct ec2_fleet_result res = {0};
    struct ec2_params *p;
    struct xml_doc *doc = NULL;
    char v[32], key[96];
    int rc;

    if (!c || !req || !out || !req->launch_template_id || !req->cluster_id || !req->overrides ||
        req->n_overrides == 0 || req->n_overrides > 300 || req->on_demand < 0 || req->spot < 0 ||
        req->on_demand + req->spot == 0 || !token_ok(req->launch_token))
        return err_set(e, ERR_INVAL, "ec2 CreateFleet", 0, 0,
                       "needs a launch template, a cluster id, 1 to 300 overrides, a capacity "
                       "and a launch token of 1 to 64 printable characters");
    for (size_t i = 0; i < req->n_overrides; i++)
        if (!req->overrides[i].instance_type)
            return err_set(e, ERR_INVAL, "ec2 CreateFleet", 0, 0, "override %zu has no type", i);
    p = ec2_params_new();
    if (!p)
        return ERR_NOMEM;
    ec2_params_add(p, "instant", "Type");
    ec2_params_add(p, req->launch_token, "ClientToken");
    ec2_params_add(p, req->launch_template_id,
                   "LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateId");
    ec2_params_add(p, req->launch_template_version ? req->launch_template_version : "$Default",
                   "LaunchTemplateConfigs.1.LaunchTemplateSpecification.Version");
    for (size_t i = 0; i < req->n_overrides; i++) {
        const struct ec2_override *o = &req->overrides[i];

        ec2_params_add(p, o->instance_type, "LaunchTemplateConfigs.1.Overrides.%zu.InstanceType",
                       i + 1);
        if (o->subnet_id)
            ec2_params_add(p, o->subnet_id, "LaunchTemplateConfigs.1.Overrides.%zu.SubnetId",
                           i + 1);
        else if (o->zone)
            ec2_params_add(p, o->zone, "LaunchTemplateConfigs.1.Overrides.%zu.AvailabilityZone",
                           i + 1);
        snprintf(key, sizeof(key), "LaunchTemplateConfigs.1.Overrides.%zu.MaxPrice", i + 1);
        add_price(p, o->max_price, key);
    }
    snprintf(v, sizeof(v), "%d", req->on_demand + req->spot);
    ec2_params_add(p, v, "TargetCapacitySpecification.TotalTargetCapacity");
    snprintf(v, sizeof(v), "%d", req->on_demand);
    ec2_params_add(p, v, "TargetCapacitySpecification.OnDemandTargetCapacity");
    snprintf(v, sizeof(v), "%d", req->spot);
    ec2_params_add(p, v, "TargetCapacitySpecification.SpotTargetCapacity");
    ec2_params_add(p, req->spot > 0 ? "spot" : "on-demand",
                   "TargetCapacitySpecification.DefaultTargetCapacityType");
    ec2_params_add(p, "price-capacity-optimized", "SpotOptions.AllocationStrategy");
    ec2_params_add(p, "lowest-price", "OnDemandOptions.AllocationStrategy");
    add_tags(p, "TagSpecification", 1, "instance", req->cluster_id, req->launch_token);
    rc = ec2_call(c, "CreateFleet", p, &doc, e);
    ec2_params_free(p);
    if (rc < 0)
        return rc;
    rc = read_fleet(doc, req, &res, e);
    if (rc == 0) {
        char id[80];

        request_id(doc, id, sizeof(id));
        for (size_t i = 0; i < res.n_errors; i++)
            log_line(c, NULL,
                     "ec2 CreateFleet: the pool (%s, %s, %s) could not serve: %s: %s "
                     "(request id %s)",
                     res.errors[i].type,
                     res.errors[i].zone[0] ? res.errors[i].zone : res.errors[i].subnet,
                     ec2_market_name(res.errors[i].market), res.errors[i].code,
                     res.errors[i].message, id);
    }
    xml_free(doc);
    if (rc < 0) {
        ec2_fleet_result_free(&res);
        return logged(c, rc, e);
    }
    *out = res;
    return 0;
}

/* Read an instancesSet (RunInstances) into launched instances. */
static int read_launched(const struct xml_doc *doc, struct ec2_launched **out, size_t *n_out,
                         struct error *e)
{
    struct ec2_launched *items = NULL;
    size_t n = 0, cap = 0;

    for (struct xml_node *it = xml_find(xml_root(doc), "instancesSet/item"); it;
         it = xml_next(it)) {
        struct ec2_launched l = {0};
        char lifecycle[16] = "";

        if (need(it, "instanceId", l.id, sizeof(l.id)) < 0 ||
            need(it, "instanceType", l.type, sizeof(l.type)) < 0 ||
            maybe(it, "placement/availabilityZone", l.zone, sizeof(l.zone)) < 0 ||
            maybe(it, "subnetId", l.subnet, sizeof(l.subnet)) < 0 ||
            maybe(it, "instanceLifecycle", lifecycle, sizeof(lifecycle)) < 0) {
            free(items);
            return bad_answer(e, "RunInstances", doc, "an instance without id or type");
        }
        l.market = market_of(lifecycle);
        if (grow((void **)&items, &cap, n, sizeof(l)) < 0) {
            free(items);
            return ERR_NOMEM;
        }
        items[n++] = l;
    }
    *out = items;
    *n_out = n;
    return 0;
}

int ec2_run_instances(struct ec2_client *c, const struct ec2_run_request *req,
                      struct ec2_launched **out, size_t *n_out, struct error *e)
{
    struct ec2_params *p;
    struct xml_doc *doc = NULL;
    char v[32];
    int rc;

    if (!c || !req || !out || !n_out || !req->instance_type || req->count < 1 ||
        req->min_count > req->count || (!req->launch_template_id && !req->image_id) ||
        !req->cluster_id || !token_ok(req->launch_token))
        return err_set(e, ERR_INVAL, "ec2 RunInstances", 0, 0,
                       "needs a type, a count, a launch template or image, a cluster id and a "
                       "launch token of 1 to 64 printable characters");
    p = ec2_params_new();
    if (!p)
        return ERR_NOMEM;
    if (req->launch_template_id) {
        ec2_params_add(p, req->launch_template_id, "LaunchTemplate.LaunchTemplateId");
        ec2_params_add(p, "$Default", "LaunchTemplate.Version");
    }
    if (req->image_id)
        ec2_params_add(p, req->image_id, "ImageId");
    ec2_params_add(p, req->instance_type, "InstanceType");
    snprintf(v, sizeof(v), "%d", req->min_count > 0 ? req->min_count : 1);
    ec2_params_add(p, v, "MinCount");
    snprintf(v, sizeof(v), "%d", req->count);
    ec2_params_add(p, v, "MaxCount");
    ec2_params_add(p, req->launch_token, "ClientToken");
    /* a worker that shuts itself down is terminated, not stopped (a stopped one keeps its
     * volume, billed, and could be started again); over the template's own setting */
    ec2_params_add(p, "terminate", "InstanceInitiatedShutdownBehavior");
    if (req->subnet_id)
        ec2_params_add(p, req->subnet_id, "SubnetId");
    else if (req->zone)
        ec2_params_add(p, req->zone, "Placement.AvailabilityZone");
    if (req->market == EC2_SPOT) {
        ec2_params_add(p, "spot", "InstanceMarketOptions.MarketType");
        ec2_params_add(p, "one-time", "InstanceMarketOptions.SpotOptions.SpotInstanceType");
        ec2_params_add(p, "terminate",
                       "InstanceMarketOptions.SpotOptions.InstanceInterruptionBehavior");
        add_price(p, req->max_price, "InstanceMarketOptions.SpotOptions.MaxPrice");
    }
    add_tags(p, "TagSpecification", 1, "instance", req->cluster_id, req->launch_token);
    rc = ec2_call(c, "RunInstances", p, &doc, e);
    ec2_params_free(p);
    if (rc < 0) {
        if (e && (rc == ERR_CAPACITY || rc == ERR_QUOTA)) {
            char msg[sizeof(e->msg)];

            snprintf(msg, sizeof(msg), "%s", e->msg);
            err_set(e, rc, e->file, 0, 0, "(%.40s, %.40s, %s): %s", req->instance_type,
                    req->zone        ? req->zone
                    : req->subnet_id ? req->subnet_id
                                     : "any zone",
                    ec2_market_name(req->market), msg);
        }
        return rc;
    }
    rc = read_launched(doc, out, n_out, e);
    xml_free(doc);
    return rc < 0 ? logged(c, rc, e) : 0;
}

/* ---- DescribeInstances ---- */

/* The value of tag key among an item's tagSet, or "". */
static int tag_value(const struct xml_node *it, const char *key, char *buf, size_t size)
{
    char k[128];

    buf[0] = '\0';
    for (struct xml_node *t = xml_find(it, "tagSet/item"); t; t = xml_next(t))
        if (xml_copy(t, "key", k, sizeof(k)) == 0 && strcmp(k, key) == 0)
            return maybe(t, "value", buf, size);
    return 0;
}

static int read_cluster(void *arg, const struct xml_doc *doc, struct error *e)
{
    struct list *x = arg;

    for (struct xml_node *r = xml_find(xml_root(doc), "reservationSet/item"); r; r = xml_next(r))
        for (struct xml_node *it = xml_find(r, "instancesSet/item"); it; it = xml_next(it)) {
            struct ec2_instance in = {0};
            char lifecycle[16] = "", when[48] = "";

            if (need(it, "instanceId", in.id, sizeof(in.id)) < 0 ||
                need(it, "instanceType", in.type, sizeof(in.type)) < 0 ||
                need(it, "instanceState/name", in.state, sizeof(in.state)) < 0 ||
                maybe(it, "placement/availabilityZone", in.zone, sizeof(in.zone)) < 0 ||
                maybe(it, "instanceLifecycle", lifecycle, sizeof(lifecycle)) < 0 ||
                maybe(it, "privateIpAddress", in.private_ip, sizeof(in.private_ip)) < 0 ||
                maybe(it, "stateReason/code", in.state_reason, sizeof(in.state_reason)) < 0 ||
                maybe(it, "launchTime", when, sizeof(when)) < 0 ||
                tag_value(it, EC2_TAG_TOKEN, in.launch_token, sizeof(in.launch_token)) < 0)
                return bad_answer(e, "DescribeInstances", doc,
                                  "an instance without id, type or state");
            if (when[0] && timestamp_parse_iso8601(when, &in.launch_time) < 0)
                return bad_answer(e, "DescribeInstances", doc, "a launchTime does not parse");
            in.market = market_of(lifecycle);
            if (list_push(x, &in, sizeof(in)) < 0)
                return ERR_NOMEM;
        }
    return 0;
}

/* DescribeInstances with one filter (name = the n values), every page, read by read_cluster. */
static int describe_instances(struct ec2_client *c, const char *name, const char *const *values,
                              size_t n, struct ec2_instance **out, size_t *n_out, struct error *e)
{
    struct list x = {0};
    struct ec2_params *p = ec2_params_new();
    int rc;

    if (!p)
        return ERR_NOMEM;
    ec2_params_add(p, name, "Filter.1.Name");
    for (size_t i = 0; i < n; i++)
        ec2_params_add(p, values[i], "Filter.1.Value.%zu", i + 1);
    rc = collect(c, "DescribeInstances", p, c->page_size, read_cluster, &x, e);
    if (rc < 0)
        return rc;
    *out = x.items;
    *n_out = x.n;
    return 0;
}

int ec2_describe_cluster(struct ec2_client *c, const char *cluster_id, struct ec2_instance **out,
                         size_t *n_out, struct error *e)
{
    if (!c || !cluster_id || !*cluster_id || !out || !n_out)
        return err_set(e, ERR_INVAL, "ec2", 0, 0, "DescribeInstances: missing argument");
    return describe_instances(c, "tag:" EC2_TAG_CLUSTER, &cluster_id, 1, out, n_out, e);
}

int ec2_describe_running(struct ec2_client *c, struct ec2_instance **out, size_t *n_out,
                         struct error *e)
{
    static const char *const states[] = {"pending", "running"};

    if (!c || !out || !n_out)
        return err_set(e, ERR_INVAL, "ec2", 0, 0, "DescribeInstances: missing argument");
    return describe_instances(c, "instance-state-name", states, 2, out, n_out, e);
}

/* ---- TerminateInstances ---- */

int ec2_terminate_instances(struct ec2_client *c, const char *const *ids, size_t n, struct error *e)
{
    if (!c || (n && !ids))
        return err_set(e, ERR_INVAL, "ec2", 0, 0, "TerminateInstances: missing argument");
    for (size_t start = 0; start < n; start += TERMINATE_BATCH) {
        size_t end = n - start > TERMINATE_BATCH ? start + TERMINATE_BATCH : n;
        struct ec2_params *p = ec2_params_new();
        struct xml_doc *doc = NULL;
        int rc;

        if (!p)
            return ERR_NOMEM;
        for (size_t i = start; i < end; i++)
            ec2_params_add(p, ids[i], "InstanceId.%zu", i - start + 1);
        rc = ec2_call(c, "TerminateInstances", p, &doc, e);
        ec2_params_free(p);
        if (rc == 0 && !xml_find(xml_root(doc), "instancesSet"))
            rc = bad_answer(e, "TerminateInstances", doc, "no instancesSet");
        xml_free(doc);
        if (rc < 0)
            return rc == ERR_PARSE ? logged(c, rc, e) : rc;
    }
    return 0;
}
