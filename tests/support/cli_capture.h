/* cli_capture.h: a castor command (src/cli/cli.h) run in process, what it writes captured. */
#ifndef CASTOR_TEST_CLI_CAPTURE_H
#define CASTOR_TEST_CLI_CAPTURE_H

#include <stdio.h>

/* Run cmd(argc, argv) with its out and err captured into outs and errs (size bytes each,
 * NUL-terminated; outs NULL: what it writes to out is dropped); its status. */
static inline int cli_capture(int (*cmd)(int, char **, FILE *, FILE *), int argc, char **argv,
                              char *outs, char *errs, size_t size)
{
    FILE *out = tmpfile(), *err = tmpfile();
    size_t n;
    int rc;

    assert_non_null(out);
    assert_non_null(err);
    rc = cmd(argc, argv, out, err);
    if (outs) {
        rewind(out);
        n = fread(outs, 1, size - 1, out);
        outs[n] = '\0';
    }
    rewind(err);
    n = fread(errs, 1, size - 1, err);
    errs[n] = '\0';
    fclose(out);
    fclose(err);
    return rc;
}

#endif
