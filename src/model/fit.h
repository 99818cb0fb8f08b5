/* fit.h: fitting a throughput model to a profile: log-space loss, the model's regulariser, bounded
 * quasi-Newton from the model's initial point, priors for what was not observed. Pure. */
#ifndef CASTOR_MODEL_FIT_H
#define CASTOR_MODEL_FIT_H

#include "model/profile.h"
#include "model/tput.h"

struct fit_report {
    double loss;      /* the minimised objective */
    double rmsle_acc; /* root mean squared log error of compute time */
    double rmsle_opt; /* root mean squared log error of step time */
    int evals;        /* objective evaluations */
    int pinned;       /* parameters held by priors */
};

/*
 * Fit ops to prof. On success *out holds the fitted parameters (with the model's post-fit priors
 * applied) and *rep, when not NULL, the fit's figures. Errors, with *out untouched: ERR_EMPTY (no
 * observations), ERR_NOCONV (the minimiser failed), ERR_NOMEM.
 */
int fit_tput(const struct tput_model_ops *ops, const struct profile *prof, struct tput_params *out,
             struct fit_report *rep);

/* The objective fit_tput minimises, at theta over all parameters (for tests and diagnostics);
 * grad (nparams values, may be NULL) receives its gradient. */
double fit_objective(const struct tput_model_ops *ops, const struct profile *prof,
                     const double *theta, double *grad, double *rmsle_acc, double *rmsle_opt);

#endif
