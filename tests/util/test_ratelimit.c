/* test_ratelimit.c: the per-client token buckets: a burst then the rate, clients kept apart,
 * Retry-After's seconds, a clock that goes back, a full table making room, bad settings. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <cmocka.h>

#include "util/error.h"
#include "util/ratelimit.h"

/* A client gets its burst at once, then one request per 1/rate seconds; another client is not
 * touched by the first one's use. */
static void ratelimit_take__burst_then_rate(void **state)
{
    struct ratelimit *r = NULL;
    unsigned retry = 0;

    (void)state;
    assert_int_equal(ratelimit_new(2.0, 5, 0, &r), 0);
    for (int i = 0; i < 5; i++)
        assert_int_equal(ratelimit_take(r, "10.0.0.1", 100.0, &retry), 1);
    assert_int_equal(ratelimit_take(r, "10.0.0.1", 100.0, &retry), 0);
    assert_int_equal(retry, 1); /* half a second to the next token: at least one whole second */
    assert_int_equal(ratelimit_take(r, "10.0.0.2", 100.0, &retry), 1);
    assert_int_equal(ratelimit_take(r, "10.0.0.1", 100.25, &retry), 0);
    assert_int_equal(ratelimit_take(r, "10.0.0.1", 100.5, &retry), 1);
    assert_int_equal(ratelimit_take(r, "10.0.0.1", 100.5, &retry), 0);
    /* a long pause refills the bucket up to the burst, no further */
    for (int i = 0; i < 5; i++)
        assert_int_equal(ratelimit_take(r, "10.0.0.1", 1000.0, NULL), 1);
    assert_int_equal(ratelimit_take(r, "10.0.0.1", 1000.0, NULL), 0);
    ratelimit_free(r);
}

/* Retry-After is the whole seconds until one token is back: 0.1 per second is 10 s. */
static void ratelimit_take__retry_after_rounds_up(void **state)
{
    struct ratelimit *r = NULL;
    unsigned retry = 0;

    (void)state;
    assert_int_equal(ratelimit_new(0.1, 1, 0, &r), 0);
    assert_int_equal(ratelimit_take(r, "a", 0.0, &retry), 1);
    assert_int_equal(ratelimit_take(r, "a", 0.0, &retry), 0);
    assert_int_equal(retry, 10);
    assert_int_equal(ratelimit_take(r, "a", 2.5, &retry), 0);
    assert_int_equal(retry, 8); /* 7.5 s left */
    assert_int_equal(ratelimit_take(r, "a", 10.5, &retry), 1);
    ratelimit_free(r);
}

/* A time before the last one seen (or NaN) counts as the last: no tokens are made by it. */
static void ratelimit_take__clock_going_back_makes_nothing(void **state)
{
    struct ratelimit *r = NULL;

    (void)state;
    assert_int_equal(ratelimit_new(1.0, 1, 0, &r), 0);
    assert_int_equal(ratelimit_take(r, "a", 50.0, NULL), 1);
    assert_int_equal(ratelimit_take(r, "a", 10.0, NULL), 0);
    assert_int_equal(ratelimit_take(r, "a", NAN, NULL), 0);
    assert_int_equal(ratelimit_take(r, "a", 51.0, NULL), 1);
    ratelimit_free(r);
}

/* A full table makes room by dropping the client seen least recently; the others keep their
 * (empty) buckets. */
static void ratelimit_take__full_table_drops_least_recent(void **state)
{
    struct ratelimit *r = NULL;

    (void)state;
    assert_int_equal(ratelimit_new(0.001, 1, 2, &r), 0);
    assert_int_equal(ratelimit_take(r, "old", 1.0, NULL), 1);
    assert_int_equal(ratelimit_take(r, "recent", 2.0, NULL), 1);
    assert_int_equal(ratelimit_take(r, "new", 3.0, NULL), 1); /* "old" makes room */
    assert_int_equal(ratelimit_take(r, "recent", 3.0, NULL), 0);
    assert_int_equal(ratelimit_take(r, "new", 3.0, NULL), 0);
    ratelimit_free(r);
}

static void ratelimit_new__bad_settings(void **state)
{
    struct ratelimit *r = NULL;

    (void)state;
    assert_int_equal(ratelimit_new(0, 1, 0, &r), ERR_INVAL);
    assert_int_equal(ratelimit_new(-1, 1, 0, &r), ERR_INVAL);
    assert_int_equal(ratelimit_new(INFINITY, 1, 0, &r), ERR_INVAL);
    assert_int_equal(ratelimit_new(NAN, 1, 0, &r), ERR_INVAL);
    assert_int_equal(ratelimit_new(1, 0, 0, &r), ERR_INVAL);
    assert_int_equal(ratelimit_new(1, 1, 0, NULL), ERR_INVAL);
    assert_null(r);
    ratelimit_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ratelimit_take__burst_then_rate),
        cmocka_unit_test(ratelimit_take__retry_after_rounds_up),
        cmocka_unit_test(ratelimit_take__clock_going_back_makes_nothing),
        cmocka_unit_test(ratelimit_take__full_table_drops_least_recent),
        cmocka_unit_test(ratelimit_new__bad_settings),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
