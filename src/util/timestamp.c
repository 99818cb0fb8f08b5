/* timestamp.c: ISO 8601 timestamps by civil-calendar arithmetic (no timegm, no time zone
 * database). */
#include "util/timestamp.h"

#include <stdio.h>
#include <string.h>

#include "util/error.h"

#define MAX_TIME INT64_C(253402300799) /* 9999-12-31T23:59:59Z */

int64_t timestamp_days_from_civil(int64_t y, int m, int d)
{
    int64_t era, yoe, doy, doe;

    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = y - era * 400;
    doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int is_leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int64_t y, int m)
{
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

    return m == 2 && is_leap(y) ? 29 : days[m - 1];
}

/* n decimal digits at *p into *out; advances *p. 0, or -1 when a character is not a digit. */
static int digits(const char **p, int n, int *out)
{
    int v = 0;

    for (int i = 0; i < n; i++) {
        char c = (*p)[i];

        if (c < '0' || c > '9')
            return -1;
        v = v * 10 + (c - '0');
    }
    *p += n;
    *out = v;
    return 0;
}

static int expect(const char **p, char c)
{
    if (**p != c)
        return -1;
    (*p)++;
    return 0;
}

int timestamp_parse_iso8601(const char *s, int64_t *out)
{
    int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0;
    const char *p = s;
    int64_t t;

    if (!s || !out)
        return ERR_INVAL;
    if (digits(&p, 4, &y) || expect(&p, '-') || digits(&p, 2, &mo) || expect(&p, '-') ||
        digits(&p, 2, &d) || (*p != 'T' && *p != 't') || !++p || digits(&p, 2, &h) ||
        expect(&p, ':') || digits(&p, 2, &mi) || expect(&p, ':') || digits(&p, 2, &sec))
        return ERR_PARSE;
    if (*p == '.') {
        p++;
        if (*p < '0' || *p > '9')
            return ERR_PARSE;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        sign = *p++ == '+' ? 1 : -1;
        if (digits(&p, 2, &oh) || (*p == ':' && !++p) || digits(&p, 2, &om) || oh > 23 || om > 59)
            return ERR_PARSE;
    } else {
        return ERR_PARSE;
    }
    if (*p != '\0' || y < 1970 || mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) ||
        h > 23 || mi > 59 || sec > 60)
        return ERR_PARSE;
    t = timestamp_days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
    t -= sign * (oh * 3600 + om * 60);
    if (t < 0 || t > MAX_TIME)
        return ERR_PARSE;
    *out = t;
    return 0;
}

void timestamp_civil_from_days(int64_t days, int64_t *year, int *month, int *day)
{
    int64_t z = days + 719468, era, doe, yoe, doy, mp;

    era = (z >= 0 ? z : z - 146096) / 146097;
    doe = z - era * 146097;
    yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    mp = (5 * doy + 2) / 153;
    *day = (int)(doy - (153 * mp + 2) / 5 + 1);
    *month = (int)(mp < 10 ? mp + 3 : mp - 9);
    *year = yoe + era * 400 + (*month <= 2);
}

int timestamp_format_iso8601(int64_t t, char buf[TIMESTAMP_ISO8601_LEN + 1])
{
    int64_t secs, y;
    int m, d;

    if (t < 0 || t > MAX_TIME)
        return ERR_RANGE;
    secs = t % 86400;
    timestamp_civil_from_days(t / 86400, &y, &m, &d);
    {
        /* every field is within its width (years 1970 to 9999), so 20 characters are written */
        char tmp[64];

        snprintf(tmp, sizeof(tmp), "%04d-%02d-%02dT%02d:%02d:%02dZ", (int)y, (int)m, (int)d,
                 (int)(secs / 3600), (int)(secs / 60 % 60), (int)(secs % 60));
        memcpy(buf, tmp, TIMESTAMP_ISO8601_LEN + 1);
    }
    return 0;
}
