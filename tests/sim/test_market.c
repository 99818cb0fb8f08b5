/* test_market.c: the simulated market's mechanics on small hand-checked markets: billing, boot
 * delay, notices and preemptions from a trace or a rate, capacity errors, the seeded price model,
 * event order, validation. Each expected value is worked out in the comment beside it. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "sim/market.h"

#define EPS 1e-9

/* cmocka's assert_float_equal passes for an infinity against any number: compare here. */
#define assert_near(a, b)                                   \
    do {                                                    \
        double a_ = (a), b_ = (b);                          \
        if (!(fabs(a_ - b_) <= EPS))                        \
            fail_msg("%s is %.12g, not %.12g", #a, a_, b_); \
    } while (0)

static struct market *mk(const struct mkt_offer_spec *o, int n, uint64_t seed)
{
    struct market *m = NULL;
    struct error e;

    assert_int_equal(market_new(o, n, seed, &m, &e), 0);
    assert_non_null(m);
    return m;
}

static long launch(struct market *m, int offer, double now)
{
    long id = 0;

    assert_int_equal(market_launch(m, offer, now, &id), 0);
    return id;
}

static int advance(struct market *m, double t, struct mkt_event *ev, int max)
{
    int nev = -1;

    assert_int_equal(market_advance(m, t, ev, max, &nev), 0);
    return nev;
}

static const struct mkt_offer_spec od36 = {
    .name = "od", .type = "x", .zone = "z", .gpu = "t4", .gpus = 4, .price = 3.60};

/* $3.60/h is $0.001/s: 30 s is billed as the 60 s minimum, $0.06; a full hour is $3.60. */
static void market_instance_cost__on_demand_minimum(void **state)
{
    struct market *m = mk(&od36, 1, 1);
    long a, b;

    (void)state;
    a = launch(m, 0, 0);
    b = launch(m, 0, 0);
    /* alive, 10 s in: the minute is owed from the launch */
    assert_near(market_instance_cost(m, a, 10), 0.06);
    assert_int_equal(market_terminate(m, a, 30), 0);
    assert_near(market_instance_cost(m, a, 30), 0.06);
    assert_near(market_instance_cost(m, a, 10000), 0.06);
    assert_near(market_instance_cost(m, b, 1800), 1.80);
    assert_int_equal(market_terminate(m, b, 3600), 0);
    assert_near(market_instance_cost(m, b, 5000), 3.60);
    /* before its launch nothing; an unknown id is NAN */
    assert_near(market_instance_cost(m, b, -1), 0);
    assert_true(isnan(market_instance_cost(m, 3, 10)));
    market_free(m);
}

/* A spot series at $1/h until 1800 s, then $3/h: an instance from 900 to 2700 pays 900 s at $1/h
 * ($0.25) plus 900 s at $3/h ($0.75) = $1.00. Its price is the series' step. */
static void market_instance_cost__series_piecewise(void **state)
{
    static const struct mkt_price_point pts[] = {{0, 1.0}, {1800, 3.0}};
    struct mkt_offer_spec o = {
        .name = "s", .spot = 1, .gpus = 1, .price = 1.0, .series = pts, .nseries = 2};
    struct market *m = mk(&o, 1, 1);
    long a;

    (void)state;
    assert_near(market_price(m, 0, 1799), 1.0);
    assert_near(market_price(m, 0, 1800), 3.0);
    a = launch(m, 0, 900);
    assert_near(market_instance_cost(m, a, 1800), 0.25);
    assert_int_equal(market_terminate(m, a, 2700), 0);
    assert_near(market_instance_cost(m, a, 2700), 1.00);
    market_free(m);
}

/* A trace removes the node at 30 s: the instance on it is preempted at 30 s and billed those 30 s
 * only (no minimum when the cloud takes it): $3.60/h * 30 s = $0.03. */
static void market_instance_cost__preempted_to_preemption(void **state)
{
    static const struct mkt_trace_event tr[] = {{0, 1, 0}, {30, 0, 0}};
    struct mkt_offer_spec o = {
        .name = "t", .spot = 1, .gpus = 1, .price = 3.60, .trace = tr, .ntrace = 2};
    struct market *m = mk(&o, 1, 1);
    struct mkt_event ev[8];
    long a;

    (void)state;
    a = launch(m, 0, 0);
    /* before the preemption is applied the bill is already capped by it */
    assert_near(market_instance_cost(m, a, 20), 0.03);
    advance(m, 1000, ev, 8);
    assert_int_equal(market_instance(m, a)->state, MKT_GONE);
    assert_int_equal(market_instance(m, a)->preempted, 1);
    assert_near(market_instance(m, a)->end_at, 30);
    assert_near(market_instance_cost(m, a, 1000), 0.03);
    assert_int_equal(market_preemptions(m, 0), 1);
    market_free(m);
}

/* EC2's rule, reclaim_free_s 3600: a trace takes its node 0 at 1800 s and node 1 at 5400 s, and
 * lends node 2 for good. Instance a (node 0, launched at 0) is preempted 1800 s after its launch:
 * not billed, even before the preemption is applied (its bill is planned); b (node 1) goes 5400 s
 * after its launch: billed to it, $5.40; c (node 2), terminated by castor 600 s after its launch
 * (EC2 bills what you stop): billed, $0.60. The sum is b's and c's. An on-demand offer with a
 * window, or a negative one, is refused. */
static void market_instance_cost__reclaimed_in_the_first_hour_is_free(void **state)
{
    static const struct mkt_trace_event tr[] = {
        {0, 1, 0}, {0, 1, 1}, {0, 1, 2}, {1800, 0, 0}, {5400, 0, 1}};
    struct mkt_offer_spec o = {.name = "t",
                               .spot = 1,
                               .gpus = 1,
                               .price = 3.60,
                               .trace = tr,
                               .ntrace = 5,
                               .reclaim_free_s = 3600};
    struct market *m = mk(&o, 1, 1);
    struct mkt_event ev[8];
    struct error e;
    long a, b, c;

    (void)state;
    a = launch(m, 0, 0);
    b = launch(m, 0, 0);
    c = launch(m, 0, 0);
    assert_near(market_instance_cost(m, a, 900), 0);
    assert_near(market_instance_cost(m, b, 900), 0.90);
    assert_int_equal(market_terminate(m, c, 600), 0);
    advance(m, 6000, ev, 8);
    assert_int_equal(market_instance(m, a)->preempted, 1);
    assert_int_equal(market_instance(m, b)->preempted, 1);
    assert_near(market_instance_cost(m, a, 6000), 0);
    assert_near(market_instance_cost(m, b, 6000), 5.40);
    assert_near(market_instance_cost(m, c, 6000), 0.60);
    assert_near(market_cost(m, 6000), 6.00);
    market_free(m);
    /* a run that ends at 900 s, before a's planned preemption: a was never taken, and its bill
     * settled at the end is its 900 s, $0.90 (the planned, free preemption never came) */
    m = mk(&o, 1, 1);
    a = launch(m, 0, 0);
    advance(m, 900, ev, 8);
    assert_near(market_cost(m, 900), 0);
    assert_near(market_cost_settled(m, 900), 0.90);
    market_free(m);
    o = (struct mkt_offer_spec){.name = "od", .gpus = 1, .price = 1, .reclaim_free_s = 60};
    assert_int_equal(market_new(&o, 1, 1, &m, &e), ERR_INVAL);
    o.spot = 1;
    o.reclaim_free_s = -1;
    assert_int_equal(market_new(&o, 1, 1, &m, &e), ERR_INVAL);
}

/* Two offers: od at $3.60/h, a spot one fixed at $0.72/h ($0.0002/s). At t = 1000: od instance
 * 1 from 0 to 30 ($0.06), od instance 2 from 100 live (900 s, $0.90), spot instance 3 from 400
 * live (600 s, $0.12): $1.08. At t = 20 (before instance 1 ended) the sum is $0.06 (instance 1's
 * minimum) and the others are not launched yet. */
static void market_cost__sums(void **state)
{
    struct mkt_offer_spec o[2] = {od36, {.name = "sp", .spot = 1, .gpus = 1, .price = 0.72}};
    struct market *m = mk(o, 2, 1);

    (void)state;
    launch(m, 0, 0);
    assert_int_equal(market_terminate(m, 1, 30), 0);
    launch(m, 0, 100);
    launch(m, 1, 400);
    assert_near(market_cost(m, 1000), 1.08);
    assert_near(market_cost(m, 20), 0.06);
    assert_near(market_cost(m, 1000), market_instance_cost(m, 1, 1000) +
                                          market_instance_cost(m, 2, 1000) +
                                          market_instance_cost(m, 3, 1000));
    market_free(m);
}

/* Running time, not billed time: on offer 0, instance 1 from 0 to 1800 is 0.5 h and instance 3
 * from 3600 is 1 h at 7200; on offer 1, instance 2 from 0 to 10 s is 10/3600 h although billed
 * 60 s. */
static void market_node_hours__running_time(void **state)
{
    struct mkt_offer_spec o[2] = {od36, {.name = "sp", .spot = 1, .gpus = 1, .price = 1}};
    struct market *m = mk(o, 2, 1);

    (void)state;
    launch(m, 0, 0);
    launch(m, 1, 0);
    assert_int_equal(market_terminate(m, 2, 10), 0);
    assert_int_equal(market_terminate(m, 1, 1800), 0);
    launch(m, 0, 3600);
    assert_near(market_node_hours(m, 0, 7200), 1.5);
    assert_near(market_node_hours(m, 1, 7200), 10.0 / 3600);
    assert_near(market_node_hours(m, -1, 7200), 1.5 + 10.0 / 3600);
    /* at 900, before instance 1 ended: 0.25 h, and instance 3 not launched */
    assert_near(market_node_hours(m, 0, 900), 0.25);
    market_free(m);
}

/* boot_s 100, launched at 10: READY at exactly 110, not at 109.999; the default boot is 180. */
static void market_advance__ready_after_boot(void **state)
{
    struct mkt_offer_spec o[2] = {od36, od36};
    struct mkt_event ev[4];
    struct market *m;
    long a, b;

    (void)state;
    o[0].boot_s = 100;
    o[1].name = "od2";
    m = mk(o, 2, 1);
    a = launch(m, 0, 10);
    b = launch(m, 1, 10);
    assert_near(market_next_event(m, 10), 110);
    assert_int_equal(advance(m, 109.999, ev, 4), 0);
    assert_int_equal(market_instance(m, a)->state, MKT_BOOTING);
    assert_int_equal(advance(m, 110, ev, 4), 1);
    assert_int_equal(ev[0].kind, MKT_EV_READY);
    assert_int_equal(ev[0].id, a);
    assert_near(ev[0].t, 110);
    assert_int_equal(market_instance(m, a)->state, MKT_READY);
    assert_int_equal(market_instance(m, b)->state, MKT_BOOTING);
    assert_near(market_next_event(m, 110), 190);
    assert_int_equal(advance(m, 190, ev, 4), 1);
    assert_int_equal(ev[0].id, b);
    /* on-demand with no rate: nothing more ever */
    assert_true(isinf(market_next_event(m, 190)));
    market_free(m);
}

/* An initial-fleet launch is ready at once and sends no READY event. */
static void market_launch_ready__no_boot(void **state)
{
    struct market *m = mk(&od36, 1, 1);
    struct mkt_event ev[4];
    long id = 0;

    (void)state;
    assert_int_equal(market_launch_ready(m, 0, 0, &id), 0);
    assert_int_equal(market_instance(m, id)->state, MKT_READY);
    assert_near(market_instance(m, id)->ready_at, 0);
    assert_int_equal(advance(m, 1000, ev, 4), 0);
    market_free(m);
}

/* capacity 2: the third launch is refused and changes nothing but the counter; after a
 * terminate a launch succeeds. */
static void market_launch__capacity(void **state)
{
    struct mkt_offer_spec o = od36;
    struct market *m;
    long id = 77;

    (void)state;
    o.capacity = 2;
    m = mk(&o, 1, 1);
    launch(m, 0, 0);
    launch(m, 0, 0);
    assert_int_equal(market_launch(m, 0, 5, &id), ERR_CAPACITY);
    assert_int_equal(id, 77);
    assert_int_equal(market_ninstances(m), 2);
    assert_int_equal(market_capacity_errors(m, 0), 1);
    assert_int_equal(market_capacity_errors(m, -1), 1);
    assert_null(market_instance(m, 3));
    assert_int_equal(market_terminate(m, 1, 10), 0);
    assert_int_equal(launch(m, 0, 10), 3);
    assert_int_equal(market_capacity_errors(m, 0), 1);
    market_free(m);
}

/* Capacity counts instances alive at the launch's time: with capacity 1, an instance whose node
 * the trace removed at 100 no longer counts at 150, even before the market is advanced. */
static void market_launch__capacity_alive_at_now(void **state)
{
    static const struct mkt_trace_event tr[] = {{0, 1, 0}, {0, 1, 1}, {100, 0, 0}};
    struct mkt_offer_spec o = {
        .name = "t", .spot = 1, .gpus = 1, .price = 1, .capacity = 1, .trace = tr, .ntrace = 3};
    struct market *m = mk(&o, 1, 1);
    long id;

    (void)state;
    launch(m, 0, 0);
    assert_int_equal(market_launch(m, 0, 50, &id), ERR_CAPACITY);
    id = launch(m, 0, 150);
    assert_int_equal(market_instance(m, id)->trace_node, 1);
    market_free(m);
}

/* Terminate: an unknown id is ERR_RANGE, a second terminate ERR_INVAL, a time before an earlier
 * call ERR_INVAL; launching an unknown offer is ERR_RANGE. */
static void market_terminate__errors(void **state)
{
    struct market *m = mk(&od36, 1, 1);
    long id = 0;

    (void)state;
    launch(m, 0, 0);
    launch(m, 0, 100);
    assert_int_equal(market_terminate(m, 9, 200), ERR_RANGE);
    assert_int_equal(market_terminate(m, 1, 50), ERR_INVAL);
    assert_int_equal(market_terminate(m, 1, 200), 0);
    assert_int_equal(market_terminate(m, 1, 300), ERR_INVAL);
    assert_int_equal(market_launch(m, 1, 300, &id), ERR_RANGE);
    assert_int_equal(market_launch(m, 0, 100, &id), ERR_INVAL);
    market_free(m);
}

/* Trace: nodes 0, 1, 2 come at 0; node 1 goes at 500; node 3 comes at 700. Three launches at 0
 * take nodes 0, 1, 2 (lowest free first). The one on node 1 gets its notice at 500 - 120 = 380
 * and goes at 500. At 600, two alive on the two nodes there: insufficient capacity. At 700 node
 * 3 is there: the launch takes it. */
static void market_advance__trace_notice_preempt(void **state)
{
    static const struct mkt_trace_event tr[] = {
        {0, 1, 0}, {0, 1, 1}, {0, 1, 2}, {500, 0, 1}, {700, 1, 3}};
    struct mkt_offer_spec o = {
        .name = "p3/spot", .spot = 1, .gpus = 8, .price = 7.0, .trace = tr, .ntrace = 5};
    struct market *m = mk(&o, 1, 1);
    struct mkt_event ev[16];
    long id = 0;

    (void)state;
    for (int i = 0; i < 3; i++)
        assert_int_equal(market_instance(m, launch(m, 0, 0))->trace_node, i);
    assert_near(market_instance(m, 2)->notice_at, 380);
    assert_near(market_instance(m, 2)->end_at, 500);
    assert_true(isinf(market_instance(m, 1)->end_at));
    assert_true(isinf(market_instance(m, 1)->notice_at));
    /* the three READY at 180 */
    assert_int_equal(advance(m, 379, ev, 16), 3);
    assert_near(market_next_event(m, 379), 380);
    assert_int_equal(advance(m, 380, ev, 16), 1);
    assert_int_equal(ev[0].kind, MKT_EV_NOTICE);
    assert_int_equal(ev[0].id, 2);
    assert_int_equal(market_instance(m, 2)->state, MKT_NOTICED);
    assert_near(market_next_event(m, 380), 500);
    assert_int_equal(advance(m, 500, ev, 16), 1);
    assert_int_equal(ev[0].kind, MKT_EV_PREEMPT);
    assert_int_equal(ev[0].id, 2);
    assert_int_equal(market_instance(m, 2)->state, MKT_GONE);
    assert_int_equal(market_instance(m, 2)->preempted, 1);
    /* the trace's add at 700 is the next event: capacity may come back */
    assert_near(market_next_event(m, 500), 700);
    assert_int_equal(market_launch(m, 0, 600, &id), ERR_CAPACITY);
    assert_int_equal(market_capacity_errors(m, 0), 1);
    advance(m, 700, ev, 16);
    id = launch(m, 0, 700);
    assert_int_equal(id, 4);
    assert_int_equal(market_instance(m, id)->trace_node, 3);
    assert_true(isinf(market_next_event(m, 880)));
    market_free(m);
}

/* A trace node that goes at 100 and comes back at 200 is free again: the instance that held it
 * was preempted at 100, and a launch at 200 takes node 0 with no removal planned. */
static void market_launch__trace_node_comes_back(void **state)
{
    static const struct mkt_trace_event tr[] = {{0, 1, 0}, {100, 0, 0}, {200, 1, 0}};
    struct mkt_offer_spec o = {
        .name = "t", .spot = 1, .gpus = 1, .price = 1, .trace = tr, .ntrace = 3};
    struct market *m = mk(&o, 1, 1);
    struct mkt_event ev[8];
    long id;

    (void)state;
    assert_near(market_instance(m, launch(m, 0, 0))->end_at, 100);
    assert_near(market_next_event(m, 100), 200);
    advance(m, 150, ev, 8);
    assert_int_equal(market_launch(m, 0, 150, &id), ERR_CAPACITY);
    advance(m, 200, ev, 8);
    id = launch(m, 0, 200);
    assert_int_equal(market_instance(m, id)->trace_node, 0);
    assert_true(isinf(market_instance(m, id)->end_at));
    market_free(m);
}

/* A trace node that goes at 50 while its instance boots (ready at 180): the notice comes at the
 * launch (max(0, 50 - 120)), it stays booting, it is preempted at 50 and never gets READY. */
static void market_advance__preempted_while_booting(void **state)
{
    static const struct mkt_trace_event tr[] = {{0, 1, 0}, {50, 0, 0}};
    struct mkt_offer_spec o = {
        .name = "t", .spot = 1, .gpus = 1, .price = 1, .trace = tr, .ntrace = 2};
    struct market *m = mk(&o, 1, 1);
    struct mkt_event ev[8];

    (void)state;
    launch(m, 0, 0);
    assert_int_equal(advance(m, 0, ev, 8), 1);
    assert_int_equal(ev[0].kind, MKT_EV_NOTICE);
    assert_int_equal(market_instance(m, 1)->state, MKT_BOOTING);
    assert_int_equal(advance(m, 1000, ev, 8), 1);
    assert_int_equal(ev[0].kind, MKT_EV_PREEMPT);
    assert_near(ev[0].t, 50);
    market_free(m);
}

/* Equal times: by kind (READY < NOTICE < PREEMPT), then by id, whatever the launch or internal
 * order. Nodes 0, 1, 2 go at 200 (listed 2, 1, 0); boot 100 and notice 100, so READY and NOTICE
 * of each instance both fall at 100. Instance 1 is terminated first, which reorders the live
 * instances. With no notice (notice_s < 0) NOTICE comes at the preemption, just before it. */
static void market_advance__equal_times_order(void **state)
{
    static const struct mkt_trace_event tr[] = {{0, 1, 0},   {0, 1, 1},   {0, 1, 2},
                                                {200, 0, 2}, {200, 0, 1}, {200, 0, 0}};
    struct mkt_offer_spec o[2] = {{.name = "a",
                                   .spot = 1,
                                   .gpus = 1,
                                   .price = 1,
                                   .boot_s = 100,
                                   .notice_s = 100,
                                   .trace = tr,
                                   .ntrace = 6},
                                  {.name = "b",
                                   .spot = 1,
                                   .gpus = 1,
                                   .price = 1,
                                   .boot_s = 100,
                                   .notice_s = -1,
                                   .trace = tr,
                                   .ntrace = 6}};
    struct market *m = mk(o, 2, 1);
    struct mkt_event ev[16];

    (void)state;
    for (int i = 0; i < 3; i++)
        launch(m, 0, 0);
    assert_int_equal(market_terminate(m, 1, 0), 0);
    assert_near(market_next_event(m, 0), 100);
    assert_int_equal(advance(m, 100, ev, 16), 4);
    assert_int_equal(ev[0].kind, MKT_EV_READY);
    assert_int_equal(ev[0].id, 2);
    assert_int_equal(ev[1].kind, MKT_EV_READY);
    assert_int_equal(ev[1].id, 3);
    assert_int_equal(ev[2].kind, MKT_EV_NOTICE);
    assert_int_equal(ev[2].id, 2);
    assert_int_equal(ev[3].kind, MKT_EV_NOTICE);
    assert_int_equal(ev[3].id, 3);
    assert_int_equal(market_instance(m, 3)->state, MKT_NOTICED);
    launch(m, 1, 100); /* id 4, offer b, node 0, no notice: NOTICE and PREEMPT at 200 */
    assert_near(market_next_event(m, 100), 200);
    assert_int_equal(advance(m, 200, ev, 16), 5);
    assert_int_equal(ev[0].kind, MKT_EV_READY);
    assert_int_equal(ev[0].id, 4);
    assert_int_equal(ev[1].kind, MKT_EV_NOTICE);
    assert_int_equal(ev[1].id, 4);
    for (int i = 2; i < 5; i++) {
        assert_int_equal(ev[i].kind, MKT_EV_PREEMPT);
        assert_int_equal(ev[i].id, i);
    }
    assert_int_equal(market_preemptions(m, -1), 3);
    market_free(m);
}

/* A full buffer: every event is applied all the same, only the first max are written. */
static void market_advance__small_buffer_applies_all(void **state)
{
    struct market *m = mk(&od36, 1, 1);
    struct mkt_event ev[1];

    (void)state;
    for (int i = 0; i < 3; i++)
        launch(m, 0, 0);
    assert_int_equal(advance(m, 180, ev, 1), 1);
    for (long id = 1; id <= 3; id++)
        assert_int_equal(market_instance(m, id)->state, MKT_READY);
    market_free(m);
}

static void lifetimes(uint64_t seed, double rate, int n, double *out)
{
    struct mkt_offer_spec o = {.name = "r", .spot = 1, .gpus = 1, .price = 1, .rate = rate};
    struct market *m = mk(&o, 1, seed);

    for (int i = 0; i < n; i++) {
        const struct mkt_instance *in = market_instance(m, launch(m, 0, 0));

        out[i] = in->end_at - in->launched;
        /* the notice comes notice_s (120 s) before, or at the launch */
        assert_near(in->notice_at, fmax(0, in->end_at - 120));
    }
    market_free(m);
}

/* rate 0.5 per node-hour: lifetimes are Exponential with mean 2 h = 7200 s; the mean of 20000 is
 * within 3% (its standard error is 0.7%). The same seed gives the same lifetimes, another seed
 * others. */
static void market_launch__rate_lifetimes(void **state)
{
    enum { N = 20000 };
    static double a[N], b[N], c[N];
    double mean = 0;
    int same = 0;

    (void)state;
    lifetimes(42, 0.5, N, a);
    lifetimes(42, 0.5, N, b);
    lifetimes(43, 0.5, N, c);
    for (int i = 0; i < N; i++) {
        mean += a[i] / N;
        assert_true(a[i] > 0);
        assert_true(a[i] == b[i]);
        same += a[i] == c[i];
    }
    assert_true(fabs(mean - 7200) < 0.03 * 7200);
    assert_int_equal(same, 0);
}

/* An offer's lifetimes depend on the seed and its own launches only: launches of another offer
 * in between change nothing. On-demand offers ignore the rate. */
static void market_launch__rate_streams_independent(void **state)
{
    struct mkt_offer_spec o[2] = {{.name = "x", .spot = 1, .gpus = 1, .price = 1, .rate = 1},
                                  {.name = "y", .spot = 1, .gpus = 1, .price = 1, .rate = 1}};
    struct market *m1 = mk(o, 2, 9), *m2 = mk(o, 2, 9), *m3;

    (void)state;
    for (int i = 0; i < 10; i++) {
        long a = launch(m1, 0, 0), b;

        launch(m2, 1, 0);
        launch(m2, 1, 0);
        b = launch(m2, 0, 0);
        assert_true(market_instance(m1, a)->end_at == market_instance(m2, b)->end_at);
    }
    o[0].spot = 0;
    m3 = mk(o, 2, 9);
    assert_true(isinf(market_instance(m3, launch(m3, 0, 0))->end_at));
    market_free(m1);
    market_free(m2);
    market_free(m3);
}

/* An offer's streams follow its name, not its place: with an unused offer listed before it, a
 * spot offer has the same hourly prices and the same lifetimes for the same seed. */
static void market_new__streams_keyed_by_name(void **state)
{
    struct mkt_offer_spec sp = {
        .name = "sp", .spot = 1, .gpus = 4, .price = 1.2, .volatility = 0.2, .rate = 1};
    struct mkt_offer_spec one[1] = {sp}, two[2] = {od36, sp};
    struct market *m1 = mk(one, 1, 3), *m2 = mk(two, 2, 3);

    (void)state;
    for (int h = 0; h < 200; h++)
        assert_true(market_price(m1, 0, h * 3600.0) == market_price(m2, 1, h * 3600.0));
    for (int i = 0; i < 10; i++) {
        long a = launch(m1, 0, 0), b = launch(m2, 1, 0);

        assert_true(market_instance(m1, a)->end_at == market_instance(m2, b)->end_at);
    }
    market_free(m1);
    market_free(m2);
}

/* The seeded model: the same prices for a seed whether asked forwards or backwards; within
 * [price / 2, 2 price]; at price in hour 0; constant within an hour; moving (many distinct hourly
 * prices) with volatility 0.2; another seed gives another path; the on-demand offer stays. */
static void market_price__seeded_model(void **state)
{
    enum { H = 500 };
    struct mkt_offer_spec o[2] = {
        od36, {.name = "spot", .spot = 1, .gpus = 4, .price = 1.2, .volatility = 0.2}};
    struct market *m1 = mk(o, 2, 5), *m2 = mk(o, 2, 5), *m3 = mk(o, 2, 6);
    static double fwd[H];
    int moves = 0, differ = 0;

    (void)state;
    for (int h = 0; h < H; h++)
        fwd[h] = market_price(m1, 1, 3600.0 * h + 1);
    for (int h = H - 1; h >= 0; h--)
        assert_true(market_price(m2, 1, 3600.0 * h + 3599) == fwd[h]);
    assert_near(fwd[0], 1.2);
    for (int h = 0; h < H; h++) {
        assert_true(fwd[h] >= 0.6 - EPS && fwd[h] <= 2.4 + EPS);
        moves += h > 0 && fwd[h] != fwd[h - 1];
        differ += market_price(m3, 1, 3600.0 * h) != fwd[h];
        assert_near(market_price(m1, 0, 3600.0 * h), 3.60);
    }
    assert_true(moves > H / 2);
    assert_true(differ > H / 2);
    market_free(m1);
    market_free(m2);
    market_free(m3);
}

/* The model's log deviation x_h = log(p_h / price) follows x_{h+1} = 0.7 x_h + 0.05 N(0, 1)
 * (reversion 0.3 per hour; volatility 0.05 keeps it far from the clamps at +-log 2): over 20000
 * hours its lag-1 autocorrelation is 0.7 (standard error 0.005) and its standard deviation
 * 0.05 / sqrt(1 - 0.7^2) = 0.0700. */
static void market_price__seeded_model_reverts(void **state)
{
    enum { H = 20000 };
    struct mkt_offer_spec o = {
        .name = "spot", .spot = 1, .gpus = 1, .price = 2, .volatility = 0.05};
    struct market *m = mk(&o, 1, 21);
    static double x[H];
    double mean = 0, var = 0, cov = 0;

    (void)state;
    for (int h = 0; h < H; h++) {
        x[h] = log(market_price(m, 0, 3600.0 * h) / 2);
        mean += x[h] / H;
    }
    for (int h = 0; h < H; h++) {
        var += (x[h] - mean) * (x[h] - mean) / H;
        if (h > 0)
            cov += (x[h] - mean) * (x[h - 1] - mean) / (H - 1);
    }
    assert_true(fabs(cov / var - 0.7) < 0.03);
    assert_true(fabs(sqrt(var) - 0.07) < 0.07 * 0.05);
    market_free(m);
}

/* Billing on the model: from 1800 to 5400 s an instance pays half an hour of hour 0's price and
 * half an hour of hour 1's. Tight bounds clamp every hour. */
static void market_instance_cost__seeded_model(void **state)
{
    struct mkt_offer_spec o = {.name = "spot",
                               .spot = 1,
                               .gpus = 1,
                               .price = 1.0,
                               .volatility = 1.0,
                               .price_min = 0.9,
                               .price_max = 1.1};
    struct market *m = mk(&o, 1, 3);
    double p0, p1;

    (void)state;
    launch(m, 0, 1800);
    assert_int_equal(market_terminate(m, 1, 5400), 0);
    p0 = market_price(m, 0, 0);
    p1 = market_price(m, 0, 3600);
    assert_near(market_instance_cost(m, 1, 6000), 0.5 * p0 + 0.5 * p1);
    for (int h = 0; h < 200; h++) {
        double p = market_price(m, 0, 3600.0 * h);

        assert_true(p >= 0.9 - EPS && p <= 1.1 + EPS);
    }
    market_free(m);
}

/* Lowest $/GPU-hour over [0, t]: on-demand $4/h for 4 GPUs is 1.0; a spot series for 4 GPUs at
 * $0.40/h before 0 (not seen: superseded at 0), $2/h from 0 (0.5), $1.20/h from 3600 (0.3), $3/h
 * from 7200. At 1000: 0.5; at 3600: 0.3; at 9000 still 0.3, though the price is back up. */
static void market_min_gpu_price__over_time(void **state)
{
    static const struct mkt_price_point pts[] = {{-100, 0.4}, {0, 2.0}, {3600, 1.2}, {7200, 3.0}};
    struct mkt_offer_spec o[2] = {
        {.name = "od", .gpus = 4, .price = 4.0},
        {.name = "sp", .spot = 1, .gpus = 4, .price = 2.0, .series = pts, .nseries = 4}};
    struct market *m = mk(o, 2, 1);

    (void)state;
    assert_near(market_min_gpu_price(m, 1000), 0.5);
    assert_near(market_min_gpu_price(m, 3599), 0.5);
    assert_near(market_min_gpu_price(m, 3600), 0.3);
    assert_near(market_min_gpu_price(m, 9000), 0.3);
    assert_near(market_price(m, 1, 9000), 3.0);
    market_free(m);
}

/* A point superseded by a later one at an equal time is never in force (market.h: "a later point
 * at an equal t wins"): $0.04/h at 3600, replaced at once by $4/h, is never the price, so the
 * lowest $/GPU-hour stays 1.0 (it was 0.01, a cost bound 100 times too low); the bill agrees. */
static void market_min_gpu_price__superseded_point_not_seen(void **state)
{
    static const struct mkt_price_point pts[] = {{0, 4.0}, {3600, 0.04}, {3600, 4.0}};
    struct mkt_offer_spec o = {
        .name = "sp", .spot = 1, .gpus = 4, .price = 4.0, .series = pts, .nseries = 3};
    struct market *m = mk(&o, 1, 1);

    (void)state;
    assert_near(market_price(m, 0, 3600), 4.0);
    assert_near(market_min_gpu_price(m, 9000), 1.0);
    launch(m, 0, 0);
    assert_near(market_instance_cost(m, 1, 7200), 8.0);
    market_free(m);
}

/* Seeded model: the running minimum is the lowest hourly price seen so far. */
static void market_min_gpu_price__seeded_model(void **state)
{
    struct mkt_offer_spec o = {.name = "spot", .spot = 1, .gpus = 2, .price = 1, .volatility = 0.3};
    struct market *m = mk(&o, 1, 11);
    double low = INFINITY;

    (void)state;
    for (int h = 0; h < 100; h++) {
        low = fmin(low, market_price(m, 0, 3600.0 * h) / 2);
        assert_near(market_min_gpu_price(m, 3600.0 * h + 10), low);
    }
    assert_true(low < 0.5);
    market_free(m);
}

/* Each bad spec: the documented code, a message naming the offer, *out untouched. */
static void market_new__rejects_bad_specs(void **state)
{
    static const struct mkt_price_point unsorted[] = {{0, 1}, {100, 2}, {50, 3}};
    static const struct mkt_trace_event ghost[] = {{0, 1, 0}, {10, 0, 1}};
    static char dummy;
    struct market *sentinel = (struct market *)(void *)&dummy, *m = sentinel;
    struct mkt_offer_spec o[6];
    struct error e;

    (void)state;
    for (int i = 0; i < 6; i++)
        o[i] = (struct mkt_offer_spec){.name = "bad-one", .spot = 1, .gpus = 1, .price = 1};
    o[0].price = -1;
    o[1].price = NAN;
    o[2].gpus = 0;
    o[3].series = unsorted;
    o[3].nseries = 3;
    o[4].trace = ghost;
    o[4].ntrace = 2;
    o[5].rate = -0.1;
    assert_int_equal(market_new(o, 0, 1, &m, &e), ERR_EMPTY);
    assert_ptr_equal(m, sentinel);
    assert_int_equal(market_new(NULL, 3, 1, &m, &e), ERR_EMPTY);
    for (int i = 0; i < 6; i++) {
        memset(&e, 0, sizeof(e));
        assert_int_equal(market_new(&o[i], 1, 1, &m, &e), ERR_INVAL);
        assert_ptr_equal(m, sentinel);
        assert_int_equal(e.code, ERR_INVAL);
        assert_non_null(strstr(e.msg, "bad-one"));
    }
    /* a bad offer after a good one, and a duplicate name */
    {
        struct mkt_offer_spec two[2] = {od36, o[2]};

        assert_int_equal(market_new(two, 2, 1, &m, &e), ERR_INVAL);
        two[1] = od36;
        assert_int_equal(market_new(two, 2, 1, &m, &e), ERR_INVAL);
        assert_non_null(strstr(e.msg, "od"));
        assert_ptr_equal(m, sentinel);
    }
}

/*
 * A quota over two spot offers of 4 GPUs (48 units a node of a, 24 of b), limit 100: a, a (96)
 * fit; b (120) does not and is refused for the quota, counted, nothing made; a's room is 0, b's
 * is 0 (4 left, 24 a node); the on-demand offer is under none. Once an a goes at 10 s, a has room
 * for 1 (52 left) and b for 2; b, b (96) fit then. A quota over no offer, or with a negative
 * limit, is refused and the quotas stay.
 */
static void market_set_quotas__launches_within_the_limit(void **state)
{
    const struct mkt_offer_spec offers[3] = {
        {.name = "a", .type = "x", .zone = "z", .gpu = "t4", .spot = 1, .gpus = 4, .price = 1},
        {.name = "b", .type = "x", .zone = "y", .gpu = "t4", .spot = 1, .gpus = 4, .price = 1},
        od36};
    const double units[3] = {48, 24, 0}, none[3] = {0, 0, 0};
    const struct mkt_quota_spec q = {.name = "spot", .limit = 100, .units = units};
    struct market *m = mk(offers, 3, 1);
    struct error e = {0};
    long a1, id = 0;
    int room = -1;

    (void)state;
    assert_int_equal(market_set_quotas(m, &q, 1, &e), 0);
    assert_int_equal(market_offer_room(m, 0, 0, &room), 1);
    assert_int_equal(room, 2);
    a1 = launch(m, 0, 0);
    launch(m, 0, 0);
    assert_int_equal(market_launch(m, 1, 0, &id), ERR_QUOTA);
    assert_int_equal(market_quota_errors(m, 1), 1);
    assert_int_equal(market_quota_errors(m, -1), 1);
    assert_int_equal(market_capacity_errors(m, -1), 0);
    assert_int_equal(market_ninstances(m), 2);
    assert_int_equal(market_offer_room(m, 0, 0, &room), 1);
    assert_int_equal(room, 0);
    assert_int_equal(market_offer_room(m, 1, 0, &room), 1);
    assert_int_equal(room, 0);
    room = -1;
    assert_int_equal(market_offer_room(m, 2, 0, &room), 0);
    assert_int_equal(room, -1);
    launch(m, 2, 0); /* on-demand: no quota */
    assert_int_equal(market_terminate(m, a1, 10), 0);
    assert_int_equal(market_offer_room(m, 0, 10, &room), 1);
    assert_int_equal(room, 1);
    assert_int_equal(market_offer_room(m, 1, 10, &room), 1);
    assert_int_equal(room, 2);
    launch(m, 1, 10);
    launch(m, 1, 10);
    assert_int_equal(market_launch(m, 1, 10, &id), ERR_QUOTA);
    {
        const struct mkt_quota_spec bad[2] = {{.name = "none", .limit = 1, .units = none},
                                              {.name = "neg", .limit = -1, .units = units}};

        assert_int_equal(market_set_quotas(m, &bad[0], 1, &e), ERR_INVAL);
        assert_non_null(strstr(e.msg, "none"));
        assert_int_equal(market_set_quotas(m, &bad[1], 1, &e), ERR_INVAL);
        assert_int_equal(market_offer_room(m, 1, 10, &room), 1); /* the quota stays */
        assert_int_equal(room, 0);
    }
    market_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(market_instance_cost__on_demand_minimum),
        cmocka_unit_test(market_instance_cost__series_piecewise),
        cmocka_unit_test(market_instance_cost__preempted_to_preemption),
        cmocka_unit_test(market_instance_cost__reclaimed_in_the_first_hour_is_free),
        cmocka_unit_test(market_cost__sums),
        cmocka_unit_test(market_node_hours__running_time),
        cmocka_unit_test(market_advance__ready_after_boot),
        cmocka_unit_test(market_launch_ready__no_boot),
        cmocka_unit_test(market_launch__capacity),
        cmocka_unit_test(market_launch__capacity_alive_at_now),
        cmocka_unit_test(market_terminate__errors),
        cmocka_unit_test(market_advance__trace_notice_preempt),
        cmocka_unit_test(market_launch__trace_node_comes_back),
        cmocka_unit_test(market_advance__preempted_while_booting),
        cmocka_unit_test(market_advance__equal_times_order),
        cmocka_unit_test(market_advance__small_buffer_applies_all),
        cmocka_unit_test(market_launch__rate_lifetimes),
        cmocka_unit_test(market_launch__rate_streams_independent),
        cmocka_unit_test(market_new__streams_keyed_by_name),
        cmocka_unit_test(market_price__seeded_model),
        cmocka_unit_test(market_price__seeded_model_reverts),
        cmocka_unit_test(market_instance_cost__seeded_model),
        cmocka_unit_test(market_min_gpu_price__over_time),
        cmocka_unit_test(market_min_gpu_price__superseded_point_not_seen),
        cmocka_unit_test(market_min_gpu_price__seeded_model),
        cmocka_unit_test(market_new__rejects_bad_specs),
        cmocka_unit_test(market_set_quotas__launches_within_the_limit),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
