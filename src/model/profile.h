/* profile.h: a job's observed step times, summarised per configuration (nodes, replicas, local
 * batch), the data a throughput model is fitted to. The summary keeps what the fit needs to weigh
 * every observation as if it were fitted on its own: the count, and the mean and spread of the
 * log-times. Pure data; no I/O. */
#ifndef CASTOR_MODEL_PROFILE_H
#define CASTOR_MODEL_PROFILE_H

#include <stddef.h>

#include "model/tput.h"

struct profile_entry {
    struct tput_point x;
    double accum_time; /* mean compute time per micro-batch (step minus sync), seconds */
    double optim_time; /* mean optimizer step time without accumulation, seconds */
    double sync_time;  /* mean time spent synchronising gradients, seconds */
    double log_accum;  /* mean of log(compute time) over the observations */
    double log_optim;  /* mean of log(step time) */
    double ss_accum;   /* sum of squared deviations of log(compute time) from log_accum */
    double ss_optim;   /* the same for log(step time) */
    long count;        /* observations summarised */
};

/* Owned by whoever declares it; profile_init before use, profile_free after. sync_prior, when
 * above 0, is what one all-reduce of the job's gradients takes between two GPUs of one node
 * (seconds, from a bandwidth measurement: docs/worker.md); the models take it as the
 * synchronisation time on one node until they have seen one, instead of assuming it free. */
struct profile {
    size_t n;
    size_t cap;
    struct profile_entry *entries;
    double sync_prior;
};

void profile_init(struct profile *p);
void profile_free(struct profile *p);

/*
 * Add one observation: a step of step_time seconds of which sync_time was synchronisation, at x.
 * Errors (nothing changes): ERR_INVAL for nodes < 1, replicas < nodes, local_bsz <= 0, times not
 * finite, step_time <= 0, sync_time < 0 or sync_time >= step_time; ERR_NOMEM.
 */
int profile_add(struct profile *p, const struct tput_point *x, double step_time, double sync_time);

/*
 * Merge what another job measured: every configuration of src that dst has no entry for is
 * appended as src summarised it (counts and spreads included); a configuration dst has keeps
 * dst's own measurement. dst's sync_prior is kept unless it has none. src is not changed. Errors
 * (dst unchanged): ERR_NOMEM.
 */
int profile_merge(struct profile *dst, const struct profile *src);

/* What p covers, for the fit's priors. p may be empty (everything zero). */
void profile_coverage(const struct profile *p, struct tput_coverage *cov);

#endif
