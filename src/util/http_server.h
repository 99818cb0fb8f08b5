/* http_server.h: castor's HTTP server (wraps libmicrohttpd; microhttpd.h stays in http_server.c):
 * listen on an address and port, hand each whole request to one handler, answer what it says. */
#ifndef CASTOR_UTIL_HTTP_SERVER_H
#define CASTOR_UTIL_HTTP_SERVER_H

#include <stddef.h>

#include "util/error.h"

/* A header or query argument; both strings borrowed. */
struct http_pair {
    const char *name;
    const char *value;
};

/*
 * One request, all borrowed from the server for the duration of the handler's call. The path is
 * percent-decoded and without the query; query arguments are decoded; a body is NUL-terminated
 * after body_len bytes (it may hold NUL bytes itself), and body is never NULL ("" when empty).
 */
struct http_request {
    const char *method;
    const char *path;
    const struct http_pair *headers; /* names as the client spelled them */
    size_t nheaders;
    const struct http_pair *query;
    size_t nquery;
    const char *body;
    size_t body_len;
    const char *client; /* the peer's numeric address (no port), "" when unknown */
};

#define HTTP_RESPONSE_MAX_HEADERS 4

/*
 * What the handler answers. It starts zeroed. status 0 (the handler set nothing) answers 500.
 * content_type and headers must stay valid until the handler returns (they are copied); body is
 * malloc'd by the handler and owned by the server once the handler returns (NULL: no body).
 */
struct http_response {
    int status;
    const char *content_type;
    char *body;
    size_t body_len;
    struct http_pair headers[HTTP_RESPONSE_MAX_HEADERS];
    size_t nheaders;
};

/* Called once per complete request with a body within the limit, from one of the server's
 * threads: several calls may run at once, so the handler brings its own locking. */
typedef void (*http_handler_fn)(void *ctx, const struct http_request *req,
                                struct http_response *resp);

#define HTTP_SERVER_MAX_BODY (1024 * 1024) /* default body limit, bytes */
#define HTTP_SERVER_MAX_CONNECTIONS 256    /* default connection limit */
#define HTTP_SERVER_TIMEOUT_S 30           /* default idle connection timeout */

/* A monotonic clock in seconds, for the rate limit (any fixed origin). */
typedef double (*http_clock_fn)(void *ctx);

struct http_server_config {
    const char *address;      /* numeric IPv4 or IPv6 address to listen on; NULL: 127.0.0.1 */
    int port;                 /* 0 .. 65535; 0: the system picks one (http_server_port) */
    size_t max_body;          /* bytes; a larger body answers 413 unseen; 0: the default */
    unsigned max_connections; /* more are refused at accept; 0: the default */
    /* Connections at once from one client address (the whole address, IPv6 included); more from
     * it are refused at accept, so one client cannot take every connection (say with requests it
     * never finishes, which no rate limit sees). 0: no limit. */
    unsigned max_client_connections;
    unsigned threads;      /* 0: a thread per connection; n: n threads polling connections */
    unsigned timeout_s;    /* idle connections are closed after this; 0: the default */
    const char *cert_file; /* PEM certificate (chain) and private key: both set for TLS */
    const char *key_file;
    /* Plain HTTP (no cert_file) on an address that is not loopback (127.0.0.0/8, ::1) is refused
     * unless this is 1: tokens would cross the network in clear text. */
    int insecure_http;
    /* Per client address (IPv6 by its /64): at most rate_burst requests at once, then rate_limit
     * per second; more answer 429 with Retry-After, unseen by the handler. rate_limit 0: no
     * limit; rate_burst 0: twice the rate (at least 1). */
    double rate_limit;
    unsigned rate_burst;
    http_clock_fn clock; /* for the rate limit; NULL: CLOCK_MONOTONIC */
    void *clock_ctx;
};

struct http_server; /* opaque */

/*
 * Start a server that answers every request through handler (ctx passed along; both must outlive
 * the server). Requests whose body is over the limit answer 413 without calling the handler: at
 * once when the Content-Length says so, else after the body was read and dropped. Requests over
 * the client's rate answer 429 with Retry-After (seconds) without calling the handler. A
 * connection over the server's or its client's connection limit is closed at accept, unanswered.
 * Errors (e says which, with the address or file): ERR_INVAL (bad configuration: address not
 * numeric, port out of range, only one of cert and key, plain HTTP on an address that is not
 * loopback without insecure_http, a rate limit that is negative or not finite), ERR_NOENT or
 * ERR_IO (a certificate or
 * key file cannot be read), ERR_NODEV (TLS asked of a libmicrohttpd built without it), ERR_IO (the
 * address cannot be bound or the server not started: in use, not allowed, a bad certificate),
 * ERR_NOMEM. On success *out owns the running server (http_server_stop); on error it is untouched.
 */
int http_server_start(const struct http_server_config *cfg, http_handler_fn handler, void *ctx,
                      struct http_server **out, struct error *e);

/* The port the server listens on (the one the system picked for port 0). */
int http_server_port(const struct http_server *s);

/* 1 when address (numeric IPv4 or IPv6) is on loopback: 127.0.0.0/8, ::1, or an IPv4-mapped
 * 127.0.0.0/8; 0 when it is another address (a wildcard included); ERR_INVAL when it is not a
 * numeric address. The rule http_server_start applies to plain HTTP. */
int http_server_address_loopback(const char *address);

/* Stop listening, close every connection, wait for the handlers that run, and free the server
 * (the key read for TLS is wiped). NULL is ignored. */
void http_server_stop(struct http_server *s);

/* The value of the request's first header named name (case-insensitive), or NULL. Borrowed. */
const char *http_request_header(const struct http_request *req, const char *name);

/* The value of the request's first query argument named name (case-sensitive), or NULL; an
 * argument without "=" has the value "". Borrowed. */
const char *http_request_query(const struct http_request *req, const char *name);

#endif
