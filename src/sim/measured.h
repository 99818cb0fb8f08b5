/* measured.h: a model's measured step times, loaded from a profile folder in the Pollux artifact's
 * format (placements.csv: placement,local_bsz,step_time,sync_time; scalability.csv:
 * num_nodes,num_replicas,local_bsz,step_time,sync_time). */
#ifndef CASTOR_SIM_MEASURED_H
#define CASTOR_SIM_MEASURED_H

#include <stddef.h>

#include "model/accuracy.h"
#include "model/profile.h"
#include "model/tput.h"
#include "util/error.h"

enum measured_source {
    MEASURED_PLACEMENTS = 1,  /* placements.csv: up to 4 nodes, every placement */
    MEASURED_SCALABILITY = 2, /* scalability.csv: 6 to 16 nodes */
};

struct measured_row {
    struct tput_sample s; /* where, and the measured step and sync times */
    enum measured_source source;
    int line;           /* line in its file, for messages */
    char placement[68]; /* GPUs per node as digits ("2211"); empty for scalability rows */
};

/* Owned by the caller; free with measured_free. */
struct measured {
    char *name; /* the folder's last component ("cifar10") */
    size_t n;
    struct measured_row *rows;
};

/*
 * Load dir/placements.csv (required) and dir/scalability.csv (optional: ERR_NOENT for it is not an
 * error). Every cell is checked: a missing column, a truncated row, a non-numeric, non-finite,
 * negative or zero time, sync_time not below step_time, a placement that is not a string of digits
 * 1-9: each is an error naming file, line and column in *e, and nothing is returned. On success
 * *out owns the rows.
 */
int measured_load(const char *dir, struct measured **out, struct error *e);

void measured_free(struct measured *m);

/* Add the rows of m whose source is in the mask sources (MEASURED_PLACEMENTS | ...) to prof.
 * Errors: ERR_NOMEM (prof keeps what was added before). */
int measured_to_profile(const struct measured *m, unsigned sources, struct profile *prof);

/* Fit ops to the rows of m from the train sources, then compare its predicted step times with the
 * rows from the test sources. On success writes *fitted and *acc (each may be NULL). Errors:
 * ERR_EMPTY (no training or no test rows), what fit_tput returns, ERR_NOMEM. */
int measured_accuracy(const struct measured *m, const struct tput_model_ops *ops, unsigned train,
                      unsigned test, struct tput_params *fitted, struct accuracy *acc);

#endif
