/* snapshot.c: small questions about a snapshot. */
#include "plan/snapshot.h"

int snapshot_gpus(const struct snapshot *s)
{
    int n = 0;

    for (int i = 0; i < s->nnodes; i++)
        n += s->nodes[i].gpus;
    return n;
}

double snapshot_job_weight(const struct snap_job *sj)
{
    return sj->weight > 0 ? sj->weight : 1.0;
}

int snapshot_noticed(const struct snapshot *s)
{
    int n = 0;

    for (int o = 0; o < s->noffers; o++)
        n += s->offers[o].noticed;
    return n;
}
