/* measured.c: loading and checking measured step-time profiles. */
#include "sim/measured.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/fit.h"
#include "util/csv.h"

/* Grow m->rows to hold extra more rows. */
static int measured_reserve(struct measured *m, size_t extra)
{
    struct measured_row *grown = realloc(m->rows, (m->n + extra) * sizeof(*grown));

    if (!grown)
        return ERR_NOMEM;
    m->rows = grown;
    return 0;
}

/* Columns shared by both files: local_bsz, step_time, sync_time. */
struct measured_cols {
    size_t bsz, step, sync;
};

static int measured_columns(const struct csv_table *t, struct measured_cols *c, struct error *e)
{
    int rc;

    if ((rc = csv_column(t, "local_bsz", &c->bsz, e)) < 0 ||
        (rc = csv_column(t, "step_time", &c->step, e)) < 0 ||
        (rc = csv_column(t, "sync_time", &c->sync, e)) < 0)
        return rc;
    return 0;
}

/* Read and check the three shared cells of one row into r. */
static int measured_times(const struct csv_table *t, size_t i, const struct measured_cols *c,
                          struct measured_row *r, struct error *e)
{
    const struct csv_cell *cell;
    int rc;

    if ((rc = csv_get_double(t, i, c->bsz, &r->s.x.local_bsz, e)) < 0 ||
        (rc = csv_get_double(t, i, c->step, &r->s.step_time, e)) < 0 ||
        (rc = csv_get_double(t, i, c->sync, &r->s.sync_time, e)) < 0)
        return rc;
    if (!(r->s.x.local_bsz > 0)) {
        cell = csv_cell_at(t, i, c->bsz);
        return err_set(e, ERR_PARSE, t->name, cell->line, cell->column,
                       "local_bsz: must be positive, found %g", r->s.x.local_bsz);
    }
    if (!(r->s.step_time > 0)) {
        cell = csv_cell_at(t, i, c->step);
        return err_set(e, ERR_PARSE, t->name, cell->line, cell->column,
                       "step_time: must be a positive number of seconds, found %g", r->s.step_time);
    }
    if (r->s.sync_time < 0 || r->s.sync_time >= r->s.step_time) {
        cell = csv_cell_at(t, i, c->sync);
        return err_set(e, ERR_PARSE, t->name, cell->line, cell->column,
                       "sync_time: must be in [0, step_time) seconds, found %g (step_time %g)",
                       r->s.sync_time, r->s.step_time);
    }
    r->line = csv_cell_at(t, i, c->step)->line;
    return 0;
}

static int measured_read_placements(struct measured *m, const char *path, struct error *e)
{
    struct csv_table *t = NULL;
    struct measured_cols c;
    size_t pcol;
    int rc;

    if ((rc = csv_load(path, &t, e)) < 0)
        return rc;
    if ((rc = csv_column(t, "placement", &pcol, e)) < 0 || (rc = measured_columns(t, &c, e)) < 0 ||
        (rc = measured_reserve(m, t->nrows)) < 0)
        goto out;
    for (size_t i = 0; i < t->nrows; i++) {
        struct measured_row *r = &m->rows[m->n];
        const struct csv_cell *pc = csv_cell_at(t, i, pcol);
        size_t len = strlen(pc->text);

        memset(r, 0, sizeof(*r));
        if (len == 0 || len >= sizeof(r->placement)) {
            rc = err_set(e, ERR_PARSE, t->name, pc->line, pc->column,
                         "placement: expected 1 to %zu digits (GPUs per node), found \"%.40s\"",
                         sizeof(r->placement) - 1, pc->text);
            goto out;
        }
        for (size_t k = 0; k < len; k++) {
            if (pc->text[k] < '1' || pc->text[k] > '9') {
                rc = err_set(e, ERR_PARSE, t->name, pc->line, pc->column + (int)k,
                             "placement: expected digits 1-9 (GPUs per node), found '%c'",
                             pc->text[k]);
                goto out;
            }
            r->s.x.replicas += pc->text[k] - '0';
        }
        r->s.x.nodes = (int)len;
        memcpy(r->placement, pc->text, len + 1);
        if ((rc = measured_times(t, i, &c, r, e)) < 0)
            goto out;
        r->source = MEASURED_PLACEMENTS;
        m->n++;
    }
out:
    csv_free(t);
    return rc;
}

static int measured_read_scalability(struct measured *m, const char *path, struct error *e)
{
    struct csv_table *t = NULL;
    struct measured_cols c;
    size_t ncol, rcol;
    int rc;

    if ((rc = csv_load(path, &t, e)) < 0)
        return rc;
    if ((rc = csv_column(t, "num_nodes", &ncol, e)) < 0 ||
        (rc = csv_column(t, "num_replicas", &rcol, e)) < 0 ||
        (rc = measured_columns(t, &c, e)) < 0 || (rc = measured_reserve(m, t->nrows)) < 0)
        goto out;
    for (size_t i = 0; i < t->nrows; i++) {
        struct measured_row *r = &m->rows[m->n];
        long nodes, replicas;

        memset(r, 0, sizeof(*r));
        if ((rc = csv_get_long(t, i, ncol, 1, 4096, &nodes, e)) < 0 ||
            (rc = csv_get_long(t, i, rcol, nodes, 65536, &replicas, e)) < 0 ||
            (rc = measured_times(t, i, &c, r, e)) < 0)
            goto out;
        r->s.x.nodes = (int)nodes;
        r->s.x.replicas = (int)replicas;
        r->source = MEASURED_SCALABILITY;
        m->n++;
    }
out:
    csv_free(t);
    return rc;
}

int measured_load(const char *dir, struct measured **out, struct error *e)
{
    struct measured *m = NULL;
    char path[4096];
    const char *base;
    size_t dlen = strlen(dir);
    int rc;

    if (dlen == 0)
        return err_set(e, ERR_INVAL, "", 0, 0, "no profile folder given");
    while (dlen > 1 && dir[dlen - 1] == '/')
        dlen--;
    base = dir + dlen;
    while (base > dir && base[-1] != '/')
        base--;
    m = calloc(1, sizeof(*m));
    if (!m || !(m->name = strndup(base, (size_t)(dir + dlen - base)))) {
        rc = err_set(e, ERR_NOMEM, dir, 0, 0, NULL);
        goto out;
    }
    snprintf(path, sizeof(path), "%.*s/placements.csv", (int)dlen, dir);
    if ((rc = measured_read_placements(m, path, e)) < 0)
        goto out;
    snprintf(path, sizeof(path), "%.*s/scalability.csv", (int)dlen, dir);
    rc = measured_read_scalability(m, path, e);
    if (rc == ERR_NOENT)
        rc = 0;
    if (rc < 0)
        goto out;
    *out = m;
    m = NULL;
out:
    measured_free(m);
    return rc;
}

void measured_free(struct measured *m)
{
    if (!m)
        return;
    free(m->rows);
    free(m->name);
    free(m);
}

int measured_to_profile(const struct measured *m, unsigned sources, struct profile *prof)
{
    for (size_t i = 0; i < m->n; i++) {
        const struct measured_row *r = &m->rows[i];
        int rc;

        if (!(r->source & sources))
            continue;
        rc = profile_add(prof, &r->s.x, r->s.step_time, r->s.sync_time);
        if (rc < 0)
            return rc;
    }
    return 0;
}

int measured_accuracy(const struct measured *m, const struct tput_model_ops *ops, unsigned train,
                      unsigned test, struct tput_params *fitted, struct accuracy *acc)
{
    const struct tput_sample **picked = NULL;
    double *scratch = NULL;
    struct profile prof;
    struct tput_params tp;
    struct accuracy a;
    size_t n = 0;
    int rc;

    profile_init(&prof);
    picked = malloc((m->n ? m->n : 1) * sizeof(*picked));
    scratch = malloc((m->n ? m->n : 1) * sizeof(*scratch));
    if (!picked || !scratch) {
        rc = ERR_NOMEM;
        goto out;
    }
    if ((rc = measured_to_profile(m, train, &prof)) < 0 ||
        (rc = fit_tput(ops, &prof, &tp, NULL)) < 0)
        goto out;
    for (size_t i = 0; i < m->n; i++)
        if (m->rows[i].source & test)
            picked[n++] = &m->rows[i].s;
    if ((rc = accuracy_eval(&tp, picked, n, scratch, &a)) < 0)
        goto out;
    if (fitted)
        *fitted = tp;
    if (acc)
        *acc = a;
out:
    profile_free(&prof);
    free(scratch);
    free(picked);
    return rc;
}
