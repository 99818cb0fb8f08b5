/* cloud.h: what a real world rents from: offers, instances carrying the cluster's tag, launches
 * made idempotent by a launch token, terminations. One `const struct cloud_ops` per cloud (local:
 * castor-node processes on this machine; aws; gcp); an instance is {ops, ctx}. The controller's
 * real-world provider (src/control) builds snapshots from a cloud and the durable state; callers go
 * through the cloud_* wrappers. */
#ifndef CASTOR_PROVIDERS_CLOUD_H
#define CASTOR_PROVIDERS_CLOUD_H

#include <stddef.h>

#include "util/error.h"

#define CLOUD_ID_MAX 64
#define CLOUD_NAME_MAX 96

/* One offer: a pool the cloud can launch from. */
struct cloud_offer {
    char name[CLOUD_NAME_MAX]; /* unique within the cloud, e.g. "g4dn.12xlarge/us-east-1a/spot" */
    int gpus;                  /* per node */
    int spot;                  /* 1: preemptible */
    double price;              /* $/h per node now (NAN: unknown) */
    double max_price;          /* spot: the most a launch bids, $/h per node (0: none); while the
                                * price is above it the cloud launches none (as capacity) */
    double storage;            /* $/h of a node's disks, included in price (0: none counted); a
                                * spot bid (max_price) is on the rest, the instance alone */
    double reclaim_free_s;     /* spot: an instance the cloud reclaims (after its notice) within
                                * this many seconds of its launch is not billed (EC2: 3600, its
                                * first hour; 0: billed as any) */
};

enum cloud_state {
    CLOUD_PENDING, /* launched, not running yet */
    CLOUD_RUNNING,
    CLOUD_NOTICED, /* running, a preemption notice received */
    CLOUD_GONE,    /* terminated or preempted */
};

/* One quota that limits launches: how much of something the account (AWS) or project (GCP) may
 * hold at once, whoever launched it. */
#define CLOUD_QUOTA_TITLE_MAX 160
struct cloud_quota {
    char name[CLOUD_NAME_MAX];         /* unique within the cloud, e.g. "ec2/us-east-1/L-3819A6DF"
                                        * or "compute/us-central1/PREEMPTIBLE_NVIDIA_T4_GPUS" */
    char title[CLOUD_QUOTA_TITLE_MAX]; /* for people, e.g. "All G and VT Spot Instance Requests
                                        * (us-east-1)" */
    char unit[16];                     /* what it counts: "vCPUs", "GPUs" */
    double limit;                      /* units that may be held */
    double used;                       /* units held now, by everything it counts */
};

/* What one node of an offer takes from a quota. */
struct cloud_quota_use {
    size_t quota;               /* index into the quotas of the same answer */
    char offer[CLOUD_NAME_MAX]; /* an offer of the cloud's offers */
    double units;               /* > 0 */
};

/* One instance as the cloud reports it. */
struct cloud_instance {
    char id[CLOUD_ID_MAX];      /* the cloud's instance id */
    char offer[CLOUD_NAME_MAX]; /* the offer it was launched from */
    char token[CLOUD_ID_MAX];   /* the launch token it carries (a tag) */
    enum cloud_state state;
    double launched; /* seconds since the epoch */
    double ends;     /* CLOUD_NOTICED: when it goes; else 0 */
};

struct cloud_ops {
    const char *name;
    /* The offers now; *out (n entries, malloc'd) is the caller's. Errors: ERR_IO, ERR_AGAIN
     * (retry later), ERR_NOMEM. */
    int (*offers)(void *ctx, struct cloud_offer **out, size_t *n);
    /* Every instance carrying cluster's tag, gone ones included while the cloud still reports
     * them; *out (malloc'd) is the caller's. Errors: as offers. */
    int (*list)(void *ctx, const char *cluster, struct cloud_instance **out, size_t *n);
    /* Launch one instance of offer, tagged with cluster and token; launching again with a token
     * already used returns the instance of the first launch (idempotent). On success id (of
     * CLOUD_ID_MAX bytes) is written. Errors that say the cloud refused, nothing was made (the
     * caller gives the launch up and leaves the offer alone a while): ERR_CAPACITY (no capacity
     * in that pool now), ERR_QUOTA (a quota is reached), ERR_UNKNOWN (no such offer, or a
     * refusal the cloud names that castor does not know), ERR_INVAL (a request the cloud
     * refuses: an image, subnet or launch template it does not know, a role not allowed to
     * launch, a malformed request). Any other error leaves the answer unknown, and the caller
     * keeps the token and asks again: ERR_AGAIN, ERR_IO (also an answer that was lost: the
     * instance may exist), ERR_PARSE (an answer that cannot be read: likewise), ERR_PERM
     * (credentials refused as expired even when fetched anew, a clock off: nothing was made,
     * and the offer is not to blame). */
    int (*launch)(void *ctx, const char *offer, const char *cluster, const char *token, char *id);
    /* Terminate instance id (terminating one already gone succeeds). Errors: ERR_UNKNOWN (no such
     * instance of this cluster: the cloud said so, or the id cannot be one; the callers take it
     * as done), ERR_PERM (the cloud refused: a role without the permission, credentials not
     * taken), ERR_AGAIN, ERR_IO (also an answer the cloud gives that castor does not know): the
     * instance may still be there, and the caller tries again. */
    int (*terminate)(void *ctx, const char *cluster, const char *id);
    void (*destroy)(void *ctx);
    /* The quotas that limit launches of the offers, read now, with what a node of each offer
     * takes from each (an offer in no quota's uses is limited by none known); *quotas (nq
     * entries) and *uses (nu), malloc'd, are the caller's. NULL in a cloud without quotas.
     * Errors (nothing written): ERR_IO, ERR_AGAIN (retry later), ERR_PERM (not allowed to read
     * them), ERR_NOMEM. */
    int (*quotas)(void *ctx, struct cloud_quota **quotas, size_t *nq, struct cloud_quota_use **uses,
                  size_t *nu);
};

struct cloud {
    const struct cloud_ops *ops;
    void *ctx;
};

int cloud_offers(struct cloud *c, struct cloud_offer **out, size_t *n);
int cloud_list(struct cloud *c, const char *cluster, struct cloud_instance **out, size_t *n);
int cloud_launch(struct cloud *c, const char *offer, const char *cluster, const char *token,
                 char *id);
int cloud_terminate(struct cloud *c, const char *cluster, const char *id);
/* As the op; a cloud without it answers 0 with no quotas (*quotas and *uses NULL). */
int cloud_quotas(struct cloud *c, struct cloud_quota **quotas, size_t *nq,
                 struct cloud_quota_use **uses, size_t *nu);
void cloud_free(struct cloud *c);

/* The whole nodes a quota leaves room for: (limit - used) / units a node (> 0), rounded down (a
 * hair below a whole node counts as it), 0 when nothing is left, INFINITY for an infinite limit.
 * The controller and `castor check` count an offer's room by it, the fewest over its quotas. */
double cloud_quota_room(double limit, double used, double units);

/* ---- the registry: clouds chosen by name in the configuration (`world:`) ---- */

struct conf_node;

/* What the controller that makes a cloud says of itself, for the clouds whose instances talk back
 * to it (local: the nodes need its URL and tokens). Every field may be NULL (not known); all are
 * borrowed for the constructor's call only. */
struct cloud_host {
    const char *api_url;         /* its own API, as a node on this machine reaches it */
    const char *node_token_file; /* the files its node and job tokens were read from */
    const char *job_token_file;
    const char *bin_dir; /* the folder of the running castor program (castor-node is beside it) */
};

/*
 * A cloud's constructor. section is the configuration's `cloud:` mapping (NULL or an empty node
 * when absent: the cloud's defaults); the cloud checks its keys, and errors name file, line and
 * column (e); it is read during the call only (copy what is kept). base_dir is the configuration
 * file's folder, for relative paths; host (may be NULL) the controller's own address and token
 * files, for defaults. On success *out is a new cloud (cloud_free); on error it is untouched.
 */
typedef int (*cloud_new_fn)(const struct conf_node *section, const char *base_dir,
                            const struct cloud_host *host, struct cloud *out, struct error *e);

struct cloud_entry {
    const char *name;
    cloud_new_fn create;
};

/* The clouds built into this castor, {NULL, NULL}-terminated: a static table in
 * providers/clouds.c, where each cloud adds its line. */
extern const struct cloud_entry cloud_registry[];

/* The constructor of the cloud called name, or NULL. */
cloud_new_fn cloud_find(const char *name);

/* A new cloud by name, as its constructor. ERR_UNKNOWN (e says which are built) for a name not in
 * the registry. */
int cloud_new(const char *name, const struct conf_node *section, const char *base_dir,
              const struct cloud_host *host, struct cloud *out, struct error *e);

/* The constructors (one per cloud file). */
int cloud_fake_new(const struct conf_node *section, const char *base_dir,
                   const struct cloud_host *host, struct cloud *out,
                   struct error *e); /* providers/fake.c */
int cloud_local_from_conf(const struct conf_node *section, const char *base_dir,
                          const struct cloud_host *host, struct cloud *out,
                          struct error *e); /* providers/local_conf.c */
/* The gcp cloud from its section (project, key_file, metadata_url, compute_url, billing_url,
 * prices, offers, instance; docs/run.md); it owns its token source and clients. Errors at the
 * key's file:line:column: ERR_PARSE, ERR_RANGE, ERR_UNKNOWN (a key not known), and those of
 * gcp_auth_new (a key file that cannot be read), gcp_compute_new and cloud_gcp_new. */
int cloud_gcp_from_conf(const struct conf_node *section, const char *base_dir,
                        const struct cloud_host *host, struct cloud *out,
                        struct error *e); /* providers/gcp/cloud_gcp_conf.c */
/* The aws cloud from its section (region, endpoint, profile, credentials_file, imds,
 * launch_template or image_id, prices, offers; docs/run.md); it owns its credential source and
 * EC2 client. Errors at the key's file:line:column: ERR_PARSE, ERR_RANGE, ERR_UNKNOWN, and those
 * of the price table's reading and of ec2_client_new (a bad endpoint, at its key). */
int cloud_aws_from_conf(const struct conf_node *section, const char *base_dir,
                        const struct cloud_host *host, struct cloud *out,
                        struct error *e); /* providers/aws/cloud_aws.c */

#endif
