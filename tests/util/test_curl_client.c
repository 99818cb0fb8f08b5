/* test_curl_client.c: the libcurl wrapper against a loopback server: what goes on the wire,
 * answers of any status, timeouts, cut answers, refused connections, refused settings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "support/loopback_http.h"
#include "util/curl_client.h"

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
    reply->action = x->action;
    reply->cut_after = x->cut_after;
}

struct fixture {
    struct echo echo;
    struct lh_server *server;
    struct curl_client *client;
    char url[64];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));

    if (!f || lh_start(echo_handler, &f->echo, &f->server) < 0 || curl_client_new(&f->client) < 0)
        return -1;
    lh_url(f->server, f->url, sizeof(f->url));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    curl_client_free(f->client);
    lh_stop(f->server);
    free(f);
    return 0;
}

/* A POST carries exactly the given headers (plus Host, Accept and Content-Length): curl adds no
 * Content-Type and no Expect of its own; the body and the status come back. */
static void send__post_carries_only_given_headers(void **state)
{
    struct fixture *f = *state;
    char url[128];
    const struct curl_client_header hs[] = {{"X-Amz-Date", "20150830T123600Z"}, {"X-Test", "1"}};
    struct curl_client_request req = {.method = "POST",
                                      .url = url,
                                      .headers = hs,
                                      .n_headers = 2,
                                      .body = "Action=X",
                                      .body_len = 8,
                                      .timeout_ms = 5000};
    struct curl_client_response r = {0};

    snprintf(url, sizeof(url), "%s/path", f->url);
    assert_int_equal(curl_client_send(f->client, &req, &r, NULL), 0);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "POST /path [Action=X]");
    assert_int_equal(r.len, strlen(r.body));
    assert_string_equal(lh_header(&f->echo.last, "X-Amz-Date"), "20150830T123600Z");
    assert_string_equal(lh_header(&f->echo.last, "Content-Length"), "8");
    assert_null(lh_header(&f->echo.last, "Content-Type"));
    assert_null(lh_header(&f->echo.last, "Expect"));
    for (size_t i = 0; i < f->echo.last.n_headers; i++) {
        const char *n = f->echo.last.headers[i].name;

        assert_true(strcmp(n, "Host") == 0 || strcmp(n, "Accept") == 0 ||
                    strcmp(n, "Content-Length") == 0 || strcmp(n, "X-Amz-Date") == 0 ||
                    strcmp(n, "X-Test") == 0);
    }
    curl_client_response_free(&r);
    assert_null(r.body);
}

/* A GET and a PUT with an empty body; a 404 and a 500 are answers, not errors. */
static void send__any_status_is_an_answer(void **state)
{
    struct fixture *f = *state;
    struct curl_client_request req = {.method = "PUT", .url = f->url, .timeout_ms = 5000};
    struct curl_client_response r = {0};

    f->echo.status = 404;
    assert_int_equal(curl_client_send(f->client, &req, &r, NULL), 0);
    assert_int_equal(r.status, 404);
    assert_string_equal(r.body, "PUT / []");
    curl_client_response_free(&r);
    f->echo.status = 500;
    req.method = "GET";
    assert_int_equal(curl_client_send(f->client, &req, &r, NULL), 0);
    assert_int_equal(r.status, 500);
    assert_string_equal(r.body, "GET / []");
    curl_client_response_free(&r);
}

/* A server that never answers: ERR_IO after the timeout, with a message that says so. */
static void send__timeout_is_io_error(void **state)
{
    struct fixture *f = *state;
    struct curl_client_request req = {.method = "GET", .url = f->url, .timeout_ms = 200};
    struct curl_client_response r = {.status = 7};
    struct error e = {0};

    f->echo.action = LH_HANG;
    assert_int_equal(curl_client_send(f->client, &req, &r, &e), ERR_IO);
    assert_non_null(strstr(e.msg, "timed out after 200 ms"));
    assert_int_equal(r.status, 7);
    assert_null(r.body);
}

/* An answer cut short of its Content-Length, and a connection closed without a word: ERR_IO. */
static void send__cut_answer_is_io_error(void **state)
{
    struct fixture *f = *state;
    struct curl_client_request req = {.method = "GET", .url = f->url, .timeout_ms = 2000};
    struct curl_client_response r = {0};
    struct error e = {0};

    f->echo.cut_after = 3;
    assert_int_equal(curl_client_send(f->client, &req, &r, &e), ERR_IO);
    assert_true(strlen(e.msg) > 0);
    f->echo.cut_after = 0;
    f->echo.action = LH_CLOSE;
    assert_int_equal(curl_client_send(f->client, &req, &r, &e), ERR_IO);
    assert_null(r.body);
}

/* Nobody listening: ERR_IO naming the host. */
static void send__refused_connection(void **state)
{
    struct curl_client *c = NULL;
    struct curl_client_request req = {
        .method = "GET", .url = "http://127.0.0.1:1/", .timeout_ms = 2000};
    struct curl_client_response r = {0};
    struct error e = {0};

    (void)state;
    assert_int_equal(curl_client_new(&c), 0);
    assert_int_equal(curl_client_send(c, &req, &r, &e), ERR_IO);
    assert_string_equal(e.file, "127.0.0.1:1");
    curl_client_free(c);
}

/* Settings refused before anything is sent: TLS verification off for a host that is not
 * loopback, no timeout, another scheme, a header with a line break, a header without value. */
static void send__refused_settings(void **state)
{
    struct fixture *f = *state;
    const struct curl_client_header crlf[] = {{"X-A", "b\r\nX-Injected: 1"}};
    const struct curl_client_header novalue[] = {{"X-A", NULL}};
    struct curl_client_request req = {
        .method = "GET", .url = "https://203.0.113.7/", .timeout_ms = 1000, .insecure = 1};
    struct curl_client_response r = {0};
    struct error e = {0};

    assert_int_equal(curl_client_send(f->client, &req, &r, &e), ERR_INVAL);
    assert_non_null(strstr(e.msg, "loopback"));
    req.insecure = 0;
    req.timeout_ms = 0;
    assert_int_equal(curl_client_send(f->client, &req, &r, &e), ERR_INVAL);
    req.timeout_ms = 1000;
    req.url = "ftp://127.0.0.1/";
    assert_int_equal(curl_client_send(f->client, &req, &r, &e), ERR_INVAL);
    req.url = f->url;
    req.headers = crlf;
    req.n_headers = 1;
    assert_int_equal(curl_client_send(f->client, &req, &r, &e), ERR_INVAL);
    req.headers = novalue;
    assert_int_equal(curl_client_send(f->client, &req, &r, &e), ERR_INVAL);
    /* insecure on loopback is allowed (plain http here, so it changes nothing) */
    req.headers = NULL;
    req.n_headers = 0;
    req.insecure = 1;
    assert_int_equal(curl_client_send(f->client, &req, &r, &e), 0);
    curl_client_response_free(&r);
    assert_null(r.body);
}

/* URLs split into scheme, host, port, Host header and path; loopback recognised. */
static void parse_url__parts(void **state)
{
    struct curl_client_url p;

    (void)state;
    assert_int_equal(curl_client_parse_url("https://ec2.us-east-1.amazonaws.com", &p), 0);
    assert_string_equal(p.scheme, "https");
    assert_string_equal(p.host, "ec2.us-east-1.amazonaws.com");
    assert_int_equal(p.port, 0);
    assert_string_equal(p.authority, "ec2.us-east-1.amazonaws.com");
    assert_string_equal(p.path, "/");
    assert_int_equal(p.loopback, 0);
    assert_int_equal(curl_client_parse_url("http://127.0.0.1:5000/x/y", &p), 0);
    assert_string_equal(p.authority, "127.0.0.1:5000");
    assert_int_equal(p.port, 5000);
    assert_string_equal(p.path, "/x/y");
    assert_int_equal(p.loopback, 1);
    assert_int_equal(curl_client_parse_url("http://[::1]:8080/", &p), 0);
    assert_string_equal(p.host, "::1");
    assert_string_equal(p.authority, "[::1]:8080");
    assert_int_equal(p.loopback, 1);
    assert_int_equal(curl_client_parse_url("http://localhost/", &p), 0);
    assert_int_equal(p.loopback, 1);
    assert_int_equal(curl_client_parse_url("http://127.0.0.1.example.com/", &p), 0);
    assert_int_equal(p.loopback, 0);
    assert_int_equal(curl_client_parse_url("http://128.0.0.1/", &p), 0);
    assert_int_equal(p.loopback, 0);
    assert_int_equal(curl_client_parse_url("ftp://127.0.0.1/", &p), ERR_INVAL);
    assert_int_equal(curl_client_parse_url("http://u:pw@127.0.0.1/", &p), ERR_INVAL);
    assert_int_equal(curl_client_parse_url("http://127.0.0.1/?a=b", &p), ERR_INVAL);
    assert_int_equal(curl_client_parse_url("not a url", &p), ERR_INVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(send__post_carries_only_given_headers, setup, teardown),
        cmocka_unit_test_setup_teardown(send__any_status_is_an_answer, setup, teardown),
        cmocka_unit_test_setup_teardown(send__timeout_is_io_error, setup, teardown),
        cmocka_unit_test_setup_teardown(send__cut_answer_is_io_error, setup, teardown),
        cmocka_unit_test(send__refused_connection),
        cmocka_unit_test_setup_teardown(send__refused_settings, setup, teardown),
        cmocka_unit_test(parse_url__parts),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
