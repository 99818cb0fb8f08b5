/* watch.h: castor-node's watch of its cloud's notices: one `struct watch_ops` per cloud (none;
 * aws-imds: IMDSv2's spot instance-action and rebalance recommendation; gce-metadata: the
 * metadata server's preempted flag, long-polled, and the maintenance event), each round asking
 * the instance's metadata service once over util/http_client and saying what is new. castor-node
 * runs the rounds in a child process of its own and forwards what they find (docs/worker.md). */
#ifndef CASTOR_AGENT_WATCH_H
#define CASTOR_AGENT_WATCH_H

#include "util/error.h"

struct log;

/* The variables castor-node reads for its watch (docs/worker.md). */
#define WATCH_ENV_CLOUD "CASTOR_NODE_CLOUD"                /* none, aws-imds, gce-metadata */
#define WATCH_ENV_ENDPOINT "CASTOR_NODE_METADATA_URL"      /* the metadata service's base URL */
#define WATCH_ENV_REBALANCE "CASTOR_NODE_REBALANCE"        /* notice (default) or ignore */
#define WATCH_ENV_INTERVAL "CASTOR_NODE_WATCH_INTERVAL_S"  /* between rounds; 0: the cloud's */
#define WATCH_ENV_TIMEOUT "CASTOR_NODE_METADATA_TIMEOUT_S" /* each request (2) */
#define WATCH_ENV_WAIT "CASTOR_NODE_METADATA_WAIT_S"       /* gce-metadata's long poll (10) */

#define WATCH_AWS_ENDPOINT "http://169.254.169.254"
#define WATCH_GCE_ENDPOINT "http://metadata.google.internal"
#define WATCH_GCE_NOTICE_S 30.0 /* a preempted Compute Engine VM has 30 s before it stops */

enum watch_kind {
    WATCH_NOTHING,     /* nothing new */
    WATCH_PREEMPT,     /* the cloud takes the instance (a deadline when the cloud says one) */
    WATCH_REBALANCE,   /* EC2: the instance is at elevated risk of interruption */
    WATCH_MAINTENANCE, /* Compute Engine: the host's maintenance will stop the instance */
};

/* What a round found. */
struct watch_event {
    enum watch_kind kind;
    double deadline; /* UNIX seconds when the instance goes; NAN when not said */
};

/* How a watch behaves; 0 or NULL members take the defaults said here. Strings copied. */
struct watch_config {
    const char *endpoint; /* the metadata service's base URL; NULL: the ops' own */
    double timeout_s;     /* each request, connecting included; 0: 2 */
    double wait_s;        /* gce-metadata: how long a long poll waits (whole seconds); 0: 10 */
    double interval_s;    /* between rounds (watch_loop); 0: the ops' own (aws 5, gce 0) */
    long token_ttl_s;     /* aws-imds: the session token's life asked for; 0: 21600 */
    struct log *log;      /* borrowed; NULL: silent */
    const char *node;     /* the node's id, for log lines; NULL: none */
};

struct watch;

/* The instance's signed identity, as its cloud gives it (watch_identity). Strings the caller's
 * (watch_proof_clear); NULL where the cloud gives none. */
struct watch_proof {
    char *document;  /* aws-imds: the instance identity document */
    char *signature; /* aws-imds: its RSA signature, base64 */
    char *token;     /* gce-metadata: the instance's identity token, a JWT (format=full) */
};

void watch_proof_clear(struct watch_proof *p);

struct watch_ops {
    const char *name;             /* "none", "aws-imds", "gce-metadata" */
    const char *default_endpoint; /* NULL for none */
    double interval_s;            /* between rounds when nothing happened */
    /* One round at wall time now; *out says what is new (WATCH_NOTHING when nothing is). Errors:
     * those of http_client_do for an endpoint that cannot be reached (ERR_IO, ERR_AGAIN),
     * ERR_NOMEM. An answer it cannot read is logged and taken as nothing. */
    int (*round)(struct watch *w, double now, struct watch_event *out);
    /* The instance's signed identity, for its registration (watch_identity). */
    int (*identity)(struct watch *w, double now, const char *audience, struct watch_proof *out);
};

extern const struct watch_ops watch_none, watch_aws_imds, watch_gce_metadata;

/* The ops called name ("none", "aws-imds", "gce-metadata"), or NULL. */
const struct watch_ops *watch_find(const char *name);

/* 0 when a watch of ops may be made from cfg; ERR_INVAL (no ops or cfg, an endpoint that is not
 * http(s)://, a negative time) with e saying which. */
int watch_config_check(const struct watch_ops *ops, const struct watch_config *cfg,
                       struct error *e);

/* A new watch of ops into *out (watch_free). Errors as watch_config_check, ERR_NOMEM,
 * ERR_INTERNAL (no HTTP client); *out then untouched. */
int watch_new(const struct watch_ops *ops, const struct watch_config *cfg, struct watch **out,
              struct error *e);

/* Free the watch, wiping a session token it holds. NULL is ignored. */
void watch_free(struct watch *w);

/*
 * One round at wall time now (UNIX seconds): the cloud's notices asked for, *out says what is
 * new. A notice is said once: the same interruption asked again is WATCH_NOTHING. Errors as the
 * ops' round; *out is written in every case.
 */
int watch_round(struct watch *w, double now, struct watch_event *out);

/*
 * The instance's signed identity as the metadata service gives it, for the controller to check at
 * registration (api.attestation): aws-imds, the identity document and its signature
 * (/latest/dynamic/instance-identity/document and .../signature); gce-metadata, an identity token
 * for audience in the full format (instance/service-accounts/default/identity). *out is the
 * caller's (watch_proof_clear) and written only on success. Errors: ERR_INVAL (no cloud; no
 * audience for gce-metadata), those of http_client_do (ERR_IO, ERR_AGAIN), ERR_UNKNOWN (the
 * service answered another status than 200, or an empty or oversized token), ERR_NOMEM.
 */
int watch_identity(struct watch *w, double now, const char *audience, struct watch_proof *out);

/* The seconds between rounds (the configuration's, else the ops'). */
double watch_interval(const struct watch *w);

/* What castor-node does with an event; arg as given to watch_loop. */
typedef void (*watch_emit_fn)(void *arg, const struct watch_event *ev);

/*
 * Rounds forever on the wall clock, watch_interval apart (a round that fails waits longer, from
 * 1 s doubling to 60 s, and is logged when a streak of failures starts and ends), emit called
 * with each event. Returns only when emit's arg says stop (*stop set to 1 by the caller's emit),
 * for tests; castor-node's child never stops it (it is killed).
 */
void watch_loop(struct watch *w, watch_emit_fn emit, void *arg, const int *stop);

#endif
