/* snapshot_file.c: decide-step snapshots as JSON lines, exactly (reals with 17 significant digits
 * read back to the same double; non-finite ones as strings), for benchmarks that replay them. */
#include "snapshot_file.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"

/* ---- writing ---- */

static struct jv *sf_real(double v)
{
    if (isnan(v))
        return jv_string("nan");
    if (isinf(v))
        return jv_string(v > 0 ? "inf" : "-inf");
    return jv_number(v);
}

static struct jv *sf_node(const struct snap_node *n)
{
    struct jv *o = jv_object();
    int rc = 0;

    rc |= jv_set(o, "gpus", jv_integer(n->gpus));
    rc |= jv_set(o, "preemptible", jv_integer(n->preemptible));
    rc |= jv_set(o, "offer", jv_integer(n->offer));
    rc |= jv_set(o, "launched", sf_real(n->launched));
    if (rc) {
        jv_free(o);
        return NULL;
    }
    return o;
}

static struct jv *sf_job(const struct snap_job *sj, const struct alloc *cur, int j)
{
    struct jv *o = jv_object(), *theta = jv_array(), *rows = jv_array();
    int rc = !o || !theta || !rows;

    for (int k = 0; k < TPUT_MAX_PARAMS; k++)
        rc |= jv_push(theta, sf_real(sj->tput.theta[k]));
    for (int r = 0; r < cur->count[j]; r++)
        rc |= jv_push(rows, jv_integer(cur->node[(size_t)j * (size_t)cur->width + (size_t)r]));
    rc |= jv_set(o, "name", jv_string(sj->name ? sj->name : ""));
    rc |= jv_set(o, "submit_time", sf_real(sj->submit_time));
    rc |= jv_set(o, "attained_service", sf_real(sj->attained_service));
    rc |= jv_set(o, "restarts", jv_integer(sj->restarts));
    rc |= jv_set(o, "epoch", jv_integer(sj->epoch));
    rc |= jv_set(o, "has_model", jv_integer(sj->has_model));
    rc |= jv_set(o, "tput_model", sj->tput.ops ? jv_string(sj->tput.ops->name) : jv_null());
    rc |= jv_set(o, "theta", theta);
    theta = NULL;
    rc |= jv_set(o, "grad_sqr", sf_real(sj->grad.sqr));
    rc |= jv_set(o, "grad_var", sf_real(sj->grad.var));
    rc |= jv_set(o, "init_bsz", sf_real(sj->lim.init_bsz));
    rc |= jv_set(o, "max_bsz", sf_real(sj->lim.max_bsz));
    rc |= jv_set(o, "min_local", sf_real(sj->lim.min_local));
    rc |= jv_set(o, "max_local", sf_real(sj->lim.max_local));
    rc |= jv_set(o, "accumulation", jv_integer(sj->lim.accumulation));
    rc |= jv_set(o, "min_replicas", jv_integer(sj->min_replicas));
    rc |= jv_set(o, "max_replicas", jv_integer(sj->max_replicas));
    rc |= jv_set(o, "max_profiled_replicas", jv_integer(sj->max_profiled_replicas));
    rc |= jv_set(o, "req_replicas", jv_integer(sj->req_replicas));
    rc |= jv_set(o, "req_batch", sf_real(sj->req_batch));
    rc |= jv_set(o, "progress", sf_real(sj->progress));
    rc |= jv_set(o, "progress_target", sf_real(sj->progress_target));
    rc |= jv_set(o, "checkpoint_s", sf_real(sj->checkpoint_s));
    rc |= jv_set(o, "deadline", sf_real(sj->deadline));
    rc |= jv_set(o, "weight", sf_real(sj->weight));
    rc |= jv_set(o, "current", rows);
    rows = NULL;
    jv_free(theta);
    jv_free(rows);
    if (rc) {
        jv_free(o);
        return NULL;
    }
    return o;
}

int snapfile_write(FILE *f, const struct snapshot *s, const char *label, long tick)
{
    struct jv *o = NULL, *nodes = NULL, *jobs = NULL;
    char *text = NULL;
    int rc = 0;

    if (s->noffers > 0)
        return ERR_INVAL;
    for (int j = 0; j < s->njobs; j++)
        if (s->jobs[j].tput.ops && !s->jobs[j].tput.ops->name)
            return ERR_INVAL;
    o = jv_object();
    nodes = jv_array();
    jobs = jv_array();
    if (!o || !nodes || !jobs) {
        rc = ERR_NOMEM;
        goto out;
    }
    for (int k = 0; k < s->nnodes && rc == 0; k++)
        rc = jv_push(nodes, sf_node(&s->nodes[k]));
    for (int j = 0; j < s->njobs && rc == 0; j++)
        rc = jv_push(jobs, sf_job(&s->jobs[j], s->current, j));
    if (rc == 0)
        rc = jv_set(o, "label", jv_string(label ? label : ""));
    rc = rc ? rc : jv_set(o, "tick", jv_integer(tick));
    rc = rc ? rc : jv_set(o, "now", sf_real(s->now));
    rc = rc ? rc : jv_set(o, "min_billed_s", sf_real(s->min_billed_s));
    rc = rc ? rc : jv_set(o, "nodes", nodes);
    nodes = NULL;
    rc = rc ? rc : jv_set(o, "jobs", jobs);
    jobs = NULL;
    if (rc < 0 || (rc = jv_dump(o, &text)) < 0)
        goto out;
    if (fputs(text, f) == EOF || fputc('\n', f) == EOF)
        rc = ERR_IO;
out:
    free(text);
    jv_free(o);
    jv_free(nodes);
    jv_free(jobs);
    return rc < 0 ? rc : 0;
}

/* ---- reading ---- */

struct sf_reader {
    const char *path;
    int lineno;
    struct error *e;
};

static int sf_bad(struct sf_reader *r, const char *what, const char *field, int index)
{
    if (index >= 0)
        return err_set(r->e, ERR_PARSE, r->path, r->lineno, 0, "%s[%d]: %s", field, index, what);
    return err_set(r->e, ERR_PARSE, r->path, r->lineno, 0, "%s: %s", field, what);
}

/* A real: a number, or "nan", "inf", "-inf"; field and index name it in an error. */
static int sf_real_value(struct sf_reader *r, const struct jv *v, const char *field, int index,
                         double *out)
{
    const char *s = jv_string_value(v);

    if (!v)
        return sf_bad(r, "missing", field, index);
    if (jv_number_value(v, out) == 0)
        return 0;
    if (s && strcmp(s, "nan") == 0)
        *out = NAN;
    else if (s && strcmp(s, "inf") == 0)
        *out = INFINITY;
    else if (s && strcmp(s, "-inf") == 0)
        *out = -INFINITY;
    else
        return sf_bad(r, "not a number", field, index);
    return 0;
}

static int sf_get_real(struct sf_reader *r, const struct jv *o, const char *key, int index,
                       double *out)
{
    return sf_real_value(r, jv_get(o, key), key, index, out);
}

static int sf_get_int(struct sf_reader *r, const struct jv *o, const char *key, int index, int lo,
                      int hi, int *out)
{
    const struct jv *v = jv_get(o, key);
    long long x;

    if (!v)
        return sf_bad(r, "missing", key, index);
    if (jv_integer_value(v, &x) < 0)
        return sf_bad(r, "not an integer", key, index);
    if (x < lo || x > hi)
        return sf_bad(r, "out of range", key, index);
    *out = (int)x;
    return 0;
}

static int sf_read_node(struct sf_reader *r, const struct jv *o, int k, struct snap_node *n)
{
    int rc;

    if (jv_type_of(o) != JV_OBJECT)
        return sf_bad(r, "not an object", "nodes", k);
    if ((rc = sf_get_int(r, o, "gpus", k, 1, 4096, &n->gpus)) < 0 ||
        (rc = sf_get_int(r, o, "preemptible", k, 0, 1, &n->preemptible)) < 0 ||
        (rc = sf_get_int(r, o, "offer", k, -1, -1, &n->offer)) < 0 ||
        (rc = sf_get_real(r, o, "launched", k, &n->launched)) < 0)
        return rc;
    return 0;
}

static int sf_read_job(struct sf_reader *r, const struct jv *o, int j, int nnodes,
                       struct snap_job *sj, char **name, struct alloc *cur)
{
    const struct jv *theta = jv_get(o, "theta"), *rows = jv_get(o, "current"),
                    *model = jv_get(o, "tput_model");
    const char *nm = jv_string_value(jv_get(o, "name"));
    int rc;

    if (jv_type_of(o) != JV_OBJECT)
        return sf_bad(r, "not an object", "jobs", j);
    if (!nm)
        return sf_bad(r, "name missing or not a string", "jobs", j);
    if ((rc = sf_get_real(r, o, "submit_time", j, &sj->submit_time)) < 0 ||
        (rc = sf_get_real(r, o, "attained_service", j, &sj->attained_service)) < 0 ||
        (rc = sf_get_int(r, o, "restarts", j, 0, 1 << 30, &sj->restarts)) < 0 ||
        (rc = sf_get_int(r, o, "epoch", j, 0, 1 << 30, &sj->epoch)) < 0 ||
        (rc = sf_get_int(r, o, "has_model", j, 0, 1, &sj->has_model)) < 0 ||
        (rc = sf_get_real(r, o, "grad_sqr", j, &sj->grad.sqr)) < 0 ||
        (rc = sf_get_real(r, o, "grad_var", j, &sj->grad.var)) < 0 ||
        (rc = sf_get_real(r, o, "init_bsz", j, &sj->lim.init_bsz)) < 0 ||
        (rc = sf_get_real(r, o, "max_bsz", j, &sj->lim.max_bsz)) < 0 ||
        (rc = sf_get_real(r, o, "min_local", j, &sj->lim.min_local)) < 0 ||
        (rc = sf_get_real(r, o, "max_local", j, &sj->lim.max_local)) < 0 ||
        (rc = sf_get_int(r, o, "accumulation", j, 0, 1, &sj->lim.accumulation)) < 0 ||
        (rc = sf_get_int(r, o, "min_replicas", j, 0, 1 << 20, &sj->min_replicas)) < 0 ||
        (rc = sf_get_int(r, o, "max_replicas", j, 0, 1 << 20, &sj->max_replicas)) < 0 ||
        (rc = sf_get_int(r, o, "max_profiled_replicas", j, 0, 1 << 20,
                         &sj->max_profiled_replicas)) < 0 ||
        (rc = sf_get_int(r, o, "req_replicas", j, 0, 1 << 20, &sj->req_replicas)) < 0 ||
        (rc = sf_get_real(r, o, "req_batch", j, &sj->req_batch)) < 0 ||
        (rc = sf_get_real(r, o, "progress", j, &sj->progress)) < 0 ||
        (rc = sf_get_real(r, o, "progress_target", j, &sj->progress_target)) < 0 ||
        (rc = sf_get_real(r, o, "checkpoint_s", j, &sj->checkpoint_s)) < 0 ||
        (rc = sf_get_real(r, o, "deadline", j, &sj->deadline)) < 0 ||
        (rc = sf_get_real(r, o, "weight", j, &sj->weight)) < 0)
        return rc;
    if (jv_type_of(model) == JV_STRING) {
        if (!(sj->tput.ops = tput_model_find(jv_string_value(model))))
            return sf_bad(r, "unknown throughput model", "tput_model", j);
    } else if (jv_type_of(model) != JV_NULL) {
        return sf_bad(r, "not a model name or null", "tput_model", j);
    }
    if (sj->has_model && !sj->tput.ops)
        return sf_bad(r, "a job with a model needs its model's name", "tput_model", j);
    if (jv_type_of(theta) != JV_ARRAY || jv_size(theta) != TPUT_MAX_PARAMS)
        return err_set(r->e, ERR_PARSE, r->path, r->lineno, 0,
                       "theta[%d]: not an array of %d numbers", j, TPUT_MAX_PARAMS);
    for (int k = 0; k < TPUT_MAX_PARAMS; k++)
        if ((rc = sf_real_value(r, jv_at(theta, (size_t)k), "theta", j, &sj->tput.theta[k])) < 0)
            return rc;
    if (jv_type_of(rows) != JV_ARRAY)
        return sf_bad(r, "not an array of node numbers", "current", j);
    for (size_t i = 0; i < jv_size(rows); i++) {
        long long node;

        if (jv_integer_value(jv_at(rows, i), &node) < 0 || node < 0 || node >= nnodes)
            return sf_bad(r, "a node number out of range", "current", j);
        if (alloc_add(cur, j, (int)node, 1) < 0)
            return sf_bad(r, "more GPUs than the nodes hold", "current", j);
    }
    if (!(*name = strdup(nm)))
        return ERR_NOMEM;
    sj->name = *name;
    return 0;
}

void snapfile_free(struct snapfile_snap *sn)
{
    if (!sn)
        return;
    for (int j = 0; sn->names && j < sn->s.njobs; j++)
        free(sn->names[j]);
    free(sn->names);
    free(sn->nodes);
    free(sn->jobs);
    alloc_free(sn->cur);
    free(sn->label);
    memset(sn, 0, sizeof(*sn));
}

int snapfile_read(const char *text, size_t len, const char *path, int lineno,
                  struct snapfile_snap *out, struct error *e)
{
    struct sf_reader r = {.path = path, .lineno = lineno, .e = e};
    struct snapfile_snap sn = {0};
    struct jv *o = NULL;
    const struct jv *nodes, *jobs;
    const char *label;
    long long tick;
    int rc, gpus = 0;

    if ((rc = jv_parse(text, len, &o, e)) < 0) {
        if (e) {
            snprintf(e->file, sizeof(e->file), "%s", path);
            e->line = lineno;
        }
        return rc;
    }
    nodes = jv_get(o, "nodes");
    jobs = jv_get(o, "jobs");
    label = jv_string_value(jv_get(o, "label"));
    if (jv_type_of(o) != JV_OBJECT) {
        rc = sf_bad(&r, "not an object", "snapshot", -1);
        goto out;
    }
    if (!label || jv_integer_value(jv_get(o, "tick"), &tick) < 0) {
        rc = sf_bad(&r, "missing or of the wrong type", "label and tick", -1);
        goto out;
    }
    if (jv_type_of(nodes) != JV_ARRAY || jv_size(nodes) == 0 || jv_size(nodes) > 1 << 16 ||
        jv_type_of(jobs) != JV_ARRAY || jv_size(jobs) > 1 << 16) {
        rc = sf_bad(&r, "not arrays (at least one node)", "nodes and jobs", -1);
        goto out;
    }
    sn.s.nnodes = (int)jv_size(nodes);
    sn.s.njobs = (int)jv_size(jobs);
    sn.nodes = calloc((size_t)sn.s.nnodes, sizeof(*sn.nodes));
    sn.jobs = calloc((size_t)sn.s.njobs + 1, sizeof(*sn.jobs));
    sn.names = calloc((size_t)sn.s.njobs + 1, sizeof(*sn.names));
    sn.label = strdup(label);
    if (!sn.nodes || !sn.jobs || !sn.names || !sn.label) {
        rc = ERR_NOMEM;
        goto out;
    }
    if ((rc = sf_get_real(&r, o, "now", -1, &sn.s.now)) < 0 ||
        (rc = sf_get_real(&r, o, "min_billed_s", -1, &sn.s.min_billed_s)) < 0)
        goto out;
    for (int k = 0; k < sn.s.nnodes; k++) {
        if ((rc = sf_read_node(&r, jv_at(nodes, (size_t)k), k, &sn.nodes[k])) < 0)
            goto out;
        gpus += sn.nodes[k].gpus;
    }
    if ((rc = alloc_new(sn.s.njobs, sn.s.nnodes, gpus, &sn.cur)) < 0)
        goto out;
    for (int j = 0; j < sn.s.njobs; j++)
        if ((rc = sf_read_job(&r, jv_at(jobs, (size_t)j), j, sn.s.nnodes, &sn.jobs[j], &sn.names[j],
                              sn.cur)) < 0)
            goto out;
    sn.s.nodes = sn.nodes;
    sn.s.jobs = sn.jobs;
    sn.s.current = sn.cur;
    sn.tick = (long)tick;
    *out = sn;
    rc = 0;
out:
    jv_free(o);
    if (rc < 0)
        snapfile_free(&sn);
    return rc;
}
