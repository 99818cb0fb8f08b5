/* faulty.h: a cloud that wraps another and makes a share of its calls fail the ways real clouds
 * fail (throttling, no capacity, a quota, 5xx, a timeout, an answer lost after the call was
 * made), for chaos runs: the controller must lose nothing and launch nothing twice whatever the
 * cloud answers. Chosen by the configuration's `faults:` section (docs/run.md). */
#ifndef CASTOR_PROVIDERS_FAULTY_H
#define CASTOR_PROVIDERS_FAULTY_H

#include <stdint.h>

#include "providers/cloud.h"

enum faulty_kind {
    FAULTY_THROTTLE, /* ERR_AGAIN before the call (RequestLimitExceeded, 429) */
    FAULTY_5XX,      /* ERR_IO before the call */
    FAULTY_TIMEOUT,  /* the call hangs timeout_s, then ERR_AGAIN; nothing was done */
    FAULTY_CAPACITY, /* launch only: ERR_CAPACITY (InsufficientInstanceCapacity) */
    FAULTY_QUOTA,    /* launch only: ERR_QUOTA (VcpuLimitExceeded) */
    FAULTY_LOST,     /* launch and terminate: the call is made, then ERR_IO (the answer lost) */
    FAULTY_NKINDS,
};

struct faulty_config {
    double rate;      /* 0..1: the share of calls that fail, each kind equally likely among
                       * those the call can have */
    uint64_t seed;    /* the choice's random stream */
    double timeout_s; /* how long a FAULTY_TIMEOUT call hangs, 0..600 */
    /* how a timeout waits (NULL: nanosleep); ctx is passed back */
    void (*sleep)(void *ctx, double seconds);
    void *sleep_ctx;
};

struct faulty_counts {
    long calls;                 /* every call through the wrapper */
    long faults[FAULTY_NKINDS]; /* the failed ones, by kind */
};

/* The names of the kinds ("throttle", "5xx", "timeout", "capacity", "quota", "lost"). */
extern const char *const faulty_kind_names[FAULTY_NKINDS];

/*
 * Wrap inner: on success *out is a cloud that owns inner (cloud_free frees both) and inner is
 * emptied; on error (ERR_INVAL: a rate outside 0..1 or a timeout outside 0..600; ERR_NOMEM)
 * nothing changes.
 */
int faulty_wrap(struct cloud *inner, const struct faulty_config *cfg, struct cloud *out);

/* The counts so far of a cloud made by faulty_wrap into *out; ERR_INVAL for another cloud. */
int faulty_counts(const struct cloud *c, struct faulty_counts *out);

#endif
