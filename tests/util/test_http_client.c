/* test_http_client.c: the libcurl wrapper against a real server on loopback: methods, headers and
 * bodies sent, the response's status, type and body, and each error: a body over the limit, a
 * timeout, a refused connection, a bad scheme or header line. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/error.h"
#include "util/http_client.h"
#include "util/http_server.h"

/* /big answers 10,000 bytes; /slow answers after 400 ms; anything else echoes the method, the
 * Content-Length and X-A headers, and the body. */
static void peer(void *ctx, const struct http_request *req, struct http_response *resp)
{
    const char *cl = http_request_header(req, "Content-Length");
    const char *xa = http_request_header(req, "X-A");
    size_t size = strcmp(req->path, "/big") == 0 ? 10000 : 256 + req->body_len;

    (void)ctx;
    if (strcmp(req->path, "/slow") == 0) {
        struct timespec ts = {.tv_nsec = 400 * 1000000L};

        nanosleep(&ts, NULL);
    }
    resp->body = malloc(size);
    assert_non_null(resp->body);
    if (strcmp(req->path, "/big") == 0) {
        memset(resp->body, 'b', size);
        resp->body_len = size;
    } else {
        resp->body_len = (size_t)snprintf(resp->body, size, "%s cl=%s xa=%s body=%s", req->method,
                                          cl ? cl : "-", xa ? xa : "-", req->body);
    }
    resp->status = strcmp(req->method, "DELETE") == 0 ? 404 : 201;
    resp->content_type = "text/x-test";
}

struct client_fixture {
    struct http_server *server;
    struct http_client *client;
    char base[64];
};

static int client_setup(void **state)
{
    struct http_server_config cfg = {0};
    struct client_fixture *f = calloc(1, sizeof(*f));

    if (!f || http_server_start(&cfg, peer, NULL, &f->server, NULL) < 0 ||
        http_client_new(&f->client) < 0)
        return -1;
    snprintf(f->base, sizeof(f->base), "http://127.0.0.1:%d", http_server_port(f->server));
    *state = f;
    return 0;
}

static int client_teardown(void **state)
{
    struct client_fixture *f = *state;

    http_client_free(f->client);
    http_server_stop(f->server);
    free(f);
    return 0;
}

static int do_request(struct client_fixture *f, const char *method, const char *path,
                      const char *body, const char *header, long timeout_ms, size_t max_body,
                      struct http_client_response *out, struct error *e)
{
    const char *headers[] = {header};
    char url[128];
    struct http_client_request req = {
        .method = method,
        .url = url,
        .headers = headers,
        .nheaders = header ? 1 : 0,
        .body = body,
        .body_len = body ? strlen(body) : 0,
        .timeout_ms = timeout_ms,
        .max_body = max_body,
    };

    snprintf(url, sizeof(url), "%s%s", f->base, path);
    return http_client_do(f->client, &req, out, e);
}

/* The method, a header and the body arrive; the status (a 404 too: not an error), the content
 * type and the body come back; a POST without a body says Content-Length: 0; the same client
 * serves several requests in a row. */
static void http_client_do__round_trip(void **state)
{
    struct client_fixture *f = *state;
    struct http_client_response r = {0};

    assert_int_equal(do_request(f, "PUT", "/p", "{\"a\":1}", "X-A: b c", 0, 0, &r, NULL), 0);
    assert_int_equal(r.status, 201);
    assert_string_equal(r.content_type, "text/x-test");
    assert_string_equal(r.body, "PUT cl=7 xa=b c body={\"a\":1}");
    assert_int_equal(r.body_len, strlen(r.body));
    http_client_response_clear(&r);
    assert_int_equal(do_request(f, "POST", "/p", NULL, NULL, 0, 0, &r, NULL), 0);
    assert_string_equal(r.body, "POST cl=0 xa=- body=");
    http_client_response_clear(&r);
    assert_int_equal(do_request(f, "DELETE", "/p", NULL, NULL, 0, 0, &r, NULL), 0);
    assert_int_equal(r.status, 404);
    assert_string_equal(r.body, "DELETE cl=- xa=- body=");
    http_client_response_clear(&r);
    http_client_response_clear(NULL);
}

/* A response body over the limit is ERR_RANGE; at the limit it is whole. */
static void http_client_do__body_limit(void **state)
{
    struct client_fixture *f = *state;
    struct http_client_response r = {.status = -7};
    struct error e = {0};

    assert_int_equal(do_request(f, "GET", "/big", NULL, NULL, 0, 9999, &r, &e), ERR_RANGE);
    assert_int_equal(r.status, -7);
    assert_non_null(strstr(e.msg, "9999"));
    assert_int_equal(do_request(f, "GET", "/big", NULL, NULL, 0, 10000, &r, &e), 0);
    assert_int_equal(r.body_len, 10000);
    http_client_response_clear(&r);
}

/* A server slower than the timeout is ERR_AGAIN (retryable); the same client then works. */
static void http_client_do__timeout(void **state)
{
    struct client_fixture *f = *state;
    struct http_client_response r = {0};

    assert_int_equal(do_request(f, "GET", "/slow", NULL, NULL, 100, 0, &r, NULL), ERR_AGAIN);
    assert_true(err_retryable(ERR_AGAIN));
    assert_int_equal(do_request(f, "GET", "/slow", NULL, NULL, 3000, 0, &r, NULL), 0);
    assert_int_equal(r.status, 201);
    http_client_response_clear(&r);
}

/* A port nobody listens on is ERR_IO; a scheme other than http(s) and a header line without ':'
 * are ERR_INVAL, as are missing arguments. */
static void http_client_do__errors(void **state)
{
    struct client_fixture *f = *state;
    struct sockaddr_in a = {.sin_family = AF_INET};
    struct http_client_request req = {.method = "GET"};
    struct http_client_response r = {0};
    socklen_t len = sizeof(a);
    struct error e = {0};
    char url[64];
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    /* a port that was free a moment ago: bound, never listened on, closed */
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", ntohs(a.sin_port));
    req.url = url;
    assert_int_equal(http_client_do(f->client, &req, &r, &e), ERR_IO);
    assert_true(e.msg[0] != '\0');
    req.url = "ftp://127.0.0.1/x";
    assert_int_equal(http_client_do(f->client, &req, &r, NULL), ERR_INVAL);
    assert_int_equal(do_request(f, "GET", "/p", NULL, "no colon", 0, 0, &r, NULL), ERR_INVAL);
    req.method = NULL;
    assert_int_equal(http_client_do(f->client, &req, &r, NULL), ERR_INVAL);
    assert_int_equal(http_client_new(NULL), ERR_INVAL);
    http_client_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(http_client_do__round_trip),
        cmocka_unit_test(http_client_do__body_limit),
        cmocka_unit_test(http_client_do__timeout),
        cmocka_unit_test(http_client_do__errors),
    };

    return cmocka_run_group_tests(tests, client_setup, client_teardown);
}
