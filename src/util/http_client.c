/* http_client.c: the libcurl wrapper; the one file that includes curl.h. */
#include "util/http_client.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "util/crypto.h"
#include "util/strbuf.h"

#define HC_MAX_HEADER_LINE 8192

struct http_client {
    CURL *curl;
};

static pthread_once_t hc_once = PTHREAD_ONCE_INIT;
static CURLcode hc_global_rc = CURLE_FAILED_INIT;

/* curl_global_init is not thread-safe in every build: run it once for the process. */
static void hc_global_init(void)
{
    hc_global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int http_client_new(struct http_client **out)
{
    struct http_client *c;

    if (!out)
        return ERR_INVAL;
    pthread_once(&hc_once, hc_global_init);
    if (hc_global_rc != CURLE_OK)
        return ERR_INTERNAL;
    c = calloc(1, sizeof(*c));
    if (!c)
        return ERR_NOMEM;
    c->curl = curl_easy_init();
    if (!c->curl) {
        free(c);
        return ERR_NOMEM;
    }
    *out = c;
    return 0;
}

void http_client_free(struct http_client *c)
{
    if (!c)
        return;
    curl_easy_cleanup(c->curl);
    free(c);
}

void http_client_response_clear(struct http_client_response *r)
{
    if (!r)
        return;
    free(r->body);
    memset(r, 0, sizeof(*r));
}

/* The response body being received, bounded. */
struct hc_sink {
    struct strbuf b;
    size_t max;
    int too_large;
};

static size_t hc_write(char *data, size_t size, size_t nmemb, void *arg)
{
    struct hc_sink *s = arg;
    size_t n = size * nmemb;

    if (n > s->max - s->b.len) {
        s->too_large = 1;
        return 0; /* curl stops with CURLE_WRITE_ERROR */
    }
    strbuf_add(&s->b, data, n);
    return s->b.failed ? 0 : n;
}

/* 1 when host names this machine's loopback: localhost, 127.0.0.0/8 or ::1. */
static int hc_is_loopback(const char *host)
{
    unsigned a, b, c, d;
    char end;

    if (strcasecmp(host, "localhost") == 0 || strcmp(host, "::1") == 0)
        return 1;
    if (sscanf(host, "%u.%u.%u.%u%c", &a, &b, &c, &d, &end) == 4)
        return a == 127 && b < 256 && c < 256 && d < 256;
    return 0;
}

/* Copy src into dst[size]; 0, or ERR_INVAL when it does not fit. */
static int hc_copy(char *dst, size_t size, const char *src)
{
    return (size_t)snprintf(dst, size, "%s", src) < size ? 0 : ERR_INVAL;
}

int http_client_parse_url(const char *url, struct http_client_url *out)
{
    struct http_client_url p;
    CURLU *u = NULL;
    char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL, *user = NULL, *query = NULL;
    int rc = ERR_INVAL;
    size_t hl;

    if (!url || !out)
        return ERR_INVAL;
    memset(&p, 0, sizeof(p));
    u = curl_url();
    if (!u)
        return ERR_NOMEM;
    if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK)
        goto out;
    if (curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK)
        goto out;
    if (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0)
        goto out;
    if (curl_url_get(u, CURLUPART_PORT, &port, 0) == CURLUE_OK)
        p.port = atoi(port);
    if (curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK)
        path = NULL;
    if (curl_url_get(u, CURLUPART_QUERY, &query, 0) != CURLUE_OK)
        query = NULL;
    hl = strlen(host);
    /* libcurl keeps the brackets of an IPv6 literal */
    if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
        if (hl - 2 >= sizeof(p.host))
            goto out;
        memcpy(p.host, host + 1, hl - 2);
    } else if (hc_copy(p.host, sizeof(p.host), host) < 0) {
        goto out;
    }
    snprintf(p.scheme, sizeof(p.scheme), "%s", scheme);
    if (p.port)
        snprintf(p.authority, sizeof(p.authority), "%s:%d", host, p.port);
    else
        snprintf(p.authority, sizeof(p.authority), "%s", host);
    if (hc_copy(p.path, sizeof(p.path), path && *path ? path : "/") < 0 ||
        hc_copy(p.query, sizeof(p.query), query ? query : "") < 0)
        goto out;
    p.loopback = hc_is_loopback(p.host);
    *out = p;
    rc = 0;
out:
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(path);
    curl_free(user);
    curl_free(query);
    curl_url_cleanup(u);
    return rc;
}

/* Free a header list, wiping each line first (a token or a signature may be among them). */
static void hc_free_headers(struct curl_slist *headers)
{
    for (struct curl_slist *l = headers; l; l = l->next)
        crypto_wipe(l->data, strlen(l->data));
    curl_slist_free_all(headers);
}

/* Append a copy of line to *list; 0 or ERR_NOMEM (*list then unchanged). */
static int hc_append(struct curl_slist **list, const char *line)
{
    struct curl_slist *grown = curl_slist_append(*list, line);

    if (!grown)
        return ERR_NOMEM;
    *list = grown;
    return 0;
}

/* The request's headers as curl's list into *out, with "Content-Type:" (when the request names
 * none) and "Expect:" so that curl adds neither of its own. 0 or ERR_INVAL / ERR_NOMEM (e says
 * which header); *out is then untouched. */
static int hc_headers(const struct http_client_request *req, const char *where,
                      struct curl_slist **out, struct error *e)
{
    struct curl_slist *list = NULL;
    char line[HC_MAX_HEADER_LINE];
    int has_type = 0, rc = 0;

    for (size_t i = 0; i < req->nheaders && rc == 0; i++) {
        const struct http_client_header *h = &req->headers[i];

        if (!h->name || !h->name[0] || !h->value || strpbrk(h->name, ": \t\r\n") ||
            strpbrk(h->value, "\r\n")) {
            rc = err_set(e, ERR_INVAL, where, 0, 0, "header %zu is not a valid header", i);
            goto out;
        }
        if (strcasecmp(h->name, "Content-Type") == 0)
            has_type = 1;
        /* curl sends "Name;" as an empty header ("Name:" would remove it) */
        if ((size_t)snprintf(line, sizeof(line), "%s%s%s", h->name, h->value[0] ? ": " : ";",
                             h->value) >= sizeof(line)) {
            rc = err_set(e, ERR_INVAL, where, 0, 0, "header %zu is too long", i);
            goto out;
        }
        rc = hc_append(&list, line);
    }
    if (rc == 0 && !has_type)
        rc = hc_append(&list, "Content-Type:");
    if (rc == 0)
        rc = hc_append(&list, "Expect:");
    if (rc < 0) {
        rc = err_set(e, rc, where, 0, 0, "out of memory");
        goto out;
    }
    *out = list;
    list = NULL;
out:
    crypto_wipe(line, sizeof(line));
    hc_free_headers(list);
    return rc;
}

/* Set the request's options on the handle (reset first, so nothing of an earlier request stays
 * but the connections). */
static CURLcode hc_setup(CURL *curl, const struct http_client_request *req,
                         struct curl_slist *headers, struct hc_sink *sink, long timeout_ms,
                         char *errbuf)
{
    CURLcode cc;

    curl_easy_reset(curl);
    cc = curl_easy_setopt(curl, CURLOPT_URL, req->url);
#define HC_SET(opt, val)                               \
    do {                                               \
        if (cc == CURLE_OK)                            \
            cc = curl_easy_setopt(curl, (opt), (val)); \
    } while (0)
    HC_SET(CURLOPT_PROTOCOLS_STR, "http,https");
    HC_SET(CURLOPT_FOLLOWLOCATION, 0L);
    HC_SET(CURLOPT_NOSIGNAL, 1L);
    HC_SET(CURLOPT_ERRORBUFFER, errbuf);
    HC_SET(CURLOPT_TIMEOUT_MS, timeout_ms);
    HC_SET(CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    HC_SET(CURLOPT_HTTPHEADER, headers);
    HC_SET(CURLOPT_WRITEFUNCTION, hc_write);
    HC_SET(CURLOPT_WRITEDATA, sink);
    HC_SET(CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)sink->max);
    HC_SET(CURLOPT_SSL_VERIFYPEER, req->insecure ? 0L : 1L);
    HC_SET(CURLOPT_SSL_VERIFYHOST, req->insecure ? 0L : 2L);
    if (req->ca_file)
        HC_SET(CURLOPT_CAINFO, req->ca_file);
    if (strcmp(req->method, "GET") == 0) {
        HC_SET(CURLOPT_HTTPGET, 1L);
    } else if (strcmp(req->method, "HEAD") == 0) {
        HC_SET(CURLOPT_NOBODY, 1L);
    } else {
        if (req->body_len > 0 || strcmp(req->method, "POST") == 0 ||
            strcmp(req->method, "PUT") == 0) {
            /* a POST or PUT without a body says so with Content-Length: 0 */
            HC_SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
            HC_SET(CURLOPT_POSTFIELDS, req->body_len > 0 ? req->body : (const void *)"");
        }
        if (strcmp(req->method, "POST") != 0)
            HC_SET(CURLOPT_CUSTOMREQUEST, req->method);
    }
#undef HC_SET
    return cc;
}

/* libcurl's failure as castor's code, with a message for a person in e. */
static int hc_error(CURLcode cc, const struct hc_sink *sink, const struct http_client_request *req,
                    const struct http_client_url *u, long timeout_ms, const char *detail,
                    struct error *e)
{
    const char *what = detail[0] ? detail : curl_easy_strerror(cc);

    if (sink->too_large || cc == CURLE_FILESIZE_EXCEEDED)
        return err_set(e, ERR_RANGE, u->authority, 0, 0,
                       "%s %s: response body over %zu bytes refused", req->method, u->path,
                       sink->max);
    if (sink->b.failed || cc == CURLE_OUT_OF_MEMORY)
        return err_set(e, ERR_NOMEM, u->authority, 0, 0, "out of memory receiving the response");
    switch (cc) {
    case CURLE_OPERATION_TIMEDOUT:
        return err_set(e, ERR_AGAIN, u->authority, 0, 0, "%s %s timed out after %ld ms",
                       req->method, u->path, timeout_ms);
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
        return err_set(e, ERR_INVAL, u->authority, 0, 0, "%s %s: %s", req->method, u->path, what);
    case CURLE_WEIRD_SERVER_REPLY:
        return err_set(e, ERR_PARSE, u->authority, 0, 0, "%s %s: not an HTTP response: %s",
                       req->method, u->path, what);
    default:
        return err_set(e, ERR_IO, u->authority, 0, 0, "%s %s failed: %s", req->method, u->path,
                       what);
    }
}

int http_client_do(struct http_client *c, const struct http_client_request *req,
                   struct http_client_response *out, struct error *e)
{
    struct http_client_url u;
    struct hc_sink sink = {0};
    struct curl_slist *headers = NULL;
    char errbuf[CURL_ERROR_SIZE] = "";
    const char *ctype = NULL;
    long status = 0, timeout_ms;
    size_t body_len;
    char *body;
    CURLcode cc;
    int rc;

    if (!c || !req || !out || !req->method || !req->method[0] || !req->url ||
        (!req->body && req->body_len > 0) || (req->nheaders > 0 && !req->headers))
        return err_set(e, ERR_INVAL, "http", 0, 0, "incomplete request");
    if (req->timeout_ms < 0)
        return err_set(e, ERR_INVAL, "http", 0, 0, "a negative timeout");
    rc = http_client_parse_url(req->url, &u);
    if (rc < 0)
        return err_set(e, rc, "http", 0, 0, "not an http(s) URL without a user part");
    if (req->insecure && !u.loopback)
        return err_set(e, ERR_INVAL, u.authority, 0, 0,
                       "TLS verification may be turned off only for a loopback host");
    if (req->body_len > 0 && (strcmp(req->method, "GET") == 0 || strcmp(req->method, "HEAD") == 0))
        return err_set(e, ERR_INVAL, u.authority, 0, 0, "%s with a body", req->method);
    rc = hc_headers(req, u.authority, &headers, e);
    if (rc < 0)
        return rc;
    timeout_ms = req->timeout_ms > 0 ? req->timeout_ms : HTTP_CLIENT_TIMEOUT_MS;
    sink.max = req->max_body ? req->max_body : HTTP_CLIENT_MAX_BODY;
    cc = hc_setup(c->curl, req, headers, &sink, timeout_ms, errbuf);
    if (cc == CURLE_OK)
        cc = curl_easy_perform(c->curl);
    if (cc == CURLE_OK)
        cc = curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
    if (cc == CURLE_OK)
        cc = curl_easy_getinfo(c->curl, CURLINFO_CONTENT_TYPE, &ctype);
    if (cc != CURLE_OK) {
        rc = hc_error(cc, &sink, req, &u, timeout_ms, errbuf, e);
        goto out;
    }
    body_len = sink.b.len;
    body = strbuf_take(&sink.b); /* "" for an empty body */
    if (!body) {
        rc = err_set(e, ERR_NOMEM, u.authority, 0, 0, "out of memory receiving the response");
        goto out;
    }
    memset(out, 0, sizeof(*out));
    out->status = status;
    out->body = body;
    out->body_len = body_len;
    if (ctype)
        snprintf(out->content_type, sizeof(out->content_type), "%s", ctype);
    if (req->capture_header) {
        struct curl_header *h = NULL;

        if (curl_easy_header(c->curl, req->capture_header, 0, CURLH_HEADER, -1, &h) == CURLHE_OK &&
            h && h->value)
            snprintf(out->captured, sizeof(out->captured), "%s", h->value);
    }
    rc = 0;
out:
    /* the handle keeps pointers to this call's buffers until the next reset: drop them first */
    curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, (struct curl_slist *)NULL);
    curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, (const void *)NULL);
    curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, (char *)NULL);
    hc_free_headers(headers);
    strbuf_free(&sink.b);
    return rc;
}
