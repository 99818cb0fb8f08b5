/* test_attest.c: EC2 instance identity documents checked against a certificate: a document signed
 * by the certificate's key for the instance, account and region asked passes; a changed byte,
 * another key's signature, another instance's document, another account or region, a signature
 * that is not base64, a signed text that is not JSON and a certificate that cannot be read do
 * not, each with its reason. The keys are tests/data/attest's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(attest_aws_check__a_signed_document_of_the_instance, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(attest_aws_check__refusals_with_reasons, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
