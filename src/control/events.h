/* events.h: what happens to a job, told twice: a line in the controller's log and an event kept
 * with the job in the state, which its owner reads (GET /v1/jobs/{name}/events, castor events). */
#ifndef CASTOR_CONTROL_EVENTS_H
#define CASTOR_CONTROL_EVENTS_H

#include <stddef.h>

#include "util/log.h"

struct state;
struct state_node_job;

/*
 * Log the formatted message about job (on node when not NULL) at level to log (may be NULL), and
 * keep it as an event of kind with the job (state_event_add; st may be NULL: logged only). The
 * event is best effort: a state error is logged, never returned (the change it describes has
 * happened already).
 */
void event_note(struct state *st, struct log *log, double now, enum log_level level,
                const char *job, const char *node, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 8, 9)));

/*
 * event_note at warn, of kind, for each of the n jobs (jobs: a node's, as state_node_jobs reads
 * them; borrowed) on node: "<why>: <then>" (then NULL: why alone). Callers read the jobs before a
 * change that drops them (a node terminated) and tell them once it is written.
 */
void event_note_jobs(struct state *st, struct log *log, double now,
                     const struct state_node_job *jobs, size_t n, const char *node,
                     const char *kind, const char *why, const char *then);

#endif
