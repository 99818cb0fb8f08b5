/* test_retry.c: the full-jitter backoff (bounds, growth, the cap, reproducible from a seed) and
 * the attempt loop (stops at success or at an error, gives up after max_attempts, waits between
 * attempts only). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "providers/retry.h"
#include "util/error.h"

struct record {
    long sleeps[16];
    int n_sleeps;
    int calls;
    int waits[16]; /* the attempt numbers before_wait was told */
    int n_waits;
    int script[16]; /* what attempt i answers */
};

static void record_sleep(void *arg, long ms)
{
    struct record *r = arg;

    r->sleeps[r->n_sleeps++] = ms;
}

static int scripted(void *arg, int attempt)
{
    struct record *r = arg;

    assert_int_equal(attempt, r->calls);
    return r->script[r->calls++];
}

static void told(void *arg, int attempt, int max_attempts, long delay)
{
    struct record *r = arg;

    assert_int_equal(max_attempts, 4);
    assert_true(delay >= 0);
    r->waits[r->n_waits++] = attempt;
}

/* Zeros take the defaults. */
static void retry_init__defaults(void **state)
{
    struct retry r;

    (void)state;
    retry_init(&r, 0, 0, -1, 7, NULL, NULL);
    assert_int_equal(r.max_attempts, RETRY_DEFAULT_ATTEMPTS);
    assert_int_equal(r.base_ms, RETRY_DEFAULT_BASE_MS);
    assert_int_equal(r.cap_ms, RETRY_DEFAULT_CAP_MS);
    assert_ptr_equal(r.sleep_ms, retry_default_sleep);
}

/* Draw k lies in [0, min(cap, base * 2^k)]; the ceiling is reached (the draws spread over the
 * range rather than sitting at 0); the same seed gives the same draws, another seed others. */
static void retry_backoff_ms__full_jitter(void **state)
{
    struct retry a, b, c;
    long max_seen[6] = {0};
    int differ = 0;

    (void)state;
    retry_init(&a, 5, 100, 1000, 42, NULL, NULL);
    retry_init(&b, 5, 100, 1000, 42, NULL, NULL);
    retry_init(&c, 5, 100, 1000, 43, NULL, NULL);
    for (int round = 0; round < 400; round++)
        for (int k = 0; k < 6; k++) {
            long ceiling = 100L << k > 1000 ? 1000 : 100L << k;
            long x = retry_backoff_ms(&a, k), y = retry_backoff_ms(&b, k);

            assert_true(x >= 0 && x <= ceiling);
            assert_int_equal(x, y);
            differ += retry_backoff_ms(&c, k) != x;
            if (x > max_seen[k])
                max_seen[k] = x;
        }
    assert_true(differ > 2000);
    assert_true(max_seen[0] > 80);  /* of 100 */
    assert_true(max_seen[3] > 700); /* of 800 */
    assert_true(max_seen[5] > 900); /* capped at 1000 */
    assert_true(max_seen[5] <= 1000);
}

/* Two failures then success: three attempts, two waits, in order. */
static void retry_run__success_after_retries(void **state)
{
    struct record rec = {.script = {RETRY_AGAIN, RETRY_AGAIN, 0}};
    struct retry r;

    (void)state;
    retry_init(&r, 4, 10, 100, 1, record_sleep, &rec);
    assert_int_equal(retry_run(&r, scripted, told, &rec), 0);
    assert_int_equal(rec.calls, 3);
    assert_int_equal(rec.n_sleeps, 2);
    assert_int_equal(rec.n_waits, 2);
    assert_int_equal(rec.waits[0], 0);
    assert_int_equal(rec.waits[1], 1);
}

/* An error ends the loop at once, without a wait. */
static void retry_run__error_ends(void **state)
{
    struct record rec = {.script = {RETRY_AGAIN, ERR_QUOTA, 0}};
    struct retry r;

    (void)state;
    retry_init(&r, 4, 10, 100, 1, record_sleep, &rec);
    assert_int_equal(retry_run(&r, scripted, NULL, &rec), ERR_QUOTA);
    assert_int_equal(rec.calls, 2);
    assert_int_equal(rec.n_sleeps, 1);
}

/* Always again: max_attempts attempts, one wait fewer, and RETRY_AGAIN. */
static void retry_run__gives_up(void **state)
{
    struct record rec = {.script = {RETRY_AGAIN, RETRY_AGAIN, RETRY_AGAIN, RETRY_AGAIN, 0}};
    struct retry r;

    (void)state;
    retry_init(&r, 4, 10, 100, 1, record_sleep, &rec);
    assert_int_equal(retry_run(&r, scripted, told, &rec), RETRY_AGAIN);
    assert_int_equal(rec.calls, 4);
    assert_int_equal(rec.n_sleeps, 3);
    assert_int_equal(rec.n_waits, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(retry_init__defaults),
        cmocka_unit_test(retry_backoff_ms__full_jitter),
        cmocka_unit_test(retry_run__success_after_retries),
        cmocka_unit_test(retry_run__error_ends),
        cmocka_unit_test(retry_run__gives_up),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
