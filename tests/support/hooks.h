/* hooks.h: the clock, sleep and log hooks that the cloud clients' tests give them, recording what
 * they are asked, and a capture of every log line and message of a test run, searched for
 * secrets at its end. */
#ifndef CASTOR_TESTS_HOOKS_H
#define CASTOR_TESTS_HOOKS_H

#include <stddef.h>
#include <stdint.h>

#define HOOKS_MAX_SLEEPS 64

/* What the hooks were asked; pass its address as the client's hook_arg. */
struct hooks {
    int64_t now;  /* the clock's reading */
    int64_t tick; /* added to now after each reading (0: a fixed clock) */
    long sleeps[HOOKS_MAX_SLEEPS];
    int n_sleeps; /* every sleep, the first HOOKS_MAX_SLEEPS kept in sleeps */
    int n_logs;
    char last_log[800];
};

int64_t hooks_clock(void *arg);
void hooks_sleep(void *arg, long ms);        /* records, never sleeps */
void hooks_log(void *arg, const char *line); /* records and captures */

/* Add s (and a newline) to the run's capture (silently full at 256 KiB). */
void hooks_capture(const char *s);

/* Everything captured so far (NUL-terminated), and its length. */
const char *hooks_captured(void);
size_t hooks_captured_len(void);

#endif
