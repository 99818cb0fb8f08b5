/* test_check.c: `castor check` (src/cli/check_cmd.c) on the gcp world against the fake Google
 * Cloud (tests/providers/fake_gce.c, verifying every JWT and token): a configuration with a key
 * file, the static price table and 200 GB pd-balanced boot disks; the quotas read through
 * regions.get and projects.get, the room they leave each offer and the quota that binds; an
 * offer in a region the price table does not list (its price unknown); a role that may not read
 * the quotas; a configuration the gcp world refuses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <cmocka.h>

#include "cli/cli.h"
#include "providers/gcp_fixture.h"

#define REGIONS FAKE_GCE_COMPUTE "/projects/" GCP_PROJECT "/regions/"

struct fixture {
    struct fake_gce *fake;
    char dir[64], key[128], config[128];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    char uri[256];

    if (!f)
        return -1;
    snprintf(f->dir, sizeof(f->dir), "/tmp/castor-check-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(f->key, sizeof(f->key), "%s/key.json", f->dir);
    snprintf(f->config, sizeof(f->config), "%s/castor.yaml", f->dir);
    unsetenv("GOOGLE_APPLICATION_CREDENTIALS");
    unsetenv("GCE_METADATA_HOST");
    if (!(f->fake = fake_gce_start(GCP_PROJECT, GCP_EMAIL, GCP_A2_PUB)))
        return -1;
    fake_gce_set_now(f->fake, (int64_t)time(NULL)); /* castor signs its JWTs with the real clock */
    snprintf(uri, sizeof(uri), "%s%s", fake_gce_url(f->fake), FAKE_GCE_TOKEN);
    if (gcp_write_key(f->key, "service_account", GCP_A2_KEY, uri) < 0)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

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
    assert_non_null(strstr(text, "n1-standard-8+nvidia-tesla-t4x1/us-central1-a/spot"));
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
    assert_non_null(strstr(text, "castor can launch none of the 2 offers"));
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(check__quotas_room_and_prices, setup, teardown),
        cmocka_unit_test_setup_teardown(check__nothing_to_launch, setup, teardown),
        cmocka_unit_test_setup_teardown(check__quotas_not_allowed, setup, teardown),
        cmocka_unit_test_setup_teardown(check__bad_cloud_section, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
