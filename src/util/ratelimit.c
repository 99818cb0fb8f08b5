/* ratelimit.c: token buckets per client key, in a fixed table searched linearly (a few thousand
 * clients at most: a linear scan costs far less than the request it guards). */
#include "util/ratelimit.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

struct rl_bucket {
    char key[RATELIMIT_KEY_MAX + 1];
    double tokens; /* requests allowed now, up to burst */
    double at;     /* when tokens was computed */
};

struct ratelimit {
    pthread_mutex_t mu;
    double rate;
    double burst;
    size_t cap, n;
    double last; /* the latest time seen */
    struct rl_bucket *b;
};

int ratelimit_new(double rate, unsigned burst, size_t max_clients, struct ratelimit **out)
{
    struct ratelimit *r;

    if (!out || !isfinite(rate) || rate <= 0 || burst < 1)
        return ERR_INVAL;
    r = calloc(1, sizeof(*r));
    if (!r)
        return ERR_NOMEM;
    r->rate = rate;
    r->burst = burst;
    r->cap = max_clients ? max_clients : RATELIMIT_MAX_CLIENTS;
    r->b = calloc(r->cap, sizeof(*r->b));
    if (!r->b || pthread_mutex_init(&r->mu, NULL) != 0) {
        free(r->b);
        free(r);
        return ERR_NOMEM;
    }
    *out = r;
    return 0;
}

void ratelimit_free(struct ratelimit *r)
{
    if (!r)
        return;
    pthread_mutex_destroy(&r->mu);
    free(r->b);
    free(r);
}

/* The bucket of key, made (full) if it has none: the least recently seen makes room. */
static struct rl_bucket *rl_find(struct ratelimit *r, const char *key, double now)
{
    struct rl_bucket *b = NULL;

    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->b[i].key, key) == 0)
            return &r->b[i];
    if (r->n < r->cap) {
        b = &r->b[r->n++];
    } else {
        b = &r->b[0];
        for (size_t i = 1; i < r->n; i++)
            if (r->b[i].at < b->at)
                b = &r->b[i];
    }
    snprintf(b->key, sizeof(b->key), "%s", key);
    b->tokens = r->burst;
    b->at = now;
    return b;
}

int ratelimit_take(struct ratelimit *r, const char *key, double now, unsigned *retry_after)
{
    struct rl_bucket *b;
    int ok;

    pthread_mutex_lock(&r->mu);
    if (!(now >= r->last)) /* earlier, or NaN: the clock does not go back */
        now = r->last;
    r->last = now;
    b = rl_find(r, key ? key : "", now);
    b->tokens = fmin(r->burst, b->tokens + (now - b->at) * r->rate);
    b->at = now;
    ok = b->tokens >= 1.0;
    if (ok)
        b->tokens -= 1.0;
    else if (retry_after)
        *retry_after = (unsigned)fmax(1.0, ceil((1.0 - b->tokens) / r->rate));
    pthread_mutex_unlock(&r->mu);
    return ok;
}
