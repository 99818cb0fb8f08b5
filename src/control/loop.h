/* loop.h: the controller's loop: every interval, observe the world, decide, act, record. The same
 * loop runs every world; a virtual clock makes it a simulator. */
#ifndef CASTOR_CONTROL_LOOP_H
#define CASTOR_CONTROL_LOOP_H

#include <stdint.h>

#include "plan/alloc.h"
#include "plan/snapshot.h"
#include "policies/fleet.h"
#include "policies/policy.h"
#include "providers/provider.h"

/* Called after each tick's plan is applied: now, what was observed, and the plan (rows as in the
 * snapshot). A non-zero return stops the loop with that code. */
typedef int (*loop_record_fn)(void *ctx, double now, const struct snapshot *s,
                              const struct alloc *plan);

struct loop {
    struct provider *provider;  /* borrowed */
    struct policy *policy;      /* borrowed */
    struct fleet_policy *fleet; /* borrowed; NULL: the world's nodes are fixed */
    int interval;               /* seconds between decisions */
    uint64_t seed;              /* the decide step's randomness: seed + tick number */
    loop_record_fn record;      /* may be NULL */
    void *record_ctx;
    long ticks;      /* ticks done */
    long decisions;  /* ticks with jobs to decide for */
    int policy_errs; /* decisions that kept the current allocation because the policy failed */
    int policy_err;  /* the last such failure's error code (0: the last decision did not fail) */
    int resize_errs; /* fleet changes the world refused */
    /* Optional: a monotonic clock (seconds) to time the decide step with; NULL: not timed. */
    double (*timer)(void *ctx);
    void *timer_ctx;
    double decide_s; /* seconds the last decide step took (0 when not timed) */
};

/* One tick: wait an interval, observe, decide, apply, record. Errors: what the provider returns
 * (a failing policy is counted, and the current allocation kept). */
int loop_tick(struct loop *l);

/* Tick until the world has nothing more to do or max_ticks have passed (ERR_AGAIN then). */
int loop_run(struct loop *l, long max_ticks);

#endif
