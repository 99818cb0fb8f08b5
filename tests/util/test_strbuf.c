/* test_strbuf.c: growing strings (appends past the first allocation, long printf output) and
 * RFC 3986 percent-encoding. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "util/strbuf.h"

/* Appends of every kind, across several reallocations, keep the whole text in order. */
static void strbuf_add__grows_and_keeps_order(void **state)
{
    struct strbuf b = {0};
    char want[5000], *s;
    size_t n = 0;

    (void)state;
    for (int i = 0; i < 400; i++) {
        strbuf_printf(&b, "%d,", i);
        n += (size_t)snprintf(want + n, sizeof(want) - n, "%d,", i);
    }
    strbuf_chr(&b, '!');
    strbuf_str(&b, "end");
    strbuf_add(&b, "xyz", 1);
    memcpy(want + n, "!endx", 6);
    assert_int_equal(b.len, strlen(want));
    s = strbuf_take(&b);
    assert_string_equal(s, want);
    assert_null(b.p);
    assert_int_equal(b.len, 0);
    free(s);
}

/* printf output longer than the internal small buffer is appended whole. */
static void strbuf_printf__long_output(void **state)
{
    struct strbuf b = {0};
    char big[1000];

    (void)state;
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    strbuf_printf(&b, "<%s>", big);
    assert_int_equal(b.len, 1001);
    assert_int_equal(b.p[0], '<');
    assert_int_equal(b.p[1000], '>');
    strbuf_free(&b);
    assert_null(b.p);
}

/* Unreserved characters stay, everything else (space, '+', '/', '=', '&', UTF-8) is %XX. */
static void strbuf_add_uri_encoded__rfc3986(void **state)
{
    struct strbuf b = {0};
    const char *in = "aZ09-._~ +/=&\xc3\xa9";
    char *s;

    (void)state;
    strbuf_add_uri_encoded(&b, in, strlen(in));
    s = strbuf_take(&b);
    assert_string_equal(s, "aZ09-._~%20%2B%2F%3D%26%C3%A9");
    free(s);
    /* an empty buffer hands over "" */
    s = strbuf_take(&b);
    assert_string_equal(s, "");
    free(s);
}

/* Hex digits of both cases have their values; the characters around them in ASCII do not; every
 * byte that strbuf_add_escaped writes as %XX reads back through them. */
static void strbuf_hex_value__digits_and_round_trip(void **state)
{
    (void)state;
    assert_int_equal(strbuf_hex_value('0'), 0);
    assert_int_equal(strbuf_hex_value('9'), 9);
    assert_int_equal(strbuf_hex_value('a'), 10);
    assert_int_equal(strbuf_hex_value('F'), 15);
    assert_int_equal(strbuf_hex_value('/'), -1);
    assert_int_equal(strbuf_hex_value(':'), -1);
    assert_int_equal(strbuf_hex_value('@'), -1);
    assert_int_equal(strbuf_hex_value('G'), -1);
    assert_int_equal(strbuf_hex_value('`'), -1);
    assert_int_equal(strbuf_hex_value('g'), -1);
    assert_int_equal(strbuf_hex_value(0xc3), -1);
    for (int c = 0; c < 256; c++) {
        struct strbuf b = {0};

        strbuf_add_escaped(&b, (unsigned char)c);
        assert_int_equal(b.len, 3);
        assert_int_equal(strbuf_hex_value((unsigned char)b.p[1]) * 16 +
                             strbuf_hex_value((unsigned char)b.p[2]),
                         c);
        strbuf_free(&b);
    }
}

/* Control characters and bytes above 0x7e become spaces; printable ASCII stays. */
static void strbuf_printable__control_and_high_bytes(void **state)
{
    char s[] = "ok\r\nline\t\x7f\xc3\xa9 end~";

    (void)state;
    strbuf_printable(s);
    assert_string_equal(s, "ok  line     end~");
}

/* Well-formed UTF-8 stays (1 to 4 bytes); a stray continuation byte, a sequence cut short at the
 * end or by a following ASCII byte, an overlong form, a surrogate and a code point past U+10FFFF
 * become '?', one per byte that starts no well-formed sequence. */
static void strbuf_utf8_clean__keeps_characters_and_marks_the_rest(void **state)
{
    char ok[] = "a\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 z";
    char stray[] = "a\x80"
                   "b";
    char cut_end[] = "ab\xe2\x82";
    char cut_mid[] = "\xc3z";
    char overlong[] = "\xc0\xaf\xe0\x80\xaf";
    char surrogate[] = "\xed\xa0\x80";
    char big[] = "\xf4\x90\x80\x80";

    (void)state;
    strbuf_utf8_clean(ok);
    assert_string_equal(ok, "a\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 z");
    strbuf_utf8_clean(stray);
    assert_string_equal(stray, "a?b");
    strbuf_utf8_clean(cut_end);
    assert_string_equal(cut_end, "ab??");
    strbuf_utf8_clean(cut_mid);
    assert_string_equal(cut_mid, "?z");
    strbuf_utf8_clean(overlong);
    assert_string_equal(overlong, "?????");
    strbuf_utf8_clean(surrogate);
    assert_string_equal(surrogate, "???");
    strbuf_utf8_clean(big);
    assert_string_equal(big, "????");
}

/* Every occurrence of the secret is starred out, overlapping text around it is kept; a secret
 * under 4 bytes or NULL changes nothing. */
static void strbuf_redact__every_occurrence(void **state)
{
    char s[] = "token=abcd1234; again abcd1234abcd1234 abc";

    (void)state;
    strbuf_redact(s, "abcd1234");
    assert_string_equal(s, "token=********; again **************** abc");
    strbuf_redact(s, "abc");
    strbuf_redact(s, NULL);
    assert_string_equal(s, "token=********; again **************** abc");
}

/* %XX escapes of either case are decoded; a '%' without two hex digits after it and '+' stay. */
static void strbuf_add_uri_decoded__escapes(void **state)
{
    static const char in[] = "a%41%6a+b%zz%4";
    struct strbuf b = {0};
    char *out;

    (void)state;
    strbuf_add_uri_decoded(&b, in, strlen(in));
    out = strbuf_take(&b);
    assert_string_equal(out, "aAj+b%zz%4");
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(strbuf_add__grows_and_keeps_order),
        cmocka_unit_test(strbuf_utf8_clean__keeps_characters_and_marks_the_rest),
        cmocka_unit_test(strbuf_printf__long_output),
        cmocka_unit_test(strbuf_add_uri_encoded__rfc3986),
        cmocka_unit_test(strbuf_hex_value__digits_and_round_trip),
        cmocka_unit_test(strbuf_add_uri_decoded__escapes),
        cmocka_unit_test(strbuf_printable__control_and_high_bytes),
        cmocka_unit_test(strbuf_redact__every_occurrence),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
