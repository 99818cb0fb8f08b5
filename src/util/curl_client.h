/* curl_client.h: one HTTP(S) request at a time over libcurl (curl.h stays in curl_client.c): a
 * timeout on every request, TLS verification on unless turned off for a loopback host, no
 * redirects, http and https only, a bounded answer. */
#ifndef CASTOR_UTIL_CURL_CLIENT_H
#define CASTOR_UTIL_CURL_CLIENT_H

#include <stddef.h>

#include "util/error.h"

struct curl_client; /* a reusable connection cache; opaque, one thread at a time */

/* A request header; borrowed. */
struct curl_client_header {
    const char *name;
    const char *value;
};

/* A request; every pointer is borrowed for the duration of the call. */
struct curl_client_request {
    const char *method; /* "GET", "POST", "PUT", ...: an HTTP token */
    const char *url;    /* http:// or https:// */
    /* Sent as given; a Host header here replaces curl's. Curl adds nothing that is signed:
     * "Expect:" and an empty Content-Type are sent when the request names none, so the
     * request on the wire carries only these headers, Accept and Content-Length. */
    const struct curl_client_header *headers;
    size_t n_headers;
    const void *body; /* may be NULL when body_len is 0; sent for any method but GET */
    size_t body_len;
    long timeout_ms; /* the whole exchange, connecting included; must be > 0 */
    /* Skip TLS certificate and host checks. Refused (ERR_INVAL) unless the URL's host is on
     * loopback (127.0.0.0/8, ::1, localhost): for tests against a local endpoint only. */
    int insecure;
};

/* An answer; body is owned (free it with curl_client_response_free) and NUL-terminated after len
 * bytes. */
struct curl_client_response {
    long status; /* the HTTP status */
    char *body;
    size_t len;
};

/* The answer's body may not exceed this (a larger one is ERR_RANGE). */
#define CURL_CLIENT_MAX_BODY (32u << 20)

/* The parts of a URL that a request signer needs. */
struct curl_client_url {
    char scheme[8];      /* "http" or "https" */
    char host[256];      /* without brackets */
    int port;            /* the explicit port, or 0 */
    char authority[280]; /* the Host header's value: host, [v6], with ":port" when explicit */
    char path[1024];     /* "/" when empty */
    int loopback;        /* 1 when host is 127.0.0.0/8, ::1 or localhost */
};

/* A new client in *out, freed with curl_client_free. ERR_NOMEM (or ERR_INTERNAL when libcurl
 * cannot be initialised); *out is then unchanged. */
int curl_client_new(struct curl_client **out);

/* Release a client and its connections; c may be NULL. */
void curl_client_free(struct curl_client *c);

/*
 * Send req and wait for the whole answer (any HTTP status is an answer) into *out. Errors:
 * ERR_INVAL (a missing field, a URL that is not http(s) or does not parse, insecure on a host
 * that is not loopback, timeout_ms <= 0), ERR_IO (could not connect, timed out, reset, TLS
 * failure: e->msg says which, naming the host but never a header or the body), ERR_RANGE (an
 * answer over CURL_CLIENT_MAX_BODY), ERR_NOMEM; *out is then unchanged.
 */
int curl_client_send(struct curl_client *c, const struct curl_client_request *req,
                     struct curl_client_response *out, struct error *e);

/* Free an answer's body and zero it; r may be NULL. */
void curl_client_response_free(struct curl_client_response *r);

/* Split an http(s) URL into *out. ERR_INVAL (not a URL, or another scheme, or a user or
 * query part); *out is then unchanged. */
int curl_client_parse_url(const char *url, struct curl_client_url *out);

#endif
