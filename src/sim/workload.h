/* workload.h: workload traces: which jobs arrive when, in the Pollux artifact's CSV format
 * (name,time,application,num_replicas,batch_size). */
#ifndef CASTOR_SIM_WORKLOAD_H
#define CASTOR_SIM_WORKLOAD_H

#include <stddef.h>

#include "util/error.h"

struct workload_job {
    char name[64];
    double submit_time;   /* seconds from the start of the trace */
    char application[32]; /* a profile name: cifar10, imagenet, ... */
    int num_replicas;     /* the GPUs the baselines give it (Tiresias) */
    double batch_size;    /* the total batch the baselines use (Optimus, Tiresias) */
    double deadline;      /* seconds after submission by which it should finish; 0: none */
    double checkpoint_s;  /* seconds between its checkpoints (0: only at restarts and notices);
                           * < 0: the world's interval */
    int reconfigure;      /* how its workers take a new batch configuration: WORKLOAD_RECONF_* */
    int line;             /* its line in the trace, for messages */
};

/* A job's reconfigure column (the job spec's `reconfigure`). */
#define WORKLOAD_RECONF_WORLD (-1)  /* empty, or no column: the world's */
#define WORKLOAD_RECONF_IN_FLIGHT 0 /* its workers apply a new configuration as they run */
#define WORKLOAD_RECONF_RESTART 1   /* its replicas restart into a new configuration */

/* Owned by the caller; free with workload_free. */
struct workload {
    char *name; /* the file's base name without .csv ("workload-1") */
    char *path; /* the file it was loaded from */
    size_t n;
    struct workload_job *jobs;
};

/*
 * Load a trace. An optional column `deadline` gives each job the seconds after its submission by
 * which it should finish (empty: none); an optional column `checkpoint` the seconds between its
 * checkpoints, 0 to 86400 (0: only at restarts and notices; empty: the world's interval); an
 * optional column `reconfigure` how its workers take a new batch configuration, `restart` or
 * `in_flight` as a job spec's key (empty: the world's). known is
 * a NULL-terminated list of application names the caller can emulate; a job naming another is an
 * error. Errors name file, line and column in *e (nothing is returned): a missing column, ERR_EMPTY
 * for a trace with no jobs, ERR_PARSE for a negative or non-numeric time, a time earlier than the
 * row before (traces are sorted), an empty or over-long name, a duplicate name, num_replicas not a
 * whole number >= 1, batch_size not positive, a deadline that is not a positive number of seconds
 * (one at or before the submission), a checkpoint interval that is not a number of seconds from 0
 * to 86400, a reconfigure that is neither restart nor in_flight, and ERR_UNKNOWN for an unknown
 * application.
 */
int workload_load(const char *path, const char *const *known, struct workload **out,
                  struct error *e);

void workload_free(struct workload *w);

#endif
