/* test_cron.c: cron schedules: the fields and their errors (with the column of the fault), and
 * the next and previous times against dates checked by hand (weekdays from a calendar). */
#include <stdint.h>
#include <string.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "control/cron.h"
#include "util/error.h"

/* UTC times used below, each checked against a calendar. */
#define T_2024_05_01_0200 1714528800LL /* Wednesday */
#define T_2024_05_01_1200 1714564800LL /* Wednesday */
#define T_2024_05_01_1207 1714565220LL
#define T_2024_05_01_1215 1714565700LL
#define T_2024_05_03_1750 1714758600LL /* Friday */
#define T_2024_05_05_1200 1714910400LL /* Sunday */
#define T_2024_05_06_0900 1714986000LL /* Monday */
#define T_2024_01_01_0000 1704067200LL /* Monday */
#define T_2024_03_01_0000 1709251200LL /* Friday */
#define T_2024_03_11_0000 1710115200LL /* Monday */
#define T_2024_09_01_0000 1725148800LL /* Sunday */
#define T_2024_09_06_0000 1725580800LL /* Friday */
#define T_2024_09_13_0000 1726185600LL /* Friday */
#define T_2024_12_31_2359 1735689540LL
#define T_2025_12_31_2359 1767225540LL
#define T_2028_02_29_0000 1835395200LL
#define T_2100_02_28_0000 4107456000LL
#define T_2104_02_29_0000 4233686400LL
#define T_2096_02_29_0000 3981312000LL
#define T_2024_05_03_1700 1714755600LL

static int64_t next_of(const char *text, int64_t after)
{
    struct cron c;
    int64_t t = -1;

    assert_int_equal(cron_parse(text, &c, NULL), 0);
    assert_int_equal(cron_next(&c, after, &t), 0);
    return t;
}

static int64_t prev_of(const char *text, int64_t at)
{
    struct cron c;
    int64_t t = -1;

    assert_int_equal(cron_parse(text, &c, NULL), 0);
    assert_int_equal(cron_prev(&c, at, &t), 0);
    return t;
}

static void cron_parse__lists_ranges_steps_names(void **state)
{
    struct cron c;

    (void)state;
    assert_int_equal(cron_parse("*/15 9-17 * * mon-fri", &c, NULL), 0);
    assert_true(c.minutes == ((1ULL << 0) | (1ULL << 15) | (1ULL << 30) | (1ULL << 45)));
    assert_int_equal(c.hours, 0x3fe00u); /* 9 .. 17 */
    assert_int_equal(c.wdays, 0x3eu);    /* Monday .. Friday */
    assert_true(c.mday_star);
    assert_false(c.wday_star);
    assert_int_equal(cron_parse("1,5,10-12 0 1-31/10 JAN,jul 0", &c, NULL), 0);
    assert_true(c.minutes ==
                ((1ULL << 1) | (1ULL << 5) | (1ULL << 10) | (1ULL << 11) | (1ULL << 12)));
    assert_int_equal(c.mdays, (1u << 1) | (1u << 11) | (1u << 21) | (1u << 31));
    assert_int_equal(c.months, (1u << 1) | (1u << 7));
    assert_int_equal(cron_parse("50/5 * * * *", &c, NULL), 0); /* a/step: a to the end */
    assert_true(c.minutes == ((1ULL << 50) | (1ULL << 55)));
    assert_int_equal(cron_parse("0 0 * * 7", &c, NULL), 0); /* 7 is Sunday */
    assert_int_equal(c.wdays, 1u);
}

static void cron_parse__errors_name_the_column(void **state)
{
    static const struct {
        const char *text;
        int column;
        const char *msg;
    } bad[] = {
        {"60 * * * *", 1, "minute: the value must be from 0 to 59"},
        {"* 24 * * *", 3, "hour: the value must be from 0 to 23"},
        {"* * 0 * *", 5, "day of month: the value must be from 1 to 31"},
        {"* * * 13 *", 7, "month: the value must be from 1 to 12"},
        {"* * * * 8", 9, "day of week: the value must be from 0 to 7"},
        {"* * * *", 8, "4 fields, expected five"},
        {"* * * * * *", 11, "more than five fields"},
        {"5-1 * * * *", 1, "the range 5-1 goes backwards"},
        {"*/0 * * * *", 3, "the step must be from 1 to 60"},
        {"* * * foo *", 7, "month: expected a number or a name"},
        {"1,,2 * * * *", 3, "minute: expected a number, '*' or a range"},
        {"*/5, * * * *", 4, "a list ends with ','"},
        {"1x * * * *", 2, "unexpected 'x'"},
        {"0 0 31 2,4 *", 1, "never fires"},
        {"0 0 30 feb *", 1, "never fires"},
        {"@reboot", 1, "unknown schedule"},
    };
    struct cron c;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct error e = {0};

        assert_int_equal(cron_parse(bad[i].text, &c, &e), ERR_PARSE);
        if (e.column != bad[i].column || !strstr(e.msg, bad[i].msg))
            fail_msg("\"%s\": column %d \"%s\", expected column %d \"%s\"", bad[i].text, e.column,
                     e.msg, bad[i].column, bad[i].msg);
    }
    /* the 31st in a month that has one, or a day of the week as well, does fire */
    assert_int_equal(cron_parse("0 0 31 2,3 *", &c, NULL), 0);
    assert_int_equal(cron_parse("0 0 31 2 1", &c, NULL), 0);
}

static void cron_next__within_the_hour(void **state)
{
    (void)state;
    assert_int_equal(next_of("*/15 * * * *", T_2024_05_01_1207), T_2024_05_01_1215);
    /* strictly after: a time that matches gives the next one */
    assert_int_equal(next_of("*/15 * * * *", T_2024_05_01_1215), T_2024_05_01_1215 + 15 * 60);
    /* seconds within a minute count as that minute */
    assert_int_equal(next_of("*/15 * * * *", T_2024_05_01_1215 - 30), T_2024_05_01_1215);
}

static void cron_next__weekdays_skip_the_weekend(void **state)
{
    (void)state;
    assert_int_equal(next_of("0 9-17 * * mon-fri", T_2024_05_03_1750), T_2024_05_06_0900);
    assert_int_equal(next_of("0 9-17 * * 1-5", T_2024_05_03_1750), T_2024_05_06_0900);
}

static void cron_next__year_end_and_leap_days(void **state)
{
    (void)state;
    assert_int_equal(next_of("59 23 31 12 *", T_2024_12_31_2359), T_2025_12_31_2359);
    assert_int_equal(next_of("0 0 29 2 *", T_2024_03_01_0000), T_2028_02_29_0000);
    /* 2100 is not a leap year */
    assert_int_equal(next_of("0 0 29 2 *", T_2100_02_28_0000), T_2104_02_29_0000);
}

static void cron_next__day_of_month_or_week(void **state)
{
    (void)state;
    /* both restricted: the 13th or a Friday */
    assert_int_equal(next_of("0 0 13 * 5", T_2024_09_01_0000), T_2024_09_06_0000);
    /* day of week unrestricted: the 13th only */
    assert_int_equal(next_of("0 0 13 * *", T_2024_09_01_0000), T_2024_09_13_0000);
    /* a day-of-month field starting with '*' counts as unrestricted: days 1, 11, 21, 31 that
     * are Mondays */
    assert_int_equal(next_of("0 0 */10 * mon", T_2024_01_01_0000), T_2024_03_11_0000);
}

static void cron_next__macros_are_their_fields(void **state)
{
    (void)state;
    assert_int_equal(next_of("@daily", T_2024_05_01_1207), next_of("0 0 * * *", T_2024_05_01_1207));
    assert_int_equal(next_of("@hourly", T_2024_05_01_1207), T_2024_05_01_1200 + 3600);
    assert_int_equal(next_of("@weekly", T_2024_05_01_1200), T_2024_05_05_1200 - 12 * 3600);
}

static void cron_prev__latest_at_or_before(void **state)
{
    (void)state;
    assert_int_equal(prev_of("0 2 * * *", T_2024_05_01_1200), T_2024_05_01_0200);
    assert_int_equal(prev_of("0 2 * * *", T_2024_05_01_0200), T_2024_05_01_0200);
    assert_int_equal(prev_of("0 2 * * *", T_2024_05_01_0200 - 1), T_2024_05_01_0200 - 86400);
    assert_int_equal(prev_of("0 9-17 * * mon-fri", T_2024_05_06_0900 - 60), T_2024_05_03_1700);
    /* 2100 has no February 29th: the one before 2104's is 2096's */
    assert_int_equal(prev_of("0 0 29 2 *", T_2104_02_29_0000 - 1), T_2096_02_29_0000);
}

static void cron_missed__once_for_the_latest_time(void **state)
{
    struct cron c;
    int64_t at = -1;

    (void)state;
    assert_int_equal(cron_parse("0 2 * * *", &c, NULL), 0);
    /* last ran on 2024-04-28 at 02:00, down until 2024-05-01 12:00: three runs missed, the
     * latest (2024-05-01 02:00) is the one run */
    assert_int_equal(cron_missed(&c, T_2024_05_01_0200 - 3 * 86400, T_2024_05_01_1200, &at), 1);
    assert_int_equal(at, T_2024_05_01_0200);
    /* it ran at the latest time already: nothing */
    at = -1;
    assert_int_equal(cron_missed(&c, T_2024_05_01_0200, T_2024_05_01_1200, &at), 0);
    assert_int_equal(at, -1);
    /* down only between two times: nothing missed */
    assert_int_equal(cron_missed(&c, T_2024_05_01_0200, T_2024_05_01_0200 + 86400 - 60, &at), 0);
    /* a schedule that never ran starts at its next time */
    assert_int_equal(cron_missed(&c, -1, T_2024_05_01_1200, &at), 0);
    assert_int_equal(at, -1);
}

static void cron_matches__the_minute_of_a_time(void **state)
{
    struct cron c;

    (void)state;
    assert_int_equal(cron_parse("*/15 9-17 * * mon-fri", &c, NULL), 0);
    assert_true(cron_matches(&c, T_2024_05_01_1215 + 59));
    assert_false(cron_matches(&c, T_2024_05_01_1207));
    assert_false(cron_matches(&c, T_2024_05_05_1200)); /* a Sunday */
}

static void cron_next__out_of_range_times(void **state)
{
    struct cron c;
    int64_t t = 7;

    (void)state;
    assert_int_equal(cron_parse("* * * * *", &c, NULL), 0);
    assert_int_equal(cron_next(&c, -1, &t), ERR_RANGE);
    assert_int_equal(cron_next(&c, 253402300799LL, &t), ERR_RANGE); /* past 9999 */
    assert_int_equal(t, 7);
    assert_int_equal(cron_parse(NULL, &c, NULL), ERR_INVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cron_parse__lists_ranges_steps_names),
        cmocka_unit_test(cron_parse__errors_name_the_column),
        cmocka_unit_test(cron_next__within_the_hour),
        cmocka_unit_test(cron_next__weekdays_skip_the_weekend),
        cmocka_unit_test(cron_next__year_end_and_leap_days),
        cmocka_unit_test(cron_next__day_of_month_or_week),
        cmocka_unit_test(cron_next__macros_are_their_fields),
        cmocka_unit_test(cron_prev__latest_at_or_before),
        cmocka_unit_test(cron_missed__once_for_the_latest_time),
        cmocka_unit_test(cron_matches__the_minute_of_a_time),
        cmocka_unit_test(cron_next__out_of_range_times),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
