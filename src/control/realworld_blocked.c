/* realworld_blocked.c: why a job waits when the fleet cannot grow. No offer can be launched now
 * (the cloud does not offer it, a refusal holds it, its quotas leave no room, the spend limit
 * stops launches): a job that has no GPUs is told so once in its events, with each offer's
 * reason, so that a zero quota is not a job pending in silence. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "control/events.h"
#include "control/realworld_internal.h"
#include "util/timestamp.h"

/* Why offer o cannot be launched now, into buf (size bytes); 0 when it can. */
static int rw_offer_blocked(const struct realworld *rw, size_t o, double now, char *buf,
                            size_t size)
{
    const struct rw_offer *of = &rw->offers[o];
    char until[TIMESTAMP_ISO8601_LEN + 1] = "";
    int room;

    if (!of->present) {
        snprintf(buf, size, "%s is not offered by the cloud now", of->name);
        return 1;
    }
    if (now < of->unavailable_until) {
        timestamp_format_iso8601((int64_t)ceil(of->unavailable_until), until);
        snprintf(buf, size, "%s is held until %s after a launch refused for %s", of->name, until,
                 of->quota_held ? "a quota" : "capacity");
        return 1;
    }
    if (rw_spend_uncounted(rw, of)) {
        snprintf(buf, size, "%s has no known price, and the spend_limit could not count its nodes",
                 of->name);
        return 1;
    }
    if (of->over_max) {
        snprintf(buf, size, "%s: its spot price $%.4f/h is above its max_price $%.4f/h", of->name,
                 of->list_price, of->max_price);
        return 1;
    }
    if (rw_offer_room(rw, (int)o, &room) && room == 0) {
        int n = snprintf(buf, size, "%s: ", of->name);

        if (n >= 0 && (size_t)n < size)
            rw_quota_say(rw, (int)o, buf + n, size - (size_t)n);
        return 1;
    }
    return 0;
}

int rw_fleet_blocked(const struct realworld *rw, double now, char *why, size_t size)
{
    size_t used = 0;

    if (rw->noffers == 0 || size == 0)
        return 0; /* a static cluster: nothing to launch */
    if (rw->snap.nbooting > 0)
        return 0; /* it is growing: instances are booting */
    why[0] = '\0';
    if (rw->over_spend) {
        snprintf(why, size, "the fleet is at its spend_limit");
        return 1;
    }
    for (size_t o = 0; o < rw->noffers; o++) {
        char one[256];

        if (!rw_offer_blocked(rw, o, now, one, sizeof(one)))
            return 0;
        if (used < size)
            used += (size_t)snprintf(why + used, size - used, "%s%s", o ? "; " : "", one);
    }
    return 1;
}

void rw_tell_blocked(struct realworld *rw, const struct state_job *st, struct rw_job *job,
                     int replicas, int blocked, const char *why, double now)
{
    if (replicas > 0 || !blocked) {
        job->blocked_told = 0;
        return;
    }
    if (job->blocked_told || now - st->submitted_at < RW_WAIT_TELL_S)
        return;
    job->blocked_told = 1;
    event_note(rw->state, rw->log, now, LOG_WARN, st->name, NULL, "waiting",
               "no GPUs, and the fleet cannot grow: no offer can be launched now (%s)", why);
}
