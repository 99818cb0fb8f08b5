/* sched_bench.h: `castor bench sched` (see sched_bench.c). */
#ifndef CASTOR_BENCH_SCHED_BENCH_H
#define CASTOR_BENCH_SCHED_BENCH_H

#include <stdio.h>

/* Run the scheduler benchmark with argv (argv[0] is "sched"); returns the exit status. */
int bench_sched(int argc, char **argv, FILE *out, FILE *err);

#endif
