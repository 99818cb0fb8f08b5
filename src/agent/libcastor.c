/* libcastor.c: libcastor (include/castor/castor.h): the handle, the steps, the background thread
 * that reports to the controller and reads the job's allocation back, decisions, saved state. */
#include "castor/castor.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/gns.h"
#include "agent/reporter.h"
#include "model/fit.h"
#include "model/goodput.h"
#include "model/profile.h"
#include "model/tput.h"
#include "util/crypto.h"
#include "util/error.h"
#include "util/http_client.h"
#include "util/json.h"
#include "util/log.h"

#define CASTOR_DEFAULT_INTERVAL 30.0 /* seconds between reports */
#define CASTOR_DEFAULT_TIMEOUT_MS 5000L
#define CASTOR_BACKOFF_BASE 1.0 /* seconds before the first retry (at most the interval) */
#define CASTOR_BACKOFF_CAP 60.0 /* the longest wait between retries (at least the interval) */
#define CASTOR_TOKEN_MIN 16
#define CASTOR_TOKEN_MAX 512
#define CASTOR_NAME_MAX 128
#define CASTOR_MAX_WORLD 1000000
#define CASTOR_MAX_ACCUM 1000000
#define CASTOR_WARMUP_STEPS 1     /* the first steps of a handle or a batch, whose time is setup */
#define CASTOR_STATE_VERSION 1    /* of castor_save_state's text */
#define CASTOR_STACK_GROUPS 16    /* groups whose norms fit on the stack in a step */
#define CASTOR_ANSWER_MAX 1048576 /* bytes of an answer from the controller */
#define CASTOR_RETRY_AFTER_MAX 3600.0 /* the longest Retry-After taken, seconds */
#define CASTOR_WHY_MAX 256            /* bytes of what a failed request's answer said */

/* What one report attempt takes from the handle: copied under the lock, used outside it. */
struct castor_snap {
    struct reporter_pool pool;
    struct grad_params grad;
    int has_grad;
    double progress;
    struct reporter_current cur;
    struct profile prof; /* a copy of the handle's, refreshed when it has grown */
    long prof_version;
    unsigned long long seq; /* the flush requests this attempt answers */
    int ckpt;               /* a checkpoint notice to send again (at ckpt_progress) */
    double ckpt_progress;
    unsigned long long ckpt_seq; /* the notice's number */
    int ckpt_done;               /* it was accepted, or refused (it would be refused again) */
};

struct castor {
    /* fixed at creation */
    int rank;
    double interval;
    double busbw; /* bytes/s of an all-reduce between two GPUs of the node; 0: not known */
    long timeout_ms;
    char *job;
    char *report_url;
    char *alloc_url;
    char *ckpt_url;     /* POST: a checkpoint is on disk */
    char *finished_url; /* POST: the job completed */
    char *auth;         /* "Bearer <token>"; wiped at free */
    char *ca_file;
    const struct tput_model_ops *model;
    struct log *log;

    /* the background thread's own */
    struct http_client *client;
    struct castor_snap snap;
    struct tput_params tp;
    int has_tp;
    long fit_version; /* the profile version tp was fitted to (-1: none) */
    uint64_t seed;
    int failures;
    char why[CASTOR_WHY_MAX]; /* what the last attempt's failing answer said; "" if none */
    double retry_after;       /* seconds its 429 or 408 asked to wait; 0 if none */

    /* shared: under mu */
    pthread_mutex_t mu;
    pthread_cond_t wake; /* the thread: a flush asked, or stop */
    pthread_cond_t done; /* flush waiters: an attempt ended */
    pthread_t thread;
    int has_thread;
    int stop;
    unsigned long long flush_req;
    unsigned long long flush_done;
    int flush_rc;
    double next_due;   /* monotonic seconds of the next attempt */
    double not_before; /* monotonic: no request before (a 429's or 408's Retry-After) */
    /* a checkpoint notice that did not reach the controller for a reason that passes: the
     * thread sends it again with each attempt until it is accepted or refused */
    int ckpt_pending;
    double ckpt_progress;        /* its progress (the checkpoint's) */
    unsigned long long ckpt_seq; /* grows with each castor_checkpointed */
    struct reporter_current cur;
    struct reporter_pool pool;
    struct profile prof;
    long prof_version;
    struct gns *gns;
    double *prev_sqr; /* with a single gradient: the previous step's norms, per group */
    int has_prev;
    int warm; /* steps whose timing is still to be left out (CASTOR_WARMUP_STEPS) */
    double progress;
    struct castor_decision dec;
    struct castor_stats st;
};

unsigned castor_version(void)
{
    return CASTOR_VERSION_NUMBER;
}

const char *castor_strerror(int code)
{
    switch (code) {
    case CASTOR_OK:
        return "success";
    case CASTOR_ENOMEM:
        return "out of memory";
    case CASTOR_EINVAL:
        return "invalid argument";
    case CASTOR_EIO:
        return "the controller cannot be reached, or a file cannot be read";
    case CASTOR_ENOENT:
        return "a required environment variable or file is missing";
    case CASTOR_EPARSE:
        return "malformed input";
    case CASTOR_ERANGE:
        return "value out of range";
    case CASTOR_EAGAIN:
        return "timed out; still going on in the background";
    case CASTOR_EREFUSED:
        return "the controller refused the request";
    default:
        return "unknown error";
    }
}

/* An internal code (util/error.h) as a public one. */
static int castor_code(int rc)
{
    switch (rc) {
    case 0:
        return CASTOR_OK;
    case ERR_NOMEM:
        return CASTOR_ENOMEM;
    case ERR_INVAL:
        return CASTOR_EINVAL;
    case ERR_NOENT:
        return CASTOR_ENOENT;
    case ERR_PARSE:
        return CASTOR_EPARSE;
    case ERR_RANGE:
        return CASTOR_ERANGE;
    case ERR_AGAIN:
        return CASTOR_EAGAIN;
    case ERR_CONFLICT:
        return CASTOR_EREFUSED;
    default:
        return CASTOR_EIO;
    }
}

static int castor_msg(char *msg, size_t size, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Write a reason into msg (when given) and return rc. */
static int castor_msg(char *msg, size_t size, int rc, const char *fmt, ...)
{
    va_list ap;

    if (msg && size > 0) {
        va_start(ap, fmt);
        vsnprintf(msg, size, fmt, ap);
        va_end(ap);
    }
    return rc;
}

static double castor_mono(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double castor_wall(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void castor_timespec(double t, struct timespec *ts)
{
    double s = floor(t);

    ts->tv_sec = (time_t)s;
    ts->tv_nsec = (long)((t - s) * 1e9);
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

static int castor_name_ok(const char *s)
{
    size_t n = strlen(s);

    if (n < 1 || n > CASTOR_NAME_MAX)
        return 0;
    if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') ||
          (s[0] >= '0' && s[0] <= '9')))
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '.' || *s == '_' || *s == '-'))
            return 0;
    return 1;
}

static int castor_token_ok(const char *s)
{
    size_t n = strlen(s);

    if (n < CASTOR_TOKEN_MIN || n > CASTOR_TOKEN_MAX)
        return 0;
    for (; *s; s++)
        if (*s < 0x21 || *s > 0x7e)
            return 0;
    return 1;
}

/* Free a string after overwriting it. */
static void castor_free_wiped(char *s)
{
    if (s) {
        crypto_wipe(s, strlen(s));
        free(s);
    }
}

/* ---- the background thread ---- */

/* One request to the controller: 0 and the answer's status (and body, owned by *resp), or the
 * transport's error. */
static int castor_http(struct castor *h, const char *method, const char *url, const char *body,
                       struct http_client_response *resp)
{
    const struct http_client_header headers[2] = {{"Authorization", h->auth},
                                                  {"Content-Type", "application/json"}};
    struct http_client_request req = {
        .method = method,
        .url = url,
        .headers = headers,
        .nheaders = body ? 2 : 1,
        .body = body,
        .body_len = body ? strlen(body) : 0,
        .timeout_ms = h->timeout_ms,
        .max_body = CASTOR_ANSWER_MAX,
        .ca_file = h->ca_file,
        .capture_header = "Retry-After",
    };

    return http_client_do(h->client, &req, resp, NULL);
}

/* A status as a code: 0 for 200, ERR_CONFLICT for a refusal (4xx but 408 and 429: the same
 * request would be refused again), ERR_IO otherwise (5xx, a timeout, too many requests and the
 * like: worth a retry). */
static int castor_status(long status)
{
    if (status == 200)
        return 0;
    if (status == 408 || status == 429)
        return ERR_IO;
    return status >= 400 && status < 500 ? ERR_CONFLICT : ERR_IO;
}

/* The seconds a 429 or 408 answer's Retry-After asks to wait (delta-seconds, at most
 * CASTOR_RETRY_AFTER_MAX); 0 for other answers, none, or an HTTP date (the backoff holds). */
static double castor_retry_after(const struct http_client_response *r)
{
    char *end = NULL;
    double v;

    if ((r->status != 429 && r->status != 408) || !r->captured[0])
        return 0;
    errno = 0;
    v = strtod(r->captured, &end);
    while (end && (*end == ' ' || *end == '\t'))
        end++;
    if (errno != 0 || end == r->captured || *end != '\0' || !(v >= 0))
        return 0;
    return fmin(v, CASTOR_RETRY_AFTER_MAX);
}

/* What an answer other than 200 to what (a request's name) said, into why: the status and the
 * answer's {"error"} text when it has one; and the Retry-After it asked, into *retry_after. */
static void castor_answer_why(const struct http_client_response *r, const char *what, char *why,
                              size_t size, double *retry_after)
{
    struct jv *v = NULL;
    const char *text = NULL;

    if (r->body && r->body_len > 0 && jv_parse(r->body, r->body_len, &v, NULL) == 0)
        text = jv_string_value(jv_get(v, "error"));
    snprintf(why, size, "%s: HTTP %ld%s%.160s", what, r->status, text ? ", " : "",
             text ? text : "");
    jv_free(v);
    *retry_after = castor_retry_after(r);
}

/* POST {"progress": progress} to url on client: 0, or the transport's or the answer's error;
 * a failing answer is described in why (size bytes; "" otherwise) with its Retry-After. */
static int castor_post_progress(struct castor *h, struct http_client *client, const char *url,
                                const char *what, double progress, char *why, size_t size,
                                double *retry_after)
{
    const struct http_client_header headers[2] = {{"Authorization", h->auth},
                                                  {"Content-Type", "application/json"}};
    struct http_client_request req = {
        .method = "POST",
        .url = url,
        .headers = headers,
        .nheaders = 2,
        .timeout_ms = h->timeout_ms,
        .max_body = CASTOR_ANSWER_MAX,
        .ca_file = h->ca_file,
        .capture_header = "Retry-After",
    };
    struct http_client_response resp = {0};
    char body[64];
    int rc;

    why[0] = '\0';
    *retry_after = 0;
    snprintf(body, sizeof(body), "{\"progress\":%.17g}", progress);
    req.body = body;
    req.body_len = strlen(body);
    rc = http_client_do(client, &req, &resp, NULL);
    if (rc == 0)
        rc = castor_status(resp.status);
    if (rc < 0 && resp.status > 0)
        castor_answer_why(&resp, what, why, size, retry_after);
    http_client_response_clear(&resp);
    return rc;
}

/* 1 when castor_free is stopping the thread: the attempt in flight makes no further request, so
 * that castor_free waits at most the one request in flight (its timeout). */
static int castor_stopping(struct castor *h)
{
    int stop;

    pthread_mutex_lock(&h->mu);
    stop = h->stop;
    pthread_mutex_unlock(&h->mu);
    return stop;
}

/* What became of a report's data. */
enum castor_posted {
    CASTOR_POST_KEPT,    /* not delivered: send it again with the next attempt */
    CASTOR_POST_SENT,    /* the controller stored it */
    CASTOR_POST_DROPPED, /* refused (it would be refused again) */
};

/*
 * Send the snapshot's report, then read the allocation and decide. *posted says what became of
 * the report's data. On success *dec holds the decision (when *decided is 1; a job whose local
 * batch is not known yet gets none).
 */
static int castor_exchange(struct castor *h, struct castor_snap *s, enum castor_posted *posted,
                           struct reporter_decision *dec, int *decided)
{
    struct http_client_response resp = {0};
    struct reporter_alloc alloc;
    char *body = NULL;
    int rc;

    *posted = CASTOR_POST_KEPT;
    *decided = 0;
    s->ckpt_done = 0;
    if (s->ckpt) { /* a checkpoint notice first: what a preemption would cost hangs on it */
        rc = castor_post_progress(h, h->client, h->ckpt_url, "the checkpoint notice",
                                  s->ckpt_progress, h->why, sizeof(h->why), &h->retry_after);
        if (rc < 0 && rc != ERR_CONFLICT)
            goto out;
        if (rc == ERR_CONFLICT)
            log_msg(h->log, castor_wall(), LOG_WARN, h->job, NULL,
                    "castor: the controller refused the checkpoint notice at progress %.17g (%s)",
                    s->ckpt_progress, h->why);
        s->ckpt_done = 1;
        h->why[0] = '\0';
        if (castor_stopping(h)) {
            rc = ERR_AGAIN;
            goto out;
        }
    }
    rc = reporter_body(&s->pool, s->has_grad ? &s->grad : NULL, s->progress, s->prof.sync_prior,
                       &body);
    if (rc < 0) {
        if (rc != ERR_NOMEM) /* values the API refuses would be refused again */
            *posted = CASTOR_POST_DROPPED;
        goto out;
    }
    rc = castor_http(h, "POST", h->report_url, body, &resp);
    if (rc < 0)
        goto out;
    rc = castor_status(resp.status);
    if (rc == 0)
        *posted = CASTOR_POST_SENT;
    else if (rc == ERR_CONFLICT)
        *posted = CASTOR_POST_DROPPED;
    if (rc < 0)
        castor_answer_why(&resp, "the report", h->why, sizeof(h->why), &h->retry_after);
    http_client_response_clear(&resp);
    if (rc == 0 && castor_stopping(h))
        rc = ERR_AGAIN;
    if (rc < 0)
        goto out;
    rc = castor_http(h, "GET", h->alloc_url, NULL, &resp);
    if (rc < 0)
        goto out;
    rc = castor_status(resp.status);
    if (rc < 0)
        castor_answer_why(&resp, "the allocation", h->why, sizeof(h->why), &h->retry_after);
    if (rc == 0)
        rc = reporter_parse_alloc(resp.body, resp.body_len, &alloc);
    if (rc < 0)
        goto out;
    if (s->prof.n > 0 && s->prof_version != h->fit_version) {
        if (fit_tput(h->model, &s->prof, &h->tp, NULL) == 0)
            h->has_tp = 1;
        h->fit_version = s->prof_version;
    }
    if (s->cur.local_bsz > 0 && s->cur.limits.init_bsz > 0) {
        rc = reporter_decide(&alloc, &s->cur, h->has_tp ? &h->tp : NULL,
                             s->has_grad ? &s->grad : NULL, dec);
        *decided = rc == 0;
    }
out:
    http_client_response_clear(&resp);
    free(body);
    return rc;
}

/* The statistics a report carries (under mu): 1 and *g when there are any. */
static int castor_grad_locked(const struct castor *h, struct grad_params *g)
{
    if (!h->gns || gns_steps(h->gns) == 0)
        return 0;
    gns_params(h->gns, g);
    return 1;
}

/* Copy what the attempt needs (under mu) and take the pooled steps out of the handle. */
static int castor_snapshot_locked(struct castor *h, struct castor_snap *s)
{
    s->pool = h->pool;
    reporter_pool_clear(&h->pool);
    s->has_grad = castor_grad_locked(h, &s->grad);
    s->progress = h->progress;
    s->cur = h->cur;
    s->seq = h->flush_req;
    s->ckpt = h->ckpt_pending;
    s->ckpt_progress = h->ckpt_progress;
    s->ckpt_seq = h->ckpt_seq;
    if (s->prof_version != h->prof_version) {
        struct profile_entry *e = NULL;

        if (h->prof.n > 0) {
            e = realloc(s->prof.entries, h->prof.n * sizeof(*e));
            if (!e)
                return ERR_NOMEM;
            memcpy(e, h->prof.entries, h->prof.n * sizeof(*e));
            s->prof.entries = e;
            s->prof.cap = h->prof.n;
        }
        s->prof.n = h->prof.n;
        s->prof.sync_prior = h->prof.sync_prior;
        s->prof_version = h->prof_version;
    }
    return 0;
}

/* Take the attempt's outcome into the handle (under mu). */
static void castor_outcome_locked(struct castor *h, struct castor_snap *s, int rc,
                                  enum castor_posted posted, const struct reporter_decision *d,
                                  int decided)
{
    double now = castor_mono(), wait;

    if (posted == CASTOR_POST_KEPT) {
        long long before = h->pool.dropped;

        reporter_pool_merge(&h->pool, &s->pool);
        /* (the attempt's steps whose configurations no longer fit: new ones came meanwhile; its
         * own dropped steps were counted when they came) */
        h->st.steps_dropped += h->pool.dropped - before - s->pool.dropped;
    }
    if (s->ckpt && s->ckpt_done && h->ckpt_seq == s->ckpt_seq) /* (not one made since) */
        h->ckpt_pending = 0;
    if (h->retry_after > 0)
        h->not_before = now + h->retry_after;
    if (posted == CASTOR_POST_SENT)
        h->st.reports_sent++;
    if (rc == 0 && decided) {
        struct castor_decision n = h->dec;

        n.world_size = d->world_size;
        n.nodes = d->nodes;
        n.local_bsz = d->local_bsz;
        n.accum_steps = d->accum_steps;
        n.lr_gain = d->lr_gain;
        n.from_controller = d->from_controller;
        if (memcmp(&n, &h->dec, sizeof(n)) != 0) {
            n.version++;
            h->dec = n;
        }
    }
    if (rc == 0) {
        if (h->failures > 0)
            log_msg(h->log, castor_wall(), LOG_WARN, h->job, NULL,
                    "castor: reports to the controller resumed after %d failed attempts",
                    h->failures);
        h->failures = 0;
        h->next_due = now + h->interval;
    } else {
        if (rc == ERR_CONFLICT)
            h->st.reports_refused++;
        else
            h->st.reports_failed++;
        h->failures++;
        wait = reporter_backoff(h->failures, fmin(CASTOR_BACKOFF_BASE, h->interval),
                                fmax(CASTOR_BACKOFF_CAP, h->interval), &h->seed);
        wait = fmax(wait, h->retry_after); /* at least what the controller asked */
        h->next_due = now + wait;
        if (h->failures == 1 && !h->stop) /* (not an attempt cut short by castor_free) */
            log_msg(h->log, castor_wall(), LOG_WARN, h->job, NULL,
                    "castor: a report to the controller failed (%s); retrying in %.1f s, training "
                    "goes on",
                    h->why[0] ? h->why : err_str(rc), wait);
    }
    if (s->seq > h->flush_done)
        h->flush_done = s->seq;
    h->flush_rc = rc;
    pthread_cond_broadcast(&h->done);
}

static void *castor_thread(void *arg)
{
    struct castor *h = arg;
    struct reporter_decision d;
    enum castor_posted posted;
    struct timespec ts;
    int rc, decided;

    pthread_mutex_lock(&h->mu);
    for (;;) {
        /* the next attempt when due, or at once for a flush: never before a Retry-After */
        while (!h->stop) {
            double due =
                h->flush_req != h->flush_done ? h->not_before : fmax(h->next_due, h->not_before);

            if (castor_mono() >= due)
                break;
            castor_timespec(due, &ts);
            pthread_cond_timedwait(&h->wake, &h->mu, &ts);
        }
        if (h->stop)
            break;
        rc = castor_snapshot_locked(h, &h->snap);
        pthread_mutex_unlock(&h->mu);
        posted = CASTOR_POST_KEPT;
        decided = 0;
        h->why[0] = '\0';
        h->retry_after = 0;
        if (rc == 0)
            rc = castor_exchange(h, &h->snap, &posted, &d, &decided);
        pthread_mutex_lock(&h->mu);
        castor_outcome_locked(h, &h->snap, rc, posted, &d, decided);
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

/* ---- creating and freeing ---- */

/* "base" + "/v1/jobs/" + job + suffix, in a new string; NULL without memory. */
static char *castor_job_url(const char *base, const char *job, const char *suffix)
{
    size_t n = strlen(base), len;
    char *s;

    while (n > 0 && base[n - 1] == '/')
        n--;
    len = n + strlen("/v1/jobs/") + strlen(job) + strlen(suffix) + 1;
    s = malloc(len);
    if (s)
        snprintf(s, len, "%.*s/v1/jobs/%s%s", (int)n, base, job, suffix);
    return s;
}

/* Check the options and fill the starting configuration of h. */
static int castor_check(struct castor *h, const struct castor_options *o, char *msg, size_t size)
{
    struct http_client_url u;
    int world = o->world_size ? o->world_size : 1, nodes = o->nodes ? o->nodes : 1;
    double gain = o->lr_gain != 0 ? o->lr_gain : 1.0;

    if (world < 1 || world > CASTOR_MAX_WORLD)
        return castor_msg(msg, size, ERR_INVAL, "world_size must be from 1 to %d",
                          CASTOR_MAX_WORLD);
    if (nodes < 1 || nodes > world)
        return castor_msg(msg, size, ERR_INVAL, "nodes must be from 1 to world_size (%d)", world);
    if (o->rank < 0 || o->rank >= world)
        return castor_msg(msg, size, ERR_INVAL, "rank must be from 0 to world_size - 1 (%d)",
                          world - 1);
    if (!(isfinite(o->local_bsz) && o->local_bsz >= 0))
        return castor_msg(msg, size, ERR_INVAL, "local_bsz must be positive (or 0: not known)");
    if (o->accum_steps < 0 || o->accum_steps > CASTOR_MAX_ACCUM)
        return castor_msg(msg, size, ERR_INVAL, "accum_steps must be from 0 to %d",
                          CASTOR_MAX_ACCUM);
    if (!(isfinite(gain) && gain > 0))
        return castor_msg(msg, size, ERR_INVAL, "lr_gain must be positive");
    if (!(isfinite(o->init_bsz) && o->init_bsz >= 0) ||
        !(isfinite(o->max_bsz) && o->max_bsz >= 0) ||
        !(isfinite(o->max_local_bsz) && o->max_local_bsz >= 0))
        return castor_msg(msg, size, ERR_INVAL,
                          "init_bsz, max_bsz and max_local_bsz must be >= 0 (0: the default)");
    if (o->max_bsz > 0 && o->init_bsz > 0 && o->max_bsz < o->init_bsz)
        return castor_msg(msg, size, ERR_INVAL, "max_bsz must be at least init_bsz");
    if (!(isfinite(o->report_interval) && o->report_interval >= 0) || o->timeout_ms < 0)
        return castor_msg(msg, size, ERR_INVAL, "report_interval and timeout_ms must be >= 0");
    if (!(isfinite(o->allreduce_busbw) && o->allreduce_busbw >= 0))
        return castor_msg(msg, size, ERR_INVAL, "allreduce_busbw must be >= 0 (0: not known)");
    if (o->url) {
        if (http_client_parse_url(o->url, &u) < 0)
            return castor_msg(msg, size, ERR_INVAL, "url is not an http(s) URL");
        if (!o->job || !castor_name_ok(o->job))
            return castor_msg(
                msg, size, ERR_INVAL,
                "job must be 1 to %d characters of A-Z a-z 0-9 . _ -, starting with a "
                "letter or digit",
                CASTOR_NAME_MAX);
        if (!o->token || !castor_token_ok(o->token))
            return castor_msg(msg, size, ERR_INVAL,
                              "the job token must be %d to %d printable characters without spaces",
                              CASTOR_TOKEN_MIN, CASTOR_TOKEN_MAX);
    }
    h->rank = o->rank;
    h->busbw = o->allreduce_busbw;
    h->interval = o->report_interval > 0 ? o->report_interval : CASTOR_DEFAULT_INTERVAL;
    h->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : CASTOR_DEFAULT_TIMEOUT_MS;
    h->seed = o->seed;
    h->cur.nodes = nodes;
    h->cur.world_size = world;
    h->cur.local_bsz = o->local_bsz;
    h->cur.accum_steps = o->accum_steps;
    h->cur.limits.init_bsz = o->init_bsz;
    if (o->init_bsz == 0 && o->local_bsz > 0)
        h->cur.limits.init_bsz = world * o->local_bsz * (o->accum_steps + 1);
    h->cur.limits.max_bsz = o->max_bsz;
    h->cur.limits.max_local = o->max_local_bsz;
    h->cur.limits.accumulation = o->accumulation != 0;
    h->dec.world_size = world;
    h->dec.nodes = nodes;
    h->dec.local_bsz = o->local_bsz;
    h->dec.accum_steps = o->accum_steps;
    h->dec.lr_gain = gain;
    return 0;
}

/* The strings and the client a reporting handle needs. */
static int castor_connect(struct castor *h, const struct castor_options *o)
{
    size_t n = strlen("Bearer ") + strlen(o->token) + 1;
    int rc;

    h->job = strdup(o->job);
    h->report_url = castor_job_url(o->url, o->job, "/reports");
    h->alloc_url = castor_job_url(o->url, o->job, "/allocation");
    h->ckpt_url = castor_job_url(o->url, o->job, "/checkpoint");
    h->finished_url = castor_job_url(o->url, o->job, "/finished");
    h->auth = malloc(n);
    if (o->ca_file)
        h->ca_file = strdup(o->ca_file);
    if (!h->job || !h->report_url || !h->alloc_url || !h->ckpt_url || !h->finished_url ||
        !h->auth || (o->ca_file && !h->ca_file))
        return ERR_NOMEM;
    snprintf(h->auth, n, "Bearer %s", o->token);
    rc = log_new(stderr, LOG_WARN, &h->log);
    if (rc == 0)
        rc = http_client_new(&h->client);
    return rc;
}

/* The lock and the two condition variables (monotonic clock). 0, or ERR_NOMEM with none made. */
static int castor_sync_init(struct castor *h)
{
    pthread_condattr_t ca;
    int ok;

    if (pthread_condattr_init(&ca) != 0)
        return ERR_NOMEM;
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    ok = pthread_mutex_init(&h->mu, NULL) == 0;
    if (ok && pthread_cond_init(&h->wake, &ca) != 0) {
        pthread_mutex_destroy(&h->mu);
        ok = 0;
    }
    if (ok && pthread_cond_init(&h->done, &ca) != 0) {
        pthread_cond_destroy(&h->wake);
        pthread_mutex_destroy(&h->mu);
        ok = 0;
    }
    pthread_condattr_destroy(&ca);
    return ok ? 0 : ERR_NOMEM;
}

/* Free what the handle holds (its thread stopped or never started), and the handle. */
static void castor_release(struct castor *h, int sync_made)
{
    if (sync_made) {
        pthread_cond_destroy(&h->done);
        pthread_cond_destroy(&h->wake);
        pthread_mutex_destroy(&h->mu);
    }
    http_client_free(h->client);
    log_free(h->log);
    castor_free_wiped(h->auth);
    free(h->job);
    free(h->report_url);
    free(h->alloc_url);
    free(h->ckpt_url);
    free(h->finished_url);
    free(h->ca_file);
    profile_free(&h->prof);
    profile_free(&h->snap.prof);
    gns_free(h->gns);
    free(h->prev_sqr);
    free(h);
}

int castor_new(const struct castor_options *opt, size_t opt_size, struct castor **out, char *msg,
               size_t msg_size)
{
    struct castor_options o = {0};
    struct castor *h = NULL;
    int rc, sync_made = 0;

    if (!opt || !out || opt_size == 0)
        return castor_msg(msg, msg_size, CASTOR_EINVAL, "no options or no handle to write");
    memcpy(&o, opt, opt_size < sizeof(o) ? opt_size : sizeof(o));
    h = calloc(1, sizeof(*h));
    if (!h)
        return castor_msg(msg, msg_size, CASTOR_ENOMEM, "out of memory");
    profile_init(&h->prof);
    profile_init(&h->snap.prof);
    h->snap.prof_version = -1;
    h->fit_version = -1;
    h->warm = CASTOR_WARMUP_STEPS;
    h->model = tput_model_find("default");
    rc = castor_check(h, &o, msg, msg_size);
    if (rc == 0) {
        rc = castor_sync_init(h);
        sync_made = rc == 0;
    }
    if (rc < 0 || !o.url || o.rank != 0)
        goto out;
    rc = castor_connect(h, &o);
    if (rc < 0) {
        castor_msg(msg, msg_size, rc, "cannot set up the connection: %s", err_str(rc));
        goto out;
    }
    h->next_due = castor_mono() + h->interval;
    if (pthread_create(&h->thread, NULL, castor_thread, h) != 0) {
        rc = castor_msg(msg, msg_size, ERR_IO, "cannot start the reporting thread");
        goto out;
    }
    h->has_thread = 1;
out:
    if (rc < 0) {
        castor_release(h, sync_made);
        return castor_code(rc);
    }
    *out = h;
    return 0;
}

void castor_free(struct castor *h)
{
    if (!h)
        return;
    if (h->has_thread) {
        pthread_mutex_lock(&h->mu);
        h->stop = 1;
        pthread_cond_broadcast(&h->wake);
        pthread_mutex_unlock(&h->mu);
        pthread_join(h->thread, NULL);
    }
    castor_release(h, 1);
}

/* ---- the environment ---- */

/* An integer variable in [lo, hi] into *out (left alone when unset). */
static int castor_env_int(const char *name, long long lo, long long hi, long long *out, char *msg,
                          size_t size)
{
    const char *s = getenv(name);
    char *end = NULL;
    long long v;

    if (!s)
        return 0;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
        return castor_msg(msg, size, CASTOR_EINVAL, "%s must be an integer from %lld to %lld", name,
                          lo, hi);
    *out = v;
    return 0;
}

/* A finite number >= 0 into *out (left alone when unset). */
static int castor_env_num(const char *name, double *out, char *msg, size_t size)
{
    const char *s = getenv(name);
    char *end = NULL;
    double v;

    if (!s)
        return 0;
    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !isfinite(v) || v < 0)
        return castor_msg(msg, size, CASTOR_EINVAL, "%s must be a number >= 0", name);
    *out = v;
    return 0;
}

/* The token in the file at path (owner-only), in a new string the caller wipes. */
static int castor_token_file(const char *path, char **out, char *msg, size_t size)
{
    char buf[CASTOR_TOKEN_MAX + 2];
    struct stat sb;
    ssize_t got;
    size_t len = 0;
    int fd, rc = 0;

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return castor_msg(msg, size, errno == ENOENT ? CASTOR_ENOENT : CASTOR_EIO,
                          "CASTOR_JOB_TOKEN_FILE cannot be opened: %s", strerror(errno));
    if (fstat(fd, &sb) != 0) {
        rc = castor_msg(msg, size, CASTOR_EIO, "CASTOR_JOB_TOKEN_FILE cannot be read");
        goto out;
    }
    if (sb.st_mode & 077) {
        rc = castor_msg(msg, size, CASTOR_EINVAL,
                        "CASTOR_JOB_TOKEN_FILE is readable by others than its owner (chmod 600)");
        goto out;
    }
    while (len < sizeof(buf) - 1) {
        got = read(fd, buf + len, sizeof(buf) - 1 - len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            rc = castor_msg(msg, size, CASTOR_EIO, "CASTOR_JOB_TOKEN_FILE cannot be read");
            goto out;
        }
        if (got == 0)
            break;
        len += (size_t)got;
    }
    buf[len] = '\0';
    if (len > 0 && buf[len - 1] == '\n')
        buf[--len] = '\0';
    *out = strdup(buf);
    if (!*out)
        rc = castor_msg(msg, size, CASTOR_ENOMEM, "out of memory");
out:
    crypto_wipe(buf, sizeof(buf));
    close(fd);
    return rc;
}

int castor_new_from_env(struct castor **out, char *msg, size_t msg_size)
{
    struct castor_options o = {0};
    long long rank = 0, world = 1, nodes = 1, accum = 0, accumulation = 0, timeout = 0, seed = 0;
    const char *tok = getenv("CASTOR_JOB_TOKEN"), *tok_file = getenv("CASTOR_JOB_TOKEN_FILE");
    char *token = NULL;
    int rc = 0;

    if (!out)
        return castor_msg(msg, msg_size, CASTOR_EINVAL, "no handle to write");
    o.url = getenv("CASTOR_URL");
    o.job = getenv("CASTOR_JOB");
    o.ca_file = getenv("CASTOR_CA_FILE");
    if (o.url && !o.url[0])
        o.url = NULL;
    rc = castor_env_int("CASTOR_WORLD_SIZE", 1, CASTOR_MAX_WORLD, &world, msg, msg_size);
    if (rc == 0)
        rc = castor_env_int("CASTOR_RANK", 0, world - 1, &rank, msg, msg_size);
    if (rc == 0)
        rc = castor_env_int("CASTOR_NODES", 1, world, &nodes, msg, msg_size);
    if (rc == 0)
        rc = castor_env_int("CASTOR_ACCUM_STEPS", 0, CASTOR_MAX_ACCUM, &accum, msg, msg_size);
    if (rc == 0)
        rc = castor_env_int("CASTOR_ACCUMULATION", 0, 1, &accumulation, msg, msg_size);
    if (rc == 0)
        rc = castor_env_int("CASTOR_TIMEOUT_MS", 0, 3600000, &timeout, msg, msg_size);
    if (rc == 0)
        rc = castor_env_int("CASTOR_SEED", 0, INT64_MAX, &seed, msg, msg_size);
    if (rc == 0)
        rc = castor_env_num("CASTOR_LOCAL_BSZ", &o.local_bsz, msg, msg_size);
    if (rc == 0)
        rc = castor_env_num("CASTOR_LR_GAIN", &o.lr_gain, msg, msg_size);
    if (rc == 0)
        rc = castor_env_num("CASTOR_INIT_BSZ", &o.init_bsz, msg, msg_size);
    if (rc == 0)
        rc = castor_env_num("CASTOR_MAX_BSZ", &o.max_bsz, msg, msg_size);
    if (rc == 0)
        rc = castor_env_num("CASTOR_MAX_LOCAL_BSZ", &o.max_local_bsz, msg, msg_size);
    if (rc == 0)
        rc = castor_env_num("CASTOR_REPORT_INTERVAL", &o.report_interval, msg, msg_size);
    if (rc == 0)
        rc = castor_env_num("CASTOR_ALLREDUCE_BUSBW", &o.allreduce_busbw, msg, msg_size);
    if (rc < 0)
        return rc;
    if (o.url && !o.job)
        return castor_msg(msg, msg_size, CASTOR_ENOENT, "CASTOR_URL is set but CASTOR_JOB is not");
    if (o.url && !tok && !tok_file)
        return castor_msg(msg, msg_size, CASTOR_ENOENT,
                          "CASTOR_URL is set but neither CASTOR_JOB_TOKEN nor "
                          "CASTOR_JOB_TOKEN_FILE is");
    if (o.url && !tok) {
        rc = castor_token_file(tok_file, &token, msg, msg_size);
        if (rc < 0)
            return rc;
        tok = token;
    }
    o.token = tok;
    o.rank = (int)rank;
    o.world_size = (int)world;
    o.nodes = (int)nodes;
    o.accum_steps = (int)accum;
    o.accumulation = (int)accumulation;
    o.timeout_ms = (long)timeout;
    o.seed = (unsigned long long)seed + (unsigned long long)rank;
    rc = castor_new(&o, sizeof(o), out, msg, msg_size);
    castor_free_wiped(token);
    return rc;
}

/* ---- steps ---- */

/* The AdaScale gain of the current configuration for the statistics so far (under mu). */
static double castor_gain_locked(const struct castor *h)
{
    struct grad_params g = GRAD_PARAMS_NONE;
    double batch = h->cur.world_size * h->cur.local_bsz * (h->cur.accum_steps + 1);

    if (h->gns)
        gns_params(h->gns, &g);
    return goodput_gain(&g, batch / h->cur.limits.init_bsz);
}

/* The timing part of a step (under mu): 0, or ERR_INVAL when refused. */
static int castor_time_locked(struct castor *h, double step, double sync)
{
    struct tput_point x = {h->cur.nodes, h->cur.world_size, h->cur.local_bsz};
    double micro;
    int rc;

    if (!isfinite(step) || !isfinite(sync) || !(step > 0) || !(sync >= 0) || !(sync < step) ||
        !(h->cur.local_bsz > 0))
        return ERR_INVAL;
    if (h->warm > 0) { /* setup (communicators, autotuning, loader workers), not the step */
        h->warm--;
        h->st.time_warmup++;
        return 0;
    }
    /* the profile holds steps without accumulation: one micro-batch's compute plus the sync */
    micro = (step - sync) / (h->cur.accum_steps + 1);
    rc = profile_add(&h->prof, &x, micro + sync, sync);
    if (rc < 0)
        return rc;
    h->prof_version++;
    /* a counter: the pool's own count goes with the pool to each report */
    if (reporter_pool_add(&h->pool, h->cur.nodes, h->cur.world_size, h->cur.local_bsz,
                          h->cur.accum_steps, step, sync) == ERR_RANGE)
        h->st.steps_dropped++;
    return 0;
}

/* The gradient part of a step (under mu): 0, or ERR_INVAL when refused, ERR_NOMEM. */
static int castor_grad_step_locked(struct castor *h, size_t ngroups, const double *micro, size_t n,
                                   const double *avg)
{
    struct gns_norms stack[CASTOR_STACK_GROUPS], *norms = stack;
    struct gns_step step = {h->cur.local_bsz, h->cur.limits.init_bsz, h->cur.world_size,
                            h->cur.accum_steps};
    size_t want = (size_t)h->cur.world_size * (size_t)(h->cur.accum_steps + 1);
    struct gns *fresh = NULL, *target = h->gns;
    double *fresh_prev = NULL, *prev_sqr = h->prev_sqr;
    int rc = 0, finite = 1, has_prev = h->has_prev;

    if (ngroups < 1 || ngroups > GNS_MAX_GROUPS || !micro || !avg || n != want ||
        !(h->cur.local_bsz > 0))
        return ERR_INVAL;
    if (!h->gns || gns_groups(h->gns) != ngroups) {
        /* another group count starts the statistics anew, once a step of it is taken: a refused
         * one changes nothing */
        fresh_prev = calloc(ngroups, sizeof(*fresh_prev));
        if (!fresh_prev || gns_new(ngroups, &fresh) < 0) {
            free(fresh_prev);
            return ERR_NOMEM;
        }
        target = fresh;
        prev_sqr = fresh_prev;
        has_prev = 0;
    }
    if (ngroups > CASTOR_STACK_GROUPS) {
        norms = calloc(ngroups, sizeof(*norms));
        if (!norms) {
            rc = ERR_NOMEM;
            goto out;
        }
    }
    for (size_t g = 0; g < ngroups; g++) {
        struct gns_norms *nm = &norms[g];

        memset(nm, 0, sizeof(*nm));
        for (size_t i = 0; i < n; i++) {
            double v = micro[g * n + i];

            if (!isfinite(v) || v < 0)
                finite = 0;
            nm->local_sqr += v;
        }
        nm->total_sqr = n > 1 ? avg[g] : nm->local_sqr;
        if (n == 1) {
            nm->has_prev = has_prev;
            nm->prev_sqr = prev_sqr[g];
            nm->pair_sqr = avg[g];
        }
    }
    rc = finite ? gns_update(target, &step, norms) : ERR_INVAL;
    if (fresh && rc < 0)
        goto out;
    if (fresh) {
        gns_free(h->gns);
        free(h->prev_sqr);
        h->gns = fresh;
        h->prev_sqr = fresh_prev;
        fresh = NULL;
        fresh_prev = NULL;
    }
    /* with a single gradient, this one pairs with the next step's */
    h->has_prev = n == 1 && finite;
    for (size_t g = 0; n == 1 && g < ngroups; g++)
        h->prev_sqr[g] = micro[g];
out:
    gns_free(fresh);
    free(fresh_prev);
    if (norms != stack)
        free(norms);
    return rc == ERR_RANGE ? ERR_INVAL : rc;
}

int castor_step_groups(struct castor *h, double step_seconds, double sync_seconds, size_t ngroups,
                       const double *micro_sqr, size_t n, const double *avg_sqr)
{
    int rc_time, rc_grad = 0, timing_only = micro_sqr == NULL && n == 0;

    if (!h)
        return CASTOR_EINVAL;
    pthread_mutex_lock(&h->mu);
    h->st.steps++;
    if (h->rank != 0) {
        pthread_mutex_unlock(&h->mu);
        return 0;
    }
    rc_time = castor_time_locked(h, step_seconds, sync_seconds);
    if (rc_time < 0)
        h->st.time_skipped++;
    if (!timing_only) {
        rc_grad = castor_grad_step_locked(h, ngroups, micro_sqr, n, avg_sqr);
        if (rc_grad < 0)
            h->st.grad_skipped++;
    }
    if (rc_grad == 0 && h->cur.local_bsz > 0)
        h->progress += castor_gain_locked(h);
    pthread_mutex_unlock(&h->mu);
    return castor_code(rc_time < 0 ? rc_time : rc_grad);
}

int castor_step(struct castor *h, double step_seconds, double sync_seconds, const double *micro_sqr,
                size_t n, double avg_sqr)
{
    return castor_step_groups(h, step_seconds, sync_seconds, 1, micro_sqr, n, &avg_sqr);
}

int castor_set_batch(struct castor *h, double local_bsz, int accum_steps)
{
    if (!h || !(isfinite(local_bsz) && local_bsz > 0) || accum_steps < 0 ||
        accum_steps > CASTOR_MAX_ACCUM)
        return CASTOR_EINVAL;
    pthread_mutex_lock(&h->mu);
    if (h->cur.local_bsz != local_bsz || h->cur.accum_steps != accum_steps) {
        h->has_prev = 0;
        h->warm = CASTOR_WARMUP_STEPS; /* a new batch's first step sets up (a new loader) */
    }
    h->cur.local_bsz = local_bsz;
    h->cur.accum_steps = accum_steps;
    if (!(h->cur.limits.init_bsz > 0))
        h->cur.limits.init_bsz = h->cur.world_size * local_bsz * (accum_steps + 1);
    if (h->dec.version == 0) {
        h->dec.local_bsz = local_bsz;
        h->dec.accum_steps = accum_steps;
    }
    pthread_mutex_unlock(&h->mu);
    return 0;
}

int castor_set_grad_bytes(struct castor *h, double bytes)
{
    double prior;

    if (!h || !(isfinite(bytes) && bytes >= 0))
        return CASTOR_EINVAL;
    prior = h->busbw > 0 && bytes > 0 ? bytes / h->busbw : 0.0;
    pthread_mutex_lock(&h->mu);
    if (h->prof.sync_prior != prior) {
        h->prof.sync_prior = prior;
        h->prof_version++; /* the fit's prior changed: refit, and send it */
    }
    pthread_mutex_unlock(&h->mu);
    return 0;
}

int castor_get_decision(struct castor *h, struct castor_decision *out, size_t size)
{
    struct castor_decision d;

    if (!h || !out || size < offsetof(struct castor_decision, lr_gain) + sizeof(double))
        return CASTOR_EINVAL;
    pthread_mutex_lock(&h->mu);
    d = h->dec;
    pthread_mutex_unlock(&h->mu);
    memcpy(out, &d, size < sizeof(d) ? size : sizeof(d));
    return 0;
}

int castor_get_stats(struct castor *h, struct castor_stats *out, size_t size)
{
    struct castor_stats s;
    struct grad_params g;

    if (!h || !out || size < offsetof(struct castor_stats, grad_sqr))
        return CASTOR_EINVAL;
    pthread_mutex_lock(&h->mu);
    s = h->st;
    s.progress = h->progress;
    s.grad_sqr = NAN;
    s.grad_var = NAN;
    s.grad_biased = h->gns ? gns_biased(h->gns) : 0;
    if (castor_grad_locked(h, &g)) {
        s.grad_sqr = g.sqr;
        s.grad_var = g.var;
    }
    pthread_mutex_unlock(&h->mu);
    memcpy(out, &s, size < sizeof(s) ? size : sizeof(s));
    return 0;
}

int castor_flush(struct castor *h, long timeout_ms)
{
    unsigned long long seq;
    struct timespec ts;
    double end;
    int rc;

    if (!h || timeout_ms < 0)
        return CASTOR_EINVAL;
    if (!h->has_thread)
        return 0;
    end = castor_mono() + (double)timeout_ms / 1000.0;
    castor_timespec(end, &ts);
    pthread_mutex_lock(&h->mu);
    seq = ++h->flush_req;
    pthread_cond_broadcast(&h->wake);
    while (h->flush_done < seq) {
        if (pthread_cond_timedwait(&h->done, &h->mu, &ts) == ETIMEDOUT)
            break;
    }
    rc = h->flush_done >= seq ? h->flush_rc : ERR_AGAIN;
    pthread_mutex_unlock(&h->mu);
    return castor_code(rc);
}

/* POST the handle's progress now to url from the caller's thread, on a client of its own (the
 * background thread keeps its client), logging a failure: 0, or the transport's or the answer's
 * error. A Retry-After in force answers ERR_IO at once, sending nothing. *progress_out: what was
 * sent. */
static int castor_post_now(struct castor *h, const char *url, const char *what,
                           double *progress_out)
{
    struct http_client *client = NULL;
    char why[CASTOR_WHY_MAX] = "";
    double progress, retry_after = 0;
    int rc, wait;

    pthread_mutex_lock(&h->mu);
    progress = h->progress;
    wait = castor_mono() < h->not_before;
    pthread_mutex_unlock(&h->mu);
    *progress_out = progress;
    if (wait) {
        log_msg(h->log, castor_wall(), LOG_WARN, h->job, NULL,
                "castor: %s waits: the controller asked for no request before its Retry-After",
                what);
        return ERR_IO;
    }
    rc = http_client_new(&client);
    if (rc == 0)
        rc = castor_post_progress(h, client, url, what, progress, why, sizeof(why), &retry_after);
    http_client_free(client);
    if (retry_after > 0) {
        pthread_mutex_lock(&h->mu);
        h->not_before = fmax(h->not_before, castor_mono() + retry_after);
        pthread_mutex_unlock(&h->mu);
    }
    if (rc < 0)
        log_msg(h->log, castor_wall(), LOG_WARN, h->job, NULL, "castor: %s failed (%s)", what,
                why[0] ? why : err_str(rc));
    return rc;
}

int castor_checkpointed(struct castor *h)
{
    unsigned long long seq;
    double progress;
    int rc;

    if (!h)
        return CASTOR_EINVAL;
    if (!h->has_thread)
        return 0;
    pthread_mutex_lock(&h->mu);
    seq = ++h->ckpt_seq; /* a notice still pending is superseded by this one */
    h->ckpt_pending = 0;
    pthread_mutex_unlock(&h->mu);
    rc = castor_post_now(h, h->ckpt_url, "the checkpoint notice", &progress);
    pthread_mutex_lock(&h->mu);
    if (rc < 0 && rc != ERR_CONFLICT && h->ckpt_seq == seq) {
        /* it passes (unreachable, busy): the thread sends it with its next attempts */
        h->ckpt_pending = 1;
        h->ckpt_progress = progress;
    }
    pthread_mutex_unlock(&h->mu);
    return castor_code(rc);
}

int castor_finished(struct castor *h)
{
    double progress;

    if (!h)
        return CASTOR_EINVAL;
    return h->has_thread ? castor_code(castor_post_now(h, h->finished_url, "the notice of the end",
                                                       &progress))
                         : 0;
}

int castor_get_progress(struct castor *h, double *out)
{
    if (!h || !out)
        return CASTOR_EINVAL;
    pthread_mutex_lock(&h->mu);
    *out = h->progress;
    pthread_mutex_unlock(&h->mu);
    return 0;
}

int castor_set_progress(struct castor *h, double progress)
{
    if (!h || !(isfinite(progress) && progress >= 0))
        return CASTOR_EINVAL;
    pthread_mutex_lock(&h->mu);
    h->progress = progress;
    pthread_mutex_unlock(&h->mu);
    return 0;
}

/* ---- saved state ---- */

int castor_save_state(struct castor *h, char *buf, size_t size, size_t *len)
{
    struct jv *o = NULL, *arr = NULL;
    double *saved = NULL;
    char *text = NULL;
    size_t n = 0, tlen;
    int rc = 0;

    if (!h || (!buf && size > 0))
        return CASTOR_EINVAL;
    o = jv_object();
    if (!o)
        return CASTOR_ENOMEM;
    pthread_mutex_lock(&h->mu);
    rc = jv_set(o, "castor_state", jv_integer(CASTOR_STATE_VERSION));
    if (rc == 0)
        rc = jv_set(o, "progress", jv_number(h->progress));
    if (rc == 0 && h->gns) {
        n = gns_saved_len(h->gns);
        saved = malloc(n * sizeof(*saved));
        if (saved)
            gns_save(h->gns, saved);
        else
            rc = ERR_NOMEM;
    }
    pthread_mutex_unlock(&h->mu);
    if (rc == 0 && saved) {
        arr = jv_array();
        rc = arr ? 0 : ERR_NOMEM;
        for (size_t i = 0; rc == 0 && i < n; i++)
            rc = jv_push(arr, jv_number(saved[i]));
        if (rc == 0)
            rc = jv_set(o, "gns", arr);
        else
            jv_free(arr);
    }
    if (rc == 0)
        rc = jv_dump(o, &text);
    if (rc < 0)
        goto out;
    tlen = strlen(text);
    if (len)
        *len = tlen;
    if (tlen + 1 > size) {
        rc = ERR_RANGE;
        goto out;
    }
    memcpy(buf, text, tlen + 1);
out:
    free(text);
    free(saved);
    jv_free(o);
    return castor_code(rc);
}

int castor_load_state(struct castor *h, const char *buf, size_t len)
{
    const struct jv *arr;
    struct jv *v = NULL;
    struct gns *g = NULL;
    double *saved = NULL, progress, *prev = NULL;
    long long version;
    size_t n = 0;
    int rc;

    if (!h || !buf)
        return CASTOR_EINVAL;
    rc = jv_parse(buf, len, &v, NULL);
    if (rc < 0)
        return rc == ERR_NOMEM ? CASTOR_ENOMEM : CASTOR_EPARSE;
    rc = ERR_PARSE;
    if (jv_integer_value(jv_get(v, "castor_state"), &version) < 0 ||
        version != CASTOR_STATE_VERSION || jv_number_value(jv_get(v, "progress"), &progress) < 0 ||
        !(progress >= 0))
        goto out;
    arr = jv_get(v, "gns");
    if (arr) {
        n = jv_size(arr);
        if (jv_type_of(arr) != JV_ARRAY || n == 0)
            goto out;
        saved = malloc(n * sizeof(*saved));
        if (!saved) {
            rc = ERR_NOMEM;
            goto out;
        }
        for (size_t i = 0; i < n; i++)
            if (jv_number_value(jv_at(arr, i), &saved[i]) < 0)
                goto out;
        rc = gns_load(saved, n, &g);
        if (rc < 0) {
            rc = rc == ERR_NOMEM ? rc : ERR_PARSE;
            goto out;
        }
        prev = calloc(gns_groups(g), sizeof(*prev));
        if (!prev) {
            rc = ERR_NOMEM;
            goto out;
        }
    }
    pthread_mutex_lock(&h->mu);
    h->progress = progress;
    if (g) {
        gns_free(h->gns);
        free(h->prev_sqr);
        h->gns = g;
        h->prev_sqr = prev;
        h->has_prev = 0;
        g = NULL;
        prev = NULL;
    }
    pthread_mutex_unlock(&h->mu);
    rc = 0;
out:
    gns_free(g);
    free(prev);
    free(saved);
    jv_free(v);
    return castor_code(rc);
}
