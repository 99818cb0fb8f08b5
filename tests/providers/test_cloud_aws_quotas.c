/* test_cloud_aws_quotas.c: the aws cloud's quotas op over the strict fake EC2 endpoint and the
 * fake Service Quotas: the quotas of a g4dn spot offer and a p3 on-demand offer (limits applied
 * and default, what the whole account's instances hold, castor's or not, each offer's vCPUs,
 * cached), configured codes overriding and adding to the table, quotas off, a type EC2 does not
 * know, refusals (nothing written), and the `quotas:` key's faults at their file:line:column. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "providers/cloud.h"
#include "providers/fake_ec2.h"
#include "util/conf.h"

#define AKID "AKIDEXAMPLE"
#define SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define NS "xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\""
#define G4_SPOT "g4dn.12xlarge/us-east-1a/spot"
#define P3_OD "p3.2xlarge/us-east-1b/on-demand"

#define G_SPOT "L-3819A6DF"
#define P_OD "L-417A185B"
#define QUOTA(code, name, value)                                                           \
    "{\"Quota\":{\"ServiceCode\":\"ec2\",\"QuotaCode\":\"" code "\",\"QuotaName\":\"" name \
    "\",\"Value\":" value ",\"Unit\":\"None\",\"Adjustable\":true,\"GlobalQuota\":false}}"
#define NO_SUCH "{\"__type\":\"NoSuchResourceException\",\"message\":\"no applied value\"}"

/* An instance of the account: id, type, state, lifecycle ("" on-demand), tags. */
#define INSTANCE(id, type, state, life, tags)                                            \
    "<item><reservationId>r-" id "</reservationId><instancesSet><item><instanceId>" id   \
    "</instanceId><instanceType>" type "</instanceType><instanceState><name>" state      \
    "</name></instanceState><placement><availabilityZone>us-east-1a</availabilityZone>"  \
    "</placement><launchTime>2023-11-14T22:00:00.000Z</launchTime>" life "<tagSet>" tags \
    "</tagSet></item></instancesSet></item>"
#define SPOT "<instanceLifecycle>spot</instanceLifecycle>"
#define OURS                                                                             \
    "<item><key>castor:cluster</key><value>alpha</value></item><item><key>castor:launch" \
    "-token</key><value>t1</value></item>"
#define DESCRIBE(items)                                                                   \
    "<DescribeInstancesResponse " NS "><requestId>r-di</requestId><reservationSet>" items \
    "</reservationSet></DescribeInstancesResponse>"
#define TYPE(name, vcpus)                                                             \
    "<item><instanceType>" name "</instanceType><vCpuInfo><defaultVCpus>" vcpus       \
    "</defaultVCpus></vCpuInfo><memoryInfo><sizeInMiB>16384</sizeInMiB></memoryInfo>" \
    "</item>"
#define TYPES(items)                                                                              \
    "<DescribeInstanceTypesResponse " NS "><requestId>r-types</requestId><instanceTypeSet>" items \
    "</instanceTypeSet></DescribeInstanceTypesResponse>"
#define EC2_ERROR(code)                                                                \
    "<Response><Errors><Error><Code>" code "</Code><Message>refused</Message></Error>" \
    "</Errors><RequestID>r-err</RequestID></Response>"

/* The account: castor's g4dn spot instance, someone else's untagged p3 and g5 spot (pending),
 * an m5 (in a quota no offer uses) and a dl1 (in none known); a stopped p3 is not asked for. */
static const char account[] =
    DESCRIBE(INSTANCE("i-ours", "g4dn.12xlarge", "running", SPOT, OURS)
                 INSTANCE("i-p3", "p3.2xlarge", "running", "", "")
                     INSTANCE("i-g5", "g5.xlarge", "pending", SPOT, "")
                         INSTANCE("i-m5", "m5.large", "running", "", "")
                             INSTANCE("i-dl", "dl1.24xlarge", "running", "", ""));

struct fixture {
    struct fake_ec2 *ec2, *sq;
    struct cloud c;
};

/* The cloud over the fakes from a section whose extra lines are quotas (after the offers). */
static int make(struct fixture *f, const char *quotas, struct error *e)
{
    struct conf *doc = NULL;
    char text[4096];
    int rc;

    snprintf(text, sizeof(text),
             "world: aws\n"
             "cloud:\n"
             "  region: us-east-1\n"
             "  endpoint: %s\n"
             "  credentials_file: /nonexistent\n"
             "  imds: false\n"
             "  pricing: false\n"
             "  image_id: ami-1\n"
             "  offers:\n"
             "    - instance_type: g4dn.12xlarge\n"
             "      zone: us-east-1a\n"
             "      market: spot\n"
             "      gpus: 4\n"
             "    - instance_type: p3.2xlarge\n"
             "      zone: us-east-1b\n"
             "      gpus: 1\n"
             "%s",
             fake_ec2_url(f->ec2), quotas);
    assert_int_equal(conf_parse("castor.yaml", text, strlen(text), &doc, NULL), 0);
    rc = cloud_new("aws", conf_find(doc->root, "cloud"), "/etc/castor", NULL, &f->c, e);
    conf_free(doc);
    return rc;
}

/* make() with quotas read from the fake Service Quotas and more (codes: lines). */
static void make_ok(struct fixture *f, const char *more)
{
    struct error e = {0};
    char quotas[1024];

    snprintf(quotas, sizeof(quotas), "  quotas:\n    endpoint: %s\n%s", fake_ec2_url(f->sq), more);
    if (make(f, quotas, &e) < 0)
        fail_msg("%d:%d: %s", e.line, e.column, e.msg);
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));

    if (!f)
        return -1;
    setenv("AWS_ACCESS_KEY_ID", AKID, 1);
    setenv("AWS_SECRET_ACCESS_KEY", SECRET, 1);
    unsetenv("AWS_SESSION_TOKEN");
    unsetenv("AWS_ENDPOINT_URL");
    unsetenv("AWS_ENDPOINT_URL_EC2");
    unsetenv("AWS_ENDPOINT_URL_SERVICE_QUOTAS");
    f->ec2 = fake_ec2_start(AKID, SECRET, "us-east-1");
    f->sq = fake_ec2_start(AKID, SECRET, "us-east-1");
    if (!f->ec2 || !f->sq)
        return -1;
    fake_ec2_set_quotas(f->sq);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    assert_int_equal(fake_ec2_pending(f->ec2), 0);
    assert_int_equal(fake_ec2_pending(f->sq), 0);
    assert_int_equal(fake_ec2_auth_failures(f->ec2), 0);
    assert_int_equal(fake_ec2_auth_failures(f->sq), 0);
    cloud_free(&f->c);
    fake_ec2_stop(f->ec2);
    fake_ec2_stop(f->sq);
    free(f);
    return 0;
}

/* The use of offer in u (n entries), or NULL. */
static const struct cloud_quota_use *use_of(const struct cloud_quota_use *u, size_t n,
                                            const char *offer)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(u[i].offer, offer) == 0)
            return &u[i];
    return NULL;
}

/* The g4dn spot offer is in the G and VT spot quota (applied: 64), the p3 on-demand one in the
 * P on-demand quota (no applied value: AWS's default, 32): one quota each, named and titled,
 * in vCPUs; used counts every pending or running instance of the account in that quota and
 * market (castor's g4dn, 48, and someone else's pending g5, 4; the untagged p3, 8), not the
 * m5 or the dl1; each offer takes its type's vCPUs. The second read asks for no types again. */
static void quotas__offers_limits_and_the_accounts_use(void **state)
{
    struct fixture *f = *state;
    struct cloud_quota *q = NULL;
    struct cloud_quota_use *u = NULL;
    const struct cloud_quota_use *g, *p;
    size_t nq = 0, nu = 0;

    make_ok(f, "");
    fake_ec2_push(f->sq, 200, QUOTA(G_SPOT, "All G and VT Spot Instance Requests", "64.0"));
    fake_ec2_push(f->sq, 400, NO_SUCH);
    fake_ec2_push(f->sq, 200, QUOTA(P_OD, "Running On-Demand P instances", "32"));
    fake_ec2_push(f->ec2, 200, account);
    fake_ec2_push(
        f->ec2, 200,
        TYPES(TYPE("g4dn.12xlarge", "48") TYPE("p3.2xlarge", "8") TYPE("g5.xlarge", "4")));
    assert_int_equal(cloud_quotas(&f->c, &q, &nq, &u, &nu), 0);

    /* what was asked */
    assert_int_equal(fake_ec2_requests(f->sq), 3);
    assert_non_null(strstr(fake_ec2_body(f->sq, 0), "\"" G_SPOT "\""));
    assert_non_null(strstr(fake_ec2_body(f->sq, 0), "\"ServiceCode\":\"ec2\""));
    assert_string_equal(fake_ec2_target(f->sq, 1), "ServiceQuotasV20190624.GetServiceQuota");
    assert_string_equal(fake_ec2_target(f->sq, 2),
                        "ServiceQuotasV20190624.GetAWSDefaultServiceQuota");
    assert_non_null(strstr(fake_ec2_body(f->sq, 2), "\"" P_OD "\""));
    assert_int_equal(fake_ec2_requests(f->ec2), 2);
    assert_string_equal(fake_ec2_param(f->ec2, 0, "Action"), "DescribeInstances");
    assert_string_equal(fake_ec2_param(f->ec2, 0, "Filter.1.Name"), "instance-state-name");
    assert_string_equal(fake_ec2_param(f->ec2, 0, "Filter.1.Value.1"), "pending");
    assert_string_equal(fake_ec2_param(f->ec2, 0, "Filter.1.Value.2"), "running");
    assert_int_equal(fake_ec2_count_params(f->ec2, 0, "Filter."), 3);
    assert_string_equal(fake_ec2_param(f->ec2, 1, "Action"), "DescribeInstanceTypes");
    assert_int_equal(fake_ec2_count_params(f->ec2, 1, "InstanceType."), 3);

    /* what came of it */
    assert_int_equal(nq, 2);
    assert_string_equal(q[0].name, "ec2/us-east-1/" G_SPOT);
    assert_string_equal(q[0].title, "All G and VT Spot Instance Requests (us-east-1)");
    assert_string_equal(q[0].unit, "vCPUs");
    assert_float_equal(q[0].limit, 64, 0);
    assert_float_equal(q[0].used, 52, 0);
    assert_string_equal(q[1].name, "ec2/us-east-1/" P_OD);
    assert_string_equal(q[1].title, "Running On-Demand P instances (us-east-1)");
    assert_float_equal(q[1].limit, 32, 0);
    assert_float_equal(q[1].used, 8, 0);
    assert_int_equal(nu, 2);
    g = use_of(u, nu, G4_SPOT);
    p = use_of(u, nu, P3_OD);
    assert_non_null(g);
    assert_non_null(p);
    assert_int_equal(g->quota, 0);
    assert_float_equal(g->units, 48, 0);
    assert_int_equal(p->quota, 1);
    assert_float_equal(p->units, 8, 0);
    free(q);
    free(u);

    /* again: the limits and the account read anew, the types' vCPUs from the cache */
    fake_ec2_push(f->sq, 200, QUOTA(G_SPOT, "All G and VT Spot Instance Requests", "128"));
    fake_ec2_push(f->sq, 200, QUOTA(P_OD, "Running On-Demand P instances", "32"));
    fake_ec2_push(f->ec2, 200, DESCRIBE(INSTANCE("i-p3", "p3.2xlarge", "running", "", "")));
    assert_int_equal(cloud_quotas(&f->c, &q, &nq, &u, &nu), 0);
    assert_int_equal(fake_ec2_requests(f->ec2), 3);
    assert_int_equal(nq, 2);
    assert_float_equal(q[0].limit, 128, 0);
    assert_float_equal(q[0].used, 0, 0);
    assert_float_equal(q[1].used, 8, 0);
    assert_int_equal(nu, 2);
    free(q);
    free(u);
}

/* Configured codes come before the table: p3* on demand in a code of the user's (its title the
 * API's name), g4dn.12xlarge spot in none (that offer limited by no known quota); a quota code
 * Service Quotas does not know at all is left out with its offers. */
static void quotas__configured_codes(void **state)
{
    struct fixture *f = *state;
    struct cloud_quota *q = NULL;
    struct cloud_quota_use *u = NULL;
    size_t nq = 0, nu = 0;

    make_ok(f, "    codes:\n"
               "      - type: \"p3*\"\n"
               "        market: on-demand\n"
               "        code: L-ABCD1234\n"
               "      - type: g4dn.12xlarge\n"
               "        market: spot\n"
               "        code: none\n");
    fake_ec2_push(f->sq, 200, QUOTA("L-ABCD1234", "Running On-Demand P3 instances", "16"));
    fake_ec2_push(f->ec2, 200, account);
    fake_ec2_push(f->ec2, 200, TYPES(TYPE("g4dn.12xlarge", "48") TYPE("p3.2xlarge", "8")));
    assert_int_equal(cloud_quotas(&f->c, &q, &nq, &u, &nu), 0);
    assert_int_equal(fake_ec2_requests(f->sq), 1);
    assert_non_null(strstr(fake_ec2_body(f->sq, 0), "\"L-ABCD1234\""));
    assert_int_equal(nq, 1);
    assert_string_equal(q[0].name, "ec2/us-east-1/L-ABCD1234");
    assert_string_equal(q[0].title, "Running On-Demand P3 instances (us-east-1)");
    assert_float_equal(q[0].used, 8, 0);
    assert_int_equal(nu, 1);
    assert_string_equal(u[0].offer, P3_OD);
    free(q);
    free(u);

    /* Service Quotas knows neither the applied nor the default value: left out (and with no
     * quota known, the account is not asked) */
    fake_ec2_push(f->sq, 400, NO_SUCH);
    fake_ec2_push(f->sq, 400, NO_SUCH);
    assert_int_equal(cloud_quotas(&f->c, &q, &nq, &u, &nu), 0);
    assert_int_equal(fake_ec2_requests(f->ec2), 2);
    assert_int_equal(nq, 0);
    assert_int_equal(nu, 0);
    free(q);
    free(u);
}

/* P5 Spot instances have their own quota (All P5 Spot Instance Requests, L-C4BD4855), P4, P3 and
 * P2 Spot instances theirs (L-7212CCBC): a p5.48xlarge spot offer and a p4d.24xlarge one read
 * one each, and the account's untagged p5e spot instance (192 vCPUs) counts in the P5 one, its
 * p4d (96) in the other. (By family alone both would be one quota, L-7212CCBC, using 288.) */
static void quotas__p5_spot_has_its_own(void **state)
{
    struct fixture *f = *state;
    struct cloud_quota *q = NULL;
    struct cloud_quota_use *u = NULL;
    struct error e = {0};
    char more[1024];
    size_t nq = 0, nu = 0;
    const struct cloud_quota_use *p5;

    snprintf(more, sizeof(more),
             "    - instance_type: p5.48xlarge\n"
             "      zone: us-east-1a\n"
             "      market: spot\n"
             "      gpus: 8\n"
             "    - instance_type: p4d.24xlarge\n"
             "      zone: us-east-1a\n"
             "      market: spot\n"
             "      gpus: 8\n"
             "  quotas:\n"
             "    endpoint: %s\n",
             fake_ec2_url(f->sq));
    if (make(f, more, &e) < 0)
        fail_msg("%d:%d: %s", e.line, e.column, e.msg);
    fake_ec2_push(f->sq, 200, QUOTA(G_SPOT, "G", "64"));
    fake_ec2_push(f->sq, 200, QUOTA(P_OD, "P", "32"));
    fake_ec2_push(f->sq, 200, QUOTA("L-C4BD4855", "All P5 Spot Instance Requests", "384"));
    fake_ec2_push(f->sq, 200,
                  QUOTA("L-7212CCBC", "All P4, P3 and P2 Spot Instance Requests", "96"));
    fake_ec2_push(f->ec2, 200,
                  DESCRIBE(INSTANCE("i-p5e", "p5e.48xlarge", "running", SPOT, "")
                               INSTANCE("i-p4d", "p4d.24xlarge", "running", SPOT, "")));
    fake_ec2_push(f->ec2, 200,
                  TYPES(TYPE("g4dn.12xlarge", "48") TYPE("p3.2xlarge", "8")
                            TYPE("p5.48xlarge", "192") TYPE("p4d.24xlarge", "96")
                                TYPE("p5e.48xlarge", "192")));
    assert_int_equal(cloud_quotas(&f->c, &q, &nq, &u, &nu), 0);
    assert_non_null(strstr(fake_ec2_body(f->sq, 2), "\"L-C4BD4855\""));
    assert_non_null(strstr(fake_ec2_body(f->sq, 3), "\"L-7212CCBC\""));
    assert_int_equal(nq, 4);
    assert_string_equal(q[2].name, "ec2/us-east-1/L-C4BD4855");
    assert_float_equal(q[2].limit, 384, 0);
    assert_float_equal(q[2].used, 192, 0);
    assert_string_equal(q[3].name, "ec2/us-east-1/L-7212CCBC");
    assert_float_equal(q[3].used, 96, 0);
    assert_non_null(p5 = use_of(u, nu, "p5.48xlarge/us-east-1a/spot"));
    assert_int_equal(p5->quota, 2);
    assert_float_equal(p5->units, 192, 0);
    free(q);
    free(u);
}

/* quotas: off (and false): no quotas, nothing asked. */
static void quotas__off(void **state)
{
    struct fixture *f = *state;
    static const char *const offs[] = {"  quotas: off\n", "  quotas: false\n"};
    struct cloud_quota *q = (void *)1;
    struct cloud_quota_use *u = (void *)1;
    struct error e = {0};
    size_t nq = 9, nu = 9;

    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(make(f, offs[i], &e), 0);
        assert_int_equal(cloud_quotas(&f->c, &q, &nq, &u, &nu), 0);
        assert_int_equal(nq, 0);
        assert_int_equal(nu, 0);
        free(q);
        free(u);
        cloud_free(&f->c);
        memset(&f->c, 0, sizeof(f->c));
    }
    assert_int_equal(fake_ec2_requests(f->ec2), 0);
    assert_int_equal(fake_ec2_requests(f->sq), 0);
}

/* Refusals write nothing: Service Quotas' AccessDeniedException and EC2's UnauthorizedOperation
 * are ERR_PERM, throttling to the end ERR_AGAIN, a server that does not answer JSON ERR_IO. */
static void quotas__refused_writes_nothing(void **state)
{
    struct fixture *f = *state;
    struct cloud_quota *q = (void *)1;
    struct cloud_quota_use *u = (void *)1;
    size_t nq = 9, nu = 9;

    make_ok(f, "");
    fake_ec2_push(f->sq, 400,
                  "{\"__type\":\"AccessDeniedException\",\"message\":\"not authorized to perform: "
                  "servicequotas:GetServiceQuota\"}");
    assert_int_equal(cloud_quotas(&f->c, &q, &nq, &u, &nu), ERR_PERM);
    assert_int_equal(fake_ec2_requests(f->sq), 1);
    assert_int_equal(fake_ec2_requests(f->ec2), 0);

    fake_ec2_push(f->sq, 200, QUOTA(G_SPOT, "G", "64"));
    fake_ec2_push(f->sq, 200, QUOTA(P_OD, "P", "32"));
    fake_ec2_push(f->ec2, 403, EC2_ERROR("UnauthorizedOperation"));
    assert_int_equal(cloud_quotas(&f->c, &q, &nq, &u, &nu), ERR_PERM);

    fake_ec2_push(f->sq, 200, QUOTA(G_SPOT, "G", "64"));
    fake_ec2_push(f->sq, 200, QUOTA(P_OD, "P", "32"));
    fake_ec2_push(f->ec2, 200, account);
    fake_ec2_push(f->ec2, 403, EC2_ERROR("UnauthorizedOperation"));
    assert_int_equal(cloud_quotas(&f->c, &q, &nq, &u, &nu), ERR_PERM);

    fake_ec2_push(f->sq, 200, "{\"Quota\":{\"QuotaCode\":\"" G_SPOT "\"}}");
    assert_int_equal(cloud_quotas(&f->c, &q, &nq, &u, &nu), ERR_IO);
    assert_true(q == (void *)1 && u == (void *)1 && nq == 9 && nu == 9);
}

/* No credentials to be had at all (none in the environment, no file, IMDS off) is ERR_PERM, as
 * for the EC2 calls: the op writes nothing and asks nothing. (The Service Quotas client took
 * the chain's "none found" for NoSuchResourceException, asked for the defaults, left every code
 * out as unknown and answered success with no quotas.) */
static void quotas__no_credentials_is_refused(void **state)
{
    struct fixture *f = *state;
    struct cloud_quota *q = (void *)1;
    struct cloud_quota_use *u = (void *)1;
    size_t nq = 9, nu = 9;

    make_ok(f, "");
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");
    assert_int_equal(cloud_quotas(&f->c, &q, &nq, &u, &nu), ERR_PERM);
    assert_true(q == (void *)1 && u == (void *)1 && nq == 9 && nu == 9);
    assert_int_equal(fake_ec2_requests(f->sq), 0);
    assert_int_equal(fake_ec2_requests(f->ec2), 0);
}

/* A type EC2 does not know refuses the whole DescribeInstanceTypes (InvalidInstanceType): the
 * types are asked one at a time, and the unknown one counts no vCPUs (its offer gets no use);
 * it is not asked again. */
static void quotas__unknown_type_counts_nothing(void **state)
{
    struct fixture *f = *state;
    struct cloud_quota *q = NULL;
    struct cloud_quota_use *u = NULL;
    size_t nq = 0, nu = 0;

    make_ok(f, "");
    fake_ec2_push(f->sq, 200, QUOTA(G_SPOT, "G", "64"));
    fake_ec2_push(f->sq, 200, QUOTA(P_OD, "P", "32"));
    fake_ec2_push(f->ec2, 200, DESCRIBE(INSTANCE("i-p3", "p3.2xlarge", "running", "", "")));
    fake_ec2_push(f->ec2, 400, EC2_ERROR("InvalidInstanceType"));
    fake_ec2_push(f->ec2, 400, EC2_ERROR("InvalidInstanceType"));
    fake_ec2_push(f->ec2, 200, TYPES(TYPE("p3.2xlarge", "8")));
    assert_int_equal(cloud_quotas(&f->c, &q, &nq, &u, &nu), 0);
    assert_int_equal(fake_ec2_requests(f->ec2), 4);
    assert_string_equal(fake_ec2_param(f->ec2, 2, "InstanceType.1"), "g4dn.12xlarge");
    assert_null(fake_ec2_param(f->ec2, 2, "InstanceType.2"));
    assert_int_equal(nq, 2);
    assert_float_equal(q[1].used, 8, 0);
    assert_int_equal(nu, 1);
    assert_string_equal(u[0].offer, P3_OD);
    free(q);
    free(u);

    fake_ec2_push(f->sq, 200, QUOTA(G_SPOT, "G", "64"));
    fake_ec2_push(f->sq, 200, QUOTA(P_OD, "P", "32"));
    fake_ec2_push(f->ec2, 200, DESCRIBE(""));
    assert_int_equal(cloud_quotas(&f->c, &q, &nq, &u, &nu), 0);
    assert_int_equal(fake_ec2_requests(f->ec2), 5);
    free(q);
    free(u);
}

/* Each bad quotas key is refused at its line and column. */
static void quotas__bad_keys_located(void **state)
{
    struct fixture *f = *state;
    static const struct {
        const char *text;
        int rc, line, column;
        const char *says;
    } bad[] = {
        {"  quotas: maybe\n", ERR_PARSE, 17, 11, "off, false, true"},
        {"  quotas:\n    endpoint: ftp://x\n", ERR_INVAL, 18, 15, "endpoint"},
        {"  quotas:\n    codez: []\n", ERR_UNKNOWN, 18, 5, "codez"},
        {"  quotas:\n    codes: L-1\n", ERR_PARSE, 18, 12, "a list"},
        {"  quotas:\n    codes:\n      - type: p5*\n        market: spot\n", ERR_PARSE, 19, 9,
         "type, market and code are required"},
        {"  quotas:\n    codes:\n      - type: P5\n        market: spot\n        code: L-1A\n",
         ERR_PARSE, 19, 15, "a prefix ending in *"},
        {"  quotas:\n    codes:\n      - type: p5*x\n        market: spot\n        code: L-1A\n",
         ERR_PARSE, 19, 15, "a prefix ending in *"},
        {"  quotas:\n    codes:\n      - type: p5*\n        market: reserved\n        code: L-1A\n",
         ERR_UNKNOWN, 20, 17, "market"},
        {"  quotas:\n    codes:\n      - type: p5*\n        market: spot\n        code: L_1\n",
         ERR_PARSE, 21, 15, "a quota code"},
        {"  quotas:\n    codes:\n      - type: p5*\n        market: spot\n        code: L-1A\n"
         "        note: x\n",
         ERR_UNKNOWN, 22, 9, "note"},
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct error e = {0};
        int rc = make(f, bad[i].text, &e);

        if (rc != bad[i].rc || e.line != bad[i].line || e.column != bad[i].column ||
            !strstr(e.msg, bad[i].says))
            fail_msg("case %zu: %d at %d:%d: %s", i, rc, e.line, e.column, e.msg);
        assert_null(f->c.ops);
    }
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(quotas__offers_limits_and_the_accounts_use),
        T(quotas__configured_codes),
        T(quotas__p5_spot_has_its_own),
        T(quotas__off),
        T(quotas__refused_writes_nothing),
        T(quotas__no_credentials_is_refused),
        T(quotas__unknown_type_counts_nothing),
        T(quotas__bad_keys_located),
    };
#undef T

    return cmocka_run_group_tests(tests, NULL, NULL);
}
