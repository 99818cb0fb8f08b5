/* test_timestamp.c: ISO 8601 timestamps: AWS's forms, offsets, leap days, refusals, and the
 * round trip against the C library's gmtime_r. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "util/error.h"
#include "util/timestamp.h"

/* The forms AWS sends: whole seconds, milliseconds (IMDS, launchTime), nanoseconds (moto). */
static void timestamp_parse_iso8601__aws_forms(void **state)
{
    int64_t t = 0;

    (void)state;
    assert_int_equal(timestamp_parse_iso8601("1970-01-01T00:00:00Z", &t), 0);
    assert_int_equal(t, 0);
    /* 2015-08-30T12:36:00Z is the SigV4 suite's date: 1440938160 */
    assert_int_equal(timestamp_parse_iso8601("2015-08-30T12:36:00Z", &t), 0);
    assert_int_equal(t, 1440938160);
    assert_int_equal(timestamp_parse_iso8601("2015-08-30T12:36:00.000Z", &t), 0);
    assert_int_equal(t, 1440938160);
    assert_int_equal(timestamp_parse_iso8601("2006-01-02T15:04:05.999999999Z", &t), 0);
    assert_int_equal(t, 1136214245);
    /* offsets: 14:36 at +02:00 is 12:36 UTC; 07:06 at -05:30 is 12:36 UTC */
    assert_int_equal(timestamp_parse_iso8601("2015-08-30T14:36:00+02:00", &t), 0);
    assert_int_equal(t, 1440938160);
    assert_int_equal(timestamp_parse_iso8601("2015-08-30T07:06:00-0530", &t), 0);
    assert_int_equal(t, 1440938160);
    /* a leap day */
    assert_int_equal(timestamp_parse_iso8601("2024-02-29T00:00:00Z", &t), 0);
    assert_int_equal(t, 1709164800);
}

/* Refused, leaving the output alone: missing zone, trailing text, impossible dates, an empty
 * fraction, before 1970. */
static void timestamp_parse_iso8601__refusals(void **state)
{
    const char *bad[] = {"2015-08-30T12:36:00",       "2015-08-30T12:36:00Zjunk",
                         "2015-02-29T00:00:00Z",      "2015-13-01T00:00:00Z",
                         "2015-08-30T24:00:00Z",      "2015-08-30T12:36:00.Z",
                         "1969-12-31T23:59:59Z",      "2015-08-30 12:36:00Z",
                         "20150830T123600Z",          "",
                         "2015-08-30T12:36:00+25:00", "0.00001"};
    int64_t t = 42;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(timestamp_parse_iso8601(bad[i], &t), ERR_PARSE);
        assert_int_equal(t, 42);
    }
    assert_int_equal(timestamp_parse_iso8601(NULL, &t), ERR_INVAL);
}

/* Formatting agrees with gmtime_r over a spread of times, and parsing the text gives the time
 * back. */
static void timestamp_format_iso8601__round_trip(void **state)
{
    char buf[TIMESTAMP_ISO8601_LEN + 1], want[64];

    (void)state;
    for (int64_t t = 0; t < INT64_C(253402300799); t += INT64_C(86399) * 367 + 12345) {
        time_t tt = (time_t)t;
        struct tm tm;
        int64_t back = -1;

        assert_non_null(gmtime_r(&tt, &tm));
        strftime(want, sizeof(want), "%Y-%m-%dT%H:%M:%SZ", &tm);
        assert_int_equal(timestamp_format_iso8601(t, buf), 0);
        assert_string_equal(buf, want);
        assert_int_equal(timestamp_parse_iso8601(buf, &back), 0);
        assert_int_equal(back, t);
    }
    assert_int_equal(timestamp_format_iso8601(-1, buf), ERR_RANGE);
    assert_int_equal(timestamp_format_iso8601(INT64_C(253402300800), buf), ERR_RANGE);
}

/* Days and civil dates agree both ways, before 1970 too: 1970-01-01 is day 0, 2000-03-01 day
 * 11017 (by Python's datetime), 1969-12-31 day -1; every day from 1600 to 2400 goes there and
 * back. */
static void timestamp_days__civil_both_ways(void **state)
{
    int64_t y = 0;
    int m = 0, d = 0;

    (void)state;
    assert_true(timestamp_days_from_civil(1970, 1, 1) == 0);
    assert_true(timestamp_days_from_civil(2000, 3, 1) == 11017);
    assert_true(timestamp_days_from_civil(1969, 12, 31) == -1);
    timestamp_civil_from_days(-1, &y, &m, &d);
    assert_true(y == 1969 && m == 12 && d == 31);
    timestamp_civil_from_days(11016, &y, &m, &d);
    assert_true(y == 2000 && m == 2 && d == 29);
    for (int64_t z = timestamp_days_from_civil(1600, 1, 1);
         z < timestamp_days_from_civil(2400, 1, 1); z++) {
        timestamp_civil_from_days(z, &y, &m, &d);
        if (timestamp_days_from_civil(y, m, d) != z)
            fail_msg("day %lld is %lld-%d-%d, which is not it", (long long)z, (long long)y, m, d);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(timestamp_parse_iso8601__aws_forms),
        cmocka_unit_test(timestamp_parse_iso8601__refusals),
        cmocka_unit_test(timestamp_format_iso8601__round_trip),
        cmocka_unit_test(timestamp_days__civil_both_ways),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
