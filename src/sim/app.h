/* app.h: an emulated application, the ground truth of one training job in the simulator: its
 * measured step times (placements.csv, scalability.csv) and its per-epoch validation traces at
 * several total batch sizes (validation-<B>.csv), as the Pollux artifact's simulator reads them. */
#ifndef CASTOR_SIM_APP_H
#define CASTOR_SIM_APP_H

#include "util/error.h"

struct app_impl;

/*
 * An application. The public fields are read-only; the rest is private. Owned by the caller of
 * app_load, freed with app_free. The throughput look-ups memoise and build the N-D interpolator on
 * first use, so one app must not be used by two threads at once.
 */
struct app {
    char *name;    /* the folder's last component ("cifar10") */
    int init_bsz;  /* M0: the smallest validated total batch size */
    int max_bsz;   /* the largest validated total batch size */
    int min_local; /* the smallest local batch size in placements.csv */
    int max_local; /* the largest one in placements.csv, or the published override (yolov3: 8) */
    int max_node_gpus; /* the most GPUs on one node in any placement of placements.csv: a node
                        * of more has no measured speed (app_throughput's ERR_RANGE) */
    int max_epochs;    /* the published epoch count; a job completes after max_epochs epochs */
    int epochs;        /* rows (epochs) in every validation file, at least max_epochs */
    int nbsz;          /* the number of validated batch sizes */
    const int *bszs;   /* the validated batch sizes, ascending (nbsz of them; borrowed) */
    struct app_impl *impl;
};

/*
 * Load the application in folder dir, whose last component names it: one of bert, cifar10,
 * deepspeech2, imagenet, ncf, yolov3 (their epoch counts and overrides are published, not in the
 * data; another name is ERR_UNKNOWN). Reads dir/placements.csv and dir/scalability.csv as
 * measured_load does (placement local batch sizes must also be whole numbers), and every
 * dir/validation-<B>.csv (B a whole number >= 1) with columns progress, iteration, grad_sqr and
 * grad_var (others ignored), one row per epoch. Errors, with file, line and column in *e where
 * they apply: ERR_UNKNOWN, measured_load's, ERR_NOENT (no validation file), ERR_PARSE (a
 * validation-*.csv name without a batch size, the same B twice, a bad cell, files with different
 * numbers of rows), ERR_RANGE (fewer rows than max_epochs), ERR_IO, ERR_NOMEM. On success *out owns
 * a new app; on error *out is untouched.
 */
int app_load(const char *dir, struct app **out, struct error *e);

void app_free(struct app *a);

/* The applications in the folder profiles: the names of its subfolders that hold a
 * placements.csv (at most 64), sorted, NULL-terminated; owned by the caller, freed with
 * app_list_free. NULL when out of memory; a folder that cannot be read gives an empty list. */
char **app_list(const char *profiles);

void app_list_free(char **names);

/*
 * The measured (step_time, sync_time) in seconds of one step at local batch size local_bsz on
 * placement (GPUs per node, nnodes entries; zeros are dropped). The placement is turned to its
 * lexicographically smallest rotation; a placement in placements.csv (compared as its string of
 * digits; one with 10 or more GPUs on a node is never there) interpolates linearly over that
 * placement's local batch sizes, as scipy's interp1d; any other (5 nodes or more, or not
 * measured) interpolates linearly in (min(nodes, 16), replicas, local_bsz) over the Delaunay
 * triangulation of the per-(nodes, replicas, local_bsz) means of placements.csv followed by the
 * scalability.csv rows, as scipy's LinearNDInterpolator does for a query made on its own (built on
 * the first such call). Results are memoised. On success writes *step_time and *sync_time
 * (either may be NULL). Errors: ERR_INVAL (no GPUs, a negative entry, a local_bsz that is not
 * finite), ERR_RANGE (local_bsz outside the placement's measured range, or the query outside the
 * convex hull: no extrapolation), and what building the triangulation returns (ERR_NOMEM,
 * ERR_INVAL, ...).
 */
int app_throughput(struct app *a, const int *placement, int nnodes, double local_bsz,
                   double *step_time, double *sync_time);

/*
 * The gradient statistics (grad_sqr, grad_var) at total batch size batch after epoch rows: linear
 * in batch between the nearest validated sizes below and above (the value itself at a validated
 * size). On success writes *sqr and *var (either may be NULL). Errors: ERR_RANGE (batch outside
 * [init_bsz, max_bsz] or not finite, epoch outside [0, epochs)).
 */
int app_grad_stats(const struct app *a, double batch, int epoch, double *sqr, double *var);

/*
 * The optimizer steps taken by the end of epoch (row epoch) at total batch size batch,
 * interpolated as app_grad_stats. On success writes *iteration. Errors: as app_grad_stats.
 */
int app_iteration(const struct app *a, double batch, int epoch, double *iteration);

/*
 * The progress (in M0-sized iterations) at which epoch begins: 0 for epoch 0, else the smallest
 * progress at the end of row epoch - 1 over the validated batch sizes. NAN when epoch is outside
 * [0, epochs].
 */
double app_progress_needed(const struct app *a, int epoch);

#endif
