/* base64.h: base64url (RFC 4648 section 5) without padding, as JSON Web Signatures use it, and the
 * standard alphabet's decoding (section 4) for what clouds sign that way. */
#ifndef CASTOR_UTIL_BASE64_H
#define CASTOR_UTIL_BASE64_H

#include <stddef.h>

#include "util/strbuf.h"

/* Append the base64url form of len bytes at data (data may be NULL when len is 0) to b, without
 * '=' padding. A failed allocation sticks in b (strbuf's rule). */
void base64_url_encode(struct strbuf *b, const void *data, size_t len);

/*
 * Decode len characters of base64url without padding. Strict: only the URL-safe alphabet, no
 * '=', no white space, no length of 4k + 1, and the unused low bits of the last character must be
 * zero (so that every byte string has one encoding). On success *out is a new buffer (free();
 * one NUL after *out_len bytes, not counted) and *out_len its length. ERR_INVAL (NULL out, or s
 * NULL with len > 0), ERR_PARSE, ERR_NOMEM; the outputs are then untouched.
 */
int base64_url_decode(const char *s, size_t len, unsigned char **out, size_t *out_len);

/*
 * Decode len characters of standard base64 (RFC 4648 section 4: '+' and '/'), with or without
 * '=' padding at its end, line breaks and spaces skipped (EC2's signatures come in lines).
 * Otherwise as strict as base64_url_decode, with the same outputs and errors.
 */
int base64_decode(const char *s, size_t len, unsigned char **out, size_t *out_len);

#endif
