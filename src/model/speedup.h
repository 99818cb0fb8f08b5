/* speedup.h: a job's speedup table: best goodput on (nodes, replicas) relative to a base
 * configuration, memoised per job because the allocator asks for the same cells many times. */
#ifndef CASTOR_MODEL_SPEEDUP_H
#define CASTOR_MODEL_SPEEDUP_H

#include "model/bsz.h"
#include "model/goodput.h"
#include "model/tput.h"

/* Owned by the job it describes; built with speedup_new, freed with speedup_free. It copies the
 * parameters it is given, so a refit means a new table. */
struct speedup_table;

/*
 * A table for nodes in [0, max_nodes] and replicas in [0, max_replicas], whose speedup 1 is the
 * best goodput on (base_nodes, base_replicas) (Pollux uses one GPU, or the job's fair share).
 * Errors: ERR_INVAL (bad sizes, base outside the table), ERR_RANGE (the base configuration has no
 * feasible batch size), ERR_NOMEM. On success *out is a new table owned by the caller.
 */
int speedup_new(const struct tput_params *tp, const struct grad_params *gp,
                const struct bsz_limits *lim, int max_nodes, int max_replicas, int base_nodes,
                int base_replicas, struct speedup_table **out);

void speedup_free(struct speedup_table *t);

/* Speedup on (nodes, replicas), computed once then remembered: 0 for (0, 0), for replicas <
 * nodes, outside the table, and where no batch size is feasible. */
double speedup_get(struct speedup_table *t, int nodes, int replicas);

/* The base goodput (speedup 1), M0-equivalent samples per second. */
double speedup_base(const struct speedup_table *t);

/* Cells computed so far (each computed at most once). */
long speedup_computed(const struct speedup_table *t);

#endif
