/* test_check.c: `castor check` (src/cli/check_cmd.c) on the gcp world against the fake Google
 * Cloud (tests/providers/fake_gce.c, verifying every JWT and token): a configuration with a key
 * file, the static price table and 200 GB pd-balanced boot disks; the quotas read through
 * regions.get and projects.get, the room they leave each offer and the quota that binds; an
 * offer in a region the price table does not list (its price unknown); a role that may not read
 * the quotas; a configuration the gcp world refuses. And on the aws world against moto's EC2 and
 * Service Quotas servers (request authentication on): spot priced by moto, on-demand by the
 * table, the quotas moto cannot answer said; a wrong secret refused. Without moto the aws group
 * is skipped (failed under CI). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <cmocka.h>

#include "cli/cli.h"
#include "providers/fake.h"
#include "providers/gcp_fixture.h"
#include "support/moto.h"

#define REGIONS FAKE_GCE_COMPUTE "/projects/" GCP_PROJECT "/regions/"

struct fixture {
    struct fake_gce *fake;
    char dir[64], key[128], config[128];
};

/* A fixture with its own folder for the configuration (and a key file); NULL when it cannot. */
static struct fixture *new_fixture(void)
{
    struct fixture *f = calloc(1, sizeof(*f));

    if (!f)
        return NULL;
    snprintf(f->dir, sizeof(f->dir), "/tmp/castor-check-XXXXXX");
    if (!mkdtemp(f->dir)) {
        free(f);
        return NULL;
    }
    snprintf(f->key, sizeof(f->key), "%s/key.json", f->dir);
    snprintf(f->config, sizeof(f->config), "%s/castor.yaml", f->dir);
    return f;
}

/* The gcp world: the fake Google Cloud and a key file for it. */
static int setup(void **state)
{
    struct fixture *f = new_fixture();
    char uri[256];

    if (!f)
        return -1;
    *state = f;
    unsetenv("GOOGLE_APPLICATION_CREDENTIALS");
    unsetenv("GCE_METADATA_HOST");
    if (!(f->fake = fake_gce_start(GCP_PROJECT, GCP_EMAIL, GCP_A2_PUB)))
        return -1;
    fake_gce_set_now(f->fake, (int64_t)time(NULL)); /* castor signs its JWTs with the real clock */
    snprintf(uri, sizeof(uri), "%s%s", fake_gce_url(f->fake), FAKE_GCE_TOKEN);
    return gcp_write_key(f->key, "service_account", GCP_A2_KEY, uri) < 0 ? -1 : 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    if (f->fake)
        fake_gce_stop(f->fake);
    unlink(f->key);
    unlink(f->config);
    rmdir(f->dir);
    free(f);
    return 0;
}

/* The configuration: a Spot T4 in us-central1 (priced by the static table) and a standard T4 in
 * europe-west4 (a region the table does not list), boot disks of disk_type; extra appended to the
 * cloud section. */
static void write_config(struct fixture *f, const char *disk_type, const char *extra)
{
    char text[2048];
    FILE *out = fopen(f->config, "w");

    assert_non_null(out);
    snprintf(text, sizeof(text),
             "cluster: ck\n"
             "world: gcp\n"
             "cloud:\n"
             "  project: " GCP_PROJECT "\n"
             "  key_file: %s\n"
             "  compute_url: %s" FAKE_GCE_COMPUTE "\n"
             "  billing_url: %s" FAKE_GCE_BILLING "\n"
             "  prices: %s/gcp-prices.yaml\n"
             "  poll_interval: 0.05\n"
             "  offers:\n"
             "    - {machine_type: n1-standard-8, zone: us-central1-a, spot: true,\n"
             "       accelerator_type: nvidia-tesla-t4}\n"
             "    - {machine_type: n1-standard-8, zone: europe-west4-a,\n"
             "       accelerator_type: nvidia-tesla-t4}\n"
             "  instance:\n"
             "    source_image: projects/debian-cloud/global/images/family/debian-12\n"
             "    disk_gb: 200\n"
             "    disk_type: %s\n"
             "%s",
             f->key, fake_gce_url(f->fake), fake_gce_url(f->fake), CASTOR_CONFDIR, disk_type,
             extra);
    fputs(text, out);
    fclose(out);
}

/* Run `castor check -c <config> [flag]`; its exit status, and what it wrote to out and err in
 * *text (the caller frees it). */
static int check(struct fixture *f, const char *flag, char **text)
{
    char *argv[] = {"check", "-c", f->config, (char *)flag, NULL};
    size_t len = 0;
    FILE *mem = open_memstream(text, &len);
    int rc;

    assert_non_null(mem);
    rc = cli_check(flag ? 4 : 3, argv, mem, mem);
    fclose(mem);
    return rc;
}

/* pd-balanced disks under us-central1's SSD_TOTAL_GB of 500 GB with 100 held by others: room for
 * two nodes, fewer than the region's CPUS (96 / 8 vCPUs) or the project's GPUS_ALL_REGIONS (16)
 * leave, so that quota binds; the europe-west4 offer has no known price (castor's planner does not
 * launch it) but its quotas leave room. castor can launch one offer: exit 0. As pd-standard
 * disks, the region's DISKS_TOTAL_GB binds nothing there (it is not listed) and the CPUs bind. */
static void check__quotas_room_and_prices(void **state)
{
    struct fixture *f = *state;
    char *text = NULL;

    fake_gce_set_quota(f->fake, "us-central1", "SSD_TOTAL_GB", 500, 100);
    write_config(f, "pd-balanced", "");
    assert_int_equal(check(f, NULL, &text), 0);
    assert_non_null(strstr(text, "cloud gcp, cluster ck: 2 offers, 5 quotas read, 0 instances"));
    assert_non_null(strstr(text,
                           "compute/us-central1/SSD_TOTAL_GB \"SSD_TOTAL_GB in us-central1\": "
                           "100 of 500 GB held, 200 a node"));
    /* spot at 0.4 of the table's n1 vCPUs, memory and T4, plus its 200 GiB pd-balanced disk at
     * $0.10 a GiB-month over 730 hours: 0.4 x (8 x 0.031611 + 30 x 0.004237 + 0.35) + 0.0274 */
    assert_non_null(strstr(text, "n1-standard-8+nvidia-tesla-t4x1/us-central1-a/spot    1 spot"
                                 "          0.3194"));
    assert_non_null(strstr(text, "unknown"));
    assert_non_null(strstr(text, "castor's planner does not launch an offer it cannot price"));
    assert_non_null(strstr(text, "castor can launch 1 of the 2 offers"));
    assert_true(gcp_clean(text));
    free(text);

    assert_int_equal(check(f, "--json", &text), 0);
    assert_non_null(
        strstr(text, "\"room\": 2,\n      \"bound_by\": \"compute/us-central1/SSD_TOTAL_GB\""));
    assert_non_null(strstr(text, "\"price\": null"));
    assert_non_null(strstr(text, "\"ok\": true"));
    free(text);

    write_config(f, "pd-standard", "");
    assert_int_equal(check(f, NULL, &text), 0);
    assert_null(strstr(text, "SSD_TOTAL_GB in"));
    assert_non_null(strstr(text, "compute/us-central1/CPUS \"CPUS in us-central1\": 0 of 96 vCPUs "
                                 "held, 8 a node"));
    free(text);
}

/* The quota fills: no room on the priced offer, and the other cannot be priced: castor can launch
 * nothing, exit 1, and the quota to ask for is named. */
static void check__nothing_to_launch(void **state)
{
    struct fixture *f = *state;
    char *text = NULL;

    fake_gce_set_quota(f->fake, "us-central1", "SSD_TOTAL_GB", 500, 400);
    write_config(f, "pd-ssd", "");
    assert_int_equal(check(f, NULL, &text), 1);
    assert_non_null(strstr(text, "\"SSD_TOTAL_GB in us-central1\": 400 of 500 GB held"));
    assert_non_null(strstr(text, "16 nodes (max_nodes) take 3200 more: ask for 3600 in the Google "
                                 "Cloud console"));
    assert_non_null(strstr(text, "castor can launch none of the 2 offers"));
    free(text);
}

/* A fixed fleet on the offer without a known price launches it (its nodes count $0): exit 0;
 * under a spend limit it launches none, since the limit could not count them: exit 1, and why. */
static void check__a_fixed_fleet_under_a_spend_limit_needs_a_price(void **state)
{
    struct fixture *f = *state;
    char *text = NULL;
    const char *fleet = "fleet:\n  planner: fixed\n  offer: "
                        "n1-standard-8+nvidia-tesla-t4x1/europe-west4-a/standard\n";
    char extra[512];

    write_config(f, "pd-balanced", fleet);
    if (check(f, NULL, &text) != 0)
        fail_msg("%s", text);
    assert_non_null(strstr(text, "europe-west4-a/standard only: its quotas leave it room"));
    free(text);
    snprintf(extra, sizeof(extra), "%sspend_limit:\n  dollars: 100\n", fleet);
    write_config(f, "pd-balanced", extra);
    assert_int_equal(check(f, NULL, &text), 1);
    assert_non_null(strstr(text, "europe-west4-a/standard only: it has no known price, and the "
                                 "spend_limit could not count its nodes"));
    free(text);
    assert_int_equal(check(f, "--json", &text), 1);
    assert_non_null(strstr(text, "\"ok\": false"));
    free(text);
}

/* A role without compute.regions.get: the quotas cannot be read, which is said (launches are
 * then limited by none known), and castor can still launch the priced offer. */
static void check__quotas_not_allowed(void **state)
{
    struct fixture *f = *state;
    char *text = NULL;

    for (int i = 0; i < 4; i++)
        fake_gce_push(f->fake, REGIONS, 403,
                      "{\"error\":{\"code\":403,\"message\":\"Required 'compute.regions.get' "
                      "permission\",\"errors\":[{\"reason\":\"forbidden\"}]}}");
    write_config(f, "pd-balanced", "");
    assert_int_equal(check(f, NULL, &text), 0);
    assert_non_null(strstr(text, "quotas: cannot be read ("));
    assert_non_null(strstr(text, "the role may not read them"));
    assert_non_null(strstr(text, "0 quotas read"));
    assert_non_null(strstr(text, "castor can launch 1 of the 2 offers"));
    free(text);
}

/* A cloud section the gcp world refuses (a key it does not know): the file, line and column,
 * exit 2, nothing asked of the fake. */
static void check__bad_cloud_section(void **state)
{
    struct fixture *f = *state;
    char *text = NULL;

    write_config(f, "pd-balanced", "  launch_everything: true\n");
    assert_int_equal(check(f, NULL, &text), 2);
    assert_non_null(strstr(text, "castor.yaml:19:3"));
    assert_non_null(strstr(text, "launch_everything"));
    assert_int_equal(fake_gce_requests(f->fake, FAKE_GCE_COMPUTE), 0);
    free(text);
}

/* ---- the aws world on moto ---- */

/* The aws world on moto: a g5.xlarge on-demand (the price table's $1.006) and spot (moto's
 * price) offer in us-east-1a, EC2 and Service Quotas at moto, the IAM user's key (secret: its
 * secret, or a wrong one) in the environment. */
static void write_aws_config(struct fixture *f, const char *secret)
{
    FILE *out = fopen(f->config, "w");

    assert_non_null(out);
    fprintf(out,
            "cluster: ck\n"
            "world: aws\n"
            "cloud:\n"
            "  region: us-east-1\n"
            "  endpoint: %s\n"
            "  imds: false\n"
            "  credentials_file: /nonexistent\n"
            "  pricing: false\n" /* moto has no Price List API: the table prices on-demand */
            "  quotas: {endpoint: %s}\n"
            "  prices: %s/aws-prices.yaml\n"
            "  launch_template: lt-0123456789abcdef0\n"
            "  offers:\n"
            "    - {instance_type: g5.xlarge, zone: us-east-1a, market: on-demand, gpus: 1}\n"
            "    - {instance_type: g5.xlarge, zone: us-east-1a, market: spot, gpus: 1}\n",
            moto_group.url, moto_group.url, CASTOR_CONFDIR);
    fclose(out);
    setenv("AWS_ACCESS_KEY_ID", moto_group.akid, 1);
    setenv("AWS_SECRET_ACCESS_KEY", secret, 1);
    unsetenv("AWS_SESSION_TOKEN");
}

/* The aws world: moto is the group's (moto_group). */
static int aws_setup(void **state)
{
    return (*state = new_fixture()) ? 0 : -1;
}

/* Both offers priced (on-demand by the table, spot by moto's DescribeSpotPriceHistory, signed
 * and verified), no quota known: moto's Service Quotas knows no EC2 quota (the default it falls
 * back on is a 500), which is said; castor can launch both: exit 0. */
static void check__aws_on_moto(void **state)
{
    struct fixture *f = *state;
    char *text = NULL;

    write_aws_config(f, moto_group.secret);
    assert_int_equal(check(f, NULL, &text), 0);
    assert_non_null(strstr(text, "cloud aws, cluster ck: 2 offers, 0 quotas read, 0 instances"));
    assert_non_null(strstr(text, "quotas: cannot be read ("));
    assert_non_null(strstr(text, "g5.xlarge/us-east-1a/on-demand"));
    assert_non_null(strstr(text, "1.0060"));
    assert_null(strstr(text, "unknown"));
    assert_non_null(strstr(text, "castor can launch 2 of the 2 offers"));
    assert_null(strstr(text, moto_group.secret));
    free(text);
}

/* A wrong secret: moto refuses the signed calls; the spot price cannot be read (unknown) and the
 * instances cannot be listed, which is said; the on-demand offer, priced by the table, can still
 * be launched as far as castor knows. */
static void check__aws_wrong_secret(void **state)
{
    struct fixture *f = *state;
    char *text = NULL;

    write_aws_config(f, "wrong-secret-0123456789");
    assert_int_equal(check(f, NULL, &text), 0);
    assert_non_null(strstr(text, "the cluster's instances cannot be listed"));
    assert_non_null(strstr(text, "unknown"));
    assert_non_null(strstr(text, "castor can launch 1 of the 2 offers"));
    assert_null(strstr(text, "wrong-secret"));
    free(text);
}

/* The fake world's own folder (no Google Cloud). */
static int fake_setup(void **state)
{
    return (*state = new_fixture()) ? 0 : -1;
}

static int fake_teardown(void **state)
{
    struct fixture *f = *state;
    char file[160];

    snprintf(file, sizeof(file), "%s/fake.json", f->dir);
    unlink(file);
    return teardown(state);
}

/* What the cluster's instances cost now, at the prices castor counts: the fake world's file holds
 * two spot nodes and an on-demand node of cluster ck, one of another cluster and one of ck gone;
 * spot at the cloud's $1.37 less the configuration's 50%: 2 x $0.685 + $3.912 = $5.282/h, the
 * offers holding 1 and 2. */
static void check__what_the_instances_cost_now(void **state)
{
    static const struct cloud_offer offers[2] = {
        {.name = "g4/on-demand", .gpus = 4, .price = 3.912},
        {.name = "g4/spot", .gpus = 4, .spot = 1, .price = 1.37}};
    static const char *const launches[][3] = {{"g4/spot", "ck", "t1"},
                                              {"g4/spot", "ck", "t2"},
                                              {"g4/on-demand", "ck", "t3"},
                                              {"g4/on-demand", "other", "t4"},
                                              {"g4/spot", "ck", "t5"}};
    struct fixture *f = *state;
    struct cloud c = {0};
    char file[160], id[CLOUD_ID_MAX], *text = NULL;
    FILE *out;

    snprintf(file, sizeof(file), "%s/fake.json", f->dir);
    assert_int_equal(cloud_fake_create(offers, NULL, 2, file, &c), 0);
    for (size_t i = 0; i < sizeof(launches) / sizeof(launches[0]); i++)
        assert_int_equal(cloud_launch(&c, launches[i][0], launches[i][1], launches[i][2], id), 0);
    assert_int_equal(cloud_terminate(&c, "ck", id), 0); /* t5's */
    cloud_free(&c);
    assert_non_null(out = fopen(f->config, "w"));
    fprintf(out, "cluster: ck\n"
                 "world: fake\n"
                 "cloud:\n"
                 "  path: fake.json\n"
                 "  offers:\n"
                 "    - {name: g4/on-demand, gpus: 4, market: on-demand, price: 3.912}\n"
                 "    - {name: g4/spot, gpus: 4, market: spot, price: 1.37}\n"
                 "offers:\n"
                 "  - {name: g4/spot, discount: 0.5}\n");
    fclose(out);
    assert_int_equal(check(f, NULL, &text), 0);
    assert_non_null(
        strstr(text, "3 instances with the cluster's tag, $5.2820/h at the prices now\n"));
    assert_non_null(strstr(text,
                           "g4/spot                                             4 spot          "
                           "0.6850    2"));
    assert_non_null(strstr(text, "on-demand     3.9120    1"));
    free(text);
    assert_int_equal(check(f, "--json", &text), 0);
    assert_non_null(strstr(text, "\"dollars_per_hour\": 5.282"));
    assert_non_null(strstr(text, "\"held\": 2"));
    free(text);
}

int main(void)
{
    char path[1024];
    const struct CMUnitTest aws[] = {
        cmocka_unit_test_setup_teardown(check__aws_on_moto, aws_setup, teardown),
        cmocka_unit_test_setup_teardown(check__aws_wrong_secret, aws_setup, teardown),
    };
    int failed;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(check__quotas_room_and_prices, setup, teardown),
        cmocka_unit_test_setup_teardown(check__nothing_to_launch, setup, teardown),
        cmocka_unit_test_setup_teardown(check__a_fixed_fleet_under_a_spend_limit_needs_a_price,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(check__quotas_not_allowed, setup, teardown),
        cmocka_unit_test_setup_teardown(check__bad_cloud_section, setup, teardown),
        cmocka_unit_test_setup_teardown(check__what_the_instances_cost_now, fake_setup,
                                        fake_teardown),
    };

    failed = cmocka_run_group_tests(tests, NULL, NULL);
    if (!moto_find(CASTOR_TEST_DATA, path, sizeof(path))) {
        int missing = moto_missing("test_check (aws)", path);

        return failed ? failed : missing == 77 ? 0 : missing;
    }
    return failed + cmocka_run_group_tests(aws, moto_group_start, moto_group_stop);
}
