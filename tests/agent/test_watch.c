/* test_watch.c: castor-node's cloud notice watchers (src/agent/watch.c) against a metadata
 * service on loopback that plays both IMDSv2 (a session token asked for by PUT with its TTL, then
 * required on every GET; 404 when there is no notice) and Compute Engine's metadata server
 * (Metadata-Flavor: Google required; the preempted flag, long-polled; the maintenance event):
 * the token dance and its refresh, notices parsed (an ISO 8601 time to UNIX seconds) and said
 * once, malformed answers ignored with a log line, an endpoint that cannot be reached. Then the
 * real castor-node program with its watcher against the real API: a notice the metadata service
 * shows reaches the controller at once with its deadline, a rebalance recommendation as a notice
 * without deadline, a watcher that dies is restarted, a bad watch configuration refused. */
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/watch.h"
#include "support/attest_sign.h"
#include "support/api_server.h"
#include "support/loopback_http.h"
#include "support/process.h"
#include "util/log.h"
#include "util/timestamp.h"

#define NODE_ID "node-watch-1"
#define ACTION_PATH "/latest/meta-data/spot/instance-action"
#define REBALANCE_PATH "/latest/meta-data/events/recommendations/rebalance"
#define IDDOC_PATH "/latest/dynamic/instance-identity/document"
#define IDSIG_PATH "/latest/dynamic/instance-identity/signature"
#define IDTOKEN_PATH "/computeMetadata/v1/instance/service-accounts/default/identity"
#define PREEMPTED_PATH "/computeMetadata/v1/instance/preempted"
#define GCE_NODE_ID "us-central1-a.castor-w-1"
#define AUDIENCE "castor:test-cluster"
#define MAINTENANCE_PATH "/computeMetadata/v1/instance/maintenance-event"

/* ---- the metadata service ---- */

struct meta {
    struct lh_server *server;
    pthread_mutex_t lock;
    char url[64];
    /* IMDSv2 */
    int tokens_issued;      /* "imds-token-N" for N below this are valid ... */
    int tokens_valid_from;  /* ... and from this one on */
    char last_ttl[32];      /* the TTL header of the last PUT */
    int gets_without_token; /* refused with 401 */
    char action[256];       /* the instance-action document, "" for 404 */
    char rebalance[256];    /* the rebalance document, "" for 404 */
    int action_status;      /* 0: 200 or 404 as above; else this status */
    char iddoc[1024];       /* the instance identity document, "" for 404 */
    char idsig[1024];       /* its signature (base64), "" for 404 */
    char idtoken[4096];     /* Compute Engine: the identity token, "" for 404 */
    char id_query[512];     /* the query of the last identity token asked for */
    /* Compute Engine */
    char preempted[32];   /* the flag's value */
    char maintenance[64]; /* "" for 404 */
    int hang_long_poll;   /* 1: a long poll never answers (its client times out) */
    int long_polls;       /* long polls asked, with wait_for_change=true and timeout_sec */
    int flavorless;       /* requests refused for lacking Metadata-Flavor: Google */
};

static void meta_handle(void *arg, const struct lh_request *req, struct lh_reply *r)
{
    struct meta *m = arg;
    const char *q = strchr(req->target, '?');
    char path[256];

    snprintf(path, sizeof(path), "%.*s", (int)(q ? (size_t)(q - req->target) : strlen(req->target)),
             req->target);
    pthread_mutex_lock(&m->lock);
    if (strcmp(path, "/latest/api/token") == 0) {
        const char *ttl = lh_header(req, "X-aws-ec2-metadata-token-ttl-seconds");
        char token[64];

        if (strcmp(req->method, "PUT") != 0 || !ttl || atol(ttl) < 1 || atol(ttl) > 21600) {
            lh_reply_text(r, 400, "text/plain", "Bad Request");
        } else {
            snprintf(m->last_ttl, sizeof(m->last_ttl), "%s", ttl);
            snprintf(token, sizeof(token), "imds-token-%d", m->tokens_issued++);
            lh_reply_text(r, 200, "text/plain", token);
        }
    } else if (strncmp(path, "/latest/", 8) == 0) {
        const char *token = lh_header(req, "X-aws-ec2-metadata-token");
        int n = token && strncmp(token, "imds-token-", 11) == 0 ? atoi(token + 11) : -1;
        const char *doc = strcmp(path, ACTION_PATH) == 0      ? m->action
                          : strcmp(path, REBALANCE_PATH) == 0 ? m->rebalance
                          : strcmp(path, IDDOC_PATH) == 0     ? m->iddoc
                          : strcmp(path, IDSIG_PATH) == 0     ? m->idsig
                                                              : "";

        if (n < m->tokens_valid_from || n >= m->tokens_issued) {
            m->gets_without_token++;
            lh_reply_text(r, 401, "text/plain", "Unauthorized");
        } else if (strcmp(path, ACTION_PATH) == 0 && m->action_status) {
            lh_reply_text(r, m->action_status, "text/plain", "busy");
        } else if (doc[0]) {
            lh_reply_text(r, 200, "text/plain", doc);
        } else {
            lh_reply_text(r, 404, "text/html", "<html>404 - Not Found</html>");
        }
    } else if (strncmp(path, "/computeMetadata/", 17) == 0) {
        const char *flavor = lh_header(req, "Metadata-Flavor");

        if (!flavor || strcmp(flavor, "Google") != 0) {
            m->flavorless++;
            lh_reply_text(r, 403, "text/html", "Missing Metadata-Flavor:Google header.");
        } else if (strcmp(path, PREEMPTED_PATH) == 0) {
            if (q && strstr(q, "wait_for_change=true") && strstr(q, "timeout_sec=")) {
                m->long_polls++;
                if (m->hang_long_poll)
                    r->action = LH_HANG;
                else
                    lh_reply_text(r, 200, "application/text", m->preempted);
            } else {
                lh_reply_text(r, 200, "application/text", m->preempted);
            }
        } else if (strcmp(path, IDTOKEN_PATH) == 0 && m->idtoken[0]) {
            snprintf(m->id_query, sizeof(m->id_query), "%s", q ? q : "");
            lh_reply_text(r, 200, "text/html", m->idtoken);
        } else if (strcmp(path, MAINTENANCE_PATH) == 0 && m->maintenance[0]) {
            lh_reply_text(r, 200, "application/text", m->maintenance);
        } else {
            lh_reply_text(r, 404, "text/html", "Not Found");
        }
    } else {
        lh_reply_text(r, 404, "text/html", "Not Found");
    }
    pthread_mutex_unlock(&m->lock);
}

/* Set a string field of m under its lock. */
static void meta_set(struct meta *m, char *field, size_t size, const char *value)
{
    pthread_mutex_lock(&m->lock);
    snprintf(field, size, "%s", value);
    pthread_mutex_unlock(&m->lock);
}

#define META_SET(m, field, value) meta_set((m), (m)->field, sizeof((m)->field), (value))

/* ---- in process ---- */

struct fx {
    struct meta m;
    FILE *logf;
    char *logtext;
    size_t loglen;
    struct log *log;
    struct watch *w;
};

static int fx_setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));

    if (!f)
        return -1;
    pthread_mutex_init(&f->m.lock, NULL);
    snprintf(f->m.preempted, sizeof(f->m.preempted), "FALSE");
    snprintf(f->m.maintenance, sizeof(f->m.maintenance), "NONE");
    f->logf = open_memstream(&f->logtext, &f->loglen);
    if (!f->logf || log_new(f->logf, LOG_DEBUG, &f->log) < 0 ||
        lh_start(meta_handle, &f->m, &f->m.server) < 0)
        return -1;
    lh_url(f->m.server, f->m.url, sizeof(f->m.url));
    *state = f;
    return 0;
}

static int fx_teardown(void **state)
{
    struct fx *f = *state;

    watch_free(f->w);
    lh_stop(f->m.server);
    log_free(f->log);
    fclose(f->logf);
    free(f->logtext);
    pthread_mutex_destroy(&f->m.lock);
    free(f);
    return 0;
}

/* A watch of the cloud called name on the service, with a token life of ttl (0: default). */
static void make(struct fx *f, const char *name, long ttl)
{
    struct watch_config cfg = {.endpoint = f->m.url,
                               .timeout_s = 2,
                               .wait_s = 1,
                               .interval_s = 0.01,
                               .token_ttl_s = ttl,
                               .log = f->log,
                               .node = NODE_ID};

    assert_int_equal(watch_new(watch_find(name), &cfg, &f->w, NULL), 0);
}

/* One round at now; its event's kind (the event into *ev when not NULL). */
static enum watch_kind round_at(struct fx *f, double now, struct watch_event *ev)
{
    struct watch_event got;

    assert_int_equal(watch_round(f->w, now, &got), 0);
    if (ev)
        *ev = got;
    return got.kind;
}

/* The number of log lines so far that hold text. */
static int logged(struct fx *f, const char *text)
{
    int n = 0;

    fflush(f->logf);
    for (const char *p = f->logtext; p && (p = strstr(p, text)) != NULL; p += strlen(text))
        n++;
    return n;
}

static void watch_find__clouds_by_name_and_refusals(void **state)
{
    struct watch_config cfg = {.endpoint = "ftp://169.254.169.254"};
    struct watch *w = NULL;
    struct error e = {0};

    (void)state;
    assert_ptr_equal(watch_find("none"), &watch_none);
    assert_ptr_equal(watch_find("aws-imds"), &watch_aws_imds);
    assert_ptr_equal(watch_find("gce-metadata"), &watch_gce_metadata);
    assert_null(watch_find("azure"));
    assert_null(watch_find(NULL));
    assert_int_equal(watch_new(&watch_aws_imds, &cfg, &w, &e), ERR_INVAL);
    assert_non_null(strstr(e.msg, "http://"));
    cfg.endpoint = NULL;
    cfg.timeout_s = -1;
    assert_int_equal(watch_new(&watch_gce_metadata, &cfg, &w, &e), ERR_INVAL);
    assert_null(w);
    cfg.timeout_s = 0;
    assert_int_equal(watch_new(&watch_gce_metadata, &cfg, &w, &e), 0);
    assert_true(watch_interval(w) == 1);
    watch_free(w);
}

/* IMDSv2: a token asked for by PUT with its TTL, carried by every GET, kept until nine tenths of
 * its life, then asked for again; a token the service no longer takes (401) is replaced and the
 * GET asked again. 404s are no notice. */
static void aws_imds__token_dance_and_404s(void **state)
{
    struct fx *f = *state;

    make(f, "aws-imds", 100);
    assert_int_equal(round_at(f, 1000, NULL), WATCH_NOTHING);
    assert_int_equal(f->m.tokens_issued, 1);
    assert_string_equal(f->m.last_ttl, "100");
    assert_int_equal(f->m.gets_without_token, 0);
    assert_int_equal(round_at(f, 1089, NULL), WATCH_NOTHING);
    assert_int_equal(f->m.tokens_issued, 1); /* still good */
    assert_int_equal(round_at(f, 1090, NULL), WATCH_NOTHING);
    assert_int_equal(f->m.tokens_issued, 2); /* refreshed before it expires */
    pthread_mutex_lock(&f->m.lock);
    f->m.tokens_valid_from = f->m.tokens_issued; /* every token so far revoked */
    pthread_mutex_unlock(&f->m.lock);
    assert_int_equal(round_at(f, 1100, NULL), WATCH_NOTHING);
    assert_int_equal(f->m.gets_without_token, 1);
    assert_int_equal(f->m.tokens_issued, 3);
    assert_int_equal(logged(f, "\"level\":\"warn\""), 0);
}

/* An interruption notice: its time in UNIX seconds as the deadline, said once; a rebalance
 * recommendation: said once, without deadline; the notice after it is still said. */
static void aws_imds__notices_parsed_and_said_once(void **state)
{
    struct fx *f = *state;
    struct watch_event ev;

    make(f, "aws-imds", 0);
    assert_int_equal(round_at(f, 1000, NULL), WATCH_NOTHING);
    assert_string_equal(f->m.last_ttl, "21600"); /* six hours unless told */
    META_SET(&f->m, rebalance, "{\"noticeTime\": \"2026-01-02T03:00:00Z\"}");
    assert_int_equal(round_at(f, 1001, &ev), WATCH_REBALANCE);
    assert_true(isnan(ev.deadline));
    assert_int_equal(round_at(f, 1002, NULL), WATCH_NOTHING);
    META_SET(&f->m, action, "{\"action\": \"terminate\", \"time\": \"2026-01-02T03:04:05Z\"}");
    assert_int_equal(round_at(f, 1003, &ev), WATCH_PREEMPT);
    assert_true(ev.deadline == 1767323045.0);
    assert_int_equal(round_at(f, 1004, NULL), WATCH_NOTHING);
    /* a new time is news */
    META_SET(&f->m, action, "{\"action\": \"stop\", \"time\": \"2026-01-02T03:04:35.000Z\"}");
    assert_int_equal(round_at(f, 1005, &ev), WATCH_PREEMPT);
    assert_true(ev.deadline == 1767323075.0);
}

/* Answers that cannot be read are ignored, each with a log line, and the watch goes on; an
 * error status too. */
static void aws_imds__malformed_answers_ignored(void **state)
{
    struct fx *f = *state;
    static const char *const actions[] = {
        "not json",
        "[\"terminate\"]",
        "{\"action\": \"terminate\"}",
        "{\"action\": \"dance\", \"time\": \"2026-01-02T03:04:05Z\"}",
        "{\"action\": \"terminate\", \"time\": \"tomorrow\"}",
        "{\"action\": \"terminate\", \"time\": 1767323045}",
    };

    make(f, "aws-imds", 0);
    for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++) {
        META_SET(&f->m, action, actions[i]);
        assert_int_equal(round_at(f, 1000 + (double)i, NULL), WATCH_NOTHING);
        assert_int_equal(logged(f, "malformed spot/instance-action"), (int)i + 1);
    }
    META_SET(&f->m, action, "");
    META_SET(&f->m, rebalance, "{\"noticeTime\": 5}");
    assert_int_equal(round_at(f, 1010, NULL), WATCH_NOTHING);
    assert_int_equal(logged(f, "malformed rebalance"), 1);
    pthread_mutex_lock(&f->m.lock);
    f->m.action_status = 500;
    pthread_mutex_unlock(&f->m.lock);
    assert_int_equal(round_at(f, 1011, NULL), WATCH_NOTHING);
    assert_int_equal(logged(f, "answered HTTP 500, ignored"), 1);
    /* and a good answer afterwards is read */
    pthread_mutex_lock(&f->m.lock);
    f->m.action_status = 0;
    pthread_mutex_unlock(&f->m.lock);
    META_SET(&f->m, action, "{\"action\": \"terminate\", \"time\": \"2026-01-02T03:04:05Z\"}");
    assert_int_equal(round_at(f, 1012, NULL), WATCH_PREEMPT);
}

/* A service that cannot be reached is an error of the round (no event); a token refused too. */
static void aws_imds__unreachable(void **state)
{
    struct fx *f = *state;
    struct watch_config cfg = {.endpoint = "http://127.0.0.1:1", .timeout_s = 1};
    struct watch_event ev = {WATCH_PREEMPT, 0};
    struct watch *w = NULL;

    assert_int_equal(watch_new(&watch_aws_imds, &cfg, &w, NULL), 0);
    assert_int_equal(watch_round(w, 1000, &ev), ERR_IO);
    assert_int_equal(ev.kind, WATCH_NOTHING);
    watch_free(w);
    (void)f;
}

/* Compute Engine: the flag asked with Metadata-Flavor: Google, then long-polled with
 * wait_for_change and timeout_sec; TRUE is a preemption 30 s from now, said once; a long poll
 * that never answers ends at the client's timeout as nothing. */
static void gce_metadata__preempted_flag_long_polled(void **state)
{
    struct fx *f = *state;
    struct watch_event ev;

    make(f, "gce-metadata", 0);
    assert_int_equal(round_at(f, 1000, NULL), WATCH_NOTHING);
    assert_int_equal(f->m.long_polls, 1);
    assert_int_equal(f->m.flavorless, 0);
    pthread_mutex_lock(&f->m.lock);
    f->m.hang_long_poll = 1;
    pthread_mutex_unlock(&f->m.lock);
    assert_int_equal(round_at(f, 1001, NULL), WATCH_NOTHING);
    assert_int_equal(f->m.long_polls, 2);
    META_SET(&f->m, preempted, "TRUE\n");
    assert_int_equal(round_at(f, 1002, &ev), WATCH_PREEMPT);
    assert_true(ev.deadline == 1002 + WATCH_GCE_NOTICE_S);
    assert_int_equal(round_at(f, 1003, NULL), WATCH_NOTHING);
    assert_int_equal(logged(f, "\"level\":\"warn\""), 0);
}

/* The maintenance event that stops the instance is said once (again after it was over); a
 * migration is not news; values that are not the server's are logged and ignored, and a server
 * without the maintenance event (404) is no error. */
static void gce_metadata__maintenance_and_malformed(void **state)
{
    struct fx *f = *state;
    struct watch_event ev;

    make(f, "gce-metadata", 0);
    META_SET(&f->m, maintenance, "TERMINATE_ON_HOST_MAINTENANCE");
    assert_int_equal(round_at(f, 1000, &ev), WATCH_MAINTENANCE);
    assert_true(isnan(ev.deadline));
    assert_int_equal(round_at(f, 1001, NULL), WATCH_NOTHING);
    META_SET(&f->m, maintenance, "NONE");
    assert_int_equal(round_at(f, 1002, NULL), WATCH_NOTHING);
    META_SET(&f->m, maintenance, "MIGRATE_ON_HOST_MAINTENANCE");
    assert_int_equal(round_at(f, 1003, NULL), WATCH_NOTHING);
    META_SET(&f->m, maintenance, "TERMINATE_ON_HOST_MAINTENANCE");
    assert_int_equal(round_at(f, 1004, NULL), WATCH_MAINTENANCE);
    META_SET(&f->m, maintenance, "SOON");
    META_SET(&f->m, preempted, "MAYBE");
    assert_int_equal(round_at(f, 1005, NULL), WATCH_NOTHING);
    assert_int_equal(logged(f, "malformed maintenance-event"), 1);
    assert_int_equal(logged(f, "malformed preempted"), 2); /* the read and the long poll */
    META_SET(&f->m, maintenance, "");
    META_SET(&f->m, preempted, "FALSE");
    assert_int_equal(round_at(f, 1006, NULL), WATCH_NOTHING);
}

struct loop_seen {
    int stop, n;
    struct watch_event ev;
};

static void loop_emit(void *arg, const struct watch_event *ev)
{
    struct loop_seen *s = arg;

    s->ev = *ev;
    s->n++;
    s->stop = 1;
}

/* The loop rounds until there is news, hands it to emit, and stops when told. */
static void watch_loop__emits_news(void **state)
{
    struct fx *f = *state;
    struct loop_seen seen = {0};

    make(f, "aws-imds", 0);
    META_SET(&f->m, action, "{\"action\": \"terminate\", \"time\": \"2026-01-02T03:04:05Z\"}");
    watch_loop(f->w, loop_emit, &seen, &seen.stop);
    assert_int_equal(seen.n, 1);
    assert_int_equal(seen.ev.kind, WATCH_PREEMPT);
    assert_true(seen.ev.deadline == 1767323045.0);
}

/* ---- castor-node with its watcher against the API ---- */

struct nfx {
    struct meta m;
    struct api_server as;
    char nodelog[160];
    char gdir[64]; /* Google's certificates file's folder */
    pid_t node;
};

/* The metadata service and the API (with attest, asking registrations for an identity document
 * signed under the test certificate). */
static int nfx_setup_with(void **state, int attest)
{
    struct nfx *f = calloc(1, sizeof(*f));
    struct attest_aws at = {0};
    struct attest_gcp gt = {.audience = AUDIENCE, .project = "my-project"};
    char *cert = NULL, certs[200];
    int rc;

    if (!f)
        return -1;
    pthread_mutex_init(&f->m.lock, NULL);
    snprintf(f->m.preempted, sizeof(f->m.preempted), "FALSE");
    snprintf(f->m.maintenance, sizeof(f->m.maintenance), "NONE");
    if (attest && file_read_all(ATTEST_CERT, &cert, &at.certificate_len, NULL) < 0)
        return -1;
    at.certificate = cert;
    /* Google's certificates: a file in a folder of the test's own, named before the API starts */
    snprintf(f->gdir, sizeof(f->gdir), "/tmp/castor-test-google-XXXXXX");
    if (!mkdtemp(f->gdir))
        return -1;
    snprintf(certs, sizeof(certs), "%s/google-certs.json", f->gdir);
    gt.certificates_path = certs;
    rc = attest_gcp_certs_file(certs, "k1") < 0 || lh_start(meta_handle, &f->m, &f->m.server) < 0 ||
         as_start_attest(&f->as, 0, attest ? &at : NULL, attest ? &gt : NULL) < 0 ||
         as_path(&f->as, "node.log", 0, f->nodelog, sizeof(f->nodelog)) < 0;
    free(cert);
    if (rc)
        return -1;
    lh_url(f->m.server, f->m.url, sizeof(f->m.url));
    *state = f;
    return 0;
}

static int nfx_setup(void **state)
{
    return nfx_setup_with(state, 0);
}

static int nfx_setup_attest(void **state)
{
    return nfx_setup_with(state, 1);
}

static int nfx_teardown(void **state)
{
    struct nfx *f = *state;

    if (f->node > 0) {
        kill(f->node, SIGTERM);
        if (proc_wait_exit(f->node, 10) == -1)
            fprintf(stderr, "castor-node %ld did not stop\n", (long)f->node);
    }
    proc_dump_log("node log", f->nodelog);
    as_stop(&f->as);
    lh_stop(f->m.server);
    pthread_mutex_destroy(&f->m.lock);
    if (f->gdir[0]) {
        char certs[200];

        snprintf(certs, sizeof(certs), "%s/google-certs.json", f->gdir);
        unlink(certs);
        rmdir(f->gdir);
    }
    free(f);
    return 0;
}

/* Start castor-node watching cloud on the service, with more "NAME=VALUE" settings (NULL-ended,
 * may be NULL; they replace the defaults here). */
static void spawn_with(struct nfx *f, const char *cloud, const char *const *more)
{
    static char *const argv[] = {"castor-node", NULL};
    char url[128], meta[128], watch[64];
    const char *const env[] = {url,
                               meta,
                               watch,
                               "CASTOR_INSTANCE_ID=" NODE_ID,
                               "CASTOR_NODE_TOKEN=" AS_TOKEN_NODE,
                               "CASTOR_FAKE_GPUS=1:8",
                               "CASTOR_NODE_HEARTBEAT_S=0.2",
                               "CASTOR_NODE_TIMEOUT_S=2",
                               "CASTOR_NODE_BACKOFF_MAX_S=0.2",
                               "CASTOR_NODE_WATCH_INTERVAL_S=0.05",
                               "CASTOR_NODE_METADATA_WAIT_S=1",
                               "CASTOR_NODE_LOG_LEVEL=debug",
                               NULL};

    snprintf(url, sizeof(url), "CASTOR_URL=%s", f->as.url);
    snprintf(meta, sizeof(meta), "CASTOR_NODE_METADATA_URL=%s", f->m.url);
    snprintf(watch, sizeof(watch), "CASTOR_NODE_CLOUD=%s", cloud);
    f->node = proc_spawn(CASTOR_NODE_BIN, argv, NULL, f->nodelog, env, more);
    assert_true(f->node > 0);
}

/* spawn_with one more setting (may be NULL). */
static void spawn(struct nfx *f, const char *cloud, const char *extra)
{
    const char *const more[] = {extra, NULL};

    spawn_with(f, cloud, more);
}

static int registered(void *ctx)
{
    struct nfx *f = ctx;
    struct state_node n;

    if (state_node_get(f->as.own, NODE_ID, &n) < 0)
        return 0;
    state_node_clear(&n);
    return 1;
}

struct noticed {
    struct nfx *f;
    double deadline;
};

static int noticed(void *ctx)
{
    struct noticed *s = ctx;
    struct state_node n;
    int ok;

    if (state_node_get(s->f->as.own, NODE_ID, &n) < 0)
        return 0;
    ok = !isnan(n.notice_at) && n.state == STATE_NODE_DRAINING;
    s->deadline = n.notice_deadline;
    state_node_clear(&n);
    return ok;
}

/* The node's children (its watcher) into pids; how many. */
static int children_of(pid_t pid, pid_t *pids, int max)
{
    char path[96], *text, *p, *end;
    int n = 0;

    snprintf(path, sizeof(path), "/proc/%ld/task/%ld/children", (long)pid, (long)pid);
    if (!(text = proc_slurp(path)))
        return 0;
    for (p = text; n < max; p = end) {
        long v = strtol(p, &end, 10);

        if (end == p)
            break;
        pids[n++] = (pid_t)v;
    }
    free(text);
    return n;
}

/* The node and a watcher it should not be (0: any). */
struct watcher {
    pid_t node, not ;
};

/* 1 when the node has one child, live and not w->not. */
static int has_watcher(void *ctx)
{
    struct watcher *w = ctx;
    pid_t pids[4];

    return children_of(w->node, pids, 4) == 1 && pids[0] != w->not &&proc_alive(pids[0]);
}

static int log_says(const char *path, const char *text)
{
    char *log = proc_slurp(path);
    int yes = log && strstr(log, text);

    free(log);
    return yes;
}

struct log_wait {
    const char *path, *text;
};

static int log_has(void *ctx)
{
    struct log_wait *l = ctx;

    return log_says(l->path, l->text);
}

static int long_polled_twice(void *ctx)
{
    struct meta *m = ctx;
    int n;

    pthread_mutex_lock(&m->lock);
    n = m->long_polls;
    pthread_mutex_unlock(&m->lock);
    return n >= 2;
}

/* What pid's descriptor fd is ("socket:[N]", a path), into buf; "" when it cannot be read. */
static void fd_target(pid_t pid, int fd, char *buf, size_t size)
{
    char path[96];
    ssize_t len;

    snprintf(path, sizeof(path), "/proc/%ld/fd/%d", (long)pid, fd);
    len = readlink(path, buf, size - 1);
    buf[len > 0 ? len : 0] = '\0';
}

/* The first descriptor from 3 up that child shares with parent (what it points at), into buf; 0
 * when none. */
static int shared_fd(pid_t parent, pid_t child, char *buf, size_t size)
{
    char path[96], mine[256], theirs[256];
    struct dirent *de, *pe;
    DIR *d, *pd;
    int found = 0;

    snprintf(path, sizeof(path), "/proc/%ld/fd", (long)child);
    if (!(d = opendir(path)))
        return 0;
    while (!found && (de = readdir(d))) {
        if (de->d_name[0] == '.' || atoi(de->d_name) < 3)
            continue;
        fd_target(child, atoi(de->d_name), mine, sizeof(mine));
        snprintf(path, sizeof(path), "/proc/%ld/fd", (long)parent);
        if (!mine[0] || !(pd = opendir(path)))
            continue;
        while (!found && (pe = readdir(pd))) {
            if (pe->d_name[0] == '.' || atoi(pe->d_name) < 3)
                continue;
            fd_target(parent, atoi(pe->d_name), theirs, sizeof(theirs));
            found = strcmp(mine, theirs) == 0;
        }
        closedir(pd);
        if (found)
            snprintf(buf, size, "fd %d -> %.200s", atoi(de->d_name), mine);
    }
    closedir(d);
    return found;
}

/* EC2: the instance-action IMDS shows reaches the controller at once, its time as the deadline;
 * the node's watcher that is killed comes back. */
static void castor_node__forwards_the_imds_interruption_notice(void **state)
{
    struct nfx *f = *state;
    struct noticed seen = {.f = f};
    char doc[160], when[TIMESTAMP_ISO8601_LEN + 1];
    int64_t t = (int64_t)as_wall(NULL) + 120;
    struct watcher w = {0};
    pid_t watcher[4];

    spawn(f, "aws-imds", NULL);
    w.node = f->node;
    assert_true(proc_wait_for(registered, f, 10));
    assert_true(proc_wait_for(has_watcher, &w, 10));
    assert_int_equal(children_of(f->node, watcher, 4), 1);
    kill(watcher[0], SIGKILL);
    w.not = watcher[0];
    assert_true(proc_wait_for(has_watcher, &w, 15)); /* another, 5 s later */
    assert_true(log_says(f->nodelog, "the notice watcher ended"));
    /* forked after the agent's requests began: none of its descriptors (its connection to the
     * controller) came with it */
    {
        char what[300];

        assert_int_equal(children_of(f->node, watcher, 4), 1);
        if (shared_fd(f->node, watcher[0], what, sizeof(what)))
            fail_msg("the watcher holds the agent's %s", what);
    }
    assert_false(noticed(&seen));

    assert_int_equal(timestamp_format_iso8601(t, when), 0);
    snprintf(doc, sizeof(doc), "{\"action\": \"terminate\", \"time\": \"%s\"}", when);
    META_SET(&f->m, action, doc);
    assert_true(proc_wait_for(noticed, &seen, 5));
    assert_true(fabs(seen.deadline - (double)t) < 1.0);
    assert_true(log_says(f->nodelog, "the cloud's interruption notice: forwarded"));
    assert_true(proc_alive(f->node)); /* it stays until the cloud takes it */
}

/* A rebalance recommendation is a notice without deadline; with CASTOR_NODE_REBALANCE=ignore it
 * is only logged. */
static void castor_node__rebalance_recommendation(void **state)
{
    struct nfx *f = *state;
    struct noticed seen = {.f = f};
    struct log_wait ignored = {f->nodelog, "not forwarded: CASTOR_NODE_REBALANCE=ignore"};

    META_SET(&f->m, rebalance, "{\"noticeTime\": \"2026-01-02T03:00:00Z\"}");
    spawn(f, "aws-imds", "CASTOR_NODE_REBALANCE=ignore");
    assert_true(proc_wait_for(registered, f, 10));
    assert_true(proc_wait_for(log_has, &ignored, 10));
    assert_false(noticed(&seen));
    kill(f->node, SIGTERM);
    assert_true(proc_wait_exit(f->node, 10) == 0);
    spawn(f, "aws-imds", NULL);
    assert_true(proc_wait_for(noticed, &seen, 10));
    assert_true(isnan(seen.deadline));
}

/* Compute Engine: the preempted flag turning TRUE reaches the controller with a deadline 30 s
 * on. */
static void castor_node__forwards_the_gce_preemption(void **state)
{
    struct nfx *f = *state;
    struct noticed seen = {.f = f};
    double set;

    spawn(f, "gce-metadata", NULL);
    assert_true(proc_wait_for(registered, f, 10));
    assert_true(proc_wait_for(long_polled_twice, &f->m, 10));
    assert_false(noticed(&seen));
    set = as_wall(NULL);
    META_SET(&f->m, preempted, "TRUE");
    assert_true(proc_wait_for(noticed, &seen, 5));
    assert_true(seen.deadline >= set + WATCH_GCE_NOTICE_S - 1 &&
                seen.deadline <= as_wall(NULL) + WATCH_GCE_NOTICE_S + 1);
}

/* With api.attestation, castor-node on EC2 proves its instance with the identity document and
 * signature IMDSv2 gives: a document signed by a key the controller does not trust is refused
 * (403, logged by both), and once the metadata service gives a good one (the agent reads it
 * again after a refusal) the node registers. With CASTOR_NODE_ATTEST=off it sends none and is
 * refused for that. */
static void castor_node__proves_its_instance_at_registration(void **state)
{
    struct nfx *f = *state;
    struct log_wait refused = {f->nodelog, "signature does not verify"};
    struct log_wait unproved = {f->nodelog, "must prove which instance it is"};
    char doc[1024], sig[1024];

    attest_document(doc, sizeof(doc), NODE_ID, "123456789012", "us-east-1");
    assert_int_equal(attest_signature(ATTEST_OTHER_KEY, doc, sig, sizeof(sig)), 0);
    META_SET(&f->m, iddoc, doc);
    META_SET(&f->m, idsig, sig);
    spawn(f, "aws-imds", "CASTOR_NODE_ATTEST=off");
    assert_true(proc_wait_for(log_has, &unproved, 10));
    assert_false(registered(f));
    kill(f->node, SIGTERM);
    assert_true(proc_wait_exit(f->node, 10) == 0);
    spawn(f, "aws-imds", NULL);
    assert_true(proc_wait_for(log_has, &refused, 10)); /* (a 403's reason) */
    assert_non_null(strstr(f->as.logtext, "a registration's attestation refused"));
    assert_false(registered(f));
    assert_int_equal(attest_signature(ATTEST_KEY, doc, sig, sizeof(sig)), 0);
    META_SET(&f->m, idsig, sig);
    assert_true(proc_wait_for(registered, f, 10));
}

static int gce_registered(void *ctx)
{
    struct nfx *f = ctx;
    struct state_node n;

    if (state_node_get(f->as.own, GCE_NODE_ID, &n) < 0)
        return 0;
    state_node_clear(&n);
    return 1;
}

/* On Compute Engine, castor-node proves its instance with the identity token the metadata server
 * gives for its audience (CASTOR_NODE_AUDIENCE) in the full format: a token of another instance is
 * refused (403), and once the server gives the instance's own the node registers. */
static void castor_node__proves_its_compute_engine_instance(void **state)
{
    static const char *const more[] = {"CASTOR_INSTANCE_ID=" GCE_NODE_ID,
                                       "CASTOR_NODE_AUDIENCE=" AUDIENCE, NULL};
    struct nfx *f = *state;
    struct log_wait refused = {f->nodelog, "the token is instance us-central1-a.castor-w-9's"};
    char claims[1024], token[4096];

    attest_gcp_claims(claims, sizeof(claims), "us-central1-a", "castor-w-9", "my-project", AUDIENCE,
                      as_wall(NULL) - 5);
    assert_int_equal(attest_gcp_token(ATTEST_KEY, "{\"alg\":\"RS256\",\"kid\":\"k1\"}", claims,
                                      token, sizeof(token)),
                     0);
    META_SET(&f->m, idtoken, token);
    spawn_with(f, "gce-metadata", more);
    assert_true(proc_wait_for(log_has, &refused, 10));
    assert_false(gce_registered(f));
    pthread_mutex_lock(&f->m.lock);
    assert_non_null(strstr(f->m.id_query, "audience=castor%3Atest-cluster"));
    assert_non_null(strstr(f->m.id_query, "format=full"));
    pthread_mutex_unlock(&f->m.lock);
    attest_gcp_claims(claims, sizeof(claims), "us-central1-a", "castor-w-1", "my-project", AUDIENCE,
                      as_wall(NULL) - 5);
    assert_int_equal(attest_gcp_token(ATTEST_KEY, "{\"alg\":\"RS256\",\"kid\":\"k1\"}", claims,
                                      token, sizeof(token)),
                     0);
    META_SET(&f->m, idtoken, token);
    assert_true(proc_wait_for(gce_registered, f, 10));
}

/* A cloud castor-node does not know, or a metadata URL that is not http(s): refused at start,
 * saying which variable. */
static void castor_node__refuses_a_bad_watch(void **state)
{
    struct nfx *f = *state;
    int status;

    spawn(f, "azure", NULL);
    status = proc_wait_exit(f->node, 10);
    f->node = 0;
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
    assert_true(log_says(f->nodelog, "CASTOR_NODE_CLOUD must be none, aws-imds or gce-metadata"));
    spawn(f, "gce-metadata", "CASTOR_NODE_REBALANCE=sometimes");
    status = proc_wait_exit(f->node, 10);
    f->node = 0;
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
    assert_true(log_says(f->nodelog, "CASTOR_NODE_REBALANCE must be notice or ignore"));
}

/* An agent on aws-imds, registered, its watcher running, then stopped (SIGSTOP): busy, as it is
 * while a request to the controller takes its time. */
static void agent_watching_then_stopped(struct nfx *f)
{
    struct watcher w = {0};

    spawn(f, "aws-imds", NULL);
    w.node = f->node;
    assert_true(proc_wait_for(registered, f, 10));
    assert_true(proc_wait_for(has_watcher, &w, 10));
    assert_int_equal(kill(f->node, SIGSTOP), 0);
}

/* The metadata service says the instance is interrupted at t (seconds since the epoch). */
static void interruption_at(struct nfx *f, int64_t t)
{
    char doc[160], when[TIMESTAMP_ISO8601_LEN + 1];

    assert_int_equal(timestamp_format_iso8601(t, when), 0);
    snprintf(doc, sizeof(doc), "{\"action\": \"terminate\", \"time\": \"%s\"}", when);
    META_SET(&f->m, action, doc);
}

/* The watcher's notice is signalled with its deadline, not the time left when it was sent: a
 * notice the agent takes late (here stopped for 2.5 s) keeps the cloud's time. */
static void castor_node__a_late_notice_keeps_the_clouds_deadline(void **state)
{
    struct nfx *f = *state;
    struct noticed seen = {.f = f};
    struct log_wait sent = {f->nodelog, "the cloud's interruption notice: forwarded"};
    int64_t t = (int64_t)as_wall(NULL) + 120;

    agent_watching_then_stopped(f);
    interruption_at(f, t);
    assert_true(proc_wait_for(log_has, &sent, 5)); /* signalled to the stopped agent */
    proc_sleep(2.5);
    assert_int_equal(kill(f->node, SIGCONT), 0);
    assert_true(proc_wait_for(noticed, &seen, 5));
    if (!(fabs(seen.deadline - (double)t) < 1.0))
        fail_msg("the deadline forwarded is %.2f s off the cloud's", seen.deadline - (double)t);
}

/* Two notices the watcher signals while the agent is busy (stopped here) are both taken: a
 * rebalance recommendation (no deadline), then an interruption notice, whose deadline holds (a
 * second SIGUSR1 pending would have been lost). */
static void castor_node__queued_notices_keep_the_deadline(void **state)
{
    struct nfx *f = *state;
    struct noticed seen = {.f = f};
    struct log_wait first = {f->nodelog, "the cloud's rebalance recommendation: forwarded"};
    struct log_wait second = {f->nodelog, "the cloud's interruption notice: forwarded"};
    int64_t t = (int64_t)as_wall(NULL) + 120;

    agent_watching_then_stopped(f);
    META_SET(&f->m, rebalance, "{\"noticeTime\": \"2026-01-02T03:00:00Z\"}");
    assert_true(proc_wait_for(log_has, &first, 5));
    interruption_at(f, t);
    assert_true(proc_wait_for(log_has, &second, 5));
    assert_int_equal(kill(f->node, SIGCONT), 0);
    assert_true(proc_wait_for(noticed, &seen, 5));
    proc_sleep(0.5); /* (a second notice is forwarded again) */
    noticed(&seen);
    if (!(fabs(seen.deadline - (double)t) < 1.0))
        fail_msg("the interruption notice's deadline was lost (forwarded: %.2f)", seen.deadline);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup, fx_teardown)
#define N(name) cmocka_unit_test_setup_teardown(name, nfx_setup, nfx_teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(watch_find__clouds_by_name_and_refusals),
        T(aws_imds__token_dance_and_404s),
        T(aws_imds__notices_parsed_and_said_once),
        T(aws_imds__malformed_answers_ignored),
        T(aws_imds__unreachable),
        T(gce_metadata__preempted_flag_long_polled),
        T(gce_metadata__maintenance_and_malformed),
        T(watch_loop__emits_news),
        N(castor_node__forwards_the_imds_interruption_notice),
        N(castor_node__rebalance_recommendation),
        N(castor_node__forwards_the_gce_preemption),
        N(castor_node__refuses_a_bad_watch),
        N(castor_node__a_late_notice_keeps_the_clouds_deadline),
        N(castor_node__queued_notices_keep_the_deadline),
        cmocka_unit_test_setup_teardown(castor_node__proves_its_instance_at_registration,
                                        nfx_setup_attest, nfx_teardown),
        cmocka_unit_test_setup_teardown(castor_node__proves_its_compute_engine_instance,
                                        nfx_setup_attest, nfx_teardown),
    };
#undef T
#undef N

    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
