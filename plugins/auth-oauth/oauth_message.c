/* The OAUTHBEARER client initial response (RFC 7628 section 3.1) and
 * base64url, the two encodings a client controls before any key is used. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "oauth_internal.h"

#define KVSEP 0x01

/* RFC 6750 b64token: 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=" */
static bool b64token_valid(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && (isalnum((unsigned char)s[i]) || strchr("-._~+/", s[i])))
        i++;
    if (i == 0)
        return false;
    while (i < n && s[i] == '=')
        i++;
    return i == n;
}

/* One "key=value" pair: key is 1*ALPHA, value has no control characters
 * but HTAB, CR and LF (RFC 7628). */
static int parse_pair(const char *p, size_t n, struct oauth_client_message *out, bool *seen_auth, char *err,
                      size_t errlen)
{
    const char *eq = memchr(p, '=', n);
    if (!eq || eq == p) {
        snprintf(err, errlen, "a key-value pair without a key");
        return -1;
    }
    for (const char *k = p; k < eq; k++)
        if (!isalpha((unsigned char)*k)) {
            snprintf(err, errlen, "a key with a character other than a letter");
            return -1;
        }
    const char *v = eq + 1;
    size_t vlen = n - (size_t)(v - p);
    for (size_t i = 0; i < vlen; i++) {
        unsigned char c = (unsigned char)v[i];
        if ((c < 0x20 && c != '\t' && c != '\r' && c != '\n') || c == 0x7f) {
            snprintf(err, errlen, "a value with a control character");
            return -1;
        }
    }
    if ((size_t)(eq - p) != 4 || memcmp(p, "auth", 4) != 0)
        return 0; /* an extension: ignored */
    if (*seen_auth) {
        snprintf(err, errlen, "auth given twice");
        return -1;
    }
    *seen_auth = true;
    /* "Bearer" is case-insensitive (RFC 6750), one or more spaces follow. */
    if (vlen < 7 || strncasecmp(v, "bearer", 6) != 0 || v[6] != ' ') {
        snprintf(err, errlen, "auth is not a Bearer token");
        return -1;
    }
    size_t skip = 6;
    while (skip < vlen && v[skip] == ' ')
        skip++;
    if (!b64token_valid(v + skip, vlen - skip)) {
        snprintf(err, errlen, "the Bearer token is empty or has characters a token cannot have");
        return -1;
    }
    out->token = v + skip;
    out->token_len = vlen - skip;
    return 0;
}

int oauth_client_message_parse(const uint8_t *in, size_t len, struct oauth_client_message *out, char *err,
                               size_t errlen)
{
    const char *s = (const char *)in;
    memset(out, 0, sizeof *out);
    out->authzid = "";
    /* gs2-header: "n," [ "a=" saslname ] "," ; channel binding is refused. */
    if (len < 3 || s[0] != 'n' || s[1] != ',') {
        snprintf(err, errlen, "the message does not start with the gs2 header \"n,\"");
        return -1;
    }
    size_t pos = 2;
    if (pos + 1 < len && s[pos] == 'a' && s[pos + 1] == '=') {
        pos += 2;
        const char *comma = memchr(s + pos, ',', len - pos);
        if (!comma) {
            snprintf(err, errlen, "the gs2 header does not end");
            return -1;
        }
        out->authzid = s + pos;
        out->authzid_len = (size_t)(comma - (s + pos));
        for (size_t i = 0; i < out->authzid_len; i++)
            if ((unsigned char)out->authzid[i] < 0x20 || out->authzid[i] == '=') {
                snprintf(err, errlen, "the authorization id has a character it cannot have");
                return -1;
            }
        pos = (size_t)(comma - s);
    }
    if (pos >= len || s[pos] != ',') {
        snprintf(err, errlen, "the gs2 header does not end with ','");
        return -1;
    }
    pos++;
    if (pos >= len || s[pos] != KVSEP) {
        snprintf(err, errlen, "no key-value separator after the gs2 header");
        return -1;
    }
    pos++;
    bool seen_auth = false;
    /* kvpairs, each ended by KVSEP; an empty pair (KVSEP KVSEP) ends the message. */
    for (;;) {
        const char *end = memchr(s + pos, KVSEP, len - pos);
        if (!end) {
            snprintf(err, errlen, "the message does not end with the key-value separator");
            return -1;
        }
        size_t n = (size_t)(end - (s + pos));
        if (n == 0) {
            pos++;
            break;
        }
        if (parse_pair(s + pos, n, out, &seen_auth, err, errlen) != 0)
            return -1;
        pos += n + 1;
    }
    if (pos != len) {
        snprintf(err, errlen, "bytes after the end of the message");
        return -1;
    }
    if (!seen_auth) {
        snprintf(err, errlen, "no auth key");
        return -1;
    }
    return 0;
}

static int b64url_value(unsigned char c)
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

uint8_t *oauth_b64url_decode(const char *in, size_t len, size_t *out_len)
{
    if (len % 4 == 1)
        return NULL;
    uint8_t *out = malloc(len / 4 * 3 + 3);
    if (!out)
        return NULL;
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        int v = b64url_value((unsigned char)in[i]);
        if (v < 0) {
            free(out);
            return NULL;
        }
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (uint8_t)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    /* Leftover bits must be zero (a canonical encoding). */
    if (acc != 0) {
        free(out);
        return NULL;
    }
    out[o] = 0;
    *out_len = o;
    return out;
}
