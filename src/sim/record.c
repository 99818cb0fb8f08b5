/* record.c: collecting a simulation's results. */
#include "sim/record.h"

#include <stdlib.h>
#include <string.h>

#include "model/accuracy.h"
#include "util/error.h"

int sim_record_new(const struct sim_world *w, const char *workload, const char *policy, int gpus,
                   struct sim_record **out)
{
    struct sim_record *r = calloc(1, sizeof(*r));
    int n = sim_world_njobs(w);

    if (!r)
        return ERR_NOMEM;
    r->njobs = n;
    r->gpus = gpus;
    r->fleet = sim_world_has_fleet(w);
    r->workload = strdup(workload);
    r->policy = strdup(policy);
    r->names = calloc((size_t)n, sizeof(char *));
    r->apps = calloc((size_t)n, sizeof(char *));
    r->submit = calloc((size_t)n, sizeof(double));
    r->jct = calloc((size_t)n, sizeof(double));
    r->restarts = calloc((size_t)n, sizeof(int));
    if (!r->workload || !r->policy || !r->names || !r->apps || !r->submit || !r->jct ||
        !r->restarts)
        goto fail;
    for (int i = 0; i < n; i++) {
        const struct sim_job *j = sim_world_job(w, i);

        if (j->spec->deadline > 0 && !r->deadline &&
            !(r->deadline = calloc((size_t)n, sizeof(double))))
            goto fail;
        if (r->deadline)
            r->deadline[i] = j->spec->deadline > 0 ? j->spec->deadline : 0;
        r->names[i] = strdup(j->spec->name);
        r->apps[i] = strdup(j->spec->application);
        if (!r->names[i] || !r->apps[i])
            goto fail;
        r->submit[i] = j->spec->submit_time;
        r->jct[i] = -1;
    }
    *out = r;
    return 0;
fail:
    sim_record_free(r);
    return ERR_NOMEM;
}

void sim_record_free(struct sim_record *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->njobs; i++) {
        if (r->names)
            free(r->names[i]);
        if (r->apps)
            free(r->apps[i]);
    }
    free(r->names);
    free(r->apps);
    free(r->submit);
    free(r->jct);
    free(r->restarts);
    free(r->deadline);
    free(r->times);
    free(r->held);
    free(r->spot_nodes);
    free(r->ondemand_nodes);
    free(r->dollars);
    free(r->workload);
    free(r->policy);
    free(r);
}

int sim_record_sample(struct sim_record *r, const struct sim_world *w)
{
    if (r->ntimes == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 256;
        double *t = realloc(r->times, cap * sizeof(double));
        unsigned short *h;

        if (!t)
            return ERR_NOMEM;
        r->times = t;
        h = realloc(r->held, cap * (size_t)r->njobs * sizeof(unsigned short));
        if (!h)
            return ERR_NOMEM;
        r->held = h;
        if (r->fleet) {
            unsigned short *sp = realloc(r->spot_nodes, cap * sizeof(unsigned short));
            unsigned short *od;
            double *d;

            if (!sp)
                return ERR_NOMEM;
            r->spot_nodes = sp;
            if (!(od = realloc(r->ondemand_nodes, cap * sizeof(unsigned short))))
                return ERR_NOMEM;
            r->ondemand_nodes = od;
            if (!(d = realloc(r->dollars, cap * sizeof(double))))
                return ERR_NOMEM;
            r->dollars = d;
        }
        r->cap = cap;
    }
    if (r->fleet) {
        struct sim_fleet_stats st;

        sim_world_fleet_stats(w, &st);
        r->spot_nodes[r->ntimes] = (unsigned short)sim_world_fleet_nodes(w, 1);
        r->ondemand_nodes[r->ntimes] = (unsigned short)sim_world_fleet_nodes(w, 0);
        r->dollars[r->ntimes] = st.dollars;
    }
    r->times[r->ntimes] = sim_world_now(w);
    for (int i = 0; i < r->njobs; i++)
        r->held[r->ntimes * (size_t)r->njobs + (size_t)i] =
            (unsigned short)sim_world_job_gpus(w, i);
    r->ntimes++;
    return 0;
}

void sim_record_finish(struct sim_record *r, const struct sim_world *w)
{
    for (int i = 0; i < r->njobs; i++) {
        const struct sim_job *j = sim_world_job(w, i);

        r->jct[i] = sim_job_done(j) ? j->completion - j->spec->submit_time : -1;
        r->restarts[i] = j->restarts < 0 ? 0 : j->restarts;
    }
}

void sim_record_stats(const struct sim_record *r, double *avg, double *p99, double *makespan)
{
    double *v = malloc((size_t)(r->njobs ? r->njobs : 1) * sizeof(double));
    double sum = 0, first = -1, last = 0;
    size_t n = 0;

    *avg = *p99 = *makespan = 0;
    if (!v)
        return;
    for (int i = 0; i < r->njobs; i++) {
        if (first < 0 || r->submit[i] < first)
            first = r->submit[i];
        if (r->jct[i] < 0)
            continue;
        v[n++] = r->jct[i];
        sum += r->jct[i];
        if (r->submit[i] + r->jct[i] > last)
            last = r->submit[i] + r->jct[i];
    }
    if (n) {
        *avg = sum / (double)n;
        *p99 = accuracy_quantile(v, n, 0.99);
        *makespan = last - first;
    }
    free(v);
}
