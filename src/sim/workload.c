/* workload.c: loading and checking workload traces. */
#include "sim/workload.h"

#include <stdlib.h>
#include <string.h>

#include "util/csv.h"

static int workload_known(const char *const *known, const char *name)
{
    for (size_t i = 0; known && known[i]; i++)
        if (strcmp(known[i], name) == 0)
            return 1;
    return 0;
}

/* Copy cell text into dst (size bytes), or fail naming the column. */
static int workload_text(const struct csv_table *t, size_t row, size_t col, char *dst, size_t size,
                         struct error *e)
{
    const struct csv_cell *c = csv_cell_at(t, row, col);
    size_t len = strlen(c->text);

    if (len == 0 || len >= size)
        return err_set(e, ERR_PARSE, t->name, c->line, c->column,
                       "%s: expected 1 to %zu characters, found \"%.40s\"", t->header[col].text,
                       size - 1, c->text);
    memcpy(dst, c->text, len + 1);
    return 0;
}

static char *workload_base_name(const char *path)
{
    const char *base = strrchr(path, '/');
    size_t len;

    base = base ? base + 1 : path;
    len = strlen(base);
    if (len > 4 && strcmp(base + len - 4, ".csv") == 0)
        len -= 4;
    return strndup(base, len);
}

int workload_load(const char *path, const char *const *known, struct workload **out,
                  struct error *e)
{
    struct csv_table *t = NULL;
    struct workload *w = NULL;
    size_t cname, ctime, capp, crep, cbsz, cdl = (size_t)-1, cck = (size_t)-1, crc = (size_t)-1;
    int rc;

    if ((rc = csv_load(path, &t, e)) < 0)
        return rc;
    if ((rc = csv_column(t, "name", &cname, e)) < 0 ||
        (rc = csv_column(t, "time", &ctime, e)) < 0 ||
        (rc = csv_column(t, "application", &capp, e)) < 0 ||
        (rc = csv_column(t, "num_replicas", &crep, e)) < 0 ||
        (rc = csv_column(t, "batch_size", &cbsz, e)) < 0)
        goto out;
    for (size_t c = 0; c < t->ncols; c++)
        if (strcmp(t->header[c].text, "deadline") == 0)
            cdl = c;
        else if (strcmp(t->header[c].text, "checkpoint") == 0)
            cck = c;
        else if (strcmp(t->header[c].text, "reconfigure") == 0)
            crc = c;
    w = calloc(1, sizeof(*w));
    if (!w || !(w->jobs = calloc(t->nrows, sizeof(*w->jobs))) ||
        !(w->name = workload_base_name(path)) || !(w->path = strdup(path))) {
        rc = err_set(e, ERR_NOMEM, path, 0, 0, NULL);
        goto out;
    }
    for (size_t i = 0; i < t->nrows; i++) {
        struct workload_job *j = &w->jobs[i];
        const struct csv_cell *c;
        long replicas;

        if ((rc = workload_text(t, i, cname, j->name, sizeof(j->name), e)) < 0 ||
            (rc = csv_get_double(t, i, ctime, &j->submit_time, e)) < 0 ||
            (rc = workload_text(t, i, capp, j->application, sizeof(j->application), e)) < 0 ||
            (rc = csv_get_long(t, i, crep, 1, 1 << 20, &replicas, e)) < 0 ||
            (rc = csv_get_double(t, i, cbsz, &j->batch_size, e)) < 0)
            goto out;
        j->num_replicas = (int)replicas;
        j->line = csv_cell_at(t, i, ctime)->line;
        c = csv_cell_at(t, i, ctime);
        if (j->submit_time < 0) {
            rc = err_set(e, ERR_PARSE, t->name, c->line, c->column,
                         "time: a submission time cannot be negative, found %g", j->submit_time);
            goto out;
        }
        if (i > 0 && j->submit_time < w->jobs[i - 1].submit_time) {
            rc = err_set(e, ERR_PARSE, t->name, c->line, c->column,
                         "time: the trace must be sorted by time: %g comes after %g",
                         j->submit_time, w->jobs[i - 1].submit_time);
            goto out;
        }
        if (!(j->batch_size > 0)) {
            c = csv_cell_at(t, i, cbsz);
            rc = err_set(e, ERR_PARSE, t->name, c->line, c->column,
                         "batch_size: must be positive, found %g", j->batch_size);
            goto out;
        }
        if (cdl != (size_t)-1 && csv_cell_at(t, i, cdl)->text[0] != '\0') {
            c = csv_cell_at(t, i, cdl);
            if ((rc = csv_get_double(t, i, cdl, &j->deadline, e)) < 0)
                goto out;
            if (!(j->deadline > 0)) {
                rc = err_set(e, ERR_PARSE, t->name, c->line, c->column,
                             "deadline: seconds after the submission, must be positive (a "
                             "deadline at or before the submission is already past), found %g",
                             j->deadline);
                goto out;
            }
        }
        j->checkpoint_s = -1;
        if (cck != (size_t)-1 && csv_cell_at(t, i, cck)->text[0] != '\0') {
            c = csv_cell_at(t, i, cck);
            if ((rc = csv_get_double(t, i, cck, &j->checkpoint_s, e)) < 0)
                goto out;
            if (!(j->checkpoint_s >= 0 && j->checkpoint_s <= 86400)) {
                rc = err_set(e, ERR_PARSE, t->name, c->line, c->column,
                             "checkpoint: seconds between the job's checkpoints, 0 (only at "
                             "restarts and notices) to 86400, found %g",
                             j->checkpoint_s);
                goto out;
            }
        }
        j->reconfigure = WORKLOAD_RECONF_WORLD;
        if (crc != (size_t)-1 && csv_cell_at(t, i, crc)->text[0] != '\0') {
            c = csv_cell_at(t, i, crc);
            if (strcmp(c->text, "restart") == 0) {
                j->reconfigure = WORKLOAD_RECONF_RESTART;
            } else if (strcmp(c->text, "in_flight") == 0) {
                j->reconfigure = WORKLOAD_RECONF_IN_FLIGHT;
            } else {
                rc = err_set(e, ERR_PARSE, t->name, c->line, c->column,
                             "reconfigure: how the job's workers take a new batch configuration, "
                             "restart or in_flight, found \"%s\"",
                             c->text);
                goto out;
            }
        }
        if (!workload_known(known, j->application)) {
            c = csv_cell_at(t, i, capp);
            rc = err_set(e, ERR_UNKNOWN, t->name, c->line, c->column,
                         "application: unknown model \"%s\" (no profile for it)", j->application);
            goto out;
        }
        for (size_t k = 0; k < i; k++) {
            if (strcmp(w->jobs[k].name, j->name) == 0) {
                c = csv_cell_at(t, i, cname);
                rc = err_set(e, ERR_PARSE, t->name, c->line, c->column,
                             "name: \"%s\" is used twice", j->name);
                goto out;
            }
        }
    }
    w->n = t->nrows;
    *out = w;
    w = NULL;
out:
    workload_free(w);
    csv_free(t);
    return rc;
}

void workload_free(struct workload *w)
{
    if (!w)
        return;
    free(w->jobs);
    free(w->name);
    free(w->path);
    free(w);
}
