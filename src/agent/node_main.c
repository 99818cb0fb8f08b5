/* node_main.c: the castor-node program: its configuration from the environment (never argv: the
 * token is a secret), the GPU inventory probed in a short-lived child, then node_run. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/node.h"
#include "agent/watch.h"
#include "cuda/inventory.h"
#include "util/log.h"

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: castor-node [--help | --version]\n"
        "\n"
        "The agent on every instance: registers its GPUs with the controller, heartbeats,\n"
        "runs the replicas assigned to it and forwards preemption notices (SIGUSR1).\n"
        "Configured by the environment only (docs/local.md):\n"
        "  CASTOR_URL, CASTOR_INSTANCE_ID             required\n"
        "  CASTOR_NODE_TOKEN or CASTOR_NODE_TOKEN_FILE required (a file of mode 600)\n"
        "  CASTOR_JOB_TOKEN or CASTOR_JOB_TOKEN_FILE   handed to the replicas of a job\n"
        "                                              whose assignment has no token of its own\n"
        "  CASTOR_NODE_RUN_AS   a user to run the replicas as (castor-node as root)\n"
        "  CASTOR_NODE_RUN_AS_UIDS=FIRST-LAST   uids no account has, one per job on the node\n"
        "                       (with CASTOR_NODE_RUN_AS: its groups and HOME)\n"
        "  CASTOR_NODE_TOKEN_CACHE   a file keeping the node's own token for the next agent\n"
        "  CASTOR_LAUNCH_TOKEN, CASTOR_FAKE_GPUS=N[:GiB], CASTOR_NODE_HEARTBEAT_S (5),\n"
        "  CASTOR_NODE_GRACE_S (30), CASTOR_NODE_TIMEOUT_S (10), CASTOR_NODE_BACKOFF_MAX_S\n"
        "  (60), CASTOR_NODE_FENCE_S (0: off), CASTOR_NODE_MASTER_ADDR, CASTOR_NODE_ADDRESS "
        "(default: the local address\n"
        "  of the route to the controller), CASTOR_NODE_CA_FILE, CASTOR_NODE_PROVIDER,\n"
        "  CASTOR_NODE_OFFER, CASTOR_NODE_ZONE, CASTOR_NODE_MARKET, CASTOR_NODE_PRICE,\n"
        "  CASTOR_NODE_LOG_LEVEL (debug, info, warn, error), CASTOR_ALLREDUCE_BUSBW (bytes/s;\n"
        "  default: measured over two or more real GPUs with NCCL; handed to the replicas)\n"
        "The cloud's notices (docs/worker.md):\n"
        "  CASTOR_NODE_CLOUD (none, aws-imds, gce-metadata), CASTOR_NODE_METADATA_URL,\n"
        "  CASTOR_NODE_METADATA_TIMEOUT_S (2), CASTOR_NODE_METADATA_WAIT_S (10),\n"
        "  CASTOR_NODE_WATCH_INTERVAL_S (the cloud's: 5 or 1), CASTOR_NODE_REBALANCE\n"
        "  (notice, ignore); the registration carries the instance's signed identity\n"
        "  (CASTOR_NODE_ATTEST=off: not; CASTOR_NODE_AUDIENCE: a Compute Engine token's\n"
        "  audience, default CASTOR_URL)\n");
}

/* The signals castor-node takes (node_run) and waits for (its children's ends, SIGCHLD) at their
 * defaults: a disposition of SIG_IGN survives exec (a launcher that ignored SIGCHLD, a shell's
 * background job's SIGINT), and an ignored signal is discarded even while blocked: with SIGCHLD
 * ignored the kernel reaps the children unseen (the GPU probe's status is lost, a replica's end
 * never seen), with SIGTERM or SIGUSR1 a stop or a notice is lost. A hangup is ignored from the
 * start (node_run takes it and does nothing): at its default it would end castor-node before
 * node_run blocks it, nohup's SIG_IGN undone. The replicas get every default (nd_child). */
static void default_signals(void)
{
    const int sigs[] = {SIGCHLD, SIGTERM, SIGINT, SIGUSR1, SIGRTMIN + 1};
    struct sigaction act;

    memset(&act, 0, sizeof(act));
    act.sa_handler = SIG_DFL;
    sigemptyset(&act.sa_mask);
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        sigaction(sigs[i], &act, NULL);
    act.sa_handler = SIG_IGN;
    sigaction(SIGHUP, &act, NULL);
}

/* The cloud notice watch from the environment into cfg. */
static int watch_env(struct node_config *cfg, struct error *e)
{
    const char *cloud = getenv(WATCH_ENV_CLOUD), *rebalance = getenv(WATCH_ENV_REBALANCE);
    int rc;

    cfg->watch_ops = watch_find(cloud && cloud[0] ? cloud : "none");
    if (!cfg->watch_ops)
        return err_set(e, ERR_INVAL, WATCH_ENV_CLOUD, 0, 0,
                       "%s must be none, aws-imds or gce-metadata", WATCH_ENV_CLOUD);
    if (rebalance && rebalance[0] && strcmp(rebalance, "notice") != 0 &&
        strcmp(rebalance, "ignore") != 0)
        return err_set(e, ERR_INVAL, WATCH_ENV_REBALANCE, 0, 0, "%s must be notice or ignore",
                       WATCH_ENV_REBALANCE);
    cfg->rebalance_ignore = rebalance && strcmp(rebalance, "ignore") == 0;
    cfg->watch.endpoint = getenv(WATCH_ENV_ENDPOINT);
    if ((rc = agent_env_double(WATCH_ENV_TIMEOUT, 2, 0.05, 600, &cfg->watch.timeout_s, e)) < 0 ||
        (rc = agent_env_double(WATCH_ENV_WAIT, 10, 1, 3600, &cfg->watch.wait_s, e)) < 0 ||
        (rc = agent_env_double(WATCH_ENV_INTERVAL, 0, 0, 3600, &cfg->watch.interval_s, e)) < 0)
        return rc;
    return watch_config_check(cfg->watch_ops, &cfg->watch, e);
}

/* What the probe child measures: the GPUs, and the all-reduce bus bandwidth between them (bytes/s;
 * 0: not measured: fewer than two real GPUs, no NCCL, or it failed). */
struct node_probe {
    struct inventory inv;
    double busbw;
};

#define NODE_BW_BYTES (64u << 20) /* per timed all-reduce: large enough for the bandwidth term */
#define NODE_BW_ITERS 20

/* The inventory and the bandwidth, probed in a child: reading free memory creates a CUDA context
 * per device that would hold device memory for the agent's whole life. */
static int probe(struct node_probe *out)
{
    struct node_probe inv;
    int fds[2], status, rc = ERR_IO;
    size_t got = 0;
    pid_t pid;

    if (pipe(fds) != 0)
        return ERR_IO;
    pid = fork();
    if (pid == 0) {
        int r = inventory_probe(&inv.inv);
        const char *p = (const char *)&inv;
        size_t left = sizeof(inv);
        struct inventory_bw bw;

        close(fds[0]);
        if (r < 0)
            _exit(-r < 100 ? -r : 100);
        inv.busbw = 0.0;
        if (inv.inv.count >= 2 && !inv.inv.fake &&
            inventory_allreduce_bw(NULL, NODE_BW_BYTES, NODE_BW_ITERS, &bw) == 0)
            inv.busbw = bw.busbw;
        while (left > 0) {
            ssize_t w = write(fds[1], p, left);

            if (w <= 0)
                _exit(100);
            p += w;
            left -= (size_t)w;
        }
        _exit(0);
    }
    close(fds[1]);
    if (pid > 0) {
        ssize_t r;

        while (got < sizeof(inv) && (r = read(fds[0], (char *)&inv + got, sizeof(inv) - got)) > 0)
            got += (size_t)r;
        if (waitpid(pid, &status, 0) == pid && WIFEXITED(status)) {
            if (WEXITSTATUS(status) == 0 && got == sizeof(inv))
                rc = 0;
            else if (WEXITSTATUS(status) > 0 && WEXITSTATUS(status) < 100)
                rc = -WEXITSTATUS(status);
        }
    }
    close(fds[0]);
    if (rc == 0)
        *out = inv;
    return rc;
}

int main(int argc, char **argv)
{
    struct node_config cfg = {0};
    struct node_run_as run_as;
    struct node_probe probed = {0};
    struct inventory inv = {0};
    struct error e = {0};
    struct log *log = NULL;
    char *node_token = NULL, *job_token = NULL, address[256];
    int level = LOG_INFO;
    uint64_t mem = 0;
    int rc = 0, exit_code = 1;

    if (argc > 1) {
        if (strcmp(argv[1], "--version") == 0) {
            printf("castor-node %s\n", CASTOR_VERSION);
            return 0;
        }
        usage(strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ? stdout : stderr);
        return strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ? 0 : 2;
    }
    default_signals();
    cfg.url = getenv(NODE_ENV_URL);
    cfg.instance_id = getenv(NODE_ENV_INSTANCE);
    if (!cfg.url || !cfg.url[0] || !cfg.instance_id || !cfg.instance_id[0]) {
        fprintf(stderr, "castor-node: %s and %s must be set\n", NODE_ENV_URL, NODE_ENV_INSTANCE);
        return 1;
    }
    cfg.launch_token = getenv(NODE_ENV_LAUNCH_TOKEN);
    cfg.ca_file = getenv("CASTOR_NODE_CA_FILE");
    cfg.token_cache = getenv("CASTOR_NODE_TOKEN_CACHE");
    if (cfg.token_cache && !cfg.token_cache[0])
        cfg.token_cache = NULL;
    cfg.master_addr = getenv("CASTOR_NODE_MASTER_ADDR");
    /* where the replicas are reached: said, else the address of the route to the controller */
    cfg.address = getenv("CASTOR_NODE_ADDRESS");
    if ((!cfg.address || !cfg.address[0]) &&
        agent_route_address(cfg.url, address, sizeof(address)) == 0)
        cfg.address = address;
    cfg.provider = getenv("CASTOR_NODE_PROVIDER");
    cfg.offer = getenv("CASTOR_NODE_OFFER");
    cfg.zone = getenv("CASTOR_NODE_ZONE");
    cfg.market = getenv("CASTOR_NODE_MARKET");
    rc = agent_env_log_level("CASTOR_NODE_LOG_LEVEL", LOG_INFO, &level, &e);
    if (rc == 0)
        rc = agent_env_double("CASTOR_NODE_PRICE", NAN, 0, 1e6, &cfg.price, &e);
    if (rc == 0)
        rc = agent_env_double("CASTOR_NODE_HEARTBEAT_S", 5, 0.01, 3600, &cfg.heartbeat_s, &e);
    if (rc == 0)
        rc = agent_env_double("CASTOR_NODE_GRACE_S", 30, 0, 3600, &cfg.grace_s, &e);
    if (rc == 0)
        rc = agent_env_double("CASTOR_NODE_TIMEOUT_S", 10, 0.1, 600, &cfg.timeout_s, &e);
    if (rc == 0)
        rc = agent_env_double("CASTOR_NODE_BACKOFF_MAX_S", 60, 0.01, 3600, &cfg.backoff_max_s, &e);
    if (rc == 0)
        rc = agent_env_double("CASTOR_NODE_FENCE_S", 0, 0, 86400, &cfg.fence_s, &e);
    if (rc == 0)
        rc = watch_env(&cfg, &e);
    if (rc == 0 && getenv("CASTOR_NODE_ATTEST") && strcmp(getenv("CASTOR_NODE_ATTEST"), "off") &&
        strcmp(getenv("CASTOR_NODE_ATTEST"), "on"))
        rc = err_set(&e, ERR_INVAL, "CASTOR_NODE_ATTEST", 0, 0,
                     "CASTOR_NODE_ATTEST must be on or off");
    cfg.attest_off =
        getenv("CASTOR_NODE_ATTEST") && strcmp(getenv("CASTOR_NODE_ATTEST"), "off") == 0;
    cfg.audience = getenv("CASTOR_NODE_AUDIENCE");
    if (cfg.audience && !cfg.audience[0])
        cfg.audience = NULL;
    if (rc == 0 && getenv("CASTOR_NODE_RUN_AS") && getenv("CASTOR_NODE_RUN_AS")[0]) {
        const char *user = getenv("CASTOR_NODE_RUN_AS");

        rc = node_run_as_lookup(user, &run_as);
        if (rc == 0)
            cfg.run_as = &run_as;
        else
            err_set(&e, rc, "CASTOR_NODE_RUN_AS", 0, 0, "CASTOR_NODE_RUN_AS=%s: %s", user,
                    rc == ERR_UNKNOWN ? "no such user"
                    : rc == ERR_PERM  ? "castor-node must run as root to run the replicas as "
                                        "another user"
                                      : "not a user the replicas may run as (root, or too many "
                                        "groups)");
    }
    if (rc == 0 && getenv("CASTOR_NODE_RUN_AS_UIDS") && getenv("CASTOR_NODE_RUN_AS_UIDS")[0]) {
        char why[256];

        if (!cfg.run_as)
            rc = err_set(&e, ERR_INVAL, "CASTOR_NODE_RUN_AS_UIDS", 0, 0,
                         "CASTOR_NODE_RUN_AS_UIDS needs CASTOR_NODE_RUN_AS (the user whose "
                         "groups and HOME the jobs' own uids take)");
        else if ((rc = node_run_as_uids(getenv("CASTOR_NODE_RUN_AS_UIDS"), &run_as, why,
                                        sizeof(why))) < 0)
            err_set(&e, rc, "CASTOR_NODE_RUN_AS_UIDS", 0, 0, "CASTOR_NODE_RUN_AS_UIDS: %s", why);
    }
    if (rc == 0)
        rc = agent_env_secret(NODE_ENV_NODE_TOKEN, NODE_ENV_NODE_TOKEN_FILE, &node_token, &e);
    if (rc == 0 && !node_token)
        rc = err_set(&e, ERR_NOENT, NODE_ENV_NODE_TOKEN, 0, 0, "%s or %s must be set",
                     NODE_ENV_NODE_TOKEN, NODE_ENV_NODE_TOKEN_FILE);
    if (rc == 0)
        rc = agent_env_secret(NODE_ENV_JOB_TOKEN, NODE_ENV_JOB_TOKEN_FILE, &job_token, &e);
    if (rc == 0 && (rc = probe(&probed)) < 0)
        err_set(&e, rc, INVENTORY_FAKE_ENV, 0, 0, "the GPU inventory failed: %s", err_str(rc));
    inv = probed.inv;
    /* the replicas inherit it: libcastor's synchronisation prior (docs/worker.md); a value set by
     * hand wins */
    if (rc == 0 && probed.busbw > 0 && !getenv("CASTOR_ALLREDUCE_BUSBW")) {
        char bw[32];

        snprintf(bw, sizeof(bw), "%.6g", probed.busbw);
        setenv("CASTOR_ALLREDUCE_BUSBW", bw, 1);
    }
    if (rc == 0 && inv.count < 1)
        rc =
            err_set(&e, ERR_NODEV, NULL, 0, 0,
                    "no GPU found (set %s=N for fake GPUs): a node without GPUs is not schedulable",
                    INVENTORY_FAKE_ENV);
    if (rc < 0) {
        fprintf(stderr, "castor-node: %s\n", e.msg[0] ? e.msg : err_str(rc));
        goto out;
    }
    for (int i = 0; i < inv.count; i++)
        if (i == 0 || inv.gpu[i].total_bytes < mem)
            mem = inv.gpu[i].total_bytes;
    cfg.gpus = inv.count;
    cfg.gpu_memory_mib = (int)fmin((double)(mem >> 20), 16.0 * 1024 * 1024);
    cfg.node_token = node_token;
    cfg.job_token = job_token;
    if (log_new(stderr, (enum log_level)level, &log) < 0)
        goto out;
    cfg.log = log;
    rc = node_run(&cfg);
    if (rc < 0)
        fprintf(stderr, "castor-node: %s\n", err_str(rc));
    else
        exit_code = 0;
out:
    agent_secret_free(node_token);
    agent_secret_free(job_token);
    log_free(log);
    return exit_code;
}
