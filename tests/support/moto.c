/* moto.c: moto_server started for tests, with an IAM user of its own (see moto.h). */
#define _XOPEN_SOURCE 700 /* support/world.h: nftw */
#include "support/moto.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "support/process.h"
#include "support/world.h"
#include "util/http_client.h"
#include "util/sigv4.h"
#include "util/xml.h"

/* moto authenticates every action after the first INITIAL_NO_AUTH_ACTION_COUNT ones, against
 * access keys of IAM users it knows; it knows none at start, so the count is exactly the three
 * actions that create one (CreateUser, CreateAccessKey, PutUserPolicy). Every EC2 request after
 * them is verified. */
#define BOOTSTRAP_ACTIONS "3"

/* 1 once something accepts connections on port. */
static int moto_listening(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int fd = socket(AF_INET, SOCK_STREAM, 0), ok;

    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
    if (fd >= 0)
        close(fd);
    return ok;
}

/* One IAM Query call, signed (moto does not check it during the bootstrap), its answer parsed
 * into *out; 0 or -1. */
static int moto_iam(const struct moto *m, const char *form, struct xml_doc **out)
{
    struct http_client *http = NULL;
    struct http_client_url u;
    const char *type = "application/x-www-form-urlencoded; charset=utf-8";
    struct sigv4_header sh[2] = {{"Host", NULL}, {"Content-Type", type}};
    struct sigv4_request sr = {"POST", "/", NULL, sh, 2, form, strlen(form)};
    struct sigv4_credentials sc = {"AKIDBOOTSTRAP", "bootstrap", NULL};
    struct sigv4_params sp = {"us-east-1", "iam", (int64_t)time(NULL), SIGV4_NORMALIZE_PATH, NULL};
    struct sigv4_signed s = {0};
    struct http_client_header hs[4];
    struct http_client_request req = {0};
    struct http_client_response r = {0};
    int rc = -1;

    if (http_client_parse_url(m->url, &u) < 0)
        return -1;
    sh[0].value = u.authority;
    if (sigv4_sign(&sr, &sc, &sp, &s) < 0)
        return -1;
    hs[0] = (struct http_client_header){"Host", u.authority};
    hs[1] = (struct http_client_header){"Content-Type", type};
    hs[2] = (struct http_client_header){"X-Amz-Date", s.amz_date};
    hs[3] = (struct http_client_header){"Authorization", s.authorization};
    req = (struct http_client_request){.method = "POST",
                                       .url = m->url,
                                       .headers = hs,
                                       .nheaders = 4,
                                       .body = form,
                                       .body_len = strlen(form),
                                       .timeout_ms = 10000};
    if (http_client_new(&http) == 0 && http_client_do(http, &req, &r, NULL) == 0) {
        if (r.status != 200)
            fprintf(stderr, "moto: IAM answered %ld: %s\n", r.status, r.body);
        else if (xml_parse(r.body, r.body_len, out, NULL) == 0)
            rc = 0;
    }
    http_client_response_clear(&r);
    sigv4_signed_free(&s);
    http_client_free(http);
    return rc;
}

/* Create the IAM user whose key the tests sign with, allowed every EC2 action and the two
 * Service Quotas reads castor makes (servicequotas:GetServiceQuota, GetAWSDefaultServiceQuota). */
static int moto_user(struct moto *m)
{
    const char *policy =
        "%7B%22Version%22%3A%222012-10-17%22%2C%22Statement%22%3A%5B%7B%22Effect%22%3A%22Allow%"
        "22%2C%22Action%22%3A%5B%22ec2%3A%2A%22%2C%22servicequotas%3AGetServiceQuota%22%2C%22se"
        "rvicequotas%3AGetAWSDefaultServiceQuota%22%5D%2C%22Resource%22%3A%22%2A%22%7D%5D%7D";
    struct xml_doc *doc = NULL;
    char form[768];
    int rc;

    if (moto_iam(m, "Action=CreateUser&Version=2010-05-08&UserName=castor", &doc) < 0)
        return -1;
    xml_free(doc);
    doc = NULL;
    if (moto_iam(m, "Action=CreateAccessKey&Version=2010-05-08&UserName=castor", &doc) < 0)
        return -1;
    rc = xml_copy(xml_root(doc), "CreateAccessKeyResult/AccessKey/AccessKeyId", m->akid,
                  sizeof(m->akid)) < 0 ||
                 xml_copy(xml_root(doc), "CreateAccessKeyResult/AccessKey/SecretAccessKey",
                          m->secret, sizeof(m->secret)) < 0
             ? -1
             : 0;
    xml_free(doc);
    doc = NULL;
    snprintf(form, sizeof(form),
             "Action=PutUserPolicy&Version=2010-05-08&UserName=castor&PolicyName=ec2&"
             "PolicyDocument=%s",
             policy);
    if (rc < 0 || moto_iam(m, form, &doc) < 0)
        return -1;
    xml_free(doc);
    return 0;
}

int moto_find(const char *data_dir, char *buf, size_t size)
{
    const char *path = getenv("CASTOR_MOTO_SERVER");

    if (path && *path)
        snprintf(buf, size, "%s", path);
    else
        snprintf(buf, size, "%s/../../.venv/bin/moto_server", data_dir);
    return access(buf, X_OK) == 0;
}

/* moto_server is started with proc_spawn, which builds its environment before fork and makes only
 * async-signal-safe calls in the child: setenv there (what this did before) mallocs, and a child
 * forked while another thread of the test held a lock of the allocator (GCC 12's libasan takes
 * none around fork) would wait on it forever. Today's callers start moto before any thread, but
 * this is shared. The log is this process's stdout and stderr when CASTOR_MOTO_VERBOSE is set,
 * else /dev/null; the caller owns m->pid. */
int moto_start(const char *path, struct moto *m)
{
    static const char *const env[] = {"INITIAL_NO_AUTH_ACTION_COUNT=" BOOTSTRAP_ACTIONS, NULL};
    char port_s[16];
    char *argv[] = {(char *)path, "-H", "127.0.0.1", "-p", port_s, NULL};
    int port = world_free_port();

    memset(m, 0, sizeof(*m));
    m->pid = -1;
    if (port < 0)
        return -1;
    snprintf(port_s, sizeof(port_s), "%d", port);
    snprintf(m->url, sizeof(m->url), "http://127.0.0.1:%d", port);
    m->pid =
        proc_spawn(path, argv, NULL, getenv("CASTOR_MOTO_VERBOSE") ? NULL : "/dev/null", env, NULL);
    if (m->pid < 0)
        return -1;
    for (int i = 0; i < 300 && !moto_listening(port); i++) {
        int status;

        if (waitpid(m->pid, &status, WNOHANG) == m->pid) {
            fprintf(stderr, "moto_server exited before listening (status %d)\n", status);
            m->pid = -1;
            return -1;
        }
        nanosleep(&(struct timespec){0, 100000000L}, NULL);
    }
    if (!moto_listening(port) || moto_user(m) < 0) {
        fprintf(stderr, "moto_server at %s did not start or make its user\n", m->url);
        moto_stop(m);
        return -1;
    }
    return 0;
}

void moto_stop(struct moto *m)
{
    if (m->pid > 0) {
        /* moto_server exits on SIGTERM by raising SystemExit, which then waits for its request
         * threads: one still holding a connection can keep it alive, so it is SIGKILLed after
         * 10 s (a bare waitpid hung a test until its 300 s timeout once) */
        kill(m->pid, SIGTERM);
        proc_wait_exit(m->pid, 10);
    }
    m->pid = -1;
}

int moto_missing(const char *test, const char *path)
{
    const char *ci = getenv("CI");

    if (ci && *ci) {
        fprintf(stderr, "%s: %s is missing; CI must run scripts/test-venv\n", test, path);
        return 1;
    }
    fprintf(stderr, "%s: SKIPPED: %s is missing (run scripts/test-venv)\n", test, path);
    return 77;
}

struct moto moto_group = {.pid = -1};

int moto_group_start(void **state)
{
    char path[1024];

    (void)state;
    moto_find(CASTOR_TEST_DATA, path, sizeof(path));
    return moto_start(path, &moto_group);
}

int moto_group_stop(void **state)
{
    (void)state;
    moto_stop(&moto_group);
    return 0;
}
