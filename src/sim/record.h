/* record.h: what a simulation leaves behind: each job's completion time, and a timeline of who held
 * how many GPUs, for summaries and reports. */
#ifndef CASTOR_SIM_RECORD_H
#define CASTOR_SIM_RECORD_H

#include <stddef.h>

#include "plan/snapshot.h"
#include "sim/world.h"

struct sim_record {
    char *workload; /* the workload's name (owned) */
    char *policy;   /* (owned) */
    int njobs;
    int gpus;         /* cluster GPUs */
    char **names;     /* njobs job names (owned) */
    char **apps;      /* njobs application names (owned) */
    double *submit;   /* njobs submission times */
    double *jct;      /* njobs completion minus submission times; -1 if unfinished */
    int *restarts;    /* njobs */
    double *deadline; /* njobs: the seconds from submission each must finish in, 0: none; NULL:
                         no job has one */
    /* timeline: ntimes samples of (time, GPUs of each job) */
    size_t ntimes, cap;
    double *times;
    unsigned short *held; /* ntimes x njobs */
    /* the fleet at each sample, in a world with a market (fleet 0 otherwise) */
    int fleet;
    unsigned short *spot_nodes;     /* ntimes: nodes alive of spot offers */
    unsigned short *ondemand_nodes; /* ntimes: of on-demand offers */
    double *dollars;                /* ntimes: billed so far */
    double wall_seconds;            /* how long the simulation took */
};

/* A record for w's jobs (names copied). Errors: ERR_NOMEM. */
int sim_record_new(const struct sim_world *w, const char *workload, const char *policy, int gpus,
                   struct sim_record **out);

void sim_record_free(struct sim_record *r);

/* Sample w now (GPUs per job). Errors: ERR_NOMEM. */
int sim_record_sample(struct sim_record *r, const struct sim_world *w);

/* Copy completion times from w's finished jobs. */
void sim_record_finish(struct sim_record *r, const struct sim_world *w);

/* Average, 99th percentile and makespan (latest completion since the first submission) of the
 * finished jobs' completion times; 0 for empty. */
void sim_record_stats(const struct sim_record *r, double *avg, double *p99, double *makespan);

#endif
