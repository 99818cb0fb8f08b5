/* loopback_http.c: the tests' HTTP server on loopback (see loopback_http.h). */
#include "loopback_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define LH_MAX_PARKED 64
#define LH_IO_MS 5000
#define LH_MAX_REQUEST (8u << 20)

struct lh_server {
    int listen_fd;
    int stop_pipe[2];
    int port;
    lh_handler handler;
    void *arg;
    pthread_t thread;
    int parked[LH_MAX_PARKED];
    size_t n_parked;
};

const char *lh_header(const struct lh_request *req, const char *name)
{
    for (size_t i = 0; i < req->n_headers; i++)
        if (strcasecmp(req->headers[i].name, name) == 0)
            return req->headers[i].value;
    return NULL;
}

void lh_reply_text(struct lh_reply *r, int status, const char *content_type, const char *text)
{
    r->action = LH_REPLY;
    r->status = status;
    snprintf(r->content_type, sizeof(r->content_type), "%s", content_type ? content_type : "");
    free(r->body);
    r->body = text ? strdup(text) : NULL;
    r->body_len = r->body ? strlen(r->body) : 0;
}

/* Wait until fd is readable or the server is told to stop; 1 readable, 0 stop or timeout. */
static int wait_readable(struct lh_server *s, int fd, int timeout_ms)
{
    struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = s->stop_pipe[0], .events = POLLIN}};
    int n = poll(p, 2, timeout_ms);

    return n > 0 && !(p[1].revents & POLLIN) && (p[0].revents & (POLLIN | POLLHUP));
}

static int send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Parse the head (request line and headers, CRLF-separated, NUL-terminated) into req. */
static int parse_head(char *head, struct lh_request *req)
{
    char *save = NULL, *line = strtok_r(head, "\r\n", &save);

    if (!line || sscanf(line, "%15s %2047s", req->method, req->target) != 2)
        return -1;
    while ((line = strtok_r(NULL, "\r\n", &save)) != NULL) {
        char *colon = strchr(line, ':');
        struct lh_header *h;

        if (!colon || req->n_headers == LH_MAX_HEADERS)
            return -1;
        h = &req->headers[req->n_headers++];
        *colon = '\0';
        snprintf(h->name, sizeof(h->name), "%s", line);
        colon++;
        while (*colon == ' ' || *colon == '\t')
            colon++;
        snprintf(h->value, sizeof(h->value), "%s", colon);
    }
    return 0;
}

/* Read one request from fd into req (body malloc'd). 0, or -1 on a broken one. */
static int read_request(struct lh_server *s, int fd, struct lh_request *req)
{
    size_t cap = 8192, len = 0, head_len = 0, want = 0;
    char *buf = malloc(cap), *end;
    const char *cl;

    if (!buf)
        return -1;
    for (;;) {
        ssize_t r;

        if (head_len && len >= head_len + want)
            break;
        if (len + 1 >= cap) {
            char *grown;

            if (cap >= LH_MAX_REQUEST)
                goto fail;
            grown = realloc(buf, cap * 2);
            if (!grown)
                goto fail;
            buf = grown;
            cap *= 2;
        }
        if (!wait_readable(s, fd, LH_IO_MS))
            goto fail;
        r = recv(fd, buf + len, cap - len - 1, 0);
        if (r <= 0)
            goto fail;
        len += (size_t)r;
        buf[len] = '\0';
        if (!head_len && (end = strstr(buf, "\r\n\r\n")) != NULL) {
            head_len = (size_t)(end - buf) + 4;
            *end = '\0';
            if (parse_head(buf, req) < 0)
                goto fail;
            cl = lh_header(req, "Content-Length");
            want = cl ? strtoul(cl, NULL, 10) : 0;
            if (want > LH_MAX_REQUEST)
                goto fail;
        }
    }
    req->body = malloc(want + 1);
    if (!req->body)
        goto fail;
    memcpy(req->body, buf + head_len, want);
    req->body[want] = '\0';
    req->body_len = want;
    free(buf);
    return 0;
fail:
    free(buf);
    return -1;
}

static void answer(struct lh_server *s, int fd)
{
    struct lh_request *req = calloc(1, sizeof(*req));
    struct lh_reply reply = {.action = LH_REPLY, .status = 500};
    char head[768];
    int n, keep = 0;

    if (!req || read_request(s, fd, req) < 0)
        goto out;
    s->handler(s->arg, req, &reply);
    if (reply.action == LH_HANG && s->n_parked < LH_MAX_PARKED) {
        s->parked[s->n_parked++] = fd;
        keep = 1;
        goto out;
    }
    if (reply.action != LH_REPLY)
        goto out;
    n = snprintf(head, sizeof(head),
                 "HTTP/1.1 %d Status\r\nConnection: close\r\nContent-Length: %zu\r\n%s%s%s%s%s\r\n",
                 reply.status, reply.body_len, reply.content_type[0] ? "Content-Type: " : "",
                 reply.content_type, reply.content_type[0] ? "\r\n" : "", reply.header,
                 reply.header[0] ? "\r\n" : "");
    if (send_all(fd, head, (size_t)n) < 0)
        goto out;
    if (reply.body_len)
        send_all(fd, reply.body,
                 reply.cut_after > 0 && (size_t)reply.cut_after < reply.body_len
                     ? (size_t)reply.cut_after
                     : reply.body_len);
out:
    free(reply.body);
    if (req)
        free(req->body);
    free(req);
    if (!keep) {
        shutdown(fd, SHUT_WR);
        close(fd);
    }
}

static void *serve(void *arg)
{
    struct lh_server *s = arg;

    for (;;) {
        int fd;

        if (!wait_readable(s, s->listen_fd, -1))
            break;
        fd = accept(s->listen_fd, NULL, NULL);
        if (fd < 0)
            continue;
        answer(s, fd);
    }
    return NULL;
}

int lh_start(lh_handler h, void *arg, struct lh_server **out)
{
    struct lh_server *s = calloc(1, sizeof(*s));
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t alen = sizeof(a);
    int one = 1;

    if (!s)
        return -1;
    s->handler = h;
    s->arg = arg;
    s->stop_pipe[0] = s->stop_pipe[1] = -1;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    s->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    if (s->listen_fd < 0)
        goto fail;
    setsockopt(s->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(s->listen_fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(s->listen_fd, 16) < 0 ||
        getsockname(s->listen_fd, (struct sockaddr *)&a, &alen) < 0 || pipe(s->stop_pipe) < 0)
        goto fail;
    s->port = ntohs(a.sin_port);
    if (pthread_create(&s->thread, NULL, serve, s) != 0)
        goto fail;
    *out = s;
    return 0;
fail:
    if (s->listen_fd >= 0)
        close(s->listen_fd);
    if (s->stop_pipe[0] >= 0) {
        close(s->stop_pipe[0]);
        close(s->stop_pipe[1]);
    }
    free(s);
    return -1;
}

int lh_port(const struct lh_server *s)
{
    return s->port;
}

void lh_url(const struct lh_server *s, char *buf, size_t size)
{
    snprintf(buf, size, "http://127.0.0.1:%d", s->port);
}

void lh_stop(struct lh_server *s)
{
    if (!s)
        return;
    if (write(s->stop_pipe[1], "x", 1) != 1)
        perror("lh_stop");
    pthread_join(s->thread, NULL);
    for (size_t i = 0; i < s->n_parked; i++)
        close(s->parked[i]);
    close(s->listen_fd);
    close(s->stop_pipe[0]);
    close(s->stop_pipe[1]);
    free(s);
}
