/* test_service_quotas_moto.c: the Service Quotas client against moto's server (an
 * implementation castor did not write), started as `moto_server` on a free loopback port with
 * request authentication on: moto 5.2.5 answers GetServiceQuota for the service code "vpc" only,
 * so a vpc quota checks the wire format (target, content type, body, SigV4 for
 * "servicequotas", verified by moto against its IAM user's key and policy) and the answer's
 * reading; an ec2 code answers NoSuchResourceException there, after which the client asks
 * GetAWSDefaultServiceQuota (which moto does not implement: a 500, retried, then ERR_AGAIN); a
 * wrong secret is refused. moto comes from .venv (scripts/test-venv; CASTOR_MOTO_SERVER
 * overrides the path). Without it the test fails under CI (CI set) and is skipped (exit 77)
 * otherwise. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "providers/aws/service_quotas.h"
#include "support/moto.h"

#define REGION "us-east-1"

struct fixture {
    struct aws_credential_source *creds;
    struct sq_client *c;
    int sleeps;
    char last_log[800];
};

static int64_t real_clock(void *arg)
{
    (void)arg;
    return (int64_t)time(NULL);
}

static void no_sleep(void *arg, long ms)
{
    struct fixture *f = arg;

    (void)ms;
    f->sleeps++;
}

static void keep_log(void *arg, const char *line)
{
    struct fixture *f = arg;

    snprintf(f->last_log, sizeof(f->last_log), "%s", line);
    fprintf(stderr, "  [servicequotas] %s\n", line);
}

/* A client signing with the moto user's key id and secret. */
static int client(struct fixture *f, const char *secret)
{
    struct aws_credential_config cc = {.imds_disabled = 1, .credentials_file = "/nonexistent"};
    struct aws_json_config cfg = {.endpoint = moto_group.url,
                                  .timeout_ms = 20000,
                                  .max_attempts = 2,
                                  .seed = 1,
                                  .clock = real_clock,
                                  .sleep_ms = no_sleep,
                                  .log = keep_log};

    setenv("AWS_ACCESS_KEY_ID", moto_group.akid, 1);
    setenv("AWS_SECRET_ACCESS_KEY", secret, 1);
    unsetenv("AWS_SESSION_TOKEN");
    unsetenv("AWS_ENDPOINT_URL");
    unsetenv("AWS_ENDPOINT_URL_SERVICE_QUOTAS");
    if (aws_credential_source_new(&cc, &f->creds) < 0)
        return -1;
    cfg.credentials = f->creds;
    cfg.hook_arg = f;
    return sq_client_new(REGION, &cfg, &f->c, NULL);
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));

    if (!f || client(f, moto_group.secret) < 0)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    sq_client_free(f->c);
    aws_credential_source_free(f->creds);
    free(f);
    return 0;
}

/* moto's own vpc quota, as moto ships it: "VPCs per Region", 5, unit None; the applied value
 * (no fallback, no retry). */
static void moto__vpc_quota(void **state)
{
    struct fixture *f = *state;
    struct sq_quota q = {0};
    struct error e = {0};

    if (sq_get_quota(f->c, "vpc", "L-F678F1CE", &q, &e) < 0)
        fail_msg("%s: %s", e.file, e.msg);
    assert_string_equal(q.service_code, "vpc");
    assert_string_equal(q.quota_code, "L-F678F1CE");
    assert_string_equal(q.name, "VPCs per Region");
    assert_string_equal(q.unit, "None");
    assert_float_equal(q.value, 5.0, 0);
    assert_int_equal(q.is_default, 0);
    assert_int_equal(f->sleeps, 0);
}

/* An ec2 quota: moto answers GetServiceQuota with NoSuchResourceException, so the client asks
 * GetAWSDefaultServiceQuota, which moto does not implement (HTML 500): retried once, then
 * ERR_AGAIN naming the default call; *out untouched. */
static void moto__ec2_code_falls_back_to_the_default(void **state)
{
    struct fixture *f = *state;
    struct sq_quota q;
    struct error e = {0};

    memset(&q, 0x5a, sizeof(q));
    assert_int_equal(sq_get_quota(f->c, "ec2", "L-DB2E81BA", &q, &e), ERR_AGAIN);
    assert_string_equal(e.file, "servicequotas GetAWSDefaultServiceQuota");
    assert_non_null(strstr(e.msg, "HTTP 500"));
    assert_int_equal(f->sleeps, 1);
    assert_non_null(strstr(f->last_log, "servicequotas GetAWSDefaultServiceQuota failed"));
    assert_int_equal((unsigned char)q.name[0], 0x5a);
}

/* moto's verifier refuses a request signed with a wrong secret (a 403 whose body is XML, not a
 * JSON error: castor says so); the secret is in no message. */
static void moto__wrong_secret_refused(void **state)
{
    struct fixture *f = *state;
    struct fixture w = {0};
    struct sq_quota q = {0};
    struct error e = {0};

    (void)f;
    assert_int_equal(client(&w, "wrong-secret-wrong-secret-wrong-secret00"), 0);
    assert_int_equal(sq_get_quota(w.c, "vpc", "L-F678F1CE", &q, &e), ERR_PARSE);
    assert_non_null(strstr(e.msg, "HTTP 403"));
    assert_null(strstr(e.msg, "wrong-secret"));
    sq_client_free(w.c);
    aws_credential_source_free(w.creds);
}

int main(void)
{
    char path[1024];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(moto__vpc_quota, setup, teardown),
        cmocka_unit_test_setup_teardown(moto__ec2_code_falls_back_to_the_default, setup, teardown),
        cmocka_unit_test_setup_teardown(moto__wrong_secret_refused, setup, teardown),
    };

    if (!moto_find(CASTOR_TEST_DATA, path, sizeof(path)))
        return moto_missing("test_service_quotas_moto", path);
    return cmocka_run_group_tests(tests, moto_group_start, moto_group_stop);
}
