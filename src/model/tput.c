/* tput.c: the throughput-model registry and what every model shares (step time, overlap). */
#include "model/tput.h"

#include <assert.h>
#include <math.h>
#include <string.h>

const struct tput_model_ops *const tput_models[] = {&tput_model_castor, &tput_model_pollux, NULL};

const struct tput_model_ops *tput_model_find(const char *name)
{
    if (!name)
        return NULL;
    if (strcmp(name, "default") == 0)
        return tput_models[0];
    for (size_t i = 0; tput_models[i]; i++)
        if (strcmp(tput_models[i]->name, name) == 0)
            return tput_models[i];
    return NULL;
}

void tput_params_init(struct tput_params *params, const struct tput_model_ops *ops)
{
    assert(ops->nparams <= TPUT_MAX_PARAMS);
    memset(params, 0, sizeof(*params));
    params->ops = ops;
    memcpy(params->theta, ops->init, (size_t)ops->nparams * sizeof(double));
}

void tput_predict(const struct tput_params *p, const struct tput_point *x, double *t_acc,
                  double *t_opt)
{
    double la, lo;

    p->ops->predict(p->theta, x, &la, &lo, NULL, NULL);
    *t_acc = exp(la);
    *t_opt = exp(lo);
}

double tput_accum_time(const struct tput_params *p, const struct tput_point *x)
{
    double acc, opt;

    tput_predict(p, x, &acc, &opt);
    return acc;
}

double tput_step_time(const struct tput_params *p, const struct tput_point *x, int accum_steps)
{
    double acc, opt;

    tput_predict(p, x, &acc, &opt);
    return accum_steps * acc + opt;
}

double tput_throughput(const struct tput_params *p, const struct tput_point *x, int accum_steps)
{
    double batch = x->replicas * x->local_bsz * (accum_steps + 1);

    return batch / tput_step_time(p, x, accum_steps);
}

double tput_overlap_log(double la, double lb, double g, double *dla, double *dlb, double *dg)
{
    double wa, dgv, lt = tput_overlap_log_inline(la, lb, g, &wa, &dgv);

    if (dla)
        *dla = wa;
    if (dlb)
        *dlb = 1.0 - wa;
    if (dg)
        *dg = dgv;
    return lt;
}

int tput_exploration_limit(const struct tput_coverage *cov, int user_max, double max_bsz,
                           double min_local)
{
    int limit = 2 * cov->max_replicas;

    if (limit < 1)
        limit = 1;
    if (user_max > 0 && user_max < limit)
        limit = user_max;
    if (max_bsz > 0 && min_local > 0 && floor(max_bsz / min_local) < limit)
        limit = (int)floor(max_bsz / min_local);
    return limit < 1 ? 1 : limit;
}

double tput_sync_regularizer(const double *th, double *grad, int g, int an, int bn, int ar, int br)
{
    double gm = th[g] - 1.0;
    double qn = th[bn] / th[an], qr = th[br] / th[ar];

    if (grad) {
        grad[g] += 2e-3 * gm;
        grad[bn] += 2e-2 * qn / th[an];
        grad[an] -= 2e-2 * qn * qn / th[an];
        grad[br] += 2e-2 * qr / th[ar];
        grad[ar] -= 2e-2 * qr * qr / th[ar];
    }
    return 1e-3 * gm * gm + 1e-2 * (qn * qn + qr * qr);
}
