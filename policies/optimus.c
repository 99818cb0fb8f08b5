/* optimus.c: Optimus+Oracle, the published Pollux simulator's baseline: greedy marginal gain. */
#include "policies/policy.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>

#include "util/error.h"

/* Per-job working state of one decision. */
struct optimus_job {
    double remaining; /* optimizer steps still to go (the oracle's) */
    double t_next;    /* T(replicas + 1), cached when the gain was computed */
    double gain;      /* seconds saved by one more GPU: (T(r) - T(r+1)) x remaining */
    int max_replicas;
    int replicas;
};

/* The most replicas job j may get: floor(req_batch / min_local) (min_local 0 counting as 1),
 * capped by its owner's limit when there is one. */
static int optimus_max_replicas(const struct snap_job *job)
{
    double min_local = job->lim.min_local > 0 ? job->lim.min_local : 1.0;
    double m = floor(job->req_batch / min_local);
    int n = 0;

    if (m >= (double)INT_MAX)
        n = INT_MAX;
    else if (m >= 1)
        n = (int)m;
    if (job->max_replicas > 0 && n > job->max_replicas)
        n = job->max_replicas;
    return n;
}

/*
 * The gain of one more GPU for job j, given `left` GPUs still unassigned: 0 when it may not grow
 * (its limit, or no GPU left); otherwise (T(r) - T(r+1)) x remaining, with T(r) taken from t_now.
 * A configuration the oracle calls impossible (NaN) gains nothing. Caches T(r+1) in t_next.
 */
static void optimus_gain(const struct snapshot *s, int j, struct optimus_job *oj, double t_now,
                         int left)
{
    double g;

    oj->gain = 0.0;
    if (oj->replicas + 1 > oj->max_replicas || left < 1)
        return;
    oj->t_next = s->oracle->step_time(s->oracle->ctx, j, oj->replicas + 1);
    g = (t_now - oj->t_next) * oj->remaining;
    oj->gain = isfinite(g) ? g : 0.0;
}

/*
 * Place the replica counts chosen in jobs[] into out (a copy of s->current): a job keeps its
 * current nodes only if its count is unchanged; the others are filled on the nodes with the most
 * free GPUs, jobs taken by replica count ascending (stable, so ties in submission order).
 */
static int optimus_place(const struct snapshot *s, const struct optimus_job *jobs, int gpus,
                         struct alloc *out)
{
    int *free_gpus = NULL, *start = NULL, *order = NULL;
    int rc = ERR_NOMEM;

    free_gpus = calloc((size_t)s->nnodes, sizeof(int));
    start = calloc((size_t)gpus + 2, sizeof(int));
    order = calloc((size_t)(s->njobs ? s->njobs : 1), sizeof(int));
    if (!free_gpus || !start || !order)
        goto out;
    for (int j = 0; j < s->njobs; j++)
        if (out->count[j] != jobs[j].replicas)
            alloc_clear_job(out, j);
    alloc_node_usage(out, free_gpus);
    for (int i = 0; i < s->nnodes; i++) {
        free_gpus[i] = s->nodes[i].gpus - free_gpus[i];
        if (free_gpus[i] < 0)
            free_gpus[i] = 0;
    }
    /* counting sort by replica count (at most gpus), stable */
    for (int j = 0; j < s->njobs; j++)
        start[jobs[j].replicas + 1]++;
    for (int r = 1; r <= gpus + 1; r++)
        start[r] += start[r - 1];
    for (int j = 0; j < s->njobs; j++)
        order[start[jobs[j].replicas]++] = j;
    rc = 0;
    for (int k = 0; k < s->njobs && rc == 0; k++) {
        int j = order[k];

        if (jobs[j].replicas > 0 && out->count[j] == 0)
            rc = policy_fill_most_free(out, j, jobs[j].replicas, free_gpus);
    }
out:
    free(free_gpus);
    free(start);
    free(order);
    return rc;
}

/*
 * Optimus+Oracle (SPEC 3): every job gets one GPU (its gang minimum if more) in submission order
 * while GPUs last; then, one
 * GPU at a time, the job whose next GPU saves the most predicted seconds (ties to the first job)
 * grows, until no GPU is left or no job gains. Stateless; seed unused. ERR_INVAL without an
 * oracle or with mismatched sizes; ERR_NOMEM; ERR_RANGE if the current allocation overfills nodes.
 */
static int optimus_allocate(void *ctx, const struct snapshot *s, uint64_t seed, struct alloc *out)
{
    struct optimus_job *jobs = NULL;
    int gpus, left, rc;

    (void)ctx;
    (void)seed;
    if (!s || !out || !s->oracle || !s->oracle->step_time || !s->oracle->iterations_left)
        return ERR_INVAL;
    if (out->njobs != s->njobs || out->nnodes != s->nnodes)
        return ERR_INVAL;
    if (s->njobs == 0)
        return 0;
    jobs = calloc((size_t)s->njobs, sizeof(*jobs));
    if (!jobs)
        return ERR_NOMEM;
    gpus = snapshot_gpus(s);
    left = gpus;
    for (int j = 0; j < s->njobs; j++) {
        struct optimus_job *oj = &jobs[j];

        oj->remaining = s->oracle->iterations_left(s->oracle->ctx, j);
        oj->max_replicas = optimus_max_replicas(&s->jobs[j]);
        int first = s->jobs[j].min_replicas > 1 ? s->jobs[j].min_replicas : 1;

        if (left < first || first > oj->max_replicas)
            continue; /* not its gang minimum: 0 replicas, gain 0 */
        oj->replicas = first;
        left -= first;
        if (oj->replicas + 1 <= oj->max_replicas && left >= 1)
            optimus_gain(s, j, oj, s->oracle->step_time(s->oracle->ctx, j, first), left);
    }
    while (left > 0) {
        int best = 0;

        for (int j = 1; j < s->njobs; j++)
            if (jobs[j].gain > jobs[best].gain)
                best = j;
        if (!(jobs[best].gain > 0))
            break;
        jobs[best].replicas++;
        /* T(r) of the new count is the T(r+1) cached with the gain; the spec tests GPUs left
         * before taking this one */
        optimus_gain(s, best, &jobs[best], jobs[best].t_next, left);
        left--;
    }
    rc = optimus_place(s, jobs, gpus, out);
    free(jobs);
    return rc;
}

const struct policy_ops policy_optimus = {
    .name = "optimus",
    .summary = "Optimus+Oracle: greedy GPUs by predicted time saved, from the true step times",
    .create = NULL,
    .destroy = NULL,
    .allocate = optimus_allocate,
};
