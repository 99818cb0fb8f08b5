/* http_client.c: the libcurl wrapper; the one file that includes curl.h. */
#include "util/http_client.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

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
        return ERR_IO;
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

/* The response body being received, bounded. */
struct hc_sink {
    char *data;
    size_t len;
    size_t cap;
    size_t max;
    int too_large;
    int nomem;
};

static size_t hc_write(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct hc_sink *s = userdata;
    size_t n = size * nmemb;
    char *grown;

    if (n > s->max - s->len) {
        s->too_large = 1;
        return 0; /* curl stops with CURLE_WRITE_ERROR */
    }
    if (s->len + n + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 1024;

        while (cap < s->len + n + 1)
            cap *= 2;
        grown = realloc(s->data, cap);
        if (!grown) {
            s->nomem = 1;
            return 0;
        }
        s->data = grown;
        s->cap = cap;
    }
    memcpy(s->data + s->len, ptr, n);
    s->len += n;
    s->data[s->len] = '\0';
    return n;
}

/* libcurl's result as castor's code, with the reason in e. */
static int hc_error(CURLcode cc, const struct hc_sink *sink, const char *url, const char *detail,
                    struct error *e)
{
    int code;

    switch (cc) {
    case CURLE_OPERATION_TIMEDOUT:
        code = ERR_AGAIN;
        break;
    case CURLE_WRITE_ERROR:
        code = sink->too_large ? ERR_RANGE : sink->nomem ? ERR_NOMEM : ERR_IO;
        break;
    case CURLE_OUT_OF_MEMORY:
        code = ERR_NOMEM;
        break;
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
        code = ERR_INVAL;
        break;
    case CURLE_WEIRD_SERVER_REPLY:
        code = ERR_PARSE;
        break;
    default:
        code = ERR_IO;
    }
    if (code == ERR_RANGE)
        return err_set(e, code, url, 0, 0, "response body over %zu bytes", sink->max);
    return err_set(e, code, url, 0, 0, "%s", detail[0] ? detail : curl_easy_strerror(cc));
}

/* Set the request's options on c's handle (reset first, so nothing of an earlier request stays
 * but the connections). */
static CURLcode hc_setup(CURL *curl, const struct http_client_request *req,
                         struct curl_slist *headers, struct hc_sink *sink, char *errbuf)
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
    HC_SET(CURLOPT_NOSIGNAL, 1L);
    HC_SET(CURLOPT_ERRORBUFFER, errbuf);
    HC_SET(CURLOPT_TIMEOUT_MS, req->timeout_ms > 0 ? req->timeout_ms : HTTP_CLIENT_TIMEOUT_MS);
    HC_SET(CURLOPT_CUSTOMREQUEST, req->method);
    if (strcasecmp(req->method, "HEAD") == 0)
        HC_SET(CURLOPT_NOBODY, 1L);
    HC_SET(CURLOPT_HTTPHEADER, headers);
    HC_SET(CURLOPT_WRITEFUNCTION, hc_write);
    HC_SET(CURLOPT_WRITEDATA, sink);
    HC_SET(CURLOPT_SSL_VERIFYPEER, 1L);
    HC_SET(CURLOPT_SSL_VERIFYHOST, 2L);
    if (req->ca_file)
        HC_SET(CURLOPT_CAINFO, req->ca_file);
    if (req->body || strcasecmp(req->method, "POST") == 0 || strcasecmp(req->method, "PUT") == 0) {
        /* a POST or PUT without a body says so with Content-Length: 0 */
        HC_SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(req->body ? req->body_len : 0));
        HC_SET(CURLOPT_POSTFIELDS, req->body ? req->body : "");
    }
#undef HC_SET
    return cc;
}

int http_client_do(struct http_client *c, const struct http_client_request *req,
                   struct http_client_response *out, struct error *e)
{
    struct hc_sink sink = {0};
    struct curl_slist *headers = NULL, *more;
    char errbuf[CURL_ERROR_SIZE] = "";
    const char *ctype = NULL;
    long status = 0;
    CURLcode cc;
    int rc;

    if (!c || !req || !req->method || !req->method[0] || !req->url || !out ||
        (req->nheaders > 0 && !req->headers))
        return err_set(e, ERR_INVAL, "", 0, 0, "no method, url or response");
    for (size_t i = 0; i < req->nheaders; i++) {
        if (!req->headers[i] || !strchr(req->headers[i], ':')) {
            rc = err_set(e, ERR_INVAL, req->url, 0, 0, "header %zu is not 'Name: value'", i);
            goto out;
        }
        more = curl_slist_append(headers, req->headers[i]);
        if (!more) {
            rc = err_set(e, ERR_NOMEM, req->url, 0, 0, "out of memory");
            goto out;
        }
        headers = more;
    }
    sink.max = req->max_body ? req->max_body : HTTP_CLIENT_MAX_BODY;
    cc = hc_setup(c->curl, req, headers, &sink, errbuf);
    if (cc == CURLE_OK)
        cc = curl_easy_perform(c->curl);
    if (cc == CURLE_OK)
        cc = curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
    if (cc == CURLE_OK)
        cc = curl_easy_getinfo(c->curl, CURLINFO_CONTENT_TYPE, &ctype);
    if (cc != CURLE_OK) {
        rc = hc_error(cc, &sink, req->url, errbuf, e);
        goto out;
    }
    if (!sink.data) { /* an empty body: "" */
        sink.data = calloc(1, 1);
        if (!sink.data) {
            rc = err_set(e, ERR_NOMEM, req->url, 0, 0, "out of memory");
            goto out;
        }
    }
    memset(out, 0, sizeof(*out));
    out->status = status;
    out->body = sink.data;
    out->body_len = sink.len;
    if (ctype)
        snprintf(out->content_type, sizeof(out->content_type), "%s", ctype);
    sink.data = NULL;
    rc = 0;
out:
    /* the handle keeps a pointer to the header list until the next reset: clear it first */
    curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, (struct curl_slist *)NULL);
    curl_slist_free_all(headers);
    free(sink.data);
    return rc;
}

void http_client_response_clear(struct http_client_response *r)
{
    if (!r)
        return;
    free(r->body);
    r->body = NULL;
    r->body_len = 0;
}
