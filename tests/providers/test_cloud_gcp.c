/* test_cloud_gcp.c: the gcp cloud (struct cloud_ops over Compute Engine and the Billing Catalog)
 * against the fake Google Cloud: offers named and priced from the catalog, launches idempotent
 * by token (requestId, and the instance name derived from the token), capacity and quota
 * failures, the cluster's instances with their offer, token and state, terminations of this
 * cluster's instances only, and configurations it refuses; exhausted zones and quotas held for a
 * while (the planner fails over), bad answers that leave the cloud usable; the quotas each
 * offer takes from (regions.get, projects.get), and reads of them that fail. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gcp_fixture.h"
#include "providers/gcp/cloud_gcp.h"

#define CLUSTER "alpha"
#define T4_SPOT "n1-standard-8+nvidia-tesla-t4x1/us-central1-a/spot"
#define A2_STD "a2-highgpu-2g/us-central1-b/standard"
#define T4_STD_A "n1-standard-8+nvidia-tesla-t4x1/us-central1-a/standard"
#define T4_SPOT_C "n1-standard-8+nvidia-tesla-t4x1/us-central1-c/spot"
#define T4_SPOT_EAST "n1-standard-8+nvidia-tesla-t4x1/us-east1-c/spot"
#define N_OFFERS 5
#define INSERTS FAKE_GCE_COMPUTE "/projects/" GCP_PROJECT "/zones/"
#define PROJECT FAKE_GCE_COMPUTE "/projects/" GCP_PROJECT
#define REGIONS PROJECT "/regions/"

struct fixture {
    struct gcp_world w;
    struct gcp_compute *compute;
    struct gcp_billing *billing;
    struct cloud cloud;
};

static const struct cloud_gcp_offer offers[] = {
    {.machine_type = "n1-standard-8",
     .zone = "us-central1-a",
     .spot = 1,
     .accelerator_type = "nvidia-tesla-t4",
     .accelerator_count = 1},
    {.machine_type = "a2-highgpu-2g", .zone = "us-central1-b"},
    {.machine_type = "n1-standard-8",
     .zone = "us-central1-a",
     .accelerator_type = "nvidia-tesla-t4",
     .accelerator_count = 1},
    {.machine_type = "n1-standard-8",
     .zone = "us-central1-c",
     .spot = 1,
     .accelerator_type = "nvidia-tesla-t4",
     .accelerator_count = 1},
    {.machine_type = "n1-standard-8",
     .zone = "us-east1-c",
     .spot = 1,
     .accelerator_type = "nvidia-tesla-t4",
     .accelerator_count = 1},
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct gcp_compute_config cc = {.project = GCP_PROJECT, .poll_interval_ms = 10};
    struct gcp_billing_config bc = {0};
    struct cloud_gcp_config cfg = {
        .offers = offers,
        .n_offers = N_OFFERS,
        .instance = {.source_image = "projects/debian-cloud/global/images/family/debian-12"},
        .zone_hold_s = 600,
        .quota_hold_s = 1800,
        .clock = hooks_clock,
    };

    if (!f || gcp_world_start(&f->w) < 0)
        return -1;
    cc.rest = gcp_world_rest(&f->w, f->w.compute, 3);
    bc.rest = gcp_world_rest(&f->w, f->w.billing, 1);
    if (gcp_compute_new(&cc, &f->compute, NULL) < 0 || gcp_billing_new(&bc, &f->billing, NULL) < 0)
        return -1;
    cfg.compute = f->compute;
    cfg.billing = f->billing;
    cfg.hook_arg = &f->w.h;
    if (cloud_gcp_new(&cfg, &f->cloud, NULL) < 0)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    cloud_free(&f->cloud);
    gcp_billing_free(f->billing);
    gcp_compute_free(f->compute);
    gcp_world_stop(&f->w);
    free(f);
    return 0;
}

/* Offers by name with their GPUs (attached or built in), priced from the catalog's parts; a
 * part without a price (no A2 in that page) leaves the price unknown. */
static void cloud_gcp_offers__named_and_priced(void **state)
{
    struct fixture *f = *state;
    char path[512], *page = NULL;
    struct cloud_offer *list = NULL;
    size_t len = 0, n = 0;

    snprintf(path, sizeof(path), "%s/gcp/skus-page1.json", CASTOR_TEST_DATA);
    assert_int_equal(file_read_all(path, &page, &len, NULL), 0);
    page[len] = '\0';
    /* one page only: its nextPageToken "p2" becomes "" */
    memcpy(strstr(page, "\"p2\""), "\"\"  ", 4);
    fake_gce_push(f->w.fake, FAKE_GCE_BILLING "/services", 200, page);
    assert_int_equal(cloud_offers(&f->cloud, &list, &n), 0);
    assert_int_equal(n, N_OFFERS);
    assert_string_equal(list[0].name, T4_SPOT);
    assert_int_equal(list[0].gpus, 1);
    assert_int_equal(list[0].spot, 1);
    assert_float_equal(list[0].price, 8 * 0.006655 + 30 * 0.000892 + 0.112, 1e-9);
    assert_string_equal(list[1].name, A2_STD);
    assert_int_equal(list[1].gpus, 2);
    assert_int_equal(list[1].spot, 0);
    assert_true(isnan(list[1].price));
    assert_string_equal(list[2].name, T4_STD_A);
    assert_string_equal(list[3].name, T4_SPOT_C);
    assert_float_equal(list[3].price, list[0].price, 1e-12); /* one region, one price */
    assert_string_equal(list[4].name, T4_SPOT_EAST);
    free(list);
    free(page);
}

/* The clock (the cloud's and the fake's) s seconds on. */
static void advance(struct fixture *f, int64_t s)
{
    f->w.h.now += s;
    fake_gce_set_now(f->w.fake, f->w.h.now);
}

/* 1 when the offers now hold name. */
static int offered(struct fixture *f, const char *name)
{
    struct cloud_offer *list = NULL;
    size_t n = 0;
    int found = 0;

    assert_int_equal(cloud_offers(&f->cloud, &list, &n), 0);
    for (size_t i = 0; i < n; i++)
        found |= strcmp(list[i].name, name) == 0;
    free(list);
    return found;
}

/* An exhausted zone (ZONE_RESOURCE_POOL_EXHAUSTED) holds every offer of that zone, not only the
 * one launched: they leave the offers and a launch of one is refused without a request, while
 * the same type in another zone launches. When the hold has passed (by the clock given) the
 * zone's offers are back and a launch there is asked again. */
static void cloud_gcp_launch__exhausted_zone_fails_over(void **state)
{
    struct fixture *f = *state;
    char id[CLOUD_ID_MAX];
    size_t asked;

    fake_gce_push(f->w.fake, FAKE_GCE_BILLING "/services", 500, "{}");
    fake_gce_exhaust_zone(f->w.fake, "us-central1-a", 0);
    assert_int_equal(cloud_launch(&f->cloud, T4_SPOT, CLUSTER, "tok-10", id), ERR_CAPACITY);
    assert_false(offered(f, T4_SPOT));
    assert_false(offered(f, T4_STD_A)); /* the whole zone */
    assert_true(offered(f, T4_SPOT_C));
    assert_true(offered(f, A2_STD));
    asked = fake_gce_requests(f->w.fake, INSERTS);
    assert_int_equal(cloud_launch(&f->cloud, T4_STD_A, CLUSTER, "tok-11", id), ERR_CAPACITY);
    assert_int_equal(fake_gce_requests(f->w.fake, INSERTS), asked); /* not asked */
    assert_int_equal(cloud_launch(&f->cloud, T4_SPOT_C, CLUSTER, "tok-12", id), 0);
    assert_non_null(strstr(id, "us-central1-c."));
    assert_int_equal(fake_gce_instance_count(f->w.fake), 1);

    advance(f, 599); /* still held */
    assert_false(offered(f, T4_STD_A));
    advance(f, 1);
    assert_true(offered(f, T4_SPOT));
    assert_true(offered(f, T4_STD_A));
    /* asked again: still exhausted (_WITH_DETAILS this time) holds it again */
    fake_gce_restore_zone(f->w.fake, "us-central1-a");
    fake_gce_exhaust_zone(f->w.fake, "us-central1-a", 1);
    assert_int_equal(cloud_launch(&f->cloud, T4_STD_A, CLUSTER, "tok-13", id), ERR_CAPACITY);
    assert_true(fake_gce_requests(f->w.fake, INSERTS) > asked);
    assert_false(offered(f, T4_SPOT));
    advance(f, 600);
    fake_gce_restore_zone(f->w.fake, "us-central1-a");
    assert_int_equal(cloud_launch(&f->cloud, T4_SPOT, CLUSTER, "tok-14", id), 0);
    assert_non_null(strstr(id, "us-central1-a."));
    assert_int_equal(fake_gce_instance_count(f->w.fake), 2);
}

/* A quota reached holds what it counts: a regional GPU quota the offers of that GPU in that
 * region (another GPU there, and other regions, launch), a PREEMPTIBLE_ one the region's spot
 * offers of it only, GPUS_ALL_REGIONS every GPU offer; each for the quota's hold. */
static void cloud_gcp_launch__quota_held_by_region(void **state)
{
    struct fixture *f = *state;
    char id[CLOUD_ID_MAX];
    struct cloud_offer *list = NULL;
    size_t n = 0;

    fake_gce_push(f->w.fake, FAKE_GCE_BILLING "/services", 500, "{}");
    fake_gce_quota(f->w.fake, "NVIDIA_T4_GPUS");
    assert_int_equal(cloud_launch(&f->cloud, T4_SPOT, CLUSTER, "tok-20", id), ERR_QUOTA);
    assert_false(offered(f, T4_SPOT_C));
    assert_false(offered(f, T4_STD_A));
    assert_true(offered(f, A2_STD)); /* A100s count in another quota */
    assert_true(offered(f, T4_SPOT_EAST));
    assert_int_equal(cloud_launch(&f->cloud, T4_SPOT_C, CLUSTER, "tok-21", id), ERR_QUOTA);
    fake_gce_quota(f->w.fake, NULL);
    assert_int_equal(cloud_launch(&f->cloud, T4_SPOT_EAST, CLUSTER, "tok-22", id), 0);

    advance(f, 1800);
    assert_true(offered(f, T4_STD_A));
    fake_gce_quota(f->w.fake, "PREEMPTIBLE_NVIDIA_T4_GPUS");
    assert_int_equal(cloud_launch(&f->cloud, T4_SPOT_C, CLUSTER, "tok-23", id), ERR_QUOTA);
    assert_false(offered(f, T4_SPOT));
    assert_true(offered(f, T4_STD_A));
    assert_true(offered(f, A2_STD));

    advance(f, 1800);
    fake_gce_quota(f->w.fake, "GPUS_ALL_REGIONS");
    assert_int_equal(cloud_launch(&f->cloud, T4_STD_A, CLUSTER, "tok-24", id), ERR_QUOTA);
    assert_int_equal(cloud_offers(&f->cloud, &list, &n), 0);
    assert_int_equal(n, 0);
    free(list);
    advance(f, 1800);
    assert_true(offered(f, T4_SPOT_EAST));
    assert_int_equal(fake_gce_instance_count(f->w.fake), 1);
}

/* Bad answers through the cloud: each call fails with an error and changes nothing; the next
 * call, answered well, goes through (the loop goes on). */
static void cloud_gcp__bad_answers_then_recovery(void **state)
{
    struct fixture *f = *state;
    struct cloud_instance *list = NULL;
    char id[CLOUD_ID_MAX] = "untouched";
    size_t n = 0;

    fake_gce_push(f->w.fake, FAKE_GCE_COMPUTE "/projects/" GCP_PROJECT "/aggregated", 200,
                  "{\"items\": [1,");
    assert_int_equal(cloud_list(&f->cloud, CLUSTER, &list, &n), ERR_PARSE);
    assert_null(list);
    fake_gce_push(f->w.fake, FAKE_GCE_COMPUTE "/projects/" GCP_PROJECT "/aggregated", 200,
                  "{\"items\":{\"zones/us-central1-a\":{\"instances\":[{\"name\":\"x\"}]}}}");
    assert_int_equal(cloud_list(&f->cloud, CLUSTER, &list, &n), ERR_PARSE);
    fake_gce_push(f->w.fake, INSERTS, 400,
                  "{\"error\":{\"code\":400,\"message\":\"what\",\"errors\":[{\"reason\":"
                  "\"somethingNew\",\"message\":\"what\"}]}}");
    assert_int_equal(cloud_launch(&f->cloud, T4_SPOT, CLUSTER, "tok-30", id), ERR_UNKNOWN);
    assert_string_equal(id, "untouched");
    assert_true(offered(f, T4_SPOT)); /* an unknown refusal holds nothing */
    assert_int_equal(cloud_launch(&f->cloud, T4_SPOT, CLUSTER, "tok-30", id), 0);
    assert_int_equal(cloud_list(&f->cloud, CLUSTER, &list, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(list[0].id, id);
    free(list);
}

/* A launch waits for its operation and gives "<zone>.<name>"; the same token again gives the
 * same instance (one only); the instance is listed with its offer, token and state. */
static void cloud_gcp_launch__idempotent_and_listed(void **state)
{
    struct fixture *f = *state;
    char id[CLOUD_ID_MAX], again[CLOUD_ID_MAX], name[GCP_NAME_MAX], want[96];
    struct cloud_instance *list = NULL;
    size_t n = 0;

    assert_int_equal(cloud_launch(&f->cloud, T4_SPOT, CLUSTER, "tok-1", id), 0);
    assert_int_equal(gcp_instance_name(CLUSTER, "tok-1", name), 0);
    snprintf(want, sizeof(want), "us-central1-a.%s", name);
    assert_string_equal(id, want);
    assert_int_equal(cloud_launch(&f->cloud, T4_SPOT, CLUSTER, "tok-1", again), 0);
    assert_string_equal(again, id);
    assert_int_equal(fake_gce_instance_count(f->w.fake), 1);
    assert_int_equal(cloud_list(&f->cloud, CLUSTER, &list, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(list[0].id, id);
    assert_string_equal(list[0].offer, T4_SPOT);
    assert_string_equal(list[0].token, "tok-1");
    assert_int_equal(list[0].state, CLOUD_RUNNING);
    assert_true(list[0].launched > 0);
    free(list);
}

/* An instance of the token's name already there (a launch whose requestId Compute Engine has
 * forgotten): the same cluster and token is this launch; another token is ERR_CONFLICT. */
static void cloud_gcp_launch__name_already_taken(void **state)
{
    struct fixture *f = *state;
    char id[CLOUD_ID_MAX], name[GCP_NAME_MAX];

    assert_int_equal(gcp_instance_name(CLUSTER, "tok-2", name), 0);
    assert_int_equal(
        fake_gce_add_instance(f->w.fake, "us-central1-a", name, CLUSTER, "tok-2", NULL, 1), 0);
    assert_int_equal(cloud_launch(&f->cloud, T4_SPOT, CLUSTER, "tok-2", id), 0);
    assert_int_equal(fake_gce_instance_count(f->w.fake), 1);
    assert_int_equal(gcp_instance_name(CLUSTER, "tok-3", name), 0);
    assert_int_equal(
        fake_gce_add_instance(f->w.fake, "us-central1-a", name, CLUSTER, "other", NULL, 1), 0);
    assert_int_equal(cloud_launch(&f->cloud, T4_SPOT, CLUSTER, "tok-3", id), ERR_CONFLICT);
}

/* No capacity in the zone: ERR_CAPACITY; the GPU quota: ERR_QUOTA; an offer not configured:
 * ERR_UNKNOWN; a token that cannot be a label: ERR_INVAL. Nothing is left running. */
static void cloud_gcp_launch__failures(void **state)
{
    struct fixture *f = *state;
    char id[CLOUD_ID_MAX] = "untouched";

    fake_gce_exhaust_zone(f->w.fake, "us-central1-b", 1);
    assert_int_equal(cloud_launch(&f->cloud, A2_STD, CLUSTER, "tok-4", id), ERR_CAPACITY);
    fake_gce_quota(f->w.fake, "GPUS_ALL_REGIONS");
    assert_int_equal(cloud_launch(&f->cloud, T4_SPOT, CLUSTER, "tok-5", id), ERR_QUOTA);
    assert_int_equal(
        cloud_launch(&f->cloud, "n1-standard-4/us-central1-a/spot", CLUSTER, "tok-6", id),
        ERR_UNKNOWN);
    assert_int_equal(cloud_launch(&f->cloud, T4_SPOT, CLUSTER, "Tok 7", id), ERR_INVAL);
    assert_string_equal(id, "untouched");
    assert_int_equal(fake_gce_instance_count(f->w.fake), 0);
}

/* An operation of insert in us-central1-a, with status and what follows it (an error). */
#define OP(status, more)                                                                      \
    "{\"kind\":\"compute#operation\",\"name\":\"operation-nf\",\"zone\":"                     \
    "\"https://www.googleapis.com/compute/v1/projects/" GCP_PROJECT "/zones/us-central1-a\"," \
    "\"operationType\":\"insert\",\"targetLink\":\"https://www.googleapis.com/compute/v1/"    \
    "projects/" GCP_PROJECT "/zones/us-central1-a/instances/castor-x\",\"status\":\"" status  \
    "\"" more "}"
#define SUBNET_NOT_FOUND                                                                  \
    "\"The resource 'projects/" GCP_PROJECT "/regions/us-central1/subnetworks/nope' was " \
    "not found\""

/* A launch naming what Compute Engine does not know (an image or subnetwork: instances.insert
 * answered 404 notFound, or its operation ended RESOURCE_NOT_FOUND) is refused, ERR_INVAL:
 * nothing was made, and the caller gives it up and holds the offer (ERR_NOENT would leave it
 * asked again every tick). An operation the poll cannot find is not a refusal: the instance may
 * exist (ERR_IO), and the same token asked again finds it. */
static void cloud_gcp_launch__not_found_is_refused(void **state)
{
    struct fixture *f = *state;
    char id[CLOUD_ID_MAX] = "untouched";

    fake_gce_push(f->w.fake, INSERTS "us-central1-a/instances", 404,
                  "{\"error\":{\"code\":404,\"message\":\"The resource 'projects/debian-cloud/"
                  "global/images/family/nope' was not found\",\"errors\":[{\"reason\":"
                  "\"notFound\",\"message\":\"not found\"}]}}");
    assert_int_equal(cloud_launch(&f->cloud, T4_SPOT, CLUSTER, "tok-40", id), ERR_INVAL);
    fake_gce_push(f->w.fake, INSERTS "us-central1-a/instances", 200, OP("PENDING", ""));
    fake_gce_push(f->w.fake, INSERTS "us-central1-a/operations", 200,
                  OP("DONE", ",\"error\":{\"errors\":[{\"code\":\"RESOURCE_NOT_FOUND\","
                             "\"message\":" SUBNET_NOT_FOUND "}]}"));
    assert_int_equal(cloud_launch(&f->cloud, T4_SPOT, CLUSTER, "tok-41", id), ERR_INVAL);
    assert_string_equal(id, "untouched");
    assert_int_equal(fake_gce_instance_count(f->w.fake), 0);

    fake_gce_push(f->w.fake, INSERTS "us-central1-a/operations", 404,
                  "{\"error\":{\"code\":404,\"message\":\"The resource operation was not "
                  "found\",\"errors\":[{\"reason\":\"notFound\",\"message\":\"gone\"}]}}");
    assert_int_equal(cloud_launch(&f->cloud, T4_SPOT, CLUSTER, "tok-42", id), ERR_IO);
    assert_string_equal(id, "untouched");
    assert_int_equal(cloud_launch(&f->cloud, T4_SPOT, CLUSTER, "tok-42", id), 0);
    assert_int_equal(fake_gce_instance_count(f->w.fake), 1);
}

/* A cluster id that cannot be a label value: listing fails unasked (ERR_INVAL) and the client's
 * log says why, not only "invalid argument". */
static void cloud_gcp_list__cluster_not_a_label_logged(void **state)
{
    struct fixture *f = *state;
    struct cloud_instance *list = NULL;
    size_t n = 0, asked = fake_gce_requests(f->w.fake, FAKE_GCE_COMPUTE);

    assert_int_equal(cloud_list(&f->cloud, "Alpha.1", &list, &n), ERR_INVAL);
    assert_null(list);
    assert_int_equal(fake_gce_requests(f->w.fake, FAKE_GCE_COMPUTE), asked);
    assert_non_null(strstr(f->w.h.last_log, "instances.aggregatedList"));
    assert_non_null(strstr(f->w.h.last_log, "label value"));
}

/* Terminate: this cluster's instance goes; again succeeds (gone already); another cluster's
 * instance or an id castor never gave is ERR_UNKNOWN and nothing is deleted. Listing shows an
 * instance of an offer no longer configured under a name of its own. */
static void cloud_gcp_terminate__only_this_cluster(void **state)
{
    struct fixture *f = *state;
    struct cloud_instance *list = NULL;
    char id[CLOUD_ID_MAX];
    size_t n = 0;

    assert_int_equal(cloud_launch(&f->cloud, T4_SPOT, CLUSTER, "tok-8", id), 0);
    assert_int_equal(
        fake_gce_add_instance(f->w.fake, "us-east1-c", "their-node", "beta", "t", NULL, 0), 0);
    assert_int_equal(
        fake_gce_add_instance(f->w.fake, "us-east1-c", "old-node", CLUSTER, "t0", "STOPPING", 0),
        0);
    assert_int_equal(cloud_terminate(&f->cloud, CLUSTER, "us-east1-c.their-node"), ERR_UNKNOWN);
    assert_int_equal(cloud_terminate(&f->cloud, CLUSTER, "no-dot"), ERR_UNKNOWN);
    assert_int_equal(cloud_terminate(&f->cloud, CLUSTER, "us-east1-c.Not_A_Name"), ERR_UNKNOWN);
    assert_int_equal(fake_gce_instance_count(f->w.fake), 3);
    assert_int_equal(cloud_list(&f->cloud, CLUSTER, &list, &n), 0);
    assert_int_equal(n, 2);
    assert_string_equal(list[1].offer, "n1-standard-8/us-east1-c/standard");
    assert_int_equal(list[1].state, CLOUD_GONE);
    free(list);
    assert_int_equal(cloud_terminate(&f->cloud, CLUSTER, id), 0);
    assert_int_equal(fake_gce_instance_count(f->w.fake), 2);
    assert_int_equal(cloud_terminate(&f->cloud, CLUSTER, id), 0);
}

/* A stopped instance of the cluster (its host's maintenance stopped it) is listed as gone and
 * deleted; one of another cluster is left alone. */
static void cloud_gcp_list__stopped_instances_deleted(void **state)
{
    struct fixture *f = *state;
    struct cloud_instance *list = NULL;
    size_t n = 0;

    assert_int_equal(fake_gce_add_instance(f->w.fake, "us-central1-b", "off-node", CLUSTER, "t1",
                                           "TERMINATED", 0),
                     0);
    assert_int_equal(
        fake_gce_add_instance(f->w.fake, "us-central1-b", "on-node", CLUSTER, "t2", NULL, 0), 0);
    assert_int_equal(
        fake_gce_add_instance(f->w.fake, "us-central1-b", "theirs", "beta", "t3", "TERMINATED", 0),
        0);
    assert_int_equal(cloud_list(&f->cloud, CLUSTER, &list, &n), 0);
    assert_int_equal(n, 2);
    assert_string_equal(list[0].id, "us-central1-b.off-node");
    assert_int_equal(list[0].state, CLOUD_GONE);
    assert_int_equal(list[1].state, CLOUD_RUNNING);
    free(list);
    assert_int_equal(fake_gce_instance_count(f->w.fake), 2); /* theirs and on-node */
    assert_int_equal(cloud_list(&f->cloud, CLUSTER, &list, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(list[0].id, "us-central1-b.on-node");
    free(list);
}

/* REPAIRING (Compute Engine repairs the VM after a host error; it returns to RUNNING) is running,
 * not gone; PENDING_STOP is on its way to stopped, gone as STOPPING is; neither is deleted by the
 * list (a stopped one is, once STOPPED). */
static void cloud_gcp_list__repairing_is_running(void **state)
{
    struct fixture *f = *state;
    struct cloud_instance *list = NULL;
    size_t n = 0;

    assert_int_equal(
        fake_gce_add_instance(f->w.fake, "us-central1-b", "fixing", CLUSTER, "t1", "REPAIRING", 0),
        0);
    assert_int_equal(fake_gce_add_instance(f->w.fake, "us-central1-b", "halting", CLUSTER, "t2",
                                           "PENDING_STOP", 0),
                     0);
    assert_int_equal(cloud_list(&f->cloud, CLUSTER, &list, &n), 0);
    assert_int_equal(n, 2);
    assert_string_equal(list[0].id, "us-central1-b.fixing");
    assert_int_equal(list[0].state, CLOUD_RUNNING);
    assert_string_equal(list[1].id, "us-central1-b.halting");
    assert_int_equal(list[1].state, CLOUD_GONE);
    free(list);
    assert_int_equal(fake_gce_instance_count(f->w.fake), 2);
}

/* A termination Compute Engine refuses (403: the role lacks compute.instances.get; a token not
 * taken twice) or answers with a reason castor does not know is a failure (ERR_PERM, ERR_IO: tried
 * again), never ERR_UNKNOWN (no such instance of the cluster, taken as done); the instance stays
 * until a termination goes through. */
static void cloud_gcp_terminate__refusals_are_failures(void **state)
{
    struct fixture *f = *state;
    char id[CLOUD_ID_MAX], path[256];

    assert_int_equal(cloud_launch(&f->cloud, A2_STD, CLUSTER, "tok-40", id), 0);
    snprintf(path, sizeof(path), "%sus-central1-b/instances/", INSERTS);
    fake_gce_push(f->w.fake, path, 403,
                  "{\"error\":{\"code\":403,\"message\":\"Required 'compute.instances.get' "
                  "permission for 'projects/" GCP_PROJECT "/zones/us-central1-b/instances/x'\","
                  "\"errors\":[{\"message\":\"Required 'compute.instances.get' permission\","
                  "\"domain\":\"global\",\"reason\":\"forbidden\"}]}}");
    assert_int_equal(cloud_terminate(&f->cloud, CLUSTER, id), ERR_PERM);
    for (int i = 0; i < 2; i++)
        fake_gce_push(f->w.fake, path, 401,
                      "{\"error\":{\"code\":401,\"message\":\"Request had invalid authentication "
                      "credentials.\",\"errors\":[{\"message\":\"Invalid Credentials\",\"domain\":"
                      "\"global\",\"reason\":\"authError\"}],\"status\":\"UNAUTHENTICATED\"}}");
    assert_int_equal(cloud_terminate(&f->cloud, CLUSTER, id), ERR_PERM);
    fake_gce_push(f->w.fake, path, 400,
                  "{\"error\":{\"code\":400,\"message\":\"new\",\"errors\":[{\"reason\":"
                  "\"brandNew\",\"message\":\"new\"}]}}");
    assert_int_equal(cloud_terminate(&f->cloud, CLUSTER, id), ERR_IO);
    assert_int_equal(fake_gce_instance_count(f->w.fake), 1);
    assert_int_equal(cloud_terminate(&f->cloud, CLUSTER, id), 0);
    assert_int_equal(fake_gce_instance_count(f->w.fake), 0);
}

/* A cloud over f's client of a T4 on a Spot VM in us-central1 (offers[0]), an A100
 * (a2-highgpu-1g, 12 vCPUs) on a standard VM in us-east1 and, when n is 3, a T4 in a region
 * Compute Engine does not know. */
static void quotas_cloud_image(struct fixture *f, size_t n, const char *image, long disk_gb,
                               const char *disk_type, struct cloud *c)
{
    struct cloud_gcp_offer list[3] = {offers[0], {.machine_type = "a2-highgpu-1g"}, offers[2]};
    struct cloud_gcp_config cfg = {
        .compute = f->compute,
        .offers = list,
        .n_offers = n,
        .instance = {.source_image = image, .disk_gb = disk_gb, .disk_type = disk_type},
        .clock = hooks_clock,
        .hook_arg = &f->w.h,
    };

    list[1].zone = "us-east1-b";
    list[2].zone = "mars-north1-a";
    assert_int_equal(cloud_gcp_new(&cfg, c, NULL), 0);
}

/* The same with an image castor does not look up ("img": not an image's full name). */
static void quotas_cloud_disk(struct fixture *f, size_t n, long disk_gb, const char *disk_type,
                              struct cloud *c)
{
    quotas_cloud_image(f, n, "img", disk_gb, disk_type, c);
}

/* The cloud of the first n quota offers, with the boot disk's size and type left to the image. */
static void quotas_cloud(struct fixture *f, size_t n, struct cloud *c)
{
    quotas_cloud_disk(f, n, 0, NULL, c);
}

/* Quota i of q is name with limit and used; its title and unit as said. */
static void quota_is(const struct cloud_quota *q, const char *name, const char *title,
                     const char *unit, double limit, double used)
{
    assert_string_equal(q->name, name);
    assert_string_equal(q->title, title);
    assert_string_equal(q->unit, unit);
    assert_float_equal(q->limit, limit, 0);
    assert_float_equal(q->used, used, 0);
}

/* Use u takes units of quota from offer. */
static void use_is(const struct cloud_quota_use *u, size_t quota, const char *offer, double units)
{
    assert_int_equal(u->quota, quota);
    assert_string_equal(u->offer, offer);
    assert_float_equal(u->units, units, 0);
}

#define Q_T4_SPOT "n1-standard-8+nvidia-tesla-t4x1/us-central1-a/spot"
#define Q_A2 "a2-highgpu-1g/us-east1-b/standard"

/* One projects.get and one regions.get per region: the Spot T4 takes a GPU from the region's
 * PREEMPTIBLE_NVIDIA_T4_GPUS (granted: limit 4) and 8 vCPUs from CPUS (PREEMPTIBLE_CPUS is
 * listed at 0: Spot VMs then count as standard ones); the A2 takes from NVIDIA_A100_GPUS and its
 * family's A2_CPUS; both a GPU from GPUS_ALL_REGIONS, a new project's 0, and their vCPUs from
 * CPUS_ALL_REGIONS. The figures are Compute Engine's. Without the PREEMPTIBLE_ GPU quota granted,
 * the Spot T4 counts in NVIDIA_T4_GPUS. */
static void cloud_gcp_quotas__spot_and_standard(void **state)
{
    struct fixture *f = *state;
    struct cloud c = {0};
    struct cloud_quota *q = NULL;
    struct cloud_quota_use *u = NULL;
    size_t nq = 0, nu = 0;

    fake_gce_set_quota(f->w.fake, "us-central1", "NVIDIA_T4_GPUS", 2, 0);
    fake_gce_set_quota(f->w.fake, "us-central1", "PREEMPTIBLE_NVIDIA_T4_GPUS", 4, 1);
    fake_gce_set_quota(f->w.fake, "us-central1", "PREEMPTIBLE_CPUS", 0, 0);
    fake_gce_set_quota(f->w.fake, "us-central1", "CPUS", 24, 6);
    fake_gce_set_quota(f->w.fake, "us-east1", "NVIDIA_A100_GPUS", 8, 3);
    fake_gce_set_quota(f->w.fake, "us-east1", "A2_CPUS", 96, 36);
    fake_gce_set_quota(f->w.fake, NULL, "GPUS_ALL_REGIONS", 0, 0); /* a new project's */
    fake_gce_set_quota(f->w.fake, NULL, "CPUS_ALL_REGIONS", 64, 20);
    quotas_cloud(f, 2, &c);
    assert_int_equal(cloud_quotas(&c, &q, &nq, &u, &nu), 0);
    assert_int_equal(fake_gce_requests(f->w.fake, REGIONS), 2);
    assert_int_equal(fake_gce_requests(f->w.fake, PROJECT), 3); /* and one projects.get */
    assert_int_equal(nq, 6);
    quota_is(&q[0], "compute/us-central1/PREEMPTIBLE_NVIDIA_T4_GPUS",
             "PREEMPTIBLE_NVIDIA_T4_GPUS in us-central1", "GPUs", 4, 1);
    quota_is(&q[1], "compute/us-central1/CPUS", "CPUS in us-central1", "vCPUs", 24, 6);
    quota_is(&q[2], "compute/GPUS_ALL_REGIONS", "GPUS_ALL_REGIONS (all regions)", "GPUs", 0, 0);
    quota_is(&q[3], "compute/CPUS_ALL_REGIONS", "CPUS_ALL_REGIONS (all regions)", "vCPUs", 64, 20);
    quota_is(&q[4], "compute/us-east1/NVIDIA_A100_GPUS", "NVIDIA_A100_GPUS in us-east1", "GPUs", 8,
             3);
    quota_is(&q[5], "compute/us-east1/A2_CPUS", "A2_CPUS in us-east1", "vCPUs", 96, 36);
    assert_int_equal(nu, 8);
    use_is(&u[0], 0, Q_T4_SPOT, 1);
    use_is(&u[1], 1, Q_T4_SPOT, 8);
    use_is(&u[2], 2, Q_T4_SPOT, 1);
    use_is(&u[3], 3, Q_T4_SPOT, 8);
    use_is(&u[4], 4, Q_A2, 1);
    use_is(&u[5], 5, Q_A2, 12);
    use_is(&u[6], 2, Q_A2, 1);
    use_is(&u[7], 3, Q_A2, 12);
    free(q);
    free(u);

    fake_gce_set_quota(f->w.fake, "us-central1", "PREEMPTIBLE_NVIDIA_T4_GPUS", 0, 0);
    fake_gce_set_quota(f->w.fake, NULL, "GPUS_ALL_REGIONS", 32, 5);
    assert_int_equal(cloud_quotas(&c, &q, &nq, &u, &nu), 0);
    quota_is(&q[0], "compute/us-central1/NVIDIA_T4_GPUS", "NVIDIA_T4_GPUS in us-central1", "GPUs",
             2, 0);
    quota_is(&q[2], "compute/GPUS_ALL_REGIONS", "GPUS_ALL_REGIONS (all regions)", "GPUs", 32, 5);
    free(q);
    free(u);
    cloud_free(&c);
}

/* A configured boot disk takes its size from its type's regional quota, Spot nodes' too:
 * pd-balanced and pd-ssd from SSD_TOTAL_GB, pd-standard (and a disk of no named type, which
 * Compute Engine makes pd-standard) from DISKS_TOTAL_GB; a hyperdisk, or a disk of the image's own
 * size (no disk_gb), from neither. The T4 offer is in us-central1, the A2 in us-east1, which lists
 * no disk quota: the A2's disk limits nothing. */
static void cloud_gcp_quotas__boot_disks(void **state)
{
    static const struct {
        long gb;
        const char *type, *metric; /* NULL: no disk quota taken */
    } cases[] = {
        {200, "pd-balanced", "SSD_TOTAL_GB"},   {100, "pd-ssd", "SSD_TOTAL_GB"},
        {300, "pd-standard", "DISKS_TOTAL_GB"}, {50, NULL, "DISKS_TOTAL_GB"},
        {200, "hyperdisk-balanced", NULL},      {0, "pd-balanced", NULL},
    };
    struct fixture *f = *state;

    fake_gce_set_quota(f->w.fake, "us-central1", "NVIDIA_T4_GPUS", 8, 0);
    fake_gce_set_quota(f->w.fake, "us-central1", "CPUS", 24, 6);
    fake_gce_set_quota(f->w.fake, "us-central1", "SSD_TOTAL_GB", 500, 120);
    fake_gce_set_quota(f->w.fake, "us-central1", "DISKS_TOTAL_GB", 4096, 10);
    fake_gce_set_quota(f->w.fake, "us-east1", "A2_CPUS", 96, 0);
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        struct cloud_quota *q = NULL;
        struct cloud_quota_use *u = NULL;
        size_t nq = 0, nu = 0, i;
        struct cloud c = {0};

        quotas_cloud_disk(f, 2, cases[k].gb, cases[k].type, &c);
        assert_int_equal(cloud_quotas(&c, &q, &nq, &u, &nu), 0);
        for (i = 0; i < nq && !strstr(q[i].name, "_TOTAL_GB"); i++)
            ;
        if (!cases[k].metric) {
            assert_int_equal(i, nq);
        } else {
            char name[64], title[64];

            snprintf(name, sizeof(name), "compute/us-central1/%s", cases[k].metric);
            snprintf(title, sizeof(title), "%s in us-central1", cases[k].metric);
            quota_is(&q[i], name, title, "GB", cases[k].metric[0] == 'S' ? 500 : 4096,
                     cases[k].metric[0] == 'S' ? 120 : 10);
            assert_int_equal(nq - i, 2); /* then only the A2's A2_CPUS: no disk quota there */
            for (size_t j = 0; j < nu; j++)
                if (u[j].quota == i)
                    use_is(&u[j], i, Q_T4_SPOT, (double)cases[k].gb);
        }
        free(q);
        free(u);
        cloud_free(&c);
    }
}

/* A boot disk without disk_gb is the image's size, which castor reads once (images.getFromFamily
 * or images.get of another project's image, as the insert names it): Debian 12's family 10 GB, an
 * image of 120 GB; an image Compute Engine does not know (404) leaves the disk uncounted, and is
 * asked again at the next read (then known). */
static void cloud_gcp_quotas__boot_disk_of_the_image_size(void **state)
{
    static const struct {
        const char *image;
        double gb; /* 0: no disk quota taken */
    } cases[] = {
        {"projects/debian-cloud/global/images/family/debian-12", 10},
        {"https://www.googleapis.com/compute/v1/projects/ml-images/global/images/cuda-12-v3", 120},
        {"global/images/ours-v1", 0}, /* not there yet */
    };
    struct fixture *f = *state;

    fake_gce_set_quota(f->w.fake, "us-central1", "SSD_TOTAL_GB", 500, 0);
    fake_gce_set_image(f->w.fake, "projects/ml-images/global/images/cuda-12-v3", 120);
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        struct cloud_quota *q = NULL;
        struct cloud_quota_use *u = NULL;
        size_t nq = 0, nu = 0, i;
        struct cloud c = {0};

        quotas_cloud_image(f, 1, cases[k].image, 0, "pd-balanced", &c);
        assert_int_equal(cloud_quotas(&c, &q, &nq, &u, &nu), 0);
        for (i = 0; i < nq && strcmp(q[i].name, "compute/us-central1/SSD_TOTAL_GB") != 0; i++)
            ;
        assert_int_equal(i<nq, cases[k].gb> 0);
        for (size_t j = 0; j < nu; j++)
            if (u[j].quota == i)
                use_is(&u[j], i, Q_T4_SPOT, cases[k].gb);
        free(q);
        free(u);
        if (k == 2) { /* made since: the next read counts it */
            fake_gce_set_image(f->w.fake, "projects/" GCP_PROJECT "/global/images/ours-v1", 64);
            assert_int_equal(cloud_quotas(&c, &q, &nq, &u, &nu), 0);
            assert_string_equal(q[nq - 1].name, "compute/us-central1/SSD_TOTAL_GB");
            assert_float_equal(u[nu - 1].units, 64, 0);
            free(q);
            free(u);
        }
        if (k == 0) { /* read once: the next read does not ask again */
            size_t asked = fake_gce_requests(f->w.fake, FAKE_GCE_COMPUTE "/projects/debian-cloud");

            assert_int_equal(asked, 1);
            assert_int_equal(cloud_quotas(&c, &q, &nq, &u, &nu), 0);
            assert_int_equal(
                fake_gce_requests(f->w.fake, FAKE_GCE_COMPUTE "/projects/debian-cloud"), asked);
            free(q);
            free(u);
        }
        cloud_free(&c);
    }
}

/* What the quotas op reads of us-central1's SSD_TOTAL_GB in use (-1: not listed). */
static double ssd_used(struct fixture *f)
{
    struct cloud_quota *q = NULL;
    struct cloud_quota_use *u = NULL;
    size_t nq = 0, nu = 0;
    double used = -1;

    assert_int_equal(cloud_quotas(&f->cloud, &q, &nq, &u, &nu), 0);
    for (size_t i = 0; i < nq; i++)
        if (strcmp(q[i].name, "compute/us-central1/SSD_TOTAL_GB") == 0)
            used = q[i].used;
    free(q);
    free(u);
    return used;
}

/* Boot disks fill a region's SSD_TOTAL_GB, which the fake keeps as Compute Engine does (the live
 * instances' disks in its usage, an insert past its limit refused): 200 GB pd-balanced disks
 * under a limit of 500 with 100 in use by others leave room for two nodes. The quotas read after
 * each launch show what the region has left; the third launch is refused on SSD_TOTAL_GB and
 * holds every offer of the region (a disk of any of them counts there), not the other region's,
 * which lists no disk quota; a node deleted gives its disk's GB back. */
static void cloud_gcp_quotas__boot_disks_fill_the_region(void **state)
{
    struct fixture *f = *state;
    struct cloud_gcp_config cfg = {
        .compute = f->compute,
        .billing = f->billing,
        .offers = offers,
        .n_offers = N_OFFERS,
        .instance = {.source_image = "img", .disk_gb = 200, .disk_type = "pd-balanced"},
        .zone_hold_s = 600,
        .quota_hold_s = 1800,
        .clock = hooks_clock,
        .hook_arg = &f->w.h,
    };
    char id[CLOUD_ID_MAX], first[CLOUD_ID_MAX];

    cloud_free(&f->cloud);
    assert_int_equal(cloud_gcp_new(&cfg, &f->cloud, NULL), 0);
    fake_gce_push(f->w.fake, FAKE_GCE_BILLING "/services", 500, "{}");
    fake_gce_set_quota(f->w.fake, "us-central1", "SSD_TOTAL_GB", 500, 100);
    assert_float_equal(ssd_used(f), 100, 0);
    assert_int_equal(cloud_launch(&f->cloud, T4_SPOT, CLUSTER, "tok-d1", first), 0);
    assert_float_equal(ssd_used(f), 300, 0);
    assert_int_equal(cloud_launch(&f->cloud, T4_SPOT_C, CLUSTER, "tok-d2", id), 0);
    assert_float_equal(ssd_used(f), 500, 0);
    assert_int_equal(cloud_launch(&f->cloud, T4_STD_A, CLUSTER, "tok-d3", id), ERR_QUOTA);
    assert_false(offered(f, T4_SPOT));
    assert_false(offered(f, A2_STD));
    assert_true(offered(f, T4_SPOT_EAST));
    assert_int_equal(cloud_launch(&f->cloud, T4_SPOT_EAST, CLUSTER, "tok-d4", id), 0);
    assert_int_equal(fake_gce_instance_count(f->w.fake), 3);
    assert_float_equal(ssd_used(f), 500, 0);
    assert_int_equal(cloud_terminate(&f->cloud, CLUSTER, first), 0);
    assert_float_equal(ssd_used(f), 300, 0);
}

/* A metric the region does not list limits nothing: an offer in a region Compute Engine does not
 * know (404) takes only from the project's GPUS_ALL_REGIONS and CPUS_ALL_REGIONS. A failed read
 * (the role without compute.regions.get or compute.projects.get, a malformed answer, a server that
 * stays unavailable) writes nothing; the next read goes through. */
static void cloud_gcp_quotas__failures_write_nothing(void **state)
{
    size_t nq = 77, nu = 77;
    struct cloud_quota_use *u = NULL;
    struct cloud_quota *q = NULL;
    struct fixture *f = *state;
    struct cloud c = {0};

    quotas_cloud(f, 3, &c);
    fake_gce_push(f->w.fake, REGIONS, 403,
                  "{\"error\":{\"code\":403,\"message\":\"Required 'compute.regions.get' "
                  "permission\",\"errors\":[{\"reason\":\"forbidden\"}]}}");
    assert_int_equal(cloud_quotas(&c, &q, &nq, &u, &nu), ERR_PERM);
    fake_gce_push(f->w.fake, PROJECT, 403,
                  "{\"error\":{\"code\":403,\"message\":\"no\",\"status\":\"PERMISSION_DENIED\"}}");
    assert_int_equal(cloud_quotas(&c, &q, &nq, &u, &nu), ERR_PERM);
    fake_gce_push(f->w.fake, REGIONS, 200, "{\"quotas\":[{\"metric\":\"CPUS\"}]}");
    assert_int_equal(cloud_quotas(&c, &q, &nq, &u, &nu), ERR_PARSE);
    for (int i = 0; i < 3; i++)
        fake_gce_push(f->w.fake, REGIONS, 503, "{}");
    assert_int_equal(cloud_quotas(&c, &q, &nq, &u, &nu), ERR_AGAIN);
    assert_null(q);
    assert_null(u);
    assert_int_equal(nq, 77);
    assert_int_equal(nu, 77);

    assert_int_equal(cloud_quotas(&c, &q, &nq, &u, &nu), 0);
    assert_int_equal(nq, 4); /* no GPU metric listed in us-central1 or us-east1 */
    assert_string_equal(q[0].name, "compute/us-central1/CPUS");
    assert_string_equal(q[1].name, "compute/GPUS_ALL_REGIONS");
    assert_string_equal(q[2].name, "compute/CPUS_ALL_REGIONS"); /* the fake's 512 */
    assert_string_equal(q[3].name, "compute/us-east1/CPUS");    /* no A2_CPUS listed there */
    assert_int_equal(nu, 8);
    use_is(&u[6], 1, "n1-standard-8+nvidia-tesla-t4x1/mars-north1-a/standard", 1);
    use_is(&u[7], 2, "n1-standard-8+nvidia-tesla-t4x1/mars-north1-a/standard", 8);
    free(q);
    free(u);
    cloud_free(&c);
}

/* Configurations refused before anything is asked. */
static void cloud_gcp_new__refusals(void **state)
{
    struct fixture *f = *state;
    struct cloud_gcp_offer bad[2] = {offers[1], offers[1]};
    struct cloud_gcp_config cfg = {
        .compute = f->compute,
        .offers = bad,
        .n_offers = 2,
        .instance = {.source_image = "img"},
    };
    struct cloud c = {0};
    struct error e = {0};

    assert_int_equal(cloud_gcp_new(&cfg, &c, &e), ERR_CONFLICT);
    assert_non_null(strstr(e.msg, "given twice"));
    bad[1].accelerator_type = "nvidia-tesla-a100";
    bad[1].accelerator_count = 1;
    assert_int_equal(cloud_gcp_new(&cfg, &c, &e), ERR_INVAL);
    assert_non_null(strstr(e.msg, "comes with its GPUs"));
    bad[1] = offers[0];
    bad[1].zone = "nozone";
    assert_int_equal(cloud_gcp_new(&cfg, &c, &e), ERR_INVAL);
    cfg.instance.source_image = NULL;
    assert_int_equal(cloud_gcp_new(&cfg, &c, &e), ERR_INVAL);
    assert_null(c.ops);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(cloud_gcp_offers__named_and_priced),
        T(cloud_gcp_launch__idempotent_and_listed),
        T(cloud_gcp_launch__name_already_taken),
        T(cloud_gcp_launch__failures),
        T(cloud_gcp_launch__not_found_is_refused),
        T(cloud_gcp_list__cluster_not_a_label_logged),
        T(cloud_gcp_terminate__only_this_cluster),
        T(cloud_gcp_new__refusals),
        T(cloud_gcp_launch__exhausted_zone_fails_over),
        T(cloud_gcp_launch__quota_held_by_region),
        T(cloud_gcp__bad_answers_then_recovery),
        T(cloud_gcp_list__stopped_instances_deleted),
        T(cloud_gcp_list__repairing_is_running),
        T(cloud_gcp_terminate__refusals_are_failures),
        T(cloud_gcp_quotas__spot_and_standard),
        T(cloud_gcp_quotas__failures_write_nothing),
        T(cloud_gcp_quotas__boot_disks),
        T(cloud_gcp_quotas__boot_disk_of_the_image_size),
        T(cloud_gcp_quotas__boot_disks_fill_the_region),
    };
#undef T

    return cmocka_run_group_tests(tests, NULL, NULL);
}
