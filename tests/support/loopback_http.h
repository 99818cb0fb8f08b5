/* loopback_http.h: a small HTTP/1.1 server on 127.0.0.1 for tests, in a thread of its own: one
 * connection at a time, each answered by a handler and closed (or left hanging, or cut). */
#ifndef CASTOR_TESTS_LOOPBACK_HTTP_H
#define CASTOR_TESTS_LOOPBACK_HTTP_H

#include <stddef.h>

#define LH_MAX_HEADERS 48

struct lh_header {
    char name[64];
    char value[4096];
};

/* A request as received; valid during the handler call. body is NUL-terminated. */
struct lh_request {
    char method[16];
    char target[2048]; /* the request target: path and query */
    struct lh_header headers[LH_MAX_HEADERS];
    size_t n_headers;
    char *body;
    size_t body_len;
};

enum lh_action {
    LH_REPLY, /* send status, headers and body, then close */
    LH_HANG,  /* read the request and never answer (the connection stays open until lh_stop) */
    LH_CLOSE, /* close the connection without a word */
};

/* What the handler answers; the server frees body (malloc'd by the handler, may be NULL). */
struct lh_reply {
    enum lh_action action;
    int status;
    char content_type[64]; /* "" for none */
    char *body;
    size_t body_len;
    long cut_after;   /* > 0: send only this many bytes of the body (Content-Length is the full
                       * size), then close: a truncated answer */
    char header[200]; /* one more header line ("Name: value"), "" for none */
};

typedef void (*lh_handler)(void *arg, const struct lh_request *req, struct lh_reply *reply);

struct lh_server;

/* Start a server on 127.0.0.1 with a free port, calling h(arg, ...) on its thread for each
 * request. 0, or -1 when it could not start. */
int lh_start(lh_handler h, void *arg, struct lh_server **out);

/* The port it listens on. */
int lh_port(const struct lh_server *s);

/* "http://127.0.0.1:PORT" into buf. */
void lh_url(const struct lh_server *s, char *buf, size_t size);

/* Stop the thread, close every connection, free s; s may be NULL. */
void lh_stop(struct lh_server *s);

/* The value of the first header named name (any case) or NULL. */
const char *lh_header(const struct lh_request *req, const char *name);

/* A reply with this status and a copy of text as body. */
void lh_reply_text(struct lh_reply *r, int status, const char *content_type, const char *text);

#endif
