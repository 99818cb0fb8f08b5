/* test_aws_world.c: the aws world end to end against moto's EC2 server (tests/support/moto.h,
 * request authentication on): `castor run` with world aws pointed at moto launches instances by
 * CreateFleet from a launch template; a small booter here plays EC2's part of booting them,
 * listing moto's instances that carry the cluster's tag and starting a castor-node process for
 * each running one (its instance id, the launch token from its tag, the node token, the API's
 * URL); a job submitted through the API runs on them with castor-job-emulator and finishes; the
 * fleet then shrinks to nothing and every instance castor launched is terminated in moto (none
 * leaked, one per launch intent, each with its own token), and no process is left. Without moto
 * (.venv) it is skipped (exit 77), and fails under CI. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "providers/aws/ec2.h"
#include "support/moto.h"
#include "support/world.h"

#define TOKEN_NODE "aws-e2e-node-token-0123456789abcdef"
#define TOKEN_JOB "aws-e2e-job-token-0123456789abcdef"
#define TOKEN_USER "aws-e2e-user-token-0123456789abcdef"
#define CLUSTER "aws-e2e"
#define REGION "us-east-1"
#define TYPE "g5.xlarge"
#define JOB "delta"
#define EPOCHS 10   /* of cifar10 */
#define SPEED 100.0 /* emulated seconds per real second */
#define LOCAL_BSZ 128
#define MAX_NODES 16

static struct moto moto;

/* An instance the booter has seen, and its castor-node. */
struct booted {
    char id[32];
    pid_t pid; /* 0: not started (not running yet); -1: stopped */
};

struct world {
    char dir[64];
    char path[256]; /* scratch */
    char config[128], log[128], state[128];
    pid_t pid; /* the controller */
    int port;
    double t0;
    struct http_client *http;
    struct aws_credential_source *creds;
    struct ec2_client *ec2; /* the test's own look at moto */
    char zone[32];
    char template_id[64];
    struct booted nodes[MAX_NODES];
    int n_nodes;
};

static const char *wpath(struct world *w, const char *name)
{
    snprintf(w->path, sizeof(w->path), "%s/%s", w->dir, name);
    return w->path;
}

static void step(struct world *w, const char *what)
{
    fprintf(stderr, "e2e-aws: %6.2f s: %s\n", proc_now() - w->t0, what);
}

static int64_t real_clock(void *arg)
{
    (void)arg;
    return (int64_t)time(NULL);
}

static void ec2_log(void *arg, const char *line)
{
    (void)arg;
    fprintf(stderr, "  [test ec2] %s\n", line);
}

/* A launch template in moto (the image and type castor-node "boots" from) into w. */
static void make_template(struct world *w)
{
    struct ec2_params *p = ec2_params_new();
    struct xml_doc *doc = NULL;

    ec2_params_add(p, "castor-node-e2e", "LaunchTemplateName");
    ec2_params_add(p, "ami-03cf127a", "LaunchTemplateData.ImageId");
    ec2_params_add(p, TYPE, "LaunchTemplateData.InstanceType");
    assert_int_equal(ec2_call(w->ec2, "CreateLaunchTemplate", p, &doc, NULL), 0);
    assert_int_equal(xml_copy(xml_root(doc), "launchTemplate/launchTemplateId", w->template_id,
                              sizeof(w->template_id)),
                     0);
    xml_free(doc);
    ec2_params_free(p);
}

/* The zone of the default VPC's first subnet into w->zone. */
static void pick_zone(struct world *w)
{
    struct xml_doc *doc = NULL;

    assert_int_equal(ec2_call(w->ec2, "DescribeSubnets", NULL, &doc, NULL), 0);
    assert_int_equal(
        xml_copy(xml_root(doc), "subnetSet/item/availabilityZone", w->zone, sizeof(w->zone)), 0);
    xml_free(doc);
}

static void write_config(struct world *w)
{
    char text[4096];

    snprintf(text, sizeof(text),
             "cluster: " CLUSTER "\n"
             "world: aws\n"
             "cloud:\n"
             "  region: " REGION "\n"
             "  endpoint: %s\n"
             "  imds: false\n"
             "  credentials_file: /nonexistent\n"
             "  pricing: false\n" /* moto has no Price List API: the table prices on-demand */
             "  quotas: off\n"    /* moto's Service Quotas knows no EC2 quota */
             "  prices: %s/aws-prices.yaml\n"
             "  launch_template: %s\n"
             "  offers:\n"
             "    - instance_type: " TYPE "\n"
             "      zone: %s\n"
             "      market: on-demand\n"
             "      gpus: 1\n" WORLD_CONFIG_TAIL "  max_nodes: 2\n",
             moto.url, CASTOR_CONFDIR, w->template_id, w->zone, w->port);
    assert_int_equal(world_write_file(w->config, text, 0600), 0);
}

static void start_controller(struct world *w)
{
    char akid[96], secret[160];
    char *env[] = {"PATH=/usr/bin:/bin", akid, secret, "AWS_EC2_METADATA_DISABLED=true", NULL};

    snprintf(akid, sizeof(akid), "AWS_ACCESS_KEY_ID=%s", moto.akid);
    snprintf(secret, sizeof(secret), "AWS_SECRET_ACCESS_KEY=%s", moto.secret);
    w->pid = world_start_controller(CASTOR_BIN, w->config, w->dir, w->log, env);
    assert_true(w->pid > 0);
}

/* One request with the user token; the status, the parsed body in *out (may be NULL). */
static long call(struct world *w, const char *method, const char *path, const char *body,
                 struct jv **out)
{
    return world_call(w->http, w->port, method, path, TOKEN_USER, body, out);
}

/* Submit the job through the API: the emulator on one GPU at a fixed batch. */
static void submit(struct world *w)
{
    char body[2048], workdir[160];

    snprintf(workdir, sizeof(workdir), "%s/work-" JOB, w->dir);
    assert_int_equal(mkdir(workdir, 0700), 0);
    snprintf(body, sizeof(body),
             "{\"name\": \"" JOB "\", \"command\": [\"%s\", \"cifar10\"], \"workdir\": \"%s\", "
             "\"env\": {\"CASTOR_EMULATOR_SPEED\": \"%g\", \"CASTOR_EMULATOR_EPOCHS\": \"%d\", "
             "\"CASTOR_EMULATOR_REPORT_S\": \"20\", \"CASTOR_EMULATOR_FINISH_WAIT_S\": \"30\"}, "
             "\"init_batch_size\": %d, \"max_batch_size\": %d, \"max_local_bsz\": %d, "
             "\"max_replicas\": 1, \"checkpoint_interval\": 50}",
             CASTOR_EMULATOR_BIN, workdir, SPEED, EPOCHS, LOCAL_BSZ, LOCAL_BSZ, LOCAL_BSZ);
    assert_int_equal(call(w, "POST", "/v1/jobs", body, NULL), 201);
}

/* Start castor-node for instance in (running in moto), as EC2's boot would. */
static pid_t boot_node(struct world *w, const struct ec2_instance *in)
{
    char url[64], id[64], token[96], logp[160];
    const char *const env[] = {url,
                               id,
                               token,
                               "CASTOR_CLUSTER=" CLUSTER,
                               "CASTOR_FAKE_GPUS=1",
                               "CASTOR_NODE_MASTER_ADDR=127.0.0.1",
                               "CASTOR_NODE_MARKET=on-demand",
                               "CASTOR_NODE_HEARTBEAT_S=0.3",
                               "CASTOR_NODE_GRACE_S=3",
                               "CASTOR_NODE_TIMEOUT_S=2",
                               "CASTOR_NODE_BACKOFF_MAX_S=0.5",
                               NULL};
    char tokfile[160], jobfile[160];
    const char *const files[] = {tokfile, jobfile, NULL};
    char *argv[] = {CASTOR_NODE_BIN, NULL};

    snprintf(url, sizeof(url), "CASTOR_URL=http://127.0.0.1:%d", w->port);
    snprintf(id, sizeof(id), "CASTOR_INSTANCE_ID=%s", in->id);
    snprintf(token, sizeof(token), "CASTOR_LAUNCH_TOKEN=%s", in->launch_token);
    snprintf(tokfile, sizeof(tokfile), "CASTOR_NODE_TOKEN_FILE=%s/node.token", w->dir);
    snprintf(jobfile, sizeof(jobfile), "CASTOR_JOB_TOKEN_FILE=%s/job.token", w->dir);
    snprintf(logp, sizeof(logp), "%s/node-%s.log", w->dir, in->id);
    return proc_spawn(CASTOR_NODE_BIN, argv, w->dir, logp, env, files);
}

/* Stop a node (its instance is gone): SIGTERM, then SIGKILL after 5 s. */
static void stop_node(struct booted *b)
{
    if (b->pid <= 0)
        return;
    kill(b->pid, SIGTERM);
    proc_wait_exit(b->pid, 5); /* SIGKILLed after that */
    b->pid = -1;
}

/* The cluster's instances in moto into *out (free), *n of them. */
static void cluster(struct world *w, struct ec2_instance **out, size_t *n)
{
    assert_int_equal(ec2_describe_cluster(w->ec2, CLUSTER, out, n, NULL), 0);
}

/* One round of the booter: a node for each new running instance, a stop for each node whose
 * instance is no longer running. */
static void boot_round(struct world *w)
{
    struct ec2_instance *in = NULL;
    size_t n = 0;

    cluster(w, &in, &n);
    for (size_t i = 0; i < n; i++) {
        struct booted *b = NULL;

        for (int k = 0; k < w->n_nodes && !b; k++)
            if (strcmp(w->nodes[k].id, in[i].id) == 0)
                b = &w->nodes[k];
        if (!b) {
            assert_true(w->n_nodes < MAX_NODES);
            b = &w->nodes[w->n_nodes++];
            snprintf(b->id, sizeof(b->id), "%s", in[i].id);
        }
        if (b->pid == 0 && strcmp(in[i].state, "running") == 0) {
            b->pid = boot_node(w, &in[i]);
            assert_true(b->pid > 0);
            step(w, "an instance runs in moto: its castor-node started");
        } else if (b->pid > 0 && strcmp(in[i].state, "running") != 0) {
            stop_node(b);
            step(w, "an instance left running in moto: its castor-node stopped");
        }
    }
    free(in);
}

/* The job's state from the API ("" when unknown). */
static void job_state(struct world *w, char *state, size_t size)
{
    struct jv *v = NULL;

    state[0] = '\0';
    if (call(w, "GET", "/v1/jobs/" JOB, NULL, &v) == 200 && jv_get(v, "state"))
        snprintf(state, size, "%s", jv_string_value(jv_get(v, "state")));
    jv_free(v);
}

static int job_finished(void *ctx)
{
    struct world *w = ctx;
    char st[32];

    proc_sleep(0.2); /* a booter's pace, not a busy loop */
    boot_round(w);
    job_state(w, st, sizeof(st));
    return strcmp(st, "finished") == 0;
}

/* Every instance of the cluster in moto is gone (terminated or shutting down), and there was
 * at least one. */
static int fleet_gone(void *ctx)
{
    struct world *w = ctx;
    struct ec2_instance *in = NULL;
    size_t n = 0;
    int live = 0;

    proc_sleep(0.2);
    boot_round(w);
    cluster(w, &in, &n);
    for (size_t i = 0; i < n; i++)
        live += strcmp(in[i].state, "terminated") != 0 && strcmp(in[i].state, "shutting-down") != 0;
    free(in);
    return n > 0 && live == 0;
}

/* How many instant fleets moto holds (castor's CreateFleet calls). */
static int instant_fleets(struct world *w)
{
    struct xml_doc *doc = NULL;
    char type[32];
    int n = 0;

    assert_int_equal(ec2_call(w->ec2, "DescribeFleets", NULL, &doc, NULL), 0);
    for (struct xml_node *it = xml_find(xml_root(doc), "fleetSet/item"); it; it = xml_next(it))
        n += xml_copy(it, "type", type, sizeof(type)) == 0 && strcmp(type, "instant") == 0;
    xml_free(doc);
    return n;
}

static int world_setup(void **state)
{
    struct world *w = calloc(1, sizeof(*w));
    struct aws_credential_config cc = {.imds_disabled = 1, .credentials_file = "/nonexistent"};
    struct ec2_config ec = {
        .region = REGION, .timeout_ms = 20000, .seed = 3, .clock = real_clock, .log = ec2_log};
    char path[1024];

    if (!w)
        return -1;
    w->t0 = proc_now();
    moto_find(CASTOR_TEST_DATA, path, sizeof(path));
    if (moto_start(path, &moto) < 0)
        return -1;
    setenv("AWS_ACCESS_KEY_ID", moto.akid, 1);
    setenv("AWS_SECRET_ACCESS_KEY", moto.secret, 1);
    unsetenv("AWS_SESSION_TOKEN");
    ec.endpoint = moto.url;
    if (aws_credential_source_new(&cc, &w->creds) < 0)
        return -1;
    ec.credentials = w->creds;
    if (ec2_client_new(&ec, &w->ec2, NULL) < 0)
        return -1;
    snprintf(w->dir, sizeof(w->dir), "/tmp/castor-e2e-aws-XXXXXX");
    if (!mkdtemp(w->dir) || http_client_new(&w->http) < 0)
        return -1;
    snprintf(w->config, sizeof(w->config), "%s/castor.yaml", w->dir);
    snprintf(w->log, sizeof(w->log), "%s/castor.log", w->dir);
    snprintf(w->state, sizeof(w->state), "%s/state.db", w->dir);
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    *state = w;
    return 0;
}

static int world_teardown(void **state)
{
    struct world *w = *state;

    if (w->pid > 0) {
        kill(w->pid, SIGKILL);
        waitpid(w->pid, NULL, 0);
    }
    for (int k = 0; k < w->n_nodes; k++)
        stop_node(&w->nodes[k]);
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
    if (getenv("CASTOR_TEST_VERBOSE"))
        proc_dump_log("castor run", w->log);
    ec2_client_free(w->ec2);
    aws_credential_source_free(w->creds);
    http_client_free(w->http);
    moto_stop(&moto);
    world_remove(w->dir);
    free(w);
    return 0;
}

static void aws_world__a_job_runs_on_moto_instances_and_none_is_leaked(void **state)
{
    struct world *w = *state;
    struct ec2_instance *in = NULL;
    struct state *st = NULL;
    size_t n = 0;
    int status;

    w->port = world_free_port();
    pick_zone(w);
    make_template(w);
    assert_int_equal(world_write_file(wpath(w, "node.token"), TOKEN_NODE "\n", 0600), 0);
    assert_int_equal(world_write_file(wpath(w, "job.token"), TOKEN_JOB "\n", 0600), 0);
    assert_int_equal(world_write_file(wpath(w, "user.token"), TOKEN_USER "\n", 0600), 0);
    write_config(w);

    step(w, "start the controller (world aws, endpoint moto)");
    start_controller(w);
    submit(w);
    step(w, "a job submitted through the API; booting moto's instances as they come");
    if (!proc_wait_for(job_finished, w, 90)) {
        proc_dump_log("castor run", w->log);
        fail_msg("the job did not finish (CASTOR_TEST_VERBOSE=1 shows the logs)");
    }
    step(w, "the job finished");
    assert_true(proc_wait_for(fleet_gone, w, 120));
    boot_round(w); /* the last instances' nodes go with them */
    step(w, "the fleet shrank: every instance of the cluster is terminated in moto");

    step(w, "SIGTERM the controller");
    kill(w->pid, SIGTERM);
    status = proc_wait_exit(w->pid, 20);
    w->pid = 0;
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    /* one instance per launch intent, each with its own token, launched by an instant fleet */
    cluster(w, &in, &n);
    assert_true(n >= 1);
    assert_int_equal(state_open(w->state, &st, NULL), 0);
    assert_int_equal(
        world_count_rows(st, "SELECT count(*) FROM launch_intents WHERE state='launched'"),
        (long long)n);
    assert_int_equal(world_count_rows(st, "SELECT count(*) FROM jobs WHERE state='finished'"), 1);
    for (size_t i = 0; i < n; i++) {
        char sql[256];

        assert_string_equal(in[i].type, TYPE);
        assert_string_equal(in[i].zone, w->zone);
        assert_int_equal(in[i].market, EC2_ON_DEMAND);
        assert_string_equal(in[i].state, "terminated");
        snprintf(sql, sizeof(sql), "SELECT count(*) FROM launch_intents WHERE token = '%s'",
                 in[i].launch_token);
        assert_int_equal(world_count_rows(st, sql), 1);
        for (size_t k = 0; k < i; k++)
            assert_string_not_equal(in[i].launch_token, in[k].launch_token);
    }
    state_close(st);
    free(in);
    assert_int_equal(world_log_count(w->log, "refused a launch"), 0);
    /* the launches were instant fleets, as many as the instances */
    assert_int_equal(instant_fleets(w), (int)n);

    /* no node process left */
    for (int k = 0; k < w->n_nodes; k++)
        if (w->nodes[k].pid > 0 && proc_alive(w->nodes[k].pid))
            fail_msg("the node of %s (pid %ld) is still alive", w->nodes[k].id,
                     (long)w->nodes[k].pid);
    step(w, "no instance leaked, no node left");
}

int main(void)
{
    char path[1024];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(aws_world__a_job_runs_on_moto_instances_and_none_is_leaked,
                                        world_setup, world_teardown),
    };

    if (!moto_find(CASTOR_TEST_DATA, path, sizeof(path)))
        return moto_missing("test_aws_world", path);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
