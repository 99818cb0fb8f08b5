/* fuzz_csv.c: libFuzzer target for the CSV reader (csv_parse in src/util/csv.c): a table parsed
 * has every cell read as a number and as a bounded integer, and its columns looked up. */
#include "fuzz/fuzz_support.h"
#include "util/csv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct csv_table *t = NULL;
    struct error e = {0};
    size_t idx;
    double d;
    long l;

    if (csv_parse("fuzz.csv", (const char *)data, size, &t, &e) < 0)
        return 0;
    for (size_t c = 0; c < t->ncols; c++)
        (void)csv_column(t, t->header[c].text, &idx, &e);
    (void)csv_column(t, "time", &idx, &e);
    for (size_t r = 0; r < t->nrows; r++)
        for (size_t c = 0; c < t->ncols; c++) {
            (void)csv_cell_at(t, r, c);
            (void)csv_get_double(t, r, c, &d, &e);
            (void)csv_get_long(t, r, c, 0, 1000000, &l, &e);
        }
    (void)csv_cell_at(t, t->nrows, 0); /* out of range: NULL */
    csv_free(t);
    return 0;
}
