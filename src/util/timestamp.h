/* timestamp.h: ISO 8601 UTC timestamps ("2024-05-01T12:00:00.000Z") to and from UNIX seconds
 * (pure: no clock). */
#ifndef CASTOR_UTIL_TIMESTAMP_H
#define CASTOR_UTIL_TIMESTAMP_H

#include <stdint.h>

#define TIMESTAMP_ISO8601_LEN 20 /* "YYYY-MM-DDTHH:MM:SSZ", without the NUL */

/*
 * Parse "YYYY-MM-DDTHH:MM:SS" with an optional fraction of any length (dropped: whole seconds)
 * and a zone of "Z" or a numeric offset ("+02:00", "-0530") into UNIX seconds in *out. Years
 * 1970 to 9999. ERR_INVAL (NULL), ERR_PARSE (anything else, trailing characters included, or a
 * field out of its range such as February 30); *out is then unchanged.
 */
int timestamp_parse_iso8601(const char *s, int64_t *out);

/* Days from 1970-01-01 to y-m-d (m 1..12, d 1..31) in the proleptic Gregorian calendar (negative
 * before it): eras of 400 years of 146097 days, each year counted from March so that a leap day
 * ends it. Pure. */
int64_t timestamp_days_from_civil(int64_t y, int m, int d);

/* The inverse: the year, month (1..12) and day (1..31) of days since 1970-01-01. Pure. */
void timestamp_civil_from_days(int64_t days, int64_t *year, int *month, int *day);

/* Format t (UNIX seconds, years 1970 to 9999) as "YYYY-MM-DDTHH:MM:SSZ" into buf. ERR_RANGE for
 * a time outside those years; buf is then unchanged. */
int timestamp_format_iso8601(int64_t t, char buf[TIMESTAMP_ISO8601_LEN + 1]);

#endif
