/* run_as.c: who a node's replicas run as: the user's lookup, the range of uids for a uid per job,
 * and which of those uids a process runs as now. */
#define _DEFAULT_SOURCE /* getgrouplist */
#include "agent/run_as.h"

#include <dirent.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/error.h"

int node_run_as_lookup(const char *user, struct node_run_as *out)
{
    struct node_run_as u = {0};
    struct passwd pw, *found = NULL;
    char buf[4096];
    int n = NODE_RUN_AS_GROUPS;

    if (!user || !user[0] || strlen(user) >= sizeof(u.user))
        return ERR_INVAL;
    if (getpwnam_r(user, &pw, buf, sizeof(buf), &found) != 0 || !found)
        return ERR_UNKNOWN;
    if (pw.pw_uid == 0 || strlen(pw.pw_dir) >= sizeof(u.home))
        return ERR_INVAL;
    if (getgrouplist(user, pw.pw_gid, u.groups, &n) < 0)
        return ERR_INVAL;
    if (geteuid() != 0)
        return ERR_PERM;
    u.uid = pw.pw_uid;
    u.gid = pw.pw_gid;
    u.ngroups = n;
    snprintf(u.user, sizeof(u.user), "%s", user);
    snprintf(u.home, sizeof(u.home), "%s", pw.pw_dir);
    *out = u;
    return 0;
}

/* One decimal uid at *p, advancing it: 0, or ERR_PARSE. */
static int ra_uid(const char **p, unsigned long long *out)
{
    char *end = NULL;
    unsigned long long v;

    if (**p < '0' || **p > '9')
        return ERR_PARSE;
    v = strtoull(*p, &end, 10);
    if (end - *p > 10)
        return ERR_PARSE;
    *p = end;
    *out = v;
    return 0;
}

int node_run_as_uids(const char *text, struct node_run_as *u, char *why, size_t size)
{
    unsigned long long first = 0, last = 0;
    const char *p = text;
    char buf[4096];

    if (!text || ra_uid(&p, &first) < 0 || *p++ != '-' || ra_uid(&p, &last) < 0 || *p) {
        if (why)
            snprintf(why, size, "\"%s\" is not a range of uids FIRST-LAST", text ? text : "");
        return ERR_PARSE;
    }
    if (first < 1 || last < first || last >= 2147483647ULL ||
        last - first >= NODE_RUN_AS_UIDS_MAX) {
        if (why)
            snprintf(why, size,
                     "%llu-%llu: uids from 1 to 2147483646, the first not above the last, at "
                     "most %d of them",
                     first, last, NODE_RUN_AS_UIDS_MAX);
        return ERR_RANGE;
    }
    for (unsigned long long id = first; id <= last; id++) {
        struct passwd pw, *found = NULL;

        if (getpwuid_r((uid_t)id, &pw, buf, sizeof(buf), &found) == 0 && found) {
            if (why)
                snprintf(why, size,
                         "uid %llu is the account %s's: a job would run as it and own its files",
                         id, pw.pw_name);
            return ERR_CONFLICT;
        }
    }
    u->uid_first = (uid_t)first;
    u->uid_last = (uid_t)last;
    return 0;
}

/* The real and effective uids of process dir (a /proc entry) into *real and *eff: 0, or -1 (it
 * has gone, or is not a process). */
static int ra_proc_uids(const char *dir, unsigned long long *real, unsigned long long *eff)
{
    char path[64], line[256];
    FILE *f;
    int rc = -1;

    snprintf(path, sizeof(path), "/proc/%s/status", dir);
    if (!(f = fopen(path, "r")))
        return -1;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, "Uid:", 4) == 0) {
            rc = sscanf(line + 4, "%llu %llu", real, eff) == 2 ? 0 : -1;
            break;
        }
    fclose(f);
    return rc;
}

size_t node_run_as_span(const struct node_run_as *u)
{
    return u->uid_last ? (size_t)(u->uid_last - u->uid_first) + 1 : 0;
}

int node_run_as_busy(const struct node_run_as *u, unsigned char *busy)
{
    size_t n = node_run_as_span(u);
    DIR *d = opendir("/proc");
    struct dirent *e;

    if (!d)
        return ERR_IO;
    memset(busy, 0, n);
    while ((e = readdir(d))) {
        unsigned long long ids[2];

        if (e->d_name[0] < '0' || e->d_name[0] > '9' || ra_proc_uids(e->d_name, &ids[0], &ids[1]))
            continue;
        for (int k = 0; k < 2; k++)
            if (ids[k] >= u->uid_first && ids[k] <= u->uid_last)
                busy[ids[k] - u->uid_first] = 1;
    }
    closedir(d);
    return 0;
}
