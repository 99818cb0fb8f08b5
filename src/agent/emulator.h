/* emulator.h: castor-job-emulator, one process per replica of an emulated training job in the
 * local world: it replays a measured profile (src/sim/app.h) in real time scaled by a speed
 * factor, advancing progress by goodput as the simulator's jobs do; rank 0 reports step times and
 * gradient statistics through the API path a real job uses and checkpoints its progress to a
 * file, from which every start resumes. */
#ifndef CASTOR_AGENT_EMULATOR_H
#define CASTOR_AGENT_EMULATOR_H

#include <stddef.h>

#include "util/error.h"

struct app;
struct log;

#define EMU_CKPT_FILE "castor-emulator.ckpt"     /* in the replica's folder: the checkpoint */
#define EMU_DONE_FILE "castor-emulator.done"     /* written once the epochs are done */
#define EMU_CRASH_FILE "castor-emulator.crashed" /* written by the crash crash_at asks for */
#define EMU_CRASHED 1                            /* emu_run's answer after that crash */
#define EMU_STOPPED 2 /* emu_run's answer after a SIGTERM or SIGINT: checkpointed, restart me */
#define EMU_MAX_NODES 256

/* Where a job is in its training. */
struct emu_state {
    double progress;   /* iterations at the initial batch size (the profile's progress unit) */
    int epoch;         /* completed epochs */
    double emulated_s; /* emulated seconds of training, over every start */
    long long number;  /* checkpoints written over every start; this one's number (0: none) */
};

/* The placement and configuration a replica runs at. */
struct emu_setup {
    int place[EMU_MAX_NODES]; /* GPUs per node */
    int nplace;
    int replicas;     /* the sum of place */
    double local_bsz; /* per replica */
    int accum_steps;
};

/*
 * The placement of world_size replicas with local_world_size on each node (the last node takes
 * what is left), into u->place, nplace and replicas. ERR_INVAL (sizes < 1), ERR_RANGE (more than
 * EMU_MAX_NODES nodes); u written only on success.
 */
int emu_place_even(int world_size, int local_world_size, struct emu_setup *u);

/*
 * The configuration for u's placement: the plan's local_bsz and accum_steps when given (local_bsz
 * finite and > 0; accum_steps < 0 counts as 0), held inside the profile's measured local batches
 * and the job's batch limits, else the simulator's fixed rule at the initial batch. Writes
 * u->local_bsz and u->accum_steps; ERR_RANGE when the profile cannot time that configuration
 * (nothing written).
 */
int emu_configure(struct app *a, struct emu_setup *u, double local_bsz, int accum_steps);

/*
 * Advance s by dt emulated seconds (>= 0) at u, until epochs (<= a->max_epochs) are completed:
 * progress grows by the goodput of the epoch it is in (src/sim/job.c's rate); *steps (may be
 * NULL) grows by the optimizer steps taken. Errors: those of sim_job_rate (s then holds what was
 * done before the failing epoch).
 */
int emu_advance(struct app *a, const struct emu_setup *u, int epochs, struct emu_state *s,
                double dt, double *steps);

/* The emulated seconds until s completes its current epoch at u (0 when done); ERR_* as
 * emu_advance. */
int emu_epoch_left(struct app *a, const struct emu_setup *u, const struct emu_state *s,
                   double *out);

/*
 * Read a checkpoint written by emu_checkpoint_write for application app. Errors (e says what):
 * ERR_NOENT (no checkpoint: a fresh start), ERR_PARSE (not a checkpoint, or another app's),
 * ERR_IO, ERR_NOMEM; *out written only on success.
 */
int emu_checkpoint_read(const char *path, const char *app, struct emu_state *out, struct error *e);

/* Replace the checkpoint at path atomically (file_write_atomic). Errors: ERR_IO, ERR_NOMEM. */
int emu_checkpoint_write(const char *path, const char *app, const struct emu_state *s,
                         struct error *e);

/*
 * The body of a report (docs/api.md): the configuration with count steps of mean opt_step
 * seconds (none when count < 1), the gradient statistics and the progress. *out is a new string
 * (free). ERR_NOMEM.
 */
int emu_report_body(const struct emu_setup *u, long long count, double opt_step, double sync,
                    double sqr, double var, double progress, char **out);

/* A replica's configuration (docs/local.md lists the variables it comes from). Borrowed. */
struct emu_config {
    struct app *app;       /* the profile */
    const char *dir;       /* the checkpoint and the completion marker go here */
    const char *job;       /* the job's name; NULL: no reports */
    int rank;              /* 0 checkpoints and reports */
    int world_size;        /* >= 1 */
    int local_world_size;  /* replicas on this node, 1 .. world_size */
    double local_bsz;      /* the plan's; NAN: the default rule */
    int accum_steps;       /* the plan's; < 0: none given */
    double speed;          /* emulated seconds per real second (> 0) */
    double checkpoint_s;   /* emulated seconds between checkpoints (> 0) */
    double report_s;       /* emulated seconds between reports (> 0) */
    int epochs;            /* to complete; 0: the profile's */
    const char *url;       /* the controller; NULL: no reports, the placement from the sizes */
    const char *job_token; /* a secret; NULL: no reports */
    double timeout_s;      /* each request (> 0) */
    double finish_wait_s;  /* rank 0 retries telling the controller the job finished this long */
    double crash_at;       /* emulated seconds of training (over every start) at which rank 0
                            * crashes, once (a fault for the tests of failures); 0: never */
    double stop_s;         /* real seconds the checkpoint on SIGTERM or SIGINT takes to write
                            * (a large model's; for the tests of moves); 0: at once */
    struct log *log;       /* borrowed; NULL: silent */
};

/*
 * Run one replica until its epochs are done (rank 0 then writes the last checkpoint, a final
 * report and the completion marker, and posts /v1/jobs/{job}/finished, retried for finish_wait_s
 * while the controller cannot be reached; another rank also ends when it sees rank 0's marker in
 * dir) or SIGTERM or SIGINT comes (rank 0 checkpoints first). Rank 0 posts each checkpoint's
 * progress to /v1/jobs/{job}/checkpoint (best effort), and a rank 0 that starts after the job's
 * marker was written posts /finished again (its first announcement may have been lost).
 * Resumes from the checkpoint in dir; a completion marker already there ends at once. The
 * placement comes from the job's allocation (GET /v1/jobs/{job}/allocation) when it can be read
 * and matches the world size, else from the sizes. Reports that fail are logged and their steps
 * carried to the next. Returns 0 in all those cases but a stop by SIGTERM or SIGINT, which
 * returns EMU_STOPPED once rank 0 has checkpointed (the program exits 75, "checkpointed, restart
 * me": 0 would say the job's work is done); EMU_CRASHED when rank 0 reached crash_at
 * without EMU_CRASH_FILE in dir (it writes that file, and no checkpoint: the work since the last
 * one is lost, as in a real crash); ERR_INVAL (a bad configuration), ERR_PARSE
 * (an unreadable checkpoint: the replica refuses to start over), ERR_RANGE (the profile cannot
 * time the configuration), ERR_IO (a checkpoint cannot be written), ERR_NOMEM.
 */
int emu_run(const struct emu_config *cfg);

#endif
