/* test_ec2_moto.c: the EC2 client's happy path against moto's EC2 server (an implementation castor
 * did not write), started here as `moto_server` on a free loopback port with request
 * authentication on: instance types, spot prices, an instant fleet and RunInstances with tags,
 * the cluster by tag over several pages, termination; a launch into a subnet that does not
 * exist (InvalidSubnetID.NotFound); and a wrong secret refused by moto's own
 * SigV4 verifier. moto comes from .venv (scripts/test-venv; CASTOR_MOTO_SERVER overrides the
 * path). Without it the test fails under CI (CI set) and is skipped (exit 77) otherwise. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "providers/aws/ec2.h"
#include "support/moto.h"

#define REGION "us-east-1"
#define CLUSTER "castor-moto"

static int64_t real_clock(void *arg)
{
    (void)arg;
    return (int64_t)time(NULL);
}

static void quiet_log(void *arg, const char *line)
{
    (void)arg;
    fprintf(stderr, "  [ec2] %s\n", line);
}

struct fixture {
    struct aws_credential_source *creds;
    struct ec2_client *client;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct aws_credential_config cc = {.imds_disabled = 1, .credentials_file = "/nonexistent"};
    struct ec2_config cfg = {.region = REGION,
                             .timeout_ms = 20000,
                             .page_size = 5,
                             .seed = 1,
                             .clock = real_clock,
                             .log = quiet_log};

    if (!f)
        return -1;
    setenv("AWS_ACCESS_KEY_ID", moto_group.akid, 1);
    setenv("AWS_SECRET_ACCESS_KEY", moto_group.secret, 1);
    unsetenv("AWS_SESSION_TOKEN");
    if (aws_credential_source_new(&cc, &f->creds) < 0)
        return -1;
    cfg.endpoint = moto_group.url;
    cfg.credentials = f->creds;
    if (ec2_client_new(&cfg, &f->client, NULL) < 0)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    ec2_client_free(f->client);
    aws_credential_source_free(f->creds);
    free(f);
    return 0;
}

/* GPU and memory figures as AWS publishes them (and moto ships): p4d.24xlarge has 96 vCPUs,
 * 1152 GiB and 8 A100 of 40 GiB; m5.large none. */
static void moto__instance_types(void **state)
{
    struct fixture *f = *state;
    const char *names[] = {"p4d.24xlarge", "m5.large"};
    struct ec2_instance_type *t = NULL;
    struct error e = {0};
    size_t n = 0;

    assert_int_equal(ec2_describe_instance_types(f->client, names, 2, &t, &n, &e), 0);
    assert_int_equal(n, 2);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(t[i].name, "p4d.24xlarge") == 0) {
            assert_int_equal(t[i].vcpus, 96);
            assert_int_equal(t[i].memory_mib, 1152 * 1024);
            assert_int_equal(t[i].gpus, 8);
            assert_string_equal(t[i].gpu_name, "A100");
            assert_int_equal(t[i].gpu_memory_mib, 8 * 40960);
        } else {
            assert_string_equal(t[i].name, "m5.large");
            assert_int_equal(t[i].gpus, 0);
            assert_int_equal(t[i].vcpus, 2);
        }
    }
    free(t);
}

/* Spot prices: one per zone offering the type, read with moto's nanosecond timestamps. */
static void moto__spot_prices(void **state)
{
    struct fixture *f = *state;
    const char *names[] = {"g5.xlarge"};
    struct ec2_spot_price *p = NULL;
    struct error e = {0};
    size_t n = 0;

    assert_int_equal(ec2_describe_spot_prices(f->client, names, 1, 0, &p, &n, &e), 0);
    assert_true(n >= 1);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(p[i].type, "g5.xlarge");
        assert_int_equal(strncmp(p[i].zone, REGION, strlen(REGION)), 0);
        assert_true(p[i].price > 0 && p[i].price < 100);
        assert_true(p[i].time > 0);
    }
    free(p);
}

/* Two subnets of the default VPC, with their zones. */
static void default_subnets(struct ec2_client *c, char ids[2][32], char zones[2][32])
{
    struct xml_doc *doc = NULL;
    struct xml_node *it;
    int k = 0;

    assert_int_equal(ec2_call(c, "DescribeSubnets", NULL, &doc, NULL), 0);
    for (it = xml_find(xml_root(doc), "subnetSet/item"); it && k < 2; it = xml_next(it), k++) {
        assert_int_equal(xml_copy(it, "subnetId", ids[k], 32), 0);
        assert_int_equal(xml_copy(it, "availabilityZone", zones[k], 32), 0);
    }
    assert_int_equal(k, 2);
    xml_free(doc);
}

static void launch_template(struct ec2_client *c, char id[64])
{
    struct ec2_params *p = ec2_params_new();
    struct xml_doc *doc = NULL;

    ec2_params_add(p, "castor-node", "LaunchTemplateName");
    ec2_params_add(p, "ami-03cf127a", "LaunchTemplateData.ImageId");
    ec2_params_add(p, "g5.xlarge", "LaunchTemplateData.InstanceType");
    assert_int_equal(ec2_call(c, "CreateLaunchTemplate", p, &doc, NULL), 0);
    assert_int_equal(xml_copy(xml_root(doc), "launchTemplate/launchTemplateId", id, 64), 0);
    xml_free(doc);
    ec2_params_free(p);
}

/* A launch into a subnet EC2 does not know: ERR_NOENT naming InvalidSubnetID.NotFound, the code
 * the aws cloud takes for a refusal of the launch (its offer's subnet is wrong). */
static void moto__launch_into_a_missing_subnet(void **state)
{
    struct fixture *f = *state;
    struct ec2_run_request rr = {.image_id = "ami-03cf127a",
                                 .instance_type = "g5.xlarge",
                                 .subnet_id = "subnet-0000000000000dead",
                                 .count = 1,
                                 .min_count = 1,
                                 .market = EC2_ON_DEMAND,
                                 .cluster_id = CLUSTER,
                                 .launch_token = "moto-missing-subnet"};
    struct ec2_launched *run = NULL;
    struct error e = {0};
    size_t n = 0;

    assert_int_equal(ec2_run_instances(f->client, &rr, &run, &n, &e), ERR_NOENT);
    assert_null(run);
    assert_non_null(strstr(e.msg, "InvalidSubnetID.NotFound"));
}

/* The whole launch cycle: an instant fleet (spot and on-demand over two subnets) and a
 * RunInstances fallback, tagged; another cluster's instance; the cluster described by its tag
 * over more than one page of 5; everything terminated. */
static void moto__fleet_describe_terminate(void **state)
{
    struct fixture *f = *state;
    char subnets[2][32], zones[2][32], lt[64];
    struct ec2_override ov[2];
    struct ec2_fleet_request fr = {0};
    struct ec2_fleet_result res = {0};
    struct ec2_run_request rr = {0};
    struct ec2_launched *run = NULL, *other = NULL;
    struct ec2_instance *in = NULL;
    struct ec2_params *p;
    struct xml_doc *doc = NULL;
    const char **ids;
    struct error e = {0};
    size_t n_run = 0, n_other = 0, n = 0, spot = 0, ours = 0;
    char token[1024];

    default_subnets(f->client, subnets, zones);
    launch_template(f->client, lt);
    for (int i = 0; i < 2; i++)
        ov[i] = (struct ec2_override){"g5.xlarge", subnets[i], zones[i], 0};
    fr.launch_template_id = lt;
    fr.overrides = ov;
    fr.n_overrides = 2;
    fr.on_demand = 3;
    fr.spot = 4;
    fr.cluster_id = CLUSTER;
    fr.launch_token = "moto-launch-1";
    assert_int_equal(ec2_create_fleet(f->client, &fr, &res, &e), 0);
    assert_int_equal(res.n_instances, 7);
    assert_int_equal(res.n_errors, 0);
    assert_true(res.fleet_id[0] != '\0');
    for (size_t i = 0; i < res.n_instances; i++)
        spot += res.instances[i].market == EC2_SPOT;
    assert_int_equal(spot, 4);
    rr = (struct ec2_run_request){.launch_template_id = lt,
                                  .instance_type = "g5.xlarge",
                                  .subnet_id = subnets[0],
                                  .count = 5,
                                  .min_count = 5,
                                  .market = EC2_ON_DEMAND,
                                  .cluster_id = CLUSTER,
                                  .launch_token = "moto-run-1"};
    assert_int_equal(ec2_run_instances(f->client, &rr, &run, &n_run, &e), 0);
    assert_int_equal(n_run, 5);
    rr.cluster_id = "someone-else";
    rr.count = 1;
    rr.min_count = 1;
    rr.launch_token = "moto-other-1";
    assert_int_equal(ec2_run_instances(f->client, &rr, &other, &n_other, &e), 0);
    assert_int_equal(n_other, 1);

    /* one page of 5 is not all: moto gives a nextToken */
    p = ec2_params_new();
    ec2_params_add(p, "tag:castor:cluster", "Filter.1.Name");
    ec2_params_add(p, CLUSTER, "Filter.1.Value.1");
    ec2_params_add(p, "5", "MaxResults");
    assert_int_equal(ec2_call(f->client, "DescribeInstances", p, &doc, &e), 0);
    assert_int_equal(xml_copy(xml_root(doc), "nextToken", token, sizeof(token)), 0);
    xml_free(doc);
    ec2_params_free(p);

    assert_int_equal(ec2_describe_cluster(f->client, CLUSTER, &in, &n, &e), 0);
    assert_int_equal(n, 12);
    ids = calloc(n, sizeof(*ids));
    assert_non_null(ids);
    for (size_t i = 0; i < n; i++) {
        assert_string_not_equal(in[i].id, other[0].id);
        assert_true(strcmp(in[i].launch_token, "moto-launch-1") == 0 ||
                    strcmp(in[i].launch_token, "moto-run-1") == 0);
        ours += strcmp(in[i].launch_token, "moto-run-1") == 0;
        assert_string_equal(in[i].type, "g5.xlarge");
        assert_true(strcmp(in[i].state, "running") == 0 || strcmp(in[i].state, "pending") == 0);
        ids[i] = in[i].id;
    }
    assert_int_equal(ours, 5);
    assert_int_equal(ec2_terminate_instances(f->client, ids, n, &e), 0);
    free(ids);
    free(in);
    in = NULL;
    assert_int_equal(ec2_describe_cluster(f->client, CLUSTER, &in, &n, &e), 0);
    assert_int_equal(n, 12);
    for (size_t i = 0; i < n; i++)
        assert_true(strcmp(in[i].state, "terminated") == 0 ||
                    strcmp(in[i].state, "shutting-down") == 0);
    free(in);
    free(run);
    free(other);
    ec2_fleet_result_free(&res);
}

/* moto's verifier refuses a request signed with a wrong secret (AuthFailure), and one from a key
 * it does not know; castor reports ERR_INVAL naming AuthFailure. */
static void moto__wrong_secret_refused(void **state)
{
    struct fixture *f = *state;
    struct aws_credential_config cc = {.imds_disabled = 1, .credentials_file = "/nonexistent"};
    struct ec2_config cfg = {.region = REGION,
                             .endpoint = moto_group.url,
                             .timeout_ms = 20000,
                             .clock = real_clock,
                             .log = quiet_log};
    struct aws_credential_source *s = NULL;
    struct ec2_client *c = NULL;
    struct xml_doc *doc = NULL;
    struct error e = {0};

    (void)f;
    for (int k = 0; k < 2; k++) {
        setenv("AWS_ACCESS_KEY_ID", k == 0 ? moto_group.akid : "AKIAUNKNOWNKEY000000", 1);
        setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret-wrong-secret-wrong-secret00", 1);
        assert_int_equal(aws_credential_source_new(&cc, &s), 0);
        cfg.credentials = s;
        assert_int_equal(ec2_client_new(&cfg, &c, NULL), 0);
        assert_int_equal(ec2_call(c, "DescribeInstances", NULL, &doc, &e), ERR_INVAL);
        assert_non_null(strstr(e.msg, "AuthFailure"));
        assert_null(strstr(e.msg, "wrong-secret"));
        ec2_client_free(c);
        aws_credential_source_free(s);
    }
}

int main(void)
{
    char path[1024];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(moto__instance_types, setup, teardown),
        cmocka_unit_test_setup_teardown(moto__spot_prices, setup, teardown),
        cmocka_unit_test_setup_teardown(moto__fleet_describe_terminate, setup, teardown),
        cmocka_unit_test_setup_teardown(moto__launch_into_a_missing_subnet, setup, teardown),
        cmocka_unit_test_setup_teardown(moto__wrong_secret_refused, setup, teardown),
    };

    if (!moto_find(CASTOR_TEST_DATA, path, sizeof(path)))
        return moto_missing("test_ec2_moto", path);
    return cmocka_run_group_tests(tests, moto_group_start, moto_group_stop);
}
