/* fake_ec2.c: the strict fake EC2 endpoint (see fake_ec2.h): SigV4 verified with util/sigv4 from
 * what arrived on the wire, scripted answers, recorded form parameters; or, switched to the
 * Price List API or Service Quotas, their JSON protocol checked and answered likewise. */
#include "providers/fake_ec2.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/loopback_http.h"
#include "util/crypto.h"
#include "util/json.h"
#include "util/sigv4.h"
#include "util/strbuf.h"
#include "util/timestamp.h"

#define FAKE_MAX_SCRIPT 64
#define FAKE_MAX_REQUESTS 256

struct fake_param {
    char *key, *value;
};

struct fake_request {
    struct fake_param *params;
    size_t n;
    char *body;      /* as received */
    char target[96]; /* X-Amz-Target, "" when absent */
};

struct fake_script {
    enum lh_action how;
    int status;
    char *body;
    long cut;
};

struct fake_ec2 {
    struct lh_server *server;
    char url[64];
    char akid[128], secret[128], region[64];
    char service[16];       /* "ec2", "pricing" or "servicequotas" */
    const char *targets[3]; /* JSON APIs: the X-Amz-Target values accepted (NULL: ec2) */
    struct fake_script script[FAKE_MAX_SCRIPT];
    size_t head, tail;
    struct fake_request requests[FAKE_MAX_REQUESTS];
    size_t n_requests;
    size_t auth_failures;
};

static const char auth_failure[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors><Error><Code>AuthFailure</Code>"
    "<Message>AWS was not able to validate the provided access credentials</Message></Error>"
    "</Errors><RequestID>fake-auth-failure</RequestID></Response>";

/* Percent-decode n bytes of s into a new string ('+' stays a plus: EC2 forms use %20). */
static char *decode(const char *s, size_t n)
{
    struct strbuf b = {0};

    strbuf_add_uri_decoded(&b, s, n);
    return strbuf_take(&b);
}

/* Record the form body (and the target) of a request. */
static void record(struct fake_ec2 *f, const char *body, const char *target)
{
    struct fake_request *r;
    const char *p = body;

    if (f->n_requests == FAKE_MAX_REQUESTS)
        return;
    r = &f->requests[f->n_requests++];
    r->body = strdup(body);
    snprintf(r->target, sizeof(r->target), "%s", target ? target : "");
    if (f->targets[0])
        return; /* a JSON body: no form parameters */
    while (*p) {
        const char *amp = strchr(p, '&'), *end = amp ? amp : p + strlen(p);
        const char *eq = memchr(p, '=', (size_t)(end - p));
        struct fake_param *g = realloc(r->params, (r->n + 1) * sizeof(*g));

        if (!g)
            return;
        r->params = g;
        g[r->n].key = decode(p, (size_t)((eq ? eq : end) - p));
        g[r->n].value = eq ? decode(eq + 1, (size_t)(end - eq - 1)) : strdup("");
        r->n++;
        p = amp ? amp + 1 : end;
    }
}

/* Copy the text between first and the next stop character (or the end) into buf. */
static int field(const char *s, const char *first, const char *stops, char *buf, size_t size)
{
    const char *at = strstr(s, first);
    size_t n;

    if (!at)
        return -1;
    at += strlen(first);
    n = strcspn(at, stops);
    if (n >= size)
        return -1;
    memcpy(buf, at, n);
    buf[n] = '\0';
    return 0;
}

/* 1 when the request's Authorization verifies against the fake's secret. */
static int verify(struct fake_ec2 *f, const struct lh_request *req)
{
    const char *auth = lh_header(req, "Authorization"), *date = lh_header(req, "X-Amz-Date");
    const char *token = lh_header(req, "X-Amz-Security-Token");
    char cred[256], signed_names[512], sig[80], scope[256], iso[32], *name, *save = NULL;
    struct sigv4_header hs[16];
    struct sigv4_request sr = {0};
    struct sigv4_credentials sc = {0};
    struct sigv4_params sp = {0};
    struct sigv4_signed s = {0};
    int64_t t;
    size_t n = 0;
    int ok;

    if (!auth || !date || strncmp(auth, "AWS4-HMAC-SHA256 ", 17) != 0 ||
        field(auth, "Credential=", ",", cred, sizeof(cred)) < 0 ||
        field(auth, "SignedHeaders=", ",", signed_names, sizeof(signed_names)) < 0 ||
        field(auth, "Signature=", ", ", sig, sizeof(sig)) < 0 || strlen(date) != 16)
        return 0;
    /* the scope: AKID/YYYYMMDD/region/ec2/aws4_request */
    snprintf(scope, sizeof(scope), "%s/%.8s/%s/%s/aws4_request", f->akid, date, f->region,
             f->service);
    if (strcmp(cred, scope) != 0)
        return 0;
    snprintf(iso, sizeof(iso), "%.4s-%.2s-%.2sT%.2s:%.2s:%.2sZ", date, date + 4, date + 6, date + 9,
             date + 11, date + 13);
    if (timestamp_parse_iso8601(iso, &t) < 0)
        return 0;
    /* host, x-amz-date and content-type must be signed, and the token when there is one */
    if (!strstr(signed_names, "host") || !strstr(signed_names, "x-amz-date") ||
        !strstr(signed_names, "content-type") ||
        (token && !strstr(signed_names, "x-amz-security-token")) ||
        (f->targets[0] && !strstr(signed_names, "x-amz-target")))
        return 0;
    for (name = strtok_r(signed_names, ";", &save); name; name = strtok_r(NULL, ";", &save)) {
        const char *v = lh_header(req, name);

        if (!v || n == 16)
            return 0;
        hs[n].name = name;
        hs[n].value = v;
        n++;
    }
    sr.method = req->method;
    sr.path = req->target;
    sr.headers = hs;
    sr.n_headers = n;
    sr.payload = req->body;
    sr.payload_len = req->body_len;
    sc.access_key_id = f->akid;
    sc.secret_access_key = f->secret;
    sc.session_token = token;
    sp.region = f->region;
    sp.service = f->service;
    sp.time = t;
    sp.flags = SIGV4_NORMALIZE_PATH;
    if (sigv4_sign(&sr, &sc, &sp, &s) < 0)
        return 0;
    ok = strlen(sig) == CRYPTO_SHA256_HEX_LEN && crypto_equal(sig, s.signature, strlen(sig));
    sigv4_signed_free(&s);
    return ok;
}

/* body with "@TOKEN@" replaced by token (or "" without one). */
static char *expand(const char *body, const char *token)
{
    const char *at = strstr(body, "@TOKEN@");
    size_t tl = token ? strlen(token) : 0;
    char *out;

    if (!at)
        return strdup(body);
    out = malloc(strlen(body) + tl + 1);
    if (!out)
        return NULL;
    memcpy(out, body, (size_t)(at - body));
    memcpy(out + (at - body), token ? token : "", tl);
    strcpy(out + (at - body) + tl, at + 7);
    return out;
}

/* 1 when req is a request of the JSON API: POST to /, the JSON protocol's content type, one of
 * the API's targets, a body that is a JSON object. */
static int json_form(const struct fake_ec2 *f, const struct lh_request *req)
{
    const char *type = lh_header(req, "Content-Type"), *target = lh_header(req, "X-Amz-Target");
    struct jv *doc = NULL;
    int ok = 0;

    for (size_t i = 0; target && i < 3 && f->targets[i]; i++)
        ok |= strcmp(target, f->targets[i]) == 0;
    if (!ok || strcmp(req->method, "POST") != 0 || strcmp(req->target, "/") != 0 || !type ||
        strcmp(type, "application/x-amz-json-1.1") != 0 ||
        jv_parse(req->body, req->body_len, &doc, NULL) < 0)
        return 0;
    ok = jv_type_of(doc) == JV_OBJECT;
    jv_free(doc);
    return ok;
}

/* A JSON API's side: JSON errors, the request id in x-amzn-RequestId. */
static int handle_json(struct fake_ec2 *f, const struct lh_request *req, struct lh_reply *reply)
{
    if (!f->targets[0])
        return 0;
    if (!verify(f, req)) {
        f->auth_failures++;
        lh_reply_text(reply, 403, "application/x-amz-json-1.1",
                      "{\"__type\":\"InvalidSignatureException\",\"message\":\"The request "
                      "signature we calculated does not match the signature you provided.\"}");
    } else if (!json_form(f, req)) {
        lh_reply_text(reply, 400, "application/x-amz-json-1.1",
                      "{\"__type\":\"SerializationException\",\"message\":\"not a "
                      "request of this API\"}");
    } else if (f->head == f->tail) {
        lh_reply_text(reply, 500, "application/x-amz-json-1.1",
                      "{\"__type\":\"FakeUnscripted\",\"message\":\"no reply queued\"}");
    } else {
        return 0; /* the script answers */
    }
    snprintf(reply->header, sizeof(reply->header), "x-amzn-RequestId: fake-req-%zu", f->n_requests);
    return 1;
}

static void handle(void *arg, const struct lh_request *req, struct lh_reply *reply)
{
    struct fake_ec2 *f = arg;
    const char *type = lh_header(req, "Content-Type");
    struct fake_script *s;

    record(f, req->body, lh_header(req, "X-Amz-Target"));
    if (handle_json(f, req, reply))
        return;
    if (f->targets[0]) {
        /* verified and well formed: the script's answer */
    } else if (!verify(f, req)) {
        f->auth_failures++;
        lh_reply_text(reply, 401, "text/xml", auth_failure);
        return;
    } else if (strcmp(req->method, "POST") != 0 || !type ||
               strcmp(type, "application/x-www-form-urlencoded; charset=utf-8") != 0 ||
               !fake_ec2_param(f, f->n_requests - 1, "Action") ||
               !fake_ec2_param(f, f->n_requests - 1, "Version") ||
               strcmp(fake_ec2_param(f, f->n_requests - 1, "Version"), "2016-11-15") != 0) {
        lh_reply_text(reply, 400, "text/xml",
                      "<Response><Errors><Error><Code>MissingParameter</Code><Message>not a "
                      "Query request</Message></Error></Errors><RequestID>fake-form</RequestID>"
                      "</Response>");
        return;
    }
    if (f->head == f->tail) {
        lh_reply_text(reply, 500, "text/xml",
                      "<Response><Errors><Error><Code>FakeUnscripted</Code><Message>no reply "
                      "queued</Message></Error></Errors><RequestID>fake-none</RequestID>"
                      "</Response>");
        return;
    }
    s = &f->script[f->head++ % FAKE_MAX_SCRIPT];
    reply->action = s->how;
    reply->status = s->status;
    reply->cut_after = s->cut;
    if (f->targets[0]) {
        snprintf(reply->content_type, sizeof(reply->content_type), "application/x-amz-json-1.1");
        snprintf(reply->header, sizeof(reply->header), "x-amzn-RequestId: fake-req-%zu",
                 f->n_requests);
    } else {
        snprintf(reply->content_type, sizeof(reply->content_type), "text/xml;charset=UTF-8");
    }
    if (s->body) {
        reply->body = expand(s->body, lh_header(req, "X-Amz-Security-Token"));
        reply->body_len = reply->body ? strlen(reply->body) : 0;
    }
    free(s->body);
    s->body = NULL;
}

struct fake_ec2 *fake_ec2_start(const char *akid, const char *secret, const char *region)
{
    struct fake_ec2 *f = calloc(1, sizeof(*f));

    if (!f)
        return NULL;
    snprintf(f->akid, sizeof(f->akid), "%s", akid);
    snprintf(f->secret, sizeof(f->secret), "%s", secret);
    snprintf(f->region, sizeof(f->region), "%s", region);
    snprintf(f->service, sizeof(f->service), "ec2");
    if (lh_start(handle, f, &f->server) < 0) {
        free(f);
        return NULL;
    }
    lh_url(f->server, f->url, sizeof(f->url));
    return f;
}

void fake_ec2_stop(struct fake_ec2 *f)
{
    if (!f)
        return;
    lh_stop(f->server);
    for (size_t i = 0; i < f->n_requests; i++) {
        for (size_t k = 0; k < f->requests[i].n; k++) {
            free(f->requests[i].params[k].key);
            free(f->requests[i].params[k].value);
        }
        free(f->requests[i].params);
        free(f->requests[i].body);
    }
    for (size_t i = f->head; i < f->tail; i++)
        free(f->script[i % FAKE_MAX_SCRIPT].body);
    free(f);
}

const char *fake_ec2_url(const struct fake_ec2 *f)
{
    return f->url;
}

void fake_ec2_set_pricing(struct fake_ec2 *f)
{
    snprintf(f->service, sizeof(f->service), "pricing");
    f->targets[0] = "AWSPriceListService.GetProducts";
}

void fake_ec2_set_quotas(struct fake_ec2 *f)
{
    snprintf(f->service, sizeof(f->service), "servicequotas");
    f->targets[0] = "ServiceQuotasV20190624.GetServiceQuota";
    f->targets[1] = "ServiceQuotasV20190624.GetAWSDefaultServiceQuota";
}

const char *fake_ec2_target(const struct fake_ec2 *f, size_t i)
{
    return i < f->n_requests ? f->requests[i].target : NULL;
}

const char *fake_ec2_body(const struct fake_ec2 *f, size_t i)
{
    return i < f->n_requests ? f->requests[i].body : NULL;
}

static void push(struct fake_ec2 *f, enum lh_action how, int status, const char *body, long cut)
{
    struct fake_script *s;

    if (f->tail - f->head == FAKE_MAX_SCRIPT)
        return;
    s = &f->script[f->tail++ % FAKE_MAX_SCRIPT];
    s->how = how;
    s->status = status;
    s->body = body ? strdup(body) : NULL;
    s->cut = cut;
}

void fake_ec2_push(struct fake_ec2 *f, int status, const char *body)
{
    push(f, LH_REPLY, status, body, 0);
}

void fake_ec2_push_hang(struct fake_ec2 *f)
{
    push(f, LH_HANG, 0, NULL, 0);
}

void fake_ec2_push_cut(struct fake_ec2 *f, const char *body, long cut)
{
    push(f, LH_REPLY, 200, body, cut);
}

size_t fake_ec2_requests(const struct fake_ec2 *f)
{
    return f->n_requests;
}

size_t fake_ec2_auth_failures(const struct fake_ec2 *f)
{
    return f->auth_failures;
}

size_t fake_ec2_pending(const struct fake_ec2 *f)
{
    return f->tail - f->head;
}

const char *fake_ec2_param(const struct fake_ec2 *f, size_t i, const char *key)
{
    if (i >= f->n_requests)
        return NULL;
    for (size_t k = 0; k < f->requests[i].n; k++)
        if (strcmp(f->requests[i].params[k].key, key) == 0)
            return f->requests[i].params[k].value;
    return NULL;
}

size_t fake_ec2_count_params(const struct fake_ec2 *f, size_t i, const char *prefix)
{
    size_t n = 0;

    if (i >= f->n_requests)
        return 0;
    for (size_t k = 0; k < f->requests[i].n; k++)
        n += strncmp(f->requests[i].params[k].key, prefix, strlen(prefix)) == 0;
    return n;
}
