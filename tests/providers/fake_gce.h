/* fake_gce.h: a fake Google Cloud on loopback for tests: an OAuth token endpoint that verifies
 * each service-account JWT (RS256 signature against the public key, header and claims) before it
 * issues a token; the metadata server's token; Compute Engine (instances.insert with requestId,
 * zone operations that run PENDING, RUNNING, DONE over polls, instances.get and delete,
 * aggregatedList by label with paging, regions.get and projects.get with their quotas) and the
 * Billing Catalog's SKU pages, each refusing a
 * request without a token it issued. Failures are set up (exhausted zones, quota) or scripted
 * (any status and body, a hang, a cut answer) per path prefix. */
#ifndef CASTOR_TESTS_FAKE_GCE_H
#define CASTOR_TESTS_FAKE_GCE_H

#include <stddef.h>
#include <stdint.h>

#define FAKE_GCE_COMPUTE "/compute/v1" /* the compute endpoint's path */
#define FAKE_GCE_BILLING "/billing/v1" /* the billing endpoint's path */
#define FAKE_GCE_TOKEN "/token"        /* the token endpoint's path */

struct fake_gce;

/* Start a fake of project whose token endpoint accepts JWTs from client_email signed by the key
 * whose public half is the PEM file pub_pem_path. NULL when it cannot start. */
struct fake_gce *fake_gce_start(const char *project, const char *client_email,
                                const char *pub_pem_path);

void fake_gce_stop(struct fake_gce *f);

/* "http://127.0.0.1:PORT" (append FAKE_GCE_COMPUTE, FAKE_GCE_BILLING or FAKE_GCE_TOKEN). */
const char *fake_gce_url(const struct fake_gce *f);

/* The time the token endpoint judges a JWT's iat by (UNIX seconds; it allows 60 s of skew). */
void fake_gce_set_now(struct fake_gce *f, int64_t now);

/* expires_in of the tokens it issues from now on (default 3600). */
void fake_gce_set_token_ttl(struct fake_gce *f, int seconds);

/* Forget every token issued: the next API request answers 401. */
void fake_gce_revoke_tokens(struct fake_gce *f);

/* From now on inserts in zone end in an operation error ZONE_RESOURCE_POOL_EXHAUSTED (or, with
 * details 1, _WITH_DETAILS). */
void fake_gce_exhaust_zone(struct fake_gce *f, const char *zone, int details);

/* From now on inserts in zone succeed again (capacity is back). */
void fake_gce_restore_zone(struct fake_gce *f, const char *zone);

/* From now on inserts end in QUOTA_EXCEEDED on metric (NULL: none). */
void fake_gce_quota(struct fake_gce *f, const char *metric);

/* The quota metric that regions.get of region (NULL: projects.get) reports, with limit and
 * usage as given (set, or replaced). The usage is the test's figure, except for the persistent
 * disk quotas, as Compute Engine keeps them: the boot disks of the fake's live instances add to
 * SSD_TOTAL_GB (pd-ssd, pd-balanced) and DISKS_TOTAL_GB (pd-standard, or no type named) of their
 * region (diskSizeGb, else the image's 10 GB), and an insert whose disk would take a listed one
 * past its limit ends in QUOTA_EXCEEDED on it. The other quotas do not count the fake's
 * instances. regions.get answers for a region that has a quota and 404 notFound for any other;
 * from the start us-central1, us-east1, us-west1, europe-west4 and asia-east1 list CPUS (96, 0)
 * and the project GPUS_ALL_REGIONS (16, 0: granted, unlike a new project's 0) and
 * CPUS_ALL_REGIONS (512, 0), so that a controller that heeds quotas launches. */
void fake_gce_set_quota(struct fake_gce *f, const char *region, const char *metric, double limit,
                        double usage);

/* An image images.get (or getFromFamily) answers, of any project, with its diskSizeGb: path as
 * "projects/P/global/images/NAME" or ".../images/family/F" (set, or replaced). From the start the
 * fake has Debian 12's family, 10 GB; any other image is 404 notFound. */
void fake_gce_set_image(struct fake_gce *f, const char *path, double gb);

/* Put an instance there directly (status RUNNING unless given). 0, or -1 when full. */
int fake_gce_add_instance(struct fake_gce *f, const char *zone, const char *name,
                          const char *cluster, const char *token, const char *status, int spot);

/* Queue a reply for the next request whose path starts with prefix (API requests: only once
 * their token is accepted). In body, "@TOKEN@" is replaced by the request's bearer token (a
 * server that echoes it). */
void fake_gce_push(struct fake_gce *f, const char *prefix, int status, const char *body);
void fake_gce_push_hang(struct fake_gce *f, const char *prefix);
void fake_gce_push_cut(struct fake_gce *f, const char *prefix, const char *body, long cut);

/* Requests received whose path starts with prefix ("" for all). */
size_t fake_gce_requests(const struct fake_gce *f, const char *prefix);

/* Tokens issued; requests refused for their token (401) or their JWT (400). */
size_t fake_gce_tokens_issued(const struct fake_gce *f);
size_t fake_gce_auth_failures(const struct fake_gce *f);

/* Set the status of the live instance name in zone (as Compute Engine does when it stops one
 * for its host's maintenance: "TERMINATED"). 0, or -1 when there is none. */
int fake_gce_set_status(struct fake_gce *f, const char *zone, const char *name, const char *status);

/* One instance as the fake holds it, for tests that boot what a controller launched. */
struct fake_gce_instance {
    char zone[64], name[64], cluster[64], token[64], status[16], machine[64];
    int spot;
    int live; /* 0 once deleted */
};

/* The i-th instance ever created (0, 1, ...; deleted ones stay, live 0) into *out. 0, or -1 past
 * the last. */
int fake_gce_instance_at(const struct fake_gce *f, size_t i, struct fake_gce_instance *out);

/* Instances there now. */
size_t fake_gce_instance_count(const struct fake_gce *f);

/* The request target (path and query) and body of the last request whose path starts with
 * prefix, or NULL; valid until the next request. */
const char *fake_gce_last_target(const struct fake_gce *f, const char *prefix);
const char *fake_gce_last_body(const struct fake_gce *f, const char *prefix);

/* The JWT claims (JSON text) of the last assertion the token endpoint verified, or "". */
const char *fake_gce_last_claims(const struct fake_gce *f);

#endif
