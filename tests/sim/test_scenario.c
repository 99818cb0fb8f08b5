/* test_scenario.c: what scenario_load makes of the systems' allocation policy settings: castor's
 * system splits its rented fleet with pollux's geometric mean unless castor.p_mean says otherwise,
 * the three systems it is compared with keep the published harmonic mean, and a bad p_mean is
 * refused at its line and column; so are an empty utilisation band and crossed price bounds. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "sim/scenario.h"
#include "util/error.h"

#define OFFERS                                                                             \
    "offers:\n  - name: od\n    gpus: 4\n    price: 4\n  - name: spot\n    market: spot\n" \
    "    gpus: 4\n    price: 1.4\n"

/* Load text as a scenario file; the file is removed before returning. */
static int load(const char *text, struct scenario **s, struct error *e)
{
    char path[] = "/tmp/castor-test-scenario-XXXXXX";
    int fd = mkstemp(path), rc;
    FILE *f;

    assert_true(fd >= 0);
    f = fdopen(fd, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
    rc = scenario_load(path, s, e);
    unlink(path);
    return rc;
}

static struct scenario *load_ok(const char *text)
{
    struct scenario *s = NULL;
    struct error e = {0};
    char buf[600];

    if (load(text, &s, &e) < 0)
        fail_msg("%s", err_format(&e, buf, sizeof(buf)));
    assert_non_null(s);
    return s;
}

/* castor under pollux: p = 0 (FLEET_CASTOR_P_MEAN) set; the other three: nothing set, so pollux's
 * own -1. */
static void scenario_load__castor_splits_with_the_geometric_mean(void **state)
{
    struct scenario *s = load_ok(OFFERS "castor:\n  policy: pollux\n");

    (void)state;
    assert_string_equal(s->systems[3].name, "castor");
    assert_string_equal(s->systems[3].policy, "pollux");
    assert_true(s->systems[3].pcfg.p_mean_set && s->systems[3].pcfg.p_mean == 0);
    for (int i = 0; i < 3; i++) {
        assert_string_equal(s->systems[i].policy, "pollux");
        assert_false(s->systems[i].pcfg.p_mean_set);
        assert_true(policy_p_mean(&s->systems[i].pcfg, -1.0) == -1);
    }
    scenario_free(s);
}

/* Without castor.policy castor's system splits with pollux (docs/fleet.md, step 6; the
 * controller's default policy under fleet.planner: castor), at the geometric mean, with
 * deadline_start: as with policy: pollux written. It was castor's own allocator. */
static void scenario_load__castor_splits_with_pollux_by_default(void **state)
{
    struct scenario *s = load_ok(OFFERS);

    (void)state;
    assert_string_equal(s->systems[3].policy, "pollux");
    assert_true(s->systems[3].pcfg.p_mean_set && s->systems[3].pcfg.p_mean == 0);
    assert_true(s->systems[3].pcfg.deadline_start);
    scenario_free(s);
    s = load_ok(OFFERS "castor:\n  mode: efficiency\n");
    assert_string_equal(s->systems[3].policy, "pollux");
    scenario_free(s);
}

/* castor.p_mean given: kept as given (the published -1 here); with castor's own policy and no
 * p_mean, that policy keeps its default. */
static void scenario_load__castor_p_mean_as_given(void **state)
{
    struct scenario *s = load_ok(OFFERS "castor:\n  policy: pollux\n  p_mean: -1\n");

    (void)state;
    assert_true(s->systems[3].pcfg.p_mean_set && s->systems[3].pcfg.p_mean == -1);
    scenario_free(s);
    s = load_ok(OFFERS "castor:\n  policy: castor\n");
    assert_false(s->systems[3].pcfg.p_mean_set);
    scenario_free(s);
}

/* Out of range or not a number: refused at the value, nothing loaded. */
static void scenario_load__bad_p_mean_located(void **state)
{
    static const struct {
        const char *text;
        int code, line, column;
    } bad[] = {
        {OFFERS "castor:\n  p_mean: 200\n", ERR_RANGE, 10, 11},
        {OFFERS "castor:\n  policy: pollux\n  p_mean: often\n", ERR_PARSE, 11, 11},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct scenario *s = NULL;
        struct error e = {0};
        int rc = load(bad[i].text, &s, &e);

        if (rc != bad[i].code || e.line != bad[i].line || e.column != bad[i].column ||
            !strstr(e.msg, "castor.p_mean"))
            fail_msg("case %zu: %s at %d:%d \"%s\"", i, err_name(rc), e.line, e.column, e.msg);
        assert_null(s);
    }
}

/* A scenario refused: its text, the error, where and what the message says. */
struct refusal {
    const char *text;
    int code, line, column;
    const char *msg;
};

/* Each of the n scenarios is refused as said, and makes nothing. */
static void expect_refused(const struct refusal *bad, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct scenario *s = NULL;
        struct error e = {0};
        int rc = load(bad[i].text, &s, &e);

        if (rc != bad[i].code || e.line != bad[i].line || e.column != bad[i].column ||
            !strstr(e.msg, bad[i].msg))
            fail_msg("case %zu: %s at %d:%d \"%s\"", i, err_name(rc), e.line, e.column, e.msg);
        assert_null(s);
    }
}

/* reconfigure: in_flight by default and as given, restart as given; another word is refused at
 * its value. */
static void scenario_load__reconfigure(void **state)
{
    static const struct refusal bad[] = {
        {OFFERS "reconfigure: sometimes\n", ERR_UNKNOWN, 9, 14, "(one of in_flight, restart)"},
    };
    struct scenario *s = load_ok(OFFERS);

    (void)state;
    assert_int_equal(s->reconfigure_restart, 0);
    scenario_free(s);
    s = load_ok(OFFERS "reconfigure: in_flight\n");
    assert_int_equal(s->reconfigure_restart, 0);
    scenario_free(s);
    s = load_ok(OFFERS "reconfigure: restart\n");
    assert_int_equal(s->reconfigure_restart, 1);
    scenario_free(s);
    expect_refused(bad, sizeof(bad) / sizeof(bad[0]));
}

/* A spot offer's unbilled window (reclaim_free_s) reaches the market's spec; on an on-demand offer,
 * or negative, it is refused at its place. */
static void scenario_load__reclaim_free_s(void **state)
{
    static const struct refusal bad[] = {
        {"offers:\n  - name: od\n    gpus: 4\n    price: 4\n    reclaim_free_s: 60\n", ERR_INVAL, 2,
         5, "unbilled window"},
        {OFFERS "    reclaim_free_s: -1\n", ERR_RANGE, 9, 21, "reclaim_free_s"},
    };
    struct scenario *s = load_ok(OFFERS "    reclaim_free_s: 3600\n");

    (void)state;
    assert_true(s->offers[1].spot && s->offers[1].reclaim_free_s == 3600);
    assert_true(s->offers[0].reclaim_free_s == 0);
    scenario_free(s);
    expect_refused(bad, sizeof(bad) / sizeof(bad[0]));
}

/* What only a spot market has (price bounds, a planner's expected preemption rate) is refused on an
 * on-demand offer, where the planner would price preemptions that never come; a notice is 0 or -1
 * (none) or a number of seconds, not a fraction of -1. */
static void scenario_load__spot_only_keys(void **state)
{
    static const struct refusal bad[] = {
        {"offers:\n  - name: od\n    gpus: 4\n    price: 4\n    expected_rate: 0.1\n", ERR_INVAL, 2,
         5, "an expected rate"},
        {"offers:\n  - name: od\n    gpus: 4\n    price: 4\n    price_min: 3\n", ERR_INVAL, 2, 5,
         "price bounds"},
        {"offers:\n  - name: od\n    gpus: 4\n    price: 4\n    price_max: 5\n", ERR_INVAL, 2, 5,
         "price bounds"},
        {OFFERS "    notice: -0.5\n", ERR_RANGE, 9, 13, "a notice is 0 or -1"},
    };
    struct scenario *s = load_ok(OFFERS "    notice: -1\n    expected_rate: 0\n");

    (void)state;
    assert_true(s->offers[1].notice_s == -1);
    scenario_free(s);
    expect_refused(bad, sizeof(bad) / sizeof(bad[0]));
}

/* A quota over both offers with its units per node; each error at its line and column. */
static void scenario_load__quotas(void **state)
{
    static const struct refusal bad[] = {
        {OFFERS "quotas:\n  - name: q\n    limit: 8\n    offers: {spt: 4}\n", ERR_UNKNOWN, 12, 14,
         "spt is not an offer"},
        {OFFERS "quotas:\n  - name: q\n    offers: {spot: 4}\n", ERR_PARSE, 10, 5,
         "a quota needs a name, a limit"},
        {OFFERS "quotas:\n  - name: q\n    limit: -2\n    offers: {spot: 4}\n", ERR_RANGE, 11, 12,
         "limit"},
        {OFFERS "quotas:\n  - name: q\n    limit: 8\n    offers: {spot: 0}\n", ERR_RANGE, 12, 20,
         "spot"},
        {OFFERS "quotas:\n  - name: q\n    limit: 8\n    offers: {spot: 4}\n  - name: q\n"
                "    limit: 4\n    offers: {od: 4}\n",
         ERR_PARSE, 13, 5, "listed twice"},
        {OFFERS "quotas: 3\n", ERR_PARSE, 9, 9, "a list of at most"},
    };
    struct scenario *s = load_ok(OFFERS "quotas:\n  - name: gpus\n    limit: 8\n"
                                        "    offers: {od: 4, spot: 2}\n");

    (void)state;
    assert_int_equal(s->nquotas, 1);
    assert_string_equal(s->quotas[0].name, "gpus");
    assert_true(s->quotas[0].limit == 8);
    assert_true(s->quotas[0].units[0] == 4 && s->quotas[0].units[1] == 2);
    scenario_free(s);
    expect_refused(bad, sizeof(bad) / sizeof(bad[0]));
}

/* The comparison's utilisation band is checked against pollux-autoscale's defaults (high 2/3, low
 * 1/3) when only one bound is given, and refused at the bound given when it is empty. */
static void scenario_load__utilisation_band(void **state)
{
    static const struct refusal bad[] = {
        {OFFERS "compare:\n  low: 0.8\n", ERR_RANGE, 10, 8,
         "compare.low: 0.8 must be below high (0.667, the default)"},
        {OFFERS "compare:\n  high: 0.3\n", ERR_RANGE, 10, 9,
         "compare.high: 0.3 must be above low (0.333, the default)"},
        {OFFERS "compare:\n  high: 0.5\n  low: 0.5\n", ERR_RANGE, 11, 8,
         "compare.low: 0.5 must be below high (0.5)"},
    };
    struct scenario *s = load_ok(OFFERS "compare:\n  low: 0.5\n");

    (void)state;
    scenario_free(s);
    s = load_ok(OFFERS "compare:\n  high: 0.5\n");
    scenario_free(s);
    s = load_ok(OFFERS "compare:\n  high: 0.9\n  low: 0.8\n");
    scenario_free(s);
    expect_refused(bad, sizeof(bad) / sizeof(bad[0]));
}

/* An offer's price bounds, as the market takes them (price_min: half the price, price_max: twice
 * it, when not given), must not cross: refused at the bound given, not later by the market. */
static void scenario_load__price_bounds(void **state)
{
    static const struct refusal bad[] = {
        {OFFERS "    price_min: 9\n", ERR_RANGE, 9, 16,
         "offers[1].price_min: 9 is above the highest price (2.8: twice the price)"},
        {OFFERS "    price_max: 0.5\n", ERR_RANGE, 9, 16,
         "offers[1].price_max: 0.5 is below the lowest price (0.7: half the price)"},
        {OFFERS "    price_max: 1.5\n    price_min: 2\n", ERR_RANGE, 10, 16,
         "offers[1].price_min: 2 is above the highest price (1.5, price_max)"},
    };
    struct scenario *s = load_ok(OFFERS "    price_min: 2\n");

    (void)state;
    scenario_free(s);
    s = load_ok(OFFERS "    price_max: 1\n");
    scenario_free(s);
    expect_refused(bad, sizeof(bad) / sizeof(bad[0]));
}

/* A temporary file holding text; its path (an absolute one, in /tmp) is written to path. */
static void temp_file(const char *text, char path[32])
{
    int fd;
    FILE *f;

    strcpy(path, "/tmp/castor-test-data-XXXXXX");
    fd = mkstemp(path);
    assert_true(fd >= 0);
    f = fdopen(fd, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

/* What the market would refuse only when a run starts is refused by the loader at its place: a
 * price series whose first point is after time 0 (at that time, in the series' file), a trace
 * and a preemption rate on one offer (at the rate). A series from time
 * 0 and a trace alone load. */
static void scenario_load__market_errors_located(void **state)
{
    char late[32], zero[32], trace[32], text[3][512];
    struct scenario *s;

    (void)state;
    temp_file("time_s,price\n60,1.2\n120,1.3\n", late);
    temp_file("time_s,price\n0,1.2\n120,1.3\n", zero);
    temp_file("0,add,n1\n5000,remove,n1\n", trace);
    snprintf(text[0], sizeof(text[0]), OFFERS "    prices: %s\n", late);
    snprintf(text[1], sizeof(text[1]), OFFERS "    trace: %s\n    preemption_rate: 0.5\n", trace);
    {
        const struct refusal bad[] = {
            {text[0], ERR_RANGE, 2, 1, "the series starts at 60 s"},
            {text[1], ERR_INVAL, 10, 22,
             "offers[1].preemption_rate: an offer's preemptions come "
             "from its trace or from a rate, not both"},
        };

        expect_refused(bad, sizeof(bad) / sizeof(bad[0]));
    }
    snprintf(text[2], sizeof(text[2]), OFFERS "    prices: %s\n", zero);
    s = load_ok(text[2]);
    assert_int_equal(s->offers[1].nseries, 2);
    scenario_free(s);
    snprintf(text[2], sizeof(text[2]), OFFERS "    trace: %s\n", trace);
    s = load_ok(text[2]);
    assert_int_equal(s->offers[1].ntrace, 2);
    scenario_free(s);
    unlink(late);
    unlink(zero);
    unlink(trace);
}

/* The fixed clusters' compare.nodes must fit within max_nodes: refused at compare.nodes, or at
 * max_nodes when below the default 16 nodes; equal to it loads. */
static void scenario_load__compare_nodes_within_max_nodes(void **state)
{
    static const struct refusal bad[] = {
        {"max_nodes: 2\n" OFFERS "compare:\n  nodes: 4\n", ERR_RANGE, 11, 10,
         "compare.nodes: the fixed clusters' 4 nodes (compare.nodes) are more than max_nodes (2)"},
        {"max_nodes: 8\n" OFFERS, ERR_RANGE, 1, 12,
         "max_nodes: the fixed clusters' 16 nodes (compare.nodes, the default)"},
    };
    struct scenario *s = load_ok("max_nodes: 2\n" OFFERS "compare:\n  nodes: 2\n");

    (void)state;
    assert_int_equal(s->systems[0].initial_nodes, 2);
    scenario_free(s);
    expect_refused(bad, sizeof(bad) / sizeof(bad[0]));
}

/* compare.spot names the offer of fixed-spot's nodes and compare.on_demand that of the on-demand
 * systems: an offer of the other market is refused at the value (before, the names were taken
 * as given: fixed-on-demand ran on spot and was preempted, fixed-spot ran on on-demand). */
static void scenario_load__compare_offers_of_their_market(void **state)
{
    static const struct refusal bad[] = {
        {OFFERS "compare:\n  spot: od\n", ERR_INVAL, 10, 9,
         "compare.spot: offer 'od' is on-demand, not spot"},
        {OFFERS "compare:\n  on_demand: spot\n", ERR_INVAL, 10, 14,
         "compare.on_demand: offer 'spot' is spot, not on-demand"},
    };
    struct scenario *s = load_ok(OFFERS "compare:\n  spot: spot\n  on_demand: od\n");

    (void)state;
    assert_int_equal(s->systems[0].initial_offer, 0);
    assert_int_equal(s->systems[2].initial_offer, 1);
    scenario_free(s);
    expect_refused(bad, sizeof(bad) / sizeof(bad[0]));
}

/* An availability trace line has three fields: a fourth is refused at its comma (before, it was
 * taken into the node's name, "n1,extra", and the line replayed as a node of its own). */
static void scenario_parse_trace__three_fields(void **state)
{
    static const char good[] = "0,add,n1\n10,remove,n1\n", bad[] = "0,add,n1\n5,add,n2,x\n";
    struct mkt_trace_event *ev = NULL;
    struct error e = {0};
    int n = 0;

    (void)state;
    assert_int_equal(scenario_parse_trace("t.csv", good, strlen(good), &ev, &n, &e), 0);
    assert_int_equal(n, 2);
    free(ev);
    ev = NULL;
    assert_int_equal(scenario_parse_trace("t.csv", bad, strlen(bad), &ev, &n, &e), ERR_PARSE);
    assert_null(ev);
    assert_int_equal(e.line, 2);
    assert_int_equal(e.column, 9);
}

/* boot: 0 and notice: 0 mean none, not the defaults: a spot node of that scenario's market is
 * ready at its launch, and a preemption comes without warning (its notice at its end); left out,
 * the defaults hold (ready 180 s after the launch, the notice 120 s before the end). */
static void scenario_load__zero_boot_and_notice_mean_none(void **state)
{
    static const char *const text[2] = {OFFERS "    preemption_rate: 1\n    boot: 0\n"
                                               "    notice: 0\n",
                                        OFFERS "    preemption_rate: 1\n"};
    static const double ready[2] = {0, 180};

    (void)state;
    for (int i = 0; i < 2; i++) {
        struct scenario *s = load_ok(text[i]);
        struct market *m = NULL;
        const struct mkt_instance *in;
        struct error e = {0};
        long id;

        assert_int_equal(market_new(s->offers, s->noffers, 1, &m, &e), 0);
        assert_int_equal(market_launch(m, 1, 0, &id), 0);
        in = market_instance(m, id);
        assert_true(in->ready_at == ready[i]);
        assert_true(isfinite(in->end_at));
        if (i == 0)
            assert_true(in->notice_at == in->end_at);
        else
            assert_true(in->notice_at == fmax(0, in->end_at - 120));
        market_free(m);
        scenario_free(s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(scenario_load__castor_splits_with_the_geometric_mean),
        cmocka_unit_test(scenario_load__castor_p_mean_as_given),
        cmocka_unit_test(scenario_load__bad_p_mean_located),
        cmocka_unit_test(scenario_load__quotas),
        cmocka_unit_test(scenario_load__reconfigure),
        cmocka_unit_test(scenario_load__reclaim_free_s),
        cmocka_unit_test(scenario_load__spot_only_keys),
        cmocka_unit_test(scenario_load__utilisation_band),
        cmocka_unit_test(scenario_load__price_bounds),
        cmocka_unit_test(scenario_load__market_errors_located),
        cmocka_unit_test(scenario_load__compare_nodes_within_max_nodes),
        cmocka_unit_test(scenario_load__zero_boot_and_notice_mean_none),
        cmocka_unit_test(scenario_load__compare_offers_of_their_market),
        cmocka_unit_test(scenario_parse_trace__three_fields),
        cmocka_unit_test(scenario_load__castor_splits_with_pollux_by_default),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
