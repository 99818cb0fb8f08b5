/* http_client.h: castor's HTTP client (wraps libcurl; curl.h stays in http_client.c): one blocking
 * request at a time over a connection kept alive between requests. */
#ifndef CASTOR_UTIL_HTTP_CLIENT_H
#define CASTOR_UTIL_HTTP_CLIENT_H

#include <stddef.h>

#include "util/error.h"

#define HTTP_CLIENT_TIMEOUT_MS 30000            /* default whole-request timeout */
#define HTTP_CLIENT_MAX_BODY (16 * 1024 * 1024) /* default response body limit, bytes */

struct http_client_request {
    const char *method;         /* "GET", "POST", "PUT", "DELETE", ... */
    const char *url;            /* http:// or https:// only */
    const char *const *headers; /* nheaders lines "Name: value" (copied) */
    size_t nheaders;
    const void *body; /* body_len bytes sent as the request body (may be NULL: none) */
    size_t body_len;
    long timeout_ms;     /* the whole request, connecting included; 0: the default */
    size_t max_body;     /* a longer response body fails with ERR_RANGE; 0: the default */
    const char *ca_file; /* PEM file of trusted certificates; NULL: the system's */
};

struct http_client_response {
    long status; /* the HTTP status */
    char *body;  /* owned; NUL-terminated after body_len bytes; never NULL on success */
    size_t body_len;
    char content_type[128]; /* "" when none was sent */
};

struct http_client; /* a connection cache; used by one thread at a time */

/* A new client. ERR_NOMEM (or ERR_IO when libcurl cannot be set up). On success *out owns it
 * (http_client_free); on error it is untouched. */
int http_client_new(struct http_client **out);

/* Free the client, closing its connections. NULL is ignored. */
void http_client_free(struct http_client *c);

/*
 * Send one request and wait for the whole response, whatever its status (a 404 is a response,
 * not an error). TLS peers are verified (certificate and host name). Errors, with e (may be NULL)
 * saying what happened: ERR_INVAL (no method or url, a scheme other than http and https, a
 * header line without ':'), ERR_AGAIN (timed out), ERR_IO (cannot resolve or connect, the
 * connection broke, TLS failed or the peer is not trusted), ERR_RANGE (the response body is over
 * the limit), ERR_PARSE (not an HTTP response), ERR_NOMEM. On success *out owns the body
 * (http_client_response_clear); on error *out is untouched.
 */
int http_client_do(struct http_client *c, const struct http_client_request *req,
                   struct http_client_response *out, struct error *e);

/* Free the response's body. NULL is ignored. */
void http_client_response_clear(struct http_client_response *r);

#endif
