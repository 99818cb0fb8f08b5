/* hooks.c: recording clock, sleep and log hooks, and the run's capture (see hooks.h). */
#include "support/hooks.h"

#include <stdio.h>
#include <string.h>

static char captured[1 << 18];
static size_t captured_len;

int64_t hooks_clock(void *arg)
{
    struct hooks *h = arg;
    int64_t t = h->now;

    h->now += h->tick;
    return t;
}

void hooks_sleep(void *arg, long ms)
{
    struct hooks *h = arg;

    if (h->n_sleeps < HOOKS_MAX_SLEEPS)
        h->sleeps[h->n_sleeps] = ms;
    h->n_sleeps++;
}

void hooks_log(void *arg, const char *line)
{
    struct hooks *h = arg;

    h->n_logs++;
    snprintf(h->last_log, sizeof(h->last_log), "%s", line);
    hooks_capture(line);
}

void hooks_capture(const char *s)
{
    size_t n = strlen(s);

    if (captured_len + n + 2 < sizeof(captured)) {
        memcpy(captured + captured_len, s, n);
        captured_len += n;
        captured[captured_len++] = '\n';
        captured[captured_len] = '\0';
    }
}

const char *hooks_captured(void)
{
    return captured;
}

size_t hooks_captured_len(void)
{
    return captured_len;
}
