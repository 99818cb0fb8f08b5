/* ratelimit.h: a per-client request rate limit: a token bucket for each client key (an address),
 * refilled at a fixed rate up to a burst, in a table of bounded size. The time is passed in;
 * calls may come from several threads at once. */
#ifndef CASTOR_UTIL_RATELIMIT_H
#define CASTOR_UTIL_RATELIMIT_H

#include <stddef.h>

#define RATELIMIT_KEY_MAX 64       /* longest key kept, bytes (longer keys are cut) */
#define RATELIMIT_MAX_CLIENTS 4096 /* default table size */

struct ratelimit; /* opaque */

/*
 * A new limiter: each client may make burst requests at once, then rate per second. Clients are
 * kept in a table of max_clients (0: RATELIMIT_MAX_CLIENTS); when it is full, the client seen
 * least recently makes room (its bucket would be full by then unless it is very recent; either way
 * a new client starts with a full bucket). Errors: ERR_INVAL (rate not finite and > 0, burst < 1),
 * ERR_NOMEM. On success *out owns it (ratelimit_free); on error it is untouched.
 */
int ratelimit_new(double rate, unsigned burst, size_t max_clients, struct ratelimit **out);

/* Free the limiter. NULL is ignored. */
void ratelimit_free(struct ratelimit *r);

/*
 * Take one request of client key at time now (seconds, any fixed origin; a time before the last
 * seen counts as the last). 1: allowed. 0: refused, and *retry_after (may be NULL) is the whole
 * number of seconds, at least 1, until one request is allowed again.
 */
int ratelimit_take(struct ratelimit *r, const char *key, double now, unsigned *retry_after);

#endif
