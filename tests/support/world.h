/* world.h: what the end-to-end tests of the worlds (tests/e2e) share: files written whole, a free
 * loopback port, the controller (`castor run`) started with its log and found listening, calls to
 * its API with a token, counts in its log and its state, and the scratch folder removed. An
 * includer defines _XOPEN_SOURCE 700 before any header (nftw). */
#ifndef CASTOR_TESTS_WORLD_H
#define CASTOR_TESTS_WORLD_H

#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "control/state.h"
#include "support/process.h"
#include "util/db.h"
#include "util/http_client.h"
#include "util/json.h"

/* The part of a cloud world's castor.yaml after its cloud section: a tick a second, the state and
 * token files in the run folder, the API on the port given as the format's %d, pollux allocating
 * and castor's planner renting (the includer adds its own fleet keys after it). */
#define WORLD_CONFIG_TAIL  \
    "interval: 1\n"        \
    "state: state.db\n"    \
    "launch_timeout: 60\n" \
    "api:\n"               \
    "  port: %d\n"         \
    "tokens:\n"            \
    "  node: node.token\n" \
    "  job: job.token\n"   \
    "  user: user.token\n" \
    "policy: pollux\n"     \
    "fleet:\n"             \
    "  planner: castor\n"

/* Write text to path (created with mode, truncated); -1 on failure. */
static inline int world_write_file(const char *path, const char *text, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    int ok = fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text);

    if (fd >= 0 && close(fd) != 0)
        ok = 0;
    return ok ? 0 : -1;
}

/* A port free now on 127.0.0.1, or -1: drawn from 20000 to 29499, below the kernel's ephemeral
 * range (Linux: 32768 and up), so that no other test's connection, which takes an ephemeral
 * port, can take it between the draw and the controller's bind (castor-node's rank-0 ports,
 * 29500 to 29999, left out), and checked by a bind. */
static inline int world_free_port(void)
{
    static unsigned seed;

    if (!seed)
        seed = (unsigned)getpid() ^ (unsigned)time(NULL);
    for (int i = 0; i < 200; i++) {
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        int fd = socket(AF_INET, SOCK_STREAM, 0), port = 20000 + (int)(rand_r(&seed) % 9500);
        int ok;

        if (fd < 0)
            return -1;
        a.sin_port = htons((uint16_t)port);
        ok = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
        close(fd);
        if (ok)
            return port;
    }
    return -1;
}

/* How many times text is in the file at path (0 when it cannot be read). */
static inline int world_log_count(const char *path, const char *text)
{
    char *log = proc_slurp(path);
    int n = 0;

    for (const char *p = log; p && (p = strstr(p, text)); p += strlen(text))
        n++;
    free(log);
    return n;
}

struct world_log_want {
    const char *path, *text;
    int times;
};

static inline int world_log_has(void *ctx)
{
    struct world_log_want *q = ctx;

    return world_log_count(q->path, q->text) >= q->times;
}

/* Start `bin run -c config` in folder dir with environment env, its stderr appended to log, and
 * wait up to 30 s for its log to say once more that its API listens. The pid, or -1 (it is then
 * killed). */
static inline pid_t world_start_controller(const char *bin, const char *config, const char *dir,
                                           const char *log, char *const env[])
{
    char *argv[] = {(char *)bin, "run", "-c", (char *)config, NULL};
    struct world_log_want q = {log, "API listening on",
                               world_log_count(log, "API listening on") + 1};
    pid_t pid = fork();

    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);

        if (fd < 0 || dup2(fd, 2) < 0 || chdir(dir) != 0)
            _exit(99);
        execve(bin, argv, env);
        _exit(98);
    }
    if (pid > 0 && !proc_wait_for(world_log_has, &q, 30)) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return -1;
    }
    return pid;
}

/* One request to the API on 127.0.0.1:port with a bearer token (NULL: none): the status (-1
 * without an answer), the parsed body in *out (may be NULL; NULL when it is not JSON). */
static inline long world_call(struct http_client *http, int port, const char *method,
                              const char *path, const char *token, const char *body,
                              struct jv **out)
{
    char auth[160], url[256];
    const struct http_client_header h[2] = {{"Authorization", auth},
                                            {"Content-Type", "application/json"}};
    struct http_client_request req = {.method = method, .url = url, .headers = h, .nheaders = 2};
    struct http_client_response r = {0};
    long status = -1;

    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
    snprintf(auth, sizeof(auth), "Bearer %s", token ? token : "");
    if (!token) {
        req.headers = h + 1;
        req.nheaders = 1;
    }
    req.body = body;
    req.body_len = body ? strlen(body) : 0;
    req.timeout_ms = 5000;
    if (out)
        *out = NULL;
    if (http_client_do(http, &req, &r, NULL) == 0) {
        status = r.status;
        if (out && jv_parse(r.body, r.body_len, out, NULL) < 0)
            *out = NULL;
    }
    http_client_response_clear(&r);
    return status;
}

/* SELECT count(*) ... in the state as a number; -1 when it cannot be read. */
static inline long long world_count_rows(struct state *st, const char *sql)
{
    struct db_stmt *s = NULL;
    long long n = -1;

    if (db_prepare(state_db(st), sql, &s) < 0)
        return -1;
    if (db_step(s) == DB_ROW)
        n = db_column_int(s, 0);
    db_finalize(s);
    return n;
}

static inline int world_rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Remove the folder dir and everything in it, unless CASTOR_TEST_KEEP is set. */
static inline void world_remove(const char *dir)
{
    if (!getenv("CASTOR_TEST_KEEP"))
        nftw(dir, world_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

#endif
