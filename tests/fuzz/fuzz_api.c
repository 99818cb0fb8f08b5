/* fuzz_api.c: libFuzzer target for the controller's API (api_handle in src/control/api.c, with
 * the JSON bodies read by src/util/json.c): each input is one request handed to the API in
 * memory, as the HTTP server would hand it, to a new API over a state database that holds what
 * was made at start (a node i-1 registered, a job a submitted and placed on it) and nothing else:
 * after a request that wrote (its WAL file is no longer empty) the file is copied afresh from
 * that template, so every run is reproducible from its input alone. Byte 0 picks the endpoint, byte
 * 1 the token (job a's and node i-1's own tokens and a forged one among them); the rest is the
 * body. Job specs
 * (POST /v1/jobs), node registrations, reports, checkpoints, notices, failures, downs and finishes
 * are all read from the fuzzed body. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "control/api.h"
#include "control/state.h"
#include "fuzz/fuzz_support.h"
#include "util/file.h"

#define FZ_NODE "node-token-0123456789abcdef"
#define FZ_JOB "job-token-0123456789abcdef"
#define FZ_USER "user-token-0123456789abcdef"
#define FZ_METRICS "metrics-token-0123456789abcdef"

static const struct {
    const char *method, *path;
} fz_routes[] = {
    {"POST", "/v1/nodes"},
    {"POST", "/v1/nodes/i-1/heartbeat"},
    {"GET", "/v1/nodes/i-1/assignment"},
    {"POST", "/v1/nodes/i-1/notice"},
    {"POST", "/v1/jobs/a/reports"},
    {"POST", "/v1/jobs/a/checkpoint"},
    {"POST", "/v1/jobs/a/finished"},
    {"GET", "/v1/jobs/a/allocation"},
    {"POST", "/v1/jobs"},
    {"GET", "/v1/jobs"},
    {"GET", "/v1/jobs/a"},
    {"DELETE", "/v1/jobs/a"},
    {"GET", "/v1/fleet"},
    {"GET", "/metrics"},
    {"POST", "/v1/nodes/i-1/failures"},
    {"POST", "/v1/nodes/i-1/down"},
    {"POST", "/v1/nodes/i-1/completions"},
};
#define FZ_NROUTES (sizeof(fz_routes) / sizeof(fz_routes[0]))

/* job a's and node i-1's own tokens, and one made under another job token
 * (LLVMFuzzerInitialize) */
static char fz_job_a[API_JOB_TOKEN_MAX + 8], fz_job_forged[API_JOB_TOKEN_MAX + 8];
static char fz_node_1[API_JOB_TOKEN_MAX + 8];
static const char *const fz_auth[] = {"Bearer " FZ_NODE,
                                      "Bearer " FZ_JOB,
                                      "Bearer " FZ_USER,
                                      "Bearer " FZ_METRICS,
                                      "Bearer wrong-token-0123456789abcdef",
                                      "Basic dXNlcjpwYXNz",
                                      fz_job_a,
                                      fz_job_forged,
                                      fz_node_1};
#define FZ_NAUTH (sizeof(fz_auth) / sizeof(fz_auth[0]))

static double fz_clock(void *ctx)
{
    (void)ctx;
    return 1714564800.0;
}

/* One request through api_handle; the answer is dropped. */
static void fz_call(struct api *a, const char *method, const char *path, const char *auth,
                    const char *body, size_t len)
{
    struct http_pair headers[2] = {{"Authorization", auth}, {"Content-Type", "application/json"}};
    struct http_request req = {.method = method,
                               .path = path,
                               .headers = headers,
                               .nheaders = 2,
                               .body = body,
                               .body_len = len};
    struct http_response resp = {0};

    api_handle(a, &req, &resp);
    if (resp.status < 100 || resp.status > 599)
        abort(); /* every request is answered with a status */
    if (getenv("FUZZ_API_VERBOSE"))
        fprintf(stderr, "%s %s -> %d %.*s\n", method, path, resp.status, (int)resp.body_len,
                resp.body ? resp.body : "");
    free(resp.body);
}

static char *fz_template; /* the populated database file's bytes */
static size_t fz_template_len;

static struct api *fz_api_with(struct state *st, const char *job_token)
{
    struct api_tokens tokens = {
        {strdup(FZ_NODE), strdup(job_token), strdup(FZ_USER), strdup(FZ_METRICS)}};
    struct api_config cfg = {.state = st, .clock = fz_clock, .tokens = &tokens};
    struct api *a = NULL;

    if (api_new(&cfg, &a, NULL) < 0)
        abort();
    api_tokens_clear(&tokens);
    return a;
}

static struct api *fz_api(struct state *st)
{
    return fz_api_with(st, FZ_JOB);
}

/* "Bearer " and job a's token under the API a into out. */
static void fz_job_auth(struct api *a, char *out, size_t size)
{
    char token[API_JOB_TOKEN_MAX];

    if (api_job_token(a, "a", token, sizeof(token)) < 0)
        abort();
    snprintf(out, size, "Bearer %s", token);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    static const char node[] = "{\"instance_id\":\"i-1\",\"gpus\":4,\"market\":\"spot\"}";
    static const char job[] =
        "{\"name\":\"a\",\"command\":[\"python\",\"train.py\"],\"workdir\":\"/w\","
        "\"env\":{\"A\":\"1\"},\"init_batch_size\":128,\"max_batch_size\":4096,"
        "\"max_local_bsz\":256,\"max_replicas\":8,\"priority\":2}";
    struct state_alloc rows[] = {{"i-1", 2, 0}};
    char path[512];
    struct state *st = NULL;
    struct api *a;

    (void)argc;
    (void)argv;
    snprintf(path, sizeof(path), "%s", fuzz_path("template.db"));
    if (state_open(path, &st, NULL) < 0)
        abort();
    a = fz_api_with(st, "forged-job-token-0123456789");
    fz_job_auth(a, fz_job_forged, sizeof(fz_job_forged));
    api_free(a);
    a = fz_api(st);
    fz_job_auth(a, fz_job_a, sizeof(fz_job_a));
    {
        char token[API_JOB_TOKEN_MAX];

        if (api_node_token(a, "i-1", token, sizeof(token)) < 0)
            abort();
        snprintf(fz_node_1, sizeof(fz_node_1), "Bearer %s", token);
    }
    fz_call(a, "POST", "/v1/nodes", fz_auth[0], node, strlen(node));
    fz_call(a, "POST", "/v1/jobs", fz_auth[2], job, strlen(job));
    if (state_alloc_replace(st, "a", rows, 1, fz_clock(NULL)) < 0)
        abort();
    api_free(a);
    state_close(st); /* checkpoints the WAL into the file */
    if (file_read_all(path, &fz_template, &fz_template_len, NULL) < 0)
        abort();
    return 0;
}

/* The state, as the template left it: reopened from the template when the last input wrote. */
static struct state *fz_state(void)
{
    static struct state *st;
    static char path[512], wal[600];
    struct stat sb;

    if (st && stat(wal, &sb) == 0 && sb.st_size == 0)
        return st; /* nothing committed since it was opened */
    state_close(st);
    st = NULL;
    snprintf(path, sizeof(path), "%s", fuzz_path("api.db"));
    snprintf(wal, sizeof(wal), "%s-wal", path);
    unlink(wal);
    fuzz_write(path, (const uint8_t *)fz_template, fz_template_len);
    if (state_open(path, &st, NULL) < 0)
        abort();
    return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct api *a;
    char *body;

    if (size < 2)
        return 0;
    a = fz_api(fz_state());
    body = fuzz_strndup(data + 2, size - 2);
    fz_call(a, fz_routes[data[0] % FZ_NROUTES].method, fz_routes[data[0] % FZ_NROUTES].path,
            fz_auth[data[1] % FZ_NAUTH], body, size - 2);
    free(body);
    api_free(a);
    return 0;
}
