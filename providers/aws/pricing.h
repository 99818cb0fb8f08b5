/* pricing.h: on-demand prices from the AWS Price List Query API (GetProducts, the JSON protocol,
 * signed with SigV4 for the service "pricing"): one instance type's Linux, shared-tenancy price
 * in a region, read from the PriceList's JSON documents inside strings over every page, and a
 * cache (prices kept for a day, failures not asked again for a while, the time passed in). */
#ifndef CASTOR_PROVIDERS_AWS_PRICING_H
#define CASTOR_PROVIDERS_AWS_PRICING_H

#include <stddef.h>
#include <stdint.h>

#include "providers/aws/credentials.h"
#include "providers/aws/json_api.h"
#include "util/error.h"

#define PRICING_DEFAULT_ENDPOINT "https://api.pricing.us-east-1.amazonaws.com"
#define PRICING_TARGET "AWSPriceListService.GetProducts"

struct aws_pricing; /* opaque; one thread at a time */

/* How the client behaves: the JSON client's settings (json.endpoint: this, else
 * AWS_ENDPOINT_URL_PRICING, else AWS_ENDPOINT_URL, else PRICING_DEFAULT_ENDPOINT; the SigV4
 * scope's region "us-east-1" unless json.signing_region says otherwise) and the cache's; NULL or
 * 0 members take the defaults. Copied at aws_pricing_new except json.credentials (required) and
 * json.hook_arg, which are borrowed and must outlive it. */
struct aws_pricing_config {
    struct aws_json_config json;
    double ttl_s;   /* a price read serves this long; 0: 86400 (a day) */
    double retry_s; /* a failed lookup is not tried again for this long; 0: 900 */
};

/* A new client in *out (aws_pricing_free). ERR_INVAL (no credentials, a bad endpoint: e says
 * which), ERR_NOMEM; *out is then unchanged. */
int aws_pricing_new(const struct aws_pricing_config *cfg, struct aws_pricing **out,
                    struct error *e);

void aws_pricing_free(struct aws_pricing *p);

/* The endpoint the client talks to. Borrowed. */
const char *aws_pricing_endpoint(const struct aws_pricing *p);

/*
 * Ask GetProducts (ServiceCode AmazonEC2; TERM_MATCH filters instanceType = type, regionCode =
 * region, operatingSystem Linux, tenancy Shared, preInstalledSw NA, capacitystatus Used) page
 * after page, and write into *usd the first positive hourly USD price of an OnDemand term of a
 * product of that type. Errors, with e->file "pricing GetProducts" and the AWS request id in
 * e->msg: ERR_NOENT (no product or no positive price), ERR_PARSE (an answer, a PriceList
 * document or a price that does not parse), ERR_AGAIN (throttled or 5xx after max_attempts),
 * ERR_IO (transport or timeout on the last attempt), ERR_INVAL (refused: access denied, a bad
 * parameter), ERR_UNKNOWN (an error type castor does not know), ERR_NOMEM, the credential
 * source's; *usd is then unchanged. Not cached.
 */
int aws_pricing_get(struct aws_pricing *p, const char *region, const char *type, double *usd,
                    struct error *e);

/*
 * The price as aws_pricing_get, through the cache at time now (UNIX seconds): a price read less
 * than ttl_s ago is returned without a call; a lookup that failed less than retry_s ago is not
 * tried again; when a call fails, the last price read (however old) is returned. Errors as
 * aws_pricing_get when there is no price at all (ERR_AGAIN while a failure is recent).
 */
int aws_pricing_on_demand(struct aws_pricing *p, const char *region, const char *type, double now,
                          double *usd, struct error *e);

/*
 * An EBS volume type's ("gp3") price per GB-month in region: GetProducts with TERM_MATCH filters
 * volumeApiName = type, regionCode = region and productFamily Storage, the first positive USD
 * "GB-Mo" price of an OnDemand term. Errors as aws_pricing_get. Not cached.
 */
int aws_pricing_volume_get(struct aws_pricing *p, const char *region, const char *type, double *usd,
                           struct error *e);

/* The same through the cache, as aws_pricing_on_demand. */
int aws_pricing_volume(struct aws_pricing *p, const char *region, const char *type, double now,
                       double *usd, struct error *e);

#endif
