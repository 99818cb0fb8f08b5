/* watch.c: the cloud notice watchers of castor-node (watch.h): IMDSv2 on EC2, the metadata
 * server on Compute Engine, and none. */
#include "agent/watch.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/crypto.h"
#include "util/http_client.h"
#include "util/json.h"
#include "util/log.h"
#include "util/strbuf.h"
#include "util/timestamp.h"

#define WATCH_TOKEN_MAX 512 /* an IMDSv2 token longer than this is not one */

struct watch {
    const struct watch_ops *ops;
    struct http_client *http;
    char *endpoint, *node;
    double timeout_s, wait_s, interval_s;
    long token_ttl_s;
    struct log *log;
    char *token;             /* aws-imds: the session token (a secret), or NULL */
    double token_refresh_at; /* wall seconds: a new one is asked for from then on */
    /* what was said already, so that each notice is said once */
    int said_preempt, said_rebalance, said_maintenance;
    double said_deadline;
};

static double wt_wall(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void wt_log(struct watch *w, enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void wt_log(struct watch *w, enum log_level level, const char *fmt, ...)
{
    char msg[LOG_MSG_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    log_msg(w->log, wt_wall(), level, NULL, w->node, "%s: %s", w->ops->name, msg);
}

/* One request to the endpoint + path with headers, within timeout_s; *resp is the caller's on
 * success, whatever the status. */
static int wt_request(struct watch *w, const char *method, const char *path,
                      const struct http_client_header *h, size_t nh, double timeout_s,
                      struct http_client_response *resp)
{
    struct http_client_request req = {0};
    size_t len = strlen(w->endpoint) + strlen(path) + 1;
    char *url = malloc(len);
    int rc;

    if (!url)
        return ERR_NOMEM;
    snprintf(url, len, "%s%s", w->endpoint, path);
    req.method = method;
    req.url = url;
    req.headers = h;
    req.nheaders = nh;
    req.timeout_ms = (long)(timeout_s * 1000 + 0.5);
    req.max_body = 64 * 1024;
    rc = http_client_do(w->http, &req, resp, NULL);
    free(url);
    return rc;
}

/* An event of kind, or nothing when the same was said already. */
static void wt_say(struct watch *w, enum watch_kind kind, double deadline, struct watch_event *out)
{
    int *said = kind == WATCH_PREEMPT     ? &w->said_preempt
                : kind == WATCH_REBALANCE ? &w->said_rebalance
                                          : &w->said_maintenance;

    if (*said && (kind != WATCH_PREEMPT || w->said_deadline == deadline ||
                  (isnan(w->said_deadline) && isnan(deadline))))
        return;
    *said = 1;
    if (kind == WATCH_PREEMPT)
        w->said_deadline = deadline;
    out->kind = kind;
    out->deadline = deadline;
}

/* ---- none ---- */

static int none_round(struct watch *w, double now, struct watch_event *out)
{
    (void)w;
    (void)now;
    (void)out;
    return 0;
}

const struct watch_ops watch_none = {
    .name = "none",
    .default_endpoint = NULL,
    .interval_s = 3600,
    .round = none_round,
};

/* ---- aws-imds: IMDSv2 ---- */

static void aws_drop_token(struct watch *w)
{
    crypto_free_string(w->token);
    w->token = NULL;
}

/* A session token (PUT /latest/api/token) unless the one held is still good at now. */
static int aws_token(struct watch *w, double now)
{
    struct http_client_response r = {0};
    struct http_client_header h[1];
    char ttl[32];
    int rc;

    if (w->token && now < w->token_refresh_at)
        return 0;
    aws_drop_token(w);
    snprintf(ttl, sizeof(ttl), "%ld", w->token_ttl_s);
    h[0] = (struct http_client_header){"X-aws-ec2-metadata-token-ttl-seconds", ttl};
    if ((rc = wt_request(w, "PUT", "/latest/api/token", h, 1, w->timeout_s, &r)) < 0)
        return rc;
    if (r.status != 200 || r.body_len == 0 || r.body_len > WATCH_TOKEN_MAX ||
        strcspn(r.body, " \t\r\n") != r.body_len) {
        wt_log(w, LOG_WARN, "IMDSv2 refused a session token (HTTP %ld)", r.status);
        rc = ERR_IO;
    } else if (!(w->token = strdup(r.body))) {
        rc = ERR_NOMEM;
    } else {
        /* refreshed with a tenth of its life left, so that no request carries an expired one */
        w->token_refresh_at = now + 0.9 * (double)w->token_ttl_s;
    }
    crypto_wipe(r.body, r.body_len);
    http_client_response_clear(&r);
    return rc;
}

/* GET path with the session token; a 401 (the token expired or was revoked) gets a new token
 * and one more try. */
static int aws_get(struct watch *w, double now, const char *path, struct http_client_response *resp)
{
    for (int attempt = 0;; attempt++) {
        struct http_client_header h[1];
        int rc = aws_token(w, now);

        if (rc < 0)
            return rc;
        h[0] = (struct http_client_header){"X-aws-ec2-metadata-token", w->token};
        if ((rc = wt_request(w, "GET", path, h, 1, w->timeout_s, resp)) < 0)
            return rc;
        if (resp->status != 401 || attempt > 0)
            return 0;
        http_client_response_clear(resp);
        aws_drop_token(w);
    }
}

/* The JSON object of a 200 answer, or NULL (logged) when it is not one. */
static struct jv *aws_json(struct watch *w, const char *what, const struct http_client_response *r)
{
    struct jv *v = NULL;

    if (jv_parse(r->body, r->body_len, &v, NULL) < 0 || jv_type_of(v) != JV_OBJECT) {
        wt_log(w, LOG_WARN, "a malformed %s answer, ignored: not a JSON object", what);
        jv_free(v);
        return NULL;
    }
    return v;
}

/* spot/instance-action: {"action": "terminate"|"stop"|"hibernate", "time": ISO 8601}. */
static void aws_action(struct watch *w, const struct http_client_response *r,
                       struct watch_event *out)
{
    struct jv *v = aws_json(w, "spot/instance-action", r);
    const char *action = jv_string_value(jv_get(v, "action"));
    const char *when = jv_string_value(jv_get(v, "time"));
    int64_t t;

    if (!v)
        return;
    if (!action || (strcmp(action, "terminate") != 0 && strcmp(action, "stop") != 0 &&
                    strcmp(action, "hibernate") != 0))
        wt_log(w, LOG_WARN, "a malformed spot/instance-action answer, ignored: no known action");
    else if (!when || timestamp_parse_iso8601(when, &t) < 0)
        wt_log(w, LOG_WARN, "a malformed spot/instance-action answer, ignored: no ISO 8601 time");
    else
        wt_say(w, WATCH_PREEMPT, (double)t, out);
    jv_free(v);
}

/* events/recommendations/rebalance: {"noticeTime": ISO 8601}. */
static void aws_rebalance(struct watch *w, const struct http_client_response *r,
                          struct watch_event *out)
{
    struct jv *v = aws_json(w, "rebalance recommendation", r);
    const char *when = jv_string_value(jv_get(v, "noticeTime"));
    int64_t t;

    if (!v)
        return;
    if (!when || timestamp_parse_iso8601(when, &t) < 0)
        wt_log(w, LOG_WARN,
               "a malformed rebalance recommendation, ignored: no ISO 8601 noticeTime");
    else
        wt_say(w, WATCH_REBALANCE, NAN, out);
    jv_free(v);
}

static int aws_round(struct watch *w, double now, struct watch_event *out)
{
    static const struct {
        const char *path, *what;
        void (*read)(struct watch *, const struct http_client_response *, struct watch_event *);
    } asks[] = {
        {"/latest/meta-data/spot/instance-action", "spot/instance-action", aws_action},
        {"/latest/meta-data/events/recommendations/rebalance", "rebalance recommendation",
         aws_rebalance},
    };

    for (size_t i = 0; i < sizeof(asks) / sizeof(asks[0]) && out->kind == WATCH_NOTHING; i++) {
        struct http_client_response r = {0};
        int rc = aws_get(w, now, asks[i].path, &r);

        if (rc < 0)
            return rc;
        if (r.status == 200)
            asks[i].read(w, &r, out);
        else if (r.status != 404) /* 404: none */
            wt_log(w, LOG_WARN, "the %s answered HTTP %ld, ignored", asks[i].what, r.status);
        http_client_response_clear(&r);
    }
    return 0;
}

/* GET path's 200 answer as a string of the caller's; ERR_UNKNOWN for another status. */
static int aws_get_text(struct watch *w, double now, const char *path, char **out)
{
    struct http_client_response r = {0};
    int rc = aws_get(w, now, path, &r);

    if (rc == 0 && r.status != 200) {
        wt_log(w, LOG_WARN, "%s answered HTTP %ld", path, r.status);
        rc = ERR_UNKNOWN;
    }
    if (rc == 0 && !(*out = strdup(r.body ? r.body : "")))
        rc = ERR_NOMEM;
    http_client_response_clear(&r);
    return rc;
}

static int aws_identity(struct watch *w, double now, const char *audience, struct watch_proof *out)
{
    char *doc = NULL, *sig = NULL;
    int rc = aws_get_text(w, now, "/latest/dynamic/instance-identity/document", &doc);

    (void)audience; /* (an identity document is the instance's, for anyone) */
    if (rc == 0)
        rc = aws_get_text(w, now, "/latest/dynamic/instance-identity/signature", &sig);
    if (rc < 0) {
        free(doc);
        return rc;
    }
    *out = (struct watch_proof){.document = doc, .signature = sig};
    return 0;
}

const struct watch_ops watch_aws_imds = {
    .name = "aws-imds",
    .default_endpoint = WATCH_AWS_ENDPOINT,
    .interval_s = 5,
    .round = aws_round,
    .identity = aws_identity,
};

/* ---- gce-metadata ---- */

#define GCE_PREEMPTED "/computeMetadata/v1/instance/preempted"
#define GCE_MAINTENANCE "/computeMetadata/v1/instance/maintenance-event"

/* GET path with Metadata-Flavor: Google; the body's value (surrounding space dropped) into buf
 * when it answered 200. 1 with a value, 0 for another status (*status says which), or an error
 * of the transport. */
static int gce_get(struct watch *w, const char *path, double timeout_s, char *buf, size_t size,
                   long *status)
{
    struct http_client_response r = {0};
    struct http_client_header h[1] = {{"Metadata-Flavor", "Google"}};
    const char *p;
    size_t n;
    int rc = wt_request(w, "GET", path, h, 1, timeout_s, &r);

    if (rc < 0)
        return rc;
    *status = r.status;
    p = r.body;
    n = r.body_len;
    while (n > 0 && strchr(" \t\r\n", *p)) {
        p++;
        n--;
    }
    while (n > 0 && strchr(" \t\r\n", p[n - 1]))
        n--;
    snprintf(buf, size, "%.*s", (int)(n < size ? n : size - 1), p);
    rc = r.status == 200;
    http_client_response_clear(&r);
    return rc;
}

/* The preempted flag's answer: TRUE is a preemption (WATCH_GCE_NOTICE_S from now). */
static void gce_preempted(struct watch *w, double now, const char *value, struct watch_event *out)
{
    if (strcmp(value, "TRUE") == 0) {
        if (!w->said_preempt) /* its deadline is ours, not the server's: said once */
            wt_say(w, WATCH_PREEMPT, now + WATCH_GCE_NOTICE_S, out);
    } else if (strcmp(value, "FALSE") != 0) {
        wt_log(w, LOG_WARN,
               "a malformed preempted answer, ignored: \"%.32s\" is neither TRUE nor FALSE", value);
    }
}

static int gce_round(struct watch *w, double now, struct watch_event *out)
{
    char value[64], path[128];
    long status = 0;
    int rc;

    /* the flag now: a change before the long poll began would not end it */
    if ((rc = gce_get(w, GCE_PREEMPTED, w->timeout_s, value, sizeof(value), &status)) < 0)
        return rc;
    if (rc == 1)
        gce_preempted(w, now, value, out);
    else
        wt_log(w, LOG_WARN, "the preempted flag answered HTTP %ld, ignored", status);
    if (out->kind != WATCH_NOTHING)
        return 0;
    /* the maintenance event (optional: a server without it answers 404) */
    if ((rc = gce_get(w, GCE_MAINTENANCE, w->timeout_s, value, sizeof(value), &status)) < 0)
        return rc;
    if (rc == 1 && strcmp(value, "TERMINATE_ON_HOST_MAINTENANCE") == 0) {
        wt_say(w, WATCH_MAINTENANCE, NAN, out);
        return 0;
    }
    if (rc == 1 && strcmp(value, "NONE") == 0)
        w->said_maintenance = 0; /* over: a later one is new */
    else if (rc == 1 && strcmp(value, "MIGRATE_ON_HOST_MAINTENANCE") != 0)
        wt_log(w, LOG_WARN, "a malformed maintenance-event answer, ignored: \"%.40s\"", value);
    /* then wait for a change of the flag, at most wait_s (the client waits a little longer) */
    snprintf(path, sizeof(path), GCE_PREEMPTED "?wait_for_change=true&timeout_sec=%ld",
             (long)w->wait_s);
    rc = gce_get(w, path, w->wait_s + w->timeout_s, value, sizeof(value), &status);
    if (rc == ERR_AGAIN)
        return 0; /* no answer within the wait: nothing changed */
    if (rc < 0)
        return rc;
    if (rc == 1)
        gce_preempted(w, now, value, out);
    return 0;
}

#define GCE_IDENTITY "/computeMetadata/v1/instance/service-accounts/default/identity"
#define GCE_TOKEN_MAX 8192 /* an identity token longer than this is not one */

static int gce_identity(struct watch *w, double now, const char *audience, struct watch_proof *out)
{
    struct strbuf path = {0};
    char *token = malloc(GCE_TOKEN_MAX + 1);
    long status = 0;
    int rc;

    (void)now;
    if (!audience || !audience[0]) {
        free(token);
        return ERR_INVAL;
    }
    strbuf_str(&path, GCE_IDENTITY "?audience=");
    strbuf_add_uri_encoded(&path, audience, strlen(audience));
    strbuf_str(&path, "&format=full");
    if (!token || !path.p) {
        free(token);
        free(path.p);
        return ERR_NOMEM;
    }
    rc = gce_get(w, path.p, w->timeout_s, token, GCE_TOKEN_MAX + 1, &status);
    free(path.p);
    if (rc == 0 || (rc == 1 && (!token[0] || strlen(token) >= GCE_TOKEN_MAX))) {
        wt_log(w, LOG_WARN, "the identity token was not given (HTTP %ld)", status);
        rc = ERR_UNKNOWN;
    }
    if (rc < 0) {
        free(token);
        return rc;
    }
    *out = (struct watch_proof){.token = token};
    return 0;
}

const struct watch_ops watch_gce_metadata = {
    .name = "gce-metadata",
    .default_endpoint = WATCH_GCE_ENDPOINT,
    .interval_s = 1,
    .round = gce_round,
    .identity = gce_identity,
};

/* ---- the watch ---- */

const struct watch_ops *watch_find(const char *name)
{
    static const struct watch_ops *const all[] = {&watch_none, &watch_aws_imds,
                                                  &watch_gce_metadata};

    for (size_t i = 0; name && i < sizeof(all) / sizeof(all[0]); i++)
        if (strcmp(all[i]->name, name) == 0)
            return all[i];
    return NULL;
}

void watch_free(struct watch *w)
{
    if (!w)
        return;
    aws_drop_token(w);
    http_client_free(w->http);
    free(w->endpoint);
    free(w->node);
    free(w);
}

/* The endpoint a watch of ops asks. */
static const char *wt_endpoint(const struct watch_ops *ops, const struct watch_config *cfg)
{
    if (cfg->endpoint && cfg->endpoint[0])
        return cfg->endpoint;
    return ops->default_endpoint ? ops->default_endpoint : "http://127.0.0.1";
}

int watch_config_check(const struct watch_ops *ops, const struct watch_config *cfg, struct error *e)
{
    const char *endpoint;

    if (!ops || !cfg)
        return err_set(e, ERR_INVAL, "watch", 0, 0, "no cloud or configuration");
    endpoint = wt_endpoint(ops, cfg);
    if (strncmp(endpoint, "http://", 7) != 0 && strncmp(endpoint, "https://", 8) != 0)
        return err_set(e, ERR_INVAL, WATCH_ENV_ENDPOINT, 0, 0,
                       "the metadata service's URL must start with http:// or https://");
    if (cfg->timeout_s < 0 || cfg->wait_s < 0 || cfg->interval_s < 0 || cfg->token_ttl_s < 0)
        return err_set(e, ERR_INVAL, "watch", 0, 0, "a negative time");
    return 0;
}

int watch_new(const struct watch_ops *ops, const struct watch_config *cfg, struct watch **out,
              struct error *e)
{
    struct watch *w;
    size_t len;
    int rc;

    if (!out)
        return err_set(e, ERR_INVAL, "watch", 0, 0, "no output");
    if ((rc = watch_config_check(ops, cfg, e)) < 0)
        return rc;
    if (!(w = calloc(1, sizeof(*w))))
        return ERR_NOMEM;
    w->ops = ops;
    w->endpoint = strdup(wt_endpoint(ops, cfg));
    w->node = cfg->node ? strdup(cfg->node) : NULL;
    if (!w->endpoint || (cfg->node && !w->node)) {
        rc = ERR_NOMEM;
        goto fail;
    }
    len = strlen(w->endpoint);
    while (len > 0 && w->endpoint[len - 1] == '/')
        w->endpoint[--len] = '\0';
    w->timeout_s = cfg->timeout_s > 0 ? cfg->timeout_s : 2;
    w->wait_s = cfg->wait_s >= 1 ? floor(cfg->wait_s) : 10;
    w->interval_s = cfg->interval_s > 0 ? cfg->interval_s : ops->interval_s;
    w->token_ttl_s = cfg->token_ttl_s > 0 ? cfg->token_ttl_s : 21600;
    w->log = cfg->log;
    w->said_deadline = NAN;
    if ((rc = http_client_new(&w->http)) < 0) {
        err_set(e, rc, "watch", 0, 0, "no HTTP client");
        goto fail;
    }
    *out = w;
    return 0;
fail:
    watch_free(w);
    return rc;
}

int watch_round(struct watch *w, double now, struct watch_event *out)
{
    struct watch_event ev = {WATCH_NOTHING, NAN};
    int rc = w ? w->ops->round(w, now, &ev) : ERR_INVAL;

    if (out)
        *out = rc < 0 ? (struct watch_event){WATCH_NOTHING, NAN} : ev;
    return rc;
}

int watch_identity(struct watch *w, double now, const char *audience, struct watch_proof *out)
{
    if (!w || !out || !w->ops->identity)
        return ERR_INVAL;
    return w->ops->identity(w, now, audience, out);
}

void watch_proof_clear(struct watch_proof *p)
{
    if (!p)
        return;
    free(p->document);
    free(p->signature);
    crypto_free_string(p->token); /* (a bearer of the instance's identity for a while) */
    memset(p, 0, sizeof(*p));
}

double watch_interval(const struct watch *w)
{
    return w->interval_s;
}

static void wt_sleep(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};

    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

void watch_loop(struct watch *w, watch_emit_fn emit, void *arg, const int *stop)
{
    int fails = 0;

    while (!stop || !*stop) {
        struct watch_event ev;
        int rc = watch_round(w, wt_wall(), &ev);
        double delay = w->interval_s;

        if (rc < 0) {
            if (fails++ == 0)
                wt_log(w, LOG_WARN, "cannot ask the metadata service at %s: %s; asking again",
                       w->endpoint, err_str(rc));
            delay = fmin(60.0, ldexp(1.0, fails < 7 ? fails - 1 : 6));
        } else {
            if (fails > 0)
                wt_log(w, LOG_INFO, "the metadata service answers again");
            fails = 0;
            if (ev.kind != WATCH_NOTHING)
                emit(arg, &ev);
        }
        if (stop && *stop)
            break;
        wt_sleep(delay);
    }
}
