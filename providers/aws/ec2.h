/* ec2.h: the EC2 Query API client (signed with SigV4, over util/http_client): instance types,
 * spot prices, instant fleets, RunInstances, the cluster's instances by tag, the account's
 * running ones, termination; with
 * pagination, idempotency tokens, retries with backoff and full jitter, and a timeout on every
 * attempt. */
#ifndef CASTOR_PROVIDERS_AWS_EC2_H
#define CASTOR_PROVIDERS_AWS_EC2_H

#include <stddef.h>
#include <stdint.h>

#include "providers/aws/credentials.h"
#include "util/error.h"
#include "util/xml.h"

#define EC2_API_VERSION "2016-11-15"
#define EC2_TAG_CLUSTER "castor:cluster"    /* the cluster id on every instance castor launches */
#define EC2_TAG_TOKEN "castor:launch-token" /* the launch token (also the ClientToken) */

struct ec2_client; /* opaque; one thread at a time */

/* How the client behaves; NULL or 0 members take the defaults said here. Copied at
 * ec2_client_new except credentials and hook_arg, which are borrowed and must outlive it. */
struct ec2_config {
    const char *region; /* required: "us-east-1" */
    /* The endpoint: this, else AWS_ENDPOINT_URL_EC2, else AWS_ENDPOINT_URL, else
     * https://ec2.<region>.amazonaws.com. Plain http is accepted only on loopback. */
    const char *endpoint;
    /* 1: do not verify the endpoint's TLS certificate; refused unless the endpoint is loopback. */
    int tls_insecure;
    long timeout_ms;      /* per attempt, connecting included; 0: 30000 */
    int max_attempts;     /* per call, for throttling, 5xx and transport failures; 0: 5 */
    long backoff_base_ms; /* the first retry waits up to this; 0: 200 */
    long backoff_cap_ms;  /* no retry waits longer; 0: 20000 */
    uint64_t seed;        /* seeds the jitter */
    int page_size;        /* MaxResults on paginated calls; 0: each call's default */
    struct aws_credential_source *credentials; /* required; borrowed */
    /* Hooks for tests; NULL: time(), nanosleep(), a line on stderr. clock gives the signing time
     * (UNIX seconds); sleep_ms waits between attempts; log gets one line (no newline) per retry
     * and per failed call, never with a secret in it. */
    int64_t (*clock)(void *arg);
    void (*sleep_ms)(void *arg, long ms);
    void (*log)(void *arg, const char *line);
    void *hook_arg;
};

/* A new client in *out (free with ec2_client_free). ERR_INVAL (no region or credentials, an
 * endpoint that is not an http(s) URL, plain http or tls_insecure off loopback: e says which),
 * ERR_NOMEM; *out is then unchanged. */
int ec2_client_new(const struct ec2_config *cfg, struct ec2_client **out, struct error *e);

void ec2_client_free(struct ec2_client *c);

/* The endpoint the client talks to ("https://ec2.us-east-1.amazonaws.com"). Borrowed. */
const char *ec2_client_endpoint(const struct ec2_client *c);

/*
 * The endpoint for a region: configured if set and not empty, else env_ec2, else env_any, else
 * https://ec2.<region>.amazonaws.com, into buf (trailing '/' removed). Pure: the caller passes
 * the environment's values. ERR_INVAL (no region), ERR_RANGE (does not fit); buf then unchanged.
 */
int ec2_resolve_endpoint(const char *configured, const char *env_ec2, const char *env_any,
                         const char *region, char *buf, size_t size);

struct http_client_url;

/* Check an AWS endpoint for client who ("ec2", "pricing"): an http(s) URL without query, plain
 * http only on loopback, tls_insecure only on loopback; its parts into *url. ERR_INVAL (e says
 * which); *url is then unchanged. */
int ec2_endpoint_check(const char *who, const char *endpoint, int tls_insecure,
                       struct http_client_url *url, struct error *e);

/* Query parameters ("Filter.1.Name" = "tag:x"), in order. A failed allocation sticks and is
 * reported by the call that uses them. */
struct ec2_params;

/* A new empty list (NULL when out of memory: the calls taking it then return ERR_NOMEM). */
struct ec2_params *ec2_params_new(void);

/* Append key = value (both copied); the key is printf-formatted from key_fmt. */
void ec2_params_add(struct ec2_params *p, const char *value, const char *key_fmt, ...)
    __attribute__((format(printf, 3, 4)));

void ec2_params_free(struct ec2_params *p);

/*
 * Send Action=action (with Version) and p (may be NULL), signed, retrying throttling, 5xx and
 * transport failures with exponential backoff and full jitter, and parse the answer into *out
 * (free with xml_free). Credentials AWS refuses as expired (ExpiredToken, ExpiredTokenException,
 * InvalidClientTokenId, RequestExpired) are dropped from the source's cache and the call is
 * asked again once with credentials fetched anew. Errors, with e->file "ec2 <Action>" and e->msg
 * naming the AWS error code, message and request id (the client's log gets the same line):
 * ERR_CAPACITY (InsufficientInstanceCapacity and other "this pool cannot serve now" codes),
 * ERR_QUOTA (VcpuLimitExceeded, MaxSpotInstanceCountExceeded, InstanceLimitExceeded, ...),
 * ERR_AGAIN (still throttled or 5xx after max_attempts), ERR_IO (transport failure or timeout on
 * the last attempt), ERR_PERM (credentials refused again after they were fetched anew, a clock
 * off by more than AWS allows, or no credentials to be had: nothing was done), ERR_NOENT
 * (*.NotFound), ERR_INVAL (Invalid*, Missing*, AuthFailure, UnauthorizedOperation, a bad
 * request, a 4xx answer that is not an EC2 error document: refused, nothing was done),
 * ERR_CONFLICT (IdempotentParameterMismatch), ERR_UNKNOWN (an error code castor does not know),
 * ERR_PARSE (a 200 answer that is malformed, truncated or unexpected: the call may have been
 * done), ERR_NOMEM, or the credential source's ERR_IO, ERR_AGAIN; *out is then unchanged.
 */
int ec2_call(struct ec2_client *c, const char *action, const struct ec2_params *p,
             struct xml_doc **out, struct error *e);

/* The error code for an EC2 error code string (as ec2_call maps it; 0 for throttling and
 * server errors, which are retried; ERR_PERM for expired credentials, asked again once). */
int ec2_error_code(const char *aws_code);

enum ec2_market {
    EC2_ON_DEMAND,
    EC2_SPOT,
};

/* "on-demand" or "spot". */
const char *ec2_market_name(enum ec2_market m);

struct ec2_instance_type {
    char name[32];
    int vcpus;
    long memory_mib;
    int gpus;            /* summed over the GPU kinds; 0 for none */
    char gpu_name[32];   /* the first kind's name ("A100"), "" for none */
    char gpu_maker[32];  /* "NVIDIA" */
    long gpu_memory_mib; /* total over all GPUs */
};

/* Describe the n named types (n = 0: every type), all pages, into a new array *out (free()) of
 * *n_out entries. Errors as ec2_call, ERR_RANGE (more than 100 names); outputs unchanged. */
int ec2_describe_instance_types(struct ec2_client *c, const char *const *types, size_t n,
                                struct ec2_instance_type **out, size_t *n_out, struct error *e);

struct ec2_spot_price {
    char type[32];
    char zone[32];
    double price; /* USD per hour */
    int64_t time; /* UNIX seconds */
};

/* Linux spot prices of the n named types (n = 0: all) since start_time (UNIX seconds; EC2 adds
 * the last change before it, the price in effect then; 0: no StartTime sent, and EC2 answers with
 * all the history it keeps, up to 90 days), all pages, into a new array *out (free()). Errors as
 * ec2_call; a price or time that does not parse is ERR_PARSE; outputs unchanged. */
int ec2_describe_spot_prices(struct ec2_client *c, const char *const *types, size_t n,
                             int64_t start_time, struct ec2_spot_price **out, size_t *n_out,
                             struct error *e);

/* One pool a fleet may launch into; borrowed. */
struct ec2_override {
    const char *instance_type; /* required */
    const char *subnet_id;     /* the subnet (which fixes the zone), or NULL */
    const char *zone;          /* the zone, for a default VPC without subnet_id; else a label */
    double max_price;          /* spot only, USD per hour; 0: up to the on-demand price */
};

/* An instant fleet; every pointer is borrowed. */
struct ec2_fleet_request {
    const char *launch_template_id;      /* required */
    const char *launch_template_version; /* NULL: "$Default" */
    const struct ec2_override *overrides;
    size_t n_overrides; /* 1 to 300 */
    int on_demand;      /* target capacities (instances) */
    int spot;
    const char *cluster_id;   /* tagged as EC2_TAG_CLUSTER */
    const char *launch_token; /* ClientToken, tagged as EC2_TAG_TOKEN: 1 to 64 ASCII characters */
};

/* An instance a launch started. */
struct ec2_launched {
    char id[32];
    char type[32];
    char zone[32];
    char subnet[32];
    enum ec2_market market;
};

/* A pool that could not serve (in a fleet's partial success). */
struct ec2_launch_error {
    char type[32];
    char zone[32]; /* from the answer, else from the request's override for that subnet */
    char subnet[32];
    enum ec2_market market;
    char code[64]; /* AWS's errorCode */
    char message[256];
    int err; /* ec2_error_code(code); ERR_UNKNOWN for a code castor does not know */
};

/* What an instant fleet did; arrays owned, released by ec2_fleet_result_free. */
struct ec2_fleet_result {
    char fleet_id[64];
    struct ec2_launched *instances;
    size_t n_instances;
    struct ec2_launch_error *errors;
    size_t n_errors;
};

void ec2_fleet_result_free(struct ec2_fleet_result *r);

/*
 * CreateFleet of type instant: price-capacity-optimized for spot, lowest-price for on-demand,
 * one launch template with one override per pool, the target capacities, the tags, the launch
 * token as ClientToken (so a retried call launches nothing twice). Partial success is success:
 * 0 with *out listing the instances started and the pools that failed (an empty fleet is 0 with
 * only errors). Errors as ec2_call (the whole call failed), ERR_INVAL (a request it cannot send),
 * ERR_PARSE (an instance or error item without its fields); *out is then unchanged.
 */
int ec2_create_fleet(struct ec2_client *c, const struct ec2_fleet_request *req,
                     struct ec2_fleet_result *out, struct error *e);

/* RunInstances, the fallback for one pool; every pointer is borrowed. */
struct ec2_run_request {
    const char *launch_template_id; /* or image_id; a template's version is "$Default" */
    const char *image_id;
    const char *instance_type; /* required */
    const char *subnet_id;     /* or NULL */
    const char *zone;          /* Placement.AvailabilityZone when there is no subnet */
    int count;                 /* MaxCount */
    int min_count;             /* MinCount: fewer than this is a failure; 0: 1 */
    enum ec2_market market;
    double max_price; /* spot; 0: up to on-demand */
    const char *cluster_id;
    const char *launch_token;
};

/* Launch req->min_count to req->count instances of one pool into a new array *out (free()), with
 * InstanceInitiatedShutdownBehavior terminate (an instance shut down from inside is terminated,
 * never left stopped). Errors as ec2_call; ERR_CAPACITY and ERR_QUOTA name (type, zone, market)
 * in e->msg; outputs unchanged. */
int ec2_run_instances(struct ec2_client *c, const struct ec2_run_request *req,
                      struct ec2_launched **out, size_t *n_out, struct error *e);

/* An instance of the cluster, as DescribeInstances tells it. */
struct ec2_instance {
    char id[32];
    char type[32];
    char zone[32];
    char state[16]; /* pending, running, shutting-down, terminated, stopping, stopped */
    enum ec2_market market;
    char launch_token[72]; /* the EC2_TAG_TOKEN tag, "" when absent */
    char private_ip[48];
    int64_t launch_time;   /* UNIX seconds; 0 when absent */
    char state_reason[64]; /* stateReason/code, "" when absent */
};

/* Every instance tagged EC2_TAG_CLUSTER = cluster_id, in any state, all pages, into a new array
 * *out (free()). Errors as ec2_call; ERR_PARSE for an item without id, type or state; outputs
 * unchanged. */
int ec2_describe_cluster(struct ec2_client *c, const char *cluster_id, struct ec2_instance **out,
                         size_t *n_out, struct error *e);

/* Every pending or running instance of the account in the client's region, whoever launched it
 * and however tagged (DescribeInstances filtered on instance-state-name), all pages, into a new
 * array *out (free()). Errors as ec2_call; ERR_PARSE for an item without id, type or state;
 * outputs unchanged. */
int ec2_describe_running(struct ec2_client *c, struct ec2_instance **out, size_t *n_out,
                         struct error *e);

/* Terminate the n instances (in calls of at most 1000 ids). Errors as ec2_call; on an error
 * some earlier batch may have been terminated (terminating is idempotent: call again). */
int ec2_terminate_instances(struct ec2_client *c, const char *const *ids, size_t n,
                            struct error *e);

#endif
