/* cron.h: 5-field cron schedules (minute hour day-of-month month day-of-week) and the times they
 * fire, in UTC. Pure: no clock is read; times are passed in as seconds since the Unix epoch. */
#ifndef CASTOR_CONTROL_CRON_H
#define CASTOR_CONTROL_CRON_H

#include <stdint.h>

#include "util/error.h"

/*
 * A parsed schedule: one bit per allowed value of each field. As in Vixie cron, when both the
 * day of the month and the day of the week are restricted (neither field starts with '*'), a day
 * matches if either does; otherwise both must.
 */
struct cron {
    uint64_t minutes; /* bit m: minute m, 0-59 */
    uint32_t hours;   /* bits 0-23 */
    uint32_t mdays;   /* bits 1-31 */
    uint32_t months;  /* bits 1-12 */
    uint32_t wdays;   /* bits 0-6, Sunday 0 */
    int mday_star;    /* the day-of-month field starts with '*' */
    int wday_star;    /* the day-of-week field starts with '*' */
};

/*
 * Parse text: five fields separated by blanks, each a comma-separated list of items; an item is
 * `*`, a value, or a range `a-b`, optionally followed by `/step` (`a/step` means a to the field's
 * end); values are numbers, or for months jan-dec and days of the week sun-sat (any case);
 * day of the week 7 is Sunday, as 0. Also @yearly (@annually), @monthly, @weekly, @daily
 * (@midnight) and @hourly. A schedule that can never fire (day 31 only in months of 30 days) is
 * refused. Errors (e->column: the 1-based offset in text where the fault is; e->msg the reason;
 * *out untouched): ERR_PARSE (syntax, a value out of its field's range, a range backwards, a zero
 * step, a schedule that never fires), ERR_INVAL (NULL text or out).
 */
int cron_parse(const char *text, struct cron *out, struct error *e);

/* 1 when the schedule fires at the minute that contains t, else 0. */
int cron_matches(const struct cron *c, int64_t t);

/*
 * The first time the schedule fires strictly after `after` (a whole minute, seconds since the
 * epoch) into *out. ERR_RANGE when it does not fire within 400 years (it cannot happen for a
 * schedule cron_parse accepted) or after is before 1970 or after 9999; *out then untouched.
 */
int cron_next(const struct cron *c, int64_t after, int64_t *out);

/* The last time the schedule fired at or before t (a whole minute) into *out. ERR_RANGE as
 * cron_next, when it has not fired within the 400 years before t. */
int cron_prev(const struct cron *c, int64_t t, int64_t *out);

/*
 * The missed-run rule, for a controller that was down: a schedule that last fired at `last`
 * (-1: it never has) is looked at again at `now`. Returns 1 and writes *at when it should have
 * fired after last: *at is the latest such time at or before now, to be run once (the earlier
 * missed times are skipped, never a burst); 0 when nothing was missed, or when it never fired
 * (it starts at its next time); ERR_RANGE as cron_prev.
 */
int cron_missed(const struct cron *c, int64_t last, int64_t now, int64_t *at);

#endif
