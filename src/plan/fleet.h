/* fleet.h: the fleet part of a plan: how many instances of each offer to launch, which nodes and
 * booting instances to let go; and the checks every fleet policy's answer must pass. */
#ifndef CASTOR_PLAN_FLEET_H
#define CASTOR_PLAN_FLEET_H

#include "plan/alloc.h"
#include "plan/snapshot.h"

/* Owned by whoever made it with fleet_plan_new; sized for one snapshot. */
struct fleet_plan {
    int noffers;
    int *launch; /* per offer: instances to launch now */
    int nnodes;
    unsigned char *release; /* per snapshot node: terminate it now */
    int nbooting;
    unsigned char *cancel; /* per booting instance: terminate it now */
};

/* An empty plan (nothing launched or released) for snapshot s. ERR_NOMEM. */
int fleet_plan_new(const struct snapshot *s, struct fleet_plan **out);

void fleet_plan_free(struct fleet_plan *f);

/* Launch nothing, release nothing. */
void fleet_plan_clear(struct fleet_plan *f);

/* 1 if the plan changes nothing. */
int fleet_plan_empty(const struct fleet_plan *f);

/* Nodes of offer o that its quotas let a plan launch now: its room when capped, else INT_MAX
 * (0 for an unavailable offer). */
int fleet_offer_room(const struct snapshot *s, int o);

/*
 * Add up to n launches to f on offer o, within the room its quotas leave (less what f already
 * launches there); with spill, the rest on the snapshot's other available offers of the same
 * market and node size, the cheapest per GPU first, each within its room. Returns the launches
 * added (0 to n).
 */
int fleet_plan_launch(const struct snapshot *s, int o, int n, int spill, struct fleet_plan *f);

/*
 * Check a fleet plan with its allocation against snapshot s: no negative launch, no launch of an
 * offer marked unavailable or beyond the room its quotas leave, no released node that the
 * allocation uses. 0 or ERR_INTERNAL.
 */
int fleet_plan_check(const struct snapshot *s, const struct fleet_plan *f, const struct alloc *a);

/*
 * The snapshot s with only the nodes whose keep[] is set (s->nnodes values): *sub borrows s's
 * jobs, offers and booting instances; its nodes and current allocation (a job with a replica on a
 * dropped node holds nothing: it restarts anyway) are new, owned by *sub (free with
 * snapshot_sub_free); map[k] (s->nnodes values, written) is the index in *sub of node k, or -1.
 * ERR_NOMEM; ERR_INVAL when no node is kept.
 */
int snapshot_sub_new(const struct snapshot *s, const unsigned char *keep, int *map,
                     struct snapshot **sub);

void snapshot_sub_free(struct snapshot *sub);

/*
 * The snapshot s with only the jobs whose keep[] is set (s->njobs values): *sub copies their jobs
 * and current rows (owned by *sub, free with snapshot_jobs_free) and borrows the rest; jmap[i]
 * (written for sub's njobs jobs) is the index in s of sub's job i. ERR_NOMEM.
 */
int snapshot_jobs_new(const struct snapshot *s, const unsigned char *keep, int *jmap,
                      struct snapshot **sub);

void snapshot_jobs_free(struct snapshot *sub);

/* Write into a (rows as s's) the allocation sa of sub-snapshot nodes mapped back through map.
 * ERR_RANGE if it does not fit. */
int snapshot_sub_unmap(const struct alloc *sa, const int *map, int nnodes, struct alloc *a);

#endif
