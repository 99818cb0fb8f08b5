/* test_fleet.c: the fleet policies (castor's planner, Pollux's autoscaler, the fixed fleet) on
 * small hand-checked markets, plan_decide_fleet's rejection of a bad answer, and a property test:
 * on thousands of random fleets every answer passes the rules of a plan and of a fleet plan. Each
 * expected answer is worked out in the comment above its test. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "plan/decide.h"
#include "policies/fleet.h"
#include "policies/small_world.h"
#include "util/error.h"

#define MAXO 4
#define MAXN 12
#define MAXB 4
#define MAXJ 8
#define OLD (NOW - 3600) /* launched an hour ago: past the minimum billed time */

/* A hand-built fleet: fill offers, nodes, booting and jobs, then call fw_ready. */
struct fw {
    struct snap_offer offers[MAXO];
    struct snap_node nodes[MAXN];
    struct snap_booting booting[MAXB];
    struct snap_job jobs[MAXJ];
    struct snapshot s;
    struct alloc *cur, *out;
    struct fleet_plan *f;
};

static int fw_setup(void **state)
{
    struct fw *w = test_calloc(1, sizeof(*w));

    assert_non_null(w);
    *state = w;
    return 0;
}

static int fw_teardown(void **state)
{
    struct fw *w = *state;

    alloc_free(w->cur);
    alloc_free(w->out);
    fleet_plan_free(w->f);
    test_free(w);
    return 0;
}

/* The snapshot of the first no offers, nn nodes, nb booting instances and nj jobs, holding
 * nothing (set rows of w->cur after), with an empty fleet plan sized for it. */
static void fw_ready(struct fw *w, int no, int nn, int nb, int nj)
{
    int gpus = 0;

    for (int k = 0; k < nn; k++)
        gpus += w->nodes[k].gpus;
    alloc_free(w->cur);
    alloc_free(w->out);
    fleet_plan_free(w->f);
    assert_int_equal(alloc_new(nj, nn > 0 ? nn : 1, gpus > 0 ? gpus : 1, &w->cur), 0);
    assert_int_equal(alloc_new(nj, nn > 0 ? nn : 1, gpus > 0 ? gpus : 1, &w->out), 0);
    w->s = (struct snapshot){.now = NOW,
                             .nnodes = nn,
                             .nodes = w->nodes,
                             .njobs = nj,
                             .jobs = w->jobs,
                             .current = w->cur,
                             .noffers = no,
                             .offers = w->offers,
                             .nbooting = nb,
                             .booting = w->booting,
                             .min_billed_s = 60};
    assert_int_equal(fleet_plan_new(&w->s, &w->f), 0);
}

static void offer(struct fw *w, int o, int spot, double price, double rate)
{
    w->offers[o] = (struct snap_offer){.name = spot ? "spot" : "od",
                                       .gpus = 4,
                                       .spot = spot,
                                       .price = price,
                                       .preempt_rate = rate};
}

static void node(struct fw *w, int k, int o, double launched)
{
    w->nodes[k] = (struct snap_node){.gpus = w->offers[o].gpus,
                                     .preemptible = w->offers[o].spot,
                                     .offer = o,
                                     .launched = launched};
}

/* Job j with the small world's batch limits (840, fixed) and throughput model tp, measured on up
 * to `profiled` replicas (so that it may explore 2 x profiled). */
static void job(struct fw *w, int j, const struct tput_params *tp, int profiled)
{
    w->jobs[j] = (struct snap_job){.name = "j",
                                   .has_model = 1,
                                   .tput = *tp,
                                   .grad = {.sqr = 0.0, .var = 1.0},
                                   .lim = {.init_bsz = 840},
                                   .max_profiled_replicas = profiled};
}

/* One round of the decide step with a fresh allocation policy called pol. */
static int decide(struct fw *w, struct fleet_policy *fp, const char *pol)
{
    struct policy_config pc = {0};
    struct policy p;
    int rc;

    assert_int_equal(policy_new(pol, &pc, &p), 0);
    rc = plan_decide_fleet(&w->s, fp, &p, 7, w->out, w->f);
    policy_free(&p);
    return rc;
}

/* One round with a fresh instance of the fleet policy called name. */
static int decide_once(struct fw *w, const char *name, const struct fleet_config *cfg,
                       const char *pol)
{
    struct fleet_policy fp;
    int rc;

    assert_int_equal(fleet_new(name, cfg, &fp), 0);
    rc = decide(w, &fp, pol);
    fleet_free(&fp);
    return rc;
}

static void assert_launch(const struct fw *w, const int *want)
{
    for (int o = 0; o < w->s.noffers; o++)
        if (w->f->launch[o] != want[o])
            fail_msg("launch[%d] is %d, not %d", o, w->f->launch[o], want[o]);
}

static void assert_release(const struct fw *w, const int *want)
{
    for (int k = 0; k < w->s.nnodes; k++)
        if (w->f->release[k] != want[k])
            fail_msg("release[%d] is %d, not %d", k, w->f->release[k], want[k]);
}

/*
 * castor prices an offer per GPU-hour of useful work: price / gpus / (1 - rate x (30 + ckpt / 2)
 * / 3600), with a restart of 30 s and half the jobs' mean checkpoint interval lost per
 * preemption. Spot: $2/h for 4 GPUs, on-demand: $4/h for 4 GPUs (no preemptions, $1/GPU-h); the
 * job checkpoints every 1140 s, so a preemption costs 30 + 570 = 600 s = 1/6 h and spot's price is
 * 0.5 / (1 - rate / 6). It equals on-demand's 1 at rate = 3 per node-hour: at 0 and 2.9 (0.968)
 * spot is cheaper, at 3.1 (1.034) and 5 (3.0) on-demand is. The job (perfect scaling, its owner
 * allows 4 GPUs) wants one node: one launch, on the cheaper offer.
 */
static void castor_fleet__spot_or_on_demand_flips_at_break_even(void **state)
{
    struct fw *w = *state;
    struct fleet_config cfg = {.mode = FLEET_EFFICIENCY};
    const double rates[] = {0, 2.9, 3.1, 5};
    const int spot_wins[] = {1, 1, 0, 0};

    for (int i = 0; i < 4; i++) {
        offer(w, 0, 1, 2.0, rates[i]);
        offer(w, 1, 0, 4.0, 0);
        job(w, 0, &perfect, 4);
        w->jobs[0].max_replicas = 4;
        w->jobs[0].checkpoint_s = 1140;
        fw_ready(w, 2, 0, 0, 1);
        assert_int_equal(decide_once(w, "castor", &cfg, "castor"), 0);
        assert_launch(w, spot_wins[i] ? (int[]){1, 0} : (int[]){0, 1});
    }
}

/* The market of castor_fleet__spot_nodes_go_where_spot_costs_more at `rate` preemptions per
 * node-hour on spot: the job (perfect, 4 GPUs, a checkpoint every 1140 s), a spot node and an
 * on-demand one (nodes 0 and 1: set nn). */
static void spot_job_world(struct fw *w, double rate)
{
    offer(w, 0, 1, 2.0, rate);
    offer(w, 1, 0, 4.0, 0);
    job(w, 0, &perfect, 4);
    w->jobs[0].max_replicas = 4;
    w->jobs[0].checkpoint_s = 1140;
    node(w, 0, 0, OLD);
    node(w, 1, 1, OLD);
}

/*
 * Spot dearer than on-demand for every job (the market above at 5 preemptions per node-hour:
 * $3.0 against $1 per useful GPU-hour) while the job runs on a spot node it holds: it moves to
 * on-demand and the spot node goes. Round 1: an on-demand node is launched, the job stays on the
 * spot node while it boots. Round 2, the on-demand node ready: the job moves there, the spot node
 * (in use until now) stays this round. Round 3: the idle spot node is released (patience 1).
 * (Taken as one market for all, the job kept running on the spot node, losing 55% of its time
 * to preemptions, and nothing was launched.) Near the break-even (3.1 preemptions per node-hour:
 * spot $1.034, within 10% of on-demand's $1) the job stays on its spot node and nothing is
 * launched: prices that wander across the break-even do not move it back and forth.
 */
static void castor_fleet__spot_nodes_go_where_spot_costs_more(void **state)
{
    struct fw *w = *state;
    struct fleet_config cfg = {.mode = FLEET_EFFICIENCY, .patience = 1};
    struct fleet_policy fp;
    const int on[3] = {0, 0, 1}; /* the node the job holds at each round */

    spot_job_world(w, 3.1);
    fw_ready(w, 2, 1, 0, 1);
    set_row(w->cur, 0, (int[]){0, 0, 0, 0}, 4);
    assert_int_equal(decide_once(w, "castor", &cfg, "castor"), 0);
    assert_launch(w, (int[]){0, 0});
    assert_int_equal(alloc_on_node(w->out, 0, 0), 4);

    assert_int_equal(fleet_new("castor", &cfg, &fp), 0);
    for (int round = 0; round < 3; round++) {
        spot_job_world(w, 5.0);
        fw_ready(w, 2, round ? 2 : 1, 0, 1);
        set_row(w->cur, 0, (int[]){on[round], on[round], on[round], on[round]}, 4);
        assert_int_equal(decide(w, &fp, "castor"), 0);
        assert_launch(w, round ? (int[]){0, 0} : (int[]){0, 1});
        assert_int_equal(alloc_on_node(w->out, 0, round ? 1 : 0), 4);
        if (round)
            assert_release(w, round == 2 ? (int[]){1, 0} : (int[]){0, 0});
    }
    fleet_free(&fp);
}

/* Offers at $1, $2 and $4 per node (no preemptions): the cheapest is unavailable (a launch was
 * just refused), so the one launch goes to the $2 offer; with that one unavailable too, to the
 * $4 one; with none available, nothing is launched and the answer is still valid. The same where
 * the prices are unknown (NAN: the cloud could not price them) instead: an unpriced offer is
 * never launched, however cheap it may be, rather than weighed as free. */
static void castor_fleet__unavailable_offer_never_launched(void **state)
{
    struct fw *w = *state;
    struct fleet_config cfg = {.mode = FLEET_EFFICIENCY};
    const int want[3][3] = {{0, 1, 0}, {0, 0, 1}, {0, 0, 0}};

    for (int unpriced = 0; unpriced < 2; unpriced++)
        for (int i = 0; i < 3; i++) {
            offer(w, 0, 1, 1.0, 0);
            offer(w, 1, 1, 2.0, 0);
            offer(w, 2, 0, 4.0, 0);
            for (int o = 0; o <= i; o++) {
                if (unpriced)
                    w->offers[o].price = NAN;
                else
                    w->offers[o].unavailable = 1;
            }
            job(w, 0, &perfect, 4);
            w->jobs[0].max_replicas = 4;
            fw_ready(w, 3, 0, 0, 1);
            assert_int_equal(decide_once(w, "castor", &cfg, "castor"), 0);
            assert_launch(w, want[i]);
        }
}

/* Two jobs (small_world.h): a scales perfectly (each GPU adds about 1 to its speedup) and may
 * explore 6 GPUs (measured on 3); b is sync-bound (speedups 1, 0.59, 0.66, 0.69 on 1 to 4 GPUs:
 * every GPU past the first loses). On-demand nodes of 4 GPUs. */
static void sizing_world(struct fw *w)
{
    offer(w, 0, 0, 4.0, 0);
    job(w, 0, &perfect, 3);
    job(w, 1, &syncbound, 4);
}

/*
 * Efficiency mode at the default value: a's GPUs each save about as many hours as they cost
 * GPU-hours (perfect scaling: the GPU-hours stay the same, so any value pays), up to its limit
 * of 6; b's second GPU makes it slower, so b stays at 1. Packing 6 + 1 GPUs into 4-GPU nodes: a
 * fills one node, its remaining 2 and b's 1 share a second: 2 nodes (not 3, as rounding each job
 * up would give).
 */
static void castor_fleet__efficiency_sizes_by_gain(void **state)
{
    struct fw *w = *state;
    struct fleet_config cfg = {.mode = FLEET_EFFICIENCY};

    sizing_world(w);
    fw_ready(w, 1, 0, 0, 2);
    assert_int_equal(decide_once(w, "castor", &cfg, "castor"), 0);
    assert_launch(w, (int[]){2});
}

/*
 * A job that scales sublinearly (the published model, batch fixed at 840, compute 0.001 s per
 * sample, sync 0.14 s on one or two nodes): its step on r GPUs is 0.84 / r + 0.14 s (0.84 s on
 * one, which does not synchronise), so its speedups on 1 to 5 GPUs are 1, 1.5, 2, 2.4 and 2.73.
 * Going from 1 to 2 GPUs saves 1 - 1/1.5 = 1/3 of its one-GPU time and costs 2/1.5 - 1 = 1/3
 * more GPU-time: one hour saved per GPU-hour; from 2 to 3 also 1 (1/6 for 1/6); from 3 to 4, 0.5;
 * from 3 to 5, 0.4. Nodes of 2 GPUs at $2/h: $1 per GPU-hour. At $1.5 per job-hour the first
 * two moves pay (1.5 >= 1) and the third does not (0.75): 3 GPUs, two nodes. At $0.5 per
 * job-hour nothing pays: 1 GPU, one node.
 */
static const struct tput_params sublinear = {.ops = &tput_model_pollux,
                                             .theta = {1e-8, 0.001, 0.14, 1e-8, 0.14, 1e-8, 1.0}};

static void castor_fleet__value_decides_sublinear_growth(void **state)
{
    struct fw *w = *state;
    struct fleet_config cfg = {.mode = FLEET_EFFICIENCY, .value = 1.5};

    offer(w, 0, 0, 2.0, 0);
    w->offers[0].gpus = 2;
    job(w, 0, &sublinear, 4);
    fw_ready(w, 1, 0, 0, 1);
    assert_int_equal(decide_once(w, "castor", &cfg, "castor"), 0);
    assert_launch(w, (int[]){2});

    cfg.value = 0.5;
    assert_int_equal(decide_once(w, "castor", &cfg, "castor"), 0);
    assert_launch(w, (int[]){1});
}

/*
 * The same two jobs and the same 2 wanted nodes, counted against what is there: one ready node
 * (old) -> one launch; one ready node and one booting -> nothing; two ready nodes and one booting
 * -> the booting one is a surplus: kept on the first round (a surplus waits a round), cancelled
 * on the second (nothing released: both ready nodes are wanted), and b gets one GPU, its best.
 */
static void castor_fleet__counts_ready_and_booting(void **state)
{
    struct fw *w = *state;
    struct fleet_config cfg = {.mode = FLEET_EFFICIENCY, .patience = 2};
    struct fleet_policy fp;

    sizing_world(w);
    node(w, 0, 0, OLD);
    fw_ready(w, 1, 1, 0, 2);
    assert_int_equal(decide_once(w, "castor", &cfg, "castor"), 0);
    assert_launch(w, (int[]){1});

    w->booting[0] = (struct snap_booting){.offer = 0, .launched = NOW - 10};
    fw_ready(w, 1, 1, 1, 2);
    assert_int_equal(decide_once(w, "castor", &cfg, "castor"), 0);
    assert_true(fleet_plan_empty(w->f));

    node(w, 1, 0, OLD);
    fw_ready(w, 1, 2, 1, 2);
    assert_int_equal(fleet_new("castor", &cfg, &fp), 0);
    assert_int_equal(decide(w, &fp, "castor"), 0);
    assert_true(fleet_plan_empty(w->f));
    assert_int_equal(decide(w, &fp, "castor"), 0);
    fleet_free(&fp);
    assert_launch(w, (int[]){0});
    assert_release(w, (int[]){0, 0});
    assert_int_equal(w->f->cancel[0], 1);
    assert_int_equal(w->out->count[1], 1);
}

/*
 * A noticed node (draining, not among the nodes) is held until it goes, and counts against
 * max_nodes: the two jobs of sizing_world want 2 nodes; with one ready, one noticed and max_nodes
 * 2 the fleet is full and castor launches nothing (the world would refuse the launch); with
 * max_nodes 3 it launches the one missing.
 */
static void castor_fleet__noticed_nodes_count_against_max_nodes(void **state)
{
    struct fw *w = *state;
    struct fleet_config cfg = {.mode = FLEET_EFFICIENCY, .max_nodes = 2};

    sizing_world(w);
    w->offers[0].noticed = 1;
    node(w, 0, 0, OLD);
    fw_ready(w, 1, 1, 0, 2);
    assert_int_equal(decide_once(w, "castor", &cfg, "castor"), 0);
    assert_launch(w, (int[]){0});
    assert_release(w, (int[]){0});

    cfg.max_nodes = 3;
    assert_int_equal(decide_once(w, "castor", &cfg, "castor"), 0);
    assert_launch(w, (int[]){1});
}

/* Budget mode with a cap of budget $/h on the two jobs of sizing_world, a measured on 4 (so it
 * may explore 8 GPUs): the nodes castor launches. */
static int budget_nodes(struct fw *w, double budget)
{
    struct fleet_config cfg = {.mode = FLEET_BUDGET, .budget = budget};

    sizing_world(w);
    w->jobs[0].max_profiled_replicas = 4;
    fw_ready(w, 1, 0, 0, 2);
    assert_int_equal(decide_once(w, "castor", &cfg, "castor"), 0);
    return w->f->launch[0];
}

/*
 * Budget mode, on-demand at $4/h for 4 GPUs ($1 per GPU-hour, no preemptions). Each job starts at
 * no GPU; a first GPU is worth the most, then a's GPUs (perfect scaling); b never takes a second
 * (it would be slower). Moves are kept while the nodes they pack into cost at most the budget.
 * $8/h: two nodes (a 7 and b 1, or a 8). $12/h: a reaches its limit 8 and b has 1: 9 GPUs, three
 * nodes, $12/h. In both the nodes asked for cost no more than the budget.
 */
static void castor_fleet__budget_caps_the_fleet(void **state)
{
    struct fw *w = *state;

    assert_int_equal(budget_nodes(w, 8), 2);
    assert_int_equal(budget_nodes(w, 12), 3);
}

/*
 * The budget caps the nodes' listed prices: spot nodes of 4 GPUs at $4/h losing 0.6 preemptions
 * per node-hour (the jobs checkpoint hourly: 0.6 x (30 + 1800) / 3600 = 30.5% of their time)
 * still cost $4/h each, so $12/h rents three of them (a 8 GPUs, b 1), not the two that their
 * price per useful hour ($5.76) would allow.
 */
static void castor_fleet__budget_caps_listed_prices(void **state)
{
    struct fw *w = *state;
    struct fleet_config cfg = {.mode = FLEET_BUDGET, .budget = 12};

    sizing_world(w);
    offer(w, 0, 1, 4.0, 0.6);
    w->jobs[0].max_profiled_replicas = 4;
    fw_ready(w, 1, 0, 0, 2);
    assert_int_equal(decide_once(w, "castor", &cfg, "castor"), 0);
    assert_launch(w, (int[]){3});
}

/*
 * The budget counts whole nodes, not GPUs: $5/h buys one node ($4/h), which holds a (3 GPUs) and
 * b (1); 5 GPUs would need two nodes, $8/h. $1.5/h buys no node at all, so no job gets a GPU
 * (each starts at none in budget mode).
 */
static void castor_fleet__budget_never_exceeded_by_packing(void **state)
{
    struct fw *w = *state;
    const double budgets[] = {5, 1.5};
    const int nodes[] = {1, 0};

    for (int i = 0; i < 2; i++) {
        int n = budget_nodes(w, budgets[i]);

        if (n * w->offers[0].price > budgets[i])
            fail_msg("budget $%g/h: %d nodes at $%g/h rented", budgets[i], n, w->offers[0].price);
        assert_int_equal(n, nodes[i]);
    }
}

/*
 * The budget caps what the nodes held cost at their own listed prices, not at the best offer's:
 * three nodes of a $5/h offer are held ($15/h) while a $4/h offer is the cheapest; a may explore
 * 8 GPUs (measured on 4), so a 8 and b 1 would fill the three, but at $12/h only two nodes at
 * $5/h fit, so with patience 1 one node goes. Priced at $4 each, the three fitted $12/h, nothing
 * went and the fleet kept costing $15/h (on t4.yaml, in
 * budget mode at $20/h, 14 nodes of us-east-1a at $1.486/h, $20.80/h, for the hour us-east-1b was
 * cheaper).
 */
static void castor_fleet__budget_prices_held_nodes_at_their_own_offers(void **state)
{
    struct fw *w = *state;
    struct fleet_config cfg = {.mode = FLEET_BUDGET, .budget = 12, .patience = 1};
    int released = 0;

    sizing_world(w);
    w->jobs[0].max_profiled_replicas = 4;
    offer(w, 1, 0, 5.0, 0);
    for (int k = 0; k < 3; k++)
        node(w, k, 1, OLD);
    fw_ready(w, 2, 3, 0, 2);
    assert_int_equal(decide_once(w, "castor", &cfg, "castor"), 0);
    assert_launch(w, (int[]){0, 0});
    for (int k = 0; k < 3; k++)
        released += w->f->release[k];
    assert_int_equal(released, 1);
}

/* One deadline-mode round for the perfect job below (measured on `profiled` replicas, at most
 * maxr, 0: no limit; deadline due seconds away) on a spot ($2, 0.6 preemptions per node-hour) and
 * an on-demand ($4) offer of 4-GPU nodes booting in 170 s: the nodes launched must be want. */
static void deadline_round_room(struct fw *w, int profiled, int maxr, double due, int spot_room,
                                const int *want)
{
    struct fleet_config cfg = {.mode = FLEET_DEADLINE};

    offer(w, 0, 1, 2.0, 0.6);
    offer(w, 1, 0, 4.0, 0);
    w->offers[0].boot_s = w->offers[1].boot_s = 170;
    w->offers[0].capped = spot_room >= 0;
    w->offers[0].room = spot_room;
    job(w, 0, &perfect, profiled);
    w->jobs[0].max_replicas = maxr;
    w->jobs[0].checkpoint_s = 600;
    w->jobs[0].progress_target = 1190.476;
    w->jobs[0].deadline = NOW + due;
    fw_ready(w, 2, 0, 0, 1);
    assert_int_equal(decide_once(w, "castor", &cfg, "pollux"), 0);
    assert_launch(w, want);
}

static void deadline_round(struct fw *w, int profiled, int maxr, double due, const int *want)
{
    deadline_round_room(w, profiled, maxr, due, -1, want);
}

/*
 * Deadline mode. The perfect job trains at 1000 samples/s per GPU with M0 = 840: 1000 / 840
 * iterations/s per GPU; 1190.476 iterations left take 1000 s on one GPU. Its deadline is 1460 s
 * away; the plan may count on 80% of what remains after a restart (30 s) and a boot (170 s):
 * (1460 - 200) x 0.8 = 1008 s. Spot ($2 per 4-GPU node) loses 0.6 x (30 + 600 / 2) / 3600 =
 * 5.5% of its time to preemptions, so one spot GPU takes 1000 / 0.945 = 1058 s: late; two take
 * 529 s. On-demand ($4) loses nothing: one GPU, 1000 s, in time.
 *  - owner allows 2 GPUs: spot makes it with 2, so castor launches one spot node;
 *  - owner allows 1 GPU: only on-demand makes it, so castor launches one on-demand node;
 *  - the deadline already passed: nothing makes it, so the job gets all it may use where nothing
 *    is lost to preemptions: one on-demand node.
 */
static void castor_fleet__deadline_picks_the_market(void **state)
{
    struct fw *w = *state;

    deadline_round(w, 4, 2, 1460, (int[]){1, 0});
    deadline_round(w, 4, 1, 1460, (int[]){0, 1});
    deadline_round(w, 4, 1, -10, (int[]){0, 1});
    /* spot would make it with 2 GPUs, but its quotas have no room: one on-demand GPU makes it
     * (with room for a node, spot as before) */
    deadline_round_room(w, 4, 2, 1460, 0, (int[]){0, 1});
    deadline_round_room(w, 4, 2, 1460, 1, (int[]){1, 0});
}

/*
 * Deadline mode with two such jobs on nodes of one GPU (the markets of deadline_round): job 0 may
 * use 1 GPU, so only on-demand makes it (1000 s of 1008) and the two markets are sized apart;
 * job 1 may use 2, which spot makes (529 s). With spot's quotas leaving room for one node (one
 * GPU), job 1's 2 spot GPUs do not fit: it is bound to on-demand, where 1 GPU makes it and the
 * greedy then gives it its second (perfect scaling pays at any value): three on-demand nodes,
 * none on spot. (Bound to spot, it would get the one spot node there is room for.) With room
 * for 2: two spot nodes and job 0's on-demand one.
 */
static void castor_fleet__deadline_market_within_its_quota(void **state)
{
    struct fw *w = *state;
    struct fleet_config cfg = {.mode = FLEET_DEADLINE};
    const int room[2] = {1, 2};
    const int want[2][2] = {{0, 3}, {2, 1}};

    for (int i = 0; i < 2; i++) {
        offer(w, 0, 1, 0.5, 0.6);
        offer(w, 1, 0, 1.0, 0);
        w->offers[0].gpus = w->offers[1].gpus = 1;
        w->offers[0].boot_s = w->offers[1].boot_s = 170;
        w->offers[0].capped = 1;
        w->offers[0].room = room[i];
        for (int j = 0; j < 2; j++) {
            job(w, j, &perfect, 4);
            w->jobs[j].max_replicas = j + 1;
            w->jobs[j].checkpoint_s = 600;
            w->jobs[j].progress_target = 1190.476;
            w->jobs[j].deadline = NOW + 1460;
        }
        fw_ready(w, 2, 0, 0, 2);
        assert_int_equal(decide_once(w, "castor", &cfg, "pollux"), 0);
        assert_launch(w, want[i]);
    }
}

/*
 * A job bound to spot by its deadline keeps spot first when spot's quota cannot hold everyone.
 * The deadline job of deadline_round (2 spot GPUs make it) and job 1, without a deadline, which
 * holds the one spot node the quota allows, all 4 of its GPUs. Job 0 keeps 2 of them; job 1
 * stays on the other 2 ((1.5 + 2 x 0.529) / 2 = 1.28 per unit of work against (1.5 + 4) / 4 =
 * 1.38 on on-demand): nothing is launched. (Job 1 first, as the job holding the node, would
 * keep all 4 and send the deadline job to an on-demand node.)
 */
static void castor_fleet__deadline_job_keeps_spot_first(void **state)
{
    struct fw *w = *state;
    struct fleet_config cfg = {.mode = FLEET_DEADLINE};

    offer(w, 0, 1, 2.0, 0.6);
    offer(w, 1, 0, 4.0, 0);
    w->offers[0].boot_s = w->offers[1].boot_s = 170;
    w->offers[0].capped = 1;
    w->offers[0].room = 0;
    for (int j = 0; j < 2; j++) {
        job(w, j, &perfect, 4);
        w->jobs[j].checkpoint_s = 600;
        w->jobs[j].max_replicas = j ? 4 : 2;
    }
    w->jobs[0].progress_target = 1190.476;
    w->jobs[0].deadline = NOW + 1460;
    node(w, 0, 0, OLD);
    fw_ready(w, 2, 1, 0, 2);
    set_row(w->cur, 1, (int[]){0, 0, 0, 0}, 4);
    assert_int_equal(decide_once(w, "castor", &cfg, "pollux"), 0);
    assert_launch(w, (int[]){0, 0});
    assert_true(alloc_on_node(w->out, 0, 0) > 0);
}

/*
 * Deadline mode sizes the fleet for a job's whole need, beyond what its exploration allows yet.
 * The perfect job of the test above, measured on 1 replica only (its exploration allows 2): r
 * spot GPUs take 1000 / (0.945 r) s, on-demand ones 1000 / r s. Deadline 575 s away: the plan may
 * count on (575 - 200) x 0.8 = 300 s, which 4 spot GPUs make (264.6 s) and 3 do not (352.7 s): one
 * spot node. Deadline 375 s away: 140 s, which 8 spot GPUs make (132.3 s), 7 not (151.2 s): two
 * spot nodes. Counting only up to its exploration's 2 GPUs, it would be late everywhere and get an
 * on-demand node for the 2 it may use now.
 */
static void castor_fleet__deadline_sizes_beyond_exploration(void **state)
{
    struct fw *w = *state;

    deadline_round(w, 1, 0, 575, (int[]){1, 0});
    deadline_round(w, 1, 0, 375, (int[]){2, 0});
}

/*
 * A job with a deadline and no model yet: nothing says what it needs, so deadline mode rents what
 * its owner asked for (6 GPUs: two 4-GPU nodes) on on-demand, where no preemption can cost it a
 * start before it is measured, though spot is cheaper (the markets of deadline_round). Asking for
 * one GPU, it gets the one GPU of a job without a model, on the cheaper market: one spot node.
 */
static void castor_fleet__deadline_unmeasured_job_gets_its_request(void **state)
{
    struct fw *w = *state;
    struct fleet_config cfg = {.mode = FLEET_DEADLINE};

    for (int req = 6; req >= 1; req -= 5) {
        offer(w, 0, 1, 2.0, 0.6);
        offer(w, 1, 0, 4.0, 0);
        job(w, 0, &perfect, 0);
        w->jobs[0].has_model = 0;
        w->jobs[0].req_replicas = req;
        w->jobs[0].checkpoint_s = 600;
        w->jobs[0].deadline = NOW + 1460;
        fw_ready(w, 2, 0, 0, 1);
        assert_int_equal(decide_once(w, "castor", &cfg, "pollux"), 0);
        assert_launch(w, req == 6 ? (int[]){0, 2} : (int[]){1, 0});
    }
}

/*
 * Each job's market by its own checkpoint interval (no notice is credited: a preemption loses the
 * restart and half an interval). Spot $2 per 4-GPU node at 2 preemptions per node-hour, on-demand
 * $4 ($1 per GPU-hour). Job 0 checkpoints every 60 s: spot loses 2 x (30 + 30) / 3600 = 3.3% and
 * costs 0.5 / 0.967 = $0.517 per useful GPU-hour: spot. Job 1 every 3000 s: 2 x (30 + 1500) / 3600
 * = 85%, $3.33: on-demand. Each may use 4 GPUs (one node): one launch on each market (priced at
 * their mean interval, 1530 s: 44%, $0.90, both would have gone to spot); with room for one node
 * only (max_nodes 1), the on-demand one, whose job spot would cost too much. With the nodes ready,
 * job 1 runs on the on-demand node and job 0 on the spot one. At one interval for both, 60 s or
 * 3000 s, both go to the same market: two spot nodes, or two on-demand nodes.
 */
static void castor_fleet__checkpoints_choose_each_jobs_market(void **state)
{
    struct fw *w = *state;
    struct fleet_config cfg = {.mode = FLEET_EFFICIENCY};
    const double ckpt[3][2] = {{60, 3000}, {60, 60}, {3000, 3000}};
    const int launch[3][2] = {{1, 1}, {2, 0}, {0, 2}};

    for (int i = 0; i < 3; i++) {
        offer(w, 0, 1, 2.0, 2.0);
        offer(w, 1, 0, 4.0, 0);
        for (int j = 0; j < 2; j++) {
            job(w, j, &perfect, 4);
            w->jobs[j].max_replicas = 4;
            w->jobs[j].checkpoint_s = ckpt[i][j];
        }
        fw_ready(w, 2, 0, 0, 2);
        assert_int_equal(decide_once(w, "castor", &cfg, "pollux"), 0);
        assert_launch(w, launch[i]);
    }
    /* the first case within max_nodes 1: the on-demand launch goes first */
    cfg.max_nodes = 1;
    for (int j = 0; j < 2; j++)
        w->jobs[j].checkpoint_s = ckpt[0][j];
    fw_ready(w, 2, 0, 0, 2);
    assert_int_equal(decide_once(w, "castor", &cfg, "pollux"), 0);
    assert_launch(w, (int[]){0, 1});
    cfg.max_nodes = 0;
    /* the nodes of the first case, ready: each job on its market's node */
    for (int j = 0; j < 2; j++)
        w->jobs[j].checkpoint_s = ckpt[0][j];
    node(w, 0, 0, OLD);
    node(w, 1, 1, OLD);
    fw_ready(w, 2, 2, 0, 2);
    assert_int_equal(decide_once(w, "castor", &cfg, "pollux"), 0);
    assert_int_equal(w->out->count[0], 4);
    assert_int_equal(w->out->count[1], 4);
    assert_int_equal(alloc_on_node(w->out, 0, 0), 4); /* job 0 on spot */
    assert_int_equal(alloc_on_node(w->out, 1, 1), 4); /* job 1 on on-demand */
    assert_launch(w, (int[]){0, 0});
}

/*
 * Deadline mode where only on-demand can be rented: a job without a deadline runs beside the
 * deadline job's (the spot nodes a split would send it to do not exist). Two on-demand nodes
 * ready, the deadline job of deadline_round (one GPU makes it on on-demand) allowed 4 GPUs, and a
 * job without a deadline allowed 4: both run, nothing is launched or released.
 */
static void castor_fleet__deadline_with_one_market_runs_every_job(void **state)
{
    struct fw *w = *state;
    struct fleet_config cfg = {.mode = FLEET_DEADLINE};

    offer(w, 0, 0, 4.0, 0);
    w->offers[0].boot_s = 170;
    for (int j = 0; j < 2; j++) {
        job(w, j, &perfect, 4);
        w->jobs[j].max_replicas = 4;
        w->jobs[j].checkpoint_s = 600;
    }
    w->jobs[0].progress_target = 1190.476;
    w->jobs[0].deadline = NOW + 1460;
    node(w, 0, 0, OLD);
    node(w, 1, 0, OLD);
    fw_ready(w, 1, 2, 0, 2);
    assert_int_equal(decide_once(w, "castor", &cfg, "pollux"), 0);
    assert_true(w->out->count[0] > 0);
    assert_true(w->out->count[1] > 0);
    assert_launch(w, (int[]){0});
    assert_release(w, (int[]){0, 0});
}

/* The newest booting instances are cancelled first, within the market asked for: launched 5, 20
 * and 1 s ago (spot, spot, on-demand): one spot cancel takes the 5 s one; two of any market take
 * the 1 s one (on-demand) and then the 5 s one; asking for more than there are stops at none left.
 */
static void fleet_cancel_newest__by_launch_time_and_market(void **state)
{
    struct fw *w = *state;

    offer(w, 0, 1, 1.0, 0);
    offer(w, 1, 0, 4.0, 0);
    w->booting[0] = (struct snap_booting){.offer = 0, .launched = NOW - 5};
    w->booting[1] = (struct snap_booting){.offer = 0, .launched = NOW - 20};
    w->booting[2] = (struct snap_booting){.offer = 1, .launched = NOW - 1};
    fw_ready(w, 2, 0, 3, 0);
    fleet_cancel_newest(&w->s, 1, 1, w->f);
    assert_int_equal(w->f->cancel[0] + 2 * w->f->cancel[1] + 4 * w->f->cancel[2], 1);
    fleet_plan_clear(w->f);
    fleet_cancel_newest(&w->s, -1, 2, w->f);
    assert_int_equal(w->f->cancel[0] + 2 * w->f->cancel[1] + 4 * w->f->cancel[2], 5);
    fleet_plan_clear(w->f);
    fleet_cancel_newest(&w->s, 0, 5, w->f);
    assert_int_equal(w->f->cancel[0] + 2 * w->f->cancel[1] + 4 * w->f->cancel[2], 4);
}

/*
 * No jobs: nothing to run, so every ready node past the 60 s minimum billed time is released
 * (nodes 0 and 2, launched an hour ago) and every booting instance cancelled; node 1, launched 30
 * s ago, is kept (it is paid for until 60 s anyway). Nothing is launched.
 */
static void castor_fleet__no_jobs_releases_all_but_young(void **state)
{
    struct fw *w = *state;
    struct fleet_config cfg = {.mode = FLEET_EFFICIENCY};

    offer(w, 0, 0, 4.0, 0);
    node(w, 0, 0, OLD);
    node(w, 1, 0, NOW - 30);
    node(w, 2, 0, OLD);
    w->booting[0] = (struct snap_booting){.offer = 0, .launched = NOW - 20};
    w->booting[1] = (struct snap_booting){.offer = 0, .launched = NOW - 5};
    fw_ready(w, 1, 3, 2, 0);
    assert_int_equal(decide_once(w, "castor", &cfg, "castor"), 0);
    assert_launch(w, (int[]){0});
    assert_release(w, (int[]){1, 0, 1});
    assert_int_equal(w->f->cancel[0], 1);
    assert_int_equal(w->f->cancel[1], 1);
}

/*
 * With a patience of 2, surplus nodes go only on the second surplus round in a row. One perfect job
 * its owner limits to 4 GPUs (one node) runs on node 1 of three old nodes. Round 1: surplus,
 * nothing released. Round 2 (the same instance): released, the most used node (1) kept, and the job
 * runs there. A fresh instance: round 1 surplus; round 2 the owner allows 12 (three nodes wanted:
 * no surplus, the count starts over); round 3 surplus again at 4: the first of a new run, nothing
 * released.
 */
/*
 * No flapping: on a steady world (two old nodes, three jobs: two scaling perfectly, one
 * sync-bound), the second round's answer, with the first as the current allocation, moves no job
 * and changes no node, with either allocation policy.
 */
static void castor_fleet__steady_world_no_moves(void **state)
{
    struct fw *w = *state;
    const char *pols[2] = {"pollux", "castor"};

    for (int p = 0; p < 2; p++) {
        struct fleet_config cfg = {.mode = FLEET_EFFICIENCY};
        struct fleet_policy fp;

        offer(w, 0, 0, 4.0, 0);
        node(w, 0, 0, OLD);
        node(w, 1, 0, OLD);
        job(w, 0, &perfect, 2);
        job(w, 1, &perfect, 2);
        job(w, 2, &syncbound, 4);
        for (int j = 0; j < 3; j++) {
            w->jobs[j].max_replicas = 3;
            w->jobs[j].submit_time = 0;
        }
        fw_ready(w, 1, 2, 0, 3);
        assert_int_equal(fleet_new("castor", &cfg, &fp), 0);
        assert_int_equal(decide(w, &fp, pols[p]), 0);
        alloc_copy(w->cur, w->out);
        assert_int_equal(decide(w, &fp, pols[p]), 0);
        for (int j = 0; j < 3; j++)
            assert_true(alloc_job_equal(w->out, j, w->cur, j));
        assert_true(fleet_plan_empty(w->f));
        fleet_free(&fp);
    }
}

static void castor_fleet__surplus_released_on_second_round(void **state)
{
    struct fw *w = *state;
    struct fleet_config cfg = {.mode = FLEET_EFFICIENCY, .patience = 2};
    struct fleet_policy fp;

    offer(w, 0, 0, 4.0, 0);
    for (int k = 0; k < 3; k++)
        node(w, k, 0, OLD);
    job(w, 0, &perfect, 8);
    w->jobs[0].max_replicas = 4;
    fw_ready(w, 1, 3, 0, 1);
    set_row(w->cur, 0, (int[]){1, 1, 1, 1}, 4);

    assert_int_equal(fleet_new("castor", &cfg, &fp), 0);
    assert_int_equal(decide(w, &fp, "castor"), 0);
    assert_true(fleet_plan_empty(w->f));
    assert_int_equal(decide(w, &fp, "castor"), 0);
    assert_release(w, (int[]){1, 0, 1});
    assert_launch(w, (int[]){0});
    assert_row(w->out, 0, (int[]){1, 1, 1, 1}, 4);
    fleet_free(&fp);

    assert_int_equal(fleet_new("castor", &cfg, &fp), 0);
    assert_int_equal(decide(w, &fp, "castor"), 0);
    assert_true(fleet_plan_empty(w->f));
    w->jobs[0].max_replicas = 12;
    assert_int_equal(decide(w, &fp, "castor"), 0);
    assert_release(w, (int[]){0, 0, 0});
    w->jobs[0].max_replicas = 4;
    assert_int_equal(decide(w, &fp, "castor"), 0);
    assert_true(fleet_plan_empty(w->f));
    fleet_free(&fp);
}

/*
 * The fixed fleet holds 3 nodes of offer 0: with one ready node of offer 0, one of offer 1 (not
 * counted) and one of offer 0 booting, it has 2 and launches 1 of offer 0, nothing else, and
 * releases nothing. With offer 0 unavailable it launches nothing (not even elsewhere). With 3
 * of offer 0 (2 ready, 1 booting) it launches nothing.
 */
static void fixed_fleet__replaces_missing_nodes(void **state)
{
    struct fw *w = *state;
    struct fleet_config cfg = {.offer = 0, .nodes = 3};

    offer(w, 0, 0, 4.0, 0);
    offer(w, 1, 1, 1.0, 0);
    node(w, 0, 0, OLD);
    node(w, 1, 1, OLD);
    w->booting[0] = (struct snap_booting){.offer = 0, .launched = NOW - 10};
    job(w, 0, &perfect, 4);
    fw_ready(w, 2, 2, 1, 1);
    assert_int_equal(decide_once(w, "fixed", &cfg, "castor"), 0);
    assert_launch(w, (int[]){1, 0});
    assert_release(w, (int[]){0, 0});
    assert_int_equal(w->f->cancel[0], 0);
    assert_true(w->out->count[0] > 0);

    w->offers[0].unavailable = 1;
    assert_int_equal(decide_once(w, "fixed", &cfg, "castor"), 0);
    assert_true(fleet_plan_empty(w->f));

    w->offers[0].unavailable = 0;
    node(w, 1, 0, OLD);
    fw_ready(w, 2, 2, 1, 1);
    assert_int_equal(decide_once(w, "fixed", &cfg, "castor"), 0);
    assert_true(fleet_plan_empty(w->f));
}

/*
 * The fixed fleet of 2 nodes of offer 0 with one ready and one noticed (going): under max_nodes 2
 * the noticed one still holds its place, so nothing is launched until it goes; under max_nodes 3
 * the replacement is launched at once; once the noticed node is gone, under max_nodes 2 too.
 */
static void fixed_fleet__noticed_node_counts_against_max_nodes(void **state)
{
    struct fw *w = *state;
    struct fleet_config cfg = {.offer = 0, .nodes = 2, .max_nodes = 2};

    offer(w, 0, 1, 1.0, 0);
    w->offers[0].noticed = 1;
    node(w, 0, 0, OLD);
    job(w, 0, &perfect, 4);
    fw_ready(w, 1, 1, 0, 1);
    assert_int_equal(decide_once(w, "fixed", &cfg, "castor"), 0);
    assert_true(fleet_plan_empty(w->f));

    cfg.max_nodes = 3;
    assert_int_equal(decide_once(w, "fixed", &cfg, "castor"), 0);
    assert_launch(w, (int[]){1});

    w->offers[0].noticed = 0; /* gone: replaced under max_nodes 2 */
    cfg.max_nodes = 2;
    assert_int_equal(decide_once(w, "fixed", &cfg, "castor"), 0);
    assert_launch(w, (int[]){1});
}

/*
 * Fewer nodes asked (a reload to nodes: 1) with 3 ready of offer 0 (two old, one younger than the
 * minimum billed time), one of offer 1 and 2 of offer 0 booting: the fixed fleet cancels both
 * booting instances, releases the two old nodes, keeps the young one and leaves offer 1's alone;
 * the job gets only what is kept. Asked for 4, it cancels only the newest booting instance.
 */
static void fixed_fleet__gives_back_a_surplus(void **state)
{
    struct fw *w = *state;
    struct fleet_config cfg = {.offer = 0, .nodes = 1};

    offer(w, 0, 0, 4.0, 0);
    offer(w, 1, 1, 1.0, 0);
    node(w, 0, 0, OLD);
    node(w, 1, 0, OLD);
    node(w, 2, 0, NOW - 10);
    node(w, 3, 1, OLD);
    w->booting[0] = (struct snap_booting){.offer = 0, .launched = NOW - 20};
    w->booting[1] = (struct snap_booting){.offer = 0, .launched = NOW - 10};
    job(w, 0, &perfect, 4);
    fw_ready(w, 2, 4, 2, 1);
    assert_int_equal(decide_once(w, "fixed", &cfg, "castor"), 0);
    assert_launch(w, (int[]){0, 0});
    assert_release(w, (int[]){1, 1, 0, 0});
    assert_int_equal(w->f->cancel[0], 1);
    assert_int_equal(w->f->cancel[1], 1);
    for (int i = 0; i < w->out->count[0]; i++)
        assert_true(w->out->node[i] == 2 || w->out->node[i] == 3);

    cfg.nodes = 4;
    assert_int_equal(decide_once(w, "fixed", &cfg, "castor"), 0);
    assert_launch(w, (int[]){0, 0});
    assert_release(w, (int[]){0, 0, 0, 0});
    assert_int_equal(w->f->cancel[0], 0);
    assert_int_equal(w->f->cancel[1], 1);
}

/* Pollux's autoscaler acting on every round (window 1), at most 16 nodes of offer 0. */
static const struct fleet_config pollux_cfg = {.offer = 0, .window = 1, .max_nodes = 16};

/* On-demand nodes of 4 GPUs at $4/h, n of them launched an hour ago. */
static void pollux_world(struct fw *w, int n)
{
    offer(w, 0, 0, 4.0, 0);
    for (int k = 0; k < n; k++)
        node(w, k, 0, OLD);
}

/*
 * Pollux's autoscaler, window 1, band [1/3, 2/3], target 1/2, nodes of 4 GPUs, at most 16. One
 * perfect job its owner limits to 8 GPUs: on n nodes it gets min(8, 4n) GPUs, a speedup of about
 * that many, so the utility (speedup / GPUs) is 1, 1, 0.667, 0.5 (a hair under), 0.4 ... on 1, 2,
 * 3, 4, 5 nodes. The search takes the fewest nodes at or under 1/2 (4), then 3 if closer to 1/2
 * (0.167 away against ~0): 4 nodes.
 *   grow: 2 nodes, utility 1 > 2/3 -> launch 2.
 *   shrink: 10 nodes, utility 8 / 40 = 0.2 < 1/3 -> keep 4: the two the job uses (0, 1) and the
 *           next two on ties (2, 3); release 4 to 9.
 *   band: 3 nodes and a job limited to 6: 6 / 12 = 0.5 -> nothing changes.
 */
static void pollux_fleet__utility_band(void **state)
{
    struct fw *w = *state;
    const struct fleet_config cfg = pollux_cfg;

    pollux_world(w, 10);
    job(w, 0, &perfect, 4);
    w->jobs[0].max_replicas = 8;

    fw_ready(w, 1, 2, 0, 1);
    set_row(w->cur, 0, (int[]){0, 0, 0, 0, 1, 1, 1, 1}, 8);
    assert_int_equal(decide_once(w, "pollux-autoscale", &cfg, "pollux"), 0);
    assert_launch(w, (int[]){2});
    assert_release(w, (int[]){0, 0});

    fw_ready(w, 1, 10, 0, 1);
    set_row(w->cur, 0, (int[]){0, 0, 0, 0, 1, 1, 1, 1}, 8);
    assert_int_equal(decide_once(w, "pollux-autoscale", &cfg, "pollux"), 0);
    assert_launch(w, (int[]){0});
    assert_release(w, (int[]){0, 0, 0, 0, 1, 1, 1, 1, 1, 1});
    assert_int_equal(w->out->count[0], 8);

    w->jobs[0].max_replicas = 6;
    fw_ready(w, 1, 3, 0, 1);
    set_row(w->cur, 0, (int[]){0, 0, 0, 0, 1, 1}, 6);
    assert_int_equal(decide_once(w, "pollux-autoscale", &cfg, "pollux"), 0);
    assert_true(fleet_plan_empty(w->f));
}

/* Pollux's autoscaler with no jobs scales to zero: both old nodes released, the booting one
 * cancelled. With a job and no fleet at all it starts one node. */
static void pollux_fleet__scales_to_zero_and_back(void **state)
{
    struct fw *w = *state;
    const struct fleet_config cfg = pollux_cfg;

    pollux_world(w, 2);
    w->booting[0] = (struct snap_booting){.offer = 0, .launched = NOW - 10};
    fw_ready(w, 1, 2, 1, 0);
    assert_int_equal(decide_once(w, "pollux-autoscale", &cfg, "pollux"), 0);
    assert_release(w, (int[]){1, 1});
    assert_int_equal(w->f->cancel[0], 1);
    assert_launch(w, (int[]){0});

    job(w, 0, &perfect, 4);
    fw_ready(w, 1, 0, 0, 1);
    assert_int_equal(decide_once(w, "pollux-autoscale", &cfg, "pollux"), 0);
    assert_launch(w, (int[]){1});
}

/* A deliberately wrong fleet policy for plan_decide_fleet: *(int *)ctx picks its answer. Each
 * first takes job 1's GPUs away (a change the caller must undo if the answer is rejected). */
enum bad_mode { BAD_RELEASE_USED, BAD_OVERFILL, GOOD_RELEASE_FREED };

static int bad_plan(void *ctx, const struct snapshot *s, struct policy *pol, uint64_t seed,
                    struct alloc *a, struct fleet_plan *f)
{
    (void)s;
    (void)pol;
    (void)seed;
    alloc_clear_job(a, 1);
    f->launch[0] = 1;
    switch (*(int *)ctx) {
    case BAD_RELEASE_USED: /* job 0 still runs on node 0 */
        f->release[0] = 1;
        break;
    case BAD_OVERFILL: /* job 0: 2 + 3 GPUs on a 4-GPU node */
        return alloc_add(a, 0, 0, 3);
    case GOOD_RELEASE_FREED: /* node 1 was job 1's only */
        f->release[1] = 1;
        break;
    }
    return 0;
}

static const struct fleet_ops bad_ops = {.name = "bad", .summary = "", .plan = bad_plan};

/* Job 0 holds 2 GPUs of node 0, job 1 2 of node 1. Releasing node 0 while job 0 keeps it, or
 * putting 5 GPUs on node 0, is rejected (ERR_INTERNAL): the caller gets the current allocation
 * back (job 1 on node 1 again) and an empty fleet plan (not even the launch). Releasing node 1,
 * which the answer no longer uses, passes. */
static void plan_decide_fleet__rejects_bad_answers(void **state)
{
    struct fw *w = *state;
    int mode;
    struct fleet_policy fp = {.ops = &bad_ops, .ctx = &mode};

    offer(w, 0, 0, 4.0, 0);
    node(w, 0, 0, OLD);
    node(w, 1, 0, OLD);
    job(w, 0, &perfect, 4);
    job(w, 1, &perfect, 4);
    fw_ready(w, 1, 2, 0, 2);
    set_row(w->cur, 0, (int[]){0, 0}, 2);
    set_row(w->cur, 1, (int[]){1, 1}, 2);
    for (mode = BAD_RELEASE_USED; mode <= BAD_OVERFILL; mode++) {
        assert_int_equal(decide(w, &fp, "castor"), ERR_INTERNAL);
        assert_row(w->out, 0, (int[]){0, 0}, 2);
        assert_row(w->out, 1, (int[]){1, 1}, 2);
        assert_true(fleet_plan_empty(w->f));
    }
    mode = GOOD_RELEASE_FREED;
    assert_int_equal(decide(w, &fp, "castor"), 0);
    assert_int_equal(w->out->count[1], 0);
    assert_release(w, (int[]){0, 1});
    assert_launch(w, (int[]){1});
}

/* ---- the property test ---- */

/* A small deterministic generator. */
static double lcg_uniform(uint64_t *x)
{
    *x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*x >> 11) / 9007199254740992.0;
}

/* Random fleets per run: each costs 14 decisions of about 0.4 ms (castor's sizing and the
 * autoscaler's search dominate); fewer under the sanitizers. Build with -DFLEET_TRIALS=N for a
 * longer run. */
#ifndef FLEET_TRIALS
#if defined(__SANITIZE_ADDRESS__)
#define FLEET_TRIALS 200
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FLEET_TRIALS 200
#endif
#endif
#endif
#ifndef FLEET_TRIALS
#define FLEET_TRIALS 600
#endif

#define PMAX_NODES 6
#define PMAX_JOBS 6
#define PMAX_MAX_NODES 6 /* the fleet policies' max_nodes */

/* A random fleet into w (offers, nodes of them, booting instances, jobs with or without models,
 * a current allocation within capacity, possibly split over nodes). */
static void random_fleet(struct fw *w, uint64_t *x)
{
    static const int sizes[] = {1, 2, 4};
    int no = 1 + (int)(MAXO * lcg_uniform(x)), nn = (int)((PMAX_NODES + 1) * lcg_uniform(x));
    int nb = (int)((MAXB + 1) * lcg_uniform(x)), nj = (int)((PMAX_JOBS + 1) * lcg_uniform(x));
    int used[PMAX_NODES] = {0};

    memset(w->jobs, 0, sizeof(w->jobs));
    for (int o = 0; o < no; o++) {
        int spot = lcg_uniform(x) < 0.5;

        w->offers[o] = (struct snap_offer){.name = "o",
                                           .gpus = sizes[(int)(3 * lcg_uniform(x))],
                                           .spot = spot,
                                           .price = 0.5 + 10 * lcg_uniform(x),
                                           .preempt_rate = spot ? 5 * lcg_uniform(x) : 0,
                                           .boot_s = 180,
                                           .unavailable = lcg_uniform(x) < 0.25};
        /* a third under quotas that leave room for 0 to 2 nodes */
        w->offers[o].capped = lcg_uniform(x) < 0.33;
        w->offers[o].room = (int)(3 * lcg_uniform(x));
    }
    for (int k = 0; k < nn; k++)
        node(w, k, (int)(no * lcg_uniform(x)), NOW - 200 * lcg_uniform(x));
    for (int b = 0; b < nb; b++)
        w->booting[b] =
            (struct snap_booting){.offer = (int)(no * lcg_uniform(x)), .launched = NOW - 100};
    for (int j = 0; j < nj; j++) {
        struct snap_job *sj = &w->jobs[j];
        struct tput_params tp = {.ops = &tput_model_pollux};

        tp.theta[0] = 0.01 * exp(3 * lcg_uniform(x));
        tp.theta[1] = 1e-4 * exp(3 * lcg_uniform(x));
        tp.theta[2] = 0.01 * exp(5 * lcg_uniform(x));
        tp.theta[3] = 1e-3 * exp(4 * lcg_uniform(x));
        tp.theta[4] = 0.005 * exp(4 * lcg_uniform(x));
        tp.theta[5] = 1e-3 * exp(3 * lcg_uniform(x));
        tp.theta[6] = 1 + 2 * lcg_uniform(x);
        sj->name = "j";
        sj->has_model = lcg_uniform(x) < 0.7;
        sj->tput = tp;
        sj->grad = (struct grad_params){.sqr = lcg_uniform(x), .var = 10 * lcg_uniform(x)};
        sj->lim = (struct bsz_limits){.init_bsz = 64,
                                      .max_bsz = 64 * (1 + 31 * lcg_uniform(x)),
                                      .max_local = 256,
                                      .accumulation = 1};
        sj->max_profiled_replicas = (int)(9 * lcg_uniform(x));
        sj->max_replicas = lcg_uniform(x) < 0.2 ? 1 + (int)(3 * lcg_uniform(x)) : 0;
        sj->submit_time = NOW - 3000 * lcg_uniform(x);
        sj->attained_service = 1e5 * lcg_uniform(x);
        sj->checkpoint_s = lcg_uniform(x) < 0.5 ? 0 : 3000 * lcg_uniform(x);
    }
    fw_ready(w, no, nn, nb, nj);
    for (int j = 0; j < nj; j++)
        for (int k = 0; k < nn; k++) {
            int n = (int)((w->nodes[k].gpus - used[k] + 1) * lcg_uniform(x));

            if (n > 0 && lcg_uniform(x) < 0.3) {
                assert_int_equal(alloc_add(w->cur, j, k, n), 0);
                used[k] += n;
            }
        }
}

/* The rules every answer must follow, checked here independently of plan_decide_fleet's own
 * checks: node capacity, the owners' replica limits, no negative launch, no launch on an
 * unavailable offer, no release of a node the answer uses or that is younger than the minimum
 * billed time, no launch past the room an offer's quotas leave, and no more than max_nodes
 * instances after a launch (the fixed fleet: exactly its 3 of its offer, or fewer within its
 * room). */
static void check_answer(const struct fw *w, const char *what, int trial, int fixed)
{
    const struct snapshot *s = &w->s;
    const struct fleet_plan *f = w->f;
    int used[PMAX_NODES] = {0}, after = s->nnodes + s->nbooting, launched = 0;

    for (int j = 0; j < s->njobs; j++) {
        const int *row = w->out->node + (size_t)j * (size_t)w->out->width;

        if (s->jobs[j].max_replicas > 0 && w->out->count[j] > s->jobs[j].max_replicas)
            fail_msg("%s, trial %d: job %d over its limit", what, trial, j);
        for (int i = 0; i < w->out->count[j]; i++) {
            if (row[i] < 0 || row[i] >= s->nnodes)
                fail_msg("%s, trial %d: job %d on node %d of %d", what, trial, j, row[i],
                         s->nnodes);
            used[row[i]]++;
        }
    }
    for (int k = 0; k < s->nnodes; k++) {
        if (used[k] > s->nodes[k].gpus)
            fail_msg("%s, trial %d: node %d over capacity", what, trial, k);
        if (f->release[k] && used[k] > 0)
            fail_msg("%s, trial %d: node %d released while used", what, trial, k);
        if (f->release[k] && s->now - s->nodes[k].launched < s->min_billed_s)
            fail_msg("%s, trial %d: node %d released before its minimum", what, trial, k);
        after -= f->release[k] != 0;
    }
    for (int b = 0; b < s->nbooting; b++)
        after -= f->cancel[b] != 0;
    for (int o = 0; o < s->noffers; o++) {
        if (f->launch[o] < 0 || (f->launch[o] > 0 && s->offers[o].unavailable))
            fail_msg("%s, trial %d: launch[%d] = %d (unavailable %d)", what, trial, o, f->launch[o],
                     s->offers[o].unavailable);
        if (s->offers[o].capped && f->launch[o] > s->offers[o].room)
            fail_msg("%s, trial %d: launch[%d] = %d past its room %d", what, trial, o, f->launch[o],
                     s->offers[o].room);
        launched += f->launch[o];
    }
    if (fixed) {
        /* the fixed fleet counts only its own offer's instances (offer 0), and holds 3 */
        int own = f->launch[0];

        for (int k = 0; k < s->nnodes; k++)
            own += s->nodes[k].offer == 0;
        for (int b = 0; b < s->nbooting; b++)
            own += s->booting[b].offer == 0;
        /* (short of 3 only where its quotas leave no more room) */
        if (launched > 0 &&
            ((s->offers[0].capped ? own > 3 || (own < 3 && f->launch[0] != s->offers[0].room)
                                  : own != 3) ||
             launched != f->launch[0]))
            fail_msg("%s, trial %d: %d of offer 0 after launching", what, trial, own);
    } else if (launched > 0 && after + launched > PMAX_MAX_NODES) {
        fail_msg("%s, trial %d: %d instances after launching", what, trial, after + launched);
    }
}

/*
 * Random fleets through plan_decide_fleet, for castor (efficiency and budget), Pollux's
 * autoscaler (window 1, so that it acts) and the fixed fleet, each with the castor and the pollux
 * allocation policies, two rounds per instance (castor's surplus count, the autoscaler's
 * window): every answer is accepted (0) and passes check_answer.
 */
static void fleet_policies__random_fleets_follow_the_rules(void **state)
{
    static const char *const pols[] = {"castor", "pollux"};
    const struct {
        const char *name;
        struct fleet_config cfg;
    } fleets[] = {
        {"castor", {.mode = FLEET_EFFICIENCY, .max_nodes = PMAX_MAX_NODES}},
        {"castor", {.mode = FLEET_BUDGET, .budget = 20, .max_nodes = PMAX_MAX_NODES}},
        {"pollux-autoscale", {.offer = 0, .window = 1, .max_nodes = PMAX_MAX_NODES}},
        {"fixed", {.offer = 0, .nodes = 3, .max_nodes = PMAX_MAX_NODES}},
    };
    struct fw *w = *state;
    uint64_t x = 777;

    for (int t = 0; t < FLEET_TRIALS; t++) {
        random_fleet(w, &x);
        for (size_t i = 0; i < sizeof(fleets) / sizeof(fleets[0]); i++)
            for (int p = 0; p < 2; p++) {
                struct fleet_policy fp;

                assert_int_equal(fleet_new(fleets[i].name, &fleets[i].cfg, &fp), 0);
                for (int round = 0; round < (i == 3 ? 1 : 2); round++) {
                    int rc = decide(w, &fp, pols[p]);

                    if (rc != 0)
                        fail_msg("%s/%s, trial %d: %s", fleets[i].name, pols[p], t, err_str(rc));
                    check_answer(w, fleets[i].name, t, i == 3);
                }
                fleet_free(&fp);
            }
    }
}

/* What a planner implies for the allocation policy: under castor's planner pollux splits with
 * the geometric mean unless a p_mean was given; other planners and policies keep their defaults. */
static void fleet_policy_defaults__castor_planner_pollux_geometric(void **state)
{
    struct policy_config c = {0};

    (void)state;
    fleet_policy_defaults("castor", "pollux", &c);
    assert_true(c.p_mean_set && c.p_mean == FLEET_CASTOR_P_MEAN && FLEET_CASTOR_P_MEAN == 0);
    assert_true(policy_p_mean(&c, -1.0) == 0);
    assert_true(c.deadline_start);
    c = (struct policy_config){.p_mean = -2, .p_mean_set = 1};
    fleet_policy_defaults("castor", "pollux", &c);
    assert_true(c.p_mean == -2 && c.deadline_start);
    c = (struct policy_config){0};
    fleet_policy_defaults("pollux-autoscale", "pollux", &c);
    fleet_policy_defaults("fixed", "pollux", &c);
    fleet_policy_defaults("castor", "castor", &c);
    fleet_policy_defaults(NULL, "pollux", &c);
    assert_false(c.p_mean_set);
    assert_false(c.deadline_start);
    assert_true(policy_p_mean(&c, -1.0) == -1 && policy_p_mean(NULL, 1.0) == 1);
}

/*
 * Quotas (the snapshot's capped offers) on a spot offer at $2/h and an on-demand one at $4/h, 4
 * GPUs a node, no preemptions; a perfectly scaling job that may use 12 GPUs (measured on 8): any
 * value pays for them (its GPU-hours stay the same), so it wants 3 nodes. Spot with room for 1
 * and none held: 1 spot node, the other 2 on-demand. One spot node held and room for 2 more:
 * the 2 missing on spot. Room for none and none held: all 3 on-demand. The spot offer stays
 * available throughout: it prices the market.
 */
static void castor_fleet__quota_full_spills_to_the_other_market(void **state)
{
    struct fw *w = *state;
    struct fleet_config cfg = {.mode = FLEET_EFFICIENCY};
    const int room[3] = {1, 2, 0}, held[3] = {0, 1, 0};
    const int want[3][2] = {{1, 2}, {2, 0}, {0, 3}};

    for (int i = 0; i < 3; i++) {
        offer(w, 0, 1, 2.0, 0);
        offer(w, 1, 0, 4.0, 0);
        w->offers[0].capped = 1;
        w->offers[0].room = room[i];
        job(w, 0, &perfect, 8);
        w->jobs[0].max_replicas = 12;
        if (held[i])
            node(w, 0, 0, OLD);
        fw_ready(w, 2, held[i], 0, 1);
        assert_int_equal(decide_once(w, "castor", &cfg, "castor"), 0);
        assert_launch(w, want[i]);
    }
}

/*
 * The GPUs past the cheaper market's quota cost the other market's price. The sublinear job
 * (value_decides_sublinear_growth: a move from 1 to 2 GPUs or from 2 to 3 saves an hour per
 * GPU-hour, from 3 to 4 half an hour) on nodes of 2 GPUs, spot at $1/h ($0.5 a GPU-hour),
 * on-demand at $4/h ($2), $1.5 a job-hour: on spot alone it takes 4 GPUs (0.5 x 1.5 >= 0.5), 2
 * nodes. With spot room for one node, the move to 3 GPUs would land on on-demand, where an hour
 * saved per GPU-hour is worth $1.5 < $2: it stays at 2 GPUs, one spot node, no on-demand one.
 */
static void castor_fleet__gpus_past_the_quota_priced_on_the_other_market(void **state)
{
    struct fw *w = *state;
    struct fleet_config cfg = {.mode = FLEET_EFFICIENCY, .value = 1.5};

    for (int capped = 0; capped < 2; capped++) {
        offer(w, 0, 1, 1.0, 0);
        offer(w, 1, 0, 4.0, 0);
        w->offers[0].gpus = w->offers[1].gpus = 2;
        w->offers[0].capped = capped;
        w->offers[0].room = 1;
        job(w, 0, &sublinear, 4);
        fw_ready(w, 2, 0, 0, 1);
        assert_int_equal(decide_once(w, "castor", &cfg, "castor"), 0);
        assert_launch(w, capped ? (int[]){1, 0} : (int[]){2, 0});
    }
}

/*
 * No flapping at a full quota: the sublinear job holds its 4 GPUs on two spot nodes and the spot
 * quota has no room left. The planner still prices spot (the nodes held) and wants the same 2
 * nodes: over rounds past its patience it neither releases one nor launches on-demand. (Had the
 * full offer been taken as unavailable, the job would be priced on-demand, want 1 GPU, and a spot
 * node would be released, then launched again once its quota had room.)
 */
static void castor_fleet__full_quota_keeps_the_fleet(void **state)
{
    struct fw *w = *state;
    struct fleet_config cfg = {.mode = FLEET_EFFICIENCY, .value = 1.5, .patience = 2};
    struct fleet_policy fp;

    offer(w, 0, 1, 1.0, 0);
    offer(w, 1, 0, 4.0, 0);
    w->offers[0].gpus = w->offers[1].gpus = 2;
    w->offers[0].capped = 1;
    w->offers[0].room = 0;
    job(w, 0, &sublinear, 4);
    node(w, 0, 0, OLD);
    node(w, 1, 0, OLD);
    fw_ready(w, 2, 2, 0, 1);
    set_row(w->cur, 0, (int[]){0, 0, 1, 1}, 4);
    assert_int_equal(fleet_new("castor", &cfg, &fp), 0);
    for (int round = 0; round < 4; round++) {
        fleet_plan_clear(w->f);
        assert_int_equal(decide(w, &fp, "castor"), 0);
        assert_true(fleet_plan_empty(w->f));
    }
    fleet_free(&fp);
}

/*
 * A market that cannot launch now is still priced by the offer whose nodes it holds: one on-demand
 * offer of 4-GPU nodes at $4/h, four old nodes, and a perfectly scaling job (measured on 8, so it
 * may use 16) on all 16 GPUs. With the offer unavailable (a launch was just refused) it is priced
 * as when available, the job still wants 16 GPUs, and past patience (2) nothing is released or
 * launched. With its price unknown (NAN) nothing is priced at all: the job cannot be sized, and
 * that is no surplus either. (Unpriced, the job was sized at an infinite price, wanted one GPU,
 * and three nodes it uses were released.)
 */
static void castor_fleet__unlaunchable_market_keeps_the_fleet(void **state)
{
    struct fw *w = *state;
    struct fleet_config cfg = {.mode = FLEET_EFFICIENCY, .patience = 2};

    for (int i = 0; i < 3; i++) {
        struct fleet_policy fp;

        offer(w, 0, 0, 4.0, 0);
        if (i == 1)
            w->offers[0].unavailable = 1;
        if (i == 2)
            w->offers[0].price = NAN;
        job(w, 0, &perfect, 8);
        for (int k = 0; k < 4; k++)
            node(w, k, 0, OLD);
        fw_ready(w, 1, 4, 0, 1);
        set_row(w->cur, 0, (int[]){0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}, 16);
        assert_int_equal(fleet_new("castor", &cfg, &fp), 0);
        for (int round = 0; round < 4; round++) {
            fleet_plan_clear(w->f);
            assert_int_equal(decide(w, &fp, "castor"), 0);
            if (!fleet_plan_empty(w->f))
                fail_msg("case %d, round %d: the fleet changed", i, round);
            assert_int_equal(w->out->count[0], 16);
        }
        fleet_free(&fp);
    }
}

/* The market of checkpoints_choose_each_jobs_market (spot at $2/h with 2 preemptions per
 * node-hour, on-demand at $4/h, 4-GPU nodes) and nj perfect jobs that may use maxr GPUs each: job
 * 1 checkpoints every 3000 s (on-demand), the others every 60 s (spot). Set quotas after. */
static void ckpt_market(struct fw *w, int nj, int maxr)
{
    offer(w, 0, 1, 2.0, 2.0);
    offer(w, 1, 0, 4.0, 0);
    for (int j = 0; j < nj; j++) {
        job(w, j, &perfect, 4);
        w->jobs[j].max_replicas = maxr;
        w->jobs[j].checkpoint_s = j == 1 ? 3000 : 60;
    }
}

/*
 * Markets chosen by the jobs' checkpoints (checkpoints_choose_each_jobs_market's market: spot at
 * $2/h with 2 preemptions per node-hour, on-demand at $4/h; each job may use one node), under
 * quotas. Job 0 checkpoints every 60 s (spot), job 1 every 3000 s (on-demand):
 * - spot's quota has no room: job 0 would wait for spot forever; it runs on on-demand instead,
 *   two on-demand nodes (not one, and job 0 waiting);
 * - spot's quota has room for one node: one of each, as without quotas;
 * - on-demand's quota has no room: job 1 runs on spot rather than wait, two spot nodes;
 * - neither has room: nothing is launched (and nothing breaks).
 */
static void castor_fleet__quota_full_market_sends_its_jobs_to_the_other(void **state)
{
    struct fw *w = *state;
    struct fleet_config cfg = {.mode = FLEET_EFFICIENCY};
    const int room[4][2] = {{-1, 0}, {-1, 1}, {0, -1}, {0, 0}}; /* on-demand, spot; -1: none */
    const int launch[4][2] = {{0, 2}, {1, 1}, {2, 0}, {0, 0}};  /* spot, on-demand */

    for (int i = 0; i < 4; i++) {
        ckpt_market(w, 2, 4);
        w->offers[1].capped = room[i][0] >= 0;
        w->offers[1].room = room[i][0];
        w->offers[0].capped = room[i][1] >= 0;
        w->offers[0].room = room[i][1];
        fw_ready(w, 2, 0, 0, 2);
        assert_int_equal(decide_once(w, "castor", &cfg, "pollux"), 0);
        assert_launch(w, launch[i]);
    }
}

/*
 * Which jobs keep a full market: jobs 0 and 2 checkpoint every 60 s (spot), job 1 every 3000 s
 * (on-demand), each wants one node, and spot's quota holds one node. With none held, job 0 (the
 * earlier of two at one price) keeps spot and job 2 goes to on-demand: one spot node, two
 * on-demand. Then job 2 holds a ready spot node, there is no room for another, and job 0 may use
 * only 2 GPUs: job 2 keeps its node (it is not moved) and job 0 goes to on-demand, two on-demand
 * nodes. (Job 0 first would keep 2 GPUs of the spot node and job 2 stay on the other 2, at
 * (1.5 + 2 x 0.517) / 2 = 1.27 against (1.5 + 4) / 4 = 1.38 on on-demand: one on-demand node.)
 */
static void castor_fleet__quota_keeps_the_jobs_it_holds(void **state)
{
    struct fw *w = *state;
    struct fleet_config cfg = {.mode = FLEET_EFFICIENCY};

    for (int held = 0; held < 2; held++) {
        ckpt_market(w, 3, 4);
        w->offers[0].capped = 1;
        w->offers[0].room = held ? 0 : 1;
        if (held) {
            node(w, 0, 0, OLD);
            w->jobs[0].max_replicas = 2;
        }
        fw_ready(w, 2, held, 0, 3);
        if (held)
            set_row(w->cur, 2, (int[]){0, 0, 0, 0}, 4);
        assert_int_equal(decide_once(w, "castor", &cfg, "pollux"), 0);
        assert_launch(w, held ? (int[]){0, 2} : (int[]){1, 2});
        if (held) /* (job 0 may share it until its on-demand node is ready) */
            assert_true(alloc_on_node(w->out, 2, 0) > 0);
    }
}

/*
 * A job its market's quotas cannot hold whole stays there on what is left, or moves to the other
 * market, whichever costs less per unit of its work: (value + price x GPUs) / speedup. Job 0
 * checkpoints every 60 s (spot: $0.5 / (1 - 2 x (30 + 30) / 3600) = $0.517 per useful GPU-hour),
 * job 1 every 3000 s (on-demand, $1); both scale perfectly up to 8 GPUs, and spot's quota holds
 * one node. Job 0 would take 8 GPUs on spot; it can have 4 there, or 8 on on-demand (each pays at
 * any value). At $1.5 a job-hour: (1.5 + 2.07) / 4 = 0.89 on spot against (1.5 + 8) / 8 = 1.19
 * on on-demand: it stays on one spot node, job 1 takes two on-demand nodes. At $12: 3.52 against
 * 2.5: it moves, four on-demand nodes (the break-even is $3.86).
 */
static void castor_fleet__quota_stay_on_less_or_move_whole(void **state)
{
    struct fw *w = *state;
    const double value[2] = {1.5, 12};
    const int launch[2][2] = {{1, 2}, {0, 4}};

    for (int i = 0; i < 2; i++) {
        struct fleet_config cfg = {.mode = FLEET_EFFICIENCY, .value = value[i]};

        ckpt_market(w, 2, 8);
        w->offers[0].capped = 1;
        w->offers[0].room = 1;
        fw_ready(w, 2, 0, 0, 2);
        assert_int_equal(decide_once(w, "castor", &cfg, "pollux"), 0);
        assert_launch(w, launch[i]);
    }
}

/*
 * A budget spent within the quotas: the jobs of the test above, $10/h at listed prices. The
 * budget's greedy buys a GPU at a time for the first job it ranks (perfect scaling: every move is
 * worth the same): without quotas job 0 takes 8 GPUs on spot (two nodes at $2/h) and job 1 the 4
 * of one on-demand node ($4/h): $8/h (a second on-demand node would make it $12/h). With spot's
 * quota at one node job 0 stays there (as above) on 4 GPUs, and the budget the second spot node
 * would have taken buys job 1 a second on-demand node: $10/h, one spot and two on-demand
 * launches (sized without the quota, job 1 would have one).
 */
static void castor_fleet__budget_within_the_quota(void **state)
{
    struct fw *w = *state;
    struct fleet_config cfg = {.mode = FLEET_BUDGET, .budget = 10};

    for (int capped = 0; capped < 2; capped++) {
        ckpt_market(w, 2, 8);
        w->offers[0].capped = capped;
        w->offers[0].room = 1;
        fw_ready(w, 2, 0, 0, 2);
        assert_int_equal(decide_once(w, "castor", &cfg, "pollux"), 0);
        assert_launch(w, capped ? (int[]){1, 2} : (int[]){2, 1});
    }
}

/*
 * Budget mode with a gang: on-demand 4-GPU nodes at $4/h; job 0 a perfect gang of 8 (min_replicas
 * 8), job 1 a perfect job measured on 1 (it may use 2). The gang's minimum is a move of the greedy
 * that must fit the budget: at $5/h it does not (two nodes, $8/h) and stays at none, and job 1
 * takes 2 GPUs of one node; at $12/h both fit, 10 GPUs in three nodes. (Raised to its minimum
 * before the greedy, the gang took two nodes at $5/h and job 1 nothing.)
 */
static void castor_fleet__budget_gang_minimum_within_the_budget(void **state)
{
    struct fw *w = *state;
    const double budget[2] = {5, 12};
    const int nodes[2] = {1, 3};

    for (int i = 0; i < 2; i++) {
        struct fleet_config cfg = {.mode = FLEET_BUDGET, .budget = budget[i]};

        offer(w, 0, 0, 4.0, 0);
        job(w, 0, &perfect, 8);
        w->jobs[0].min_replicas = 8;
        job(w, 1, &perfect, 1);
        fw_ready(w, 1, 0, 0, 2);
        assert_int_equal(decide_once(w, "castor", &cfg, "castor"), 0);
        assert_launch(w, (int[]){nodes[i]});
    }
}

/*
 * The budget prices the launches past the best offer's quota where they go: spot offers of 4-GPU
 * nodes, A at $2/h with room for one node and B at $3/h, no preemptions, $6/h; a perfect job
 * measured on 8 (it may use 16). One node on A and one on B cost $5/h; a third on B would make
 * $8/h: one launch on each. (Priced all at A's $2/h, three nodes looked like $6/h: one on A, two
 * on B, $8/h.)
 */
static void castor_fleet__budget_prices_the_spill(void **state)
{
    struct fw *w = *state;
    struct fleet_config cfg = {.mode = FLEET_BUDGET, .budget = 6};

    offer(w, 0, 1, 2.0, 0);
    offer(w, 1, 1, 3.0, 0);
    w->offers[0].capped = 1;
    w->offers[0].room = 1;
    job(w, 0, &perfect, 8);
    fw_ready(w, 2, 0, 0, 1);
    assert_int_equal(decide_once(w, "castor", &cfg, "castor"), 0);
    assert_launch(w, (int[]){1, 1});
}

/*
 * Each market packs and launches in its own node size: on-demand 4-GPU nodes at $4/h, spot 1-GPU
 * nodes at $0.5/h (cheaper per GPU). Deadline mode: job 0 has a deadline and no model and asks
 * for 8 replicas (on-demand, one node held: one more); job 1 may use one GPU (spot: one node).
 * (With one node size, the spot offer's 1 GPU, the 8 on-demand GPUs packed into 8 nodes: 7
 * launched, 32 GPUs.)
 */
static void castor_fleet__node_size_per_market(void **state)
{
    struct fw *w = *state;
    struct fleet_config cfg = {.mode = FLEET_DEADLINE};

    offer(w, 0, 0, 4.0, 0);
    offer(w, 1, 1, 0.5, 0);
    w->offers[1].gpus = 1;
    node(w, 0, 0, OLD);
    job(w, 0, &perfect, 0);
    w->jobs[0].has_model = 0;
    w->jobs[0].deadline = NOW + 7200;
    w->jobs[0].req_replicas = 8;
    job(w, 1, &perfect, 2);
    w->jobs[1].max_replicas = 1;
    fw_ready(w, 2, 1, 0, 2);
    assert_int_equal(decide_once(w, "castor", &cfg, "pollux"), 0);
    assert_launch(w, (int[]){1, 1});
}

#define FW(f) cmocka_unit_test_setup_teardown(f, fw_setup, fw_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        FW(castor_fleet__spot_or_on_demand_flips_at_break_even),
        FW(castor_fleet__unavailable_offer_never_launched),
        FW(castor_fleet__quota_full_spills_to_the_other_market),
        FW(castor_fleet__gpus_past_the_quota_priced_on_the_other_market),
        FW(castor_fleet__full_quota_keeps_the_fleet),
        FW(castor_fleet__unlaunchable_market_keeps_the_fleet),
        FW(castor_fleet__budget_gang_minimum_within_the_budget),
        FW(castor_fleet__budget_prices_the_spill),
        FW(castor_fleet__node_size_per_market),
        FW(castor_fleet__quota_full_market_sends_its_jobs_to_the_other),
        FW(castor_fleet__quota_keeps_the_jobs_it_holds),
        FW(castor_fleet__quota_stay_on_less_or_move_whole),
        FW(castor_fleet__budget_within_the_quota),
        FW(castor_fleet__deadline_job_keeps_spot_first),
        FW(castor_fleet__spot_nodes_go_where_spot_costs_more),
        FW(castor_fleet__efficiency_sizes_by_gain),
        FW(castor_fleet__value_decides_sublinear_growth),
        FW(castor_fleet__deadline_picks_the_market),
        FW(castor_fleet__deadline_market_within_its_quota),
        FW(castor_fleet__deadline_sizes_beyond_exploration),
        FW(castor_fleet__deadline_unmeasured_job_gets_its_request),
        FW(castor_fleet__checkpoints_choose_each_jobs_market),
        FW(castor_fleet__deadline_with_one_market_runs_every_job),
        FW(fleet_cancel_newest__by_launch_time_and_market),
        FW(castor_fleet__steady_world_no_moves),
        FW(castor_fleet__counts_ready_and_booting),
        FW(castor_fleet__noticed_nodes_count_against_max_nodes),
        FW(castor_fleet__budget_caps_the_fleet),
        FW(castor_fleet__budget_never_exceeded_by_packing),
        FW(castor_fleet__budget_prices_held_nodes_at_their_own_offers),
        FW(castor_fleet__budget_caps_listed_prices),
        FW(castor_fleet__no_jobs_releases_all_but_young),
        FW(castor_fleet__surplus_released_on_second_round),
        FW(fixed_fleet__replaces_missing_nodes),
        FW(fixed_fleet__gives_back_a_surplus),
        FW(fixed_fleet__noticed_node_counts_against_max_nodes),
        FW(pollux_fleet__utility_band),
        FW(pollux_fleet__scales_to_zero_and_back),
        FW(plan_decide_fleet__rejects_bad_answers),
        FW(fleet_policies__random_fleets_follow_the_rules),
        cmocka_unit_test(fleet_policy_defaults__castor_planner_pollux_geometric),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
