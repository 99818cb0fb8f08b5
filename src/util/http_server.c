/* http_server.c: the libmicrohttpd wrapper; the one file that includes microhttpd.h. */
#include "util/http_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>

#include <microhttpd.h>

#include "util/crypto.h"
#include "util/file.h"
#include "util/ratelimit.h"
#include "util/strbuf.h"
#include "util/vec.h"

struct http_server {
    struct MHD_Daemon *daemon;
    http_handler_fn handler;
    void *ctx;
    size_t max_body;
    int port;
    char *cert; /* PEM texts handed to libmicrohttpd, kept until it stops; the key is wiped */
    char *key;
    size_t key_len;
    struct ratelimit *limit; /* NULL: no rate limit */
    http_clock_fn clock;
    void *clock_ctx;
};

/* One request being read: its body so far, or the note that it is over the limit. */
struct hs_conn {
    struct strbuf body;
    int too_large;
    int answered; /* a response is queued: what comes after is dropped */
    char client[INET6_ADDRSTRLEN];
};

/* Headers or query arguments collected from libmicrohttpd. */
struct hs_pairs {
    struct http_pair *items;
    size_t n;
    size_t cap;
    int failed;
};

static enum MHD_Result hs_collect(void *cls, enum MHD_ValueKind kind, const char *key,
                                  const char *value)
{
    struct hs_pairs *p = cls;
    struct http_pair *grown;

    (void)kind;
    if (!(grown = vec_grow(p->items, &p->cap, p->n, sizeof(*grown)))) {
        p->failed = 1;
        return MHD_NO;
    }
    p->items = grown;
    p->items[p->n].name = key;
    p->items[p->n].value = value ? value : "";
    p->n++;
    return MHD_YES;
}

/* Queue r: its status (0 as 500), content type, headers and body (owned: freed here either way). */
static enum MHD_Result hs_queue(struct MHD_Connection *conn, const struct http_response *r)
{
    struct MHD_Response *resp;
    enum MHD_Result ok;
    char *body = r->body;

    if (body)
        resp = MHD_create_response_from_buffer(r->body_len, body, MHD_RESPMEM_MUST_FREE);
    else
        resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (!resp) {
        free(body);
        return MHD_NO;
    }
    ok = MHD_YES;
    if (r->content_type)
        ok = MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r->content_type);
    for (size_t i = 0; ok == MHD_YES && i < r->nheaders && i < HTTP_RESPONSE_MAX_HEADERS; i++)
        ok = MHD_add_response_header(resp, r->headers[i].name, r->headers[i].value);
    if (ok == MHD_YES)
        ok = MHD_queue_response(conn, (unsigned)(r->status ? r->status : 500), resp);
    MHD_destroy_response(resp);
    return ok;
}

/* 413 with a short JSON reason (the API speaks JSON; a plain client reads the status). */
static enum MHD_Result hs_too_large(struct MHD_Connection *conn, struct hs_conn *c)
{
    static const char reason[] = "{\"error\":\"request body too large\"}";
    struct http_response r = {.status = 413, .content_type = "application/json"};

    c->answered = 1;
    r.body = malloc(sizeof(reason));
    if (r.body) {
        memcpy(r.body, reason, sizeof(reason));
        r.body_len = sizeof(reason) - 1;
    }
    return hs_queue(conn, &r);
}

/* A refusal before the handler: status, one header, and a short JSON reason (a literal). */
static enum MHD_Result hs_refuse(struct MHD_Connection *conn, struct hs_conn *c, int status,
                                 const char *header, const char *value, const char *reason)
{
    struct http_response r = {.status = status, .content_type = "application/json"};
    size_t n = strlen(reason);

    c->answered = 1;
    r.headers[0] = (struct http_pair){header, value};
    r.nheaders = 1;
    r.body = malloc(n + 1);
    if (r.body) {
        memcpy(r.body, reason, n + 1);
        r.body_len = n;
    }
    return hs_queue(conn, &r);
}

/* 400 for a request whose framing is in doubt: the connection closed after it (where its body
 * ends, and so where a next request would begin, is not known). */
static enum MHD_Result hs_bad_framing(struct MHD_Connection *conn, struct hs_conn *c)
{
    return hs_refuse(conn, c, 400, MHD_HTTP_HEADER_CONNECTION, "close",
                     "{\"error\":\"two Content-Length headers that differ\"}");
}

/* 429 with Retry-After. */
static enum MHD_Result hs_too_many(struct MHD_Connection *conn, struct hs_conn *c, unsigned retry)
{
    char secs[16];

    snprintf(secs, sizeof(secs), "%u", retry);
    return hs_refuse(conn, c, 429, "Retry-After", secs,
                     "{\"error\":\"too many requests; retry later\"}");
}

/* The peer's address into buf: numeric, without the port; an IPv6 address (not IPv4-mapped) as
 * its /64, the block one host is usually given. "" when libmicrohttpd does not say. */
static void hs_client(struct MHD_Connection *conn, char *buf, size_t size, int prefix64)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = info ? info->client_addr : NULL;

    buf[0] = '\0';
    if (sa && sa->sa_family == AF_INET) {
        const struct sockaddr_in *in4 = (const struct sockaddr_in *)(const void *)sa;

        inet_ntop(AF_INET, &in4->sin_addr, buf, (socklen_t)size);
    } else if (sa && sa->sa_family == AF_INET6) {
        struct in6_addr a = ((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;

        if (prefix64 && !IN6_IS_ADDR_V4MAPPED(&a))
            memset(a.s6_addr + 8, 0, 8);
        inet_ntop(AF_INET6, &a, buf, (socklen_t)size);
    }
}

static double hs_monotonic(void *ctx)
{
    struct timespec ts;

    (void)ctx;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Append data to the body, or mark it too large (and let go of what was kept). */
static int hs_append(struct hs_conn *c, const char *data, size_t len, size_t max)
{
    if (c->too_large)
        return 0;
    if (len > max - c->body.len) {
        c->too_large = 1;
        strbuf_free(&c->body);
        return 0;
    }
    strbuf_add(&c->body, data, len);
    return c->body.failed ? ERR_NOMEM : 0;
}

/* Call the handler with the whole request and queue its answer. */
static enum MHD_Result hs_dispatch(struct http_server *s, struct MHD_Connection *conn,
                                   struct hs_conn *c, const char *url, const char *method)
{
    struct hs_pairs headers = {0}, query = {0};
    struct http_response resp = {0};
    struct http_request req = {0};
    enum MHD_Result ok = MHD_NO;

    MHD_get_connection_values(conn, MHD_HEADER_KIND, hs_collect, &headers);
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, hs_collect, &query);
    if (headers.failed || query.failed)
        goto out;
    req.method = method;
    req.path = url;
    req.headers = headers.items;
    req.nheaders = headers.n;
    req.query = query.items;
    req.nquery = query.n;
    req.body = c->body.p ? c->body.p : "";
    req.body_len = c->body.len;
    req.client = c->client;
    s->handler(s->ctx, &req, &resp);
    if (resp.status == 0) { /* the handler said nothing: an internal error */
        free(resp.body);
        memset(&resp, 0, sizeof(resp));
        resp.status = 500;
    }
    c->answered = 1;
    ok = hs_queue(conn, &resp);
out:
    free(headers.items);
    free(query.items);
    return ok;
}

/* A Content-Length that says the body is over max (a value that does not parse is left to
 * libmicrohttpd, which refuses it). */
static int hs_declared_too_large(struct MHD_Connection *conn, size_t max)
{
    const char *cl =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    unsigned long long n;
    char *end = NULL;

    if (!cl || *cl < '0' || *cl > '9')
        return 0;
    errno = 0;
    n = strtoull(cl, &end, 10);
    return (errno == ERANGE || n > max) && end != cl;
}

/* The Content-Length headers seen so far: the first one's value, and whether another differs. */
struct hs_lengths {
    const char *first;
    int differ;
};

static enum MHD_Result hs_length_seen(void *cls, enum MHD_ValueKind kind, const char *key,
                                      const char *value)
{
    struct hs_lengths *l = cls;

    (void)kind;
    if (!key || strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) != 0)
        return MHD_YES;
    value = value ? value : "";
    if (!l->first)
        l->first = value;
    else if (strcmp(l->first, value) != 0)
        l->differ = 1;
    return MHD_YES;
}

/* 1 when the request has Content-Length headers that differ (libmicrohttpd reads the first and
 * goes on; RFC 9112 6.3 says to refuse it). */
static int hs_lengths_differ(struct MHD_Connection *conn)
{
    struct hs_lengths l = {0};

    MHD_get_connection_values(conn, MHD_HEADER_KIND, hs_length_seen, &l);
    return l.differ;
}

static enum MHD_Result hs_access(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version, const char *upload_data,
                                 size_t *upload_data_size, void **con_cls)
{
    struct http_server *s = cls;
    struct hs_conn *c = *con_cls;

    (void)version;
    if (!c) { /* the headers are in: start the request */
        c = calloc(1, sizeof(*c));
        if (!c)
            return MHD_NO;
        *con_cls = c;
        hs_client(conn, c->client, sizeof(c->client), 0);
        if (s->limit) {
            char key[INET6_ADDRSTRLEN];
            unsigned retry = 1;

            hs_client(conn, key, sizeof(key), 1);
            if (!ratelimit_take(s->limit, key, s->clock(s->clock_ctx), &retry))
                return hs_too_many(conn, c, retry);
        }
        if (hs_lengths_differ(conn))
            return hs_bad_framing(conn, c);
        if (hs_declared_too_large(conn, s->max_body)) {
            c->too_large = 1;
            return hs_too_large(conn, c);
        }
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        size_t len = *upload_data_size;

        *upload_data_size = 0;
        if (c->answered)
            return MHD_YES;
        return hs_append(c, upload_data, len, s->max_body) == 0 ? MHD_YES : MHD_NO;
    }
    if (c->answered)
        return MHD_YES;
    if (c->too_large)
        return hs_too_large(conn, c);
    return hs_dispatch(s, conn, c, url, method);
}

static void hs_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct hs_conn *c = *con_cls;

    (void)cls;
    (void)conn;
    (void)toe;
    if (c) {
        strbuf_free(&c->body);
        free(c);
        *con_cls = NULL;
    }
}

/* The listening address: IPv4 or IPv6, numeric. */
union hs_addr {
    struct sockaddr sa;
    struct sockaddr_in in4;
    struct sockaddr_in6 in6;
};

static int hs_address(const char *address, int port, union hs_addr *out, int *ipv6)
{
    memset(out, 0, sizeof(*out));
    if (inet_pton(AF_INET, address, &out->in4.sin_addr) == 1) {
        out->in4.sin_family = AF_INET;
        out->in4.sin_port = htons((uint16_t)port);
        *ipv6 = 0;
        return 0;
    }
    if (inet_pton(AF_INET6, address, &out->in6.sin6_addr) == 1) {
        out->in6.sin6_family = AF_INET6;
        out->in6.sin6_port = htons((uint16_t)port);
        *ipv6 = 1;
        return 0;
    }
    return ERR_INVAL;
}

/* Read the certificate and key for TLS into s. */
static int hs_read_tls(struct http_server *s, const struct http_server_config *cfg, struct error *e)
{
    size_t len = 0;
    int rc;

    if (!MHD_is_feature_supported(MHD_FEATURE_TLS))
        return err_set(e, ERR_NODEV, cfg->cert_file, 0, 0,
                       "this libmicrohttpd was built without TLS");
    rc = file_read_all(cfg->cert_file, &s->cert, &len, e);
    if (rc == 0)
        rc = file_read_all(cfg->key_file, &s->key, &s->key_len, e);
    return rc;
}

void http_server_stop(struct http_server *s)
{
    if (!s)
        return;
    if (s->daemon)
        MHD_stop_daemon(s->daemon);
    free(s->cert);
    crypto_wipe(s->key, s->key_len);
    free(s->key);
    ratelimit_free(s->limit);
    free(s);
}

/* 1 when the listening address is on loopback: 127.0.0.0/8, ::1, or IPv4-mapped 127.0.0.0/8. */
static int hs_loopback(const union hs_addr *a, int ipv6)
{
    const unsigned char *b = a->in6.sin6_addr.s6_addr;

    if (!ipv6)
        return (ntohl(a->in4.sin_addr.s_addr) >> 24) == 127;
    return IN6_IS_ADDR_LOOPBACK(&a->in6.sin6_addr) ||
           (IN6_IS_ADDR_V4MAPPED(&a->in6.sin6_addr) && b[12] == 127);
}

int http_server_start(const struct http_server_config *cfg, http_handler_fn handler, void *ctx,
                      struct http_server **out, struct error *e)
{
    const char *address = cfg && cfg->address ? cfg->address : "127.0.0.1";
    struct MHD_OptionItem opts[8];
    const union MHD_DaemonInfo *info;
    struct http_server *s = NULL;
    unsigned flags;
    union hs_addr addr;
    int rc, ipv6 = 0, tls, n = 0;

    if (!cfg || !handler || !out)
        return err_set(e, ERR_INVAL, "", 0, 0, "no server configuration or handler");
    if (cfg->port < 0 || cfg->port > 65535)
        return err_set(e, ERR_INVAL, "", 0, 0, "port %d is out of range", cfg->port);
    if (hs_address(address, cfg->port, &addr, &ipv6) < 0)
        return err_set(e, ERR_INVAL, "", 0, 0, "listen address '%s' is not a numeric address",
                       address);
    if (!cfg->cert_file != !cfg->key_file)
        return err_set(e, ERR_INVAL, "", 0, 0, "TLS needs both a certificate and a key file");
    tls = cfg->cert_file != NULL;
    if (!tls && !cfg->insecure_http && !hs_loopback(&addr, ipv6))
        return err_set(e, ERR_INVAL, "", 0, 0,
                       "plain HTTP on %s, which is not a loopback address, would send tokens in "
                       "clear text: give a certificate and key for TLS, or opt in to insecure HTTP",
                       address);
    if (!isfinite(cfg->rate_limit) || cfg->rate_limit < 0)
        return err_set(e, ERR_INVAL, "", 0, 0, "the rate limit must be a number >= 0");
    s = calloc(1, sizeof(*s));
    if (!s)
        return err_set(e, ERR_NOMEM, "", 0, 0, "out of memory");
    s->handler = handler;
    s->ctx = ctx;
    s->max_body = cfg->max_body ? cfg->max_body : HTTP_SERVER_MAX_BODY;
    s->clock = cfg->clock ? cfg->clock : hs_monotonic;
    s->clock_ctx = cfg->clock ? cfg->clock_ctx : NULL;
    if (cfg->rate_limit > 0) {
        double burst = cfg->rate_burst ? cfg->rate_burst : fmax(1.0, ceil(2 * cfg->rate_limit));

        if (ratelimit_new(cfg->rate_limit, (unsigned)fmin(burst, 1e9), 0, &s->limit) < 0) {
            rc = err_set(e, ERR_NOMEM, "", 0, 0, "out of memory");
            goto out;
        }
    }
    if (tls && (rc = hs_read_tls(s, cfg, e)) < 0)
        goto out;
    opts[n++] = (struct MHD_OptionItem){
        MHD_OPTION_CONNECTION_LIMIT,
        cfg->max_connections ? cfg->max_connections : HTTP_SERVER_MAX_CONNECTIONS, NULL};
    opts[n++] =
        (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT,
                                cfg->timeout_s ? cfg->timeout_s : HTTP_SERVER_TIMEOUT_S, NULL};
    if (cfg->max_client_connections > 0)
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                                            cfg->max_client_connections, NULL};
    if (cfg->threads > 0)
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, cfg->threads, NULL};
    if (tls) {
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, s->key};
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, s->cert};
    }
    opts[n] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO |
            (cfg->threads > 0 ? 0 : MHD_USE_THREAD_PER_CONNECTION) | (tls ? MHD_USE_TLS : 0) |
            (ipv6 ? MHD_USE_IPv6 : 0);
    errno = 0;
    s->daemon = MHD_start_daemon(
        flags, (uint16_t)cfg->port, NULL, NULL, hs_access, s, MHD_OPTION_NOTIFY_COMPLETED,
        hs_completed, NULL, MHD_OPTION_SOCK_ADDR, &addr.sa, MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
    if (!s->daemon) {
        rc = err_set(e, ERR_IO, "", 0, 0, "cannot serve HTTP%s on %s port %d: %s", tls ? "S" : "",
                     address, cfg->port,
                     errno ? strerror(errno) : "the address, the certificate or the key is bad");
        goto out;
    }
    info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info && info->port ? info->port : cfg->port;
    *out = s;
    s = NULL;
    rc = 0;
out:
    http_server_stop(s);
    return rc;
}

int http_server_address_loopback(const char *address)
{
    union hs_addr a;
    int ipv6 = 0;

    if (!address || hs_address(address, 0, &a, &ipv6) < 0)
        return ERR_INVAL;
    return hs_loopback(&a, ipv6);
}

int http_server_port(const struct http_server *s)
{
    return s->port;
}

const char *http_request_header(const struct http_request *req, const char *name)
{
    for (size_t i = 0; i < req->nheaders; i++)
        if (strcasecmp(req->headers[i].name, name) == 0)
            return req->headers[i].value;
    return NULL;
}

const char *http_request_query(const struct http_request *req, const char *name)
{
    for (size_t i = 0; i < req->nquery; i++)
        if (strcmp(req->query[i].name, name) == 0)
            return req->query[i].value;
    return NULL;
}
