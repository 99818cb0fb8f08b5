/* csv.h: a strict reader for the small comma-separated tables castor ships and reads (profiles,
 * workload traces): a header row, then rows of the same width, every cell located by line and
 * column. */
#ifndef CASTOR_UTIL_CSV_H
#define CASTOR_UTIL_CSV_H

#include <stddef.h>

#include "util/error.h"

struct csv_cell {
    const char *text; /* NUL-terminated, inside the table's own buffer */
    int line;         /* 1-based line in the file */
    int column;       /* 1-based character column where the cell starts */
};

struct csv_table {
    char *name;              /* the file name used in error messages (owned) */
    size_t ncols;            /* columns in the header */
    struct csv_cell *header; /* ncols cells */
    size_t nrows;            /* data rows, the header not counted */
    struct csv_cell *cells;  /* nrows * ncols cells, row-major */
    char *buf;               /* the text the cells point into (owned) */
    int end_line;            /* the last line of the file, for errors about what is missing */
};

/*
 * Parse len bytes of CSV text; name is used in errors only. A UTF-8 byte-order mark at the start
 * is skipped (lines and columns count from what follows). Quoted cells, NUL bytes, a header name
 * given twice, rows of the wrong width and empty rows between data rows are errors (ERR_PARSE with
 * line and column in *e); a table with a header and no rows is ERR_EMPTY, and so is an empty text.
 * On success *out owns a new table (free with csv_free); on error *out is untouched.
 */
int csv_parse(const char *name, const char *data, size_t len, struct csv_table **out,
              struct error *e);

/* Read and parse the file at path (ERR_NOENT / ERR_IO if it cannot be read); as csv_parse. */
int csv_load(const char *path, struct csv_table **out, struct error *e);

void csv_free(struct csv_table *t);

/* The index of the header column called name; ERR_PARSE naming line 1 when it is missing. */
int csv_column(const struct csv_table *t, const char *name, size_t *idx, struct error *e);

/* The cell at (row, col); row and col must be in range (asserted). Borrowed from the table. */
const struct csv_cell *csv_cell_at(const struct csv_table *t, size_t row, size_t col);

/* The cell as a finite number (ERR_PARSE otherwise, located at the cell, naming the column). */
int csv_get_double(const struct csv_table *t, size_t row, size_t col, double *out, struct error *e);

/* The cell as a whole number in [lo, hi] (ERR_PARSE if not an integer, ERR_RANGE if outside). */
int csv_get_long(const struct csv_table *t, size_t row, size_t col, long lo, long hi, long *out,
                 struct error *e);

#endif
