/* test_world.c: the simulated world as a fixed cluster and renting from a market: boot delays seen
 * in snapshots, capacity refusals, notices that make jobs checkpoint, preemptions that send them
 * back to their last checkpoint, periodic checkpoints, refused releases, and the bill. One cifar10
 * job (tests/data/workloads/one_cifar10.csv) on the bundled profiles. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "model/tput.h"
#include "sim/world.h"

static const char *const known[] = {"cifar10", NULL};

/* A trace pool with one node, there from the start, that the cloud takes back at 1000 s. */
static const struct mkt_trace_event trace[] = {{0, 1, 0}, {1000, 0, 0}};

enum { OD, SPOT, TRACED, SILENT, NOFFERS };

/* On-demand at $4/h and a spot pool of one instance at $1/h, both booting in 100 s; two spot
 * pools replaying the trace, one with the default 120 s notice and one with none. All 4 T4s. */
#define T4X4 .type = "g4", .zone = "z", .gpu = "t4", .gpus = 4
static const struct mkt_offer_spec offers[NOFFERS] = {
    [OD] = {.name = "od", T4X4, .price = 4.0, .boot_s = 100},
    [SPOT] = {.name = "spot", T4X4, .spot = 1, .price = 1.0, .capacity = 1, .boot_s = 100},
    [TRACED] = {.name = "traced", T4X4, .spot = 1, .price = 1.0, .trace = trace, .ntrace = 2},
    [SILENT] = {.name = "silent",
                T4X4,
                .spot = 1,
                .price = 1.0,
                .notice_s = -1,
                .trace = trace,
                .ntrace = 2},
};

static struct workload *wl, *wl_ckpt;

static int group_setup(void **state)
{
    struct error e;

    (void)state;
    if (workload_load(CASTOR_TEST_DATA "/workloads/one_cifar10.csv", known, &wl, &e) < 0)
        return -1;
    return workload_load(CASTOR_TEST_DATA "/workloads/one_cifar10_checkpoint.csv", known, &wl_ckpt,
                         &e);
}

static int group_teardown(void **state)
{
    (void)state;
    workload_free(wl);
    workload_free(wl_ckpt);
    return 0;
}

/* A world of trace t renting from the market above: `nodes` ready nodes of offer `initial` at
 * time 0, jobs checkpointing every checkpoint_s unless the trace says otherwise. */
static struct sim_config market_config(int nodes, int initial, double checkpoint_s)
{
    return (struct sim_config){.profiles = CASTOR_DATADIR "/profiles",
                               .model = &tput_model_pollux,
                               .adaptive_batch = 1,
                               .gpus_per_node = 4,
                               .offers = offers,
                               .noffers = NOFFERS,
                               .nodes = nodes,
                               .initial_offer = initial,
                               .max_nodes = 4,
                               .market_seed = 1,
                               .checkpoint_s = checkpoint_s};
}

static struct sim_world *market_world_of(const struct workload *t, int nodes, int initial,
                                         double checkpoint_s)
{
    struct sim_config cfg = market_config(nodes, initial, checkpoint_s);
    struct sim_world *w = NULL;
    struct error e;

    assert_int_equal(sim_world_new(&cfg, t, &w, &e), 0);
    return w;
}

static struct sim_world *market_world(int nodes, int initial, double checkpoint_s)
{
    return market_world_of(wl, nodes, initial, checkpoint_s);
}

static const struct snapshot *observe(struct sim_world *w)
{
    const struct snapshot *s = NULL;

    assert_int_equal(sim_world_observe(w, &s), 0);
    return s;
}

/* Give the one job all 4 GPUs of snapshot node 0 (or nothing with gpus 0). */
static void place_job(struct sim_world *w, int gpus)
{
    const struct snapshot *s = observe(w);
    struct alloc *plan = NULL;

    assert_int_equal(s->njobs, 1);
    assert_int_equal(alloc_new(1, s->current->nnodes, s->current->width, &plan), 0);
    if (gpus > 0)
        assert_int_equal(alloc_add(plan, 0, 0, gpus), 0);
    assert_int_equal(sim_world_apply(w, plan), 0);
    alloc_free(plan);
}

/* A fleet plan for the current snapshot launching n of offer o. */
static struct fleet_plan *launching(struct sim_world *w, int o, int n)
{
    struct fleet_plan *f = NULL;

    assert_int_equal(fleet_plan_new(observe(w), &f), 0);
    f->launch[o] = n;
    return f;
}

/* A fixed cluster (no offers) is what it was before markets: 2 nodes of 4 GPUs ready at 0, not
 * rented (offer -1), no offers or booting instances in the snapshot, no fleet to resize (ERR_INVAL)
 * and nothing billed; the job runs on what it is given. */
static void sim_world__fixed_cluster_unchanged(void **state)
{
    struct sim_config cfg = {.profiles = CASTOR_DATADIR "/profiles",
                             .model = &tput_model_pollux,
                             .adaptive_batch = 1,
                             .nodes = 2,
                             .gpus_per_node = 4};
    struct sim_world *w = NULL;
    const struct snapshot *s;
    struct fleet_plan *f = NULL;
    struct sim_fleet_stats st;
    struct error e;

    (void)state;
    assert_int_equal(sim_world_new(&cfg, wl, &w, &e), 0);
    assert_false(sim_world_has_fleet(w));
    s = observe(w);
    assert_int_equal(s->nnodes, 2);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(s->nodes[k].gpus, 4);
        assert_int_equal(s->nodes[k].offer, -1);
        assert_int_equal(s->nodes[k].preemptible, 0);
        assert_float_equal(s->nodes[k].launched, 0, 0);
    }
    assert_int_equal(s->noffers, 0);
    assert_int_equal(s->nbooting, 0);
    assert_int_equal(s->njobs, 1);
    place_job(w, 4);
    assert_int_equal(sim_world_advance(w, 600), 0);
    assert_true(sim_world_job(w, 0)->progress > 0);
    assert_int_equal(sim_world_job_gpus(w, 0), 4);
    assert_int_equal(fleet_plan_new(observe(w), &f), 0);
    assert_int_equal(sim_world_resize(w, f), ERR_INVAL);
    fleet_plan_free(f);
    assert_int_equal(observe(w)->nnodes, 2);
    sim_world_fleet_stats(w, &st);
    assert_float_equal(st.dollars, 0, 0);
    assert_int_equal(st.launches, 0);
    sim_world_free(w);
}

/* A launch at 0 of the on-demand offer (boot 100 s) is a booting instance in the next snapshot,
 * still booting at 99 s, and a ready node of that offer, launched at 0, at 100 s. The snapshot
 * shows the offers as the market has them. */
static void sim_world_resize__launch_boots_then_ready(void **state)
{
    struct sim_world *w = market_world(0, OD, 0);
    const struct snapshot *s;
    struct fleet_plan *f;

    (void)state;
    assert_true(sim_world_has_fleet(w));
    s = observe(w);
    assert_int_equal(s->nnodes, 0);
    assert_int_equal(s->nbooting, 0);
    assert_int_equal(s->noffers, NOFFERS);
    assert_float_equal(s->offers[OD].price, 4.0, 0);
    assert_float_equal(s->offers[OD].boot_s, 100, 0);
    assert_int_equal(s->offers[OD].spot, 0);
    assert_int_equal(s->offers[SPOT].spot, 1);
    assert_int_equal(s->offers[OD].unavailable, 0);

    f = launching(w, OD, 1);
    assert_int_equal(sim_world_resize(w, f), 0);
    fleet_plan_free(f);
    s = observe(w);
    assert_int_equal(s->nnodes, 0);
    assert_int_equal(s->nbooting, 1);
    assert_int_equal(s->booting[0].offer, OD);
    assert_float_equal(s->booting[0].launched, 0, 0);

    assert_int_equal(sim_world_advance(w, 99), 0);
    s = observe(w);
    assert_int_equal(s->nnodes, 0);
    assert_int_equal(s->nbooting, 1);

    assert_int_equal(sim_world_advance(w, 1), 0);
    s = observe(w);
    assert_int_equal(s->nbooting, 0);
    assert_int_equal(s->nnodes, 1);
    assert_int_equal(s->nodes[0].offer, OD);
    assert_int_equal(s->nodes[0].gpus, 4);
    assert_int_equal(s->nodes[0].preemptible, 0);
    assert_float_equal(s->nodes[0].launched, 0, 0);
    sim_world_free(w);
}

/* Two launches on the spot pool that holds one: the first boots, the second is refused. That is
 * not an error; the next snapshot marks the pool unavailable (the other offers not), one
 * capacity error is counted, and the mark lasts 10 minutes: still there at 599 s, gone at 600. */
static void sim_world_resize__capacity_marks_offer_unavailable(void **state)
{
    struct sim_world *w = market_world(0, OD, 0);
    struct fleet_plan *f = launching(w, SPOT, 2);
    const struct snapshot *s;
    struct sim_fleet_stats st;

    (void)state;
    assert_int_equal(sim_world_resize(w, f), 0);
    fleet_plan_free(f);
    s = observe(w);
    assert_int_equal(s->nbooting, 1);
    assert_int_equal(s->booting[0].offer, SPOT);
    assert_int_equal(s->offers[SPOT].unavailable, 1);
    assert_int_equal(s->offers[OD].unavailable, 0);
    sim_world_fleet_stats(w, &st);
    assert_int_equal(st.launches, 1);
    assert_int_equal(st.capacity_errs, 1);
    assert_int_equal(sim_world_advance(w, 599), 0);
    assert_int_equal(observe(w)->offers[SPOT].unavailable, 1);
    assert_int_equal(sim_world_advance(w, 1), 0);
    assert_int_equal(observe(w)->offers[SPOT].unavailable, 0);
    sim_world_free(w);
}

/* A fixed cluster of 2 nodes on the spot pool that holds one starts with what that pool allows
 * (as with a quota): one ready node, not an error. */
static void sim_world_new__starts_with_what_capacity_allows(void **state)
{
    struct sim_world *w = market_world(2, SPOT, 0);

    (void)state;
    assert_int_equal(observe(w)->nnodes, 1);
    assert_int_equal(sim_world_fleet_nodes(w, 1), 1);
    sim_world_free(w);
}

/*
 * max_nodes 1 and the one node (the traced pool's) noticed at 880 s: it still holds the world's
 * one slot until the trace takes it at 1000 s. The snapshot shows it as noticed on its offer (not
 * among the nodes); a launch of on-demand then is not made (no slot), is no error, counts no
 * capacity refusal and leaves on-demand available. Once the node is gone the launch boots.
 */
static void sim_world_resize__slot_limit_is_not_a_capacity_refusal(void **state)
{
    struct sim_config cfg = market_config(1, TRACED, 0);
    struct sim_world *w = NULL;
    struct fleet_plan *f;
    const struct snapshot *s;
    struct sim_fleet_stats st;
    struct error e;

    (void)state;
    cfg.max_nodes = 1;
    assert_int_equal(sim_world_new(&cfg, wl, &w, &e), 0);
    assert_int_equal(observe(w)->offers[TRACED].noticed, 0);
    assert_int_equal(sim_world_advance(w, 880), 0);
    s = observe(w);
    assert_int_equal(s->nnodes, 0);
    assert_int_equal(s->offers[TRACED].noticed, 1);
    assert_int_equal(s->offers[OD].noticed, 0);
    f = launching(w, OD, 1);
    assert_int_equal(sim_world_resize(w, f), 0);
    fleet_plan_free(f);
    s = observe(w);
    assert_int_equal(s->nbooting, 0);
    assert_int_equal(s->offers[OD].unavailable, 0);
    sim_world_fleet_stats(w, &st);
    assert_int_equal(st.capacity_errs, 0);
    assert_int_equal(st.launches, 1);

    assert_int_equal(sim_world_advance(w, 120), 0);
    assert_int_equal(observe(w)->offers[TRACED].noticed, 0);
    f = launching(w, OD, 1);
    assert_int_equal(sim_world_resize(w, f), 0);
    fleet_plan_free(f);
    s = observe(w);
    assert_int_equal(s->nbooting, 1);
    assert_int_equal(s->booting[0].offer, OD);
    sim_world_free(w);
}

/*
 * The job runs on the traced spot node, which the trace takes at 1000 s; the notice comes 120 s
 * before, at 880. No periodic checkpoints. At 880 the job checkpoints (its saved progress is its
 * progress then), the node leaves the snapshot (not schedulable) and the job's row there is
 * empty, though it keeps running on it. At 1000 the node goes: the job is back at the progress
 * saved at 880 (it had gone past it), has lost 120 s of running, and holds no GPUs.
 */
static void sim_world_advance__notice_checkpoints_preemption_rolls_back(void **state)
{
    struct sim_world *w = market_world(1, TRACED, 0);
    const struct sim_job *job = sim_world_job(w, 0);
    const struct snapshot *s = observe(w);
    struct sim_fleet_stats st;
    double p879, saved;

    (void)state;
    assert_int_equal(s->nnodes, 1);
    assert_int_equal(s->nodes[0].offer, TRACED);
    assert_int_equal(s->nodes[0].preemptible, 1);
    place_job(w, 4);
    assert_int_equal(sim_world_advance(w, 879), 0);
    p879 = job->progress;
    assert_true(p879 > 0);
    assert_float_equal(job->ckpt_progress, 0, 0);

    assert_int_equal(sim_world_advance(w, 1), 0);
    saved = job->ckpt_progress;
    assert_true(saved >= p879);
    assert_float_equal(saved, job->progress, 0);
    s = observe(w);
    assert_int_equal(s->nnodes, 0);
    assert_int_equal(s->current->count[0], 0);
    assert_int_equal(sim_world_job_gpus(w, 0), 4);

    assert_int_equal(sim_world_advance(w, 119), 0);
    assert_true(job->progress > saved);
    assert_int_equal(job->preemptions, 0);
    assert_int_equal(sim_world_advance(w, 1), 0);
    assert_float_equal(job->progress, saved, 0);
    assert_float_equal(job->lost_s, 120, 0);
    assert_int_equal(job->preemptions, 1);
    assert_int_equal(sim_world_job_gpus(w, 0), 0);
    s = observe(w);
    assert_int_equal(s->nnodes, 0);
    assert_int_equal(s->nbooting, 0);
    assert_int_equal(s->njobs, 1);
    sim_world_fleet_stats(w, &st);
    assert_int_equal(st.preemptions, 1);
    assert_float_equal(st.lost_work_s, 120, 0);
    sim_world_free(w);
}

/*
 * The same preemption with no notice, and checkpoints every 100 s of running. The job starts at 0
 * and runs from 30 (its restart delay); it checkpoints at 130, 230, ..., 930. At 1000 the node
 * goes without warning: the job cannot checkpoint then, so it is back at what it saved at 930
 * and has lost 70 s of running, at most one checkpoint interval.
 */
static void sim_world_advance__periodic_checkpoints_bound_silent_loss(void **state)
{
    struct sim_world *w = market_world(1, SILENT, 100);
    const struct sim_job *job = sim_world_job(w, 0);
    double saved;

    (void)state;
    place_job(w, 4);
    assert_int_equal(sim_world_advance(w, 999), 0);
    saved = job->ckpt_progress;
    assert_true(saved > 0);
    assert_true(job->progress > saved);
    assert_int_equal(sim_world_advance(w, 1), 0);
    assert_int_equal(job->preemptions, 1);
    assert_float_equal(job->progress, saved, 0);
    assert_float_equal(job->lost_s, 70, 0);
    assert_true(job->lost_s <= 100);
    assert_int_equal(sim_world_job_gpus(w, 0), 0);
    sim_world_free(w);
}

/*
 * The job's own interval from the trace (its `checkpoint` column, 250 s) wins over the world's
 * (100 s): it runs from 30 and checkpoints at 280, 530 and 780, so the silent preemption at 1000
 * costs it 220 s of running; the snapshot shows the planner its 250 s.
 */
static void sim_world_advance__the_traces_interval_per_job(void **state)
{
    struct sim_world *w = market_world_of(wl_ckpt, 1, SILENT, 100);
    const struct sim_job *job = sim_world_job(w, 0);

    (void)state;
    assert_float_equal(observe(w)->jobs[0].checkpoint_s, 250, 0);
    place_job(w, 4);
    assert_int_equal(sim_world_advance(w, 1000), 0);
    assert_int_equal(job->preemptions, 1);
    assert_float_equal(job->lost_s, 220, 0);
    sim_world_free(w);
}

/* How each job takes a new configuration: the trace's reconfigure column where it says, else the
 * world's; and whether it declared its length, as the world says. */
static void sim_world_new__reconfigure_per_job(void **state)
{
    struct workload *t = NULL;
    struct error e;

    (void)state;
    assert_int_equal(workload_load(CASTOR_TEST_DATA "/workloads/reconfigure.csv", known, &t, &e),
                     0);
    for (int world = 0; world < 2; world++) {
        struct sim_config cfg = market_config(1, OD, 100);
        struct sim_world *w = NULL;

        cfg.reconfigure_restart = world;
        cfg.unknown_lengths = world;
        assert_int_equal(sim_world_new(&cfg, t, &w, &e), 0);
        assert_int_equal(sim_world_job(w, 0)->reconf_restart, 1); /* restart */
        assert_int_equal(sim_world_job(w, 1)->reconf_restart, world);
        assert_int_equal(sim_world_job(w, 2)->reconf_restart, 0); /* in_flight */
        for (int i = 0; i < 3; i++)
            assert_int_equal(sim_world_job(w, i)->length_known, !world);
        sim_world_free(w);
    }
    workload_free(t);
}

/* Releasing the node the job holds is ERR_INVAL and changes nothing: the launch in the same plan
 * does not happen, the node stays, the job keeps its GPUs. Once the job is off it, the same
 * release goes through. */
static void sim_world_resize__release_of_held_node_refused(void **state)
{
    struct sim_world *w = market_world(1, OD, 0);
    struct fleet_plan *f;
    struct sim_fleet_stats st;
    const struct snapshot *s;

    (void)state;
    place_job(w, 4);
    f = launching(w, OD, 1);
    f->release[0] = 1;
    assert_int_equal(sim_world_resize(w, f), ERR_INVAL);
    fleet_plan_free(f);
    s = observe(w);
    assert_int_equal(s->nnodes, 1);
    assert_int_equal(s->nbooting, 0);
    assert_int_equal(sim_world_job_gpus(w, 0), 4);
    sim_world_fleet_stats(w, &st);
    assert_int_equal(st.launches, 1);

    place_job(w, 0);
    f = launching(w, OD, 0);
    f->release[0] = 1;
    assert_int_equal(sim_world_resize(w, f), 0);
    fleet_plan_free(f);
    assert_int_equal(observe(w)->nnodes, 0);
    sim_world_free(w);
}

/*
 * The bill, worked out from the prices: an on-demand node ready at 0 ($4/h), another launched at
 * 0 (billed while it boots), both to 1800 s: 2 x $4 x 0.5 h = $4; a spot instance ($1/h) launched
 * at 0 and cancelled at 10 s pays the 60 s minimum: $1 / 60. $4.0166... in all. GPU-hours count
 * running time, not billed time: (0.5 + 0.5) h x 4 + 10 s x 4 = 4.0111...
 */
static void sim_world_fleet_stats__dollars_are_the_bill(void **state)
{
    struct sim_world *w = market_world(1, OD, 0);
    struct fleet_plan *f = launching(w, OD, 1);
    const struct snapshot *s;
    struct sim_fleet_stats st;
    int spot = -1;

    (void)state;
    f->launch[SPOT] = 1;
    assert_int_equal(sim_world_resize(w, f), 0);
    fleet_plan_free(f);
    assert_int_equal(sim_world_advance(w, 10), 0);
    s = observe(w);
    assert_int_equal(s->nbooting, 2);
    for (int b = 0; b < s->nbooting; b++)
        if (s->booting[b].offer == SPOT)
            spot = b;
    assert_true(spot >= 0);
    assert_int_equal(fleet_plan_new(s, &f), 0);
    f->cancel[spot] = 1;
    assert_int_equal(sim_world_resize(w, f), 0);
    fleet_plan_free(f);
    assert_int_equal(observe(w)->nbooting, 1);
    assert_int_equal(sim_world_advance(w, 1790), 0);
    sim_world_fleet_stats(w, &st);
    assert_float_equal(st.dollars, 2 * 4.0 * 0.5 + 1.0 * 60 / 3600, 1e-9);
    assert_float_equal(st.gpu_hours, 4.0 + 4 * 10.0 / 3600, 1e-9);
    assert_int_equal(st.launches, 3);
    assert_int_equal(st.preemptions, 0);
    assert_float_equal(st.min_gpu_price, 0.25, 1e-12);
    sim_world_free(w);
}

/* Model families: two cifar10 jobs (the second submitted at 120 s) on one node of 4 GPUs; the
 * first runs on 2 GPUs for 120 s. With families on, the second is seen with a model and an
 * exploration limit of 2 before it ever ran; with families off it is seen with neither. */
static void sim_world_observe__families_seed_later_jobs(void **state)
{
    struct workload *two = NULL;
    struct error e;
    static const char *const apps[] = {"cifar10", NULL};

    (void)state;
    assert_int_equal(workload_load(CASTOR_TEST_DATA "/workloads/two_cifar10.csv", apps, &two, &e),
                     0);
    for (int families = 0; families <= 1; families++) {
        struct sim_config cfg = {.profiles = CASTOR_DATADIR "/profiles",
                                 .model = &tput_model_pollux,
                                 .adaptive_batch = 1,
                                 .nodes = 1,
                                 .gpus_per_node = 4,
                                 .families = families};
        struct sim_world *w = NULL;
        const struct snapshot *s;
        struct alloc *plan = NULL;

        assert_int_equal(sim_world_new(&cfg, two, &w, &e), 0);
        s = observe(w);
        assert_int_equal(s->njobs, 1);
        assert_int_equal(alloc_new(1, s->current->nnodes, s->current->width, &plan), 0);
        assert_int_equal(alloc_add(plan, 0, 0, 2), 0);
        assert_int_equal(sim_world_apply(w, plan), 0);
        alloc_free(plan);
        assert_int_equal(sim_world_advance(w, 120), 0);
        s = observe(w);
        assert_int_equal(s->njobs, 2);
        assert_true(s->jobs[0].has_model);
        assert_int_equal(s->jobs[1].has_model, families);
        assert_int_equal(s->jobs[1].max_profiled_replicas, families ? 2 : 0);
        assert_int_equal(s->jobs[1].grad.sqr > 0, families); /* NONE has sqr 0 */
        sim_world_free(w);
    }
    workload_free(two);
}

/*
 * A quota of 8 GPUs over the on-demand and traced offers (4 a node): the snapshot shows both
 * capped with room for 2, then (one od launched) for 1; a plan that launches 1 of each (each
 * within its own room, 2 past the quota's) launches the first, and the room is asked again
 * before the second, which is not launched: no launch is refused (the market would refuse it,
 * test_market.c). A fixed cluster of 3 od nodes under it starts with the 2 the quota allows.
 */
static void sim_world_resize__quota_room_and_refusal(void **state)
{
    const double units[NOFFERS] = {[OD] = 4, [TRACED] = 4};
    const struct mkt_quota_spec q = {.name = "gpus", .limit = 8, .units = units};
    struct sim_config cfg = market_config(0, OD, 0);
    struct sim_world *w = NULL;
    struct fleet_plan *f;
    struct sim_fleet_stats st;
    const struct snapshot *s;
    struct error e;

    (void)state;
    cfg.quotas = &q;
    cfg.nquotas = 1;
    assert_int_equal(sim_world_new(&cfg, wl, &w, &e), 0);
    s = observe(w);
    assert_int_equal(s->offers[OD].capped, 1);
    assert_int_equal(s->offers[OD].room, 2);
    assert_int_equal(s->offers[SPOT].capped, 0);
    f = launching(w, OD, 1);
    assert_int_equal(sim_world_resize(w, f), 0);
    fleet_plan_free(f);
    s = observe(w);
    assert_int_equal(s->offers[OD].room, 1);
    assert_int_equal(s->offers[TRACED].room, 1);
    f = launching(w, OD, 1);
    f->launch[TRACED] = 1;
    assert_int_equal(sim_world_resize(w, f), 0);
    fleet_plan_free(f);
    s = observe(w);
    assert_int_equal(s->nbooting, 2);
    assert_int_equal(s->offers[TRACED].unavailable, 0);
    assert_int_equal(s->offers[TRACED].room, 0);
    assert_int_equal(s->offers[OD].room, 0);
    sim_world_fleet_stats(w, &st);
    assert_int_equal(st.launches, 2);
    assert_int_equal(st.quota_errs, 0); /* asked again before the launch: none refused */
    assert_int_equal(st.capacity_errs, 0);
    sim_world_free(w);

    cfg.nodes = 3;
    assert_int_equal(sim_world_new(&cfg, wl, &w, &e), 0);
    s = observe(w);
    assert_int_equal(s->nnodes, 2);
    assert_int_equal(s->offers[OD].room, 0);
    sim_world_free(w);
}

/* The profiles were measured on at most 4 GPUs per node and 64 GPUs in all: a world whose nodes
 * are larger (a fixed cluster of 8-GPU nodes, or a market offering them) is refused when it is
 * made, naming the offer, instead of stopping the run with ERR_RANGE at the first job placed
 * there; on a fixed cluster of 80 one-GPU nodes the jobs' replica limit is 64 as in a fleet (it
 * was none: pollux grew a job to 80 replicas and the run stopped), and a gang job asking for 100
 * GPUs is refused at its line. */
static void sim_world_new__nodes_and_jobs_past_the_profiles(void **state)
{
    static const struct mkt_offer_spec big[] = {{.name = "od", T4X4, .price = 4.0},
                                                {.name = "p3.16xlarge",
                                                 .type = "p3",
                                                 .zone = "z",
                                                 .gpu = "v100",
                                                 .gpus = 8,
                                                 .spot = 1,
                                                 .price = 7.0}};
    struct sim_config cfg = {.profiles = CASTOR_DATADIR "/profiles",
                             .model = &tput_model_pollux,
                             .adaptive_batch = 1,
                             .nodes = 2,
                             .gpus_per_node = 8};
    struct sim_world *w = NULL;
    struct workload *wide = NULL;
    const struct snapshot *s;
    struct error e = {0};

    (void)state;
    assert_int_equal(sim_world_new(&cfg, wl, &w, &e), ERR_RANGE);
    assert_null(w);
    assert_non_null(strstr(e.msg, "8 GPUs per node"));
    cfg = market_config(0, 0, 600);
    cfg.offers = big;
    cfg.noffers = 2;
    assert_int_equal(sim_world_new(&cfg, wl, &w, &e), ERR_RANGE);
    assert_null(w);
    assert_non_null(strstr(e.msg, "p3.16xlarge"));
    cfg = (struct sim_config){.profiles = CASTOR_DATADIR "/profiles",
                              .model = &tput_model_pollux,
                              .adaptive_batch = 1,
                              .nodes = 80,
                              .gpus_per_node = 1};
    assert_int_equal(sim_world_new(&cfg, wl, &w, &e), 0);
    s = observe(w);
    assert_int_equal(s->njobs, 1);
    assert_int_equal(s->jobs[0].max_replicas, 64);
    sim_world_free(w);
    w = NULL;
    assert_int_equal(workload_load(CASTOR_TEST_DATA "/workloads/wide_gang.csv", known, &wide, &e),
                     0);
    cfg.adaptive_batch = 0;
    cfg.gang = 1;
    assert_int_equal(sim_world_new(&cfg, wide, &w, &e), ERR_RANGE);
    assert_null(w);
    assert_int_equal(e.line, 2);
    workload_free(wide);
}

/* Under a gang scheduler a job runs at its trace's batch split over its num_replicas: cifar10's
 * 128 over 8 GPUs is 16 a GPU, below the 32 its profile was measured at, so the world is refused
 * at that job's line (it was made, and the run stopped with ERR_RANGE when the job started);
 * 256 over 4 (64 a GPU) runs, and an adaptive policy, which chooses the batch, takes both. */
static void sim_world_new__gang_batch_below_the_profile(void **state)
{
    struct sim_config cfg = {.profiles = CASTOR_DATADIR "/profiles",
                             .model = &tput_model_pollux,
                             .nodes = 2,
                             .gpus_per_node = 4,
                             .gang = 1};
    struct workload *t = NULL;
    struct sim_world *w = NULL;
    struct error e = {0};

    (void)state;
    assert_int_equal(
        workload_load(CASTOR_TEST_DATA "/workloads/gang_small_batch.csv", known, &t, &e), 0);
    assert_int_equal(sim_world_new(&cfg, t, &w, &e), ERR_RANGE);
    assert_null(w);
    assert_int_equal(e.line, 3);
    assert_non_null(strstr(e.msg, "small-1"));
    cfg.gang = 0;
    cfg.adaptive_batch = 1;
    assert_int_equal(sim_world_new(&cfg, t, &w, &e), 0);
    sim_world_free(w);
    workload_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sim_world__fixed_cluster_unchanged),
        cmocka_unit_test(sim_world_resize__launch_boots_then_ready),
        cmocka_unit_test(sim_world_resize__capacity_marks_offer_unavailable),
        cmocka_unit_test(sim_world_resize__slot_limit_is_not_a_capacity_refusal),
        cmocka_unit_test(sim_world_new__starts_with_what_capacity_allows),
        cmocka_unit_test(sim_world_advance__notice_checkpoints_preemption_rolls_back),
        cmocka_unit_test(sim_world_advance__periodic_checkpoints_bound_silent_loss),
        cmocka_unit_test(sim_world_advance__the_traces_interval_per_job),
        cmocka_unit_test(sim_world_new__reconfigure_per_job),
        cmocka_unit_test(sim_world_resize__release_of_held_node_refused),
        cmocka_unit_test(sim_world_fleet_stats__dollars_are_the_bill),
        cmocka_unit_test(sim_world_resize__quota_room_and_refusal),
        cmocka_unit_test(sim_world_observe__families_seed_later_jobs),
        cmocka_unit_test(sim_world_new__nodes_and_jobs_past_the_profiles),
        cmocka_unit_test(sim_world_new__gang_batch_below_the_profile),
    };

    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
