/* cloud_gcp.h: the gcp world's cloud (providers/cloud.h) over Compute Engine: offers from the
 * configuration priced by the Billing Catalog, the cluster's instances by label, launches made
 * idempotent by the launch token (an instance name derived from it, and requestId), terminations
 * of this cluster's instances only. */
#ifndef CASTOR_PROVIDERS_GCP_CLOUD_GCP_H
#define CASTOR_PROVIDERS_GCP_CLOUD_GCP_H

#include <stddef.h>
#include <stdint.h>

#include "providers/cloud.h"
#include "providers/gcp/billing.h"
#include "providers/gcp/compute.h"

/* One pool castor may launch from; strings borrowed until cloud_gcp_new returns. */
struct cloud_gcp_offer {
    const char *machine_type; /* "n1-standard-8", "a2-highgpu-1g", "g2-standard-4" */
    const char *zone;         /* "us-central1-a" */
    int spot;
    const char *accelerator_type; /* N1: the GPUs attached ("nvidia-tesla-t4"); else NULL */
    int accelerator_count;
    int vcpus;         /* 0: from gcp_machine_shape */
    double memory_gib; /* 0: from gcp_machine_shape */
};

/* The instance every launch creates; strings borrowed until cloud_gcp_new returns. */
struct cloud_gcp_template {
    const char *source_image; /* required */
    long disk_gb;
    const char *disk_type;
    const char *network;
    const char *subnetwork;
    int external_ip;
    const char *service_account;
    const char *startup_script;
};

#define CLOUD_GCP_ZONE_HOLD_S 600   /* an exhausted zone is left alone 10 minutes */
#define CLOUD_GCP_QUOTA_HOLD_S 1800 /* a quota reached, 30 minutes */

struct cloud_gcp_config {
    struct gcp_compute *compute; /* required; borrowed: it must outlive the cloud */
    struct gcp_billing *billing; /* NULL: prices unknown (NAN); borrowed */
    const struct cloud_gcp_offer *offers;
    size_t n_offers;
    struct cloud_gcp_template instance;
    /* How long a refusal keeps offers out (seconds; 0: the defaults below): an exhausted zone
     * (ZONE_RESOURCE_POOL_EXHAUSTED) holds every offer of that zone; a quota (QUOTA_EXCEEDED)
     * holds the offers of the region it counts in, or every GPU offer for GPUS_ALL_REGIONS. */
    long zone_hold_s;  /* 0: CLOUD_GCP_ZONE_HOLD_S */
    long quota_hold_s; /* 0: CLOUD_GCP_QUOTA_HOLD_S */
    /* the time prices are asked for and holds are judged by (UNIX seconds); NULL: time() */
    int64_t (*clock)(void *arg);
    void *hook_arg;
};

/*
 * A cloud over cfg into *out (cloud_free releases what the cloud copied, never compute or
 * billing). Offers are named "<machine type>[+<accelerator>x<count>]/<zone>/<spot|standard>".
 * Instance ids are "<zone>.<name>" (castor-node's
 * CASTOR_INSTANCE_ID; docs/gcp.md). A launch refused for capacity or quota starts a hold (see
 * zone_hold_s): until it ends, the held offers are left out of the offers' list, so that the
 * planner fails over to another zone or region, and a launch of one is refused at once
 * (ERR_CAPACITY or ERR_QUOTA) without asking Compute Engine. Listing deletes the cluster's
 * instances that are stopped (TERMINATED, STOPPED, SUSPENDED: after a host's maintenance, say)
 * and reports them gone: castor never starts one again, and a stopped one keeps its disk. The
 * quotas op reads the project's quotas (projects.get) and those of each region the offers use
 * (regions.get): a node takes its GPU model's regional quota (NVIDIA_T4_GPUS, ...) in GPUs, its
 * family's regional CPUs (A2_CPUS where listed, else CPUS) in vCPUs, each the PREEMPTIBLE_ one
 * for a Spot VM where the region grants it (a limit above 0), and GPUS_ALL_REGIONS in GPUs; a
 * metric the region does not list (or a region Compute Engine answers 404 for) limits nothing.
 * Its errors: ERR_PERM (403, a token refused twice, a project not shown), ERR_AGAIN, ERR_IO,
 * ERR_PARSE (a malformed answer), ERR_NOMEM; nothing written then (docs/gcp.md, Quotas). Errors,
 * with e naming the offer: ERR_INVAL (no compute, no source image, no offer, an offer without
 * machine type or zone, GPUs attached to a type that carries its own, a name too long),
 * ERR_CONFLICT (two offers with one name), ERR_NOMEM; *out then untouched.
 */
int cloud_gcp_new(const struct cloud_gcp_config *cfg, struct cloud *out, struct error *e);

/* The name cloud_gcp_new gives the offer c into name, after the checks it makes of one offer
 * (the configuration's reader checks each offer by it, to report a fault at the offer's line).
 * ERR_INVAL with e saying why (e->file "gcp offers", no location; the same faults as
 * cloud_gcp_new's but a name given twice); name then untouched. */
int cloud_gcp_offer_name(const struct cloud_gcp_offer *c, char name[CLOUD_NAME_MAX],
                         struct error *e);

#endif
