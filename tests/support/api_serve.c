/* api_serve.c: the controller's API as a process, for tests written in other languages: it serves
 * src/control/api.c over a state file on 127.0.0.1 and takes the daemon's part on stdin (giving a
 * job its allocation and configuration), so that a test can resize a job without the daemon.
 *
 *   castor-test-api-serve STATE_PATH        tokens from CASTOR_{NODE,JOB,USER}_TOKEN
 *
 * It prints "port N" once it listens, then reads commands, one per line, answering each with
 * "ok" or "error REASON":
 *   alloc JOB LOCAL_BSZ ACCUM_STEPS LR_GAIN NODE=REPLICAS...   the job runs with that allocation
 *                                                             and configuration (replacing both)
 *   config JOB LOCAL_BSZ ACCUM_STEPS LR_GAIN                  the configuration only
 * and stops at end of input or "quit". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "control/api.h"
#include "control/state.h"
#include "util/error.h"
#include "util/http_server.h"

#define SERVE_MAX_NODES 64

static double serve_clock(void *ctx)
{
    struct timespec ts;

    (void)ctx;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* "JOB LOCAL_BSZ ACCUM LR_GAIN" at the start of args into the out-parameters; *rest is what
 * follows. 0, or -1 when they do not parse. */
static int serve_config_args(char *args, char **job, double *bsz, int *accum, double *gain,
                             char **rest)
{
    char *save = NULL, *a, *b, *c, *end;

    if (!args)
        return -1;
    *job = strtok_r(args, " \t\n", &save);
    a = strtok_r(NULL, " \t\n", &save);
    b = strtok_r(NULL, " \t\n", &save);
    c = strtok_r(NULL, " \t\n", &save);
    if (!*job || !a || !b || !c)
        return -1;
    *bsz = strtod(a, &end);
    if (*end)
        return -1;
    *accum = (int)strtol(b, &end, 10);
    if (*end)
        return -1;
    *gain = strtod(c, &end);
    if (*end)
        return -1;
    *rest = save;
    return 0;
}

/* One command; prints its answer. */
static void serve_command(struct state *st, char *line)
{
    struct state_alloc rows[SERVE_MAX_NODES];
    char *cmd, *save = NULL, *job, *rest = NULL, *tok, *eq;
    double bsz, gain, now = serve_clock(NULL);
    int accum, rc = 0;
    size_t n = 0;

    cmd = strtok_r(line, " \t\n", &save);
    if (!cmd) {
        printf("error empty command\n");
        return;
    }
    if (strcmp(cmd, "alloc") != 0 && strcmp(cmd, "config") != 0) {
        printf("error unknown command %s\n", cmd);
        return;
    }
    if (serve_config_args(save, &job, &bsz, &accum, &gain, &rest) < 0) {
        printf("error usage: %s JOB LOCAL_BSZ ACCUM_STEPS LR_GAIN%s\n", cmd,
               cmd[0] == 'a' ? " NODE=REPLICAS..." : "");
        return;
    }
    if (cmd[0] == 'a') {
        while (rest && (tok = strtok_r(NULL, " \t\n", &rest)) != NULL) {
            eq = strchr(tok, '=');
            if (!eq || n == SERVE_MAX_NODES) {
                printf("error bad NODE=REPLICAS: %s\n", tok);
                return;
            }
            *eq = '\0';
            rows[n].node = tok;
            rows[n].replicas = atoi(eq + 1);
            rows[n].since = now;
            n++;
        }
        rc = state_job_set_state(st, job, n > 0 ? STATE_JOB_RUNNING : STATE_JOB_PENDING, now);
        if (rc == 0)
            rc = state_alloc_replace(st, job, rows, n, now);
    }
    if (rc == 0)
        rc = state_job_set_config(st, job, bsz, accum, gain);
    if (rc < 0)
        printf("error %s\n", err_str(rc));
    else
        printf("ok\n");
}

int main(int argc, char **argv)
{
    struct api_tokens tokens = {{NULL}};
    struct http_server_config hc = {0};
    struct http_server *server = NULL;
    struct state *st = NULL, *cmd_st = NULL;
    struct api_config cfg = {0};
    struct api *api = NULL;
    struct error e = {0};
    char line[4096], buf[512];
    int rc = 1;

    if (argc != 2) {
        fprintf(stderr, "usage: %s STATE_PATH\n", argv[0]);
        return 2;
    }
    if (api_tokens_from_env(&tokens, &e) < 0 || state_open(argv[1], &st, &e) < 0 ||
        state_open(argv[1], &cmd_st, &e) < 0) {
        fprintf(stderr, "castor-test-api-serve: %s\n", err_format(&e, buf, sizeof(buf)));
        goto out;
    }
    cfg.state = st;
    cfg.clock = serve_clock;
    cfg.tokens = &tokens;
    if (api_new(&cfg, &api, &e) < 0 || http_server_start(&hc, api_handle, api, &server, &e) < 0) {
        fprintf(stderr, "castor-test-api-serve: %s\n", err_format(&e, buf, sizeof(buf)));
        goto out;
    }
    api_tokens_clear(&tokens);
    printf("port %d\n", http_server_port(server));
    fflush(stdout);
    while (fgets(line, sizeof(line), stdin)) {
        if (strncmp(line, "quit", 4) == 0)
            break;
        serve_command(cmd_st, line);
        fflush(stdout);
    }
    rc = 0;
out:
    http_server_stop(server);
    api_free(api);
    state_close(cmd_st);
    state_close(st);
    api_tokens_clear(&tokens);
    return rc;
}
