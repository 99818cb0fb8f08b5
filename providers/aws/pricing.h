/* pricing.h: on-demand prices from the AWS Price List Query API (GetProducts, the JSON protocol,
 * signed with SigV4 for the service "pricing"): one instance type's Linux, shared-tenancy price
 * in a region, read from the PriceList's JSON documents inside strings over every page, and a
 * cache (prices kept for a day, failures not asked again for a while, the time passed in). */
#ifndef CASTOR_PROVIDERS_AWS_PRICING_H
#define CASTOR_PROVIDERS_AWS_PRICING_H

#include <stddef.h>
#include <stdint.h>

#include "providers/aws/credentials.h"
#include "util/error.h"

#define PRICING_DEFAULT_ENDPOINT "https://api.pricing.us-east-1.amazonaws.com"
#define PRICING_TARGET "AWSPriceListService.GetProducts"

struct aws_pricing; /* opaque; one thread at a time */

/* How the client behaves; NULL or 0 members take the defaults said here. Copied at
 * aws_pricing_new except credentials and hook_arg, which are borrowed and must outlive it. */
struct aws_pricing_config {
    /* The endpoint: this, else AWS_ENDPOINT_URL_PRICING, else AWS_ENDPOINT_URL, else
     * PRICING_DEFAULT_ENDPOINT. Plain http only on loopback. */
    const char *endpoint;
    const char *signing_region; /* the SigV4 scope's region; NULL: "us-east-1" */
    int tls_insecure;           /* refused unless the endpoint is loopback */
    long timeout_ms;            /* per attempt; 0: 30000 */
    int max_attempts;           /* throttling, 5xx and transport failures; 0: 5 */
    long backoff_base_ms;       /* 0: 200 */
    long backoff_cap_ms;        /* 0: 20000 */
    uint64_t seed;              /* the jitter's */
    double ttl_s;               /* a price read serves this long; 0: 86400 (a day) */
    double retry_s;             /* a failed lookup is not tried again for this long; 0: 900 */
    struct aws_credential_source *credentials; /* required; borrowed */
    /* Hooks as ec2_config's (NULL: the defaults of providers/retry.h). */
    int64_t (*clock)(void *arg);
    void (*sleep_ms)(void *arg, long ms);
    void (*log)(void *arg, const char *line);
    void *hook_arg;
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

#endif
