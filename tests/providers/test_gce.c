/* test_gce.c: the Compute Engine client against the fake Google Cloud (tests/providers/
 * fake_gce.c, which checks every bearer token it gets and issues them only for JWTs that verify):
 * the requests it sends (spot and standard, GPUs, labels, requestId), operations polled until
 * DONE, exhausted zones, quotas (GPUS_ALL_REGIONS), 429, 5xx, timeouts, cut and malformed
 * answers, unknown reasons, a revoked token, listing by label over pages, deletion; the quotas
 * of a region and of the project (regions.get, projects.get), refused and malformed; the helpers
 * (request ids, names, labels, zones, built-in GPUs, quota metrics, reasons); and no secret in
 * any message or log line of the run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gcp_fixture.h"
#include "providers/gcp/auth.h"
#include "providers/gcp/compute.h"

#define ZONE "us-central1-a"
#define CLUSTER "alpha"
#define TOKEN "launch-0001"
#define OPS_PATH FAKE_GCE_COMPUTE "/projects/" GCP_PROJECT "/zones/"
#define PROJECT_PATH FAKE_GCE_COMPUTE "/projects/" GCP_PROJECT
#define REGIONS_PATH PROJECT_PATH "/regions/"

struct fixture {
    struct gcp_world w;
    struct fake_gce *fake; /* w.fake */
    struct hooks *h;       /* &w.h */
    struct gcp_compute *c;
};

/* A client of the fake with page_size a page (0: the default). */
static struct gcp_compute *client(struct fixture *f, int page_size)
{
    struct gcp_compute_config cfg = {
        .project = GCP_PROJECT,
        .rest = gcp_world_rest(&f->w, f->w.compute, 4),
        .page_size = page_size,
        .poll_interval_ms = 1500,
        .operation_timeout_s = 120,
    };
    struct gcp_compute *c = NULL;

    assert_int_equal(gcp_compute_new(&cfg, &c, NULL), 0);
    return c;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));

    if (!f || gcp_world_start(&f->w) < 0)
        return -1;
    f->fake = f->w.fake;
    f->h = &f->w.h;
    f->c = client(f, 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    gcp_compute_free(f->c);
    gcp_world_stop(&f->w);
    free(f);
    return 0;
}

/* A spot N1 request with one T4. */
static struct gcp_insert_request spot_t4(const char *zone, const char *name, const char *token)
{
    struct gcp_insert_request q = {
        .zone = zone,
        .name = name,
        .machine_type = "n1-standard-8",
        .spot = 1,
        .accelerator_type = "nvidia-tesla-t4",
        .accelerator_count = 1,
        .source_image = "projects/deeplearning-platform-release/global/images/family/common-cu121",
        .disk_gb = 200,
        .disk_type = "pd-balanced",
        .external_ip = 1,
        .service_account = "castor-node@castor-test.iam.gserviceaccount.com",
        .startup_script = "#!/bin/sh\nexec castor-node\n",
        .cluster = CLUSTER,
        .token = token,
    };

    return q;
}

/* Call and keep the message. */
static int insert(struct fixture *f, const struct gcp_insert_request *q, struct gcp_operation *op)
{
    struct error e = {0};
    int rc = gcp_instances_insert(f->c, q, op, &e);

    if (rc < 0)
        hooks_capture(e.msg);
    return rc;
}

static int wait_op(struct fixture *f, struct gcp_operation *op, struct error *e)
{
    int rc = gcp_operation_wait(f->c, op, e);

    if (rc < 0)
        hooks_capture(e->msg);
    return rc;
}

/* The body of the last insert, parsed. */
static struct jv *last_insert(struct fixture *f)
{
    const char *body = fake_gce_last_body(f->fake, OPS_PATH);
    struct jv *v = NULL;

    assert_non_null(body);
    assert_int_equal(jv_parse(body, strlen(body), &v, NULL), 0);
    return v;
}

/* A spot insert: the body Compute Engine expects, the requestId from the token, an operation
 * polled PENDING -> RUNNING -> DONE with a wait between polls, and the instance running. */
static void gcp_instances_insert__spot_with_gpu(void **state)
{
    struct fixture *f = *state;
    struct gcp_insert_request q = spot_t4(ZONE, "castor-node-1", TOKEN);
    struct gcp_operation op = {0};
    struct gcp_instance in = {0};
    struct error e = {0};
    char rid[GCP_UUID_LEN + 1], want[128];
    const struct jv *sched, *acc;
    struct jv *body;

    assert_int_equal(insert(f, &q, &op), 0);
    assert_string_equal(op.status, "PENDING");
    assert_string_equal(op.zone, ZONE);
    assert_string_equal(op.target, "castor-node-1");
    assert_int_equal(gcp_request_id(TOKEN, rid), 0);
    snprintf(want, sizeof(want), "?requestId=%s", rid);
    assert_non_null(strstr(fake_gce_last_target(f->fake, OPS_PATH), want));
    body = last_insert(f);
    assert_string_equal(jv_string_value(jv_get(body, "machineType")),
                        "zones/" ZONE "/machineTypes/n1-standard-8");
    sched = jv_get(body, "scheduling");
    assert_string_equal(jv_string_value(jv_get(sched, "provisioningModel")), "SPOT");
    assert_string_equal(jv_string_value(jv_get(sched, "instanceTerminationAction")), "DELETE");
    assert_string_equal(jv_string_value(jv_get(sched, "onHostMaintenance")), "TERMINATE");
    acc = jv_at(jv_get(body, "guestAccelerators"), 0);
    assert_string_equal(jv_string_value(jv_get(acc, "acceleratorType")),
                        "zones/" ZONE "/acceleratorTypes/nvidia-tesla-t4");
    assert_string_equal(jv_string_value(jv_get(jv_get(body, "labels"), GCP_LABEL_CLUSTER)),
                        CLUSTER);
    assert_string_equal(jv_string_value(jv_get(jv_get(body, "labels"), GCP_LABEL_TOKEN)), TOKEN);
    assert_string_equal(
        jv_string_value(jv_get(jv_at(jv_get(jv_get(body, "metadata"), "items"), 0), "value")),
        "#!/bin/sh\nexec castor-node\n");
    jv_free(body);
    assert_int_equal(wait_op(f, &op, &e), 0);
    assert_string_equal(op.status, "DONE");
    assert_int_equal(fake_gce_requests(f->fake, OPS_PATH ZONE "/operations/"), 2);
    assert_int_equal(f->h->n_sleeps, 2);
    assert_int_equal(f->h->sleeps[0], 1500);
    assert_int_equal(gcp_instance_get(f->c, ZONE, "castor-node-1", &in, &e), 0);
    assert_string_equal(in.status, "RUNNING");
    assert_int_equal(in.spot, 1);
    assert_string_equal(in.token, TOKEN);
    assert_string_equal(in.machine_type, "n1-standard-8");
    assert_int_equal(in.created, 1795341600); /* 2026-11-22T02:00:00-08:00 */
}

/* Standard instances are restarted after maintenance and not deleted; a machine type that
 * carries its GPUs gets no guestAccelerators, and asking for some is refused before sending. */
static void gcp_instances_insert__standard_and_builtin_gpus(void **state)
{
    struct fixture *f = *state;
    struct gcp_insert_request q = spot_t4(ZONE, "castor-node-2", "launch-0002");
    struct gcp_operation op = {0};
    struct error e = {0};
    int automatic = -1;
    struct jv *body;
    size_t before;

    q.spot = 0;
    q.machine_type = "a2-highgpu-1g";
    q.accelerator_count = 0;
    assert_int_equal(insert(f, &q, &op), 0);
    body = last_insert(f);
    assert_string_equal(jv_string_value(jv_get(jv_get(body, "scheduling"), "provisioningModel")),
                        "STANDARD");
    assert_null(jv_get(jv_get(body, "scheduling"), "instanceTerminationAction"));
    assert_int_equal(
        jv_bool_value(jv_get(jv_get(body, "scheduling"), "automaticRestart"), &automatic), 0);
    assert_int_equal(automatic, 1);
    assert_null(jv_get(body, "guestAccelerators"));
    jv_free(body);
    before = fake_gce_requests(f->fake, "");
    q.accelerator_count = 1;
    q.name = "castor-node-3";
    assert_int_equal(gcp_instances_insert(f->c, &q, &op, &e), ERR_INVAL);
    assert_non_null(strstr(e.msg, "comes with its GPUs"));
    q.accelerator_count = 0;
    q.token = "Not A Label";
    assert_int_equal(gcp_instances_insert(f->c, &q, &op, &e), ERR_INVAL);
    q.token = "ok";
    q.name = "Bad_Name";
    assert_int_equal(gcp_instances_insert(f->c, &q, &op, &e), ERR_INVAL);
    assert_int_equal(fake_gce_requests(f->fake, ""), before);
}

/* The same launch asked twice (a lost answer) gives the same operation and one instance; another
 * launch under a name already taken is ERR_CONFLICT. */
static void gcp_instances_insert__idempotent_by_request_id(void **state)
{
    struct fixture *f = *state;
    struct gcp_insert_request q = spot_t4(ZONE, "castor-node-4", "launch-0004");
    struct gcp_operation a = {0}, b = {0};
    struct error e = {0};

    assert_int_equal(insert(f, &q, &a), 0);
    assert_int_equal(insert(f, &q, &b), 0);
    assert_string_equal(a.name, b.name);
    assert_int_equal(fake_gce_instance_count(f->fake), 1);
    q.token = "launch-0005";
    assert_int_equal(gcp_instances_insert(f->c, &q, &b, &e), ERR_CONFLICT);
    assert_non_null(strstr(e.msg, "alreadyExists"));
    assert_int_equal(fake_gce_instance_count(f->fake), 1);
    hooks_capture(e.msg);
}

/* An exhausted zone: the operation ends in ZONE_RESOURCE_POOL_EXHAUSTED (and _WITH_DETAILS);
 * ERR_CAPACITY naming the zone; nothing is left running. */
static void gcp_operation_wait__zone_exhausted(void **state)
{
    struct fixture *f = *state;
    static const char *const zones[] = {"us-central1-b", "us-central1-c"};
    struct gcp_operation op = {0};

    fake_gce_exhaust_zone(f->fake, zones[0], 0);
    fake_gce_exhaust_zone(f->fake, zones[1], 1);
    for (int i = 0; i < 2; i++) {
        struct gcp_insert_request q =
            spot_t4(zones[i], "castor-node-5", i ? "launch-0006" : "launch-0106");
        struct error e = {0};

        assert_int_equal(insert(f, &q, &op), 0);
        assert_int_equal(wait_op(f, &op, &e), ERR_CAPACITY);
        if (!strstr(e.msg, zones[i]))
            fail_msg("%s", e.msg);
        assert_non_null(strstr(e.msg, i ? "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS"
                                        : "ZONE_RESOURCE_POOL_EXHAUSTED"));
        assert_int_equal(op.error.err, ERR_CAPACITY);
    }
    assert_int_equal(fake_gce_instance_count(f->fake), 0);
}

/* The project-wide GPU quota: QUOTA_EXCEEDED on GPUS_ALL_REGIONS is ERR_QUOTA naming the
 * metric; a quotaExceeded refusal of the call itself (HTTP 403) is ERR_QUOTA too. */
static void gcp_operation_wait__quota(void **state)
{
    struct fixture *f = *state;
    struct gcp_insert_request q = spot_t4(ZONE, "castor-node-6", "launch-0007");
    struct gcp_operation op = {0};
    struct error e = {0};

    fake_gce_quota(f->fake, "GPUS_ALL_REGIONS");
    assert_int_equal(insert(f, &q, &op), 0);
    assert_int_equal(wait_op(f, &op, &e), ERR_QUOTA);
    assert_non_null(strstr(e.msg, "GPUS_ALL_REGIONS"));
    /* the metric as Compute Engine names it in quotaInfo (the message names the quota) */
    assert_string_equal(op.error.quota_metric, "compute.googleapis.com/gpus_all_regions");
    fake_gce_quota(f->fake, NULL);
    fake_gce_push(f->fake, OPS_PATH, 403,
                  "{\"error\":{\"code\":403,\"message\":\"Quota 'NVIDIA_T4_GPUS' exceeded.\","
                  "\"errors\":[{\"reason\":\"quotaExceeded\",\"message\":\"Quota "
                  "'NVIDIA_T4_GPUS' exceeded.\"}]}}");
    q.token = "launch-0008";
    assert_int_equal(gcp_instances_insert(f->c, &q, &op, &e), ERR_QUOTA);
    assert_non_null(strstr(e.msg, "NVIDIA_T4_GPUS"));
    hooks_capture(e.msg);
}

/* 429, a 403 rate-limit reason, and 500 and 503 (with or without Google's document) are waited
 * out with full-jitter backoff and retried; each retry is logged. */
static void gcp_rest_call__throttled_then_success(void **state)
{
    struct fixture *f = *state;
    struct gcp_insert_request q = spot_t4(ZONE, "castor-node-7", "launch-0009");
    struct gcp_operation op = {0};

    fake_gce_push(f->fake, OPS_PATH, 429,
                  "{\"error\":{\"code\":429,\"message\":\"Rate Limit Exceeded\",\"errors\":"
                  "[{\"reason\":\"rateLimitExceeded\",\"message\":\"Rate Limit Exceeded\"}],"
                  "\"status\":\"RESOURCE_EXHAUSTED\"}}");
    fake_gce_push(f->fake, OPS_PATH, 403,
                  "{\"error\":{\"code\":403,\"message\":\"slow down\",\"errors\":[{\"reason\":"
                  "\"userRateLimitExceeded\",\"message\":\"slow down\"}]}}");
    fake_gce_push(f->fake, OPS_PATH, 500, "<html>Internal Server Error</html>");
    assert_int_equal(insert(f, &q, &op), 0);
    assert_int_equal(f->h->n_sleeps, 3);
    for (int i = 0; i < 3; i++)
        assert_true(f->h->sleeps[i] >= 0 && f->h->sleeps[i] <= 100L << i);
    assert_non_null(strstr(f->h->last_log, "retry 3 of 3"));
    assert_non_null(strstr(f->h->last_log, "HTTP 500"));
    assert_int_equal(fake_gce_instance_count(f->fake), 1);
}

/* 503 on every attempt: ERR_AGAIN after max_attempts, saying so. */
static void gcp_rest_call__gives_up(void **state)
{
    struct fixture *f = *state;
    struct gcp_instance in;
    struct error e = {0};

    for (int i = 0; i < 4; i++)
        fake_gce_push(f->fake, OPS_PATH, 503,
                      "{\"error\":{\"code\":503,\"message\":\"busy\",\"errors\":[{\"reason\":"
                      "\"backendError\",\"message\":\"busy\"}]}}");
    assert_int_equal(gcp_instance_get(f->c, ZONE, "castor-node-1", &in, &e), ERR_AGAIN);
    assert_non_null(strstr(e.msg, "gave up after 4 attempts"));
    assert_non_null(strstr(e.file, "instances.get"));
    assert_int_equal(f->h->n_sleeps, 3);
    hooks_capture(e.msg);
}

/* A server that never answers: each attempt times out and is retried; a cut answer too; after
 * the last attempt ERR_IO. */
static void gcp_rest_call__timeouts_and_cut_answers(void **state)
{
    struct fixture *f = *state;
    struct gcp_insert_request q = spot_t4(ZONE, "castor-node-8", "launch-0010");
    struct gcp_operation op = {0};
    struct gcp_instance in;
    struct error e = {0};

    fake_gce_push_hang(f->fake, OPS_PATH);
    fake_gce_push_cut(f->fake, OPS_PATH, "{\"kind\":\"compute#operation\",\"name\":\"x\"}", 10);
    assert_int_equal(insert(f, &q, &op), 0);
    assert_int_equal(f->h->n_sleeps, 2);
    for (int i = 0; i < 4; i++)
        fake_gce_push_hang(f->fake, OPS_PATH);
    assert_int_equal(gcp_instance_get(f->c, ZONE, "castor-node-8", &in, &e), ERR_IO);
    assert_non_null(strstr(e.msg, "transport"));
    hooks_capture(e.msg);
}

/* Refusals for good, whatever the attempts left: each with its code and Google's reason. */
static void gcp_rest_call__refusals(void **state)
{
    struct fixture *f = *state;
    static const struct {
        int status;
        const char *body;
        int err;
        const char *says;
    } cases[] = {
        {404,
         "{\"error\":{\"code\":404,\"message\":\"gone\",\"errors\":[{\"reason\":\"notFound\"}]}}",
         ERR_NOENT, "notFound"},
        {400,
         "{\"error\":{\"code\":400,\"message\":\"bad\",\"errors\":[{\"reason\":\"invalid\"}]}}",
         ERR_INVAL, "invalid"},
        {403, "{\"error\":{\"code\":403,\"message\":\"no\",\"status\":\"PERMISSION_DENIED\"}}",
         ERR_PERM, "PERMISSION_DENIED"},
        {400,
         "{\"error\":{\"code\":400,\"message\":\"new\",\"errors\":[{\"reason\":\"brandNew\"}]}}",
         ERR_UNKNOWN, "unknown error reason: HTTP 400 brandNew"},
        {400, "<html>Bad Request</html>", ERR_PARSE, "not a Google error document"},
        {200, "not json", ERR_PARSE, "not a JSON object"},
        {200, "[1,2]", ERR_PARSE, "not a JSON object"},
    };
    struct gcp_instance in;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct error e = {0};

        fake_gce_push(f->fake, OPS_PATH, cases[i].status, cases[i].body);
        assert_int_equal(gcp_instance_get(f->c, ZONE, "castor-node-1", &in, &e), cases[i].err);
        if (!strstr(e.msg, cases[i].says))
            fail_msg("case %zu: '%s' does not say '%s'", i, e.msg, cases[i].says);
        hooks_capture(e.msg);
    }
    assert_int_equal(f->h->n_sleeps, 0);
}

/* Answers with fields missing or of the wrong kind are ERR_PARSE naming the call; an
 * operation error with a code castor does not know is ERR_UNKNOWN naming the code. */
static void gcp_compute__malformed_answers(void **state)
{
    struct fixture *f = *state;
    struct gcp_insert_request q = spot_t4(ZONE, "castor-node-9", "launch-0011");
    struct gcp_operation op = {0};
    struct gcp_instance in;
    struct error e = {0};

    fake_gce_push(f->fake, OPS_PATH, 200, "{\"kind\":\"compute#operation\",\"status\":\"DONE\"}");
    assert_int_equal(gcp_instances_insert(f->c, &q, &op, &e), ERR_PARSE);
    assert_non_null(strstr(e.file, "instances.insert"));
    fake_gce_push(f->fake, OPS_PATH, 200, "{\"name\":\"op-1\",\"status\":\"SLEEPING\"}");
    assert_int_equal(gcp_instances_insert(f->c, &q, &op, &e), ERR_PARSE);
    fake_gce_push(f->fake, OPS_PATH, 200, "{\"name\":\"castor-node-1\",\"zone\":\"zones/x\"}");
    assert_int_equal(gcp_instance_get(f->c, ZONE, "castor-node-1", &in, &e), ERR_PARSE);
    assert_non_null(strstr(e.msg, "without name, zone, machineType or status"));
    fake_gce_push(f->fake, OPS_PATH, 200,
                  "{\"name\":\"op-2\",\"zone\":\"zones/" ZONE "\",\"status\":\"DONE\","
                  "\"error\":{\"errors\":[{\"code\":\"SOMETHING_NEW\",\"message\":\"hm\"}]}}");
    assert_int_equal(gcp_instances_insert(f->c, &q, &op, &e), 0);
    assert_int_equal(wait_op(f, &op, &e), ERR_UNKNOWN);
    assert_non_null(strstr(e.msg, "SOMETHING_NEW"));
    fake_gce_push(f->fake, OPS_PATH, 200,
                  "{\"name\":\"op-3\",\"zone\":\"zones/" ZONE "\",\"status\":\"DONE\","
                  "\"error\":{\"errors\":[]}}");
    assert_int_equal(gcp_instances_insert(f->c, &q, &op, &e), ERR_PARSE);
    hooks_capture(e.msg);
}

/* An operation that stays RUNNING: ERR_AGAIN once the clock has passed operation_timeout_s. */
static void gcp_operation_wait__times_out(void **state)
{
    struct fixture *f = *state;
    struct gcp_operation op = {0};
    struct error e = {0};

    snprintf(op.name, sizeof(op.name), "op-slow");
    snprintf(op.zone, sizeof(op.zone), ZONE);
    snprintf(op.status, sizeof(op.status), "RUNNING");
    for (int i = 0; i < 8; i++)
        fake_gce_push(f->fake, OPS_PATH ZONE "/operations/op-slow", 200,
                      "{\"name\":\"op-slow\",\"zone\":\"zones/" ZONE "\",\"status\":\"RUNNING\"}");
    f->h->tick = 30;
    assert_int_equal(wait_op(f, &op, &e), ERR_AGAIN);
    assert_non_null(strstr(e.msg, "still RUNNING after 120 s"));
    assert_true(f->h->n_sleeps >= 2 && f->h->n_sleeps <= 8);
}

/* Delete: an operation, then the instance is gone; deleting it again is ERR_NOENT. */
static void gcp_instances_delete__and_again(void **state)
{
    struct fixture *f = *state;
    struct gcp_operation op = {0};
    struct error e = {0};

    assert_int_equal(fake_gce_add_instance(f->fake, ZONE, "castor-old", CLUSTER, "t1", NULL, 1), 0);
    assert_int_equal(gcp_instances_delete(f->c, ZONE, "castor-old", "t1", &op, &e), 0);
    assert_non_null(strstr(fake_gce_last_target(f->fake, OPS_PATH), "requestId="));
    assert_int_equal(wait_op(f, &op, &e), 0);
    assert_int_equal(fake_gce_instance_count(f->fake), 0);
    assert_int_equal(gcp_instances_delete(f->c, ZONE, "castor-old", NULL, &op, &e), ERR_NOENT);
    hooks_capture(e.msg);
}

/* The cluster's instances over three pages of three, across zones, another cluster's left out
 * (by the filter, and by castor when a server ignores it); every field read. */
static void gcp_instances_list__pages_and_filter(void **state)
{
    struct fixture *f = *state;
    static const char *const zones[] = {"us-central1-a", "us-east1-c", "europe-west4-b"};
    struct gcp_instance *list = NULL;
    struct error e = {0};
    char name[32];
    size_t n = 0, spot = 0;

    for (int i = 0; i < 7; i++) {
        snprintf(name, sizeof(name), "castor-a%d", i);
        assert_int_equal(fake_gce_add_instance(f->fake, zones[i % 3], name, CLUSTER, name + 7,
                                               i == 6 ? "TERMINATED" : NULL, i % 2),
                         0);
    }
    assert_int_equal(fake_gce_add_instance(f->fake, ZONE, "other-1", "beta", "x", NULL, 0), 0);
    assert_int_equal(fake_gce_add_instance(f->fake, ZONE, "other-2", "beta", "y", NULL, 0), 0);
    gcp_compute_free(f->c);
    f->c = client(f, 3);
    assert_int_equal(gcp_instances_list(f->c, CLUSTER, &list, &n, &e), 0);
    assert_int_equal(n, 7);
    assert_int_equal(fake_gce_requests(f->fake, FAKE_GCE_COMPUTE "/projects/" GCP_PROJECT
                                                                 "/aggregated/instances"),
                     3);
    assert_non_null(strstr(fake_gce_last_target(f->fake, FAKE_GCE_COMPUTE), "pageToken=o6"));
    assert_non_null(strstr(fake_gce_last_target(f->fake, FAKE_GCE_COMPUTE),
                           "filter=labels.castor-cluster%3Dalpha&maxResults=3"));
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(list[i].cluster, CLUSTER);
        assert_string_equal(list[i].machine_type, "n1-standard-8");
        assert_string_equal(list[i].token, list[i].name + 7);
        assert_true(strncmp(list[i].ip, "10.128.0.", 9) == 0);
        assert_true(list[i].id[0] != '\0');
        spot += list[i].spot;
        if (strcmp(list[i].name, "castor-a6") == 0)
            assert_string_equal(list[i].status, "TERMINATED");
    }
    assert_int_equal(spot, 3);
    free(list);
    /* a server that ignores the filter: castor keeps only its cluster */
    fake_gce_push(f->fake, FAKE_GCE_COMPUTE "/projects/" GCP_PROJECT "/aggregated", 200,
                  "{\"items\":{\"zones/" ZONE
                  "\":{\"instances\":[{\"name\":\"x\",\"zone\":\"z/" ZONE
                  "\",\"machineType\":\"m/n1\",\"status\":\"RUNNING\",\"labels\":"
                  "{\"castor-cluster\":\"beta\"}}]}}}");
    assert_int_equal(gcp_instances_list(f->c, CLUSTER, &list, &n, &e), 0);
    assert_int_equal(n, 0);
    free(list);
}

/* A page that answers with the pageToken it was asked with would be asked for without end
 * (10,000 pages): the list fails, ERR_PARSE, after two calls. */
static void gcp_instances_list__a_repeated_page_token_ends_the_walk(void **state)
{
    struct fixture *f = *state;
    struct gcp_instance *list = (void *)1;
    struct error e = {0};
    size_t n = 99;

    for (int i = 0; i < 2; i++)
        fake_gce_push(f->fake, FAKE_GCE_COMPUTE "/projects/" GCP_PROJECT "/aggregated", 200,
                      "{\"items\":{},\"nextPageToken\":\"t1\"}");
    assert_int_equal(gcp_instances_list(f->c, CLUSTER, &list, &n, &e), ERR_PARSE);
    assert_int_equal(fake_gce_requests(f->fake, FAKE_GCE_COMPUTE "/projects/" GCP_PROJECT
                                                                 "/aggregated/instances"),
                     2);
    assert_non_null(strstr(fake_gce_last_target(f->fake, FAKE_GCE_COMPUTE), "pageToken=t1"));
    assert_non_null(strstr(e.msg, "pageToken"));
    assert_true(list == (void *)1 && n == 99);
    hooks_capture(e.msg);
}

/* A zone that could not be read (a warning UNREACHABLE, or the unreachables list) makes the
 * list fail (ERR_AGAIN), never partial; malformed pages are ERR_PARSE. */
static void gcp_instances_list__unreachable_and_malformed(void **state)
{
    struct fixture *f = *state;
    static const struct {
        const char *body;
        int err;
    } cases[] = {
        {"{\"items\":{\"zones/us-east1-b\":{\"warning\":{\"code\":\"UNREACHABLE\"}}}}", ERR_AGAIN},
        {"{\"items\":{},\"unreachables\":[\"zones/us-east1-b\"]}", ERR_AGAIN},
        {"{\"items\":[]}", ERR_PARSE},
        {"{\"items\":{\"zones/a\":{\"instances\":{}}}}", ERR_PARSE},
        {"{\"items\":{\"zones/a\":{\"instances\":[{\"name\":\"x\"}]}}}", ERR_PARSE},
        {"{\"items\":{},\"nextPageToken\":5}", ERR_PARSE},
    };
    struct gcp_instance *list = NULL;
    size_t n = 99;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct error e = {0};

        fake_gce_push(f->fake, FAKE_GCE_COMPUTE "/projects/" GCP_PROJECT "/aggregated", 200,
                      cases[i].body);
        if (gcp_instances_list(f->c, CLUSTER, &list, &n, &e) != cases[i].err)
            fail_msg("case %zu: %s", i, e.msg);
        hooks_capture(e.msg);
    }
    assert_null(list);
    assert_int_equal(n, 99);
}

/* A token the server no longer takes (401): a new one is fetched and the call goes through;
 * a server that echoes the token in an error sees it starred out of the message. */
static void gcp_rest_call__revoked_token_and_echo(void **state)
{
    struct fixture *f = *state;
    struct gcp_instance in;
    struct error e = {0};
    size_t issued;

    assert_int_equal(fake_gce_add_instance(f->fake, ZONE, "castor-r", CLUSTER, "t", NULL, 0), 0);
    assert_int_equal(gcp_instance_get(f->c, ZONE, "castor-r", &in, &e), 0);
    issued = fake_gce_tokens_issued(f->fake);
    fake_gce_revoke_tokens(f->fake);
    assert_int_equal(gcp_instance_get(f->c, ZONE, "castor-r", &in, &e), 0);
    assert_int_equal(fake_gce_tokens_issued(f->fake), issued + 1);
    assert_int_equal(fake_gce_auth_failures(f->fake), 1);
    fake_gce_push(f->fake, OPS_PATH, 400,
                  "{\"error\":{\"code\":400,\"message\":\"bad token @TOKEN@\",\"errors\":"
                  "[{\"reason\":\"invalid\",\"message\":\"bad token @TOKEN@\"}]}}");
    assert_int_equal(gcp_instance_get(f->c, ZONE, "castor-r", &in, &e), ERR_INVAL);
    assert_non_null(strstr(e.msg, "bad token *****"));
    hooks_capture(e.msg);
}

/* regions.get and projects.get: GET of the region's and the project's resource, each quota's
 * metric, limit and usage as Compute Engine lists them (a usage left out reads as 0). */
static void gcp_quotas__region_and_project(void **state)
{
    struct fixture *f = *state;
    struct gcp_quota *q = NULL;
    size_t n = 0;

    fake_gce_set_quota(f->fake, "us-central1", "NVIDIA_T4_GPUS", 4, 1);
    fake_gce_set_quota(f->fake, "us-central1", "PREEMPTIBLE_NVIDIA_T4_GPUS", 16, 2.5);
    assert_int_equal(gcp_region_quotas(f->c, "us-central1", &q, &n, NULL), 0);
    assert_string_equal(fake_gce_last_target(f->fake, REGIONS_PATH), REGIONS_PATH "us-central1");
    assert_int_equal(n, 3);
    assert_string_equal(q[0].metric, "CPUS");
    assert_float_equal(q[0].limit, 96, 0);
    assert_string_equal(q[1].metric, "NVIDIA_T4_GPUS");
    assert_float_equal(q[1].limit, 4, 0);
    assert_float_equal(q[1].usage, 1, 0);
    assert_string_equal(q[2].metric, "PREEMPTIBLE_NVIDIA_T4_GPUS");
    assert_float_equal(q[2].usage, 2.5, 0);
    free(q);
    assert_int_equal(gcp_project_quotas(f->c, &q, &n, NULL), 0);
    assert_string_equal(fake_gce_last_target(f->fake, PROJECT_PATH), PROJECT_PATH);
    assert_int_equal(n, 2);
    assert_string_equal(q[0].metric, "GPUS_ALL_REGIONS");
    assert_float_equal(q[0].limit, 16, 0);
    assert_string_equal(q[1].metric, "CPUS_ALL_REGIONS");
    free(q);
    fake_gce_push(f->fake, REGIONS_PATH, 200,
                  "{\"name\":\"us-east1\",\"quotas\":[{\"metric\":\"CPUS\",\"limit\":8.0}]}");
    assert_int_equal(gcp_region_quotas(f->c, "us-east1", &q, &n, NULL), 0);
    assert_int_equal(n, 1);
    assert_float_equal(q[0].usage, 0, 0);
    free(q);
}

/* A role without the permission (403) is ERR_PERM, a region Compute Engine does not know (404)
 * ERR_NOENT, a token refused twice (401) ERR_INVAL, a region that cannot be a path segment
 * ERR_INVAL unasked; the outputs are left alone. */
static void gcp_quotas__refusals(void **state)
{
    struct fixture *f = *state;
    static struct gcp_quota untouched;
    struct gcp_quota *q = &untouched;
    size_t n = 77, asked;
    struct error e = {0};

    fake_gce_push(f->fake, REGIONS_PATH, 403,
                  "{\"error\":{\"code\":403,\"message\":\"Required 'compute.regions.get' "
                  "permission\",\"errors\":[{\"reason\":\"forbidden\"}]}}");
    assert_int_equal(gcp_region_quotas(f->c, "us-central1", &q, &n, &e), ERR_PERM);
    assert_int_equal(e.code, ERR_PERM);
    assert_non_null(strstr(e.msg, "compute.regions.get"));
    fake_gce_push(f->fake, PROJECT_PATH, 403,
                  "{\"error\":{\"code\":403,\"message\":\"no\",\"status\":\"PERMISSION_DENIED\"}}");
    assert_int_equal(gcp_project_quotas(f->c, &q, &n, &e), ERR_PERM);
    assert_int_equal(gcp_region_quotas(f->c, "mars-north1", &q, &n, &e), ERR_NOENT);
    assert_non_null(strstr(e.msg, "notFound"));
    fake_gce_push(f->fake, REGIONS_PATH, 401, "{}");
    fake_gce_push(f->fake, REGIONS_PATH, 401, "{}");
    assert_int_equal(gcp_region_quotas(f->c, "us-central1", &q, &n, &e), ERR_INVAL);
    asked = fake_gce_requests(f->fake, REGIONS_PATH);
    assert_int_equal(gcp_region_quotas(f->c, "us-central1/../x", &q, &n, &e), ERR_INVAL);
    assert_int_equal(fake_gce_requests(f->fake, REGIONS_PATH), asked);
    assert_ptr_equal(q, &untouched);
    assert_int_equal(n, 77);
    hooks_capture(e.msg);
}

/* Answers without a quotas array, or with a quota that lacks its metric or whose limit or usage
 * is not a number >= 0, are ERR_PARSE with the reason; nothing is written. */
static void gcp_quotas__malformed_answers(void **state)
{
    struct fixture *f = *state;
    /* "quotas": not an array; then an array holding one bad quota */
    static const char *const not_arrays[] = {"null", "{\"CPUS\":24}"};
    static const char *const bad_quotas[] = {
        "{\"limit\":24}", "{\"metric\":\"CPUS\",\"limit\":\"24\"}", "{\"metric\":\"CPUS\"}",
        "{\"metric\":\"CPUS\",\"limit\":24,\"usage\":-1}", "7"};
    struct gcp_quota *q = NULL;
    size_t n = 77;

    for (size_t i = 0; i < 2 + sizeof(bad_quotas) / sizeof(bad_quotas[0]); i++) {
        struct error e = {0};
        char body[128];

        if (i < 2)
            snprintf(body, sizeof(body), "{\"quotas\":%s}", not_arrays[i]);
        else
            snprintf(body, sizeof(body), "{\"quotas\":[{\"metric\":\"CPUS\",\"limit\":1},%s]}",
                     bad_quotas[i - 2]);
        fake_gce_push(f->fake, REGIONS_PATH, 200, body);
        assert_int_equal(gcp_region_quotas(f->c, "us-central1", &q, &n, &e), ERR_PARSE);
        assert_non_null(strstr(e.file, "regions.get"));
        if (!strstr(e.msg, i < 2 ? "without its quotas array" : "a quota without its metric, or"))
            fail_msg("case %zu: %s", i, e.msg);
    }
    fake_gce_push(f->fake, PROJECT_PATH, 200, "{\"name\":\"" GCP_PROJECT "\"}");
    assert_int_equal(gcp_project_quotas(f->c, &q, &n, NULL), ERR_PARSE);
    assert_null(q);
    assert_int_equal(n, 77);
}

/* An image's size: by family or by name, in another project or this one, or after the API's
 * URL; its diskSizeGb a string (as Google writes an int64) or a number. Refused unasked: a name
 * of another shape, a dot segment. 404 ERR_NOENT, 403 ERR_PERM, an answer without a size
 * ERR_PARSE; the output is left alone on every failure. */
static void gcp_image_disk_gb__reads_and_refusals(void **state)
{
    static const char *const bad[] = {"img",
                                      "debian-12",
                                      "projects/p/zones/a/images/x",
                                      "projects/p/global/images/../x",
                                      "global/images/",
                                      "projects/p/global/images/a//b"};
    struct fixture *f = *state;
    struct error e = {0};
    double gb = 0;
    size_t asked;

    assert_int_equal(
        gcp_image_disk_gb(f->c, "projects/debian-cloud/global/images/family/debian-12", &gb, &e),
        0);
    assert_float_equal(gb, 10, 0);
    fake_gce_set_image(f->fake, "projects/" GCP_PROJECT "/global/images/ours", 64);
    assert_int_equal(gcp_image_disk_gb(f->c, "global/images/ours", &gb, &e), 0);
    assert_float_equal(gb, 64, 0);
    fake_gce_push(f->fake, PROJECT_PATH "/global/images/ours", 200, "{\"diskSizeGb\":32}");
    assert_int_equal(gcp_image_disk_gb(f->c,
                                       "https://www.googleapis.com/compute/v1/projects/" GCP_PROJECT
                                       "/global/images/ours",
                                       &gb, &e),
                     0);
    assert_float_equal(gb, 32, 0);

    gb = -1;
    asked = fake_gce_requests(f->fake, FAKE_GCE_COMPUTE);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(gcp_image_disk_gb(f->c, bad[i], &gb, &e), ERR_INVAL);
    assert_int_equal(fake_gce_requests(f->fake, FAKE_GCE_COMPUTE), asked);
    assert_int_equal(gcp_image_disk_gb(f->c, "global/images/gone", &gb, &e), ERR_NOENT);
    fake_gce_push(f->fake, PROJECT_PATH "/global/images/ours", 403,
                  "{\"error\":{\"code\":403,\"message\":\"Required 'compute.images.get' "
                  "permission\",\"errors\":[{\"reason\":\"forbidden\"}]}}");
    assert_int_equal(gcp_image_disk_gb(f->c, "global/images/ours", &gb, &e), ERR_PERM);
    fake_gce_push(f->fake, PROJECT_PATH "/global/images/ours", 200, "{\"name\":\"ours\"}");
    assert_int_equal(gcp_image_disk_gb(f->c, "global/images/ours", &gb, &e), ERR_PARSE);
    assert_non_null(strstr(e.msg, "without its diskSizeGb"));
    assert_float_equal(gb, -1, 0);
}

/* The helpers: request ids (a UUID token passes, lower-cased; others map to a fixed version-8
 * UUID), names, labels, regions, built-in GPUs, reasons. */
static void gcp_compute__helpers(void **state)
{
    char a[GCP_UUID_LEN + 1], b[GCP_UUID_LEN + 1], name[GCP_NAME_MAX], other[GCP_NAME_MAX];
    char region[32];
    const char *acc = NULL;
    int count = 0;

    (void)state;
    assert_int_equal(gcp_request_id("0F8FAD5B-D9CB-469F-A165-70867728950E", a), 0);
    assert_string_equal(a, "0f8fad5b-d9cb-469f-a165-70867728950e");
    assert_int_equal(gcp_request_id("launch-1", a), 0);
    assert_int_equal(gcp_request_id("launch-1", b), 0);
    assert_string_equal(a, b);
    assert_int_equal(strlen(a), GCP_UUID_LEN);
    assert_int_equal(a[14], '8');
    assert_true(strchr("89ab", a[19]) != NULL);
    assert_int_equal(gcp_request_id("launch-2", b), 0);
    assert_string_not_equal(a, b);
    assert_int_equal(gcp_request_id("", a), ERR_INVAL);
    assert_int_equal(gcp_instance_name("alpha", "launch-1", name), 0);
    assert_int_equal(strlen(name), 27);
    assert_true(strncmp(name, "castor-", 7) == 0);
    assert_int_equal(gcp_instance_name("beta", "launch-1", other), 0);
    assert_string_not_equal(name, other);
    assert_true(gcp_label_ok("launch_1-x"));
    assert_false(gcp_label_ok("Launch"));
    assert_false(gcp_label_ok(""));
    assert_int_equal(gcp_zone_region("europe-west4-b", region, sizeof(region)), 0);
    assert_string_equal(region, "europe-west4");
    assert_int_equal(gcp_zone_region("nodash", region, sizeof(region)), ERR_PARSE);
    assert_int_equal(gcp_machine_gpus("a2-highgpu-4g", &count, &acc), 0);
    assert_int_equal(count, 4);
    assert_string_equal(acc, "nvidia-tesla-a100");
    assert_int_equal(gcp_machine_gpus("g2-standard-24", &count, &acc), 0);
    assert_int_equal(count, 2);
    assert_int_equal(gcp_machine_gpus("n1-standard-8", &count, &acc), ERR_UNKNOWN);
    {
        static const struct {
            const char *type;
            int vcpus;
            double gib;
        } shapes[] = {{"n1-standard-8", 8, 30},    {"n1-highmem-4", 4, 26},
                      {"a2-highgpu-2g", 24, 170},  {"a2-megagpu-16g", 96, 1360},
                      {"a2-ultragpu-1g", 12, 170}, {"g2-standard-24", 24, 96},
                      {"a3-highgpu-8g", 208, 1872}};
        int vcpus = -1;
        double gib = -1;

        for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
            assert_int_equal(gcp_machine_shape(shapes[i].type, &vcpus, &gib), 0);
            assert_int_equal(vcpus, shapes[i].vcpus);
            assert_float_equal(gib, shapes[i].gib, 1e-9);
        }
        assert_int_equal(gcp_machine_shape("n1-standard-8g", &vcpus, &gib), ERR_UNKNOWN);
        assert_int_equal(gcp_machine_shape("a2-highgpu-2", &vcpus, &gib), ERR_UNKNOWN);
        assert_int_equal(gcp_machine_shape("e2-medium", &vcpus, &gib), ERR_UNKNOWN);
        assert_int_equal(vcpus, 208);
    }
    {
        /* accelerator type, then its regional quota metric: not the type in capitals */
        static const char *const metrics[][2] = {
            {"nvidia-tesla-t4", "NVIDIA_T4_GPUS"},
            {"nvidia-tesla-v100", "NVIDIA_V100_GPUS"},
            {"nvidia-tesla-a100", "NVIDIA_A100_GPUS"},
            {"nvidia-a100-80gb", "NVIDIA_A100_80GB_GPUS"},
            {"nvidia-l4", "NVIDIA_L4_GPUS"},
            {"nvidia-h100-80gb", "NVIDIA_H100_GPUS"},
        };

        for (size_t i = 0; i < sizeof(metrics) / sizeof(metrics[0]); i++)
            assert_string_equal(gcp_gpu_quota_metric(metrics[i][0]), metrics[i][1]);
        assert_null(gcp_gpu_quota_metric("nvidia-b200"));
    }
    assert_null(gcp_gpu_quota_metric(NULL));
    assert_int_equal(gcp_error_code("ZONE_RESOURCE_POOL_EXHAUSTED"), ERR_CAPACITY);
    assert_int_equal(gcp_error_code("ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS"), ERR_CAPACITY);
    assert_int_equal(gcp_error_code("QUOTA_EXCEEDED"), ERR_QUOTA);
    assert_int_equal(gcp_error_code("rateLimitExceeded"), 0);
    assert_int_equal(gcp_error_code("SOMETHING_NEW"), ERR_UNKNOWN);
    assert_int_equal(gcp_error_code(NULL), ERR_UNKNOWN);
}

/* Run last: no message or log line of the run holds a secret. */
static void gcp_compute__no_secret_in_any_message(void **state)
{
    (void)state;
    assert_true(hooks_captured_len() > 0);
    assert_true(gcp_clean(hooks_captured()));
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(gcp_instances_insert__spot_with_gpu),
        T(gcp_instances_insert__standard_and_builtin_gpus),
        T(gcp_instances_insert__idempotent_by_request_id),
        T(gcp_operation_wait__zone_exhausted),
        T(gcp_operation_wait__quota),
        T(gcp_rest_call__throttled_then_success),
        T(gcp_rest_call__gives_up),
        T(gcp_rest_call__timeouts_and_cut_answers),
        T(gcp_rest_call__refusals),
        T(gcp_compute__malformed_answers),
        T(gcp_operation_wait__times_out),
        T(gcp_instances_delete__and_again),
        T(gcp_instances_list__pages_and_filter),
        T(gcp_instances_list__a_repeated_page_token_ends_the_walk),
        T(gcp_instances_list__unreachable_and_malformed),
        T(gcp_rest_call__revoked_token_and_echo),
        T(gcp_quotas__region_and_project),
        T(gcp_quotas__refusals),
        T(gcp_quotas__malformed_answers),
        T(gcp_image_disk_gb__reads_and_refusals),
        cmocka_unit_test(gcp_compute__helpers),
        cmocka_unit_test(gcp_compute__no_secret_in_any_message),
    };
#undef T

    return cmocka_run_group_tests(tests, NULL, NULL);
}
