/* decide.h: the decide step: plan = decide(snapshot, policy, seed). Pure: no I/O, no clock, no
 * global state; the same snapshot, policy state and seed give the same plan. */
#ifndef CASTOR_PLAN_DECIDE_H
#define CASTOR_PLAN_DECIDE_H

#include <stdint.h>

#include "plan/alloc.h"
#include "plan/fleet.h"
#include "plan/snapshot.h"
#include "policies/fleet.h"
#include "policies/policy.h"

/*
 * The allocation for the next interval, written to plan (s->njobs rows, sized like s->current).
 * The policy's answer is checked: no node over capacity, no job over its owner's limit, no job
 * with GPUs below its gang minimum (min_replicas). Errors:
 * what the policy returns, ERR_INTERNAL for an answer that breaks those rules (plan then holds
 * the current allocation).
 */
int plan_decide(const struct snapshot *s, struct policy *pol, uint64_t seed, struct alloc *plan);

/*
 * The decide step in a world that rents its nodes: the fleet policy's changes into f (sized for
 * s, empty on entry) and the allocation into plan, checked as plan_decide's and by
 * fleet_plan_check. Errors: what the policies return, ERR_INTERNAL for an answer that breaks the
 * rules; then plan holds the current allocation and f changes nothing.
 */
int plan_decide_fleet(const struct snapshot *s, struct fleet_policy *fleet, struct policy *pol,
                      uint64_t seed, struct alloc *plan, struct fleet_plan *f);

#endif
