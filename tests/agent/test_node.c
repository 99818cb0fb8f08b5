/* test_node.c: castor-node. Its pure parts (the assignment, a replica's environment, the master
 * port) in process; then the real castor-node program against the real API on loopback with a
 * temporary state: registration with fake GPUs, heartbeats, replicas started from an assignment
 * with their environment, restarted on a change (SIGTERM, then SIGKILL after the grace), a
 * SIGUSR1 forwarded as a notice, SIGTERM leaving no process behind, retries while the controller
 * is away, bad answers survived, and a terminated node exiting. The replicas are
 * tests/data/agent/replica.sh. */
#define _GNU_SOURCE /* setgroups, prlimit */
#include <dirent.h>
#include <grp.h>
#include <pwd.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "agent/node.h"
#include "support/api_server.h"
#include "support/loopback_http.h"
#include "support/process.h"

#define REPLICA_SH CASTOR_TEST_DATA "/agent/replica.sh"
#define GRACE_S 0.6
/* A node registers in well under a second. The clean-clone CI runs that failed with 10 s and then
 * 30 s were not slow: the forked child hung in proc_spawn before exec (see there). A node that
 * never registers still fails. */
#define REGISTER_WAIT_S 30
#define NODE_ID "i-test-node"

/* ---- pure parts ---- */

static const char assignment_text[] =
    "{\"instance_id\":\"i-1\",\"state\":\"ready\",\"jobs\":["
    "{\"job\":\"resnet\",\"replicas\":2,\"rank_offset\":2,\"world_size\":4,\"nodes\":2,"
    "\"master\":\"i-0\","
    "\"master_addr\":\"10.1.2.3\",\"placed_at\":1714564810.25,\"attempt\":2,\"restart_delay\":4,"
    "\"generation\":\"00ff00ff00ff00ff\",\"wait_for\":[\"i-7\",\"i-8\"],"
    "\"local_bsz\":64,\"accum_steps\":1,\"lr_gain\":1.25,\"spec\":{\"name\":\"resnet\","
    "\"command\":[\"python\",\"train.py\"],\"workdir\":\"/w\",\"env\":{\"A\":\"1\"},"
    "\"checkpoint_interval\":600,\"init_batch_size\":128,\"max_batch_size\":4096,"
    "\"max_local_bsz\":256}},"
    "{\"job\":\"bert\",\"replicas\":1,\"rank_offset\":0,\"world_size\":1,\"master\":\"i-1\","
    "\"job_token\":\"cj1.bert.0123abcd\",\"local_bsz\":null,\"accum_steps\":null,\"lr_gain\":null,"
    "\"spec\":{\"name\":\"bert\","
    "\"command\":[\"x\"],\"image\":\"img\"}}]}";

static void node_assignment_parse__reads_jobs_and_configuration(void **state)
{
    struct node_assignment a;
    const struct node_job *j;

    (void)state;
    assert_int_equal(node_assignment_parse(assignment_text, strlen(assignment_text), &a, NULL), 0);
    assert_string_equal(a.state, "ready");
    assert_int_equal(a.njobs, 2);
    j = &a.jobs[0];
    assert_string_equal(j->name, "resnet");
    assert_int_equal(j->replicas, 2);
    assert_int_equal(j->rank_offset, 2);
    assert_int_equal(j->world_size, 4);
    assert_int_equal(j->nodes, 2);
    assert_true(j->init_bsz == 128 && j->max_bsz == 4096 && j->max_local_bsz == 256);
    assert_string_equal(j->master, "i-0");
    assert_true(j->local_bsz == 64 && j->accum_steps == 1 && j->lr_gain == 1.25);
    assert_true(j->ckpt_s == 600 && j->placed_at == 1714564810.25);
    assert_true(j->attempt == 2 && j->restart_delay == 4 && isnan(j->seen_at));
    assert_string_equal(j->argv[0], "python");
    assert_string_equal(j->argv[1], "train.py");
    assert_null(j->argv[2]);
    assert_string_equal(j->workdir, "/w");
    assert_string_equal(j->env[0], "A=1");
    assert_null(j->env[1]);
    assert_null(j->why_not);
    assert_non_null(strstr(j->key, "\"resnet\""));
    assert_string_equal(j->generation, "00ff00ff00ff00ff");
    assert_non_null(strstr(j->key, "00ff00ff00ff00ff"));
    assert_string_equal(j->wait_for, "i-7, i-8");
    assert_null(strstr(j->key, "wait_for")); /* a running replica does not restart for it */
    assert_null(strstr(j->key, "i-7"));
    j = &a.jobs[1]; /* no configuration yet, and an image castor-node cannot run */
    assert_null(j->generation);
    assert_null(j->wait_for);
    assert_true(isnan(j->local_bsz) && j->accum_steps == -1 && isnan(j->lr_gain));
    assert_true(isnan(j->placed_at)); /* not said */
    assert_int_equal(j->nodes, 0);
    assert_true(isnan(j->init_bsz) && isnan(j->max_bsz) && isnan(j->max_local_bsz));
    assert_true(j->attempt == 0 && j->restart_delay == 0);
    assert_null(j->argv);
    assert_non_null(j->why_not);
    assert_non_null(strstr(j->why_not, "image"));
    node_assignment_clear(&a);
}

/* A job that reconfigures in flight: its entry's key leaves out the configuration, so that a new
 * one restarts nothing; one that does not keeps it. */
static void node_assignment_parse__in_flight_keys_leave_out_the_configuration(void **state)
{
    static const char fmt[] =
        "{\"state\":\"ready\",\"jobs\":[{\"job\":\"a\",\"replicas\":1,\"rank_offset\":0,"
        "\"world_size\":1,\"master\":\"m\",\"local_bsz\":%d,\"accum_steps\":%d,"
        "\"lr_gain\":%g,\"spec\":{\"name\":\"a\",\"command\":[\"x\"],\"workdir\":\"/w\""
        "%s}}]}";
    struct node_assignment one, two;
    char text[2][512];

    (void)state;
    for (int in = 0; in < 2; in++) {
        const char *more = in ? ",\"reconfigure\":\"in_flight\"" : ",\"reconfigure\":\"restart\"";

        snprintf(text[0], sizeof(text[0]), fmt, 64, 0, 1.0, more);
        snprintf(text[1], sizeof(text[1]), fmt, 128, 3, 1.5, more);
        assert_int_equal(node_assignment_parse(text[0], strlen(text[0]), &one, NULL), 0);
        assert_int_equal(node_assignment_parse(text[1], strlen(text[1]), &two, NULL), 0);
        assert_int_equal(one.jobs[0].in_flight, in);
        assert_int_equal(strcmp(one.jobs[0].key, two.jobs[0].key) == 0, in);
        /* the configuration is still read, for a replica's environment */
        assert_true(two.jobs[0].local_bsz == 128 && two.jobs[0].accum_steps == 3);
        node_assignment_clear(&one);
        node_assignment_clear(&two);
    }
}

static void node_assignment_parse__refuses_malformed_answers(void **state)
{
    static const char *const bad[] = {
        "{not json",
        "{\"state\":\"ready\"}",
        "{\"state\":\"ready\",\"jobs\":{}}",
        "{\"state\":\"ready\",\"jobs\":[{\"job\":\"a\",\"replicas\":-1,\"rank_offset\":0,"
        "\"world_size\":1,\"master\":\"m\"}]}",
        "{\"state\":\"ready\",\"jobs\":[{\"job\":\"a\",\"replicas\":2,\"rank_offset\":1,"
        "\"world_size\":2,\"master\":\"m\"}]}",
        "{\"state\":\"ready\",\"jobs\":[{\"job\":\"a\",\"replicas\":1,\"rank_offset\":0,"
        "\"world_size\":1,\"master\":\"m\",\"local_bsz\":\"64\"}]}",
        "{\"state\":\"ready\",\"jobs\":[{\"job\":\"a\",\"replicas\":1,\"rank_offset\":0,"
        "\"world_size\":2,\"master\":\"m\"},{\"job\":\"a\",\"replicas\":1,\"rank_offset\":1,"
        "\"world_size\":2,\"master\":\"m\"}]}",
        "{\"state\":\"ready\",\"jobs\":[5]}",
        "{\"state\":\"ready\",\"jobs\":[{\"job\":\"a\",\"replicas\":1,\"rank_offset\":0,"
        "\"world_size\":1,\"master\":\"m\",\"master_addr\":7}]}",
        "{\"state\":\"ready\",\"jobs\":[{\"job\":\"a\",\"replicas\":1,\"rank_offset\":0,"
        "\"world_size\":1,\"master\":\"m\",\"attempt\":-1}]}",
        "{\"state\":\"ready\",\"jobs\":[{\"job\":\"a\",\"replicas\":1,\"rank_offset\":0,"
        "\"world_size\":1,\"master\":\"m\",\"restart_delay\":-2}]}",
        "{\"state\":\"ready\",\"jobs\":[{\"job\":\"a\",\"replicas\":1,\"rank_offset\":0,"
        "\"world_size\":1,\"master\":\"m\",\"restart_delay\":\"soon\"}]}",
        "{\"state\":\"ready\",\"jobs\":[{\"job\":\"a\",\"replicas\":1,\"rank_offset\":0,"
        "\"world_size\":1,\"master\":\"m\",\"job_token\":\"\"}]}",
        "{\"state\":\"ready\",\"jobs\":[{\"job\":\"a\",\"replicas\":1,\"rank_offset\":0,"
        "\"world_size\":1,\"master\":\"m\",\"job_token\":7}]}",
        "{\"state\":\"ready\",\"jobs\":[{\"job\":\"a\",\"replicas\":1,\"rank_offset\":0,"
        "\"world_size\":1,\"master\":\"m\",\"generation\":7}]}",
        "{\"state\":\"ready\",\"jobs\":[{\"job\":\"a\",\"replicas\":1,\"rank_offset\":0,"
        "\"world_size\":1,\"master\":\"m\",\"generation\":"
        "\"00000000001111111111222222222233333333334444444444555555555566666\"}]}",
        "{\"state\":\"ready\",\"jobs\":[{\"job\":\"a\",\"replicas\":1,\"rank_offset\":0,"
        "\"world_size\":1,\"master\":\"m\",\"wait_for\":[]}]}",
        "{\"state\":\"ready\",\"jobs\":[{\"job\":\"a\",\"replicas\":1,\"rank_offset\":0,"
        "\"world_size\":1,\"master\":\"m\",\"wait_for\":\"i-7\"}]}",
        "{\"state\":\"ready\",\"jobs\":[{\"job\":\"a\",\"replicas\":1,\"rank_offset\":0,"
        "\"world_size\":1,\"master\":\"m\",\"wait_for\":[\"\"]}]}",
        "{\"state\":\"ready\",\"jobs\":[{\"job\":\"a\",\"replicas\":1,\"rank_offset\":0,"
        "\"world_size\":2,\"nodes\":3,\"master\":\"m\"}]}",
        "{\"state\":\"ready\",\"jobs\":[{\"job\":\"a\",\"replicas\":1,\"rank_offset\":0,"
        "\"world_size\":1,\"master\":\"m\",\"spec\":{\"init_batch_size\":-1}}]}",
    };
    struct node_assignment a = {.njobs = 77};

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct error e = {0};

        assert_int_equal(node_assignment_parse(bad[i], strlen(bad[i]), &a, &e), ERR_PARSE);
        assert_int_equal(a.njobs, 77); /* untouched */
        assert_true(e.msg[0] != '\0');
    }
}

/* The value of name in env, or NULL. */
static const char *env_get(char **env, const char *name)
{
    size_t n = strlen(name);

    for (size_t i = 0; env[i]; i++)
        if (strncmp(env[i], name, n) == 0 && env[i][n] == '=')
            return env[i] + n + 1;
    return NULL;
}

static void node_replica_env__ranks_configuration_and_no_node_secret(void **state)
{
    const char *const base[] = {"PATH=/bin",
                                "CASTOR_NODE_TOKEN=node-secret",
                                "CASTOR_USER_TOKEN_FILE=/secret/user",
                                "CASTOR_JOB=stale",
                                "HOME=/home/x",
                                NULL};
    struct node_env_inputs in = {.base = base,
                                 .self = "i-1",
                                 .url = "http://c:1",
                                 .job_token = "job-secret",
                                 .master_addr = "10.0.0.9",
                                 .gpu = 3};
    struct node_assignment a;
    char **env = NULL, **other = (char **)base;

    (void)state;
    assert_int_equal(node_assignment_parse(assignment_text, strlen(assignment_text), &a, NULL), 0);
    free(a.jobs[0].env[0]);
    a.jobs[0].env[0] = strdup("PATH=/custom");
    assert_int_equal(node_replica_env(&a.jobs[0], 1, &in, &env), 0);
    assert_string_equal(env_get(env, "CASTOR_RANK"), "3");
    assert_string_equal(env_get(env, "CASTOR_LOCAL_RANK"), "1");
    assert_string_equal(env_get(env, "CASTOR_WORLD_SIZE"), "4");
    assert_string_equal(env_get(env, "CASTOR_LOCAL_WORLD_SIZE"), "2");
    assert_string_equal(env_get(env, "CASTOR_JOB"), "resnet");
    assert_string_equal(env_get(env, "CASTOR_MASTER_ADDR"), "10.0.0.9"); /* master is i-0 */
    assert_int_equal(atoi(env_get(env, "CASTOR_MASTER_PORT")),
                     node_master_port("resnet", 1714564810.25, 2));
    assert_string_equal(env_get(env, "CASTOR_LOCAL_BSZ"), "64");
    assert_string_equal(env_get(env, "CASTOR_ACCUM_STEPS"), "1");
    assert_string_equal(env_get(env, "CASTOR_LR_GAIN"), "1.25");
    assert_string_equal(env_get(env, "CASTOR_CHECKPOINT_INTERVAL"), "600");
    /* the placement's nodes and the spec's batch limits, for libcastor */
    assert_string_equal(env_get(env, "CASTOR_NODES"), "2");
    assert_string_equal(env_get(env, "CASTOR_INIT_BSZ"), "128");
    assert_string_equal(env_get(env, "CASTOR_MAX_BSZ"), "4096");
    assert_string_equal(env_get(env, "CASTOR_MAX_LOCAL_BSZ"), "256");
    assert_string_equal(env_get(env, "CASTOR_ACCUMULATION"), "1");
    assert_string_equal(env_get(env, "CASTOR_URL"), "http://c:1");
    assert_string_equal(env_get(env, "CASTOR_JOB_TOKEN"), "job-secret");
    assert_string_equal(env_get(env, "CUDA_VISIBLE_DEVICES"), "3");
    assert_string_equal(env_get(env, "PATH"), "/custom"); /* the spec's env over the agent's */
    assert_string_equal(env_get(env, "HOME"), "/home/x");
    assert_null(env_get(env, "CASTOR_NODE_TOKEN"));
    assert_null(env_get(env, "CASTOR_USER_TOKEN_FILE"));
    node_env_free(env);
    in.gpu = -1;
    /* a job's own token (its assignment's) over the node's shared one */
    assert_int_equal(node_replica_env(&a.jobs[1], 0, &in, &env), 0);
    assert_string_equal(env_get(env, "CASTOR_MASTER_ADDR"), "127.0.0.1"); /* i-1 is this node */
    assert_null(env_get(env, "CASTOR_LOCAL_BSZ"));
    assert_null(env_get(env, "CASTOR_ACCUM_STEPS"));
    assert_null(env_get(env, "CASTOR_NODES")); /* not said: libcastor's default */
    assert_null(env_get(env, "CASTOR_INIT_BSZ"));
    assert_string_equal(env_get(env, "CASTOR_JOB_TOKEN"), "cj1.bert.0123abcd");
    assert_null(env_get(env, "CUDA_VISIBLE_DEVICES"));
    node_env_free(env);
    in.job_token = NULL;
    assert_int_equal(node_replica_env(&a.jobs[0], 0, &in, &env), 0);
    assert_null(env_get(env, "CASTOR_JOB_TOKEN"));
    node_env_free(env);
    /* without the agent's override: where the controller says the master is, else its id */
    in.master_addr = NULL;
    assert_string_equal(a.jobs[0].master_addr, "10.1.2.3");
    assert_int_equal(node_replica_env(&a.jobs[0], 0, &in, &env), 0);
    assert_string_equal(env_get(env, "CASTOR_MASTER_ADDR"), "10.1.2.3");
    node_env_free(env);
    free(a.jobs[0].master_addr);
    a.jobs[0].master_addr = NULL;
    assert_int_equal(node_replica_env(&a.jobs[0], 0, &in, &env), 0);
    assert_string_equal(env_get(env, "CASTOR_MASTER_ADDR"), "i-0");
    node_env_free(env);
    /* the run-as user's HOME, USER and LOGNAME; the spec's env still wins */
    {
        struct node_run_as u = {.uid = 1234, .gid = 1234, .user = "svc", .home = "/home/svc"};

        in.run_as = &u;
        free(a.jobs[0].env[0]);
        a.jobs[0].env[0] = strdup("HOME=/data");
        assert_int_equal(node_replica_env(&a.jobs[0], 0, &in, &env), 0);
        assert_string_equal(env_get(env, "USER"), "svc");
        assert_string_equal(env_get(env, "LOGNAME"), "svc");
        assert_string_equal(env_get(env, "HOME"), "/data");
        node_env_free(env);
        assert_int_equal(node_replica_env(&a.jobs[1], 0, &in, &env), 0);
        assert_string_equal(env_get(env, "HOME"), "/home/svc");
        node_env_free(env);
        in.run_as = NULL;
    }
    assert_int_equal(node_replica_env(&a.jobs[0], 2, &in, &other), ERR_INVAL);
    assert_ptr_equal(other, (char **)base);
    node_assignment_clear(&a);
}

/* The master port: in [29500, 30500), the same for a job's placement and attempt wherever it is
 * asked, and drawn afresh by each placement, each job and each attempt: of 50 placements of one
 * job 60 ms apart, of 50 jobs placed at one time, or of 50 attempts of one placement, most differ
 * from the first. Without a placement time, the name's. */
static void node_master_port__per_placement_and_in_range(void **state)
{
    int distinct = 0, first = node_master_port("job-0", 1714564810.0, 0);
    int moved = 0, once = node_master_port("job", 1714564810.0, 0), retried = 0;
    char name[32];

    (void)state;
    for (int i = 0; i < 50; i++) {
        double at = 1714564810.0 + 0.06 * i;
        int p, q = node_master_port("job", at, 0), r = node_master_port("job", 1714564810.0, i);

        snprintf(name, sizeof(name), "job-%d", i);
        p = node_master_port(name, 1714564810.0, 0);
        assert_true(p >= 29500 && p < 30500 && q >= 29500 && q < 30500);
        assert_true(r >= 29500 && r < 30500);
        assert_int_equal(p, node_master_port(name, 1714564810.0, 0));
        assert_int_equal(q, node_master_port("job", at, 0));
        assert_int_equal(r, node_master_port("job", 1714564810.0, i));
        distinct += p != first;
        moved += q != once;
        retried += r != once;
    }
    assert_true(distinct > 40 && moved > 40 && retried > 40);
    assert_int_equal(node_master_port("job", NAN, 0), node_master_port("job", NAN, 0));
    assert_true(node_master_port("job", NAN, 0) >= 29500 &&
                node_master_port("job", NAN, 0) < 30500);
}

/* ---- the program against the API ---- */

struct fx {
    struct api_server as;
    char work[160];
    char nodelog[160];
    char nodelog2[160]; /* a second node's, when a test starts one */
    pid_t node, node2;
};

static int fx_setup_with(void **state, int per_node_tokens)
{
    struct fx *f = calloc(1, sizeof(*f));

    if (!f || as_start_with(&f->as, per_node_tokens) < 0 ||
        as_path(&f->as, "work", 1, f->work, sizeof(f->work)) < 0 ||
        as_path(&f->as, "node.log", 0, f->nodelog, sizeof(f->nodelog)) < 0 ||
        as_path(&f->as, "node2.log", 0, f->nodelog2, sizeof(f->nodelog2)) < 0)
        return -1;
    *state = f;
    return 0;
}

static int fx_setup(void **state)
{
    return fx_setup_with(state, 0);
}

/* The API wanting each node's own token (api.node_tokens: per-node). */
static int fx_setup_per_node(void **state)
{
    return fx_setup_with(state, 1);
}

static int fx_teardown(void **state)
{
    struct fx *f = *state;

    if (f->node > 0 && proc_wait_exit(f->node, 0) == -1) {
        /* the test stopped half-way: what the node did is the diagnosis (CI runs not verbose) */
        fprintf(stderr, "castor-node %ld was still running\n", (long)f->node);
        proc_print_log("node log", f->nodelog);
    } else {
        proc_dump_log("node log", f->nodelog);
    }
    if (f->node2 > 0 && proc_wait_exit(f->node2, 0) == -1) {
        fprintf(stderr, "the second castor-node %ld was still running\n", (long)f->node2);
        proc_print_log("second node log", f->nodelog2);
        kill(f->node2, SIGKILL);
        proc_wait_exit(f->node2, 5);
    }
    as_stop(&f->as);
    free(f);
    return 0;
}

/* Start castor-node for NODE_ID against url, with extra "NAME=VALUE" settings (NULL-ended), as
 * program bin with argv (NULL: castor-node itself). */
static pid_t spawn_node_with(struct fx *f, const char *url, const char *const *extra,
                             const char *bin, char *const *argv)
{
    static char *const node_argv[] = {"castor-node", NULL};
    char url_env[128];
    const char *const env[] = {url_env,
                               "CASTOR_INSTANCE_ID=" NODE_ID,
                               "CASTOR_NODE_TOKEN=" AS_TOKEN_NODE,
                               "CASTOR_JOB_TOKEN=" AS_TOKEN_JOB,
                               "CASTOR_USER_TOKEN=" AS_TOKEN_USER, /* must not reach a replica */
                               "CASTOR_FAKE_GPUS=2:8",
                               "CASTOR_NODE_HEARTBEAT_S=0.1",
                               "CASTOR_NODE_GRACE_S=0.6",
                               "CASTOR_NODE_TIMEOUT_S=2",
                               "CASTOR_NODE_BACKOFF_MAX_S=0.2",
                               "CASTOR_NODE_LOG_LEVEL=debug",
                               NULL};

    snprintf(url_env, sizeof(url_env), "CASTOR_URL=%s", url);
    f->node = proc_spawn(bin ? bin : CASTOR_NODE_BIN, argv ? argv : node_argv, NULL, f->nodelog,
                         env, extra);
    assert_true(f->node > 0);
    return f->node;
}

/* Start castor-node for NODE_ID against url, with extra "NAME=VALUE" settings (NULL-ended). */
static pid_t spawn_node(struct fx *f, const char *url, const char *const *extra)
{
    return spawn_node_with(f, url, extra, NULL, NULL);
}

static int node_registered(void *ctx)
{
    struct fx *f = ctx;
    struct state_node n;

    if (state_node_get(f->as.own, NODE_ID, &n) < 0)
        return 0;
    state_node_clear(&n);
    return 1;
}

/* Submit job running script in f->work, MODE mode, max_restarts and more fields of the spec
 * (",\"key\":value..." or ""), and give it replicas on the node. */
static void assign_script(struct fx *f, const char *script, const char *job, const char *mode,
                          int replicas, int max_restarts, const char *more)
{
    char spec[1024];

    snprintf(spec, sizeof(spec),
             "{\"name\":\"%s\",\"command\":[\"/bin/sh\",\"%s\"],\"workdir\":\"%s\","
             "\"env\":{\"MODE\":\"%s\"},\"init_batch_size\":128,\"max_batch_size\":4096,"
             "\"max_local_bsz\":256,\"min_replicas\":1,\"max_replicas\":8,"
             "\"checkpoint_interval\":5,\"priority\":0,\"max_restarts\":%d%s}",
             job, script, f->work, mode, max_restarts, more);
    assert_int_equal(as_assign(&f->as, job, spec, NODE_ID, replicas), 0);
}

/* The same with replica.sh where the sources are. */
static void assign_spec(struct fx *f, const char *job, const char *mode, int replicas,
                        int max_restarts, const char *more)
{
    assign_script(f, REPLICA_SH, job, mode, replicas, max_restarts, more);
}

/* Submit job with replica.sh in f->work, MODE mode and max_restarts, and give it replicas on the
 * node. */
static void assign_restarts(struct fx *f, const char *job, const char *mode, int replicas,
                            int max_restarts)
{
    assign_spec(f, job, mode, replicas, max_restarts, "");
}

/* Submit job with replica.sh in f->work, MODE mode, and give it replicas on the node. */
static void assign(struct fx *f, const char *job, const char *mode, int replicas)
{
    assign_restarts(f, job, mode, replicas, 3);
}

/* Write text to a new file at path: 0, or -1. */
static int write_text(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    int rc = fp && fputs(text, fp) >= 0 ? 0 : -1;

    if (fp && fclose(fp) != 0)
        rc = -1;
    return rc;
}

/* replica.sh copied into f->work (script: its path, size bytes), where another user's replicas may
 * read it (the sources may be in a folder only root reads). */
static void copy_replica_sh(struct fx *f, char *script, size_t size)
{
    char *text = proc_slurp(REPLICA_SH);

    assert_non_null(text);
    snprintf(script, size, "%s/replica.sh", f->work);
    assert_int_equal(write_text(script, text), 0);
    free(text);
    assert_int_equal(chmod(script, 0755), 0);
}

/* The replicas that have written their environment: pids (the file names') into pids. */
struct replicas {
    const char *work;
    const char *must_have; /* "NAME=VALUE" the env file must hold; NULL: any */
    pid_t pids[16];
    pid_t children[16];
    int n, want;
};

static int scan_replicas(void *ctx)
{
    struct replicas *r = ctx;
    DIR *d = opendir(r->work);
    struct dirent *de;

    r->n = 0;
    if (!d)
        return 0;
    while ((de = readdir(d)) && r->n < 16) {
        int rank;
        long pid;
        char path[512], *text, *child;

        if (sscanf(de->d_name, "rank-%d-%ld.env", &rank, &pid) != 2 || !strstr(de->d_name, ".env"))
            continue;
        snprintf(path, sizeof(path), "%s/%s", r->work, de->d_name);
        text = proc_slurp(path);
        snprintf(path, sizeof(path), "%s/rank-%d-%ld.child", r->work, rank, pid);
        child = proc_slurp(path);
        if (text && child && child[0] && (!r->must_have || strstr(text, r->must_have))) {
            r->pids[r->n] = (pid_t)pid;
            r->children[r->n++] = (pid_t)atol(child);
        }
        free(text);
        free(child);
    }
    closedir(d);
    return r->n >= r->want;
}

/* The env file of replica pid, as text (free). */
static char *replica_env(const struct fx *f, int rank, pid_t pid)
{
    char path[512];

    snprintf(path, sizeof(path), "%s/rank-%d-%ld.env", f->work, rank, (long)pid);
    return proc_slurp(path);
}

static int file_exists(const char *dir, const char *fmt, long a, long b)
{
    char name[128], path[512];
    struct stat sb;

    snprintf(name, sizeof(name), fmt, a, b);
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return stat(path, &sb) == 0;
}

/* SIGTERM the node and expect a clean exit. */
static void stop_node(struct fx *f)
{
    int status;

    assert_int_equal(kill(f->node, SIGTERM), 0);
    status = proc_wait_exit(f->node, GRACE_S + 5);
    f->node = 0;
    assert_true(status != -1 && WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* 1 when NODE_ID's agent has said, in a heartbeat, that replicas of job-m are alive there. */
static int said_alive(void *ctx)
{
    struct fx *f = ctx;
    char **ids = NULL;
    size_t n = 0;
    int said;

    if (state_job_stale_nodes(f->as.own, "job-m", "no-such-generation", NULL, as_wall(NULL), &ids,
                              &n) < 0)
        return 0;
    said = n == 1 && strcmp(ids[0], NODE_ID) == 0;
    state_strv_free(ids, n);
    return said;
}

/* A second castor-node, "i-second-node", on the same API (its log in f->nodelog2), with short
 * heartbeats, grace and timeouts. */
static void spawn_second_node(struct fx *f)
{
    static char *const argv[] = {"castor-node", NULL};
    const char *const env2[] = {"CASTOR_INSTANCE_ID=i-second-node", NULL};
    char url_env[128];
    const char *const env1[] = {url_env,
                                "CASTOR_NODE_TOKEN=" AS_TOKEN_NODE,
                                "CASTOR_JOB_TOKEN=" AS_TOKEN_JOB,
                                "CASTOR_FAKE_GPUS=2:8",
                                "CASTOR_NODE_HEARTBEAT_S=0.1",
                                "CASTOR_NODE_GRACE_S=0.6",
                                "CASTOR_NODE_TIMEOUT_S=2",
                                "CASTOR_NODE_BACKOFF_MAX_S=0.2",
                                NULL};

    snprintf(url_env, sizeof(url_env), "CASTOR_URL=%s", f->as.url);
    f->node2 = proc_spawn(CASTOR_NODE_BIN, argv, NULL, f->nodelog2, env1, env2);
    assert_true(f->node2 > 0);
}

/*
 * A job moved from one node to another starts there only once its replicas on the first have
 * stopped: two castor-nodes against the API; job-m's replica on the first ignores SIGTERM
 * (MODE=ignore), so it lives until the SIGKILL after the first node's grace (0.6 s). Its
 * replica on the second node starts after that, not at once (which, for a job that checkpoints
 * on SIGTERM, would be a start from the checkpoint the old replica is still writing). The
 * second node's log says why it waits, and the first node's agent tells the controller when
 * nothing of the job is left there.
 */
static void castor_node__a_moved_job_waits_for_its_old_replicas(void **state)
{
    struct fx *f = *state;
    struct replicas old = {.work = f->work, .want = 1};
    struct replicas both = {.work = f->work, .want = 2};
    struct state_alloc row = {.node = "i-second-node", .replicas = 1};
    char *log2;
    double moved, started = 0;
    pid_t fresh = 0;

    spawn_node(f, f->as.url, NULL);
    spawn_second_node(f);
    assert_true(proc_wait_for(node_registered, f, REGISTER_WAIT_S));
    assign(f, "job-m", "ignore", 1);
    assert_true(proc_wait_for(scan_replicas, &old, 10));
    assert_true(proc_wait_for(said_alive, f, 10));
    moved = proc_now();
    assert_int_equal(state_alloc_replace(f->as.own, "job-m", &row, 1, as_wall(NULL)), 0);
    /* the second node's replica: when it appears, the first one is gone */
    while (proc_now() - moved < 10 && !started) {
        if (scan_replicas(&both)) {
            started = proc_now();
            fresh = both.pids[0] == old.pids[0] ? both.pids[1] : both.pids[0];
            assert_false(proc_alive(old.pids[0]));
        }
        proc_sleep(0.01);
    }
    assert_true(started > 0);
    assert_true(started - moved >= GRACE_S - 0.05);
    assert_true(proc_alive(fresh));
    assert_true(file_exists(f->work, "rank-%ld-%ld.term", 0, old.pids[0]));
    log2 = proc_slurp(f->nodelog2);
    assert_non_null(log2);
    assert_non_null(strstr(log2, "waits for its replicas on " NODE_ID " to stop"));
    free(log2);
    stop_node(f);
    assert_int_equal(kill(f->node2, SIGTERM), 0);
    assert_true(proc_wait_exit(f->node2, GRACE_S + 5) != -1);
    f->node2 = 0;
    assert_true(proc_wait_gone(fresh, 5));
}

static int second_registered(void *ctx)
{
    struct fx *f = ctx;
    struct state_node n;

    if (state_node_get(f->as.own, "i-second-node", &n) < 0)
        return 0;
    state_node_clear(&n);
    return 1;
}

/*
 * A job placed on two nodes (one replica on each, through the real API): each replica's
 * environment says the placement's nodes (CASTOR_NODES=2, which libcastor pools its steps under)
 * and the spec's batch limits (init 128, max 4096, local 256), so that the worker counts progress
 * and statistics in the spec's M0, as the controller reads them.
 */
static void castor_node__a_job_on_two_nodes_tells_its_replicas_the_nodes(void **state)
{
    struct fx *f = *state;
    struct replicas r = {.work = f->work, .want = 2};
    struct state_alloc rows[] = {{.node = NODE_ID, .replicas = 1},
                                 {.node = "i-second-node", .replicas = 1}};
    char spec[1024];

    spawn_node(f, f->as.url, NULL);
    spawn_second_node(f);
    assert_true(proc_wait_for(node_registered, f, REGISTER_WAIT_S));
    assert_true(proc_wait_for(second_registered, f, REGISTER_WAIT_S));
    snprintf(spec, sizeof(spec),
             "{\"name\":\"job-2n\",\"command\":[\"/bin/sh\",\"%s\"],\"workdir\":\"%s\","
             "\"env\":{\"MODE\":\"exit\",\"CASTOR_INIT_BSZ\":\"7\"},\"init_batch_size\":128,"
             "\"max_batch_size\":4096,\"max_local_bsz\":256,\"min_replicas\":1,"
             "\"max_replicas\":8,\"checkpoint_interval\":5,\"priority\":0}",
             REPLICA_SH, f->work);
    assert_int_equal(state_job_submit(f->as.own, "job-2n", spec, as_wall(NULL)), 0);
    assert_int_equal(state_job_set_config(f->as.own, "job-2n", 64, 1, 1.5), 0);
    assert_int_equal(state_alloc_replace(f->as.own, "job-2n", rows, 2, as_wall(NULL)), 0);
    assert_true(proc_wait_for(scan_replicas, &r, 10));
    assert_int_equal(r.n, 2);
    for (int i = 0; i < 2; i++) {
        int rank = file_exists(f->work, "rank-%ld-%ld.env", 0, r.pids[i]) ? 0 : 1;
        char *e = replica_env(f, rank, r.pids[i]);

        assert_non_null(e);
        assert_non_null(strstr(e, "CASTOR_WORLD_SIZE=2\n"));
        assert_non_null(strstr(e, "CASTOR_LOCAL_WORLD_SIZE=1\n"));
        assert_non_null(strstr(e, "CASTOR_NODES=2\n"));
        assert_non_null(strstr(e, "CASTOR_INIT_BSZ=128\n")); /* the spec's, over its env's */
        assert_non_null(strstr(e, "CASTOR_MAX_BSZ=4096\n"));
        assert_non_null(strstr(e, "CASTOR_MAX_LOCAL_BSZ=256\n"));
        assert_non_null(strstr(e, "CASTOR_ACCUMULATION=1\n"));
        free(e);
    }
    stop_node(f);
    assert_int_equal(kill(f->node2, SIGTERM), 0);
    assert_true(proc_wait_exit(f->node2, GRACE_S + 5) != -1);
    f->node2 = 0;
}

static void castor_node__registers_gpus_and_heartbeats(void **state)
{
    struct fx *f = *state;
    struct state_node n;
    char url[80];
    double first;

    snprintf(url, sizeof(url), "%s/", f->as.url); /* a final '/' is fine */
    spawn_node(f, url, NULL);
    assert_true(proc_wait_for(node_registered, f, REGISTER_WAIT_S));
    assert_int_equal(state_node_get(f->as.own, NODE_ID, &n), 0);
    assert_int_equal(n.gpus, 2);
    assert_int_equal(n.gpu_memory_mib, 8 * 1024);
    assert_int_equal(n.state, STATE_NODE_READY);
    /* the address of its route to the controller (here: loopback) */
    assert_non_null(n.address);
    assert_string_equal(n.address, "127.0.0.1");
    first = n.heartbeat_at;
    state_node_clear(&n);
    proc_sleep(0.5);
    assert_int_equal(state_node_get(f->as.own, NODE_ID, &n), 0);
    assert_true(n.heartbeat_at > first); /* heartbeats every 0.1 s */
    state_node_clear(&n);
    stop_node(f);
}

static void castor_node__starts_assigned_replicas_with_their_environment(void **state)
{
    struct fx *f = *state;
    struct replicas r = {.work = f->work, .want = 2};
    char *env0, *env1, token[API_JOB_TOKEN_MAX], want[API_JOB_TOKEN_MAX + 32];
    int r0;

    /* the job's own token, not the node's shared one (which castor-node has) */
    assert_int_equal(api_job_token(f->as.api, "job-a", token, sizeof(token)), 0);
    snprintf(want, sizeof(want), "CASTOR_JOB_TOKEN=%s\n", token);
    spawn_node(f, f->as.url, NULL);
    assert_true(proc_wait_for(node_registered, f, REGISTER_WAIT_S));
    assign(f, "job-a", "exit", 2);
    assert_true(proc_wait_for(scan_replicas, &r, 10));
    assert_int_equal(r.n, 2);
    r0 = file_exists(f->work, "rank-%ld-%ld.env", 0, r.pids[0]) ? 0 : 1;
    env0 = replica_env(f, r0, r.pids[0]);
    env1 = replica_env(f, 1 - r0, r.pids[1]);
    assert_non_null(env0);
    assert_non_null(env1);
    assert_non_null(strstr(env0, "CASTOR_RANK=0\n") ? env0 : env1);
    assert_non_null(strstr(env0, "CASTOR_RANK=1\n") ? env0 : env1);
    for (int i = 0; i < 2; i++) {
        const char *e = i ? env1 : env0;

        assert_non_null(strstr(e, "CASTOR_JOB=job-a\n"));
        assert_non_null(strstr(e, "CASTOR_WORLD_SIZE=2\n"));
        assert_non_null(strstr(e, "CASTOR_LOCAL_BSZ=64\n"));
        assert_non_null(strstr(e, "CASTOR_ACCUM_STEPS=1\n"));
        assert_non_null(strstr(e, "CASTOR_LR_GAIN=1.5\n"));
        assert_non_null(strstr(e, "CASTOR_MASTER_ADDR=127.0.0.1\n"));
        assert_non_null(strstr(e, want));
        assert_null(strstr(e, AS_TOKEN_JOB));
        assert_non_null(strstr(e, "CASTOR_CHECKPOINT_INTERVAL=5\n"));
        assert_non_null(strstr(e, "MODE=exit\n"));
        assert_non_null(strstr(e, "CASTOR_URL=http://127.0.0.1:"));
        assert_null(strstr(e, AS_TOKEN_NODE));
        assert_null(strstr(e, AS_TOKEN_USER));
    }
    /* one GPU each */
    assert_true(
        (strstr(env0, "CUDA_VISIBLE_DEVICES=0\n") && strstr(env1, "CUDA_VISIBLE_DEVICES=1\n")) ||
        (strstr(env0, "CUDA_VISIBLE_DEVICES=1\n") && strstr(env1, "CUDA_VISIBLE_DEVICES=0\n")));
    free(env0);
    free(env1);
    for (int i = 0; i < 2; i++)
        assert_true(proc_alive(r.pids[i]) && proc_alive(r.children[i]));
    stop_node(f);
    for (int i = 0; i < 2; i++) /* MODE=exit: each saw SIGTERM and exited */
        assert_true(file_exists(f->work, "rank-%ld-%ld.term", 0, r.pids[i]) ||
                    file_exists(f->work, "rank-%ld-%ld.term", 1, r.pids[i]));
}

static void castor_node__restarts_changed_replicas_sigterm_then_sigkill(void **state)
{
    struct fx *f = *state;
    struct replicas old = {.work = f->work, .want = 2};
    struct replicas now = {.work = f->work, .want = 2, .must_have = "CASTOR_LOCAL_BSZ=32\n"};
    double changed, restarted;

    spawn_node(f, f->as.url, NULL);
    assert_true(proc_wait_for(node_registered, f, REGISTER_WAIT_S));
    assign(f, "job-b", "ignore", 2);
    assert_true(proc_wait_for(scan_replicas, &old, 10));
    changed = proc_now();
    assert_int_equal(state_job_set_config(f->as.own, "job-b", 32, 0, 1.0), 0);
    assert_true(proc_wait_for(scan_replicas, &now, 10));
    restarted = proc_now();
    /* the old replicas ignored SIGTERM: the new ones waited for the SIGKILL after the grace */
    assert_true(restarted - changed >= GRACE_S - 0.05);
    for (int i = 0; i < 2; i++) {
        int rank = file_exists(f->work, "rank-%ld-%ld.env", 0, old.pids[i]) ? 0 : 1;

        assert_true(file_exists(f->work, "rank-%ld-%ld.term", rank, old.pids[i]));
        assert_true(proc_wait_gone(old.pids[i], 5));
        assert_true(proc_wait_gone(old.children[i], 5)); /* killed with its process group */
        assert_true(now.pids[i] != old.pids[0] && now.pids[i] != old.pids[1]);
        assert_true(proc_alive(now.pids[i]));
    }
    stop_node(f);
    for (int i = 0; i < 2; i++) {
        assert_true(proc_wait_gone(now.pids[i], 5));
        assert_true(proc_wait_gone(now.children[i], 5));
    }
}

/*
 * A job whose spec says reconfigure: in_flight (its workers take the controller's decision as they
 * run) keeps its replicas through a new local batch, accumulation and gain: no SIGTERM, no new
 * process; a new placement (here a failure's new attempt) still restarts them.
 */
static void castor_node__keeps_in_flight_replicas_through_a_new_configuration(void **state)
{
    struct fx *f = *state;
    struct replicas old = {.work = f->work, .want = 2}, later = old;
    struct replicas again = {.work = f->work, .want = 4};

    spawn_node(f, f->as.url, NULL);
    assert_true(proc_wait_for(node_registered, f, REGISTER_WAIT_S));
    assign_spec(f, "job-i", "ignore", 2, 3, ",\"reconfigure\":\"in_flight\"");
    assert_true(proc_wait_for(scan_replicas, &old, 10));
    assert_int_equal(state_job_set_config(f->as.own, "job-i", 32, 0, 1.0), 0);
    proc_sleep(1.0); /* ten heartbeats, each with its assignment */
    assert_int_equal(state_job_set_config(f->as.own, "job-i", 48, 2, 1.7), 0);
    proc_sleep(1.0);
    scan_replicas(&later);
    assert_int_equal(later.n, 2); /* no new replica wrote its environment */
    for (int i = 0; i < 2; i++) {
        assert_true(proc_alive(old.pids[i]));
        assert_false(file_exists(f->work, "rank-%ld-%ld.term", 0, old.pids[i]) ||
                     file_exists(f->work, "rank-%ld-%ld.term", 1, old.pids[i]));
    }
    /* a new attempt is a new generation: they restart */
    assert_int_equal(state_job_replica_failed(f->as.own, "job-i", NODE_ID, 0, "test", 3,
                                              as_wall(NULL), NULL, NULL),
                     0);
    assert_true(proc_wait_for(scan_replicas, &again, 10));
    stop_node(f);
}

struct notice_seen {
    struct fx *f;
    double deadline;
};

static int node_noticed(void *ctx)
{
    struct notice_seen *s = ctx;
    struct state_node n;
    int ok;

    if (state_node_get(s->f->as.own, NODE_ID, &n) < 0)
        return 0;
    ok = !isnan(n.notice_at) && n.state == STATE_NODE_DRAINING;
    s->deadline = n.notice_deadline;
    state_node_clear(&n);
    return ok;
}

static int replica_gone(void *ctx)
{
    return !proc_alive(((struct replicas *)ctx)->pids[0]);
}

static void castor_node__forwards_sigusr1_as_a_notice(void **state)
{
    struct fx *f = *state;
    struct replicas r = {.work = f->work, .want = 1};
    struct notice_seen seen = {.f = f};
    union sigval v = {.sival_int = 4000};
    double sent, t0;

    spawn_node(f, f->as.url, NULL);
    assert_true(proc_wait_for(node_registered, f, REGISTER_WAIT_S));
    assign(f, "job-c", "exit", 1);
    assert_true(proc_wait_for(scan_replicas, &r, 10));
    sent = as_wall(NULL);
    t0 = proc_now();
    assert_int_equal(sigqueue(f->node, SIGUSR1, v), 0); /* a notice of 4 s */
    assert_true(proc_wait_for(node_noticed, &seen, 2));
    assert_true(proc_now() - t0 < 1.0); /* at once, not at the next heartbeat's leisure */
    assert_true(fabs(seen.deadline - (sent + 4)) < 1.0);
    /* its replica was told to checkpoint (SIGTERM) and exited; the node stays until killed */
    assert_true(proc_wait_for(replica_gone, &r, 2));
    assert_true(file_exists(f->work, "rank-%ld-%ld.term", 0, r.pids[0]));
    assert_true(proc_alive(f->node));
    stop_node(f);
}

static void castor_node__sigterm_stops_replicas_and_leaves_no_orphan(void **state)
{
    struct fx *f = *state;
    struct replicas r = {.work = f->work, .want = 2};
    double t0;

    spawn_node(f, f->as.url, NULL);
    assert_true(proc_wait_for(node_registered, f, REGISTER_WAIT_S));
    assign(f, "job-d", "ignore", 2);
    assert_true(proc_wait_for(scan_replicas, &r, 10));
    t0 = proc_now();
    stop_node(f);
    assert_true(proc_now() - t0 >= GRACE_S - 0.05); /* they ignored SIGTERM: SIGKILL after it */
    for (int i = 0; i < 2; i++) {
        assert_true(proc_wait_gone(r.pids[i], 5));
        assert_true(proc_wait_gone(r.children[i], 5));
    }
}

/*
 * A replica's descendant that left its process group (setsid: a daemonised helper, a server the
 * job started) is orphaned to castor-node, the subreaper, when the replica ends: the agent's stop
 * (SIGTERM) kills it too, and castor-node leaves no process behind (it is not the agent's own
 * replica, whose group SIGKILL reaches, and would otherwise run on under init, holding its GPU).
 */
static void castor_node__sigterm_kills_an_escaped_descendant(void **state)
{
    struct fx *f = *state;
    char script[512], text[2048], pidfile[512], *pid_text = NULL;
    pid_t escaped = 0;

    snprintf(script, sizeof(script), "%s/escape.sh", f->work);
    snprintf(pidfile, sizeof(pidfile), "%s/escaped.pid", f->work);
    snprintf(text, sizeof(text),
             "setsid sh -c 'echo $$ > \"%s.tmp\" && mv \"%s.tmp\" \"%s\"; exec sleep 300' "
             "</dev/null >/dev/null 2>&1 &\n"
             "trap 'exit 0' TERM\n"
             "while :; do sleep 0.05; done\n",
             pidfile, pidfile, pidfile);
    assert_int_equal(write_text(script, text), 0);
    spawn_node(f, f->as.url, NULL);
    assert_true(proc_wait_for(node_registered, f, REGISTER_WAIT_S));
    assign_script(f, script, "job-x", "escape", 1, 3, "");
    for (double end = proc_now() + 10; !pid_text && proc_now() < end; proc_sleep(0.05))
        pid_text = proc_slurp(pidfile);
    assert_non_null(pid_text);
    escaped = (pid_t)atol(pid_text);
    free(pid_text);
    assert_true(escaped > 0 && proc_alive(escaped));
    stop_node(f);
    if (!proc_wait_gone(escaped, 5)) {
        kill(escaped, SIGKILL);
        fail_msg("the replica's escaped descendant %ld outlived castor-node", (long)escaped);
    }
}

/* A process of uid that waits until it is killed (or the test ends): it counts against the
 * uid's process limit. */
static pid_t spawn_uid_process(uid_t uid)
{
    pid_t parent = getpid(), pid = fork();

    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);

        for (int fd = 0; fd < 3 && null >= 0; fd++)
            dup2(null, fd);
        alarm(60);
        if (setgroups(0, NULL) == 0 && setgid(uid) == 0 && setuid(uid) == 0 &&
            prctl(PR_SET_PDEATHSIG, SIGKILL) == 0 && getppid() == parent)
            pause();
        _exit(1);
    }
    return pid;
}

/*
 * A replica whose fork failed (EAGAIN: the agent's user at its process limit) is started again
 * once the agent can fork: it was kept as "exited" and never retried while its job's entry
 * stayed the same, the job's other ranks waiting for it at their rendezvous until the hang
 * timeout; the failures, one a reconcile, are logged once a minute. castor-node runs as a uid of
 * no account with RLIMIT_NPROC 16 (which binds a user without CAP_SYS_RESOURCE), and the test
 * holds that uid's 16 processes for a while. Skipped where the tests do not run as root or there
 * is no setpriv.
 */
static void castor_node__a_replica_whose_fork_failed_starts_later(void **state)
{
    enum { UID = 61777, LIMIT = 16 };
    static char *const argv[] = {"setpriv",        "--reuid=61777", "--regid=61777",
                                 "--clear-groups", CASTOR_NODE_BIN, NULL};
    struct fx *f = *state;
    struct replicas r = {.work = f->work, .want = 1};
    struct rlimit lim = {LIMIT, LIMIT}, old;
    pid_t holders[LIMIT];
    char *log, script[4096];
    int status;

    if (geteuid() != 0 || access("/usr/bin/setpriv", X_OK) != 0)
        skip();
    assert_int_equal(chmod(f->as.dir, 0711), 0);
    assert_int_equal(chmod(f->work, 0777), 0);
    /* the limit goes with the agent through setpriv's exec */
    assert_int_equal(getrlimit(RLIMIT_NPROC, &old), 0);
    lim.rlim_max = old.rlim_max; /* (the soft limit binds; the hard one cannot be raised back) */
    assert_int_equal(setrlimit(RLIMIT_NPROC, &lim), 0);
    spawn_node_with(f, f->as.url, NULL, "/usr/bin/setpriv", argv);
    assert_int_equal(setrlimit(RLIMIT_NPROC, &old), 0);
    assert_true(proc_wait_for(node_registered, f, REGISTER_WAIT_S));
    for (int i = 0; i < LIMIT; i++)
        assert_true((holders[i] = spawn_uid_process(UID)) > 0);
    copy_replica_sh(f, script, sizeof(script)); /* where the agent's uid reads it */
    assign_script(f, script, "job-p", "ignore", 1, 3, "");
    for (double end = proc_now() + 10; proc_now() < end; proc_sleep(0.05)) {
        int seen;

        log = proc_slurp(f->nodelog);
        seen = log && strstr(log, "cannot fork rank 0");
        free(log);
        if (seen)
            break;
    }
    proc_sleep(2.5); /* reconciles that fail to fork again, logged once a minute */
    for (int i = 0; i < LIMIT; i++) {
        kill(holders[i], SIGKILL);
        waitpid(holders[i], &status, 0);
    }
    log = proc_slurp(f->nodelog);
    assert_non_null(strstr(log ? log : "", "cannot fork rank 0"));
    assert_null(strstr(strstr(log ? log : "", "cannot fork rank 0") + 1, "cannot fork rank 0"));
    free(log);
    assert_true(proc_wait_for(scan_replicas, &r, 10));
    stop_node(f);
}

/* The job's state, failures and last failure's reason and time, from the test's connection. */
struct failures_seen {
    struct fx *f;
    const char *job;
    int want; /* failures to wait for */
    enum state_job_state state;
    int failures;
    char failure[STATE_FAILURE_MAX + 1];
    double failure_at;
};

static int job_failures(void *ctx)
{
    struct failures_seen *s = ctx;
    struct state_job j;

    if (state_job_get(s->f->as.own, s->job, &j) < 0)
        return 0;
    s->state = j.state;
    s->failures = j.failures;
    snprintf(s->failure, sizeof(s->failure), "%s", j.failure ? j.failure : "");
    s->failure_at = j.failure_at;
    state_job_clear(&j);
    return s->failures >= s->want;
}

/* When file name in f->work was last written (wall clock), or NAN. */
static double written_at(const struct fx *f, const char *name)
{
    char path[512];
    struct stat sb;

    snprintf(path, sizeof(path), "%s/%s", f->work, name);
    if (stat(path, &sb) < 0)
        return NAN;
    return (double)sb.st_mtim.tv_sec + sb.st_mtim.tv_nsec / 1e9;
}

/*
 * castor-node started with SIGCHLD, SIGINT and SIGQUIT ignored (a disposition of SIG_IGN
 * survives exec: a launcher that ignored SIGCHLD, a shell's background job): it takes the signals
 * it waits for as its own. With SIGCHLD ignored its children were reaped by the kernel, unseen:
 * a replica's failure was never reported, and a stop waited for ever for replicas already gone;
 * the replicas start with every disposition at its default.
 */
static void castor_node__takes_back_signals_its_launcher_ignored(void **state)
{
    struct fx *f = *state;
    struct failures_seen seen = {.f = f, .job = "job-i", .want = 1};
    struct replicas again = {.work = f->work, .want = 2, .must_have = "CASTOR_ATTEMPT=1\n"};
    struct sigaction ign = {.sa_handler = SIG_IGN}, old_chld, old_int, old_quit;

    assert_int_equal(sigaction(SIGCHLD, &ign, &old_chld), 0);
    assert_int_equal(sigaction(SIGINT, &ign, &old_int), 0);
    assert_int_equal(sigaction(SIGQUIT, &ign, &old_quit), 0);
    spawn_node(f, f->as.url, NULL);
    assert_int_equal(sigaction(SIGCHLD, &old_chld, NULL), 0);
    assert_int_equal(sigaction(SIGINT, &old_int, NULL), 0);
    assert_int_equal(sigaction(SIGQUIT, &old_quit, NULL), 0);
    assert_true(proc_wait_for(node_registered, f, REGISTER_WAIT_S));
    assign(f, "job-i", "fail-once", 2);
    assert_true(proc_wait_for(job_failures, &seen, 10)); /* rank 1's exit 3 was seen */
    /* and the replicas (started again as attempt 1) have SIGINT and SIGQUIT (which the agent
     * itself does not take) at their defaults, not ignored */
    assert_true(proc_wait_for(scan_replicas, &again, 10));
    for (int i = 0; i < again.n; i++) {
        char path[64], *status, *mask;

        snprintf(path, sizeof(path), "/proc/%ld/status", (long)again.pids[i]);
        status = proc_slurp(path);
        assert_non_null(status);
        mask = strstr(status, "SigIgn:");
        assert_non_null(mask);
        assert_false(strtoull(mask + 7, NULL, 16) &
                     ((1ULL << (SIGINT - 1)) | (1ULL << (SIGQUIT - 1))));
        free(status);
    }
    stop_node(f);
}

/*
 * Rank 1 of a gang of 2 crashes at its start (exit 3): castor-node reports it, the controller
 * counts one failure and gives the job attempt 1, and castor-node stops rank 0 (SIGTERM: it
 * checkpoints) and starts both ranks again as attempt 1 (CASTOR_ATTEMPT, a new master port), no
 * sooner than the restart delay after the failure; both then run. The failure's reason is kept.
 */
static void castor_node__a_failed_replica_restarts_its_gang(void **state)
{
    struct fx *f = *state;
    struct replicas first = {.work = f->work, .want = 1, .must_have = "CASTOR_ATTEMPT=0\n"};
    struct replicas again = {.work = f->work, .want = 2, .must_have = "CASTOR_ATTEMPT=1\n"};
    struct failures_seen seen = {.f = f, .job = "job-f", .want = 1};
    char name[64], *env, port1[32] = "";
    struct state_alloc *rows = NULL;
    size_t n = 0;

    spawn_node(f, f->as.url, NULL);
    assert_true(proc_wait_for(node_registered, f, REGISTER_WAIT_S));
    assign(f, "job-f", "fail-once", 2);
    assert_true(proc_wait_for(job_failures, &seen, 10));
    assert_string_equal(seen.failure, "rank 1 on node " NODE_ID " exited with status 3");
    assert_true(seen.state != STATE_JOB_FAILED);
    assert_true(proc_wait_for(scan_replicas, &again, 10));
    assert_int_equal(again.n, 2);
    assert_true(proc_wait_for(scan_replicas, &first, 1)); /* rank 0 of attempt 0 */
    /* rank 0 of attempt 0 was stopped to restart with the gang, and is gone */
    assert_true(file_exists(f->work, "rank-%ld-%ld.term", 0, first.pids[0]));
    assert_true(proc_wait_gone(first.pids[0], 5));
    for (int i = 0; i < 2; i++) {
        int rank = file_exists(f->work, "rank-%ld-%ld.env", 0, again.pids[i]) ? 0 : 1;

        assert_true(proc_alive(again.pids[i]));
        snprintf(name, sizeof(name), "rank-%d-%ld.env", rank, (long)again.pids[i]);
        if (written_at(f, name) < seen.failure_at + API_RESTART_DELAY_S - 0.05)
            fail_msg("rank %d of attempt 1 started %.2f s after the failure, before the %.0f s "
                     "delay",
                     rank, written_at(f, name) - seen.failure_at, API_RESTART_DELAY_S);
        env = replica_env(f, rank, again.pids[i]);
        sscanf(strstr(env, "CASTOR_MASTER_PORT="), "CASTOR_MASTER_PORT=%31s", port1);
        free(env);
    }
    /* the master port of this placement's attempt 1, as every node draws it */
    assert_int_equal(state_alloc_get(f->as.own, "job-f", &rows, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(atoi(port1), node_master_port("job-f", rows[0].since, 1));
    state_allocs_free(rows, n);
    assert_true(job_failures(&seen) && seen.failures == 1); /* counted once */
    stop_node(f);
    fflush(f->as.logf);
    assert_non_null(strstr(f->as.logtext, "its replicas restart in 2 s"));
}

static int job_is_failed(void *ctx)
{
    struct failures_seen *s = ctx;

    job_failures(s);
    return s->state == STATE_JOB_FAILED;
}

/*
 * A replica killed by a signal castor-node did not send (here SIGKILL, as the OOM killer would)
 * is a failure; with max_restarts 1, the first restarts the job, the second in a row without
 * progress fails it: its allocation is released and castor-node stops its replicas. A replica
 * that exits 75 ("checkpointed, restart me") is no failure.
 */
static void castor_node__failures_in_a_row_fail_the_job(void **state)
{
    struct fx *f = *state;
    struct replicas r = {.work = f->work, .want = 1, .must_have = "CASTOR_ATTEMPT=0\n"};
    struct replicas again = {.work = f->work, .want = 1, .must_have = "CASTOR_ATTEMPT=1\n"};
    struct failures_seen seen = {.f = f, .job = "job-k", .want = 1};
    struct state_alloc *rows = NULL;
    size_t n = 9;

    spawn_node(f, f->as.url, NULL);
    assert_true(proc_wait_for(node_registered, f, REGISTER_WAIT_S));
    assign_restarts(f, "job-k", "ignore", 1, 1);
    assert_true(proc_wait_for(scan_replicas, &r, 10));
    assert_int_equal(kill(r.pids[0], SIGKILL), 0);
    assert_true(proc_wait_for(job_failures, &seen, 10));
    assert_non_null(strstr(seen.failure, "rank 0 on node " NODE_ID " was killed by signal 9"));
    assert_true(seen.state != STATE_JOB_FAILED);
    assert_true(proc_wait_for(scan_replicas, &again, 10));
    assert_int_equal(kill(again.pids[0], SIGKILL), 0);
    assert_true(proc_wait_for(job_is_failed, &seen, 10));
    assert_int_equal(seen.failures, 2);
    assert_int_equal(state_alloc_get(f->as.own, "job-k", &rows, &n), 0);
    assert_int_equal(n, 0);
    state_allocs_free(rows, n);
    /* `castor jobs` says why */
    {
        static char *const argv[] = {"castor", "jobs", NULL};
        char url_env[128], out[160], *text;
        const char *const env[] = {url_env, "CASTOR_USER_TOKEN=" AS_TOKEN_USER, NULL};
        pid_t pid;
        int status;

        snprintf(url_env, sizeof(url_env), "CASTOR_URL=%s", f->as.url);
        assert_int_equal(as_path(&f->as, "jobs.out", 0, out, sizeof(out)), 0);
        pid = proc_spawn(CASTOR_BIN, argv, NULL, out, env, NULL);
        status = proc_wait_exit(pid, 10);
        assert_true(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
        text = proc_slurp(out);
        assert_non_null(text);
        if (!strstr(text, "job-k failed: rank 0 on node " NODE_ID " was killed by signal 9"))
            fail_msg("castor jobs did not say why job-k failed:\n%s", text);
        free(text);
    }

    /* exit 75 is no failure: the replica is not reported and the job keeps its 0 failures */
    assign(f, "job-t", "exit75", 1);
    seen.job = "job-t";
    seen.want = 1;
    proc_sleep(1.0);
    assert_false(job_failures(&seen));
    assert_int_equal(seen.failures, 0);
    stop_node(f);
}

/* The file that tells MODE=done replicas their work is done. */
static void touch_finish(struct fx *f)
{
    char path[512];
    FILE *fp;

    snprintf(path, sizeof(path), "%s/finish", f->work);
    assert_non_null(fp = fopen(path, "w"));
    fclose(fp);
}

/* castor-node up (with extra settings), job given replicas replica.sh in mode (max_restarts),
 * and, with the controller made unreachable, their work done: every replica has exited. */
static void finish_while_away(struct fx *f, const char *const *extra, const char *job,
                              const char *mode, int replicas, int max_restarts)
{
    struct replicas r = {.work = f->work, .want = replicas};

    spawn_node(f, f->as.url, extra);
    assert_true(proc_wait_for(node_registered, f, REGISTER_WAIT_S));
    assign_restarts(f, job, mode, replicas, max_restarts);
    assert_true(proc_wait_for(scan_replicas, &r, 10));
    as_unlisten(&f->as);
    touch_finish(f);
    for (int i = 0; i < replicas; i++)
        assert_true(proc_wait_gone(r.pids[i], 5));
}

static int job_is_finished(void *ctx)
{
    struct failures_seen *s = ctx;

    job_failures(s);
    return s->state == STATE_JOB_FINISHED;
}

/*
 * Rank 0 ends by itself with status 0 while the controller is unreachable (a trainer's own
 * "finished" then fails): castor-node tells the controller once it answers again, even after
 * fencing itself meanwhile (the replica's entry gone), and the job is finished, its GPUs free. It
 * failed nothing. Without it the job would hold its GPUs as "running" until its hang timeout.
 */
static void castor_node__tells_the_controller_rank_0_ended(void **state)
{
    static const char *const extra[] = {"CASTOR_NODE_FENCE_S=1", NULL};
    struct fx *f = *state;
    struct failures_seen seen = {.f = f, .job = "job-d", .want = 0};
    struct state_alloc *rows = NULL;
    int port = f->as.port;
    size_t n = 9;

    finish_while_away(f, extra, "job-d", "done", 1, 3);
    proc_sleep(2.0); /* past the fence: the node has stopped wanting the job's entry */
    assert_false(job_is_finished(&seen));
    assert_int_equal(as_listen(&f->as, port), 0);
    assert_true(proc_wait_for(job_is_finished, &seen, 10));
    assert_int_equal(seen.failures, 0);
    assert_int_equal(state_alloc_get(f->as.own, "job-d", &rows, &n), 0);
    assert_int_equal(n, 0); /* its GPUs free */
    state_allocs_free(rows, n);
    stop_node(f);
    fflush(f->as.logf);
    assert_non_null(strstr(f->as.logtext, "exited with status 0 without telling the controller"));
}

/*
 * Rank 0 ends with status 0 (its work done) and rank 1 then exits 3 (its peer, the rendezvous'
 * host, gone), both while the controller is unreachable, with max_restarts 0: castor-node tells
 * the completion before the failure, and the job is finished, not failed.
 */
static void castor_node__a_completion_goes_before_a_peer_failure(void **state)
{
    struct fx *f = *state;
    struct failures_seen seen = {.f = f, .job = "job-o", .want = 0};
    int port = f->as.port;

    finish_while_away(f, NULL, "job-o", "donefail", 2, 0);
    proc_sleep(0.5);
    assert_int_equal(as_listen(&f->as, port), 0);
    assert_true(proc_wait_for(job_is_finished, &seen, 10));
    assert_int_equal(seen.failures, 0);
    stop_node(f);
}

/*
 * castor-job-emulator's rank 0 gets a SIGTERM that is not the agent's (systemd stopping the
 * node's unit signals every process of it at once; an operator's kill): it checkpoints and exits
 * 75, "checkpointed, restart me", not 0, which castor-node takes (rank 0 ending by itself) for
 * the job's work done and tells the controller, which then finished a job with epochs left.
 */
static void castor_node__an_emulator_stopped_by_another_is_not_finished(void **state)
{
    struct fx *f = *state;
    struct failures_seen seen = {.f = f, .job = "job-e", .want = 0};
    char script[512], text[1024], pidfile[512], *pid_text = NULL, *log;
    pid_t pid = 0;

    snprintf(script, sizeof(script), "%s/emulate.sh", f->work);
    snprintf(pidfile, sizeof(pidfile), "%s/emulator.pid", f->work);
    snprintf(text, sizeof(text),
             "echo $$ > '%s'\n"
             "export CASTOR_EMULATOR_SPEED=20 CASTOR_EMULATOR_EPOCHS=50 "
             "CASTOR_CHECKPOINT_INTERVAL=100000\n"
             "exec '%s' cifar10\n",
             pidfile, CASTOR_EMULATOR_BIN);
    assert_int_equal(write_text(script, text), 0);
    spawn_node(f, f->as.url, NULL);
    assert_true(proc_wait_for(node_registered, f, REGISTER_WAIT_S));
    assign_script(f, script, "job-e", "emulate", 1, 3, "");
    for (double end = proc_now() + 10; !pid_text && proc_now() < end; proc_sleep(0.05))
        pid_text = proc_slurp(pidfile);
    assert_non_null(pid_text);
    pid = (pid_t)atol(pid_text);
    free(pid_text);
    assert_true(pid > 0);
    proc_sleep(1.0); /* the emulator runs */
    assert_int_equal(kill(pid, SIGTERM), 0);
    assert_true(proc_wait_gone(pid, 5));
    proc_sleep(1.0); /* a completion would be told at once */
    assert_false(job_is_finished(&seen));
    stop_node(f);
    log = proc_slurp(f->nodelog);
    assert_non_null(log);
    assert_non_null(strstr(log, "rank 0 exited with status 75"));
    free(log);
}

/*
 * A replica fails (exit 3) while the controller is unreachable, and the node fences itself
 * before the report gets through: the failure is still reported once the controller answers
 * (retried until then, docs/local.md), not dropped with the replica's record when the fence
 * made its entry unwanted. The fence's fresh assignment keeps the entry, so without the report
 * the job went on as if it had not failed (its failure count and reason lost; here the replica
 * was even started again in the same attempt).
 */
static void castor_node__a_failure_survives_a_fence(void **state)
{
    static const char *const extra[] = {"CASTOR_NODE_FENCE_S=1", NULL};
    struct fx *f = *state;
    struct failures_seen seen = {.f = f, .job = "job-w", .want = 1};
    char script[512], text[2048], pidfile[512], *pid_text = NULL;
    int port = f->as.port;
    pid_t pid;

    snprintf(script, sizeof(script), "%s/fail-away.sh", f->work);
    snprintf(pidfile, sizeof(pidfile), "%s/fail-away.pid", f->work);
    /* the first start fails once "finish" appears; any later one runs until stopped */
    snprintf(text, sizeof(text),
             "if [ -e failed ]; then while :; do sleep 0.05; done; fi\n"
             "echo $$ > '%s'\n"
             "while [ ! -e finish ]; do sleep 0.05; done\n"
             ": > failed\n"
             "exit 3\n",
             pidfile);
    assert_int_equal(write_text(script, text), 0);
    spawn_node(f, f->as.url, extra);
    assert_true(proc_wait_for(node_registered, f, REGISTER_WAIT_S));
    assign_script(f, script, "job-w", "x", 1, 3, "");
    for (double end = proc_now() + 10; !pid_text && proc_now() < end; proc_sleep(0.05))
        pid_text = proc_slurp(pidfile);
    assert_non_null(pid_text);
    pid = (pid_t)atol(pid_text);
    free(pid_text);
    as_unlisten(&f->as);
    touch_finish(f);
    assert_true(proc_wait_gone(pid, 5));
    proc_sleep(2.0); /* past the fence */
    assert_int_equal(as_listen(&f->as, port), 0);
    assert_true(proc_wait_for(job_failures, &seen, 10));
    assert_string_equal(seen.failure, "rank 0 on node " NODE_ID " exited with status 3");
    stop_node(f);
}

/*
 * Rank 0 ends with status 0 while the controller is unreachable, and the agent is stopped (SIGTERM)
 * right after the controller is back, before its next retry (backoff up to 30 s): it tells the
 * controller once more as it stops, and the job is finished.
 */
static void castor_node__a_stopping_agent_tells_a_completion(void **state)
{
    static const char *const extra[] = {"CASTOR_NODE_BACKOFF_MAX_S=30", NULL};
    struct fx *f = *state;
    struct failures_seen seen = {.f = f, .job = "job-s", .want = 0};
    int port = f->as.port;

    finish_while_away(f, extra, "job-s", "done", 1, 3);
    proc_sleep(4.0); /* failed tries: the next one is seconds away */
    assert_int_equal(as_listen(&f->as, port), 0);
    stop_node(f);
    assert_true(job_is_finished(&seen));
}

/*
 * With CASTOR_NODE_FENCE_S, a node the controller stops answering stops its replicas (SIGTERM:
 * they checkpoint) once that long has passed since the controller's last answer, and stays up;
 * when the controller answers again, the replicas start again as assigned.
 */
static void castor_node__fences_itself_when_the_controller_is_silent(void **state)
{
    static const char *const extra[] = {"CASTOR_NODE_FENCE_S=1.5", NULL};
    struct fx *f = *state;
    struct replicas r = {.work = f->work, .want = 2};
    struct replicas again = {.work = f->work, .want = 4};
    int port = f->as.port;
    double cut;

    struct state_node node;

    spawn_node(f, f->as.url, extra);
    assert_true(proc_wait_for(node_registered, f, REGISTER_WAIT_S));
    /* registered: the fence and the grace (0.6 s), when the controller may count on it */
    assert_int_equal(state_node_get(f->as.own, NODE_ID, &node), 0);
    assert_true(fabs(node.fence_s - 2.1) < 1e-9);
    state_node_clear(&node);
    assign(f, "job-g", "exit", 2);
    assert_true(proc_wait_for(scan_replicas, &r, 10));
    as_unlisten(&f->as);
    cut = proc_now();
    assert_true(proc_wait_for(replica_gone, &r, 10));
    if (proc_now() - cut < 1.5 - 0.2)
        fail_msg("the replicas stopped %.2f s after the controller went silent, before 1.5 s",
                 proc_now() - cut);
    assert_true(file_exists(f->work, "rank-%ld-%ld.term", 0, r.pids[0]) ||
                file_exists(f->work, "rank-%ld-%ld.term", 1, r.pids[0]));
    assert_true(proc_alive(f->node));
    assert_int_equal(as_listen(&f->as, port), 0);
    assert_true(proc_wait_for(scan_replicas, &again, 10)); /* two more: started again */
    stop_node(f);
}

/* Rank 1 of the replicas in f->work was told to stop (it wrote its .term). */
static int rank1_stopped(void *ctx)
{
    DIR *d = opendir((const char *)ctx);
    struct dirent *de;
    int found = 0;

    while (d && (de = readdir(d)) && !found)
        found = strncmp(de->d_name, "rank-1-", 7) == 0 && strstr(de->d_name, ".term") != NULL;
    if (d)
        closedir(d);
    return found;
}

/*
 * The controller answers again while a fenced replica is still stopping: rank 0 ignores its
 * SIGTERM until the SIGKILL 0.6 s later, rank 1 exits at once, and the controller listens again
 * as soon as rank 1 is gone. Once rank 0 is gone too, both ranks start again. Before, the rank
 * that exited after the fence came down was kept as exited under the same entry and never
 * started again (the fence test above met that race in CI: its first replica gone, the other
 * still stopping).
 */
static void castor_node__a_fence_lifted_while_stopping_restarts_every_rank(void **state)
{
    static const char *const extra[] = {"CASTOR_NODE_FENCE_S=1.5", NULL};
    struct fx *f = *state;
    struct replicas r = {.work = f->work, .want = 2};
    struct replicas again = {.work = f->work, .want = 4};
    int port = f->as.port;

    spawn_node(f, f->as.url, extra);
    assert_true(proc_wait_for(node_registered, f, REGISTER_WAIT_S));
    assign(f, "job-s", "slow0", 2);
    assert_true(proc_wait_for(scan_replicas, &r, 10));
    as_unlisten(&f->as);
    assert_true(proc_wait_for(rank1_stopped, (void *)f->work, 10));
    assert_int_equal(as_listen(&f->as, port), 0);
    assert_true(proc_wait_for(scan_replicas, &again, 10)); /* both started again */
    stop_node(f);
}

/*
 * With CASTOR_NODE_RUN_AS (castor-node as root), the replicas run as that user, with its HOME,
 * USER and LOGNAME, and cannot read a file only root reads (the node's token file); a user
 * castor-node cannot run them as is refused at start; the replicas die with a killed agent. Skipped
 * where the tests do not run as root or there is no user nobody.
 */
static void castor_node__runs_replicas_as_another_user(void **state)
{
    static const char *const as_nobody[] = {"CASTOR_NODE_RUN_AS=nobody", NULL};
    static const char *const as_root[] = {"CASTOR_NODE_RUN_AS=root", NULL};
    static const char *const as_nobody_else[] = {"CASTOR_NODE_RUN_AS=no-such-user-castor", NULL};
    struct fx *f = *state;
    struct replicas r = {.work = f->work, .want = 1};
    struct passwd *pw = getpwnam("nobody");
    char spec[1024], script[256], secret[256], path[512], *env, *text;
    struct node_run_as u;
    struct stat sb;
    int status;

    if (geteuid() != 0 || !pw) {
        assert_int_equal(node_run_as_lookup("no-such-user-castor", &u), ERR_UNKNOWN);
        skip();
    }
    assert_int_equal(node_run_as_lookup("nobody", &u), 0);
    assert_true(u.uid == pw->pw_uid && u.gid == pw->pw_gid && u.ngroups >= 1);
    assert_string_equal(u.home, pw->pw_dir);
    assert_int_equal(node_run_as_lookup("root", &u), ERR_INVAL);
    assert_int_equal(node_run_as_lookup("", &u), ERR_INVAL);
    assert_int_equal(node_run_as_lookup("no-such-user-castor", &u), ERR_UNKNOWN);
    /* refused at start */
    for (int i = 0; i < 2; i++) {
        spawn_node(f, f->as.url, i ? as_nobody_else : as_root);
        status = proc_wait_exit(f->node, 10);
        f->node = 0;
        assert_true(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) != 0);
    }
    text = proc_slurp(f->nodelog);
    assert_non_null(text);
    assert_non_null(strstr(text, "CASTOR_NODE_RUN_AS"));
    free(text);

    /* the replica, in a folder nobody may use, and a file only root reads */
    assert_int_equal(chmod(f->as.dir, 0711), 0);
    assert_int_equal(chmod(f->work, 01777), 0);
    copy_replica_sh(f, script, sizeof(script));
    snprintf(secret, sizeof(secret), "%s/node.token", f->work);
    assert_int_equal(write_text(secret, "secret\n"), 0);
    assert_int_equal(chmod(secret, 0600), 0);
    spawn_node(f, f->as.url, as_nobody);
    assert_true(proc_wait_for(node_registered, f, REGISTER_WAIT_S));
    snprintf(spec, sizeof(spec),
             "{\"name\":\"job-u\",\"command\":[\"/bin/sh\",\"-c\",\"cat %s >got 2>/dev/null; "
             "exec /bin/sh %s\"],\"workdir\":\"%s\",\"env\":{\"MODE\":\"exit\"},"
             "\"init_batch_size\":128,\"max_batch_size\":4096,\"max_local_bsz\":256,"
             "\"min_replicas\":1,\"max_replicas\":8}",
             secret, script, f->work);
    assert_int_equal(as_assign(&f->as, "job-u", spec, NODE_ID, 1), 0);
    assert_true(proc_wait_for(scan_replicas, &r, 10));
    snprintf(path, sizeof(path), "%s/rank-0-%ld.env", f->work, (long)r.pids[0]);
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_uid, pw->pw_uid); /* written by the replica, as nobody */
    env = replica_env(f, 0, r.pids[0]);
    assert_non_null(env);
    assert_non_null(strstr(env, "USER=nobody\n"));
    assert_non_null(strstr(env, "LOGNAME=nobody\n"));
    snprintf(path, sizeof(path), "HOME=%s\n", pw->pw_dir);
    assert_non_null(strstr(env, path));
    free(env);
    snprintf(path, sizeof(path), "%s/got", f->work);
    text = proc_slurp(path);
    assert_non_null(text);
    assert_null(strstr(text, "secret")); /* the root-only file could not be read */
    free(text);
    /* an agent killed takes its replicas with it: their parent-death signal is set after the
     * change of user, which clears it (else a restarted agent would start a second copy) */
    assert_int_equal(kill(f->node, SIGKILL), 0);
    assert_true(proc_wait_exit(f->node, 5) != -1);
    f->node = 0;
    if (!proc_wait_gone(r.pids[0], 5))
        fail_msg("the replica run as nobody outlived its killed agent");
    kill(r.children[0], SIGKILL); /* (its background child is not the agent's to kill) */
}

/* 1 when a process run as uid (and nobody's groups) can open path for reading. */
static int readable_as(uid_t uid, gid_t gid, const char *path)
{
    pid_t pid = fork();
    int status = 0;

    assert_true(pid >= 0);
    if (pid == 0) {
        FILE *fp;

        if (setgroups(0, NULL) != 0 || setgid(gid) != 0 || setuid(uid) != 0)
            _exit(2);
        fp = fopen(path, "r");
        _exit(fp ? 0 : 1);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) != 2);
    return WEXITSTATUS(status) == 0;
}

/* The owner of the env file of rank 0's replica pid (the uid it ran as). */
static uid_t env_uid(const struct fx *f, pid_t pid)
{
    char path[512];
    struct stat sb;

    snprintf(path, sizeof(path), "%s/rank-0-%ld.env", f->work, (long)pid);
    assert_int_equal(stat(path, &sb), 0);
    return sb.st_uid;
}

/* 1 when a process runs as the first uid of the range of ctx (a struct node_run_as). */
static int uid_busy(void *ctx)
{
    const struct node_run_as *u = ctx;
    unsigned char busy[NODE_RUN_AS_UIDS_MAX];

    return node_run_as_busy(u, busy) == 0 && busy[0];
}

/*
 * With CASTOR_NODE_RUN_AS_UIDS, each job on the node runs as a uid of its own from the range (the
 * run-as user's group and HOME): job a's two ranks share one, job b has another, both free in
 * the range (not its first, which a process outside castor runs as), their files their group's to
 * write too (umask 007); a process run as a's uid reads
 * the environment (and so the job token) of a's other rank, not b's. Skipped where the tests do not
 * run as root, there is no user nobody, or an account holds a uid of the range.
 */
static void castor_node__a_uid_of_its_own_per_job(void **state)
{
    static const char *const extra[] = {"CASTOR_NODE_RUN_AS=nobody",
                                        "CASTOR_NODE_RUN_AS_UIDS=61000-61009",
                                        "CASTOR_FAKE_GPUS=3:8", NULL};
    struct fx *f = *state;
    struct replicas a = {.work = f->work, .want = 2, .must_have = "CASTOR_JOB=job-a\n"};
    struct replicas b = {.work = f->work, .want = 1, .must_have = "CASTOR_JOB=job-b\n"};
    struct replicas c = {.work = f->work, .want = 1, .must_have = "CASTOR_JOB=job-c\n"};
    struct state_alloc row = {.node = NODE_ID, .replicas = 1};
    struct passwd *pw = getpwnam("nobody");
    struct node_run_as u;
    unsigned char busy[10];
    uid_t ua[2], ub, uc;
    pid_t b_first, b_child;
    char path[512], script[256];
    struct stat sb;
    pid_t blocker, parent;

    if (geteuid() != 0 || !pw || node_run_as_lookup("nobody", &u) < 0 ||
        node_run_as_uids("61000-61009", &u, NULL, 0) < 0)
        skip();
    /* a process (a job's stray descendant, say) runs as the range's first uid: no job gets it */
    parent = getpid();
    blocker = fork();
    assert_true(blocker >= 0);
    if (blocker == 0) {
        int null = open("/dev/null", O_RDWR);

        /* nothing of the test's output held open, gone with the test (set after the change of
         * user, which clears it) or in a minute */
        for (int fd = 0; fd < 3 && null >= 0; fd++)
            dup2(null, fd);
        alarm(60);
        if (setgroups(0, NULL) == 0 && setgid(pw->pw_gid) == 0 && setuid(61000) == 0 &&
            prctl(PR_SET_PDEATHSIG, SIGKILL) == 0 && getppid() == parent)
            pause();
        _exit(1);
    }
    assert_true(proc_wait_for(uid_busy, &u, 5));
    assert_int_equal(node_run_as_busy(&u, busy), 0);
    assert_int_equal(chmod(f->as.dir, 0711), 0);
    assert_int_equal(chmod(f->work, 01777), 0);
    spawn_node(f, f->as.url, extra);
    assert_true(proc_wait_for(node_registered, f, REGISTER_WAIT_S));
    copy_replica_sh(f, script, sizeof(script));
    assign_script(f, script, "job-a", "exit", 2, 3, "");
    assign_script(f, script, "job-b", "exit", 1, 3, "");
    assert_true(proc_wait_for(scan_replicas, &a, 10));
    assert_true(proc_wait_for(scan_replicas, &b, 10));
    for (int k = 0; k < 2; k++) {
        snprintf(path, sizeof(path), "%s/rank-%d-%ld.env", f->work, k, (long)a.pids[k]);
        if (stat(path, &sb) != 0) /* the scan's order is the folder's: the other rank */
            snprintf(path, sizeof(path), "%s/rank-%d-%ld.env", f->work, 1 - k, (long)a.pids[k]);
        assert_int_equal(stat(path, &sb), 0);
        ua[k] = sb.st_uid;
        assert_int_equal(sb.st_gid, pw->pw_gid);
        assert_int_equal(sb.st_mode & 0777, 0660); /* umask 007: the group's to write too */
    }
    snprintf(path, sizeof(path), "%s/rank-0-%ld.env", f->work, (long)b.pids[0]);
    assert_int_equal(stat(path, &sb), 0);
    ub = sb.st_uid;
    b_first = b.pids[0];
    b_child = b.children[0];
    assert_int_equal(ua[0], ua[1]);
    assert_true(ua[0] != ub);
    assert_true(ua[0] > 61000 && ua[0] <= 61009 && !busy[ua[0] - 61000]);
    assert_true(ub > 61000 && ub <= 61009 && !busy[ub - 61000]);
    /* a's code reads its own peer's environment, not b's */
    snprintf(path, sizeof(path), "/proc/%ld/environ", (long)a.pids[1]);
    assert_true(readable_as(ua[0], pw->pw_gid, path));
    snprintf(path, sizeof(path), "/proc/%ld/environ", (long)b.pids[0]);
    assert_false(readable_as(ua[0], pw->pw_gid, path));
    /* b leaves: c, new, gets a uid never given (not b's, least recently given); c leaves and b
     * comes back: b gets its own uid back */
    assert_int_equal(state_alloc_replace(f->as.own, "job-b", NULL, 0, as_wall(NULL)), 0);
    assert_true(proc_wait_gone(b.pids[0], 10));
    assign_script(f, script, "job-c", "exit", 1, 3, "");
    assert_true(proc_wait_for(scan_replicas, &c, 10));
    uc = env_uid(f, c.pids[0]);
    assert_true(uc != ua[0] && uc != ub && uc > 61000 && uc <= 61009);
    assert_int_equal(state_alloc_replace(f->as.own, "job-c", NULL, 0, as_wall(NULL)), 0);
    assert_true(proc_wait_gone(c.pids[0], 10));
    assert_int_equal(state_alloc_replace(f->as.own, "job-b", &row, 1, as_wall(NULL)), 0);
    b.want = 2;
    assert_true(proc_wait_for(scan_replicas, &b, 10));
    assert_int_equal(env_uid(f, b.pids[0] == b_first ? b.pids[1] : b.pids[0]), ub);
    kill(c.children[0], SIGKILL);
    kill(b_child, SIGKILL);
    assert_int_equal(kill(f->node, SIGTERM), 0);
    assert_true(proc_wait_exit(f->node, 10) != -1);
    f->node = 0;
    for (int k = 0; k < 2; k++)
        kill(a.children[k], SIGKILL);
    kill(b.children[0], SIGKILL);
    kill(blocker, SIGKILL);
    waitpid(blocker, NULL, 0);
}

/* The node's last heartbeat as the API recorded it (NAN: none, or no node). */
static double heartbeat_at(struct fx *f)
{
    struct state_node n;
    double at = NAN;

    if (state_node_get(f->as.own, NODE_ID, &n) == 0)
        at = n.heartbeat_at;
    state_node_clear(&n);
    return at;
}

static int heard_after(void *ctx)
{
    struct fx *f = ((struct fx **)ctx)[0];
    const double *after = ((const double **)ctx)[1];

    return heartbeat_at(f) > *after;
}

/*
 * Against an API that wants each node's own token, castor-node keeps the token its registration
 * answered (in CASTOR_NODE_TOKEN_CACHE, mode 600) and heartbeats and reads its assignment with it;
 * a new agent on the node finds it there (its registration answers 409, without a token). Without
 * the cache the new agent is refused, says why, and is not heard.
 */
static void castor_node__keeps_its_own_token(void **state)
{
    struct fx *f = *state;
    struct replicas r = {.work = f->work, .want = 1};
    char cache[200], env[240], want[API_JOB_TOKEN_MAX], *text;
    const char *extra[] = {env, NULL};
    double t0;
    void *ctx[2] = {f, &t0};
    struct stat sb;

    assert_int_equal(as_path(&f->as, "node-token", 0, cache, sizeof(cache)), 0);
    snprintf(env, sizeof(env), "CASTOR_NODE_TOKEN_CACHE=%s", cache);
    assert_int_equal(api_node_token(f->as.api, NODE_ID, want, sizeof(want)), 0);
    spawn_node(f, f->as.url, extra);
    assert_true(proc_wait_for(node_registered, f, REGISTER_WAIT_S));
    {
        struct state_node n;

        assert_int_equal(state_node_get(f->as.own, NODE_ID, &n), 0);
        assert_true(n.agent && strlen(n.agent) == 32); /* the agent named itself */
        state_node_clear(&n);
    }
    t0 = heartbeat_at(f);
    assert_true(proc_wait_for(heard_after, ctx, 10)); /* its heartbeats are taken */
    text = proc_slurp(cache);
    assert_non_null(text);
    assert_string_equal(text, want);
    free(text);
    assert_int_equal(stat(cache, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    assign(f, "job-t", "exit", 1);
    assert_true(proc_wait_for(scan_replicas, &r, 10)); /* its assignment is read */
    stop_node(f);
    /* a new agent on the node: the cached token */
    spawn_node(f, f->as.url, extra);
    proc_sleep(0.5);
    t0 = heartbeat_at(f);
    assert_true(proc_wait_for(heard_after, ctx, 10));
    stop_node(f);
    /* and one without it: refused, and told */
    assert_int_equal(unlink(cache), 0);
    spawn_node(f, f->as.url, NULL);
    proc_sleep(1.0);
    t0 = heartbeat_at(f);
    proc_sleep(1.0);
    assert_false(heard_after(ctx));
    text = proc_slurp(f->nodelog);
    assert_non_null(text);
    assert_non_null(strstr(text, "does not have its own token"));
    free(text);
    stop_node(f);
}

static void castor_node__retries_until_the_controller_answers(void **state)
{
    struct fx *f = *state;
    int port = f->as.port;
    char url[64];

    snprintf(url, sizeof(url), "%s", f->as.url);
    as_unlisten(&f->as);
    spawn_node(f, url, NULL);
    proc_sleep(0.8);
    assert_true(proc_alive(f->node));
    assert_false(node_registered(f));
    assert_int_equal(as_listen(&f->as, port), 0);
    assert_true(proc_wait_for(node_registered, f, 5)); /* backoff at most 0.2 s here */
    stop_node(f);
}

static void castor_node__exits_when_the_controller_says_terminated(void **state)
{
    struct fx *f = *state;
    int status;

    spawn_node(f, f->as.url, NULL);
    assert_true(proc_wait_for(node_registered, f, REGISTER_WAIT_S));
    assert_int_equal(state_node_set_state(f->as.own, NODE_ID, STATE_NODE_TERMINATED, as_wall(NULL)),
                     0);
    status = proc_wait_exit(f->node, 5);
    f->node = 0;
    assert_true(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* A controller that answers nonsense to every assignment request. */
struct liar {
    int assignments;
};

static void liar_handle(void *arg, const struct lh_request *req, struct lh_reply *reply)
{
    static const char *const answers[] = {
        "{not json",
        "{\"state\":\"ready\",\"jobs\":[{\"job\":5}]}",
        "[]",
    };
    struct liar *l = arg;

    if (strcmp(req->target, "/v1/nodes") == 0) {
        lh_reply_text(reply, 201, "application/json", "{\"state\":\"ready\"}");
    } else if (strstr(req->target, "/heartbeat")) {
        lh_reply_text(reply, 200, "application/json", "{\"state\":\"ready\"}");
    } else if (strstr(req->target, "/assignment")) {
        int k = l->assignments++ % 4;

        if (k == 3)
            lh_reply_text(reply, 500, "text/plain", "oops");
        else
            lh_reply_text(reply, 200, "application/json", answers[k]);
    } else {
        lh_reply_text(reply, 404, "application/json", "{\"error\":\"no\"}");
    }
}

static int liar_asked(void *ctx)
{
    const volatile struct liar *l = ctx;

    return l->assignments >= 8;
}

static void castor_node__survives_bad_answers(void **state)
{
    struct fx *f = *state;
    struct liar l = {0};
    struct lh_server *s = NULL;
    char url[64], *log;

    assert_int_equal(lh_start(liar_handle, &l, &s), 0);
    lh_url(s, url, sizeof(url));
    spawn_node(f, url, NULL);
    assert_true(proc_wait_for(liar_asked, &l, 10));
    assert_true(proc_alive(f->node));
    stop_node(f);
    lh_stop(s);
    log = proc_slurp(f->nodelog);
    assert_non_null(log);
    assert_non_null(strstr(log, "malformed assignment"));
    assert_non_null(strstr(log, "assignment answered 500"));
    free(log);
}

/* ---- a scripted controller (one connection at a time, on its own thread) ---- */

struct script {
    char assignment[2048];     /* the jobs it assigns (200) */
    volatile int silent;       /* every connection cut without a word */
    volatile int status;       /* the assignment's status: 200, or an error */
    volatile double delay_s;   /* each heartbeat and assignment answers this late */
    volatile int beats, reads; /* heartbeats and assignment reads received */
    volatile int notices;
    char notice[256]; /* the last notice's body */
};

static void script_handle(void *arg, const struct lh_request *req, struct lh_reply *reply)
{
    struct script *s = arg;

    if (s->silent) {
        reply->action = LH_CLOSE;
    } else if (strcmp(req->target, "/v1/nodes") == 0) {
        lh_reply_text(reply, 201, "application/json", "{\"state\":\"ready\"}");
    } else if (strstr(req->target, "/heartbeat")) {
        s->beats++;
        proc_sleep(s->delay_s);
        lh_reply_text(reply, 200, "application/json", "{\"state\":\"ready\"}");
    } else if (strstr(req->target, "/assignment")) {
        s->reads++;
        proc_sleep(s->delay_s);
        if (s->status == 200)
            lh_reply_text(reply, 200, "application/json", s->assignment);
        else
            lh_reply_text(reply, s->status, "application/json", "{\"error\":\"unavailable\"}");
    } else if (strstr(req->target, "/notice")) {
        snprintf(s->notice, sizeof(s->notice), "%s", req->body ? req->body : "");
        s->notices++;
        lh_reply_text(reply, 200, "application/json", "{}");
    } else if (strstr(req->target, "/failures")) {
        lh_reply_text(reply, 200, "application/json", "{\"counted\":true,\"state\":\"running\"}");
    } else {
        lh_reply_text(reply, 404, "application/json", "{\"error\":\"no\"}");
    }
}

/* The script's assignment: job with one replica of replica.sh (MODE mode) on this node. */
static void script_assign(struct script *s, const struct fx *f, const char *job, const char *mode)
{
    snprintf(s->assignment, sizeof(s->assignment),
             "{\"state\":\"ready\",\"jobs\":[{\"job\":\"%s\",\"replicas\":1,\"rank_offset\":0,"
             "\"world_size\":1,\"master\":\"" NODE_ID "\",\"generation\":\"g1\","
             "\"spec\":{\"command\":[\"/bin/sh\",\"%s\"],\"workdir\":\"%s\","
             "\"env\":{\"MODE\":\"%s\"}}}]}",
             job, REPLICA_SH, f->work, mode);
    s->status = 200;
}

struct script_wait {
    const struct script *s;
    int reads, beats;
};

static int script_read_more(void *ctx)
{
    const struct script_wait *w = ctx;

    return w->s->reads >= w->reads && w->s->beats >= w->beats;
}

/*
 * A fence lifts when a heartbeat is answered, but the assignment kept from before it is stale
 * (the controller may have moved the job meanwhile): while the assignment cannot be read (503),
 * no replica starts again; once a fresh one is read, it does.
 */
static void castor_node__a_lifted_fence_waits_for_a_fresh_assignment(void **state)
{
    static const char *const extra[] = {"CASTOR_NODE_FENCE_S=1", NULL};
    struct fx *f = *state;
    struct script s = {0};
    struct lh_server *srv = NULL;
    struct replicas r = {.work = f->work, .want = 1};
    struct replicas again = {.work = f->work, .want = 2};
    struct script_wait w = {.s = &s};
    char url[64];

    script_assign(&s, f, "job-l", "exit");
    assert_int_equal(lh_start(script_handle, &s, &srv), 0);
    lh_url(srv, url, sizeof(url));
    spawn_node(f, url, extra);
    assert_true(proc_wait_for(scan_replicas, &r, 10));
    s.silent = 1;
    assert_true(proc_wait_for(replica_gone, &r, 10)); /* fenced */
    s.status = 503;
    w.beats = s.beats + 3;
    w.reads = s.reads + 3;
    s.silent = 0;
    assert_true(proc_wait_for(script_read_more, &w, 10)); /* heard, assignment unreadable */
    proc_sleep(0.3);
    scan_replicas(&again);
    if (again.n != 1)
        fail_msg("%d replicas started from the assignment kept from before the fence", again.n - 1);
    s.status = 200;
    assert_true(proc_wait_for(scan_replicas, &again, 10)); /* a fresh one: started again */
    stop_node(f);
    lh_stop(srv);
}

/* The node's replica as the files it writes: "pid" (its process, once it exec'd the sleep). */
static int replica_pid(void *ctx)
{
    const struct fx *f = ((void **)ctx)[0];
    pid_t *pid = ((void **)ctx)[1];
    char path[512], *text, *comm;
    int ok;

    snprintf(path, sizeof(path), "%s/pid", f->work);
    if (!(text = proc_slurp(path)))
        return 0;
    *pid = (pid_t)atol(text);
    free(text);
    snprintf(path, sizeof(path), "/proc/%ld/comm", (long)*pid);
    comm = proc_slurp(path);
    ok = comm && strncmp(comm, "sleep", 5) == 0;
    free(comm);
    return ok;
}

/* The descriptors of pid from 3 up, as "fd -> what" lines into buf; how many. */
static int open_fds(pid_t pid, char *buf, size_t size)
{
    char path[96], link[256];
    struct dirent *de;
    DIR *d;
    int n = 0;

    buf[0] = '\0';
    snprintf(path, sizeof(path), "/proc/%ld/fd", (long)pid);
    if (!(d = opendir(path)))
        return -1;
    while ((de = readdir(d))) {
        char full[400];
        ssize_t len;

        if (de->d_name[0] == '.' || atoi(de->d_name) < 3)
            continue;
        snprintf(full, sizeof(full), "%s/%s", path, de->d_name);
        len = readlink(full, link, sizeof(link) - 1);
        link[len > 0 ? len : 0] = '\0';
        snprintf(buf + strlen(buf), size - strlen(buf), " %s -> %s;", de->d_name, link);
        n++;
    }
    closedir(d);
    return n;
}

/*
 * A replica inherits no descriptor of the agent's beyond 0, 1 and 2: not its connection to the
 * controller (libcurl's sockets are not close-on-exec), which over http would let a replica read
 * answers carrying other jobs' tokens.
 */
static void castor_node__replicas_inherit_no_descriptor(void **state)
{
    struct fx *f = *state;
    char spec[1024], fds[2048];
    pid_t pid = 0;
    void *ctx[2] = {f, &pid};
    int n;

    spawn_node(f, f->as.url, NULL);
    assert_true(proc_wait_for(node_registered, f, REGISTER_WAIT_S));
    snprintf(spec, sizeof(spec),
             "{\"name\":\"job-fd\",\"command\":[\"/bin/sh\",\"-c\",\"echo $$ >pid.tmp && mv "
             "pid.tmp pid && exec sleep 300\"],\"workdir\":\"%s\",\"init_batch_size\":128,"
             "\"max_batch_size\":4096,\"max_local_bsz\":256,\"min_replicas\":1,"
             "\"max_replicas\":8}",
             f->work);
    assert_int_equal(as_assign(&f->as, "job-fd", spec, NODE_ID, 1), 0);
    assert_true(proc_wait_for(replica_pid, ctx, 10));
    proc_sleep(0.3); /* a few heartbeats more: the agent's connection is open */
    n = open_fds(pid, fds, sizeof(fds));
    if (n != 0)
        fail_msg("the replica has %d descriptors of the agent's:%s", n, fds);
    stop_node(f);
    assert_true(proc_wait_gone(pid, 5));
}

/* The files named prefix-* in dir: their count, and the names' pids (in readdir's order). */
static int named(const char *dir, const char *prefix, long *pids, int max)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    size_t len = strlen(prefix);
    int n = 0;

    while (d && (de = readdir(d)))
        if (strncmp(de->d_name, prefix, len) == 0 && de->d_name[len] == '-' && n < max)
            pids[n++] = atol(de->d_name + len + 1);
    if (d)
        closedir(d);
    return n;
}

static int two_started(void *ctx)
{
    long pids[4];

    return named((const char *)ctx, "start", pids, 4) >= 2;
}

/*
 * A replica run by a wrapper (sh -c "trainer"): on SIGTERM the wrapper dies at once and the
 * trainer checkpoints (here 1 s). The trainer keeps its grace: its group is not killed when the
 * wrapper exits, and the replica counts as stopped (its rank and GPU held, the next replicas not
 * started) until its last process has exited.
 */
static void castor_node__a_stopping_replica_keeps_its_grace_after_its_wrapper_exits(void **state)
{
    static const char *const extra[] = {"CASTOR_NODE_GRACE_S=8", NULL};
    static const char trainer[] = "echo started >\"start-$$\"\n"
                                  "trap 'sleep 1; echo done >\"done-$$\"; exit 0' TERM\n"
                                  "while :; do sleep 0.05; done\n";
    struct fx *f = *state;
    char spec[1024], path[512], name[64];
    long pids[4], first, second;
    double done_at, second_at;

    snprintf(path, sizeof(path), "%s/trainer.sh", f->work);
    assert_int_equal(write_text(path, trainer), 0);
    spawn_node(f, f->as.url, extra);
    assert_true(proc_wait_for(node_registered, f, REGISTER_WAIT_S));
    snprintf(spec, sizeof(spec),
             "{\"name\":\"job-w\",\"command\":[\"/bin/sh\",\"-c\",\"/bin/sh trainer.sh & "
             "wait\"],\"workdir\":\"%s\",\"init_batch_size\":128,\"max_batch_size\":4096,"
             "\"max_local_bsz\":256,\"min_replicas\":1,\"max_replicas\":8}",
             f->work);
    assert_int_equal(as_assign(&f->as, "job-w", spec, NODE_ID, 1), 0);
    while (named(f->work, "start", pids, 4) < 1)
        proc_sleep(0.01);
    first = pids[0];
    proc_sleep(0.2);
    assert_int_equal(state_job_set_config(f->as.own, "job-w", 32, 0, 1.0), 0); /* a restart */
    assert_true(proc_wait_for(two_started, f->work, 15));
    named(f->work, "start", pids, 4);
    second = pids[0] == first ? pids[1] : pids[0];
    snprintf(name, sizeof(name), "done-%ld", first);
    done_at = written_at(f, name);
    if (isnan(done_at))
        fail_msg("the trainer was killed during its checkpoint, after its wrapper exited");
    snprintf(name, sizeof(name), "start-%ld", second);
    second_at = written_at(f, name);
    if (second_at < done_at)
        fail_msg("the next replica started %.2f s before the last one's trainer ended",
                 done_at - second_at);
    stop_node(f);
}

/*
 * While every GPU is still held by another job's stopping replicas (here ignoring SIGTERM until
 * the SIGKILL 0.6 s later), a new job's replicas wait: each then starts with a GPU of its own
 * (before, they started at once with no CUDA_VISIBLE_DEVICES, seeing every GPU).
 */
static void castor_node__a_new_job_waits_for_gpus_still_held(void **state)
{
    struct fx *f = *state;
    struct replicas b = {.work = f->work, .want = 2, .must_have = "CASTOR_JOB=job-h1\n"};
    struct replicas a = {.work = f->work, .want = 2, .must_have = "CASTOR_JOB=job-h2\n"};

    spawn_node(f, f->as.url, NULL);
    assert_true(proc_wait_for(node_registered, f, REGISTER_WAIT_S));
    assign(f, "job-h1", "ignore", 2);
    assert_true(proc_wait_for(scan_replicas, &b, 10));
    assert_int_equal(state_alloc_replace(f->as.own, "job-h1", NULL, 0, as_wall(NULL)), 0);
    assign(f, "job-h2", "exit", 2);
    assert_true(proc_wait_for(scan_replicas, &a, 10));
    for (int i = 0; i < 2; i++) {
        char *env = replica_env(f, file_exists(f->work, "rank-%ld-%ld.env", 0, a.pids[i]) ? 0 : 1,
                                a.pids[i]);

        assert_non_null(env);
        if (!strstr(env, "CUDA_VISIBLE_DEVICES="))
            fail_msg("job-h2's replica %ld started without a GPU of its own", (long)a.pids[i]);
        free(env);
    }
    for (int i = 0; i < 2; i++) /* the old ones were gone when the new ones started */
        assert_false(proc_alive(b.pids[i]));
    stop_node(f);
}

static int script_beat_more(void *ctx)
{
    const struct script_wait *w = ctx;

    return w->s->beats >= w->beats;
}

static int replica_told(void *ctx)
{
    const struct replicas *r = ctx;

    return file_exists(r->work, "rank-%ld-%ld.term", 0, r->pids[0]);
}

/*
 * A notice (SIGUSR1) that comes while the agent waits for a slow controller (each answer 1 s late)
 * is taken as soon as the request in flight ends, not after the assignment read that follows: the
 * replica is told within about one answer's delay, and the deadline counts from then.
 */
static void castor_node__a_notice_does_not_wait_for_the_controller(void **state)
{
    struct fx *f = *state;
    struct script s = {0};
    struct lh_server *srv = NULL;
    struct replicas r = {.work = f->work, .want = 1};
    struct script_wait w = {.s = &s};
    union sigval v = {.sival_int = 4000};
    double t0, sent, took, deadline = NAN;
    char url[64];
    const char *p;

    script_assign(&s, f, "job-n", "exit");
    assert_int_equal(lh_start(script_handle, &s, &srv), 0);
    lh_url(srv, url, sizeof(url));
    spawn_node(f, url, NULL);
    assert_true(proc_wait_for(scan_replicas, &r, 10));
    s.delay_s = 1.0;
    w.beats = s.beats + 2; /* a slow heartbeat has begun (the first may be a fast one) */
    assert_true(proc_wait_for(script_beat_more, &w, 10));
    t0 = proc_now();
    sent = as_wall(NULL);
    assert_int_equal(sigqueue(f->node, SIGUSR1, v), 0);
    assert_true(proc_wait_for(replica_told, &r, 10));
    took = proc_now() - t0;
    if (took > 1.5)
        fail_msg("the replica was told %.2f s after the notice", took);
    while (s.notices < 1 && proc_now() - t0 < 10)
        proc_sleep(0.01);
    if ((p = strstr(s.notice, "\"deadline\":")))
        deadline = atof(p + strlen("\"deadline\":"));
    if (!(fabs(deadline - (sent + 4)) < 1.5))
        fail_msg("the notice's deadline is %.2f s after the one sent", deadline - (sent + 4));
    s.delay_s = 0;
    stop_node(f);
    lh_stop(srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(node_assignment_parse__reads_jobs_and_configuration),
        cmocka_unit_test(node_assignment_parse__in_flight_keys_leave_out_the_configuration),
        cmocka_unit_test(node_assignment_parse__refuses_malformed_answers),
        cmocka_unit_test(node_replica_env__ranks_configuration_and_no_node_secret),
        cmocka_unit_test(node_master_port__per_placement_and_in_range),
        cmocka_unit_test_setup_teardown(castor_node__registers_gpus_and_heartbeats, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(
            castor_node__starts_assigned_replicas_with_their_environment, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(castor_node__a_moved_job_waits_for_its_old_replicas,
                                        fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(
            castor_node__a_job_on_two_nodes_tells_its_replicas_the_nodes, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(castor_node__restarts_changed_replicas_sigterm_then_sigkill,
                                        fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(castor_node__forwards_sigusr1_as_a_notice, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(castor_node__sigterm_stops_replicas_and_leaves_no_orphan,
                                        fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(castor_node__takes_back_signals_its_launcher_ignored,
                                        fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(castor_node__sigterm_kills_an_escaped_descendant, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(castor_node__a_replica_whose_fork_failed_starts_later,
                                        fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(castor_node__retries_until_the_controller_answers, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(castor_node__exits_when_the_controller_says_terminated,
                                        fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(castor_node__survives_bad_answers, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(castor_node__a_failed_replica_restarts_its_gang, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(castor_node__failures_in_a_row_fail_the_job, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(castor_node__a_uid_of_its_own_per_job, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(castor_node__runs_replicas_as_another_user, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(castor_node__keeps_its_own_token, fx_setup_per_node,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(
            castor_node__keeps_in_flight_replicas_through_a_new_configuration, fx_setup,
            fx_teardown),
        cmocka_unit_test_setup_teardown(castor_node__tells_the_controller_rank_0_ended, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(castor_node__a_completion_goes_before_a_peer_failure,
                                        fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(castor_node__an_emulator_stopped_by_another_is_not_finished,
                                        fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(castor_node__a_failure_survives_a_fence, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(castor_node__a_stopping_agent_tells_a_completion, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(castor_node__fences_itself_when_the_controller_is_silent,
                                        fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(
            castor_node__a_fence_lifted_while_stopping_restarts_every_rank, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(castor_node__a_lifted_fence_waits_for_a_fresh_assignment,
                                        fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(castor_node__replicas_inherit_no_descriptor, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(
            castor_node__a_stopping_replica_keeps_its_grace_after_its_wrapper_exits, fx_setup,
            fx_teardown),
        cmocka_unit_test_setup_teardown(castor_node__a_new_job_waits_for_gpus_still_held, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(castor_node__a_notice_does_not_wait_for_the_controller,
                                        fx_setup, fx_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
