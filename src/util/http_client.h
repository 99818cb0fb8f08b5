/* http_client.h: castor's HTTP client (wraps libcurl; curl.h stays in http_client.c): one blocking
 * request at a time over a connection kept alive between requests; a timeout on every request, TLS
 * peers verified (off only for a loopback host), http and https only, no redirects, a bounded
 * response, and nothing added to the request that a signer has not seen. */
#ifndef CASTOR_UTIL_HTTP_CLIENT_H
#define CASTOR_UTIL_HTTP_CLIENT_H

#include <stddef.h>

#include "util/error.h"

#define HTTP_CLIENT_TIMEOUT_MS 30000            /* default whole-request timeout */
#define HTTP_CLIENT_MAX_BODY (32 * 1024 * 1024) /* default response body limit, bytes */

/* A request header; both strings borrowed. An empty value is sent as an empty header. */
struct http_client_header {
    const char *name; /* a token: no ':', CR or LF */
    const char *value;
};

/* A request; every pointer is borrowed for the duration of the call. */
struct http_client_request {
    const char *method; /* "GET", "HEAD", "POST", "PUT", "DELETE", ...: an HTTP token */
    const char *url;    /* http:// or https://, without a user part */
    /* Sent as given; a Host header here replaces curl's. Curl adds nothing that is signed:
     * "Expect:" and an empty Content-Type are sent when the request names none, so the request
     * on the wire carries only these headers, Host, Accept and Content-Length. */
    const struct http_client_header *headers;
    size_t nheaders;
    /* body_len bytes (body may be NULL when body_len is 0), refused with GET and HEAD; a POST or
     * PUT without a body says Content-Length: 0. */
    const void *body;
    size_t body_len;
    long timeout_ms;     /* the whole request, connecting included; 0: the default */
    size_t max_body;     /* a longer response body fails with ERR_RANGE; 0: the default */
    const char *ca_file; /* PEM file of trusted certificates; NULL: the system's */
    /* Skip TLS certificate and host checks. Refused (ERR_INVAL) unless the URL's host is on
     * loopback (127.0.0.0/8, ::1, localhost): for tests against a local endpoint only. */
    int insecure;
    /* A response header whose value to keep in http_client_response.captured (case-insensitive,
     * e.g. "x-amzn-RequestId"), or NULL. */
    const char *capture_header;
};

struct http_client_response {
    long status; /* the HTTP status */
    char *body;  /* owned; NUL-terminated after body_len bytes; never NULL on success */
    size_t body_len;
    char content_type[128]; /* "" when none was sent */
    char captured[160];     /* the value of the request's capture_header ("" when none) */
};

/* The parts of a URL that a request signer needs. */
struct http_client_url {
    char scheme[8];      /* "http" or "https" */
    char host[256];      /* without brackets */
    int port;            /* the explicit port, or 0 */
    char authority[280]; /* the Host header's value: host, [v6], with ":port" when explicit */
    char path[1024];     /* "/" when empty; still percent-encoded */
    char query[1024];    /* after '?', still percent-encoded; "" when none */
    int loopback;        /* 1 when host is 127.0.0.0/8, ::1 or localhost */
};

struct http_client; /* a connection cache; used by one thread at a time */

/* A new client. ERR_INVAL (no out), ERR_NOMEM, ERR_INTERNAL (libcurl cannot be initialised). On
 * success *out owns it (http_client_free); on error it is untouched. */
int http_client_new(struct http_client **out);

/* Free the client, closing its connections. NULL is ignored. */
void http_client_free(struct http_client *c);

/*
 * Send one request and wait for the whole response, whatever its status (a 404 is a response,
 * not an error). Errors, with e (may be NULL) saying what happened, naming the host (e->file),
 * the method and the path but never a header, the query or the body: ERR_INVAL (a missing field,
 * a URL that is not http(s) or does not parse, a bad header, a body with GET or HEAD, a negative
 * timeout, insecure on a host that is not loopback), ERR_AGAIN (timed out), ERR_IO (cannot
 * resolve or connect, the connection broke or the answer was cut, TLS failed or the peer is not
 * trusted), ERR_RANGE (the response body is over the limit), ERR_PARSE (not an HTTP response),
 * ERR_NOMEM. Header lines are wiped after use. On success *out owns the body
 * (http_client_response_clear); on error *out is untouched.
 */
int http_client_do(struct http_client *c, const struct http_client_request *req,
                   struct http_client_response *out, struct error *e);

/* Free the response's body and zero the response. NULL is ignored. */
void http_client_response_clear(struct http_client_response *r);

/* Split an http(s) URL into *out. ERR_INVAL (not a URL, another scheme, a user part, a part too
 * long), ERR_NOMEM; *out is then unchanged. */
int http_client_parse_url(const char *url, struct http_client_url *out);

#endif
