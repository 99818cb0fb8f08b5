/* run_as.h: who a node's replicas run as: an unprivileged user (CASTOR_NODE_RUN_AS), so that a
 * job's code cannot read the node's token, the agent's memory or environment, or signal it; and,
 * with a range of uids no account uses (CASTOR_NODE_RUN_AS_UIDS), a uid of its own per job, so
 * that two jobs on one node cannot read each other's memory, environment (their job tokens) or
 * files either. */
#ifndef CASTOR_AGENT_RUN_AS_H
#define CASTOR_AGENT_RUN_AS_H

#include <stddef.h>
#include <sys/types.h>

#define NODE_RUN_AS_GROUPS 64
/* The most uids a range may hold. */
#define NODE_RUN_AS_UIDS_MAX 65536

struct node_run_as {
    uid_t uid;
    gid_t gid;
    gid_t groups[NODE_RUN_AS_GROUPS]; /* its supplementary groups, the primary one included */
    int ngroups;
    char user[64];
    char home[256];
    /* a uid per job from uid_first to uid_last (the user's group, groups and HOME); 0, 0: every
     * job runs as uid */
    uid_t uid_first, uid_last;
};

/*
 * Look user (a name) up for the replicas (node_config.run_as), from the password and group
 * databases, while the agent starts (a child between fork and exec may not read them); no uid
 * range. ERR_UNKNOWN: no such user; ERR_INVAL: a name too long, root (uid 0), or more than
 * NODE_RUN_AS_GROUPS groups; ERR_PERM: this process cannot change to it (not root). *out is
 * written only on success.
 */
int node_run_as_lookup(const char *user, struct node_run_as *out);

/*
 * Give u (looked up) the uid range text, "FIRST-LAST" (decimal, 1 <= FIRST <= LAST, at most
 * NODE_RUN_AS_UIDS_MAX uids, below 2^31 - 1), for a uid per job. No uid of the range may belong to
 * an account (the password database): a job's code would run as that account and own its files.
 * ERR_PARSE: not a range; ERR_RANGE: out of those bounds; ERR_CONFLICT: an account holds one of
 * them. The reason goes to why (size bytes; may be NULL). u is changed only on success.
 */
int node_run_as_uids(const char *text, struct node_run_as *u, char *why, size_t size);

/* How many uids u's range holds (0: no range). Pure. */
size_t node_run_as_span(const struct node_run_as *u);

/*
 * Which uids of u's range the processes of this machine run as now (real or effective, from
 * /proc): busy[i] set for uid_first + i (busy holds node_run_as_span(u) bytes, all written).
 * ERR_IO: /proc cannot be read (busy untouched; Linux's /proc only).
 */
int node_run_as_busy(const struct node_run_as *u, unsigned char *busy);

#endif
