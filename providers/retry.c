/* retry.c: full-jitter backoff, the attempt loop and the default hooks of the cloud clients. */
#include "providers/retry.h"

#include <errno.h>
#include <stdio.h>
#include <time.h>

void retry_init(struct retry *r, int max_attempts, long base_ms, long cap_ms, uint64_t seed,
                void (*sleep_ms)(void *arg, long ms), void *arg)
{
    r->max_attempts = max_attempts > 0 ? max_attempts : RETRY_DEFAULT_ATTEMPTS;
    r->base_ms = base_ms > 0 ? base_ms : RETRY_DEFAULT_BASE_MS;
    r->cap_ms = cap_ms > 0 ? cap_ms : RETRY_DEFAULT_CAP_MS;
    r->rng = seed;
    r->sleep_ms = sleep_ms ? sleep_ms : retry_default_sleep;
    r->arg = arg;
}

/* splitmix64: the jitter's generator. */
static uint64_t next_random(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));

    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

long retry_backoff_ms(struct retry *r, int attempt)
{
    long ceiling = r->base_ms;

    for (int i = 0; i < attempt && ceiling < r->cap_ms; i++)
        ceiling *= 2;
    if (ceiling > r->cap_ms)
        ceiling = r->cap_ms;
    return (long)(next_random(&r->rng) % (uint64_t)(ceiling + 1));
}

int retry_run(struct retry *r, retry_attempt_fn attempt, retry_wait_fn before_wait, void *ctx)
{
    for (int n = 0; n < r->max_attempts; n++) {
        int rc = attempt(ctx, n);
        long delay;

        if (rc != RETRY_AGAIN)
            return rc;
        if (n + 1 == r->max_attempts)
            break;
        delay = retry_backoff_ms(r, n);
        if (before_wait)
            before_wait(ctx, n, r->max_attempts, delay);
        r->sleep_ms(r->arg, delay);
    }
    return RETRY_AGAIN;
}

int64_t retry_default_clock(void *arg)
{
    (void)arg;
    return (int64_t)time(NULL);
}

void retry_default_sleep(void *arg, long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    (void)arg;
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

void retry_default_log(void *arg, const char *line)
{
    (void)arg;
    fprintf(stderr, "%s\n", line);
}
