/* alloc.c: allocations of replicas to nodes. */
#include "plan/alloc.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

int alloc_new(int njobs, int nnodes, int width, struct alloc **out)
{
    struct alloc *a;

    if (njobs < 0 || nnodes < 1 || width < 1)
        return ERR_INVAL;
    a = calloc(1, sizeof(*a));
    if (!a)
        return ERR_NOMEM;
    a->njobs = njobs;
    a->nnodes = nnodes;
    a->width = width;
    a->count = calloc((size_t)(njobs ? njobs : 1), sizeof(int));
    a->node = calloc((size_t)(njobs ? njobs : 1) * (size_t)width, sizeof(int));
    if (!a->count || !a->node) {
        alloc_free(a);
        return ERR_NOMEM;
    }
    *out = a;
    return 0;
}

void alloc_free(struct alloc *a)
{
    if (!a)
        return;
    free(a->count);
    free(a->node);
    free(a);
}

void alloc_copy(struct alloc *dst, const struct alloc *src)
{
    assert(dst->njobs == src->njobs && dst->width == src->width && dst->nnodes == src->nnodes);
    memcpy(dst->count, src->count, (size_t)src->njobs * sizeof(int));
    memcpy(dst->node, src->node, (size_t)src->njobs * (size_t)src->width * sizeof(int));
}

void alloc_clear_job(struct alloc *a, int j)
{
    a->count[j] = 0;
}

int alloc_add(struct alloc *a, int j, int node, int n)
{
    int *row = a->node + (size_t)j * (size_t)a->width;

    if (node < 0 || node >= a->nnodes || n < 0 || a->count[j] + n > a->width)
        return ERR_RANGE;
    /* a node's replicas form one run: a node seen earlier can only be extended at the end */
    for (int i = 0; i + 1 < a->count[j]; i++)
        if (row[i] == node && row[a->count[j] - 1] != node)
            return ERR_INVAL;
    for (int i = 0; i < n; i++)
        row[a->count[j]++] = node;
    return 0;
}

int alloc_on_node(const struct alloc *a, int j, int node)
{
    const int *row = a->node + (size_t)j * (size_t)a->width;
    int n = 0;

    for (int i = 0; i < a->count[j]; i++)
        n += row[i] == node;
    return n;
}

int alloc_nodes_used(const struct alloc *a, int j)
{
    const int *row = a->node + (size_t)j * (size_t)a->width;
    int n = 0;

    /* runs are contiguous, so distinct nodes = number of runs */
    for (int i = 0; i < a->count[j]; i++)
        n += i == 0 || row[i] != row[i - 1];
    return n;
}

int alloc_job_equal(const struct alloc *a, int ja, const struct alloc *b, int jb)
{
    if (a->count[ja] != b->count[jb])
        return 0;
    return memcmp(a->node + (size_t)ja * (size_t)a->width, b->node + (size_t)jb * (size_t)b->width,
                  (size_t)a->count[ja] * sizeof(int)) == 0;
}

int alloc_placement(const struct alloc *a, int j, int *place)
{
    const int *row = a->node + (size_t)j * (size_t)a->width;
    int n = 0;

    for (int i = 0; i < a->count[j]; i++) {
        if (i == 0 || row[i] != row[i - 1])
            place[n++] = 0;
        place[n - 1]++;
    }
    return n;
}

void alloc_node_usage(const struct alloc *a, int *used)
{
    memset(used, 0, (size_t)a->nnodes * sizeof(int));
    for (int j = 0; j < a->njobs; j++)
        for (int i = 0; i < a->count[j]; i++)
            used[a->node[(size_t)j * (size_t)a->width + (size_t)i]]++;
}
