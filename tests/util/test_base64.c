/* test_base64.c: base64url against RFC 4648's test vectors (section 10, in the URL-safe alphabet
 * without padding), the alphabet's two URL-safe characters, and the strict decoder's refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "util/base64.h"
#include "util/error.h"

static char *encode(const void *data, size_t len)
{
    struct strbuf b = {0};

    base64_url_encode(&b, data, len);
    return strbuf_take(&b);
}

/* RFC 4648 section 10: "", "f", "fo", ... "foobar", padding dropped; and back. */
static void base64_url__rfc4648_vectors(void **state)
{
    static const char *const plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *const coded[] = {"", "Zg", "Zm8", "Zm9v", "Zm9vYg", "Zm9vYmE", "Zm9vYmFy"};

    (void)state;
    for (size_t i = 0; i < 7; i++) {
        char *got = encode(plain[i], strlen(plain[i]));
        unsigned char *back = NULL;
        size_t n = 99;

        assert_non_null(got);
        assert_string_equal(got, coded[i]);
        assert_int_equal(base64_url_decode(coded[i], strlen(coded[i]), &back, &n), 0);
        assert_int_equal(n, strlen(plain[i]));
        assert_memory_equal(back, plain[i], n);
        assert_int_equal(back[n], '\0');
        free(back);
        free(got);
    }
}

/* 0xfb 0xff encode with '-' and '_' where standard base64 has '+' and '/'; every byte value
 * survives the round trip. */
static void base64_url__url_safe_alphabet_round_trip(void **state)
{
    static const unsigned char hi[] = {0xfb, 0xff, 0xbf};
    unsigned char all[256], *back = NULL;
    size_t n = 0;
    char *got;

    (void)state;
    got = encode(hi, sizeof(hi));
    assert_string_equal(got, "-_-_");
    free(got);
    for (int i = 0; i < 256; i++)
        all[i] = (unsigned char)i;
    for (size_t len = 0; len <= 256; len += 37) {
        got = encode(all, len);
        assert_null(strpbrk(got, "+/="));
        assert_int_equal(base64_url_decode(got, strlen(got), &back, &n), 0);
        assert_int_equal(n, len);
        assert_memory_equal(back, all, len);
        free(back);
        free(got);
    }
}

/* Padding, the standard alphabet, white space, a length of 4k + 1 and non-zero left-over bits
 * are refused, with the outputs untouched. */
static void base64_url_decode__strict(void **state)
{
    static const char *const bad[] = {"Zg==",  "Zm+v", "Zm/v", "Zm9 v",
                                      "Zm9vY", "Zh",   "Zm9",  "Zm8="};
    unsigned char *out = (unsigned char *)"untouched";
    size_t n = 42;

    (void)state;
    /* "Zh" and "Zm9" carry bits that no byte string encodes to ("Zg" and "Zm8" do) */
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(base64_url_decode(bad[i], strlen(bad[i]), &out, &n), ERR_PARSE);
    assert_string_equal((const char *)out, "untouched");
    assert_int_equal(n, 42);
    assert_int_equal(base64_url_decode(NULL, 3, &out, &n), ERR_INVAL);
    assert_int_equal(base64_url_decode("Zg", 2, NULL, &n), ERR_INVAL);
}

/* Standard base64 (RFC 4648 section 4's vectors), padded or not, in lines; a character of the
 * URL alphabet, one after the padding, or too much padding is refused. */
static void base64_decode__standard_padded_in_lines(void **state)
{
    static const struct {
        const char *in, *out;
    } good[] = {{"", ""},
                {"Zg==", "f"},
                {"Zm8=", "fo"},
                {"Zm9v", "foo"},
                {"Zm9vYg==", "foob"},
                {"Zm9vYmE=", "fooba"},
                {"Zm9vYmFy", "foobar"},
                {"Zm9v\nYmFy\n", "foobar"},
                {"Zg", "f"},
                {"+/+/", "\xfb\xff\xbf"}};
    static const char *const bad[] = {"Zg=a", "Zg===", "Z===", "-_-_", "Zm9vY", "Zh=="};
    unsigned char *out = NULL;
    size_t n = 0;

    (void)state;
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        assert_int_equal(base64_decode(good[i].in, strlen(good[i].in), &out, &n), 0);
        assert_int_equal(n, strlen(good[i].out));
        assert_memory_equal(out, good[i].out, n);
        free(out);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (base64_decode(bad[i], strlen(bad[i]), &out, &n) != ERR_PARSE)
            fail_msg("\"%s\" was taken as base64", bad[i]);
    assert_int_equal(base64_decode(NULL, 2, &out, &n), ERR_INVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(base64_url__rfc4648_vectors),
        cmocka_unit_test(base64_url__url_safe_alphabet_round_trip),
        cmocka_unit_test(base64_url_decode__strict),
        cmocka_unit_test(base64_decode__standard_padded_in_lines),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
