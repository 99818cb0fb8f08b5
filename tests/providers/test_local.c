/* test_local.c: the local cloud with real castor-node processes and the real API on loopback:
 * offers, a launch whose node registers with its offer's fake GPUs, idempotent tokens, capacity,
 * termination (SIGTERM; SIGKILL of the whole instance after the grace, with a stand-in node that
 * ignores SIGTERM), a new cloud over the same run folder finding the instances (a controller
 * restart), and a preemption: the notice reaches the controller, the replicas checkpoint, then
 * nothing of the instance is left. */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "providers/local.h"
#include "support/api_server.h"
#include "support/process.h"
#include "util/file.h"

#define REPLICA_SH CASTOR_TEST_DATA "/agent/replica.sh"
#define STUBBORN_SH CASTOR_TEST_DATA "/agent/stubborn-node.sh"

static const struct local_offer offers[] = {
    {"gpu2/spot", 2, 8, 1, 0.5, 2},
    {"gpu4", 4, 0, 0, 1.25, -1},
    {"none", 1, 0, 1, 0.1, 0},
};

struct fx {
    struct api_server as;
    char run[160], work[160], token_file[160];
    char stub_env[200];
    const char *env[8];
    struct local_config cfg;
    struct cloud cloud;
};

static int fx_setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));

    if (!f || as_start(&f->as) < 0 || as_path(&f->as, "run", 0, f->run, sizeof(f->run)) < 0 ||
        as_path(&f->as, "work", 1, f->work, sizeof(f->work)) < 0 ||
        as_path(&f->as, "node.token", 0, f->token_file, sizeof(f->token_file)) < 0 ||
        file_write_atomic(f->token_file, AS_TOKEN_NODE "\n", strlen(AS_TOKEN_NODE) + 1, 0600,
                          NULL) < 0)
        return -1;
    snprintf(f->stub_env, sizeof(f->stub_env), "STUB_DIR=%s", f->work);
    f->env[0] = "CASTOR_NODE_HEARTBEAT_S=0.1";
    f->env[1] = "CASTOR_NODE_GRACE_S=0.5";
    f->env[2] = "CASTOR_NODE_BACKOFF_MAX_S=0.2";
    f->env[3] = "CASTOR_JOB_TOKEN=" AS_TOKEN_JOB;
    f->env[4] = f->stub_env;
    f->cfg.run_dir = f->run;
    f->cfg.node_bin = CASTOR_NODE_BIN;
    f->cfg.url = f->as.url;
    f->cfg.node_token_file = f->token_file;
    f->cfg.offers = offers;
    f->cfg.noffers = sizeof(offers) / sizeof(offers[0]);
    f->cfg.grace_s = 3;
    f->cfg.env = f->env;
    setenv("CASTOR_USER_TOKEN", AS_TOKEN_USER, 1); /* the controller's: never a node's */
    if (cloud_local_new(&f->cfg, &f->cloud) < 0)
        return -1;
    *state = f;
    return 0;
}

/* Every instance still running in cluster, SIGKILLed with its session by a preemption of 0 s. */
static void kill_all(struct fx *f, const char *cluster)
{
    struct cloud_instance *v = NULL;
    size_t n = 0;

    if (cloud_list(&f->cloud, cluster, &v, &n) < 0)
        return;
    for (size_t i = 0; i < n; i++)
        if (v[i].state != CLOUD_GONE)
            local_preempt(&f->cloud, v[i].id, 0);
    free(v);
}

static int fx_teardown(void **state)
{
    struct fx *f = *state;
    char log[256];

    kill_all(f, "c1");
    kill_all(f, "c2");
    snprintf(log, sizeof(log), "%s/local-1.log", f->run);
    proc_dump_log("local-1 log", log);
    cloud_free(&f->cloud);
    unsetenv("CASTOR_USER_TOKEN");
    as_stop(&f->as);
    free(f);
    return 0;
}

/* The instance of cluster with id, from a fresh list; the struct is zeroed when there is none. */
static struct cloud_instance find(struct fx *f, const char *cluster, const char *id)
{
    struct cloud_instance *v = NULL, out = {0};
    size_t n = 0;

    assert_int_equal(cloud_list(&f->cloud, cluster, &v, &n), 0);
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i].id, id) == 0)
            out = v[i];
    free(v);
    return out;
}

static size_t count(struct fx *f, const char *cluster)
{
    struct cloud_instance *v = NULL;
    size_t n = 0;

    assert_int_equal(cloud_list(&f->cloud, cluster, &v, &n), 0);
    free(v);
    return n;
}

/* The pid recorded for instance id. */
static pid_t rec_pid(struct fx *f, const char *id)
{
    char path[256], *text, *p;
    pid_t pid = 0;

    snprintf(path, sizeof(path), "%s/%s.instance", f->run, id);
    text = proc_slurp(path);
    assert_non_null(text);
    p = strstr(text, "\npid=");
    if (p)
        pid = (pid_t)atol(p + 5);
    free(text);
    return pid;
}

struct wait_ctx {
    struct fx *f;
    const char *id;
};

static int registered(void *ctx)
{
    struct wait_ctx *w = ctx;
    struct state_node n;

    if (state_node_get(w->f->as.own, w->id, &n) < 0)
        return 0;
    state_node_clear(&n);
    return 1;
}

static int gone(void *ctx)
{
    struct wait_ctx *w = ctx;

    return find(w->f, "c1", w->id).state == CLOUD_GONE;
}

static void local_offers__as_configured(void **state)
{
    struct fx *f = *state;
    struct cloud_offer *v = NULL;
    size_t n = 0;

    assert_int_equal(cloud_offers(&f->cloud, &v, &n), 0);
    assert_int_equal(n, 3);
    assert_string_equal(v[0].name, "gpu2/spot");
    assert_true(v[0].gpus == 2 && v[0].spot == 1 && v[0].price == 0.5);
    assert_string_equal(v[1].name, "gpu4");
    assert_true(v[1].gpus == 4 && v[1].spot == 0 && v[1].price == 1.25);
    free(v);
}

static void local_launch__a_node_that_registers_with_its_offer(void **state)
{
    struct fx *f = *state;
    char id[CLOUD_ID_MAX], path[64], *env;
    struct wait_ctx w = {f, id};
    struct cloud_instance inst;
    struct state_node n;
    double t0 = as_wall(NULL);
    FILE *fp;
    size_t len;

    assert_int_equal(cloud_launch(&f->cloud, "gpu2/spot", "c1", "tok-1", id), 0);
    inst = find(f, "c1", id);
    assert_string_equal(inst.id, id);
    assert_string_equal(inst.offer, "gpu2/spot");
    assert_string_equal(inst.token, "tok-1");
    assert_int_equal(inst.state, CLOUD_RUNNING);
    assert_true(fabs(inst.launched - t0) < 5);
    assert_int_equal(count(f, "c2"), 0); /* another cluster's list */
    assert_true(proc_wait_for(registered, &w, 10));
    assert_int_equal(state_node_get(f->as.own, id, &n), 0);
    assert_int_equal(n.gpus, 2);
    assert_int_equal(n.gpu_memory_mib, 8 * 1024);
    assert_string_equal(n.provider, "local");
    assert_string_equal(n.offer, "gpu2/spot");
    assert_int_equal(n.market, STATE_MARKET_SPOT);
    assert_true(n.price == 0.5);
    state_node_clear(&n);
    /* its environment: its settings and the token file, not the controller's user token */
    snprintf(path, sizeof(path), "/proc/%ld/environ", (long)rec_pid(f, id));
    fp = fopen(path, "r");
    assert_non_null(fp);
    env = calloc(1, 65536);
    len = fread(env, 1, 65535, fp);
    fclose(fp);
    for (size_t i = 0; i < len; i++)
        if (env[i] == '\0')
            env[i] = '\n';
    assert_non_null(strstr(env, "CASTOR_LAUNCH_TOKEN=tok-1\n"));
    assert_non_null(strstr(env, "CASTOR_CLUSTER=c1\n"));
    assert_non_null(strstr(env, "CASTOR_FAKE_GPUS=2:8\n"));
    assert_non_null(strstr(env, "CASTOR_NODE_TOKEN_FILE="));
    assert_null(strstr(env, "CASTOR_USER_TOKEN"));
    free(env);
}

/* What descriptor fd of process pid names ("" when it is not open). */
static void fd_target(pid_t pid, int fd, char *buf, size_t size)
{
    char path[64];
    ssize_t n;

    snprintf(path, sizeof(path), "/proc/%ld/fd/%d", (long)pid, fd);
    n = readlink(path, buf, size - 1);
    buf[n > 0 ? n : 0] = '\0';
}

/* Launch under token with the descriptors in closed[0..n) closed meanwhile (a controller started
 * with them closed: the node's /dev/null and log take their numbers); the node's pid. */
static pid_t launch_with_closed(struct fx *f, const char *token, const int *closed, size_t n,
                                char *id)
{
    int saved[3], rc;

    fflush(stdout);
    fflush(stderr);
    for (size_t i = 0; i < n; i++) {
        saved[i] = dup(closed[i]);
        close(closed[i]);
    }
    rc = cloud_launch(&f->cloud, "gpu4", "c1", token, id);
    for (size_t i = 0; i < n; i++) {
        dup2(saved[i], closed[i]);
        close(saved[i]);
    }
    assert_int_equal(rc, 0);
    return rec_pid(f, id);
}

/* The node's stdin is /dev/null and its stdout and stderr its log, whichever numbers those got
 * in the controller: a descriptor that already had its number (the controller's own 0, 1 or 2
 * closed) is not closed at exec for keeping its close-on-exec flag. */
static void local_launch__stdio_whatever_the_controller_closed(void **state)
{
    struct fx *f = *state;
    static const int no_stdin[] = {0}, no_output[] = {1, 2};
    char a[CLOUD_ID_MAX], b[CLOUD_ID_MAX], log[256], got[3][256];
    struct wait_ctx wa = {f, a}, wb = {f, b};
    pid_t pa = launch_with_closed(f, "tok-in", no_stdin, 1, a);
    pid_t pb = launch_with_closed(f, "tok-out", no_output, 2, b);

    assert_true(proc_wait_for(registered, &wa, 10));
    assert_true(proc_wait_for(registered, &wb, 10));
    fd_target(pa, 0, got[0], sizeof(got[0]));
    assert_string_equal(got[0], "/dev/null");
    snprintf(log, sizeof(log), "%s/%s.log", f->run, b);
    for (int fd = 0; fd < 3; fd++)
        fd_target(pb, fd, got[fd], sizeof(got[fd]));
    assert_string_equal(got[0], "/dev/null");
    assert_string_equal(got[1], log);
    assert_string_equal(got[2], log);
}

static void local_launch__idempotent_by_token_and_bounded_by_capacity(void **state)
{
    struct fx *f = *state;
    char a[CLOUD_ID_MAX], b[CLOUD_ID_MAX], c[CLOUD_ID_MAX], again[CLOUD_ID_MAX];
    struct wait_ctx w = {f, a};

    assert_int_equal(cloud_launch(&f->cloud, "gpu2/spot", "c1", "tok-a", a), 0);
    assert_int_equal(cloud_launch(&f->cloud, "gpu2/spot", "c1", "tok-a", again), 0);
    assert_string_equal(a, again);
    assert_int_equal(count(f, "c1"), 1); /* no second process */
    assert_int_equal(cloud_launch(&f->cloud, "gpu2/spot", "c1", "tok-b", b), 0);
    assert_string_not_equal(a, b);
    assert_int_equal(cloud_launch(&f->cloud, "gpu2/spot", "c2", "tok-c", c), ERR_CAPACITY);
    assert_int_equal(cloud_launch(&f->cloud, "none", "c1", "tok-c", c), ERR_CAPACITY);
    assert_int_equal(cloud_launch(&f->cloud, "nope", "c1", "tok-c", c), ERR_UNKNOWN);
    assert_int_equal(cloud_launch(&f->cloud, "gpu4", "c1", "bad token", c), ERR_INVAL);
    assert_int_equal(cloud_launch(&f->cloud, "gpu4", "c1", "tok-c", c), 0); /* no limit */
    assert_int_equal(count(f, "c1"), 3);
    /* a pool frees up once an instance is gone */
    assert_int_equal(cloud_terminate(&f->cloud, "c1", a), 0);
    assert_true(proc_wait_for(gone, &w, 10));
    assert_int_equal(cloud_launch(&f->cloud, "gpu2/spot", "c1", "tok-d", c), 0);
    assert_int_equal(cloud_launch(&f->cloud, "gpu2/spot", "c1", "tok-a", again), 0);
    assert_string_equal(again, a); /* the old token still names the old, gone instance */
}

static void local_terminate__sigterm_and_the_node_leaves(void **state)
{
    struct fx *f = *state;
    char id[CLOUD_ID_MAX];
    struct wait_ctx w = {f, id};
    pid_t pid;

    assert_int_equal(cloud_launch(&f->cloud, "gpu4", "c1", "tok-t", id), 0);
    assert_true(proc_wait_for(registered, &w, 10));
    pid = rec_pid(f, id);
    assert_true(proc_alive(pid));
    assert_int_equal(cloud_terminate(&f->cloud, "c1", id), 0);
    assert_true(proc_wait_for(gone, &w, 2.5)); /* castor-node left before the 3 s grace */
    assert_false(proc_alive(pid));
    assert_int_equal(cloud_terminate(&f->cloud, "c1", id), 0); /* gone already: fine */
    assert_int_equal(cloud_terminate(&f->cloud, "c1", "local-99"), ERR_UNKNOWN);
    assert_int_equal(cloud_terminate(&f->cloud, "c2", id), ERR_UNKNOWN);
}

static int stub_started(void *ctx)
{
    char *path = ctx;
    struct stat sb;

    return stat(path, &sb) == 0;
}

static void local_terminate__sigkill_after_the_grace(void **state)
{
    struct fx *f = *state;
    char id[CLOUD_ID_MAX], pids_path[256], *text;
    struct wait_ctx w = {f, id};
    long node = 0, child = 0;
    double t0;

    cloud_free(&f->cloud);
    f->cfg.node_bin = STUBBORN_SH; /* ignores SIGTERM */
    f->cfg.grace_s = 0.5;
    assert_int_equal(cloud_local_new(&f->cfg, &f->cloud), 0);
    assert_int_equal(cloud_launch(&f->cloud, "gpu4", "c1", "tok-s", id), 0);
    snprintf(pids_path, sizeof(pids_path), "%s/%s.pids", f->work, id);
    assert_true(proc_wait_for(stub_started, pids_path, 5));
    text = proc_slurp(pids_path);
    assert_int_equal(sscanf(text, "%ld %ld", &node, &child), 2);
    free(text);
    t0 = proc_now();
    assert_int_equal(cloud_terminate(&f->cloud, "c1", id), 0);
    proc_sleep(0.2);
    assert_int_equal(find(f, "c1", id).state, CLOUD_RUNNING); /* still there, within its grace */
    assert_true(proc_alive((pid_t)node));
    assert_true(proc_wait_for(gone, &w, 5));
    assert_true(proc_now() - t0 >= 0.5);
    /* SIGKILL has been sent to the whole instance; on a loaded machine a process may take a
     * moment to be scheduled and die (a CI run under ASan saw the child still there), so each
     * gets a few seconds: without the SIGKILL the child, a `sleep 300`, would outlive them */
    assert_true(proc_wait_gone((pid_t)node, 5));
    assert_true(proc_wait_gone((pid_t)child, 5)); /* the whole instance went */
}

static void local_list__a_new_cloud_finds_the_instances(void **state)
{
    struct fx *f = *state;
    char a[CLOUD_ID_MAX], b[CLOUD_ID_MAX], again[CLOUD_ID_MAX];
    struct wait_ctx wa = {f, a}, wb = {f, b};
    struct cloud_instance ia, ib;

    assert_int_equal(cloud_launch(&f->cloud, "gpu4", "c1", "tok-1", a), 0);
    assert_int_equal(cloud_launch(&f->cloud, "gpu2/spot", "c1", "tok-2", b), 0);
    assert_true(proc_wait_for(registered, &wa, 10));
    /* the controller restarts: a new cloud over the same run folder */
    cloud_free(&f->cloud);
    assert_int_equal(cloud_local_new(&f->cfg, &f->cloud), 0);
    ia = find(f, "c1", a);
    ib = find(f, "c1", b);
    assert_true(ia.state == CLOUD_RUNNING && strcmp(ia.token, "tok-1") == 0);
    assert_true(ib.state == CLOUD_RUNNING && strcmp(ib.token, "tok-2") == 0);
    assert_int_equal(cloud_launch(&f->cloud, "gpu4", "c1", "tok-1", again), 0);
    assert_string_equal(again, a); /* launched before the restart: not again */
    assert_int_equal(count(f, "c1"), 2);
    /* one dies on its own meanwhile: seen as gone */
    assert_int_equal(kill(rec_pid(f, b), SIGKILL), 0);
    assert_true(proc_wait_for(gone, &wb, 5));
    assert_int_equal(find(f, "c1", a).state, CLOUD_RUNNING);
    assert_int_equal(cloud_terminate(&f->cloud, "c1", a), 0);
    assert_true(proc_wait_for(gone, &wa, 5));
}

struct replica {
    const char *work;
    long pid, child;
};

/* The rank-0 replica of replica.sh has started: its pid and its background child's. */
static int replica_started(void *ctx)
{
    struct replica *r = ctx;
    DIR *d = opendir(r->work);
    struct dirent *de;
    char path[512], *text;

    r->pid = r->child = 0;
    while (d && (de = readdir(d)) && !r->pid)
        if (strstr(de->d_name, ".child") && sscanf(de->d_name, "rank-0-%ld", &r->pid) != 1)
            r->pid = 0;
    if (d)
        closedir(d);
    if (!r->pid)
        return 0;
    snprintf(path, sizeof(path), "%s/rank-0-%ld.child", r->work, r->pid);
    text = proc_slurp(path);
    r->child = text ? atol(text) : 0;
    free(text);
    return r->child > 0;
}

static void local_preempt__a_notice_then_nothing_left(void **state)
{
    struct fx *f = *state;
    char id[CLOUD_ID_MAX], spec[1024], path[256];
    struct wait_ctx w = {f, id};
    struct state_node n;
    struct cloud other = {0};
    struct replica r = {.work = f->work};
    pid_t node;
    double t0;

    assert_int_equal(cloud_launch(&f->cloud, "gpu2/spot", "c1", "tok-p", id), 0);
    assert_true(proc_wait_for(registered, &w, 10));
    node = rec_pid(f, id);
    snprintf(spec, sizeof(spec),
             "{\"name\":\"pj\",\"command\":[\"/bin/sh\",\"%s\"],\"workdir\":\"%s\","
             "\"init_batch_size\":128,\"max_batch_size\":4096,\"max_local_bsz\":256,"
             "\"max_replicas\":8}",
             REPLICA_SH, f->work);
    assert_int_equal(as_assign(&f->as, "pj", spec, id, 1), 0);
    assert_true(proc_wait_for(replica_started, &r, 10));
    t0 = proc_now();
    assert_int_equal(local_preempt(&f->cloud, id, 1.0), 0);
    assert_true(proc_now() - t0 >= 1.0);
    /* the controller heard the notice, with its deadline; the replica checkpointed */
    assert_int_equal(state_node_get(f->as.own, id, &n), 0);
    assert_false(isnan(n.notice_at));
    assert_false(isnan(n.notice_deadline));
    assert_int_equal(n.state, STATE_NODE_DRAINING);
    state_node_clear(&n);
    snprintf(path, sizeof(path), "%s/rank-0-%ld.term", f->work, r.pid);
    assert_true(stub_started(path));
    /* then the instance went, all of it */
    assert_int_equal(find(f, "c1", id).state, CLOUD_GONE);
    assert_true(proc_wait_gone(node, 5));
    assert_true(proc_wait_gone((pid_t)r.pid, 5));
    assert_true(proc_wait_gone((pid_t)r.child, 5));
    assert_int_equal(local_preempt(&f->cloud, id, 0), ERR_UNKNOWN);
    assert_int_equal(local_preempt(&other, id, 0), ERR_INVAL);
}

/* A record of a node that died long ago and whose pid another process took since, a session
 * leader of its own with a child (pid reuse): the list sees the node gone and spares that session.
 * Linux gives out no pid still in use as a session id, so none of the node's session is left. */
static void local_list__a_reused_pid_spares_the_new_session(void **state)
{
    struct fx *f = *state;
    char path[256], text[512];
    int fds[2], status, rc, leader_alive, child_alive;
    struct cloud_instance seen = {0};
    pid_t leader, child = 0;

    assert_int_equal(pipe(fds), 0);
    leader = fork();
    assert_true(leader >= 0);
    if (leader == 0) { /* the process that took the pid: a session, and a child in it */
        pid_t c;

        setsid();
        close(fds[0]);
        for (int fd = 0; fd < 3; fd++) /* not the test's output: a runner waits for its end */
            close(fd);
        c = fork();
        if (c == 0) {
            pause();
            _exit(0);
        }
        if (write(fds[1], &c, sizeof(c)) != (ssize_t)sizeof(c))
            _exit(1);
        pause();
        _exit(0);
    }
    assert_int_equal(read(fds[0], &child, sizeof(child)), (ssize_t)sizeof(child));
    close(fds[0]);
    close(fds[1]);
    assert_true(proc_alive(child));
    /* the old node's record: the pid, the start time of the process it was (not this one) */
    snprintf(path, sizeof(path), "%s/local-7.instance", f->run);
    snprintf(text, sizeof(text),
             "id=local-7\ncluster=c1\noffer=gpu4\ntoken=tok-old\npid=%ld\nstart=1\n"
             "state=running\nlaunched=1.0\nends=0\nkill_at=0\ngone_at=0\n",
             (long)leader);
    rc = file_write_atomic(path, text, strlen(text), 0600, NULL);
    if (rc == 0)
        seen = find(f, "c1", "local-7");
    proc_sleep(0.2);
    leader_alive = proc_alive(leader);
    child_alive = proc_alive(child);
    kill(child, SIGKILL);
    kill(leader, SIGKILL);
    assert_int_equal(waitpid(leader, &status, 0), leader);
    assert_int_equal(rc, 0);
    assert_int_equal(seen.state, CLOUD_GONE);
    assert_true(leader_alive);
    assert_true(child_alive); /* another session's process: not the instance's */
}

/* Instance ids are never given twice: a gone record is dropped after an hour, and a launch after
 * that (every instance of the cluster gone: an idle night) takes a new id, not the dropped one's,
 * which the controller's state keeps as a terminated node. */
static void local_launch__an_id_dropped_is_not_given_again(void **state)
{
    struct fx *f = *state;
    char path[256], id[CLOUD_ID_MAX];
    const char *text = "id=local-3\ncluster=c1\noffer=gpu4\ntoken=tok-old\npid=0\nstart=0\n"
                       "state=gone\nlaunched=1.0\nends=0\nkill_at=0\ngone_at=2.0\n";

    snprintf(path, sizeof(path), "%s/local-3.instance", f->run);
    assert_int_equal(file_write_atomic(path, text, strlen(text), 0600, NULL), 0);
    assert_int_equal(count(f, "c1"), 0); /* gone for more than an hour: dropped */
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(cloud_launch(&f->cloud, "gpu4", "c1", "tok-new", id), 0);
    assert_string_equal(id, "local-4");
    /* a new cloud over the folder (a restarted controller) does not give it either */
    cloud_free(&f->cloud);
    assert_int_equal(cloud_local_new(&f->cfg, &f->cloud), 0);
    assert_int_equal(local_preempt(&f->cloud, id, 0), 0);
    assert_int_equal(cloud_launch(&f->cloud, "gpu4", "c1", "tok-next", id), 0);
    assert_string_equal(id, "local-5");
    assert_int_equal(local_preempt(&f->cloud, id, 0), 0);
}

static void cloud_local_new__refuses_a_bad_configuration(void **state)
{
    struct fx *f = *state;
    struct local_offer twice[2] = {offers[0], offers[0]}, bad = offers[1];
    const char *const bad_env[] = {"NOEQUALS", NULL};
    struct local_config c = f->cfg;
    struct cloud out = {(const struct cloud_ops *)1, (void *)1};

    c.run_dir = NULL;
    assert_int_equal(cloud_local_new(&c, &out), ERR_INVAL);
    c = f->cfg;
    c.offers = twice;
    c.noffers = 2;
    assert_int_equal(cloud_local_new(&c, &out), ERR_INVAL);
    c = f->cfg;
    bad.gpus = 0;
    c.offers = &bad;
    c.noffers = 1;
    assert_int_equal(cloud_local_new(&c, &out), ERR_INVAL);
    bad = offers[1];
    bad.price = -1;
    assert_int_equal(cloud_local_new(&c, &out), ERR_INVAL);
    c = f->cfg;
    c.env = bad_env;
    assert_int_equal(cloud_local_new(&c, &out), ERR_INVAL);
    c = f->cfg;
    c.grace_s = NAN;
    assert_int_equal(cloud_local_new(&c, &out), ERR_INVAL);
    assert_ptr_equal(out.ctx, (void *)1); /* untouched */
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup, fx_teardown)
    const struct CMUnitTest tests[] = {
        T(local_offers__as_configured),
        T(local_launch__a_node_that_registers_with_its_offer),
        T(local_launch__stdio_whatever_the_controller_closed),
        T(local_launch__idempotent_by_token_and_bounded_by_capacity),
        T(local_terminate__sigterm_and_the_node_leaves),
        T(local_terminate__sigkill_after_the_grace),
        T(local_list__a_new_cloud_finds_the_instances),
        T(local_preempt__a_notice_then_nothing_left),
        T(local_list__a_reused_pid_spares_the_new_session),
        T(local_launch__an_id_dropped_is_not_given_again),
        T(cloud_local_new__refuses_a_bad_configuration),
    };
#undef T

    return cmocka_run_group_tests(tests, NULL, NULL);
}
