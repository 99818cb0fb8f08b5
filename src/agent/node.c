/* node.c: castor-node: registration, heartbeats, assignments, replicas as child processes, notices
 * (signalled, or found by the cloud notice watcher in a child of its own). */
#define _DEFAULT_SOURCE /* setgroups */
#include "agent/node.h"

#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <math.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#include <sys/syscall.h>
#endif

#include "agent/agent.h"
#include "util/crypto.h"
#include "util/env.h"
#include "util/file.h"
#include "util/http_client.h"
#include "util/json.h"
#include "util/log.h"
#include "util/threads.h"
#include "util/vec.h"

extern char **environ;

#define ND_WATCH_RESTART_S 5.0 /* a notice watcher that died is started again after this */
#define ND_WATCH_THREADS_S 1.0 /* a start put off for another thread is tried again after this */
/* a stopping replica's group SIGKILLed this long ago counts as gone (one that cannot be signalled,
 * EPERM, never says it is empty) */
#define ND_GROUP_GONE_S 5.0
/* a replica that waits for a uid of its own (CASTOR_NODE_RUN_AS_UIDS), or whose fork fails (a
 * process limit), is logged at most this often: it is tried again at every reconcile */
#define ND_RETRY_LOG_S 60.0
/* at its stop, the agent waits this long at most for the strays it SIGKILLed to end */
#define ND_STRAYS_S 5.0

/* ---- the assignment ---- */

static void nj_free_strv(char **v)
{
    if (!v)
        return;
    for (size_t i = 0; v[i]; i++)
        free(v[i]);
    free(v);
}

static void nj_clear(struct node_job *j)
{
    free(j->name);
    free(j->master);
    free(j->master_addr);
    agent_secret_free(j->job_token);
    nj_free_strv(j->argv);
    free(j->workdir);
    env_free(j->env);
    free(j->key);
    free(j->generation);
    free(j->wait_for);
    memset(j, 0, sizeof(*j));
}

void node_assignment_clear(struct node_assignment *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->njobs; i++)
        nj_clear(&a->jobs[i]);
    free(a->jobs);
    free(a->state);
    memset(a, 0, sizeof(*a));
}

/* obj[key] as an integer in [lo, hi] into *out; null gives null_value when null_ok. */
static int na_int(const struct jv *obj, const char *key, long long lo, long long hi, int null_ok,
                  int null_value, int *out, size_t i, struct error *e)
{
    const struct jv *v = jv_get(obj, key);
    long long x;

    if (null_ok && jv_type_of(v) == JV_NULL) {
        *out = null_value;
        return 0;
    }
    if (jv_integer_value(v, &x) < 0 || x < lo || x > hi)
        return err_set(e, ERR_PARSE, NULL, 0, 0,
                       "jobs[%zu].%s must be an integer from %lld to %lld", i, key, lo, hi);
    *out = (int)x;
    return 0;
}

/* obj[key] as a positive number, or NAN for null or absent. */
static int na_pos(const struct jv *obj, const char *key, double *out, size_t i, struct error *e)
{
    const struct jv *v = jv_get(obj, key);
    double x;

    if (jv_type_of(v) == JV_NULL) {
        *out = NAN;
        return 0;
    }
    if (jv_number_value(v, &x) < 0 || !(x > 0) || !isfinite(x))
        return err_set(e, ERR_PARSE, NULL, 0, 0, "jobs[%zu].%s must be a positive number or null",
                       i, key);
    *out = x;
    return 0;
}

/* A copy of obj[key] when it is a non-empty string; ERR_PARSE otherwise. */
static int na_str(const struct jv *obj, const char *key, char **out, size_t i, struct error *e)
{
    const char *s = jv_string_value(jv_get(obj, key));

    if (!s || !s[0])
        return err_set(e, ERR_PARSE, NULL, 0, 0, "jobs[%zu].%s must be a non-empty string", i, key);
    if (!(*out = strdup(s)))
        return ERR_NOMEM;
    return 0;
}

struct na_env {
    char **v;
    size_t n;
    int bad;
};

static int na_env_one(void *ctx, const char *key, const struct jv *val)
{
    struct na_env *ne = ctx;
    const char *s = jv_string_value(val);
    size_t len;

    if (!s || !key[0] || strchr(key, '=') || ne->n >= NODE_MAX_ENV) {
        ne->bad = 1;
        return 0;
    }
    len = strlen(key) + strlen(s) + 2;
    if (!(ne->v[ne->n] = malloc(len)))
        return ERR_NOMEM;
    snprintf(ne->v[ne->n++], len, "%s=%s", key, s);
    return 0;
}

/* The spec: command, workdir, env, checkpoint interval; what makes a job not runnable here goes
 * to why_not, not to an error. */
static int na_spec(const struct jv *spec, struct node_job *j, size_t i, struct error *e)
{
    const struct jv *cmd = jv_get(spec, "command"), *env = jv_get(spec, "env");
    const char *wd = jv_string_value(jv_get(spec, "workdir"));
    struct na_env ne = {0};
    size_t n = jv_size(cmd);
    int rc;

    if (!(j->env = calloc(NODE_MAX_ENV + 1, sizeof(char *))))
        return ERR_NOMEM;
    if (jv_type_of(spec) != JV_OBJECT) {
        j->why_not = "the assignment carries no spec";
        return 0;
    }
    if ((rc = na_pos(spec, "checkpoint_interval", &j->ckpt_s, i, e)) < 0 ||
        (rc = na_pos(spec, "init_batch_size", &j->init_bsz, i, e)) < 0 ||
        (rc = na_pos(spec, "max_batch_size", &j->max_bsz, i, e)) < 0 ||
        (rc = na_pos(spec, "max_local_bsz", &j->max_local_bsz, i, e)) < 0)
        return rc;
    j->in_flight = jv_string_value(jv_get(spec, "reconfigure")) &&
                   strcmp(jv_string_value(jv_get(spec, "reconfigure")), "in_flight") == 0;
    if (jv_type_of(cmd) != JV_ARRAY || n < 1 || n > NODE_MAX_ARGS) {
        j->why_not = "the spec's command is not a list of 1 to 256 strings";
        return 0;
    }
    if (!wd || !wd[0]) {
        j->why_not = jv_get(spec, "image") ? "the job runs in an image: castor-node runs commands "
                                             "in a workdir only"
                                           : "the spec has no workdir";
        return 0;
    }
    if (jv_type_of(env) != JV_NULL) {
        ne.v = j->env;
        if (jv_type_of(env) != JV_OBJECT || (rc = jv_each(env, na_env_one, &ne)) < 0 || ne.bad) {
            if (rc < 0)
                return rc;
            j->why_not = "the spec's env is not an object of strings";
            return 0;
        }
    }
    if (!(j->workdir = strdup(wd)) || !(j->argv = calloc(n + 1, sizeof(char *))))
        return ERR_NOMEM;
    for (size_t k = 0; k < n; k++) {
        const char *s = jv_string_value(jv_at(cmd, k));

        if (!s || !s[0]) {
            nj_free_strv(j->argv);
            j->argv = NULL;
            j->why_not = "the spec's command holds an empty or non-string argument";
            return 0;
        }
        if (!(j->argv[k] = strdup(s)))
            return ERR_NOMEM;
    }
    return 0;
}

/* wait_for (absent, or an array of instance ids) as one comma-separated string, for the log. */
static int na_wait_for(const struct jv *v, struct node_job *j, size_t i, struct error *e)
{
    size_t n = jv_size(v), len = 1;

    if (!v)
        return 0;
    if (jv_type_of(v) != JV_ARRAY || n < 1)
        return err_set(e, ERR_PARSE, NULL, 0, 0,
                       "jobs[%zu].wait_for must be a non-empty array of instance ids", i);
    for (size_t k = 0; k < n; k++) {
        const char *s = jv_string_value(jv_at(v, k));

        if (!s || !s[0])
            return err_set(e, ERR_PARSE, NULL, 0, 0,
                           "jobs[%zu].wait_for[%zu] must be a non-empty string", i, k);
        len += strlen(s) + 2;
    }
    if (!(j->wait_for = malloc(len)))
        return ERR_NOMEM;
    j->wait_for[0] = '\0';
    for (size_t k = 0; k < n; k++) {
        if (k > 0)
            strcat(j->wait_for, ", ");
        strcat(j->wait_for, jv_string_value(jv_at(v, k)));
    }
    return 0;
}

struct na_copy {
    struct jv *to;
    int in_flight;
    int rc;
};

static int na_copy_one(void *ctx, const char *key, const struct jv *val)
{
    struct na_copy *c = ctx;
    int config = strcmp(key, "local_bsz") == 0 || strcmp(key, "accum_steps") == 0 ||
                 strcmp(key, "lr_gain") == 0;

    if (c->rc == 0 && strcmp(key, "wait_for") != 0 && !(config && c->in_flight))
        c->rc = jv_set(c->to, key, jv_ref(val));
    return 0;
}

/* The entry's key: the entry as compact JSON without wait_for, which says when its replicas may
 * start, not what they are (a replica running when it appears does not restart), nor, for a job
 * whose workers reconfigure in flight, its configuration (they read the controller's). */
static int na_key(const struct jv *o, int in_flight, char **key)
{
    struct na_copy c = {.to = jv_object(), .in_flight = in_flight, .rc = 0};
    int rc = c.to ? jv_each(o, na_copy_one, &c) : ERR_NOMEM;

    if (rc == 0)
        rc = c.rc;
    if (rc == 0)
        rc = jv_dump(c.to, key);
    jv_free(c.to);
    return rc;
}

static int na_job(const struct jv *o, size_t i, struct node_job *j, struct error *e)
{
    int rc;

    j->local_bsz = j->lr_gain = j->ckpt_s = j->placed_at = j->seen_at = NAN;
    j->init_bsz = j->max_bsz = j->max_local_bsz = NAN;
    if (jv_type_of(o) != JV_OBJECT)
        return err_set(e, ERR_PARSE, NULL, 0, 0, "jobs[%zu] must be an object", i);
    if ((rc = na_str(o, "job", &j->name, i, e)) < 0 ||
        (rc = na_int(o, "replicas", 0, NODE_MAX_REPLICAS, 0, 0, &j->replicas, i, e)) < 0 ||
        (rc = na_int(o, "rank_offset", 0, 1000000, 0, 0, &j->rank_offset, i, e)) < 0 ||
        (rc = na_int(o, "world_size", 1, 1000000, 0, 0, &j->world_size, i, e)) < 0 ||
        (rc = na_int(o, "nodes", 1, j->world_size, 1, 0, &j->nodes, i, e)) < 0 ||
        (rc = na_str(o, "master", &j->master, i, e)) < 0 ||
        (rc = na_pos(o, "local_bsz", &j->local_bsz, i, e)) < 0 ||
        (rc = na_int(o, "accum_steps", 0, 1000000, 1, -1, &j->accum_steps, i, e)) < 0 ||
        (rc = na_pos(o, "lr_gain", &j->lr_gain, i, e)) < 0 ||
        (rc = na_int(o, "attempt", 0, 1000000000, 1, 0, &j->attempt, i, e)) < 0)
        return rc;
    if (jv_get(o, "restart_delay") &&
        (jv_number_value(jv_get(o, "restart_delay"), &j->restart_delay) < 0 ||
         !(j->restart_delay >= 0 && j->restart_delay <= NODE_MAX_RESTART_DELAY_S)))
        return err_set(e, ERR_PARSE, NULL, 0, 0,
                       "jobs[%zu].restart_delay must be a number from 0 to %d", i,
                       NODE_MAX_RESTART_DELAY_S);
    /* only the master port's draw reads it: a value that is not a number leaves the name's */
    if (jv_number_value(jv_get(o, "placed_at"), &j->placed_at) < 0 || !isfinite(j->placed_at))
        j->placed_at = NAN;
    if ((long long)j->rank_offset + j->replicas > j->world_size)
        return err_set(e, ERR_PARSE, NULL, 0, 0,
                       "jobs[%zu]: rank_offset + replicas is more than world_size", i);
    if (jv_get(o, "master_addr") && (rc = na_str(o, "master_addr", &j->master_addr, i, e)) < 0)
        return rc;
    if (jv_get(o, "job_token") && (rc = na_str(o, "job_token", &j->job_token, i, e)) < 0)
        return rc;
    if ((rc = na_spec(jv_get(o, "spec"), j, i, e)) < 0)
        return rc;
    if (jv_get(o, "generation") && ((rc = na_str(o, "generation", &j->generation, i, e)) < 0 ||
                                    strlen(j->generation) > NODE_GENERATION_MAX))
        return rc < 0 ? rc
                      : err_set(e, ERR_PARSE, NULL, 0, 0,
                                "jobs[%zu].generation is longer than %d characters", i,
                                NODE_GENERATION_MAX);
    if ((rc = na_wait_for(jv_get(o, "wait_for"), j, i, e)) < 0)
        return rc;
    return na_key(o, j->in_flight, &j->key);
}

int node_assignment_parse(const char *text, size_t len, struct node_assignment *out,
                          struct error *e)
{
    struct node_assignment a = {0};
    const struct jv *jobs;
    struct jv *v = NULL;
    size_t n;
    int rc = jv_parse(text, len, &v, e);

    if (rc < 0)
        return rc;
    jobs = jv_get(v, "jobs");
    n = jv_size(jobs);
    if (!jv_string_value(jv_get(v, "state")) || jv_type_of(jobs) != JV_ARRAY) {
        rc = err_set(e, ERR_PARSE, NULL, 0, 0, "an assignment needs a state and a list of jobs");
        goto out;
    }
    if (!(a.state = strdup(jv_string_value(jv_get(v, "state")))) ||
        (n > 0 && !(a.jobs = calloc(n, sizeof(*a.jobs))))) {
        rc = ERR_NOMEM;
        goto out;
    }
    for (size_t i = 0; i < n && rc == 0; i++) {
        rc = na_job(jv_at(jobs, i), i, &a.jobs[i], e);
        a.njobs = i + 1;
    }
    for (size_t i = 0; i < a.njobs && rc == 0; i++)
        for (size_t k = 0; k < i && rc == 0; k++)
            if (strcmp(a.jobs[i].name, a.jobs[k].name) == 0)
                rc = err_set(e, ERR_PARSE, NULL, 0, 0, "jobs[%zu] repeats job %s", i,
                             a.jobs[i].name);
out:
    jv_free(v);
    if (rc < 0) {
        node_assignment_clear(&a);
        return rc;
    }
    *out = a;
    return 0;
}

/* ---- a replica's environment ---- */

int node_master_port(const char *job, double placed_at, int attempt)
{
    uint32_t h = 2166136261u; /* FNV-1a: the name, the time's milliseconds, the attempt */
    long long ms = isfinite(placed_at) ? llround(placed_at * 1000) : 0;

    for (const unsigned char *p = (const unsigned char *)job; *p; p++)
        h = (h ^ *p) * 16777619u;
    for (int b = 0; b < 8 && isfinite(placed_at); b++)
        h = (h ^ (uint32_t)((unsigned long long)ms >> (8 * b) & 0xff)) * 16777619u;
    for (int b = 0; b < 4 && attempt > 0; b++) /* attempt 0 draws as before attempts existed */
        h = (h ^ (uint32_t)((unsigned)attempt >> (8 * b) & 0xff)) * 16777619u;
    return 29500 + (int)(h % 1000);
}

int node_replica_env(const struct node_job *j, int local, const struct node_env_inputs *in,
                     char ***out)
{
    struct env_list l = {0};
    char buf[64], **env;
    int rc;

    if (!j || !in || local < 0 || local >= j->replicas)
        return ERR_INVAL;
    rc = env_list_put_all(&l, in->base, env_is_castor_secret);
    if (rc == 0 && in->run_as)
        rc = env_list_set(&l, "HOME", in->run_as->home);
    if (rc == 0 && in->run_as)
        rc = env_list_set(&l, "USER", in->run_as->user);
    if (rc == 0 && in->run_as)
        rc = env_list_set(&l, "LOGNAME", in->run_as->user);
    if (rc == 0)
        rc = env_list_put_all(&l, (const char *const *)j->env, NULL);
#define PUT(name, ...)                               \
    do {                                             \
        if (rc == 0) {                               \
            snprintf(buf, sizeof(buf), __VA_ARGS__); \
            rc = env_list_set(&l, name, buf);        \
        }                                            \
    } while (0)
    if (rc == 0)
        rc = env_list_set(&l, "CASTOR_JOB", j->name);
    PUT("CASTOR_RANK", "%d", j->rank_offset + local);
    PUT("CASTOR_LOCAL_RANK", "%d", local);
    PUT("CASTOR_WORLD_SIZE", "%d", j->world_size);
    PUT("CASTOR_LOCAL_WORLD_SIZE", "%d", j->replicas);
    if (j->nodes > 0) /* the placement libcastor pools its steps under */
        PUT("CASTOR_NODES", "%d", j->nodes);
    if (rc == 0)
        rc = env_list_set(&l, "CASTOR_MASTER_ADDR",
                          in->self && strcmp(j->master, in->self) == 0 ? "127.0.0.1"
                          : in->master_addr                            ? in->master_addr
                          : j->master_addr                             ? j->master_addr
                                                                       : j->master);
    PUT("CASTOR_MASTER_PORT", "%d", node_master_port(j->name, j->placed_at, j->attempt));
    PUT("CASTOR_ATTEMPT", "%d", j->attempt);
    if (isfinite(j->local_bsz))
        PUT("CASTOR_LOCAL_BSZ", "%.17g", j->local_bsz);
    if (j->accum_steps >= 0)
        PUT("CASTOR_ACCUM_STEPS", "%d", j->accum_steps);
    if (isfinite(j->lr_gain))
        PUT("CASTOR_LR_GAIN", "%.17g", j->lr_gain);
    if (isfinite(j->ckpt_s))
        PUT("CASTOR_CHECKPOINT_INTERVAL", "%.17g", j->ckpt_s);
    /* the spec's batch limits: progress and statistics counted in the controller's M0, and
     * libcastor's own choice within the limits the controller's plan keeps (which accumulates) */
    if (isfinite(j->init_bsz))
        PUT("CASTOR_INIT_BSZ", "%.17g", j->init_bsz);
    if (isfinite(j->max_bsz))
        PUT("CASTOR_MAX_BSZ", "%.17g", j->max_bsz);
    if (isfinite(j->max_local_bsz))
        PUT("CASTOR_MAX_LOCAL_BSZ", "%.17g", j->max_local_bsz);
    if (isfinite(j->init_bsz))
        PUT("CASTOR_ACCUMULATION", "1");
    if (rc == 0 && in->url)
        rc = env_list_set(&l, "CASTOR_URL", in->url);
    if (rc == 0 && (j->job_token || in->job_token))
        rc = env_list_set(&l, "CASTOR_JOB_TOKEN", j->job_token ? j->job_token : in->job_token);
    if (rc == 0 && in->self)
        rc = env_list_set(&l, "CASTOR_INSTANCE_ID", in->self);
    if (in->gpu >= 0)
        PUT("CUDA_VISIBLE_DEVICES", "%d", in->gpu);
#undef PUT
    if (rc < 0) {
        env_list_clear(&l);
        return rc;
    }
    if (!(env = env_list_take(&l)))
        return ERR_NOMEM;
    *out = env;
    return 0;
}

void node_env_free(char **env)
{
    env_free(env);
}

/* ---- the agent ---- */

enum nd_rep_state { ND_RUNNING, ND_STOPPING, ND_EXITED };

/* One replica this node started (or could not start). */
struct nd_rep {
    char *job;
    char *key; /* its job entry when started */
    char *gen; /* its job entry's generation when started; NULL: not said */
    int rank;
    int attempt;      /* its job's attempt when started */
    double placed_at; /* its job's placement when started (NAN: not said) */
    /* a failure to report (POST /v1/nodes/{id}/failures): while it ran, it exited with
     * fail_status or was killed by fail_signal; reported once accepted or refused */
    int report, fail_status, fail_signal;
    pid_t pid; /* also its process group; 0: never started */
    uid_t uid; /* the uid of its job's own (CASTOR_NODE_RUN_AS_UIDS); 0: the run-as user's */
    enum nd_rep_state st;
    double kill_at; /* ND_STOPPING: when SIGKILL follows (monotonic) */
    int killed;
    int leader_gone; /* ND_STOPPING: its first process has exited but others of its process group
                      * live on (a wrapper's child still checkpointing): it stays stopping, its
                      * rank and GPU held, until the group is empty or SIGKILLed at kill_at */
    int stopped;     /* ND_EXITED after this agent stopped it: no end of its own, so that its entry,
                      * wanted again (a fence lifted while it was still stopping), starts it again */
    int gpu;
};

/* Rank 0 of a job ended by itself with status 0 while it ran: the controller is told (POST
 * /v1/nodes/{id}/completions) until it answers, even after the replica's entry is gone (a fence
 * while the controller is unreachable), since the job may not have told it that it finished. */
struct nd_done {
    char *job;
    int attempt;
    double placed_at;
};

struct nd {
    const struct node_config *cfg;
    struct http_client *http;
    struct node_assignment want;
    int have_want;
    int want_stale; /* want was read before a fence or a drain: it is kept (for when its entries
                     * were first seen) but nothing starts from it until a fresh one is read */
    int gens_named; /* the controller has named generations: heartbeats say which are alive */
    struct nd_rep *reps;
    size_t nreps, cap;
    struct nd_done *dones; /* completions not told yet, oldest first */
    size_t ndones, dones_cap;
    unsigned char *gpu_used;
    pid_t self;
    uint64_t rng;
    int registered, draining, noticed, notice_pending, stopping, fails;
    int fenced; /* the controller unanswered for fence_s: replicas stopped until it is */
    double uid_wait_logged_at;  /* when a replica last waited for a uid of its own (monotonic) */
    double fork_fail_logged_at; /* when a replica's fork last failed, logged (monotonic) */
    /* per uid of the range (CASTOR_NODE_RUN_AS_UIDS): the job it went to last (owned; NULL:
     * none) and when (a count of assignments; 0: never), so that a job gets its own uid back and
     * another job the least recently used one */
    char **uid_job;
    unsigned long long *uid_stamp, uid_clock;
    double heard_at; /* monotonic: the controller's last answer to a registration or heartbeat */
    double next_register, next_beat, notice_retry_at; /* monotonic */
    double report_retry_at;                           /* monotonic: failure reports */
    double notice_deadline;                           /* epoch seconds; NAN: not said */
    double notice_kill_by;                            /* monotonic; INFINITY: none */
    pid_t watch_pid;                                  /* the notice watcher; 0: none running */
    double watch_start_at;                            /* monotonic: when it is (re)started */
    char *own_token; /* this node's own token (its registration's answer, or the cache); NULL */
    char agent[33];  /* this agent's random name, sent with its registrations ("": none drawn) */
    struct watch_proof proof; /* the instance's signed identity, once fetched */
    int have_proof;
    int own_missing; /* a call was refused for want of it (told once) */
};

static double nd_clock(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double nd_mono(void)
{
    return nd_clock(CLOCK_MONOTONIC);
}

static double nd_wall(void)
{
    return nd_clock(CLOCK_REALTIME);
}

static void nd_log(struct nd *n, enum log_level level, const char *job, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void nd_log(struct nd *n, enum log_level level, const char *job, const char *fmt, ...)
{
    char msg[LOG_MSG_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    log_msg(n->cfg->log, nd_wall(), level, job, n->cfg->instance_id, "%s", msg);
}

/* The wait before retry number fails (1, 2, ...): exponential from min(1 s, heartbeat) up to
 * backoff_max_s, with full jitter over its upper half (xorshift64 seeded per node). */
static double nd_backoff(struct nd *n)
{
    double base = fmin(1.0, n->cfg->heartbeat_s), d;
    int k = n->fails < 30 ? n->fails : 30;

    n->rng ^= n->rng << 13;
    n->rng ^= n->rng >> 7;
    n->rng ^= n->rng << 17;
    d = fmin(n->cfg->backoff_max_s, base * ldexp(1.0, k));
    return d * (0.5 + 0.5 * (double)(n->rng >> 11) / 9007199254740992.0);
}

/* The "error" of an answer, for the log (bounded). */
static const char *nd_reason(const struct http_client_response *r, char *buf, size_t size)
{
    struct jv *v = NULL;
    const char *s;

    snprintf(buf, size, "(no reason given)");
    if (jv_parse(r->body, r->body_len, &v, NULL) == 0 && (s = jv_string_value(jv_get(v, "error"))))
        snprintf(buf, size, "%s", s);
    jv_free(v);
    return buf;
}

/* One request to the controller with the node token; *resp is the caller's on success. Errors of
 * the transport are logged here. */
static int nd_call(struct nd *n, const char *method, const char *path, const char *body,
                   struct http_client_response *resp)
{
    struct error e = {0};
    /* the node's own paths with its own token when it has one; registration with the shared */
    const char *token =
        n->own_token && strcmp(path, "/v1/nodes") != 0 ? n->own_token : n->cfg->node_token;
    int rc = agent_call(n->http, n->cfg->url, token, method, path, body, n->cfg->timeout_s,
                        n->cfg->ca_file, resp, &e);

    if (rc < 0) /* e never holds a header */
        nd_log(n, LOG_WARN, NULL, "%s %s: %s", method, path, e.msg[0] ? e.msg : err_str(rc));
    else if (resp->status == 403 && !n->own_missing && strcmp(path, "/v1/nodes") != 0) {
        char why[256];

        n->own_missing = 1;
        nd_log(n, LOG_ERROR, NULL,
               "%s %s refused: %s (this agent %s its own token; keep it with "
               "CASTOR_NODE_TOKEN_CACHE, or take the node down and let a new agent register it)",
               method, path, nd_reason(resp, why, sizeof(why)),
               n->own_token ? "sent" : "does not have");
    }
    return rc;
}

/* Keep the node's own token (a registration's answer): in memory, and in the cache file when one
 * is set (mode 600), for the next agent on this node. */
static void nd_keep_token(struct nd *n, const char *token)
{
    struct error e = {0};
    char *copy;

    if (!token || !token[0] || !(copy = strdup(token)))
        return;
    agent_secret_free(n->own_token);
    n->own_token = copy;
    n->own_missing = 0;
    if (n->cfg->token_cache &&
        file_write_atomic(n->cfg->token_cache, token, strlen(token), 0600, &e) < 0)
        nd_log(n, LOG_WARN, NULL, "cannot keep the node's own token in %s: %s", n->cfg->token_cache,
               e.msg);
}

/* The node's own token from the cache file, when it holds one for this node. */
static void nd_load_token(struct nd *n)
{
    char *data = NULL, prefix[160];
    size_t len = 0;

    if (!n->cfg->token_cache || file_read_all(n->cfg->token_cache, &data, &len, NULL) < 0)
        return;
    while (len > 0 && (data[len - 1] == '\n' || data[len - 1] == '\r'))
        data[--len] = '\0';
    snprintf(prefix, sizeof(prefix), "cn1.%s.", n->cfg->instance_id);
    if (strncmp(data, prefix, strlen(prefix)) == 0 && strlen(data) == len)
        n->own_token = data; /* (another node's, or not a token: left alone) */
    else {
        crypto_wipe(data, len);
        free(data);
    }
}

static void nd_failed(struct nd *n, double now, double *next)
{
    n->fails++;
    *next = now + nd_backoff(n);
}

/* The controller answered: a fence comes down. */
static void nd_heard(struct nd *n, double now)
{
    n->heard_at = now;
    if (n->fenced)
        nd_log(n, LOG_INFO, NULL,
               "the controller answers again: the replicas follow the assignment");
    n->fenced = 0;
}

/* The controller unanswered past fence_s: the replicas stop (and checkpoint), so that it may move
 * their jobs without two copies running. */
static void nd_fence(struct nd *n, double now)
{
    if (n->fenced || !(n->cfg->fence_s > 0) || !n->registered ||
        now - n->heard_at <= n->cfg->fence_s)
        return;
    n->fenced = 1;
    n->want_stale = 1; /* the controller may move the jobs meanwhile: ask again after the fence */
    nd_log(n, LOG_WARN, NULL,
           "the controller has not answered for %.0f s: the replicas stop (they checkpoint) until "
           "it does (CASTOR_NODE_FENCE_S)",
           now - n->heard_at);
}

/* The instance's signed identity from the cloud's metadata service (the watch's cloud, unless
 * CASTOR_NODE_ATTEST=off), once (a Compute Engine token lasts an hour; the registrations that
 * need it come within seconds): a registration carries it for the controller to check. A
 * failure is logged and the registration goes without it (a controller that asks refuses it,
 * and the next registration tries again). */
static void nd_identity(struct nd *n, double now)
{
    struct watch_config cfg = n->cfg->watch;
    struct watch *w = NULL;
    struct error e = {0};
    int rc;

    if (n->have_proof || n->cfg->attest_off || !n->cfg->watch_ops || !n->cfg->watch_ops->identity)
        return;
    cfg.log = n->cfg->log;
    cfg.node = n->cfg->instance_id;
    rc = watch_new(n->cfg->watch_ops, &cfg, &w, &e);
    /* a token for this controller only: its URL is the audience */
    if (rc == 0)
        rc = watch_identity(w, now, n->cfg->audience ? n->cfg->audience : n->cfg->url, &n->proof);
    n->have_proof = rc == 0;
    watch_free(w);
    if (rc < 0)
        nd_log(n, LOG_WARN, NULL,
               "the instance's signed identity cannot be read (%s): registering without it",
               e.msg[0] ? e.msg : err_str(rc));
}

static void nd_register(struct nd *n, double now)
{
    const struct node_config *c = n->cfg;
    struct http_client_response r = {0};
    struct jv *o = jv_object();
    char *body = NULL, why[256];
    int rc = o ? 0 : ERR_NOMEM;

    if (rc == 0)
        rc = jv_set(o, "instance_id", jv_string(c->instance_id));
    if (rc == 0)
        rc = jv_set(o, "gpus", jv_integer(c->gpus));
    if (rc == 0 && c->gpu_memory_mib > 0)
        rc = jv_set(o, "gpu_memory_mib", jv_integer(c->gpu_memory_mib));
    if (rc == 0 && c->provider)
        rc = jv_set(o, "provider", jv_string(c->provider));
    if (rc == 0 && c->offer)
        rc = jv_set(o, "offer", jv_string(c->offer));
    if (rc == 0 && c->zone)
        rc = jv_set(o, "zone", jv_string(c->zone));
    if (rc == 0 && c->market)
        rc = jv_set(o, "market", jv_string(c->market));
    if (rc == 0 && isfinite(c->price))
        rc = jv_set(o, "price", jv_number(c->price));
    if (rc == 0 && c->address)
        rc = jv_set(o, "address", jv_string(c->address));
    /* this agent's name: a retry whose answer was lost is answered again (with the node's token) */
    if (rc == 0 && n->agent[0])
        rc = jv_set(o, "agent", jv_string(n->agent));
    /* the proof that this is the instance it says (api.attestation) */
    nd_identity(n, nd_wall());
    if (rc == 0 && n->have_proof) {
        struct jv *at = jv_object();

        rc = at ? jv_set(o, "attestation", at) : ERR_NOMEM;
        if (rc == 0 && n->proof.document)
            rc = jv_set(at, "document", jv_string(n->proof.document));
        if (rc == 0 && n->proof.signature)
            rc = jv_set(at, "signature", jv_string(n->proof.signature));
        if (rc == 0 && n->proof.token)
            rc = jv_set(at, "identity_token", jv_string(n->proof.token));
    }
    /* its self-fence as the controller may count on it: the replicas stopped, SIGKILL included */
    if (rc == 0 && c->fence_s > 0 && c->fence_s + c->grace_s <= NODE_FENCE_MAX_S)
        rc = jv_set(o, "fence_s", jv_number(c->fence_s + c->grace_s));
    if (rc == 0)
        rc = jv_dump(o, &body);
    jv_free(o);
    if (rc == 0)
        rc = nd_call(n, "POST", "/v1/nodes", body, &r);
    free(body);
    if (rc < 0) {
        nd_failed(n, now, &n->next_register);
        return;
    }
    if (r.status == 201) {
        struct jv *v = NULL;

        if (jv_parse(r.body, r.body_len, &v, NULL) == 0)
            nd_keep_token(n, jv_string_value(jv_get(v, "node_token")));
        jv_free(v);
    }
    if (r.status == 201 || r.status == 409) {
        nd_log(n, LOG_INFO, NULL,
               r.status == 201 ? "registered with %d GPUs" : "already registered (%d GPUs)",
               c->gpus);
        nd_heard(n, now);
        n->registered = 1;
        n->fails = 0;
        n->next_beat = now;
    } else {
        nd_log(n, LOG_WARN, NULL, "registration answered %ld: %s", r.status,
               nd_reason(&r, why, sizeof(why)));
        if (r.status == 403) { /* the identity is read again for the next try */
            watch_proof_clear(&n->proof);
            n->have_proof = 0;
        }
        nd_failed(n, now, &n->next_register);
    }
    http_client_response_clear(&r);
}

/* What a node path answers 404 (the controller forgot the node) or 409 (terminated) means. */
static int nd_node_gone(struct nd *n, long status, double now)
{
    if (status == 404) {
        nd_log(n, LOG_WARN, NULL, "the controller does not know this node: registering again");
        n->registered = 0;
        n->next_register = now;
        return 1;
    }
    if (status == 409) {
        nd_log(n, LOG_INFO, NULL, "the controller says this node is terminated: stopping");
        n->stopping = 1;
        return 1;
    }
    return 0;
}

static void nd_fetch_assignment(struct nd *n, double now)
{
    struct http_client_response r = {0};
    struct node_assignment a;
    struct error e = {0};
    char path[256], why[256];

    snprintf(path, sizeof(path), "/v1/nodes/%s/assignment", n->cfg->instance_id);
    if (nd_call(n, "GET", path, NULL, &r) < 0)
        return;
    if (r.status != 200) {
        if (!nd_node_gone(n, r.status, now))
            nd_log(n, LOG_WARN, NULL, "assignment answered %ld: %s", r.status,
                   nd_reason(&r, why, sizeof(why)));
    } else if (node_assignment_parse(r.body, r.body_len, &a, &e) < 0) {
        nd_log(n, LOG_ERROR, NULL, "a malformed assignment, %s: %s",
               n->want_stale ? "nothing starts until one is read" : "kept the last one", e.msg);
    } else {
        for (size_t i = 0; i < a.njobs; i++) { /* when each entry was first seen */
            a.jobs[i].seen_at = now;
            for (size_t k = 0; n->have_want && k < n->want.njobs; k++)
                if (strcmp(n->want.jobs[k].key, a.jobs[i].key) == 0) {
                    a.jobs[i].seen_at = n->want.jobs[k].seen_at;
                    a.jobs[i].wait_told = n->want.jobs[k].wait_told && a.jobs[i].wait_for;
                    a.jobs[i].gpu_told = n->want.jobs[k].gpu_told;
                }
        }
        node_assignment_clear(&n->want);
        n->want = a;
        n->have_want = 1;
        if (n->want_stale)
            nd_log(n, LOG_INFO, NULL, "a fresh assignment read: the replicas follow it");
        n->want_stale = 0;
        for (size_t i = 0; i < a.njobs; i++)
            n->gens_named |= a.jobs[i].generation != NULL;
    }
    http_client_response_clear(&r);
}

/* A heartbeat's body: {"replicas": [{"job", "generation"}, ...]}, the job generations of which
 * replicas are alive here (running, or stopping), once the controller names generations (an
 * older one refuses the field: "{}" then). *body is the caller's (free). */
static int nd_heartbeat_body(const struct nd *n, char **body)
{
    struct jv *o = jv_object(), *arr = jv_array();
    int rc = o && arr ? 0 : ERR_NOMEM, named = n->gens_named;

    for (size_t i = 0; rc == 0 && i < n->nreps; i++) {
        const struct nd_rep *r = &n->reps[i];
        int dup = 0;
        struct jv *e;

        named |= r->gen != NULL;
        if (r->st == ND_EXITED || !r->gen)
            continue;
        for (size_t k = 0; k < i && !dup; k++)
            dup = n->reps[k].st != ND_EXITED && n->reps[k].gen &&
                  strcmp(n->reps[k].job, r->job) == 0 && strcmp(n->reps[k].gen, r->gen) == 0;
        if (dup)
            continue;
        rc = (e = jv_object()) ? jv_push(arr, e) : ERR_NOMEM;
        if (rc == 0)
            rc = jv_set(e, "job", jv_string(r->job));
        if (rc == 0)
            rc = jv_set(e, "generation", jv_string(r->gen));
    }
    if (rc == 0 && named) {
        rc = jv_set(o, "replicas", arr);
        arr = NULL;
    }
    if (rc == 0)
        rc = jv_dump(o, body);
    jv_free(arr);
    jv_free(o);
    return rc;
}

static void nd_poll_signals(struct nd *n);

static void nd_heartbeat(struct nd *n, double now)
{
    struct http_client_response r = {0};
    char path[256], why[256], *body = NULL;
    struct jv *v = NULL;
    const char *st;
    int rc;

    snprintf(path, sizeof(path), "/v1/nodes/%s/heartbeat", n->cfg->instance_id);
    rc = nd_heartbeat_body(n, &body);
    if (rc < 0 || nd_call(n, "POST", path, body, &r) < 0) {
        free(body);
        nd_failed(n, now, &n->next_beat);
        return;
    }
    free(body);
    if (r.status == 200) {
        n->fails = 0;
        n->next_beat = now + n->cfg->heartbeat_s;
        nd_heard(n, now);
        if (jv_parse(r.body, r.body_len, &v, NULL) == 0 &&
            (st = jv_string_value(jv_get(v, "state")))) {
            int draining = strcmp(st, "draining") == 0;

            if (draining && !n->draining)
                nd_log(n, LOG_INFO, NULL, "draining: replicas stop and checkpoint");
            if (draining)
                n->want_stale = 1;
            n->draining = draining;
        }
        jv_free(v);
        nd_poll_signals(n); /* a notice that came during the heartbeat stops the replicas now */
        if (!n->draining && !n->noticed && !n->stopping)
            nd_fetch_assignment(n, now);
        /* a job waiting for its replicas elsewhere to stop: ask again within a second */
        for (size_t k = 0; n->have_want && k < n->want.njobs; k++)
            if (n->want.jobs[k].wait_for)
                n->next_beat = fmin(n->next_beat, now + fmin(1.0, n->cfg->heartbeat_s));
    } else if (!nd_node_gone(n, r.status, now)) {
        nd_log(n, LOG_WARN, NULL, "heartbeat answered %ld: %s", r.status,
               nd_reason(&r, why, sizeof(why)));
        nd_failed(n, now, &n->next_beat);
    }
    http_client_response_clear(&r);
}

static void nd_send_notice(struct nd *n, double now)
{
    struct http_client_response r = {0};
    char path[256], body[64], why[256];

    snprintf(path, sizeof(path), "/v1/nodes/%s/notice", n->cfg->instance_id);
    if (isfinite(n->notice_deadline))
        snprintf(body, sizeof(body), "{\"deadline\":%.3f}", n->notice_deadline);
    else
        snprintf(body, sizeof(body), "{}");
    if (nd_call(n, "POST", path, body, &r) < 0) {
        nd_failed(n, now, &n->notice_retry_at);
        return;
    }
    if (r.status == 200) {
        nd_log(n, LOG_INFO, NULL, "preemption notice forwarded");
        n->notice_pending = 0;
        n->fails = 0;
    } else if (!nd_node_gone(n, r.status, now)) {
        nd_log(n, LOG_WARN, NULL, "notice answered %ld: %s", r.status,
               nd_reason(&r, why, sizeof(why)));
        nd_failed(n, now, &n->notice_retry_at);
    }
    http_client_response_clear(&r);
}

/* ---- replicas ---- */

/* In the child: become the run-as user (groups, group, user, and no way back), as uid when it is
 * not 0 (its job's own). 0, or -1. */
static int nd_child_user(const struct node_run_as *u, uid_t uid)
{
    if (setgroups((size_t)u->ngroups, u->groups) != 0 || setgid(u->gid) != 0 ||
        setuid(uid ? uid : u->uid) != 0)
        return -1;
    return setuid(0) == 0 ? -1 : 0;
}

/* In a child: close every descriptor from 3 up, so that nothing of the agent's (its connections
 * to the controller, which carry other jobs' tokens, and files) reaches a replica or the watcher:
 * libcurl's sockets are not close-on-exec. close_range (Linux 5.9) where there is one, else
 * close() up to the descriptor limit. Async-signal-safe. */
static void nd_close_fds(void)
{
    struct rlimit rl;
    long max = 65536;

#if defined(__linux__) && defined(SYS_close_range)
    if (syscall(SYS_close_range, 3U, ~0U, 0U) == 0)
        return;
#endif
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur < (rlim_t)max)
        max = (long)rl.rlim_cur;
    for (long fd = 3; fd < max; fd++)
        close((int)fd);
}

/* In a child: be killed when the agent dies (Linux), and exit if it has died already. After any
 * change of credentials, which clears the parent-death signal. */
static void nd_child_pdeath(pid_t parent, int status)
{
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    if (getppid() != parent)
        _exit(status);
}

/* The child between fork and exec: its own process group, no descriptor of the agent's but 0, 1
 * and 2, the signal mask and dispositions of a fresh process, the run-as user, killed with the
 * agent (Linux; set after the user, whose change clears it), the workdir and the environment.
 * Only async-signal-safe calls. */
static void nd_child(pid_t parent, const struct node_run_as *run_as, uid_t uid, const char *workdir,
                     char *const *argv, char **env)
{
    static const char msg[] = "castor-node: cannot start the replica (workdir or command)\n";
    static const char user[] = "castor-node: cannot run the replica as CASTOR_NODE_RUN_AS\n";
    sigset_t none;

    setpgid(0, 0);
    nd_child_pdeath(parent, 126);
    nd_close_fds();
    /* every disposition at its default: one the agent inherited as SIG_IGN (a shell's background
     * job's SIGINT) would pass through exec to the replica */
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            signal(sig, SIG_DFL);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (run_as && nd_child_user(run_as, uid) != 0) {
        ssize_t w = write(STDERR_FILENO, user, sizeof(user) - 1);

        (void)w;
        _exit(127);
    }
    /* again: setuid cleared it, and the agent may have died meanwhile */
    nd_child_pdeath(parent, 126);
    /* a uid of its job's own: what it writes is its group's to write too, so that the job, placed
     * again as another uid of the group (on another node, or here later), can go on with its
     * checkpoints; nothing for others */
    if (uid)
        umask(007);
    if (workdir && chdir(workdir) != 0) {
        ssize_t w = write(STDERR_FILENO, msg, sizeof(msg) - 1);

        (void)w;
        _exit(127);
    }
    environ = env;
    execvp(argv[0], argv);
    {
        ssize_t w = write(STDERR_FILENO, msg, sizeof(msg) - 1);

        (void)w;
    }
    _exit(127);
}

static struct nd_rep *nd_rep_add(struct nd *n, const struct node_job *j, int rank)
{
    struct nd_rep *r;

    if (!(r = vec_grow(n->reps, &n->cap, n->nreps, sizeof(*r))))
        return NULL;
    n->reps = r;
    r = &n->reps[n->nreps];
    memset(r, 0, sizeof(*r));
    r->job = strdup(j->name);
    r->key = strdup(j->key);
    r->gen = j->generation ? strdup(j->generation) : NULL;
    if (!r->job || !r->key || (j->generation && !r->gen)) {
        free(r->job);
        free(r->key);
        free(r->gen);
        return NULL;
    }
    r->rank = rank;
    r->attempt = j->attempt;
    r->placed_at = j->placed_at;
    r->gpu = -1;
    r->st = ND_EXITED;
    n->nreps++;
    return r;
}

static void nd_rep_remove(struct nd *n, size_t i)
{
    if (n->reps[i].gpu >= 0)
        n->gpu_used[n->reps[i].gpu] = 0;
    free(n->reps[i].job);
    free(n->reps[i].key);
    free(n->reps[i].gen);
    n->reps[i] = n->reps[--n->nreps];
}

/* The uid the replicas of job run as (CASTOR_NODE_RUN_AS_UIDS): the one its replicas here run as
 * already; else, of the uids of the range that no other job's live replica here holds and no
 * process of the machine runs as (a job's stray descendants keep theirs from the next job), the
 * one it had here last, else the least recently given (never given first, lowest first), so that a
 * uid goes to another job as seldom as the range allows (what a job leaves on the node's disks
 * stays its uid's). 0, or ERR_CAPACITY (none free), ERR_IO (/proc unreadable), ERR_NOMEM. *out
 * written on success. */
static int nd_job_uid(struct nd *n, const char *job, uid_t *out)
{
    const struct node_run_as *u = n->cfg->run_as;
    size_t span = node_run_as_span(u), pick = span;
    unsigned char *busy;
    char *name = NULL;
    int rc;

    for (size_t i = 0; i < n->nreps; i++)
        if (n->reps[i].uid && n->reps[i].st != ND_EXITED && strcmp(n->reps[i].job, job) == 0) {
            *out = n->reps[i].uid;
            return 0;
        }
    if (!(busy = malloc(span)))
        return ERR_NOMEM;
    rc = node_run_as_busy(u, busy);
    for (size_t i = 0; rc == 0 && i < n->nreps; i++)
        if (n->reps[i].uid && n->reps[i].st != ND_EXITED)
            busy[n->reps[i].uid - u->uid_first] = 1;
    for (size_t k = 0; rc == 0 && k < span; k++) {
        if (busy[k])
            continue;
        if (n->uid_job[k] && strcmp(n->uid_job[k], job) == 0) {
            pick = k;
            break;
        }
        if (pick == span || n->uid_stamp[k] < n->uid_stamp[pick])
            pick = k;
    }
    free(busy);
    if (rc == 0 && pick == span)
        rc = ERR_CAPACITY;
    if (rc == 0 && !(name = strdup(job)))
        rc = ERR_NOMEM;
    if (rc < 0)
        return rc;
    free(n->uid_job[pick]);
    n->uid_job[pick] = name;
    n->uid_stamp[pick] = ++n->uid_clock;
    *out = u->uid_first + (uid_t)pick;
    return 0;
}

/* 1 (and *logged_at now) when a retry's line logged at *logged_at (monotonic; -INFINITY: never)
 * may be logged again: at most once each ND_RETRY_LOG_S. */
static int nd_log_due(double *logged_at)
{
    double now = nd_mono();

    if (now < *logged_at + ND_RETRY_LOG_S)
        return 0;
    *logged_at = now;
    return 1;
}

static void nd_start(struct nd *n, const struct node_job *j, int local)
{
    struct node_env_inputs in = {.base = (const char *const *)environ,
                                 .self = n->cfg->instance_id,
                                 .url = n->cfg->url,
                                 .job_token = n->cfg->job_token,
                                 .master_addr = n->cfg->master_addr,
                                 .gpu = -1,
                                 .run_as = n->cfg->run_as};
    int rank = j->rank_offset + local, rc, fork_errno;
    struct nd_rep *r;
    char **env = NULL, as[32] = "";
    uid_t uid = 0;
    pid_t pid;

    /* a uid of the job's own, or it waits (not started, so tried again) */
    if (j->argv && n->cfg->run_as && node_run_as_span(n->cfg->run_as) > 0 &&
        (rc = nd_job_uid(n, j->name, &uid)) < 0) {
        if (nd_log_due(&n->uid_wait_logged_at)) {
            nd_log(n, LOG_ERROR, j->name, "cannot start rank %d: %s", rank,
                   rc == ERR_CAPACITY ? "every uid of CASTOR_NODE_RUN_AS_UIDS is another job's "
                                        "or a process's (a larger range)"
                                      : err_str(rc));
        }
        return;
    }
    r = nd_rep_add(n, j, rank);
    if (!r) {
        nd_log(n, LOG_ERROR, j->name, "out of memory starting rank %d", rank);
        return;
    }
    if (!j->argv) { /* kept as exited so that it is logged once, not retried */
        nd_log(n, LOG_ERROR, j->name, "cannot run rank %d: %s", rank, j->why_not);
        return;
    }
    for (int g = 0; g < n->cfg->gpus && in.gpu < 0; g++)
        if (!n->gpu_used[g])
            in.gpu = g;
    if (node_replica_env(j, local, &in, &env) < 0) {
        nd_log(n, LOG_ERROR, j->name, "out of memory starting rank %d", rank);
        nd_rep_remove(n, n->nreps - 1); /* (not started: tried again) */
        return;
    }
    pid = fork();
    if (pid == 0)
        nd_child(n->self, n->cfg->run_as, uid, j->workdir, j->argv, env);
    fork_errno = errno;
    node_env_free(env);
    if (pid < 0) {
        /* (EAGAIN: a process limit; not started, so tried again at the next reconcile, where an
         * exited one would wait for its entry to change) */
        if (nd_log_due(&n->fork_fail_logged_at)) {
            nd_log(n, LOG_ERROR, j->name, "cannot fork rank %d: %s; trying again", rank,
                   strerror(fork_errno));
        }
        nd_rep_remove(n, n->nreps - 1);
        return;
    }
    setpgid(pid, pid); /* also in the child: whichever runs first */
    r->pid = pid;
    r->uid = uid;
    r->st = ND_RUNNING;
    r->gpu = in.gpu;
    if (in.gpu >= 0)
        n->gpu_used[in.gpu] = 1;
    if (uid)
        snprintf(as, sizeof(as), ", uid %ld", (long)uid);
    nd_log(n, LOG_INFO, j->name, "started rank %d of %d (pid %ld, GPU %d, attempt %d%s)", rank,
           j->world_size, (long)pid, in.gpu, j->attempt, as);
}

static void nd_stop(struct nd *n, struct nd_rep *r, double now)
{
    if (r->st != ND_RUNNING)
        return;
    kill(-r->pid, SIGTERM);
    r->st = ND_STOPPING;
    r->kill_at = fmin(now + n->cfg->grace_s, n->notice_kill_by);
    nd_log(n, LOG_INFO, r->job, "stopping rank %d (SIGTERM; SIGKILL in %.1f s)", r->rank,
           r->kill_at - now);
}

/* The job entry a replica of job at rank should run now, or NULL. */
static const struct node_job *nd_wanted(const struct nd *n, const char *job, int rank)
{
    if (!n->have_want || n->want_stale || n->stopping || n->noticed || n->draining || n->fenced)
        return NULL;
    for (size_t i = 0; i < n->want.njobs; i++) {
        const struct node_job *j = &n->want.jobs[i];

        if (strcmp(j->name, job) == 0 && rank >= j->rank_offset &&
            rank < j->rank_offset + j->replicas)
            return j;
    }
    return NULL;
}

/* When job j's replicas may start: at once, or restart_delay after its entry was first seen. */
static double nd_start_at(const struct node_job *j)
{
    return j->restart_delay > 0 && isfinite(j->seen_at) ? j->seen_at + j->restart_delay : 0;
}

/* r has ended (its group empty, or killed): its rank and GPU are free, the controller hears. */
static void nd_exited(struct nd *n, struct nd_rep *r)
{
    r->stopped = r->st == ND_STOPPING;
    r->st = ND_EXITED;
    r->leader_gone = 0;
    if (r->gpu >= 0)
        n->gpu_used[r->gpu] = 0;
    r->gpu = -1;
    /* the controller hears at once, so that other nodes waiting for it start sooner */
    n->next_beat = fmin(n->next_beat, nd_mono());
}

/* A stopping replica whose first process has exited: ended once no process of its group is left
 * (zombies reaped first: this agent is the subreaper of its orphans). */
static void nd_stopped(struct nd *n, struct nd_rep *r)
{
    if (r->st != ND_STOPPING || !r->leader_gone || kill(-r->pid, 0) == 0 || errno != ESRCH)
        return;
    nd_log(n, LOG_INFO, r->job, "rank %d's processes have all exited", r->rank);
    nd_exited(n, r);
}

static void nd_reconcile(struct nd *n, double now)
{
    /* the node follows its assignment now (not fenced, noticed, draining, stopping, nor waiting
     * for a fresh one) */
    int following =
        n->have_want && !n->want_stale && !n->stopping && !n->noticed && !n->draining && !n->fenced;

    for (size_t i = 0; i < n->nreps;) {
        struct nd_rep *r = &n->reps[i];
        const struct node_job *j = nd_wanted(n, r->job, r->rank);
        int keep = j && strcmp(j->key, r->key) == 0;

        if (r->st == ND_RUNNING && !keep)
            nd_stop(n, r, now);
        if (r->st == ND_STOPPING && !r->killed && now >= r->kill_at) {
            kill(-r->pid, SIGKILL);
            r->killed = 1;
            nd_log(n, LOG_WARN, r->job, "rank %d did not stop within its grace: SIGKILL", r->rank);
        }
        nd_stopped(n, r);
        if (r->st == ND_STOPPING && r->leader_gone && r->killed &&
            now >= r->kill_at + ND_GROUP_GONE_S) {
            nd_log(n, LOG_WARN, r->job, "rank %d's process group does not end: counted as gone",
                   r->rank);
            nd_exited(n, r);
        }
        /* (a failure not reported yet goes too when a fresh assignment changed or dropped its
         * entry: the new entry restarts the replicas anyway; it stays while the node does not
         * follow the assignment, a fence while the controller is away above all, to be reported
         * when the controller answers); one this agent stopped goes even when its entry is
         * wanted again, to be started again */
        if (r->st == ND_EXITED && (!keep || r->stopped) && !(r->report && !following)) {
            nd_rep_remove(n, i);
            continue;
        }
        i++;
    }
    if (!following)
        return;
    for (size_t k = 0; k < n->want.njobs; k++) {
        struct node_job *j = &n->want.jobs[k];
        int busy = 0;

        for (size_t i = 0; i < n->nreps; i++) /* old replicas of the job still checkpointing */
            busy |= n->reps[i].st == ND_STOPPING && strcmp(n->reps[i].job, j->name) == 0;
        busy |= nd_start_at(j) > now; /* a restart after a failure waits its delay */
        /* replicas of an earlier generation still alive on other nodes: two generations never
         * run at once (a start from the checkpoint they are still writing) */
        if (j->wait_for && !busy && !j->wait_told) {
            nd_log(n, LOG_INFO, j->name,
                   "waits for its replicas on %s to stop before starting its own here",
                   j->wait_for);
            j->wait_told = 1;
        }
        busy |= j->wait_for != NULL;
        /* one GPU each: while other jobs' stopping replicas still hold them, wait (a replica
         * started without one would see every GPU, and never be pinned); a job with more
         * replicas here than the node has GPUs starts as before, its extras without one */
        if (!busy && j->argv && j->replicas <= n->cfg->gpus) {
            int missing = 0, free_gpus = 0;

            for (int local = 0; local < j->replicas; local++) {
                int rank = j->rank_offset + local, have = 0;

                for (size_t i = 0; i < n->nreps && !have; i++)
                    have = n->reps[i].rank == rank && strcmp(n->reps[i].job, j->name) == 0;
                missing += !have;
            }
            for (int g = 0; g < n->cfg->gpus; g++)
                free_gpus += !n->gpu_used[g];
            if (missing > free_gpus) {
                if (!j->gpu_told)
                    nd_log(n, LOG_INFO, j->name,
                           "waits for %d GPUs (%d free: the others' replicas are still stopping)",
                           missing, free_gpus);
                j->gpu_told = 1;
                busy = 1;
            }
        }
        for (int local = 0; local < j->replicas && !busy; local++) {
            int rank = j->rank_offset + local, have = 0;

            for (size_t i = 0; i < n->nreps && !have; i++)
                have = n->reps[i].rank == rank && strcmp(n->reps[i].job, j->name) == 0;
            if (!have)
                nd_start(n, j, local);
        }
    }
}

/* Queue the completion of r (rank 0, exited with status 0 while it ran) for the controller. */
static void nd_done_add(struct nd *n, const struct nd_rep *r)
{
    struct nd_done *d = vec_grow(n->dones, &n->dones_cap, n->ndones, sizeof(*d));

    if (!d)
        goto nomem;
    n->dones = d;
    d = &n->dones[n->ndones];
    if (!(d->job = strdup(r->job)))
        goto nomem;
    d->attempt = r->attempt;
    d->placed_at = r->placed_at;
    n->ndones++;
    n->report_retry_at = fmin(n->report_retry_at, nd_mono());
    return;
nomem:
    nd_log(n, LOG_ERROR, r->job, "out of memory: rank 0's end is not told to the controller");
}

static void nd_done_remove(struct nd *n, size_t i)
{
    free(n->dones[i].job);
    memmove(&n->dones[i], &n->dones[i + 1], (n->ndones - i - 1) * sizeof(n->dones[0]));
    n->ndones--;
}

static void nd_reap(struct nd *n)
{
    int status;
    pid_t pid;

    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        if (pid == n->watch_pid) {
            nd_log(n, LOG_WARN, NULL, "the notice watcher ended (%s %d): restarted in %.0f s",
                   WIFEXITED(status) ? "status" : "signal",
                   WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), ND_WATCH_RESTART_S);
            n->watch_pid = 0;
            n->watch_start_at = nd_mono() + ND_WATCH_RESTART_S;
            continue;
        }
        for (size_t i = 0; i < n->nreps; i++) {
            struct nd_rep *r = &n->reps[i];

            if (r->pid != pid || r->st == ND_EXITED || r->leader_gone)
                continue;
            /* a failure: an error exit (75: checkpointed, restart me, is none) or a signal this
             * agent did not send, while it ran */
            if (r->st == ND_RUNNING && ((WIFEXITED(status) && WEXITSTATUS(status) != 0 &&
                                         WEXITSTATUS(status) != NODE_EXIT_RESTART) ||
                                        WIFSIGNALED(status))) {
                r->report = 1;
                r->fail_status = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
                r->fail_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
                n->report_retry_at = fmin(n->report_retry_at, nd_mono());
            }
            if (r->st == ND_RUNNING && r->rank == 0 && WIFEXITED(status) &&
                WEXITSTATUS(status) == 0)
                nd_done_add(n, r);
            if (WIFEXITED(status))
                nd_log(n, WEXITSTATUS(status) == 0 ? LOG_INFO : LOG_WARN, r->job,
                       "rank %d exited with status %d", r->rank, WEXITSTATUS(status));
            else
                nd_log(n, r->st == ND_STOPPING ? LOG_INFO : LOG_WARN, r->job,
                       "rank %d ended by signal %d", r->rank,
                       WIFSIGNALED(status) ? WTERMSIG(status) : 0);
            if (r->st == ND_STOPPING && !r->killed) {
                /* the rest of its group keeps its grace (a wrapper's trainer, checkpointing);
                 * nd_stopped says when it is empty */
                r->leader_gone = 1;
                continue;
            }
            kill(-pid, SIGKILL); /* what the replica left behind in its group goes with it */
            nd_exited(n, r);
        }
    }
    for (size_t i = 0; i < n->nreps; i++)
        nd_stopped(n, &n->reps[i]);
}

/* Report r's failure. Returns 1 when it is settled (counted, already counted, or refused for
 * good), 0 to try again later. */
static int nd_report_one(struct nd *n, struct nd_rep *r, double now)
{
    struct http_client_response resp = {0};
    char path[256], body[512], why[256];
    int done = 0;
    struct jv *v = NULL;

    snprintf(path, sizeof(path), "/v1/nodes/%s/failures", n->cfg->instance_id);
    snprintf(body, sizeof(body), "{\"job\":\"%s\",\"attempt\":%d,\"rank\":%d,\"%s\":%d}", r->job,
             r->attempt, r->rank, r->fail_status ? "exit_status" : "signal",
             r->fail_status ? r->fail_status : r->fail_signal);
    if (nd_call(n, "POST", path, body, &resp) < 0)
        return 0;
    if (resp.status == 200) {
        int counted = 0;

        if (jv_parse(resp.body, resp.body_len, &v, NULL) == 0)
            jv_bool_value(jv_get(v, "counted"), &counted);
        nd_log(n, LOG_INFO, r->job, "rank %d's failure reported (%s; the job is %s)", r->rank,
               counted ? "counted" : "its attempt was counted already",
               jv_string_value(jv_get(v, "state")) ? jv_string_value(jv_get(v, "state"))
                                                   : "(not said)");
        jv_free(v);
        done = 1;
    } else if (resp.status == 422 || resp.status == 400) {
        nd_log(n, LOG_WARN, r->job, "rank %d's failure was refused (%ld): %s", r->rank, resp.status,
               nd_reason(&resp, why, sizeof(why)));
        done = 1;
    } else if (nd_node_gone(n, resp.status, now)) {
        done = 1;
    } else {
        nd_log(n, LOG_WARN, r->job, "reporting rank %d's failure answered %ld: %s", r->rank,
               resp.status, nd_reason(&resp, why, sizeof(why)));
    }
    http_client_response_clear(&resp);
    return done;
}

/* Tell the controller that rank 0 of d's job ended with status 0 here. Returns 1 when it is
 * settled (the job finished now or before, the report stale, or refused for good), 0 to try
 * again later. */
static int nd_report_done(struct nd *n, const struct nd_done *d, double now)
{
    struct http_client_response resp = {0};
    char path[256], body[512], why[256], at[64] = "";
    int done = 0, counted = 0;
    struct jv *v = NULL;

    snprintf(path, sizeof(path), "/v1/nodes/%s/completions", n->cfg->instance_id);
    if (isfinite(d->placed_at))
        snprintf(at, sizeof(at), ",\"placed_at\":%.17g", d->placed_at);
    snprintf(body, sizeof(body), "{\"job\":\"%s\",\"attempt\":%d,\"rank\":0%s}", d->job, d->attempt,
             at);
    if (nd_call(n, "POST", path, body, &resp) < 0)
        return 0;
    if (resp.status == 200) {
        if (jv_parse(resp.body, resp.body_len, &v, NULL) == 0)
            jv_bool_value(jv_get(v, "counted"), &counted);
        nd_log(n, LOG_INFO, d->job, "rank 0's end told: %s",
               counted ? "the job is finished" : "nothing to do (finished before, or restarted)");
        jv_free(v);
        done = 1;
    } else if (resp.status == 422 || resp.status == 400 ||
               (resp.status == 404 && /* an older controller, without the path */
                strstr(nd_reason(&resp, why, sizeof(why)), "no such endpoint"))) {
        nd_log(n, LOG_INFO, d->job, "rank 0's end was not taken (%ld): %s", resp.status,
               nd_reason(&resp, why, sizeof(why)));
        done = 1;
    } else if (nd_node_gone(n, resp.status, now)) {
        done = 1;
    } else {
        nd_log(n, LOG_WARN, d->job, "telling rank 0's end answered %ld: %s", resp.status,
               nd_reason(&resp, why, sizeof(why)));
    }
    http_client_response_clear(&resp);
    return done;
}

/* Report the completions and failures not reported yet, completions first (rank 0 done, then
 * another rank failing as its peer left: the job is done, not failed); on a failure to reach the
 * controller, later. */
static void nd_report_failures(struct nd *n, double now)
{
    while (n->ndones > 0) {
        nd_poll_signals(n);
        if (!nd_report_done(n, &n->dones[0], now)) {
            nd_failed(n, now, &n->report_retry_at);
            return;
        }
        nd_done_remove(n, 0);
        n->fails = 0;
    }
    for (;;) {
        size_t i = 0;

        nd_poll_signals(n); /* (may remove replicas: the next is looked for afresh) */
        while (i < n->nreps && !n->reps[i].report)
            i++;
        if (i == n->nreps)
            break;
        if (!nd_report_one(n, &n->reps[i], now)) {
            nd_failed(n, now, &n->report_retry_at);
            return;
        }
        n->reps[i].report = 0;
        n->fails = 0;
    }
    n->report_retry_at = INFINITY;
}

/* The signal the notice watcher sends its parent: a real-time one, so that each notice is
 * queued (a second SIGUSR1 pending is lost) */
#define ND_SIG_WATCH (SIGRTMIN + 1)

/* A watcher's deadline (epoch seconds; NAN: none) as a signal's value, and back: the absolute time
 * in milliseconds where a pointer holds it, so that the time a signal waits to be taken is not
 * added to it; else (32 bits) the milliseconds left, as SIGUSR1 carries them. */
static union sigval nd_watch_value(double deadline)
{
    union sigval v;

    memset(&v, 0, sizeof(v));
    if (!isfinite(deadline))
        return v;
#if UINTPTR_MAX > 0xffffffffu
    v.sival_ptr = (void *)(uintptr_t)(deadline > 0.001 ? llround(deadline * 1000) : 1);
#else
    {
        double left = deadline - nd_wall();

        v.sival_int = left * 1000 < 1 ? 1 : left * 1000 > 2e9 ? 2000000000 : (int)(left * 1000);
    }
#endif
    return v;
}

static double nd_watch_deadline(const siginfo_t *si)
{
    if (si->si_code != SI_QUEUE)
        return NAN;
#if UINTPTR_MAX > 0xffffffffu
    {
        uintptr_t ms = (uintptr_t)si->si_value.sival_ptr;

        return ms > 0 ? (double)ms / 1000.0 : NAN;
    }
#else
    return si->si_value.sival_int > 0 ? nd_wall() + si->si_value.sival_int / 1000.0 : NAN;
#endif
}

/* A preemption notice (sig: SIGUSR1 from anyone, with the milliseconds left from when it is taken,
 * or ND_SIG_WATCH from the watcher, with its deadline): replicas checkpoint now, the controller
 * hears of it at once. Of several notices the earliest deadline holds. */
static void nd_notice(struct nd *n, int sig, const siginfo_t *si, double now)
{
    double wall = nd_wall(), deadline = NAN;

    if (sig == SIGUSR1 && si->si_code == SI_QUEUE && si->si_value.sival_int > 0)
        deadline = wall + si->si_value.sival_int / 1000.0;
    else if (sig != SIGUSR1)
        deadline = nd_watch_deadline(si);
    nd_log(n, LOG_WARN, NULL, "preemption notice (%s%.1f s)",
           isfinite(deadline) ? "" : "no deadline; ", isfinite(deadline) ? deadline - wall : 0.0);
    if (isfinite(deadline) && !(deadline >= n->notice_deadline)) {
        n->notice_deadline = deadline;
        n->notice_kill_by = now + fmax(0.0, deadline - wall);
        for (size_t i = 0; i < n->nreps; i++) /* stopping already: SIGKILL by then */
            if (n->reps[i].st == ND_STOPPING)
                n->reps[i].kill_at = fmin(n->reps[i].kill_at, n->notice_kill_by);
    }
    n->noticed = 1;
    n->notice_pending = 1;
    n->notice_retry_at = now;
    nd_reconcile(n, now);
}

/* The signals node_run takes (all blocked), or with urgent, only those not to be left waiting
 * behind a request: stop, and notices. */
static void nd_sigset(sigset_t *set, int urgent)
{
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGUSR1);
    sigaddset(set, ND_SIG_WATCH);
    if (!urgent) {
        sigaddset(set, SIGHUP);
        sigaddset(set, SIGCHLD);
    }
}

static void nd_signal(struct nd *n, int sig, const siginfo_t *si)
{
    if (sig == SIGTERM || sig == SIGINT) {
        if (!n->stopping)
            nd_log(n, LOG_INFO, NULL, "stopping: replicas first");
        n->stopping = 1;
    } else if (sig == SIGUSR1 || sig == ND_SIG_WATCH) {
        nd_notice(n, sig, si, nd_mono());
    }
}

/* Take the stop and notice signals already pending, without waiting: before and between requests
 * to the controller (each may take CASTOR_NODE_TIMEOUT_S), so that a notice reaches the replicas
 * at once. May stop replicas (nd_reconcile): not while iterating over them. */
static void nd_poll_signals(struct nd *n)
{
    struct timespec zero = {0, 0};
    sigset_t set;
    siginfo_t si;
    int sig;

    nd_sigset(&set, 1);
    while ((sig = sigtimedwait(&set, &si, &zero)) > 0)
        nd_signal(n, sig, &si);
}

/* ---- the cloud's notices ---- */

/* What the watcher child forwards to its parent. */
struct nd_watch_ctx {
    struct nd *n;
    pid_t parent;
};

/* watch_emit_fn in the watcher child: the notice to the parent as ND_SIG_WATCH with its deadline
 * (nd_watch_value; 0: none), which nd_notice takes as a notice from the cloud. */
static void nd_watch_emit(void *arg, const struct watch_event *ev)
{
    struct nd_watch_ctx *c = arg;
    union sigval v = nd_watch_value(ev->deadline);
    double left = isfinite(ev->deadline) ? ev->deadline - nd_wall() : NAN;

    if (ev->kind == WATCH_REBALANCE && c->n->cfg->rebalance_ignore) {
        nd_log(c->n, LOG_WARN, NULL, "a rebalance recommendation (not forwarded: %s=ignore)",
               WATCH_ENV_REBALANCE);
        return;
    }
    nd_log(c->n, LOG_WARN, NULL, "the cloud's %s: forwarded as a notice (%s%.1f s)",
           ev->kind == WATCH_PREEMPT     ? "interruption notice"
           : ev->kind == WATCH_REBALANCE ? "rebalance recommendation"
                                         : "maintenance event (the instance will be stopped)",
           isfinite(left) ? "" : "no deadline; ", isfinite(left) ? left : 0.0);
    sigqueue(c->parent, ND_SIG_WATCH, v);
}

/* The watcher child: rounds until it is killed. Its parent's memory is a copy it only reads. It
 * runs on without exec (watch_new, libcurl, the log's stdio, malloc), which is safe only because
 * nd_watch_start forks it from a process with one thread (see there). */
static void nd_watch_child(struct nd *n, pid_t parent)
{
    struct watch_config cfg = n->cfg->watch;
    struct nd_watch_ctx c = {n, parent};
    struct watch *w = NULL;
    struct error e = {0};

    nd_child_pdeath(parent, 0);
    nd_close_fds(); /* (its requests make connections of their own) */
    cfg.log = n->cfg->log;
    cfg.node = n->cfg->instance_id;
    if (watch_new(n->cfg->watch_ops, &cfg, &w, &e) < 0) {
        nd_log(n, LOG_ERROR, NULL, "the notice watcher cannot start: %s", e.msg);
        _exit(1);
    }
    nd_log(n, LOG_INFO, NULL, "watching the cloud's notices (%s)", n->cfg->watch_ops->name);
    watch_loop(w, nd_watch_emit, &c, NULL);
    _exit(0);
}

/* 1 when the configuration asks for a watch. */
static int nd_watching(const struct nd *n)
{
    return n->cfg->watch_ops && n->cfg->watch_ops != &watch_none;
}

/*
 * Fork the watcher, if this process has one thread; else put the start off ND_WATCH_THREADS_S.
 * The child runs C code without exec, and a lock that another thread held at the fork (malloc's,
 * stdio's, libcurl's) would stay locked for ever in it: a watcher hung before its first round,
 * and no notice seen (the hang da3b387 fixed in the tests' proc_spawn). The first start comes
 * before any request, with one thread; a restart (watch_start_at, after ND_WATCH_RESTART_S) may
 * come while a libcurl resolver thread is alive: Debian's libcurl resolves names on threads, and
 * with a hostname in the controller URL such a thread outlives a request that timed out. It ends
 * on its own, so the start is only put off. No thread can start between the count and the fork:
 * only this one would start it. On Linux a count that cannot be read (no /proc) puts the start
 * off too; elsewhere there is no /proc to count from, and the watcher is forked as before, a
 * restart keeping that risk.
 */
static void nd_watch_start(struct nd *n)
{
#ifdef __linux__
    int threads = threads_count();
#else
    int threads = 1; /* not known without /proc: forked as before (above) */
#endif
    pid_t pid;

    if (threads != 1) {
        if (threads < 0)
            nd_log(n, LOG_DEBUG, NULL,
                   "the notice watcher is not started yet: this process's threads cannot be "
                   "counted (%s); tried again in %.0f s",
                   err_str(threads), ND_WATCH_THREADS_S);
        else
            nd_log(n, LOG_DEBUG, NULL,
                   "the notice watcher is not started yet: this process has %d threads, and a "
                   "child forked now could inherit a lock held for ever; tried again in %.0f s",
                   threads, ND_WATCH_THREADS_S);
        n->watch_start_at = nd_mono() + ND_WATCH_THREADS_S;
        return;
    }
    pid = fork();
    if (pid == 0)
        nd_watch_child(n, n->self);
    if (pid < 0) {
        nd_log(n, LOG_ERROR, NULL, "cannot fork the notice watcher: %s", strerror(errno));
        n->watch_start_at = nd_mono() + ND_WATCH_RESTART_S;
        return;
    }
    n->watch_pid = pid;
}

static void nd_watch_stop(struct nd *n)
{
    int status;

    if (n->watch_pid <= 0)
        return;
    kill(n->watch_pid, SIGKILL);
    waitpid(n->watch_pid, &status, 0);
    n->watch_pid = 0;
}

/* The parent of process pid, or 0 when it cannot be read (gone). */
static pid_t nd_parent_of(long pid)
{
    char path[64], buf[512], *p;
    long ppid = 0;
    size_t got;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    if (!(f = fopen(path, "r")))
        return 0;
    got = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[got] = '\0';
    /* "pid (comm) S ppid ...": the command may hold spaces and parentheses, its last ')' ends it */
    if (!(p = strrchr(buf, ')')) || sscanf(p + 1, " %*c %ld", &ppid) != 1)
        return 0;
    return (pid_t)ppid;
}

/*
 * At the agent's stop, every replica ended: its other children are strays, descendants of
 * replicas that left their process groups (setsid: a daemonised helper, a server the job
 * started), orphaned to it, the subreaper, when their replica ended. SIGKILL them (and those
 * orphaned to it in turn as they die) and reap them, for at most ND_STRAYS_S, so that no process
 * of a job outlives the agent: one left would run on under init, holding its GPU and its job's
 * token. The watcher is stopped before.
 */
static void nd_kill_strays(struct nd *n)
{
    double end = nd_mono() + ND_STRAYS_S;
    int status, killed = 0;

    for (;;) {
        DIR *d = opendir("/proc");
        struct dirent *e;
        int found = 0;

        while (d && (e = readdir(d))) {
            char *rest = NULL;
            long pid = strtol(e->d_name, &rest, 10);

            if (pid <= 0 || *rest || nd_parent_of(pid) != n->self)
                continue;
            if (kill((pid_t)pid, SIGKILL) == 0) {
                found++;
                killed++;
            }
        }
        if (d)
            closedir(d);
        while (waitpid(-1, &status, WNOHANG) > 0)
            ;
        if ((!found && waitpid(-1, &status, WNOHANG) < 0 && errno == ECHILD) || !d ||
            nd_mono() >= end)
            break;
        {
            struct timespec ts = {0, 10 * 1000 * 1000};

            nanosleep(&ts, NULL);
        }
    }
    if (killed > 0)
        nd_log(n, LOG_WARN, NULL,
               "killed %d processes that replicas had left outside their process groups", killed);
}

static int nd_live(const struct nd *n)
{
    for (size_t i = 0; i < n->nreps; i++)
        if (n->reps[i].st != ND_EXITED)
            return 1;
    return 0;
}

/* How long to wait for a signal: until the next thing due, at most 1 s. */
static double nd_wait(const struct nd *n, double now)
{
    double due = now + 1.0;

    if (!n->stopping) {
        due = fmin(due, n->registered ? n->next_beat : n->next_register);
        if (n->registered && n->notice_pending)
            due = fmin(due, n->notice_retry_at);
        if (n->registered)
            due = fmin(due, n->report_retry_at);
        if (n->registered && !n->fenced && n->cfg->fence_s > 0)
            due = fmin(due, n->heard_at + n->cfg->fence_s + 0.01);
        for (size_t k = 0; n->have_want && k < n->want.njobs; k++)
            if (nd_start_at(&n->want.jobs[k]) > now)
                due = fmin(due, nd_start_at(&n->want.jobs[k]));
        if (nd_watching(n) && n->watch_pid == 0)
            due = fmin(due, n->watch_start_at);
    }
    for (size_t i = 0; i < n->nreps; i++) {
        if (n->reps[i].st == ND_STOPPING && !n->reps[i].killed)
            due = fmin(due, n->reps[i].kill_at);
        /* a group whose last process is not this agent's child ends without a SIGCHLD here */
        if (n->reps[i].st == ND_STOPPING && n->reps[i].leader_gone)
            due = fmin(due, now + 0.1);
    }
    return due > now ? due - now : 0;
}

static int nd_config_ok(const struct node_config *c)
{
    return c && c->url && c->instance_id && c->instance_id[0] && c->node_token &&
           c->node_token[0] && c->gpus >= 1 && c->gpus <= NODE_MAX_REPLICAS && c->heartbeat_s > 0 &&
           c->grace_s >= 0 && c->timeout_s > 0 && c->backoff_max_s > 0 && c->fence_s >= 0 &&
           (!c->watch_ops || watch_config_check(c->watch_ops, &c->watch, NULL) == 0);
}

int node_run(const struct node_config *cfg)
{
    struct nd n = {0};
    sigset_t set, old;
    int rc = 0;

    if (!nd_config_ok(cfg))
        return ERR_INVAL;
    nd_sigset(&set, 0);
    sigprocmask(SIG_BLOCK, &set, &old);
#ifdef __linux__
    prctl(PR_SET_CHILD_SUBREAPER, 1);
#endif
    n.cfg = cfg;
    n.self = getpid();
    n.rng = 0x9e3779b97f4a7c15ULL ^ (uint64_t)n.self;
    for (const char *p = cfg->instance_id; *p; p++)
        n.rng = (n.rng ^ (unsigned char)*p) * 1099511628211ULL;
    n.rng |= 1;
    n.notice_deadline = NAN;
    n.notice_kill_by = INFINITY;
    n.report_retry_at = INFINITY;
    n.uid_wait_logged_at = -INFINITY;
    n.fork_fail_logged_at = -INFINITY;
    if (!(n.gpu_used = calloc((size_t)cfg->gpus, 1))) {
        rc = ERR_NOMEM;
        goto out;
    }
    if (cfg->run_as && node_run_as_span(cfg->run_as) > 0) {
        n.uid_job = calloc(node_run_as_span(cfg->run_as), sizeof(*n.uid_job));
        n.uid_stamp = calloc(node_run_as_span(cfg->run_as), sizeof(*n.uid_stamp));
        if (!n.uid_job || !n.uid_stamp) {
            rc = ERR_NOMEM;
            goto out;
        }
    }
    if ((rc = http_client_new(&n.http)) < 0)
        goto out;
    nd_load_token(&n);
    {
        unsigned char raw[16];

        if (crypto_random(raw, sizeof(raw)) == 0)
            crypto_hex(raw, sizeof(raw), n.agent);
    }
    nd_log(&n, LOG_INFO, NULL, "castor-node up: %d GPUs, controller %s%s%s", cfg->gpus, cfg->url,
           cfg->launch_token ? ", launch token " : "", cfg->launch_token ? cfg->launch_token : "");
    for (;;) {
        double now = nd_mono(), wait;
        struct timespec ts;
        siginfo_t si;
        int sig;

        if (!n.stopping && nd_watching(&n) && n.watch_pid == 0 && now >= n.watch_start_at)
            nd_watch_start(&n);
        nd_poll_signals(&n); /* and before each request, which may take timeout_s */
        if (!n.stopping && !n.registered && now >= n.next_register)
            nd_register(&n, now);
        nd_poll_signals(&n);
        if (!n.stopping && n.registered && n.notice_pending && now >= n.notice_retry_at)
            nd_send_notice(&n, now);
        nd_poll_signals(&n);
        if (!n.stopping && n.registered && now >= n.next_beat)
            nd_heartbeat(&n, now);
        now = nd_mono();
        nd_fence(&n, now);
        nd_reap(&n);
        if (!n.stopping && n.registered && now >= n.report_retry_at)
            nd_report_failures(&n, now);
        nd_reconcile(&n, now);
        if (n.stopping && !nd_live(&n))
            break;
        wait = nd_wait(&n, now);
        ts.tv_sec = (time_t)wait;
        ts.tv_nsec = (long)((wait - (double)ts.tv_sec) * 1e9);
        sig = sigtimedwait(&set, &si, &ts);
        if (sig > 0)
            nd_signal(&n, sig, &si);
    }
    /* a job's end not told yet: one more try before the agent goes (once it is gone no one
     * would tell, and the job would hold its GPUs) */
    if (n.ndones > 0 && n.registered) {
        nd_report_failures(&n, nd_mono());
        for (size_t i = 0; i < n.ndones; i++)
            nd_log(&n, LOG_WARN, n.dones[i].job,
                   "stopping with rank 0's end not told: the controller did not answer");
    }
    nd_watch_stop(&n);
    nd_kill_strays(&n);
    nd_log(&n, LOG_INFO, NULL, "castor-node stopped");
out:
    nd_watch_stop(&n);
    while (n.nreps > 0)
        nd_rep_remove(&n, n.nreps - 1);
    free(n.reps);
    while (n.ndones > 0)
        nd_done_remove(&n, n.ndones - 1);
    free(n.dones);
    free(n.gpu_used);
    for (size_t k = 0; n.uid_job && k < node_run_as_span(cfg->run_as); k++)
        free(n.uid_job[k]);
    free(n.uid_job);
    free(n.uid_stamp);
    node_assignment_clear(&n.want);
    http_client_free(n.http);
    agent_secret_free(n.own_token);
    watch_proof_clear(&n.proof);
    sigprocmask(SIG_SETMASK, &old, NULL);
    return rc;
}
