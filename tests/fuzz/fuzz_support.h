/* fuzz_support.h: what the libFuzzer targets share: the entry points libFuzzer calls, a private
 * scratch folder for parsers that read files, and a NUL-terminated copy of an input. */
#ifndef CASTOR_TESTS_FUZZ_SUPPORT_H
#define CASTOR_TESTS_FUZZ_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

/* libFuzzer's entry points (defined by each target; the initializer only where needed). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* The path of name inside the process's scratch folder (made at the first call under $TMPDIR or
 * /tmp, removed at exit with what it holds), in a static buffer that the next call overwrites.
 * Aborts when the folder cannot be made: the fuzzer cannot run without it. */
const char *fuzz_path(const char *name);

/* Write size bytes at data to path (created or truncated; mode 600, as a state database must
 * be). Aborts on a write error. */
void fuzz_write(const char *path, const uint8_t *data, size_t size);

/* A malloc'd copy of the size bytes at data with a NUL after them. Aborts when out of memory. */
char *fuzz_strndup(const uint8_t *data, size_t size);

#endif
