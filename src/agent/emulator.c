/* emulator.c: one replica of an emulated training job: a measured profile replayed in scaled real
 * time, with checkpoints, resumption and reports to the controller. */
#include "agent/emulator.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "sim/app.h"
#include "sim/job.h"
#include "util/file.h"
#include "util/http_client.h"
#include "util/json.h"
#include "util/log.h"

int emu_place_even(int world_size, int local_world_size, struct emu_setup *u)
{
    int nodes, left = world_size;

    if (world_size < 1 || local_world_size < 1)
        return ERR_INVAL;
    if (local_world_size > world_size)
        local_world_size = world_size;
    nodes = (world_size + local_world_size - 1) / local_world_size;
    if (nodes > EMU_MAX_NODES)
        return ERR_RANGE;
    for (int i = 0; i < nodes; i++) {
        u->place[i] = left < local_world_size ? left : local_world_size;
        left -= u->place[i];
    }
    u->nplace = nodes;
    u->replicas = world_size;
    return 0;
}

/* local held inside the measured local batches and the job's total batch limits. */
static double emu_clamp_local(const struct app *a, int replicas, int s, double local)
{
    double per = (double)replicas * (s + 1), cap = floor(a->max_bsz / per);

    local = fmin(fmax(local, a->min_local), a->max_local);
    if (local > cap)
        local = cap;
    if (local * per < a->init_bsz)
        local = ceil(a->init_bsz / per);
    return local;
}

int emu_configure(struct app *a, struct emu_setup *u, double local_bsz, int accum_steps)
{
    struct sim_rate r;
    double local;
    int s, rc;

    if (u->replicas < 1)
        return ERR_INVAL;
    if (isfinite(local_bsz) && local_bsz > 0) {
        s = accum_steps > 0 ? accum_steps : 0;
        local = emu_clamp_local(a, u->replicas, s, local_bsz);
        if (sim_job_rate(a, u->place, u->nplace, local, s, 0, &r) == 0)
            goto out;
    }
    sim_fixed_config(a, fmax(a->init_bsz, (double)a->min_local * u->replicas), u->replicas, &local,
                     &s);
    local = fmin(local, floor(a->max_bsz / ((double)u->replicas * (s + 1))));
    if ((rc = sim_job_rate(a, u->place, u->nplace, local, s, 0, &r)) < 0)
        return rc;
out:
    u->local_bsz = local;
    u->accum_steps = s;
    return 0;
}

int emu_advance(struct app *a, const struct emu_setup *u, int epochs, struct emu_state *s,
                double dt, double *steps)
{
    while (dt > 0 && s->epoch < epochs) {
        double next = app_progress_needed(a, s->epoch + 1), need;
        struct sim_rate r;
        int rc = sim_job_rate(a, u->place, u->nplace, u->local_bsz, u->accum_steps, s->epoch, &r);

        if (rc < 0)
            return rc;
        if (!(r.goodput > 0) || !isfinite(next))
            return ERR_RANGE;
        need = fmax(0, (next - s->progress) / r.goodput);
        if (need > dt) {
            s->progress += r.goodput * dt;
            s->emulated_s += dt;
            if (steps)
                *steps += dt / r.opt_step;
            return 0;
        }
        s->progress = next;
        s->epoch++;
        s->emulated_s += need;
        if (steps)
            *steps += need / r.opt_step;
        dt -= need;
    }
    return 0;
}

int emu_epoch_left(struct app *a, const struct emu_setup *u, const struct emu_state *s, double *out)
{
    struct sim_rate r;
    int rc;

    if (s->epoch >= a->max_epochs) {
        *out = 0;
        return 0;
    }
    if ((rc = sim_job_rate(a, u->place, u->nplace, u->local_bsz, u->accum_steps, s->epoch, &r)) < 0)
        return rc;
    if (!(r.goodput > 0))
        return ERR_RANGE;
    *out = fmax(0, (app_progress_needed(a, s->epoch + 1) - s->progress) / r.goodput);
    return 0;
}

int emu_checkpoint_read(const char *path, const char *app, struct emu_state *out, struct error *e)
{
    struct emu_state s;
    struct jv *v = NULL;
    char *text = NULL;
    const char *name;
    long long epoch;
    size_t len = 0;
    int rc = file_read_all(path, &text, &len, e);

    if (rc < 0)
        return rc;
    if (jv_parse(text, len, &v, NULL) < 0) {
        rc = err_set(e, ERR_PARSE, path, 0, 0, "not a checkpoint (malformed JSON)");
        goto out;
    }
    name = jv_string_value(jv_get(v, "app"));
    if (!name || strcmp(name, app) != 0) {
        rc = err_set(e, ERR_PARSE, path, 0, 0, "a checkpoint of another application");
        goto out;
    }
    if (jv_number_value(jv_get(v, "progress"), &s.progress) < 0 || !(s.progress >= 0) ||
        jv_integer_value(jv_get(v, "epoch"), &epoch) < 0 || epoch < 0 || epoch > 1000000 ||
        jv_number_value(jv_get(v, "emulated_s"), &s.emulated_s) < 0 || !(s.emulated_s >= 0)) {
        rc = err_set(e, ERR_PARSE, path, 0, 0, "a checkpoint needs progress, epoch and emulated_s");
        goto out;
    }
    /* written since the checkpoints were numbered; older ones count as number 0 */
    s.number = 0;
    if (jv_get(v, "number") &&
        (jv_integer_value(jv_get(v, "number"), &s.number) < 0 || s.number < 0)) {
        rc = err_set(e, ERR_PARSE, path, 0, 0, "a checkpoint's number is a count of checkpoints");
        goto out;
    }
    s.epoch = (int)epoch;
    *out = s;
out:
    jv_free(v);
    free(text);
    return rc;
}

/* {"app", "progress", "epoch", "emulated_s", "number"} as text (free). */
static int emu_state_text(const char *app, const struct emu_state *s, char **out)
{
    struct jv *o = jv_object();
    int rc = o ? 0 : ERR_NOMEM;

    if (rc == 0)
        rc = jv_set(o, "app", jv_string(app));
    if (rc == 0)
        rc = jv_set(o, "progress", jv_number(s->progress));
    if (rc == 0)
        rc = jv_set(o, "epoch", jv_integer(s->epoch));
    if (rc == 0)
        rc = jv_set(o, "emulated_s", jv_number(s->emulated_s));
    if (rc == 0)
        rc = jv_set(o, "number", jv_integer(s->number));
    if (rc == 0)
        rc = jv_dump(o, out);
    jv_free(o);
    return rc;
}

int emu_checkpoint_write(const char *path, const char *app, const struct emu_state *s,
                         struct error *e)
{
    char *text = NULL;
    int rc = emu_state_text(app, s, &text);

    if (rc < 0)
        return err_set(e, rc, path, 0, 0, "out of memory");
    rc = file_write_atomic(path, text, strlen(text), 0644, e);
    free(text);
    return rc;
}

int emu_report_body(const struct emu_setup *u, long long count, double opt_step, double sync,
                    double sqr, double var, double progress, char **out)
{
    struct jv *o = jv_object(), *configs = jv_array(), *c = NULL, *g = jv_object();
    int rc = o && configs && g ? 0 : ERR_NOMEM;

    if (rc == 0 && count >= 1) {
        rc = (c = jv_object()) ? 0 : ERR_NOMEM;
        if (rc == 0)
            rc = jv_set(c, "nodes", jv_integer(u->nplace));
        if (rc == 0)
            rc = jv_set(c, "replicas", jv_integer(u->replicas));
        if (rc == 0)
            rc = jv_set(c, "local_bsz", jv_number(u->local_bsz));
        if (rc == 0)
            rc = jv_set(c, "accum_steps", jv_integer(u->accum_steps));
        if (rc == 0)
            rc = jv_set(c, "count", jv_integer(count));
        if (rc == 0)
            rc = jv_set(c, "step_mean", jv_number(opt_step));
        if (rc == 0)
            rc = jv_set(c, "step_sd", jv_number(0));
        if (rc == 0 && sync >= 0 && sync < opt_step)
            rc = jv_set(c, "sync_mean", jv_number(sync));
        if (rc == 0)
            rc = jv_push(configs, c);
        else
            jv_free(c);
    }
    if (rc == 0) {
        rc = jv_set(o, "configs", configs);
        configs = NULL;
    }
    if (rc == 0 && isfinite(sqr) && isfinite(var) && sqr >= 0 && var >= 0) {
        if ((rc = jv_set(g, "sqr", jv_number(sqr))) == 0 &&
            (rc = jv_set(g, "var", jv_number(var))) == 0)
            rc = jv_set(o, "grad", g);
        else
            jv_free(g);
        g = NULL;
    }
    if (rc == 0)
        rc = jv_set(o, "progress", jv_number(progress));
    if (rc == 0)
        rc = jv_dump(o, out);
    jv_free(g);
    jv_free(configs);
    jv_free(o);
    return rc;
}

/* ---- the replica ---- */

struct emu {
    const struct emu_config *cfg;
    struct http_client *http;
    struct emu_setup u;
    struct emu_state s;
    int epochs;
    char ckpt[4096], done[4096];
    double pending_steps; /* optimizer steps not reported yet */
};

static double emu_mono(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void emu_log(struct emu *m, enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void emu_log(struct emu *m, enum log_level level, const char *fmt, ...)
{
    struct timespec ts;
    char msg[LOG_MSG_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    clock_gettime(CLOCK_REALTIME, &ts);
    log_msg(m->cfg->log, (double)ts.tv_sec + ts.tv_nsec / 1e9, level, m->cfg->job, NULL,
            "rank %d: %s", m->cfg->rank, msg);
}

static int emu_reports(const struct emu *m)
{
    return m->cfg->rank == 0 && m->cfg->url && m->cfg->job_token && m->cfg->job && m->http;
}

/* The placement from the job's allocation, when it can be read and sums to the world size. */
static int emu_place_from_allocation(struct emu *m)
{
    struct http_client_response r = {0};
    struct emu_setup u = {0};
    const struct jv *nodes;
    struct jv *v = NULL;
    char path[512];
    int ok = 0;

    snprintf(path, sizeof(path), "/v1/jobs/%s/allocation", m->cfg->job);
    if (agent_call(m->http, m->cfg->url, m->cfg->job_token, "GET", path, NULL, m->cfg->timeout_s,
                   NULL, &r, NULL) < 0)
        return 0;
    if (r.status == 200 && jv_parse(r.body, r.body_len, &v, NULL) == 0) {
        nodes = jv_get(v, "nodes");
        ok = jv_size(nodes) >= 1 && jv_size(nodes) <= EMU_MAX_NODES;
        for (size_t i = 0; ok && i < jv_size(nodes); i++) {
            long long k = 0;

            ok = jv_integer_value(jv_get(jv_at(nodes, i), "replicas"), &k) == 0 && k >= 1 &&
                 k <= 1024;
            if (ok) {
                u.place[u.nplace++] = (int)k;
                u.replicas += (int)k;
            }
        }
        ok = ok && u.replicas == m->cfg->world_size;
    }
    jv_free(v);
    http_client_response_clear(&r);
    if (ok)
        m->u = u;
    return ok;
}

/* Post what was run since the last report; the steps stay pending when it fails. */
static void emu_report(struct emu *m)
{
    struct http_client_response r = {0};
    long long count = (long long)floor(m->pending_steps);
    struct sim_rate rate;
    struct error e = {0};
    char path[512], *body = NULL;
    double sqr = NAN, var = NAN, step = 1, sync = -1;
    int rc;

    if (!emu_reports(m))
        return;
    if (sim_job_rate(m->cfg->app, m->u.place, m->u.nplace, m->u.local_bsz, m->u.accum_steps,
                     m->s.epoch < m->epochs ? m->s.epoch : m->epochs - 1, &rate) == 0) {
        sqr = rate.sqr;
        var = rate.var;
        step = rate.opt_step;
        sync = rate.sync;
    } else {
        count = 0;
    }
    if (emu_report_body(&m->u, count, step, sync, sqr, var, m->s.progress, &body) < 0)
        return;
    snprintf(path, sizeof(path), "/v1/jobs/%s/reports", m->cfg->job);
    rc = agent_call(m->http, m->cfg->url, m->cfg->job_token, "POST", path, body, m->cfg->timeout_s,
                    NULL, &r, &e);
    free(body);
    if (rc < 0) {
        emu_log(m, LOG_WARN, "report not sent (kept for the next): %s", e.msg);
    } else if (r.status != 200) {
        emu_log(m, LOG_WARN, "report answered %ld (kept for the next)", r.status);
    } else {
        m->pending_steps -= (double)count;
        emu_log(m, LOG_DEBUG, "reported %lld steps, progress %.6f", count, m->s.progress);
    }
    http_client_response_clear(&r);
}

/* POST {"progress": progress} to /v1/jobs/{job}/{what}: the HTTP status, or -1 when the
 * controller could not be reached (e says why). */
static long emu_post_progress(struct emu *m, const char *what, double progress, struct error *e)
{
    struct http_client_response r = {0};
    char path[512], body[64];
    long status = -1;

    snprintf(path, sizeof(path), "/v1/jobs/%s/%s", m->cfg->job, what);
    snprintf(body, sizeof(body), "{\"progress\":%.17g}", progress);
    if (agent_call(m->http, m->cfg->url, m->cfg->job_token, "POST", path, body, m->cfg->timeout_s,
                   NULL, &r, e) == 0)
        status = r.status;
    http_client_response_clear(&r);
    return status;
}

static int emu_checkpoint(struct emu *m, const char *why)
{
    struct error e = {0};
    long status;
    int rc;

    if (m->cfg->rank != 0)
        return 0;
    m->s.number++;
    rc = emu_checkpoint_write(m->ckpt, m->cfg->app->name, &m->s, &e);
    if (rc < 0) {
        m->s.number--;
        emu_log(m, LOG_ERROR, "checkpoint failed: %s", e.msg);
        return rc;
    }
    emu_log(m, LOG_INFO, "checkpoint (%s): progress %.6f, epoch %d, number %lld", why,
            m->s.progress, m->s.epoch, m->s.number);
    if (emu_reports(m) && (status = emu_post_progress(m, "checkpoint", m->s.progress, &e)) != 200)
        emu_log(m, LOG_WARN, "checkpoint not recorded by the controller: %s",
                status < 0 ? e.msg : "refused");
    return 0;
}

/* Tell the controller the job is done (rank 0), retrying with backoff for up to
 * cfg->finish_wait_s while it cannot be reached or answers 5xx; SIGTERM or SIGINT stops the
 * retries. Never fails the replica: the marker is written, and a later start says it again. */
static void emu_announce(struct emu *m, double progress)
{
    const double until = emu_mono() + m->cfg->finish_wait_s;
    double wait = 0.2;
    struct error e = {0};
    sigset_t set;
    long status;

    if (!emu_reports(m))
        return;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    for (;;) {
        struct timespec ts;

        status = emu_post_progress(m, "finished", progress, &e);
        if (status >= 200 && status < 500)
            break;
        if (emu_mono() + wait > until) {
            emu_log(m, LOG_WARN, "the controller was not told the job finished: %s",
                    status < 0 ? e.msg : "it answered 5xx");
            return;
        }
        ts.tv_sec = (time_t)wait;
        ts.tv_nsec = (long)((wait - (double)ts.tv_sec) * 1e9);
        if (sigtimedwait(&set, NULL, &ts) > 0)
            return;
        wait = fmin(wait * 2, 2.0);
    }
    if (status == 200)
        emu_log(m, LOG_INFO, "the controller recorded the job finished at progress %.6f", progress);
    else
        emu_log(m, LOG_WARN, "the controller refused the end of the job (%ld)", status);
}

static int emu_config_ok(const struct emu_config *c)
{
    return c && c->app && c->dir && c->world_size >= 1 && c->rank >= 0 && c->rank < c->world_size &&
           c->local_world_size >= 1 && c->speed > 0 && isfinite(c->speed) && c->checkpoint_s > 0 &&
           c->report_s > 0 && c->epochs >= 0 && c->epochs <= c->app->max_epochs &&
           c->timeout_s > 0 && c->finish_wait_s >= 0 && c->crash_at >= 0 && c->stop_s >= 0 &&
           c->stop_s <= 3600;
}

/* Start: the completion marker, the checkpoint, the placement and configuration. Returns 1 when
 * the job is already done. */
static int emu_start(struct emu *m)
{
    const struct emu_config *c = m->cfg;
    struct stat sb;
    struct error e = {0};
    int rc;

    snprintf(m->ckpt, sizeof(m->ckpt), "%s/%s", c->dir, EMU_CKPT_FILE);
    snprintf(m->done, sizeof(m->done), "%s/%s", c->dir, EMU_DONE_FILE);
    if (stat(m->done, &sb) == 0) {
        emu_log(m, LOG_INFO, "already complete (%s): nothing to do", EMU_DONE_FILE);
        if (c->rank == 0 && c->url && c->job_token && c->job &&
            emu_checkpoint_read(m->done, c->app->name, &m->s, &e) == 0 &&
            http_client_new(&m->http) == 0)
            emu_announce(m, m->s.progress); /* the last start may have been killed before */
        return 1;
    }
    rc = emu_checkpoint_read(m->ckpt, c->app->name, &m->s, &e);
    if (rc == ERR_NOENT) {
        memset(&m->s, 0, sizeof(m->s));
    } else if (rc < 0) {
        emu_log(m, LOG_ERROR, "cannot resume: %s", e.msg);
        return rc;
    }
    if (c->url && c->job_token && c->job && (rc = http_client_new(&m->http)) < 0)
        return rc;
    if (!(m->http && c->job && emu_place_from_allocation(m)) &&
        (rc = emu_place_even(c->world_size, c->local_world_size, &m->u)) < 0)
        return rc;
    if ((rc = emu_configure(c->app, &m->u, c->local_bsz, c->accum_steps)) < 0) {
        emu_log(m, LOG_ERROR, "the profile cannot time %d replicas: %s", m->u.replicas,
                err_str(rc));
        return rc;
    }
    emu_log(m, LOG_INFO,
            "start: progress %.6f, epoch %d of %d; %d replicas on %d nodes, local batch %g, "
            "%d accumulation steps, speed x%g, from checkpoint number %lld",
            m->s.progress, m->s.epoch, m->epochs, m->u.replicas, m->u.nplace, m->u.local_bsz,
            m->u.accum_steps, c->speed, m->s.number);
    return 0;
}

static int emu_finish(struct emu *m)
{
    struct error e = {0};
    char *text = NULL;
    int rc;

    emu_log(m, LOG_INFO, "done: %d epochs, progress %.6f, %.0f emulated seconds", m->s.epoch,
            m->s.progress, m->s.emulated_s);
    if (m->cfg->rank != 0)
        return 0;
    if ((rc = emu_checkpoint(m, "done")) < 0)
        return rc;
    emu_report(m);
    if ((rc = emu_state_text(m->cfg->app->name, &m->s, &text)) < 0)
        return rc;
    rc = file_write_atomic(m->done, text, strlen(text), 0644, &e);
    free(text);
    if (rc < 0)
        emu_log(m, LOG_ERROR, "cannot write the completion marker: %s", e.msg);
    else
        emu_announce(m, m->s.progress);
    return rc;
}

/* 1 when this is the crash crash_at asks for (EMU_CRASH_FILE written now), 0 when it was had. */
static int emu_crash_once(struct emu *m)
{
    char path[4200];
    int fd;

    snprintf(path, sizeof(path), "%s/%s", m->cfg->dir, EMU_CRASH_FILE);
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0)
        return 0;
    close(fd);
    emu_log(m, LOG_WARN, "crashing as asked at %.0f emulated seconds: no checkpoint",
            m->s.emulated_s);
    return 1;
}

int emu_run(const struct emu_config *cfg)
{
    struct emu m = {0};
    struct stat sb;
    sigset_t set, old;
    double last, since_ckpt = 0, since_report = 0;
    int rc;

    if (!emu_config_ok(cfg))
        return ERR_INVAL;
    m.cfg = cfg;
    m.epochs = cfg->epochs > 0 ? cfg->epochs : cfg->app->max_epochs;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigprocmask(SIG_BLOCK, &set, &old);
    rc = emu_start(&m);
    if (rc != 0) {
        rc = rc > 0 ? 0 : rc;
        goto out;
    }
    emu_report(&m); /* the progress it resumes from, at once */
    last = emu_mono();
    while (m.s.epoch < m.epochs) {
        double now = emu_mono(), left = 0, wait;
        struct timespec ts;
        int sig;

        if ((rc = emu_advance(cfg->app, &m.u, m.epochs, &m.s, (now - last) * cfg->speed,
                              &m.pending_steps)) < 0)
            goto out;
        since_ckpt += (now - last) * cfg->speed;
        since_report += (now - last) * cfg->speed;
        last = now;
        if (m.s.epoch >= m.epochs)
            break;
        if (cfg->crash_at > 0 && cfg->rank == 0 && m.s.emulated_s >= cfg->crash_at &&
            emu_crash_once(&m)) {
            rc = EMU_CRASHED;
            goto out;
        }
        if (cfg->rank != 0 && stat(m.done, &sb) == 0) { /* the job ended with rank 0 */
            emu_log(&m, LOG_INFO, "rank 0 completed the job: done at progress %.6f", m.s.progress);
            goto out;
        }
        if (since_ckpt >= cfg->checkpoint_s) {
            if ((rc = emu_checkpoint(&m, "periodic")) < 0)
                goto out;
            since_ckpt = 0;
        }
        if (since_report >= cfg->report_s) {
            emu_report(&m);
            since_report = 0;
        }
        if ((rc = emu_epoch_left(cfg->app, &m.u, &m.s, &left)) < 0)
            goto out;
        wait = fmin(fmin(left, cfg->checkpoint_s - since_ckpt), cfg->report_s - since_report);
        wait = fmin(fmax(wait / cfg->speed, 0.001), 0.25);
        ts.tv_sec = (time_t)wait;
        ts.tv_nsec = (long)((wait - (double)ts.tv_sec) * 1e9);
        sig = sigtimedwait(&set, NULL, &ts);
        if (sig == SIGTERM || sig == SIGINT) {
            now = emu_mono();
            rc = emu_advance(cfg->app, &m.u, m.epochs, &m.s, (now - last) * cfg->speed,
                             &m.pending_steps);
            if (rc == 0 && cfg->rank == 0 && cfg->stop_s > 0) { /* the state as it was, written */
                struct timespec w = {(time_t)cfg->stop_s,
                                     (long)((cfg->stop_s - floor(cfg->stop_s)) * 1e9)};

                while (nanosleep(&w, &w) != 0 && errno == EINTR)
                    ;
            }
            if (rc == 0)
                rc = emu_checkpoint(&m, sig == SIGTERM ? "SIGTERM" : "SIGINT");
            if (rc == 0)
                emu_report(&m); /* the steps since the last report, before they go with it */
            if (rc == 0) {
                emu_log(&m, LOG_INFO, "stopped by a signal at progress %.6f", m.s.progress);
                rc = EMU_STOPPED;
            }
            goto out;
        }
    }
    rc = emu_finish(&m);
out:
    http_client_free(m.http);
    sigprocmask(SIG_SETMASK, &old, NULL);
    return rc;
}
