/* billing.h: Compute Engine prices for castor's GCP offers: GPU, vCPU and memory prices per hour,
 * on-demand and spot, and persistent disks per GiB, per region, read from the Cloud Billing
 * Catalog API (the SKUs of service 6F81-5844-456A, Compute Engine), cached, with a static table
 * (config/gcp-prices.yaml) that serves while the catalog cannot be reached. A VM's price is the
 * sum of its parts, its boot disk included. */
#ifndef CASTOR_PROVIDERS_GCP_BILLING_H
#define CASTOR_PROVIDERS_GCP_BILLING_H

#include <stddef.h>
#include <stdint.h>

#include "providers/gcp/auth.h"
#include "providers/gcp/rest.h"
#include "util/error.h"

#define GCP_BILLING_ENDPOINT "https://cloudbilling.googleapis.com/v1"
#define GCP_COMPUTE_SERVICE_ID "6F81-5844-456A"

enum gcp_price_kind {
    GCP_PRICE_GPU,  /* per GPU-hour; name: the accelerator type ("nvidia-tesla-t4") */
    GCP_PRICE_CORE, /* per vCPU-hour; name: the machine family ("n1", "a2", "g2") */
    GCP_PRICE_RAM,  /* per GiB-hour; name: the machine family */
    GCP_PRICE_DISK, /* per GiB-hour of a zonal persistent disk (the catalog's GiB-month over 730
                     * hours), the same for Spot VMs; name: the disk type ("pd-balanced") */
};

/* Hours in a month, as Google bills a GiB-month of persistent disk. */
#define GCP_HOURS_PER_MONTH 730.0

struct gcp_price {
    enum gcp_price_kind kind;
    char name[32];
    char region[32];
    int spot;
    double usd_per_hour;
};

/* A price table; start zeroed, release with gcp_prices_clear. */
struct gcp_prices {
    struct gcp_price *items;
    size_t n, cap;
    int from_catalog; /* 1: the Billing Catalog; 0: the static table */
    int64_t as_of;    /* when the catalog was read, or the static table's date (UNIX s) */
    char source[160]; /* where the prices come from, for messages and the docs */
};

void gcp_prices_clear(struct gcp_prices *t);

/* Add a price (a key already there keeps its first price: 0 too). ERR_INVAL (a name or region
 * too long, a price that is negative or not finite), ERR_NOMEM. */
int gcp_prices_add(struct gcp_prices *t, enum gcp_price_kind kind, const char *name,
                   const char *region, int spot, double usd_per_hour);

/* The price of one unit, or NAN when the table has none. */
double gcp_prices_lookup(const struct gcp_prices *t, enum gcp_price_kind kind, const char *name,
                         const char *region, int spot);

/* A VM's price per hour in region: vcpus and mem_gib at the family's core and RAM prices, plus
 * gpus of accelerator gpu (gpus 0: none). NAN when a part has no price. */
double gcp_prices_node(const struct gcp_prices *t, const char *family, int vcpus, double mem_gib,
                       const char *gpu, int gpus, const char *region, int spot);

/* A boot disk's price per hour: gb GiB of disk_type (NULL: pd-standard, Compute Engine's default)
 * in region, or NAN when the table has no price for it. */
double gcp_prices_disk(const struct gcp_prices *t, const char *disk_type, double gb,
                       const char *region);

/*
 * Read one page of services/.../skus (JSON, len bytes) into t: the SKUs of resource family
 * Compute whose usage type is OnDemand or Preemptible (spot), in USD, priced per hour ("h") or
 * per GiB-hour ("GiBy.h"), whose description names a GPU model castor knows or a machine
 * family's predefined cores or RAM; one price per service region (the first tier's unit price,
 * units + nanos). Commitments, reservations, licences, custom and sole-tenant SKUs are left out.
 * The page's nextPageToken goes into next ("" on the last page). Errors: ERR_PARSE (not JSON,
 * no skus list, a SKU of a kept kind without its category, regions or price; e names the SKU id),
 * ERR_RANGE (a page token longer than next), ERR_NOMEM; prices added before an error stay.
 */
int gcp_prices_parse_skus(const char *json, size_t len, struct gcp_prices *t, char *next,
                          size_t next_size, struct error *e);

/*
 * Read the static table (YAML: source, date "YYYY-MM-DD", spot_factor in (0, 1], and regions:
 * <region>: {gpu|core|ram: {<name>: {on_demand: $, spot: $}}}; a missing spot price is
 * on_demand x spot_factor) into *out. Errors as conf_load and its getters (file, line, column
 * and key); *out then untouched.
 */
int gcp_prices_load_yaml(const char *path, struct gcp_prices *out, struct error *e);

/* How the price client behaves; 0 or NULL members take the defaults said here. Copied at
 * gcp_billing_new (rest's auth and hook_arg are borrowed). */
struct gcp_billing_config {
    struct gcp_rest_config rest; /* endpoint NULL: GCP_BILLING_ENDPOINT; auth required */
    int page_size;               /* 0: 5000, the API's maximum */
    const char *fallback_path;   /* the static table; NULL: none */
    int64_t ttl_s;               /* a catalog this old is read again; 0: 86400 */
    int64_t retry_s;             /* after a failed read, wait this long; 0: 3600 */
};

struct gcp_billing; /* opaque; one thread at a time */

/* A new client (gcp_billing_free). Errors as gcp_rest_new; *out then untouched. */
int gcp_billing_new(const struct gcp_billing_config *cfg, struct gcp_billing **out,
                    struct error *e);

void gcp_billing_free(struct gcp_billing *b);

/* Read every page of the catalog now into *out (as_of = now). Errors as gcp_rest_call and
 * gcp_prices_parse_skus, ERR_RANGE (more than 1,000 pages), ERR_EMPTY (no price castor can
 * use); *out then untouched. */
int gcp_billing_fetch(struct gcp_billing *b, int64_t now, struct gcp_prices *out, struct error *e);

/*
 * The prices to use at now, borrowed until the next call: the cached catalog while it is younger
 * than ttl_s; else the catalog read again (at most once per retry_s after a failure, which is
 * logged); when it cannot be read, the last catalog, else the static table. Errors: the catalog's
 * error when there is neither a catalog nor a static table (or the table does not load: e then
 * names the file); *out then untouched.
 */
int gcp_billing_prices(struct gcp_billing *b, int64_t now, const struct gcp_prices **out,
                       struct error *e);

#endif
