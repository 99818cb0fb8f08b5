/* test_crypto.c: SHA-256 against FIPS 180-2's examples, HMAC-SHA256 against RFC 4231's test
 * cases, RS256 against RFC 7515's Appendix A.2 (tests/data/rfc7515-a2), hex encoding, the
 * constant-time compare, wiping and the random generator. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/base64.h"
#include "util/crypto.h"
#include "util/error.h"
#include "util/file.h"

/* FIPS 180-2, appendix B.1 (one block): "abc". */
static void crypto_sha256_hex__fips_one_block(void **state)
{
    char hex[CRYPTO_SHA256_HEX_LEN + 1];

    (void)state;
    assert_int_equal(crypto_sha256_hex("abc", 3, hex), 0);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

/* FIPS 180-2, appendix B.2 (two blocks): the 448-bit message "abcdbcde...nopq". */
static void crypto_sha256_hex__fips_two_blocks(void **state)
{
    const char *msg = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    char hex[CRYPTO_SHA256_HEX_LEN + 1];

    (void)state;
    assert_int_equal(crypto_sha256_hex(msg, strlen(msg), hex), 0);
    assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

/* FIPS 180-2, appendix B.3: one million 'a'. */
static void crypto_sha256_hex__fips_million_a(void **state)
{
    size_t n = 1000000;
    char *msg = malloc(n);
    char hex[CRYPTO_SHA256_HEX_LEN + 1];

    (void)state;
    assert_non_null(msg);
    memset(msg, 'a', n);
    assert_int_equal(crypto_sha256_hex(msg, n, hex), 0);
    assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(msg);
}

/* The empty message, with data NULL as the header allows (the hash of an empty AWS payload). */
static void crypto_sha256_hex__empty_with_null_data(void **state)
{
    char hex[CRYPTO_SHA256_HEX_LEN + 1];

    (void)state;
    assert_int_equal(crypto_sha256_hex(NULL, 0, hex), 0);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

/* The raw digest is the bytes the hex form spells. */
static void crypto_sha256__raw_matches_hex(void **state)
{
    unsigned char md[CRYPTO_SHA256_LEN];
    char hex[CRYPTO_SHA256_HEX_LEN + 1];

    (void)state;
    assert_int_equal(crypto_sha256("abc", 3, md), 0);
    assert_int_equal(md[0], 0xba);
    assert_int_equal(md[1], 0x78);
    assert_int_equal(md[31], 0xad);
    crypto_hex(md, sizeof(md), hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

/* NULL data with a length, or no output, is ERR_INVAL and leaves the output alone. */
static void crypto_sha256__null_arguments(void **state)
{
    unsigned char md[CRYPTO_SHA256_LEN];
    char hex[CRYPTO_SHA256_HEX_LEN + 1];

    (void)state;
    memset(md, 0x5a, sizeof(md));
    memset(hex, 'x', sizeof(hex));
    assert_int_equal(crypto_sha256(NULL, 1, md), ERR_INVAL);
    assert_int_equal(crypto_sha256("abc", 3, NULL), ERR_INVAL);
    assert_int_equal(crypto_sha256_hex(NULL, 5, hex), ERR_INVAL);
    assert_int_equal(crypto_sha256_hex("abc", 3, NULL), ERR_INVAL);
    for (size_t i = 0; i < sizeof(md); i++)
        assert_int_equal(md[i], 0x5a);
    for (size_t i = 0; i < sizeof(hex); i++)
        assert_int_equal(hex[i], 'x');
}

/* RFC 4231 test case 1: a 20-byte key of 0x0b, "Hi There". */
static void crypto_hmac_sha256__rfc4231_case1(void **state)
{
    unsigned char key[20], md[CRYPTO_SHA256_LEN];
    char hex[CRYPTO_SHA256_HEX_LEN + 1];

    (void)state;
    memset(key, 0x0b, sizeof(key));
    assert_int_equal(crypto_hmac_sha256(key, sizeof(key), "Hi There", 8, md), 0);
    crypto_hex(md, sizeof(md), hex);
    assert_string_equal(hex, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
}

/* RFC 4231 test case 2: a key shorter than the output, "Jefe". */
static void crypto_hmac_sha256__rfc4231_case2(void **state)
{
    const char *data = "what do ya want for nothing?";
    unsigned char md[CRYPTO_SHA256_LEN];
    char hex[CRYPTO_SHA256_HEX_LEN + 1];

    (void)state;
    assert_int_equal(crypto_hmac_sha256("Jefe", 4, data, strlen(data), md), 0);
    crypto_hex(md, sizeof(md), hex);
    assert_string_equal(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

/* RFC 4231 test case 6: a 131-byte key, longer than SHA-256's block, is hashed first. */
static void crypto_hmac_sha256__rfc4231_case6_long_key(void **state)
{
    const char *data = "Test Using Larger Than Block-Size Key - Hash Key First";
    unsigned char key[131], md[CRYPTO_SHA256_LEN];
    char hex[CRYPTO_SHA256_HEX_LEN + 1];

    (void)state;
    memset(key, 0xaa, sizeof(key));
    assert_int_equal(crypto_hmac_sha256(key, sizeof(key), data, strlen(data), md), 0);
    crypto_hex(md, sizeof(md), hex);
    assert_string_equal(hex, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

/* The output may be the key buffer itself (the SigV4 key chain does this): case 2 again, with the
 * key in a 32-byte buffer that receives the MAC. */
static void crypto_hmac_sha256__output_aliases_key(void **state)
{
    const char *data = "what do ya want for nothing?";
    unsigned char buf[CRYPTO_SHA256_LEN] = {'J', 'e', 'f', 'e'};
    char hex[CRYPTO_SHA256_HEX_LEN + 1];

    (void)state;
    assert_int_equal(crypto_hmac_sha256(buf, 4, data, strlen(data), buf), 0);
    crypto_hex(buf, sizeof(buf), hex);
    assert_string_equal(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

static void crypto_hmac_sha256__null_arguments(void **state)
{
    unsigned char md[CRYPTO_SHA256_LEN];

    (void)state;
    memset(md, 0x5a, sizeof(md));
    assert_int_equal(crypto_hmac_sha256(NULL, 4, "x", 1, md), ERR_INVAL);
    assert_int_equal(crypto_hmac_sha256("k", 1, NULL, 1, md), ERR_INVAL);
    assert_int_equal(crypto_hmac_sha256("k", 1, "x", 1, NULL), ERR_INVAL);
    for (size_t i = 0; i < sizeof(md); i++)
        assert_int_equal(md[i], 0x5a);
}

/* Lower-case hex, two digits a byte, NUL-terminated; zero bytes give "". */
static void crypto_hex__every_nibble(void **state)
{
    const unsigned char bytes[] = {0x00, 0x7f, 0x80, 0xff, 0xa5, 0x0c};
    char hex[2 * sizeof(bytes) + 1], empty[1] = {'x'};

    (void)state;
    crypto_hex(bytes, sizeof(bytes), hex);
    assert_string_equal(hex, "007f80ffa50c");
    crypto_hex(bytes, 0, empty);
    assert_string_equal(empty, "");
}

/* Equal buffers compare equal; a difference in the first or the last byte does not; zero bytes
 * are equal. */
static void crypto_equal__first_and_last_byte(void **state)
{
    unsigned char a[64], b[64];

    (void)state;
    for (size_t i = 0; i < sizeof(a); i++)
        a[i] = b[i] = (unsigned char)(i * 7 + 1);
    assert_int_equal(crypto_equal(a, b, sizeof(a)), 1);
    b[0] ^= 0x01;
    assert_int_equal(crypto_equal(a, b, sizeof(a)), 0);
    b[0] ^= 0x01;
    b[63] ^= 0x80;
    assert_int_equal(crypto_equal(a, b, sizeof(a)), 0);
    assert_int_equal(crypto_equal(a, b, 63), 1);
    assert_int_equal(crypto_equal(a, b, 0), 1);
}

/* Every byte becomes zero, and only the bytes asked for. */
static void crypto_wipe__zeroes_exactly_len(void **state)
{
    unsigned char buf[32];

    (void)state;
    memset(buf, 0xee, sizeof(buf));
    crypto_wipe(buf + 1, 30);
    assert_int_equal(buf[0], 0xee);
    for (size_t i = 1; i < 31; i++)
        assert_int_equal(buf[i], 0);
    assert_int_equal(buf[31], 0xee);
    crypto_wipe(NULL, 0);
}

/* Two 32-byte draws differ (a collision has probability 2^-256) and neither is all zero; a NULL
 * buffer with a length is ERR_INVAL. */
static void crypto_random__draws_differ(void **state)
{
    unsigned char a[32], b[32], zero[32] = {0};

    (void)state;
    assert_int_equal(crypto_random(a, sizeof(a)), 0);
    assert_int_equal(crypto_random(b, sizeof(b)), 0);
    assert_memory_not_equal(a, b, sizeof(a));
    assert_memory_not_equal(a, zero, sizeof(a));
    assert_int_equal(crypto_random(NULL, 4), ERR_INVAL);
    assert_int_equal(crypto_random(NULL, 0), 0);
}

/* A fixture file's text (free()). */
static char *fixture(const char *name, size_t *len)
{
    char path[512];
    char *text = NULL;

    snprintf(path, sizeof(path), "%s/%s", CASTOR_TEST_DATA, name);
    assert_int_equal(file_read_all(path, &text, len, NULL), 0);
    return text;
}

/* RFC 7515 A.2.1: the A.2 key over the A.2 signing input gives the RFC's signature, byte for
 * byte (RSASSA-PKCS1-v1_5 is deterministic), and it verifies with the public key. */
static void crypto_rs256_sign__rfc7515_a2(void **state)
{
    size_t key_len, in_len, want_len, sig_len = 0;
    char *key = fixture("rfc7515-a2/key.pem", &key_len);
    char *input = fixture("rfc7515-a2/signing-input.txt", &in_len);
    char *want = fixture("rfc7515-a2/signature.b64u", &want_len);
    unsigned char sig[CRYPTO_RS256_MAX_SIG];
    struct strbuf b = {0};
    char *got;

    (void)state;
    assert_int_equal(crypto_rs256_sign(key, key_len, input, in_len, sig, sizeof(sig), &sig_len), 0);
    assert_int_equal(sig_len, 256);
    base64_url_encode(&b, sig, sig_len);
    got = strbuf_take(&b);
    assert_non_null(got);
    assert_string_equal(got, want);
    /* the same again: deterministic */
    memset(sig, 0, sizeof(sig));
    assert_int_equal(crypto_rs256_sign(key, key_len, input, in_len, sig, sizeof(sig), &sig_len), 0);
    free(got);
    base64_url_encode(&b, sig, sig_len);
    got = strbuf_take(&b);
    assert_string_equal(got, want);
    free(got);
    free(key);
    free(input);
    free(want);
}

/* A signature verifies against the key of the signer's X.509 certificate (as a cloud publishes
 * its keys), and not against another's. */
static void crypto_rs256_verify__a_certificates_key(void **state)
{
    size_t cert_len, key_len, other_len, sig_len = 0;
    char *cert = fixture("attest/test-cert.pem", &cert_len);
    char *key = fixture("attest/test-key.pem", &key_len);
    char *other = fixture("attest/other-key.pem", &other_len);
    unsigned char sig[CRYPTO_RS256_MAX_SIG];

    (void)state;
    assert_int_equal(crypto_rs256_sign(key, key_len, "document", 8, sig, sizeof(sig), &sig_len), 0);
    assert_int_equal(crypto_rs256_verify(cert, cert_len, "document", 8, sig, sig_len), 1);
    assert_int_equal(crypto_rs256_verify(cert, cert_len, "documenT", 8, sig, sig_len), 0);
    assert_int_equal(crypto_rs256_sign(other, other_len, "document", 8, sig, sizeof(sig), &sig_len),
                     0);
    assert_int_equal(crypto_rs256_verify(cert, cert_len, "document", 8, sig, sig_len), 0);
    /* a certificate cut short */
    assert_int_equal(crypto_rs256_verify(cert, cert_len / 2, "document", 8, sig, sig_len),
                     ERR_PARSE);
    crypto_wipe(key, key_len);
    crypto_wipe(other, other_len);
    free(cert);
    free(key);
    free(other);
}

/* The RFC's signature verifies against the public key; a flipped bit of the signature or of the
 * data does not. */
static void crypto_rs256_verify__rfc7515_a2(void **state)
{
    size_t pub_len, in_len, want_len, sig_len = 0;
    char *pub = fixture("rfc7515-a2/pub.pem", &pub_len);
    char *input = fixture("rfc7515-a2/signing-input.txt", &in_len);
    char *want = fixture("rfc7515-a2/signature.b64u", &want_len);
    unsigned char *sig = NULL;

    (void)state;
    assert_int_equal(base64_url_decode(want, want_len, &sig, &sig_len), 0);
    assert_int_equal(sig_len, 256);
    assert_int_equal(crypto_rs256_verify(pub, pub_len, input, in_len, sig, sig_len), 1);
    sig[100] ^= 0x04;
    assert_int_equal(crypto_rs256_verify(pub, pub_len, input, in_len, sig, sig_len), 0);
    sig[100] ^= 0x04;
    input[5] ^= 0x01;
    assert_int_equal(crypto_rs256_verify(pub, pub_len, input, in_len, sig, sig_len), 0);
    input[5] ^= 0x01;
    assert_int_equal(crypto_rs256_verify(pub, pub_len, input, in_len, sig, sig_len - 1), 0);
    /* a private key is not a public key here */
    assert_int_equal(crypto_rs256_verify("junk", 4, input, in_len, sig, sig_len), ERR_PARSE);
    free(sig);
    free(pub);
    free(input);
    free(want);
}

/* Keys castor does not sign with: not PEM, a public key, an EC key, an encrypted key (never a
 * prompt), a 1024-bit key (RFC 7518 asks for 2048 bits or more); and a signature buffer too
 * small. The outputs stay untouched. */
static void crypto_rs256_sign__refusals(void **state)
{
    static const char *const parse[] = {"rfc7515-a2/pub.pem", "keys/ec-p256.pem",
                                        "keys/rsa-2048-encrypted.pem"};
    unsigned char sig[CRYPTO_RS256_MAX_SIG] = {0}, zero[CRYPTO_RS256_MAX_SIG] = {0};
    size_t len, sig_len = 7;
    char *key;

    (void)state;
    assert_int_equal(crypto_rs256_sign("not a key", 9, "x", 1, sig, sizeof(sig), &sig_len),
                     ERR_PARSE);
    for (size_t i = 0; i < sizeof(parse) / sizeof(parse[0]); i++) {
        key = fixture(parse[i], &len);
        assert_int_equal(crypto_rs256_sign(key, len, "x", 1, sig, sizeof(sig), &sig_len),
                         ERR_PARSE);
        free(key);
    }
    key = fixture("keys/rsa-1024.pem", &len);
    assert_int_equal(crypto_rs256_sign(key, len, "x", 1, sig, sizeof(sig), &sig_len), ERR_RANGE);
    free(key);
    key = fixture("rfc7515-a2/key.pem", &len);
    assert_int_equal(crypto_rs256_sign(key, len, "x", 1, sig, 255, &sig_len), ERR_RANGE);
    assert_int_equal(crypto_rs256_sign(key, len, NULL, 1, sig, sizeof(sig), &sig_len), ERR_INVAL);
    assert_int_equal(crypto_rs256_sign(NULL, 0, "x", 1, sig, sizeof(sig), &sig_len), ERR_INVAL);
    free(key);
    assert_int_equal(sig_len, 7);
    assert_memory_equal(sig, zero, sizeof(sig));
}

/* In a child (the limit is the process's): core dumps off, soft and hard limits both 0, and a
 * child started after it inherits that. */
static void crypto_no_core_dumps__limit_zero_inherited(void **state)
{
    pid_t pid;
    int status = -1;

    (void)state;
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct rlimit r;
        pid_t grandchild;
        int gstatus = -1;

        if (crypto_no_core_dumps() != 0 || getrlimit(RLIMIT_CORE, &r) != 0 || r.rlim_cur != 0 ||
            r.rlim_max != 0)
            _exit(1);
        grandchild = fork();
        if (grandchild == 0)
            _exit(getrlimit(RLIMIT_CORE, &r) == 0 && r.rlim_cur == 0 ? 0 : 2);
        if (grandchild < 0 || waitpid(grandchild, &gstatus, 0) != grandchild)
            _exit(3);
        _exit(WIFEXITED(gstatus) ? WEXITSTATUS(gstatus) : 4);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(crypto_sha256_hex__fips_one_block),
        cmocka_unit_test(crypto_sha256_hex__fips_two_blocks),
        cmocka_unit_test(crypto_sha256_hex__fips_million_a),
        cmocka_unit_test(crypto_sha256_hex__empty_with_null_data),
        cmocka_unit_test(crypto_sha256__raw_matches_hex),
        cmocka_unit_test(crypto_sha256__null_arguments),
        cmocka_unit_test(crypto_hmac_sha256__rfc4231_case1),
        cmocka_unit_test(crypto_hmac_sha256__rfc4231_case2),
        cmocka_unit_test(crypto_hmac_sha256__rfc4231_case6_long_key),
        cmocka_unit_test(crypto_hmac_sha256__output_aliases_key),
        cmocka_unit_test(crypto_hmac_sha256__null_arguments),
        cmocka_unit_test(crypto_hex__every_nibble),
        cmocka_unit_test(crypto_equal__first_and_last_byte),
        cmocka_unit_test(crypto_no_core_dumps__limit_zero_inherited),
        cmocka_unit_test(crypto_wipe__zeroes_exactly_len),
        cmocka_unit_test(crypto_random__draws_differ),
        cmocka_unit_test(crypto_rs256_sign__rfc7515_a2),
        cmocka_unit_test(crypto_rs256_verify__rfc7515_a2),
        cmocka_unit_test(crypto_rs256_verify__a_certificates_key),
        cmocka_unit_test(crypto_rs256_sign__refusals),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
