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

/* Format t (UNIX seconds, years 1970 to 9999) as "YYYY-MM-DDTHH:MM:SSZ" into buf. ERR_RANGE for
 * a time outside those years; buf is then unchanged. */
int timestamp_format_iso8601(int64_t t, char buf[TIMESTAMP_ISO8601_LEN + 1]);

#endif
