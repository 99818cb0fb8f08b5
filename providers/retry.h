/* retry.h: what the cloud clients share about calls that may be tried again: exponential backoff
 * with full jitter from a seeded generator, a loop of attempts with the waits between them, and
 * the default hooks (clock, sleep, log) that tests replace. */
#ifndef CASTOR_PROVIDERS_RETRY_H
#define CASTOR_PROVIDERS_RETRY_H

#include <stdint.h>

#define RETRY_DEFAULT_ATTEMPTS 5
#define RETRY_DEFAULT_BASE_MS 200
#define RETRY_DEFAULT_CAP_MS 20000

/* An attempt's answer that asks for another attempt (positive: never an error code). */
#define RETRY_AGAIN 1

/* The policy and the state of its generator; filled by retry_init, used by one thread. */
struct retry {
    int max_attempts; /* attempts per call, the first included */
    long base_ms;     /* the first wait is drawn from [0, base_ms] */
    long cap_ms;      /* no wait is longer */
    uint64_t rng;     /* the jitter's generator (splitmix64) */
    void (*sleep_ms)(void *arg, long ms);
    void *arg; /* borrowed; passed to sleep_ms */
};

/* Fill *r: max_attempts, base_ms and cap_ms of 0 or less take the defaults above; sleep_ms NULL
 * takes retry_default_sleep. Cannot fail. */
void retry_init(struct retry *r, int max_attempts, long base_ms, long cap_ms, uint64_t seed,
                void (*sleep_ms)(void *arg, long ms), void *arg);

/* The wait before retry number attempt + 1 (attempt 0 is the first that failed), in ms: uniform
 * in [0, min(cap_ms, base_ms * 2^attempt)] ("full jitter"), advancing the generator. */
long retry_backoff_ms(struct retry *r, int attempt);

/* One attempt (number attempt, from 0): 0 when it succeeded, RETRY_AGAIN when it failed in a way
 * that another attempt may cure, or a negative error code that ends the loop. */
typedef int (*retry_attempt_fn)(void *ctx, int attempt);

/* Called after a failed attempt, before the wait of delay_ms (for a log line). */
typedef void (*retry_wait_fn)(void *ctx, int attempt, int max_attempts, long delay_ms);

/*
 * Run attempt until it returns 0 or an error, or r->max_attempts attempts all asked for another,
 * waiting retry_backoff_ms between them (before_wait, which may be NULL, is told first). Returns
 * 0, the attempt's negative error, or RETRY_AGAIN when the attempts ran out (the caller says what
 * the last one met).
 */
int retry_run(struct retry *r, retry_attempt_fn attempt, retry_wait_fn before_wait, void *ctx);

/* The default hooks: time(NULL); nanosleep for ms (resumed after signals); the line and a
 * newline on stderr. arg is ignored. */
int64_t retry_default_clock(void *arg);
void retry_default_sleep(void *arg, long ms);
void retry_default_log(void *arg, const char *line);

#endif
