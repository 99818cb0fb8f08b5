/* snapshot.c: small questions about a snapshot. */
#include "plan/snapshot.h"

int snapshot_gpus(const struct snapshot *s)
{
    int n = 0;

    for (int i = 0; i < s->nnodes; i++)
        n += s->nodes[i].gpus;
    return n;
}
