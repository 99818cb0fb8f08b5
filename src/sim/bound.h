/* bound.h: how fast a workload could finish on the GPU-hours spent: each job at every epoch on
 * the GPU count that best trades its completion time against GPU-time, at its ground truth's best
 * goodput, with no restarts, boots, waits or learning. No policy in the simulator can beat it;
 * how far a run is from it says what execution costs. */
#ifndef CASTOR_SIM_BOUND_H
#define CASTOR_SIM_BOUND_H

#include "sim/app.h"

/*
 * The best goodput (progress per second) of a's ground truth during each epoch on k = 1 to kmax
 * GPUs: the most over local batch sizes on a grid of the measured range (17 points), 0 to 4
 * accumulation steps at the largest local batch, and two placements on nodes of gpn GPUs (packed on
 * the fewest nodes, and spread evenly over them). Writes a->max_epochs x kmax values, row by epoch,
 * into best (owned by the caller); 0 where no configuration is feasible or a placement would
 * span more than 64 nodes. Cannot fail.
 */
void sim_bound_goodputs(struct app *a, int gpn, int kmax, double *best);

/*
 * A lower bound on the average completion time of a workload whose jobs spend gpu_seconds in all:
 * for every price lambda (job-seconds per GPU-second) on a grid, each job's least (completion
 * time + lambda x GPU-time), epoch by epoch from the best goodputs of its application
 * (sim_bound_goodputs, kmax GPUs at most), summed, minus lambda x gpu_seconds, over the number of
 * jobs; the largest over the grid. The workload has count[i] jobs of application apps[i] whose
 * table is best[i], for i < napps (all borrowed). Returns INFINITY when some job cannot run at
 * all, 0 for no jobs.
 */
double sim_bound_avg_jct(int napps, const struct app *const *apps, const double *const *best,
                         const int *count, int kmax, double gpu_seconds);

/*
 * The inverse: the least GPU-seconds with which the bound above reaches an average completion
 * time of avg_jct on the same workload (the largest over the grid's positive prices of (the
 * jobs' summed minima minus njobs x avg_jct) over the price, at least 0). No policy in the
 * simulator finishes the workload at that average on fewer. Returns INFINITY when avg_jct is
 * below every job at its fastest (or some job cannot run at all), 0 for no jobs.
 */
double sim_bound_least_gpu_seconds(int napps, const struct app *const *apps,
                                   const double *const *best, const int *count, int kmax,
                                   double avg_jct);

#endif
