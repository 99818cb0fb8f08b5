/* test_http_server.c: a real server on loopback answering real clients (libcurl through
 * util/http_client, and raw sockets where the bytes on the wire matter): requests reach the
 * handler whole, bodies over the limit answer 413 without it, the connection limit, both
 * threading modes, bad configurations, and TLS with a self-signed certificate; the per-client
 * rate limit (429 with Retry-After, unseen by the handler), the per-client connection limit, and
 * plain HTTP refused off loopback. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/error.h"
#include "util/http_client.h"
#include "util/http_server.h"

/* What the test handler saw and how it answers. */
struct echo {
    atomic_int calls;
    int status; /* what to answer; 0: nothing (the server makes it 500) */
};

/* Answers "method path x=<query x> h=<header X-Test> len=<body length> sum=<byte sum>" as text,
 * with an extra header. */
static void echo_handler(void *ctx, const struct http_request *req, struct http_response *resp)
{
    struct echo *e = ctx;
    const char *x = http_request_query(req, "x"), *h = http_request_header(req, "x-test");
    unsigned long sum = 0;
    char *text = NULL;
    int n;

    atomic_fetch_add(&e->calls, 1);
    if (e->status == 0)
        return;
    for (size_t i = 0; i < req->body_len; i++)
        sum += (unsigned char)req->body[i];
    text = malloc(512);
    assert_non_null(text);
    n = snprintf(text, 512, "%s %s x=%s h=%s len=%zu sum=%lu nul=%d", req->method, req->path,
                 x ? x : "-", h ? h : "-", req->body_len, sum, req->body[req->body_len] == '\0');
    assert_true(n > 0 && n < 512);
    resp->status = e->status;
    resp->content_type = "text/plain";
    resp->body = text;
    resp->body_len = (size_t)n;
    resp->headers[0] = (struct http_pair){"X-Reply", "yes"};
    resp->nheaders = 1;
}

static struct http_server *start(struct echo *echo, const struct http_server_config *cfg)
{
    struct http_server *s = NULL;
    struct error e = {0};

    echo->status = echo->status ? echo->status : 200;
    assert_int_equal(http_server_start(cfg, echo_handler, echo, &s, &e), 0);
    assert_true(http_server_port(s) > 0);
    return s;
}

/* One request through the client; the response is returned (the caller clears it). */
static int request(const char *method, const char *url, const char *body, size_t len,
                   const char *xtest, const char *ca, struct http_client_response *out)
{
    const struct http_client_header headers[1] = {{"X-Test", xtest}};
    struct http_client_request req = {
        .method = method,
        .url = url,
        .headers = headers,
        .nheaders = xtest ? 1 : 0,
        .body = body,
        .body_len = len,
        .timeout_ms = 5000,
        .ca_file = ca,
    };
    struct http_client *c = NULL;
    int rc;

    assert_int_equal(http_client_new(&c), 0);
    rc = http_client_do(c, &req, out, NULL);
    http_client_free(c);
    return rc;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000L};

    nanosleep(&ts, NULL);
}

/* A connected raw socket to the server's port, with a receive timeout. */
static int raw_connect(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    struct timeval tv = {.tv_sec = 5};
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    assert_true(fd >= 0);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
    return fd;
}

/* Send text, read until the server closes or 4 KiB came, into buf. */
static void raw_exchange(int fd, const char *text, char *buf, size_t size)
{
    size_t got = 0;
    ssize_t n;

    assert_int_equal(send(fd, text, strlen(text), MSG_NOSIGNAL), (ssize_t)strlen(text));
    while (got + 1 < size && (n = recv(fd, buf + got, size - 1 - got, 0)) > 0) {
        got += (size_t)n;
        if (strstr(buf, "\r\n\r\n"))
            break;
    }
    buf[got] = '\0';
}

/* Port 0 picks a port; the handler gets the method, the decoded path, the query, the headers
 * and the whole body (NUL bytes included, NUL-terminated after it), and its status, content
 * type, headers and body reach the client. */
static void http_server_start__request_reaches_handler_whole(void **state)
{
    struct http_server_config cfg = {.port = 0};
    struct echo echo = {0};
    struct http_client_response r = {0};
    char url[128], body[3000], expect[160];
    unsigned long sum = 0;
    struct http_server *s;

    (void)state;
    s = start(&echo, &cfg);
    for (size_t i = 0; i < sizeof(body); i++) {
        body[i] = (char)(i * 7 % 256);
        sum += (unsigned char)body[i];
    }
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/a%%20b?x=4%%2B2&y", http_server_port(s));
    assert_int_equal(request("POST", url, body, sizeof(body), "hello", NULL, &r), 0);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.content_type, "text/plain");
    snprintf(expect, sizeof(expect), "POST /v1/a b x=4+2 h=hello len=%zu sum=%lu nul=1",
             sizeof(body), sum);
    assert_string_equal(r.body, expect);
    http_client_response_clear(&r);
    assert_int_equal(request("GET", url, NULL, 0, NULL, NULL, &r), 0);
    assert_string_equal(r.body, "GET /v1/a b x=4+2 h=- len=0 sum=0 nul=1");
    http_client_response_clear(&r);
    assert_int_equal(atomic_load(&echo.calls), 2);
    http_server_stop(s);
}

/* A handler that sets no status answers 500. */
static void http_server_start__silent_handler_is_500(void **state)
{
    struct http_server_config cfg = {0};
    struct echo echo = {.status = -1};
    struct http_client_response r = {0};
    struct http_server *s;
    char url[64];

    (void)state;
    s = start(&echo, &cfg);
    echo.status = 0;
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", http_server_port(s));
    assert_int_equal(request("GET", url, NULL, 0, NULL, NULL, &r), 0);
    assert_int_equal(r.status, 500);
    http_client_response_clear(&r);
    http_server_stop(s);
}

/* A body over the limit answers 413 and never reaches the handler: when the Content-Length says
 * so before any body is sent (raw socket), when a client sends it (libcurl), and when it comes
 * in chunks with no length declared; a body at the limit passes. */
static void http_server_start__oversized_body_is_413(void **state)
{
    struct http_server_config cfg = {.max_body = 4096};
    struct http_client_response r = {0};
    struct echo echo = {0};
    char url[64], buf[4096], *big, *chunked;
    struct http_server *s;
    int fd, n;

    (void)state;
    s = start(&echo, &cfg);
    fd = raw_connect(http_server_port(s));
    raw_exchange(fd, "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 1000000\r\n\r\n", buf,
                 sizeof(buf));
    assert_non_null(strstr(buf, "HTTP/1.1 413"));
    close(fd);
    fd = raw_connect(http_server_port(s));
    chunked = malloc(8192);
    assert_non_null(chunked);
    /* a chunk of 4096 bytes, then one of 1: 4097 in all */
    n = snprintf(chunked, 8192,
                 "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                 "1000\r\n%4096s\r\n1\r\nb\r\n0\r\n\r\n",
                 "");
    assert_true(n > 4096 && n < 8192);
    raw_exchange(fd, chunked, buf, sizeof(buf));
    free(chunked);
    assert_non_null(strstr(buf, "HTTP/1.1 413"));
    close(fd);
    big = malloc(2 * 4096);
    assert_non_null(big);
    memset(big, 'z', 2 * 4096);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/x", http_server_port(s));
    assert_int_equal(request("POST", url, big, 4097, NULL, NULL, &r), 0);
    assert_int_equal(r.status, 413);
    assert_non_null(strstr(r.body, "too large"));
    http_client_response_clear(&r);
    assert_int_equal(atomic_load(&echo.calls), 0);
    assert_int_equal(request("POST", url, big, 4096, NULL, NULL, &r), 0);
    assert_int_equal(r.status, 200);
    http_client_response_clear(&r);
    assert_int_equal(atomic_load(&echo.calls), 1);
    free(big);
    http_server_stop(s);
}

/* POST /x on a new connection to s with the headers and body that follow "Host: a\r\n" (rest):
 * the answer, into buf (size), must have status; the connection is returned, open. */
static int raw_request(struct http_server *s, const char *rest, const char *status, char *buf,
                       size_t size)
{
    char text[512], want[32];
    int fd = raw_connect(http_server_port(s));

    snprintf(text, sizeof(text), "POST /x HTTP/1.1\r\nHost: a\r\n%s", rest);
    raw_exchange(fd, text, buf, size);
    snprintf(want, sizeof(want), "HTTP/1.1 %s", status);
    assert_non_null(strstr(buf, want));
    return fd;
}

/* Two Content-Length headers that differ say two lengths for one body (the way one request is
 * smuggled inside another): 400 before the body, the handler never called, the connection
 * closed. Two that agree are one length. */
static void http_server_start__conflicting_content_lengths_are_400(void **state)
{
    struct http_server_config cfg = {.max_body = 4096};
    struct echo echo = {0};
    struct http_server *s;
    char buf[4096];
    ssize_t n;
    int fd;

    (void)state;
    s = start(&echo, &cfg);
    fd = raw_request(s, "Content-Length: 5\r\nContent-Length: 10\r\n\r\nhelloworld", "400", buf,
                     sizeof(buf));
    /* the rest of the answer, then the end of the connection: no second answer */
    while ((n = recv(fd, buf, sizeof(buf) - 1, 0)) > 0) {
        buf[n] = '\0';
        assert_null(strstr(buf, "HTTP/1.1"));
    }
    assert_int_equal(n, 0);
    close(fd);
    close(raw_request(s, "Content-Length: 10\r\nContent-Length: 5\r\n\r\nhelloworld", "400", buf,
                      sizeof(buf)));
    assert_int_equal(atomic_load(&echo.calls), 0);
    close(raw_request(s, "Content-Length: 5\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
                      "200", buf, sizeof(buf)));
    assert_int_equal(atomic_load(&echo.calls), 1);
    http_server_stop(s);
}

struct hammer {
    int port;
    int ok;
};

static void *hammer_run(void *arg)
{
    struct hammer *h = arg;
    struct http_client_request req = {.method = "POST", .body = "abc", .body_len = 3};
    struct http_client_response r;
    struct http_client *c = NULL;
    char url[64];

    snprintf(url, sizeof(url), "http://127.0.0.1:%d/h", h->port);
    req.url = url;
    if (http_client_new(&c) < 0)
        return NULL;
    for (int i = 0; i < 25; i++) {
        if (http_client_do(c, &req, &r, NULL) == 0 && r.status == 200 &&
            strstr(r.body, "len=3 sum=294"))
            h->ok++;
        http_client_response_clear(&r);
    }
    http_client_free(c);
    return NULL;
}

/* Eight clients at once, 25 requests each over kept-alive connections, are all answered, with a
 * thread per connection and with a pool of two polling threads. */
static void http_server_start__concurrent_clients_both_modes(void **state)
{
    for (unsigned threads = 0; threads <= 2; threads += 2) {
        struct http_server_config cfg = {.threads = threads};
        struct hammer h[8];
        pthread_t t[8];
        struct echo echo = {0};
        struct http_server *s = start(&echo, &cfg);

        (void)state;
        for (int i = 0; i < 8; i++) {
            h[i] = (struct hammer){.port = http_server_port(s)};
            assert_int_equal(pthread_create(&t[i], NULL, hammer_run, &h[i]), 0);
        }
        for (int i = 0; i < 8; i++) {
            assert_int_equal(pthread_join(t[i], NULL), 0);
            assert_int_equal(h[i].ok, 25);
        }
        assert_int_equal(atomic_load(&echo.calls), 200);
        http_server_stop(s);
    }
}

/* Over the connection limit a new connection is closed unanswered; once one closes, the next is
 * served. */
static void http_server_start__connection_limit(void **state)
{
    struct http_server_config cfg = {.max_connections = 2};
    struct echo echo = {0};
    struct http_server *s = start(&echo, &cfg);
    int a = raw_connect(http_server_port(s)), b = raw_connect(http_server_port(s)), c;
    char buf[512];

    (void)state;
    sleep_ms(100);
    c = raw_connect(http_server_port(s));
    raw_exchange(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n", buf, sizeof(buf));
    assert_string_equal(buf, "");
    close(c);
    close(a);
    sleep_ms(200);
    c = raw_connect(http_server_port(s));
    raw_exchange(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n", buf, sizeof(buf));
    assert_non_null(strstr(buf, "HTTP/1.1 200"));
    close(c);
    close(b);
    http_server_stop(s);
}

/* A connected raw socket to the server's port (on 127.0.0.1) from the loopback address from. */
static int raw_connect_from(int port, const char *from)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    struct sockaddr_in src = {.sin_family = AF_INET};
    struct timeval tv = {.tv_sec = 5};
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    assert_true(fd >= 0);
    assert_int_equal(inet_pton(AF_INET, from, &src.sin_addr), 1);
    assert_int_equal(bind(fd, (struct sockaddr *)&src, sizeof(src)), 0);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
    return fd;
}

/* One client holding its limit of connections with requests it never finishes (headers never
 * complete, so the rate limit never sees them) is refused its next one, while another client
 * address is still served; once one of its connections closes, the client is served again. */
static void http_server_start__client_connection_limit(void **state)
{
    struct http_server_config cfg = {
        .max_connections = 8, .max_client_connections = 3, .rate_limit = 100};
    struct echo echo = {0};
    struct http_server *s = start(&echo, &cfg);
    int port = http_server_port(s), held[3], c;
    char buf[512];

    (void)state;
    for (int i = 0; i < 3; i++) {
        held[i] = raw_connect_from(port, "127.0.0.1");
        assert_int_equal(send(held[i], "GET / HTTP/1.1\r\nX: ", 19, MSG_NOSIGNAL), 19);
    }
    sleep_ms(100);
    c = raw_connect_from(port, "127.0.0.1");
    raw_exchange(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n", buf, sizeof(buf));
    assert_string_equal(buf, "");
    close(c);
    c = raw_connect_from(port, "127.0.0.2");
    raw_exchange(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n", buf, sizeof(buf));
    assert_non_null(strstr(buf, "HTTP/1.1 200"));
    close(c);
    close(held[0]);
    sleep_ms(200);
    c = raw_connect_from(port, "127.0.0.1");
    raw_exchange(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n", buf, sizeof(buf));
    assert_non_null(strstr(buf, "HTTP/1.1 200"));
    close(c);
    close(held[1]);
    close(held[2]);
    http_server_stop(s);
}

/* Bad configurations are refused with the reason; nothing is started. */
static void http_server_start__bad_config(void **state)
{
    struct http_server_config cfg = {0};
    struct echo echo = {.status = 200};
    struct http_server *s = NULL, *first;
    struct error e = {0};

    (void)state;
    cfg.address = "localhost";
    assert_int_equal(http_server_start(&cfg, echo_handler, &echo, &s, &e), ERR_INVAL);
    assert_non_null(strstr(e.msg, "numeric"));
    cfg.address = NULL;
    cfg.port = 70000;
    assert_int_equal(http_server_start(&cfg, echo_handler, &echo, &s, &e), ERR_INVAL);
    cfg.port = 0;
    cfg.cert_file = "/nonexistent/cert.pem";
    assert_int_equal(http_server_start(&cfg, echo_handler, &echo, &s, &e), ERR_INVAL);
    cfg.key_file = "/nonexistent/key.pem";
    assert_int_equal(http_server_start(&cfg, echo_handler, &echo, &s, &e), ERR_NOENT);
    assert_null(s);
    cfg.cert_file = cfg.key_file = NULL;
    first = start(&echo, &cfg);
    cfg.port = http_server_port(first);
    assert_int_equal(http_server_start(&cfg, echo_handler, &echo, &s, &e), ERR_IO);
    assert_non_null(strstr(e.msg, "cannot serve"));
    assert_null(s);
    http_server_stop(first);
    http_server_stop(NULL);
}

/* The test clock of the rate limit, in seconds. */
static double fake_now;

static double fake_clock(void *ctx)
{
    (void)ctx;
    return fake_now;
}

/* Answers 200 with the client address the server gave the handler. */
static void client_handler(void *ctx, const struct http_request *req, struct http_response *resp)
{
    struct echo *e = ctx;

    atomic_fetch_add(&e->calls, 1);
    resp->status = 200;
    resp->content_type = "text/plain";
    resp->body = strdup(req->client);
    resp->body_len = resp->body ? strlen(resp->body) : 0;
}

/* One request with Connection: close on a raw socket; the whole answer into buf. */
static void raw_get(int port, char *buf, size_t size)
{
    static const char text[] = "GET /r HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
    int fd = raw_connect(port);
    size_t got = 0;
    ssize_t n;

    assert_int_equal(send(fd, text, strlen(text), MSG_NOSIGNAL), (ssize_t)strlen(text));
    while (got + 1 < size && (n = recv(fd, buf + got, size - 1 - got, 0)) > 0)
        got += (size_t)n;
    buf[got] = '\0';
    close(fd);
}

/* A client gets its burst, then answers 429 with Retry-After (the seconds until a request is
 * allowed again) and a JSON reason, without the handler being called; once the clock has moved on
 * by that much it is served again. The handler sees the client's address. */
static void http_server_start__rate_limit_answers_429(void **state)
{
    struct http_server_config cfg = {.rate_limit = 0.25, .rate_burst = 2, .clock = fake_clock};
    struct echo echo = {.status = 200};
    struct http_server *s = NULL;
    char buf[4096];

    (void)state;
    fake_now = 1000.0;
    assert_int_equal(http_server_start(&cfg, client_handler, &echo, &s, NULL), 0);
    for (int i = 0; i < 2; i++) {
        raw_get(http_server_port(s), buf, sizeof(buf));
        assert_non_null(strstr(buf, "HTTP/1.1 200"));
        assert_non_null(strstr(buf, "\r\n\r\n127.0.0.1"));
    }
    raw_get(http_server_port(s), buf, sizeof(buf));
    assert_non_null(strstr(buf, "HTTP/1.1 429"));
    assert_non_null(strstr(buf, "Retry-After: 4\r\n"));
    assert_non_null(strstr(buf, "{\"error\":\"too many requests"));
    assert_int_equal(atomic_load(&echo.calls), 2);
    fake_now += 3.0;
    raw_get(http_server_port(s), buf, sizeof(buf));
    assert_non_null(strstr(buf, "Retry-After: 1\r\n"));
    fake_now += 1.0;
    raw_get(http_server_port(s), buf, sizeof(buf));
    assert_non_null(strstr(buf, "HTTP/1.1 200"));
    assert_int_equal(atomic_load(&echo.calls), 3);
    http_server_stop(s);
    cfg.rate_limit = -1;
    assert_int_equal(http_server_start(&cfg, client_handler, &echo, &s, NULL), ERR_INVAL);
}

/* Plain HTTP on an address that is not loopback (a wildcard included) is refused unless opted
 * into; loopback addresses and TLS need no opt-in. */
static void http_server_start__plain_http_only_on_loopback(void **state)
{
    static const char *const refused[] = {"0.0.0.0", "::", "10.1.2.3", "192.168.0.1", "fe80::1"};
    struct http_server_config cfg = {0};
    struct echo echo = {.status = 200};
    struct http_server *s = NULL;
    struct error e = {0};

    (void)state;
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        cfg.address = refused[i];
        assert_int_equal(http_server_start(&cfg, echo_handler, &echo, &s, &e), ERR_INVAL);
        assert_non_null(strstr(e.msg, "not a loopback address"));
        assert_null(s);
    }
    cfg.address = "127.0.0.2";
    s = start(&echo, &cfg);
    http_server_stop(s);
    cfg.address = "0.0.0.0";
    cfg.insecure_http = 1;
    s = start(&echo, &cfg);
    http_server_stop(s);
}

/* IPv6 loopback, where the machine has it. */
static void http_server_start__ipv6_loopback(void **state)
{
    struct http_server_config cfg = {.address = "::1"};
    struct http_client_response r = {0};
    struct echo echo = {.status = 200};
    struct http_server *s = NULL;
    char url[64];

    (void)state;
    if (http_server_start(&cfg, echo_handler, &echo, &s, NULL) < 0)
        skip();
    snprintf(url, sizeof(url), "http://[::1]:%d/six", http_server_port(s));
    assert_int_equal(request("GET", url, NULL, 0, NULL, NULL, &r), 0);
    assert_int_equal(r.status, 200);
    http_client_response_clear(&r);
    http_server_stop(s);
}

/* TLS with a self-signed certificate for 127.0.0.1 made by `openssl req`: a client that trusts it
 * is served; one that trusts only the system's authorities is refused (ERR_IO); plain HTTP to the
 * TLS port gets no answer it can use. */
static void http_server_start__tls_self_signed(void **state)
{
    char dir[] = "/tmp/castor-test-tls-XXXXXX", cmd[1024], cert[64], key[64], url[64];
    struct http_server_config cfg = {0};
    struct http_client_response r = {0};
    struct echo echo = {.status = 200};
    struct http_server *s = NULL;
    struct error e = {0};

    (void)state;
    if (system("openssl version >/dev/null 2>&1") != 0)
        skip();
    assert_non_null(mkdtemp(dir));
    snprintf(cert, sizeof(cert), "%s/cert.pem", dir);
    snprintf(key, sizeof(key), "%s/key.pem", dir);
    snprintf(cmd, sizeof(cmd),
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
             "-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -keyout %s -out %s "
             ">/dev/null 2>&1",
             key, cert);
    assert_int_equal(system(cmd), 0);
    cfg.cert_file = cert;
    cfg.key_file = key;
    assert_int_equal(http_server_start(&cfg, echo_handler, &echo, &s, &e), 0);
    snprintf(url, sizeof(url), "https://127.0.0.1:%d/secure", http_server_port(s));
    assert_int_equal(request("GET", url, NULL, 0, NULL, cert, &r), 0);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "GET /secure"));
    http_client_response_clear(&r);
    assert_int_equal(request("GET", url, NULL, 0, NULL, NULL, &r), ERR_IO);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/plain", http_server_port(s));
    assert_true(request("GET", url, NULL, 0, NULL, NULL, &r) < 0);
    assert_int_equal(atomic_load(&echo.calls), 1);
    http_server_stop(s);
    assert_int_equal(unlink(cert), 0);
    assert_int_equal(unlink(key), 0);
    assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(http_server_start__request_reaches_handler_whole),
        cmocka_unit_test(http_server_start__silent_handler_is_500),
        cmocka_unit_test(http_server_start__oversized_body_is_413),
        cmocka_unit_test(http_server_start__conflicting_content_lengths_are_400),
        cmocka_unit_test(http_server_start__concurrent_clients_both_modes),
        cmocka_unit_test(http_server_start__connection_limit),
        cmocka_unit_test(http_server_start__client_connection_limit),
        cmocka_unit_test(http_server_start__bad_config),
        cmocka_unit_test(http_server_start__ipv6_loopback),
        cmocka_unit_test(http_server_start__rate_limit_answers_429),
        cmocka_unit_test(http_server_start__plain_http_only_on_loopback),
        cmocka_unit_test(http_server_start__tls_self_signed),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
