/* log.h: castor's log: one JSON object per line (time, level, message, and the job and node a line
 * concerns), safe to write from several threads. */
#ifndef CASTOR_UTIL_LOG_H
#define CASTOR_UTIL_LOG_H

#include <stdio.h>

#include "util/error.h"

/*
 * A line is {"time":"2024-05-01T12:00:00.250Z","level":"info","msg":"...","job":"a","node":"b"}
 * with "job" and "node" only when given. The time is passed in by the caller (seconds since the
 * Unix epoch; the daemon layer reads the clock, nothing below it does); a time that is not finite
 * is written as null. Secrets (tokens, keys) must never be passed in a message: nothing here can
 * tell one from other text.
 */

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };

struct log; /* opaque */

/* The level's name as written ("debug", "info", "warn", "error"); NULL out of range. */
const char *log_level_name(enum log_level level);

/* A log writing lines at level min and above to f (borrowed: it must outlive the log; each line
 * is flushed). ERR_INVAL for a NULL f or a level out of range, ERR_NOMEM. On success *out owns the
 * log (log_free); on error it is untouched. */
int log_new(FILE *f, enum log_level min, struct log **out);

/* Free the log (f is not closed). NULL is ignored. */
void log_free(struct log *l);

/*
 * Write one line: the message is formatted printf-style (and cut at LOG_MSG_MAX bytes); job and
 * node may be NULL. A NULL log, or a level below the log's minimum, writes nothing and returns 0.
 * Errors: ERR_INVAL (level out of range, NULL fmt), ERR_NOMEM, ERR_IO (the stream failed).
 */
int log_msg(struct log *l, double now, enum log_level level, const char *job, const char *node,
            const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* The longest message kept, in bytes. */
#define LOG_MSG_MAX 1024

#endif
