/* compute.h: the Compute Engine client castor rents GPU VMs with (REST v1 over providers/gcp/rest):
 * instances.insert (spot or standard, GPUs attached where the machine type needs them, the
 * cluster and the launch token as labels, the token as requestId), zone operations polled until
 * DONE, instances.get and instances.delete, the cluster's instances by label over every zone
 * and page (aggregatedList), and the quotas of a region (regions.get) and of the project
 * (projects.get). */
#ifndef CASTOR_PROVIDERS_GCP_COMPUTE_H
#define CASTOR_PROVIDERS_GCP_COMPUTE_H

#include <stddef.h>
#include <stdint.h>

#include "providers/gcp/auth.h"
#include "providers/gcp/rest.h"
#include "util/error.h"

#define GCP_COMPUTE_ENDPOINT "https://compute.googleapis.com/compute/v1"
#define GCP_LABEL_CLUSTER "castor-cluster" /* the cluster id on every instance castor launches */
#define GCP_LABEL_TOKEN "castor-token"     /* the launch token */
#define GCP_NAME_MAX 64                    /* names, zones, labels: 63 characters and a NUL */
#define GCP_UUID_LEN 36                    /* "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" */

struct gcp_compute; /* opaque; one thread at a time */

/* How the client behaves; 0 members take the defaults said here. Copied at gcp_compute_new
 * (rest's auth and hook_arg are borrowed: they must outlive the client). */
struct gcp_compute_config {
    const char *project;         /* required */
    struct gcp_rest_config rest; /* endpoint NULL: GCP_COMPUTE_ENDPOINT; auth required */
    int page_size;               /* maxResults of aggregatedList; 0: 500 */
    long poll_interval_ms;       /* between operation polls; 0: 2000 */
    long operation_timeout_s;    /* an operation not DONE after this is ERR_AGAIN; 0: 600 */
};

/* A new client in *out (gcp_compute_free). ERR_INVAL (no project or auth, a project name that
 * cannot go into a URL, a bad endpoint: e says which), ERR_NOMEM; *out then untouched. */
int gcp_compute_new(const struct gcp_compute_config *cfg, struct gcp_compute **out,
                    struct error *e);

void gcp_compute_free(struct gcp_compute *c);

/* A zone operation, as instances.insert, instances.delete and zoneOperations.get answer. */
struct gcp_operation {
    char name[GCP_NAME_MAX];
    char zone[GCP_NAME_MAX];
    char status[16];             /* PENDING, RUNNING, DONE */
    char target[GCP_NAME_MAX];   /* the targetLink's last segment: the instance's name */
    char target_id[32];          /* "" when not given */
    struct gcp_error_info error; /* DONE with an error: error.err is castor's code, else 0 */
};

/* The requestId for a launch token: the token itself when it is a UUID (lower-cased), else a
 * UUID (version 8, RFC 9562) made from the token's SHA-256, so that the same token always asks
 * the same request. ERR_INVAL (NULL or empty token). */
int gcp_request_id(const char *token, char out[GCP_UUID_LEN + 1]);

/* The instance name castor gives a launch: "castor-" and 20 hex digits of SHA-256 of cluster,
 * '/', token; the same launch always gets the same name. ERR_INVAL (NULL or empty). */
int gcp_instance_name(const char *cluster, const char *token, char out[GCP_NAME_MAX]);

/* 1 when s may be a label value (1 to 63 of a-z 0-9 - _), as castor's cluster ids and tokens
 * must be on GCP. */
int gcp_label_ok(const char *s);

/* GPUs that come with a machine type: for A2, A3 and G2 types, *count and the accelerator type
 * (static storage) they carry; 0. ERR_UNKNOWN for other types (N1 and the rest attach GPUs as
 * guestAccelerators, or have none); outputs then untouched. */
int gcp_machine_gpus(const char *machine_type, int *count, const char **accelerator);

/* The vCPUs and memory (GiB) of a predefined machine type of the GPU families castor rents:
 * n1-standard-N, n1-highmem-N, n1-highcpu-N, a2-highgpu-Kg, a2-megagpu-16g, a2-ultragpu-Kg,
 * a3-highgpu-8g, g2-standard-N. ERR_UNKNOWN for others (give them in the configuration); outputs
 * then untouched. */
int gcp_machine_shape(const char *machine_type, int *vcpus, double *memory_gib);

/* The region of a zone ("us-central1-a" -> "us-central1") into buf. ERR_PARSE, ERR_RANGE. */
int gcp_zone_region(const char *zone, char *buf, size_t size);

/* One instance to create; every pointer borrowed. */
struct gcp_insert_request {
    const char *zone;         /* required: "us-central1-a" */
    const char *name;         /* required: [a-z]([-a-z0-9]*[a-z0-9])?, at most 63 */
    const char *machine_type; /* required: "n1-standard-8", "a2-highgpu-1g" */
    int spot;                 /* 1: provisioningModel SPOT, deleted when preempted */
    /* GPUs attached as guestAccelerators (N1); must be unset for types that carry their own
     * (gcp_machine_gpus). */
    const char *accelerator_type; /* "nvidia-tesla-t4" */
    int accelerator_count;
    const char *source_image;    /* required: "projects/debian-cloud/global/images/family/..." */
    long disk_gb;                /* boot disk; 0: the image's size */
    const char *disk_type;       /* "pd-balanced"; NULL: the default */
    const char *network;         /* NULL: "global/networks/default" */
    const char *subnetwork;      /* "regions/<region>/subnetworks/<name>", or NULL */
    int external_ip;             /* 1: an ephemeral external address (ONE_TO_ONE_NAT) */
    const char *service_account; /* the instance's service account email, or NULL */
    const char *startup_script;  /* the startup-script metadata value, or NULL */
    const char *cluster;         /* required: label GCP_LABEL_CLUSTER (gcp_label_ok) */
    const char *token;           /* required: label GCP_LABEL_TOKEN, and the requestId */
};

/*
 * instances.insert with requestId = gcp_request_id(token), so that asking again (after an answer
 * that was lost) creates nothing twice; the operation it starts into *op. Spot instances get
 * provisioningModel SPOT, instanceTerminationAction DELETE and automaticRestart false; every
 * instance onHostMaintenance TERMINATE (GPUs cannot migrate). Errors as gcp_rest_call (an
 * instance of that name already there is ERR_CONFLICT), ERR_INVAL (a request castor cannot
 * send: e says which), ERR_PARSE (an answer that is not an operation); *op then untouched.
 */
int gcp_instances_insert(struct gcp_compute *c, const struct gcp_insert_request *req,
                         struct gcp_operation *op, struct error *e);

/* zoneOperations.get of op->name in op->zone into *op. Errors as gcp_rest_call, ERR_PARSE. */
int gcp_operation_get(struct gcp_compute *c, struct gcp_operation *op, struct error *e);

/*
 * Poll *op every poll_interval_ms until it is DONE (op is updated). 0 when it is DONE without an
 * error; else its error's code with e naming the call, the zone and Google's code and message:
 * ERR_CAPACITY (ZONE_RESOURCE_POOL_EXHAUSTED[_WITH_DETAILS]: the zone has no capacity now),
 * ERR_QUOTA (QUOTA_EXCEEDED; e names the quota metric, GPUS_ALL_REGIONS included), ERR_CONFLICT,
 * ERR_INVAL, ERR_UNKNOWN (a code castor does not know, named). ERR_AGAIN when it is not DONE
 * after operation_timeout_s (by the clock hook); a failing poll's error as gcp_operation_get.
 */
int gcp_operation_wait(struct gcp_compute *c, struct gcp_operation *op, struct error *e);

/* instances.delete of name in zone (a requestId from token when it is not NULL) into *op.
 * Errors as gcp_rest_call: ERR_NOENT when there is no such instance (already gone). */
int gcp_instances_delete(struct gcp_compute *c, const char *zone, const char *name,
                         const char *token, struct gcp_operation *op, struct error *e);

/* An instance as Compute Engine describes it. */
struct gcp_instance {
    char name[GCP_NAME_MAX];
    char id[32];
    char zone[GCP_NAME_MAX];
    char machine_type[GCP_NAME_MAX];
    char status[16]; /* PROVISIONING, STAGING, RUNNING, STOPPING, STOPPED, SUSPENDED, TERMINATED */
    int spot;        /* provisioningModel SPOT (or the older preemptible) */
    char cluster[GCP_NAME_MAX]; /* labels; "" when absent */
    char token[GCP_NAME_MAX];
    char ip[48];     /* the first interface's internal address, "" when none yet */
    int64_t created; /* creationTimestamp, UNIX seconds; 0 when absent */
};

/* instances.get. Errors as gcp_rest_call (ERR_NOENT: no such instance), except that a refusal
 * with HTTP 403 (the role lacks compute.instances.get) or a second 401 is ERR_PERM; ERR_INVAL
 * (a zone or name of another shape, refused before asking, or the server's 400); ERR_PARSE (an
 * instance without name, zone, machineType or status, a timestamp that does not parse). */
int gcp_instance_get(struct gcp_compute *c, const char *zone, const char *name,
                     struct gcp_instance *out, struct error *e);

/*
 * Every instance labelled GCP_LABEL_CLUSTER = cluster in every zone (aggregatedList with a label
 * filter, page after page) into a new array *out (free()) of *n entries; instances of another
 * cluster that a server returns anyway are left out. Errors as gcp_rest_call, ERR_AGAIN (a zone
 * answered "unreachable": a partial list is never returned, so that no instance is taken for
 * gone), ERR_PARSE (an item without its fields, a zone that is not an object), ERR_RANGE (more
 * than 10,000 pages), ERR_INVAL (a cluster that is not a label value: nothing asked, the line
 * logged as any failure); outputs then untouched.
 */
int gcp_instances_list(struct gcp_compute *c, const char *cluster, struct gcp_instance **out,
                       size_t *n, struct error *e);

/* ---- quotas ---- */

#define GCP_METRIC_MAX 64 /* "PREEMPTIBLE_NVIDIA_A100_80GB_GPUS" and a NUL fit */

/* One quota as Compute Engine reports it: the project's limit and what the whole project (castor
 * and everything else in it) holds now. */
struct gcp_quota {
    char metric[GCP_METRIC_MAX]; /* "NVIDIA_T4_GPUS", "PREEMPTIBLE_CPUS", "GPUS_ALL_REGIONS" */
    double limit;                /* >= 0 */
    double usage;                /* >= 0; 0 when the answer leaves it out */
};

/* The regional quota metric that counts GPUs of an accelerator type on standard VMs
 * ("nvidia-tesla-t4" -> "NVIDIA_T4_GPUS", "nvidia-h100-80gb" -> "NVIDIA_H100_GPUS"; Spot VMs'
 * count under "PREEMPTIBLE_" and this when the project has that quota). Static storage; NULL
 * for a type castor does not know. */
const char *gcp_gpu_quota_metric(const char *accelerator);

/* The regional quota metric that counts the size in GB of a persistent disk of disk_type:
 * "pd-ssd" and "pd-balanced" count in SSD_TOTAL_GB, "pd-standard" (and NULL or "", the type
 * instances.insert gives a boot disk when none is named) in DISKS_TOTAL_GB. Static storage; NULL
 * for another type (hyperdisks and pd-extreme have quotas of their own, not counted). */
const char *gcp_disk_quota_metric(const char *disk_type);

/* The size in GB of a boot disk made from image, as Compute Engine makes it when the insert gives
 * none: the image's diskSizeGb (images.get, or images.getFromFamily for ".../images/family/F").
 * image as an insert takes it: "projects/P/global/images/NAME", ".../images/family/F",
 * "global/images/NAME" (this project's), or the same after "https://.../compute/v1/". *gb written
 * only on success. Errors: ERR_INVAL (a name of another shape; nothing asked), ERR_NOENT (no such
 * image), ERR_PERM (not allowed to read it), ERR_PARSE (an answer without a size > 0), and the
 * calls' errors (ERR_AGAIN, ERR_IO). */
int gcp_image_disk_gb(struct gcp_compute *c, const char *image, double *gb, struct error *e);

/*
 * regions.get of region: its quotas (regions[].quotas: metric, limit, usage) into a new array
 * *out (free()) of *n entries. Errors as gcp_rest_call, with ERR_PERM for a refusal with HTTP
 * 403 (the role lacks compute.regions.get), ERR_NOENT (no such region), ERR_INVAL (a region
 * name that cannot go into a URL; 401 with a new token), ERR_PARSE (no quotas array, an entry
 * without metric, a limit or usage that is not a number >= 0: e says which); outputs then
 * untouched.
 */
int gcp_region_quotas(struct gcp_compute *c, const char *region, struct gcp_quota **out, size_t *n,
                      struct error *e);

/* projects.get of the client's project: its project-wide quotas (GPUS_ALL_REGIONS,
 * CPUS_ALL_REGIONS, ...) as gcp_region_quotas does (ERR_PERM: the role lacks
 * compute.projects.get; ERR_NOENT: no such project). */
int gcp_project_quotas(struct gcp_compute *c, struct gcp_quota **out, size_t *n, struct error *e);

#endif
