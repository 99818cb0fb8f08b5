/* test_ec2_moto.c: the EC2 client's happy path against moto's EC2 server (an implementation castor
 * did not write), started here as `moto_server` on a free loopback port with request
 * authentication on: instance types, spot prices, an instant fleet and RunInstances with tags,
 * the cluster by tag over several pages, termination; and a wrong secret refused by moto's own
 * SigV4 verifier. moto comes from .venv (scripts/test-venv; CASTOR_MOTO_SERVER overrides the
 * path). Without it the test fails under CI (CI set) and is skipped (exit 77) otherwise. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "providers/aws/ec2.h"
#include "util/http_client.h"
#include "util/sigv4.h"
#include "util/strbuf.h"

#define REGION "us-east-1"
#define CLUSTER "castor-moto"

/* moto authenticates every action after the first INITIAL_NO_AUTH_ACTION_COUNT ones, against
 * access keys of IAM users it knows; it knows none at start, so the count is exactly the three
 * actions that create one (CreateUser, CreateAccessKey, PutUserPolicy). Every EC2 request after
 * them is verified. */
#define BOOTSTRAP_ACTIONS "3"

static pid_t moto_pid = -1;
static char moto_url[64];
static char akid[64], secret[128];

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

/* A port nobody listens on now (the kernel's choice). */
static int free_port(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

/* 1 once something accepts connections on port. */
static int listening(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int fd = socket(AF_INET, SOCK_STREAM, 0), ok;

    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
    if (fd >= 0)
        close(fd);
    return ok;
}

/* One IAM Query call, signed (moto does not check it during the bootstrap), its answer parsed. */
static struct xml_doc *iam_call(const char *form)
{
    struct http_client *http = NULL;
    struct http_client_url u;
    const char *type = "application/x-www-form-urlencoded; charset=utf-8";
    struct sigv4_header sh[2] = {{"Host", NULL}, {"Content-Type", type}};
    struct sigv4_request sr = {"POST", "/", NULL, sh, 2, form, strlen(form)};
    struct sigv4_credentials sc = {"AKIDBOOTSTRAP", "bootstrap", NULL};
    struct sigv4_params sp = {REGION, "iam", (int64_t)time(NULL), SIGV4_NORMALIZE_PATH, NULL};
    struct sigv4_signed s = {0};
    struct http_client_header hs[4];
    struct http_client_request req = {0};
    struct http_client_response r = {0};
    struct xml_doc *doc = NULL;

    assert_int_equal(http_client_parse_url(moto_url, &u), 0);
    sh[0].value = u.authority;
    assert_int_equal(sigv4_sign(&sr, &sc, &sp, &s), 0);
    hs[0] = (struct http_client_header){"Host", u.authority};
    hs[1] = (struct http_client_header){"Content-Type", type};
    hs[2] = (struct http_client_header){"X-Amz-Date", s.amz_date};
    hs[3] = (struct http_client_header){"Authorization", s.authorization};
    req = (struct http_client_request){.method = "POST",
                                       .url = moto_url,
                                       .headers = hs,
                                       .nheaders = 4,
                                       .body = form,
                                       .body_len = strlen(form),
                                       .timeout_ms = 10000};
    assert_int_equal(http_client_new(&http), 0);
    assert_int_equal(http_client_do(http, &req, &r, NULL), 0);
    if (r.status != 200)
        fprintf(stderr, "IAM answered %ld: %s\n", r.status, r.body);
    assert_int_equal(r.status, 200);
    assert_int_equal(xml_parse(r.body, r.body_len, &doc, NULL), 0);
    http_client_response_clear(&r);
    sigv4_signed_free(&s);
    http_client_free(http);
    return doc;
}

/* Create the IAM user whose key the tests sign with, allowed every EC2 action. */
static void bootstrap_user(void)
{
    struct xml_doc *doc;
    const char *policy = "%7B%22Version%22%3A%222012-10-17%22%2C%22Statement%22%3A%5B%7B%22Effect"
                         "%22%3A%22Allow%22%2C%22Action%22%3A%22ec2%3A%2A%22%2C%22Resource%22%3A"
                         "%22%2A%22%7D%5D%7D";
    char form[512];

    xml_free(iam_call("Action=CreateUser&Version=2010-05-08&UserName=castor"));
    doc = iam_call("Action=CreateAccessKey&Version=2010-05-08&UserName=castor");
    assert_int_equal(
        xml_copy(xml_root(doc), "CreateAccessKeyResult/AccessKey/AccessKeyId", akid, sizeof(akid)),
        0);
    assert_int_equal(xml_copy(xml_root(doc), "CreateAccessKeyResult/AccessKey/SecretAccessKey",
                              secret, sizeof(secret)),
                     0);
    xml_free(doc);
    snprintf(form, sizeof(form),
             "Action=PutUserPolicy&Version=2010-05-08&UserName=castor&PolicyName=ec2&"
             "PolicyDocument=%s",
             policy);
    xml_free(iam_call(form));
}

static int start_moto(void **state)
{
    const char *path = getenv("CASTOR_MOTO_SERVER");
    char fallback[1024], port_s[16];
    int port = free_port();

    (void)state;
    snprintf(fallback, sizeof(fallback), "%s/../../.venv/bin/moto_server", CASTOR_TEST_DATA);
    if (!path || !*path)
        path = fallback;
    if (port < 0)
        return -1;
    snprintf(port_s, sizeof(port_s), "%d", port);
    snprintf(moto_url, sizeof(moto_url), "http://127.0.0.1:%d", port);
    moto_pid = fork();
    if (moto_pid < 0)
        return -1;
    if (moto_pid == 0) {
        int null = open("/dev/null", O_WRONLY);

        if (!getenv("CASTOR_MOTO_VERBOSE") && null >= 0) {
            dup2(null, 1);
            dup2(null, 2);
        }
        setenv("INITIAL_NO_AUTH_ACTION_COUNT", BOOTSTRAP_ACTIONS, 1);
        execl(path, path, "-H", "127.0.0.1", "-p", port_s, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 300 && !listening(port); i++) {
        int status;

        if (waitpid(moto_pid, &status, WNOHANG) == moto_pid) {
            fprintf(stderr, "moto_server exited before listening (status %d)\n", status);
            moto_pid = -1;
            return -1;
        }
        nanosleep(&(struct timespec){0, 100000000L}, NULL);
    }
    if (!listening(port))
        return -1;
    bootstrap_user();
    return 0;
}

static int stop_moto(void **state)
{
    (void)state;
    if (moto_pid > 0) {
        kill(moto_pid, SIGTERM);
        waitpid(moto_pid, NULL, 0);
    }
    return 0;
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
    setenv("AWS_ACCESS_KEY_ID", akid, 1);
    setenv("AWS_SECRET_ACCESS_KEY", secret, 1);
    unsetenv("AWS_SESSION_TOKEN");
    if (aws_credential_source_new(&cc, &f->creds) < 0)
        return -1;
    cfg.endpoint = moto_url;
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
                             .endpoint = moto_url,
                             .timeout_ms = 20000,
                             .clock = real_clock,
                             .log = quiet_log};
    struct aws_credential_source *s = NULL;
    struct ec2_client *c = NULL;
    struct xml_doc *doc = NULL;
    struct error e = {0};

    (void)f;
    for (int k = 0; k < 2; k++) {
        setenv("AWS_ACCESS_KEY_ID", k == 0 ? akid : "AKIAUNKNOWNKEY000000", 1);
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
    const char *path = getenv("CASTOR_MOTO_SERVER");
    char fallback[1024];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(moto__instance_types, setup, teardown),
        cmocka_unit_test_setup_teardown(moto__spot_prices, setup, teardown),
        cmocka_unit_test_setup_teardown(moto__fleet_describe_terminate, setup, teardown),
        cmocka_unit_test_setup_teardown(moto__wrong_secret_refused, setup, teardown),
    };

    snprintf(fallback, sizeof(fallback), "%s/../../.venv/bin/moto_server", CASTOR_TEST_DATA);
    if (!path || !*path)
        path = fallback;
    if (access(path, X_OK) != 0) {
        const char *ci = getenv("CI");

        if (ci && *ci) {
            fprintf(stderr, "test_ec2_moto: %s is missing; CI must run scripts/test-venv\n", path);
            return 1;
        }
        fprintf(stderr, "test_ec2_moto: SKIPPED: %s is missing (run scripts/test-venv)\n", path);
        return 77;
    }
    return cmocka_run_group_tests(tests, start_moto, stop_moto);
}
