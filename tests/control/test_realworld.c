/* test_realworld.c: the real-world provider over the fake cloud and a state on disk, driven by the
 * controller's own loop, with fake node agents that are plain HTTP clients of the API (served on
 * 127.0.0.1:0 over a second connection to the state): a node is schedulable only once its agent
 * registered its GPUs; a launch intent is committed before the cloud is asked; an instance found
 * by its tag is adopted by its token, a stray one terminated; an intent with no instance is given
 * up after the timeout and the planner launches once more, never twice for one intent; a gone
 * instance drops its jobs' allocations; a notice drains; reports refit the job's model; a job of a
 * model family starts from its family's model and gradient statistics. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "control/api.h"
#include "control/loop.h"
#include "control/realworld.h"
#include "control/state.h"
#include "providers/fake.h"
#include "util/db.h"
#include "util/db_fixture.h"
#include "util/http_client.h"
#include "util/http_server.h"
#include "util/json.h"
#include "util/log.h"

#define TOKEN_NODE "node-token-0123456789abcdef"
#define TOKEN_JOB "job-token-0123456789abcdef"
#define TOKEN_USER "user-token-0123456789abcdef"
#define CLUSTER "rw-test"
#define OFFER_OD "box/on-demand"
#define OFFER_SPOT "box/spot"
#define TIMEOUT 100.0
#define T0 1714564800.0

struct fixture {
    struct tmpdb db;
    struct state *st, *st_api, *st_spy;
    struct api *api;
    struct http_server *server;
    struct http_client *client;
    char base[64];
    double now;
    struct cloud fake;   /* the fake cloud */
    struct cloud cloud;  /* the spy in front of it, which the world uses */
    int spy_checked;     /* launches whose intent the spy found committed */
    int tried[2];        /* launches asked of the fake: [0] on-demand, [1] spot */
    int register_gpus;   /* > 0: each launched instance's agent registers during the launch */
    int spot_unpriced;   /* 1: the spy's offers give the spot offer no price (NAN) */
    int od_unpriced;     /* 1: and the on-demand offer */
    double spot_storage; /* $/h of disks the spy's offers add to the spot offer's price */
    double spot_rate;    /* the spot offer's preemptions per node-hour (0: the default) */
    /* the timer and the sleep of a world made by make_world_timed */
    double mono;      /* the monotonic clock */
    double pause;     /* the next sleep overruns its deadline by this (the process stopped) */
    double step;      /* the next sleep steps the wall clock by this (NTP) */
    double interrupt; /* > 0: the next sleep ends early with ERR_AGAIN after this (a SIGHUP) */
    struct realworld *rw;
    struct provider prov;
    struct policy policy;
    struct fleet_policy fleet;
    struct loop loop;
};

static struct fixture *spy_fixture; /* the spy's way back (one test at a time) */

static double fake_clock(void *ctx)
{
    return ((struct fixture *)ctx)->now;
}

static double fake_timer(void *ctx)
{
    return ((struct fixture *)ctx)->mono;
}

/* Sleep until the timer reads until (or the interruption), both clocks moving on. */
static int fake_sleep(void *ctx, double until)
{
    struct fixture *f = ctx;
    double dt = until > f->mono ? until - f->mono : 0;
    int rc = 0;

    if (f->interrupt > 0 && f->interrupt < dt) {
        dt = f->interrupt;
        rc = ERR_AGAIN;
    }
    dt += f->pause;
    f->mono += dt;
    f->now += dt + f->step;
    f->interrupt = f->pause = f->step = 0;
    return rc;
}

/* ---- a cloud that checks, at each launch, that the intent is already committed ---- */

static int spy_offers(void *ctx, struct cloud_offer **out, size_t *n)
{
    struct fixture *f = ctx;
    int rc = cloud_offers(&f->fake, out, n);

    for (size_t i = 0; rc == 0 && i < *n; i++)
        if (strcmp((*out)[i].name, OFFER_SPOT) == 0) {
            (*out)[i].storage = f->spot_storage;
            (*out)[i].price = f->spot_unpriced ? NAN : (*out)[i].price + f->spot_storage;
        } else if (f->od_unpriced) {
            (*out)[i].price = NAN;
        }
    return rc;
}

static int spy_list(void *ctx, const char *cluster, struct cloud_instance **out, size_t *n)
{
    return cloud_list(&((struct fixture *)ctx)->fake, cluster, out, n);
}

static void agent_register(struct fixture *f, const char *id, int gpus);
static void spot_quota(struct fixture *f, double limit, double others);
static size_t rows_on(struct fixture *f, const char *name, const char *id);
static enum state_node_state node_state(struct fixture *f, const char *id);

static int spy_launch(void *ctx, const char *offer, const char *cluster, const char *token,
                      char *id)
{
    struct fixture *f = ctx;
    char sql[256];
    int rc;

    /* read through a third connection: only what was committed is there */
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM launch_intents WHERE token = '%s'", token);
    assert_int_equal(one_int(state_db(f->st_spy), sql), 1);
    f->spy_checked++;
    f->tried[strcmp(offer, OFFER_SPOT) == 0]++;
    rc = cloud_launch(&f->fake, offer, cluster, token, id);
    if (rc == 0 && f->register_gpus > 0) /* an agent faster than the launch's record */
        agent_register(f, id, f->register_gpus);
    return rc;
}

static int spy_terminate(void *ctx, const char *cluster, const char *id)
{
    return cloud_terminate(&((struct fixture *)ctx)->fake, cluster, id);
}

static int spy_quotas(void *ctx, struct cloud_quota **quotas, size_t *nq,
                      struct cloud_quota_use **uses, size_t *nu)
{
    return cloud_quotas(&((struct fixture *)ctx)->fake, quotas, nq, uses, nu);
}

static const struct cloud_ops spy_ops = {
    .name = "fake",
    .offers = spy_offers,
    .list = spy_list,
    .launch = spy_launch,
    .terminate = spy_terminate,
    .quotas = spy_quotas,
};

/* ---- setup ---- */

/* realworld_config.heard: the fixture's API, as the daemon wires it. */
static double api_heard(void *ctx, const char *node)
{
    double at = NAN;

    return api_node_heard(((struct fixture *)ctx)->api, node, &at) == 0 ? at : NAN;
}

/* The world over the fixture's state and cloud, telling log (NULL: no log). */
/* A world over the fixture's cloud and state, logging to log (may be NULL), with the nodes'
 * registration and heartbeat timeouts (0: not watched). */
static int make_world_watching(struct fixture *f, struct log *log, double registration,
                               double heartbeat)
{
    struct realworld_offer meta[1] = {{.name = OFFER_SPOT,
                                       .zone = "zone-a",
                                       .boot_s = 30,
                                       .preempt_rate = f->spot_rate > 0 ? f->spot_rate : NAN}};
    struct realworld_config rc = {.state = f->st,
                                  .cloud = &f->cloud,
                                  .cluster = CLUSTER,
                                  .clock = fake_clock,
                                  .clock_ctx = f,
                                  .timeouts = {TIMEOUT, registration, heartbeat},
                                  .offers = meta,
                                  .noffers = 1,
                                  .log = log,
                                  .heard = api_heard,
                                  .heard_ctx = f};

    if (realworld_new(&rc, &f->rw, NULL) < 0)
        return -1;
    realworld_provider(f->rw, &f->prov);
    return 0;
}

/* The world made again with a timer and a sleep (fake_sleep), the heartbeat timeout given, and
 * the loop's interval (the loop follows it). */
static void make_world_timed(struct fixture *f, double heartbeat, int interval)
{
    struct realworld_config rc = {.state = f->st,
                                  .cloud = &f->cloud,
                                  .cluster = CLUSTER,
                                  .clock = fake_clock,
                                  .timer = fake_timer,
                                  .sleep = fake_sleep,
                                  .clock_ctx = f,
                                  .timeouts = {TIMEOUT, 0, heartbeat},
                                  .heard = api_heard,
                                  .heard_ctx = f};

    realworld_free(f->rw);
    f->mono = 1000.0;
    assert_int_equal(realworld_new(&rc, &f->rw, NULL), 0);
    realworld_provider(f->rw, &f->prov);
    f->loop.provider = &f->prov;
    f->loop.interval = interval;
}

static int make_world_logged(struct fixture *f, struct log *log)
{
    return make_world_watching(f, log, 0, 0);
}

static int make_world(struct fixture *f)
{
    return make_world_logged(f, NULL);
}

/* The world made again with the nodes' timeouts (the loop follows it). */
static void rewatch(struct fixture *f, double registration, double heartbeat)
{
    realworld_free(f->rw);
    assert_int_equal(make_world_watching(f, NULL, registration, heartbeat), 0);
    f->loop.provider = &f->prov;
}

/* A loop over the world: the fleet planner called fleet (`nodes` nodes of offer for "fixed")
 * under pollux. */
static int make_loop_with(struct fixture *f, const char *fleet, int offer, int nodes)
{
    /* max_nodes as the configuration's default: a noticed node counts against it while it
     * drains, so a replacement is launched at the notice below it */
    struct fleet_config fc = {.offer = offer, .nodes = nodes, .max_nodes = 16};
    struct policy_config pc = {0};

    if (policy_new("pollux", &pc, &f->policy) < 0 || fleet_new(fleet, &fc, &f->fleet) < 0)
        return -1;
    f->loop = (struct loop){
        .provider = &f->prov, .policy = &f->policy, .fleet = &f->fleet, .interval = 0, .seed = 1};
    return 0;
}

/* The fixed fleet of `nodes` nodes of offer 0 (on-demand). */
static int make_loop(struct fixture *f, int nodes)
{
    return make_loop_with(f, "fixed", 0, nodes);
}

static int rw_setup(void **state)
{
    static const struct cloud_offer offers[2] = {{.name = OFFER_OD, .gpus = 4, .price = 2.0},
                                                 {.name = OFFER_SPOT,
                                                  .gpus = 4,
                                                  .spot = 1,
                                                  .price = 0.8,
                                                  .max_price = 1.0,
                                                  .reclaim_free_s = 3600}};
    struct api_tokens tokens = {{strdup(TOKEN_NODE), strdup(TOKEN_JOB), strdup(TOKEN_USER), NULL}};
    struct http_server_config hc = {0};
    struct fixture *f = calloc(1, sizeof(*f));
    struct api_config ac = {0};
    void *tmp = NULL;

    if (!f || tmpdb_setup(&tmp) < 0)
        return -1;
    f->db = *(struct tmpdb *)tmp;
    free(tmp);
    f->now = T0;
    if (state_open(f->db.path, &f->st, NULL) < 0 || state_open(f->db.path, &f->st_api, NULL) < 0 ||
        state_open(f->db.path, &f->st_spy, NULL) < 0)
        return -1;
    ac.state = f->st_api;
    ac.clock = fake_clock;
    ac.clock_ctx = f;
    ac.tokens = &tokens;
    if (api_new(&ac, &f->api, NULL) < 0)
        return -1;
    api_tokens_clear(&tokens);
    if (http_server_start(&hc, api_handle, f->api, &f->server, NULL) < 0 ||
        http_client_new(&f->client) < 0)
        return -1;
    snprintf(f->base, sizeof(f->base), "http://127.0.0.1:%d", http_server_port(f->server));
    if (cloud_fake_create(offers, NULL, 2, NULL, &f->fake) < 0)
        return -1;
    cloud_fake_set_clock(&f->fake, fake_clock, f);
    f->cloud = (struct cloud){.ops = &spy_ops, .ctx = f};
    spy_fixture = f;
    if (make_world(f) < 0)
        return -1;
    *state = f;
    return 0;
}

static int rw_teardown(void **state)
{
    struct fixture *f = *state;
    struct tmpdb *t = malloc(sizeof(*t));

    if (f->loop.policy)
        policy_free(&f->policy);
    if (f->loop.fleet)
        fleet_free(&f->fleet);
    realworld_free(f->rw);
    cloud_free(&f->fake);
    http_client_free(f->client);
    http_server_stop(f->server);
    api_free(f->api);
    state_close(f->st);
    state_close(f->st_api);
    state_close(f->st_spy);
    *t = f->db;
    free(f);
    return tmpdb_teardown((void **)&t);
}

/* ---- the fake agents and users: HTTP clients ---- */

static long call(struct fixture *f, const char *method, const char *path, const char *token,
                 const char *body, struct jv **out)
{
    char auth[128], url[256];
    const struct http_client_header h[1] = {{"Authorization", auth}};
    struct http_client_request req = {.method = method, .url = url, .headers = h, .nheaders = 1};
    struct http_client_response r = {0};
    long status;

    snprintf(url, sizeof(url), "%s%s", f->base, path);
    snprintf(auth, sizeof(auth), "Bearer %s", token);
    req.body = body;
    req.body_len = body ? strlen(body) : 0;
    assert_int_equal(http_client_do(f->client, &req, &r, NULL), 0);
    status = r.status;
    if (out && jv_parse(r.body, r.body_len, out, NULL) < 0)
        *out = NULL;
    http_client_response_clear(&r);
    return status;
}

/* A node agent registers its instance with its GPUs. */
static void agent_register(struct fixture *f, const char *id, int gpus)
{
    char body[160];

    snprintf(body, sizeof(body),
             "{\"instance_id\": \"%s\", \"gpus\": %d, \"gpu_memory_mib\": 16384}", id, gpus);
    assert_int_equal(call(f, "POST", "/v1/nodes", TOKEN_NODE, body, NULL), 201);
}

/* A job of M0 64 submitted through the API, with more fields (", \"key\": value...") if any. */
static void submit_job_with(struct fixture *f, const char *name, int max_replicas, const char *more)
{
    char body[400];

    snprintf(body, sizeof(body),
             "{\"name\": \"%s\", \"command\": [\"train\"], \"workdir\": \"/w\", "
             "\"init_batch_size\": 64, \"max_batch_size\": 1024, \"max_local_bsz\": 128, "
             "\"max_replicas\": %d%s}",
             name, max_replicas, more);
    assert_int_equal(call(f, "POST", "/v1/jobs", TOKEN_USER, body, NULL), 201);
}

static void submit_job(struct fixture *f, const char *name, int max_replicas)
{
    submit_job_with(f, name, max_replicas, "");
}

static long long sql_int(struct fixture *f, const char *sql)
{
    return one_int(state_db(f->st_spy), sql);
}

static struct cloud_fake_counts counts(struct fixture *f)
{
    struct cloud_fake_counts c;

    assert_int_equal(cloud_fake_counts(&f->fake, &c), 0);
    return c;
}

/* The ids of the cluster's instances that are not gone, into ids (up to 8); how many. */
static int live_instances(struct fixture *f, char ids[8][CLOUD_ID_MAX])
{
    struct cloud_instance *in = NULL;
    size_t n = 0;
    int k = 0;

    assert_int_equal(cloud_list(&f->fake, CLUSTER, &in, &n), 0);
    for (size_t i = 0; i < n; i++)
        if (in[i].state != CLOUD_GONE && k < 8)
            memcpy(ids[k++], in[i].id, CLOUD_ID_MAX);
    free(in);
    return k;
}

static void tick(struct fixture *f, double dt)
{
    f->now += dt;
    assert_int_equal(loop_tick(&f->loop), 0);
}

/* A fleet of one node of gpus GPUs that its agent registered, job name (at most gpus replicas)
 * placed on it; the node's id in ids[0]. */
static void one_job_running(struct fixture *f, char ids[8][CLOUD_ID_MAX], const char *name,
                            int gpus)
{
    assert_int_equal(make_loop(f, 1), 0);
    submit_job(f, name, gpus);
    tick(f, 0);
    assert_int_equal(live_instances(f, ids), 1);
    agent_register(f, ids[0], gpus);
    tick(f, 10);
}

/* A fleet of one node that its agent registered, job "a" placed on it; the node's id in ids[0]. */
static void one_node_running(struct fixture *f, char ids[8][CLOUD_ID_MAX])
{
    one_job_running(f, ids, "a", 4);
}

/* The world's metrics now (its rows valid until the next tick). */
static struct api_metrics metrics(struct fixture *f)
{
    struct api_metrics m = {0};

    assert_int_equal(realworld_metrics(f->rw, &m), 0);
    return m;
}

/* 1 when job name has an event of kind whose message holds text (and whose node is node, when
 * node is not NULL). */
static int has_event(struct fixture *f, const char *name, const char *kind, const char *node,
                     const char *text)
{
    struct state_event *ev = NULL;
    size_t n = 0;
    int found = 0;

    assert_int_equal(state_events_list(f->st, name, STATE_EVENTS_KEPT, &ev, &n), 0);
    for (size_t i = 0; i < n; i++)
        found |= strcmp(ev[i].kind, kind) == 0 && strstr(ev[i].message, text) &&
                 (!node || (ev[i].node && strcmp(ev[i].node, node) == 0));
    state_events_free(ev, n);
    return found;
}

/* ---- tests ---- */

static void realworld_resize__intent_committed_before_launch(void **state)
{
    struct fixture *f = *state;
    char ids[8][CLOUD_ID_MAX];
    struct state_node n;

    assert_int_equal(make_loop(f, 2), 0);
    submit_job(f, "a", 4);
    tick(f, 0);
    assert_int_equal(f->spy_checked, 2); /* both launches found their intent committed */
    assert_int_equal(counts(f).launched, 2);
    assert_int_equal(live_instances(f, ids), 2);
    assert_int_equal(sql_int(f, "SELECT count(*) FROM launch_intents WHERE state = 'launched'"), 2);
    assert_int_equal(state_node_get(f->st, ids[0], &n), 0);
    assert_int_equal(n.state, STATE_NODE_BOOTING);
    assert_non_null(n.launch_token);
    assert_int_equal(strncmp(n.launch_token, CLUSTER "-", strlen(CLUSTER) + 1), 0);
    assert_string_equal(n.offer, OFFER_OD);
    assert_string_equal(n.zone, "default");
    state_node_clear(&n);
    /* the next ticks see them booting and launch nothing more */
    tick(f, 10);
    tick(f, 10);
    assert_int_equal(counts(f).launch_calls, 2);
}

static void realworld_observe__schedulable_only_once_registered(void **state)
{
    struct fixture *f = *state;
    char ids[8][CLOUD_ID_MAX];
    const struct snapshot *s;
    struct state_alloc *rows = NULL;
    struct jv *v = NULL;
    size_t n = 0;
    char path[128];

    assert_int_equal(make_loop(f, 1), 0);
    submit_job(f, "a", 4);
    tick(f, 0);
    assert_int_equal(live_instances(f, ids), 1);
    assert_int_equal(provider_observe(&f->prov, &s), 0);
    assert_int_equal(s->nnodes, 0);
    assert_int_equal(s->nbooting, 1);
    assert_int_equal(s->noffers, 2);
    assert_string_equal(s->offers[1].name, OFFER_SPOT);
    assert_true(s->offers[1].boot_s == 30 && s->offers[1].spot &&
                s->offers[1].preempt_rate == 0.05);
    tick(f, 10);
    assert_int_equal(state_alloc_get(f->st, "a", &rows, &n), 0);
    assert_int_equal(n, 0); /* nothing to run on yet */
    /* the agent registers 4 GPUs: the node is schedulable, the job placed on it */
    agent_register(f, ids[0], 4);
    assert_int_equal(provider_observe(&f->prov, &s), 0);
    assert_int_equal(s->nnodes, 1);
    assert_int_equal(s->nodes[0].gpus, 4);
    assert_int_equal(s->nodes[0].offer, 0);
    assert_int_equal(s->nbooting, 0);
    tick(f, 10);
    assert_int_equal(state_alloc_get(f->st, "a", &rows, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(rows[0].node, ids[0]);
    state_allocs_free(rows, n);
    /* the agent reads its assignment through the API: the job with its configuration */
    snprintf(path, sizeof(path), "/v1/nodes/%s/assignment", ids[0]);
    assert_int_equal(call(f, "GET", path, TOKEN_NODE, NULL, &v), 200);
    assert_int_equal(jv_size(jv_get(v, "jobs")), 1);
    {
        const struct jv *j = jv_at(jv_get(v, "jobs"), 0);
        double local = 0, gain = 0;

        assert_string_equal(jv_string_value(jv_get(j, "job")), "a");
        assert_int_equal(jv_number_value(jv_get(j, "local_bsz"), &local), 0);
        assert_int_equal(jv_number_value(jv_get(j, "lr_gain"), &gain), 0);
        assert_true(local > 0 && local <= 128 && gain > 0);
    }
    jv_free(v);
    assert_int_equal(sql_int(f, "SELECT count(*) FROM jobs WHERE name = 'a' AND state = 'running'"),
                     1);
}

static void realworld_reconcile__adopts_an_instance_by_its_token(void **state)
{
    struct fixture *f = *state;
    struct state_intent *pending = NULL;
    struct state_node n;
    char id[CLOUD_ID_MAX];
    size_t np = 0;

    /* a launch asked for just before a crash: the intent committed, the answer never recorded */
    assert_int_equal(state_intent_record(f->st, CLUSTER "-feedfacefeedface", OFFER_SPOT, 1, f->now),
                     0);
    assert_int_equal(
        cloud_fake_inject(&f->fake, CLUSTER, OFFER_SPOT, CLUSTER "-feedfacefeedface", id), 0);
    f->now += 5;
    assert_int_equal(realworld_reconcile(f->rw), 0);
    assert_int_equal(state_node_get(f->st, id, &n), 0);
    assert_string_equal(n.launch_token, CLUSTER "-feedfacefeedface");
    assert_string_equal(n.offer, OFFER_SPOT);
    assert_string_equal(n.zone, "zone-a");
    assert_int_equal(n.market, STATE_MARKET_SPOT);
    assert_int_equal(n.gpus, 4);
    assert_int_equal(n.state, STATE_NODE_BOOTING);
    state_node_clear(&n);
    assert_int_equal(state_intents_pending(f->st, &pending, &np), 0);
    assert_int_equal(np, 0);
    state_intents_free(pending, np);
    /* adopted, not launched again; and a second look changes nothing */
    assert_int_equal(realworld_reconcile(f->rw), 0);
    assert_int_equal(counts(f).launch_calls, 0);
    assert_int_equal(counts(f).terminate_calls, 0);
}

static void realworld_reconcile__terminates_a_stray_instance(void **state)
{
    struct fixture *f = *state;
    char stray[CLOUD_ID_MAX], other[CLOUD_ID_MAX], ids[8][CLOUD_ID_MAX];
    struct state_node n;

    /* tagged with the cluster, but no open intent explains it */
    assert_int_equal(cloud_fake_inject(&f->fake, CLUSTER, OFFER_OD, "someone-else", stray), 0);
    /* another cluster's instance is none of this controller's business */
    assert_int_equal(cloud_fake_inject(&f->fake, "other-cluster", OFFER_OD, "x", other), 0);
    assert_int_equal(realworld_reconcile(f->rw), 0);
    assert_int_equal(live_instances(f, ids), 0);
    assert_int_equal(counts(f).terminate_calls, 1);
    assert_int_equal(state_node_get(f->st, stray, &n), ERR_UNKNOWN);
    /* a stray whose agent registered first (a static node) is terminated with its node */
    assert_int_equal(cloud_fake_inject(&f->fake, CLUSTER, OFFER_OD, "nobody", stray), 0);
    agent_register(f, stray, 4);
    assert_int_equal(realworld_reconcile(f->rw), 0);
    assert_int_equal(state_node_get(f->st, stray, &n), 0);
    assert_int_equal(n.state, STATE_NODE_TERMINATED);
    state_node_clear(&n);
    assert_int_equal(live_instances(f, ids), 0);
}

static void realworld_reconcile__intent_times_out_and_is_relaunched_once(void **state)
{
    struct fixture *f = *state;
    char ids[8][CLOUD_ID_MAX], late[CLOUD_ID_MAX], first[130];
    struct state_node n;

    assert_int_equal(make_loop(f, 1), 0);
    submit_job(f, "a", 4);
    /* the cloud gives no answer to the first three launch calls */
    assert_int_equal(cloud_fake_fail(&f->fake, "launch", ERR_IO, 3), 0);
    f->loop.interval = 0;
    assert_int_equal(loop_tick(&f->loop), 0); /* t0: intent A, call 1 fails */
    assert_int_equal(sql_int(f, "SELECT count(*) FROM launch_intents WHERE state = 'pending'"), 1);
    one_text(state_db(f->st_spy), "SELECT token FROM launch_intents", first, sizeof(first));
    tick(f, 40); /* asked again with A's token (call 2); the planner counts A as booting */
    tick(f, 40); /* call 3 */
    assert_int_equal(sql_int(f, "SELECT count(*) FROM launch_intents"), 1);
    assert_int_equal(counts(f).launch_calls, 3);
    assert_int_equal(counts(f).launched, 0);
    tick(f, 40); /* t0 + 120 > timeout: A fails; the planner launches B, which succeeds */
    assert_int_equal(sql_int(f, "SELECT count(*) FROM launch_intents WHERE state = 'failed'"), 1);
    assert_int_equal(sql_int(f, "SELECT count(*) FROM launch_intents WHERE state = 'launched'"), 1);
    assert_int_equal(counts(f).launch_calls, 4);
    assert_int_equal(counts(f).launched, 1);
    tick(f, 40);
    tick(f, 40);
    assert_int_equal(counts(f).launch_calls, 4);
    assert_int_equal(live_instances(f, ids), 1);
    /* A's instance, made late by the cloud after all, is a stray: terminated, not adopted */
    assert_int_equal(cloud_fake_inject(&f->fake, CLUSTER, OFFER_OD, first, late), 0);
    tick(f, 40);
    assert_int_equal(live_instances(f, ids), 1);
    assert_int_equal(state_node_get(f->st, late, &n), ERR_UNKNOWN);
    assert_int_equal(counts(f).launch_calls, 4);
}

static void realworld_reconcile__crash_between_intent_and_launch(void **state)
{
    struct fixture *f = *state;
    char ids[8][CLOUD_ID_MAX];

    /* crashed after the intent was committed, before the cloud was asked: the restarted world
     * asks with the same token, once */
    assert_int_equal(state_intent_record(f->st, CLUSTER "-0000000000000001", OFFER_OD, 1, f->now),
                     0);
    realworld_free(f->rw);
    assert_int_equal(make_world(f), 0);
    f->now += 5;
    assert_int_equal(realworld_reconcile(f->rw), 0);
    assert_int_equal(counts(f).launched, 1);
    assert_int_equal(live_instances(f, ids), 1);
    assert_int_equal(sql_int(f, "SELECT count(*) FROM nodes WHERE launch_token = '" CLUSTER
                                "-0000000000000001' AND state = 'booting'"),
                     1);
    assert_int_equal(realworld_reconcile(f->rw), 0);
    assert_int_equal(counts(f).launch_calls, 1);
    /* the cloud made the instance but its answer was lost: found by its token, not relaunched */
    assert_int_equal(state_intent_record(f->st, CLUSTER "-0000000000000002", OFFER_OD, 1, f->now),
                     0);
    assert_int_equal(cloud_fake_fail(&f->fake, "launch-lost", ERR_IO, 1), 0);
    assert_int_equal(realworld_reconcile(f->rw), 0); /* asks; the answer is lost */
    assert_int_equal(counts(f).launched, 2);
    assert_int_equal(realworld_reconcile(f->rw), 0); /* lists it: adopted */
    assert_int_equal(counts(f).launch_calls, 2);
    assert_int_equal(counts(f).launched, 2);
    assert_int_equal(sql_int(f, "SELECT count(*) FROM launch_intents WHERE state = 'pending'"), 0);
    assert_int_equal(sql_int(f, "SELECT count(*) FROM nodes WHERE state = 'booting'"), 2);
}

/* A gone instance whose node the state cannot terminate for a while (a full disk; here a trigger
 * that refuses updates of nodes) is counted lost once, and its job told once, when the state
 * takes the termination: not at every tick until then. */
static void realworld_observe__a_gone_node_is_counted_once(void **state)
{
    struct fixture *f = *state;
    char ids[8][CLOUD_ID_MAX];
    const char *told = "SELECT count(*) FROM events WHERE kind = 'node-lost'";

    one_node_running(f, ids);
    assert_int_equal(db_exec(state_db(f->st_spy),
                             "CREATE TRIGGER no_node_change BEFORE UPDATE ON"
                             " nodes BEGIN SELECT RAISE(ABORT, 'no room'); END"),
                     0);
    assert_int_equal(cloud_fake_set_state(&f->fake, ids[0], CLOUD_GONE, 0), 0);
    tick(f, 10);
    tick(f, 10);
    assert_int_equal(node_state(f, ids[0]), STATE_NODE_READY);
    assert_int_equal(db_exec(state_db(f->st_spy), "DROP TRIGGER no_node_change"), 0);
    tick(f, 10);
    assert_int_equal(node_state(f, ids[0]), STATE_NODE_TERMINATED);
    assert_int_equal(metrics(f).node_losses[API_LOSS_GONE], 1);
    assert_int_equal(sql_int(f, told), 1);
}

static void realworld_observe__a_gone_instance_drops_its_jobs(void **state)
{
    struct fixture *f = *state;
    char ids[8][CLOUD_ID_MAX];
    struct state_alloc *rows = NULL;
    struct state_job j;
    size_t n = 0;

    one_node_running(f, ids);
    assert_int_equal(state_job_checkpoint(f->st, "a", 12.5, f->now), 0);
    /* preempted without notice */
    assert_int_equal(cloud_fake_set_state(&f->fake, ids[0], CLOUD_GONE, 0), 0);
    tick(f, 10);
    assert_int_equal(sql_int(f, "SELECT count(*) FROM nodes WHERE state = 'terminated'"), 1);
    assert_int_equal(state_job_get(f->st, "a", &j), 0); /* the job is not lost */
    assert_true(j.checkpoint_progress == 12.5);
    state_job_clear(&j);
    /* its owner is told where it ran, and why it moves */
    assert_true(has_event(f, "a", "placed", NULL, ids[0]));
    assert_true(
        has_event(f, "a", "node-lost", ids[0],
                  "the node's instance is gone: the job restarts from its last checkpoint"));
    /* the fixed fleet replaces the node; registered, the job restarts on it */
    assert_int_equal(counts(f).launched, 2);
    assert_int_equal(live_instances(f, ids), 1);
    agent_register(f, ids[0], 4);
    tick(f, 10);
    assert_int_equal(state_alloc_get(f->st, "a", &rows, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(rows[0].node, ids[0]);
    state_allocs_free(rows, n);
    assert_int_equal(state_job_get(f->st, "a", &j), 0);
    assert_int_equal(j.state, STATE_JOB_RUNNING);
    assert_int_equal(j.restarts, 1);
    state_job_clear(&j);
}

static void report_one(struct fixture *f, const char *job, int replicas, int local, double step,
                       double sync, double sqr, double var);

/*
 * A gang of 2 on two 1-GPU nodes (the PyTorch world's shape): it is placed once both register and
 * has restarted once; one node gets a notice and goes; the fixed fleet replaces it, and once the
 * new node registers the gang runs again on the old node and the new one, within seconds of its
 * submission (before the fix it held nothing until its age passed 30 s).
 */
static void realworld_observe__a_gang_moves_to_the_replacement_node(void **state)
{
    struct fixture *f = *state;
    char ids[8][CLOUD_ID_MAX], keep[2][CLOUD_ID_MAX];
    struct state_alloc *rows = NULL;
    size_t n = 0;

    assert_int_equal(make_loop(f, 2), 0);
    submit_job_with(f, "g", 2, ", \"min_replicas\": 2");
    tick(f, 0);
    assert_int_equal(live_instances(f, ids), 2);
    agent_register(f, ids[0], 1);
    agent_register(f, ids[1], 1);
    tick(f, 1);
    assert_int_equal(state_alloc_get(f->st, "g", &rows, &n), 0);
    assert_int_equal(n, 2);
    state_allocs_free(rows, n);
    report_one(f, "g", 2, 32, 0.2, 0.05, 0.5, 2.0);
    tick(f, 1);
    /* it restarted once already (a new batch size, say): young, it may not restart again for
     * Pollux's penalty until its age passes restarts x 30 s, but a gang that lost a node must */
    assert_int_equal(state_job_restarted(f->st, "g"), 0);
    memcpy(keep[0], ids[0], CLOUD_ID_MAX);
    memcpy(keep[1], ids[1], CLOUD_ID_MAX);
    assert_int_equal(cloud_fake_set_state(&f->fake, ids[1], CLOUD_NOTICED, f->now + 2), 0);
    tick(f, 1);
    /* the replacement registers while the noticed node still drains */
    assert_int_equal(live_instances(f, ids), 3);
    for (int i = 0; i < 3; i++)
        if (strcmp(ids[i], keep[0]) != 0 && strcmp(ids[i], keep[1]) != 0)
            agent_register(f, ids[i], 1);
    tick(f, 1);
    assert_int_equal(cloud_fake_set_state(&f->fake, keep[1], CLOUD_GONE, 0), 0);
    for (int i = 0; i < 3; i++)
        tick(f, 1);
    assert_int_equal(f->loop.policy_errs, 0);
    assert_int_equal(state_alloc_get(f->st, "g", &rows, &n), 0);
    if (n != 2)
        fail_msg("the gang holds %zu nodes after the replacement registered", n);
    state_allocs_free(rows, n);
}

/* A policy that fails every decision, as a broken one would. */
static int failing_allocate(void *ctx, const struct snapshot *s, uint64_t seed, struct alloc *out)
{
    (void)ctx;
    (void)s;
    (void)seed;
    (void)out;
    return ERR_INTERNAL;
}

static const struct policy_ops failing_ops = {.name = "failing", .allocate = failing_allocate};

/* A failing decide step keeps the current allocation and is told (loop.policy_err, counted in
 * policy_errs); the next decision that works clears it. */
/*
 * The agents of a fixed fleet's two 1-GPU nodes register while the launch is still being recorded
 * (a local cloud starts them at once): each node is first a static node, then the launched one.
 * A gang of 2 submitted before is placed on the two at the next decision.
 */
static void realworld_observe__agents_faster_than_the_launch_record(void **state)
{
    struct fixture *f = *state;
    struct state_alloc *rows = NULL;
    const struct snapshot *s;
    size_t n = 0;

    assert_int_equal(make_loop(f, 2), 0);
    submit_job_with(f, "g", 2, ", \"min_replicas\": 2");
    f->register_gpus = 1;
    tick(f, 0);
    f->register_gpus = 0;
    assert_int_equal(sql_int(f, "SELECT count(*) FROM nodes WHERE state = 'ready'"), 2);
    for (int i = 0; i < 3; i++)
        tick(f, 1);
    f->now += 1;
    assert_int_equal(provider_observe(&f->prov, &s), 0);
    assert_int_equal(s->nnodes, 2);
    assert_int_equal(state_alloc_get(f->st, "g", &rows, &n), 0);
    if (n != 2)
        fail_msg("the gang holds %zu nodes", n);
    state_allocs_free(rows, n);
}

static void loop_tick__a_failing_decide_step_is_told(void **state)
{
    struct fixture *f = *state;
    char ids[8][CLOUD_ID_MAX];
    const struct policy_ops *works;
    struct state_alloc *rows = NULL;
    size_t n = 0;

    one_node_running(f, ids);
    works = f->policy.ops;
    f->policy.ops = &failing_ops;
    submit_job(f, "b", 4);
    tick(f, 1);
    assert_int_equal(f->loop.policy_err, ERR_INTERNAL);
    assert_int_equal(f->loop.policy_errs, 1);
    assert_int_equal(state_alloc_get(f->st, "b", &rows, &n), 0);
    assert_int_equal(n, 0); /* the current allocation stayed: b has nothing */
    state_allocs_free(rows, n);
    f->policy.ops = works;
    tick(f, 1);
    assert_int_equal(f->loop.policy_err, 0);
    assert_int_equal(f->loop.policy_errs, 1);
}

static void realworld_observe__a_noticed_node_drains(void **state)
{
    struct fixture *f = *state;
    char ids[8][CLOUD_ID_MAX];
    const struct snapshot *s;
    struct state_node n;

    int o = -1, noticed = 0;

    one_node_running(f, ids);
    assert_int_equal(provider_observe(&f->prov, &s), 0);
    for (int k = 0; k < s->noffers; k++)
        noticed += s->offers[k].noticed;
    assert_int_equal(noticed, 0); /* ready: among the nodes */
    assert_int_equal(cloud_fake_set_state(&f->fake, ids[0], CLOUD_NOTICED, f->now + 120), 0);
    f->now += 10;
    assert_int_equal(provider_observe(&f->prov, &s), 0);
    assert_int_equal(s->nnodes, 0); /* not schedulable */
    assert_int_equal(s->current->count[0], 0);
    /* still alive: counted on its offer against max_nodes, as the simulated world does */
    assert_int_equal(state_node_get(f->st, ids[0], &n), 0);
    assert_int_equal(realworld_offer_index(f->rw, n.offer, &o), 0);
    assert_int_equal(s->offers[o].noticed, 1);
    assert_int_equal(snapshot_noticed(s), 1);
    state_node_clear(&n);
    assert_int_equal(state_node_get(f->st, ids[0], &n), 0);
    assert_int_equal(n.state, STATE_NODE_DRAINING);
    assert_true(n.notice_deadline == f->now + 110);
    state_node_clear(&n);
}

static void realworld_observe__reports_refit_the_model(void **state)
{
    struct fixture *f = *state;
    char ids[8][CLOUD_ID_MAX];
    const struct snapshot *s;
    struct api_metrics m = {0};

    one_node_running(f, ids);
    assert_int_equal(provider_observe(&f->prov, &s), 0);
    assert_int_equal(s->jobs[0].has_model, 0);
    /* rank 0 reports step times at two configurations and its gradient statistics */
    assert_int_equal(
        call(f, "POST", "/v1/jobs/a/reports", TOKEN_JOB,
             "{\"configs\": [{\"nodes\": 1, \"replicas\": 1, \"local_bsz\": 64, "
             "\"accum_steps\": 0, \"count\": 50, \"step_mean\": 0.2, \"step_sd\": 0.01},"
             " {\"nodes\": 1, \"replicas\": 2, \"local_bsz\": 32, \"accum_steps\": 0, "
             "\"count\": 50, \"step_mean\": 0.12, \"step_sd\": 0.01, \"sync_mean\": 0.02}],"
             " \"grad\": {\"sqr\": 0.5, \"var\": 2.0}, \"progress\": 3}",
             NULL),
        200);
    f->now += 10;
    assert_int_equal(provider_observe(&f->prov, &s), 0);
    assert_int_equal(s->jobs[0].has_model, 1);
    assert_int_equal(s->jobs[0].max_profiled_replicas, 2);
    assert_true(s->jobs[0].grad.sqr == 0.5 && s->jobs[0].grad.var == 2.0);
    assert_true(s->jobs[0].progress == 3);
    assert_int_equal(sql_int(f, "SELECT count(*) FROM models"), 1);
    /* the model predicts about the step time reported at one GPU */
    {
        struct tput_point x = {1, 1, 64};
        double t = tput_step_time(&s->jobs[0].tput, &x, 0);

        assert_true(t > 0.15 && t < 0.27);
    }
    tick(f, 10);
    assert_int_equal(realworld_metrics(f->rw, &m), 0);
    assert_int_equal(m.njobs, 1);
    assert_string_equal(m.jobs[0].job, "a");
    assert_true(m.jobs[0].goodput > 0 && m.jobs[0].batch_size >= 64);
    assert_true(m.ncalls == 4 && m.calls[2].count >= 1); /* launch */
    /* a restarted world takes the stored model without a refit */
    realworld_free(f->rw);
    assert_int_equal(make_world(f), 0);
    f->loop.provider = &f->prov;
    assert_int_equal(provider_observe(&f->prov, &s), 0);
    assert_int_equal(s->jobs[0].has_model, 1);
}

/* A report of one configuration (nodes 1, replicas, local batch, accumulation steps, step_mean,
 * sync_mean) with gradient statistics sqr and var, posted for the job. */
static void report_accum(struct fixture *f, const char *job, int replicas, double local, int accum,
                         double step, double sync, double sqr, double var)
{
    char path[64], body[320];

    snprintf(path, sizeof(path), "/v1/jobs/%s/reports", job);
    snprintf(body, sizeof(body),
             "{\"configs\": [{\"nodes\": 1, \"replicas\": %d, \"local_bsz\": %g, "
             "\"accum_steps\": %d, \"count\": 50, \"step_mean\": %g, \"step_sd\": 0.01, "
             "\"sync_mean\": %g}], \"grad\": {\"sqr\": %g, \"var\": %g}}",
             replicas, local, accum, step, sync, sqr, var);
    assert_int_equal(call(f, "POST", path, TOKEN_JOB, body, NULL), 200);
}

/* The same without accumulation. */
static void report_one(struct fixture *f, const char *job, int replicas, int local, double step,
                       double sync, double sqr, double var)
{
    report_accum(f, job, replicas, local, 0, step, sync, sqr, var);
}

/* Job name's configuration in the state: local batch and accumulation steps. */
static void job_config(struct fixture *f, const char *name, double *local, int *accum)
{
    struct state_job j;

    assert_int_equal(state_job_get(f->st_spy, name, &j), 0);
    *local = j.local_bsz;
    *accum = j.accum_steps;
    state_job_clear(&j);
}

/*
 * A job on one GPU: a refit that makes another batch worth 5% more changes its configuration
 * (here to a large batch, its gradients noisy); a refit on a late report of the configuration it
 * left (its gradients quiet now) does not send it straight back while the new one is unmeasured
 * (since the change: a measurement from before it does not count); once a report measures the
 * new one, the next refit may; and a configuration its workers never run stops holding the next
 * change after REALWORLD_CONFIG_SETTLE_S.
 */
static void realworld_apply__a_new_configuration_is_measured_before_the_next(void **state)
{
    struct fixture *f = *state;
    char ids[8][CLOUD_ID_MAX];
    double local0, local1, local;
    int accum0, accum1, accum;

    one_job_running(f, ids, "v", 1);
    job_config(f, "v", &local0, &accum0);
    for (int round = 0; round < 2; round++) {
        /* noisy gradients: a larger batch, by accumulation */
        report_accum(f, "v", 1, local0, accum0, 0.2, 0, 0.5, 2000);
        tick(f, 10);
        job_config(f, "v", &local1, &accum1);
        assert_true(local1 * (accum1 + 1) > 2 * local0 * (accum0 + 1));
        /* a late report of the configuration it left, its gradients quiet: it stays */
        report_accum(f, "v", 1, local0, accum0, 0.2, 0, 0.5, 0.01);
        tick(f, 10);
        job_config(f, "v", &local, &accum);
        assert_true(local == local1 && accum == accum1);
        if (round == 0) {
            /* never measured: after REALWORLD_CONFIG_SETTLE_S the next refit moves it */
            f->now += REALWORLD_CONFIG_SETTLE_S;
            report_accum(f, "v", 1, local0, accum0, 0.2, 0, 0.5, 0.01);
        } else {
            /* measured: the next refit moves it at once */
            report_accum(f, "v", 1, local1, accum1, 0.2 * (accum1 + 1) * local1 / local0, 0, 0.5,
                         0.01);
        }
        tick(f, 10);
        job_config(f, "v", &local, &accum);
        assert_true(local == local0 && accum == accum0);
    }
    /* back where it was, measured there before but not since: a late report of the one it left,
     * noisy again and faster than measured before, does not send it back */
    report_accum(f, "v", 1, local1, accum1, 1.0, 0, 0.5, 2000);
    tick(f, 10);
    job_config(f, "v", &local, &accum);
    assert_true(local == local0 && accum == accum0);
}

/* A job of a fixed batch (64: max_batch_size is init_batch_size) on 3 GPUs: 64 does not split
 * evenly, and M0 wins over the largest batch: 22 each (66), not 21 (63, below M0), as the
 * simulator and libcastor do (bsz_cap_local). */
static void realworld_apply__a_fixed_batch_keeps_m0_on_uneven_replicas(void **state)
{
    struct fixture *f = *state;
    char ids[8][CLOUD_ID_MAX];
    struct state_alloc *rows = NULL;
    size_t n = 0;
    double local;
    int accum;

    assert_int_equal(make_loop(f, 1), 0);
    assert_int_equal(
        call(f, "POST", "/v1/jobs", TOKEN_USER,
             "{\"name\": \"c\", \"command\": [\"train\"], \"workdir\": \"/w\", "
             "\"init_batch_size\": 64, \"max_batch_size\": 64, \"max_local_bsz\": 128, "
             "\"min_replicas\": 3, \"max_replicas\": 3}",
             NULL),
        201);
    tick(f, 0);
    assert_int_equal(live_instances(f, ids), 1);
    agent_register(f, ids[0], 3);
    tick(f, 10);
    job_config(f, "c", &local, &accum);
    assert_int_equal(state_alloc_get(f->st_spy, "c", &rows, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(rows[0].replicas, 3);
    state_allocs_free(rows, n);
    assert_float_equal(local, 22, 0);
    assert_int_equal(accum, 0);
}

/* Job name's state, from a fresh read. */
static enum state_job_state job_state(struct fixture *f, const char *name)
{
    struct state_job j;
    enum state_job_state s;

    assert_int_equal(state_job_get(f->st_spy, name, &j), 0);
    s = j.state;
    state_job_clear(&j);
    return s;
}

/* The apply writes a job's allocation and its state in two transactions: a daemon killed
 * between them (or a state move that failed) leaves a job pending with its replicas placed. The
 * next decision that keeps its placement puts its state right: running while it holds GPUs (its
 * hang watched, `castor jobs` saying so). */
static void realworld_apply__the_state_follows_the_allocation(void **state)
{
    struct fixture *f = *state;
    char ids[8][CLOUD_ID_MAX];

    assert_int_equal(make_loop(f, 1), 0);
    assert_int_equal(
        call(f, "POST", "/v1/jobs", TOKEN_USER,
             "{\"name\": \"c\", \"command\": [\"train\"], \"workdir\": \"/w\", "
             "\"init_batch_size\": 64, \"max_batch_size\": 64, \"max_local_bsz\": 128, "
             "\"min_replicas\": 3, \"max_replicas\": 3}",
             NULL),
        201);
    tick(f, 0);
    assert_int_equal(live_instances(f, ids), 1);
    agent_register(f, ids[0], 3);
    tick(f, 10);
    assert_int_equal(job_state(f, "c"), STATE_JOB_RUNNING);
    assert_int_equal(rows_on(f, "c", ids[0]), 1);
    /* the allocation committed, the move to running not: as a SIGKILL between them leaves it */
    assert_int_equal(state_job_set_state(f->st_spy, "c", STATE_JOB_PENDING, f->now), 0);
    tick(f, 10);
    assert_int_equal(rows_on(f, "c", ids[0]), 1); /* the same placement */
    assert_int_equal(job_state(f, "c"), STATE_JOB_RUNNING);
}

/* Job name's restarts, from a fresh read. */
static int job_restarts(struct fixture *f, const char *name)
{
    struct state_job j;
    int n;

    assert_int_equal(state_job_get(f->st_spy, name, &j), 0);
    n = j.restarts;
    state_job_clear(&j);
    return n;
}

/* A new configuration on the same placement (noisy gradients: a larger batch) restarts the
 * replicas of a job that takes it by restarting (the default), and is counted as a restart as a
 * move is; one whose workers take it in flight goes on, no restart counted. A restarting job whose
 * declared work left (samples) the change would speed up by less than the restart (6,400 samples,
 * about 20 s at 64 samples per 0.2 s step) keeps its configuration; an in-flight one with the
 * same work left takes the change. */
static void realworld_apply__a_new_configuration_restarts_only_restart_mode_jobs(void **state)
{
    struct fixture *f = *state;
    char ids[8][CLOUD_ID_MAX];
    const char *names[] = {"r", "i", "s", "t"};
    const int changes[] = {1, 1, 0, 1}, restarts[] = {1, 0, 0, 0};
    double local0[4], local1, local;
    int accum0[4], accum1, accum, before[4];

    assert_int_equal(make_loop(f, 1), 0);
    submit_job(f, "r", 1);
    submit_job_with(f, "i", 1, ", \"reconfigure\": \"in_flight\"");
    submit_job_with(f, "s", 1, ", \"samples\": 6400");
    submit_job_with(f, "t", 1, ", \"samples\": 6400, \"reconfigure\": \"in_flight\"");
    tick(f, 0);
    assert_int_equal(live_instances(f, ids), 1);
    agent_register(f, ids[0], 4);
    tick(f, 10);
    for (int k = 0; k < 4; k++) {
        job_config(f, names[k], &local0[k], &accum0[k]);
        before[k] = job_restarts(f, names[k]);
        report_accum(f, names[k], 1, local0[k], accum0[k], 0.2, 0, 0.5, 2000);
    }
    tick(f, 10);
    for (int k = 0; k < 4; k++) {
        job_config(f, names[k], &local1, &accum1);
        if (changes[k])
            assert_true(local1 * (accum1 + 1) > 2 * local0[k] * (accum0[k] + 1));
        else
            assert_true(local1 == local0[k] && accum1 == accum0[k]);
        assert_int_equal(job_restarts(f, names[k]), before[k] + restarts[k]);
    }
    /* no change: no restart */
    tick(f, 10);
    for (int k = 0; k < 4; k++) {
        job_config(f, names[k], &local, &accum);
        assert_int_equal(job_restarts(f, names[k]), before[k] + restarts[k]);
    }
}

/* A job of a family that has not reported starts with the family's model (what its other jobs
 * measured, a finished one's included: has_model, the largest replica count they ran) and the
 * family's start statistics (their first, not their latest); a job of another family and one
 * without a family start from nothing. Once the job reports, its own statistics and its own
 * measurement of a configuration win, and the family's other configurations stay in its fit. */
static void realworld_observe__a_family_shares_its_model(void **state)
{
    struct fixture *f = *state;
    const struct snapshot *s;
    const struct tput_point one = {1, 1, 64};

    submit_job_with(f, "a", 8, ", \"family\": \"resnet50/t4\"");
    report_one(f, "a", 1, 64, 0.2, 0.0, 0.5, 2.0);
    report_one(f, "a", 4, 32, 0.14, 0.04, 0.9, 3.0); /* later statistics: not the start */
    assert_int_equal(state_job_finish(f->st, "a", NAN, f->now), 0);
    submit_job_with(f, "b", 8, ", \"family\": \"resnet50/t4\"");
    submit_job_with(f, "c", 8, ", \"family\": \"resnet50/v100\"");
    submit_job(f, "d", 8);
    f->now += 10;
    assert_int_equal(provider_observe(&f->prov, &s), 0);
    assert_int_equal(s->njobs, 3);
    assert_string_equal(s->jobs[0].name, "b");
    assert_int_equal(s->jobs[0].has_model, 1);
    assert_int_equal(s->jobs[0].max_profiled_replicas, 4);
    assert_true(s->jobs[0].grad.sqr == 0.5 && s->jobs[0].grad.var == 2.0);
    assert_float_equal(tput_step_time(&s->jobs[0].tput, &one, 0), 0.2, 0.03);
    for (int k = 1; k < 3; k++) {
        assert_int_equal(s->jobs[k].has_model, 0);
        assert_int_equal(s->jobs[k].max_profiled_replicas, 0);
        assert_true(s->jobs[k].grad.sqr == GRAD_PARAMS_NONE.sqr &&
                    s->jobs[k].grad.var == GRAD_PARAMS_NONE.var);
    }
    /* a restarted world gives it the family's model again at once */
    realworld_free(f->rw);
    assert_int_equal(make_world(f), 0);
    assert_int_equal(provider_observe(&f->prov, &s), 0);
    assert_int_equal(s->jobs[0].has_model, 1);
    assert_int_equal(s->jobs[0].max_profiled_replicas, 4);
    /* b measures one GPU itself, slower than a did: its own figures win */
    report_one(f, "b", 1, 64, 0.4, 0.0, 0.1, 0.4);
    f->now += 10;
    assert_int_equal(provider_observe(&f->prov, &s), 0);
    assert_true(s->jobs[0].grad.sqr == 0.1 && s->jobs[0].grad.var == 0.4);
    assert_int_equal(s->jobs[0].max_profiled_replicas, 4); /* a's four GPUs still in the fit */
    /* nearer its own 0.4 s than a's 0.2 s at one GPU (a's four GPUs still pull the fit) */
    assert_true(tput_step_time(&s->jobs[0].tput, &one, 0) > 0.3);
}

/* A job's length reaches the decide step: the snapshot's progress_target is samples / M0 (in
 * iterations at M0, as progress is), 0 (unknown) for a job that declares none. */
static void realworld_observe__samples_become_the_progress_target(void **state)
{
    struct fixture *f = *state;
    const struct snapshot *s;

    assert_int_equal(make_loop(f, 1), 0);
    submit_job_with(f, "a", 4, ", \"samples\": 1.28e8");
    submit_job(f, "b", 4);
    assert_int_equal(provider_observe(&f->prov, &s), 0);
    assert_int_equal(s->njobs, 2); /* in submission order */
    assert_string_equal(s->jobs[0].name, "a");
    assert_true(s->jobs[0].progress_target == 2e6); /* 1.28e8 samples at M0 = 64 */
    assert_string_equal(s->jobs[1].name, "b");
    assert_true(s->jobs[1].progress_target == 0);
}

/* What the owner asked for reaches the decide step: req_replicas is the spec's `replicas` (the
 * gang minimum when not given), with the deadline beside it (0: none). */
static void realworld_observe__requested_replicas_reach_the_snapshot(void **state)
{
    struct fixture *f = *state;
    const struct snapshot *s;

    assert_int_equal(make_loop(f, 1), 0);
    submit_job_with(f, "a", 8, ", \"replicas\": 6, \"deadline\": 1.9e9");
    submit_job_with(f, "b", 8, ", \"min_replicas\": 3");
    assert_int_equal(provider_observe(&f->prov, &s), 0);
    assert_int_equal(s->njobs, 2);
    assert_int_equal(s->jobs[0].req_replicas, 6);
    assert_true(s->jobs[0].deadline == 1.9e9);
    assert_int_equal(s->jobs[1].req_replicas, 3);
    assert_true(s->jobs[1].deadline == 0);
}

/* A job that reported one GPU only and its measured all-reduce time (sync_prior 0.3 s, slower
 * than its 0.2 s step): the controller's fit predicts two GPUs of a node to pay it, instead of
 * assuming synchronisation free. */
static void realworld_observe__sync_prior_reaches_the_fit(void **state)
{
    struct fixture *f = *state;
    char ids[8][CLOUD_ID_MAX];
    const struct snapshot *s;
    struct tput_point one = {1, 1, 64}, two = {1, 2, 64};
    static const char report[] =
        "{\"configs\": [{\"nodes\": 1, \"replicas\": 1, \"local_bsz\": 64, \"accum_steps\": 0,"
        " \"count\": 50, \"step_mean\": 0.2, \"step_sd\": 0.01}]%s}";
    char body[256];

    one_node_running(f, ids);
    snprintf(body, sizeof(body), report, "");
    assert_int_equal(call(f, "POST", "/v1/jobs/a/reports", TOKEN_JOB, body, NULL), 200);
    f->now += 10;
    assert_int_equal(provider_observe(&f->prov, &s), 0);
    assert_int_equal(s->jobs[0].has_model, 1);
    assert_true(tput_step_time(&s->jobs[0].tput, &two, 0) < 0.21); /* free without a prior */

    snprintf(body, sizeof(body), report, ", \"sync_prior\": 0.3");
    assert_int_equal(call(f, "POST", "/v1/jobs/a/reports", TOKEN_JOB, body, NULL), 200);
    f->now += 10;
    assert_int_equal(provider_observe(&f->prov, &s), 0);
    assert_true(tput_step_time(&s->jobs[0].tput, &two, 0) >= 0.3);
    assert_float_equal(tput_step_time(&s->jobs[0].tput, &one, 0), 0.2, 0.01);
}

/* 1 when the world's snapshot now marks the spot offer unavailable. */
/* The job's failures, streak-free: its failures count and state, from the state. */
static void job_failures(struct fixture *f, const char *name, int *failures,
                         enum state_job_state *st, char *reason, size_t size)
{
    struct state_job j;

    assert_int_equal(state_job_get(f->st, name, &j), 0);
    *failures = j.failures;
    *st = j.state;
    snprintf(reason, size, "%s", j.failure ? j.failure : "");
    state_job_clear(&j);
}

/*
 * The hang watch: job h (hang_timeout 300 s, max_restarts 1) and job q (the watch off) report
 * steps once and then nothing. The controller is down for 400 s and comes back: nothing is taken
 * as hung before the restarted world has watched for 300 s itself. 350 s later h is taken as hung:
 * one failure counted (its replicas restart as attempt 1), with the reason; 350 s after that, no
 * progress between, a second failure in a row fails it and frees its GPUs. q, never watched, runs
 * on; a job that never reported a step is not watched either.
 */
static void realworld_observe__a_hung_job_restarts_then_fails(void **state)
{
    struct fixture *f = *state;
    char ids[8][CLOUD_ID_MAX], reason[STATE_FAILURE_MAX + 1];
    enum state_job_state st;
    struct state_alloc *rows = NULL;
    size_t n = 9;
    int failures = -1;

    assert_int_equal(make_loop(f, 1), 0);
    submit_job_with(f, "h", 1, ", \"hang_timeout\": 300, \"max_restarts\": 1");
    submit_job_with(f, "q", 1, ", \"hang_timeout\": 0");
    submit_job_with(f, "s", 1, ", \"hang_timeout\": 300");
    tick(f, 0);
    assert_int_equal(live_instances(f, ids), 1);
    agent_register(f, ids[0], 4);
    tick(f, 10);
    assert_int_equal(sql_int(f, "SELECT count(DISTINCT job_id) FROM allocations"), 3);
    report_one(f, "h", 1, 64, 0.2, 0, 0.5, 2.0);
    report_one(f, "q", 1, 64, 0.2, 0, 0.5, 2.0);

    /* the controller down 400 s, and back */
    realworld_free(f->rw);
    f->now += 400;
    assert_int_equal(make_world(f), 0);
    f->loop.provider = &f->prov;
    tick(f, 0);
    tick(f, 250);
    job_failures(f, "h", &failures, &st, reason, sizeof(reason));
    assert_int_equal(failures, 0);
    tick(f, 100);
    job_failures(f, "h", &failures, &st, reason, sizeof(reason));
    assert_int_equal(failures, 1);
    assert_int_equal(st, STATE_JOB_RUNNING);
    assert_string_equal(reason,
                        "no training step reported for 350 s (hang_timeout 300 s): taken as hung");
    assert_true(has_event(f, "h", "failure", NULL, "taken as hung: its replicas restart in 2 s"));
    tick(f, 300);
    job_failures(f, "h", &failures, &st, reason, sizeof(reason));
    assert_int_equal(failures, 1); /* 300 s since its restart: not yet */
    tick(f, 50);
    job_failures(f, "h", &failures, &st, reason, sizeof(reason));
    assert_int_equal(failures, 2);
    assert_int_equal(st, STATE_JOB_FAILED);
    assert_int_equal(state_alloc_get(f->st, "h", &rows, &n), 0);
    assert_int_equal(n, 0);
    state_allocs_free(rows, n);
    /* the others: the watch off, or never a step reported */
    job_failures(f, "q", &failures, &st, reason, sizeof(reason));
    assert_int_equal(failures, 0);
    assert_int_equal(st, STATE_JOB_RUNNING);
    job_failures(f, "s", &failures, &st, reason, sizeof(reason));
    assert_int_equal(failures, 0);
    assert_int_equal(st, STATE_JOB_RUNNING);
}

static enum state_node_state node_state(struct fixture *f, const char *id)
{
    struct state_node n;
    enum state_node_state st;

    assert_int_equal(state_node_get(f->st, id, &n), 0);
    st = n.state;
    state_node_clear(&n);
    return st;
}

/* A node whose agent never registers (a bad image): 300 s after its launch it is terminated with
 * its instance, and its offer is not launched again for a while (the fixed fleet of one on-demand
 * node launches nothing in the next ticks). */
static void realworld_reconcile__a_node_that_never_registers_is_terminated(void **state)
{
    struct fixture *f = *state;
    char ids[8][CLOUD_ID_MAX];

    assert_int_equal(make_loop(f, 1), 0);
    rewatch(f, 300, 0);
    submit_job(f, "a", 4);
    tick(f, 0);
    assert_int_equal(live_instances(f, ids), 1);
    tick(f, 290);
    assert_int_equal(node_state(f, ids[0]), STATE_NODE_BOOTING);
    tick(f, 20);
    assert_int_equal(node_state(f, ids[0]), STATE_NODE_TERMINATED);
    assert_int_equal(counts(f).terminate_calls, 1);
    assert_int_equal(live_instances(f, ids), 0);
    tick(f, 60);
    tick(f, 60);
    assert_int_equal(counts(f).launch_calls, 1); /* the offer is held back */
    assert_int_equal(metrics(f).node_losses[API_LOSS_UNREGISTERED], 1);
    assert_int_equal(metrics(f).node_losses[API_LOSS_SILENT], 0);
}

/* A node whose agent never registers and whose termination the cloud refuses for a while
 * (throttled) is asked again each tick, and counted once as a loss (castor_node_losses_total's
 * alert) and logged once as an error, not once a tick; and so is a stray. */
static void realworld_reconcile__a_node_refused_termination_is_counted_once(void **state)
{
    struct fixture *f = *state;
    char ids[8][CLOUD_ID_MAX];
    struct log *log = NULL;
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    const char *p;
    int said = 0;

    assert_non_null(mem);
    assert_int_equal(log_new(mem, LOG_INFO, &log), 0);
    realworld_free(f->rw);
    assert_int_equal(make_world_watching(f, log, 300, 0), 0);
    assert_int_equal(make_loop(f, 1), 0);
    submit_job(f, "a", 4);
    tick(f, 0);
    assert_int_equal(live_instances(f, ids), 1);
    assert_int_equal(cloud_fake_fail(&f->fake, "terminate", ERR_AGAIN, 2), 0);
    tick(f, 310);
    tick(f, 10);
    assert_int_equal(node_state(f, ids[0]), STATE_NODE_BOOTING); /* refused twice */
    tick(f, 10);
    assert_int_equal(node_state(f, ids[0]), STATE_NODE_TERMINATED);
    assert_int_equal(metrics(f).node_losses[API_LOSS_UNREGISTERED], 1);
    fflush(mem);
    for (p = text; (p = strstr(p, "did not register within")); p++)
        said++;
    assert_int_equal(said, 1);
    /* so is a stray */
    assert_int_equal(cloud_fake_inject(&f->fake, CLUSTER, OFFER_OD, "someone-else", ids[1]), 0);
    assert_int_equal(cloud_fake_fail(&f->fake, "terminate", ERR_AGAIN, 2), 0);
    assert_true(realworld_reconcile(f->rw) == 0 && realworld_reconcile(f->rw) == 0);
    assert_int_equal(metrics(f).node_losses[API_LOSS_STRAY], 0);
    assert_int_equal(realworld_reconcile(f->rw), 0);
    assert_int_equal(metrics(f).node_losses[API_LOSS_STRAY], 1);
    assert_int_equal(realworld_reconcile(f->rw), 0);
    assert_int_equal(metrics(f).node_losses[API_LOSS_STRAY], 1);
    realworld_free(f->rw);
    f->rw = NULL;
    log_free(log);
    fclose(mem);
    free(text);
    assert_int_equal(make_world(f), 0);
    f->loop.provider = &f->prov;
}

/* A ready node whose agent goes silent: heard from (a heartbeat) at +100 s, it stays; 120 s of
 * silence later it is fenced: its instance is terminated (asked again while the cloud refuses)
 * and its job waits on it until the instance is gone; then the node is terminated, the job loses
 * the allocation (its checkpoint kept) and the fixed fleet launches a replacement. A controller
 * that was down 500 s does not take its nodes' silence for theirs: they have 120 s from its return.
 */
static void realworld_reconcile__a_silent_node_is_terminated(void **state)
{
    struct fixture *f = *state;
    char ids[8][CLOUD_ID_MAX], gone[8][CLOUD_ID_MAX], path[128];
    struct state_alloc *rows = NULL;
    size_t n = 9;

    one_node_running(f, ids);
    rewatch(f, 0, 120);
    snprintf(path, sizeof(path), "/v1/nodes/%s/heartbeat", ids[0]);
    assert_int_equal(call(f, "POST", "/v1/jobs/a/checkpoint", TOKEN_JOB, "{\"progress\": 2}", NULL),
                     200);
    /* the controller down 500 s */
    realworld_free(f->rw);
    f->now += 500;
    assert_int_equal(make_world_watching(f, NULL, 0, 120), 0);
    f->loop.provider = &f->prov;
    tick(f, 0);
    tick(f, 100);
    assert_int_equal(node_state(f, ids[0]), STATE_NODE_READY);
    assert_int_equal(call(f, "POST", path, TOKEN_NODE, "{}", NULL), 200);
    tick(f, 110);
    assert_int_equal(node_state(f, ids[0]), STATE_NODE_READY);
    assert_int_equal(state_alloc_get(f->st, "a", &rows, &n), 0);
    assert_int_equal(n, 1);
    state_allocs_free(rows, n);
    /* silent: fenced. The cloud refuses the first termination: the node drains, and its job
     * waits on it (it is not placed anywhere else while its old replicas may run) */
    assert_int_equal(cloud_fake_fail(&f->fake, "terminate", ERR_IO, 1), 0);
    tick(f, 20);
    assert_int_equal(node_state(f, ids[0]), STATE_NODE_DRAINING);
    assert_int_equal(counts(f).terminate_calls, 1);
    assert_int_equal(state_alloc_get(f->st, "a", &rows, &n), 0);
    assert_int_equal(n, 1);
    state_allocs_free(rows, n);
    tick(f, 10); /* asked again: the instance goes */
    assert_int_equal(counts(f).terminate_calls, 2);
    assert_int_equal(live_instances(f, gone), 0);
    assert_int_equal(state_alloc_get(f->st, "a", &rows, &n), 0);
    assert_int_equal(n, 1);
    state_allocs_free(rows, n);
    tick(f, 10); /* gone: the node terminated, the job free to move */
    assert_int_equal(node_state(f, ids[0]), STATE_NODE_TERMINATED);
    assert_int_equal(state_alloc_get(f->st, "a", &rows, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(sql_int(f, "SELECT count(*) FROM jobs WHERE name = 'a' AND checkpoint_progress"
                                " = 2 AND state IN ('pending', 'running')"),
                     1); /* not lost */
    tick(f, 10);
    assert_int_equal(counts(f).launched, 2); /* the replacement */
    assert_true(has_event(f, "a", "node-lost", ids[0], "the node's agent has not been heard from"));
    assert_int_equal(metrics(f).node_losses[API_LOSS_SILENT], 1);
    assert_int_equal(metrics(f).node_losses[API_LOSS_GONE], 0); /* told once */
}

/* A heartbeat that reaches the API while the state cannot record it (a full disk; here the API's
 * connection may not write) still tells that the node lives: 210 s after the state last heard of
 * it, its heartbeat 110 s ago, it is not fenced; silent 130 s, it is. */
static void realworld_reconcile__a_node_heard_but_not_recorded_is_not_fenced(void **state)
{
    struct fixture *f = *state;
    char ids[8][CLOUD_ID_MAX], path[128];

    one_node_running(f, ids);
    rewatch(f, 0, 120);
    tick(f, 0);
    snprintf(path, sizeof(path), "/v1/nodes/%s/heartbeat", ids[0]);
    assert_int_equal(db_exec(state_db(f->st_api), "PRAGMA query_only = 1"), 0);
    tick(f, 100);
    assert_int_equal(call(f, "POST", path, TOKEN_NODE, "{}", NULL), 200);
    tick(f, 110);
    assert_int_equal(node_state(f, ids[0]), STATE_NODE_READY);
    assert_int_equal(rows_on(f, "a", ids[0]), 1);
    assert_int_equal(counts(f).terminate_calls, 0);
    tick(f, 20);
    assert_int_equal(node_state(f, ids[0]), STATE_NODE_DRAINING);
    assert_int_equal(counts(f).terminate_calls, 1);
    assert_int_equal(db_exec(state_db(f->st_api), "PRAGMA query_only = 0"), 0);
}

/* While the state cannot be written (a full disk; here the loop's connection may not write), no
 * node is terminated or fenced for its silence, what the state says of its agents being stale,
 * and the log says so once; once writes work again, and said so, silence is timed from then. */
static void realworld_reconcile__no_fence_while_the_state_cannot_be_written(void **state)
{
    struct fixture *f = *state;
    char ids[8][CLOUD_ID_MAX], *text = NULL, *at;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    struct log *log = NULL;

    assert_non_null(mem);
    assert_int_equal(log_new(mem, LOG_INFO, &log), 0);
    one_node_running(f, ids);
    realworld_free(f->rw);
    assert_int_equal(make_world_watching(f, log, 60, 120), 0);
    f->loop.provider = &f->prov;
    tick(f, 0);
    /* a second instance, launched, whose agent never registers */
    assert_int_equal(state_intent_record(f->st, CLUSTER "-0123456789abcdef", OFFER_OD, 1, f->now),
                     0);
    assert_int_equal(realworld_reconcile(f->rw), 0);
    assert_int_equal(counts(f).launched, 2);
    assert_int_equal(db_exec(state_db(f->st), "PRAGMA query_only = 1"), 0);
    f->now += 200;
    realworld_reconcile(f->rw);
    f->now += 60;
    realworld_reconcile(f->rw);
    assert_int_equal(node_state(f, ids[0]), STATE_NODE_READY);
    assert_int_equal(counts(f).terminate_calls, 0);
    assert_int_equal(metrics(f).node_losses[API_LOSS_SILENT], 0);
    assert_int_equal(db_exec(state_db(f->st), "PRAGMA query_only = 0"), 0);
    f->now += 10;
    assert_int_equal(realworld_reconcile(f->rw), 0); /* writes work: timed from now */
    assert_int_equal(node_state(f, ids[0]), STATE_NODE_READY);
    assert_int_equal(counts(f).terminate_calls, 0);
    f->now += 130;
    assert_int_equal(realworld_reconcile(f->rw), 0);
    assert_int_equal(node_state(f, ids[0]), STATE_NODE_DRAINING);
    fflush(mem);
    assert_non_null(at = strstr(text, "the state cannot be written"));
    assert_null(strstr(at + 1, "the state cannot be written")); /* once */
    assert_non_null(strstr(text, "the state can be written again"));
    realworld_free(f->rw);
    f->rw = NULL;
    assert_int_equal(make_world(f), 0);
    f->loop.provider = &f->prov;
    log_free(log);
    fclose(mem);
    free(text);
}

/* A controller stopped for 500 s in its wait (SIGSTOP, a frozen machine: its API heard nothing
 * either) does not take its nodes' silence for theirs: they have the heartbeat timeout from its
 * return, as after a restart; a node that stays silent that long is fenced then. */
static void realworld_observe__a_paused_controller_keeps_its_nodes(void **state)
{
    struct fixture *f = *state;
    char ids[8][CLOUD_ID_MAX], path[128];

    one_node_running(f, ids);
    make_world_timed(f, 120, 10);
    snprintf(path, sizeof(path), "/v1/nodes/%s/heartbeat", ids[0]);
    tick(f, 0);
    assert_int_equal(call(f, "POST", path, TOKEN_NODE, "{}", NULL), 200);
    tick(f, 0);
    f->pause = 500;
    tick(f, 0); /* 510 s since the heartbeat */
    assert_int_equal(node_state(f, ids[0]), STATE_NODE_READY);
    assert_int_equal(rows_on(f, "a", ids[0]), 1);
    for (int i = 0; i < 11; i++) /* 110 s more */
        tick(f, 0);
    assert_int_equal(node_state(f, ids[0]), STATE_NODE_READY);
    tick(f, 0);
    tick(f, 0); /* 130 s of silence since the return */
    assert_int_equal(node_state(f, ids[0]), STATE_NODE_DRAINING);
}

/* The ticks are timed on the timer: a wall clock stepped back an hour during a wait (NTP) does
 * not hold the next tick back; a reload that shortens the interval (the wait woken, ERR_AGAIN)
 * ends the wait by its start plus the new interval, not the old deadline. */
static void realworld_wait__on_the_timer_and_the_new_interval(void **state)
{
    struct fixture *f = *state;
    double t;

    assert_int_equal(make_loop(f, 0), 0);
    make_world_timed(f, 0, 10);
    tick(f, 0);
    t = f->mono;
    f->step = -3600;
    tick(f, 0);
    assert_true(f->mono == t + 10);
    tick(f, 0);
    assert_true(f->mono == t + 20);
    f->loop.interval = 600;
    tick(f, 0);
    t = f->mono;
    f->interrupt = 20;
    assert_int_equal(loop_tick(&f->loop), ERR_AGAIN); /* a reload, 20 s into the wait */
    assert_true(f->mono == t + 20);
    f->loop.interval = 5;
    tick(f, 0); /* at once: 5 s have passed since the wait began */
    assert_true(f->mono == t + 20);
    tick(f, 0);
    assert_true(f->mono == t + 25);
}

/* A static node registered with the body's extras (", \"key\": value...") if any. */
static void agent_register_with(struct fixture *f, const char *id, int gpus, const char *more)
{
    char body[200];

    snprintf(body, sizeof(body), "{\"instance_id\": \"%s\", \"gpus\": %d%s}", id, gpus, more);
    assert_int_equal(call(f, "POST", "/v1/nodes", TOKEN_NODE, body, NULL), 201);
}

/* How many allocation rows job name has on node id. */
static size_t rows_on(struct fixture *f, const char *name, const char *id)
{
    struct state_alloc *rows = NULL;
    size_t n = 0, on = 0;

    assert_int_equal(state_alloc_get(f->st, name, &rows, &n), 0);
    for (size_t r = 0; r < n; r++)
        on += strcmp(rows[r].node, id) == 0;
    state_allocs_free(rows, n);
    return on;
}

/* Static node static-1 (with the registration's extras), the fixed fleet of none, a heartbeat
 * timeout of 120 s, and job "a" placed on it; the last tick at T0 + 10. */
static void static_node_running(struct fixture *f, const char *more)
{
    assert_int_equal(make_loop(f, 0), 0);
    rewatch(f, 0, 120);
    agent_register_with(f, "static-1", 4, more);
    submit_job_with(f, "a", 4, ", \"hang_timeout\": 100");
    tick(f, 0);
    tick(f, 10);
    assert_int_equal(rows_on(f, "a", "static-1"), 1);
}

/* A static node (registered by its agent, not launched) that goes silent without a self-fence is
 * left out of the schedulable nodes and never terminated, and its job waits where it is: castor
 * cannot stop the replicas there, which may still run. Its silence is not the job's hang. Heard
 * from again, the job goes on where it was. */
static void realworld_observe__a_silent_static_node_keeps_its_job_waiting(void **state)
{
    struct fixture *f = *state;
    const struct snapshot *s;

    static_node_running(f, "");
    report_one(f, "a", 1, 64, 0.2, 0, 0.5, 2.0); /* watched for hangs from now */
    tick(f, 130);
    assert_int_equal(provider_observe(&f->prov, &s), 0);
    assert_int_equal(s->nnodes, 0);
    assert_int_equal(s->njobs, 0); /* not planned for: it waits */
    tick(f, 200);                  /* past the job's hang_timeout */
    assert_int_equal(rows_on(f, "a", "static-1"), 1);
    assert_int_equal(sql_int(f, "SELECT failures FROM jobs WHERE name = 'a'"), 0);
    assert_int_equal(node_state(f, "static-1"), STATE_NODE_READY);
    assert_int_equal(counts(f).terminate_calls, 0);
    assert_true(has_event(f, "a", "waiting", "static-1", "castor cannot stop its replicas"));
    assert_false(has_event(f, "a", "node-lost", NULL, ""));
    assert_int_equal(metrics(f).nodes_unfenced, 1);
    assert_int_equal(call(f, "POST", "/v1/nodes/static-1/heartbeat", TOKEN_NODE, "{}", NULL), 200);
    tick(f, 10);
    assert_int_equal(metrics(f).nodes_unfenced, 0);
    assert_int_equal(provider_observe(&f->prov, &s), 0);
    assert_int_equal(s->nnodes, 1);
    assert_int_equal(s->njobs, 1);
    tick(f, 10);
    assert_int_equal(rows_on(f, "a", "static-1"), 1);
}

/* Job a on one of two static nodes while the other's agent says replicas of an earlier
 * generation of a are alive there (its old replicas, still stopping): it counts in
 * castor_jobs_waiting_for_old_replicas at once; past its hang_timeout it is not taken as hung, and
 * once the wait has lasted 120 s a `waiting` event names the other node, once; when that node
 * says nothing of a is alive, the gauge drops and the hang watch counts again (failure 1). */
static void realworld_jobs__waiting_for_old_replicas_is_not_a_hang(void **state)
{
    struct fixture *f = *state;
    const char *beat = "{\"replicas\":[{\"job\":\"a\",\"generation\":\"0000000000000000\"}]}";
    char path[64], msg[96];
    const char *other;

    assert_int_equal(make_loop(f, 0), 0);
    rewatch(f, 0, 1000); /* (no node taken as silent here) */
    agent_register(f, "static-1", 4);
    agent_register(f, "static-2", 4);
    submit_job_with(f, "a", 4, ", \"hang_timeout\": 100");
    tick(f, 0);
    tick(f, 10);
    other = rows_on(f, "a", "static-1") ? "static-2" : "static-1";
    assert_int_equal(rows_on(f, "a", other), 0);
    /* a ran on the other node before (a node says alive only replicas of jobs it held) */
    {
        const char *here = strcmp(other, "static-1") == 0 ? "static-2" : "static-1";
        struct state_alloc was[] = {{(char *)other, 1, 0}}, is[] = {{(char *)here, 1, 0}};

        assert_int_equal(state_alloc_replace(f->st, "a", was, 1, f->now - 5), 0);
        assert_int_equal(state_alloc_replace(f->st, "a", is, 1, f->now - 4), 0);
    }
    snprintf(path, sizeof(path), "/v1/nodes/%s/heartbeat", other);
    report_one(f, "a", 1, 64, 0.2, 0, 0.5, 2.0); /* watched for hangs from now */
    assert_int_equal(call(f, "POST", path, TOKEN_NODE, beat, NULL), 200);
    assert_int_equal(metrics(f).jobs_waiting, 0);
    tick(f, 5);
    assert_int_equal(metrics(f).jobs_waiting, 1);
    assert_int_equal(sql_int(f, "SELECT count(*) FROM events WHERE kind = 'waiting'"), 0);
    tick(f, 145); /* past its hang_timeout (100 s), and waiting 150 s */
    tick(f, 50);
    assert_int_equal(sql_int(f, "SELECT failures FROM jobs WHERE name = 'a'"), 0);
    snprintf(msg, sizeof(msg), "once its old ones on %s have stopped", other);
    assert_true(has_event(f, "a", "waiting", other, msg));
    assert_int_equal(sql_int(f, "SELECT count(*) FROM events WHERE kind = 'waiting'"), 1);
    assert_int_equal(call(f, "POST", path, TOKEN_NODE, "{\"replicas\":[]}", NULL), 200);
    tick(f, 110); /* (past the timeout again, whatever the plan moved meanwhile) */
    assert_int_equal(metrics(f).jobs_waiting, 0);
    assert_int_equal(sql_int(f, "SELECT failures FROM jobs WHERE name = 'a'"), 1);
}

/* A silent static node whose agent fences itself (fence_s 150 s: its replicas stopped by then)
 * keeps its job waiting until the fence and its margin (10 s) have passed since it was last heard,
 * and then the job moves to another node. */
static void realworld_observe__a_self_fenced_static_node_lets_its_job_go(void **state)
{
    struct fixture *f = *state;

    static_node_running(f, ", \"fence_s\": 150");
    assert_int_equal(sql_int(f, "SELECT fence_s FROM nodes WHERE instance_id = 'static-1'"), 150);
    agent_register(f, "static-2", 4);
    tick(f, 125); /* T0 + 135: heard at T0, silent; static-2 heard at T0 + 10 */
    assert_int_equal(call(f, "POST", "/v1/nodes/static-2/heartbeat", TOKEN_NODE, "{}", NULL), 200);
    tick(f, 20);
    assert_int_equal(rows_on(f, "a", "static-1"), 1); /* T0 + 155: within the fence and margin */
    assert_int_equal(rows_on(f, "a", "static-2"), 0);
    assert_int_equal(call(f, "POST", "/v1/nodes/static-2/heartbeat", TOKEN_NODE, "{}", NULL), 200);
    tick(f, 4);
    assert_int_equal(rows_on(f, "a", "static-1"), 1); /* T0 + 159 */
    assert_int_equal(metrics(f).nodes_unfenced, 1);
    tick(f, 2); /* T0 + 161: past 150 + 10 */
    tick(f, 0);
    assert_int_equal(rows_on(f, "a", "static-1"), 0);
    assert_int_equal(rows_on(f, "a", "static-2"), 1);
    assert_true(has_event(f, "a", "node-lost", "static-1", "its self-fence"));
    assert_int_equal(metrics(f).nodes_unfenced, 0);
    assert_int_equal(node_state(f, "static-1"), STATE_NODE_READY);
    assert_int_equal(counts(f).terminate_calls, 0);
}

/* The operator says a silent static node is off (POST /v1/nodes/{id}/down, castor down): the node
 * is terminated and its job moves; its agent, if it runs, is told so; a new agent registers the
 * node again. A launched node cannot be taken down this way. */
static void realworld_observe__a_static_node_taken_down_lets_its_job_go(void **state)
{
    struct fixture *f = *state;

    static_node_running(f, "");
    agent_register(f, "static-2", 4);
    tick(f, 130);
    assert_int_equal(call(f, "POST", "/v1/nodes/static-2/heartbeat", TOKEN_NODE, "{}", NULL), 200);
    tick(f, 10);
    assert_int_equal(rows_on(f, "a", "static-1"), 1);
    assert_int_equal(call(f, "POST", "/v1/nodes/static-1/down", TOKEN_NODE, "{}", NULL), 403);
    assert_int_equal(call(f, "POST", "/v1/nodes/static-1/down", TOKEN_USER, "{\"x\": 1}", NULL),
                     400);
    assert_int_equal(call(f, "POST", "/v1/nodes/nope/down", TOKEN_USER, "", NULL), 404);
    assert_int_equal(rows_on(f, "a", "static-1"), 1);
    assert_int_equal(call(f, "POST", "/v1/nodes/static-1/down", TOKEN_USER, "", NULL), 200);
    assert_int_equal(node_state(f, "static-1"), STATE_NODE_TERMINATED);
    assert_true(has_event(f, "a", "node-lost", "static-1", "taken down by its operator"));
    assert_int_equal(call(f, "POST", "/v1/nodes/static-1/down", TOKEN_USER, "{}", NULL), 200);
    assert_int_equal(call(f, "POST", "/v1/nodes/static-2/heartbeat", TOKEN_NODE, "{}", NULL), 200);
    tick(f, 5);
    tick(f, 0);
    assert_int_equal(rows_on(f, "a", "static-1"), 0);
    assert_int_equal(rows_on(f, "a", "static-2"), 1);
    assert_int_equal(call(f, "POST", "/v1/nodes/static-1/heartbeat", TOKEN_NODE, "{}", NULL), 409);
    agent_register(f, "static-1", 4); /* a new agent: the node is back */
    assert_int_equal(node_state(f, "static-1"), STATE_NODE_READY);
    assert_int_equal(call(f, "POST", "/v1/nodes/static-1/heartbeat", TOKEN_NODE, "{}", NULL), 200);
}

/* A job with max_dollars is warned at 80% of it and failed when its share of its nodes' dollars
 * reaches it, its GPUs freed and the reason told; the job beside it without a limit goes on. */
static void realworld_observe__a_job_that_reaches_its_max_dollars_fails(void **state)
{
    struct fixture *f = *state;
    double share;

    assert_int_equal(make_loop(f, 0), 0);
    agent_register(f, "static-1", 4);
    submit_job_with(f, "a", 4, ", \"max_dollars\": 2");
    submit_job_with(f, "b", 4, "");
    tick(f, 0);
    tick(f, 10);
    assert_int_equal(rows_on(f, "a", "static-1") + rows_on(f, "b", "static-1"), 2);
    share = (double)sql_int(f, "SELECT replicas FROM allocations WHERE job_id ="
                               " (SELECT id FROM jobs WHERE name = 'a')") /
            4.0;
    /* static-1's hours: $1.70 for a's share (its GPUs of 4), then $0.31 more */
    assert_int_equal(state_cost_add(f->st, "static-1", f->now, f->now, 1.7 / share), 0);
    tick(f, 10);
    assert_true(has_event(f, "a", "warning", NULL, "of its max_dollars ($2.00)"));
    assert_int_equal(sql_int(f, "SELECT state = 'pending' OR state = 'running' FROM jobs"
                                " WHERE name = 'a'"),
                     1);
    assert_int_equal(state_cost_add(f->st, "static-1", f->now, f->now, 0.31 / share), 0);
    tick(f, 10);
    assert_int_equal(sql_int(f, "SELECT state = 'failed' FROM jobs WHERE name = 'a'"), 1);
    assert_true(has_event(f, "a", "failed", NULL, "which reaches its max_dollars ($2.00)"));
    assert_int_equal(rows_on(f, "a", "static-1"), 0);
    tick(f, 10);
    assert_int_equal(sql_int(f, "SELECT count(*) FROM jobs WHERE name = 'b' AND state IN"
                                " ('pending', 'running')"),
                     1);
    assert_false(has_event(f, "b", "warning", NULL, "max_dollars"));
}

/* The spend limit's periods, in UTC: a day from 00:00, a week from Monday, a month from its
 * first day (the values by Python's calendar.timegm). */
static void realworld_period__days_weeks_months(void **state)
{
    (void)state;
    /* 2024-05-01T12:00:00Z, a Wednesday */
    assert_true(realworld_period_start(1714564800, REALWORLD_DAY) == 1714521600);
    assert_true(realworld_period_next(1714564800, REALWORLD_DAY) == 1714608000);
    assert_true(realworld_period_start(1714564800, REALWORLD_WEEK) == 1714348800);
    assert_true(realworld_period_next(1714564800, REALWORLD_WEEK) == 1714953600);
    assert_true(realworld_period_start(1714564800, REALWORLD_MONTH) == 1714521600);
    assert_true(realworld_period_next(1714564800, REALWORLD_MONTH) == 1717200000);
    /* a leap day's last second; December into January; a period's first second is its own */
    assert_true(realworld_period_start(1709251199, REALWORLD_MONTH) == 1706745600);
    assert_true(realworld_period_next(1709251199, REALWORLD_MONTH) == 1709251200);
    assert_true(realworld_period_start(1702598400, REALWORLD_MONTH) == 1701388800);
    assert_true(realworld_period_next(1702598400, REALWORLD_MONTH) == 1704067200);
    assert_true(realworld_period_start(1714348800, REALWORLD_WEEK) == 1714348800);
    assert_true(realworld_period_start(1714521600, REALWORLD_DAY) == 1714521600);
}

/* Spent over the period's limit, castor rents nothing and terminates what it launched (its job
 * told; a warning at 80% before), until the next period, when it launches again. */
static void realworld_observe__the_spend_limit_stops_renting_until_the_next_period(void **state)
{
    struct fixture *f = *state;
    struct realworld_spend spend = {.dollars = 10, .period = REALWORLD_DAY};
    struct api_metrics m = {0};
    char ids[8][CLOUD_ID_MAX];
    int launched;

    one_node_running(f, ids);
    realworld_set_spend(f->rw, &spend);
    assert_int_equal(rows_on(f, "a", ids[0]), 1);
    assert_int_equal(state_cost_add(f->st, ids[0], f->now - 600, f->now, 8.5), 0);
    tick(f, 10);
    assert_int_equal(realworld_metrics(f->rw, &m), 0);
    assert_true(m.spend_limit == 10 && m.spend_period == 8.5);
    assert_int_equal(node_state(f, ids[0]), STATE_NODE_READY); /* under it: nothing stops */
    /* a cost row of yesterday does not count today */
    assert_int_equal(state_cost_add(f->st, ids[0], f->now - 86400 * 2, f->now - 86400, 50), 0);
    tick(f, 10);
    assert_int_equal(node_state(f, ids[0]), STATE_NODE_READY);
    assert_int_equal(state_cost_add(f->st, ids[0], f->now - 10, f->now, 2.0), 0);
    launched = counts(f).launched;
    tick(f, 10);
    assert_int_equal(node_state(f, ids[0]), STATE_NODE_TERMINATED);
    assert_int_equal(rows_on(f, "a", ids[0]), 0);
    assert_true(has_event(f, "a", "node-lost", ids[0], "spend_limit"));
    tick(f, 60);
    tick(f, 60);
    assert_int_equal(counts(f).launched, launched); /* nothing rented */
    assert_int_equal(sql_int(f, "SELECT count(*) FROM jobs WHERE name = 'a' AND state IN"
                                " ('pending', 'running')"),
                     1); /* the job waits */
    /* the next day: renting again */
    f->now = realworld_period_next(f->now, REALWORLD_DAY) + 5;
    tick(f, 0);
    tick(f, 10);
    assert_true(counts(f).launched > launched);
}

/* Over the spend limit, a node whose termination the cloud refuses for a while (throttled) is
 * asked again each tick, and its job is told once that its node goes, not once a tick. */
static void realworld_observe__the_spend_limit_tells_a_job_once(void **state)
{
    struct fixture *f = *state;
    struct realworld_spend spend = {.dollars = 10, .period = REALWORLD_DAY};
    const char *told = "SELECT count(*) FROM events WHERE kind = 'node-lost' AND message LIKE"
                       " '%spend_limit%'";
    char ids[8][CLOUD_ID_MAX];

    one_node_running(f, ids);
    realworld_set_spend(f->rw, &spend);
    assert_int_equal(state_cost_add(f->st, ids[0], f->now - 600, f->now, 12), 0);
    assert_int_equal(cloud_fake_fail(&f->fake, "terminate", ERR_AGAIN, 3), 0);
    tick(f, 10);
    tick(f, 10);
    tick(f, 10);
    assert_int_equal(node_state(f, ids[0]), STATE_NODE_READY); /* refused three times */
    tick(f, 10);
    assert_int_equal(node_state(f, ids[0]), STATE_NODE_TERMINATED);
    assert_int_equal(sql_int(f, told), 1);
    tick(f, 10);
    assert_int_equal(sql_int(f, told), 1);
}

/* Over the spend limit, a launch whose answer never came (its intent pending) is not asked again:
 * nothing is launched only to be terminated in the same tick. */
static void realworld_reconcile__no_launch_asked_again_over_the_spend_limit(void **state)
{
    struct fixture *f = *state;
    struct realworld_spend spend = {.dollars = 10, .period = REALWORLD_DAY};
    char ids[8][CLOUD_ID_MAX];
    long calls;

    one_node_running(f, ids);
    realworld_set_spend(f->rw, &spend);
    assert_int_equal(state_intent_record(f->st, "late-answer", OFFER_OD, 1, f->now), 0);
    assert_int_equal(state_cost_add(f->st, ids[0], f->now - 10, f->now, 11.0), 0);
    calls = counts(f).launch_calls;
    tick(f, 10);
    assert_int_equal(counts(f).launch_calls, calls);
    assert_int_equal(live_instances(f, ids), 0);
}

/* A launched node cannot be taken down by its operator: castor fences it itself. */
static void realworld_observe__a_launched_node_is_not_taken_down(void **state)
{
    struct fixture *f = *state;
    char ids[8][CLOUD_ID_MAX], path[128];

    one_node_running(f, ids);
    snprintf(path, sizeof(path), "/v1/nodes/%s/down", ids[0]);
    assert_int_equal(call(f, "POST", path, TOKEN_USER, "", NULL), 409);
    assert_int_equal(node_state(f, ids[0]), STATE_NODE_READY);
    assert_int_equal(rows_on(f, "a", ids[0]), 1);
}

/* How many events of kind job name has. */
static long long events_of(struct fixture *f, const char *name, const char *kind)
{
    char sql[256];

    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM events e JOIN jobs j ON j.id = e.job_id"
             " WHERE j.name = '%s' AND e.kind = '%s'",
             name, kind);
    return sql_int(f, sql);
}

/* A node fenced for its silence whose termination the cloud refused, and then the daemon
 * restarts: the new one knows the fence from the state (draining without a notice), asks the
 * cloud again each tick, and keeps the node's job off every other node (here a static one) until
 * the instance is gone, even in a tick whose reconciliation failed; then the job moves. The fence
 * was told (an event, a loss) before the restart: not again. */
static void realworld_reconcile__a_fence_outlives_a_restart(void **state)
{
    struct fixture *f = *state;
    char ids[8][CLOUD_ID_MAX], left[8][CLOUD_ID_MAX];

    one_node_running(f, ids);
    rewatch(f, 0, 120);
    tick(f, 100);
    tick(f, 100);
    assert_int_equal(cloud_fake_fail(&f->fake, "terminate", ERR_AGAIN, 1), 0);
    tick(f, 30); /* silent for over 120 s: fenced; the cloud refuses the termination */
    assert_int_equal(node_state(f, ids[0]), STATE_NODE_DRAINING);
    assert_int_equal(counts(f).terminate_calls, 1);
    assert_int_equal(events_of(f, "a", "node-lost"), 1);
    /* the daemon restarts; the cloud refuses twice more; a static node is there to take the job */
    rewatch(f, 0, 120);
    assert_int_equal(cloud_fake_fail(&f->fake, "terminate", ERR_AGAIN, 2), 0);
    agent_register_with(f, "static-1", 4, "");
    assert_int_equal(cloud_fake_fail(&f->fake, "list", ERR_AGAIN, 1), 0);
    tick(f, 20); /* the cloud cannot list: nothing reconciled, the state's fence holds the job */
    assert_int_equal(counts(f).terminate_calls, 1);
    assert_int_equal(rows_on(f, "a", ids[0]), 1);
    assert_int_equal(rows_on(f, "a", "static-1"), 0);
    for (int i = 0; i < 2; i++) {
        tick(f, 20);
        assert_int_equal(counts(f).terminate_calls, 2 + i); /* asked again */
        assert_int_equal(node_state(f, ids[0]), STATE_NODE_DRAINING);
        assert_int_equal(rows_on(f, "a", ids[0]), 1);
        assert_int_equal(rows_on(f, "a", "static-1"), 0); /* its old replicas may still run */
    }
    tick(f, 20); /* the cloud takes it: the instance goes */
    assert_int_equal(counts(f).terminate_calls, 4);
    for (int i = 0, k = live_instances(f, left); i < k; i++)
        assert_string_not_equal(left[i], ids[0]);
    assert_int_equal(rows_on(f, "a", "static-1"), 0);
    tick(f, 20); /* gone: the node terminated, the job moves */
    assert_int_equal(node_state(f, ids[0]), STATE_NODE_TERMINATED);
    assert_int_equal(rows_on(f, "a", "static-1"), 1);
    assert_int_equal(events_of(f, "a", "node-lost"), 1); /* told once */
    assert_int_equal(metrics(f).node_losses[API_LOSS_GONE], 0);
    assert_int_equal(metrics(f).node_losses[API_LOSS_SILENT], 0); /* counted before the restart */
}

/* A node drained by a preemption notice (here its agent's, deadline in 120 s) that the cloud
 * never carries out (a false alarm, a live migration): 600 s past the deadline castor terminates
 * the instance itself, asked again while the cloud refuses; before that it is left draining. */
static void realworld_reconcile__a_notice_never_carried_out_is_terminated(void **state)
{
    struct fixture *f = *state;
    char ids[8][CLOUD_ID_MAX], left[8][CLOUD_ID_MAX], path[128], body[64];
    long calls;

    one_node_running(f, ids);
    snprintf(path, sizeof(path), "/v1/nodes/%s/notice", ids[0]);
    snprintf(body, sizeof(body), "{\"deadline\": %.0f}", f->now + 120);
    assert_int_equal(call(f, "POST", path, TOKEN_NODE, body, NULL), 200);
    calls = counts(f).terminate_calls;
    tick(f, 10);
    assert_int_equal(node_state(f, ids[0]), STATE_NODE_DRAINING);
    assert_int_equal(rows_on(f, "a", ids[0]), 0); /* its job left it at the notice */
    tick(f, 700);                                 /* 590 s past the deadline: still draining */
    assert_int_equal(node_state(f, ids[0]), STATE_NODE_DRAINING);
    assert_int_equal(counts(f).terminate_calls, calls);
    assert_int_equal(cloud_fake_fail(&f->fake, "terminate", ERR_AGAIN, 1), 0);
    tick(f, 20); /* 610 s past it: terminated, which the cloud refuses once */
    assert_int_equal(counts(f).terminate_calls, calls + 1);
    assert_int_equal(node_state(f, ids[0]), STATE_NODE_DRAINING);
    tick(f, 10); /* asked again */
    assert_int_equal(counts(f).terminate_calls, calls + 2);
    assert_int_equal(node_state(f, ids[0]), STATE_NODE_TERMINATED);
    for (int i = 0, k = live_instances(f, left); i < k; i++)
        assert_string_not_equal(left[i], ids[0]);
}

static int spot_unavailable(struct fixture *f)
{
    const struct snapshot *s = NULL;
    int o = -1;

    assert_int_equal(realworld_offer_index(f->rw, OFFER_SPOT, &o), 0);
    assert_int_equal(provider_observe(&f->prov, &s), 0);
    return s->offers[o].unavailable;
}

/* The room the quotas leave the spot offer in the snapshot (-1: not capped). */
static int spot_room(struct fixture *f)
{
    const struct snapshot *s = NULL;
    int o = -1;

    assert_int_equal(realworld_offer_index(f->rw, OFFER_SPOT, &o), 0);
    assert_int_equal(provider_observe(&f->prov, &s), 0);
    return s->offers[o].capped ? s->offers[o].room : -1;
}

/* castor's planner rents the cheapest offer (spot); when the cloud refuses it for capacity the
 * offer is marked unavailable and the next round fails over to on-demand, never asking spot
 * again while the mark lasts (600 s); then spot is offered again. */
static void realworld_resize__capacity_fails_over_to_another_offer(void **state)
{
    struct fixture *f = *state;

    assert_int_equal(make_loop_with(f, "castor", 0, 0), 0);
    submit_job(f, "a", 4);
    assert_int_equal(cloud_fake_fail(&f->fake, "launch", ERR_CAPACITY, 1), 0);
    tick(f, 0);
    assert_int_equal(f->tried[1], 1); /* spot asked once, refused: nothing made */
    assert_int_equal(f->tried[0], 0);
    assert_int_equal(counts(f).launched, 0);
    assert_int_equal(sql_int(f, "SELECT count(*) FROM launch_intents WHERE state = 'failed'"), 1);
    tick(f, 10);
    assert_int_equal(f->tried[1], 1);
    assert_true(f->tried[0] >= 1); /* failed over to on-demand */
    assert_true(counts(f).launched >= 1);
    f->now += 300;
    assert_int_equal(spot_unavailable(f), 1);
    f->now += 301;
    assert_int_equal(spot_unavailable(f), 0);
}

/* A quota refusal holds the offer beyond the capacity mark: still unavailable after 600 s and
 * never asked, until the hold of 3600 s ends; then the fleet launches again. */
static void realworld_resize__quota_holds_the_offer_for_an_hour(void **state)
{
    struct fixture *f = *state;

    assert_int_equal(make_loop_with(f, "fixed", 1, 2), 0);
    submit_job(f, "a", 4);
    assert_int_equal(cloud_fake_fail(&f->fake, "launch", ERR_QUOTA, 1), 0);
    tick(f, 0);
    assert_int_equal(f->tried[1], 1);
    assert_int_equal(counts(f).launched, 0);
    tick(f, 700);
    assert_int_equal(f->tried[1], 1);
    assert_int_equal(spot_unavailable(f), 1);
    tick(f, 2800); /* T0 + 3500 */
    assert_int_equal(f->tried[1], 1);
    tick(f, 101);
    assert_int_equal(f->tried[1], 3);
    assert_int_equal(counts(f).launched, 2);
}

/* A quota hold ends early when an instance of the same market goes (its vCPUs are free again):
 * here a stray spot instance that reconciliation terminates; an on-demand one going would not
 * release it. */
static void realworld_resize__quota_released_by_a_termination_in_its_market(void **state)
{
    struct fixture *f = *state;
    char id[CLOUD_ID_MAX];

    assert_int_equal(make_loop_with(f, "fixed", 1, 2), 0);
    submit_job(f, "a", 4);
    assert_int_equal(cloud_fake_fail(&f->fake, "launch", ERR_QUOTA, 1), 0);
    tick(f, 0);
    assert_int_equal(f->tried[1], 1);
    assert_int_equal(cloud_fake_inject(&f->fake, CLUSTER, OFFER_OD, "stray-od", id), 0);
    tick(f, 10);
    assert_int_equal(counts(f).terminate_calls, 1);
    assert_int_equal(f->tried[1], 1); /* an on-demand instance freed no spot quota */
    assert_int_equal(cloud_fake_inject(&f->fake, CLUSTER, OFFER_SPOT, "stray-spot", id), 0);
    tick(f, 10);
    assert_int_equal(counts(f).terminate_calls, 2);
    assert_int_equal(f->tried[1], 3); /* released within the tick that terminated it */
    assert_int_equal(counts(f).launched, 2);
}

/* The world made again, logging into a memory stream (*text, flushed by the caller). */
static struct log *relog(struct fixture *f, FILE **mem, char **text, size_t *len)
{
    struct log *log = NULL;

    assert_non_null(*mem = open_memstream(text, len));
    assert_int_equal(log_new(*mem, LOG_INFO, &log), 0);
    realworld_free(f->rw);
    assert_int_equal(make_world_logged(f, log), 0);
    f->loop.provider = &f->prov;
    return log;
}

/* The world made again without a log; the log and its stream closed, the text freed (after the
 * close, which may move it). */
static void unlog(struct fixture *f, struct log *log, FILE *mem, char **text)
{
    realworld_free(f->rw);
    f->rw = NULL;
    assert_int_equal(make_world(f), 0);
    log_free(log);
    fclose(mem);
    free(*text);
    *text = NULL;
}

/* Submit `count` jobs of one GPU named from `first` on ("b", "c", ...), then two ticks. */
static void one_gpu_jobs(struct fixture *f, char first, int count)
{
    for (int i = 0; i < count; i++) {
        char name[2] = {(char)(first + i), 0};

        submit_job(f, name, 4);
    }
    tick(f, 10);
    tick(f, 10);
}

/* An offer the cloud cannot price (a machine type missing from the catalog and the price table,
 * a spot price read that fails) is not launched by castor's planner, which would weigh it as
 * free (before, its price stood as $0 and spot, the unpriced offer here, took every launch):
 * - never priced: the first job's node comes from on-demand, and the log says once why spot is
 *   not used;
 * - priced: the log says so, and the next node (five more jobs of one GPU) is spot's, the
 *   cheaper;
 * - a read that gives no price within the hour after the last one: that price stands (a throttled
 *   read does not send the fleet to on-demand), and the next node is spot's again;
 * - no price for more than an hour: unknown again, told again, and the next node is on-demand. */
static void realworld_resize__an_unpriced_offer_is_not_launched(void **state)
{
    struct fixture *f = *state;
    char *text = NULL;
    size_t len = 0;
    FILE *mem = NULL;
    struct log *log = relog(f, &mem, &text, &len);
    struct api_metrics m = {0};
    int spot, od;

    f->spot_unpriced = 1;
    assert_int_equal(make_loop_with(f, "castor", 0, 0), 0);
    one_gpu_jobs(f, 'a', 1);
    assert_int_equal(f->tried[1], 0);
    assert_true(f->tried[0] >= 1);
    assert_int_equal(realworld_metrics(f->rw, &m), 0); /* what /metrics shows of the prices */
    assert_int_equal(m.nprices, 2);
    for (size_t i = 0; i < m.nprices; i++)
        assert_true(strcmp(m.prices[i].offer, OFFER_SPOT) == 0 ? isnan(m.prices[i].price)
                                                               : m.prices[i].price == 2.0);
    f->spot_unpriced = 0;
    od = f->tried[0];
    one_gpu_jobs(f, 'b', 5); /* six jobs of one GPU: a second node */
    assert_true(f->tried[1] >= 1);
    assert_int_equal(f->tried[0], od);
    f->spot_unpriced = 1;
    f->now += 3000; /* the last price 3020 s old at the next read */
    spot = f->tried[1];
    one_gpu_jobs(f, 'g', 4); /* ten: a third node */
    assert_true(f->tried[1] > spot);
    assert_int_equal(f->tried[0], od);
    f->now += 3600;
    spot = f->tried[1];
    one_gpu_jobs(f, 'k', 4); /* fourteen: a fourth node */
    assert_int_equal(f->tried[1], spot);
    assert_true(f->tried[0] > od);
    assert_int_equal(fflush(mem), 0);
    {
        const char *said = strstr(text, OFFER_SPOT " has no known price"), *again;

        assert_non_null(said);
        assert_non_null(again = strstr(said, OFFER_SPOT " is priced again: $0.8000/h"));
        said = strstr(again, OFFER_SPOT " has no known price"); /* after the hour, not before */
        assert_non_null(said);
        assert_null(strstr(said + 1, OFFER_SPOT " has no known price"));
    }
    unlog(f, log, mem, &text);
}

/* A fixed fleet on an on-demand offer the cloud cannot price, under a spend limit: its nodes
 * would count $0 against the limit, so none is launched, the job waits, and the log says why,
 * once. Without the limit the fleet launches it (its nodes count $0, as the log says).
 * A spot offer with a max_price is counted at it and stays launchable (castor's planner still
 * does not launch an unpriced offer, which it would weigh as free). */
static void realworld_resize__a_spend_limit_launches_no_unpriced_offer(void **state)
{
    struct fixture *f = *state;
    struct realworld_spend spend = {.dollars = 100, .period = REALWORLD_DAY};
    char *text = NULL;
    size_t len = 0;
    FILE *mem = NULL;
    struct log *log = relog(f, &mem, &text, &len);

    f->od_unpriced = 1;
    realworld_set_spend(f->rw, &spend);
    assert_int_equal(make_loop(f, 1), 0);
    submit_job(f, "a", 4);
    tick(f, 0);
    tick(f, 60);
    tick(f, 60);
    tick(f, 60);
    assert_int_equal(f->tried[0] + f->tried[1], 0);
    assert_int_equal(sql_int(f, "SELECT count(*) FROM jobs WHERE name = 'a' AND state = 'pending'"),
                     1);
    assert_int_equal(fflush(mem), 0);
    {
        const char *said = strstr(text, OFFER_OD " has no known price: no fleet launches it while "
                                                 "the spend_limit is set");

        assert_non_null(said);
        assert_null(strstr(said + 1, OFFER_OD " has no known price"));
    }
    /* the limit lifted: the fixed fleet launches its node */
    realworld_set_spend(f->rw, NULL);
    tick(f, 60);
    assert_int_equal(f->tried[0], 1);
    unlog(f, log, mem, &text);
}

/* And a job that waits because no offer can be launched is told so, the unpriced offer's reason
 * among the others': castor's planner, the on-demand offer unpriced under a spend limit, no spot
 * quota. */
static void realworld_resize__the_unpriced_offer_is_a_reason_to_wait(void **state)
{
    struct fixture *f = *state;
    struct realworld_spend spend = {.dollars = 100, .period = REALWORLD_DAY};

    f->od_unpriced = 1;
    spot_quota(f, 0, 0);
    realworld_set_spend(f->rw, &spend);
    assert_int_equal(make_loop_with(f, "castor", 0, 0), 0);
    submit_job(f, "a", 4);
    tick(f, 0);
    tick(f, 60);
    tick(f, 60);
    assert_int_equal(f->tried[0] + f->tried[1], 0);
    assert_true(has_event(f, "a", "waiting", NULL,
                          "no offer can be launched now (" OFFER_OD " has no known price, and the "
                          "spend_limit could not count its nodes; " OFFER_SPOT ": quota"));
}

/* The configuration's price and discount (`offers:` price, discount) stand in for the cloud's
 * wherever castor counts one. On-demand at 75% off ($0.50 for the cloud's $2.00) is cheaper than
 * spot ($0.80, and preempted): castor's planner launches on-demand, and the node is recorded at
 * $0.50/h, the rate its costs accrue at. Then a spot offer the cloud cannot price, given $0.30
 * by the configuration, with on-demand at the cloud's $2.00 again: the next node is spot's,
 * recorded at $0.30/h. */
static void realworld_resize__configured_prices_stand_in(void **state)
{
    struct fixture *f = *state;
    const struct realworld_timeouts t = {TIMEOUT, 0, 0};
    struct realworld_offer off[2] = {{.name = OFFER_OD, .discount = 0.75, .preempt_rate = NAN},
                                     {.name = OFFER_SPOT, .preempt_rate = NAN}};
    int od;

    assert_int_equal(realworld_set_options(f->rw, &t, off, 2), 0);
    assert_int_equal(make_loop_with(f, "castor", 0, 0), 0);
    one_gpu_jobs(f, 'a', 1);
    assert_int_equal(f->tried[1], 0);
    assert_true((od = f->tried[0]) >= 1);
    assert_int_equal(sql_int(f, "SELECT count(*) FROM nodes WHERE price = 0.5"), od);

    off[0].discount = 0;
    off[1].price = 0.3;
    f->spot_unpriced = 1;
    assert_int_equal(realworld_set_options(f->rw, &t, off, 2), 0);
    one_gpu_jobs(f, 'b', 5); /* six jobs of one GPU: a second node */
    assert_int_equal(f->tried[0], od);
    assert_true(f->tried[1] >= 1);
    assert_int_equal(sql_int(f, "SELECT count(*) FROM nodes WHERE price = 0.3"), f->tried[1]);
}

/* An entry of the configuration's offers that names no offer of the cloud (a typo) is warned of
 * once, at the first read of the cloud's offers, and again after the options change; one that
 * names an offer is not. */
static void realworld_options__an_unknown_offer_is_told(void **state)
{
    struct fixture *f = *state;
    const struct realworld_timeouts t = {TIMEOUT, 0, 0};
    const struct realworld_offer off[2] = {{.name = "box/spto", .discount = 0.2},
                                           {.name = OFFER_SPOT, .preempt_rate = NAN}};
    char *text = NULL;
    size_t len = 0;
    FILE *mem = NULL;
    struct log *log = relog(f, &mem, &text, &len);
    const char *said;

    assert_int_equal(realworld_set_options(f->rw, &t, off, 2), 0);
    assert_int_equal(make_loop(f, 1), 0);
    tick(f, 0);
    tick(f, 10);
    assert_int_equal(realworld_set_options(f->rw, &t, off, 2), 0); /* a reload */
    tick(f, 10);
    assert_int_equal(fflush(mem), 0);
    said = strstr(text, "offers: box/spto is not an offer of the cloud");
    assert_non_null(said);
    said = strstr(said + 1, "offers: box/spto is not an offer of the cloud");
    assert_non_null(said);
    assert_null(strstr(said + 1, "offers: box/spto"));
    assert_null(strstr(text, "offers: " OFFER_SPOT));
    unlog(f, log, mem, &text);
}

/* A spot offer whose price rises above its max_price (the most a launch bids: the cloud would
 * refuse it, as EC2 refuses a bid below the spot price) is not asked: at $1.20 against $1.00, the
 * job's node is on-demand's and the log says why once; a read that gives no spot price leaves it
 * as it was (the next node on-demand's too, nothing said); at $0.80 again the log says so, and
 * the next node is spot's. */
static void realworld_resize__spot_above_its_max_price_is_not_asked(void **state)
{
    struct fixture *f = *state;
    char *text = NULL;
    size_t len = 0;
    FILE *mem = NULL;
    struct log *log = relog(f, &mem, &text, &len);
    const char *said;
    int od;

    assert_int_equal(cloud_fake_set_price(&f->fake, OFFER_SPOT, 1.2), 0);
    assert_int_equal(make_loop_with(f, "castor", 0, 0), 0);
    one_gpu_jobs(f, 'a', 1);
    assert_int_equal(f->tried[1], 0);
    assert_true(f->tried[0] >= 1);
    f->spot_unpriced = 1; /* a read without the spot price: still above its bid as far as known */
    one_gpu_jobs(f, 'b', 5); /* six jobs of one GPU: a second node */
    assert_int_equal(f->tried[1], 0);
    od = f->tried[0];
    f->spot_unpriced = 0;
    assert_int_equal(cloud_fake_set_price(&f->fake, OFFER_SPOT, 0.8), 0);
    one_gpu_jobs(f, 'g', 4); /* ten: a third node */
    assert_true(f->tried[1] >= 1);
    assert_int_equal(f->tried[0], od);
    assert_int_equal(fflush(mem), 0);
    said = strstr(text, OFFER_SPOT ": its spot price $1.2000/h is above its max_price $1.0000/h");
    assert_non_null(said);
    assert_null(strstr(said + 1, OFFER_SPOT ": its spot price $1.2000/h")); /* told once */
    assert_non_null(strstr(said, OFFER_SPOT ": its spot price $0.8000/h is below its max_price"));
    assert_null(strstr(text, "nan/h")); /* nothing said of the read without a price */
    unlog(f, log, mem, &text);
}

/* The fleet's dollars. */
static void costs_are_total(struct fixture *f, double fleet)
{
    double total = -1;

    assert_int_equal(state_cost_total(f->st, &total), 0);
    assert_float_equal(total, fleet, 1e-9);
}

/* The fleet's dollars and job a's. */
static void costs_are(struct fixture *f, double fleet, double job_a)
{
    struct state_job job;
    double total = -1;

    assert_int_equal(state_cost_total(f->st, &total), 0);
    assert_float_equal(total, fleet, 1e-9);
    assert_int_equal(state_job_get(f->st, "a", &job), 0);
    assert_float_equal(job.dollars, job_a, 1e-9);
    state_job_clear(&job);
}

/* The fixed fleet's one spot node, its agent registered and job "a" on it, billed from now for
 * `seconds` at $0.80/h (as the daemon records it); its id in id. Returns job a's share of the
 * bill (its replicas there over the node's 4 GPUs). */
static double spot_node_billed(struct fixture *f, double seconds, char id[CLOUD_ID_MAX])
{
    char ids[8][CLOUD_ID_MAX];
    struct state_alloc *rows = NULL;
    size_t n = 0;
    int replicas = 0;
    double bill = 0.8 * seconds / 3600;

    assert_int_equal(live_instances(f, ids), 1);
    memcpy(id, ids[0], CLOUD_ID_MAX);
    agent_register(f, id, 4);
    tick(f, 10);
    assert_int_equal(state_alloc_get(f->st, "a", &rows, &n), 0);
    for (size_t r = 0; r < n; r++)
        replicas += strcmp(rows[r].node, id) == 0 ? rows[r].replicas : 0;
    state_allocs_free(rows, n);
    assert_true(replicas >= 1);
    assert_int_equal(state_cost_add(f->st, id, f->now, f->now + seconds, bill), 0);
    f->now += seconds;
    return bill * replicas / 4;
}

/* The cloud reclaims the node (a notice, and 120 s later it is gone). */
static void reclaimed(struct fixture *f, const char *id)
{
    assert_int_equal(cloud_fake_set_state(&f->fake, id, CLOUD_NOTICED, f->now + 120), 0);
    tick(f, 10);
    f->now += 110;
    assert_int_equal(cloud_fake_set_state(&f->fake, id, CLOUD_GONE, 0), 0);
    tick(f, 10);
}

/* EC2 bills nothing of a spot instance it interrupts in its first hour (the fake's spot offer:
 * reclaim_free_s 3600), and castor's costs say so: a node reclaimed 32 minutes after its launch
 * gives back its $0.40, from the fleet's costs and job a's share; its replacement, reclaimed 72
 * minutes after its launch, stays billed ($0.93); the next, gone in its first hour without a
 * notice (a terminate castor did not ask for, which EC2 bills), stays billed too ($0.27). */
static void realworld_reconcile__a_spot_node_reclaimed_in_its_first_hour_is_free(void **state)
{
    struct fixture *f = *state;
    char id[CLOUD_ID_MAX];
    const double second = 0.8 * 4200 / 3600, third = 0.8 * 1200 / 3600;
    double share, kept;

    assert_int_equal(make_loop_with(f, "fixed", 1, 1), 0);
    submit_job(f, "a", 4);
    tick(f, 0);
    share = spot_node_billed(f, 1800, id);
    costs_are(f, 0.4, share);
    reclaimed(f, id);
    costs_are(f, 0, 0);
    assert_true(has_event(f, "a", "refund", id, "does not bill it")); /* its owner is told */
    kept = spot_node_billed(f, 4200, id);
    reclaimed(f, id);
    costs_are(f, second, kept);
    kept += spot_node_billed(f, 1200, id);
    assert_int_equal(cloud_fake_set_state(&f->fake, id, CLOUD_GONE, 0), 0);
    tick(f, 10);
    costs_are(f, second + third, kept);
    assert_int_equal(sql_int(f, "SELECT count(*) FROM nodes WHERE state = 'terminated'"), 3);
}

/* The dollars of /v1/costs?by=offer's row for offer in its column (on_demand, spot), as a user
 * reads them. */
static double offer_cost(struct fixture *f, const char *offer, const char *column)
{
    struct jv *v = NULL;
    const struct jv *rows;
    double d = -1;

    assert_int_equal(call(f, "GET", "/v1/costs?by=offer", TOKEN_USER, NULL, &v), 200);
    rows = jv_get(v, "rows");
    for (size_t i = 0; i < jv_size(rows); i++)
        if (strcmp(jv_string_value(jv_get(jv_at(rows, i), "offer")), offer) == 0)
            assert_int_equal(jv_number_value(jv_get(jv_at(rows, i), column), &d), 0);
    jv_free(v);
    return d;
}

/* The cloud bills a stray instance until it is gone, so castor counts it (before, nowhere: no
 * node row to charge). One the cloud launched at T0 (a launch whose answer was lost) found and
 * terminated 600 s later is charged those 600 s at its offer's $2.00/h; a spot one found 10 s
 * after its launch is charged the cloud's minute at $0.80/h, and, still listed a tick later (its
 * terminate refused), only the 90 s since; gone, nothing more. The fleet's total, the spend
 * limit's sum and /v1/costs hold them, under their offer and market; no job is charged. */
static void realworld_reconcile__a_stray_is_charged_to_the_fleet(void **state)
{
    struct fixture *f = *state;
    const struct realworld_spend limit = {.dollars = 100, .period = REALWORLD_DAY};
    const double od = 2.0 * 600 / 3600, minute = 0.8 * 60 / 3600, more = 0.8 * 90 / 3600;
    char id[CLOUD_ID_MAX], ids[8][CLOUD_ID_MAX];
    struct state_costs costs;
    double since = 0;

    realworld_set_spend(f->rw, &limit);
    assert_int_equal(cloud_fake_inject(&f->fake, CLUSTER, OFFER_OD, CLUSTER "-lost", id), 0);
    f->now += 600;
    assert_int_equal(realworld_reconcile(f->rw), 0);
    assert_int_equal(live_instances(f, ids), 0);
    costs_are_total(f, od);
    assert_int_equal(cloud_fake_inject(&f->fake, CLUSTER, OFFER_SPOT, "", id), 0);
    assert_int_equal(cloud_fake_fail(&f->fake, "terminate", ERR_IO, 1), 0);
    f->now += 10;
    assert_int_equal(realworld_reconcile(f->rw), 0);
    assert_int_equal(live_instances(f, ids), 1); /* still billed */
    costs_are_total(f, od + minute);
    f->now += 140; /* charged up to its launch + 60 s: 90 s more */
    assert_int_equal(realworld_reconcile(f->rw), 0);
    assert_int_equal(live_instances(f, ids), 0);
    costs_are_total(f, od + minute + more);
    f->now += 100;
    assert_int_equal(realworld_reconcile(f->rw), 0); /* gone: nothing more; the limit's sum */
    costs_are_total(f, od + minute + more);
    assert_float_equal(metrics(f).spend_period, od + minute + more, 1e-9);
    assert_int_equal(state_cost_since(f->st, T0 + 600, &since), 0);
    assert_float_equal(since, minute + more, 1e-9);
    assert_float_equal(offer_cost(f, OFFER_OD, "on_demand"), od, 1e-9);
    assert_float_equal(offer_cost(f, OFFER_SPOT, "spot"), minute + more, 1e-9);
    assert_int_equal(state_cost_split(f->st, &costs), 0);
    assert_true(costs.jobs == 0 && fabs(costs.idle - costs.spent) < 1e-12);
}

/* An instance the cloud still lists after castor terminated its node (30 s after its launch at
 * T0, a termination that did not take) is charged from where its node's costs end, the minute
 * from its launch, to when the reconciliation finds it, 300 s after the launch: the node's
 * minute and the stray's 240 s make the 300 s at $2.00/h, nothing twice and nothing lost. */
static void realworld_reconcile__a_terminated_nodes_instance_is_charged_on(void **state)
{
    struct fixture *f = *state;
    char ids[8][CLOUD_ID_MAX];

    assert_int_equal(make_loop(f, 1), 0);
    submit_job(f, "a", 4);
    tick(f, 0);
    assert_int_equal(live_instances(f, ids), 1);
    assert_int_equal(state_node_set_state(f->st, ids[0], STATE_NODE_TERMINATED, T0 + 30), 0);
    f->now = T0 + 300;
    assert_int_equal(realworld_reconcile(f->rw), 0);
    assert_int_equal(live_instances(f, ids), 0);
    costs_are_total(f, 2.0 * 240 / 3600);
    assert_int_equal(state_cost_accrue(f->st, T0, f->now), 0); /* the node's own, as the daemon */
    costs_are_total(f, 2.0 * 300 / 3600);
}

/* The planner's preemption rate for an offer is learned from castor's own nodes there, as the
 * simulated world learns it: the prior (0.05 a node-hour on spot) worth ten node-hours, and two
 * spot nodes that each lived 5 hours and got a notice: (0.05 x 10 + 2) / (10 + 10) = 0.125. The
 * on-demand offer, with none, keeps its 0. Before, 0.05 whatever castor saw. */
static void realworld_observe__preemption_rates_are_learned(void **state)
{
    struct fixture *f = *state;
    const struct snapshot *s;
    const char *ids[2] = {"i-old-1", "i-old-2"};

    assert_int_equal(state_intent_record(f->st, "tok-old", OFFER_SPOT, 2, T0 - 40000), 0);
    for (int i = 0; i < 2; i++) {
        struct state_node n = {.instance_id = (char *)ids[i],
                               .provider = "fake",
                               .offer = OFFER_SPOT,
                               .market = STATE_MARKET_SPOT,
                               .zone = "zone-a",
                               .gpus = 4,
                               .state = STATE_NODE_BOOTING,
                               .launch_token = "tok-old",
                               .launch_index = i,
                               .launched_at = T0 - 30000 + i * 1000,
                               .ready_at = NAN,
                               .terminated_at = NAN,
                               .price = 0.8};
        double end = n.launched_at + 18000;

        assert_int_equal(state_node_upsert(f->st, &n), 0);
        assert_int_equal(state_node_notice(f->st, ids[i], end - 120, end), 1);
        assert_int_equal(state_node_set_state(f->st, ids[i], STATE_NODE_TERMINATED, end), 0);
    }
    assert_int_equal(make_loop(f, 0), 0);
    f->now += 10;
    assert_int_equal(provider_observe(&f->prov, &s), 0);
    assert_int_equal(s->noffers, 2);
    for (int o = 0; o < 2; o++)
        assert_float_equal(s->offers[o].preempt_rate, s->offers[o].spot ? 0.125 : 0.0, 1e-9);
}

/* node_price(f, id): the node's recorded price in thousandths of a dollar an hour. */
static long long node_price(struct fixture *f, const char *id)
{
    char sql[160];

    snprintf(sql, sizeof(sql), "SELECT round(price * 1000) FROM nodes WHERE instance_id = '%s'",
             id);
    return sql_int(f, sql);
}

/* A launched node is billed at its offer's price of the moment, as the cloud bills it (a spot
 * price moves while the instance runs; before, a node kept its launch's price for life): a fixed
 * fleet's spot node launched while the cloud cannot price spot is recorded at its bid ($1.00, the
 * most it can be billed; before, $0); priced at $0.80, then $0.95, it follows; a price unknown
 * for more than an hour leaves it at its last. A static node keeps the price it registered. */
static void realworld_observe__nodes_are_billed_at_the_price_of_now(void **state)
{
    struct fixture *f = *state;
    char ids[8][CLOUD_ID_MAX];

    f->spot_unpriced = 1;
    assert_int_equal(make_loop_with(f, "fixed", 1, 1), 0);
    agent_register_with(f, "static-1", 4, ", \"price\": 3.5");
    tick(f, 0);
    assert_int_equal(live_instances(f, ids), 1);
    assert_int_equal(node_price(f, ids[0]), 1000);
    f->spot_unpriced = 0;
    tick(f, 10);
    assert_int_equal(node_price(f, ids[0]), 800);
    assert_int_equal(cloud_fake_set_price(&f->fake, OFFER_SPOT, 0.95), 0);
    tick(f, 10);
    assert_int_equal(node_price(f, ids[0]), 950);
    f->spot_unpriced = 1;
    f->now += 4000;
    tick(f, 10);
    assert_int_equal(node_price(f, ids[0]), 950);
    assert_int_equal(node_price(f, "static-1"), 3500);
    assert_int_equal(live_instances(f, ids), 1);
}

/* The price castor counts: the configuration's price in place of the cloud's; its discount on the
 * instance only, the disks at their price ($1.10 with $0.10 of disks at 50% off: $0.60); none:
 * the cloud's; an unknown price stays unknown. */
static void realworld_offer_price__discount_on_the_instance(void **state)
{
    const struct realworld_offer half = {.discount = 0.5}, fixed = {.price = 0.3};

    (void)state;
    assert_float_equal(realworld_offer_price(&half, 1.10, 0.10), 0.60, 1e-12);
    assert_float_equal(realworld_offer_price(&half, 1.10, 0), 0.55, 1e-12);
    assert_float_equal(realworld_offer_price(&fixed, 1.10, 0.10), 0.3, 1e-12);
    assert_float_equal(realworld_offer_price(NULL, 1.10, 0.10), 1.10, 1e-12);
    assert_true(isnan(realworld_offer_price(&half, NAN, 0.10)));
}

/* A spot bid is on the instance, not on its disks: spot at $0.95 with $0.10/h of disks ($1.05 in
 * all) under a $1.00 bid is asked (before, the whole price was held against the bid and spot was
 * taken as above it), and its node is billed the $1.05. */
static void realworld_resize__a_bid_is_on_the_instance_not_its_disks(void **state)
{
    struct fixture *f = *state;

    f->spot_storage = 0.10;
    assert_int_equal(cloud_fake_set_price(&f->fake, OFFER_SPOT, 0.95), 0);
    assert_int_equal(make_loop_with(f, "castor", 0, 0), 0);
    one_gpu_jobs(f, 'a', 1);
    assert_true(f->tried[1] >= 1);
    assert_int_equal(f->tried[0], 0);
    assert_int_equal(sql_int(f, "SELECT count(*) FROM nodes WHERE round(price * 100) = 105"),
                     f->tried[1]);
}

/* A job that declares its samples gets a predicted finish: its iterations left (samples / M0 -
 * progress) at its goodput over M0, from now. With a deadline, the log warns once when that is
 * after it (on its one GPU, 64 000 samples at its goodput, about 430 a second, take 150 s; the
 * deadline is 100 s from the submission) and tells when it is before it again (990 of its 1000
 * iterations reported done). */
static void realworld_metrics__predicted_finish_and_deadline(void **state)
{
    struct fixture *f = *state;
    char ids[8][CLOUD_ID_MAX], body[256], *text = NULL;
    size_t len = 0;
    FILE *mem = NULL;
    struct log *log = relog(f, &mem, &text, &len);
    struct api_metrics m = {0};

    assert_int_equal(make_loop(f, 1), 0);
    snprintf(body, sizeof(body), ", \"samples\": 64000, \"deadline\": %.0f", f->now + 100);
    submit_job_with(f, "a", 1, body);
    tick(f, 0);
    assert_int_equal(live_instances(f, ids), 1);
    agent_register(f, ids[0], 4);
    tick(f, 10);
    report_one(f, "a", 1, 64, 0.2, 0.0, 0.0, 1.0);
    tick(f, 10);
    assert_int_equal(realworld_metrics(f->rw, &m), 0);
    assert_int_equal(m.njobs, 1);
    assert_true(m.jobs[0].goodput > 0);
    assert_float_equal(m.jobs[0].eta, f->now + 1000 * 64 / m.jobs[0].goodput, 1e-6);
    assert_true(m.jobs[0].eta > T0 + 100); /* late */
    assert_true(m.jobs[0].deadline == T0 + 100);
    tick(f, 10); /* still late: told once */
    assert_int_equal(call(f, "POST", "/v1/jobs/a/reports", TOKEN_JOB,
                          "{\"configs\": [], \"progress\": 990}", NULL),
                     200);
    tick(f, 10);
    assert_int_equal(realworld_metrics(f->rw, &m), 0);
    assert_float_equal(m.jobs[0].eta, f->now + 10 * 64 / m.jobs[0].goodput, 1e-6);
    assert_int_equal(fflush(mem), 0);
    {
        const char *late = strstr(text, "after its deadline");

        assert_non_null(late);
        assert_null(strstr(late + 1, "after its deadline"));
        assert_non_null(strstr(late, "before its deadline again"));
    }
    unlog(f, log, mem, &text);
}

static void realworld_metrics__errors_by_operation_and_code(void **state)
{
    struct fixture *f = *state;
    struct api_metrics m = {0};
    int found = 0;

    assert_int_equal(cloud_fake_fail(&f->fake, "list", ERR_AGAIN, 2), 0);
    assert_int_equal(realworld_reconcile(f->rw), ERR_AGAIN);
    assert_int_equal(realworld_reconcile(f->rw), ERR_AGAIN);
    assert_int_equal(realworld_reconcile(f->rw), 0);
    assert_int_equal(realworld_metrics(f->rw, &m), 0);
    for (size_t i = 0; i < m.nerrors; i++)
        if (strcmp(m.errors[i].op, "list") == 0 && strcmp(m.errors[i].code, "AGAIN") == 0)
            found = (int)m.errors[i].count;
    assert_int_equal(found, 2);
    assert_string_equal(m.calls[1].op, "list");
    assert_int_equal(m.calls[1].count, 3);
}

/* ---- quotas ---- */

/* The spot offer under a quota of `limit` vCPUs (a node takes 48), `others` held by others. */
static void spot_quota(struct fixture *f, double limit, double others)
{
    const char *offers[] = {OFFER_SPOT};
    const double units[] = {48};

    assert_int_equal(cloud_fake_set_quota(&f->fake, "spot-vcpus", limit, others, offers, units, 1),
                     0);
}

/* Quotas read up front cap the launches: the fixed fleet wants 3 spot nodes, the quota leaves
 * room for 2 (96 vCPUs, 48 a node), so 2 are asked and none is refused; the offer shows no room,
 * the log says which quota once, and the metrics show it. An increase is seen at the next read
 * (5 minutes), and the third node is launched then. */
static void realworld_resize__quotas_cap_the_launches(void **state)
{
    struct fixture *f = *state;
    char *text = NULL;
    size_t len = 0;
    FILE *mem = NULL;
    struct log *log = relog(f, &mem, &text, &len);
    struct api_metrics m;

    spot_quota(f, 96, 0);
    assert_int_equal(make_loop_with(f, "fixed", 1, 3), 0);
    submit_job(f, "a", 4);
    tick(f, 0);
    assert_int_equal(f->tried[1], 2); /* within the quota: nothing refused */
    assert_int_equal(counts(f).launched, 2);
    assert_int_equal(counts(f).quotas_calls, 1);
    assert_int_equal(spot_room(f), 0);
    assert_int_equal(spot_unavailable(f), 0); /* its price stands for the nodes held there */
    m = metrics(f);
    assert_int_equal(m.nquotas, 1);
    assert_string_equal(m.quotas[0].quota, "spot-vcpus");
    assert_true(m.quotas[0].limit == 96);
    assert_true(m.quotas[0].used == 96); /* the read's 0 and the two launched since */
    assert_int_equal(m.nrooms, 1);
    assert_string_equal(m.rooms[0].offer, OFFER_SPOT);
    assert_int_equal(m.rooms[0].room, 0);
    tick(f, 100);
    tick(f, 100);
    assert_int_equal(f->tried[1], 2);
    assert_int_equal(counts(f).quotas_calls, 1); /* read every 5 minutes */
    spot_quota(f, 144, 0);                       /* an increase granted */
    tick(f, 101);
    assert_int_equal(counts(f).quotas_calls, 2);
    assert_int_equal(f->tried[1], 3);
    assert_int_equal(counts(f).launched, 3);
    assert_int_equal(fflush(mem), 0);
    {
        const char *told = strstr(text, "box/spot cannot be launched: quota spot-vcpus");

        assert_non_null(told);
        assert_non_null(strstr(told, "96 of 96 vCPUs in use")); /* read, and launched since */
        assert_null(strstr(told + 20, "cannot be launched"));
        assert_non_null(strstr(told, "box/spot may be launched again"));
    }
    unlog(f, log, mem, &text);
}

/* A quota with no room (the default of new accounts for spot GPUs) keeps castor's planner off
 * that offer from its first round: it rents on-demand at once, and no launch is refused. Others'
 * instances count: 48 of 48 vCPUs held by another team leave none. */
static void realworld_resize__no_quota_room_rents_the_other_market(void **state)
{
    struct fixture *f = *state;

    spot_quota(f, 48, 48);
    assert_int_equal(make_loop_with(f, "castor", 0, 0), 0);
    submit_job(f, "a", 4);
    tick(f, 0);
    assert_int_equal(f->tried[1], 0);
    assert_true(f->tried[0] >= 1);
    assert_true(counts(f).launched >= 1);
    assert_int_equal(sql_int(f, "SELECT count(*) FROM launch_intents WHERE state = 'failed'"), 0);
}

/* A fleet that cannot grow is told to the jobs that wait for it: both offers' quotas at 0 (a new
 * account's, for GPUs), castor's planner launches nothing and job a waits. Once it has waited
 * 120 s its events say why, offer by offer, once; when the spot quota is raised (read 5 minutes
 * later) a node is launched, and with none of its GPUs ready yet the job waits without another
 * such event. A job that had no such wait is not told. */
static void realworld_resize__a_job_is_told_the_fleet_cannot_grow(void **state)
{
    struct fixture *f = *state;
    const char *od[] = {OFFER_OD};
    const double units[] = {48};
    const char *kind = "SELECT count(*) FROM events WHERE kind = 'waiting'";

    spot_quota(f, 0, 0);
    assert_int_equal(cloud_fake_set_quota(&f->fake, "od-vcpus", 0, 0, od, units, 1), 0);
    assert_int_equal(make_loop_with(f, "castor", 0, 0), 0);
    submit_job(f, "a", 4);
    tick(f, 0);
    assert_int_equal(f->tried[0] + f->tried[1], 0);
    assert_int_equal(sql_int(f, kind), 0); /* not yet: it has waited 0 s */
    tick(f, 60);
    assert_int_equal(sql_int(f, kind), 0);
    tick(f, 60);
    assert_int_equal(sql_int(f, kind), 1);
    assert_true(
        has_event(f, "a", "waiting", NULL,
                  "no GPUs, and the fleet cannot grow: no offer can be launched now (" OFFER_OD
                  ": quota od-vcpus \"od-vcpus (fake)\" has 0 of 0 vCPUs in use; " OFFER_SPOT
                  ": quota spot-vcpus"));
    tick(f, 60);
    assert_int_equal(sql_int(f, kind), 1); /* once */
    spot_quota(f, 48, 0);
    tick(f, 300); /* read again: room for one spot node */
    assert_int_equal(f->tried[1], 1);
    tick(f, 60);
    assert_int_equal(sql_int(f, kind), 1);
}

/* Jobs bound to a market by their checkpoints, in the real world: spot preempted twice a node-hour
 * keeps 97% of the time of job a, which checkpoints every 60 s, and 10% of job b's, which
 * checkpoints hourly, so a runs on spot and b on on-demand. With spot's quota at 0, a runs on
 * on-demand too: their first GPUs share one on-demand node, none is launched on spot nor refused,
 * and once the node is ready both run there (before, a waited for spot room: b alone ran). */
static void realworld_resize__checkpointed_job_leaves_a_full_spot_quota(void **state)
{
    struct fixture *f = *state;

    f->spot_rate = 2.0;
    realworld_free(f->rw);
    assert_int_equal(make_world(f), 0);
    spot_quota(f, 0, 0);
    assert_int_equal(make_loop_with(f, "castor", 0, 0), 0);
    submit_job_with(f, "a", 4, ", \"checkpoint_interval\": 60");
    submit_job_with(f, "b", 4, ", \"checkpoint_interval\": 3600");
    f->register_gpus = 4;
    tick(f, 0);
    f->register_gpus = 0;
    assert_int_equal(f->tried[1], 0);
    assert_int_equal(f->tried[0], 1);
    assert_int_equal(sql_int(f, "SELECT count(*) FROM launch_intents WHERE state = 'failed'"), 0);
    tick(f, 1);
    assert_int_equal(sql_int(f, "SELECT count(*) FROM jobs WHERE state = 'running'"), 2);
    assert_int_equal(f->tried[1], 0);
}

/* When the quotas cannot be read, launches go on as without them (the read's failure is logged
 * once), and the cloud's own refusal holds the offer as before. */
static void realworld_resize__unreadable_quotas_limit_nothing(void **state)
{
    struct fixture *f = *state;
    char *text = NULL;
    size_t len = 0;
    FILE *mem = NULL;
    struct log *log = relog(f, &mem, &text, &len);

    spot_quota(f, 96, 0);
    assert_int_equal(cloud_fake_fail(&f->fake, "quotas", ERR_PERM, 5), 0);
    assert_int_equal(make_loop_with(f, "fixed", 1, 3), 0);
    submit_job(f, "a", 4);
    tick(f, 0);
    assert_int_equal(f->tried[1], 3); /* the third refused by the cloud */
    assert_int_equal(counts(f).launched, 2);
    assert_int_equal(spot_unavailable(f), 1); /* held for the refusal */
    tick(f, 400);                             /* read again: refused again, told once */
    assert_int_equal(counts(f).quotas_calls, 2);
    assert_int_equal(spot_room(f), -1); /* none read: nothing capped */
    assert_int_equal(fflush(mem), 0);
    {
        const char *told = strstr(text, "cannot read the cloud's quotas (");

        assert_non_null(told);
        assert_non_null(strstr(told, "may not read them"));
        assert_null(strstr(told + 1, "cannot read the cloud's quotas"));
    }
    unlog(f, log, mem, &text);
}

/* Quotas read once and then unreadable for an hour: the last figures (and the launches counted
 * since) limit the offer until they are an hour old, then nothing does. */
static void realworld_resize__quotas_unread_for_an_hour_are_dropped(void **state)
{
    struct fixture *f = *state;

    spot_quota(f, 48, 0);
    assert_int_equal(make_loop_with(f, "fixed", 1, 2), 0);
    submit_job(f, "a", 4);
    tick(f, 0);
    assert_int_equal(f->tried[1], 1);
    assert_int_equal(spot_room(f), 0);
    assert_int_equal(cloud_fake_fail(&f->fake, "quotas", ERR_IO, 100), 0);
    tick(f, 301);
    tick(f, 3000);
    assert_int_equal(counts(f).quotas_calls, 3);
    assert_int_equal(spot_room(f), 0); /* 3301 s old: kept */
    assert_int_equal(f->tried[1], 1);
    tick(f, 300);
    assert_int_equal(spot_room(f), -1); /* 3601 s: dropped */
    assert_int_equal(f->tried[1], 2);   /* asked, and refused by the cloud itself */
    assert_int_equal(counts(f).launched, 1);
}

/* Offers that share a quota share its room: a plan that launches one of each while the quota
 * leaves room for one node in all launches one, the next offer's room asked again before its
 * launch. */
static void realworld_resize__offers_sharing_a_quota_share_its_room(void **state)
{
    struct fixture *f = *state;
    const char *offers[] = {OFFER_OD, OFFER_SPOT};
    const double units[] = {4, 4};
    const struct snapshot *s = NULL;
    struct fleet_plan *plan = NULL;
    int od = -1, spot = -1;

    assert_int_equal(cloud_fake_set_quota(&f->fake, "all-gpus", 4, 0, offers, units, 2), 0);
    assert_int_equal(realworld_offer_index(f->rw, OFFER_OD, &od), 0);
    assert_int_equal(realworld_offer_index(f->rw, OFFER_SPOT, &spot), 0);
    assert_int_equal(provider_observe(&f->prov, &s), 0);
    assert_int_equal(s->offers[od].capped, 1);
    assert_int_equal(s->offers[od].room, 1);
    assert_int_equal(s->offers[spot].room, 1);
    assert_int_equal(fleet_plan_new(s, &plan), 0);
    plan->launch[od] = 1;
    plan->launch[spot] = 1;
    assert_int_equal(provider_resize(&f->prov, plan), 0);
    assert_int_equal(f->tried[0] + f->tried[1], 1);
    assert_int_equal(counts(f).launched, 1);
    fleet_plan_free(plan);
    assert_int_equal(provider_observe(&f->prov, &s), 0);
    assert_int_equal(s->offers[od].room, 0);
    assert_int_equal(s->offers[spot].room, 0);
}

/* A job's attained service (GPU-seconds held, the least-attained-service policies' measure) counts
 * every interval, that after a tick that changed the fleet too: job a holds its GPUs for 100 s
 * after a launch, and its attained service grows by 100 s times their number. */
static void realworld_observe__attained_service_counts_after_a_fleet_change(void **state)
{
    struct fixture *f = *state;
    char ids[8][CLOUD_ID_MAX];
    const struct snapshot *s = NULL;
    struct fleet_plan *plan = NULL;
    double before;
    int spot = -1, held;

    one_node_running(f, ids);
    assert_int_equal(realworld_offer_index(f->rw, OFFER_SPOT, &spot), 0);
    assert_int_equal(provider_observe(&f->prov, &s), 0);
    assert_int_equal(s->njobs, 1);
    held = s->current->count[0];
    assert_true(held >= 1);
    before = s->jobs[0].attained_service;
    assert_int_equal(fleet_plan_new(s, &plan), 0);
    plan->launch[spot] = 1;
    assert_int_equal(provider_resize(&f->prov, plan), 0);
    fleet_plan_free(plan);
    f->now += 100;
    assert_int_equal(provider_observe(&f->prov, &s), 0);
    assert_float_equal(s->jobs[0].attained_service - before, held * 100.0, 1e-9);
}

/* A job placed on more than 64 nodes (280 replicas on 70 nodes of 4 GPUs) is applied like any
 * other: its allocation written, the tick a success (launches and costs go on). */
static void realworld_apply__a_job_on_more_than_64_nodes(void **state)
{
    struct fixture *f = *state;
    char body[400];
    struct cloud_instance *in = NULL;
    size_t n = 0;

    assert_int_equal(make_loop(f, 70), 0);
    snprintf(body, sizeof(body),
             "{\"name\": \"big\", \"command\": [\"train\"], \"workdir\": \"/w\", "
             "\"init_batch_size\": 64, \"max_batch_size\": 100000, \"max_local_bsz\": 128, "
             "\"min_replicas\": 280, \"max_replicas\": 280}");
    assert_int_equal(call(f, "POST", "/v1/jobs", TOKEN_USER, body, NULL), 201);
    tick(f, 0);
    assert_int_equal(cloud_list(&f->fake, CLUSTER, &in, &n), 0);
    assert_int_equal(n, 70);
    for (size_t i = 0; i < n; i++)
        agent_register(f, in[i].id, 4);
    free(in);
    tick(f, 10); /* asserts the tick's success */
    assert_int_equal(sql_int(f, "SELECT count(*) FROM allocations a JOIN jobs j ON j.id = a.job_id"
                                " WHERE j.name = 'big'"),
                     70);
    assert_int_equal(sql_int(f, "SELECT count(*) FROM jobs WHERE name = 'big' AND state = "
                                "'running'"),
                     1);
    tick(f, 60); /* and the next, with nothing to change */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(realworld_resize__quotas_cap_the_launches, rw_setup,
                                        rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_resize__no_quota_room_rents_the_other_market,
                                        rw_setup, rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_resize__a_job_is_told_the_fleet_cannot_grow,
                                        rw_setup, rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_resize__checkpointed_job_leaves_a_full_spot_quota,
                                        rw_setup, rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_resize__unreadable_quotas_limit_nothing, rw_setup,
                                        rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_resize__quotas_unread_for_an_hour_are_dropped,
                                        rw_setup, rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_resize__offers_sharing_a_quota_share_its_room,
                                        rw_setup, rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_resize__intent_committed_before_launch, rw_setup,
                                        rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_observe__schedulable_only_once_registered,
                                        rw_setup, rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_reconcile__adopts_an_instance_by_its_token,
                                        rw_setup, rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_reconcile__terminates_a_stray_instance, rw_setup,
                                        rw_teardown),
        cmocka_unit_test_setup_teardown(
            realworld_reconcile__intent_times_out_and_is_relaunched_once, rw_setup, rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_reconcile__crash_between_intent_and_launch,
                                        rw_setup, rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_observe__a_gone_node_is_counted_once, rw_setup,
                                        rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_observe__a_gone_instance_drops_its_jobs, rw_setup,
                                        rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_observe__a_gang_moves_to_the_replacement_node,
                                        rw_setup, rw_teardown),
        cmocka_unit_test_setup_teardown(loop_tick__a_failing_decide_step_is_told, rw_setup,
                                        rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_observe__agents_faster_than_the_launch_record,
                                        rw_setup, rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_observe__a_noticed_node_drains, rw_setup,
                                        rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_observe__reports_refit_the_model, rw_setup,
                                        rw_teardown),
        cmocka_unit_test_setup_teardown(
            realworld_apply__a_new_configuration_is_measured_before_the_next, rw_setup,
            rw_teardown),
        cmocka_unit_test_setup_teardown(
            realworld_apply__a_new_configuration_restarts_only_restart_mode_jobs, rw_setup,
            rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_apply__the_state_follows_the_allocation, rw_setup,
                                        rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_apply__a_fixed_batch_keeps_m0_on_uneven_replicas,
                                        rw_setup, rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_observe__requested_replicas_reach_the_snapshot,
                                        rw_setup, rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_observe__samples_become_the_progress_target,
                                        rw_setup, rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_observe__sync_prior_reaches_the_fit, rw_setup,
                                        rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_observe__a_hung_job_restarts_then_fails, rw_setup,
                                        rw_teardown),
        cmocka_unit_test_setup_teardown(
            realworld_reconcile__a_node_refused_termination_is_counted_once, rw_setup, rw_teardown),
        cmocka_unit_test_setup_teardown(
            realworld_reconcile__a_node_that_never_registers_is_terminated, rw_setup, rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_observe__the_spend_limit_tells_a_job_once,
                                        rw_setup, rw_teardown),
        cmocka_unit_test_setup_teardown(
            realworld_reconcile__no_launch_asked_again_over_the_spend_limit, rw_setup, rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_observe__a_paused_controller_keeps_its_nodes,
                                        rw_setup, rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_wait__on_the_timer_and_the_new_interval, rw_setup,
                                        rw_teardown),
        cmocka_unit_test_setup_teardown(
            realworld_reconcile__a_node_heard_but_not_recorded_is_not_fenced, rw_setup,
            rw_teardown),
        cmocka_unit_test_setup_teardown(
            realworld_reconcile__no_fence_while_the_state_cannot_be_written, rw_setup, rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_reconcile__a_silent_node_is_terminated, rw_setup,
                                        rw_teardown),
        cmocka_unit_test_setup_teardown(
            realworld_observe__a_silent_static_node_keeps_its_job_waiting, rw_setup, rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_jobs__waiting_for_old_replicas_is_not_a_hang,
                                        rw_setup, rw_teardown),
        cmocka_unit_test_setup_teardown(
            realworld_observe__a_self_fenced_static_node_lets_its_job_go, rw_setup, rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_observe__a_static_node_taken_down_lets_its_job_go,
                                        rw_setup, rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_observe__a_launched_node_is_not_taken_down,
                                        rw_setup, rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_reconcile__a_fence_outlives_a_restart, rw_setup,
                                        rw_teardown),
        cmocka_unit_test_setup_teardown(
            realworld_reconcile__a_notice_never_carried_out_is_terminated, rw_setup, rw_teardown),
        cmocka_unit_test_setup_teardown(
            realworld_observe__attained_service_counts_after_a_fleet_change, rw_setup, rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_apply__a_job_on_more_than_64_nodes, rw_setup,
                                        rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_observe__a_job_that_reaches_its_max_dollars_fails,
                                        rw_setup, rw_teardown),
        cmocka_unit_test(realworld_period__days_weeks_months),
        cmocka_unit_test_setup_teardown(
            realworld_observe__the_spend_limit_stops_renting_until_the_next_period, rw_setup,
            rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_observe__a_family_shares_its_model, rw_setup,
                                        rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_metrics__predicted_finish_and_deadline, rw_setup,
                                        rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_metrics__errors_by_operation_and_code, rw_setup,
                                        rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_resize__capacity_fails_over_to_another_offer,
                                        rw_setup, rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_resize__a_spend_limit_launches_no_unpriced_offer,
                                        rw_setup, rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_resize__the_unpriced_offer_is_a_reason_to_wait,
                                        rw_setup, rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_resize__an_unpriced_offer_is_not_launched,
                                        rw_setup, rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_resize__configured_prices_stand_in, rw_setup,
                                        rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_options__an_unknown_offer_is_told, rw_setup,
                                        rw_teardown),
        cmocka_unit_test_setup_teardown(
            realworld_reconcile__a_spot_node_reclaimed_in_its_first_hour_is_free, rw_setup,
            rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_reconcile__a_stray_is_charged_to_the_fleet,
                                        rw_setup, rw_teardown),
        cmocka_unit_test_setup_teardown(
            realworld_reconcile__a_terminated_nodes_instance_is_charged_on, rw_setup, rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_observe__preemption_rates_are_learned, rw_setup,
                                        rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_observe__nodes_are_billed_at_the_price_of_now,
                                        rw_setup, rw_teardown),
        cmocka_unit_test(realworld_offer_price__discount_on_the_instance),
        cmocka_unit_test_setup_teardown(realworld_resize__a_bid_is_on_the_instance_not_its_disks,
                                        rw_setup, rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_resize__spot_above_its_max_price_is_not_asked,
                                        rw_setup, rw_teardown),
        cmocka_unit_test_setup_teardown(realworld_resize__quota_holds_the_offer_for_an_hour,
                                        rw_setup, rw_teardown),
        cmocka_unit_test_setup_teardown(
            realworld_resize__quota_released_by_a_termination_in_its_market, rw_setup, rw_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
