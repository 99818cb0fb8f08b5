/* test_fake.c: the fake cloud's quotas, which stand in for the clouds' in the controller's tests:
 * a launch past a quota is refused with ERR_QUOTA as a real cloud refuses it, what it counts
 * (live instances of its offers, any cluster's, and others' units) is what the quotas op
 * answers, and the `quotas:` section's errors are located. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "providers/cloud.h"
#include "providers/fake.h"
#include "util/conf.h"
#include "util/error.h"

static const struct cloud_offer offers[3] = {{.name = "a/spot", .gpus = 4, .spot = 1, .price = 1},
                                             {.name = "b/spot", .gpus = 4, .spot = 1, .price = 1},
                                             {.name = "c/on-demand", .gpus = 4, .price = 3}};

/* A quota of 10 units over a (4 a node) and b (2 a node), 2 held by others: launches of a and b
 * share it (a, a fills 10; b is refused then), c is not under it; a terminated instance gives its
 * units back; the op answers the quota with what it counts and one use per offer under it. */
static void cloud_fake_set_quota__refuses_past_the_limit(void **state)
{
    const char *names[] = {"a/spot", "b/spot"};
    const double units[] = {4, 2};
    struct cloud c = {0};
    struct cloud_quota *q = NULL;
    struct cloud_quota_use *u = NULL;
    size_t nq = 0, nu = 0;
    char id[CLOUD_ID_MAX], first[CLOUD_ID_MAX];

    (void)state;
    assert_int_equal(cloud_fake_create(offers, NULL, 3, NULL, &c), 0);
    assert_int_equal(cloud_fake_set_quota(&c, "q", 10, 2, names, units, 2), 0);
    assert_int_equal(cloud_launch(&c, "a/spot", "x", "t1", first), 0);
    assert_int_equal(cloud_launch(&c, "b/spot", "y", "t2", id), 0); /* another cluster: counted */
    assert_int_equal(cloud_launch(&c, "a/spot", "x", "t3", id), ERR_QUOTA); /* 8 + 4 > 10 */
    assert_int_equal(cloud_launch(&c, "b/spot", "x", "t4", id), 0);         /* 10 */
    assert_int_equal(cloud_launch(&c, "b/spot", "x", "t5", id), ERR_QUOTA);
    assert_int_equal(cloud_launch(&c, "c/on-demand", "x", "t6", id), 0);
    assert_int_equal(cloud_quotas(&c, &q, &nq, &u, &nu), 0);
    assert_int_equal(nq, 1);
    assert_string_equal(q[0].name, "q");
    assert_string_equal(q[0].unit, "vCPUs");
    assert_true(q[0].limit == 10 && q[0].used == 10);
    assert_int_equal(nu, 2);
    assert_string_equal(u[0].offer, "a/spot");
    assert_true(u[0].units == 4 && u[0].quota == 0);
    assert_string_equal(u[1].offer, "b/spot");
    free(q);
    free(u);
    assert_int_equal(cloud_terminate(&c, "x", first), 0);
    assert_int_equal(cloud_launch(&c, "a/spot", "x", "t7", id), 0);
    /* replaced by name; unknown offers and bad figures refused */
    assert_int_equal(cloud_fake_set_quota(&c, "q", 100, 0, names, units, 2), 0);
    assert_int_equal(cloud_quotas(&c, &q, &nq, &u, &nu), 0);
    assert_int_equal(nq, 1);
    assert_true(q[0].limit == 100);
    free(q);
    free(u);
    assert_int_equal(cloud_fake_set_quota(&c, "r", 1, 0, (const char *[]){"nope"}, units, 1),
                     ERR_UNKNOWN);
    assert_int_equal(cloud_fake_set_quota(&c, "r", -1, 0, names, units, 2), ERR_INVAL);
    assert_int_equal(cloud_fake_set_quota(&c, "r", 1, 0, names, (const double[]){0, 1}, 2),
                     ERR_INVAL);
    /* a failed read writes nothing */
    q = (void *)&c;
    assert_int_equal(cloud_fake_fail(&c, "quotas", ERR_PERM, 1), 0);
    assert_int_equal(cloud_quotas(&c, &q, &nq, &u, &nu), ERR_PERM);
    assert_ptr_equal(q, (void *)&c);
    cloud_free(&c);
}

/* A spot offer bids at most its max_price: while its price is above, a launch is refused as EC2
 * refuses a bid below the spot price (no capacity at that bid), and the offers op tells the bid;
 * at or below it, the launch goes through. An on-demand offer's max_price means nothing. */
static void cloud_fake_set_price__spot_above_its_max_price(void **state)
{
    struct cloud_offer bid[2] = {
        {.name = "a/spot", .gpus = 4, .spot = 1, .price = 1, .max_price = 1.1},
        {.name = "c/on-demand", .gpus = 4, .price = 3, .max_price = 1}};
    struct cloud_offer *list = NULL;
    struct cloud c = {0};
    char id[CLOUD_ID_MAX];
    size_t n = 0;

    (void)state;
    assert_int_equal(cloud_fake_create(bid, NULL, 2, NULL, &c), 0);
    assert_int_equal(cloud_launch(&c, "a/spot", "x", "t1", id), 0);
    assert_int_equal(cloud_fake_set_price(&c, "a/spot", 1.2), 0);
    assert_int_equal(cloud_launch(&c, "a/spot", "x", "t2", id), ERR_CAPACITY);
    assert_int_equal(cloud_offers(&c, &list, &n), 0);
    assert_true(n == 2 && list[0].price == 1.2 && list[0].max_price == 1.1);
    free(list);
    assert_int_equal(cloud_launch(&c, "c/on-demand", "x", "t3", id), 0);
    assert_int_equal(cloud_fake_set_price(&c, "a/spot", 1.1), 0);
    assert_int_equal(cloud_launch(&c, "a/spot", "x", "t4", id), 0);
    assert_int_equal(cloud_fake_set_price(&c, "nope", 1), ERR_UNKNOWN);
    assert_int_equal(cloud_fake_set_price(&c, "a/spot", -1), ERR_INVAL);
    cloud_free(&c);
}

/* The fake made from a section with every key of a quota, then each error at its place. */
static void cloud_fake_new__quotas_section(void **state)
{
    static const struct {
        const char *yaml;
        int code, line, column;
        const char *msg;
    } bad[] = {
        {"quotas:\n  - name: q\n    limit: 4\n    offers: {nope: 1}\n", ERR_UNKNOWN, 4, 13,
         "names an offer not listed"},
        {"quotas:\n  - name: q\n    offers: {fake.4gpu/on-demand: 1}\n", ERR_PARSE, 2, 5,
         "a quota needs a name, a limit"},
        {"quotas:\n  - name: q\n    limit: -1\n", ERR_RANGE, 3, 12, "limit"},
        {"quotas:\n  - name: q\n    limit: 4\n    offers: {fake.4gpu/on-demand: 0}\n", ERR_RANGE, 4,
         35, "fake.4gpu/on-demand"},
        {"quotas:\n  - name: q\n    limt: 4\n", ERR_UNKNOWN, 3, 5, "did you mean"},
        {"quotas: 3\n", ERR_PARSE, 1, 9, "expected a list"},
        {"offers:\n  - {name: a, reclaim_free_s: 60}\n", ERR_PARSE, 2, 5,
         "only a spot offer is reclaimed"},
        {"offers:\n  - {name: a, market: spot, reclaim_free_s: -1}\n", ERR_RANGE, 2, 45,
         "reclaim_free_s"},
    };
    const char *good = "quotas:\n  - name: q\n    limit: 8\n    used: 4\n"
                       "    offers: {fake.4gpu/on-demand: 4}\n";
    struct conf *doc = NULL;
    struct cloud c = {0};
    struct error e = {0};
    char id[CLOUD_ID_MAX];

    (void)state;
    assert_int_equal(conf_parse("t.yaml", good, strlen(good), &doc, &e), 0);
    assert_int_equal(cloud_new("fake", doc->root, NULL, NULL, &c, &e), 0);
    conf_free(doc);
    assert_int_equal(cloud_launch(&c, "fake.4gpu/on-demand", "x", "t1", id), 0);
    assert_int_equal(cloud_launch(&c, "fake.4gpu/on-demand", "x", "t2", id), ERR_QUOTA);
    cloud_free(&c);
    {
        const char *spot = "offers:\n  - {name: s, market: spot, reclaim_free_s: 3600}\n";
        struct cloud_offer *o = NULL;
        size_t n = 0;

        assert_int_equal(conf_parse("t.yaml", spot, strlen(spot), &doc, &e), 0);
        assert_int_equal(cloud_new("fake", doc->root, NULL, NULL, &c, &e), 0);
        conf_free(doc);
        assert_int_equal(cloud_offers(&c, &o, &n), 0);
        assert_true(n == 1 && o[0].spot && o[0].reclaim_free_s == 3600);
        free(o);
        cloud_free(&c);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct cloud untouched = {0};

        memset(&e, 0, sizeof(e));
        assert_int_equal(conf_parse("t.yaml", bad[i].yaml, strlen(bad[i].yaml), &doc, &e), 0);
        if (cloud_new("fake", doc->root, NULL, NULL, &untouched, &e) != bad[i].code ||
            e.line != bad[i].line || e.column != bad[i].column || !strstr(e.msg, bad[i].msg)) {
            print_error("case %zu: %d at %d:%d \"%s\"\n", i, e.code, e.line, e.column, e.msg);
            fail();
        }
        assert_null(untouched.ops);
        conf_free(doc);
    }
}

/* The whole nodes a quota leaves: 128 vCPUs with 20 held at 48 a node, 2 (2.25 rounded down); a
 * hair short of a whole node counts as it (float sums of units); none left, or past the limit, 0;
 * an infinite limit, infinite room. */
static void cloud_quota_room__whole_nodes(void **state)
{
    (void)state;
    assert_true(cloud_quota_room(128, 20, 48) == 2);
    assert_true(cloud_quota_room(0.3, 0.1 + 0.2 - 0.3, 0.1) == 3);
    assert_true(cloud_quota_room(96, 96, 48) == 0);
    assert_true(cloud_quota_room(96, 100, 48) == 0);
    assert_true(isinf(cloud_quota_room(INFINITY, 10, 48)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cloud_fake_set_quota__refuses_past_the_limit),
        cmocka_unit_test(cloud_fake_new__quotas_section),
        cmocka_unit_test(cloud_fake_set_price__spot_above_its_max_price),
        cmocka_unit_test(cloud_quota_room__whole_nodes),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
