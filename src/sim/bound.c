/* bound.c: the lowest average completion time a workload could reach on the GPU-time spent. */
#include "sim/bound.h"

#include <math.h>

#include "sim/job.h"

/* Lambdas tried: 0, then a log grid from 1e-7 to 1e3 job-seconds per GPU-second. */
#define BOUND_NLAMBDA 300

/* The most nodes a placement of the table spans (more: left at 0, infeasible). */
#define BOUND_MAX_NODES 64

void sim_bound_goodputs(struct app *a, int gpn, int kmax, double *best)
{
    for (int ep = 0; ep < a->max_epochs; ep++) {
        for (int k = 1; k <= kmax; k++) {
            int nodes = (k + gpn - 1) / gpn, packed[BOUND_MAX_NODES], spread[BOUND_MAX_NODES];
            double top = 0, *cell = &best[(size_t)ep * (size_t)kmax + (size_t)(k - 1)];

            *cell = 0;
            if (nodes > BOUND_MAX_NODES)
                continue;
            for (int n = 0; n < nodes; n++) {
                packed[n] = k - n * gpn < gpn ? k - n * gpn : gpn;
                spread[n] = k / nodes + (n < k % nodes);
            }
            for (int p = 0; p < 2; p++) {
                for (int i = 0; i <= 16; i++) {
                    double local =
                        floor(a->min_local * pow((double)a->max_local / a->min_local, i / 16.0));

                    /* accumulating pays only once the local batch is at its largest */
                    for (int s = 0; s <= (i == 16 ? 4 : 0); s++) {
                        struct sim_rate r;
                        double batch = local * k * (s + 1);

                        if (batch < a->init_bsz || batch > a->max_bsz ||
                            sim_job_rate(a, p ? spread : packed, nodes, local, s, ep, &r) < 0)
                            continue;
                        if (r.goodput > top)
                            top = r.goodput;
                    }
                }
            }
            *cell = top;
        }
    }
}

/* One job's least (completion time + lambda x GPU-time), epoch by epoch; INFINITY if an epoch
 * cannot run. */
static double bound_job(const struct app *a, const double *best, int kmax, double lambda)
{
    double total = 0;

    for (int ep = 0; ep < a->max_epochs; ep++) {
        double work = app_progress_needed(a, ep + 1) - app_progress_needed(a, ep), least = INFINITY;

        for (int k = 1; k <= kmax; k++) {
            double g = best[(size_t)ep * (size_t)kmax + (size_t)(k - 1)];

            if (g > 0 && (1 + lambda * k) / g < least)
                least = (1 + lambda * k) / g;
        }
        total += work * least;
    }
    return total;
}

/* The grid's l-th price: 0, then a log grid from 1e-7 to 1e3. */
static double bound_lambda(int l)
{
    return l == 0 ? 0 : 1e-7 * pow(1e10, (l - 1) / (BOUND_NLAMBDA - 2.0));
}

/* f[l]: the jobs' summed least (completion time + lambda_l x GPU-time) at each price of the grid;
 * *njobs their number. -1 when some job cannot run at all. */
static int bound_curve(int napps, const struct app *const *apps, const double *const *best,
                       const int *count, int kmax, double *f, int *njobs)
{
    *njobs = 0;
    for (int i = 0; i < napps; i++)
        *njobs += count[i];
    for (int l = 0; l < BOUND_NLAMBDA; l++) {
        f[l] = 0;
        for (int i = 0; i < napps; i++)
            if (count[i] > 0)
                f[l] += count[i] * bound_job(apps[i], best[i], kmax, bound_lambda(l));
        if (!isfinite(f[l]))
            return -1;
    }
    return 0;
}

double sim_bound_avg_jct(int napps, const struct app *const *apps, const double *const *best,
                         const int *count, int kmax, double gpu_seconds)
{
    double f[BOUND_NLAMBDA], top = 0;
    int njobs;

    if (bound_curve(napps, apps, best, count, kmax, f, &njobs) < 0)
        return INFINITY;
    if (njobs <= 0)
        return 0;
    for (int l = 0; l < BOUND_NLAMBDA; l++)
        if ((f[l] - bound_lambda(l) * gpu_seconds) / njobs > top)
            top = (f[l] - bound_lambda(l) * gpu_seconds) / njobs;
    return top;
}

double sim_bound_least_gpu_seconds(int napps, const struct app *const *apps,
                                   const double *const *best, const int *count, int kmax,
                                   double avg_jct)
{
    double f[BOUND_NLAMBDA], least = 0;
    int njobs;

    if (bound_curve(napps, apps, best, count, kmax, f, &njobs) < 0)
        return INFINITY;
    if (njobs <= 0)
        return 0;
    /* the bound at G is at most avg_jct iff f[l] - lambda_l G <= njobs avg_jct at every price:
     * at lambda 0 (every epoch at its fastest) whatever G, else G >= (f[l] - njobs avg_jct) /
     * lambda_l */
    if (!(f[0] <= njobs * avg_jct))
        return INFINITY;
    for (int l = 1; l < BOUND_NLAMBDA; l++)
        if ((f[l] - njobs * avg_jct) / bound_lambda(l) > least)
            least = (f[l] - njobs * avg_jct) / bound_lambda(l);
    return least;
}
