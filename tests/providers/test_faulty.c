/* test_faulty.c: the fault-injecting cloud over the fake cloud: no faults at rate 0, every call
 * at rate 1 with only the kinds each operation can have, about the rate asked over many calls,
 * the same stream for the same seed, a lost launch that did launch (and a relaunch by its token
 * finds it), timeouts that wait, and bad settings refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "providers/fake.h"
#include "providers/faulty.h"

static const struct cloud_offer offers[] = {
    {.name = "small/spot", .gpus = 4, .spot = 1, .price = 1.0}};
static const int capacity[] = {-1};

static double slept; /* what the timeouts of the cloud made by faulty() waited */

static void add_sleep(void *ctx, double s)
{
    *(double *)ctx += s;
}

/* The fake cloud behind a fault injector at rate; *view (may be NULL) is a borrowed handle on the
 * fake itself, for its counts. */
static struct cloud faulty(double rate, uint64_t seed, struct cloud *view)
{
    struct cloud inner, out;
    struct faulty_config cfg = {
        .rate = rate, .seed = seed, .timeout_s = 2.5, .sleep = add_sleep, .sleep_ctx = &slept};

    assert_int_equal(cloud_fake_create(offers, capacity, 1, NULL, &inner), 0);
    if (view)
        *view = inner;
    assert_int_equal(faulty_wrap(&inner, &cfg, &out), 0);
    assert_null(inner.ops); /* taken over */
    return out;
}

static void faulty_wrap__rate_zero_passes_through(void **state)
{
    struct cloud c = faulty(0.0, 1, NULL);
    struct cloud_offer *o = NULL;
    struct cloud_instance *in = NULL;
    struct faulty_counts k;
    char id[CLOUD_ID_MAX];
    size_t n = 0;

    (void)state;
    for (int i = 0; i < 20; i++) {
        char token[32];

        snprintf(token, sizeof(token), "t-%d", i);
        assert_int_equal(cloud_launch(&c, "small/spot", "c", token, id), 0);
    }
    assert_int_equal(cloud_offers(&c, &o, &n), 0);
    assert_int_equal(n, 1);
    free(o);
    assert_int_equal(cloud_list(&c, "c", &in, &n), 0);
    assert_int_equal(n, 20);
    assert_int_equal(cloud_terminate(&c, "c", in[0].id), 0);
    free(in);
    assert_int_equal(faulty_counts(&c, &k), 0);
    assert_int_equal(k.calls, 23);
    for (int i = 0; i < FAULTY_NKINDS; i++)
        assert_int_equal(k.faults[i], 0);
    cloud_free(&c);
}

/* Rate 1: every call fails; reads only throttle, 5xx or time out; launches may also find no
 * capacity or a quota, or launch and lose the answer; terminations never lack capacity. Each
 * failure but a lost one did nothing at the fake. */
static void faulty_wrap__rate_one_fails_every_call_as_it_can(void **state)
{
    struct cloud fake, c = faulty(1.0, 7, &fake);
    struct cloud_offer *o = NULL;
    struct cloud_fake_counts fk;
    struct faulty_counts k;
    char id[CLOUD_ID_MAX];
    size_t n = 0;
    int rc;

    (void)state;
    slept = 0;
    for (int i = 0; i < 300; i++) {
        char token[32];

        snprintf(token, sizeof(token), "t-%d", i);
        rc = cloud_launch(&c, "small/spot", "c", token, id);
        assert_true(rc == ERR_AGAIN || rc == ERR_IO || rc == ERR_CAPACITY || rc == ERR_QUOTA);
        rc = cloud_offers(&c, &o, &n);
        assert_true(rc == ERR_AGAIN || rc == ERR_IO);
        rc = cloud_terminate(&c, "c", "i-1");
        assert_true(rc == ERR_AGAIN || rc == ERR_IO || rc == ERR_UNKNOWN);
    }
    assert_int_equal(faulty_counts(&c, &k), 0);
    assert_int_equal(k.calls, 900);
    for (int i = 0; i < FAULTY_NKINDS; i++)
        assert_true(k.faults[i] > 20); /* every kind happens */
    assert_float_equal(slept, 2.5 * (double)k.faults[FAULTY_TIMEOUT], 1e-9);
    /* only the lost launches reached the fake (the lost terminations found nothing to end) */
    assert_int_equal(cloud_fake_counts(&fake, &fk), 0);
    assert_true(fk.launched > 0 && fk.launched < k.faults[FAULTY_LOST]);
    assert_int_equal(fk.offers_calls, 0);
    assert_int_equal(fk.launch_calls + fk.terminate_calls, k.faults[FAULTY_LOST]);
    cloud_free(&c);
}

/* About the rate asked over many calls, and the same stream for the same seed. */
static void faulty_wrap__rate_and_seed(void **state)
{
    struct cloud a = faulty(0.2, 42, NULL), b = faulty(0.2, 42, NULL), d = faulty(0.2, 43, NULL);
    struct faulty_counts ka, kb, kd;
    struct cloud_offer *o;
    size_t n;
    int same = 1;

    (void)state;
    for (int i = 0; i < 5000; i++) {
        int ra, rb;

        o = NULL;
        ra = cloud_offers(&a, &o, &n);
        free(o);
        o = NULL;
        rb = cloud_offers(&b, &o, &n);
        free(o);
        o = NULL;
        cloud_offers(&d, &o, &n);
        free(o);
        same &= ra == rb;
    }
    assert_true(same);
    assert_int_equal(faulty_counts(&a, &ka), 0);
    assert_int_equal(faulty_counts(&b, &kb), 0);
    assert_int_equal(faulty_counts(&d, &kd), 0);
    {
        long fa = 0, fd = 0;

        for (int i = 0; i < FAULTY_NKINDS; i++) {
            fa += ka.faults[i];
            fd += kd.faults[i];
            assert_int_equal(ka.faults[i], kb.faults[i]);
        }
        /* 1000 expected; 5 standard deviations of a binomial(5000, 0.2) is 141 */
        assert_true(fa > 860 && fa < 1140);
        assert_true(fd > 860 && fd < 1140);
        assert_true(ka.faults[FAULTY_CAPACITY] == 0 && ka.faults[FAULTY_LOST] == 0);
    }
    cloud_free(&a);
    cloud_free(&b);
    cloud_free(&d);
}

/* A launch whose answer was lost did launch: relaunching with its token (what the controller
 * does with a pending intent) finds that instance and makes no second one. */
static void faulty_wrap__lost_launch_is_found_by_its_token(void **state)
{
    struct cloud fake, c = faulty(1.0, 3, &fake);
    struct faulty_counts k;
    struct cloud_fake_counts fk;
    char id[CLOUD_ID_MAX] = "", again[CLOUD_ID_MAX] = "";
    int rc = 0, tries = 0;

    (void)state;
    do { /* fail until a lost launch happens */
        rc = cloud_launch(&c, "small/spot", "c", "the-token", id);
        assert_int_equal(faulty_counts(&c, &k), 0);
        tries++;
    } while (k.faults[FAULTY_LOST] == 0 && tries < 1000);
    assert_int_equal(rc, ERR_IO);
    assert_string_equal(id, ""); /* nothing written on error */
    assert_int_equal(cloud_fake_counts(&fake, &fk), 0);
    assert_int_equal(fk.launched, 1);
    /* the controller asks again with the intent's token, through a cloud that answers */
    assert_int_equal(cloud_launch(&fake, "small/spot", "c", "the-token", again), 0);
    assert_int_equal(cloud_fake_counts(&fake, &fk), 0);
    assert_int_equal(fk.launched, 1);
    cloud_free(&c);
}

static void faulty_wrap__bad_settings_refused(void **state)
{
    struct cloud inner, out = {0};
    struct faulty_config cfg = {.rate = 1.5};
    struct faulty_counts k;

    (void)state;
    assert_int_equal(cloud_fake_create(offers, capacity, 1, NULL, &inner), 0);
    assert_int_equal(faulty_wrap(&inner, &cfg, &out), ERR_INVAL);
    cfg.rate = NAN;
    assert_int_equal(faulty_wrap(&inner, &cfg, &out), ERR_INVAL);
    cfg.rate = 0.5;
    cfg.timeout_s = -1;
    assert_int_equal(faulty_wrap(&inner, &cfg, &out), ERR_INVAL);
    assert_null(out.ops);
    assert_non_null(inner.ops); /* still the caller's */
    assert_int_equal(faulty_counts(&inner, &k), ERR_INVAL);
    cloud_free(&inner);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(faulty_wrap__rate_zero_passes_through),
        cmocka_unit_test(faulty_wrap__rate_one_fails_every_call_as_it_can),
        cmocka_unit_test(faulty_wrap__rate_and_seed),
        cmocka_unit_test(faulty_wrap__lost_launch_is_found_by_its_token),
        cmocka_unit_test(faulty_wrap__bad_settings_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
