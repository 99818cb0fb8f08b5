/* fake.h: the fake cloud (world `fake`): instances are entries in memory, or in a JSON file that
 * outlives the process, with faults injected on demand. For tests and for trying the controller
 * without renting anything; the test hooks below reach it through its struct cloud. */
#ifndef CASTOR_PROVIDERS_FAKE_H
#define CASTOR_PROVIDERS_FAKE_H

#include <stddef.h>

#include "providers/cloud.h"

/*
 * A fake cloud with n offers (copied) and per offer the most instances alive at once (capacity,
 * NULL or 0: no limit). With a path, every call reads the file (when it exists) and writes it
 * back after a change, so that the instances and counts survive the process; NULL keeps them in
 * memory. New instances are pending until the next list, then running. Errors: ERR_INVAL (no
 * offer, two with one name), ERR_NOMEM; ERR_PARSE or ERR_IO for a file that cannot be read.
 */
int cloud_fake_create(const struct cloud_offer *offers, const int *capacity, size_t n,
                      const char *path, struct cloud *out);

/* What the fake was asked, since it was made (or since its file was). */
struct cloud_fake_counts {
    long offers_calls;
    long list_calls;
    long launch_calls;
    long launched; /* instances made: a launch by a token already used makes none */
    long terminate_calls;
    long quotas_calls;
};

/* The counts into *out. ERR_INVAL for a cloud that is not the fake. */
int cloud_fake_counts(struct cloud *c, struct cloud_fake_counts *out);

/*
 * The next `times` calls of op fail with code (a negative error code): op is "offers", "list",
 * "launch" (nothing is made) or "launch-lost" (the instance is made, but the answer is lost: the
 * call returns code), "terminate" (nothing changes) or "quotas". ERR_INVAL for another op or cloud.
 */
int cloud_fake_fail(struct cloud *c, const char *op, int code, int times);

/* The most instances of offer alive at once (0: no limit). ERR_UNKNOWN: no such offer. */
int cloud_fake_set_capacity(struct cloud *c, const char *offer, int capacity);

/* Offer's price from now on ($/h per node; a spot one above its max_price launches none, as
 * capacity). ERR_UNKNOWN: no such offer; ERR_INVAL: a negative price. */
int cloud_fake_set_price(struct cloud *c, const char *offer, double price);

/*
 * Set (or replace, by name) a quota over the n offers named, a node of offers[i] taking units[i]
 * (> 0): a launch that would bring what it counts past limit is refused with ERR_QUOTA. It counts
 * the live instances of its offers, any cluster's, and `others` units held by others. At most 8
 * quotas; the quotas op answers them (unit "vCPUs"). ERR_UNKNOWN: no such offer; ERR_INVAL: a bad
 * argument; ERR_RANGE: too many quotas.
 */
int cloud_fake_set_quota(struct cloud *c, const char *name, double limit, double others,
                         const char *const *offers, const double *units, size_t n);

/* Make an instance as if someone else had launched it (a stray, or a launch whose answer was
 * lost): running, tagged with cluster and token (may be ""); its id into id (CLOUD_ID_MAX
 * bytes). ERR_UNKNOWN: no such offer. */
int cloud_fake_inject(struct cloud *c, const char *cluster, const char *offer, const char *token,
                      char *id);

/* Set an instance's state (CLOUD_NOTICED with ends: when it goes). ERR_UNKNOWN: no such id. */
int cloud_fake_set_state(struct cloud *c, const char *id, enum cloud_state state, double ends);

/* The time stamped on new instances (seconds since the epoch): fn(ctx); NULL: the real clock. */
void cloud_fake_set_clock(struct cloud *c, double (*fn)(void *ctx), void *ctx);

#endif
