/* test_daemon.c: `castor run` as a child process (world fake, whose instances live in a file that
 * outlives the daemon), with fake node agents that are HTTP clients and the client commands run
 * as processes: jobs submitted and placed; SIGHUP with a broken configuration (refused, logged
 * with file:line:column, the old one kept) and with a good one (a new job); SIGKILL while it
 * runs, then a restart that launches nothing twice and loses no job; SIGTERM: exit 0. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "control/state.h"
#include "util/db.h"
#include "util/file.h"
#include "util/http_client.h"
#include "util/json.h"
#include "util/db_fixture.h"

#define TOKEN_NODE "node-token-0123456789abcdef"
#define TOKEN_JOB "job-token-0123456789abcdef"
#define TOKEN_USER "user-token-0123456789abcdef"
#define WAIT_S 15.0

struct run {
    char dir[64];
    char config[128];
    char cloud[128];
    char state[128];
    char log[128];
    pid_t pid;
    int port;
    struct http_client *http;
};

static char *const child_env[] = {"CASTOR_NODE_TOKEN=" TOKEN_NODE, "CASTOR_JOB_TOKEN=" TOKEN_JOB,
                                  "CASTOR_USER_TOKEN=" TOKEN_USER, "PATH=/usr/bin:/bin", NULL};

static double mono(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void nap(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

#define JOB(name)                                                                          \
    "  - name: " name "\n    command: [train]\n    workdir: /w\n    init_batch_size: 64\n" \
    "    max_batch_size: 1024\n    max_local_bsz: 128\n    max_replicas: 2\n"

/* The configuration deciding every `interval` seconds with the fleet planner given (a YAML
 * mapping's lines), with jobs as given (YAML list items) and more top-level keys after them. */
static void write_config_fleet(struct run *r, int interval, const char *fleet, const char *jobs,
                               const char *more)
{
    FILE *f = fopen(r->config, "w");

    assert_non_null(f);
    fprintf(f,
            "cluster: daemon-test\n"
            "world: fake\n"
            "cloud:\n"
            "  path: cloud.json\n"
            "  offers:\n"
            "    - name: box/on-demand\n"
            "      gpus: 2\n"
            "      price: 3.6\n"
            "  quotas:\n"
            "    - name: box-vcpus\n"
            "      limit: 96\n"
            "      used: 16\n"
            "      offers: {box/on-demand: 16}\n"
            "interval: %d\n"
            "state: state.db\n"
            "launch_timeout: 60\n"
            "api:\n"
            "  port: 0\n"
            "policy: pollux\n"
            "fleet:\n%s"
            "jobs:\n%s%s",
            interval, fleet, jobs, more);
    fclose(f);
}

/* The fixed fleet of two nodes, deciding every `interval` seconds. */
static void write_config_every(struct run *r, int interval, const char *jobs, const char *more)
{
    write_config_fleet(r, interval, "  planner: fixed\n  nodes: 2\n", jobs, more);
}

static void write_config_more(struct run *r, const char *jobs, const char *more)
{
    write_config_every(r, 1, jobs, more);
}

static void write_config(struct run *r, const char *jobs)
{
    write_config_more(r, jobs, "");
}

static char *slurp(const char *path)
{
    char *data = NULL;
    size_t len = 0;

    if (file_read_all(path, &data, &len, NULL) < 0)
        return NULL;
    return data;
}

/* Wait until the log holds text at least `times` times; 1 when it does. */
static int log_wait(struct run *r, const char *text, int times)
{
    double end = mono() + WAIT_S;

    while (mono() < end) {
        char *log = slurp(r->log);
        int n = 0;

        for (const char *p = log; p && (p = strstr(p, text)); p += strlen(text))
            n++;
        free(log);
        if (n >= times)
            return 1;
        nap(50);
    }
    return 0;
}

/* The port of the n-th start (0-based) that the log tells, or 0. */
static int log_port(struct run *r, int n)
{
    char *log = slurp(r->log), *p = log;
    int port = 0;

    for (int i = 0; p && i <= n; i++)
        if ((p = strstr(p, "API listening on")))
            p++;
    if (p && (p = strstr(p, "127.0.0.1:")))
        port = atoi(p + strlen("127.0.0.1:"));
    free(log);
    return port;
}

static void start(struct run *r)
{
    char *log = slurp(r->log);
    int starts = 0;

    for (const char *p = log; p && (p = strstr(p, "API listening on")); p++)
        starts++;
    free(log);
    r->pid = fork();
    assert_true(r->pid >= 0);
    if (r->pid == 0) {
        char *argv[] = {CASTOR_BIN, "run", "-c", r->config, NULL};
        int fd = open(r->log, O_WRONLY | O_CREAT | O_APPEND, 0600);

        if (fd < 0 || dup2(fd, 2) < 0 || chdir(r->dir) != 0)
            _exit(99);
        execve(CASTOR_BIN, argv, child_env);
        _exit(98);
    }
    assert_true(log_wait(r, "API listening on", starts + 1));
    r->port = log_port(r, starts);
    assert_true(r->port > 0);
}

/* Signal the daemon and wait for it; its exit status, or 128 + the signal that killed it. */
static int stop(struct run *r, int sig)
{
    double end = mono() + WAIT_S;
    int status;

    kill(r->pid, sig);
    while (waitpid(r->pid, &status, WNOHANG) == 0) {
        if (mono() > end) {
            kill(r->pid, SIGKILL);
            waitpid(r->pid, &status, 0);
            fail_msg("the daemon did not stop on signal %d", sig);
        }
        nap(20);
    }
    r->pid = 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Run a client command; its exit status, its stdout in *out (malloc'd; may be NULL). */
static int castor_argv(struct run *r, char **out, char *const *argv)
{
    char url[64], outpath[160], urlenv[96];
    char *env[] = {urlenv, "CASTOR_USER_TOKEN=" TOKEN_USER, NULL};
    int status;
    pid_t pid;

    snprintf(url, sizeof(url), "http://127.0.0.1:%d", r->port);
    snprintf(urlenv, sizeof(urlenv), "CASTOR_URL=%s", url);
    snprintf(outpath, sizeof(outpath), "%s/client.out", r->dir);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(outpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);

        if (fd < 0 || dup2(fd, 1) < 0)
            _exit(99);
        execve(CASTOR_BIN, argv, env);
        _exit(98);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (out)
        *out = slurp(outpath);
    unlink(outpath);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The castor client with up to three arguments (NULL ends them), its output into *out (may be
 * NULL); its exit status. */
static int client(struct run *r, char **out, const char *a1, const char *a2, const char *a3)
{
    char *argv[] = {CASTOR_BIN, (char *)a1, (char *)a2, (char *)a3, NULL};

    return castor_argv(r, out, argv);
}

/* `castor submit` of a job spec named name with the replicas lines given; the client's exit
 * status. */
static int submit_with(struct run *r, char **out, const char *name, const char *replicas)
{
    char path[160];
    FILE *f;

    snprintf(path, sizeof(path), "%s/job.yaml", r->dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f,
            "name: %s\ncommand: [train]\nworkdir: /w\ninit_batch_size: 32\nmax_batch_size: 256\n"
            "max_local_bsz: 64\n%s",
            name, replicas);
    fclose(f);
    return client(r, out, "submit", path, NULL);
}

/* submit_with of a job of 2 replicas at most. */
static int submit(struct run *r, char **out, const char *name)
{
    return submit_with(r, out, name, "max_replicas: 2\n");
}

/* A fake node agent: one request to the API with the node token. */
static long agent(struct run *r, const char *method, const char *path, const char *body)
{
    char url[160];
    const struct http_client_header h[1] = {{"Authorization", "Bearer " TOKEN_NODE}};
    struct http_client_request req = {.method = method, .url = url, .headers = h, .nheaders = 1};
    struct http_client_response resp = {0};
    long status;

    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", r->port, path);
    req.body = body;
    req.body_len = body ? strlen(body) : 0;
    assert_int_equal(http_client_do(r->http, &req, &resp, NULL), 0);
    status = resp.status;
    http_client_response_clear(&resp);
    return status;
}

/* The fake cloud's file: how many instances it made, and the ids of those alive (up to 8). */
static long cloud_state(struct run *r, char ids[8][64], int *nlive, int *tokens_unique)
{
    char *text = slurp(r->cloud);
    struct jv *v = NULL;
    const struct jv *arr;
    long long launched = -1;

    *nlive = 0;
    *tokens_unique = 1;
    if (!text || jv_parse(text, strlen(text), &v, NULL) < 0) {
        free(text);
        return -1;
    }
    free(text);
    jv_integer_value(jv_get(v, "launched"), &launched);
    arr = jv_get(v, "instances");
    for (size_t i = 0; i < jv_size(arr); i++) {
        const struct jv *in = jv_at(arr, i);

        for (size_t k = 0; k < i; k++)
            if (strcmp(jv_string_value(jv_get(in, "token")),
                       jv_string_value(jv_get(jv_at(arr, k), "token"))) == 0)
                *tokens_unique = 0;
        if (strcmp(jv_string_value(jv_get(in, "state")), "gone") != 0 && *nlive < 8)
            snprintf(ids[(*nlive)++], 64, "%s", jv_string_value(jv_get(in, "id")));
    }
    jv_free(v);
    return (long)launched;
}

/* Wait until the fake cloud has made `want` instances; the number made. */
static long wait_launched(struct run *r, long want, char ids[8][64], int *nlive)
{
    double end = mono() + WAIT_S;
    long made = -1;
    int unique;

    while (mono() < end) {
        made = cloud_state(r, ids, nlive, &unique);
        if (made >= want && *nlive >= want)
            break;
        nap(50);
    }
    assert_true(unique);
    return made;
}

/* Wait until `castor jobs --json` lists the job in state. */
static int job_wait(struct run *r, const char *name, const char *state)
{
    double end = mono() + WAIT_S;
    char needle[160];

    snprintf(needle, sizeof(needle), "\"name\": \"%s\",\n    \"state\": \"%s\"", name, state);
    while (mono() < end) {
        char *out = NULL;
        int ok = client(r, &out, "jobs", "--json", NULL) == 0 && out && strstr(out, needle);

        free(out);
        if (ok)
            return 1;
        nap(200);
    }
    return 0;
}

static int daemon_setup(void **state)
{
    struct run *r = calloc(1, sizeof(*r));

    if (!r)
        return -1;
    snprintf(r->dir, sizeof(r->dir), "/tmp/castor-test-daemon-XXXXXX");
    if (!mkdtemp(r->dir))
        return -1;
    snprintf(r->config, sizeof(r->config), "%s/castor.yaml", r->dir);
    snprintf(r->cloud, sizeof(r->cloud), "%s/cloud.json", r->dir);
    snprintf(r->state, sizeof(r->state), "%s/state.db", r->dir);
    snprintf(r->log, sizeof(r->log), "%s/castor.log", r->dir);
    if (http_client_new(&r->http) < 0)
        return -1;
    *state = r;
    return 0;
}

static int daemon_teardown(void **state)
{
    struct run *r = *state;
    static const char *const files[] = {
        "castor.yaml",  "cloud.json",    "state.db", "state.db-wal",
        "state.db-shm", "castor.log",    "job.yaml", "cloud.json.tmp",
        "client.out",   "state.db.lock", NULL};
    char path[192];

    if (r->pid > 0) {
        kill(r->pid, SIGKILL);
        waitpid(r->pid, NULL, 0);
    }
    http_client_free(r->http);
    for (int i = 0; files[i]; i++) {
        snprintf(path, sizeof(path), "%s/%s", r->dir, files[i]);
        unlink(path);
    }
    rmdir(r->dir);
    free(r);
    return 0;
}

static void register_nodes(struct run *r, char ids[8][64], int n)
{
    for (int i = 0; i < n; i++) {
        char body[640];

        snprintf(body, sizeof(body), "{\"instance_id\": \"%s\", \"gpus\": 2}", ids[i]);
        assert_int_equal(agent(r, "POST", "/v1/nodes", body), 201);
    }
}

/* Run a daemon on r's configuration to its end, its log appended to r's (or replacing it when
 * fresh); its exit status. */
static int run_to_end(struct run *r, int fresh)
{
    int status;
    pid_t pid = fork();

    assert_true(pid >= 0);
    if (pid == 0) {
        char *argv[] = {CASTOR_BIN, "run", "-c", r->config, NULL};
        int fd = open(r->log, O_WRONLY | O_CREAT | (fresh ? O_TRUNC : O_APPEND), 0600);

        if (fd < 0 || dup2(fd, 2) < 0 || chdir(r->dir) != 0)
            _exit(99);
        execve(CASTOR_BIN, argv, child_env);
        _exit(98);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void daemon_run__signals_restart_and_no_double_launch(void **state)
{
    struct run *r = *state;
    char ids[8][64], *out = NULL;
    int nlive = 0, unique;
    struct state *st = NULL;
    struct state_job *jobs = NULL;
    size_t njobs = 0;
    FILE *f;

    write_config_more(r, JOB("alpha") JOB("beta"),
                      "spend_limit:\n  dollars: 1000\n  period: day\n");
    /* a first daemon launches the fixed fleet's two nodes and is killed at once */
    start(r);
    assert_int_equal(wait_launched(r, 2, ids, &nlive), 2);
    assert_int_equal(stop(r, SIGKILL), 128 + SIGKILL);
    /* restarted: reconciles, launches nothing more; the agents register; jobs are placed */
    start(r);
    /* a second daemon on the same state is refused, and launches nothing */
    {
        char want[96], *log;

        assert_int_equal(run_to_end(r, 0), 1);
        snprintf(want, sizeof(want), "another castor (pid %ld) is using this state", (long)r->pid);
        log = slurp(r->log);
        assert_non_null(log);
        assert_non_null(strstr(log, want));
        free(log);
    }
    assert_true(log_wait(r, "job submitted (configuration)", 2)); /* not resubmitted */
    register_nodes(r, ids, nlive);
    assert_true(job_wait(r, "alpha", "running"));
    assert_true(job_wait(r, "beta", "running"));
    /* a job submitted with the client command, then listed */
    assert_int_equal(submit(r, &out, "gamma"), 0);
    assert_non_null(strstr(out, "submitted gamma (pending)"));
    free(out);
    assert_int_equal(client(r, &out, "status", NULL, NULL), 0);
    assert_non_null(strstr(out, "fleet: 2 nodes, 4 GPUs, $7.20/h"));
    assert_non_null(strstr(out, "of $1000.00 this period")); /* the spend limit, not reached */
    /* at $7.20/h the $1000 of a day last past its end (the period's end, a UTC midnight) */
    assert_non_null(strstr(out, "; at $7.20/h it lasts past the period's end ("));
    assert_non_null(strstr(out, "T00:00:00Z)"));
    /* the cloud's quota, read by the daemon: others' 16 vCPUs and its two nodes' 32 */
    assert_non_null(strstr(out, "quota box-vcpus (fake) (box-vcpus): 48 of 96 vCPUs in use"));
    assert_null(strstr(out, "reached"));
    free(out);
    assert_int_equal(client(r, &out, "cancel", "gamma", NULL), 0);
    assert_non_null(strstr(out, "cancelled gamma"));
    free(out);
    /* a pending job's wait, as its newest event says, in `castor jobs` and `castor status`:
     * epsilon's gang of 16 never fits the fleet's 4 GPUs, and the event is written beside the
     * daemon */
    assert_int_equal(submit_with(r, NULL, "epsilon", "min_replicas: 16\nmax_replicas: 16\n"), 0);
    assert_int_equal(state_open(r->state, &st, NULL), 0);
    assert_int_equal(state_event_add(st, "epsilon", (double)time(NULL), "waiting", NULL,
                                     "no GPUs, and the fleet cannot grow"),
                     0);
    state_close(st);
    st = NULL;
    assert_int_equal(client(r, &out, "jobs", NULL, NULL), 0);
    assert_non_null(strstr(out, "epsilon waits: no GPUs, and the fleet cannot grow\n"));
    free(out);
    assert_int_equal(client(r, &out, "status", NULL, NULL), 0);
    assert_non_null(strstr(out, "epsilon waits: no GPUs, and the fleet cannot grow\n"));
    assert_null(strstr(out, "alpha waits"));
    free(out);
    assert_int_equal(client(r, NULL, "cancel", "epsilon", NULL), 0);
    assert_int_equal(client(r, NULL, "cancel", "no-such-job", NULL), 1);
    /* a static node taken down by its operator; a launched one is refused */
    assert_int_equal(agent(r, "POST", "/v1/nodes", "{\"instance_id\":\"rack-7\",\"gpus\":1}"), 201);
    assert_int_equal(client(r, &out, "down", "rack-7", NULL), 0);
    assert_non_null(strstr(out, "rack-7 is down"));
    free(out);
    assert_int_equal(agent(r, "POST", "/v1/nodes/rack-7/heartbeat", "{}"), 409);
    assert_int_equal(client(r, NULL, "down", ids[0], NULL), 1);
    /* a backup of the state while the daemon runs: whole, with the jobs */
    {
        char dest[200], *argv[] = {CASTOR_BIN, "backup", "-c", r->config, dest, NULL};
        struct state *copy = NULL;
        struct state_job job;

        snprintf(dest, sizeof(dest), "%s/backup.db", r->dir);
        assert_int_equal(castor_argv(r, &out, argv), 0);
        assert_non_null(strstr(out, "integrity ok"));
        free(out);
        assert_int_equal(castor_argv(r, NULL, argv), 1); /* it exists */
        assert_int_equal(state_open(dest, &copy, NULL), 0);
        assert_int_equal(state_job_get(copy, "alpha", &job), 0);
        assert_true(job.state == STATE_JOB_RUNNING);
        state_job_clear(&job);
        state_close(copy);
    }
    /* SIGHUP with a broken configuration: refused with its location, the old one kept */
    f = fopen(r->config, "w");
    assert_non_null(f);
    fputs("cluster: daemon-test\nworld: fake\ninterval: fast\n", f);
    fclose(f);
    kill(r->pid, SIGHUP);
    assert_true(log_wait(r, "reload refused, the running configuration stays", 1));
    assert_true(log_wait(r, "castor.yaml:3:11:", 1));
    assert_int_equal(client(r, &out, "jobs", NULL, NULL), 0); /* still serving */
    assert_non_null(strstr(out, "alpha"));
    assert_non_null(strstr(out, "ETA"));      /* the predicted finish's column ("-": not known) */
    assert_non_null(strstr(out, "FAILURES")); /* replica failures counted */
    assert_non_null(strstr(out, "COST"));     /* each job's share of its nodes' dollars */
    free(out);
    /* what the fleet cost by day and by offer (the fake cloud's box/on-demand), and a bad query */
    assert_int_equal(client(r, &out, "costs", NULL, NULL), 0);
    assert_non_null(strstr(out, "DAY (UTC)"));
    assert_non_null(strstr(out, "total"));
    free(out);
    assert_int_equal(client(r, &out, "costs", "--by", "offer"), 0);
    assert_non_null(strstr(out, "box/on-demand"));
    free(out);
    assert_int_equal(client(r, NULL, "costs", "--since", "soon"), 2);
    /* SIGHUP with a good one: reloaded, its new job submitted (delta has a deadline and no
     * samples: taken, with a warning that castor cannot plan for it) */
    write_config(r, JOB("alpha") JOB("beta") JOB("delta") "    deadline: 2100-01-01T00:00:00Z\n");
    kill(r->pid, SIGHUP);
    assert_true(log_wait(r, "configuration reloaded", 1));
    assert_true(job_wait(r, "delta", "pending") || job_wait(r, "delta", "running"));
    assert_true(log_wait(r, "a deadline without samples", 1));
    /* SIGKILL in the middle of its ticks; the restarted daemon launches nothing twice */
    nap(700);
    assert_int_equal(stop(r, SIGKILL), 128 + SIGKILL);
    start(r);
    nap(2500); /* two ticks and more */
    assert_int_equal(cloud_state(r, ids, &nlive, &unique), 2);
    assert_int_equal(nlive, 2);
    assert_true(unique);
    assert_true(job_wait(r, "alpha", "running"));
    /* SIGTERM: the tick finishes, a clean exit */
    assert_int_equal(stop(r, SIGTERM), 0);
    assert_true(log_wait(r, "\"msg\":\"stopped\"", 1));
    /* no job lost; decisions and costs recorded */
    assert_int_equal(state_open(r->state, &st, NULL), 0);
    assert_int_equal(state_jobs_list(st, (1u << STATE_JOB_NSTATES) - 1, &jobs, &njobs), 0);
    assert_int_equal(njobs, 5);
    assert_string_equal(jobs[0].name, "alpha");
    assert_string_equal(jobs[1].name, "beta");
    assert_true(jobs[0].dollars > 0 && jobs[1].dollars > 0); /* they held GPUs for several ticks */
    assert_string_equal(jobs[2].name, "gamma");
    assert_int_equal(jobs[2].state, STATE_JOB_CANCELLED);
    assert_string_equal(jobs[3].name, "epsilon");
    assert_int_equal(jobs[3].state, STATE_JOB_CANCELLED);
    assert_string_equal(jobs[4].name, "delta");
    state_jobs_free(jobs, njobs);
    {
        long long tick = -1;
        double dollars = 0;

        assert_int_equal(state_decision_last_tick(st, &tick), 0);
        assert_true(tick >= 2);
        assert_int_equal(state_cost_total(st, &dollars), 0);
        assert_true(dollars > 0);
    }
    state_close(st);
}

/* Each of the n nodes' recorded dollars are its price for every second from its launch to its
 * last record (none lost, none counted twice), and that record reaches the stop (1.5 s at most
 * before stopped). */
static void costs_whole(struct run *r, char (*ids)[64], int n, double stopped)
{
    struct state *st = NULL;

    assert_int_equal(state_open(r->state, &st, NULL), 0);
    for (int i = 0; i < n; i++) {
        char sql[1024];
        double seconds, span, end;

        snprintf(sql, sizeof(sql),
                 "SELECT total(c.dollars) / n.price * 3600 FROM costs c JOIN nodes n ON n.id ="
                 " c.node_id WHERE n.instance_id = '%.63s'",
                 ids[i]);
        seconds = one_double(state_db(st), sql);
        snprintf(sql, sizeof(sql),
                 "SELECT max(c.end_at) - n.launched_at FROM costs c JOIN nodes n ON n.id ="
                 " c.node_id WHERE n.instance_id = '%.63s'",
                 ids[i]);
        span = one_double(state_db(st), sql);
        snprintf(sql, sizeof(sql),
                 "SELECT max(c.end_at) FROM costs c JOIN nodes n ON n.id = c.node_id WHERE"
                 " n.instance_id = '%.63s'",
                 ids[i]);
        end = one_double(state_db(st), sql);
        if (!(fabs(seconds - span) < 1e-3 && span > 3.0 && end > stopped - 1.5))
            fail_msg("node %s: %.4f s recorded over a span of %.4f s ending %.3f s before the "
                     "stop",
                     ids[i], seconds, span, stopped - end);
    }
    state_close(st);
}

/* Nodes cost while the controller is down too: a daemon that launched the fixed fleet's two nodes
 * is killed, the next starts 1.5 s later and stops with SIGTERM; each node's recorded dollars are
 * its price for every second from its launch to the last record (none lost to the restart, none
 * counted twice), up to the stop. */
static void daemon_run__costs_cover_the_time_it_was_down(void **state)
{
    struct run *r = *state;
    char ids[8][64];
    int nlive = 0;
    double stopped;

    write_config(r, JOB("alpha"));
    start(r);
    assert_int_equal(wait_launched(r, 2, ids, &nlive), 2);
    nap(2500); /* two ticks and more: costs recorded */
    assert_int_equal(stop(r, SIGKILL), 128 + SIGKILL);
    nap(1500);
    start(r);
    assert_true(log_wait(r, "recorded what the nodes still running cost in the", 1));
    nap(1200);
    assert_int_equal(stop(r, SIGTERM), 0);
    stopped = (double)time(NULL);
    costs_whole(r, ids, 2, stopped);
}

/* Costs that cannot be recorded for a while (the state refuses the writes, as a full disk would:
 * here triggers on the costs) are not lost: the first tick that can record them records the whole
 * span since the last record, so that each node's dollars still cover every second. */
static void daemon_run__costs_not_recorded_are_recorded_later(void **state)
{
    struct run *r = *state;
    char ids[8][64];
    int nlive = 0;
    struct state *st = NULL;

    write_config(r, JOB("alpha"));
    start(r);
    assert_int_equal(wait_launched(r, 2, ids, &nlive), 2);
    nap(1500);
    assert_int_equal(state_open(r->state, &st, NULL), 0);
    assert_int_equal(db_exec(state_db(st), "CREATE TRIGGER no_cost_rows BEFORE INSERT ON costs"
                                           " BEGIN SELECT RAISE(ABORT, 'no room'); END;"
                                           "CREATE TRIGGER no_cost_growth BEFORE UPDATE ON costs"
                                           " BEGIN SELECT RAISE(ABORT, 'no room'); END"),
                     0);
    assert_true(log_wait(r, "cannot record the nodes' costs", 2));
    assert_int_equal(
        db_exec(state_db(st), "DROP TRIGGER no_cost_rows; DROP TRIGGER no_cost_growth"), 0);
    state_close(st);
    nap(1500);
    assert_int_equal(stop(r, SIGTERM), 0);
    costs_whole(r, ids, 2, (double)time(NULL));
}

/* A node terminated after the last costs recorded and before the next (taken down by its
 * operator, and the daemon killed before its next tick) is billed up to its end by the next start:
 * the costs of the time it was down count it too, not only the nodes still live. */
static void daemon_run__downtime_costs_count_a_node_terminated_since(void **state)
{
    struct run *r = *state;
    char ids[8][64], rack[1][64] = {"rack-1"};
    int nlive = 0;
    struct state *st = NULL;
    double down_at;

    write_config(r, JOB("alpha"));
    start(r);
    assert_int_equal(wait_launched(r, 2, ids, &nlive), 2);
    assert_int_equal(
        agent(r, "POST", "/v1/nodes", "{\"instance_id\":\"rack-1\",\"gpus\":1,\"price\":3.6}"),
        201);
    nap(2500); /* two ticks and more: its costs recorded */
    assert_int_equal(stop(r, SIGKILL), 128 + SIGKILL);
    nap(2500);
    /* taken down (POST /v1/nodes/rack-1/down) after the last tick's costs */
    assert_int_equal(state_open(r->state, &st, NULL), 0);
    down_at = (double)time(NULL);
    assert_int_equal(state_node_set_state(st, "rack-1", STATE_NODE_TERMINATED, down_at), 0);
    state_close(st);
    nap(1000);
    start(r);
    assert_true(log_wait(r, "recorded what the nodes still running cost in the", 1));
    nap(1200);
    assert_int_equal(stop(r, SIGTERM), 0);
    costs_whole(r, rack, 1, down_at);
    costs_whole(r, ids, 2, (double)time(NULL));
}

/* What the nodes cost while the daemon was down, which its start cannot record (the state refuses
 * the writes, as a full disk would), is recorded by the first tick that can: each node's dollars
 * still cover every second from its launch. */
static void daemon_run__downtime_costs_not_recorded_at_start_are_recorded_later(void **state)
{
    struct run *r = *state;
    char ids[8][64];
    int nlive = 0;
    struct state *st = NULL;

    write_config(r, JOB("alpha"));
    start(r);
    assert_int_equal(wait_launched(r, 2, ids, &nlive), 2);
    nap(2500); /* two ticks and more: costs recorded */
    assert_int_equal(stop(r, SIGKILL), 128 + SIGKILL);
    assert_int_equal(state_open(r->state, &st, NULL), 0);
    assert_int_equal(db_exec(state_db(st), "CREATE TRIGGER no_cost_rows BEFORE INSERT ON costs"
                                           " BEGIN SELECT RAISE(ABORT, 'no room'); END;"
                                           "CREATE TRIGGER no_cost_growth BEFORE UPDATE ON costs"
                                           " BEGIN SELECT RAISE(ABORT, 'no room'); END"),
                     0);
    nap(1500);
    start(r);
    assert_true(log_wait(r, "cannot record what the nodes cost while castor was down", 1));
    nap(1500); /* ticks whose costs cannot be recorded either */
    assert_int_equal(
        db_exec(state_db(st), "DROP TRIGGER no_cost_rows; DROP TRIGGER no_cost_growth"), 0);
    state_close(st);
    nap(1500);
    assert_int_equal(stop(r, SIGTERM), 0);
    costs_whole(r, ids, 2, (double)time(NULL));
    assert_true(log_wait(r, "which the start could not", 1));
}

/* The costs of the time it was down are recorded before reconciliation changes anything: a node
 * whose preemption notice the cloud never carried out (set in the state while the daemon was
 * down), which the start terminates, is billed up to then; and when the cloud cannot be listed
 * at start (here every call fails: castor's planner asks for no offer before the loop), every
 * node of the state is. */
static void daemon_run__downtime_costs_before_reconciliation(void **state)
{
    struct run *r = *state;
    char ids[8][64];
    int nlive = 0;
    struct state *st = NULL;
    double now;

    write_config(r, JOB("alpha"));
    start(r);
    assert_int_equal(wait_launched(r, 2, ids, &nlive), 2);
    nap(2500);
    assert_int_equal(stop(r, SIGKILL), 128 + SIGKILL);
    assert_int_equal(state_open(r->state, &st, NULL), 0);
    now = (double)time(NULL);
    assert_int_equal(state_node_notice(st, ids[0], now - 1000, now - 700), 1);
    state_close(st);
    nap(1500);
    start(r);
    assert_true(log_wait(r, "drained by a preemption notice the cloud has not carried out", 1));
    nap(1200);
    assert_int_equal(stop(r, SIGTERM), 0);
    costs_whole(r, ids, 1, (double)time(NULL));
    nap(1500);
    write_config_fleet(r, 1, "  planner: castor\n", JOB("alpha"),
                       "faults:\n  rate: 1\n  timeout: 0\n");
    start(r);
    assert_true(log_wait(r, "of the state (the cloud cannot be listed) cost in the", 1));
    nap(1200);
    assert_int_equal(stop(r, SIGTERM), 0);
    costs_whole(r, ids + 1, 1, (double)time(NULL));
}

/* A reload that shortens the interval (600 s to 1 s) takes effect at once: the wait in progress
 * ends by the last tick plus the new interval, not at the old deadline. */
static void daemon_run__a_shorter_interval_applies_at_the_reload(void **state)
{
    struct run *r = *state;

    write_config_every(r, 600, JOB("alpha"), "log_level: debug\n");
    start(r);
    assert_true(log_wait(r, "\"tick: ", 1));
    write_config_every(r, 1, JOB("alpha"), "log_level: debug\n");
    kill(r->pid, SIGHUP);
    assert_true(log_wait(r, "configuration reloaded", 1));
    assert_true(log_wait(r, "\"tick: ", 3));
    assert_int_equal(stop(r, SIGTERM), 0);
}

/* A fault in the cloud's section (an offer listed twice) is the file's: exit 2, with
 * file:line:column, before anything is made (no state, no lock, no API). */
static void daemon_run__a_bad_cloud_section_exits_2(void **state)
{
    struct run *r = *state;
    FILE *f = fopen(r->config, "w");
    char *log, path[192];

    assert_non_null(f);
    fprintf(f, "cluster: daemon-test\nworld: fake\ncloud:\n  path: cloud.json\n  offers:\n"
               "    - {name: box, gpus: 2}\n    - {name: box, gpus: 4}\n"
               "state: state.db\napi:\n  port: 0\n");
    fclose(f);
    assert_int_equal(run_to_end(r, 1), 2);
    log = slurp(r->log);
    assert_non_null(log);
    assert_non_null(strstr(log, "castor.yaml:7:7: cloud.offers[1].name: the offer box is listed"));
    assert_null(strstr(log, "API listening"));
    free(log);
    assert_int_equal(access(r->state, F_OK), -1);
    snprintf(path, sizeof(path), "%s.lock", r->state);
    assert_int_equal(access(path, F_OK), -1);
}

/*
 * What a request changes is decided at once, not at the next interval (here 600 s, far beyond
 * WAIT_S): the first decision, at start, launches the fixed fleet's two nodes; their registration
 * places the configuration's job, and a job submitted later is placed beside it (each decision at
 * least a second after the one before).
 */
static void daemon_run__requests_decide_at_once(void **state)
{
    struct run *r = *state;
    char ids[8][64], *out = NULL;
    int nlive = 0;

    write_config_every(r, 600, JOB("first"), "");
    start(r);
    assert_int_equal(wait_launched(r, 2, ids, &nlive), 2);
    register_nodes(r, ids, nlive);
    assert_true(job_wait(r, "first", "running"));
    assert_int_equal(submit(r, &out, "second"), 0);
    free(out);
    assert_true(job_wait(r, "second", "running"));
    assert_int_equal(stop(r, SIGTERM), 0);
    /* the configuration's job was submitted, and no error said otherwise (each one submitted was
     * logged as "cannot submit the job: success" too) */
    out = slurp(r->log);
    assert_non_null(out);
    assert_non_null(strstr(out, "job submitted (configuration)"));
    assert_null(strstr(out, "cannot submit the job"));
    free(out);
}

/* The name of template t's job at time at (UTC, whole minutes). */
static void template_job(const char *t, time_t at, char *buf, size_t size)
{
    struct tm tm;

    gmtime_r(&at, &tm);
    snprintf(buf, size, "%s-%04d%02d%02dT%02d%02dZ", t, tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min);
}

static void daemon_run__a_missed_template_runs_once(void **state)
{
    struct run *r = *state;
    struct state *st = NULL;
    struct state_job *jobs = NULL;
    char old[64], name[64];
    time_t now = time(NULL), minute = now / 60 * 60;
    size_t n = 0;
    int ours = 0, latest = 0;

    write_config_more(r, "",
                      "templates:\n  - name: every\n    schedule: \"* * * * *\"\n    job:\n"
                      "      command: [train]\n      workdir: /w\n      init_batch_size: 8\n"
                      "      max_batch_size: 8\n      max_local_bsz: 8\n      max_replicas: 1\n");
    /* it last ran ten minutes ago; the controller was down since */
    template_job("every", minute - 600, old, sizeof(old));
    assert_int_equal(state_open(r->state, &st, NULL), 0);
    assert_int_equal(state_job_submit(st, old,
                                      "{\"command\": [\"train\"], \"workdir\": \"/w\", "
                                      "\"init_batch_size\": 8, \"max_batch_size\": 8, "
                                      "\"max_local_bsz\": 8, \"max_replicas\": 1}",
                                      (double)now - 600),
                     0);
    state_close(st);
    start(r);
    assert_true(log_wait(r, "missed while the controller was down", 1));
    assert_int_equal(stop(r, SIGTERM), 0);
    assert_int_equal(state_open(r->state, &st, NULL), 0);
    assert_int_equal(state_jobs_list(st, (1u << STATE_JOB_NSTATES) - 1, &jobs, &n), 0);
    for (size_t i = 0; i < n; i++) {
        ours += strncmp(jobs[i].name, "every-", 6) == 0;
        for (int k = 0; k < 2; k++) { /* a minute may have begun since `now` */
            template_job("every", minute + 60 * k, name, sizeof(name));
            latest += strcmp(jobs[i].name, name) == 0;
        }
        /* none of the nine minutes missed before the latest: no burst */
        for (int k = 1; k <= 9; k++) {
            template_job("every", minute - 600 + 60 * k, name, sizeof(name));
            if (strcmp(jobs[i].name, name) == 0)
                fail_msg("a missed time was run too: %s", name);
        }
    }
    assert_true(latest >= 1);
    assert_true(ours == 2 || ours == 3); /* the old one, the latest missed, maybe the next */
    state_jobs_free(jobs, n);
    state_close(st);
}

static void daemon_run__bad_configuration_exits_2(void **state)
{
    struct run *r = *state;
    char *log;

    write_config(r, "  - name: x\n    command: []\n");
    assert_int_equal(run_to_end(r, 1), 2);
    log = slurp(r->log);
    assert_non_null(log);
    assert_non_null(strstr(log, "castor.yaml:25:14: jobs[0].command: expected a list of 1 to 256"));
    free(log);
}

/* An instance gone while the daemon was down is left out of the downtime's costs (its end is not
 * known: docs/run.md); when the start cannot record the downtime (with_trigger: the state refuses
 * cost rows, as a full disk would) and the first tick terminates the gone node before the retry,
 * the retry leaves it out too, as the start would have. */
static void gone_during_downtime(struct run *r, int with_trigger)
{
    char ids[8][64], sql[512], *text, *p, *q;
    int nlive = 0;
    struct state *st = NULL;
    double until, started, seconds, span;

    write_config(r, JOB("alpha"));
    start(r);
    assert_int_equal(wait_launched(r, 2, ids, &nlive), 2);
    nap(2500);
    assert_int_equal(stop(r, SIGKILL), 128 + SIGKILL);
    /* ids[0]'s instance goes while the daemon is down */
    text = slurp(r->cloud);
    assert_non_null(text);
    p = strstr(text, ids[0]);
    assert_non_null(p);
    q = strstr(p, "\"running\"");
    assert_non_null(q);
    {
        char out[8192];

        snprintf(out, sizeof(out), "%.*s\"gone\"%s", (int)(q - text), text, q + 9);
        assert_int_equal(file_write_atomic(r->cloud, out, strlen(out), 0600, NULL), 0);
    }
    free(text);
    assert_int_equal(state_open(r->state, &st, NULL), 0);
    snprintf(sql, sizeof(sql),
             "SELECT max(c.end_at) FROM costs c JOIN nodes n ON n.id = c.node_id WHERE"
             " n.instance_id = '%s'",
             ids[0]);
    until = one_double(state_db(st), sql);
    if (with_trigger)
        assert_int_equal(db_exec(state_db(st),
                                 "CREATE TRIGGER no_cost_rows BEFORE INSERT ON costs"
                                 " BEGIN SELECT RAISE(ABORT, 'no room'); END;"
                                 "CREATE TRIGGER no_cost_growth BEFORE UPDATE ON costs"
                                 " BEGIN SELECT RAISE(ABORT, 'no room'); END"),
                         0);
    nap(3000); /* the downtime: 3 s */
    started = (double)time(NULL);
    start(r);
    if (with_trigger) {
        assert_true(log_wait(r, "cannot record what the nodes cost while castor was down", 1));
        assert_true(log_wait(r, "the instance is gone: the node is terminated", 1));
        nap(500);
        assert_int_equal(
            db_exec(state_db(st), "DROP TRIGGER no_cost_rows; DROP TRIGGER no_cost_growth"), 0);
        assert_true(log_wait(r, "which the start could not", 1));
    } else {
        assert_true(log_wait(r, "the instance is gone: the node is terminated", 1));
    }
    nap(1200);
    assert_int_equal(stop(r, SIGTERM), 0);
    /* the dollars ids[0] was charged for [until, started]: none (gone, when not known) */
    snprintf(sql, sizeof(sql),
             "SELECT total(c.dollars) / n.price * 3600 FROM costs c JOIN nodes n ON n.id ="
             " c.node_id WHERE n.instance_id = '%s'",
             ids[0]);
    seconds = one_double(state_db(st), sql);
    snprintf(sql, sizeof(sql),
             "SELECT max(c.end_at) - n.launched_at FROM costs c JOIN nodes n ON n.id ="
             " c.node_id WHERE n.instance_id = '%s'",
             ids[0]);
    span = one_double(state_db(st), sql);
    state_close(st);
    if (!(span - seconds > 0.8 * (started - until)))
        fail_msg("the gone node was charged for the downtime: %.3f s recorded over %.3f s", seconds,
                 span);
}

static void daemon_run__a_node_gone_while_down_is_not_charged(void **state)
{
    gone_during_downtime(*state, 0);
}

static void daemon_run__a_node_gone_while_down_is_not_charged_later(void **state)
{
    gone_during_downtime(*state, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(daemon_run__requests_decide_at_once, daemon_setup,
                                        daemon_teardown),
        cmocka_unit_test_setup_teardown(daemon_run__signals_restart_and_no_double_launch,
                                        daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(daemon_run__costs_cover_the_time_it_was_down, daemon_setup,
                                        daemon_teardown),
        cmocka_unit_test_setup_teardown(daemon_run__costs_not_recorded_are_recorded_later,
                                        daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(daemon_run__a_missed_template_runs_once, daemon_setup,
                                        daemon_teardown),
        cmocka_unit_test_setup_teardown(daemon_run__bad_configuration_exits_2, daemon_setup,
                                        daemon_teardown),
        cmocka_unit_test_setup_teardown(
            daemon_run__downtime_costs_not_recorded_at_start_are_recorded_later, daemon_setup,
            daemon_teardown),
        cmocka_unit_test_setup_teardown(daemon_run__downtime_costs_count_a_node_terminated_since,
                                        daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(daemon_run__downtime_costs_before_reconciliation,
                                        daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(daemon_run__a_shorter_interval_applies_at_the_reload,
                                        daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(daemon_run__a_bad_cloud_section_exits_2, daemon_setup,
                                        daemon_teardown),
        cmocka_unit_test_setup_teardown(daemon_run__a_node_gone_while_down_is_not_charged,
                                        daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(daemon_run__a_node_gone_while_down_is_not_charged_later,
                                        daemon_setup, daemon_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
