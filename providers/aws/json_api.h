/* json_api.h: the AWS JSON 1.1 protocol shared by castor's clients of JSON APIs (the Price List
 * Query API, Service Quotas): POST with X-Amz-Target and a JSON body, signed with SigV4 (the
 * target signed too), errors read from {"__type", "message"} with the request id of the
 * x-amzn-RequestId header, retries of throttling, 5xx and transport failures with exponential
 * backoff and full jitter. */
#ifndef CASTOR_PROVIDERS_AWS_JSON_API_H
#define CASTOR_PROVIDERS_AWS_JSON_API_H

#include <stddef.h>
#include <stdint.h>

#include "providers/aws/credentials.h"
#include "util/error.h"
#include "util/json.h"

#define AWS_JSON_CONTENT_TYPE "application/x-amz-json-1.1"

/* How a JSON client behaves; NULL or 0 members take the defaults said here. Copied at
 * aws_json_new except credentials and hook_arg, which are borrowed and must outlive it. */
struct aws_json_config {
    /* The endpoint: this, else the API's own variable (AWS_ENDPOINT_URL_PRICING, ...), else
     * AWS_ENDPOINT_URL, else the API's public endpoint. Plain http only on loopback. */
    const char *endpoint;
    const char *signing_region; /* the SigV4 scope's region; NULL: the API's default */
    int tls_insecure;           /* refused unless the endpoint is loopback */
    long timeout_ms;            /* per attempt, connecting included; 0: 30000 */
    int max_attempts;           /* throttling, 5xx and transport failures; 0: 5 */
    long backoff_base_ms;       /* 0: 200 */
    long backoff_cap_ms;        /* 0: 20000 */
    uint64_t seed;              /* the jitter's */
    struct aws_credential_source *credentials; /* required; borrowed */
    /* Hooks as ec2_config's (NULL: the defaults of providers/retry.h). */
    int64_t (*clock)(void *arg);
    void (*sleep_ms)(void *arg, long ms);
    void (*log)(void *arg, const char *line);
    void *hook_arg;
};

/* An error type ("ThrottlingException") and castor's code for it: 0 for a type that is
 * retried, else a negative code returned at once. */
struct aws_json_code {
    const char *type;
    int err;
};

/* What an API is; static, borrowed by the client. */
struct aws_json_api {
    const char *who;                   /* for configuration errors: "pricing", "servicequotas" */
    const char *service;               /* SigV4's service name: "pricing", "servicequotas" */
    const char *env;                   /* the API's endpoint variable: "AWS_ENDPOINT_URL_PRICING" */
    const struct aws_json_code *codes; /* its error types; a type not listed is ERR_UNKNOWN */
    size_t n_codes;
};

struct aws_json; /* opaque; one thread at a time */

/* A new client of api in *out (aws_json_free): default_endpoint is the public endpoint and
 * default_region the signing region when cfg names none (both copied). ERR_INVAL (no
 * credentials, a bad endpoint: e->file is api->who and e->msg says which), ERR_NOMEM; *out is
 * then unchanged. */
int aws_json_new(const struct aws_json_api *api, const char *default_endpoint,
                 const char *default_region, const struct aws_json_config *cfg,
                 struct aws_json **out, struct error *e);

void aws_json_free(struct aws_json *j);

/* The endpoint the client talks to. Borrowed. */
const char *aws_json_endpoint(const struct aws_json *j);

/*
 * POST body (a JSON document) with X-Amz-Target target, signed, retrying throttling, 5xx and
 * transport failures; a 200 answer parsed into *out (jv_free) and its request id (or "(none)")
 * into rid. Errors, with e->file where and e->msg naming the error type, its message and the
 * request id (the secret and the session token starred out): ERR_PERM for credentials refused
 * as expired or replaced (ExpiredTokenException, ExpiredToken, RequestExpired,
 * UnrecognizedClientException, InvalidClientTokenId) once more after the cached ones were dropped
 * and fetched anew; the code api->codes gives another error type, ERR_UNKNOWN (a type it does not
 * list), ERR_AGAIN (throttled or 5xx on the last attempt), ERR_IO (transport or timeout on the last
 * attempt), ERR_PARSE (an answer that is not JSON, or an error that is not a JSON error),
 * ERR_NOMEM; no credentials to be had: ERR_PERM (ERR_IO, ERR_AGAIN as the credential source
 * says); *out and rid are then unchanged. Nothing is logged but the retries.
 */
int aws_json_call(struct aws_json *j, const char *where, const char *target, const char *body,
                  struct jv **out, char *rid, size_t rid_size, struct error *e);

/* One printf-formatted line to the client's log hook. */
void aws_json_log(struct aws_json *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
