/* test_http_client.c: the libcurl wrapper against castor's own server on loopback (methods,
 * headers and bodies sent, the response's status, type and body, a body over the limit, a slow
 * server, a refused connection, a bad scheme or header) and against the tests' raw loopback server
 * (exactly what goes on the wire, a server that never answers, cut answers, settings refused
 * before anything is sent); URLs split for a signer. */
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

#include "support/loopback_http.h"
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
                      const char *body, const char *xa, long timeout_ms, size_t max_body,
                      struct http_client_response *out, struct error *e)
{
    const struct http_client_header headers[] = {{"X-A", xa}};
    char url[128];
    struct http_client_request req = {
        .method = method,
        .url = url,
        .headers = headers,
        .nheaders = xa ? 1 : 0,
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

    assert_int_equal(do_request(f, "PUT", "/p", "{\"a\":1}", "b c", 0, 0, &r, NULL), 0);
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

/* A server slower than the timeout is ERR_AGAIN (retryable), saying so; the same client then
 * works. */
static void http_client_do__timeout(void **state)
{
    struct client_fixture *f = *state;
    struct http_client_response r = {0};
    struct error e = {0};

    assert_int_equal(do_request(f, "GET", "/slow", NULL, NULL, 100, 0, &r, &e), ERR_AGAIN);
    assert_true(err_retryable(ERR_AGAIN));
    assert_non_null(strstr(e.msg, "GET /slow timed out after 100 ms"));
    assert_int_equal(do_request(f, "GET", "/slow", NULL, NULL, 3000, 0, &r, NULL), 0);
    assert_int_equal(r.status, 201);
    http_client_response_clear(&r);
}

/* A port nobody listens on is ERR_IO naming the host; a scheme other than http(s) and a header
 * name with ':' are ERR_INVAL, as are missing arguments. */
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
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", ntohs(a.sin_port));
    req.url = url;
    assert_int_equal(http_client_do(f->client, &req, &r, &e), ERR_IO);
    assert_true(e.msg[0] != '\0');
    assert_string_equal(e.file, url + strlen("http://"));
    req.url = "ftp://127.0.0.1/x";
    assert_int_equal(http_client_do(f->client, &req, &r, NULL), ERR_INVAL);
    req.url = url;
    req.headers = (const struct http_client_header[]){{"X-A: b", "c"}};
    req.nheaders = 1;
    assert_int_equal(http_client_do(f->client, &req, &r, NULL), ERR_INVAL);
    req.method = NULL;
    assert_int_equal(http_client_do(f->client, &req, &r, NULL), ERR_INVAL);
    assert_int_equal(http_client_new(NULL), ERR_INVAL);
    http_client_free(NULL);
}

/* What the echo handler saw last, and what it should do next. */
struct echo {
    struct lh_request last;
    char last_body[256];
    enum lh_action action;
    long cut_after;
    int status;
};

static void echo_handler(void *arg, const struct lh_request *req, struct lh_reply *reply)
{
    struct echo *x = arg;
    char text[2400];

    x->last = *req;
    x->last.body = NULL;
    snprintf(x->last_body, sizeof(x->last_body), "%s", req->body);
    snprintf(text, sizeof(text), "%s %s [%s]", req->method, req->target, req->body);
    lh_reply_text(reply, x->status ? x->status : 200, "text/plain", text);
    snprintf(reply->header, sizeof(reply->header), "x-amzn-RequestId: req-%s", req->method);
    reply->action = x->action;
    reply->cut_after = x->cut_after;
}

struct echo_fixture {
    struct echo echo;
    struct lh_server *server;
    struct http_client *client;
    char url[64];
};

static int echo_setup(void **state)
{
    struct echo_fixture *f = calloc(1, sizeof(*f));

    if (!f || lh_start(echo_handler, &f->echo, &f->server) < 0 || http_client_new(&f->client) < 0)
        return -1;
    lh_url(f->server, f->url, sizeof(f->url));
    *state = f;
    return 0;
}

static int echo_teardown(void **state)
{
    struct echo_fixture *f = *state;

    http_client_free(f->client);
    lh_stop(f->server);
    free(f);
    return 0;
}

/* A POST carries exactly the given headers (plus Host, Accept and Content-Length), an empty one
 * too: curl adds no Content-Type and no Expect of its own; the body and the status come back. */
static void http_client_do__post_carries_only_given_headers(void **state)
{
    struct echo_fixture *f = *state;
    char url[128];
    const struct http_client_header hs[] = {
        {"X-Amz-Date", "20150830T123600Z"}, {"X-Test", "1"}, {"X-Empty", ""}};
    struct http_client_request req = {.method = "POST",
                                      .url = url,
                                      .headers = hs,
                                      .nheaders = 3,
                                      .body = "Action=X",
                                      .body_len = 8,
                                      .timeout_ms = 5000};
    struct http_client_response r = {0};

    snprintf(url, sizeof(url), "%s/path", f->url);
    assert_int_equal(http_client_do(f->client, &req, &r, NULL), 0);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "POST /path [Action=X]");
    assert_int_equal(r.body_len, strlen(r.body));
    assert_string_equal(lh_header(&f->echo.last, "X-Amz-Date"), "20150830T123600Z");
    assert_string_equal(lh_header(&f->echo.last, "Content-Length"), "8");
    assert_null(lh_header(&f->echo.last, "Content-Type"));
    assert_null(lh_header(&f->echo.last, "Expect"));
    assert_string_equal(lh_header(&f->echo.last, "X-Empty"), "");
    for (size_t i = 0; i < f->echo.last.n_headers; i++) {
        const char *n = f->echo.last.headers[i].name;

        assert_true(strcmp(n, "Host") == 0 || strcmp(n, "Accept") == 0 ||
                    strcmp(n, "Content-Length") == 0 || strcmp(n, "X-Amz-Date") == 0 ||
                    strcmp(n, "X-Test") == 0 || strcmp(n, "X-Empty") == 0);
    }
    http_client_response_clear(&r);
    assert_null(r.body);
}

/* A GET and a PUT with an empty body; a 404 and a 500 are answers, not errors; a response header
 * asked for is kept. */
static void http_client_do__any_status_is_an_answer(void **state)
{
    struct echo_fixture *f = *state;
    struct http_client_request req = {.method = "PUT", .url = f->url, .timeout_ms = 5000};
    struct http_client_response r = {0};

    f->echo.status = 404;
    assert_int_equal(http_client_do(f->client, &req, &r, NULL), 0);
    assert_int_equal(r.status, 404);
    assert_string_equal(r.body, "PUT / []");
    assert_string_equal(r.captured, ""); /* no header asked for */
    http_client_response_clear(&r);
    f->echo.status = 500;
    req.method = "GET";
    req.capture_header = "X-AMZN-REQUESTID"; /* names match whatever their case */
    assert_int_equal(http_client_do(f->client, &req, &r, NULL), 0);
    assert_int_equal(r.status, 500);
    assert_string_equal(r.body, "GET / []");
    assert_string_equal(r.captured, "req-GET");
    http_client_response_clear(&r);
    req.capture_header = "X-Not-Sent";
    assert_int_equal(http_client_do(f->client, &req, &r, NULL), 0);
    assert_string_equal(r.captured, "");
    http_client_response_clear(&r);
}

/* A server that reads the request and never answers: ERR_AGAIN after the timeout, with a message
 * that says so; the response is untouched. */
static void http_client_do__hang_times_out(void **state)
{
    struct echo_fixture *f = *state;
    struct http_client_request req = {.method = "GET", .url = f->url, .timeout_ms = 200};
    struct http_client_response r = {.status = 7};
    struct error e = {0};

    f->echo.action = LH_HANG;
    assert_int_equal(http_client_do(f->client, &req, &r, &e), ERR_AGAIN);
    assert_non_null(strstr(e.msg, "timed out after 200 ms"));
    assert_int_equal(r.status, 7);
    assert_null(r.body);
}

/* An answer cut short of its Content-Length, and a connection closed without a word: ERR_IO. */
static void http_client_do__cut_answer_is_io_error(void **state)
{
    struct echo_fixture *f = *state;
    struct http_client_request req = {.method = "GET", .url = f->url, .timeout_ms = 2000};
    struct http_client_response r = {0};
    struct error e = {0};

    f->echo.cut_after = 3;
    assert_int_equal(http_client_do(f->client, &req, &r, &e), ERR_IO);
    assert_true(strlen(e.msg) > 0);
    f->echo.cut_after = 0;
    f->echo.action = LH_CLOSE;
    assert_int_equal(http_client_do(f->client, &req, &r, &e), ERR_IO);
    assert_null(r.body);
}

/* Nobody listening: ERR_IO naming the host. */
static void http_client_do__refused_connection(void **state)
{
    struct http_client *c = NULL;
    struct http_client_request req = {
        .method = "GET", .url = "http://127.0.0.1:1/", .timeout_ms = 2000};
    struct http_client_response r = {0};
    struct error e = {0};

    (void)state;
    assert_int_equal(http_client_new(&c), 0);
    assert_int_equal(http_client_do(c, &req, &r, &e), ERR_IO);
    assert_string_equal(e.file, "127.0.0.1:1");
    http_client_free(c);
}

/* Settings refused before anything is sent: TLS verification off for a host that is not
 * loopback, a negative timeout, another scheme, a header with a line break, a header without
 * value, a GET with a body. */
static void http_client_do__refused_settings(void **state)
{
    struct echo_fixture *f = *state;
    const struct http_client_header crlf[] = {{"X-A", "b\r\nX-Injected: 1"}};
    const struct http_client_header novalue[] = {{"X-A", NULL}};
    struct http_client_request req = {
        .method = "GET", .url = "https://203.0.113.7/", .timeout_ms = 1000, .insecure = 1};
    struct http_client_response r = {0};
    struct error e = {0};

    assert_int_equal(http_client_do(f->client, &req, &r, &e), ERR_INVAL);
    assert_non_null(strstr(e.msg, "loopback"));
    req.insecure = 0;
    req.timeout_ms = -1;
    assert_int_equal(http_client_do(f->client, &req, &r, &e), ERR_INVAL);
    req.timeout_ms = 1000;
    req.url = "ftp://127.0.0.1/";
    assert_int_equal(http_client_do(f->client, &req, &r, &e), ERR_INVAL);
    req.url = f->url;
    req.headers = crlf;
    req.nheaders = 1;
    assert_int_equal(http_client_do(f->client, &req, &r, &e), ERR_INVAL);
    req.headers = novalue;
    assert_int_equal(http_client_do(f->client, &req, &r, &e), ERR_INVAL);
    req.headers = NULL;
    req.nheaders = 0;
    req.body = "x";
    req.body_len = 1;
    assert_int_equal(http_client_do(f->client, &req, &r, &e), ERR_INVAL);
    assert_int_equal(f->echo.last.method[0], '\0'); /* nothing reached the server */
    req.body = NULL;
    req.body_len = 0;
    /* insecure on loopback is allowed (plain http here, so it changes nothing) */
    req.insecure = 1;
    assert_int_equal(http_client_do(f->client, &req, &r, &e), 0);
    http_client_response_clear(&r);
    assert_null(r.body);
}

/* URLs split into scheme, host, port, Host header, path and query; loopback recognised; other
 * schemes, a user part and text that is no URL refused. */
static void http_client_parse_url__parts(void **state)
{
    struct http_client_url p;

    (void)state;
    assert_int_equal(http_client_parse_url("https://ec2.us-east-1.amazonaws.com", &p), 0);
    assert_string_equal(p.scheme, "https");
    assert_string_equal(p.host, "ec2.us-east-1.amazonaws.com");
    assert_int_equal(p.port, 0);
    assert_string_equal(p.authority, "ec2.us-east-1.amazonaws.com");
    assert_string_equal(p.path, "/");
    assert_int_equal(p.loopback, 0);
    assert_int_equal(http_client_parse_url("http://127.0.0.1:5000/x/y", &p), 0);
    assert_string_equal(p.authority, "127.0.0.1:5000");
    assert_int_equal(p.port, 5000);
    assert_string_equal(p.path, "/x/y");
    assert_int_equal(p.loopback, 1);
    assert_int_equal(http_client_parse_url("http://[::1]:8080/", &p), 0);
    assert_string_equal(p.host, "::1");
    assert_string_equal(p.authority, "[::1]:8080");
    assert_int_equal(p.loopback, 1);
    assert_int_equal(http_client_parse_url("http://localhost/", &p), 0);
    assert_int_equal(p.loopback, 1);
    assert_int_equal(http_client_parse_url("http://127.0.0.1.example.com/", &p), 0);
    assert_int_equal(p.loopback, 0);
    assert_int_equal(http_client_parse_url("http://128.0.0.1/", &p), 0);
    assert_int_equal(p.loopback, 0);
    assert_int_equal(http_client_parse_url("ftp://127.0.0.1/", &p), ERR_INVAL);
    assert_int_equal(http_client_parse_url("http://u:pw@127.0.0.1/", &p), ERR_INVAL);
    assert_int_equal(http_client_parse_url("http://127.0.0.1/v1/jobs?state=a%2Cb&x", &p), 0);
    assert_string_equal(p.path, "/v1/jobs");
    assert_string_equal(p.query, "state=a%2Cb&x");
    assert_int_equal(http_client_parse_url("http://127.0.0.1", &p), 0);
    assert_string_equal(p.query, "");
    assert_int_equal(http_client_parse_url("not a url", &p), ERR_INVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, client_setup, client_teardown)
#define E(name) cmocka_unit_test_setup_teardown(name, echo_setup, echo_teardown)
        T(http_client_do__round_trip),
        T(http_client_do__body_limit),
        T(http_client_do__timeout),
        T(http_client_do__errors),
        E(http_client_do__post_carries_only_given_headers),
        E(http_client_do__any_status_is_an_answer),
        E(http_client_do__hang_times_out),
        E(http_client_do__cut_answer_is_io_error),
        cmocka_unit_test(http_client_do__refused_connection),
        E(http_client_do__refused_settings),
        cmocka_unit_test(http_client_parse_url__parts),
#undef T
#undef E
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
