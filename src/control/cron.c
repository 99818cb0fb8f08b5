/* cron.c: cron schedules: parsing the five fields and finding when they fire, in UTC. */
#include "control/cron.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define CRON_DAYS_SEARCHED (146097LL) /* days in 400 Gregorian years */
#define CRON_MAX_TIME 253402300799LL  /* 9999-12-31T23:59:59Z */

struct cron_field {
    const char *name;
    int lo, hi;
    const char *const *names; /* names of lo, lo + 1, ... (NULL: numbers only) */
};

static const char *const cron_month_names[] = {"jan", "feb", "mar", "apr", "may", "jun", "jul",
                                               "aug", "sep", "oct", "nov", "dec", NULL};
static const char *const cron_wday_names[] = {"sun", "mon", "tue", "wed",
                                              "thu", "fri", "sat", NULL};

static const struct cron_field cron_fields[5] = {
    {"minute", 0, 59, NULL},
    {"hour", 0, 23, NULL},
    {"day of month", 1, 31, NULL},
    {"month", 1, 12, cron_month_names},
    {"day of week", 0, 7, cron_wday_names},
};

/* The proleptic Gregorian date of day z (days since 1970-01-01), counted in 400-year eras that
 * start in March (so that a leap day ends its year). */
static void cron_civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    int64_t era, doe, yoe, doy, mp;

    z += 719468;
    era = (z >= 0 ? z : z - 146096) / 146097;
    doe = z - era * 146097;
    yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

static int64_t cron_floor_div(int64_t a, int64_t b)
{
    return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

/* A value of field f at s (a number or a name) into *v; *end past it. 0 or ERR_PARSE. */
static int cron_value(const struct cron_field *f, const char *s, const char **end, int *v)
{
    if (isdigit((unsigned char)*s)) {
        long n = 0;

        while (isdigit((unsigned char)*s) && n <= 1000)
            n = n * 10 + (*s++ - '0');
        if (n < f->lo || n > f->hi)
            return ERR_RANGE;
        *v = (int)n;
        *end = s;
        return 0;
    }
    for (int i = 0; f->names && f->names[i]; i++) {
        size_t k = 0;

        while (k < 3 && tolower((unsigned char)s[k]) == f->names[i][k])
            k++;
        if (k == 3 && !isalpha((unsigned char)s[3])) {
            *v = f->lo + i;
            *end = s + 3;
            return 0;
        }
    }
    return ERR_PARSE;
}

/* The error for a value of field f at p that cron_value refused with rc. */
static int cron_bad_value(const struct cron_field *f, const char *text, const char *p, int rc,
                          struct error *e)
{
    if (rc == ERR_RANGE)
        return err_set(e, ERR_PARSE, "", 1, (int)(p - text) + 1,
                       "%s: the value must be from %d to %d", f->name, f->lo, f->hi);
    return err_set(e, ERR_PARSE, "", 1, (int)(p - text) + 1,
                   "%s: expected a number%s, '*' or a range", f->name,
                   f->names ? " or a name" : "");
}

/* One field's text [s, s + len) into the bits *bits (bit v for value v). */
static int cron_field_parse(const struct cron_field *f, const char *text, const char *s, size_t len,
                            uint64_t *bits, struct error *e)
{
    const char *p = s, *stop = s + len;

    *bits = 0;
    while (p < stop) {
        const char *item = p, *q;
        int a, b, step = 1, range = 0, rc;

        if (*p == '*') {
            a = f->lo;
            b = f->hi;
            q = p + 1;
        } else {
            if ((rc = cron_value(f, p, &q, &a)) < 0)
                return cron_bad_value(f, text, p, rc, e);
            b = a;
            if (*q == '-') {
                p = q + 1;
                range = 1;
                if ((rc = cron_value(f, p, &q, &b)) < 0)
                    return cron_bad_value(f, text, p, rc, e);
                if (b < a)
                    return err_set(e, ERR_PARSE, "", 1, (int)(item - text) + 1,
                                   "%s: the range %d-%d goes backwards", f->name, a, b);
            }
        }
        if (*q == '/') {
            long n = 0;

            p = q + 1;
            if (!isdigit((unsigned char)*p))
                return err_set(e, ERR_PARSE, "", 1, (int)(p - text) + 1,
                               "%s: a step must be a whole number", f->name);
            while (isdigit((unsigned char)*p) && n <= 1000)
                n = n * 10 + (*p++ - '0');
            if (n < 1 || n > f->hi - f->lo + 1)
                return err_set(e, ERR_PARSE, "", 1, (int)(q - text) + 2,
                               "%s: the step must be from 1 to %d", f->name, f->hi - f->lo + 1);
            step = (int)n;
            if (*item != '*' && !range)
                b = f->hi; /* a/step: from a to the field's end */
            q = p;
        }
        if (q < stop && *q != ',')
            return err_set(e, ERR_PARSE, "", 1, (int)(q - text) + 1,
                           "%s: unexpected '%c' (expected a value, a range, a step or ',')",
                           f->name, *q);
        for (int v = a; v <= b; v += step)
            *bits |= 1ULL << v;
        p = q < stop ? q + 1 : q;
        if (q < stop && p == stop)
            return err_set(e, ERR_PARSE, "", 1, (int)(q - text) + 1, "%s: a list ends with ','",
                           f->name);
    }
    return 0;
}

static const struct {
    const char *name;
    const char *fields;
} cron_specials[] = {
    {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
};

/* Days in month m (1-12) of a leap year: the most it can have. */
static int cron_month_days_max(int m)
{
    static const int days[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

    return days[m - 1];
}

int cron_parse(const char *text, struct cron *out, struct error *e)
{
    struct cron c = {0};
    uint64_t bits[5];
    const char *p;
    int nf = 0, fires = 0;

    if (!text || !out)
        return err_set(e, ERR_INVAL, "", 0, 0, "no schedule");
    if (text[0] == '@') {
        for (size_t i = 0; i < sizeof(cron_specials) / sizeof(cron_specials[0]); i++)
            if (strcmp(text, cron_specials[i].name) == 0)
                return cron_parse(cron_specials[i].fields, out, e);
        return err_set(e, ERR_PARSE, "", 1, 1,
                       "unknown schedule %.32s (known: @yearly, @annually, @monthly, @weekly, "
                       "@daily, @midnight, @hourly)",
                       text);
    }
    p = text;
    while (*p) {
        const char *s;

        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p)
            break;
        s = p;
        while (*p && *p != ' ' && *p != '\t')
            p++;
        if (nf == 5)
            return err_set(e, ERR_PARSE, "", 1, (int)(s - text) + 1,
                           "more than five fields (minute hour day-of-month month day-of-week)");
        if (nf == 2)
            c.mday_star = *s == '*';
        if (nf == 4)
            c.wday_star = *s == '*';
        if (cron_field_parse(&cron_fields[nf], text, s, (size_t)(p - s), &bits[nf], e) < 0)
            return ERR_PARSE;
        nf++;
    }
    if (nf < 5)
        return err_set(e, ERR_PARSE, "", 1, (int)(p - text) + 1,
                       "%d field%s, expected five (minute hour day-of-month month day-of-week)", nf,
                       nf == 1 ? "" : "s");
    c.minutes = bits[0];
    c.hours = (uint32_t)bits[1];
    c.mdays = (uint32_t)bits[2];
    c.months = (uint32_t)bits[3];
    c.wdays = (uint32_t)((bits[4] | (bits[4] >> 7)) & 0x7f); /* 7 is Sunday too */
    /* with the day of the week unrestricted, some month must have one of the days */
    for (int m = 1; m <= 12 && !fires; m++)
        if (c.months & (1u << m))
            for (int d = 1; d <= cron_month_days_max(m) && !fires; d++)
                fires = (c.mdays >> d) & 1;
    if (!fires && (c.wday_star || c.mday_star))
        return err_set(e, ERR_PARSE, "", 1, 1,
                       "the schedule never fires: no month it names has a day it names");
    *out = c;
    return 0;
}

/* 1 when the schedule fires on day z (days since the epoch). */
static int cron_day_ok(const struct cron *c, int64_t z)
{
    int64_t y;
    int m, d, w = (int)(((z % 7) + 7 + 4) % 7); /* 1970-01-01 was a Thursday */
    int dom, dow;

    cron_civil_from_days(z, &y, &m, &d);
    if (!((c->months >> m) & 1))
        return 0;
    dom = (c->mdays >> d) & 1;
    dow = (c->wdays >> w) & 1;
    return c->mday_star || c->wday_star ? dom && dow : dom || dow;
}

int cron_matches(const struct cron *c, int64_t t)
{
    int64_t z = cron_floor_div(t, 86400);
    int64_t s = t - z * 86400;

    return cron_day_ok(c, z) && ((c->hours >> (s / 3600)) & 1) &&
           ((c->minutes >> (s / 60 % 60)) & 1);
}

int cron_next(const struct cron *c, int64_t after, int64_t *out)
{
    int64_t t0, z0;
    int h0, m0;

    if (after < 0 || after > CRON_MAX_TIME)
        return ERR_RANGE;
    t0 = cron_floor_div(after, 60) * 60 + 60;
    z0 = cron_floor_div(t0, 86400);
    h0 = (int)((t0 - z0 * 86400) / 3600);
    m0 = (int)((t0 - z0 * 86400) / 60 % 60);
    for (int64_t i = 0; i <= CRON_DAYS_SEARCHED; i++) {
        int64_t z = z0 + i;

        if (!cron_day_ok(c, z))
            continue;
        for (int h = i == 0 ? h0 : 0; h < 24; h++) {
            if (!((c->hours >> h) & 1))
                continue;
            for (int m = i == 0 && h == h0 ? m0 : 0; m < 60; m++)
                if ((c->minutes >> m) & 1) {
                    int64_t t = z * 86400 + h * 3600 + m * 60;

                    if (t > CRON_MAX_TIME)
                        return ERR_RANGE;
                    *out = t;
                    return 0;
                }
        }
    }
    return ERR_RANGE;
}

int cron_prev(const struct cron *c, int64_t t, int64_t *out)
{
    int64_t t0, z0;
    int h0, m0;

    if (t < 0 || t > CRON_MAX_TIME)
        return ERR_RANGE;
    t0 = cron_floor_div(t, 60) * 60;
    z0 = cron_floor_div(t0, 86400);
    h0 = (int)((t0 - z0 * 86400) / 3600);
    m0 = (int)((t0 - z0 * 86400) / 60 % 60);
    for (int64_t i = 0; i <= CRON_DAYS_SEARCHED && z0 - i >= 0; i++) {
        int64_t z = z0 - i;

        if (!cron_day_ok(c, z))
            continue;
        for (int h = i == 0 ? h0 : 23; h >= 0; h--) {
            if (!((c->hours >> h) & 1))
                continue;
            for (int m = i == 0 && h == h0 ? m0 : 59; m >= 0; m--)
                if ((c->minutes >> m) & 1) {
                    *out = z * 86400 + h * 3600 + m * 60;
                    return 0;
                }
        }
    }
    return ERR_RANGE;
}

int cron_missed(const struct cron *c, int64_t last, int64_t now, int64_t *at)
{
    int64_t latest;
    int rc;

    if (last < 0)
        return 0;
    if ((rc = cron_prev(c, now, &latest)) < 0)
        return rc == ERR_RANGE ? 0 : rc; /* it has not fired in 400 years: nothing missed */
    if (latest <= last)
        return 0;
    *at = latest;
    return 1;
}
