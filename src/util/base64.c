/* base64.c: base64url encoding and strict decoding (RFC 4648 section 5, no padding); standard
 * base64's decoding (section 4) on top of it. */
#include "util/base64.h"

#include <stdlib.h>

#include "util/error.h"

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

void base64_url_encode(struct strbuf *b, const void *data, size_t len)
{
    const unsigned char *p = data;
    char quad[4];
    size_t i;

    for (i = 0; i + 3 <= len; i += 3) {
        unsigned long v = (unsigned long)p[i] << 16 | (unsigned long)p[i + 1] << 8 | p[i + 2];

        quad[0] = alphabet[(v >> 18) & 63];
        quad[1] = alphabet[(v >> 12) & 63];
        quad[2] = alphabet[(v >> 6) & 63];
        quad[3] = alphabet[v & 63];
        strbuf_add(b, quad, 4);
    }
    if (len - i == 1) {
        quad[0] = alphabet[p[i] >> 2];
        quad[1] = alphabet[(p[i] & 3) << 4];
        strbuf_add(b, quad, 2);
    } else if (len - i == 2) {
        quad[0] = alphabet[p[i] >> 2];
        quad[1] = alphabet[(p[i] & 3) << 4 | p[i + 1] >> 4];
        quad[2] = alphabet[(p[i + 1] & 15) << 2];
        strbuf_add(b, quad, 3);
    }
}

/* The 6-bit value of a base64url character, or -1. */
static int value_of(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '-')
        return 62;
    if (c == '_')
        return 63;
    return -1;
}

int base64_url_decode(const char *s, size_t len, unsigned char **out, size_t *out_len)
{
    unsigned char *buf;
    unsigned long acc = 0;
    size_t n = 0;
    int bits = 0;

    if (!out || !out_len || (!s && len > 0))
        return ERR_INVAL;
    if (len % 4 == 1)
        return ERR_PARSE;
    buf = malloc(len / 4 * 3 + 3);
    if (!buf)
        return ERR_NOMEM;
    for (size_t i = 0; i < len; i++) {
        int v = value_of((unsigned char)s[i]);

        if (v < 0) {
            free(buf);
            return ERR_PARSE;
        }
        acc = (acc << 6 | (unsigned long)v) & 0xffffff;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            buf[n++] = (unsigned char)(acc >> bits);
        }
    }
    /* the 2 or 4 bits left over must be zero: one encoding per byte string */
    if (acc & ((1UL << bits) - 1)) {
        free(buf);
        return ERR_PARSE;
    }
    buf[n] = '\0';
    *out = buf;
    *out_len = n;
    return 0;
}

int base64_decode(const char *s, size_t len, unsigned char **out, size_t *out_len)
{
    char *url;
    size_t n = 0, pad = 0;
    int rc;

    if (!out || !out_len || (!s && len > 0))
        return ERR_INVAL;
    if (!(url = malloc(len + 1)))
        return ERR_NOMEM;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];

        if (c == '\n' || c == '\r' || c == ' ' || c == '\t')
            continue;
        if (c == '=') {
            pad++;
            continue;
        }
        if (pad > 0 || c == '-' || c == '_') { /* a character after padding; the URL alphabet */
            free(url);
            return ERR_PARSE;
        }
        url[n++] = c == '+' ? '-' : c == '/' ? '_' : c;
    }
    rc = pad > 2 || (pad > 0 && (n + pad) % 4 != 0) ? ERR_PARSE
                                                    : base64_url_decode(url, n, out, out_len);
    free(url);
    return rc;
}
