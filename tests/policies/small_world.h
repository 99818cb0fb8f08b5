/* small_world.h: the tiny cluster the policy tests reason about by hand: 2 nodes of 4 GPUs, 3 old
 * jobs, two throughput models whose speedups are worked out below. Included by tests only. */
#ifndef CASTOR_TESTS_POLICIES_SMALL_WORLD_H
#define CASTOR_TESTS_POLICIES_SMALL_WORLD_H

#include <stdint.h>

#include "plan/alloc.h"
#include "plan/snapshot.h"
#include "policies/alloc_rows.h"
#include "policies/policy.h"

#define NODES 2
#define GPUS_PER_NODE 4
#define GPUS (NODES * GPUS_PER_NODE)
#define JOBS 3

/* "Old" jobs were submitted at 0 and decided for at NOW: penalty NOW / (NOW + 30), about 1.
 * A "young" one was submitted one second before NOW: penalty 1 / 31. */
#define NOW 1e6

/*
 * Throughput models (the published Pollux model, gamma 1, so a step is compute + sync). The batch
 * is fixed at M0 = 840 (no max_bsz), which every replica count from 1 to 8 divides, so a replica
 * computes 840 / r samples in 0.001 x 840 / r s. With sqr 0 the efficiency is 1.
 *   perfect: sync 1e-8 s: throughput 1000 r samples/s; the fair share is 3, so speedup = r / 3
 *            (to 1e-7), the same as a job without a model.
 *   syncbound: sync 1 s on one node (alpha_r), 2 s across nodes (alpha_n): throughput 1000 on one
 *            GPU (a lone GPU does not synchronise), 840 / 1.42 = 591.5 on 2, 840 / 1.28 = 656.25
 *            on 3 (its base), 840 / 1.21 = 694.2 on 4, 840 / 2.168 = 387.5 on 5 (two nodes).
 *            Speedups 1.524, 0.901, 1, 1.058, 0.590: one GPU is its best.
 */
static const struct tput_params perfect = {.ops = &tput_model_pollux,
                                           .theta = {1e-8, 0.001, 1e-8, 1e-8, 1e-8, 1e-8, 1.0}};
static const struct tput_params syncbound = {.ops = &tput_model_pollux,
                                             .theta = {1e-8, 0.001, 2.0, 1e-8, 1.0, 1e-8, 1.0}};

struct world {
    struct snap_node nodes[NODES];
    struct snap_job jobs[JOBS];
    struct alloc *cur, *out;
    struct snapshot s;
    struct policy_config cfg;
};

/* A world of NODES x GPUS_PER_NODE GPUs and JOBS old jobs without a model that were never
 * profiled (max_replicas 1), holding nothing. */
static inline int world_setup(void **state)
{
    static const char *names[JOBS] = {"a", "b", "c"};
    struct world *w = test_calloc(1, sizeof(*w));

    assert_non_null(w);
    for (int i = 0; i < NODES; i++)
        w->nodes[i].gpus = GPUS_PER_NODE;
    for (int j = 0; j < JOBS; j++) {
        w->jobs[j].name = names[j];
        w->jobs[j].submit_time = 0;
        w->jobs[j].lim.init_bsz = 840;
        w->jobs[j].grad = (struct grad_params){.sqr = 0.0, .var = 1.0};
    }
    assert_int_equal(alloc_new(JOBS, NODES, GPUS, &w->cur), 0);
    assert_int_equal(alloc_new(JOBS, NODES, GPUS, &w->out), 0);
    w->s = (struct snapshot){.now = NOW,
                             .nnodes = NODES,
                             .nodes = w->nodes,
                             .njobs = JOBS,
                             .jobs = w->jobs,
                             .current = w->cur};
    *state = w;
    return 0;
}

static inline int world_teardown(void **state)
{
    struct world *w = *state;

    alloc_free(w->cur);
    alloc_free(w->out);
    test_free(w);
    return 0;
}

/* Job j gets throughput model tp, profiled up to 4 replicas (so it may take 8). */
static inline void give_model(struct world *w, int j, const struct tput_params *tp)
{
    w->jobs[j].has_model = 1;
    w->jobs[j].tput = *tp;
    w->jobs[j].max_profiled_replicas = 4;
}

/* Decide as the caller does, with the policy called name: out starts as a copy of the current
 * allocation. Returns what the policy returns. */
static inline int decide_with(const char *name, const struct snapshot *s,
                              const struct policy_config *cfg, uint64_t seed, struct alloc *out)
{
    struct policy p;
    int rc;

    assert_int_equal(policy_new(name, cfg, &p), 0);
    alloc_copy(out, s->current);
    rc = policy_allocate(&p, s, seed, out);
    policy_free(&p);
    return rc;
}

#endif
