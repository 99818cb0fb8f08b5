/* test_attest.c: EC2 instance identity documents checked against a certificate: a document signed
 * by the certificate's key for the instance, account and region asked passes; a changed byte,
 * another key's signature, another instance's document, another account or region, a signature
 * that is not base64, a signed text that is not JSON and a certificate that cannot be read do
 * not, each with its reason. Compute Engine identity tokens against a certificates file: one
 * for the instance, audience and project passes; another key, an unknown key id, another
 * instance, project, audience or issuer, an expired token, one from the future, alg none and a
 * token that is not a JWT do not. The keys are tests/data/attest's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "control/attest.h"
#include "support/attest_sign.h"
#include "util/error.h"

struct fx {
    char *cert;
    size_t cert_len;
    struct attest_aws cfg;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));

    if (!f || file_read_all(ATTEST_CERT, &f->cert, &f->cert_len, NULL) < 0)
        return -1;
    f->cfg = (struct attest_aws){.certificate = f->cert,
                                 .certificate_len = f->cert_len,
                                 .account = "123456789012",
                                 .region = "us-east-1"};
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    free(f->cert);
    free(f);
    return 0;
}

/* The check of doc signed by key_path's key, for id; the reason into why. */
static int check(const struct fx *f, const char *id, const char *doc, const char *key_path,
                 char *why, size_t size)
{
    char sig[1024];

    assert_int_equal(attest_signature(key_path, doc, sig, sizeof(sig)), 0);
    return attest_aws_check(&f->cfg, id, doc, strlen(doc), sig, why, size);
}

static void attest_aws_check__a_signed_document_of_the_instance(void **state)
{
    struct fx *f = *state;
    char doc[1024], why[256] = "";

    attest_document(doc, sizeof(doc), "i-0abc", "123456789012", "us-east-1");
    assert_int_equal(check(f, "i-0abc", doc, ATTEST_KEY, why, sizeof(why)), 0);
    /* account and region not asked: any */
    f->cfg.account = f->cfg.region = NULL;
    attest_document(doc, sizeof(doc), "i-0abc", "999999999999", "eu-west-1");
    assert_int_equal(check(f, "i-0abc", doc, ATTEST_KEY, why, sizeof(why)), 0);
}

static void attest_aws_check__refusals_with_reasons(void **state)
{
    struct fx *f = *state;
    char doc[1024], sig[1024], why[256];

    attest_document(doc, sizeof(doc), "i-0abc", "123456789012", "us-east-1");
    /* another key: a forged signature */
    assert_int_equal(check(f, "i-0abc", doc, ATTEST_OTHER_KEY, why, sizeof(why)), ERR_PERM);
    assert_non_null(strstr(why, "signature does not verify"));
    /* a byte changed after signing: the instance claimed is another */
    assert_int_equal(attest_signature(ATTEST_KEY, doc, sig, sizeof(sig)), 0);
    strstr(doc, "i-0abc")[5] = 'd';
    assert_int_equal(attest_aws_check(&f->cfg, "i-0abd", doc, strlen(doc), sig, why, sizeof(why)),
                     ERR_PERM);
    assert_non_null(strstr(why, "signature does not verify"));
    /* another instance's document, signed: it is not this node's */
    attest_document(doc, sizeof(doc), "i-0other", "123456789012", "us-east-1");
    assert_int_equal(check(f, "i-0abc", doc, ATTEST_KEY, why, sizeof(why)), ERR_PERM);
    assert_non_null(strstr(why, "instance i-0other's, not i-0abc's"));
    attest_document(doc, sizeof(doc), "i-0abc", "210987654321", "us-east-1");
    assert_int_equal(check(f, "i-0abc", doc, ATTEST_KEY, why, sizeof(why)), ERR_PERM);
    assert_non_null(strstr(why, "account 210987654321, not 123456789012"));
    attest_document(doc, sizeof(doc), "i-0abc", "123456789012", "eu-west-1");
    assert_int_equal(check(f, "i-0abc", doc, ATTEST_KEY, why, sizeof(why)), ERR_PERM);
    assert_non_null(strstr(why, "region eu-west-1, not us-east-1"));
    /* signed, but not JSON */
    assert_int_equal(check(f, "i-0abc", "i-0abc", ATTEST_KEY, why, sizeof(why)), ERR_PERM);
    assert_non_null(strstr(why, "not a JSON object"));
    /* a signature that is not base64 */
    attest_document(doc, sizeof(doc), "i-0abc", "123456789012", "us-east-1");
    assert_int_equal(
        attest_aws_check(&f->cfg, "i-0abc", doc, strlen(doc), "not base64!", why, sizeof(why)),
        ERR_PARSE);
    assert_non_null(strstr(why, "not base64"));
    /* a certificate that cannot be read */
    f->cfg.certificate = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
    f->cfg.certificate_len = strlen(f->cfg.certificate);
    assert_int_equal(check(f, "i-0abc", doc, ATTEST_KEY, why, sizeof(why)), ERR_INTERNAL);
    assert_non_null(strstr(why, "certificate cannot be read"));
    assert_int_equal(attest_aws_check(NULL, "i-0abc", doc, strlen(doc), sig, why, sizeof(why)),
                     ERR_INVAL);
}

#define GCP_NOW 1764230400.0
#define GCP_AUD "http://10.128.0.5:8470"
#define GCP_HEADER "{\"alg\":\"RS256\",\"kid\":\"k1\",\"typ\":\"JWT\"}"

/* The check of a token of claims (header GCP_HEADER unless given) signed by key_path's key, for
 * instance id at GCP_NOW, against a certificates file holding key id k1. */
static int gcp_check(const char *id, const char *header, const char *claims, const char *key_path,
                     const char *project, char *why, size_t size)
{
    char dir[] = "/tmp/castor-attest-XXXXXX", path[96], token[4096];
    struct attest_gcp cfg = {.audience = GCP_AUD, .project = project};
    int rc;

    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/certs.json", dir);
    assert_int_equal(attest_gcp_certs_file(path, "k1"), 0);
    cfg.certificates_path = path;
    assert_int_equal(
        attest_gcp_token(key_path, header ? header : GCP_HEADER, claims, token, sizeof(token)), 0);
    rc = attest_gcp_check(&cfg, id, token, GCP_NOW, why, size);
    unlink(path);
    rmdir(dir);
    return rc;
}

static void attest_gcp_check__a_token_of_the_instance(void **state)
{
    char claims[1024], why[320] = "";

    (void)state;
    attest_gcp_claims(claims, sizeof(claims), "us-central1-a", "castor-w-1", "my-project", GCP_AUD,
                      GCP_NOW - 60);
    assert_int_equal(gcp_check("us-central1-a.castor-w-1", NULL, claims, ATTEST_KEY, "my-project",
                               why, sizeof(why)),
                     0);
    /* any project when none is asked; within the skew of its times */
    attest_gcp_claims(claims, sizeof(claims), "us-central1-a", "castor-w-1", "elsewhere", GCP_AUD,
                      GCP_NOW + ATTEST_SKEW_S - 1);
    assert_int_equal(
        gcp_check("us-central1-a.castor-w-1", NULL, claims, ATTEST_KEY, NULL, why, sizeof(why)), 0);
}

static void attest_gcp_check__refusals_with_reasons(void **state)
{
    static const char *const id = "us-central1-a.castor-w-1";
    char claims[1024], why[320], path[64], token[4096];
    struct attest_gcp cfg = {.audience = GCP_AUD};

    (void)state;
    attest_gcp_claims(claims, sizeof(claims), "us-central1-a", "castor-w-1", "my-project", GCP_AUD,
                      GCP_NOW - 60);
    assert_int_equal(gcp_check(id, NULL, claims, ATTEST_OTHER_KEY, "my-project", why, sizeof(why)),
                     ERR_PERM);
    assert_non_null(strstr(why, "signature does not verify"));
    assert_int_equal(gcp_check(id, "{\"alg\":\"RS256\",\"kid\":\"k9\"}", claims, ATTEST_KEY, NULL,
                               why, sizeof(why)),
                     ERR_PERM);
    assert_non_null(strstr(why, "key k9 is not among Google's certificates"));
    assert_int_equal(gcp_check(id, "{\"alg\":\"none\",\"kid\":\"k1\"}", claims, ATTEST_KEY, NULL,
                               why, sizeof(why)),
                     ERR_PERM);
    assert_non_null(strstr(why, "not RS256"));
    assert_int_equal(
        gcp_check("us-central1-b.castor-w-1", NULL, claims, ATTEST_KEY, NULL, why, sizeof(why)),
        ERR_PERM);
    assert_non_null(
        strstr(why, "instance us-central1-a.castor-w-1's, not us-central1-b.castor-w-1's"));
    assert_int_equal(gcp_check(id, NULL, claims, ATTEST_KEY, "their-project", why, sizeof(why)),
                     ERR_PERM);
    assert_non_null(strstr(why, "project my-project, not their-project"));
    attest_gcp_claims(claims, sizeof(claims), "us-central1-a", "castor-w-1", "my-project",
                      "https://elsewhere", GCP_NOW - 60);
    assert_int_equal(gcp_check(id, NULL, claims, ATTEST_KEY, NULL, why, sizeof(why)), ERR_PERM);
    assert_non_null(strstr(why, "audience https://elsewhere"));
    attest_gcp_claims(claims, sizeof(claims), "us-central1-a", "castor-w-1", "my-project", GCP_AUD,
                      GCP_NOW - 3600 - ATTEST_SKEW_S - 10); /* expired skew ago */
    assert_int_equal(gcp_check(id, NULL, claims, ATTEST_KEY, NULL, why, sizeof(why)), ERR_PERM);
    assert_non_null(strstr(why, "expired"));
    attest_gcp_claims(claims, sizeof(claims), "us-central1-a", "castor-w-1", "my-project", GCP_AUD,
                      GCP_NOW + ATTEST_SKEW_S + 10);
    assert_int_equal(gcp_check(id, NULL, claims, ATTEST_KEY, NULL, why, sizeof(why)), ERR_PERM);
    assert_non_null(strstr(why, "in the future"));
    attest_gcp_claims(claims, sizeof(claims), "us-central1-a", "castor-w-1", "my-project", GCP_AUD,
                      GCP_NOW - 60);
    strstr(claims, "accounts.google.com")[0] = 'e'; /* "https://eccounts..." */
    assert_int_equal(gcp_check(id, NULL, claims, ATTEST_KEY, NULL, why, sizeof(why)), ERR_PERM);
    assert_non_null(strstr(why, "not Google"));
    /* not a JWT; no certificates file */
    snprintf(path, sizeof(path), "/tmp/castor-no-such-certs.json");
    cfg.certificates_path = path;
    assert_int_equal(attest_gcp_check(&cfg, id, "a.b", GCP_NOW, why, sizeof(why)), ERR_PARSE);
    assert_int_equal(attest_gcp_check(&cfg, id, "e30.e30.e30.e30", GCP_NOW, why, sizeof(why)),
                     ERR_PARSE);
    assert_int_equal(attest_gcp_token(ATTEST_KEY, GCP_HEADER, claims, token, sizeof(token)), 0);
    assert_int_equal(attest_gcp_check(&cfg, id, token, GCP_NOW, why, sizeof(why)), ERR_INTERNAL);
    assert_non_null(strstr(why, "Google's certificates cannot be read"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(attest_aws_check__a_signed_document_of_the_instance, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(attest_aws_check__refusals_with_reasons, setup, teardown),
        cmocka_unit_test(attest_gcp_check__a_token_of_the_instance),
        cmocka_unit_test(attest_gcp_check__refusals_with_reasons),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
