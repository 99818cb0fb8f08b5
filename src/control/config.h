/* config.h: the daemon's configuration (`castor run -c castor.yaml`; config/castor.yaml documents
 * every key): the cluster and its world, the loop, the state, the API and its tokens, the
 * policies, offers' metadata, and the jobs to submit, once or on a cron schedule. */
#ifndef CASTOR_CONTROL_CONFIG_H
#define CASTOR_CONTROL_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "control/api.h"
#include "control/cron.h"
#include "model/tput.h"
#include "policies/fleet.h"
#include "policies/policy.h"
#include "util/conf.h"
#include "util/error.h"
#include "util/log.h"

#define CONFIG_CLUSTER_MAX 40       /* bytes of a cluster id: launch tokens are built from it */
#define CONFIG_NAME_MAX 128         /* bytes of a job name (as the API's) */
#define CONFIG_API_RATE_LIMIT 100.0 /* default requests per second per client address */
#define CONFIG_OFFER_MAX 95         /* bytes of an offer's name (CLOUD_NAME_MAX - 1) */
/* what a template's job name adds to the template's name: "-YYYYMMDDTHHMMZ" */
#define CONFIG_TEMPLATE_SUFFIX 15
/* Default connections at once per client address. A node agent keeps one (kept alive between
 * its calls), a job's rank 0 one more while it runs, a castor command one for its call: the local
 * world's agents and jobs all come from 127.0.0.1, so this leaves it room for many nodes and jobs
 * while half of the server's 256 connections stay for the other clients. */
#define CONFIG_API_MAX_CLIENT_CONNECTIONS 128

/* What the configuration says of an offer that the cloud does not. */
struct config_offer {
    char *name;
    char *zone;          /* NULL: "default" */
    double boot_s;       /* expected seconds from launch to a ready node (default 180) */
    double preempt_rate; /* preemptions per node-hour assumed before castor's own nodes there
                          * are seen (the prior); NAN: 0.05 on spot, 0 on-demand */
    double price;        /* > 0: $/h per node in place of the cloud's; 0: the cloud's */
    double discount;     /* 0 to 0.99 off the cloud's price (0: none) */
};

/* A job to submit: its name and its spec as JSON text in the form the API stores (every field,
 * defaults filled in). */
struct config_job {
    char *name;
    char *spec;
};

/* A job submitted on a schedule: each time, as "<name>-YYYYMMDDTHHMMZ" (the time in UTC). */
struct config_template {
    char *name;
    char *schedule_text;
    struct cron schedule;
    char *spec;            /* the job's spec as JSON text, without name and deadline */
    double deadline_after; /* seconds after the scheduled time; 0: no deadline */
};

struct config_api {
    char *address;  /* numeric; default 127.0.0.1 */
    int port;       /* default 8470; 0: the system picks */
    char *tls_cert; /* both or neither */
    char *tls_key;
    unsigned threads;    /* 0: a thread per connection */
    size_t max_body;     /* bytes */
    int insecure_http;   /* 1: plain HTTP allowed on an address that is not loopback */
    double rate_limit;   /* requests per second per client address; 0: no limit */
    unsigned rate_burst; /* requests at once per client address */
    /* connections at once per client address; 0: no limit */
    unsigned max_client_connections;
    int per_node_tokens; /* 1: a node's calls need its own token (api.node_tokens: per-node) */
    /* api.attestation: registrations must prove their instance (an EC2 identity document signed
     * under this certificate, or a Compute Engine identity token under Google's), but for
     * static_nodes. attest_certificate and attest_google_certs NULL: not asked. */
    char *attest_certificate; /* the PEM text, read when the file is loaded */
    size_t attest_certificate_len;
    char *attest_account;       /* NULL: any */
    char *attest_region;        /* NULL: any */
    char **attest_static_nodes; /* NULL-terminated; NULL: none */
    char *attest_google_certs;  /* Compute Engine: Google's certificates file (a path, read at
                                 * each registration); NULL: none */
    char *attest_audience;      /* the audience of the Compute Engine tokens */
    char *attest_project;       /* their project; NULL: any */
};

/* Fault injection into the cloud's calls (`faults:`), for chaos runs (providers/faulty.h). */
struct config_faults {
    int on;           /* the section is present */
    double rate;      /* the share of calls that fail, 0..1 (default 0.2) */
    uint64_t seed;    /* default 1 */
    double timeout_s; /* how long a timeout fault hangs (default 1) */
};

/* A cap on what the fleet costs per calendar period (`spend_limit:`). */
struct config_spend {
    double dollars; /* 0: none */
    int period;     /* 0 day, 1 week (from Monday), 2 month, UTC (default month) */
};

/* Every string is owned by the config (config_free); paths are made absolute against the file's
 * folder. */
struct config {
    char *path;
    char *dir;        /* the file's folder */
    struct conf *doc; /* the document, kept for the cloud section */
    char *cluster;
    char *world;                   /* the cloud's name in the registry (providers/clouds.c) */
    const struct conf_node *cloud; /* the `cloud:` section, or NULL; borrowed from doc */
    int interval;                  /* seconds between ticks */
    char *state_path;
    enum log_level log_level;
    double launch_timeout;    /* seconds a launch intent waits for its instance */
    double register_timeout;  /* seconds a launched node's agent has to register (0: unwatched) */
    double heartbeat_timeout; /* seconds a ready node's agent may go unheard (0: unwatched) */
    uint64_t seed;
    const struct tput_model_ops *tput_model;
    struct config_api api;
    char *token_files[API_NROLES]; /* NULL: read from the environment (see config/castor.yaml) */
    char *policy;                  /* the allocation policy */
    struct policy_config pcfg;
    char *fleet;              /* the fleet planner */
    struct fleet_config fcfg; /* offer is -1: the daemon resolves fleet_offer */
    char *fleet_offer;        /* fixed and pollux-autoscale: the offer's name (NULL: the first) */
    struct config_offer *offers;
    size_t noffers;
    struct config_job *jobs;
    size_t njobs;
    struct config_template *templates;
    size_t ntemplates;
    struct config_faults faults;
    struct config_spend spend;
};

/* The worlds a configuration may name (whether one is built in is the registry's to say). */
extern const char *const config_worlds[];

/*
 * Read and check the configuration at path. Every fault is ERR_PARSE, ERR_RANGE or ERR_UNKNOWN
 * with e naming the file, line and column (an unknown key with the nearest known one); ERR_NOENT
 * or ERR_IO for a file that cannot be read; ERR_NOMEM. On success *out owns a new configuration
 * (config_free); on error it is untouched.
 */
int config_load(const char *path, struct config **out, struct error *e);

void config_free(struct config *c);

/* The configuration's entry for the offer named name (borrowed from c), or NULL when the
 * configuration says nothing of it. */
const struct config_offer *config_offer_find(const struct config *c, const char *name);

struct realworld_offer;

/* The configuration's offers as the real world takes them (name, zone, boot, preemption prior,
 * price or discount; strings borrowed from c): *out (c->noffers entries, one more allocated) is
 * the caller's (free). ERR_NOMEM. */
int config_offer_meta(const struct config *c, struct realworld_offer **out);

/* The API's URL as a process on this machine reaches it: the configured address (a wildcard as
 * loopback), the scheme by TLS, at port (the bound one; 0: the configured one or 8470), into buf
 * (size bytes, truncated if it does not fit). */
void config_api_url(const struct config *c, int port, char *buf, size_t size);

/*
 * A job spec from the mapping m (the keys of POST /v1/jobs, docs/api.md; `deadline` as seconds
 * since the epoch or an ISO 8601 time). in_template: m is a template's job, which takes no name
 * and no deadline. On success *json is the spec as JSON text and *name (NULL for a template) the
 * job's name, both malloc'd and the caller's. Errors as config_load, at the offending key.
 */
int config_job_spec(const struct conf_node *m, int in_template, char **json, char **name,
                    struct error *e);

/*
 * Compare a configuration read again (SIGHUP) with the running one. Returns 1 and writes why
 * when it changes what only a restart may change with the state kept (cluster, world, state), 0
 * otherwise; then warn (may be "") lists, space-separated, what changed that takes effect only at
 * a restart: api, tokens, cloud, faults, log_level, tput_model (truncated to warn_size bytes).
 */
int config_reload_check(const struct config *old, const struct config *now, char *why,
                        size_t why_size, char *warn, size_t warn_size);

/* The name of the template's job scheduled at t (UTC), into buf (CONFIG_NAME_MAX + 1 bytes).
 * ERR_RANGE for a time that cannot be written. */
int config_template_job_name(const struct config_template *t, int64_t at, char *buf, size_t size);

/* The template's spec for the job scheduled at t, named name, as JSON text (malloc'd, the
 * caller's): its deadline, if any, is t + deadline_after. ERR_NOMEM, ERR_PARSE. */
int config_template_spec(const struct config_template *t, const char *name, int64_t at,
                         char **json);

#endif
