/* rest.h: one call to a Google JSON REST API (Compute Engine, Cloud Billing) as castor's GCP
 * clients make it: a bearer token from gcp_auth, a timeout on every attempt, 429, 5xx, rate-limit
 * reasons and transport failures retried with full-jitter backoff (providers/retry), Google's
 * error document read and its reason mapped into castor's table, secrets kept out of messages. */
#ifndef CASTOR_PROVIDERS_GCP_REST_H
#define CASTOR_PROVIDERS_GCP_REST_H

#include <stdint.h>

#include "providers/gcp/auth.h"
#include "util/error.h"
#include "util/json.h"

/* How a client behaves; 0 or NULL members take the defaults said here. Copied at gcp_rest_new
 * except auth and hook_arg, which are borrowed and must outlive the client. */
struct gcp_rest_config {
    const char *endpoint;  /* the base URL (no query); plain http only on loopback */
    int tls_insecure;      /* 1: no TLS verification; refused unless the endpoint is loopback */
    long timeout_ms;       /* per attempt, connecting included; 0: 30000 */
    int max_attempts;      /* per call; 0: 5 */
    long backoff_base_ms;  /* 0: 200 */
    long backoff_cap_ms;   /* 0: 20000 */
    uint64_t seed;         /* seeds the jitter */
    struct gcp_auth *auth; /* required; borrowed */
    /* Hooks for tests; NULL: time(), nanosleep(), a line on stderr. clock gives the time tokens
     * are judged by and operations are timed with; log gets one line (no newline) per retry and
     * per failed call, never with a secret in it. */
    int64_t (*clock)(void *arg);
    void (*sleep_ms)(void *arg, long ms);
    void (*log)(void *arg, const char *line);
    void *hook_arg;
};

/* What a Google error said (an HTTP error's "error" object, or a Compute operation's). */
struct gcp_error_info {
    long http_status;      /* 0 for an operation's error */
    char reason[64];       /* errors[0].reason, else errors[0].code, else status; "" if none */
    char message[256];     /* errors[0].message, else message; one printable line */
    char quota_metric[96]; /* errorDetails[].quotaInfo.metricName, or "" */
    int err;               /* gcp_error_code(reason); 0 when the reason is retried */
};

/* castor's code for a Google error reason: ERR_CAPACITY (ZONE_RESOURCE_POOL_EXHAUSTED and
 * _WITH_DETAILS), ERR_QUOTA (QUOTA_EXCEEDED, quotaExceeded), 0 (rate limits, backendError,
 * internalError, UNAVAILABLE: retried), ERR_NOENT (notFound), ERR_CONFLICT (alreadyExists),
 * ERR_INVAL (invalid requests and permissions), ERR_UNKNOWN (anything else, NULL, ""). */
int gcp_error_code(const char *reason);

/* Read a Google error object ({"code", "message", "errors": [{"reason" or "code", "message",
 * "errorDetails"}], "status"}) into *out. 0, or ERR_PARSE when it is not an object with errors
 * or a status (*out then says "(none)"). */
int gcp_error_read(const struct jv *error, struct gcp_error_info *out);

struct gcp_rest; /* opaque; one thread at a time */

/* A new client (free with gcp_rest_free) of the API at cfg->endpoint, else default_endpoint; name
 * ("gce", "billing") starts its messages. ERR_INVAL (no endpoint or auth, an endpoint that is not
 * an http(s) URL without query, plain http or tls_insecure off loopback: e says which),
 * ERR_NOMEM; *out then untouched. */
int gcp_rest_new(const struct gcp_rest_config *cfg, const char *name, const char *default_endpoint,
                 struct gcp_rest **out, struct error *e);

void gcp_rest_free(struct gcp_rest *r);

/* The base URL (trailing '/' removed). Borrowed. */
const char *gcp_rest_endpoint(const struct gcp_rest *r);

/* The clock, the sleep and the log the client was given (or their defaults). */
int64_t gcp_rest_now(struct gcp_rest *r);
void gcp_rest_sleep(struct gcp_rest *r, long ms);
void gcp_rest_log(struct gcp_rest *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Send method to endpoint + path (path starts with '/' and carries its query, percent-encoded)
 * with body (JSON text, or NULL), and read the answer, a JSON object, into *out (jv_free). call
 * names the call in messages ("instances.insert"). Each attempt gets a token and has the
 * timeout; 429, 5xx, rate-limit reasons, transport failures and token fetches that may succeed
 * later are retried; a 401 drops the cached token and is retried once. Errors, with e->file
 * "<name> <call>" and e->msg naming the HTTP status, Google's reason and message: as
 * gcp_error_code for a refusal (ERR_UNKNOWN names an unknown reason), ERR_AGAIN (still throttled
 * or 5xx after max_attempts), ERR_IO (a transport failure or timeout on the last attempt),
 * ERR_INVAL (401 twice), ERR_PARSE (an answer that is not a JSON object, an error status without
 * Google's error document), the token source's error, ERR_NOMEM; *out then untouched. When info
 * is not NULL it receives the refusal's details (reason, quota metric); it is cleared on success.
 */
int gcp_rest_call(struct gcp_rest *r, const char *call, const char *method, const char *path,
                  const char *body, struct jv **out, struct gcp_error_info *info, struct error *e);

/* Log a failure found in an answer that gcp_rest_call accepted ("<name> <call> failed: ...");
 * returns rc. */
int gcp_rest_logged(struct gcp_rest *r, int rc, const struct error *e);

/* The last '/'-separated segment of a resource URL ("zones/us-central1-a" -> "us-central1-a"),
 * into buf. ERR_PARSE (NULL or empty segment), ERR_RANGE (does not fit). */
int gcp_last_segment(const char *url, char *buf, size_t size);

#endif
