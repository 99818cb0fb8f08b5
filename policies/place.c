/* place.c: placing replicas on nodes, shared by the baselines. */
#include "policies/policy.h"

#include "util/error.h"

int policy_fill_most_free(struct alloc *out, int j, int n, int *free)
{
    int total = 0;

    for (int i = 0; i < out->nnodes; i++)
        total += free[i];
    if (total < n)
        return ERR_RANGE;
    while (n > 0) {
        int best = 0, take, rc;

        for (int i = 1; i < out->nnodes; i++)
            if (free[i] > free[best])
                best = i;
        take = free[best] < n ? free[best] : n;
        if ((rc = alloc_add(out, j, best, take)) < 0)
            return rc;
        free[best] -= take;
        n -= take;
    }
    return 0;
}
