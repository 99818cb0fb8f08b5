/* csv.c: the strict CSV reader: whole text in memory, cells located by line and column. */
#include "util/csv.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/conf.h"
#include "util/file.h"

/* Count lines and the widest possible cell count, so the cell array is allocated once. */
static size_t csv_count_commas_and_lines(const char *s, size_t len, size_t *lines)
{
    size_t commas = 0, nl = 1;

    for (size_t i = 0; i < len; i++) {
        if (s[i] == ',')
            commas++;
        else if (s[i] == '\n')
            nl++;
    }
    *lines = nl;
    return commas;
}

static int csv_line_is_blank(const char *p, const char *end)
{
    for (; p < end; p++)
        if (*p != ' ' && *p != '\t' && *p != '\r')
            return 0;
    return 1;
}

int csv_parse(const char *name, const char *data, size_t len, struct csv_table **out,
              struct error *e)
{
    struct csv_table *t = NULL;
    size_t maxcells, lines, ncells = 0, width = 0, bom;
    int rc = 0, line = 0, pending_blank = 0;
    const char *nul;
    char *p, *end;

    if (!name)
        name = "<input>";
    /* a UTF-8 byte-order mark (spreadsheets export one) is no text: skipped, lines and columns
     * count from what follows */
    bom = conf_bom_len(data, len);
    data += bom;
    len -= bom;
    nul = memchr(data, '\0', len);
    if (nul) {
        int nline = 1, ncol = 1;

        for (const char *q = data; q < nul; q++, ncol++)
            if (*q == '\n')
                nline++, ncol = 0;
        return err_set(e, ERR_PARSE, name, nline, ncol, "contains a NUL byte: not a text file");
    }
    t = calloc(1, sizeof(*t));
    if (!t)
        return err_set(e, ERR_NOMEM, name, 0, 0, NULL);
    t->name = strdup(name);
    t->buf = malloc(len + 1);
    maxcells = csv_count_commas_and_lines(data, len, &lines) + lines;
    t->cells = calloc(maxcells, sizeof(*t->cells));
    if (!t->name || !t->buf || !t->cells) {
        rc = err_set(e, ERR_NOMEM, name, 0, 0, NULL);
        goto out;
    }
    memcpy(t->buf, data, len);
    t->buf[len] = '\0';
    p = t->buf;
    end = t->buf + len;

    while (p < end) {
        char *eol = memchr(p, '\n', (size_t)(end - p));
        char *lend = eol ? eol : end;
        size_t fields = 0;
        char *c = p;

        line++;
        if (lend > p && lend[-1] == '\r')
            lend[-1] = '\0', lend--;
        if (csv_line_is_blank(p, lend)) {
            if (line == 1) {
                rc = err_set(e, ERR_PARSE, name, 1, 1, "the header line is empty");
                goto out;
            }
            if (!pending_blank)
                pending_blank = line;
            p = eol ? eol + 1 : end;
            continue;
        }
        if (pending_blank) {
            rc = err_set(e, ERR_PARSE, name, pending_blank, 1, "empty line between rows");
            goto out;
        }
        for (;;) {
            char *comma = memchr(c, ',', (size_t)(lend - c));
            char *cend = comma ? comma : lend;
            char *q = memchr(c, '"', (size_t)(cend - c));
            struct csv_cell *cell = &t->cells[ncells + fields];

            if (q) {
                rc = err_set(e, ERR_PARSE, name, line, (int)(q - p) + 1,
                             "quoted cells are not supported");
                goto out;
            }
            *cend = '\0';
            /* trim surrounding blanks; the column points at the first kept character */
            while (*c == ' ' || *c == '\t')
                c++;
            for (char *b = cend; b > c && (b[-1] == ' ' || b[-1] == '\t');)
                *--b = '\0';
            cell->text = c;
            cell->line = line;
            cell->column = (int)(c - p) + 1;
            fields++;
            if (!comma)
                break;
            c = comma + 1;
        }
        if (line == 1) {
            width = fields;
            for (size_t i = 0; i < fields; i++) {
                if (t->cells[i].text[0] == '\0') {
                    rc = err_set(e, ERR_PARSE, name, 1, t->cells[i].column,
                                 "header column %zu has no name", i + 1);
                    goto out;
                }
                for (size_t k = 0; k < i; k++) {
                    if (strcmp(t->cells[k].text, t->cells[i].text) == 0) {
                        rc = err_set(e, ERR_PARSE, name, 1, t->cells[i].column,
                                     "header column %zu repeats the name \"%.40s\" of column %zu",
                                     i + 1, t->cells[i].text, k + 1);
                        goto out;
                    }
                }
            }
        } else if (fields != width) {
            rc = err_set(e, ERR_PARSE, name, line, (int)(lend - p) + 1,
                         "expected %zu fields as in the header, found %zu%s", width, fields,
                         fields < width ? " (truncated row?)" : "");
            goto out;
        }
        ncells += fields;
        p = eol ? eol + 1 : end;
    }
    t->end_line = line;
    if (line == 0) {
        rc = err_set(e, ERR_EMPTY, name, 0, 0, "the file is empty");
        goto out;
    }
    t->ncols = width;
    t->header = t->cells;
    t->cells = t->cells + width;
    t->nrows = (ncells - width) / width;
    if (t->nrows == 0) {
        t->cells = t->header;
        rc = err_set(e, ERR_EMPTY, name, line, 0, "a header and no rows");
        goto out;
    }
    *out = t;
    t = NULL;
out:
    if (t && t->header)
        t->cells = t->header;
    csv_free(t);
    return rc;
}

int csv_load(const char *path, struct csv_table **out, struct error *e)
{
    char *data = NULL;
    size_t len = 0;
    int rc;

    if ((rc = file_read_all(path, &data, &len, e)) < 0)
        return rc;
    rc = csv_parse(path, data, len, out, e);
    free(data);
    return rc;
}

void csv_free(struct csv_table *t)
{
    if (!t)
        return;
    free(t->header ? t->header : t->cells);
    free(t->buf);
    free(t->name);
    free(t);
}

int csv_column(const struct csv_table *t, const char *name, size_t *idx, struct error *e)
{
    for (size_t i = 0; i < t->ncols; i++) {
        if (strcmp(t->header[i].text, name) == 0) {
            *idx = i;
            return 0;
        }
    }
    return err_set(e, ERR_PARSE, t->name, 1, 1, "missing column \"%s\"", name);
}

const struct csv_cell *csv_cell_at(const struct csv_table *t, size_t row, size_t col)
{
    assert(row < t->nrows && col < t->ncols);
    return &t->cells[row * t->ncols + col];
}

int csv_get_double(const struct csv_table *t, size_t row, size_t col, double *out, struct error *e)
{
    const struct csv_cell *c = csv_cell_at(t, row, col);
    char *endp;
    double v;

    if (c->text[0] == '\0')
        return err_set(e, ERR_PARSE, t->name, c->line, c->column,
                       "%s: empty cell, expected a number", t->header[col].text);
    errno = 0;
    v = strtod(c->text, &endp);
    if (*endp != '\0' || endp == c->text)
        return err_set(e, ERR_PARSE, t->name, c->line, c->column,
                       "%s: expected a number, found \"%.40s\"", t->header[col].text, c->text);
    /* ERANGE also flags underflow, which leaves a usable (tiny) value; overflow is infinite */
    if (!isfinite(v))
        return err_set(e, ERR_PARSE, t->name, c->line, c->column,
                       "%s: \"%.40s\" is not a finite number", t->header[col].text, c->text);
    *out = v;
    return 0;
}

int csv_get_long(const struct csv_table *t, size_t row, size_t col, long lo, long hi, long *out,
                 struct error *e)
{
    const struct csv_cell *c = csv_cell_at(t, row, col);
    char *endp;
    long v;

    errno = 0;
    v = strtol(c->text, &endp, 10);
    if (c->text[0] == '\0' || *endp != '\0')
        return err_set(e, ERR_PARSE, t->name, c->line, c->column,
                       "%s: expected a whole number, found \"%.40s\"", t->header[col].text,
                       c->text);
    if (errno == ERANGE || v < lo || v > hi)
        return err_set(e, ERR_RANGE, t->name, c->line, c->column, "%s: %.40s is outside [%ld, %ld]",
                       t->header[col].text, c->text, lo, hi);
    *out = v;
    return 0;
}
