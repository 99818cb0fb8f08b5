/* pricing.c: the Price List Query API's GetProducts over the JSON protocol (X-Amz-Target, a
 * JSON body, SigV4 for "pricing"), its answers' PriceList read as JSON documents inside strings,
 * errors mapped into castor's table with the request id of the x-amzn-RequestId header,
 * retries with backoff and full jitter, and a cache of prices by (region, type). */
#include "providers/aws/pricing.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/aws/ec2.h"
#include "providers/retry.h"
#include "util/http_client.h"
#include "util/json.h"
#include "util/sigv4.h"
#include "util/strbuf.h"

#define PRICING_TIMEOUT_MS 30000
#define PRICING_TTL_S 86400.0
#define PRICING_RETRY_S 900.0
#define PRICING_MAX_PAGES 100
#define PRICING_WHERE "pricing GetProducts"
#define PRICING_CONTENT_TYPE "application/x-amz-json-1.1"

/* One cached price (or a failure) of a type in a region. */
struct pricing_entry {
    char region[32];
    char type[32];
    double usd;       /* NAN: none read yet */
    double read_at;   /* when usd was read */
    double failed_at; /* the last failed lookup (NAN: none since the last read) */
};

struct aws_pricing {
    char endpoint[512];
    char signing_region[32];
    struct http_client_url url;
    int tls_insecure;
    long timeout_ms;
    double ttl_s, retry_s;
    struct retry retry;
    struct aws_credential_source *credentials;
    int64_t (*clock)(void *arg);
    void (*log)(void *arg, const char *line);
    void *hook_arg;
    struct http_client *http;
    struct pricing_entry *cache;
    size_t n_cache;
};

int aws_pricing_new(const struct aws_pricing_config *cfg, struct aws_pricing **out, struct error *e)
{
    const char *any = getenv("AWS_ENDPOINT_URL");
    struct aws_pricing *p;
    int rc;

    if (!cfg || !out || !cfg->credentials)
        return err_set(e, ERR_INVAL, "pricing", 0, 0, "a credential source is needed");
    p = calloc(1, sizeof(*p));
    if (!p)
        return ERR_NOMEM;
    /* the configured endpoint, the environment's, else the public one */
    rc = ec2_resolve_endpoint(cfg->endpoint, getenv("AWS_ENDPOINT_URL_PRICING"),
                              any && *any ? any : PRICING_DEFAULT_ENDPOINT, "us-east-1",
                              p->endpoint, sizeof(p->endpoint));
    if (rc < 0) {
        rc = err_set(e, ERR_INVAL, "pricing", 0, 0, "endpoint too long");
        goto fail;
    }
    if ((rc = ec2_endpoint_check("pricing", p->endpoint, cfg->tls_insecure, &p->url, e)) < 0)
        goto fail;
    snprintf(p->signing_region, sizeof(p->signing_region), "%s",
             cfg->signing_region && *cfg->signing_region ? cfg->signing_region : "us-east-1");
    p->tls_insecure = cfg->tls_insecure;
    p->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : PRICING_TIMEOUT_MS;
    p->ttl_s = cfg->ttl_s > 0 ? cfg->ttl_s : PRICING_TTL_S;
    p->retry_s = cfg->retry_s > 0 ? cfg->retry_s : PRICING_RETRY_S;
    retry_init(&p->retry, cfg->max_attempts, cfg->backoff_base_ms, cfg->backoff_cap_ms, cfg->seed,
               cfg->sleep_ms, cfg->hook_arg);
    p->credentials = cfg->credentials;
    p->clock = cfg->clock ? cfg->clock : retry_default_clock;
    p->log = cfg->log ? cfg->log : retry_default_log;
    p->hook_arg = cfg->hook_arg;
    if ((rc = http_client_new(&p->http)) < 0)
        goto fail;
    *out = p;
    return 0;
fail:
    free(p);
    return rc;
}

void aws_pricing_free(struct aws_pricing *p)
{
    if (!p)
        return;
    http_client_free(p->http);
    free(p->cache);
    free(p);
}

const char *aws_pricing_endpoint(const struct aws_pricing *p)
{
    return p->endpoint;
}

/* Log a printf-formatted line with the secret and session token starred out. */
static void pricing_log(struct aws_pricing *p, const struct aws_credentials *cred, const char *fmt,
                        ...) __attribute__((format(printf, 3, 4)));

static void pricing_log(struct aws_pricing *p, const struct aws_credentials *cred, const char *fmt,
                        ...)
{
    char line[768];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (cred) {
        strbuf_redact(line, cred->secret_access_key);
        strbuf_redact(line, cred->session_token);
    }
    p->log(p->hook_arg, line);
}

/* ---- one call ---- */

/* What one call carries from attempt to attempt. */
struct pricing_call {
    struct aws_pricing *p;
    const char *body;
    struct aws_credentials cred;
    struct http_client_response r;
    char code[96], message[256], request_id[160];
    int last; /* ERR_IO or ERR_AGAIN: what the last retried attempt met */
    struct error *e;
};

/* The error type of a JSON error body ("__type", after any '#'), its message, into x; 0, or
 * ERR_PARSE when the body is not such a document. */
static int pricing_read_error(struct pricing_call *x)
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
        snprintf(x->message, sizeof(x->message), "%s", msg ? msg : "");
        strbuf_printable(x->code);
        strbuf_printable(x->message);
        rc = 0;
    }
    jv_free(doc);
    return rc;
}

/* castor's code for a Price List error type; 0 for the retried ones. */
static int pricing_error_code(const char *type)
{
    static const struct {
        const char *type;
        int err;
    } codes[] = {
        {"ThrottlingException", 0},
        {"InternalErrorException", 0},
        {"ServiceUnavailableException", 0},
        {"InvalidParameterException", ERR_INVAL},
        {"InvalidNextTokenException", ERR_INVAL},
        {"ExpiredNextTokenException", ERR_INVAL},
        {"AccessDeniedException", ERR_INVAL},
        {"UnrecognizedClientException", ERR_INVAL},
        {"InvalidSignatureException", ERR_INVAL},
        {"IncompleteSignature", ERR_INVAL},
        {"MissingAuthenticationToken", ERR_INVAL},
        {"NotFoundException", ERR_NOENT},
    };

    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
        if (strcmp(type, codes[i].type) == 0)
            return codes[i].err;
    return ERR_UNKNOWN;
}

/* One signed attempt (retry_attempt_fn): 0 with a 200 answer in x->r, RETRY_AGAIN, or an error
 * for good. */
static int pricing_attempt(void *arg, int attempt)
{
    struct pricing_call *x = arg;
    struct aws_pricing *p = x->p;
    struct sigv4_header sh[3] = {{"Host", p->url.authority},
                                 {"Content-Type", PRICING_CONTENT_TYPE},
                                 {"X-Amz-Target", PRICING_TARGET}};
    struct sigv4_request sreq = {"POST", p->url.path, NULL, sh, 3, x->body, strlen(x->body)};
    struct sigv4_params sp = {p->signing_region, "pricing", 0, SIGV4_NORMALIZE_PATH, NULL};
    struct sigv4_credentials sc;
    struct sigv4_signed s = {0};
    struct http_client_header hs[3 + SIGV4_MAX_ADDED + 1];
    struct http_client_request req = {0};
    struct error sub = {0};
    size_t n = 0;
    int rc, mapped;

    (void)attempt;
    http_client_response_clear(&x->r);
    aws_credentials_clear(&x->cred);
    sp.time = p->clock(p->hook_arg);
    rc = aws_credential_source_get(p->credentials, sp.time, &x->cred, &sub);
    if (rc < 0)
        return err_set(x->e, rc, PRICING_WHERE, 0, 0, "no credentials: %.300s", sub.msg);
    sc = (struct sigv4_credentials){x->cred.access_key_id, x->cred.secret_access_key,
                                    x->cred.session_token};
    if ((rc = sigv4_sign(&sreq, &sc, &sp, &s)) < 0)
        return err_set(x->e, rc, PRICING_WHERE, 0, 0, "cannot sign the request (%s)", err_str(rc));
    for (size_t i = 0; i < 3; i++)
        hs[n++] = (struct http_client_header){sh[i].name, sh[i].value};
    for (size_t i = 0; i < s.n_added; i++)
        hs[n++] = (struct http_client_header){s.added[i].name, s.added[i].value};
    hs[n++] = (struct http_client_header){"Authorization", s.authorization};
    req.method = "POST";
    req.url = p->endpoint;
    req.headers = hs;
    req.nheaders = n;
    req.body = x->body;
    req.body_len = strlen(x->body);
    req.timeout_ms = p->timeout_ms;
    req.insecure = p->tls_insecure;
    req.capture_header = "x-amzn-RequestId";
    rc = http_client_do(p->http, &req, &x->r, &sub);
    sigv4_signed_free(&s);
    if (rc == ERR_IO || rc == ERR_AGAIN) { /* a transport failure or a timeout */
        x->last = ERR_IO;
        snprintf(x->code, sizeof(x->code), "(transport)");
        snprintf(x->message, sizeof(x->message), "%.250s", sub.msg);
        snprintf(x->request_id, sizeof(x->request_id), "(none)");
        return RETRY_AGAIN;
    }
    if (rc < 0)
        return err_set(x->e, rc, PRICING_WHERE, 0, 0, "%.300s", sub.msg);
    snprintf(x->request_id, sizeof(x->request_id), "%s",
             x->r.captured[0] ? x->r.captured : "(none)");
    strbuf_printable(x->request_id);
    if (x->r.status == 200)
        return 0;
    if (pricing_read_error(x) == 0) {
        mapped = pricing_error_code(x->code);
        if (mapped == ERR_UNKNOWN)
            return err_set(x->e, ERR_UNKNOWN, PRICING_WHERE, 0, 0,
                           "unknown error type %s (HTTP %ld): %s (request id %s)", x->code,
                           x->r.status, x->message, x->request_id);
        if (mapped < 0)
            return err_set(x->e, mapped, PRICING_WHERE, 0, 0, "%s: %s (request id %s)", x->code,
                           x->message, x->request_id);
    } else if (x->r.status < 500) {
        return err_set(x->e, ERR_PARSE, PRICING_WHERE, 0, 0,
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
static void pricing_wait(void *arg, int attempt, int max_attempts, long delay)
{
    struct pricing_call *x = arg;

    pricing_log(x->p, &x->cred, "%s: %s: %s: %s (request id %s); retry %d of %d in %ld ms",
                PRICING_WHERE,
                x->last == ERR_IO ? "transport failure" : "throttled or server error", x->code,
                x->message, x->request_id, attempt + 1, max_attempts - 1, delay);
}

/* Send body, signed, with retries; the parsed answer into *out and its request id into rid. */
static int pricing_call(struct aws_pricing *p, const char *body, struct jv **out, char *rid,
                        size_t rid_size, struct error *e)
{
    struct pricing_call x = {0};
    struct error sub = {0};
    int rc;

    x.p = p;
    x.body = body;
    x.e = e;
    rc = retry_run(&p->retry, pricing_attempt, pricing_wait, &x);
    if (rc == RETRY_AGAIN)
        rc = err_set(e, x.last, PRICING_WHERE, 0, 0,
                     "gave up after %d attempts: %s %s (request id %s)", p->retry.max_attempts,
                     x.code, x.message, x.request_id);
    if (rc == 0) {
        snprintf(rid, rid_size, "%s", x.request_id);
        rc = jv_parse(x.r.body, x.r.body_len, out, &sub);
        if (rc < 0)
            rc = err_set(e, rc == ERR_NOMEM ? rc : ERR_PARSE, PRICING_WHERE, 0, 0,
                         "the answer is not JSON: %.200s (request id %s)", sub.msg, x.request_id);
    }
    if (rc < 0 && e) {
        strbuf_redact(e->msg, x.cred.secret_access_key);
        strbuf_redact(e->msg, x.cred.session_token);
    }
    aws_credentials_clear(&x.cred);
    http_client_response_clear(&x.r);
    return rc;
}

/* ---- GetProducts ---- */

/* {"Type": "TERM_MATCH", "Field": field, "Value": value} appended to filters. */
static void pricing_filter(struct jv *filters, const char *field, const char *value)
{
    struct jv *f = jv_object();

    jv_set(f, "Type", jv_string("TERM_MATCH"));
    jv_set(f, "Field", jv_string(field));
    jv_set(f, "Value", jv_string(value));
    jv_push(filters, f);
}

/* The request body for a page (token NULL: the first), in *out (free). */
static int pricing_body(const char *region, const char *type, const char *token, char **out)
{
    struct jv *req = jv_object(), *filters = jv_array();
    int rc;

    pricing_filter(filters, "instanceType", type);
    pricing_filter(filters, "regionCode", region);
    pricing_filter(filters, "operatingSystem", "Linux");
    pricing_filter(filters, "tenancy", "Shared");
    pricing_filter(filters, "preInstalledSw", "NA");
    pricing_filter(filters, "capacitystatus", "Used");
    jv_set(req, "ServiceCode", jv_string("AmazonEC2"));
    jv_set(req, "Filters", filters);
    jv_set(req, "FormatVersion", jv_string("aws_v1"));
    jv_set(req, "MaxResults", jv_integer(100));
    if (token)
        jv_set(req, "NextToken", jv_string(token));
    rc = jv_dump(req, out);
    jv_free(req);
    return rc;
}

/* What reading one product looks for and finds. */
struct pricing_find {
    double usd;      /* the first positive hourly price (NAN: none yet) */
    const char *bad; /* a price string that did not parse, or NULL */
    char bad_text[48];
};

/* One price dimension (jv_each): a positive "Hrs" USD price. */
static int pricing_dimension(void *ctx, const char *key, const struct jv *dim)
{
    struct pricing_find *f = ctx;
    const char *unit = jv_string_value(jv_get(dim, "unit"));
    const char *usd = jv_string_value(jv_get(jv_get(dim, "pricePerUnit"), "USD"));
    char *end;
    double v;

    (void)key;
    if (!usd || (unit && strcmp(unit, "Hrs") != 0))
        return 0;
    errno = 0;
    v = strtod(usd, &end);
    if (errno || end == usd || *end || !isfinite(v) || v < 0) {
        snprintf(f->bad_text, sizeof(f->bad_text), "%.40s", usd);
        strbuf_printable(f->bad_text);
        f->bad = f->bad_text;
        return 1;
    }
    if (v > 0 && isnan(f->usd))
        f->usd = v;
    return 0;
}

/* One OnDemand term (jv_each): its price dimensions. */
static int pricing_term(void *ctx, const char *key, const struct jv *term)
{
    (void)key;
    return jv_each(jv_get(term, "priceDimensions"), pricing_dimension, ctx) > 0;
}

/* One page's PriceList: each entry a JSON document in a string. */
static int pricing_page(const struct jv *page, const char *type, const char *rid,
                        struct pricing_find *f, struct error *e)
{
    const struct jv *list = jv_get(page, "PriceList");

    if (jv_type_of(list) != JV_ARRAY)
        return err_set(e, ERR_PARSE, PRICING_WHERE, 0, 0,
                       "an answer without PriceList "
                       "(request id %s)",
                       rid);
    for (size_t i = 0; i < jv_size(list); i++) {
        const char *text = jv_string_value(jv_at(list, i));
        const char *t;
        struct jv *doc = NULL;
        struct error sub = {0};

        if (!text)
            return err_set(e, ERR_PARSE, PRICING_WHERE, 0, 0,
                           "PriceList entry %zu is not a string (request id %s)", i, rid);
        if (jv_parse(text, strlen(text), &doc, &sub) < 0)
            return err_set(e, ERR_PARSE, PRICING_WHERE, 0, 0,
                           "PriceList entry %zu is not a JSON document: %.150s (request id %s)", i,
                           sub.msg, rid);
        t = jv_string_value(jv_get(jv_get(jv_get(doc, "product"), "attributes"), "instanceType"));
        if (!t || !jv_get(doc, "terms")) {
            jv_free(doc);
            return err_set(e, ERR_PARSE, PRICING_WHERE, 0, 0,
                           "PriceList entry %zu has no product.attributes.instanceType or terms "
                           "(request id %s)",
                           i, rid);
        }
        if (strcmp(t, type) == 0)
            jv_each(jv_get(jv_get(doc, "terms"), "OnDemand"), pricing_term, f);
        jv_free(doc);
        if (f->bad)
            return err_set(e, ERR_PARSE, PRICING_WHERE, 0, 0,
                           "%s: the price \"%s\" does not parse (request id %s)", type, f->bad,
                           rid);
    }
    return 0;
}

int aws_pricing_get(struct aws_pricing *p, const char *region, const char *type, double *usd,
                    struct error *e)
{
    struct pricing_find f = {.usd = NAN};
    char *token = NULL, rid[160] = "(none)";
    int rc = 0;

    if (!p || !region || !*region || !type || !*type || !usd)
        return err_set(e, ERR_INVAL, PRICING_WHERE, 0, 0, "needs a region and a type");
    for (int page = 0; rc == 0; page++) {
        struct jv *doc = NULL;
        char *body = NULL;
        const char *next;

        if (page == PRICING_MAX_PAGES) {
            rc =
                err_set(e, ERR_RANGE, PRICING_WHERE, 0, 0, "more than %d pages", PRICING_MAX_PAGES);
            break;
        }
        if (pricing_body(region, type, token, &body) < 0) {
            rc = err_set(e, ERR_NOMEM, PRICING_WHERE, 0, 0, "out of memory");
            break;
        }
        rc = pricing_call(p, body, &doc, rid, sizeof(rid), e);
        free(body);
        if (rc == 0)
            rc = pricing_page(doc, type, rid, &f, e);
        next = jv_string_value(jv_get(doc, "NextToken"));
        free(token);
        token = rc == 0 && next && *next ? strdup(next) : NULL;
        jv_free(doc);
        if (rc == 0 && !token)
            break;
    }
    free(token);
    if (rc == 0 && isnan(f.usd))
        rc = err_set(e, ERR_NOENT, PRICING_WHERE, 0, 0,
                     "no on-demand Linux price for %.40s in %.40s (request id %s)", type, region,
                     rid);
    if (rc < 0) {
        pricing_log(p, NULL, "%s failed: %s", PRICING_WHERE, e ? e->msg : err_str(rc));
        return rc;
    }
    *usd = f.usd;
    return 0;
}

/* ---- the cache ---- */

/* The entry of (region, type), made when absent; NULL when out of memory. */
static struct pricing_entry *pricing_entry(struct aws_pricing *p, const char *region,
                                           const char *type)
{
    struct pricing_entry *g, *x;

    for (size_t i = 0; i < p->n_cache; i++)
        if (strcmp(p->cache[i].region, region) == 0 && strcmp(p->cache[i].type, type) == 0)
            return &p->cache[i];
    g = realloc(p->cache, (p->n_cache + 1) * sizeof(*g));
    if (!g)
        return NULL;
    p->cache = g;
    x = &g[p->n_cache++];
    memset(x, 0, sizeof(*x));
    snprintf(x->region, sizeof(x->region), "%s", region);
    snprintf(x->type, sizeof(x->type), "%s", type);
    x->usd = NAN;
    x->failed_at = NAN;
    return x;
}

int aws_pricing_on_demand(struct aws_pricing *p, const char *region, const char *type, double now,
                          double *usd, struct error *e)
{
    struct pricing_entry *x;
    double v = NAN;
    int rc;

    if (!p || !region || !type || !usd || strlen(region) >= sizeof(x->region) ||
        strlen(type) >= sizeof(x->type))
        return err_set(e, ERR_INVAL, PRICING_WHERE, 0, 0, "needs a region and a type");
    x = pricing_entry(p, region, type);
    if (!x)
        return err_set(e, ERR_NOMEM, PRICING_WHERE, 0, 0, "out of memory");
    if (!isnan(x->usd) && now - x->read_at < p->ttl_s) {
        *usd = x->usd;
        return 0;
    }
    if (!isnan(x->failed_at) && now - x->failed_at < p->retry_s) {
        if (!isnan(x->usd)) {
            *usd = x->usd;
            return 0;
        }
        return err_set(e, ERR_AGAIN, PRICING_WHERE, 0, 0,
                       "%.40s in %.40s: the last lookup failed %.0f s ago", type, region,
                       now - x->failed_at);
    }
    rc = aws_pricing_get(p, region, type, &v, e);
    if (rc < 0) {
        x->failed_at = now;
        if (isnan(x->usd))
            return rc;
        *usd = x->usd; /* the last price read, however old */
        return 0;
    }
    x->usd = v;
    x->read_at = now;
    x->failed_at = NAN;
    *usd = v;
    return 0;
}
