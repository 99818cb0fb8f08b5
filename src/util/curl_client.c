/* curl_client.c: the libcurl wrapper; the one file that includes curl.h. */
#include "util/curl_client.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "util/crypto.h"
#include "util/strbuf.h"

struct curl_client {
    CURL *easy;
};

/* The answer being received. */
struct sink {
    struct strbuf b;
    int too_large;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static int curl_init_rc;

static void curl_init(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : ERR_INTERNAL;
}

int curl_client_new(struct curl_client **out)
{
    struct curl_client *c;

    if (!out)
        return ERR_INVAL;
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc < 0)
        return curl_init_rc;
    c = calloc(1, sizeof(*c));
    if (!c)
        return ERR_NOMEM;
    c->easy = curl_easy_init();
    if (!c->easy) {
        free(c);
        return ERR_NOMEM;
    }
    *out = c;
    return 0;
}

void curl_client_free(struct curl_client *c)
{
    if (!c)
        return;
    curl_easy_cleanup(c->easy);
    free(c);
}

void curl_client_response_free(struct curl_client_response *r)
{
    if (!r)
        return;
    free(r->body);
    memset(r, 0, sizeof(*r));
}

static size_t sink_write(char *data, size_t size, size_t nmemb, void *arg)
{
    struct sink *s = arg;
    size_t n = size * nmemb;

    if (s->b.len + n > CURL_CLIENT_MAX_BODY) {
        s->too_large = 1;
        return 0;
    }
    strbuf_add(&s->b, data, n);
    return s->b.failed ? 0 : n;
}

/* 1 when host names this machine's loopback: localhost, 127.0.0.0/8 or ::1. */
static int is_loopback(const char *host)
{
    unsigned a, b, c, d;
    char end;

    if (strcasecmp(host, "localhost") == 0 || strcmp(host, "::1") == 0)
        return 1;
    if (sscanf(host, "%u.%u.%u.%u%c", &a, &b, &c, &d, &end) == 4)
        return a == 127 && b < 256 && c < 256 && d < 256;
    return 0;
}

int curl_client_parse_url(const char *url, struct curl_client_url *out)
{
    struct curl_client_url p;
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
    if (curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK ||
        curl_url_get(u, CURLUPART_QUERY, &query, 0) == CURLUE_OK)
        goto out;
    if (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0)
        goto out;
    if (curl_url_get(u, CURLUPART_PORT, &port, 0) == CURLUE_OK)
        p.port = atoi(port);
    if (curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK)
        path = NULL;
    hl = strlen(host);
    /* libcurl keeps the brackets of an IPv6 literal */
    if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
        if (hl - 2 >= sizeof(p.host))
            goto out;
        memcpy(p.host, host + 1, hl - 2);
    } else if ((size_t)snprintf(p.host, sizeof(p.host), "%s", host) >= sizeof(p.host)) {
        goto out;
    }
    snprintf(p.scheme, sizeof(p.scheme), "%s", scheme);
    if (p.port)
        snprintf(p.authority, sizeof(p.authority), "%s:%d", host, p.port);
    else
        snprintf(p.authority, sizeof(p.authority), "%s", host);
    if ((size_t)snprintf(p.path, sizeof(p.path), "%s", path && *path ? path : "/") >=
        sizeof(p.path))
        goto out;
    p.loopback = is_loopback(p.host);
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

/* Free a header list, wiping each line first (a session token may be among them). */
static void free_headers(struct curl_slist *headers)
{
    for (struct curl_slist *l = headers; l; l = l->next)
        crypto_wipe(l->data, strlen(l->data));
    curl_slist_free_all(headers);
}

/* Translate a transfer's failure into the table, with a message for a person. */
static int transfer_error(CURLcode cc, const struct sink *s, const struct curl_client_url *parts,
                          const struct curl_client_request *req, const char *detail,
                          struct error *e)
{
    const char *what = detail[0] ? detail : curl_easy_strerror(cc);

    if (s->too_large)
        return err_set(e, ERR_RANGE, parts->authority, 0, 0, "answer larger than %u bytes refused",
                       CURL_CLIENT_MAX_BODY);
    if (s->b.failed || cc == CURLE_OUT_OF_MEMORY)
        return err_set(e, ERR_NOMEM, parts->authority, 0, 0, "out of memory receiving the answer");
    if (cc == CURLE_OPERATION_TIMEDOUT)
        return err_set(e, ERR_IO, parts->authority, 0, 0, "%s %s timed out after %ld ms",
                       req->method, parts->path, req->timeout_ms);
    return err_set(e, ERR_IO, parts->authority, 0, 0, "%s %s failed: %s", req->method, parts->path,
                   what);
}

int curl_client_send(struct curl_client *c, const struct curl_client_request *req,
                     struct curl_client_response *out, struct error *e)
{
    struct curl_client_url parts;
    struct curl_slist *headers = NULL, *grown;
    struct sink s = {0};
    char line[8192], detail[CURL_ERROR_SIZE] = "";
    int has_type = 0, rc = 0;
    long status = 0;
    CURL *h;
    CURLcode cc;

    if (!c || !req || !out || !req->method || !req->url || (!req->body && req->body_len > 0) ||
        (req->n_headers > 0 && !req->headers))
        return err_set(e, ERR_INVAL, "http", 0, 0, "incomplete request");
    if (req->timeout_ms <= 0)
        return err_set(e, ERR_INVAL, "http", 0, 0, "a request needs a timeout");
    if (curl_client_parse_url(req->url, &parts) < 0)
        return err_set(e, ERR_INVAL, "http", 0, 0, "not an http(s) URL without user or query");
    if (req->insecure && !parts.loopback)
        return err_set(e, ERR_INVAL, parts.authority, 0, 0,
                       "TLS verification may be turned off only for a loopback host");
    for (size_t i = 0; i < req->n_headers; i++) {
        const struct curl_client_header *hd = &req->headers[i];

        if (!hd->name || !hd->value || strpbrk(hd->name, ":\r\n") || strpbrk(hd->value, "\r\n")) {
            rc =
                err_set(e, ERR_INVAL, parts.authority, 0, 0, "header %zu is not a valid header", i);
            goto out;
        }
        if (strcasecmp(hd->name, "Content-Type") == 0)
            has_type = 1;
        if ((size_t)snprintf(line, sizeof(line), "%s: %s", hd->name, hd->value) >= sizeof(line)) {
            rc = err_set(e, ERR_INVAL, parts.authority, 0, 0, "header %zu is too long", i);
            goto out;
        }
        grown = curl_slist_append(headers, line);
        if (!grown) {
            rc = ERR_NOMEM;
            goto out;
        }
        headers = grown;
    }
    /* nothing of curl's own that a signer has not seen */
    for (int k = 0; k < 2; k++) {
        if (k == 0 && has_type)
            continue;
        grown = curl_slist_append(headers, k == 0 ? "Content-Type:" : "Expect:");
        if (!grown) {
            rc = ERR_NOMEM;
            goto out;
        }
        headers = grown;
    }
    crypto_wipe(line, sizeof(line));

    h = c->easy;
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, req->url);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, req->timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, req->timeout_ms);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, req->insecure ? 0L : 1L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, req->insecure ? 0L : 2L);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, detail);
    curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)CURL_CLIENT_MAX_BODY);
    if (strcmp(req->method, "GET") == 0) {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    } else {
        static const char none[1];

        curl_easy_setopt(h, CURLOPT_POSTFIELDS, req->body_len ? req->body : (const void *)none);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
        if (strcmp(req->method, "POST") != 0)
            curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req->method);
    }
    cc = curl_easy_perform(h);
    /* drop the pointers to this call's buffers */
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, NULL);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
    if (cc != CURLE_OK) {
        rc = transfer_error(cc, &s, &parts, req, detail, e);
        goto out;
    }
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    {
        size_t len = s.b.len;
        char *body = strbuf_take(&s.b);

        if (!body) {
            rc = ERR_NOMEM;
            goto out;
        }
        out->status = status;
        out->body = body;
        out->len = len;
    }
out:
    strbuf_free(&s.b);
    crypto_wipe(line, sizeof(line));
    free_headers(headers);
    return rc;
}
