/* test_fleet.c: fleet plans (new, clear, empty), the checks every fleet answer must pass, and
 * snapshots restricted to the nodes a plan keeps, mapped there and back, on a hand-built fleet. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "plan/fleet.h"
#include "policies/alloc_rows.h"
#include "util/error.h"

#define NN 3 /* nodes of 4 GPUs */
#define NJ 4

/*
 * The fleet: offer 0 (available) and offer 1 (unavailable: a launch was refused); three ready
 * nodes of offer 0 told apart by their launch times 10, 20, 30; one instance booting. Four jobs:
 *   job 0: 2 GPUs on node 0
 *   job 1: 3 on node 1 and 1 on node 2 (one run split over two nodes)
 *   job 2: 1 on node 2
 *   job 3: 1 on node 1
 */
struct fixture {
    struct snap_offer offers[2];
    struct snap_node nodes[NN];
    struct snap_booting booting[1];
    struct snap_job jobs[NJ];
    struct alloc *cur;
    struct snapshot s;
};

static int setup(void **state)
{
    struct fixture *x = test_calloc(1, sizeof(*x));

    assert_non_null(x);
    x->offers[0] = (struct snap_offer){.name = "od", .gpus = 4, .price = 4};
    x->offers[1] = (struct snap_offer){.name = "spot", .gpus = 4, .spot = 1, .unavailable = 1};
    for (int k = 0; k < NN; k++)
        x->nodes[k] = (struct snap_node){.gpus = 4, .offer = 0, .launched = 10.0 * (k + 1)};
    x->booting[0] = (struct snap_booting){.offer = 0, .launched = 500};
    for (int j = 0; j < NJ; j++)
        x->jobs[j].name = "j";
    assert_int_equal(alloc_new(NJ, NN, NN * 4, &x->cur), 0);
    set_row(x->cur, 0, (int[]){0, 0}, 2);
    set_row(x->cur, 1, (int[]){1, 1, 1, 2}, 4);
    set_row(x->cur, 2, (int[]){2}, 1);
    set_row(x->cur, 3, (int[]){1}, 1);
    x->s = (struct snapshot){.now = 1000,
                             .nnodes = NN,
                             .nodes = x->nodes,
                             .njobs = NJ,
                             .jobs = x->jobs,
                             .current = x->cur,
                             .noffers = 2,
                             .offers = x->offers,
                             .nbooting = 1,
                             .booting = x->booting,
                             .min_billed_s = 60};
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *x = *state;

    alloc_free(x->cur);
    test_free(x);
    return 0;
}

/* A new plan is sized for its snapshot and changes nothing; any launch, release or cancel makes
 * it non-empty, and clear empties it again. A snapshot with no offers, nodes or booting
 * instances (a fixed cluster, a fleet at zero) still gets a plan, and it is empty. */
static void fleet_plan_new__sized_and_empty(void **state)
{
    struct fixture *x = *state;
    struct fleet_plan *f = NULL;
    struct snapshot none = {.njobs = 0};

    assert_int_equal(fleet_plan_new(&x->s, &f), 0);
    assert_int_equal(f->noffers, 2);
    assert_int_equal(f->nnodes, NN);
    assert_int_equal(f->nbooting, 1);
    assert_true(fleet_plan_empty(f));
    f->launch[1] = 2;
    assert_false(fleet_plan_empty(f));
    fleet_plan_clear(f);
    assert_true(fleet_plan_empty(f));
    assert_int_equal(f->launch[1], 0);
    f->release[2] = 1;
    assert_false(fleet_plan_empty(f));
    fleet_plan_clear(f);
    assert_true(fleet_plan_empty(f));
    f->cancel[0] = 1;
    assert_false(fleet_plan_empty(f));
    fleet_plan_clear(f);
    assert_true(fleet_plan_empty(f));
    fleet_plan_free(f);

    assert_int_equal(fleet_plan_new(&none, &f), 0);
    assert_int_equal(f->noffers + f->nnodes + f->nbooting, 0);
    assert_true(fleet_plan_empty(f));
    fleet_plan_free(f);
}

/*
 * The checks, against the allocation a: job 0 on node 0, job 1 on node 1 (node 2 unused).
 * Good: launch 2 of offer 0, release node 2 (unused), cancel the booting instance -> 0.
 * Bad, each alone -> ERR_INTERNAL: a negative launch; one launch of the unavailable offer 1;
 * releasing node 0 (job 0 is on it); a plan sized for another snapshot. Against the current
 * allocation (which uses every node) the good plan's release of node 2 is bad too.
 */
static void fleet_plan_check__rules(void **state)
{
    struct fixture *x = *state;
    struct fleet_plan *f = NULL;
    struct alloc *a = NULL;
    struct snapshot other = x->s;

    assert_int_equal(alloc_new(NJ, NN, NN * 4, &a), 0);
    set_row(a, 0, (int[]){0, 0}, 2);
    set_row(a, 1, (int[]){1, 1, 1, 1}, 4);
    assert_int_equal(fleet_plan_new(&x->s, &f), 0);

    f->launch[0] = 2;
    f->release[2] = 1;
    f->cancel[0] = 1;
    assert_int_equal(fleet_plan_check(&x->s, f, a), 0);
    assert_int_equal(fleet_plan_check(&x->s, f, x->cur), ERR_INTERNAL);

    fleet_plan_clear(f);
    f->launch[0] = -1;
    assert_int_equal(fleet_plan_check(&x->s, f, a), ERR_INTERNAL);

    fleet_plan_clear(f);
    f->launch[1] = 1;
    assert_int_equal(fleet_plan_check(&x->s, f, a), ERR_INTERNAL);
    x->offers[1].unavailable = 0; /* the same launch once the offer is back */
    assert_int_equal(fleet_plan_check(&x->s, f, a), 0);

    fleet_plan_clear(f);
    f->release[0] = 1;
    assert_int_equal(fleet_plan_check(&x->s, f, a), ERR_INTERNAL);

    fleet_plan_clear(f);
    other.nbooting = 0;
    assert_int_equal(fleet_plan_check(&other, f, a), ERR_INTERNAL);

    fleet_plan_free(f);
    alloc_free(a);
}

/*
 * Keep nodes 0 and 2, drop node 1: the sub-snapshot has 2 nodes, node 0 then node 2 (launched 10
 * and 30), map {0, -1, 1}; it borrows the jobs, offers and booting instances. Its current
 * allocation: job 0 keeps its 2 GPUs on (sub) node 0; job 3, only on the dropped node, holds
 * nothing; job 1 ran on the dropped node and on node 2: its run is broken, it restarts whatever
 * happens, so it holds nothing (not the one GPU left on node 2); job 2 keeps its GPU on (sub)
 * node 1. The snapshot itself is unchanged.
 */
static void snapshot_sub_new__keeps_and_drops(void **state)
{
    struct fixture *x = *state;
    unsigned char keep[NN] = {1, 0, 1};
    int map[NN] = {7, 7, 7};
    struct snapshot *sub = NULL;

    assert_int_equal(snapshot_sub_new(&x->s, keep, map, &sub), 0);
    assert_int_equal(map[0], 0);
    assert_int_equal(map[1], -1);
    assert_int_equal(map[2], 1);
    assert_int_equal(sub->nnodes, 2);
    assert_float_equal(sub->nodes[0].launched, 10, 0);
    assert_float_equal(sub->nodes[1].launched, 30, 0);
    assert_int_equal(sub->njobs, NJ);
    assert_ptr_equal(sub->jobs, x->jobs);
    assert_ptr_equal(sub->offers, x->offers);
    assert_ptr_equal(sub->booting, x->booting);
    assert_int_equal(sub->nbooting, 1);
    assert_float_equal(sub->now, 1000, 0);
    assert_int_equal(sub->current->nnodes, 2);
    assert_row(sub->current, 0, (int[]){0, 0}, 2);
    assert_int_equal(sub->current->count[1], 0);
    assert_row(sub->current, 2, (int[]){1}, 1);
    assert_int_equal(sub->current->count[3], 0);
    assert_int_equal(x->s.nnodes, NN);
    assert_row(x->cur, 1, (int[]){1, 1, 1, 2}, 4);
    snapshot_sub_free(sub);
}

/* Keeping no node (or only nodes without GPUs) is ERR_INVAL: there is nothing to allocate. */
static void snapshot_sub_new__nothing_kept(void **state)
{
    struct fixture *x = *state;
    unsigned char keep[NN] = {0, 0, 0};
    int map[NN];
    struct snapshot *sub = NULL;

    assert_int_equal(snapshot_sub_new(&x->s, keep, map, &sub), ERR_INVAL);
    assert_null(sub);
}

/*
 * The round trip: an allocation decided on the sub-snapshot of nodes 0 and 2 (job 0 on sub node
 * 0, job 1 on 3 GPUs of sub node 1, job 3 on sub node 1, job 2 nothing) maps back to nodes 0 and
 * 2 of the whole snapshot; every row is rewritten (job 2's old row in the target goes). A row
 * longer than the target's width is ERR_RANGE.
 */
static void snapshot_sub_unmap__round_trip(void **state)
{
    struct fixture *x = *state;
    unsigned char keep[NN] = {1, 0, 1};
    int map[NN];
    struct snapshot *sub = NULL;
    struct alloc *sa = NULL, *a = NULL, *narrow = NULL;

    assert_int_equal(snapshot_sub_new(&x->s, keep, map, &sub), 0);
    assert_int_equal(alloc_new(NJ, sub->nnodes, 8, &sa), 0);
    set_row(sa, 0, (int[]){0}, 1);
    set_row(sa, 1, (int[]){1, 1, 1}, 3);
    set_row(sa, 3, (int[]){1}, 1);
    assert_int_equal(alloc_new(NJ, NN, NN * 4, &a), 0);
    alloc_copy(a, x->cur);
    assert_int_equal(snapshot_sub_unmap(sa, map, NN, a), 0);
    assert_row(a, 0, (int[]){0}, 1);
    assert_row(a, 1, (int[]){2, 2, 2}, 3);
    assert_int_equal(a->count[2], 0);
    assert_row(a, 3, (int[]){2}, 1);

    /* the sub-snapshot's own current allocation maps back to the rows that lost no node */
    assert_int_equal(snapshot_sub_unmap(sub->current, map, NN, a), 0);
    assert_row(a, 0, (int[]){0, 0}, 2);
    assert_int_equal(a->count[1], 0);
    assert_row(a, 2, (int[]){2}, 1);
    assert_int_equal(a->count[3], 0);

    assert_int_equal(alloc_new(NJ, NN, 2, &narrow), 0);
    assert_int_equal(snapshot_sub_unmap(sa, map, NN, narrow), ERR_RANGE);
    alloc_free(narrow);
    alloc_free(a);
    alloc_free(sa);
    snapshot_sub_free(sub);
}

/*
 * Launches within the room quotas leave, spilling over by price. Four offers: "a" spot $2 (room
 * 1), "b" spot $1.5 (room 2), "c" spot $1 with 8 GPUs a node (another size), "d" on-demand $0.5
 * (no quota); "a" first. 5 asked of "a" with spill: 1 there, 2 on "b" (the cheaper spot of the
 * same size with room), none on "c" (its nodes are another size) or "d" (the other market): 3 in
 * all. Without spill, only "a"'s room. An uncapped offer takes all; an unavailable one none.
 * The check refuses a plan beyond an offer's room.
 */
static void fleet_plan_launch__within_room_and_spilled(void **state)
{
    struct fixture *x = *state;
    struct snap_offer offers[4] = {
        {.name = "a", .gpus = 4, .spot = 1, .price = 8, .capped = 1, .room = 1},
        {.name = "b", .gpus = 4, .spot = 1, .price = 6, .capped = 1, .room = 2},
        {.name = "c", .gpus = 8, .spot = 1, .price = 8},
        {.name = "d", .gpus = 4, .spot = 0, .price = 2}};
    struct snapshot s = x->s;
    struct fleet_plan *f = NULL;

    s.offers = offers;
    s.noffers = 4;
    assert_int_equal(fleet_plan_new(&s, &f), 0);
    assert_int_equal(fleet_offer_room(&s, 0), 1);
    assert_int_equal(fleet_offer_room(&s, 2), INT_MAX);
    assert_int_equal(fleet_plan_launch(&s, 0, 5, 1, f), 3);
    assert_int_equal(f->launch[0], 1);
    assert_int_equal(f->launch[1], 2);
    assert_int_equal(f->launch[2] + f->launch[3], 0);
    assert_int_equal(fleet_plan_check(&s, f, x->cur), 0);
    assert_int_equal(fleet_plan_launch(&s, 1, 1, 1, f), 0); /* no room left on either */
    fleet_plan_clear(f);
    assert_int_equal(fleet_plan_launch(&s, 1, 5, 0, f), 2);
    assert_int_equal(f->launch[0], 0);
    assert_int_equal(fleet_plan_launch(&s, 3, 7, 1, f), 7);
    assert_int_equal(f->launch[3], 7);
    f->launch[1] = 3; /* beyond b's room */
    assert_int_equal(fleet_plan_check(&s, f, x->cur), ERR_INTERNAL);
    fleet_plan_clear(f);
    offers[3].unavailable = 1;
    assert_int_equal(fleet_offer_room(&s, 3), 0);
    assert_int_equal(fleet_plan_launch(&s, 3, 2, 0, f), 0);
    fleet_plan_free(f);
}

#define FIX(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        FIX(fleet_plan_new__sized_and_empty),   FIX(fleet_plan_check__rules),
        FIX(snapshot_sub_new__keeps_and_drops), FIX(snapshot_sub_new__nothing_kept),
        FIX(snapshot_sub_unmap__round_trip),    FIX(fleet_plan_launch__within_room_and_spilled),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
