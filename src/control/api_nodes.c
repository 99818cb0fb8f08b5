/* api_nodes.c: the node agents' endpoints: registration, heartbeats, preemption notices and
 * each node's assignment (its jobs' ranks, world, master, configuration and spec). */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/events.h"
#include "control/api_internal.h"
#include "control/state.h"
#include "util/crypto.h"
#include "util/json.h"
#include "util/log.h"
#include "util/vec.h"

/* An address a node's peers can dial: an IPv4 or IPv6 address or a host name. */
static int ap_address_ok(const char *s)
{
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '.' || *s == '-' || *s == ':'))
            return 0;
    return 1;
}

/* 1 when id may register without proving its instance (api.attestation.static_nodes). */
static int ap_static_node(const struct api *a, const char *id)
{
    for (size_t i = 0; a->attest_static && a->attest_static[i]; i++)
        if (strcmp(a->attest_static[i], id) == 0)
            return 1;
    return 0;
}

/* The registration's attestation, where the API asks for one: 0 when node id proved it is the
 * instance it says (or need not); else answered (400, 403 or 500) and < 0. */
static int ap_attested(struct ap_ctx *c, const char *id)
{
    static const char *const keys[] = {"document", "signature", "identity_token", NULL};
    const struct jv *at = jv_get(c->body, "attestation");
    const char *doc = NULL, *sig = NULL, *token = NULL;
    const struct api *a = c->a;
    char why[320] = "";
    int rc = 0;

    if (at && jv_type_of(at) != JV_OBJECT)
        rc = ap_bad(c, "attestation must be an object: {\"document\", \"signature\"} (EC2) or "
                       "{\"identity_token\"} (Compute Engine)");
    if (rc == 0 && at)
        rc = ap_keys(c, at, "attestation.", keys);
    if (rc == 0 && at)
        rc = ap_str(c, at, "attestation.", "identity_token", 0, ATTEST_TOKEN_MAX, &token);
    if (rc == 0 && at)
        rc = ap_str(c, at, "attestation.", "document", !token, ATTEST_DOCUMENT_MAX, &doc);
    if (rc == 0 && at && doc)
        rc = ap_str(c, at, "attestation.", "signature", 1, ATTEST_SIGNATURE_MAX, &sig);
    if (rc == 0 && token && doc)
        rc = ap_bad(c, "attestation: an EC2 document or a Compute Engine token, not both");
    if (rc < 0) {
        ap_fail(c, 400, "%s", c->reason);
        return rc;
    }
    if ((!a->attest.certificate && !a->attest_gcp.certificates_path) || ap_static_node(a, id))
        return 0;
    if (!doc && !token) {
        ap_fail(c, 403,
                "node %s must prove which instance it is (api.attestation): castor-node sends "
                "its instance's signed identity with CASTOR_NODE_CLOUD=aws-imds or gce-metadata; "
                "a node outside the clouds must be listed in api.attestation.static_nodes",
                id);
        return ERR_PERM;
    }
    if ((doc && !a->attest.certificate) || (token && !a->attest_gcp.certificates_path)) {
        snprintf(why, sizeof(why), "this controller checks no %s",
                 doc ? "EC2 documents" : "Compute Engine tokens");
        rc = ERR_PERM;
    } else if (doc)
        rc = attest_aws_check(&a->attest, id, doc, strlen(doc), sig, why, sizeof(why));
    else
        rc = attest_gcp_check(&a->attest_gcp, id, token, c->now, why, sizeof(why));
    if (rc == ERR_PARSE)
        ap_fail(c, 400, "attestation: %s", why);
    else if (rc == ERR_PERM)
        ap_fail(c, 403, "attestation of node %s refused: %s", id, why);
    else if (rc < 0)
        ap_fail(c, 500, "attestation: %s", why);
    if (rc == ERR_PERM || rc == ERR_INTERNAL)
        log_msg(a->log, c->now, rc == ERR_PERM ? LOG_WARN : LOG_ERROR, NULL, id,
                "a registration's attestation refused: %s", why);
    return rc;
}

void ap_node_register(struct ap_ctx *c)
{
    static const char *const keys[] = {
        "instance_id", "gpus",    "gpu_memory_mib", "provider", "offer",       "zone", "market",
        "price",       "address", "fence_s",        "agent",    "attestation", NULL};
    const char *id = NULL, *market = "on-demand", *address = NULL;
    long long gpus = 0, mem = 0;
    struct state_node n = {0};
    int rc;

    n.provider = "static";
    n.offer = "static";
    n.zone = "local";
    n.price = 0;
    n.fence_s = NAN;
    rc = ap_parse_body(c, 0);
    if (rc == 0)
        rc = ap_keys(c, c->body, "", keys);
    if (rc == 0)
        rc = ap_str(c, c->body, "", "instance_id", 1, AP_NAME_MAX, &id);
    if (rc == 0 && !api_name_ok(id))
        rc = ap_bad(c, "instance_id must be letters, digits, '.', '_' or '-'");
    if (rc == 0)
        rc = ap_int(c, c->body, "", "gpus", 1, 1, 1024, &gpus);
    if (rc == 0)
        rc = ap_int(c, c->body, "", "gpu_memory_mib", 0, 0, 16 * 1024 * 1024, &mem);
    if (rc == 0)
        rc = ap_str(c, c->body, "", "provider", 0, STATE_NAME_MAX, (const char **)&n.provider);
    if (rc == 0)
        rc = ap_str(c, c->body, "", "offer", 0, STATE_NAME_MAX, (const char **)&n.offer);
    if (rc == 0)
        rc = ap_str(c, c->body, "", "zone", 0, STATE_NAME_MAX, (const char **)&n.zone);
    if (rc == 0)
        rc = ap_str(c, c->body, "", "market", 0, 16, &market);
    if (rc == 0 && strcmp(market, "spot") != 0 && strcmp(market, "on-demand") != 0)
        rc = ap_bad(c, "market must be \"spot\" or \"on-demand\"");
    if (rc == 0)
        rc = ap_num(c, c->body, "", "price", 0, 0.0, 1, &n.price);
    if (rc == 0 && n.price > API_PRICE_MAX)
        rc = ap_bad(c, "price must be at most %.0f", API_PRICE_MAX);
    if (rc == 0)
        rc = ap_str(c, c->body, "", "address", 0, 255, &address);
    if (rc == 0 && address && !ap_address_ok(address))
        rc = ap_bad(c, "address must be an IP address or a host name (letters, digits, '.', "
                       "'-', ':')");
    if (rc == 0)
        rc = ap_num(c, c->body, "", "fence_s", 0, 0.0, 0, &n.fence_s);
    if (rc == 0 && n.fence_s > STATE_NODE_FENCE_MAX)
        rc = ap_bad(c, "fence_s must be at most %.0f", STATE_NODE_FENCE_MAX);
    if (rc == 0)
        rc = ap_str(c, c->body, "", "agent", 0, 64, (const char **)&n.agent);
    if (rc == 0 && n.agent &&
        (strlen(n.agent) < 16 || strspn(n.agent, "0123456789abcdef") != strlen(n.agent)))
        rc = ap_bad(c, "agent must be 16 to 64 lowercase hex digits");
    if (rc < 0) {
        ap_fail(c, 400, "%s", c->reason);
        return;
    }
    if (ap_attested(c, id) < 0)
        return;
    n.instance_id = (char *)id;
    n.address = (char *)address;
    n.market = strcmp(market, "spot") == 0 ? STATE_MARKET_SPOT : STATE_MARKET_ON_DEMAND;
    n.gpus = (int)gpus;
    n.gpu_memory_mib = (int)mem;
    n.state = STATE_NODE_READY;
    n.launched_at = c->now;
    n.ready_at = n.terminated_at = NAN;
    c->param = id;
    rc = state_node_register(c->a->state, &n, c->now);
    if (rc == ERR_CONFLICT) {
        ap_fail(c, 409, "node %s is already registered", id);
    } else if (rc < 0) {
        ap_state_fail(c, rc, "node");
    } else {
        struct jv *o = jv_object();
        char token[API_JOB_TOKEN_MAX];
        struct state_node now_n;
        enum state_node_state state = STATE_NODE_READY;

        /* (the same agent again may find its node draining) */
        if (state_node_get(c->a->state, id, &now_n) == 0) {
            state = now_n.state;
            state_node_clear(&now_n);
        }
        ap_set(c, o, "instance_id", jv_string(id));
        ap_set(c, o, "state", jv_string(state_node_state_name(state)));
        /* the node's own token, for its calls from now on (api_node_token): answered to the
         * registration that made the node ready, never to a second one */
        if (api_node_token(c->a, id, token, sizeof(token)) == 0)
            ap_set(c, o, "node_token", jv_string(token));
        crypto_wipe(token, sizeof(token));
        ap_reply(c, 201, o);
    }
}

/* Answer {"instance_id", "state"} for the node of the path after an update. */
static void ap_node_state_reply(struct ap_ctx *c)
{
    struct state_node n;
    struct jv *o;
    int rc = state_node_get(c->a->state, c->param, &n);

    if (rc < 0) {
        ap_state_fail(c, rc, "such node");
        return;
    }
    o = jv_object();
    ap_set(c, o, "instance_id", jv_string(n.instance_id));
    ap_set(c, o, "state", jv_string(state_node_state_name(n.state)));
    state_node_clear(&n);
    ap_reply(c, 200, o);
}

/* A body that is empty or {}; else 400 answered and ERR_INVAL. */
static int ap_no_fields(struct ap_ctx *c)
{
    static const char *const keys[] = {NULL};
    int rc = ap_parse_body(c, 1);

    if (rc == 0)
        rc = ap_keys(c, c->body, "", keys);
    if (rc < 0)
        ap_fail(c, 400, "%s", c->reason);
    return rc < 0 ? ERR_INVAL : 0;
}

/* A heartbeat's body: {} or {"replicas": [{"job", "generation"}, ...]}, what the agent says is
 * alive on its node; *alive (owned; its strings borrowed from c->body) and *n are written, NULL
 * and 0 when the agent does not say. Else 400 answered and ERR_INVAL. */
static int ap_heartbeat_body(struct ap_ctx *c, struct state_alive **alive, size_t *n)
{
    static const char *const keys[] = {"replicas", NULL};
    static const char *const entry_keys[] = {"job", "generation", NULL};
    const struct jv *arr;
    struct state_alive *v = NULL;
    size_t count = 0;
    int rc = ap_parse_body(c, 1);

    if (rc == 0)
        rc = ap_keys(c, c->body, "", keys);
    arr = rc == 0 ? jv_get(c->body, "replicas") : NULL;
    if (arr && jv_type_of(arr) != JV_ARRAY)
        rc = ap_bad(c, "replicas must be an array of {\"job\", \"generation\"}");
    if (rc == 0 && arr && (count = jv_size(arr)) > API_ALIVE_MAX)
        rc = ap_bad(c, "replicas holds more than %d entries", API_ALIVE_MAX);
    if (rc == 0 && arr && !(v = calloc(count + 1, sizeof(*v))))
        rc = ERR_NOMEM;
    for (size_t i = 0; rc == 0 && i < count; i++) {
        const struct jv *e = jv_at(arr, i);
        char where[40];

        snprintf(where, sizeof(where), "replicas[%zu].", i);
        if (jv_type_of(e) != JV_OBJECT)
            rc = ap_bad(c, "replicas[%zu] must be an object", i);
        if (rc == 0)
            rc = ap_keys(c, e, where, entry_keys);
        if (rc == 0)
            rc = ap_str(c, e, where, "job", 1, AP_NAME_MAX, &v[i].job);
        if (rc == 0)
            rc = ap_str(c, e, where, "generation", 1, STATE_GENERATION_MAX, &v[i].generation);
    }
    if (rc < 0) {
        free(v);
        if (rc == ERR_NOMEM)
            ap_fail(c, 500, "out of memory");
        else
            ap_fail(c, 400, "%s", c->reason);
        return ERR_INVAL;
    }
    *alive = v;
    *n = count;
    return 0;
}

/* ---- the heartbeats heard (api_node_heard) ---- */

/* The index of node in a->heard, or where it would go (*found 0). Under a->hmu. */
static size_t ap_heard_find(const struct api *a, const char *node, int *found)
{
    size_t lo = 0, hi = a->nheard;

    *found = 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int cmp = strcmp(a->heard[mid].node, node);

        if (cmp == 0) {
            *found = 1;
            return mid;
        }
        if (cmp < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Node heard at at. A node not yet in the table is added, the entries unheard of for
 * AP_HEARD_KEEP_S dropped first; out of memory, it is not (its heartbeat counts as the state has
 * it). */
static void ap_heard_note(struct api *a, const char *node, double at)
{
    size_t i, k = 0;
    struct ap_heard *v;
    int found;

    if (strlen(node) > AP_NAME_MAX)
        return;
    pthread_mutex_lock(&a->hmu);
    i = ap_heard_find(a, node, &found);
    if (found) {
        a->heard[i].at = fmax(a->heard[i].at, at);
        goto out;
    }
    for (size_t j = 0; j < a->nheard; j++) /* (the order stays) */
        if (!(at - a->heard[j].at > AP_HEARD_KEEP_S))
            a->heard[k++] = a->heard[j];
    a->nheard = k;
    if (!(v = vec_grow(a->heard, &a->heard_cap, a->nheard, sizeof(*v))))
        goto out;
    a->heard = v;
    i = ap_heard_find(a, node, &found);
    memmove(&a->heard[i + 1], &a->heard[i], (a->nheard - i) * sizeof(*a->heard));
    snprintf(a->heard[i].node, sizeof(a->heard[i].node), "%s", node);
    a->heard[i].at = at;
    a->nheard++;
out:
    pthread_mutex_unlock(&a->hmu);
}

int api_node_heard(struct api *a, const char *node, double *at)
{
    int found;
    size_t i;

    if (!a || !node || !at)
        return ERR_INVAL;
    pthread_mutex_lock(&a->hmu);
    i = ap_heard_find(a, node, &found);
    if (found)
        *at = a->heard[i].at;
    pthread_mutex_unlock(&a->hmu);
    return found ? 0 : ERR_UNKNOWN;
}

/* A heartbeat the state could not record (rc: the write's error): the node's agent was heard
 * all the same, and the controller's silence watch counts it (api_node_heard). Answered 200 with
 * the node's state when the node can be read (its agent then neither backs off nor fences itself
 * for a controller that hears it), as a heartbeat recorded would be: 404 or 409 as the node
 * read says; else the write's error. */
static void ap_heartbeat_unrecorded(struct ap_ctx *c, int rc)
{
    struct state_node n;
    struct jv *o;
    int got = state_node_get(c->a->state, c->param, &n);

    if (got == ERR_UNKNOWN) {
        ap_state_fail(c, got, "such node");
        return;
    }
    if (got < 0) {
        ap_state_fail(c, rc, "such node");
        return;
    }
    if (n.state == STATE_NODE_TERMINATED) {
        state_node_clear(&n);
        ap_fail(c, 409, "node %s is terminated", c->param);
        return;
    }
    ap_heard_note(c->a, c->param, c->now);
    log_msg(c->a->log, c->now, LOG_DEBUG, NULL, c->param,
            "heartbeat heard but not recorded in the state: %s", err_str(rc));
    o = jv_object();
    ap_set(c, o, "instance_id", jv_string(n.instance_id));
    ap_set(c, o, "state", jv_string(state_node_state_name(n.state)));
    state_node_clear(&n);
    ap_reply(c, 200, o);
}

void ap_node_heartbeat(struct ap_ctx *c)
{
    struct state_alive *alive = NULL;
    size_t n = 0;
    int rc;

    if (ap_heartbeat_body(c, &alive, &n) < 0)
        return;
    rc = state_node_heartbeat(c->a->state, c->param, c->now, alive, n);
    free(alive);
    if (rc == ERR_CONFLICT) {
        ap_fail(c, 409, "node %s is terminated", c->param);
    } else if (rc == ERR_UNKNOWN || rc == ERR_INVAL || rc == ERR_NOMEM) {
        ap_state_fail(c, rc, "such node");
    } else if (rc < 0) {
        ap_heartbeat_unrecorded(c, rc);
    } else {
        ap_heard_note(c->a, c->param, c->now);
        ap_node_state_reply(c);
    }
}

/* An event for each job with replicas on the node of the path. */
static void ap_note_node_jobs(struct ap_ctx *c, const char *kind, const char *message)
{
    struct state_node_job *jobs = NULL;
    size_t n = 0;

    if (state_node_jobs(c->a->state, c->param, &jobs, &n) < 0)
        return;
    event_note_jobs(c->a->state, c->a->log, c->now, jobs, n, c->param, kind, message, NULL);
    state_node_jobs_free(jobs, n);
}

void ap_node_notice(struct ap_ctx *c)
{
    static const char *const keys[] = {"deadline", NULL};
    double deadline = NAN;
    int rc = ap_parse_body(c, 1);

    if (rc == 0)
        rc = ap_keys(c, c->body, "", keys);
    if (rc == 0)
        rc = ap_num(c, c->body, "", "deadline", 0, 0.0, 1, &deadline);
    if (rc < 0) {
        ap_fail(c, 400, "%s", c->reason);
        return;
    }
    if (deadline < c->now) /* a deadline already past (clocks differ): it is now */
        deadline = c->now;
    /* the same preemption told again (a retry whose answer was lost, or the agent's after the
     * cloud's) is recorded (0), and not told again to the node's jobs: only its first (1) */
    rc = state_node_notice(c->a->state, c->param, c->now, deadline);
    if (rc == 1)
        ap_note_node_jobs(c, "notice",
                          "a preemption notice on the node (from its agent): the "
                          "job checkpoints and restarts from it elsewhere");
    if (rc == ERR_CONFLICT)
        ap_fail(c, 409, "node %s is terminated", c->param);
    else if (rc < 0)
        ap_state_fail(c, rc, "such node");
    else
        ap_node_state_reply(c);
}

void ap_node_down(struct ap_ctx *c)
{
    struct state_node n;
    int rc;

    if (ap_no_fields(c) < 0)
        return;
    if ((rc = state_node_get(c->a->state, c->param, &n)) < 0) {
        ap_state_fail(c, rc, "such node");
        return;
    }
    if (n.launch_token) {
        ap_fail(c, 409,
                "node %s was launched by castor: a silent one is fenced by terminating its "
                "instance, and an instance terminated in the cloud ends it",
                c->param);
    } else if (n.state == STATE_NODE_TERMINATED) {
        ap_node_state_reply(c);
    } else {
        struct state_node_job *jobs = NULL;
        size_t nj = 0;

        /* its jobs read before the termination drops them, and told once it is written: a
         * termination refused leaves no event behind */
        rc = state_node_jobs(c->a->state, c->param, &jobs, &nj);
        if (rc == 0)
            rc = state_node_set_state(c->a->state, c->param, STATE_NODE_TERMINATED, c->now);
        if (rc < 0) {
            ap_state_fail(c, rc, "such node");
        } else {
            event_note_jobs(c->a->state, c->a->log, c->now, jobs, nj, c->param, "node-lost",
                            "the node was taken down by its operator (castor down)",
                            "the job restarts elsewhere from its last checkpoint");
            log_msg(c->a->log, c->now, LOG_WARN, NULL, c->param,
                    "taken down by its operator: the node is terminated, and its jobs move");
            ap_node_state_reply(c);
        }
        state_node_jobs_free(jobs, nj);
    }
    state_node_clear(&n);
}

struct jv *ap_spec(const struct state_job *j)
{
    struct jv *v = NULL;

    return jv_parse(j->spec, strlen(j->spec), &v, NULL) == 0 ? v : NULL;
}

void ap_set_config(struct ap_ctx *c, struct jv *o, const struct state_job *j)
{
    ap_set(c, o, "local_bsz", jv_number(j->local_bsz));
    ap_set(c, o, "accum_steps", isnan(j->local_bsz) ? jv_null() : jv_integer(j->accum_steps));
    ap_set(c, o, "lr_gain", jv_number(j->lr_gain));
}

/* o's "master_addr": where node (the master) is reached, when its agent said so. */
static void ap_set_master_addr(struct ap_ctx *c, struct jv *o, const char *node)
{
    struct state_node m;

    if (state_node_get(c->a->state, node, &m) < 0)
        return;
    if (m.address)
        ap_set(c, o, "master_addr", jv_string(m.address));
    state_node_clear(&m);
}

/* 1 when the stored job spec (JSON text) says reconfigure: in_flight, else 0 (a spec from before
 * the field, or one that cannot be read: restart). */
static int ap_spec_in_flight(const char *spec)
{
    struct jv *v = NULL;
    const char *s;
    int in = 0;

    if (spec && jv_parse(spec, strlen(spec), &v, NULL) == 0 &&
        (s = jv_string_value(jv_get(v, "reconfigure"))))
        in = strcmp(s, API_RECONFIGURE_IN_FLIGHT) == 0;
    jv_free(v);
    return in;
}

/* The job's generation: what its replicas are started with (its placement, attempt,
 * configuration and spec), a digest that every node's entry for the job shares and that changes
 * whenever the job's replicas restart. */
int api_job_generation(const struct state_job *j, double placed_at, char *out)
{
    static const char fmt[] = "%.17g\n%d\n%.17g\n%d\n%.17g\n%s";
    char hex[CRYPTO_SHA256_HEX_LEN + 1], *text;
    /* a job whose workers take a new configuration in flight does not restart for one */
    int in_flight = ap_spec_in_flight(j->spec), accum = in_flight ? 0 : j->accum_steps;
    double local = in_flight ? 0 : j->local_bsz, gain = in_flight ? 0 : j->lr_gain;
    int len = snprintf(NULL, 0, fmt, placed_at, j->failures, local, accum, gain, j->spec), rc;

    if (len < 0 || !(text = malloc((size_t)len + 1)))
        return ERR_NOMEM;
    snprintf(text, (size_t)len + 1, fmt, placed_at, j->failures, local, accum, gain, j->spec);
    rc = crypto_sha256_hex(text, (size_t)len, hex);
    free(text);
    if (rc < 0)
        return rc;
    memcpy(out, hex, API_GENERATION_LEN);
    out[API_GENERATION_LEN] = '\0';
    return 0;
}

/* o's "generation", and "wait_for": the other nodes whose agents said replicas of an earlier
 * generation of the job are alive there (still checkpointing, or not yet told), which this node's
 * replicas of the job wait for, so that two generations never run at once (a start from a
 * checkpoint that the old replicas are still writing, or two writers of one checkpoint). */
static void ap_set_generation(struct ap_ctx *c, struct jv *o, const struct state_job *j,
                              double placed_at)
{
    char gen[API_GENERATION_LEN + 1], **stale = NULL;
    size_t n = 0;
    struct jv *arr;

    if (api_job_generation(j, placed_at, gen) < 0) {
        c->json_failed = 1;
        return;
    }
    ap_set(c, o, "generation", jv_string(gen));
    if (state_job_stale_nodes(c->a->state, j->name, gen, c->param, c->now, &stale, &n) < 0) {
        c->json_failed = 1; /* (an answer without it could start two generations at once) */
        return;
    }
    if (n > 0) {
        arr = jv_array();
        for (size_t i = 0; i < n; i++)
            ap_push(c, arr, jv_string(stale[i]));
        ap_set(c, o, "wait_for", arr);
    }
    state_strv_free(stale, n);
}

/* One job's part of a node's assignment: its replicas there, ranks, world size, master (the
 * first node by instance id) and where it is reached (when its agent said), configuration and
 * spec. */
static struct jv *ap_assignment_job(struct ap_ctx *c, const struct state_node_job *nj)
{
    struct state_alloc *rows = NULL;
    struct state_job j;
    size_t n = 0;
    long long world = 0, offset = -1, replicas = nj->replicas, nodes = 0;
    char token[API_JOB_TOKEN_MAX];
    struct jv *o;

    if (state_job_get(c->a->state, nj->job, &j) < 0)
        return NULL;
    if (state_alloc_get(c->a->state, nj->job, &rows, &n) < 0) {
        state_job_clear(&j);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (strcmp(rows[i].node, c->param) == 0) {
            offset = world;
            replicas = rows[i].replicas; /* from the rows that give the ranks */
        }
        world += rows[i].replicas;
        nodes += rows[i].replicas > 0;
    }
    o = jv_object();
    ap_set(c, o, "job", jv_string(j.name));
    ap_set(c, o, "replicas", jv_integer(replicas));
    ap_set(c, o, "rank_offset", jv_integer(offset));
    ap_set(c, o, "world_size", jv_integer(world));
    if (nodes > 0) /* the nodes its replicas are on: the placement its workers report under */
        ap_set(c, o, "nodes", jv_integer(nodes));
    ap_set(c, o, "master", jv_string(n > 0 ? rows[0].node : c->param));
    ap_set_master_addr(c, o, n > 0 ? rows[0].node : c->param);
    /* when the job was placed as it is: every re-placement changes it on every node, so that all
     * replicas restart into the new world, those on nodes it kept included */
    if (n > 0 && isfinite(rows[0].since))
        ap_set(c, o, "placed_at", jv_number(rows[0].since));
    /* the attempt its replicas run: a failure (POST /v1/nodes/{id}/failures) changes it on every
     * node, so that all of them restart, after restart_delay seconds */
    ap_set(c, o, "attempt", jv_integer(j.failures));
    ap_set(c, o, "restart_delay", jv_number(api_restart_delay(j.failure_streak)));
    ap_set_config(c, o, &j);
    ap_set(c, o, "spec", ap_spec(&j));
    ap_set_generation(c, o, &j, n > 0 ? rows[0].since : NAN);
    /* for the job's replicas: it speaks for this job only (api_job_token) */
    if (api_job_token(c->a, j.name, token, sizeof(token)) == 0)
        ap_set(c, o, "job_token", jv_string(token));
    crypto_wipe(token, sizeof(token));
    state_allocs_free(rows, n);
    state_job_clear(&j);
    return o;
}

void ap_node_assignment(struct ap_ctx *c)
{
    struct state_node_job *jobs = NULL;
    struct jv *o, *arr;
    struct state_node node;
    size_t n = 0;
    /* one snapshot for every read of the answer: a placement the loop writes meanwhile would
     * otherwise mix this node's old replicas with the new ranks, and two nodes would start the
     * same ranks */
    int rc = state_read_begin(c->a->state);

    if (rc == 0)
        rc = state_node_get(c->a->state, c->param, &node);
    if (rc < 0) {
        state_read_end(c->a->state);
        ap_state_fail(c, rc, "such node");
        return;
    }
    rc = state_node_jobs(c->a->state, c->param, &jobs, &n);
    if (rc < 0) {
        state_read_end(c->a->state);
        state_node_clear(&node);
        ap_state_fail(c, rc, "such node");
        return;
    }
    o = jv_object();
    arr = jv_array();
    ap_set(c, o, "instance_id", jv_string(node.instance_id));
    ap_set(c, o, "state", jv_string(state_node_state_name(node.state)));
    for (size_t i = 0; i < n; i++)
        ap_push(c, arr, ap_assignment_job(c, &jobs[i]));
    state_read_end(c->a->state);
    ap_set(c, o, "jobs", arr);
    state_node_jobs_free(jobs, n);
    state_node_clear(&node);
    ap_reply(c, 200, o);
}

void api_note_failure(struct state *st, struct log *log, double now, const char *job,
                      const char *node, const char *reason, enum state_failure_outcome out,
                      int streak, int failures, long long max_restarts)
{
    if (out == STATE_FAILURE_RESTART)
        event_note(st, log, now, LOG_WARN, job, node, "failure",
                   "%s: its replicas restart in %.0f s (attempt %d; %d failures in a row, "
                   "max_restarts %lld)",
                   reason, api_restart_delay(streak), failures, streak, max_restarts);
    else if (out == STATE_FAILURE_FAILED)
        event_note(st, log, now, LOG_ERROR, job, node, "failed",
                   "%s: the job failed (%d failures in a row without progress, max_restarts "
                   "%lld)",
                   reason, streak, max_restarts);
}

double api_restart_delay(int streak)
{
    if (streak <= 0)
        return 0;
    return fmin(API_RESTART_DELAY_S * ldexp(1.0, streak < 30 ? streak - 1 : 29),
                API_RESTART_DELAY_MAX_S);
}

/* The name of a signal a replica is commonly killed by, or NULL. */
static const char *ap_signal_name(long long sig)
{
    static const struct {
        int sig;
        const char *name;
    } names[] = {{SIGKILL, "SIGKILL: the kernel's OOM killer, or someone's kill -9"},
                 {SIGSEGV, "SIGSEGV"},
                 {SIGABRT, "SIGABRT"},
                 {SIGBUS, "SIGBUS"},
                 {SIGFPE, "SIGFPE"},
                 {SIGILL, "SIGILL"},
                 {SIGTERM, "SIGTERM"},
                 {SIGINT, "SIGINT"},
                 {SIGHUP, "SIGHUP"}};

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (names[i].sig == sig)
            return names[i].name;
    return NULL;
}

/* The job's max_restarts, from its stored spec (a spec from before the field: the default). */
static long long ap_max_restarts(const struct state_job *j)
{
    struct jv *spec = ap_spec(j);
    long long v = API_MAX_RESTARTS_DEFAULT;

    if (jv_integer_value(jv_get(spec, "max_restarts"), &v) < 0 || v < 0)
        v = API_MAX_RESTARTS_DEFAULT;
    jv_free(spec);
    return v;
}

/* The failure's reason, as stored and shown: which rank, where, and how it ended. */
static void ap_failure_reason(char *buf, size_t size, const char *node, long long rank,
                              long long status, long long sig)
{
    const char *name = ap_signal_name(sig);

    if (status > 0)
        snprintf(buf, size, "rank %lld on node %s exited with status %lld%s", rank, node, status,
                 status == 127 ? " (its command or workdir could not be started)" : "");
    else
        snprintf(buf, size, "rank %lld on node %s was killed by signal %lld%s%s%s", rank, node, sig,
                 name ? " (" : "", name ? name : "", name ? ")" : "");
}

/* A failure report's body: the job, the attempt, the rank, and how it ended (exactly one of
 * exit_status and signal); the reason is built into reason. */
static int ap_failure_body(struct ap_ctx *c, const char **job, long long *attempt, char *reason,
                           size_t size)
{
    static const char *const keys[] = {"job", "attempt", "rank", "exit_status", "signal", NULL};
    long long rank = 0, status = 0, sig = 0;
    int rc = ap_parse_body(c, 0);

    if (rc == 0)
        rc = ap_keys(c, c->body, "", keys);
    if (rc == 0)
        rc = ap_str(c, c->body, "", "job", 1, AP_NAME_MAX, job);
    if (rc == 0 && !api_name_ok(*job))
        rc = ap_bad(c, "job must be a job's name");
    if (rc == 0)
        rc = ap_int(c, c->body, "", "attempt", 1, 0, 1000000000, attempt);
    if (rc == 0)
        rc = ap_int(c, c->body, "", "rank", 1, 0, 1000000, &rank);
    if (rc == 0)
        rc = ap_int(c, c->body, "", "exit_status", 0, 1, 255, &status);
    if (rc == 0)
        rc = ap_int(c, c->body, "", "signal", 0, 1, 64, &sig);
    if (rc == 0 && (status > 0) == (sig > 0))
        rc = ap_bad(c, "exactly one of exit_status (1 to 255) and signal (1 to 64) is required");
    if (rc == 0)
        ap_failure_reason(reason, size, c->param, rank, status, sig);
    return rc;
}

/* The node of c's path may report on its replicas: 0, or answered (404: no such node, 409: it is
 * terminated) and negative. */
static int ap_node_reporting(struct ap_ctx *c)
{
    struct state_node node;
    int rc = state_node_get(c->a->state, c->param, &node);

    if (rc < 0) {
        ap_state_fail(c, rc, "such node");
        return rc;
    }
    rc = node.state == STATE_NODE_TERMINATED ? ERR_CONFLICT : 0;
    state_node_clear(&node);
    if (rc < 0)
        ap_fail(c, 409, "node %s is terminated", c->param);
    return rc;
}

/* A node's report on job name refused by the state (rc < 0): 422 for no such job, one that has
 * ended, or one with no replicas on the node; else the state's error. */
static void ap_job_report_fail(struct ap_ctx *c, int rc, const char *name)
{
    if (rc == ERR_UNKNOWN)
        ap_fail(c, 422, "no job is named %s", name);
    else if (rc == ERR_CONFLICT || rc == ERR_RANGE)
        ap_fail(c, 422,
                rc == ERR_CONFLICT ? "job %s has ended" : "job %s has no replicas on node %s", name,
                c->param);
    else
        ap_state_fail(c, rc, "job");
}

void ap_node_failure(struct ap_ctx *c)
{
    char reason[STATE_FAILURE_MAX];
    enum state_failure_outcome out = STATE_FAILURE_STALE;
    const char *name = NULL;
    long long attempt = 0, max = 0;
    struct state_job j;
    int rc = ap_failure_body(c, &name, &attempt, reason, sizeof(reason)), streak = 0;
    struct jv *o;

    if (rc < 0) {
        ap_fail(c, 400, "%s", c->reason);
        return;
    }
    if (ap_node_reporting(c) < 0)
        return;
    if ((rc = state_job_get(c->a->state, name, &j)) < 0) {
        ap_job_report_fail(c, rc, name);
        return;
    }
    max = ap_max_restarts(&j);
    state_job_clear(&j);
    rc = state_job_replica_failed(c->a->state, name, c->param, (int)attempt, reason, (int)max,
                                  c->now, &out, &streak);
    if (rc == 0)
        rc = state_job_get(c->a->state, name, &j);
    if (rc < 0) {
        ap_job_report_fail(c, rc, name);
        return;
    }
    api_note_failure(c->a->state, c->a->log, c->now, name, c->param, reason, out, streak,
                     j.failures, max);
    o = jv_object();
    ap_set(c, o, "job", jv_string(name));
    ap_set(c, o, "state", jv_string(state_job_state_name(j.state)));
    ap_set(c, o, "failures", jv_integer(j.failures));
    ap_set(c, o, "failure_streak", jv_integer(j.failure_streak));
    ap_set(c, o, "counted", jv_bool(out != STATE_FAILURE_STALE));
    state_job_clear(&j);
    ap_reply(c, 200, o);
}

void ap_node_completion(struct ap_ctx *c)
{
    static const char *const keys[] = {"job", "attempt", "rank", "placed_at", NULL};
    enum state_complete_outcome out = STATE_COMPLETE_STALE;
    const char *name = NULL;
    long long attempt = 0, rank = 0;
    double placed_at = NAN;
    struct state_job j;
    struct jv *o;
    int rc = ap_parse_body(c, 0);

    if (rc == 0)
        rc = ap_keys(c, c->body, "", keys);
    if (rc == 0)
        rc = ap_str(c, c->body, "", "job", 1, AP_NAME_MAX, &name);
    if (rc == 0 && !api_name_ok(name))
        rc = ap_bad(c, "job must be a job's name");
    if (rc == 0)
        rc = ap_int(c, c->body, "", "attempt", 1, 0, 1000000000, &attempt);
    if (rc == 0)
        rc = ap_int(c, c->body, "", "rank", 1, 0, 1000000, &rank);
    if (rc == 0)
        rc = ap_num(c, c->body, "", "placed_at", 0, 0.0, 1, &placed_at);
    if (rc < 0) {
        ap_fail(c, 400, "%s", c->reason);
        return;
    }
    if (ap_node_reporting(c) < 0)
        return;
    /* only rank 0's end says the work is done: it is the rank that tells the controller so */
    if (rank == 0)
        rc = state_job_complete(c->a->state, name, c->param, (int)attempt, placed_at, c->now, &out);
    if (rc == 0)
        rc = state_job_get(c->a->state, name, &j);
    if (rc < 0) {
        ap_job_report_fail(c, rc, name);
        return;
    }
    if (out == STATE_COMPLETE_FINISHED)
        event_note(c->a->state, c->a->log, c->now, LOG_INFO, name, c->param, "finished",
                   "finished: rank 0 on node %s exited with status 0 without telling the "
                   "controller (it could not reach it)",
                   c->param);
    else if (out == STATE_COMPLETE_PEERS)
        event_note(c->a->state, c->a->log, c->now, LOG_INFO, name, c->param, "finished",
                   "finished: rank 0 on node %s exited with status 0 in attempt %lld; the "
                   "failure counted for that attempt (%s) was its other ranks' end after it",
                   c->param, attempt, j.failure ? j.failure : "no reason kept");
    o = jv_object();
    ap_set(c, o, "job", jv_string(name));
    ap_set(c, o, "state", jv_string(state_job_state_name(j.state)));
    ap_set(c, o, "counted", jv_bool(out != STATE_COMPLETE_STALE));
    state_job_clear(&j);
    ap_reply(c, 200, o);
}
