/* test_gcp_world.c: the gcp world end to end against the fake Google Cloud: `castor run` (world
 * gcp) with a service-account key the test writes, its token endpoint, Compute Engine and Billing
 * Catalog all the fake's (tests/providers/fake_gce.c, in a thread of this process, verifying every
 * JWT and token); a job submitted with `castor submit`; a booter in the test that starts a
 * castor-node process for every instance the fake holds RUNNING (as the instance's startup script
 * would, with CASTOR_INSTANCE_ID "<zone>.<name>") and stops it when the instance is deleted. The
 * cheapest zone is out of capacity (ZONE_RESOURCE_POOL_EXHAUSTED): the controller asks it once,
 * holds that whole zone and fails over to another. Each VM has a metadata server of its own, which
 * castor-node watches (gce-metadata): while the job runs, its VM's host announces maintenance
 * (TERMINATE_ON_HOST_MAINTENANCE), the controller hears of it at once, and the VM is switched off
 * (TERMINATED). Then: the job resumes from its checkpoint on a new VM and finishes, the stopped VM
 * is deleted, the fleet shrinks and its instances are deleted, the controller stops cleanly, and
 * no instance or process is left. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <pthread.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "providers/gcp_fixture.h"
#include "support/loopback_http.h"
#include "support/process.h"
#include "support/world.h"
#include "util/http_client.h"
#include "util/json.h"

#define CLUSTER "e2e-gcp"
#define TOKEN_NODE "e2e-node-token-0123456789abcdef"
#define TOKEN_JOB "e2e-job-token-0123456789abcdef"
#define TOKEN_USER "e2e-user-token-0123456789abcdef"
#define JOB "delta"
#define EPOCHS 25   /* of cifar10: about 1,000 emulated seconds on one GPU */
#define SPEED 100.0 /* emulated seconds per real second */
#define LOCAL_BSZ 128
#define MAX_BOOTED 64
#define ZONE_OUT "us-central1-a" /* out of capacity: its spot offer is the cheapest */
#define ZONE_IN "us-central1-b"
#define INSERTS_IN(zone) FAKE_GCE_COMPUTE "/projects/" GCP_PROJECT "/zones/" zone "/instances"

/* A VM's metadata server: its preempted flag and its maintenance event. */
struct vm_meta {
    struct lh_server *server;
    pthread_mutex_t lock;
    char url[64];
    char maintenance[64];
};

static void vm_meta_handle(void *arg, const struct lh_request *req, struct lh_reply *r)
{
    struct vm_meta *m = arg;
    const char *flavor = lh_header(req, "Metadata-Flavor");

    pthread_mutex_lock(&m->lock);
    if (!flavor || strcmp(flavor, "Google") != 0)
        lh_reply_text(r, 403, "text/html", "Missing Metadata-Flavor:Google header.");
    else if (strncmp(req->target, "/computeMetadata/v1/instance/preempted", 38) == 0)
        lh_reply_text(r, 200, "application/text", "FALSE");
    else if (strcmp(req->target, "/computeMetadata/v1/instance/maintenance-event") == 0)
        lh_reply_text(r, 200, "application/text", m->maintenance);
    else
        lh_reply_text(r, 404, "text/html", "Not Found");
    pthread_mutex_unlock(&m->lock);
}

struct world {
    char dir[64];
    char path[256]; /* scratch */
    char config[128], log[128], key[128];
    pid_t pid; /* the controller */
    int port;
    double t0;
    struct http_client *http;
    struct fake_gce *fake;
    /* the booter: a castor-node per instance the fake made (by the fake's index) */
    pid_t node[MAX_BOOTED];
    int stopped[MAX_BOOTED]; /* 1: its instance was deleted and the node stopped */
    char node_id[MAX_BOOTED][128];
    struct vm_meta meta[MAX_BOOTED];
};

static const char *wpath(struct world *w, const char *name)
{
    snprintf(w->path, sizeof(w->path), "%s/%s", w->dir, name);
    return w->path;
}

static void step(struct world *w, const char *what)
{
    fprintf(stderr, "e2e-gcp: %6.2f s: %s\n", proc_now() - w->t0, what);
}

/* The daemon's configuration: world gcp on the fake; a T4 spot and a T4 standard offer in the
 * zone that is out of capacity, a T4 standard one in another; castor's planner. */
static void write_config(struct world *w)
{
    char text[4096];

    snprintf(text, sizeof(text),
             "cluster: " CLUSTER "\n"
             "world: gcp\n"
             "cloud:\n"
             "  project: " GCP_PROJECT "\n"
             "  key_file: key.json\n"
             "  compute_url: %s" FAKE_GCE_COMPUTE "\n"
             "  billing_url: %s" FAKE_GCE_BILLING "\n"
             "  prices: %s/gcp-prices.yaml\n"
             "  poll_interval: 0.05\n"
             "  offers:\n"
             "    - {machine_type: n1-standard-8, zone: " ZONE_OUT ", spot: true,\n"
             "       accelerator_type: nvidia-tesla-t4}\n"
             "    - {machine_type: n1-standard-8, zone: " ZONE_OUT ",\n"
             "       accelerator_type: nvidia-tesla-t4}\n"
             "    - {machine_type: n1-standard-8, zone: " ZONE_IN ",\n"
             "       accelerator_type: nvidia-tesla-t4}\n"
             "  instance:\n"
             "    source_image: projects/debian-cloud/global/images/family/debian-12\n"
             "    startup_script: \"#!/bin/sh\\nexec castor-node\"\n" WORLD_CONFIG_TAIL
             "  patience: 2\n"
             "  max_nodes: 2\n",
             fake_gce_url(w->fake), fake_gce_url(w->fake), CASTOR_CONFDIR, w->port);
    assert_int_equal(world_write_file(w->config, text, 0600), 0);
}

static void write_job(struct world *w)
{
    char text[2048], workdir[160];

    snprintf(workdir, sizeof(workdir), "%s/work-" JOB, w->dir);
    assert_int_equal(mkdir(workdir, 0700), 0);
    snprintf(text, sizeof(text),
             "name: " JOB "\n"
             "command: [\"%s\", cifar10]\n"
             "workdir: %s\n"
             "env:\n"
             "  CASTOR_EMULATOR_SPEED: \"%g\"\n"
             "  CASTOR_EMULATOR_EPOCHS: \"%d\"\n"
             "  CASTOR_EMULATOR_REPORT_S: \"20\"\n"
             "  CASTOR_EMULATOR_FINISH_WAIT_S: \"30\"\n"
             "init_batch_size: %d\n"
             "max_batch_size: %d\n"
             "max_local_bsz: %d\n"
             "max_replicas: 1\n"
             "checkpoint_interval: 50\n",
             CASTOR_EMULATOR_BIN, workdir, SPEED, EPOCHS, LOCAL_BSZ, LOCAL_BSZ, LOCAL_BSZ);
    assert_int_equal(world_write_file(wpath(w, JOB ".yaml"), text, 0600), 0);
}

/* ---- the booter ---- */

/* Start castor-node for the fake's instance i as its startup script would. */
static void boot(struct world *w, size_t i, const struct fake_gce_instance *in)
{
    static char *const argv[] = {"castor-node", NULL};
    char url[96], id[160], token[128], ntf[200], jtf[200], log[200], meta[128];
    const char *const env[] = {url,
                               id,
                               token,
                               ntf,
                               jtf,
                               meta,
                               "CASTOR_NODE_CLOUD=gce-metadata",
                               "CASTOR_NODE_WATCH_INTERVAL_S=0.2",
                               "CASTOR_NODE_METADATA_WAIT_S=1",
                               "CASTOR_CLUSTER=" CLUSTER,
                               "CASTOR_FAKE_GPUS=1:16",
                               "CASTOR_NODE_HEARTBEAT_S=0.3",
                               "CASTOR_NODE_GRACE_S=3",
                               "CASTOR_NODE_TIMEOUT_S=2",
                               "CASTOR_NODE_BACKOFF_MAX_S=0.5",
                               NULL};

    pthread_mutex_init(&w->meta[i].lock, NULL);
    snprintf(w->meta[i].maintenance, sizeof(w->meta[i].maintenance), "NONE");
    assert_int_equal(lh_start(vm_meta_handle, &w->meta[i], &w->meta[i].server), 0);
    lh_url(w->meta[i].server, w->meta[i].url, sizeof(w->meta[i].url));
    snprintf(meta, sizeof(meta), "CASTOR_NODE_METADATA_URL=%s", w->meta[i].url);
    snprintf(w->node_id[i], sizeof(w->node_id[i]), "%s.%s", in->zone, in->name);
    snprintf(url, sizeof(url), "CASTOR_URL=http://127.0.0.1:%d", w->port);
    snprintf(id, sizeof(id), "CASTOR_INSTANCE_ID=%s", w->node_id[i]);
    snprintf(token, sizeof(token), "CASTOR_LAUNCH_TOKEN=%s", in->token);
    snprintf(ntf, sizeof(ntf), "CASTOR_NODE_TOKEN_FILE=%s/node.token", w->dir);
    snprintf(jtf, sizeof(jtf), "CASTOR_JOB_TOKEN_FILE=%s/job.token", w->dir);
    snprintf(log, sizeof(log), "%s/node-%zu.log", w->dir, i);
    w->node[i] = proc_spawn(CASTOR_NODE_BIN, argv, w->dir, log, env, NULL);
    assert_true(w->node[i] > 0);
}

/* One pass of the booter: boot what runs, stop what was deleted; the fake's clock follows. */
static void boot_tick(struct world *w)
{
    struct fake_gce_instance in;
    int status;

    fake_gce_set_now(w->fake, (int64_t)time(NULL));
    for (size_t i = 0; i < MAX_BOOTED && fake_gce_instance_at(w->fake, i, &in) == 0; i++) {
        if (strcmp(in.cluster, CLUSTER) != 0)
            continue;
        if (in.live && strcmp(in.status, "RUNNING") == 0 && w->node[i] == 0)
            boot(w, i, &in);
        if (!in.live && w->node[i] > 0 && !w->stopped[i]) {
            kill(w->node[i], SIGTERM); /* the VM is gone, its agent with it */
            w->stopped[i] = 1;
        }
        if (in.live && strcmp(in.status, "TERMINATED") == 0 && w->node[i] > 0 && !w->stopped[i]) {
            kill(w->node[i], SIGKILL); /* the VM was switched off */
            w->stopped[i] = 1;
        }
    }
    for (size_t i = 0; i < MAX_BOOTED; i++)
        if (w->node[i] > 0 && waitpid(w->node[i], &status, WNOHANG) == w->node[i])
            w->node[i] = -1; /* reaped */
}

/* ---- the controller and its API ---- */

static void start_controller(struct world *w)
{
    static const char *const env[] = {"PATH=/usr/bin:/bin", NULL};
    char *argv[] = {CASTOR_BIN, "run", "-c", w->config, NULL};
    double end = proc_now() + 30;

    w->pid = fork();
    assert_true(w->pid >= 0);
    if (w->pid == 0) {
        int fd = open(w->log, O_WRONLY | O_CREAT | O_APPEND, 0600);

        if (fd < 0 || dup2(fd, 2) < 0 || chdir(w->dir) != 0)
            _exit(99);
        execve(CASTOR_BIN, argv, (char *const *)env);
        _exit(98);
    }
    while (world_log_count(w->log, "API listening on") == 0 && proc_now() < end)
        proc_sleep(0.05);
    assert_true(world_log_count(w->log, "API listening on") == 1);
}

/* GET path with the user token; the status, the parsed body in *out. */
static long get(struct world *w, const char *path, struct jv **out)
{
    char url[256];
    const struct http_client_header h[1] = {{"Authorization", "Bearer " TOKEN_USER}};
    struct http_client_request req = {
        .method = "GET", .url = url, .headers = h, .nheaders = 1, .timeout_ms = 5000};
    struct http_client_response r = {0};
    long status = -1;

    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", w->port, path);
    *out = NULL;
    if (http_client_do(w->http, &req, &r, NULL) == 0) {
        status = r.status;
        if (jv_parse(r.body, r.body_len, out, NULL) < 0)
            *out = NULL;
    }
    http_client_response_clear(&r);
    return status;
}

static int submit(struct world *w, const char *file)
{
    char urlenv[96];
    char *env[] = {urlenv, "CASTOR_USER_TOKEN=" TOKEN_USER, "PATH=/usr/bin:/bin", NULL};
    char *argv[] = {CASTOR_BIN, "submit", (char *)file, NULL};
    int status;
    pid_t pid;

    snprintf(urlenv, sizeof(urlenv), "CASTOR_URL=http://127.0.0.1:%d", w->port);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);

        if (fd < 0 || dup2(fd, 1) < 0)
            _exit(99);
        execve(CASTOR_BIN, argv, env);
        _exit(98);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The job's state ("" when unknown). */
static void job_state(struct world *w, char *buf, size_t size)
{
    struct jv *v = NULL;
    const char *s;

    buf[0] = '\0';
    if (get(w, "/v1/jobs/" JOB, &v) == 200 && (s = jv_string_value(jv_get(v, "state"))))
        snprintf(buf, size, "%s", s);
    jv_free(v);
}

static int job_is(struct world *w, const char *want)
{
    char st[32];

    boot_tick(w);
    proc_sleep(0.1); /* a question every tenth of a second is enough */
    job_state(w, st, sizeof(st));
    if (getenv("CASTOR_TEST_VERBOSE"))
        fprintf(stderr, "e2e-gcp: %s is %s\n", JOB, st);
    return strcmp(st, want) == 0;
}

static int job_running(void *ctx)
{
    return job_is(ctx, "running");
}

static int job_finished(void *ctx)
{
    return job_is(ctx, "finished");
}

/* The job has run and written a checkpoint. */
static int job_checkpointed(void *ctx)
{
    struct world *w = ctx;
    struct jv *v = NULL;
    double progress = 0;

    boot_tick(w);
    proc_sleep(0.1);
    if (get(w, "/v1/jobs/" JOB, &v) == 200)
        jv_number_value(jv_get(v, "checkpoint_progress"), &progress);
    jv_free(v);
    return progress > 0;
}

/* The booted node the controller's fleet says has had a notice; its index, or -1. */
static int noticed_node(struct world *w)
{
    struct jv *v = NULL;
    int found = -1;

    if (get(w, "/v1/fleet", &v) != 200) {
        jv_free(v);
        return -1;
    }
    for (size_t k = 0; k < jv_size(jv_get(v, "nodes")); k++) {
        const struct jv *n = jv_at(jv_get(v, "nodes"), k);
        const char *id = jv_string_value(jv_get(n, "instance_id"));
        double at = NAN;

        jv_number_value(jv_get(n, "notice_at"), &at);
        for (int i = 0; id && isfinite(at) && i < MAX_BOOTED; i++)
            if (strcmp(w->node_id[i], id) == 0)
                found = i;
    }
    jv_free(v);
    return found;
}

struct notice_want {
    struct world *w;
    int index;
};

static int node_noticed(void *ctx)
{
    struct notice_want *q = ctx;

    boot_tick(q->w);
    proc_sleep(0.05);
    return noticed_node(q->w) == q->index;
}

static int fleet_empty(void *ctx)
{
    struct world *w = ctx;

    boot_tick(w);
    return fake_gce_instance_count(w->fake) == 0;
}

/* Every node the booter started has been stopped and reaped. */
static int nodes_reaped(void *ctx)
{
    struct world *w = ctx;

    boot_tick(w);
    for (size_t i = 0; i < MAX_BOOTED; i++)
        if (w->node[i] > 0)
            return 0;
    return 1;
}

/* ---- setup ---- */

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int world_setup(void **state)
{
    struct world *w = calloc(1, sizeof(*w));

    if (!w)
        return -1;
    w->t0 = proc_now();
    snprintf(w->dir, sizeof(w->dir), "/tmp/castor-e2e-gcp-XXXXXX");
    if (!mkdtemp(w->dir) || http_client_new(&w->http) < 0)
        return -1;
    snprintf(w->config, sizeof(w->config), "%s/castor.yaml", w->dir);
    snprintf(w->log, sizeof(w->log), "%s/castor.log", w->dir);
    snprintf(w->key, sizeof(w->key), "%s/key.json", w->dir);
    w->fake = fake_gce_start(GCP_PROJECT, GCP_EMAIL, GCP_A2_PUB);
    if (!w->fake)
        return -1;
    fake_gce_set_now(w->fake, (int64_t)time(NULL));
    *state = w;
    return 0;
}

static int world_teardown(void **state)
{
    struct world *w = *state;
    int status;

    if (w->pid > 0) {
        kill(w->pid, SIGKILL);
        waitpid(w->pid, NULL, 0);
    }
    for (size_t i = 0; i < MAX_BOOTED; i++)
        if (w->node[i] > 0) {
            kill(w->node[i], SIGKILL);
            waitpid(w->node[i], &status, 0);
        }
    if (getenv("CASTOR_TEST_VERBOSE")) {
        proc_dump_log("castor run", w->log);
        for (size_t i = 0; i < MAX_BOOTED; i++)
            if (w->node_id[i][0]) {
                char log[200];

                snprintf(log, sizeof(log), "%s/node-%zu.log", w->dir, i);
                proc_dump_log(w->node_id[i], log);
            }
    }
    for (size_t i = 0; i < MAX_BOOTED; i++)
        if (w->meta[i].server) {
            lh_stop(w->meta[i].server);
            pthread_mutex_destroy(&w->meta[i].lock);
        }
    fake_gce_stop(w->fake);
    http_client_free(w->http);
    if (!getenv("CASTOR_TEST_KEEP"))
        nftw(w->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(w);
    return 0;
}

static void gcp_world__job_runs_after_zone_failover_and_nothing_leaks(void **state)
{
    struct world *w = *state;
    struct fake_gce_instance in;
    struct notice_want notice = {w, -1};
    char uri[160];
    int booted = 0, status, victim = -1, resumed = 0;

    w->port = world_free_port();
    assert_true(w->port > 0);
    assert_int_equal(world_write_file(wpath(w, "node.token"), TOKEN_NODE "\n", 0600), 0);
    assert_int_equal(world_write_file(wpath(w, "job.token"), TOKEN_JOB "\n", 0600), 0);
    assert_int_equal(world_write_file(wpath(w, "user.token"), TOKEN_USER "\n", 0600), 0);
    /* the service account's key (RFC 7515 A.2's), its token_uri the fake's */
    snprintf(uri, sizeof(uri), "%s%s", fake_gce_url(w->fake), FAKE_GCE_TOKEN);
    assert_int_equal(gcp_write_key(w->key, "service_account", GCP_A2_KEY, uri), 0);
    assert_int_equal(chmod(w->key, 0600), 0);
    write_config(w);
    write_job(w);
    fake_gce_exhaust_zone(w->fake, ZONE_OUT, 1);

    step(w, "start the controller (world gcp on the fake Google Cloud)");
    start_controller(w);
    assert_int_equal(submit(w, wpath(w, JOB ".yaml")), 0);
    step(w, "job submitted; waiting for an instance, its castor-node and the replica");
    assert_true(proc_wait_for(job_running, w, 60));
    assert_true(proc_wait_for(job_checkpointed, w, 30));
    step(w, "the job runs and has checkpointed");

    /* its VM's host goes into maintenance: castor-node's watcher reads the event from the VM's
     * metadata server and the controller hears of it; then the VM is switched off */
    for (size_t i = 0; i < MAX_BOOTED; i++)
        if (w->node_id[i][0])
            victim = (int)i;
    assert_true(victim >= 0);
    pthread_mutex_lock(&w->meta[victim].lock);
    snprintf(w->meta[victim].maintenance, sizeof(w->meta[victim].maintenance),
             "TERMINATE_ON_HOST_MAINTENANCE");
    pthread_mutex_unlock(&w->meta[victim].lock);
    notice.index = victim;
    assert_true(proc_wait_for(node_noticed, &notice, 20));
    step(w, "the maintenance event reached the controller as a notice");
    assert_int_equal(
        fake_gce_set_status(w->fake, ZONE_IN, strchr(w->node_id[victim], '.') + 1, "TERMINATED"),
        0);
    step(w, "the VM is off (TERMINATED); the job moves");
    assert_true(proc_wait_for(job_finished, w, 120));
    step(w, "the job finished");
    for (size_t i = 0; i < MAX_BOOTED; i++) {
        char log[200], *text, *at;

        if (!w->node_id[i][0] || (int)i == victim)
            continue;
        snprintf(log, sizeof(log), "%s/node-%zu.log", w->dir, i);
        text = proc_slurp(log);
        at = text ? strstr(text, "rank 0: start: progress ") : NULL;
        resumed |= at && strtod(at + strlen("rank 0: start: progress "), NULL) > 0;
        free(text);
    }
    assert_true(resumed); /* on another VM, from its checkpoint */

    /* the exhausted zone was asked once: its other offer was held with it */
    assert_int_equal(fake_gce_requests(w->fake, INSERTS_IN(ZONE_OUT)), 1);
    assert_true(fake_gce_requests(w->fake, INSERTS_IN(ZONE_IN)) >= 1);
    assert_true(world_log_count(w->log, "the cloud refused a launch of") >= 1);
    for (size_t i = 0; fake_gce_instance_at(w->fake, i, &in) == 0; i++) {
        assert_string_equal(in.zone, ZONE_IN);
        booted += w->node_id[i][0] != '\0';
    }
    assert_true(booted >= 2); /* the first, and the one after the maintenance */

    step(w, "waiting for the fleet to shrink (a node is kept its first minute)");
    assert_true(proc_wait_for(fleet_empty, w, 120));
    assert_true(proc_wait_for(nodes_reaped, w, 30));
    step(w, "every instance deleted and its castor-node stopped");

    kill(w->pid, SIGTERM);
    status = proc_wait_exit(w->pid, 20);
    w->pid = 0;
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(fake_gce_instance_count(w->fake), 0);
    /* every API call carried a token the fake issued for a JWT that verified */
    assert_true(fake_gce_tokens_issued(w->fake) >= 1);
    assert_int_equal(fake_gce_auth_failures(w->fake), 0);
    for (size_t i = 0; i < MAX_BOOTED; i++)
        if (w->node_id[i][0] && w->node[i] > 0 && proc_alive(w->node[i]))
            fail_msg("castor-node of %s is still alive", w->node_id[i]);
    step(w, "the controller stopped; no instance and no process left");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(gcp_world__job_runs_after_zone_failover_and_nothing_leaks,
                                        world_setup, world_teardown),
    };

    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
