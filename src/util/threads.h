/* threads.h: how many threads this process has (Linux: /proc/self/stat), for code that forks a
 * child which goes on without exec: that is only safe while the process has one thread. */
#ifndef CASTOR_UTIL_THREADS_H
#define CASTOR_UTIL_THREADS_H

#include "util/error.h"

/*
 * The number of threads of the calling process (>= 1), read from /proc/self/stat. Errors mean
 * "unknown", never "one": ERR_NOENT (no /proc/self/stat: /proc is not mounted, or the system is
 * not Linux, where this always answers ERR_NOENT without looking), ERR_IO (cannot be read),
 * ERR_NOMEM, ERR_PARSE (not the format threads_parse_stat reads). Allocates: not for a child
 * between fork and exec.
 */
int threads_count(void);

/*
 * The thread count (field 20, num_threads) of a /proc/<pid>/stat line (NUL-terminated). Field 2,
 * the command name, is in parentheses and may itself hold spaces and parentheses, so the fields
 * are counted from the last ')'. ERR_INVAL (NULL), ERR_PARSE (no ')', too few fields, a count
 * that is not a decimal number from 1 to INT_MAX).
 */
int threads_parse_stat(const char *stat);

#endif
