/* strbuf.h: a growing NUL-terminated string with a sticky allocation failure, and RFC 3986
 * percent-encoding into it. */
#ifndef CASTOR_UTIL_STRBUF_H
#define CASTOR_UTIL_STRBUF_H

#include <stddef.h>

/* Start zeroed ({0}); the caller owns p until strbuf_take hands it over or strbuf_free. A failed
 * allocation sets failed and every later append does nothing. */
struct strbuf {
    char *p;
    size_t len, cap;
    int failed;
};

void strbuf_add(struct strbuf *b, const char *s, size_t n);
void strbuf_str(struct strbuf *b, const char *s);
void strbuf_chr(struct strbuf *b, char c);
void strbuf_printf(struct strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* 1 for RFC 3986's unreserved characters (A-Z a-z 0-9 - . _ ~), which are never encoded. */
int strbuf_unreserved(unsigned char c);

/* The value (0 to 15) of a hexadecimal digit of either case, or -1 for any other character. */
int strbuf_hex_value(unsigned char c);

/* Append c as %XX (upper-case hex). */
void strbuf_add_escaped(struct strbuf *b, unsigned char c);

/* Append n bytes of s with every byte outside the unreserved set percent-encoded (a space is
 * %20, never '+'). */
void strbuf_add_uri_encoded(struct strbuf *b, const char *s, size_t n);

/* Append n bytes of s with each %XX escape decoded (a '%' not followed by two hex digits, and '+',
 * stay as they are). */
void strbuf_add_uri_decoded(struct strbuf *b, const char *s, size_t n);

/* Replace every byte of the NUL-terminated s outside printable ASCII (0x20 to 0x7e) with a space,
 * in place: a server's text then stays one clean line in a message or a log. */
void strbuf_printable(char *s);

/* Replace, in place, every byte of the NUL-terminated s that is not part of a well-formed UTF-8
 * sequence (a stray continuation byte, a sequence cut short as by a byte-counted truncation, an
 * overlong form, a surrogate, past U+10FFFF) with '?': the text then encodes as a JSON string. */
void strbuf_utf8_clean(char *s);

/* Overwrite every occurrence of secret in the NUL-terminated s with as many '*', in place; a
 * secret shorter than 4 bytes (or NULL) is left alone (it would star out ordinary text). */
void strbuf_redact(char *s, const char *secret);

/* Hand over the string (the caller frees it) and reset b; NULL after a failed allocation (the
 * memory is then released). An empty buffer gives "". */
char *strbuf_take(struct strbuf *b);

/* Wipe (it may have held a secret) and free the content, and reset b. */
void strbuf_free(struct strbuf *b);

#endif
