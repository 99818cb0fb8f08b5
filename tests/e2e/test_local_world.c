/* test_local_world.c: the local world end to end, with real processes and signals: `castor run`
 * (world local) launches castor-node processes that run castor-job-emulator replicas of three
 * jobs submitted with `castor submit`; one job's replica crashes half way (exit 1, no
 * checkpoint); a node is preempted with a 3 s notice while every replica's checkpoint on SIGTERM
 * takes 2 s to write (so a job moved off it that started at once would start from the checkpoint
 * before, and two copies would write one: the generations' wait, docs/api.md, keeps that from
 * happening); the controller is SIGKILLed in the middle and restarted with the same
 * configuration. Then: every job finishes (the crashed one restarted from
 * its last checkpoint, its failure counted once);
 * each job's emulated training time equals an uninterrupted run's (nothing beyond the last
 * completed checkpoint lost, nothing counted twice); the restarted controller launched nothing
 * twice (tokens unique, one instance per intent); every endpoint refuses a missing or wrong token;
 * and after SIGTERM and the nodes' termination no process of the run is left. The controller runs
 * with recognisable fake AWS credentials in its environment, and no secret (those, castor's
 * tokens, the wrong token tried) appears in any file the run left (logs, the state database and
 * its WAL, the run folder, the replicas' files, the clients' output) or in the metrics, the token
 * files excepted. A second world ends with `castor teardown`: refused while the controller runs, a
 * dry run, then both castor-node instances terminated and the job kept. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/emulator.h"
#include "control/state.h"
#include "providers/local.h"
#include "sim/app.h"
#include "support/world.h"

#define TOKEN_NODE "e2e-node-token-0123456789abcdef"
#define TOKEN_JOB "e2e-job-token-0123456789abcdef"
#define TOKEN_USER "e2e-user-token-0123456789abcdef"
#define TOKEN_WRONG "e2e-wrong-token-0123456789abcdef"
#define AWS_KEY_ID "AKIAE2ESECRETKEYID01"
#define AWS_SECRET "e2eSecretAccessKey/0123456789+abcdefSECRET"
#define AWS_SESSION "e2eSessionToken0123456789abcdefSESSIONSECRET"
#define NJOBS 3
#define EPOCHS 25   /* of cifar10: about 1,000 emulated seconds on one GPU */
#define SPEED 100.0 /* emulated seconds per real second: about 10 s a job */
#define LOCAL_BSZ 128
#define STOP_S 2.0   /* real seconds a checkpoint on SIGTERM takes */
#define NOTICE_S 3.0 /* the preemption's notice: the victim's replicas checkpoint within it */
#define MAX_INST 32

static const char *const job_names[NJOBS] = {"alpha", "bravo", "charlie"};

struct world {
    char dir[64];
    char path[256]; /* scratch */
    char config[128], log[128], run_dir[128], state[128];
    pid_t pid; /* the controller */
    int port;
    double t0;
    struct http_client *http;
    struct cloud cloud; /* the test's own view of the run folder (local_preempt, terminate) */
};

static const char *wpath(struct world *w, const char *name)
{
    snprintf(w->path, sizeof(w->path), "%s/%s", w->dir, name);
    return w->path;
}

static void step(struct world *w, const char *what)
{
    fprintf(stderr, "e2e: %6.2f s: %s\n", proc_now() - w->t0, what);
}

static void write_file(const char *path, const char *text, mode_t mode)
{
    assert_int_equal(world_write_file(path, text, mode), 0);
}

/* The configuration, with more top-level settings (YAML lines) at its end. */
static void write_config_with(struct world *w, const char *more)
{
    char text[4096];

    snprintf(text, sizeof(text),
             "cluster: e2e\n"
             "world: local\n"
             "cloud:\n"
             "  run_dir: run\n" /* node_bin and url: the defaults (beside castor; its API) */
             "  offers:\n"
             "    - name: box.2gpu/spot\n"
             "      gpus: 2\n"
             "      spot: true\n"
             "      price: 1.5\n"
             "      capacity: 4\n"
             "  grace: 2\n"
             "  env:\n"
             "    CASTOR_NODE_HEARTBEAT_S: 0.3\n"
             "    CASTOR_NODE_GRACE_S: 3\n"
             "    CASTOR_NODE_TIMEOUT_S: 2\n"
             "    CASTOR_NODE_BACKOFF_MAX_S: 0.5\n"
             "interval: 1\n"
             "state: state.db\n"
             "launch_timeout: 30\n"
             "api:\n"
             "  port: %d\n"
             /* every node, replica and this test share 127.0.0.1, one client to the rate limit,
              * which test_ratelimit and the route walk check on their own: off here */
             "  rate_limit: 0\n"
             /* each castor-node acts with its own token (its registration's answer) */
             "  node_tokens: per-node\n"
             "tokens:\n"
             "  node: node.token\n"
             "  job: job.token\n"
             "  user: user.token\n"
             "policy: pollux\n"
             "fleet:\n"
             "  planner: fixed\n"
             "  nodes: 2\n"
             "%s",
             w->port, more);
    write_file(w->config, text, 0600);
}

static void write_config(struct world *w)
{
    write_config_with(w, "");
}

static double uninterrupted_s(void);

/* A job file for `castor submit`: the emulator on one GPU at a fixed batch, its own workdir, a
 * checkpoint on SIGTERM that takes STOP_S to write (a large model's: a job moved elsewhere must
 * not start from the one before it); the last job crashes once half way
 * (CASTOR_EMULATOR_CRASH_AT). */
static void write_job(struct world *w, const char *name)
{
    char text[2048], workdir[160], file[160], crash[64] = "";

    snprintf(workdir, sizeof(workdir), "%s/work-%s", w->dir, name);
    assert_int_equal(mkdir(workdir, 0700), 0);
    if (strcmp(name, job_names[NJOBS - 1]) == 0)
        snprintf(crash, sizeof(crash), "  CASTOR_EMULATOR_CRASH_AT: \"%.0f\"\n",
                 uninterrupted_s() / 2);
    snprintf(text, sizeof(text),
             "name: %s\n"
             "command: [\"%s\", cifar10]\n"
             "workdir: %s\n"
             "env:\n"
             "  CASTOR_EMULATOR_SPEED: \"%g\"\n"
             "  CASTOR_EMULATOR_EPOCHS: \"%d\"\n"
             "  CASTOR_EMULATOR_REPORT_S: \"20\"\n"
             "  CASTOR_EMULATOR_FINISH_WAIT_S: \"30\"\n"
             "  CASTOR_EMULATOR_STOP_S: \"%g\"\n"
             "%s"
             "init_batch_size: %d\n"
             "max_batch_size: %d\n"
             "max_local_bsz: %d\n"
             "max_replicas: 1\n"
             "checkpoint_interval: 50\n",
             name, CASTOR_EMULATOR_BIN, workdir, SPEED, EPOCHS, STOP_S, crash, LOCAL_BSZ, LOCAL_BSZ,
             LOCAL_BSZ);
    snprintf(file, sizeof(file), "%s/%s.yaml", w->dir, name);
    write_file(file, text, 0600);
}

/* A free port for the API, the token files and the configuration. */
static void prepare(struct world *w)
{
    w->port = world_free_port();
    assert_true(w->port > 0);
    write_file(wpath(w, "node.token"), TOKEN_NODE "\n", 0600);
    write_file(wpath(w, "job.token"), TOKEN_JOB "\n", 0600);
    write_file(wpath(w, "user.token"), TOKEN_USER "\n", 0600);
    write_config(w);
}

static void start_controller(struct world *w)
{
    static const char *const env[] = {"PATH=/usr/bin:/bin", "AWS_ACCESS_KEY_ID=" AWS_KEY_ID,
                                      "AWS_SECRET_ACCESS_KEY=" AWS_SECRET,
                                      "AWS_SESSION_TOKEN=" AWS_SESSION, NULL};

    w->pid = world_start_controller(CASTOR_BIN, w->config, w->dir, w->log, (char *const *)env);
    assert_true(w->pid > 0);
}

/* One request with token (NULL: none); the status, the parsed body in *out (may be NULL). */
static long call(struct world *w, const char *method, const char *path, const char *token,
                 const char *body, struct jv **out)
{
    return world_call(w->http, w->port, method, path, token, body, out);
}

/* Append the file at from to the run folder's file name. */
static void append_file(struct world *w, const char *name, const char *from)
{
    char *text = proc_slurp(from);
    int fd = open(wpath(w, name), O_WRONLY | O_CREAT | O_APPEND, 0600);

    assert_true(fd >= 0);
    if (text)
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    assert_int_equal(close(fd), 0);
    free(text);
}

/* Run castor with argv and env; its exit status, its stdout (and stderr when both) in *out (may
 * be NULL), and a copy of it appended to clients.out, which is searched for secrets at the end. */
static int run_castor(struct world *w, char *const argv[], char *const env[], int both, char **out)
{
    char outpath[160];
    int status;
    pid_t pid;

    snprintf(outpath, sizeof(outpath), "%s/client.out", w->dir);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(outpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);

        if (fd < 0 || dup2(fd, 1) < 0 || (both && dup2(fd, 2) < 0))
            _exit(99);
        execve(CASTOR_BIN, argv, env);
        _exit(98);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (out)
        *out = proc_slurp(outpath);
    append_file(w, "clients.out", outpath);
    unlink(outpath);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Run the castor client (submit, jobs ...) with the user token; its exit status, its stdout in
 * *out (may be NULL). */
static int client(struct world *w, char **out, const char *a1, const char *a2)
{
    char urlenv[96];
    char *env[] = {urlenv, "CASTOR_USER_TOKEN=" TOKEN_USER, "PATH=/usr/bin:/bin", NULL};
    char *argv[] = {CASTOR_BIN, (char *)a1, (char *)a2, NULL};

    snprintf(urlenv, sizeof(urlenv), "CASTOR_URL=http://127.0.0.1:%d", w->port);
    return run_castor(w, argv, env, 0, out);
}

/* Run `castor` with args (NULL-terminated, after the program's name), without a URL or token in
 * its environment; its exit status, its stdout and stderr in *out (may be NULL). */
static int castor_cmd(struct world *w, char **out, const char *const *args)
{
    char *argv[8] = {CASTOR_BIN};
    char *env[] = {"PATH=/usr/bin:/bin", NULL};
    int n = 1;

    for (; args[n - 1] && n < 7; n++)
        argv[n] = (char *)args[n - 1];
    argv[n] = NULL;
    return run_castor(w, argv, env, 1, out);
}

/* The state of job name by `castor jobs --json` ("" when not listed), and its checkpoint
 * progress from the API. */
static void job_state(struct world *w, const char *name, char *state, size_t size,
                      double *checkpoint)
{
    struct jv *v = NULL, *one = NULL;
    char *out = NULL, path[128];
    const struct jv *jobs;

    state[0] = '\0';
    *checkpoint = NAN;
    if (client(w, &out, "jobs", "--json") == 0 && out &&
        jv_parse(out, strlen(out), &v, NULL) == 0) {
        jobs = v; /* --json prints the API's list of jobs */
        for (size_t i = 0; i < jv_size(jobs); i++)
            if (strcmp(jv_string_value(jv_get(jv_at(jobs, i), "name")), name) == 0)
                snprintf(state, size, "%s", jv_string_value(jv_get(jv_at(jobs, i), "state")));
    }
    snprintf(path, sizeof(path), "/v1/jobs/%s", name);
    if (call(w, "GET", path, TOKEN_USER, NULL, &one) == 200)
        jv_number_value(jv_get(one, "checkpoint_progress"), checkpoint);
    jv_free(one);
    jv_free(v);
    free(out);
}

/* Every job in state want, each with a checkpoint recorded when want is "running". */
static int all_jobs(struct world *w, const char *want)
{
    for (int i = 0; i < NJOBS; i++) {
        char st[32];
        double ck;

        job_state(w, job_names[i], st, sizeof(st), &ck);
        if (getenv("CASTOR_TEST_VERBOSE"))
            fprintf(stderr, "e2e: %s: %s, checkpoint %g\n", job_names[i], st, ck);
        if (strcmp(st, want) != 0 || (strcmp(want, "running") == 0 && !(ck > 0)))
            return 0;
    }
    return 1;
}

static int all_running(void *ctx)
{
    return all_jobs(ctx, "running");
}

static int all_finished(void *ctx)
{
    return all_jobs(ctx, "finished");
}

/* The node job name runs on now, into id (CLOUD_ID_MAX bytes); 0 when it has none. */
static int job_node(struct world *w, const char *name, char *id)
{
    struct jv *v = NULL;
    char path[128];
    const char *s;
    int ok;

    snprintf(path, sizeof(path), "/v1/jobs/%s/allocation", name);
    ok = call(w, "GET", path, TOKEN_JOB, NULL, &v) == 200 &&
         (s = jv_string_value(jv_get(jv_at(jv_get(v, "nodes"), 0), "instance_id"))) != NULL;
    if (ok)
        snprintf(id, CLOUD_ID_MAX, "%s", s);
    jv_free(v);
    return ok;
}

/* The run folder's instance records: ids, tokens and pids. */
struct records {
    char id[MAX_INST][CLOUD_ID_MAX];
    char token[MAX_INST][CLOUD_ID_MAX];
    long pid[MAX_INST];
    int n;
};

/* The value of key's line ("key=value") in a record into buf (CLOUD_ID_MAX bytes). */
static void rec_field(const char *text, const char *key, char *buf)
{
    size_t k = strlen(key);

    buf[0] = '\0';
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, key, k) == 0 && p[k] == '=') {
            snprintf(buf, CLOUD_ID_MAX, "%.*s", (int)strcspn(p + k + 1, "\n"), p + k + 1);
            return;
        }
}

static void read_records(struct world *w, struct records *r)
{
    DIR *d = opendir(w->run_dir);
    struct dirent *de;

    assert_non_null(d);
    memset(r, 0, sizeof(*r));
    while ((de = readdir(d))) {
        size_t len = strlen(de->d_name);
        char path[512], pid[CLOUD_ID_MAX], *text;

        if (len < 10 || strcmp(de->d_name + len - 9, ".instance") != 0)
            continue;
        assert_true(r->n < MAX_INST);
        snprintf(path, sizeof(path), "%s/%s", w->run_dir, de->d_name);
        text = proc_slurp(path);
        assert_non_null(text);
        rec_field(text, "id", r->id[r->n]);
        rec_field(text, "token", r->token[r->n]);
        rec_field(text, "pid", pid);
        r->pid[r->n] = strtol(pid, NULL, 10);
        free(text);
        r->n++;
    }
    closedir(d);
}

/* Processes whose session is sid (an instance: its node and everything under it). */
static int session_members(long sid)
{
    DIR *d = opendir("/proc");
    struct dirent *de;
    int n = 0;

    assert_non_null(d);
    while ((de = readdir(d))) {
        char path[300], buf[1024], *p;
        long pid = strtol(de->d_name, NULL, 10), v[4] = {0};
        FILE *f;
        size_t len;

        if (pid <= 0)
            continue;
        snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
        if (!(f = fopen(path, "r")))
            continue;
        len = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[len] = '\0';
        /* after "pid (comm) S": ppid pgrp session */
        if ((p = strrchr(buf, ')')) && p[1] == ' ' && p[2] != 'Z' &&
            sscanf(p + 3, "%ld %ld %ld", &v[0], &v[1], &v[2]) == 3 && v[2] == sid)
            n++;
    }
    closedir(d);
    return n;
}

/* Reap whatever came to this process (a subreaper) as an orphan. */
static void reap_all(void)
{
    int status;

    while (waitpid(-1, &status, WNOHANG) > 0)
        ;
}

/* The emulated seconds one uninterrupted run of a job takes on one GPU at the fixed batch. */
static double uninterrupted_s(void)
{
    struct app *a = NULL;
    struct emu_setup u = {0};
    struct emu_state s = {0};

    assert_int_equal(app_load(CASTOR_DATADIR "/profiles/cifar10", &a, NULL), 0);
    assert_int_equal(emu_place_even(1, 1, &u), 0);
    assert_int_equal(emu_configure(a, &u, LOCAL_BSZ, 0), 0);
    assert_int_equal(emu_advance(a, &u, EPOCHS, &s, 1e9, NULL), 0);
    assert_int_equal(s.epoch, EPOCHS);
    app_free(a);
    return s.emulated_s;
}

/* One of rank 0's log lines about a job: a start or a checkpoint, its number, at what progress. */
struct ev {
    int start;
    long long number; /* the checkpoint written, or the one a start resumed from (0: none) */
    double progress;
};

/* The number after "number " in text, or -1 when there is none. */
static long long ev_number(const char *text)
{
    const char *at = strstr(text, "number ");

    return at ? strtoll(at + 7, NULL, 10) : -1;
}

/* Call fn with each line about job name in every node's log, node by node (the log's file
 * name with it). */
static void each_job_line(struct world *w, const char *name,
                          void (*fn)(void *ctx, const char *file, const char *line), void *ctx)
{
    DIR *d = opendir(w->run_dir);
    struct dirent *de;
    char needle[96];

    snprintf(needle, sizeof(needle), "\"job\":\"%s\"", name);
    assert_non_null(d);
    while ((de = readdir(d))) {
        size_t len = strlen(de->d_name);
        char path[512], *text, *line, *save = NULL;

        if (len < 5 || strcmp(de->d_name + len - 4, ".log") != 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", w->run_dir, de->d_name);
        if (!(text = proc_slurp(path)))
            continue;
        for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
            if (strstr(line, needle))
                fn(ctx, de->d_name, line);
        free(text);
    }
    closedir(d);
}

/* Rank 0's starts and checkpoints of one job, as each_job_line finds them. */
struct evs {
    const char *name;
    struct ev *v;
    size_t n, cap;
};

static void collect_ev(void *ctx, const char *file, const char *line)
{
    static const char start_text[] = "rank 0: start: progress ";
    static const char ckpt_text[] = "rank 0: checkpoint (";
    struct evs *e = ctx;
    const char *s = strstr(line, start_text), *c = strstr(line, ckpt_text);

    (void)file;
    if (!s && !c)
        return;
    if (e->n == e->cap) {
        e->cap = e->cap ? 2 * e->cap : 64;
        e->v = realloc(e->v, e->cap * sizeof(*e->v));
        assert_non_null(e->v);
    }
    e->v[e->n].start = s != NULL;
    e->v[e->n].number = ev_number(s ? s : c);
    e->v[e->n].progress =
        s ? strtod(s + strlen(start_text), NULL) : strtod(strstr(c, "progress ") + 9, NULL);
    if (e->v[e->n].number < 0)
        fail_msg("e2e: %s: a rank 0 line without a checkpoint number: %s", e->name, line);
    e->n++;
}

/*
 * Rank 0's starts of job name in every node's log: how many, how many resumed from a checkpoint
 * (progress > 0), and how many faults. Checkpoints are numbered over the job's life, so the check
 * needs no order between lines stamped by different nodes: a start from a stale checkpoint makes
 * a number written twice (its run writes at least the last checkpoint), and a start whose
 * progress is not that of the checkpoint it names resumed somewhere else.
 */
static void replica_starts(struct world *w, const char *name, int *starts, int *resumed,
                           int *faults)
{
    struct evs e = {.name = name};
    const struct ev *evs;
    size_t n;

    *starts = *resumed = *faults = 0;
    each_job_line(w, name, collect_ev, &e);
    evs = e.v;
    n = e.n;
    for (size_t i = 0; i < n; i++) {
        if (!evs[i].start) {
            for (size_t j = i + 1; j < n; j++)
                if (!evs[j].start && evs[j].number == evs[i].number) {
                    fprintf(stderr, "e2e: %s: checkpoint number %lld written twice (%.6f, %.6f)\n",
                            name, evs[i].number, evs[i].progress, evs[j].progress);
                    (*faults)++;
                }
            continue;
        }
        (*starts)++;
        *resumed += evs[i].progress > 0;
        for (size_t j = 0; j < n; j++)
            if (!evs[j].start && evs[j].number == evs[i].number &&
                evs[j].progress != evs[i].progress) {
                fprintf(stderr, "e2e: %s started at %.6f from checkpoint %lld, written at %.6f\n",
                        name, evs[i].progress, evs[i].number, evs[j].progress);
                (*faults)++;
            }
        if (evs[i].number == 0 && evs[i].progress != 0) {
            fprintf(stderr, "e2e: %s started at %.6f without a checkpoint\n", name,
                    evs[i].progress);
            (*faults)++;
        }
    }
    free(e.v);
}

static void print_line(void *ctx, const char *file, const char *line)
{
    (void)ctx;
    if (!strstr(line, "report not sent"))
        fprintf(stderr, "%s: %s\n", file, line);
}

/* Every node log's lines about job name on stderr, node by node: what a failed check needs (the
 * run folder is gone after the test). */
static void print_job_lines(struct world *w, const char *name)
{
    each_job_line(w, name, print_line, NULL);
}

/* Every endpoint without a token and with a wrong one: 401 each time. */
static void tokens_refused(struct world *w)
{
    static const struct {
        const char *method, *path, *body;
    } ep[] = {
        {"POST", "/v1/nodes", "{\"instance_id\":\"x-1\",\"gpus\":1}"},
        {"POST", "/v1/nodes/local-1/heartbeat", "{}"},
        {"GET", "/v1/nodes/local-1/assignment", NULL},
        {"POST", "/v1/nodes/local-1/notice", "{}"},
        {"POST", "/v1/jobs/alpha/reports", "{\"configs\":[]}"},
        {"POST", "/v1/jobs/alpha/checkpoint", "{\"progress\":1}"},
        {"POST", "/v1/jobs/alpha/finished", "{}"},
        {"GET", "/v1/jobs/alpha/allocation", NULL},
        {"POST", "/v1/jobs", "{\"name\":\"intruder\"}"},
        {"GET", "/v1/jobs", NULL},
        {"GET", "/v1/jobs/alpha", NULL},
        {"DELETE", "/v1/jobs/alpha", NULL},
        {"GET", "/v1/fleet", NULL},
        {"GET", "/metrics", NULL},
    };

    for (size_t i = 0; i < sizeof(ep) / sizeof(ep[0]); i++) {
        long none = call(w, ep[i].method, ep[i].path, NULL, ep[i].body, NULL);
        long wrong = call(w, ep[i].method, ep[i].path, TOKEN_WRONG, ep[i].body, NULL);

        if (none != 401 || wrong != 401)
            fail_msg("%s %s: %ld without a token, %ld with a wrong one", ep[i].method, ep[i].path,
                     none, wrong);
    }
}

/* The metrics text (user token: the run has no metrics token) into the run folder's
 * metrics.txt. */
static void save_metrics(struct world *w)
{
    char auth[128], url[256];
    const struct http_client_header h[1] = {{"Authorization", auth}};
    struct http_client_request req = {
        .method = "GET", .url = url, .headers = h, .nheaders = 1, .timeout_ms = 5000};
    struct http_client_response r = {0};

    snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", w->port);
    snprintf(auth, sizeof(auth), "Bearer %s", TOKEN_USER);
    assert_int_equal(http_client_do(w->http, &req, &r, NULL), 0);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "castor_jobs"));
    write_file(wpath(w, "metrics.txt"), r.body, 0600);
    http_client_response_clear(&r);
}

/* The secrets searched for, and what the search found (nftw's callback has no context). */
static const char *const secrets[] = {TOKEN_NODE, TOKEN_JOB,  TOKEN_USER, TOKEN_WRONG,
                                      AWS_KEY_ID, AWS_SECRET, AWS_SESSION};
static char secret_found[512];
static int files_searched;

/* Every byte of a regular file searched for every secret; token files (mode 600, checked) are
 * where the tokens belong and are skipped. */
static int search_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    const char *dot = strrchr(path, '.');
    FILE *f;
    char *buf;
    size_t n;

    (void)ftw;
    if (flag != FTW_F || !S_ISREG(sb->st_mode))
        return 0;
    if (dot && strcmp(dot, ".token") == 0) {
        if (sb->st_mode & 077)
            snprintf(secret_found, sizeof(secret_found), "%s is readable by others", path);
        return 0;
    }
    buf = malloc((size_t)sb->st_size + 1);
    f = fopen(path, "rb");
    assert_non_null(buf);
    if (!f) {
        free(buf);
        return 0; /* gone since it was listed (a node's file at its end) */
    }
    n = fread(buf, 1, (size_t)sb->st_size, f);
    fclose(f);
    files_searched++;
    for (size_t k = 0; k < sizeof(secrets) / sizeof(secrets[0]) && !secret_found[0]; k++) {
        size_t len = strlen(secrets[k]);

        for (size_t i = 0; i + len <= n; i++)
            if (memcmp(buf + i, secrets[k], len) == 0) {
                snprintf(secret_found, sizeof(secret_found), "secret %zu in %s at byte %zu", k,
                         path, i);
                break;
            }
    }
    free(buf);
    return 0;
}

static int world_setup(void **state)
{
    struct world *w = calloc(1, sizeof(*w));
    struct local_offer offer = {.name = "box.2gpu/spot", .gpus = 2, .spot = 1, .capacity = 4};
    struct local_config lc = {0};

    if (!w)
        return -1;
    w->t0 = proc_now();
    snprintf(w->dir, sizeof(w->dir), "/tmp/castor-e2e-XXXXXX");
    if (!mkdtemp(w->dir) || http_client_new(&w->http) < 0)
        return -1;
    snprintf(w->config, sizeof(w->config), "%s/castor.yaml", w->dir);
    snprintf(w->log, sizeof(w->log), "%s/castor.log", w->dir);
    snprintf(w->run_dir, sizeof(w->run_dir), "%s/run", w->dir);
    snprintf(w->state, sizeof(w->state), "%s/state.db", w->dir);
    lc.run_dir = w->run_dir;
    lc.node_bin = CASTOR_NODE_BIN;
    lc.url = "http://127.0.0.1:1";
    lc.offers = &offer;
    lc.noffers = 1;
    lc.grace_s = 2;
    if (cloud_local_new(&lc, &w->cloud) < 0)
        return -1;
    /* orphaned nodes (their controller SIGKILLed) come to this process, which reaps them */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    *state = w;
    return 0;
}

static int world_teardown(void **state)
{
    struct world *w = *state;
    struct cloud_instance *inst = NULL;
    size_t n = 0;

    if (w->pid > 0) {
        kill(w->pid, SIGKILL);
        waitpid(w->pid, NULL, 0);
    }
    /* whatever failed: leave no node behind */
    if (cloud_list(&w->cloud, "e2e", &inst, &n) == 0) {
        for (size_t i = 0; i < n; i++)
            if (inst[i].state != CLOUD_GONE)
                local_preempt(&w->cloud, inst[i].id, 0);
        free(inst);
    }
    reap_all();
    if (getenv("CASTOR_TEST_VERBOSE")) {
        proc_dump_log("castor run", w->log);
    }
    cloud_free(&w->cloud);
    http_client_free(w->http);
    if (getenv("CASTOR_TEST_KEEP")) /* for a look at a run: its logs, state and files */
        fprintf(stderr, "e2e: kept %s\n", w->dir);
    else
        world_remove(w->dir);
    free(w);
    return 0;
}

static int nodes_gone(void *ctx)
{
    struct world *w = ctx;
    struct cloud_instance *inst = NULL;
    size_t n = 0;
    int live = 0;

    reap_all();
    if (cloud_list(&w->cloud, "e2e", &inst, &n) < 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        live += inst[i].state != CLOUD_GONE;
    free(inst);
    return live == 0;
}

static void local_world__jobs_survive_a_preemption_and_a_controller_crash(void **state)
{
    struct world *w = *state;
    struct cloud_instance *inst = NULL;
    struct records rec;
    struct state *st = NULL;
    char victim[CLOUD_ID_MAX] = "", on_victim[NJOBS] = {0};
    double expect_s = uninterrupted_s();
    size_t n = 0;
    int status;

    prepare(w);
    for (int i = 0; i < NJOBS; i++)
        write_job(w, job_names[i]);

    step(w, "start the controller");
    start_controller(w);
    for (int i = 0; i < NJOBS; i++) {
        char file[160];

        snprintf(file, sizeof(file), "%s/%s.yaml", w->dir, job_names[i]);
        assert_int_equal(client(w, NULL, "submit", file), 0);
    }
    step(w, "three jobs submitted; waiting for nodes and replicas");
    assert_true(proc_wait_for(all_running, w, 40));
    step(w, "every job runs and has checkpointed");

    /* the victim: the node of the first job; every job on it must move and resume */
    assert_true(job_node(w, job_names[0], victim));
    for (int i = 0; i < NJOBS; i++) {
        char id[CLOUD_ID_MAX];

        on_victim[i] = job_node(w, job_names[i], id) && strcmp(id, victim) == 0;
    }
    step(w, "preempt the first job's node with a 3 s notice (its replicas' checkpoints take 2 s)");
    assert_int_equal(local_preempt(&w->cloud, victim, NOTICE_S), 0);
    proc_sleep(0.5);
    step(w, "SIGKILL the controller");
    kill(w->pid, SIGKILL);
    assert_int_equal(waitpid(w->pid, &status, 0), w->pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    w->pid = 0;
    proc_sleep(0.5);
    step(w, "restart it with the same configuration");
    start_controller(w);

    assert_true(proc_wait_for(all_finished, w, 60));
    step(w, "every job finished");

    /* nothing beyond the last checkpoint lost, nothing done twice: each job's emulated training
     * time is one uninterrupted run's (the configuration is fixed: one GPU, batch 128) */
    for (int i = 0; i < NJOBS; i++) {
        char file[200];
        struct emu_state s;
        int starts, resumed, faults;

        snprintf(file, sizeof(file), "%s/work-%s/%s", w->dir, job_names[i], EMU_DONE_FILE);
        assert_int_equal(emu_checkpoint_read(file, "cifar10", &s, NULL), 0);
        assert_int_equal(s.epoch, EPOCHS);
        if (fabs(s.emulated_s - expect_s) > 1e-6 * expect_s)
            fail_msg("%s: %.6f emulated seconds, an uninterrupted run takes %.6f", job_names[i],
                     s.emulated_s, expect_s);
        replica_starts(w, job_names[i], &starts, &resumed, &faults);
        if (faults)
            print_job_lines(w, job_names[i]);
        if (faults)
            fail_msg("%s: %d starts, %d of them or their checkpoints out of sequence (a start "
                     "from a stale checkpoint, or at progress no checkpoint had)",
                     job_names[i], starts, faults);
        if (on_victim[i] && (starts < 2 || resumed < 1))
            fail_msg("%s ran on the preempted node: %d starts, %d from a checkpoint", job_names[i],
                     starts, resumed);
        if (i == NJOBS - 1 && (starts < 2 || resumed < 1))
            fail_msg("%s crashed half way: %d starts, %d from a checkpoint", job_names[i], starts,
                     resumed);
    }
    /* the crash was reported, counted once, and the job restarted rather than failed */
    {
        struct jv *v = NULL;
        long long failures = -1;
        char path[64];

        snprintf(path, sizeof(path), "/v1/jobs/%s", job_names[NJOBS - 1]);
        assert_int_equal(call(w, "GET", path, TOKEN_USER, NULL, &v), 200);
        assert_int_equal(jv_integer_value(jv_get(v, "failures"), &failures), 0);
        assert_int_equal(failures, 1);
        assert_non_null(strstr(jv_string_value(jv_get(v, "failure")), "exited with status 1"));
        jv_free(v);
    }
    /* and its owner reads the story with `castor events` */
    {
        char *out = NULL;

        assert_int_equal(client(w, &out, "events", job_names[NJOBS - 1]), 0);
        if (!out || !strstr(out, "submitted") || !strstr(out, "placed") ||
            !strstr(out, "exited with status 1: its replicas restart") || !strstr(out, "finished"))
            fail_msg("castor events %s:\n%s", job_names[NJOBS - 1], out ? out : "(none)");
        free(out);
    }
    step(w, "every start resumed at the last checkpoint, the preempted and the crashed jobs "
            "included (the crash counted once); emulated times equal uninterrupted runs'");

    tokens_refused(w);
    step(w, "a missing or wrong token is refused with 401 on every endpoint");

    save_metrics(w);
    step(w, "SIGTERM the controller");
    kill(w->pid, SIGTERM);
    status = proc_wait_exit(w->pid, 20);
    w->pid = 0;
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    /* the restarted controller launched nothing twice: one record per intent, tokens unique */
    read_records(w, &rec);
    assert_true(rec.n >= 3); /* two nodes, and the preempted one's replacement */
    for (int i = 0; i < rec.n; i++)
        for (int k = 0; k < i; k++)
            if (strcmp(rec.token[i], rec.token[k]) == 0)
                fail_msg("%s and %s share the launch token %s", rec.id[i], rec.id[k], rec.token[i]);
    assert_int_equal(state_open(w->state, &st, NULL), 0);
    assert_int_equal(world_count_rows(st, "SELECT count(*) FROM launch_intents"), rec.n);
    assert_int_equal(
        world_count_rows(st, "SELECT count(*) FROM launch_intents WHERE state='launched'"), rec.n);
    assert_int_equal(world_count_rows(st, "SELECT count(*) FROM jobs WHERE state='finished'"),
                     NJOBS);
    state_close(st);

    step(w, "terminate the nodes");
    assert_int_equal(cloud_list(&w->cloud, "e2e", &inst, &n), 0);
    for (size_t i = 0; i < n; i++)
        if (inst[i].state != CLOUD_GONE)
            assert_int_equal(cloud_terminate(&w->cloud, "e2e", inst[i].id), 0);
    free(inst);
    assert_true(proc_wait_for(nodes_gone, w, 20));
    reap_all();
    for (int i = 0; i < rec.n; i++) {
        if (rec.pid[i] > 0 && proc_alive((pid_t)rec.pid[i]))
            fail_msg("node %s (pid %ld) is still alive", rec.id[i], rec.pid[i]);
        if (rec.pid[i] > 0 && session_members(rec.pid[i]) > 0)
            fail_msg("node %s left %d processes in its session", rec.id[i],
                     session_members(rec.pid[i]));
    }
    step(w, "no node or replica process left");

    /* no secret in any file the run left: logs, state.db (its rows are its bytes), the run
     * folder, the replicas' workdirs, the clients' output, the metrics */
    assert_int_equal(nftw(w->dir, search_entry, 16, FTW_PHYS), 0);
    if (secret_found[0])
        fail_msg("%s", secret_found);
    assert_true(files_searched >= 6);
    step(w, "no secret in any log, state row, metric or output of the run");
}

/* Nodes in the cloud's records that are not gone. */
static int live_nodes(struct world *w)
{
    struct cloud_instance *inst = NULL;
    size_t n = 0;
    int live = 0;

    reap_all();
    if (cloud_list(&w->cloud, "e2e", &inst, &n) < 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        live += inst[i].state != CLOUD_GONE;
    free(inst);
    return live;
}

static int two_nodes_ready(void *ctx)
{
    struct world *w = ctx;
    struct jv *v = NULL;
    int ready = 0;

    if (call(w, "GET", "/v1/fleet", TOKEN_USER, NULL, &v) == 200)
        for (size_t i = 0; i < jv_size(jv_get(v, "nodes")); i++)
            ready += strcmp(jv_string_value(jv_get(jv_at(jv_get(v, "nodes"), i), "state")),
                            "ready") == 0;
    jv_free(v);
    return ready == 2;
}

/*
 * The end of a cluster: the controller runs its fixed fleet of two castor-node processes and is
 * stopped (SIGTERM leaves the instances, as a controller restarting would want); `castor teardown`
 * is refused while the controller runs, says what it would do without --yes and changes nothing,
 * then with --yes terminates both instances (their processes gone, their nodes terminated in the
 * state) and keeps the job.
 */
static void local_world__teardown_ends_the_cluster(void **state)
{
    struct world *w = *state;
    const char *const dry[] = {"teardown", "-c", w->config, NULL};
    const char *const yes[] = {"teardown", "-c", w->config, "--yes", NULL};
    struct records rec;
    struct state *st = NULL;
    char *out = NULL, file[160];
    int status;

    prepare(w);
    write_job(w, job_names[0]);
    start_controller(w);
    snprintf(file, sizeof(file), "%s/%s.yaml", w->dir, job_names[0]);
    assert_int_equal(client(w, NULL, "submit", file), 0);
    assert_true(proc_wait_for(two_nodes_ready, w, 40));
    step(w, "two nodes ready");

    assert_int_equal(castor_cmd(w, &out, yes), 1);
    if (!strstr(out, "another castor") || !strstr(out, "stop it first"))
        fail_msg("teardown while the controller runs: %s", out);
    free(out);
    assert_int_equal(live_nodes(w), 2);
    step(w, "teardown refused while the controller runs");

    kill(w->pid, SIGTERM);
    status = proc_wait_exit(w->pid, 20);
    w->pid = 0;
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    proc_sleep(0.5);
    assert_int_equal(live_nodes(w), 2); /* a stopped controller leaves its nodes */

    assert_int_equal(castor_cmd(w, &out, dry), 0);
    if (!strstr(out, "would terminate") || !strstr(out, "cluster e2e: 2 instances"))
        fail_msg("teardown without --yes: %s", out);
    free(out);
    assert_int_equal(live_nodes(w), 2);
    step(w, "a dry run changes nothing");

    assert_int_equal(castor_cmd(w, &out, yes), 0);
    if (!strstr(out, "cluster e2e: 2 of 2 instances terminated") || !strstr(out, "1 jobs kept"))
        fail_msg("teardown --yes: %s", out);
    free(out);
    assert_true(proc_wait_for(nodes_gone, w, 20));
    read_records(w, &rec);
    for (int i = 0; i < rec.n; i++)
        if (rec.pid[i] > 0 && proc_alive((pid_t)rec.pid[i]))
            fail_msg("node %s (pid %ld) is still alive", rec.id[i], rec.pid[i]);
    assert_int_equal(state_open(w->state, &st, NULL), 0);
    assert_int_equal(world_count_rows(st, "SELECT count(*) FROM nodes WHERE state != 'terminated'"),
                     0);
    assert_int_equal(world_count_rows(st, "SELECT count(*) FROM jobs WHERE state IN ('pending', "
                                          "'running')"),
                     1);
    state_close(st);
    step(w, "teardown --yes: both instances terminated, their processes gone, the job kept");
}

static int first_job_checkpointed(void *ctx)
{
    struct world *w = ctx;
    char st[32];
    double ck;

    job_state(w, job_names[0], st, sizeof(st), &ck);
    return strcmp(st, "running") == 0 && ck > 0;
}

static int job_finished(void *ctx)
{
    struct world *w = ctx;
    char st[32];
    double ck;

    job_state(w, job_names[0], st, sizeof(st), &ck);
    return strcmp(st, "finished") == 0;
}

/* The pid of instance id's castor-node from the run folder's records; 0 when not found. */
static long node_pid(struct world *w, const char *id)
{
    struct records rec;

    read_records(w, &rec);
    for (int i = 0; i < rec.n; i++)
        if (strcmp(rec.id[i], id) == 0)
            return rec.pid[i];
    return 0;
}

/*
 * A node that stops answering while its replica runs on (castor-node SIGSTOPped: a hung agent or
 * a cut network, as the controller sees it): after heartbeat_timeout (3 s) the controller fences
 * it: the instance is terminated (the local cloud SIGKILLs its session after its grace) and the
 * job moves only once it is gone, so its old replica never writes beside the new one. The job
 * finishes with an uninterrupted run's emulated time, every start from the last checkpoint;
 * /metrics counts one silent node; the job's events say why it moved.
 */
static void local_world__a_silent_node_is_fenced_and_its_job_moves(void **state)
{
    struct world *w = *state;
    char id[CLOUD_ID_MAX], file[200], *out = NULL;
    struct emu_state s;
    int starts, resumed, faults;
    long pid;

    prepare(w);
    write_config_with(w, "heartbeat_timeout: 3\n");
    write_job(w, job_names[0]);
    start_controller(w);
    snprintf(file, sizeof(file), "%s/%s.yaml", w->dir, job_names[0]);
    assert_int_equal(client(w, NULL, "submit", file), 0);
    assert_true(proc_wait_for(two_nodes_ready, w, 40));
    assert_true(proc_wait_for(first_job_checkpointed, w, 40));
    assert_true(job_node(w, job_names[0], id));
    pid = node_pid(w, id);
    assert_true(pid > 0);
    assert_int_equal(kill((pid_t)pid, SIGSTOP), 0);
    step(w, "the job's node stopped (SIGSTOP): its replica runs on, its agent is silent");
    assert_true(proc_wait_for(job_finished, w, 60));
    step(w, "the job finished elsewhere");
    assert_true(proc_wait_gone((pid_t)pid, 10)); /* the fence: the instance was terminated */

    snprintf(file, sizeof(file), "%s/work-%s/%s", w->dir, job_names[0], EMU_DONE_FILE);
    assert_int_equal(emu_checkpoint_read(file, "cifar10", &s, NULL), 0);
    assert_int_equal(s.epoch, EPOCHS);
    if (fabs(s.emulated_s - uninterrupted_s()) > 1e-6 * uninterrupted_s())
        fail_msg("%.6f emulated seconds, an uninterrupted run takes %.6f", s.emulated_s,
                 uninterrupted_s());
    replica_starts(w, job_names[0], &starts, &resumed, &faults);
    if (faults || starts < 2 || resumed < 1)
        print_job_lines(w, job_names[0]);
    if (faults || starts < 2 || resumed < 1)
        fail_msg("%d starts, %d from a checkpoint, %d out of sequence", starts, resumed, faults);
    {
        char url[96];
        struct http_client_request req = {.method = "GET", .url = url};
        struct http_client_response r = {0};
        const struct http_client_header h = {"Authorization", "Bearer " TOKEN_USER};

        snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", w->port);
        req.headers = &h;
        req.nheaders = 1;
        assert_int_equal(http_client_do(w->http, &req, &r, NULL), 0);
        if (!strstr(r.body, "castor_node_losses_total{reason=\"silent\"} 1\n"))
            fail_msg("the metrics do not count one silent node:\n%s", r.body);
        http_client_response_clear(&r);
    }
    assert_int_equal(client(w, &out, "events", job_names[0]), 0);
    if (!out || !strstr(out, "not been heard from (its instance is terminated first)"))
        fail_msg("castor events: %s", out ? out : "(none)");
    free(out);
    step(w, "every start from the last checkpoint, an uninterrupted run's time; one silent node "
            "counted; the events say why the job moved");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            local_world__jobs_survive_a_preemption_and_a_controller_crash, world_setup,
            world_teardown),
        cmocka_unit_test_setup_teardown(local_world__teardown_ends_the_cluster, world_setup,
                                        world_teardown),
        cmocka_unit_test_setup_teardown(local_world__a_silent_node_is_fenced_and_its_job_moves,
                                        world_setup, world_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
