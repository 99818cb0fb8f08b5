/* test_clouds_conf.c: the clouds of the registry made from their configuration sections: gcp
 * from every key, then driven against the fake Google Cloud (offers named from the section, a
 * launch idempotent by token, the cluster's instances listed, a termination), and every bad key
 * refused at its file:line:column. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <cmocka.h>

#include "gcp_fixture.h"
#include "providers/cloud.h"
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
    cloud_free(&c);
    gcp_world_stop(&w);
}

struct bad {
    const char *text;
    int code, line, column;
    const char *says;
};

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
        {GCP_HEAD GCP_OFFER, ERR_PARSE, 2, 3, "source_image: required"},
        {GCP_HEAD GCP_OFFER GCP_INST "    disk_gb: 5\n", ERR_RANGE, 9, 14, "disk_gb"},
        {GCP_HEAD GCP_OFFER GCP_INST "    disks: 1\n", ERR_UNKNOWN, 9, 5, "disks"},
        {GCP_HEAD GCP_OFFER "  instance:\n    disk_gb: 20\n", ERR_PARSE, 8, 5, "source_image"},
        {GCP_HEAD GCP_OFFER GCP_INST "  key_file: missing.json\n", ERR_NOENT, 9, 13,
         "/etc/castor/missing.json"},
    };

    (void)state;
    unsetenv("GOOGLE_APPLICATION_CREDENTIALS");
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct cloud c = {0};
        struct error e = {0};
        int rc = make("gcp", bad[i].text, &c, &e);

        if (rc != bad[i].code ||
            (bad[i].line >= 0 && (e.line != bad[i].line || e.column != bad[i].column)) ||
            !strstr(e.msg, bad[i].says))
            fail_msg("case %zu: rc %d at %d:%d: %s", i, rc, e.line, e.column, e.msg);
        assert_null(c.ops);
    }
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cloud_gcp_from_conf__every_key_driven),
        cmocka_unit_test(cloud_gcp_from_conf__bad_keys_located),
        cmocka_unit_test(cloud_gcp_from_conf__the_example),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
