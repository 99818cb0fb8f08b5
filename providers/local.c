/* local.c: the local cloud: castor-node processes on this machine, recorded in a run folder. */
#include "providers/local.h"

#include <dirent.h>
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

#include "util/env.h"
#include "util/file.h"

extern char **environ;

#define LOCAL_PRUNE_S 3600.0 /* a gone record is dropped after this */
#define LOCAL_LOST_S 30.0    /* a record without a process this long after launch is gone */

struct local {
    char *run_dir, *node_bin, *url, *node_token_file, *job_token_file;
    struct local_offer *offers;
    size_t noffers;
    double grace_s;
    char **env;
};

enum lrec_state { LR_PENDING, LR_RUNNING, LR_NOTICED, LR_TERMINATING, LR_GONE };

static const char *const lrec_names[] = {"pending", "running", "noticed", "terminating", "gone"};

/* One instance's record: run_dir/<id>.instance, "key=value" lines. */
struct lrec {
    char id[CLOUD_ID_MAX];
    char cluster[CLOUD_ID_MAX];
    char offer[CLOUD_NAME_MAX];
    char token[CLOUD_ID_MAX];
    long pid;                 /* 0 before the fork */
    unsigned long long start; /* the process's start time (clock ticks since boot) */
    enum lrec_state state;
    double launched;
    double ends;    /* noticed: when the notice ends */
    double kill_at; /* terminating: when SIGKILL follows */
    double gone_at;
};

static double local_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* 1 for 1 .. CLOUD_ID_MAX - 1 characters of A-Za-z0-9._- (extra: more allowed characters). */
static int local_name_ok(const char *s, size_t max, const char *extra)
{
    size_t n = s ? strlen(s) : 0;

    if (n == 0 || n >= max)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];

        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '.' || ch == '_' || ch == '-' || (extra && strchr(extra, ch))))
            return 0;
    }
    return 1;
}

/* ---- processes (Linux /proc) ---- */

/* The state letter, session and start time of pid from /proc/<pid>/stat. 0, or -1 when there is
 * no such process. */
static int local_proc_stat(long pid, char *state, long *session, unsigned long long *start)
{
    char path[64], buf[1024], *p;
    unsigned long long v[20];
    FILE *f;
    size_t n;
    int i = 0;

    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    if (!(f = fopen(path, "r")))
        return -1;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    if (!(p = strrchr(buf, ')')) || p[1] != ' ' || !p[2])
        return -1;
    *state = p[2];
    p += 3;
    /* after the state: ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime
     * stime cutime cstime priority nice threads itrealvalue starttime */
    while (i < 19 && *p) {
        char *end;

        v[i++] = strtoull(p, &end, 10);
        if (end == p)
            return -1;
        p = end;
    }
    if (i < 19)
        return -1;
    *session = (long)v[2];
    *start = v[18];
    return 0;
}

/* 1 when rec's process runs: reaped first if it is our child, then the same start time and not
 * a zombie. */
static int local_alive(const struct lrec *r)
{
    unsigned long long start;
    long session;
    char st;
    int status;

    if (r->pid <= 0)
        return 0;
    waitpid((pid_t)r->pid, &status, WNOHANG);
    if (local_proc_stat(r->pid, &st, &session, &start) < 0)
        return 0;
    return start == r->start && st != 'Z' && st != 'X';
}

/* SIGKILL every process of r's session (the instance: its node and everything it started), then
 * reap the node if it is our child. A process that took the node's pid since is spared, and so is
 * its session: Linux gives out no pid still in use as a session id, so once the pid is another
 * process's, nothing of the node's session is left and a session of that id is the new one's. */
static void local_kill_instance(const struct lrec *r)
{
    DIR *d;
    struct dirent *de;
    int status, leader = 0;
    unsigned long long now_start;
    long now_session;
    char now_st;

    if (r->pid <= 1)
        return;
    if (local_proc_stat(r->pid, &now_st, &now_session, &now_start) == 0 && now_start != r->start)
        return;
    d = opendir("/proc");
    while (d && (de = readdir(d))) {
        char *end, st;
        long pid = strtol(de->d_name, &end, 10), session;
        unsigned long long start;

        if (*end || pid <= 1 || local_proc_stat(pid, &st, &session, &start) < 0 ||
            session != r->pid || (pid == r->pid && start != r->start))
            continue;
        kill((pid_t)pid, SIGKILL);
        leader |= pid == r->pid;
    }
    if (d)
        closedir(d);
    waitpid((pid_t)r->pid, &status, leader ? 0 : WNOHANG);
}

/* ---- records ---- */

static void local_path(const struct local *l, const char *id, const char *suffix, char *buf,
                       size_t size)
{
    snprintf(buf, size, "%s/%s%s", l->run_dir, id, suffix);
}

/* The record's text into buf; its length. */
static int local_rec_text(const struct lrec *r, char *buf, size_t size)
{
    return snprintf(buf, size,
                    "id=%s\ncluster=%s\noffer=%s\ntoken=%s\npid=%ld\nstart=%llu\nstate=%s\n"
                    "launched=%.6f\nends=%.6f\nkill_at=%.6f\ngone_at=%.6f\n",
                    r->id, r->cluster, r->offer, r->token, r->pid, r->start, lrec_names[r->state],
                    r->launched, r->ends, r->kill_at, r->gone_at);
}

static int local_rec_write(const struct local *l, const struct lrec *r)
{
    char path[4096], text[1024];
    int n = local_rec_text(r, text, sizeof(text));

    local_path(l, r->id, ".instance", path, sizeof(path));
    return file_write_atomic(path, text, (size_t)n, 0600, NULL);
}

/* Copy value into dst (size bytes); -1 when it does not fit. */
static int local_copy(char *dst, size_t size, const char *value)
{
    if (strlen(value) >= size)
        return -1;
    memcpy(dst, value, strlen(value) + 1);
    return 0;
}

static int local_rec_parse(char *text, struct lrec *r)
{
    int seen = 0;

    memset(r, 0, sizeof(*r));
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char *eq = strchr(line, '='), *v, *end = NULL;

        if (!eq)
            return ERR_IO;
        *eq = '\0';
        v = eq + 1;
        if (strcmp(line, "id") == 0)
            seen |= local_copy(r->id, sizeof(r->id), v) == 0 ? 1 : 0;
        else if (strcmp(line, "cluster") == 0)
            seen |= local_copy(r->cluster, sizeof(r->cluster), v) == 0 ? 2 : 0;
        else if (strcmp(line, "offer") == 0)
            seen |= local_copy(r->offer, sizeof(r->offer), v) == 0 ? 4 : 0;
        else if (strcmp(line, "token") == 0)
            seen |= local_copy(r->token, sizeof(r->token), v) == 0 ? 8 : 0;
        else if (strcmp(line, "pid") == 0)
            r->pid = strtol(v, &end, 10);
        else if (strcmp(line, "start") == 0)
            r->start = strtoull(v, &end, 10);
        else if (strcmp(line, "launched") == 0)
            r->launched = strtod(v, &end);
        else if (strcmp(line, "ends") == 0)
            r->ends = strtod(v, &end);
        else if (strcmp(line, "kill_at") == 0)
            r->kill_at = strtod(v, &end);
        else if (strcmp(line, "gone_at") == 0)
            r->gone_at = strtod(v, &end);
        else if (strcmp(line, "state") == 0) {
            for (int s = LR_PENDING; s <= LR_GONE; s++)
                if (strcmp(v, lrec_names[s]) == 0) {
                    r->state = (enum lrec_state)s;
                    seen |= 16;
                }
        }
        if (end && (end == v || *end))
            return ERR_IO;
    }
    return seen == 31 ? 0 : ERR_IO;
}

static int local_rec_read(const struct local *l, const char *id, struct lrec *r)
{
    char path[4096], *text = NULL;
    size_t len = 0;
    int rc;

    local_path(l, id, ".instance", path, sizeof(path));
    rc = file_read_all(path, &text, &len, NULL);
    if (rc == ERR_NOENT)
        return ERR_UNKNOWN;
    if (rc < 0)
        return rc;
    rc = local_rec_parse(text, r);
    free(text);
    return rc;
}

/* The number N of an id "local-N", or 0 for another id. */
static long local_id_number(const char *id)
{
    char *end;
    long k;

    if (strncmp(id, "local-", 6) != 0 || id[6] < '0' || id[6] > '9')
        return 0;
    k = strtol(id + 6, &end, 10);
    return *end || k < 0 ? 0 : k;
}

/* The highest id number of a record dropped (run_dir/.dropped), 0 when none was. */
static long local_dropped(const struct local *l)
{
    char path[4096], *text = NULL;
    size_t len = 0;
    long k = 0;

    local_path(l, ".dropped", "", path, sizeof(path));
    if (file_read_all(path, &text, &len, NULL) == 0) {
        k = strtol(text, NULL, 10);
        free(text);
    }
    return k > 0 ? k : 0;
}

/* Raise the highest id number dropped to that of id, before its record goes: so that no launch
 * takes an id again (the controller's state keeps every instance it knew). */
static int local_drop_mark(const struct local *l, const char *id)
{
    char path[4096], text[32];
    long k = local_id_number(id);
    int n;

    if (k <= local_dropped(l))
        return 0;
    local_path(l, ".dropped", "", path, sizeof(path));
    n = snprintf(text, sizeof(text), "%ld\n", k);
    return file_write_atomic(path, text, (size_t)n, 0600, NULL) < 0 ? ERR_IO : 0;
}

/* Bring r up to date with its process: a process that ended makes it gone (its session swept);
 * a termination whose grace has passed SIGKILLs the session. Saves what changed. */
static int local_rec_refresh(const struct local *l, struct lrec *r, double now)
{
    int alive;

    if (r->state == LR_GONE)
        return 0;
    alive = local_alive(r);
    if (alive && r->state == LR_TERMINATING && now >= r->kill_at) {
        local_kill_instance(r);
        alive = 0;
    }
    if (alive || (r->pid == 0 && now < r->launched + LOCAL_LOST_S))
        return 0;
    if (r->pid > 0)
        local_kill_instance(r); /* what the node left behind goes with it */
    r->state = LR_GONE;
    r->gone_at = now;
    return local_rec_write(l, r);
}

/* Every record in the run folder, refreshed; *out (malloc'd, n entries) is the caller's. */
static int local_recs(struct local *l, struct lrec **out, size_t *n)
{
    DIR *d = opendir(l->run_dir);
    struct lrec *v = NULL;
    struct dirent *de;
    size_t k = 0, cap = 0;
    double now = local_now();
    int rc = 0;

    if (!d)
        return ERR_IO;
    while (rc == 0 && (de = readdir(d))) {
        size_t len = strlen(de->d_name);
        char id[CLOUD_ID_MAX];

        if (len <= 9 || strcmp(de->d_name + len - 9, ".instance") != 0 || len - 9 >= sizeof(id))
            continue;
        memcpy(id, de->d_name, len - 9);
        id[len - 9] = '\0';
        if (k == cap) {
            struct lrec *grown = realloc(v, (cap = cap ? 2 * cap : 16) * sizeof(*v));

            if (!grown) {
                rc = ERR_NOMEM;
                break;
            }
            v = grown;
        }
        rc = local_rec_read(l, id, &v[k]);
        if (rc == 0)
            rc = local_rec_refresh(l, &v[k], now);
        if (rc == 0 && v[k].state == LR_GONE && now > v[k].gone_at + LOCAL_PRUNE_S &&
            local_drop_mark(l, id) == 0) {
            char path[4096];

            local_path(l, id, ".instance", path, sizeof(path));
            unlink(path);
            local_path(l, id, ".log", path, sizeof(path));
            unlink(path);
            continue;
        }
        if (rc == 0)
            k++;
    }
    closedir(d);
    if (rc < 0) {
        free(v);
        return rc;
    }
    *out = v;
    *n = k;
    return 0;
}

/* ---- the ops ---- */

static int local_offers(void *ctx, struct cloud_offer **out, size_t *n)
{
    struct local *l = ctx;
    struct cloud_offer *v = calloc(l->noffers ? l->noffers : 1, sizeof(*v));

    if (!v)
        return ERR_NOMEM;
    for (size_t i = 0; i < l->noffers; i++) {
        memcpy(v[i].name, l->offers[i].name, sizeof(v[i].name));
        v[i].gpus = l->offers[i].gpus;
        v[i].spot = l->offers[i].spot;
        v[i].price = l->offers[i].price;
    }
    *out = v;
    *n = l->noffers;
    return 0;
}

static int local_list(void *ctx, const char *cluster, struct cloud_instance **out, size_t *n)
{
    static const enum cloud_state map[] = {[LR_PENDING] = CLOUD_PENDING,
                                           [LR_RUNNING] = CLOUD_RUNNING,
                                           [LR_NOTICED] = CLOUD_NOTICED,
                                           [LR_TERMINATING] = CLOUD_RUNNING,
                                           [LR_GONE] = CLOUD_GONE};
    struct lrec *recs = NULL;
    struct cloud_instance *v;
    size_t nr = 0, k = 0;
    int rc = local_recs(ctx, &recs, &nr);

    if (rc < 0)
        return rc;
    if (!(v = calloc(nr ? nr : 1, sizeof(*v)))) {
        free(recs);
        return ERR_NOMEM;
    }
    for (size_t i = 0; i < nr; i++) {
        if (!cluster || strcmp(recs[i].cluster, cluster) != 0)
            continue;
        memcpy(v[k].id, recs[i].id, sizeof(v[k].id));
        memcpy(v[k].offer, recs[i].offer, sizeof(v[k].offer));
        memcpy(v[k].token, recs[i].token, sizeof(v[k].token));
        v[k].state = map[recs[i].state];
        v[k].launched = recs[i].launched;
        v[k].ends = recs[i].state == LR_NOTICED ? recs[i].ends : 0;
        k++;
    }
    free(recs);
    *out = v;
    *n = k;
    return 0;
}

/* Claim the next free id "local-N", above every id recorded or dropped, by linking its whole first
 * record into place (the link fails when the id is taken). */
static int local_claim(struct local *l, struct lrec *r, const struct lrec *recs, size_t nr)
{
    char tmp[4096], path[4096], text[1024];
    long next = local_dropped(l); /* above every id given, dropped records' included */
    int rc;

    for (size_t i = 0; i < nr; i++) {
        long k = local_id_number(recs[i].id);

        if (k > next)
            next = k;
    }
    snprintf(tmp, sizeof(tmp), "%s/.claim-%ld", l->run_dir, (long)getpid());
    for (int tries = 0; tries < 1000; tries++) {
        snprintf(r->id, sizeof(r->id), "local-%ld", ++next);
        local_path(l, r->id, ".instance", path, sizeof(path));
        if (file_write_atomic(tmp, text, (size_t)local_rec_text(r, text, sizeof(text)), 0600,
                              NULL) < 0)
            return ERR_IO;
        rc = link(tmp, path);
        unlink(tmp);
        if (rc == 0)
            return 0;
        if (errno != EEXIST)
            return ERR_IO;
    }
    return ERR_IO;
}

/* from as descriptor to in a child about to exec: dup2, or, when from is to already (the
 * controller had that number free when it opened the file), its close-on-exec flag cleared
 * (dup2 onto itself would leave it, and the descriptor would close at exec). -1 on failure. */
static int local_dup_to(int from, int to)
{
    return from == to ? fcntl(to, F_SETFD, 0) : dup2(from, to);
}

/* Between fork and exec: a session of its own (the instance), plain signals, the log as output,
 * no descriptor of the controller's (those below max_fd, which the parent worked out). The
 * controller has threads (the API server's), so only async-signal-safe calls: local_spawn built
 * env and asked sysconf (not on POSIX's list) before fork. log is never 0 (in, opened first, would
 * have taken it), so in reaches 0 before 1 and 2 are written over. */
static void local_child(const char *bin, char **env, int in, int log, long max_fd)
{
    static const int sigs[] = {SIGPIPE, SIGHUP, SIGTERM, SIGINT, SIGUSR1, SIGCHLD};
    char *const argv[] = {"castor-node", NULL};
    sigset_t none;

    setsid();
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        signal(sigs[i], SIG_DFL);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (local_dup_to(in, 0) < 0 || local_dup_to(log, 1) < 0 || local_dup_to(log, 2) < 0)
        _exit(126);
    for (long fd = 3; fd < max_fd; fd++)
        close((int)fd);
    execve(bin, argv, env);
    _exit(127);
}

/* The node's environment: this process's without the user and metrics tokens, then the
 * instance's settings, then the configured extras. */
static int local_skip(const char *entry)
{
    return strncmp(entry, "CASTOR_USER_TOKEN", 17) == 0 ||
           strncmp(entry, "CASTOR_METRICS_TOKEN", 20) == 0;
}

static int local_node_env(const struct local *l, const struct local_offer *o, const struct lrec *r,
                          char ***out)
{
    struct env_list e = {0};
    char buf[64];
    int rc = env_list_put_all(&e, (const char *const *)environ, local_skip);

    if (o->gpu_gib > 0)
        snprintf(buf, sizeof(buf), "%d:%d", o->gpus, o->gpu_gib);
    else
        snprintf(buf, sizeof(buf), "%d", o->gpus);
    if (rc == 0)
        rc = env_list_set(&e, "CASTOR_FAKE_GPUS", buf);
    if (rc == 0)
        rc = env_list_set(&e, "CASTOR_URL", l->url);
    if (rc == 0)
        rc = env_list_set(&e, "CASTOR_INSTANCE_ID", r->id);
    if (rc == 0)
        rc = env_list_set(&e, "CASTOR_CLUSTER", r->cluster);
    if (rc == 0)
        rc = env_list_set(&e, "CASTOR_LAUNCH_TOKEN", r->token);
    if (rc == 0)
        rc = env_list_set(&e, "CASTOR_NODE_PROVIDER", "local");
    if (rc == 0)
        rc = env_list_set(&e, "CASTOR_NODE_OFFER", o->name);
    if (rc == 0)
        rc = env_list_set(&e, "CASTOR_NODE_ZONE", "local");
    if (rc == 0)
        rc = env_list_set(&e, "CASTOR_NODE_MARKET", o->spot ? "spot" : "on-demand");
    snprintf(buf, sizeof(buf), "%.17g", o->price);
    if (rc == 0)
        rc = env_list_set(&e, "CASTOR_NODE_PRICE", buf);
    if (rc == 0)
        rc = env_list_set(&e, "CASTOR_NODE_MASTER_ADDR", "127.0.0.1");
    if (rc == 0 && l->node_token_file)
        rc = env_list_set(&e, "CASTOR_NODE_TOKEN_FILE", l->node_token_file);
    if (rc == 0 && l->job_token_file)
        rc = env_list_set(&e, "CASTOR_JOB_TOKEN_FILE", l->job_token_file);
    if (rc == 0)
        rc = env_list_put_all(&e, (const char *const *)l->env, NULL);
    if (rc < 0) {
        env_list_clear(&e);
        return rc;
    }
    return (*out = env_list_take(&e)) ? 0 : ERR_NOMEM;
}

/* Fork and exec the node of r, recording its pid and start time. What the child needs (its
 * environment, descriptors, how many descriptors to close) is made here, before fork: the child
 * makes only async-signal-safe calls (local_child). */
static int local_spawn(struct local *l, const struct local_offer *o, struct lrec *r)
{
    char path[4096], **env = NULL, st;
    int in = -1, log = -1, rc;
    long session, max = sysconf(_SC_OPEN_MAX);
    pid_t pid;

    if ((rc = local_node_env(l, o, r, &env)) < 0)
        return rc;
    local_path(l, r->id, ".log", path, sizeof(path));
    in = open("/dev/null", O_RDONLY | O_CLOEXEC);
    log = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (in < 0 || log < 0) {
        rc = ERR_IO;
        goto out;
    }
    pid = fork();
    if (pid == 0)
        local_child(l->node_bin, env, in, log, max > 0 && max < 65536 ? max : 65536);
    if (pid < 0) {
        rc = errno == EAGAIN ? ERR_AGAIN : ERR_IO;
        goto out;
    }
    r->pid = pid;
    if (local_proc_stat(pid, &st, &session, &r->start) < 0)
        r->start = 0; /* gone already: the next list sees it */
    r->state = LR_RUNNING;
    rc = local_rec_write(l, r);
out:
    if (in >= 0)
        close(in);
    if (log >= 0)
        close(log);
    env_free(env);
    return rc;
}

static int local_launch(void *ctx, const char *offer, const char *cluster, const char *token,
                        char *id)
{
    struct local *l = ctx;
    const struct local_offer *o = NULL;
    struct lrec *recs = NULL, r = {0};
    size_t nr = 0;
    int live = 0, rc;

    if (!offer || !local_name_ok(cluster, CLOUD_ID_MAX, NULL) ||
        !local_name_ok(token, CLOUD_ID_MAX, NULL) || !id)
        return ERR_INVAL;
    for (size_t i = 0; i < l->noffers && !o; i++)
        if (strcmp(l->offers[i].name, offer) == 0)
            o = &l->offers[i];
    if (!o)
        return ERR_UNKNOWN;
    if ((rc = local_recs(l, &recs, &nr)) < 0)
        return rc;
    for (size_t i = 0; i < nr; i++) {
        if (strcmp(recs[i].token, token) == 0 && strcmp(recs[i].cluster, cluster) == 0) {
            memcpy(id, recs[i].id, CLOUD_ID_MAX); /* launched before: the same instance */
            goto out;
        }
        live += strcmp(recs[i].offer, offer) == 0 && recs[i].state != LR_GONE;
    }
    if (o->capacity >= 0 && live >= o->capacity) {
        rc = ERR_CAPACITY;
        goto out;
    }
    memcpy(r.cluster, cluster, strlen(cluster) + 1);
    memcpy(r.offer, o->name, sizeof(r.offer));
    memcpy(r.token, token, strlen(token) + 1);
    r.state = LR_PENDING;
    r.launched = local_now();
    if ((rc = local_claim(l, &r, recs, nr)) < 0)
        goto out;
    if ((rc = local_spawn(l, o, &r)) < 0) { /* never started: gone at once */
        r.state = LR_GONE;
        r.gone_at = local_now();
        local_rec_write(l, &r);
        goto out;
    }
    memcpy(id, r.id, CLOUD_ID_MAX);
out:
    free(recs);
    return rc;
}

static int local_terminate(void *ctx, const char *cluster, const char *id)
{
    struct local *l = ctx;
    struct lrec r;
    double now = local_now();
    int rc;

    if (!cluster || !local_name_ok(id, CLOUD_ID_MAX, NULL))
        return ERR_UNKNOWN;
    if ((rc = local_rec_read(l, id, &r)) < 0)
        return rc;
    if (strcmp(r.cluster, cluster) != 0)
        return ERR_UNKNOWN;
    if ((rc = local_rec_refresh(l, &r, now)) < 0 || r.state == LR_GONE || r.state == LR_TERMINATING)
        return rc;
    if (r.pid > 0)
        kill((pid_t)r.pid, SIGTERM);
    r.state = LR_TERMINATING;
    r.kill_at = now + l->grace_s;
    return local_rec_write(l, &r);
}

static void local_destroy(void *ctx)
{
    struct local *l = ctx;

    if (!l)
        return;
    free(l->run_dir);
    free(l->node_bin);
    free(l->url);
    free(l->node_token_file);
    free(l->job_token_file);
    free(l->offers);
    env_free(l->env);
    free(l);
}

static const struct cloud_ops local_ops = {
    .name = "local",
    .offers = local_offers,
    .list = local_list,
    .launch = local_launch,
    .terminate = local_terminate,
    .destroy = local_destroy,
};

static int local_config_ok(const struct local_config *c)
{
    if (!c || !c->run_dir || !c->run_dir[0] || !c->node_bin || !c->node_bin[0] || !c->url ||
        !c->url[0] || (c->noffers > 0 && !c->offers) || !(c->grace_s >= 0) || !isfinite(c->grace_s))
        return 0;
    for (size_t i = 0; i < c->noffers; i++) {
        const struct local_offer *o = &c->offers[i];

        if (!local_name_ok(o->name, CLOUD_NAME_MAX, "/:") || o->gpus < 1 || o->gpus > 64 ||
            o->gpu_gib < 0 || o->gpu_gib > 4096 || !(o->price >= 0) || !isfinite(o->price))
            return 0;
        for (size_t k = 0; k < i; k++)
            if (strcmp(c->offers[k].name, o->name) == 0)
                return 0;
    }
    for (size_t i = 0; c->env && c->env[i]; i++)
        if (!strchr(c->env[i], '=') || c->env[i][0] == '=')
            return 0;
    return 1;
}

static char *local_dup(const char *s)
{
    return s ? strdup(s) : NULL;
}

int cloud_local_new(const struct local_config *cfg, struct cloud *out)
{
    struct local *l;
    struct env_list e = {0};

    if (!local_config_ok(cfg) || !out)
        return ERR_INVAL;
    if (mkdir(cfg->run_dir, 0700) != 0 && errno != EEXIST)
        return ERR_IO;
    if (!(l = calloc(1, sizeof(*l))))
        return ERR_NOMEM;
    l->run_dir = local_dup(cfg->run_dir);
    l->node_bin = local_dup(cfg->node_bin);
    l->url = local_dup(cfg->url);
    l->node_token_file = local_dup(cfg->node_token_file);
    l->job_token_file = local_dup(cfg->job_token_file);
    l->noffers = cfg->noffers;
    l->grace_s = cfg->grace_s;
    l->offers = calloc(cfg->noffers ? cfg->noffers : 1, sizeof(*l->offers));
    if (l->offers && cfg->noffers)
        memcpy(l->offers, cfg->offers, cfg->noffers * sizeof(*l->offers));
    if (env_list_put_all(&e, cfg->env, NULL) == 0)
        l->env = env_list_take(&e);
    else
        env_list_clear(&e);
    if (!l->run_dir || !l->node_bin || !l->url || !l->offers || !l->env ||
        (cfg->node_token_file && !l->node_token_file) ||
        (cfg->job_token_file && !l->job_token_file)) {
        local_destroy(l);
        return ERR_NOMEM;
    }
    out->ops = &local_ops;
    out->ctx = l;
    return 0;
}

int local_preempt(struct cloud *c, const char *id, double notice_s)
{
    struct local *l;
    union sigval v;
    struct lrec r;
    struct timespec ts;
    int rc;

    if (!c || c->ops != &local_ops || !(notice_s >= 0 && notice_s <= 3600))
        return ERR_INVAL;
    l = c->ctx;
    if (!local_name_ok(id, CLOUD_ID_MAX, NULL))
        return ERR_UNKNOWN;
    if ((rc = local_rec_read(l, id, &r)) < 0 || (rc = local_rec_refresh(l, &r, local_now())) < 0)
        return rc;
    if (r.state == LR_GONE || r.pid <= 0)
        return ERR_UNKNOWN;
    v.sival_int = (int)lround(notice_s * 1000);
    if (sigqueue((pid_t)r.pid, SIGUSR1, v) != 0)
        return ERR_IO;
    r.state = LR_NOTICED;
    r.ends = local_now() + notice_s;
    if ((rc = local_rec_write(l, &r)) < 0)
        return rc;
    ts.tv_sec = (time_t)notice_s;
    ts.tv_nsec = (long)((notice_s - (double)ts.tv_sec) * 1e9);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
    local_kill_instance(&r);
    r.state = LR_GONE;
    r.gone_at = local_now();
    return local_rec_write(l, &r);
}
