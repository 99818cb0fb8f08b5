/* strbuf.c: growing strings and percent-encoding. */
#include "util/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/crypto.h"

void strbuf_add(struct strbuf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        char *grown;

        while (cap < b->len + n + 1)
            cap *= 2;
        grown = realloc(b->p, cap);
        if (!grown) {
            b->failed = 1;
            return;
        }
        b->p = grown;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void strbuf_str(struct strbuf *b, const char *s)
{
    strbuf_add(b, s, strlen(s));
}

void strbuf_chr(struct strbuf *b, char c)
{
    strbuf_add(b, &c, 1);
}

void strbuf_printf(struct strbuf *b, const char *fmt, ...)
{
    char small[256], *big;
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = 1;
        return;
    }
    if ((size_t)n < sizeof(small)) {
        strbuf_add(b, small, (size_t)n);
        return;
    }
    big = malloc((size_t)n + 1);
    if (!big) {
        b->failed = 1;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    strbuf_add(b, big, (size_t)n);
    free(big);
}

int strbuf_unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

int strbuf_hex_value(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

void strbuf_add_escaped(struct strbuf *b, unsigned char c)
{
    static const char digits[] = "0123456789ABCDEF";
    char esc[3] = {'%', digits[c >> 4], digits[c & 0x0f]};

    strbuf_add(b, esc, 3);
}

void strbuf_add_uri_encoded(struct strbuf *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];

        if (strbuf_unreserved(c))
            strbuf_chr(b, (char)c);
        else
            strbuf_add_escaped(b, c);
    }
}

char *strbuf_take(struct strbuf *b)
{
    char *s;

    if (!b->failed && !b->p)
        strbuf_add(b, "", 0);
    s = b->failed ? NULL : b->p;
    if (!s)
        strbuf_free(b);
    b->p = NULL;
    b->len = b->cap = 0;
    b->failed = 0;
    return s;
}

void strbuf_free(struct strbuf *b)
{
    if (b->p)
        crypto_wipe(b->p, b->cap);
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

void strbuf_add_uri_decoded(struct strbuf *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int hi = i + 2 < n ? strbuf_hex_value((unsigned char)s[i + 1]) : -1;
        int lo = i + 2 < n ? strbuf_hex_value((unsigned char)s[i + 2]) : -1;

        if (s[i] == '%' && hi >= 0 && lo >= 0) {
            strbuf_chr(b, (char)(hi * 16 + lo));
            i += 2;
        } else {
            strbuf_chr(b, s[i]);
        }
    }
}

void strbuf_printable(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
            *s = ' ';
}

void strbuf_redact(char *s, const char *secret)
{
    size_t n = secret ? strlen(secret) : 0;
    char *at;

    if (n < 4)
        return;
    while ((at = strstr(s, secret)) != NULL)
        memset(at, '*', n);
}

/* The length of the well-formed UTF-8 sequence at s (1 to 4), or 0 when there is none. */
static size_t strbuf_utf8_len(const unsigned char *s)
{
    unsigned char c = s[0];
    size_t n;
    unsigned long cp;

    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
        cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        cp = c & 0x07;
    } else {
        return 0; /* a continuation byte, 0xc0, 0xc1 (overlong) or 0xf5 and above */
    }
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) /* the NUL included: cut short */
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

void strbuf_utf8_clean(char *s)
{
    unsigned char *p = (unsigned char *)s;

    while (*p) {
        size_t n = strbuf_utf8_len(p);

        if (n == 0)
            *p++ = '?';
        else
            p += n;
    }
}
