/* test_clouds_conf.c: the clouds of the registry made from their configuration sections: gcp
 * from every key, then driven against the fake Google Cloud (offers named from the section, a
 * launch idempotent by token, the cluster's instances listed, a termination), and every bad key
 * refused at its file:line:column; aws likewise against the strict fake EC2 endpoint (offers
 * priced, launches by token, the cluster's states, terminations). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <cmocka.h>

#include "gcp_fixture.h"
#include "providers/cloud.h"
#include "providers/fake_ec2.h"
#include "control/config.h"
#include "util/conf.h"

#define CLUSTER "alpha"
#define T4_SPOT "n1-standard-8+nvidia-tesla-t4x2/us-central1-a/spot"
#define G2_STD "g2-standard-4/us-central1-b/standard"

/* Make the cloud called world from the `cloud:` section of text (file "castor.yaml"). */
static int make(const char *world, const char *text, struct cloud *out, struct error *e)
{
    struct conf *doc = NULL;
    int rc;

    assert_int_equal(conf_parse("castor.yaml", text, strlen(text), &doc, NULL), 0);
    rc = cloud_new(world, conf_find(doc->root, "cloud"), "/etc/castor", NULL, out, e);
    conf_free(doc);
    return rc;
}

/* The gcp section over the fake's endpoints and key into buf. */
static void gcp_section(const struct gcp_world *w, char *buf, size_t size)
{
    snprintf(buf, size,
             "world: gcp\n"
             "cloud:\n"
             "  project: " GCP_PROJECT "\n"
             "  key_file: %s\n"
             "  compute_url: %s\n"
             "  billing_url: %s\n"
             "  poll_interval: 0.01\n"
             "  zone_hold: 300\n"
             "  quota_hold: 900\n"
             "  offers:\n"
             "    - machine_type: n1-standard-8\n"
             "      zone: us-central1-a\n"
             "      spot: true\n"
             "      accelerator_type: nvidia-tesla-t4\n"
             "      accelerator_count: 2\n"
             "    - machine_type: g2-standard-4\n"
             "      zone: us-central1-b\n"
             "  instance:\n"
             "    source_image: projects/debian-cloud/global/images/family/debian-12\n"
             "    disk_gb: 100\n"
             "    disk_type: pd-balanced\n"
             "    external_ip: false\n"
             "    service_account: node@castor-test.iam.gserviceaccount.com\n"
             "    startup_script: \"#!/bin/sh\"\n",
             w->key_path, w->compute, w->billing);
}

/* Every key: offers named and counted from the section; a launch reaches the fake, again with
 * its token it gives the same instance; listed by the cluster's label; terminated. */
static void cloud_gcp_from_conf__every_key_driven(void **state)
{
    struct gcp_world w = {0};
    struct cloud c = {0};
    struct error e = {0};
    struct cloud_offer *offers = NULL;
    struct cloud_instance *list = NULL;
    char text[2048], id[CLOUD_ID_MAX], again[CLOUD_ID_MAX];
    size_t n = 0;

    (void)state;
    assert_int_equal(gcp_world_start(&w), 0);
    fake_gce_set_now(w.fake, (int64_t)time(NULL));
    gcp_section(&w, text, sizeof(text));
    assert_non_null(cloud_find("gcp"));
    assert_int_equal(make("gcp", text, &c, &e), 0);
    assert_string_equal(c.ops->name, "gcp");
    fake_gce_push(w.fake, FAKE_GCE_BILLING "/services", 500, "{}");
    assert_int_equal(cloud_offers(&c, &offers, &n), 0);
    assert_int_equal(n, 2);
    assert_string_equal(offers[0].name, T4_SPOT);
    assert_int_equal(offers[0].gpus, 2);
    assert_int_equal(offers[0].spot, 1);
    assert_string_equal(offers[1].name, G2_STD);
    assert_int_equal(offers[1].gpus, 1);
    assert_int_equal(offers[1].spot, 0);
    free(offers);

    assert_int_equal(cloud_launch(&c, T4_SPOT, CLUSTER, "tok-1", id), 0);
    assert_int_equal(cloud_launch(&c, T4_SPOT, CLUSTER, "tok-1", again), 0);
    assert_string_equal(again, id);
    assert_int_equal(fake_gce_instance_count(w.fake), 1);
    assert_non_null(strstr(fake_gce_last_body(w.fake, FAKE_GCE_COMPUTE), "debian-12"));
    assert_int_equal(cloud_list(&c, CLUSTER, &list, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(list[0].id, id);
    assert_string_equal(list[0].token, "tok-1");
    assert_string_equal(list[0].offer, T4_SPOT);
    free(list);
    assert_int_equal(cloud_terminate(&c, CLUSTER, id), 0);
    assert_int_equal(fake_gce_instance_count(w.fake), 0);
    /* the project's and the region's quotas, read through the section's cloud; none with
     * `quotas: false` */
    {
        struct cloud_quota *q = NULL;
        struct cloud_quota_use *u = NULL;
        size_t nq = 0, nu = 0;
        size_t len = strlen(text);

        assert_int_equal(cloud_quotas(&c, &q, &nq, &u, &nu), 0);
        assert_true(nq > 0 && nu > 0);
        free(q);
        free(u);
        cloud_free(&c);
        snprintf(text + len, sizeof(text) - len, "  quotas: false\n");
        assert_int_equal(make("gcp", text, &c, &e), 0);
        assert_int_equal(cloud_quotas(&c, &q, &nq, &u, &nu), 0);
        assert_int_equal(nq + nu, 0);
    }
    cloud_free(&c);
    gcp_world_stop(&w);
}

struct bad {
    const char *text;
    int code, line, column;
    const char *says;
};

/* Each of the n sections is refused by the cloud world with its code, at its line and column
 * (line -1: anywhere), its message holding its words, and no cloud made. */
static void check_bad(const char *world, const struct bad *bad, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct cloud c = {0};
        struct error e = {0};
        int rc = make(world, bad[i].text, &c, &e);

        if (rc != bad[i].code ||
            (bad[i].line >= 0 && (e.line != bad[i].line || e.column != bad[i].column)) ||
            !strstr(e.msg, bad[i].says))
            fail_msg("%s case %zu: rc %d at %d:%d: %s", world, i, rc, e.line, e.column, e.msg);
        assert_null(c.ops);
    }
}

#define GCP_HEAD "cloud:\n  project: p\n  metadata_url: http://127.0.0.1:1/t\n"
#define GCP_INST "  instance:\n    source_image: img\n"
#define GCP_OFFER "  offers:\n    - machine_type: n1-standard-4\n      zone: us-central1-a\n"

/* Each bad section is refused with its code at the line and column of the key or value. */
static void cloud_gcp_from_conf__bad_keys_located(void **state)
{
    static const struct bad bad[] = {
        {"cloud:\n  projet: p\n", ERR_UNKNOWN, 2, 3, "projet"},
        {"cloud:\n  key_file: k\n", ERR_PARSE, 2, 3, "project: required"},
        {"world: gcp\n", ERR_PARSE, 0, 0, "needs its section"},
        {GCP_HEAD "  compute_url: ftp://x\n" GCP_OFFER GCP_INST, ERR_PARSE, 4, 16, "http://"},
        {GCP_HEAD "  prices: [a]\n" GCP_OFFER GCP_INST, ERR_PARSE, 4, 11, "cloud.prices"},
        {GCP_HEAD GCP_INST, ERR_PARSE, 2, 3, "offers: required"},
        {GCP_HEAD "  poll_interval: 0\n" GCP_OFFER GCP_INST, ERR_RANGE, 4, 18, "poll_interval"},
        {GCP_HEAD "  zone_hold: 0\n" GCP_OFFER GCP_INST, ERR_RANGE, 4, 14, "zone_hold"},
        {GCP_HEAD "  quota_hold: soon\n" GCP_OFFER GCP_INST, ERR_PARSE, 4, 15, "quota_hold"},
        {GCP_HEAD "  offers: n1\n" GCP_INST, ERR_PARSE, 4, 11, "list of offers"},
        {GCP_HEAD GCP_OFFER "      spot: \"yes\"\n" GCP_INST, ERR_PARSE, 7, 13, "spot"},
        {GCP_HEAD GCP_OFFER "      gpus: 2\n" GCP_INST, ERR_UNKNOWN, 7, 7, "gpus"},
        {GCP_HEAD GCP_OFFER "      accelerator_count: 2\n" GCP_INST, ERR_PARSE, 7, 26,
         "needs accelerator_type"},
        {GCP_HEAD GCP_OFFER "      accelerator_type: nvidia-tesla-t4\n"
                            "      accelerator_count: 99\n" GCP_INST,
         ERR_RANGE, 8, 26, "accelerator_count"},
        {GCP_HEAD "  offers:\n    - zone: us-central1-a\n" GCP_INST, ERR_PARSE, 5, 7,
         "machine_type and zone"},
        /* what the cloud would refuse, at the offer's key (castor check: exit 2) */
        {GCP_HEAD GCP_OFFER
         "    - machine_type: n1-standard-4\n      zone: us-central1-a\n" GCP_INST,
         ERR_PARSE, 7, 7,
         "cloud.offers[1]: the offer n1-standard-4/us-central1-a/standard is listed twice"},
        {GCP_HEAD "  offers:\n    - machine_type: n1-standard-4\n      zone: nozone\n" GCP_INST,
         ERR_PARSE, 6, 13, "cloud.offers[0].zone: nozone is not a zone"},
        {GCP_HEAD
         "  offers:\n    - machine_type: a2-highgpu-1g\n      zone: us-central1-a\n"
         "      accelerator_type: nvidia-tesla-a100\n      accelerator_count: 1\n" GCP_INST,
         ERR_PARSE, 8, 26, "a2-highgpu-1g comes with its GPUs"},
        {GCP_HEAD "  offers:\n    - machine_type: g2-standard-4\n      zone: us-central1-a\n"
                  "      accelerator_type: nvidia-l4\n" GCP_INST,
         ERR_PARSE, 7, 25, "cloud.offers[0].accelerator_type: g2-standard-4 comes with its GPUs"},
        {GCP_HEAD GCP_OFFER, ERR_PARSE, 2, 3, "source_image: required"},
        {GCP_HEAD GCP_OFFER GCP_INST "    disk_gb: 5\n", ERR_RANGE, 9, 14, "disk_gb"},
        {GCP_HEAD GCP_OFFER GCP_INST "    disks: 1\n", ERR_UNKNOWN, 9, 5, "disks"},
        {GCP_HEAD GCP_OFFER "  instance:\n    disk_gb: 20\n", ERR_PARSE, 8, 5, "source_image"},
        {GCP_HEAD GCP_OFFER GCP_INST "  key_file: missing.json\n", ERR_NOENT, 9, 13,
         "/etc/castor/missing.json"},
    };

    (void)state;
    unsetenv("GOOGLE_APPLICATION_CREDENTIALS");
    check_bad("gcp", bad, sizeof(bad) / sizeof(bad[0]));
}

/* A key file that is not a service-account key (a user's credentials, then text that is not
 * JSON): refused at key_file's line and column, saying why, and no cloud made. */
static void cloud_gcp_from_conf__key_file_not_a_service_account(void **state)
{
    char path[256], text[512];
    struct cloud c = {0};
    struct error e = {0};
    FILE *f;

    (void)state;
    unsetenv("GOOGLE_APPLICATION_CREDENTIALS");
    gcp_temp_path(path, sizeof(path), "user");
    assert_int_equal(
        gcp_write_key(path, "authorized_user", NULL, "https://oauth2.googleapis.com/token"), 0);
    snprintf(text, sizeof(text), GCP_HEAD "  key_file: %s\n" GCP_OFFER GCP_INST, path);
    assert_int_equal(make("gcp", text, &c, &e), ERR_INVAL);
    assert_int_equal(e.line, 4);
    assert_int_equal(e.column, 13);
    assert_non_null(strstr(e.msg, "not a service-account key"));
    assert_null(c.ops);
    assert_non_null(f = fopen(path, "w"));
    fputs("{\"type\": \"service_account\", \"private_key\": ", f);
    fclose(f);
    assert_int_equal(make("gcp", text, &c, &e), ERR_PARSE);
    assert_int_equal(e.line, 4);
    assert_non_null(strstr(e.msg, path));
    assert_null(c.ops);
    unlink(path);
}

/* config/castor-gcp.yaml reads whole; its cloud section makes a gcp cloud once its key file is
 * there (a temporary folder as its folder), and without it is refused at key_file's line. */
static void cloud_gcp_from_conf__the_example(void **state)
{
    struct config *cfg = NULL;
    struct cloud c = {0};
    struct error e = {0};
    char dir[] = "/tmp/castor-test-gcp-conf-XXXXXX", key[128];

    (void)state;
    unsetenv("GOOGLE_APPLICATION_CREDENTIALS");
    if (config_load(CASTOR_CONFDIR "/castor-gcp.yaml", &cfg, &e) < 0)
        fail_msg("%s:%d:%d: %s", e.file, e.line, e.column, e.msg);
    assert_string_equal(cfg->world, "gcp");
    assert_non_null(mkdtemp(dir));
    assert_int_equal(cloud_new(cfg->world, cfg->cloud, dir, NULL, &c, &e), ERR_NOENT);
    assert_int_equal(e.line, conf_find(cfg->cloud, "key_file")->line);
    assert_non_null(strstr(e.msg, "gcp-key.json"));
    snprintf(key, sizeof(key), "%s/gcp-key.json", dir);
    assert_int_equal(
        gcp_write_key(key, "service_account", GCP_A2_KEY, "https://oauth2.googleapis.com/token"),
        0);
    if (cloud_new(cfg->world, cfg->cloud, dir, NULL, &c, &e) < 0)
        fail_msg("%s:%d:%d: %s", e.file, e.line, e.column, e.msg);
    assert_string_equal(c.ops->name, "gcp");
    cloud_free(&c);
    unlink(key);
    rmdir(dir);
    config_free(cfg);
}

/* ---- aws ---- */

#define AKID "AKIDEXAMPLE"
#define SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define NS "xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\""
#define G5_SPOT "g5.xlarge/us-east-1a/spot"
#define G4_OD "g4dn.12xlarge/us-east-1b/on-demand"

static const char spot_prices[] =
    "<DescribeSpotPriceHistoryResponse " NS "><requestId>r-p</requestId><spotPriceHistorySet>"
    "<item><instanceType>g5.xlarge</instanceType><spotPrice>0.30</spotPrice><timestamp>"
    "2023-11-14T21:00:00Z</timestamp><availabilityZone>us-east-1a</availabilityZone></item>"
    "<item><instanceType>g5.xlarge</instanceType><spotPrice>0.41</spotPrice><timestamp>"
    "2023-11-14T22:00:00Z</timestamp><availabilityZone>us-east-1a</availabilityZone></item>"
    "<item><instanceType>g5.xlarge</instanceType><spotPrice>0.99</spotPrice><timestamp>"
    "2023-11-14T23:00:00Z</timestamp><availabilityZone>us-east-1c</availabilityZone></item>"
    "</spotPriceHistorySet></DescribeSpotPriceHistoryResponse>";

static const char run_ok[] =
    "<RunInstancesResponse " NS "><requestId>r-run</requestId><reservationId>r-1</reservationId>"
    "<instancesSet><item><instanceId>i-0abc</instanceId><instanceType>g5.xlarge</instanceType>"
    "<placement><availabilityZone>us-east-1a</availabilityZone></placement><instanceLifecycle>"
    "spot</instanceLifecycle></item></instancesSet></RunInstancesResponse>";

/* One instance of the cluster: id, type, zone, state, lifecycle ("" on-demand), token. */
#define INSTANCE(id, type, zone, state, life, token)                                       \
    "<item><instancesSet><item><instanceId>" id "</instanceId><instanceType>" type         \
    "</instanceType><instanceState><name>" state "</name></instanceState><placement>"      \
    "<availabilityZone>" zone "</availabilityZone></placement><launchTime>"                \
    "2023-11-14T22:00:00.000Z</launchTime>" life "<tagSet><item><key>castor:cluster</key>" \
    "<value>alpha</value></item><item><key>castor:launch-token</key><value>" token         \
    "</value></item></tagSet></item></instancesSet></item>"
#define SPOT "<instanceLifecycle>spot</instanceLifecycle>"
#define DESCRIBE(items)                                                                   \
    "<DescribeInstancesResponse " NS "><requestId>r-di</requestId><reservationSet>" items \
    "</reservationSet></DescribeInstancesResponse>"

static const char cluster4[] =
    DESCRIBE(INSTANCE("i-1", "g5.xlarge", "us-east-1a", "pending", SPOT, "t1")
                 INSTANCE("i-2", "g4dn.12xlarge", "us-east-1b", "running", "", "t2")
                     INSTANCE("i-3", "g5.xlarge", "us-east-1a", "shutting-down", SPOT, "t3")
                         INSTANCE("i-4", "g5.xlarge", "us-east-1a", "terminated", SPOT, "t4"));

static const char terminate_ok[] = "<TerminateInstancesResponse " NS "><requestId>r-t</requestId>"
                                   "<instancesSet/></TerminateInstancesResponse>";

/* The aws section over the fake EC2 at url and the fake Price List API at pricing into buf. */
static void aws_section(const char *url, const char *pricing, char *buf, size_t size)
{
    snprintf(buf, size,
             "world: aws\n"
             "cloud:\n"
             "  region: us-east-1\n"
             "  endpoint: %s\n"
             "  pricing: true\n"
             "  pricing_endpoint: %s\n"
             "  profile: castor\n"
             "  credentials_file: /nonexistent\n"
             "  imds: false\n"
             "  image_id: ami-0123\n"
             "  prices: " CASTOR_CONFDIR "/aws-prices.yaml\n"
             "  offers:\n"
             "    - instance_type: g5.xlarge\n"
             "      zone: us-east-1a\n"
             "      market: spot\n"
             "      gpus: 1\n"
             "      max_price: 0.9\n"
             "    - instance_type: g4dn.12xlarge\n"
             "      zone: us-east-1b\n"
             "      subnet: subnet-0b\n"
             "      gpus: 4\n",
             url, pricing);
}

/* Every key, then the cloud against the strict fake EC2: offers priced (spot: the latest
 * price of its zone; on-demand: the table), a launch with its token as ClientToken and tag
 * (the same token again gives the same instance), the cluster listed by tag with its states
 * mapped, a termination, and one of an instance not the cluster's refused. */
static void cloud_aws_from_conf__every_key_driven(void **state)
{
    struct fake_ec2 *fake = fake_ec2_start(AKID, SECRET, "us-east-1");
    struct fake_ec2 *pricing = fake_ec2_start(AKID, SECRET, "us-east-1");
    struct cloud c = {0};
    struct error e = {0};
    struct cloud_offer *offers = NULL;
    struct cloud_instance *list = NULL;
    char text[2048], id[CLOUD_ID_MAX], again[CLOUD_ID_MAX];
    size_t n = 0;

    (void)state;
    assert_non_null(fake);
    assert_non_null(pricing);
    fake_ec2_set_pricing(pricing);
    setenv("AWS_ACCESS_KEY_ID", AKID, 1);
    setenv("AWS_SECRET_ACCESS_KEY", SECRET, 1);
    unsetenv("AWS_SESSION_TOKEN");
    aws_section(fake_ec2_url(fake), fake_ec2_url(pricing), text, sizeof(text));
    assert_non_null(cloud_find("aws"));
    if (make("aws", text, &c, &e) < 0)
        fail_msg("%d:%d: %s", e.line, e.column, e.msg);
    assert_string_equal(c.ops->name, "aws");

    fake_ec2_push(fake, 200, spot_prices);
    /* the Price List API refuses: the static table's price */
    fake_ec2_push(pricing, 400, "{\"__type\":\"AccessDeniedException\",\"message\":\"no\"}");
    assert_int_equal(cloud_offers(&c, &offers, &n), 0);
    assert_int_equal(fake_ec2_requests(pricing), 1);
    assert_int_equal(fake_ec2_auth_failures(pricing), 0);
    assert_int_equal(n, 2);
    assert_string_equal(offers[0].name, G5_SPOT);
    assert_int_equal(offers[0].gpus, 1);
    assert_int_equal(offers[0].spot, 1);
    assert_float_equal(offers[0].price, 0.41, 1e-9);
    assert_string_equal(offers[1].name, G4_OD);
    assert_int_equal(offers[1].gpus, 4);
    assert_int_equal(offers[1].spot, 0);
    assert_float_equal(offers[1].price, 3.912, 1e-9);
    assert_string_equal(fake_ec2_param(fake, 0, "InstanceType.1"), "g5.xlarge");
    free(offers);

    fake_ec2_push(fake, 200, run_ok);
    fake_ec2_push(fake, 200, run_ok);
    assert_int_equal(cloud_launch(&c, G5_SPOT, CLUSTER, "tok-1", id), 0);
    assert_int_equal(cloud_launch(&c, G5_SPOT, CLUSTER, "tok-1", again), 0);
    assert_string_equal(id, "i-0abc");
    assert_string_equal(again, id);
    for (size_t i = 1; i <= 2; i++) {
        assert_string_equal(fake_ec2_param(fake, i, "Action"), "RunInstances");
        assert_string_equal(fake_ec2_param(fake, i, "ClientToken"), "tok-1");
        assert_string_equal(fake_ec2_param(fake, i, "ImageId"), "ami-0123");
        assert_string_equal(fake_ec2_param(fake, i, "InstanceType"), "g5.xlarge");
        assert_string_equal(fake_ec2_param(fake, i, "MaxCount"), "1");
        assert_string_equal(fake_ec2_param(fake, i, "InstanceMarketOptions.MarketType"), "spot");
        assert_string_equal(fake_ec2_param(fake, i, "TagSpecification.1.Tag.2.Value"), "tok-1");
    }
    assert_int_equal(cloud_launch(&c, "nope", CLUSTER, "tok-2", id), ERR_UNKNOWN);

    fake_ec2_push(fake, 200, cluster4);
    assert_int_equal(cloud_list(&c, CLUSTER, &list, &n), 0);
    assert_string_equal(fake_ec2_param(fake, 3, "Filter.1.Value.1"), CLUSTER);
    assert_int_equal(n, 4);
    assert_int_equal(list[0].state, CLOUD_PENDING);
    assert_int_equal(list[1].state, CLOUD_RUNNING);
    assert_int_equal(list[2].state, CLOUD_GONE);
    assert_int_equal(list[3].state, CLOUD_GONE);
    assert_string_equal(list[0].offer, G5_SPOT);
    assert_string_equal(list[1].offer, G4_OD);
    assert_string_equal(list[1].token, "t2");
    assert_true(list[1].launched > 0);
    free(list);

    fake_ec2_push(fake, 200, cluster4);
    fake_ec2_push(fake, 200, terminate_ok);
    assert_int_equal(cloud_terminate(&c, CLUSTER, "i-2"), 0);
    assert_string_equal(fake_ec2_param(fake, 5, "InstanceId.1"), "i-2");
    fake_ec2_push(fake, 200, cluster4);
    assert_int_equal(cloud_terminate(&c, CLUSTER, "i-4"), 0); /* already gone */
    fake_ec2_push(fake, 200, cluster4);
    assert_int_equal(cloud_terminate(&c, CLUSTER, "i-9"), ERR_UNKNOWN);
    assert_int_equal(fake_ec2_requests(fake), 8);
    assert_int_equal(fake_ec2_pending(fake), 0);
    cloud_free(&c);
    fake_ec2_stop(fake);
    fake_ec2_stop(pricing);
}

#define AWS_HEAD "cloud:\n  region: us-east-1\n  image_id: ami-1\n"
#define AWS_OFFER \
    "  offers:\n    - instance_type: g5.xlarge\n      zone: us-east-1a\n      gpus: 1\n"

/* Each bad section is refused with its code at the line and column of the key or value. */
static void cloud_aws_from_conf__bad_keys_located(void **state)
{
    static const struct bad bad[] = {
        {"cloud:\n  regoin: x\n", ERR_UNKNOWN, 2, 3, "regoin"},
        {"world: aws\n", ERR_PARSE, 0, 0, "needs its section"},
        {"cloud:\n  image_id: ami-1\n" AWS_OFFER, ERR_PARSE, 2, 3, "region: required"},
        {"cloud:\n  region: us-east-1\n" AWS_OFFER, ERR_PARSE, 2, 3, "image_id"},
        {AWS_HEAD "  launch_template: lt-1\n" AWS_OFFER, ERR_PARSE, 2, 3, "image_id"},
        {AWS_HEAD "  imds: maybe\n" AWS_OFFER, ERR_PARSE, 4, 9, "imds"},
        {AWS_HEAD "  pricing: sometimes\n" AWS_OFFER, ERR_PARSE, 4, 12, "pricing"},
        {AWS_HEAD "  pricing_endpoint: http://pricing.example.com\n" AWS_OFFER, ERR_INVAL, 4, 21,
         "plain http"},
        {AWS_HEAD, ERR_PARSE, 2, 3, "offers: required"},
        {AWS_HEAD AWS_OFFER "      market: reserved\n", ERR_UNKNOWN, 8, 15, "market"},
        {AWS_HEAD AWS_OFFER "      type: x\n", ERR_UNKNOWN, 8, 7, "type"},
        {AWS_HEAD "  offers:\n    - instance_type: g5.xlarge\n      zone: us-east-1a\n", ERR_PARSE,
         5, 7, "gpus are required"},
        {AWS_HEAD "  offers:\n    - instance_type: g5.xlarge\n      zone: us-east-1a\n"
                  "      gpus: 0\n",
         ERR_RANGE, 7, 13, "gpus"},
        {AWS_HEAD AWS_OFFER "    - instance_type: g5.xlarge\n      zone: us-east-1a\n"
                            "      gpus: 2\n",
         ERR_PARSE, 8, 7, "listed twice"},
        {AWS_HEAD "  endpoint: ftp://x\n" AWS_OFFER, ERR_INVAL, 4, 13, "endpoint"},
        {AWS_HEAD "  prices: /nonexistent/aws-prices.yaml\n" AWS_OFFER, ERR_NOENT, 4, 11,
         "aws-prices.yaml"},
    };

    (void)state;
    check_bad("aws", bad, sizeof(bad) / sizeof(bad[0]));
}

/* config/castor-aws.yaml reads whole and its cloud section makes an aws cloud (the price table
 * beside it), whose fleet offer is one of the section's. */
static void cloud_aws_from_conf__the_example(void **state)
{
    struct config *cfg = NULL;
    struct cloud c = {0};
    struct error e = {0};

    (void)state;
    if (config_load(CASTOR_CONFDIR "/castor-aws.yaml", &cfg, &e) < 0)
        fail_msg("%s:%d:%d: %s", e.file, e.line, e.column, e.msg);
    assert_string_equal(cfg->world, "aws");
    if (cloud_new(cfg->world, cfg->cloud, CASTOR_CONFDIR, NULL, &c, &e) < 0)
        fail_msg("%s:%d:%d: %s", e.file, e.line, e.column, e.msg);
    assert_string_equal(c.ops->name, "aws");
    assert_string_equal(cfg->fleet_offer, G5_SPOT);
    cloud_free(&c);
    config_free(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cloud_gcp_from_conf__every_key_driven),
        cmocka_unit_test(cloud_gcp_from_conf__bad_keys_located),
        cmocka_unit_test(cloud_gcp_from_conf__the_example),
        cmocka_unit_test(cloud_gcp_from_conf__key_file_not_a_service_account),
        cmocka_unit_test(cloud_aws_from_conf__every_key_driven),
        cmocka_unit_test(cloud_aws_from_conf__bad_keys_located),
        cmocka_unit_test(cloud_aws_from_conf__the_example),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
