/* test_api.c: the controller's API through a real server on 127.0.0.1:0 and a real client: every
 * endpoint's happy path and bad input, 401 on every endpoint without or with a wrong token, the
 * roles kept apart, the database unchanged by every refused request, the metrics text parsed line
 * by line, the tokens from the environment and from files, and a log that never holds a token. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "support/attest_sign.h"
#include "control/api.h"
#include "control/state.h"
#include "util/crypto.h"
#include "util/db.h"
#include "util/db_fixture.h"
#include "util/error.h"
#include "util/http_client.h"
#include "util/http_server.h"
#include "util/json.h"
#include "util/timestamp.h"
#include "util/log.h"

#define TOKEN_NODE "node-token-0123456789abcdef"
#define TOKEN_JOB "job-token-0123456789abcdef"
#define TOKEN_USER "user-token-0123456789abcdef"
#define TOKEN_METRICS "metrics-token-0123456789abcdef"
#define TOKEN_WRONG "wrong-token-0123456789abcdef"

struct fixture {
    struct tmpdb db;
    struct state *st;
    struct api *api;
    struct http_server *server;
    struct http_client *client;
    char *logtext;
    size_t loglen;
    FILE *logf;
    struct log *log;
    double now;
    char base[64];
    int changes; /* api_config.changed calls (from the server's threads: atomics) */
};

static double fake_clock(void *ctx)
{
    struct fixture *f = ctx;

    return f->now;
}

static void count_change(void *ctx)
{
    struct fixture *f = ctx;

    __atomic_fetch_add(&f->changes, 1, __ATOMIC_SEQ_CST);
}

static int changes(struct fixture *f)
{
    return __atomic_load_n(&f->changes, __ATOMIC_SEQ_CST);
}

/* The API over a new state, served; with attest, registrations must prove their instance under
 * the test certificate (account 123456789012, any region), but for on-prem-1. */
static int api_setup_with(void **state, int attest)
{
    static const char *const static_nodes[] = {"on-prem-1", NULL};
    struct api_tokens tokens = {
        {strdup(TOKEN_NODE), strdup(TOKEN_JOB), strdup(TOKEN_USER), strdup(TOKEN_METRICS)}};
    struct http_server_config hc = {.max_body = 64 * 1024};
    struct fixture *f = calloc(1, sizeof(*f));
    struct api_config cfg = {0};
    void *tmp = NULL;
    char *cert = NULL;
    size_t cert_len = 0;
    int rc;

    if (!f || tmpdb_setup(&tmp) < 0)
        return -1;
    f->db = *(struct tmpdb *)tmp;
    free(tmp);
    f->now = 1714564800.0;
    f->logf = open_memstream(&f->logtext, &f->loglen);
    if (!f->logf || log_new(f->logf, LOG_DEBUG, &f->log) < 0 ||
        state_open(f->db.path, &f->st, NULL) < 0)
        return -1;
    cfg.state = f->st;
    cfg.log = f->log;
    cfg.clock = fake_clock;
    cfg.clock_ctx = f;
    cfg.changed = count_change;
    cfg.changed_ctx = f;
    cfg.tokens = &tokens;
    if (attest) {
        if (file_read_all(ATTEST_CERT, &cert, &cert_len, NULL) < 0)
            return -1;
        cfg.attest = (struct attest_aws){
            .certificate = cert, .certificate_len = cert_len, .account = "123456789012"};
        cfg.attest_static = static_nodes;
    }
    rc = api_new(&cfg, &f->api, NULL);
    free(cert); /* (the API keeps a copy) */
    if (rc < 0)
        return -1;
    api_tokens_clear(&tokens);
    if (http_server_start(&hc, api_handle, f->api, &f->server, NULL) < 0 ||
        http_client_new(&f->client) < 0)
        return -1;
    snprintf(f->base, sizeof(f->base), "http://127.0.0.1:%d", http_server_port(f->server));
    *state = f;
    return 0;
}

static int api_setup(void **state)
{
    return api_setup_with(state, 0);
}

static int api_setup_attest(void **state)
{
    return api_setup_with(state, 1);
}

static int api_teardown(void **state)
{
    struct fixture *f = *state;
    struct tmpdb *t = malloc(sizeof(*t));

    http_client_free(f->client);
    http_server_stop(f->server);
    api_free(f->api);
    state_close(f->st);
    log_free(f->log);
    fclose(f->logf);
    free(f->logtext);
    *t = f->db;
    free(f);
    return tmpdb_teardown((void **)&t);
}

/* One request: token NULL sends no Authorization; *out (may be NULL) gets the parsed JSON body
 * (NULL when it is not JSON). Returns the status. */
static long call(struct fixture *f, const char *method, const char *path, const char *token,
                 const char *body, struct jv **out)
{
    char auth[128], url[256];
    const struct http_client_header headers[2] = {{"Authorization", auth},
                                                  {"Content-Type", "application/json"}};
    struct http_client_request req = {.method = method, .url = url, .headers = headers};
    struct http_client_response r = {0};
    struct jv *v = NULL;
    long status;

    snprintf(url, sizeof(url), "%s%s", f->base, path);
    snprintf(auth, sizeof(auth), "Bearer %s", token ? token : "");
    req.headers = token ? headers : headers + 1;
    req.nheaders = 1;
    req.body = body;
    req.body_len = body ? strlen(body) : 0;
    assert_int_equal(http_client_do(f->client, &req, &r, NULL), 0);
    status = r.status;
    if (jv_parse(r.body, r.body_len, &v, NULL) < 0)
        v = NULL;
    if (out)
        *out = v;
    else
        jv_free(v);
    http_client_response_clear(&r);
    return status;
}

/* call, expecting status and an error naming what (a substring of the reason). */
static void expect_error(struct fixture *f, const char *method, const char *path, const char *token,
                         const char *body, long status, const char *what)
{
    struct jv *v = NULL;
    const char *reason;

    assert_int_equal(call(f, method, path, token, body, &v), status);
    reason = jv_string_value(jv_get(v, "error"));
    assert_non_null(reason);
    if (!strstr(reason, what))
        fail_msg("reason \"%s\" does not mention \"%s\"", reason, what);
    jv_free(v);
}

/* Every row of every table as text, every column of each: what "nothing written" is checked
 * against. The caller frees it. */
static char *dump(struct fixture *f)
{
    struct db_stmt *tables = NULL;
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);

    assert_non_null(out);
    assert_int_equal(db_prepare(state_db(f->st),
                                "SELECT name, (SELECT count(*) FROM pragma_table_info(m.name))"
                                " FROM sqlite_master m WHERE type = 'table' ORDER BY name",
                                &tables),
                     0);
    while (db_step(tables) == DB_ROW) {
        struct db_stmt *s = NULL;
        char sql[200];
        int cols = (int)db_column_int(tables, 1);

        snprintf(sql, sizeof(sql), "SELECT * FROM \"%s\" ORDER BY rowid",
                 db_column_text(tables, 0));
        assert_int_equal(db_prepare(state_db(f->st), sql, &s), 0);
        fprintf(out, "%s\n", sql);
        while (db_step(s) == DB_ROW) {
            for (int c = 0; c < cols; c++)
                fprintf(out, "%s|", db_column_is_null(s, c) ? "NULL" : db_column_text(s, c));
            fputc('\n', out);
        }
        db_finalize(s);
    }
    db_finalize(tables);
    assert_int_equal(fclose(out), 0);
    return text;
}

/* A job spec with more fields (",\"key\":value...") before its closing brace. */
#define JOB_SPEC_WITH(name, more)                                                                  \
    "{\"name\":\"" name "\",\"command\":[\"python\",\"train.py\"],\"workdir\":\"/w\","             \
    "\"env\":{\"A\":\"1\"},\"init_batch_size\":128,\"max_batch_size\":4096,\"max_local_bsz\":256," \
    "\"max_replicas\":8,\"priority\":2" more "}"
#define JOB_SPEC(name) JOB_SPEC_WITH(name, "")

/* A family name one byte too long (65). */
#define FAMILY_65 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

#define REPORT                                                                                   \
    "{\"configs\":[{\"nodes\":1,\"replicas\":2,\"local_bsz\":64,\"accum_steps\":0,\"count\":10," \
    "\"step_mean\":0.25,\"step_sd\":0.01,\"sync_mean\":0.05}],\"grad\":{\"sqr\":0.5,\"var\":2}," \
    "\"progress\":1.5}"

/* A node registered, a job submitted, the job on the node: the fixture's usual world. */
static void populate(struct fixture *f)
{
    struct state_alloc rows[] = {{"i-1", 2, 0}};

    assert_int_equal(call(f, "POST", "/v1/nodes", TOKEN_NODE,
                          "{\"instance_id\":\"i-1\",\"gpus\":4,\"gpu_memory_mib\":16384,"
                          "\"offer\":\"p3.8xlarge\",\"market\":\"spot\",\"price\":3.5,"
                          "\"address\":\"10.0.3.17\"}",
                          NULL),
                     201);
    assert_int_equal(call(f, "POST", "/v1/jobs", TOKEN_USER, JOB_SPEC("a"), NULL), 201);
    assert_int_equal(state_alloc_replace(f->st, "a", rows, 1, f->now), 0);
    assert_int_equal(state_job_set_config(f->st, "a", 64, 1, 1.25), 0);
}

/* Every endpoint, with a body that would be good. */
static const struct {
    const char *method;
    const char *path;
    const char *token; /* the right one */
    const char *body;
} endpoints[] = {
    {"POST", "/v1/nodes", TOKEN_NODE, "{\"instance_id\":\"i-2\",\"gpus\":1}"},
    {"POST", "/v1/nodes/i-1/heartbeat", TOKEN_NODE, "{}"},
    {"GET", "/v1/nodes/i-1/assignment", TOKEN_NODE, NULL},
    {"POST", "/v1/nodes/i-1/notice", TOKEN_NODE, "{}"},
    {"POST", "/v1/nodes/i-1/failures", TOKEN_NODE,
     "{\"job\":\"a\",\"attempt\":0,\"rank\":1,\"exit_status\":3}"},
    {"POST", "/v1/nodes/i-1/completions", TOKEN_NODE, "{\"job\":\"a\",\"attempt\":0,\"rank\":1}"},
    {"POST", "/v1/jobs/a/reports", TOKEN_JOB, REPORT},
    {"GET", "/v1/jobs/a/allocation", TOKEN_JOB, NULL},
    {"POST", "/v1/jobs/a/checkpoint", TOKEN_JOB, "{\"progress\":1}"},
    {"POST", "/v1/jobs", TOKEN_USER, JOB_SPEC("b")},
    {"POST", "/v1/jobs/b/finished", TOKEN_JOB, "{\"progress\":2}"},
    {"GET", "/v1/jobs", TOKEN_USER, NULL},
    {"GET", "/v1/jobs/a", TOKEN_USER, NULL},
    {"GET", "/v1/jobs/a/events", TOKEN_USER, NULL},
    {"DELETE", "/v1/jobs/a", TOKEN_USER, NULL},
    {"GET", "/v1/fleet", TOKEN_USER, NULL},
    {"GET", "/v1/costs", TOKEN_USER, NULL},
    {"GET", "/metrics", TOKEN_METRICS, NULL},
    {"POST", "/v1/nodes/i-1/down", TOKEN_USER, "{}"},
};
#define NENDPOINTS (sizeof(endpoints) / sizeof(endpoints[0]))

/* Without a token, with a wrong one, or with another scheme, every endpoint (and a path that is
 * none) answers 401 with a JSON reason and a WWW-Authenticate challenge, and writes nothing. */
static void api_handle__every_endpoint_needs_a_token(void **state)
{
    struct fixture *f = *state;
    char *before, *after;

    populate(f);
    before = dump(f);
    for (size_t i = 0; i < NENDPOINTS; i++) {
        const char *m = endpoints[i].method, *p = endpoints[i].path, *b = endpoints[i].body;

        expect_error(f, m, p, NULL, b, 401, "bearer token is required");
        expect_error(f, m, p, TOKEN_WRONG, b, 401, "not valid");
        expect_error(f, m, p, TOKEN_NODE "x", b, 401, "not valid");
        expect_error(f, m, p, "", b, 401, "required");
    }
    expect_error(f, "GET", "/nowhere", NULL, NULL, 401, "required");
    after = dump(f);
    assert_string_equal(before, after);
    free(before);
    free(after);
}

/* White space after the token (RFC 9110 5.5: not part of the field's value; some clients leave
 * it when they read a token file) is not the token's: the shared token and a job's own one still
 * act. A token with something after a space is still not valid. */
static void api_handle__white_space_after_the_token(void **state)
{
    struct fixture *f = *state;
    char mine[API_JOB_TOKEN_MAX + 4];

    populate(f);
    assert_int_equal(call(f, "GET", "/v1/jobs", TOKEN_USER "   ", NULL, NULL), 200);
    assert_int_equal(call(f, "GET", "/v1/jobs", TOKEN_USER " \t ", NULL, NULL), 200);
    assert_int_equal(api_job_token(f->api, "a", mine, API_JOB_TOKEN_MAX), 0);
    strcat(mine, "  ");
    assert_int_equal(call(f, "GET", "/v1/jobs/a/allocation", mine, NULL, NULL), 200);
    expect_error(f, "GET", "/v1/jobs", TOKEN_USER " x", NULL, 401, "not valid");
    expect_error(f, "GET", "/v1/jobs", "   ", NULL, 401, "required");
}

/* The route table walked: each route, its '*' made a name that exists, answers 401 without a
 * token, with a wrong one, with a token of another scheme and with a right one cut short; 403 to
 * every role it is not for; neither to the roles it is for. Nothing refused writes to the
 * database. A route added to api.c is walked here without this test changing. */
static void api_handle__route_table_walked_every_route_needs_its_token(void **state)
{
    static const char *const tokens[API_NROLES] = {TOKEN_NODE, TOKEN_JOB, TOKEN_USER,
                                                   TOKEN_METRICS};
    struct fixture *f = *state;
    const char *method = NULL, *pattern = NULL;
    unsigned roles = 0;
    char *before, *after, mine[API_JOB_TOKEN_MAX], other[API_JOB_TOKEN_MAX];
    char node_mine[API_JOB_TOKEN_MAX], node_other[API_JOB_TOKEN_MAX];

    populate(f);
    assert_int_equal(api_job_token(f->api, "a", mine, sizeof(mine)), 0);
    assert_int_equal(api_job_token(f->api, "zz", other, sizeof(other)), 0);
    assert_int_equal(api_node_token(f->api, "i-1", node_mine, sizeof(node_mine)), 0);
    assert_int_equal(api_node_token(f->api, "zz", node_other, sizeof(node_other)), 0);
    assert_true(api_route_count() >= 14);
    assert_int_equal(api_route_get(api_route_count(), &method, &pattern, &roles), ERR_RANGE);
    before = dump(f);
    for (size_t i = 0; i < api_route_count(); i++) {
        char path[128];
        const char *star, *body;

        assert_int_equal(api_route_get(i, &method, &pattern, &roles), 0);
        body = strcmp(method, "GET") == 0 || strcmp(method, "DELETE") == 0 ? NULL : "{}";
        star = strchr(pattern, '*');
        if (star)
            snprintf(path, sizeof(path), "%.*s%s%s", (int)(star - pattern), pattern,
                     strncmp(pattern, "/v1/nodes", 9) == 0 ? "i-1" : "a", star + 1);
        else
            snprintf(path, sizeof(path), "%s", pattern);
        assert_true(roles != 0); /* no public endpoint */
        expect_error(f, method, path, NULL, body, 401, "bearer token is required");
        expect_error(f, method, path, TOKEN_WRONG, body, 401, "not valid");
        expect_error(f, method, path, "", body, 401, "required");
        for (int r = 0; r < API_NROLES; r++) {
            char cut[64];

            snprintf(cut, sizeof(cut), "%.*s", (int)strlen(tokens[r]) - 1, tokens[r]);
            expect_error(f, method, path, cut, body, 401, "not valid");
            if (!(roles & (1u << r)))
                expect_error(f, method, path, tokens[r], body, 403, "may not");
        }
        /* a per-job token: another job's everywhere, job a's wherever the job role may not go */
        expect_error(f, method, path, other, body, 403, "may not");
        if (!(roles & (1u << API_ROLE_JOB)) || strncmp(path, "/v1/jobs/a/", 11) != 0)
            expect_error(f, method, path, mine, body, 403, "may not");
        /* a per-node token: another node's everywhere, i-1's wherever the node role may not go */
        expect_error(f, method, path, node_other, body, 403, "may not");
        if (!(roles & (1u << API_ROLE_NODE)) || strncmp(path, "/v1/nodes/i-1/", 14) != 0)
            expect_error(f, method, path, node_mine, body, 403, "may not");
        after = dump(f);
        if (strcmp(before, after) != 0)
            fail_msg("a refused %s %s wrote to the database", method, path);
        free(after);
        for (int r = 0; r < API_NROLES; r++) {
            long status;

            if (!(roles & (1u << r)) || strcmp(method, "GET") != 0)
                continue; /* the writes are tried above with the wrong tokens only */
            status = call(f, method, path, tokens[r], NULL, NULL);
            if (status == 401 || status == 403)
                fail_msg("%s %s refused the %d token it is for: %ld", method, path, r, status);
            if (r == API_ROLE_JOB && strncmp(path, "/v1/jobs/a/", 11) == 0 &&
                ((status = call(f, method, path, mine, NULL, NULL)) == 401 || status == 403))
                fail_msg("%s %s refused job a's own token: %ld", method, path, status);
            if (r == API_ROLE_NODE && strncmp(path, "/v1/nodes/i-1/", 14) == 0 &&
                ((status = call(f, method, path, node_mine, NULL, NULL)) == 401 || status == 403))
                fail_msg("%s %s refused node i-1's own token: %ld", method, path, status);
        }
    }
    free(before);
}

/* Each endpoint refuses the tokens of the roles it is not for with 403, writing nothing; the
 * right token then works. */
static void api_handle__roles_kept_apart(void **state)
{
    static const char *const all[] = {TOKEN_NODE, TOKEN_JOB, TOKEN_USER, TOKEN_METRICS};
    struct fixture *f = *state;
    char *before, *after;

    populate(f);
    before = dump(f);
    for (size_t i = 0; i < NENDPOINTS; i++)
        for (size_t t = 0; t < 4; t++) {
            int allowed = strcmp(all[t], endpoints[i].token) == 0 ||
                          (strcmp(endpoints[i].path, "/v1/jobs/a/allocation") == 0 &&
                           strcmp(all[t], TOKEN_USER) == 0);

            if (!allowed)
                expect_error(f, endpoints[i].method, endpoints[i].path, all[t], endpoints[i].body,
                             403, "token may not");
        }
    after = dump(f);
    assert_string_equal(before, after);
    free(before);
    free(after);
    for (size_t i = 0; i < NENDPOINTS; i++) {
        long status = call(f, endpoints[i].method, endpoints[i].path, endpoints[i].token,
                           endpoints[i].body, NULL);

        if (status != 200 && status != 201)
            fail_msg("%s %s answered %ld", endpoints[i].method, endpoints[i].path, status);
    }
}

/* A node registers (201) with what it reports, heartbeats, reads its assignment (the job's
 * replicas, ranks, world size, master, configuration and command) and reports a preemption
 * notice that drains it. */
static void api_nodes__register_heartbeat_assignment_notice(void **state)
{
    struct fixture *f = *state;
    struct state_node node;
    struct jv *v = NULL;
    const struct jv *job;
    long long x = 0;
    double d = 0;

    populate(f);
    assert_int_equal(state_node_get(f->st, "i-1", &node), 0);
    assert_int_equal(node.gpus, 4);
    assert_int_equal(node.gpu_memory_mib, 16384);
    assert_int_equal(node.market, STATE_MARKET_SPOT);
    assert_true(node.price == 3.5 && node.ready_at == f->now);
    assert_string_equal(node.address, "10.0.3.17");
    state_node_clear(&node);
    f->now += 10;
    assert_int_equal(call(f, "POST", "/v1/nodes/i-1/heartbeat", TOKEN_NODE, NULL, &v), 200);
    assert_string_equal(jv_string_value(jv_get(v, "state")), "ready");
    jv_free(v);
    assert_int_equal(state_node_get(f->st, "i-1", &node), 0);
    assert_true(node.heartbeat_at == f->now);
    state_node_clear(&node);

    assert_int_equal(call(f, "GET", "/v1/nodes/i-1/assignment", TOKEN_NODE, NULL, &v), 200);
    assert_int_equal(jv_size(jv_get(v, "jobs")), 1);
    job = jv_at(jv_get(v, "jobs"), 0);
    assert_string_equal(jv_string_value(jv_get(job, "job")), "a");
    assert_int_equal(jv_integer_value(jv_get(job, "replicas"), &x), 0);
    assert_int_equal(x, 2);
    assert_int_equal(jv_integer_value(jv_get(job, "rank_offset"), &x), 0);
    assert_int_equal(x, 0);
    assert_int_equal(jv_integer_value(jv_get(job, "world_size"), &x), 0);
    assert_int_equal(x, 2);
    assert_string_equal(jv_string_value(jv_get(job, "master")), "i-1");
    assert_string_equal(jv_string_value(jv_get(job, "master_addr")), "10.0.3.17");
    assert_int_equal(jv_number_value(jv_get(job, "lr_gain"), &d), 0);
    assert_true(d == 1.25);
    assert_string_equal(jv_string_value(jv_at(jv_get(jv_get(job, "spec"), "command"), 1)),
                        "train.py");
    jv_free(v);

    assert_int_equal(
        call(f, "POST", "/v1/nodes/i-1/notice", TOKEN_NODE, "{\"deadline\":1714565000}", &v), 200);
    assert_string_equal(jv_string_value(jv_get(v, "state")), "draining");
    jv_free(v);
    assert_int_equal(state_node_get(f->st, "i-1", &node), 0);
    assert_true(node.notice_at == f->now && node.notice_deadline == 1714565000.0);
    state_node_clear(&node);
}

/* A heartbeat the state cannot record (a full disk, a read-only file: here a connection that may
 * not write) is heard all the same: 200 with the node's state, and api_node_heard tells when, for
 * the controller's silence watch; an unknown node is still 404, a terminated one 409. */
static void api_nodes__heartbeat_heard_while_the_state_cannot_write(void **state)
{
    struct fixture *f = *state;
    struct state_node node;
    struct jv *v = NULL;
    double at = 0;

    populate(f);
    assert_int_equal(api_node_heard(f->api, "i-1", &at), ERR_UNKNOWN);
    f->now += 10;
    assert_int_equal(call(f, "POST", "/v1/nodes/i-1/heartbeat", TOKEN_NODE, "{}", NULL), 200);
    assert_int_equal(api_node_heard(f->api, "i-1", &at), 0);
    assert_true(at == f->now);
    assert_int_equal(db_exec(state_db(f->st), "PRAGMA query_only = 1"), 0);
    f->now += 30;
    assert_int_equal(call(f, "POST", "/v1/nodes/i-1/heartbeat", TOKEN_NODE, "{}", &v), 200);
    assert_string_equal(jv_string_value(jv_get(v, "state")), "ready");
    jv_free(v);
    assert_int_equal(api_node_heard(f->api, "i-1", &at), 0);
    assert_true(at == f->now);
    assert_int_equal(state_node_get(f->st, "i-1", &node), 0);
    assert_true(node.heartbeat_at == f->now - 30); /* not recorded */
    state_node_clear(&node);
    expect_error(f, "POST", "/v1/nodes/i-9/heartbeat", TOKEN_NODE, "{}", 404, "no such node");
    assert_int_equal(api_node_heard(f->api, "i-9", &at), ERR_UNKNOWN);
    assert_int_equal(db_exec(state_db(f->st), "PRAGMA query_only = 0"), 0);
    assert_int_equal(state_node_set_state(f->st, "i-1", STATE_NODE_TERMINATED, f->now), 0);
    assert_int_equal(db_exec(state_db(f->st), "PRAGMA query_only = 1"), 0);
    expect_error(f, "POST", "/v1/nodes/i-1/heartbeat", TOKEN_NODE, "{}", 409, "terminated");
    assert_int_equal(db_exec(state_db(f->st), "PRAGMA query_only = 0"), 0);
}

/*
 * An assignment names when the job was placed as it is, so that an agent restarts every replica
 * of a job moved elsewhere, on the nodes it kept too: job a on i-1 alone, then on i-1 and i-2
 * (i-1's rank 0, world 2) and then on i-1 and i-3 at a later time: i-1's entry is the same but for
 * placed_at, which changes.
 */
static void api_nodes__assignment_names_the_placement(void **state)
{
    struct fixture *f = *state;
    struct state_alloc two[] = {{"i-1", 1, 0}, {"i-2", 1, 0}},
                       other[] = {{"i-1", 1, 0}, {"i-3", 1, 0}};
    struct jv *v = NULL;
    double first = 0, second = 0;
    long long x = 0;

    populate(f);
    for (int i = 2; i <= 3; i++) {
        char body[96];

        snprintf(body, sizeof(body), "{\"instance_id\":\"i-%d\",\"gpus\":1}", i);
        assert_int_equal(call(f, "POST", "/v1/nodes", TOKEN_NODE, body, NULL), 201);
    }
    f->now += 10;
    assert_int_equal(state_alloc_replace(f->st, "a", two, 2, f->now), 0);
    assert_int_equal(call(f, "GET", "/v1/nodes/i-1/assignment", TOKEN_NODE, NULL, &v), 200);
    assert_int_equal(jv_number_value(jv_get(jv_at(jv_get(v, "jobs"), 0), "placed_at"), &first), 0);
    assert_true(first == f->now);
    jv_free(v);
    f->now += 10;
    assert_int_equal(state_alloc_replace(f->st, "a", other, 2, f->now), 0);
    assert_int_equal(call(f, "GET", "/v1/nodes/i-1/assignment", TOKEN_NODE, NULL, &v), 200);
    assert_int_equal(jv_number_value(jv_get(jv_at(jv_get(v, "jobs"), 0), "placed_at"), &second), 0);
    assert_true(second == f->now && second > first);
    assert_int_equal(jv_integer_value(jv_get(jv_at(jv_get(v, "jobs"), 0), "world_size"), &x), 0);
    assert_int_equal(x, 2);
    jv_free(v);
}

/* The daemon is told of what changes the decide step's view, once per 2xx answer: a node
 * registered or noticed, a job submitted, finished or cancelled; not of reads, heartbeats,
 * reports, checkpoints, refusals or requests without the right token. */
static void api_handle__changes_told_for_the_decide_step(void **state)
{
    struct fixture *f = *state;

    assert_int_equal(call(f, "POST", "/v1/jobs", TOKEN_USER, JOB_SPEC("a"), NULL), 201);
    assert_int_equal(changes(f), 1);
    assert_int_equal(call(f, "POST", "/v1/jobs", TOKEN_USER, JOB_SPEC("a"), NULL), 409);
    assert_int_equal(call(f, "POST", "/v1/jobs", TOKEN_WRONG, JOB_SPEC("z"), NULL), 401);
    assert_int_equal(call(f, "GET", "/v1/jobs", TOKEN_USER, NULL, NULL), 200);
    assert_int_equal(call(f, "GET", "/v1/jobs/a", TOKEN_USER, NULL, NULL), 200);
    assert_int_equal(changes(f), 1);
    assert_int_equal(
        call(f, "POST", "/v1/nodes", TOKEN_NODE, "{\"instance_id\":\"i-1\",\"gpus\":4}", NULL),
        201);
    assert_int_equal(changes(f), 2);
    assert_int_equal(call(f, "POST", "/v1/nodes/i-1/heartbeat", TOKEN_NODE, "{}", NULL), 200);
    assert_int_equal(call(f, "GET", "/v1/nodes/i-1/assignment", TOKEN_NODE, NULL, NULL), 200);
    assert_int_equal(call(f, "GET", "/v1/fleet", TOKEN_USER, NULL, NULL), 200);
    assert_int_equal(state_job_set_state(f->st, "a", STATE_JOB_RUNNING, f->now), 0);
    assert_int_equal(call(f, "POST", "/v1/jobs/a/checkpoint", TOKEN_JOB, "{\"progress\":1}", NULL),
                     200);
    assert_int_equal(changes(f), 2);
    assert_int_equal(call(f, "POST", "/v1/nodes/i-1/notice", TOKEN_NODE, "{}", NULL), 200);
    assert_int_equal(changes(f), 3);
    assert_int_equal(call(f, "POST", "/v1/jobs/a/finished", TOKEN_JOB, "{\"progress\":2}", NULL),
                     200);
    assert_int_equal(changes(f), 4);
    assert_int_equal(call(f, "POST", "/v1/jobs", TOKEN_USER, JOB_SPEC("b"), NULL), 201);
    assert_int_equal(call(f, "DELETE", "/v1/jobs/b", TOKEN_USER, NULL, NULL), 200);
    assert_int_equal(changes(f), 6);
    assert_int_equal(call(f, "DELETE", "/v1/jobs/nope", TOKEN_USER, NULL, NULL), 404);
    assert_int_equal(call(f, "POST", "/v1/nodes/nope/notice", TOKEN_NODE, "{}", NULL), 404);
    assert_int_equal(changes(f), 6);
}

/* node's assignment entry for job: its generation into gen (when not NULL) and its wait_for as
 * "i-1,i-2" ("" without one) into wait; 0 when the node has no entry for the job. */
static int entry_of(struct fixture *f, const char *node, const char *job, char *gen, char *wait)
{
    struct jv *v = NULL;
    char path[64];
    int found = 0;

    snprintf(path, sizeof(path), "/v1/nodes/%s/assignment", node);
    assert_int_equal(call(f, "GET", path, TOKEN_NODE, NULL, &v), 200);
    wait[0] = '\0';
    for (size_t i = 0; i < jv_size(jv_get(v, "jobs")); i++) {
        const struct jv *e = jv_at(jv_get(v, "jobs"), i), *w = jv_get(e, "wait_for");

        if (strcmp(jv_string_value(jv_get(e, "job")), job) != 0)
            continue;
        found = 1;
        assert_non_null(jv_string_value(jv_get(e, "generation")));
        assert_int_equal(strlen(jv_string_value(jv_get(e, "generation"))), 16);
        if (gen)
            strcpy(gen, jv_string_value(jv_get(e, "generation")));
        assert_true(!w || jv_size(w) > 0); /* absent rather than empty */
        for (size_t k = 0; k < jv_size(w); k++) {
            if (k > 0)
                strcat(wait, ",");
            strcat(wait, jv_string_value(jv_at(w, k)));
        }
    }
    jv_free(v);
    return found;
}

/* node's heartbeat saying replicas of job a of generation gen are alive there, beside another
 * job's (NULL: nothing alive). */
static void beat(struct fixture *f, const char *node, const char *gen)
{
    char path[64], body[192];

    snprintf(path, sizeof(path), "/v1/nodes/%s/heartbeat", node);
    if (gen)
        snprintf(body, sizeof(body),
                 "{\"replicas\":[{\"job\":\"b\",\"generation\":\"x\"},"
                 "{\"job\":\"a\",\"generation\":\"%s\"},{\"job\":\"a\",\"generation\":\"%s\"}]}",
                 gen, gen);
    else
        snprintf(body, sizeof(body), "{\"replicas\":[]}");
    assert_int_equal(call(f, "POST", path, TOKEN_NODE, body, NULL), 200);
}

/*
 * A job's new replicas wait for its old ones: every node's entry for a job carries its
 * generation (the same on all its nodes; new with a new placement, attempt or configuration), and
 * wait_for names the other nodes whose agents said, in their last heartbeat, that replicas of
 * another generation of the job are alive there, while they may still run them. Job a on i-1 is
 * moved to i-2: i-2 waits for i-1 until i-1 says nothing of a is alive, or says nothing at all
 * (an agent that predates generations), or i-1 is past its preemption deadline; a static node
 * i-3 silent past its self-fence (30 s) and the 10 s margin is not waited for, one not yet past
 * it is, and one taken down is not.
 */
static void api_nodes__new_replicas_wait_for_the_old_ones(void **state)
{
    struct fixture *f = *state;
    struct state_alloc one[] = {{"i-2", 1, 0}}, two[] = {{"i-1", 1, 0}, {"i-2", 1, 0}};
    char g1[32], g2[32], g3[32], g4[32], wait[128];

    populate(f);
    for (int i = 2; i <= 3; i++) {
        char body[96];

        snprintf(body, sizeof(body), "{\"instance_id\":\"i-%d\",\"gpus\":1%s}", i,
                 i == 3 ? ",\"fence_s\":30" : "");
        assert_int_equal(call(f, "POST", "/v1/nodes", TOKEN_NODE, body, NULL), 201);
    }
    assert_true(entry_of(f, "i-1", "a", g1, wait));
    assert_string_equal(wait, "");
    /* the same generation on both nodes of one placement; another with another placement */
    f->now += 10;
    assert_int_equal(state_alloc_replace(f->st, "a", two, 2, f->now), 0);
    assert_true(entry_of(f, "i-1", "a", g2, wait) && entry_of(f, "i-2", "a", g3, wait));
    assert_string_equal(g2, g3);
    assert_string_not_equal(g1, g2);
    /* i-1 runs a's first generation, not yet told: i-2's entry waits (i-1's own old replicas
     * are i-1's agent's to wait for) */
    beat(f, "i-1", g1);
    assert_true(entry_of(f, "i-2", "a", NULL, wait));
    assert_string_equal(wait, "i-1");
    assert_true(entry_of(f, "i-1", "a", NULL, wait));
    assert_string_equal(wait, "");
    /* i-1 runs the current generation: nothing to wait for */
    beat(f, "i-1", g2);
    assert_true(entry_of(f, "i-2", "a", NULL, wait));
    assert_string_equal(wait, "");
    /* a new configuration is a new generation (the replicas restart), and so is a new attempt */
    assert_int_equal(state_job_set_config(f->st, "a", 32, 2, 1.0), 0);
    assert_true(entry_of(f, "i-2", "a", g3, wait));
    assert_string_not_equal(g3, g2);
    assert_string_equal(wait, "i-1");
    assert_int_equal(call(f, "POST", "/v1/nodes/i-2/failures", TOKEN_NODE,
                          "{\"job\":\"a\",\"attempt\":0,\"rank\":1,\"exit_status\":3}", NULL),
                     200);
    assert_true(entry_of(f, "i-2", "a", g4, wait));
    assert_string_not_equal(g4, g3);

    /* moved to i-2 alone while i-1 still runs it */
    f->now += 10;
    assert_int_equal(state_alloc_replace(f->st, "a", one, 1, f->now), 0);
    assert_false(entry_of(f, "i-1", "a", NULL, wait));
    assert_true(entry_of(f, "i-2", "a", g1, wait));
    assert_string_equal(wait, "i-1");
    beat(f, "i-1", NULL); /* i-1's replicas of a have stopped */
    assert_true(entry_of(f, "i-2", "a", NULL, wait));
    assert_string_equal(wait, "");
    beat(f, "i-1", g2);
    assert_true(entry_of(f, "i-2", "a", NULL, wait));
    assert_string_equal(wait, "i-1");
    assert_int_equal(call(f, "POST", "/v1/nodes/i-1/heartbeat", TOKEN_NODE, "{}", NULL), 200);
    assert_true(entry_of(f, "i-2", "a", NULL, wait));
    assert_string_equal(wait, ""); /* an agent that does not say: as before generations */

    /* a preempted node is waited for until its deadline, not after */
    beat(f, "i-1", g2);
    assert_int_equal(
        call(f, "POST", "/v1/nodes/i-1/notice", TOKEN_NODE, "{\"deadline\":1714564905}", NULL),
        200);
    assert_true(f->now < 1714564905);
    assert_true(entry_of(f, "i-2", "a", NULL, wait));
    assert_string_equal(wait, "i-1");
    f->now = 1714564906;
    assert_true(entry_of(f, "i-2", "a", NULL, wait));
    assert_string_equal(wait, "");

    /* a silent static node with a self-fence of 30 s: waited for until 30 + 10 s after its last
     * heartbeat; one taken down by its operator, not at all (i-3 ran a before: a node says alive
     * only replicas of jobs it holds or held lately) */
    {
        struct state_alloc three[] = {{"i-3", 1, 0}};

        assert_int_equal(state_alloc_replace(f->st, "a", three, 1, f->now), 0);
        assert_int_equal(state_alloc_replace(f->st, "a", one, 1, f->now + 1), 0);
    }
    beat(f, "i-3", g2);
    f->now += 39;
    assert_true(entry_of(f, "i-2", "a", NULL, wait));
    assert_string_equal(wait, "i-3");
    f->now += 2;
    assert_true(entry_of(f, "i-2", "a", NULL, wait));
    assert_string_equal(wait, "");
    beat(f, "i-3", g2);
    assert_true(entry_of(f, "i-2", "a", NULL, wait));
    assert_string_equal(wait, "i-3");
    assert_int_equal(call(f, "POST", "/v1/nodes/i-3/down", TOKEN_USER, NULL, NULL), 200);
    assert_true(entry_of(f, "i-2", "a", NULL, wait));
    assert_string_equal(wait, "");
}

/* A static node taken down whose termination the state refuses (here a trigger, as a full disk
 * would) is answered with the error and writes nothing: no node-lost event for its jobs, which
 * stay where they are. Taken down once the state takes it, its job is told. */
static void api_nodes__down_refused_writes_nothing(void **state)
{
    struct fixture *f = *state;
    char *before, *after;

    populate(f);
    assert_int_equal(db_exec(state_db(f->st), "CREATE TRIGGER no_node_change BEFORE UPDATE ON"
                                              " nodes BEGIN SELECT RAISE(ABORT, 'no room'); END"),
                     0);
    before = dump(f);
    assert_true(call(f, "POST", "/v1/nodes/i-1/down", TOKEN_USER, NULL, NULL) >= 400);
    after = dump(f);
    assert_string_equal(before, after);
    free(before);
    free(after);
    assert_int_equal(db_exec(state_db(f->st), "DROP TRIGGER no_node_change"), 0);
    assert_int_equal(call(f, "POST", "/v1/nodes/i-1/down", TOKEN_USER, NULL, NULL), 200);
    assert_int_equal(one_int(state_db(f->st), "SELECT count(*) FROM events WHERE kind ="
                                              " 'node-lost' AND node = 'i-1'"),
                     1);
}

/* The body of a registration of id with an attestation (document and signature as given). */
static void attested_body(char *buf, size_t size, const char *id, const char *doc, const char *sig)
{
    struct jv *o = jv_object(), *at = jv_object();
    char *text = NULL;

    assert_int_equal(jv_set(o, "instance_id", jv_string(id)), 0);
    assert_int_equal(jv_set(o, "gpus", jv_integer(4)), 0);
    assert_int_equal(jv_set(at, "document", jv_string(doc)), 0);
    assert_int_equal(jv_set(at, "signature", jv_string(sig)), 0);
    assert_int_equal(jv_set(o, "attestation", at), 0);
    assert_int_equal(jv_dump(o, &text), 0);
    snprintf(buf, size, "%s", text);
    free(text);
    jv_free(o);
}

/*
 * With api.attestation, a node registers only with its EC2 identity document signed under the
 * configured certificate, of its own instance and the configured account: a forged signature,
 * another instance's document, another account's and none at all are refused (403, with the
 * reason, logged) and write nothing; a malformed attestation is 400; a static node listed in
 * static_nodes registers without one; and the first one, proved, registers (201, its token).
 */
static void api_nodes__attestation_binds_a_registration_to_its_instance(void **state)
{
    struct fixture *f = *state;
    char doc[1024], sig[1024], other[1024], body[4096], *before, *after;
    struct jv *v = NULL;

    attest_document(doc, sizeof(doc), "i-0abc", "123456789012", "us-east-1");
    assert_int_equal(attest_signature(ATTEST_KEY, doc, sig, sizeof(sig)), 0);
    before = dump(f);
    expect_error(f, "POST", "/v1/nodes", TOKEN_NODE, "{\"instance_id\":\"i-0abc\",\"gpus\":4}", 403,
                 "must prove which instance it is");
    assert_int_equal(attest_signature(ATTEST_OTHER_KEY, doc, other, sizeof(other)), 0);
    attested_body(body, sizeof(body), "i-0abc", doc, other);
    expect_error(f, "POST", "/v1/nodes", TOKEN_NODE, body, 403, "signature does not verify");
    attested_body(body, sizeof(body), "i-0fake", doc, sig);
    expect_error(f, "POST", "/v1/nodes", TOKEN_NODE, body, 403,
                 "identity document is instance i-0abc's, not i-0fake's");
    attest_document(other, sizeof(other), "i-0abc", "210987654321", "us-east-1");
    {
        char sig2[1024];

        assert_int_equal(attest_signature(ATTEST_KEY, other, sig2, sizeof(sig2)), 0);
        attested_body(body, sizeof(body), "i-0abc", other, sig2);
        expect_error(f, "POST", "/v1/nodes", TOKEN_NODE, body, 403, "account 210987654321");
    }
    attested_body(body, sizeof(body), "i-0abc", doc, "**");
    expect_error(f, "POST", "/v1/nodes", TOKEN_NODE, body, 400, "not base64");
    expect_error(f, "POST", "/v1/nodes", TOKEN_NODE,
                 "{\"instance_id\":\"i-0abc\",\"gpus\":4,\"attestation\":\"yes\"}", 400,
                 "attestation must be an object");
    expect_error(f, "POST", "/v1/nodes", TOKEN_NODE,
                 "{\"instance_id\":\"i-0abc\",\"gpus\":4,\"attestation\":{\"document\":\"d\"}}",
                 400, "attestation.signature is required");
    expect_error(f, "POST", "/v1/nodes", TOKEN_NODE,
                 "{\"instance_id\":\"i-0abc\",\"gpus\":4,\"attestation\":"
                 "{\"identity_token\":\"e30.e30.e30\"}}",
                 403, "this controller checks no Compute Engine tokens");
    expect_error(f, "POST", "/v1/nodes", TOKEN_NODE,
                 "{\"instance_id\":\"i-0abc\",\"gpus\":4,\"attestation\":"
                 "{\"identity_token\":\"t\",\"document\":\"d\",\"signature\":\"AAAA\"}}",
                 400, "not both");
    after = dump(f);
    assert_string_equal(before, after);
    free(before);
    free(after);
    assert_non_null(strstr(f->logtext, "a registration's attestation refused"));

    assert_int_equal(call(f, "POST", "/v1/nodes", TOKEN_NODE,
                          "{\"instance_id\":\"on-prem-1\",\"gpus\":2}", NULL),
                     201);
    attested_body(body, sizeof(body), "i-0abc", doc, sig);
    assert_int_equal(call(f, "POST", "/v1/nodes", TOKEN_NODE, body, &v), 201);
    assert_non_null(jv_string_value(jv_get(v, "node_token")));
    jv_free(v);
}

/* Without api.attestation a registration's attestation is accepted and not checked (castor-node
 * on EC2 sends one whatever the controller asks). */
static void api_nodes__attestation_not_asked(void **state)
{
    struct fixture *f = *state;
    char body[4096];

    attested_body(body, sizeof(body), "i-0abc", "{}", "AAAA");
    assert_int_equal(call(f, "POST", "/v1/nodes", TOKEN_NODE, body, NULL), 201);
}

/* Bad node requests are refused with their reason and write nothing: a second registration,
 * malformed JSON, no or zero GPUs, an unknown field, a bad instance id, an unknown node, a
 * heartbeat with fields, a notice with a bad deadline, a body that is not an object. */
static void api_nodes__bad_input_writes_nothing(void **state)
{
    struct fixture *f = *state;
    char *before, *after;

    populate(f);
    /* what i-1's agent said is alive there, which a bad heartbeat must not wipe */
    assert_int_equal(call(f, "POST", "/v1/nodes/i-1/heartbeat", TOKEN_NODE,
                          "{\"replicas\":[{\"job\":\"a\",\"generation\":\"0123abcd\"}]}", NULL),
                     200);
    before = dump(f);
    expect_error(f, "POST", "/v1/nodes", TOKEN_NODE, "{\"instance_id\":\"i-1\",\"gpus\":8}", 409,
                 "already registered");
    expect_error(f, "POST", "/v1/nodes", TOKEN_NODE, "{\"instance_id\":\"i-2\",\"gpus\":", 400,
                 "malformed JSON");
    expect_error(f, "POST", "/v1/nodes", TOKEN_NODE, "{\"instance_id\":\"i-2\"}", 400,
                 "gpus is required");
    expect_error(f, "POST", "/v1/nodes", TOKEN_NODE, "{\"instance_id\":\"i-2\",\"gpus\":0}", 400,
                 "gpus must be an integer from 1");
    expect_error(f, "POST", "/v1/nodes", TOKEN_NODE,
                 "{\"instance_id\":\"i-2\",\"gpus\":1,\"gpu\":1}", 400, "unknown field gpu");
    expect_error(f, "POST", "/v1/nodes", TOKEN_NODE, "{\"instance_id\":\"../x\",\"gpus\":1}", 400,
                 "instance_id");
    expect_error(f, "POST", "/v1/nodes", TOKEN_NODE,
                 "{\"instance_id\":\"i-2\",\"gpus\":1,\"market\":\"cheap\"}", 400, "market");
    expect_error(f, "POST", "/v1/nodes", TOKEN_NODE, "[1]", 400, "JSON object");
    expect_error(f, "POST", "/v1/nodes", TOKEN_NODE,
                 "{\"instance_id\":\"i-2\",\"gpus\":1,\"address\":\"10.0.0.1; rm\"}", 400,
                 "address must be an IP address or a host name");
    expect_error(f, "POST", "/v1/nodes", TOKEN_NODE,
                 "{\"instance_id\":\"i-2\",\"gpus\":1,\"address\":\"\"}", 400, "address");
    expect_error(f, "POST", "/v1/nodes", TOKEN_NODE,
                 "{\"instance_id\":\"i-2\",\"gpus\":1,\"fence_s\":0}", 400,
                 "fence_s must be a number > 0");
    expect_error(f, "POST", "/v1/nodes", TOKEN_NODE,
                 "{\"instance_id\":\"i-2\",\"gpus\":1,\"fence_s\":86401}", 400,
                 "fence_s must be at most 86400");
    expect_error(f, "POST", "/v1/nodes", TOKEN_NODE,
                 "{\"instance_id\":\"i-2\",\"gpus\":1,\"fence_s\":\"60\"}", 400, "fence_s");
    expect_error(f, "POST", "/v1/nodes", TOKEN_NODE,
                 "{\"instance_id\":\"i-2\",\"gpus\":1,\"price\":1e300}", 400,
                 "price must be at most 1000000");
    expect_error(f, "POST", "/v1/nodes", TOKEN_NODE,
                 "{\"instance_id\":\"i-2\",\"gpus\":1,\"price\":-1}", 400, "price");
    expect_error(f, "POST", "/v1/nodes/i-9/down", TOKEN_USER, NULL, 404, "no such node");
    expect_error(f, "POST", "/v1/nodes/i-1/down", TOKEN_USER, "{\"now\":1}", 400,
                 "unknown field now");
    expect_error(f, "POST", "/v1/nodes/i-1/down", TOKEN_NODE, NULL, 403, "");
    expect_error(f, "POST", "/v1/nodes/i-9/heartbeat", TOKEN_NODE, NULL, 404, "no such node");
    expect_error(f, "POST", "/v1/nodes/i-1/heartbeat", TOKEN_NODE, "{\"x\":1}", 400,
                 "unknown field x");
    expect_error(f, "POST", "/v1/nodes/i-1/heartbeat", TOKEN_NODE, "{\"replicas\":{}}", 400,
                 "replicas must be an array");
    expect_error(f, "POST", "/v1/nodes/i-1/heartbeat", TOKEN_NODE, "{\"replicas\":[\"a\"]}", 400,
                 "replicas[0] must be an object");
    expect_error(f, "POST", "/v1/nodes/i-1/heartbeat", TOKEN_NODE,
                 "{\"replicas\":[{\"job\":\"a\",\"generation\":\"g\"},{\"job\":\"a\"}]}", 400,
                 "replicas[1].generation is required");
    expect_error(f, "POST", "/v1/nodes/i-1/heartbeat", TOKEN_NODE,
                 "{\"replicas\":[{\"job\":\"\",\"generation\":\"g\"}]}", 400, "replicas[0].job");
    expect_error(f, "POST", "/v1/nodes/i-1/heartbeat", TOKEN_NODE,
                 "{\"replicas\":[{\"job\":\"a\",\"generation\":\"g\",\"rank\":0}]}", 400,
                 "unknown field replicas[0].rank");
    expect_error(f, "POST", "/v1/nodes/i-1/heartbeat", TOKEN_NODE,
                 "{\"replicas\":[{\"job\":\"a\",\"generation\":"
                 "\"0123456789012345678901234567890123456789012345678901234567890123456789\"}]}",
                 400, "replicas[0].generation");
    expect_error(f, "GET", "/v1/nodes/i-9/assignment", TOKEN_NODE, NULL, 404, "no such node");
    expect_error(f, "POST", "/v1/nodes/i-1/notice", TOKEN_NODE, "{\"deadline\":\"soon\"}", 400,
                 "deadline must be a number");
    expect_error(f, "POST", "/v1/nodes/i-9/notice", TOKEN_NODE, NULL, 404, "no such node");
    expect_error(f, "GET", "/v1/nodes/i-1", TOKEN_NODE, NULL, 404, "no such endpoint");
    expect_error(f, "PUT", "/v1/nodes", TOKEN_NODE, NULL, 405, "PUT is not allowed");
    after = dump(f);
    assert_string_equal(before, after);
    free(before);
    free(after);
    assert_int_equal(state_node_set_state(f->st, "i-1", STATE_NODE_TERMINATED, f->now), 0);
    expect_error(f, "POST", "/v1/nodes/i-1/heartbeat", TOKEN_NODE, NULL, 409, "terminated");
}

/* The attempt of job a on node i-1's assignment, and its restart delay. */
static void assignment_attempt(struct fixture *f, long long *attempt, double *delay)
{
    struct jv *v = NULL;
    const struct jv *job;

    assert_int_equal(call(f, "GET", "/v1/nodes/i-1/assignment", TOKEN_NODE, NULL, &v), 200);
    job = jv_at(jv_get(v, "jobs"), 0);
    assert_int_equal(jv_integer_value(jv_get(job, "attempt"), attempt), 0);
    assert_int_equal(jv_number_value(jv_get(job, "restart_delay"), delay), 0);
    jv_free(v);
}

/* POST failures (max_restarts 1): a failure is counted once per attempt (rank 0's report of the
 * attempt rank 1 failed in is not), changes the assignment's attempt with a restart delay of 2 s,
 * shows in the job's answer and the log; a second failure in a row without progress fails the
 * job, whose allocation is released; the failed job takes no more. Each counted report tells the
 * decide step. */
static void api_nodes__replica_failures_restart_then_fail(void **state)
{
    struct fixture *f = *state;
    struct state_alloc rows[] = {{"i-1", 2, 0}};
    struct jv *v = NULL;
    long long attempt = -1, x = 0;
    double delay = -1;
    int before, counted = -1;

    populate(f);
    assert_int_equal(
        call(f, "POST", "/v1/jobs", TOKEN_USER, JOB_SPEC_WITH("f", ",\"max_restarts\":1"), &v),
        201);
    assert_int_equal(jv_integer_value(jv_get(jv_get(v, "spec"), "max_restarts"), &x), 0);
    assert_int_equal(x, 1);
    jv_free(v);
    assert_int_equal(call(f, "DELETE", "/v1/jobs/a", TOKEN_USER, NULL, NULL), 200);
    assert_int_equal(state_alloc_replace(f->st, "f", rows, 1, f->now), 0);
    assignment_attempt(f, &attempt, &delay);
    assert_int_equal(attempt, 0);
    assert_true(delay == 0);

    before = changes(f);
    f->now += 10;
    assert_int_equal(call(f, "POST", "/v1/nodes/i-1/failures", TOKEN_NODE,
                          "{\"job\":\"f\",\"attempt\":0,\"rank\":1,\"exit_status\":3}", &v),
                     200);
    assert_int_equal(jv_bool_value(jv_get(v, "counted"), &counted), 0);
    assert_int_equal(counted, 1);
    assert_int_equal(jv_integer_value(jv_get(v, "failures"), &x), 0);
    assert_int_equal(x, 1);
    assert_string_equal(jv_string_value(jv_get(v, "state")), "pending");
    jv_free(v);
    assert_int_equal(changes(f), before + 1);
    assignment_attempt(f, &attempt, &delay);
    assert_int_equal(attempt, 1);
    assert_true(delay == API_RESTART_DELAY_S);
    /* rank 0 of the same attempt: not counted again */
    assert_int_equal(call(f, "POST", "/v1/nodes/i-1/failures", TOKEN_NODE,
                          "{\"job\":\"f\",\"attempt\":0,\"rank\":0,\"signal\":15}", &v),
                     200);
    assert_int_equal(jv_bool_value(jv_get(v, "counted"), &counted), 0);
    assert_int_equal(counted, 0);
    jv_free(v);
    assert_int_equal(call(f, "GET", "/v1/jobs/f", TOKEN_USER, NULL, &v), 200);
    assert_string_equal(jv_string_value(jv_get(v, "failure")),
                        "rank 1 on node i-1 exited with status 3");
    assert_int_equal(jv_integer_value(jv_get(v, "failures"), &x), 0);
    assert_int_equal(x, 1);
    jv_free(v);
    fflush(f->logf);
    assert_non_null(strstr(f->logtext, "rank 1 on node i-1 exited with status 3: its replicas "
                                       "restart in 2 s (attempt 1; 1 failures in a row, "
                                       "max_restarts 1)"));

    /* attempt 1 fails too, with no progress between: more than max_restarts in a row */
    f->now += 10;
    assert_int_equal(call(f, "POST", "/v1/nodes/i-1/failures", TOKEN_NODE,
                          "{\"job\":\"f\",\"attempt\":1,\"rank\":0,\"signal\":9}", &v),
                     200);
    assert_string_equal(jv_string_value(jv_get(v, "state")), "failed");
    jv_free(v);
    assert_int_equal(call(f, "GET", "/v1/jobs/f", TOKEN_USER, NULL, &v), 200);
    assert_string_equal(jv_string_value(jv_get(v, "state")), "failed");
    assert_non_null(strstr(jv_string_value(jv_get(v, "failure")),
                           "rank 0 on node i-1 was killed by signal 9 (SIGKILL"));
    jv_free(v);
    assert_int_equal(call(f, "GET", "/v1/nodes/i-1/assignment", TOKEN_NODE, NULL, &v), 200);
    assert_int_equal(jv_size(jv_get(v, "jobs")), 0);
    jv_free(v);
    fflush(f->logf);
    assert_non_null(strstr(f->logtext, "the job failed (2 failures in a row without progress, "
                                       "max_restarts 1)"));
    expect_error(f, "POST", "/v1/nodes/i-1/failures", TOKEN_NODE,
                 "{\"job\":\"f\",\"attempt\":2,\"rank\":0,\"exit_status\":1}", 422,
                 "job f has ended");
}

/* A job whose spec says reconfigure: in_flight keeps its generation through a new configuration
 * (its replicas take it as they run); a restart job's changes (its replicas restart into it); a
 * new attempt changes both. */
static void api_job_generation__in_flight_jobs_keep_theirs_through_a_configuration(void **state)
{
    struct fixture *f = *state;
    char before[2][API_GENERATION_LEN + 1], after[API_GENERATION_LEN + 1];
    const char *const names[] = {"r", "i"};
    struct state_job j;

    assert_int_equal(call(f, "POST", "/v1/jobs", TOKEN_USER, JOB_SPEC("r"), NULL), 201);
    assert_int_equal(call(f, "POST", "/v1/jobs", TOKEN_USER,
                          JOB_SPEC_WITH("i", ",\"reconfigure\":\"in_flight\""), NULL),
                     201);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(state_job_set_config(f->st, names[k], 64, 1, 1.25), 0);
        assert_int_equal(state_job_get(f->st, names[k], &j), 0);
        assert_int_equal(api_job_generation(&j, 100.0, before[k]), 0);
        state_job_clear(&j);
        assert_int_equal(state_job_set_config(f->st, names[k], 128, 0, 1.5), 0);
        assert_int_equal(state_job_get(f->st, names[k], &j), 0);
        assert_int_equal(api_job_generation(&j, 100.0, after), 0);
        assert_int_equal(strcmp(before[k], after) == 0, k == 1);   /* in flight: the same */
        assert_int_equal(api_job_generation(&j, 200.0, after), 0); /* a new placement */
        assert_string_not_equal(before[k], after);
        j.failures++; /* a new attempt */
        assert_int_equal(api_job_generation(&j, 100.0, after), 0);
        assert_string_not_equal(before[k], after);
        state_job_clear(&j);
    }
}

/* A report a node should have refused: to which node, the body, the status and the reason. */
struct bad_report {
    const char *node;
    const char *body;
    long status;
    const char *what;
};

/* Post each of bad[0 .. n-1] to /v1/nodes/{node}/{what}: each is refused with its status and
 * reason (populate's state, with a node i-2 holding nothing), and nothing is written. */
static void expect_bad_reports(struct fixture *f, const char *what, const struct bad_report *bad,
                               size_t n)
{
    char *before, *after, path[64];

    populate(f);
    assert_int_equal(
        call(f, "POST", "/v1/nodes", TOKEN_NODE, "{\"instance_id\":\"i-2\",\"gpus\":1}", NULL),
        201);
    before = dump(f);
    for (size_t i = 0; i < n; i++) {
        snprintf(path, sizeof(path), "/v1/nodes/%s/%s", bad[i].node, what);
        expect_error(f, "POST", path, TOKEN_NODE, bad[i].body, bad[i].status, bad[i].what);
    }
    after = dump(f);
    assert_string_equal(before, after);
    free(before);
    free(after);
}

/* Bad failure reports are refused with their reason and write nothing. */
static void api_nodes__bad_failure_reports_write_nothing(void **state)
{
    static const struct bad_report bad[] = {
        {"i-1", "{\"attempt\":0,\"rank\":0,\"exit_status\":1}", 400, "job is required"},
        {"i-1", "{\"job\":\"a\",\"rank\":0,\"exit_status\":1}", 400, "attempt is required"},
        {"i-1", "{\"job\":\"a\",\"attempt\":0,\"exit_status\":1}", 400, "rank is required"},
        {"i-1", "{\"job\":\"a\",\"attempt\":-1,\"rank\":0,\"exit_status\":1}", 400,
         "attempt must be an integer from 0"},
        {"i-1", "{\"job\":\"a\",\"attempt\":0,\"rank\":0}", 400, "exactly one of"},
        {"i-1", "{\"job\":\"a\",\"attempt\":0,\"rank\":0,\"exit_status\":1,\"signal\":9}", 400,
         "exactly one of"},
        {"i-1", "{\"job\":\"a\",\"attempt\":0,\"rank\":0,\"exit_status\":0}", 400,
         "exit_status must be an integer from 1 to 255"},
        {"i-1", "{\"job\":\"a\",\"attempt\":0,\"rank\":0,\"signal\":65}", 400,
         "signal must be an integer from 1 to 64"},
        {"i-1", "{\"job\":\"a\",\"attempt\":0,\"rank\":0,\"signal\":9,\"why\":1}", 400,
         "unknown field why"},
        {"i-1", "{\"job\":\"../a\",\"attempt\":0,\"rank\":0,\"signal\":9}", 400,
         "job must be a job's name"},
        {"i-1", "{\"job\":\"zz\",\"attempt\":0,\"rank\":0,\"signal\":9}", 422,
         "no job is named zz"},
        {"i-2", "{\"job\":\"a\",\"attempt\":0,\"rank\":0,\"signal\":9}", 422,
         "job a has no replicas on node i-2"},
        {"i-9", "{\"job\":\"a\",\"attempt\":0,\"rank\":0,\"signal\":9}", 404, "no such node"},
    };
    struct fixture *f = *state;

    expect_bad_reports(f, "failures", bad, sizeof(bad) / sizeof(bad[0]));
    assert_int_equal(state_node_set_state(f->st, "i-1", STATE_NODE_TERMINATED, f->now), 0);
    expect_error(f, "POST", "/v1/nodes/i-1/failures", TOKEN_NODE,
                 "{\"job\":\"a\",\"attempt\":0,\"rank\":0,\"signal\":9}", 409, "terminated");
}

/* The kinds of job name's events, oldest first, joined by ",". */
static void event_kinds(struct fixture *f, const char *name, char *buf, size_t size)
{
    struct jv *v = NULL;
    char path[96];
    size_t used = 0;

    buf[0] = '\0';
    snprintf(path, sizeof(path), "/v1/jobs/%s/events", name);
    assert_int_equal(call(f, "GET", path, TOKEN_USER, NULL, &v), 200);
    for (size_t i = 0; i < jv_size(jv_get(v, "events")) && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? "," : "",
                                 jv_string_value(jv_get(jv_at(jv_get(v, "events"), i), "kind")));
    jv_free(v);
}

/* Rank 0 of job a on i-1 ended attempt 0 in the placement made at placed_at: the report (written
 * to body, for a retry) finishes the job. */
static void finish_attempt_0(struct fixture *f, double placed_at, char *body, size_t size)
{
    struct jv *v = NULL;
    int counted = -1;

    snprintf(body, size, "{\"job\":\"a\",\"attempt\":0,\"rank\":0,\"placed_at\":%.17g}", placed_at);
    assert_int_equal(call(f, "POST", "/v1/nodes/i-1/completions", TOKEN_NODE, body, &v), 200);
    assert_int_equal(jv_bool_value(jv_get(v, "counted"), &counted), 0);
    assert_int_equal(counted, 1);
    assert_string_equal(jv_string_value(jv_get(v, "state")), "finished");
    jv_free(v);
}

/* Rank 0's own end of job a (placed on i-1 at f->now): from another rank, an earlier attempt or
 * another placement it changes nothing; from rank 0 of the current ones it finishes the job
 * (its assignment emptied, an event saying why); told again, nothing more. Bad reports are
 * refused with their reason and write nothing. */
static void api_nodes__rank_0_completion_finishes_the_job(void **state)
{
    static const struct bad_report bad[] = {
        {"i-1", "{\"attempt\":0,\"rank\":0}", 400, "job is required"},
        {"i-1", "{\"job\":\"a\",\"rank\":0}", 400, "attempt is required"},
        {"i-1", "{\"job\":\"a\",\"attempt\":0}", 400, "rank is required"},
        {"i-1", "{\"job\":\"a\",\"attempt\":0,\"rank\":0,\"placed_at\":-1}", 400,
         "placed_at must be a number >= 0"},
        {"i-1", "{\"job\":\"a\",\"attempt\":0,\"rank\":0,\"exit_status\":0}", 400,
         "unknown field exit_status"},
        {"i-1", "{\"job\":\"zz\",\"attempt\":0,\"rank\":0}", 422, "no job is named zz"},
        {"i-1", "{\"job\":\"zz\",\"attempt\":0,\"rank\":3}", 422, "no job is named zz"},
        {"i-2", "{\"job\":\"a\",\"attempt\":0,\"rank\":0}", 422,
         "job a has no replicas on node i-2"},
        {"i-9", "{\"job\":\"a\",\"attempt\":0,\"rank\":0}", 404, "no such node"},
    };
    struct fixture *f = *state;
    char *before, *after, body[160], kinds[256];
    double placed_at = f->now;
    struct jv *v = NULL;
    int counted = -1;

    expect_bad_reports(f, "completions", bad, sizeof(bad) / sizeof(bad[0]));
    before = dump(f);
    /* stale: not rank 0, an attempt to come, another placement */
    assert_int_equal(call(f, "POST", "/v1/nodes/i-1/completions", TOKEN_NODE,
                          "{\"job\":\"a\",\"attempt\":0,\"rank\":1}", &v),
                     200);
    assert_int_equal(jv_bool_value(jv_get(v, "counted"), &counted), 0);
    assert_int_equal(counted, 0);
    jv_free(v);
    snprintf(body, sizeof(body), "{\"job\":\"a\",\"attempt\":1,\"rank\":0,\"placed_at\":%.17g}",
             placed_at);
    assert_int_equal(call(f, "POST", "/v1/nodes/i-1/completions", TOKEN_NODE, body, NULL), 200);
    snprintf(body, sizeof(body), "{\"job\":\"a\",\"attempt\":0,\"rank\":0,\"placed_at\":%.17g}",
             placed_at - 60);
    assert_int_equal(call(f, "POST", "/v1/nodes/i-1/completions", TOKEN_NODE, body, NULL), 200);
    after = dump(f);
    assert_string_equal(before, after);
    free(before);
    free(after);

    /* rank 0 of attempt 0 in this placement: the job is finished */
    finish_attempt_0(f, placed_at, body, sizeof(body));
    assert_int_equal(call(f, "GET", "/v1/nodes/i-1/assignment", TOKEN_NODE, NULL, &v), 200);
    assert_int_equal(jv_size(jv_get(v, "jobs")), 0);
    jv_free(v);
    event_kinds(f, "a", kinds, sizeof(kinds));
    assert_non_null(strstr(kinds, "finished"));
    fflush(f->logf);
    assert_non_null(strstr(f->logtext, "rank 0 on node i-1 exited with status 0 without telling"));
    /* told again: nothing more */
    assert_int_equal(call(f, "POST", "/v1/nodes/i-1/completions", TOKEN_NODE, body, &v), 200);
    assert_int_equal(jv_bool_value(jv_get(v, "counted"), &counted), 0);
    assert_int_equal(counted, 0);
    jv_free(v);
    assert_int_equal(state_node_set_state(f->st, "i-1", STATE_NODE_TERMINATED, f->now), 0);
    expect_error(f, "POST", "/v1/nodes/i-1/completions", TOKEN_NODE, body, 409, "terminated");
}

/* Rank 1's failure of job a (on i-1, placed at f->now) is told first, then rank 0's end of the
 * same attempt and placement (it ended first; its peer failed as it left): the job is finished,
 * counted, with an event that names the failure it explains. */
static void api_nodes__completion_after_its_peers_failure(void **state)
{
    struct fixture *f = *state;
    double placed_at;
    char body[160];

    populate(f);
    placed_at = f->now;
    f->now += 10;
    assert_int_equal(call(f, "POST", "/v1/nodes/i-1/failures", TOKEN_NODE,
                          "{\"job\":\"a\",\"attempt\":0,\"rank\":1,\"exit_status\":3}", NULL),
                     200);
    f->now += 5;
    finish_attempt_0(f, placed_at, body, sizeof(body));
    fflush(f->logf);
    assert_non_null(strstr(f->logtext, "exited with status 0 in attempt 0; the failure counted for"
                                       " that attempt (rank 1 on node i-1 exited with status 3"));
}

/* A job's events, as its owner reads them: submitted (and the warning of a deadline without
 * samples), a replica failure with its node and reason, a notice on its node, finished; a retried
 * notice, finish or cancel adds nothing; ?limit keeps the newest; an unknown job is 404 and a bad
 * limit 400. */
static void api_jobs__events_tell_what_happened(void **state)
{
    struct fixture *f = *state;
    struct jv *v = NULL;
    const struct jv *last;
    char kinds[256];

    populate(f);
    event_kinds(f, "a", kinds, sizeof(kinds));
    assert_string_equal(kinds, "submitted");
    assert_int_equal(call(f, "POST", "/v1/nodes/i-1/failures", TOKEN_NODE,
                          "{\"job\":\"a\",\"attempt\":0,\"rank\":1,\"exit_status\":3}", NULL),
                     200);
    assert_int_equal(call(f, "POST", "/v1/nodes/i-1/notice", TOKEN_NODE, "{}", NULL), 200);
    /* the same preemption told again (a retry, or the cloud's notice then the agent's) */
    assert_int_equal(call(f, "POST", "/v1/nodes/i-1/notice", TOKEN_NODE, "{}", NULL), 200);
    assert_int_equal(state_job_set_state(f->st, "a", STATE_JOB_RUNNING, f->now), 0);
    assert_int_equal(call(f, "POST", "/v1/jobs/a/finished", TOKEN_JOB, "{}", NULL), 200);
    assert_int_equal(call(f, "POST", "/v1/jobs/a/finished", TOKEN_JOB, "{}", NULL), 200);
    event_kinds(f, "a", kinds, sizeof(kinds));
    assert_string_equal(kinds, "submitted,failure,notice,finished");
    assert_int_equal(call(f, "GET", "/v1/jobs/a/events?limit=2", TOKEN_USER, NULL, &v), 200);
    assert_int_equal(jv_size(jv_get(v, "events")), 2);
    last = jv_at(jv_get(v, "events"), 0);
    assert_string_equal(jv_string_value(jv_get(last, "kind")), "notice");
    assert_string_equal(jv_string_value(jv_get(last, "node")), "i-1");
    jv_free(v);
    assert_int_equal(call(f, "GET", "/v1/jobs/a/events?limit=3", TOKEN_USER, NULL, &v), 200);
    last = jv_at(jv_get(v, "events"), 0);
    assert_non_null(strstr(jv_string_value(jv_get(last, "message")),
                           "rank 1 on node i-1 exited with status 3: its replicas restart"));
    jv_free(v);

    assert_int_equal(call(f, "POST", "/v1/jobs", TOKEN_USER,
                          JOB_SPEC_WITH("d", ",\"deadline\":1714650000"), NULL),
                     201);
    assert_int_equal(call(f, "DELETE", "/v1/jobs/d", TOKEN_USER, NULL, NULL), 200);
    assert_int_equal(call(f, "DELETE", "/v1/jobs/d", TOKEN_USER, NULL, NULL), 200);
    event_kinds(f, "d", kinds, sizeof(kinds));
    assert_string_equal(kinds, "submitted,warning,cancelled");

    expect_error(f, "GET", "/v1/jobs/nope/events", TOKEN_USER, NULL, 404, "no such job");
    expect_error(f, "GET", "/v1/jobs/a/events?limit=0", TOKEN_USER, NULL, 400,
                 "limit must be an integer from 1 to 500");
    expect_error(f, "GET", "/v1/jobs/a/events?limit=x", TOKEN_USER, NULL, 400, "limit");
}

/* The job v has a `waiting` that is null (present, not missing). */
static void assert_waiting_null(const struct jv *v)
{
    assert_non_null(jv_get(v, "waiting"));
    assert_int_equal(jv_type_of(jv_get(v, "waiting")), JV_NULL);
}

/* A pending job's `waiting`: the message of its newest event when that is a `waiting` one, in
 * the list and the job alike; null once a newer event of another kind comes, for a running job,
 * and before any. */
static void api_jobs__pending_job_says_why_it_waits(void **state)
{
    struct fixture *f = *state;
    struct jv *v = NULL;

    populate(f);
    assert_int_equal(call(f, "GET", "/v1/jobs/a", TOKEN_USER, NULL, &v), 200);
    assert_waiting_null(v);
    jv_free(v);
    assert_int_equal(
        state_event_add(f->st, "a", f->now, "waiting", NULL, "no offer can be launched now"), 0);
    assert_int_equal(call(f, "GET", "/v1/jobs/a", TOKEN_USER, NULL, &v), 200);
    assert_string_equal(jv_string_value(jv_get(v, "waiting")), "no offer can be launched now");
    jv_free(v);
    assert_int_equal(call(f, "GET", "/v1/jobs?state=pending", TOKEN_USER, NULL, &v), 200);
    assert_string_equal(jv_string_value(jv_get(jv_at(jv_get(v, "jobs"), 0), "waiting")),
                        "no offer can be launched now");
    jv_free(v);
    assert_int_equal(state_job_set_state(f->st, "a", STATE_JOB_RUNNING, f->now), 0);
    assert_int_equal(call(f, "GET", "/v1/jobs/a", TOKEN_USER, NULL, &v), 200);
    assert_waiting_null(v);
    jv_free(v);
    assert_int_equal(state_job_set_state(f->st, "a", STATE_JOB_PENDING, f->now), 0);
    assert_int_equal(state_event_add(f->st, "a", f->now + 1, "notice", "i-1", "a notice"), 0);
    assert_int_equal(call(f, "GET", "/v1/jobs/a", TOKEN_USER, NULL, &v), 200);
    assert_waiting_null(v);
    jv_free(v);
}

/* A deadline without samples is taken (201) with a warning in the answer and the log: castor
 * cannot tell how much work is left. With samples, or without a deadline, no warning. */
static void api_jobs__deadline_without_samples_is_warned(void **state)
{
    struct fixture *f = *state;
    struct jv *v = NULL;
    const char *w;

    assert_int_equal(
        call(f, "POST", "/v1/jobs", TOKEN_USER, JOB_SPEC_WITH("d", ",\"deadline\":1.9e9"), &v),
        201);
    assert_int_equal(jv_size(jv_get(v, "warnings")), 1);
    w = jv_string_value(jv_at(jv_get(v, "warnings"), 0));
    assert_non_null(w);
    assert_non_null(strstr(w, "a deadline without samples"));
    jv_free(v);
    fflush(f->logf);
    assert_non_null(strstr(f->logtext, "a deadline without samples"));
    assert_non_null(api_job_spec_warning("{\"deadline\":1.9e9,\"samples\":null}"));
    assert_null(api_job_spec_warning("{\"deadline\":1.9e9,\"samples\":1e6}"));
    assert_null(api_job_spec_warning("{\"deadline\":null,\"samples\":null}"));
    assert_null(api_job_spec_warning("not json"));
    assert_int_equal(call(f, "POST", "/v1/jobs", TOKEN_USER,
                          JOB_SPEC_WITH("s", ",\"deadline\":1.9e9,\"samples\":1e6"), &v),
                     201);
    assert_null(jv_get(v, "warnings"));
    jv_free(v);
}

/* A user submits a job (201, the stored spec with defaults), lists, filters, describes and
 * cancels it. */
static void api_jobs__submit_list_get_cancel(void **state)
{
    struct fixture *f = *state;
    struct state_job j;
    struct jv *v = NULL;
    long long x = 0;
    double d = 0;

    assert_int_equal(call(f, "POST", "/v1/jobs", TOKEN_USER, JOB_SPEC("a"), &v), 201);
    assert_string_equal(jv_string_value(jv_get(v, "state")), "pending");
    assert_int_equal(jv_integer_value(jv_get(jv_get(v, "spec"), "min_replicas"), &x), 0);
    assert_int_equal(x, 1);
    /* the GPUs asked for: the gang minimum unless given */
    assert_int_equal(jv_integer_value(jv_get(jv_get(v, "spec"), "replicas"), &x), 0);
    assert_int_equal(x, 1);
    assert_int_equal(jv_number_value(jv_get(jv_get(v, "spec"), "checkpoint_interval"), &d), 0);
    assert_true(d == 600);
    assert_int_equal(jv_integer_value(jv_get(jv_get(v, "spec"), "max_restarts"), &x), 0);
    assert_int_equal(x, API_MAX_RESTARTS_DEFAULT);
    assert_int_equal(jv_number_value(jv_get(jv_get(v, "spec"), "hang_timeout"), &d), 0);
    assert_true(d == API_HANG_TIMEOUT_DEFAULT);
    assert_string_equal(jv_string_value(jv_get(jv_get(v, "spec"), "reconfigure")), "restart");
    jv_free(v);
    assert_int_equal(state_job_get(f->st, "a", &j), 0);
    assert_true(j.submitted_at == f->now);
    assert_non_null(strstr(j.spec, "\"priority\":2"));
    state_job_clear(&j);
    assert_int_equal(
        call(f, "POST", "/v1/jobs", TOKEN_USER, JOB_SPEC_WITH("b", ",\"replicas\":4"), NULL), 201);
    assert_int_equal(state_job_get(f->st, "b", &j), 0);
    assert_non_null(strstr(j.spec, "\"replicas\":4"));
    state_job_clear(&j);

    assert_int_equal(call(f, "GET", "/v1/jobs", TOKEN_USER, NULL, &v), 200);
    assert_int_equal(jv_size(jv_get(v, "jobs")), 2);
    assert_string_equal(jv_string_value(jv_get(jv_at(jv_get(v, "jobs"), 1), "name")), "b");
    jv_free(v);
    assert_int_equal(call(f, "GET", "/v1/jobs?state=running,finished", TOKEN_USER, NULL, &v), 200);
    assert_int_equal(jv_size(jv_get(v, "jobs")), 0);
    jv_free(v);
    assert_int_equal(call(f, "GET", "/v1/jobs/a", TOKEN_USER, NULL, &v), 200);
    assert_string_equal(jv_string_value(jv_get(jv_get(jv_get(v, "spec"), "env"), "A")), "1");
    assert_int_equal(jv_type_of(jv_get(v, "local_bsz")), JV_NULL);
    jv_free(v);
    f->now += 5;
    assert_int_equal(call(f, "DELETE", "/v1/jobs/a", TOKEN_USER, NULL, &v), 200);
    assert_string_equal(jv_string_value(jv_get(v, "state")), "cancelled");
    jv_free(v);
    assert_int_equal(state_job_get(f->st, "a", &j), 0);
    assert_int_equal(j.state, STATE_JOB_CANCELLED);
    assert_true(j.finished_at == f->now);
    state_job_clear(&j);
    assert_int_equal(call(f, "GET", "/v1/jobs?state=cancelled", TOKEN_USER, NULL, &v), 200);
    assert_int_equal(jv_size(jv_get(v, "jobs")), 1);
    jv_free(v);
}

/* A job's length: samples given is stored as given, in the answer and in the state; not given, it
 * is stored as null (unknown), not as a number. */
static void api_jobs__samples_stored_or_null(void **state)
{
    struct fixture *f = *state;
    struct state_job j;
    struct jv *v = NULL, *stored = NULL;
    double d = 0;

    assert_int_equal(
        call(f, "POST", "/v1/jobs", TOKEN_USER, JOB_SPEC_WITH("a", ",\"samples\":1.2e8"), &v), 201);
    assert_int_equal(jv_number_value(jv_get(jv_get(v, "spec"), "samples"), &d), 0);
    assert_true(d == 1.2e8);
    jv_free(v);
    assert_int_equal(state_job_get(f->st, "a", &j), 0);
    assert_int_equal(jv_parse(j.spec, strlen(j.spec), &stored, NULL), 0);
    d = 0;
    assert_int_equal(jv_number_value(jv_get(stored, "samples"), &d), 0);
    assert_true(d == 1.2e8);
    jv_free(stored);
    state_job_clear(&j);
    /* without: present in the stored spec, and null */
    assert_int_equal(call(f, "POST", "/v1/jobs", TOKEN_USER, JOB_SPEC("b"), &v), 201);
    assert_non_null(jv_get(jv_get(v, "spec"), "samples"));
    assert_int_equal(jv_type_of(jv_get(jv_get(v, "spec"), "samples")), JV_NULL);
    jv_free(v);
    assert_int_equal(state_job_get(f->st, "b", &j), 0);
    assert_non_null(strstr(j.spec, "\"samples\":null"));
    state_job_clear(&j);
}

/* The spec the state holds for the job, parsed (the caller frees it). */
static struct jv *stored_spec(struct fixture *f, const char *name)
{
    struct state_job j;
    struct jv *spec = NULL;

    assert_int_equal(state_job_get(f->st, name, &j), 0);
    assert_int_equal(jv_parse(j.spec, strlen(j.spec), &spec, NULL), 0);
    state_job_clear(&j);
    return spec;
}

/* A job's model family: given, it is stored as given, in the answer and in the state; not given,
 * it is stored as null (no family), as samples is. */
static void api_jobs__family_stored_or_null(void **state)
{
    static const char family[] = "resnet50-imagenet/t4:v1.2_x";
    struct fixture *f = *state;
    struct jv *v = NULL, *stored;

    assert_int_equal(call(f, "POST", "/v1/jobs", TOKEN_USER,
                          JOB_SPEC_WITH("a", ",\"family\":\"resnet50-imagenet/t4:v1.2_x\""), &v),
                     201);
    assert_string_equal(jv_string_value(jv_get(jv_get(v, "spec"), "family")), family);
    jv_free(v);
    stored = stored_spec(f, "a");
    assert_string_equal(jv_string_value(jv_get(stored, "family")), family);
    jv_free(stored);
    assert_int_equal(call(f, "POST", "/v1/jobs", TOKEN_USER, JOB_SPEC("b"), &v), 201);
    assert_int_equal(jv_type_of(jv_get(jv_get(v, "spec"), "family")), JV_NULL);
    jv_free(v);
    stored = stored_spec(f, "b");
    assert_non_null(jv_get(stored, "family"));
    assert_int_equal(jv_type_of(jv_get(stored, "family")), JV_NULL);
    jv_free(stored);
}

/* Bad job requests are refused with a reason that names the problem and write nothing. */
static void api_jobs__bad_input_writes_nothing(void **state)
{
    static const struct {
        const char *body;
        const char *what;
    } bad[] = {
        {"{\"name\":\"x\",", "malformed JSON at line 1"},
        {"{\"name\":\"x\",\"command\":[\"a\"],\"workdir\":\"/w\",\"init_batch_size\":NaN}",
         "malformed JSON"},
        {"{\"command\":[\"a\"]}", "name is required"},
        {"{\"name\":\"x y\"}", "name must be letters"},
        {"{\"name\":\"x\",\"workdir\":\"/w\"}", "command is required"},
        {"{\"name\":\"x\",\"command\":\"python\"}", "command must be an array"},
        {"{\"name\":\"x\",\"command\":[\"a\",3]}", "command[1]"},
        {"{\"name\":\"x\",\"command\":[\"a\"]}", "a workdir or an image is required"},
        {"{\"name\":\"x\",\"command\":[\"a\"],\"image\":\"i\",\"env\":{\"1A\":\"v\"}}",
         "not a variable name"},
        {"{\"name\":\"x\",\"command\":[\"a\"],\"image\":\"i\",\"env\":{\"A\":1}}", "env.A"},
        {"{\"name\":\"x\",\"command\":[\"a\"],\"image\":\"i\"}", "init_batch_size is required"},
        {"{\"name\":\"x\",\"command\":[\"a\"],\"image\":\"i\",\"init_batch_size\":-1}",
         "init_batch_size must be a number > 0"},
        {"{\"name\":\"x\",\"command\":[\"a\"],\"image\":\"i\",\"init_batch_size\":64,"
         "\"max_batch_size\":32}",
         "max_batch_size must be a number >= 64"},
        {"{\"name\":\"x\",\"command\":[\"a\"],\"image\":\"i\",\"init_batch_size\":64,"
         "\"max_batch_size\":64,\"max_local_bsz\":8,\"min_replicas\":4,\"max_replicas\":2}",
         "max_replicas must be an integer from 4"},
        {"{\"name\":\"x\",\"command\":[\"a\"],\"image\":\"i\",\"init_batch_size\":64,"
         "\"max_batch_size\":64,\"max_local_bsz\":8,\"max_replicas\":2,\"priority\":1.5}",
         "priority must be an integer"},
        /* batches the configuration file refuses: a job the loop could never place (its
         * accumulation steps overflowed an int, and its allocation was refused each tick) */
        {"{\"name\":\"x\",\"command\":[\"a\"],\"image\":\"i\",\"init_batch_size\":3e9,"
         "\"max_batch_size\":3e9,\"max_local_bsz\":1,\"max_replicas\":1}",
         "init_batch_size must be at most 1e+09"},
        {"{\"name\":\"x\",\"command\":[\"a\"],\"image\":\"i\",\"init_batch_size\":64,"
         "\"max_batch_size\":3e9,\"max_local_bsz\":8,\"max_replicas\":1}",
         "max_batch_size must be at most 1e+09"},
        {"{\"name\":\"x\",\"command\":[\"a\"],\"image\":\"i\",\"init_batch_size\":64,"
         "\"max_batch_size\":64,\"max_local_bsz\":0.001,\"max_replicas\":1}",
         "max_local_bsz must be a number >= 1"},
        {"{\"name\":\"x\",\"command\":[\"a\"],\"image\":\"i\",\"init_batch_size\":64,"
         "\"max_batch_size\":64,\"max_local_bsz\":2e9,\"max_replicas\":1}",
         "max_local_bsz must be at most 1e+09"},
        {JOB_SPEC_WITH("x", ",\"checkpoint_interval\":1e300"),
         "checkpoint_interval must be at most 1e+07"},
        {JOB_SPEC_WITH("x", ",\"hang_timeout\":1e8"), "hang_timeout must be at most 1e+07"},
        {JOB_SPEC_WITH("x", ",\"deadline\":1e300"), "deadline must be at most 253402300799"},
        {JOB_SPEC_WITH("x", ",\"samples\":0"), "samples must be a number > 0"},
        {JOB_SPEC_WITH("x", ",\"max_restarts\":-1"),
         "max_restarts must be an integer from 0 to 1000"},
        {JOB_SPEC_WITH("x", ",\"max_restarts\":1001"), "max_restarts must be an integer from 0"},
        {JOB_SPEC_WITH("x", ",\"hang_timeout\":-1"), "hang_timeout must be a number >= 0"},
        {JOB_SPEC_WITH("x", ",\"hang_timeout\":\"1h\""), "hang_timeout must be a number"},
        {JOB_SPEC_WITH("x", ",\"max_dollars\":0"), "max_dollars must be a number > 0"},
        {JOB_SPEC_WITH("x", ",\"max_dollars\":2e9"), "max_dollars must be at most 1e+09"},
        {JOB_SPEC_WITH("x", ",\"max_dollars\":\"$5\""), "max_dollars must be a number"},
        {JOB_SPEC_WITH("x", ",\"reconfigure\":\"live\""),
         "reconfigure must be restart or in_flight"},
        {JOB_SPEC_WITH("x", ",\"reconfigure\":1"), "reconfigure must be a string"},
        {JOB_SPEC_WITH("x", ",\"replicas\":9"), "replicas must be an integer from 1 to 8"},
        {JOB_SPEC_WITH("x", ",\"min_replicas\":2,\"replicas\":1"),
         "replicas must be an integer from 2 to 8"},
        {JOB_SPEC_WITH("x", ",\"samples\":-1"), "samples must be a number > 0"},
        {JOB_SPEC_WITH("x", ",\"samples\":\"1e8\""), "samples must be a number > 0"},
        {JOB_SPEC_WITH("x", ",\"samples\":null"), "samples must be a number > 0"},
        {JOB_SPEC_WITH("x", ",\"samples\":1e16"), "samples must be at most 1e+15"},
        {JOB_SPEC_WITH("x", ",\"family\":3"), "family must be a string of 1 to 64 bytes"},
        {JOB_SPEC_WITH("x", ",\"family\":null"), "family must be a string of 1 to 64 bytes"},
        {JOB_SPEC_WITH("x", ",\"family\":[\"a\"]"), "family must be a string of 1 to 64 bytes"},
        {JOB_SPEC_WITH("x", ",\"family\":\"\""), "family must be a string of 1 to 64 bytes"},
        {JOB_SPEC_WITH("x", ",\"family\":\"" FAMILY_65 "\""),
         "family must be a string of 1 to 64 bytes"},
        {JOB_SPEC_WITH("x", ",\"family\":\"resnet 50\""), "family must be letters, digits"},
        {JOB_SPEC_WITH("x", ",\"family\":\"a*b\""), "family must be letters, digits"},
        {JOB_SPEC_WITH("x", ",\"family\":\"caf\u00e9\""), "family must be letters, digits"},
        {"{\"name\":\"x\",\"commands\":[\"a\"]}", "unknown field commands"},
        {"{\"name\":\"x\",\"name\":\"y\"}", "malformed JSON"},
        {"\"x\"", "JSON object"},
        {"", "malformed JSON"},
    };
    struct fixture *f = *state;
    char *before, *after;

    populate(f);
    before = dump(f);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        expect_error(f, "POST", "/v1/jobs", TOKEN_USER, bad[i].body, 400, bad[i].what);
    expect_error(f, "POST", "/v1/jobs", TOKEN_USER, JOB_SPEC("a"), 409, "a job named a exists");
    expect_error(f, "GET", "/v1/jobs/nope", TOKEN_USER, NULL, 404, "no such job");
    expect_error(f, "DELETE", "/v1/jobs/nope", TOKEN_USER, NULL, 404, "no such job");
    expect_error(f, "GET", "/v1/jobs/nope/allocation", TOKEN_JOB, NULL, 404, "no such job");
    expect_error(f, "GET", "/v1/jobs?state=sleeping", TOKEN_USER, NULL, 400, "state must be");
    after = dump(f);
    assert_string_equal(before, after);
    free(before);
    free(after);
    assert_int_equal(state_job_set_state(f->st, "a", STATE_JOB_RUNNING, f->now), 0);
    assert_int_equal(state_job_set_state(f->st, "a", STATE_JOB_FINISHED, f->now), 0);
    expect_error(f, "DELETE", "/v1/jobs/a", TOKEN_USER, NULL, 409, "already ended");
}

/* A training job's reports are stored and pooled per configuration; its allocation reads
 * back. */
static void api_reports__store_and_allocation(void **state)
{
    struct fixture *f = *state;
    struct state_report_config *rows = NULL;
    struct state_job j;
    struct jv *v = NULL;
    const struct jv *node;
    long long x = 0;
    size_t n = 0;

    populate(f);
    assert_int_equal(call(f, "POST", "/v1/jobs/a/reports", TOKEN_JOB, REPORT, &v), 200);
    jv_free(v);
    assert_int_equal(call(f, "POST", "/v1/jobs/a/reports", TOKEN_JOB, REPORT, NULL), 200);
    assert_int_equal(state_report_configs(f->st, "a", &rows, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(rows[0].count, 20);
    assert_float_equal(rows[0].step_mean, 0.25, 1e-12);
    assert_float_equal(rows[0].step_sd, 0.01, 1e-12);
    free(rows);
    assert_int_equal(state_job_get(f->st, "a", &j), 0);
    assert_true(j.grad_sqr == 0.5 && j.grad_var == 2.0 && j.progress == 1.5 &&
                j.reported_at == f->now && isnan(j.sync_prior));
    state_job_clear(&j);
    assert_int_equal(call(f, "POST", "/v1/jobs/a/reports", TOKEN_JOB,
                          "{\"configs\":[],\"sync_prior\":0.02}", NULL),
                     200);
    assert_int_equal(state_job_get(f->st, "a", &j), 0);
    assert_true(j.sync_prior == 0.02);
    state_job_clear(&j);
    assert_int_equal(call(f, "POST", "/v1/jobs/a/reports", TOKEN_JOB, "{\"configs\":[]}", NULL),
                     200);

    assert_int_equal(call(f, "GET", "/v1/jobs/a/allocation", TOKEN_JOB, NULL, &v), 200);
    assert_int_equal(jv_integer_value(jv_get(v, "world_size"), &x), 0);
    assert_int_equal(x, 2);
    node = jv_at(jv_get(v, "nodes"), 0);
    assert_string_equal(jv_string_value(jv_get(node, "instance_id")), "i-1");
    assert_int_equal(jv_integer_value(jv_get(v, "accum_steps"), &x), 0);
    assert_int_equal(x, 1);
    jv_free(v);
    assert_int_equal(call(f, "GET", "/v1/jobs/a", TOKEN_USER, NULL, &v), 200);
    assert_int_equal(jv_size(jv_get(v, "reports")), 1);
    assert_int_equal(jv_integer_value(jv_get(jv_at(jv_get(v, "reports"), 0), "count"), &x), 0);
    assert_int_equal(x, 20);
    jv_free(v);
}

/* Reports that make no sense are refused with the reason and write nothing: zero replicas,
 * fewer replicas than nodes, a negative or zero time, sync not below the step, NaN (not JSON),
 * a number out of range, half the gradient statistics, too many configurations, unknown or
 * ended jobs. */
static void api_reports__bad_input_writes_nothing(void **state)
{
#define CFG(fields) "{\"configs\":[{" fields "}]}"
#define OK_FIELDS "\"nodes\":1,\"local_bsz\":8,\"accum_steps\":0,\"count\":3,\"step_sd\":0"
    static const struct {
        const char *body;
        const char *what;
    } bad[] = {
        {CFG(OK_FIELDS ",\"replicas\":0,\"step_mean\":1"), "configs[0].replicas must be"},
        {CFG(OK_FIELDS ",\"replicas\":1,\"step_mean\":-0.5"), "configs[0].step_mean must be"},
        {CFG(OK_FIELDS ",\"replicas\":1,\"step_mean\":0"), "step_mean must be a number > 0"},
        {CFG(OK_FIELDS ",\"replicas\":1,\"step_mean\":1,\"sync_mean\":1"), "sync_mean"},
        {CFG(OK_FIELDS ",\"replicas\":1,\"step_mean\":NaN"), "malformed JSON"},
        {CFG(OK_FIELDS ",\"replicas\":1,\"step_mean\":1e999"), "malformed JSON"},
        {"{\"configs\":[],\"grad\":{\"sqr\":1}}", "grad.var is required"},
        {"{\"configs\":[],\"grad\":{\"sqr\":-1,\"var\":1}}", "grad.sqr must be"},
        {"{\"configs\":[],\"progress\":-3}", "progress must be"},
        {"{\"configs\":[],\"sync_prior\":0}", "sync_prior must be a number > 0"},
        {"{\"configs\":[],\"sync_prior\":\"fast\"}", "sync_prior must be a number > 0"},
        {"{\"configs\":{}}", "configs must be an array"},
        {"{\"configs\":[1]}", "configs[0] must be an object"},
    };
    static const char two_nodes_one_replica[] =
        "{\"configs\":[{\"nodes\":2,\"replicas\":1,\"local_bsz\":8,\"accum_steps\":0,"
        "\"count\":3,\"step_mean\":1,\"step_sd\":0}]}";
    struct fixture *f = *state;
    char *before, *after, *many;
    size_t len = 0;

    populate(f);
    before = dump(f);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (i != 1)
            expect_error(f, "POST", "/v1/jobs/a/reports", TOKEN_JOB, bad[i].body, 400, bad[i].what);
    expect_error(f, "POST", "/v1/jobs/a/reports", TOKEN_JOB, two_nodes_one_replica, 400,
                 "replicas (1) must be at least nodes (2)");
    many = malloc(16384);
    assert_non_null(many);
    len = (size_t)snprintf(many, 16384, "{\"configs\":[");
    for (int i = 0; i < 65; i++)
        len += (size_t)snprintf(many + len, 16384 - len, "%s{}", i ? "," : "");
    snprintf(many + len, 16384 - len, "]}");
    expect_error(f, "POST", "/v1/jobs/a/reports", TOKEN_JOB, many, 400, "at most 64");
    free(many);
    expect_error(f, "POST", "/v1/jobs/nope/reports", TOKEN_JOB, REPORT, 404, "no such job");
    after = dump(f);
    assert_string_equal(before, after);
    free(before);
    free(after);
    assert_int_equal(call(f, "DELETE", "/v1/jobs/a", TOKEN_USER, NULL, NULL), 200);
    before = dump(f);
    expect_error(f, "POST", "/v1/jobs/a/reports", TOKEN_JOB, REPORT, 409, "has ended");
    after = dump(f);
    assert_string_equal(before, after);
    free(before);
    free(after);
#undef CFG
#undef OK_FIELDS
}

/* A job's checkpoint is recorded (progress never below it); its end drops its allocation,
 * records its progress, shows it finished, and a second end (a retry) answers the same; a
 * pending job may end too (its node was lost as it finished). */
static void api_jobs__checkpoint_and_finished(void **state)
{
    struct fixture *f = *state;
    struct state_alloc *rows = NULL;
    struct state_job j;
    struct jv *v = NULL;
    double x = 0;
    size_t n = 9;

    populate(f);
    assert_int_equal(state_job_set_state(f->st, "a", STATE_JOB_RUNNING, f->now), 0);
    assert_int_equal(call(f, "POST", "/v1/jobs/a/checkpoint", TOKEN_JOB, "{\"progress\":4.5}", &v),
                     200);
    assert_string_equal(jv_string_value(jv_get(v, "state")), "running");
    assert_int_equal(jv_number_value(jv_get(v, "checkpoint_progress"), &x), 0);
    assert_float_equal(x, 4.5, 1e-12);
    jv_free(v);
    assert_int_equal(state_job_get(f->st, "a", &j), 0);
    assert_true(j.checkpoint_progress == 4.5 && j.progress == 4.5 && j.checkpoint_at == f->now);
    state_job_clear(&j);

    f->now += 10;
    assert_int_equal(call(f, "POST", "/v1/jobs/a/finished", TOKEN_JOB, "{\"progress\":9}", &v),
                     200);
    assert_string_equal(jv_string_value(jv_get(v, "state")), "finished");
    jv_free(v);
    assert_int_equal(state_job_get(f->st, "a", &j), 0);
    assert_int_equal(j.state, STATE_JOB_FINISHED);
    assert_true(j.finished_at == f->now && j.progress == 9 && j.checkpoint_progress == 9);
    state_job_clear(&j);
    assert_int_equal(state_alloc_get(f->st, "a", &rows, &n), 0);
    assert_int_equal(n, 0);
    state_allocs_free(rows, n);
    f->now += 10;
    assert_int_equal(call(f, "POST", "/v1/jobs/a/finished", TOKEN_JOB, NULL, NULL), 200);
    assert_int_equal(state_job_get(f->st, "a", &j), 0);
    assert_true(j.finished_at == f->now - 10 && j.progress == 9); /* the first end stays */
    state_job_clear(&j);
    assert_int_equal(call(f, "GET", "/v1/jobs?state=finished", TOKEN_USER, NULL, &v), 200);
    assert_int_equal(jv_size(jv_get(v, "jobs")), 1);
    jv_free(v);

    assert_int_equal(call(f, "POST", "/v1/jobs", TOKEN_USER, JOB_SPEC("p"), NULL), 201);
    assert_int_equal(call(f, "POST", "/v1/jobs/p/finished", TOKEN_JOB, "", NULL), 200);
    assert_int_equal(state_job_get(f->st, "p", &j), 0);
    assert_int_equal(j.state, STATE_JOB_FINISHED);
    state_job_clear(&j);
}

/* Bad bodies, unknown jobs, a job cancelled or already ended: refused with the reason, nothing
 * written. */
static void api_jobs__checkpoint_and_finished_bad_input_writes_nothing(void **state)
{
    static const struct {
        const char *path;
        const char *body;
        long status;
        const char *what;
    } bad[] = {
        {"/v1/jobs/a/checkpoint", "{}", 400, "progress is required"},
        {"/v1/jobs/a/checkpoint", "", 400, "malformed JSON"},
        {"/v1/jobs/a/checkpoint", "{\"progress\":-1}", 400, "progress must be"},
        {"/v1/jobs/a/checkpoint", "{\"progress\":\"3\"}", 400, "progress must be"},
        {"/v1/jobs/a/checkpoint", "{\"progress\":1,\"done\":true}", 400, "unknown field done"},
        {"/v1/jobs/a/finished", "{\"progress\":-2}", 400, "progress must be"},
        {"/v1/jobs/a/finished", "{\"finished\":true}", 400, "unknown field finished"},
        {"/v1/jobs/a/finished", "[1]", 400, "must be a JSON object"},
        {"/v1/jobs/a/finished", "{\"progress\":1e999}", 400, "malformed JSON"},
        {"/v1/jobs/nope/finished", "{}", 404, "no such job"},
        {"/v1/jobs/nope/checkpoint", "{\"progress\":1}", 404, "no such job"},
        {"/v1/jobs/c/finished", "{}", 409, "cancelled or failed"},
        {"/v1/jobs/c/checkpoint", "{\"progress\":1}", 409, "has ended"},
    };
    struct fixture *f = *state;
    char *before, *after;

    populate(f);
    assert_int_equal(call(f, "POST", "/v1/jobs", TOKEN_USER, JOB_SPEC("c"), NULL), 201);
    assert_int_equal(call(f, "DELETE", "/v1/jobs/c", TOKEN_USER, NULL, NULL), 200);
    before = dump(f);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        expect_error(f, "POST", bad[i].path, TOKEN_JOB, bad[i].body, bad[i].status, bad[i].what);
    expect_error(f, "POST", "/v1/jobs/a/finished", TOKEN_USER, "{}", 403, "token may not");
    after = dump(f);
    assert_string_equal(before, after);
    free(before);
    free(after);
    assert_int_equal(call(f, "POST", "/v1/jobs/a/finished", TOKEN_JOB, "{}", NULL), 200);
    before = dump(f);
    expect_error(f, "POST", "/v1/jobs/a/checkpoint", TOKEN_JOB, "{\"progress\":1}", 409,
                 "has ended");
    after = dump(f);
    assert_string_equal(before, after);
    free(before);
    free(after);
}

struct reporter {
    int port;
    const char *job;
    int ok, conflict, other;
};

static void *reporter_run(void *arg)
{
    struct reporter *r = arg;
    const struct http_client_header headers[] = {{"Authorization", "Bearer " TOKEN_JOB}};
    struct http_client_request req = {.method = "POST", .headers = headers, .nheaders = 1};
    struct http_client_response resp;
    struct http_client *c = NULL;
    char url[128];

    snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/jobs/%s/reports", r->port, r->job);
    req.url = url;
    req.body = REPORT;
    req.body_len = strlen(REPORT);
    if (http_client_new(&c) < 0)
        return NULL;
    for (int i = 0; i < 20; i++) {
        if (http_client_do(c, &req, &resp, NULL) < 0) {
            r->other++;
            continue;
        }
        if (resp.status == 200)
            r->ok++;
        else if (resp.status == 409)
            r->conflict++;
        else
            r->other++;
        http_client_response_clear(&resp);
    }
    http_client_free(c);
    return NULL;
}

/* Sixteen clients at once post reports for three jobs, one of them ended: the reports share
 * transactions (group commit), yet each is answered for itself (200, or 409 for the ended job)
 * and every accepted one is counted once in the pooled configuration. */
static void api_reports__concurrent_group_commit(void **state)
{
    static const char *const jobs[] = {"a", "b", "c", "a"};
    struct fixture *f = *state;
    struct state_report_config *rows = NULL;
    struct reporter r[16];
    pthread_t t[16];
    size_t n = 0;

    populate(f);
    assert_int_equal(call(f, "POST", "/v1/jobs", TOKEN_USER, JOB_SPEC("b"), NULL), 201);
    assert_int_equal(call(f, "POST", "/v1/jobs", TOKEN_USER, JOB_SPEC("c"), NULL), 201);
    assert_int_equal(call(f, "DELETE", "/v1/jobs/c", TOKEN_USER, NULL, NULL), 200);
    for (int i = 0; i < 16; i++) {
        r[i] = (struct reporter){.port = http_server_port(f->server), .job = jobs[i % 4]};
        assert_int_equal(pthread_create(&t[i], NULL, reporter_run, &r[i]), 0);
    }
    for (int i = 0; i < 16; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        assert_int_equal(r[i].other, 0);
        assert_int_equal(strcmp(r[i].job, "c") == 0 ? r[i].conflict : r[i].ok, 20);
    }
    assert_int_equal(state_report_configs(f->st, "a", &rows, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(rows[0].count, 8 * 20 * 10);
    free(rows);
    assert_int_equal(state_report_configs(f->st, "c", &rows, &n), 0);
    assert_int_equal(n, 0);
}

/* A body over the server's limit is 413 before the API sees it: nothing written, nothing
 * counted as answered by the API. */
static void api_handle__oversized_body_is_413(void **state)
{
    struct fixture *f = *state;
    size_t size = 2 * 64 * 1024;
    char *big = malloc(size + 1), *before, *after;

    assert_non_null(big);
    memset(big, ' ', size);
    memcpy(big, JOB_SPEC("c"), strlen(JOB_SPEC("c")));
    big[size] = '\0';
    populate(f);
    before = dump(f);
    expect_error(f, "POST", "/v1/jobs", TOKEN_USER, big, 413, "too large");
    after = dump(f);
    assert_string_equal(before, after);
    free(before);
    free(after);
    free(big);
}

/* The fleet: nodes not terminated, their GPUs, the cost rate and the dollars spent. */
static void api_fleet__nodes_and_cost(void **state)
{
    struct fixture *f = *state;
    struct jv *v = NULL;
    long long x = 0;
    double d = 0;

    populate(f);
    assert_int_equal(call(f, "POST", "/v1/nodes", TOKEN_NODE,
                          "{\"instance_id\":\"i-2\",\"gpus\":2,\"price\":1.25}", NULL),
                     201);
    assert_int_equal(call(f, "POST", "/v1/nodes", TOKEN_NODE,
                          "{\"instance_id\":\"i-3\",\"gpus\":8,\"price\":10}", NULL),
                     201);
    assert_int_equal(state_node_set_state(f->st, "i-3", STATE_NODE_TERMINATED, f->now), 0);
    assert_int_equal(state_cost_add(f->st, "i-3", f->now - 3600, f->now, 10.0), 0);
    assert_int_equal(state_cost_add(f->st, "i-1", f->now - 3600, f->now, 2.0), 0); /* a: 2 of 4 */
    assert_int_equal(call(f, "GET", "/v1/fleet", TOKEN_USER, NULL, &v), 200);
    assert_int_equal(jv_size(jv_get(v, "nodes")), 2);
    assert_int_equal(jv_integer_value(jv_get(v, "gpus"), &x), 0);
    assert_int_equal(x, 6);
    assert_int_equal(jv_number_value(jv_get(v, "cost_rate"), &d), 0);
    assert_float_equal(d, 4.75, 1e-12);
    assert_int_equal(jv_number_value(jv_get(v, "spent"), &d), 0);
    assert_float_equal(d, 12.0, 1e-12);
    assert_int_equal(jv_number_value(jv_get(v, "idle"), &d), 0);
    assert_float_equal(d, 11.0, 1e-12); /* i-3 with no job, and i-1's two GPUs without one */
    assert_int_equal(jv_type_of(jv_get(v, "spend_limit")), JV_NULL); /* none said */
    assert_string_equal(jv_string_value(jv_get(jv_at(jv_get(v, "nodes"), 1), "market")),
                        "on-demand");
    jv_free(v);
    assert_int_equal(call(f, "GET", "/v1/jobs/a", TOKEN_USER, NULL, &v), 200);
    assert_int_equal(jv_number_value(jv_get(v, "dollars"), &d), 0);
    assert_float_equal(d, 1.0, 1e-12);
    jv_free(v);
    /* the daemon's spend limit, as it last said */
    {
        struct api_metrics m = {.spend_limit = 500, .spend_period = 123.5, .spend_until = 2e9};

        assert_int_equal(api_set_metrics(f->api, &m), 0);
        assert_int_equal(call(f, "GET", "/v1/fleet", TOKEN_USER, NULL, &v), 200);
        assert_int_equal(jv_number_value(jv_get(v, "spend_limit"), &d), 0);
        assert_true(d == 500);
        assert_int_equal(jv_number_value(jv_get(v, "spend_period"), &d), 0);
        assert_true(d == 123.5);
        assert_int_equal(jv_number_value(jv_get(v, "spend_until"), &d), 0);
        assert_true(d == 2e9);                             /* when the period ends */
        assert_int_equal(jv_size(jv_get(v, "quotas")), 0); /* none read */
        jv_free(v);
    }
    /* the cloud's quotas as the daemon last read them, each with the offers it binds */
    {
        const struct api_quota_metrics q[] = {
            {"ec2/us-east-1/L-3819A6DF", "All G and VT Spot Instance Requests (us-east-1)", "vCPUs",
             96, 48},
            {"ec2/us-east-1/L-DB2E81BA", "Running On-Demand G and VT instances (us-east-1)",
             "vCPUs", 0, 0}};
        const struct api_offer_room rooms[] = {
            {"g4dn.12xlarge/us-east-1a/spot", "ec2/us-east-1/L-3819A6DF", 1},
            {"g4dn.12xlarge/us-east-1b/spot", "ec2/us-east-1/L-3819A6DF", 1},
            {"g4dn.12xlarge/us-east-1a/on-demand", "ec2/us-east-1/L-DB2E81BA", 0}};
        struct api_metrics m = {.quotas = q, .nquotas = 2, .rooms = rooms, .nrooms = 3};
        const struct jv *qs, *first;

        assert_int_equal(api_set_metrics(f->api, &m), 0);
        assert_int_equal(call(f, "GET", "/v1/fleet", TOKEN_USER, NULL, &v), 200);
        qs = jv_get(v, "quotas");
        assert_int_equal(jv_size(qs), 2);
        first = jv_at(qs, 0);
        assert_string_equal(jv_string_value(jv_get(first, "quota")), "ec2/us-east-1/L-3819A6DF");
        assert_string_equal(jv_string_value(jv_get(first, "unit")), "vCPUs");
        assert_int_equal(jv_number_value(jv_get(first, "used"), &d), 0);
        assert_true(d == 48);
        assert_int_equal(jv_size(jv_get(first, "offers")), 2);
        assert_string_equal(jv_string_value(jv_get(jv_at(jv_get(first, "offers"), 1), "offer")),
                            "g4dn.12xlarge/us-east-1b/spot");
        assert_int_equal(jv_size(jv_get(jv_at(qs, 1), "offers")), 1);
        assert_int_equal(
            jv_integer_value(jv_get(jv_at(jv_get(jv_at(qs, 1), "offers"), 0), "room"), &x), 0);
        assert_int_equal(x, 0);
        jv_free(v);
        /* a row without its strings is refused, and the last figures stay */
        m.rooms = (const struct api_offer_room[]){{"o", NULL, 1}};
        m.nrooms = 1;
        assert_int_equal(api_set_metrics(f->api, &m), ERR_INVAL);
        assert_int_equal(call(f, "GET", "/v1/fleet", TOKEN_USER, NULL, &v), 200);
        assert_int_equal(jv_size(jv_get(v, "quotas")), 2);
        jv_free(v);
    }
}

/* What the fleet cost, by day and by offer, split by market: a static node $10 and a launched
 * spot node (its launch recorded under an intent) $2, on the fixture's day; since the next day,
 * nothing; by offer, dearest first. Bad queries are refused with their reason. */
static void api_costs__by_day_and_by_offer(void **state)
{
    struct fixture *f = *state;
    struct state_node spot = {.instance_id = "i-s",
                              .provider = "fake",
                              .offer = "g4/spot",
                              .market = STATE_MARKET_SPOT,
                              .zone = "z",
                              .gpus = 4,
                              .state = STATE_NODE_BOOTING,
                              .launch_token = "tok",
                              .launched_at = 0,
                              .ready_at = NAN,
                              .terminated_at = NAN,
                              .price = 2};
    struct jv *v = NULL;
    const struct jv *row;
    char day[TIMESTAMP_ISO8601_LEN + 1], path[80];
    double d = 0;
    int64_t midnight = (int64_t)(f->now / 86400) * 86400;

    spot.launched_at = f->now - 3600;
    assert_int_equal(call(f, "POST", "/v1/nodes", TOKEN_NODE,
                          "{\"instance_id\":\"rack-1\",\"gpus\":8,\"price\":10}", NULL),
                     201);
    assert_int_equal(state_intent_record(f->st, "tok", "g4/spot", 1, f->now - 3600), 0);
    assert_int_equal(state_node_upsert(f->st, &spot), 0);
    assert_int_equal(state_cost_add(f->st, "rack-1", f->now - 3600, f->now, 10.0), 0);
    assert_int_equal(state_cost_add(f->st, "i-s", f->now - 3600, f->now, 2.0), 0);
    assert_int_equal(call(f, "GET", "/v1/costs", TOKEN_USER, NULL, &v), 200);
    assert_string_equal(jv_string_value(jv_get(v, "by")), "day");
    row = jv_at(jv_get(v, "rows"), 0);
    assert_non_null(row);
    assert_int_equal(jv_number_value(jv_get(row, "static"), &d), 0);
    assert_float_equal(d, 10.0, 1e-12);
    assert_int_equal(jv_number_value(jv_get(row, "spot"), &d), 0);
    assert_float_equal(d, 2.0, 1e-12);
    assert_int_equal(jv_number_value(jv_get(jv_get(v, "total"), "dollars"), &d), 0);
    assert_float_equal(d, 12.0, 1e-12);
    jv_free(v);
    timestamp_format_iso8601(midnight + 86400, day);
    day[10] = '\0';
    snprintf(path, sizeof(path), "/v1/costs?since=%s", day);
    assert_int_equal(call(f, "GET", path, TOKEN_USER, NULL, &v), 200);
    assert_int_equal(jv_size(jv_get(v, "rows")), 0);
    jv_free(v);
    assert_int_equal(call(f, "GET", "/v1/costs?by=offer", TOKEN_USER, NULL, &v), 200);
    assert_string_equal(jv_string_value(jv_get(jv_at(jv_get(v, "rows"), 0), "offer")), "static");
    jv_free(v);
    expect_error(f, "GET", "/v1/costs?by=week", TOKEN_USER, NULL, 400, "by must be day or offer");
    expect_error(f, "GET", "/v1/costs?since=yesterday", TOKEN_USER, NULL, 400, "YYYY-MM-DD");
    expect_error(f, "GET", "/v1/costs?since=2026-02-01&until=2026-01-01", TOKEN_USER, NULL, 400,
                 "until is before since");
}

/* Is name a Prometheus metric name? */
static int metric_name_ok(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
                 (i > 0 && c >= '0' && c <= '9');

        if (!ok)
            return 0;
    }
    return n > 0;
}

/* Parse one sample line "name{l="v",...} value": fails the test when it does not parse. The name
 * goes to name (with its labels' text in labels); returns the value. */
static double parse_sample(const char *line, char *name, size_t nsize, char *labels, size_t lsize)
{
    size_t n = strcspn(line, "{ ");
    const char *p = line + n, *lab = p;
    char *end = NULL;
    double v;

    if (!metric_name_ok(line, n) || n >= nsize)
        fail_msg("bad metric name in: %s", line);
    memcpy(name, line, n);
    name[n] = '\0';
    if (*p == '{') {
        p++;
        while (*p != '}') {
            size_t ln = strcspn(p, "=");

            if (!metric_name_ok(p, ln) || p[ln] != '=' || p[ln + 1] != '"')
                fail_msg("bad label in: %s", line);
            for (p += ln + 2; *p != '"'; p++) {
                if (!*p || *p == '\n')
                    fail_msg("unterminated label value in: %s", line);
                if (*p == '\\') {
                    p++;
                    if (*p != '\\' && *p != '"' && *p != 'n')
                        fail_msg("bad escape in: %s", line);
                }
            }
            p++;
            if (*p == ',')
                p++;
            else if (*p != '}')
                fail_msg("bad label list in: %s", line);
        }
        p++;
    }
    snprintf(labels, lsize, "%.*s", (int)(p - lab), lab);
    if (*p != ' ')
        fail_msg("no value in: %s", line);
    v = strtod(p + 1, &end);
    if (end == p + 1 || *end != '\0')
        fail_msg("bad value in: %s", line);
    return v;
}

/* The value of the sample with this exact name and labels in text, or NAN. */
static double sample_value(const char *text, const char *name_and_labels)
{
    size_t n = strlen(name_and_labels);
    const char *p = text;

    while ((p = strstr(p, name_and_labels)) != NULL) {
        if ((p == text || p[-1] == '\n') && p[n] == ' ')
            return strtod(p + n + 1, NULL);
        p += n;
    }
    return NAN;
}

/* /metrics (the metrics token; the user token is refused while there is one) answers the
 * Prometheus text format: every line a HELP, a TYPE or a sample that parses, every sample of a
 * family declared before it; the fleet by market and offer, jobs by state and restarts from the
 * state; the daemon's job gauges, a cumulative decide histogram and provider counters. */
static void api_metrics__prometheus_text(void **state)
{
    struct fixture *f = *state;
    /* a: predicted to finish 600 s before its deadline; b: nothing known; c: a finish, no
     * deadline */
    const struct api_job_metrics jobs[] = {{"a", 812.5, 3.25, 512, 2e9, 2e9 + 600},
                                           {"b", NAN, NAN, 64, NAN, NAN},
                                           {"c", 10, 1, 8, 1.9e9, 0}};
    const struct api_call_metrics calls[] = {{"launch", NULL, 7}, {"terminate", NULL, 2}};
    const struct api_call_metrics errors[] = {{"launch", "Insufficient\"Capacity\\\n", 3}};
    const struct api_quota_metrics quotas[] = {
        {"compute/GPUS_ALL_REGIONS", "GPUS_ALL_REGIONS", "GPUs", 8, 4}};
    const struct api_offer_room rooms[] = {
        {"a2/us-central1-a/spot", "compute/GPUS_ALL_REGIONS", 0}};
    const struct api_offer_price prices[] = {{"a2/us-central1-a/spot", 1, 1.25, 0.125},
                                             {"a2/europe-west4-a/standard", 0, NAN, NAN}};
    struct api_metrics m = {.jobs = jobs,
                            .njobs = 3,
                            .decide_failures = 4,
                            .calls = calls,
                            .ncalls = 2,
                            .errors = errors,
                            .nerrors = 1,
                            .node_losses = {[API_LOSS_SILENT] = 2, [API_LOSS_GONE] = 5},
                            .nodes_unfenced = 3,
                            .spend_limit = 100,
                            .spend_period = 42.5,
                            .quotas = quotas,
                            .nquotas = 1,
                            .rooms = rooms,
                            .nrooms = 1,
                            .prices = prices,
                            .nprices = 2};
    struct http_client_request req = {.method = "GET"};
    struct http_client_response r = {0};
    char url[96], auth[96], name[128], labels[256], family[128] = "";
    const struct http_client_header headers[] = {{"Authorization", auth}};
    double last_bucket = -1;
    char *line, *save = NULL;
    int samples = 0;

    populate(f);
    assert_int_equal(call(f, "POST", "/v1/nodes", TOKEN_NODE,
                          "{\"instance_id\":\"i-2\",\"gpus\":2,\"offer\":\"p3.8xlarge\","
                          "\"market\":\"spot\",\"price\":3.5}",
                          NULL),
                     201);
    assert_int_equal(call(f, "POST", "/v1/nodes/i-1/failures", TOKEN_NODE,
                          "{\"job\":\"a\",\"attempt\":0,\"rank\":0,\"signal\":11}", NULL),
                     200);
    assert_int_equal(state_cost_add(f->st, "i-1", f->now - 3600, f->now, 4.0), 0); /* a: 2 of 4 */
    assert_int_equal(api_metrics_observe_decide(&m, 0.003), 0);
    assert_int_equal(api_metrics_observe_decide(&m, 0.2), 0);
    assert_int_equal(api_metrics_observe_decide(&m, 100), 0);
    assert_int_equal(api_metrics_observe_decide(&m, -1), ERR_INVAL);
    assert_int_equal(api_set_metrics(f->api, &m), 0);
    expect_error(f, "GET", "/metrics", TOKEN_USER, NULL, 403, "token may not");

    snprintf(url, sizeof(url), "%s/metrics", f->base);
    snprintf(auth, sizeof(auth), "Bearer %s", TOKEN_METRICS);
    req.url = url;
    req.headers = headers;
    req.nheaders = 1;
    assert_int_equal(http_client_do(f->client, &req, &r, NULL), 0);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.content_type, "text/plain; version=0.0.4"));
    assert_float_equal(
        sample_value(r.body, "castor_fleet_nodes{market=\"spot\",offer=\"p3.8xlarge\"}"), 2, 0);
    assert_float_equal(
        sample_value(
            r.body,
            "castor_fleet_cost_rate_dollars_per_hour{market=\"spot\",offer=\"p3.8xlarge\"}"),
        7.0, 1e-12);
    assert_float_equal(
        sample_value(r.body, "castor_fleet_gpus{market=\"spot\",offer=\"p3.8xlarge\"}"), 6, 0);
    assert_float_equal(sample_value(r.body, "castor_jobs{state=\"pending\"}"), 1, 0);
    assert_float_equal(sample_value(r.body, "castor_job_restarts_total{job=\"a\"}"), 0, 0);
    assert_float_equal(sample_value(r.body, "castor_job_failures_total{job=\"a\"}"), 1, 0);
    assert_float_equal(sample_value(r.body, "castor_job_dollars_total{job=\"a\"}"), 2, 1e-12);
    assert_float_equal(sample_value(r.body, "castor_fleet_dollars_total{held=\"jobs\"}"), 2, 1e-12);
    assert_float_equal(sample_value(r.body, "castor_fleet_dollars_total{held=\"idle\"}"), 2, 1e-12);
    assert_float_equal(sample_value(r.body, "castor_node_losses_total{reason=\"silent\"}"), 2, 0);
    assert_float_equal(sample_value(r.body, "castor_node_losses_total{reason=\"gone\"}"), 5, 0);
    assert_float_equal(sample_value(r.body, "castor_node_losses_total{reason=\"unregistered\"}"), 0,
                       0);
    assert_float_equal(sample_value(r.body, "castor_nodes_unfenced"), 3, 0);
    assert_float_equal(sample_value(r.body, "castor_spend_limit_dollars"), 100, 0);
    assert_float_equal(sample_value(r.body, "castor_spend_period_dollars"), 42.5, 0);
    assert_float_equal(
        sample_value(r.body,
                     "castor_quota_limit{quota=\"compute/GPUS_ALL_REGIONS\",unit=\"GPUs\"}"),
        8, 0);
    assert_float_equal(
        sample_value(r.body, "castor_quota_used{quota=\"compute/GPUS_ALL_REGIONS\",unit=\"GPUs\"}"),
        4, 0);
    assert_float_equal(sample_value(r.body, "castor_offer_quota_room_nodes{offer=\"a2/"
                                            "us-central1-a/spot\",quota=\"compute/"
                                            "GPUS_ALL_REGIONS\"}"),
                       0, 0);
    assert_float_equal(sample_value(r.body, "castor_offer_price_dollars_per_hour{market=\"spot\","
                                            "offer=\"a2/us-central1-a/spot\"}"),
                       1.25, 0);
    assert_non_null(strstr(r.body, "castor_offer_price_dollars_per_hour{market=\"on-demand\","
                                   "offer=\"a2/europe-west4-a/standard\"} NaN\n"));
    /* the learned preemption rate; none yet for the other offer: no sample */
    assert_float_equal(sample_value(r.body,
                                    "castor_offer_preemptions_per_node_hour{market=\"spot\","
                                    "offer=\"a2/us-central1-a/spot\"}"),
                       0.125, 0);
    assert_null(strstr(r.body, "castor_offer_preemptions_per_node_hour{market=\"on-demand\""));
    assert_float_equal(sample_value(r.body, "castor_job_goodput{job=\"a\"}"), 812.5, 0);
    assert_true(isnan(sample_value(r.body, "castor_job_goodput{job=\"b\"}")));
    assert_float_equal(sample_value(r.body, "castor_job_finish_timestamp_seconds{job=\"a\"}"), 2e9,
                       0);
    assert_float_equal(sample_value(r.body, "castor_job_deadline_slack_seconds{job=\"a\"}"), 600,
                       0);
    assert_true(isnan(sample_value(r.body, "castor_job_finish_timestamp_seconds{job=\"b\"}")));
    assert_float_equal(sample_value(r.body, "castor_job_finish_timestamp_seconds{job=\"c\"}"),
                       1.9e9, 0);
    assert_true(isnan(sample_value(r.body, "castor_job_deadline_slack_seconds{job=\"c\"}")));
    assert_float_equal(sample_value(r.body, "castor_job_batch_size{job=\"b\"}"), 64, 0);
    assert_float_equal(sample_value(r.body, "castor_decide_latency_seconds_bucket{le=\"0.005\"}"),
                       1, 0);
    assert_float_equal(sample_value(r.body, "castor_decide_latency_seconds_bucket{le=\"0.5\"}"), 2,
                       0);
    assert_float_equal(sample_value(r.body, "castor_decide_latency_seconds_bucket{le=\"+Inf\"}"), 3,
                       0);
    assert_float_equal(sample_value(r.body, "castor_decide_latency_seconds_sum"), 100.203, 1e-9);
    assert_float_equal(sample_value(r.body, "castor_decide_failures_total"), 4, 0);
    assert_float_equal(sample_value(r.body, "castor_provider_calls_total{op=\"launch\"}"), 7, 0);
    assert_float_equal(
        sample_value(
            r.body,
            "castor_provider_errors_total{op=\"launch\",code=\"Insufficient\\\"Capacity\\\\\\n\"}"),
        3, 0);
    assert_true(sample_value(r.body, "castor_api_requests_total{code=\"201\"}") >= 3);

    for (line = strtok_r(r.body, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "# HELP ", 7) == 0)
            continue;
        if (strncmp(line, "# TYPE ", 7) == 0) {
            size_t n = strcspn(line + 7, " ");

            assert_true(metric_name_ok(line + 7, n));
            snprintf(family, sizeof(family), "%.*s", (int)n, line + 7);
            assert_true(strcmp(line + 8 + n, "gauge") == 0 ||
                        strcmp(line + 8 + n, "counter") == 0 ||
                        strcmp(line + 8 + n, "histogram") == 0);
            last_bucket = -1;
            continue;
        }
        {
            double v = parse_sample(line, name, sizeof(name), labels, sizeof(labels));

            if (strncmp(name, family, strlen(family)) != 0 || !family[0])
                fail_msg("sample %s outside its family %s", name, family);
            if (strstr(name, "_bucket")) { /* cumulative */
                assert_true(v >= last_bucket);
                last_bucket = v;
            }
            samples++;
        }
    }
    assert_true(samples >= 20);
    http_client_response_clear(&r);

    /* the predicted finish in the job's description too; null where not known */
    {
        struct jv *v = NULL;
        double eta = 0;

        assert_int_equal(call(f, "GET", "/v1/jobs/a", TOKEN_USER, NULL, &v), 200);
        assert_int_equal(jv_number_value(jv_get(v, "eta"), &eta), 0);
        assert_true(eta == 2e9);
        jv_free(v);
        m.jobs = jobs + 1;
        m.njobs = 1;
        assert_int_equal(api_set_metrics(f->api, &m), 0);
        assert_int_equal(call(f, "GET", "/v1/jobs/a", TOKEN_USER, NULL, &v), 200);
        assert_int_equal(jv_type_of(jv_get(v, "eta")), JV_NULL);
        jv_free(v);
    }
}

/* No line of the log holds a token, whatever the requests did (good, refused, wrong token,
 * another role's token); lines about a job or a node carry its name. */
static void api_log__never_holds_a_token(void **state)
{
    static const char *const secrets[] = {TOKEN_NODE, TOKEN_JOB, TOKEN_USER, TOKEN_METRICS,
                                          TOKEN_WRONG};
    struct fixture *f = *state;

    populate(f);
    for (size_t i = 0; i < NENDPOINTS; i++) {
        call(f, endpoints[i].method, endpoints[i].path, endpoints[i].token, endpoints[i].body,
             NULL);
        call(f, endpoints[i].method, endpoints[i].path, TOKEN_WRONG, endpoints[i].body, NULL);
        call(f, endpoints[i].method, endpoints[i].path, TOKEN_NODE, endpoints[i].body, NULL);
        call(f, endpoints[i].method, endpoints[i].path, NULL, endpoints[i].body, NULL);
    }
    fflush(f->logf);
    assert_true(f->loglen > 0);
    for (size_t i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++)
        if (strstr(f->logtext, secrets[i]))
            fail_msg("the log holds a token: %s", secrets[i]);
    assert_non_null(strstr(f->logtext, "\"job\":\"a\""));
    assert_non_null(strstr(f->logtext, "\"node\":\"i-1\""));
    assert_non_null(strstr(f->logtext, "\"level\":\"warn\""));
    assert_non_null(strstr(f->logtext, "\"time\":\"2024-05-01T12:00:00.000Z\""));
}

/* A job's own token (api_job_token), as its node's assignment hands it to the job's replicas,
 * acts for that job only: another job's paths, and every path that is not the job role's, answer
 * 403 and write nothing. A token altered, cut, or made under another job token is not valid; the
 * shared job token still acts for every job. The log never holds the token. */
static void api_job_token__speaks_for_its_job_only(void **state)
{
    static const char *const other_tokens_[] = {TOKEN_NODE, "another-job-token-0123456789",
                                                TOKEN_USER};
    struct fixture *f = *state;
    char mine[API_JOB_TOKEN_MAX], again[API_JOB_TOKEN_MAX], bad[API_JOB_TOKEN_MAX + 8];
    struct api_tokens tokens = {
        {strdup(other_tokens_[0]), strdup(other_tokens_[1]), strdup(other_tokens_[2]), NULL}};
    struct api_config cfg = {.state = f->st, .clock = fake_clock, .clock_ctx = f};
    struct api *other = NULL;
    struct jv *v = NULL;
    char *before, *after;

    populate(f);
    assert_int_equal(call(f, "POST", "/v1/jobs", TOKEN_USER, JOB_SPEC("b"), NULL), 201);
    assert_int_equal(api_job_token(f->api, "a", mine, sizeof(mine)), 0);
    assert_int_equal(strncmp(mine, "cj1.a.", 6), 0);
    assert_int_equal(strlen(mine), 6 + 64);
    assert_int_equal(api_job_token(f->api, "a", again, sizeof(again)), 0);
    assert_string_equal(mine, again); /* nothing stored: the same each time */
    assert_int_equal(api_job_token(f->api, "b", again, sizeof(again)), 0);
    assert_string_not_equal(mine + 6, again + 6);
    assert_int_equal(api_job_token(f->api, "a/b", again, sizeof(again)), ERR_INVAL);
    assert_int_equal(api_job_token(f->api, "a", again, API_JOB_TOKEN_MAX - 1), ERR_INVAL);
    /* handed out in the assignment */
    assert_int_equal(call(f, "GET", "/v1/nodes/i-1/assignment", TOKEN_NODE, NULL, &v), 200);
    assert_string_equal(jv_string_value(jv_get(jv_at(jv_get(v, "jobs"), 0), "job_token")), mine);
    jv_free(v);

    before = dump(f);
    expect_error(f, "POST", "/v1/jobs/b/finished", mine, "{\"progress\":2}", 403,
                 "the token of job a may not");
    expect_error(f, "POST", "/v1/jobs/b/checkpoint", mine, "{\"progress\":1}", 403, "job a");
    expect_error(f, "GET", "/v1/jobs/b/allocation", mine, NULL, 403, "job a");
    expect_error(f, "GET", "/v1/jobs/a", mine, NULL, 403, "may not");
    expect_error(f, "POST", "/v1/nodes/i-1/heartbeat", mine, "{}", 403, "may not");
    snprintf(bad, sizeof(bad), "%s", mine);
    bad[strlen(bad) - 1] = bad[strlen(bad) - 1] == '0' ? '1' : '0';
    expect_error(f, "GET", "/v1/jobs/a/allocation", bad, NULL, 401, "not valid");
    snprintf(bad, sizeof(bad), "%.*s", (int)strlen(mine) - 1, mine);
    expect_error(f, "GET", "/v1/jobs/a/allocation", bad, NULL, 401, "not valid");
    snprintf(bad, sizeof(bad), "cj1.b.%s", mine + 6); /* a's mac under b's name */
    expect_error(f, "GET", "/v1/jobs/b/allocation", bad, NULL, 401, "not valid");
    snprintf(bad, sizeof(bad), "cj1..%s", mine + 6);
    expect_error(f, "GET", "/v1/jobs/a/allocation", bad, NULL, 401, "not valid");
    cfg.tokens = &tokens;
    assert_int_equal(api_new(&cfg, &other, NULL), 0);
    api_tokens_clear(&tokens);
    assert_int_equal(api_job_token(other, "a", bad, sizeof(bad)), 0);
    assert_string_not_equal(bad, mine);
    api_free(other);
    expect_error(f, "GET", "/v1/jobs/a/allocation", bad, NULL, 401, "not valid");
    after = dump(f);
    assert_string_equal(before, after);
    free(before);
    free(after);

    /* its own job's paths */
    assert_int_equal(call(f, "GET", "/v1/jobs/a/allocation", mine, NULL, NULL), 200);
    assert_int_equal(call(f, "POST", "/v1/jobs/a/reports", mine, REPORT, NULL), 200);
    assert_int_equal(call(f, "POST", "/v1/jobs/a/checkpoint", mine, "{\"progress\":1}", NULL), 200);
    /* the shared token still speaks for any job */
    assert_int_equal(call(f, "GET", "/v1/jobs/b/allocation", TOKEN_JOB, NULL, NULL), 200);
    fflush(f->logf);
    assert_null(strstr(f->logtext, mine + 6));
}

/* With the key of the nodes' tokens kept apart (api_config.node_key, as the daemon keeps it in
 * the state), a node's token cannot be made from the shared node token, which every worker holds:
 * one forged as HMAC(HMAC(shared token, the old label), node) is refused, the registration's
 * answer acts, and an API given the same key again (a restart) accepts it. */
static void api_node_token__not_derivable_from_the_shared_token(void **state)
{
    struct fixture *f = *state;
    static const unsigned char key[API_NODE_KEY_LEN] = {7, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    struct api_config cfg = {
        .state = f->st, .clock = fake_clock, .clock_ctx = f, .per_node_tokens = 1, .node_key = key};
    struct api_tokens tokens = {{strdup(TOKEN_NODE), strdup(TOKEN_JOB), strdup(TOKEN_USER), NULL}};
    struct http_server_config hc = {.max_body = 64 * 1024};
    struct http_server *server = NULL;
    struct api *kept = NULL, *again = NULL;
    unsigned char derived[CRYPTO_SHA256_LEN], mac[CRYPTO_SHA256_LEN];
    char forged[API_JOB_TOKEN_MAX], hex[2 * CRYPTO_SHA256_LEN + 1], mine[API_JOB_TOKEN_MAX];
    char base[64];
    struct jv *v = NULL;

    populate(f);
    cfg.tokens = &tokens;
    assert_int_equal(api_new(&cfg, &kept, NULL), 0);
    assert_int_equal(http_server_start(&hc, api_handle, kept, &server, NULL), 0);
    snprintf(base, sizeof(base), "%s", f->base);
    snprintf(f->base, sizeof(f->base), "http://127.0.0.1:%d", http_server_port(server));
    assert_int_equal(
        call(f, "POST", "/v1/nodes", TOKEN_NODE, "{\"instance_id\":\"i-7\",\"gpus\":1}", &v), 201);
    snprintf(mine, sizeof(mine), "%s", jv_string_value(jv_get(v, "node_token")));
    jv_free(v);
    /* what a worker could compute from the shared token */
    assert_int_equal(crypto_hmac_sha256(TOKEN_NODE, strlen(TOKEN_NODE), "castor per-node tokens v1",
                                        strlen("castor per-node tokens v1"), derived),
                     0);
    assert_int_equal(crypto_hmac_sha256(derived, sizeof(derived), "i-7", 3, mac), 0);
    crypto_hex(mac, sizeof(mac), hex);
    snprintf(forged, sizeof(forged), "cn1.i-7.%s", hex);
    assert_string_not_equal(forged, mine);
    expect_error(f, "POST", "/v1/nodes/i-7/heartbeat", forged, "{}", 401, "not valid");
    assert_int_equal(call(f, "POST", "/v1/nodes/i-7/heartbeat", mine, "{}", NULL), 200);
    http_server_stop(server);
    /* the same key after a restart: the node's token still acts */
    assert_int_equal(api_new(&cfg, &again, NULL), 0);
    api_tokens_clear(&tokens);
    assert_int_equal(api_node_token(again, "i-7", forged, sizeof(forged)), 0);
    assert_string_equal(forged, mine);
    api_free(again);
    api_free(kept);
    snprintf(f->base, sizeof(f->base), "%s", base);
}

/* A node's own token, as its first registration answers it, acts for that node only; with
 * per_node_tokens the shared node token only registers nodes. */
static void api_node_token__speaks_for_its_node_only(void **state)
{
    struct fixture *f = *state;
    char mine[API_JOB_TOKEN_MAX], bad[API_JOB_TOKEN_MAX + 8];
    struct api_tokens tokens = {{strdup(TOKEN_NODE), strdup(TOKEN_JOB), strdup(TOKEN_USER), NULL}};
    struct api_config cfg = {
        .state = f->st, .clock = fake_clock, .clock_ctx = f, .per_node_tokens = 1};
    struct http_server *server = NULL;
    struct http_server_config hc = {.max_body = 64 * 1024};
    struct api *strict = NULL;
    struct jv *v = NULL;
    char base[64];

    populate(f);
    assert_int_equal(
        call(f, "POST", "/v1/nodes", TOKEN_NODE, "{\"instance_id\":\"i-7\",\"gpus\":1}", &v), 201);
    assert_int_equal(api_node_token(f->api, "i-7", mine, sizeof(mine)), 0);
    assert_string_equal(jv_string_value(jv_get(v, "node_token")), mine);
    jv_free(v);
    assert_int_equal(
        call(f, "POST", "/v1/nodes", TOKEN_NODE, "{\"instance_id\":\"i-7\",\"gpus\":1}", &v), 409);
    assert_null(jv_get(v, "node_token")); /* never to a second registration */
    jv_free(v);
    assert_int_equal(call(f, "POST", "/v1/nodes/i-7/heartbeat", mine, "{}", NULL), 200);
    assert_int_equal(call(f, "GET", "/v1/nodes/i-7/assignment", mine, NULL, NULL), 200);
    /* an agent that names itself gets its answer again (it was lost); another agent does not */
    assert_int_equal(call(f, "POST", "/v1/nodes", TOKEN_NODE,
                          "{\"instance_id\":\"i-6\",\"gpus\":1,"
                          "\"agent\":\"0123456789abcdef0123456789abcdef\"}",
                          NULL),
                     201);
    assert_int_equal(call(f, "POST", "/v1/nodes", TOKEN_NODE,
                          "{\"instance_id\":\"i-6\",\"gpus\":1,"
                          "\"agent\":\"0123456789abcdef0123456789abcdef\"}",
                          &v),
                     201);
    assert_int_equal(api_node_token(f->api, "i-6", bad, sizeof(bad)), 0);
    assert_string_equal(jv_string_value(jv_get(v, "node_token")), bad);
    jv_free(v);
    assert_int_equal(call(f, "POST", "/v1/nodes", TOKEN_NODE,
                          "{\"instance_id\":\"i-6\",\"gpus\":1,"
                          "\"agent\":\"ffffffffffffffff0123456789abcdef\"}",
                          &v),
                     409);
    assert_null(jv_get(v, "node_token"));
    jv_free(v);
    expect_error(f, "POST", "/v1/nodes", TOKEN_NODE,
                 "{\"instance_id\":\"i-6\",\"gpus\":1,\"agent\":\"XYZ0123456789abcdef\"}", 400,
                 "agent must be 16 to 64 lowercase hex digits");
    expect_error(f, "POST", "/v1/nodes/i-1/heartbeat", mine, "{}", 403, "the token of node i-7");
    expect_error(f, "GET", "/v1/nodes/i-1/assignment", mine, NULL, 403, "node i-7");
    expect_error(f, "POST", "/v1/nodes", mine, "{\"instance_id\":\"i-8\",\"gpus\":1}", 403,
                 "node i-7");
    snprintf(bad, sizeof(bad), "%s", mine);
    bad[strlen(bad) - 1] = bad[strlen(bad) - 1] == '0' ? '1' : '0';
    expect_error(f, "POST", "/v1/nodes/i-7/heartbeat", bad, "{}", 401, "not valid");
    /* without per_node_tokens the shared token still acts on i-7's paths */
    assert_int_equal(call(f, "POST", "/v1/nodes/i-7/heartbeat", TOKEN_NODE, "{}", NULL), 200);

    /* with them, over the same state: only the node's own */
    cfg.tokens = &tokens;
    assert_int_equal(api_new(&cfg, &strict, NULL), 0);
    api_tokens_clear(&tokens);
    assert_int_equal(http_server_start(&hc, api_handle, strict, &server, NULL), 0);
    snprintf(base, sizeof(base), "%s", f->base);
    snprintf(f->base, sizeof(f->base), "http://127.0.0.1:%d", http_server_port(server));
    expect_error(f, "POST", "/v1/nodes/i-7/heartbeat", TOKEN_NODE, "{}", 403,
                 "the shared node token only registers nodes");
    expect_error(f, "GET", "/v1/nodes/i-7/assignment", TOKEN_NODE, NULL, 403, "own token");
    assert_int_equal(call(f, "POST", "/v1/nodes/i-7/heartbeat", mine, "{}", NULL), 200);
    assert_int_equal(
        call(f, "POST", "/v1/nodes", TOKEN_NODE, "{\"instance_id\":\"i-9\",\"gpus\":1}", NULL),
        201);
    http_server_stop(server);
    api_free(strict);
    snprintf(f->base, sizeof(f->base), "%s", base);
}

/* ---- tokens ---- */

static void unset_tokens(void)
{
    unsetenv(API_ENV_NODE_TOKEN);
    unsetenv(API_ENV_JOB_TOKEN);
    unsetenv(API_ENV_USER_TOKEN);
    unsetenv(API_ENV_METRICS_TOKEN);
}

/* From the environment: the three required tokens (metrics optional); a missing one is
 * ERR_NOENT, a short one or two alike ERR_INVAL, and no message holds a token. */
static void api_tokens_from_env__rules(void **state)
{
    struct api_tokens t = {{0}};
    struct error e = {0};

    (void)state;
    unset_tokens();
    setenv(API_ENV_NODE_TOKEN, TOKEN_NODE, 1);
    setenv(API_ENV_JOB_TOKEN, TOKEN_JOB, 1);
    assert_int_equal(api_tokens_from_env(&t, &e), ERR_NOENT);
    assert_non_null(strstr(e.msg, "user token"));
    setenv(API_ENV_USER_TOKEN, TOKEN_USER, 1);
    assert_int_equal(api_tokens_from_env(&t, &e), 0);
    assert_string_equal(t.token[API_ROLE_USER], TOKEN_USER);
    assert_null(t.token[API_ROLE_METRICS]);
    api_tokens_clear(&t);
    assert_null(t.token[API_ROLE_NODE]);
    setenv(API_ENV_USER_TOKEN, "short", 1);
    assert_int_equal(api_tokens_from_env(&t, &e), ERR_INVAL);
    assert_null(strstr(e.msg, "short"));
    setenv(API_ENV_USER_TOKEN, TOKEN_NODE, 1);
    assert_int_equal(api_tokens_from_env(&t, &e), ERR_INVAL);
    assert_non_null(strstr(e.msg, "the same"));
    assert_null(strstr(e.msg, TOKEN_NODE));
    setenv(API_ENV_USER_TOKEN, "user token with spaces 0123456789", 1);
    assert_int_equal(api_tokens_from_env(&t, &e), ERR_INVAL);
    assert_null(t.token[API_ROLE_NODE]);
    unset_tokens();
}

static void write_token(const char *path, const char *text, mode_t mode)
{
    FILE *fp = fopen(path, "w");

    assert_non_null(fp);
    assert_int_equal(fputs(text, fp) >= 0, 1);
    assert_int_equal(fclose(fp), 0);
    assert_int_equal(chmod(path, mode), 0);
}

/* From files: one token per file, the final newline dropped; a file others can read is refused,
 * as is a missing one. */
static void api_tokens_from_files__rules(void **state)
{
    char dir[] = "/tmp/castor-test-tokens-XXXXXX", node[64], job[64], user[64];
    struct api_tokens t = {{0}};
    struct error e = {0};

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(node, sizeof(node), "%s/node", dir);
    snprintf(job, sizeof(job), "%s/job", dir);
    snprintf(user, sizeof(user), "%s/user", dir);
    write_token(node, TOKEN_NODE "\n", 0600);
    write_token(job, TOKEN_JOB, 0600);
    write_token(user, TOKEN_USER "\r\n", 0644);
    assert_int_equal(api_tokens_from_files(node, job, user, NULL, &t, &e), ERR_INVAL);
    assert_non_null(strstr(e.msg, "chmod 600"));
    assert_string_equal(e.file, user);
    assert_int_equal(chmod(user, 0600), 0);
    assert_int_equal(api_tokens_from_files(node, job, user, NULL, &t, &e), 0);
    assert_string_equal(t.token[API_ROLE_NODE], TOKEN_NODE);
    assert_string_equal(t.token[API_ROLE_USER], TOKEN_USER);
    api_tokens_clear(&t);
    assert_int_equal(api_tokens_from_files(node, job, "/nonexistent/x", NULL, &t, &e), ERR_NOENT);
    assert_null(t.token[API_ROLE_NODE]);
    assert_int_equal(unlink(node), 0);
    assert_int_equal(unlink(job), 0);
    assert_int_equal(unlink(user), 0);
    assert_int_equal(rmdir(dir), 0);
}

#define API_TEST(f) cmocka_unit_test_setup_teardown(f, api_setup, api_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        API_TEST(api_handle__every_endpoint_needs_a_token),
        API_TEST(api_handle__roles_kept_apart),
        API_TEST(api_handle__white_space_after_the_token),
        API_TEST(api_nodes__register_heartbeat_assignment_notice),
        API_TEST(api_nodes__heartbeat_heard_while_the_state_cannot_write),
        API_TEST(api_handle__changes_told_for_the_decide_step),
        API_TEST(api_nodes__assignment_names_the_placement),
        API_TEST(api_nodes__new_replicas_wait_for_the_old_ones),
        cmocka_unit_test_setup_teardown(api_nodes__down_refused_writes_nothing, api_setup,
                                        api_teardown),
        cmocka_unit_test_setup_teardown(api_nodes__attestation_binds_a_registration_to_its_instance,
                                        api_setup_attest, api_teardown),
        API_TEST(api_nodes__attestation_not_asked),
        API_TEST(api_nodes__bad_input_writes_nothing),
        API_TEST(api_nodes__replica_failures_restart_then_fail),
        API_TEST(api_nodes__bad_failure_reports_write_nothing),
        API_TEST(api_nodes__rank_0_completion_finishes_the_job),
        API_TEST(api_nodes__completion_after_its_peers_failure),
        API_TEST(api_job_generation__in_flight_jobs_keep_theirs_through_a_configuration),
        API_TEST(api_jobs__events_tell_what_happened),
        API_TEST(api_jobs__pending_job_says_why_it_waits),
        API_TEST(api_jobs__submit_list_get_cancel),
        API_TEST(api_jobs__deadline_without_samples_is_warned),
        API_TEST(api_jobs__samples_stored_or_null),
        API_TEST(api_jobs__family_stored_or_null),
        API_TEST(api_jobs__bad_input_writes_nothing),
        API_TEST(api_reports__store_and_allocation),
        API_TEST(api_reports__bad_input_writes_nothing),
        API_TEST(api_reports__concurrent_group_commit),
        API_TEST(api_jobs__checkpoint_and_finished),
        API_TEST(api_jobs__checkpoint_and_finished_bad_input_writes_nothing),
        API_TEST(api_handle__oversized_body_is_413),
        API_TEST(api_handle__route_table_walked_every_route_needs_its_token),
        API_TEST(api_fleet__nodes_and_cost),
        API_TEST(api_costs__by_day_and_by_offer),
        API_TEST(api_metrics__prometheus_text),
        API_TEST(api_log__never_holds_a_token),
        API_TEST(api_job_token__speaks_for_its_job_only),
        API_TEST(api_node_token__speaks_for_its_node_only),
        API_TEST(api_node_token__not_derivable_from_the_shared_token),
        cmocka_unit_test(api_tokens_from_env__rules),
        cmocka_unit_test(api_tokens_from_files__rules),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
