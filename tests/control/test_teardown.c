/* test_teardown.c: the end of a cluster over the fake cloud and a state on disk: a dry run changes
 * nothing and says what it would do; a teardown terminates every live instance with the cluster's
 * tag (another cluster's left alone), gives up the pending launch, terminates every node in the
 * state and keeps the jobs; a termination the cloud refuses is counted, and a second run finishes
 * it; a cloud that cannot list changes nothing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "control/realworld.h"
#include "control/state.h"
#include "control/teardown.h"
#include "providers/cloud.h"
#include "providers/fake.h"
#include "util/db_fixture.h"

#define CLUSTER "td"

struct fx {
    struct tmpdb db;
    struct state *st;
    struct cloud cloud;
    char ids[3][CLOUD_ID_MAX];
};

static int fx_setup(void **state)
{
    static const struct cloud_offer offers[1] = {
        {.name = "box/spot", .gpus = 4, .spot = 1, .price = 1.0}};
    struct fx *f = calloc(1, sizeof(*f));
    void *tmp = NULL;

    if (!f || tmpdb_setup(&tmp) < 0)
        return -1;
    f->db = *(struct tmpdb *)tmp;
    free(tmp);
    if (state_open(f->db.path, &f->st, NULL) < 0 ||
        cloud_fake_create(offers, NULL, 1, NULL, &f->cloud) < 0)
        return -1;
    *state = f;
    return 0;
}

static int fx_teardown(void **state)
{
    struct fx *f = *state;
    struct tmpdb *t = malloc(sizeof(*t));

    cloud_free(&f->cloud);
    state_close(f->st);
    *t = f->db;
    free(f);
    return tmpdb_teardown((void **)&t);
}

/* Two instances of the cluster launched under intents (one a booting node, one ready), a third
 * gone, another cluster's instance, a pending intent with no instance, a static node, and two
 * jobs (one placed). */
static void populate(struct fx *f)
{
    struct state_alloc row = {"static-1", 1, 0};
    char other[CLOUD_ID_MAX];

    for (int i = 0; i < 3; i++) {
        char token[32];
        struct state_node n = {0};

        snprintf(token, sizeof(token), CLUSTER "-%d", i);
        assert_int_equal(state_intent_record(f->st, token, "box/spot", 1, 10.0), 0);
        assert_int_equal(cloud_launch(&f->cloud, "box/spot", CLUSTER, token, f->ids[i]), 0);
        n.instance_id = f->ids[i];
        n.provider = "fake";
        n.offer = "box/spot";
        n.market = STATE_MARKET_SPOT;
        n.zone = "z";
        n.gpus = 4;
        n.state = STATE_NODE_BOOTING;
        n.launch_token = token;
        n.launched_at = 10.0;
        n.ready_at = n.terminated_at = NAN;
        n.price = 1.0;
        assert_int_equal(state_node_upsert(f->st, &n), 0);
        assert_int_equal(state_intent_resolve(f->st, token, STATE_INTENT_LAUNCHED, 11.0), 0);
    }
    assert_int_equal(state_node_set_state(f->st, f->ids[1], STATE_NODE_READY, 20.0), 0);
    assert_int_equal(cloud_fake_set_state(&f->cloud, f->ids[2], CLOUD_GONE, 0), 0);
    assert_int_equal(state_node_set_state(f->st, f->ids[2], STATE_NODE_TERMINATED, 30.0), 0);
    assert_int_equal(cloud_fake_inject(&f->cloud, "other", "box/spot", "", other), 0);
    assert_int_equal(state_intent_record(f->st, CLUSTER "-9", "box/spot", 1, 40.0), 0);
    {
        struct state_node s = {0};

        s.instance_id = "static-1";
        s.provider = "static";
        s.offer = "static";
        s.zone = "local";
        s.gpus = 2;
        s.state = STATE_NODE_READY;
        s.launched_at = 5.0;
        s.ready_at = s.terminated_at = NAN;
        assert_int_equal(state_node_register(f->st, &s, 5.0), 0);
    }
    assert_int_equal(state_job_submit(f->st, "a", "{}", 1.0), 0);
    assert_int_equal(state_job_submit(f->st, "b", "{}", 1.0), 0);
    assert_int_equal(state_alloc_replace(f->st, "a", &row, 1, 50.0), 0);
}

static long long count(struct fx *f, const char *sql)
{
    return one_int(state_db(f->st), sql);
}

/* The instances of cluster that are not gone. */
static int live(struct fx *f, const char *cluster)
{
    struct cloud_instance *in = NULL;
    size_t n = 0;
    int k = 0;

    assert_int_equal(cloud_list(&f->cloud, cluster, &in, &n), 0);
    for (size_t i = 0; i < n; i++)
        k += in[i].state != CLOUD_GONE;
    free(in);
    return k;
}

static void teardown_run__dry_run_then_everything_ends(void **state)
{
    struct fx *f = *state;
    struct teardown_result r = {0};
    struct error e = {0};
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);

    populate(f);
    assert_non_null(out);
    assert_int_equal(teardown_run(f->st, &f->cloud, CLUSTER, NULL, 0, 0, 100.0, out, &r, &e), 0);
    fflush(out);
    assert_int_equal(r.instances, 2);
    assert_int_equal(r.terminated, 0);
    assert_int_equal(r.intents, 1);
    assert_int_equal(r.nodes, 3); /* booting, ready, static */
    assert_int_equal(r.jobs, 2);
    assert_non_null(strstr(text, "would terminate"));
    assert_non_null(strstr(text, f->ids[0]));
    assert_null(strstr(text, f->ids[2])); /* gone already */
    assert_int_equal(live(f, CLUSTER), 2);
    assert_int_equal(count(f, "SELECT count(*) FROM launch_intents WHERE state = 'pending'"), 1);
    assert_int_equal(count(f, "SELECT count(*) FROM nodes WHERE state != 'terminated'"), 3);

    /* one termination refused: counted, the rest done */
    assert_int_equal(cloud_fake_fail(&f->cloud, "terminate", ERR_IO, 1), 0);
    assert_int_equal(teardown_run(f->st, &f->cloud, CLUSTER, NULL, 0, 1, 200.0, out, &r, &e), 0);
    fflush(out);
    assert_int_equal(r.instances, 2);
    assert_int_equal(r.terminated, 1);
    assert_int_equal(r.failed, 1);
    assert_non_null(strstr(text, "NOT terminated:"));
    assert_int_equal(live(f, CLUSTER), 1);
    assert_int_equal(count(f, "SELECT count(*) FROM launch_intents WHERE state = 'pending'"), 0);
    assert_int_equal(count(f, "SELECT count(*) FROM nodes WHERE state != 'terminated'"), 0);
    assert_int_equal(count(f, "SELECT count(*) FROM allocations"), 0);
    assert_int_equal(count(f, "SELECT count(*) FROM jobs WHERE state = 'pending'"), 2); /* kept */
    /* again: the last one goes; another cluster's instance is never touched */
    assert_int_equal(teardown_run(f->st, &f->cloud, CLUSTER, NULL, 0, 1, 300.0, out, &r, &e), 0);
    assert_int_equal(r.instances, 1);
    assert_int_equal(r.terminated, 1);
    assert_int_equal(r.failed, 0);
    assert_int_equal(live(f, CLUSTER), 0);
    assert_int_equal(live(f, "other"), 1);
    fclose(out);
    free(text);
}

/* Without a state (lost, or never made) the instances with the cluster's tag are still
 * terminated, the state's counts 0; another cluster's instance is not touched. */
static void teardown_run__without_a_state_by_the_tag(void **state)
{
    struct fx *f = *state;
    struct teardown_result r = {0};
    struct error e = {0};

    populate(f);
    assert_int_equal(teardown_run(NULL, &f->cloud, CLUSTER, NULL, 0, 1, 100.0, NULL, &r, &e), 0);
    assert_int_equal(r.instances, 2);
    assert_int_equal(r.terminated, 2);
    assert_true(r.intents == 0 && r.nodes == 0 && r.jobs == 0);
    assert_int_equal(live(f, CLUSTER), 0);
    assert_int_equal(live(f, "other"), 1);
}

static void teardown_run__a_cloud_that_cannot_list_changes_nothing(void **state)
{
    struct fx *f = *state;
    struct teardown_result r = {.instances = 77};
    struct error e = {0};

    populate(f);
    assert_int_equal(cloud_fake_fail(&f->cloud, "list", ERR_AGAIN, 1), 0);
    assert_int_equal(teardown_run(f->st, &f->cloud, CLUSTER, NULL, 0, 1, 100.0, NULL, &r, &e),
                     ERR_AGAIN);
    assert_non_null(strstr(e.msg, "cannot list the cluster's instances"));
    assert_int_equal(r.instances, 77);
    assert_int_equal(live(f, CLUSTER), 2);
    assert_int_equal(count(f, "SELECT count(*) FROM nodes WHERE state != 'terminated'"), 3);
    assert_int_equal(count(f, "SELECT count(*) FROM launch_intents WHERE state = 'pending'"), 1);
}

/* The dollars recorded for instance id, in millionths. */
static long long micros(struct fx *f, const char *id)
{
    return node_cost_micros(state_db(f->st), id);
}

/* The controller stopped with the costs recorded up to 100 s; the teardown an hour later records
 * what the two live instances cost until then ($1/h each), before their nodes are terminated; a
 * dry run records nothing. */
static void teardown_run__records_the_costs_up_to_the_teardown(void **state)
{
    struct fx *f = *state;
    struct teardown_result r = {0};
    struct error e = {0};

    populate(f);
    assert_int_equal(state_cost_add(f->st, f->ids[0], 10.0, 100.0, 0.025), 0);
    assert_int_equal(teardown_run(f->st, &f->cloud, CLUSTER, NULL, 0, 0, 3700.0, NULL, &r, &e), 0);
    assert_int_equal(micros(f, f->ids[1]), 0);
    assert_int_equal(teardown_run(f->st, &f->cloud, CLUSTER, NULL, 0, 1, 3700.0, NULL, &r, &e), 0);
    assert_int_equal(micros(f, f->ids[0]), 1025000);
    assert_int_equal(micros(f, f->ids[1]), 1000000);
    assert_int_equal(micros(f, f->ids[2]), 0); /* gone before */
}

static double at_1000(void *ctx)
{
    (void)ctx;
    return 1000.0;
}

/* What the fleet's strays cost, in micro-dollars. */
static long long stray_micros(struct fx *f)
{
    return count(f, "SELECT CAST(round(total(dollars) * 1000000) AS INTEGER) FROM stray_costs");
}

/*
 * Instances no live node explains (strays) are charged as the teardown ends them, at their offer's
 * price ($1/h): one launched at 1000 s, torn down at 4600 s, an hour ($1); the instance of a node
 * terminated in the state at 30 s that the cloud still lists, from its node's end (60 s after its
 * launch at 10 s) to 4600 s; a second teardown of what the cloud still lists adds nothing twice.
 * A dry run charges nothing.
 */
static void teardown_run__charges_the_strays(void **state)
{
    struct fx *f = *state;
    struct teardown_result r = {0};
    struct error e = {0};
    char stray[CLOUD_ID_MAX];

    populate(f);
    cloud_fake_set_clock(&f->cloud, at_1000, NULL);
    assert_int_equal(cloud_fake_inject(&f->cloud, CLUSTER, "box/spot", "", stray), 0);
    assert_int_equal(cloud_fake_set_state(&f->cloud, f->ids[2], CLOUD_RUNNING, 0), 0);
    assert_int_equal(teardown_run(f->st, &f->cloud, CLUSTER, NULL, 0, 0, 4600.0, NULL, &r, &e), 0);
    assert_int_equal(stray_micros(f), 0);
    assert_int_equal(teardown_run(f->st, &f->cloud, CLUSTER, NULL, 0, 1, 4600.0, NULL, &r, &e), 0);
    /* 3600 s for the stray, 4530 s (70 to 4600) for the lost node's instance, at $1/h */
    assert_int_equal(stray_micros(f), 1000000 + 1258333);
    assert_int_equal(micros(f, stray), 0); /* no node of castor's: the fleet's, no node's */
    assert_int_equal(cloud_fake_set_state(&f->cloud, stray, CLOUD_RUNNING, 0), 0);
    assert_int_equal(teardown_run(f->st, &f->cloud, CLUSTER, NULL, 0, 1, 4600.0, NULL, &r, &e), 0);
    assert_int_equal(stray_micros(f), 1000000 + 1258333);
}

/* The strays are charged at the price the controller bills their offer at: with the
 * configuration's 50% discount (a Savings Plan) an hour of the $1/h offer is $0.50, kept under the
 * configuration's zone for the offer. */
static void teardown_run__prices_strays_as_the_controller(void **state)
{
    struct fx *f = *state;
    const struct realworld_offer meta[] = {{.name = "other/spot", .price = 9.0},
                                           {.name = "box/spot", .zone = "z-1", .discount = 0.5}};
    struct teardown_result r = {0};
    struct error e = {0};
    char stray[CLOUD_ID_MAX];

    cloud_fake_set_clock(&f->cloud, at_1000, NULL);
    assert_int_equal(cloud_fake_inject(&f->cloud, CLUSTER, "box/spot", "", stray), 0);
    assert_int_equal(teardown_run(f->st, &f->cloud, CLUSTER, meta, 2, 1, 4600.0, NULL, &r, &e), 0);
    assert_int_equal(stray_micros(f), 500000);
    assert_int_equal(count(f, "SELECT count(*) FROM stray_costs WHERE zone = 'z-1'"),
                     2); /* hours */
    assert_int_equal(count(f, "SELECT count(*) FROM stray_costs WHERE zone <> 'z-1'"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(teardown_run__dry_run_then_everything_ends, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(teardown_run__without_a_state_by_the_tag, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(teardown_run__a_cloud_that_cannot_list_changes_nothing,
                                        fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(teardown_run__records_the_costs_up_to_the_teardown,
                                        fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(teardown_run__charges_the_strays, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(teardown_run__prices_strays_as_the_controller, fx_setup,
                                        fx_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
