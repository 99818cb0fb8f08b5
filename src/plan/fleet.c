/* fleet.c: fleet plans, their checks, and snapshots restricted to the nodes a plan keeps. */
#include "plan/fleet.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

int fleet_plan_new(const struct snapshot *s, struct fleet_plan **out)
{
    struct fleet_plan *f = calloc(1, sizeof(*f));

    if (!f)
        return ERR_NOMEM;
    f->noffers = s->noffers;
    f->nnodes = s->nnodes;
    f->nbooting = s->nbooting;
    f->launch = calloc((size_t)s->noffers + 1, sizeof(int));
    f->release = calloc((size_t)s->nnodes + 1, 1);
    f->cancel = calloc((size_t)s->nbooting + 1, 1);
    if (!f->launch || !f->release || !f->cancel) {
        fleet_plan_free(f);
        return ERR_NOMEM;
    }
    *out = f;
    return 0;
}

void fleet_plan_free(struct fleet_plan *f)
{
    if (!f)
        return;
    free(f->launch);
    free(f->release);
    free(f->cancel);
    free(f);
}

void fleet_plan_clear(struct fleet_plan *f)
{
    memset(f->launch, 0, (size_t)f->noffers * sizeof(int));
    memset(f->release, 0, (size_t)f->nnodes);
    memset(f->cancel, 0, (size_t)f->nbooting);
}

int fleet_plan_empty(const struct fleet_plan *f)
{
    for (int o = 0; o < f->noffers; o++)
        if (f->launch[o])
            return 0;
    for (int n = 0; n < f->nnodes; n++)
        if (f->release[n])
            return 0;
    for (int b = 0; b < f->nbooting; b++)
        if (f->cancel[b])
            return 0;
    return 1;
}

int fleet_offer_room(const struct snapshot *s, int o)
{
    if (o < 0 || o >= s->noffers || s->offers[o].unavailable)
        return 0;
    if (!s->offers[o].capped)
        return INT_MAX;
    return s->offers[o].room > 0 ? s->offers[o].room : 0;
}

/* What offer o's room leaves after the launches f plans there (INT_MAX: no limit). */
static int fleet_room_left(const struct snapshot *s, int o, const struct fleet_plan *f)
{
    int room = fleet_offer_room(s, o);

    return room == INT_MAX ? INT_MAX : room - f->launch[o];
}

/* Launch up to n more on offer o within its room; returns how many. */
static int fleet_launch_within(const struct snapshot *s, int o, int n, struct fleet_plan *f)
{
    int room = fleet_room_left(s, o, f);
    int k;

    k = n < room ? n : room;
    if (k <= 0)
        return 0;
    f->launch[o] += k;
    return k;
}

int fleet_plan_launch(const struct snapshot *s, int o, int n, int spill, struct fleet_plan *f)
{
    int done;

    if (o < 0 || o >= s->noffers || n <= 0)
        return 0;
    done = fleet_launch_within(s, o, n, f);
    while (spill && done < n) {
        /* the next cheapest per GPU of the same market and node size with room left */
        int best = -1;
        double best_p = 0;

        for (int k = 0; k < s->noffers; k++) {
            const struct snap_offer *x = &s->offers[k];

            if (k == o || x->spot != s->offers[o].spot || x->gpus != s->offers[o].gpus ||
                !isfinite(x->price) || fleet_room_left(s, k, f) <= 0)
                continue;
            if (best < 0 || x->price / x->gpus < best_p) {
                best = k;
                best_p = x->price / x->gpus;
            }
        }
        if (best < 0)
            break;
        done += fleet_launch_within(s, best, n - done, f);
    }
    return done;
}

int fleet_plan_check(const struct snapshot *s, const struct fleet_plan *f, const struct alloc *a)
{
    int *used, rc = 0;

    if (f->noffers != s->noffers || f->nnodes != s->nnodes || f->nbooting != s->nbooting)
        return ERR_INTERNAL;
    for (int o = 0; o < f->noffers; o++)
        if (f->launch[o] < 0 || (f->launch[o] > 0 && s->offers[o].unavailable) ||
            (s->offers[o].capped && f->launch[o] > fleet_offer_room(s, o)))
            return ERR_INTERNAL;
    if (!(used = calloc((size_t)s->nnodes + 1, sizeof(int))))
        return ERR_NOMEM;
    alloc_node_usage(a, used);
    for (int n = 0; n < s->nnodes; n++)
        if (f->release[n] && used[n] > 0)
            rc = ERR_INTERNAL;
    free(used);
    return rc;
}

/* The sub-snapshot and the memory it owns, in one block. */
struct snapshot_sub {
    struct snapshot snap; /* first, so that a struct snapshot * is the block */
    struct snap_node *nodes;
    struct alloc *current;
};

int snapshot_sub_new(const struct snapshot *s, const unsigned char *keep, int *map,
                     struct snapshot **sub)
{
    struct snapshot_sub *b = NULL;
    int n = 0, gpus = 0, rc = 0;

    for (int k = 0; k < s->nnodes; k++)
        if (keep[k]) {
            n++;
            gpus += s->nodes[k].gpus;
        }
    if (n == 0 || gpus == 0)
        return ERR_INVAL;
    if (!(b = calloc(1, sizeof(*b))) || !(b->nodes = calloc((size_t)n, sizeof(*b->nodes)))) {
        rc = ERR_NOMEM;
        goto out;
    }
    if ((rc = alloc_new(s->njobs, n, gpus, &b->current)) < 0)
        goto out;
    n = 0;
    for (int k = 0; k < s->nnodes; k++) {
        map[k] = keep[k] ? n : -1;
        if (keep[k])
            b->nodes[n++] = s->nodes[k];
    }
    for (int j = 0; j < s->njobs; j++) {
        const int *row = s->current->node + (size_t)j * (size_t)s->current->width;
        int split = 0;

        /* a job whose run is split by a dropped node restarts anyway: keep nothing */
        for (int i = 0; i < s->current->count[j]; i++)
            split |= map[row[i]] < 0;
        for (int i = 0; i < s->current->count[j] && !split; i++)
            if (alloc_add(b->current, j, map[row[i]], 1) < 0) {
                alloc_clear_job(b->current, j);
                break;
            }
    }
    b->snap = *s;
    b->snap.nnodes = n;
    b->snap.nodes = b->nodes;
    b->snap.current = b->current;
    *sub = &b->snap;
    b = NULL;
out:
    if (b) {
        alloc_free(b->current);
        free(b->nodes);
        free(b);
    }
    return rc;
}

void snapshot_sub_free(struct snapshot *sub)
{
    struct snapshot_sub *b = (struct snapshot_sub *)sub;

    if (!b)
        return;
    alloc_free(b->current);
    free(b->nodes);
    free(b);
}

int snapshot_sub_unmap(const struct alloc *sa, const int *map, int nnodes, struct alloc *a)
{
    int *back = malloc(((size_t)sa->nnodes + 1) * sizeof(int)), rc = 0;

    if (!back)
        return ERR_NOMEM;
    for (int k = 0; k < nnodes; k++)
        if (map[k] >= 0)
            back[map[k]] = k;
    for (int j = 0; j < sa->njobs && rc == 0; j++) {
        const int *row = sa->node + (size_t)j * (size_t)sa->width;

        alloc_clear_job(a, j);
        for (int i = 0; i < sa->count[j] && rc == 0; i++)
            rc = alloc_add(a, j, back[row[i]], 1);
    }
    free(back);
    return rc;
}

/* A job-restricted snapshot and what it owns. */
struct snapshot_jobs {
    struct snapshot snap; /* first, so that a struct snapshot * is the block */
    struct snap_job *jobs;
    struct alloc *current;
};

int snapshot_jobs_new(const struct snapshot *s, const unsigned char *keep, int *jmap,
                      struct snapshot **sub)
{
    struct snapshot_jobs *b = calloc(1, sizeof(*b));
    int n = 0, rc;

    if (!b || !(b->jobs = calloc((size_t)s->njobs + 1, sizeof(*b->jobs)))) {
        rc = ERR_NOMEM;
        goto out;
    }
    for (int j = 0; j < s->njobs; j++)
        if (keep[j])
            jmap[n++] = j;
    if ((rc = alloc_new(n, s->current->nnodes, s->current->width, &b->current)) < 0)
        goto out;
    for (int i = 0; i < n; i++) {
        const int *row = s->current->node + (size_t)jmap[i] * (size_t)s->current->width;

        b->jobs[i] = s->jobs[jmap[i]];
        b->current->count[i] = s->current->count[jmap[i]];
        memcpy(b->current->node + (size_t)i * (size_t)b->current->width, row,
               (size_t)s->current->count[jmap[i]] * sizeof(int));
    }
    b->snap = *s;
    b->snap.njobs = n;
    b->snap.jobs = b->jobs;
    b->snap.current = b->current;
    *sub = &b->snap;
    b = NULL;
out:
    if (b) {
        alloc_free(b->current);
        free(b->jobs);
        free(b);
    }
    return rc;
}

void snapshot_jobs_free(struct snapshot *sub)
{
    struct snapshot_jobs *b = (struct snapshot_jobs *)sub;

    if (!b)
        return;
    alloc_free(b->current);
    free(b->jobs);
    free(b);
}
