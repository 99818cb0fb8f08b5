/* process.h: what the tests of real processes share: whether a pid is a live process (a zombie
 * is not), waiting for a condition with a deadline, and small file helpers. */
#ifndef CASTOR_TESTS_PROCESS_H
#define CASTOR_TESTS_PROCESS_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/env.h"

extern char **environ;

/* 1 when pid names a process that is not a zombie. */
static inline int proc_alive(pid_t pid)
{
    char path[64], buf[512], *p;
    FILE *f;
    size_t n;

    if (pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH))
        return 0;
    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    if (!(f = fopen(path, "r")))
        return 0;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    p = strrchr(buf, ')'); /* "pid (comm) S ...": the state after the command's ')' */
    return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

static inline double proc_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline void proc_sleep(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};

    nanosleep(&ts, NULL);
}

/* Poll cond(ctx) every 10 ms for up to timeout_s seconds; 1 when it became true. */
static inline int proc_wait_for(int (*cond)(void *ctx), void *ctx, double timeout_s)
{
    double end = proc_now() + timeout_s;

    do {
        if (cond(ctx))
            return 1;
        proc_sleep(0.01);
    } while (proc_now() < end);
    return cond(ctx);
}

/* A proc_wait_for condition: 1 when the process *(pid_t *)pid is gone (or a zombie). */
static inline int proc_gone(void *pid)
{
    return !proc_alive(*(pid_t *)pid);
}

/* 1 once pid is gone (or a zombie), within timeout_s; 0 if it is still alive then. For processes
 * that were sent SIGKILL: on a loaded machine one may take a moment to be scheduled and die. */
static inline int proc_wait_gone(pid_t pid, double timeout_s)
{
    return proc_wait_for(proc_gone, &pid, timeout_s);
}

/* waitpid with a deadline: the exit status (as waitpid's), or -1 when it did not end in time
 * (it is then SIGKILLed and reaped). */
static inline int proc_wait_exit(pid_t pid, double timeout_s)
{
    double end = proc_now() + timeout_s;
    int status;

    while (proc_now() < end) {
        if (waitpid(pid, &status, WNOHANG) == pid)
            return status;
        proc_sleep(0.01);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

/* The whole file at path as a new string, or NULL. */
static inline char *proc_slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf = NULL;
    size_t len = 0;

    if (!f)
        return NULL;
    if (getdelim(&buf, &len, '\0', f) < 0) {
        free(buf);
        buf = feof(f) ? strdup("") : NULL;
    }
    fclose(f);
    return buf;
}

/* Fork and exec bin with argv in folder dir (NULL: this one), stdout and stderr appended to
 * log (NULL: this process's kept), and "NAME=VALUE" settings added to the environment
 * (NULL-terminated lists, either may be NULL; env2's over env1's over this process's). The child's
 * pid, or -1 (a setting without '=', out of memory, fork failed); the child exits 126 or 127 when
 * it cannot start. The environment is built here, before fork: the tests fork from processes with
 * threads (the API server's), and a child may only make async-signal-safe calls until it execs.
 * setenv in the child (what this did before) mallocs, and under ASan (GCC 12's libasan does not
 * take its allocator's locks around fork) a child forked while another thread held an allocator
 * lock waited on it forever: castor-node never started, with an empty log. */
static inline pid_t proc_spawn(const char *bin, char *const argv[], const char *dir,
                               const char *log, const char *const *env1, const char *const *env2)
{
    const char *const *envs[2] = {env1, env2};
    struct env_list l = {0};
    char **env;
    pid_t pid;

    if (env_list_put_all(&l, (const char *const *)environ, NULL) < 0)
        goto fail;
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; envs[k] && envs[k][i]; i++)
            if (env_list_put(&l, envs[k][i]) < 0)
                goto fail;
    if (!(env = env_list_take(&l)))
        return -1;
    pid = fork();
    if (pid == 0) { /* async-signal-safe calls only */
        int fd = log ? open(log, O_WRONLY | O_CREAT | O_APPEND, 0600) : -1;

        if ((log && (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)) || (dir && chdir(dir) != 0))
            _exit(126);
        execve(bin, argv, env);
        _exit(127);
    }
    env_free(env);
    return pid;
fail:
    env_list_clear(&l);
    return -1;
}

/* The file at path on stderr under a title. */
static inline void proc_print_log(const char *title, const char *path)
{
    char *text = proc_slurp(path);

    fprintf(stderr, "---- %s ----\n%s\n", title, text ? text : "(none)");
    free(text);
}

/* With CASTOR_TEST_VERBOSE set: proc_print_log. */
static inline void proc_dump_log(const char *title, const char *path)
{
    if (getenv("CASTOR_TEST_VERBOSE"))
        proc_print_log(title, path);
}

#endif
