/* local.h: the local cloud, a struct cloud_ops whose instances are castor-node processes on this
 * machine, each announcing the fake GPUs of its offer. Every instance is recorded in a run folder
 * (one file each), so that a controller that restarts finds its instances again; a launch token
 * already recorded returns its instance; an offer's capacity bounds its live instances; a
 * termination is SIGTERM, then SIGKILL of the instance's whole session after a grace period; a
 * preemption (local_preempt, for tests) is SIGUSR1 carrying the notice, then SIGKILL. Linux:
 * liveness and sessions are read from /proc. */
#ifndef CASTOR_PROVIDERS_LOCAL_H
#define CASTOR_PROVIDERS_LOCAL_H

#include <stddef.h>

#include "providers/cloud.h"

/* One pool of local instances. */
struct local_offer {
    char name[CLOUD_NAME_MAX]; /* unique; letters, digits and "._-/:" */
    int gpus;                  /* fake GPUs per node, 1 .. 64 */
    int gpu_gib;               /* memory of each, 1 .. 4096; 0: the inventory's default */
    int spot;                  /* 1: the node registers as spot */
    double price;              /* $/h per node, >= 0 */
    int capacity;              /* live instances at most (0: none can launch); < 0: no limit */
};

struct local_config {
    const char *run_dir;  /* instance records and the nodes' logs (made, mode 700, if missing) */
    const char *node_bin; /* the castor-node program */
    const char *url;      /* the controller the nodes talk to (CASTOR_URL) */
    /* files holding the node and job tokens (mode 600), given to the nodes as
     * CASTOR_NODE_TOKEN_FILE and CASTOR_JOB_TOKEN_FILE; NULL: the nodes inherit
     * CASTOR_NODE_TOKEN and CASTOR_JOB_TOKEN from this process's environment */
    const char *node_token_file;
    const char *job_token_file;
    const struct local_offer *offers;
    size_t noffers;
    double grace_s;         /* terminate: SIGKILL this long after SIGTERM (>= 0) */
    const char *const *env; /* more "NAME=VALUE" for every node (NULL-terminated; may be NULL) */
};

/*
 * A local cloud over cfg (copied). Nothing is launched or killed here or when it is freed: the
 * instances outlive the cloud, and a new cloud over the same run folder lists them. Errors:
 * ERR_INVAL (a field missing or out of range, two offers of one name), ERR_IO (the run folder
 * cannot be made), ERR_NOMEM. On success *out is {ops, ctx}, owned by the caller (cloud_free);
 * on error it is untouched.
 *
 * Through the ops: list reads the run folder (ERR_IO for a record that cannot be read), reaps
 * and checks each recorded process (pid and start time, so a reused pid is not taken for it),
 * SIGKILLs the session of an instance whose grace has passed, and drops records gone for an
 * hour; launch checks the token (1 to 63 of "A-Za-z0-9._-": ERR_INVAL), the offer (ERR_UNKNOWN)
 * and its capacity (ERR_CAPACITY), records the instance, then forks and executes castor-node in
 * a session of its own with its settings in its environment (CASTOR_INSTANCE_ID, CASTOR_CLUSTER,
 * CASTOR_LAUNCH_TOKEN, CASTOR_FAKE_GPUS, CASTOR_URL, CASTOR_NODE_PROVIDER/OFFER/MARKET/PRICE,
 * CASTOR_NODE_MASTER_ADDR=127.0.0.1, the token files) and its output in run_dir/<id>.log; the
 * process's user and metrics tokens are never passed on. terminate returns at once; the SIGKILL
 * after the grace is sent by a later list or terminate.
 */
int cloud_local_new(const struct local_config *cfg, struct cloud *out);

/*
 * Preempt instance id of c (a local cloud) as a spot market would, blocking for notice_s
 * seconds (0 .. 3600): SIGUSR1 carrying the notice in milliseconds (castor-node forwards it to
 * the controller and stops its replicas), then SIGKILL of every process of the instance's
 * session. Returns 0 once it is gone; ERR_INVAL (not a local cloud, notice_s out of range),
 * ERR_UNKNOWN (no such instance, or it is gone already), ERR_IO.
 */
int local_preempt(struct cloud *c, const char *id, double notice_s);

#endif
