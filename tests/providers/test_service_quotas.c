/* test_service_quotas.c: the Service Quotas client against the strict fake switched to Service
 * Quotas (SigV4 for "servicequotas" with x-amz-target signed, the JSON protocol's content type
 * and targets checked, JSON errors, a request id header): the request's body and target, the
 * applied value, AWS's default after NoSuchResourceException, refusals (access denied as
 * ERR_PERM at 400 and 403, a wrong secret, expired credentials fetched anew once), throttling
 * retried then ERR_AGAIN, bad answers, and the endpoint's precedence. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "providers/aws/service_quotas.h"
#include "providers/fake_ec2.h"
#include "support/aws_json_fixture.h"
#include "support/hooks.h"
#include "util/json.h"

#define AKID "AKIDEXAMPLE"
#define SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define NOW 1700000000
#define REGION "eu-west-1"

/* GetServiceQuota's answer for code with value, as Service Quotas writes it. */
#define QUOTA(code, name, value)                                                               \
    "{\"Quota\":{\"ServiceCode\":\"ec2\",\"ServiceName\":\"Amazon Elastic Compute Cloud "      \
    "(Amazon EC2)\",\"QuotaArn\":\"arn:aws:servicequotas:eu-west-1:123456789012:ec2/" code     \
    "\",\"QuotaCode\":\"" code "\",\"QuotaName\":\"" name "\",\"Value\":" value ",\"Unit\":"   \
    "\"None\",\"Adjustable\":true,\"GlobalQuota\":false,\"UsageMetric\":{\"MetricNamespace\":" \
    "\"AWS/Usage\",\"MetricName\":\"ResourceCount\",\"MetricDimensions\":{\"Class\":"          \
    "\"Standard/OnDemand\",\"Resource\":\"vCPU\",\"Service\":\"EC2\",\"Type\":\"Resource\"},"  \
    "\"MetricStatisticRecommendation\":\"Maximum\"}}}"
#define NO_SUCH                                                                         \
    "{\"__type\":\"NoSuchResourceException\",\"message\":\"The request failed because " \
    "the specified service does not exist.\"}"

struct fixture {
    struct fake_ec2 *fake;
    struct aws_credential_source *creds;
    struct sq_client *c;
    struct hooks h;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct aws_credential_config cc = {.imds_disabled = 1, .credentials_file = "/nonexistent"};
    struct aws_json_config cfg = {0};

    if (!f)
        return -1;
    f->h.now = NOW;
    aws_json_test_env(AKID, SECRET, "AWS_ENDPOINT_URL_SERVICE_QUOTAS");
    f->fake = fake_ec2_start(AKID, SECRET, REGION);
    if (!f->fake || aws_credential_source_new(&cc, &f->creds) < 0)
        return -1;
    fake_ec2_set_quotas(f->fake);
    cfg = aws_json_test_quick(fake_ec2_url(f->fake), f->creds, &f->h);
    if (sq_client_new(REGION, &cfg, &f->c, NULL) < 0)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    assert_int_equal(fake_ec2_pending(f->fake), 0);
    sq_client_free(f->c);
    aws_credential_source_free(f->creds);
    fake_ec2_stop(f->fake);
    free(f);
    return 0;
}

/* Request i's body is exactly {"ServiceCode": service, "QuotaCode": code}. */
static void assert_body(struct fixture *f, size_t i, const char *service, const char *code)
{
    struct jv *body = NULL;

    assert_int_equal(
        jv_parse(fake_ec2_body(f->fake, i), strlen(fake_ec2_body(f->fake, i)), &body, NULL), 0);
    assert_int_equal(jv_size(body), 2);
    assert_string_equal(jv_string_value(jv_get(body, "ServiceCode")), service);
    assert_string_equal(jv_string_value(jv_get(body, "QuotaCode")), code);
    jv_free(body);
}

/* The applied value: one signed GetServiceQuota (the fake verified the signature for
 * "servicequotas" in the region, the content type and the target), the answer read whole. */
static void get__applied_value(void **state)
{
    struct fixture *f = *state;
    struct sq_quota q = {0};
    struct error e = {0};

    fake_ec2_push(f->fake, 200,
                  QUOTA("L-DB2E81BA", "Running On-Demand G and VT instances", "64.0"));
    assert_int_equal(sq_get_quota(f->c, "ec2", "L-DB2E81BA", &q, &e), 0);
    assert_int_equal(fake_ec2_requests(f->fake), 1);
    assert_int_equal(fake_ec2_auth_failures(f->fake), 0);
    assert_string_equal(fake_ec2_target(f->fake, 0), SQ_TARGET_GET);
    assert_body(f, 0, "ec2", "L-DB2E81BA");
    assert_float_equal(q.value, 64.0, 0);
    assert_string_equal(q.service_code, "ec2");
    assert_string_equal(q.quota_code, "L-DB2E81BA");
    assert_string_equal(q.name, "Running On-Demand G and VT instances");
    assert_string_equal(q.unit, "None");
    assert_int_equal(q.is_default, 0);
}

/* NoSuchResourceException (no applied value): GetAWSDefaultServiceQuota with the same body; its
 * value is the answer, marked as AWS's default. When the default is unknown too: ERR_NOENT. */
static void get__default_after_no_such_resource(void **state)
{
    struct fixture *f = *state;
    struct sq_quota q = {0};
    struct error e = {0};

    fake_ec2_push(f->fake, 400, NO_SUCH);
    fake_ec2_push(f->fake, 200, QUOTA("L-7212CCBC", "All P Spot Instance Requests", "5"));
    assert_int_equal(sq_get_quota(f->c, "ec2", "L-7212CCBC", &q, &e), 0);
    assert_int_equal(fake_ec2_requests(f->fake), 2);
    assert_string_equal(fake_ec2_target(f->fake, 0), SQ_TARGET_GET);
    assert_string_equal(fake_ec2_target(f->fake, 1), SQ_TARGET_DEFAULT);
    assert_string_equal(fake_ec2_body(f->fake, 0), fake_ec2_body(f->fake, 1));
    assert_body(f, 1, "ec2", "L-7212CCBC");
    assert_float_equal(q.value, 5.0, 0);
    assert_int_equal(q.is_default, 1);
    assert_int_equal(f->h.n_sleeps, 0); /* not a retry */

    memset(&q, 0x5a, sizeof(q));
    fake_ec2_push(f->fake, 400, NO_SUCH);
    fake_ec2_push(f->fake, 400, NO_SUCH);
    assert_int_equal(sq_get_quota(f->c, "ec2", "L-NOTACODE", &q, &e), ERR_NOENT);
    assert_string_equal(e.file, "servicequotas GetAWSDefaultServiceQuota");
    assert_non_null(strstr(e.msg, "NoSuchResourceException"));
    assert_non_null(strstr(e.msg, "fake-req-4"));
    assert_int_equal((unsigned char)q.name[0], 0x5a); /* untouched */
}

/* Access denied is ERR_PERM, at 400 (Service Quotas' status) and 403, with the coral prefix or
 * not, naming the type, the message and the request id, not retried and not falling back;
 * ThrottlingException and TooManyRequestsException are retried after a jittered wait, then
 * ERR_AGAIN; a 5xx likewise; an unknown type is ERR_UNKNOWN. */
static void get__errors(void **state)
{
    struct fixture *f = *state;
    struct sq_quota q = {0};
    struct error e = {0};

    fake_ec2_push(f->fake, 400,
                  "{\"__type\":\"AccessDeniedException\",\"message\":\"User: arn:aws:iam::1:user/x "
                  "is not authorized to perform: servicequotas:GetServiceQuota\"}");
    assert_int_equal(sq_get_quota(f->c, "ec2", "L-DB2E81BA", &q, &e), ERR_PERM);
    assert_string_equal(e.file, "servicequotas GetServiceQuota");
    assert_non_null(strstr(e.msg, "AccessDeniedException"));
    assert_non_null(strstr(e.msg, "servicequotas:GetServiceQuota"));
    assert_non_null(strstr(e.msg, "fake-req-1"));
    fake_ec2_push(f->fake, 403,
                  "{\"__type\":\"com.amazon.coral.service#AccessDeniedException\",\"Message\":"
                  "\"denied\"}");
    assert_int_equal(sq_get_quota(f->c, "ec2", "L-DB2E81BA", &q, &e), ERR_PERM);
    assert_int_equal(fake_ec2_requests(f->fake), 2);
    assert_int_equal(f->h.n_sleeps, 0);

    fake_ec2_push(f->fake, 400,
                  "{\"__type\":\"ThrottlingException\",\"message\":\"Rate exceeded\"}");
    fake_ec2_push(f->fake, 400, "{\"__type\":\"TooManyRequestsException\",\"message\":\"slow\"}");
    fake_ec2_push(f->fake, 200, QUOTA("L-DB2E81BA", "Running On-Demand G and VT instances", "8"));
    assert_int_equal(sq_get_quota(f->c, "ec2", "L-DB2E81BA", &q, &e), 0);
    assert_float_equal(q.value, 8.0, 0);
    assert_int_equal(f->h.n_sleeps, 2);
    assert_true(f->h.sleeps[0] >= 0 && f->h.sleeps[0] <= 100);
    assert_non_null(strstr(f->h.last_log, "TooManyRequestsException"));

    for (int i = 0; i < 3; i++)
        fake_ec2_push(f->fake, 400, "{\"__type\":\"ThrottlingException\",\"message\":\"no\"}");
    assert_int_equal(sq_get_quota(f->c, "ec2", "L-DB2E81BA", &q, &e), ERR_AGAIN);
    assert_non_null(strstr(e.msg, "gave up after 3 attempts"));
    for (int i = 0; i < 3; i++)
        fake_ec2_push(f->fake, 500, "{\"__type\":\"ServiceException\",\"message\":\"oops\"}");
    assert_int_equal(sq_get_quota(f->c, "ec2", "L-DB2E81BA", &q, &e), ERR_AGAIN);
    assert_non_null(strstr(e.msg, "ServiceException"));
    fake_ec2_push(f->fake, 400, "{\"__type\":\"BrandNewException\",\"message\":\"what\"}");
    assert_int_equal(sq_get_quota(f->c, "ec2", "L-DB2E81BA", &q, &e), ERR_UNKNOWN);
    assert_non_null(strstr(e.msg, "BrandNewException"));
    /* the failures are logged */
    assert_non_null(strstr(f->h.last_log, "servicequotas GetServiceQuota failed"));
}

/* Credentials refused as expired (ExpiredTokenException, UnrecognizedClientException): the cached
 * ones are dropped and the call asked once more with credentials read anew (the fake echoes the
 * session token it was sent); refused again: ERR_PERM, with no third request. */
static void get__expired_credentials_fetched_anew(void **state)
{
    struct fixture *f = *state;
    struct sq_quota q = {0};
    struct error e = {0};

    setenv("AWS_SESSION_TOKEN", "session-1", 1);
    fake_ec2_push(f->fake, 200, QUOTA("L-DB2E81BA", "@TOKEN@", "8"));
    assert_int_equal(sq_get_quota(f->c, "ec2", "L-DB2E81BA", &q, &e), 0);
    assert_string_equal(q.name, "session-1");
    setenv("AWS_SESSION_TOKEN", "session-2", 1); /* the cached credentials stay in use */
    fake_ec2_push(f->fake, 400,
                  "{\"__type\":\"ExpiredTokenException\",\"message\":\"The security token "
                  "included in the request is expired\"}");
    fake_ec2_push(f->fake, 200, QUOTA("L-DB2E81BA", "@TOKEN@", "16"));
    assert_int_equal(sq_get_quota(f->c, "ec2", "L-DB2E81BA", &q, &e), 0);
    assert_string_equal(q.name, "session-2");
    assert_float_equal(q.value, 16.0, 0);
    assert_int_equal(fake_ec2_requests(f->fake), 3);
    assert_non_null(strstr(f->h.last_log, "credentials refused, fetched anew"));

    for (int i = 0; i < 2; i++)
        fake_ec2_push(f->fake, 400,
                      "{\"__type\":\"UnrecognizedClientException\",\"message\":\"The security "
                      "token included in the request is invalid.\"}");
    assert_int_equal(sq_get_quota(f->c, "ec2", "L-DB2E81BA", &q, &e), ERR_PERM);
    assert_non_null(strstr(e.msg, "UnrecognizedClientException"));
    assert_int_equal(fake_ec2_requests(f->fake), 5);
    unsetenv("AWS_SESSION_TOKEN");
}

/* Bad answers: no Quota, a Value that is not a number or is negative, another quota's code, not
 * JSON: ERR_PARSE naming what is wrong and the request id; a truncated answer is a transport
 * failure, retried, then ERR_IO; *out is never written. */
static void get__bad_answers(void **state)
{
    struct fixture *f = *state;
    struct sq_quota q;
    struct error e = {0};

    memset(&q, 0x5a, sizeof(q));
    fake_ec2_push(f->fake, 200, "{\"Quotas\":[]}");
    assert_int_equal(sq_get_quota(f->c, "ec2", "L-DB2E81BA", &q, &e), ERR_PARSE);
    assert_non_null(strstr(e.msg, "without Quota"));
    assert_non_null(strstr(e.msg, "fake-req-1"));
    fake_ec2_push(f->fake, 200, QUOTA("L-DB2E81BA", "G", "\"64\""));
    assert_int_equal(sq_get_quota(f->c, "ec2", "L-DB2E81BA", &q, &e), ERR_PARSE);
    assert_non_null(strstr(e.msg, "Quota.Value"));
    fake_ec2_push(f->fake, 200, QUOTA("L-DB2E81BA", "G", "-1"));
    assert_int_equal(sq_get_quota(f->c, "ec2", "L-DB2E81BA", &q, &e), ERR_PARSE);
    fake_ec2_push(f->fake, 200, QUOTA("L-417A185B", "P", "64"));
    assert_int_equal(sq_get_quota(f->c, "ec2", "L-DB2E81BA", &q, &e), ERR_PARSE);
    assert_non_null(strstr(e.msg, "answered L-417A185B"));
    fake_ec2_push(f->fake, 200, "{\"Quota\": {");
    assert_int_equal(sq_get_quota(f->c, "ec2", "L-DB2E81BA", &q, &e), ERR_PARSE);
    assert_non_null(strstr(e.msg, "not JSON"));
    fake_ec2_push(f->fake, 400, "<html>bad gateway</html>");
    assert_int_equal(sq_get_quota(f->c, "ec2", "L-DB2E81BA", &q, &e), ERR_PARSE);
    assert_non_null(strstr(e.msg, "not a JSON error"));
    for (int i = 0; i < 3; i++)
        fake_ec2_push_cut(f->fake, QUOTA("L-DB2E81BA", "G", "64"), 10);
    assert_int_equal(sq_get_quota(f->c, "ec2", "L-DB2E81BA", &q, &e), ERR_IO);
    assert_int_equal((unsigned char)q.name[0], 0x5a);
    assert_int_equal(sq_get_quota(f->c, "ec2", "", &q, &e), ERR_INVAL);
}

/* A wrong secret is refused by the fake's verifier (InvalidSignatureException): ERR_INVAL, the
 * secret in no message. */
static void get__wrong_secret_refused(void **state)
{
    struct fixture *f = *state;
    struct aws_json_config cfg = {0};
    struct sq_quota q = {0};
    struct error e = {0};

    fake_ec2_stop(f->fake);
    f->fake = fake_ec2_start(AKID, "not-the-secret", REGION);
    assert_non_null(f->fake);
    fake_ec2_set_quotas(f->fake);
    sq_client_free(f->c);
    cfg = aws_json_test_config(fake_ec2_url(f->fake), f->creds, &f->h);
    assert_int_equal(sq_client_new(REGION, &cfg, &f->c, NULL), 0);
    assert_int_equal(sq_get_quota(f->c, "ec2", "L-DB2E81BA", &q, &e), ERR_INVAL);
    assert_non_null(strstr(e.msg, "InvalidSignatureException"));
    assert_int_equal(fake_ec2_auth_failures(f->fake), 1);
    assert_null(strstr(e.msg, SECRET));
}

/* The endpoint: configured, else AWS_ENDPOINT_URL_SERVICE_QUOTAS, else AWS_ENDPOINT_URL, else
 * the region's public one; plain http off loopback is refused; a region is required. */
static void new__endpoint_precedence(void **state)
{
    struct fixture *f = *state;
    struct aws_json_config cfg = {.credentials = f->creds};
    struct sq_client *c = NULL;
    struct error e = {0};

    static const struct {
        const char *env, *value, *configured, *expect;
    } steps[] = {
        {NULL, NULL, NULL, "https://servicequotas.eu-west-1.amazonaws.com"},
        {"AWS_ENDPOINT_URL", "http://127.0.0.1:1/", NULL, "http://127.0.0.1:1"},
        {"AWS_ENDPOINT_URL_SERVICE_QUOTAS", "http://127.0.0.1:2", NULL, "http://127.0.0.1:2"},
        {NULL, NULL, "http://localhost:3", "http://localhost:3"},
    };

    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        if (steps[i].env)
            setenv(steps[i].env, steps[i].value, 1);
        cfg.endpoint = steps[i].configured;
        assert_int_equal(sq_client_new(REGION, &cfg, &c, NULL), 0);
        assert_string_equal(sq_client_endpoint(c), steps[i].expect);
        sq_client_free(c);
    }
    cfg.endpoint = "http://servicequotas.example.com";
    c = NULL;
    assert_int_equal(sq_client_new(REGION, &cfg, &c, &e), ERR_INVAL);
    assert_non_null(strstr(e.msg, "plain http"));
    assert_null(c);
    assert_int_equal(sq_client_new("", &cfg, &c, &e), ERR_INVAL);
    assert_null(c);
    unsetenv("AWS_ENDPOINT_URL");
    unsetenv("AWS_ENDPOINT_URL_SERVICE_QUOTAS");
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(get__applied_value),
        T(get__default_after_no_such_resource),
        T(get__errors),
        T(get__expired_credentials_fetched_anew),
        T(get__bad_answers),
        T(get__wrong_secret_refused),
        T(new__endpoint_precedence),
    };
#undef T

    return cmocka_run_group_tests(tests, NULL, NULL);
}
