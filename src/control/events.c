/* events.c: a job's events: logged, and kept in the state for its owner. */
#include "control/events.h"

#include <stdarg.h>
#include <stdio.h>

#include "control/state.h"

void event_note(struct state *st, struct log *log, double now, enum log_level level,
                const char *job, const char *node, const char *kind, const char *fmt, ...)
{
    char msg[STATE_EVENT_MESSAGE_MAX + 1];
    va_list ap;
    int rc;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    log_msg(log, now, level, job, node, "%s", msg);
    if (st && (rc = state_event_add(st, job, now, kind, node, msg)) < 0)
        log_msg(log, now, LOG_WARN, job, node, "the event (%s) was not kept: %s", kind,
                err_str(rc));
}

void event_note_jobs(struct state *st, struct log *log, double now,
                     const struct state_node_job *jobs, size_t n, const char *node,
                     const char *kind, const char *why, const char *then)
{
    for (size_t i = 0; i < n; i++)
        event_note(st, log, now, LOG_WARN, jobs[i].job, node, kind, "%s%s%s", why, then ? ": " : "",
                   then ? then : "");
}
