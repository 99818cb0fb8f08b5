/* state_reports.c: what the controller's state keeps for fitting jobs' goodput: each job's fitted
 * model, its training reports (step times pooled per configuration, gradient statistics,
 * progress) and a model family's measurements and start statistics. */
#include <math.h>
#include <stdlib.h>

#include "control/state.h"
#include "control/state_internal.h"
#include "util/db.h"

/* ---- goodput models ---- */

int state_model_store(struct state *st, const char *job, const char *params, const char *grad_stats,
                      double now)
{
    if (!st_name_ok(job) || !params || !grad_stats || !st_time_ok(now))
        return ERR_INVAL;
    /* the job is looked up inside the statement: no job, no row (ERR_UNKNOWN) */
    return st_update(st,
                     "INSERT INTO models (job_id, params, grad_stats, fitted_at)"
                     " SELECT id, ?2, ?3, ?4 FROM jobs WHERE name = ?1"
                     " ON CONFLICT (job_id) DO UPDATE SET params = excluded.params,"
                     " grad_stats = excluded.grad_stats, fitted_at = excluded.fitted_at",
                     "tttd", job, params, grad_stats, now);
}

int state_model_get(struct state *st, const char *job, struct state_model *out)
{
    enum state_job_state jstate = STATE_JOB_PENDING;
    struct state_model m = {0};
    struct db_stmt *s = NULL;
    long long job_id = 0;
    int rc;

    if (!st_name_ok(job))
        return ERR_INVAL;
    rc = st_job_find(st->db, job, &job_id, &jstate);
    if (rc < 0)
        return rc;
    rc =
        st_prepare(st->db, &s, "SELECT params, grad_stats, fitted_at FROM models WHERE job_id = ?1",
                   "i", job_id);
    if (rc < 0)
        return rc;
    rc = db_step(s);
    if (rc == 0)
        rc = ERR_EMPTY;
    if (rc == DB_ROW) {
        rc = db_column_text_dup(s, 0, &m.params);
        if (rc == 0)
            rc = db_column_text_dup(s, 1, &m.grad_stats);
        m.fitted_at = db_column_double(s, 2);
    }
    db_finalize(s);
    if (rc < 0) {
        state_model_clear(&m);
        return rc;
    }
    *out = m;
    return 0;
}

void state_model_clear(struct state_model *m)
{
    if (!m)
        return;
    free(m->params);
    free(m->grad_stats);
    m->params = m->grad_stats = NULL;
}

/* ---- reports ---- */

static int st_report_config_ok(const struct state_report_config *c)
{
    return c->nodes >= 1 && c->replicas >= c->nodes && st_time_ok(c->local_bsz) &&
           c->local_bsz > 0 && c->accum_steps >= 0 && c->count >= 1 && st_time_ok(c->step_mean) &&
           c->step_mean > 0 && st_time_ok(c->step_sd) && c->step_sd >= 0 &&
           st_time_ok(c->sync_mean) && c->sync_mean >= 0 && c->sync_mean < c->step_mean;
}

static int st_report_ok(const struct state_report *r)
{
    if (!r || (r->nconfigs > 0 && !r->configs) || isnan(r->grad_sqr) != isnan(r->grad_var) ||
        !st_opt_time_ok(r->grad_sqr) || !st_opt_time_ok(r->grad_var) || r->grad_sqr < 0 ||
        r->grad_var < 0 || !st_opt_time_ok(r->progress) || r->progress < 0 ||
        !isfinite(r->sync_prior) || r->sync_prior < 0)
        return 0;
    for (size_t i = 0; i < r->nconfigs; i++)
        if (!st_report_config_ok(&r->configs[i]))
            return 0;
    return 1;
}

/* Inside a transaction: store one report of the job (checked by the caller). */
static int st_report_one(struct state *st, const char *job, const struct state_report *r,
                         double now)
{
    enum state_job_state cur = STATE_JOB_PENDING;
    long long id = 0;
    int rc;

    rc = st_job_find(st->db, job, &id, &cur);
    if (rc == 0 && st_job_final(cur))
        rc = ERR_CONFLICT;
    /* pooled: counts add, means are weighted by counts, variances combine with the spread of
     * the two means (every right-hand side reads the row as it was); the pooled sync time stays
     * below the pooled step time, as each report's is, where rounding would make them equal */
    for (size_t i = 0; rc == 0 && i < r->nconfigs; i++) {
        const struct state_report_config *c = &r->configs[i];

        rc = st_run(st->db,
                    "INSERT INTO reports (job_id, nodes, replicas, local_bsz, accum_steps, count,"
                    " step_mean, step_var, sync_mean, at)"
                    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
                    " ON CONFLICT DO UPDATE SET count = count + excluded.count,"
                    " step_mean = (count * step_mean + excluded.count * excluded.step_mean)"
                    "  / (count + excluded.count),"
                    " step_var = (count * step_var + excluded.count * excluded.step_var"
                    "  + count * excluded.count * (step_mean - excluded.step_mean)"
                    "  * (step_mean - excluded.step_mean) / (count + excluded.count))"
                    "  / (count + excluded.count),"
                    " sync_mean = min((count * sync_mean + excluded.count * excluded.sync_mean)"
                    "  / (count + excluded.count), (count * step_mean + excluded.count"
                    "  * excluded.step_mean) / (count + excluded.count) * (1 - 1e-9)),"
                    " at = excluded.at",
                    "inndnidddd", id, c->nodes, c->replicas, c->local_bsz, c->accum_steps, c->count,
                    c->step_mean, c->step_sd * c->step_sd, c->sync_mean, now);
    }
    /* grad0: the first statistics, written by the report that brings the job's first (its
     * grad_sqr still NULL: a job reported before version 5 never gets one) and kept after */
    if (rc == 0)
        rc = st_run(st->db,
                    "UPDATE jobs SET grad0_sqr = iif(grad_sqr IS NULL, ?2, grad0_sqr),"
                    " grad0_var = iif(grad_sqr IS NULL, ?3, grad0_var),"
                    " grad_sqr = coalesce(?2, grad_sqr),"
                    " grad_var = coalesce(?3, grad_var), progress = coalesce(?4, progress),"
                    " reported_at = ?5, sync_prior = coalesce(?6, sync_prior) WHERE id = ?1",
                    "iddddd", id, r->grad_sqr, r->grad_var, r->progress, now,
                    r->sync_prior > 0 ? r->sync_prior : NAN);
    return rc;
}

/* An error that belongs to one report (the others of a batch may still be written). */
static int st_report_own_error(int rc)
{
    return rc == ERR_UNKNOWN || rc == ERR_CONFLICT || rc == ERR_INVAL || rc == ERR_RANGE;
}

int state_report_store_many(struct state *st, struct state_report_item *items, size_t n, double now)
{
    int rc;

    if (!items || n == 0 || !st_time_ok(now))
        return ERR_INVAL;
    rc = db_begin(st->db);
    if (rc < 0)
        goto out;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (!st_name_ok(items[i].job) || !st_report_ok(&items[i].report)) {
            items[i].rc = ERR_INVAL;
            continue;
        }
        /* each report under a savepoint: a refused one leaves no trace, the others stay */
        rc = db_exec(st->db, "SAVEPOINT report");
        if (rc < 0)
            break;
        items[i].rc = st_report_one(st, items[i].job, &items[i].report, now);
        if (items[i].rc < 0 && !st_report_own_error(items[i].rc)) {
            rc = items[i].rc;
            break;
        }
        if (items[i].rc < 0)
            rc = db_exec(st->db, "ROLLBACK TO report");
        if (rc == 0)
            rc = db_exec(st->db, "RELEASE report");
    }
    rc = st_end(st, rc);
out:
    if (rc < 0)
        for (size_t i = 0; i < n; i++)
            items[i].rc = rc;
    return rc;
}

int state_report_store(struct state *st, const char *job, const struct state_report *r, double now)
{
    struct state_report_item item = {job, {0}, 0};
    int rc;

    if (!st_name_ok(job) || !st_report_ok(r) || !st_time_ok(now))
        return ERR_INVAL;
    item.report = *r;
    rc = state_report_store_many(st, &item, 1, now);
    return rc < 0 ? rc : item.rc;
}

static int st_read_report(struct db_stmt *s, void *item)
{
    struct state_report_config *c = item;

    c->nodes = (int)db_column_int(s, 0);
    c->replicas = (int)db_column_int(s, 1);
    c->local_bsz = db_column_double(s, 2);
    c->accum_steps = (int)db_column_int(s, 3);
    c->count = db_column_int(s, 4);
    c->step_mean = db_column_double(s, 5);
    c->step_sd = sqrt(fmax(db_column_double(s, 6), 0.0));
    c->sync_mean = db_column_double(s, 7);
    c->at = db_column_double(s, 8);
    return 0;
}

static void st_clear_nothing(void *item)
{
    (void)item;
}

static const struct st_rows st_report_rows = {sizeof(struct state_report_config), st_read_report,
                                              st_clear_nothing};

int state_report_configs(struct state *st, const char *job, struct state_report_config **out,
                         size_t *n)
{
    return st_collect_by(st->db, ST_KEY_JOB, job,
                         "SELECT nodes, replicas, local_bsz, accum_steps, count, step_mean,"
                         " step_var, sync_mean, at FROM reports WHERE job_id = ?1"
                         " ORDER BY nodes, replicas, local_bsz, accum_steps",
                         &st_report_rows, (void **)out, n);
}

/* ---- model families ---- */

/* The family a job's spec names, as the index jobs_by_family has it (the same expression, so
 * that the queries search the index). */
#define ST_FAMILY "json_extract(spec, '$.family')"

static int st_read_family_config(struct db_stmt *s, void *item)
{
    struct state_family_config *c = item;

    c->job_id = db_column_int(s, 9); /* after the columns st_read_report reads */
    return st_read_report(s, &c->config);
}

static const struct st_rows st_family_rows = {sizeof(struct state_family_config),
                                              st_read_family_config, st_clear_nothing};

int state_family_configs(struct state *st, const char *family, const char *except,
                         struct state_family_config **out, size_t *n)
{
    struct db_stmt *s = NULL;
    int rc;

    if (!st_name_ok(family) || (except && !st_name_ok(except)))
        return ERR_INVAL;
    rc = st_prepare(st->db, &s,
                    "SELECT r.nodes, r.replicas, r.local_bsz, r.accum_steps, r.count,"
                    " r.step_mean, r.step_var, r.sync_mean, r.at, r.job_id"
                    " FROM jobs j JOIN reports r ON r.job_id = j.id"
                    " WHERE " ST_FAMILY " = ?1 AND j.name IS NOT ?2"
                    " ORDER BY j.id, r.nodes, r.replicas, r.local_bsz, r.accum_steps",
                    "tt", family, except);
    if (rc < 0)
        return rc;
    return st_collect(s, &st_family_rows, (void **)out, n);
}

int state_family_start_grad(struct state *st, const char *family, double m0, double *sqr,
                            double *var)
{
    struct db_stmt *s = NULL;
    int rc;

    if (!st_name_ok(family) || !sqr || !var || !(m0 > 0) || !isfinite(m0))
        return ERR_INVAL;
    /* grad_var is per M0-sized batch: times the job's own M0 it is the per-sample variance,
     * which jobs of one model share whatever batch they start at */
    rc = st_prepare(st->db, &s,
                    "SELECT count(*), avg(grad0_sqr),"
                    " avg(grad0_var * coalesce(json_extract(spec, '$.init_batch_size'), ?2))"
                    " FROM jobs WHERE " ST_FAMILY " = ?1 AND grad0_sqr IS NOT NULL",
                    "td", family, m0);
    if (rc < 0)
        return rc;
    rc = db_step(s);
    if (rc == DB_ROW && db_column_int(s, 0) > 0) {
        *sqr = db_column_double(s, 1);
        *var = db_column_double(s, 2) / m0;
        rc = 0;
    } else if (rc == DB_ROW) {
        rc = ERR_NOENT;
    } else if (rc == 0) {
        rc = ERR_INTERNAL;
    }
    db_finalize(s);
    return rc;
}
