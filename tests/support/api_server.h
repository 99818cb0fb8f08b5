/* api_server.h: the controller's real API (src/control/api.c) on 127.0.0.1 with a state database
 * in a temporary folder, the wall clock and a log in memory, for the tests of the worker side
 * (castor-node, the emulator, the local cloud); a second state connection for the test's own
 * reads and writes. Include after cmocka.h. */
#ifndef CASTOR_TESTS_API_SERVER_H
#define CASTOR_TESTS_API_SERVER_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "control/api.h"
#include "control/state.h"
#include "util/http_server.h"
#include "util/log.h"

#define AS_TOKEN_NODE "node-token-0123456789abcdef"
#define AS_TOKEN_JOB "job-token-0123456789abcdef"
#define AS_TOKEN_USER "user-token-0123456789abcdef"

struct api_server {
    char dir[64];      /* the temporary folder: the database, and room for the test's files */
    char db[96];       /* the database's path */
    struct state *st;  /* the API's connection */
    struct state *own; /* the test's connection */
    struct api *api;
    struct http_server *server;
    FILE *logf;
    char *logtext;
    size_t loglen;
    struct log *log;
    int port;
    char url[64];
};

static inline double as_wall(void *ctx)
{
    struct timespec ts;

    (void)ctx;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Serve on port (0: any free one). 0, or -1. */
static inline int as_listen(struct api_server *s, int port)
{
    struct http_server_config hc = {.max_body = 256 * 1024, .port = port};

    if (http_server_start(&hc, api_handle, s->api, &s->server, NULL) < 0)
        return -1;
    s->port = http_server_port(s->server);
    snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%d", s->port);
    return 0;
}

/* Stop serving (the state and the API stay). */
static inline void as_unlisten(struct api_server *s)
{
    http_server_stop(s->server);
    s->server = NULL;
}

/* A new state in a new folder, the API over it (per_node_tokens, attest and attest_gcp, which may
 * be NULL: api_config's), served. 0, or -1. */
static inline int as_start_attest(struct api_server *s, int per_node_tokens,
                                  const struct attest_aws *attest,
                                  const struct attest_gcp *attest_gcp)
{
    struct api_tokens tokens = {
        {strdup(AS_TOKEN_NODE), strdup(AS_TOKEN_JOB), strdup(AS_TOKEN_USER), NULL}};
    struct api_config cfg = {0};
    int rc = -1;

    memset(s, 0, sizeof(*s));
    snprintf(s->dir, sizeof(s->dir), "/tmp/castor-test-agent-XXXXXX");
    if (!mkdtemp(s->dir))
        goto out;
    snprintf(s->db, sizeof(s->db), "%s/state.db", s->dir);
    s->logf = open_memstream(&s->logtext, &s->loglen);
    if (!s->logf || log_new(s->logf, LOG_DEBUG, &s->log) < 0 ||
        state_open(s->db, &s->st, NULL) < 0 || state_open(s->db, &s->own, NULL) < 0)
        goto out;
    cfg.state = s->st;
    cfg.log = s->log;
    cfg.clock = as_wall;
    cfg.tokens = &tokens;
    cfg.per_node_tokens = per_node_tokens;
    if (attest)
        cfg.attest = *attest;
    if (attest_gcp)
        cfg.attest_gcp = *attest_gcp;
    if (api_new(&cfg, &s->api, NULL) < 0 || as_listen(s, 0) < 0)
        goto out;
    rc = 0;
out:
    api_tokens_clear(&tokens);
    return rc;
}

static inline int as_start_with(struct api_server *s, int per_node_tokens)
{
    return as_start_attest(s, per_node_tokens, NULL, NULL);
}

static inline int as_start(struct api_server *s)
{
    return as_start_with(s, 0);
}

/* The path of name inside the server's folder into buf (size bytes); with mkdir_it, the folder is
 * made. 0, or -1. */
static inline int as_path(const struct api_server *s, const char *name, int mkdir_it, char *buf,
                          size_t size)
{
    if ((size_t)snprintf(buf, size, "%s/%s", s->dir, name) >= size)
        return -1;
    return mkdir_it && mkdir(buf, 0700) != 0 ? -1 : 0;
}

/* Submit job (spec: its JSON) through the test's connection, give it the configuration (64, 1,
 * 1.5) and replicas on node. 0, or the first state error. */
static inline int as_assign(struct api_server *s, const char *job, const char *spec,
                            const char *node, int replicas)
{
    struct state_alloc row = {.node = (char *)node, .replicas = replicas};
    int rc = state_job_submit(s->own, job, spec, as_wall(NULL));

    if (rc == 0)
        rc = state_job_set_config(s->own, job, 64, 1, 1.5);
    if (rc == 0)
        rc = state_alloc_replace(s->own, job, &row, 1, as_wall(NULL));
    return rc;
}

/* Stop everything and remove the folder with whatever the test left in it. */
static inline void as_stop(struct api_server *s)
{
    char cmd[128];

    as_unlisten(s);
    api_free(s->api);
    state_close(s->st);
    state_close(s->own);
    log_free(s->log);
    if (s->logf)
        fclose(s->logf);
    free(s->logtext);
    if (s->dir[0]) {
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", s->dir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", s->dir);
    }
}

#endif
