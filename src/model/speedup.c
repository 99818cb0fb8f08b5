/* speedup.c: memoised speedup tables. */
#include "model/speedup.h"

#include <math.h>
#include <stdlib.h>

#include "util/error.h"

struct speedup_table {
    struct tput_params tp;
    struct grad_params gp;
    struct bsz_limits lim;
    int max_nodes;
    int max_replicas;
    double base;
    long computed;
    double *cells; /* (max_nodes + 1) x (max_replicas + 1); NAN = not yet computed */
};

int speedup_new(const struct tput_params *tp, const struct grad_params *gp,
                const struct bsz_limits *lim, int max_nodes, int max_replicas, int base_nodes,
                int base_replicas, struct speedup_table **out)
{
    struct speedup_table *t;
    struct bsz_choice c;
    size_t ncells;
    int rc;

    if (max_nodes < 1 || max_replicas < max_nodes || base_nodes < 1 || base_nodes > max_nodes ||
        base_replicas < base_nodes || base_replicas > max_replicas)
        return ERR_INVAL;
    rc = bsz_optimize(tp, gp, lim, base_nodes, base_replicas, &c);
    if (rc < 0)
        return rc;
    if (!(c.goodput > 0))
        return ERR_RANGE;
    t = calloc(1, sizeof(*t));
    ncells = (size_t)(max_nodes + 1) * (size_t)(max_replicas + 1);
    if (!t || !(t->cells = malloc(ncells * sizeof(double)))) {
        free(t);
        return ERR_NOMEM;
    }
    for (size_t i = 0; i < ncells; i++)
        t->cells[i] = NAN;
    t->tp = *tp;
    t->gp = *gp;
    t->lim = *lim;
    t->max_nodes = max_nodes;
    t->max_replicas = max_replicas;
    t->base = c.goodput;
    *out = t;
    return 0;
}

void speedup_free(struct speedup_table *t)
{
    if (!t)
        return;
    free(t->cells);
    free(t);
}

double speedup_get(struct speedup_table *t, int nodes, int replicas)
{
    struct bsz_choice c;
    double *cell;

    if (nodes < 1 || replicas < nodes || nodes > t->max_nodes || replicas > t->max_replicas)
        return 0.0;
    cell = &t->cells[(size_t)nodes * (size_t)(t->max_replicas + 1) + (size_t)replicas];
    if (isnan(*cell)) {
        *cell = bsz_optimize(&t->tp, &t->gp, &t->lim, nodes, replicas, &c) == 0
                    ? c.goodput / t->base
                    : 0.0;
        t->computed++;
    }
    return *cell;
}

double speedup_base(const struct speedup_table *t)
{
    return t->base;
}

long speedup_computed(const struct speedup_table *t)
{
    return t->computed;
}
